//! The rcud client runtime.
//!
//! It gives the C ABI layer (`cuda-shim`) CUDA runtime semantics on top of
//! remote GPUs: device enumeration from `RCUD_SERVERS` ([`config`]), one
//! [`session::Session`] per remote GPU, per-thread current device and last
//! error, sticky errors, the host (pinned) memory table and memcpy direction
//! resolution ([`runtime`]). Everything here is safe Rust: the shim turns raw
//! pointers into slices before calling in.
#![warn(missing_docs)]
#![forbid(unsafe_code)]

pub mod config;
pub mod error;
pub mod hostmem;
pub mod modules;
pub mod runtime;
pub mod security;
pub mod session;
pub mod sonames;

pub use error::ClientError;
pub use runtime::{MemcpyKind, Runtime};
pub use security::Security;
