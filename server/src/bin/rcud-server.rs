//! `rcud-server`: serve this node's GPUs (or emulated ones) to rcud clients.

use std::process::ExitCode;

use clap::Parser;
use rcud_server::backend::{BackendKind, EmuSettings};
use rcud_server::{select_backend, Server};

/// Serve this node's GPUs to remote CUDA applications.
#[derive(Debug, Parser)]
#[command(name = "rcud-server", version)]
struct Args {
    /// Address to listen on.
    #[arg(long, default_value = "0.0.0.0:7100")]
    listen: String,
    /// Which GPUs to serve.
    #[arg(long, value_enum, default_value_t = BackendKind::Auto)]
    backend: BackendKind,
    /// Number of emulated GPUs (emu backend).
    #[arg(long, default_value_t = 1)]
    emu_gpus: u32,
    /// Memory of each emulated GPU, e.g. 8GiB.
    #[arg(long, default_value = "8GiB")]
    emu_memory: bytesize::ByteSize,
    /// Seconds a kernel may run on the emulated device before it is stopped
    /// with cudaErrorLaunchTimeout.
    #[arg(long, default_value_t = 120)]
    kernel_timeout: u64,
}

fn main() -> ExitCode {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_env("RCUD_LOG")
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info")),
        )
        .with_writer(std::io::stderr)
        .init();
    let args = Args::parse();
    let emu = EmuSettings {
        gpus: args.emu_gpus,
        memory: args.emu_memory.as_u64(),
        kernel_timeout: std::time::Duration::from_secs(args.kernel_timeout),
    };
    let backend = match select_backend(args.backend, &emu) {
        Ok(b) => b,
        Err(e) => {
            eprintln!("rcud-server: {e}");
            return ExitCode::FAILURE;
        }
    };
    let server = match Server::bind(&args.listen, backend) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("rcud-server: cannot listen on {}: {e}", args.listen);
            return ExitCode::FAILURE;
        }
    };
    server.serve();
    ExitCode::SUCCESS
}
