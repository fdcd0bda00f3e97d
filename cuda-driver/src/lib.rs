//! The CUDA driver API for rcud-server's `cuda` backend, with the driver
//! library loaded at run time, behind a safe interface.
//!
//! This crate is the whole FFI boundary of the backend: `rcud-server` itself
//! forbids `unsafe`. It is layered like cudarc (sys → result → safe) and takes
//! the driver's types, handles and enumerator values from
//! [`cudarc::driver::sys`], but it does not call through cudarc's function
//! wrappers, for three reasons:
//!
//! - cudarc's dynamic loader panics when `libcuda` or one of its symbols is
//!   missing. Here [`Driver::load`] opens `libcuda.so.1` itself and resolves
//!   every entry point the backend uses before anything is called, so a host
//!   without the NVIDIA driver, or with one too old, gets a [`LoadError`] value.
//! - cudarc declares `CUresult` and the attribute parameters as Rust enums. A
//!   driver newer than the bindings may return a code they do not name, and
//!   rcud queries device attributes by the numbers of CUDA 13's
//!   `cudaDeviceAttr`, some of which an older binding's enum lacks: either
//!   would be undefined behaviour through an enum. The function pointers here
//!   take and return plain integers (the C ABI of an enum is `int`).
//! - Device addresses travel as plain `u64`s: the backend validates every one
//!   against the client's own allocations before it gets here.
//!
//! NVIDIA's cuBLAS, for the backend's math calls, is loaded the same way
//! ([`cublas`]): opened on first use, every entry point resolved and checked.
//!
//! Objects keep what they depend on alive: a [`Module`] holds its
//! [`Context`], a [`Function`] its module, so a handle is never used after the
//! driver object behind it was destroyed. Dropping never panics; a failure
//! while releasing is logged.
#![warn(missing_docs)]

use std::ffi::{c_char, c_int, c_uint, c_void, CStr, OsStr};
use std::fmt;
use std::os::fd::{FromRawFd, OwnedFd};
use std::sync::Arc;

pub use cudarc::driver::sys;

pub mod cublas;
pub mod cublaslt;
pub mod cufft;
pub mod curand;
pub mod cusolver;
pub mod cusparse;
pub mod math_library;
pub mod workspace;
use sys::{CUcontext, CUdevice, CUdeviceptr, CUevent, CUfunction, CUmodule, CUstream};

/// The file name the NVIDIA driver installs its CUDA library under (the
/// unversioned `libcuda.so` exists only with development packages).
pub const LIBRARY: &str = "libcuda.so.1";

/// Largest kernel parameter buffer any driver accepts (32764 bytes since CUDA
/// 12.1 on Volta and later), rounded up. Launch buffers are padded with zeros
/// to this size so that the driver never reads past them, whatever the kernel
/// declares.
pub const MAX_PARAM_BYTES: usize = 32 << 10;

/// A `CUresult` read as a plain integer.
type Status = u32;

const SUCCESS: Status = sys::CUresult::CUDA_SUCCESS as Status;
const ERROR_INVALID_VALUE: Status = sys::CUresult::CUDA_ERROR_INVALID_VALUE as Status;
const ERROR_INVALID_HANDLE: Status = sys::CUresult::CUDA_ERROR_INVALID_HANDLE as Status;
const ERROR_NOT_SUPPORTED: Status = sys::CUresult::CUDA_ERROR_NOT_SUPPORTED as Status;

/// `CU_STREAM_NON_BLOCKING`: the backend's stream does not synchronise with
/// the legacy default stream (nothing else runs in the context).
const STREAM_NON_BLOCKING: c_uint = 0x1;
/// `CU_EVENT_DISABLE_TIMING`: events only order work, they are never timed.
const EVENT_DISABLE_TIMING: c_uint = 0x2;
/// `CU_CTX_SCHED_AUTO`.
const CTX_SCHED_AUTO: c_uint = 0x0;

/// A driver call failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DriverError {
    /// The `CUresult` value.
    pub code: u32,
    /// The driver entry point (or the operation of this crate) that failed.
    pub call: &'static str,
    /// `cuGetErrorName` of the code, when the driver knows it.
    pub name: Option<&'static str>,
}

impl DriverError {
    /// An error this crate reports itself, without asking the driver.
    fn local(code: Status, call: &'static str) -> Self {
        Self {
            code,
            call,
            name: None,
        }
    }
}

impl fmt::Display for DriverError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.name {
            Some(name) => write!(f, "{} failed: {name} ({})", self.call, self.code),
            None => write!(f, "{} failed: CUresult {}", self.call, self.code),
        }
    }
}

impl std::error::Error for DriverError {}

/// Why the driver could not be loaded.
#[derive(Debug)]
pub enum LoadError {
    /// The library could not be opened.
    Library {
        /// The name or path that was opened.
        library: String,
        /// The dynamic loader's message.
        reason: String,
    },
    /// The library lacks an entry point the backend needs: the driver is too old.
    Symbol {
        /// The missing entry point.
        symbol: &'static str,
        /// The dynamic loader's message.
        reason: String,
    },
    /// `cuInit` failed (no device, stub library, kernel module mismatch, ...).
    Init(DriverError),
}

impl fmt::Display for LoadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LoadError::Library { library, reason } => write!(
                f,
                "the NVIDIA driver library {library} could not be loaded: {reason}"
            ),
            LoadError::Symbol { symbol, reason } => write!(
                f,
                "the NVIDIA driver library lacks {symbol} (the driver is too old): {reason}"
            ),
            LoadError::Init(e) => write!(f, "the NVIDIA driver did not initialise: {e}"),
        }
    }
}

impl std::error::Error for LoadError {}

/// How `cuCtxCreate` is called: the `_v2` entry point of CUDA 3.2 to 12, or
/// the `_v4` one that CUDA 13's header maps `cuCtxCreate` to.
#[derive(Clone, Copy)]
enum CtxCreate {
    V2(unsafe extern "C" fn(*mut CUcontext, c_uint, CUdevice) -> Status),
    V4(unsafe extern "C" fn(*mut CUcontext, *mut c_void, c_uint, CUdevice) -> Status),
}

/// The driver entry points the backend uses. Every prototype is that of
/// `cuda.h`, with enum parameters and results as the C `int` they are.
struct Api {
    init: unsafe extern "C" fn(c_uint) -> Status,
    driver_get_version: unsafe extern "C" fn(*mut c_int) -> Status,
    get_error_name: unsafe extern "C" fn(Status, *mut *const c_char) -> Status,
    device_get_count: unsafe extern "C" fn(*mut c_int) -> Status,
    device_get: unsafe extern "C" fn(*mut CUdevice, c_int) -> Status,
    device_get_attribute: unsafe extern "C" fn(*mut c_int, c_int, CUdevice) -> Status,
    device_get_name: unsafe extern "C" fn(*mut c_char, c_int, CUdevice) -> Status,
    device_total_mem: unsafe extern "C" fn(*mut usize, CUdevice) -> Status,
    device_get_uuid: Option<unsafe extern "C" fn(*mut sys::CUuuid, CUdevice) -> Status>,
    ctx_create: CtxCreate,
    ctx_destroy: unsafe extern "C" fn(CUcontext) -> Status,
    ctx_set_current: unsafe extern "C" fn(CUcontext) -> Status,
    ctx_synchronize: unsafe extern "C" fn() -> Status,
    ctx_set_limit: unsafe extern "C" fn(c_int, usize) -> Status,
    ctx_get_limit: unsafe extern "C" fn(*mut usize, c_int) -> Status,
    mem_alloc: unsafe extern "C" fn(*mut CUdeviceptr, usize) -> Status,
    mem_free: unsafe extern "C" fn(CUdeviceptr) -> Status,
    mem_get_info: unsafe extern "C" fn(*mut usize, *mut usize) -> Status,
    mem_alloc_host: unsafe extern "C" fn(*mut *mut c_void, usize) -> Status,
    mem_free_host: unsafe extern "C" fn(*mut c_void) -> Status,
    memcpy_htod_async: unsafe extern "C" fn(CUdeviceptr, *const c_void, usize, CUstream) -> Status,
    memcpy_dtoh_async: unsafe extern "C" fn(*mut c_void, CUdeviceptr, usize, CUstream) -> Status,
    memcpy_dtod_async: unsafe extern "C" fn(CUdeviceptr, CUdeviceptr, usize, CUstream) -> Status,
    memset_d8_async: unsafe extern "C" fn(CUdeviceptr, u8, usize, CUstream) -> Status,
    stream_create: unsafe extern "C" fn(*mut CUstream, c_uint) -> Status,
    stream_destroy: unsafe extern "C" fn(CUstream) -> Status,
    stream_synchronize: unsafe extern "C" fn(CUstream) -> Status,
    event_create: unsafe extern "C" fn(*mut CUevent, c_uint) -> Status,
    event_destroy: unsafe extern "C" fn(CUevent) -> Status,
    event_record: unsafe extern "C" fn(CUevent, CUstream) -> Status,
    event_synchronize: unsafe extern "C" fn(CUevent) -> Status,
    module_load_data: unsafe extern "C" fn(*mut CUmodule, *const c_void) -> Status,
    module_unload: unsafe extern "C" fn(CUmodule) -> Status,
    module_get_function: unsafe extern "C" fn(*mut CUfunction, CUmodule, *const c_char) -> Status,
    module_get_global:
        unsafe extern "C" fn(*mut CUdeviceptr, *mut usize, CUmodule, *const c_char) -> Status,
    func_get_attribute: unsafe extern "C" fn(*mut c_int, c_int, CUfunction) -> Status,
    func_set_attribute: unsafe extern "C" fn(CUfunction, c_int, c_int) -> Status,
    /// CUDA 12.4 and later.
    func_get_param_info:
        Option<unsafe extern "C" fn(CUfunction, usize, *mut usize, *mut usize) -> Status>,
    #[allow(clippy::type_complexity)]
    launch_kernel: unsafe extern "C" fn(
        CUfunction,
        c_uint,
        c_uint,
        c_uint,
        c_uint,
        c_uint,
        c_uint,
        c_uint,
        CUstream,
        *mut *mut c_void,
        *mut *mut c_void,
    ) -> Status,
    /// CUDA 11.8 and later: the launch with attributes (cooperative).
    launch_kernel_ex: Option<
        unsafe extern "C" fn(
            *const sys::CUlaunchConfig,
            CUfunction,
            *mut *mut c_void,
            *mut *mut c_void,
        ) -> Status,
    >,
    /// CUDA 11.7 and later.
    mem_get_handle_for_address_range:
        Option<unsafe extern "C" fn(*mut c_void, CUdeviceptr, usize, c_int, u64) -> Status>,
    /// Interprocess memory handles (absent from drivers without IPC, e.g. WSL).
    ipc_get_mem_handle: Option<unsafe extern "C" fn(*mut IpcMemHandle, CUdeviceptr) -> Status>,
    ipc_open_mem_handle:
        Option<unsafe extern "C" fn(*mut CUdeviceptr, IpcMemHandle, c_uint) -> Status>,
    ipc_close_mem_handle: Option<unsafe extern "C" fn(CUdeviceptr) -> Status>,
    /// Keeps the code behind the pointers above mapped; declared last so that
    /// it is dropped last.
    _library: libloading::Library,
}

/// A loader error with the messages of its sources (libloading keeps the
/// dynamic loader's own words in the source).
fn loader_text(e: &libloading::Error) -> String {
    let mut text = e.to_string();
    let mut source = std::error::Error::source(e);
    while let Some(s) = source {
        text.push_str(": ");
        text.push_str(&s.to_string());
        source = s.source();
    }
    text
}

/// Resolves `name` in `lib` as a value of type `T`.
///
/// # Safety
///
/// `T` must be the `unsafe extern "C" fn` type matching the C prototype of
/// `name` (with enums as `int`), and the result must not outlive `lib`.
unsafe fn symbol<T: Copy>(lib: &libloading::Library, name: &'static str) -> Result<T, LoadError> {
    // SAFETY: the caller guarantees that `T` is the symbol's type and keeps
    // `lib` alive as long as the copied pointer.
    unsafe { lib.get::<T>(name.as_bytes()) }
        .map(|s| *s)
        .map_err(|e| LoadError::Symbol {
            symbol: name,
            reason: loader_text(&e),
        })
}

/// [`symbol`] for an entry point that older drivers lack.
///
/// # Safety
///
/// As for [`symbol`].
unsafe fn optional<T: Copy>(lib: &libloading::Library, name: &'static str) -> Option<T> {
    // SAFETY: forwarded from the caller.
    unsafe { symbol(lib, name) }.ok()
}

impl Api {
    /// Resolves every entry point in `library`, which is opened as the CUDA
    /// driver library.
    fn resolve(library: libloading::Library) -> Result<Self, LoadError> {
        let lib = &library;
        // SAFETY: for every `symbol`/`optional` call in this block, the type
        // of the field it initialises is the prototype of the named entry
        // point in cuda.h (enum-typed parameters and results written as the
        // `int` they are in the C ABI), and the pointers are stored next to
        // `library`, which outlives them.
        unsafe {
            // First, so that a library that is not the driver is named by it.
            let init = symbol(lib, "cuInit")?;
            let ctx_create = match optional(lib, "cuCtxCreate_v2") {
                Some(f) => CtxCreate::V2(f),
                None => CtxCreate::V4(symbol(lib, "cuCtxCreate_v4")?),
            };
            let device_get_uuid = match optional(lib, "cuDeviceGetUuid_v2") {
                Some(f) => Some(f),
                None => optional(lib, "cuDeviceGetUuid"),
            };
            Ok(Self {
                init,
                driver_get_version: symbol(lib, "cuDriverGetVersion")?,
                get_error_name: symbol(lib, "cuGetErrorName")?,
                device_get_count: symbol(lib, "cuDeviceGetCount")?,
                device_get: symbol(lib, "cuDeviceGet")?,
                device_get_attribute: symbol(lib, "cuDeviceGetAttribute")?,
                device_get_name: symbol(lib, "cuDeviceGetName")?,
                device_total_mem: symbol(lib, "cuDeviceTotalMem_v2")?,
                device_get_uuid,
                ctx_create,
                ctx_destroy: symbol(lib, "cuCtxDestroy_v2")?,
                ctx_set_current: symbol(lib, "cuCtxSetCurrent")?,
                ctx_synchronize: symbol(lib, "cuCtxSynchronize")?,
                ctx_set_limit: symbol(lib, "cuCtxSetLimit")?,
                ctx_get_limit: symbol(lib, "cuCtxGetLimit")?,
                mem_alloc: symbol(lib, "cuMemAlloc_v2")?,
                mem_free: symbol(lib, "cuMemFree_v2")?,
                mem_get_info: symbol(lib, "cuMemGetInfo_v2")?,
                mem_alloc_host: symbol(lib, "cuMemAllocHost_v2")?,
                mem_free_host: symbol(lib, "cuMemFreeHost")?,
                memcpy_htod_async: symbol(lib, "cuMemcpyHtoDAsync_v2")?,
                memcpy_dtoh_async: symbol(lib, "cuMemcpyDtoHAsync_v2")?,
                memcpy_dtod_async: symbol(lib, "cuMemcpyDtoDAsync_v2")?,
                memset_d8_async: symbol(lib, "cuMemsetD8Async")?,
                stream_create: symbol(lib, "cuStreamCreate")?,
                stream_destroy: symbol(lib, "cuStreamDestroy_v2")?,
                stream_synchronize: symbol(lib, "cuStreamSynchronize")?,
                event_create: symbol(lib, "cuEventCreate")?,
                event_destroy: symbol(lib, "cuEventDestroy_v2")?,
                event_record: symbol(lib, "cuEventRecord")?,
                event_synchronize: symbol(lib, "cuEventSynchronize")?,
                module_load_data: symbol(lib, "cuModuleLoadData")?,
                module_unload: symbol(lib, "cuModuleUnload")?,
                module_get_function: symbol(lib, "cuModuleGetFunction")?,
                module_get_global: symbol(lib, "cuModuleGetGlobal_v2")?,
                func_get_attribute: symbol(lib, "cuFuncGetAttribute")?,
                func_set_attribute: symbol(lib, "cuFuncSetAttribute")?,
                func_get_param_info: optional(lib, "cuFuncGetParamInfo"),
                launch_kernel: symbol(lib, "cuLaunchKernel")?,
                launch_kernel_ex: optional(lib, "cuLaunchKernelEx"),
                mem_get_handle_for_address_range: optional(lib, "cuMemGetHandleForAddressRange"),
                ipc_get_mem_handle: optional(lib, "cuIpcGetMemHandle"),
                ipc_open_mem_handle: optional(lib, "cuIpcOpenMemHandle_v2"),
                ipc_close_mem_handle: optional(lib, "cuIpcCloseMemHandle"),
                _library: library,
            })
        }
    }

    /// `Ok` for `CUDA_SUCCESS`, else the error with the driver's name for it.
    fn check(&self, status: Status, call: &'static str) -> Result<(), DriverError> {
        if status == SUCCESS {
            return Ok(());
        }
        let mut name: *const c_char = std::ptr::null();
        // SAFETY: `cuGetErrorName` writes a pointer to a static NUL-terminated
        // string, or leaves it alone and fails for an unknown code.
        let known = unsafe { (self.get_error_name)(status, &mut name) } == SUCCESS;
        let name = if known && !name.is_null() {
            // SAFETY: the driver's error names are static C strings.
            unsafe { CStr::from_ptr(name) }.to_str().ok()
        } else {
            None
        };
        Err(DriverError {
            code: status,
            call,
            name,
        })
    }
}

/// The host's page size in bytes (the granularity of dma-buf exports).
pub fn host_page_size() -> u64 {
    // SAFETY: `sysconf` reads a configuration value and touches no memory of ours.
    let size = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    u64::try_from(size).ok().filter(|&s| s > 0).unwrap_or(4096)
}

/// Flushes every C stdio output stream of the process. The driver writes
/// device `printf` output through C stdio, which buffers it when standard
/// output is not a terminal; flushing makes it visible to whoever reads
/// the descriptor.
pub fn flush_c_stdio() {
    // SAFETY: `fflush(NULL)` flushes all open output streams; it takes no
    // pointer of ours and is safe to call at any time.
    unsafe { libc::fflush(std::ptr::null_mut()) };
}

/// The loaded and initialised driver.
#[derive(Clone)]
pub struct Driver {
    api: Arc<Api>,
}

impl fmt::Debug for Driver {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Driver").finish_non_exhaustive()
    }
}

impl Driver {
    /// Opens [`LIBRARY`], resolves every entry point and calls `cuInit`.
    pub fn load() -> Result<Self, LoadError> {
        Self::load_from(LIBRARY)
    }

    /// [`Driver::load`] from another file name or path.
    pub fn load_from(library: impl AsRef<OsStr>) -> Result<Self, LoadError> {
        let library = library.as_ref();
        // SAFETY: opening a library runs its initialisers. The CUDA driver
        // library is made to be opened at run time by any process (libcudart
        // does exactly this); a different library under that name is outside
        // what any program can defend against.
        let lib = unsafe { libloading::Library::new(library) }.map_err(|e| LoadError::Library {
            library: library.to_string_lossy().into_owned(),
            reason: loader_text(&e),
        })?;
        let api = Api::resolve(lib)?;
        // SAFETY: `cuInit(0)` takes no pointers; 0 is the only valid flag value.
        let status = unsafe { (api.init)(0) };
        api.check(status, "cuInit").map_err(LoadError::Init)?;
        Ok(Self { api: Arc::new(api) })
    }

    /// `cuDriverGetVersion`: e.g. 13000 for CUDA 13.0.
    pub fn version(&self) -> Result<i32, DriverError> {
        let mut v: c_int = 0;
        // SAFETY: `v` is a valid out-pointer.
        let status = unsafe { (self.api.driver_get_version)(&mut v) };
        self.api.check(status, "cuDriverGetVersion")?;
        Ok(v)
    }

    /// `cuDeviceGetCount`.
    pub fn device_count(&self) -> Result<u32, DriverError> {
        let mut n: c_int = 0;
        // SAFETY: `n` is a valid out-pointer.
        let status = unsafe { (self.api.device_get_count)(&mut n) };
        self.api.check(status, "cuDeviceGetCount")?;
        Ok(u32::try_from(n).unwrap_or(0))
    }

    /// Device `ordinal` (`cuDeviceGet`).
    pub fn device(&self, ordinal: u32) -> Result<Device, DriverError> {
        let ordinal_c = c_int::try_from(ordinal)
            .map_err(|_| DriverError::local(ERROR_INVALID_VALUE, "cuDeviceGet"))?;
        let mut raw: CUdevice = 0;
        // SAFETY: `raw` is a valid out-pointer; the driver checks the ordinal.
        let status = unsafe { (self.api.device_get)(&mut raw, ordinal_c) };
        self.api.check(status, "cuDeviceGet")?;
        Ok(Device {
            api: self.api.clone(),
            raw,
            ordinal,
        })
    }

    /// Whether the driver exports `cuFuncGetParamInfo` (CUDA 12.4+).
    pub fn has_param_info(&self) -> bool {
        self.api.func_get_param_info.is_some()
    }

    /// Whether the driver exports `cuMemGetHandleForAddressRange` (CUDA 11.7+).
    pub fn has_dma_buf_export(&self) -> bool {
        self.api.mem_get_handle_for_address_range.is_some()
    }
}

/// One GPU.
#[derive(Clone)]
pub struct Device {
    api: Arc<Api>,
    raw: CUdevice,
    ordinal: u32,
}

impl fmt::Debug for Device {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Device")
            .field("ordinal", &self.ordinal)
            .finish_non_exhaustive()
    }
}

impl Device {
    /// The ordinal this device was opened with.
    pub fn ordinal(&self) -> u32 {
        self.ordinal
    }

    /// `cuDeviceGetAttribute` of the raw `CUdevice_attribute` value `attr`.
    /// The driver rejects values it does not know with `CUDA_ERROR_INVALID_VALUE`.
    pub fn attribute(&self, attr: i32) -> Result<i32, DriverError> {
        let mut v: c_int = 0;
        // SAFETY: `v` is a valid out-pointer; `attr` is passed as the `int` the
        // C enum is, so any value is defined behaviour and checked by the driver.
        let status = unsafe { (self.api.device_get_attribute)(&mut v, attr, self.raw) };
        self.api.check(status, "cuDeviceGetAttribute")?;
        Ok(v)
    }

    /// `cuDeviceGetName`.
    pub fn name(&self) -> Result<String, DriverError> {
        let mut buf = [0 as c_char; 256];
        // SAFETY: the driver writes at most `len` bytes, NUL included.
        let status = unsafe { (self.api.device_get_name)(buf.as_mut_ptr(), 256, self.raw) };
        self.api.check(status, "cuDeviceGetName")?;
        let bytes: Vec<u8> = buf
            .iter()
            .take_while(|&&c| c != 0)
            .map(|&c| c as u8)
            .collect();
        Ok(String::from_utf8_lossy(&bytes).into_owned())
    }

    /// `cuDeviceTotalMem`, in bytes.
    pub fn total_mem(&self) -> Result<u64, DriverError> {
        let mut bytes: usize = 0;
        // SAFETY: `bytes` is a valid out-pointer.
        let status = unsafe { (self.api.device_total_mem)(&mut bytes, self.raw) };
        self.api.check(status, "cuDeviceTotalMem")?;
        Ok(bytes as u64)
    }

    /// `cuDeviceGetUuid`; all zeros when the driver has no such entry point.
    pub fn uuid(&self) -> Result<[u8; 16], DriverError> {
        let Some(get) = self.api.device_get_uuid else {
            return Ok([0; 16]);
        };
        let mut uuid = sys::CUuuid { bytes: [0; 16] };
        // SAFETY: `uuid` is a valid out-pointer to a `CUuuid`.
        let status = unsafe { get(&mut uuid, self.raw) };
        self.api.check(status, "cuDeviceGetUuid")?;
        Ok(uuid.bytes.map(|b| b as u8))
    }

    /// A new context of its own on this device (`cuCtxCreate`), with one
    /// non-blocking stream for all of its work.
    pub fn create_context(&self) -> Result<Context, DriverError> {
        let api = &self.api;
        let mut raw: CUcontext = std::ptr::null_mut();
        let status = match api.ctx_create {
            // SAFETY: `raw` is a valid out-pointer, the flags are valid.
            CtxCreate::V2(f) => unsafe { f(&mut raw, CTX_SCHED_AUTO, self.raw) },
            // SAFETY: as above; NULL creation parameters mean the defaults.
            CtxCreate::V4(f) => unsafe {
                f(&mut raw, std::ptr::null_mut(), CTX_SCHED_AUTO, self.raw)
            },
        };
        api.check(status, "cuCtxCreate")?;
        // The new context is current on this thread: create its stream in it.
        let mut stream: CUstream = std::ptr::null_mut();
        // SAFETY: `stream` is a valid out-pointer, the flag is valid.
        let status = unsafe { (api.stream_create)(&mut stream, STREAM_NON_BLOCKING) };
        if let Err(e) = api.check(status, "cuStreamCreate") {
            // SAFETY: `raw` was created above and is not used afterwards.
            unsafe { (api.ctx_destroy)(raw) };
            return Err(e);
        }
        Ok(Context {
            inner: Arc::new(CtxInner {
                api: api.clone(),
                raw,
                stream,
            }),
        })
    }
}

/// The driver objects of one context.
struct CtxInner {
    api: Arc<Api>,
    raw: CUcontext,
    stream: CUstream,
}

// SAFETY: the driver API is thread safe: a context and its stream may be used
// from any thread once made current there, which every method does first.
unsafe impl Send for CtxInner {}
// SAFETY: as for `Send`; no method relies on thread-local state beyond the
// current context, which each one sets itself.
unsafe impl Sync for CtxInner {}

impl CtxInner {
    /// Makes the context current on the calling thread.
    fn bind(&self) -> Result<(), DriverError> {
        // SAFETY: `raw` is a live context (destroyed only in `drop`).
        let status = unsafe { (self.api.ctx_set_current)(self.raw) };
        self.api.check(status, "cuCtxSetCurrent")
    }

    fn sync_stream(&self) -> Result<(), DriverError> {
        // SAFETY: `stream` is a live stream of this context.
        let status = unsafe { (self.api.stream_synchronize)(self.stream) };
        self.api.check(status, "cuStreamSynchronize")
    }
}

impl Drop for CtxInner {
    fn drop(&mut self) {
        // Destroying the context releases everything created in it (memory,
        // modules, events, the stream); the stream is destroyed first all the
        // same, after its work (the context is made current to do so).
        if let Err(e) = self.bind() {
            tracing::warn!("releasing a CUDA context: {e}");
        }
        // SAFETY: the stream and context are live and used by nothing else:
        // this is the last reference.
        let status = unsafe { (self.api.stream_destroy)(self.stream) };
        if let Err(e) = self.api.check(status, "cuStreamDestroy") {
            tracing::warn!("releasing a CUDA context: {e}");
        }
        // SAFETY: as above.
        let status = unsafe { (self.api.ctx_destroy)(self.raw) };
        if let Err(e) = self.api.check(status, "cuCtxDestroy") {
            tracing::warn!("releasing a CUDA context: {e}");
        }
    }
}

/// A CUDA context of its own: device memory, modules and one stream. All
/// work is issued on that stream and waited for before a method returns.
///
/// Device addresses are plain numbers here. A wrong one cannot harm this
/// process: the driver checks copies against the context's address space, and
/// a kernel only reaches memory mapped into its own context (its device memory
/// and the page-locked staging buffers of that same context).
#[derive(Clone)]
pub struct Context {
    inner: Arc<CtxInner>,
}

impl fmt::Debug for Context {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Context").finish_non_exhaustive()
    }
}

impl Context {
    fn api(&self) -> &Api {
        &self.inner.api
    }

    /// `cuCtxSynchronize`.
    pub fn synchronize(&self) -> Result<(), DriverError> {
        self.inner.bind()?;
        // SAFETY: no arguments; the context is current.
        let status = unsafe { (self.api().ctx_synchronize)() };
        self.api().check(status, "cuCtxSynchronize")
    }

    /// `cuCtxSetLimit`, then `cuCtxGetLimit`: the value the driver chose.
    pub fn set_limit(&self, limit: i32, value: u64) -> Result<u64, DriverError> {
        self.inner.bind()?;
        let value = usize::try_from(value).unwrap_or(usize::MAX);
        // SAFETY: plain values; the context is current.
        let status = unsafe { (self.api().ctx_set_limit)(limit as c_int, value) };
        self.api().check(status, "cuCtxSetLimit")?;
        let mut now = 0usize;
        // SAFETY: a valid out-pointer; the context is current.
        let status = unsafe { (self.api().ctx_get_limit)(&mut now, limit as c_int) };
        self.api().check(status, "cuCtxGetLimit")?;
        Ok(now as u64)
    }

    /// `cuMemGetInfo`: (free, total) bytes of the device.
    pub fn mem_info(&self) -> Result<(u64, u64), DriverError> {
        self.inner.bind()?;
        let (mut free, mut total) = (0usize, 0usize);
        // SAFETY: valid out-pointers.
        let status = unsafe { (self.api().mem_get_info)(&mut free, &mut total) };
        self.api().check(status, "cuMemGetInfo")?;
        Ok((free as u64, total as u64))
    }

    /// `cuMemAlloc`.
    pub fn alloc(&self, size: u64) -> Result<u64, DriverError> {
        let size = usize::try_from(size)
            .map_err(|_| DriverError::local(ERROR_INVALID_VALUE, "cuMemAlloc"))?;
        self.inner.bind()?;
        let mut ptr: CUdeviceptr = 0;
        // SAFETY: `ptr` is a valid out-pointer.
        let status = unsafe { (self.api().mem_alloc)(&mut ptr, size) };
        self.api().check(status, "cuMemAlloc")?;
        Ok(ptr)
    }

    /// `cuMemFree` of an address `alloc` returned.
    pub fn free(&self, ptr: u64) -> Result<(), DriverError> {
        self.inner.bind()?;
        // SAFETY: the driver checks that `ptr` is an allocation of this context.
        let status = unsafe { (self.api().mem_free)(ptr) };
        self.api().check(status, "cuMemFree")
    }

    /// Device-to-device copy of `len` bytes, completed before it returns.
    pub fn copy_dtod(&self, dst: u64, src: u64, len: u64) -> Result<(), DriverError> {
        let len = usize::try_from(len)
            .map_err(|_| DriverError::local(ERROR_INVALID_VALUE, "cuMemcpyDtoDAsync"))?;
        self.inner.bind()?;
        // SAFETY: device addresses only; the driver checks them.
        let status = unsafe { (self.api().memcpy_dtod_async)(dst, src, len, self.inner.stream) };
        self.api().check(status, "cuMemcpyDtoDAsync")?;
        self.inner.sync_stream()
    }

    /// Sets `len` bytes at `dst` to `value`, completed before it returns.
    pub fn memset(&self, dst: u64, value: u8, len: u64) -> Result<(), DriverError> {
        let len = usize::try_from(len)
            .map_err(|_| DriverError::local(ERROR_INVALID_VALUE, "cuMemsetD8Async"))?;
        self.inner.bind()?;
        // SAFETY: device address only; the driver checks it.
        let status = unsafe { (self.api().memset_d8_async)(dst, value, len, self.inner.stream) };
        self.api().check(status, "cuMemsetD8Async")?;
        self.inner.sync_stream()
    }

    /// `count` page-locked staging chunks of `chunk` bytes for pipelined copies.
    pub fn staging(&self, chunk: usize, count: usize) -> Result<Staging, DriverError> {
        self.inner.bind()?;
        let mut staging = Staging {
            ctx: self.inner.clone(),
            chunk,
            slots: Vec::with_capacity(count),
        };
        for _ in 0..count.max(1) {
            let mut host: *mut c_void = std::ptr::null_mut();
            // SAFETY: `host` is a valid out-pointer.
            let status = unsafe { (self.api().mem_alloc_host)(&mut host, chunk.max(1)) };
            self.api().check(status, "cuMemAllocHost")?;
            let mut event: CUevent = std::ptr::null_mut();
            // SAFETY: `event` is a valid out-pointer, the flag is valid.
            let status = unsafe { (self.api().event_create)(&mut event, EVENT_DISABLE_TIMING) };
            if let Err(e) = self.api().check(status, "cuEventCreate") {
                // SAFETY: `host` was allocated above and is not used again.
                unsafe { (self.api().mem_free_host)(host) };
                return Err(e);
            }
            // Pushed at once: `Staging::drop` releases what was made so far.
            staging.slots.push(Slot {
                host: host.cast(),
                event,
                pending: false,
            });
        }
        Ok(staging)
    }

    /// Loads a fat binary into the context (`cuModuleLoadData`).
    pub fn load_module(&self, image: &Image) -> Result<Module, DriverError> {
        self.inner.bind()?;
        let mut raw: CUmodule = std::ptr::null_mut();
        // SAFETY: `image` is a fat binary whose headers `Image::fatbin`
        // checked against its length, or the PTX text or cubin of a one-entry
        // one, so the driver reads only inside the buffer (plus zero padding
        // after it, which ends PTX text); the buffer is 64-byte aligned.
        let status = unsafe { (self.api().module_load_data)(&mut raw, image.as_ptr()) };
        self.api().check(status, "cuModuleLoadData")?;
        Ok(Module {
            inner: Arc::new(ModInner {
                ctx: self.inner.clone(),
                raw,
            }),
        })
    }

    /// Launches `function` and waits for it to finish. `params` is the
    /// kernel's parameter buffer, packed at the kernel's parameter offsets; it
    /// is handed to the driver through `CU_LAUNCH_PARAM_BUFFER_POINTER`, copied
    /// into a zeroed buffer of [`MAX_PARAM_BYTES`] so that the driver never
    /// reads past it.
    ///
    /// A cooperative launch (every block resident, grid-wide sync) goes
    /// through `cuLaunchKernelEx` with `CU_LAUNCH_ATTRIBUTE_COOPERATIVE`,
    /// since `cuLaunchCooperativeKernel` takes no parameter buffer.
    ///
    /// The error of a launch the driver refused carries the call
    /// `cuLaunchKernel` (or `cuLaunchKernelEx`); one from the kernel's
    /// execution, `cuStreamSynchronize`.
    pub fn launch(
        &self,
        function: &Function,
        grid: [u32; 3],
        block: [u32; 3],
        shared_mem: u32,
        params: &[u8],
        cooperative: bool,
    ) -> Result<(), DriverError> {
        if !Arc::ptr_eq(&function.module.ctx, &self.inner) {
            return Err(DriverError::local(ERROR_INVALID_HANDLE, "cuLaunchKernel"));
        }
        if params.len() > MAX_PARAM_BYTES {
            return Err(DriverError::local(ERROR_INVALID_VALUE, "cuLaunchKernel"));
        }
        let mut buffer = vec![0u8; MAX_PARAM_BYTES];
        buffer[..params.len()].copy_from_slice(params);
        let mut size: usize = params.len();
        let mut extra: [*mut c_void; 5] = [
            sys::CU_LAUNCH_PARAM_BUFFER_POINTER_AS_INT as usize as *mut c_void,
            buffer.as_mut_ptr().cast(),
            sys::CU_LAUNCH_PARAM_BUFFER_SIZE_AS_INT as usize as *mut c_void,
            (&mut size as *mut usize).cast(),
            sys::CU_LAUNCH_PARAM_END_AS_INT as usize as *mut c_void,
        ];
        self.inner.bind()?;
        if cooperative {
            const CALL: &str = "cuLaunchKernelEx";
            let launch_ex = self
                .api()
                .launch_kernel_ex
                .ok_or(DriverError::local(ERROR_NOT_SUPPORTED, CALL))?;
            let mut attr = sys::CUlaunchAttribute {
                id: sys::CUlaunchAttributeID::CU_LAUNCH_ATTRIBUTE_COOPERATIVE,
                pad: [0; 4],
                value: sys::CUlaunchAttributeValue { cooperative: 1 },
            };
            let config = sys::CUlaunchConfig {
                gridDimX: grid[0],
                gridDimY: grid[1],
                gridDimZ: grid[2],
                blockDimX: block[0],
                blockDimY: block[1],
                blockDimZ: block[2],
                sharedMemBytes: shared_mem,
                hStream: self.inner.stream,
                attrs: &mut attr,
                numAttrs: 1,
            };
            // SAFETY: as for cuLaunchKernel below; `config` and its one
            // attribute live across the call.
            let status = unsafe {
                launch_ex(
                    &config,
                    function.raw,
                    std::ptr::null_mut(),
                    extra.as_mut_ptr(),
                )
            };
            self.api().check(status, CALL)?;
            return self.inner.sync_stream();
        }
        // SAFETY: `function` belongs to this context (checked above) and its
        // module is alive (held by `function`); `extra` is a well-formed,
        // END-terminated list whose buffer holds MAX_PARAM_BYTES bytes, at
        // least what any kernel reads, and lives across the call (the driver
        // copies the parameters before returning).
        let status = unsafe {
            (self.api().launch_kernel)(
                function.raw,
                grid[0],
                grid[1],
                grid[2],
                block[0],
                block[1],
                block[2],
                shared_mem,
                self.inner.stream,
                std::ptr::null_mut(),
                extra.as_mut_ptr(),
            )
        };
        self.api().check(status, "cuLaunchKernel")?;
        self.inner.sync_stream()
    }

    /// Exports `[ptr, ptr + len)` of this context's device memory as a
    /// dma-buf file descriptor (`cuMemGetHandleForAddressRange` with
    /// `CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD`), for an RDMA adapter to register.
    /// `ptr` and `len` must be multiples of the host page size. Fails with
    /// `CUDA_ERROR_NOT_SUPPORTED` when the driver has no such entry point.
    pub fn dma_buf_fd(&self, ptr: u64, len: u64) -> Result<OwnedFd, DriverError> {
        const CALL: &str = "cuMemGetHandleForAddressRange";
        let Some(export) = self.api().mem_get_handle_for_address_range else {
            return Err(DriverError::local(ERROR_NOT_SUPPORTED, CALL));
        };
        let len =
            usize::try_from(len).map_err(|_| DriverError::local(ERROR_INVALID_VALUE, CALL))?;
        self.inner.bind()?;
        let mut fd: c_int = -1;
        let handle_type = sys::CUmemRangeHandleType::CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD as c_int;
        // SAFETY: for the dma-buf handle type the driver writes an `int` file
        // descriptor through `handle`; the range is checked by the driver.
        let status = unsafe { export((&mut fd as *mut c_int).cast(), ptr, len, handle_type, 0) };
        self.api().check(status, CALL)?;
        if fd < 0 {
            return Err(DriverError::local(ERROR_NOT_SUPPORTED, CALL));
        }
        // SAFETY: on success the driver hands over a new descriptor that
        // nothing else owns.
        Ok(unsafe { OwnedFd::from_raw_fd(fd) })
    }

    /// `cuIpcGetMemHandle` of the allocation that starts at `ptr`, for
    /// another process to open.
    pub fn ipc_mem_handle(&self, ptr: u64) -> Result<IpcMemHandle, DriverError> {
        const CALL: &str = "cuIpcGetMemHandle";
        let get = self
            .api()
            .ipc_get_mem_handle
            .ok_or(DriverError::local(ERROR_NOT_SUPPORTED, CALL))?;
        self.inner.bind()?;
        let mut handle = IpcMemHandle([0; 64]);
        // SAFETY: `handle` is a valid out-pointer of the struct's size; the
        // driver checks `ptr`.
        let status = unsafe { get(&mut handle, ptr) };
        self.api().check(status, CALL)?;
        Ok(handle)
    }

    /// `cuIpcOpenMemHandle_v2`: maps another process's allocation into
    /// this context; its address here.
    pub fn ipc_open(&self, handle: IpcMemHandle) -> Result<u64, DriverError> {
        const CALL: &str = "cuIpcOpenMemHandle";
        let open = self
            .api()
            .ipc_open_mem_handle
            .ok_or(DriverError::local(ERROR_NOT_SUPPORTED, CALL))?;
        self.inner.bind()?;
        let mut ptr: CUdeviceptr = 0;
        // SAFETY: `ptr` is a valid out-pointer; the handle is plain bytes,
        // which the driver validates.
        let status = unsafe { open(&mut ptr, handle, IPC_MEM_LAZY_ENABLE_PEER_ACCESS) };
        self.api().check(status, CALL)?;
        Ok(ptr)
    }

    /// `cuIpcCloseMemHandle` of an address [`Context::ipc_open`] returned.
    pub fn ipc_close(&self, ptr: u64) -> Result<(), DriverError> {
        const CALL: &str = "cuIpcCloseMemHandle";
        let close = self
            .api()
            .ipc_close_mem_handle
            .ok_or(DriverError::local(ERROR_NOT_SUPPORTED, CALL))?;
        self.inner.bind()?;
        // SAFETY: the driver checks that `ptr` is a mapping it made.
        let status = unsafe { close(ptr) };
        self.api().check(status, CALL)
    }
}

/// `CUipcMemHandle`: 64 opaque bytes, passed by value as C passes the struct.
#[derive(Clone, Copy)]
#[repr(C)]
pub struct IpcMemHandle(pub [u8; 64]);

/// `CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS`.
const IPC_MEM_LAZY_ENABLE_PEER_ACCESS: c_uint = 1;

/// One page-locked chunk and the event recorded after the last copy that used it.
struct Slot {
    host: *mut u8,
    event: CUevent,
    /// A copy into or out of `host` was enqueued and not yet waited for.
    pending: bool,
}

/// Why a staged copy failed.
#[derive(Debug)]
pub enum StagedError<E> {
    /// A driver call failed.
    Driver(DriverError),
    /// The host side (the network) failed; the copy was abandoned.
    Host(E),
}

impl<E> From<DriverError> for StagedError<E> {
    fn from(e: DriverError) -> Self {
        StagedError::Driver(e)
    }
}

/// Page-locked staging chunks of one context, recycled through events so that
/// the host side of chunk `i + 1` overlaps the PCIe copy of chunk `i`.
pub struct Staging {
    ctx: Arc<CtxInner>,
    chunk: usize,
    slots: Vec<Slot>,
}

// SAFETY: the chunks are owned by this value alone and the driver handles may
// be used from any thread (see `CtxInner`).
unsafe impl Send for Staging {}

impl fmt::Debug for Staging {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Staging")
            .field("chunk", &self.chunk)
            .field("count", &self.slots.len())
            .finish_non_exhaustive()
    }
}

impl Staging {
    /// Bytes per chunk.
    pub fn chunk(&self) -> usize {
        self.chunk
    }

    /// Waits until no copy uses chunk `i`.
    fn wait(&mut self, i: usize) -> Result<(), DriverError> {
        let api = &self.ctx.api;
        let slot = &mut self.slots[i];
        if slot.pending {
            // SAFETY: `event` is a live event of this context.
            let status = unsafe { (api.event_synchronize)(slot.event) };
            api.check(status, "cuEventSynchronize")?;
            slot.pending = false;
        }
        Ok(())
    }

    /// Waits for everything in flight, after a failure; errors are those of the
    /// failure already being reported.
    fn drain(&mut self) {
        let _ = self.ctx.sync_stream();
        for slot in &mut self.slots {
            slot.pending = false;
        }
    }

    /// The first `len` bytes of chunk `i`, which no copy uses.
    fn host_mut(&mut self, i: usize, len: usize) -> &mut [u8] {
        let slot = &self.slots[i];
        debug_assert!(!slot.pending && len <= self.chunk);
        // SAFETY: `host` points to `chunk` bytes of page-locked memory owned by
        // this value; `len <= chunk`; no copy is in flight on it (`pending` is
        // false after `wait`), and `&mut self` rules out other borrows.
        unsafe { std::slice::from_raw_parts_mut(slot.host, len.min(self.chunk)) }
    }

    /// Enqueues the copy of chunk `i` (`len` bytes) to or from `device`.
    fn enqueue(
        &mut self,
        i: usize,
        device: u64,
        len: usize,
        upload: bool,
    ) -> Result<(), DriverError> {
        let api = &self.ctx.api;
        let stream = self.ctx.stream;
        let slot = &mut self.slots[i];
        let len = len.min(self.chunk);
        let (status, call) = if upload {
            // SAFETY: the source is `len` bytes of this chunk, which stays
            // allocated and untouched until the event below has completed
            // (`wait` before any reuse, `drain` on failure, `drop` syncs).
            let s = unsafe { (api.memcpy_htod_async)(device, slot.host.cast(), len, stream) };
            (s, "cuMemcpyHtoDAsync")
        } else {
            // SAFETY: as above, with the chunk as the destination.
            let s = unsafe { (api.memcpy_dtoh_async)(slot.host.cast(), device, len, stream) };
            (s, "cuMemcpyDtoHAsync")
        };
        api.check(status, call)?;
        // SAFETY: live event and stream of this context.
        let status = unsafe { (api.event_record)(slot.event, stream) };
        // Even if recording failed the copy may be queued: mark it so that the
        // chunk is not reused before the stream has been drained.
        slot.pending = true;
        api.check(status, "cuEventRecord")
    }

    /// Copies `len` bytes to device address `dst`, each chunk filled by
    /// `fill` (which must fill the whole slice it is given) while earlier
    /// chunks are still being copied. Returns when the copy is complete.
    pub fn upload<E>(
        &mut self,
        dst: u64,
        len: u64,
        fill: &mut dyn FnMut(&mut [u8]) -> Result<(), E>,
    ) -> Result<(), StagedError<E>> {
        self.ctx.bind()?;
        let result = self.upload_chunks(dst, len, fill);
        match result {
            Ok(()) => self.ctx.sync_stream().map_err(StagedError::Driver),
            Err(e) => {
                self.drain();
                Err(e)
            }
        }
    }

    fn upload_chunks<E>(
        &mut self,
        dst: u64,
        len: u64,
        fill: &mut dyn FnMut(&mut [u8]) -> Result<(), E>,
    ) -> Result<(), StagedError<E>> {
        let count = self.slots.len();
        let mut done: u64 = 0;
        let mut i = 0usize;
        while done < len {
            let n = (len - done).min(self.chunk as u64) as usize;
            let slot = i % count;
            self.wait(slot)?;
            fill(self.host_mut(slot, n)).map_err(StagedError::Host)?;
            self.enqueue(slot, dst + done, n, true)?;
            done += n as u64;
            i += 1;
        }
        Ok(())
    }

    /// Copies `len` bytes from device address `src` and hands them to `sink`
    /// in order, chunk by chunk, while later chunks are being copied.
    pub fn download<E>(
        &mut self,
        src: u64,
        len: u64,
        sink: &mut dyn FnMut(&[u8]) -> Result<(), E>,
    ) -> Result<(), StagedError<E>> {
        self.ctx.bind()?;
        let result = self.download_chunks(src, len, sink);
        if result.is_err() {
            self.drain();
        }
        result
    }

    fn download_chunks<E>(
        &mut self,
        src: u64,
        len: u64,
        sink: &mut dyn FnMut(&[u8]) -> Result<(), E>,
    ) -> Result<(), StagedError<E>> {
        let count = self.slots.len();
        let chunk = self.chunk as u64;
        let chunks = len.div_ceil(chunk);
        let size = |j: u64| (len - j * chunk).min(chunk) as usize;
        for j in 0..chunks.min(count as u64) {
            self.enqueue(j as usize % count, src + j * chunk, size(j), false)?;
        }
        for j in 0..chunks {
            let slot = j as usize % count;
            self.wait(slot)?;
            let n = size(j);
            sink(self.host_mut(slot, n)).map_err(StagedError::Host)?;
            let next = j + count as u64;
            if next < chunks {
                self.enqueue(slot, src + next * chunk, size(next), false)?;
            }
        }
        Ok(())
    }
}

impl Drop for Staging {
    fn drop(&mut self) {
        let api = self.ctx.api.clone();
        if self.ctx.bind().is_ok() {
            let _ = self.ctx.sync_stream();
        }
        for slot in self.slots.drain(..) {
            // SAFETY: the stream was drained above, so no copy uses the chunk
            // or records the event any more; both are released exactly once.
            let status = unsafe { (api.event_destroy)(slot.event) };
            if let Err(e) = api.check(status, "cuEventDestroy") {
                tracing::warn!("releasing a staging chunk: {e}");
            }
            // SAFETY: as above.
            let status = unsafe { (api.mem_free_host)(slot.host.cast()) };
            if let Err(e) = api.check(status, "cuMemFreeHost") {
                tracing::warn!("releasing a staging chunk: {e}");
            }
        }
    }
}

/// 64 bytes, 64-byte aligned.
#[derive(Clone, Copy)]
#[repr(C, align(64))]
struct Block([u8; 64]);

/// A fat binary checked and laid out for `cuModuleLoadData`: 64-byte aligned,
/// followed by at least 64 zero bytes.
pub struct Image {
    blocks: Vec<Block>,
    len: usize,
}

impl fmt::Debug for Image {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Image").field("len", &self.len).finish()
    }
}

impl Image {
    /// Checks that `bytes` is one or more well-formed fat binary containers
    /// whose entries decompress to at most `max_decompressed` bytes, and copies
    /// it into an aligned, padded buffer. The driver parses the image with its
    /// own code: only input whose headers were checked against its length here
    /// reaches it.
    pub fn fatbin(bytes: &[u8], max_decompressed: u64) -> Result<Self, rcud_fatbin::FatbinError> {
        // The driver recognises a fat binary by its first four bytes; anything
        // else it would take for a cubin or PTX text.
        let magic = rcud_fatbin::CONTAINER_MAGIC.to_le_bytes();
        if bytes.get(..4) != Some(&magic[..]) {
            let mut found = [0u8; 4];
            for (f, b) in found.iter_mut().zip(bytes) {
                *f = *b;
            }
            return Err(rcud_fatbin::FatbinError::BadContainerMagic {
                offset: 0,
                found: u32::from_le_bytes(found),
            });
        }
        let parsed = rcud_fatbin::FatBinary::parse_with_limit(bytes, max_decompressed)?;
        // The client wraps PTX text and bare cubins into one-entry containers
        // of its own making; the driver takes those forms directly, and is
        // given them so (its fatbin parser crashed on such a container on a
        // real GPU). The padding after the payload ends PTX text with a NUL.
        let loaded: &[u8] = match (&parsed.entries[..], &parsed.skipped[..]) {
            ([entry], []) if rcud_fatbin::containers_len(bytes).ok() == Some(bytes.len()) => {
                &entry.payload
            }
            _ => bytes,
        };
        let mut blocks = vec![Block([0u8; 64]); loaded.len() / 64 + 2];
        for (block, piece) in blocks.iter_mut().zip(loaded.chunks(64)) {
            block.0[..piece.len()].copy_from_slice(piece);
        }
        Ok(Self {
            blocks,
            len: bytes.len(),
        })
    }

    /// Bytes of the fat binary (without the padding).
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the image is empty (never, for a checked fat binary).
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    fn as_ptr(&self) -> *const c_void {
        self.blocks.as_ptr().cast()
    }
}

struct ModInner {
    ctx: Arc<CtxInner>,
    raw: CUmodule,
}

// SAFETY: see `CtxInner`: module handles may be used from any thread.
unsafe impl Send for ModInner {}
// SAFETY: as for `Send`.
unsafe impl Sync for ModInner {}

impl Drop for ModInner {
    fn drop(&mut self) {
        if let Err(e) = self.ctx.bind() {
            tracing::warn!("unloading a CUDA module: {e}");
            return;
        }
        // SAFETY: the module is live and this is its last reference; its
        // context is kept alive by `ctx`.
        let status = unsafe { (self.ctx.api.module_unload)(self.raw) };
        if let Err(e) = self.ctx.api.check(status, "cuModuleUnload") {
            tracing::warn!("unloading a CUDA module: {e}");
        }
    }
}

/// A module loaded into a [`Context`].
#[derive(Clone)]
pub struct Module {
    inner: Arc<ModInner>,
}

impl fmt::Debug for Module {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Module").finish_non_exhaustive()
    }
}

impl Module {
    /// Kernel `name` (mangled), `cuModuleGetFunction`.
    pub fn function(&self, name: &CStr) -> Result<Function, DriverError> {
        let api = &self.inner.ctx.api;
        self.inner.ctx.bind()?;
        let mut raw: CUfunction = std::ptr::null_mut();
        // SAFETY: valid out-pointer, live module, NUL-terminated name.
        let status = unsafe { (api.module_get_function)(&mut raw, self.inner.raw, name.as_ptr()) };
        api.check(status, "cuModuleGetFunction")?;
        Ok(Function {
            module: self.inner.clone(),
            raw,
        })
    }

    /// Device address and size of module-scope variable `name`,
    /// `cuModuleGetGlobal`.
    pub fn global(&self, name: &CStr) -> Result<(u64, u64), DriverError> {
        let api = &self.inner.ctx.api;
        self.inner.ctx.bind()?;
        let (mut ptr, mut size): (CUdeviceptr, usize) = (0, 0);
        // SAFETY: valid out-pointers, live module, NUL-terminated name.
        let status =
            unsafe { (api.module_get_global)(&mut ptr, &mut size, self.inner.raw, name.as_ptr()) };
        api.check(status, "cuModuleGetGlobal")?;
        Ok((ptr, size as u64))
    }
}

/// A kernel of a [`Module`].
#[derive(Clone)]
pub struct Function {
    module: Arc<ModInner>,
    raw: CUfunction,
}

// SAFETY: see `CtxInner`: function handles may be used from any thread.
unsafe impl Send for Function {}
// SAFETY: as for `Send`.
unsafe impl Sync for Function {}

impl fmt::Debug for Function {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Function").finish_non_exhaustive()
    }
}

impl Function {
    /// `cuFuncGetAttribute` of the raw `CUfunction_attribute` value `attr`.
    pub fn attribute(&self, attr: i32) -> Result<i32, DriverError> {
        let api = &self.module.ctx.api;
        self.module.ctx.bind()?;
        let mut v: c_int = 0;
        // SAFETY: valid out-pointer, live function; the attribute is an `int`
        // checked by the driver.
        let status = unsafe { (api.func_get_attribute)(&mut v, attr, self.raw) };
        api.check(status, "cuFuncGetAttribute")?;
        Ok(v)
    }

    /// `cuFuncSetAttribute` of the raw `CUfunction_attribute` value `attr`.
    pub fn set_attribute(&self, attr: i32, value: i32) -> Result<(), DriverError> {
        let api = &self.module.ctx.api;
        self.module.ctx.bind()?;
        // SAFETY: live function; attribute and value are checked by the driver.
        let status = unsafe { (api.func_set_attribute)(self.raw, attr, value) };
        api.check(status, "cuFuncSetAttribute")
    }

    /// Bytes of the kernel's parameters (the end of its last one), from
    /// `cuFuncGetParamInfo`; `None` when the driver is older than CUDA 12.4.
    pub fn param_bytes(&self) -> Option<Result<usize, DriverError>> {
        let info = self.module.ctx.api.func_get_param_info?;
        let api = &self.module.ctx.api;
        if let Err(e) = self.module.ctx.bind() {
            return Some(Err(e));
        }
        let mut end = 0usize;
        // A kernel has at most MAX_PARAM_BYTES bytes, hence as many parameters.
        for index in 0..MAX_PARAM_BYTES {
            let (mut offset, mut size) = (0usize, 0usize);
            // SAFETY: valid out-pointers, live function.
            let status = unsafe { info(self.raw, index, &mut offset, &mut size) };
            if status == ERROR_INVALID_VALUE {
                // Past the last parameter.
                break;
            }
            if let Err(e) = api.check(status, "cuFuncGetParamInfo") {
                return Some(Err(e));
            }
            end = end.max(offset.saturating_add(size));
        }
        Some(Ok(end))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_library_is_an_error_value() {
        let err = Driver::load_from("/nonexistent/libcuda.so.1").unwrap_err();
        let text = err.to_string();
        assert!(matches!(err, LoadError::Library { .. }), "{text}");
        assert!(text.contains("/nonexistent/libcuda.so.1"), "{text}");
        assert!(text.contains("NVIDIA driver"), "{text}");
    }

    #[test]
    fn a_library_without_the_driver_api_is_an_error_value() {
        // The C library is always there and has none of the cu* entry points.
        let err = match Driver::load_from("libc.so.6") {
            Err(LoadError::Library { reason, .. }) => {
                eprintln!("skipped: this system has no libc.so.6 to load: {reason}");
                return;
            }
            Err(e) => e,
            Ok(_) => panic!("libc.so.6 loaded as the CUDA driver"),
        };
        assert!(
            matches!(
                err,
                LoadError::Symbol {
                    symbol: "cuInit",
                    ..
                }
            ),
            "{err}"
        );
        assert!(err.to_string().contains("too old"), "{err}");
    }

    #[test]
    fn images_are_checked_aligned_and_padded() {
        assert!(Image::fatbin(b"not a fat binary", 1 << 20).is_err());
        assert!(Image::fatbin(&[], 1 << 20).is_err());
        // One container without entries: the smallest well-formed fat binary.
        let mut bytes = rcud_fatbin::CONTAINER_MAGIC.to_le_bytes().to_vec();
        bytes.extend_from_slice(&[1, 0, 16, 0, 0, 0, 0, 0, 0, 0, 0, 0]);
        let image = Image::fatbin(&bytes, 1 << 20).unwrap();
        assert_eq!(image.len(), 16);
        assert_eq!(image.as_ptr() as usize % 64, 0);
        assert!(image.blocks.len() * 64 >= 16 + 64);
        assert_eq!(&image.blocks[0].0[..16], &bytes[..]);
        // Truncated: the header promises more than there is.
        bytes[8] = 64;
        assert!(Image::fatbin(&bytes, 1 << 20).is_err());
    }

    fn loaded(image: &Image) -> Vec<u8> {
        image.blocks.iter().flat_map(|b| b.0).collect()
    }

    #[test]
    fn one_entry_containers_are_loaded_as_ptx_text_or_cubin() {
        let ptx =
            ".version 8.5\n.target sm_80\n.address_size 64\n.visible .entry k()\n{\n\tret;\n}\n";
        let image = Image::fatbin(&rcud_fatbin::image::wrap_ptx(ptx.as_bytes()), 1 << 20).unwrap();
        let bytes = loaded(&image);
        assert_eq!(&bytes[..ptx.len()], ptx.as_bytes());
        assert_eq!(bytes[ptx.len()], 0, "PTX text ends with a NUL");
        let mut elf = b"\x7fELF\x02\x01\x01\x33\x08".to_vec();
        elf.resize(200, 0);
        let image = Image::fatbin(&rcud_fatbin::image::wrap_cubin(&elf), 1 << 20).unwrap();
        assert_eq!(&loaded(&image)[..elf.len()], &elf[..]);
        // Two containers stay a fat binary.
        let mut two = rcud_fatbin::image::wrap_ptx(ptx.as_bytes());
        two.extend(rcud_fatbin::image::wrap_ptx(ptx.as_bytes()));
        let image = Image::fatbin(&two, 1 << 20).unwrap();
        assert_eq!(&loaded(&image)[..two.len()], &two[..]);
    }

    #[test]
    fn driver_error_display_names_the_call() {
        let e = DriverError {
            code: 700,
            call: "cuStreamSynchronize",
            name: Some("CUDA_ERROR_ILLEGAL_ADDRESS"),
        };
        assert_eq!(
            e.to_string(),
            "cuStreamSynchronize failed: CUDA_ERROR_ILLEGAL_ADDRESS (700)"
        );
        let e = DriverError::local(801, "cuMemGetHandleForAddressRange");
        assert_eq!(
            e.to_string(),
            "cuMemGetHandleForAddressRange failed: CUresult 801"
        );
    }
}
