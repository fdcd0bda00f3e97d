//! `rcud k8s-device-plugin`: a Kubernetes device plugin that advertises the
//! GPUs of remote `rcud-server`s as the extended resource `rcud.io/gpu` on
//! nodes without GPUs.
//!
//! The plugin speaks the kubelet's device-plugin API (`v1beta1`): it serves
//! `DevicePlugin` on a unix socket in the kubelet's directory and registers
//! that socket with the kubelet's `Registration` service. Each remote GPU is
//! one device, named by its `RCUD_SERVERS` entry (`host:port#gpu`). A
//! container given devices receives `RCUD_SERVERS` listing them and the rcud
//! client library mounted under NVIDIA's sonames, which is what `rcud run`
//! gives a program. A server that stops answering turns its devices
//! Unhealthy, so the kubelet stops offering them.

mod inventory;
mod plugin;
mod service;

/// The kubelet's device-plugin API, generated from `proto/deviceplugin.proto`.
#[allow(missing_docs, unreachable_pub, clippy::all, clippy::pedantic)]
pub mod api {
    tonic::include_proto!("v1beta1");
}

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use rcud_client::config::{parse_servers, ServerEntry};

pub use inventory::RemoteGpu;
pub use plugin::{install_library, serve, PluginError};

/// The device-plugin API version this plugin speaks.
pub const API_VERSION: &str = "v1beta1";
/// The kubelet's registration socket, in its device-plugin directory.
pub const KUBELET_SOCKET: &str = "kubelet.sock";
/// Health strings of the API.
pub const HEALTHY: &str = "Healthy";
/// See [`HEALTHY`].
pub const UNHEALTHY: &str = "Unhealthy";

/// What the plugin advertises and what it gives the containers.
#[derive(Debug, Clone)]
pub struct PluginConfig {
    /// The servers whose GPUs are advertised; an entry without `#gpu`
    /// stands for every GPU the server reports.
    pub servers: Vec<ServerEntry>,
    /// The kubelet's device-plugin directory (holds `kubelet.sock`).
    pub kubelet_dir: PathBuf,
    /// File name of the plugin's socket in `kubelet_dir`.
    pub socket_name: String,
    /// Extended resource name.
    pub resource_name: String,
    /// Directory on the node holding the client library under NVIDIA's
    /// sonames; mounted read-only into the containers.
    pub library_dir: PathBuf,
    /// Where containers see `library_dir`.
    pub container_library_dir: PathBuf,
    /// Time between two probes of each server.
    pub probe_interval: Duration,
}

/// Arguments of `rcud k8s-device-plugin`.
#[derive(Debug, clap::Args)]
pub struct PluginArgs {
    /// Server(s) whose GPUs to advertise, `host:port[#gpu]`, repeatable or
    /// comma-separated; an entry without `#gpu` advertises every GPU of the
    /// server. The plugin asks each server for its GPUs (with the
    /// credentials of RCUD_TOKEN_FILE, as any client).
    #[arg(
        long = "server",
        env = "RCUD_SERVERS",
        value_delimiter = ',',
        required = true
    )]
    servers: Vec<String>,
    /// The kubelet's device-plugin directory.
    #[arg(long, default_value = "/var/lib/kubelet/device-plugins")]
    kubelet_dir: PathBuf,
    /// File name of the plugin's socket in the kubelet's directory.
    #[arg(long, default_value = "rcud.sock")]
    socket_name: String,
    /// Extended resource the GPUs are advertised as.
    #[arg(long, default_value = "rcud.io/gpu")]
    resource_name: String,
    /// Directory on the node that holds the client library under NVIDIA's
    /// sonames, mounted into the containers.
    #[arg(long, default_value = "/var/lib/rcud/lib")]
    library_dir: PathBuf,
    /// Copy this `librcudart.so` into --library-dir and link NVIDIA's
    /// sonames to it there, at start (the plugin's image ships the library;
    /// --library-dir is then a hostPath mounted at the same path).
    #[arg(long)]
    install_library: Option<PathBuf>,
    /// Where containers see the library directory.
    #[arg(long, default_value = "/usr/local/rcud/lib")]
    container_library_dir: PathBuf,
    /// Seconds between two probes of each server.
    #[arg(long, default_value = "5", value_parser = parse_seconds)]
    probe_interval: Duration,
}

fn parse_seconds(s: &str) -> Result<Duration, String> {
    let secs: f64 = s.parse().map_err(|e| format!("{s}: {e}"))?;
    Duration::try_from_secs_f64(secs).map_err(|e| format!("{s}: {e}"))
}

impl PluginArgs {
    fn into_config(self) -> Result<PluginConfig, rcud_client::config::ConfigError> {
        Ok(PluginConfig {
            servers: parse_servers(&self.servers.join(","))?,
            kubelet_dir: self.kubelet_dir,
            socket_name: self.socket_name,
            resource_name: self.resource_name,
            library_dir: self.library_dir,
            container_library_dir: self.container_library_dir,
            probe_interval: self.probe_interval,
        })
    }
}

/// Runs `rcud k8s-device-plugin` until SIGINT or SIGTERM.
pub fn main(args: PluginArgs) -> Result<ExitCode, Box<dyn std::error::Error>> {
    let install = args.install_library.clone();
    let config = args.into_config()?;
    if let Some(library) = install {
        plugin::install_library(&library, &config.library_dir)?;
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    runtime.block_on(async {
        let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())?;
        let stop = async move {
            tokio::select! {
                _ = tokio::signal::ctrl_c() => {}
                _ = term.recv() => {}
            }
        };
        serve(config, stop).await?;
        Ok::<_, Box<dyn std::error::Error>>(ExitCode::SUCCESS)
    })
}
