//! Kernel launches on the CPU: validates the launch, resolves symbols,
//! runs the grid's blocks in parallel on host threads (each block's warps
//! interleaved on one thread, honouring barriers), and collects `printf`
//! output, the instruction count and the first error.

use std::collections::HashMap;
use std::fmt;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

mod device_launch;
mod exec;
mod num;
mod printf;

pub use exec::{LOCAL_WINDOW, PARAM_WINDOW, SHARED_WINDOW};

use crate::memory::DeviceMemory;
use crate::ptx::ir::{ConstVal, Msp};
use crate::ptx::{Module, SymKind};
use exec::{BlockEnv, Ctx, Exc, ExcKind, Status, WState, Warp};

/// Grid and block dimensions and dynamic shared memory of a launch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LaunchConfig {
    /// Blocks in x, y, z.
    pub grid: [u32; 3],
    /// Threads per block in x, y, z.
    pub block: [u32; 3],
    /// Bytes of dynamic (`extern __shared__`) shared memory per block.
    pub dynamic_shared: u32,
    /// A cooperative launch (`cudaLaunchCooperativeKernel`): every block is
    /// resident at once and cooperative groups' `grid.sync()` works.
    pub cooperative: bool,
}

/// Size of the device heap of `malloc` (CUDA's default
/// `cudaLimitMallocHeapSize`).
pub const DEVICE_HEAP_BYTES: u64 = 8 << 20;

/// Limits of one launch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Limits {
    /// Wall-clock time after which the launch stops with [`KernelError::Timeout`].
    pub timeout: Duration,
    /// Host worker threads (0: all available cores).
    pub threads: usize,
    /// The kernel's `cudaFuncAttributeMaxDynamicSharedMemorySize`: dynamic
    /// shared memory above 48 KiB (static + dynamic) is allowed up to this
    /// many bytes, and never past 163 KiB in all.
    pub max_dynamic_shared: u32,
    /// Size of the device heap of `malloc` (`cudaLimitMallocHeapSize`),
    /// made at the first launch of a kernel that calls it.
    pub heap_bytes: u64,
    /// Which engine runs the kernel.
    pub engine: crate::jit::Engine,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            timeout: Duration::from_secs(60),
            threads: 0,
            max_dynamic_shared: DEFAULT_SHARED,
            heap_bytes: DEVICE_HEAP_BYTES,
            engine: crate::jit::Engine::Interp,
        }
    }
}

/// Bytes of device `printf` output one launch keeps (the device's default
/// `cudaLimitPrintfFifoSize`); later output is dropped.
pub const PRINTF_LIMIT: usize = 1 << 20;

/// Shared memory a block may use without opting in (48 KiB).
pub const DEFAULT_SHARED: u32 = 48 * 1024;
/// Most shared memory per block on compute capability 8.0 (163 KiB).
pub const MAX_SHARED: u32 = 163 * 1024;

/// What a successful launch produced.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LaunchOutput {
    /// Device `printf` output: each block's output in block order, each
    /// thread's calls in the order it made them.
    pub printf: String,
    /// PTX instructions executed, counted per thread.
    pub instructions: u64,
}

/// Where a kernel failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fault {
    /// Kernel name.
    pub kernel: String,
    /// Function the failing instruction is in (the kernel or a device function).
    pub function: String,
    /// blockIdx of the failing thread.
    pub block: [u32; 3],
    /// threadIdx of the failing thread.
    pub thread: [u32; 3],
    /// The instruction's opcode, as written in the PTX.
    pub instruction: String,
    /// Its line in the PTX text.
    pub line: u32,
    /// The faulting address (memory errors).
    pub address: u64,
    /// Access size in bytes (memory errors).
    pub size: u32,
    /// State space of the access (`global`, `shared`, `local`, ...).
    pub space: &'static str,
    /// Extra detail (assertion text, reason).
    pub message: String,
}

/// Why a launch failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum KernelError {
    /// An access outside every allocation or outside its space's bounds
    /// (`cudaErrorIllegalAddress`).
    IllegalAddress(Box<Fault>),
    /// An access not aligned to its size (`cudaErrorMisalignedAddress`).
    MisalignedAddress(Box<Fault>),
    /// Bad grid/block dimensions or shared memory size
    /// (`cudaErrorInvalidConfiguration`).
    InvalidConfiguration(String),
    /// Bad launch arguments: parameter buffer too small, unknown kernel
    /// (`cudaErrorInvalidValue`).
    InvalidValue(String),
    /// The kernel ran past the time limit (`cudaErrorLaunchTimeout`).
    Timeout(Box<str>),
    /// `trap` (`cudaErrorLaunchFailure`).
    Trap(Box<Fault>),
    /// A device-side `assert` failed (`cudaErrorAssert`).
    Assert(Box<Fault>),
    /// The call stack grew past its limit (`cudaErrorLaunchFailure`).
    StackOverflow(Box<Fault>),
    /// The kernel uses PTX the interpreter does not support, or a global
    /// variable was not loaded (`cudaErrorNotSupported` / `cudaErrorInvalidPtx`).
    Unsupported(String),
    /// A cooperative grid whose blocks cannot all be resident at once
    /// (`cudaErrorCooperativeLaunchTooLarge`).
    CooperativeTooLarge(String),
    /// A bug in the interpreter (a caught panic).
    Internal(String),
}

impl fmt::Display for Fault {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "kernel {}, block ({},{},{}), thread ({},{},{}), '{}' (line {}",
            self.kernel,
            self.block[0],
            self.block[1],
            self.block[2],
            self.thread[0],
            self.thread[1],
            self.thread[2],
            self.instruction,
            self.line
        )?;
        if self.function != self.kernel {
            write!(f, " in function {}", self.function)?;
        }
        write!(f, ")")
    }
}

impl fmt::Display for KernelError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            KernelError::IllegalAddress(x) => write!(
                f,
                "illegal address: {}-byte {} access at {:#x}: {x}",
                x.size, x.space, x.address
            ),
            KernelError::MisalignedAddress(x) => write!(
                f,
                "misaligned address: {}-byte {} access at {:#x}: {x}",
                x.size, x.space, x.address
            ),
            KernelError::InvalidConfiguration(s) => write!(f, "invalid configuration: {s}"),
            KernelError::InvalidValue(s) => write!(f, "invalid launch: {s}"),
            KernelError::Timeout(k) => write!(f, "kernel {k} ran past the time limit"),
            KernelError::Trap(x) => write!(f, "trap: {x}"),
            KernelError::Assert(x) => write!(f, "assertion failed: {}: {x}", x.message),
            KernelError::StackOverflow(x) => write!(f, "stack overflow ({}): {x}", x.message),
            KernelError::Unsupported(s) => write!(f, "{s}"),
            KernelError::CooperativeTooLarge(s) => write!(f, "cooperative launch too large: {s}"),
            KernelError::Internal(s) => write!(f, "internal interpreter error: {s}"),
        }
    }
}

impl std::error::Error for KernelError {}

/// A launch's output and its error, if any: `printf` output made before a
/// failure is kept.
#[derive(Debug)]
pub struct LaunchResult {
    /// Output of the blocks that finished (all of them on success).
    pub output: LaunchOutput,
    /// The first error.
    pub error: Option<KernelError>,
}

/// Warp instructions a warp runs before the block's next warp gets a turn.
const SLICE: u64 = 1024;

/// Host memory that the blocks a launch runs at once may take for their
/// warps' registers, local memory and shared memory (1 GiB): a kernel whose
/// blocks need much runs fewer of them at once (down to one at a time),
/// rather than multiplying it by the host's cores.
pub const LAUNCH_MEMORY: u64 = 1 << 30;

/// Workers (host threads) for a launch of `blocks` blocks of `per_block`
/// bytes each on `cores` cores: no more than there are blocks, and no more
/// than [`LAUNCH_MEMORY`] holds, but at least one.
fn worker_count(cores: usize, blocks: u64, per_block: u64) -> usize {
    let fit = usize::try_from(LAUNCH_MEMORY / per_block.max(1)).unwrap_or(usize::MAX);
    cores
        .clamp(1, 1024)
        .min(usize::try_from(blocks).unwrap_or(usize::MAX))
        .min(fit)
        .max(1)
}

/// Host bytes one block of kernel `kernel` takes when it starts: per warp, its
/// registers (32 lanes × 8 bytes each), predicates and the local memory of
/// its call chain; and the block's shared memory. Calls may take more, up to
/// a warp's limits.
fn block_memory(module: &Module, kernel: &str, nwarps: u32, shared_bytes: u32) -> u64 {
    let Some(meta) = module.kernels.get(kernel) else {
        return 0;
    };
    let Some(f) = module.funcs.get(meta.func as usize) else {
        return 0;
    };
    let local = meta.info.local_bytes.clamp(16, exec::LOCAL_LIMIT as u32);
    let warp = u64::from(f.nslots) * 32 * 8 + u64::from(f.npreds) * 4 + 32 * u64::from(local);
    u64::from(nwarps) * warp + u64::from(shared_bytes)
}

/// Runs kernel `kernel` of `module`. `params` is the parameter buffer packed
/// at the offsets of [`Module::kernel_params`]; `symbols` maps each of
/// [`Module::globals`] to its device address.
pub fn launch(
    module: &Module,
    kernel: &str,
    config: &LaunchConfig,
    params: &[u8],
    symbols: &HashMap<String, u64>,
    memory: &mut DeviceMemory,
    limits: &Limits,
) -> Result<LaunchOutput, KernelError> {
    let r = launch_detailed(module, kernel, config, params, symbols, memory, limits);
    match r.error {
        None => Ok(r.output),
        Some(e) => Err(e),
    }
}

/// Like [`launch`], but keeps the `printf` output of a failed launch.
pub fn launch_detailed(
    module: &Module,
    kernel: &str,
    config: &LaunchConfig,
    params: &[u8],
    symbols: &HashMap<String, u64>,
    memory: &mut DeviceMemory,
    limits: &Limits,
) -> LaunchResult {
    let grid = Grid {
        module,
        symbols,
        limits,
    };
    grid.launch(kernel, config, params, memory, 0)
}

/// What every grid of one launch from the host shares: the launch from
/// the host and the grids it launches from the device.
struct Grid<'a> {
    module: &'a Module,
    symbols: &'a HashMap<String, u64>,
    limits: &'a Limits,
}

impl Grid<'_> {
    /// Runs one grid, then the grids it launched (see `device_launch`);
    /// the first error ends the launch, with the output made before it.
    fn launch(
        &self,
        kernel: &str,
        config: &LaunchConfig,
        params: &[u8],
        memory: &mut DeviceMemory,
        depth: u32,
    ) -> LaunchResult {
        let prep = match prepare(
            self.module,
            kernel,
            config,
            params,
            self.symbols,
            self.limits,
        ) {
            Ok(p) => p,
            Err(e) => {
                return LaunchResult {
                    output: LaunchOutput::default(),
                    error: Some(e),
                }
            }
        };
        let (mut result, children) = run_grid(
            self.module,
            kernel,
            config,
            prep,
            memory,
            self.limits,
            depth,
        );
        for child in children {
            if result.error.is_some() {
                break;
            }
            match child {
                device_launch::ChildWork::Launch {
                    kernel,
                    config,
                    params,
                } => {
                    let r = self.launch(&kernel, &config, &params, memory, depth + 1);
                    result.output.printf.push_str(&r.output.printf);
                    result.output.instructions += r.output.instructions;
                    result.error = r.error;
                }
                device_launch::ChildWork::Copy { dst, src, len } => {
                    if let Err(e) = memory.copy(dst, src, len) {
                        result.error = Some(KernelError::InvalidValue(format!(
                            "the device runtime's cudaMemcpyAsync of {len} bytes from {src:#x} to {dst:#x}: {e:?}"
                        )));
                    }
                }
                device_launch::ChildWork::Fill { dst, value, len } => {
                    if let Err(e) = memory.fill(dst, value, len) {
                        result.error = Some(KernelError::InvalidValue(format!(
                            "the device runtime's cudaMemsetAsync of {len} bytes at {dst:#x}: {e:?}"
                        )));
                    }
                }
            }
        }
        result
    }
}

/// Checks a launch configuration against the kernel and the limits.
pub fn check_config(
    module: &Module,
    kernel: &str,
    config: &LaunchConfig,
    limits: &Limits,
) -> Result<(), KernelError> {
    let Some(meta) = module.kernels.get(kernel) else {
        return Err(KernelError::InvalidValue(format!(
            "no kernel named {kernel}"
        )));
    };
    let [bx, by, bz] = config.block;
    let [gx, gy, gz] = config.grid;
    let bad = |s: String| Err(KernelError::InvalidConfiguration(s));
    if bx == 0 || by == 0 || bz == 0 || gx == 0 || gy == 0 || gz == 0 {
        return bad(format!(
            "grid ({gx},{gy},{gz}) and block ({bx},{by},{bz}) dimensions must be positive"
        ));
    }
    if bx > 1024 || by > 1024 || bz > 64 {
        return bad(format!("block ({bx},{by},{bz}) exceeds (1024,1024,64)"));
    }
    let threads = u64::from(bx) * u64::from(by) * u64::from(bz);
    if threads > 1024 {
        return bad(format!("block of {threads} threads exceeds 1024"));
    }
    if threads > u64::from(meta.info.max_threads) {
        return bad(format!(
            "block of {threads} threads exceeds the kernel's limit of {}",
            meta.info.max_threads
        ));
    }
    if let Some(req) = module.funcs[meta.func as usize].reqntid {
        if req != config.block {
            return bad(format!(
                "block ({bx},{by},{bz}) differs from the kernel's .reqntid ({},{},{})",
                req[0], req[1], req[2]
            ));
        }
    }
    if gx > i32::MAX as u32 || gy > 65535 || gz > 65535 {
        return bad(format!(
            "grid ({gx},{gy},{gz}) exceeds (2^31-1,65535,65535)"
        ));
    }
    let total = u64::from(meta.dyn_base) + u64::from(config.dynamic_shared);
    let stat = u64::from(meta.static_shared);
    if stat > u64::from(DEFAULT_SHARED) {
        return bad(format!(
            "{stat} bytes of static shared memory exceed 48 KiB"
        ));
    }
    if total > u64::from(DEFAULT_SHARED)
        && (config.dynamic_shared > limits.max_dynamic_shared || total > u64::from(MAX_SHARED))
    {
        return bad(format!(
            "{} bytes of dynamic shared memory (plus {stat} static) exceed the limit of {} bytes",
            config.dynamic_shared,
            limits
                .max_dynamic_shared
                .min(MAX_SHARED.saturating_sub(meta.dyn_base))
                .max(DEFAULT_SHARED.saturating_sub(meta.dyn_base))
        ));
    }
    Ok(())
}

struct Prepared {
    func: u32,
    consts: Vec<Vec<(u32, u64)>>,
    params: Vec<u8>,
    shared_bytes: u32,
}

fn prepare(
    module: &Module,
    kernel: &str,
    config: &LaunchConfig,
    params: &[u8],
    symbols: &HashMap<String, u64>,
    limits: &Limits,
) -> Result<Prepared, KernelError> {
    check_config(module, kernel, config, limits)?;
    let Some(meta) = module.kernels.get(kernel) else {
        return Err(KernelError::InvalidValue(format!(
            "no kernel named {kernel}"
        )));
    };
    if let Some(e) = module.kernel_error(kernel) {
        return Err(KernelError::Unsupported(e.to_string()));
    }
    let frame = module.funcs[meta.func as usize].frame_size as usize;
    if frame > exec::LOCAL_LIMIT {
        return Err(KernelError::Unsupported(format!(
            "kernel {kernel} needs {frame} bytes of local memory per thread, more than {}",
            exec::LOCAL_LIMIT
        )));
    }
    let need = meta.info.param_bytes as usize;
    if params.len() < need {
        return Err(KernelError::InvalidValue(format!(
            "kernel {kernel} takes {need} bytes of parameters, {} given",
            params.len()
        )));
    }
    let mut consts = vec![Vec::new(); module.funcs.len()];
    for &fi in &meta.reach {
        let f = &module.funcs[fi as usize];
        let mut out = Vec::with_capacity(f.consts.len());
        for &(slot, cv) in &f.consts {
            let v = match cv {
                ConstVal::Imm(v) => v,
                ConstVal::Sym(id, add) => {
                    let sym = &module.syms[id as usize];
                    let base = match &sym.kind {
                        SymKind::Var => *symbols.get(&sym.name).ok_or_else(|| {
                            KernelError::Unsupported(format!(
                                "kernel {kernel} uses module variable '{}', which was not loaded",
                                sym.name
                            ))
                        })?,
                        SymKind::Shared { .. } | SymKind::ExternShared { .. } => {
                            meta.shared.get(&id).copied().unwrap_or(0)
                        }
                        // Function addresses: tokens that no access can use.
                        SymKind::Func(i) => crate::ptx::ir::FUNC_ADDR_TAG | u64::from(*i) << 4,
                        SymKind::Extern => {
                            return Err(KernelError::Unsupported(format!(
                                "kernel {kernel} takes the address of external symbol '{}'",
                                sym.name
                            )))
                        }
                    };
                    base.wrapping_add(add as u64)
                }
            };
            out.push((slot, v));
        }
        consts[fi as usize] = out;
    }
    let mut p = params.to_vec();
    p.resize(need.max(params.len()).div_ceil(8) * 8, 0);
    Ok(Prepared {
        func: meta.func,
        consts,
        params: p,
        shared_bytes: meta.dyn_base + config.dynamic_shared,
    })
}

fn run_grid(
    module: &Module,
    kernel: &str,
    config: &LaunchConfig,
    prep: Prepared,
    memory: &mut DeviceMemory,
    limits: &Limits,
    depth: u32,
) -> (LaunchResult, Vec<device_launch::ChildWork>) {
    if module.kernel_uses_heap(kernel) {
        // Without room for it, every `malloc` returns NULL, as on a GPU
        // whose heap is used up (and device launches get no parameter
        // buffer).
        let _ = memory.ensure_heap(limits.heap_bytes);
    }
    let total_blocks =
        u64::from(config.grid[0]) * u64::from(config.grid[1]) * u64::from(config.grid[2]);
    let nthreads = config.block.iter().product::<u32>();
    let per_block = block_memory(module, kernel, nthreads.div_ceil(32), prep.shared_bytes);
    let mut grid_workspace = 0;
    if config.cooperative {
        let fail = |e| LaunchResult {
            output: LaunchOutput::default(),
            error: Some(e),
        };
        if total_blocks.saturating_mul(per_block) > LAUNCH_MEMORY {
            return (fail(KernelError::CooperativeTooLarge(format!(
                "{total_blocks} resident blocks of {per_block} bytes of interpreter state exceed {} MiB",
                LAUNCH_MEMORY >> 20
            ))), Vec::new());
        }
        match memory.grid_workspace() {
            Ok(a) => grid_workspace = a,
            Err(_) => {
                return (
                    fail(KernelError::CooperativeTooLarge(
                        "no device memory for the grid workspace".into(),
                    )),
                    Vec::new(),
                )
            }
        }
    }
    let view = memory.launch_view();
    let cores = if limits.threads == 0 {
        std::thread::available_parallelism().map_or(1, |n| n.get())
    } else {
        limits.threads
    };
    // A cooperative grid's blocks are all resident whatever the workers.
    let nworkers = match config.cooperative {
        true => worker_count(cores, total_blocks, 1),
        false => worker_count(cores, total_blocks, per_block),
    };
    let cx = Ctx {
        module,
        kernel: prep.func,
        consts: prep.consts,
        view: &view,
        params: &prep.params,
        grid: config.grid,
        block: config.block,
        shared_bytes: prep.shared_bytes,
        dyn_shared: config.dynamic_shared,
        nwarps: nthreads.div_ceil(32),
        nworkers: nworkers as u32,
        device_launches: device_launch::DeviceLaunches::new(depth),
        grid_workspace,
        start: Instant::now(),
        printf_left: AtomicI64::new(PRINTF_LIMIT as i64),
        jit: match limits.engine {
            crate::jit::Engine::Jit => module
                .funcs
                .get(prep.func as usize)
                .and_then(crate::jit::compiled),
            crate::jit::Engine::Interp => None,
        },
    };
    let shared = Shared {
        next: AtomicU64::new(0),
        total: total_blocks,
        stop: AtomicBool::new(false),
        deadline: Instant::now() + limits.timeout,
        outputs: Mutex::new(Vec::new()),
        error: Mutex::new(None),
        insts: AtomicU64::new(0),
        kernel,
        cooperative: config.cooperative,
    };
    if nworkers == 1 {
        worker(&cx, &shared, 0);
    } else {
        std::thread::scope(|s| {
            for wi in 0..nworkers {
                let (cx, shared) = (&cx, &shared);
                s.spawn(move || worker(cx, shared, wi as u32));
            }
        });
    }
    let children = cx.device_launches.take_children(&view);
    let mut outputs = shared
        .outputs
        .into_inner()
        .unwrap_or_else(|e| e.into_inner());
    outputs.sort_unstable_by_key(|(b, _)| *b);
    let mut text = Vec::new();
    for (_, o) in outputs {
        text.extend_from_slice(&o);
    }
    let result = LaunchResult {
        output: LaunchOutput {
            printf: String::from_utf8_lossy(&text).into_owned(),
            instructions: shared.insts.load(Ordering::Relaxed),
        },
        error: shared.error.into_inner().unwrap_or_else(|e| e.into_inner()),
    };
    (result, children)
}

/// State the workers of one launch share.
struct Shared<'k> {
    next: AtomicU64,
    total: u64,
    stop: AtomicBool,
    deadline: Instant,
    outputs: Mutex<Vec<(u64, Vec<u8>)>>,
    error: Mutex<Option<KernelError>>,
    insts: AtomicU64,
    kernel: &'k str,
    /// All blocks resident at once (a cooperative launch).
    cooperative: bool,
}

impl Shared<'_> {
    fn fail(&self, e: KernelError) {
        let mut slot = self.error.lock().unwrap_or_else(|p| p.into_inner());
        if slot.is_none() {
            *slot = Some(e);
        }
        self.stop.store(true, Ordering::Relaxed);
    }
}

/// Why a block stopped early.
enum BlockStop {
    Error(KernelError),
    /// Another worker failed, or the deadline passed.
    Stopped,
}

fn new_env<'m>(worker: u32) -> BlockEnv<'m> {
    BlockEnv {
        shared: Vec::new(),
        printf: Vec::new(),
        ctaid: [0; 3],
        cache: None,
        insts: 0,
        bar_popc: 0,
        bar_and: true,
        bar_or: false,
        named: Default::default(),
        worker,
    }
}

fn worker<'m>(cx: &Ctx<'_, 'm>, sh: &Shared<'_>, wi: u32) {
    let mut insts = 0;
    let result = catch_unwind(AssertUnwindSafe(|| {
        if sh.cooperative {
            run_resident_blocks(cx, sh, wi, &mut insts);
        } else {
            run_queued_blocks(cx, sh, wi, &mut insts);
        }
    }));
    if let Err(panic) = result {
        let msg = panic
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| panic.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "panic".into());
        sh.fail(KernelError::Internal(format!(
            "kernel {}: {msg}",
            sh.kernel
        )));
    }
    sh.insts.fetch_add(insts, Ordering::Relaxed);
}

/// Keeps a block's printf output, tagged with its index for ordering.
fn keep_printf(sh: &Shared<'_>, env: &mut BlockEnv<'_>, b: u64) {
    if !env.printf.is_empty() {
        let text = std::mem::take(&mut env.printf);
        sh.outputs
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push((b, text));
    }
}

/// An ordinary launch: each worker takes the next block not yet run and
/// runs it to completion, as an SM takes blocks when it has room.
fn run_queued_blocks<'m>(cx: &Ctx<'_, 'm>, sh: &Shared<'_>, wi: u32, insts: &mut u64) {
    let mut warps: Vec<Warp> = Vec::new();
    let mut env = new_env(wi);
    loop {
        if sh.stop.load(Ordering::Relaxed) {
            break;
        }
        let b = sh.next.fetch_add(1, Ordering::Relaxed);
        if b >= sh.total {
            break;
        }
        let out = run_block(cx, sh, &mut warps, &mut env, b);
        keep_printf(sh, &mut env, b);
        match out {
            Ok(()) => {}
            Err(BlockStop::Error(e)) => {
                sh.fail(e);
                break;
            }
            Err(BlockStop::Stopped) => break,
        }
    }
    *insts += env.insts;
}

/// A cooperative launch: every block is resident at once, so a block
/// spinning in `grid.sync()` never keeps another from reaching it. Worker
/// `wi` owns blocks `wi`, `wi + workers`, ... and gives each a time slice
/// in turn until all have finished.
fn run_resident_blocks<'m>(cx: &Ctx<'_, 'm>, sh: &Shared<'_>, wi: u32, insts: &mut u64) {
    let step = u64::from(cx.nworkers.max(1));
    let mut blocks: Vec<(u64, Vec<Warp>, BlockEnv<'m>)> = (u64::from(wi)..sh.total)
        .step_by(step as usize)
        .map(|b| {
            let (mut warps, mut env) = (Vec::new(), new_env(wi));
            start_block(cx, &mut warps, &mut env, b);
            (b, warps, env)
        })
        .collect();
    while !blocks.is_empty() {
        let mut i = 0;
        while i < blocks.len() {
            let (b, warps, env) = &mut blocks[i];
            let out = step_block(cx, sh, warps, env);
            match out {
                Ok(true) => i += 1,
                Ok(false) => {
                    keep_printf(sh, env, *b);
                    *insts += env.insts;
                    blocks.swap_remove(i);
                }
                Err(stop) => {
                    for (b, _, env) in &mut blocks {
                        keep_printf(sh, env, *b);
                        *insts += env.insts;
                    }
                    if let BlockStop::Error(e) = stop {
                        sh.fail(e);
                    }
                    return;
                }
            }
        }
    }
}

fn run_block<'m>(
    cx: &Ctx<'_, 'm>,
    sh: &Shared<'_>,
    warps: &mut Vec<Warp>,
    env: &mut BlockEnv<'m>,
    b: u64,
) -> Result<(), BlockStop> {
    start_block(cx, warps, env, b);
    while step_block(cx, sh, warps, env)? {}
    Ok(())
}

/// Readies `warps` and `env` to run block `b` from its first instruction.
fn start_block<'m>(cx: &Ctx<'_, 'm>, warps: &mut Vec<Warp>, env: &mut BlockEnv<'m>, b: u64) {
    let [gx, gy, _] = cx.grid;
    let (gx, gy) = (u64::from(gx), u64::from(gy));
    env.ctaid = [
        (b % gx) as u32,
        ((b / gx) % gy) as u32,
        (b / (gx * gy)) as u32,
    ];
    env.shared.clear();
    env.shared.resize(cx.shared_bytes as usize, 0);
    env.bar_popc = 0;
    env.bar_and = true;
    env.bar_or = false;
    env.named = Default::default();
    let n = cx.nwarps as usize;
    while warps.len() < n {
        warps.push(Warp::new());
    }
    for (i, w) in warps.iter_mut().take(n).enumerate() {
        w.start(cx, i as u32);
    }
}

/// Gives every running warp of a block one time slice and releases a
/// barrier every unfinished warp waits at. Returns whether the block has
/// more to do.
fn step_block<'m>(
    cx: &Ctx<'_, 'm>,
    sh: &Shared<'_>,
    warps: &mut [Warp],
    env: &mut BlockEnv<'m>,
) -> Result<bool, BlockStop> {
    let n = cx.nwarps as usize;
    let mut running = 0;
    let mut waiting = 0;
    for w in warps.iter_mut().take(n) {
        match w.state {
            WState::Done => continue,
            WState::Barrier if w.counted_wait_over(env) => w.release(0, true, false),
            WState::Barrier => {
                waiting += 1;
                continue;
            }
            WState::Running => {}
        }
        match exec::run(w, cx, env, SLICE) {
            Ok(Status::Yield) => running += 1,
            Ok(Status::Barrier) => {
                w.state = WState::Barrier;
                waiting += 1;
            }
            Ok(Status::Done) => w.state = WState::Done,
            Err(e) => return Err(BlockStop::Error(kernel_error(cx, sh, env, w, &e))),
        }
    }
    if sh.stop.load(Ordering::Relaxed) {
        return Err(BlockStop::Stopped);
    }
    if Instant::now() >= sh.deadline {
        return Err(BlockStop::Error(KernelError::Timeout(sh.kernel.into())));
    }
    // A warp whose counted barrier completed runs in the next pass.
    let ready = warps
        .iter()
        .take(n)
        .any(|w| w.state == WState::Barrier && w.counted_wait_over(env));
    if running == 0 && !ready {
        if waiting == 0 {
            return Ok(false);
        }
        // Every warp that has not finished waits at a barrier.
        let (popc, all, any) = (env.bar_popc, env.bar_and, env.bar_or);
        env.bar_popc = 0;
        env.bar_and = true;
        env.bar_or = false;
        // Whole-block barriers; if only counted ones wait, none of them
        // can complete: release those rather than hang.
        let whole = warps
            .iter()
            .take(n)
            .any(|w| w.state == WState::Barrier && w.bar_wait.is_none());
        for w in warps.iter_mut().take(n) {
            if w.state == WState::Barrier && (w.bar_wait.is_none() || !whole) {
                w.release(popc, all, any);
            }
        }
    }
    Ok(true)
}

fn space_name(s: Msp) -> &'static str {
    match s {
        Msp::Generic => "generic",
        Msp::Global => "global",
        Msp::Const => "const",
        Msp::Shared => "shared",
        Msp::Local | Msp::Frame => "local",
        Msp::Param => "param",
    }
}

fn kernel_error(
    cx: &Ctx<'_, '_>,
    sh: &Shared<'_>,
    env: &BlockEnv<'_>,
    w: &Warp,
    e: &Exc,
) -> KernelError {
    let m = cx.module;
    let func = m.funcs.get(e.func as usize);
    let pos = func.and_then(|f| f.src.get(e.pc as usize));
    let l = (e.lane as usize) & 31;
    let fault = Box::new(Fault {
        kernel: sh.kernel.to_string(),
        function: func.map_or_else(String::new, |f| f.name.clone()),
        block: env.ctaid,
        thread: [w.tid[0][l], w.tid[1][l], w.tid[2][l]],
        instruction: pos
            .and_then(|p| m.opcodes.get(p.opcode as usize))
            .cloned()
            .unwrap_or_default(),
        line: pos.map_or(0, |p| p.line),
        address: e.addr,
        size: e.size,
        space: space_name(e.space),
        message: e.msg.clone(),
    });
    match e.kind {
        ExcKind::Illegal => KernelError::IllegalAddress(fault),
        ExcKind::Misaligned => KernelError::MisalignedAddress(fault),
        ExcKind::Trap => KernelError::Trap(fault),
        ExcKind::Assert => KernelError::Assert(fault),
        ExcKind::StackOverflow => KernelError::StackOverflow(fault),
        ExcKind::Unsupported => KernelError::Unsupported(format!("{}: {fault}", e.msg)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blocks_that_need_much_memory_run_fewer_at_once() {
        let body = |regs: u32| {
            let mut b = format!(".reg .b32 %r<{regs}>;\n");
            for i in 0..regs {
                b.push_str(&format!("mov.b32 %r{i}, 1;\n"));
            }
            format!(".version 8.0\n.target sm_80\n.address_size 64\n.visible .entry k()\n{{\n{b}ret;\n}}\n")
        };
        let small = Module::parse(&body(4)).unwrap();
        // 32 warps of 100 000 registers: 800 MiB a block.
        let big = Module::parse(&body(100_000)).unwrap();
        assert!(block_memory(&small, "k", 32, 0) < 1 << 20);
        let need = block_memory(&big, "k", 32, 1024);
        assert!(need > 700 << 20 && need < LAUNCH_MEMORY, "{need}");
        assert_eq!(block_memory(&big, "nothing", 32, 0), 0);
        // Such blocks run one at a time; small ones on every core.
        assert_eq!(worker_count(16, 1000, need), 1);
        assert_eq!(worker_count(16, 1000, LAUNCH_MEMORY / 4), 4);
        assert_eq!(worker_count(16, 1000, 1 << 20), 16);
        assert_eq!(worker_count(16, 3, 0), 3);
        assert_eq!(worker_count(16, 1000, u64::MAX), 1);
        assert_eq!(worker_count(0, 0, 1), 1);
    }

    #[test]
    fn error_is_small() {
        assert!(std::mem::size_of::<KernelError>() <= 32);
        assert!(std::mem::size_of::<Result<(), Box<Exc>>>() <= 8);
    }
}
