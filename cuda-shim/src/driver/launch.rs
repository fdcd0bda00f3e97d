//! Kernel launches: `cuLaunchKernel` with `kernelParams` or `extra`, and
//! `cuLaunchKernelEx`. They take the runtime's path, so they are queued and
//! batched exactly like `<<<...>>>` launches.

use std::collections::HashMap;
use std::ffi::c_void;
use std::os::raw::{c_int, c_uint};
use std::sync::Mutex;

use rcud_client::runtime::LaunchConfig;

use super::{context_device, out, rt, DriverError, DriverResult};
use crate::abi::launch::LaunchAttribute;
use crate::cudart::launch::{apply_launch_attributes, printf_to_stdout};
use crate::graph::{capture, kernel_args, KernelArgs as Args};

fn launch(
    function: u64,
    config: LaunchConfig,
    params: *mut *mut c_void,
    extra: *mut *mut c_void,
) -> DriverResult {
    context_device()?;
    if function == 0 {
        return Err(DriverError::INVALID_HANDLE);
    }
    let args = kernel_args(params, extra)?;
    super::texref::before_launch(function)?;
    let node = || crate::cudart::graph::launch_node(function, &config, args);
    if capture::record(config.stream, node)? {
        return Ok(());
    }
    printf_to_stdout();
    crate::cudart::managed::to_device_of_stream(config.stream);
    match args {
        Args::Pointers(p) => {
            let mut read_arg = |i: usize, dst: &mut [u8]| {
                if p.is_null() {
                    return;
                }
                // SAFETY: kernelParams holds one pointer per parameter, each
                // to a value of the parameter's size.
                unsafe {
                    let src = *p.add(i) as *const u8;
                    if !src.is_null() {
                        std::ptr::copy_nonoverlapping(src, dst.as_mut_ptr(), dst.len());
                    }
                }
            };
            Ok(rt().launch(function, &config, &mut read_arg)?)
        }
        Args::Buffer(b, size) => {
            let packed = if size == 0 {
                &[][..]
            } else {
                // SAFETY: the `extra` array names `size` bytes at `b`.
                unsafe { std::slice::from_raw_parts(b, size) }
            };
            Ok(rt().launch_packed(function, &config, packed)?)
        }
    }
}

driver_fn! { [cuLaunchKernel, cuLaunchKernel_ptsz] (function: u64, gx: c_uint, gy: c_uint, gz: c_uint, bx: c_uint, by: c_uint, bz: c_uint, shared_mem: c_uint, stream: *mut c_void, params: *mut *mut c_void, extra: *mut *mut c_void) {
    let config = LaunchConfig {
        grid: [gx, gy, gz],
        block: [bx, by, bz],
        shared_mem: u64::from(shared_mem),
        stream: stream as u64,
        cooperative: false,
    };
    launch(function, config, params, extra)
} }

driver_fn! { [cuLaunchCooperativeKernel, cuLaunchCooperativeKernel_ptsz] (function: u64, gx: c_uint, gy: c_uint, gz: c_uint, bx: c_uint, by: c_uint, bz: c_uint, shared_mem: c_uint, stream: *mut c_void, params: *mut *mut c_void) {
    let config = LaunchConfig {
        grid: [gx, gy, gz],
        block: [bx, by, bz],
        shared_mem: u64::from(shared_mem),
        stream: stream as u64,
        cooperative: true,
    };
    launch(function, config, params, std::ptr::null_mut())
} }

/// `CUlaunchConfig`.
#[repr(C)]
pub struct LaunchConfigEx {
    grid: [c_uint; 3],
    block: [c_uint; 3],
    shared_mem: c_uint,
    stream: *mut c_void,
    attrs: *const LaunchAttribute,
    num_attrs: c_uint,
}

driver_fn! { [cuLaunchKernelEx, cuLaunchKernelEx_ptsz] (config: *const LaunchConfigEx, function: u64, params: *mut *mut c_void, extra: *mut *mut c_void) {
    if config.is_null() {
        return Err(DriverError::INVALID_VALUE);
    }
    // SAFETY: non-NULL, and the API passes a valid CUlaunchConfig.
    let c = unsafe { &*config };
    let mut launch_config = LaunchConfig {
        grid: c.grid,
        block: c.block,
        shared_mem: u64::from(c.shared_mem),
        stream: c.stream as u64,
        cooperative: false,
    };
    // SAFETY: the API makes `attrs` point to `num_attrs` entries.
    let attrs = unsafe { LaunchAttribute::list(c.attrs, c.num_attrs) };
    apply_launch_attributes("cuLaunchKernelEx", attrs, &mut launch_config)?;
    launch(function, launch_config, params, extra)
} }

// ---- the pre-CUDA 4.0 launch API ------------------------------------------

/// What the pre-CUDA 4.0 calls set on a function before `cuLaunch*`: its
/// block shape, dynamic shared memory and the packed parameter buffer.
#[derive(Default)]
struct LegacyLaunch {
    block: [c_uint; 3],
    shared_mem: c_uint,
    params: Vec<u8>,
}

/// The settings of each function the old API has touched, by handle.
static LEGACY: Mutex<Option<HashMap<u64, LegacyLaunch>>> = Mutex::new(None);

/// The parameter buffer of the old API holds at most this (CUDA's limit of
/// 4 KiB of kernel parameters before CUDA 12.1).
const LEGACY_PARAM_BYTES: usize = 4096;

fn with_legacy<R>(function: u64, f: impl FnOnce(&mut LegacyLaunch) -> R) -> Result<R, DriverError> {
    context_device()?;
    if function == 0 {
        return Err(DriverError::INVALID_HANDLE);
    }
    let mut guard = LEGACY
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    let map = guard.get_or_insert_with(HashMap::new);
    Ok(f(map.entry(function).or_insert_with(|| LegacyLaunch {
        block: [1, 1, 1],
        ..LegacyLaunch::default()
    })))
}

/// Copies `bytes` into the function's parameter buffer at `offset`, which
/// `cuParamSetSize` sized.
fn set_param(function: u64, offset: c_int, bytes: &[u8]) -> DriverResult {
    let offset = usize::try_from(offset).map_err(|_| DriverError::INVALID_VALUE)?;
    with_legacy(function, |l| {
        let end = offset
            .checked_add(bytes.len())
            .filter(|&e| e <= l.params.len());
        let Some(end) = end else {
            return Err(DriverError::INVALID_VALUE);
        };
        l.params[offset..end].copy_from_slice(bytes);
        Ok(())
    })?
}

driver_fn! { cuFuncSetBlockShape (function: u64, x: c_int, y: c_int, z: c_int) {
    let dims = [x, y, z].map(|d| c_uint::try_from(d).unwrap_or(0));
    if dims.contains(&0) {
        return Err(DriverError::INVALID_VALUE);
    }
    with_legacy(function, |l| l.block = dims)
} }

driver_fn! { cuFuncSetSharedSize (function: u64, bytes: c_uint) {
    with_legacy(function, |l| l.shared_mem = bytes)
} }

driver_fn! { cuParamSetSize (function: u64, bytes: c_uint) {
    let bytes = bytes as usize;
    if bytes > LEGACY_PARAM_BYTES {
        return Err(DriverError::INVALID_VALUE);
    }
    with_legacy(function, |l| l.params.resize(bytes, 0))
} }

driver_fn! { cuParamSeti (function: u64, offset: c_int, value: c_uint) {
    set_param(function, offset, &value.to_ne_bytes())
} }

driver_fn! { cuParamSetf (function: u64, offset: c_int, value: f32) {
    set_param(function, offset, &value.to_ne_bytes())
} }

driver_fn! { cuParamSetv (function: u64, offset: c_int, ptr: *const c_void, bytes: c_uint) {
    if ptr.is_null() && bytes != 0 {
        return Err(DriverError::INVALID_VALUE);
    }
    let value = if bytes == 0 {
        &[][..]
    } else {
        // SAFETY: the API passes `bytes` readable bytes at `ptr`.
        unsafe { std::slice::from_raw_parts(ptr.cast::<u8>(), bytes as usize) }
    };
    set_param(function, offset, value)
} }

/// `cuLaunchGrid*`: the settings made so far, as one `cuLaunchKernel` with
/// the parameter buffer in `extra`.
fn legacy_launch(function: u64, grid: [c_int; 2], stream: *mut c_void) -> DriverResult {
    let grid = grid.map(|d| c_uint::try_from(d).unwrap_or(0));
    if grid.contains(&0) {
        return Err(DriverError::INVALID_VALUE);
    }
    let (block, shared_mem, mut params) =
        with_legacy(function, |l| (l.block, l.shared_mem, l.params.clone()))?;
    let config = LaunchConfig {
        grid: [grid[0], grid[1], 1],
        block,
        shared_mem: u64::from(shared_mem),
        stream: stream as u64,
        cooperative: false,
    };
    let mut size = params.len();
    let mut extra = [
        BUFFER_POINTER,
        params.as_mut_ptr().cast::<c_void>(),
        BUFFER_SIZE,
        (&mut size as *mut usize).cast::<c_void>(),
        std::ptr::null_mut(),
    ];
    launch(function, config, std::ptr::null_mut(), extra.as_mut_ptr())
}

/// `CU_LAUNCH_PARAM_BUFFER_POINTER` and `CU_LAUNCH_PARAM_BUFFER_SIZE`:
/// markers, not addresses.
const BUFFER_POINTER: *mut c_void = std::ptr::without_provenance_mut(1);
const BUFFER_SIZE: *mut c_void = std::ptr::without_provenance_mut(2);

driver_fn! { cuLaunch (function: u64) {
    legacy_launch(function, [1, 1], std::ptr::null_mut())
} }

driver_fn! { cuLaunchGrid (function: u64, width: c_int, height: c_int) {
    legacy_launch(function, [width, height], std::ptr::null_mut())
} }

driver_fn! { cuLaunchGridAsync (function: u64, width: c_int, height: c_int, stream: *mut c_void) {
    legacy_launch(function, [width, height], stream)
} }

driver_fn! { cuOccupancyAvailableDynamicSMemPerBlock (size: *mut usize, function: u64, blocks: c_int, block_size: c_int) {
    context_device()?;
    let f = function as *const c_void;
    out(size, crate::cudart::launch::available_dynamic_smem(f, blocks, block_size)?)
} }

driver_fn! { cuOccupancyMaxActiveClusters (clusters: *mut c_int, function: u64, config: *const LaunchConfigEx) {
    context_device()?;
    // SAFETY: the API passes a valid CUlaunchConfig or NULL.
    let c = unsafe { config.as_ref() }.ok_or(DriverError::INVALID_VALUE)?;
    // SAFETY: the API makes `attrs` point to `num_attrs` entries.
    let attrs = unsafe { LaunchAttribute::list(c.attrs, c.num_attrs) };
    let f = function as *const c_void;
    let n = crate::cudart::launch::max_active_clusters(f, c.block, u64::from(c.shared_mem), attrs)?;
    out(clusters, n)
} }

driver_fn! { cuOccupancyMaxPotentialClusterSize (size: *mut c_int, function: u64, config: *const LaunchConfigEx) {
    context_device()?;
    if config.is_null() {
        return Err(DriverError::INVALID_VALUE);
    }
    out(size, crate::cudart::launch::max_potential_cluster_size(function as *const c_void)?)
} }

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn c_layouts_match_cuda_h() {
        assert_eq!(std::mem::size_of::<LaunchAttribute>(), 72);
        assert_eq!(std::mem::offset_of!(LaunchConfigEx, stream), 32);
        assert_eq!(std::mem::offset_of!(LaunchConfigEx, attrs), 40);
        assert_eq!(std::mem::offset_of!(LaunchConfigEx, num_attrs), 48);
    }
}
