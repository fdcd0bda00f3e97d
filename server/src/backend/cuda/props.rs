//! What a real GPU reports to rcud clients: `cudaDeviceProp` field by field
//! and the `cudaDeviceGetAttribute` table, both from the driver's
//! `cuDeviceGetAttribute` (the runtime's `cudaDeviceAttr` values are the
//! driver's `CUdevice_attribute` values for the same names).
//!
//! The values are the device's own, except for the features an rcud client
//! cannot use on a GPU in another machine ([`REMOTE_ABSENT`]): those are
//! reported absent, as the emulated device reports them, so that programs
//! that check before using them take their fallback path.

use rcud_proto::{DeviceAttr, DeviceProps};

/// Attributes reported as 0 whatever the device says, and why:
///
/// - host and device share no memory across the network: managed memory,
///   pageable memory access, registered host pointers used on the device,
///   host-native atomics;
/// - launches rcud refuses (clusters);
/// - APIs rcud does not forward (memory pools, IPC, external semaphores,
///   sparse and deferred-mapping arrays, graphics interop), and GPUDirect
///   RDMA, which concerns the application's own network adapter, not the
///   server's.
pub(crate) const REMOTE_ABSENT: &[DeviceAttr] = &[
    DeviceAttr::MANAGED_MEMORY,
    DeviceAttr::HOST_NATIVE_ATOMIC_SUPPORTED,
    DeviceAttr::PAGEABLE_MEMORY_ACCESS,
    DeviceAttr::CONCURRENT_MANAGED_ACCESS,
    DeviceAttr::CAN_USE_HOST_POINTER_FOR_REGISTERED_MEM,
    DeviceAttr::PAGEABLE_MEMORY_ACCESS_USES_HOST_PAGE_TABLES,
    DeviceAttr::DIRECT_MANAGED_MEM_ACCESS_FROM_HOST,
    DeviceAttr::SPARSE_CUDA_ARRAY_SUPPORTED,
    DeviceAttr::TIMELINE_SEMAPHORE_INTEROP_SUPPORTED,
    DeviceAttr::MEMORY_POOLS_SUPPORTED,
    DeviceAttr::GPU_DIRECT_RDMA_SUPPORTED,
    DeviceAttr::GPU_DIRECT_RDMA_FLUSH_WRITES_OPTIONS,
    DeviceAttr::GPU_DIRECT_RDMA_WRITES_ORDERING,
    DeviceAttr::MEMORY_POOL_SUPPORTED_HANDLE_TYPES,
    DeviceAttr::CLUSTER_LAUNCH,
    DeviceAttr::DEFERRED_MAPPING_CUDA_ARRAY_SUPPORTED,
    DeviceAttr::IPC_EVENT_SUPPORT,
    DeviceAttr::D3D12_CIG_SUPPORTED,
    DeviceAttr::VULKAN_CIG_SUPPORTED,
    DeviceAttr::HOST_NUMA_MEMORY_POOLS_SUPPORTED,
    DeviceAttr::HOST_NUMA_MULTINODE_IPC_SUPPORTED,
    DeviceAttr::HOST_MEMORY_POOLS_SUPPORTED,
    DeviceAttr::CIG_STREAMS_SUPPORTED,
];

/// The value a client sees for `attr` when the device answers `value`.
pub(crate) fn remote_view(attr: DeviceAttr, value: i32) -> i32 {
    if REMOTE_ABSENT.contains(&attr) {
        0
    } else {
        value
    }
}

/// The `(cudaDeviceAttr, value)` table: every enumerator of CUDA 13's
/// `cudaDeviceAttr` except the placeholders, queried with `query`; those the
/// driver rejects (`None`) are left out and answered with
/// `cudaErrorInvalidValue`. Sorted by attribute.
pub(crate) fn attribute_table(query: &dyn Fn(i32) -> Option<i32>) -> Vec<(i32, i32)> {
    let mut table: Vec<(i32, i32)> = DeviceAttr::ALL
        .iter()
        .filter(|a| !a.is_placeholder())
        .filter_map(|&a| query(a.0).map(|v| (a.0, remote_view(a, v))))
        .collect();
    table.sort_unstable();
    table.dedup_by_key(|&mut (a, _)| a);
    table
}

/// Identity of the device, from calls other than `cuDeviceGetAttribute`.
#[derive(Debug, Clone, Default)]
pub(crate) struct Identity {
    /// `cuDeviceGetName`.
    pub(crate) name: String,
    /// `cuDeviceGetUuid`.
    pub(crate) uuid: [u8; 16],
    /// `cuDeviceTotalMem`.
    pub(crate) total_mem: u64,
}

/// `cudaDeviceProp` of a device whose attribute table is `table` (as made by
/// [`attribute_table`]). An attribute the driver did not answer is 0, as the
/// runtime leaves it.
pub(crate) fn device_props(id: &Identity, table: &[(i32, i32)]) -> DeviceProps {
    let a = |attr: DeviceAttr| -> i32 {
        table
            .binary_search_by_key(&attr.0, |&(k, _)| k)
            .map_or(0, |i| table[i].1)
    };
    // Sizes and bit masks travel as `int` attributes; `cudaDeviceProp` holds
    // them as `size_t` / `unsigned`.
    let size = |attr: DeviceAttr| -> u64 { u64::try_from(a(attr)).unwrap_or(0) };
    let bits = |attr: DeviceAttr| -> u32 { u32::from_ne_bytes(a(attr).to_ne_bytes()) };
    use DeviceAttr as A;
    DeviceProps {
        name: id.name.clone(),
        uuid: id.uuid,
        // Windows-only.
        luid: [0; 8],
        luid_device_node_mask: 0,
        total_global_mem: id.total_mem,
        shared_mem_per_block: size(A::MAX_SHARED_MEMORY_PER_BLOCK),
        regs_per_block: a(A::MAX_REGISTERS_PER_BLOCK),
        warp_size: a(A::WARP_SIZE),
        mem_pitch: size(A::MAX_PITCH),
        max_threads_per_block: a(A::MAX_THREADS_PER_BLOCK),
        max_threads_dim: [
            a(A::MAX_BLOCK_DIM_X),
            a(A::MAX_BLOCK_DIM_Y),
            a(A::MAX_BLOCK_DIM_Z),
        ],
        max_grid_size: [
            a(A::MAX_GRID_DIM_X),
            a(A::MAX_GRID_DIM_Y),
            a(A::MAX_GRID_DIM_Z),
        ],
        total_const_mem: size(A::TOTAL_CONSTANT_MEMORY),
        major: a(A::COMPUTE_CAPABILITY_MAJOR),
        minor: a(A::COMPUTE_CAPABILITY_MINOR),
        texture_alignment: size(A::TEXTURE_ALIGNMENT),
        texture_pitch_alignment: size(A::TEXTURE_PITCH_ALIGNMENT),
        multi_processor_count: a(A::MULTI_PROCESSOR_COUNT),
        integrated: a(A::INTEGRATED),
        can_map_host_memory: a(A::CAN_MAP_HOST_MEMORY),
        max_texture_1d: a(A::MAX_TEXTURE_1D_WIDTH),
        max_texture_1d_mipmap: a(A::MAX_TEXTURE_1D_MIPMAPPED_WIDTH),
        max_texture_2d: [a(A::MAX_TEXTURE_2D_WIDTH), a(A::MAX_TEXTURE_2D_HEIGHT)],
        max_texture_2d_mipmap: [
            a(A::MAX_TEXTURE_2D_MIPMAPPED_WIDTH),
            a(A::MAX_TEXTURE_2D_MIPMAPPED_HEIGHT),
        ],
        max_texture_2d_linear: [
            a(A::MAX_TEXTURE_2D_LINEAR_WIDTH),
            a(A::MAX_TEXTURE_2D_LINEAR_HEIGHT),
            a(A::MAX_TEXTURE_2D_LINEAR_PITCH),
        ],
        max_texture_2d_gather: [
            a(A::MAX_TEXTURE_2D_GATHER_WIDTH),
            a(A::MAX_TEXTURE_2D_GATHER_HEIGHT),
        ],
        max_texture_3d: [
            a(A::MAX_TEXTURE_3D_WIDTH),
            a(A::MAX_TEXTURE_3D_HEIGHT),
            a(A::MAX_TEXTURE_3D_DEPTH),
        ],
        max_texture_3d_alt: [
            a(A::MAX_TEXTURE_3D_WIDTH_ALT),
            a(A::MAX_TEXTURE_3D_HEIGHT_ALT),
            a(A::MAX_TEXTURE_3D_DEPTH_ALT),
        ],
        max_texture_cubemap: a(A::MAX_TEXTURE_CUBEMAP_WIDTH),
        max_texture_1d_layered: [
            a(A::MAX_TEXTURE_1D_LAYERED_WIDTH),
            a(A::MAX_TEXTURE_1D_LAYERED_LAYERS),
        ],
        max_texture_2d_layered: [
            a(A::MAX_TEXTURE_2D_LAYERED_WIDTH),
            a(A::MAX_TEXTURE_2D_LAYERED_HEIGHT),
            a(A::MAX_TEXTURE_2D_LAYERED_LAYERS),
        ],
        max_texture_cubemap_layered: [
            a(A::MAX_TEXTURE_CUBEMAP_LAYERED_WIDTH),
            a(A::MAX_TEXTURE_CUBEMAP_LAYERED_LAYERS),
        ],
        max_surface_1d: a(A::MAX_SURFACE_1D_WIDTH),
        max_surface_2d: [a(A::MAX_SURFACE_2D_WIDTH), a(A::MAX_SURFACE_2D_HEIGHT)],
        max_surface_3d: [
            a(A::MAX_SURFACE_3D_WIDTH),
            a(A::MAX_SURFACE_3D_HEIGHT),
            a(A::MAX_SURFACE_3D_DEPTH),
        ],
        max_surface_1d_layered: [
            a(A::MAX_SURFACE_1D_LAYERED_WIDTH),
            a(A::MAX_SURFACE_1D_LAYERED_LAYERS),
        ],
        max_surface_2d_layered: [
            a(A::MAX_SURFACE_2D_LAYERED_WIDTH),
            a(A::MAX_SURFACE_2D_LAYERED_HEIGHT),
            a(A::MAX_SURFACE_2D_LAYERED_LAYERS),
        ],
        max_surface_cubemap: a(A::MAX_SURFACE_CUBEMAP_WIDTH),
        max_surface_cubemap_layered: [
            a(A::MAX_SURFACE_CUBEMAP_LAYERED_WIDTH),
            a(A::MAX_SURFACE_CUBEMAP_LAYERED_LAYERS),
        ],
        surface_alignment: size(A::SURFACE_ALIGNMENT),
        concurrent_kernels: a(A::CONCURRENT_KERNELS),
        ecc_enabled: a(A::ECC_ENABLED),
        pci_bus_id: a(A::PCI_BUS_ID),
        pci_device_id: a(A::PCI_DEVICE_ID),
        pci_domain_id: a(A::PCI_DOMAIN_ID),
        tcc_driver: a(A::TCC_DRIVER),
        async_engine_count: a(A::ASYNC_ENGINE_COUNT),
        unified_addressing: a(A::UNIFIED_ADDRESSING),
        memory_bus_width: a(A::GLOBAL_MEMORY_BUS_WIDTH),
        l2_cache_size: a(A::L2_CACHE_SIZE),
        persisting_l2_cache_max_size: a(A::MAX_PERSISTING_L2_CACHE_SIZE),
        max_threads_per_multi_processor: a(A::MAX_THREADS_PER_MULTI_PROCESSOR),
        stream_priorities_supported: a(A::STREAM_PRIORITIES_SUPPORTED),
        global_l1_cache_supported: a(A::GLOBAL_L1_CACHE_SUPPORTED),
        local_l1_cache_supported: a(A::LOCAL_L1_CACHE_SUPPORTED),
        shared_mem_per_multiprocessor: size(A::MAX_SHARED_MEMORY_PER_MULTIPROCESSOR),
        regs_per_multiprocessor: a(A::MAX_REGISTERS_PER_MULTIPROCESSOR),
        managed_memory: a(A::MANAGED_MEMORY),
        is_multi_gpu_board: a(A::IS_MULTI_GPU_BOARD),
        multi_gpu_board_group_id: a(A::MULTI_GPU_BOARD_GROUP_ID),
        host_native_atomic_supported: a(A::HOST_NATIVE_ATOMIC_SUPPORTED),
        pageable_memory_access: a(A::PAGEABLE_MEMORY_ACCESS),
        concurrent_managed_access: a(A::CONCURRENT_MANAGED_ACCESS),
        compute_preemption_supported: a(A::COMPUTE_PREEMPTION_SUPPORTED),
        can_use_host_pointer_for_registered_mem: a(A::CAN_USE_HOST_POINTER_FOR_REGISTERED_MEM),
        cooperative_launch: a(A::COOPERATIVE_LAUNCH),
        shared_mem_per_block_optin: size(A::MAX_SHARED_MEMORY_PER_BLOCK_OPTIN),
        pageable_memory_access_uses_host_page_tables: a(
            A::PAGEABLE_MEMORY_ACCESS_USES_HOST_PAGE_TABLES,
        ),
        direct_managed_mem_access_from_host: a(A::DIRECT_MANAGED_MEM_ACCESS_FROM_HOST),
        max_blocks_per_multi_processor: a(A::MAX_BLOCKS_PER_MULTIPROCESSOR),
        access_policy_max_window_size: a(A::MAX_ACCESS_POLICY_WINDOW_SIZE),
        reserved_shared_mem_per_block: size(A::RESERVED_SHARED_MEMORY_PER_BLOCK),
        host_register_supported: a(A::HOST_REGISTER_SUPPORTED),
        sparse_cuda_array_supported: a(A::SPARSE_CUDA_ARRAY_SUPPORTED),
        host_register_read_only_supported: a(A::HOST_REGISTER_READ_ONLY_SUPPORTED),
        timeline_semaphore_interop_supported: a(A::TIMELINE_SEMAPHORE_INTEROP_SUPPORTED),
        memory_pools_supported: a(A::MEMORY_POOLS_SUPPORTED),
        gpu_direct_rdma_supported: a(A::GPU_DIRECT_RDMA_SUPPORTED),
        gpu_direct_rdma_flush_writes_options: bits(A::GPU_DIRECT_RDMA_FLUSH_WRITES_OPTIONS),
        gpu_direct_rdma_writes_ordering: a(A::GPU_DIRECT_RDMA_WRITES_ORDERING),
        memory_pool_supported_handle_types: bits(A::MEMORY_POOL_SUPPORTED_HANDLE_TYPES),
        deferred_mapping_cuda_array_supported: a(A::DEFERRED_MAPPING_CUDA_ARRAY_SUPPORTED),
        ipc_event_supported: a(A::IPC_EVENT_SUPPORT),
        cluster_launch: a(A::CLUSTER_LAUNCH),
        // `cudaDeviceProp::unifiedFunctionPointers` has no driver attribute;
        // function pointers cannot be shared with a host across the network.
        unified_function_pointers: 0,
        device_numa_config: a(A::NUMA_CONFIG),
        device_numa_id: a(A::NUMA_ID),
        mps_enabled: a(A::MPS_ENABLED),
        host_numa_id: a(A::HOST_NUMA_ID),
        gpu_pci_device_id: bits(A::GPU_PCI_DEVICE_ID),
        gpu_pci_subsystem_id: bits(A::GPU_PCI_SUBSYSTEM_ID),
        host_numa_multinode_ipc_supported: a(A::HOST_NUMA_MULTINODE_IPC_SUPPORTED),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A device that answers every attribute below 150 but 139 with
    /// `1000 + attr` and rejects the rest.
    fn table() -> Vec<(i32, i32)> {
        attribute_table(&|attr| (attr < 150 && attr != 139).then_some(1000 + attr))
    }

    #[test]
    fn the_table_skips_placeholders_and_rejected_attributes() {
        let t = table();
        assert!(t.windows(2).all(|w| w[0].0 < w[1].0));
        let has = |a: DeviceAttr| t.iter().any(|&(k, _)| k == a.0);
        assert!(has(DeviceAttr::WARP_SIZE));
        assert!(!has(DeviceAttr::RESERVED_92));
        assert!(!has(DeviceAttr::MAX));
        assert!(!has(DeviceAttr::TENSOR_MAP_LARGE_TENSOR_MIN_SIZE));
        // The real attribute whose name starts like a placeholder's is there.
        assert!(has(DeviceAttr::RESERVED_SHARED_MEMORY_PER_BLOCK));
    }

    #[test]
    fn features_a_remote_client_cannot_use_are_absent() {
        let t = table();
        for &a in REMOTE_ABSENT {
            if let Some(&(_, v)) = t.iter().find(|&&(k, _)| k == a.0) {
                assert_eq!(v, 0, "{:?}", a.name());
            }
        }
        let p = device_props(&Identity::default(), &t);
        assert_eq!(p.managed_memory, 0);
        assert_eq!(p.can_use_host_pointer_for_registered_mem, 0);
        // Cooperative launches run on the server's GPU: its answer passes.
        assert_eq!(
            p.cooperative_launch,
            1000 + DeviceAttr::COOPERATIVE_LAUNCH.0
        );
        assert_eq!(p.pageable_memory_access, 0);
    }

    #[test]
    fn each_field_comes_from_its_attribute() {
        let id = Identity {
            name: "NVIDIA Test GPU".into(),
            uuid: [9; 16],
            total_mem: 80 << 30,
        };
        let p = device_props(&id, &table());
        let v = |a: DeviceAttr| 1000 + a.0;
        assert_eq!(p.name, "NVIDIA Test GPU");
        assert_eq!(p.uuid, [9; 16]);
        assert_eq!(p.total_global_mem, 80 << 30);
        assert_eq!(p.warp_size, v(DeviceAttr::WARP_SIZE));
        assert_eq!(
            p.shared_mem_per_block,
            v(DeviceAttr::MAX_SHARED_MEMORY_PER_BLOCK) as u64
        );
        assert_eq!(
            p.max_threads_dim,
            [
                v(DeviceAttr::MAX_BLOCK_DIM_X),
                v(DeviceAttr::MAX_BLOCK_DIM_Y),
                v(DeviceAttr::MAX_BLOCK_DIM_Z)
            ]
        );
        assert_eq!(p.major, v(DeviceAttr::COMPUTE_CAPABILITY_MAJOR));
        assert_eq!(p.minor, v(DeviceAttr::COMPUTE_CAPABILITY_MINOR));
        assert_eq!(
            p.max_texture_2d_linear,
            [
                v(DeviceAttr::MAX_TEXTURE_2D_LINEAR_WIDTH),
                v(DeviceAttr::MAX_TEXTURE_2D_LINEAR_HEIGHT),
                v(DeviceAttr::MAX_TEXTURE_2D_LINEAR_PITCH)
            ]
        );
        assert_eq!(p.pci_domain_id, v(DeviceAttr::PCI_DOMAIN_ID));
        assert_eq!(
            p.shared_mem_per_block_optin,
            v(DeviceAttr::MAX_SHARED_MEMORY_PER_BLOCK_OPTIN) as u64
        );
        assert_eq!(p.host_numa_id, v(DeviceAttr::HOST_NUMA_ID));
        assert_eq!(
            p.gpu_pci_subsystem_id,
            v(DeviceAttr::GPU_PCI_SUBSYSTEM_ID) as u32
        );
        assert_eq!(
            p.max_blocks_per_multi_processor,
            v(DeviceAttr::MAX_BLOCKS_PER_MULTIPROCESSOR)
        );
        // Rejected by this device: left at 0.
        assert_eq!(p.gpu_pci_device_id, 0);
    }
}
