//! Copies between two GPUs of one server (`cudaMemcpyPeer`), agent to agent,
//! against the `rcud-server` binary with two emulated GPUs, under both
//! isolation modes:
//!
//! - every connection reports the listener's instance id, agent processes
//!   included;
//! - copies both ways, from a few bytes to 64 MiB + 1, land intact, and not
//!   one payload byte passes through the client's connections;
//! - a source with a bad pointer, a destination with a bad range, a wrong
//!   ticket and a stray connection end in CUDA errors on both sides at once,
//!   and both sessions go on working;
//! - a peer that dies in the middle of a copy (a fake agent here, a killed
//!   agent process below) or never comes gives the other side an error,
//!   never a hang, and the server keeps serving.

mod support;

use std::io::{Read, Write};
use std::os::linux::net::SocketAddrExt;
use std::os::unix::net::{SocketAddr, UnixListener, UnixStream};
use std::thread;
use std::time::{Duration, Instant};

use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;
use rcud_proto::ops::{rep, req, Failure};
use rcud_proto::CudaError;
use support::{alive, field, Conn, Rng, ServerProc};

const MB: usize = 1 << 20;

/// Far below the destination's 10 s wait for its source: an error that
/// comes within this came from the failure itself, not from a timeout.
const PROMPT: Duration = Duration::from_secs(5);

fn server(isolation: &str) -> ServerProc {
    ServerProc::start(&["--isolation", isolation, "--emu-gpus", "2"])
}

/// A connection attached to GPU `gpu`.
fn attached(addr: &str, gpu: u32, name: &str) -> Conn {
    let mut c = Conn::connect(addr, name).unwrap_or_else(|e| panic!("connect: {e:?}"));
    c.call(&req::Attach { gpu, window: gpu }, &[], &mut [])
        .expect("transport")
        .expect("attach");
    c
}

fn listen(dst: &mut Conn) -> rep::PeerListen {
    dst.call(&req::PeerListen {}, &[], &mut [])
        .expect("transport")
        .expect("PeerListen")
}

/// The outcome of both halves of one peer copy.
struct Outcome {
    received: Result<(), Failure>,
    sent: Result<(), Failure>,
    took: Duration,
}

/// One peer copy as the client runs it: `PeerReceive` to the destination on
/// a thread, `PeerSend` to the source meanwhile. `ticket` overrides the
/// ticket the source presents.
fn peer_copy_with(
    dst_conn: &mut Conn,
    dst: u64,
    src_conn: &mut Conn,
    src: u64,
    len: u64,
    ticket: Option<[u8; 16]>,
) -> Outcome {
    let listen = listen(dst_conn);
    let start = Instant::now();
    let (received, sent) = thread::scope(|s| {
        let receiver = s.spawn(|| {
            dst_conn
                .call(
                    &req::PeerReceive {
                        dst,
                        len,
                        ticket: listen.ticket,
                    },
                    &[],
                    &mut [],
                )
                .expect("the destination's connection survives")
        });
        let sent = src_conn
            .call(
                &req::PeerSend {
                    src,
                    len,
                    endpoint: listen.endpoint.clone(),
                    ticket: ticket.unwrap_or(listen.ticket),
                },
                &[],
                &mut [],
            )
            .expect("the source's connection survives");
        (receiver.join().expect("receiver thread"), sent)
    });
    Outcome {
        received: received.map(|_| ()),
        sent: sent.map(|_| ()),
        took: start.elapsed(),
    }
}

fn peer_copy(dst_conn: &mut Conn, dst: u64, src_conn: &mut Conn, src: u64, len: u64) -> Outcome {
    peer_copy_with(dst_conn, dst, src_conn, src, len, None)
}

fn code<T>(r: &Result<T, Failure>) -> CudaError {
    match r {
        Ok(_) => CudaError::SUCCESS,
        Err(f) => f.code,
    }
}

/// Copies both ways between GPU 0 and GPU 1, checks every byte, and checks
/// that the client's connections carried none of them.
fn copies_land_intact(isolation: &str) {
    let server = server(isolation);
    let mut a = attached(server.addr(), 0, "peer-a");
    let mut b = attached(server.addr(), 1, "peer-b");
    let instance = a.hello().instance;
    assert_ne!(instance, [0; 16], "the server offers peer copies");
    assert_eq!(b.hello().instance, instance, "one server, one instance id");
    let listening = server
        .wait_log(Duration::from_secs(5), |l| {
            l.contains("rcud-server listening")
        })
        .expect("listening line");
    let hex: String = instance.iter().map(|x| format!("{x:02x}")).collect();
    assert_eq!(field(&listening, "instance"), Some(hex));
    if isolation == "process" {
        // Two agent processes, both speaking for the listener.
        let (pa, pb) = (
            server.agent_pid(a.local_port()),
            server.agent_pid(b.local_port()),
        );
        assert_ne!(pa, pb);
        assert_ne!(pa, server.pid());
    }

    let mut rng = Rng::new(7);
    for len in [1usize, 3, 4096, MB - 1, MB + 1, 3 * MB + 5, 64 * MB + 1] {
        // Offsets inside the allocations, so that ranges, not bases, are used.
        let data = rng.bytes(len);
        let pa = a.malloc(len as u64 + 64);
        let pb = b.malloc(len as u64 + 64);
        a.htod(pa + 7, &data);
        let moved = (a.moved(), b.moved());
        let out = peer_copy(&mut b, pb + 13, &mut a, pa + 7, len as u64);
        assert!(out.sent.is_ok(), "{len} B 0->1: {:?}", out.sent);
        assert!(out.received.is_ok(), "{len} B 0->1: {:?}", out.received);
        assert_eq!(
            (a.moved(), b.moved()),
            moved,
            "no payload byte went through the client"
        );
        let mut back = vec![0u8; len];
        b.dtoh(pb + 13, &mut back);
        assert!(back == data, "{len} B arrived intact on GPU 1");

        // And back, over what GPU 0 held.
        a.memset(pa, 0, len as u64 + 64);
        let moved = (a.moved(), b.moved());
        let out = peer_copy(&mut a, pa + 1, &mut b, pb + 13, len as u64);
        assert!(out.sent.is_ok() && out.received.is_ok(), "{len} B 1->0");
        assert_eq!((a.moved(), b.moved()), moved);
        let mut back = vec![0u8; len + 2];
        a.dtoh(pa, &mut back);
        assert_eq!(back[0], 0, "nothing before the range");
        assert!(back[1..=len] == data[..], "{len} B arrived intact on GPU 0");
        assert_eq!(back[len + 1], 0, "nothing after the range");
        a.free(pa);
        b.free(pb);
    }
}

#[test]
fn copies_land_intact_with_processes() {
    copies_land_intact("process");
}

#[test]
fn copies_land_intact_with_threads() {
    copies_land_intact("thread");
}

/// Bad pointers, a wrong ticket, a stray connection: errors on both sides at
/// once, and the sessions keep working.
fn failures_release_both_sides(isolation: &str) {
    let server = server(isolation);
    let mut a = attached(server.addr(), 0, "peer-a");
    let mut b = attached(server.addr(), 1, "peer-b");
    let len = 2 * MB as u64;
    let pa = a.malloc(len);
    let pb = b.malloc(len);
    let data = Rng::new(3).bytes(len as usize);
    a.htod(pa, &data);

    // The source's range runs past its allocation.
    let out = peer_copy(&mut b, pb, &mut a, pa + 1, len);
    assert_eq!(code(&out.sent), CudaError::INVALID_VALUE);
    assert_eq!(code(&out.received), CudaError::INVALID_VALUE);
    assert!(out.took < PROMPT, "released at once, took {:?}", out.took);

    // A source pointer that is no allocation at all.
    let out = peer_copy(&mut b, pb, &mut a, 0x10, 4);
    assert_eq!(code(&out.sent), CudaError::INVALID_VALUE);
    assert_eq!(code(&out.received), CudaError::INVALID_VALUE);
    assert!(out.took < PROMPT, "{:?}", out.took);

    // The destination's range runs past its allocation.
    let out = peer_copy(&mut b, pb + 4, &mut a, pa, len);
    assert_eq!(code(&out.received), CudaError::INVALID_VALUE);
    assert_eq!(code(&out.sent), CudaError::INVALID_VALUE);
    assert!(out.took < PROMPT, "{:?}", out.took);

    // A ticket that was never issued, or already used.
    let listen_reply = listen(&mut b);
    let mut wrong = listen_reply.ticket;
    wrong[0] ^= 1;
    let r = b
        .call(
            &req::PeerReceive {
                dst: pb,
                len,
                ticket: wrong,
            },
            &[],
            &mut [],
        )
        .expect("transport");
    assert_eq!(code(&r), CudaError::INVALID_VALUE);
    let r = b
        .call(
            &req::PeerReceive {
                dst: pb,
                len,
                ticket: listen_reply.ticket,
            },
            &[],
            &mut [],
        )
        .expect("transport");
    assert_eq!(code(&r), CudaError::INVALID_VALUE, "tickets are single-use");

    // A source presenting a wrong ticket is turned away; the destination
    // goes on waiting for the right one.
    let listen_reply = listen(&mut b);
    let (received, stray, sent) = thread::scope(|s| {
        let receiver = s.spawn(|| {
            b.call(
                &req::PeerReceive {
                    dst: pb,
                    len,
                    ticket: listen_reply.ticket,
                },
                &[],
                &mut [],
            )
            .expect("transport")
        });
        let mut wrong = listen_reply.ticket;
        wrong[15] ^= 0x80;
        let mut send = req::PeerSend {
            src: pa,
            len,
            endpoint: listen_reply.endpoint.clone(),
            ticket: wrong,
        };
        let stray = a.call(&send, &[], &mut []).expect("transport");
        send.ticket = listen_reply.ticket;
        let sent = a.call(&send, &[], &mut []).expect("transport");
        (receiver.join().expect("receiver"), stray, sent)
    });
    assert_eq!(code(&stray), CudaError::INVALID_VALUE);
    assert!(sent.is_ok(), "{sent:?}");
    assert!(received.is_ok(), "{received:?}");
    let mut back = vec![0u8; len as usize];
    b.dtoh(pb, &mut back);
    assert!(back == data);

    // An endpoint of another server, or no endpoint at all, is refused
    // before anything is contacted.
    for endpoint in [
        "rcud-peer/00000000000000000000000000000001/0123456789abcdef".to_string(),
        "@/tmp/.X11-unix/X0".to_string(),
    ] {
        let r = a
            .call(
                &req::PeerSend {
                    src: pa,
                    len,
                    endpoint,
                    ticket: [0; 16],
                },
                &[],
                &mut [],
            )
            .expect("transport");
        assert_eq!(code(&r), CudaError::INVALID_VALUE);
    }

    // Both sessions still work, and so do peer copies.
    let out = peer_copy(&mut a, pa, &mut b, pb, len);
    assert!(out.sent.is_ok() && out.received.is_ok());
    let mut back = vec![0u8; len as usize];
    a.dtoh(pa, &mut back);
    assert!(back == data);
}

#[test]
fn failures_release_both_sides_with_processes() {
    failures_release_both_sides("process");
}

#[test]
fn failures_release_both_sides_with_threads() {
    failures_release_both_sides("thread");
}

/// Writes what a source agent writes first.
fn source_hello(ticket: [u8; 16], len: u64) -> Vec<u8> {
    let mut h = b"RCPC".to_vec();
    h.extend_from_slice(&ticket);
    h.extend_from_slice(&len.to_le_bytes());
    h.extend_from_slice(&0u32.to_le_bytes());
    h
}

/// Peers that die halfway through a copy, played by this test over the
/// agents' own local protocol: the real agent on the other side fails at
/// once, and the server keeps serving.
fn peer_dying_mid_copy(isolation: &str) {
    let server = server(isolation);
    let mut a = attached(server.addr(), 0, "peer-a");
    let mut b = attached(server.addr(), 1, "peer-b");
    let len = 8 * MB as u64;
    let pa = a.malloc(len);
    let pb = b.malloc(len);

    // A source that sends half the bytes and dies.
    let listen_reply = listen(&mut b);
    let start = Instant::now();
    let received = thread::scope(|s| {
        let receiver = s.spawn(|| {
            b.call(
                &req::PeerReceive {
                    dst: pb,
                    len,
                    ticket: listen_reply.ticket,
                },
                &[],
                &mut [],
            )
            .expect("transport")
        });
        let addr = SocketAddr::from_abstract_name(listen_reply.endpoint.as_bytes()).unwrap();
        let mut fake = UnixStream::connect_addr(&addr).expect("connect to the destination");
        fake.write_all(&source_hello(listen_reply.ticket, len))
            .unwrap();
        let mut go = [0u8; 4];
        fake.read_exact(&mut go).unwrap();
        assert_eq!(u32::from_le_bytes(go), 0, "the destination says go");
        fake.write_all(&vec![0xA5; len as usize / 2]).unwrap();
        drop(fake);
        receiver.join().expect("receiver")
    });
    assert_eq!(code(&received), CudaError::DEVICES_UNAVAILABLE);
    let message = received.unwrap_err().message;
    assert!(message.contains("gone"), "{message}");
    assert!(start.elapsed() < PROMPT, "{:?}", start.elapsed());

    // A destination that takes half the bytes and dies.
    let instance: String = a
        .hello()
        .instance
        .iter()
        .map(|x| format!("{x:02x}"))
        .collect();
    let endpoint = format!("rcud-peer/{instance}/00000000fa4e0001");
    let addr = SocketAddr::from_abstract_name(endpoint.as_bytes()).unwrap();
    let listener = UnixListener::bind_addr(&addr).expect("bind the fake destination");
    let start = Instant::now();
    let sent = thread::scope(|s| {
        let fake = s.spawn(move || {
            let (mut conn, _) = listener.accept().expect("the source connects");
            let mut hello = [0u8; 32];
            conn.read_exact(&mut hello).unwrap();
            assert_eq!(&hello[..4], b"RCPC");
            assert_eq!(hello[4..20], [0x42; 16], "the ticket it was given");
            assert_eq!(u64::from_le_bytes(hello[20..28].try_into().unwrap()), len);
            conn.write_all(&0u32.to_le_bytes()).unwrap();
            let mut half = vec![0u8; len as usize / 2];
            conn.read_exact(&mut half).unwrap();
        });
        let sent = a
            .call(
                &req::PeerSend {
                    src: pa,
                    len,
                    endpoint: endpoint.clone(),
                    ticket: [0x42; 16],
                },
                &[],
                &mut [],
            )
            .expect("transport");
        fake.join().expect("fake destination");
        sent
    });
    assert_eq!(code(&sent), CudaError::DEVICES_UNAVAILABLE);
    assert!(start.elapsed() < PROMPT, "{:?}", start.elapsed());

    // Both sessions go on, peer copies included, and new clients are served.
    let data = Rng::new(5).bytes(len as usize);
    a.htod(pa, &data);
    let out = peer_copy(&mut b, pb, &mut a, pa, len);
    assert!(out.sent.is_ok() && out.received.is_ok());
    let mut back = vec![0u8; len as usize];
    b.dtoh(pb, &mut back);
    assert!(back == data);
    let mut c = attached(server.addr(), 1, "peer-c");
    let p = c.malloc(100);
    c.free(p);
}

#[test]
fn peer_dying_mid_copy_with_processes() {
    peer_dying_mid_copy("process");
}

#[test]
fn peer_dying_mid_copy_with_threads() {
    peer_dying_mid_copy("thread");
}

/// A source that never comes: the destination gives up with
/// `cudaErrorTimeout` after its bounded wait, and goes on serving.
#[test]
fn a_source_that_never_comes_times_out() {
    let server = server("thread");
    let mut b = attached(server.addr(), 1, "peer-b");
    let pb = b.malloc(4096);
    let listen_reply = listen(&mut b);
    let start = Instant::now();
    let r = b
        .call(
            &req::PeerReceive {
                dst: pb,
                len: 4096,
                ticket: listen_reply.ticket,
            },
            &[],
            &mut [],
        )
        .expect("transport");
    let took = start.elapsed();
    assert_eq!(code(&r), CudaError::TIMEOUT);
    assert!(took >= Duration::from_secs(9), "{took:?}");
    assert!(took < Duration::from_secs(25), "{took:?}");
    b.memset(pb, 1, 4096);
}

/// Real agent processes killed on either side of a copy.
#[test]
fn killed_peer_agent_processes() {
    let server = server("process");
    let mut a = attached(server.addr(), 0, "peer-a");
    let mut b = attached(server.addr(), 1, "peer-b");
    let len = 4 * MB as u64;
    let pa = a.malloc(len);

    // The destination's agent dies after opening its endpoint: the source
    // cannot reach it and says so at once.
    let listen_reply = listen(&mut b);
    let pid_b = server.agent_pid(b.local_port());
    kill(Pid::from_raw(pid_b as i32), Signal::SIGKILL).expect("kill the destination agent");
    let deadline = Instant::now() + Duration::from_secs(10);
    while alive(pid_b) {
        assert!(Instant::now() < deadline, "the agent did not die");
        thread::sleep(Duration::from_millis(10));
    }
    let start = Instant::now();
    let r = a
        .call(
            &req::PeerSend {
                src: pa,
                len,
                endpoint: listen_reply.endpoint,
                ticket: listen_reply.ticket,
            },
            &[],
            &mut [],
        )
        .expect("transport");
    assert_eq!(code(&r), CudaError::DEVICES_UNAVAILABLE);
    assert!(start.elapsed() < PROMPT, "{:?}", start.elapsed());
    assert!(
        b.call(&req::Malloc { size: 1 }, &[], &mut []).is_err(),
        "b's connection died with its agent"
    );

    // The source's agent dies before it sends: the destination's bounded
    // wait ends with an error.
    let mut b = attached(server.addr(), 1, "peer-b2");
    let pb2 = b.malloc(len);
    let listen_reply = listen(&mut b);
    let pid_a = server.agent_pid(a.local_port());
    kill(Pid::from_raw(pid_a as i32), Signal::SIGKILL).expect("kill the source agent");
    let r = b
        .call(
            &req::PeerReceive {
                dst: pb2,
                len,
                ticket: listen_reply.ticket,
            },
            &[],
            &mut [],
        )
        .expect("transport");
    assert_eq!(code(&r), CudaError::TIMEOUT);

    // The server keeps serving, peer copies included.
    let mut c = attached(server.addr(), 0, "peer-c");
    let pc = c.malloc(len);
    let data = Rng::new(9).bytes(len as usize);
    c.htod(pc, &data);
    let out = peer_copy(&mut b, pb2, &mut c, pc, len);
    assert!(out.sent.is_ok() && out.received.is_ok());
    let mut back = vec![0u8; len as usize];
    b.dtoh(pb2, &mut back);
    assert!(back == data);
}
