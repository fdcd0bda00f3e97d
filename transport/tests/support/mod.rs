//! Helpers shared by the CSR and MSR module tests.
#![allow(dead_code, unreachable_pub)]

use std::sync::mpsc;
use std::thread;
use std::time::{Duration, Instant};

use rcud_proto::frame::FrameHeader;
use rcud_proto::FrameKind;
use rcud_transport::Channel;

pub mod fake_rdma;

pub const MIB: usize = 1 << 20;

pub fn header(id: u32, body: usize, bulk: usize) -> FrameHeader {
    FrameHeader {
        flags: 0,
        kind: FrameKind::REQUEST,
        op: (id % 97) as u16,
        body_len: body as u32,
        id,
        bulk_len: bulk as u64,
    }
}

pub fn pattern(seed: u32, len: usize) -> Vec<u8> {
    let mut x = seed.wrapping_mul(2_654_435_761).wrapping_add(1);
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            x as u8
        })
        .collect()
}

/// Sends a frame, its payload split into pieces of `piece` bytes.
pub fn send(ch: &mut (impl Channel + ?Sized), id: u32, body: &[u8], bulk: &[u8], piece: usize) {
    let first = bulk.len().min(piece);
    ch.send_frame(&header(id, body.len(), bulk.len()), body, &bulk[..first])
        .unwrap();
    for p in bulk[first..].chunks(piece.max(1)) {
        ch.send_bulk(p).unwrap();
    }
}

/// Receives a frame and checks it against what was sent.
pub fn expect(ch: &mut (impl Channel + ?Sized), id: u32, body: &[u8], bulk: &[u8], piece: usize) {
    let h = ch.recv_header().unwrap();
    assert_eq!(h, header(id, body.len(), bulk.len()));
    assert_eq!(
        ch.recv_body(h.body_len).unwrap(),
        body,
        "body of frame {id}"
    );
    let mut got = vec![0u8; bulk.len()];
    for p in got.chunks_mut(piece.max(1)) {
        ch.recv_bulk_into(p).unwrap();
    }
    assert!(got == bulk, "payload of frame {id} differs");
}

/// Runs `f` in a thread and fails the test if it takes longer than `limit`.
pub fn within<T: Send + 'static>(limit: Duration, f: impl FnOnce() -> T + Send + 'static) -> T {
    let (tx, rx) = mpsc::channel();
    thread::spawn(move || {
        let _ = tx.send(f());
    });
    rx.recv_timeout(limit)
        .expect("timed out: the channel hung instead of failing")
}

pub fn memcpy_mbps(len: usize, reps: usize) -> f64 {
    let src = pattern(9, len);
    let mut dst = vec![0u8; len];
    dst.copy_from_slice(&src);
    let start = Instant::now();
    for _ in 0..reps {
        dst.copy_from_slice(std::hint::black_box(&src));
        std::hint::black_box(&mut dst);
    }
    (len * reps) as f64 / start.elapsed().as_secs_f64() / 1e6
}

pub fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

pub fn unhex(s: &str) -> Vec<u8> {
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
        .collect()
}

/// Frames with small bodies and payload pieces below, at and above the
/// zero-copy threshold, not multiples of the chunk, sent with `make(false)`
/// (staged) and `make(true)` (zero copy): the peer sees the same stream. One
/// end sends while the other receives, then the other way (two ends that both
/// send more than a window before receiving wait on each other, as with TCP).
pub fn payloads_arrive_the_same<C: Channel + 'static>(make: impl Fn(bool) -> (C, C)) {
    for zero_copy in [false, true] {
        let (a, b) = make(zero_copy);
        // (body, payload length, piece length)
        let frames: Vec<(Vec<u8>, usize, usize)> = vec![
            (b"small".to_vec(), 3, 3),
            (Vec::new(), 3 * MIB + 5, 3 * MIB + 5),
            (b"x".to_vec(), 700 * 1024 + 1, 300 * 1024 + 7),
            (Vec::new(), 0, 1),
            (b"tail".to_vec(), 2 * MIB, 256 * 1024),
            (Vec::new(), 17, 5),
        ];
        let run = |mut ch: C, seed: u32, sends_first: bool| {
            let frames = frames.clone();
            thread::spawn(move || {
                let other = if seed == 1 { 100 } else { 1 };
                for round in 0..2 {
                    if (round == 0) == sends_first {
                        for (i, (body, len, piece)) in frames.iter().enumerate() {
                            let bulk = pattern(seed + i as u32, *len);
                            send(&mut ch, i as u32, body, &bulk, *piece);
                        }
                        ch.flush().unwrap();
                    } else {
                        for (i, (body, len, piece)) in frames.iter().enumerate() {
                            let want = pattern(other + i as u32, *len);
                            expect(&mut ch, i as u32, body, &want, *piece);
                        }
                    }
                }
                ch
            })
        };
        let ta = run(a, 1, true);
        let tb = run(b, 100, false);
        within(Duration::from_secs(60), move || {
            ta.join().expect("end a");
            tb.join().expect("end b");
        });
    }
}
