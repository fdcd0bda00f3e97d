//! `cudaError_t` as an open newtype: values from a peer that this build does not
//! know stay representable instead of becoming undefined behaviour.

use std::fmt;

/// A `cudaError_t` value.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct CudaError(pub u32);

macro_rules! cuda_errors {
    ($( $konst:ident = $value:literal, $name:literal, $desc:literal; )*) => {
        impl CudaError {
            $(
                #[doc = $desc]
                pub const $konst: Self = Self($value);
            )*

            /// Every named value, in the order of CUDA's header.
            pub const ALL: &'static [Self] = &[$(Self::$konst),*];

            /// The enumerator's name as `cudaGetErrorName` returns it.
            pub fn name(self) -> Option<&'static str> {
                match self.0 { $($value => Some($name),)* _ => None }
            }

            /// A short one-line description, what rcud's `cudaGetErrorString` returns.
            pub fn description(self) -> Option<&'static str> {
                match self.0 { $($value => Some($desc),)* _ => None }
            }
        }
    };
}

// Every enumerator of `enum cudaError` in CUDA 13's `driver_types.h`, in header
// order. No two enumerators share a value there, so each value has one name.
// The descriptions are short phrases; the frequently printed ones match what
// programs expect to see from `cudaGetErrorString`.
cuda_errors! {
    SUCCESS = 0, "cudaSuccess", "no error";
    INVALID_VALUE = 1, "cudaErrorInvalidValue", "invalid argument";
    MEMORY_ALLOCATION = 2, "cudaErrorMemoryAllocation", "out of memory";
    INITIALIZATION_ERROR = 3, "cudaErrorInitializationError", "initialization error";
    CUDART_UNLOADING = 4, "cudaErrorCudartUnloading", "the CUDA runtime is being unloaded";
    PROFILER_DISABLED = 5, "cudaErrorProfilerDisabled", "profiler is disabled for this run";
    PROFILER_NOT_INITIALIZED = 6, "cudaErrorProfilerNotInitialized", "profiler not initialized";
    PROFILER_ALREADY_STARTED = 7, "cudaErrorProfilerAlreadyStarted", "profiler already started";
    PROFILER_ALREADY_STOPPED = 8, "cudaErrorProfilerAlreadyStopped", "profiler already stopped";
    INVALID_CONFIGURATION = 9, "cudaErrorInvalidConfiguration", "invalid configuration argument";
    VERSION_TRANSLATION = 10, "cudaErrorVersionTranslation", "API version translation failed";
    INVALID_PITCH_VALUE = 12, "cudaErrorInvalidPitchValue", "invalid pitch argument";
    INVALID_SYMBOL = 13, "cudaErrorInvalidSymbol", "invalid device symbol";
    INVALID_HOST_POINTER = 16, "cudaErrorInvalidHostPointer", "invalid host pointer";
    INVALID_DEVICE_POINTER = 17, "cudaErrorInvalidDevicePointer", "invalid device pointer";
    INVALID_TEXTURE = 18, "cudaErrorInvalidTexture", "invalid texture reference";
    INVALID_TEXTURE_BINDING = 19, "cudaErrorInvalidTextureBinding", "texture is not bound to a valid address";
    INVALID_CHANNEL_DESCRIPTOR = 20, "cudaErrorInvalidChannelDescriptor", "invalid channel descriptor";
    INVALID_MEMCPY_DIRECTION = 21, "cudaErrorInvalidMemcpyDirection", "invalid copy direction for memcpy";
    ADDRESS_OF_CONSTANT = 22, "cudaErrorAddressOfConstant", "the address of a constant variable cannot be taken";
    TEXTURE_FETCH_FAILED = 23, "cudaErrorTextureFetchFailed", "texture fetch failed";
    TEXTURE_NOT_BOUND = 24, "cudaErrorTextureNotBound", "texture is not bound";
    SYNCHRONIZATION_ERROR = 25, "cudaErrorSynchronizationError", "synchronization failed";
    INVALID_FILTER_SETTING = 26, "cudaErrorInvalidFilterSetting", "invalid texture filter setting";
    INVALID_NORM_SETTING = 27, "cudaErrorInvalidNormSetting", "invalid texture normalization setting";
    MIXED_DEVICE_EXECUTION = 28, "cudaErrorMixedDeviceExecution", "device and emulation code cannot be mixed";
    NOT_YET_IMPLEMENTED = 31, "cudaErrorNotYetImplemented", "feature not yet implemented";
    MEMORY_VALUE_TOO_LARGE = 32, "cudaErrorMemoryValueTooLarge", "memory size or pointer value too large";
    STUB_LIBRARY = 34, "cudaErrorStubLibrary", "the CUDA driver is a stub library";
    INSUFFICIENT_DRIVER = 35, "cudaErrorInsufficientDriver", "CUDA driver version is insufficient for CUDA runtime version";
    CALL_REQUIRES_NEWER_DRIVER = 36, "cudaErrorCallRequiresNewerDriver", "the API call requires a newer CUDA driver";
    INVALID_SURFACE = 37, "cudaErrorInvalidSurface", "invalid surface reference";
    DUPLICATE_VARIABLE_NAME = 43, "cudaErrorDuplicateVariableName", "duplicate global variable name";
    DUPLICATE_TEXTURE_NAME = 44, "cudaErrorDuplicateTextureName", "duplicate texture name";
    DUPLICATE_SURFACE_NAME = 45, "cudaErrorDuplicateSurfaceName", "duplicate surface name";
    DEVICES_UNAVAILABLE = 46, "cudaErrorDevicesUnavailable", "CUDA-capable device(s) is/are busy or unavailable";
    INCOMPATIBLE_DRIVER_CONTEXT = 49, "cudaErrorIncompatibleDriverContext", "incompatible driver context";
    MISSING_CONFIGURATION = 52, "cudaErrorMissingConfiguration", "kernel launch without a configuration";
    PRIOR_LAUNCH_FAILURE = 53, "cudaErrorPriorLaunchFailure", "an earlier kernel launch failed";
    LAUNCH_MAX_DEPTH_EXCEEDED = 65, "cudaErrorLaunchMaxDepthExceeded", "device-side launches nested too deeply";
    LAUNCH_FILE_SCOPED_TEX = 66, "cudaErrorLaunchFileScopedTex", "device-side launch uses a file-scoped texture";
    LAUNCH_FILE_SCOPED_SURF = 67, "cudaErrorLaunchFileScopedSurf", "device-side launch uses a file-scoped surface";
    SYNC_DEPTH_EXCEEDED = 68, "cudaErrorSyncDepthExceeded", "device-side synchronization nested too deeply";
    LAUNCH_PENDING_COUNT_EXCEEDED = 69, "cudaErrorLaunchPendingCountExceeded", "too many pending device-side launches";
    INVALID_DEVICE_FUNCTION = 98, "cudaErrorInvalidDeviceFunction", "invalid device function";
    NO_DEVICE = 100, "cudaErrorNoDevice", "no CUDA-capable device is detected";
    INVALID_DEVICE = 101, "cudaErrorInvalidDevice", "invalid device ordinal";
    DEVICE_NOT_LICENSED = 102, "cudaErrorDeviceNotLicensed", "device not licensed for this operation";
    SOFTWARE_VALIDITY_NOT_ESTABLISHED = 103, "cudaErrorSoftwareValidityNotEstablished", "software integrity could not be established";
    STARTUP_FAILURE = 127, "cudaErrorStartupFailure", "CUDA runtime startup failed";
    INVALID_KERNEL_IMAGE = 200, "cudaErrorInvalidKernelImage", "device kernel image is invalid";
    DEVICE_UNINITIALIZED = 201, "cudaErrorDeviceUninitialized", "invalid device context";
    MAP_BUFFER_OBJECT_FAILED = 205, "cudaErrorMapBufferObjectFailed", "mapping of buffer object failed";
    UNMAP_BUFFER_OBJECT_FAILED = 206, "cudaErrorUnmapBufferObjectFailed", "unmapping of buffer object failed";
    ARRAY_IS_MAPPED = 207, "cudaErrorArrayIsMapped", "array is mapped";
    ALREADY_MAPPED = 208, "cudaErrorAlreadyMapped", "resource already mapped";
    NO_KERNEL_IMAGE_FOR_DEVICE = 209, "cudaErrorNoKernelImageForDevice", "no kernel image is available for execution on the device";
    ALREADY_ACQUIRED = 210, "cudaErrorAlreadyAcquired", "resource already acquired";
    NOT_MAPPED = 211, "cudaErrorNotMapped", "resource not mapped";
    NOT_MAPPED_AS_ARRAY = 212, "cudaErrorNotMappedAsArray", "resource not mapped as an array";
    NOT_MAPPED_AS_POINTER = 213, "cudaErrorNotMappedAsPointer", "resource not mapped as a pointer";
    ECC_UNCORRECTABLE = 214, "cudaErrorECCUncorrectable", "uncorrectable ECC error encountered";
    UNSUPPORTED_LIMIT = 215, "cudaErrorUnsupportedLimit", "limit not supported by the device";
    DEVICE_ALREADY_IN_USE = 216, "cudaErrorDeviceAlreadyInUse", "device already in use";
    PEER_ACCESS_UNSUPPORTED = 217, "cudaErrorPeerAccessUnsupported", "peer access is not supported between these devices";
    INVALID_PTX = 218, "cudaErrorInvalidPtx", "a PTX JIT compilation failed";
    INVALID_GRAPHICS_CONTEXT = 219, "cudaErrorInvalidGraphicsContext", "invalid graphics interop context";
    NVLINK_UNCORRECTABLE = 220, "cudaErrorNvlinkUncorrectable", "uncorrectable NVLink error encountered";
    JIT_COMPILER_NOT_FOUND = 221, "cudaErrorJitCompilerNotFound", "PTX JIT compiler library not found";
    UNSUPPORTED_PTX_VERSION = 222, "cudaErrorUnsupportedPtxVersion", "PTX version not supported by the JIT compiler";
    JIT_COMPILATION_DISABLED = 223, "cudaErrorJitCompilationDisabled", "PTX JIT compilation is disabled";
    UNSUPPORTED_EXEC_AFFINITY = 224, "cudaErrorUnsupportedExecAffinity", "execution affinity type not supported";
    UNSUPPORTED_DEV_SIDE_SYNC = 225, "cudaErrorUnsupportedDevSideSync", "device-side cudaDeviceSynchronize is not supported";
    CONTAINED = 226, "cudaErrorContained", "device exception contained by error containment";
    INSUFFICIENT_LOADER_VERSION = 227, "cudaErrorInsufficientLoaderVersion", "loader version too old for this binary";
    INVALID_SOURCE = 300, "cudaErrorInvalidSource", "invalid kernel source";
    FILE_NOT_FOUND = 301, "cudaErrorFileNotFound", "file not found";
    SHARED_OBJECT_SYMBOL_NOT_FOUND = 302, "cudaErrorSharedObjectSymbolNotFound", "shared object symbol not found";
    SHARED_OBJECT_INIT_FAILED = 303, "cudaErrorSharedObjectInitFailed", "shared object initialization failed";
    OPERATING_SYSTEM = 304, "cudaErrorOperatingSystem", "an operating system call failed";
    INVALID_RESOURCE_HANDLE = 400, "cudaErrorInvalidResourceHandle", "invalid resource handle";
    ILLEGAL_STATE = 401, "cudaErrorIllegalState", "operation not valid in the current state";
    LOSSY_QUERY = 402, "cudaErrorLossyQuery", "the query would lose information";
    SYMBOL_NOT_FOUND = 500, "cudaErrorSymbolNotFound", "named symbol not found";
    NOT_READY = 600, "cudaErrorNotReady", "device not ready";
    ILLEGAL_ADDRESS = 700, "cudaErrorIllegalAddress", "an illegal memory access was encountered";
    LAUNCH_OUT_OF_RESOURCES = 701, "cudaErrorLaunchOutOfResources", "too many resources requested for launch";
    LAUNCH_TIMEOUT = 702, "cudaErrorLaunchTimeout", "the launch timed out and was terminated";
    LAUNCH_INCOMPATIBLE_TEXTURING = 703, "cudaErrorLaunchIncompatibleTexturing", "launch uses an incompatible texturing mode";
    PEER_ACCESS_ALREADY_ENABLED = 704, "cudaErrorPeerAccessAlreadyEnabled", "peer access is already enabled";
    PEER_ACCESS_NOT_ENABLED = 705, "cudaErrorPeerAccessNotEnabled", "peer access has not been enabled";
    SET_ON_ACTIVE_PROCESS = 708, "cudaErrorSetOnActiveProcess", "cannot change this setting while the device is active";
    CONTEXT_IS_DESTROYED = 709, "cudaErrorContextIsDestroyed", "context has been destroyed";
    ASSERT = 710, "cudaErrorAssert", "device-side assert triggered";
    TOO_MANY_PEERS = 711, "cudaErrorTooManyPeers", "no resources left to enable more peers";
    HOST_MEMORY_ALREADY_REGISTERED = 712, "cudaErrorHostMemoryAlreadyRegistered", "part or all of the requested memory range is already mapped";
    HOST_MEMORY_NOT_REGISTERED = 713, "cudaErrorHostMemoryNotRegistered", "pointer does not correspond to a registered memory region";
    HARDWARE_STACK_ERROR = 714, "cudaErrorHardwareStackError", "hardware stack error";
    ILLEGAL_INSTRUCTION = 715, "cudaErrorIllegalInstruction", "an illegal instruction was encountered";
    MISALIGNED_ADDRESS = 716, "cudaErrorMisalignedAddress", "misaligned address";
    INVALID_ADDRESS_SPACE = 717, "cudaErrorInvalidAddressSpace", "memory address outside the allowed address space";
    INVALID_PC = 718, "cudaErrorInvalidPc", "invalid program counter";
    LAUNCH_FAILURE = 719, "cudaErrorLaunchFailure", "unspecified launch failure";
    COOPERATIVE_LAUNCH_TOO_LARGE = 720, "cudaErrorCooperativeLaunchTooLarge", "too many blocks in cooperative launch";
    TENSOR_MEMORY_LEAK = 721, "cudaErrorTensorMemoryLeak", "kernel exited without freeing its tensor memory";
    NOT_PERMITTED = 800, "cudaErrorNotPermitted", "operation not permitted";
    NOT_SUPPORTED = 801, "cudaErrorNotSupported", "operation not supported";
    SYSTEM_NOT_READY = 802, "cudaErrorSystemNotReady", "system not yet initialized";
    SYSTEM_DRIVER_MISMATCH = 803, "cudaErrorSystemDriverMismatch", "driver and kernel module versions do not match";
    COMPAT_NOT_SUPPORTED_ON_DEVICE = 804, "cudaErrorCompatNotSupportedOnDevice", "forward compatibility not supported on this device";
    MPS_CONNECTION_FAILED = 805, "cudaErrorMpsConnectionFailed", "could not connect to the MPS server";
    MPS_RPC_FAILURE = 806, "cudaErrorMpsRpcFailure", "remote call to the MPS server failed";
    MPS_SERVER_NOT_READY = 807, "cudaErrorMpsServerNotReady", "MPS server not ready";
    MPS_MAX_CLIENTS_REACHED = 808, "cudaErrorMpsMaxClientsReached", "MPS client limit reached";
    MPS_MAX_CONNECTIONS_REACHED = 809, "cudaErrorMpsMaxConnectionsReached", "MPS connection limit reached";
    MPS_CLIENT_TERMINATED = 810, "cudaErrorMpsClientTerminated", "MPS client terminated by the server";
    CDP_NOT_SUPPORTED = 811, "cudaErrorCdpNotSupported", "dynamic parallelism not supported in this configuration";
    CDP_VERSION_MISMATCH = 812, "cudaErrorCdpVersionMismatch", "dynamic parallelism version mismatch";
    STREAM_CAPTURE_UNSUPPORTED = 900, "cudaErrorStreamCaptureUnsupported", "operation not permitted while the stream is capturing";
    STREAM_CAPTURE_INVALIDATED = 901, "cudaErrorStreamCaptureInvalidated", "stream capture invalidated by an earlier error";
    STREAM_CAPTURE_MERGE = 902, "cudaErrorStreamCaptureMerge", "separate stream captures cannot be merged";
    STREAM_CAPTURE_UNMATCHED = 903, "cudaErrorStreamCaptureUnmatched", "capture was not started in this stream";
    STREAM_CAPTURE_UNJOINED = 904, "cudaErrorStreamCaptureUnjoined", "forked capture work did not join back";
    STREAM_CAPTURE_ISOLATION = 905, "cudaErrorStreamCaptureIsolation", "dependency would cross the stream capture boundary";
    STREAM_CAPTURE_IMPLICIT = 906, "cudaErrorStreamCaptureImplicit", "implicit dependency on a capturing stream";
    CAPTURED_EVENT = 907, "cudaErrorCapturedEvent", "operation not permitted on an event captured in a graph";
    STREAM_CAPTURE_WRONG_THREAD = 908, "cudaErrorStreamCaptureWrongThread", "stream capture ended from a different thread";
    TIMEOUT = 909, "cudaErrorTimeout", "wait operation timed out";
    GRAPH_EXEC_UPDATE_FAILURE = 910, "cudaErrorGraphExecUpdateFailure", "graph update violates instantiated graph constraints";
    EXTERNAL_DEVICE = 911, "cudaErrorExternalDevice", "error in an external device";
    INVALID_CLUSTER_SIZE = 912, "cudaErrorInvalidClusterSize", "invalid cluster size";
    FUNCTION_NOT_LOADED = 913, "cudaErrorFunctionNotLoaded", "function not loaded";
    INVALID_RESOURCE_TYPE = 914, "cudaErrorInvalidResourceType", "invalid resource type";
    INVALID_RESOURCE_CONFIGURATION = 915, "cudaErrorInvalidResourceConfiguration", "invalid resource configuration";
    STREAM_DETACHED = 917, "cudaErrorStreamDetached", "stream is detached";
    GRAPH_RECAPTURE_FAILURE = 918, "cudaErrorGraphRecaptureFailure", "graph recapture failed";
    FABRIC_NOT_READY = 919, "cudaErrorFabricNotReady", "GPU fabric not ready";
    UNKNOWN = 999, "cudaErrorUnknown", "unknown error";
    API_FAILURE_BASE = 10000, "cudaErrorApiFailureBase", "base of forwarded driver errors (deprecated)";
}

impl CudaError {
    /// Whether the error leaves the context unusable: once it happened, every
    /// later call on that device returns it again. CUDA itself only recovers by
    /// ending the process; rcud clears it when the remote context is recreated.
    ///
    /// The set is the enumerators that CUDA 13's header describes as leaving the
    /// process in an inconsistent state, so that the process has to be
    /// terminated: the kernel exceptions (illegal address, hardware stack error,
    /// illegal instruction, misaligned address, invalid address space, invalid
    /// program counter, unspecified launch failure), the launch timeout, the
    /// device-side assert, the contained exception, the tensor memory leak at
    /// kernel exit, and an MPS client terminated by the server.
    ///
    /// Not included: `cudaErrorCooperativeLaunchTooLarge` (a plain launch
    /// validation error), and `cudaErrorExternalDevice`, which is fatal only when
    /// it arrives asynchronously and is an ordinary failure when returned
    /// synchronously; the server's driver keeps reporting it when it is fatal.
    pub fn is_sticky(self) -> bool {
        matches!(
            self,
            Self::CONTAINED
                | Self::ILLEGAL_ADDRESS
                | Self::LAUNCH_TIMEOUT
                | Self::ASSERT
                | Self::HARDWARE_STACK_ERROR
                | Self::ILLEGAL_INSTRUCTION
                | Self::MISALIGNED_ADDRESS
                | Self::INVALID_ADDRESS_SPACE
                | Self::INVALID_PC
                | Self::LAUNCH_FAILURE
                | Self::TENSOR_MEMORY_LEAK
                | Self::MPS_CLIENT_TERMINATED
        )
    }
}

impl CudaError {
    /// The driver API's name for [`CudaError::DEVICE_UNINITIALIZED`]
    /// (`CUDA_ERROR_INVALID_CONTEXT`, the same value).
    pub const INVALID_CONTEXT: Self = Self::DEVICE_UNINITIALIZED;
}

impl fmt::Debug for CudaError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.name() {
            Some(name) => write!(f, "{name}({})", self.0),
            None => write!(f, "cudaError({:#x})", self.0),
        }
    }
}

impl fmt::Display for CudaError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.description() {
            Some(desc) => write!(f, "{desc} ({self:?})"),
            None => write!(f, "unrecognized error code ({self:?})"),
        }
    }
}

impl std::error::Error for CudaError {}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    fn check(err: CudaError, value: u32, name: &str, desc: &str) {
        assert_eq!(err.0, value);
        assert_eq!(err.name(), Some(name));
        assert_eq!(err.description(), Some(desc));
    }

    #[test]
    fn spot_checks() {
        check(CudaError::SUCCESS, 0, "cudaSuccess", "no error");
        check(
            CudaError::INVALID_VALUE,
            1,
            "cudaErrorInvalidValue",
            "invalid argument",
        );
        check(
            CudaError::MEMORY_ALLOCATION,
            2,
            "cudaErrorMemoryAllocation",
            "out of memory",
        );
        check(
            CudaError::NO_DEVICE,
            100,
            "cudaErrorNoDevice",
            "no CUDA-capable device is detected",
        );
        check(
            CudaError::INVALID_DEVICE,
            101,
            "cudaErrorInvalidDevice",
            "invalid device ordinal",
        );
        check(
            CudaError::ILLEGAL_ADDRESS,
            700,
            "cudaErrorIllegalAddress",
            "an illegal memory access was encountered",
        );
        check(
            CudaError::LAUNCH_FAILURE,
            719,
            "cudaErrorLaunchFailure",
            "unspecified launch failure",
        );
        check(
            CudaError::NOT_SUPPORTED,
            801,
            "cudaErrorNotSupported",
            "operation not supported",
        );
        check(CudaError::UNKNOWN, 999, "cudaErrorUnknown", "unknown error");
        assert_eq!(CudaError::ECC_UNCORRECTABLE.0, 214);
        assert_eq!(
            CudaError::CUDART_UNLOADING.name(),
            Some("cudaErrorCudartUnloading")
        );
        assert_eq!(CudaError::INVALID_PC.name(), Some("cudaErrorInvalidPc"));
        assert_eq!(CudaError::FABRIC_NOT_READY.0, 919);
        assert_eq!(CudaError::API_FAILURE_BASE.0, 10_000);
    }

    #[test]
    fn every_const_is_named_and_described() {
        assert_eq!(CudaError::ALL.len(), 139);
        let mut seen = HashSet::new();
        for &err in CudaError::ALL {
            assert!(seen.insert(err.0), "value {} listed twice", err.0);
            let name = err.name().expect("name");
            assert!(
                name == "cudaSuccess" || name.starts_with("cudaError"),
                "{name}"
            );
            assert!(!err.description().expect("description").is_empty());
        }
    }

    #[test]
    fn unknown_values() {
        let err = CudaError(0x1234);
        assert_eq!(err.name(), None);
        assert_eq!(err.description(), None);
        assert_eq!(format!("{err:?}"), "cudaError(0x1234)");
        assert_eq!(
            err.to_string(),
            "unrecognized error code (cudaError(0x1234))"
        );
        assert!(!err.is_sticky());
    }

    #[test]
    fn known_values_format() {
        assert_eq!(
            format!("{:?}", CudaError::INVALID_VALUE),
            "cudaErrorInvalidValue(1)"
        );
        assert_eq!(
            CudaError::MEMORY_ALLOCATION.to_string(),
            "out of memory (cudaErrorMemoryAllocation(2))"
        );
    }

    #[test]
    fn sticky_set() {
        let sticky: Vec<u32> = CudaError::ALL
            .iter()
            .filter(|e| e.is_sticky())
            .map(|e| e.0)
            .collect();
        assert_eq!(
            sticky,
            [226, 700, 702, 710, 714, 715, 716, 717, 718, 719, 721, 810]
        );
        assert!(!CudaError::COOPERATIVE_LAUNCH_TOO_LARGE.is_sticky());
        assert!(!CudaError::LAUNCH_OUT_OF_RESOURCES.is_sticky());
        assert!(!CudaError::SUCCESS.is_sticky());
    }
}
