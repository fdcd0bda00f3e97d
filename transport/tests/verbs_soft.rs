//! The `soft` verbs provider: RC semantics in one process and across
//! processes. The two-process tests run this test binary again as the peer
//! (`RCUD_VERBS_CHILD` names its role); endpoints travel over stdin/stdout as
//! they would over a TCP bootstrap.

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::time::{Duration, Instant};

use rcud_transport::verbs::{
    Access, Completion, CompletionQueue, Context, Endpoint, MemoryRegion, ProtectionDomain, QpInit,
    QpState, QueuePair, RecvWr, RemoteRegion, SendOp, SendWr, VerbsError, WcOpcode, WcStatus,
    SOFT_DEVICE,
};

const CHILD_ENV: &str = "RCUD_VERBS_CHILD";
const RW: Access = Access::LOCAL_WRITE;

fn rw_remote() -> Access {
    Access::LOCAL_WRITE | Access::REMOTE_WRITE
}

/// One side: a protection domain, one completion queue, one queue pair.
struct Side {
    pd: ProtectionDomain,
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

fn pair(depth: u32) -> (Side, Side) {
    let ctx = Context::open_by_name(SOFT_DEVICE).unwrap();
    let a = side(&ctx, depth);
    let b = side(&ctx, depth);
    a.qp.connect(&b.qp.endpoint()).unwrap();
    b.qp.connect(&a.qp.endpoint()).unwrap();
    (a, b)
}

fn empty() -> Completion {
    Completion {
        wr_id: 0,
        qp_num: 0,
        opcode: WcOpcode::Send,
        status: WcStatus::Success,
        byte_len: 0,
        imm: None,
    }
}

/// Polls exactly `n` completions (waiting for events), or panics after 5 s.
fn poll_n(cq: &CompletionQueue, n: usize) -> Vec<Completion> {
    let mut got = Vec::new();
    let mut buf = vec![empty(); 64];
    let deadline = Instant::now() + Duration::from_secs(5);
    while got.len() < n {
        let left = deadline.saturating_duration_since(Instant::now());
        assert!(
            !left.is_zero(),
            "only {} of {n} completions: {got:?}",
            got.len()
        );
        let want = (n - got.len()).min(buf.len());
        let k = cq.poll_wait(&mut buf[..want], left).unwrap();
        got.extend_from_slice(&buf[..k]);
    }
    got
}

fn one(cq: &CompletionQueue) -> Completion {
    poll_n(cq, 1)[0]
}

fn assert_nothing(cq: &CompletionQueue) {
    let mut buf = [empty(); 4];
    assert_eq!(cq.poll(&mut buf).unwrap(), 0, "{buf:?}");
}

#[test]
fn devices_list_soft_and_unknown_names_are_clear() {
    let names: Vec<_> = rcud_transport::verbs::devices()
        .into_iter()
        .map(|d| d.name)
        .collect();
    assert!(names.iter().any(|n| n == SOFT_DEVICE));
    let err = Context::open_by_name("mlx5_9").unwrap_err();
    assert!(err.to_string().contains("soft0"), "{err}");
}

#[test]
fn send_recv_with_immediate() {
    let (a, b) = pair(8);
    let src = a.pd.alloc_mr(64, Access::NONE).unwrap();
    let dst = b.pd.alloc_mr(64, RW).unwrap();
    src.write(0, b"hello, soft verbs").unwrap();
    b.qp.post_recv(&[RecvWr {
        wr_id: 7,
        buf: Some(dst.sge(8, 32)),
    }])
    .unwrap();
    a.qp.post_send(&[SendWr::new(
        1,
        SendOp::SendWithImm(0xabcd),
        Some(src.sge(0, 17)),
    )])
    .unwrap();
    let s = one(&a.cq);
    assert_eq!(
        (s.wr_id, s.opcode, s.status, s.qp_num),
        (1, WcOpcode::Send, WcStatus::Success, a.qp.qp_num())
    );
    let r = one(&b.cq);
    assert_eq!(
        (r.wr_id, r.opcode, r.status, r.byte_len, r.imm),
        (7, WcOpcode::Recv, WcStatus::Success, 17, Some(0xabcd))
    );
    let mut got = [0u8; 17];
    dst.read(8, &mut got).unwrap();
    assert_eq!(&got, b"hello, soft verbs");

    // A zero-length send (a notification) into a receive without a buffer.
    b.qp.post_recv(&[RecvWr {
        wr_id: 8,
        buf: None,
    }])
    .unwrap();
    a.qp.post_send(&[SendWr::new(2, SendOp::Send, None).signaled(false)])
        .unwrap();
    let r = one(&b.cq);
    assert_eq!((r.wr_id, r.byte_len, r.imm), (8, 0, None));
    assert_nothing(&a.cq);
}

#[test]
fn rdma_write_and_write_with_imm_land_in_the_peer_region() {
    let (a, b) = pair(8);
    let src = a.pd.alloc_mr(4096, Access::NONE).unwrap();
    let target = b.pd.alloc_mr(8192, rw_remote()).unwrap();
    let pattern: Vec<u8> = (0..4096u32).map(|i| (i * 7) as u8).collect();
    src.write(0, &pattern).unwrap();
    // The peer learns the region through bytes, as MSR exchanges addresses.
    let remote = RemoteRegion::from_bytes(&target.remote().to_bytes()).unwrap();

    a.qp.post_send(&[SendWr::new(
        1,
        SendOp::RdmaWrite(remote.at(100).unwrap()),
        Some(src.sge(0, 4096)),
    )])
    .unwrap();
    let c = one(&a.cq);
    assert_eq!(
        (c.opcode, c.status),
        (WcOpcode::RdmaWrite, WcStatus::Success)
    );
    assert_nothing(&b.cq); // the target of a plain write sees nothing
    let mut got = vec![0u8; 4096];
    target.read(100, &mut got).unwrap();
    assert_eq!(got, pattern);

    b.qp.post_recv(&[RecvWr {
        wr_id: 9,
        buf: None,
    }])
    .unwrap();
    a.qp.post_send(&[SendWr::new(
        2,
        SendOp::RdmaWriteWithImm(target.remote_addr(8192 - 10), 42),
        Some(src.sge(10, 10)),
    )])
    .unwrap();
    assert_eq!(one(&a.cq).status, WcStatus::Success);
    let r = one(&b.cq);
    assert_eq!(
        (r.wr_id, r.opcode, r.status, r.byte_len, r.imm),
        (
            9,
            WcOpcode::RecvRdmaWithImm,
            WcStatus::Success,
            10,
            Some(42)
        )
    );
    let mut tail = [0u8; 10];
    target.read(8182, &mut tail).unwrap();
    assert_eq!(&tail[..], &pattern[10..20]);
}

#[test]
fn send_without_posted_receive_is_rnr_and_breaks_the_connection() {
    let (a, b) = pair(8);
    let src = a.pd.alloc_mr(16, Access::NONE).unwrap();
    a.qp.post_send(&[SendWr::new(1, SendOp::Send, Some(src.sge(0, 16))).signaled(false)])
        .unwrap();
    let c = one(&a.cq);
    assert_eq!((c.wr_id, c.status), (1, WcStatus::RnrRetryExceeded));
    assert_eq!(a.qp.state(), QpState::Error);
    // Later requests flush, and so does the peer's side.
    a.qp.post_send(&[SendWr::new(2, SendOp::Send, None)])
        .unwrap();
    assert_eq!(one(&a.cq).status, WcStatus::WrFlush);
    let dst = b.pd.alloc_mr(16, RW).unwrap();
    b.qp.post_recv(&[RecvWr {
        wr_id: 5,
        buf: Some(dst.sge(0, 16)),
    }])
    .unwrap();
    let r = one(&b.cq);
    assert_eq!((r.wr_id, r.status), (5, WcStatus::WrFlush));
    assert_eq!(b.qp.state(), QpState::Error);
}

#[test]
fn write_with_imm_without_receive_is_rnr() {
    let (a, b) = pair(4);
    let src = a.pd.alloc_mr(16, Access::NONE).unwrap();
    let target = b.pd.alloc_mr(16, rw_remote()).unwrap();
    a.qp.post_send(&[SendWr::new(
        1,
        SendOp::RdmaWriteWithImm(target.remote_addr(0), 1),
        Some(src.sge(0, 16)),
    )])
    .unwrap();
    assert_eq!(one(&a.cq).status, WcStatus::RnrRetryExceeded);
}

#[test]
fn queue_depths_are_enforced() {
    let (a, b) = pair(4);
    let src = a.pd.alloc_mr(64, Access::NONE).unwrap();
    let target = b.pd.alloc_mr(64, rw_remote()).unwrap();
    let w = |id| {
        SendWr::new(
            id,
            SendOp::RdmaWrite(target.remote_addr(0)),
            Some(src.sge(0, 8)),
        )
    };
    a.qp.post_send(&[w(1), w(2), w(3)]).unwrap();
    // A list that does not fit is rejected whole.
    let err = a.qp.post_send(&[w(4), w(5)]).unwrap_err();
    assert!(
        matches!(
            err,
            VerbsError::QueueFull {
                queue: "send",
                depth: 4,
                ..
            }
        ),
        "{err}"
    );
    a.qp.post_send(&[w(4)]).unwrap();
    assert!(a.qp.post_send(&[w(5)]).is_err());
    // Polling completions frees the slots.
    let done = poll_n(&a.cq, 4);
    assert_eq!(
        done.iter().map(|c| c.wr_id).collect::<Vec<_>>(),
        [1, 2, 3, 4]
    );
    a.qp.post_send(&[w(5), w(6), w(7), w(8)]).unwrap();
    poll_n(&a.cq, 4);

    // Unsignaled requests hold their slots until a later signaled one is polled.
    let u = |id| w(id).signaled(false);
    a.qp.post_send(&[u(10), u(11), w(12)]).unwrap();
    assert!(a.qp.post_send(&[u(13), u(14)]).is_err());
    assert_eq!(one(&a.cq).wr_id, 12);
    a.qp.post_send(&[u(13), u(14), u(15), w(16)]).unwrap();
    assert_eq!(one(&a.cq).wr_id, 16);

    let dst = b.pd.alloc_mr(64, RW).unwrap();
    let r = |id| RecvWr {
        wr_id: id,
        buf: Some(dst.sge(0, 8)),
    };
    b.qp.post_recv(&[r(1), r(2), r(3), r(4)]).unwrap();
    let err = b.qp.post_recv(&[r(5)]).unwrap_err();
    assert!(
        matches!(
            err,
            VerbsError::QueueFull {
                queue: "receive",
                ..
            }
        ),
        "{err}"
    );
    // One consumed and polled receive frees one slot.
    a.qp.post_send(&[SendWr::new(20, SendOp::Send, Some(src.sge(0, 4)))])
        .unwrap();
    assert_eq!(one(&b.cq).wr_id, 1);
    b.qp.post_recv(&[r(5)]).unwrap();
    assert!(b.qp.post_recv(&[r(6)]).is_err());
}

#[test]
fn local_ranges_and_foreign_regions_are_rejected_at_post() {
    let (a, b) = pair(4);
    let src = a.pd.alloc_mr(64, Access::NONE).unwrap();
    let theirs = b.pd.alloc_mr(64, rw_remote()).unwrap();
    let err =
        a.qp.post_send(&[SendWr::new(1, SendOp::Send, Some(src.sge(60, 8)))])
            .unwrap_err();
    assert!(matches!(err, VerbsError::OutOfBounds { .. }), "{err}");
    let err =
        a.qp.post_send(&[SendWr::new(1, SendOp::Send, Some(theirs.sge(0, 8)))])
            .unwrap_err();
    assert!(matches!(err, VerbsError::Foreign(_)), "{err}");
    // Receiving needs LOCAL_WRITE.
    let err =
        a.qp.post_recv(&[RecvWr {
            wr_id: 1,
            buf: Some(src.sge(0, 8)),
        }])
        .unwrap_err();
    assert!(matches!(err, VerbsError::InvalidArgument(_)), "{err}");
    assert!(src.write(60, &[0; 8]).is_err());
    assert_nothing(&a.cq);
    assert_eq!(a.qp.state(), QpState::ReadyToSend);
}

fn remote_access_case(bad: impl Fn(&MemoryRegion, &MemoryRegion) -> SendOp) {
    let (a, b) = pair(4);
    let src = a.pd.alloc_mr(64, Access::NONE).unwrap();
    let target = b.pd.alloc_mr(64, rw_remote()).unwrap();
    let local_only = b.pd.alloc_mr(64, RW).unwrap();
    let dst = b.pd.alloc_mr(64, RW).unwrap();
    b.qp.post_recv(&[RecvWr {
        wr_id: 3,
        buf: Some(dst.sge(0, 64)),
    }])
    .unwrap();
    a.qp.post_send(&[SendWr::new(
        1,
        bad(&target, &local_only),
        Some(src.sge(0, 16)),
    )])
    .unwrap();
    let c = one(&a.cq);
    assert_eq!((c.wr_id, c.status), (1, WcStatus::RemoteAccess));
    assert_eq!(a.qp.state(), QpState::Error);
    let mut zero = [1u8; 64];
    target.read(0, &mut zero).unwrap();
    assert_eq!(zero, [0u8; 64], "a rejected write must not land");
    // The responder's connection is broken too: its receive flushes.
    let r = one(&b.cq);
    assert_eq!((r.wr_id, r.status), (3, WcStatus::WrFlush));
}

#[test]
fn wrong_rkey_is_a_remote_access_error() {
    remote_access_case(|t, _| {
        SendOp::RdmaWrite(rcud_transport::verbs::RemoteAddr {
            addr: t.addr(),
            rkey: t.rkey() ^ 0x5000,
        })
    });
}

#[test]
fn out_of_bounds_write_is_a_remote_access_error() {
    remote_access_case(|t, _| SendOp::RdmaWrite(t.remote_addr(56)));
}

#[test]
fn write_below_region_start_is_a_remote_access_error() {
    remote_access_case(|t, _| {
        SendOp::RdmaWriteWithImm(
            rcud_transport::verbs::RemoteAddr {
                addr: t.addr() - 8,
                rkey: t.rkey(),
            },
            0,
        )
    });
}

#[test]
fn write_without_remote_write_right_is_a_remote_access_error() {
    remote_access_case(|_, l| SendOp::RdmaWrite(l.remote_addr(0)));
}

#[test]
fn deregistered_region_is_a_remote_access_error() {
    let (a, b) = pair(4);
    let src = a.pd.alloc_mr(64, Access::NONE).unwrap();
    let gone = b.pd.alloc_mr(64, rw_remote()).unwrap();
    let addr = gone.remote_addr(0);
    drop(gone);
    // A new region may reuse the table entry, never the key.
    let _new = b.pd.alloc_mr(64, rw_remote()).unwrap();
    a.qp.post_send(&[SendWr::new(1, SendOp::RdmaWrite(addr), Some(src.sge(0, 8)))])
        .unwrap();
    assert_eq!(one(&a.cq).status, WcStatus::RemoteAccess);
}

#[test]
fn message_longer_than_receive_is_a_length_error() {
    let (a, b) = pair(4);
    let src = a.pd.alloc_mr(64, Access::NONE).unwrap();
    let dst = b.pd.alloc_mr(64, RW).unwrap();
    b.qp.post_recv(&[RecvWr {
        wr_id: 1,
        buf: Some(dst.sge(0, 8)),
    }])
    .unwrap();
    a.qp.post_send(&[SendWr::new(1, SendOp::Send, Some(src.sge(0, 9)))])
        .unwrap();
    assert_eq!(one(&a.cq).status, WcStatus::RemoteInvalidRequest);
    let r = one(&b.cq);
    assert_eq!((r.wr_id, r.status), (1, WcStatus::LocalLength));
}

#[test]
fn completions_arrive_in_order_under_many_posts() {
    let (a, b) = pair(64);
    let src = a.pd.alloc_mr(64 * 8, Access::NONE).unwrap();
    let dst = b.pd.alloc_mr(64 * 8, RW).unwrap();
    let total = 20_000u64;
    let mut sent = 0u64;
    let mut next_recv = 0u64;
    let mut received = 0u64;
    let mut send_done = 0u64;
    let mut buf = vec![empty(); 64];
    while received < total {
        let room = 64 - (next_recv - received);
        let recvs: Vec<_> = (0..room.min(total - next_recv))
            .map(|k| {
                let id = next_recv + k;
                RecvWr {
                    wr_id: id,
                    buf: Some(dst.sge((id % 64) as usize * 8, 8)),
                }
            })
            .collect();
        b.qp.post_recv(&recvs).unwrap();
        next_recv += recvs.len() as u64;
        let burst = (next_recv - sent).min(64 - (sent - send_done));
        let ids: Vec<u64> = (sent..sent + burst).collect();
        for id in &ids {
            src.write((id % 64) as usize * 8, &id.to_le_bytes())
                .unwrap();
        }
        let wrs: Vec<_> = ids
            .iter()
            .map(|&id| {
                SendWr::new(
                    id,
                    SendOp::SendWithImm(id as u32),
                    Some(src.sge((id % 64) as usize * 8, 8)),
                )
            })
            .collect();
        a.qp.post_send(&wrs).unwrap();
        sent += burst;
        // One CQ per side here: a's completions are sends, b's receives.
        let n = a.cq.poll(&mut buf).unwrap();
        for c in &buf[..n] {
            assert_eq!((c.wr_id, c.status), (send_done, WcStatus::Success));
            send_done += 1;
        }
        let n = b.cq.poll(&mut buf).unwrap();
        for c in &buf[..n] {
            assert_eq!(c.wr_id, received);
            assert_eq!(c.imm, Some(received as u32));
            let mut v = [0u8; 8];
            dst.read((received % 64) as usize * 8, &mut v).unwrap();
            assert_eq!(u64::from_le_bytes(v), received);
            received += 1;
        }
    }
    for c in poll_n(&a.cq, (total - send_done) as usize) {
        assert_eq!(c.wr_id, send_done);
        send_done += 1;
    }
}

#[test]
fn wait_for_event_wakes_on_a_completion_and_times_out() {
    let (a, b) = pair(4);
    let t0 = Instant::now();
    assert!(!b.cq.wait(Duration::from_millis(50)).unwrap());
    assert!(t0.elapsed() >= Duration::from_millis(50));
    let dst = b.pd.alloc_mr(8, RW).unwrap();
    b.qp.post_recv(&[RecvWr {
        wr_id: 1,
        buf: Some(dst.sge(0, 8)),
    }])
    .unwrap();
    let cq = b.cq.clone();
    let waiter = std::thread::spawn(move || {
        let t = Instant::now();
        let ok = cq.wait(Duration::from_secs(5)).unwrap();
        (ok, t.elapsed())
    });
    std::thread::sleep(Duration::from_millis(100));
    a.qp.post_send(&[SendWr::new(1, SendOp::Send, None)])
        .unwrap();
    let (ok, waited) = waiter.join().unwrap();
    assert!(ok);
    assert!(waited < Duration::from_secs(2), "{waited:?}");
    assert_eq!(one(&b.cq).wr_id, 1);
}

#[test]
fn destroying_a_queue_pair_flushes_the_peer() {
    let (a, b) = pair(4);
    let dst = b.pd.alloc_mr(8, RW).unwrap();
    b.qp.post_recv(&[RecvWr {
        wr_id: 1,
        buf: Some(dst.sge(0, 8)),
    }])
    .unwrap();
    drop(a);
    let r = one(&b.cq);
    assert_eq!((r.wr_id, r.status), (1, WcStatus::WrFlush));
    b.qp.post_send(&[SendWr::new(2, SendOp::Send, None)])
        .unwrap();
    assert_eq!(one(&b.cq).status, WcStatus::WrFlush);
}

#[test]
fn connect_rejects_bad_endpoints() {
    let ctx = Context::open_by_name(SOFT_DEVICE).unwrap();
    let a = side(&ctx, 4);
    for bad in [&b""[..], b"RVS1", b"garbage that is long enough to parse"] {
        let err = a.qp.connect(&Endpoint::from_bytes(bad)).unwrap_err();
        assert!(matches!(err, VerbsError::BadEndpoint(_)), "{err}");
    }
    let err = a.qp.post_send(&[]).unwrap_err();
    assert!(matches!(err, VerbsError::NotConnected { .. }), "{err}");
    let b = side(&ctx, 4);
    let ep = b.qp.endpoint();
    drop(b);
    assert!(a.qp.connect(&ep).is_err());
}

/// Not a timed assertion: prints the throughput of 256 MB in 1 MB RDMA writes
/// next to a plain memcpy of the same bytes.
#[test]
fn bandwidth_of_rdma_writes_next_to_memcpy() {
    const CHUNK: usize = 1 << 20;
    const TOTAL: usize = 256 << 20;
    const SLOTS: usize = 16;
    let (a, b) = pair(64);
    let src = a.pd.alloc_mr(CHUNK * SLOTS, Access::NONE).unwrap();
    let dst = b.pd.alloc_mr(CHUNK * SLOTS, rw_remote()).unwrap();
    src.write(0, &vec![0x5a; CHUNK * SLOTS]).unwrap();
    dst.write(0, &vec![0; CHUNK * SLOTS]).unwrap();
    let remote = dst.remote();
    let t = Instant::now();
    let mut posted = 0;
    let mut done = 0;
    let mut buf = vec![empty(); 64];
    while done < TOTAL / CHUNK {
        while posted < TOTAL / CHUNK && posted - done < 32 {
            let off = (posted % SLOTS) * CHUNK;
            a.qp.post_send(&[SendWr::new(
                posted as u64,
                SendOp::RdmaWrite(remote.at(off as u64).unwrap()),
                Some(src.sge(off, CHUNK)),
            )])
            .unwrap();
            posted += 1;
        }
        let n = a.cq.poll(&mut buf).unwrap();
        assert!(buf[..n].iter().all(|c| c.status.is_success()));
        done += n;
    }
    let rdma = t.elapsed();

    let from = vec![0x5au8; CHUNK * SLOTS];
    let mut to = vec![0u8; CHUNK * SLOTS];
    let t = Instant::now();
    for i in 0..TOTAL / CHUNK {
        let off = (i % SLOTS) * CHUNK;
        to[off..off + CHUNK].copy_from_slice(&from[off..off + CHUNK]);
        std::hint::black_box(&mut to);
    }
    let memcpy = t.elapsed();
    let mbs = |d: Duration| TOTAL as f64 / (1 << 20) as f64 / d.as_secs_f64();
    println!(
        "soft verbs: 256 MB in 1 MB RDMA writes: {:.0} MB/s; memcpy of the same chunks: {:.0} MB/s ({:.0} %)",
        mbs(rdma),
        mbs(memcpy),
        100.0 * memcpy.as_secs_f64() / rdma.as_secs_f64()
    );
}

// ---------------------------------------------------------------------------
// Two processes.

struct Peer {
    child: Child,
    stdin: ChildStdin,
    lines: std::io::Lines<BufReader<ChildStdout>>,
}

impl Peer {
    fn spawn(role: &str) -> Peer {
        let mut child = Command::new(std::env::current_exe().unwrap())
            .args(["--exact", "child_entry", "--nocapture", "--test-threads=1"])
            .env(CHILD_ENV, role)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let stdin = child.stdin.take().unwrap();
        let lines = BufReader::new(child.stdout.take().unwrap()).lines();
        Peer {
            child,
            stdin,
            lines,
        }
    }

    /// The next protocol line (prefixed `@@`) from the child.
    fn recv(&mut self) -> Vec<String> {
        for line in self.lines.by_ref() {
            let line = line.unwrap();
            // libtest may have printed "test child_entry ... " on the line.
            if let Some(at) = line.find("@@ ") {
                return line[at + 3..].split(' ').map(str::to_owned).collect();
            }
        }
        panic!("child ended without answering");
    }

    fn send(&mut self, words: &[String]) {
        writeln!(self.stdin, "@@ {}", words.join(" ")).unwrap();
        self.stdin.flush().unwrap();
    }
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

fn unhex(s: &str) -> Vec<u8> {
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
        .collect()
}

fn child_recv() -> Vec<String> {
    let mut line = String::new();
    std::io::stdin().read_line(&mut line).unwrap();
    line.trim_end()
        .strip_prefix("@@ ")
        .expect("protocol line")
        .split(' ')
        .map(str::to_owned)
        .collect()
}

fn child_send(words: &[String]) {
    println!("@@ {}", words.join(" "));
}

/// The child's side of the two-process tests; a no-op in a normal run.
#[test]
fn child_entry() {
    let Ok(role) = std::env::var(CHILD_ENV) else {
        return;
    };
    let ctx = Context::open_by_name(SOFT_DEVICE).unwrap();
    let s = side(&ctx, 8);
    let mr = s.pd.alloc_mr(4096, rw_remote()).unwrap();
    s.qp.post_recv(&[
        RecvWr {
            wr_id: 100,
            buf: Some(mr.sge(0, 64)),
        },
        RecvWr {
            wr_id: 101,
            buf: None,
        },
    ])
    .unwrap();
    child_send(&[
        hex(s.qp.endpoint().as_bytes()),
        hex(&mr.remote().to_bytes()),
    ]);
    let parent = child_recv();
    s.qp.connect(&Endpoint::from_bytes(&unhex(&parent[0])))
        .unwrap();
    match role.as_str() {
        "echo" => {
            // A send with immediate, then a write with immediate.
            let got = poll_n(&s.cq, 2);
            assert_eq!((got[0].wr_id, got[0].imm), (100, Some(1)));
            assert_eq!(
                (got[1].wr_id, got[1].opcode, got[1].imm),
                (101, WcOpcode::RecvRdmaWithImm, Some(2))
            );
            let mut msg = vec![0u8; got[0].byte_len as usize];
            mr.read(0, &mut msg).unwrap();
            let mut written = vec![0u8; got[1].byte_len as usize];
            mr.read(1024, &mut written).unwrap();
            // Answer with both, concatenated, by a send.
            let mut answer = msg;
            answer.extend_from_slice(&written);
            mr.write(2048, &answer).unwrap();
            s.qp.post_send(&[SendWr::new(
                1,
                SendOp::SendWithImm(3),
                Some(mr.sge(2048, answer.len())),
            )])
            .unwrap();
            assert_eq!(one(&s.cq).status, WcStatus::Success);
            // Wait until the parent says it is done, then leave.
            child_recv();
        }
        "hang" => {
            child_send(&["ready".into()]);
            loop {
                std::thread::sleep(Duration::from_secs(1));
            }
        }
        other => panic!("unknown role {other}"),
    }
}

#[test]
fn two_processes_send_write_and_answer() {
    let ctx = Context::open_by_name(SOFT_DEVICE).unwrap();
    let s = side(&ctx, 8);
    let mr = s.pd.alloc_mr(4096, RW).unwrap();
    let mut peer = Peer::spawn("echo");
    let words = peer.recv();
    let remote = RemoteRegion::from_bytes(&unhex(&words[1])).unwrap();
    s.qp.connect(&Endpoint::from_bytes(&unhex(&words[0])))
        .unwrap();
    s.qp.post_recv(&[RecvWr {
        wr_id: 50,
        buf: Some(mr.sge(3000, 1000)),
    }])
    .unwrap();
    peer.send(&[hex(s.qp.endpoint().as_bytes())]);
    mr.write(0, b"ping from the parent").unwrap();
    mr.write(100, b"+written directly").unwrap();
    s.qp.post_send(&[
        SendWr::new(1, SendOp::SendWithImm(1), Some(mr.sge(0, 20))),
        SendWr::new(
            2,
            SendOp::RdmaWriteWithImm(remote.at(1024).unwrap(), 2),
            Some(mr.sge(100, 17)),
        ),
    ])
    .unwrap();
    let mut got = poll_n(&s.cq, 3);
    got.sort_by_key(|c| c.wr_id);
    assert!(got.iter().all(|c| c.status.is_success()), "{got:?}");
    assert_eq!(
        (got[2].wr_id, got[2].imm, got[2].byte_len),
        (50, Some(3), 37)
    );
    let mut answer = vec![0u8; 37];
    mr.read(3000, &mut answer).unwrap();
    assert_eq!(&answer, b"ping from the parent+written directly");
    peer.send(&["done".into()]);
    let status = peer.child.wait().unwrap();
    assert!(status.success(), "child failed: {status}");
}

#[test]
fn killed_peer_process_surfaces_as_flush_errors_promptly() {
    let ctx = Context::open_by_name(SOFT_DEVICE).unwrap();
    let s = side(&ctx, 8);
    let mr = s.pd.alloc_mr(4096, RW).unwrap();
    let mut peer = Peer::spawn("hang");
    let words = peer.recv();
    s.qp.connect(&Endpoint::from_bytes(&unhex(&words[0])))
        .unwrap();
    peer.send(&[hex(s.qp.endpoint().as_bytes())]);
    assert_eq!(peer.recv(), ["ready"]);
    let recvs: Vec<_> = (0..4)
        .map(|i| RecvWr {
            wr_id: i,
            buf: Some(mr.sge(i as usize * 64, 64)),
        })
        .collect();
    s.qp.post_recv(&recvs).unwrap();
    // The connection works before the kill.
    s.qp.post_send(&[SendWr::new(9, SendOp::Send, Some(mr.sge(0, 8)))])
        .unwrap();
    assert_eq!(one(&s.cq).status, WcStatus::Success);

    peer.child.kill().unwrap(); // SIGKILL
    let t = Instant::now();
    let flushed = poll_n(&s.cq, 4);
    let took = t.elapsed();
    assert!(
        flushed
            .iter()
            .enumerate()
            .all(|(i, c)| c.wr_id == i as u64 && c.status == WcStatus::WrFlush),
        "{flushed:?}"
    );
    assert!(took < Duration::from_secs(1), "noticed after {took:?}");
    println!("peer death noticed after {took:?}");
    assert_eq!(s.qp.state(), QpState::Error);
    s.qp.post_send(&[SendWr::new(10, SendOp::Send, None)])
        .unwrap();
    assert_eq!(one(&s.cq).status, WcStatus::WrFlush);
    peer.child.wait().unwrap();
}

#[test]
fn killed_peer_is_noticed_by_a_sender_without_polling_first() {
    let ctx = Context::open_by_name(SOFT_DEVICE).unwrap();
    let s = side(&ctx, 8);
    let mut peer = Peer::spawn("hang");
    let words = peer.recv();
    s.qp.connect(&Endpoint::from_bytes(&unhex(&words[0])))
        .unwrap();
    peer.send(&[hex(s.qp.endpoint().as_bytes())]);
    assert_eq!(peer.recv(), ["ready"]);
    peer.child.kill().unwrap();
    peer.child.wait().unwrap();
    // The child had two receives posted; a send into a dead peer's ring is
    // indistinguishable from success, so exhaust them first.
    let mr = s.pd.alloc_mr(64, Access::NONE).unwrap();
    let mut statuses = Vec::new();
    for i in 0..3 {
        s.qp.post_send(&[SendWr::new(i, SendOp::Send, Some(mr.sge(0, 0)))])
            .unwrap();
        statuses.push(one(&s.cq).status);
        if !statuses.last().unwrap().is_success() {
            break;
        }
    }
    let last = *statuses.last().unwrap();
    assert!(
        matches!(last, WcStatus::RetryExceeded | WcStatus::WrFlush),
        "{statuses:?}"
    );
}
