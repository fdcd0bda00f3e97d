//! `rcud run`: put the rcud CUDA runtime in front of a program.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};

use rcud_client::sonames::{installed_library, SONAMES};
use rcud_server::backend::{BackendKind, EmuSettings};
use rcud_server::embedded::{self, LocalToken};
use rcud_server::ServerHandle;
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
    /// Which engine runs kernels on the embedded server's emulated device:
    /// `interp` or `jit`.
    #[arg(long, env = "RCUD_EMU_ENGINE", default_value = "interp")]
    emu_engine: rcud_server::backend::EmuEngine,
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
        None => installed_library()?,
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
                engine: args.emu_engine,
            };
            let token = LocalToken::generate()?;
            let handle = embedded::spawn(args.backend, &emu, &token, None)?;
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
