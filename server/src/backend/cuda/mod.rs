//! The `cuda` backend: real NVIDIA GPUs through the CUDA driver API, with the
//! driver library (`libcuda.so.1`) loaded at run time, so that the server
//! builds and starts on hosts without it.
//!
//! The FFI lives in the `rcud-cuda-driver` crate next to this module
//! (`driver/`); this module holds the policy:
//!
//! - one CUDA context of its own per client ([`Backend::open`]): its kernels
//!   run in an address space no other client's memory is mapped into;
//! - every device address and range from the wire is checked against the
//!   client's own allocations and module variables ([`memory::AllocTable`])
//!   before any driver call;
//! - host-to-device and device-to-host copies go through page-locked staging
//!   chunks ([`STAGING_CHUNKS`] × [`STAGING_CHUNK`]) on the context's stream,
//!   recycled through events, so that receiving chunk `i + 1` from the network
//!   overlaps the PCIe copy of chunk `i`;
//! - modules are loaded from the fat binary the client shipped (checked by
//!   `rcud-fatbin` first, and cached by content hash for every client);
//! - driver errors become the runtime's `cudaError_t` ([`errors`]); a kernel
//!   fault poisons the context until `cudaDeviceReset`, which replaces it.
//!
//! Every operation completes before it returns (the trait's contract): a
//! launch waits for its kernel. Device-side `printf` output, which the driver
//! writes to the process's standard output, comes back in the launch reply
//! when the backend serves one client in an agent process of its own
//! ([`output`]); with agents as threads it goes to the server's standard
//! output.

mod blas;
mod blaslt;
mod errors;
mod fft;
mod library;
mod memory;
mod output;
mod props;
mod rand;
mod solver;
mod sparse;

use std::ffi::{CString, OsStr};
use std::os::fd::OwnedFd;
use std::sync::{Arc, OnceLock};

use rcud_cuda_driver as driver;
use rcud_cuda_driver::sys::{CUdevice_attribute, CUfunction_attribute as FA};
use rcud_proto::ops::{Failure, FuncAttributes, ATTR_CARVEOUT, ATTR_MAX_DYNAMIC_SHARED};
use rcud_proto::{CudaError, DeviceAttr, DeviceProps};
use rcud_transport::TransportError;
use thiserror::Error;

use super::image_cache;
use super::{Backend, CopyError, DeviceContext, HostSource, KernelLaunch};
use memory::AllocTable;

/// Bytes of one page-locked staging chunk.
pub const STAGING_CHUNK: usize = 1 << 20;
/// Staging chunks per client context: one being filled from the network, one
/// being copied over PCIe, one spare so that neither waits for the other.
pub const STAGING_CHUNKS: usize = 3;
/// Most bytes a client's fat binary may decompress to (a bound on hostile images).
const MAX_DECOMPRESSED: u64 = 1 << 30;

/// Why the `cuda` backend cannot run on this host.
#[derive(Debug, Clone, Error)]
pub enum Unavailable {
    /// The driver library is missing, or lacks entry points the backend needs.
    #[error("{0}")]
    Library(String),
    /// The driver is there but reports no device.
    #[error("the NVIDIA driver is installed but reports no CUDA device ({0})")]
    NoDevice(String),
    /// The driver failed to initialise or to describe a device.
    #[error("{0}")]
    Driver(String),
}

/// Whether GPUDirect RDMA through dma-buf is possible, or why not.
type DmaBufSupport = Result<(), String>;

/// One GPU as the backend serves it.
struct Gpu {
    device: driver::Device,
    props: DeviceProps,
    attributes: Vec<(i32, i32)>,
    dma_buf: DmaBufSupport,
}

/// The checked fat binaries, shared for identical bytes.
type ImageCache = image_cache::ImageCache<driver::Image>;

impl image_cache::Cached for driver::Image {
    fn cost(&self) -> u64 {
        self.len() as u64
    }
}

/// Real NVIDIA GPUs.
pub struct CudaBackend {
    version: i32,
    gpus: Vec<Gpu>,
    images: Arc<ImageCache>,
    /// Standard output captured for device `printf`, once this backend serves
    /// one client in a process of its own.
    printf: Arc<OnceLock<output::StdoutCapture>>,
    /// NVIDIA's cuBLAS, opened on the first cuBLAS call of any client.
    blas_library: Arc<blas::BlasLibrary>,
    /// NVIDIA's cuBLASLt, opened on the first cuBLASLt handle of any client.
    blaslt_library: Arc<blaslt::BlasLtLibrary>,
    /// NVIDIA's cuFFT, opened on the first cuFFT call of any client.
    fft_library: Arc<fft::FftLibrary>,
    /// NVIDIA's cuRAND, opened on the first cuRAND generator of any client.
    rand_library: Arc<rand::RandLibrary>,
    /// NVIDIA's cuSOLVER, opened on the first cuSOLVER handle of any client.
    solver_library: Arc<solver::SolverLibrary>,
    /// NVIDIA's cuSPARSE, opened on the first cuSPARSE handle of any client.
    sparse_library: Arc<sparse::SparseLibrary>,
}

impl std::fmt::Debug for CudaBackend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CudaBackend")
            .field("version", &self.version)
            .field("gpus", &self.gpus.len())
            .finish_non_exhaustive()
    }
}

impl CudaBackend {
    /// Loads `libcuda.so.1` and describes every GPU it reports.
    pub fn new() -> Result<Self, Unavailable> {
        Self::with_library(driver::LIBRARY)
    }

    /// [`CudaBackend::new`] with the driver library at another name or path.
    pub fn with_library(library: impl AsRef<OsStr>) -> Result<Self, Unavailable> {
        let driver = driver::Driver::load_from(library).map_err(|e| match e {
            driver::LoadError::Init(d) if d.code == errors::NO_DEVICE => {
                Unavailable::NoDevice(d.to_string())
            }
            driver::LoadError::Init(d) => {
                Unavailable::Driver(format!("the NVIDIA driver did not initialise: {d}"))
            }
            other => Unavailable::Library(other.to_string()),
        })?;
        let query = |e: driver::DriverError| Unavailable::Driver(e.to_string());
        let version = driver.version().map_err(query)?;
        let count = driver.device_count().map_err(query)?;
        if count == 0 {
            return Err(Unavailable::NoDevice(format!(
                "driver {}, cuDeviceGetCount = 0",
                version_text(version)
            )));
        }
        let mut gpus = Vec::with_capacity(count as usize);
        for ordinal in 0..count {
            gpus.push(describe(&driver, ordinal).map_err(query)?);
        }
        for (i, g) in gpus.iter().enumerate() {
            tracing::info!(
                "GPU {i}: {}, compute capability {}.{}, {} MiB",
                g.props.name,
                g.props.major,
                g.props.minor,
                g.props.total_global_mem >> 20
            );
            match &g.dma_buf {
                Ok(()) => tracing::info!("GPU {i}: GPUDirect RDMA through dma-buf is available"),
                Err(why) => {
                    tracing::info!("GPU {i}: GPUDirect RDMA through dma-buf is unavailable: {why}")
                }
            }
        }
        Ok(Self {
            version,
            gpus,
            images: Arc::default(),
            printf: Arc::default(),
            blas_library: Arc::default(),
            blaslt_library: Arc::default(),
            fft_library: Arc::default(),
            rand_library: Arc::default(),
            solver_library: Arc::default(),
            sparse_library: Arc::default(),
        })
    }

    /// Opens cuBLAS from the first of `candidates` (names or paths) that
    /// loads, instead of `libcublas.so.13` or `libcublas.so.12`.
    pub fn with_blas_libraries(mut self, candidates: Vec<std::ffi::OsString>) -> Self {
        self.blas_library = Arc::new(blas::BlasLibrary::new(candidates));
        self
    }

    /// Opens cuBLASLt from the first of `candidates` (names or paths) that
    /// loads, instead of `libcublasLt.so.13` or `libcublasLt.so.12`.
    pub fn with_blaslt_libraries(mut self, candidates: Vec<std::ffi::OsString>) -> Self {
        self.blaslt_library = Arc::new(blaslt::BlasLtLibrary::new(candidates));
        self
    }

    /// Opens cuFFT from the first of `candidates` (names or paths) that
    /// loads, instead of `libcufft.so.12` or `libcufft.so.11`.
    pub fn with_fft_libraries(mut self, candidates: Vec<std::ffi::OsString>) -> Self {
        self.fft_library = Arc::new(fft::FftLibrary::new(candidates));
        self
    }

    /// Opens cuRAND from the first of `candidates` (names or paths) that
    /// loads, instead of `libcurand.so.10`.
    pub fn with_rand_libraries(mut self, candidates: Vec<std::ffi::OsString>) -> Self {
        self.rand_library = Arc::new(rand::RandLibrary::new(candidates));
        self
    }

    /// Opens cuSOLVER from the first of `candidates` (names or paths) that
    /// loads, instead of `libcusolver.so.12` or `libcusolver.so.11`.
    pub fn with_solver_libraries(mut self, candidates: Vec<std::ffi::OsString>) -> Self {
        self.solver_library = Arc::new(solver::SolverLibrary::new(candidates));
        self
    }

    /// Opens cuSPARSE from the first of `candidates` (names or paths) that
    /// loads, instead of `libcusparse.so.12` or `libcusparse.so.11`.
    pub fn with_sparse_libraries(mut self, candidates: Vec<std::ffi::OsString>) -> Self {
        self.sparse_library = Arc::new(sparse::SparseLibrary::new(candidates));
        self
    }

    /// One line for logs: the GPUs and the driver.
    pub fn summary(&self) -> String {
        let names: Vec<&str> = self.gpus.iter().map(|g| g.props.name.as_str()).collect();
        format!(
            "{} GPU(s) ({}), CUDA driver {}",
            self.gpus.len(),
            names.join(", "),
            version_text(self.version)
        )
    }

    fn gpu(&self, gpu: u32) -> Result<&Gpu, CudaError> {
        self.gpus.get(gpu as usize).ok_or(CudaError::INVALID_DEVICE)
    }

    /// Whether device memory of GPU `gpu` can be exported as a dma-buf for an
    /// RDMA adapter (GPUDirect RDMA), or why not.
    pub fn dma_buf_support(&self, gpu: u32) -> Result<(), String> {
        match self.gpus.get(gpu as usize) {
            Some(g) => g.dma_buf.clone(),
            None => Err(format!("there is no GPU {gpu}")),
        }
    }

    /// [`Backend::open`] with the concrete type, for callers that need more
    /// than the trait (the RDMA transports: [`CudaDeviceContext::export_dma_buf`]).
    pub fn open_cuda(&self, gpu: u32) -> Result<CudaDeviceContext, CudaError> {
        let g = self.gpu(gpu)?;
        let (ctx, staging) = fresh_context(&g.device).map_err(|e| errors::code(&e))?;
        let limit = |a: DeviceAttr| {
            g.attributes
                .binary_search_by_key(&a.0, |&(k, _)| k)
                .map_or(0, |i| g.attributes[i].1)
        };
        Ok(CudaDeviceContext {
            gpu,
            blas: blas::BlasHandles::default(),
            blas_library: self.blas_library.clone(),
            blaslt: blaslt::BlasLtHandles::default(),
            blaslt_library: self.blaslt_library.clone(),
            fft: fft::FftPlans::default(),
            fft_library: self.fft_library.clone(),
            rand: rand::RandGenerators::default(),
            rand_library: self.rand_library.clone(),
            solver: solver::SolverHandles::default(),
            solver_library: self.solver_library.clone(),
            sparse: sparse::SparseHandles::default(),
            sparse_library: self.sparse_library.clone(),
            functions: Vec::new(),
            modules: Vec::new(),
            staging: Some(staging),
            memory: AllocTable::default(),
            ctx: Ok(ctx),
            fault: None,
            device: g.device.clone(),
            limits: Limits {
                max_block: [
                    limit(DeviceAttr::MAX_BLOCK_DIM_X),
                    limit(DeviceAttr::MAX_BLOCK_DIM_Y),
                    limit(DeviceAttr::MAX_BLOCK_DIM_Z),
                ],
                max_grid: [
                    limit(DeviceAttr::MAX_GRID_DIM_X),
                    limit(DeviceAttr::MAX_GRID_DIM_Y),
                    limit(DeviceAttr::MAX_GRID_DIM_Z),
                ],
                max_threads: limit(DeviceAttr::MAX_THREADS_PER_BLOCK),
            },
            total_mem: g.props.total_global_mem,
            dma_buf: g.dma_buf.clone(),
            dma_buf_warned: false,
            images: self.images.clone(),
            printf: self.printf.clone(),
        })
    }
}

/// `13000` as `13.0`.
fn version_text(v: i32) -> String {
    format!("{}.{}", v / 1000, (v % 1000) / 10)
}

/// Properties, attributes and dma-buf support of device `ordinal`.
fn describe(driver: &driver::Driver, ordinal: u32) -> Result<Gpu, driver::DriverError> {
    let device = driver.device(ordinal)?;
    let id = props::Identity {
        name: device.name()?,
        uuid: device.uuid()?,
        total_mem: device.total_mem()?,
    };
    let attributes = props::attribute_table(&|a| device.attribute(a).ok());
    let props = props::device_props(&id, &attributes);
    let dma_buf = if !driver.has_dma_buf_export() {
        Err("the driver lacks cuMemGetHandleForAddressRange (it needs CUDA 11.7 or newer)".into())
    } else {
        let attr = CUdevice_attribute::CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED as i32;
        match device.attribute(attr) {
            Ok(1) => Ok(()),
            Ok(_) => Err("the device or its kernel module cannot export dma-bufs \
                 (CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED is 0: it needs the open GPU \
                 kernel modules and Linux 5.12 or newer)"
                .into()),
            Err(e) => Err(format!("CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED: {e}")),
        }
    };
    Ok(Gpu {
        device,
        props,
        attributes,
        dma_buf,
    })
}

/// A new context on `device` and its staging chunks.
fn fresh_context(
    device: &driver::Device,
) -> Result<(driver::Context, driver::Staging), driver::DriverError> {
    let ctx = device.create_context()?;
    let staging = ctx.staging(STAGING_CHUNK, STAGING_CHUNKS)?;
    Ok((ctx, staging))
}

impl Backend for CudaBackend {
    fn name(&self) -> &'static str {
        "cuda"
    }

    fn gpu_count(&self) -> u32 {
        self.gpus.len() as u32
    }

    fn driver_version(&self) -> i32 {
        self.version
    }

    fn device_info(&self, gpu: u32) -> Result<(DeviceProps, Vec<(i32, i32)>), CudaError> {
        let g = self.gpu(gpu)?;
        Ok((g.props.clone(), g.attributes.clone()))
    }

    // The driver chooses device addresses; placing them in the client's
    // window would take the virtual memory management API (a reserved range
    // per window), which this backend does not use yet.
    fn own_process(&self) {
        if self.printf.get().is_some() {
            return;
        }
        match output::StdoutCapture::install() {
            Ok(c) => {
                let _ = self.printf.set(c);
            }
            Err(e) => tracing::warn!(
                "device printf output will go to the server's standard output: capturing it \
                 failed: {e}"
            ),
        }
    }

    fn open(&self, gpu: u32, _window: u32) -> Result<Box<dyn DeviceContext>, CudaError> {
        Ok(Box::new(self.open_cuda(gpu)?))
    }
}

/// Launch limits of the device.
#[derive(Debug, Clone, Copy)]
struct Limits {
    max_block: [i32; 3],
    max_grid: [i32; 3],
    max_threads: i32,
}

impl Limits {
    /// `cudaErrorInvalidValue` for an empty or oversized grid or block, as
    /// the driver (`cuLaunchKernel`) and CUDA 13's runtime report it.
    fn check(&self, grid: [u32; 3], block: [u32; 3]) -> Result<(), Failure> {
        let bad = |what: String| Err(Failure::new(CudaError::INVALID_VALUE, what));
        for (i, axis) in ["x", "y", "z"].iter().enumerate() {
            if grid[i] == 0 || i64::from(grid[i]) > i64::from(self.max_grid[i]) {
                return bad(format!(
                    "grid {axis} dimension {} is outside 1..={}",
                    grid[i], self.max_grid[i]
                ));
            }
            if block[i] == 0 || i64::from(block[i]) > i64::from(self.max_block[i]) {
                return bad(format!(
                    "block {axis} dimension {} is outside 1..={}",
                    block[i], self.max_block[i]
                ));
            }
        }
        let threads = u64::from(block[0]) * u64::from(block[1]) * u64::from(block[2]);
        if threads > u64::try_from(self.max_threads).unwrap_or(0) {
            return bad(format!(
                "{threads} threads per block, more than the device's {}",
                self.max_threads
            ));
        }
        Ok(())
    }
}

/// A kernel the client looked up.
struct Kernel {
    module: u32,
    name: String,
    function: driver::Function,
    /// Bytes of its parameters, when the driver can tell (CUDA 12.4+).
    param_bytes: Option<usize>,
}

/// One client's context on one GPU. Dropping it destroys the context, which
/// frees everything the client held on the device.
pub struct CudaDeviceContext {
    gpu: u32,
    /// cuBLAS handles, destroyed before the context they live in.
    blas: blas::BlasHandles,
    blas_library: Arc<blas::BlasLibrary>,
    blaslt: blaslt::BlasLtHandles,
    blaslt_library: Arc<blaslt::BlasLtLibrary>,
    /// cuFFT plans, destroyed before the context they live in.
    fft: fft::FftPlans,
    fft_library: Arc<fft::FftLibrary>,
    /// cuRAND generators, destroyed before the context they live in.
    rand: rand::RandGenerators,
    rand_library: Arc<rand::RandLibrary>,
    /// cuSOLVER handles and their workspaces, destroyed before the context
    /// they live in.
    solver: solver::SolverHandles,
    solver_library: Arc<solver::SolverLibrary>,
    /// cuSPARSE handles and their buffers, destroyed before the context
    /// they live in.
    sparse: sparse::SparseHandles,
    sparse_library: Arc<sparse::SparseLibrary>,
    // Driver objects, released before the context they live in (each also
    // keeps its context alive, so the order is a courtesy, not a requirement).
    functions: Vec<Kernel>,
    modules: Vec<driver::Module>,
    staging: Option<driver::Staging>,
    memory: AllocTable,
    /// The context, or why there is none (its re-creation after a reset failed).
    ctx: Result<driver::Context, CudaError>,
    /// A sticky error the context suffered: every later operation fails with
    /// it, without touching the driver, until `reset`.
    fault: Option<Failure>,
    device: driver::Device,
    limits: Limits,
    total_mem: u64,
    dma_buf: DmaBufSupport,
    dma_buf_warned: bool,
    images: Arc<ImageCache>,
    printf: Arc<OnceLock<output::StdoutCapture>>,
}

impl std::fmt::Debug for CudaDeviceContext {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CudaDeviceContext")
            .field("gpu", &self.gpu)
            .field("modules", &self.modules.len())
            .field("functions", &self.functions.len())
            .field("fault", &self.fault)
            .finish_non_exhaustive()
    }
}

/// Device memory exported as a dma-buf for an RDMA adapter.
#[derive(Debug)]
pub struct DmaBuf {
    /// The dma-buf file descriptor.
    pub fd: OwnedFd,
    /// Device address of the start of the exported range (page aligned).
    pub base: u64,
    /// Bytes exported (whole pages).
    pub len: u64,
    /// Offset of the requested address within the exported range.
    pub offset: u64,
}

impl CudaDeviceContext {
    /// The live context, unless a fault poisoned it.
    fn live(&self) -> Result<&driver::Context, Failure> {
        if let Some(f) = &self.fault {
            return Err(f.clone());
        }
        self.ctx.as_ref().map_err(|&code| {
            Failure::new(
                code,
                "the CUDA context could not be re-created after cudaDeviceReset",
            )
        })
    }

    /// `e` as a reply; a sticky one poisons the context.
    fn note(&mut self, e: &driver::DriverError) -> Failure {
        let f = errors::failure(e);
        if f.code.is_sticky() {
            tracing::info!(gpu = self.gpu, "the client's context is unusable: {f}");
            self.fault = Some(f.clone());
        }
        f
    }

    fn kernel(&self, function: u32) -> Result<&Kernel, Failure> {
        self.functions
            .get(function as usize)
            .ok_or_else(|| Failure::from(CudaError::INVALID_DEVICE_FUNCTION))
    }

    /// What `cudaFuncGetAttributes` reports for `f`.
    fn attributes(&mut self, f: &driver::Function) -> Result<FuncAttributes, Failure> {
        let get = |a: FA| f.attribute(a as i32);
        let read = || -> Result<FuncAttributes, driver::DriverError> {
            let size = |v: i32| u64::try_from(v).unwrap_or(0);
            Ok(FuncAttributes {
                shared_size_bytes: size(get(FA::CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES)?),
                const_size_bytes: size(get(FA::CU_FUNC_ATTRIBUTE_CONST_SIZE_BYTES)?),
                local_size_bytes: size(get(FA::CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES)?),
                max_threads_per_block: get(FA::CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK)?,
                num_regs: get(FA::CU_FUNC_ATTRIBUTE_NUM_REGS)?,
                ptx_version: get(FA::CU_FUNC_ATTRIBUTE_PTX_VERSION)?,
                binary_version: get(FA::CU_FUNC_ATTRIBUTE_BINARY_VERSION)?,
                max_dynamic_shared_size_bytes: get(
                    FA::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                )?,
                preferred_shmem_carveout: get(
                    FA::CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT,
                )?,
            })
        };
        read().map_err(|e| self.note(&e))
    }

    /// Checks a device range and turns the error into a copy error.
    fn check_copy(&self, ptr: u64, len: u64) -> Result<(), CopyError> {
        self.memory.check(ptr, len).map_err(CopyError::Cuda)?;
        self.live().map_err(|f| CopyError::Cuda(f.code))?;
        Ok(())
    }

    /// Exports the pages holding `[ptr, ptr + len)` of this client's device
    /// memory as a dma-buf, for an RDMA adapter to register (GPUDirect RDMA).
    /// The range must lie in one of the client's allocations or module
    /// variables. Fails with `cudaErrorNotSupported`, logging why once per
    /// context, when the driver, device or kernel cannot export dma-bufs; the
    /// caller then falls back to staging through host memory.
    pub fn export_dma_buf(&mut self, ptr: u64, len: u64) -> Result<DmaBuf, Failure> {
        if let Err(why) = &self.dma_buf {
            if !self.dma_buf_warned {
                self.dma_buf_warned = true;
                tracing::warn!(
                    gpu = self.gpu,
                    "GPUDirect RDMA is unavailable, copies are staged through host memory: {why}"
                );
            }
            return Err(Failure::new(CudaError::NOT_SUPPORTED, why.clone()));
        }
        self.memory.check(ptr, len.max(1))?;
        let (region, size) = self
            .memory
            .region_of(ptr)
            .ok_or(Failure::from(CudaError::INVALID_VALUE))?;
        let page = driver::host_page_size();
        let base = ptr / page * page;
        let end = (ptr + len.max(1)).div_ceil(page) * page;
        // Whole pages of the same allocation: the driver maps device memory
        // in pages at least this large, so the rounding stays inside it.
        if base < region / page * page || end > (region + size).div_ceil(page) * page {
            return Err(CudaError::INVALID_VALUE.into());
        }
        let ctx = self.live()?.clone();
        match ctx.dma_buf_fd(base, end - base) {
            Ok(fd) => Ok(DmaBuf {
                fd,
                base,
                len: end - base,
                offset: ptr - base,
            }),
            Err(e) => {
                tracing::warn!(gpu = self.gpu, "dma-buf export of {len} bytes failed: {e}");
                Err(self.note(&e))
            }
        }
    }
}

/// Checks and wraps a shipped fat binary for the driver.
fn check_image(bytes: &[u8]) -> Result<driver::Image, Failure> {
    driver::Image::fatbin(bytes, MAX_DECOMPRESSED)
        .map_err(|e| Failure::new(CudaError::INVALID_KERNEL_IMAGE, format!("fat binary: {e}")))
}

/// Marks a memory file that carries a driver IPC handle.
const IPC_FILE_MAGIC: &[u8; 8] = b"rcudCIPC";

/// A memory file holding `handle` after [`IPC_FILE_MAGIC`], for the IPC
/// port to pass to the opening agent.
fn ipc_handle_file(handle: &driver::IpcMemHandle) -> std::io::Result<std::fs::File> {
    use nix::sys::memfd::{memfd_create, MFdFlags};
    use std::io::{Seek, Write};
    let fd = memfd_create("rcud-cuda-ipc", MFdFlags::MFD_CLOEXEC)?;
    let mut file = std::fs::File::from(fd);
    file.write_all(IPC_FILE_MAGIC)?;
    file.write_all(&handle.0)?;
    file.rewind()?;
    Ok(file)
}

/// The driver IPC handle in a file [`ipc_handle_file`] wrote, or `None` for
/// any other file.
fn read_ipc_handle_file(file: std::fs::File) -> Option<driver::IpcMemHandle> {
    use std::os::unix::fs::FileExt;
    let mut bytes = [0u8; 8 + 64];
    file.read_exact_at(&mut bytes, 0).ok()?;
    let (magic, handle) = bytes.split_at(8);
    if magic != IPC_FILE_MAGIC {
        return None;
    }
    let mut h = [0u8; 64];
    h.copy_from_slice(handle);
    Some(driver::IpcMemHandle(h))
}

/// A name from the wire as the C string the driver wants.
fn c_name(name: &str, code: CudaError) -> Result<CString, Failure> {
    CString::new(name).map_err(|_| Failure::new(code, "the name contains a NUL byte"))
}

impl DeviceContext for CudaDeviceContext {
    fn backend_name(&self) -> &'static str {
        "cuda"
    }

    fn math_call(&mut self, library: u8, call: &[u8]) -> Result<rcud_math::Reply, Failure> {
        use rcud_proto::math::Library;
        match Library::from_wire(library) {
            Some(Library::Blas) => {
                let call = rcud_proto::codec::from_slice(call).map_err(|e| {
                    Failure::new(CudaError::INVALID_VALUE, format!("a cuBLAS call: {e}"))
                })?;
                self.blas_call(call)
            }
            Some(Library::BlasLt) => {
                let call = rcud_proto::codec::from_slice(call).map_err(|e| {
                    Failure::new(CudaError::INVALID_VALUE, format!("a cuBLASLt call: {e}"))
                })?;
                self.blaslt_call(call)
            }
            Some(Library::Fft) => {
                let call = rcud_proto::codec::from_slice(call).map_err(|e| {
                    Failure::new(CudaError::INVALID_VALUE, format!("a cuFFT call: {e}"))
                })?;
                self.fft_call(call)
            }
            Some(Library::Rand) => {
                let call = rcud_proto::codec::from_slice(call).map_err(|e| {
                    Failure::new(CudaError::INVALID_VALUE, format!("a cuRAND call: {e}"))
                })?;
                self.rand_call(call)
            }
            Some(Library::Solver) => {
                let call = rcud_proto::codec::from_slice(call).map_err(|e| {
                    Failure::new(CudaError::INVALID_VALUE, format!("a cuSOLVER call: {e}"))
                })?;
                self.solver_call(call)
            }
            Some(Library::Sparse) => {
                let call = rcud_proto::codec::from_slice(call).map_err(|e| {
                    Failure::new(CudaError::INVALID_VALUE, format!("a cuSPARSE call: {e}"))
                })?;
                self.sparse_call(call)
            }
            other => Err(Failure::new(
                CudaError::NOT_SUPPORTED,
                format!(
                    "{} is not available on the cuda backend",
                    other.map_or("a math library", |l| l.name())
                ),
            )),
        }
    }

    fn malloc(&mut self, size: u64) -> Result<u64, CudaError> {
        if size == 0 {
            return Err(CudaError::INVALID_VALUE);
        }
        let ctx = self.live().map_err(|f| f.code)?.clone();
        match ctx.alloc(size) {
            Ok(ptr) => {
                self.memory.insert_malloc(ptr, size);
                Ok(ptr)
            }
            Err(e) => Err(self.note(&e).code),
        }
    }

    fn free(&mut self, ptr: u64) -> Result<(), CudaError> {
        let ctx = self.live().map_err(|f| f.code)?.clone();
        let size = self.memory.remove_malloc(ptr)?;
        if let Err(e) = ctx.free(ptr) {
            self.memory.insert_malloc(ptr, size);
            return Err(self.note(&e).code);
        }
        Ok(())
    }

    /// The file carries the driver's IPC handle of the allocation (the
    /// memory stays on the GPU): the opening agent, another process, maps
    /// it with `cuIpcOpenMemHandle`.
    fn ipc_export(&mut self, ptr: u64) -> Result<(std::fs::File, u64, u64), CudaError> {
        let ctx = self.live().map_err(|f| f.code)?.clone();
        let (base, len) = self.memory.region_of(ptr).ok_or(CudaError::INVALID_VALUE)?;
        if self.memory.check(base, len)? != memory::RegionKind::Malloc {
            return Err(CudaError::INVALID_VALUE);
        }
        let handle = ctx.ipc_mem_handle(base).map_err(|e| self.note(&e).code)?;
        let file = ipc_handle_file(&handle).map_err(|e| {
            tracing::warn!("cudaIpcGetMemHandle: a memory file for the handle: {e}");
            CudaError::OPERATING_SYSTEM
        })?;
        Ok((file, base, len))
    }

    fn ipc_import(&mut self, memory: std::fs::File, len: u64) -> Result<u64, CudaError> {
        let ctx = self.live().map_err(|f| f.code)?.clone();
        let handle = read_ipc_handle_file(memory).ok_or(CudaError::INVALID_VALUE)?;
        let ptr = ctx.ipc_open(handle).map_err(|e| self.note(&e).code)?;
        self.memory.insert_imported(ptr, len);
        Ok(ptr)
    }

    fn ipc_close(&mut self, ptr: u64) -> Result<(), CudaError> {
        let ctx = self.live().map_err(|f| f.code)?.clone();
        self.memory.remove_imported(ptr)?;
        ctx.ipc_close(ptr).map_err(|e| self.note(&e).code)
    }

    fn mem_info(&self) -> (u64, u64) {
        match self.live().map(|c| c.mem_info()) {
            Ok(Ok(info)) => info,
            _ => (0, self.total_mem),
        }
    }

    fn memory_held(&self) -> u64 {
        // Module variables count once their address was asked for; the code
        // and constant banks of modules are the driver's, as on a local GPU.
        self.memory.held_bytes()
    }

    fn synchronize(&mut self) -> Result<(), CudaError> {
        let ctx = self.live().map_err(|f| f.code)?.clone();
        ctx.synchronize().map_err(|e| self.note(&e).code)
    }

    fn reset(&mut self) {
        // Everything goes with the old context, which must be gone before a
        // new one takes device memory.
        self.blas.clear();
        self.blaslt.clear();
        self.fft.clear();
        self.rand.clear();
        self.solver.clear();
        self.sparse.clear();
        self.functions.clear();
        self.modules.clear();
        self.staging = None;
        self.memory.clear();
        self.fault = None;
        self.ctx = Err(CudaError::DEVICE_UNINITIALIZED);
        match fresh_context(&self.device) {
            Ok((ctx, staging)) => {
                self.ctx = Ok(ctx);
                self.staging = Some(staging);
            }
            Err(e) => {
                tracing::warn!(gpu = self.gpu, "re-creating the CUDA context failed: {e}");
                self.ctx = Err(errors::code(&e));
            }
        }
    }

    fn check(&self, ptr: u64, len: u64) -> Result<(), CudaError> {
        self.memory.check(ptr, len).map(|_| ())
    }

    fn copy_from_host(
        &mut self,
        dst: u64,
        len: u64,
        src: &mut dyn HostSource,
    ) -> Result<(), CopyError> {
        self.check_copy(dst, len)?;
        if len == 0 {
            return Ok(());
        }
        let Some(staging) = self.staging.as_mut() else {
            return Err(CopyError::Cuda(CudaError::DEVICE_UNINITIALIZED));
        };
        let result = staging.upload(dst, len, &mut |chunk: &mut [u8]| src.read_into(chunk));
        match result {
            Ok(()) => Ok(()),
            Err(driver::StagedError::Host(e)) => Err(CopyError::Transport(e)),
            Err(driver::StagedError::Driver(e)) => Err(CopyError::Cuda(self.note(&e).code)),
        }
    }

    fn copy_to_host(
        &mut self,
        src: u64,
        len: u64,
        sink: &mut dyn FnMut(&[u8]) -> Result<(), TransportError>,
    ) -> Result<(), CopyError> {
        self.check_copy(src, len)?;
        if len == 0 {
            return Ok(());
        }
        let Some(staging) = self.staging.as_mut() else {
            return Err(CopyError::Cuda(CudaError::DEVICE_UNINITIALIZED));
        };
        match staging.download(src, len, sink) {
            Ok(()) => Ok(()),
            Err(driver::StagedError::Host(e)) => Err(CopyError::Transport(e)),
            Err(driver::StagedError::Driver(e)) => Err(CopyError::Cuda(self.note(&e).code)),
        }
    }

    fn copy_device(&mut self, dst: u64, src: u64, len: u64) -> Result<(), CudaError> {
        self.memory.check(dst, len)?;
        self.memory.check(src, len)?;
        let ctx = self.live().map_err(|f| f.code)?.clone();
        if len == 0 || dst == src {
            return Ok(());
        }
        let overlap = dst.abs_diff(src) < len;
        let result = if overlap {
            // The driver's copy is undefined for overlapping ranges; the
            // emulated device (like memmove) allows them: bounce.
            ctx.alloc(len).and_then(|tmp| {
                let copied = ctx
                    .copy_dtod(tmp, src, len)
                    .and_then(|()| ctx.copy_dtod(dst, tmp, len));
                let freed = ctx.free(tmp);
                copied.and(freed)
            })
        } else {
            ctx.copy_dtod(dst, src, len)
        };
        result.map_err(|e| self.note(&e).code)
    }

    fn memset(&mut self, dst: u64, value: u8, len: u64) -> Result<(), CudaError> {
        self.memory.check(dst, len)?;
        let ctx = self.live().map_err(|f| f.code)?.clone();
        if len == 0 {
            return Ok(());
        }
        ctx.memset(dst, value, len).map_err(|e| self.note(&e).code)
    }

    fn load_module(
        &mut self,
        owner: &str,
        hash: [u8; 32],
        image: Option<Vec<u8>>,
    ) -> Result<(u32, u64), Failure> {
        let ctx = self.live()?.clone();
        let checked = self.images.get_or_parse(owner, hash, image, check_image)?;
        // A module per request, as on the emulated device: two registrations
        // of the same fat binary have variables of their own.
        let module = ctx.load_module(&checked).map_err(|e| self.note(&e))?;
        self.modules.push(module);
        Ok(((self.modules.len() - 1) as u32, checked.len() as u64))
    }

    fn get_function(&mut self, module: u32, name: &str) -> Result<(u32, FuncAttributes), Failure> {
        self.live()?;
        // One id per kernel, so attributes set through one lookup hold for all.
        if let Some(i) = self
            .functions
            .iter()
            .position(|k| k.module == module && k.name == name)
        {
            let f = self.functions[i].function.clone();
            return Ok((i as u32, self.attributes(&f)?));
        }
        let m = self
            .modules
            .get(module as usize)
            .ok_or_else(|| Failure::new(CudaError::INVALID_RESOURCE_HANDLE, "unknown module"))?;
        let cname = c_name(name, CudaError::INVALID_DEVICE_FUNCTION)?;
        let function = match m.function(&cname) {
            Ok(f) => f,
            Err(e) => {
                let f = errors::lookup_failure(&e, errors::Lookup::Kernel, name);
                if f.code.is_sticky() {
                    self.fault = Some(f.clone());
                }
                return Err(f);
            }
        };
        let attributes = self.attributes(&function)?;
        let param_bytes = match function.param_bytes() {
            Some(Ok(n)) => Some(n),
            Some(Err(e)) => {
                tracing::debug!("parameter layout of {name}: {e}");
                None
            }
            None => None,
        };
        self.functions.push(Kernel {
            module,
            name: name.to_string(),
            function,
            param_bytes,
        });
        Ok(((self.functions.len() - 1) as u32, attributes))
    }

    fn get_global(&mut self, module: u32, name: &str) -> Result<(u64, u64), Failure> {
        self.live()?;
        let m = self
            .modules
            .get(module as usize)
            .ok_or_else(|| Failure::new(CudaError::INVALID_RESOURCE_HANDLE, "unknown module"))?;
        let cname = c_name(name, CudaError::INVALID_SYMBOL)?;
        match m.global(&cname) {
            Ok((ptr, size)) => {
                // Copies to and from the variable are checked like any other.
                self.memory.insert_global(ptr, size);
                Ok((ptr, size))
            }
            Err(e) => {
                let f = errors::lookup_failure(&e, errors::Lookup::Variable, name);
                if f.code.is_sticky() {
                    self.fault = Some(f.clone());
                }
                Err(f)
            }
        }
    }

    fn set_function_attribute(
        &mut self,
        function: u32,
        attr: i32,
        value: i32,
    ) -> Result<(), Failure> {
        self.live()?;
        let f = self.kernel(function)?.function.clone();
        match attr {
            ATTR_MAX_DYNAMIC_SHARED if value < 0 => Err(CudaError::INVALID_VALUE.into()),
            // The runtime's and the driver's attribute numbers agree for these.
            ATTR_MAX_DYNAMIC_SHARED | ATTR_CARVEOUT => {
                f.set_attribute(attr, value).map_err(|e| self.note(&e))
            }
            // Cluster attributes and the rest: rcud refuses cluster launches.
            _ => Err(CudaError::INVALID_VALUE.into()),
        }
    }

    fn set_limit(&mut self, limit: i32, value: u64) -> Result<u64, Failure> {
        let ctx = self.live()?.clone();
        // The runtime's and the driver's limit numbers agree.
        ctx.set_limit(limit, value).map_err(|e| self.note(&e))
    }

    fn launch(&mut self, launch: &KernelLaunch<'_>) -> Result<Vec<u8>, Failure> {
        let ctx = self.live()?.clone();
        self.limits.check(launch.grid, launch.block)?;
        let k = self.kernel(launch.function)?;
        let (function, name) = (k.function.clone(), k.name.clone());
        if launch.params.len() > driver::MAX_PARAM_BYTES {
            return Err(Failure::new(
                CudaError::INVALID_VALUE,
                format!("{} bytes of kernel parameters", launch.params.len()),
            ));
        }
        if let Some(need) = k.param_bytes {
            if launch.params.len() < need {
                return Err(Failure::new(
                    CudaError::INVALID_VALUE,
                    format!(
                        "the launch of {name} carries {} bytes of parameters, the kernel takes {need}",
                        launch.params.len()
                    ),
                ));
            }
        }
        let max_dynamic = function
            .attribute(FA::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES as i32)
            .map_err(|e| self.note(&e))?;
        if i64::from(launch.shared_mem) > i64::from(max_dynamic) {
            return Err(Failure::new(
                CudaError::INVALID_VALUE,
                format!(
                    "kernel {name} asks for {} bytes of dynamic shared memory, more than its limit of {max_dynamic} (raise it with cudaFuncSetAttribute)",
                    launch.shared_mem
                ),
            ));
        }
        ctx.launch(
            &function,
            launch.grid,
            launch.block,
            launch.shared_mem,
            launch.params,
            launch.cooperative,
        )
        .map_err(|e| self.note(&e))?;
        // The launch has completed: the driver has written the kernel's
        // printf output. Without a capture (agents as threads) it went to
        // the server's standard output.
        match self.printf.get().map(output::StdoutCapture::take) {
            Some(Ok(text)) => Ok(text),
            Some(Err(e)) => {
                tracing::warn!("device printf output is lost: reading it back failed: {e}");
                Ok(Vec::new())
            }
            None => Ok(Vec::new()),
        }
    }
}

#[cfg(test)]
mod tests;
