//! The `soft` provider: reliable-connected queue pairs between processes of
//! one host over shared memory.
//!
//! Every object that a peer must reach is a named file in a tmpfs directory
//! (`/dev/shm`), mapped `MAP_SHARED`:
//! - a protection domain is a table of its memory regions (key, rights, length,
//!   address); each memory region is its own file `<pd file>.mr<key>`, so a
//!   peer maps it and RDMA writes land directly in the region, with one copy;
//! - a queue pair is a header (state, ring indices) plus a ring of receive
//!   slots of `max_recv_wr` entries;
//! - a completion queue is an event word (futex) that peers bump.
//!
//! The sending process does the work of the adapter: a SEND claims the peer's
//! next posted receive, checks and copies into its buffer and completes the
//! slot; an RDMA write checks the key, rights and bounds in the peer's table
//! and copies. Send completions are therefore generated at post time, in
//! order; receive completions are harvested by the receiver's completion queue
//! in ring order.
//!
//! A queue pair's owner holds an exclusive `flock` on its file; the peer tests
//! that lock (rate-limited) while it polls or waits, so a process that dies,
//! even by SIGKILL, is noticed within milliseconds. A queue pair that fails, or
//! whose peer fails, is destroyed or dies, goes to the error state and flushes
//! its receives: the connection is broken both ways, never left hanging.
//!
//! # Faults
//!
//! Asynchronous events are produced on demand and take queue pairs down as
//! the `rdma-core` provider does on an adapter's events. [`inject`] delivers
//! an [`AsyncEvent`] to every soft context of the process now. The fault knob ([`set_fault`], or `RCUD_SOFT_RDMA_FAULT`
//! read when the first soft context opens) fires once, on the N-th SEND or
//! RDMA WRITE the process posts: `qp-fatal-after-sends:N` takes that queue
//! pair down, `port-error-after-sends:N` every queue pair of its context;
//! the list holding that send fails with [`VerbsError::LinkDown`]. A bad
//! value makes every soft context fail to open, with the reason.

pub(crate) mod cm;
mod faults;
#[allow(unsafe_code)]
mod layout;
#[allow(unsafe_code)]
mod shm;

use std::any::Any;
use std::collections::hash_map::RandomState;
use std::collections::{HashMap, VecDeque};
use std::ffi::OsStr;
use std::hash::{BuildHasher, Hasher};
use std::os::unix::ffi::OsStrExt;
use std::path::{Component, Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, Once, OnceLock, Weak};
use std::time::{Duration, Instant};

pub use faults::{
    fault, inject, parse_env, set_fault, Fault, FaultKind, FaultParseError, FAULT_ENV,
};
use faults::{CtxShared, SOFT_PORT};
use layout::*;
use shm::{futex_wait, futex_wake, shm_dir, sweep_stale, Shm, UserMem, FILE_PREFIX};

use super::{
    Access, AsyncEvent, Completion, ContextOps, CqOps, DeviceAttr, Endpoint, MemoryRegion, MrOps,
    PdOps, QpInit, QpOps, QpState, RecvWr, Result, SendOp, SendWr, VerbsError, WcOpcode, WcStatus,
};

const MAX_WR: u32 = 16384;
const MAX_CQE: u32 = 1 << 20;
const MAX_MSG: usize = 1 << 31;
const MAX_MR_SIZE: u64 = 1 << 40;
/// How often a poll that finds nothing tests whether peers are still alive.
const LIVENESS_INTERVAL: Duration = Duration::from_millis(5);
/// Longest single futex sleep (liveness is tested between sleeps).
const WAIT_SLICE: Duration = Duration::from_millis(10);
/// Mapped peer regions kept per queue pair before stale ones are dropped.
const MR_CACHE_SOFT_LIMIT: usize = 1024;

const ATTR: DeviceAttr = DeviceAttr {
    max_qp_wr: MAX_WR,
    max_cqe: MAX_CQE,
    max_mr: (PD_ENTRIES - 1) as u32,
    max_mr_size: MAX_MR_SIZE,
    max_msg_size: MAX_MSG as u32,
};

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

fn random_u64() -> u64 {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let mut h = RandomState::new().build_hasher();
    h.write_u64(COUNTER.fetch_add(1, Ordering::Relaxed));
    h.write_u32(std::process::id());
    h.finish()
}

fn new_path(kind: &str) -> PathBuf {
    shm_dir().join(format!(
        "{FILE_PREFIX}{}-{:016x}-{kind}",
        std::process::id(),
        random_u64()
    ))
}

fn mr_path(pd_path: &Path, key: u32) -> PathBuf {
    let mut s = pd_path.as_os_str().to_owned();
    s.push(format!(".mr{key:08x}"));
    PathBuf::from(s)
}

fn mono_nanos() -> u64 {
    static EPOCH: OnceLock<Instant> = OnceLock::new();
    let epoch = *EPOCH.get_or_init(Instant::now);
    u64::try_from(epoch.elapsed().as_nanos()).unwrap_or(u64::MAX)
}

fn notify(cq: &CqHeader) {
    cq.seq.fetch_add(1, Ordering::SeqCst);
    if cq.waiters.load(Ordering::SeqCst) > 0 {
        futex_wake(&cq.seq);
    }
}

fn slot(shm: &Shm, cap: u32, idx: u64) -> Option<&Slot> {
    let pos = usize::try_from(idx % u64::from(cap.max(1))).ok()?;
    shm.at::<Slot>(QP_HEADER_LEN + pos * SLOT_LEN)
}

fn fill(s: &Slot, idx: u64, status: u32, opcode: u32, byte_len: u32, imm: Option<u32>) {
    s.status.store(status, Ordering::Relaxed);
    s.opcode.store(opcode, Ordering::Relaxed);
    s.byte_len.store(byte_len, Ordering::Relaxed);
    s.imm.store(imm.unwrap_or(0), Ordering::Relaxed);
    s.has_imm.store(u32::from(imm.is_some()), Ordering::Relaxed);
    s.seq.store(2 * idx + 2, Ordering::Release);
}

/// Claims the next posted, not yet claimed receive of a ring.
fn claim(hdr: &QpHeader, shm: &Shm, cap: u32) -> Option<u64> {
    loop {
        let i = hdr.fill_idx.load(Ordering::Acquire);
        if i >= hdr.post_idx.load(Ordering::Acquire) {
            return None;
        }
        if slot(shm, cap, i)?.seq.load(Ordering::Acquire) != 2 * i + 1 {
            return None;
        }
        if hdr
            .fill_idx
            .compare_exchange(i, i + 1, Ordering::AcqRel, Ordering::Acquire)
            .is_ok()
        {
            return Some(i);
        }
    }
}

/// Moves a state from `Init`/`ReadyToSend` to `Error`; `true` if it changed.
fn to_error(state: &std::sync::atomic::AtomicU32) -> bool {
    let mut cur = state.load(Ordering::Acquire);
    while cur == STATE_INIT || cur == STATE_RTS {
        match state.compare_exchange(cur, STATE_ERROR, Ordering::AcqRel, Ordering::Acquire) {
            Ok(_) => return true,
            Err(now) => cur = now,
        }
    }
    false
}

pub(crate) fn open() -> Result<Arc<dyn ContextOps>> {
    static SWEEP: Once = Once::new();
    SWEEP.call_once(|| sweep_stale(&shm_dir()));
    faults::init_from_env()?;
    Ok(Arc::new(SoftContext {
        id: random_u64(),
        shared: CtxShared::register(),
    }))
}

struct SoftContext {
    id: u64,
    shared: Arc<CtxShared>,
}

impl ContextOps for SoftContext {
    fn attr(&self) -> DeviceAttr {
        ATTR
    }

    fn cheap_registration(&self) -> bool {
        // A registration is a table slot: the sender copies from the range
        // when it posts, nothing is pinned.
        true
    }

    fn subscribe_events(&self) -> std::sync::mpsc::Receiver<AsyncEvent> {
        self.shared.hub.subscribe()
    }

    fn alloc_pd(&self) -> Result<Arc<dyn PdOps>> {
        let shm = Shm::create(new_path("pd"), PD_HEADER_LEN + PD_ENTRIES * PD_ENTRY_LEN)?;
        let nonce = random_u64();
        let hdr = shm.at::<PdHeader>(0).expect("pd file holds its header");
        hdr.nonce.store(nonce, Ordering::Relaxed);
        hdr.magic.store(PD_MAGIC, Ordering::Release);
        Ok(Arc::new(SoftPd(Arc::new(PdCore {
            ctx: self.id,
            shared: self.shared.clone(),
            shm,
            nonce,
            keys: Mutex::new(KeyAlloc {
                free: (1..PD_ENTRIES as u32).rev().collect(),
                generation: 0,
            }),
        }))))
    }

    fn create_cq(&self, depth: u32) -> Result<Arc<dyn CqOps>> {
        if depth == 0 || depth > MAX_CQE {
            return Err(VerbsError::InvalidArgument(format!(
                "completion queue depth {depth} (1..={MAX_CQE})"
            )));
        }
        let shm = Shm::create(new_path("cq"), CQ_LEN)?;
        shm.at::<CqHeader>(0)
            .expect("cq file holds its header")
            .magic
            .store(CQ_MAGIC, Ordering::Release);
        Ok(Arc::new(SoftCq(Arc::new(CqCore {
            ctx: self.id,
            depth,
            shm,
            inner: Mutex::new(CqInner {
                queue: VecDeque::new(),
                qps: Vec::new(),
                overrun: false,
            }),
        }))))
    }
}

// ---------------------------------------------------------------------------
// Protection domains and memory regions.

struct KeyAlloc {
    free: Vec<u32>,
    generation: u32,
}

struct PdCore {
    ctx: u64,
    shared: Arc<CtxShared>,
    shm: Shm,
    nonce: u64,
    keys: Mutex<KeyAlloc>,
}

impl PdCore {
    /// A free slot of the region table and a fresh key for it.
    fn take_key(&self) -> Result<(u32, u32)> {
        let mut k = lock(&self.keys);
        let Some(idx) = k.free.pop() else {
            return Err(VerbsError::Limit {
                what: "memory regions per protection domain",
                max: ATTR.max_mr.into(),
            });
        };
        k.generation = (k.generation + 1) & 0xF_FFFF;
        Ok((idx, (k.generation << 12) | idx))
    }

    fn entry(&self, idx: u32) -> Option<&PdEntry> {
        self.shm
            .at::<PdEntry>(PD_HEADER_LEN + idx as usize * PD_ENTRY_LEN)
    }
}

struct SoftPd(Arc<PdCore>);

impl PdOps for SoftPd {
    fn alloc_mr(&self, len: usize, access: Access) -> Result<Arc<dyn MrOps>> {
        if len == 0 {
            return Err(VerbsError::InvalidArgument(
                "memory region of zero bytes".into(),
            ));
        }
        if len as u64 > MAX_MR_SIZE {
            return Err(VerbsError::Limit {
                what: "memory region size",
                max: MAX_MR_SIZE,
            });
        }
        let pd = &self.0;
        let (idx, key) = pd.take_key()?;
        let shm = match Shm::create(mr_path(pd.shm.path(), key), len) {
            Ok(s) => s,
            Err(e) => {
                lock(&pd.keys).free.push(idx);
                return Err(e);
            }
        };
        // Published in the table: peers find the region by its key.
        if let Some(e) = pd.entry(idx) {
            e.len.store(len as u64, Ordering::Relaxed);
            e.addr.store(shm.as_ptr() as u64, Ordering::Relaxed);
            e.access.store(access.bits(), Ordering::Relaxed);
            e.key.store(key, Ordering::Release);
        }
        Ok(Arc::new(SoftMr {
            pd: pd.clone(),
            mem: Backing::Shared(shm),
            idx,
            key,
            access,
        }))
    }

    #[allow(unsafe_code)]
    unsafe fn register(&self, ptr: *mut u8, len: usize, access: Access) -> Result<Arc<dyn MrOps>> {
        if access != Access::NONE {
            return Err(VerbsError::InvalidArgument(format!(
                "the soft provider registers process memory as a local source only \
                 (asked for {access:?}): peers cannot reach it; use alloc_mr for regions \
                 that receive"
            )));
        }
        // SAFETY: the caller of `ProtectionDomain::register` keeps the range
        // valid while the region lives, which is `UserMem::new`'s contract.
        let Some(mem) = (unsafe { UserMem::new(ptr, len) }) else {
            return Err(VerbsError::InvalidArgument(format!(
                "cannot register {len} bytes at {ptr:p}"
            )));
        };
        // A slot of the region table is used, as an adapter's MR table entry
        // would be, but nothing is published: peers cannot name the region.
        let (idx, key) = self.0.take_key()?;
        Ok(Arc::new(SoftMr {
            pd: self.0.clone(),
            mem: Backing::User(mem),
            idx,
            key,
            access,
        }))
    }

    fn create_qp(&self, init: &QpInit<'_>) -> Result<Arc<dyn QpOps>> {
        let cq_of = |cq: &super::CompletionQueue| -> Result<Arc<CqCore>> {
            match cq.ops().as_any().downcast_ref::<SoftCq>() {
                Some(c) if c.0.ctx == self.0.ctx => Ok(c.0.clone()),
                _ => Err(VerbsError::Foreign("completion queue")),
            }
        };
        let send_cq = cq_of(init.send_cq)?;
        let recv_cq = cq_of(init.recv_cq)?;
        for (what, n) in [
            ("max_send_wr", init.max_send_wr),
            ("max_recv_wr", init.max_recv_wr),
        ] {
            if n == 0 || n > MAX_WR {
                return Err(VerbsError::InvalidArgument(format!(
                    "{what} {n} (1..={MAX_WR})"
                )));
            }
        }
        let cap = init.max_recv_wr;
        let shm = Shm::create(new_path("qp"), QP_HEADER_LEN + cap as usize * SLOT_LEN)?;
        shm.lock_owner()?;
        let nonce = random_u64();
        let num = (random_u64() as u32 & 0x00FF_FFFF).max(1);
        {
            let h = shm.at::<QpHeader>(0).expect("qp file holds its header");
            h.nonce.store(nonce, Ordering::Relaxed);
            h.cap.store(cap, Ordering::Relaxed);
            h.qp_num.store(num, Ordering::Relaxed);
            h.state.store(STATE_INIT, Ordering::Relaxed);
            h.magic.store(QP_MAGIC, Ordering::Release);
        }
        let qp = Arc::new(QpCore {
            num,
            nonce,
            pd: self.0.clone(),
            send_cq: send_cq.clone(),
            recv_cq: recv_cq.clone(),
            shm,
            cap,
            max_send: init.max_send_wr,
            remote: OnceLock::new(),
            send: Mutex::new(SendSide {
                posted: 0,
                cache: HashMap::new(),
            }),
            recv_lock: Mutex::new(()),
            retired: Arc::new(AtomicU64::new(0)),
            last_check: AtomicU64::new(0),
            down: OnceLock::new(),
            peer_left: AtomicBool::new(false),
        });
        self.0.shared.add_qp(&qp);
        lock(&send_cq.inner).qps.push(Arc::downgrade(&qp));
        if !Arc::ptr_eq(&send_cq, &recv_cq) {
            lock(&recv_cq.inner).qps.push(Arc::downgrade(&qp));
        }
        Ok(Arc::new(SoftQp(qp)))
    }
}

/// Where a region's bytes live.
enum Backing {
    /// A shared-memory file peers can map (provider-allocated regions).
    Shared(Shm),
    /// This process's own memory, registered in place (a local source only).
    User(UserMem),
}

impl Backing {
    fn len(&self) -> usize {
        match self {
            Backing::Shared(s) => s.len(),
            Backing::User(u) => u.len(),
        }
    }

    fn as_ptr(&self) -> *mut u8 {
        match self {
            Backing::Shared(s) => s.as_ptr(),
            Backing::User(u) => u.as_ptr(),
        }
    }

    /// Copies `len` bytes at `off` into a peer's mapping.
    fn copy_to(&self, off: usize, dst: &Shm, dst_off: usize, len: usize) -> bool {
        match self {
            Backing::Shared(s) => Shm::copy(s, off, dst, dst_off, len),
            Backing::User(u) => u.copy_to(off, dst, dst_off, len),
        }
    }
}

struct SoftMr {
    pd: Arc<PdCore>,
    mem: Backing,
    idx: u32,
    key: u32,
    access: Access,
}

impl Drop for SoftMr {
    fn drop(&mut self) {
        if let Some(e) = self.pd.entry(self.idx) {
            e.key.store(0, Ordering::Release);
        }
        lock(&self.pd.keys).free.push(self.idx);
    }
}

impl MrOps for SoftMr {
    fn as_any(&self) -> &dyn Any {
        self
    }
    fn addr(&self) -> u64 {
        self.mem.as_ptr() as u64
    }
    fn len(&self) -> usize {
        self.mem.len()
    }
    fn lkey(&self) -> u32 {
        self.key
    }
    fn rkey(&self) -> u32 {
        self.key
    }
    fn access(&self) -> Access {
        self.access
    }
    fn read_at(&self, offset: usize, dst: &mut [u8]) {
        match &self.mem {
            Backing::Shared(s) => s.read_bytes(offset, dst),
            Backing::User(u) => u.read_bytes(offset, dst),
        };
    }
    fn write_at(&self, offset: usize, src: &[u8]) {
        match &self.mem {
            Backing::Shared(s) => s.write_bytes(offset, src),
            Backing::User(u) => u.write_bytes(offset, src),
        };
    }
    fn as_ptr(&self) -> *mut u8 {
        self.mem.as_ptr()
    }
}

/// The soft region behind `mr`, if it belongs to `pd`.
fn soft_mr<'a>(mr: &'a MemoryRegion, pd: &Arc<PdCore>) -> Result<&'a SoftMr> {
    match mr.ops().as_any().downcast_ref::<SoftMr>() {
        Some(m) if Arc::ptr_eq(&m.pd, pd) => Ok(m),
        _ => Err(VerbsError::Foreign("memory region")),
    }
}

fn check_sge(sge: &super::Sge<'_>, pd: &Arc<PdCore>, need: Access) -> Result<()> {
    let mr = soft_mr(sge.mr, pd)?;
    if !mr.access.contains(need) {
        return Err(VerbsError::InvalidArgument(format!(
            "memory region {:#x} lacks {need:?}",
            mr.key
        )));
    }
    match sge.offset.checked_add(sge.len) {
        Some(end) if end <= mr.mem.len() && sge.len <= MAX_MSG => Ok(()),
        _ => Err(VerbsError::OutOfBounds {
            offset: sge.offset,
            len: sge.len,
            size: mr.mem.len(),
        }),
    }
}

// ---------------------------------------------------------------------------
// Completion queues.

struct Pending {
    wc: Completion,
    /// Send-queue accounting: polling this frees the queue pair's send slots
    /// up to this sequence number.
    retire: Option<(Arc<AtomicU64>, u64)>,
}

struct CqInner {
    queue: VecDeque<Pending>,
    qps: Vec<Weak<QpCore>>,
    overrun: bool,
}

struct CqCore {
    ctx: u64,
    depth: u32,
    shm: Shm,
    inner: Mutex<CqInner>,
}

impl CqCore {
    fn hdr(&self) -> &CqHeader {
        self.shm
            .at::<CqHeader>(0)
            .expect("cq file holds its header")
    }

    fn push(&self, p: Pending) {
        {
            let mut g = lock(&self.inner);
            if g.queue.len() >= self.depth as usize {
                g.overrun = true;
            } else {
                g.queue.push_back(p);
            }
        }
        notify(self.hdr());
    }

    /// Applies errors and peer liveness to the attached queue pairs, flushing
    /// the receives of those in error.
    fn sweep(&self, g: &mut CqInner) {
        g.qps.retain(|w| w.strong_count() > 0);
        for qp in g.qps.iter().filter_map(Weak::upgrade) {
            qp.check_peer();
            if std::ptr::eq(&*qp.recv_cq, self)
                && qp.hdr().state.load(Ordering::Acquire) == STATE_ERROR
            {
                qp.flush_recv();
            }
        }
    }

    fn harvest(&self, g: &mut CqInner, out: &mut [Completion]) -> usize {
        let mut n = 0;
        for qp in g.qps.iter().filter_map(Weak::upgrade) {
            if n == out.len() {
                break;
            }
            if std::ptr::eq(&*qp.recv_cq, self) {
                n += qp.harvest(&mut out[n..]);
            }
        }
        n
    }

    fn ready(&self) -> Result<bool> {
        let mut g = lock(&self.inner);
        if g.overrun {
            return Err(VerbsError::CqOverrun { depth: self.depth });
        }
        if !g.queue.is_empty() {
            return Ok(true);
        }
        self.sweep(&mut g);
        Ok(g.qps
            .iter()
            .filter_map(Weak::upgrade)
            .any(|qp| std::ptr::eq(&*qp.recv_cq, self) && qp.has_completion()))
    }
}

struct SoftCq(Arc<CqCore>);

impl CqOps for SoftCq {
    fn as_any(&self) -> &dyn Any {
        self
    }

    fn depth(&self) -> u32 {
        self.0.depth
    }

    fn poll(&self, out: &mut [Completion]) -> Result<usize> {
        let cq = &*self.0;
        let mut g = lock(&cq.inner);
        if g.overrun {
            return Err(VerbsError::CqOverrun { depth: cq.depth });
        }
        let mut n = 0;
        while n < out.len() {
            let Some(p) = g.queue.pop_front() else { break };
            if let Some((retired, upto)) = p.retire {
                retired.fetch_max(upto, Ordering::AcqRel);
            }
            out[n] = p.wc;
            n += 1;
        }
        n += cq.harvest(&mut g, &mut out[n..]);
        if n == 0 && !out.is_empty() {
            cq.sweep(&mut g);
            n += cq.harvest(&mut g, out);
        }
        Ok(n)
    }

    fn wait(&self, timeout: Duration) -> Result<bool> {
        let cq = &*self.0;
        let hdr = cq.hdr();
        let deadline = Instant::now() + timeout;
        loop {
            if cq.ready()? {
                return Ok(true);
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Ok(false);
            }
            hdr.waiters.fetch_add(1, Ordering::SeqCst);
            let seq = hdr.seq.load(Ordering::SeqCst);
            let ready = cq.ready();
            if matches!(ready, Ok(false)) {
                futex_wait(&hdr.seq, seq, left.min(WAIT_SLICE));
            }
            hdr.waiters.fetch_sub(1, Ordering::SeqCst);
            if ready? {
                return Ok(true);
            }
        }
    }
}

// ---------------------------------------------------------------------------
// Queue pairs.

/// The peer's objects, mapped at connect.
struct Remote {
    qp: Shm,
    pd: Shm,
    cq: Shm,
    cap: u32,
}

impl Remote {
    fn hdr(&self) -> &QpHeader {
        self.qp.at::<QpHeader>(0).expect("checked at connect")
    }

    fn cq(&self) -> &CqHeader {
        self.cq.at::<CqHeader>(0).expect("checked at connect")
    }

    /// Length and address of the peer's region `key` if it grants `need`.
    fn region(&self, key: u32, need: Access) -> Option<(usize, u64)> {
        let idx = (key & 0xFFF) as usize;
        if idx == 0 {
            return None;
        }
        let e = self.pd.at::<PdEntry>(PD_HEADER_LEN + idx * PD_ENTRY_LEN)?;
        if e.key.load(Ordering::Acquire) != key {
            return None;
        }
        let len = usize::try_from(e.len.load(Ordering::Relaxed)).ok()?;
        let addr = e.addr.load(Ordering::Relaxed);
        let access = Access::from_bits_truncate(e.access.load(Ordering::Relaxed));
        // Re-check: the fields belong to this registration only if the key
        // did not change meanwhile.
        if e.key.load(Ordering::Acquire) != key || !access.contains(need) {
            return None;
        }
        Some((len, addr))
    }
}

struct SendSide {
    posted: u64,
    /// The peer's memory regions mapped so far, by key.
    cache: HashMap<u32, Shm>,
}

struct QpCore {
    num: u32,
    nonce: u64,
    pd: Arc<PdCore>,
    send_cq: Arc<CqCore>,
    recv_cq: Arc<CqCore>,
    shm: Shm,
    cap: u32,
    max_send: u32,
    remote: OnceLock<Remote>,
    send: Mutex<SendSide>,
    recv_lock: Mutex<()>,
    retired: Arc<AtomicU64>,
    last_check: AtomicU64,
    /// The event that marked it down: posting fails from then on.
    down: OnceLock<AsyncEvent>,
    /// Whether it failed because the peer destroyed its queue pair or its
    /// process ended (the peer left), not because a queue pair failed.
    peer_left: AtomicBool,
}

/// Why an operation failed at the sender, and what the peer's slot gets.
type Outcome = std::result::Result<(), WcStatus>;

impl QpCore {
    fn hdr(&self) -> &QpHeader {
        self.shm
            .at::<QpHeader>(0)
            .expect("qp file holds its header")
    }

    fn set_error(&self) {
        if to_error(&self.hdr().state) {
            notify(self.recv_cq.hdr());
            if let Some(r) = self.remote.get() {
                notify(r.cq());
            }
        }
    }

    /// Marks the queue pair down after `event` and moves it to the error
    /// state, which wakes its waiters and breaks the peer's queue pair too;
    /// `false` if it was down already.
    fn mark_down(&self, event: AsyncEvent) -> bool {
        if self.down.set(event).is_err() {
            return false;
        }
        self.set_error();
        // The receive side and the peer were notified; a thread waiting on
        // the send queue's completions wakes too.
        notify(self.send_cq.hdr());
        true
    }

    /// Fails a post on a queue pair marked down.
    fn check_down(&self) -> Result<()> {
        match self.down.get() {
            Some(&event) => Err(VerbsError::LinkDown {
                qp_num: self.num,
                event,
            }),
            None => Ok(()),
        }
    }

    /// Goes to error if the peer's queue pair failed, was destroyed or its
    /// process died (the lock test is rate-limited).
    fn check_peer(&self) {
        let Some(remote) = self.remote.get() else {
            return;
        };
        if self.hdr().state.load(Ordering::Acquire) == STATE_ERROR {
            return;
        }
        let peer = remote.hdr().state.load(Ordering::Acquire);
        if peer == STATE_ERROR || peer == STATE_DESTROYED {
            if peer == STATE_DESTROYED {
                self.peer_left.store(true, Ordering::Release);
            }
            self.set_error();
            return;
        }
        let now = mono_nanos();
        let last = self.last_check.load(Ordering::Relaxed);
        if now.saturating_sub(last) < LIVENESS_INTERVAL.as_nanos() as u64 {
            return;
        }
        self.last_check.store(now, Ordering::Relaxed);
        if remote.qp.owner_gone() {
            tracing::debug!(qp = self.num, "soft verbs: peer process is gone");
            self.peer_left.store(true, Ordering::Release);
            self.set_error();
        }
    }

    fn flush_recv(&self) {
        let h = self.hdr();
        while let Some(i) = claim(h, &self.shm, self.cap) {
            if let Some(s) = slot(&self.shm, self.cap, i) {
                fill(s, i, ST_FLUSH, OP_RECV, 0, None);
            }
        }
    }

    fn has_completion(&self) -> bool {
        let p = self.hdr().poll_idx.load(Ordering::Relaxed);
        slot(&self.shm, self.cap, p).is_some_and(|s| s.seq.load(Ordering::Acquire) == 2 * p + 2)
    }

    fn harvest(&self, out: &mut [Completion]) -> usize {
        let h = self.hdr();
        let mut p = h.poll_idx.load(Ordering::Relaxed);
        let mut n = 0;
        while n < out.len() {
            let Some(s) = slot(&self.shm, self.cap, p) else {
                break;
            };
            if s.seq.load(Ordering::Acquire) != 2 * p + 2 {
                break;
            }
            let status = match s.status.load(Ordering::Relaxed) {
                ST_SUCCESS => WcStatus::Success,
                ST_LOC_LEN => WcStatus::LocalLength,
                ST_LOC_PROT => WcStatus::LocalProtection,
                ST_FLUSH => WcStatus::WrFlush,
                other => WcStatus::Other(other),
            };
            let opcode = match s.opcode.load(Ordering::Relaxed) {
                OP_RECV_RDMA_IMM => WcOpcode::RecvRdmaWithImm,
                _ => WcOpcode::Recv,
            };
            out[n] = Completion {
                wr_id: s.wr_id.load(Ordering::Relaxed),
                qp_num: self.num,
                opcode,
                status,
                byte_len: s.byte_len.load(Ordering::Relaxed),
                imm: (s.has_imm.load(Ordering::Relaxed) != 0)
                    .then(|| s.imm.load(Ordering::Relaxed)),
            };
            n += 1;
            p += 1;
        }
        h.poll_idx.store(p, Ordering::Release);
        n
    }

    /// Maps (or finds) the peer's region `key` of `len` bytes.
    fn peer_mr<'c>(
        cache: &'c mut HashMap<u32, Shm>,
        remote: &Remote,
        key: u32,
        len: usize,
    ) -> Option<&'c Shm> {
        if !cache.contains_key(&key) {
            if cache.len() >= MR_CACHE_SOFT_LIMIT {
                cache.retain(|k, _| remote.region(*k, Access::NONE).is_some());
            }
            let shm = Shm::open(&mr_path(remote.pd.path(), key), len).ok()?;
            cache.insert(key, shm);
        }
        cache.get(&key)
    }

    /// The status of a sender that found no receive posted.
    fn no_receive(remote: &Remote) -> WcStatus {
        if remote.qp.owner_gone() {
            WcStatus::RetryExceeded
        } else {
            WcStatus::RnrRetryExceeded
        }
    }

    fn fail_peer(remote: &Remote) {
        to_error(&remote.hdr().state);
        notify(remote.cq());
    }

    fn execute(&self, remote: &Remote, side: &mut SendSide, wr: &SendWr<'_>) -> Outcome {
        let peer_state = remote.hdr().state.load(Ordering::Acquire);
        if peer_state != STATE_INIT && peer_state != STATE_RTS {
            return Err(WcStatus::RetryExceeded);
        }
        let len = wr.len();
        let local = match wr.local {
            Some(sge) => Some((
                soft_mr(sge.mr, &self.pd).map_err(|_| WcStatus::LocalProtection)?,
                sge.offset,
            )),
            None => None,
        };
        let copy_to = |dst: &Shm, dst_off: usize| -> bool {
            match local {
                Some((mr, off)) => mr.mem.copy_to(off, dst, dst_off, len),
                None => true,
            }
        };
        match wr.op {
            SendOp::Send | SendOp::SendWithImm(_) => {
                let imm = match wr.op {
                    SendOp::SendWithImm(v) => Some(v),
                    _ => None,
                };
                let Some(i) = claim(remote.hdr(), &remote.qp, remote.cap) else {
                    return Err(Self::no_receive(remote));
                };
                let s = slot(&remote.qp, remote.cap, i).ok_or(WcStatus::RemoteOperation)?;
                let rlen = s.len.load(Ordering::Relaxed);
                let result = if len as u64 > rlen {
                    Err((ST_LOC_LEN, WcStatus::RemoteInvalidRequest))
                } else if len == 0 {
                    Ok(())
                } else {
                    let key = s.lkey.load(Ordering::Relaxed);
                    let off =
                        usize::try_from(s.offset.load(Ordering::Relaxed)).unwrap_or(usize::MAX);
                    let ok = remote
                        .region(key, Access::LOCAL_WRITE)
                        .filter(|(rlen, _)| off.checked_add(len).is_some_and(|e| e <= *rlen))
                        .and_then(|(rlen, _)| Self::peer_mr(&mut side.cache, remote, key, rlen))
                        .is_some_and(|dst| copy_to(dst, off));
                    if ok {
                        Ok(())
                    } else {
                        Err((ST_LOC_PROT, WcStatus::RemoteOperation))
                    }
                };
                match result {
                    Ok(()) => {
                        fill(s, i, ST_SUCCESS, OP_RECV, len as u32, imm);
                        notify(remote.cq());
                        Ok(())
                    }
                    Err((slot_status, ours)) => {
                        fill(s, i, slot_status, OP_RECV, 0, None);
                        Self::fail_peer(remote);
                        Err(ours)
                    }
                }
            }
            SendOp::RdmaWrite(ra) | SendOp::RdmaWriteWithImm(ra, _) => {
                // Check the key, rights and bounds first: a rejected write
                // touches nothing at the peer.
                let target = if len == 0 {
                    None
                } else {
                    let Some((rlen, base)) = remote.region(ra.rkey, Access::REMOTE_WRITE) else {
                        Self::fail_peer(remote);
                        return Err(WcStatus::RemoteAccess);
                    };
                    let off = ra.addr.wrapping_sub(base);
                    let in_bounds = ra.addr >= base
                        && usize::try_from(off)
                            .ok()
                            .and_then(|o| o.checked_add(len))
                            .is_some_and(|e| e <= rlen);
                    if !in_bounds {
                        Self::fail_peer(remote);
                        return Err(WcStatus::RemoteAccess);
                    }
                    Some((rlen, off as usize))
                };
                let claimed = match wr.op {
                    SendOp::RdmaWriteWithImm(_, imm) => {
                        let Some(i) = claim(remote.hdr(), &remote.qp, remote.cap) else {
                            return Err(Self::no_receive(remote));
                        };
                        Some((i, imm))
                    }
                    _ => None,
                };
                let copied = match target {
                    None => true,
                    Some((rlen, off)) => Self::peer_mr(&mut side.cache, remote, ra.rkey, rlen)
                        .is_some_and(|dst| copy_to(dst, off)),
                };
                if let Some((i, imm)) = claimed {
                    let s = slot(&remote.qp, remote.cap, i).ok_or(WcStatus::RemoteOperation)?;
                    if copied {
                        fill(s, i, ST_SUCCESS, OP_RECV_RDMA_IMM, len as u32, Some(imm));
                    } else {
                        fill(s, i, ST_LOC_PROT, OP_RECV_RDMA_IMM, 0, None);
                    }
                    notify(remote.cq());
                }
                if copied {
                    Ok(())
                } else {
                    Self::fail_peer(remote);
                    Err(WcStatus::RemoteAccess)
                }
            }
        }
    }
}

impl Drop for QpCore {
    fn drop(&mut self) {
        self.hdr().state.store(STATE_DESTROYED, Ordering::Release);
        if let Some(r) = self.remote.get() {
            notify(r.cq());
        }
    }
}

struct SoftQp(Arc<QpCore>);

impl QpOps for SoftQp {
    fn qp_num(&self) -> u32 {
        self.0.num
    }

    fn peer_left(&self) -> bool {
        self.0.check_peer();
        self.0.peer_left.load(Ordering::Acquire)
    }

    fn state(&self) -> QpState {
        let qp = &self.0;
        qp.check_peer();
        match qp.hdr().state.load(Ordering::Acquire) {
            STATE_INIT => QpState::Init,
            STATE_RTS => QpState::ReadyToSend,
            _ => QpState::Error,
        }
    }

    fn endpoint(&self) -> Endpoint {
        let qp = &self.0;
        let mut b = Vec::with_capacity(256);
        b.extend_from_slice(EP_MAGIC);
        b.extend_from_slice(&qp.num.to_le_bytes());
        b.extend_from_slice(&qp.nonce.to_le_bytes());
        b.extend_from_slice(&qp.pd.nonce.to_le_bytes());
        for p in [qp.shm.path(), qp.pd.shm.path(), qp.recv_cq.shm.path()] {
            let bytes = p.as_os_str().as_bytes();
            b.extend_from_slice(&(bytes.len() as u16).to_le_bytes());
            b.extend_from_slice(bytes);
        }
        Endpoint(b)
    }

    fn connect(&self, ep: &Endpoint) -> Result<()> {
        let qp = &self.0;
        if qp.remote.get().is_some() {
            return Err(VerbsError::AlreadyConnected { qp_num: qp.num });
        }
        let d = decode_endpoint(ep.as_bytes())?;
        let bad = |m: String| VerbsError::BadEndpoint(m);
        let rqp = Shm::open(&d.qp_path, QP_HEADER_LEN)?;
        let cap = {
            let h = rqp
                .at::<QpHeader>(0)
                .ok_or_else(|| bad("short queue-pair file".into()))?;
            if h.magic.load(Ordering::Acquire) != QP_MAGIC
                || h.nonce.load(Ordering::Relaxed) != d.nonce
                || h.qp_num.load(Ordering::Relaxed) != d.qp_num
            {
                return Err(bad(format!(
                    "{} is not queue pair {}",
                    d.qp_path.display(),
                    d.qp_num
                )));
            }
            if h.state.load(Ordering::Acquire) != STATE_INIT
                && h.state.load(Ordering::Acquire) != STATE_RTS
            {
                return Err(bad(format!("queue pair {} is not usable", d.qp_num)));
            }
            let cap = h.cap.load(Ordering::Relaxed);
            if cap == 0 || cap > MAX_WR || rqp.len() < QP_HEADER_LEN + cap as usize * SLOT_LEN {
                return Err(bad(format!("queue pair {} has a bad ring", d.qp_num)));
            }
            cap
        };
        if rqp.owner_gone() {
            return Err(bad(format!(
                "the process of queue pair {} is gone",
                d.qp_num
            )));
        }
        let rpd = Shm::open(&d.pd_path, PD_HEADER_LEN + PD_ENTRIES * PD_ENTRY_LEN)?;
        let pd_ok = rpd.at::<PdHeader>(0).is_some_and(|h| {
            h.magic.load(Ordering::Acquire) == PD_MAGIC
                && h.nonce.load(Ordering::Relaxed) == d.pd_nonce
        });
        if !pd_ok {
            return Err(bad(format!(
                "{} is not the peer's protection domain",
                d.pd_path.display()
            )));
        }
        let rcq = Shm::open(&d.cq_path, CQ_LEN)?;
        let cq_ok = rcq
            .at::<CqHeader>(0)
            .is_some_and(|h| h.magic.load(Ordering::Acquire) == CQ_MAGIC);
        if !cq_ok {
            return Err(bad(format!(
                "{} is not a completion queue",
                d.cq_path.display()
            )));
        }
        let remote = Remote {
            qp: rqp,
            pd: rpd,
            cq: rcq,
            cap,
        };
        if qp.remote.set(remote).is_err() {
            return Err(VerbsError::AlreadyConnected { qp_num: qp.num });
        }
        let _ = qp.hdr().state.compare_exchange(
            STATE_INIT,
            STATE_RTS,
            Ordering::AcqRel,
            Ordering::Acquire,
        );
        Ok(())
    }

    fn post_send(&self, wrs: &[SendWr<'_>]) -> Result<()> {
        let qp = &self.0;
        let Some(remote) = qp.remote.get() else {
            return Err(VerbsError::NotConnected { qp_num: qp.num });
        };
        qp.check_down()?;
        let mut side = lock(&qp.send);
        let outstanding = side.posted - qp.retired.load(Ordering::Acquire);
        if outstanding + wrs.len() as u64 > u64::from(qp.max_send) {
            return Err(VerbsError::QueueFull {
                queue: "send",
                posting: wrs.len(),
                depth: qp.max_send,
            });
        }
        for wr in wrs {
            if let Some(sge) = &wr.local {
                check_sge(sge, &qp.pd, Access::NONE)?;
            }
        }
        if faults::armed() {
            if let Some(kind) = faults::count_sends(wrs.len() as u64) {
                let event = match kind {
                    FaultKind::QpFatal => AsyncEvent::QpFatal { qp_num: qp.num },
                    FaultKind::PortError => AsyncEvent::PortError { port: SOFT_PORT },
                };
                drop(side);
                qp.pd.shared.apply(event);
                return qp.check_down();
            }
        }
        for wr in wrs {
            side.posted += 1;
            let ssn = side.posted;
            let status = if qp.hdr().state.load(Ordering::Acquire) != STATE_RTS {
                WcStatus::WrFlush
            } else {
                match qp.execute(remote, &mut side, wr) {
                    Ok(()) => WcStatus::Success,
                    Err(st) => {
                        qp.set_error();
                        st
                    }
                }
            };
            if wr.signaled || !status.is_success() {
                qp.send_cq.push(Pending {
                    wc: Completion {
                        wr_id: wr.wr_id,
                        qp_num: qp.num,
                        opcode: match wr.op {
                            SendOp::Send | SendOp::SendWithImm(_) => WcOpcode::Send,
                            _ => WcOpcode::RdmaWrite,
                        },
                        status,
                        byte_len: if status.is_success() {
                            wr.len() as u32
                        } else {
                            0
                        },
                        imm: None,
                    },
                    retire: Some((qp.retired.clone(), ssn)),
                });
            }
        }
        Ok(())
    }

    fn post_recv(&self, wrs: &[RecvWr<'_>]) -> Result<()> {
        let qp = &self.0;
        qp.check_down()?;
        let _g = lock(&qp.recv_lock);
        let h = qp.hdr();
        let mut q = h.post_idx.load(Ordering::Relaxed);
        let outstanding = q - h.poll_idx.load(Ordering::Acquire);
        if outstanding + wrs.len() as u64 > u64::from(qp.cap) {
            return Err(VerbsError::QueueFull {
                queue: "receive",
                posting: wrs.len(),
                depth: qp.cap,
            });
        }
        for wr in wrs {
            if let Some(sge) = &wr.buf {
                check_sge(sge, &qp.pd, Access::LOCAL_WRITE)?;
            }
        }
        for wr in wrs {
            let s = slot(&qp.shm, qp.cap, q).expect("own ring slot");
            s.wr_id.store(wr.wr_id, Ordering::Relaxed);
            let (key, off, len) = wr
                .buf
                .map_or((0, 0, 0), |b| (b.mr.lkey(), b.offset as u64, b.len as u64));
            s.lkey.store(key, Ordering::Relaxed);
            s.offset.store(off, Ordering::Relaxed);
            s.len.store(len, Ordering::Relaxed);
            s.seq.store(2 * q + 1, Ordering::Release);
            q += 1;
            h.post_idx.store(q, Ordering::Release);
        }
        if h.state.load(Ordering::Acquire) == STATE_ERROR {
            notify(qp.recv_cq.hdr());
        }
        Ok(())
    }
}

// ---------------------------------------------------------------------------
// Endpoints: "RVS1", qp_num u32, qp nonce u64, pd nonce u64, then the paths of
// the queue-pair, protection-domain and receive completion-queue files, each
// as a u16 length and bytes; all little-endian, no trailing bytes.

const EP_MAGIC: &[u8; 4] = b"RVS1";

struct DecodedEndpoint {
    qp_num: u32,
    nonce: u64,
    pd_nonce: u64,
    qp_path: PathBuf,
    pd_path: PathBuf,
    cq_path: PathBuf,
}

struct Reader<'a>(&'a [u8]);

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8]> {
        if self.0.len() < n {
            return Err(VerbsError::BadEndpoint("truncated".into()));
        }
        let (a, b) = self.0.split_at(n);
        self.0 = b;
        Ok(a)
    }

    fn u64(&mut self) -> Result<u64> {
        let mut b = [0u8; 8];
        b.copy_from_slice(self.take(8)?);
        Ok(u64::from_le_bytes(b))
    }

    fn u32(&mut self) -> Result<u32> {
        let mut b = [0u8; 4];
        b.copy_from_slice(self.take(4)?);
        Ok(u32::from_le_bytes(b))
    }

    fn path(&mut self) -> Result<PathBuf> {
        let mut b = [0u8; 2];
        b.copy_from_slice(self.take(2)?);
        let n = u16::from_le_bytes(b) as usize;
        let p = PathBuf::from(OsStr::from_bytes(self.take(n)?));
        let named_ok = p
            .file_name()
            .and_then(OsStr::to_str)
            .is_some_and(|f| f.starts_with(FILE_PREFIX));
        let plain = p.is_absolute()
            && p.components()
                .all(|c| matches!(c, Component::RootDir | Component::Normal(_)));
        if !named_ok || !plain {
            return Err(VerbsError::BadEndpoint(format!(
                "{} is not a soft verbs file",
                p.display()
            )));
        }
        Ok(p)
    }
}

fn decode_endpoint(b: &[u8]) -> Result<DecodedEndpoint> {
    let mut r = Reader(b);
    if r.take(4)? != EP_MAGIC {
        return Err(VerbsError::BadEndpoint(
            "not a soft verbs endpoint (wrong provider or version)".into(),
        ));
    }
    let d = DecodedEndpoint {
        qp_num: r.u32()?,
        nonce: r.u64()?,
        pd_nonce: r.u64()?,
        qp_path: r.path()?,
        pd_path: r.path()?,
        cq_path: r.path()?,
    };
    if !r.0.is_empty() {
        return Err(VerbsError::BadEndpoint(format!(
            "{} trailing bytes",
            r.0.len()
        )));
    }
    Ok(d)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn endpoint_decoder_rejects_garbage() {
        assert!(decode_endpoint(b"").is_err());
        assert!(decode_endpoint(b"XXXX0000").is_err());
        let mut ok = Vec::new();
        ok.extend_from_slice(EP_MAGIC);
        ok.extend_from_slice(&7u32.to_le_bytes());
        ok.extend_from_slice(&1u64.to_le_bytes());
        ok.extend_from_slice(&2u64.to_le_bytes());
        for p in [
            "/dev/shm/rcud-verbs-1-a-qp",
            "/dev/shm/rcud-verbs-1-a-pd",
            "/dev/shm/rcud-verbs-1-a-cq",
        ] {
            ok.extend_from_slice(&(p.len() as u16).to_le_bytes());
            ok.extend_from_slice(p.as_bytes());
        }
        let d = decode_endpoint(&ok).unwrap();
        assert_eq!(d.qp_num, 7);
        assert_eq!(d.cq_path, Path::new("/dev/shm/rcud-verbs-1-a-cq"));
        let mut trailing = ok.clone();
        trailing.push(0);
        assert!(decode_endpoint(&trailing).is_err());
        for cut in 0..ok.len() {
            assert!(decode_endpoint(&ok[..cut]).is_err());
        }
        let mut evil = Vec::new();
        evil.extend_from_slice(&ok[..24]);
        for p in [
            "/etc/passwd",
            "/dev/shm/rcud-verbs-1-a-pd",
            "/dev/shm/rcud-verbs-1-a-cq",
        ] {
            evil.extend_from_slice(&(p.len() as u16).to_le_bytes());
            evil.extend_from_slice(p.as_bytes());
        }
        assert!(decode_endpoint(&evil).is_err());
    }

    #[test]
    fn slot_claims_follow_posting() {
        let shm = Shm::create(new_path("test"), QP_HEADER_LEN + 4 * SLOT_LEN).unwrap();
        let h = shm.at::<QpHeader>(0).unwrap();
        assert_eq!(claim(h, &shm, 4), None);
        for q in 0..2u64 {
            slot(&shm, 4, q)
                .unwrap()
                .seq
                .store(2 * q + 1, Ordering::Release);
            h.post_idx.store(q + 1, Ordering::Release);
        }
        assert_eq!(claim(h, &shm, 4), Some(0));
        assert_eq!(claim(h, &shm, 4), Some(1));
        assert_eq!(claim(h, &shm, 4), None);
    }
}
