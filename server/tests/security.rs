//! The `rcud-server` daemon (process isolation) with tenants and TLS: the
//! gate refuses before any agent process exists, agent processes take over
//! the TLS session, and hostile inputs leave other clients served.

mod support;

use std::os::unix::fs::PermissionsExt;

use rcud_proto::auth::Credentials;
use rcud_transport::tls::{self, ClientTls, Trust};
use support::{Conn, ConnectError, ServerProc};

const TENANTS: &str =
    "[tenants.alice]\nsecret = \"alice-secret-0123456789\"\nmax_allocations = 10\n";

fn alice() -> Credentials {
    Credentials::parse("alice:alice-secret-0123456789").unwrap()
}

/// A tenant file and a certificate with its key, in a temporary directory.
struct Files {
    dir: tempfile::TempDir,
    pin: [u8; 32],
}

impl Files {
    fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let tenants = dir.path().join("tenants.toml");
        std::fs::write(&tenants, TENANTS).unwrap();
        std::fs::set_permissions(&tenants, std::fs::Permissions::from_mode(0o600)).unwrap();
        let cert = rcgen::generate_simple_self_signed(vec!["127.0.0.1".into()]).unwrap();
        std::fs::write(dir.path().join("cert.pem"), cert.cert.pem()).unwrap();
        std::fs::write(dir.path().join("key.pem"), cert.signing_key.serialize_pem()).unwrap();
        let pin = tls::parse_pin(&tls::fingerprint(cert.cert.der())).unwrap();
        Self { dir, pin }
    }

    fn path(&self, name: &str) -> String {
        self.dir.path().join(name).to_string_lossy().into_owned()
    }
}

#[test]
fn refused_clients_never_cost_an_agent_process_and_the_log_keeps_secrets() {
    let files = Files::new();
    let server = ServerProc::start(&["--auth-file", &files.path("tenants.toml")]);
    let wrong = Credentials::parse("alice:this-is-not-alices-secret").unwrap();
    for _ in 0..5 {
        match Conn::connect_as(server.addr(), "intruder", Some(&wrong)) {
            Err(ConnectError::Refused(why)) => {
                assert!(
                    why.contains("authentication failed for tenant `alice`"),
                    "{why}"
                )
            }
            other => panic!("a wrong secret got {:?}", other.err()),
        }
        match Conn::connect(server.addr(), "anonymous") {
            Err(ConnectError::Failed(why)) => {
                assert!(why.contains("requires authentication"), "{why}")
            }
            other => panic!("no credentials got {:?}", other.err()),
        }
    }
    assert!(server.children().is_empty(), "{:?}", server.children());
    let mut c = Conn::connect_as(server.addr(), "alice", Some(&alice())).unwrap();
    c.call(
        &rcud_proto::ops::req::Attach { gpu: 0, window: 0 },
        &[],
        &mut [],
    )
    .unwrap()
    .unwrap();
    let p = c.malloc(4096);
    c.htod(p, &[7; 4096]);
    let mut back = [0u8; 4096];
    c.dtoh(p, &mut back);
    assert_eq!(back, [7; 4096]);
    // The tenant's limits hold in its agent process.
    for _ in 1..10 {
        c.malloc(16);
    }
    let over = c
        .call(&rcud_proto::ops::req::Malloc { size: 16 }, &[], &mut [])
        .unwrap();
    assert!(over.unwrap_err().message.contains("10 allocations"));
    let logs = server.logs().join("\n");
    assert!(
        logs.contains("authentication failed for tenant `alice`"),
        "{logs}"
    );
    assert!(
        !logs.contains("alice-secret") && !logs.contains("this-is-not-alices"),
        "{logs}"
    );
}

#[test]
fn agent_processes_take_over_tls_sessions() {
    let files = Files::new();
    let server = ServerProc::start(&[
        "--auth-file",
        &files.path("tenants.toml"),
        "--tls-cert",
        &files.path("cert.pem"),
        "--tls-key",
        &files.path("key.pem"),
    ]);
    let tls = ClientTls::new(&Trust::Pin(files.pin)).unwrap();
    let mut c = Conn::connect_tls(server.addr(), "alice", &alice(), &tls).unwrap();
    c.call(
        &rcud_proto::ops::req::Attach { gpu: 0, window: 0 },
        &[],
        &mut [],
    )
    .unwrap()
    .unwrap();
    let len = 4 << 20;
    let p = c.malloc(len as u64);
    let data: Vec<u8> = (0..len).map(|i| (i % 253) as u8).collect();
    c.htod(p, &data);
    let mut back = vec![0u8; len];
    c.dtoh(p, &mut back);
    assert!(back == data);
    let port = c.local_port();
    assert!(server.agent_pid(port) > 0);
    // Plain TCP against it is refused with a message, at once.
    match Conn::connect_as(server.addr(), "plain", Some(&alice())) {
        Err(ConnectError::Refused(why)) => assert!(why.contains("requires TLS"), "{why}"),
        other => panic!("plaintext against TLS got {:?}", other.err()),
    }
}

#[test]
fn emu_memory_is_the_devices_total_across_agent_processes() {
    let server = ServerProc::start(&["--emu-memory", "64MiB"]);
    let mut a = Conn::attached(server.addr(), "a");
    let mut b = Conn::attached(server.addr(), "b");
    let (free, total) = b.mem_info();
    assert_eq!(total, 64 << 20);
    a.malloc(48 << 20);
    // The other agent process sees the device fill up.
    let (free_now, _) = b.mem_info();
    assert!(free_now <= free - (48 << 20), "{free_now} of {free}");
    let refused = b
        .call(
            &rcud_proto::ops::req::Malloc { size: 32 << 20 },
            &[],
            &mut [],
        )
        .unwrap();
    assert_eq!(
        refused.map(|_| ()).map_err(|f| f.code),
        Err(rcud_proto::CudaError::MEMORY_ALLOCATION)
    );
    // An agent killed while holding memory gives it back once reaped.
    let pid = server.agent_pid(a.local_port());
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(pid as i32),
        nix::sys::signal::Signal::SIGKILL,
    )
    .unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    loop {
        let r = b
            .call(
                &rcud_proto::ops::req::Malloc { size: 32 << 20 },
                &[],
                &mut [],
            )
            .unwrap();
        if r.is_ok() {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the killed agent's memory was never reclaimed"
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    drop(a);
}

#[test]
fn agent_processes_share_the_listeners_qos_arbiter() {
    // A 10 GB/s port: one 8 GB/s reservation fits, a second does not, and
    // agents in their own processes copy through the shared arbiter.
    let server = ServerProc::start(&["--qos-link", "80Gb/s"]);
    let mut big = Conn::connect_qos(server.addr(), "big", "class=db,bandwidth=8GB/s")
        .unwrap_or_else(|e| panic!("{e:?}"));
    match Conn::connect_qos(server.addr(), "too big", "class=db,bandwidth=8GB/s") {
        Err(ConnectError::Refused(why)) => assert!(why.contains("does not fit"), "{why}"),
        other => panic!("a second 8 GB/s got {:?}", other.err()),
    }
    let mut small =
        Conn::connect_qos(server.addr(), "small", "class=be").unwrap_or_else(|e| panic!("{e:?}"));
    for c in [&mut big, &mut small] {
        c.attach();
        let len = 3 << 20;
        let ptr = c.malloc(len as u64);
        let data: Vec<u8> = (0..len).map(|i| (i % 251) as u8).collect();
        c.htod(ptr, &data);
        let mut back = vec![0u8; len];
        c.dtoh(ptr, &mut back);
        assert!(
            back == data,
            "a copy through the arbiter came back different"
        );
    }
    drop(big);
    // The listener gives the reservation back when the agent has ended.
    let mut again = None;
    for _ in 0..200 {
        if let Ok(c) = Conn::connect_qos(server.addr(), "again", "class=db,bandwidth=8GB/s") {
            again = Some(c);
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(25));
    }
    assert!(again.is_some(), "the reservation outlived its agent");
}

#[test]
fn a_tenants_memory_limit_holds_across_agent_processes() {
    let dir = tempfile::tempdir().unwrap();
    let tenants = dir.path().join("tenants.toml");
    std::fs::write(
        &tenants,
        "[tenants.alice]\nsecret = \"alice-secret-0123456789\"\nmemory = \"64MiB\"\n",
    )
    .unwrap();
    std::fs::set_permissions(&tenants, std::fs::Permissions::from_mode(0o600)).unwrap();
    let server = ServerProc::start(&["--auth-file", &tenants.to_string_lossy()]);
    let attach = |name: &str| {
        let mut c = Conn::connect_as(server.addr(), name, Some(&alice()))
            .unwrap_or_else(|e| panic!("{e:?}"));
        c.attach();
        c
    };
    let malloc = |c: &mut Conn, size: u64| {
        c.call(&rcud_proto::ops::req::Malloc { size }, &[], &mut [])
            .expect("transport")
    };
    let mut first = attach("first");
    let mut second = attach("second");
    // The tenant sees a device of its limit's size, as on a MIG slice.
    let info = first
        .call(
            &rcud_proto::ops::req::GetDeviceInfo { gpu: 0 },
            &[],
            &mut [],
        )
        .expect("transport")
        .expect("device info");
    assert_eq!(info.props.total_global_mem, 64 << 20);
    malloc(&mut first, 40 << 20).expect("40 MiB of 64");
    let mem = second
        .call(&rcud_proto::ops::req::MemGetInfo {}, &[], &mut [])
        .expect("transport")
        .expect("memory info");
    assert_eq!((mem.free, mem.total), (24 << 20, 64 << 20));
    let over = malloc(&mut second, 40 << 20).expect_err("80 MiB of 64 over two agents");
    assert!(
        over.message.contains("over all its connections"),
        "{}",
        over.message
    );
    // The agent of the first connection ends; the listener gives its
    // memory back when it reaps it.
    drop(first);
    let mut got = false;
    for _ in 0..200 {
        if malloc(&mut second, 40 << 20).is_ok() {
            got = true;
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(25));
    }
    assert!(got, "the first agent's memory was never given back");
}

#[test]
fn a_clients_memory_limit_is_the_size_of_its_device() {
    let server = ServerProc::start(&["--client-memory", "32MiB"]);
    let mut c = Conn::attached(server.addr(), "limited");
    let info = c
        .call(
            &rcud_proto::ops::req::GetDeviceInfo { gpu: 0 },
            &[],
            &mut [],
        )
        .expect("transport")
        .expect("device info");
    assert_eq!(info.props.total_global_mem, 32 << 20);
    let p = c.malloc(8 << 20);
    let mem = c
        .call(&rcud_proto::ops::req::MemGetInfo {}, &[], &mut [])
        .expect("transport")
        .expect("memory info");
    assert_eq!((mem.free, mem.total), (24 << 20, 32 << 20));
    let over = c
        .call(
            &rcud_proto::ops::req::Malloc { size: 32 << 20 },
            &[],
            &mut [],
        )
        .expect("transport")
        .expect_err("40 MiB of 32");
    assert!(over.message.contains("--client-memory"), "{}", over.message);
    c.free(p);
}

#[test]
fn status_of_a_missing_gpu_is_an_invalid_device() {
    let server = ServerProc::start(&[]);
    let mut c = Conn::connect(server.addr(), "monitor").expect("connect");
    for gpu in [1, 64, u32::MAX] {
        let err = c
            .call(&rcud_proto::ops::req::DeviceStatus { gpu }, &[], &mut [])
            .expect("transport")
            .expect_err("a GPU the server does not have");
        assert_eq!(err.code, rcud_proto::CudaError::INVALID_DEVICE, "gpu {gpu}");
    }
    let ok = c
        .call(&rcud_proto::ops::req::DeviceStatus { gpu: 0 }, &[], &mut [])
        .expect("transport")
        .expect("GPU 0");
    assert!(ok.processes.is_empty());
}
