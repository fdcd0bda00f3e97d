//! The emulated-device backend.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use rcud_emu::kernel::{self, KernelError, LaunchConfig, Limits};
use rcud_emu::ledger::{Ledger, SharedBudget};
use rcud_emu::ptx;
use rcud_emu::{DeviceMemory, EmuGpu};
use rcud_fatbin::{ArchVariant, Entry, EntryKind, FatBinary};
use rcud_proto::ops::{Failure, FuncAttributes};
use rcud_proto::{CudaError, DeviceProps};
use rcud_transport::TransportError;

use super::image_cache;
use super::{Backend, CopyError, DeviceContext, EmuSettings, HostSource, KernelLaunch};

/// The architecture whose PTX the interpreter runs (compute capability 8.0).
const PTX_ARCH: u32 = 80;
/// Shared memory a block may use without opting in, and with.
const DEFAULT_SHARED: u32 = 48 << 10;
const OPTIN_SHARED: u32 = 163 << 10;

/// Most bytes a client's fat binary may decompress to (a bound on hostile images).
const MAX_DECOMPRESSED: u64 = 1 << 30;

/// Parsed device code, shared by clients that load identical fat binaries.
type ImageCache = image_cache::ImageCache<Image>;

/// The PTX of a fat binary that the interpreter runs.
#[derive(Debug)]
struct Image {
    code: ptx::Module,
    /// The architecture it was compiled for (`compute_XY`): what the
    /// functions report as their PTX version, which libraries such as CUB
    /// use on the host to pick the tuning their device code was built with.
    ptx_arch: u32,
}

impl image_cache::Cached for Image {
    fn cost(&self) -> u64 {
        self.code.approx_bytes()
    }
}

/// GPUs emulated in host memory.
#[derive(Debug)]
pub struct EmuBackend {
    gpus: Vec<Arc<EmuGpu>>,
    images: Arc<ImageCache>,
    kernel_timeout: Duration,
    engine: rcud_emu::Engine,
}

impl EmuBackend {
    /// `settings.gpus` emulated GPUs of `settings.memory` bytes each.
    pub fn new(settings: &EmuSettings) -> Self {
        Self {
            gpus: (0..settings.gpus)
                .map(|i| EmuGpu::new(i, settings.memory))
                .collect(),
            images: Arc::default(),
            kernel_timeout: settings.kernel_timeout,
            engine: settings.engine,
        }
    }

    /// [`EmuBackend::new`] for an agent process whose devices count their
    /// memory in the server's `ledger`, in `slot`.
    pub fn with_ledger(
        settings: &EmuSettings,
        ledger: Arc<Ledger>,
        slot: u32,
    ) -> std::io::Result<Self> {
        let gpus = (0..settings.gpus)
            .map(|i| {
                let budget = SharedBudget::new(ledger.clone(), slot, i)?;
                Ok(EmuGpu::with_shared_budget(i, settings.memory, budget))
            })
            .collect::<std::io::Result<_>>()?;
        Ok(Self {
            gpus,
            ..Self::new(&EmuSettings {
                gpus: 0,
                ..settings.clone()
            })
        })
    }

    fn gpu(&self, gpu: u32) -> Result<&Arc<EmuGpu>, CudaError> {
        self.gpus.get(gpu as usize).ok_or(CudaError::INVALID_DEVICE)
    }
}

impl Backend for EmuBackend {
    fn name(&self) -> &'static str {
        "emu"
    }

    fn gpu_count(&self) -> u32 {
        self.gpus.len() as u32
    }

    fn driver_version(&self) -> i32 {
        rcud_emu::DRIVER_VERSION
    }

    fn device_info(&self, gpu: u32) -> Result<(DeviceProps, Vec<(i32, i32)>), CudaError> {
        let g = self.gpu(gpu)?;
        Ok((g.props().clone(), g.attributes()))
    }

    fn open(&self, gpu: u32, window: u32) -> Result<Box<dyn DeviceContext>, CudaError> {
        let g = self.gpu(gpu)?.clone();
        Ok(Box::new(EmuContext {
            memory: DeviceMemory::new(g, window),
            images: self.images.clone(),
            modules: Vec::new(),
            functions: Vec::new(),
            libraries: rcud_math::Libraries::default(),
            limits: Limits {
                timeout: self.kernel_timeout,
                threads: std::thread::available_parallelism().map_or(1, |n| n.get()),
                max_dynamic_shared: DEFAULT_SHARED,
                heap_bytes: rcud_emu::kernel::DEVICE_HEAP_BYTES,
                engine: self.engine,
            },
        }))
    }
}

/// One client's view of an emulated GPU.
struct EmuContext {
    memory: DeviceMemory,
    images: Arc<ImageCache>,
    modules: Vec<LoadedModule>,
    functions: Vec<Function>,
    /// Handles, plans and generators of the math libraries.
    libraries: rcud_math::Libraries,
    limits: Limits,
}

/// The client's device memory as the math libraries see it, and the time
/// the call may take: a kernel's.
struct MathMemory<'a> {
    memory: &'a mut DeviceMemory,
    /// `None`: no limit (a timeout past what an `Instant` holds).
    deadline: Option<std::time::Instant>,
}

impl rcud_math::DeviceMemory for MathMemory<'_> {
    fn read(&self, ptr: u64, len: u64) -> Result<&[u8], rcud_math::Fault> {
        self.memory
            .slice(ptr, len)
            .map_err(|_| rcud_math::Fault { ptr, len })
    }

    fn write(&mut self, ptr: u64, data: &[u8]) -> Result<(), rcud_math::Fault> {
        let len = data.len() as u64;
        self.memory
            .slice_mut(ptr, len)
            .map(|dst| dst.copy_from_slice(data))
            .map_err(|_| rcud_math::Fault { ptr, len })
    }

    fn deadline(&self) -> Option<std::time::Instant> {
        self.deadline
    }
}

/// A module loaded into one client's context: its code and where its
/// module-scope variables live in the client's device memory.
struct LoadedModule {
    image: Arc<Image>,
    symbols: HashMap<String, u64>,
    sizes: HashMap<String, u64>,
}

/// A kernel looked up by the client.
struct Function {
    module: usize,
    name: String,
    attributes: FuncAttributes,
}

/// Parses a fat binary's PTX for the interpreter.
fn parse_image(image: &[u8]) -> Result<Image, Failure> {
    let fatbin = FatBinary::parse_with_limit(image, MAX_DECOMPRESSED)
        .map_err(|e| Failure::new(CudaError::INVALID_KERNEL_IMAGE, format!("fat binary: {e}")))?;
    let entry = fatbin
        .entries
        .iter()
        .filter(|e| e.kind == EntryKind::Ptx && e.compatible_with(PTX_ARCH))
        .filter(|e| e.ptx().is_some())
        // `max_by_key` keeps the last of equals: reversed, the first.
        .rev()
        .max_by_key(|e| (e.arch, e.variant))
        .or_else(|| ptx_standing_in_for_sass(&fatbin))
        .ok_or_else(|| no_image(&fatbin))?;
    let text = entry.ptx().unwrap_or_default();
    // Broken PTX is the program's fault (CUDA_ERROR_INVALID_PTX); PTX the
    // interpreter lacks is rcud's (CUDA_ERROR_NOT_SUPPORTED).
    let code = ptx::Module::parse(text).map_err(|e| {
        let code = match e.kind() {
            ptx::PtxErrorKind::Unsupported => CudaError::NOT_SUPPORTED,
            ptx::PtxErrorKind::Syntax | ptx::PtxErrorKind::Semantic => CudaError::INVALID_PTX,
        };
        Failure::new(code, e.to_string())
    })?;
    Ok(Image {
        code,
        ptx_arch: entry.arch,
    })
}

/// Why an image has nothing the interpreter runs.
fn no_image(fatbin: &FatBinary) -> Failure {
    let (major, minor) = (PTX_ARCH / 10, PTX_ARCH % 10);
    let why = if fatbin.entries.iter().any(|e| e.kind == EntryKind::Ptx) {
        format!("the program carries no PTX for compute capability {major}.{minor} or lower (build with -arch=sm_80 or a compute_XY target <= 80)")
    } else {
        // NVRTC and nvcc make such images from `-arch=sm_XY` / `code=sm_XY`.
        format!("the image holds SASS only, which the emulated GPU cannot run: it needs PTX for compute capability {major}.{minor} or lower (nvcc: -arch=sm_80 or code=compute_80; NVRTC: -arch=compute_80; CuPy: CUPY_COMPILE_WITH_PTX=1)")
    };
    Failure::new(CudaError::NO_KERNEL_IMAGE_FOR_DEVICE, why)
}

/// An image with SASS that an sm_80 GPU runs but only newer PTX (libraries
/// shipped as `sm_75,sm_80,...,compute_120`, CuPy's CUB and Thrust kernels
/// among them) loads on a real device of this one's kind, which runs the
/// SASS. The interpreter cannot run SASS; the same source's PTX for the
/// oldest newer architecture stands in for it (architecture-specific PTX,
/// `compute_90a`, only when there is nothing else). A kernel using
/// instructions the interpreter lacks fails when it is looked up, with
/// `CUDA_ERROR_NOT_SUPPORTED`.
fn ptx_standing_in_for_sass(fatbin: &FatBinary) -> Option<&Entry> {
    let runs_here = fatbin
        .entries
        .iter()
        .any(|e| e.kind == EntryKind::Cubin && e.compatible_with(PTX_ARCH));
    if !runs_here {
        return None;
    }
    fatbin
        .entries
        .iter()
        .filter(|e| e.kind == EntryKind::Ptx && e.ptx().is_some())
        .min_by_key(|e| (e.variant == ArchVariant::ArchSpecific, e.arch, e.variant))
}

fn kernel_failure(e: KernelError) -> Failure {
    let code = match &e {
        KernelError::IllegalAddress(_) => CudaError::ILLEGAL_ADDRESS,
        KernelError::MisalignedAddress(_) => CudaError::MISALIGNED_ADDRESS,
        KernelError::InvalidConfiguration(_) => CudaError::INVALID_VALUE,
        KernelError::InvalidValue(_) => CudaError::INVALID_VALUE,
        KernelError::Timeout(_) => CudaError::LAUNCH_TIMEOUT,
        KernelError::Trap(_) => CudaError::LAUNCH_FAILURE,
        KernelError::Assert(_) => CudaError::ASSERT,
        KernelError::StackOverflow(_) => CudaError::HARDWARE_STACK_ERROR,
        KernelError::Unsupported(_) => CudaError::NOT_SUPPORTED,
        KernelError::CooperativeTooLarge(_) => CudaError::COOPERATIVE_LAUNCH_TOO_LARGE,
        KernelError::Internal(_) => CudaError::UNKNOWN,
    };
    Failure::new(code, e.to_string())
}

impl EmuContext {
    /// Frees the variables of a module that failed to load.
    fn release(&mut self, symbols: &HashMap<String, u64>) {
        for &addr in symbols.values() {
            let _ = self.memory.free_internal(addr);
        }
    }

    fn module(&self, module: u32) -> Result<&LoadedModule, Failure> {
        self.modules
            .get(module as usize)
            .ok_or_else(|| Failure::new(CudaError::INVALID_RESOURCE_HANDLE, "unknown module"))
    }
}

impl DeviceContext for EmuContext {
    fn backend_name(&self) -> &'static str {
        "emu"
    }

    fn math_call(&mut self, library: u8, call: &[u8]) -> Result<rcud_math::Reply, Failure> {
        let mut memory = MathMemory {
            memory: &mut self.memory,
            deadline: std::time::Instant::now().checked_add(self.limits.timeout),
        };
        self.libraries
            .call(&mut memory, library, call)
            .map_err(|e| {
                let code = match e {
                    rcud_math::MathError::Fault(_) => CudaError::ILLEGAL_ADDRESS,
                    rcud_math::MathError::Timeout => CudaError::LAUNCH_TIMEOUT,
                    _ => CudaError::INVALID_VALUE,
                };
                Failure::new(code, e.to_string())
            })
    }

    fn malloc(&mut self, size: u64) -> Result<u64, CudaError> {
        self.memory.malloc(size)
    }

    fn free(&mut self, ptr: u64) -> Result<(), CudaError> {
        self.memory.free(ptr)
    }

    fn ipc_export(&mut self, ptr: u64) -> Result<(std::fs::File, u64, u64), CudaError> {
        self.memory.export(ptr)
    }

    fn ipc_import(&mut self, memory: std::fs::File, len: u64) -> Result<u64, CudaError> {
        self.memory.import(memory, len)
    }

    fn vmm(&mut self) -> Option<&mut dyn super::VirtualMemory> {
        Some(&mut self.memory)
    }

    fn load_value(&mut self, addr: u64, size: u32) -> Result<u64, CudaError> {
        use std::sync::atomic::Ordering::Acquire;
        let view = self.memory.launch_view();
        let region = view.region(addr).ok_or(CudaError::INVALID_VALUE)?;
        let value = match size {
            4 => region.atomic_u32(addr).map(|a| u64::from(a.load(Acquire))),
            8 => region.atomic_u64(addr).map(|a| a.load(Acquire)),
            _ => None,
        };
        value.ok_or(CudaError::INVALID_VALUE)
    }

    fn ipc_close(&mut self, ptr: u64) -> Result<(), CudaError> {
        self.memory.close_import(ptr)
    }

    fn mem_info(&self) -> (u64, u64) {
        let gpu = self.memory.gpu();
        (gpu.free_memory(), gpu.total_memory())
    }

    fn memory_held(&self) -> u64 {
        self.memory.held()
    }

    fn allocation_charge(&self, size: u64) -> u64 {
        rcud_emu::memory::allocation_charge(size).unwrap_or(u64::MAX)
    }

    fn synchronize(&mut self) -> Result<(), CudaError> {
        // Every operation of the emulated device completes before its reply.
        Ok(())
    }

    fn reset(&mut self) {
        self.libraries = rcud_math::Libraries::default();
        self.modules.clear();
        self.functions.clear();
        self.memory.reset();
    }

    fn check(&self, ptr: u64, len: u64) -> Result<(), CudaError> {
        self.memory.check(ptr, len)
    }

    fn copy_from_host(
        &mut self,
        dst: u64,
        len: u64,
        src: &mut dyn HostSource,
    ) -> Result<(), CopyError> {
        // The payload is received straight into device memory: no staging
        // copy (one part per mapping where the range crosses mappings).
        self.memory.for_each_piece_mut(dst, len, |target| {
            src.read_into(target).map_err(CopyError::from)
        })
    }

    fn copy_to_host(
        &mut self,
        src: u64,
        len: u64,
        sink: &mut dyn FnMut(&[u8]) -> Result<(), TransportError>,
    ) -> Result<(), CopyError> {
        self.memory
            .for_each_piece(src, len, |bytes| sink(bytes).map_err(CopyError::from))
    }

    fn copy_device(&mut self, dst: u64, src: u64, len: u64) -> Result<(), CudaError> {
        self.memory.copy(dst, src, len)
    }

    fn memset(&mut self, dst: u64, value: u8, len: u64) -> Result<(), CudaError> {
        self.memory.fill(dst, value, len)
    }

    fn load_module(
        &mut self,
        owner: &str,
        hash: [u8; 32],
        image: Option<Vec<u8>>,
    ) -> Result<(u32, u64), Failure> {
        let image = self.images.get_or_parse(owner, hash, image, parse_image)?;
        let cost = image_cache::Cached::cost(image.as_ref());
        let mut symbols = HashMap::new();
        let mut sizes = HashMap::new();
        // Every variable gets its address first: initialisers may hold the
        // addresses of others (pointer tables).
        for var in image.code.globals() {
            match self.memory.malloc_internal(var.size.max(1)) {
                Ok(addr) => {
                    symbols.insert(var.name.clone(), addr);
                    sizes.insert(var.name.clone(), var.size);
                }
                Err(e) => {
                    self.release(&symbols);
                    return Err(e.into());
                }
            }
        }
        for var in image.code.globals() {
            let addr = symbols[&var.name];
            // Variables hold device addresses; vtables also functions'.
            let init = var.init_with(|name| {
                symbols
                    .get(name)
                    .copied()
                    .or_else(|| image.code.function_address(name))
            });
            let written = match init {
                Some(bytes) => self
                    .memory
                    .slice_mut(addr, bytes.len() as u64)
                    .map(|dst| dst.copy_from_slice(&bytes))
                    .map_err(Failure::from),
                None => Err(Failure::new(
                    CudaError::NOT_SUPPORTED,
                    format!("the initialiser of device variable {} refers to something that is neither a device variable nor a function of the module", var.name),
                )),
            };
            if let Err(f) = written {
                self.release(&symbols);
                return Err(f);
            }
        }
        self.modules.push(LoadedModule {
            image,
            symbols,
            sizes,
        });
        Ok(((self.modules.len() - 1) as u32, cost))
    }

    fn get_function(&mut self, module: u32, name: &str) -> Result<(u32, FuncAttributes), Failure> {
        // One function per kernel, so attributes set through one lookup hold for all.
        if let Some(i) = self
            .functions
            .iter()
            .position(|f| f.module == module as usize && f.name == name)
        {
            return Ok((i as u32, self.functions[i].attributes.clone()));
        }
        let m = self.module(module)?;
        // A kernel that reaches PTX the interpreter lacks fails at launch,
        // naming the instruction, rather than later at a synchronizing call.
        if let Some(e) = m.image.code.kernel_error(name) {
            return Err(Failure::new(CudaError::NOT_SUPPORTED, e.to_string()));
        }
        let info = m.image.code.kernel_info(name).ok_or_else(|| {
            // libcudadevrt's own kernels (SASS only) are looked up by NVIDIA's
            // static runtime with every program that links it, and never
            // launched by the program: not worth a message.
            if name.contains("_cuda_device_runtime_") {
                return Failure::from(CudaError::INVALID_DEVICE_FUNCTION);
            }
            Failure::new(
                CudaError::INVALID_DEVICE_FUNCTION,
                format!("kernel {name} is not in the module's PTX"),
            )
        })?;
        let static_shared = info.static_shared as u64;
        let attributes = FuncAttributes {
            shared_size_bytes: static_shared,
            const_size_bytes: u64::from(info.const_bytes),
            local_size_bytes: info.local_bytes as u64,
            max_threads_per_block: info.max_threads as i32,
            num_regs: 32,
            ptx_version: m.image.ptx_arch as i32,
            binary_version: PTX_ARCH as i32,
            max_dynamic_shared_size_bytes: (DEFAULT_SHARED as u64).saturating_sub(static_shared)
                as i32,
            preferred_shmem_carveout: -1,
        };
        self.functions.push(Function {
            module: module as usize,
            name: name.to_string(),
            attributes: attributes.clone(),
        });
        Ok(((self.functions.len() - 1) as u32, attributes))
    }

    fn get_global(&mut self, module: u32, name: &str) -> Result<(u64, u64), Failure> {
        let m = self.module(module)?;
        match (m.symbols.get(name), m.sizes.get(name)) {
            (Some(&addr), Some(&size)) => Ok((addr, size)),
            _ => Err(Failure::new(
                CudaError::INVALID_SYMBOL,
                format!("no device variable {name} in the module"),
            )),
        }
    }

    fn set_function_attribute(
        &mut self,
        function: u32,
        attr: i32,
        value: i32,
    ) -> Result<(), Failure> {
        let f = self
            .functions
            .get_mut(function as usize)
            .ok_or(Failure::from(CudaError::INVALID_DEVICE_FUNCTION))?;
        match attr {
            rcud_proto::ops::ATTR_MAX_DYNAMIC_SHARED => {
                let total = f.attributes.shared_size_bytes
                    + u64::try_from(value).map_err(|_| CudaError::INVALID_VALUE)?;
                if total > OPTIN_SHARED as u64 {
                    return Err(CudaError::INVALID_VALUE.into());
                }
                f.attributes.max_dynamic_shared_size_bytes = value;
            }
            // A hint.
            rcud_proto::ops::ATTR_CARVEOUT if (-1..=100).contains(&value) => {
                f.attributes.preferred_shmem_carveout = value
            }
            _ => return Err(CudaError::INVALID_VALUE.into()),
        }
        Ok(())
    }

    fn set_limit(&mut self, limit: i32, value: u64) -> Result<u64, Failure> {
        match limit {
            rcud_proto::ops::LIMIT_MALLOC_HEAP_SIZE => {
                if self.memory.has_heap() {
                    return Err(Failure::new(
                        CudaError::INVALID_VALUE,
                        "cudaLimitMallocHeapSize cannot change after a kernel that calls malloc has run",
                    ));
                }
                // Reserved lazily at the first such launch, against the
                // device's memory like any allocation.
                self.limits.heap_bytes = value;
                Ok(value)
            }
            // Threads' stacks live in the interpreter's frames, and printf
            // output in a buffer that grows: both take any size.
            rcud_proto::ops::LIMIT_STACK_SIZE | rcud_proto::ops::LIMIT_PRINTF_FIFO_SIZE => {
                Ok(value)
            }
            _ => Err(CudaError::UNSUPPORTED_LIMIT.into()),
        }
    }

    fn launch(&mut self, launch: &KernelLaunch<'_>) -> Result<Vec<u8>, Failure> {
        let Self {
            memory,
            modules,
            functions,
            limits,
            ..
        } = self;
        let f = functions
            .get(launch.function as usize)
            .ok_or(Failure::from(CudaError::INVALID_DEVICE_FUNCTION))?;
        let module = modules
            .get(f.module)
            .ok_or(Failure::from(CudaError::INVALID_DEVICE_FUNCTION))?;
        let max_dynamic_shared = f.attributes.max_dynamic_shared_size_bytes.max(0) as u32;
        if launch.shared_mem > max_dynamic_shared {
            return Err(Failure::new(
                CudaError::INVALID_VALUE,
                format!(
                    "kernel {} asks for {} bytes of dynamic shared memory, more than its limit of {max_dynamic_shared} (raise it with cudaFuncSetAttribute)",
                    f.name, launch.shared_mem
                ),
            ));
        }
        if launch.cooperative {
            let props = memory.gpu().props();
            let threads = launch.block.iter().map(|&b| u64::from(b)).product::<u64>();
            let blocks = launch.grid.iter().map(|&g| u64::from(g)).product::<u64>();
            let most = f.attributes.max_cooperative_blocks(
                props,
                u32::try_from(threads).unwrap_or(u32::MAX),
                u64::from(launch.shared_mem),
            );
            if blocks > most {
                return Err(Failure::new(
                    CudaError::COOPERATIVE_LAUNCH_TOO_LARGE,
                    format!(
                        "a cooperative launch of {} with {blocks} blocks of {threads} threads: at most {most} can be resident at once",
                        f.name
                    ),
                ));
            }
        }
        let config = LaunchConfig {
            grid: launch.grid,
            block: launch.block,
            dynamic_shared: launch.shared_mem,
            cooperative: launch.cooperative,
        };
        let limits = Limits {
            max_dynamic_shared,
            ..limits.clone()
        };
        let out = kernel::launch(
            &module.image.code,
            &f.name,
            &config,
            launch.params,
            &module.symbols,
            memory,
            &limits,
        )
        .map_err(kernel_failure)?;
        Ok(out.printf.into_bytes())
    }
}

impl super::VirtualMemory for DeviceMemory {
    fn create(&mut self, size: u64) -> Result<u64, CudaError> {
        self.create_physical(size)
    }
    fn release(&mut self, handle: u64) -> Result<(), CudaError> {
        self.release_physical(handle)
    }
    fn export(&mut self, handle: u64) -> Result<(std::fs::File, u64), CudaError> {
        self.export_physical(handle)
    }
    fn import(&mut self, memory: std::fs::File, len: u64) -> Result<u64, CudaError> {
        self.import_physical(memory, len)
    }
    fn reserve(&mut self, size: u64, alignment: u64) -> Result<u64, CudaError> {
        self.reserve_address(size, alignment)
    }
    fn free_address(&mut self, ptr: u64, size: u64) -> Result<(), CudaError> {
        DeviceMemory::free_address(self, ptr, size)
    }
    fn map(&mut self, ptr: u64, size: u64, offset: u64, handle: u64) -> Result<(), CudaError> {
        DeviceMemory::map(self, ptr, size, offset, handle)
    }
    fn unmap(&mut self, ptr: u64, size: u64) -> Result<(), CudaError> {
        DeviceMemory::unmap(self, ptr, size)
    }
    fn set_access(&mut self, ptr: u64, size: u64, accessible: bool) -> Result<(), CudaError> {
        DeviceMemory::set_access(self, ptr, size, accessible)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(kind: EntryKind, arch: u32, variant: ArchVariant) -> Entry {
        let payload = match kind {
            EntryKind::Ptx => format!(".version 9.0\n.target sm_{arch}\n").into_bytes(),
            EntryKind::Cubin => b"\x7fELF".to_vec(),
        };
        Entry {
            kind,
            arch,
            payload,
            variant,
            version: (9, 0),
            flags: 0,
            compression: rcud_fatbin::Compression::None,
            offset: 0,
            concatenated: false,
        }
    }

    fn fatbin(entries: &[(EntryKind, u32, ArchVariant)]) -> FatBinary {
        FatBinary {
            entries: entries.iter().map(|&(k, a, v)| entry(k, a, v)).collect(),
            skipped: Vec::new(),
        }
    }

    use ArchVariant::{ArchSpecific, Generic};
    use EntryKind::{Cubin, Ptx};

    #[test]
    fn newer_ptx_stands_in_for_sass_this_gpu_runs() {
        // CuPy's CUB kernels: SASS for sm_75 to sm_120, PTX for compute_120.
        let cub = fatbin(&[
            (Cubin, 75, Generic),
            (Cubin, 80, Generic),
            (Cubin, 90, Generic),
            (Ptx, 90, ArchSpecific),
            (Ptx, 120, Generic),
            (Ptx, 100, Generic),
        ]);
        assert_eq!(ptx_standing_in_for_sass(&cub).map(|e| e.arch), Some(100));
        let only_specific = fatbin(&[(Cubin, 80, Generic), (Ptx, 90, ArchSpecific)]);
        assert_eq!(
            ptx_standing_in_for_sass(&only_specific).map(|e| e.arch),
            Some(90)
        );
        // sm_86 SASS does not run on an 8.0 device: nothing to stand in for.
        let newer_sass = fatbin(&[(Cubin, 86, Generic), (Ptx, 120, Generic)]);
        assert!(ptx_standing_in_for_sass(&newer_sass).is_none());
        let no_sass = fatbin(&[(Ptx, 120, Generic)]);
        assert!(ptx_standing_in_for_sass(&no_sass).is_none());
    }

    #[test]
    fn images_without_usable_code_say_why() {
        let sass_only = no_image(&fatbin(&[(Cubin, 80, Generic)]));
        assert_eq!(sass_only.code, CudaError::NO_KERNEL_IMAGE_FOR_DEVICE);
        assert!(
            sass_only.message.contains("SASS only"),
            "{}",
            sass_only.message
        );
        let newer_ptx = no_image(&fatbin(&[(Ptx, 120, Generic)]));
        assert!(newer_ptx
            .message
            .contains("no PTX for compute capability 8.0"));
    }
}
