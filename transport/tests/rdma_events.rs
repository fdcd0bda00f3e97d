//! RDMA asynchronous events over the `soft` provider: each injected event
//! (port error, device error, fatal queue-pair error; by API and by the
//! `RCUD_SOFT_RDMA_FAULT` knob) breaks live CSR and MSR channels: threads
//! blocked in `recv_header` on both ends return an error within a second,
//! and every later operation fails at once. Non-fatal events only reach the
//! subscribers.
//!
//! The injection API and the knob are process-wide, so the tests of this
//! binary run one at a time (`SERIAL`), and those that need the environment
//! run this binary again as a child with it; the two-process tests run an
//! echoing client in a child whose knob breaks its port mid-session.

use std::io::Write;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::Receiver;
use std::sync::{Mutex, MutexGuard};
use std::thread;
use std::time::{Duration, Instant};

use rcud_transport::csr::{CsrChannel, CsrOptions, Polling};
use rcud_transport::msr::{MsrChannel, MsrOptions};
use rcud_transport::setup;
use rcud_transport::verbs::soft::{self, Fault, FaultKind, FAULT_ENV};
use rcud_transport::verbs::{
    Access, AsyncEvent, Context, QpInit, QpState, RecvWr, SendOp, SendWr, VerbsError, WcStatus,
    SOFT_DEVICE,
};
use rcud_transport::{Channel, TransportError};

mod support;

use support::fake_rdma::run_in_child;
use support::*;

/// Prompt, generously: the waits test the queue pairs every 50 ms.
const PROMPT: Duration = Duration::from_secs(1);

fn serial() -> MutexGuard<'static, ()> {
    static SERIAL: Mutex<()> = Mutex::new(());
    let g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    soft::set_fault(None);
    g
}

fn csr(polling: Polling) -> (CsrChannel, CsrChannel) {
    CsrChannel::pair_local(&CsrOptions {
        polling,
        ..CsrOptions::default()
    })
    .unwrap()
}

fn msr(polling: Polling) -> (MsrChannel, MsrChannel) {
    MsrChannel::pair_local(&MsrOptions {
        polling,
        ..MsrOptions::default()
    })
    .unwrap()
}

/// One frame each way, to show the pair works.
fn exchange<C: Channel>(a: &mut C, b: &mut C) {
    send(a, 1, b"ping", &pattern(1, 3000), 1000);
    a.flush().unwrap();
    expect(b, 1, b"ping", &pattern(1, 3000), 1000);
    send(b, 2, b"pong", &pattern(2, 10), 10);
    b.flush().unwrap();
    expect(a, 2, b"pong", &pattern(2, 10), 10);
}

/// A thread blocked in `recv_header`; yields the channel, the outcome and
/// when it returned.
fn blocked<C: Channel + 'static>(
    mut ch: C,
) -> thread::JoinHandle<(C, Result<(), TransportError>, Instant)> {
    thread::spawn(move || {
        let r = ch.recv_header().map(|_| ());
        (ch, r, Instant::now())
    })
}

/// Every operation on a broken channel fails, each at once.
fn fails_at_once<C: Channel>(ch: &mut C, who: &str) {
    let t = Instant::now();
    let r = ch
        .send_frame(&header(9, 3, 0), b"abc", &[])
        .and_then(|_| ch.flush());
    assert!(r.is_err(), "{who}: a send after the event succeeded");
    assert!(t.elapsed() < PROMPT, "{who}: send took {:?}", t.elapsed());
    let t = Instant::now();
    assert!(ch.recv_header().is_err(), "{who}: a receive succeeded");
    assert!(
        t.elapsed() < PROMPT,
        "{who}: receive took {:?}",
        t.elapsed()
    );
}

/// Both ends blocked in `recv_header`; `fire` breaks the link; both return
/// an error within [`PROMPT`] and later operations fail at once.
fn both_blocked_then<C: Channel + 'static>(pair: (C, C), fire: impl FnOnce()) {
    let (mut a, mut b) = pair;
    exchange(&mut a, &mut b);
    let (ta, tb) = (blocked(a), blocked(b));
    thread::sleep(Duration::from_millis(100));
    assert!(!ta.is_finished() && !tb.is_finished(), "nothing was sent");
    let fired = Instant::now();
    fire();
    for (who, t) in [("a", ta), ("b", tb)] {
        let (mut ch, r, at) = within(Duration::from_secs(10), move || t.join().unwrap());
        let e = r.expect_err("recv_header returned a frame");
        let took = at.duration_since(fired);
        assert!(
            took < PROMPT,
            "{who}: recv_header took {took:?} to fail ({e})"
        );
        fails_at_once(&mut ch, who);
    }
}

/// The end that did not see the event: its waits fail at once. A send may
/// still be accepted when only the other direction's queue pair failed (as
/// a TCP write after the peer reset), but the receive after it fails.
fn peer_fails_at_once<C: Channel>(ch: &mut C) {
    let t = Instant::now();
    assert!(ch.recv_header().is_err(), "peer: a receive succeeded");
    let r = ch
        .send_frame(&header(9, 3, 0), b"abc", &[])
        .and_then(|_| ch.flush())
        .and_then(|_| ch.recv_header().map(|_| ()));
    assert!(r.is_err(), "peer: a request and its reply went through");
    assert!(t.elapsed() < PROMPT, "peer: took {:?}", t.elapsed());
}

/// The knob fires on a send of `a` (the peer `b` receives nothing meanwhile,
/// so it posts no send of its own): that operation fails as a broken link,
/// later operations on `a` fail at once, and `b` gets the frames sent before
/// the fault, then an error, within [`PROMPT`].
fn knob_fires_on_send<C: Channel + 'static>(pair: (C, C), kind: FaultKind) {
    let (mut a, mut b) = pair;
    exchange(&mut a, &mut b);
    soft::set_fault(Some(Fault {
        kind,
        after_sends: 3,
    }));
    let mut sent = 0;
    let e = loop {
        let r = a
            .send_frame(&header(sent, 0, 4096), &[], &pattern(sent, 4096))
            .and_then(|_| a.flush());
        match r {
            Ok(()) => sent += 1,
            Err(e) => break e,
        }
        assert!(sent < 3, "the third send did not fail");
    };
    let fired = Instant::now();
    assert!(
        matches!(&e, TransportError::Io(io) if io.kind() == std::io::ErrorKind::ConnectionAborted),
        "the send that fired is a broken link: {e:?}"
    );
    assert_eq!(soft::fault(), None, "the knob fires once");
    fails_at_once(&mut a, "a");
    let (mut b, r) = within(Duration::from_secs(10), move || {
        let mut r = Ok(());
        for i in 0..sent {
            r = b.recv_header().and_then(|h| {
                assert_eq!(h.id, i);
                let mut got = vec![0u8; 4096];
                b.recv_bulk_into(&mut got)?;
                assert_eq!(got, pattern(i, 4096));
                Ok(())
            });
            if r.is_err() {
                break;
            }
        }
        if r.is_ok() {
            r = b.recv_header().map(|_| ());
        }
        (b, r)
    });
    assert!(r.is_err(), "the peer received a frame never sent");
    let took = fired.elapsed();
    assert!(took < PROMPT, "the peer took {took:?} to fail");
    peer_fails_at_once(&mut b);
}

fn port_error() {
    assert!(soft::inject(AsyncEvent::PortError { port: 1 }) > 0);
}

fn device_fatal() {
    assert!(soft::inject(AsyncEvent::DeviceFatal) > 0);
}

#[test]
fn port_error_breaks_csr_both_ways() {
    let _g = serial();
    for polling in [Polling::Event, Polling::Busy] {
        both_blocked_then(csr(polling), port_error);
    }
}

#[test]
fn port_error_breaks_msr_both_ways() {
    let _g = serial();
    for polling in [Polling::Event, Polling::Busy] {
        both_blocked_then(msr(polling), port_error);
    }
}

#[test]
fn device_fatal_breaks_csr_and_msr() {
    let _g = serial();
    both_blocked_then(csr(Polling::Event), device_fatal);
    both_blocked_then(msr(Polling::Event), device_fatal);
}

#[test]
fn qp_fatal_knob_breaks_csr_and_msr() {
    let _g = serial();
    knob_fires_on_send(csr(Polling::Event), FaultKind::QpFatal);
    knob_fires_on_send(msr(Polling::Busy), FaultKind::QpFatal);
}

#[test]
fn port_error_knob_breaks_csr_and_msr() {
    let _g = serial();
    knob_fires_on_send(csr(Polling::Busy), FaultKind::PortError);
    knob_fires_on_send(msr(Polling::Event), FaultKind::PortError);
}

/// Two connected queue pairs of two contexts, a receive posted on each.
struct Pair {
    ctx_a: Context,
    _ctx_b: Context,
    a: rcud_transport::verbs::QueuePair,
    b: rcud_transport::verbs::QueuePair,
    cq_a: rcud_transport::verbs::CompletionQueue,
    cq_b: rcud_transport::verbs::CompletionQueue,
    _mrs: Vec<rcud_transport::verbs::MemoryRegion>,
}

fn qp_pair() -> Pair {
    let ctx_a = Context::open_by_name(SOFT_DEVICE).unwrap();
    let ctx_b = Context::open_by_name(SOFT_DEVICE).unwrap();
    let mut mrs = Vec::new();
    let mut make = |ctx: &Context| {
        let pd = ctx.alloc_pd().unwrap();
        let cq = ctx.create_cq(16).unwrap();
        let qp = pd
            .create_qp(&QpInit {
                send_cq: &cq,
                recv_cq: &cq,
                max_send_wr: 4,
                max_recv_wr: 4,
            })
            .unwrap();
        let mr = pd.alloc_mr(64, Access::LOCAL_WRITE).unwrap();
        mrs.push(mr);
        (qp, cq)
    };
    let (a, cq_a) = make(&ctx_a);
    let (b, cq_b) = make(&ctx_b);
    a.connect(&b.endpoint()).unwrap();
    b.connect(&a.endpoint()).unwrap();
    for (qp, mr) in [(&a, &mrs[0]), (&b, &mrs[1])] {
        qp.post_recv(&[RecvWr {
            wr_id: 7,
            buf: Some(mr.sge(0, 64)),
        }])
        .unwrap();
    }
    Pair {
        ctx_a,
        _ctx_b: ctx_b,
        a,
        b,
        cq_a,
        cq_b,
        _mrs: mrs,
    }
}

fn next_event(rx: &Receiver<AsyncEvent>) -> AsyncEvent {
    rx.recv_timeout(PROMPT).expect("no event delivered")
}

#[test]
fn qp_fatal_takes_down_one_queue_pair_and_its_peer() {
    let _g = serial();
    let p = qp_pair();
    let other = qp_pair();
    let events = p.ctx_a.subscribe_events();
    let qp_num = p.a.qp_num();
    assert_eq!(soft::inject(AsyncEvent::QpFatal { qp_num }), 1);
    assert_eq!(next_event(&events), AsyncEvent::QpFatal { qp_num });
    assert_eq!(p.a.state(), QpState::Error);
    // Posting on it fails at once and says why.
    match p.a.post_send(&[SendWr::new(1, SendOp::Send, None)]) {
        Err(VerbsError::LinkDown { qp_num: n, event }) => {
            assert_eq!(n, qp_num);
            assert_eq!(event, AsyncEvent::QpFatal { qp_num });
        }
        r => panic!("post_send on a queue pair down: {r:?}"),
    }
    assert!(matches!(
        p.a.post_recv(&[RecvWr {
            wr_id: 1,
            buf: None
        }]),
        Err(VerbsError::LinkDown { .. })
    ));
    // Its receive and the peer's are flushed at once.
    for cq in [&p.cq_a, &p.cq_b] {
        let mut wc = [blank(); 2];
        let n = cq.poll_wait(&mut wc, PROMPT).unwrap();
        assert_eq!(n, 1);
        assert_eq!((wc[0].wr_id, wc[0].status), (7, WcStatus::WrFlush));
    }
    assert_eq!(p.b.state(), QpState::Error);
    // Another connection is untouched.
    assert_eq!(other.a.state(), QpState::ReadyToSend);
    other
        .b
        .post_recv(&[RecvWr {
            wr_id: 8,
            buf: None,
        }])
        .unwrap();
    other
        .a
        .post_send(&[SendWr::new(2, SendOp::Send, None)])
        .unwrap();
    let mut wc = [blank(); 2];
    assert_eq!(other.cq_b.poll_wait(&mut wc, PROMPT).unwrap(), 1);
    assert_eq!(wc[0].status, WcStatus::Success);
}

#[test]
fn lid_change_and_port_active_only_reach_subscribers() {
    let _g = serial();
    let p = qp_pair();
    let events = p.ctx_a.subscribe_events();
    assert_eq!(soft::inject(AsyncEvent::LidChange { port: 1 }), 0);
    assert_eq!(soft::inject(AsyncEvent::PortActive { port: 1 }), 0);
    // The soft device has one port: an error of another one changes nothing.
    assert_eq!(soft::inject(AsyncEvent::PortError { port: 2 }), 0);
    assert_eq!(next_event(&events), AsyncEvent::LidChange { port: 1 });
    assert_eq!(next_event(&events), AsyncEvent::PortActive { port: 1 });
    assert_eq!(next_event(&events), AsyncEvent::PortError { port: 2 });
    assert_eq!(p.a.state(), QpState::ReadyToSend);
    p.a.post_send(&[SendWr::new(1, SendOp::Send, None)])
        .unwrap();
    let mut wc = [blank(); 2];
    assert_eq!(p.cq_b.poll_wait(&mut wc, PROMPT).unwrap(), 1);
    assert_eq!(wc[0].status, WcStatus::Success);
    // A dropped receiver unsubscribes.
    drop(events);
    assert_eq!(soft::inject(AsyncEvent::LidChange { port: 1 }), 0);
}

fn blank() -> rcud_transport::verbs::Completion {
    rcud_transport::verbs::Completion {
        wr_id: 0,
        qp_num: 0,
        opcode: rcud_transport::verbs::WcOpcode::Send,
        status: WcStatus::Success,
        byte_len: 0,
        imm: None,
    }
}

#[test]
fn fault_knob_from_the_environment() {
    if run_in_child(
        "fault_knob_from_the_environment",
        &[(FAULT_ENV, " qp-fatal-after-sends:40 ")],
    ) {
        return;
    }
    // Alone in its child: no `serial()`, which would disarm the knob.
    assert_eq!(
        soft::fault(),
        None,
        "read when the first soft context opens"
    );
    drop(Context::open_by_name(SOFT_DEVICE).unwrap());
    assert_eq!(
        soft::fault(),
        Some(Fault {
            kind: FaultKind::QpFatal,
            after_sends: 40
        })
    );
    let (mut a, mut b) = csr(Polling::Event);
    let mut frames = 0;
    let broke = loop {
        let r = a
            .send_frame(&header(frames, 0, 0), &[], &[])
            .and_then(|_| a.flush())
            .and_then(|_| b.recv_header().map(|_| ()));
        if let Err(e) = r {
            break e;
        }
        frames += 1;
        assert!(frames < 100, "the knob never fired");
    };
    assert!(frames < 40, "fired after {frames} frames: {broke}");
    assert_eq!(soft::fault(), None, "the knob fires once");
    fails_at_once(&mut a, "a");
    fails_at_once(&mut b, "b");
}

#[test]
fn garbage_in_the_environment_is_a_clear_error() {
    if run_in_child(
        "garbage_in_the_environment_is_a_clear_error",
        &[(FAULT_ENV, "qp-fatal-after-sends:soon")],
    ) {
        return;
    }
    let e = Context::open_by_name(SOFT_DEVICE).unwrap_err().to_string();
    assert!(
        e.contains(FAULT_ENV)
            && e.contains("soon")
            && e.contains("expected qp-fatal-after-sends:N"),
        "{e}"
    );
    // Every soft context fails the same way, none panics.
    assert!(CsrChannel::pair_local(&CsrOptions::default()).is_err());
}

/// Set in the child of the two-process tests: the module it connects with.
const TWO_PROCESS_CHILD: &str = "RCUD_EVENTS_CHILD";

struct KillOnDrop(Child);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// The agent here, an echoing client in another process whose
/// `RCUD_SOFT_RDMA_FAULT` takes its port down on its 12th send: the agent,
/// blocked waiting for an echo, fails within a second while the client
/// process is still alive (the link broke, nobody died).
fn port_error_in_another_process(module: &str) {
    let _g = serial();
    let mut child = KillOnDrop(
        Command::new(std::env::current_exe().unwrap())
            .args(["--exact", "echo_child", "--nocapture", "--test-threads=1"])
            .env(TWO_PROCESS_CHILD, module)
            .env(FAULT_ENV, "port-error-after-sends:12")
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .spawn()
            .unwrap(),
    );
    let mut stdin = child.0.stdin.take().unwrap();
    let rv = setup::local();
    let (first, port) = rv.listen(module).unwrap();
    writeln!(stdin, "{port}").unwrap();
    let mut ch: Box<dyn Channel> = if module == "CSR" {
        let o = CsrOptions::default();
        Box::new(CsrChannel::accept(&rv, first, &|_| Ok(o.clone())).unwrap())
    } else {
        let o = MsrOptions::default();
        Box::new(MsrChannel::accept(&rv, first, &|_| Ok(o.clone())).unwrap())
    };
    let (echoed, took) = within(Duration::from_secs(30), move || {
        for i in 0..100u32 {
            let bulk = pattern(i, 5000);
            let sent = ch
                .send_frame(&header(i, 4, bulk.len()), b"ping", &bulk)
                .and_then(|_| ch.flush());
            let t = Instant::now();
            let back = sent.and_then(|_| {
                let h = ch.recv_header()?;
                assert_eq!(h, header(i, 4, bulk.len()));
                ch.recv_body(4)?;
                let mut got = vec![0u8; bulk.len()];
                ch.recv_bulk_into(&mut got)?;
                assert!(got == bulk, "echo {i}");
                Ok(())
            });
            if back.is_err() {
                return (i, t.elapsed());
            }
        }
        panic!("the client's knob never fired");
    });
    assert!(echoed > 0, "not even one echo came back");
    assert!(took < PROMPT, "the agent took {took:?} to notice");
    assert!(
        child.0.try_wait().unwrap().is_none(),
        "the client process died: the test would show nothing"
    );
    drop(stdin);
}

#[test]
fn port_error_in_another_process_breaks_csr() {
    port_error_in_another_process("CSR");
}

#[test]
fn port_error_in_another_process_breaks_msr() {
    port_error_in_another_process("MSR");
}

/// The client of the two-process tests; a no-op in a normal run. Echoes
/// frames until a call fails, then waits for the parent to close its stdin.
#[test]
fn echo_child() {
    let Ok(module) = std::env::var(TWO_PROCESS_CHILD) else {
        return;
    };
    let mut line = String::new();
    std::io::stdin().read_line(&mut line).unwrap();
    let port = line.trim().parse().unwrap();
    let rv = setup::local();
    let mut ch: Box<dyn Channel> = if module == "CSR" {
        let o = CsrOptions::default();
        Box::new(CsrChannel::connect(&rv, port, &|_| Ok(o.clone())).unwrap())
    } else {
        let o = MsrOptions::default();
        Box::new(MsrChannel::connect(&rv, port, &|_| Ok(o.clone())).unwrap())
    };
    let echo = |ch: &mut Box<dyn Channel>| -> Result<(), TransportError> {
        let h = ch.recv_header()?;
        let body = ch.recv_body(h.body_len)?.to_vec();
        let mut bulk = vec![0u8; h.bulk_len as usize];
        ch.recv_bulk_into(&mut bulk)?;
        ch.send_frame(&h, &body, &bulk)?;
        ch.flush()
    };
    while echo(&mut ch).is_ok() {}
    // Alive until the parent is done: the link broke, not the process.
    let _ = std::io::stdin().read_line(&mut line);
}
