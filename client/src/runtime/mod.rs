//! CUDA runtime semantics over remote GPUs.
//!
//! One [`Runtime`] per process (see [`Runtime::global`]) holds the device table
//! built from `RCUD_SERVERS`, one lazily connected session per device, the
//! process-wide map of device allocations (for unified addressing and
//! `cudaMemcpyDefault`), and the page-locked host memory table. The current
//! device and the last error are per host thread, as in CUDA.
//!
//! The methods are grouped by topic: `queue` (calls and the batch of
//! asynchronous work), `memory`, `kernels`, `streams`.

use std::cell::Cell;
use std::collections::{BTreeMap, HashMap, VecDeque};
use std::sync::atomic::AtomicU64;
use std::sync::{Arc, OnceLock};
use std::time::Instant;

use parking_lot::{Condvar, Mutex, RwLock};
use rcud_fatbin::ParamLayout;
use rcud_proto::ops::{req, FuncAttributes};
use rcud_proto::{CudaError, DeviceProps};

use crate::config::{parse_servers, ServerEntry};
use crate::hostmem::HostMemory;
use crate::modules::Registry;
use crate::session::Session;
use crate::Security;
use rcud_transport::bootstrap::TransportKind;

mod contexts;
mod graphs;
pub mod ipc_events;
mod kernels;
mod limits;
mod loaded;
pub mod math;
mod memory;
pub mod mempool;
mod queue;
mod status;
mod streams;

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

#[derive(Default)]
struct DeviceState {
    /// Work queued behind a host function that has not run yet, and all work
    /// after it, in order: it goes to the session, up to the next host
    /// function, once that one has run. So a copy reads its page-locked
    /// source after the host functions before it have written it.
    held: VecDeque<Held>,
    /// Payload bytes the held operations carry.
    held_bytes: usize,
    /// The progress thread is writing the batch and reading its replies,
    /// without this lock: the session is out, and new work is held.
    flushing: bool,
    session: Option<Session>,
    /// The process that opened `session`: a process forked after it made
    /// its connections must not use its parent's (CUDA programs fork
    /// before their first CUDA call, as NVIDIA's simpleIPC does).
    session_pid: u32,
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

/// An operation waiting for a host function before it may be queued.
struct Held {
    /// Queues the operation (reading its host source now).
    apply: Box<dyn FnOnce(&mut Session) + Send>,
    /// It is a host function: operations after it wait for it in turn.
    callback: bool,
    /// Payload bytes it carries (counted in `held_bytes`).
    bytes: usize,
}

impl std::fmt::Debug for DeviceState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DeviceState")
            .field("attached", &self.attached)
            .field("held", &self.held.len())
            .field("sticky", &self.sticky)
            .finish_non_exhaustive()
    }
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
    /// Every block resident at once, with grid-wide synchronization
    /// (`cudaLaunchCooperativeKernel`, `cudaLaunchAttributeCooperative`).
    pub cooperative: bool,
}

pub use contexts::ContextInfo;

thread_local! {
    static LAST_ERROR: Cell<CudaError> = const { Cell::new(CudaError::SUCCESS) };
}

/// Managed memory is the client's (the C layer keeps a host mirror of each
/// allocation and moves it at launches and synchronizations), whatever the
/// server's GPU offers: every device has it, without concurrent access from
/// the host and without access to pageable memory.
fn with_client_managed_memory(
    mut props: DeviceProps,
    attributes: Vec<(i32, i32)>,
) -> (DeviceProps, HashMap<i32, i32>) {
    use rcud_proto::DeviceAttr;
    props.managed_memory = 1;
    props.concurrent_managed_access = 0;
    props.pageable_memory_access = 0;
    props.pageable_memory_access_uses_host_page_tables = 0;
    props.direct_managed_mem_access_from_host = 0;
    props.memory_pools_supported = 1;
    props.memory_pool_supported_handle_types = 0;
    let mut attributes: HashMap<i32, i32> = attributes.into_iter().collect();
    for (attr, value) in [
        (DeviceAttr::MANAGED_MEMORY, 1),
        (DeviceAttr::CONCURRENT_MANAGED_ACCESS, 0),
        (DeviceAttr::PAGEABLE_MEMORY_ACCESS, 0),
        (DeviceAttr::PAGEABLE_MEMORY_ACCESS_USES_HOST_PAGE_TABLES, 0),
        (DeviceAttr::DIRECT_MANAGED_MEM_ACCESS_FROM_HOST, 0),
        // Pools are the client's too (runtime/mempool.rs), without handles
        // to share them between processes.
        (DeviceAttr::MEMORY_POOLS_SUPPORTED, 1),
        (DeviceAttr::MEMORY_POOL_SUPPORTED_HANDLE_TYPES, 0),
    ] {
        attributes.insert(attr.0, value);
    }
    (props, attributes)
}

/// The client runtime of one process.
pub struct Runtime {
    devices: Vec<RemoteDevice>,
    states: Vec<Mutex<DeviceState>>,
    /// Signalled when a device's batch in flight has been answered.
    idle: Vec<Condvar>,
    /// Set when no device could be enumerated; every device call returns it.
    init_error: Option<CudaError>,
    /// Device allocations of every device: start -> (length, device ordinal).
    allocs: RwLock<BTreeMap<u64, (u64, usize)>>,
    host: Mutex<HostMemory>,
    registry: RwLock<Registry>,
    /// Transport module of every session.
    transport: TransportKind,
    /// Credentials and TLS settings of every session.
    security: Security,
    streams: Mutex<HashMap<u64, StreamState>>,
    events: Mutex<HashMap<u64, EventState>>,
    contexts: Mutex<contexts::Contexts>,
    loaded: Mutex<loaded::Loaded>,
    /// Memory pools of `cudaMallocAsync`.
    pools: Mutex<mempool::Pools>,
    /// Limits set with `cudaDeviceSetLimit`: (device, limit) -> value.
    limits: Mutex<HashMap<(usize, i32), u64>>,
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
#[derive(Debug)]
struct EventState {
    flags: u32,
    /// The device of the stream it was last recorded on.
    device: Option<usize>,
    /// Server time when the work before the record completed; `None` until
    /// the record's reply arrived.
    timestamp: Option<u64>,
    /// The shared words of an interprocess event.
    ipc: Option<ipc_events::IpcEvent>,
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
        let transport = match std::env::var("RCUD_TRANSPORT") {
            Err(_) => TransportKind::Tcp,
            Ok(t) => match t.parse() {
                Ok(kind) => kind,
                Err(e) => {
                    report(&format!("RCUD_TRANSPORT: {e}"));
                    return Self::empty(name, CudaError::NO_DEVICE, TransportKind::Tcp);
                }
            },
        };
        match std::env::var("RCUD_SERVERS") {
            Err(_) => {
                report("RCUD_SERVERS is not set: no remote GPU to use (start the program with `rcud run`)");
                Self::empty(name, CudaError::NO_DEVICE, transport)
            }
            Ok(value) => match parse_servers(&value) {
                Ok(entries) => Self::connect_with(&entries, name, transport),
                Err(e) => {
                    report(&e.to_string());
                    Self::empty(name, CudaError::NO_DEVICE, transport)
                }
            },
        }
    }

    fn empty(client_name: String, error: CudaError, transport: TransportKind) -> Self {
        Self {
            transport,
            security: Security::default(),
            devices: Vec::new(),
            states: Vec::new(),
            idle: Vec::new(),
            init_error: Some(error),
            pools: Mutex::default(),
            limits: Mutex::default(),
            allocs: RwLock::default(),
            host: Mutex::default(),
            registry: RwLock::default(),
            streams: Mutex::default(),
            events: Mutex::default(),
            contexts: Mutex::default(),
            loaded: Mutex::default(),
            next_handle: AtomicU64::new(FIRST_HANDLE),
            printf_sink: OnceLock::new(),
            progress: OnceLock::new(),
            client_name,
        }
    }

    /// Enumerates the GPUs of `entries` over TCP. Unreachable servers are
    /// reported on stderr and contribute no device.
    pub fn connect(entries: &[ServerEntry], client_name: String) -> Self {
        Self::connect_with(entries, client_name, TransportKind::Tcp)
    }

    /// [`Runtime::connect`] with sessions on the transport module `transport`.
    pub fn connect_with(
        entries: &[ServerEntry],
        client_name: String,
        transport: TransportKind,
    ) -> Self {
        match Security::from_env() {
            Ok(security) => {
                Self::connect_secured(entries, client_name, transport, security.clone())
            }
            Err(e) => {
                report(&e);
                Self::empty(client_name, CudaError::NO_DEVICE, transport)
            }
        }
    }

    /// [`Runtime::connect_with`] with explicit credentials and TLS settings
    /// in place of the environment's.
    pub fn connect_secured(
        entries: &[ServerEntry],
        client_name: String,
        transport: TransportKind,
        security: Security,
    ) -> Self {
        let mut devices = Vec::new();
        let mut states = Vec::new();
        for entry in entries {
            let probe =
                match Session::connect_secured(&entry.addr, &client_name, transport, &security) {
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
                        let (props, attributes) =
                            with_client_managed_memory(info.props, info.attributes);
                        devices.push(RemoteDevice {
                            server: entry.addr.clone(),
                            gpu,
                            props,
                            attributes,
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
                state.get_mut().session_pid = std::process::id();
            }
        }
        let init_error = devices.is_empty().then_some(CudaError::NO_DEVICE);
        let idle = std::iter::repeat_with(Condvar::new)
            .take(states.len())
            .collect();
        Self {
            devices,
            states,
            idle,
            init_error,
            security,
            ..Self::empty(client_name, CudaError::NO_DEVICE, transport)
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

    pub(crate) fn check_device(&self, device: i32) -> Result<usize, CudaError> {
        self.device_count()?;
        usize::try_from(device)
            .ok()
            .filter(|&d| d < self.devices.len())
            .ok_or(CudaError::INVALID_DEVICE)
    }

    /// The calling thread's current device: its current context's.
    pub fn current_device(&self) -> Result<usize, CudaError> {
        self.device_count()?;
        Ok(self.runtime_device())
    }

    /// `cudaSetDevice`.
    pub fn set_device(&self, device: i32) -> Result<(), CudaError> {
        let d = self.check_device(device)?;
        self.bind_primary(d);
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
        /// `cudaDeviceMapHost`: CUDA always maps page-locked memory now, and
        /// reports the flag whatever was set.
        const MAP_HOST: u32 = 0x08;
        let d = self.current_device()?;
        Ok(self.states[d].lock().flags | MAP_HOST)
    }

    // ---- errors --------------------------------------------------------

    /// Records the outcome of an API call as the thread's last error and
    /// returns its code.
    pub fn record(result: Result<(), CudaError>) -> CudaError {
        match result {
            Ok(()) => CudaError::SUCCESS,
            // "Not ready" is an answer, not an error: it is not kept.
            Err(CudaError::NOT_READY) => CudaError::NOT_READY,
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
