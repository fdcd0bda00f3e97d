//! Transports move rcud frames between a client and a server.
//!
//! A [`Channel`] carries frames (header, small body, bulk payload). Bulk payloads
//! are never buffered whole: a sender streams them straight from the caller's
//! memory in chunks, and a receiver reads them straight into the destination
//! (device memory for the emulated device, the user's buffer on the client).
//! The transport knows nothing about CUDA beyond frame kinds.
#![warn(missing_docs)]
// Unsafe code is denied crate-wide and allowed only at the boundaries: the
// shared-memory modules of the soft verbs provider (`verbs::soft::{shm,
// layout}`), the libibverbs/librdmacm FFI of the rdma-core provider
// (`verbs::rdma_core`), and the registration of process memory in place
// (`verbs::ProtectionDomain::register`, used by `chunks`).
#![deny(unsafe_code)]

pub mod bootstrap;
pub mod channel;
mod chunks;
pub mod csr;
pub mod deadline;
pub mod fault_proxy;
pub mod msr;
mod rdma;
pub mod setup;
pub mod tcp;
pub mod tls;
pub mod verbs;

pub use channel::{Channel, TransportError};
pub use tcp::{TcpChannel, TcpOptions};
pub use tls::Link;

/// Default chunk size for bulk transfers.
pub const DEFAULT_CHUNK: usize = 1 << 20;
