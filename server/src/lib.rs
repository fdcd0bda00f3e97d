//! `rcud-server`: the daemon on GPU nodes.
//!
//! The [`listener`] accepts connections and hands each to an [`agent`], which
//! performs the handshake, decodes and validates every request, runs it on a
//! [`backend::Backend`] and replies. Everything a client holds lives in its
//! agent's device contexts and is released when the connection ends, however
//! it ends.
#![warn(missing_docs)]
#![forbid(unsafe_code)]

pub mod agent;
pub mod backend;
pub mod isolation;
pub mod listener;
pub mod peer;

pub use backend::{select_backend, Backend, BackendKind};
pub use listener::{Server, ServerHandle};
