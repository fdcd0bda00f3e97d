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
//! server) is at the top of this file; the tests follow it.

use std::collections::HashMap;
use std::fs;
use std::io::{ErrorKind, Read, Seek, SeekFrom, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::{Arc, Mutex, OnceLock};
use std::thread::sleep;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

// ---------------------------------------------------------------------------
// Harness
// ---------------------------------------------------------------------------

/// Limit for one CUDA program run.
const RUN_TIMEOUT: Duration = Duration::from_secs(120);
/// Limit for a run that must fail fast (no server listening).
const PROMPT_TIMEOUT: Duration = Duration::from_secs(30);
/// Limit for `rcud-server` to start accepting connections.
const SERVER_START_TIMEOUT: Duration = Duration::from_secs(30);

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("cli/ lies inside the repository")
        .to_path_buf()
}

/// Where the test programs are built: `<repo>/target/cuda-tests`.
fn cuda_build_dir() -> PathBuf {
    repo_root().join("target").join("cuda-tests")
}

/// What every test needs: a compiler and the built workspace.
struct Env {
    nvcc: PathBuf,
    /// A directory holding `libcudart.so` for the linker, when nvcc's own lib
    /// directory has only `libcudart.so.13` (the PyPI toolkit).
    link_dir: Option<PathBuf>,
    rcud: PathBuf,
    server: PathBuf,
    cudart: PathBuf,
}

/// The test environment, or `None` (after printing `skipped: ...`) when no
/// nvcc exists and `RCUD_REQUIRE_CUDA` is not `1`. Panics when the workspace
/// is not built.
fn setup(test: &str) -> Option<&'static Env> {
    static ENV: OnceLock<Result<Option<Env>, String>> = OnceLock::new();
    match ENV.get_or_init(init_env) {
        Ok(Some(env)) => Some(env),
        Ok(None) => {
            // Straight to stderr, not through `eprintln!`, which the test
            // harness captures: the skip should be visible.
            let _ = writeln!(
                std::io::stderr(),
                "skipped: {test}: no nvcc found (set RCUD_NVCC, put nvcc on PATH, or run \
                 scripts/ensure-nvcc.sh); set RCUD_REQUIRE_CUDA=1 to make this a failure"
            );
            None
        }
        Err(e) => panic!("{e}"),
    }
}

fn init_env() -> Result<Option<Env>, String> {
    let Some(nvcc) = find_nvcc()? else {
        if std::env::var("RCUD_REQUIRE_CUDA").as_deref() == Ok("1") {
            return Err(
                "RCUD_REQUIRE_CUDA=1 but no nvcc was found: run scripts/ensure-nvcc.sh \
                        (it installs the CUDA 13 compiler from PyPI into .venv-cuda), put nvcc \
                        on PATH, or set RCUD_NVCC"
                    .into(),
            );
        }
        return Ok(None);
    };
    let rcud = PathBuf::from(env!("CARGO_BIN_EXE_rcud"));
    let dir = rcud
        .parent()
        .ok_or_else(|| format!("{} has no parent directory", rcud.display()))?;
    let release = if dir.file_name().is_some_and(|n| n == "release") {
        " --release"
    } else {
        ""
    };
    let server = dir.join("rcud-server");
    let cudart = dir.join("librcudart.so");
    for needed in [&server, &cudart] {
        if !needed.is_file() {
            return Err(format!(
                "{} is missing: build the workspace first: cargo build{release} --workspace",
                needed.display()
            ));
        }
    }
    let link_dir = cudart_link_dir(&nvcc)?;
    Ok(Some(Env {
        nvcc,
        link_dir,
        rcud,
        server,
        cudart,
    }))
}

fn is_executable(path: &Path) -> bool {
    fs::metadata(path).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// `$RCUD_NVCC`, else `nvcc` on PATH, else
/// `<repo>/.venv-cuda/lib/python*/site-packages/nvidia/cu13/bin/nvcc`.
fn find_nvcc() -> Result<Option<PathBuf>, String> {
    if let Some(explicit) = std::env::var_os("RCUD_NVCC").filter(|v| !v.is_empty()) {
        let path = PathBuf::from(explicit);
        if !is_executable(&path) {
            return Err(format!(
                "RCUD_NVCC={} is not an executable file",
                path.display()
            ));
        }
        return Ok(Some(path));
    }
    if let Some(path) = std::env::var_os("PATH") {
        for dir in std::env::split_paths(&path) {
            let candidate = dir.join("nvcc");
            if is_executable(&candidate) {
                return Ok(Some(candidate));
            }
        }
    }
    let venv_lib = repo_root().join(".venv-cuda").join("lib");
    if let Ok(entries) = fs::read_dir(&venv_lib) {
        let mut pythons: Vec<PathBuf> = entries
            .flatten()
            .filter(|e| e.file_name().to_string_lossy().starts_with("python"))
            .map(|e| e.path())
            .collect();
        pythons.sort();
        for python in pythons {
            let candidate = python.join("site-packages/nvidia/cu13/bin/nvcc");
            if is_executable(&candidate) {
                return Ok(Some(candidate));
            }
        }
    }
    Ok(None)
}

/// nvcc links `-cudart shared` against `libcudart.so`; the PyPI toolkit ships
/// only `libcudart.so.13`. Then this makes `<build dir>/cudart-link/libcudart.so`
/// pointing at it and returns that directory for `-L`.
fn cudart_link_dir(nvcc: &Path) -> Result<Option<PathBuf>, String> {
    let real = fs::canonicalize(nvcc).map_err(|e| format!("{}: {e}", nvcc.display()))?;
    let Some(lib) = real
        .parent()
        .and_then(Path::parent)
        .map(|top| top.join("lib"))
    else {
        return Ok(None);
    };
    let so13 = lib.join("libcudart.so.13");
    if lib.join("libcudart.so").exists() || !so13.is_file() {
        return Ok(None);
    }
    let dir = cuda_build_dir().join("cudart-link");
    fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let link = dir.join("libcudart.so");
    if fs::read_link(&link).ok().as_deref() != Some(so13.as_path()) {
        let _ = fs::remove_file(&link);
        match std::os::unix::fs::symlink(&so13, &link) {
            Ok(()) => {}
            Err(e) if e.kind() == ErrorKind::AlreadyExists => {}
            Err(e) => return Err(format!("cannot create {}: {e}", link.display())),
        }
    }
    Ok(Some(dir))
}

/// Builds `tests/cuda/<name>.cu` into `<repo>/target/cuda-tests/<name>` once per
/// test process, and not at all when the binary is newer than the source.
fn build(env: &Env, name: &str) -> PathBuf {
    type Cell = Arc<OnceLock<Result<PathBuf, String>>>;
    static BUILDS: OnceLock<Mutex<HashMap<String, Cell>>> = OnceLock::new();
    let cell: Cell = BUILDS
        .get_or_init(Default::default)
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
        .entry(name.to_string())
        .or_default()
        .clone();
    match cell.get_or_init(|| compile(env, name)) {
        Ok(path) => path.clone(),
        Err(e) => panic!("{e}"),
    }
}

fn modified(path: &Path) -> Option<SystemTime> {
    fs::metadata(path).and_then(|m| m.modified()).ok()
}

fn compile(env: &Env, name: &str) -> Result<PathBuf, String> {
    let src = repo_root()
        .join("tests")
        .join("cuda")
        .join(format!("{name}.cu"));
    let out_dir = cuda_build_dir();
    let out = out_dir.join(name);
    let src_time = modified(&src).ok_or_else(|| format!("{} does not exist", src.display()))?;
    // The shared header counts as a source of every program.
    let header = repo_root().join("tests").join("cuda").join("check.h");
    let src_time = modified(&header).map_or(src_time, |h| h.max(src_time));
    if modified(&out).is_some_and(|t| t > src_time) {
        return Ok(out);
    }
    fs::create_dir_all(&out_dir).map_err(|e| format!("{}: {e}", out_dir.display()))?;
    let tmp = out_dir.join(format!(".{name}.{}.tmp", std::process::id()));
    let mut cmd = Command::new(&env.nvcc);
    cmd.args(["-cudart", "shared", "-O2", "-o"])
        .arg(&tmp)
        .arg(&src);
    if let Some(dir) = &env.link_dir {
        cmd.arg(format!("-L{}", dir.display()));
    }
    let output = cmd
        .output()
        .map_err(|e| format!("cannot run {}: {e}", env.nvcc.display()))?;
    if !output.status.success() {
        let _ = fs::remove_file(&tmp);
        return Err(format!(
            "nvcc failed to compile {} ({}):\n{:?}\n{}{}",
            src.display(),
            output.status,
            cmd,
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        ));
    }
    fs::rename(&tmp, &out).map_err(|e| format!("{} -> {}: {e}", tmp.display(), out.display()))?;
    Ok(out)
}

/// The outcome of one finished command.
struct Run {
    what: String,
    status: ExitStatus,
    stdout: String,
    stderr: String,
    elapsed: Duration,
}

impl Run {
    fn transcript(&self) -> String {
        format!(
            "command: {}\nstatus: {} after {:.1?}\n--- stdout ---\n{}\n--- stderr ---\n{}",
            self.what, self.status, self.elapsed, self.stdout, self.stderr
        )
    }

    fn fail(&self, why: &str, server: Option<&Server>) -> ! {
        let log = server.map(|s| format!("\n--- rcud-server log ---\n{}", s.log_text()));
        panic!("{why}\n{}{}", self.transcript(), log.unwrap_or_default())
    }

    /// Exit status 0 and `PASS` as the last line of stdout.
    fn assert_pass(&self, server: Option<&Server>) {
        if !self.status.success() {
            self.fail("the program did not exit with status 0", server);
        }
        let last = self
            .stdout
            .lines()
            .map(str::trim)
            .rev()
            .find(|l| !l.is_empty());
        if last != Some("PASS") {
            self.fail("the last line of stdout is not PASS", server);
        }
    }

    /// Some stdout line, trimmed, equals `line`.
    fn assert_line(&self, line: &str) {
        if !self.stdout.lines().any(|l| l.trim() == line) {
            self.fail(&format!("no stdout line `{line}`"), None);
        }
    }

    /// Some stdout line contains `needle`.
    fn assert_contains(&self, needle: &str) {
        if !self.stdout.lines().any(|l| l.contains(needle)) {
            self.fail(&format!("no stdout line contains `{needle}`"), None);
        }
    }
}

/// Sends SIGKILL to the process group led by `child` (every process it
/// started, e.g. an embedded server), then to `child` itself.
fn kill_tree(child: &mut Child) {
    let _ = Command::new("kill")
        .args(["-KILL", "--", &format!("-{}", child.id())])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status();
    let _ = child.kill();
}

fn read_all(file: &mut fs::File) -> String {
    let mut bytes = Vec::new();
    let _ = file.seek(SeekFrom::Start(0));
    let _ = file.read_to_end(&mut bytes);
    String::from_utf8_lossy(&bytes).into_owned()
}

/// Runs `cmd` in its own process group with stdout and stderr captured in files
/// (so that nothing blocks on a full pipe), polling up to `timeout`. On timeout
/// kills the whole group and panics with what it printed.
fn run_with_timeout(mut cmd: Command, timeout: Duration) -> Run {
    let what = format!("{cmd:?}");
    let mut out = tempfile::tempfile().expect("temporary file for stdout");
    let mut err = tempfile::tempfile().expect("temporary file for stderr");
    cmd.stdin(Stdio::null())
        .stdout(Stdio::from(out.try_clone().expect("clone stdout file")))
        .stderr(Stdio::from(err.try_clone().expect("clone stderr file")))
        .process_group(0);
    let start = Instant::now();
    let mut child = cmd
        .spawn()
        .unwrap_or_else(|e| panic!("cannot start {what}: {e}"));
    let finished = loop {
        match child.try_wait() {
            Ok(Some(status)) => break Some(status),
            Ok(None) if start.elapsed() >= timeout => break None,
            Ok(None) => sleep(Duration::from_millis(20)),
            Err(e) => panic!("waiting for {what}: {e}"),
        }
    };
    let status = match finished {
        Some(status) => status,
        None => {
            kill_tree(&mut child);
            let status = child.wait().expect("wait for the killed process");
            let run = Run {
                what,
                status,
                stdout: read_all(&mut out),
                stderr: read_all(&mut err),
                elapsed: start.elapsed(),
            };
            panic!(
                "did not finish within {timeout:?} (hung?); killed it\n{}",
                run.transcript()
            );
        }
    };
    Run {
        what,
        status,
        stdout: read_all(&mut out),
        stderr: read_all(&mut err),
        elapsed: start.elapsed(),
    }
}

/// A command for a CUDA program with the client-side variables of the calling
/// environment removed, so that each test sets exactly the binding it tests.
fn clean_command(program: &Path) -> Command {
    let mut cmd = Command::new(program);
    cmd.env_remove("LD_PRELOAD")
        .env_remove("LD_LIBRARY_PATH")
        .env_remove("RCUD_SERVERS");
    cmd
}

/// `rcud run [--server ADDR] -- PROGRAM ARGS`.
fn rcud_run(env: &Env, server: Option<&Server>, program: &Path, args: &[&str]) -> Run {
    let mut cmd = Command::new(&env.rcud);
    cmd.env_remove("LD_PRELOAD")
        .env_remove("RCUD_SERVERS")
        .arg("run");
    if let Some(server) = server {
        cmd.arg("--server").arg(server.addr.to_string());
    }
    cmd.arg("--").arg(program).args(args);
    run_with_timeout(cmd, RUN_TIMEOUT)
}

/// A port on 127.0.0.1 that was free a moment ago.
fn free_port() -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1:0");
    listener.local_addr().expect("local address").port()
}

/// An `rcud-server --backend emu` on a loopback port, killed (with its agents)
/// when dropped.
struct Server {
    child: Child,
    addr: SocketAddr,
    log: tempfile::NamedTempFile,
}

impl Server {
    fn start(env: &Env) -> Server {
        let mut last_error = String::new();
        // A port picked by binding port 0 can be taken by someone else before
        // the server binds it: try a few.
        for _ in 0..3 {
            let addr = SocketAddr::from(([127, 0, 0, 1], free_port()));
            let log = tempfile::NamedTempFile::new().expect("temporary log file");
            let mut cmd = Command::new(&env.server);
            cmd.arg("--listen")
                .arg(addr.to_string())
                .args(["--backend", "emu"])
                .stdin(Stdio::null())
                .stdout(Stdio::from(log.reopen().expect("reopen log")))
                .stderr(Stdio::from(log.reopen().expect("reopen log")))
                .process_group(0);
            let child = cmd
                .spawn()
                .unwrap_or_else(|e| panic!("cannot start {cmd:?}: {e}"));
            let mut server = Server { child, addr, log };
            match server.wait_ready() {
                Ok(()) => return server,
                Err(e) => last_error = e,
            }
        }
        panic!("rcud-server did not start: {last_error}");
    }

    fn wait_ready(&mut self) -> Result<(), String> {
        let start = Instant::now();
        loop {
            if let Ok(Some(status)) = self.child.try_wait() {
                return Err(format!(
                    "rcud-server exited ({status}) before accepting connections on {}\n{}",
                    self.addr,
                    self.log_text()
                ));
            }
            if TcpStream::connect_timeout(&self.addr, Duration::from_millis(500)).is_ok() {
                return Ok(());
            }
            if start.elapsed() > SERVER_START_TIMEOUT {
                return Err(format!(
                    "rcud-server accepted no connection on {} within {SERVER_START_TIMEOUT:?}\n{}",
                    self.addr,
                    self.log_text()
                ));
            }
            sleep(Duration::from_millis(50));
        }
    }

    fn assert_running(&mut self) {
        if let Ok(Some(status)) = self.child.try_wait() {
            panic!(
                "rcud-server died ({status})\n--- rcud-server log ---\n{}",
                self.log_text()
            );
        }
    }

    fn log_text(&self) -> String {
        fs::read_to_string(self.log.path()).unwrap_or_default()
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        kill_tree(&mut self.child);
        let _ = self.child.wait();
    }
}

/// A directory holding `libcudart.so.13 -> librcudart.so`, for LD_LIBRARY_PATH.
fn cudart_soname_dir(env: &Env) -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("temporary directory");
    std::os::unix::fs::symlink(&env.cudart, dir.path().join("libcudart.so.13"))
        .expect("symlink libcudart.so.13");
    dir
}

/// Checks that device_query ran on the emulated device.
fn assert_emulated_device(run: &Run) {
    run.assert_contains("compute capability: 8.0");
    if !run
        .stdout
        .lines()
        .any(|l| l.contains("name:") && l.to_lowercase().contains("emulated"))
    {
        run.fail("no `name:` line mentions `emulated`", None);
    }
}

/// Whether this machine has an NVIDIA driver, so that `rcud run` without a
/// server may pick the real GPU instead of the emulated one.
fn local_gpu_present() -> bool {
    Path::new("/proc/driver/nvidia/version").exists() || Path::new("/dev/nvidiactl").exists()
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
    let run = rcud_run(env, None, &bin, &[]);
    run.assert_pass(None);
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
        assert_emulated_device(&run);
    }
}

#[test]
fn memcpy() {
    let Some(env) = setup("memcpy") else { return };
    let bin = build(env, "memcpy");
    let run = rcud_run(env, None, &bin, &[]);
    run.assert_pass(None);
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
}

#[test]
fn memset() {
    let Some(env) = setup("memset") else { return };
    let bin = build(env, "memset");
    let run = rcud_run(env, None, &bin, &[]);
    run.assert_pass(None);
    for value in ["0x0", "0xab", "0x1ff"] {
        for size in [1usize, 3, 255, 4097, 65537, (1 << 20) + 3, (4 << 20) + 1] {
            run.assert_line(&format!(
                "memset value {value} size {size}: ok (offsets 0, 1, 13)"
            ));
        }
    }
    run.assert_contains("layered memset size ");
}

#[test]
fn pinned() {
    let Some(env) = setup("pinned") else { return };
    let bin = build(env, "pinned");
    let run = rcud_run(env, None, &bin, &[]);
    run.assert_pass(None);
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
}

#[test]
fn errors() {
    let Some(env) = setup("errors") else { return };
    let bin = build(env, "errors");
    let run = rcud_run(env, None, &bin, &[]);
    run.assert_pass(None);
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
}

#[test]
fn bandwidth() {
    let Some(env) = setup("bandwidth") else {
        return;
    };
    let bin = build(env, "bandwidth");
    let run = rcud_run(env, None, &bin, &["16"]);
    run.assert_pass(None);
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
    run.assert_line("cudaGraphCreate(&graph, 0) -> cudaErrorNotSupported");
    let mentions = run
        .stderr
        .matches("cudaGraphCreate is not implemented")
        .count();
    if mentions != 1 {
        run.fail(
            &format!("expected the log to name cudaGraphCreate once, it did {mentions} times"),
            None,
        );
    }
}
