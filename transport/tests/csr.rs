//! The CSR module over the `soft` verbs provider: frames of every shape, both
//! directions at once, ping-pong, discard, chunk-count validation, peer death
//! two processes, and the set-up against peers that break it. The
//! two-process test runs this binary again as the client (`RCUD_CSR_CHILD`
//! set); the agent's first port travels over its stdin, as it would over the
//! TCP bootstrap.

use std::io::Write;
use std::process::{Child, Command, Stdio};
use std::thread;
use std::time::{Duration, Instant};

use rcud_proto::frame::FrameHeader;
use rcud_proto::FrameKind;
use rcud_transport::csr::{CsrChannel, CsrOptions, Polling};
use rcud_transport::setup::{self, Rendezvous};
use rcud_transport::verbs::{Context, Provider, SOFT_DEVICE};
use rcud_transport::{Channel, TransportError};

mod rogue;
mod support;

use rogue::*;
use support::*;

const CHILD_ENV: &str = "RCUD_CSR_CHILD";

fn opts(polling: Polling) -> CsrOptions {
    CsrOptions {
        polling,
        ..CsrOptions::default()
    }
}

fn pair() -> (CsrChannel, CsrChannel) {
    CsrChannel::pair_local(&opts(Polling::Event)).unwrap()
}

#[test]
fn frames_of_every_shape_arrive_intact() {
    let chunk = CsrOptions::default().chunk;
    // (body, bulk, send piece, receive piece)
    let shapes: Vec<(usize, usize, usize, usize)> = vec![
        (0, 0, 1, 1),
        (5, 0, 1, 1),
        (200, 17, 7, 3),
        (0, chunk, chunk, chunk),
        (0, chunk - 24, chunk, 4096),
        (3, chunk - 27, 999, 1_000_003),
        (100, 7 * chunk + 12_345, 333_333, 777_777),
        (1, 13 * chunk + 1, chunk + 1, chunk - 1),
        (64, 64 * MIB, 4 * MIB, 3 * MIB + 5),
        (0, 0, 1, 1),
    ];
    let frames: Vec<(Vec<u8>, Vec<u8>, usize, usize)> = shapes
        .iter()
        .enumerate()
        .map(|(i, &(b, k, sp, rp))| (pattern(i as u32, b), pattern(1000 + i as u32, k), sp, rp))
        .collect();
    let (mut a, mut b) = pair();
    let sent = frames.clone();
    within(Duration::from_secs(120), move || {
        let t = thread::spawn(move || {
            for (i, (body, bulk, sp, _)) in sent.iter().enumerate() {
                send(&mut a, i as u32, body, bulk, *sp);
            }
            a.flush().unwrap();
            a
        });
        for (i, (body, bulk, _, rp)) in frames.iter().enumerate() {
            expect(&mut b, i as u32, body, bulk, *rp);
        }
        t.join().unwrap();
    });
}

/// One side of the two-way test: small frames back to back, then lockstep
/// rounds of frames of up to three chunks.
fn two_way_side(mut ch: CsrChannel, me: u32) -> CsrChannel {
    let peer = 1 - me;
    let small = |who: u32, i: u32| {
        let s = pattern(who * 1_000_000 + i, 2);
        (
            pattern(who * 7 + i, s[0] as usize % 200),
            pattern(who * 11 + i, (s[1] as usize * 3) % 700),
        )
    };
    for round in 0..5u32 {
        for i in 0..500 {
            let (body, bulk) = small(me, round * 1000 + i);
            send(&mut ch, i, &body, &bulk, 100);
        }
        ch.flush().unwrap();
        for i in 0..500 {
            let (body, bulk) = small(peer, round * 1000 + i);
            expect(&mut ch, i, &body, &bulk, 64);
        }
    }
    for i in 0..40u32 {
        let len = |who: u32| (pattern(who + 10 * i, 4)[0] as usize * 12_347) % (3 * MIB);
        let mine = pattern(me * 100 + i, len(me));
        send(&mut ch, i, &[1, 2, 3], &mine, 256 * 1024);
        ch.flush().unwrap();
        let theirs = pattern(peer * 100 + i, len(peer));
        expect(&mut ch, i, &[1, 2, 3], &theirs, 100_000);
    }
    ch
}

#[test]
fn many_frames_both_directions_at_once() {
    for polling in [Polling::Event, Polling::Busy] {
        let (a, b) = CsrChannel::pair_local(&opts(polling)).unwrap();
        within(Duration::from_secs(120), move || {
            let ta = thread::spawn(move || two_way_side(a, 0));
            let tb = thread::spawn(move || two_way_side(b, 1));
            ta.join().unwrap();
            tb.join().unwrap();
        });
    }
}

#[test]
fn request_reply_ping_pong() {
    let (mut client, mut server) = CsrChannel::pair_local(&opts(Polling::Busy)).unwrap();
    within(Duration::from_secs(60), move || {
        let srv = thread::spawn(move || {
            for _ in 0..2000 {
                let h = server.recv_header().unwrap();
                let body = server.recv_body(h.body_len).unwrap().to_vec();
                let mut bulk = vec![0u8; h.bulk_len as usize];
                server.recv_bulk_into(&mut bulk).unwrap();
                let reply = FrameHeader {
                    flags: 0,
                    kind: FrameKind::REPLY,
                    ..h
                };
                bulk.reverse();
                server.send_frame(&reply, &body, &bulk).unwrap();
                server.flush().unwrap();
            }
        });
        let start = Instant::now();
        for i in 0..2000u32 {
            let bulk = pattern(i, if i % 10 == 0 { 70_000 } else { 8 });
            let body = pattern(i + 5, 32);
            client
                .send_frame(&header(i, body.len(), bulk.len()), &body, &bulk)
                .unwrap();
            client.flush().unwrap();
            let h = client.recv_header().unwrap();
            assert_eq!((h.kind, h.id), (FrameKind::REPLY, i));
            assert_eq!(client.recv_body(h.body_len).unwrap(), &body[..]);
            let mut got = vec![0u8; h.bulk_len as usize];
            client.recv_bulk_into(&mut got).unwrap();
            got.reverse();
            assert_eq!(got, bulk);
        }
        println!(
            "csr ping-pong (busy polling, soft): {:.1} µs per round trip",
            start.elapsed().as_secs_f64() * 1e6 / 2000.0
        );
        srv.join().unwrap();
    });
}

#[test]
fn discard_bulk_skips_exactly_the_payload() {
    let (mut a, mut b) = pair();
    let big = pattern(1, 5 * MIB + 333);
    let next = pattern(2, 4000);
    within(Duration::from_secs(60), move || {
        let (big2, next2) = (big.clone(), next.clone());
        let t = thread::spawn(move || {
            send(&mut a, 1, b"x", &big2, MIB);
            send(&mut a, 2, b"yz", &next2, 4000);
            send(&mut a, 3, b"", &[], 1);
            a.flush().unwrap();
            a
        });
        let h = b.recv_header().unwrap();
        assert_eq!(b.recv_body(h.body_len).unwrap(), b"x");
        let mut head = vec![0u8; 1000];
        b.recv_bulk_into(&mut head).unwrap();
        assert_eq!(head, big[..1000]);
        b.discard_bulk(1).unwrap();
        b.discard_bulk(2 * MIB as u64 + 7).unwrap();
        let rest = h.bulk_len - 1000 - 1 - 2 * MIB as u64 - 7;
        b.discard_bulk(rest).unwrap();
        expect(&mut b, 2, b"yz", &next, 999);
        let h = b.recv_header().unwrap();
        assert_eq!((h.id, h.body_len, h.bulk_len), (3, 0, 0));
        b.discard_bulk(0).unwrap();
        t.join().unwrap();
    });
}

#[test]
fn chunk_count_must_be_at_least_nine_and_a_multiple_of_three() {
    for bad in [0, 3, 6, 8, 10, 11, 13, 20] {
        let o = CsrOptions {
            chunks: bad,
            ..CsrOptions::default()
        };
        let err = CsrChannel::pair_local(&o).unwrap_err().to_string();
        assert!(
            err.contains("multiple of 3") && err.contains(&bad.to_string()),
            "{bad}: {err}"
        );
    }
    for good in [9, 12, 18] {
        let o = CsrOptions {
            chunks: good,
            chunk: 64 * 1024,
            polling: Polling::Event,
            ..Default::default()
        };
        let (mut a, mut b) = CsrChannel::pair_local(&o).unwrap();
        assert_eq!(a.chunks(), good);
        let bulk = pattern(good as u32, 5 * good * 64 * 1024 + 3);
        let sent = bulk.clone();
        let t = thread::spawn(move || {
            send(&mut a, 9, b"", &sent, 10_000);
            a.flush().unwrap();
            a
        });
        expect(&mut b, 9, b"", &bulk, 65_536);
        t.join().unwrap();
    }
}

#[test]
fn mismatched_chunk_sizes_fail_both_ends_of_the_set_up() {
    let small = CsrOptions {
        chunk: 4096,
        ..opts(Polling::Event)
    };
    let (client, agent) = setup::pair_with(
        &setup::local(),
        "CSR",
        |rv, first| CsrChannel::accept(rv, first, &|_| Ok(opts(Polling::Event))),
        |rv, port| CsrChannel::connect(rv, port, &|_| Ok(small.clone())),
    );
    for r in [client.map(drop), agent.map(drop)] {
        let err = r.unwrap_err().to_string();
        assert!(err.contains("chunk size"), "{err}");
    }
}

#[test]
fn a_malformed_geometry_message_fails_the_agents_set_up() {
    for (said, expected) in [
        (b"XXXXgarbage".to_vec(), "malformed"),
        (
            csr_geometry(CsrOptions::default().chunk, 9, 0)[..10].to_vec(),
            "truncated",
        ),
        (
            [csr_geometry(CsrOptions::default().chunk, 9, 0), vec![0]].concat(),
            "trailing",
        ),
        (
            csr_geometry(CsrOptions::default().chunk, 10, 0),
            "invalid chunk count",
        ),
    ] {
        let (client, agent) = setup::pair_with(
            &setup::local(),
            "CSR",
            |rv, first| CsrChannel::accept(rv, first, &|_| Ok(opts(Polling::Event))),
            |rv, port| {
                let rogue = RogueCsr::data_channel(rv, port, 9, 4096)?;
                rogue.say(&said);
                Ok(rogue)
            },
        );
        // The rogue lives until the agent has given up.
        let _rogue = client.unwrap();
        let err = agent.unwrap_err().to_string();
        assert!(err.contains(expected), "{expected}: {err}");
    }
}

#[test]
fn a_set_up_left_half_done_times_out() {
    let quick = Rendezvous::new(
        Provider::Soft,
        std::net::Ipv4Addr::LOCALHOST.into(),
        Duration::from_millis(1500),
    );
    let started = Instant::now();
    // The client opens the data channel, says its geometry and stops there.
    let (client, agent) = setup::pair_with(
        &quick,
        "CSR",
        |rv, first| CsrChannel::accept(rv, first, &|_| Ok(opts(Polling::Event))),
        |rv, port| {
            let rogue = RogueCsr::data_channel(rv, port, 9, 4096)?;
            rogue.say(&csr_geometry(CsrOptions::default().chunk, 9, 0));
            Ok(rogue)
        },
    );
    let _rogue = client.unwrap();
    let err = agent.unwrap_err();
    assert!(
        matches!(&err, TransportError::Io(e) if e.kind() == std::io::ErrorKind::TimedOut),
        "{err}"
    );
    assert!(err.to_string().contains("control channel"), "{err}");
    // Nobody ever comes: the agent gives up on the first request as well.
    let quick = Rendezvous::new(
        Provider::Soft,
        std::net::Ipv4Addr::LOCALHOST.into(),
        Duration::from_millis(500),
    );
    let (first, _port) = quick.listen("CSR").unwrap();
    let err = CsrChannel::accept(&quick, first, &|_| Ok(opts(Polling::Event))).unwrap_err();
    assert!(err.to_string().contains("data channel"), "{err}");
    assert!(started.elapsed() < Duration::from_secs(10));
}

#[test]
fn connecting_to_a_port_nobody_listens_on_names_the_cause() {
    let rv = setup::local();
    let (first, port) = rv.listen("CSR").unwrap();
    drop(first);
    let err = CsrChannel::connect(&rv, port, &|_| Ok(opts(Polling::Event))).unwrap_err();
    assert!(err.to_string().contains("nobody listens"), "{err}");
}

#[test]
fn receiver_dropped_mid_transfer_fails_the_sender() {
    for polling in [Polling::Event, Polling::Busy] {
        let (mut a, mut b) = CsrChannel::pair_local(&opts(polling)).unwrap();
        let res = within(Duration::from_secs(30), move || {
            let t = thread::spawn(move || {
                let h = b.recv_header().unwrap();
                b.recv_body(h.body_len).unwrap();
                let mut part = vec![0u8; 3 * MIB];
                b.recv_bulk_into(&mut part).unwrap();
                drop(b);
            });
            let bulk = vec![7u8; 64 * MIB];
            let r = a
                .send_frame(&header(1, 0, bulk.len()), &[], &bulk)
                .and_then(|_| a.flush());
            t.join().unwrap();
            r
        });
        assert!(matches!(res, Err(TransportError::Closed)), "{res:?}");
    }
}

#[test]
fn sender_dropped_mid_transfer_fails_the_receiver() {
    let (mut a, mut b) = pair();
    let res = within(Duration::from_secs(30), move || {
        let bulk = pattern(3, 2 * MIB);
        // Announce 10 MiB, send 2, go away.
        a.send_frame(&header(1, 0, 10 * MIB), &[], &bulk).unwrap();
        a.flush().unwrap();
        drop(a);
        let h = b.recv_header().unwrap();
        assert_eq!(h.bulk_len, 10 * MIB as u64);
        let mut got = vec![0u8; 2 * MIB - 24];
        b.recv_bulk_into(&mut got).unwrap();
        assert!(got == bulk[..2 * MIB - 24]);
        let mut more = vec![0u8; MIB];
        let r = b.recv_bulk_into(&mut more);
        // Any later call fails the same way; nothing hangs.
        let again = b.recv_header().map(|_| ());
        (r, again)
    });
    assert!(matches!(res.0, Err(TransportError::Closed)), "{:?}", res.0);
    assert!(res.1.is_err());
}

#[test]
fn flush_after_peer_is_gone_is_closed() {
    let (mut a, b) = pair();
    drop(b);
    let r = within(Duration::from_secs(10), move || {
        a.send_frame(&header(1, 3, 0), b"abc", &[])
            .and_then(|_| a.flush())
    });
    assert!(matches!(r, Err(TransportError::Closed)), "{r:?}");
}

#[test]
fn bandwidth_of_32_mib_frames_next_to_memcpy() {
    const LEN: usize = 32 * MIB;
    const REPS: usize = 10;
    for polling in [Polling::Busy, Polling::Event] {
        let (mut a, mut b) = CsrChannel::pair_local(&opts(polling)).unwrap();
        let mbps = within(Duration::from_secs(120), move || {
            let src = vec![0x5au8; LEN];
            let t = thread::spawn(move || {
                for i in 0..=REPS as u32 {
                    a.send_frame(&header(i, 0, LEN), &[], &src).unwrap();
                    a.flush().unwrap();
                    // Wait for the receiver's acknowledgement.
                    a.recv_header().unwrap();
                }
            });
            let mut dst = vec![0u8; LEN];
            let mut start = Instant::now();
            for i in 0..=REPS as u32 {
                if i == 1 {
                    start = Instant::now(); // the first transfer warms up
                }
                let h = b.recv_header().unwrap();
                b.recv_bulk_into(&mut dst).unwrap();
                b.send_frame(&FrameHeader { bulk_len: 0, ..h }, &[], &[])
                    .unwrap();
                b.flush().unwrap();
            }
            t.join().unwrap();
            (LEN * REPS) as f64 / start.elapsed().as_secs_f64() / 1e6
        });
        println!(
            "csr soft, {REPS} × 32 MiB, 9 × 1 MiB chunks, {polling:?} polling: {mbps:.0} MB/s \
             (memcpy of the same bytes: {:.0} MB/s)",
            memcpy_mbps(LEN, REPS)
        );
    }
}

// ---------------------------------------------------------------------------
// Two processes.

/// Kills the child process if the test fails before it does.
struct KillOnDrop(Child);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn two_processes_echo_frames() {
    let mut child = KillOnDrop(
        Command::new(std::env::current_exe().unwrap())
            .args(["--exact", "child_entry", "--nocapture", "--test-threads=1"])
            .env(CHILD_ENV, "echo")
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .spawn()
            .unwrap(),
    );
    let mut stdin = child.0.stdin.take().unwrap();
    let rv = setup::local();
    let (first, port) = rv.listen("CSR").unwrap();
    writeln!(stdin, "{port}").unwrap();
    let mut ch = CsrChannel::accept(&rv, first, &|_| Ok(opts(Polling::Event))).unwrap();
    let mut ch = within(Duration::from_secs(60), move || {
        for i in 0..20u32 {
            let bulk = pattern(i, (i as usize * 777_777) % (5 * MIB));
            send(&mut ch, i, b"ping", &bulk, MIB / 2);
            ch.flush().unwrap();
            expect(&mut ch, i, b"ping", &bulk, 100_000);
        }
        ch
    });
    // Killing the peer mid-session surfaces as an error, not a hang.
    child.0.kill().unwrap();
    child.0.wait().unwrap();
    let r = within(Duration::from_secs(10), move || {
        let bulk = vec![1u8; 32 * MIB];
        ch.send_frame(&header(99, 0, bulk.len()), &[], &bulk)
            .and_then(|_| ch.flush())
            .and_then(|_| ch.recv_header().map(|_| ()))
    });
    assert!(r.is_err(), "{r:?}");
}

/// The child's side of the two-process test; a no-op in a normal run.
#[test]
fn child_entry() {
    if std::env::var(CHILD_ENV).is_err() {
        return;
    }
    let mut line = String::new();
    std::io::stdin().read_line(&mut line).unwrap();
    let port = line.trim().parse().unwrap();
    let mut ch = CsrChannel::connect(&setup::local(), port, &|_| Ok(opts(Polling::Event))).unwrap();
    // Echo frames until the parent goes away.
    loop {
        let Ok(h) = ch.recv_header() else { return };
        let body = ch.recv_body(h.body_len).unwrap().to_vec();
        let mut bulk = vec![0u8; h.bulk_len as usize];
        if ch.recv_bulk_into(&mut bulk).is_err() {
            return;
        }
        if ch
            .send_frame(&h, &body, &bulk)
            .and_then(|_| ch.flush())
            .is_err()
        {
            return;
        }
    }
}

/// Large payloads go out straight from the caller's buffer (zero copy) or
/// through the staging chunks; the peer must see the same stream either way.
#[test]
fn payloads_arrive_the_same_staged_or_zero_copy() {
    payloads_arrive_the_same(|zero_copy| {
        CsrChannel::pair_local(&CsrOptions {
            chunk: 64 * 1024,
            polling: Polling::Event,
            zero_copy,
            ..Default::default()
        })
        .unwrap()
    });
}

#[test]
fn default_chunk_counts_follow_the_fabric() {
    use rcud_transport::bootstrap::{csr_options_for, msr_options_for};
    use rcud_transport::verbs::Fabric;
    let soft = Context::open_by_name(SOFT_DEVICE).unwrap();
    assert_eq!(soft.fabric(), Fabric::SharedMemory);
    for (fabric, chunks) in [
        (Fabric::SharedMemory, 9),
        (Fabric::InfiniBand, 288),
        (Fabric::Roce, 144),
        (Fabric::Iwarp, 72),
    ] {
        assert_eq!(csr_options_for(fabric).unwrap().chunks, chunks);
        assert_eq!(msr_options_for(fabric).unwrap().chunks, chunks);
    }
}
