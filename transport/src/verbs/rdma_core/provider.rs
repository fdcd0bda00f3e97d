//! The provider's objects over libibverbs (see the module notes in `mod.rs`).

use std::any::Any;
use std::cell::RefCell;
use std::collections::{HashMap, VecDeque};
use std::ffi::{c_int, CStr};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::Receiver;
use std::sync::{Arc, Mutex, MutexGuard, OnceLock, Weak};
use std::time::{Duration, Instant};

use super::api::{self, errno, status_error, Ibverbs, Rdmacm};
use super::endpoint::Address;
use super::events::{self, Attachment};
use super::sys::*;
use super::Unavailable;
use crate::verbs::{
    Access, AsyncEvent, Completion, CompletionQueue, ContextOps, CqOps, DeviceAttr, Endpoint,
    Fabric, MrOps, PdOps, QpInit, QpOps, QpState, RecvWr, Result, SendOp, SendWr, Sge, VerbsError,
    WcOpcode, WcStatus,
};

/// Minimum RNR NAK timer: 0.64 ms (`12` in the encoding of the IB spec).
const MIN_RNR_TIMER: u8 = 12;
/// Local ACK timeout: 4.096 µs × 2^14 ≈ 67 ms.
const ACK_TIMEOUT: u8 = 14;
const RETRY_COUNT: u8 = 7;
const RNR_RETRY: u8 = 3;
/// Hop limit of the global route header (RoCE v2 may cross IP routers).
const HOP_LIMIT: u8 = 64;
/// The high bit of the adapter's `wr_id`: a receive; the rest is the
/// sequence number of the request in its queue.
const RECV_BIT: u64 = 1 << 63;
/// Completions read from the adapter per `ibv_poll_cq` call.
const POLL_BATCH: usize = 32;

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

fn io(what: impl Into<String>, source: std::io::Error) -> VerbsError {
    VerbsError::Io {
        what: what.into(),
        source,
    }
}

/// Whether an errno from a creation call means "the adapter is out of
/// that resource" rather than a mistake.
fn is_exhaustion(e: &std::io::Error) -> bool {
    matches!(
        e.raw_os_error(),
        Some(libc::ENOMEM) | Some(libc::ENOSPC) | Some(libc::EAGAIN)
    )
}

fn random_psn() -> u32 {
    use std::collections::hash_map::RandomState;
    use std::hash::{BuildHasher, Hasher};
    let mut h = RandomState::new().build_hasher();
    h.write_u64(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos() as u64),
    );
    (h.finish() as u32) & 0x00FF_FFFF
}

// ---------------------------------------------------------------------------
// Devices.

/// `ibv_get_device_list`, freed on drop.
struct DeviceList {
    lib: &'static Ibverbs,
    raw: *mut *mut ibv_device,
    len: usize,
}

impl DeviceList {
    fn get(lib: &'static Ibverbs) -> std::result::Result<DeviceList, Unavailable> {
        let mut n: c_int = 0;
        // SAFETY: `n` is a valid out-pointer; the list is freed in `drop`.
        let raw = unsafe { (lib.get_device_list)(&mut n) };
        if raw.is_null() {
            let e = errno();
            // Without the kernel's uverbs support, rdma-core reports ENOSYS.
            if e.raw_os_error() == Some(libc::ENOSYS) {
                return Err(Unavailable::NoDevice);
            }
            return Err(Unavailable::DeviceList(e.to_string()));
        }
        Ok(DeviceList {
            lib,
            raw,
            len: usize::try_from(n).unwrap_or(0),
        })
    }

    fn iter(&self) -> impl Iterator<Item = *mut ibv_device> + '_ {
        // SAFETY: the list holds `len` device pointers (NULL-terminated after).
        (0..self.len).map(|i| unsafe { *self.raw.add(i) })
    }

    fn name(&self, dev: *mut ibv_device) -> String {
        device_name(self.lib, dev)
    }
}

impl Drop for DeviceList {
    fn drop(&mut self) {
        // SAFETY: `raw` came from `ibv_get_device_list` and is freed once;
        // contexts opened from it stay valid (verbs.h allows this).
        unsafe { (self.lib.free_device_list)(self.raw) }
    }
}

fn device_name(lib: &Ibverbs, dev: *mut ibv_device) -> String {
    // SAFETY: `dev` is a live device; the name is a NUL-terminated string
    // inside it.
    let p = unsafe { (lib.get_device_name)(dev) };
    if p.is_null() {
        return String::from("?");
    }
    // SAFETY: non-null, NUL-terminated, valid while the device is.
    unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned()
}

pub(super) fn device_names() -> std::result::Result<Vec<String>, Unavailable> {
    let lib = api::ibverbs()?;
    let list = DeviceList::get(lib)?;
    Ok(list.iter().map(|d| list.name(d)).collect())
}

pub(super) enum OpenError {
    Unavailable(Unavailable),
    Verbs(VerbsError),
}

pub(super) fn open(name: &str) -> std::result::Result<Arc<dyn ContextOps>, OpenError> {
    let lib = api::ibverbs().map_err(OpenError::Unavailable)?;
    let list = DeviceList::get(lib).map_err(OpenError::Unavailable)?;
    let Some(dev) = list.iter().find(|d| list.name(*d) == name) else {
        return Err(OpenError::Verbs(VerbsError::NoSuchDevice {
            name: name.to_owned(),
            available: list
                .iter()
                .map(|d| list.name(d))
                .collect::<Vec<_>>()
                .join(", "),
        }));
    };
    // SAFETY: `dev` is an entry of the live list.
    let raw = unsafe { (lib.open_device)(dev) };
    if raw.is_null() {
        return Err(OpenError::Verbs(io(
            format!("ibv_open_device({name})"),
            errno(),
        )));
    }
    let ctx = Ctx::new(lib, raw, CtxOwner::Opened, None).map_err(OpenError::Verbs)?;
    Ok(Arc::new(RdmaContext(Arc::new(ctx))))
}

/// A context opened by librdmacm for a connection: `keep` holds what keeps
/// it open (the connection's id).
pub(super) fn cm_context(
    raw: *mut ibv_context,
    port: u8,
    keep: Arc<dyn Any + Send + Sync>,
) -> Result<(Arc<dyn ContextOps>, String)> {
    let lib = api::ibverbs().map_err(|e| {
        io(
            "loading libibverbs for an RDMA CM connection",
            std::io::Error::other(e.to_string()),
        )
    })?;
    let ctx = Ctx::new(lib, raw, CtxOwner::Cm(keep), Some(port))?;
    let name = ctx.name.clone();
    Ok((Arc::new(RdmaContext(Arc::new(ctx))), name))
}

// ---------------------------------------------------------------------------
// Contexts.

enum CtxOwner {
    /// Opened here, closed on drop.
    Opened,
    /// librdmacm's context; kept open by the connection held here.
    Cm(#[allow(dead_code)] Arc<dyn Any + Send + Sync>),
}

struct Ctx {
    lib: &'static Ibverbs,
    raw: *mut ibv_context,
    owner: CtxOwner,
    name: String,
    attr: DeviceAttr,
    port: u8,
    gid_index: u8,
    fabric: Fabric,
    /// The listener of the context's asynchronous events; released before
    /// the context is closed.
    events: Option<Attachment>,
}

// SAFETY: libibverbs objects may be used from any thread (the verbs are
// thread-safe by specification); the pointers are only dereferenced through
// the library.
unsafe impl Send for Ctx {}
// SAFETY: as for `Send`.
unsafe impl Sync for Ctx {}

impl Drop for Ctx {
    fn drop(&mut self) {
        // Stops the event listener (if this was its last user) before the
        // context can be closed.
        drop(self.events.take());
        if let CtxOwner::Opened = self.owner {
            // SAFETY: opened by us; every object on it holds an `Arc` of
            // this context, so none is left.
            let ret = unsafe { (self.lib.close_device)(self.raw) };
            if ret != 0 {
                tracing::warn!(device = %self.name, "ibv_close_device failed: {}", status_error(ret));
            }
        }
    }
}

fn env_u8(var: &str) -> Option<u8> {
    let v = std::env::var(var).ok()?;
    match v.parse() {
        Ok(n) => Some(n),
        Err(_) => {
            tracing::warn!("{var}={v} is not a number from 0 to 255; ignored");
            None
        }
    }
}

impl Ctx {
    /// Wraps `raw` (closed on drop if `owner` says so, even on error) and
    /// reads its limits, port and GID index.
    fn new(
        lib: &'static Ibverbs,
        raw: *mut ibv_context,
        owner: CtxOwner,
        port: Option<u8>,
    ) -> Result<Ctx> {
        // SAFETY: `raw` is a live context; `device` is set by libibverbs.
        let name = device_name(lib, unsafe { (*raw).device });
        let mut ctx = Ctx {
            lib,
            raw,
            owner,
            name,
            attr: DeviceAttr {
                max_qp_wr: 0,
                max_cqe: 0,
                max_mr: 0,
                max_mr_size: 0,
                max_msg_size: 0,
            },
            port: 1,
            gid_index: 0,
            fabric: Fabric::InfiniBand,
            events: None,
        };
        let mut da = ibv_device_attr::default();
        // SAFETY: `da` is a valid out-pointer of the right type.
        let ret = unsafe { (lib.query_device)(raw, &mut da) };
        if ret != 0 {
            return Err(io(
                format!("ibv_query_device({})", ctx.name),
                status_error(ret),
            ));
        }
        let ports = da.phys_port_cnt.max(1);
        ctx.port = match port.or_else(|| env_u8("RCUD_RDMA_PORT")) {
            Some(p) => p,
            None => (1..=ports)
                .find(|&p| ctx.port_attr(p).is_ok_and(|a| a.state == IBV_PORT_ACTIVE))
                .unwrap_or_else(|| {
                    tracing::warn!(device = %ctx.name, "no active port; using port 1");
                    1
                }),
        };
        let pa = ctx.port_attr(ctx.port)?;
        // SAFETY: `raw` is a live context whose `device` libibverbs set.
        let transport = unsafe { (*(*raw).device).transport_type };
        ctx.fabric = if transport == IBV_TRANSPORT_IWARP {
            Fabric::Iwarp
        } else if u32::from(pa.link_layer) == IBV_LINK_LAYER_ETHERNET {
            Fabric::Roce
        } else {
            Fabric::InfiniBand
        };
        ctx.gid_index = match env_u8("RCUD_RDMA_GID_INDEX") {
            Some(i) => i,
            None => ctx.choose_gid(&pa),
        };
        ctx.attr = DeviceAttr {
            max_qp_wr: u32::try_from(da.max_qp_wr).unwrap_or(0),
            max_cqe: u32::try_from(da.max_cqe).unwrap_or(0),
            max_mr: u32::try_from(da.max_mr).unwrap_or(0),
            max_mr_size: da.max_mr_size,
            max_msg_size: pa.max_msg_sz,
        };
        ctx.events = Some(events::attach(lib, raw, &ctx.name));
        Ok(ctx)
    }

    fn port_attr(&self, port: u8) -> Result<ibv_port_attr> {
        let mut pa = ibv_port_attr::default();
        // SAFETY: `pa` is a zeroed full `ibv_port_attr`, at least as large as
        // what the exported entry point fills (see `Ibverbs::query_port`).
        let ret = unsafe { (self.lib.query_port)(self.raw, port, &mut pa) };
        if ret != 0 {
            return Err(io(
                format!("ibv_query_port({} port {port})", self.name),
                status_error(ret),
            ));
        }
        Ok(pa)
    }

    fn gid(&self, port: u8, index: u8) -> Option<[u8; 16]> {
        let mut gid = ibv_gid::default();
        // SAFETY: `gid` is a valid out-pointer.
        let ret = unsafe { (self.lib.query_gid)(self.raw, port, c_int::from(index), &mut gid) };
        // SAFETY: every bit pattern is a valid `raw` array.
        let raw = unsafe { gid.raw };
        (ret == 0).then_some(raw)
    }

    /// InfiniBand: index 0. RoCE: the first RoCE v2 GID that maps an IPv4
    /// address (routable, what RDMA CM picks too), else the first valid one.
    fn choose_gid(&self, pa: &ibv_port_attr) -> u8 {
        if u32::from(pa.link_layer) != IBV_LINK_LAYER_ETHERNET {
            return 0;
        }
        let len = u8::try_from(pa.gid_tbl_len.clamp(0, 255)).unwrap_or(0);
        let valid: Vec<(u8, [u8; 16])> = (0..len)
            .filter_map(|i| self.gid(self.port, i).map(|g| (i, g)))
            .filter(|(_, g)| *g != [0; 16])
            .collect();
        let v2_ipv4 = valid.iter().find(|(i, g)| {
            let ty = std::fs::read_to_string(format!(
                "/sys/class/infiniband/{}/ports/{}/gid_attrs/types/{i}",
                self.name, self.port
            ))
            .unwrap_or_default();
            ty.contains("v2") && g[..10] == [0; 10] && g[10..12] == [0xff, 0xff]
        });
        v2_ipv4.or(valid.first()).map_or(0, |(i, _)| *i)
    }
}

struct RdmaContext(Arc<Ctx>);

impl ContextOps for RdmaContext {
    fn attr(&self) -> DeviceAttr {
        self.0.attr
    }

    fn fabric(&self) -> Fabric {
        self.0.fabric
    }

    fn subscribe_events(&self) -> Receiver<AsyncEvent> {
        match &self.0.events {
            Some(a) => a.shared.hub.subscribe(),
            // Not reached: every context listens once opened.
            None => std::sync::mpsc::channel().1,
        }
    }

    fn alloc_pd(&self) -> Result<Arc<dyn PdOps>> {
        let ctx = &self.0;
        // SAFETY: live context.
        let raw = unsafe { (ctx.lib.alloc_pd)(ctx.raw) };
        if raw.is_null() {
            return Err(io(format!("ibv_alloc_pd({})", ctx.name), errno()));
        }
        Ok(Arc::new(RdmaPd(Arc::new(PdCore {
            ctx: ctx.clone(),
            raw,
        }))))
    }

    fn create_cq(&self, depth: u32) -> Result<Arc<dyn CqOps>> {
        let ctx = &self.0;
        if depth == 0 || depth > ctx.attr.max_cqe {
            return Err(VerbsError::InvalidArgument(format!(
                "completion queue depth {depth} (1..={} on {})",
                ctx.attr.max_cqe, ctx.name
            )));
        }
        // SAFETY: live context.
        let channel = unsafe { (ctx.lib.create_comp_channel)(ctx.raw) };
        if channel.is_null() {
            return Err(io("ibv_create_comp_channel", errno()));
        }
        // Non-blocking, so that draining events never sleeps when another
        // thread took them first.
        // SAFETY: `fd` is the channel's open descriptor.
        let fd = unsafe { (*channel).fd };
        // SAFETY: fcntl on a descriptor we hold touches no memory.
        let flags = unsafe { libc::fcntl(fd, libc::F_GETFL) };
        // SAFETY: as above.
        if flags < 0 || unsafe { libc::fcntl(fd, libc::F_SETFL, flags | libc::O_NONBLOCK) } < 0 {
            let e = errno();
            // SAFETY: created above, used by nothing.
            unsafe { (ctx.lib.destroy_comp_channel)(channel) };
            return Err(io("making the completion channel non-blocking", e));
        }
        // SAFETY: live context and channel; depth checked against the limit.
        let raw = unsafe {
            (ctx.lib.create_cq)(ctx.raw, depth as c_int, std::ptr::null_mut(), channel, 0)
        };
        if raw.is_null() {
            let e = errno();
            // SAFETY: created above, used by nothing.
            unsafe { (ctx.lib.destroy_comp_channel)(channel) };
            return Err(io(format!("ibv_create_cq(depth {depth})"), e));
        }
        Ok(Arc::new(RdmaCq(Arc::new(CqCore {
            ctx: ctx.clone(),
            raw,
            channel,
            depth,
            stash: Mutex::new(VecDeque::new()),
            qps: Mutex::new(HashMap::new()),
        }))))
    }
}

// ---------------------------------------------------------------------------
// Protection domains and memory regions.

struct PdCore {
    ctx: Arc<Ctx>,
    raw: *mut ibv_pd,
}

// SAFETY: see `Ctx`.
unsafe impl Send for PdCore {}
// SAFETY: see `Ctx`.
unsafe impl Sync for PdCore {}

impl Drop for PdCore {
    fn drop(&mut self) {
        // SAFETY: every region and queue pair of the domain holds an `Arc`
        // of it, so none is left.
        let ret = unsafe { (self.ctx.lib.dealloc_pd)(self.raw) };
        if ret != 0 {
            tracing::warn!("ibv_dealloc_pd failed: {}", status_error(ret));
        }
    }
}

/// Where the next queue pair of this thread is created: set by the
/// connection manager around `ProtectionDomain::create_qp`, so that the
/// caller's domain is used without exposing provider internals.
pub(super) struct CmTarget {
    pub(super) cm: &'static Rdmacm,
    pub(super) id: *mut rdma_cm_id,
    pub(super) keep: Arc<dyn Any + Send + Sync>,
}

thread_local! {
    static CM_TARGET: RefCell<Option<CmTarget>> = const { RefCell::new(None) };
    static CM_CREATED: RefCell<Option<Arc<QpCore>>> = const { RefCell::new(None) };
}

/// Creates the queue pair of a connection with `rdma_create_qp` in `pd`
/// (which must be this provider's, on the id's context). Returns the queue
/// pair and its core, to mark it connected once established.
pub(super) fn create_cm_qp(
    pd: &crate::verbs::ProtectionDomain,
    init: &QpInit<'_>,
    target: CmTarget,
) -> Result<(crate::verbs::QueuePair, Arc<QpCore>)> {
    CM_TARGET.with(|t| *t.borrow_mut() = Some(target));
    CM_CREATED.with(|c| *c.borrow_mut() = None);
    let qp = pd.create_qp(init);
    let unused = CM_TARGET.with(|t| t.borrow_mut().take());
    let core = CM_CREATED.with(|c| c.borrow_mut().take());
    match (qp, unused, core) {
        (Ok(qp), None, Some(core)) => Ok((qp, core)),
        (Err(e), _, _) => Err(e),
        _ => Err(VerbsError::Foreign("protection domain")),
    }
}

struct RdmaPd(Arc<PdCore>);

impl PdOps for RdmaPd {
    fn alloc_mr(&self, len: usize, access: Access) -> Result<Arc<dyn MrOps>> {
        let pd = &self.0;
        if len == 0 {
            return Err(VerbsError::InvalidArgument(
                "memory region of zero bytes".into(),
            ));
        }
        if len as u64 > pd.ctx.attr.max_mr_size {
            return Err(VerbsError::Limit {
                what: "memory region size",
                max: pd.ctx.attr.max_mr_size,
            });
        }
        let mapping = Mapping::new(len)?;
        let mut flags = 0;
        if access.contains(Access::LOCAL_WRITE) {
            flags |= IBV_ACCESS_LOCAL_WRITE;
        }
        if access.contains(Access::REMOTE_WRITE) {
            flags |= IBV_ACCESS_REMOTE_WRITE;
        }
        // SAFETY: `mapping` covers `len` bytes and outlives the registration
        // (both are owned by the region, deregistered first on drop).
        let raw = unsafe { (pd.ctx.lib.reg_mr)(pd.raw, mapping.ptr.cast(), len, flags as c_int) };
        if raw.is_null() {
            let e = errno();
            if is_exhaustion(&e) {
                tracing::debug!(len, "ibv_reg_mr: {e}");
                return Err(VerbsError::Limit {
                    what: "memory registration (adapter resources or the locked-memory limit, \
                           see `ulimit -l`)",
                    max: pd.ctx.attr.max_mr.into(),
                });
            }
            return Err(io(format!("ibv_reg_mr({len} bytes)"), e));
        }
        // SAFETY: `raw` is the live region just registered.
        let (lkey, rkey) = unsafe { ((*raw).lkey, (*raw).rkey) };
        Ok(Arc::new(RdmaMr {
            pd: pd.clone(),
            raw,
            mapping,
            len,
            lkey,
            rkey,
            access,
        }))
    }

    fn create_qp(&self, init: &QpInit<'_>) -> Result<Arc<dyn QpOps>> {
        let target = CM_TARGET.with(|t| t.borrow_mut().take());
        let for_cm = target.is_some();
        let core = QpCore::create(&self.0, init, target)?;
        if for_cm {
            CM_CREATED.with(|c| *c.borrow_mut() = Some(core.clone()));
        }
        Ok(Arc::new(RdmaQp(core)))
    }
}

/// Page-aligned anonymous memory, zeroed, unmapped on drop.
struct Mapping {
    ptr: *mut u8,
    len: usize,
}

impl Mapping {
    fn new(len: usize) -> Result<Mapping> {
        // SAFETY: sysconf reads a configuration value.
        let page = usize::try_from(unsafe { libc::sysconf(libc::_SC_PAGESIZE) })
            .ok()
            .filter(|p| p.is_power_of_two())
            .unwrap_or(4096);
        let mapped = len
            .checked_add(page - 1)
            .map(|l| l & !(page - 1))
            .ok_or_else(|| VerbsError::InvalidArgument(format!("region of {len} bytes")))?;
        // SAFETY: a fresh private anonymous mapping aliases nothing.
        let ptr = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                mapped,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        if ptr == libc::MAP_FAILED {
            return Err(io(
                format!("mapping {mapped} bytes for a memory region"),
                errno(),
            ));
        }
        Ok(Mapping {
            ptr: ptr.cast(),
            len: mapped,
        })
    }
}

impl Drop for Mapping {
    fn drop(&mut self) {
        // SAFETY: our own mapping, no longer registered.
        unsafe { libc::munmap(self.ptr.cast(), self.len) };
    }
}

struct RdmaMr {
    pd: Arc<PdCore>,
    raw: *mut ibv_mr,
    /// Declared after `raw`; dropped after deregistration (see `Drop`).
    mapping: Mapping,
    len: usize,
    lkey: u32,
    rkey: u32,
    access: Access,
}

// SAFETY: see `Ctx`; the memory is shared with the adapter and peers by
// design, callers synchronise through completions.
unsafe impl Send for RdmaMr {}
// SAFETY: as for `Send`.
unsafe impl Sync for RdmaMr {}

impl Drop for RdmaMr {
    fn drop(&mut self) {
        // SAFETY: registered by us, deregistered once; `mapping` is unmapped
        // only after this (fields drop after `drop`).
        let ret = unsafe { (self.pd.ctx.lib.dereg_mr)(self.raw) };
        if ret != 0 {
            tracing::warn!("ibv_dereg_mr failed: {}", status_error(ret));
        }
    }
}

impl MrOps for RdmaMr {
    fn as_any(&self) -> &dyn Any {
        self
    }
    fn addr(&self) -> u64 {
        self.mapping.ptr as u64
    }
    fn len(&self) -> usize {
        self.len
    }
    fn lkey(&self) -> u32 {
        self.lkey
    }
    fn rkey(&self) -> u32 {
        self.rkey
    }
    fn access(&self) -> Access {
        self.access
    }
    fn read_at(&self, offset: usize, dst: &mut [u8]) {
        // SAFETY: the caller checked `offset + dst.len() <= len`; the region
        // is plain memory (a concurrent remote write may be seen in part, as
        // documented on `MemoryRegion::read`).
        unsafe {
            std::ptr::copy_nonoverlapping(self.mapping.ptr.add(offset), dst.as_mut_ptr(), dst.len())
        }
    }
    fn write_at(&self, offset: usize, src: &[u8]) {
        // SAFETY: bounds checked by the caller, as for `read_at`.
        unsafe {
            std::ptr::copy_nonoverlapping(src.as_ptr(), self.mapping.ptr.add(offset), src.len())
        }
    }
    fn as_ptr(&self) -> *mut u8 {
        self.mapping.ptr
    }
}

/// The region behind `sge`, checked: this provider's, in `pd`, in bounds,
/// with `need`.
fn check_sge(sge: &Sge<'_>, pd: &Arc<PdCore>, need: Access) -> Result<(u64, u32)> {
    let mr: &RdmaMr = match sge.mr.ops().as_any().downcast_ref::<RdmaMr>() {
        Some(m) if Arc::ptr_eq(&m.pd, pd) => m,
        _ => return Err(VerbsError::Foreign("memory region")),
    };
    if !mr.access.contains(need) {
        return Err(VerbsError::InvalidArgument(format!(
            "memory region {:#x} lacks {need:?}",
            mr.lkey
        )));
    }
    match sge.offset.checked_add(sge.len) {
        Some(end) if end <= mr.len && sge.len as u64 <= u64::from(pd.ctx.attr.max_msg_size) => {
            Ok((mr.mapping.ptr as u64 + sge.offset as u64, mr.lkey))
        }
        _ => Err(VerbsError::OutOfBounds {
            offset: sge.offset,
            len: sge.len,
            size: mr.len,
        }),
    }
}

// ---------------------------------------------------------------------------
// Completion queues.

struct CqCore {
    ctx: Arc<Ctx>,
    raw: *mut ibv_cq,
    channel: *mut ibv_comp_channel,
    depth: u32,
    /// Completions taken from the adapter while waiting, not yet polled.
    stash: Mutex<VecDeque<ibv_wc>>,
    /// The queue pairs that use this queue, by number, to translate ids.
    qps: Mutex<HashMap<u32, Weak<QpCore>>>,
}

// SAFETY: see `Ctx`.
unsafe impl Send for CqCore {}
// SAFETY: see `Ctx`.
unsafe impl Sync for CqCore {}

impl Drop for CqCore {
    fn drop(&mut self) {
        // SAFETY: every queue pair using this queue holds an `Arc` of it, so
        // none is left; every event taken from the channel was acknowledged.
        let ret = unsafe { (self.ctx.lib.destroy_cq)(self.raw) };
        if ret != 0 {
            tracing::warn!("ibv_destroy_cq failed: {}", status_error(ret));
        }
        // SAFETY: its only queue is gone.
        let ret = unsafe { (self.ctx.lib.destroy_comp_channel)(self.channel) };
        if ret != 0 {
            tracing::warn!("ibv_destroy_comp_channel failed: {}", status_error(ret));
        }
    }
}

impl CqCore {
    /// `ibv_poll_cq`, through the context's ops table as verbs.h does.
    fn poll_hw(&self, buf: &mut [ibv_wc]) -> Result<usize> {
        // SAFETY: `raw` and its context are live; the ops table is filled by
        // the provider library at open.
        let poll = unsafe { (*(*self.raw).context).ops.poll_cq };
        let Some(poll) = poll else {
            return Err(io(
                "ibv_poll_cq",
                std::io::Error::other("the provider has no poll_cq"),
            ));
        };
        let n = buf.len().min(c_int::MAX as usize) as c_int;
        // SAFETY: `buf` holds `n` writable entries.
        let ret = unsafe { poll(self.raw, n, buf.as_mut_ptr()) };
        if ret < 0 {
            return Err(io("ibv_poll_cq", status_error(-ret)));
        }
        Ok(ret as usize)
    }

    /// `ibv_req_notify_cq(cq, 0)`, through the ops table.
    fn arm(&self) -> Result<()> {
        // SAFETY: as in `poll_hw`.
        let notify = unsafe { (*(*self.raw).context).ops.req_notify_cq };
        let Some(notify) = notify else {
            return Err(io(
                "ibv_req_notify_cq",
                std::io::Error::other("the provider has no req_notify_cq"),
            ));
        };
        // SAFETY: live queue.
        let ret = unsafe { notify(self.raw, 0) };
        if ret != 0 {
            return Err(io("ibv_req_notify_cq", status_error(ret)));
        }
        Ok(())
    }

    /// Takes and acknowledges every event waiting on the channel.
    fn drain_events(&self) {
        loop {
            let mut cq: *mut ibv_cq = std::ptr::null_mut();
            let mut cq_ctx = std::ptr::null_mut();
            // SAFETY: live non-blocking channel; valid out-pointers.
            let ret = unsafe { (self.ctx.lib.get_cq_event)(self.channel, &mut cq, &mut cq_ctx) };
            if ret != 0 || cq.is_null() {
                return;
            }
            // SAFETY: `cq` is the queue the event belongs to (ours: the
            // channel serves only this queue); one event taken, one acked.
            unsafe { (self.ctx.lib.ack_cq_events)(cq, 1) };
        }
    }

    /// The caller's view of an adapter completion; `None` for a queue pair
    /// that no longer exists.
    fn decode(&self, wc: &ibv_wc) -> Option<Completion> {
        let qp = lock(&self.qps).get(&wc.qp_num)?.upgrade()?;
        let is_recv = wc.wr_id & RECV_BIT != 0;
        let seq = wc.wr_id & !RECV_BIT;
        let slot = {
            let mut ring = lock(if is_recv { &qp.recv } else { &qp.send });
            ring.done = ring.done.max(seq);
            ring.slot(seq)
        };
        let status = match wc.status {
            IBV_WC_SUCCESS => WcStatus::Success,
            IBV_WC_LOC_LEN_ERR => WcStatus::LocalLength,
            IBV_WC_LOC_PROT_ERR => WcStatus::LocalProtection,
            IBV_WC_WR_FLUSH_ERR => WcStatus::WrFlush,
            IBV_WC_REM_ACCESS_ERR => WcStatus::RemoteAccess,
            IBV_WC_REM_INV_REQ_ERR => WcStatus::RemoteInvalidRequest,
            IBV_WC_REM_OP_ERR => WcStatus::RemoteOperation,
            IBV_WC_RNR_RETRY_EXC_ERR => WcStatus::RnrRetryExceeded,
            IBV_WC_RETRY_EXC_ERR => WcStatus::RetryExceeded,
            other => WcStatus::Other(other),
        };
        let ok = status.is_success();
        // The adapter defines opcode and byte_len only for successful
        // completions (byte_len only for receives): the rest is ours.
        let (opcode, byte_len) = if is_recv {
            let op = if ok && wc.opcode == IBV_WC_RECV_RDMA_WITH_IMM {
                WcOpcode::RecvRdmaWithImm
            } else {
                WcOpcode::Recv
            };
            (op, if ok { wc.byte_len } else { 0 })
        } else {
            let op = if slot.write {
                WcOpcode::RdmaWrite
            } else {
                WcOpcode::Send
            };
            (op, if ok { slot.len } else { 0 })
        };
        let imm = (ok && is_recv && wc.wc_flags & IBV_WC_WITH_IMM != 0)
            // SAFETY: both members of the union are 32-bit integers.
            .then(|| u32::from_be(unsafe { wc.__bindgen_anon_1.imm_data }));
        Some(Completion {
            wr_id: slot.wr_id,
            qp_num: wc.qp_num,
            opcode,
            status,
            byte_len,
            imm,
        })
    }
}

struct RdmaCq(Arc<CqCore>);

impl CqOps for RdmaCq {
    fn as_any(&self) -> &dyn Any {
        self
    }

    fn depth(&self) -> u32 {
        self.0.depth
    }

    fn poll(&self, out: &mut [Completion]) -> Result<usize> {
        let cq = &*self.0;
        let mut stash = lock(&cq.stash);
        let mut n = 0;
        while n < out.len() {
            let Some(wc) = stash.pop_front() else { break };
            if let Some(c) = cq.decode(&wc) {
                out[n] = c;
                n += 1;
            }
        }
        let mut buf = [ibv_wc::default(); POLL_BATCH];
        while n < out.len() {
            let want = (out.len() - n).min(POLL_BATCH);
            let got = cq.poll_hw(&mut buf[..want])?;
            for wc in &buf[..got] {
                if let Some(c) = cq.decode(wc) {
                    out[n] = c;
                    n += 1;
                }
            }
            if got < want {
                break;
            }
        }
        Ok(n)
    }

    fn wait(&self, timeout: Duration) -> Result<bool> {
        let cq = &*self.0;
        let deadline = Instant::now() + timeout;
        loop {
            {
                let mut stash = lock(&cq.stash);
                if !stash.is_empty() {
                    return Ok(true);
                }
                // Arm first, then look: a completion that lands after the
                // look raises an event, one before it is seen by the look.
                cq.arm()?;
                let mut buf = [ibv_wc::default(); POLL_BATCH];
                let got = cq.poll_hw(&mut buf)?;
                if got > 0 {
                    stash.extend(buf[..got].iter().copied());
                    return Ok(true);
                }
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Ok(false);
            }
            let ms = left.as_micros().div_ceil(1000).min(i32::MAX as u128) as c_int;
            let mut pfd = libc::pollfd {
                // SAFETY: the channel is live.
                fd: unsafe { (*cq.channel).fd },
                events: libc::POLLIN,
                revents: 0,
            };
            // SAFETY: one valid pollfd.
            let ret = unsafe { libc::poll(&mut pfd, 1, ms) };
            if ret < 0 {
                let e = errno();
                if e.kind() != std::io::ErrorKind::Interrupted {
                    return Err(io("poll on the completion channel", e));
                }
            }
            if ret > 0 {
                cq.drain_events();
            }
        }
    }
}

// ---------------------------------------------------------------------------
// Queue pairs.

#[derive(Clone, Copy, Default)]
struct Slot {
    wr_id: u64,
    /// An RDMA write (else a send; unused for receives).
    write: bool,
    len: u32,
}

/// One queue's accounting: requests are numbered from 1; `done` is the
/// highest number whose completion was polled (completions of a queue come
/// in order, so every request up to it is finished).
struct Ring {
    cap: u32,
    posted: u64,
    done: u64,
    slots: Vec<Slot>,
}

impl Ring {
    fn new(cap: u32) -> Ring {
        Ring {
            cap,
            posted: 0,
            done: 0,
            slots: vec![Slot::default(); cap as usize],
        }
    }

    fn index(&self, seq: u64) -> usize {
        (seq % u64::from(self.cap)) as usize
    }

    fn slot(&self, seq: u64) -> Slot {
        self.slots[self.index(seq)]
    }

    fn room(&self, queue: &'static str, posting: usize) -> Result<()> {
        let outstanding = self.posted.saturating_sub(self.done);
        if outstanding + posting as u64 > u64::from(self.cap) {
            return Err(VerbsError::QueueFull {
                queue,
                posting,
                depth: self.cap,
            });
        }
        Ok(())
    }
}

enum QpOwner {
    Verbs,
    Cm {
        cm: &'static Rdmacm,
        id: *mut rdma_cm_id,
        /// Keeps the connection's id alive until the queue pair is gone.
        _keep: Arc<dyn Any + Send + Sync>,
    },
}

pub(super) struct QpCore {
    pd: Arc<PdCore>,
    send_cq: Arc<CqCore>,
    recv_cq: Arc<CqCore>,
    raw: *mut ibv_qp,
    num: u32,
    local: Address,
    global_route: bool,
    owner: QpOwner,
    connected: AtomicBool,
    send: Mutex<Ring>,
    recv: Mutex<Ring>,
    /// The event that marked it down: posting fails from then on.
    down: OnceLock<AsyncEvent>,
}

// SAFETY: see `Ctx`.
unsafe impl Send for QpCore {}
// SAFETY: see `Ctx`.
unsafe impl Sync for QpCore {}

impl Drop for QpCore {
    fn drop(&mut self) {
        for cq in [&self.send_cq, &self.recv_cq] {
            let mut qps = lock(&cq.qps);
            if qps.get(&self.num).is_some_and(|w| w.strong_count() == 0) {
                qps.remove(&self.num);
            }
        }
        let lib = self.pd.ctx.lib;
        match &self.owner {
            QpOwner::Verbs => {
                // SAFETY: created by us, destroyed once.
                let ret = unsafe { (lib.destroy_qp)(self.raw) };
                if ret != 0 {
                    tracing::warn!(
                        qp = self.num,
                        "ibv_destroy_qp failed: {}",
                        status_error(ret)
                    );
                }
            }
            QpOwner::Cm { cm, id, .. } => {
                // SAFETY: the id is live (`_keep`) and owns this queue pair;
                // disconnecting an unconnected id only fails.
                unsafe {
                    if self.connected.load(Ordering::Acquire) {
                        (cm.disconnect)(*id);
                    }
                    (cm.destroy_qp)(*id);
                }
            }
        }
    }
}

fn cq_of(cq: &CompletionQueue, ctx: &Ctx) -> Result<Arc<CqCore>> {
    match cq.ops().as_any().downcast_ref::<RdmaCq>() {
        Some(c) if c.0.ctx.raw == ctx.raw => Ok(c.0.clone()),
        _ => Err(VerbsError::Foreign("completion queue")),
    }
}

impl QpCore {
    fn create(pd: &Arc<PdCore>, init: &QpInit<'_>, target: Option<CmTarget>) -> Result<Arc<Self>> {
        let ctx = &pd.ctx;
        let send_cq = cq_of(init.send_cq, ctx)?;
        let recv_cq = cq_of(init.recv_cq, ctx)?;
        for (what, n) in [
            ("max_send_wr", init.max_send_wr),
            ("max_recv_wr", init.max_recv_wr),
        ] {
            if n == 0 || n > ctx.attr.max_qp_wr {
                return Err(VerbsError::InvalidArgument(format!(
                    "{what} {n} (1..={} on {})",
                    ctx.attr.max_qp_wr, ctx.name
                )));
            }
        }
        let mut ia = ibv_qp_init_attr {
            send_cq: send_cq.raw,
            recv_cq: recv_cq.raw,
            cap: ibv_qp_cap {
                max_send_wr: init.max_send_wr,
                max_recv_wr: init.max_recv_wr,
                max_send_sge: 1,
                max_recv_sge: 1,
                max_inline_data: 0,
            },
            qp_type: IBV_QPT_RC,
            sq_sig_all: 0,
            ..Default::default()
        };
        let (raw, owner) = match target {
            None => {
                // SAFETY: live domain; `ia` names live queues of its context.
                let raw = unsafe { (ctx.lib.create_qp)(pd.raw, &mut ia) };
                if raw.is_null() {
                    let e = errno();
                    if is_exhaustion(&e) {
                        return Err(VerbsError::Limit {
                            what: "queue pairs or work requests",
                            max: u64::from(ctx.attr.max_qp_wr),
                        });
                    }
                    return Err(io("ibv_create_qp", e));
                }
                (raw, QpOwner::Verbs)
            }
            Some(t) => {
                // SAFETY: the id is live (held by `t.keep`).
                if unsafe { (*t.id).verbs } != ctx.raw {
                    return Err(VerbsError::Foreign("protection domain"));
                }
                // SAFETY: as for `ibv_create_qp`; librdmacm stores the queue
                // pair in the id.
                let ret = unsafe { (t.cm.create_qp)(t.id, pd.raw, &mut ia) };
                if ret != 0 {
                    return Err(io("rdma_create_qp", status_error(ret)));
                }
                // SAFETY: set by the successful call above.
                let raw = unsafe { (*t.id).qp };
                (
                    raw,
                    QpOwner::Cm {
                        cm: t.cm,
                        id: t.id,
                        _keep: t.keep,
                    },
                )
            }
        };
        // SAFETY: live queue pair.
        let num = unsafe { (*raw).qp_num };
        // Built before anything can fail, so that `Drop` destroys `raw`.
        let port = ctx.port;
        let mut core = QpCore {
            pd: pd.clone(),
            send_cq: send_cq.clone(),
            recv_cq: recv_cq.clone(),
            raw,
            num,
            local: Address {
                lid: 0,
                port,
                mtu: 1,
                qpn: num,
                psn: random_psn(),
                gid: [0; 16],
            },
            global_route: false,
            owner,
            connected: AtomicBool::new(false),
            send: Mutex::new(Ring::new(init.max_send_wr)),
            recv: Mutex::new(Ring::new(init.max_recv_wr)),
            down: OnceLock::new(),
        };
        let pa = ctx.port_attr(port)?;
        core.local.lid = pa.lid;
        core.local.mtu = u8::try_from(pa.active_mtu).unwrap_or(1).clamp(1, 5);
        core.local.gid = ctx.gid(port, ctx.gid_index).unwrap_or([0; 16]);
        core.global_route = u32::from(pa.link_layer) == IBV_LINK_LAYER_ETHERNET;
        if matches!(core.owner, QpOwner::Verbs) {
            // RESET → INIT, so that receives can be posted before connecting.
            let mut a = ibv_qp_attr {
                qp_state: IBV_QPS_INIT,
                pkey_index: 0,
                port_num: port,
                qp_access_flags: IBV_ACCESS_REMOTE_WRITE,
                ..Default::default()
            };
            let mask = IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS;
            core.modify(&mut a, mask, "RESET → INIT")?;
        }
        let core = Arc::new(core);
        if let Some(a) = &ctx.events {
            a.shared.add_qp(num, port, &core);
        }
        for cq in [&send_cq, &recv_cq] {
            lock(&cq.qps).insert(num, Arc::downgrade(&core));
        }
        Ok(core)
    }

    fn modify(&self, a: &mut ibv_qp_attr, mask: u32, step: &str) -> Result<()> {
        // SAFETY: live queue pair; `a` is a valid attribute struct.
        let ret = unsafe { (self.pd.ctx.lib.modify_qp)(self.raw, a, mask as c_int) };
        if ret != 0 {
            return Err(io(
                format!("ibv_modify_qp({step}) of queue pair {}", self.num),
                status_error(ret),
            ));
        }
        Ok(())
    }

    /// Marks the queue pair down after `event`: later posts fail at once, and
    /// it is moved to the error state so that its outstanding work requests
    /// complete (flushed) now and wake whoever waits for them. `false` if it
    /// was down already.
    pub(super) fn mark_down(&self, event: AsyncEvent) -> bool {
        if self.down.set(event).is_err() {
            return false;
        }
        let mut a = ibv_qp_attr {
            qp_state: IBV_QPS_ERR,
            ..Default::default()
        };
        if let Err(e) = self.modify(&mut a, IBV_QP_STATE, "→ ERR") {
            // A fatal error already put it there on some adapters.
            tracing::debug!(qp = self.num, "after {event}: {e}");
        }
        true
    }

    fn check_down(&self) -> Result<()> {
        match self.down.get() {
            Some(&event) => Err(VerbsError::LinkDown {
                qp_num: self.num,
                event,
            }),
            None => Ok(()),
        }
    }

    /// Marks a queue pair that RDMA CM brought to RTS as connected.
    pub(super) fn mark_connected(&self) {
        self.connected.store(true, Ordering::Release);
    }

    fn post_op(&self) -> Result<(PostSend, PostRecv)> {
        // SAFETY: live queue pair and context; the table is the provider's.
        let ops = unsafe { &(*(*self.raw).context).ops };
        match (ops.post_send, ops.post_recv) {
            (Some(s), Some(r)) => Ok((s, r)),
            _ => Err(io(
                "ibv_post_send",
                std::io::Error::other("the provider has no post_send/post_recv"),
            )),
        }
    }
}

/// A work request of libibverbs' linked lists.
trait Linked {
    fn link(&mut self, next: *mut Self);
}

impl Linked for ibv_send_wr {
    fn link(&mut self, next: *mut Self) {
        self.next = next;
    }
}

impl Linked for ibv_recv_wr {
    fn link(&mut self, next: *mut Self) {
        self.next = next;
    }
}

/// Links `hw` into a list, posts it with `post` (`ops.post_send` or
/// `ops.post_recv`) and counts what the adapter took into `ring`.
///
/// # Safety
/// `qp` is live and `hw` holds requests the adapter may execute: their
/// scatter lists point into live registered memory of the queue pair's
/// domain that stays alive until the requests complete.
unsafe fn post_list<W: Linked>(
    hw: &mut [W],
    ring: &mut Ring,
    call: &str,
    post: unsafe extern "C" fn(*mut ibv_qp, *mut W, *mut *mut W) -> c_int,
    qp: *mut ibv_qp,
) -> Result<()> {
    let base = hw.as_mut_ptr();
    let len = hw.len();
    for i in 1..len {
        // SAFETY: both indices are inside `hw`, which is not resized; only
        // `base` is used from here on, so the links stay valid.
        unsafe { (*base.add(i - 1)).link(base.add(i)) };
    }
    let mut bad: *mut W = std::ptr::null_mut();
    // SAFETY: the caller's contract; the list is linked above.
    let ret = unsafe { post(qp, base, &mut bad) };
    if ret != 0 {
        let posted = if bad.is_null() {
            0
        } else {
            // SAFETY: the adapter sets `bad` to an element of `hw`.
            usize::try_from(unsafe { bad.offset_from(base) }).unwrap_or(0)
        };
        ring.posted += posted as u64;
        return Err(io(
            format!(
                "{call} rejected work request {posted} of {len} ({posted} before it were posted)"
            ),
            status_error(ret),
        ));
    }
    ring.posted += len as u64;
    Ok(())
}

/// `ops.post_send` and `ops.post_recv` of the context's table.
type PostSend = unsafe extern "C" fn(*mut ibv_qp, *mut ibv_send_wr, *mut *mut ibv_send_wr) -> c_int;
type PostRecv = unsafe extern "C" fn(*mut ibv_qp, *mut ibv_recv_wr, *mut *mut ibv_recv_wr) -> c_int;

struct RdmaQp(Arc<QpCore>);

impl QpOps for RdmaQp {
    fn qp_num(&self) -> u32 {
        self.0.num
    }

    fn state(&self) -> QpState {
        let qp = &self.0;
        if qp.down.get().is_some() {
            return QpState::Error;
        }
        let mut a = ibv_qp_attr::default();
        let mut ia = ibv_qp_init_attr::default();
        // SAFETY: live queue pair; valid out-pointers.
        let ret =
            unsafe { (qp.pd.ctx.lib.query_qp)(qp.raw, &mut a, IBV_QP_STATE as c_int, &mut ia) };
        if ret != 0 {
            return QpState::Error;
        }
        match a.qp_state {
            IBV_QPS_RESET | IBV_QPS_INIT | IBV_QPS_RTR => QpState::Init,
            IBV_QPS_RTS => QpState::ReadyToSend,
            _ => QpState::Error,
        }
    }

    fn endpoint(&self) -> Endpoint {
        Endpoint::from_bytes(&self.0.local.encode())
    }

    fn connect(&self, remote: &Endpoint) -> Result<()> {
        let qp = &self.0;
        if matches!(qp.owner, QpOwner::Cm { .. }) {
            return Err(VerbsError::InvalidArgument(format!(
                "queue pair {} is connected by RDMA CM, not by endpoints",
                qp.num
            )));
        }
        if qp.connected.load(Ordering::Acquire) {
            return Err(VerbsError::AlreadyConnected { qp_num: qp.num });
        }
        let r = Address::decode(remote.as_bytes())?;
        let mut a = ibv_qp_attr {
            qp_state: IBV_QPS_RTR,
            path_mtu: u32::from(qp.local.mtu.min(r.mtu)),
            dest_qp_num: r.qpn,
            rq_psn: r.psn,
            max_dest_rd_atomic: 1,
            min_rnr_timer: MIN_RNR_TIMER,
            ..Default::default()
        };
        a.ah_attr.dlid = r.lid;
        a.ah_attr.port_num = qp.local.port;
        if qp.global_route || r.lid == 0 {
            a.ah_attr.is_global = 1;
            a.ah_attr.grh.dgid.raw = r.gid;
            a.ah_attr.grh.sgid_index = qp.pd.ctx.gid_index;
            a.ah_attr.grh.hop_limit = HOP_LIMIT;
        }
        let mask = IBV_QP_STATE
            | IBV_QP_AV
            | IBV_QP_PATH_MTU
            | IBV_QP_DEST_QPN
            | IBV_QP_RQ_PSN
            | IBV_QP_MAX_DEST_RD_ATOMIC
            | IBV_QP_MIN_RNR_TIMER;
        qp.modify(&mut a, mask, "INIT → RTR")?;
        let mut a = ibv_qp_attr {
            qp_state: IBV_QPS_RTS,
            timeout: ACK_TIMEOUT,
            retry_cnt: RETRY_COUNT,
            rnr_retry: RNR_RETRY,
            sq_psn: qp.local.psn,
            max_rd_atomic: 1,
            ..Default::default()
        };
        let mask = IBV_QP_STATE
            | IBV_QP_TIMEOUT
            | IBV_QP_RETRY_CNT
            | IBV_QP_RNR_RETRY
            | IBV_QP_SQ_PSN
            | IBV_QP_MAX_QP_RD_ATOMIC;
        qp.modify(&mut a, mask, "RTR → RTS")?;
        qp.connected.store(true, Ordering::Release);
        Ok(())
    }

    fn post_send(&self, wrs: &[SendWr<'_>]) -> Result<()> {
        let qp = &self.0;
        qp.check_down()?;
        if !qp.connected.load(Ordering::Acquire) {
            return Err(VerbsError::NotConnected { qp_num: qp.num });
        }
        if wrs.is_empty() {
            return Ok(());
        }
        let (post, _) = qp.post_op()?;
        let mut ring = lock(&qp.send);
        ring.room("send", wrs.len())?;
        let mut sges = Vec::with_capacity(wrs.len());
        for wr in wrs {
            sges.push(match &wr.local {
                Some(sge) => {
                    let (addr, lkey) = check_sge(sge, &qp.pd, Access::NONE)?;
                    Some(ibv_sge {
                        addr,
                        length: sge.len as u32,
                        lkey,
                    })
                }
                None => None,
            });
        }
        let mut hw: Vec<ibv_send_wr> = Vec::with_capacity(wrs.len());
        for (i, (wr, sge)) in wrs.iter().zip(sges.iter_mut()).enumerate() {
            let seq = ring.posted + 1 + i as u64;
            let mut h = ibv_send_wr {
                wr_id: seq,
                send_flags: if wr.signaled { IBV_SEND_SIGNALED } else { 0 },
                ..Default::default()
            };
            if let Some(s) = sge {
                h.sg_list = s;
                h.num_sge = 1;
            }
            let write = match wr.op {
                SendOp::Send => {
                    h.opcode = IBV_WR_SEND;
                    false
                }
                SendOp::SendWithImm(imm) => {
                    h.opcode = IBV_WR_SEND_WITH_IMM;
                    h.__bindgen_anon_1.imm_data = imm.to_be();
                    false
                }
                SendOp::RdmaWrite(ra) => {
                    h.opcode = IBV_WR_RDMA_WRITE;
                    h.wr.rdma.remote_addr = ra.addr;
                    h.wr.rdma.rkey = ra.rkey;
                    true
                }
                SendOp::RdmaWriteWithImm(ra, imm) => {
                    h.opcode = IBV_WR_RDMA_WRITE_WITH_IMM;
                    h.__bindgen_anon_1.imm_data = imm.to_be();
                    h.wr.rdma.remote_addr = ra.addr;
                    h.wr.rdma.rkey = ra.rkey;
                    true
                }
            };
            let idx = ring.index(seq);
            ring.slots[idx] = Slot {
                wr_id: wr.wr_id,
                write,
                len: wr.len() as u32,
            };
            hw.push(h);
        }
        // SAFETY: `hw` holds well-formed requests whose scatter lists point
        // into `sges` and into registered regions of this domain (bounds
        // checked above); the caller keeps the regions alive until
        // completion (documented on `MemoryRegion`).
        unsafe { post_list(&mut hw, &mut ring, "ibv_post_send", post, qp.raw) }
    }

    fn post_recv(&self, wrs: &[RecvWr<'_>]) -> Result<()> {
        let qp = &self.0;
        qp.check_down()?;
        if wrs.is_empty() {
            return Ok(());
        }
        let (_, post) = qp.post_op()?;
        let mut ring = lock(&qp.recv);
        ring.room("receive", wrs.len())?;
        let mut sges = Vec::with_capacity(wrs.len());
        for wr in wrs {
            sges.push(match &wr.buf {
                Some(sge) => {
                    let (addr, lkey) = check_sge(sge, &qp.pd, Access::LOCAL_WRITE)?;
                    Some(ibv_sge {
                        addr,
                        length: sge.len as u32,
                        lkey,
                    })
                }
                None => None,
            });
        }
        let mut hw: Vec<ibv_recv_wr> = Vec::with_capacity(wrs.len());
        for (i, (wr, sge)) in wrs.iter().zip(sges.iter_mut()).enumerate() {
            let seq = ring.posted + 1 + i as u64;
            let mut h = ibv_recv_wr {
                wr_id: RECV_BIT | seq,
                ..Default::default()
            };
            if let Some(s) = sge {
                h.sg_list = s;
                h.num_sge = 1;
            }
            let idx = ring.index(seq);
            ring.slots[idx] = Slot {
                wr_id: wr.wr_id,
                write: false,
                len: 0,
            };
            hw.push(h);
        }
        // SAFETY: as in `post_send`; the regions have LOCAL_WRITE.
        unsafe { post_list(&mut hw, &mut ring, "ibv_post_recv", post, qp.raw) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ring_counts_outstanding_requests() {
        let mut r = Ring::new(4);
        assert!(r.room("send", 4).is_ok());
        assert!(matches!(
            r.room("send", 5),
            Err(VerbsError::QueueFull { depth: 4, .. })
        ));
        r.posted = 3;
        assert!(r.room("send", 2).is_err());
        r.done = 2;
        assert!(r.room("send", 3).is_ok());
        assert_eq!(r.index(5), 1);
        assert_eq!(r.index(4), 0);
    }
}
