//! End-to-end tests: unmodified CUDA programs from `tests/cuda/`, compiled with
//! `nvcc -cudart shared`, run against rcud's `libcudart.so.13` (`librcudart.so`)
//! and an `rcud-server` with the emulated device.
//!
//! Needs `nvcc`: `$RCUD_NVCC`, else `nvcc` on PATH, else the one that
//! `scripts/ensure-nvcc.sh` installs into `<repo>/.venv-cuda`. Without one the
//! tests print `skipped: ...` and pass, unless `RCUD_REQUIRE_CUDA=1`.
//! Needs the whole workspace built (`rcud-server` and `librcudart.so` beside the
//! `rcud` binary): `cargo build [--release] --workspace`.
//!
//! The harness (finding nvcc, building, running with a timeout, starting a
//! server) is in `common/mod.rs`, shared with `kernels.rs`.

mod common;

use std::io::{ErrorKind, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpStream};
use std::process::Command;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use common::{
    assert_emulated_device, build, clean_command, cudart_soname_dir, free_port, local_gpu_present,
    rcud_run, rcud_run_on, run_with_timeout, setup, Env, Run, Server, ENGINES, PROMPT_TIMEOUT,
    RUN_TIMEOUT,
};

/// Runs `BIN ARGS` under `rcud run` on each engine of the emulated device,
/// the same binary each time, and hands each passing run to `check`.
fn run_on_both_engines(env: &Env, bin: &std::path::Path, args: &[&str], check: impl Fn(&Run)) {
    for engine in ENGINES {
        let run = rcud_run_on(env, None, bin, args, RUN_TIMEOUT, Some(engine));
        run.assert_pass(None);
        check(&run);
        eprintln!("{} [{engine}]: passed", bin.display());
    }
}

// ---------------------------------------------------------------------------
// One test per program, under `rcud run` with its embedded server
// ---------------------------------------------------------------------------

#[test]
fn device_query() {
    let Some(env) = setup("device_query") else {
        return;
    };
    let bin = build(env, "device_query");
    run_on_both_engines(env, &bin, &[], |run| {
        run.assert_contains("device count: ");
        run.assert_contains("device 0: name: ");
        run.assert_contains("device 0: totalGlobalMem: ");
        run.assert_contains("runtime version: 13.");
        run.assert_line("profiler start/stop: ok");
        run.assert_line("device reset: ok");
        run.assert_line("after reset: malloc/memset/memcpy ok");
        if local_gpu_present() {
            eprintln!(
                "device_query: an NVIDIA driver is present; not checking for the emulated device"
            );
        } else {
            assert_emulated_device(run);
        }
    });
}

#[test]
fn memcpy() {
    let Some(env) = setup("memcpy") else { return };
    let bin = build(env, "memcpy");
    run_on_both_engines(env, &bin, &[], |run| {
        let sizes: [usize; 13] = [
            1,
            2,
            3,
            7,
            255,
            256,
            4097,
            65535,
            1 << 20,
            (1 << 20) + 1,
            (3 << 20) + 5,
            16 << 20,
            64 << 20,
        ];
        for size in sizes {
            run.assert_line(&format!(
                "size {size}: ok (H2D/D2D/D2H, offsets, default, H2H)"
            ));
        }
        run.assert_line("sub-range D2D 2097152 bytes within one allocation: ok");
    });
}

#[test]
fn memset() {
    let Some(env) = setup("memset") else { return };
    let bin = build(env, "memset");
    run_on_both_engines(env, &bin, &[], |run| {
        for value in ["0x0", "0xab", "0x1ff"] {
            for size in [1usize, 3, 255, 4097, 65537, (1 << 20) + 3, (4 << 20) + 1] {
                run.assert_line(&format!(
                    "memset value {value} size {size}: ok (offsets 0, 1, 13)"
                ));
            }
        }
        run.assert_contains("layered memset size ");
    });
}

#[test]
fn pinned() {
    let Some(env) = setup("pinned") else { return };
    let bin = build(env, "pinned");
    run_on_both_engines(env, &bin, &[], |run| {
        run.assert_line("cudaMallocHost 33554432 bytes: copies ok");
        for kind in [
            "cudaHostAllocDefault",
            "cudaHostAllocPortable",
            "cudaHostAllocMapped",
            "cudaHostAllocWriteCombined",
            "cudaHostAllocPortable|cudaHostAllocMapped",
        ] {
            run.assert_line(&format!("{kind} 33554432 bytes: ok"));
        }
        run.assert_line("cudaHostRegister 33558528 bytes: copies ok");
        run.assert_line(
            "cudaHostRegister(reg, reg_size, cudaHostRegisterDefault) -> \
             cudaErrorHostMemoryAlreadyRegistered",
        );
        run.assert_line("cudaHostUnregister(reg) -> cudaErrorHostMemoryNotRegistered");
        run.assert_line("cudaHostUnregister(pageable) -> cudaErrorHostMemoryNotRegistered");
        run.assert_line("cudaHostRegister/cudaHostUnregister round trips: ok");
        run.assert_line("cudaFreeHost: ok");
    });
}

#[test]
fn errors() {
    let Some(env) = setup("errors") else { return };
    let bin = build(env, "errors");
    run_on_both_engines(env, &bin, &[], |run| {
        for line in [
            "cudaSetDevice(count) -> cudaErrorInvalidDevice",
            "cudaGetDeviceProperties(&prop, -1) -> cudaErrorInvalidDevice",
            "cudaMalloc(&p, 1<<50) -> cudaErrorMemoryAllocation",
            "cudaFree((void*)0x1234) -> cudaErrorInvalidValue",
            "cudaFree(NULL) -> cudaSuccess",
            "cudaFree(p) twice -> cudaErrorInvalidValue",
            "cudaMemcpy(H2D, invalid device pointer) -> cudaErrorInvalidValue",
            "cudaMemcpy(D2H, past the end of the allocation) -> cudaErrorInvalidValue",
            "cudaMemset(past the end of the allocation) -> cudaErrorInvalidValue",
            "cudaPeekAtLastError() -> cudaErrorInvalidDevice",
            "cudaPeekAtLastError() again -> cudaErrorInvalidDevice",
            "cudaGetLastError() -> cudaErrorInvalidDevice",
            "cudaGetLastError() again -> cudaSuccess",
            "cudaGetLastError() after two errors -> cudaErrorInvalidValue",
            "cudaGetErrorString(cudaErrorInvalidValue) = \"invalid argument\"",
            "cudaGetErrorName(12345) = \"unrecognized error code\"",
            "after errors: malloc/memcpy round trip ok",
        ] {
            run.assert_line(line);
        }
    });
}

#[test]
fn bandwidth() {
    let Some(env) = setup("bandwidth") else {
        return;
    };
    let bin = build(env, "bandwidth");
    run_on_both_engines(env, &bin, &["16"], |run| {
        run.assert_line("verify pageable: ok");
        run.assert_line("verify pinned: ok");
        for (memory, copy) in [
            ("pageable", "H2D"),
            ("pageable", "D2H"),
            ("pinned", "H2D"),
            ("pinned", "D2H"),
            ("device", "D2D"),
        ] {
            let row = run.stdout.lines().find_map(|l| {
                let fields: Vec<&str> = l.split_whitespace().collect();
                (fields.len() == 6 && fields[0] == memory && fields[1] == copy).then_some(fields)
            });
            let Some(fields) = row else {
                run.fail(&format!("no table row for {memory} {copy}"), None);
            };
            if fields[2] != "16.0" {
                run.fail(
                    &format!(
                        "{memory} {copy}: size column is {}, expected 16.0",
                        fields[2]
                    ),
                    None,
                );
            }
            match fields[5].parse::<f64>() {
                Ok(gbs) if gbs.is_finite() && gbs > 0.0 => {}
                _ => run.fail(
                    &format!("{memory} {copy}: bad GB/s value {}", fields[5]),
                    None,
                ),
            }
        }
    });
}

// ---------------------------------------------------------------------------
// Ways of binding an unmodified program to rcud, against a separate server
// ---------------------------------------------------------------------------

/// (a) LD_LIBRARY_PATH with `libcudart.so.13 -> librcudart.so`, and RCUD_SERVERS.
#[test]
fn binding_ld_library_path() {
    let Some(env) = setup("binding_ld_library_path") else {
        return;
    };
    let bin = build(env, "device_query");
    let server = Server::start(env);
    let libdir = cudart_soname_dir(env);
    let mut cmd = clean_command(&bin);
    cmd.env("LD_LIBRARY_PATH", libdir.path())
        .env("RCUD_SERVERS", server.addr.to_string());
    let run = run_with_timeout(cmd, RUN_TIMEOUT);
    run.assert_pass(Some(&server));
    assert_emulated_device(&run);
}

/// (b) LD_PRELOAD of `librcudart.so` (its soname satisfies the program's
/// dependency on libcudart.so.13), and RCUD_SERVERS.
#[test]
fn binding_ld_preload() {
    let Some(env) = setup("binding_ld_preload") else {
        return;
    };
    let bin = build(env, "device_query");
    let server = Server::start(env);
    let mut cmd = clean_command(&bin);
    cmd.env("LD_PRELOAD", &env.cudart)
        .env("RCUD_SERVERS", server.addr.to_string());
    let run = run_with_timeout(cmd, RUN_TIMEOUT);
    run.assert_pass(Some(&server));
    assert_emulated_device(&run);
}

/// (c) `rcud run --server ADDR`.
#[test]
fn binding_rcud_run_server() {
    let Some(env) = setup("binding_rcud_run_server") else {
        return;
    };
    let bin = build(env, "device_query");
    let server = Server::start(env);
    let run = rcud_run(env, Some(&server), &bin, &[]);
    run.assert_pass(Some(&server));
    assert_emulated_device(&run);
}

/// (d) No server listening: the program fails promptly, and says why.
#[test]
fn unreachable_server_fails_promptly() {
    let Some(env) = setup("unreachable_server_fails_promptly") else {
        return;
    };
    let bin = build(env, "device_query");
    let libdir = cudart_soname_dir(env);
    let addr = format!("127.0.0.1:{}", free_port());
    let mut cmd = clean_command(&bin);
    cmd.env("LD_LIBRARY_PATH", libdir.path())
        .env("RCUD_SERVERS", &addr);
    let run = run_with_timeout(cmd, PROMPT_TIMEOUT);
    if run.status.success() {
        run.fail(
            &format!("device_query succeeded with no server at {addr}"),
            None,
        );
    }
    if !run.stderr.to_lowercase().contains("rcud") {
        run.fail("stderr does not mention rcud", None);
    }
}

// ---------------------------------------------------------------------------
// The server survives hostile connections
// ---------------------------------------------------------------------------

/// A xorshift64* generator seeded from the clock: different garbage each run.
struct Garbage(u64);

impl Garbage {
    fn new() -> Self {
        let nanos = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos() as u64);
        Garbage((nanos ^ (u64::from(std::process::id()) << 32)) | 1)
    }

    fn bytes(&mut self, n: usize) -> Vec<u8> {
        (0..n)
            .map(|_| {
                self.0 ^= self.0 >> 12;
                self.0 ^= self.0 << 25;
                self.0 ^= self.0 >> 27;
                (self.0.wrapping_mul(0x2545_F491_4F6C_DD1D) >> 56) as u8
            })
            .collect()
    }
}

/// A well-formed client hello as `rcud-proto` frames it: u32 length, magic,
/// u16 version, u32-length-prefixed client name (all little-endian).
fn client_hello() -> Vec<u8> {
    let name = b"e2e-garbage";
    let mut body = Vec::new();
    body.extend_from_slice(b"RCUD");
    body.extend_from_slice(&1u16.to_le_bytes());
    body.extend_from_slice(&(name.len() as u32).to_le_bytes());
    body.extend_from_slice(name);
    let mut out = (body.len() as u32).to_le_bytes().to_vec();
    out.extend_from_slice(&body);
    out
}

/// A frame header as `rcud-proto` encodes it (24 bytes, little-endian).
fn frame_header(op: u16, body_len: u32, id: u32, bulk_len: u64) -> Vec<u8> {
    let mut h = Vec::with_capacity(24);
    h.extend_from_slice(&0x5243u16.to_le_bytes()); // magic "RC"
    h.push(1); // request
    h.push(0); // flags
    h.extend_from_slice(&op.to_le_bytes());
    h.extend_from_slice(&0u16.to_le_bytes());
    h.extend_from_slice(&body_len.to_le_bytes());
    h.extend_from_slice(&id.to_le_bytes());
    h.extend_from_slice(&bulk_len.to_le_bytes());
    h
}

fn connect(addr: SocketAddr) -> TcpStream {
    let stream = TcpStream::connect_timeout(&addr, Duration::from_secs(5))
        .unwrap_or_else(|e| panic!("connect to rcud-server at {addr}: {e}"));
    stream
        .set_write_timeout(Some(Duration::from_secs(5)))
        .expect("write timeout");
    stream
        .set_read_timeout(Some(Duration::from_millis(200)))
        .expect("read timeout");
    stream
}

/// Writes `bytes` (ignoring errors: the server may close early), then reads
/// whatever the server answers until it closes the connection or 5 s pass.
fn send_and_drain(addr: SocketAddr, bytes: &[u8]) {
    let mut stream = connect(addr);
    let _ = stream.write_all(bytes);
    let _ = stream.flush();
    let deadline = Instant::now() + Duration::from_secs(5);
    let mut buf = [0u8; 4096];
    while Instant::now() < deadline {
        match stream.read(&mut buf) {
            Ok(0) => break,
            Ok(_) => {}
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {}
            Err(_) => break,
        }
    }
}

/// Writes `bytes` and closes the connection at once.
fn send_and_close(addr: SocketAddr, bytes: &[u8]) {
    let mut stream = connect(addr);
    let _ = stream.write_all(bytes);
    let _ = stream.shutdown(Shutdown::Both);
}

#[test]
fn server_survives_garbage() {
    let Some(env) = setup("server_survives_garbage") else {
        return;
    };
    let bin = build(env, "device_query");
    let mut server = Server::start(env);
    let addr = server.addr;
    let mut garbage = Garbage::new();
    let hello = client_hello();

    // Random bytes.
    send_and_drain(addr, &garbage.bytes(64 * 1024));
    server.assert_running();
    // A hello cut short, then the connection closed.
    send_and_close(addr, &hello[..hello.len() / 2]);
    server.assert_running();
    // A hello claiming to be 4 GiB long.
    let mut huge = u32::MAX.to_le_bytes().to_vec();
    huge.extend_from_slice(&garbage.bytes(64));
    send_and_drain(addr, &huge);
    server.assert_running();
    // A valid hello, then a frame with absurd body and bulk lengths.
    let mut frame = hello.clone();
    frame.extend_from_slice(&frame_header(0xFFFF, u32::MAX, 1, u64::MAX));
    frame.extend_from_slice(&garbage.bytes(256));
    send_and_drain(addr, &frame);
    server.assert_running();
    // A valid hello, then a frame announcing 1 TiB of bulk data, and the client
    // gone mid-transfer.
    let mut frame = hello.clone();
    frame.extend_from_slice(&frame_header(0xFFFF, 0, 2, 1 << 40));
    frame.extend_from_slice(&garbage.bytes(4096));
    send_and_close(addr, &frame);
    server.assert_running();

    // A client stuck in the middle of its hello must not hold up the others.
    let mut stalled = connect(addr);
    let _ = stalled.write_all(&hello[..3]);

    let run = rcud_run(env, Some(&server), &bin, &[]);
    run.assert_pass(Some(&server));
    assert_emulated_device(&run);
    server.assert_running();
    drop(stalled);
}

#[test]
fn unimplemented_functions_fail_loudly_and_are_logged_once() {
    let Some(env) = setup("unimplemented") else {
        return;
    };
    let program = build(env, "unimplemented");
    let mut cmd = Command::new(&env.rcud);
    cmd.env_remove("LD_PRELOAD")
        .env_remove("RCUD_SERVERS")
        .env("RCUD_LOG", "warn")
        .arg("run")
        .arg("--")
        .arg(&program);
    let run = run_with_timeout(cmd, RUN_TIMEOUT);
    run.assert_pass(None);
    run.assert_line(
        "cudaDeviceGetDevResource(0, &res, cudaDevResourceTypeSm) -> cudaErrorNotSupported",
    );
    let mentions = run
        .stderr
        .matches("cudaDeviceGetDevResource is not supported by rcud: ")
        .count();
    if mentions != 1 {
        run.fail(
            &format!(
                "expected the log to name cudaDeviceGetDevResource once, it did {mentions} times"
            ),
            None,
        );
    }
}
