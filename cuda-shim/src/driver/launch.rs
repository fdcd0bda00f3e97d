//! Kernel launches: `cuLaunchKernel` with `kernelParams` or `extra`, and
//! `cuLaunchKernelEx`. They take the runtime's path, so they are queued and
//! batched exactly like `<<<...>>>` launches.

use std::ffi::c_void;
use std::os::raw::{c_int, c_uint};

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
