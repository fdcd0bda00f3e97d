//! Kernel launches, kernel attributes and occupancy.

use std::cell::RefCell;
use std::ffi::c_void;
use std::os::raw::{c_int, c_uint};

use rcud_client::runtime::LaunchConfig;
use rcud_client::Runtime;
use rcud_proto::ops::{ATTR_CARVEOUT, ATTR_MAX_DYNAMIC_SHARED};
use rcud_proto::CudaError;

use crate::abi::launch::{CudaFuncAttributes, CudaLaunchConfig, Dim3, LaunchAttribute};
use crate::ffi::{guard, write_out, CudaErrorT};
use crate::graph::{capture, KernelArgs};

fn rt() -> &'static Runtime {
    Runtime::global()
}

thread_local! {
    /// Configurations pushed by `<<<...>>>` and not yet popped by the stub.
    static CALL_CONFIGS: RefCell<Vec<LaunchConfig>> = const { RefCell::new(Vec::new()) };
}

/// `<<<grid, block, shared, stream>>>` starts here. A non-zero return makes
/// nvcc's code skip the launch.
#[no_mangle]
pub extern "C" fn __cudaPushCallConfiguration(
    grid: Dim3,
    block: Dim3,
    shared_mem: usize,
    stream: *mut c_void,
) -> c_uint {
    CALL_CONFIGS.with(|c| {
        c.borrow_mut().push(LaunchConfig {
            grid: grid.into(),
            block: block.into(),
            shared_mem: shared_mem as u64,
            stream: stream as u64,
            cooperative: false,
        })
    });
    0
}

#[no_mangle]
pub extern "C" fn __cudaPopCallConfiguration(
    grid: *mut Dim3,
    block: *mut Dim3,
    shared_mem: *mut usize,
    stream: *mut *mut c_void,
) -> CudaErrorT {
    guard(|| {
        let config = CALL_CONFIGS
            .with(|c| c.borrow_mut().pop())
            .ok_or(CudaError::MISSING_CONFIGURATION)?;
        write_out(grid, Dim3::from(config.grid))?;
        write_out(block, Dim3::from(config.block))?;
        write_out(shared_mem, config.shared_mem as usize)?;
        write_out(stream, config.stream as *mut c_void)
    })
}

/// The kernel handle nvcc's launch code passes back is the host stub itself.
#[no_mangle]
pub extern "C" fn __cudaGetKernel(kernel: *mut *mut c_void, func: *const c_void) -> CudaErrorT {
    guard(|| {
        if !rt().is_kernel(func as u64) {
            return Err(CudaError::INVALID_DEVICE_FUNCTION);
        }
        write_out(kernel, func as *mut c_void)
    })
}

/// Launches the kernel whose host stub is `func` with `args`, one pointer per
/// parameter; its device `printf` output goes to the program's stdout.
pub(crate) fn launch(
    func: *const c_void,
    config: LaunchConfig,
    args: *mut *mut c_void,
) -> Result<(), CudaError> {
    let mut read_arg = |i: usize, dst: &mut [u8]| {
        if args.is_null() {
            return;
        }
        // SAFETY: nvcc's stubs and the cudaLaunchKernel contract pass one
        // pointer per kernel parameter, each to a value of the parameter's size.
        unsafe {
            let src = *args.add(i) as *const u8;
            if !src.is_null() {
                std::ptr::copy_nonoverlapping(src, dst.as_mut_ptr(), dst.len());
            }
        }
    };
    let node = || super::graph::launch_node(func as u64, &config, KernelArgs::Pointers(args));
    if capture::record(config.stream, node)? {
        return Ok(());
    }
    printf_to_stdout();
    super::managed::to_device_of_stream(config.stream);
    rt().launch(func as u64, &config, &mut read_arg)
}

/// Device `printf` output goes to the program's C `stdout`.
pub(crate) fn printf_to_stdout() {
    static SINK: std::sync::Once = std::sync::Once::new();
    SINK.call_once(|| rt().set_printf_sink(Box::new(crate::ffi::write_stdout)));
}

pub(crate) fn config(
    grid: Dim3,
    block: Dim3,
    shared_mem: usize,
    stream: *mut c_void,
) -> LaunchConfig {
    LaunchConfig {
        grid: grid.into(),
        block: block.into(),
        shared_mem: shared_mem as u64,
        stream: stream as u64,
        cooperative: false,
    }
}

with_ptsz! {
    fn __cudaLaunchKernel / __cudaLaunchKernel_ptsz (kernel: *const c_void, grid: Dim3, block: Dim3, args: *mut *mut c_void, shared_mem: usize, stream: *mut c_void) {
        launch(kernel, config(grid, block, shared_mem, stream), args)
    }
}

with_ptsz! {
    fn cudaLaunchCooperativeKernel / cudaLaunchCooperativeKernel_ptsz (func: *const c_void, grid: Dim3, block: Dim3, args: *mut *mut c_void, shared_mem: usize, stream: *mut c_void) {
        let config = LaunchConfig {
            cooperative: true,
            ..config(grid, block, shared_mem, stream)
        };
        launch(func, config, args)
    }
}

with_ptsz! {
    fn cudaLaunchKernel / cudaLaunchKernel_ptsz (func: *const c_void, grid: Dim3, block: Dim3, args: *mut *mut c_void, shared_mem: usize, stream: *mut c_void) {
        launch(func, config(grid, block, shared_mem, stream), args)
    }
}

pub(crate) fn launch_ex(
    cfg: *const CudaLaunchConfig,
    func: *const c_void,
    args: *mut *mut c_void,
) -> Result<(), CudaError> {
    if cfg.is_null() {
        return Err(CudaError::INVALID_VALUE);
    }
    // SAFETY: non-NULL, and the API requires a valid cudaLaunchConfig_t.
    let cfg = unsafe { &*cfg };
    let mut launch_config = config(
        cfg.grid_dim,
        cfg.block_dim,
        cfg.dynamic_smem_bytes,
        cfg.stream,
    );
    // SAFETY: the API contract makes `attrs` point to `num_attrs` entries.
    let attrs = unsafe { LaunchAttribute::list(cfg.attrs, cfg.num_attrs) };
    apply_launch_attributes("cudaLaunchKernelExC", attrs, &mut launch_config)?;
    launch(func, launch_config, args)
}

/// `cudaLaunchAttributeID` / `CUlaunchAttributeID` values.
mod attr {
    use std::os::raw::c_uint;
    pub(super) const IGNORE: c_uint = 0;
    pub(super) const ACCESS_POLICY_WINDOW: c_uint = 1;
    pub(super) const COOPERATIVE: c_uint = 2;
    pub(super) const SYNCHRONIZATION_POLICY: c_uint = 3;
    pub(super) const CLUSTER_DIMENSION: c_uint = 4;
    pub(super) const CLUSTER_SCHEDULING_POLICY: c_uint = 5;
    pub(super) const PROGRAMMATIC_STREAM_SERIALIZATION: c_uint = 6;
    pub(super) const PRIORITY: c_uint = 8;
    pub(super) const MEM_SYNC_DOMAIN_MAP: c_uint = 9;
    pub(super) const MEM_SYNC_DOMAIN: c_uint = 10;
    pub(super) const PREFERRED_SHARED_MEMORY_CARVEOUT: c_uint = 14;
    pub(super) const NVLINK_UTIL_CENTRIC_SCHEDULING: c_uint = 16;
}

/// Applies the attributes of an extended launch (`cudaLaunchKernelEx`,
/// `cuLaunchKernelEx`) to `config`. Hints a kernel's results never depend
/// on are accepted; programmatic serialization only lets a kernel overlap
/// the previous one (CUB and Thrust ask for it), and the device runs each
/// kernel to completion in order, which is what `griddepcontrol.wait` then
/// finds. A cluster of one block is an ordinary launch; larger clusters
/// need a device of compute capability 9.0 (the emulated one is 8.0, as
/// `cudaDevAttrClusterLaunch` says) and are refused, as is the rest that
/// changes what the kernel may rely on.
pub(crate) fn apply_launch_attributes(
    api: &str,
    attrs: &[LaunchAttribute],
    config: &mut LaunchConfig,
) -> Result<(), CudaError> {
    for a in attrs {
        match a.id {
            attr::COOPERATIVE => config.cooperative = a.word(0) != 0,
            attr::CLUSTER_DIMENSION if (0..3).all(|i| a.word(i) <= 1) => {}
            attr::IGNORE
            | attr::ACCESS_POLICY_WINDOW
            | attr::SYNCHRONIZATION_POLICY
            | attr::CLUSTER_SCHEDULING_POLICY
            | attr::PROGRAMMATIC_STREAM_SERIALIZATION
            | attr::PRIORITY
            | attr::MEM_SYNC_DOMAIN_MAP
            | attr::MEM_SYNC_DOMAIN
            | attr::PREFERRED_SHARED_MEMORY_CARVEOUT
            | attr::NVLINK_UTIL_CENTRIC_SCHEDULING => {}
            id => {
                eprintln!("rcud: {api}: launch attribute {id} is not supported by rcud");
                return Err(CudaError::NOT_SUPPORTED);
            }
        }
    }
    Ok(())
}

with_ptsz! {
    fn cudaLaunchKernelExC / cudaLaunchKernelExC_ptsz (cfg: *const CudaLaunchConfig, func: *const c_void, args: *mut *mut c_void) {
        launch_ex(cfg, func, args)
    }
}

#[no_mangle]
pub extern "C" fn cudaFuncGetAttributes(
    attr: *mut CudaFuncAttributes,
    func: *const c_void,
) -> CudaErrorT {
    guard(|| {
        let a = rt().kernel_attributes(func as u64)?;
        write_out(attr, CudaFuncAttributes::from_wire(&a))
    })
}

/// `cudaFuncGetName`: the kernel's (mangled) name, valid for the life of
/// the process.
#[no_mangle]
pub extern "C" fn cudaFuncGetName(
    name: *mut *const std::os::raw::c_char,
    func: *const c_void,
) -> CudaErrorT {
    guard(|| {
        if name.is_null() || func.is_null() {
            return Err(CudaError::INVALID_VALUE);
        }
        let n = crate::driver::module::static_name(func as u64)
            .map_err(|_| CudaError::INVALID_DEVICE_FUNCTION)?;
        write_out(name, n)
    })
}

/// `cudaFuncGetParamCount`, from the kernel's PTX parameter list.
#[no_mangle]
pub extern "C" fn cudaFuncGetParamCount(func: *const c_void, count: *mut usize) -> CudaErrorT {
    guard(|| {
        let d = rt().current_device()?;
        write_out(count, rt().kernel_params(d, func as u64)?.len())
    })
}

/// `cudaFuncGetParamInfo`: offset and size of parameter `index`.
#[no_mangle]
pub extern "C" fn cudaFuncGetParamInfo(
    func: *const c_void,
    index: usize,
    offset: *mut usize,
    size: *mut usize,
) -> CudaErrorT {
    guard(|| {
        let d = rt().current_device()?;
        let params = rt().kernel_params(d, func as u64)?;
        let &(o, s) = params.get(index).ok_or(CudaError::INVALID_VALUE)?;
        if !offset.is_null() {
            write_out(offset, o)?;
        }
        if !size.is_null() {
            write_out(size, s)?;
        }
        Ok(())
    })
}

#[no_mangle]
pub extern "C" fn cudaFuncSetAttribute(
    func: *const c_void,
    attr: c_int,
    value: c_int,
) -> CudaErrorT {
    guard(|| set_function_attribute(func, attr, value))
}

/// `cudaFuncSetAttribute` on the current device.
pub(crate) fn set_function_attribute(
    func: *const c_void,
    attr: c_int,
    value: c_int,
) -> Result<(), CudaError> {
    match attr {
        ATTR_MAX_DYNAMIC_SHARED | ATTR_CARVEOUT => {
            rt().set_kernel_attribute(func as u64, attr, value)
        }
        _ => Err(CudaError::INVALID_VALUE),
    }
}

/// A cache-configuration hint: accepted and ignored, as CUDA does on devices
/// without a configurable L1/shared split.
#[no_mangle]
pub extern "C" fn cudaFuncSetCacheConfig(func: *const c_void, _config: c_int) -> CudaErrorT {
    guard(|| {
        if !rt().is_kernel(func as u64) {
            return Err(CudaError::INVALID_DEVICE_FUNCTION);
        }
        Ok(())
    })
}

/// Active blocks per multiprocessor, from the device's limits and the
/// kernel's block size, static and dynamic shared memory, and registers.
pub(crate) fn occupancy(
    func: *const c_void,
    block_size: c_int,
    dynamic_smem: usize,
) -> Result<c_int, CudaError> {
    if block_size <= 0 {
        return Err(CudaError::INVALID_VALUE);
    }
    let rt = rt();
    let attrs = rt.kernel_attributes(func as u64)?;
    let props = rt.props(rt.current_device()? as c_int)?;
    let blocks = attrs.blocks_per_multiprocessor(props, block_size as u32, dynamic_smem as u64);
    Ok(c_int::try_from(blocks).unwrap_or(c_int::MAX))
}

#[no_mangle]
pub extern "C" fn cudaOccupancyMaxActiveBlocksPerMultiprocessor(
    num_blocks: *mut c_int,
    func: *const c_void,
    block_size: c_int,
    dynamic_smem: usize,
) -> CudaErrorT {
    guard(|| write_out(num_blocks, occupancy(func, block_size, dynamic_smem)?))
}

#[no_mangle]
pub extern "C" fn cudaOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(
    num_blocks: *mut c_int,
    func: *const c_void,
    block_size: c_int,
    dynamic_smem: usize,
    _flags: c_uint,
) -> CudaErrorT {
    guard(|| write_out(num_blocks, occupancy(func, block_size, dynamic_smem)?))
}

/// Bank sizes are fixed on current GPUs: accepted for a kernel.
#[no_mangle]
pub extern "C" fn cudaFuncSetSharedMemConfig(func: *const c_void, config: c_int) -> CudaErrorT {
    guard(|| {
        rt().kernel_attributes(func as u64)?;
        match config {
            0..=2 => Ok(()),
            _ => Err(CudaError::INVALID_VALUE),
        }
    })
}

/// `cudaOccupancyAvailableDynamicSMemPerBlock`: the dynamic shared memory
/// each of `blocks` blocks of `block_size` threads can have on one SM.
#[no_mangle]
pub extern "C" fn cudaOccupancyAvailableDynamicSMemPerBlock(
    size: *mut usize,
    func: *const c_void,
    blocks: c_int,
    block_size: c_int,
) -> CudaErrorT {
    guard(|| write_out(size, available_dynamic_smem(func, blocks, block_size)?))
}

/// The dynamic shared memory per block that lets `blocks` blocks of
/// kernel `func` (a host stub or a driver function) share one SM.
pub(crate) fn available_dynamic_smem(
    func: *const c_void,
    blocks: c_int,
    block_size: c_int,
) -> Result<usize, CudaError> {
    if blocks <= 0 || block_size <= 0 {
        return Err(CudaError::INVALID_VALUE);
    }
    if occupancy(func, block_size, 0)? < blocks {
        return Ok(0);
    }
    let attrs = rt().kernel_attributes(func as u64)?;
    let props = rt().props(rt().current_device()? as c_int)?;
    let per_block = props.shared_mem_per_multiprocessor / blocks as u64;
    let dynamic = per_block
        .saturating_sub(attrs.shared_size_bytes)
        .min(attrs.max_dynamic_shared_size_bytes.max(0) as u64);
    Ok(dynamic as usize)
}

/// The cluster shape a launch's attributes ask for, if any.
fn cluster_dims(attrs: &[LaunchAttribute]) -> Option<[u32; 3]> {
    attrs
        .iter()
        .rfind(|a| a.id == attr::CLUSTER_DIMENSION)
        .map(|a| [a.word(0), a.word(1), a.word(2)])
}

/// `cudaOccupancyMaxActiveClusters`: the emulated device (compute
/// capability 8.0, `cudaDevAttrClusterLaunch` 0) runs clusters of one
/// block only, so the clusters that fit are the blocks that fit; a larger
/// cluster, or none named (no kernel here requires a cluster size), is an
/// invalid cluster size.
pub(crate) fn max_active_clusters(
    func: *const c_void,
    block: [u32; 3],
    dynamic_smem: u64,
    attrs: &[LaunchAttribute],
) -> Result<c_int, CudaError> {
    rt().kernel_attributes(func as u64)?;
    match cluster_dims(attrs) {
        Some(dims) if dims.iter().all(|&d| d == 1) => {}
        _ => return Err(CudaError::INVALID_CLUSTER_SIZE),
    }
    let threads = block.iter().try_fold(1u32, |n, &d| n.checked_mul(d));
    let threads = threads
        .and_then(|t| c_int::try_from(t).ok())
        .ok_or(CudaError::INVALID_VALUE)?;
    let smem = usize::try_from(dynamic_smem).map_err(|_| CudaError::INVALID_VALUE)?;
    let per_sm = occupancy(func, threads, smem)?;
    let sms = rt()
        .props(rt().current_device()? as c_int)?
        .multi_processor_count;
    Ok(per_sm.saturating_mul(sms))
}

/// `cudaOccupancyMaxPotentialClusterSize`: one block, the only cluster the
/// emulated device runs.
pub(crate) fn max_potential_cluster_size(func: *const c_void) -> Result<c_int, CudaError> {
    rt().kernel_attributes(func as u64)?;
    Ok(1)
}

#[no_mangle]
pub extern "C" fn cudaOccupancyMaxActiveClusters(
    clusters: *mut c_int,
    func: *const c_void,
    cfg: *const CudaLaunchConfig,
) -> CudaErrorT {
    guard(|| {
        // SAFETY: the API passes a valid configuration or NULL.
        let cfg = unsafe { cfg.as_ref() }.ok_or(CudaError::INVALID_VALUE)?;
        // SAFETY: the API makes `attrs` point to `num_attrs` entries.
        let attrs = unsafe { LaunchAttribute::list(cfg.attrs, cfg.num_attrs) };
        let n = max_active_clusters(
            func,
            cfg.block_dim.into(),
            cfg.dynamic_smem_bytes as u64,
            attrs,
        )?;
        write_out(clusters, n)
    })
}

#[no_mangle]
pub extern "C" fn cudaOccupancyMaxPotentialClusterSize(
    size: *mut c_int,
    func: *const c_void,
    cfg: *const CudaLaunchConfig,
) -> CudaErrorT {
    guard(|| {
        if cfg.is_null() {
            return Err(CudaError::INVALID_VALUE);
        }
        write_out(size, max_potential_cluster_size(func)?)
    })
}

/// `cudaGetFuncBySymbol`: a kernel's host stub is its function handle here
/// (as `cudaGetKernel` returns it), usable with the driver API too.
#[no_mangle]
pub extern "C" fn cudaGetFuncBySymbol(
    function: *mut *mut c_void,
    symbol: *const c_void,
) -> CudaErrorT {
    guard(|| {
        if function.is_null() || symbol.is_null() {
            return Err(CudaError::INVALID_VALUE);
        }
        rt().function_name(symbol as u64)
            .map_err(|_| CudaError::INVALID_DEVICE_FUNCTION)?;
        write_out(function, symbol as *mut c_void)
    })
}
