//! What the emulated GPU reports about itself: a `cudaDeviceProp` and the
//! `cudaDeviceGetAttribute` answers of a plausible compute capability 8.0
//! device with A100-like limits.
//!
//! Features the emulator does not provide (managed memory, cluster
//! launches, memory pools, IPC, GPUDirect RDMA, sparse arrays, graphics
//! interop) are reported as absent, so that programs that check before using
//! them take their fallback path instead of failing later.

use rcud_proto::{DeviceAttr, DeviceProps};

/// Name every emulated device reports.
pub const EMU_DEVICE_NAME: &str = rcud_proto::device::EMULATED_DEVICE_NAME;

/// Core clock in kHz reported through `cudaDevAttrClockRate`.
pub const CLOCK_RATE_KHZ: i32 = 1_410_000;

/// Memory clock in kHz reported through `cudaDevAttrMemoryClockRate`.
pub const MEMORY_CLOCK_RATE_KHZ: i32 = 1_215_000;

const KIB: u64 = 1024;
const MIB: u64 = 1024 * 1024;

/// The properties of emulated GPU number `gpu` with `total_mem` bytes of
/// global memory. Deterministic: the same arguments give the same value.
pub fn emulated_props(gpu: u32, total_mem: u64) -> DeviceProps {
    DeviceProps {
        name: EMU_DEVICE_NAME.to_string(),
        uuid: emulated_uuid(gpu),
        luid: [0; 8],
        luid_device_node_mask: 0,
        total_global_mem: total_mem,
        shared_mem_per_block: 48 * KIB,
        regs_per_block: 65_536,
        warp_size: 32,
        mem_pitch: i32::MAX as u64,
        max_threads_per_block: 1024,
        max_threads_dim: [1024, 1024, 64],
        max_grid_size: [i32::MAX, 65_535, 65_535],
        total_const_mem: 64 * KIB,
        major: 8,
        minor: 0,
        // Every allocation of the emulated device starts on a 256-byte
        // boundary, and textures on linear memory need no more.
        texture_alignment: 256,
        texture_pitch_alignment: 32,
        multi_processor_count: 108,
        integrated: 0,
        can_map_host_memory: 1,
        max_texture_1d: 131_072,
        max_texture_1d_mipmap: 32_768,
        max_texture_2d: [131_072, 65_536],
        max_texture_2d_mipmap: [32_768, 32_768],
        max_texture_2d_linear: [131_072, 65_000, 2_097_120],
        max_texture_2d_gather: [32_768, 32_768],
        max_texture_3d: [16_384, 16_384, 16_384],
        max_texture_3d_alt: [8_192, 8_192, 32_768],
        max_texture_cubemap: 32_768,
        max_texture_1d_layered: [32_768, 2_048],
        max_texture_2d_layered: [32_768, 32_768, 2_048],
        max_texture_cubemap_layered: [32_768, 2_046],
        max_surface_1d: 32_768,
        max_surface_2d: [131_072, 65_536],
        max_surface_3d: [16_384, 16_384, 16_384],
        max_surface_1d_layered: [32_768, 2_048],
        max_surface_2d_layered: [32_768, 32_768, 2_048],
        max_surface_cubemap: 32_768,
        max_surface_cubemap_layered: [32_768, 2_046],
        surface_alignment: 512,
        concurrent_kernels: 1,
        ecc_enabled: 0,
        pci_bus_id: clamp_u32(gpu),
        pci_device_id: 0,
        pci_domain_id: 0,
        tcc_driver: 0,
        async_engine_count: 2,
        unified_addressing: 1,
        memory_bus_width: 5120,
        l2_cache_size: (40 * MIB) as i32,
        persisting_l2_cache_max_size: (30 * MIB) as i32,
        max_threads_per_multi_processor: 2048,
        stream_priorities_supported: 1,
        global_l1_cache_supported: 1,
        local_l1_cache_supported: 1,
        shared_mem_per_multiprocessor: 164 * KIB,
        regs_per_multiprocessor: 65_536,
        managed_memory: 0,
        is_multi_gpu_board: 0,
        multi_gpu_board_group_id: clamp_u32(gpu),
        host_native_atomic_supported: 0,
        pageable_memory_access: 0,
        concurrent_managed_access: 0,
        compute_preemption_supported: 1,
        // Host and device are on different machines: a registered host buffer
        // never has the same address on the device.
        can_use_host_pointer_for_registered_mem: 0,
        // Every block of a cooperative grid is resident at once (the
        // interpreter interleaves them), so grid-wide sync works.
        cooperative_launch: 1,
        shared_mem_per_block_optin: 163 * KIB,
        pageable_memory_access_uses_host_page_tables: 0,
        direct_managed_mem_access_from_host: 0,
        max_blocks_per_multi_processor: 32,
        access_policy_max_window_size: 134_213_632,
        reserved_shared_mem_per_block: KIB,
        host_register_supported: 1,
        sparse_cuda_array_supported: 0,
        host_register_read_only_supported: 0,
        timeline_semaphore_interop_supported: 0,
        memory_pools_supported: 0,
        gpu_direct_rdma_supported: 0,
        gpu_direct_rdma_flush_writes_options: 0,
        // cudaGPUDirectRDMAWritesOrderingNone.
        gpu_direct_rdma_writes_ordering: 0,
        memory_pool_supported_handle_types: 0,
        deferred_mapping_cuda_array_supported: 0,
        ipc_event_supported: 0,
        cluster_launch: 0,
        unified_function_pointers: 0,
        // cudaDeviceNumaConfigNone, and no NUMA node.
        device_numa_config: 0,
        device_numa_id: -1,
        mps_enabled: 0,
        host_numa_id: -1,
        gpu_pci_device_id: 0,
        gpu_pci_subsystem_id: 0,
        host_numa_multinode_ipc_supported: 0,
    }
}

/// A stable UUID for emulated GPU `gpu`: FNV-1a hashes of "rcud-emu" and the
/// index, with the RFC 9562 version 8 (custom) and variant bits set.
fn emulated_uuid(gpu: u32) -> [u8; 16] {
    let mut uuid = [0u8; 16];
    for (half, out) in uuid.chunks_exact_mut(8).enumerate() {
        let hash = fnv1a(&[b"rcud-emu", &gpu.to_le_bytes(), &[half as u8]]);
        out.copy_from_slice(&hash.to_be_bytes());
    }
    uuid[6] = (uuid[6] & 0x0f) | 0x80;
    uuid[8] = (uuid[8] & 0x3f) | 0x80;
    uuid
}

fn fnv1a(parts: &[&[u8]]) -> u64 {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for byte in parts.iter().flat_map(|p| p.iter()) {
        hash ^= u64::from(*byte);
        hash = hash.wrapping_mul(0x0000_0100_0000_01b3);
    }
    hash
}

/// A byte count as `cudaDeviceGetAttribute` reports it: an `int`, so values
/// that do not fit become `i32::MAX`.
fn clamp_u64(v: u64) -> i32 {
    i32::try_from(v).unwrap_or(i32::MAX)
}

fn clamp_u32(v: u32) -> i32 {
    i32::try_from(v).unwrap_or(i32::MAX)
}

/// An `unsigned int` bit mask or identifier reinterpreted as the `int` that
/// `cudaDeviceGetAttribute` stores (same bits, as the driver does).
fn bits(v: u32) -> i32 {
    i32::from_ne_bytes(v.to_ne_bytes())
}

/// Every `cudaDeviceGetAttribute` answer of the device described by `props`,
/// as `(cudaDeviceAttr value, value)`, sorted by attribute. Attributes that
/// correspond to a `cudaDeviceProp` field are taken from `props`; the others
/// (clock rates and attributes CUDA 13 dropped from the struct) are fixed
/// values for an sm_80 part. The `Reserved*` placeholders and `cudaDevAttrMax`
/// are absent (the server answers those with `cudaErrorInvalidValue`), but
/// for the driver-only attributes at reserved values that the device has
/// (virtual memory management, stream memory operations).
pub fn attributes(props: &DeviceProps) -> Vec<(i32, i32)> {
    let p = props;
    let mut v: Vec<(DeviceAttr, i32)> = vec![
        (DeviceAttr::MAX_THREADS_PER_BLOCK, p.max_threads_per_block),
        (DeviceAttr::MAX_BLOCK_DIM_X, p.max_threads_dim[0]),
        (DeviceAttr::MAX_BLOCK_DIM_Y, p.max_threads_dim[1]),
        (DeviceAttr::MAX_BLOCK_DIM_Z, p.max_threads_dim[2]),
        (DeviceAttr::MAX_GRID_DIM_X, p.max_grid_size[0]),
        (DeviceAttr::MAX_GRID_DIM_Y, p.max_grid_size[1]),
        (DeviceAttr::MAX_GRID_DIM_Z, p.max_grid_size[2]),
        (
            DeviceAttr::MAX_SHARED_MEMORY_PER_BLOCK,
            clamp_u64(p.shared_mem_per_block),
        ),
        (
            DeviceAttr::TOTAL_CONSTANT_MEMORY,
            clamp_u64(p.total_const_mem),
        ),
        (DeviceAttr::WARP_SIZE, p.warp_size),
        (DeviceAttr::MAX_PITCH, clamp_u64(p.mem_pitch)),
        (DeviceAttr::MAX_REGISTERS_PER_BLOCK, p.regs_per_block),
        (DeviceAttr::CLOCK_RATE, CLOCK_RATE_KHZ),
        (
            DeviceAttr::TEXTURE_ALIGNMENT,
            clamp_u64(p.texture_alignment),
        ),
        (DeviceAttr::GPU_OVERLAP, i32::from(p.async_engine_count > 0)),
        (DeviceAttr::MULTI_PROCESSOR_COUNT, p.multi_processor_count),
        (DeviceAttr::KERNEL_EXEC_TIMEOUT, 0),
        (DeviceAttr::INTEGRATED, p.integrated),
        (DeviceAttr::CAN_MAP_HOST_MEMORY, p.can_map_host_memory),
        // cudaComputeModeDefault.
        (DeviceAttr::COMPUTE_MODE, 0),
        (DeviceAttr::MAX_TEXTURE_1D_WIDTH, p.max_texture_1d),
        (DeviceAttr::MAX_TEXTURE_2D_WIDTH, p.max_texture_2d[0]),
        (DeviceAttr::MAX_TEXTURE_2D_HEIGHT, p.max_texture_2d[1]),
        (DeviceAttr::MAX_TEXTURE_3D_WIDTH, p.max_texture_3d[0]),
        (DeviceAttr::MAX_TEXTURE_3D_HEIGHT, p.max_texture_3d[1]),
        (DeviceAttr::MAX_TEXTURE_3D_DEPTH, p.max_texture_3d[2]),
        (
            DeviceAttr::MAX_TEXTURE_2D_LAYERED_WIDTH,
            p.max_texture_2d_layered[0],
        ),
        (
            DeviceAttr::MAX_TEXTURE_2D_LAYERED_HEIGHT,
            p.max_texture_2d_layered[1],
        ),
        (
            DeviceAttr::MAX_TEXTURE_2D_LAYERED_LAYERS,
            p.max_texture_2d_layered[2],
        ),
        (
            DeviceAttr::SURFACE_ALIGNMENT,
            clamp_u64(p.surface_alignment),
        ),
        (DeviceAttr::CONCURRENT_KERNELS, p.concurrent_kernels),
        (DeviceAttr::ECC_ENABLED, p.ecc_enabled),
        (DeviceAttr::PCI_BUS_ID, p.pci_bus_id),
        (DeviceAttr::PCI_DEVICE_ID, p.pci_device_id),
        (DeviceAttr::TCC_DRIVER, p.tcc_driver),
        (DeviceAttr::MEMORY_CLOCK_RATE, MEMORY_CLOCK_RATE_KHZ),
        (DeviceAttr::GLOBAL_MEMORY_BUS_WIDTH, p.memory_bus_width),
        (DeviceAttr::L2_CACHE_SIZE, p.l2_cache_size),
        (
            DeviceAttr::MAX_THREADS_PER_MULTI_PROCESSOR,
            p.max_threads_per_multi_processor,
        ),
        (DeviceAttr::ASYNC_ENGINE_COUNT, p.async_engine_count),
        (DeviceAttr::UNIFIED_ADDRESSING, p.unified_addressing),
        (
            DeviceAttr::MAX_TEXTURE_1D_LAYERED_WIDTH,
            p.max_texture_1d_layered[0],
        ),
        (
            DeviceAttr::MAX_TEXTURE_1D_LAYERED_LAYERS,
            p.max_texture_1d_layered[1],
        ),
        (
            DeviceAttr::MAX_TEXTURE_2D_GATHER_WIDTH,
            p.max_texture_2d_gather[0],
        ),
        (
            DeviceAttr::MAX_TEXTURE_2D_GATHER_HEIGHT,
            p.max_texture_2d_gather[1],
        ),
        (
            DeviceAttr::MAX_TEXTURE_3D_WIDTH_ALT,
            p.max_texture_3d_alt[0],
        ),
        (
            DeviceAttr::MAX_TEXTURE_3D_HEIGHT_ALT,
            p.max_texture_3d_alt[1],
        ),
        (
            DeviceAttr::MAX_TEXTURE_3D_DEPTH_ALT,
            p.max_texture_3d_alt[2],
        ),
        (DeviceAttr::PCI_DOMAIN_ID, p.pci_domain_id),
        (
            DeviceAttr::TEXTURE_PITCH_ALIGNMENT,
            clamp_u64(p.texture_pitch_alignment),
        ),
        (DeviceAttr::MAX_TEXTURE_CUBEMAP_WIDTH, p.max_texture_cubemap),
        (
            DeviceAttr::MAX_TEXTURE_CUBEMAP_LAYERED_WIDTH,
            p.max_texture_cubemap_layered[0],
        ),
        (
            DeviceAttr::MAX_TEXTURE_CUBEMAP_LAYERED_LAYERS,
            p.max_texture_cubemap_layered[1],
        ),
        (DeviceAttr::MAX_SURFACE_1D_WIDTH, p.max_surface_1d),
        (DeviceAttr::MAX_SURFACE_2D_WIDTH, p.max_surface_2d[0]),
        (DeviceAttr::MAX_SURFACE_2D_HEIGHT, p.max_surface_2d[1]),
        (DeviceAttr::MAX_SURFACE_3D_WIDTH, p.max_surface_3d[0]),
        (DeviceAttr::MAX_SURFACE_3D_HEIGHT, p.max_surface_3d[1]),
        (DeviceAttr::MAX_SURFACE_3D_DEPTH, p.max_surface_3d[2]),
        (
            DeviceAttr::MAX_SURFACE_1D_LAYERED_WIDTH,
            p.max_surface_1d_layered[0],
        ),
        (
            DeviceAttr::MAX_SURFACE_1D_LAYERED_LAYERS,
            p.max_surface_1d_layered[1],
        ),
        (
            DeviceAttr::MAX_SURFACE_2D_LAYERED_WIDTH,
            p.max_surface_2d_layered[0],
        ),
        (
            DeviceAttr::MAX_SURFACE_2D_LAYERED_HEIGHT,
            p.max_surface_2d_layered[1],
        ),
        (
            DeviceAttr::MAX_SURFACE_2D_LAYERED_LAYERS,
            p.max_surface_2d_layered[2],
        ),
        (DeviceAttr::MAX_SURFACE_CUBEMAP_WIDTH, p.max_surface_cubemap),
        (
            DeviceAttr::MAX_SURFACE_CUBEMAP_LAYERED_WIDTH,
            p.max_surface_cubemap_layered[0],
        ),
        (
            DeviceAttr::MAX_SURFACE_CUBEMAP_LAYERED_LAYERS,
            p.max_surface_cubemap_layered[1],
        ),
        // No longer a struct field; 2^28 texels on sm_80.
        (DeviceAttr::MAX_TEXTURE_1D_LINEAR_WIDTH, 1 << 28),
        (
            DeviceAttr::MAX_TEXTURE_2D_LINEAR_WIDTH,
            p.max_texture_2d_linear[0],
        ),
        (
            DeviceAttr::MAX_TEXTURE_2D_LINEAR_HEIGHT,
            p.max_texture_2d_linear[1],
        ),
        (
            DeviceAttr::MAX_TEXTURE_2D_LINEAR_PITCH,
            p.max_texture_2d_linear[2],
        ),
        (
            DeviceAttr::MAX_TEXTURE_2D_MIPMAPPED_WIDTH,
            p.max_texture_2d_mipmap[0],
        ),
        (
            DeviceAttr::MAX_TEXTURE_2D_MIPMAPPED_HEIGHT,
            p.max_texture_2d_mipmap[1],
        ),
        (DeviceAttr::COMPUTE_CAPABILITY_MAJOR, p.major),
        (DeviceAttr::COMPUTE_CAPABILITY_MINOR, p.minor),
        (
            DeviceAttr::MAX_TEXTURE_1D_MIPMAPPED_WIDTH,
            p.max_texture_1d_mipmap,
        ),
        (
            DeviceAttr::STREAM_PRIORITIES_SUPPORTED,
            p.stream_priorities_supported,
        ),
        (
            DeviceAttr::GLOBAL_L1_CACHE_SUPPORTED,
            p.global_l1_cache_supported,
        ),
        (
            DeviceAttr::LOCAL_L1_CACHE_SUPPORTED,
            p.local_l1_cache_supported,
        ),
        (
            DeviceAttr::MAX_SHARED_MEMORY_PER_MULTIPROCESSOR,
            clamp_u64(p.shared_mem_per_multiprocessor),
        ),
        (
            DeviceAttr::MAX_REGISTERS_PER_MULTIPROCESSOR,
            p.regs_per_multiprocessor,
        ),
        (DeviceAttr::MANAGED_MEMORY, p.managed_memory),
        (DeviceAttr::IS_MULTI_GPU_BOARD, p.is_multi_gpu_board),
        (
            DeviceAttr::MULTI_GPU_BOARD_GROUP_ID,
            p.multi_gpu_board_group_id,
        ),
        (
            DeviceAttr::HOST_NATIVE_ATOMIC_SUPPORTED,
            p.host_native_atomic_supported,
        ),
        // FP32 to FP64 throughput ratio of an A100.
        (DeviceAttr::SINGLE_TO_DOUBLE_PRECISION_PERF_RATIO, 2),
        (DeviceAttr::PAGEABLE_MEMORY_ACCESS, p.pageable_memory_access),
        (
            DeviceAttr::CONCURRENT_MANAGED_ACCESS,
            p.concurrent_managed_access,
        ),
        (
            DeviceAttr::COMPUTE_PREEMPTION_SUPPORTED,
            p.compute_preemption_supported,
        ),
        (
            DeviceAttr::CAN_USE_HOST_POINTER_FOR_REGISTERED_MEM,
            p.can_use_host_pointer_for_registered_mem,
        ),
        (DeviceAttr::COOPERATIVE_LAUNCH, p.cooperative_launch),
        (
            DeviceAttr::MAX_SHARED_MEMORY_PER_BLOCK_OPTIN,
            clamp_u64(p.shared_mem_per_block_optin),
        ),
        (DeviceAttr::CAN_FLUSH_REMOTE_WRITES, 0),
        (
            DeviceAttr::HOST_REGISTER_SUPPORTED,
            p.host_register_supported,
        ),
        (
            DeviceAttr::PAGEABLE_MEMORY_ACCESS_USES_HOST_PAGE_TABLES,
            p.pageable_memory_access_uses_host_page_tables,
        ),
        (
            DeviceAttr::DIRECT_MANAGED_MEM_ACCESS_FROM_HOST,
            p.direct_managed_mem_access_from_host,
        ),
        (
            DeviceAttr::MAX_BLOCKS_PER_MULTIPROCESSOR,
            p.max_blocks_per_multi_processor,
        ),
        (
            DeviceAttr::MAX_PERSISTING_L2_CACHE_SIZE,
            p.persisting_l2_cache_max_size,
        ),
        (
            DeviceAttr::MAX_ACCESS_POLICY_WINDOW_SIZE,
            p.access_policy_max_window_size,
        ),
        (
            DeviceAttr::RESERVED_SHARED_MEMORY_PER_BLOCK,
            clamp_u64(p.reserved_shared_mem_per_block),
        ),
        (
            DeviceAttr::SPARSE_CUDA_ARRAY_SUPPORTED,
            p.sparse_cuda_array_supported,
        ),
        (
            DeviceAttr::HOST_REGISTER_READ_ONLY_SUPPORTED,
            p.host_register_read_only_supported,
        ),
        (
            DeviceAttr::TIMELINE_SEMAPHORE_INTEROP_SUPPORTED,
            p.timeline_semaphore_interop_supported,
        ),
        (DeviceAttr::MEMORY_POOLS_SUPPORTED, p.memory_pools_supported),
        (
            DeviceAttr::GPU_DIRECT_RDMA_SUPPORTED,
            p.gpu_direct_rdma_supported,
        ),
        (
            DeviceAttr::GPU_DIRECT_RDMA_FLUSH_WRITES_OPTIONS,
            bits(p.gpu_direct_rdma_flush_writes_options),
        ),
        (
            DeviceAttr::GPU_DIRECT_RDMA_WRITES_ORDERING,
            p.gpu_direct_rdma_writes_ordering,
        ),
        (
            DeviceAttr::MEMORY_POOL_SUPPORTED_HANDLE_TYPES,
            bits(p.memory_pool_supported_handle_types),
        ),
        (DeviceAttr::CLUSTER_LAUNCH, p.cluster_launch),
        (
            DeviceAttr::DEFERRED_MAPPING_CUDA_ARRAY_SUPPORTED,
            p.deferred_mapping_cuda_array_supported,
        ),
        (DeviceAttr::IPC_EVENT_SUPPORT, p.ipc_event_supported),
        // sm_80 has a single memory synchronization domain.
        (DeviceAttr::MEM_SYNC_DOMAIN_COUNT, 1),
        (DeviceAttr::NUMA_CONFIG, p.device_numa_config),
        (DeviceAttr::NUMA_ID, p.device_numa_id),
        (DeviceAttr::MPS_ENABLED, p.mps_enabled),
        (DeviceAttr::HOST_NUMA_ID, p.host_numa_id),
        (DeviceAttr::D3D12_CIG_SUPPORTED, 0),
        // Driver-only attributes (the runtime's enum reserves their
        // values): virtual memory management with POSIX file descriptor
        // handles (`cuMemCreate`, `cuMemMap`, ...), and stream memory
        // operations, 64-bit ones and NOR waits included (current and
        // `_V1` numbers).
        (DeviceAttr(102), 1),
        (DeviceAttr(103), 1),
        (DeviceAttr(92), 1),
        (DeviceAttr(93), 1),
        (DeviceAttr(94), 1),
        (DeviceAttr(122), 1),
        (DeviceAttr(123), 1),
        (DeviceAttr::VULKAN_CIG_SUPPORTED, 0),
        (DeviceAttr::GPU_PCI_DEVICE_ID, bits(p.gpu_pci_device_id)),
        (
            DeviceAttr::GPU_PCI_SUBSYSTEM_ID,
            bits(p.gpu_pci_subsystem_id),
        ),
        (DeviceAttr::HOST_NUMA_MEMORY_POOLS_SUPPORTED, 0),
        (
            DeviceAttr::HOST_NUMA_MULTINODE_IPC_SUPPORTED,
            p.host_numa_multinode_ipc_supported,
        ),
        (DeviceAttr::HOST_MEMORY_POOLS_SUPPORTED, 0),
        (DeviceAttr::ONLY_PARTIAL_HOST_NATIVE_ATOMIC_SUPPORTED, 0),
        (DeviceAttr::ATOMIC_REDUCTION_SUPPORTED, 0),
        // No locality domains and no oversized shared memory mode on sm_80.
        (DeviceAttr::LOCALITY_DOMAIN_COUNT, 0),
        (DeviceAttr::OVERSIZED_SHARED_MEMORY_PER_BLOCK, 0),
        (DeviceAttr::CIG_STREAMS_SUPPORTED, 0),
        (DeviceAttr::LOCALITY_DOMAIN_MULTIPROCESSOR_COUNT, 0),
        // The value CUDA gives for devices without a "large tensor" threshold.
        (DeviceAttr::TENSOR_MAP_LARGE_TENSOR_MIN_SIZE, i32::MAX),
    ];
    v.sort_by_key(|(attr, _)| attr.0);
    v.into_iter().map(|(attr, value)| (attr.0, value)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn attr_map(props: &DeviceProps) -> HashMap<i32, i32> {
        attributes(props).into_iter().collect()
    }

    #[test]
    fn props_are_an_sm80_device() {
        let p = emulated_props(3, 8 << 30);
        assert_eq!(p.name, EMU_DEVICE_NAME);
        assert!(p.name.len() < 256);
        assert_eq!((p.major, p.minor), (8, 0));
        assert_eq!(p.total_global_mem, 8 << 30);
        assert_eq!(p.pci_bus_id, 3);
        assert_eq!(p.multi_processor_count, 108);
        assert_eq!(p.shared_mem_per_block, 49_152);
        assert_eq!(p.shared_mem_per_block_optin, 166_912);
        assert_eq!(p.shared_mem_per_multiprocessor, 167_936);
        assert_eq!(p.l2_cache_size, 41_943_040);
        assert_eq!(p.max_grid_size, [2_147_483_647, 65_535, 65_535]);
        assert_eq!(p.warp_size, 32);
        assert_eq!(p.managed_memory, 0);
        assert_eq!(p.unified_addressing, 1);
        // Internally consistent limits.
        assert!(p.shared_mem_per_block <= p.shared_mem_per_block_optin);
        assert!(p.shared_mem_per_block_optin <= p.shared_mem_per_multiprocessor);
        assert!(p.max_threads_per_block <= p.max_threads_per_multi_processor);
        assert!(p
            .max_threads_dim
            .iter()
            .all(|&d| d <= p.max_threads_per_block));
        assert_eq!(p, emulated_props(3, 8 << 30));
    }

    #[test]
    fn uuid_is_stable_and_distinct() {
        let a = emulated_props(0, 1 << 30).uuid;
        assert_eq!(a, emulated_props(0, 2 << 30).uuid);
        assert_ne!(a, emulated_props(1, 1 << 30).uuid);
        assert_ne!(a, [0; 16]);
        assert_eq!(a[6] >> 4, 8, "version 8");
        assert_eq!(a[8] >> 6, 0b10, "RFC 9562 variant");
    }

    /// Driver attributes at values the runtime's enum reserves.
    const DRIVER_ONLY: [i32; 7] = [92, 93, 94, 102, 103, 122, 123];

    #[test]
    fn every_real_attribute_is_answered_once() {
        let list = attributes(&emulated_props(0, 1 << 30));
        assert!(list.windows(2).all(|w| w[0].0 < w[1].0), "sorted, unique");
        let listed: Vec<i32> = list.iter().map(|&(a, _)| a).collect();
        let expected: Vec<i32> = DeviceAttr::ALL
            .iter()
            .filter(|a| !a.is_placeholder())
            .map(|a| a.0)
            .chain(DRIVER_ONLY)
            .collect::<std::collections::BTreeSet<_>>()
            .into_iter()
            .collect();
        assert_eq!(listed, expected);
        assert_eq!(list.len(), 130 + DRIVER_ONLY.len());
    }

    #[test]
    fn attributes_follow_props() {
        let mut p = emulated_props(5, 16 << 30);
        let m = attr_map(&p);
        let get = |m: &HashMap<i32, i32>, a: DeviceAttr| m[&a.0];
        assert_eq!(get(&m, DeviceAttr::MAX_THREADS_PER_BLOCK), 1024);
        assert_eq!(get(&m, DeviceAttr::COMPUTE_CAPABILITY_MAJOR), 8);
        assert_eq!(get(&m, DeviceAttr::COMPUTE_CAPABILITY_MINOR), 0);
        assert_eq!(get(&m, DeviceAttr::MAX_SHARED_MEMORY_PER_BLOCK), 49_152);
        assert_eq!(
            get(&m, DeviceAttr::MAX_SHARED_MEMORY_PER_BLOCK_OPTIN),
            166_912
        );
        assert_eq!(get(&m, DeviceAttr::MAX_GRID_DIM_X), i32::MAX);
        assert_eq!(get(&m, DeviceAttr::MAX_BLOCK_DIM_Z), 64);
        assert_eq!(get(&m, DeviceAttr::PCI_BUS_ID), 5);
        assert_eq!(get(&m, DeviceAttr::CLOCK_RATE), 1_410_000);
        assert_eq!(get(&m, DeviceAttr::MEMORY_CLOCK_RATE), 1_215_000);
        assert_eq!(get(&m, DeviceAttr::GLOBAL_MEMORY_BUS_WIDTH), 5120);
        assert_eq!(get(&m, DeviceAttr::MULTI_PROCESSOR_COUNT), 108);
        assert_eq!(get(&m, DeviceAttr::MAX_BLOCKS_PER_MULTIPROCESSOR), 32);
        assert_eq!(get(&m, DeviceAttr::GPU_OVERLAP), 1);
        assert_eq!(get(&m, DeviceAttr::MAX_PITCH), i32::MAX);

        // Derived, not copied: changing the props changes the answers, and
        // byte counts beyond an int clamp.
        p.max_threads_per_block = 512;
        p.mem_pitch = u64::MAX;
        p.total_const_mem = 1 << 40;
        p.gpu_pci_device_id = 0x20b0_10de;
        p.memory_pool_supported_handle_types = u32::MAX;
        let m = attr_map(&p);
        assert_eq!(get(&m, DeviceAttr::MAX_THREADS_PER_BLOCK), 512);
        assert_eq!(get(&m, DeviceAttr::MAX_PITCH), i32::MAX);
        assert_eq!(get(&m, DeviceAttr::TOTAL_CONSTANT_MEMORY), i32::MAX);
        assert_eq!(get(&m, DeviceAttr::GPU_PCI_DEVICE_ID), 0x20b0_10de);
        assert_eq!(get(&m, DeviceAttr::MEMORY_POOL_SUPPORTED_HANDLE_TYPES), -1);
    }

    #[test]
    fn props_survive_the_wire() {
        let p = emulated_props(1, 40 << 30);
        let bytes = rcud_proto::codec::to_vec(&p);
        let back: DeviceProps = rcud_proto::codec::from_slice(&bytes).expect("decode");
        assert_eq!(back, p);
    }
}
