//! C ABI types of kernel launches, laid out as in CUDA 13's headers (sizes
//! checked at compile time against values read off the headers with a C
//! compiler: cudaFuncAttributes 144, cudaLaunchConfig_t 56,
//! cudaLaunchAttribute 72).

use std::ffi::c_void;
use std::os::raw::{c_int, c_uint};

use rcud_proto::ops::FuncAttributes;

/// `dim3`.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Dim3 {
    pub(crate) x: c_uint,
    pub(crate) y: c_uint,
    pub(crate) z: c_uint,
}

impl From<Dim3> for [u32; 3] {
    fn from(d: Dim3) -> Self {
        [d.x, d.y, d.z]
    }
}

impl From<[u32; 3]> for Dim3 {
    fn from([x, y, z]: [u32; 3]) -> Self {
        Self { x, y, z }
    }
}

/// `struct cudaFuncAttributes`.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub(crate) struct CudaFuncAttributes {
    shared_size_bytes: usize,
    const_size_bytes: usize,
    local_size_bytes: usize,
    max_threads_per_block: c_int,
    num_regs: c_int,
    ptx_version: c_int,
    binary_version: c_int,
    cache_mode_ca: c_int,
    max_dynamic_shared_size_bytes: c_int,
    preferred_shmem_carveout: c_int,
    cluster_dim_must_be_set: c_int,
    required_cluster_width: c_int,
    required_cluster_height: c_int,
    required_cluster_depth: c_int,
    cluster_scheduling_policy_preference: c_int,
    non_portable_cluster_size_allowed: c_int,
    device_node_update_status: c_int,
    shared_memory_mode: c_int,
    reserved: [c_int; 14],
}

const _: () = assert!(std::mem::size_of::<CudaFuncAttributes>() == 144);
const _: () =
    assert!(std::mem::offset_of!(CudaFuncAttributes, max_dynamic_shared_size_bytes) == 44);
const _: () = assert!(std::mem::offset_of!(CudaFuncAttributes, shared_memory_mode) == 80);

impl CudaFuncAttributes {
    pub(crate) fn from_wire(a: &FuncAttributes) -> Self {
        Self {
            shared_size_bytes: a.shared_size_bytes as usize,
            const_size_bytes: a.const_size_bytes as usize,
            local_size_bytes: a.local_size_bytes as usize,
            max_threads_per_block: a.max_threads_per_block,
            num_regs: a.num_regs,
            ptx_version: a.ptx_version,
            binary_version: a.binary_version,
            cache_mode_ca: 0,
            max_dynamic_shared_size_bytes: a.max_dynamic_shared_size_bytes,
            preferred_shmem_carveout: a.preferred_shmem_carveout,
            cluster_dim_must_be_set: 0,
            required_cluster_width: 0,
            required_cluster_height: 0,
            required_cluster_depth: 0,
            cluster_scheduling_policy_preference: 0,
            non_portable_cluster_size_allowed: 0,
            device_node_update_status: 0,
            shared_memory_mode: 0,
            reserved: [0; 14],
        }
    }
}

/// `cudaLaunchAttribute` and `CUlaunchAttribute` (one id space): an id
/// and a 64-byte value union.
#[repr(C)]
#[derive(Debug)]
pub(crate) struct LaunchAttribute {
    pub(crate) id: c_uint,
    _pad: [u8; 4],
    pub(crate) value: [u8; 64],
}

const _: () = assert!(std::mem::size_of::<LaunchAttribute>() == 72);

impl LaunchAttribute {
    /// The `n`-th 32-bit word of the value.
    pub(crate) fn word(&self, n: usize) -> u32 {
        let mut w = [0u8; 4];
        w.copy_from_slice(&self.value[n * 4..n * 4 + 4]);
        u32::from_ne_bytes(w)
    }

    /// The `n` attributes at `attrs` (none when NULL).
    ///
    /// # Safety
    /// A non-NULL `attrs` points to `n` attributes that outlive the result.
    pub(crate) unsafe fn list<'a>(attrs: *const LaunchAttribute, n: c_uint) -> &'a [Self] {
        if n == 0 || attrs.is_null() {
            return &[];
        }
        // SAFETY: the caller's contract.
        unsafe { std::slice::from_raw_parts(attrs, n as usize) }
    }
}

/// `cudaLaunchConfig_t`.
#[repr(C)]
#[derive(Debug)]
pub(crate) struct CudaLaunchConfig {
    pub(crate) grid_dim: Dim3,
    pub(crate) block_dim: Dim3,
    pub(crate) dynamic_smem_bytes: usize,
    pub(crate) stream: *mut c_void,
    pub(crate) attrs: *const LaunchAttribute,
    pub(crate) num_attrs: c_uint,
}

const _: () = assert!(std::mem::size_of::<CudaLaunchConfig>() == 56);
const _: () = assert!(std::mem::offset_of!(CudaLaunchConfig, attrs) == 40);
