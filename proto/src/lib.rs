//! The rcud wire protocol.
//!
//! A connection starts with a versioned handshake ([`handshake`]), then carries
//! frames ([`frame`]): a fixed header, a small encoded body, and optionally a bulk
//! payload (the bytes of a memory copy) that the transport streams in chunks.
//! Each CUDA operation is one request and one reply, declared once in [`ops`].
//! Nothing here opens a socket: the handshake's client side runs over any
//! byte stream it is given.
#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod auth;
pub mod codec;
pub mod cuda_error;
pub mod device;
pub mod frame;
pub mod handshake;
pub mod math;
pub mod ops;
pub mod texture;

pub use codec::{DecodeError, Reader, Wire, Writer};
pub use cuda_error::CudaError;
pub use device::{DeviceAttr, DeviceProps};
pub use frame::{FrameHeader, FrameKind};
