//! Backends execute CUDA operations on GPUs.

pub mod cuda;
pub mod emu;
pub(crate) mod image_cache;

use std::sync::Arc;

use rcud_proto::ops::{Failure, FuncAttributes};
use rcud_proto::{CudaError, DeviceProps};
use thiserror::Error;

/// A source of host bytes for a host-to-device copy: the bulk payload of the
/// request, still arriving from the network.
pub trait HostSource {
    /// Fills `dst` with the next `dst.len()` bytes of the payload.
    fn read_into(&mut self, dst: &mut [u8]) -> Result<(), rcud_transport::TransportError>;
}

/// Why a copy from the network to the device failed.
#[derive(Debug, Error)]
pub enum CopyError {
    /// The copy itself is invalid; the rest of the payload must be discarded.
    #[error("{0}")]
    Cuda(#[from] CudaError),
    /// The connection failed while the payload was arriving.
    #[error("transport: {0}")]
    Transport(#[from] rcud_transport::TransportError),
}

/// A family of GPUs on this node.
pub trait Backend: Send + Sync {
    /// Short name for logs and the handshake (`emu`, `cuda`).
    fn name(&self) -> &'static str;
    /// Number of GPUs served.
    fn gpu_count(&self) -> u32;
    /// Driver version reported to clients.
    fn driver_version(&self) -> i32;
    /// Properties and `(cudaDeviceAttr, value)` pairs of one GPU.
    fn device_info(&self, gpu: u32) -> Result<(DeviceProps, Vec<(i32, i32)>), CudaError>;
    /// A fresh context for one client on one GPU. `window` is the client's
    /// name for this GPU (its device ordinal): backends that choose device
    /// addresses themselves place this context's allocations in an address
    /// range of that window, so that a client using GPUs of several servers
    /// never sees two allocations at one address.
    fn open(&self, gpu: u32, window: u32) -> Result<Box<dyn DeviceContext>, CudaError>;
    /// This backend serves one client in a process of its own (an agent
    /// process): process-wide state, such as standard output, is that
    /// client's alone.
    fn own_process(&self) {}
}

/// One client's state on one GPU. Dropping it releases everything it holds.
pub trait DeviceContext: Send {
    /// `cudaMalloc`.
    fn malloc(&mut self, size: u64) -> Result<u64, CudaError>;
    /// `cudaFree`.
    fn free(&mut self, ptr: u64) -> Result<(), CudaError>;
    /// `cudaIpcGetMemHandle`: the memory file behind the allocation holding
    /// `ptr`, the allocation's start and its length, for another client of
    /// this server to map.
    fn ipc_export(&mut self, _ptr: u64) -> Result<(std::fs::File, u64, u64), CudaError> {
        Err(CudaError::NOT_SUPPORTED)
    }
    /// `cudaIpcOpenMemHandle`: maps another client's memory file; its
    /// device address here.
    fn ipc_import(&mut self, _memory: std::fs::File, _len: u64) -> Result<u64, CudaError> {
        Err(CudaError::NOT_SUPPORTED)
    }
    /// `cudaIpcCloseMemHandle`.
    fn ipc_close(&mut self, _ptr: u64) -> Result<(), CudaError> {
        Err(CudaError::INVALID_VALUE)
    }
    /// Virtual memory management (`cuMemCreate`, `cuMemMap`, ...), where
    /// the backend has it; `None` where it has not (the device then reports
    /// `CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED` = 0).
    fn vmm(&mut self) -> Option<&mut dyn VirtualMemory> {
        None
    }
    /// Reads the naturally aligned `size`-byte (4 or 8) value at `addr`
    /// (`cuStreamWaitValue32/64`), as an atomic load: other clients may be
    /// writing it through shared memory.
    fn load_value(&mut self, _addr: u64, _size: u32) -> Result<u64, CudaError> {
        Err(CudaError::NOT_SUPPORTED)
    }
    /// `cudaMemGetInfo`: (free, total).
    fn mem_info(&self) -> (u64, u64);
    /// Bytes of device memory this client holds (allocations and module
    /// variables), for the per-client limit.
    fn memory_held(&self) -> u64;
    /// What an allocation of `size` bytes adds to [`DeviceContext::memory_held`],
    /// its overhead included.
    fn allocation_charge(&self, size: u64) -> u64 {
        size
    }
    /// `cudaDeviceSynchronize`.
    fn synchronize(&mut self) -> Result<(), CudaError>;
    /// `cudaDeviceReset`: release everything this client holds on the GPU.
    fn reset(&mut self);
    /// Checks that `[ptr, ptr + len)` is device memory this client owns.
    fn check(&self, ptr: u64, len: u64) -> Result<(), CudaError>;
    /// Copies `len` bytes arriving from `src` to device address `dst`. Returns
    /// `CopyError::Cuda` before reading anything when the range is invalid.
    fn copy_from_host(
        &mut self,
        dst: u64,
        len: u64,
        src: &mut dyn HostSource,
    ) -> Result<(), CopyError>;
    /// Hands the `len` device bytes at `src` to `sink`, in order, in one or
    /// more pieces. The range has been checked with [`DeviceContext::check`].
    fn copy_to_host(
        &mut self,
        src: u64,
        len: u64,
        sink: &mut dyn FnMut(&[u8]) -> Result<(), rcud_transport::TransportError>,
    ) -> Result<(), CopyError>;
    /// Device-to-device copy.
    fn copy_device(&mut self, dst: u64, src: u64, len: u64) -> Result<(), CudaError>;
    /// `cudaMemset`.
    fn memset(&mut self, dst: u64, value: u8, len: u64) -> Result<(), CudaError>;

    /// Loads a fat binary into this context for `owner` (the client's
    /// tenant, or its connection) and returns its module id and the memory
    /// its parsed code costs. With `image` `None`, the backend's cache is
    /// asked for `hash` among what `owner` shipped before, and a miss is
    /// `cudaErrorInvalidValue`; otherwise the image, which must hash to
    /// `hash`, is parsed and cached ([`image_cache`]).
    fn load_module(
        &mut self,
        owner: &str,
        hash: [u8; 32],
        image: Option<Vec<u8>>,
    ) -> Result<(u32, u64), Failure>;
    /// A kernel of a loaded module: its id and attributes.
    fn get_function(&mut self, module: u32, name: &str) -> Result<(u32, FuncAttributes), Failure>;
    /// Device address and size of a module-scope variable.
    fn get_global(&mut self, module: u32, name: &str) -> Result<(u64, u64), Failure>;
    /// `cudaFuncSetAttribute`.
    fn set_function_attribute(
        &mut self,
        function: u32,
        attr: i32,
        value: i32,
    ) -> Result<(), Failure>;
    /// Runs a kernel to completion; returns its device `printf` output.
    fn launch(&mut self, launch: &KernelLaunch<'_>) -> Result<Vec<u8>, Failure>;
    /// `cudaDeviceSetLimit` of a limit the device itself applies (stack
    /// size, printf FIFO, malloc heap): the value now in force.
    fn set_limit(&mut self, limit: i32, value: u64) -> Result<u64, Failure>;
    /// One call of a math library ([`rcud_proto::math`]): the library's
    /// status and the call's output bytes.
    fn math_call(&mut self, library: u8, _call: &[u8]) -> Result<rcud_math::Reply, Failure> {
        let name =
            rcud_proto::math::Library::from_wire(library).map_or("a math library", |l| l.name());
        Err(Failure::new(
            CudaError::NOT_SUPPORTED,
            format!(
                "{name} is not available on the {} backend",
                self.backend_name()
            ),
        ))
    }
    /// The backend's name, for messages.
    fn backend_name(&self) -> &'static str;
}

/// Virtual memory management of one client on one GPU: physical
/// allocations by handle, reserved address ranges, and mappings of the one
/// in the other. See `rcud_emu::memory::DeviceMemory` for the rules.
pub trait VirtualMemory {
    /// `cuMemCreate`: a handle.
    fn create(&mut self, size: u64) -> Result<u64, CudaError>;
    /// `cuMemRelease`.
    fn release(&mut self, handle: u64) -> Result<(), CudaError>;
    /// `cuMemExportToShareableHandle`: the memory file and its size.
    fn export(&mut self, handle: u64) -> Result<(std::fs::File, u64), CudaError>;
    /// `cuMemImportFromShareableHandle`: a handle of the memory file.
    fn import(&mut self, memory: std::fs::File, len: u64) -> Result<u64, CudaError>;
    /// `cuMemAddressReserve`.
    fn reserve(&mut self, size: u64, alignment: u64) -> Result<u64, CudaError>;
    /// `cuMemAddressFree`.
    fn free_address(&mut self, ptr: u64, size: u64) -> Result<(), CudaError>;
    /// `cuMemMap`.
    fn map(&mut self, ptr: u64, size: u64, offset: u64, handle: u64) -> Result<(), CudaError>;
    /// `cuMemUnmap`.
    fn unmap(&mut self, ptr: u64, size: u64) -> Result<(), CudaError>;
    /// `cuMemSetAccess`: readable and writable, or not accessible.
    fn set_access(&mut self, ptr: u64, size: u64, accessible: bool) -> Result<(), CudaError>;
}

/// One kernel launch as the client asked for it.
#[derive(Debug, Clone, Copy)]
pub struct KernelLaunch<'a> {
    /// Function id from [`DeviceContext::get_function`].
    pub function: u32,
    /// Grid dimensions in blocks.
    pub grid: [u32; 3],
    /// Block dimensions in threads.
    pub block: [u32; 3],
    /// Dynamic shared memory per block, in bytes.
    pub shared_mem: u32,
    /// Parameters packed at the kernel's parameter offsets.
    pub params: &'a [u8],
    /// Every block resident at once, with grid-wide synchronization.
    pub cooperative: bool,
}

/// Which backend the server runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum BackendKind {
    /// Real GPUs when present, else the emulated device.
    Auto,
    /// The emulated device.
    Emu,
    /// Real NVIDIA GPUs through the driver API.
    Cuda,
}

/// The engine that runs kernels on the emulated device (`--emu-engine`).
pub use rcud_emu::Engine as EmuEngine;

/// Settings of the emulated device.
#[derive(Debug, Clone)]
pub struct EmuSettings {
    /// Number of emulated GPUs.
    pub gpus: u32,
    /// Memory of each emulated GPU, in bytes.
    pub memory: u64,
    /// Longest a kernel may run before it is stopped with `cudaErrorLaunchTimeout`.
    pub kernel_timeout: std::time::Duration,
    /// Which engine runs kernels: the interpreter or the compiling engine.
    pub engine: rcud_emu::Engine,
}

impl Default for EmuSettings {
    fn default() -> Self {
        Self {
            gpus: 1,
            memory: rcud_emu::DEFAULT_MEMORY,
            kernel_timeout: std::time::Duration::from_secs(120),
            engine: rcud_emu::Engine::Interp,
        }
    }
}

/// A backend could not be started.
#[derive(Debug, Error)]
pub enum BackendError {
    /// The requested backend is not available on this host or in this build.
    #[error("backend `{backend}` is not available: {reason}")]
    Unavailable {
        /// Which backend.
        backend: &'static str,
        /// What is missing.
        reason: String,
    },
}

/// Builds the backend `kind`, falling back from `auto` to `emu` with a log line.
pub fn select_backend(
    kind: BackendKind,
    emu: &EmuSettings,
) -> Result<Arc<dyn Backend>, BackendError> {
    match kind {
        BackendKind::Emu => Ok(Arc::new(emu::EmuBackend::new(emu))),
        BackendKind::Cuda => match cuda::CudaBackend::new() {
            Ok(b) => {
                tracing::info!("backend cuda: {}", b.summary());
                Ok(Arc::new(b))
            }
            Err(why) => Err(BackendError::Unavailable {
                backend: "cuda",
                reason: format!("{why}; use --backend emu (or auto) for the emulated device"),
            }),
        },
        BackendKind::Auto => match cuda::CudaBackend::new() {
            Ok(b) => {
                tracing::info!("backend auto: using the real GPUs: {}", b.summary());
                Ok(Arc::new(b))
            }
            Err(why) => {
                tracing::info!("backend auto: using the emulated device, no real GPU: {why}");
                Ok(Arc::new(emu::EmuBackend::new(emu)))
            }
        },
    }
}
