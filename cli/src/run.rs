//! `rcud run`: put the rcud CUDA runtime in front of a program.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};
use std::sync::Arc;

use rcud_client::sonames::{LIBRARY_FILE, SONAMES};
use rcud_server::backend::{BackendKind, EmuSettings};
use rcud_server::gate::Policy;
use rcud_server::tenants::Tenants;
use rcud_server::{select_backend, Server, ServerHandle};
use rcud_transport::tls::ServerTls;
use thiserror::Error;

/// Arguments of `rcud run`.
#[derive(Debug, clap::Args)]
pub(crate) struct RunArgs {
    /// Remote GPU server(s), `host:port[#gpu]`, comma-separated. Without it an
    /// embedded server on loopback serves the best local backend.
    #[arg(long, env = "RCUD_SERVERS")]
    server: Option<String>,
    /// Transport module between the program and the server: `tcp`, `csr`
    /// (RDMA channel semantics) or `msr` (RDMA memory semantics); the RDMA
    /// modules run on the `soft` provider for peers on one host.
    #[arg(long, env = "RCUD_TRANSPORT", default_value = "tcp")]
    transport: rcud_transport::bootstrap::TransportKind,
    /// Backend of the embedded server.
    #[arg(long, value_enum, default_value_t = BackendKind::Auto)]
    backend: BackendKind,
    /// Number of GPUs the embedded server emulates.
    #[arg(long, default_value_t = 1)]
    emu_gpus: u32,
    /// Memory of the embedded server's emulated GPU, e.g. 8GiB.
    #[arg(long, default_value = "8GiB")]
    emu_memory: bytesize::ByteSize,
    /// Seconds a kernel may run on the embedded server's emulated device before
    /// it is stopped with cudaErrorLaunchTimeout.
    #[arg(long, env = "RCUD_KERNEL_TIMEOUT", default_value_t = 120)]
    kernel_timeout: u64,
    /// The rcud CUDA runtime library to use (default: next to this executable).
    #[arg(long, env = "RCUD_LIBRARY")]
    library: Option<PathBuf>,
    /// A file holding `tenant:secret`, the credentials for `--server`
    /// (sets RCUD_TOKEN_FILE for the program).
    #[arg(long, requires = "server")]
    token_file: Option<PathBuf>,
    /// The program and its arguments.
    #[arg(required = true, trailing_var_arg = true, allow_hyphen_values = true)]
    program: Vec<OsString>,
}

#[derive(Debug, Error)]
pub(crate) enum RunError {
    #[error("the rcud CUDA runtime library was not found at {0} (build it with `cargo build`, or pass --library)")]
    NoLibrary(PathBuf),
    #[error("cannot start the embedded server: {0}")]
    Server(String),
    #[error("cannot prepare the library directory: {0}")]
    LibDir(std::io::Error),
    #[error("cannot start {program}: {source}")]
    Spawn {
        program: String,
        source: std::io::Error,
    },
}

pub(crate) fn run(args: RunArgs) -> Result<ExitCode, Box<dyn std::error::Error>> {
    let library = match args.library {
        Some(p) => p,
        None => default_library()?,
    };
    if !library.is_file() {
        return Err(RunError::NoLibrary(library).into());
    }
    let library = library.canonicalize()?;

    // Keep the embedded server alive until the program has exited.
    let (servers, embedded): (String, Option<(ServerHandle, LocalToken)>) = match args.server {
        Some(s) => (s, None),
        None => {
            let emu = EmuSettings {
                gpus: args.emu_gpus,
                memory: args.emu_memory.as_u64(),
                kernel_timeout: std::time::Duration::from_secs(args.kernel_timeout),
            };
            let token = LocalToken::generate()?;
            let handle = embedded_server(args.backend, &emu, &token, None)?;
            (handle.addr().to_string(), Some((handle, token)))
        }
    };

    // A directory holding the library under NVIDIA's sonames, so that
    // programs start on machines without any CUDA toolkit or driver even
    // when LD_PRELOAD is dropped (setuid helpers, programs that sanitise
    // their environment). The dynamic linker loads one file once, whichever
    // name reached it, so both APIs share one client runtime.
    let libdir = tempfile::Builder::new()
        .prefix("rcud-lib-")
        .tempdir()
        .map_err(RunError::LibDir)?;
    for soname in SONAMES {
        std::os::unix::fs::symlink(&library, libdir.path().join(soname))
            .map_err(RunError::LibDir)?;
    }

    let program = &args.program[0];
    let mut cmd = Command::new(program);
    cmd.args(&args.program[1..])
        .env("RCUD_SERVERS", &servers)
        .env("RCUD_TRANSPORT", args.transport.to_string())
        .env("LD_PRELOAD", prepend("LD_PRELOAD", &library, ' '))
        .env(
            "LD_LIBRARY_PATH",
            prepend("LD_LIBRARY_PATH", libdir.path(), ':'),
        );
    // CuPy compiles its kernels into SASS for the device's architecture
    // unless told otherwise. The emulated GPU runs PTX only, and PTX runs on
    // every GPU (the driver compiles it), so CuPy is asked for PTX unless the
    // user decided.
    if std::env::var_os("CUPY_COMPILE_WITH_PTX").is_none() {
        cmd.env("CUPY_COMPILE_WITH_PTX", "1");
    }
    match (&embedded, &args.token_file) {
        // The embedded server admits this program only: it knows the token.
        (Some((_, token)), _) => {
            cmd.env("RCUD_TOKEN", token.as_env())
                .env_remove("RCUD_TOKEN_FILE")
                .env_remove("RCUD_TLS_CA")
                .env_remove("RCUD_TLS_PIN");
        }
        (None, Some(file)) => {
            cmd.env("RCUD_TOKEN_FILE", file);
        }
        (None, None) => {}
    }
    tracing::debug!(?cmd, "starting program");
    let status = cmd.status().map_err(|source| RunError::Spawn {
        program: program.to_string_lossy().into_owned(),
        source,
    })?;
    Ok(exit_code(status))
}

/// Where the library lies relative to the directory of the running `rcud`:
/// beside it (cargo's `target/<profile>/`), or in `../lib/rcud/` (the Debian
/// package: `/usr/bin/rcud`, `/usr/lib/rcud/librcudart.so`).
const LIBRARY_DIRS: &[&str] = &[".", "../lib/rcud"];

/// The first library found in [`LIBRARY_DIRS`], else the one beside the
/// executable (which the caller reports as missing).
pub(crate) fn default_library() -> Result<PathBuf, std::io::Error> {
    let exe = std::env::current_exe()?;
    let dir = exe.parent().unwrap_or(Path::new("."));
    Ok(LIBRARY_DIRS
        .iter()
        .map(|d| dir.join(d).join(LIBRARY_FILE))
        .find(|p| p.is_file())
        .unwrap_or_else(|| dir.join(LIBRARY_FILE)))
}

/// The one-time credentials of an embedded server: a tenant whose random
/// secret only the programs `rcud` starts are given, so that other users of
/// the machine cannot use the server on its loopback port.
pub(crate) struct LocalToken {
    secret: String,
}

/// The embedded server's one tenant.
const LOCAL_TENANT: &str = "local";

impl LocalToken {
    pub(crate) fn generate() -> Result<Self, RunError> {
        let mut raw = [0u8; 32];
        getrandom::fill(&mut raw).map_err(|e| RunError::Server(format!("random source: {e}")))?;
        Ok(Self {
            secret: raw.iter().map(|b| format!("{b:02x}")).collect(),
        })
    }

    /// The value of `RCUD_TOKEN` that proves it.
    pub(crate) fn as_env(&self) -> String {
        format!("{LOCAL_TENANT}:{}", self.secret)
    }

    /// Makes this process's own client use the token. Call before any
    /// thread is started: it changes the environment.
    pub(crate) fn export_here(&self) {
        std::env::set_var("RCUD_TOKEN", self.as_env());
        std::env::remove_var("RCUD_TOKEN_FILE");
        std::env::remove_var("RCUD_TLS_CA");
        std::env::remove_var("RCUD_TLS_PIN");
    }
}

/// A server on a free loopback port, running on background threads, that
/// admits the holders of `token` only, over TLS with `tls`.
pub(crate) fn embedded_server(
    backend: BackendKind,
    emu: &EmuSettings,
    token: &LocalToken,
    tls: Option<ServerTls>,
) -> Result<ServerHandle, RunError> {
    let tenants = Tenants::single(LOCAL_TENANT, token.secret.as_bytes())
        .map_err(|e| RunError::Server(e.to_string()))?;
    let backend = select_backend(backend, emu).map_err(|e| RunError::Server(e.to_string()))?;
    let server = Server::bind("127.0.0.1:0", backend)
        .map_err(|e| RunError::Server(e.to_string()))?
        .with_policy(Policy {
            tenants: Some(Arc::new(tenants)),
            ..Policy::default()
        });
    let server = match tls {
        Some(tls) => server.with_tls(tls),
        None => server,
    };
    server.spawn().map_err(|e| RunError::Server(e.to_string()))
}

/// `value` followed by the current contents of the variable `var`.
fn prepend(var: &str, value: &Path, sep: char) -> OsString {
    let mut out = value.as_os_str().to_owned();
    if let Some(old) = std::env::var_os(var).filter(|v| !v.is_empty()) {
        out.push(sep.to_string());
        out.push(old);
    }
    out
}

/// The program's exit status; a program killed by a signal exits 128 + signal,
/// as a shell reports it.
fn exit_code(status: std::process::ExitStatus) -> ExitCode {
    use std::os::unix::process::ExitStatusExt;
    match (status.code(), status.signal()) {
        (Some(code), _) => ExitCode::from(code as u8),
        (None, Some(sig)) => ExitCode::from(128u8.wrapping_add(sig as u8)),
        (None, None) => ExitCode::FAILURE,
    }
}
