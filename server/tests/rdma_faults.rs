//! RDMA faults against the whole server: a client that breaks the CSR or MSR
//! protocol at the verbs level (a send with no receive posted, an RDMA write
//! with a wrong key or out of bounds). The fault ends that session; the
//! server keeps serving everyone else.
//!
//! The hostile client speaks the real set-up (TCP hello naming the module,
//! then the module's description over the same socket) with verbs objects of
//! its own on the `soft` provider, so it can post what a correct module never
//! would. `--max-clients 1` makes the end of its session observable: the next
//! client is admitted only once the hostile session's agent is gone.

mod support;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use rcud_proto::handshake::{self, ClientHello, ServerHello};
use rcud_proto::ops::req;
use rcud_transport::bootstrap::TransportKind;
use rcud_transport::verbs::{
    Access, Completion, CompletionQueue, Context, Endpoint, MemoryRegion, ProtectionDomain, QpInit,
    QpState, QueuePair, RecvWr, RemoteAddr, SendOp, SendWr, WcStatus, SOFT_DEVICE,
};
use support::{Conn, ConnectError, ServerProc};

const CHUNK: usize = 1 << 20;

/// TCP connection with the hello done, ready for the RDMA description.
fn hello(addr: &str, kind: TransportKind) -> TcpStream {
    let mut s = TcpStream::connect(addr).expect("connect");
    s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    s.write_all(&handshake::encode_hello(
        &ClientHello::new("hostile").with_transport(kind.code()),
    ))
    .unwrap();
    let mut prefix = [0u8; 4];
    s.read_exact(&mut prefix).unwrap();
    let mut body = vec![0u8; handshake::hello_len(prefix).unwrap()];
    s.read_exact(&mut body).unwrap();
    let h: ServerHello = handshake::decode_hello(&body).unwrap();
    assert!(h.accepted, "{}", h.message);
    s
}

/// Sends our description and reads the server's (length-prefixed).
fn exchange(s: &mut TcpStream, ours: &[u8]) -> Vec<u8> {
    s.write_all(&(ours.len() as u32).to_le_bytes()).unwrap();
    s.write_all(ours).unwrap();
    let mut len = [0u8; 4];
    s.read_exact(&mut len).unwrap();
    let mut theirs = vec![0u8; u32::from_le_bytes(len) as usize];
    s.read_exact(&mut theirs).unwrap();
    theirs
}

fn put_endpoint(b: &mut Vec<u8>, ep: &Endpoint) {
    b.extend_from_slice(&(ep.as_bytes().len() as u32).to_le_bytes());
    b.extend_from_slice(ep.as_bytes());
}

/// Reads the server's description: `magic`, chunk size, chunk count, two
/// endpoints, then the rest (MSR's receive regions).
fn parse(theirs: &[u8], magic: &[u8; 4]) -> (usize, Endpoint, Endpoint, Vec<u8>) {
    assert_eq!(&theirs[..4], magic);
    let u32_at = |o: usize| u32::from_le_bytes(theirs[o..o + 4].try_into().unwrap()) as usize;
    let chunk = u64::from_le_bytes(theirs[4..12].try_into().unwrap()) as usize;
    assert_eq!(chunk, CHUNK);
    let n = u32_at(12);
    let l1 = u32_at(16);
    let e1 = Endpoint::from_bytes(&theirs[20..20 + l1]);
    let l2 = u32_at(20 + l1);
    let e2 = Endpoint::from_bytes(&theirs[24 + l1..24 + l1 + l2]);
    (n, e1, e2, theirs[24 + l1 + l2..].to_vec())
}

/// Verbs objects of the hostile end: two queue pairs with their queues.
struct Hostile {
    qps: [QueuePair; 2],
    send_cqs: [CompletionQueue; 2],
    _recv_cqs: [CompletionQueue; 2],
    mrs: Vec<MemoryRegion>,
    pd: ProtectionDomain,
}

impl Hostile {
    fn new(recv_chunks: usize) -> Hostile {
        let ctx = Context::open_by_name(SOFT_DEVICE).unwrap();
        let pd = ctx.alloc_pd().unwrap();
        let cq = || ctx.create_cq(256).unwrap();
        let send_cqs = [cq(), cq()];
        let recv_cqs = [cq(), cq()];
        let qp = |i: usize| {
            pd.create_qp(&QpInit {
                send_cq: &send_cqs[i],
                recv_cq: &recv_cqs[i],
                max_send_wr: 64,
                max_recv_wr: 64,
            })
            .unwrap()
        };
        let qps = [qp(0), qp(1)];
        let mrs = (0..recv_chunks)
            .map(|_| {
                pd.alloc_mr(CHUNK, Access::LOCAL_WRITE | Access::REMOTE_WRITE)
                    .unwrap()
            })
            .collect();
        Hostile {
            qps,
            send_cqs,
            _recv_cqs: recv_cqs,
            mrs,
            pd,
        }
    }

    fn post_recvs(&self, qp: usize, n: usize, with_chunks: bool) {
        let wrs: Vec<RecvWr<'_>> = (0..n)
            .map(|i| RecvWr {
                wr_id: i as u64,
                buf: with_chunks.then(|| self.mrs[i].sge(0, CHUNK)),
            })
            .collect();
        self.qps[qp].post_recv(&wrs).unwrap();
    }

    /// Waits for the completions of `n` send work requests on queue pair `qp`.
    fn completions(&self, qp: usize, n: usize) -> Vec<Completion> {
        let mut out = Vec::new();
        let mut buf = vec![
            Completion {
                wr_id: 0,
                qp_num: 0,
                opcode: rcud_transport::verbs::WcOpcode::Send,
                status: WcStatus::Success,
                byte_len: 0,
                imm: None,
            };
            16
        ];
        let deadline = Instant::now() + Duration::from_secs(10);
        while out.len() < n && Instant::now() < deadline {
            let got = self.send_cqs[qp]
                .poll_wait(&mut buf, Duration::from_millis(50))
                .unwrap();
            out.extend_from_slice(&buf[..got]);
        }
        out
    }
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
    let h = Hostile::new(9);
    h.post_recvs(0, 9, true);
    h.post_recvs(1, 8, false);
    let mut ours = b"CSR1".to_vec();
    ours.extend_from_slice(&(CHUNK as u64).to_le_bytes());
    ours.extend_from_slice(&9u32.to_le_bytes());
    put_endpoint(&mut ours, &h.qps[0].endpoint());
    put_endpoint(&mut ours, &h.qps[1].endpoint());
    let (n, data, ctrl, rest) = parse(&exchange(&mut s, &ours), b"CSR1");
    assert!(rest.is_empty());
    h.qps[0].connect(&data).unwrap();
    h.qps[1].connect(&ctrl).unwrap();
    assert!(n >= 9);

    // While the session is up, nobody else gets in.
    assert!(!admitted_within(&server, Duration::from_millis(300)));

    // The idle server holds a few credit receives on its control channel;
    // far more zero-length sends than that must hit one with none posted.
    let wrs: Vec<SendWr<'_>> = (0..40)
        .map(|i| SendWr::new(i, SendOp::Send, None))
        .collect();
    h.qps[1].post_send(&wrs).unwrap();
    let wcs = h.completions(1, 40);
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
    assert_eq!(h.qps[1].state(), QpState::Error);

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
    let h = Hostile::new(9);
    // [tx, rx]: flow-control receives on tx, notification receives on rx.
    h.post_recvs(0, 9, false);
    h.post_recvs(1, 9, false);
    let mut ours = b"MSR1".to_vec();
    ours.extend_from_slice(&(CHUNK as u64).to_le_bytes());
    ours.extend_from_slice(&9u32.to_le_bytes());
    put_endpoint(&mut ours, &h.qps[0].endpoint());
    put_endpoint(&mut ours, &h.qps[1].endpoint());
    for mr in &h.mrs {
        ours.extend_from_slice(&mr.remote().to_bytes());
    }
    let (n, tx, rx, regions) = parse(&exchange(&mut s, &ours), b"MSR1");
    assert_eq!(regions.len(), n * 20);
    let region = rcud_transport::verbs::RemoteRegion::from_bytes(&regions[..20]).unwrap();
    // Our writes go to the server's incoming queue pair, and the other way.
    h.qps[0].connect(&rx).unwrap();
    h.qps[1].connect(&tx).unwrap();
    assert!(!admitted_within(&server, Duration::from_millis(300)));

    let src =
        h.pd.alloc_mr(4096, Access::LOCAL_WRITE)
            .expect("source region");
    let target = corrupt(region.at(0).unwrap(), region.len);
    h.qps[0]
        .post_send(&[SendWr::new(
            1,
            SendOp::RdmaWrite(target),
            Some(src.sge(0, 4096)),
        )])
        .unwrap();
    let wcs = h.completions(0, 1);
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
