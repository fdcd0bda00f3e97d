//! C ABI types of kernel launches, laid out as in CUDA 13's headers (sizes
//! checked at compile time against values read off the headers with a C
//! compiler: cudaFuncAttributes 144, cudaLaunchConfig_t 56,
//! cudaLaunchAttribute 72).

use std::ffi::c_void;
use std::os::raw::{c_int, c_uint};

use rcud_proto::ops::FuncAttributes;
use rcud_proto::CudaError;

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

/// `cudaLaunchAttributeValue` / `CUlaunchAttributeValue`: a 64-byte union.
pub(crate) type AttrValue = [u8; 64];

/// `cudaLaunchAttributeID` values kept by streams and kernel nodes.
pub(crate) mod attr_id {
    use std::os::raw::c_uint;
    pub(crate) const ACCESS_POLICY_WINDOW: c_uint = 1;
    pub(crate) const COOPERATIVE: c_uint = 2;
    pub(crate) const SYNCHRONIZATION_POLICY: c_uint = 3;
    pub(crate) const CLUSTER_DIMENSION: c_uint = 4;
    pub(crate) const CLUSTER_SCHEDULING_POLICY: c_uint = 5;
    pub(crate) const PRIORITY: c_uint = 8;
    pub(crate) const MEM_SYNC_DOMAIN_MAP: c_uint = 9;
    pub(crate) const MEM_SYNC_DOMAIN: c_uint = 10;
    pub(crate) const PREFERRED_CLUSTER_DIMENSION: c_uint = 11;
    pub(crate) const DEVICE_UPDATABLE_KERNEL_NODE: c_uint = 13;
    pub(crate) const PREFERRED_SHARED_MEMORY_CARVEOUT: c_uint = 14;
    pub(crate) const NVLINK_UTIL_CENTRIC_SCHEDULING: c_uint = 16;
    pub(crate) const PORTABLE_CLUSTER_SIZE_MODE: c_uint = 17;
}

/// What holds a set of launch attributes: CUDA's headers list which
/// attributes each accepts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum AttrHolder {
    Stream,
    KernelNode,
}

/// `cudaSynchronizationPolicy`: `cudaSyncPolicyAuto` .. `BlockingSync`.
const SYNC_POLICY_AUTO: u32 = 1;
const SYNC_POLICY_BLOCKING_SYNC: u32 = 4;
/// `cudaAccessPropertyPersisting`, the largest `cudaAccessProperty`.
const ACCESS_PROPERTY_PERSISTING: u32 = 2;

/// Launch attributes set on a stream or kernel node, by id; an attribute
/// never set reads as CUDA's default. The emulated device has no L2 to
/// partition, no memory-synchronization domains and no clusters, so the
/// values change no result: they are validated as CUDA validates them,
/// kept, and reported back.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct LaunchAttrs(std::collections::BTreeMap<c_uint, AttrValue>);

fn word(v: &AttrValue, n: usize) -> u32 {
    let mut w = [0u8; 4];
    w.copy_from_slice(&v[n * 4..n * 4 + 4]);
    u32::from_ne_bytes(w)
}

fn set_word(v: &mut AttrValue, n: usize, x: u32) {
    v[n * 4..n * 4 + 4].copy_from_slice(&x.to_ne_bytes());
}

fn u64_at(v: &AttrValue, offset: usize) -> u64 {
    let mut w = [0u8; 8];
    w.copy_from_slice(&v[offset..offset + 8]);
    u64::from_ne_bytes(w)
}

impl LaunchAttrs {
    /// Whether `holder` accepts attribute `id`.
    fn accepts(holder: AttrHolder, id: c_uint) -> bool {
        use attr_id::*;
        match holder {
            AttrHolder::Stream => matches!(
                id,
                ACCESS_POLICY_WINDOW
                    | SYNCHRONIZATION_POLICY
                    | PRIORITY
                    | MEM_SYNC_DOMAIN_MAP
                    | MEM_SYNC_DOMAIN
                    | NVLINK_UTIL_CENTRIC_SCHEDULING
            ),
            AttrHolder::KernelNode => matches!(
                id,
                ACCESS_POLICY_WINDOW
                    | COOPERATIVE
                    | CLUSTER_DIMENSION
                    | CLUSTER_SCHEDULING_POLICY
                    | PRIORITY
                    | MEM_SYNC_DOMAIN_MAP
                    | MEM_SYNC_DOMAIN
                    | PREFERRED_CLUSTER_DIMENSION
                    | DEVICE_UPDATABLE_KERNEL_NODE
                    | PREFERRED_SHARED_MEMORY_CARVEOUT
                    | NVLINK_UTIL_CENTRIC_SCHEDULING
                    | PORTABLE_CLUSTER_SIZE_MODE
            ),
        }
    }

    /// CUDA's value of an attribute never set.
    fn default_value(id: c_uint) -> AttrValue {
        let mut v = [0u8; 64];
        match id {
            attr_id::SYNCHRONIZATION_POLICY => set_word(&mut v, 0, SYNC_POLICY_AUTO),
            // Kernels of the default domain use domain 0, remote ones 1.
            attr_id::MEM_SYNC_DOMAIN_MAP => v[1] = 1,
            _ => {}
        }
        v
    }

    /// Sets attribute `id` of a `holder` on a device whose access-policy
    /// window may span `max_window` bytes.
    pub(crate) fn set(
        &mut self,
        holder: AttrHolder,
        id: c_uint,
        value: &AttrValue,
        max_window: u64,
    ) -> Result<(), CudaError> {
        use attr_id::*;
        if !Self::accepts(holder, id) {
            return Err(CudaError::INVALID_VALUE);
        }
        let mut v = *value;
        let valid = match id {
            // cudaAccessPolicyWindow: base_ptr, num_bytes, hitRatio, hitProp,
            // missProp (which may not be persisting).
            ACCESS_POLICY_WINDOW => {
                let hit_ratio = f32::from_bits(word(&v, 4));
                u64_at(&v, 8) <= max_window
                    && (0.0..=1.0).contains(&hit_ratio)
                    && word(&v, 5) <= ACCESS_PROPERTY_PERSISTING
                    && word(&v, 6) < ACCESS_PROPERTY_PERSISTING
            }
            SYNCHRONIZATION_POLICY => {
                (SYNC_POLICY_AUTO..=SYNC_POLICY_BLOCKING_SYNC).contains(&word(&v, 0))
            }
            // Clusters of more than one block need compute capability 9.0.
            CLUSTER_DIMENSION => (0..3).all(|i| word(&v, i) <= 1),
            PREFERRED_CLUSTER_DIMENSION => (0..3).all(|i| word(&v, i) <= 1),
            CLUSTER_SCHEDULING_POLICY => word(&v, 0) <= 2,
            MEM_SYNC_DOMAIN => word(&v, 0) <= 1,
            PREFERRED_SHARED_MEMORY_CARVEOUT => word(&v, 0) <= 100,
            NVLINK_UTIL_CENTRIC_SCHEDULING | COOPERATIVE => word(&v, 0) <= 1,
            PORTABLE_CLUSTER_SIZE_MODE => word(&v, 0) <= 2,
            // Device-side node updates need a GPU's scheduler.
            DEVICE_UPDATABLE_KERNEL_NODE => word(&v, 0) == 0,
            _ => true,
        };
        if !valid {
            return Err(CudaError::INVALID_VALUE);
        }
        if id == PRIORITY {
            let p = word(&v, 0) as i32;
            let p = p.clamp(
                rcud_client::runtime::STREAM_PRIORITY_GREATEST,
                rcud_client::runtime::STREAM_PRIORITY_LEAST,
            );
            set_word(&mut v, 0, p as u32);
        }
        self.0.insert(id, v);
        Ok(())
    }

    /// Attribute `id` of a `holder`: as set, else CUDA's default.
    pub(crate) fn get(&self, holder: AttrHolder, id: c_uint) -> Result<AttrValue, CudaError> {
        if !Self::accepts(holder, id) {
            return Err(CudaError::INVALID_VALUE);
        }
        Ok(self
            .0
            .get(&id)
            .copied()
            .unwrap_or_else(|| Self::default_value(id)))
    }
}

/// Reads a `cudaLaunchAttributeValue` the application passed.
pub(crate) fn read_attr_value(value: *const AttrValue) -> Result<AttrValue, CudaError> {
    if value.is_null() {
        return Err(CudaError::INVALID_VALUE);
    }
    // SAFETY: the API contract makes `value` point to a whole union (a byte
    // array needs no alignment).
    Ok(unsafe { value.read() })
}

/// Writes a `cudaLaunchAttributeValue` to the application's union.
pub(crate) fn write_attr_value(out: *mut AttrValue, value: AttrValue) -> Result<(), CudaError> {
    if out.is_null() {
        return Err(CudaError::INVALID_VALUE);
    }
    // SAFETY: the API contract makes `out` point to a whole, writable union.
    unsafe { out.write(value) };
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn window(bytes: u64, hit_ratio: f32, hit: u32, miss: u32) -> AttrValue {
        let mut v = [0u8; 64];
        v[8..16].copy_from_slice(&bytes.to_ne_bytes());
        set_word(&mut v, 4, hit_ratio.to_bits());
        set_word(&mut v, 5, hit);
        set_word(&mut v, 6, miss);
        v
    }

    #[test]
    fn attributes_are_checked_kept_and_defaulted() {
        let mut a = LaunchAttrs::default();
        let s = AttrHolder::Stream;
        let ok = window(4096, 0.5, 2, 1);
        a.set(s, attr_id::ACCESS_POLICY_WINDOW, &ok, 8192).unwrap();
        assert_eq!(a.get(s, attr_id::ACCESS_POLICY_WINDOW).unwrap(), ok);
        for bad in [
            window(8193, 0.5, 2, 1),
            window(4096, 1.5, 2, 1),
            window(4096, f32::NAN, 2, 1),
            window(4096, 0.5, 3, 1),
            window(4096, 0.5, 2, 2),
        ] {
            assert!(a.set(s, attr_id::ACCESS_POLICY_WINDOW, &bad, 8192).is_err());
        }
        // A refused value leaves the last one.
        assert_eq!(a.get(s, attr_id::ACCESS_POLICY_WINDOW).unwrap(), ok);
        let policy = a.get(s, attr_id::SYNCHRONIZATION_POLICY).unwrap();
        assert_eq!(word(&policy, 0), SYNC_POLICY_AUTO);
        // Streams take no cooperative attribute; kernel nodes do.
        let one = {
            let mut v = [0u8; 64];
            set_word(&mut v, 0, 1);
            v
        };
        assert!(a.set(s, attr_id::COOPERATIVE, &one, 0).is_err());
        a.set(AttrHolder::KernelNode, attr_id::COOPERATIVE, &one, 0)
            .unwrap();
        // Priorities are clamped to the device's range.
        let mut p = [0u8; 64];
        set_word(&mut p, 0, (-100i32) as u32);
        a.set(s, attr_id::PRIORITY, &p, 0).unwrap();
        let got = a.get(s, attr_id::PRIORITY).unwrap();
        assert_eq!(
            word(&got, 0) as i32,
            rcud_client::runtime::STREAM_PRIORITY_GREATEST
        );
    }
}
