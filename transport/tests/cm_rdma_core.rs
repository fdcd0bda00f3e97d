//! RDMA CM connection set-up (`verbs::rdma_core::cm`) against the stand-ins
//! `fake_ibverbs.c` + `fake_rdmacm.c`, built as one library with the C
//! compiler (`$CC`, else `cc`; without one these tests say so and pass).
//!
//! Each test runs in a child process of its own (the provider loads its
//! libraries once per process, see `support/fake_rdma.rs`); the child checks
//! at the end that every verbs and RDMA CM object was released.

use std::net::{IpAddr, SocketAddr};
use std::sync::mpsc;
use std::thread;
use std::time::{Duration, Instant};

use rcud_transport::verbs::rdma_core::{self, cm};
use rcud_transport::verbs::{
    Access, Completion, CompletionQueue, Context, Fabric, MemoryRegion, ProtectionDomain, QpInit,
    QpState, QueuePair, RecvWr, RemoteRegion, SendOp, SendWr, WcOpcode, WcStatus,
};

mod support;

use support::fake_rdma::{
    fake_cm_live_objects, fake_verbs_live_objects, with_fake_rdma, FAKE_DEVICE,
};

const LOCALHOST: IpAddr = IpAddr::V4(std::net::Ipv4Addr::LOCALHOST);
const T: Duration = Duration::from_secs(5);
const DEPTH: u32 = 8;
const REGION: usize = 1 << 16;

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
    let deadline = Instant::now() + T;
    while got.len() < n {
        let left = deadline.saturating_duration_since(Instant::now());
        assert!(!left.is_zero(), "only {} of {n}: {got:?}", got.len());
        let want = (n - got.len()).min(buf.len());
        let k = cq.poll_wait(&mut buf[..want], left).unwrap();
        got.extend_from_slice(&buf[..k]);
    }
    got
}

/// One end of a connection; fields drop in order (queue pair first).
struct End {
    qp: QueuePair,
    mr: MemoryRegion,
    cq: CompletionQueue,
    _pd: ProtectionDomain,
    ctx: Context,
}

/// The steps both sides take on a pending connection: objects on its
/// context, the queue pair, `recvs` receives posted (into the region's
/// first KiB each), then `establish`.
fn set_up(mut p: cm::CmPending, recvs: u64) -> Result<End, cm::CmError> {
    let ctx = p.context().clone();
    let pd = ctx.alloc_pd()?;
    let cq = ctx.create_cq(4 * DEPTH)?;
    let mr = pd.alloc_mr(REGION, Access::LOCAL_WRITE | Access::REMOTE_WRITE)?;
    let qp = p.create_qp(
        &pd,
        &QpInit {
            send_cq: &cq,
            recv_cq: &cq,
            max_send_wr: DEPTH,
            max_recv_wr: DEPTH,
        },
    )?;
    assert_eq!(qp.state(), QpState::Init, "librdmacm leaves it in INIT");
    let wrs: Vec<RecvWr<'_>> = (0..recvs)
        .map(|i| RecvWr {
            wr_id: 100 + i,
            buf: Some(mr.sge(i as usize * 1024, 1024)),
        })
        .collect();
    qp.post_recv(&wrs)?;
    p.establish(T)?;
    assert_eq!(qp.state(), QpState::ReadyToSend);
    Ok(End {
        qp,
        mr,
        cq,
        _pd: pd,
        ctx,
    })
}

/// A listener on localhost and one connection through it: (agent, client).
fn connect_pair(recvs: u64) -> (End, End) {
    let (listener, port) = cm::CmListener::bind(LOCALHOST).unwrap();
    assert_ne!(port, 0);
    assert_eq!(listener.port(), port);
    let agent = thread::spawn(move || {
        let p = listener.get_request(T).unwrap();
        set_up(p, recvs).unwrap()
    });
    let p = cm::resolve(SocketAddr::new(LOCALHOST, port), T).unwrap();
    assert_eq!(p.context().device().name, FAKE_DEVICE);
    let client = set_up(p, recvs).unwrap();
    (agent.join().unwrap(), client)
}

fn send(from: &End, wr_id: u64, offset: usize, data: &[u8]) {
    from.mr.write(offset, data).unwrap();
    from.qp
        .post_send(&[SendWr::new(
            wr_id,
            SendOp::Send,
            Some(from.mr.sge(offset, data.len())),
        )])
        .unwrap();
}

fn assert_all_released() {
    assert_eq!(fake_verbs_live_objects(), 0, "verbs objects left");
    assert_eq!(fake_cm_live_objects(), 0, "RDMA CM objects left");
}

fn connection_body() {
    let (agent, client) = connect_pair(2);
    // The contexts are librdmacm's, on the adapter the address maps to.
    assert_eq!(agent.ctx.device().name, FAKE_DEVICE);
    assert_eq!(agent.ctx.device().provider, client.ctx.device().provider);

    // Send / receive both ways into the receives posted before establish.
    send(&client, 1, 8192, b"hello from the client");
    send(&agent, 2, 8192, b"and back from the agent");
    for (end, wr_id, text) in [
        (&agent, 100, &b"hello from the client"[..]),
        (&client, 100, &b"and back from the agent"[..]),
    ] {
        let wcs = poll_n(&end.cq, 2);
        let recv = wcs.iter().find(|c| c.opcode == WcOpcode::Recv).unwrap();
        let sent = wcs.iter().find(|c| c.opcode == WcOpcode::Send).unwrap();
        assert!(sent.status.is_success(), "{wcs:?}");
        assert_eq!(
            (recv.wr_id, recv.status, recv.byte_len as usize),
            (wr_id, WcStatus::Success, text.len())
        );
        let mut got = vec![0; text.len()];
        end.mr.read(0, &mut got).unwrap();
        assert_eq!(got, text);
    }

    // RDMA write with immediate, client → agent, at an address the agent
    // sent over (as the modules do over the bootstrap).
    let remote = RemoteRegion::from_bytes(&agent.mr.remote().to_bytes()).unwrap();
    let data: Vec<u8> = (0..20_000u32).map(|i| (i * 13 % 251) as u8).collect();
    client.mr.write(16_384, &data).unwrap();
    client
        .qp
        .post_send(&[SendWr::new(
            3,
            SendOp::RdmaWriteWithImm(remote.at(32_768).unwrap(), 0xC0FFEE),
            Some(client.mr.sge(16_384, data.len())),
        )])
        .unwrap();
    let recv = poll_n(&agent.cq, 1)[0];
    assert_eq!(
        (
            recv.wr_id,
            recv.opcode,
            recv.byte_len,
            recv.imm,
            recv.status
        ),
        (
            101,
            WcOpcode::RecvRdmaWithImm,
            20_000,
            Some(0xC0FFEE),
            WcStatus::Success
        )
    );
    let write = poll_n(&client.cq, 1)[0];
    assert_eq!((write.wr_id, write.opcode), (3, WcOpcode::RdmaWrite));
    assert!(write.status.is_success());
    let mut got = vec![0; data.len()];
    agent.mr.read(32_768, &mut got).unwrap();
    assert!(got == data, "the written bytes arrived");

    drop((agent, client));
    assert_all_released();
}

#[test]
fn connection_sends_and_writes_with_immediate() {
    if with_fake_rdma("connection_sends_and_writes_with_immediate", &[]) {
        return;
    }
    connection_body();
}

#[test]
fn connection_over_roce_uses_a_global_route() {
    // No LIDs on Ethernet: the stand-in refuses RTR without a GRH.
    if with_fake_rdma(
        "connection_over_roce_uses_a_global_route",
        &[("FAKE_IBV_LINK_LAYER", "ethernet")],
    ) {
        return;
    }
    connection_body();
}

#[test]
fn get_request_times_out() {
    if with_fake_rdma("get_request_times_out", &[]) {
        return;
    }
    let (listener, _port) = cm::CmListener::bind(LOCALHOST).unwrap();
    let wait = Duration::from_millis(300);
    let start = Instant::now();
    let e = listener.get_request(wait).unwrap_err();
    let took = start.elapsed();
    assert!(
        matches!(
            e,
            cm::CmError::Timeout {
                waiting_for: "connection request",
                after
            } if after == wait
        ),
        "{e:?}"
    );
    assert!(took >= wait, "returned early: {took:?}");
    assert!(took < wait + Duration::from_secs(1), "blocked: {took:?}");
    drop(listener);
    assert_all_released();
}

#[test]
fn taken_port_is_refused_and_freed_by_drop() {
    if with_fake_rdma("taken_port_is_refused_and_freed_by_drop", &[]) {
        return;
    }
    let (a, port_a) = cm::CmListener::bind(LOCALHOST).unwrap();
    let (b, port_b) = cm::CmListener::bind(LOCALHOST).unwrap();
    assert_ne!(port_a, port_b, "each listener gets its own port");
    drop((a, b));
    assert_all_released();
}

#[test]
fn connecting_where_nobody_listens_is_rejected() {
    if with_fake_rdma("connecting_where_nobody_listens_is_rejected", &[]) {
        return;
    }
    // A port that was just free: nobody listens there any more.
    let (listener, port) = cm::CmListener::bind(LOCALHOST).unwrap();
    drop(listener);
    // Address and route resolve without a listener; the connection fails.
    let p = cm::resolve(SocketAddr::new(LOCALHOST, port), T).unwrap();
    let start = Instant::now();
    let Err(e) = set_up(p, 1) else {
        panic!("connected to nobody");
    };
    assert!(start.elapsed() < T, "the rejection came at once");
    assert!(
        matches!(
            &e,
            cm::CmError::Unexpected { got, status: 8, .. } if got == "RDMA_CM_EVENT_REJECTED"
        ),
        "{e:?}"
    );
    let text = e.to_string();
    assert!(text.contains("nobody listens"), "{text}");
    assert_all_released();
}

#[test]
fn pending_dropped_before_establish_rejects() {
    if with_fake_rdma("pending_dropped_before_establish_rejects", &[]) {
        return;
    }
    let (listener, port) = cm::CmListener::bind(LOCALHOST).unwrap();
    let agent = thread::spawn(move || {
        // Taken, given a queue pair, then given up.
        let mut p = listener.get_request(T).unwrap();
        let ctx = p.context().clone();
        let pd = ctx.alloc_pd().unwrap();
        let cq = ctx.create_cq(DEPTH).unwrap();
        let qp = p
            .create_qp(
                &pd,
                &QpInit {
                    send_cq: &cq,
                    recv_cq: &cq,
                    max_send_wr: DEPTH,
                    max_recv_wr: DEPTH,
                },
            )
            .unwrap();
        drop(p);
        drop(qp);
    });
    let p = cm::resolve(SocketAddr::new(LOCALHOST, port), T).unwrap();
    let ctx = p.context().clone();
    let client = thread::spawn(move || set_up(p, 1).map(|_| ()));
    agent.join().unwrap();
    let e = client.join().unwrap().unwrap_err();
    assert!(
        matches!(
            &e,
            cm::CmError::Unexpected { got, status: 28, waiting_for } if got == "RDMA_CM_EVENT_REJECTED" && *waiting_for == "established connection"
        ),
        "{e:?}"
    );
    assert!(e.to_string().contains("rejected"), "{e}");
    drop(ctx);
    assert_all_released();
}

#[test]
fn establish_times_out_when_the_agent_does_not_answer() {
    if with_fake_rdma("establish_times_out_when_the_agent_does_not_answer", &[]) {
        return;
    }
    let (listener, port) = cm::CmListener::bind(LOCALHOST).unwrap();
    let p = cm::resolve(SocketAddr::new(LOCALHOST, port), T).unwrap();
    let ctx = p.context().clone();
    let pd = ctx.alloc_pd().unwrap();
    let cq = ctx.create_cq(DEPTH).unwrap();
    let (tx, rx) = mpsc::channel();
    let client = thread::spawn(move || {
        let mut p = p;
        let qp = p
            .create_qp(
                &pd,
                &QpInit {
                    send_cq: &cq,
                    recv_cq: &cq,
                    max_send_wr: DEPTH,
                    max_recv_wr: DEPTH,
                },
            )
            .unwrap();
        let wait = Duration::from_millis(300);
        let start = Instant::now();
        let e = p.establish(wait).unwrap_err();
        let took = start.elapsed();
        assert!(
            matches!(
                e,
                cm::CmError::Timeout {
                    waiting_for: "established connection",
                    ..
                }
            ),
            "{e:?}"
        );
        assert!(
            took >= wait && took < wait + Duration::from_secs(1),
            "{took:?}"
        );
        assert_eq!(qp.state(), QpState::Init, "never connected");
        tx.send(()).unwrap();
    });
    // The agent holds the request without answering until the client gave up.
    let pending = listener.get_request(T).unwrap();
    rx.recv().unwrap();
    drop(pending);
    client.join().unwrap();
    drop((listener, ctx));
    assert_all_released();
}

#[test]
fn two_connections_through_one_listener_stay_separate() {
    if with_fake_rdma("two_connections_through_one_listener_stay_separate", &[]) {
        return;
    }
    let (listener, port) = cm::CmListener::bind(LOCALHOST).unwrap();
    let agent = thread::spawn(move || {
        let ends: Vec<End> = (0..2)
            .map(|_| set_up(listener.get_request(T).unwrap(), 1).unwrap())
            .collect();
        // Each connection echoes what came in on it, on the same one.
        for (i, end) in ends.iter().enumerate() {
            let wc = poll_n(&end.cq, 1)[0];
            assert_eq!((wc.opcode, wc.status), (WcOpcode::Recv, WcStatus::Success));
            let mut got = vec![0; wc.byte_len as usize];
            end.mr.read(0, &mut got).unwrap();
            send(end, i as u64, 4096, &got);
            assert!(poll_n(&end.cq, 1)[0].status.is_success());
        }
        ends
    });
    let clients: Vec<_> = (0..2u8)
        .map(|i| {
            thread::spawn(move || {
                let p = cm::resolve(SocketAddr::new(LOCALHOST, port), T).unwrap();
                let end = set_up(p, 1).unwrap();
                let mine = vec![b'a' + i; 100 + usize::from(i)];
                send(&end, 7, 4096, &mine);
                let wcs = poll_n(&end.cq, 2);
                let recv = wcs.iter().find(|c| c.opcode == WcOpcode::Recv).unwrap();
                let mut echo = vec![0; recv.byte_len as usize];
                end.mr.read(0, &mut echo).unwrap();
                assert_eq!(echo, mine, "the echo came back on this connection");
                end
            })
        })
        .collect();
    let clients: Vec<End> = clients.into_iter().map(|c| c.join().unwrap()).collect();
    let agents = agent.join().unwrap();
    let mut peers: Vec<u32> = agents.iter().map(|e| e.qp.qp_num()).collect();
    peers.extend(clients.iter().map(|e| e.qp.qp_num()));
    peers.sort_unstable();
    peers.dedup();
    assert_eq!(peers.len(), 4, "four distinct queue pairs");
    drop((agents, clients));
    assert_all_released();
}

#[test]
fn dropping_one_end_is_seen_by_the_peer() {
    if with_fake_rdma("dropping_one_end_is_seen_by_the_peer", &[]) {
        return;
    }
    let (agent, client) = connect_pair(2);
    drop(client);
    // The agent's next send finds no one: it fails, the queue pair goes to
    // the error state and its posted receives are flushed.
    send(&agent, 9, 4096, b"anyone there?");
    let wcs = poll_n(&agent.cq, 3);
    let sent = wcs.iter().find(|c| c.wr_id == 9).unwrap();
    assert_eq!(sent.status, WcStatus::RetryExceeded, "{wcs:?}");
    let mut flushed: Vec<u64> = wcs
        .iter()
        .filter(|c| c.status == WcStatus::WrFlush)
        .map(|c| c.wr_id)
        .collect();
    flushed.sort_unstable();
    assert_eq!(flushed, vec![100, 101], "{wcs:?}");
    assert_eq!(agent.qp.state(), QpState::Error);
    drop(agent);
    assert_all_released();
}

#[test]
fn missing_rdma_cm_device_names_the_device_file() {
    if with_fake_rdma(
        "missing_rdma_cm_device_names_the_device_file",
        &[("FAKE_RDMACM_NO_DEVICE", "1")],
    ) {
        return;
    }
    // Verbs still work; RDMA CM says what is missing.
    assert_eq!(rdma_core::availability().unwrap(), vec![FAKE_DEVICE]);
    let e = cm::CmListener::bind(LOCALHOST).unwrap_err();
    let text = e.to_string();
    assert!(
        matches!(
            e,
            cm::CmError::Call {
                call: "rdma_create_event_channel",
                ..
            }
        ),
        "{e:?}"
    );
    assert!(
        text.contains("/dev/infiniband/rdma_cm") && text.contains("rdma_ucm"),
        "{text}"
    );
    let e = cm::resolve(SocketAddr::new(LOCALHOST, 7471), T).unwrap_err();
    assert!(e.to_string().contains("/dev/infiniband/rdma_cm"), "{e}");
    assert_all_released();
}

#[test]
fn roce_fabric_is_seen_through_the_cm_context() {
    if with_fake_rdma(
        "roce_fabric_is_seen_through_the_cm_context",
        &[("FAKE_IBV_LINK_LAYER", "ethernet")],
    ) {
        return;
    }
    let (listener, port) = cm::CmListener::bind(LOCALHOST).unwrap();
    let p = cm::resolve(SocketAddr::new(LOCALHOST, port), T).unwrap();
    assert_eq!(p.context().fabric(), Fabric::Roce);
    drop((p, listener));
    assert_all_released();
}
