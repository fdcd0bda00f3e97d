//! How clients are kept apart: one agent process per client (the daemon's
//! default) or one agent thread per client, and the limits the listener
//! enforces.
//!
//! # Process isolation
//!
//! The listener never forks itself to run Rust code in the child. For every
//! accepted connection it starts a fresh process of the server executable
//! ([`AgentLauncher`]) with the hidden flag `--agent-fd 3`: the accepted socket
//! is mapped to descriptor 3 of the child between `fork` and `exec` (and is
//! the only descriptor it inherits besides stdio), and the listener closes its
//! own copy once the child runs. The agent process rebuilds the backend from
//! the same settings, performs the handshake and serves exactly that client;
//! when the client goes, the process exits and the operating system releases
//! everything the client held, whatever state the agent was in.
//!
//! The listener keeps a table of live agents ([`Agents`]). Each agent has a
//! small reaper thread that waits for the process to end — normally, by
//! panic, or killed — removes it from the table, reaps it and logs its exit
//! status and peer. No other client notices. On shutdown the listener sends
//! `SIGTERM` to every live agent, and `SIGKILL` to those still alive after a
//! grace period. An agent also asks the kernel for `SIGTERM` when its listener
//! dies, so no agent outlives a listener that was killed.
//!
//! With process isolation the agents of an emulated device count their
//! memory in one ledger in shared memory ([`rcud_emu::ledger`]), so
//! `--emu-memory` is the device's size for all clients together, as on a real
//! GPU; what a dead agent held is reclaimed when it is reaped.
//!
//! Agents of one listener, processes or threads, share its random instance
//! id (`--instance-id`, hidden): they report it to their clients, and copy
//! between GPUs only with agents of the same instance ([`crate::peer`]).

use std::collections::HashMap;
use std::ffi::OsString;
use std::io::{self, Read, Write};
use std::net::{Shutdown, TcpStream};
use std::os::fd::OwnedFd;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::PathBuf;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::mpsc;
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use command_fds::{CommandFdExt, FdMapping};
use nix::errno::Errno;
use nix::sys::signal::{kill, Signal};
use nix::sys::wait::{waitid, Id, WaitPidFlag};
use nix::unistd::Pid;
use parking_lot::{Condvar, Mutex};

use crate::backend::Backend;
use crate::gate::{self, Handover, HANDOVER_FD};
use crate::occupancy::Lease;
use crate::peer::InstanceId;
use rcud_emu::ledger::Ledger;

use crate::qos::SharedArbiter;
use crate::tenant_memory::TenantMemory;

/// How the listener serves each client.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Isolation {
    /// One agent process per client: a crash harms no other client.
    Process,
    /// One agent thread per client inside the listener's process.
    Thread,
}

/// Default for `--max-clients`.
pub const DEFAULT_MAX_CLIENTS: u32 = 64;

/// The descriptor an agent process finds its client's socket on.
pub const AGENT_FD: i32 = 3;

/// Hidden flag that turns the server executable into an agent process serving
/// the socket on the given descriptor.
pub const AGENT_FD_FLAG: &str = "--agent-fd";

/// Hidden flag naming the listener's pid, so the agent can follow it.
pub const LISTENER_PID_FLAG: &str = "--listener-pid";

/// Hidden flag handing the listener's instance id to the agent, which reports
/// it to its client in place of an id of its own: clients recognise agents of
/// one server by it, and agents accept peer copies only within it.
pub const INSTANCE_FLAG: &str = "--instance-id";

/// Hidden flag handing an agent the memory ledger of the emulated devices:
/// `FD:GPUS:SLOTS:SLOT`.
pub const LEDGER_FLAG: &str = "--ledger";

/// The descriptor an agent process finds the memory ledger on.
pub const LEDGER_FD: i32 = 5;

/// Hidden flag handing an agent the server's QoS arbiter.
pub const QOS_FLAG: &str = "--qos-arbiter";

/// The descriptor an agent process finds the QoS arbiter on.
pub const QOS_FD: i32 = 6;

/// Hidden flag handing an agent the table of tenants' memory, `FD:TENANTS`.
pub const TENANT_MEMORY_FLAG: &str = "--tenant-memory";

/// The descriptor an agent process finds the table of tenants' memory on.
pub const TENANT_MEMORY_FD: i32 = 7;

/// Hidden flag handing an agent the table it counts metrics in.
pub const STATS_FLAG: &str = "--stats";

/// The descriptor an agent process finds the metrics table on.
pub const STATS_FD: i32 = 8;

/// Hidden flag naming the descriptor of the table of clients
/// (`rcud smi`, NVML; [`crate::activity`]).
pub const ACTIVITY_FLAG: &str = "--activity";

/// The descriptor an agent process finds the table of clients on.
pub const ACTIVITY_FD: i32 = 9;

/// Hidden flag naming the descriptor the agent reads its client's
/// admission from ([`Handover`]).
pub const HANDOVER_FLAG: &str = "--handover-fd";

/// Hidden flag naming the descriptor on which the agent receives its
/// client's new connections when the session resumes.
pub const RESUME_FLAG: &str = "--resume-fd";

/// The descriptor an agent process receives resumed connections on.
pub const RESUME_FD: i32 = 10;

/// Hidden flag giving an agent process its session id (hex).
pub const SESSION_FLAG: &str = "--session";

/// Hands a resumed client's connection and admission to the agent process
/// that holds its session.
pub fn send_reconnection(
    socket: &std::os::unix::net::UnixDatagram,
    (stream, admission): crate::resume::Reconnection,
) -> io::Result<()> {
    use std::os::fd::AsFd;
    let bytes = handshake_bytes(&Handover::of(&admission));
    rcud_shm::fdpass::send_fd(socket, &bytes, stream.as_fd())
}

/// In an agent process: waits until `deadline` for the listener to hand
/// over the client's next connection.
pub fn recv_reconnection(
    socket: &std::os::unix::net::UnixDatagram,
    deadline: Instant,
) -> io::Result<Option<(TcpStream, Handover)>> {
    // A deadline that has passed still looks once, without waiting.
    let left = deadline.saturating_duration_since(Instant::now());
    let Some((bytes, fd)) = rcud_shm::fdpass::recv_fd(socket, left)? else {
        return Ok(None);
    };
    let handover = rcud_proto::codec::from_slice(&bytes)
        .map_err(|e| io::Error::other(format!("handover: {e}")))?;
    Ok(Some((TcpStream::from(fd), handover)))
}

fn handshake_bytes(handover: &Handover) -> Vec<u8> {
    rcud_proto::codec::to_vec(handover)
}

/// Reads the [`Handover`] an agent process was started with.
pub fn read_handover(fd: OwnedFd) -> io::Result<Handover> {
    let mut bytes = Vec::new();
    std::fs::File::from(fd)
        .take(2 * u64::from(rcud_proto::handshake::MAX_HELLO))
        .read_to_end(&mut bytes)?;
    rcud_proto::codec::from_slice(&bytes).map_err(|e| io::Error::other(format!("handover: {e}")))
}

/// How long agents get to exit after `SIGTERM` before they are killed, unless
/// the server is told otherwise.
pub const TERMINATION_GRACE: Duration = Duration::from_secs(5);

/// How long a refused client gets to close after the refusal.
const REFUSAL_LINGER: Duration = Duration::from_secs(2);

/// Most connections being refused at once; beyond that they are dropped
/// without a reply so a flood cannot make the listener start threads.
const MAX_REFUSING: usize = 16;

/// Limits the listener enforces, and the per-client settings it hands on to
/// every agent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Limits {
    /// Most clients served at once; one more is refused with
    /// [`limit_message`].
    pub max_clients: u32,
    /// Most device memory one client may hold (bytes), over all its GPUs;
    /// `None`: no limit beyond the device's own. Enforced by the agent: a
    /// `cudaMalloc` (or any other allocation) that would take the client past
    /// it fails with `cudaErrorMemoryAllocation`.
    pub client_memory: Option<u64>,
    /// Most connections from one source address at once, the ones still
    /// in the handshake included.
    pub max_per_source: u32,
    /// An agent whose client sends nothing for this long is closed; `None`:
    /// clients may idle forever.
    pub idle_timeout: Option<Duration>,
    /// An agent whose client does not take a reply for this long is closed.
    pub write_timeout: Option<Duration>,
    /// Most time one server-side operation may take: a copy or memset of
    /// many rows fails with `cudaErrorTimeout` past it.
    pub op_timeout: Duration,
    /// How long a client's session outlives a broken connection, waiting
    /// for the client to resume it; zero: sessions end with their
    /// connection.
    pub resume_grace: Duration,
}

/// Default for `--max-per-source`.
pub const DEFAULT_MAX_PER_SOURCE: u32 = 32;
/// Default for `--write-timeout`.
pub const DEFAULT_WRITE_TIMEOUT: Duration = Duration::from_secs(60);
/// Default for `--op-timeout`.
pub const DEFAULT_OP_TIMEOUT: Duration = Duration::from_secs(60);

impl Default for Limits {
    fn default() -> Self {
        Self {
            max_clients: DEFAULT_MAX_CLIENTS,
            client_memory: None,
            max_per_source: DEFAULT_MAX_PER_SOURCE,
            idle_timeout: None,
            write_timeout: Some(DEFAULT_WRITE_TIMEOUT),
            op_timeout: DEFAULT_OP_TIMEOUT,
            resume_grace: crate::resume::DEFAULT_RESUME_GRACE,
        }
    }
}

/// The message of the `ServerHello` that refuses a client over the limit.
pub fn limit_message(max_clients: u32) -> String {
    format!("server is at its limit of {max_clients} clients")
}

/// Starts agent processes: the server executable with the arguments that
/// rebuild the backend in the agent.
#[derive(Debug, Clone)]
pub struct AgentLauncher {
    program: PathBuf,
    args: Vec<OsString>,
    instance: InstanceId,
    qos: Option<Arc<SharedArbiter>>,
    tenant_memory: Option<Arc<TenantMemory>>,
}

impl AgentLauncher {
    /// Agents run `program` with `args` (the backend settings) followed by
    /// `--agent-fd 3 --listener-pid PID` and, once the launcher belongs to a
    /// server, `--instance-id ID`.
    pub fn new(program: impl Into<PathBuf>, args: Vec<OsString>) -> Self {
        Self {
            program: program.into(),
            args,
            instance: InstanceId::NONE,
            qos: None,
            tenant_memory: None,
        }
    }

    /// Agents that count tenants' memory in `table` with the listener.
    pub(crate) fn with_tenant_memory(mut self, table: Option<Arc<TenantMemory>>) -> Self {
        self.tenant_memory = table;
        self
    }

    /// Agents that share `arbiter` with the listener.
    pub(crate) fn with_qos(mut self, arbiter: Option<Arc<SharedArbiter>>) -> Self {
        self.qos = arbiter;
        self
    }

    /// Agents of server `instance`.
    pub(crate) fn for_instance(mut self, instance: InstanceId) -> Self {
        self.instance = instance;
        self
    }

    /// Agents run this very executable.
    pub fn current_exe(args: Vec<OsString>) -> io::Result<Self> {
        Ok(Self::new(std::env::current_exe()?, args))
    }

    /// The command that serves `stream` in a new process, with `handover`
    /// readable on [`HANDOVER_FD`]. The command owns the socket: the caller's
    /// copy closes when the command is dropped.
    fn command(
        &self,
        stream: TcpStream,
        handover: Option<&Handover>,
        resume: Option<([u8; 16], std::os::unix::net::UnixDatagram)>,
        ledger: Option<(&Ledger, u32)>,
    ) -> io::Result<Command> {
        let mut cmd = Command::new(&self.program);
        cmd.args(&self.args)
            .arg(AGENT_FD_FLAG)
            .arg(AGENT_FD.to_string())
            .arg(LISTENER_PID_FLAG)
            .arg(std::process::id().to_string())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::inherit())
            // Its own process group: a Ctrl-C at the listener's terminal
            // reaches the listener only, which then stops agents in order.
            .process_group(0);
        if !self.instance.is_none() {
            cmd.arg(INSTANCE_FLAG).arg(self.instance.to_string());
        }
        let mut fds = vec![FdMapping {
            parent_fd: OwnedFd::from(stream),
            child_fd: AGENT_FD,
        }];
        if let Some(handover) = handover {
            // A pipe, not an argument or the environment: other users of the
            // host cannot read it, and it holds the session key.
            let (read, write) = nix::unistd::pipe().map_err(io::Error::from)?;
            let bytes = handshake_bytes(handover);
            // Far below a pipe's capacity, so the write cannot block.
            std::fs::File::from(write).write_all(&bytes)?;
            fds.push(FdMapping {
                parent_fd: read,
                child_fd: HANDOVER_FD,
            });
            cmd.arg(HANDOVER_FLAG).arg(HANDOVER_FD.to_string());
        }
        if let Some((session, socket)) = resume {
            fds.push(FdMapping {
                parent_fd: OwnedFd::from(socket),
                child_fd: RESUME_FD,
            });
            let hex: String = session.iter().map(|b| format!("{b:02x}")).collect();
            cmd.arg(RESUME_FLAG)
                .arg(RESUME_FD.to_string())
                .arg(SESSION_FLAG)
                .arg(hex);
        }
        if let Some((ledger, slot)) = ledger {
            let (gpus, slots) = ledger.shape();
            fds.push(FdMapping {
                parent_fd: ledger.fd().try_clone_to_owned()?,
                child_fd: LEDGER_FD,
            });
            cmd.arg(LEDGER_FLAG)
                .arg(format!("{LEDGER_FD}:{gpus}:{slots}:{slot}"));
        }
        if let Some(arbiter) = &self.qos {
            fds.push(FdMapping {
                parent_fd: arbiter.fd().try_clone_to_owned()?,
                child_fd: QOS_FD,
            });
            cmd.arg(QOS_FLAG).arg(QOS_FD.to_string());
        }
        if let Some(table) = &self.tenant_memory {
            fds.push(FdMapping {
                parent_fd: table.fd().try_clone_to_owned()?,
                child_fd: TENANT_MEMORY_FD,
            });
            cmd.arg(TENANT_MEMORY_FLAG)
                .arg(format!("{TENANT_MEMORY_FD}:{}", table.tenants()));
        }
        if let Some(table) = crate::activity::table() {
            fds.push(FdMapping {
                parent_fd: table.fd().try_clone_to_owned()?,
                child_fd: ACTIVITY_FD,
            });
            cmd.arg(ACTIVITY_FLAG).arg(ACTIVITY_FD.to_string());
        }
        if let Some(stats) = crate::metrics::shared() {
            fds.push(FdMapping {
                parent_fd: stats.fd().try_clone_to_owned()?,
                child_fd: STATS_FD,
            });
            cmd.arg(STATS_FLAG).arg(STATS_FD.to_string());
        }
        cmd.fd_mappings(fds).map_err(io::Error::other)?;
        Ok(cmd)
    }
}

/// Called first thing in an agent process: asks the kernel to send `SIGTERM`
/// when the listener dies, and fails if it already has.
pub fn follow_listener(listener_pid: u32) -> io::Result<()> {
    nix::sys::prctl::set_pdeathsig(Signal::SIGTERM).map_err(io::Error::from)?;
    let parent = nix::unistd::getppid().as_raw();
    if u32::try_from(parent).ok() != Some(listener_pid) {
        return Err(io::Error::other(format!(
            "the listener (pid {listener_pid}) is gone"
        )));
    }
    Ok(())
}

/// Live agent processes of one listener.
#[derive(Debug, Default)]
pub(crate) struct Agents {
    state: Mutex<AgentsState>,
    changed: Condvar,
    /// The emulated devices' memory, shared by all agents, and its free
    /// slots (one per live agent).
    ledger: Option<(Arc<Ledger>, Mutex<Vec<u32>>)>,
    /// The thread that starts agent processes; see [`Agents::on_spawner`].
    spawner: Mutex<Option<mpsc::Sender<SpawnJob>>>,
}

type SpawnJob = Box<dyn FnOnce() + Send>;

#[derive(Debug, Default)]
struct AgentsState {
    /// Agents not yet reaped, by pid. Only these are ever signalled, so a
    /// signal can never reach a recycled pid.
    live: HashMap<i32, AgentInfo>,
    /// Agents out of `live` whose reaper has not finished logging yet.
    reaping: usize,
    /// Shutting down: no new agents, and exits are expected.
    closing: bool,
}

impl AgentsState {
    fn settled(&self) -> bool {
        self.live.is_empty() && self.reaping == 0
    }
}

#[derive(Debug)]
struct AgentInfo {
    peer: String,
}

impl Agents {
    /// Agents whose emulated devices count their memory in `ledger`, one
    /// slot each.
    pub(crate) fn with_ledger(ledger: Ledger) -> Self {
        let (_, slots) = ledger.shape();
        Self {
            ledger: Some((Arc::new(ledger), Mutex::new((0..slots).rev().collect()))),
            ..Self::default()
        }
    }

    /// Number of live agents, the starting ones included.
    pub(crate) fn live(&self) -> usize {
        self.state.lock().live.len()
    }

    /// Starts an agent process serving `stream` and a reaper for it. Returns
    /// the agent's pid.
    /// The `lease` (places per source and tenant) is given back when the
    /// process has ended.
    pub(crate) fn start(
        self: &Arc<Self>,
        launcher: &AgentLauncher,
        stream: TcpStream,
        peer: &str,
        handover: Option<&Handover>,
        resume: Option<([u8; 16], std::os::unix::net::UnixDatagram)>,
        lease: Lease,
    ) -> io::Result<u32> {
        let slot = match &self.ledger {
            Some((ledger, free)) => {
                let slot = free
                    .lock()
                    .pop()
                    .ok_or_else(|| io::Error::other("no free slot in the memory ledger"))?;
                Some((ledger.clone(), slot))
            }
            None => None,
        };
        // The reaper exists before the process does, so that no process is
        // ever left without one.
        let (hand_over, handed) = mpsc::channel::<Child>();
        let agents = self.clone();
        let reaper_peer = peer.to_string();
        let reaper_slot = slot.as_ref().map(|(_, s)| *s);
        thread::Builder::new()
            .name("rcud-reaper".into())
            .stack_size(128 << 10)
            .spawn(move || {
                if let Ok(child) = handed.recv() {
                    agents.reap(child, &reaper_peer, reaper_slot);
                }
                drop(lease);
            })?;
        let cmd = launcher.command(
            stream,
            handover,
            resume,
            slot.as_ref().map(|(l, s)| (l.as_ref(), *s)),
        );
        let mut cmd = match cmd {
            Ok(cmd) => cmd,
            Err(e) => {
                self.free_slot(slot.map(|(_, s)| s));
                return Err(e);
            }
        };
        let agents = self.clone();
        let slot_of_job = slot.as_ref().map(|(_, s)| *s);
        let info = AgentInfo {
            peer: peer.to_string(),
        };
        let child = self.on_spawner(move || {
            let mut state = agents.state.lock();
            if state.closing {
                return Err(io::Error::other("the server is shutting down"));
            }
            let child = match cmd.spawn() {
                Ok(child) => child,
                Err(e) => {
                    agents.free_slot(slot_of_job);
                    return Err(e);
                }
            };
            // Close the listener's copy of the socket: from now on the
            // connection lives exactly as long as the agent holds it.
            drop(cmd);
            state.live.insert(child.id() as i32, info);
            Ok(child)
        })??;
        let pid = child.id();
        // The reaper is blocked in `recv`, so the hand-over cannot fail.
        if let Err(mpsc::SendError(mut child)) = hand_over.send(child) {
            tracing::error!(pid, "agent reaper vanished; killing the agent");
            let _ = child.kill();
            let _ = child.wait();
            self.state.lock().live.remove(&(pid as i32));
        }
        Ok(pid)
    }

    /// Reclaims what the agent in `slot` held and frees the slot.
    fn free_slot(&self, slot: Option<u32>) {
        if let (Some((ledger, free)), Some(slot)) = (&self.ledger, slot) {
            ledger.reclaim(slot);
            free.lock().push(slot);
        }
    }

    /// Runs `job` on the one thread that starts agent processes, and waits
    /// for its result. Agents ask for `SIGTERM` when the thread that started
    /// them ends (the kernel's parent-death signal follows the thread, not
    /// the process), so they must not be started from the short-lived
    /// threads that run the gate.
    fn on_spawner<T: Send + 'static>(
        &self,
        job: impl FnOnce() -> T + Send + 'static,
    ) -> io::Result<T> {
        let (give, take) = mpsc::channel();
        let job: SpawnJob = Box::new(move || {
            let _ = give.send(job());
        });
        let mut spawner = self.spawner.lock();
        let sender = match spawner.as_ref() {
            Some(s) => s.clone(),
            None => {
                let (tx, rx) = mpsc::channel::<SpawnJob>();
                thread::Builder::new()
                    .name("rcud-spawner".into())
                    .spawn(move || {
                        for job in rx {
                            job();
                        }
                    })?;
                *spawner = Some(tx.clone());
                tx
            }
        };
        drop(spawner);
        sender
            .send(job)
            .map_err(|_| io::Error::other("the agent spawner thread is gone"))?;
        take.recv()
            .map_err(|_| io::Error::other("the agent spawner thread is gone"))
    }

    /// Waits for `child` to end, removes it from the table, reaps it and logs.
    fn reap(&self, mut child: Child, peer: &str, slot: Option<u32>) {
        let pid = child.id();
        let started = Instant::now();
        // Wait without reaping: until the entry leaves the table the pid
        // cannot be reused, so `terminate_all` may signal it safely.
        loop {
            match waitid(
                Id::Pid(Pid::from_raw(pid as i32)),
                WaitPidFlag::WEXITED | WaitPidFlag::WNOWAIT,
            ) {
                Ok(_) => break,
                Err(Errno::EINTR) => continue,
                Err(e) => {
                    tracing::warn!(pid, %peer, "cannot wait for agent process: {e}");
                    break;
                }
            }
        }
        // Whatever the agent still held goes back to the device before a
        // new agent can take its place.
        self.free_slot(slot);
        let closing = {
            let mut state = self.state.lock();
            if state.live.remove(&(pid as i32)).is_some() {
                state.reaping += 1;
            }
            state.closing
        };
        let status = child.wait();
        let lived = format!("{:.1?}", started.elapsed());
        match status {
            Ok(s) if s.success() => {
                tracing::info!(pid, %peer, %lived, "agent process exited: {}", describe(s))
            }
            Ok(s) if closing => {
                tracing::info!(pid, %peer, %lived, "agent process stopped: {}", describe(s))
            }
            Ok(s) => tracing::warn!(
                pid,
                %peer,
                %lived,
                "agent process died: {}; its client is disconnected, other clients are unaffected",
                describe(s)
            ),
            Err(e) => tracing::warn!(pid, %peer, "cannot reap agent process: {e}"),
        }
        let mut state = self.state.lock();
        state.reaping = state.reaping.saturating_sub(1);
        drop(state);
        self.changed.notify_all();
    }

    /// Stops starting agents, sends `SIGTERM` to every live one, `SIGKILL`
    /// to those still alive after `grace`, and waits for them to be reaped.
    pub(crate) fn terminate_all(&self, grace: Duration) {
        let mut state = self.state.lock();
        state.closing = true;
        if !state.live.is_empty() {
            tracing::info!(
                agents = state.live.len(),
                "terminating agent processes (SIGTERM, SIGKILL after {grace:?})"
            );
            signal_all(&state, Signal::SIGTERM);
        }
        let deadline = Instant::now() + grace;
        while !state.settled() {
            if self.changed.wait_until(&mut state, deadline).timed_out() {
                break;
            }
        }
        if state.settled() {
            return;
        }
        for (pid, info) in &state.live {
            tracing::warn!(pid, peer = %info.peer, "agent did not stop in time; killing it");
        }
        signal_all(&state, Signal::SIGKILL);
        let deadline = Instant::now() + Duration::from_secs(5);
        while !state.settled() {
            if self.changed.wait_until(&mut state, deadline).timed_out() {
                tracing::error!(agents = state.live.len(), "agents still not reaped");
                break;
            }
        }
    }
}

fn signal_all(state: &AgentsState, signal: Signal) {
    for pid in state.live.keys() {
        // ESRCH: it exited already and is about to be reaped.
        let _ = kill(Pid::from_raw(*pid), signal);
    }
}

/// "exit code 0", "killed by signal 9 (SIGKILL)".
fn describe(status: ExitStatus) -> String {
    if let Some(code) = status.code() {
        return format!("exit code {code}");
    }
    match status.signal() {
        Some(sig) => {
            let name = Signal::try_from(sig).map(|s| s.as_str()).unwrap_or("?");
            let core = if status.core_dumped() {
                ", core dumped"
            } else {
                ""
            };
            format!("killed by signal {sig} ({name}){core}")
        }
        None => format!("{status}"),
    }
}

/// Connections being refused right now.
#[derive(Debug, Default)]
pub(crate) struct Refusals {
    busy: Mutex<usize>,
}

impl Refusals {
    /// Answers the client's hello with a refusal carrying `message`, then
    /// closes the connection; on a thread of its own, so that a slow client
    /// does not hold up the listener.
    pub(crate) fn refuse(
        self: &Arc<Self>,
        stream: TcpStream,
        peer: String,
        backend: &Arc<dyn Backend>,
        message: String,
    ) {
        {
            let mut busy = self.busy.lock();
            if *busy >= MAX_REFUSING {
                tracing::debug!(%peer, "too many refusals in progress; dropping the connection");
                return;
            }
            *busy += 1;
        }
        let backend = backend.clone();
        let me = self.clone();
        let spawned = thread::Builder::new()
            .name("rcud-refuse".into())
            .stack_size(128 << 10)
            .spawn(move || {
                if let Err(e) = send_refusal(stream, backend.as_ref(), &message) {
                    tracing::debug!(%peer, "refusal not delivered: {e}");
                }
                *me.busy.lock() -= 1;
            });
        if spawned.is_err() {
            *self.busy.lock() -= 1;
        }
    }
}

/// Reads the client's hello (so that closing does not reset the connection
/// under the reply), answers with a refusal carrying `message` and closes.
fn send_refusal(mut stream: TcpStream, backend: &dyn Backend, message: &str) -> io::Result<()> {
    gate::refuse(&mut stream, backend, message).map_err(io::Error::other)?;
    stream.shutdown(Shutdown::Write)?;
    // Let the client read the reply and close first.
    stream.set_read_timeout(Some(REFUSAL_LINGER))?;
    let mut rest = [0u8; 64];
    while matches!(stream.read(&mut rest), Ok(n) if n > 0) {}
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::net::TcpListener;

    use super::*;

    /// A connected socket pair: (the listener's side, the client's side).
    fn connection() -> (TcpStream, TcpStream) {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let client = TcpStream::connect(listener.local_addr().unwrap()).unwrap();
        let (served, _) = listener.accept().unwrap();
        (served, client)
    }

    /// "Agents" that are shell scripts; the agent flags become positional
    /// parameters the script ignores.
    fn script(body: &str) -> AgentLauncher {
        AgentLauncher::new("/bin/sh", vec!["-c".into(), body.into(), "agent".into()])
    }

    #[test]
    fn agents_are_reaped_when_they_exit() {
        let agents = Arc::new(Agents::default());
        let (served, mut client) = connection();
        // The agent owns the connection: what it writes on descriptor 3
        // reaches the client, and the connection closes when it exits.
        let launcher = script("printf hello >&3");
        let pid = agents
            .start(&launcher, served, "peer", None, None, Lease::default())
            .unwrap();
        assert!(pid > 0);
        let mut got = String::new();
        client.read_to_string(&mut got).unwrap();
        assert_eq!(got, "hello");
        let deadline = Instant::now() + Duration::from_secs(10);
        while agents.live() > 0 {
            assert!(Instant::now() < deadline, "the agent was not reaped");
            thread::sleep(Duration::from_millis(10));
        }
    }

    #[test]
    fn agents_ignoring_sigterm_are_killed_after_the_grace_period() {
        let agents = Arc::new(Agents::default());
        let launcher = script("trap '' TERM; printf ready >&3; exec sleep 30");
        let mut clients = Vec::new();
        for _ in 0..2 {
            let (served, mut client) = connection();
            agents
                .start(&launcher, served, "peer", None, None, Lease::default())
                .unwrap();
            // Ignoring SIGTERM from here on.
            let mut ready = [0u8; 5];
            client.read_exact(&mut ready).unwrap();
            clients.push(client);
        }
        assert_eq!(agents.live(), 2);
        let start = Instant::now();
        agents.terminate_all(Duration::from_millis(300));
        let took = start.elapsed();
        assert!(took >= Duration::from_millis(300), "{took:?}");
        assert!(took < Duration::from_secs(5), "{took:?}");
        assert_eq!(agents.live(), 0);
        // Their connections are closed.
        for mut c in clients {
            let mut rest = Vec::new();
            assert_eq!(c.read_to_end(&mut rest).unwrap(), 0);
        }
        // No new agents once shutting down.
        let (served, _client) = connection();
        assert!(agents
            .start(&launcher, served, "peer", None, None, Lease::default())
            .is_err());
    }

    #[test]
    fn exit_statuses_read_well() {
        let status = |script: &str| {
            Command::new("/bin/sh")
                .args(["-c", script])
                .status()
                .unwrap()
        };
        assert_eq!(describe(status("exit 3")), "exit code 3");
        assert_eq!(
            describe(status("kill -9 $$")),
            "killed by signal 9 (SIGKILL)"
        );
    }
}
