//! Asynchronous events of an adapter: one thread per open `ibv_context`
//! reads them (`ibv_get_async_event`), acknowledges each at once
//! (`ibv_ack_async_event`) and marks the queue pairs concerned down, so that
//! a broken link fails the connections on it at once instead of after the
//! transport's retry timeouts (seconds on InfiniBand).
//!
//! The thread sleeps in `poll(2)` on the context's async descriptor (made
//! non-blocking) and on a pipe that wakes it when the last [`Ctx`] of the
//! context is dropped; the context is closed only after the thread ended.
//! Several [`Ctx`] may wrap one `ibv_context` (librdmacm shares one per
//! device): they share one listener, counted in a process-wide table.
//!
//! [`Ctx`]: super::provider

use std::collections::HashMap;
use std::ffi::{c_int, c_uint, c_void};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, Weak};
use std::thread::JoinHandle;

use super::api::{errno, Ibverbs};
use super::provider::QpCore;
use super::sys::{ibv_context, ibv_qp};
use crate::verbs::{AsyncEvent, EventHub};

// `enum ibv_event_type` of verbs.h (the values are ABI).
pub(super) const IBV_EVENT_CQ_ERR: c_uint = 0;
pub(super) const IBV_EVENT_QP_FATAL: c_uint = 1;
pub(super) const IBV_EVENT_QP_REQ_ERR: c_uint = 2;
pub(super) const IBV_EVENT_QP_ACCESS_ERR: c_uint = 3;
pub(super) const IBV_EVENT_COMM_EST: c_uint = 4;
pub(super) const IBV_EVENT_SQ_DRAINED: c_uint = 5;
pub(super) const IBV_EVENT_PATH_MIG: c_uint = 6;
pub(super) const IBV_EVENT_PATH_MIG_ERR: c_uint = 7;
pub(super) const IBV_EVENT_DEVICE_FATAL: c_uint = 8;
pub(super) const IBV_EVENT_PORT_ACTIVE: c_uint = 9;
pub(super) const IBV_EVENT_PORT_ERR: c_uint = 10;
pub(super) const IBV_EVENT_LID_CHANGE: c_uint = 11;
pub(super) const IBV_EVENT_PKEY_CHANGE: c_uint = 12;
pub(super) const IBV_EVENT_SM_CHANGE: c_uint = 13;
pub(super) const IBV_EVENT_QP_LAST_WQE_REACHED: c_uint = 16;
pub(super) const IBV_EVENT_CLIENT_REREGISTER: c_uint = 17;
pub(super) const IBV_EVENT_GID_CHANGE: c_uint = 18;

/// `union { struct ibv_cq *cq; struct ibv_qp *qp; struct ibv_srq *srq;
/// struct ibv_wq *wq; int port_num; }` of `struct ibv_async_event`
/// (written from verbs.h: bindgen's allow-list of `sys.rs` does not cover
/// the async-event API; the layout is checked against the stand-in).
#[repr(C)]
#[derive(Clone, Copy)]
pub(super) union ibv_async_event_element {
    pub(super) cq: *mut c_void,
    pub(super) qp: *mut ibv_qp,
    pub(super) srq: *mut c_void,
    pub(super) wq: *mut c_void,
    pub(super) port_num: c_int,
}

/// `struct ibv_async_event` of verbs.h.
#[repr(C)]
#[derive(Clone, Copy)]
pub(super) struct ibv_async_event {
    pub(super) element: ibv_async_event_element,
    pub(super) event_type: c_uint,
}

impl Default for ibv_async_event {
    fn default() -> Self {
        ibv_async_event {
            element: ibv_async_event_element {
                cq: std::ptr::null_mut(),
            },
            event_type: 0,
        }
    }
}

/// What the element of an event names, read before it is acknowledged.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Element {
    /// A queue pair, by number.
    Qp(u32),
    /// A port number as the adapter gave it.
    Port(c_int),
    /// A completion queue, shared receive queue or work queue, or nothing.
    Other,
}

/// How to read the element of an event of type `event_type`.
pub(super) fn element_kind(event_type: c_uint) -> ElementKind {
    match event_type {
        IBV_EVENT_QP_FATAL
        | IBV_EVENT_QP_REQ_ERR
        | IBV_EVENT_QP_ACCESS_ERR
        | IBV_EVENT_COMM_EST
        | IBV_EVENT_SQ_DRAINED
        | IBV_EVENT_PATH_MIG
        | IBV_EVENT_PATH_MIG_ERR
        | IBV_EVENT_QP_LAST_WQE_REACHED => ElementKind::Qp,
        IBV_EVENT_PORT_ACTIVE
        | IBV_EVENT_PORT_ERR
        | IBV_EVENT_LID_CHANGE
        | IBV_EVENT_PKEY_CHANGE
        | IBV_EVENT_SM_CHANGE
        | IBV_EVENT_CLIENT_REREGISTER
        | IBV_EVENT_GID_CHANGE => ElementKind::Port,
        _ => ElementKind::Other,
    }
}

/// Which member of the element union an event type uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum ElementKind {
    Qp,
    Port,
    Other,
}

/// The provider-independent event of a raw one; `None` for events that
/// change nothing here (they are logged).
///
/// The three affiliated queue-pair errors move the queue pair to the error
/// state (InfiniBand spec., 11.6.3): all are a fatal error of that queue
/// pair.
pub(super) fn translate(event_type: c_uint, element: Element) -> Option<AsyncEvent> {
    let port = || match element {
        Element::Port(p) => u8::try_from(p).ok(),
        _ => None,
    };
    match event_type {
        IBV_EVENT_QP_FATAL | IBV_EVENT_QP_REQ_ERR | IBV_EVENT_QP_ACCESS_ERR => match element {
            Element::Qp(qp_num) => Some(AsyncEvent::QpFatal { qp_num }),
            _ => None,
        },
        IBV_EVENT_DEVICE_FATAL => Some(AsyncEvent::DeviceFatal),
        IBV_EVENT_PORT_ERR => port().map(|port| AsyncEvent::PortError { port }),
        IBV_EVENT_PORT_ACTIVE => port().map(|port| AsyncEvent::PortActive { port }),
        IBV_EVENT_LID_CHANGE => port().map(|port| AsyncEvent::LidChange { port }),
        _ => None,
    }
}

/// A readable name of a raw event type, for the log.
pub(super) fn event_name(event_type: c_uint) -> &'static str {
    match event_type {
        IBV_EVENT_CQ_ERR => "CQ_ERR",
        IBV_EVENT_QP_FATAL => "QP_FATAL",
        IBV_EVENT_QP_REQ_ERR => "QP_REQ_ERR",
        IBV_EVENT_QP_ACCESS_ERR => "QP_ACCESS_ERR",
        IBV_EVENT_COMM_EST => "COMM_EST",
        IBV_EVENT_SQ_DRAINED => "SQ_DRAINED",
        IBV_EVENT_PATH_MIG => "PATH_MIG",
        IBV_EVENT_PATH_MIG_ERR => "PATH_MIG_ERR",
        IBV_EVENT_DEVICE_FATAL => "DEVICE_FATAL",
        IBV_EVENT_PORT_ACTIVE => "PORT_ACTIVE",
        IBV_EVENT_PORT_ERR => "PORT_ERR",
        IBV_EVENT_LID_CHANGE => "LID_CHANGE",
        IBV_EVENT_PKEY_CHANGE => "PKEY_CHANGE",
        IBV_EVENT_SM_CHANGE => "SM_CHANGE",
        IBV_EVENT_CLIENT_REREGISTER => "CLIENT_REREGISTER",
        IBV_EVENT_GID_CHANGE => "GID_CHANGE",
        _ => "other",
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// What the listener of one `ibv_context` shares with the provider's
/// objects: the queue pairs an event reaches and the subscribers.
#[derive(Default)]
pub(super) struct Shared {
    stop: AtomicBool,
    qps: Mutex<HashMap<u32, (u8, Weak<QpCore>)>>,
    pub(super) hub: EventHub,
}

impl Shared {
    /// Lists a queue pair on `port` for the events.
    pub(super) fn add_qp(&self, num: u32, port: u8, qp: &Arc<QpCore>) {
        let mut qps = lock(&self.qps);
        qps.retain(|_, (_, w)| w.strong_count() > 0);
        qps.insert(num, (port, Arc::downgrade(qp)));
    }

    /// Marks the queue pairs `event` concerns down and delivers it; returns
    /// how many were marked.
    pub(super) fn apply(&self, device: &str, event: AsyncEvent) -> usize {
        let hit: Vec<Arc<QpCore>> = lock(&self.qps)
            .iter()
            .filter(|(num, (port, _))| match event {
                AsyncEvent::PortError { port: p } => *port == p,
                AsyncEvent::DeviceFatal => true,
                AsyncEvent::QpFatal { qp_num } => **num == qp_num,
                _ => false,
            })
            .filter_map(|(_, (_, w))| w.upgrade())
            .collect();
        let marked = hit.iter().filter(|qp| qp.mark_down(event)).count();
        match event {
            AsyncEvent::LidChange { .. } => tracing::info!(
                device,
                "RDMA {event}: nothing is cached by LID (connections resolve the peer's name \
                 or GID through RDMA CM), so the next connection uses the new one"
            ),
            e if e.is_fatal() => {
                tracing::warn!(
                    device,
                    queue_pairs = marked,
                    "RDMA {event}: links marked down"
                )
            }
            _ => tracing::info!(device, "RDMA {event}"),
        }
        // Dropped here, on this thread: the queue pairs may be the last
        // handles, which is fine (nothing below touches the context).
        drop(hit);
        self.hub.publish(event);
        marked
    }
}

/// One listener per `ibv_context`, shared by the [`Ctx`](super::provider)s
/// that wrap it.
struct Listener {
    shared: Arc<Shared>,
    users: usize,
    thread: Option<JoinHandle<()>>,
    /// Write end of the pipe that wakes the thread to stop.
    wake: Option<std::fs::File>,
}

fn listeners() -> &'static Mutex<HashMap<usize, Listener>> {
    static ALL: std::sync::OnceLock<Mutex<HashMap<usize, Listener>>> = std::sync::OnceLock::new();
    ALL.get_or_init(|| Mutex::new(HashMap::new()))
}

/// A [`Ctx`](super::provider)'s hold on the listener of its context; dropped
/// (before the context is closed) it stops the thread if it was the last.
pub(super) struct Attachment {
    raw: usize,
    pub(super) shared: Arc<Shared>,
}

/// Attaches to the listener of `raw`, starting it on first use. Without an
/// async descriptor (or a thread) the events are simply not seen: queue
/// pairs still fail through their completions, later.
pub(super) fn attach(lib: &'static Ibverbs, raw: *mut ibv_context, device: &str) -> Attachment {
    let key = raw as usize;
    let mut all = lock(listeners());
    if let Some(l) = all.get_mut(&key) {
        l.users += 1;
        return Attachment {
            raw: key,
            shared: l.shared.clone(),
        };
    }
    let shared = Arc::new(Shared::default());
    let (thread, wake) = match start(lib, raw, device, shared.clone()) {
        Ok((t, w)) => (Some(t), Some(w)),
        Err(e) => {
            tracing::warn!(
                device,
                "not listening for RDMA asynchronous events ({e}): a broken link is seen only \
                 when the adapter's retries time out"
            );
            (None, None)
        }
    };
    all.insert(
        key,
        Listener {
            shared: shared.clone(),
            users: 1,
            thread,
            wake,
        },
    );
    Attachment { raw: key, shared }
}

impl Drop for Attachment {
    fn drop(&mut self) {
        let last = {
            let mut all = lock(listeners());
            match all.get_mut(&self.raw) {
                Some(l) if l.users > 1 => {
                    l.users -= 1;
                    None
                }
                Some(_) => all.remove(&self.raw),
                None => None,
            }
        };
        let Some(mut l) = last else { return };
        l.shared.stop.store(true, Ordering::Release);
        if let Some(mut w) = l.wake.take() {
            use std::io::Write;
            let _ = w.write_all(&[1]);
        }
        if let Some(t) = l.thread.take() {
            // The listener itself may drop the last handle of a queue pair
            // and so of the context: it only checks `stop` afterwards.
            if t.thread().id() != std::thread::current().id() {
                let _ = t.join();
            }
        }
    }
}

/// A raw pointer that the listener thread may carry: the context outlives
/// the thread (joined before it is closed).
struct SendPtr(*mut ibv_context);
// SAFETY: libibverbs contexts may be used from any thread.
unsafe impl Send for SendPtr {}

fn set_nonblocking(fd: c_int) -> std::io::Result<()> {
    // SAFETY: fcntl on a descriptor; touches no memory.
    let flags = unsafe { libc::fcntl(fd, libc::F_GETFL) };
    // SAFETY: as above.
    if flags < 0 || unsafe { libc::fcntl(fd, libc::F_SETFL, flags | libc::O_NONBLOCK) } < 0 {
        return Err(errno());
    }
    Ok(())
}

fn start(
    lib: &'static Ibverbs,
    raw: *mut ibv_context,
    device: &str,
    shared: Arc<Shared>,
) -> std::io::Result<(JoinHandle<()>, std::fs::File)> {
    use std::os::fd::FromRawFd;
    // SAFETY: `raw` is a live context.
    let async_fd = unsafe { (*raw).async_fd };
    if async_fd < 0 {
        return Err(std::io::Error::other("the context has no async descriptor"));
    }
    set_nonblocking(async_fd)?;
    let mut fds = [0 as c_int; 2];
    // SAFETY: `fds` has room for the two descriptors.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC | libc::O_NONBLOCK) } != 0 {
        return Err(errno());
    }
    // SAFETY: both descriptors were just created and are owned here.
    let (rd, wr) = unsafe {
        (
            std::fs::File::from_raw_fd(fds[0]),
            std::fs::File::from_raw_fd(fds[1]),
        )
    };
    let ctx = SendPtr(raw);
    let name = device.to_owned();
    let t = std::thread::Builder::new()
        .name(format!("rdma-events-{device}"))
        .spawn(move || {
            let ctx = ctx;
            run(lib, ctx.0, async_fd, rd, &name, &shared);
        })?;
    Ok((t, wr))
}

fn run(
    lib: &'static Ibverbs,
    raw: *mut ibv_context,
    async_fd: c_int,
    wake: std::fs::File,
    device: &str,
    shared: &Shared,
) {
    use std::os::fd::AsRawFd;
    while !shared.stop.load(Ordering::Acquire) {
        let mut fds = [
            libc::pollfd {
                fd: async_fd,
                events: libc::POLLIN,
                revents: 0,
            },
            libc::pollfd {
                fd: wake.as_raw_fd(),
                events: libc::POLLIN,
                revents: 0,
            },
        ];
        // SAFETY: `fds` is a valid array of two pollfd.
        let n = unsafe { libc::poll(fds.as_mut_ptr(), 2, 1000) };
        if n < 0 {
            let e = errno();
            if e.kind() == std::io::ErrorKind::Interrupted {
                continue;
            }
            tracing::warn!(device, "polling for RDMA asynchronous events failed: {e}");
            return;
        }
        if fds[1].revents != 0 {
            continue;
        }
        if fds[0].revents & libc::POLLIN == 0 {
            if fds[0].revents & (libc::POLLERR | libc::POLLHUP | libc::POLLNVAL) != 0 {
                // Nothing more will come (and polling again would spin).
                tracing::warn!(
                    device,
                    "the async descriptor failed (revents {:#x}): no more RDMA events",
                    fds[0].revents
                );
                return;
            }
            continue;
        }
        // The listener may have dropped the context's last handle while
        // handling an event: nothing may touch the context after that.
        while !shared.stop.load(Ordering::Acquire) {
            let mut ev = ibv_async_event::default();
            // SAFETY: live context (joined before it closes); `ev` is a valid
            // out-pointer; the descriptor is non-blocking.
            if unsafe { (lib.get_async_event)(raw, &mut ev) } != 0 {
                break;
            }
            let element = match element_kind(ev.event_type) {
                // SAFETY: the adapter set the member that the type names;
                // the queue pair lives until the event is acknowledged.
                ElementKind::Qp => match unsafe { ev.element.qp } {
                    qp if qp.is_null() => Element::Other,
                    // SAFETY: as above.
                    qp => Element::Qp(unsafe { (*qp).qp_num }),
                },
                // SAFETY: as above.
                ElementKind::Port => Element::Port(unsafe { ev.element.port_num }),
                ElementKind::Other => Element::Other,
            };
            // Acknowledged before anything else: destroying a queue pair
            // waits for the acknowledgement of its events.
            // SAFETY: `ev` came from `get_async_event` and is acked once.
            unsafe { (lib.ack_async_event)(&mut ev) };
            match translate(ev.event_type, element) {
                Some(event) => {
                    shared.apply(device, event);
                }
                None => tracing::info!(
                    device,
                    "RDMA asynchronous event {} ({}) on {element:?}: nothing to do",
                    event_name(ev.event_type),
                    ev.event_type
                ),
            }
        }
    }
}
