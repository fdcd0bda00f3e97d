//! The stand-ins for libibverbs and librdmacm (`tests/fake_ibverbs.c`,
//! `tests/fake_rdmacm.c`) built as one library, and running a test in a
//! child process whose rdma-core provider loads it.
//!
//! The provider opens its libraries once per process and reads the path
//! overrides then, so a test that needs the stand-ins (or any environment of
//! its own) starts this test binary again as a child with that environment:
//!
//! ```ignore
//! #[test]
//! fn my_test() {
//!     if with_fake_rdma("my_test", &[]) {
//!         return; // parent: the child ran the body (or no C compiler)
//!     }
//!     // child: rdma_core sees the loopback adapter "fakeib0", RDMA CM works
//! }
//! ```
//!
//! Every IP address reaches the loopback adapter (`127.0.0.1` is fine).
#![allow(dead_code, unreachable_pub)]

use std::ffi::c_long;
use std::path::PathBuf;
use std::process::Command;
use std::sync::OnceLock;

/// Set in the child that runs a test body.
pub const CHILD_ENV: &str = "RCUD_RDMA_CORE_CHILD";
/// The adapter the stand-in lists.
pub const FAKE_DEVICE: &str = "fakeib0";

/// The combined stand-in library, built once per test binary next to it with
/// the C compiler (`$CC`, else `cc`); `None` (said on stderr) without one.
pub fn fake_rdma_library() -> Option<PathBuf> {
    static BUILT: OnceLock<Option<PathBuf>> = OnceLock::new();
    BUILT
        .get_or_init(|| {
            let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/tests");
            let source = format!("{dir}/fake_rdmacm.c");
            let out_dir = std::env::current_exe()
                .ok()?
                .parent()?
                .join("rcud-fake-rdma");
            std::fs::create_dir_all(&out_dir).ok()?;
            let out = out_dir.join("libfakerdma.so");
            let cc = std::env::var("CC").unwrap_or_else(|_| "cc".into());
            // Built under a temporary name and renamed, so that test
            // binaries building at the same time never load a partial file.
            let partial = out_dir.join(format!("libfakerdma.so.{}", std::process::id()));
            match Command::new(&cc)
                .args(["-shared", "-fPIC", "-O1", "-pthread", "-o"])
                .arg(&partial)
                .arg(&source)
                .status()
            {
                Ok(s) if s.success() => {
                    std::fs::rename(&partial, &out).ok()?;
                    Some(out)
                }
                Ok(s) => panic!("{cc} failed to build {source}: {s}"),
                Err(e) => {
                    eprintln!("no C compiler ({cc}: {e}): the stand-in tests are skipped");
                    None
                }
            }
        })
        .clone()
}

/// The environment that makes the rdma-core provider load the stand-ins:
/// `RCUD_IBVERBS_LIBRARY` and `RCUD_RDMACM_LIBRARY` both naming the combined
/// library. `None` without a C compiler.
pub fn fake_rdma_env() -> Option<Vec<(&'static str, String)>> {
    let lib = fake_rdma_library()?.to_string_lossy().into_owned();
    Some(vec![
        ("RCUD_IBVERBS_LIBRARY", lib.clone()),
        ("RCUD_RDMACM_LIBRARY", lib),
    ])
}

/// In the parent: runs `test` (its full name as `cargo test` lists it) in a
/// child process with `env` set, asserts that it passed, and returns `true`
/// (the caller returns). In the child: returns `false` (the caller runs the
/// test body).
pub fn run_in_child(test: &str, env: &[(&str, &str)]) -> bool {
    if std::env::var_os(CHILD_ENV).is_some() {
        return false;
    }
    let exe = std::env::current_exe().unwrap();
    let out = Command::new(exe)
        .args([test, "--exact", "--nocapture", "--test-threads=1"])
        .env(CHILD_ENV, "1")
        .envs(env.iter().copied())
        .output()
        .unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "child {test} failed:\n{text}");
    assert!(
        text.contains("1 passed"),
        "child {test} ran no test:\n{text}"
    );
    true
}

/// [`run_in_child`] with the stand-ins loaded (and `env` besides, e.g. the
/// knobs `FAKE_IBV_LINK_LAYER=ethernet` or `FAKE_RDMACM_NO_DEVICE=1`).
/// Returns `true` in the parent, also when the stand-ins cannot be built.
pub fn with_fake_rdma(test: &str, env: &[(&str, &str)]) -> bool {
    if std::env::var_os(CHILD_ENV).is_some() {
        return false;
    }
    let Some(vars) = fake_rdma_env() else {
        return true;
    };
    let mut all: Vec<(&str, &str)> = vars.iter().map(|(k, v)| (*k, v.as_str())).collect();
    all.extend_from_slice(env);
    run_in_child(test, &all)
}

fn counter(symbol: &[u8]) -> c_long {
    let path = std::env::var("RCUD_IBVERBS_LIBRARY").unwrap();
    // SAFETY: the stand-in, already loaded by the provider; no initialisers.
    let lib = unsafe { libloading::Library::new(path) }.unwrap();
    // SAFETY: the prototype of both counters: `long f(void)`.
    let f = unsafe { lib.get::<unsafe extern "C" fn() -> c_long>(symbol) }.unwrap();
    // SAFETY: takes nothing, reads a counter under the stand-in's lock.
    unsafe { f() }
}

/// In a child: verbs objects the stand-in still holds (contexts, domains,
/// regions, channels, queues, queue pairs); 0 once everything is dropped.
pub fn fake_verbs_live_objects() -> c_long {
    counter(b"fake_ibv_live_objects")
}

/// In a child: RDMA CM objects still held (event channels, ids, events
/// taken and not acknowledged); 0 once everything is dropped.
pub fn fake_cm_live_objects() -> c_long {
    counter(b"fake_rdmacm_live_objects")
}

/// In a child: queues an asynchronous event of raw type `ty` (verbs.h's
/// `enum ibv_event_type`) on the stand-in's open contexts (a queue-pair
/// event on that queue pair's context only, moving it to the error state);
/// returns how many contexts got it.
pub fn fake_inject_async_event(ty: u32, qp_num: u32, port: i32) -> i32 {
    let path = std::env::var("RCUD_IBVERBS_LIBRARY").unwrap();
    // SAFETY: the stand-in, already loaded by the provider; no initialisers.
    let lib = unsafe { libloading::Library::new(path) }.unwrap();
    // SAFETY: the injector's prototype.
    let f = unsafe {
        lib.get::<unsafe extern "C" fn(u32, u32, std::ffi::c_int) -> std::ffi::c_int>(
            b"fake_ibv_inject_async_event",
        )
    }
    .unwrap();
    // SAFETY: plain values; the stand-in takes its lock.
    unsafe { f(ty, qp_num, port) }
}

/// In a child: asynchronous events taken and not acknowledged.
pub fn fake_async_events_unacked() -> c_long {
    counter(b"fake_ibv_async_events_unacked")
}
