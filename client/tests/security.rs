//! Hostile and mistaken clients against a real in-process server on the
//! emulated device (thread isolation, the harder case: every client shares
//! the process): authentication, TLS, the module cache, limits and
//! timeouts. In every test the server keeps serving everyone else.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use rcud_client::session::Session;
use rcud_client::{ClientError, Security};
use rcud_proto::auth::{Credentials, PROOF_LEN};
use rcud_proto::handshake::{
    self, ClientHello, ClientProof, ServerHello, Verdict, PROTOCOL_VERSION,
};
use rcud_proto::ops::{req, Failure};
use rcud_proto::CudaError;
use rcud_server::backend::{BackendKind, EmuSettings};
use rcud_server::gate::Policy;
use rcud_server::isolation::Limits;
use rcud_server::tenants::Tenants;
use rcud_server::{select_backend, Server, ServerHandle};
use rcud_transport::bootstrap::TransportKind;
use rcud_transport::tls::{self, ClientTls, ServerTls, Trust};
use rustls::pki_types::{CertificateDer, PrivateKeyDer};

const ALICE: &str = "alice:alice-secret-0123456789";
const MALLORY: &str = "mallory:mallory-secret-0123456";
/// A tenant without a memory budget: it sees the whole device.
const OPS: &str = "ops:ops-secret-0123456789abc";

const TENANTS: &str = r#"
[tenants.alice]
secret = "alice-secret-0123456789"
memory = "64MiB"
max_allocations = 1000
max_connections = 4

[tenants.ops]
secret = "ops-secret-0123456789abc"

[tenants.mallory]
secret = "mallory-secret-0123456"
memory = "64MiB"
max_allocations = 1000
max_connections = 2
"#;

struct Setup {
    policy: Policy,
    limits: Limits,
    tls: Option<ServerTls>,
    /// The emulated device's time for one kernel or library call.
    kernel_timeout: Duration,
}

impl Default for Setup {
    fn default() -> Self {
        let tenants = Tenants::parse(TENANTS, "tenants.toml".as_ref()).unwrap();
        Self {
            policy: Policy {
                tenants: Some(Arc::new(tenants)),
                ..Policy::default()
            },
            limits: Limits::default(),
            tls: None,
            kernel_timeout: EmuSettings::default().kernel_timeout,
        }
    }
}

fn start(setup: Setup) -> ServerHandle {
    let emu = EmuSettings {
        memory: 1 << 30,
        kernel_timeout: setup.kernel_timeout,
        ..EmuSettings::default()
    };
    let backend = select_backend(BackendKind::Emu, &emu).unwrap();
    let server = Server::bind("127.0.0.1:0", backend)
        .unwrap()
        .with_limits(setup.limits)
        .with_policy(setup.policy);
    let server = match setup.tls {
        Some(tls) => server.with_tls(tls),
        None => server,
    };
    server.spawn().unwrap()
}

fn as_tenant(token: &str) -> Security {
    Security {
        credentials: Some(Credentials::parse(token).unwrap()),
        tls: None,
        qos: String::new(),
    }
}

fn connect(addr: SocketAddr, security: &Security) -> Result<Session, ClientError> {
    Session::connect_secured(&addr.to_string(), "test", TransportKind::Tcp, security)
}

fn attached(addr: SocketAddr, security: &Security) -> Session {
    let mut s = connect(addr, security).unwrap();
    s.call(&req::Attach { gpu: 0, window: 0 }, &[], &mut [])
        .unwrap()
        .unwrap();
    s
}

/// The CUDA error of a failed call.
fn code<T>(r: Result<T, Failure>) -> Result<(), CudaError> {
    r.map(|_| ()).map_err(|f| f.code)
}

/// A round trip of real data: the connection works.
fn works(s: &mut Session) {
    let ptr = s
        .call(&req::Malloc { size: 4096 }, &[], &mut [])
        .unwrap()
        .unwrap()
        .ptr;
    let data: Vec<u8> = (0..4096u32).map(|i| (i * 7) as u8).collect();
    s.call(
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
    s.call(
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
    s.call(&req::Free { ptr }, &[], &mut []).unwrap().unwrap();
}

fn refusal(r: Result<Session, ClientError>) -> String {
    match r {
        Ok(_) => panic!("the server admitted the client"),
        Err(e) => e.to_string(),
    }
}

#[test]
fn only_clients_that_prove_their_tenants_secret_get_in() {
    let srv = start(Setup::default());
    let addr = srv.addr();
    let mut alice = attached(addr, &as_tenant(ALICE));
    let wrong = refusal(connect(addr, &as_tenant("alice:not-alices-secret-at-all")));
    assert!(
        wrong.contains("authentication failed for tenant `alice`"),
        "{wrong}"
    );
    // An unknown tenant gets the same answer: the server does not tell
    // which tenants exist.
    let unknown = refusal(connect(addr, &as_tenant("eve:eves-secret-0123456789")));
    assert!(
        unknown.contains("authentication failed for tenant `eve`"),
        "{unknown}"
    );
    let anonymous = refusal(connect(addr, &Security::default()));
    assert!(anonymous.contains("requires authentication"), "{anonymous}");
    // Nobody's failure disturbed the authenticated client.
    works(&mut alice);
}

#[test]
fn the_client_authenticates_the_server_too() {
    // An impostor that accepts any proof but cannot prove alice's secret.
    let impostor = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = impostor.local_addr().unwrap();
    let fake = thread::spawn(move || {
        let (mut s, _) = impostor.accept().unwrap();
        let _hello: ClientHello = handshake::read_message(&mut s).unwrap();
        let reply = ServerHello {
            version: PROTOCOL_VERSION,
            accepted: true,
            gpu_count: 1,
            driver_version: 13000,
            backend: "emu".into(),
            instance: [0; 16],
            message: "welcome".into(),
            auth: true,
            nonce: [5; PROOF_LEN],
        };
        handshake::write_message(&mut s, &reply).unwrap();
        let _proof: ClientProof = handshake::read_message(&mut s).unwrap();
        let verdict = Verdict {
            accepted: true,
            message: "welcome".into(),
            proof: [0; PROOF_LEN],
        };
        handshake::write_message(&mut s, &verdict).unwrap();
    });
    let err = refusal(connect(addr, &as_tenant(ALICE)));
    assert!(
        err.contains("could not prove it knows the secret of tenant `alice`"),
        "{err}"
    );
    fake.join().unwrap();
}

#[test]
fn a_tenant_over_its_connection_limit_is_refused() {
    let srv = start(Setup::default());
    let addr = srv.addr();
    let m = as_tenant(MALLORY);
    let first = connect(addr, &m).unwrap();
    let second = connect(addr, &m).unwrap();
    let third = refusal(connect(addr, &m));
    assert!(third.contains("at its limit of 2 connections"), "{third}");
    // Other tenants are not counted against mallory's limit.
    works(&mut attached(addr, &as_tenant(ALICE)));
    drop((first, second));
    // Places come back when connections end.
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        match connect(addr, &m) {
            Ok(_) => break,
            Err(e) if Instant::now() < deadline => {
                assert!(e.to_string().contains("at its limit"), "{e}");
                thread::sleep(Duration::from_millis(50));
            }
            Err(e) => panic!("mallory's connections were never given back: {e}"),
        }
    }
}

fn self_signed() -> (ServerTls, [u8; 32]) {
    let cert = rcgen::generate_simple_self_signed(vec!["127.0.0.1".into()]).unwrap();
    let key = PrivateKeyDer::try_from(cert.signing_key.serialize_der()).unwrap();
    let der: CertificateDer<'static> = cert.cert.der().clone();
    let pin = tls::parse_pin(&tls::fingerprint(&der)).unwrap();
    (ServerTls::from_der(vec![der], key).unwrap(), pin)
}

fn with_tls(token: &str, pin: [u8; 32]) -> Security {
    Security {
        tls: Some(ClientTls::new(&Trust::Pin(pin)).unwrap()),
        ..as_tenant(token)
    }
}

#[test]
fn tls_carries_authenticated_sessions_and_mismatches_fail_at_once() {
    let (server_tls, pin) = self_signed();
    let srv = start(Setup {
        tls: Some(server_tls),
        ..Setup::default()
    });
    let addr = srv.addr();
    let mut s = attached(addr, &with_tls(ALICE, pin));
    works(&mut s);
    // Big payloads cross TLS intact too.
    let len = 8u64 << 20;
    let ptr = s
        .call(&req::Malloc { size: len }, &[], &mut [])
        .unwrap()
        .unwrap()
        .ptr;
    let data: Vec<u8> = (0..len).map(|i| (i % 251) as u8).collect();
    s.call(&req::MemcpyHtoD { dst: ptr, len }, &data, &mut [])
        .unwrap()
        .unwrap();
    let mut back = vec![0u8; len as usize];
    s.call(&req::MemcpyDtoH { src: ptr, len }, &[], &mut back)
        .unwrap()
        .unwrap();
    assert!(back == data);

    let started = Instant::now();
    let plain = refusal(connect(addr, &as_tenant(ALICE)));
    assert!(plain.contains("requires TLS"), "{plain}");
    let wrong_pin = refusal(connect(addr, &with_tls(ALICE, [0; 32])));
    assert!(wrong_pin.contains("not the pinned one"), "{wrong_pin}");
    assert!(
        started.elapsed() < Duration::from_secs(3),
        "mismatches must fail at once"
    );

    // The reverse: a TLS client against a plain server.
    let plain_srv = start(Setup::default());
    let reverse = refusal(connect(plain_srv.addr(), &with_tls(ALICE, pin)));
    assert!(reverse.contains("does not speak TLS"), "{reverse}");
}

/// A fat binary with one kernel, `name`.
fn module(name: &str) -> Vec<u8> {
    let ptx = format!(
        ".version 7.0\n.target sm_80\n.address_size 64\n\n\
         .visible .entry {name}(.param .u64 p)\n{{\n  ret;\n}}\n"
    );
    rcud_fatbin::image::wrap_ptx(ptx.as_bytes())
}

#[test]
fn no_client_can_plant_code_under_another_programs_hash_or_load_it_by_hash() {
    let srv = start(Setup::default());
    let addr = srv.addr();
    let victim = module("victim_kernel");
    let hash = rcud_fatbin::content_hash(&victim);
    let mut mallory = attached(addr, &as_tenant(MALLORY));
    // Mallory ships her code under the hash of the victim's program.
    let evil = module("evil_kernel");
    let planted = mallory.call(
        &req::ModuleLoad {
            hash,
            len: evil.len() as u64,
        },
        &evil,
        &mut [],
    );
    let planted = planted.unwrap().unwrap_err();
    assert_eq!(planted.code, CudaError::INVALID_VALUE);
    assert!(
        planted.message.contains("does not match"),
        "{}",
        planted.message
    );

    let mut alice = attached(addr, &as_tenant(ALICE));
    let m = alice
        .call(
            &req::ModuleLoad {
                hash,
                len: victim.len() as u64,
            },
            &victim,
            &mut [],
        )
        .unwrap()
        .unwrap()
        .module;
    // The victim's module has its own kernel, not mallory's.
    assert!(alice
        .call(
            &req::ModuleGetFunction {
                module: m,
                name: "victim_kernel".into()
            },
            &[],
            &mut []
        )
        .unwrap()
        .is_ok());
    assert_eq!(
        code(
            alice
                .call(
                    &req::ModuleGetFunction {
                        module: m,
                        name: "evil_kernel".into()
                    },
                    &[],
                    &mut []
                )
                .unwrap()
        ),
        Err(CudaError::INVALID_DEVICE_FUNCTION)
    );
    // Alice may load it by hash on another connection; mallory may not.
    let mut alice2 = attached(addr, &as_tenant(ALICE));
    assert!(alice2
        .call(&req::ModuleLoadCached { hash }, &[], &mut [])
        .unwrap()
        .is_ok());
    assert_eq!(
        code(
            mallory
                .call(&req::ModuleLoadCached { hash }, &[], &mut [])
                .unwrap()
        ),
        Err(CudaError::INVALID_VALUE)
    );
}

#[test]
fn allocation_floods_stop_at_the_tenants_limits() {
    let srv = start(Setup::default());
    let addr = srv.addr();
    let mut m = attached(addr, &as_tenant(MALLORY));
    let mut held = 0;
    let failure = loop {
        match m.call(&req::Malloc { size: 1 }, &[], &mut []).unwrap() {
            Ok(_) => held += 1,
            Err(f) => break f,
        }
        assert!(held <= 1000, "the allocation count limit did not hold");
    };
    assert_eq!(held, 1000);
    assert_eq!(failure.code, CudaError::MEMORY_ALLOCATION);
    assert!(
        failure.message.contains("1000 allocations"),
        "{}",
        failure.message
    );
    // A big allocation beyond the tenant's memory fails; the device had room.
    let mut a = attached(addr, &as_tenant(ALICE));
    let big = a
        .call(&req::Malloc { size: 65 << 20 }, &[], &mut [])
        .unwrap()
        .unwrap_err();
    assert_eq!(big.code, CudaError::MEMORY_ALLOCATION);
    works(&mut a);
}

#[test]
fn a_tenants_memory_limit_holds_over_all_its_connections() {
    let srv = start(Setup::default());
    let addr = srv.addr();
    let mut first = attached(addr, &as_tenant(ALICE));
    let mut second = attached(addr, &as_tenant(ALICE));
    let malloc = |s: &mut Session, size| s.call(&req::Malloc { size }, &[], &mut []).unwrap();
    malloc(&mut first, 40 << 20).unwrap();
    // 40 + 40 MiB over two connections passes alice's 64 MiB.
    let over = malloc(&mut second, 40 << 20).unwrap_err();
    assert_eq!(over.code, CudaError::MEMORY_ALLOCATION);
    assert!(
        over.message.contains("over all its connections"),
        "{}",
        over.message
    );
    // The second connection sees what the first left it.
    let info = second
        .call(&req::MemGetInfo {}, &[], &mut [])
        .unwrap()
        .unwrap();
    assert!(info.free < 25 << 20, "{info:?}");
    malloc(&mut second, 16 << 20).unwrap();
    // What a connection held is given back when it ends.
    drop(first);
    let mut got = None;
    for _ in 0..200 {
        match malloc(&mut second, 40 << 20) {
            Ok(r) => {
                got = Some(r);
                break;
            }
            Err(_) => std::thread::sleep(Duration::from_millis(10)),
        }
    }
    assert!(
        got.is_some(),
        "the first connection's memory was never given back"
    );
    works(&mut second);
}

#[test]
fn mem_get_info_shows_a_tenant_its_own_budget() {
    let srv = start(Setup::default());
    let addr = srv.addr();
    let mut alice = attached(addr, &as_tenant(ALICE));
    let mut mallory = attached(addr, &as_tenant(MALLORY));
    let info = |s: &mut Session| s.call(&req::MemGetInfo {}, &[], &mut []).unwrap().unwrap();
    let before = info(&mut alice);
    assert_eq!(before.total, 64 << 20);
    mallory
        .call(&req::Malloc { size: 32 << 20 }, &[], &mut [])
        .unwrap()
        .unwrap();
    // Mallory's use is invisible to alice.
    assert_eq!(info(&mut alice).free, before.free);
    alice
        .call(&req::Malloc { size: 16 << 20 }, &[], &mut [])
        .unwrap()
        .unwrap();
    let after = info(&mut alice);
    assert!(after.free <= before.free - (16 << 20), "{after:?}");
    assert!(after.free >= before.free - (17 << 20), "{after:?}");
}

#[test]
fn a_row_bomb_is_stopped_by_the_operation_time_limit() {
    let srv = start(Setup {
        limits: Limits {
            op_timeout: Duration::from_millis(200),
            ..Limits::default()
        },
        ..Setup::default()
    });
    let mut a = attached(srv.addr(), &as_tenant(ALICE));
    let ptr = a
        .call(&req::Malloc { size: 64 << 20 }, &[], &mut [])
        .unwrap()
        .unwrap()
        .ptr;
    let started = Instant::now();
    // 2^26 rows of one byte: 33 bytes of request, seconds of work.
    let bomb = req::Memset2D {
        dst: ptr,
        pitch: 1,
        value: 1,
        width: 1,
        height: 1 << 26,
    };
    let r = a.call(&bomb, &[], &mut []).unwrap();
    let took = started.elapsed();
    assert_eq!(code(r), Err(CudaError::TIMEOUT));
    assert!(took < Duration::from_secs(2), "the bomb ran {took:?}");
    a.call(&req::Free { ptr }, &[], &mut []).unwrap().unwrap();
    works(&mut a);
}

#[test]
fn a_library_call_on_a_large_matrix_is_stopped_by_the_kernel_time_limit() {
    use rcud_proto::codec::{self, Blob};
    use rcud_proto::math::{solver::Call, Library};
    let srv = start(Setup {
        kernel_timeout: Duration::from_millis(300),
        ..Setup::default()
    });
    let mut a = attached(srv.addr(), &as_tenant(ALICE));
    let solver = |s: &mut Session, call: &Call| {
        s.call(
            &req::MathCall {
                library: Library::Solver as u8,
                call: Blob(codec::to_vec(call)),
            },
            &[],
            &mut [],
        )
        .unwrap()
    };
    let handle = solver(&mut a, &Call::Create {}).unwrap().out.0;
    let handle = u64::from_le_bytes(handle.try_into().unwrap());
    // A 1024² symmetric eigenproblem: 8 MiB of matrix and a request of a
    // few dozen bytes, but minutes of Jacobi sweeps on one core.
    let n = 1024usize;
    let bytes = (n * n * 8) as u64;
    let ptr = a
        .call(
            &req::Malloc {
                size: bytes + 16384,
            },
            &[],
            &mut [],
        )
        .unwrap()
        .unwrap()
        .ptr;
    let matrix: Vec<u8> = (0..n * n)
        .flat_map(|k| {
            let (i, j) = (k % n, k / n);
            (((i * j) % 17) as f64 + ((i + j) % 5) as f64).to_le_bytes()
        })
        .collect();
    a.call(
        &req::MemcpyHtoD {
            dst: ptr,
            len: bytes,
        },
        &matrix,
        &mut [],
    )
    .unwrap()
    .unwrap();
    let started = Instant::now();
    let bomb = Call::Syevd {
        handle,
        dtype: 1,
        jobz: 1,
        uplo: 0,
        n: n as i32,
        a: ptr,
        lda: n as i32,
        w: ptr + bytes,
        info: ptr + bytes + 8192,
    };
    let r = solver(&mut a, &bomb);
    let took = started.elapsed();
    assert_eq!(code(r), Err(CudaError::LAUNCH_TIMEOUT));
    assert!(took < Duration::from_secs(10), "the call ran {took:?}");
    // A GPU's context is lost after a kernel past the watchdog: so is this
    // one. Everyone else keeps being served.
    assert_eq!(
        code(a.call(&req::Malloc { size: 16 }, &[], &mut []).unwrap()),
        Err(CudaError::LAUNCH_TIMEOUT)
    );
    works(&mut attached(srv.addr(), &as_tenant(MALLORY)));
}

#[test]
fn slowloris_connections_cannot_hold_the_gate() {
    let srv = start(Setup {
        limits: Limits {
            max_per_source: 500,
            ..Limits::default()
        },
        ..Setup::default()
    });
    let addr = srv.addr();
    // 80 connections that send their hello one byte a second.
    let hello = handshake::encode_hello(&ClientHello::new("slow"));
    let mut slow: Vec<TcpStream> = (0..80).map(|_| TcpStream::connect(addr).unwrap()).collect();
    for s in &mut slow {
        s.write_all(&hello[..1]).unwrap();
    }
    // A legitimate client gets in at once meanwhile.
    let started = Instant::now();
    works(&mut attached(addr, &as_tenant(ALICE)));
    assert!(started.elapsed() < Duration::from_secs(2));
    // Keep trickling; the gate's deadline closes them all, however they
    // spread their bytes.
    let deadline = Instant::now() + Duration::from_secs(12);
    let mut open = slow.len();
    for s in &slow {
        s.set_read_timeout(Some(Duration::from_millis(10))).unwrap();
    }
    while open > 0 && Instant::now() < deadline {
        open = 0;
        for s in &mut slow {
            let mut b = [0u8; 1];
            let closed = match s.read(&mut b) {
                Ok(0) => true,
                Ok(_) => false,
                Err(e) => !matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ),
            };
            if !closed {
                let _ = s.write_all(&hello[1..2]);
                open += 1;
            }
        }
        thread::sleep(Duration::from_millis(500));
    }
    assert_eq!(open, 0, "slow connections outlived the gate's deadline");
}

#[test]
fn connections_per_source_are_limited() {
    let srv = start(Setup {
        limits: Limits {
            max_per_source: 2,
            ..Limits::default()
        },
        ..Setup::default()
    });
    let addr = srv.addr();
    let a = connect(addr, &as_tenant(ALICE)).unwrap();
    let b = connect(addr, &as_tenant(ALICE)).unwrap();
    let c = refusal(connect(addr, &as_tenant(ALICE)));
    assert!(c.contains("too many connections from 127.0.0.1"), "{c}");
    drop((a, b));
}

#[test]
fn a_client_that_never_reads_its_reply_is_dropped_and_its_memory_freed() {
    let srv = start(Setup {
        limits: Limits {
            write_timeout: Some(Duration::from_secs(1)),
            ..Limits::default()
        },
        ..Setup::default()
    });
    let addr = srv.addr();
    let mut watcher = attached(addr, &as_tenant(OPS));
    let info = |s: &mut Session| s.call(&req::MemGetInfo {}, &[], &mut []).unwrap().unwrap();
    let before = info(&mut watcher).free;

    // A raw client: authenticates, allocates 48 MiB, asks for all of it
    // back and never reads.
    let mut raw = TcpStream::connect(addr).unwrap();
    let creds = Credentials::parse(MALLORY).unwrap();
    let mut hello = ClientHello::new("deaf");
    hello.tenant = creds.tenant.clone();
    handshake::client_exchange(&mut raw, &hello, Some(&creds)).unwrap();
    let mut chan = rcud_transport::TcpChannel::from_stream(raw, &Default::default()).unwrap();
    use rcud_proto::codec::{Wire, Writer};
    use rcud_proto::frame::{FrameHeader, FrameKind};
    use rcud_proto::ops::Op;
    use rcud_transport::Channel;
    let send =
        |chan: &mut rcud_transport::TcpChannel, id: u32, op: &dyn Fn(&mut Vec<u8>) -> u16| {
            let mut body = Vec::new();
            let code = op(&mut body);
            let header = FrameHeader {
                flags: 0,
                kind: FrameKind::REQUEST,
                op: code,
                body_len: body.len() as u32,
                id,
                bulk_len: 0,
            };
            chan.send_frame(&header, &body, &[]).unwrap();
            chan.flush().unwrap();
        };
    send(&mut chan, 1, &|b| {
        req::Attach { gpu: 0, window: 0 }.encode(&mut Writer::new(b));
        req::Attach::ID.0
    });
    send(&mut chan, 2, &|b| {
        req::Malloc { size: 48 << 20 }.encode(&mut Writer::new(b));
        req::Malloc::ID.0
    });
    let reply = |chan: &mut rcud_transport::TcpChannel| {
        let h = chan.recv_header().unwrap();
        chan.recv_body(h.body_len).unwrap().to_vec()
    };
    reply(&mut chan);
    let body = reply(&mut chan);
    let ptr = rcud_proto::ops::decode_reply::<rcud_proto::ops::rep::Malloc>(&body)
        .unwrap()
        .unwrap()
        .ptr;
    assert!(
        info(&mut watcher).free < before,
        "the deaf client's allocation is not visible"
    );
    // Now a big reply it will not read.
    send(&mut chan, 3, &|b| {
        req::MemcpyDtoH {
            src: ptr,
            len: 48 << 20,
        }
        .encode(&mut Writer::new(b));
        req::MemcpyDtoH::ID.0
    });
    let deadline = Instant::now() + Duration::from_secs(20);
    while info(&mut watcher).free < before {
        assert!(
            Instant::now() < deadline,
            "the agent of a client that never reads stayed pinned"
        );
        thread::sleep(Duration::from_millis(100));
    }
    works(&mut watcher);
}

/// A fat binary whose one PTX entry is a Zstandard frame of `blocks` RLE
/// blocks of 128 KiB of spaces, without a declared content size: 4 bytes
/// per 128 KiB inflated.
fn zstd_bomb(blocks: usize) -> Vec<u8> {
    let mut frame = vec![0x28, 0xb5, 0x2f, 0xfd, 0x00, 0x58];
    for i in 0..blocks {
        let header = u32::from(i + 1 == blocks) | (1 << 1) | ((128 << 10) << 3);
        frame.extend(&header.to_le_bytes()[..3]);
        frame.push(b' ');
    }
    let mut entry = Vec::new();
    entry.extend(1u16.to_le_bytes()); // kind: PTX
    entry.extend(0x0101u16.to_le_bytes());
    entry.extend(64u32.to_le_bytes()); // header size
    entry.extend((frame.len() as u64).to_le_bytes());
    entry.extend((frame.len() as u32).to_le_bytes());
    entry.extend(0u32.to_le_bytes());
    entry.extend(0u16.to_le_bytes());
    entry.extend(8u16.to_le_bytes());
    entry.extend(80u32.to_le_bytes()); // sm_80
    entry.extend([0u8; 8]);
    entry.extend((0x11u64 | 0x8000).to_le_bytes()); // Zstandard-compressed
    entry.extend([0u8; 8]);
    entry.extend((blocks as u64 * (128 << 10)).to_le_bytes());
    entry.extend(frame);
    let mut container = Vec::new();
    container.extend(0xBA55_ED50u32.to_le_bytes());
    container.extend(1u16.to_le_bytes());
    container.extend(16u16.to_le_bytes());
    container.extend((entry.len() as u64).to_le_bytes());
    container.extend(entry);
    container
}

#[test]
fn ptx_and_zstd_bombs_fail_fast_with_a_cuda_error() {
    let srv = start(Setup::default());
    let addr = srv.addr();
    let mut bystander = attached(addr, &as_tenant(ALICE));
    let mut m = attached(addr, &as_tenant(MALLORY));
    let load = |s: &mut Session, image: &[u8]| {
        let hash = rcud_fatbin::content_hash(image);
        let started = Instant::now();
        let r = s
            .call(
                &req::ModuleLoad {
                    hash,
                    len: image.len() as u64,
                },
                image,
                &mut [],
            )
            .unwrap();
        (r.map(|x| x.module), started.elapsed())
    };
    // 33 KB that inflate to 1 GiB.
    let bomb = zstd_bomb(8192);
    assert!(bomb.len() < 40 << 10);
    let (r, took) = load(&mut m, &bomb);
    let f = r.unwrap_err();
    assert_eq!(f.code, CudaError::INVALID_KERNEL_IMAGE, "{f}");
    assert!(took < Duration::from_secs(5), "{took:?}");
    // PTX that is all nesting: a parser's recursion bomb.
    let nested = format!(
        ".version 7.0\n.target sm_80\n.address_size 64\n.visible .entry k()\n{}",
        "{".repeat(1 << 20)
    );
    let (r, took) = load(&mut m, &rcud_fatbin::image::wrap_ptx(nested.as_bytes()));
    assert_eq!(r.unwrap_err().code, CudaError::INVALID_PTX);
    assert!(took < Duration::from_secs(5), "{took:?}");
    // A register-declaration bomb.
    let regs = ".version 7.0\n.target sm_80\n.address_size 64\n\
                .visible .entry k()\n{\n.reg .b32 %r<2000000000>;\nret;\n}\n";
    let (r, _) = load(&mut m, &rcud_fatbin::image::wrap_ptx(regs.as_bytes()));
    assert_eq!(r.unwrap_err().code, CudaError::INVALID_PTX);
    // Everyone else is still served.
    works(&mut bystander);
    works(&mut m);
}
