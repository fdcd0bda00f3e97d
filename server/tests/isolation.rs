//! Agent isolation and server limits, against the `rcud-server` binary.
//!
//! - a client whose agent process is killed harms no other client, and the
//!   listener reaps and logs the agent;
//! - `--max-clients` refuses the client beyond the limit with a clear message
//!   and admits it once a client leaves;
//! - 16 concurrent clients doing mixed memory operations, one of them dying in
//!   the middle of a 64 MB transfer, under both isolation modes;
//! - SIGTERM on the listener stops every agent process, and agents do not
//!   outlive a listener that was killed.

mod support;

use std::thread;
use std::time::{Duration, Instant};

use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;
use rcud_proto::ops::req;
use support::{alive, field, Conn, ConnectError, Rng, ServerProc};

const MB: usize = 1 << 20;

#[test]
fn killed_agent_process_harms_no_other_client() {
    let server = ServerProc::start(&["--isolation", "process", "--emu-memory", "256MiB"]);
    let mut a = Conn::attached(server.addr(), "client-a");
    let mut b = Conn::attached(server.addr(), "client-b");
    let pid_a = server.agent_pid(a.local_port());
    let pid_b = server.agent_pid(b.local_port());
    assert_ne!(pid_a, pid_b, "each client has an agent process of its own");
    assert_ne!(pid_b, server.pid());
    let mut kids: Vec<u32> = server.children().iter().map(|k| k.0).collect();
    kids.sort_unstable();
    let mut expected = vec![pid_a, pid_b];
    expected.sort_unstable();
    assert_eq!(kids, expected, "the agents are the listener's children");

    let mut rng = Rng::new(1);
    let data_a = rng.bytes(MB + 3);
    let pa = a.malloc(data_a.len() as u64);
    a.htod(pa, &data_a);
    let data_b = rng.bytes(MB);
    let pb = b.malloc(data_b.len() as u64);
    b.htod(pb, &data_b);

    kill(Pid::from_raw(pid_b as i32), Signal::SIGKILL).expect("kill -9 the agent of b");

    // b's connection is gone with its agent.
    let mut back = vec![0u8; data_b.len()];
    let r = b.call(
        &req::MemcpyDtoH {
            src: pb,
            len: back.len() as u64,
        },
        &[],
        &mut back,
    );
    assert!(
        r.is_err(),
        "b's connection must be broken, got {:?}",
        r.is_ok()
    );

    // The listener reaps and logs it.
    let pid_field = format!("pid={pid_b}");
    let line = server
        .wait_log(Duration::from_secs(10), |l| {
            l.contains("agent process died") && l.split_whitespace().any(|w| w == pid_field)
        })
        .expect("the listener logs the killed agent");
    assert!(line.contains("SIGKILL"), "{line}");
    assert!(field(&line, "peer").is_some(), "{line}");
    assert!(!alive(pid_b));
    let kids: Vec<u32> = server.children().iter().map(|k| k.0).collect();
    assert_eq!(kids, vec![pid_a], "b's agent is reaped, a's lives on");

    // a did not notice.
    let mut back = vec![0u8; data_a.len()];
    a.dtoh(pa, &mut back);
    assert!(back == data_a, "a's memory is intact");
    let pa2 = a.malloc(4096);
    a.memset(pa2, 0x5a, 4096);
    let mut small = vec![0u8; 4096];
    a.dtoh(pa2, &mut small);
    assert!(small.iter().all(|&x| x == 0x5a));
    a.free(pa2);
    a.free(pa);
    let (free, total) = a.mem_info();
    assert_eq!(total, 256 * MB as u64);
    assert_eq!(
        free, total,
        "a's device is its own: b's memory is not on it"
    );

    // And new clients are served.
    let mut c = Conn::attached(server.addr(), "client-c");
    let pc = c.malloc(100);
    c.free(pc);
}

fn limit_refuses_and_recovers(isolation: &str) {
    let server = ServerProc::start(&["--isolation", isolation, "--max-clients", "2"]);
    let c1 = Conn::attached(server.addr(), "one");
    let mut c2 = Conn::attached(server.addr(), "two");
    match Conn::connect(server.addr(), "three") {
        Err(ConnectError::Refused(message)) => {
            assert_eq!(message, "server is at its limit of 2 clients")
        }
        Err(ConnectError::Failed(e)) => panic!("expected a refusal, got {e}"),
        Ok(_) => panic!("a third client was accepted with --max-clients 2"),
    }
    server
        .wait_log(Duration::from_secs(5), |l| {
            l.contains("refusing a client") && l.contains("limit of 2 clients")
        })
        .expect("the refusal is logged");

    drop(c1);
    // The agent ends (and, with processes, is reaped) shortly after.
    let deadline = Instant::now() + Duration::from_secs(10);
    let mut c3 = loop {
        match Conn::connect(server.addr(), "three") {
            Ok(c) => break c,
            Err(ConnectError::Refused(_)) if Instant::now() < deadline => {
                thread::sleep(Duration::from_millis(20))
            }
            Err(e) => panic!("the third client is still not admitted: {e:?}"),
        }
    };
    c3.call(&req::Attach { gpu: 0, window: 0 }, &[], &mut [])
        .expect("transport")
        .expect("attach");
    let p = c3.malloc(1000);
    c3.free(p);
    let p = c2.malloc(1000);
    c2.free(p);
}

#[test]
fn max_clients_with_processes() {
    limit_refuses_and_recovers("process");
}

#[test]
fn max_clients_with_threads() {
    limit_refuses_and_recovers("thread");
}

/// A live allocation and what it must hold.
struct Alloc {
    ptr: u64,
    data: Vec<u8>,
}

/// Sizes mostly small, some large, a few of several MB; rarely aligned.
fn pick_size(rng: &mut Rng) -> usize {
    match rng.range(0, 100) {
        0..=69 => rng.range(1, 64 << 10) as usize,
        70..=94 => rng.range(64 << 10, 512 << 10) as usize,
        _ => rng.range(512 << 10, 4 * MB as u64) as usize,
    }
}

/// A sub-range `(offset, len)` of an allocation of `size` bytes.
fn pick_range(rng: &mut Rng, size: usize) -> (usize, usize) {
    if rng.range(0, 3) == 0 {
        return (0, size);
    }
    let off = rng.range(0, size as u64) as usize;
    let len = rng.range(1, (size - off) as u64 + 1) as usize;
    (off, len)
}

/// `ops` mixed operations with data checks; returns the payload bytes moved.
fn worker(addr: &str, seed: u64, ops: usize, total_mem: u64) -> u64 {
    let mut rng = Rng::new(seed);
    // A pool of random bytes; copies take slices of it, stamped with the
    // operation number so that every write differs.
    let pool = rng.bytes(5 * MB);
    let mut c = Conn::attached(addr, &format!("stress-{seed}"));
    let mut allocs: Vec<Alloc> = Vec::new();
    let mut scratch = vec![0u8; 4 * MB];
    let fill = |rng: &mut Rng, op: usize, len: usize| -> Vec<u8> {
        let start = rng.range(0, (pool.len() - len) as u64 + 1) as usize;
        let mut v = pool[start..start + len].to_vec();
        let stamp = (op as u64 ^ seed << 32).to_le_bytes();
        let n = stamp.len().min(len);
        v[..n].copy_from_slice(&stamp[..n]);
        v
    };
    for op in 0..ops {
        let r = rng.range(0, 100);
        if allocs.is_empty() || (r < 15 && allocs.len() < 6) {
            let size = pick_size(&mut rng);
            let ptr = c.malloc(size as u64);
            let data = fill(&mut rng, op, size);
            c.htod(ptr, &data);
            allocs.push(Alloc { ptr, data });
        } else if r < 40 {
            let i = rng.range(0, allocs.len() as u64) as usize;
            let a = &mut allocs[i];
            let (off, len) = pick_range(&mut rng, a.data.len());
            let data = fill(&mut rng, op, len);
            c.htod(a.ptr + off as u64, &data);
            a.data[off..off + len].copy_from_slice(&data);
        } else if r < 55 {
            let i = rng.range(0, allocs.len() as u64) as usize;
            let a = &mut allocs[i];
            let (off, len) = pick_range(&mut rng, a.data.len());
            let value = rng.next() as u8;
            c.memset(a.ptr + off as u64, value, len as u64);
            a.data[off..off + len].fill(value);
        } else if r < 85 {
            let a = &allocs[rng.range(0, allocs.len() as u64) as usize];
            let (off, len) = pick_range(&mut rng, a.data.len());
            let out = &mut scratch[..len];
            c.dtoh(a.ptr + off as u64, out);
            assert!(
                *out == a.data[off..off + len],
                "client {seed} op {op}: device bytes differ"
            );
        } else if r < 88 {
            let (_, total) = c.mem_info();
            assert_eq!(total, total_mem);
        } else {
            let a = allocs.swap_remove(rng.range(0, allocs.len() as u64) as usize);
            let out = &mut scratch[..a.data.len()];
            c.dtoh(a.ptr, out);
            assert!(
                *out == a.data[..],
                "client {seed} op {op}: freed buffer differs"
            );
            c.free(a.ptr);
        }
    }
    for a in allocs {
        let out = &mut scratch[..a.data.len()];
        c.dtoh(a.ptr, out);
        assert!(*out == a.data[..], "client {seed}: final contents differ");
        c.free(a.ptr);
    }
    c.moved()
}

/// A client that works a little, then dies in the middle of a 64 MB
/// host-to-device transfer.
fn victim(addr: &str, total_mem: u64) {
    worker_prefix(addr, total_mem);
    let mut c = Conn::attached(addr, "victim");
    let big = 64 * MB;
    let ptr = c.malloc(big as u64);
    let sent = Rng::new(99).bytes(24 * MB);
    c.abort_htod(ptr, big as u64, &sent);
}

fn worker_prefix(addr: &str, total_mem: u64) {
    worker(addr, 1000, 40, total_mem);
}

fn stress(isolation: &str) {
    const CLIENTS: u64 = 16;
    const OPS: usize = 2000;
    let total_mem: u64 = 2 << 30;
    let server = ServerProc::start(&["--isolation", isolation, "--emu-memory", "2GiB"]);
    let start = Instant::now();
    let addr = server.addr().to_string();
    let mut threads = Vec::new();
    for i in 0..CLIENTS {
        let addr = addr.clone();
        threads.push(thread::spawn(move || {
            if i == 0 {
                victim(&addr, total_mem);
                0
            } else {
                worker(&addr, i, OPS, total_mem)
            }
        }));
    }
    let mut moved = 0;
    for t in threads {
        moved += t.join().expect("a client failed");
    }
    let clients_done = start.elapsed();

    // Nothing of the finished clients is left behind.
    if isolation == "process" {
        let left = server.wait_no_children(Duration::from_secs(10));
        assert!(
            left.is_empty(),
            "agent processes of finished clients remain: {left:?}"
        );
        // 15 workers, the victim's warm-up session and the victim.
        let expected = CLIENTS as usize + 1;
        let exited = server.wait_count(expected, Duration::from_secs(10), |l| {
            l.contains("agent process exited: exit code 0")
        });
        assert_eq!(exited, expected, "every agent exited normally");
        assert!(!server
            .logs()
            .iter()
            .any(|l| l.contains("agent process died")));
    }
    // A new client sees the whole device free (with threads, the device
    // every client shared; with processes, a fresh one).
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let mut c = Conn::attached(&addr, "after");
        let (free, total) = c.mem_info();
        assert_eq!(total, total_mem);
        if free == total {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "{} bytes still allocated after every client left",
            total - free
        );
        thread::sleep(Duration::from_millis(50));
    }
    server
        .wait_log(Duration::from_secs(5), |l| l.contains("closing connection"))
        .expect("the victim's connection is closed by its agent");
    let elapsed = start.elapsed();
    eprintln!(
        "stress ({isolation}): {CLIENTS} clients, {OPS} operations each, {} MiB moved, \
         done in {clients_done:.2?}, checks done in {elapsed:.2?}",
        moved >> 20
    );
    assert!(
        elapsed < Duration::from_secs(60),
        "stress test took {elapsed:?}"
    );
}

#[test]
fn stress_with_processes() {
    stress("process");
}

#[test]
fn stress_with_threads() {
    stress("thread");
}

#[test]
fn sigterm_stops_every_agent() {
    let mut server = ServerProc::start(&["--isolation", "process"]);
    let mut a = Conn::attached(server.addr(), "a");
    let mut b = Conn::attached(server.addr(), "b");
    let pids = [
        server.agent_pid(a.local_port()),
        server.agent_pid(b.local_port()),
    ];
    let p = a.malloc(1 << 20);
    server.signal(Signal::SIGTERM);
    let status = server
        .wait_exit(Duration::from_secs(15))
        .expect("the listener exits after SIGTERM");
    assert!(status.success(), "{status:?}");
    for pid in pids {
        assert!(!alive(pid), "agent {pid} outlived the listener");
    }
    assert!(
        a.call(&req::Free { ptr: p }, &[], &mut []).is_err(),
        "a's connection is closed"
    );
    let _ = b.call(&req::MemGetInfo {}, &[], &mut []);
    let logs = server.logs();
    assert!(logs.iter().any(|l| l.contains("SIGTERM received")));
    assert!(logs
        .iter()
        .any(|l| l.contains("terminating agent processes")));
    for pid in pids {
        let pid_field = format!("pid={pid}");
        assert!(
            logs.iter().any(|l| l.contains("agent process stopped")
                && l.contains("SIGTERM")
                && l.split_whitespace().any(|w| w == pid_field)),
            "agent {pid} is reaped and logged before the listener exits"
        );
    }
    assert!(logs.iter().any(|l| l.contains("rcud-server stopped")));
}

#[test]
fn agents_follow_a_killed_listener() {
    let mut server = ServerProc::start(&["--isolation", "process"]);
    let mut a = Conn::attached(server.addr(), "a");
    let pid = server.agent_pid(a.local_port());
    server.signal(Signal::SIGKILL);
    server
        .wait_exit(Duration::from_secs(5))
        .expect("the listener dies");
    let deadline = Instant::now() + Duration::from_secs(10);
    while alive(pid) {
        assert!(
            Instant::now() < deadline,
            "agent {pid} outlived its listener"
        );
        thread::sleep(Duration::from_millis(20));
    }
    // The agent was reparented; whoever adopted it reaps it. Its client
    // sees the connection closed.
    assert!(a.call(&req::MemGetInfo {}, &[], &mut []).is_err());
}
