//! rcud's fuzz targets as plain functions.
//!
//! Each target takes what a fuzzer generates (a byte slice, or for
//! [`agent::session`] a structured input built with `arbitrary`) and feeds it
//! to code that reads data from a peer or from an application: the request
//! decoder ([`request`]), the handshake ([`handshake`]), the fatbin parser
//! ([`fatbin`]), the PTX front end of the emulated device ([`ptx`]), the RDMA
//! set-up messages ([`setup`]), the math libraries' calls ([`math`]), and
//! whole sessions of operations against an agent on the emulated backend
//! ([`agent`]); and the emulated device's compiling engine against its
//! interpreter on random kernels ([`jit`]).
//!
//! A target returns normally for every input. Besides "no panic", each one
//! checks properties of what it decoded (a value that decodes re-encodes to
//! the same bytes, a reply matches a model of the device), and panics when
//! one does not hold, so that the fuzzer reports it as a crash.
//!
//! The cargo-fuzz project in `fuzz/` calls these functions from one-line
//! targets; `tests/corpus.rs` runs them over the checked-in corpora.
#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod agent;
pub mod fatbin;
pub mod handshake;
pub mod jit;
pub mod math;
pub mod ptx;
pub mod request;
pub mod setup;

mod loopback;
mod stream;

/// A target that takes the fuzzer's bytes as they come.
pub type ByteTarget = fn(&[u8]);

/// The byte-slice targets by name, as the fuzz project and the corpus
/// directories (`fuzz/corpus/<name>`) call them.
pub const BYTE_TARGETS: &[(&str, ByteTarget)] = &[
    ("request", request::request),
    ("handshake", handshake::handshake),
    ("fatbin", fatbin::fatbin),
    ("ptx", ptx::ptx),
    ("setup", setup::setup),
    ("agent_ops", agent::session_bytes),
    ("math", math::math),
];
