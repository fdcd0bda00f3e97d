//! The daemon as operators run it: a configuration file, SIGHUP reload of
//! tenants, Prometheus metrics, the systemd unit.

mod support;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use nix::sys::signal::Signal;
use rcud_proto::auth::Credentials;
use rcud_proto::ops::req;
use support::{Conn, ConnectError, ServerProc};

const OLD_SECRET: &str = "alice-old-secret-0123456789";
const NEW_SECRET: &str = "alice-new-secret-9876543210";

fn repo_file(path: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..").join(path)
}

fn write_private(path: &Path, text: &str) {
    std::fs::write(path, text).unwrap();
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600)).unwrap();
}

fn alice(secret: &str) -> Credentials {
    Credentials::parse(&format!("alice:{secret}")).unwrap()
}

/// Runs `rcud-server ARGS --version`: the configuration is read and checked
/// before clap answers.
fn check_config(args: &[&str]) -> (bool, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_rcud-server"))
        .args(args)
        .arg("--version")
        .output()
        .unwrap();
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn the_example_configuration_is_valid() {
    let example = repo_file("deploy/server.toml");
    let (ok, err) = check_config(&["--config", example.to_str().unwrap()]);
    assert!(ok, "{err}");
    let text = std::fs::read_to_string(&example).unwrap();
    let tenants = rcud_server::tenants::Tenants::parse_config(&text, &example).unwrap();
    assert_eq!(tenants.names().collect::<Vec<_>>(), ["alice", "bob"]);
    assert_eq!(
        tenants.get("alice").unwrap().limits.memory,
        Some(4 << 30),
        "the tenants' limits are read from the same file"
    );
}

#[test]
fn bad_configurations_are_refused_with_line_and_reason() {
    let dir = tempfile::tempdir().unwrap();
    let cases = [
        (
            "listen = \"127.0.0.1:0\"\nmax_clients = 0\n",
            "s.toml:2: invalid value '0' for '--max-clients <MAX_CLIENTS>'",
        ),
        (
            "\n\nemu_memory = \"lots\"\n",
            "s.toml:3: invalid value 'lots' for '--emu-memory <EMU_MEMORY>'",
        ),
        ("max_clinets = 4\n", "s.toml:1: unknown key `max_clinets`"),
        (
            "[qos]\nlnk = \"1Gb/s\"\n",
            "s.toml:2: unknown key `lnk` in [qos]",
        ),
        (
            "isolation = \"vm\"\n",
            "s.toml:1: invalid value 'vm' for '--isolation",
        ),
        // Agents' hidden flags are no keys.
        ("agent_fd = 3\n", "s.toml:1: unknown key `agent_fd`"),
        ("max_clients = \n", "TOML parse error at line 1"),
    ];
    for (text, expected) in cases {
        let path = dir.path().join("s.toml");
        std::fs::write(&path, text).unwrap();
        let (ok, err) = check_config(&["--config", path.to_str().unwrap()]);
        assert!(!ok, "{text:?} was accepted");
        assert!(err.contains(expected), "{text:?}: {err}");
    }
}

#[test]
fn flags_override_the_file_and_the_file_holds_tenants_and_limits() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("server.toml");
    // The file's listen address is taken over by ServerProc's --listen; its
    // max_clients is not overridden, so it holds.
    write_private(
        &config,
        &format!(
            "listen = \"127.0.0.1:1\"\nmax_clients = 1\nisolation = \"thread\"\n\
             [tenants.alice]\nsecret = \"{OLD_SECRET}\"\n"
        ),
    );
    let server = ServerProc::start(&["--config", config.to_str().unwrap()]);
    assert_ne!(server.addr(), "127.0.0.1:1");
    let creds = alice(OLD_SECRET);
    let mut first = Conn::connect_as(server.addr(), "first", Some(&creds)).unwrap();
    first
        .call(&req::Attach { gpu: 0, window: 0 }, &[], &mut [])
        .unwrap()
        .unwrap();
    match Conn::connect_as(server.addr(), "second", Some(&creds)) {
        Err(ConnectError::Refused(why)) => assert!(why.contains("limit of 1 clients"), "{why}"),
        other => panic!("max_clients = 1 let a second client in: {:?}", other.err()),
    }
    // Without credentials: the tenants came from the file.
    assert!(Conn::connect(server.addr(), "anonymous").is_err());
}

#[test]
fn sighup_puts_new_secrets_in_force_and_keeps_connected_clients() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("server.toml");
    let with_secret = |secret: &str| {
        format!(
            "max_clients = 8\n[tenants.alice]\nsecret = \"{secret}\"\nmax_allocations = 100\n\
             [tenants.bob]\nsecret = \"bob-secret-0123456789abc\"\n"
        )
    };
    write_private(&config, &with_secret(OLD_SECRET));
    let server = ServerProc::start(&["--config", config.to_str().unwrap()]);
    let mut connected = Conn::connect_as(server.addr(), "early", Some(&alice(OLD_SECRET))).unwrap();
    connected
        .call(&req::Attach { gpu: 0, window: 0 }, &[], &mut [])
        .unwrap()
        .unwrap();
    let p = connected.malloc(4096);
    connected.htod(p, &[1; 4096]);

    write_private(&config, &with_secret(NEW_SECRET));
    server.signal(Signal::SIGHUP);
    server
        .wait_log(Duration::from_secs(10), |l| {
            l.contains("SIGHUP: reloaded 2 tenant(s)")
        })
        .expect("the reload is logged");

    match Conn::connect_as(server.addr(), "late-old", Some(&alice(OLD_SECRET))) {
        Err(ConnectError::Refused(why)) => {
            assert!(why.contains("authentication failed"), "{why}")
        }
        other => panic!("the old secret still works: {:?}", other.err()),
    }
    let mut late = Conn::connect_as(server.addr(), "late-new", Some(&alice(NEW_SECRET))).unwrap();
    late.call(&req::Attach { gpu: 0, window: 0 }, &[], &mut [])
        .unwrap()
        .unwrap();
    let q = late.malloc(64);
    late.htod(q, &[9; 64]);
    // The client connected before the reload keeps working.
    let mut back = [0u8; 4096];
    connected.dtoh(p, &mut back);
    assert_eq!(back, [1; 4096]);
    connected.htod(p, &[2; 4096]);
    connected.dtoh(p, &mut back);
    assert_eq!(back, [2; 4096]);

    // A file that does not parse changes nothing.
    write_private(&config, "max_clients = 0\n");
    server.signal(Signal::SIGHUP);
    server
        .wait_log(Duration::from_secs(10), |l| {
            l.contains("SIGHUP: reload failed")
        })
        .expect("the failed reload is logged");
    Conn::connect_as(server.addr(), "after-bad", Some(&alice(NEW_SECRET))).unwrap();
    // Adding a tenant needs a restart; the server says so and keeps its own.
    write_private(
        &config,
        &format!(
            "{}[tenants.carol]\nsecret = \"carol-secret-0123456789\"\n",
            with_secret(OLD_SECRET)
        ),
    );
    server.signal(Signal::SIGHUP);
    let line = server
        .wait_count(2, Duration::from_secs(10), |l| {
            l.contains("SIGHUP: reload failed")
        })
        .eq(&2);
    assert!(line, "{:?}", server.logs());
    assert!(server
        .logs()
        .iter()
        .any(|l| l.contains("adding or removing tenants needs a restart")));
    Conn::connect_as(server.addr(), "after-add", Some(&alice(NEW_SECRET))).unwrap();
}

/// `GET /metrics` from `addr`.
fn scrape(addr: &str) -> String {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    write!(s, "GET /metrics HTTP/1.1\r\nHost: {addr}\r\n\r\n").unwrap();
    let mut text = String::new();
    s.read_to_string(&mut text).unwrap();
    assert!(text.starts_with("HTTP/1.1 200 OK"), "{text}");
    text
}

/// The value of the sample named exactly `name` (labels included).
fn sample(text: &str, name: &str) -> f64 {
    text.lines()
        .find_map(|l| {
            l.strip_prefix(name)
                .and_then(|rest| rest.strip_prefix(' '))
                .and_then(|v| v.trim().parse().ok())
        })
        .unwrap_or_else(|| panic!("no sample {name} in\n{text}"))
}

fn free_port() -> String {
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    l.local_addr().unwrap().to_string()
}

#[test]
fn metrics_count_clients_traffic_latency_and_tenant_memory_of_agent_processes() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("server.toml");
    let metrics = free_port();
    write_private(
        &config,
        &format!("[metrics]\nlisten = \"{metrics}\"\n[tenants.alice]\nsecret = \"{OLD_SECRET}\"\n"),
    );
    let server = ServerProc::start(&["--config", config.to_str().unwrap()]);
    let before = scrape(&metrics);
    assert_eq!(sample(&before, "rcud_clients_connected"), 0.0);
    assert_eq!(
        sample(&before, "rcud_tenant_device_memory_bytes{tenant=\"alice\"}"),
        0.0
    );

    let mut c = Conn::connect_as(server.addr(), "metered", Some(&alice(OLD_SECRET))).unwrap();
    c.call(&req::Attach { gpu: 0, window: 0 }, &[], &mut [])
        .unwrap()
        .unwrap();
    let p = c.malloc(1 << 20);
    c.htod(p, &vec![3; 1 << 20]);
    let mut back = vec![0u8; 1 << 20];
    c.dtoh(p, &mut back);

    let during = scrape(&metrics);
    assert_eq!(sample(&during, "rcud_clients_connected"), 1.0);
    assert_eq!(sample(&during, "rcud_agent_processes"), 1.0);
    assert_eq!(
        sample(&during, "rcud_admissions_total{tenant=\"alice\"}"),
        1.0
    );
    let received = sample(
        &during,
        "rcud_transport_bytes_total{transport=\"tcp\",direction=\"received\"}",
    );
    let sent = sample(
        &during,
        "rcud_transport_bytes_total{transport=\"tcp\",direction=\"sent\"}",
    );
    assert!(received >= (1 << 20) as f64, "{received}");
    assert!(sent >= (1 << 20) as f64, "{sent}");
    let frames = sample(
        &during,
        "rcud_transport_frames_total{transport=\"tcp\",direction=\"received\"}",
    );
    assert!(frames >= 4.0, "attach, malloc, two copies: {frames}");
    let calls = sample(&during, "rcud_call_latency_seconds_count");
    assert!(calls >= 4.0, "{calls}");
    assert_eq!(
        sample(&during, "rcud_call_latency_seconds_bucket{le=\"+Inf\"}"),
        calls
    );
    let held = sample(&during, "rcud_tenant_device_memory_bytes{tenant=\"alice\"}");
    assert!(held >= (1 << 20) as f64, "{held}");

    // A wrong secret is counted as a refusal.
    assert!(Conn::connect_as(server.addr(), "x", Some(&alice(NEW_SECRET))).is_err());
    drop(c);
    server.wait_no_children(Duration::from_secs(10));
    let after = scrape(&metrics);
    assert_eq!(sample(&after, "rcud_clients_connected"), 0.0);
    assert_eq!(
        sample(&after, "rcud_tenant_device_memory_bytes{tenant=\"alice\"}"),
        0.0,
        "what the client held is given back"
    );
    assert_eq!(sample(&after, "rcud_refusals_total{reason=\"gate\"}"), 1.0);
    assert!(sample(&after, "rcud_call_latency_seconds_count") >= calls);
}

#[test]
fn the_systemd_unit_passes_systemd_analyze_verify() {
    let Ok(analyze) = which("systemd-analyze") else {
        eprintln!("systemd-analyze is not installed: not checked");
        return;
    };
    let unit = std::fs::read_to_string(repo_file("deploy/systemd/rcud-server.service")).unwrap();
    assert!(unit.contains("ExecReload=/bin/kill -HUP $MAINPID"));
    assert!(unit.contains("DeviceAllow=char-nvidia-frontend rw"));
    // verify wants the ExecStart binary to exist: point it at the built one.
    let built = env!("CARGO_BIN_EXE_rcud-server");
    let unit = unit.replace("/usr/bin/rcud-server", built);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("rcud-server.service");
    std::fs::write(&path, unit).unwrap();
    let out = Command::new(analyze)
        .arg("verify")
        .arg(&path)
        .env("SYSTEMD_LOG_LEVEL", "warning")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    // verify reports some problems as warnings only.
    let ours: Vec<_> = stderr
        .lines()
        .filter(|l| l.contains("rcud-server.service"))
        .collect();
    assert!(ours.is_empty(), "{stderr}");
}

fn which(program: &str) -> Result<PathBuf, ()> {
    std::env::var_os("PATH")
        .into_iter()
        .flat_map(|p| std::env::split_paths(&p).collect::<Vec<_>>())
        .map(|d| d.join(program))
        .find(|p| p.is_file())
        .ok_or(())
}
