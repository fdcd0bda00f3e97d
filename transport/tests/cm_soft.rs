//! The connection manager over the `soft` provider: an agent listens, a
//! client connects, both queue pairs are usable when `establish` returns;
//! and every way a set-up can go wrong ends with an error in bounded time.

use std::net::{Ipv4Addr, SocketAddr};
use std::thread;
use std::time::{Duration, Instant};

use rcud_transport::verbs::cm::{self, CmError, Listener, Pending};
use rcud_transport::verbs::{
    Access, Completion, CompletionQueue, MemoryRegion, ProtectionDomain, Provider, QpInit, QpState,
    QueuePair, RecvWr, SendOp, SendWr, WcOpcode, WcStatus,
};

const T: Duration = Duration::from_secs(10);

fn localhost(port: u16) -> SocketAddr {
    SocketAddr::new(Ipv4Addr::LOCALHOST.into(), port)
}

/// A connection's objects on one end; the queue pair first, so that it goes
/// before the region its receive names.
struct End {
    qp: QueuePair,
    mr: MemoryRegion,
    send_cq: CompletionQueue,
    recv_cq: CompletionQueue,
    _pd: ProtectionDomain,
}

/// Creates the objects on the connection's device and posts one receive.
fn prepare(p: &mut Pending) -> End {
    let ctx = p.context().clone();
    assert_eq!(ctx.device().provider, Provider::Soft);
    let pd = ctx.alloc_pd().unwrap();
    let mr = pd.alloc_mr(4096, Access::LOCAL_WRITE).unwrap();
    let send_cq = ctx.create_cq(16).unwrap();
    let recv_cq = ctx.create_cq(16).unwrap();
    let qp = p
        .create_qp(
            &pd,
            &QpInit {
                send_cq: &send_cq,
                recv_cq: &recv_cq,
                max_send_wr: 4,
                max_recv_wr: 4,
            },
        )
        .unwrap();
    qp.post_recv(&[RecvWr {
        wr_id: 7,
        buf: Some(mr.sge(0, 4096)),
    }])
    .unwrap();
    End {
        qp,
        mr,
        send_cq,
        recv_cq,
        _pd: pd,
    }
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

fn one(cq: &CompletionQueue) -> Completion {
    let mut wc = [blank()];
    let deadline = Instant::now() + T;
    while cq.poll_wait(&mut wc, Duration::from_millis(50)).unwrap() == 0 {
        assert!(Instant::now() < deadline, "no completion");
    }
    wc[0]
}

fn say(end: &End, bytes: &[u8]) {
    end.mr.write(2048, bytes).unwrap();
    end.qp
        .post_send(&[SendWr::new(
            1,
            SendOp::Send,
            Some(end.mr.sge(2048, bytes.len())),
        )])
        .unwrap();
    assert!(one(&end.send_cq).status.is_success());
}

fn hear(end: &End) -> Vec<u8> {
    let wc = one(&end.recv_cq);
    assert!(wc.status.is_success(), "{wc:?}");
    assert_eq!(wc.wr_id, 7);
    let mut b = vec![0u8; wc.byte_len as usize];
    end.mr.read(0, &mut b).unwrap();
    b
}

#[test]
fn a_connection_sends_both_ways_as_soon_as_it_is_established() {
    let (listener, port) = Listener::bind(Provider::Soft, Ipv4Addr::LOCALHOST.into()).unwrap();
    assert_eq!(listener.port(), port);
    let agent = thread::spawn(move || {
        let mut p = listener.get_request(T).unwrap();
        let end = prepare(&mut p);
        p.establish(T).unwrap();
        // The client's receive is posted: sending at once is legal.
        say(&end, b"from the agent");
        assert_eq!(hear(&end), b"from the client");
        end
    });
    let mut p = cm::resolve(Provider::Soft, localhost(port), T).unwrap();
    let end = prepare(&mut p);
    p.establish(T).unwrap();
    say(&end, b"from the client");
    assert_eq!(hear(&end), b"from the agent");
    let agent_end = agent.join().unwrap();
    // The peer's queue pair going away is seen.
    drop(agent_end);
    let deadline = Instant::now() + T;
    while end.qp.state() != QpState::Error {
        assert!(Instant::now() < deadline, "the peer's end was not noticed");
        let mut wc = [blank()];
        let _ = end.recv_cq.poll_wait(&mut wc, Duration::from_millis(20));
    }
}

#[test]
fn two_connections_through_one_listener_stay_apart() {
    let (listener, port) = Listener::bind(Provider::Soft, Ipv4Addr::LOCALHOST.into()).unwrap();
    let agent = thread::spawn(move || {
        let mut ends = Vec::new();
        for _ in 0..2 {
            let mut p = listener.get_request(T).unwrap();
            let end = prepare(&mut p);
            p.establish(T).unwrap();
            let got = hear(&end);
            say(&end, &[got, b" back".to_vec()].concat());
            ends.push(end);
        }
        ends
    });
    let mut clients = Vec::new();
    for name in [&b"one"[..], b"two"] {
        let mut p = cm::resolve(Provider::Soft, localhost(port), T).unwrap();
        let end = prepare(&mut p);
        p.establish(T).unwrap();
        say(&end, name);
        clients.push((end, name));
    }
    for (end, name) in &clients {
        assert_eq!(hear(end), [*name, b" back"].concat());
    }
    agent.join().unwrap();
}

#[test]
fn waiting_for_a_request_that_never_comes_times_out() {
    let (listener, _port) = Listener::bind(Provider::Soft, Ipv4Addr::LOCALHOST.into()).unwrap();
    let started = Instant::now();
    let err = listener
        .get_request(Duration::from_millis(200))
        .unwrap_err();
    assert!(matches!(err, CmError::Timeout { .. }), "{err}");
    let waited = started.elapsed();
    assert!(
        waited >= Duration::from_millis(200) && waited < Duration::from_secs(5),
        "{waited:?}"
    );
}

#[test]
fn connecting_where_nobody_listens_names_the_cause() {
    let (listener, port) = Listener::bind(Provider::Soft, Ipv4Addr::LOCALHOST.into()).unwrap();
    drop(listener);
    let err = cm::resolve(Provider::Soft, localhost(port), T).unwrap_err();
    assert!(err.to_string().contains("nobody listens"), "{err}");
}

#[test]
fn a_request_dropped_unanswered_fails_the_client() {
    let (listener, port) = Listener::bind(Provider::Soft, Ipv4Addr::LOCALHOST.into()).unwrap();
    let agent = thread::spawn(move || {
        // Taken, then dropped before establish: the request is refused.
        drop(listener.get_request(T).unwrap());
    });
    let mut p = cm::resolve(Provider::Soft, localhost(port), T).unwrap();
    let _end = prepare(&mut p);
    let started = Instant::now();
    let err = p.establish(T).unwrap_err();
    assert!(matches!(err, CmError::Unexpected { .. }), "{err}");
    assert!(started.elapsed() < Duration::from_secs(5));
    agent.join().unwrap();
}

#[test]
fn an_agent_that_never_answers_times_the_client_out() {
    let (listener, port) = Listener::bind(Provider::Soft, Ipv4Addr::LOCALHOST.into()).unwrap();
    let mut p = cm::resolve(Provider::Soft, localhost(port), T).unwrap();
    let _end = prepare(&mut p);
    let err = p.establish(Duration::from_millis(300)).unwrap_err();
    assert!(matches!(err, CmError::Timeout { .. }), "{err}");
    drop(listener);
}

#[test]
fn establish_needs_a_queue_pair_and_only_one() {
    let (listener, port) = Listener::bind(Provider::Soft, Ipv4Addr::LOCALHOST.into()).unwrap();
    let p = cm::resolve(Provider::Soft, localhost(port), T).unwrap();
    let err = p.establish(T).unwrap_err();
    assert!(matches!(err, CmError::Misuse(_)), "{err}");
    let mut p = cm::resolve(Provider::Soft, localhost(port), T).unwrap();
    let _end = prepare(&mut p);
    let ctx = p.context().clone();
    let pd = ctx.alloc_pd().unwrap();
    let cq = ctx.create_cq(4).unwrap();
    let err = p
        .create_qp(
            &pd,
            &QpInit {
                send_cq: &cq,
                recv_cq: &cq,
                max_send_wr: 1,
                max_recv_wr: 1,
            },
        )
        .unwrap_err();
    assert!(matches!(err, CmError::Misuse(_)), "{err}");
    drop(listener);
}
