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
        if row["direction"] != "d2d" {
            assert!(row["ratio"].as_f64().unwrap() > 0.0, "{row}");
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
    assert!(stdout.starts_with("call,us,raw_us,ratio"), "{stdout}");
    assert!(stdout.contains("cudaMemcpy 4 B D2H,"), "{stdout}");
}
