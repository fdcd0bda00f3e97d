//! CUDA runtime semantics over remote GPUs.
//!
//! One [`Runtime`] per process (see [`Runtime::global`]) holds the device table
//! built from `RCUD_SERVERS`, one lazily connected session per device, the
//! process-wide map of device allocations (for unified addressing and
//! `cudaMemcpyDefault`), and the page-locked host memory table. The current
//! device and the last error are per host thread, as in CUDA.

use std::cell::Cell;
use std::collections::{BTreeMap, HashMap};
use std::ops::Bound;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use parking_lot::{Mutex, RwLock};
use rcud_proto::ops::{req, Op};
use rcud_proto::{CudaError, DeviceProps};

use crate::config::{parse_servers, ServerEntry};
use rcud_fatbin::ParamLayout;
use rcud_proto::codec::Blob;
use rcud_proto::ops::{Failure, FuncAttributes, ATTR_CARVEOUT, ATTR_MAX_DYNAMIC_SHARED};

use crate::hostmem::{HostMemory, HostRegion, HOST_ALLOC_FLAGS};
use crate::modules::{ModuleImage, Registry};
use crate::session::{Completion, HostDst, Session};
use crate::ClientError;

/// The CUDA runtime version this library implements (`cudaRuntimeGetVersion`).
pub const RUNTIME_VERSION: i32 = 13000;

/// `cudaSetDeviceFlags` flags this runtime accepts: schedule mask, MapHost,
/// LmemResizeToMax, SyncMemops.
const DEVICE_FLAGS: u32 = 0x07 | 0x08 | 0x10 | 0x80;

/// `cudaMemcpyKind`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MemcpyKind {
    /// `cudaMemcpyHostToHost`.
    HostToHost,
    /// `cudaMemcpyHostToDevice`.
    HostToDevice,
    /// `cudaMemcpyDeviceToHost`.
    DeviceToHost,
    /// `cudaMemcpyDeviceToDevice`.
    DeviceToDevice,
    /// `cudaMemcpyDefault`: inferred from the pointers (unified addressing).
    Default,
}

impl MemcpyKind {
    /// Converts the C enum value.
    pub fn from_raw(kind: i32) -> Result<Self, CudaError> {
        Ok(match kind {
            0 => Self::HostToHost,
            1 => Self::HostToDevice,
            2 => Self::DeviceToHost,
            3 => Self::DeviceToDevice,
            4 => Self::Default,
            _ => return Err(CudaError::INVALID_MEMCPY_DIRECTION),
        })
    }
}

/// Where a copy goes, with device ordinals resolved.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Route {
    /// A plain host copy.
    HostToHost,
    /// To device `0`.
    HostToDevice(usize),
    /// From device `0`.
    DeviceToHost(usize),
    /// Between devices (possibly the same one).
    DeviceToDevice {
        /// Destination device.
        dst: usize,
        /// Source device.
        src: usize,
    },
}

/// A remote GPU as enumerated at start-up.
#[derive(Debug, Clone)]
pub struct RemoteDevice {
    /// `host:port` of its server.
    pub server: String,
    /// Its index on that server.
    pub gpu: u32,
    /// Its properties.
    pub props: DeviceProps,
    /// `cudaDeviceAttr` values it answers.
    pub attributes: HashMap<i32, i32>,
    /// Driver version on its server.
    pub driver_version: i32,
    /// Backend serving it (`emu`, `cuda`).
    pub backend: String,
}

#[derive(Debug, Default)]
struct DeviceState {
    session: Option<Session>,
    attached: bool,
    flags: u32,
    /// An error that every call on this device returns until `cudaDeviceReset`.
    sticky: Option<CudaError>,
    /// The sticky error came from a kernel launch and no call has seen it yet:
    /// like an asynchronous fault on a GPU, `cudaGetLastError` does not report
    /// it before the next call that reaches the device.
    sticky_unseen: bool,
    /// A failure of asynchronous work, returned by the next synchronizing call.
    async_error: Option<CudaError>,
    /// When the oldest operation still in the batch was queued.
    queued_since: Option<Instant>,
    /// Registry module index -> module id on the server.
    modules: HashMap<usize, u32>,
    /// Host stub -> the kernel on the server.
    kernels: HashMap<u64, Arc<RemoteKernel>>,
    /// Host shadow -> (device address, size) of a variable.
    variables: HashMap<u64, (u64, u64)>,
}

impl DeviceState {
    /// Forgets everything the server held for this process.
    fn forget_remote(&mut self) {
        self.modules.clear();
        self.kernels.clear();
        self.variables.clear();
    }
}

/// A kernel loaded on one device.
#[derive(Debug)]
pub struct RemoteKernel {
    /// Function id on the server.
    pub function: u32,
    /// Parameter offsets and sizes.
    pub layout: ParamLayout,
    /// What `cudaFuncGetAttributes` reports.
    pub attributes: FuncAttributes,
}

/// `<<<grid, block, shared, stream>>>`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LaunchConfig {
    /// Grid dimensions in blocks.
    pub grid: [u32; 3],
    /// Block dimensions in threads.
    pub block: [u32; 3],
    /// Dynamic shared memory per block, in bytes.
    pub shared_mem: u64,
    /// Stream handle (0: the default stream).
    pub stream: u64,
}

thread_local! {
    static CURRENT_DEVICE: Cell<usize> = const { Cell::new(0) };
    static LAST_ERROR: Cell<CudaError> = const { Cell::new(CudaError::SUCCESS) };
}

/// The client runtime of one process.
pub struct Runtime {
    devices: Vec<RemoteDevice>,
    states: Vec<Mutex<DeviceState>>,
    /// Set when no device could be enumerated; every device call returns it.
    init_error: Option<CudaError>,
    /// Device allocations of every device: start -> (length, device ordinal).
    allocs: RwLock<BTreeMap<u64, (u64, usize)>>,
    host: Mutex<HostMemory>,
    registry: RwLock<Registry>,
    streams: Mutex<HashMap<u64, StreamState>>,
    events: Mutex<HashMap<u64, EventState>>,
    next_handle: AtomicU64,
    printf_sink: OnceLock<PrintfSink>,
    progress: OnceLock<Option<std::thread::Thread>>,
    client_name: String,
}

impl std::fmt::Debug for Runtime {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Runtime")
            .field("devices", &self.devices.len())
            .field("init_error", &self.init_error)
            .finish_non_exhaustive()
    }
}

/// Where device `printf` output goes.
pub type PrintfSink = Box<dyn Fn(&[u8]) + Send + Sync>;

/// Stream and event handles start here, clear of the special streams
/// `0` (legacy default), `1` (`cudaStreamLegacy`) and `2` (`cudaStreamPerThread`).
const FIRST_HANDLE: u64 = 0x1000;
/// `cudaStreamNonBlocking`.
const STREAM_FLAGS: u32 = 0x1;
/// `cudaEventBlockingSync | cudaEventDisableTiming | cudaEventInterprocess`.
const EVENT_FLAGS: u32 = 0x7;
const EVENT_DISABLE_TIMING: u32 = 0x2;
const EVENT_INTERPROCESS: u32 = 0x4;
/// Stream priorities: 0 is the least, -5 the greatest, as on current GPUs.
pub const STREAM_PRIORITY_LEAST: i32 = 0;
/// See [`STREAM_PRIORITY_LEAST`].
pub const STREAM_PRIORITY_GREATEST: i32 = -5;

/// A stream created by `cudaStreamCreate*`.
#[derive(Debug, Clone, Copy)]
struct StreamState {
    device: usize,
    flags: u32,
    priority: i32,
}

/// An event created by `cudaEventCreate*`.
#[derive(Debug, Clone, Copy)]
struct EventState {
    flags: u32,
    /// The device of the stream it was last recorded on.
    device: Option<usize>,
    /// Server time when the work before the record completed; `None` until
    /// the record's reply arrived.
    timestamp: Option<u64>,
}

impl Runtime {
    /// The process-wide runtime, built from the environment on first use.
    pub fn global() -> &'static Runtime {
        static RUNTIME: OnceLock<Runtime> = OnceLock::new();
        RUNTIME.get_or_init(Runtime::from_env)
    }

    fn from_env() -> Self {
        let name = format!(
            "{} (pid {})",
            std::env::args().next().unwrap_or_default(),
            std::process::id()
        );
        match std::env::var("RCUD_SERVERS") {
            Err(_) => {
                report("RCUD_SERVERS is not set: no remote GPU to use (start the program with `rcud run`)");
                Self::empty(name, CudaError::NO_DEVICE)
            }
            Ok(value) => match parse_servers(&value) {
                Ok(entries) => Self::connect(&entries, name),
                Err(e) => {
                    report(&e.to_string());
                    Self::empty(name, CudaError::NO_DEVICE)
                }
            },
        }
    }

    fn empty(client_name: String, error: CudaError) -> Self {
        Self {
            devices: Vec::new(),
            states: Vec::new(),
            init_error: Some(error),
            allocs: RwLock::default(),
            host: Mutex::default(),
            registry: RwLock::default(),
            streams: Mutex::default(),
            events: Mutex::default(),
            next_handle: AtomicU64::new(FIRST_HANDLE),
            printf_sink: OnceLock::new(),
            progress: OnceLock::new(),
            client_name,
        }
    }

    /// Enumerates the GPUs of `entries`. Unreachable servers are reported on
    /// stderr and contribute no device.
    pub fn connect(entries: &[ServerEntry], client_name: String) -> Self {
        let mut devices = Vec::new();
        let mut states = Vec::new();
        for entry in entries {
            let probe = match Session::connect(&entry.addr, &client_name) {
                Ok(s) => s,
                Err(e) => {
                    report(&e.to_string());
                    continue;
                }
            };
            let hello = probe.server_hello().clone();
            let gpus: Vec<u32> = match entry.gpu {
                Some(g) if g < hello.gpu_count => vec![g],
                Some(g) => {
                    report(&format!(
                        "server {} has {} GPU(s), no GPU #{g}",
                        entry.addr, hello.gpu_count
                    ));
                    continue;
                }
                None => (0..hello.gpu_count).collect(),
            };
            let first = devices.len();
            let mut probe = Some(probe);
            for &gpu in &gpus {
                let Some(session) = probe.as_mut() else { break };
                match session.call(&req::GetDeviceInfo { gpu }, &[], &mut []) {
                    Ok(Ok(info)) => {
                        devices.push(RemoteDevice {
                            server: entry.addr.clone(),
                            gpu,
                            props: info.props,
                            attributes: info.attributes.into_iter().collect(),
                            driver_version: hello.driver_version,
                            backend: hello.backend.clone(),
                        });
                        states.push(Mutex::new(DeviceState::default()));
                    }
                    Ok(Err(e)) => report(&format!("{} GPU #{gpu}: {e}", entry.addr)),
                    Err(e) => {
                        report(&e.to_string());
                        probe = None;
                    }
                }
            }
            // The probe connection becomes the session of the entry's first device.
            if let (Some(session), Some(state)) = (probe, states.get_mut(first)) {
                state.get_mut().session = Some(session);
            }
        }
        let init_error = devices.is_empty().then_some(CudaError::NO_DEVICE);
        Self {
            devices,
            states,
            init_error,
            allocs: RwLock::default(),
            host: Mutex::default(),
            registry: RwLock::default(),
            streams: Mutex::default(),
            events: Mutex::default(),
            next_handle: AtomicU64::new(FIRST_HANDLE),
            printf_sink: OnceLock::new(),
            progress: OnceLock::new(),
            client_name,
        }
    }

    // ---- devices -------------------------------------------------------

    /// The enumerated devices.
    pub fn devices(&self) -> &[RemoteDevice] {
        &self.devices
    }

    /// `cudaGetDeviceCount`.
    pub fn device_count(&self) -> Result<usize, CudaError> {
        match self.init_error {
            Some(e) => Err(e),
            None => Ok(self.devices.len()),
        }
    }

    fn check_device(&self, device: i32) -> Result<usize, CudaError> {
        self.device_count()?;
        usize::try_from(device)
            .ok()
            .filter(|&d| d < self.devices.len())
            .ok_or(CudaError::INVALID_DEVICE)
    }

    /// The calling thread's current device.
    pub fn current_device(&self) -> Result<usize, CudaError> {
        self.device_count()?;
        Ok(CURRENT_DEVICE.with(Cell::get))
    }

    /// `cudaSetDevice`.
    pub fn set_device(&self, device: i32) -> Result<(), CudaError> {
        let d = self.check_device(device)?;
        CURRENT_DEVICE.with(|c| c.set(d));
        Ok(())
    }

    /// `cudaGetDeviceProperties`.
    pub fn props(&self, device: i32) -> Result<&DeviceProps, CudaError> {
        let d = self.check_device(device)?;
        Ok(&self.devices[d].props)
    }

    /// `cudaDeviceGetAttribute`.
    pub fn attribute(&self, attr: i32, device: i32) -> Result<i32, CudaError> {
        let d = self.check_device(device)?;
        self.devices[d]
            .attributes
            .get(&attr)
            .copied()
            .ok_or(CudaError::INVALID_VALUE)
    }

    /// `cudaDriverGetVersion`: the oldest driver among the servers, 0 without any.
    pub fn driver_version(&self) -> i32 {
        self.devices
            .iter()
            .map(|d| d.driver_version)
            .min()
            .unwrap_or(0)
    }

    /// `cudaChooseDevice`: the first device with exactly the requested compute
    /// capability, else the first one at least as capable, else device 0.
    pub fn choose_device(&self, major: i32, minor: i32) -> Result<i32, CudaError> {
        self.device_count()?;
        let cc = |d: &RemoteDevice| (d.props.major, d.props.minor);
        let pick = self
            .devices
            .iter()
            .position(|d| cc(d) == (major, minor))
            .or_else(|| self.devices.iter().position(|d| cc(d) >= (major, minor)))
            .unwrap_or(0);
        Ok(pick as i32)
    }

    /// `cudaSetDeviceFlags` for the current device.
    pub fn set_device_flags(&self, flags: u32) -> Result<(), CudaError> {
        if flags & !DEVICE_FLAGS != 0 || (flags & 0x07).count_ones() > 1 {
            return Err(CudaError::INVALID_VALUE);
        }
        let d = self.current_device()?;
        self.states[d].lock().flags = flags;
        Ok(())
    }

    /// `cudaGetDeviceFlags` of the current device.
    pub fn device_flags(&self) -> Result<u32, CudaError> {
        let d = self.current_device()?;
        Ok(self.states[d].lock().flags)
    }

    // ---- remote calls --------------------------------------------------

    /// The attached session of device `d`, connecting and attaching on first
    /// use. Fails with the device's sticky error, if it has one.
    fn ready_session<'a>(
        &self,
        st: &'a mut DeviceState,
        d: usize,
    ) -> Result<&'a mut Session, CudaError> {
        if let Some(e) = st.sticky {
            st.sticky_unseen = false;
            return Err(e);
        }
        let dev = &self.devices[d];
        if st.session.is_none() {
            match Session::connect(&dev.server, &self.client_name) {
                Ok(s) => st.session = Some(s),
                Err(e) => return Err(self.lost(st, d, &e)),
            }
        }
        if !st.attached {
            let attach = match st.session.as_mut() {
                Some(session) => session.call(&req::Attach { gpu: dev.gpu }, &[], &mut []),
                None => return Err(CudaError::DEVICES_UNAVAILABLE),
            };
            match attach {
                Ok(Ok(_)) => st.attached = true,
                Ok(Err(f)) => return Err(f.code),
                Err(e) => return Err(self.lost(st, d, &e)),
            }
        }
        st.session.as_mut().ok_or(CudaError::DEVICES_UNAVAILABLE)
    }

    /// Runs `req` on device `d` and waits for its reply. Queued asynchronous
    /// work goes first; a failure of that work is returned instead of running
    /// `req`, as CUDA reports asynchronous errors at the next call.
    fn call<O: Op>(
        &self,
        d: usize,
        req: &O,
        bulk_out: &[u8],
        bulk_in: &mut [u8],
    ) -> Result<O::Reply, CudaError> {
        let mut guard = self.states[d].lock();
        let st = &mut *guard;
        self.flush_locked(st, d)?;
        let session = self.ready_session(st, d)?;
        match session.call(req, bulk_out, bulk_in) {
            Ok(Ok(reply)) => Ok(reply),
            Ok(Err(failure)) => Err(self.failed(st, d, &failure)),
            Err(e) => Err(self.lost(st, d, &e)),
        }
    }

    /// Records a failure the server reported and returns its code.
    fn failed(&self, st: &mut DeviceState, d: usize, failure: &Failure) -> CudaError {
        if !failure.message.is_empty() {
            report(&format!("device {d}: {failure}"));
        }
        if failure.code.is_sticky() {
            st.sticky = Some(failure.code);
        }
        failure.code
    }

    /// Queues an asynchronous operation on device `d`; it runs at the next
    /// flush (a synchronizing call, a full batch, or the progress thread).
    fn enqueue<O: Op>(
        &'static self,
        d: usize,
        req: &O,
        bulk_out: &[u8],
        completion: Completion,
        reply_bytes: u64,
    ) -> Result<(), CudaError> {
        let mut guard = self.states[d].lock();
        let st = &mut *guard;
        if st.session.as_ref().is_some_and(Session::batch_full) {
            self.flush_locked(st, d)?;
        }
        let session = self.ready_session(st, d)?;
        session.enqueue(req, bulk_out, completion);
        session.expect_reply_bytes(reply_bytes);
        st.queued_since.get_or_insert_with(Instant::now);
        drop(guard);
        self.wake_progress();
        Ok(())
    }

    /// Queues a host function on device `d`, to run after the work before it.
    pub fn enqueue_host_fn(
        &'static self,
        stream: u64,
        f: Box<dyn FnOnce() + Send>,
    ) -> Result<(), CudaError> {
        let d = self.stream_device(stream)?;
        let mut guard = self.states[d].lock();
        let st = &mut *guard;
        let session = self.ready_session(st, d)?;
        session.enqueue_callback(f);
        st.queued_since.get_or_insert_with(Instant::now);
        drop(guard);
        self.wake_progress();
        Ok(())
    }

    /// Sends device `d`'s queued work and applies what the replies say: event
    /// timestamps, `printf` output, and the first failure (sticky, or kept
    /// for the next call).
    fn flush_locked(&self, st: &mut DeviceState, d: usize) -> Result<(), CudaError> {
        st.queued_since = None;
        let Some(session) = st.session.as_mut() else {
            return Ok(());
        };
        if session.queued() == 0 {
            return Ok(());
        }
        let outcome = match session.flush() {
            Ok(o) => o,
            Err(e) => return Err(self.lost(st, d, &e)),
        };
        if !outcome.events.is_empty() {
            let mut events = self.events.lock();
            for (event, ts) in outcome.events {
                if let Some(e) = events.get_mut(&event) {
                    e.timestamp = Some(ts);
                }
            }
        }
        if !outcome.printf.is_empty() {
            match self.printf_sink.get() {
                Some(sink) => sink(&outcome.printf),
                None => {
                    use std::io::Write;
                    let _ = std::io::stdout().write_all(&outcome.printf);
                }
            }
        }
        if let Some(failure) = outcome.first_error {
            let code = self.failed(st, d, &failure);
            if code.is_sticky() {
                st.sticky_unseen = true;
            } else {
                st.async_error.get_or_insert(code);
            }
        }
        Ok(())
    }

    /// Sends every device's queued work and waits for it, keeping its errors
    /// for the next synchronizing call: host memory that queued copies write
    /// into is about to be released.
    pub fn drain_all(&self) {
        for (d, state) in self.states.iter().enumerate() {
            let mut guard = state.lock();
            let _ = self.flush_locked(&mut guard, d);
        }
    }

    /// Flushes device `d` and returns the error its asynchronous work left.
    fn synchronize_device(&self, d: usize) -> Result<(), CudaError> {
        let mut guard = self.states[d].lock();
        let st = &mut *guard;
        self.flush_locked(st, d)?;
        if let Some(e) = st.sticky {
            st.sticky_unseen = false;
            return Err(e);
        }
        match st.async_error.take() {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }

    /// Starts, or wakes, the thread that sends queued work nobody waits for,
    /// so that callbacks run and streams progress without a synchronizing call.
    fn wake_progress(&'static self) {
        let thread = self.progress.get_or_init(|| {
            let spawned = std::thread::Builder::new()
                .name("rcud-progress".into())
                .spawn(move || self.progress_loop());
            match spawned {
                Ok(handle) => Some(handle.thread().clone()),
                Err(e) => {
                    report(&format!("cannot start the progress thread: {e}"));
                    None
                }
            }
        });
        if let Some(t) = thread {
            t.unpark();
        }
    }

    fn progress_loop(&self) {
        const DELAY: Duration = Duration::from_millis(1);
        loop {
            let mut busy = false;
            for (d, state) in self.states.iter().enumerate() {
                let Some(mut guard) = state.try_lock() else {
                    busy = true;
                    continue;
                };
                if let Some(since) = guard.queued_since {
                    busy = true;
                    if since.elapsed() >= DELAY {
                        let _ = self.flush_locked(&mut guard, d);
                    }
                }
            }
            if busy {
                std::thread::park_timeout(DELAY);
            } else {
                std::thread::park();
            }
        }
    }

    /// Marks device `d` unusable after a connection failure.
    fn lost(&self, st: &mut DeviceState, d: usize, err: &ClientError) -> CudaError {
        report(&format!("device {d}: {err}"));
        st.session = None;
        st.attached = false;
        st.forget_remote();
        let code = err.cuda_error();
        st.sticky = Some(code);
        code
    }

    /// `cudaMalloc` on the current device.
    pub fn malloc(&self, size: u64) -> Result<u64, CudaError> {
        let d = self.current_device()?;
        if size == 0 {
            return Ok(0);
        }
        let ptr = self.call(d, &req::Malloc { size }, &[], &mut [])?.ptr;
        self.allocs.write().insert(ptr, (size, d));
        Ok(ptr)
    }

    /// `cudaFree`: frees on the device that owns `ptr`.
    pub fn free(&self, ptr: u64) -> Result<(), CudaError> {
        let d = self.current_device()?;
        if ptr == 0 {
            return Ok(());
        }
        let owner = self.allocs.read().get(&ptr).map(|&(_, d)| d);
        // Unknown pointers go to the current device, which rejects them; a
        // pointer freed twice gets the same answer.
        self.call(owner.unwrap_or(d), &req::Free { ptr }, &[], &mut [])?;
        self.allocs.write().remove(&ptr);
        Ok(())
    }

    /// The device that owns the allocation containing `ptr`.
    pub fn device_of(&self, ptr: u64) -> Option<usize> {
        self.allocs
            .read()
            .range((Bound::Unbounded, Bound::Included(ptr)))
            .next_back()
            .filter(|(&base, &(len, _))| ptr < base + len)
            .map(|(_, &(_, d))| d)
    }

    /// `cudaMemGetInfo` of the current device: (free, total).
    pub fn mem_get_info(&self) -> Result<(u64, u64), CudaError> {
        let d = self.current_device()?;
        let r = self.call(d, &req::MemGetInfo {}, &[], &mut [])?;
        Ok((r.free, r.total))
    }

    /// `cudaDeviceSynchronize` on the current device.
    pub fn synchronize(&self) -> Result<(), CudaError> {
        let d = self.current_device()?;
        self.call(d, &req::DeviceSynchronize {}, &[], &mut [])?;
        Ok(())
    }

    /// `cudaDeviceReset`: releases everything this process holds on the current
    /// device and clears its errors; the next call reconnects.
    pub fn reset(&self) -> Result<(), CudaError> {
        let d = self.current_device()?;
        let mut guard = self.states[d].lock();
        let st = &mut *guard;
        // Queued work runs first; its errors die with the context.
        let _ = self.flush_locked(st, d);
        st.async_error = None;
        if let (Some(session), true) = (st.session.as_mut(), st.attached) {
            // Closing the connection frees everything server-side anyway; the
            // explicit reset keeps the connection for the next call.
            match session.call(&req::DeviceReset {}, &[], &mut []) {
                Ok(_) => {}
                Err(_) => {
                    st.session = None;
                    st.attached = false;
                }
            }
        }
        st.sticky = None;
        st.sticky_unseen = false;
        st.flags = 0;
        st.forget_remote();
        drop(guard);
        self.allocs.write().retain(|_, &mut (_, owner)| owner != d);
        Ok(())
    }

    /// Resolves a `cudaMemcpy` direction to devices.
    pub fn memcpy_route(&self, dst: u64, src: u64, kind: MemcpyKind) -> Result<Route, CudaError> {
        let current = || self.current_device();
        let on = |ptr: u64| -> Result<usize, CudaError> {
            match self.device_of(ptr) {
                Some(d) => Ok(d),
                None => current(),
            }
        };
        Ok(match kind {
            MemcpyKind::HostToHost => Route::HostToHost,
            MemcpyKind::HostToDevice => Route::HostToDevice(on(dst)?),
            MemcpyKind::DeviceToHost => Route::DeviceToHost(on(src)?),
            MemcpyKind::DeviceToDevice => Route::DeviceToDevice {
                dst: on(dst)?,
                src: on(src)?,
            },
            MemcpyKind::Default => match (self.device_of(dst), self.device_of(src)) {
                (None, None) => Route::HostToHost,
                (Some(d), None) => Route::HostToDevice(d),
                (None, Some(s)) => Route::DeviceToHost(s),
                (Some(d), Some(s)) => Route::DeviceToDevice { dst: d, src: s },
            },
        })
    }

    /// Host-to-device copy of `src` to `dst` on device `d`.
    pub fn memcpy_htod(&self, d: usize, dst: u64, src: &[u8]) -> Result<(), CudaError> {
        let len = src.len() as u64;
        self.call(d, &req::MemcpyHtoD { dst, len }, src, &mut [])?;
        Ok(())
    }

    /// Device-to-host copy from `src` on device `d` into `dst`.
    pub fn memcpy_dtoh(&self, d: usize, dst: &mut [u8], src: u64) -> Result<(), CudaError> {
        let len = dst.len() as u64;
        self.call(d, &req::MemcpyDtoH { src, len }, &[], dst)?;
        Ok(())
    }

    /// Device-to-device copy. Between devices of different sessions the bytes
    /// travel through this host, in bounded pieces.
    pub fn memcpy_dtod(
        &self,
        dst_dev: usize,
        dst: u64,
        src_dev: usize,
        src: u64,
        len: u64,
    ) -> Result<(), CudaError> {
        if dst_dev == src_dev {
            self.call(dst_dev, &req::MemcpyDtoD { dst, src, len }, &[], &mut [])?;
            return Ok(());
        }
        const PIECE: u64 = 8 << 20;
        let mut staging = vec![0u8; len.min(PIECE) as usize];
        let mut done = 0;
        while done < len {
            let n = (len - done).min(PIECE) as usize;
            self.memcpy_dtoh(src_dev, &mut staging[..n], src + done)?;
            self.memcpy_htod(dst_dev, dst + done, &staging[..n])?;
            done += n as u64;
        }
        Ok(())
    }

    /// `cudaMemset` of `len` bytes at `dst`.
    pub fn memset(&self, dst: u64, value: u8, len: u64) -> Result<(), CudaError> {
        let d = match self.device_of(dst) {
            Some(d) => d,
            None => self.current_device()?,
        };
        self.call(d, &req::Memset { dst, value, len }, &[], &mut [])?;
        Ok(())
    }

    // ---- page-locked host memory ---------------------------------------

    /// Validates `cudaHostAlloc` flags.
    pub fn check_host_alloc_flags(flags: u32) -> Result<(), CudaError> {
        if flags & !HOST_ALLOC_FLAGS != 0 {
            return Err(CudaError::INVALID_VALUE);
        }
        Ok(())
    }

    /// Records memory the C layer allocated for `cudaHostAlloc`.
    pub fn host_alloc_insert(&self, base: u64, len: u64, flags: u32) {
        self.host.lock().insert_allocated(base, len, flags);
    }

    /// Forgets an allocation for `cudaFreeHost`, returning it for release.
    pub fn host_alloc_remove(&self, base: u64) -> Result<HostRegion, CudaError> {
        self.host.lock().remove_allocated(base)
    }

    /// `cudaHostRegister`.
    pub fn host_register(&self, base: u64, len: u64, flags: u32) -> Result<(), CudaError> {
        self.host.lock().register(base, len, flags)
    }

    /// `cudaHostUnregister`.
    pub fn host_unregister(&self, base: u64) -> Result<(), CudaError> {
        self.host.lock().unregister(base)
    }

    /// `cudaHostGetDevicePointer`: with unified addressing, the device address
    /// of page-locked host memory is its host address.
    pub fn host_device_pointer(&self, host: u64, flags: u32) -> Result<u64, CudaError> {
        if flags != 0 {
            return Err(CudaError::INVALID_VALUE);
        }
        self.host
            .lock()
            .lookup(host)
            .map(|_| host)
            .ok_or(CudaError::INVALID_VALUE)
    }

    // ---- device code ---------------------------------------------------

    /// `__cudaRegisterFatBinary`: records a fat binary; returns its index.
    pub fn register_module(&self, image: Vec<u8>) -> usize {
        self.registry.write().add_module(image)
    }

    /// `__cudaUnregisterFatBinary`.
    pub fn unregister_module(&self, index: usize) {
        self.registry.write().remove_module(index);
    }

    /// `__cudaRegisterFunction`.
    pub fn register_kernel(&self, module: usize, host_stub: u64, name: String) {
        self.registry.write().add_kernel(module, host_stub, name);
    }

    /// `__cudaRegisterVar`.
    pub fn register_variable(&self, module: usize, host_var: u64, name: String, size: u64) {
        self.registry
            .write()
            .add_variable(module, host_var, name, size);
    }

    /// Whether `host_stub` is a registered kernel.
    pub fn is_kernel(&self, host_stub: u64) -> bool {
        self.registry.read().kernel(host_stub).is_some()
    }

    /// The module id of registry module `index` on device `d`, shipping the
    /// fat binary there unless the server already has it.
    fn remote_module(&self, d: usize, index: usize, image: &ModuleImage) -> Result<u32, CudaError> {
        if let Some(&id) = self.states[d].lock().modules.get(&index) {
            return Ok(id);
        }
        let cached = self.call(d, &req::ModuleLoadCached { hash: image.hash }, &[], &mut []);
        let id = match cached {
            Ok(r) => r.module,
            Err(CudaError::INVALID_VALUE) => {
                let len = image.bytes.len() as u64;
                let load = req::ModuleLoad {
                    hash: image.hash,
                    len,
                };
                self.call(d, &load, &image.bytes, &mut [])?.module
            }
            Err(e) => return Err(e),
        };
        self.states[d].lock().modules.insert(index, id);
        Ok(id)
    }

    /// The kernel `host_stub` on device `d`, loading it there on first use.
    fn remote_kernel(&self, d: usize, host_stub: u64) -> Result<Arc<RemoteKernel>, CudaError> {
        if let Some(k) = self.states[d].lock().kernels.get(&host_stub) {
            return Ok(k.clone());
        }
        let (entry, image) = {
            let registry = self.registry.read();
            let entry = registry
                .kernel(host_stub)
                .cloned()
                .ok_or(CudaError::INVALID_DEVICE_FUNCTION)?;
            let image = registry
                .module(entry.module)
                .cloned()
                .ok_or(CudaError::INVALID_DEVICE_FUNCTION)?;
            (entry, image)
        };
        let layout = image.param_layout(&entry.name).map_err(|message| {
            report(&message);
            CudaError::INVALID_KERNEL_IMAGE
        })?;
        let module = self.remote_module(d, entry.module, &image)?;
        let reply = self.call(
            d,
            &req::ModuleGetFunction {
                module,
                name: entry.name,
            },
            &[],
            &mut [],
        )?;
        let kernel = Arc::new(RemoteKernel {
            function: reply.function,
            layout,
            attributes: reply.attributes,
        });
        self.states[d]
            .lock()
            .kernels
            .insert(host_stub, kernel.clone());
        Ok(kernel)
    }

    /// Launches kernel `host_stub` on `config.stream`'s device, asynchronously.
    /// `read_arg(i, dst)` fills `dst` with the bytes of parameter `i`. A bad
    /// configuration fails here; a fault while the kernel runs surfaces at a
    /// later call, as on a GPU. Device `printf` output goes to the sink.
    pub fn launch(
        &'static self,
        host_stub: u64,
        config: &LaunchConfig,
        read_arg: &mut dyn FnMut(usize, &mut [u8]),
    ) -> Result<(), CudaError> {
        let d = self.stream_device(config.stream)?;
        let kernel = self.remote_kernel(d, host_stub)?;
        self.check_launch(d, &kernel, config)?;
        let mut params = vec![0u8; kernel.layout.total_size];
        for (i, p) in kernel.layout.params.iter().enumerate() {
            let dst = params
                .get_mut(p.offset..p.offset + p.size)
                .ok_or(CudaError::INVALID_KERNEL_IMAGE)?;
            read_arg(i, dst);
        }
        let req = req::LaunchKernel {
            function: kernel.function,
            grid: config.grid,
            block: config.block,
            shared_mem: config.shared_mem as u32,
            stream: config.stream,
            params: Blob(params),
        };
        self.enqueue(d, &req, &[], Completion::Launch, 0)
    }

    /// The launch configuration checks CUDA makes before a kernel is queued.
    fn check_launch(
        &self,
        d: usize,
        kernel: &RemoteKernel,
        c: &LaunchConfig,
    ) -> Result<(), CudaError> {
        let p = &self.devices[d].props;
        let [bx, by, bz] = c.block.map(u64::from);
        let [gx, gy, gz] = c.grid.map(u64::from);
        let max_block = [
            p.max_threads_dim[0],
            p.max_threads_dim[1],
            p.max_threads_dim[2],
        ]
        .map(|v| v.max(0) as u64);
        let max_grid =
            [p.max_grid_size[0], p.max_grid_size[1], p.max_grid_size[2]].map(|v| v.max(0) as u64);
        let threads = bx * by * bz;
        let max_threads = (kernel.attributes.max_threads_per_block.max(0) as u64)
            .min(p.max_threads_per_block.max(0) as u64);
        let bad = threads == 0
            || gx * gy * gz == 0
            || bx > max_block[0]
            || by > max_block[1]
            || bz > max_block[2]
            || gx > max_grid[0]
            || gy > max_grid[1]
            || gz > max_grid[2]
            || threads > max_threads;
        if bad {
            return Err(CudaError::INVALID_CONFIGURATION);
        }
        if c.shared_mem > kernel.attributes.max_dynamic_shared_size_bytes.max(0) as u64 {
            return Err(CudaError::INVALID_VALUE);
        }
        Ok(())
    }

    /// `cudaFuncGetAttributes` on the current device.
    pub fn kernel_attributes(&self, host_stub: u64) -> Result<FuncAttributes, CudaError> {
        let d = self.current_device()?;
        Ok(self.remote_kernel(d, host_stub)?.attributes.clone())
    }

    /// `cudaFuncSetAttribute` on the current device.
    pub fn set_kernel_attribute(
        &self,
        host_stub: u64,
        attr: i32,
        value: i32,
    ) -> Result<(), CudaError> {
        let d = self.current_device()?;
        let kernel = self.remote_kernel(d, host_stub)?;
        let req = req::FuncSetAttribute {
            function: kernel.function,
            attr,
            value,
        };
        self.call(d, &req, &[], &mut [])?;
        let mut attributes = kernel.attributes.clone();
        match attr {
            ATTR_MAX_DYNAMIC_SHARED => attributes.max_dynamic_shared_size_bytes = value,
            ATTR_CARVEOUT => attributes.preferred_shmem_carveout = value,
            _ => {}
        }
        let updated = Arc::new(RemoteKernel {
            function: kernel.function,
            layout: kernel.layout.clone(),
            attributes,
        });
        self.states[d].lock().kernels.insert(host_stub, updated);
        Ok(())
    }

    /// Device address and size of the variable whose host shadow is
    /// `host_var`, on the current device (`cudaGetSymbolAddress`).
    pub fn symbol(&self, host_var: u64) -> Result<(usize, u64, u64), CudaError> {
        let d = self.current_device()?;
        if let Some(&(ptr, size)) = self.states[d].lock().variables.get(&host_var) {
            return Ok((d, ptr, size));
        }
        let (entry, image) = {
            let registry = self.registry.read();
            let entry = registry
                .variable(host_var)
                .cloned()
                .ok_or(CudaError::INVALID_SYMBOL)?;
            let image = registry
                .module(entry.module)
                .cloned()
                .ok_or(CudaError::INVALID_SYMBOL)?;
            (entry, image)
        };
        let module = self.remote_module(d, entry.module, &image)?;
        let reply = self.call(
            d,
            &req::ModuleGetGlobal {
                module,
                name: entry.name,
            },
            &[],
            &mut [],
        )?;
        self.states[d]
            .lock()
            .variables
            .insert(host_var, (reply.ptr, reply.size));
        self.allocs.write().insert(reply.ptr, (reply.size, d));
        Ok((d, reply.ptr, reply.size))
    }

    // ---- streams and events --------------------------------------------

    /// Where `cudaDeviceSynchronize`-style `printf` output goes (the C layer
    /// writes it to the application's `stdout`).
    pub fn set_printf_sink(&self, sink: PrintfSink) {
        let _ = self.printf_sink.set(sink);
    }

    fn new_handle(&self) -> u64 {
        self.next_handle.fetch_add(16, Ordering::Relaxed)
    }

    /// The device a stream belongs to; the special streams mean the calling
    /// thread's current device.
    pub fn stream_device(&self, stream: u64) -> Result<usize, CudaError> {
        match stream {
            0..=2 => self.current_device(),
            s => self
                .streams
                .lock()
                .get(&s)
                .map(|st| st.device)
                .ok_or(CudaError::INVALID_RESOURCE_HANDLE),
        }
    }

    /// `cudaStreamCreateWithPriority` on the current device.
    pub fn stream_create(&self, flags: u32, priority: i32) -> Result<u64, CudaError> {
        if flags & !STREAM_FLAGS != 0 {
            return Err(CudaError::INVALID_VALUE);
        }
        let device = self.current_device()?;
        let priority = priority.clamp(STREAM_PRIORITY_GREATEST, STREAM_PRIORITY_LEAST);
        let handle = self.new_handle();
        self.streams.lock().insert(
            handle,
            StreamState {
                device,
                flags,
                priority,
            },
        );
        Ok(handle)
    }

    /// `cudaStreamDestroy`: work already queued on it still completes.
    pub fn stream_destroy(&self, stream: u64) -> Result<(), CudaError> {
        self.streams
            .lock()
            .remove(&stream)
            .map(|_| ())
            .ok_or(CudaError::INVALID_RESOURCE_HANDLE)
    }

    /// `(flags, priority)` of a stream.
    pub fn stream_info(&self, stream: u64) -> Result<(u32, i32), CudaError> {
        match stream {
            0..=2 => {
                self.current_device()?;
                Ok((0, STREAM_PRIORITY_LEAST))
            }
            s => self
                .streams
                .lock()
                .get(&s)
                .map(|st| (st.flags, st.priority))
                .ok_or(CudaError::INVALID_RESOURCE_HANDLE),
        }
    }

    /// `cudaStreamSynchronize`, and `cudaStreamQuery` (which finds the work
    /// done once it has been sent: the server runs a device's operations in
    /// order, to completion).
    pub fn stream_synchronize(&self, stream: u64) -> Result<(), CudaError> {
        let d = self.stream_device(stream)?;
        self.synchronize_device(d)
    }

    /// `cudaStreamWaitEvent`: work on one device already runs in order, so only
    /// an event of another device needs waiting for, now.
    pub fn stream_wait_event(&self, stream: u64, event: u64) -> Result<(), CudaError> {
        let d = self.stream_device(stream)?;
        let recorded_on = self
            .events
            .lock()
            .get(&event)
            .ok_or(CudaError::INVALID_RESOURCE_HANDLE)?
            .device;
        match recorded_on {
            Some(e) if e != d => self.synchronize_device(e),
            _ => Ok(()),
        }
    }

    /// `cudaEventCreateWithFlags`.
    pub fn event_create(&self, flags: u32) -> Result<u64, CudaError> {
        if flags & !EVENT_FLAGS != 0
            || (flags & EVENT_INTERPROCESS != 0 && flags & EVENT_DISABLE_TIMING == 0)
        {
            return Err(CudaError::INVALID_VALUE);
        }
        let handle = self.new_handle();
        self.events.lock().insert(
            handle,
            EventState {
                flags,
                device: None,
                timestamp: None,
            },
        );
        Ok(handle)
    }

    /// `cudaEventDestroy`.
    pub fn event_destroy(&self, event: u64) -> Result<(), CudaError> {
        self.events
            .lock()
            .remove(&event)
            .map(|_| ())
            .ok_or(CudaError::INVALID_RESOURCE_HANDLE)
    }

    /// `cudaEventRecord`: queued on the stream's device.
    pub fn event_record(&'static self, event: u64, stream: u64) -> Result<(), CudaError> {
        let d = self.stream_device(stream)?;
        {
            let mut events = self.events.lock();
            let e = events
                .get_mut(&event)
                .ok_or(CudaError::INVALID_RESOURCE_HANDLE)?;
            e.device = Some(d);
            e.timestamp = None;
        }
        self.enqueue(d, &req::EventRecord {}, &[], Completion::Event(event), 0)
    }

    /// `cudaEventSynchronize` and `cudaEventQuery`: an event never recorded
    /// is complete.
    pub fn event_synchronize(&self, event: u64) -> Result<(), CudaError> {
        let device = self
            .events
            .lock()
            .get(&event)
            .ok_or(CudaError::INVALID_RESOURCE_HANDLE)?
            .device;
        match device {
            Some(d) => self.synchronize_device(d),
            None => Ok(()),
        }
    }

    /// `cudaEventElapsedTime`, in milliseconds, between two completed events.
    pub fn event_elapsed_ms(&self, start: u64, end: u64) -> Result<f32, CudaError> {
        self.event_synchronize(start)?;
        self.event_synchronize(end)?;
        let events = self.events.lock();
        let (a, b) = (
            events
                .get(&start)
                .ok_or(CudaError::INVALID_RESOURCE_HANDLE)?,
            events.get(&end).ok_or(CudaError::INVALID_RESOURCE_HANDLE)?,
        );
        if (a.flags | b.flags) & EVENT_DISABLE_TIMING != 0 || a.device != b.device {
            return Err(CudaError::INVALID_RESOURCE_HANDLE);
        }
        match (a.timestamp, b.timestamp) {
            (Some(t0), Some(t1)) => Ok((t1 as f64 - t0 as f64) as f32 / 1e6),
            // Never recorded.
            _ => Err(CudaError::INVALID_RESOURCE_HANDLE),
        }
    }

    // ---- asynchronous copies and launches -------------------------------

    /// Checks that `[ptr, ptr + len)` is device memory of device `d`, so that
    /// an asynchronous call can fail at once, as CUDA's does.
    fn check_device_range(&self, d: usize, ptr: u64, len: u64) -> Result<(), CudaError> {
        let allocs = self.allocs.read();
        let ok = allocs
            .range((Bound::Unbounded, Bound::Included(ptr)))
            .next_back()
            .is_some_and(|(&base, &(size, owner))| {
                owner == d && ptr.checked_add(len).is_some_and(|end| end <= base + size)
            });
        if ok {
            Ok(())
        } else {
            Err(CudaError::INVALID_VALUE)
        }
    }

    /// Whether `[ptr, ptr + len)` is page-locked host memory.
    pub fn is_pinned(&self, ptr: u64, len: u64) -> bool {
        self.host
            .lock()
            .lookup(ptr)
            .is_some_and(|(base, r)| ptr + len <= base + r.len)
    }

    /// Queued host-to-device copy: the bytes are taken now, so the caller may
    /// reuse its buffer at once (CUDA's rule for pageable memory, and allowed
    /// for page-locked memory).
    pub fn memcpy_htod_async(
        &'static self,
        d: usize,
        dst: u64,
        src: &[u8],
    ) -> Result<(), CudaError> {
        let len = src.len() as u64;
        self.check_device_range(d, dst, len)?;
        self.enqueue(d, &req::MemcpyHtoD { dst, len }, src, Completion::Status, 0)
    }

    /// Queued device-to-host copy into page-locked memory, written when the
    /// reply arrives (at the latest by the next synchronizing call).
    pub fn memcpy_dtoh_async(
        &'static self,
        d: usize,
        dst: Box<dyn HostDst>,
        src: u64,
        len: u64,
    ) -> Result<(), CudaError> {
        self.check_device_range(d, src, len)?;
        self.enqueue(
            d,
            &req::MemcpyDtoH { src, len },
            &[],
            Completion::ToHost(dst),
            len,
        )
    }

    /// Queued copy within one device.
    pub fn memcpy_dtod_async(
        &'static self,
        d: usize,
        dst: u64,
        src: u64,
        len: u64,
    ) -> Result<(), CudaError> {
        self.check_device_range(d, dst, len)?;
        self.check_device_range(d, src, len)?;
        self.enqueue(
            d,
            &req::MemcpyDtoD { dst, src, len },
            &[],
            Completion::Status,
            0,
        )
    }

    /// Queued `cudaMemsetAsync`.
    pub fn memset_async(
        &'static self,
        dst: u64,
        value: u8,
        len: u64,
        stream: u64,
    ) -> Result<(), CudaError> {
        let d = self.stream_device(stream)?;
        self.check_device_range(d, dst, len)?;
        self.enqueue(
            d,
            &req::Memset { dst, value, len },
            &[],
            Completion::Status,
            0,
        )
    }

    // ---- pitched memory and peers -----------------------------------------

    /// `cudaMallocPitch`: rows padded to the device's texture pitch alignment.
    pub fn malloc_pitch(&self, width: u64, height: u64) -> Result<(u64, u64), CudaError> {
        let d = self.current_device()?;
        let align = self.devices[d].props.texture_pitch_alignment.max(1);
        let pitch = width.div_ceil(align).max(1) * align;
        let size = pitch
            .checked_mul(height)
            .ok_or(CudaError::MEMORY_ALLOCATION)?;
        Ok((self.malloc(size)?, pitch))
    }

    /// Host-to-device copy of `height` rows of `width` bytes, packed in `src`,
    /// to rows `dpitch` apart at `dst`; queued when `stream` is given.
    #[allow(clippy::too_many_arguments)]
    pub fn memcpy2d_htod(
        &'static self,
        d: usize,
        dst: u64,
        dpitch: u64,
        width: u64,
        height: u64,
        src: &[u8],
        stream: Option<u64>,
    ) -> Result<(), CudaError> {
        let req = req::Memcpy2DHtoD {
            dst,
            dpitch,
            width,
            height,
        };
        match stream {
            Some(_) => self.enqueue(d, &req, src, Completion::Status, 0),
            None => self.call(d, &req, src, &mut []).map(|_| ()),
        }
    }

    /// Device-to-host copy of `height` rows of `width` bytes, `spitch` apart at
    /// `src`, packed into `dst`.
    pub fn memcpy2d_dtoh(
        &self,
        d: usize,
        dst: &mut [u8],
        src: u64,
        spitch: u64,
        width: u64,
        height: u64,
    ) -> Result<(), CudaError> {
        let req = req::Memcpy2DDtoH {
            src,
            spitch,
            width,
            height,
        };
        self.call(d, &req, &[], dst).map(|_| ())
    }

    /// Device-to-device copy between pitched regions of device `d`.
    #[allow(clippy::too_many_arguments)]
    pub fn memcpy2d_dtod(
        &'static self,
        d: usize,
        dst: u64,
        dpitch: u64,
        src: u64,
        spitch: u64,
        width: u64,
        height: u64,
        stream: Option<u64>,
    ) -> Result<(), CudaError> {
        let req = req::Memcpy2DDtoD {
            dst,
            dpitch,
            src,
            spitch,
            width,
            height,
        };
        match stream {
            Some(_) => self.enqueue(d, &req, &[], Completion::Status, 0),
            None => self.call(d, &req, &[], &mut []).map(|_| ()),
        }
    }

    /// `cudaMemset2D`, queued when `stream` is given.
    pub fn memset2d(
        &'static self,
        dst: u64,
        pitch: u64,
        value: u8,
        width: u64,
        height: u64,
        stream: Option<u64>,
    ) -> Result<(), CudaError> {
        let d = match (self.device_of(dst), stream) {
            (Some(d), _) => d,
            (None, Some(s)) => self.stream_device(s)?,
            (None, None) => self.current_device()?,
        };
        let req = req::Memset2D {
            dst,
            pitch,
            value,
            width,
            height,
        };
        match stream {
            Some(_) => self.enqueue(d, &req, &[], Completion::Status, 0),
            None => self.call(d, &req, &[], &mut []).map(|_| ()),
        }
    }

    /// `cudaDeviceCanAccessPeer`: remote GPUs never map each other's memory;
    /// copies between them go through this host (see [`Runtime::memcpy_dtod`]).
    pub fn can_access_peer(&self, device: i32, peer: i32) -> Result<bool, CudaError> {
        self.check_device(device)?;
        self.check_device(peer)?;
        Ok(false)
    }

    /// `cudaMemcpyPeer`: device `src_dev`'s bytes to device `dst_dev`.
    pub fn memcpy_peer(
        &self,
        dst_dev: i32,
        dst: u64,
        src_dev: i32,
        src: u64,
        len: u64,
    ) -> Result<(), CudaError> {
        let dd = self.check_device(dst_dev)?;
        let sd = self.check_device(src_dev)?;
        if len == 0 {
            return Ok(());
        }
        self.memcpy_dtod(dd, dst, sd, src, len)
    }

    // ---- errors --------------------------------------------------------

    /// Records the outcome of an API call as the thread's last error and
    /// returns its code.
    pub fn record(result: Result<(), CudaError>) -> CudaError {
        match result {
            Ok(()) => CudaError::SUCCESS,
            Err(e) => {
                LAST_ERROR.with(|c| c.set(e));
                e
            }
        }
    }

    /// `cudaGetLastError`: returns and clears the thread's last error; a sticky
    /// error of the current device is returned and stays.
    pub fn take_last_error(&self) -> CudaError {
        let last = LAST_ERROR.with(|c| c.replace(CudaError::SUCCESS));
        if last == CudaError::SUCCESS {
            self.sticky_error().unwrap_or(last)
        } else {
            last
        }
    }

    /// `cudaPeekAtLastError`.
    pub fn peek_last_error(&self) -> CudaError {
        let last = LAST_ERROR.with(Cell::get);
        if last == CudaError::SUCCESS {
            self.sticky_error().unwrap_or(last)
        } else {
            last
        }
    }

    fn sticky_error(&self) -> Option<CudaError> {
        let d = self.current_device().ok()?;
        let st = self.states[d].lock();
        st.sticky.filter(|_| !st.sticky_unseen)
    }
}

/// Tells the user, on the application's stderr, why remote GPUs misbehave.
fn report(message: &str) {
    tracing::debug!("reported to the user: {message}");
    eprintln!("rcud: {message}");
}
