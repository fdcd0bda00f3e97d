//! Kernel launches, kernel attributes and occupancy.

use std::cell::RefCell;
use std::ffi::c_void;
use std::os::raw::{c_int, c_uint};

use rcud_client::runtime::LaunchConfig;
use rcud_client::Runtime;
use rcud_proto::ops::{ATTR_CARVEOUT, ATTR_MAX_DYNAMIC_SHARED};
use rcud_proto::CudaError;

use crate::abi::launch::{CudaFuncAttributes, CudaLaunchConfig, Dim3};
use crate::ffi::{guard, write_out, CudaErrorT};
use crate::graph::{capture, KernelArgs};

fn rt() -> &'static Runtime {
    Runtime::global()
}

/// `cudaLaunchAttributeID` values accepted as hints.
const LAUNCH_ATTR_IGNORE: c_int = 0;
const LAUNCH_ATTR_ACCESS_POLICY_WINDOW: c_int = 1;
const LAUNCH_ATTR_PRIORITY: c_int = 8;

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
    }
}

with_ptsz! {
    fn __cudaLaunchKernel / __cudaLaunchKernel_ptsz (kernel: *const c_void, grid: Dim3, block: Dim3, args: *mut *mut c_void, shared_mem: usize, stream: *mut c_void) {
        launch(kernel, config(grid, block, shared_mem, stream), args)
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
    let attrs = if cfg.num_attrs == 0 || cfg.attrs.is_null() {
        &[][..]
    } else {
        // SAFETY: the API contract makes `attrs` point to `num_attrs` entries.
        unsafe { std::slice::from_raw_parts(cfg.attrs, cfg.num_attrs as usize) }
    };
    for attr in attrs {
        match attr.id {
            // Ignored entries, cache-persistence windows and priorities are
            // hints a kernel's results never depend on.
            LAUNCH_ATTR_IGNORE | LAUNCH_ATTR_ACCESS_POLICY_WINDOW | LAUNCH_ATTR_PRIORITY => {}
            // Co-residency of all blocks (grid-wide sync), clusters and the
            // rest change what the kernel may rely on: refuse them clearly.
            id => {
                eprintln!(
                    "rcud: cudaLaunchKernelExC: launch attribute {id} (cudaLaunchAttributeID) is not supported by rcud"
                );
                return Err(CudaError::NOT_SUPPORTED);
            }
        }
    }
    launch(
        func,
        config(
            cfg.grid_dim,
            cfg.block_dim,
            cfg.dynamic_smem_bytes,
            cfg.stream,
        ),
        args,
    )
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
    let warps_per_block = (block_size as u64).div_ceil(props.warp_size.max(1) as u64);
    let max_warps = (props.max_threads_per_multi_processor / props.warp_size.max(1)) as u64;
    let by_threads = max_warps / warps_per_block.max(1);
    let shared = attrs.shared_size_bytes + dynamic_smem as u64;
    let by_shared = match shared {
        0 => u64::MAX,
        s => props.shared_mem_per_multiprocessor / s,
    };
    let regs = attrs.num_regs.max(1) as u64 * block_size as u64;
    let by_regs = props.regs_per_multiprocessor as u64 / regs.max(1);
    let blocks = by_threads
        .min(by_shared)
        .min(by_regs)
        .min(props.max_blocks_per_multi_processor as u64);
    Ok(blocks as c_int)
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
