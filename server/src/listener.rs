//! The listener: accepts connections and starts one agent per client, as a
//! process of its own or as a thread (see [`crate::isolation`]), within the
//! server's [`Limits`].

use std::io;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::Duration;

use rcud_transport::bootstrap::{self, TransportKind};
use rcud_transport::TcpOptions;

use crate::agent::{self, Agent, AgentError};
use crate::backend::Backend;
use crate::isolation::{self, AgentLauncher, Agents, Isolation, Limits, Refusals};
use crate::peer::InstanceId;

/// A bound, not yet running server.
pub struct Server {
    listener: TcpListener,
    backend: Arc<dyn Backend>,
    tcp: TcpOptions,
    stop: Arc<AtomicBool>,
    limits: Limits,
    mode: Mode,
    refusals: Arc<Refusals>,
    grace: Duration,
    /// Shared by every agent of this server, thread or process.
    instance: InstanceId,
}

/// Where clients are served.
enum Mode {
    /// On threads of this process; the counter is the number of live agents.
    Thread(Arc<AtomicUsize>),
    /// In agent processes.
    Process {
        launcher: AgentLauncher,
        agents: Arc<Agents>,
    },
}

/// Controls a server running on a background thread.
#[derive(Debug)]
pub struct ServerHandle {
    stopper: StopHandle,
    thread: Option<thread::JoinHandle<()>>,
}

/// Stops a running server from anywhere (a signal handler thread, a test).
#[derive(Debug, Clone)]
pub struct StopHandle {
    addr: SocketAddr,
    stop: Arc<AtomicBool>,
}

impl Server {
    /// Binds `addr` (use port 0 for any free port) and draws the server's
    /// random instance id. Clients are served on threads of this process
    /// until [`Server::with_process_isolation`].
    pub fn bind(addr: &str, backend: Arc<dyn Backend>) -> io::Result<Self> {
        Ok(Self {
            instance: InstanceId::random()?,
            listener: TcpListener::bind(addr)?,
            backend,
            tcp: TcpOptions::default(),
            stop: Arc::new(AtomicBool::new(false)),
            limits: Limits::default(),
            mode: Mode::Thread(Arc::default()),
            refusals: Arc::default(),
            grace: isolation::TERMINATION_GRACE,
        })
    }

    /// Serves every client in an agent process started by `launcher`.
    pub fn with_process_isolation(mut self, launcher: AgentLauncher) -> Self {
        self.mode = Mode::Process {
            launcher: launcher.for_instance(self.instance),
            agents: Arc::default(),
        };
        self
    }

    /// Sets the limits on clients.
    pub fn with_limits(mut self, limits: Limits) -> Self {
        self.limits = limits;
        self
    }

    /// How long agent processes get to exit after `SIGTERM` at shutdown
    /// before they are killed.
    pub fn with_shutdown_grace(mut self, grace: Duration) -> Self {
        self.grace = grace;
        self
    }

    /// How clients are served.
    pub fn isolation(&self) -> Isolation {
        match self.mode {
            Mode::Thread(_) => Isolation::Thread,
            Mode::Process { .. } => Isolation::Process,
        }
    }

    /// The id every agent of this server reports in its handshake.
    pub fn instance(&self) -> InstanceId {
        self.instance
    }

    /// The address the server listens on.
    pub fn local_addr(&self) -> io::Result<SocketAddr> {
        self.listener.local_addr()
    }

    /// A handle that makes [`Server::serve`] return.
    pub fn stop_handle(&self) -> io::Result<StopHandle> {
        Ok(StopHandle {
            addr: self.local_addr()?,
            stop: self.stop.clone(),
        })
    }

    /// Accepts clients until stopped. With process isolation, live agent
    /// processes are then terminated (`SIGTERM`, then `SIGKILL` after the
    /// [shutdown grace](Server::with_shutdown_grace)); agent threads finish
    /// when their clients disconnect.
    pub fn serve(self) {
        let addr = self
            .listener
            .local_addr()
            .map(|a| a.to_string())
            .unwrap_or_else(|_| "?".into());
        tracing::info!(
            %addr,
            backend = self.backend.name(),
            isolation = ?self.isolation(),
            instance = %self.instance,
            max_clients = self.limits.max_clients,
            client_memory = ?self.limits.client_memory,
            "rcud-server listening"
        );
        for conn in self.listener.incoming() {
            if self.stop.load(Ordering::Acquire) {
                break;
            }
            match conn {
                Ok(stream) => self.admit(stream),
                Err(e) => {
                    tracing::warn!("accept failed: {e}");
                    // Out of descriptors or memory: give agents time to end
                    // instead of spinning.
                    if !matches!(
                        e.kind(),
                        io::ErrorKind::ConnectionAborted
                            | io::ErrorKind::ConnectionReset
                            | io::ErrorKind::Interrupted
                    ) {
                        thread::sleep(Duration::from_millis(50));
                    }
                }
            }
        }
        tracing::info!("rcud-server stopped accepting clients");
        if let Mode::Process { agents, .. } = &self.mode {
            agents.terminate_all(self.grace);
        }
    }

    /// Number of clients being served (agents started and not yet ended).
    fn live_clients(&self) -> usize {
        match &self.mode {
            Mode::Thread(live) => live.load(Ordering::Acquire),
            Mode::Process { agents, .. } => agents.live(),
        }
    }

    /// Hands a new connection to an agent, or refuses it.
    fn admit(&self, stream: TcpStream) {
        let peer = stream
            .peer_addr()
            .map(|a| a.to_string())
            .unwrap_or_else(|_| "?".into());
        let max = self.limits.max_clients;
        if self.live_clients() >= max as usize {
            let message = isolation::limit_message(max);
            tracing::warn!(%peer, max_clients = max, "refusing a client: {message}");
            self.refusals.refuse(stream, peer, &self.backend, message);
            return;
        }
        match &self.mode {
            Mode::Thread(live) => {
                let guard = LiveGuard::new(live.clone());
                let backend = self.backend.clone();
                let tcp = self.tcp.clone();
                let limits = self.limits.clone();
                let instance = self.instance;
                let spawned = thread::Builder::new()
                    .name("rcud-agent".into())
                    .spawn(move || {
                        let _live = guard;
                        serve_client(stream, backend, &tcp, &limits, instance);
                    });
                if let Err(e) = spawned {
                    tracing::error!(%peer, "cannot start an agent thread: {e}");
                }
            }
            Mode::Process { launcher, agents } => {
                // Kept to tell the client when no agent can be started.
                let spare = stream.try_clone().ok();
                match agents.start(launcher, stream, &peer) {
                    Ok(pid) => tracing::info!(pid, %peer, "agent process started"),
                    Err(e) => {
                        tracing::error!(%peer, "cannot start an agent process: {e}");
                        if let Some(stream) = spare {
                            self.refusals.refuse(
                                stream,
                                peer,
                                &self.backend,
                                format!("server cannot start an agent: {e}"),
                            );
                        }
                    }
                }
            }
        }
    }

    /// Runs [`Server::serve`] on a background thread.
    pub fn spawn(self) -> io::Result<ServerHandle> {
        let stopper = self.stop_handle()?;
        let thread = thread::Builder::new()
            .name("rcud-listener".into())
            .spawn(move || self.serve())?;
        Ok(ServerHandle {
            stopper,
            thread: Some(thread),
        })
    }
}

/// Counts a live agent thread for as long as it exists, panics included.
struct LiveGuard(Arc<AtomicUsize>);

impl LiveGuard {
    fn new(live: Arc<AtomicUsize>) -> Self {
        live.fetch_add(1, Ordering::AcqRel);
        Self(live)
    }
}

impl Drop for LiveGuard {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}

impl StopHandle {
    /// Makes the server stop accepting clients; returns at once.
    pub fn stop(&self) {
        self.stop.store(true, Ordering::Release);
        // Wake the blocking accept. A wildcard address is reached through
        // the loopback interface of its family.
        let mut target = self.addr;
        if target.ip().is_unspecified() {
            target.set_ip(match target.ip() {
                IpAddr::V4(_) => IpAddr::V4(Ipv4Addr::LOCALHOST),
                IpAddr::V6(_) => IpAddr::V6(Ipv6Addr::LOCALHOST),
            });
        }
        let _ = TcpStream::connect_timeout(&target, Duration::from_secs(1));
    }
}

impl ServerHandle {
    /// The address the server listens on.
    pub fn addr(&self) -> SocketAddr {
        self.stopper.addr
    }

    /// Stops accepting clients and waits for the listener to end. Agent
    /// threads of connected clients finish when their clients disconnect;
    /// agent processes are terminated.
    pub fn shutdown(mut self) {
        self.stop_listener();
    }

    fn stop_listener(&mut self) {
        self.stopper.stop();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl Drop for ServerHandle {
    fn drop(&mut self) {
        self.stop_listener();
    }
}

/// Serves one client on `stream`, handshake included, and returns when the
/// connection ends; the client's resources are released by then. Agent
/// threads and agent processes both run this, with their listener's
/// `instance` id.
pub fn serve_client(
    mut stream: TcpStream,
    backend: Arc<dyn Backend>,
    tcp: &TcpOptions,
    limits: &Limits,
    instance: InstanceId,
) {
    let peer = stream
        .peer_addr()
        .map(|a| a.to_string())
        .unwrap_or_else(|_| "?".into());
    let _ = stream.set_read_timeout(Some(agent::HELLO_TIMEOUT));
    let hello = match agent::handshake_for(&mut stream, backend.as_ref(), instance) {
        Ok(hello) => hello,
        Err(AgentError::Transport(rcud_transport::TransportError::Closed)) => {
            tracing::debug!(%peer, "connection closed before the handshake");
            return;
        }
        Err(e) => {
            tracing::warn!(%peer, "handshake failed, closing: {e}");
            return;
        }
    };
    let client = hello.client;
    let kind = TransportKind::from_code(hello.transport).unwrap_or_default();
    // The RDMA set-up exchange is bounded by the same timeout as the hello.
    let chan = match bootstrap::establish(stream, kind, bootstrap::Role::Agent, tcp) {
        Ok(c) => c,
        Err(e) => {
            tracing::warn!(%peer, transport = %kind, "cannot set up the connection: {e}");
            return;
        }
    };
    tracing::info!(%peer, %client, transport = %kind, "client connected");
    match Agent::new(backend, chan)
        .with_memory_limit(limits.client_memory)
        .with_instance(instance)
        .run()
    {
        Ok(()) => tracing::info!(%peer, %client, "client disconnected; its resources are released"),
        Err(e) => {
            tracing::warn!(%peer, %client, "closing connection: {e}; its resources are released")
        }
    }
}
