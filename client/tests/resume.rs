//! Sessions that outlive their connection: a client and a real in-process
//! server on the emulated device, with a fault-injecting proxy between them
//! that resets the connection at chosen points (in the handshake,
//! mid-batch, mid-payload in each direction, during a kernel), stalls it,
//! or takes the route away for longer than the outage budget.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use rcud_client::security::Security;
use rcud_client::session::{Completion, HostDst, Session};
use rcud_client::ClientError;
use rcud_proto::ops::req;
use rcud_server::backend::{BackendKind, EmuSettings};
use rcud_server::isolation::Limits;
use rcud_server::{select_backend, Server, ServerHandle};
use rcud_transport::bootstrap::TransportKind;
use rcud_transport::fault_proxy::{Action, Direction, Fault, FaultProxy};

const MIB: usize = 1 << 20;

fn server_with_grace(grace: Duration) -> ServerHandle {
    let emu = EmuSettings {
        gpus: 1,
        memory: 256 << 20,
        ..EmuSettings::default()
    };
    let backend = select_backend(BackendKind::Emu, &emu).unwrap();
    Server::bind("127.0.0.1:0", backend)
        .unwrap()
        .with_limits(Limits {
            resume_grace: grace,
            ..Limits::default()
        })
        .spawn()
        .unwrap()
}

fn server() -> ServerHandle {
    server_with_grace(Duration::from_secs(10))
}

fn connect(addr: SocketAddr, budget: Duration) -> Result<Session, ClientError> {
    Session::connect_resumable(
        &addr.to_string(),
        "resume-test",
        TransportKind::Tcp,
        &Security::default(),
        budget,
    )
}

fn attach(s: &mut Session) {
    s.call(&req::Attach { gpu: 0, window: 0 }, &[], &mut [])
        .unwrap()
        .unwrap();
}

fn malloc(s: &mut Session, size: usize) -> u64 {
    s.call(&req::Malloc { size: size as u64 }, &[], &mut [])
        .unwrap()
        .unwrap()
        .ptr
}

/// A recognisable pattern: no two nearby 4-byte words alike.
fn pattern(len: usize, seed: u32) -> Vec<u8> {
    (0..len)
        .map(|i| ((i as u32).wrapping_mul(2_654_435_761) ^ seed).to_le_bytes()[i % 4])
        .collect()
}

fn write(s: &mut Session, ptr: u64, data: &[u8]) {
    s.call(
        &req::MemcpyHtoD {
            dst: ptr,
            len: data.len() as u64,
        },
        data,
        &mut [],
    )
    .unwrap()
    .unwrap();
}

fn read(s: &mut Session, ptr: u64, len: usize) -> Vec<u8> {
    let mut out = vec![0u8; len];
    s.call(
        &req::MemcpyDtoH {
            src: ptr,
            len: len as u64,
        },
        &[],
        &mut out,
    )
    .unwrap()
    .unwrap();
    out
}

/// A round trip of `len` bytes through device memory, with the proxy armed
/// with `fault` first.
fn round_trip_through(fault: Fault, len: usize) {
    let server = server();
    let proxy = FaultProxy::start(server.addr()).unwrap();
    let mut s = connect(proxy.addr(), Duration::from_secs(3)).unwrap();
    assert!(s.resumable());
    attach(&mut s);
    let ptr = malloc(&mut s, len);
    let data = pattern(len, 7);
    proxy.arm(fault);
    write(&mut s, ptr, &data);
    let back = read(&mut s, ptr, len);
    assert!(back == data, "the bytes came back changed after {fault:?}");
    assert!(proxy.idle(), "{fault:?} never struck");
    assert!(proxy.cuts() >= 1 || matches!(fault.action, Action::Stall(_)));
}

fn cut(direction: Direction, after: u64) -> Fault {
    Fault {
        direction,
        after,
        action: Action::Cut,
    }
}

#[test]
fn a_cut_in_the_middle_of_a_host_to_device_payload_restarts_it() {
    round_trip_through(cut(Direction::Up, 3 * MIB as u64 + 12_345), 8 * MIB);
}

#[test]
fn a_cut_in_the_middle_of_a_device_to_host_payload_is_read_again() {
    // Larger than a kept reply: the server reads it from the device again.
    round_trip_through(cut(Direction::Down, 5 * MIB as u64 + 777), 8 * MIB);
}

#[test]
fn a_cut_in_a_small_kept_reply_is_sent_again() {
    round_trip_through(cut(Direction::Down, 100), 64 << 10);
}

#[test]
fn a_cut_right_after_a_request_is_executed_does_not_run_it_twice() {
    // The request reaches the server whole and runs; its reply is lost.
    // Sent again, a Malloc would leak or a copy would be repeated: the
    // server answers from its log instead.
    let server = server();
    let proxy = FaultProxy::start(server.addr()).unwrap();
    let mut s = connect(proxy.addr(), Duration::from_secs(3)).unwrap();
    attach(&mut s);
    let before = s
        .call(&req::MemGetInfo {}, &[], &mut [])
        .unwrap()
        .unwrap()
        .free;
    proxy.arm(cut(Direction::Down, 1));
    let ptr = malloc(&mut s, 32 * MIB);
    assert_eq!(proxy.cuts(), 1);
    let after = s
        .call(&req::MemGetInfo {}, &[], &mut [])
        .unwrap()
        .unwrap()
        .free;
    assert_eq!(before - after, 32 * MIB as u64, "the Malloc ran twice");
    s.call(&req::Free { ptr }, &[], &mut []).unwrap().unwrap();
}

#[test]
fn a_stall_shorter_than_the_budget_is_invisible() {
    round_trip_through(
        Fault {
            direction: Direction::Down,
            after: 1000,
            action: Action::Stall(Duration::from_millis(300)),
        },
        MIB,
    );
}

struct Dst(Vec<u8>, std::sync::Arc<std::sync::Mutex<Vec<u8>>>);

impl HostDst for Dst {
    fn bytes(&mut self) -> &mut [u8] {
        &mut self.0
    }
}

impl Drop for Dst {
    fn drop(&mut self) {
        *self.1.lock().unwrap() = std::mem::take(&mut self.0);
    }
}

#[test]
fn a_batch_cut_anywhere_completes_once_and_in_order() {
    let server = server();
    // One batch: a memset, 50 small copies up and back, and a kernel-free
    // event record, cut at many points in both directions.
    for (direction, after) in [
        (Direction::Up, 30),
        (Direction::Up, 2_000),
        (Direction::Up, 9_000),
        (Direction::Down, 10),
        (Direction::Down, 3_000),
        (Direction::Down, 40_000),
    ] {
        let proxy = FaultProxy::start(server.addr()).unwrap();
        let mut s = connect(proxy.addr(), Duration::from_secs(3)).unwrap();
        attach(&mut s);
        let ptr = malloc(&mut s, 64 << 10);
        proxy.arm(cut(direction, after));
        s.enqueue(
            &req::Memset {
                dst: ptr,
                value: 0,
                len: 64 << 10,
            },
            &[],
            Completion::Status,
        );
        let mut results = Vec::new();
        for i in 0..50u64 {
            let data = pattern(1024, i as u32);
            s.enqueue(
                &req::MemcpyHtoD {
                    dst: ptr + i * 1024,
                    len: 1024,
                },
                &data,
                Completion::Status,
            );
            let out = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
            s.enqueue(
                &req::MemcpyDtoH {
                    src: ptr + i * 1024,
                    len: 1024,
                },
                &[],
                Completion::ToHost(Box::new(Dst(vec![0; 1024], out.clone()))),
            );
            s.expect_reply_bytes(1024);
            results.push((data, out));
        }
        s.enqueue(&req::EventRecord {}, &[], Completion::Event(1));
        let outcome = s.flush().unwrap();
        assert!(outcome.first_error.is_none(), "{:?}", outcome.first_error);
        assert_eq!(outcome.events.len(), 1, "the event was recorded once");
        for (i, (data, out)) in results.iter().enumerate() {
            assert!(
                *out.lock().unwrap() == *data,
                "copy {i} came back changed after a cut {direction:?} at {after}"
            );
        }
        assert_eq!(
            proxy.cuts(),
            1,
            "the cut {direction:?} at {after} never struck"
        );
    }
}

#[test]
fn a_cut_in_the_handshake_is_ridden_out() {
    let server = server();
    for after in [5, 60] {
        let proxy = FaultProxy::start(server.addr()).unwrap();
        proxy.arm(cut(Direction::Down, after));
        let mut s = connect(proxy.addr(), Duration::from_secs(3)).unwrap();
        attach(&mut s);
        assert_eq!(proxy.cuts(), 1);
        assert!(proxy.connections() >= 2);
    }
}

#[test]
fn a_cut_during_resumption_is_ridden_out_too() {
    let server = server();
    let proxy = FaultProxy::start(server.addr()).unwrap();
    let mut s = connect(proxy.addr(), Duration::from_secs(3)).unwrap();
    attach(&mut s);
    let ptr = malloc(&mut s, MIB);
    // The first cut breaks the copy; the second the connection that resumes.
    proxy.arm(cut(Direction::Up, 300_000));
    proxy.arm(cut(Direction::Up, 40));
    let data = pattern(MIB, 3);
    write(&mut s, ptr, &data);
    assert!(read(&mut s, ptr, MIB) == data);
    assert_eq!(proxy.cuts(), 2);
}

#[test]
fn many_cuts_in_a_row_lose_nothing() {
    let server = server();
    let proxy = FaultProxy::start(server.addr()).unwrap();
    let mut s = connect(proxy.addr(), Duration::from_secs(3)).unwrap();
    attach(&mut s);
    let ptr = malloc(&mut s, 4 * MIB);
    proxy.cut_every(Direction::Up, 700_000, 12);
    for round in 0..6u32 {
        let data = pattern(4 * MIB, round);
        write(&mut s, ptr, &data);
        assert!(read(&mut s, ptr, 4 * MIB) == data, "round {round}");
    }
    assert!(proxy.cuts() >= 10, "only {} cuts", proxy.cuts());
}

#[test]
fn an_outage_longer_than_the_budget_fails_cleanly_and_stays_failed() {
    let server = server();
    let proxy = FaultProxy::start(server.addr()).unwrap();
    let budget = Duration::from_millis(600);
    let mut s = connect(proxy.addr(), budget).unwrap();
    attach(&mut s);
    proxy.outage(Duration::from_secs(30));
    let started = Instant::now();
    let err = s
        .call(&req::MemGetInfo {}, &[], &mut [])
        .expect_err("the call cannot succeed during the outage");
    let took = started.elapsed();
    assert!(matches!(err, ClientError::SessionLost { .. }), "{err}");
    assert!(err.to_string().contains("RCUD_OUTAGE_BUDGET"), "{err}");
    assert!(
        took >= budget && took < budget * 10,
        "gave up after {took:?}"
    );
    assert_eq!(err.cuda_error(), rcud_proto::CudaError::DEVICES_UNAVAILABLE);
    // Every later call fails at once.
    let started = Instant::now();
    assert!(s.call(&req::MemGetInfo {}, &[], &mut []).is_err());
    assert!(started.elapsed() < Duration::from_millis(100));
}

#[test]
fn a_client_that_never_comes_back_leaves_nothing_on_the_server() {
    let grace = Duration::from_millis(500);
    let server = server_with_grace(grace);
    let proxy = FaultProxy::start(server.addr()).unwrap();
    let free_of = |s: &mut Session| {
        s.call(&req::MemGetInfo {}, &[], &mut [])
            .unwrap()
            .unwrap()
            .free
    };
    let mut observer = connect(server.addr(), Duration::ZERO).unwrap();
    attach(&mut observer);
    let free = free_of(&mut observer);
    let mut s = connect(proxy.addr(), Duration::from_millis(200)).unwrap();
    attach(&mut s);
    malloc(&mut s, 64 * MIB);
    assert_eq!(free - free_of(&mut observer), 64 << 20);
    // The route goes away for good; the client gives up; the server keeps
    // the session for its grace period, then frees it.
    proxy.outage(Duration::from_secs(3600));
    assert!(s.call(&req::MemGetInfo {}, &[], &mut []).is_err());
    let deadline = Instant::now() + grace + Duration::from_secs(10);
    while free_of(&mut observer) != free {
        assert!(
            Instant::now() < deadline,
            "the session's memory was never freed"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn a_connection_that_cannot_prove_it_owns_a_session_is_turned_away() {
    let server = server();
    let mut s = connect(server.addr(), Duration::from_secs(3)).unwrap();
    attach(&mut s);
    // Someone else claims a session id that does not exist.
    let mut hello = rcud_proto::handshake::ClientHello::new("intruder");
    hello.resume = [0xab; 16];
    let mut stream = std::net::TcpStream::connect(server.addr()).unwrap();
    let refused = rcud_proto::handshake::client_exchange(&mut stream, &hello, None);
    assert!(
        matches!(&refused, Err(rcud_proto::handshake::HandshakeError::Refused(m)) if m.contains("no such session")),
        "{refused:?}"
    );
    // The real client is unaffected.
    s.call(&req::MemGetInfo {}, &[], &mut []).unwrap().unwrap();
}

#[test]
fn a_server_without_sessions_ends_them_with_the_connection() {
    let server = server_with_grace(Duration::ZERO);
    let proxy = FaultProxy::start(server.addr()).unwrap();
    let mut s = connect(proxy.addr(), Duration::from_secs(3)).unwrap();
    assert!(!s.resumable());
    attach(&mut s);
    proxy.cut_now();
    std::thread::sleep(Duration::from_millis(100));
    assert!(s.call(&req::MemGetInfo {}, &[], &mut []).is_err());
}

#[test]
fn gpus_on_several_servers_ride_out_cuts_of_each_link() {
    // Two servers, each behind its own proxy; the runtime sees two GPUs.
    let servers = [server(), server()];
    let proxies: Vec<FaultProxy> = servers
        .iter()
        .map(|s| FaultProxy::start(s.addr()).unwrap())
        .collect();
    let entries: Vec<rcud_client::config::ServerEntry> = proxies
        .iter()
        .map(|p| rcud_client::config::ServerEntry {
            addr: p.addr().to_string(),
            gpu: None,
        })
        .collect();
    let rt = rcud_client::Runtime::connect(&entries, "resume-test".into());
    assert_eq!(rt.device_count(), Ok(2));
    let mut buffers = Vec::new();
    for d in 0..2 {
        rt.set_device(d).unwrap();
        buffers.push(rt.malloc(2 * MIB as u64).unwrap());
    }
    // Both links break in the middle of their copies, one up, one down.
    proxies[0].arm(cut(Direction::Up, 1_500_000));
    proxies[1].arm(cut(Direction::Down, 700_000));
    for round in 0..2u32 {
        for (d, &ptr) in buffers.iter().enumerate() {
            let data = pattern(2 * MIB, round * 2 + d as u32);
            rt.memcpy_htod(d, ptr, &data).unwrap();
            let mut back = vec![0u8; 2 * MIB];
            rt.memcpy_dtoh(d, &mut back, ptr).unwrap();
            assert!(back == data, "device {d}, round {round}");
        }
    }
    assert_eq!(proxies[0].cuts() + proxies[1].cuts(), 2);
}

/// A kernel that counts to `n` and stores the count.
const SPIN_PTX: &str = ".version 7.0\n.target sm_80\n.address_size 64\n\
.visible .entry spin(.param .u64 out, .param .u32 n)\n{\n\
  .reg .pred %p;\n  .reg .b32 %r<3>;\n  .reg .b64 %rd<2>;\n\
  ld.param.u64 %rd1, [out];\n  ld.param.u32 %r1, [n];\n  mov.u32 %r2, 0;\n\
LOOP:\n  add.u32 %r2, %r2, 1;\n  setp.lt.u32 %p, %r2, %r1;\n  @%p bra LOOP;\n\
  st.global.u32 [%rd1], %r2;\n  ret;\n}\n";

#[test]
fn a_cut_while_a_kernel_runs_gets_its_reply_once() {
    let server = server();
    let proxy = FaultProxy::start(server.addr()).unwrap();
    let mut s = connect(proxy.addr(), Duration::from_secs(3)).unwrap();
    attach(&mut s);
    let image = rcud_fatbin::image::wrap_ptx(SPIN_PTX.as_bytes());
    let module = s
        .call(
            &req::ModuleLoad {
                hash: rcud_fatbin::content_hash(&image),
                len: image.len() as u64,
            },
            &image,
            &mut [],
        )
        .unwrap()
        .unwrap()
        .module;
    let function = s
        .call(
            &req::ModuleGetFunction {
                module,
                name: "spin".into(),
            },
            &[],
            &mut [],
        )
        .unwrap()
        .unwrap()
        .function;
    let out = malloc(&mut s, 4);
    let n: u32 = 2_000_000;
    let mut params = out.to_le_bytes().to_vec();
    params.extend_from_slice(&n.to_le_bytes());
    let launch = req::LaunchKernel {
        function,
        grid: [1, 1, 1],
        block: [1, 1, 1],
        shared_mem: 0,
        stream: 0,
        params: rcud_proto::codec::Blob(params),
    };
    let started = Instant::now();
    std::thread::scope(|scope| {
        scope.spawn(|| {
            // The request is on the server by then, the kernel running.
            std::thread::sleep(Duration::from_millis(30));
            proxy.cut_now();
        });
        s.call(&launch, &[], &mut []).unwrap().unwrap();
    });
    let took = started.elapsed();
    assert_eq!(proxy.cuts(), 1);
    assert!(
        took > Duration::from_millis(30),
        "the kernel ended before the cut ({took:?})"
    );
    let count = u32::from_le_bytes(read(&mut s, out, 4).try_into().unwrap());
    assert_eq!(count, n);
}

#[test]
fn a_break_only_the_client_sees_is_resumed_at_once() {
    // The network fails nearer the client: the client's connection is
    // reset, the server's stays open and silent. The server learns of the
    // break from the client's new connection.
    let server = server();
    let proxy = FaultProxy::start(server.addr()).unwrap();
    let mut s = connect(proxy.addr(), Duration::from_secs(3)).unwrap();
    attach(&mut s);
    let ptr = malloc(&mut s, MIB);
    let data = pattern(MIB, 11);
    write(&mut s, ptr, &data);
    proxy.cut_client_side_now();
    std::thread::sleep(Duration::from_millis(50));
    let started = Instant::now();
    assert!(read(&mut s, ptr, MIB) == data);
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "resuming took {:?}",
        started.elapsed()
    );
    assert_eq!(proxy.cuts(), 1);
}
