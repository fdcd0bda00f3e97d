//! `struct cudaDeviceProp` exactly as CUDA 13 lays it out, and its conversion
//! from the wire form [`rcud_proto::DeviceProps`].
//!
//! The layout is checked against the real header by the test at the end of this
//! file, which compiles `tests/abi/device_prop_layout.c`.

use std::ffi::c_char;

use rcud_proto::DeviceProps;

/// CUDA 13's `struct cudaDeviceProp`, what `cudaGetDeviceProperties` fills in.
/// Fields are the C fields in the same order, renamed to snake_case.
#[repr(C)]
#[derive(Clone, Copy)]
pub(crate) struct CudaDeviceProp {
    /// Device name, NUL-terminated.
    pub(crate) name: [c_char; 256],
    /// `cudaUUID_t` (a struct of 16 `char`s): stable device identifier.
    pub(crate) uuid: [u8; 16],
    /// Locally unique identifier (meaningful on Windows only).
    pub(crate) luid: [c_char; 8],
    /// Node mask that goes with `luid` (Windows only).
    pub(crate) luid_device_node_mask: u32,
    /// Bytes of global memory.
    pub(crate) total_global_mem: usize,
    /// Bytes of shared memory a block may use without opting in.
    pub(crate) shared_mem_per_block: usize,
    /// 32-bit registers available to one block.
    pub(crate) regs_per_block: i32,
    /// Threads per warp.
    pub(crate) warp_size: i32,
    /// Largest pitch in bytes accepted by the pitched copy functions.
    pub(crate) mem_pitch: usize,
    /// Most threads in one block.
    pub(crate) max_threads_per_block: i32,
    /// Largest block extent in x, y and z.
    pub(crate) max_threads_dim: [i32; 3],
    /// Largest grid extent in x, y and z.
    pub(crate) max_grid_size: [i32; 3],
    /// Bytes of constant memory.
    pub(crate) total_const_mem: usize,
    /// Compute capability, major part.
    pub(crate) major: i32,
    /// Compute capability, minor part.
    pub(crate) minor: i32,
    /// Alignment in bytes required of texture base addresses.
    pub(crate) texture_alignment: usize,
    /// Alignment in bytes required of the pitch of 2D textures bound to linear memory.
    pub(crate) texture_pitch_alignment: usize,
    /// Number of streaming multiprocessors.
    pub(crate) multi_processor_count: i32,
    /// 1 when the GPU shares memory with the host (integrated), else 0.
    pub(crate) integrated: i32,
    /// 1 when page-locked host memory can be mapped into the device address space.
    pub(crate) can_map_host_memory: i32,
    /// Widest 1D texture.
    pub(crate) max_texture_1d: i32,
    /// Widest 1D mipmapped texture.
    pub(crate) max_texture_1d_mipmap: i32,
    /// Largest 2D texture (width, height).
    pub(crate) max_texture_2d: [i32; 2],
    /// Largest 2D mipmapped texture (width, height).
    pub(crate) max_texture_2d_mipmap: [i32; 2],
    /// Largest 2D texture over linear memory (width, height, pitch).
    pub(crate) max_texture_2d_linear: [i32; 3],
    /// Largest 2D texture usable with gather (width, height).
    pub(crate) max_texture_2d_gather: [i32; 2],
    /// Largest 3D texture (width, height, depth).
    pub(crate) max_texture_3d: [i32; 3],
    /// Alternative largest 3D texture (width, height, depth).
    pub(crate) max_texture_3d_alt: [i32; 3],
    /// Widest cubemap texture.
    pub(crate) max_texture_cubemap: i32,
    /// Largest 1D layered texture (width, layers).
    pub(crate) max_texture_1d_layered: [i32; 2],
    /// Largest 2D layered texture (width, height, layers).
    pub(crate) max_texture_2d_layered: [i32; 3],
    /// Largest cubemap layered texture (width, layers).
    pub(crate) max_texture_cubemap_layered: [i32; 2],
    /// Widest 1D surface.
    pub(crate) max_surface_1d: i32,
    /// Largest 2D surface (width, height).
    pub(crate) max_surface_2d: [i32; 2],
    /// Largest 3D surface (width, height, depth).
    pub(crate) max_surface_3d: [i32; 3],
    /// Largest 1D layered surface (width, layers).
    pub(crate) max_surface_1d_layered: [i32; 2],
    /// Largest 2D layered surface (width, height, layers).
    pub(crate) max_surface_2d_layered: [i32; 3],
    /// Widest cubemap surface.
    pub(crate) max_surface_cubemap: i32,
    /// Largest cubemap layered surface (width, layers).
    pub(crate) max_surface_cubemap_layered: [i32; 2],
    /// Alignment in bytes required of surfaces.
    pub(crate) surface_alignment: usize,
    /// 1 when several kernels can run at the same time.
    pub(crate) concurrent_kernels: i32,
    /// 1 when ECC is on.
    pub(crate) ecc_enabled: i32,
    /// PCI bus number.
    pub(crate) pci_bus_id: i32,
    /// PCI device (slot) number.
    pub(crate) pci_device_id: i32,
    /// PCI domain number.
    pub(crate) pci_domain_id: i32,
    /// 1 when the device runs the Windows TCC driver.
    pub(crate) tcc_driver: i32,
    /// Number of copy engines that can overlap with kernels.
    pub(crate) async_engine_count: i32,
    /// 1 when host and device share one virtual address space.
    pub(crate) unified_addressing: i32,
    /// Width of the memory bus in bits.
    pub(crate) memory_bus_width: i32,
    /// Bytes of L2 cache.
    pub(crate) l2_cache_size: i32,
    /// Most bytes of L2 that can be set aside for persisting accesses.
    pub(crate) persisting_l2_cache_max_size: i32,
    /// Most resident threads per multiprocessor.
    pub(crate) max_threads_per_multi_processor: i32,
    /// 1 when streams can be given priorities.
    pub(crate) stream_priorities_supported: i32,
    /// 1 when global loads can be cached in L1.
    pub(crate) global_l1_cache_supported: i32,
    /// 1 when local loads can be cached in L1.
    pub(crate) local_l1_cache_supported: i32,
    /// Bytes of shared memory per multiprocessor.
    pub(crate) shared_mem_per_multiprocessor: usize,
    /// 32-bit registers per multiprocessor.
    pub(crate) regs_per_multiprocessor: i32,
    /// 1 when managed (unified) memory can be allocated.
    pub(crate) managed_memory: i32,
    /// 1 when the device sits on a board with other GPUs.
    pub(crate) is_multi_gpu_board: i32,
    /// Identifier shared by the GPUs of one board.
    pub(crate) multi_gpu_board_group_id: i32,
    /// 1 when the host link supports atomics natively.
    pub(crate) host_native_atomic_supported: i32,
    /// 1 when kernels can access pageable host memory directly.
    pub(crate) pageable_memory_access: i32,
    /// 1 when host and device can access managed memory at the same time.
    pub(crate) concurrent_managed_access: i32,
    /// 1 when compute work can be preempted.
    pub(crate) compute_preemption_supported: i32,
    /// 1 when registered host memory has the same address on the device.
    pub(crate) can_use_host_pointer_for_registered_mem: i32,
    /// 1 when cooperative kernel launches are possible.
    pub(crate) cooperative_launch: i32,
    /// Most bytes of shared memory a block may use after opting in.
    pub(crate) shared_mem_per_block_optin: usize,
    /// 1 when pageable memory is reached through the host's page tables.
    pub(crate) pageable_memory_access_uses_host_page_tables: i32,
    /// 1 when the host can access managed memory without migration.
    pub(crate) direct_managed_mem_access_from_host: i32,
    /// Most resident blocks per multiprocessor.
    pub(crate) max_blocks_per_multi_processor: i32,
    /// Largest access policy window in bytes.
    pub(crate) access_policy_max_window_size: i32,
    /// Bytes of shared memory per block kept by the driver.
    pub(crate) reserved_shared_mem_per_block: usize,
    /// 1 when host memory can be registered (page-locked in place).
    pub(crate) host_register_supported: i32,
    /// 1 when sparse CUDA arrays are available.
    pub(crate) sparse_cuda_array_supported: i32,
    /// 1 when host memory can be registered read-only.
    pub(crate) host_register_read_only_supported: i32,
    /// 1 when external timeline semaphores can be imported.
    pub(crate) timeline_semaphore_interop_supported: i32,
    /// 1 when stream-ordered allocation (memory pools) is available.
    pub(crate) memory_pools_supported: i32,
    /// 1 when GPUDirect RDMA is available.
    pub(crate) gpu_direct_rdma_supported: i32,
    /// Bit mask of the ways GPUDirect RDMA writes can be flushed.
    pub(crate) gpu_direct_rdma_flush_writes_options: u32,
    /// Ordering guarantee level for GPUDirect RDMA writes.
    pub(crate) gpu_direct_rdma_writes_ordering: i32,
    /// Bit mask of shareable handle types memory pools can export.
    pub(crate) memory_pool_supported_handle_types: u32,
    /// 1 when CUDA arrays can be mapped lazily.
    pub(crate) deferred_mapping_cuda_array_supported: i32,
    /// 1 when events can be shared between processes.
    pub(crate) ipc_event_supported: i32,
    /// 1 when thread block clusters can be launched.
    pub(crate) cluster_launch: i32,
    /// 1 when host and device share function pointers.
    pub(crate) unified_function_pointers: i32,
    /// How the device memory appears to the host's NUMA layout.
    pub(crate) device_numa_config: i32,
    /// NUMA node of the device memory, or -1.
    pub(crate) device_numa_id: i32,
    /// 1 when the device is used through MPS.
    pub(crate) mps_enabled: i32,
    /// NUMA node of the host nearest to the device, or -1.
    pub(crate) host_numa_id: i32,
    /// Combined PCI device and vendor identifier.
    pub(crate) gpu_pci_device_id: u32,
    /// Combined PCI subsystem and subsystem vendor identifier.
    pub(crate) gpu_pci_subsystem_id: u32,
    /// 1 when IPC works across NUMA nodes of the host.
    pub(crate) host_numa_multinode_ipc_supported: i32,
    /// Room CUDA keeps for future fields; zero here.
    pub(crate) reserved: [i32; 56],
}

// `sizeof(struct cudaDeviceProp)` with CUDA 13 on 64-bit Linux.
const _: () = assert!(std::mem::size_of::<CudaDeviceProp>() == 1008);

/// A `u64` byte count as a `size_t` field.
fn size(v: u64) -> usize {
    usize::try_from(v).unwrap_or(usize::MAX)
}

/// A byte as C's `char`, whatever its signedness on this target.
fn c_byte(b: u8) -> c_char {
    c_char::from_ne_bytes([b])
}

impl CudaDeviceProp {
    /// The C struct for `p`. The name is cut to 255 bytes and NUL-terminated;
    /// `reserved` is zero.
    pub(crate) fn from_props(p: &DeviceProps) -> Self {
        let mut name: [c_char; 256] = [0; 256];
        for (dst, &src) in name.iter_mut().zip(p.name.as_bytes().iter().take(255)) {
            *dst = c_byte(src);
        }
        Self {
            name,
            uuid: p.uuid,
            luid: p.luid.map(c_byte),
            luid_device_node_mask: p.luid_device_node_mask,
            total_global_mem: size(p.total_global_mem),
            shared_mem_per_block: size(p.shared_mem_per_block),
            regs_per_block: p.regs_per_block,
            warp_size: p.warp_size,
            mem_pitch: size(p.mem_pitch),
            max_threads_per_block: p.max_threads_per_block,
            max_threads_dim: p.max_threads_dim,
            max_grid_size: p.max_grid_size,
            total_const_mem: size(p.total_const_mem),
            major: p.major,
            minor: p.minor,
            texture_alignment: size(p.texture_alignment),
            texture_pitch_alignment: size(p.texture_pitch_alignment),
            multi_processor_count: p.multi_processor_count,
            integrated: p.integrated,
            can_map_host_memory: p.can_map_host_memory,
            max_texture_1d: p.max_texture_1d,
            max_texture_1d_mipmap: p.max_texture_1d_mipmap,
            max_texture_2d: p.max_texture_2d,
            max_texture_2d_mipmap: p.max_texture_2d_mipmap,
            max_texture_2d_linear: p.max_texture_2d_linear,
            max_texture_2d_gather: p.max_texture_2d_gather,
            max_texture_3d: p.max_texture_3d,
            max_texture_3d_alt: p.max_texture_3d_alt,
            max_texture_cubemap: p.max_texture_cubemap,
            max_texture_1d_layered: p.max_texture_1d_layered,
            max_texture_2d_layered: p.max_texture_2d_layered,
            max_texture_cubemap_layered: p.max_texture_cubemap_layered,
            max_surface_1d: p.max_surface_1d,
            max_surface_2d: p.max_surface_2d,
            max_surface_3d: p.max_surface_3d,
            max_surface_1d_layered: p.max_surface_1d_layered,
            max_surface_2d_layered: p.max_surface_2d_layered,
            max_surface_cubemap: p.max_surface_cubemap,
            max_surface_cubemap_layered: p.max_surface_cubemap_layered,
            surface_alignment: size(p.surface_alignment),
            concurrent_kernels: p.concurrent_kernels,
            ecc_enabled: p.ecc_enabled,
            pci_bus_id: p.pci_bus_id,
            pci_device_id: p.pci_device_id,
            pci_domain_id: p.pci_domain_id,
            tcc_driver: p.tcc_driver,
            async_engine_count: p.async_engine_count,
            unified_addressing: p.unified_addressing,
            memory_bus_width: p.memory_bus_width,
            l2_cache_size: p.l2_cache_size,
            persisting_l2_cache_max_size: p.persisting_l2_cache_max_size,
            max_threads_per_multi_processor: p.max_threads_per_multi_processor,
            stream_priorities_supported: p.stream_priorities_supported,
            global_l1_cache_supported: p.global_l1_cache_supported,
            local_l1_cache_supported: p.local_l1_cache_supported,
            shared_mem_per_multiprocessor: size(p.shared_mem_per_multiprocessor),
            regs_per_multiprocessor: p.regs_per_multiprocessor,
            managed_memory: p.managed_memory,
            is_multi_gpu_board: p.is_multi_gpu_board,
            multi_gpu_board_group_id: p.multi_gpu_board_group_id,
            host_native_atomic_supported: p.host_native_atomic_supported,
            pageable_memory_access: p.pageable_memory_access,
            concurrent_managed_access: p.concurrent_managed_access,
            compute_preemption_supported: p.compute_preemption_supported,
            can_use_host_pointer_for_registered_mem: p.can_use_host_pointer_for_registered_mem,
            cooperative_launch: p.cooperative_launch,
            shared_mem_per_block_optin: size(p.shared_mem_per_block_optin),
            pageable_memory_access_uses_host_page_tables: p
                .pageable_memory_access_uses_host_page_tables,
            direct_managed_mem_access_from_host: p.direct_managed_mem_access_from_host,
            max_blocks_per_multi_processor: p.max_blocks_per_multi_processor,
            access_policy_max_window_size: p.access_policy_max_window_size,
            reserved_shared_mem_per_block: size(p.reserved_shared_mem_per_block),
            host_register_supported: p.host_register_supported,
            sparse_cuda_array_supported: p.sparse_cuda_array_supported,
            host_register_read_only_supported: p.host_register_read_only_supported,
            timeline_semaphore_interop_supported: p.timeline_semaphore_interop_supported,
            memory_pools_supported: p.memory_pools_supported,
            gpu_direct_rdma_supported: p.gpu_direct_rdma_supported,
            gpu_direct_rdma_flush_writes_options: p.gpu_direct_rdma_flush_writes_options,
            gpu_direct_rdma_writes_ordering: p.gpu_direct_rdma_writes_ordering,
            memory_pool_supported_handle_types: p.memory_pool_supported_handle_types,
            deferred_mapping_cuda_array_supported: p.deferred_mapping_cuda_array_supported,
            ipc_event_supported: p.ipc_event_supported,
            cluster_launch: p.cluster_launch,
            unified_function_pointers: p.unified_function_pointers,
            device_numa_config: p.device_numa_config,
            device_numa_id: p.device_numa_id,
            mps_enabled: p.mps_enabled,
            host_numa_id: p.host_numa_id,
            gpu_pci_device_id: p.gpu_pci_device_id,
            gpu_pci_subsystem_id: p.gpu_pci_subsystem_id,
            host_numa_multinode_ipc_supported: p.host_numa_multinode_ipc_supported,
            reserved: [0; 56],
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;
    use std::mem::{offset_of, size_of};
    use std::path::{Path, PathBuf};
    use std::process::Command;

    /// Size of the field that `get` borrows.
    fn size_of_field<F>(_get: fn(&CudaDeviceProp) -> &F) -> usize {
        size_of::<F>()
    }

    /// `(C name, offset, size)` of every field of the Rust struct.
    fn rust_layout() -> Vec<(&'static str, usize, usize)> {
        macro_rules! field {
            ($c:literal, $f:ident) => {
                ($c, offset_of!(CudaDeviceProp, $f), size_of_field(|p| &p.$f))
            };
        }
        vec![
            field!("name", name),
            field!("uuid", uuid),
            field!("luid", luid),
            field!("luidDeviceNodeMask", luid_device_node_mask),
            field!("totalGlobalMem", total_global_mem),
            field!("sharedMemPerBlock", shared_mem_per_block),
            field!("regsPerBlock", regs_per_block),
            field!("warpSize", warp_size),
            field!("memPitch", mem_pitch),
            field!("maxThreadsPerBlock", max_threads_per_block),
            field!("maxThreadsDim", max_threads_dim),
            field!("maxGridSize", max_grid_size),
            field!("totalConstMem", total_const_mem),
            field!("major", major),
            field!("minor", minor),
            field!("textureAlignment", texture_alignment),
            field!("texturePitchAlignment", texture_pitch_alignment),
            field!("multiProcessorCount", multi_processor_count),
            field!("integrated", integrated),
            field!("canMapHostMemory", can_map_host_memory),
            field!("maxTexture1D", max_texture_1d),
            field!("maxTexture1DMipmap", max_texture_1d_mipmap),
            field!("maxTexture2D", max_texture_2d),
            field!("maxTexture2DMipmap", max_texture_2d_mipmap),
            field!("maxTexture2DLinear", max_texture_2d_linear),
            field!("maxTexture2DGather", max_texture_2d_gather),
            field!("maxTexture3D", max_texture_3d),
            field!("maxTexture3DAlt", max_texture_3d_alt),
            field!("maxTextureCubemap", max_texture_cubemap),
            field!("maxTexture1DLayered", max_texture_1d_layered),
            field!("maxTexture2DLayered", max_texture_2d_layered),
            field!("maxTextureCubemapLayered", max_texture_cubemap_layered),
            field!("maxSurface1D", max_surface_1d),
            field!("maxSurface2D", max_surface_2d),
            field!("maxSurface3D", max_surface_3d),
            field!("maxSurface1DLayered", max_surface_1d_layered),
            field!("maxSurface2DLayered", max_surface_2d_layered),
            field!("maxSurfaceCubemap", max_surface_cubemap),
            field!("maxSurfaceCubemapLayered", max_surface_cubemap_layered),
            field!("surfaceAlignment", surface_alignment),
            field!("concurrentKernels", concurrent_kernels),
            field!("ECCEnabled", ecc_enabled),
            field!("pciBusID", pci_bus_id),
            field!("pciDeviceID", pci_device_id),
            field!("pciDomainID", pci_domain_id),
            field!("tccDriver", tcc_driver),
            field!("asyncEngineCount", async_engine_count),
            field!("unifiedAddressing", unified_addressing),
            field!("memoryBusWidth", memory_bus_width),
            field!("l2CacheSize", l2_cache_size),
            field!("persistingL2CacheMaxSize", persisting_l2_cache_max_size),
            field!(
                "maxThreadsPerMultiProcessor",
                max_threads_per_multi_processor
            ),
            field!("streamPrioritiesSupported", stream_priorities_supported),
            field!("globalL1CacheSupported", global_l1_cache_supported),
            field!("localL1CacheSupported", local_l1_cache_supported),
            field!("sharedMemPerMultiprocessor", shared_mem_per_multiprocessor),
            field!("regsPerMultiprocessor", regs_per_multiprocessor),
            field!("managedMemory", managed_memory),
            field!("isMultiGpuBoard", is_multi_gpu_board),
            field!("multiGpuBoardGroupID", multi_gpu_board_group_id),
            field!("hostNativeAtomicSupported", host_native_atomic_supported),
            field!("pageableMemoryAccess", pageable_memory_access),
            field!("concurrentManagedAccess", concurrent_managed_access),
            field!("computePreemptionSupported", compute_preemption_supported),
            field!(
                "canUseHostPointerForRegisteredMem",
                can_use_host_pointer_for_registered_mem
            ),
            field!("cooperativeLaunch", cooperative_launch),
            field!("sharedMemPerBlockOptin", shared_mem_per_block_optin),
            field!(
                "pageableMemoryAccessUsesHostPageTables",
                pageable_memory_access_uses_host_page_tables
            ),
            field!(
                "directManagedMemAccessFromHost",
                direct_managed_mem_access_from_host
            ),
            field!("maxBlocksPerMultiProcessor", max_blocks_per_multi_processor),
            field!("accessPolicyMaxWindowSize", access_policy_max_window_size),
            field!("reservedSharedMemPerBlock", reserved_shared_mem_per_block),
            field!("hostRegisterSupported", host_register_supported),
            field!("sparseCudaArraySupported", sparse_cuda_array_supported),
            field!(
                "hostRegisterReadOnlySupported",
                host_register_read_only_supported
            ),
            field!(
                "timelineSemaphoreInteropSupported",
                timeline_semaphore_interop_supported
            ),
            field!("memoryPoolsSupported", memory_pools_supported),
            field!("gpuDirectRDMASupported", gpu_direct_rdma_supported),
            field!(
                "gpuDirectRDMAFlushWritesOptions",
                gpu_direct_rdma_flush_writes_options
            ),
            field!(
                "gpuDirectRDMAWritesOrdering",
                gpu_direct_rdma_writes_ordering
            ),
            field!(
                "memoryPoolSupportedHandleTypes",
                memory_pool_supported_handle_types
            ),
            field!(
                "deferredMappingCudaArraySupported",
                deferred_mapping_cuda_array_supported
            ),
            field!("ipcEventSupported", ipc_event_supported),
            field!("clusterLaunch", cluster_launch),
            field!("unifiedFunctionPointers", unified_function_pointers),
            field!("deviceNumaConfig", device_numa_config),
            field!("deviceNumaId", device_numa_id),
            field!("mpsEnabled", mps_enabled),
            field!("hostNumaId", host_numa_id),
            field!("gpuPciDeviceID", gpu_pci_device_id),
            field!("gpuPciSubsystemID", gpu_pci_subsystem_id),
            field!(
                "hostNumaMultinodeIpcSupported",
                host_numa_multinode_ipc_supported
            ),
            field!("reserved", reserved),
        ]
    }

    fn has_header(dir: &Path) -> bool {
        dir.join("driver_types.h").is_file()
    }

    /// Where CUDA's headers are, and the places that were looked at.
    fn cuda_include_dir() -> Result<PathBuf, Vec<String>> {
        let mut tried = Vec::new();
        if let Some(dir) = std::env::var_os("RCUD_CUDA_INCLUDE") {
            let dir = PathBuf::from(dir);
            if has_header(&dir) {
                return Ok(dir);
            }
            tried.push(format!("RCUD_CUDA_INCLUDE={}", dir.display()));
        } else {
            tried.push("RCUD_CUDA_INCLUDE (unset)".to_string());
        }
        let path = std::env::var_os("PATH").unwrap_or_default();
        let nvcc = std::env::split_paths(&path)
            .map(|dir| dir.join("nvcc"))
            .find(|nvcc| nvcc.is_file());
        match nvcc {
            Some(nvcc) => {
                let dir = nvcc.with_file_name("..").join("include");
                if has_header(&dir) {
                    return Ok(dir);
                }
                tried.push(dir.display().to_string());
            }
            None => tried.push("nvcc on PATH (not found)".to_string()),
        }
        let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
        let repo_root = manifest.parent().unwrap_or(manifest);
        let lib = repo_root.join(".venv-cuda/lib");
        let pythons = std::fs::read_dir(&lib)
            .into_iter()
            .flatten()
            .flatten()
            .filter(|e| e.file_name().to_string_lossy().starts_with("python3"));
        for python in pythons {
            let dir = python.path().join("site-packages/nvidia/cu13/include");
            if has_header(&dir) {
                return Ok(dir);
            }
        }
        tried.push(format!(
            "{}/python3*/site-packages/nvidia/cu13/include",
            lib.display()
        ));
        Err(tried)
    }

    /// Compiles and runs the C probe: `C name -> (offset, size)`.
    fn c_layout(include: &Path) -> BTreeMap<String, (usize, usize)> {
        let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/abi/device_prop_layout.c");
        let dir = std::env::temp_dir().join(format!("rcud-abi-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("create temp dir");
        let exe = dir.join("device_prop_layout");
        let cc = std::env::var_os("CC").unwrap_or_else(|| "cc".into());
        let status = Command::new(&cc)
            .arg("-I")
            .arg(include)
            .arg(&src)
            .arg("-o")
            .arg(&exe)
            .status()
            .unwrap_or_else(|e| panic!("cannot run C compiler {cc:?}: {e}"));
        assert!(status.success(), "compiling {} failed", src.display());
        let out = Command::new(&exe).output().expect("run layout probe");
        let _ = std::fs::remove_dir_all(&dir);
        assert!(out.status.success(), "layout probe failed");
        let text = String::from_utf8(out.stdout).expect("utf-8 output");
        text.lines()
            .map(|line| {
                let mut it = line.rsplitn(3, ' ');
                let size = it.next().and_then(|s| s.parse().ok());
                let offset = it.next().and_then(|s| s.parse().ok());
                match (it.next(), offset, size) {
                    (Some(name), Some(offset), Some(size)) => (name.to_string(), (offset, size)),
                    _ => panic!("bad probe line {line:?}"),
                }
            })
            .collect()
    }

    #[test]
    fn layout_matches_cuda_header() {
        let include = match cuda_include_dir() {
            Ok(dir) => dir,
            Err(tried) => {
                let msg = format!("CUDA headers not found ({})", tried.join("; "));
                if std::env::var("RCUD_REQUIRE_CUDA").as_deref() == Ok("1") {
                    panic!("RCUD_REQUIRE_CUDA=1 but {msg}");
                }
                eprintln!("skipped: {msg}");
                return;
            }
        };
        let mut c = c_layout(&include);
        assert_eq!(
            c.remove("sizeof(struct cudaDeviceProp)"),
            Some((0, size_of::<CudaDeviceProp>())),
            "struct size"
        );
        let rust = rust_layout();
        for &(name, offset, size) in &rust {
            assert_eq!(
                c.remove(name),
                Some((offset, size)),
                "field {name}: C (offset, size) vs Rust"
            );
        }
        assert!(c.is_empty(), "C fields missing in Rust: {:?}", c.keys());
        // Every byte is covered by some field, in order, with no overlap.
        let mut end = 0;
        for &(name, offset, size) in &rust {
            assert!(offset >= end, "{name} overlaps its predecessor");
            end = offset + size;
        }
        assert_eq!(end, size_of::<CudaDeviceProp>());
    }

    #[test]
    fn from_props_copies_and_truncates() {
        let mut p = DeviceProps {
            name: "x".repeat(300),
            uuid: [9; 16],
            luid: [1, 2, 3, 4, 5, 6, 7, 0xff],
            total_global_mem: 80 << 30,
            shared_mem_per_block: 48 << 10,
            max_grid_size: [i32::MAX, 65_535, 65_535],
            major: 9,
            minor: 0,
            gpu_pci_subsystem_id: 0xdead_beef,
            host_numa_multinode_ipc_supported: 1,
            ..DeviceProps::default()
        };
        let c = CudaDeviceProp::from_props(&p);
        assert!(c.name[..255].iter().all(|&b| b == c_byte(b'x')));
        assert_eq!(c.name[255], 0);
        assert_eq!(c.uuid, [9; 16]);
        assert_eq!(c.luid[7], c_char::from_ne_bytes([0xff]));
        assert_eq!(c.total_global_mem, 80 << 30);
        assert_eq!(c.shared_mem_per_block, 48 << 10);
        assert_eq!(c.max_grid_size, [i32::MAX, 65_535, 65_535]);
        assert_eq!((c.major, c.minor), (9, 0));
        assert_eq!(c.gpu_pci_subsystem_id, 0xdead_beef);
        assert_eq!(c.host_numa_multinode_ipc_supported, 1);
        assert_eq!(c.reserved, [0; 56]);

        p.name = "short".to_string();
        let c = CudaDeviceProp::from_props(&p);
        let name: Vec<u8> = c
            .name
            .iter()
            .take_while(|&&b| b != 0)
            .map(|&b| b.to_ne_bytes()[0])
            .collect();
        assert_eq!(name, b"short");
        assert!(c.name[5..].iter().all(|&b| b == 0));
    }
}
