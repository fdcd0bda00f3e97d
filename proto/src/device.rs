//! Device properties and attributes as they travel on the wire.
//!
//! [`DeviceProps`] mirrors CUDA 13's `struct cudaDeviceProp` field by field (the
//! C layout lives in the shim; here each field is encoded on its own), and
//! [`DeviceAttr`] names the values of `enum cudaDeviceAttr`.

/// Name every emulated device reports: clients use it to tell the
/// emulated device (which runs PTX and rcud's own texture objects) from a
/// real GPU behind the server.
pub const EMULATED_DEVICE_NAME: &str = "rcud emulated GPU (sm_80)";

/// A `cudaDeviceAttr` value. Values this build does not name stay representable.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct DeviceAttr(pub i32);

macro_rules! device_attrs {
    ($( $konst:ident = $value:literal, $name:literal; )*) => {
        impl DeviceAttr {
            $(
                #[doc = concat!("`", $name, "` (", stringify!($value), ").")]
                pub const $konst: Self = Self($value);
            )*

            /// Every enumerator of CUDA's header in its order, including the
            /// `RESERVED_*` placeholders and the `MAX` sentinel.
            pub const ALL: &'static [Self] = &[$(Self::$konst),*];

            /// The CUDA enumerator name, e.g. `cudaDevAttrWarpSize`.
            pub fn name(self) -> Option<&'static str> {
                match self.0 { $($value => Some($name),)* _ => None }
            }
        }
    };
}

// Every enumerator of `enum cudaDeviceAttr` in CUDA 13's `driver_types.h`, in
// header order. The header leaves `cudaDevAttrMax` without an explicit value; it
// follows the last one, so it is 161.
device_attrs! {
    MAX_THREADS_PER_BLOCK = 1, "cudaDevAttrMaxThreadsPerBlock";
    MAX_BLOCK_DIM_X = 2, "cudaDevAttrMaxBlockDimX";
    MAX_BLOCK_DIM_Y = 3, "cudaDevAttrMaxBlockDimY";
    MAX_BLOCK_DIM_Z = 4, "cudaDevAttrMaxBlockDimZ";
    MAX_GRID_DIM_X = 5, "cudaDevAttrMaxGridDimX";
    MAX_GRID_DIM_Y = 6, "cudaDevAttrMaxGridDimY";
    MAX_GRID_DIM_Z = 7, "cudaDevAttrMaxGridDimZ";
    MAX_SHARED_MEMORY_PER_BLOCK = 8, "cudaDevAttrMaxSharedMemoryPerBlock";
    TOTAL_CONSTANT_MEMORY = 9, "cudaDevAttrTotalConstantMemory";
    WARP_SIZE = 10, "cudaDevAttrWarpSize";
    MAX_PITCH = 11, "cudaDevAttrMaxPitch";
    MAX_REGISTERS_PER_BLOCK = 12, "cudaDevAttrMaxRegistersPerBlock";
    CLOCK_RATE = 13, "cudaDevAttrClockRate";
    TEXTURE_ALIGNMENT = 14, "cudaDevAttrTextureAlignment";
    GPU_OVERLAP = 15, "cudaDevAttrGpuOverlap";
    MULTI_PROCESSOR_COUNT = 16, "cudaDevAttrMultiProcessorCount";
    KERNEL_EXEC_TIMEOUT = 17, "cudaDevAttrKernelExecTimeout";
    INTEGRATED = 18, "cudaDevAttrIntegrated";
    CAN_MAP_HOST_MEMORY = 19, "cudaDevAttrCanMapHostMemory";
    COMPUTE_MODE = 20, "cudaDevAttrComputeMode";
    MAX_TEXTURE_1D_WIDTH = 21, "cudaDevAttrMaxTexture1DWidth";
    MAX_TEXTURE_2D_WIDTH = 22, "cudaDevAttrMaxTexture2DWidth";
    MAX_TEXTURE_2D_HEIGHT = 23, "cudaDevAttrMaxTexture2DHeight";
    MAX_TEXTURE_3D_WIDTH = 24, "cudaDevAttrMaxTexture3DWidth";
    MAX_TEXTURE_3D_HEIGHT = 25, "cudaDevAttrMaxTexture3DHeight";
    MAX_TEXTURE_3D_DEPTH = 26, "cudaDevAttrMaxTexture3DDepth";
    MAX_TEXTURE_2D_LAYERED_WIDTH = 27, "cudaDevAttrMaxTexture2DLayeredWidth";
    MAX_TEXTURE_2D_LAYERED_HEIGHT = 28, "cudaDevAttrMaxTexture2DLayeredHeight";
    MAX_TEXTURE_2D_LAYERED_LAYERS = 29, "cudaDevAttrMaxTexture2DLayeredLayers";
    SURFACE_ALIGNMENT = 30, "cudaDevAttrSurfaceAlignment";
    CONCURRENT_KERNELS = 31, "cudaDevAttrConcurrentKernels";
    ECC_ENABLED = 32, "cudaDevAttrEccEnabled";
    PCI_BUS_ID = 33, "cudaDevAttrPciBusId";
    PCI_DEVICE_ID = 34, "cudaDevAttrPciDeviceId";
    TCC_DRIVER = 35, "cudaDevAttrTccDriver";
    MEMORY_CLOCK_RATE = 36, "cudaDevAttrMemoryClockRate";
    GLOBAL_MEMORY_BUS_WIDTH = 37, "cudaDevAttrGlobalMemoryBusWidth";
    L2_CACHE_SIZE = 38, "cudaDevAttrL2CacheSize";
    MAX_THREADS_PER_MULTI_PROCESSOR = 39, "cudaDevAttrMaxThreadsPerMultiProcessor";
    ASYNC_ENGINE_COUNT = 40, "cudaDevAttrAsyncEngineCount";
    UNIFIED_ADDRESSING = 41, "cudaDevAttrUnifiedAddressing";
    MAX_TEXTURE_1D_LAYERED_WIDTH = 42, "cudaDevAttrMaxTexture1DLayeredWidth";
    MAX_TEXTURE_1D_LAYERED_LAYERS = 43, "cudaDevAttrMaxTexture1DLayeredLayers";
    MAX_TEXTURE_2D_GATHER_WIDTH = 45, "cudaDevAttrMaxTexture2DGatherWidth";
    MAX_TEXTURE_2D_GATHER_HEIGHT = 46, "cudaDevAttrMaxTexture2DGatherHeight";
    MAX_TEXTURE_3D_WIDTH_ALT = 47, "cudaDevAttrMaxTexture3DWidthAlt";
    MAX_TEXTURE_3D_HEIGHT_ALT = 48, "cudaDevAttrMaxTexture3DHeightAlt";
    MAX_TEXTURE_3D_DEPTH_ALT = 49, "cudaDevAttrMaxTexture3DDepthAlt";
    PCI_DOMAIN_ID = 50, "cudaDevAttrPciDomainId";
    TEXTURE_PITCH_ALIGNMENT = 51, "cudaDevAttrTexturePitchAlignment";
    MAX_TEXTURE_CUBEMAP_WIDTH = 52, "cudaDevAttrMaxTextureCubemapWidth";
    MAX_TEXTURE_CUBEMAP_LAYERED_WIDTH = 53, "cudaDevAttrMaxTextureCubemapLayeredWidth";
    MAX_TEXTURE_CUBEMAP_LAYERED_LAYERS = 54, "cudaDevAttrMaxTextureCubemapLayeredLayers";
    MAX_SURFACE_1D_WIDTH = 55, "cudaDevAttrMaxSurface1DWidth";
    MAX_SURFACE_2D_WIDTH = 56, "cudaDevAttrMaxSurface2DWidth";
    MAX_SURFACE_2D_HEIGHT = 57, "cudaDevAttrMaxSurface2DHeight";
    MAX_SURFACE_3D_WIDTH = 58, "cudaDevAttrMaxSurface3DWidth";
    MAX_SURFACE_3D_HEIGHT = 59, "cudaDevAttrMaxSurface3DHeight";
    MAX_SURFACE_3D_DEPTH = 60, "cudaDevAttrMaxSurface3DDepth";
    MAX_SURFACE_1D_LAYERED_WIDTH = 61, "cudaDevAttrMaxSurface1DLayeredWidth";
    MAX_SURFACE_1D_LAYERED_LAYERS = 62, "cudaDevAttrMaxSurface1DLayeredLayers";
    MAX_SURFACE_2D_LAYERED_WIDTH = 63, "cudaDevAttrMaxSurface2DLayeredWidth";
    MAX_SURFACE_2D_LAYERED_HEIGHT = 64, "cudaDevAttrMaxSurface2DLayeredHeight";
    MAX_SURFACE_2D_LAYERED_LAYERS = 65, "cudaDevAttrMaxSurface2DLayeredLayers";
    MAX_SURFACE_CUBEMAP_WIDTH = 66, "cudaDevAttrMaxSurfaceCubemapWidth";
    MAX_SURFACE_CUBEMAP_LAYERED_WIDTH = 67, "cudaDevAttrMaxSurfaceCubemapLayeredWidth";
    MAX_SURFACE_CUBEMAP_LAYERED_LAYERS = 68, "cudaDevAttrMaxSurfaceCubemapLayeredLayers";
    MAX_TEXTURE_1D_LINEAR_WIDTH = 69, "cudaDevAttrMaxTexture1DLinearWidth";
    MAX_TEXTURE_2D_LINEAR_WIDTH = 70, "cudaDevAttrMaxTexture2DLinearWidth";
    MAX_TEXTURE_2D_LINEAR_HEIGHT = 71, "cudaDevAttrMaxTexture2DLinearHeight";
    MAX_TEXTURE_2D_LINEAR_PITCH = 72, "cudaDevAttrMaxTexture2DLinearPitch";
    MAX_TEXTURE_2D_MIPMAPPED_WIDTH = 73, "cudaDevAttrMaxTexture2DMipmappedWidth";
    MAX_TEXTURE_2D_MIPMAPPED_HEIGHT = 74, "cudaDevAttrMaxTexture2DMipmappedHeight";
    COMPUTE_CAPABILITY_MAJOR = 75, "cudaDevAttrComputeCapabilityMajor";
    COMPUTE_CAPABILITY_MINOR = 76, "cudaDevAttrComputeCapabilityMinor";
    MAX_TEXTURE_1D_MIPMAPPED_WIDTH = 77, "cudaDevAttrMaxTexture1DMipmappedWidth";
    STREAM_PRIORITIES_SUPPORTED = 78, "cudaDevAttrStreamPrioritiesSupported";
    GLOBAL_L1_CACHE_SUPPORTED = 79, "cudaDevAttrGlobalL1CacheSupported";
    LOCAL_L1_CACHE_SUPPORTED = 80, "cudaDevAttrLocalL1CacheSupported";
    MAX_SHARED_MEMORY_PER_MULTIPROCESSOR = 81, "cudaDevAttrMaxSharedMemoryPerMultiprocessor";
    MAX_REGISTERS_PER_MULTIPROCESSOR = 82, "cudaDevAttrMaxRegistersPerMultiprocessor";
    MANAGED_MEMORY = 83, "cudaDevAttrManagedMemory";
    IS_MULTI_GPU_BOARD = 84, "cudaDevAttrIsMultiGpuBoard";
    MULTI_GPU_BOARD_GROUP_ID = 85, "cudaDevAttrMultiGpuBoardGroupID";
    HOST_NATIVE_ATOMIC_SUPPORTED = 86, "cudaDevAttrHostNativeAtomicSupported";
    SINGLE_TO_DOUBLE_PRECISION_PERF_RATIO = 87, "cudaDevAttrSingleToDoublePrecisionPerfRatio";
    PAGEABLE_MEMORY_ACCESS = 88, "cudaDevAttrPageableMemoryAccess";
    CONCURRENT_MANAGED_ACCESS = 89, "cudaDevAttrConcurrentManagedAccess";
    COMPUTE_PREEMPTION_SUPPORTED = 90, "cudaDevAttrComputePreemptionSupported";
    CAN_USE_HOST_POINTER_FOR_REGISTERED_MEM = 91, "cudaDevAttrCanUseHostPointerForRegisteredMem";
    RESERVED_92 = 92, "cudaDevAttrReserved92";
    RESERVED_93 = 93, "cudaDevAttrReserved93";
    RESERVED_94 = 94, "cudaDevAttrReserved94";
    COOPERATIVE_LAUNCH = 95, "cudaDevAttrCooperativeLaunch";
    RESERVED_96 = 96, "cudaDevAttrReserved96";
    MAX_SHARED_MEMORY_PER_BLOCK_OPTIN = 97, "cudaDevAttrMaxSharedMemoryPerBlockOptin";
    CAN_FLUSH_REMOTE_WRITES = 98, "cudaDevAttrCanFlushRemoteWrites";
    HOST_REGISTER_SUPPORTED = 99, "cudaDevAttrHostRegisterSupported";
    PAGEABLE_MEMORY_ACCESS_USES_HOST_PAGE_TABLES = 100, "cudaDevAttrPageableMemoryAccessUsesHostPageTables";
    DIRECT_MANAGED_MEM_ACCESS_FROM_HOST = 101, "cudaDevAttrDirectManagedMemAccessFromHost";
    MAX_BLOCKS_PER_MULTIPROCESSOR = 106, "cudaDevAttrMaxBlocksPerMultiprocessor";
    MAX_PERSISTING_L2_CACHE_SIZE = 108, "cudaDevAttrMaxPersistingL2CacheSize";
    MAX_ACCESS_POLICY_WINDOW_SIZE = 109, "cudaDevAttrMaxAccessPolicyWindowSize";
    RESERVED_SHARED_MEMORY_PER_BLOCK = 111, "cudaDevAttrReservedSharedMemoryPerBlock";
    SPARSE_CUDA_ARRAY_SUPPORTED = 112, "cudaDevAttrSparseCudaArraySupported";
    HOST_REGISTER_READ_ONLY_SUPPORTED = 113, "cudaDevAttrHostRegisterReadOnlySupported";
    TIMELINE_SEMAPHORE_INTEROP_SUPPORTED = 114, "cudaDevAttrTimelineSemaphoreInteropSupported";
    MEMORY_POOLS_SUPPORTED = 115, "cudaDevAttrMemoryPoolsSupported";
    GPU_DIRECT_RDMA_SUPPORTED = 116, "cudaDevAttrGPUDirectRDMASupported";
    GPU_DIRECT_RDMA_FLUSH_WRITES_OPTIONS = 117, "cudaDevAttrGPUDirectRDMAFlushWritesOptions";
    GPU_DIRECT_RDMA_WRITES_ORDERING = 118, "cudaDevAttrGPUDirectRDMAWritesOrdering";
    MEMORY_POOL_SUPPORTED_HANDLE_TYPES = 119, "cudaDevAttrMemoryPoolSupportedHandleTypes";
    CLUSTER_LAUNCH = 120, "cudaDevAttrClusterLaunch";
    DEFERRED_MAPPING_CUDA_ARRAY_SUPPORTED = 121, "cudaDevAttrDeferredMappingCudaArraySupported";
    RESERVED_122 = 122, "cudaDevAttrReserved122";
    RESERVED_123 = 123, "cudaDevAttrReserved123";
    RESERVED_124 = 124, "cudaDevAttrReserved124";
    IPC_EVENT_SUPPORT = 125, "cudaDevAttrIpcEventSupport";
    MEM_SYNC_DOMAIN_COUNT = 126, "cudaDevAttrMemSyncDomainCount";
    RESERVED_127 = 127, "cudaDevAttrReserved127";
    RESERVED_128 = 128, "cudaDevAttrReserved128";
    RESERVED_129 = 129, "cudaDevAttrReserved129";
    NUMA_CONFIG = 130, "cudaDevAttrNumaConfig";
    NUMA_ID = 131, "cudaDevAttrNumaId";
    RESERVED_132 = 132, "cudaDevAttrReserved132";
    MPS_ENABLED = 133, "cudaDevAttrMpsEnabled";
    HOST_NUMA_ID = 134, "cudaDevAttrHostNumaId";
    D3D12_CIG_SUPPORTED = 135, "cudaDevAttrD3D12CigSupported";
    VULKAN_CIG_SUPPORTED = 138, "cudaDevAttrVulkanCigSupported";
    GPU_PCI_DEVICE_ID = 139, "cudaDevAttrGpuPciDeviceId";
    GPU_PCI_SUBSYSTEM_ID = 140, "cudaDevAttrGpuPciSubsystemId";
    RESERVED_141 = 141, "cudaDevAttrReserved141";
    HOST_NUMA_MEMORY_POOLS_SUPPORTED = 142, "cudaDevAttrHostNumaMemoryPoolsSupported";
    HOST_NUMA_MULTINODE_IPC_SUPPORTED = 143, "cudaDevAttrHostNumaMultinodeIpcSupported";
    HOST_MEMORY_POOLS_SUPPORTED = 144, "cudaDevAttrHostMemoryPoolsSupported";
    RESERVED_145 = 145, "cudaDevAttrReserved145";
    ONLY_PARTIAL_HOST_NATIVE_ATOMIC_SUPPORTED = 147, "cudaDevAttrOnlyPartialHostNativeAtomicSupported";
    ATOMIC_REDUCTION_SUPPORTED = 148, "cudaDevAttrAtomicReductionSupported";
    LOCALITY_DOMAIN_COUNT = 149, "cudaDevAttrLocalityDomainCount";
    OVERSIZED_SHARED_MEMORY_PER_BLOCK = 150, "cudaDevAttrOversizedSharedMemoryPerBlock";
    CIG_STREAMS_SUPPORTED = 151, "cudaDevAttrCigStreamsSupported";
    LOCALITY_DOMAIN_MULTIPROCESSOR_COUNT = 157, "cudaDevAttrLocalityDomainMultiprocessorCount";
    TENSOR_MAP_LARGE_TENSOR_MIN_SIZE = 160, "cudaDevAttrTensorMapLargeTensorMinSize";
    MAX = 161, "cudaDevAttrMax";
}

impl DeviceAttr {
    /// Whether this is one of the `cudaDevAttrReserved*` placeholders or the
    /// `cudaDevAttrMax` sentinel, which no device answers.
    pub fn is_placeholder(self) -> bool {
        // Not a prefix test: `cudaDevAttrReservedSharedMemoryPerBlock` is real.
        self == Self::MAX
            || self
                .name()
                .and_then(|n| n.strip_prefix("cudaDevAttrReserved"))
                .is_some_and(|rest| rest.bytes().all(|b| b.is_ascii_digit()))
    }
}

crate::wire_struct! {
    /// Every field of CUDA 13's `struct cudaDeviceProp`, in header order, except
    /// the trailing `reserved` padding. `size_t` fields are `u64` so that the
    /// wire form does not depend on the peer's pointer width.
    #[derive(Debug, Clone, PartialEq, Eq, Default)]
    pub struct DeviceProps {
        /// Marketing name of the device, without the trailing NUL.
        pub name: String,
        /// 16-byte identifier that is stable for this device.
        pub uuid: [u8; 16],
        /// Locally unique identifier (meaningful on Windows only).
        pub luid: [u8; 8],
        /// Node mask that goes with `luid` (Windows only).
        pub luid_device_node_mask: u32,
        /// Bytes of global memory.
        pub total_global_mem: u64,
        /// Bytes of shared memory a block may use without opting in.
        pub shared_mem_per_block: u64,
        /// 32-bit registers available to one block.
        pub regs_per_block: i32,
        /// Threads per warp.
        pub warp_size: i32,
        /// Largest pitch in bytes accepted by the pitched copy functions.
        pub mem_pitch: u64,
        /// Most threads in one block.
        pub max_threads_per_block: i32,
        /// Largest block extent in x, y and z.
        pub max_threads_dim: [i32; 3],
        /// Largest grid extent in x, y and z.
        pub max_grid_size: [i32; 3],
        /// Bytes of constant memory.
        pub total_const_mem: u64,
        /// Compute capability, major part.
        pub major: i32,
        /// Compute capability, minor part.
        pub minor: i32,
        /// Alignment in bytes required of texture base addresses.
        pub texture_alignment: u64,
        /// Alignment in bytes required of the pitch of 2D textures bound to linear memory.
        pub texture_pitch_alignment: u64,
        /// Number of streaming multiprocessors.
        pub multi_processor_count: i32,
        /// 1 when the GPU shares memory with the host (integrated), else 0.
        pub integrated: i32,
        /// 1 when page-locked host memory can be mapped into the device address space.
        pub can_map_host_memory: i32,
        /// Widest 1D texture.
        pub max_texture_1d: i32,
        /// Widest 1D mipmapped texture.
        pub max_texture_1d_mipmap: i32,
        /// Largest 2D texture (width, height).
        pub max_texture_2d: [i32; 2],
        /// Largest 2D mipmapped texture (width, height).
        pub max_texture_2d_mipmap: [i32; 2],
        /// Largest 2D texture over linear memory (width, height, pitch).
        pub max_texture_2d_linear: [i32; 3],
        /// Largest 2D texture usable with gather (width, height).
        pub max_texture_2d_gather: [i32; 2],
        /// Largest 3D texture (width, height, depth).
        pub max_texture_3d: [i32; 3],
        /// Alternative largest 3D texture (width, height, depth).
        pub max_texture_3d_alt: [i32; 3],
        /// Widest cubemap texture.
        pub max_texture_cubemap: i32,
        /// Largest 1D layered texture (width, layers).
        pub max_texture_1d_layered: [i32; 2],
        /// Largest 2D layered texture (width, height, layers).
        pub max_texture_2d_layered: [i32; 3],
        /// Largest cubemap layered texture (width, layers).
        pub max_texture_cubemap_layered: [i32; 2],
        /// Widest 1D surface.
        pub max_surface_1d: i32,
        /// Largest 2D surface (width, height).
        pub max_surface_2d: [i32; 2],
        /// Largest 3D surface (width, height, depth).
        pub max_surface_3d: [i32; 3],
        /// Largest 1D layered surface (width, layers).
        pub max_surface_1d_layered: [i32; 2],
        /// Largest 2D layered surface (width, height, layers).
        pub max_surface_2d_layered: [i32; 3],
        /// Widest cubemap surface.
        pub max_surface_cubemap: i32,
        /// Largest cubemap layered surface (width, layers).
        pub max_surface_cubemap_layered: [i32; 2],
        /// Alignment in bytes required of surfaces.
        pub surface_alignment: u64,
        /// 1 when several kernels can run at the same time.
        pub concurrent_kernels: i32,
        /// 1 when ECC is on.
        pub ecc_enabled: i32,
        /// PCI bus number.
        pub pci_bus_id: i32,
        /// PCI device (slot) number.
        pub pci_device_id: i32,
        /// PCI domain number.
        pub pci_domain_id: i32,
        /// 1 when the device runs the Windows TCC driver.
        pub tcc_driver: i32,
        /// Number of copy engines that can overlap with kernels.
        pub async_engine_count: i32,
        /// 1 when host and device share one virtual address space.
        pub unified_addressing: i32,
        /// Width of the memory bus in bits.
        pub memory_bus_width: i32,
        /// Bytes of L2 cache.
        pub l2_cache_size: i32,
        /// Most bytes of L2 that can be set aside for persisting accesses.
        pub persisting_l2_cache_max_size: i32,
        /// Most resident threads per multiprocessor.
        pub max_threads_per_multi_processor: i32,
        /// 1 when streams can be given priorities.
        pub stream_priorities_supported: i32,
        /// 1 when global loads can be cached in L1.
        pub global_l1_cache_supported: i32,
        /// 1 when local loads can be cached in L1.
        pub local_l1_cache_supported: i32,
        /// Bytes of shared memory per multiprocessor.
        pub shared_mem_per_multiprocessor: u64,
        /// 32-bit registers per multiprocessor.
        pub regs_per_multiprocessor: i32,
        /// 1 when managed (unified) memory can be allocated.
        pub managed_memory: i32,
        /// 1 when the device sits on a board with other GPUs.
        pub is_multi_gpu_board: i32,
        /// Identifier shared by the GPUs of one board.
        pub multi_gpu_board_group_id: i32,
        /// 1 when the host link supports atomics natively.
        pub host_native_atomic_supported: i32,
        /// 1 when kernels can access pageable host memory directly.
        pub pageable_memory_access: i32,
        /// 1 when host and device can access managed memory at the same time.
        pub concurrent_managed_access: i32,
        /// 1 when compute work can be preempted.
        pub compute_preemption_supported: i32,
        /// 1 when registered host memory has the same address on the device.
        pub can_use_host_pointer_for_registered_mem: i32,
        /// 1 when cooperative kernel launches are possible.
        pub cooperative_launch: i32,
        /// Most bytes of shared memory a block may use after opting in.
        pub shared_mem_per_block_optin: u64,
        /// 1 when pageable memory is reached through the host's page tables.
        pub pageable_memory_access_uses_host_page_tables: i32,
        /// 1 when the host can access managed memory without migration.
        pub direct_managed_mem_access_from_host: i32,
        /// Most resident blocks per multiprocessor.
        pub max_blocks_per_multi_processor: i32,
        /// Largest access policy window in bytes.
        pub access_policy_max_window_size: i32,
        /// Bytes of shared memory per block kept by the driver.
        pub reserved_shared_mem_per_block: u64,
        /// 1 when host memory can be registered (page-locked in place).
        pub host_register_supported: i32,
        /// 1 when sparse CUDA arrays are available.
        pub sparse_cuda_array_supported: i32,
        /// 1 when host memory can be registered read-only.
        pub host_register_read_only_supported: i32,
        /// 1 when external timeline semaphores can be imported.
        pub timeline_semaphore_interop_supported: i32,
        /// 1 when stream-ordered allocation (memory pools) is available.
        pub memory_pools_supported: i32,
        /// 1 when GPUDirect RDMA is available.
        pub gpu_direct_rdma_supported: i32,
        /// Bit mask of the ways GPUDirect RDMA writes can be flushed.
        pub gpu_direct_rdma_flush_writes_options: u32,
        /// Ordering guarantee level for GPUDirect RDMA writes.
        pub gpu_direct_rdma_writes_ordering: i32,
        /// Bit mask of shareable handle types memory pools can export.
        pub memory_pool_supported_handle_types: u32,
        /// 1 when CUDA arrays can be mapped lazily.
        pub deferred_mapping_cuda_array_supported: i32,
        /// 1 when events can be shared between processes.
        pub ipc_event_supported: i32,
        /// 1 when thread block clusters can be launched.
        pub cluster_launch: i32,
        /// 1 when host and device share function pointers.
        pub unified_function_pointers: i32,
        /// How the device memory appears to the host's NUMA layout.
        pub device_numa_config: i32,
        /// NUMA node of the device memory, or -1.
        pub device_numa_id: i32,
        /// 1 when the device is used through MPS.
        pub mps_enabled: i32,
        /// NUMA node of the host nearest to the device, or -1.
        pub host_numa_id: i32,
        /// Combined PCI device and vendor identifier.
        pub gpu_pci_device_id: u32,
        /// Combined PCI subsystem and subsystem vendor identifier.
        pub gpu_pci_subsystem_id: u32,
        /// 1 when IPC works across NUMA nodes of the host.
        pub host_numa_multinode_ipc_supported: i32,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::codec::{from_slice, to_vec};
    use crate::DecodeError;

    fn sample() -> DeviceProps {
        DeviceProps {
            name: "test device \u{e9}".to_string(),
            uuid: [7; 16],
            luid: [1, 2, 3, 4, 5, 6, 7, 8],
            luid_device_node_mask: 0xdead_beef,
            total_global_mem: 40 << 30,
            shared_mem_per_block: 48 << 10,
            max_threads_dim: [1024, 1024, 64],
            max_grid_size: [i32::MAX, 65_535, 65_535],
            major: 8,
            minor: 0,
            max_texture_2d_linear: [1, 2, 3],
            max_surface_cubemap_layered: [4, 5],
            device_numa_id: -1,
            gpu_pci_subsystem_id: u32::MAX,
            host_numa_multinode_ipc_supported: 1,
            ..DeviceProps::default()
        }
    }

    #[test]
    fn props_round_trip() {
        let props = sample();
        let bytes = to_vec(&props);
        let back: DeviceProps = from_slice(&bytes).expect("decode");
        assert_eq!(back, props);

        let default = DeviceProps::default();
        let back: DeviceProps = from_slice(&to_vec(&default)).expect("decode");
        assert_eq!(back, default);
    }

    #[test]
    fn props_reject_truncated_and_trailing() {
        let mut bytes = to_vec(&sample());
        assert!(matches!(
            from_slice::<DeviceProps>(&bytes[..bytes.len() - 1]),
            Err(DecodeError::Truncated { .. })
        ));
        bytes.push(0);
        assert_eq!(
            from_slice::<DeviceProps>(&bytes),
            Err(DecodeError::Trailing(1))
        );
    }

    #[test]
    fn attr_names() {
        assert_eq!(DeviceAttr::ALL.len(), 144);
        assert_eq!(DeviceAttr::MAX_THREADS_PER_BLOCK.0, 1);
        assert_eq!(
            DeviceAttr::MAX_THREADS_PER_BLOCK.name(),
            Some("cudaDevAttrMaxThreadsPerBlock")
        );
        assert_eq!(DeviceAttr::COMPUTE_CAPABILITY_MAJOR.0, 75);
        assert_eq!(DeviceAttr::MAX_SHARED_MEMORY_PER_BLOCK_OPTIN.0, 97);
        assert_eq!(
            DeviceAttr::L2_CACHE_SIZE.name(),
            Some("cudaDevAttrL2CacheSize")
        );
        assert_eq!(DeviceAttr::GPU_DIRECT_RDMA_SUPPORTED.0, 116);
        assert_eq!(DeviceAttr::D3D12_CIG_SUPPORTED.0, 135);
        assert_eq!(DeviceAttr::TENSOR_MAP_LARGE_TENSOR_MIN_SIZE.0, 160);
        assert_eq!(DeviceAttr::MAX.0, 161);
        assert_eq!(DeviceAttr(44).name(), None);
        assert_eq!(DeviceAttr(0).name(), None);
        assert!(DeviceAttr::RESERVED_92.is_placeholder());
        assert!(DeviceAttr::MAX.is_placeholder());
        assert!(!DeviceAttr::WARP_SIZE.is_placeholder());
        assert!(!DeviceAttr::RESERVED_SHARED_MEMORY_PER_BLOCK.is_placeholder());
        let placeholders = DeviceAttr::ALL.iter().filter(|a| a.is_placeholder());
        assert_eq!(placeholders.count(), 14);
        assert!(!DeviceAttr(44).is_placeholder());

        let mut values: Vec<i32> = DeviceAttr::ALL.iter().map(|a| a.0).collect();
        assert!(
            values.windows(2).all(|w| w[0] < w[1]),
            "header order is ascending"
        );
        values.dedup();
        assert_eq!(values.len(), 144);
        for a in DeviceAttr::ALL {
            assert!(a.name().is_some_and(|n| n.starts_with("cudaDevAttr")));
        }
    }
}
