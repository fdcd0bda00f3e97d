//! The agent: serves one client connection.
//!
//! Once the [gate](crate::gate) has admitted its client, it reads requests one
//! at a time, validates them
//! (framing, operation id, payload length, device ranges against the client's
//! own allocations), runs them on the backend and replies. A malformed request
//! ends the connection; an invalid but well-formed one gets a CUDA error reply.
//! The client's device contexts are dropped, releasing everything it held,
//! when the agent returns, whatever the reason. A copy between two GPUs of
//! the server meets the agent of the other GPU on the server host
//! ([`crate::peer`]).

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use rcud_proto::auth;
use rcud_proto::codec::Blob;
use rcud_proto::codec::Wire;
use rcud_proto::frame::{FrameHeader, FrameKind};
use rcud_proto::ops::{self, rep, req, Failure, Request};
use rcud_proto::CudaError;
use rcud_transport::{Channel, TransportError};
use thiserror::Error;

use crate::activity;
use crate::backend::{Backend, CopyError, DeviceContext, HostSource, KernelLaunch, VirtualMemory};
use crate::ipc::{self, IpcPort, MemHandle};
use crate::metrics::SessionEvent;
use crate::peer::{self, InstanceId, PeerPort};
use crate::qos::{Lane, Resource};
use crate::resume::{Resumption, SessionChannel};
use crate::tenant_memory::MemoryAccount;
use crate::tenants::ResourceLimits;

/// Largest fat binary a client may ship.
pub const MAX_MODULE: u64 = 256 << 20;
/// Most bytes of uploaded graph steps one client may keep on the server.
pub const MAX_GRAPH_BYTES: u64 = 64 << 20;
/// Deepest nesting of conditional bodies in an uploaded graph; it bounds
/// the recursion of a launch.
pub const MAX_GRAPH_NESTING: u32 = 32;

/// The device work of an instantiated graph, kept on the server.
struct UploadedGraph {
    steps: Vec<Request>,
    /// Encoded size, counted against [`MAX_GRAPH_BYTES`].
    bytes: u64,
    /// Levels of conditional bodies below it (0: none).
    nesting: u32,
}

/// What device steps return beyond their status.
#[derive(Default)]
struct StepOutput {
    /// Device `printf` output of the kernels, in order.
    printf: Vec<u8>,
    /// Server time at each event record, in nanoseconds.
    timestamps: Vec<u64>,
}

/// Why an agent stopped serving its connection.
#[derive(Debug, Error)]
pub enum AgentError {
    /// The connection failed.
    #[error(transparent)]
    Transport(#[from] TransportError),
    /// The peer broke the protocol; the connection was closed.
    #[error("protocol violation: {0}")]
    Protocol(String),
}

/// Serves one connection after a successful handshake.
pub struct Agent {
    backend: Arc<dyn Backend>,
    chan: SessionChannel,
    ctx: Option<Box<dyn DeviceContext>>,
    /// An error that corrupted the client's context (an illegal address in a
    /// kernel): every later operation fails with it until `cudaDeviceReset`.
    sticky: Option<Failure>,
    body: Vec<u8>,
    /// Origin of event timestamps.
    epoch: std::time::Instant,
    /// What this client may hold (its tenant's limits).
    limits: ResourceLimits,
    /// What it holds of what the limits count.
    allocations: u64,
    modules: u32,
    functions: u32,
    module_memory: u64,
    /// Whose cached device code this client may load by hash alone: its
    /// tenant's, or only its own connection's.
    owner: String,
    /// Most time one copy or memset of many rows may take.
    op_timeout: Duration,
    /// The server instance this agent belongs to (peer copies).
    instance: InstanceId,
    /// Where sources of peer copies to this client's GPU connect, once opened.
    peer_port: Option<PeerPort>,
    /// The ticket of the next `PeerReceive`, issued by `PeerListen`.
    peer_ticket: Option<[u8; 16]>,
    /// Whose exported allocations this client may open (CUDA IPC): its
    /// tenant's, or, on a server without tenants, every client's.
    tenant: String,
    /// Where other agents fetch the allocations this client exported,
    /// once it exported one.
    ipc_port: Option<IpcPort>,
    /// Its place in the server's QoS arbiter: bulk chunks and kernel
    /// launches wait for their turn.
    qos: Option<Lane>,
    /// Its share of its tenant's memory limit over all the tenant's
    /// connections.
    memory_account: Option<MemoryAccount>,
    /// Uploaded graphs: id -> steps, and the bytes they hold.
    graphs: HashMap<u32, Arc<UploadedGraph>>,
    graph_bytes: u64,
    next_graph: u32,
    /// Its entry in the server's table of clients (`rcud smi`, NVML),
    /// once it says who it is ([`Agent::with_client`]).
    registration: Option<activity::Registration>,
    /// Whether the request being served copies or sets memory (counted as
    /// memory activity).
    memory_request: bool,
    /// How the session survives a broken connection, when the server keeps
    /// sessions.
    resumption: Option<Resumption>,
    /// The secret the client proves ownership of its session with, once it
    /// opened one.
    session_secret: Option<[u8; 32]>,
    /// The last request if it was a device-to-host copy: its payload may be
    /// too large to keep, and is read again if the client missed it.
    last_dtoh: Option<(FrameHeader, Request)>,
    /// Whether a request is being read or served (a close now breaks it).
    mid_request: bool,
}

impl Agent {
    /// An agent for `chan`, running requests on `backend`.
    pub fn new(backend: Arc<dyn Backend>, chan: Box<dyn Channel>) -> Self {
        Self {
            backend,
            chan: SessionChannel::new(chan),
            ctx: None,
            sticky: None,
            body: Vec::with_capacity(256),
            epoch: std::time::Instant::now(),
            limits: ResourceLimits::default(),
            allocations: 0,
            modules: 0,
            functions: 0,
            module_memory: 0,
            owner: next_connection_owner(),
            op_timeout: crate::isolation::DEFAULT_OP_TIMEOUT,
            instance: InstanceId::NONE,
            peer_port: None,
            peer_ticket: None,
            tenant: String::new(),
            ipc_port: None,
            qos: None,
            memory_account: None,
            graphs: HashMap::new(),
            graph_bytes: 0,
            next_graph: 1,
            registration: None,
            memory_request: false,
            resumption: None,
            session_secret: None,
            last_dtoh: None,
            mid_request: false,
        }
    }

    /// Lets the client keep its session across connections
    /// ([`crate::resume`]).
    pub fn with_resumption(mut self, resumption: Option<Resumption>) -> Self {
        self.resumption = resumption;
        self
    }

    /// Lists the client in the server's table of clients as `client` of
    /// `tenant` while it is connected, for `DeviceStatus`.
    pub fn with_client(mut self, client: &str, tenant: &str) -> Self {
        self.registration = Some(activity::register(client, tenant));
        self
    }

    /// Lets the agent copy to and from other agents of server `instance`.
    pub fn with_instance(mut self, instance: InstanceId) -> Self {
        self.instance = instance;
        self
    }

    /// Limits what the client may hold: device memory (allocations beyond
    /// it fail with `cudaErrorMemoryAllocation` and a message, and
    /// `cudaMemGetInfo` shows it as the device's size), allocations, modules
    /// and functions.
    pub fn with_resource_limits(mut self, limits: ResourceLimits) -> Self {
        self.limits = limits;
        self
    }

    /// The client's tenant, whose exported allocations it may open.
    pub fn with_tenant(mut self, tenant: impl Into<String>) -> Self {
        self.tenant = tenant.into();
        self
    }

    /// Lets the client load by hash alone the device code that `owner` (its
    /// tenant) shipped before, on this or another connection.
    pub fn with_owner(mut self, owner: impl Into<String>) -> Self {
        self.owner = owner.into();
        self
    }

    /// Counts this client's device memory in its tenant's account, shared by
    /// all the tenant's connections.
    pub fn with_memory_account(mut self, account: Option<MemoryAccount>) -> Self {
        self.memory_account = account;
        self
    }

    /// Brings the tenant's account up to what this client's context holds.
    fn settle_memory(&mut self) {
        let held = self.ctx.as_deref().map_or(0, |c| c.memory_held());
        if let Some(account) = &mut self.memory_account {
            account.settle(held);
        }
        if let Some(registration) = &self.registration {
            registration.set_memory(held);
        }
    }

    /// Arbitrates this client's bulk copies and kernel launches on `lane`.
    pub fn with_qos(mut self, lane: Option<Lane>) -> Self {
        self.qos = lane;
        self
    }

    /// Bounds the time of one copy or memset of many rows.
    pub fn with_op_timeout(mut self, timeout: Duration) -> Self {
        self.op_timeout = timeout;
        self
    }

    /// Fails when `more` bytes would take the client past its memory limit,
    /// or one more allocation past its count.
    fn check_allocation(&self, more: u64) -> Result<(), Failure> {
        if self.allocations >= self.limits.allocations {
            return Err(Failure::new(
                CudaError::MEMORY_ALLOCATION,
                format!(
                    "this client's limit of {} allocations is reached (tenant option max_allocations)",
                    self.limits.allocations
                ),
            ));
        }
        let (Some(limit), Some(ctx)) = (self.limits.memory, self.ctx.as_deref()) else {
            return Ok(());
        };
        if ctx
            .memory_held()
            .saturating_add(ctx.allocation_charge(more))
            > limit
        {
            return Err(Failure::new(
                CudaError::MEMORY_ALLOCATION,
                format!("this client's device memory limit of {limit} bytes would be exceeded (tenant option memory, server option --client-memory)"),
            ));
        }
        Ok(())
    }

    /// Reserves an allocation of `size` in the tenant's account, which all
    /// its connections share (settled to the real charge after the request).
    fn reserve_tenant_memory(&mut self, size: u64) -> Result<(), Failure> {
        let charge = self
            .ctx
            .as_deref()
            .map_or(size, |c| c.allocation_charge(size));
        let tenant = self.owner.clone();
        let Some(account) = &mut self.memory_account else {
            return Ok(());
        };
        if account.reserve(charge) {
            return Ok(());
        }
        Err(Failure::new(
            CudaError::MEMORY_ALLOCATION,
            format!(
                "{tenant}'s device memory limit of {} bytes over all its connections would be exceeded ({} bytes held)",
                account.limit(),
                account.tenant_used()
            ),
        ))
    }

    /// Loads a module within the client's module limits.
    fn load_module(&mut self, hash: [u8; 32], image: Option<Vec<u8>>) -> Result<u32, Failure> {
        if self.modules >= self.limits.modules {
            return Err(Failure::new(
                CudaError::MEMORY_ALLOCATION,
                format!(
                    "this client's limit of {} modules is reached (tenant option max_modules)",
                    self.limits.modules
                ),
            ));
        }
        let owner = self.owner.clone();
        let ctx = self.ctx_mut()?;
        let (module, cost) = ctx.load_module(&owner, hash, image)?;
        let total = self.module_memory.saturating_add(cost);
        if total > self.limits.module_memory {
            // The module stays loaded but unreachable until the context is
            // reset; its cost is counted, so the next load fails too.
            self.module_memory = total;
            return Err(Failure::new(
                CudaError::MEMORY_ALLOCATION,
                format!(
                    "this client's parsed device code would exceed its limit of {} bytes (tenant option module_memory)",
                    self.limits.module_memory
                ),
            ));
        }
        self.module_memory = total;
        self.modules += 1;
        Ok(module)
    }

    /// Free and total memory as this client sees them: its own budget when
    /// it has one, never what other clients use of the device beyond it.
    fn mem_info(&self, ctx: &dyn DeviceContext) -> (u64, u64) {
        let (free, total) = ctx.mem_info();
        if let Some(account) = &self.memory_account {
            let left = account.limit().saturating_sub(account.tenant_used());
            return (left.min(free), account.limit().min(total));
        }
        match self.limits.memory {
            Some(limit) if limit < total => {
                let own = limit.saturating_sub(ctx.memory_held());
                (own.min(free), limit)
            }
            _ => (free, total),
        }
    }

    /// The size of a device of `total` bytes as this client sees it: its
    /// tenant's or its own memory limit where that is smaller.
    fn visible_memory(&self, total: u64) -> u64 {
        let tenant = self.memory_account.as_ref().map(|a| a.limit());
        [Some(total), tenant, self.limits.memory]
            .into_iter()
            .flatten()
            .min()
            .unwrap_or(total)
    }

    /// `DeviceStatus` of `gpu`: clients of other tenants show their memory
    /// only, so that a tenant learns no other tenant's programs.
    fn device_status(&self, gpu: u32) -> Result<rep::DeviceStatus, CudaError> {
        let (props, _) = self.backend.device_info(gpu)?;
        let processes: Vec<ops::ProcessStatus> = activity::clients_of(gpu)
            .into_iter()
            .map(|c| {
                if self.tenant.is_empty() || c.tenant == self.tenant {
                    ops::ProcessStatus {
                        pid: c.pid,
                        memory: c.memory,
                        client: c.client,
                        tenant: c.tenant,
                    }
                } else {
                    ops::ProcessStatus {
                        memory: c.memory,
                        ..ops::ProcessStatus::default()
                    }
                }
            })
            .collect();
        let (utilisation_gpu, utilisation_memory) = activity::utilisation(gpu);
        Ok(rep::DeviceStatus {
            memory_used: processes.iter().map(|p| p.memory).sum(),
            memory_total: props.total_global_mem,
            utilisation_gpu,
            utilisation_memory,
            processes,
            tenant: self.tenant.clone(),
        })
    }

    /// Serves requests until the client disconnects (`Ok`) or fails. A
    /// session whose connection breaks waits for its client to come back
    /// for the grace period first.
    pub fn run(mut self) -> Result<(), AgentError> {
        loop {
            let failure = match self.serve_next() {
                Ok(()) => continue,
                // The client closed between requests: it has left.
                Err(AgentError::Transport(TransportError::Closed))
                    if !self.mid_request && self.chan.peer_left() && !self.client_is_back() =>
                {
                    return Ok(())
                }
                Err(e) => e,
            };
            let broken = matches!(failure, AgentError::Transport(_));
            if !broken || self.session_secret.is_none() || !self.resume()? {
                return Err(failure);
            }
        }
    }

    /// Whether the client already came back on a new connection (then an
    /// end of the old one is a break, which the listener caused).
    fn client_is_back(&mut self) -> bool {
        self.session_secret.is_some()
            && self
                .resumption
                .as_mut()
                .is_some_and(|r| r.reconnects.pending())
    }

    /// Reads and serves the next request.
    fn serve_next(&mut self) -> Result<(), AgentError> {
        self.mid_request = false;
        let header = self.chan.recv_header()?;
        self.mid_request = true;
        if header.kind != FrameKind::REQUEST {
            return Err(AgentError::Protocol(format!(
                "expected a request, got frame kind {}",
                header.kind.0
            )));
        }
        if self.chan.log().is_some_and(|log| log.executed(header.id)) {
            // Sent again by a client that resumed; its reply was kept.
            tracing::debug!(id = header.id, "dropping a request executed already");
            self.chan.recv_body(header.body_len)?;
            return Ok(self.chan.discard_bulk(header.bulk_len)?);
        }
        let started = std::time::Instant::now();
        let handled = self.handle(header);
        if let Some(registration) = &self.registration {
            registration.record(started.elapsed(), self.memory_request);
        }
        self.settle_memory();
        handled
    }

    /// Waits out the grace period for the client's next connection and
    /// resumes on it: `Ok(false)` when none came, or the client cannot be
    /// given what it missed.
    fn resume(&mut self) -> Result<bool, AgentError> {
        let (Some(mut resumption), Some(secret)) = (self.resumption.take(), self.session_secret)
        else {
            return Ok(false);
        };
        let deadline = std::time::Instant::now() + resumption.grace;
        tracing::info!(
            peer = self.chan.peer(),
            grace_s = resumption.grace.as_secs_f64(),
            "connection lost; keeping the session for its client"
        );
        session_event(SessionEvent::Interrupted);
        let mut resumed = false;
        while let Some((chan, session_key)) = resumption.reconnects.next(deadline) {
            self.chan.replace(chan);
            match self.resume_on_new_connection(&secret, &session_key) {
                Ok(ok) => {
                    resumed = ok;
                    break;
                }
                // The new connection broke too, or was not the client's:
                // wait for another within the same grace period.
                Err(e) => tracing::info!("a connection to resume on failed: {e}"),
            }
        }
        self.resumption = Some(resumption);
        if resumed {
            session_event(SessionEvent::Resumed);
            tracing::info!(peer = self.chan.peer(), "session resumed");
        } else {
            tracing::info!("the client did not come back; releasing its session");
            session_event(SessionEvent::Expired);
        }
        Ok(resumed)
    }

    /// Names the session to the client: its id and a fresh secret. From
    /// now on replies are kept until acknowledged. All zeros when the
    /// server does not keep sessions.
    fn open_session(&mut self) -> Result<rep::SessionOpen, Failure> {
        let Some(resumption) = &self.resumption else {
            return Ok(rep::SessionOpen {
                session: [0; 16],
                secret: [0; 32],
            });
        };
        let secret = *self.session_secret.get_or_insert_with(|| {
            let mut secret = [0u8; 32];
            // Without randomness the session stays unresumable.
            getrandom::fill(&mut secret)
                .map(|()| secret)
                .unwrap_or([0; 32])
        });
        if secret == [0; 32] {
            self.session_secret = None;
            return Ok(rep::SessionOpen {
                session: [0; 16],
                secret: [0; 32],
            });
        }
        self.chan.keep_replies();
        Ok(rep::SessionOpen {
            session: resumption.session,
            secret,
        })
    }

    /// The first exchange on a resumed connection: the client's proof and
    /// the id of its last reply; the id of the last request executed, then
    /// every reply the client missed.
    fn resume_on_new_connection(
        &mut self,
        secret: &[u8; 32],
        session_key: &[u8; 32],
    ) -> Result<bool, AgentError> {
        let header = self.chan.recv_header()?;
        if header.kind != FrameKind::REQUEST || header.op != <req::SessionResume as ops::Op>::ID.0 {
            return Err(AgentError::Protocol(
                "a resumed connection must start with SessionResume".into(),
            ));
        }
        if header.bulk_len != 0 {
            return Err(AgentError::Protocol(
                "SessionResume carries no payload".into(),
            ));
        }
        let body = self.chan.recv_body(header.body_len)?;
        let Ok(Request::SessionResume(r)) = Request::decode(header.op, body) else {
            return Err(AgentError::Protocol("malformed SessionResume".into()));
        };
        if !auth::verify_resume(secret, session_key, &r.proof) {
            return Err(AgentError::Protocol(
                "a connection failed to prove it owns the session".into(),
            ));
        }
        let Some(log) = self.chan.log_mut() else {
            return Ok(false);
        };
        log.ack_before(r.last_reply.wrapping_add(1));
        let last_executed = log.last_executed();
        let missed = log.after(r.last_reply).map(|missed| {
            missed
                .into_iter()
                .map(|e| {
                    (
                        e.header,
                        e.body.clone(),
                        e.whole_payload().map(<[u8]>::to_vec),
                    )
                })
                .collect::<Vec<_>>()
        });
        let missed = match missed {
            Ok(m) => m,
            Err(id) => {
                let failure = Failure::new(CudaError::DEVICES_UNAVAILABLE, format!("the server no longer holds the reply to request {id}; the session cannot resume"),
                );
                self.body.clear();
                ops::encode_reply::<rep::SessionResume>(Err(&failure), &mut self.body);
                let reply = reply_header(&header, &self.body, 0);
                self.chan.send_unlogged(&reply, &self.body, &[])?;
                self.chan.flush()?;
                return Ok(false);
            }
        };
        self.body.clear();
        ops::encode_reply(Ok(&rep::SessionResume { last_executed }), &mut self.body);
        let reply = reply_header(&header, &self.body, 0);
        self.chan.send_unlogged(&reply, &self.body, &[])?;
        for (reply, body, payload) in missed {
            match payload {
                Some(payload) => self.chan.send_unlogged(&reply, &body, &payload)?,
                // Too large to keep: the last request, a copy from the
                // device, which nothing has run after; read it again.
                None => match self.last_dtoh.clone() {
                    Some((request, req)) if request.id == reply.id => {
                        self.serve_request(request, req)?
                    }
                    _ => {
                        return Err(AgentError::Protocol(format!(
                            "the payload of reply {} was not kept",
                            reply.id
                        )))
                    }
                },
            }
        }
        self.chan.flush()?;
        Ok(true)
    }

    fn handle(&mut self, header: FrameHeader) -> Result<(), AgentError> {
        let body = self.chan.recv_body(header.body_len)?;
        let req = Request::decode(header.op, body)
            .map_err(|e| AgentError::Protocol(format!("request op {:#06x}: {e}", header.op)))?;
        let expected_bulk = match &req {
            Request::MemcpyHtoD(r) => r.len,
            Request::ModuleLoad(r) => r.len,
            Request::Memcpy2DHtoD(r) => r.width.saturating_mul(r.height),
            _ => 0,
        };
        if header.bulk_len != expected_bulk {
            return Err(AgentError::Protocol(format!(
                "{} announced {} payload bytes, expected {expected_bulk}",
                req.name(),
                header.bulk_len
            )));
        }
        self.last_dtoh = matches!(req, Request::MemcpyDtoH(_) | Request::Memcpy2DDtoH(_))
            .then(|| (header, req.clone()));
        self.serve_request(header, req)
    }

    /// Runs a decoded request and replies.
    fn serve_request(&mut self, header: FrameHeader, req: Request) -> Result<(), AgentError> {
        tracing::trace!(op = req.name(), id = header.id, "request");
        self.memory_request = req.name().starts_with("Memcpy") || req.name().starts_with("Memset");
        // A peer copy on a poisoned context still meets its other agent, to
        // tell it the copy is off.
        let exempt = matches!(
            req,
            Request::Attach(_)
                | Request::GetDeviceInfo(_)
                | Request::DeviceStatus(_)
                | Request::DeviceReset(_)
                | Request::PeerReceive(_)
                | Request::PeerSend(_)
        );
        if let (Some(failure), false) = (&self.sticky, exempt) {
            let failure = failure.clone();
            self.chan.discard_bulk(header.bulk_len)?;
            return self.reply::<rep::Malloc, Failure>(&header, Err(failure));
        }
        match req {
            Request::SessionOpen(_) => {
                let res = self.open_session();
                self.reply(&header, res)
            }
            Request::SessionResume(_) => {
                let res = Err::<rep::SessionResume, _>(Failure::new(
                    CudaError::INVALID_VALUE,
                    "SessionResume is only the first request of a resumed connection",
                ));
                self.reply(&header, res)
            }
            Request::Attach(r) => {
                let res = if self.ctx.is_some() {
                    Err(CudaError::INVALID_VALUE)
                } else {
                    self.backend
                        .open(r.gpu, r.window)
                        .map(|ctx| self.ctx = Some(ctx))
                };
                if let (Ok(()), Some(registration)) = (&res, &self.registration) {
                    registration.attach(r.gpu);
                }
                self.reply(&header, res.map(|()| rep::Attach {}))
            }
            Request::GetDeviceInfo(r) => {
                let res = self
                    .backend
                    .device_info(r.gpu)
                    .map(|(mut props, attributes)| {
                        // The device's size agrees with what
                        // `cudaMemGetInfo` reports, as on a MIG slice.
                        props.total_global_mem = self.visible_memory(props.total_global_mem);
                        rep::GetDeviceInfo { props, attributes }
                    });
                self.reply(&header, res)
            }
            Request::DeviceStatus(r) => {
                let res = self.device_status(r.gpu);
                self.reply(&header, res)
            }
            Request::MemGetInfo(_) => {
                let res = self.ctx().map(|c| {
                    let (free, total) = self.mem_info(c);
                    rep::MemGetInfo { free, total }
                });
                self.reply(&header, res)
            }
            Request::DeviceSynchronize(_) => {
                let res = self.ctx_mut().and_then(|c| c.synchronize());
                self.reply(&header, res.map(|()| rep::DeviceSynchronize {}))
            }
            Request::DeviceReset(_) => {
                self.sticky = None;
                (self.allocations, self.modules, self.functions) = (0, 0, 0);
                self.module_memory = 0;
                self.graphs.clear();
                self.graph_bytes = 0;
                let res = self.ctx_mut().map(|c| c.reset());
                self.reply(&header, res.map(|()| rep::DeviceReset {}))
            }
            Request::Malloc(r) => {
                let res = self.check_allocation(r.size).and_then(|()| {
                    self.reserve_tenant_memory(r.size)?;
                    self.ctx_mut()
                        .and_then(|c| c.malloc(r.size))
                        .map_err(Failure::from)
                });
                if res.is_ok() {
                    self.allocations += 1;
                }
                self.reply(&header, res.map(|ptr| rep::Malloc { ptr }))
            }
            Request::Free(r) => {
                let res = self.ctx_mut().and_then(|c| c.free(r.ptr));
                if res.is_ok() {
                    self.allocations = self.allocations.saturating_sub(1);
                    if let Some(port) = &self.ipc_port {
                        port.forget(r.ptr);
                    }
                }
                self.reply(&header, res.map(|()| rep::Free {}))
            }
            Request::MemcpyDtoD(_)
            | Request::Memset(_)
            | Request::Memcpy2DDtoD(_)
            | Request::Memset2D(_)
            | Request::MemsetElements(_) => {
                let res = self.device_step(&req, &mut StepOutput::default());
                // These replies have no fields: any of their types encodes them.
                self.reply(&header, res.map(|()| rep::Memset {}))
            }
            Request::MemcpyHtoD(r) => self.memcpy_htod(&header, Rows::linear(r.dst, r.len)),
            Request::MemcpyDtoH(r) => self.memcpy_dtoh(&header, Rows::linear(r.src, r.len)),
            Request::Memcpy2DHtoD(r) => match Rows::pitched(r.dst, r.dpitch, r.width, r.height) {
                Ok(rows) => self.memcpy_htod(&header, rows),
                Err(e) => {
                    self.chan.discard_bulk(header.bulk_len)?;
                    self.reply::<rep::Memcpy2DHtoD, CudaError>(&header, Err(e))
                }
            },
            Request::Memcpy2DDtoH(r) => match Rows::pitched(r.src, r.spitch, r.width, r.height) {
                Ok(rows) => self.memcpy_dtoh(&header, rows),
                Err(e) => self.reply::<rep::Memcpy2DDtoH, CudaError>(&header, Err(e)),
            },
            Request::ModuleLoadCached(r) => {
                let res = self.load_module(r.hash, None);
                self.reply(&header, res.map(|module| rep::ModuleLoadCached { module }))
            }
            Request::ModuleLoad(r) => {
                if r.len > MAX_MODULE {
                    return Err(AgentError::Protocol(format!(
                        "module of {} bytes exceeds the limit of {MAX_MODULE}",
                        r.len
                    )));
                }
                let mut image = vec![0u8; r.len as usize];
                self.chan.recv_bulk_into(&mut image)?;
                let res = self.load_module(r.hash, Some(image));
                self.reply(&header, res.map(|module| rep::ModuleLoad { module }))
            }
            Request::ModuleGetFunction(r) => {
                let res = if self.functions >= self.limits.functions {
                    Err(Failure::new(
                        CudaError::MEMORY_ALLOCATION,
                        format!(
                            "this client's limit of {} function lookups is reached (tenant option max_functions)",
                            self.limits.functions
                        ),
                    ))
                } else {
                    self.ctx_mut()
                        .map_err(Failure::from)
                        .and_then(|c| c.get_function(r.module, &r.name))
                };
                if res.is_ok() {
                    self.functions += 1;
                }
                let res = res.map(|(function, attributes)| rep::ModuleGetFunction {
                    function,
                    attributes,
                });
                self.reply(&header, res)
            }
            Request::ModuleGetGlobal(r) => {
                let res = self
                    .ctx_mut()
                    .map_err(Failure::from)
                    .and_then(|c| c.get_global(r.module, &r.name));
                self.reply(
                    &header,
                    res.map(|(ptr, size)| rep::ModuleGetGlobal { ptr, size }),
                )
            }
            Request::FuncSetAttribute(r) => {
                let res = self
                    .ctx_mut()
                    .map_err(Failure::from)
                    .and_then(|c| c.set_function_attribute(r.function, r.attr, r.value));
                self.reply(&header, res.map(|()| rep::FuncSetAttribute {}))
            }
            Request::EventRecord(_) => {
                let mut out = StepOutput::default();
                let res = self.device_step(&req, &mut out).map(|()| rep::EventRecord {
                    timestamp_ns: out.timestamps.first().copied().unwrap_or_default(),
                });
                self.reply(&header, res)
            }
            Request::LaunchKernel(_) => {
                let mut out = StepOutput::default();
                let res = self.device_step(&req, &mut out);
                self.reply(
                    &header,
                    res.map(|()| rep::LaunchKernel {
                        printf: Blob(out.printf),
                    }),
                )
            }
            Request::LaunchCooperative(_) => {
                let mut out = StepOutput::default();
                let res = self.device_step(&req, &mut out);
                self.reply(
                    &header,
                    res.map(|()| rep::LaunchCooperative {
                        printf: Blob(out.printf),
                    }),
                )
            }
            Request::GraphUpload(r) => {
                let res = self.graph_upload(r.steps, header.body_len as u64);
                self.reply(&header, res.map(|graph| rep::GraphUpload { graph }))
            }
            Request::GraphLaunch(r) => {
                let mut out = StepOutput::default();
                let res = self.graph_launch(r.graph, &mut out);
                self.reply(
                    &header,
                    res.map(|()| rep::GraphLaunch {
                        printf: Blob(out.printf),
                        timestamps: out.timestamps,
                    }),
                )
            }
            Request::GraphConditional(_) => self.reply::<rep::GraphConditional, Failure>(
                &header,
                Err(Failure::new(
                    CudaError::INVALID_VALUE,
                    "a conditional node is a step of an uploaded graph only",
                )),
            ),
            Request::GraphDestroy(r) => {
                let res = match self.graphs.remove(&r.graph) {
                    Some(graph) => {
                        self.graph_bytes = self.graph_bytes.saturating_sub(graph.bytes);
                        Ok(rep::GraphDestroy {})
                    }
                    None => Err(CudaError::INVALID_RESOURCE_HANDLE),
                };
                self.reply(&header, res)
            }
            Request::SetLimit(r) => {
                let res = self
                    .ctx_mut()
                    .map_err(Failure::from)
                    .and_then(|c| c.set_limit(r.limit, r.value))
                    .map(|value| rep::SetLimit { value });
                self.reply(&header, res)
            }
            Request::IpcGetMemHandle(r) => {
                let res = self.ipc_export(r.ptr);
                self.reply(&header, res)
            }
            Request::IpcOpenMemHandle(r) => {
                let res = self.ipc_open(&r.handle.0);
                self.reply(&header, res)
            }
            Request::IpcCloseMemHandle(r) => {
                let res = self.ctx_mut().and_then(|c| c.ipc_close(r.ptr));
                self.reply(&header, res.map(|()| rep::IpcCloseMemHandle {}))
            }
            Request::MemCreate(r) => {
                let res = self.check_allocation(r.size).and_then(|()| {
                    self.reserve_tenant_memory(r.size)?;
                    Ok(self.vmm()?.create(r.size)?)
                });
                if res.is_ok() {
                    self.allocations += 1;
                }
                self.reply(&header, res.map(|handle| rep::MemCreate { handle }))
            }
            Request::MemRelease(r) => {
                let res = self.vmm().and_then(|v| Ok(v.release(r.handle)?));
                if res.is_ok() {
                    self.allocations = self.allocations.saturating_sub(1);
                }
                self.reply(&header, res.map(|()| rep::MemRelease {}))
            }
            Request::MemAddressReserve(r) => {
                let res = self.vmm().and_then(|v| Ok(v.reserve(r.size, r.alignment)?));
                self.reply(&header, res.map(|ptr| rep::MemAddressReserve { ptr }))
            }
            Request::MemAddressFree(r) => {
                let res = self.vmm().and_then(|v| Ok(v.free_address(r.ptr, r.size)?));
                self.reply(&header, res.map(|()| rep::MemAddressFree {}))
            }
            Request::MemMap(r) => {
                let res = self
                    .vmm()
                    .and_then(|v| Ok(v.map(r.ptr, r.size, r.offset, r.handle)?));
                self.reply(&header, res.map(|()| rep::MemMap {}))
            }
            Request::MemUnmap(r) => {
                let res = self.vmm().and_then(|v| Ok(v.unmap(r.ptr, r.size)?));
                self.reply(&header, res.map(|()| rep::MemUnmap {}))
            }
            Request::MemSetAccess(r) => {
                let res = self.mem_set_access(r.ptr, r.size, r.flags);
                self.reply(&header, res.map(|()| rep::MemSetAccess {}))
            }
            Request::MemExport(r) => {
                let res = self.vmm_export(r.handle);
                self.reply(&header, res)
            }
            Request::MemImport(r) => {
                let res = self.vmm_import(&r.token.0);
                self.reply(&header, res)
            }
            Request::StreamWriteValue(_) | Request::StreamWaitValue(_) => {
                let res = self.device_step(&req, &mut StepOutput::default());
                // These replies have no fields: any of their types encodes them.
                self.reply(&header, res.map(|()| rep::StreamWriteValue {}))
            }
            Request::MathCall(r) => {
                let res = self
                    .ctx_mut()
                    .map_err(Failure::from)
                    .and_then(|c| c.math_call(r.library, &r.call.0))
                    .map(|reply| rep::MathCall {
                        status: reply.status,
                        out: Blob(reply.out),
                    });
                self.reply(&header, res)
            }
            Request::PeerListen(_) => {
                let res = self.peer_listen();
                self.reply(&header, res)
            }
            Request::PeerReceive(r) => {
                let res = self.peer_receive(&r);
                self.reply(&header, res.map(|()| rep::PeerReceive {}))
            }
            Request::PeerSend(r) => {
                let res = self.peer_send(&r);
                self.reply(&header, res.map(|()| rep::PeerSend {}))
            }
        }
    }

    /// Runs one operation that needs nothing but the device: alone, or as a
    /// step of an uploaded graph.
    fn device_step(&mut self, req: &Request, out: &mut StepOutput) -> Result<(), Failure> {
        match req {
            Request::MemcpyDtoD(r) => self.ctx_mut()?.copy_device(r.dst, r.src, r.len)?,
            Request::Memset(r) => self.ctx_mut()?.memset(r.dst, r.value, r.len)?,
            Request::Memcpy2DDtoD(r) => {
                let deadline = Deadline::after(self.op_timeout);
                let dst = Rows::pitched(r.dst, r.dpitch, r.width, r.height)?;
                let src = Rows::pitched(r.src, r.spitch, r.width, r.height)?;
                let ctx = self.ctx_mut()?;
                dst.check(ctx)?;
                src.check(ctx)?;
                for (i, (d, s)) in dst.starts().zip(src.starts()).enumerate() {
                    deadline.check(i)?;
                    ctx.copy_device(d, s, r.width)?;
                }
            }
            Request::Memset2D(r) => {
                let rows = Rows::pitched(r.dst, r.pitch, r.width, r.height)?;
                self.fill_rows(rows, &[r.value])?;
            }
            Request::MemsetElements(r) => {
                let element = match r.element {
                    1 | 2 | 4 => r.element as usize,
                    _ => return Err(CudaError::INVALID_VALUE.into()),
                };
                let width = r.width.checked_mul(element as u64);
                let rows = Rows::pitched(
                    r.dst,
                    r.pitch,
                    width.ok_or(CudaError::INVALID_VALUE)?,
                    r.height,
                )?;
                if !r.dst.is_multiple_of(element as u64) {
                    return Err(CudaError::INVALID_VALUE.into());
                }
                self.fill_rows(rows, &r.value.to_le_bytes()[..element])?;
            }
            Request::EventRecord(_) => {
                // Work before the event has completed: every operation of a
                // context runs to completion before the next.
                self.ctx_mut()?.synchronize()?;
                out.timestamps.push(self.epoch.elapsed().as_nanos() as u64);
            }
            Request::LaunchKernel(r) => self.launch(
                &KernelLaunch {
                    function: r.function,
                    grid: r.grid,
                    block: r.block,
                    shared_mem: r.shared_mem,
                    params: &r.params.0,
                    cooperative: false,
                },
                out,
            )?,
            Request::LaunchCooperative(r) => self.launch(
                &KernelLaunch {
                    function: r.function,
                    grid: r.grid,
                    block: r.block,
                    shared_mem: r.shared_mem,
                    params: &r.params.0,
                    cooperative: true,
                },
                out,
            )?,
            // A library call captured into a graph. As when it is queued on a
            // stream, a failure the client's checks could not see (a handle
            // destroyed since) is the library's business: logged, and the
            // graph goes on.
            Request::MathCall(r) => {
                let reply = self.ctx_mut()?.math_call(r.library, &r.call.0)?;
                if reply.status != 0 {
                    tracing::warn!(
                        library = r.library,
                        status = reply.status,
                        "a math library call in a graph failed"
                    );
                }
            }
            Request::StreamWriteValue(r) => {
                let bytes = r.value.to_le_bytes();
                let size = match r.size {
                    4 | 8 => u64::from(r.size),
                    _ => return Err(CudaError::INVALID_VALUE.into()),
                };
                if !r.addr.is_multiple_of(size) {
                    return Err(CudaError::INVALID_VALUE.into());
                }
                self.fill_rows(Rows::linear(r.addr, size), &bytes[..size as usize])?;
            }
            Request::StreamWaitValue(r) => self.wait_value(r)?,
            other => {
                return Err(Failure::new(
                    CudaError::INVALID_VALUE,
                    format!("{} is not device work", other.name()),
                ))
            }
        }
        Ok(())
    }

    /// Runs a kernel in its QoS turn; its printf output goes to `out`.
    fn launch(&mut self, launch: &KernelLaunch<'_>, out: &mut StepOutput) -> Result<(), Failure> {
        let turn = self.qos.as_ref().map(|l| l.acquire(Resource::Launch, 0));
        let started = std::time::Instant::now();
        let res = match self.ctx.as_deref_mut() {
            Some(c) => c.launch(launch),
            None => Err(Failure::from(CudaError::INVALID_DEVICE)),
        };
        crate::metrics::kernel_ran(started.elapsed());
        drop(turn);
        match res {
            Ok(printf) => {
                out.printf.extend_from_slice(&printf);
                Ok(())
            }
            Err(f) => {
                tracing::info!(function = launch.function, "kernel failed: {f}");
                Err(f)
            }
        }
    }

    /// Fills `rows` with `pattern` repeated (one byte: a memset per row).
    fn fill_rows(&mut self, rows: Rows, pattern: &[u8]) -> Result<(), CudaError> {
        let deadline = Deadline::after(self.op_timeout);
        let ctx = self.ctx_mut()?;
        rows.check(ctx)?;
        if let [byte] = pattern {
            for (i, d) in rows.starts().enumerate() {
                deadline.check(i)?;
                ctx.memset(d, *byte, rows.width)?;
            }
            return Ok(());
        }
        // A pattern row, written chunk by chunk: whole elements per chunk.
        let chunk_len = (64 << 10) / pattern.len() * pattern.len();
        let row: Vec<u8> = pattern
            .iter()
            .copied()
            .cycle()
            .take((rows.width as usize).min(chunk_len))
            .collect();
        for (i, start) in rows.starts().enumerate() {
            deadline.check(i)?;
            let mut done = 0u64;
            while done < rows.width {
                let n = (rows.width - done).min(row.len() as u64);
                let mut src = SliceSource(&row[..n as usize]);
                ctx.copy_from_host(start + done, n, &mut src)
                    .map_err(|e| match e {
                        CopyError::Cuda(e) => e,
                        CopyError::Transport(_) => CudaError::UNKNOWN,
                    })?;
                done += n;
            }
        }
        Ok(())
    }

    /// Keeps a graph's steps, checked to be device work, under a new id. A
    /// conditional step names bodies uploaded before it, so the graphs a
    /// launch can reach form no cycle, and they nest [`MAX_GRAPH_NESTING`]
    /// deep at most.
    fn graph_upload(&mut self, steps: Vec<ops::GraphStep>, bytes: u64) -> Result<u32, Failure> {
        if self.graph_bytes.saturating_add(bytes) > MAX_GRAPH_BYTES {
            return Err(Failure::new(
                CudaError::MEMORY_ALLOCATION,
                format!("this client's graphs would hold more than {MAX_GRAPH_BYTES} bytes on the server"),
            ));
        }
        let steps = steps
            .iter()
            .enumerate()
            .map(|(i, step)| {
                step.request().map_err(|e| {
                    Failure::new(CudaError::INVALID_VALUE, format!("graph step {i}: {e}"))
                })
            })
            .collect::<Result<Vec<_>, _>>()?;
        let mut nesting = 0;
        for (i, step) in steps.iter().enumerate() {
            if let Request::GraphConditional(c) = step {
                nesting = nesting.max(self.conditional_nesting(c).map_err(|e| {
                    Failure::new(CudaError::INVALID_VALUE, format!("graph step {i}: {e}"))
                })?);
            }
        }
        let id = self.next_graph;
        self.next_graph = self
            .next_graph
            .checked_add(1)
            .ok_or(CudaError::MEMORY_ALLOCATION)?;
        self.graph_bytes += bytes;
        self.graphs.insert(
            id,
            Arc::new(UploadedGraph {
                steps,
                bytes,
                nesting,
            }),
        );
        Ok(id)
    }

    /// Checks a conditional step's kind, body count and bodies; the levels
    /// of nesting it makes.
    fn conditional_nesting(&self, c: &req::GraphConditional) -> Result<u32, &'static str> {
        let count_ok = match c.kind {
            ops::cond_kind::IF => matches!(c.bodies.len(), 1 | 2),
            ops::cond_kind::WHILE => c.bodies.len() == 1,
            ops::cond_kind::SWITCH => !c.bodies.is_empty(),
            _ => return Err("unknown conditional node type"),
        };
        if !count_ok {
            return Err("wrong number of conditional bodies");
        }
        let mut deepest = 0;
        for body in &c.bodies {
            let body = self
                .graphs
                .get(body)
                .ok_or("conditional body not uploaded")?;
            deepest = deepest.max(body.nesting);
        }
        if deepest >= MAX_GRAPH_NESTING {
            return Err("conditional bodies nested too deep");
        }
        Ok(deepest + 1)
    }

    /// Runs every step of an uploaded graph, in order, up to the first
    /// failure. Conditional steps run on the server: a launch stays one
    /// message, and the whole launch, loops included, must finish within
    /// the operation time limit.
    fn graph_launch(&mut self, graph: u32, out: &mut StepOutput) -> Result<(), Failure> {
        let graph = self
            .graphs
            .get(&graph)
            .cloned()
            .ok_or(CudaError::INVALID_RESOURCE_HANDLE)?;
        let deadline = std::time::Instant::now() + self.op_timeout;
        self.run_steps(&graph.steps, deadline, out)
    }

    fn run_steps(
        &mut self,
        steps: &[Request],
        deadline: std::time::Instant,
        out: &mut StepOutput,
    ) -> Result<(), Failure> {
        for step in steps {
            match step {
                Request::GraphConditional(c) => self.run_conditional(c, deadline, out)?,
                other => self.device_step(other, out)?,
            }
        }
        Ok(())
    }

    /// A conditional node: reads its condition after the work before it and
    /// runs the body it selects; a WHILE reads it again after each pass.
    fn run_conditional(
        &mut self,
        c: &req::GraphConditional,
        deadline: std::time::Instant,
        out: &mut StepOutput,
    ) -> Result<(), Failure> {
        loop {
            let value = self.read_condition(c.cond)?;
            let chosen = match c.kind {
                ops::cond_kind::IF if value != 0 => c.bodies.first(),
                ops::cond_kind::IF => c.bodies.get(1),
                ops::cond_kind::WHILE if value != 0 => c.bodies.first(),
                ops::cond_kind::SWITCH => c.bodies.get(value as usize),
                _ => None,
            };
            let Some(&body) = chosen else {
                return Ok(());
            };
            let body = self
                .graphs
                .get(&body)
                .cloned()
                .ok_or(CudaError::INVALID_RESOURCE_HANDLE)?;
            self.run_steps(&body.steps, deadline, out)?;
            if c.kind != ops::cond_kind::WHILE {
                return Ok(());
            }
            if std::time::Instant::now() > deadline {
                return Err(Failure::new(
                    CudaError::LAUNCH_TIMEOUT,
                    format!(
                        "a conditional WHILE node still looped after the operation time limit ({:?})",
                        self.op_timeout
                    ),
                ));
            }
        }
    }

    /// The `u32` condition value at device address `cond`, once the work
    /// before it has finished.
    fn read_condition(&mut self, cond: u64) -> Result<u32, Failure> {
        let ctx = self.ctx_mut()?;
        ctx.synchronize()?;
        ctx.check(cond, 4)?;
        let mut value = Vec::with_capacity(4);
        let read = ctx.copy_to_host(cond, 4, &mut |piece| {
            value.extend_from_slice(piece);
            Ok(())
        });
        match read {
            Ok(()) => {}
            Err(CopyError::Cuda(e)) => return Err(e.into()),
            Err(CopyError::Transport(e)) => {
                return Err(Failure::new(CudaError::UNKNOWN, e.to_string()))
            }
        }
        let bytes: [u8; 4] = value
            .get(..4)
            .and_then(|b| b.try_into().ok())
            .ok_or(CudaError::UNKNOWN)?;
        Ok(u32::from_le_bytes(bytes))
    }

    /// `cudaIpcGetMemHandle`: shares the allocation holding `ptr` and
    /// hands out its handle, serving it from this agent's IPC port.
    fn ipc_export(&mut self, ptr: u64) -> Result<rep::IpcGetMemHandle, Failure> {
        if self.instance.is_none() {
            return Err(Failure::new(
                CudaError::NOT_SUPPORTED,
                "CUDA IPC needs a server with an instance id",
            ));
        }
        let (memory, base, len) = self.ctx_mut()?.ipc_export(ptr)?;
        let local = |e: std::io::Error| {
            Failure::new(
                CudaError::OPERATING_SYSTEM,
                format!("cudaIpcGetMemHandle: {e}"),
            )
        };
        if self.ipc_port.is_none() {
            self.ipc_port = Some(IpcPort::open(self.instance).map_err(local)?);
        }
        let port = self.ipc_port.as_ref().ok_or(CudaError::OPERATING_SYSTEM)?;
        let handle = port
            .export(base, memory, len, &self.tenant)
            .map_err(local)?;
        Ok(rep::IpcGetMemHandle {
            handle: Blob(handle.encode().to_vec()),
        })
    }

    /// `cudaIpcOpenMemHandle`: fetches the exporter's memory and maps it.
    fn ipc_open(&mut self, handle: &[u8]) -> Result<rep::IpcOpenMemHandle, Failure> {
        self.ctx()?;
        // Both refusals are CUDA_ERROR_INVALID_VALUE, as NVIDIA's driver
        // answers them (seen on an H200).
        let handle = MemHandle::decode(handle).ok_or_else(|| {
            Failure::new(
                CudaError::INVALID_VALUE,
                "cudaIpcOpenMemHandle: not a handle of an rcud server",
            )
        })?;
        if self.ipc_port.as_ref().is_some_and(|p| p.owns(&handle)) {
            // CUDA refuses a handle in the process that exported it.
            return Err(CudaError::INVALID_VALUE.into());
        }
        let (memory, len) = ipc::fetch(&handle, self.instance, &self.tenant)?;
        let ptr = self.ctx_mut()?.ipc_import(memory, len)?;
        Ok(rep::IpcOpenMemHandle { ptr, len })
    }

    /// The context's virtual memory management, or why there is none.
    fn vmm(&mut self) -> Result<&mut dyn VirtualMemory, Failure> {
        let ctx = self.ctx_mut()?;
        let backend = ctx.backend_name();
        ctx.vmm().ok_or_else(|| {
            Failure::new(
                CudaError::NOT_SUPPORTED,
                format!("virtual memory management is not available on the {backend} backend"),
            )
        })
    }

    /// `cuMemSetAccess` for this GPU: `PROT_READWRITE` (3) or `PROT_NONE` (0).
    fn mem_set_access(&mut self, ptr: u64, size: u64, flags: u32) -> Result<(), Failure> {
        let accessible = match flags {
            0 => false,
            3 => true,
            // The emulated device has no read-only device memory.
            1 => {
                return Err(Failure::new(
                    CudaError::NOT_SUPPORTED,
                    "cuMemSetAccess: read-only access (CU_MEM_ACCESS_FLAGS_PROT_READ) is not supported; use PROT_READWRITE",
                ))
            }
            _ => return Err(CudaError::INVALID_VALUE.into()),
        };
        Ok(self.vmm()?.set_access(ptr, size, accessible)?)
    }

    /// `cuMemExportToShareableHandle`: shares a physical allocation through
    /// this agent's IPC port, as CUDA IPC shares allocations.
    fn vmm_export(&mut self, handle: u64) -> Result<rep::MemExport, Failure> {
        if self.instance.is_none() {
            return Err(Failure::new(
                CudaError::NOT_SUPPORTED,
                "shareable handles need a server with an instance id",
            ));
        }
        let (memory, len) = self.vmm()?.export(handle)?;
        let local = |e: std::io::Error| {
            Failure::new(
                CudaError::OPERATING_SYSTEM,
                format!("cuMemExportToShareableHandle: {e}"),
            )
        };
        if self.ipc_port.is_none() {
            self.ipc_port = Some(IpcPort::open(self.instance).map_err(local)?);
        }
        let port = self.ipc_port.as_ref().ok_or(CudaError::OPERATING_SYSTEM)?;
        // Keyed apart from device addresses (below 2^47), one per handle.
        let key = VMM_EXPORT_KEY | handle;
        let token = port.export(key, memory, len, &self.tenant).map_err(local)?;
        Ok(rep::MemExport {
            token: Blob(token.encode().to_vec()),
        })
    }

    /// `cuMemImportFromShareableHandle`: fetches the exporter's memory file
    /// and gives it a handle here (the exporting process included, as CUDA
    /// allows there).
    fn vmm_import(&mut self, token: &[u8]) -> Result<rep::MemImport, Failure> {
        self.ctx()?;
        let handle = MemHandle::decode(token).ok_or_else(|| {
            Failure::new(
                CudaError::INVALID_VALUE,
                "cuMemImportFromShareableHandle: not a handle of an rcud server",
            )
        })?;
        let (memory, size) = ipc::fetch(&handle, self.instance, &self.tenant)?;
        let handle = self.vmm()?.import(memory, size)?;
        Ok(rep::MemImport { handle, size })
    }

    /// `cuStreamWaitValue32/64`. Every operation queued before this one has
    /// run (a context's work runs in order), so only another process
    /// writing shared memory (CUDA IPC, exported physical memory) can still
    /// change the value: the wait polls it until the server's operation
    /// time limit, then fails with `cudaErrorTimeout` instead of hanging
    /// the context as a GPU would.
    fn wait_value(&mut self, r: &rcud_proto::ops::req::StreamWaitValue) -> Result<(), Failure> {
        const GEQ: u32 = 0;
        const EQ: u32 = 1;
        const AND: u32 = 2;
        const NOR: u32 = 3;
        const FLUSH: u32 = 1 << 30;
        let mask = if r.size == 4 {
            u64::from(u32::MAX)
        } else {
            u64::MAX
        };
        let (op, want) = (r.flags & !FLUSH, r.value & mask);
        let holds = |v: u64| match op {
            // GEQ compares cyclically, as the driver does: (int)(v - want) >= 0.
            GEQ if r.size == 4 => (v.wrapping_sub(want) as u32 as i32) >= 0,
            GEQ => (v.wrapping_sub(want) as i64) >= 0,
            EQ => v == want,
            AND => v & want != 0,
            _ => !(v | want) & mask != 0,
        };
        if op > NOR || !matches!(r.size, 4 | 8) {
            return Err(CudaError::INVALID_VALUE.into());
        }
        let deadline = std::time::Instant::now() + self.op_timeout;
        let mut pause = Duration::from_micros(50);
        loop {
            let value = self.ctx_mut()?.load_value(r.addr, r.size)?;
            if holds(value) {
                return Ok(());
            }
            if std::time::Instant::now() >= deadline {
                return Err(Failure::new(
                    CudaError::TIMEOUT,
                    format!(
                        "cuStreamWaitValue: the value at {:#x} ({value:#x}) did not meet the condition (flags {:#x}, value {:#x}) within the server's operation time limit of {:?}; rcud runs a context's work in order, so only another process writing shared memory can end such a wait",
                        r.addr, r.flags, r.value, self.op_timeout
                    ),
                ));
            }
            std::thread::sleep(pause);
            pause = (pause * 2).min(Duration::from_millis(20));
        }
    }

    /// Opens this agent's rendezvous point on first use and issues the
    /// ticket of the next `PeerReceive`.
    fn peer_listen(&mut self) -> Result<rep::PeerListen, Failure> {
        self.ctx()?;
        if self.instance.is_none() {
            return Err(Failure::new(
                CudaError::NOT_SUPPORTED,
                "this server copies between its GPUs only with an instance id",
            ));
        }
        let local = |e: std::io::Error| Failure::from(peer::PeerError::Local(e));
        let endpoint = match &self.peer_port {
            Some(port) => port.endpoint().to_string(),
            None => {
                let port = PeerPort::open(self.instance).map_err(local)?;
                let endpoint = port.endpoint().to_string();
                self.peer_port = Some(port);
                endpoint
            }
        };
        let ticket = peer::random_bytes().map_err(local)?;
        self.peer_ticket = Some(ticket);
        Ok(rep::PeerListen { endpoint, ticket })
    }

    /// The destination's side of a peer copy.
    fn peer_receive(&mut self, r: &ops::req::PeerReceive) -> Result<(), Failure> {
        // Single use: a ticket is good for one copy, and only its own.
        if self.peer_ticket.take() != Some(r.ticket) {
            return Err(Failure::new(
                CudaError::INVALID_VALUE,
                "peer copy: unknown ticket (call PeerListen first)",
            ));
        }
        let (Some(port), Some(ctx)) = (self.peer_port.as_ref(), self.ctx.as_deref_mut()) else {
            return Err(CudaError::INVALID_DEVICE.into());
        };
        let refusal = self.sticky.as_ref().map(|f| f.code);
        let res = peer::receive(port, ctx, refusal, r.dst, r.len, &r.ticket);
        if let Err(e) = &res {
            tracing::info!(dst = r.dst, len = r.len, "peer copy not received: {e}");
        }
        match (res, &self.sticky) {
            (Err(_), Some(sticky)) => Err(sticky.clone()),
            (res, _) => res.map_err(Failure::from),
        }
    }

    /// The source's side of a peer copy.
    fn peer_send(&mut self, r: &ops::req::PeerSend) -> Result<(), Failure> {
        let Some(ctx) = self.ctx.as_deref_mut() else {
            return Err(CudaError::INVALID_DEVICE.into());
        };
        let refusal = self.sticky.as_ref().map(|f| f.code);
        let res = peer::send(
            self.instance,
            ctx,
            refusal,
            r.src,
            r.len,
            &r.endpoint,
            &r.ticket,
        );
        if let Err(e) = &res {
            tracing::info!(src = r.src, len = r.len, "peer copy not sent: {e}");
        }
        match (res, &self.sticky) {
            (Err(_), Some(sticky)) => Err(sticky.clone()),
            (res, _) => res.map_err(Failure::from),
        }
    }

    fn ctx(&self) -> Result<&dyn DeviceContext, CudaError> {
        self.ctx.as_deref().ok_or(CudaError::INVALID_DEVICE)
    }

    fn ctx_mut(&mut self) -> Result<&mut (dyn DeviceContext + 'static), CudaError> {
        self.ctx.as_deref_mut().ok_or(CudaError::INVALID_DEVICE)
    }

    /// Host-to-device copy of `rows` rows of `width` bytes, `pitch` apart at
    /// `dst`, from the request's packed payload (one row: a plain copy).
    fn memcpy_htod(&mut self, header: &FrameHeader, rows: Rows) -> Result<(), AgentError> {
        let mut source = PayloadSource {
            chan: &mut self.chan,
            remaining: header.bulk_len,
            qos: self.qos.as_ref(),
        };
        let res = match self.ctx.as_deref_mut() {
            None => Err(CopyError::Cuda(CudaError::INVALID_DEVICE)),
            Some(ctx) => rows.check(ctx).map_err(CopyError::Cuda).and_then(|()| {
                rows.starts()
                    .try_for_each(|dst| ctx.copy_from_host(dst, rows.width, &mut source))
            }),
        };
        let remaining = source.remaining;
        let status = match res {
            Ok(()) => Ok(rep::MemcpyHtoD {}),
            Err(CopyError::Transport(e)) => return Err(e.into()),
            Err(CopyError::Cuda(e)) => Err(e),
        };
        // Whatever the backend did not consume is still on the wire.
        self.chan.discard_bulk(remaining)?;
        self.reply(header, status)
    }

    /// Device-to-host copy of `rows`, sent back packed.
    fn memcpy_dtoh(&mut self, header: &FrameHeader, rows: Rows) -> Result<(), AgentError> {
        let checked = self.ctx().and_then(|c| rows.check(c));
        if let Err(e) = checked {
            return self.reply::<rep::MemcpyDtoH, CudaError>(header, Err(e));
        }
        let len = rows.width * rows.height;
        self.body.clear();
        ops::encode_reply(Ok(&rep::MemcpyDtoH {}), &mut self.body);
        let mut out = ReplyStream {
            chan: &mut self.chan,
            header: reply_header(header, &self.body, len),
            body: &self.body,
            started: false,
            qos: self.qos.as_ref(),
        };
        let Some(ctx) = self.ctx.as_deref_mut() else {
            return Err(AgentError::Protocol("context vanished".into()));
        };
        let copied = rows
            .starts()
            .try_for_each(|src| ctx.copy_to_host(src, rows.width, &mut |piece| out.push(piece)));
        match copied {
            Ok(()) if out.started => Ok(()),
            Ok(()) if len == 0 => Ok(out.push(&[])?),
            Ok(()) => Err(AgentError::Protocol("backend produced no data".into())),
            Err(CopyError::Transport(e)) => Err(e.into()),
            // The reply promised `len` bytes; a device failure after the range
            // check cannot be reported in-band any more.
            Err(CopyError::Cuda(e)) => Err(AgentError::Protocol(format!(
                "device-to-host copy failed after it started: {e}"
            ))),
        }
    }

    fn reply<R: Wire, E: Into<Failure>>(
        &mut self,
        header: &FrameHeader,
        result: Result<R, E>,
    ) -> Result<(), AgentError> {
        let result = result.map_err(Into::into);
        if let Err(f) = &result {
            if f.code.is_sticky() {
                self.sticky = Some(f.clone());
            }
        }
        self.body.clear();
        ops::encode_reply(result.as_ref(), &mut self.body);
        let reply = reply_header(header, &self.body, 0);
        self.chan.send_frame(&reply, &self.body, &[])?;
        Ok(())
    }
}

fn reply_header(request: &FrameHeader, body: &[u8], bulk_len: u64) -> FrameHeader {
    FrameHeader {
        flags: 0,
        kind: FrameKind::REPLY,
        op: request.op,
        body_len: body.len() as u32,
        id: request.id,
        bulk_len,
    }
}

fn session_event(event: SessionEvent) {
    if let Some(stats) = crate::metrics::shared() {
        stats.session(event);
    }
}

/// A name of its own for a connection without a tenant.
fn next_connection_owner() -> String {
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    format!("connection {} of process {}", n, std::process::id())
}

/// When an operation of many rows must have finished.
/// Bit that keys exported physical allocations (`cuMemExportToShareableHandle`)
/// in the IPC port apart from exported device addresses.
const VMM_EXPORT_KEY: u64 = 1 << 63;

struct Deadline(std::time::Instant);

impl Deadline {
    fn after(budget: Duration) -> Self {
        Self(std::time::Instant::now() + budget)
    }

    /// `cudaErrorTimeout` once past the deadline; looks at the clock every
    /// 1024 rows only.
    fn check(&self, row: usize) -> Result<(), CudaError> {
        if row % 1024 == 1023 && std::time::Instant::now() > self.0 {
            return Err(CudaError::TIMEOUT);
        }
        Ok(())
    }
}

/// Equally long rows at a fixed distance: a pitched 2-D region, or one row
/// for a linear copy.
#[derive(Debug, Clone, Copy)]
struct Rows {
    start: u64,
    pitch: u64,
    width: u64,
    height: u64,
}

impl Rows {
    fn linear(start: u64, len: u64) -> Self {
        Self {
            start,
            pitch: len,
            width: len,
            height: 1,
        }
    }

    fn pitched(start: u64, pitch: u64, width: u64, height: u64) -> Result<Self, CudaError> {
        if width > pitch && height > 1 {
            return Err(CudaError::INVALID_PITCH_VALUE);
        }
        Ok(Self {
            start,
            pitch,
            width,
            height,
        })
    }

    /// Checks the whole region before any byte moves.
    fn check(&self, ctx: &dyn DeviceContext) -> Result<(), CudaError> {
        if self.height == 0 || self.width == 0 {
            return Ok(());
        }
        let extent = (self.height - 1)
            .checked_mul(self.pitch)
            .and_then(|e| e.checked_add(self.width))
            .ok_or(CudaError::INVALID_VALUE)?;
        ctx.check(self.start, extent)
    }

    fn starts(&self) -> impl Iterator<Item = u64> {
        let (start, pitch) = (self.start, self.pitch);
        let rows = if self.width == 0 { 0 } else { self.height };
        (0..rows).map(move |r| start + r * pitch)
    }
}

/// A reply whose payload is produced in pieces: the first piece goes out with
/// the header and body, the rest follow.
struct ReplyStream<'a> {
    chan: &'a mut dyn Channel,
    header: FrameHeader,
    body: &'a [u8],
    started: bool,
    qos: Option<&'a Lane>,
}

impl ReplyStream<'_> {
    fn push(&mut self, piece: &[u8]) -> Result<(), TransportError> {
        match self.qos {
            // The reply's header goes with its first chunk.
            Some(lane) if !piece.is_empty() => {
                lane.chunked(piece.len(), |range| self.send(&piece[range]))
            }
            _ => self.send(piece),
        }
    }

    fn send(&mut self, piece: &[u8]) -> Result<(), TransportError> {
        if self.started {
            self.chan.send_bulk(piece)
        } else {
            self.started = true;
            self.chan.send_frame(&self.header, self.body, piece)
        }
    }
}

/// The payload of the request being served, read on demand by the backend.
struct PayloadSource<'a> {
    chan: &'a mut dyn Channel,
    remaining: u64,
    qos: Option<&'a Lane>,
}

impl HostSource for PayloadSource<'_> {
    fn read_into(&mut self, dst: &mut [u8]) -> Result<(), TransportError> {
        let n = dst.len() as u64;
        if n > self.remaining {
            return Err(TransportError::Io(std::io::Error::other(
                "backend read past the end of the payload",
            )));
        }
        match self.qos {
            Some(lane) => {
                let chan = &mut *self.chan;
                let len = dst.len();
                lane.chunked(len, |range| chan.recv_bulk_into(&mut dst[range]))?;
            }
            None => self.chan.recv_bulk_into(dst)?,
        }
        self.remaining -= n;
        Ok(())
    }
}

/// Bytes the server itself supplies to a copy (a memset pattern).
struct SliceSource<'a>(&'a [u8]);

impl HostSource for SliceSource<'_> {
    fn read_into(&mut self, dst: &mut [u8]) -> Result<(), TransportError> {
        if dst.len() > self.0.len() {
            return Err(TransportError::Io(std::io::Error::other(
                "copy read past the end of its pattern",
            )));
        }
        let (head, rest) = self.0.split_at(dst.len());
        dst.copy_from_slice(head);
        self.0 = rest;
        Ok(())
    }
}
