//! `rcud-server`: serve this node's GPUs (or emulated ones) to rcud clients.
//!
//! Run by a user, it is the listener. Run by the listener with the hidden flag
//! `--agent-fd 3`, it is the agent process of one client whose connection it
//! inherited on that descriptor (see `rcud_server::isolation`).

use std::ffi::OsString;
use std::io::IsTerminal;
use std::net::TcpStream;
use std::os::fd::{FromRawFd, OwnedFd};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use clap::{CommandFactory, FromArgMatches, Parser, ValueEnum};
use rcud_emu::ledger::Ledger;
use rcud_server::backend::emu::EmuBackend;
use rcud_server::backend::{BackendKind, EmuSettings};
use rcud_server::config::{self, Config};
use rcud_server::gate::{Admission, Policy};
use rcud_server::isolation::{self, AgentLauncher, Isolation, Limits};
use rcud_server::listener::{process_resumption, serve_admitted, AgentSetup};
use rcud_server::metrics::{Metrics, SharedStats};
use rcud_server::peer::InstanceId;
use rcud_server::qos::{PortQos, SharedArbiter};
use rcud_server::tenant_memory::TenantMemory;
use rcud_server::tenants::Tenants;
use rcud_server::{select_backend, Backend, Server};
use rcud_transport::tls::ServerTls;
use rcud_transport::TcpOptions;
use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};
use signal_hook::iterator::Signals;

/// Exit status of an agent process that could not start serving.
const AGENT_SETUP_FAILED: u8 = 3;

/// Serve this node's GPUs to remote CUDA applications.
#[derive(Debug, Parser)]
#[command(name = "rcud-server", version)]
struct Args {
    /// Configuration file (TOML): every flag as a key, and the tenants'
    /// tables; flags given here override it. Re-read on SIGHUP.
    #[arg(long)]
    config: Option<PathBuf>,
    /// Serve Prometheus metrics at http://ADDR/metrics (e.g. 127.0.0.1:9400).
    #[arg(long, value_name = "ADDR")]
    metrics: Option<String>,
    /// Whether the configuration file has `[tenants.NAME]` tables.
    #[arg(skip)]
    config_has_tenants: bool,
    /// Address to listen on.
    #[arg(long, default_value = "0.0.0.0:7100")]
    listen: String,
    /// Which GPUs to serve.
    #[arg(long, value_enum, default_value_t = BackendKind::Auto)]
    backend: BackendKind,
    /// Number of emulated GPUs (emu backend).
    #[arg(long, default_value_t = 1)]
    emu_gpus: u32,
    /// Memory of each emulated GPU, e.g. 8GiB. With process isolation every
    /// client's agent process has a device of this size of its own.
    #[arg(long, default_value = "8GiB")]
    emu_memory: bytesize::ByteSize,
    /// Seconds a kernel may run on the emulated device before it is stopped
    /// with cudaErrorLaunchTimeout.
    #[arg(long, default_value_t = 120)]
    kernel_timeout: u64,
    /// Which engine runs kernels on the emulated device: `interp` (the
    /// interpreter) or `jit` (compiled code where the compiler takes the
    /// kernel's code, the interpreter elsewhere).
    #[arg(long, default_value = "interp")]
    emu_engine: rcud_emu::Engine,
    /// How clients are kept apart: `process` serves each client in an agent
    /// process of its own, so a crash harms no other client; `thread` serves
    /// them on threads of the listener.
    #[arg(long, value_enum, default_value_t = Isolation::Process)]
    isolation: Isolation,
    /// Most clients served at once; a client beyond it is refused.
    #[arg(long, default_value_t = isolation::DEFAULT_MAX_CLIENTS,
          value_parser = clap::value_parser!(u32).range(1..))]
    max_clients: u32,
    /// Most device memory one client may hold, e.g. 4GiB (default: no limit
    /// beyond the GPU's own).
    #[arg(long)]
    client_memory: Option<bytesize::ByteSize>,
    /// The tenants (TOML, `[tenants.NAME]` tables with `secret` and limits):
    /// clients must prove they know their tenant's secret. Without it only
    /// local (loopback) clients are served, unless `--insecure-open`.
    #[arg(long, env = "RCUD_AUTH_FILE")]
    auth_file: Option<PathBuf>,
    /// Serve clients from the network without authentication.
    #[arg(long, conflicts_with = "auth_file")]
    insecure_open: bool,
    /// PEM certificate chain: clients then talk TLS (with `--tls-key`).
    #[arg(long, requires = "tls_key")]
    tls_cert: Option<PathBuf>,
    /// PEM private key of `--tls-cert`.
    #[arg(long, requires = "tls_cert")]
    tls_key: Option<PathBuf>,
    /// Most connections from one source address at once.
    #[arg(long, default_value_t = isolation::DEFAULT_MAX_PER_SOURCE,
          value_parser = clap::value_parser!(u32).range(1..))]
    max_per_source: u32,
    /// Seconds a client may send nothing before its connection is closed
    /// (0: never).
    #[arg(long, default_value_t = 0)]
    idle_timeout: u64,
    /// Seconds a client may leave a reply unread before its connection is
    /// closed (0: never).
    #[arg(long, default_value_t = isolation::DEFAULT_WRITE_TIMEOUT.as_secs())]
    write_timeout: u64,
    /// Seconds one copy or memset of many rows may take before it fails with
    /// cudaErrorTimeout (kernels: --kernel-timeout).
    #[arg(long, default_value_t = isolation::DEFAULT_OP_TIMEOUT.as_secs(),
          value_parser = clap::value_parser!(u64).range(1..))]
    op_timeout: u64,
    /// Seconds a client's session outlives a broken connection, waiting for
    /// the client to reconnect and resume it (0: sessions end with their
    /// connection). Clients give up after their outage budget
    /// (`RCUD_OUTAGE_BUDGET`, 3 s by default).
    #[arg(long, default_value_t = rcud_server::resume::DEFAULT_RESUME_GRACE.as_secs_f64(),
          value_parser = parse_grace)]
    resume_grace: f64,
    /// Seconds agent processes get to exit at shutdown before they are killed.
    #[arg(long, default_value_t = isolation::TERMINATION_GRACE.as_secs_f64())]
    shutdown_grace: f64,
    /// Turns on QoS: the data rate of the port the server's clients share
    /// (e.g. `100Gb/s`, `12GB/s`). Connections are then admitted by service
    /// class (tenants' `qos`, clients' `RCUD_QOS`) into an InfiniBand-style
    /// arbitration table, and their bulk copies and kernel launches take
    /// turns by it.
    #[arg(long, value_parser = parse_link)]
    qos_link: Option<f64>,
    /// MTU of the QoS port, for the table's slot times.
    #[arg(long, default_value_t = 2048, requires = "qos_link")]
    qos_mtu: u32,
    /// Paces bulk chunks as a link of this rate would (e.g. `1GB/s`):
    /// arbitration decides shares only when the port is the bottleneck.
    /// With `--qos-link`, the table shares this rate; without it, the port
    /// is one FIFO queue of copies, without QoS (to compare against).
    #[arg(long, value_parser = parse_link)]
    qos_port_rate: Option<f64>,
    /// Agent process: the listener's table of tenants' memory, `FD:TENANTS`.
    #[arg(long = "tenant-memory", hide = true, requires = "agent_fd")]
    tenant_memory: Option<String>,
    /// Agent process: the descriptor of the listener's QoS arbiter.
    #[arg(long = "qos-arbiter", hide = true, requires = "agent_fd")]
    qos_arbiter: Option<i32>,
    /// Agent process: serve the client connected on this descriptor.
    #[arg(long = "agent-fd", hide = true)]
    agent_fd: Option<i32>,
    /// Agent process: the listener that started it.
    #[arg(long = "listener-pid", hide = true, requires = "agent_fd")]
    listener_pid: Option<u32>,
    /// Agent process: the emulated devices' shared memory ledger,
    /// `FD:GPUS:SLOTS:SLOT`.
    #[arg(long = "ledger", hide = true, requires = "agent_fd")]
    ledger: Option<String>,
    /// Agent process: the listener's configuration file, read for its
    /// tenants only (the agent gets every other setting as a flag, so a file
    /// edited but not yet reloaded changes nothing else).
    #[arg(long = "config-tenants", hide = true, requires = "agent_fd")]
    config_tenants: Option<PathBuf>,
    /// Agent process: the descriptor of the listener's metrics table.
    #[arg(long = "stats", hide = true, requires = "agent_fd")]
    stats: Option<i32>,
    /// Agent process: the descriptor of the listener's table of clients.
    #[arg(long = "activity", hide = true, requires = "agent_fd")]
    activity: Option<i32>,
    /// Agent process: the descriptor its client's admission is read from.
    #[arg(long = "handover-fd", hide = true, requires = "agent_fd")]
    handover_fd: Option<i32>,
    /// Agent process: the descriptor resumed connections arrive on.
    #[arg(long = "resume-fd", hide = true, requires_all = ["agent_fd", "session"])]
    resume_fd: Option<i32>,
    /// Agent process: its session's id, hex.
    #[arg(long = "session", hide = true, requires = "resume_fd", value_parser = parse_session)]
    session: Option<[u8; 16]>,
    /// Agent process: the listener's instance id, reported to the client.
    #[arg(long = "instance-id", hide = true, requires = "agent_fd")]
    instance_id: Option<InstanceId>,
}

/// A command line or configuration file that cannot be used.
#[derive(Debug, thiserror::Error)]
enum ArgsError {
    #[error("{0}")]
    Config(#[from] config::ConfigError),
    #[error("{}", .0.render())]
    Command(#[from] clap::Error),
}

impl Args {
    fn emu(&self) -> EmuSettings {
        EmuSettings {
            gpus: self.emu_gpus,
            memory: self.emu_memory.as_u64(),
            kernel_timeout: std::time::Duration::from_secs(self.kernel_timeout),
            engine: self.emu_engine,
        }
    }

    fn limits(&self) -> Limits {
        let secs = |s: u64| (s > 0).then(|| Duration::from_secs(s));
        Limits {
            max_clients: self.max_clients,
            client_memory: self.client_memory.map(|m| m.as_u64()),
            max_per_source: self.max_per_source,
            idle_timeout: secs(self.idle_timeout),
            write_timeout: secs(self.write_timeout),
            op_timeout: Duration::from_secs(self.op_timeout),
            resume_grace: Duration::from_secs_f64(self.resume_grace),
        }
    }

    fn tenants(&self) -> Result<Option<Arc<Tenants>>, String> {
        let loaded = match (&self.auth_file, &self.config) {
            (Some(_), Some(config)) if self.config_has_tenants => {
                return Err(format!(
                    "{}: has [tenants] tables, and --auth-file names another tenant file: \
                     keep one",
                    config.display()
                ))
            }
            (Some(file), _) => Tenants::load(file),
            (None, Some(config)) if self.config_has_tenants => Tenants::load_config(config),
            (None, _) => match &self.config_tenants {
                Some(config) => Tenants::load_config(config),
                None => return Ok(None),
            },
        };
        loaded.map(|t| Some(Arc::new(t))).map_err(|e| e.to_string())
    }

    /// The flags the configuration file stands for, then the command
    /// line's (which win); `argv` is the whole command line.
    fn parse_with_config(argv: Vec<OsString>) -> Result<Self, ArgsError> {
        let mut full = argv.clone();
        let config = match config::config_path(&argv) {
            Some(path) => {
                let config = Config::load(&path, &Self::command())?;
                full.splice(1..1, config.args.iter().cloned());
                Some(config)
            }
            None => None,
        };
        let matches = Self::command()
            .args_override_self(true)
            .try_get_matches_from(full)?;
        let mut args = Self::from_arg_matches(&matches)?;
        args.config_has_tenants = config.is_some_and(|c| c.has_tenants);
        Ok(args)
    }

    fn tls(&self) -> Result<Option<ServerTls>, String> {
        match (&self.tls_cert, &self.tls_key) {
            (Some(cert), Some(key)) => ServerTls::load(cert, key)
                .map(Some)
                .map_err(|e| format!("TLS: {e}")),
            _ => Ok(None),
        }
    }

    /// The arguments that make an agent process rebuild `backend` (the one
    /// the listener runs, `auto` resolved) with the same settings.
    fn agent_args(&self, backend: &dyn Backend) -> Vec<OsString> {
        let kind = match BackendKind::from_str(backend.name(), true) {
            Ok(kind) => kind,
            Err(_) => self.backend,
        };
        let kind = kind
            .to_possible_value()
            .map(|v| v.get_name().to_string())
            .unwrap_or_else(|| "auto".into());
        let mut args: Vec<OsString> = vec![
            "--backend".into(),
            kind.into(),
            "--emu-gpus".into(),
            self.emu_gpus.to_string().into(),
            "--emu-memory".into(),
            self.emu_memory.as_u64().to_string().into(),
            "--kernel-timeout".into(),
            self.kernel_timeout.to_string().into(),
            "--emu-engine".into(),
            self.emu_engine.to_string().into(),
        ];
        if let Some(m) = self.client_memory {
            args.push("--client-memory".into());
            args.push(m.as_u64().to_string().into());
        }
        for (flag, value) in [
            ("--idle-timeout", self.idle_timeout),
            ("--write-timeout", self.write_timeout),
            ("--op-timeout", self.op_timeout),
        ] {
            args.push(flag.into());
            args.push(value.to_string().into());
        }
        args.push("--resume-grace".into());
        args.push(self.resume_grace.to_string().into());
        let config_tenants = self.config.clone().filter(|_| self.config_has_tenants);
        for (flag, path) in [
            ("--config-tenants", &config_tenants),
            ("--auth-file", &self.auth_file),
            ("--tls-cert", &self.tls_cert),
            ("--tls-key", &self.tls_key),
        ] {
            if let Some(path) = path {
                // Absolute: the agent resolves it wherever it runs.
                let path = std::path::absolute(path).unwrap_or_else(|_| path.clone());
                args.push(flag.into());
                args.push(path.into());
            }
        }
        args
    }
}

fn main() -> ExitCode {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_env("RCUD_LOG")
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info")),
        )
        .with_writer(std::io::stderr)
        .with_ansi(std::io::stderr().is_terminal())
        .init();
    let args = match Args::parse_with_config(std::env::args_os().collect()) {
        Ok(args) => args,
        // --help and --version too.
        Err(ArgsError::Command(e)) => e.exit(),
        Err(ArgsError::Config(e)) => {
            eprintln!("rcud-server: {e}");
            return ExitCode::from(2);
        }
    };
    match args.agent_fd {
        Some(fd) => {
            let span = tracing::info_span!("agent", pid = std::process::id());
            let _entered = span.enter();
            agent_main(fd, &args)
        }
        None => listener_main(&args),
    }
}

fn listener_main(args: &Args) -> ExitCode {
    let backend = match select_backend(args.backend, &args.emu()) {
        Ok(b) => b,
        Err(e) => {
            eprintln!("rcud-server: {e}");
            return ExitCode::FAILURE;
        }
    };
    let grace = match std::time::Duration::try_from_secs_f64(args.shutdown_grace) {
        Ok(g) => g,
        Err(e) => {
            eprintln!("rcud-server: --shutdown-grace {}: {e}", args.shutdown_grace);
            return ExitCode::FAILURE;
        }
    };
    let (tenants, tls) = match (args.tenants(), args.tls()) {
        (Ok(t), Ok(tls)) => (t, tls),
        (Err(e), _) | (_, Err(e)) => {
            eprintln!("rcud-server: {e}");
            return ExitCode::FAILURE;
        }
    };
    let policy = Policy {
        tenants,
        open_network: args.insecure_open,
        tls: tls.is_some(),
    };
    let mut server = match Server::bind(&args.listen, backend.clone()) {
        Ok(s) => {
            let s = s
                .with_limits(args.limits())
                .with_shutdown_grace(grace)
                .with_policy(policy);
            match tls {
                Some(tls) => s.with_tls(tls),
                None => s,
            }
        }
        Err(e) => {
            eprintln!("rcud-server: cannot listen on {}: {e}", args.listen);
            return ExitCode::FAILURE;
        }
    };
    if let Some(bytes_per_second) = args.qos_link {
        let link = rcud_qos::admission::Link {
            bytes_per_second,
            mtu: args.qos_mtu,
        };
        let config = rcud_qos::admission::TableConfig::new(link);
        match PortQos::paced(config, args.qos_port_rate) {
            Ok(port) => {
                tracing::info!(
                    "QoS on: {:.2} GB/s port, classes by tenant (qos) or client (RCUD_QOS){}",
                    bytes_per_second / 1e9,
                    match args.qos_port_rate {
                        Some(rate) => format!(", bulk chunks paced at {:.2} GB/s", rate / 1e9),
                        None => String::new(),
                    }
                );
                server = server.with_qos(port);
            }
            Err(e) => {
                eprintln!("rcud-server: cannot set up QoS: {e}");
                return ExitCode::FAILURE;
            }
        }
    } else if let Some(rate) = args.qos_port_rate {
        match PortQos::fifo(rate, args.qos_mtu) {
            Ok(port) => {
                tracing::info!(
                    "QoS off: bulk chunks paced at {:.2} GB/s, copies in arrival order",
                    rate / 1e9
                );
                server = server.with_qos(port);
            }
            Err(e) => {
                eprintln!("rcud-server: cannot set up the paced port: {e}");
                return ExitCode::FAILURE;
            }
        }
    }
    if args.isolation == Isolation::Process {
        let launcher = match AgentLauncher::current_exe(args.agent_args(backend.as_ref())) {
            Ok(launcher) => launcher,
            Err(e) => {
                eprintln!("rcud-server: cannot find its own executable for agent processes: {e}");
                return ExitCode::FAILURE;
            }
        };
        server = match server.with_process_isolation(launcher) {
            Ok(s) => s,
            Err(e) => {
                eprintln!("rcud-server: cannot set up agent processes: {e}");
                return ExitCode::FAILURE;
            }
        };
    }
    if let Some(addr) = &args.metrics {
        let served = std::net::TcpListener::bind(addr)
            .map_err(|e| format!("cannot listen on {addr}: {e}"))
            .and_then(|l| {
                let metrics = Metrics::enable(server.metrics_probe())
                    .map_err(|e| format!("cannot set up: {e}"))?;
                rcud_server::metrics::serve(l, metrics).map_err(|e| e.to_string())
            });
        match served {
            Ok(()) => tracing::info!("metrics at http://{addr}/metrics"),
            Err(e) => {
                eprintln!("rcud-server: metrics: {e}");
                return ExitCode::FAILURE;
            }
        }
    }
    let reload = server.tenants_reload();
    let stopper = match server.stop_handle() {
        Ok(s) => s,
        Err(e) => {
            eprintln!("rcud-server: {e}");
            return ExitCode::FAILURE;
        }
    };
    let mut signals = match Signals::new([SIGINT, SIGTERM, SIGHUP]) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("rcud-server: cannot handle signals: {e}");
            return ExitCode::FAILURE;
        }
    };
    let argv: Vec<OsString> = std::env::args_os().collect();
    let started = args.limits();
    let watcher = std::thread::Builder::new()
        .name("rcud-signals".into())
        .spawn(move || {
            let mut received = 0;
            for signal in signals.forever() {
                if signal == SIGHUP {
                    reload_config(&argv, &started, &reload);
                    continue;
                }
                received += 1;
                let name = if signal == SIGINT {
                    "SIGINT"
                } else {
                    "SIGTERM"
                };
                if received == 1 {
                    tracing::info!("{name} received: shutting down");
                    stopper.stop();
                } else {
                    tracing::warn!("{name} received again: exiting now");
                    // Agent processes follow their listener (parent-death
                    // signal).
                    std::process::exit(130);
                }
            }
        });
    if let Err(e) = watcher {
        eprintln!("rcud-server: cannot start the signal thread: {e}");
        return ExitCode::FAILURE;
    }
    server.serve();
    tracing::info!("rcud-server stopped");
    ExitCode::SUCCESS
}

/// SIGHUP: reads the configuration (or tenant file) again and puts its
/// tenants (secrets, limits, service classes) in force for new connections.
/// A file that does not parse changes nothing.
fn reload_config(
    argv: &[OsString],
    started: &Limits,
    reload: &rcud_server::listener::TenantsReload,
) {
    let outcome = Args::parse_with_config(argv.to_vec())
        .map_err(|e| e.to_string())
        .and_then(|args| {
            if args.limits() != *started {
                tracing::warn!(
                    "SIGHUP: the server's own limits (max_clients, client_memory, timeouts, ...) \
                 changed; they take effect at the next start"
                );
            }
            match args.tenants()? {
                Some(tenants) => {
                    let count = tenants.len();
                    reload.replace(Arc::unwrap_or_clone(tenants))?;
                    Ok(count)
                }
                None => Err("no tenants in the files now: the server keeps its tenants".into()),
            }
        });
    if let Some(m) = rcud_server::metrics::listener() {
        m.reloaded(outcome.is_ok());
    }
    match outcome {
        Ok(count) => tracing::info!("SIGHUP: reloaded {count} tenant(s); new connections get them"),
        Err(e) => tracing::error!("SIGHUP: reload failed, nothing changed: {}", e.trim_end()),
    }
}

/// The agent process: serves the one client whose connection it inherited.
fn agent_main(fd: i32, args: &Args) -> ExitCode {
    // Take the descriptor before anything else can open one.
    let stream = match adopt_socket(fd) {
        Ok(s) => s,
        Err(e) => {
            tracing::error!("cannot take over the client connection: {e}");
            return ExitCode::from(AGENT_SETUP_FAILED);
        }
    };
    if let Some(listener) = args.listener_pid {
        if let Err(e) = isolation::follow_listener(listener) {
            tracing::error!("{e}");
            return ExitCode::from(AGENT_SETUP_FAILED);
        }
    }
    let backend: Arc<dyn Backend> = match agent_backend(args) {
        Ok(b) => b,
        Err(e) => {
            tracing::error!("{e}");
            return ExitCode::from(AGENT_SETUP_FAILED);
        }
    };
    backend.own_process();
    if let Some(fd) = args.stats {
        match adopt_fd(fd, "/memfd:")
            .and_then(|fd| SharedStats::open(fd).map_err(|e| format!("metrics table: {e}")))
        {
            Ok(stats) => rcud_server::metrics::install(Arc::new(stats)),
            Err(e) => {
                tracing::error!("{e}");
                return ExitCode::from(AGENT_SETUP_FAILED);
            }
        }
    }
    if let Some(fd) = args.activity {
        if let Err(e) = adopt_fd(fd, "/memfd:").and_then(|fd| {
            rcud_server::activity::adopt(fd).map_err(|e| format!("table of clients: {e}"))
        }) {
            tracing::error!("{e}");
            return ExitCode::from(AGENT_SETUP_FAILED);
        }
    }
    let admission = match admission_of(args) {
        Ok(a) => a,
        Err(e) => {
            tracing::error!("{e}");
            return ExitCode::from(AGENT_SETUP_FAILED);
        }
    };
    let tls = match args.tls() {
        Ok(tls) => tls,
        Err(e) => {
            tracing::error!("{e}");
            return ExitCode::from(AGENT_SETUP_FAILED);
        }
    };
    let qos = match args.qos_arbiter.map(|fd| {
        adopt_fd(fd, "/memfd:")
            .and_then(|fd| SharedArbiter::open(fd).map_err(|e| format!("QoS arbiter: {e}")))
    }) {
        Some(Ok(arbiter)) => Some(Arc::new(arbiter)),
        Some(Err(e)) => {
            tracing::error!("{e}");
            return ExitCode::from(AGENT_SETUP_FAILED);
        }
        None => None,
    };
    let tenant_memory = match tenant_memory_of(args) {
        Ok(t) => t,
        Err(e) => {
            tracing::error!("{e}");
            return ExitCode::from(AGENT_SETUP_FAILED);
        }
    };
    let setup = AgentSetup {
        backend,
        tcp: TcpOptions::default(),
        limits: args.limits(),
        instance: args.instance_id.unwrap_or_default(),
        tls,
        qos,
        tenant_memory,
    };
    let resumption = match (args.resume_fd, args.session) {
        (Some(fd), Some(session)) => match adopt_fd(fd, "socket:") {
            Ok(fd) => Some(process_resumption(
                session,
                std::os::unix::net::UnixDatagram::from(fd),
                &setup,
                args.tenants().ok().flatten(),
            )),
            Err(e) => {
                tracing::error!("{e}");
                return ExitCode::from(AGENT_SETUP_FAILED);
            }
        },
        _ => None,
    };
    serve_admitted(stream, &admission, &setup, resumption);
    ExitCode::SUCCESS
}

/// The agent's backend: the listener's, with the emulated devices' memory
/// counted in the listener's ledger when it handed one over.
fn agent_backend(args: &Args) -> Result<Arc<dyn Backend>, String> {
    let Some(spec) = &args.ledger else {
        return select_backend(args.backend, &args.emu()).map_err(|e| e.to_string());
    };
    let bad = || format!("--ledger {spec}: expected FD:GPUS:SLOTS:SLOT");
    let parts: Vec<u32> = spec
        .split(':')
        .map(|p| p.parse().map_err(|_| bad()))
        .collect::<Result<_, _>>()?;
    let [fd, gpus, slots, slot] = parts[..] else {
        return Err(bad());
    };
    let fd = i32::try_from(fd).map_err(|_| bad())?;
    let owned = adopt_fd(fd, "/memfd:")?;
    let ledger = Ledger::open(owned, gpus, slots).map_err(|e| format!("memory ledger: {e}"))?;
    let emu = EmuBackend::with_ledger(&args.emu(), Arc::new(ledger), slot)
        .map_err(|e| format!("memory ledger: {e}"))?;
    Ok(Arc::new(emu))
}

/// The listener's table of tenants' memory, when it handed one over.
fn tenant_memory_of(args: &Args) -> Result<Option<Arc<TenantMemory>>, String> {
    let Some(spec) = &args.tenant_memory else {
        return Ok(None);
    };
    let bad = || format!("--tenant-memory {spec}: expected FD:TENANTS");
    let (fd, tenants) = spec.split_once(':').ok_or_else(bad)?;
    let fd: i32 = fd.parse().map_err(|_| bad())?;
    let tenants: u32 = tenants.parse().map_err(|_| bad())?;
    let table = TenantMemory::open(adopt_fd(fd, "/memfd:")?, tenants)
        .map_err(|e| format!("tenants' memory: {e}"))?;
    Ok(Some(Arc::new(table)))
}

/// A session id as the listener passes it: 32 hex digits.
fn parse_session(s: &str) -> Result<[u8; 16], String> {
    let bad = || format!("`{s}` is not a session id (32 hex digits)");
    if s.len() != 32 || !s.is_ascii() {
        return Err(bad());
    }
    let mut id = [0u8; 16];
    for (i, byte) in id.iter_mut().enumerate() {
        *byte = u8::from_str_radix(&s[2 * i..2 * i + 2], 16).map_err(|_| bad())?;
    }
    Ok(id)
}

/// `--resume-grace`: seconds, finite and not negative.
fn parse_grace(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(v) if v.is_finite() && (0.0..=86400.0).contains(&v) => Ok(v),
        _ => Err(format!(
            "`{s}` is not a number of seconds between 0 and 86400"
        )),
    }
}

/// The client's admission, as the listener handed it over.
fn admission_of(args: &Args) -> Result<Admission, String> {
    let fd = args
        .handover_fd
        .ok_or("started without --handover-fd: agents serve admitted clients only")?;
    let owned = adopt_fd(fd, "pipe:")?;
    let handover = isolation::read_handover(owned).map_err(|e| e.to_string())?;
    let tenants = args.tenants()?;
    handover.admission(tenants.as_deref())
}

/// Descriptor `fd`, inherited from the listener, whose `/proc` link starts
/// with `kind` (`socket:`, `pipe:`).
fn adopt_fd(fd: i32, kind: &str) -> Result<OwnedFd, String> {
    if fd <= 2 {
        return Err(format!("descriptor {fd} is not an inherited {kind}"));
    }
    // Refuse to take over a descriptor of another kind (a mistaken command
    // line); where /proc is missing, the caller's own checks remain.
    if std::path::Path::new("/proc/self/fd").is_dir() {
        match std::fs::read_link(format!("/proc/self/fd/{fd}")) {
            Ok(target) if target.to_string_lossy().starts_with(kind) => {}
            Ok(target) => {
                return Err(format!(
                    "descriptor {fd} is {}, not a {}",
                    target.display(),
                    kind.trim_end_matches(':')
                ))
            }
            Err(_) => return Err(format!("descriptor {fd} is not open")),
        }
    }
    // SAFETY: the listener mapped this descriptor (`--agent-fd`,
    // `--handover-fd`) for this process alone; it is open and of the
    // expected kind (checked above), and nothing else in this process has
    // used or owns it, so taking ownership here is the only ownership there
    // is.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// The connected TCP socket on descriptor `fd`, inherited from the listener.
fn adopt_socket(fd: i32) -> Result<TcpStream, String> {
    let stream = TcpStream::from(adopt_fd(fd, "socket:")?);
    stream
        .peer_addr()
        .map_err(|e| format!("descriptor {fd} is not a connected TCP socket: {e}"))?;
    Ok(stream)
}

/// A `--qos-link` rate: bytes per second.
fn parse_link(s: &str) -> Result<f64, String> {
    rcud_qos::service::parse_bandwidth(s).map_err(|e| e.to_string())
}
