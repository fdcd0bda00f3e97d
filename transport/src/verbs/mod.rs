//! A provider-agnostic verbs layer in the spirit of libibverbs.
//!
//! The objects and their relations follow ibverbs: a [`Context`] is an open
//! device; it allocates [`ProtectionDomain`]s and [`CompletionQueue`]s; a
//! protection domain owns [`MemoryRegion`]s and reliable-connected
//! [`QueuePair`]s. Queue pairs are connected through the connection manager
//! ([`cm`]: RDMA CM's model for both providers), or, at a lower level, by
//! exchanging [`Endpoint`]s out of band and calling [`QueuePair::connect`] on
//! both sides.
//!
//! Differences from raw ibverbs, on purpose:
//! - Memory regions own their memory, allocated by the provider (shared memory
//!   for `soft`, page-aligned host memory for a hardware provider), so no raw
//!   pointer crosses this API: work requests name an [`Sge`] (region, offset,
//!   length), and the provider checks bounds before anything is posted.
//! - A posted list is validated whole first: either every work request of a
//!   list is posted, or none is and the call returns an error.
//! - Posting on a queue pair in the error state succeeds and yields
//!   [`WcStatus::WrFlush`] completions, as on hardware, except on a queue
//!   pair that an asynchronous event marked down (see below).
//!
//! Asynchronous events ([`AsyncEvent`]): a port that goes down, a queue pair
//! that fails, a device that dies. The provider marks the queue pairs
//! concerned down at once (every queue pair of the context on a port or
//! device error, the one queue pair on a fatal error): a down queue pair is
//! moved to the error state, so its outstanding work requests complete with
//! [`WcStatus::WrFlush`] and waits wake up, its state reads
//! [`QpState::Error`], and every later post fails at once with
//! [`VerbsError::LinkDown`]. Nothing waits for the transport's timeouts.
//! [`Context::subscribe_events`] delivers the events themselves. The `soft`
//! provider produces the same events on demand ([`soft::inject`] and the
//! `RCUD_SOFT_RDMA_FAULT` knob).
//!
//! Providers: `soft` (peers on one host over shared memory; always present)
//! and `rdma-core` (InfiniBand, RoCE and iWARP adapters through libibverbs,
//! loaded at run time; see [`rdma_core`]). A provider implements the crate-private `*Ops` traits of this module and is
//! listed in [`devices`].

use std::any::Any;
use std::fmt;
use std::ops::BitOr;
use std::sync::mpsc::{channel, Receiver, Sender};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use thiserror::Error;

pub mod cm;
pub mod rdma_core;
pub mod soft;

/// Name of the device of the `soft` provider.
pub const SOFT_DEVICE: &str = "soft0";

/// Why a verbs call failed. A failed call changes nothing (nothing is posted).
#[derive(Debug, Error)]
pub enum VerbsError {
    /// No device of that name exists.
    #[error("no verbs device named {name:?} (available: {available})")]
    NoSuchDevice {
        /// The name asked for.
        name: String,
        /// Names of the devices present.
        available: String,
    },
    /// An operating-system call failed.
    #[error("{what}: {source}")]
    Io {
        /// What was being done.
        what: String,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
    /// Posting would exceed the depth the queue was created with.
    #[error("{queue} queue full: posting {posting} more would exceed its depth of {depth}")]
    QueueFull {
        /// `"send"` or `"receive"`.
        queue: &'static str,
        /// Work requests in the rejected list.
        posting: usize,
        /// The queue's depth.
        depth: u32,
    },
    /// A range lies outside its memory region.
    #[error(
        "range of {len} bytes at offset {offset} lies outside the memory region of {size} bytes"
    )]
    OutOfBounds {
        /// Start of the range.
        offset: usize,
        /// Length of the range.
        len: usize,
        /// Size of the region.
        size: usize,
    },
    /// The queue pair has not been connected yet.
    #[error("queue pair {qp_num} is not connected: exchange endpoints and call connect() first")]
    NotConnected {
        /// The queue pair.
        qp_num: u32,
    },
    /// `connect` was called twice.
    #[error("queue pair {qp_num} is already connected")]
    AlreadyConnected {
        /// The queue pair.
        qp_num: u32,
    },
    /// An object from another protection domain, context or provider was used.
    #[error("{0} belongs to another protection domain, context or provider")]
    Foreign(&'static str),
    /// An endpoint could not be decoded or does not name a live queue pair.
    #[error("invalid endpoint: {0}")]
    BadEndpoint(String),
    /// An argument is out of range.
    #[error("invalid argument: {0}")]
    InvalidArgument(String),
    /// A device limit was reached.
    #[error("{what} limit reached: the device allows at most {max}")]
    Limit {
        /// Which resource.
        what: &'static str,
        /// The device's limit.
        max: u64,
    },
    /// An asynchronous event marked the queue pair down (port or device
    /// error, fatal queue-pair error): nothing more can be posted on it.
    #[error("queue pair {qp_num} is down: {event}")]
    LinkDown {
        /// The queue pair.
        qp_num: u32,
        /// The event that took it down.
        event: AsyncEvent,
    },
    /// More completions were generated than the completion queue holds.
    #[error("completion queue overrun: more than {depth} completions were left unpolled; size the queue for the queue pairs that use it")]
    CqOverrun {
        /// The queue's depth.
        depth: u32,
    },
}

/// Result of a verbs call.
pub type Result<T> = std::result::Result<T, VerbsError>;

/// An asynchronous event of a device, as libibverbs reports them
/// (`ibv_get_async_event`), independent of the provider.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum AsyncEvent {
    /// A port left the active state (link down, cable pulled, subnet
    /// manager gone): every queue pair of the context on it is marked down.
    PortError {
        /// The port (1-based).
        port: u8,
    },
    /// A port became active again. New connections may be made; queue pairs
    /// marked down stay down.
    PortActive {
        /// The port (1-based).
        port: u8,
    },
    /// The subnet manager gave the port a new LID. Nothing is marked down:
    /// connections are made by name or GID through the connection manager,
    /// never by a cached LID, so the next connection resolves the new one.
    LidChange {
        /// The port (1-based).
        port: u8,
    },
    /// A queue pair failed (the adapter moved it to the error state).
    QpFatal {
        /// The queue pair.
        qp_num: u32,
    },
    /// The device failed: every queue pair of the context is marked down.
    DeviceFatal,
}

impl AsyncEvent {
    /// Whether the event takes queue pairs down.
    pub fn is_fatal(self) -> bool {
        matches!(
            self,
            AsyncEvent::PortError { .. } | AsyncEvent::QpFatal { .. } | AsyncEvent::DeviceFatal
        )
    }
}

impl fmt::Display for AsyncEvent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            AsyncEvent::PortError { port } => write!(f, "port {port} error"),
            AsyncEvent::PortActive { port } => write!(f, "port {port} active"),
            AsyncEvent::LidChange { port } => write!(f, "LID change on port {port}"),
            AsyncEvent::QpFatal { qp_num } => write!(f, "fatal error of queue pair {qp_num}"),
            AsyncEvent::DeviceFatal => f.write_str("fatal device error"),
        }
    }
}

/// The subscribers to a context's events.
#[derive(Default)]
pub(crate) struct EventHub {
    subscribers: Mutex<Vec<Sender<AsyncEvent>>>,
}

impl EventHub {
    pub(crate) fn subscribe(&self) -> Receiver<AsyncEvent> {
        let (tx, rx) = channel();
        self.subscribers
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(tx);
        rx
    }

    /// Delivers `event` to every live subscriber (dropped receivers are
    /// forgotten).
    pub(crate) fn publish(&self, event: AsyncEvent) {
        self.subscribers
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .retain(|tx| tx.send(event).is_ok());
    }
}

/// The verbs providers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Provider {
    /// Peers on one host over shared memory.
    Soft,
    /// Adapters driven by rdma-core's libibverbs.
    RdmaCore,
}

/// A device that can be opened.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeviceInfo {
    /// Device name (`soft0`, `mlx5_0`, …).
    pub name: String,
    /// Which provider drives it.
    pub provider: Provider,
}

/// The network a device drives, which sets the transports' defaults.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fabric {
    /// Peers on one host over shared memory (the `soft` provider).
    SharedMemory,
    /// InfiniBand.
    InfiniBand,
    /// RDMA over Converged Ethernet.
    Roce,
    /// iWARP (RDMA over TCP).
    Iwarp,
}

impl Fabric {
    /// Staging chunks of 1 MB per direction that gave the best bandwidth:
    /// the thesis's measured optima for hardware (InfiniBand 288, RoCE 144,
    /// iWARP 72; `spec/transports.md`), and ours for shared memory, where
    /// there is no bandwidth-delay product to cover and a small ring stays in
    /// cache (docs/performance.md).
    pub fn best_chunks(self) -> usize {
        match self {
            Fabric::SharedMemory => 9,
            Fabric::InfiniBand => 288,
            Fabric::Roce => 144,
            Fabric::Iwarp => 72,
        }
    }
}

/// Limits of a device.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DeviceAttr {
    /// Most work requests per send or receive queue.
    pub max_qp_wr: u32,
    /// Most entries per completion queue.
    pub max_cqe: u32,
    /// Most memory regions per protection domain.
    pub max_mr: u32,
    /// Largest memory region, in bytes.
    pub max_mr_size: u64,
    /// Largest message (send or RDMA write), in bytes.
    pub max_msg_size: u32,
}

/// The devices present on this host: the `soft` device (always present,
/// first), then the adapters rdma-core lists (none when libibverbs or an
/// adapter is missing; [`rdma_core::availability`] says why).
pub fn devices() -> Vec<DeviceInfo> {
    let mut all = vec![DeviceInfo {
        name: SOFT_DEVICE.to_owned(),
        provider: Provider::Soft,
    }];
    all.extend(rdma_core::devices());
    all
}

/// Access rights of a memory region (local read is always granted).
#[derive(Clone, Copy, PartialEq, Eq, Default)]
pub struct Access(u32);

impl Access {
    /// No rights beyond local read.
    pub const NONE: Access = Access(0);
    /// The local queue pair may write received data into the region.
    pub const LOCAL_WRITE: Access = Access(1);
    /// The peer may RDMA-write into the region (requires `LOCAL_WRITE`).
    pub const REMOTE_WRITE: Access = Access(2);

    /// Whether every right of `other` is in `self`.
    pub fn contains(self, other: Access) -> bool {
        self.0 & other.0 == other.0
    }

    /// The raw bits.
    pub fn bits(self) -> u32 {
        self.0
    }

    /// From raw bits; unknown bits are dropped.
    pub fn from_bits_truncate(bits: u32) -> Access {
        Access(bits & 3)
    }
}

impl BitOr for Access {
    type Output = Access;
    fn bitor(self, rhs: Access) -> Access {
        Access(self.0 | rhs.0)
    }
}

impl fmt::Debug for Access {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut names = Vec::new();
        if self.contains(Access::LOCAL_WRITE) {
            names.push("LOCAL_WRITE");
        }
        if self.contains(Access::REMOTE_WRITE) {
            names.push("REMOTE_WRITE");
        }
        if names.is_empty() {
            names.push("NONE");
        }
        write!(f, "Access({})", names.join(" | "))
    }
}

/// State of a queue pair.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum QpState {
    /// Created; receives may be posted, sends may not.
    Init,
    /// Connected: sends and receives may be posted.
    ReadyToSend,
    /// A fatal error happened (or the peer went away); every outstanding and
    /// future work request completes with [`WcStatus::WrFlush`].
    Error,
}

/// What a completion reports about its work request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WcStatus {
    /// Done.
    Success,
    /// Receiver: the incoming message is longer than the posted buffer.
    LocalLength,
    /// A local memory region was invalid for the operation.
    LocalProtection,
    /// The queue pair was in (or went to) the error state; not executed.
    WrFlush,
    /// Sender: the peer rejected an RDMA access (bad key, bounds or rights).
    RemoteAccess,
    /// Sender: the peer could not accept the message (e.g. it was too long for
    /// the posted receive).
    RemoteInvalidRequest,
    /// Sender: the peer failed the operation on its side (e.g. its receive
    /// buffer's region was invalid).
    RemoteOperation,
    /// Sender: the peer had no receive posted (receiver not ready).
    RnrRetryExceeded,
    /// Sender: the peer did not answer (it is gone or its queue pair failed).
    RetryExceeded,
    /// A provider status with no name here.
    Other(u32),
}

impl WcStatus {
    /// Whether the work request succeeded.
    pub fn is_success(self) -> bool {
        self == WcStatus::Success
    }
}

/// Which operation a completion belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WcOpcode {
    /// A `SEND` or `SEND_WITH_IMM` (send queue).
    Send,
    /// An `RDMA_WRITE` or `RDMA_WRITE_WITH_IMM` (send queue).
    RdmaWrite,
    /// A message received into a posted receive.
    Recv,
    /// An `RDMA_WRITE_WITH_IMM` that consumed a posted receive; the data went
    /// to the region the writer named, `byte_len` is its length.
    RecvRdmaWithImm,
}

/// One work completion.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Completion {
    /// The id given when posting.
    pub wr_id: u64,
    /// The local queue pair it belongs to.
    pub qp_num: u32,
    /// The operation.
    pub opcode: WcOpcode,
    /// The outcome.
    pub status: WcStatus,
    /// Bytes received (receives) or transferred (sends and writes).
    pub byte_len: u32,
    /// Immediate data, for `*_WITH_IMM` operations.
    pub imm: Option<u32>,
}

/// A range of a local memory region: one scatter/gather element.
#[derive(Clone, Copy)]
pub struct Sge<'a> {
    /// The region.
    pub mr: &'a MemoryRegion,
    /// Start of the range inside the region.
    pub offset: usize,
    /// Length of the range.
    pub len: usize,
}

impl fmt::Debug for Sge<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Sge")
            .field("lkey", &self.mr.lkey())
            .field("offset", &self.offset)
            .field("len", &self.len)
            .finish()
    }
}

/// Where an RDMA write lands: an address inside a peer's region and its key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RemoteAddr {
    /// Address inside the remote region (as [`MemoryRegion::addr`] reported it).
    pub addr: u64,
    /// The remote region's key ([`MemoryRegion::rkey`]).
    pub rkey: u32,
}

/// A registered region as the peer needs to know it for RDMA writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RemoteRegion {
    /// Start address.
    pub addr: u64,
    /// Length in bytes.
    pub len: u64,
    /// Remote key.
    pub rkey: u32,
}

impl RemoteRegion {
    /// Encoded size of [`RemoteRegion::to_bytes`].
    pub const ENCODED_LEN: usize = 20;

    /// The address `offset` bytes into the region, or `None` past its end.
    pub fn at(&self, offset: u64) -> Option<RemoteAddr> {
        (offset <= self.len).then(|| RemoteAddr {
            addr: self.addr + offset,
            rkey: self.rkey,
        })
    }

    /// Little-endian encoding (address, length, key) for exchange with the peer.
    pub fn to_bytes(&self) -> [u8; Self::ENCODED_LEN] {
        let mut b = [0u8; Self::ENCODED_LEN];
        b[..8].copy_from_slice(&self.addr.to_le_bytes());
        b[8..16].copy_from_slice(&self.len.to_le_bytes());
        b[16..].copy_from_slice(&self.rkey.to_le_bytes());
        b
    }

    /// Decodes [`RemoteRegion::to_bytes`]; `None` unless exactly that long.
    pub fn from_bytes(b: &[u8]) -> Option<RemoteRegion> {
        if b.len() != Self::ENCODED_LEN {
            return None;
        }
        Some(RemoteRegion {
            addr: u64::from_le_bytes(b[..8].try_into().ok()?),
            len: u64::from_le_bytes(b[8..16].try_into().ok()?),
            rkey: u32::from_le_bytes(b[16..].try_into().ok()?),
        })
    }
}

/// The operation of a send work request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SendOp {
    /// Consumes a receive at the peer.
    Send,
    /// Consumes a receive at the peer, which also gets the immediate value.
    SendWithImm(u32),
    /// Writes into the peer's region; the peer sees no completion.
    RdmaWrite(RemoteAddr),
    /// Writes into the peer's region and consumes a receive there, which
    /// completes with the immediate value.
    RdmaWriteWithImm(RemoteAddr, u32),
}

/// A send-queue work request.
#[derive(Debug, Clone, Copy)]
pub struct SendWr<'a> {
    /// Returned in the completion.
    pub wr_id: u64,
    /// What to do.
    pub op: SendOp,
    /// The local data (`None`: a zero-length message, e.g. a notification).
    pub local: Option<Sge<'a>>,
    /// Whether a successful completion is generated. Errors always are. The
    /// send queue slots of unsignaled requests are freed when a later signaled
    /// completion of the same queue pair is polled.
    pub signaled: bool,
}

impl<'a> SendWr<'a> {
    /// A signaled request.
    pub fn new(wr_id: u64, op: SendOp, local: Option<Sge<'a>>) -> Self {
        SendWr {
            wr_id,
            op,
            local,
            signaled: true,
        }
    }

    /// The same request, signaled or not.
    pub fn signaled(mut self, signaled: bool) -> Self {
        self.signaled = signaled;
        self
    }

    /// Length of the local data.
    pub fn len(&self) -> usize {
        self.local.map_or(0, |s| s.len)
    }

    /// Whether it carries no data.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// A receive-queue work request.
#[derive(Debug, Clone, Copy)]
pub struct RecvWr<'a> {
    /// Returned in the completion.
    pub wr_id: u64,
    /// Where an incoming message goes (`None`: only zero-length messages and
    /// RDMA writes with immediate fit). The region needs `LOCAL_WRITE`.
    pub buf: Option<Sge<'a>>,
}

/// Creation parameters of a queue pair.
#[derive(Clone, Copy)]
pub struct QpInit<'a> {
    /// Completion queue for the send queue.
    pub send_cq: &'a CompletionQueue,
    /// Completion queue for the receive queue.
    pub recv_cq: &'a CompletionQueue,
    /// Most outstanding send work requests.
    pub max_send_wr: u32,
    /// Most outstanding receive work requests.
    pub max_recv_wr: u32,
}

/// What a peer needs to connect to a queue pair; opaque bytes to ship out of
/// band (for `soft`: shared-memory names and ids).
#[derive(Clone, PartialEq, Eq)]
pub struct Endpoint(Vec<u8>);

impl Endpoint {
    /// Wraps bytes received from the peer (checked at [`QueuePair::connect`]).
    pub fn from_bytes(bytes: &[u8]) -> Endpoint {
        Endpoint(bytes.to_vec())
    }

    /// The bytes to send to the peer.
    pub fn as_bytes(&self) -> &[u8] {
        &self.0
    }
}

impl fmt::Debug for Endpoint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Endpoint({} bytes)", self.0.len())
    }
}

// ---------------------------------------------------------------------------
// Provider interface.

pub(crate) trait ContextOps: Send + Sync {
    fn attr(&self) -> DeviceAttr;
    fn fabric(&self) -> Fabric {
        Fabric::SharedMemory
    }
    /// Whether registering existing process memory costs no more than a
    /// table entry (no page pinning, no adapter round trip).
    fn cheap_registration(&self) -> bool {
        false
    }
    fn alloc_pd(&self) -> Result<Arc<dyn PdOps>>;
    fn create_cq(&self, depth: u32) -> Result<Arc<dyn CqOps>>;
    /// The context's asynchronous events from now on.
    fn subscribe_events(&self) -> Receiver<AsyncEvent>;
}

pub(crate) trait PdOps: Send + Sync {
    fn alloc_mr(&self, len: usize, access: Access) -> Result<Arc<dyn MrOps>>;
    /// Registers `ptr..ptr + len` of this process in place.
    ///
    /// # Safety
    /// As [`ProtectionDomain::register`].
    #[allow(unsafe_code)]
    unsafe fn register(
        &self,
        _ptr: *mut u8,
        _len: usize,
        _access: Access,
    ) -> Result<Arc<dyn MrOps>> {
        Err(VerbsError::InvalidArgument(
            "this provider cannot register process memory".into(),
        ))
    }
    fn create_qp(&self, init: &QpInit<'_>) -> Result<Arc<dyn QpOps>>;
}

pub(crate) trait MrOps: Send + Sync {
    fn as_any(&self) -> &dyn Any;
    fn addr(&self) -> u64;
    fn len(&self) -> usize;
    fn lkey(&self) -> u32;
    fn rkey(&self) -> u32;
    fn access(&self) -> Access;
    /// Copies `dst.len()` bytes at `offset` (bounds checked by the caller).
    fn read_at(&self, offset: usize, dst: &mut [u8]);
    /// Copies `src` to `offset` (bounds checked by the caller).
    fn write_at(&self, offset: usize, src: &[u8]);
    fn as_ptr(&self) -> *mut u8;
}

pub(crate) trait CqOps: Send + Sync {
    fn as_any(&self) -> &dyn Any;
    fn depth(&self) -> u32;
    fn poll(&self, out: &mut [Completion]) -> Result<usize>;
    fn wait(&self, timeout: Duration) -> Result<bool>;
}

pub(crate) trait QpOps: Send + Sync {
    fn qp_num(&self) -> u32;
    fn state(&self) -> QpState;
    /// Whether the queue pair failed because the peer left (destroyed its
    /// queue pair, or its process ended) rather than a link or queue pair
    /// failing; `false` where the provider cannot tell.
    fn peer_left(&self) -> bool {
        false
    }
    fn endpoint(&self) -> Endpoint;
    fn connect(&self, remote: &Endpoint) -> Result<()>;
    fn post_send(&self, wrs: &[SendWr<'_>]) -> Result<()>;
    fn post_recv(&self, wrs: &[RecvWr<'_>]) -> Result<()>;
}

// ---------------------------------------------------------------------------
// Public handles.

/// An open device.
#[derive(Clone)]
pub struct Context {
    ops: Arc<dyn ContextOps>,
    info: DeviceInfo,
}

impl Context {
    /// Opens a device listed by [`devices`].
    pub fn open(info: &DeviceInfo) -> Result<Context> {
        match info.provider {
            Provider::Soft => Ok(Context {
                ops: soft::open()?,
                info: info.clone(),
            }),
            Provider::RdmaCore => Ok(Context {
                ops: rdma_core::open(&info.name)?,
                info: info.clone(),
            }),
        }
    }

    /// Opens the device named `name`.
    pub fn open_by_name(name: &str) -> Result<Context> {
        let all = devices();
        match all.iter().find(|d| d.name == name) {
            Some(d) => Context::open(d),
            None => {
                let mut available = all
                    .iter()
                    .map(|d| d.name.as_str())
                    .collect::<Vec<_>>()
                    .join(", ");
                if let Err(why) = rdma_core::availability() {
                    available.push_str(&format!("; no rdma-core device: {why}"));
                }
                Err(VerbsError::NoSuchDevice {
                    name: name.to_owned(),
                    available,
                })
            }
        }
    }

    /// The device.
    pub fn device(&self) -> &DeviceInfo {
        &self.info
    }

    /// The device's limits.
    pub fn attr(&self) -> DeviceAttr {
        self.ops.attr()
    }

    /// The network the device drives.
    pub fn fabric(&self) -> Fabric {
        self.ops.fabric()
    }

    /// Whether [`ProtectionDomain::register`] is cheap on this device (a table
    /// entry, no page pinning), so that a transfer may register the caller's
    /// buffer for its own duration instead of copying it into staging memory.
    pub fn cheap_registration(&self) -> bool {
        self.ops.cheap_registration()
    }

    /// The device's asynchronous events from now on, in order. When an event
    /// arrives here the queue pairs it concerns are already marked down; a
    /// receiver that is dropped unsubscribes.
    pub fn subscribe_events(&self) -> Receiver<AsyncEvent> {
        self.ops.subscribe_events()
    }

    /// Allocates a protection domain.
    pub fn alloc_pd(&self) -> Result<ProtectionDomain> {
        Ok(ProtectionDomain {
            ops: self.ops.alloc_pd()?,
        })
    }

    /// Creates a completion queue of `depth` entries.
    pub fn create_cq(&self, depth: u32) -> Result<CompletionQueue> {
        Ok(CompletionQueue {
            ops: self.ops.create_cq(depth)?,
        })
    }
}

impl fmt::Debug for Context {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Context")
            .field("device", &self.info)
            .finish()
    }
}

/// A protection domain: memory regions and queue pairs of one domain may be
/// used together.
#[derive(Clone)]
pub struct ProtectionDomain {
    ops: Arc<dyn PdOps>,
}

impl ProtectionDomain {
    /// Allocates and registers a zeroed region of `len` bytes.
    pub fn alloc_mr(&self, len: usize, access: Access) -> Result<MemoryRegion> {
        if access.contains(Access::REMOTE_WRITE) && !access.contains(Access::LOCAL_WRITE) {
            return Err(VerbsError::InvalidArgument(
                "REMOTE_WRITE requires LOCAL_WRITE".into(),
            ));
        }
        Ok(MemoryRegion {
            ops: self.ops.alloc_mr(len, access)?,
        })
    }

    /// Registers `len` bytes of this process's memory at `ptr` in place (as
    /// `ibv_reg_mr` does), so work requests can name them without a copy.
    /// Providers may restrict the rights (the `soft` provider registers
    /// process memory as a local source only: [`Access::NONE`]).
    ///
    /// # Safety
    /// The range must stay valid for reads (and for writes, with
    /// `LOCAL_WRITE`) until the region is dropped and every work request that
    /// names it has completed.
    #[allow(unsafe_code)]
    pub unsafe fn register(
        &self,
        ptr: *mut u8,
        len: usize,
        access: Access,
    ) -> Result<MemoryRegion> {
        if access.contains(Access::REMOTE_WRITE) && !access.contains(Access::LOCAL_WRITE) {
            return Err(VerbsError::InvalidArgument(
                "REMOTE_WRITE requires LOCAL_WRITE".into(),
            ));
        }
        // SAFETY: forwarded contract.
        let ops = unsafe { self.ops.register(ptr, len, access)? };
        Ok(MemoryRegion { ops })
    }

    /// Creates a reliable-connected queue pair in the `Init` state.
    pub fn create_qp(&self, init: &QpInit<'_>) -> Result<QueuePair> {
        Ok(QueuePair {
            ops: self.ops.create_qp(init)?,
        })
    }
}

impl fmt::Debug for ProtectionDomain {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("ProtectionDomain")
    }
}

/// A registered memory region. Dropping the last handle deregisters it: keep it
/// alive until the completions of the work requests that use it are polled (a
/// receive posted on a deregistered region completes with an error; data of
/// an RDMA write into it is rejected with [`WcStatus::RemoteAccess`]).
#[derive(Clone)]
pub struct MemoryRegion {
    ops: Arc<dyn MrOps>,
}

impl MemoryRegion {
    /// Start address, as the peer names it in [`RemoteAddr`].
    pub fn addr(&self) -> u64 {
        self.ops.addr()
    }

    /// Length in bytes.
    pub fn len(&self) -> usize {
        self.ops.len()
    }

    /// Whether the region is empty (never: regions have at least one byte).
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Local key.
    pub fn lkey(&self) -> u32 {
        self.ops.lkey()
    }

    /// Remote key.
    pub fn rkey(&self) -> u32 {
        self.ops.rkey()
    }

    /// Access rights.
    pub fn access(&self) -> Access {
        self.ops.access()
    }

    /// What the peer needs to RDMA-write into this region.
    pub fn remote(&self) -> RemoteRegion {
        RemoteRegion {
            addr: self.addr(),
            len: self.len() as u64,
            rkey: self.rkey(),
        }
    }

    /// A scatter/gather element over `offset..offset + len` (checked at post).
    pub fn sge(&self, offset: usize, len: usize) -> Sge<'_> {
        Sge {
            mr: self,
            offset,
            len,
        }
    }

    /// The address of `offset` for a peer's RDMA write.
    pub fn remote_addr(&self, offset: usize) -> RemoteAddr {
        RemoteAddr {
            addr: self.addr().wrapping_add(offset as u64),
            rkey: self.rkey(),
        }
    }

    fn check(&self, offset: usize, len: usize) -> Result<()> {
        match offset.checked_add(len) {
            Some(end) if end <= self.len() => Ok(()),
            _ => Err(VerbsError::OutOfBounds {
                offset,
                len,
                size: self.len(),
            }),
        }
    }

    /// Copies bytes out of the region. Bytes that a peer writes concurrently
    /// may be seen partly; synchronise through completions.
    pub fn read(&self, offset: usize, dst: &mut [u8]) -> Result<()> {
        self.check(offset, dst.len())?;
        self.ops.read_at(offset, dst);
        Ok(())
    }

    /// Copies bytes into the region.
    pub fn write(&self, offset: usize, src: &[u8]) -> Result<()> {
        self.check(offset, src.len())?;
        self.ops.write_at(offset, src);
        Ok(())
    }

    /// The start of the region for zero-copy use (e.g. handing a staging chunk
    /// to a device copy). The memory may be written by the peer at any time it
    /// holds the key; the caller synchronises through completions.
    pub fn as_ptr(&self) -> *mut u8 {
        self.ops.as_ptr()
    }

    pub(crate) fn ops(&self) -> &dyn MrOps {
        &*self.ops
    }
}

impl fmt::Debug for MemoryRegion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MemoryRegion")
            .field("addr", &format_args!("{:#x}", self.addr()))
            .field("len", &self.len())
            .field("lkey", &format_args!("{:#x}", self.lkey()))
            .field("access", &self.access())
            .finish()
    }
}

/// A completion queue.
#[derive(Clone)]
pub struct CompletionQueue {
    ops: Arc<dyn CqOps>,
}

impl CompletionQueue {
    /// Its depth.
    pub fn depth(&self) -> u32 {
        self.ops.depth()
    }

    /// Moves up to `out.len()` completions into `out`; returns how many. Never
    /// blocks (busy polling). Completions of one queue come in posting order.
    pub fn poll(&self, out: &mut [Completion]) -> Result<usize> {
        self.ops.poll(out)
    }

    /// Sleeps until a completion can be polled (`true`) or `timeout` passes
    /// (`false`): wait-for-event. Consumes nothing.
    pub fn wait(&self, timeout: Duration) -> Result<bool> {
        self.ops.wait(timeout)
    }

    /// Polls, waiting for events up to `timeout` when nothing is there yet.
    pub fn poll_wait(&self, out: &mut [Completion], timeout: Duration) -> Result<usize> {
        let deadline = Instant::now() + timeout;
        loop {
            let n = self.poll(out)?;
            if n > 0 || out.is_empty() {
                return Ok(n);
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() || !self.wait(left)? {
                return self.poll(out);
            }
        }
    }

    pub(crate) fn ops(&self) -> &dyn CqOps {
        &*self.ops
    }
}

impl fmt::Debug for CompletionQueue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CompletionQueue")
            .field("depth", &self.depth())
            .finish()
    }
}

/// A reliable-connected queue pair.
pub struct QueuePair {
    ops: Arc<dyn QpOps>,
}

impl QueuePair {
    /// Its number.
    pub fn qp_num(&self) -> u32 {
        self.ops.qp_num()
    }

    /// Its state.
    pub fn state(&self) -> QpState {
        self.ops.state()
    }

    /// Whether a failure of this queue pair came from the peer leaving (it
    /// destroyed its queue pair, or its process ended) rather than a link
    /// or queue pair failing. Providers that cannot tell say `false`.
    pub fn peer_left(&self) -> bool {
        self.ops.peer_left()
    }

    /// What the peer must pass to its [`QueuePair::connect`].
    pub fn endpoint(&self) -> Endpoint {
        self.ops.endpoint()
    }

    /// Connects to the peer's queue pair (moves to `ReadyToSend`).
    pub fn connect(&self, remote: &Endpoint) -> Result<()> {
        self.ops.connect(remote)
    }

    /// Posts send work requests, all or none (see the module notes). Fails at
    /// once with [`VerbsError::LinkDown`] once an event marked it down.
    pub fn post_send(&self, wrs: &[SendWr<'_>]) -> Result<()> {
        self.ops.post_send(wrs)
    }

    /// Posts receive work requests, all or none; fails at once on a queue
    /// pair marked down, as [`QueuePair::post_send`].
    pub fn post_recv(&self, wrs: &[RecvWr<'_>]) -> Result<()> {
        self.ops.post_recv(wrs)
    }
}

impl fmt::Debug for QueuePair {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("QueuePair")
            .field("qp_num", &self.qp_num())
            .field("state", &self.state())
            .finish()
    }
}
