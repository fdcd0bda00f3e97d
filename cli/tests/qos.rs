//! `rcud qos`: the management-model simulation, the arbiter against seed
//! 004's measurements, the sawtooth plot, and the OpenSM files of `plan`
//! checked by OpenSM itself.
//!
//! The OpenSM checks need `opensm` (`$RCUD_OPENSM`, else on PATH, else
//! /usr/sbin/opensm) and, for the simulated fabric, `ibsim`, its
//! `libumad2sim.so` and `smpquery`; `scripts/ensure-opensm.sh` installs them
//! all. Without them the tests print `skipped: ...` and pass, unless
//! `RCUD_REQUIRE_OPENSM=1`.

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::thread::sleep;
use std::time::{Duration, Instant};

use serde_json::Value;

fn rcud() -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_rcud"));
    cmd.env_remove("RCUD_SERVERS").env_remove("LD_PRELOAD");
    cmd
}

fn text(out: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// Runs `rcud qos ARGS`, expects success, returns stdout.
fn qos(args: &[&str]) -> String {
    let out = rcud().arg("qos").args(args).output().unwrap();
    assert!(out.status.success(), "rcud qos {args:?}: {}", text(&out));
    String::from_utf8(out.stdout).unwrap()
}

fn json(args: &[&str]) -> Value {
    let mut all = args.to_vec();
    all.extend(["--format", "json"]);
    serde_json::from_str(&qos(&all)).unwrap()
}

#[test]
fn simulate_counts_swaps_and_never_refuses_for_fragmentation() {
    let v = json(&["simulate", "--ops", "30000", "--seed", "7"]);
    let runs = v.as_array().unwrap();
    let models: Vec<&str> = runs.iter().map(|r| r["model"].as_str().unwrap()).collect();
    assert_eq!(models, ["m1", "m2", "m3", "smart"]);
    for r in runs {
        let n = |k: &str| r[k].as_u64().unwrap();
        assert_eq!(n("ops"), 30000);
        assert_eq!(
            n("inserted") + n("refused_full") + n("released"),
            30000,
            "{r}"
        );
        assert_eq!(n("refused_fragmented"), 0, "{r}");
        // Same seed: the same operations and refusals for every model (the
        // refusals depend only on the free count).
        assert_eq!(r["refused_full"], runs[0]["refused_full"]);
        let swaps = r["swaps_per_op"].as_f64().unwrap();
        assert!(swaps > 0.0 && swaps < 1.0, "{r}");
        assert!(r["us_per_op"].as_f64().unwrap() > 0.0);
    }
    // Only M1 repairs after insertions.
    assert!(runs[0]["swaps_per_op_after_insert"].as_f64().unwrap() > 0.0);
    for r in &runs[1..] {
        assert_eq!(r["swaps_per_op_after_insert"].as_f64().unwrap(), 0.0);
    }
    // The same seed gives the same run.
    let again = json(&["simulate", "--ops", "30000", "--seed", "7", "--model", "m2"]);
    assert_eq!(again[0]["swaps"], runs[1]["swaps"]);
    let t = qos(&["simulate", "--ops", "2000", "--model", "m3"]);
    assert!(t.contains("m3") && t.contains("0.1126"), "{t}");
}

#[test]
fn arbiter_reproduces_table_2_of_seed_004() {
    let v = json(&["arbiter", "--paper", "--packets", "300000"]);
    let rows = v.as_array().unwrap();
    assert_eq!(rows.len(), 10);
    for r in rows {
        let dev = r["deviation"].as_f64().unwrap();
        assert!(dev.abs() < 0.01, "{r}");
        let measured = r["paper"]["measured_ratio"].as_f64().unwrap();
        let formula = r["formula_ratio"].as_f64().unwrap();
        if (r["limit"].as_u64(), r["high"].as_u64(), r["low"].as_u64())
            == (Some(5), Some(10), Some(90))
        {
            // Row 7: measured 20.1, formula 10 at the printed Q.
            assert_eq!(formula, 10.0);
            let note = r["paper"]["note"].as_str().unwrap();
            assert!(note.contains("misprint for 10"), "{note}");
        } else {
            assert!((measured / formula - 1.0).abs() < 0.01, "{r}");
            assert!(r["paper"]["note"].is_null());
        }
    }
    // The specification's rule gives 2Q whatever the weights.
    let one = json(&[
        "arbiter",
        "--limit",
        "1",
        "--high",
        "16",
        "--low",
        "4",
        "--packets",
        "100000",
    ]);
    assert!(
        (one["iba_text_ratio"].as_f64().unwrap() - 2.0).abs() < 0.01,
        "{one}"
    );
    assert!(
        (one["simulated_ratio"].as_f64().unwrap() - 4.0).abs() < 0.01,
        "{one}"
    );
    let t = qos(&[
        "arbiter",
        "--limit",
        "5",
        "--high",
        "10",
        "--low",
        "90",
        "--packets",
        "50000",
    ]);
    assert!(t.contains("misprint"), "{t}");
}

#[test]
fn sawtooth_returns_to_2q_every_period_and_plots() {
    let dir = tempfile::tempdir().unwrap();
    let svg = dir.path().join("saw.svg");
    let v = json(&[
        "sawtooth",
        "--limit",
        "1",
        "--high",
        "16",
        "--low-max",
        "40",
        "--packets",
        "50000",
        "--plot",
        svg.to_str().unwrap(),
    ]);
    assert_eq!(v["period"], 8);
    assert_eq!(v["stable"], 2.0);
    let points = v["points"].as_array().unwrap();
    assert_eq!(points.len(), 40);
    for p in points {
        let (l, sim, f) = (
            p["low"].as_u64().unwrap(),
            p["simulated"].as_f64().unwrap(),
            p["formula"].as_f64().unwrap(),
        );
        assert!((sim / f - 1.0).abs() < 0.01, "{p}");
        if l % 8 == 0 {
            assert_eq!(f, 2.0);
        }
    }
    // The paper's two measurements at Q = 1, H = 16.
    assert_eq!(v["measured"].as_array().unwrap().len(), 2);
    let plot = std::fs::read_to_string(&svg).unwrap();
    assert!(plot.contains("<svg") && plot.contains("measured on ConnectX-2"));
    let bad = rcud()
        .args([
            "qos",
            "sawtooth",
            "--limit",
            "1",
            "--high",
            "2",
            "--low-max",
            "3",
            "--plot",
        ])
        .arg(dir.path().join("saw.pdf"))
        .output()
        .unwrap();
    assert!(!bad.status.success());
    assert!(text(&bad).contains(".svg or .png"));
}

/// A plan small enough for ibsim's ports (8-entry arbitration tables) and
/// exercising every class kind and match criterion.
const CLASSES: &str = r#"
[port]
rate_gbps = 100
mtu = 2048
table_entries = 8
max_vls = 8

[[class]]
name = "inference"
kind = "dbts"
bandwidth_gbps = 10
delay_us = 5
port_guids = ["0x0002c903000e0b72"]

[[class]]
name = "training"
kind = "db"
bandwidth_gbps = 40
service_ids = ["0x10000-0x1ffff"]

[[class]]
name = "notebooks"
kind = "pbe"
pkeys = ["0x7fff"]

[[class]]
name = "backup"
kind = "ch"
"#;

/// Writes the classes and runs `plan` into `dir`; returns the JSON summary.
fn make_plan(dir: &Path) -> Value {
    let cfg = dir.join("classes.toml");
    std::fs::write(&cfg, CLASSES).unwrap();
    let out = dir.join("out");
    json(&[
        "plan",
        "--config",
        cfg.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ])
}

#[test]
fn plan_writes_the_opensm_files() {
    let dir = tempfile::tempdir().unwrap();
    let v = make_plan(dir.path());
    let conf = std::fs::read_to_string(dir.path().join("out/opensm.conf")).unwrap();
    let policy = std::fs::read_to_string(dir.path().join("out/qos-policy.conf")).unwrap();
    assert_eq!(v["opensm_conf"].as_str().unwrap(), conf);
    assert_eq!(v["qos_policy"].as_str().unwrap(), policy);
    for key in [
        "qos TRUE",
        "qos_max_vls 8",
        "qos_high_limit ",
        "qos_vlarb_high ",
        "qos_vlarb_low ",
        "qos_sl2vl ",
    ] {
        assert!(conf.contains(&format!("\n{key}")), "{key}: {conf}");
    }
    let plan = &v["plan"];
    // 50 of 100 Gb/s reserved: the smallest limit that carries it is 1.
    assert_eq!(plan["high_limit"], 1);
    // 5 µs is 2.18 slots of 2.29 µs: distance 2, SL 0; the DB class takes
    // the largest distance, 8 (SL 2), and its weight needs 4 entries.
    let classes = plan["classes"].as_array().unwrap();
    let by = |name: &str| classes.iter().find(|c| c["name"] == name).unwrap().clone();
    assert_eq!(
        (
            by("inference")["distance"].as_u64(),
            by("inference")["sl"].as_u64()
        ),
        (Some(2), Some(0))
    );
    assert_eq!(
        (
            by("training")["distance"].as_u64(),
            by("training")["sl"].as_u64()
        ),
        (Some(8), Some(2))
    );
    assert!(by("best-effort")["implicit"].as_bool().unwrap());
    assert!(policy.contains("name: DEFAULT"));
    // A class that does not fit is refused with what would.
    let cfg = dir.path().join("big.toml");
    std::fs::write(
        &cfg,
        "[port]\nrate_gbps = 100\n[[class]]\nname = \"a\"\nkind = \"db\"\nbandwidth_gbps = 70\n\
         [[class]]\nname = \"b\"\nkind = \"db\"\nbandwidth_gbps = 40\n",
    )
    .unwrap();
    let out = rcud()
        .args(["qos", "plan", "--config"])
        .arg(&cfg)
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(
        text(&out).contains("\"b\" does not fit") && text(&out).contains("still fits"),
        "{}",
        text(&out)
    );
}

// ---- OpenSM ------------------------------------------------------------

/// `Some(path)` of a tool, or `None` after printing `skipped:` (a failure
/// under RCUD_REQUIRE_OPENSM=1).
fn tool(test: &str, what: &str, found: Option<PathBuf>) -> Option<PathBuf> {
    if found.is_some() {
        return found;
    }
    assert!(
        std::env::var("RCUD_REQUIRE_OPENSM").as_deref() != Ok("1"),
        "RCUD_REQUIRE_OPENSM=1 but {what} is missing: run scripts/ensure-opensm.sh"
    );
    println!("skipped: {test}: no {what} (run scripts/ensure-opensm.sh); set RCUD_REQUIRE_OPENSM=1 to make this a failure");
    None
}

fn on_path(name: &str, extra: &[&str]) -> Option<PathBuf> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .map(|d| d.join(name))
        .chain(extra.iter().map(PathBuf::from))
        .find(|p| p.is_file())
}

fn opensm() -> Option<PathBuf> {
    match std::env::var_os("RCUD_OPENSM") {
        Some(p) if !p.is_empty() => Some(PathBuf::from(p)).filter(|p| p.is_file()),
        _ => on_path("opensm", &["/usr/sbin/opensm"]),
    }
}

fn umad2sim() -> Option<PathBuf> {
    ["/usr/lib", "/usr/lib64", "/usr/local/lib"]
        .iter()
        .flat_map(|root| {
            let mut c = vec![Path::new(root).join("umad2sim/libumad2sim.so")];
            if let Ok(dirs) = std::fs::read_dir(root) {
                c.extend(
                    dirs.flatten()
                        .map(|d| d.path().join("umad2sim/libumad2sim.so")),
                );
            }
            c
        })
        .find(|p| p.is_file())
}

/// Runs a command with a time limit.
fn run_for(cmd: &mut Command, limit: Duration) -> Output {
    let mut child = cmd
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let start = Instant::now();
    while child.try_wait().unwrap().is_none() {
        if start.elapsed() > limit {
            child.kill().unwrap();
            panic!("{cmd:?} ran longer than {limit:?}");
        }
        sleep(Duration::from_millis(50));
    }
    child.wait_with_output().unwrap()
}

/// The `qos_*` lines of an OpenSM options file, as written.
fn qos_lines(conf: &str) -> Vec<String> {
    conf.lines()
        .filter(|l| {
            [
                "qos_max_vls ",
                "qos_high_limit ",
                "qos_vlarb_high ",
                "qos_vlarb_low ",
                "qos_sl2vl ",
            ]
            .iter()
            .any(|k| l.starts_with(k))
        })
        .map(str::to_owned)
        .collect()
}

/// OpenSM's option parser (`-F`, then `-c` dumps what it loaded and exits,
/// no adapter needed) takes the fragment without a warning and loads exactly
/// the values written.
#[test]
fn opensm_parses_the_options_fragment() {
    let Some(opensm) = tool("opensm_parses_the_options_fragment", "opensm", opensm()) else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    make_plan(dir.path());
    let check = |conf: &Path| {
        let dump = dir.path().join("dump.conf");
        let _ = std::fs::remove_file(&dump);
        let out = run_for(
            Command::new(&opensm)
                .arg("-F")
                .arg(conf)
                .arg("-c")
                .arg(&dump),
            Duration::from_secs(30),
        );
        (out, std::fs::read_to_string(&dump).unwrap_or_default())
    };
    // The check can fail: OpenSM does report a bad fragment.
    let bad = dir.path().join("bad.conf");
    std::fs::write(
        &bad,
        "qos TRUE\nqos_vlarb_high 0:300\nqos_sl2vl 0,1\nqos_bogus 1\n",
    )
    .unwrap();
    let (out, _) = check(&bad);
    let t = text(&out);
    assert!(
        t.contains("out of range") && t.contains("< 16 VLs") && t.contains("Unrecognized"),
        "{t}"
    );

    let conf = dir.path().join("out/opensm.conf");
    let (out, dump) = check(&conf);
    let t = text(&out);
    assert!(out.status.success(), "{t}");
    for complaint in ["Unrecognized", "Invalid", "Warning", "rror"] {
        assert!(
            !t.contains(complaint),
            "OpenSM complained ({complaint}): {t}"
        );
    }
    let ours = qos_lines(&std::fs::read_to_string(&conf).unwrap());
    assert_eq!(ours.len(), 5);
    assert_eq!(
        qos_lines(&dump),
        ours,
        "OpenSM loaded other values than written"
    );
}

/// A simulated fabric stopped when the test ends, even on failure.
struct Ibsim(Child);

impl Drop for Ibsim {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// One row (`VL` or `WEIGHT`) of smpquery's VL arbitration dump, per table.
fn vlarb_rows(dump: &str, row: &str) -> Vec<Vec<u8>> {
    dump.lines()
        .filter(|l| l.starts_with(row))
        .map(|l| {
            l.split('|')
                .skip(1)
                .map(str::trim)
                .filter(|c| !c.is_empty())
                .map(|c| u8::from_str_radix(c.trim_start_matches("0x"), 16).unwrap())
                .collect()
        })
        .collect()
}

/// OpenSM runs once against ibsim's simulated fabric (a switch and two
/// adapters) with the plan: it parses and validates the policy file, and
/// programs the ports' SL-to-VL and VL arbitration tables, which smpquery
/// reads back and which must be the plan's.
#[test]
fn opensm_programs_a_simulated_fabric_with_the_plan() {
    let test = "opensm_programs_a_simulated_fabric_with_the_plan";
    let Some(opensm) = tool(test, "opensm", opensm()) else {
        return;
    };
    let Some(ibsim) = tool(test, "ibsim (ibsim-utils)", on_path("ibsim", &[])) else {
        return;
    };
    let Some(sim) = tool(test, "libumad2sim.so (libumad2sim0)", umad2sim()) else {
        return;
    };
    let Some(smpquery) = tool(
        test,
        "smpquery (infiniband-diags)",
        on_path("smpquery", &["/usr/sbin/smpquery"]),
    ) else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let v = make_plan(d);
    let plan = &v["plan"];
    std::fs::write(
        d.join("net"),
        "Switch 4 \"sw1\"\n[1] \"hca1\"[1]\n[2] \"hca2\"[1]\n\n\
         Hca 1 \"hca1\"\n[1] \"sw1\"[1]\n\nHca 1 \"hca2\"\n[1] \"sw1\"[2]\n",
    )
    .unwrap();
    // A socket name of our own: parallel runs do not meet.
    let sock = format!("rcud-qos-{}", std::process::id());
    let log = std::fs::File::create(d.join("ibsim.log")).unwrap();
    let _fabric = Ibsim(
        Command::new(&ibsim)
            .args(["-s", "-n", "net"])
            .current_dir(d)
            .env("IBSIM_SOCKNAME", &sock)
            .stdin(Stdio::null())
            .stdout(log.try_clone().unwrap())
            .stderr(log)
            .spawn()
            .unwrap(),
    );
    let start = Instant::now();
    while !std::fs::read_to_string(d.join("ibsim.log"))
        .unwrap()
        .contains("simulator ready")
    {
        assert!(
            start.elapsed() < Duration::from_secs(20),
            "ibsim did not start"
        );
        sleep(Duration::from_millis(50));
    }
    let simulated = |cmd: &mut Command| -> Output {
        cmd.current_dir(d)
            .env("IBSIM_SOCKNAME", &sock)
            .env("LD_PRELOAD", &sim)
            .env("OSM_TMP_DIR", d)
            .env("OSM_CACHE_DIR", d);
        run_for(cmd, Duration::from_secs(60))
    };
    let sm = |policy: &str, log: &str| {
        let out = simulated(
            Command::new(&opensm)
                .args([
                    "-F",
                    "out/opensm.conf",
                    "-Q",
                    "-Y",
                    policy,
                    "-o",
                    "-s",
                    "0",
                    "-f",
                ])
                .arg(d.join(log)),
        );
        assert!(out.status.success(), "{}", text(&out));
        (text(&out), std::fs::read_to_string(d.join(log)).unwrap())
    };

    // The check can fail: a policy naming a missing level is reported.
    let broken = std::fs::read_to_string(d.join("out/qos-policy.conf"))
        .unwrap()
        .replace("qos-level-name: inference", "qos-level-name: nowhere");
    std::fs::write(d.join("broken-policy.conf"), broken).unwrap();
    let (out, log) = sm("broken-policy.conf", "broken.log");
    assert!(
        log.contains("ERR AC") && out.contains("rror"),
        "{out}\n{log}"
    );

    let (out, log) = sm("out/qos-policy.conf", "osm.log");
    assert!(log.contains("Loading QoS policy file"), "{log}");
    for line in log.lines() {
        assert!(!line.contains("ERR "), "OpenSM: {line}");
    }
    assert!(!out.contains("rror"), "{out}");

    let query = |args: &[&str]| {
        let out = simulated(Command::new(&smpquery).args(args));
        assert!(out.status.success(), "smpquery {args:?}: {}", text(&out));
        String::from_utf8(out.stdout).unwrap()
    };
    let entries = |key: &str| -> Vec<(u8, u8)> {
        plan[key]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| {
                (
                    e["vl"].as_u64().unwrap() as u8,
                    e["weight"].as_u64().unwrap() as u8,
                )
            })
            .collect()
    };
    let (high, low) = (entries("vlarb_high"), entries("vlarb_low"));
    // The switch's port towards hca1 (direct route "0", port 1) and hca1's
    // own port (direct route "0,1").
    for (route, port) in [("0", "1"), ("0,1", "1")] {
        let dump = query(&["-D", "vlarb", route, port]);
        let (vls, weights) = (vlarb_rows(&dump, "VL"), vlarb_rows(&dump, "WEIGHT"));
        assert_eq!((vls.len(), weights.len()), (2, 2), "{dump}");
        // smpquery lists the low table, then the high one, up to the port's capacity.
        for (table, want) in [(0, &low), (1, &high)] {
            let got: Vec<(u8, u8)> = vls[table]
                .iter()
                .copied()
                .zip(weights[table].iter().copied())
                .collect();
            let n = got.len().min(8);
            let mut want = want.clone();
            want.resize(n, (0, 0));
            assert_eq!(&got[..n], &want[..n], "route {route} table {table}: {dump}");
        }
    }
    let sl2vl: Vec<u8> = plan["sl2vl"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_u64().unwrap() as u8)
        .collect();
    let dump = query(&["-D", "sl2vl", "0,1"]);
    let row = dump
        .lines()
        .find(|l| l.starts_with("ports:"))
        .expect("an SL2VL row");
    let got: Vec<u8> = row
        .split('|')
        .skip(1)
        .map(str::trim)
        .filter(|c| !c.is_empty())
        .map(|c| c.parse().unwrap())
        .collect();
    assert_eq!(got, sl2vl, "{dump}");
    let _ = std::io::stdout().flush();
}
