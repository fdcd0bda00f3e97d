//! The emulated-device backend.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;
use rcud_emu::kernel::{self, KernelError, LaunchConfig, Limits};
use rcud_emu::ptx;
use rcud_emu::{DeviceMemory, EmuGpu};
use rcud_fatbin::FatBinary;
use rcud_proto::ops::{Failure, FuncAttributes};
use rcud_proto::{CudaError, DeviceProps};
use rcud_transport::TransportError;

use super::{Backend, CopyError, DeviceContext, EmuSettings, HostSource, KernelLaunch};

/// The architecture whose PTX the interpreter runs (compute capability 8.0).
const PTX_ARCH: u32 = 80;
/// Shared memory a block may use without opting in, and with.
const DEFAULT_SHARED: u32 = 48 << 10;
const OPTIN_SHARED: u32 = 163 << 10;

/// Most bytes a client's fat binary may decompress to (a bound on hostile images).
const MAX_DECOMPRESSED: u64 = 1 << 30;

/// Parsed device code, shared by every client that loads the same fat binary.
type ImageCache = Mutex<HashMap<[u8; 32], Arc<ptx::Module>>>;

/// GPUs emulated in host memory.
#[derive(Debug)]
pub struct EmuBackend {
    gpus: Vec<Arc<EmuGpu>>,
    images: Arc<ImageCache>,
    kernel_timeout: Duration,
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
        }
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
            limits: Limits {
                timeout: self.kernel_timeout,
                threads: std::thread::available_parallelism().map_or(1, |n| n.get()),
                max_dynamic_shared: DEFAULT_SHARED,
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
    limits: Limits,
}

/// A module loaded into one client's context: its code and where its
/// module-scope variables live in the client's device memory.
struct LoadedModule {
    code: Arc<ptx::Module>,
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
fn parse_image(image: &[u8]) -> Result<ptx::Module, Failure> {
    let fatbin = FatBinary::parse_with_limit(image, MAX_DECOMPRESSED)
        .map_err(|e| Failure::new(CudaError::INVALID_KERNEL_IMAGE, format!("fat binary: {e}")))?;
    let text = fatbin.ptx_for(PTX_ARCH).ok_or_else(|| {
        Failure::new(
            CudaError::NO_KERNEL_IMAGE_FOR_DEVICE,
            format!("the program carries no PTX for compute capability {}.{} or lower (build with -arch=sm_80 or a compute_XY target <= 80)", PTX_ARCH / 10, PTX_ARCH % 10),
        )
    })?;
    ptx::Module::parse(text).map_err(|e| Failure::new(CudaError::NOT_SUPPORTED, e.to_string()))
}

fn kernel_failure(e: KernelError) -> Failure {
    let code = match &e {
        KernelError::IllegalAddress(_) => CudaError::ILLEGAL_ADDRESS,
        KernelError::MisalignedAddress(_) => CudaError::MISALIGNED_ADDRESS,
        KernelError::InvalidConfiguration(_) => CudaError::INVALID_CONFIGURATION,
        KernelError::InvalidValue(_) => CudaError::INVALID_VALUE,
        KernelError::Timeout(_) => CudaError::LAUNCH_TIMEOUT,
        KernelError::Trap(_) => CudaError::LAUNCH_FAILURE,
        KernelError::Assert(_) => CudaError::ASSERT,
        KernelError::StackOverflow(_) => CudaError::HARDWARE_STACK_ERROR,
        KernelError::Unsupported(_) => CudaError::NOT_SUPPORTED,
        KernelError::Internal(_) => CudaError::UNKNOWN,
    };
    Failure::new(code, e.to_string())
}

impl EmuContext {
    /// Frees the variables of a module that failed to load.
    fn release(&mut self, symbols: &HashMap<String, u64>) {
        for &addr in symbols.values() {
            let _ = self.memory.free(addr);
        }
    }

    fn module(&self, module: u32) -> Result<&LoadedModule, Failure> {
        self.modules
            .get(module as usize)
            .ok_or_else(|| Failure::new(CudaError::INVALID_RESOURCE_HANDLE, "unknown module"))
    }
}

impl DeviceContext for EmuContext {
    fn malloc(&mut self, size: u64) -> Result<u64, CudaError> {
        self.memory.malloc(size)
    }

    fn free(&mut self, ptr: u64) -> Result<(), CudaError> {
        self.memory.free(ptr)
    }

    fn mem_info(&self) -> (u64, u64) {
        let gpu = self.memory.gpu();
        (gpu.free_memory(), gpu.total_memory())
    }

    fn memory_held(&self) -> u64 {
        self.memory.held()
    }

    fn synchronize(&mut self) -> Result<(), CudaError> {
        // Every operation of the emulated device completes before its reply.
        Ok(())
    }

    fn reset(&mut self) {
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
        // The payload is received straight into device memory: no staging copy.
        let target = self.memory.slice_mut(dst, len).map_err(CopyError::Cuda)?;
        src.read_into(target)?;
        Ok(())
    }

    fn copy_to_host(
        &mut self,
        src: u64,
        len: u64,
        sink: &mut dyn FnMut(&[u8]) -> Result<(), TransportError>,
    ) -> Result<(), CopyError> {
        let bytes = self.memory.slice(src, len).map_err(CopyError::Cuda)?;
        sink(bytes)?;
        Ok(())
    }

    fn copy_device(&mut self, dst: u64, src: u64, len: u64) -> Result<(), CudaError> {
        self.memory.copy(dst, src, len)
    }

    fn memset(&mut self, dst: u64, value: u8, len: u64) -> Result<(), CudaError> {
        self.memory.fill(dst, value, len)
    }

    fn load_module(&mut self, hash: [u8; 32], image: Option<Vec<u8>>) -> Result<u32, Failure> {
        let cached = self.images.lock().get(&hash).cloned();
        let code = match (cached, image) {
            (Some(code), _) => code,
            // A miss is the client's cue to ship the image: no message.
            (None, None) => return Err(CudaError::INVALID_VALUE.into()),
            (None, Some(image)) => {
                let code = Arc::new(parse_image(&image)?);
                self.images.lock().insert(hash, code.clone());
                code
            }
        };
        let mut symbols = HashMap::new();
        let mut sizes = HashMap::new();
        // Every variable gets its address first: initialisers may hold the
        // addresses of others (pointer tables).
        for var in code.globals() {
            match self.memory.malloc(var.size.max(1)) {
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
        for var in code.globals() {
            let addr = symbols[&var.name];
            let init = var.init_with(|name| symbols.get(name).copied());
            let written = match init {
                Some(bytes) => self
                    .memory
                    .slice_mut(addr, bytes.len() as u64)
                    .map(|dst| dst.copy_from_slice(&bytes))
                    .map_err(Failure::from),
                None => Err(Failure::new(
                    CudaError::NOT_SUPPORTED,
                    format!("the initialiser of device variable {} refers to something that is not a device variable (function pointers are not supported)", var.name),
                )),
            };
            if let Err(f) = written {
                self.release(&symbols);
                return Err(f);
            }
        }
        self.modules.push(LoadedModule {
            code,
            symbols,
            sizes,
        });
        Ok((self.modules.len() - 1) as u32)
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
        if let Some(e) = m.code.kernel_error(name) {
            return Err(Failure::new(CudaError::NOT_SUPPORTED, e.to_string()));
        }
        let info = m.code.kernel_info(name).ok_or_else(|| {
            Failure::new(
                CudaError::INVALID_DEVICE_FUNCTION,
                format!("kernel {name} is not in the module's PTX"),
            )
        })?;
        let static_shared = info.static_shared as u64;
        let attributes = FuncAttributes {
            shared_size_bytes: static_shared,
            const_size_bytes: 0,
            local_size_bytes: info.local_bytes as u64,
            max_threads_per_block: info.max_threads as i32,
            num_regs: 32,
            ptx_version: PTX_ARCH as i32,
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
        let config = LaunchConfig {
            grid: launch.grid,
            block: launch.block,
            dynamic_shared: launch.shared_mem,
        };
        let limits = Limits {
            max_dynamic_shared,
            ..limits.clone()
        };
        let out = kernel::launch(
            &module.code,
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
