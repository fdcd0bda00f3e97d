//! The CSR and MSR modules on the `rdma-core` provider, set up through RDMA
//! CM exactly as on an adapter, against the stand-ins for libibverbs and
//! librdmacm (`fake_ibverbs.c`, `fake_rdmacm.c`): the agent's first port
//! offered over a loopback TCP bootstrap, the second port over the first
//! channel, staging chunks registered and receives posted before each
//! accept and connect, and every verbs and RDMA CM object released after.
//! Each test runs in a child process that loads the stand-ins.

use std::net::{Ipv4Addr, TcpListener, TcpStream};
use std::thread;
use std::time::{Duration, Instant};

use rcud_proto::frame::FrameHeader;
use rcud_proto::FrameKind;
use rcud_transport::bootstrap::{self, Role, TransportKind};
use rcud_transport::csr::{CsrChannel, CsrOptions, Polling};
use rcud_transport::msr::{MsrChannel, MsrOptions};
use rcud_transport::setup::{self, Rendezvous};
use rcud_transport::verbs::Provider;
use rcud_transport::{Channel, TcpOptions};

mod support;

use support::fake_rdma::{
    fake_async_events_unacked, fake_cm_live_objects, fake_inject_async_event,
    fake_verbs_live_objects, with_fake_rdma,
};

fn frame(id: u32, bulk: usize) -> FrameHeader {
    FrameHeader {
        flags: 0,
        kind: FrameKind::REQUEST,
        op: 1,
        body_len: 3,
        id,
        bulk_len: bulk as u64,
    }
}

/// Frames one way, then their echo back.
fn exchange(mut a: Box<dyn Channel>, mut b: Box<dyn Channel>) {
    let payload: Vec<u8> = (0..700_000u32).map(|i| (i % 253) as u8).collect();
    let sent = payload.clone();
    let t = thread::spawn(move || {
        for id in 0..3 {
            a.send_frame(&frame(id, sent.len()), b"abc", &sent).unwrap();
        }
        a.flush().unwrap();
        for id in 0..3 {
            let h = a.recv_header().unwrap();
            assert_eq!(h, frame(id, sent.len()));
            a.recv_body(3).unwrap();
            a.discard_bulk(h.bulk_len).unwrap();
        }
        a
    });
    // All received before the echo: both ends sending more than a window
    // at once would wait on each other, as with TCP.
    let mut echo = Vec::new();
    for id in 0..3 {
        let h = b.recv_header().unwrap();
        assert_eq!(h, frame(id, payload.len()));
        assert_eq!(b.recv_body(3).unwrap(), b"abc");
        let mut got = vec![0u8; payload.len()];
        b.recv_bulk_into(&mut got).unwrap();
        assert!(got == payload, "payload of frame {id}");
        echo.push((h, got));
    }
    for (h, got) in echo {
        b.send_frame(&h, b"abc", &got).unwrap();
    }
    b.flush().unwrap();
    drop(t.join().unwrap());
}

fn rendezvous() -> Rendezvous {
    Rendezvous::new(
        Provider::RdmaCore,
        Ipv4Addr::LOCALHOST.into(),
        Duration::from_secs(20),
    )
}

fn assert_all_released() {
    assert_eq!(fake_verbs_live_objects(), 0, "verbs objects left");
    assert_eq!(fake_cm_live_objects(), 0, "RDMA CM objects left");
}

#[test]
fn csr_sets_up_through_rdma_cm_and_falls_back_to_fewer_chunks() {
    // 2 regions per chunk: 36 chunks at each end do not fit in 100
    // registrations, so one end or both fall back to fewer.
    if with_fake_rdma(
        "csr_sets_up_through_rdma_cm_and_falls_back_to_fewer_chunks",
        &[("FAKE_IBV_MAX_MR", "100")],
    ) {
        return;
    }
    let opts = CsrOptions {
        chunk: 64 << 10,
        chunks: 36,
        polling: Polling::Event,
        zero_copy: true,
    };
    let agent_opts = opts.clone();
    let (client, agent) = setup::pair_with(
        &rendezvous(),
        "CSR",
        move |rv, first| CsrChannel::accept(rv, first, &|_| Ok(agent_opts.clone())),
        |rv, port| CsrChannel::connect(rv, port, &|_| Ok(opts.clone())),
    );
    let (client, agent) = (client.unwrap(), agent.unwrap());
    // Both ends register at the same time, so how the 100 registrations
    // (50 chunks) split between them varies; neither gets fewer than 14.
    let counts = [client.chunks(), agent.chunks()];
    for n in counts {
        assert!((12..=36).contains(&n) && n % 3 == 0, "{counts:?}");
    }
    assert!(counts.iter().sum::<usize>() <= 50, "{counts:?}");
    assert!(
        client.peer().starts_with("csr:fakeib0"),
        "{}",
        client.peer()
    );
    exchange(Box::new(client), Box::new(agent));
    assert_all_released();
}

#[test]
fn msr_sets_up_through_rdma_cm() {
    if with_fake_rdma("msr_sets_up_through_rdma_cm", &[]) {
        return;
    }
    let o = |chunks| MsrOptions {
        chunk: 64 << 10,
        chunks,
        ..MsrOptions::default()
    };
    let (client, agent) = setup::pair_with(
        &rendezvous(),
        "MSR",
        move |rv, first| MsrChannel::accept(rv, first, &|_| Ok(o(6))),
        |rv, port| MsrChannel::connect(rv, port, &|_| Ok(o(4))),
    );
    let (client, agent) = (client.unwrap(), agent.unwrap());
    assert_eq!((client.chunks(), agent.chunks()), (4, 6));
    exchange(Box::new(client), Box::new(agent));
    assert_all_released();
}

/// Both ends blocked in `recv_header` when the adapter reports a port error
/// (`IBV_EVENT_PORT_ERR`): both fail within a second, not after the
/// adapter's retry timeouts, and every later operation fails at once.
fn port_error_breaks(mut a: Box<dyn Channel>, mut b: Box<dyn Channel>) {
    a.send_frame(&frame(1, 10), b"abc", &[7; 10]).unwrap();
    a.flush().unwrap();
    assert_eq!(b.recv_header().unwrap(), frame(1, 10));
    b.recv_body(3).unwrap();
    b.discard_bulk(10).unwrap();
    let blocked = |mut ch: Box<dyn Channel>| {
        thread::spawn(move || {
            let r = ch.recv_header().map(drop);
            (ch, r, Instant::now())
        })
    };
    let (ta, tb) = (blocked(a), blocked(b));
    thread::sleep(Duration::from_millis(100));
    let fired = Instant::now();
    assert!(fake_inject_async_event(10, 0, 1) >= 1);
    for t in [ta, tb] {
        let (mut ch, r, at) = t.join().unwrap();
        assert!(r.is_err(), "recv_header returned a frame");
        let took = at.duration_since(fired);
        assert!(took < Duration::from_secs(1), "took {took:?}");
        let t = Instant::now();
        let r = ch
            .send_frame(&frame(2, 0), b"abc", &[])
            .and_then(|_| ch.flush());
        assert!(r.is_err(), "a send after the port error succeeded");
        assert!(ch.recv_header().is_err());
        assert!(t.elapsed() < Duration::from_secs(1), "{:?}", t.elapsed());
    }
}

#[test]
fn a_port_error_breaks_csr_and_msr_at_once() {
    if with_fake_rdma("a_port_error_breaks_csr_and_msr_at_once", &[]) {
        return;
    }
    let o = MsrOptions {
        chunk: 64 << 10,
        chunks: 4,
        ..MsrOptions::default()
    };
    let agent_o = o.clone();
    let (client, agent) = setup::pair_with(
        &rendezvous(),
        "MSR",
        move |rv, first| MsrChannel::accept(rv, first, &|_| Ok(agent_o.clone())),
        |rv, port| MsrChannel::connect(rv, port, &|_| Ok(o.clone())),
    );
    port_error_breaks(Box::new(client.unwrap()), Box::new(agent.unwrap()));
    let c = CsrOptions {
        chunk: 64 << 10,
        chunks: 9,
        polling: Polling::Event,
        zero_copy: true,
    };
    let agent_c = c.clone();
    let (client, agent) = setup::pair_with(
        &rendezvous(),
        "CSR",
        move |rv, first| CsrChannel::accept(rv, first, &|_| Ok(agent_c.clone())),
        |rv, port| CsrChannel::connect(rv, port, &|_| Ok(c.clone())),
    );
    port_error_breaks(Box::new(client.unwrap()), Box::new(agent.unwrap()));
    assert_eq!(fake_async_events_unacked(), 0);
    assert_all_released();
}

/// What the server's agent and the client do: the hello is done on a TCP
/// socket; the agent sees an rdma-core adapter, offers RDMA over it, and
/// both modules' channels come up on it.
#[test]
fn bootstrap_picks_the_adapter_and_sets_up_both_modules() {
    if with_fake_rdma(
        "bootstrap_picks_the_adapter_and_sets_up_both_modules",
        &[("RCUD_CSR_CHUNKS", "9"), ("RCUD_MSR_CHUNKS", "3")],
    ) {
        return;
    }
    for kind in [TransportKind::Csr, TransportKind::Msr] {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let agent = thread::spawn(move || {
            let (stream, _) = listener.accept().unwrap();
            stream
                .set_read_timeout(Some(Duration::from_secs(10)))
                .unwrap();
            bootstrap::establish(stream, kind, Role::Agent, &TcpOptions::default()).unwrap()
        });
        let stream = TcpStream::connect(addr).unwrap();
        stream
            .set_read_timeout(Some(Duration::from_secs(10)))
            .unwrap();
        let client =
            bootstrap::establish(stream, kind, Role::Client, &TcpOptions::default()).unwrap();
        let agent = agent.join().unwrap();
        let prefix = format!("{kind}:fakeib0");
        assert!(client.peer().starts_with(&prefix), "{}", client.peer());
        assert!(agent.peer().starts_with(&prefix), "{}", agent.peer());
        exchange(client, agent);
    }
    assert_all_released();
}

/// Without an RDMA CM device the agent cannot listen: the client is told
/// why instead of waiting.
#[test]
fn an_agent_without_rdma_cm_tells_the_client_why() {
    if with_fake_rdma(
        "an_agent_without_rdma_cm_tells_the_client_why",
        &[("FAKE_RDMACM_NO_DEVICE", "1")],
    ) {
        return;
    }
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let agent = thread::spawn(move || {
        let (stream, _) = listener.accept().unwrap();
        bootstrap::establish(
            stream,
            TransportKind::Csr,
            Role::Agent,
            &TcpOptions::default(),
        )
        .map(drop)
    });
    let stream = TcpStream::connect(addr).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    let err = bootstrap::establish(
        stream,
        TransportKind::Csr,
        Role::Client,
        &TcpOptions::default(),
    )
    .map(drop)
    .unwrap_err()
    .to_string();
    assert!(err.contains("the server cannot set up RDMA"), "{err}");
    assert!(err.contains("/dev/infiniband/rdma_cm"), "{err}");
    assert!(agent.join().unwrap().is_err());
}
