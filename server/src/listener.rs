//! The listener: accepts connections, lets each through the [`gate`]
//! (authentication and access policy) on a short-lived thread, and starts
//! one agent per admitted client, as a process of its own or as a thread
//! (see [`crate::isolation`]), within the server's [`Limits`].

use std::io;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use parking_lot::RwLock;

use rcud_emu::ledger::Ledger;
use rcud_transport::bootstrap;
use rcud_transport::tls::ServerTls;
use rcud_transport::{Channel, TcpOptions, TransportError};

use crate::agent::{Agent, AgentError};
use crate::backend::Backend;
use crate::gate::{self, Admission, Policy};
use crate::isolation::{self, AgentLauncher, Agents, Isolation, Limits, Refusals};
use crate::metrics::{self, CountingChannel, Probe};
use crate::occupancy::{Lease, Occupancy};
use crate::peer::InstanceId;
use crate::qos::{Lane, PortQos, SharedArbiter};
use crate::resume::{Reconnection, Reconnects, Resumption, Route, Sessions};
use crate::tenant_memory::{MemoryAccount, TenantMemory};
use crate::tenants::Tenants;

/// Most connections in the gate at once; more are dropped unanswered, so a
/// flood costs a bounded number of threads.
const MAX_IN_GATE: usize = 256;

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
    policy: Policy,
    tls: Option<ServerTls>,
    /// Connections per source address, and per tenant.
    sources: Arc<Occupancy>,
    tenants: Arc<Occupancy>,
    in_gate: Arc<AtomicUsize>,
    /// Admission and arbitration by service class, when configured.
    qos: Option<Arc<PortQos>>,
    /// Tenants' memory over all their connections, when a tenant has a
    /// memory limit.
    tenant_memory: Option<Arc<TenantMemory>>,
    /// The tenants in force for new connections: the policy's, until a
    /// reload replaces them.
    current_tenants: Arc<RwLock<Option<Arc<Tenants>>>>,
    /// Sessions whose clients may come back on a new connection.
    sessions: Arc<Sessions>,
}

/// Replaces the tenants of a running server (`SIGHUP`): new connections
/// are checked against the new secrets and get the new limits; connected
/// clients keep what they were admitted with.
#[derive(Debug, Clone)]
pub struct TenantsReload {
    current: Arc<RwLock<Option<Arc<Tenants>>>>,
}

impl TenantsReload {
    /// Puts `tenants` in force. The set of tenant names must stay the same:
    /// agents find their tenant by its position in name order, and the
    /// table of tenants' memory is sized at start.
    pub fn replace(&self, tenants: Tenants) -> Result<(), String> {
        let mut current = self.current.write();
        let Some(old) = current.as_ref() else {
            return Err("the server was started without tenants; restart it to add some".into());
        };
        if !old.names().eq(tenants.names()) {
            return Err(format!(
                "the tenants changed (was: {}; now: {}): adding or removing tenants needs a restart",
                old.names().collect::<Vec<_>>().join(", "),
                tenants.names().collect::<Vec<_>>().join(", ")
            ));
        }
        *current = Some(Arc::new(tenants));
        Ok(())
    }

    /// The tenants in force.
    pub fn current(&self) -> Option<Arc<Tenants>> {
        self.current.read().clone()
    }
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
            policy: Policy::default(),
            tls: None,
            sources: Arc::default(),
            tenants: Arc::default(),
            in_gate: Arc::default(),
            qos: None,
            tenant_memory: None,
            current_tenants: Arc::default(),
            sessions: Sessions::new(),
        })
    }

    /// Admits connections by service class into `port`'s table, and
    /// arbitrates their bulk copies and kernel launches with its arbiter.
    pub fn with_qos(mut self, port: Arc<PortQos>) -> Self {
        if let Mode::Process { launcher, .. } = &mut self.mode {
            *launcher = launcher.clone().with_qos(Some(port.arbiter().clone()));
        }
        self.qos = Some(port);
        self
    }

    /// Who is let in: tenants, or local clients only, or anyone.
    pub fn with_policy(mut self, policy: Policy) -> Self {
        self.policy = policy;
        self.policy.tls = self.tls.is_some();
        *self.current_tenants.write() = self.policy.tenants.clone();
        // Every tenant's memory is counted (its limit enforced, if it has
        // one, and reported by the metrics).
        self.tenant_memory = match &self.policy.tenants {
            Some(t) => {
                match TenantMemory::create(u32::try_from(t.len()).unwrap_or(u32::MAX)) {
                    Ok(table) => Some(Arc::new(table)),
                    Err(e) => {
                        // Limits still hold per connection.
                        tracing::error!("cannot share tenants' memory accounts: {e}");
                        None
                    }
                }
            }
            None => None,
        };
        if let Mode::Process { launcher, .. } = &mut self.mode {
            *launcher = launcher
                .clone()
                .with_tenant_memory(self.tenant_memory.clone());
        }
        self
    }

    /// Serves clients over TLS, with this certificate.
    pub fn with_tls(mut self, tls: ServerTls) -> Self {
        self.tls = Some(tls);
        self.policy.tls = true;
        self
    }

    /// Serves every client in an agent process started by `launcher`. On
    /// the emulated backend the agents share one memory ledger, with a slot
    /// for each of [`Limits::max_clients`] (set the limits first).
    pub fn with_process_isolation(mut self, launcher: AgentLauncher) -> io::Result<Self> {
        let agents = if self.backend.name() == "emu" {
            let ledger = Ledger::create(self.backend.gpu_count(), self.limits.max_clients)?;
            Agents::with_ledger(ledger)
        } else {
            Agents::default()
        };
        self.mode = Mode::Process {
            launcher: launcher
                .for_instance(self.instance)
                .with_qos(self.qos.as_ref().map(|q| q.arbiter().clone()))
                .with_tenant_memory(self.tenant_memory.clone()),
            agents: Arc::new(agents),
        };
        Ok(self)
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
        tracing::info!("access: {}", self.policy.describe());
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
        // Parked sessions stop waiting for their clients.
        self.sessions.clear();
        if let Mode::Process { agents, .. } = &self.mode {
            agents.terminate_all(self.grace);
        }
    }

    /// Replaces the tenants while the server runs.
    pub fn tenants_reload(&self) -> TenantsReload {
        TenantsReload {
            current: self.current_tenants.clone(),
        }
    }

    /// What the metrics read of this server at each scrape.
    pub fn metrics_probe(&self) -> Box<dyn Probe> {
        Box::new(ServerProbe {
            live: match &self.mode {
                Mode::Thread(live) => LiveCount::Threads(live.clone()),
                Mode::Process { agents, .. } => LiveCount::Processes(agents.clone()),
            },
            tenants: self.tenants_reload(),
            tenant_memory: self.tenant_memory.clone(),
        })
    }

    /// Number of clients being served (agents started and not yet ended).
    fn live_clients(&self) -> usize {
        match &self.mode {
            Mode::Thread(live) => live.load(Ordering::Acquire),
            Mode::Process { agents, .. } => agents.live(),
        }
    }

    /// Sends a new connection through the gate, then to an agent; or refuses
    /// it.
    fn admit(&self, stream: TcpStream) {
        let Ok(peer_addr) = stream.peer_addr() else {
            return;
        };
        let peer = peer_addr.to_string();
        let max = self.limits.max_clients;
        if self.live_clients() >= max as usize {
            let message = isolation::limit_message(max);
            tracing::warn!(%peer, max_clients = max, "refusing a client: {message}");
            if let Some(m) = metrics::listener() {
                m.refused("max_clients");
            }
            self.refusals.refuse(stream, peer, &self.backend, message);
            return;
        }
        let mut lease = Lease::default();
        let per_source = self.limits.max_per_source;
        match self
            .sources
            .try_take(peer_addr.ip().to_string(), per_source)
        {
            Some(ticket) => lease.add(ticket),
            None => {
                let message = format!(
                    "too many connections from {} (the server allows {per_source} at once)",
                    peer_addr.ip()
                );
                tracing::warn!(%peer, "refusing a client: {message}");
                if let Some(m) = metrics::listener() {
                    m.refused("max_per_source");
                }
                self.refusals.refuse(stream, peer, &self.backend, message);
                return;
            }
        }
        if self.in_gate.load(Ordering::Acquire) >= MAX_IN_GATE {
            tracing::warn!(%peer, "{MAX_IN_GATE} connections are in the handshake; dropping one more");
            return;
        }
        let mut policy = self.policy.clone();
        policy.tenants = self.current_tenants.read().clone();
        let gatekeeper = Gatekeeper {
            backend: self.backend.clone(),
            policy,
            instance: self.instance,
            tenants: self.tenants.clone(),
            in_gate: GateGuard::new(self.in_gate.clone()),
            qos: self.qos.clone(),
            tenant_memory: self.tenant_memory.clone(),
            sessions: self.sessions.clone(),
        };
        let setup = AgentSetup {
            backend: self.backend.clone(),
            tcp: self.tcp.clone(),
            limits: self.limits.clone(),
            instance: self.instance,
            tls: self.tls.clone(),
            qos: self.qos.as_ref().map(|q| q.arbiter().clone()),
            tenant_memory: self.tenant_memory.clone(),
        };
        let mode = match &self.mode {
            Mode::Thread(live) => Handoff::Thread(live.clone()),
            Mode::Process { launcher, agents } => Handoff::Process {
                launcher: launcher.clone(),
                agents: agents.clone(),
            },
        };
        let spawned = thread::Builder::new()
            .name("rcud-agent".into())
            .spawn(move || gatekeeper.run(stream, peer_addr, lease, mode, setup));
        if let Err(e) = spawned {
            tracing::error!(%peer, "cannot start a thread for the handshake: {e}");
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

/// What an agent needs besides its connection.
#[derive(Clone)]
pub struct AgentSetup {
    /// The GPUs.
    pub backend: Arc<dyn Backend>,
    /// Socket settings.
    pub tcp: TcpOptions,
    /// The server's limits.
    pub limits: Limits,
    /// The server instance (peer copies).
    pub instance: InstanceId,
    /// TLS, when the server speaks it.
    pub tls: Option<ServerTls>,
    /// The QoS arbiter, when the server has one.
    pub qos: Option<Arc<SharedArbiter>>,
    /// Tenants' memory accounts, when a tenant has a memory limit.
    pub tenant_memory: Option<Arc<TenantMemory>>,
}

/// Where an admitted connection goes.
enum Handoff {
    /// On the gate's own thread, which becomes the agent thread, counted
    /// among the live agents from then on.
    Thread(Arc<AtomicUsize>),
    /// To a new agent process.
    Process {
        launcher: AgentLauncher,
        agents: Arc<Agents>,
    },
}

/// Runs the gate for one connection on its own thread.
struct Gatekeeper {
    backend: Arc<dyn Backend>,
    policy: Policy,
    instance: InstanceId,
    tenants: Arc<Occupancy>,
    in_gate: GateGuard,
    qos: Option<Arc<PortQos>>,
    tenant_memory: Option<Arc<TenantMemory>>,
    sessions: Arc<Sessions>,
}

impl Gatekeeper {
    fn run(
        self,
        mut stream: TcpStream,
        peer: SocketAddr,
        mut lease: Lease,
        handoff: Handoff,
        setup: AgentSetup,
    ) {
        let admitted = gate::admit(
            &mut stream,
            peer.ip(),
            &self.policy,
            self.backend.as_ref(),
            self.instance,
            |tenant, hello| {
                if hello.resume != [0; 16] {
                    // The session's agent holds its connection tickets and
                    // service class already.
                    let name = tenant.map_or("", |t| t.name.as_str());
                    return if self.sessions.knows(&hello.resume, name) {
                        Ok(None)
                    } else {
                        Err(
                            "the server holds no such session: it expired, or the server restarted"
                                .into(),
                        )
                    };
                }
                if let Some(tenant) = tenant {
                    let limit = tenant.limits.connections;
                    match self.tenants.try_take(tenant.name.clone(), limit) {
                        Some(ticket) => lease.add(ticket),
                        None => {
                            return Err(format!(
                                "tenant `{}` is at its limit of {limit} connections",
                                tenant.name
                            ))
                        }
                    }
                }
                let Some(port) = &self.qos else {
                    return Ok(None);
                };
                let ceiling = tenant.map(|t| t.qos());
                let tenant = tenant.map(|t| t.name.as_str()).zip(ceiling);
                let ticket = port
                    .admit(&hello.qos, tenant.as_ref().map(|(n, c)| (*n, c.as_ref())))
                    .map_err(|e| {
                        if let Some(m) = metrics::listener() {
                            m.qos_refused();
                        }
                        e.to_string()
                    })?;
                let slot = ticket.slot();
                if let Some(m) = metrics::listener() {
                    m.qos_admitted(&ticket.class().to_string());
                }
                tracing::info!(%peer, class = %ticket.class(), slot, "service class admitted");
                lease.add_qos(ticket);
                Ok(Some(slot))
            },
        );
        drop(self.in_gate);
        let mut admission = match admitted {
            Ok(a) => a,
            Err(gate::GateError::Refused(why)) => {
                tracing::warn!(%peer, "client refused: {why}");
                if let Some(m) = metrics::listener() {
                    m.refused("gate");
                }
                return;
            }
            Err(e) => {
                tracing::info!(%peer, "handshake did not complete: {e}");
                return;
            }
        };
        if admission.hello.resume != [0; 16] {
            let id = admission.hello.resume;
            match self.sessions.hand_over(&id, (stream, admission)) {
                Ok(()) => tracing::info!(%peer, "connection handed to its session's agent"),
                Err(e) => tracing::warn!(%peer, "cannot resume a session: {e}"),
            }
            return;
        }
        if let Some(m) = metrics::listener() {
            m.admitted(admission.tenant_name());
        }
        // A tenant's memory is counted over all its connections; with a
        // memory limit, it is enforced there.
        let counted = admission.tenant.as_ref().and_then(|t| {
            let index = self.policy.tenants.as_ref()?.index_of(&t.name)?;
            Some((index, t.limits.memory.is_some()))
        });
        if let (Some(table), Some((index, limited))) = (&self.tenant_memory, counted) {
            match table.open_slot(index) {
                Some(slot) => {
                    admission.memory_slot = Some(slot.slot());
                    lease.add_memory_slot(slot);
                }
                None if !limited => {
                    tracing::warn!(%peer, "no free slot in the table of tenants' memory; this connection's memory is not counted");
                }
                None => {
                    tracing::error!(%peer, "no free slot in the table of tenants' memory; closing");
                    return;
                }
            }
        }
        let grace = setup.limits.resume_grace;
        let session = match Sessions::new_id() {
            Ok(id) if !grace.is_zero() => Some(id),
            Ok(_) => None,
            Err(e) => {
                tracing::warn!(%peer, "this session cannot be resumed: {e}");
                None
            }
        };
        let tenant = admission
            .tenant
            .as_ref()
            .map_or(String::new(), |t| t.name.clone());
        match handoff {
            Handoff::Thread(live) => {
                let _live = LiveGuard::new(live);
                let resume = session.map(|id| {
                    let (tx, rx) = std::sync::mpsc::channel();
                    let current = stream.try_clone().ok();
                    lease.add_session(self.sessions.register(
                        id,
                        &tenant,
                        Route::Thread(tx),
                        current,
                    ));
                    (id, rx)
                });
                let _lease = lease;
                let resumption = resume.map(|(id, rx)| thread_resumption(id, rx, &setup));
                serve_admitted(stream, &admission, &setup, resumption);
            }
            Handoff::Process { launcher, agents } => {
                let handover = gate::Handover::of(&admission);
                let peer = peer.to_string();
                let mut resume = None;
                if let Some(id) = session {
                    match std::os::unix::net::UnixDatagram::pair() {
                        Ok((ours, theirs)) => {
                            lease.add_session(self.sessions.register(
                                id,
                                &tenant,
                                Route::Process(ours),
                                stream.try_clone().ok(),
                            ));
                            resume = Some((id, theirs));
                        }
                        Err(e) => tracing::warn!(%peer, "this session cannot be resumed: {e}"),
                    }
                }
                match agents.start(&launcher, stream, &peer, Some(&handover), resume, lease) {
                    Ok(pid) => tracing::info!(
                        pid,
                        %peer,
                        tenant = admission.tenant_name(),
                        "agent process started"
                    ),
                    // The client learns it from the closed connection; the
                    // gate has accepted it already.
                    Err(e) => tracing::error!(%peer, "cannot start an agent process: {e}"),
                }
            }
        }
    }
}

/// Counts a connection in the gate while it is there.
struct GateGuard(Arc<AtomicUsize>);

impl GateGuard {
    fn new(count: Arc<AtomicUsize>) -> Self {
        count.fetch_add(1, Ordering::AcqRel);
        Self(count)
    }
}

impl Drop for GateGuard {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}

/// Serves an admitted client on `stream` and returns when the connection
/// ends; the client's resources are released by then. Agent threads and
/// agent processes both run this.
pub fn serve_admitted(
    stream: TcpStream,
    admission: &Admission,
    setup: &AgentSetup,
    resumption: Option<Resumption>,
) {
    let peer = stream
        .peer_addr()
        .map(|a| a.to_string())
        .unwrap_or_else(|_| "?".into());
    let client = admission.hello.client.as_str();
    let tenant = admission.tenant_name();
    let kind = admission.transport();
    let chan = match open_channel(stream, admission, setup) {
        Ok(c) => c,
        Err(e) => {
            tracing::warn!(%peer, %client, tenant, transport = %kind, "cannot set up the connection: {e}");
            return;
        }
    };
    tracing::info!(%peer, %client, tenant, transport = %kind, "client connected");
    let mut limits = admission
        .tenant
        .as_ref()
        .map(|t| t.limits.clone())
        .unwrap_or_default();
    limits.memory = match (limits.memory, setup.limits.client_memory) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    };
    match Agent::new(setup.backend.clone(), chan)
        .with_resource_limits(limits)
        .with_tenant(
            admission
                .tenant
                .as_ref()
                .map(|t| t.name.clone())
                .unwrap_or_default(),
        )
        .with_owner(match &admission.tenant {
            Some(t) => format!("tenant {}", t.name),
            None => format!("connection from {peer}"),
        })
        .with_op_timeout(setup.limits.op_timeout)
        .with_qos(
            setup
                .qos
                .clone()
                .zip(admission.qos_slot)
                .map(|(arbiter, slot)| Lane::new(arbiter, slot)),
        )
        .with_memory_account(memory_account(admission, setup))
        .with_client(
            client,
            admission.tenant.as_ref().map_or("", |t| t.name.as_str()),
        )
        .with_instance(setup.instance)
        .with_resumption(resumption)
        .run()
    {
        Ok(()) => {
            tracing::info!(%peer, %client, tenant, "client disconnected; its resources are released")
        }
        Err(e) => {
            tracing::warn!(%peer, %client, tenant, "closing connection: {e}; its resources are released")
        }
    }
}

/// How an agent thread waits for its client's next connection: the
/// gatekeeper that admits it sends it over a channel.
struct ThreadReconnects {
    rx: std::sync::mpsc::Receiver<Reconnection>,
    /// A connection that came before the agent saw its old one end.
    early: Option<Reconnection>,
    setup: AgentSetup,
}

impl Reconnects for ThreadReconnects {
    fn next(&mut self, deadline: Instant) -> Option<(Box<dyn Channel>, [u8; 32])> {
        loop {
            let (stream, admission) = match self.early.take() {
                Some(early) => early,
                None => {
                    let left = deadline.checked_duration_since(Instant::now())?;
                    self.rx.recv_timeout(left).ok()?
                }
            };
            if let Some(opened) = reopen(stream, &admission, &self.setup) {
                return Some(opened);
            }
        }
    }

    fn pending(&mut self) -> bool {
        if self.early.is_none() {
            self.early = self.rx.try_recv().ok();
        }
        self.early.is_some()
    }
}

fn thread_resumption(
    session: [u8; 16],
    rx: std::sync::mpsc::Receiver<Reconnection>,
    setup: &AgentSetup,
) -> Resumption {
    Resumption {
        session,
        grace: setup.limits.resume_grace,
        reconnects: Box::new(ThreadReconnects {
            rx,
            early: None,
            setup: setup.clone(),
        }),
    }
}

/// How an agent process waits for its client's next connection: the
/// listener passes it over a socket with the client's admission.
struct ProcessReconnects {
    socket: std::os::unix::net::UnixDatagram,
    early: Option<(TcpStream, gate::Handover)>,
    tenants: Option<Arc<Tenants>>,
    setup: AgentSetup,
}

impl Reconnects for ProcessReconnects {
    fn next(&mut self, deadline: Instant) -> Option<(Box<dyn Channel>, [u8; 32])> {
        loop {
            let (stream, handover) = match self.early.take() {
                Some(early) => early,
                None => match isolation::recv_reconnection(&self.socket, deadline) {
                    Ok(Some(got)) => got,
                    Ok(None) => return None,
                    Err(e) => {
                        tracing::warn!("cannot receive a resumed connection: {e}");
                        return None;
                    }
                },
            };
            let admission = match handover.admission(self.tenants.as_deref()) {
                Ok(a) => a,
                Err(e) => {
                    tracing::warn!("a resumed connection's admission: {e}");
                    continue;
                }
            };
            if let Some(opened) = reopen(stream, &admission, &self.setup) {
                return Some(opened);
            }
        }
    }

    fn pending(&mut self) -> bool {
        if self.early.is_none() {
            let now = Instant::now();
            self.early = isolation::recv_reconnection(&self.socket, now)
                .ok()
                .flatten();
        }
        self.early.is_some()
    }
}

/// How an agent process waits for its client's next connection: the
/// listener passes it over `socket` with the client's admission.
pub fn process_resumption(
    session: [u8; 16],
    socket: std::os::unix::net::UnixDatagram,
    setup: &AgentSetup,
    tenants: Option<Arc<Tenants>>,
) -> Resumption {
    Resumption {
        session,
        grace: setup.limits.resume_grace,
        reconnects: Box::new(ProcessReconnects {
            socket,
            early: None,
            tenants,
            setup: setup.clone(),
        }),
    }
}

/// The channel of a resumed connection and its session key.
fn reopen(
    stream: TcpStream,
    admission: &Admission,
    setup: &AgentSetup,
) -> Option<(Box<dyn Channel>, [u8; 32])> {
    match open_channel(stream, admission, setup) {
        Ok(chan) => Some((chan, admission.session_key)),
        Err(e) => {
            tracing::info!("cannot set up a resumed connection: {e}");
            None
        }
    }
}

/// The tenant-wide memory account of an admitted connection, if its
/// tenant has a memory limit and the server shares the accounts.
fn memory_account(admission: &Admission, setup: &AgentSetup) -> Option<MemoryAccount> {
    let table = setup.tenant_memory.clone()?;
    let slot = admission.memory_slot?;
    let tenant = admission.tenant.as_ref()?;
    // Without a limit the account only counts.
    let limit = tenant.limits.memory.unwrap_or(u64::MAX);
    let index = admission.tenant_index?;
    Some(MemoryAccount::new(table, slot, index, limit))
}

/// TLS and its binding when the server speaks it, then the transport the
/// client asked for, with the server's idle and write timeouts.
fn open_channel(
    stream: TcpStream,
    admission: &Admission,
    setup: &AgentSetup,
) -> Result<Box<dyn Channel>, AgentError> {
    let tcp = TcpOptions {
        read_timeout: setup.limits.idle_timeout,
        write_timeout: setup.limits.write_timeout,
        ..setup.tcp.clone()
    };
    let kind = admission.transport();
    let counted = |chan: Box<dyn Channel>| CountingChannel::wrap(chan, kind);
    // The RDMA set-up exchange is bounded by this timeout too.
    stream.set_read_timeout(Some(gate::SETUP_DEADLINE))?;
    stream.set_write_timeout(Some(gate::SETUP_DEADLINE))?;
    match &setup.tls {
        Some(tls) => {
            let link = gate::bind_tls(stream, tls, admission)
                .map_err(|e| AgentError::Protocol(e.to_string()))?;
            Ok(counted(bootstrap::establish(
                link,
                kind,
                bootstrap::Role::Agent,
                &tcp,
            )?))
        }
        None => Ok(counted(bootstrap::establish(
            stream,
            kind,
            bootstrap::Role::Agent,
            &tcp,
        )?)),
    }
}

impl From<io::Error> for AgentError {
    fn from(e: io::Error) -> Self {
        AgentError::Transport(TransportError::Io(e))
    }
}

/// How the metrics count live clients.
enum LiveCount {
    Threads(Arc<AtomicUsize>),
    Processes(Arc<Agents>),
}

/// The listener's live state, read at each scrape.
struct ServerProbe {
    live: LiveCount,
    tenants: TenantsReload,
    tenant_memory: Option<Arc<TenantMemory>>,
}

impl Probe for ServerProbe {
    fn clients(&self) -> u64 {
        match &self.live {
            LiveCount::Threads(live) => live.load(Ordering::Acquire) as u64,
            LiveCount::Processes(agents) => agents.live() as u64,
        }
    }

    fn agent_processes(&self) -> u64 {
        match &self.live {
            LiveCount::Threads(_) => 0,
            LiveCount::Processes(agents) => agents.live() as u64,
        }
    }

    fn tenants(&self) -> Option<Arc<Tenants>> {
        self.tenants.current()
    }

    fn tenant_memory(&self) -> Option<Arc<TenantMemory>> {
        self.tenant_memory.clone()
    }
}
