//! Driver errors (`CUresult`) as the runtime's `cudaError_t`, the way
//! `libcudart` reports them to programs.

use rcud_cuda_driver::sys::CUresult as R;
use rcud_cuda_driver::DriverError;
use rcud_proto::ops::Failure;
use rcud_proto::CudaError as E;

/// Every `CUresult` of CUDA 13.0 that has a runtime counterpart. Most keep
/// their number; the ones that do not are the first dozen and the renamed ones
/// (`OUT_OF_MEMORY`, `INVALID_IMAGE`, `INVALID_CONTEXT`, `INVALID_HANDLE`,
/// `NOT_FOUND`, `LAUNCH_FAILED`, ...). `CUDA_ERROR_NOT_FOUND` depends on what
/// was looked up: see [`lookup_failure`].
const TABLE: &[(R, E)] = &[
    (R::CUDA_SUCCESS, E::SUCCESS),
    (R::CUDA_ERROR_INVALID_VALUE, E::INVALID_VALUE),
    (R::CUDA_ERROR_OUT_OF_MEMORY, E::MEMORY_ALLOCATION),
    (R::CUDA_ERROR_NOT_INITIALIZED, E::INITIALIZATION_ERROR),
    (R::CUDA_ERROR_DEINITIALIZED, E::CUDART_UNLOADING),
    (R::CUDA_ERROR_PROFILER_DISABLED, E::PROFILER_DISABLED),
    (
        R::CUDA_ERROR_PROFILER_NOT_INITIALIZED,
        E::PROFILER_NOT_INITIALIZED,
    ),
    (
        R::CUDA_ERROR_PROFILER_ALREADY_STARTED,
        E::PROFILER_ALREADY_STARTED,
    ),
    (
        R::CUDA_ERROR_PROFILER_ALREADY_STOPPED,
        E::PROFILER_ALREADY_STOPPED,
    ),
    (R::CUDA_ERROR_STUB_LIBRARY, E::STUB_LIBRARY),
    (
        R::CUDA_ERROR_CALL_REQUIRES_NEWER_DRIVER,
        E::CALL_REQUIRES_NEWER_DRIVER,
    ),
    (R::CUDA_ERROR_DEVICE_UNAVAILABLE, E::DEVICES_UNAVAILABLE),
    (R::CUDA_ERROR_NO_DEVICE, E::NO_DEVICE),
    (R::CUDA_ERROR_INVALID_DEVICE, E::INVALID_DEVICE),
    (R::CUDA_ERROR_DEVICE_NOT_LICENSED, E::DEVICE_NOT_LICENSED),
    (R::CUDA_ERROR_INVALID_IMAGE, E::INVALID_KERNEL_IMAGE),
    (R::CUDA_ERROR_INVALID_CONTEXT, E::DEVICE_UNINITIALIZED),
    (R::CUDA_ERROR_MAP_FAILED, E::MAP_BUFFER_OBJECT_FAILED),
    (R::CUDA_ERROR_UNMAP_FAILED, E::UNMAP_BUFFER_OBJECT_FAILED),
    (R::CUDA_ERROR_ARRAY_IS_MAPPED, E::ARRAY_IS_MAPPED),
    (R::CUDA_ERROR_ALREADY_MAPPED, E::ALREADY_MAPPED),
    (
        R::CUDA_ERROR_NO_BINARY_FOR_GPU,
        E::NO_KERNEL_IMAGE_FOR_DEVICE,
    ),
    (R::CUDA_ERROR_ALREADY_ACQUIRED, E::ALREADY_ACQUIRED),
    (R::CUDA_ERROR_NOT_MAPPED, E::NOT_MAPPED),
    (R::CUDA_ERROR_NOT_MAPPED_AS_ARRAY, E::NOT_MAPPED_AS_ARRAY),
    (
        R::CUDA_ERROR_NOT_MAPPED_AS_POINTER,
        E::NOT_MAPPED_AS_POINTER,
    ),
    (R::CUDA_ERROR_ECC_UNCORRECTABLE, E::ECC_UNCORRECTABLE),
    (R::CUDA_ERROR_UNSUPPORTED_LIMIT, E::UNSUPPORTED_LIMIT),
    (
        R::CUDA_ERROR_CONTEXT_ALREADY_IN_USE,
        E::DEVICE_ALREADY_IN_USE,
    ),
    (
        R::CUDA_ERROR_PEER_ACCESS_UNSUPPORTED,
        E::PEER_ACCESS_UNSUPPORTED,
    ),
    (R::CUDA_ERROR_INVALID_PTX, E::INVALID_PTX),
    (
        R::CUDA_ERROR_INVALID_GRAPHICS_CONTEXT,
        E::INVALID_GRAPHICS_CONTEXT,
    ),
    (R::CUDA_ERROR_NVLINK_UNCORRECTABLE, E::NVLINK_UNCORRECTABLE),
    (
        R::CUDA_ERROR_JIT_COMPILER_NOT_FOUND,
        E::JIT_COMPILER_NOT_FOUND,
    ),
    (
        R::CUDA_ERROR_UNSUPPORTED_PTX_VERSION,
        E::UNSUPPORTED_PTX_VERSION,
    ),
    (
        R::CUDA_ERROR_JIT_COMPILATION_DISABLED,
        E::JIT_COMPILATION_DISABLED,
    ),
    (
        R::CUDA_ERROR_UNSUPPORTED_EXEC_AFFINITY,
        E::UNSUPPORTED_EXEC_AFFINITY,
    ),
    (
        R::CUDA_ERROR_UNSUPPORTED_DEVSIDE_SYNC,
        E::UNSUPPORTED_DEV_SIDE_SYNC,
    ),
    (R::CUDA_ERROR_CONTAINED, E::CONTAINED),
    (R::CUDA_ERROR_INVALID_SOURCE, E::INVALID_SOURCE),
    (R::CUDA_ERROR_FILE_NOT_FOUND, E::FILE_NOT_FOUND),
    (
        R::CUDA_ERROR_SHARED_OBJECT_SYMBOL_NOT_FOUND,
        E::SHARED_OBJECT_SYMBOL_NOT_FOUND,
    ),
    (
        R::CUDA_ERROR_SHARED_OBJECT_INIT_FAILED,
        E::SHARED_OBJECT_INIT_FAILED,
    ),
    (R::CUDA_ERROR_OPERATING_SYSTEM, E::OPERATING_SYSTEM),
    (R::CUDA_ERROR_INVALID_HANDLE, E::INVALID_RESOURCE_HANDLE),
    (R::CUDA_ERROR_ILLEGAL_STATE, E::ILLEGAL_STATE),
    (R::CUDA_ERROR_LOSSY_QUERY, E::LOSSY_QUERY),
    (R::CUDA_ERROR_NOT_FOUND, E::SYMBOL_NOT_FOUND),
    (R::CUDA_ERROR_NOT_READY, E::NOT_READY),
    (R::CUDA_ERROR_ILLEGAL_ADDRESS, E::ILLEGAL_ADDRESS),
    (
        R::CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES,
        E::LAUNCH_OUT_OF_RESOURCES,
    ),
    (R::CUDA_ERROR_LAUNCH_TIMEOUT, E::LAUNCH_TIMEOUT),
    (
        R::CUDA_ERROR_LAUNCH_INCOMPATIBLE_TEXTURING,
        E::LAUNCH_INCOMPATIBLE_TEXTURING,
    ),
    (
        R::CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED,
        E::PEER_ACCESS_ALREADY_ENABLED,
    ),
    (
        R::CUDA_ERROR_PEER_ACCESS_NOT_ENABLED,
        E::PEER_ACCESS_NOT_ENABLED,
    ),
    (
        R::CUDA_ERROR_PRIMARY_CONTEXT_ACTIVE,
        E::SET_ON_ACTIVE_PROCESS,
    ),
    (R::CUDA_ERROR_CONTEXT_IS_DESTROYED, E::CONTEXT_IS_DESTROYED),
    (R::CUDA_ERROR_ASSERT, E::ASSERT),
    (R::CUDA_ERROR_TOO_MANY_PEERS, E::TOO_MANY_PEERS),
    (
        R::CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED,
        E::HOST_MEMORY_ALREADY_REGISTERED,
    ),
    (
        R::CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED,
        E::HOST_MEMORY_NOT_REGISTERED,
    ),
    (R::CUDA_ERROR_HARDWARE_STACK_ERROR, E::HARDWARE_STACK_ERROR),
    (R::CUDA_ERROR_ILLEGAL_INSTRUCTION, E::ILLEGAL_INSTRUCTION),
    (R::CUDA_ERROR_MISALIGNED_ADDRESS, E::MISALIGNED_ADDRESS),
    (
        R::CUDA_ERROR_INVALID_ADDRESS_SPACE,
        E::INVALID_ADDRESS_SPACE,
    ),
    (R::CUDA_ERROR_INVALID_PC, E::INVALID_PC),
    (R::CUDA_ERROR_LAUNCH_FAILED, E::LAUNCH_FAILURE),
    (
        R::CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE,
        E::COOPERATIVE_LAUNCH_TOO_LARGE,
    ),
    (R::CUDA_ERROR_TENSOR_MEMORY_LEAK, E::TENSOR_MEMORY_LEAK),
    (R::CUDA_ERROR_NOT_PERMITTED, E::NOT_PERMITTED),
    (R::CUDA_ERROR_NOT_SUPPORTED, E::NOT_SUPPORTED),
    (R::CUDA_ERROR_SYSTEM_NOT_READY, E::SYSTEM_NOT_READY),
    (
        R::CUDA_ERROR_SYSTEM_DRIVER_MISMATCH,
        E::SYSTEM_DRIVER_MISMATCH,
    ),
    (
        R::CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE,
        E::COMPAT_NOT_SUPPORTED_ON_DEVICE,
    ),
    (
        R::CUDA_ERROR_MPS_CONNECTION_FAILED,
        E::MPS_CONNECTION_FAILED,
    ),
    (R::CUDA_ERROR_MPS_RPC_FAILURE, E::MPS_RPC_FAILURE),
    (R::CUDA_ERROR_MPS_SERVER_NOT_READY, E::MPS_SERVER_NOT_READY),
    (
        R::CUDA_ERROR_MPS_MAX_CLIENTS_REACHED,
        E::MPS_MAX_CLIENTS_REACHED,
    ),
    (
        R::CUDA_ERROR_MPS_MAX_CONNECTIONS_REACHED,
        E::MPS_MAX_CONNECTIONS_REACHED,
    ),
    (
        R::CUDA_ERROR_MPS_CLIENT_TERMINATED,
        E::MPS_CLIENT_TERMINATED,
    ),
    (R::CUDA_ERROR_CDP_NOT_SUPPORTED, E::CDP_NOT_SUPPORTED),
    (R::CUDA_ERROR_CDP_VERSION_MISMATCH, E::CDP_VERSION_MISMATCH),
    (
        R::CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED,
        E::STREAM_CAPTURE_UNSUPPORTED,
    ),
    (
        R::CUDA_ERROR_STREAM_CAPTURE_INVALIDATED,
        E::STREAM_CAPTURE_INVALIDATED,
    ),
    (R::CUDA_ERROR_STREAM_CAPTURE_MERGE, E::STREAM_CAPTURE_MERGE),
    (
        R::CUDA_ERROR_STREAM_CAPTURE_UNMATCHED,
        E::STREAM_CAPTURE_UNMATCHED,
    ),
    (
        R::CUDA_ERROR_STREAM_CAPTURE_UNJOINED,
        E::STREAM_CAPTURE_UNJOINED,
    ),
    (
        R::CUDA_ERROR_STREAM_CAPTURE_ISOLATION,
        E::STREAM_CAPTURE_ISOLATION,
    ),
    (
        R::CUDA_ERROR_STREAM_CAPTURE_IMPLICIT,
        E::STREAM_CAPTURE_IMPLICIT,
    ),
    (R::CUDA_ERROR_CAPTURED_EVENT, E::CAPTURED_EVENT),
    (
        R::CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD,
        E::STREAM_CAPTURE_WRONG_THREAD,
    ),
    (R::CUDA_ERROR_TIMEOUT, E::TIMEOUT),
    (
        R::CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE,
        E::GRAPH_EXEC_UPDATE_FAILURE,
    ),
    (R::CUDA_ERROR_EXTERNAL_DEVICE, E::EXTERNAL_DEVICE),
    (R::CUDA_ERROR_INVALID_CLUSTER_SIZE, E::INVALID_CLUSTER_SIZE),
    (R::CUDA_ERROR_FUNCTION_NOT_LOADED, E::FUNCTION_NOT_LOADED),
    (
        R::CUDA_ERROR_INVALID_RESOURCE_TYPE,
        E::INVALID_RESOURCE_TYPE,
    ),
    (
        R::CUDA_ERROR_INVALID_RESOURCE_CONFIGURATION,
        E::INVALID_RESOURCE_CONFIGURATION,
    ),
    (R::CUDA_ERROR_UNKNOWN, E::UNKNOWN),
];

/// `CUDA_ERROR_NOT_FOUND`.
pub(crate) const NOT_FOUND: u32 = R::CUDA_ERROR_NOT_FOUND as u32;
/// `CUDA_ERROR_NO_DEVICE`.
pub(crate) const NO_DEVICE: u32 = R::CUDA_ERROR_NO_DEVICE as u32;

/// The runtime's code for driver code `code`, when there is one.
pub(crate) fn runtime_code(code: u32) -> Option<E> {
    TABLE
        .iter()
        .find(|&&(driver, _)| driver as u32 == code)
        .map(|&(_, runtime)| runtime)
}

/// The runtime's code for `e`; `cudaErrorUnknown` when there is none.
pub(crate) fn code(e: &DriverError) -> E {
    runtime_code(e.code).unwrap_or(E::UNKNOWN)
}

/// `e` as a reply: the runtime's code, and the driver's own words (call,
/// name and number) as the message, so that an error the runtime cannot
/// name still says what the driver reported.
pub(crate) fn failure(e: &DriverError) -> Failure {
    match runtime_code(e.code) {
        Some(code) => Failure::new(code, e.to_string()),
        None => Failure::new(
            E::UNKNOWN,
            format!("{e}, a driver error with no cudaError_t counterpart"),
        ),
    }
}

/// What a name was looked up as, for `CUDA_ERROR_NOT_FOUND`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Lookup {
    /// A kernel: `cudaErrorInvalidDeviceFunction`.
    Kernel,
    /// A module-scope variable: `cudaErrorInvalidSymbol`.
    Variable,
}

/// [`failure`] of a lookup of `name`, with `CUDA_ERROR_NOT_FOUND` reported as
/// the runtime reports a missing kernel or symbol.
pub(crate) fn lookup_failure(e: &DriverError, what: Lookup, name: &str) -> Failure {
    if e.code != NOT_FOUND {
        return failure(e);
    }
    match what {
        Lookup::Kernel => Failure::new(
            E::INVALID_DEVICE_FUNCTION,
            format!("kernel {name} is not in the module ({e})"),
        ),
        Lookup::Variable => Failure::new(
            E::INVALID_SYMBOL,
            format!("no device variable {name} in the module ({e})"),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    fn err(code: u32) -> DriverError {
        DriverError {
            code,
            call: "cuTest",
            name: None,
        }
    }

    #[test]
    fn the_frequent_errors_map_as_the_runtime_reports_them() {
        for (driver, runtime) in [
            (1, E::INVALID_VALUE),
            (2, E::MEMORY_ALLOCATION),
            (3, E::INITIALIZATION_ERROR),
            (100, E::NO_DEVICE),
            (101, E::INVALID_DEVICE),
            (200, E::INVALID_KERNEL_IMAGE),
            (201, E::DEVICE_UNINITIALIZED),
            (209, E::NO_KERNEL_IMAGE_FOR_DEVICE),
            (218, E::INVALID_PTX),
            (222, E::UNSUPPORTED_PTX_VERSION),
            (400, E::INVALID_RESOURCE_HANDLE),
            (500, E::SYMBOL_NOT_FOUND),
            (700, E::ILLEGAL_ADDRESS),
            (701, E::LAUNCH_OUT_OF_RESOURCES),
            (702, E::LAUNCH_TIMEOUT),
            (710, E::ASSERT),
            (716, E::MISALIGNED_ADDRESS),
            (719, E::LAUNCH_FAILURE),
            (801, E::NOT_SUPPORTED),
            (999, E::UNKNOWN),
        ] {
            assert_eq!(code(&err(driver)), runtime, "CUresult {driver}");
        }
    }

    #[test]
    fn kernel_faults_stay_sticky() {
        for driver in [700, 702, 710, 714, 715, 716, 717, 718, 719] {
            assert!(code(&err(driver)).is_sticky(), "CUresult {driver}");
        }
        for driver in [1, 2, 209, 701, 801] {
            assert!(!code(&err(driver)).is_sticky(), "CUresult {driver}");
        }
    }

    #[test]
    fn the_table_is_a_function_into_named_runtime_codes() {
        let mut seen = HashSet::new();
        for &(driver, runtime) in TABLE {
            assert!(seen.insert(driver as u32), "{driver:?} twice");
            assert!(runtime.name().is_some(), "{driver:?} -> {runtime:?}");
        }
    }

    #[test]
    fn unknown_errors_keep_the_drivers_name() {
        let e = DriverError {
            code: 916,
            call: "cuMemAlloc",
            name: Some("CUDA_ERROR_KEY_ROTATION"),
        };
        let f = failure(&e);
        assert_eq!(f.code, E::UNKNOWN);
        assert!(
            f.message.contains("CUDA_ERROR_KEY_ROTATION"),
            "{}",
            f.message
        );
        assert!(f.message.contains("cuMemAlloc"), "{}", f.message);
        let f = failure(&err(123_456));
        assert_eq!(f.code, E::UNKNOWN);
        assert!(f.message.contains("123456"), "{}", f.message);
    }

    #[test]
    fn not_found_depends_on_what_was_looked_up() {
        let e = err(NOT_FOUND);
        let f = lookup_failure(&e, Lookup::Kernel, "_Z3fooPi");
        assert_eq!(f.code, E::INVALID_DEVICE_FUNCTION);
        assert!(f.message.contains("_Z3fooPi"));
        let f = lookup_failure(&e, Lookup::Variable, "counter");
        assert_eq!(f.code, E::INVALID_SYMBOL);
        let f = lookup_failure(&err(201), Lookup::Kernel, "k");
        assert_eq!(f.code, E::DEVICE_UNINITIALIZED);
    }
}
