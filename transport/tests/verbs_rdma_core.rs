//! The `rdma-core` verbs provider without RDMA hardware.
//!
//! - With the libraries missing (the path overrides pointed at nothing):
//!   the errors name the library and what to install, and `devices()` still
//!   lists the soft device.
//! - Against `fake_ibverbs.c`, a stand-in for libibverbs with an in-process
//!   loopback adapter, built with the C compiler by `support::fake_rdma`
//!   (`$CC`, else `cc`; without one these tests say so and pass), librdmacm
//!   left missing: the provider's FFI layer for real (ops-table calls,
//!   work-request translation, completion decoding, queue-pair transitions
//!   and their masks, completion-channel waits). RDMA CM and the CSR and MSR
//!   modules on top of the provider: `cm_rdma_core.rs`,
//!   `modules_rdma_core.rs`.
//! - On a host with an adapter: a loopback over it; skipped with the reason
//!   otherwise.
//!
//! The library is loaded once per process, so each test that needs an
//! environment of its own runs this binary again as a child with that
//! environment (`RCUD_RDMA_CORE_CHILD` set), and the child runs the test.

use std::thread;
use std::time::{Duration, Instant};

use rcud_transport::bootstrap;
use rcud_transport::verbs::rdma_core::{self, cm, Unavailable};
use rcud_transport::verbs::{
    devices, Access, AsyncEvent, Completion, CompletionQueue, Context, Fabric, MemoryRegion,
    Provider, QpInit, QpState, QueuePair, RecvWr, SendOp, SendWr, VerbsError, WcOpcode, WcStatus,
    SOFT_DEVICE,
};

mod support;

use support::fake_rdma::{
    fake_async_events_unacked, fake_inject_async_event, fake_verbs_live_objects, run_in_child,
    with_fake_rdma, CHILD_ENV, FAKE_DEVICE,
};

const NOWHERE_IBVERBS: &str = "/nonexistent/rcud-test/libibverbs.so.1";
const NOWHERE_RDMACM: &str = "/nonexistent/rcud-test/librdmacm.so.1";

/// Runs `test` in a child whose libibverbs is the stand-in and whose
/// librdmacm is missing (with `env` besides); `true` in the parent.
fn with_fake(test: &str, env: &[(&str, &str)]) -> bool {
    let mut all = vec![("RCUD_RDMACM_LIBRARY", NOWHERE_RDMACM)];
    all.extend_from_slice(env);
    with_fake_rdma(test, &all)
}

fn blank() -> Completion {
    Completion {
        wr_id: 0,
        qp_num: 0,
        opcode: WcOpcode::Send,
        status: WcStatus::Success,
        byte_len: 0,
        imm: None,
    }
}

/// Polls exactly `n` completions, waiting for events, or panics after 5 s.
fn poll_n(cq: &CompletionQueue, n: usize) -> Vec<Completion> {
    let mut got = Vec::new();
    let mut buf = vec![blank(); 16];
    let deadline = Instant::now() + Duration::from_secs(5);
    while got.len() < n {
        let left = deadline.saturating_duration_since(Instant::now());
        assert!(!left.is_zero(), "only {} of {n}: {got:?}", got.len());
        let want = (n - got.len()).min(buf.len());
        let k = cq.poll_wait(&mut buf[..want], left).unwrap();
        got.extend_from_slice(&buf[..k]);
    }
    got
}

fn assert_no_completion(cq: &CompletionQueue) {
    let mut buf = [blank(); 4];
    assert_eq!(cq.poll(&mut buf).unwrap(), 0, "{:?}", &buf[..1]);
}

struct Side {
    pd: rcud_transport::verbs::ProtectionDomain,
    cq: CompletionQueue,
    qp: QueuePair,
}

fn side(ctx: &Context, depth: u32) -> Side {
    let pd = ctx.alloc_pd().unwrap();
    let cq = ctx.create_cq(4 * depth).unwrap();
    let qp = pd
        .create_qp(&QpInit {
            send_cq: &cq,
            recv_cq: &cq,
            max_send_wr: depth,
            max_recv_wr: depth,
        })
        .unwrap();
    Side { pd, cq, qp }
}

/// Two connected queue pairs on the device `name`.
fn pair(name: &str, depth: u32) -> (Context, Side, Side) {
    let ctx = Context::open_by_name(name).unwrap();
    assert_eq!(ctx.device().provider, Provider::RdmaCore);
    let a = side(&ctx, depth);
    let b = side(&ctx, depth);
    assert_eq!(a.qp.state(), QpState::Init);
    a.qp.connect(&b.qp.endpoint()).unwrap();
    b.qp.connect(&a.qp.endpoint()).unwrap();
    assert_eq!(a.qp.state(), QpState::ReadyToSend);
    (ctx, a, b)
}

// ---- missing libraries ---------------------------------------------------

#[test]
fn missing_libraries_are_explained_and_soft_remains() {
    if run_in_child(
        "missing_libraries_are_explained_and_soft_remains",
        &[
            ("RCUD_IBVERBS_LIBRARY", NOWHERE_IBVERBS),
            ("RCUD_RDMACM_LIBRARY", NOWHERE_RDMACM),
        ],
    ) {
        return;
    }
    let why = rdma_core::availability().unwrap_err();
    assert!(matches!(why, Unavailable::Library { .. }), "{why:?}");
    let text = why.to_string();
    for needle in [
        NOWHERE_IBVERBS,
        "rdma-core libibverbs1 librdmacm1",
        "rdma-core libibverbs librdmacm",
        "RCUD_IBVERBS_LIBRARY",
    ] {
        assert!(text.contains(needle), "{needle:?} missing from: {text}");
    }
    let all = devices();
    assert_eq!(all.len(), 1, "{all:?}");
    assert_eq!(all[0].name, SOFT_DEVICE);
    Context::open_by_name(SOFT_DEVICE).unwrap();
    let e = Context::open_by_name("mlx5_0").unwrap_err();
    assert!(matches!(e, VerbsError::NoSuchDevice { .. }));
    assert!(
        e.to_string()
            .contains("libibverbs.so.1 could not be loaded"),
        "{e}"
    );

    let e = cm::CmListener::bind("127.0.0.1".parse().unwrap()).unwrap_err();
    let text = e.to_string();
    assert!(
        text.contains(NOWHERE_RDMACM) && text.contains("RCUD_RDMACM_LIBRARY"),
        "{text}"
    );
    let e = cm::resolve("127.0.0.1:7471".parse().unwrap(), Duration::from_secs(1)).unwrap_err();
    assert!(matches!(e, cm::CmError::Unavailable(_)), "{e}");
}

#[test]
fn missing_rdmacm_alone_is_named() {
    if with_fake("missing_rdmacm_alone_is_named", &[]) {
        return;
    }
    // Verbs work; connection management says which library is missing.
    assert!(rdma_core::availability().is_ok());
    let e = cm::CmListener::bind("127.0.0.1".parse().unwrap()).unwrap_err();
    let text = e.to_string();
    assert!(
        text.contains("librdmacm.so.1") && text.contains("apt install rdma-core"),
        "{text}"
    );
}

#[test]
fn no_adapter_is_explained() {
    if with_fake("no_adapter_is_explained", &[("FAKE_IBV_DEVICES", "0")]) {
        return;
    }
    let why = rdma_core::availability().unwrap_err();
    assert!(matches!(why, Unavailable::NoDevice));
    assert!(
        why.to_string()
            .contains("ibv_get_device_list returned 0 devices"),
        "{why}"
    );
    assert_eq!(devices().len(), 1);
    let e = Context::open_by_name(FAKE_DEVICE).unwrap_err();
    assert!(e.to_string().contains("returned 0 devices"), "{e}");
}

// ---- the stand-in adapter -------------------------------------------------

#[test]
fn lists_and_opens_the_adapter() {
    if with_fake("lists_and_opens_the_adapter", &[]) {
        return;
    }
    assert_eq!(rdma_core::availability().unwrap(), vec![FAKE_DEVICE]);
    let all = devices();
    assert_eq!(all[0].name, SOFT_DEVICE);
    assert_eq!(all[1].name, FAKE_DEVICE);
    assert_eq!(all[1].provider, Provider::RdmaCore);
    let ctx = Context::open(&all[1]).unwrap();
    let attr = ctx.attr();
    assert_eq!(attr.max_qp_wr, 1024);
    assert_eq!(attr.max_cqe, 65536);
    assert_eq!(attr.max_mr_size, 1 << 40);
    assert_eq!(attr.max_msg_size, 1 << 30);
    assert!(matches!(
        ctx.create_cq(0),
        Err(VerbsError::InvalidArgument(_))
    ));
}

fn send_recv_body() {
    let (_ctx, a, b) = pair(FAKE_DEVICE, 8);
    let src = a.pd.alloc_mr(4096, Access::NONE).unwrap();
    let dst = b.pd.alloc_mr(8192, Access::LOCAL_WRITE).unwrap();
    assert_eq!(src.addr() % 4096, 0, "regions are page-aligned");
    src.write(0, b"hello, verbs").unwrap();
    src.write(100, &[7u8; 300]).unwrap();
    b.qp.post_recv(&[
        RecvWr {
            wr_id: 11,
            buf: Some(dst.sge(0, 64)),
        },
        RecvWr {
            wr_id: 12,
            buf: Some(dst.sge(1000, 4000)),
        },
        RecvWr {
            wr_id: 13,
            buf: None,
        },
    ])
    .unwrap();
    a.qp.post_send(&[
        SendWr::new(1, SendOp::Send, Some(src.sge(0, 12))),
        SendWr::new(2, SendOp::SendWithImm(0xDEAD_BEEF), Some(src.sge(100, 300))),
        // Unsignaled: no completion, its slot freed by the next signaled one.
        SendWr::new(3, SendOp::Send, None).signaled(false),
    ])
    .unwrap();
    let sends = poll_n(&a.cq, 2);
    let recvs = poll_n(&b.cq, 3);
    assert!(sends.iter().all(|c| c.qp_num == a.qp.qp_num()));
    assert!(recvs.iter().all(|c| c.qp_num == b.qp.qp_num()));
    assert_eq!(
        (
            sends[0].wr_id,
            sends[0].opcode,
            sends[0].status,
            sends[0].byte_len
        ),
        (1, WcOpcode::Send, WcStatus::Success, 12)
    );
    assert_eq!((sends[1].wr_id, sends[1].byte_len), (2, 300));
    assert_eq!(
        (
            recvs[0].wr_id,
            recvs[0].opcode,
            recvs[0].byte_len,
            recvs[0].imm
        ),
        (11, WcOpcode::Recv, 12, None)
    );
    assert_eq!(
        (recvs[1].wr_id, recvs[1].byte_len, recvs[1].imm),
        (12, 300, Some(0xDEAD_BEEF))
    );
    assert_eq!((recvs[2].wr_id, recvs[2].byte_len), (13, 0));
    assert_no_completion(&b.cq);
    let mut got = [0u8; 12];
    dst.read(0, &mut got).unwrap();
    assert_eq!(&got, b"hello, verbs");
    let mut got = vec![0u8; 300];
    dst.read(1000, &mut got).unwrap();
    assert!(got.iter().all(|&x| x == 7));
    assert_no_completion(&a.cq);

    // Depth accounting: 8 send slots, one still held by unsignaled send 3.
    let many: Vec<_> = (0..8)
        .map(|i| SendWr::new(100 + i, SendOp::RdmaWrite(dst.remote_addr(0)), None))
        .collect();
    a.qp.post_send(&many[..7]).unwrap();
    assert!(matches!(
        a.qp.post_send(&many[7..]),
        Err(VerbsError::QueueFull { depth: 8, .. })
    ));
    let wcs = poll_n(&a.cq, 7);
    assert!(wcs
        .iter()
        .enumerate()
        .all(|(i, c)| c.wr_id == 100 + i as u64 && c.opcode == WcOpcode::RdmaWrite));
    // Polling later signaled completions retired send 3 as well.
    a.qp.post_send(&many).unwrap();
    poll_n(&a.cq, 8);

    // Our checks come first: nothing is posted from a bad list.
    let foreign = b.pd.alloc_mr(64, Access::NONE).unwrap();
    assert!(matches!(
        a.qp.post_send(&[
            SendWr::new(1, SendOp::Send, Some(src.sge(0, 1))),
            SendWr::new(2, SendOp::Send, Some(foreign.sge(0, 1))),
        ]),
        Err(VerbsError::Foreign(_))
    ));
    assert!(matches!(
        a.qp.post_send(&[SendWr::new(1, SendOp::Send, Some(src.sge(4000, 97)))]),
        Err(VerbsError::OutOfBounds { .. })
    ));
    assert!(matches!(
        b.qp.post_recv(&[RecvWr {
            wr_id: 1,
            buf: Some(foreign.sge(0, 1))
        }]),
        Err(VerbsError::InvalidArgument(_))
    ));
    assert_no_completion(&a.cq);
}

#[test]
fn send_and_receive() {
    if with_fake("send_and_receive", &[]) {
        return;
    }
    // An InfiniBand port: the thesis's optimum of 288 chunks is the default.
    let ctx = Context::open_by_name(FAKE_DEVICE).unwrap();
    assert_eq!(ctx.fabric(), Fabric::InfiniBand);
    assert_eq!(
        bootstrap::csr_options_for(ctx.fabric()).unwrap().chunks,
        288
    );
    drop(ctx);
    send_recv_body();
    assert_eq!(
        fake_verbs_live_objects(),
        0,
        "every object is destroyed on drop"
    );
}

#[test]
fn send_and_receive_over_roce() {
    // Ethernet link layer: no LIDs, so connect must use the global route.
    if with_fake(
        "send_and_receive_over_roce",
        &[("FAKE_IBV_LINK_LAYER", "ethernet")],
    ) {
        return;
    }
    let ctx = Context::open_by_name(FAKE_DEVICE).unwrap();
    assert_eq!(ctx.fabric(), Fabric::Roce);
    assert_eq!(
        bootstrap::msr_options_for(ctx.fabric()).unwrap().chunks,
        144
    );
    drop(ctx);
    send_recv_body();
}

#[test]
fn rdma_write_with_immediate() {
    if with_fake("rdma_write_with_immediate", &[]) {
        return;
    }
    let (_ctx, a, b) = pair(FAKE_DEVICE, 4);
    let src = a.pd.alloc_mr(1 << 16, Access::NONE).unwrap();
    let target =
        b.pd.alloc_mr(1 << 16, Access::LOCAL_WRITE | Access::REMOTE_WRITE)
            .unwrap();
    let data: Vec<u8> = (0..20_000u32).map(|i| (i * 7 % 251) as u8).collect();
    src.write(0, &data).unwrap();
    let remote = target.remote();
    b.qp.post_recv(&[RecvWr {
        wr_id: 77,
        buf: None,
    }])
    .unwrap();
    a.qp.post_send(&[
        SendWr::new(
            1,
            SendOp::RdmaWrite(remote.at(0).unwrap()),
            Some(src.sge(0, 10_000)),
        ),
        SendWr::new(
            2,
            SendOp::RdmaWriteWithImm(remote.at(30_000).unwrap(), 42),
            Some(src.sge(10_000, 10_000)),
        ),
    ])
    .unwrap();
    let recv = poll_n(&b.cq, 1)[0];
    assert_eq!(
        (
            recv.wr_id,
            recv.opcode,
            recv.byte_len,
            recv.imm,
            recv.status
        ),
        (
            77,
            WcOpcode::RecvRdmaWithImm,
            10_000,
            Some(42),
            WcStatus::Success
        )
    );
    let writes = poll_n(&a.cq, 2);
    assert_eq!(
        writes
            .iter()
            .map(|c| (c.wr_id, c.opcode, c.byte_len))
            .collect::<Vec<_>>(),
        vec![
            (1, WcOpcode::RdmaWrite, 10_000),
            (2, WcOpcode::RdmaWrite, 10_000)
        ]
    );
    let mut got = vec![0u8; 10_000];
    target.read(0, &mut got).unwrap();
    assert!(got == data[..10_000]);
    target.read(30_000, &mut got).unwrap();
    assert!(got == data[10_000..]);
}

#[test]
fn wrong_rkey_is_a_remote_access_error() {
    if with_fake("wrong_rkey_is_a_remote_access_error", &[]) {
        return;
    }
    let (_ctx, a, b) = pair(FAKE_DEVICE, 4);
    let src = a.pd.alloc_mr(4096, Access::NONE).unwrap();
    let target =
        b.pd.alloc_mr(4096, Access::LOCAL_WRITE | Access::REMOTE_WRITE)
            .unwrap();
    let mut bad = target.remote_addr(0);
    bad.rkey ^= 0x5555;
    a.qp.post_send(&[
        SendWr::new(1, SendOp::RdmaWrite(bad), Some(src.sge(0, 64))),
        // Unsignaled, after the error: flushed, and errors always complete.
        SendWr::new(2, SendOp::Send, None).signaled(false),
    ])
    .unwrap();
    let wcs = poll_n(&a.cq, 2);
    assert_eq!(
        (wcs[0].wr_id, wcs[0].status, wcs[0].opcode, wcs[0].byte_len),
        (1, WcStatus::RemoteAccess, WcOpcode::RdmaWrite, 0)
    );
    assert_eq!(
        (wcs[1].wr_id, wcs[1].status, wcs[1].opcode),
        (2, WcStatus::WrFlush, WcOpcode::Send)
    );
    assert_eq!(a.qp.state(), QpState::Error);
    // The target's queue pair failed too: its receives are flushed.
    b.qp.post_recv(&[RecvWr {
        wr_id: 9,
        buf: None,
    }])
    .unwrap();
    let wcs = poll_n(&b.cq, 1);
    assert_eq!(
        (wcs[0].wr_id, wcs[0].status, wcs[0].opcode),
        (9, WcStatus::WrFlush, WcOpcode::Recv)
    );
}

#[test]
fn send_without_receive_is_receiver_not_ready() {
    if with_fake("send_without_receive_is_receiver_not_ready", &[]) {
        return;
    }
    let (_ctx, a, _b) = pair(FAKE_DEVICE, 4);
    a.qp.post_send(&[SendWr::new(5, SendOp::Send, None)])
        .unwrap();
    let wcs = poll_n(&a.cq, 1);
    assert_eq!(
        (wcs[0].wr_id, wcs[0].status),
        (5, WcStatus::RnrRetryExceeded)
    );
}

#[test]
fn unconnected_and_misconnected_queue_pairs() {
    if with_fake("unconnected_and_misconnected_queue_pairs", &[]) {
        return;
    }
    let ctx = Context::open_by_name(FAKE_DEVICE).unwrap();
    let a = side(&ctx, 4);
    let b = side(&ctx, 4);
    assert!(matches!(
        a.qp.post_send(&[SendWr::new(1, SendOp::Send, None)]),
        Err(VerbsError::NotConnected { .. })
    ));
    // Receives may be posted before connecting.
    a.qp.post_recv(&[RecvWr {
        wr_id: 1,
        buf: None,
    }])
    .unwrap();
    assert!(matches!(
        a.qp.connect(&rcud_transport::verbs::Endpoint::from_bytes(
            b"RVS1 a soft endpoint"
        )),
        Err(VerbsError::BadEndpoint(_))
    ));
    a.qp.connect(&b.qp.endpoint()).unwrap();
    assert!(matches!(
        a.qp.connect(&b.qp.endpoint()),
        Err(VerbsError::AlreadyConnected { .. })
    ));
    // Soft objects are foreign here.
    let soft = Context::open_by_name(SOFT_DEVICE).unwrap();
    let soft_cq = soft.create_cq(4).unwrap();
    let pd = ctx.alloc_pd().unwrap();
    assert!(matches!(
        pd.create_qp(&QpInit {
            send_cq: &soft_cq,
            recv_cq: &soft_cq,
            max_send_wr: 1,
            max_recv_wr: 1
        }),
        Err(VerbsError::Foreign(_))
    ));
}

#[test]
fn completion_wait_times_out_and_wakes() {
    if with_fake("completion_wait_times_out_and_wakes", &[]) {
        return;
    }
    completion_wait_body();
    // Every event taken from the channels was acknowledged (the stand-in
    // refuses to destroy a queue otherwise, as libibverbs blocks).
    assert_eq!(fake_verbs_live_objects(), 0);
}

fn completion_wait_body() {
    let (_ctx, a, b) = pair(FAKE_DEVICE, 4);
    let t = Instant::now();
    assert!(!b.cq.wait(Duration::from_millis(150)).unwrap());
    assert!(
        t.elapsed() >= Duration::from_millis(150),
        "{:?}",
        t.elapsed()
    );
    assert!(!b.cq.wait(Duration::ZERO).unwrap());
    b.qp.post_recv(&[RecvWr {
        wr_id: 3,
        buf: None,
    }])
    .unwrap();
    let sender = thread::spawn(move || {
        thread::sleep(Duration::from_millis(100));
        a.qp.post_send(&[SendWr::new(1, SendOp::SendWithImm(9), None)])
            .unwrap();
        a
    });
    let t = Instant::now();
    assert!(b.cq.wait(Duration::from_secs(10)).unwrap());
    assert!(t.elapsed() < Duration::from_secs(5));
    // Waiting consumed nothing; a second wait sees the same completion.
    assert!(b.cq.wait(Duration::ZERO).unwrap());
    let wcs = poll_n(&b.cq, 1);
    assert_eq!((wcs[0].wr_id, wcs[0].imm), (3, Some(9)));
    drop(sender.join().unwrap());
}

// verbs.h's `enum ibv_event_type`.
const IBV_EVENT_QP_FATAL: u32 = 1;
const IBV_EVENT_PORT_ACTIVE: u32 = 9;
const IBV_EVENT_PORT_ERR: u32 = 10;
const IBV_EVENT_LID_CHANGE: u32 = 11;
const IBV_EVENT_SM_CHANGE: u32 = 13;

/// The adapter's asynchronous events, read by the provider's listener
/// thread: a fatal queue-pair error takes that queue pair down, a port
/// error every queue pair on the port; posts fail at once, outstanding
/// receives are flushed, every event is acknowledged, and the subscribers
/// get them in order.
#[test]
fn async_events_take_queue_pairs_down() {
    if with_fake("async_events_take_queue_pairs_down", &[]) {
        return;
    }
    let prompt = Duration::from_secs(1);
    {
        let (ctx, a, b) = pair(FAKE_DEVICE, 4);
        let events = ctx.subscribe_events();
        for (side, id) in [(&a, 1), (&b, 2)] {
            side.qp
                .post_recv(&[RecvWr {
                    wr_id: id,
                    buf: None,
                }])
                .unwrap();
        }
        let qp_num = a.qp.qp_num();
        assert_eq!(fake_inject_async_event(IBV_EVENT_QP_FATAL, qp_num, 0), 1);
        assert_eq!(
            events.recv_timeout(prompt),
            Ok(AsyncEvent::QpFatal { qp_num })
        );
        assert_eq!(a.qp.state(), QpState::Error);
        assert!(matches!(
            a.qp.post_send(&[SendWr::new(5, SendOp::Send, None)]),
            Err(VerbsError::LinkDown { qp_num: n, event: AsyncEvent::QpFatal { .. } }) if n == qp_num
        ));
        let wc = poll_n(&a.cq, 1);
        assert_eq!((wc[0].wr_id, wc[0].status), (1, WcStatus::WrFlush));
        // The other queue pair is untouched by an event of this one.
        assert_eq!(b.qp.state(), QpState::ReadyToSend);

        // Events that take nothing down are only delivered.
        fake_inject_async_event(IBV_EVENT_SM_CHANGE, 0, 1);
        fake_inject_async_event(IBV_EVENT_LID_CHANGE, 0, 1);
        assert_eq!(
            events.recv_timeout(prompt),
            Ok(AsyncEvent::LidChange { port: 1 })
        );
        assert_eq!(b.qp.state(), QpState::ReadyToSend);

        // A port error takes down every queue pair on the port.
        assert!(fake_inject_async_event(IBV_EVENT_PORT_ERR, 0, 1) >= 1);
        assert_eq!(
            events.recv_timeout(prompt),
            Ok(AsyncEvent::PortError { port: 1 })
        );
        assert_eq!(b.qp.state(), QpState::Error);
        assert!(matches!(
            b.qp.post_recv(&[RecvWr {
                wr_id: 3,
                buf: None
            }]),
            Err(VerbsError::LinkDown {
                event: AsyncEvent::PortError { port: 1 },
                ..
            })
        ));
        let wc = poll_n(&b.cq, 1);
        assert_eq!((wc[0].wr_id, wc[0].status), (2, WcStatus::WrFlush));
        fake_inject_async_event(IBV_EVENT_PORT_ACTIVE, 0, 1);
        assert_eq!(
            events.recv_timeout(prompt),
            Ok(AsyncEvent::PortActive { port: 1 })
        );
        // Queue pairs marked down stay down; new ones work.
        assert_eq!(b.qp.state(), QpState::Error);
        let (_ctx2, c, d) = pair(FAKE_DEVICE, 4);
        d.qp.post_recv(&[RecvWr {
            wr_id: 4,
            buf: None,
        }])
        .unwrap();
        c.qp.post_send(&[SendWr::new(6, SendOp::Send, None)])
            .unwrap();
        assert_eq!(poll_n(&d.cq, 1)[0].status, WcStatus::Success);
    }
    assert_eq!(fake_async_events_unacked(), 0, "every event acknowledged");
    assert_eq!(
        fake_verbs_live_objects(),
        0,
        "the listener ended and the contexts closed"
    );
}

#[test]
fn registration_limit_is_reported_as_a_limit() {
    if with_fake(
        "registration_limit_is_reported_as_a_limit",
        &[("FAKE_IBV_MAX_MR", "3")],
    ) {
        return;
    }
    let ctx = Context::open_by_name(FAKE_DEVICE).unwrap();
    let pd = ctx.alloc_pd().unwrap();
    let held: Vec<MemoryRegion> = (0..3)
        .map(|_| pd.alloc_mr(4096, Access::LOCAL_WRITE).unwrap())
        .collect();
    let e = pd.alloc_mr(4096, Access::LOCAL_WRITE).unwrap_err();
    assert!(matches!(e, VerbsError::Limit { max: 3, .. }), "{e:?}");
    drop(held);
    pd.alloc_mr(4096, Access::LOCAL_WRITE).unwrap();
}

// ---- real hardware ----------------------------------------------------------

#[test]
fn loopback_on_a_real_adapter() {
    if std::env::var_os(CHILD_ENV).is_some() {
        return;
    }
    let names = match rdma_core::availability() {
        Ok(n) => n,
        Err(why) => {
            eprintln!("loopback_on_a_real_adapter: skipped: {why}");
            return;
        }
    };
    let name = std::env::var("RCUD_RDMA_DEVICE").unwrap_or_else(|_| names[0].clone());
    let (_ctx, a, b) = pair(&name, 16);
    let src = a.pd.alloc_mr(1 << 20, Access::NONE).unwrap();
    let dst =
        b.pd.alloc_mr(1 << 20, Access::LOCAL_WRITE | Access::REMOTE_WRITE)
            .unwrap();
    src.write(0, &[0xA5; 4096]).unwrap();
    b.qp.post_recv(&[
        RecvWr {
            wr_id: 1,
            buf: Some(dst.sge(0, 4096)),
        },
        RecvWr {
            wr_id: 2,
            buf: None,
        },
    ])
    .unwrap();
    a.qp.post_send(&[
        SendWr::new(10, SendOp::Send, Some(src.sge(0, 4096))),
        SendWr::new(
            11,
            SendOp::RdmaWriteWithImm(dst.remote_addr(8192), 5),
            Some(src.sge(0, 4096)),
        ),
    ])
    .unwrap();
    let mut wcs = poll_n(&a.cq, 2);
    wcs.extend(poll_n(&b.cq, 2));
    assert!(wcs.iter().all(|c| c.status.is_success()), "{wcs:?}");
    let mut got = vec![0u8; 4096];
    dst.read(8192, &mut got).unwrap();
    assert!(got.iter().all(|&x| x == 0xA5));
}

#[test]
fn rdma_cm_on_a_real_adapter() {
    if std::env::var_os(CHILD_ENV).is_some() {
        return;
    }
    // The address of an RDMA interface (IPoIB or the RoCE netdev).
    let Ok(ip) = std::env::var("RCUD_RDMA_TEST_IP") else {
        eprintln!(
            "rdma_cm_on_a_real_adapter: skipped: RCUD_RDMA_TEST_IP (the address of an RDMA \
             interface) is not set"
        );
        return;
    };
    if let Err(why) = rdma_core::availability() {
        eprintln!("rdma_cm_on_a_real_adapter: skipped: {why}");
        return;
    }
    let ip: std::net::IpAddr = ip.parse().unwrap();
    let t = Duration::from_secs(10);
    let (listener, port) = cm::CmListener::bind(ip).unwrap();
    let server = thread::spawn(move || {
        let mut p = listener.get_request(t).unwrap();
        let ctx = p.context().clone();
        let pd = ctx.alloc_pd().unwrap();
        let cq = ctx.create_cq(16).unwrap();
        let buf = pd.alloc_mr(4096, Access::LOCAL_WRITE).unwrap();
        let qp = p
            .create_qp(
                &pd,
                &QpInit {
                    send_cq: &cq,
                    recv_cq: &cq,
                    max_send_wr: 4,
                    max_recv_wr: 4,
                },
            )
            .unwrap();
        qp.post_recv(&[RecvWr {
            wr_id: 1,
            buf: Some(buf.sge(0, 4096)),
        }])
        .unwrap();
        p.establish(t).unwrap();
        let wcs = poll_n(&cq, 1);
        assert_eq!((wcs[0].status, wcs[0].byte_len), (WcStatus::Success, 5));
        let mut got = [0u8; 5];
        buf.read(0, &mut got).unwrap();
        assert_eq!(&got, b"hello");
    });
    let mut p = cm::resolve(std::net::SocketAddr::new(ip, port), t).unwrap();
    let ctx = p.context().clone();
    let pd = ctx.alloc_pd().unwrap();
    let cq = ctx.create_cq(16).unwrap();
    let buf = pd.alloc_mr(4096, Access::NONE).unwrap();
    buf.write(0, b"hello").unwrap();
    let qp = p
        .create_qp(
            &pd,
            &QpInit {
                send_cq: &cq,
                recv_cq: &cq,
                max_send_wr: 4,
                max_recv_wr: 4,
            },
        )
        .unwrap();
    p.establish(t).unwrap();
    qp.post_send(&[SendWr::new(1, SendOp::Send, Some(buf.sge(0, 5)))])
        .unwrap();
    let wcs = poll_n(&cq, 1);
    assert!(wcs[0].status.is_success(), "{wcs:?}");
    server.join().unwrap();
}

#[test]
fn installed_libraries_resolve_every_entry_point() {
    if std::env::var_os(CHILD_ENV).is_some() {
        return;
    }
    // Where rdma-core is installed (not in CI), loading resolves every entry
    // point the provider uses: any failure now is a device or kernel matter.
    match rdma_core::availability() {
        Err(Unavailable::Library { library, .. }) => {
            eprintln!("installed_libraries_resolve_every_entry_point: skipped: no {library}");
            return;
        }
        Err(e @ Unavailable::Symbol { .. }) => panic!("{e}"),
        _ => {}
    }
    match cm::CmListener::bind("127.0.0.1".parse().unwrap()) {
        Err(cm::CmError::Unavailable(Unavailable::Library { library, .. })) => {
            eprintln!("installed_libraries_resolve_every_entry_point: no {library}");
        }
        Err(e @ cm::CmError::Unavailable(_)) => panic!("{e}"),
        // No RDMA device behind 127.0.0.1 normally: a call fails, cleanly.
        Err(e) => eprintln!("RDMA CM on 127.0.0.1: {e}"),
        Ok((_listener, port)) => assert_ne!(port, 0),
    }
}
