//! Connection management through RDMA CM (librdmacm), for the set-up
//! sequence of the CSR and MSR modules: the agent picks a port, sends it to
//! the client over the TCP bootstrap, and the client connects to that port.
//!
//! ```text
//! agent (server)                                 client
//! let (listener, port) = CmListener::bind(ip)?;
//! // send `port` over TCP  ────────────────────▶  // receive `port`
//!                                                let mut p = cm::resolve((ip, port).into(), t)?;
//! let mut p = listener.get_request(t)?;           // same steps as the agent:
//! let ctx = p.context().clone();                 let ctx = p.context().clone();
//! let pd = ctx.alloc_pd()?;                      let pd = ctx.alloc_pd()?;
//! let cq = ctx.create_cq(depth)?;                let cq = ctx.create_cq(depth)?;
//! // register staging regions on `pd` …
//! let qp = p.create_qp(&pd, &QpInit { … })?;     let qp = p.create_qp(&pd, &QpInit { … })?;
//! qp.post_recv(&receives)?;                      qp.post_recv(&receives)?;
//! p.establish(t)?;  // rdma_accept               p.establish(t)?;  // rdma_connect
//! // `qp` is ready to send                       // `qp` is ready to send
//! ```
//!
//! - The context of a connection is the one librdmacm picked for the address
//!   (`id->verbs`), known only once the request arrives (agent) or the route
//!   is resolved (client): protection domains, completion queues and regions
//!   must be created on [`CmPending::context`], after those steps.
//! - [`CmPending::create_qp`] creates the queue pair with `rdma_create_qp` in
//!   the caller's protection domain; librdmacm moves it through INIT, RTR
//!   and RTS during [`CmPending::establish`]. Receives may be posted before.
//! - Every wait has a timeout and returns [`CmError::Timeout`]; nothing
//!   blocks for longer. Each connection gets its own event channel, so
//!   agents never share RDMA CM state (the listener's channel only carries
//!   connection requests).
//! - The connection lives as long as its [`QueuePair`]: dropping it
//!   disconnects and destroys the id (after the context's other objects are
//!   gone). A [`CmPending`] dropped before `establish` rejects the request.
//! - Only the rdma-core provider takes part: the `soft` provider connects by
//!   exchanging endpoints ([`QueuePair::connect`]).

use std::any::Any;
use std::ffi::{c_int, CStr};
use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::time::{Duration, Instant};

use thiserror::Error;

use super::api::{self, errno, Rdmacm};
use super::provider::{self, CmTarget, QpCore};
use super::sys::*;
use super::Unavailable;
use crate::verbs::{
    Context, DeviceInfo, ProtectionDomain, Provider, QpInit, QueuePair, VerbsError,
};

/// Connection requests queued at a listener before it takes them.
const BACKLOG: c_int = 16;
/// Responder resources and initiator depth (RDMA reads in flight): the
/// modules use none, one is the smallest value every adapter accepts.
const RD_ATOMIC: u8 = 1;
const RETRY_COUNT: u8 = 7;
const RNR_RETRY: u8 = 3;

/// Why a connection-management step failed.
#[derive(Debug, Error)]
pub enum CmError {
    /// librdmacm (or libibverbs) is missing.
    #[error("RDMA CM unavailable: {0}")]
    Unavailable(#[from] Unavailable),
    /// A librdmacm call failed.
    #[error("{call} failed: {source}")]
    Call {
        /// The call.
        call: &'static str,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
    /// No event came in time.
    #[error("RDMA CM: no {waiting_for} within {after:?}")]
    Timeout {
        /// The awaited event.
        waiting_for: &'static str,
        /// The timeout.
        after: Duration,
    },
    /// Another event than the awaited one came (rejected, unreachable …).
    #[error(
        "RDMA CM: waiting for {waiting_for}, got {got} (status {status}){}",
        event_hint(.got, *.status)
    )]
    Unexpected {
        /// The awaited event.
        waiting_for: &'static str,
        /// librdmacm's name of the event that came.
        got: String,
        /// The event's status (a negative errno or a CM reject reason).
        status: i32,
    },
    /// `establish` before `create_qp`, or `create_qp` twice.
    #[error("RDMA CM: {0}")]
    Misuse(&'static str),
    /// A verbs call on the connection's context failed.
    #[error(transparent)]
    Verbs(#[from] VerbsError),
}

type Result<T> = std::result::Result<T, CmError>;

/// What an unexpected event usually means, for the error message.
fn event_hint(got: &str, status: i32) -> &'static str {
    // REJECTED carries the InfiniBand CM reject reason (IB and RoCE) or a
    // negative errno (iWARP).
    const IB_REJ_INVALID_SERVICE_ID: i32 = 8;
    const IB_REJ_CONSUMER_DEFINED: i32 = 28;
    match got {
        "RDMA_CM_EVENT_REJECTED" => match status {
            IB_REJ_INVALID_SERVICE_ID => {
                ": nobody listens at that address and port (reject reason: invalid service ID)"
            }
            s if s == -libc::ECONNREFUSED => {
                ": nobody listens at that address and port (connection refused)"
            }
            IB_REJ_CONSUMER_DEFINED => ": the peer rejected the connection or gave it up",
            _ => ": the peer or the fabric rejected the connection",
        },
        "RDMA_CM_EVENT_UNREACHABLE" => ": the peer did not answer (unreachable or not running)",
        "RDMA_CM_EVENT_ADDR_ERROR" => {
            ": no RDMA device reaches that address (is it on an IPoIB or RoCE interface?)"
        }
        "RDMA_CM_EVENT_ROUTE_ERROR" => ": no route to that address over the RDMA fabric",
        "RDMA_CM_EVENT_DISCONNECTED" => ": the peer disconnected",
        _ => "",
    }
}

fn call(call: &'static str) -> CmError {
    CmError::Call {
        call,
        source: errno(),
    }
}

/// An RDMA CM id with its own event channel; both destroyed on drop.
struct CmId {
    cm: &'static Rdmacm,
    raw: *mut rdma_cm_id,
    channel: *mut rdma_event_channel,
}

// SAFETY: librdmacm's calls are thread-safe; the id is used by one owner at
// a time (the listener, the pending connection, then its queue pair).
unsafe impl Send for CmId {}
// SAFETY: as for `Send`.
unsafe impl Sync for CmId {}

impl Drop for CmId {
    fn drop(&mut self) {
        // SAFETY: the id's queue pair (if any) is gone (it held this id);
        // every event taken from the channel was acknowledged. A channel
        // whose id is still there is left alone (leaked), not freed under it.
        unsafe {
            if !self.raw.is_null() && (self.cm.destroy_id)(self.raw) != 0 {
                tracing::warn!("rdma_destroy_id failed: {}", errno());
                return;
            }
            (self.cm.destroy_event_channel)(self.channel);
        }
    }
}

fn new_channel(cm: &'static Rdmacm) -> Result<*mut rdma_event_channel> {
    // SAFETY: no arguments.
    let channel = unsafe { (cm.create_event_channel)() };
    if channel.is_null() {
        let source = errno();
        let hint = match source.raw_os_error() {
            Some(libc::ENODEV) | Some(libc::ENOENT) => {
                " (no /dev/infiniband/rdma_cm: load the rdma_ucm kernel module and an adapter's driver)"
            }
            _ => "",
        };
        return Err(CmError::Call {
            call: "rdma_create_event_channel",
            source: std::io::Error::new(source.kind(), format!("{source}{hint}")),
        });
    }
    // Non-blocking: waits poll(2) the descriptor with a timeout instead.
    // SAFETY: the channel's descriptor is open; fcntl touches no memory.
    let ok = unsafe {
        let fd = (*channel).fd;
        let flags = libc::fcntl(fd, libc::F_GETFL);
        flags >= 0 && libc::fcntl(fd, libc::F_SETFL, flags | libc::O_NONBLOCK) >= 0
    };
    if !ok {
        let e = call("fcntl(O_NONBLOCK) on the RDMA CM channel");
        // SAFETY: created above, used by nothing.
        unsafe { (cm.destroy_event_channel)(channel) };
        return Err(e);
    }
    Ok(channel)
}

impl CmId {
    /// A new id on a new channel.
    fn new(cm: &'static Rdmacm) -> Result<CmId> {
        let channel = new_channel(cm)?;
        let mut id = CmId {
            cm,
            raw: std::ptr::null_mut(),
            channel,
        };
        // SAFETY: live channel; valid out-pointer.
        let ret =
            unsafe { (cm.create_id)(channel, &mut id.raw, std::ptr::null_mut(), RDMA_PS_TCP) };
        if ret != 0 {
            id.raw = std::ptr::null_mut();
            return Err(call("rdma_create_id"));
        }
        Ok(id)
    }

    /// Waits for the next event on the channel, acknowledged.
    fn next_event(
        &self,
        waiting_for: &'static str,
        deadline: Instant,
        timeout: Duration,
    ) -> Result<Event> {
        loop {
            let mut ev: *mut rdma_cm_event = std::ptr::null_mut();
            // SAFETY: live non-blocking channel; valid out-pointer.
            if unsafe { (self.cm.get_cm_event)(self.channel, &mut ev) } == 0 && !ev.is_null() {
                // SAFETY: a live event until acknowledged below.
                let e = unsafe {
                    Event {
                        kind: (*ev).event,
                        status: (*ev).status,
                        id: (*ev).id,
                    }
                };
                // SAFETY: taken above, acknowledged once.
                unsafe { (self.cm.ack_cm_event)(ev) };
                return Ok(e);
            }
            let e = errno();
            if e.kind() != std::io::ErrorKind::WouldBlock {
                return Err(CmError::Call {
                    call: "rdma_get_cm_event",
                    source: e,
                });
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Err(CmError::Timeout {
                    waiting_for,
                    after: timeout,
                });
            }
            let ms = left.as_micros().div_ceil(1000).min(i32::MAX as u128) as c_int;
            let mut pfd = libc::pollfd {
                // SAFETY: live channel.
                fd: unsafe { (*self.channel).fd },
                events: libc::POLLIN,
                revents: 0,
            };
            // SAFETY: one valid pollfd.
            if unsafe { libc::poll(&mut pfd, 1, ms) } < 0 {
                let e = errno();
                if e.kind() != std::io::ErrorKind::Interrupted {
                    return Err(CmError::Call {
                        call: "poll on the RDMA CM channel",
                        source: e,
                    });
                }
            }
        }
    }

    /// Waits for `want`; any other event for this id is an error.
    fn expect(
        &self,
        want: rdma_cm_event_type,
        waiting_for: &'static str,
        timeout: Duration,
    ) -> Result<()> {
        let deadline = Instant::now() + timeout;
        let e = self.next_event(waiting_for, deadline, timeout)?;
        if e.kind == want && e.status == 0 {
            return Ok(());
        }
        Err(CmError::Unexpected {
            waiting_for,
            got: event_name(self.cm, e.kind),
            status: e.status,
        })
    }
}

struct Event {
    kind: rdma_cm_event_type,
    status: c_int,
    id: *mut rdma_cm_id,
}

fn event_name(cm: &Rdmacm, kind: rdma_cm_event_type) -> String {
    // SAFETY: returns a static string for any value.
    let p = unsafe { (cm.event_str)(kind) };
    if p.is_null() {
        return format!("event {kind}");
    }
    // SAFETY: non-null static NUL-terminated string.
    unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned()
}

/// A listening RDMA CM id on an address (the agent's side).
pub struct CmListener {
    id: CmId,
    port: u16,
}

impl std::fmt::Debug for CmListener {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CmListener")
            .field("port", &self.port)
            .finish()
    }
}

impl CmListener {
    /// Listens on `ip` at a port the system picks; returns it. `ip` must be
    /// an address of an RDMA interface (IPoIB or the RoCE netdev), or the
    /// unspecified address for all.
    pub fn bind(ip: IpAddr) -> Result<(CmListener, u16)> {
        let cm = api::rdmacm()?;
        api::ibverbs()?;
        let id = CmId::new(cm)?;
        let addr = socket2::SockAddr::from(SocketAddr::new(ip, 0));
        // SAFETY: live id; `addr` is a valid sockaddr that librdmacm copies.
        if unsafe { (cm.bind_addr)(id.raw, addr.as_ptr().cast_mut()) } != 0 {
            return Err(call("rdma_bind_addr"));
        }
        // SAFETY: live, bound id.
        if unsafe { (cm.listen)(id.raw, BACKLOG) } != 0 {
            return Err(call("rdma_listen"));
        }
        // SAFETY: live, bound id.
        let port = u16::from_be(unsafe { (cm.get_src_port)(id.raw) });
        Ok((CmListener { id, port }, port))
    }

    /// The port it listens on.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// Waits up to `timeout` for a connection request.
    pub fn get_request(&self, timeout: Duration) -> Result<CmPending> {
        let cm = self.id.cm;
        let deadline = Instant::now() + timeout;
        loop {
            let e = self
                .id
                .next_event("connection request", deadline, timeout)?;
            if e.kind != RDMA_CM_EVENT_CONNECT_REQUEST {
                if e.kind == RDMA_CM_EVENT_DEVICE_REMOVAL {
                    return Err(CmError::Unexpected {
                        waiting_for: "connection request",
                        got: event_name(cm, e.kind),
                        status: e.status,
                    });
                }
                // Events of requests given up by their clients: nothing to do.
                tracing::debug!(event = %event_name(cm, e.kind), "RDMA CM listener: ignored");
                continue;
            }
            // The request's id arrived on the listener's channel: give it
            // its own, so that this connection's events stay with it.
            let channel = match new_channel(cm) {
                Ok(channel) => channel,
                Err(err) => {
                    // SAFETY: the request's live id, owned by nothing here:
                    // refused, then destroyed (its event was acknowledged).
                    unsafe {
                        (cm.reject)(e.id, std::ptr::null(), 0);
                        (cm.destroy_id)(e.id);
                    }
                    return Err(err);
                }
            };
            let id = CmId {
                cm,
                raw: e.id,
                channel,
            };
            // SAFETY: both live; the request's event was acknowledged.
            if unsafe { (cm.migrate_id)(id.raw, channel) } != 0 {
                let err = call("rdma_migrate_id");
                // SAFETY: live request id; rejected before `id` destroys it.
                unsafe { (cm.reject)(id.raw, std::ptr::null(), 0) };
                return Err(err);
            }
            return CmPending::new(id, true);
        }
    }
}

/// Resolves the agent's address and route (the client's side); the result
/// is connected with [`CmPending::establish`].
pub fn resolve(addr: SocketAddr, timeout: Duration) -> Result<CmPending> {
    let cm = api::rdmacm()?;
    api::ibverbs()?;
    let id = CmId::new(cm)?;
    let ms = c_int::try_from(timeout.as_millis().max(1)).unwrap_or(c_int::MAX);
    let dst = socket2::SockAddr::from(addr);
    // SAFETY: live id; `dst` is a valid sockaddr that librdmacm copies.
    let ret =
        unsafe { (cm.resolve_addr)(id.raw, std::ptr::null_mut(), dst.as_ptr().cast_mut(), ms) };
    if ret != 0 {
        return Err(call("rdma_resolve_addr"));
    }
    id.expect(RDMA_CM_EVENT_ADDR_RESOLVED, "address resolution", timeout)?;
    // SAFETY: live id with a resolved address.
    if unsafe { (cm.resolve_route)(id.raw, ms) } != 0 {
        return Err(call("rdma_resolve_route"));
    }
    id.expect(RDMA_CM_EVENT_ROUTE_RESOLVED, "route resolution", timeout)?;
    CmPending::new(id, false)
}

/// A connection being set up: a request taken by the agent, or a resolved
/// route on the client.
pub struct CmPending {
    id: Arc<CmId>,
    passive: bool,
    context: Context,
    qp: Option<Arc<QpCore>>,
    established: bool,
}

impl std::fmt::Debug for CmPending {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CmPending")
            .field("passive", &self.passive)
            .field("context", &self.context)
            .finish()
    }
}

impl CmPending {
    fn new(id: CmId, passive: bool) -> Result<CmPending> {
        // SAFETY: live id, bound to a device by the request or the route.
        let (verbs, port) = unsafe { ((*id.raw).verbs, (*id.raw).port_num) };
        let id = Arc::new(id);
        if verbs.is_null() {
            return Err(CmError::Misuse("the RDMA CM id has no device"));
        }
        let keep: Arc<dyn Any + Send + Sync> = id.clone();
        let (ops, name) = provider::cm_context(verbs, port, keep)?;
        Ok(CmPending {
            id,
            passive,
            context: Context {
                ops,
                info: DeviceInfo {
                    name,
                    provider: Provider::RdmaCore,
                },
            },
            qp: None,
            established: false,
        })
    }

    /// The device the connection runs on: create its protection domain,
    /// completion queues and regions here.
    pub fn context(&self) -> &Context {
        &self.context
    }

    /// Creates the connection's queue pair in `pd` (of [`Self::context`]).
    pub fn create_qp(&mut self, pd: &ProtectionDomain, init: &QpInit<'_>) -> Result<QueuePair> {
        if self.qp.is_some() {
            return Err(CmError::Misuse("the connection already has a queue pair"));
        }
        let target = CmTarget {
            cm: self.id.cm,
            id: self.id.raw,
            keep: self.id.clone(),
        };
        let (qp, core) = provider::create_cm_qp(pd, init, target)?;
        self.qp = Some(core);
        Ok(qp)
    }

    /// Accepts the request (agent) or connects (client) and waits up to
    /// `timeout` for the connection to be established.
    pub fn establish(mut self, timeout: Duration) -> Result<()> {
        let Some(core) = self.qp.clone() else {
            return Err(CmError::Misuse("create_qp before establish"));
        };
        let cm = self.id.cm;
        let mut param = rdma_conn_param {
            responder_resources: RD_ATOMIC,
            initiator_depth: RD_ATOMIC,
            retry_count: RETRY_COUNT,
            rnr_retry_count: RNR_RETRY,
            ..Default::default()
        };
        // SAFETY: live id with its queue pair; `param` is valid for the call.
        let (ret, what) = unsafe {
            if self.passive {
                ((cm.accept)(self.id.raw, &mut param), "rdma_accept")
            } else {
                ((cm.connect)(self.id.raw, &mut param), "rdma_connect")
            }
        };
        if ret != 0 {
            return Err(call(what));
        }
        // Accepted or not, the request is answered: no reject on drop.
        self.established = true;
        self.id
            .expect(RDMA_CM_EVENT_ESTABLISHED, "established connection", timeout)?;
        core.mark_connected();
        Ok(())
    }
}

impl Drop for CmPending {
    fn drop(&mut self) {
        if self.passive && !self.established {
            // SAFETY: live request id, not answered yet.
            unsafe { (self.id.cm.reject)(self.id.raw, std::ptr::null(), 0) };
        }
    }
}
