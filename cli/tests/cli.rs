//! The `rcud` and `rcud-server` commands themselves, without CUDA programs.

use std::path::PathBuf;
use std::process::{Command, Output};

fn rcud() -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_rcud"));
    cmd.env_remove("RCUD_SERVERS").env_remove("LD_PRELOAD");
    cmd
}

fn rcud_server() -> Command {
    let dir = PathBuf::from(env!("CARGO_BIN_EXE_rcud"));
    let server = dir.with_file_name("rcud-server");
    assert!(
        server.is_file(),
        "{} is missing: build the workspace first (cargo build --workspace)",
        server.display()
    );
    Command::new(server)
}

fn text(out: &Output) -> (String, String) {
    (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn run_returns_the_program_exit_status_and_sets_up_the_library() {
    let out = rcud()
        .args(["run", "--", "sh", "-c"])
        .arg(
            r#"case "$LD_PRELOAD" in *librcudart.so*) ;; *) exit 90;; esac
               ls "${LD_LIBRARY_PATH%%:*}/libcudart.so.13" >/dev/null || exit 91
               case "$RCUD_SERVERS" in 127.0.0.1:*) exit 3;; *) exit 92;; esac"#,
        )
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(3), "{:?}", text(&out));

    let out = rcud()
        .args(["run", "--server", "gpu7:7100", "--", "sh", "-c"])
        .arg(r#"test "$RCUD_SERVERS" = gpu7:7100"#)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{:?}", text(&out));
}

#[test]
fn run_reports_a_missing_program() {
    let out = rcud()
        .args(["run", "--", "/nonexistent/program"])
        .output()
        .unwrap();
    let (_, stderr) = text(&out);
    assert!(!out.status.success());
    assert!(
        stderr.contains("cannot start /nonexistent/program"),
        "{stderr}"
    );
}

#[test]
fn info_lists_the_emulated_gpu() {
    let out = rcud().arg("info").output().unwrap();
    let (stdout, stderr) = text(&out);
    assert!(out.status.success(), "{stdout}{stderr}");
    assert!(
        stdout.contains("device 0: rcud emulated GPU (sm_80)"),
        "{stdout}"
    );
    assert!(stdout.contains("compute capability:  8.0"), "{stdout}");
}

#[test]
fn info_reports_an_unreachable_server() {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let out = rcud()
        .args(["info", "--server", &format!("127.0.0.1:{port}")])
        .output()
        .unwrap();
    let (stdout, stderr) = text(&out);
    assert!(!out.status.success());
    assert!(stdout.contains("no remote GPU found"), "{stdout}");
    assert!(stderr.contains("cannot connect to rcud server"), "{stderr}");
}

#[test]
fn server_backend_cuda_says_what_is_missing() {
    let out = rcud_server()
        .args(["--listen", "127.0.0.1:0", "--backend", "cuda"])
        .output()
        .unwrap();
    let (_, stderr) = text(&out);
    assert!(!out.status.success());
    assert!(
        stderr.contains("backend `cuda` is not available"),
        "{stderr}"
    );
    assert!(stderr.contains("--backend emu"), "{stderr}");
}

#[test]
fn bench_reports_bandwidth_next_to_the_raw_transport() {
    let out = rcud()
        .args([
            "bench",
            "--format",
            "json",
            "bandwidth",
            "--baseline",
            "--sizes",
            "64KB,1MB",
            "--min-ms",
            "20",
        ])
        .output()
        .unwrap();
    let (stdout, stderr) = text(&out);
    assert!(out.status.success(), "{stdout}{stderr}");
    let rows: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    let rows = rows.as_array().unwrap();
    assert_eq!(rows.len(), 6, "{stdout}");
    for row in rows {
        assert!(row["gb_per_s"].as_f64().unwrap() > 0.0, "{row}");
        assert!(row["memcpy_gb_per_s"].as_f64().unwrap() > 0.0, "{row}");
        assert!(row["memcpy_ratio"].as_f64().unwrap() > 0.0, "{row}");
        assert_eq!(row["transport"], "tcp", "{row}");
        if row["direction"] != "d2d" {
            assert!(row["ratio"].as_f64().unwrap() > 0.0, "{row}");
            assert_eq!(row["memory"], "pageable", "{row}");
        } else {
            assert_eq!(row["memory"], "device", "{row}");
        }
    }
}

#[test]
fn bench_reports_latency_next_to_a_raw_ping_pong() {
    let out = rcud()
        .args(["bench", "--format", "csv", "latency", "--iterations", "50"])
        .output()
        .unwrap();
    let (stdout, stderr) = text(&out);
    assert!(out.status.success(), "{stdout}{stderr}");
    assert!(
        stdout.starts_with(
            "transport,call,us,raw_us,ratio,memcpy_ns,memcpy_gb_per_s,memcpy_ratio,placement\n"
        ),
        "{stdout}"
    );
    assert!(stdout.contains("tcp,cudaMemcpy 4 B D2H,"), "{stdout}");
    assert!(stdout.contains(",unpinned\n"), "{stdout}");
}

/// Runs `rcud bench ARGS` and parses its JSON output.
fn bench_json(args: &[&str]) -> Vec<serde_json::Value> {
    let out = rcud()
        .env_remove("RCUD_TRANSPORT")
        .args(["bench", "--format", "json"])
        .args(args)
        .output()
        .unwrap();
    let (stdout, stderr) = text(&out);
    assert!(out.status.success(), "{args:?}: {stdout}{stderr}");
    let rows: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    rows.as_array().unwrap().clone()
}

/// A CPU this process may run on (a container's cpuset may exclude CPU 0).
fn allowed_cpu() -> String {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let list = status
        .lines()
        .find_map(|l| l.strip_prefix("Cpus_allowed_list:"))
        .unwrap()
        .trim();
    list.split([',', '-']).next().unwrap().to_string()
}

#[test]
fn bench_bandwidth_covers_memory_kinds_and_transports_in_csv() {
    let out = rcud()
        .env_remove("RCUD_TRANSPORT")
        .args([
            "bench",
            "--format",
            "csv",
            "--transport",
            "tcp,csr,msr",
            "bandwidth",
            "--baseline",
            "--memory",
            "both",
            "--direction",
            "h2d",
            "--sizes",
            "256KB",
            "--min-ms",
            "10",
        ])
        .output()
        .unwrap();
    let (stdout, stderr) = text(&out);
    assert!(out.status.success(), "{stdout}{stderr}");
    let mut lines = stdout.lines();
    assert_eq!(
        lines.next(),
        Some(
            "transport,memory,direction,bytes,gb_per_s,raw_gb_per_s,ratio,memcpy_gb_per_s,memcpy_ratio,of_plain"
        )
    );
    let rows: Vec<Vec<&str>> = lines.map(|l| l.split(',').collect()).collect();
    let seen: Vec<(&str, &str)> = rows.iter().map(|r| (r[0], r[1])).collect();
    assert_eq!(
        seen,
        [
            ("tcp", "pageable"),
            ("tcp", "pinned"),
            ("csr", "pageable"),
            ("csr", "pinned"),
            ("msr", "pageable"),
            ("msr", "pinned"),
        ],
        "{stdout}"
    );
    for r in &rows {
        assert_eq!((r[2], r[3]), ("h2d", "262144"), "{r:?}");
        for field in &r[4..9] {
            assert!(field.parse::<f64>().unwrap() > 0.0, "{r:?}");
        }
        assert_eq!(r[9], "", "only TLS rows compare with plain TCP: {r:?}");
    }
}

#[test]
fn bench_bandwidth_measures_tls_beside_plain_tcp() {
    let rows = bench_json(&[
        "bandwidth",
        "--tls",
        "--direction",
        "d2h",
        "--sizes",
        "1MB",
        "--min-ms",
        "10",
    ]);
    assert_eq!(rows.len(), 2, "{rows:?}");
    assert_eq!(rows[0]["transport"], "tcp");
    assert!(rows[0]["of_plain"].is_null(), "{}", rows[0]);
    assert_eq!(rows[1]["transport"], "tcp+tls");
    let ratio = rows[1]["of_plain"].as_f64().unwrap();
    let expected = rows[1]["gb_per_s"].as_f64().unwrap() / rows[0]["gb_per_s"].as_f64().unwrap();
    assert!(
        (ratio - expected).abs() < 1e-9 && ratio > 0.0,
        "{}",
        rows[1]
    );
}

#[test]
fn bench_latency_pins_threads_and_uses_each_module() {
    let cpu = allowed_cpu();
    let rows = bench_json(&[
        &format!("--pin={cpu},{cpu}"),
        "--transport",
        "csr,msr",
        "latency",
        "--iterations",
        "30",
    ]);
    assert_eq!(rows.len(), 4, "{rows:?}");
    for (row, transport) in rows.iter().zip(["csr", "csr", "msr", "msr"]) {
        assert_eq!(row["transport"], transport, "{row}");
        assert_eq!(
            row["placement"],
            format!("client cpu {cpu}, server cpu {cpu}"),
            "{row}"
        );
        for f in ["us", "raw_us", "ratio", "memcpy_ns", "memcpy_gb_per_s"] {
            assert!(row[f].as_f64().unwrap() > 0.0, "{f}: {row}");
        }
    }
}

#[test]
fn bench_launch_reports_each_transport_and_api_in_json() {
    let rows = bench_json(&[
        "--transport",
        "tcp,msr",
        "launch",
        "--launches",
        "200",
        "--sync-every",
        "10",
    ]);
    let modes: Vec<(&str, &str, &str)> = rows
        .iter()
        .map(|r| {
            (
                r["transport"].as_str().unwrap(),
                r["api"].as_str().unwrap(),
                r["mode"].as_str().unwrap(),
            )
        })
        .collect();
    let mut expected = Vec::new();
    for transport in ["tcp", "msr"] {
        for api in ["runtime", "driver"] {
            expected.push((transport, api, "asynchronous"));
            expected.push((transport, api, "synchronize every 10"));
        }
    }
    assert_eq!(modes, expected);
    assert!(rows
        .iter()
        .all(|r| r["launches_per_s"].as_f64().unwrap() > 0.0));
    // The driver API's rows carry their rate relative to the runtime API's.
    for r in rows.iter().filter(|r| r["api"] == "driver") {
        assert!(r["of_runtime"].as_f64().unwrap() > 0.0, "{r}");
    }
}

#[test]
fn bench_plots_are_svg_and_png() {
    let dir = tempfile::tempdir().unwrap();
    let svg = dir.path().join("bw.svg");
    let png = dir.path().join("chunks.png");
    bench_json(&[
        "--transport",
        "tcp,csr",
        "bandwidth",
        "--baseline",
        "--memory",
        "both",
        "--sizes",
        "4KB,64KB",
        "--min-ms",
        "5",
        "--plot",
        svg.to_str().unwrap(),
    ]);
    let doc = std::fs::read_to_string(&svg).unwrap();
    assert!(doc.starts_with("<svg "), "{}", &doc[..100]);
    assert!(doc.trim_end().ends_with("</svg>"));
    for label in [
        "host to device",
        "device to host",
        "csr pinned",
        "tcp raw",
        "host memcpy",
    ] {
        assert!(doc.contains(label), "{label} missing from the plot");
    }
    assert!(doc.len() > 10_000, "{} bytes", doc.len());

    bench_json(&[
        "--transport",
        "msr",
        "chunks",
        "--counts",
        "3,9",
        "--size",
        "1MB",
        "--transfers",
        "1",
        "--plot",
        png.to_str().unwrap(),
    ]);
    let bytes = std::fs::read(&png).unwrap();
    assert!(bytes.starts_with(b"\x89PNG\r\n\x1a\n"));
    assert!(bytes.len() > 10_000, "{} bytes", bytes.len());

    let out = rcud()
        .args(["bench", "bandwidth", "--plot", "bw.pdf"])
        .output()
        .unwrap();
    let (_, stderr) = text(&out);
    assert!(!out.status.success());
    assert!(stderr.contains("must end in .svg or .png"), "{stderr}");
}

#[test]
fn bench_chunks_lays_out_counts_per_module() {
    let rows = bench_json(&[
        "chunks",
        "--counts",
        "6,9",
        "--size",
        "1MB",
        "--transfers",
        "2",
    ]);
    let points: Vec<(&str, u64)> = rows
        .iter()
        .map(|r| {
            (
                r["transport"].as_str().unwrap(),
                r["chunks"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(points, [("csr", 6), ("csr", 9), ("msr", 6), ("msr", 9)]);
    // CSR needs at least 9 chunks: that point has a reason and no figures.
    assert!(rows[0]["mb_per_s"].is_null());
    assert!(rows[0]["note"].as_str().unwrap().contains("at least 9"));
    for row in &rows[1..] {
        assert_eq!(row["chunks_used"], row["chunks"], "{row}");
        assert!(row["note"].is_null(), "{row}");
        for f in [
            "mb_per_s",
            "h2d_mb_per_s",
            "d2h_mb_per_s",
            "h2d_pinned",
            "d2h_pageable",
            "raw_mb_per_s",
            "memcpy_mb_per_s",
            "memcpy_ratio",
        ] {
            assert!(row[f].as_f64().unwrap() > 0.0, "{f}: {row}");
        }
    }

    let out = rcud()
        .args([
            "bench",
            "--format",
            "markdown",
            "--transport",
            "csr",
            "chunks",
            "--counts",
            "9",
            "--size",
            "1MB",
            "--transfers",
            "1",
        ])
        .output()
        .unwrap();
    let (stdout, stderr) = text(&out);
    assert!(out.status.success(), "{stdout}{stderr}");
    assert!(
        stdout.starts_with(
            "| chunks | csr used | csr MB/s | csr H2D | csr D2H | csr raw | memcpy MB/s |\n|---|"
        ),
        "{stdout}"
    );
    assert!(stdout.contains("\n| 9 | 9 | "), "{stdout}");

    let out = rcud()
        .args(["bench", "--transport", "tcp", "chunks"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(text(&out).1.contains("RDMA modules"), "{:?}", text(&out));
}
