//! RDMA faults against the whole server: a client that breaks the CSR or MSR
//! protocol at the verbs level (a send with no receive posted, an RDMA write
//! with a wrong key or out of bounds). The fault ends that session; the
//! server keeps serving everyone else.
//!
//! The hostile client speaks the real set-up (TCP hello naming the module,
//! the agent's offer of the first port, then the module's sequence through
//! the connection manager) with verbs objects of its own on the `soft`
//! provider (transport/tests/rogue), so it can post what a correct module
//! never would. `--max-clients 1` makes the end of its session observable: the next
//! client is admitted only once the hostile session's agent is gone.

#[path = "../../transport/tests/rogue/mod.rs"]
mod rogue;
mod support;

use std::net::TcpStream;
use std::time::{Duration, Instant};

use rcud_proto::handshake::{self, ClientHello};
use rcud_proto::ops::req;
use rcud_transport::bootstrap::TransportKind;
use rcud_transport::setup::{self, Rendezvous};
use rcud_transport::verbs::{QpState, RemoteAddr, SendOp, SendWr, WcStatus};
use rogue::{RogueCsr, RogueMsr};
use support::{Conn, ConnectError, ServerProc};

const CHUNK: usize = 1 << 20;

/// TCP connection with the hello done, ready for the RDMA description.
fn hello(addr: &str, kind: TransportKind) -> TcpStream {
    let mut s = TcpStream::connect(addr).expect("connect");
    s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    let hello = ClientHello::new("hostile").with_transport(kind.code());
    handshake::client_exchange(&mut s, &hello, None).expect("the handshake");
    s
}

/// The module's set-up as a client, after the hello, with the rogue's own
/// verbs objects.
fn rendezvous(s: &mut TcpStream, module: &str) -> (Rendezvous, u16) {
    setup::take_offer(s, module).expect("the server's RDMA offer")
}

/// Whether a new client is admitted within `limit` (with `--max-clients 1`,
/// only once the previous session has ended).
fn admitted_within(server: &ServerProc, limit: Duration) -> bool {
    let deadline = Instant::now() + limit;
    while Instant::now() < deadline {
        match Conn::connect(server.addr(), "bystander") {
            Ok(mut c) => {
                // A real session works.
                c.call(&req::Attach { gpu: 0, window: 0 }, &[], &mut [])
                    .expect("transport")
                    .expect("attach");
                let p = c.malloc(4096);
                c.memset(p, 7, 4096);
                let mut back = vec![0u8; 4096];
                c.dtoh(p, &mut back);
                assert!(back.iter().all(|&b| b == 7));
                c.free(p);
                return true;
            }
            Err(ConnectError::Refused(_)) => std::thread::sleep(Duration::from_millis(50)),
            Err(ConnectError::Failed(e)) => panic!("bystander: {e}"),
        }
    }
    false
}

/// A CSR client that sends more credits than the server posted receives for:
/// the send that finds no receive fails with "receiver not ready" (RNR) and
/// the hostile queue pair goes to the error state, as on hardware. The server
/// ends that session and keeps serving.
#[test]
fn csr_send_with_no_receive_posted() {
    let server = ServerProc::start(&["--max-clients", "1"]);
    let mut s = hello(server.addr(), TransportKind::Csr);
    let (rv, port) = rendezvous(&mut s, "CSR");
    let h = RogueCsr::connect(&rv, port, 9, CHUNK).expect("set-up");
    assert!(h.agent_chunks >= 9);

    // While the session is up, nobody else gets in.
    assert!(!admitted_within(&server, Duration::from_millis(300)));

    // The idle server holds a few credit receives on its control channel;
    // far more zero-length sends than that must hit one with none posted.
    let wrs: Vec<SendWr<'_>> = (0..40)
        .map(|i| SendWr::new(i, SendOp::Send, None))
        .collect();
    h.ctrl.qp.post_send(&wrs).unwrap();
    let wcs = h.ctrl.completions(40);
    let rnr = wcs
        .iter()
        .position(|wc| wc.status == WcStatus::RnrRetryExceeded)
        .unwrap_or_else(|| panic!("no RNR among {wcs:?}"));
    assert!(
        wcs[..rnr].iter().all(|wc| wc.status.is_success()),
        "{wcs:?}"
    );
    assert!(
        wcs[rnr + 1..]
            .iter()
            .all(|wc| wc.status == WcStatus::WrFlush),
        "requests after the failure are flushed: {wcs:?}"
    );
    assert_eq!(h.ctrl.qp.state(), QpState::Error);

    // The broken client goes away; its session ends and the server serves.
    drop(h);
    drop(s);
    assert!(
        admitted_within(&server, Duration::from_secs(10)),
        "the server did not end the broken session"
    );
}

/// An MSR client's RDMA write with a bad key or outside the server's receive
/// chunk: the server rejects it (remote access error at the writer) and its
/// queue pair fails, which ends the session on the server at once, while the
/// hostile client still holds its objects.
fn msr_bad_write(corrupt: impl Fn(RemoteAddr, u64) -> RemoteAddr) {
    let server = ServerProc::start(&["--max-clients", "1"]);
    let mut s = hello(server.addr(), TransportKind::Msr);
    let (rv, port) = rendezvous(&mut s, "MSR");
    let h = RogueMsr::connect(&rv, port, 9, CHUNK, |_| {}).expect("set-up");
    let region = h.agent_regions[0];
    assert!(!admitted_within(&server, Duration::from_millis(300)));

    let target = corrupt(region.at(0).unwrap(), region.len);
    h.out
        .qp
        .post_send(&[SendWr::new(
            1,
            SendOp::RdmaWrite(target),
            Some(h.out.setup.sge(0, 4096)),
        )])
        .unwrap();
    let wcs = h.out.completions(1);
    assert_eq!(wcs.len(), 1);
    assert_eq!(wcs[0].status, WcStatus::RemoteAccess, "{wcs:?}");

    // The server's side failed with it: the session ends although this
    // client has not gone away.
    assert!(
        admitted_within(&server, Duration::from_secs(10)),
        "the server did not end the session after a rejected write"
    );
    drop(h);
}

#[test]
fn msr_write_with_a_wrong_key() {
    msr_bad_write(|at, _| RemoteAddr {
        rkey: at.rkey ^ 0x5a5a,
        ..at
    });
}

#[test]
fn msr_write_out_of_bounds() {
    msr_bad_write(|at, len| RemoteAddr {
        addr: at.addr + len - 100,
        ..at
    });
}
