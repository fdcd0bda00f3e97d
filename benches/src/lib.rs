//! `rcud bench`: bandwidthTest-style measurements through the rcud client
//! runtime, each next to the raw transport and the host's memcpy measured in
//! the same run, so the ratios hold on a shared, noisy machine.
//!
//! This crate is the harness; the `rcud` command parses [`BenchArgs`] and
//! calls [`bench`]. Points that need a client library of their own run in a
//! child `rcud bench ...-point` process. The criterion benches of single
//! components (no server) are in `criterion/`.

// Unsafe code only where a benchmark calls the client library's C ABI.
#![deny(unsafe_code)]

mod bandwidth;
mod blas;
mod chunks;
// Calls the client library's C functions, as an application does.
#[allow(unsafe_code)]
mod graph;
mod hostmem;
mod kernels;
mod latency;
// Calls the client library's C functions, as an application does.
#[allow(unsafe_code)]
mod launch;
mod output;
// Calls the client library's C functions, as an application does.
#[allow(unsafe_code)]
mod overlap;
mod pin;
pub mod plot;
mod qos;
mod raw;
mod resume;

use std::process::ExitCode;

use rcud_client::config::{parse_servers, ServerEntry};
use rcud_client::Runtime;
use rcud_server::backend::{BackendKind, EmuSettings};
use rcud_server::ServerHandle;
use rcud_transport::bootstrap::TransportKind;

use output::Format;

pub type BenchResult<T> = Result<T, Box<dyn std::error::Error>>;

/// Arguments of `rcud bench`.
#[derive(Debug, clap::Args)]
pub struct BenchArgs {
    #[command(subcommand)]
    what: What,
    /// Server to measure (`host:port`); without it an embedded server on loopback.
    #[arg(long, global = true, env = "RCUD_SERVERS")]
    server: Option<String>,
    /// Output format (`json` and `csv` for scripts, `markdown` for documents).
    #[arg(long, global = true, value_enum, default_value_t = Format::Table)]
    format: Format,
    /// Transport modules to the server, comma-separated (`tcp`, `csr`, `msr`).
    /// Default: `tcp`, and `csr,msr` for `chunks`.
    #[arg(
        long,
        global = true,
        env = "RCUD_TRANSPORT",
        value_delimiter = ',',
        visible_alias = "transports"
    )]
    transport: Vec<TransportKind>,
    /// Pin the measuring thread to CPU `CLIENT` and the embedded server's
    /// threads (and every raw peer) to CPU `SERVER`; `--pin` alone is `0,1`.
    #[arg(
        long,
        global = true,
        value_name = "CLIENT,SERVER",
        num_args = 0..=1,
        require_equals = true,
        default_missing_value = "0,1"
    )]
    pin: Option<pin::Placement>,
}

#[derive(Debug, clap::Subcommand)]
enum What {
    /// Host<->device and device<->device bandwidth, like NVIDIA's bandwidthTest.
    Bandwidth(bandwidth::BandwidthArgs),
    /// SGEMM, DGEMM and a batched small GEMM through rcud's cuBLAS next to
    /// the same CPU GEMM called directly.
    Blas(blas::BlasArgs),
    /// The emulated device's interpreter and compiling engine on the same
    /// kernels, beside a plain Rust loop doing the same work (no server).
    Kernels(kernels::KernelsArgs),
    /// Round trip of a small synchronous call next to a raw ping-pong.
    Latency {
        /// Round trips to time.
        #[arg(long, default_value_t = 2000)]
        iterations: u32,
    },
    /// Asynchronous empty-kernel launches per second.
    Launch {
        /// Launches to time.
        #[arg(long, default_value_t = 100_000)]
        launches: u32,
        /// Also measure with a synchronize every this many launches.
        #[arg(long, default_value_t = 100)]
        sync_every: u32,
        /// The C APIs that launch: `cudaLaunchKernel`, `cuLaunchKernel`.
        #[arg(long, value_enum, value_delimiter = ',', default_values_t = [launch::Api::Runtime, launch::Api::Driver])]
        api: Vec<launch::Api>,
    },
    /// One API and transport of `launch`, measured in this process.
    #[command(hide = true)]
    LaunchPoint(launch::PointArgs),
    /// Bandwidth per staging chunk count of the RDMA modules, laid out like
    /// Table 3.1 of the rCUDA communications thesis.
    Chunks(chunks::ChunksArgs),
    /// The same kernels launched one by one and as one captured graph.
    Graph(graph::GraphArgs),
    /// `graph` for one transport, measured in this process.
    #[command(hide = true)]
    GraphPoint(graph::GraphArgs),
    /// Host work done while an asynchronous copy from page-locked memory
    /// is in flight, next to the same copy done synchronously.
    Overlap(overlap::OverlapArgs),
    /// `overlap` for one transport, measured in this process.
    #[command(hide = true)]
    OverlapPoint(overlap::OverlapArgs),
    /// What resumable sessions cost without faults: the same calls to a
    /// server that keeps sessions and to one that does not, side by side.
    Resume(resume::ResumeArgs),
    /// Clients sharing one server with and without QoS: bulk shares of
    /// weights 3:1, and a DBTS client's latency beside a bulk client.
    Qos(qos::QosArgs),
    /// One point of `chunks`, run in a child process whose environment holds
    /// the chunk count.
    #[command(hide = true)]
    ChunkPoint(chunks::PointArgs),
}

/// What every measurement shares: the server, its address and the placement
/// of the threads.
pub(crate) struct Setup {
    servers: String,
    entries: Vec<ServerEntry>,
    placement: Option<pin::Placement>,
    _embedded: Option<ServerHandle>,
    /// The embedded server's token, for a second server speaking TLS.
    token: Option<rcud_server::embedded::LocalToken>,
    tls_server: std::sync::OnceLock<ServerHandle>,
}

impl Setup {
    /// Starts the embedded server unless `--server` names one. With a
    /// placement, the server's threads are started from a thread pinned to
    /// the server CPU (threads inherit their creator's affinity), and the
    /// calling thread then moves to the client CPU.
    fn new(server: Option<String>, placement: Option<pin::Placement>) -> BenchResult<Self> {
        let (embedded, token) = match &server {
            Some(_) => (None, None),
            None => {
                let token = rcud_server::embedded::LocalToken::generate()?;
                token.export_here();
                if let Some(p) = placement {
                    pin::pin_current(p.server)?;
                }
                let handle = rcud_server::embedded::spawn(
                    BackendKind::Auto,
                    &EmuSettings::default(),
                    &token,
                    None,
                )?;
                (Some(handle), Some(token))
            }
        };
        if let Some(p) = placement {
            pin::pin_current(p.client)?;
        }
        let servers = match (&server, &embedded) {
            (Some(s), _) => s.clone(),
            (None, Some(handle)) => handle.addr().to_string(),
            (None, None) => unreachable!("an embedded server is started without --server"),
        };
        let entries = parse_servers(&servers)?;
        Ok(Self {
            servers,
            entries,
            placement,
            _embedded: embedded,
            token,
            tls_server: std::sync::OnceLock::new(),
        })
    }

    /// A TCP runtime over TLS to a second embedded server, with a
    /// self-signed certificate the runtime pins.
    fn tls_runtime(&self) -> BenchResult<&'static Runtime> {
        let Some(token) = &self.token else {
            return Err("--tls compares two embedded servers; against a remote server set RCUD_TLS_CA or RCUD_TLS_PIN and run once each way".into());
        };
        let cert = rcgen::generate_simple_self_signed(vec!["127.0.0.1".into()])?;
        let der = cert.cert.der().clone();
        let pin = rcud_transport::tls::parse_pin(&rcud_transport::tls::fingerprint(&der))?;
        let key = rustls_pki_types::PrivateKeyDer::try_from(cert.signing_key.serialize_der())?;
        let server_tls = rcud_transport::tls::ServerTls::from_der(vec![der], key)?;
        if self.tls_server.get().is_none() {
            if let Some(p) = self.placement {
                pin::pin_current(p.server)?;
            }
            let handle = rcud_server::embedded::spawn(
                BackendKind::Auto,
                &EmuSettings::default(),
                token,
                Some(server_tls),
            )?;
            if let Some(p) = self.placement {
                pin::pin_current(p.client)?;
            }
            let _ = self.tls_server.set(handle);
        }
        let addr = self
            .tls_server
            .get()
            .map(|h| h.addr().to_string())
            .ok_or("the TLS server did not start")?;
        let security = rcud_client::Security {
            credentials: Some(rcud_proto::auth::Credentials::parse(&token.as_env())?),
            tls: Some(rcud_transport::tls::ClientTls::new(
                &rcud_transport::tls::Trust::Pin(pin),
            )?),
            qos: String::new(),
        };
        let rt: &'static Runtime = Box::leak(Box::new(Runtime::connect_secured(
            &parse_servers(&addr)?,
            "rcud bench".into(),
            TransportKind::Tcp,
            security,
        )));
        rt.device_count()
            .map_err(|e| format!("no remote GPU over TLS at {addr}: {e}"))?;
        Ok(rt)
    }

    /// A runtime with sessions on `kind`, checked to reach a GPU. It lives as
    /// long as the process, as in an application.
    fn runtime(&self, kind: TransportKind) -> BenchResult<&'static Runtime> {
        let rt: &'static Runtime = Box::leak(Box::new(Runtime::connect_with(
            &self.entries,
            "rcud bench".into(),
            kind,
        )));
        rt.device_count()
            .map_err(|e| format!("no remote GPU at {} over {kind}: {e}", self.servers))?;
        Ok(rt)
    }

    /// The CPU for threads that play the server (raw peers).
    fn server_cpu(&self) -> Option<usize> {
        self.placement.map(|p| p.server)
    }

    /// How the threads are placed, for the output.
    fn placement_label(&self) -> String {
        match self.placement {
            Some(p) => format!("client cpu {}, server cpu {}", p.client, p.server),
            None => "unpinned".into(),
        }
    }
}

pub fn bench(args: BenchArgs) -> BenchResult<ExitCode> {
    let transports = |default: &[TransportKind]| {
        if args.transport.is_empty() {
            default.to_vec()
        } else {
            args.transport.clone()
        }
    };
    let tcp = [TransportKind::Tcp];
    // `chunks` starts one child process per point, each with its own server.
    if let What::Chunks(c) = &args.what {
        let modules = transports(&[TransportKind::Csr, TransportKind::Msr]);
        return chunks::run(c, &modules, &args);
    }
    // `kernels` calls the emulated device's engines in this process.
    if let What::Kernels(k) = &args.what {
        return kernels::run(k, args.format);
    }
    // `resume` starts its own pair of servers.
    if let What::Resume(r) = &args.what {
        return resume::run(r, &transports(&[TransportKind::Tcp]), args.format);
    }
    // `qos` starts its own pair of servers.
    if let What::Qos(q) = &args.what {
        return qos::run(q, args.format);
    }
    let setup = Setup::new(args.server.clone(), args.pin)?;
    match &args.what {
        What::Bandwidth(b) => bandwidth::run(&setup, &transports(&tcp), b, args.format),
        What::Blas(b) => blas::run(&setup, &transports(&tcp), b, args.format),
        What::Latency { iterations } => {
            latency::run(&setup, &transports(&tcp), *iterations, args.format)
        }
        What::Launch {
            launches,
            sync_every,
            api,
        } => launch::run(
            &setup,
            &transports(&tcp),
            api,
            *launches,
            *sync_every,
            &args,
        ),
        What::LaunchPoint(p) => {
            let [kind] = transports(&tcp)[..] else {
                return Err("launch-point measures one transport".into());
            };
            launch::point(&setup, kind, p)
        }
        What::Graph(g) => graph::run(&setup, &transports(&tcp), g, &args),
        What::GraphPoint(g) => {
            let [kind] = transports(&tcp)[..] else {
                return Err("graph-point measures one transport".into());
            };
            graph::point(&setup, kind, g)
        }
        What::Overlap(o) => overlap::run(&setup, &transports(&tcp), o, &args),
        What::OverlapPoint(o) => {
            let [kind] = transports(&tcp)[..] else {
                return Err("overlap-point measures one transport".into());
            };
            overlap::point(&setup, kind, o)
        }
        What::ChunkPoint(p) => {
            let [kind] = transports(&tcp)[..] else {
                return Err("chunk-point measures one transport".into());
            };
            chunks::point(&setup, kind, p)
        }
        What::Chunks(_) | What::Qos(_) | What::Kernels(_) | What::Resume(_) => {
            unreachable!("handled above")
        }
    }
}

/// `rcud bench --format json --transport KIND [--server S] [--pin P]`: the
/// start of a child process that measures one point with a client library
/// of its own; the caller adds the subcommand.
fn point_command(
    server: Option<&str>,
    pin: Option<pin::Placement>,
    kind: TransportKind,
) -> BenchResult<std::process::Command> {
    let mut cmd = std::process::Command::new(std::env::current_exe()?);
    cmd.args([
        "bench",
        "--format",
        "json",
        "--transport",
        &kind.to_string(),
    ]);
    if let Some(s) = server {
        cmd.args(["--server", s]);
    }
    if let Some(p) = pin {
        cmd.arg(format!("--pin={p}"));
    }
    Ok(cmd)
}

/// Runs a point's child process and reads its JSON answer.
fn run_point<T: serde::de::DeserializeOwned>(
    mut cmd: std::process::Command,
    what: &str,
) -> BenchResult<T> {
    let out = cmd.output()?;
    if !out.status.success() {
        let stderr = String::from_utf8_lossy(&out.stderr);
        return Err(format!("{what}: {}", stderr.trim()).into());
    }
    Ok(serde_json::from_slice(&out.stdout)
        .map_err(|e| format!("{what}: unreadable result: {e}"))?)
}

/// rcud's client library, loaded into this (child) process the way an
/// application loads it, its servers and transport set as `rcud run` sets
/// them.
fn load_client_library(setup: &Setup, kind: TransportKind) -> BenchResult<libloading::Library> {
    let library = rcud_client::sonames::installed_library()?;
    // The library reads where its GPUs are when first called.
    std::env::set_var("RCUD_SERVERS", &setup.servers);
    std::env::set_var("RCUD_TRANSPORT", kind.to_string());
    // SAFETY: rcud's own client library; its initializers only set up state.
    #[allow(unsafe_code)]
    let lib = unsafe { libloading::Library::new(&library) }
        .map_err(|e| format!("cannot load {}: {e}", library.display()))?;
    Ok(lib)
}

/// Transfer sizes: a list like `1KB,1MB,32MB`, or `shmoo` (1 KB to 64 MB).
fn parse_sizes(spec: &str) -> Result<Vec<u64>, String> {
    if spec == "shmoo" {
        return Ok((10..=26).map(|p| 1u64 << p).collect());
    }
    spec.split(',').map(parse_size).collect()
}

/// `4096`, `64K`, `1MB`, `32MiB`: like bandwidthTest, K/M/G are powers of 1024.
fn parse_size(s: &str) -> Result<u64, String> {
    let t = s.trim().to_ascii_uppercase();
    let digits = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    let (num, unit) = t.split_at(digits);
    let shift = match unit.trim() {
        "" | "B" => 0,
        "K" | "KB" | "KIB" => 10,
        "M" | "MB" | "MIB" => 20,
        "G" | "GB" | "GIB" => 30,
        _ => return Err(format!("bad size `{s}`: unknown unit")),
    };
    let n: u64 = num.parse().map_err(|_| format!("bad size `{s}`"))?;
    n.checked_mul(1 << shift)
        .filter(|&b| b > 0)
        .ok_or_else(|| format!("bad size `{s}`"))
}

/// A progress bar on stderr, hidden when stderr is not a terminal or the
/// output is for a script.
fn progress(total: u64, format: Format) -> indicatif::ProgressBar {
    use std::io::IsTerminal;
    if !matches!(format, Format::Table | Format::Markdown) || !std::io::stderr().is_terminal() {
        return indicatif::ProgressBar::hidden();
    }
    let bar = indicatif::ProgressBar::new(total);
    if let Ok(style) =
        indicatif::ProgressStyle::with_template("{elapsed:>4} [{bar:30}] {pos}/{len} {msg}")
    {
        bar.set_style(style.progress_chars("=> "));
    }
    bar
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_are_binary() {
        assert_eq!(
            parse_sizes("1KB,32MB,4096,2g"),
            Ok(vec![1024, 32 << 20, 4096, 2 << 30])
        );
        assert_eq!(parse_sizes("shmoo").map(|v| v.len()), Ok(17));
        assert!(parse_sizes("12XB").is_err());
        assert!(parse_sizes("0").is_err());
    }
}
