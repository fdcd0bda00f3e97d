//! The hand-written C ABI. `build.rs` scans these files: a `pub extern "C" fn`
//! defined here is not generated as a stub.
// Exported C functions are `pub` by nature; their names follow CUDA's.
#![allow(non_snake_case, unreachable_pub)]

/// Defines an API function and its per-thread-default-stream twin (`_ptsz`
/// or `_ptds`), which behave the same here: `fn name / twin (args) { body }`
/// where `body` returns `Result<(), CudaError>`. `build.rs` recognizes the
/// `fn name / twin (` line.
macro_rules! with_ptsz {
    ($(#[$m:meta])* fn $name:ident / $ptsz:ident ($($arg:ident : $ty:ty),*) $body:block) => {
        $(#[$m])*
        #[no_mangle]
        pub extern "C" fn $name($($arg: $ty),*) -> crate::ffi::CudaErrorT {
            crate::ffi::guard(|| $body)
        }
        /// Per-thread default stream form: the same call.
        $(#[$m])*
        #[no_mangle]
        pub extern "C" fn $ptsz($($arg: $ty),*) -> crate::ffi::CudaErrorT {
            crate::ffi::guard(|| $body)
        }
    };
}

pub(crate) mod batch_copy;
pub(crate) mod device;
mod error;
pub(crate) mod graph;
pub(crate) mod interop;
pub(crate) mod ipc;
pub(crate) mod launch;
mod library;
pub(crate) mod logs;
pub(crate) mod managed;
pub(crate) mod memory;
pub(crate) mod memory3d;
pub(crate) mod mempool;
pub(crate) mod pitched;
pub(crate) mod registration;
pub(crate) mod stream;
mod symbols;
pub(crate) mod texture;
mod unified;
