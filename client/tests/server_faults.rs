//! The client runtime against a real in-process server on the emulated device:
//! hostile and broken connections, a server that goes away, resources released
//! on disconnect.

use std::io::{Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use rcud_client::config::ServerEntry;
use rcud_client::session::Session;
use rcud_client::Runtime;
use rcud_proto::frame::{FrameHeader, FrameKind, MAX_BODY};
use rcud_proto::handshake::{client_exchange, encode_hello, ClientHello};
use rcud_proto::ops::{req, Failure, Op};
use rcud_proto::CudaError;
use rcud_server::backend::{BackendKind, EmuSettings};
use rcud_server::{select_backend, Server, ServerHandle};

fn server(memory: u64) -> ServerHandle {
    let emu = EmuSettings {
        gpus: 2,
        memory,
        ..EmuSettings::default()
    };
    let backend = select_backend(BackendKind::Emu, &emu).unwrap();
    Server::bind("127.0.0.1:0", backend)
        .unwrap()
        .spawn()
        .unwrap()
}

fn session(addr: SocketAddr) -> Session {
    Session::connect(&addr.to_string(), "test").unwrap()
}

/// The CUDA error of a failed call, without its message.
fn code<T>(r: Result<T, Failure>) -> Result<(), CudaError> {
    r.map(|_| ()).map_err(|f| f.code)
}

fn attach(s: &mut Session, gpu: u32) {
    s.call(&req::Attach { gpu, window: gpu }, &[], &mut [])
        .unwrap()
        .unwrap();
}

/// True once the server has closed `stream` (read returns 0 or an error).
fn closed_by_server(stream: &mut TcpStream) -> bool {
    stream
        .set_read_timeout(Some(Duration::from_secs(20)))
        .unwrap();
    let mut buf = [0u8; 4096];
    loop {
        match stream.read(&mut buf) {
            Ok(0) | Err(_) => return true,
            // The server may answer a bad hello before closing.
            Ok(_) => continue,
        }
    }
}

/// A connection that has completed a valid handshake.
fn raw_session(addr: SocketAddr) -> TcpStream {
    let mut s = TcpStream::connect(addr).unwrap();
    client_exchange(&mut s, &ClientHello::new("raw"), None).unwrap();
    s
}

fn request_header(op: u16, body_len: u32, bulk_len: u64) -> [u8; 24] {
    FrameHeader {
        flags: 0,
        kind: FrameKind::REQUEST,
        op,
        body_len,
        id: 1,
        bulk_len,
    }
    .to_bytes()
}

#[test]
fn hostile_connections_are_closed_and_others_keep_working() {
    let srv = server(1 << 30);
    let addr = srv.addr();
    let mut good = session(addr);
    attach(&mut good, 0);
    let ptr = good
        .call(&req::Malloc { size: 4096 }, &[], &mut [])
        .unwrap()
        .unwrap()
        .ptr;

    let mut attacks: Vec<(&str, Vec<u8>, bool)> = vec![
        (
            "garbage",
            (0..4096u32)
                .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
                .collect(),
            false,
        ),
        ("huge hello length", u32::MAX.to_le_bytes().to_vec(), false),
        (
            "truncated hello",
            encode_hello(&ClientHello::new("x"))[..7].to_vec(),
            false,
        ),
    ];
    let mut bad_magic = encode_hello(&ClientHello::new("x"));
    bad_magic[4] = b'X';
    attacks.push(("bad magic", bad_magic, false));
    // Attacks after a valid handshake.
    attacks.push(("bad frame magic", vec![0xEE; 24], true));
    attacks.push((
        "oversized body",
        request_header(0x0010, MAX_BODY + 1, 0).to_vec(),
        true,
    ));
    let mut unknown = request_header(0x7777, 0, 0).to_vec();
    unknown.truncate(24);
    attacks.push(("unknown op", unknown, true));
    let mut mismatch = request_header(req::MemcpyHtoD::ID.0, 16, 5).to_vec();
    mismatch.extend_from_slice(&ptr.to_le_bytes());
    mismatch.extend_from_slice(&4u64.to_le_bytes());
    mismatch.extend_from_slice(&[0; 5]);
    attacks.push(("payload length mismatch", mismatch, true));
    let mut truncated_body = request_header(req::Malloc::ID.0, 8, 0).to_vec();
    truncated_body.extend_from_slice(&[1, 2, 3]);
    attacks.push(("body cut short", truncated_body, true));

    for (what, bytes, after_hello) in attacks {
        let mut s = if after_hello {
            raw_session(addr)
        } else {
            TcpStream::connect(addr).unwrap()
        };
        let _ = s.write_all(&bytes);
        if what.contains("short") || what.contains("truncated") {
            let _ = s.shutdown(Shutdown::Write);
        }
        assert!(closed_by_server(&mut s), "{what}: connection left open");
    }

    // The well-behaved client noticed nothing.
    let data: Vec<u8> = (0..4096u32).map(|i| i as u8).collect();
    good.call(
        &req::MemcpyHtoD {
            dst: ptr,
            len: 4096,
        },
        &data,
        &mut [],
    )
    .unwrap()
    .unwrap();
    let mut back = vec![0u8; 4096];
    good.call(
        &req::MemcpyDtoH {
            src: ptr,
            len: 4096,
        },
        &[],
        &mut back,
    )
    .unwrap()
    .unwrap();
    assert_eq!(back, data);
}

#[test]
fn invalid_requests_get_cuda_errors_and_the_session_survives() {
    let srv = server(1 << 30);
    let mut s = session(srv.addr());
    // Memory operations need an attached GPU.
    assert_eq!(
        code(s.call(&req::Malloc { size: 16 }, &[], &mut []).unwrap()),
        Err(CudaError::INVALID_DEVICE)
    );
    assert_eq!(
        code(
            s.call(&req::Attach { gpu: 9, window: 0 }, &[], &mut [])
                .unwrap()
        ),
        Err(CudaError::INVALID_DEVICE)
    );
    attach(&mut s, 1);
    let p = s
        .call(&req::Malloc { size: 100 }, &[], &mut [])
        .unwrap()
        .unwrap()
        .ptr;
    let bad = s
        .call(
            &req::MemcpyHtoD {
                dst: p + 50,
                len: 51,
            },
            &[7; 51],
            &mut [],
        )
        .unwrap();
    assert_eq!(code(bad), Err(CudaError::INVALID_VALUE));
    let mut out = [0u8; 8];
    let bad = s
        .call(
            &req::MemcpyDtoH {
                src: 0xdead_beef,
                len: 8,
            },
            &[],
            &mut out,
        )
        .unwrap();
    assert_eq!(code(bad), Err(CudaError::INVALID_VALUE));
    assert_eq!(
        code(
            s.call(&req::Malloc { size: 1 << 40 }, &[], &mut [])
                .unwrap()
        ),
        Err(CudaError::MEMORY_ALLOCATION)
    );
    // Still in sync after the rejected payload.
    s.call(&req::MemcpyHtoD { dst: p, len: 100 }, &[3; 100], &mut [])
        .unwrap()
        .unwrap();
    let mut back = [0u8; 100];
    s.call(&req::MemcpyDtoH { src: p, len: 100 }, &[], &mut back)
        .unwrap()
        .unwrap();
    assert_eq!(back, [3; 100]);
}

#[test]
fn a_disconnected_client_leaves_nothing_allocated() {
    let srv = server(1 << 30);
    let total = 1u64 << 30;
    {
        let mut s = session(srv.addr());
        attach(&mut s, 0);
        for _ in 0..3 {
            s.call(&req::Malloc { size: 256 << 20 }, &[], &mut [])
                .unwrap()
                .unwrap();
        }
        let info = s.call(&req::MemGetInfo {}, &[], &mut []).unwrap().unwrap();
        assert_eq!(info.free, total - (768 << 20));
    }
    let mut observer = session(srv.addr());
    attach(&mut observer, 0);
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let info = observer
            .call(&req::MemGetInfo {}, &[], &mut [])
            .unwrap()
            .unwrap();
        if info.free == total {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "memory of the gone client not released"
        );
        thread::sleep(Duration::from_millis(20));
    }
}

/// A TCP proxy whose connections can be cut, to play a server that dies:
/// after the cut it accepts no connection (a client trying to resume its
/// session finds nobody), until `revive`.
struct CutProxy {
    addr: SocketAddr,
    live: Arc<Mutex<Vec<TcpStream>>>,
    dead: Arc<AtomicBool>,
}

impl CutProxy {
    fn new(upstream: SocketAddr) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let live = Arc::new(Mutex::new(Vec::<TcpStream>::new()));
        let dead = Arc::new(AtomicBool::new(false));
        let (conns, gone) = (live.clone(), dead.clone());
        thread::spawn(move || {
            for client in listener.incoming().flatten() {
                if gone.load(Ordering::SeqCst) {
                    drop(client);
                    continue;
                }
                let Ok(server) = TcpStream::connect(upstream) else {
                    continue;
                };
                let mut guard = conns.lock().unwrap();
                guard.push(client.try_clone().unwrap());
                guard.push(server.try_clone().unwrap());
                drop(guard);
                pump(client.try_clone().unwrap(), server.try_clone().unwrap());
                pump(server, client);
            }
        });
        Self { addr, live, dead }
    }

    fn cut(&self) {
        self.dead.store(true, Ordering::SeqCst);
        for s in self.live.lock().unwrap().drain(..) {
            let _ = s.shutdown(Shutdown::Both);
        }
    }

    /// The server is back: new connections go through again.
    fn revive(&self) {
        self.dead.store(false, Ordering::SeqCst);
    }
}

fn pump(mut from: TcpStream, mut to: TcpStream) {
    thread::spawn(move || {
        let _ = std::io::copy(&mut from, &mut to);
        let _ = to.shutdown(Shutdown::Both);
    });
}

#[test]
fn a_lost_server_gives_cuda_errors_not_hangs_and_reset_reconnects() {
    let srv = server(1 << 30);
    let proxy = CutProxy::new(srv.addr());
    let entries = [ServerEntry {
        addr: proxy.addr.to_string(),
        gpu: Some(0),
    }];
    let rt = Runtime::connect(&entries, "test".into());
    assert_eq!(rt.device_count(), Ok(1));
    let p = rt.malloc(1 << 20).unwrap();
    rt.memcpy_htod(0, p, &[1; 1 << 20]).unwrap();

    proxy.cut();
    let started = Instant::now();
    let mut buf = vec![0u8; 1 << 20];
    assert_eq!(
        rt.memcpy_dtoh(0, &mut buf, p),
        Err(CudaError::DEVICES_UNAVAILABLE)
    );
    assert!(started.elapsed() < Duration::from_secs(10));
    // Sticky until reset, and reported by cudaGetLastError without clearing.
    assert_eq!(rt.malloc(16), Err(CudaError::DEVICES_UNAVAILABLE));
    assert_eq!(rt.take_last_error(), CudaError::DEVICES_UNAVAILABLE);
    assert_eq!(rt.take_last_error(), CudaError::DEVICES_UNAVAILABLE);

    proxy.revive();
    rt.reset().unwrap();
    let q = rt.malloc(64).unwrap();
    rt.memset(q, 0x5A, 64).unwrap();
    let mut back = [0u8; 64];
    rt.memcpy_dtoh(0, &mut back, q).unwrap();
    assert_eq!(back, [0x5A; 64]);
}

#[test]
fn unreachable_servers_mean_no_device() {
    let port = {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let entries = [ServerEntry {
        addr: format!("127.0.0.1:{port}"),
        gpu: None,
    }];
    let rt = Runtime::connect(&entries, "test".into());
    assert_eq!(rt.device_count(), Err(CudaError::NO_DEVICE));
    assert_eq!(rt.malloc(1), Err(CudaError::NO_DEVICE));
    assert_eq!(rt.set_device(0), Err(CudaError::NO_DEVICE));
}

#[test]
fn several_gpus_and_unified_addressing() {
    let srv = server(1 << 30);
    let addr = srv.addr().to_string();
    let rt = Runtime::connect(
        &[ServerEntry {
            addr: addr.clone(),
            gpu: None,
        }],
        "test".into(),
    );
    assert_eq!(rt.device_count(), Ok(2));
    rt.set_device(0).unwrap();
    let a = rt.malloc(1000).unwrap();
    rt.set_device(1).unwrap();
    let b = rt.malloc(1000).unwrap();
    assert_eq!(rt.device_of(a + 999), Some(0));
    assert_eq!(rt.device_of(b), Some(1));
    assert_eq!(rt.device_of(a + 1000), None);
    rt.memset(a, 9, 1000).unwrap();
    // A copy between GPUs travels through the client.
    rt.memcpy_dtod(1, b, 0, a, 1000).unwrap();
    let mut back = vec![0u8; 1000];
    rt.memcpy_dtoh(1, &mut back, b).unwrap();
    assert_eq!(back, vec![9; 1000]);
    assert_eq!(rt.attribute(75, 1), Ok(8)); // cudaDevAttrComputeCapabilityMajor
    assert_eq!(rt.attribute(-5, 0), Err(CudaError::INVALID_VALUE));
    assert_eq!(rt.props(2).map(|_| ()), Err(CudaError::INVALID_DEVICE));
}

#[test]
fn the_per_client_memory_limit_is_enforced() {
    use rcud_server::agent::Agent;
    use rcud_server::gate;
    use rcud_server::peer::InstanceId;
    use rcud_server::tenants::ResourceLimits;
    use rcud_transport::{TcpChannel, TcpOptions};

    let emu = EmuSettings::default();
    let backend = select_backend(BackendKind::Emu, &emu).unwrap();
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let agent = thread::spawn(move || {
        let (mut stream, peer) = listener.accept().unwrap();
        let policy = gate::Policy::default();
        gate::admit(
            &mut stream,
            peer.ip(),
            &policy,
            backend.as_ref(),
            InstanceId::NONE,
            |_, _| Ok(None),
        )
        .unwrap();
        let chan = TcpChannel::from_stream(stream, &TcpOptions::default()).unwrap();
        let limits = ResourceLimits {
            memory: Some(1 << 20),
            ..ResourceLimits::default()
        };
        Agent::new(backend, Box::new(chan))
            .with_resource_limits(limits)
            .run()
    });
    let mut s = session(addr);
    attach(&mut s, 0);
    s.call(&req::Malloc { size: 512 << 10 }, &[], &mut [])
        .unwrap()
        .unwrap();
    let refused = s
        .call(&req::Malloc { size: 600 << 10 }, &[], &mut [])
        .unwrap()
        .unwrap_err();
    assert_eq!(refused.code, CudaError::MEMORY_ALLOCATION);
    assert!(refused.message.contains("limit"), "{}", refused.message);
    s.call(&req::Malloc { size: 500 << 10 }, &[], &mut [])
        .unwrap()
        .unwrap();
    drop(s);
    agent.join().unwrap().unwrap();
}
