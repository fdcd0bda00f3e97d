//! The harness shared by the end-to-end test files (`e2e.rs`, `kernels.rs`):
//! finding nvcc, building the CUDA programs of `tests/cuda/`, running them with
//! a timeout, starting a server. Each test file includes it with `mod common;`
//! and uses part of it, hence `dead_code` is allowed here.
//!
//! Needs `nvcc`: `$RCUD_NVCC`, else `nvcc` on PATH, else the one that
//! `scripts/ensure-nvcc.sh` installs into `<repo>/.venv-cuda`. Without one the
//! tests print `skipped: ...` and pass, unless `RCUD_REQUIRE_CUDA=1`.
//! Needs the whole workspace built (`rcud-server` and `librcudart.so` beside the
//! `rcud` binary): `cargo build [--release] --workspace`.

#![allow(dead_code)]

use std::collections::HashMap;
use std::fs;
use std::io::{ErrorKind, Read, Seek, SeekFrom, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::{Arc, Mutex, OnceLock};
use std::thread::sleep;
use std::time::{Duration, Instant, SystemTime};

// ---------------------------------------------------------------------------
// Harness
// ---------------------------------------------------------------------------

/// Every program of `tests/cuda` that passes on its own (k_limits needs a
/// short kernel timeout): its name, its arguments, and the arguments `rcud
/// run` needs for it.
pub(crate) const PROGRAMS: &[(&str, &[&str], &[&str])] = &[
    ("device_query", &[], &[]),
    ("memcpy", &[], &[]),
    ("memset", &[], &[]),
    ("pinned", &[], &[]),
    ("errors", &[], &[]),
    ("unimplemented", &[], &[]),
    ("bandwidth", &["4"], &[]),
    ("k_vector_add", &[], &[]),
    ("k_saxpy", &[], &[]),
    ("k_struct_args", &[], &[]),
    ("k_math", &[], &[]),
    ("k_device_functions", &[], &[]),
    ("k_symbols", &[], &[]),
    ("k_grid2d", &[], &[]),
    ("k_matmul_tiled", &[], &[]),
    ("k_reduction", &[], &[]),
    ("k_histogram", &[], &[]),
    ("k_warp_vote", &[], &[]),
    ("k_printf", &[], &[]),
    ("k_errors", &["fault"], &[]),
    ("k_errors", &["config"], &[]),
    ("k_func_attrs", &[], &[]),
    ("k_streams", &[], &[]),
    ("k_multi", &[], &["--emu-gpus", "2"]),
    ("k_peer", &[], &["--emu-gpus", "2"]),
    ("k_stress", &["100", "7"], &[]),
    ("k_mempool", &[], &[]),
    ("device_limits", &[], &[]),
    ("k_warp_groups", &[], &[]),
    ("k_vector_race", &[], &[]),
    ("library_api", &[], &[]),
    ("k_warp_size", &[], &[]),
    ("k_graphs", &[], &[]),
    ("k_graph_cond", &[], &[]),
    ("k_async", &[], &[]),
    ("k_zero_copy", &[], &[]),
    ("memcpy3d", &[], &[]),
    ("runtime_misc", &[], &[]),
    ("k_tensor_cores", &[], &[]),
    ("k_cooperative", &[], &[]),
    ("k_textures", &[], &[]),
    ("batch_copy", &[], &[]),
    ("stream_attrs", &[], &[]),
    ("graph_params", &[], &[]),
    ("graph_mem_capture", &[], &[]),
    ("api_misc", &[], &[]),
    ("interop", &[], &[]),
];

/// Limit for one CUDA program run.
pub(crate) const RUN_TIMEOUT: Duration = Duration::from_secs(120);
/// Limit for a run that must fail fast (no server listening).
pub(crate) const PROMPT_TIMEOUT: Duration = Duration::from_secs(30);
/// Limit for `rcud-server` to start accepting connections.
const SERVER_START_TIMEOUT: Duration = Duration::from_secs(30);

pub(crate) fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("cli/ lies inside the repository")
        .to_path_buf()
}

/// Where the test programs are built: `<repo>/target/cuda-tests`.
pub(crate) fn cuda_build_dir() -> PathBuf {
    repo_root().join("target").join("cuda-tests")
}

/// What every test needs: a compiler and the built workspace.
pub(crate) struct Env {
    pub(crate) nvcc: PathBuf,
    /// A directory holding `libcudart.so` for the linker, when nvcc's own lib
    /// directory has only `libcudart.so.13` (the PyPI toolkit).
    pub(crate) link_dir: Option<PathBuf>,
    pub(crate) rcud: PathBuf,
    pub(crate) server: PathBuf,
    pub(crate) cudart: PathBuf,
}

/// The test environment, or `None` (after printing `skipped: ...`) when no
/// nvcc exists and `RCUD_REQUIRE_CUDA` is not `1`. Panics when the workspace
/// is not built.
pub(crate) fn setup(test: &str) -> Option<&'static Env> {
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
pub(crate) fn build(env: &Env, name: &str) -> PathBuf {
    build_as(env, name, name, &[])
}

/// nvcc's arguments for the kernel programs (`k_*`) of [`PROGRAMS`].
pub(crate) const KERNEL_PROGRAM_ARGS: &[&str] = &["-arch=sm_80", "-Xcompiler", "-Wall"];

/// Builds a program of [`PROGRAMS`] the one way every test file builds it,
/// with the runtime `cudart` (`shared` or `static`): the kernel programs
/// with [`KERNEL_PROGRAM_ARGS`] (as `<name>-default`), the others with no
/// extra argument. The two runtimes link one object.
pub(crate) fn build_program(env: &Env, name: &str, cudart: &str) -> PathBuf {
    let (args, out_name) = if name.starts_with("k_") {
        (KERNEL_PROGRAM_ARGS, format!("{name}-default"))
    } else {
        (&[][..], name.to_string())
    };
    if cudart == "shared" {
        return build_as(env, name, &out_name, args);
    }
    let args: Vec<&str> = args.iter().copied().chain(["-cudart", cudart]).collect();
    build_as(env, name, &format!("{out_name}-{cudart}"), &args)
}

/// Builds `tests/cuda/<name>.cu` (with `-cudart shared` unless `extra` names
/// a `-cudart`) with the extra nvcc arguments `extra` into
/// `<repo>/target/cuda-tests/<out_name>`, once per test process, and not at all
/// when the binary is newer than the source and `check.h`. Each `out_name`
/// must always be built with the same arguments.
pub(crate) fn build_as(env: &Env, name: &str, out_name: &str, extra: &[&str]) -> PathBuf {
    type Cell = Arc<OnceLock<Result<PathBuf, String>>>;
    static BUILDS: OnceLock<Mutex<HashMap<String, Cell>>> = OnceLock::new();
    let cell: Cell = BUILDS
        .get_or_init(Default::default)
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
        .entry(out_name.to_string())
        .or_default()
        .clone();
    match cell.get_or_init(|| compile(env, name, out_name, extra)) {
        Ok(path) => path.clone(),
        Err(e) => panic!("{e}"),
    }
}

fn modified(path: &Path) -> Option<SystemTime> {
    fs::metadata(path).and_then(|m| m.modified()).ok()
}

fn compile(env: &Env, name: &str, out_name: &str, extra: &[&str]) -> Result<PathBuf, String> {
    let src = repo_root()
        .join("tests")
        .join("cuda")
        .join(format!("{name}.cu"));
    let out_dir = cuda_build_dir();
    let out = out_dir.join(out_name);
    let src_time = sources_time(&src)?;
    if modified(&out).is_some_and(|t| t > src_time) {
        return Ok(out);
    }
    fs::create_dir_all(&out_dir).map_err(|e| format!("{}: {e}", out_dir.display()))?;
    // `-cudart shared` unless the caller picks the runtime itself.
    let mut args: Vec<&str> = extra.to_vec();
    if !extra.contains(&"-cudart") {
        args.extend(["-cudart", "shared"]);
    }
    let tmp = out_dir.join(format!(".{out_name}.{}.tmp", std::process::id()));
    let mut cmd = Command::new(&env.nvcc);
    cmd.arg("-O2").args(&args).arg("-o").arg(&tmp);
    // One source: link a compiled object that every build differing only in
    // its runtime shares (the static-runtime tests link the shared builds'
    // objects again instead of compiling each program twice).
    match object(env, name, &src, src_time, extra)? {
        Some(obj) => cmd.arg(obj),
        None => cmd.arg(&src),
    };
    if let Some(dir) = &env.link_dir {
        cmd.arg(format!("-L{}", dir.display()));
    }
    build_into(
        cmd,
        &tmp,
        &out,
        &format!("nvcc failed to compile {}", src.display()),
    )?;
    Ok(out)
}

/// The newest modification time of `src` and of the shared headers the
/// programs include.
fn sources_time(src: &Path) -> Result<SystemTime, String> {
    let src_time = modified(src).ok_or_else(|| format!("{} does not exist", src.display()))?;
    let dir = repo_root().join("tests").join("cuda");
    Ok(["check.h", "solver_check.h"]
        .iter()
        .filter_map(|h| modified(&dir.join(h)))
        .fold(src_time, SystemTime::max))
}

/// The relocatable object of `src` compiled with `extra` less its `-cudart`
/// choice, under `<build dir>/obj/`, compiled once per test process and not
/// at all when newer than the sources. `None` for builds of several
/// sources or with separable compilation, which are compiled in one step.
fn object(
    env: &Env,
    name: &str,
    src: &Path,
    src_time: SystemTime,
    extra: &[&str],
) -> Result<Option<PathBuf>, String> {
    use std::hash::{Hash, Hasher};
    let several_files = extra.iter().any(|a| {
        [".cu", ".cpp", ".c", ".o"]
            .iter()
            .any(|ext| a.ends_with(ext))
    });
    if several_files || extra.iter().any(|a| a.starts_with("-rdc") || *a == "-dc") {
        return Ok(None);
    }
    let mut compile_args = Vec::new();
    let mut it = extra.iter();
    while let Some(&a) = it.next() {
        if a == "-cudart" {
            it.next();
        } else {
            compile_args.push(a);
        }
    }
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    compile_args.hash(&mut hasher);
    let obj_dir = cuda_build_dir().join("obj");
    let stem = name.replace('/', "_");
    let obj = obj_dir.join(format!("{stem}.{:016x}.o", hasher.finish()));

    type Cell = Arc<OnceLock<Result<(), String>>>;
    static OBJECTS: OnceLock<Mutex<HashMap<PathBuf, Cell>>> = OnceLock::new();
    let cell: Cell = OBJECTS
        .get_or_init(Default::default)
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
        .entry(obj.clone())
        .or_default()
        .clone();
    cell.get_or_init(|| {
        if modified(&obj).is_some_and(|t| t > src_time) {
            return Ok(());
        }
        fs::create_dir_all(&obj_dir).map_err(|e| format!("{}: {e}", obj_dir.display()))?;
        let tmp = obj_dir.join(format!(".{stem}.{}.o.tmp", std::process::id()));
        let mut cmd = Command::new(&env.nvcc);
        cmd.arg("-O2")
            .args(&compile_args)
            .arg("-c")
            .arg("-o")
            .arg(&tmp)
            .arg(src);
        build_into(
            cmd,
            &tmp,
            &obj,
            &format!("nvcc failed to compile {}", src.display()),
        )
    })
    .clone()
    .map(|()| Some(obj))
}

/// Runs the build `cmd`, which writes `tmp`, and moves `tmp` to `out` when
/// it succeeds, so a half-written output never looks built; on failure the
/// error starts with `failed` and holds the command and its output.
fn build_into(mut cmd: Command, tmp: &Path, out: &Path, failed: &str) -> Result<(), String> {
    let output = cmd
        .output()
        .map_err(|e| format!("cannot run {:?}: {e}", cmd.get_program()))?;
    if !output.status.success() {
        let _ = fs::remove_file(tmp);
        return Err(format!(
            "{failed} ({}):\n{cmd:?}\n{}{}",
            output.status,
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        ));
    }
    fs::rename(tmp, out).map_err(|e| format!("{} -> {}: {e}", tmp.display(), out.display()))
}

/// The outcome of one finished command.
pub(crate) struct Run {
    what: String,
    pub(crate) status: ExitStatus,
    pub(crate) stdout: String,
    pub(crate) stderr: String,
    elapsed: Duration,
}

impl Run {
    pub(crate) fn transcript(&self) -> String {
        format!(
            "command: {}\nstatus: {} after {:.1?}\n--- stdout ---\n{}\n--- stderr ---\n{}",
            self.what, self.status, self.elapsed, self.stdout, self.stderr
        )
    }

    pub(crate) fn fail(&self, why: &str, server: Option<&Server>) -> ! {
        let log = server.map(|s| format!("\n--- rcud-server log ---\n{}", s.log_text()));
        panic!("{why}\n{}{}", self.transcript(), log.unwrap_or_default())
    }

    /// Exit status 0 and `PASS` as the last line of stdout.
    pub(crate) fn assert_pass(&self, server: Option<&Server>) {
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
    pub(crate) fn assert_line(&self, line: &str) {
        if !self.stdout.lines().any(|l| l.trim() == line) {
            self.fail(&format!("no stdout line `{line}`"), None);
        }
    }

    /// Some stdout line starts with `prefix`.
    pub(crate) fn assert_line_starts(&self, prefix: &str) {
        if !self.stdout.lines().any(|l| l.trim().starts_with(prefix)) {
            self.fail(&format!("no stdout line starts with `{prefix}`"), None);
        }
    }

    /// Some stdout line contains `needle`.
    pub(crate) fn assert_contains(&self, needle: &str) {
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
pub(crate) fn run_with_timeout(mut cmd: Command, timeout: Duration) -> Run {
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
pub(crate) fn clean_command(program: &Path) -> Command {
    let mut cmd = Command::new(program);
    cmd.env_remove("LD_PRELOAD")
        .env_remove("LD_LIBRARY_PATH")
        .env_remove("RCUD_SERVERS");
    cmd
}

/// `rcud run [--server ADDR] -- PROGRAM ARGS`.
pub(crate) fn rcud_run(env: &Env, server: Option<&Server>, program: &Path, args: &[&str]) -> Run {
    rcud_run_within(env, server, program, args, RUN_TIMEOUT)
}

/// `rcud run [--server ADDR] -- PROGRAM ARGS`, killed after `timeout`.
pub(crate) fn rcud_run_within(
    env: &Env,
    server: Option<&Server>,
    program: &Path,
    args: &[&str],
    timeout: Duration,
) -> Run {
    rcud_run_on(env, server, program, args, timeout, None)
}

/// The emulated device's engines (`RCUD_EMU_ENGINE`): the interpreter, the
/// reference, first.
pub(crate) const ENGINES: [&str; 2] = ["interp", "jit"];

/// `rcud run [--server ADDR] -- PROGRAM ARGS` with its embedded server's
/// emulated device on `engine` (`interp` or `jit`; `None` leaves
/// `RCUD_EMU_ENGINE` as the calling environment has it), killed after
/// `timeout`.
pub(crate) fn rcud_run_on(
    env: &Env,
    server: Option<&Server>,
    program: &Path,
    args: &[&str],
    timeout: Duration,
    engine: Option<&str>,
) -> Run {
    let mut cmd = Command::new(&env.rcud);
    cmd.env_remove("LD_PRELOAD")
        .env_remove("RCUD_SERVERS")
        .arg("run");
    if let Some(engine) = engine {
        cmd.env("RCUD_EMU_ENGINE", engine);
    }
    if let Some(server) = server {
        cmd.arg("--server").arg(server.addr.to_string());
    }
    cmd.arg("--").arg(program).args(args);
    run_with_timeout(cmd, timeout)
}

/// A port on 127.0.0.1 that was free a moment ago.
pub(crate) fn free_port() -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1:0");
    listener.local_addr().expect("local address").port()
}

/// An `rcud-server --backend emu` on a loopback port, killed (with its agents)
/// when dropped.
pub(crate) struct Server {
    child: Child,
    pub(crate) addr: SocketAddr,
    log: tempfile::NamedTempFile,
}

impl Server {
    pub(crate) fn start(env: &Env) -> Server {
        Self::start_with(env, &[])
    }

    /// [`Server::start`] with more `rcud-server` arguments.
    pub(crate) fn start_with(env: &Env, extra: &[&str]) -> Server {
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
                .args(extra)
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

    pub(crate) fn assert_running(&mut self) {
        if let Ok(Some(status)) = self.child.try_wait() {
            panic!(
                "rcud-server died ({status})\n--- rcud-server log ---\n{}",
                self.log_text()
            );
        }
    }

    pub(crate) fn log_text(&self) -> String {
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
pub(crate) fn cudart_soname_dir(env: &Env) -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("temporary directory");
    std::os::unix::fs::symlink(&env.cudart, dir.path().join("libcudart.so.13"))
        .expect("symlink libcudart.so.13");
    dir
}

/// Checks that device_query ran on the emulated device.
pub(crate) fn assert_emulated_device(run: &Run) {
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
pub(crate) fn local_gpu_present() -> bool {
    Path::new("/proc/driver/nvidia/version").exists() || Path::new("/dev/nvidiactl").exists()
}

// ---------------------------------------------------------------------------
// Driver-API programs (`driver.rs`)
// ---------------------------------------------------------------------------

/// The sources of the driver-API test programs: `<repo>/tests/cuda/driver`.
pub(crate) fn driver_src_dir() -> PathBuf {
    repo_root().join("tests").join("cuda").join("driver")
}

/// The directory of a link-time stand-in for NVIDIA's `libcuda.so` (soname
/// `libcuda.so.1`, every function of `cuda-shim/exports/cuda.txt` as an empty
/// function), `<repo>/target/cuda-tests/stubs`, for linking driver-API
/// programs with `-L<dir> -lcuda` where no toolkit stub exists (the PyPI
/// toolkit has none). The programs then need `libcuda.so.1` at run time, like
/// programs linked on a CUDA machine; the stub itself is never run. Built with
/// `$CC` (default `cc`) once per test process, and not at all when it is newer
/// than the export list.
pub(crate) fn cuda_stub_dir() -> PathBuf {
    static STUB: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    match STUB.get_or_init(build_cuda_stub) {
        Ok(dir) => dir.clone(),
        Err(e) => panic!("{e}"),
    }
}

fn build_cuda_stub() -> Result<PathBuf, String> {
    let exports = repo_root()
        .join("cuda-shim")
        .join("exports")
        .join("cuda.txt");
    let dir = cuda_build_dir().join("stubs");
    let lib = dir.join("libcuda.so");
    let src_time =
        modified(&exports).ok_or_else(|| format!("{} does not exist", exports.display()))?;
    if modified(&lib).is_some_and(|t| t > src_time) {
        return Ok(dir);
    }
    let list = fs::read_to_string(&exports).map_err(|e| format!("{}: {e}", exports.display()))?;
    let mut c = String::from("/* Generated from cuda-shim/exports/cuda.txt: link-time stub. */\n");
    for line in list.lines().map(str::trim) {
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        if !line
            .chars()
            .all(|ch| ch.is_ascii_alphanumeric() || ch == '_')
        {
            return Err(format!(
                "{}: not a symbol name: {line:?}",
                exports.display()
            ));
        }
        c.push_str(&format!("void {line}(void) {{}}\n"));
    }
    fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let pid = std::process::id();
    let c_file = dir.join(format!(".libcuda-stub.{pid}.c"));
    let tmp = dir.join(format!(".libcuda.so.{pid}.tmp"));
    fs::write(&c_file, c).map_err(|e| format!("{}: {e}", c_file.display()))?;
    let cc = std::env::var_os("CC")
        .filter(|v| !v.is_empty())
        .unwrap_or_else(|| "cc".into());
    let mut cmd = Command::new(&cc);
    cmd.args(["-shared", "-fPIC", "-Wl,-soname,libcuda.so.1", "-o"])
        .arg(&tmp)
        .arg(&c_file);
    let built = build_into(cmd, &tmp, &lib, "building the libcuda.so link stub failed");
    let _ = fs::remove_file(&c_file);
    built?;
    Ok(dir)
}

/// Runs `nvcc ARGS -o <repo>/target/cuda-tests/<out_name> SOURCES` once per
/// test process, and not at all when the output is newer than every file of
/// `sources` and `deps` (headers, the link stub). `args` says what to make
/// (`-ptx`, `-fatbin`, a program with `-cudart none`, ...); nothing is added to
/// it. Each `out_name` must always be built with the same arguments.
pub(crate) fn nvcc_build(
    env: &Env,
    out_name: &str,
    sources: &[PathBuf],
    deps: &[PathBuf],
    args: &[String],
) -> PathBuf {
    type Cell = Arc<OnceLock<Result<PathBuf, String>>>;
    static BUILDS: OnceLock<Mutex<HashMap<String, Cell>>> = OnceLock::new();
    let cell: Cell = BUILDS
        .get_or_init(Default::default)
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
        .entry(out_name.to_string())
        .or_default()
        .clone();
    match cell.get_or_init(|| nvcc_compile(env, out_name, sources, deps, args)) {
        Ok(path) => path.clone(),
        Err(e) => panic!("{e}"),
    }
}

fn nvcc_compile(
    env: &Env,
    out_name: &str,
    sources: &[PathBuf],
    deps: &[PathBuf],
    args: &[String],
) -> Result<PathBuf, String> {
    let out_dir = cuda_build_dir();
    let out = out_dir.join(out_name);
    let mut newest = None;
    for input in sources.iter().chain(deps) {
        let t = modified(input).ok_or_else(|| format!("{} does not exist", input.display()))?;
        newest = newest.max(Some(t));
    }
    if let (Some(out_time), Some(src_time)) = (modified(&out), newest) {
        if out_time > src_time {
            return Ok(out);
        }
    }
    fs::create_dir_all(&out_dir).map_err(|e| format!("{}: {e}", out_dir.display()))?;
    let tmp = out_dir.join(format!(".{out_name}.{}.tmp", std::process::id()));
    let mut cmd = Command::new(&env.nvcc);
    cmd.args(args).arg("-o").arg(&tmp).args(sources);
    build_into(cmd, &tmp, &out, &format!("nvcc failed to build {out_name}"))?;
    Ok(out)
}

/// Where nvcc's toolkit keeps NVRTC: the library directory and the `-l`
/// argument that links it (`-lnvrtc`, or `-l:libnvrtc.so.13` for the PyPI
/// package, which has no `libnvrtc.so`); `None` when it has no NVRTC.
pub(crate) fn nvrtc_lib(env: &Env) -> Option<(PathBuf, String)> {
    let real = fs::canonicalize(&env.nvcc).ok()?;
    let top = real.parent()?.parent()?;
    let dirs = [
        top.join("lib64"),
        top.join("lib"),
        top.join("targets").join("x86_64-linux").join("lib"),
        top.join("targets").join("sbsa-linux").join("lib"),
    ];
    for dir in dirs {
        if dir.join("libnvrtc.so").exists() {
            return Some((dir, "-lnvrtc".into()));
        }
        if dir.join("libnvrtc.so.13").exists() {
            return Some((dir, "-l:libnvrtc.so.13".into()));
        }
    }
    None
}

/// `rcud run RCUD_ARGS [--server ADDR] -- PROGRAM ARGS` with the variables
/// `vars` set for `rcud` (and so for the program), killed after `timeout`.
pub(crate) fn rcud_run_opts(
    env: &Env,
    server: Option<&Server>,
    rcud_args: &[&str],
    vars: &[(&str, &std::ffi::OsStr)],
    program: &Path,
    args: &[&str],
    timeout: Duration,
) -> Run {
    let mut cmd = Command::new(&env.rcud);
    cmd.env_remove("LD_PRELOAD")
        .env_remove("RCUD_SERVERS")
        .arg("run")
        .args(rcud_args);
    for (name, value) in vars {
        cmd.env(name, value);
    }
    if let Some(server) = server {
        cmd.arg("--server").arg(server.addr.to_string());
    }
    cmd.arg("--").arg(program).args(args);
    run_with_timeout(cmd, timeout)
}

// ---------------------------------------------------------------------------
// Math-library programs (`math_*.rs`)
// ---------------------------------------------------------------------------

/// The math libraries' link stubs: (file name, soname, export list).
const MATH_STUBS: &[(&str, &str, &str)] = &[
    ("libcublas.so", "libcublas.so.13", "cublas.txt"),
    ("libcublasLt.so", "libcublasLt.so.13", "cublasLt.txt"),
    ("libcufft.so", "libcufft.so.12", "cufft.txt"),
    ("libcurand.so", "libcurand.so.10", "curand.txt"),
    ("libcusparse.so", "libcusparse.so.12", "cusparse.txt"),
    ("libcusolver.so", "libcusolver.so.12", "cusolver.txt"),
];

/// nvcc arguments that compile and link a program against NVIDIA's math
/// libraries as a CUDA machine would: the headers of the PyPI wheels
/// (`scripts/ensure-cuda-libs.py`) and link-time stand-ins with NVIDIA's
/// sonames and symbol versions (every function of the export list, empty),
/// `<repo>/target/cuda-tests/math-stubs`. The program then loads
/// `libcublas.so.13` etc. at run time, which `rcud run` provides. Add the
/// `-l` options of the libraries the program uses.
pub(crate) fn math_args() -> Vec<String> {
    static ARGS: OnceLock<Result<Vec<String>, String>> = OnceLock::new();
    match ARGS.get_or_init(build_math_stubs) {
        Ok(args) => args.clone(),
        Err(e) => panic!("{e}"),
    }
}

fn build_math_stubs() -> Result<Vec<String>, String> {
    let script = repo_root().join("scripts").join("ensure-cuda-libs.py");
    let out = Command::new("python3")
        .arg(&script)
        .output()
        .map_err(|e| format!("{}: {e}", script.display()))?;
    if !out.status.success() {
        return Err(format!(
            "{} failed: {}",
            script.display(),
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    let include = String::from_utf8_lossy(&out.stdout).trim().to_string();
    let dir = cuda_build_dir().join("math-stubs");
    fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    for (file, soname, list_name) in MATH_STUBS {
        let list = repo_root()
            .join("cuda-shim")
            .join("exports")
            .join(list_name);
        let lib = dir.join(file);
        let src_time = modified(&list).ok_or_else(|| format!("{} is missing", list.display()))?;
        if modified(&lib).is_some_and(|t| t > src_time) {
            continue;
        }
        let text = fs::read_to_string(&list).map_err(|e| format!("{}: {e}", list.display()))?;
        let mut c =
            format!("/* Generated from cuda-shim/exports/{list_name}: link-time stub. */\n");
        let mut map = format!("{soname} {{\n  global:\n");
        for name in text
            .lines()
            .filter(|l| !l.trim().is_empty() && !l.starts_with('#'))
            .filter_map(|l| l.split_whitespace().next())
        {
            c.push_str(&format!("void {name}(void) {{}}\n"));
            map.push_str(&format!("    {name};\n"));
        }
        map.push_str("  local: *;\n};\n");
        let pid = std::process::id();
        let c_file = dir.join(format!(".{file}.{pid}.c"));
        let map_file = dir.join(format!(".{file}.{pid}.map"));
        let tmp = dir.join(format!(".{file}.{pid}.tmp"));
        fs::write(&c_file, c).map_err(|e| format!("{}: {e}", c_file.display()))?;
        fs::write(&map_file, map).map_err(|e| format!("{}: {e}", map_file.display()))?;
        let cc = std::env::var_os("CC")
            .filter(|v| !v.is_empty())
            .unwrap_or_else(|| "cc".into());
        let mut cmd = Command::new(&cc);
        cmd.args(["-shared", "-fPIC"])
            .arg(format!("-Wl,-soname,{soname}"))
            .arg(format!("-Wl,--version-script={}", map_file.display()))
            .arg("-o")
            .arg(&tmp)
            .arg(&c_file);
        let built = build_into(
            cmd,
            &tmp,
            &lib,
            &format!("building the {file} link stub failed"),
        );
        let _ = fs::remove_file(&c_file);
        let _ = fs::remove_file(&map_file);
        built?;
    }
    Ok(vec![format!("-I{include}"), format!("-L{}", dir.display())])
}

/// `GET /metrics` from `addr` (`rcud-server --metrics`).
pub(crate) fn scrape(addr: &str) -> String {
    use std::io::{Read, Write};
    let mut s = std::net::TcpStream::connect(addr).expect("connect to the metrics endpoint");
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    write!(s, "GET /metrics HTTP/1.1\r\nHost: {addr}\r\n\r\n").unwrap();
    let mut text = String::new();
    s.read_to_string(&mut text).unwrap();
    assert!(text.starts_with("HTTP/1.1 200 OK"), "{text}");
    text
}

/// The value of the sample named exactly `name` (labels included) in a
/// scrape.
pub(crate) fn sample(text: &str, name: &str) -> f64 {
    text.lines()
        .find_map(|l| {
            l.strip_prefix(name)
                .and_then(|rest| rest.strip_prefix(' '))
                .and_then(|v| v.trim().parse().ok())
        })
        .unwrap_or_else(|| panic!("no sample {name} in\n{text}"))
}
