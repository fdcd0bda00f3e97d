//! `rcud fabric` on the thesis's network (`tests/fabric/`) and on bad input.

use std::path::PathBuf;
use std::process::{Command, Output};

use serde_json::Value;

fn data(name: &str) -> String {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../tests/fabric")
        .join(name);
    assert!(p.is_file(), "{} is missing", p.display());
    p.to_string_lossy().into_owned()
}

fn fabric(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_rcud"))
        .arg("fabric")
        .args(args)
        .output()
        .unwrap()
}

fn text(out: &Output) -> (String, String) {
    (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Runs with `--format json` and parses stdout.
fn json(args: &[&str]) -> Value {
    let mut all = args.to_vec();
    all.extend(["--format", "json"]);
    let out = fabric(&all);
    let (stdout, stderr) = text(&out);
    assert!(out.status.success(), "{args:?}: {stderr}");
    serde_json::from_str(&stdout).unwrap_or_else(|e| panic!("{args:?}: {e}: {stdout}"))
}

/// Runs expecting failure; returns stderr.
fn fails(args: &[&str]) -> String {
    let out = fabric(args);
    let (stdout, stderr) = text(&out);
    assert!(!out.status.success(), "{args:?} succeeded: {stdout}");
    assert!(!stderr.contains("panicked"), "{stderr}");
    stderr
}

#[test]
fn routes_gives_the_thesis_tables_from_either_file_format() {
    let links = data("thesis8.links");
    let v = json(&["routes", "--topology", &links, "--root", "1"]);
    assert_eq!(v["fera"]["entries"], 120);
    assert_eq!(v["pira"]["entries"], 50);
    assert_eq!(v["pira"]["default_ports"], 7);
    assert_eq!(v["deadlock_free"], true);
    let cuts: Vec<(u64, Vec<u64>)> = v["cut_nodes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            let ports = c["up_ports"]
                .as_array()
                .unwrap()
                .iter()
                .map(|p| p.as_u64().unwrap())
                .collect();
            (c["node"].as_u64().unwrap(), ports)
        })
        .collect();
    assert_eq!(cuts, [(6, vec![1, 2]), (10, vec![1, 2])]);
    let parents: Vec<(String, u64)> = v["pira"]["tables"]
        .as_object()
        .unwrap()
        .iter()
        .filter_map(|(s, t)| t["parent"].as_u64().map(|p| (s.clone(), p)))
        .collect();
    let want: Vec<(String, u64)> = [
        ("10", 6),
        ("2", 1),
        ("3", 1),
        ("5", 2),
        ("6", 3),
        ("8", 3),
        ("9", 3),
    ]
    .map(|(s, p)| (s.to_string(), p))
    .into();
    assert_eq!(parents, want);
    // Switch 6 reaches host 12 on port 4 and its parent's subtree by default.
    assert_eq!(v["fera"]["tables"]["6"]["12"], 4);
    assert_eq!(v["pira"]["tables"]["6"]["default_port"], 2);

    let ibnd = json(&[
        "routes",
        "--topology",
        &data("thesis8.ibnetdiscover"),
        "--root",
        "1",
    ]);
    assert_eq!(ibnd["fera"]["tables"], v["fera"]["tables"]);
    assert_eq!(ibnd["pira"]["tables"], v["pira"]["tables"]);

    let out = fabric(&["routes", "--topology", &links, "--root", "1"]);
    let (stdout, _) = text(&out);
    assert!(out.status.success());
    assert!(
        stdout.contains("cut nodes: 6 (up ports 1,2), 10 (up ports 1,2)"),
        "{stdout}"
    );
    assert!(stdout.contains("FERa: 120 entries"), "{stdout}");
    assert!(
        stdout.contains("PIRa: 50 entries and 7 default ports"),
        "{stdout}"
    );
    let summary = json(&["routes", "--topology", &links, "--summary"]);
    assert_eq!(summary["root"], 1, "the lowest-numbered switch by default");
    assert!(summary["fera"].get("tables").is_none());
}

#[test]
fn route_follows_the_thesis_example() {
    let v = json(&[
        "route",
        "--topology",
        &data("thesis8.links"),
        "--root",
        "1",
        "--from",
        "7",
        "--to",
        "14",
    ]);
    for alg in ["fera", "pira"] {
        assert_eq!(
            v[alg]["path"],
            serde_json::json!([7, 2, 1, 3, 9, 14]),
            "{alg}"
        );
        assert_eq!(v[alg]["legal"], true);
        let dirs: Vec<&str> = v[alg]["links"]
            .as_array()
            .unwrap()
            .iter()
            .map(|h| h["dir"].as_str().unwrap())
            .collect();
        assert_eq!(dirs, ["up", "up", "down", "down", "down"]);
    }
    let out = fabric(&[
        "route",
        "--topology",
        &data("thesis8.links"),
        "--from",
        "12",
        "--to",
        "13",
    ]);
    let (stdout, _) = text(&out);
    assert!(
        stdout.contains("FERa 12 -> 13: 4 hop(s), legal: 12 6 3 8 13"),
        "{stdout}"
    );
}

#[test]
fn update_plans_the_vl15_turns() {
    let t = data("thesis8.links");
    let same = json(&["update", "--topology", &t, "--changed", &t, "--root", "1"]);
    let turns: Vec<(u64, u64, u64)> = same["blocked"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| {
            (
                b["node"].as_u64().unwrap(),
                b["input"].as_u64().unwrap(),
                b["output"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(turns, [(6, 1, 2), (6, 2, 1), (10, 1, 2), (10, 2, 1)]);

    let moved = json(&[
        "update",
        "--topology",
        &t,
        "--changed",
        &data("thesis8-link1-2-down.links"),
    ]);
    assert_eq!(moved["cut_nodes"][0]["node"], 5);
    assert_eq!(moved["blocked"][0]["used_by_old_routes"], true);
    assert_eq!(moved["ghost_turns"], 2);

    let out = fabric(&["update", "--topology", &t, "--remove", "2"]);
    let (stdout, stderr) = text(&out);
    assert!(out.status.success(), "{stderr}");
    assert!(stdout.contains("no longer cut nodes: 6, 10"), "{stdout}");
}

#[test]
fn discover_counts_the_thesis_smps() {
    let t = data("thesis8.links");
    let added = json(&[
        "discover",
        "--topology",
        &t,
        "--changed",
        &data("thesis8-switch-added.links"),
        "--root",
        "1",
        "--sm",
        "4",
    ]);
    assert_eq!(added["partial"]["total"], 35);
    assert_eq!(added["full"]["total"], 123);
    assert_eq!(added["change"]["added"], serde_json::json!([16, 17, 18]));
    assert!(
        added["partial"]["smps"].as_array().unwrap().is_empty(),
        "no trace unless asked"
    );

    let gone = json(&[
        "discover",
        "--topology",
        &t,
        "--remove",
        "2",
        "--root",
        "1",
        "--sm",
        "4",
        "--trace",
    ]);
    assert_eq!(gone["partial"]["total"], 26);
    assert_eq!(gone["partial"]["smps"].as_array().unwrap().len(), 26);
    assert_eq!(gone["forgotten"], serde_json::json!([2, 7]));
    let same_by_file = json(&[
        "discover",
        "--topology",
        &t,
        "--changed",
        &data("thesis8-switch2-removed.links"),
        "--sm",
        "4",
    ]);
    assert_eq!(same_by_file["partial"]["total"], 26);

    let cold = json(&["discover", "--topology", &t, "--sm", "4"]);
    assert_eq!(cold["full"]["total"], 97);

    let out = fabric(&[
        "discover",
        "--topology",
        &t,
        "--remove",
        "2",
        "--sm",
        "4",
        "--trace",
    ]);
    let (stdout, _) = text(&out);
    assert!(stdout.contains("partial discovery: 26 SMPs"), "{stdout}");
    assert!(
        stdout.contains("Get(SwitchInfo)        SM->3 (4,3,1)        node 5"),
        "{stdout}"
    );
}

#[test]
fn growth_prints_a_table_that_grows() {
    let rows = json(&["growth", "--sizes", "16:30,32:72,64:146", "--samples", "2"]);
    let rows = rows.as_array().unwrap();
    assert_eq!(rows.len(), 3);
    let ratios: Vec<f64> = rows.iter().map(|r| r["ratio"].as_f64().unwrap()).collect();
    assert!(ratios.windows(2).all(|w| w[1] > w[0]), "{ratios:?}");
    assert_eq!(rows[1]["fera"], 32 * 72);
    assert_eq!(rows[1]["thesis"]["pira"], 435);
    let out = fabric(&["growth", "--sizes", "8:15", "--samples", "1"]);
    let (stdout, _) = text(&out);
    assert!(
        stdout.contains("switches  nodes     FERa    PIRa"),
        "{stdout}"
    );
    assert!(
        stdout.contains("     120     50   2.40"),
        "the thesis's row: {stdout}"
    );
}

#[test]
fn generated_subnets_feed_the_other_commands() {
    let dir = tempfile::tempdir().unwrap();
    for kind in ["links", "ibnetdiscover"] {
        let out = fabric(&[
            "generate",
            "--switches",
            "12",
            "--hosts",
            "10",
            "--seed",
            "3",
            "--as",
            kind,
        ]);
        assert!(out.status.success());
        let path = dir.path().join(format!("net.{kind}"));
        std::fs::write(&path, &out.stdout).unwrap();
        let p = path.to_string_lossy();
        let v = json(&["routes", "--topology", &p, "--summary"]);
        assert_eq!(v["switches"], 12);
        assert_eq!(v["nodes"], 22);
        assert_eq!(v["fera"]["entries"], 12 * 22);
        assert_eq!(v["deadlock_free"], true);
        let d = json(&["discover", "--topology", &p, "--remove", "2"]);
        assert!(d["partial"]["total"].as_u64().unwrap() > 0);
    }
    let topo = json(&["generate", "--switches", "4", "--hosts", "2"]);
    assert_eq!(topo["nodes"].as_array().unwrap().len(), 6);
}

#[test]
fn bad_input_is_reported_with_its_line() {
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("bad.links");
    std::fs::write(&bad, "# ok\n1.1 2.1\n1.1 3.1\n").unwrap();
    let b = bad.to_string_lossy();
    let err = fails(&["routes", "--topology", &b]);
    assert!(
        err.contains("bad.links: line 3: port 1 of node 1 is connected twice"),
        "{err}"
    );

    std::fs::write(&bad, "1.1 2.1\n1.2 banana\n").unwrap();
    let err = fails(&["routes", "--topology", &b]);
    assert!(
        err.contains("line 2: `banana` is not NODE.PORT or a host number"),
        "{err}"
    );

    let ibnd = std::fs::read_to_string(data("thesis8.ibnetdiscover")).unwrap();
    std::fs::write(&bad, ibnd.replacen("lid 2 4xHDR", "lid x 4xHDR", 1)).unwrap();
    let err = fails(&["routes", "--topology", &b]);
    assert!(err.contains("line 11: `lid x` is not a number"), "{err}");

    let t = data("thesis8.links");
    assert!(fails(&["routes", "--topology", &t, "--root", "4"])
        .contains("node 4 is a host, not a switch"));
    assert!(fails(&["routes", "--topology", &t, "--root", "99"])
        .contains("node 99 is not in the topology"));
    assert!(
        fails(&["route", "--topology", &t, "--from", "7", "--to", "99"]).contains("--to: node 99")
    );
    assert!(fails(&["routes", "--topology", "/nonexistent/net.links"])
        .contains("/nonexistent/net.links"));
    assert!(fails(&["update", "--topology", &t, "--remove", "1"]).contains("root switch"));
    assert!(fails(&["growth", "--sizes", "16x30"]).contains("not SWITCHES:NODES"));

    // A change that splits the subnet cannot be routed as a whole.
    std::fs::write(&bad, "1.1 2.1\n3.1 4.1\n").unwrap();
    let err = fails(&["routes", "--topology", &b]);
    assert!(err.contains("not connected to node 1: 3, 4"), "{err}");
}
