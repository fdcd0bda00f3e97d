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

            /// The enumerator's name as `cudaGetErrorName` returns it.
            pub fn name(self) -> Option<&'static str> {
                match self.0 { $($value => Some($name),)* _ => None }
            }

            /// A one-line description as `cudaGetErrorString` returns it.
            pub fn description(self) -> Option<&'static str> {
                match self.0 { $($value => Some($desc),)* _ => None }
            }
        }
    };
}

// PLACEHOLDER: the full CUDA 13 table replaces this.
cuda_errors! {
    SUCCESS = 0, "cudaSuccess", "no error";
    INVALID_VALUE = 1, "cudaErrorInvalidValue", "invalid argument";
    MEMORY_ALLOCATION = 2, "cudaErrorMemoryAllocation", "out of memory";
    INITIALIZATION_ERROR = 3, "cudaErrorInitializationError", "initialization error";
    INVALID_DEVICE = 101, "cudaErrorInvalidDevice", "invalid device ordinal";
    NO_DEVICE = 100, "cudaErrorNoDevice", "no CUDA-capable device is detected";
    NOT_SUPPORTED = 801, "cudaErrorNotSupported", "operation not supported";
    DEVICES_UNAVAILABLE = 46, "cudaErrorDevicesUnavailable", "CUDA-capable device(s) is/are busy or unavailable";
    HOST_MEMORY_ALREADY_REGISTERED = 712, "cudaErrorHostMemoryAlreadyRegistered", "part or all of the requested memory range is already mapped";
    HOST_MEMORY_NOT_REGISTERED = 713, "cudaErrorHostMemoryNotRegistered", "pointer does not correspond to a registered memory region";
    ILLEGAL_ADDRESS = 700, "cudaErrorIllegalAddress", "an illegal memory access was encountered";
    UNKNOWN = 999, "cudaErrorUnknown", "unknown error";
}

impl CudaError {
    /// Whether the error corrupts the context: once it happened, every later
    /// call on that device returns it until `cudaDeviceReset`.
    pub fn is_sticky(self) -> bool {
        matches!(self.0, 700 | 714..=720)
    }
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
