//! `rcud`: run unmodified CUDA programs on remote GPUs.
#![deny(unsafe_code)]

mod fabric;
mod info;
mod qos;
mod run;
mod smi;

use std::process::ExitCode;

use clap::{Parser, Subcommand};

/// Remote GPU virtualization: CUDA programs on machines without a GPU.
#[derive(Debug, Parser)]
#[command(name = "rcud", version)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Run a CUDA program with its CUDA runtime calls sent to remote GPUs.
    Run(run::RunArgs),
    /// Show the GPUs a server offers.
    Info(info::InfoArgs),
    /// Memory, utilisation and clients of the remote GPUs, like nvidia-smi.
    Smi(smi::SmiArgs),
    /// Measure bandwidth and latency, next to the raw transport.
    Bench(rcud_bench::BenchArgs),
    /// Arbitration tables: simulate management models and the VL arbiter, plan OpenSM settings.
    Qos(qos::QosArgs),
    /// InfiniBand routes: up*/down*, FERa/PIRa tables, reconfiguration plans.
    Fabric(fabric::FabricArgs),
    /// Kubernetes device plugin: advertise remote GPUs as rcud.io/gpu to the kubelet.
    K8sDevicePlugin(rcud_k8s::PluginArgs),
}

fn main() -> ExitCode {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_env("RCUD_LOG")
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn")),
        )
        .with_writer(std::io::stderr)
        .init();
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Run(args) => run::run(args),
        Command::Info(args) => info::info(args),
        Command::Smi(args) => smi::smi(args),
        Command::Bench(args) => rcud_bench::bench(args),
        Command::Qos(args) => qos::qos(args),
        Command::Fabric(args) => fabric::fabric(args),
        Command::K8sDevicePlugin(args) => rcud_k8s::main(args),
    };
    match result {
        Ok(code) => code,
        Err(e) => {
            eprintln!("rcud: {e}");
            ExitCode::from(127)
        }
    }
}
