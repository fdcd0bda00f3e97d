//! `rcud-server`: the daemon on GPU nodes.
//!
//! The [`listener`] accepts connections, lets each through the [`gate`]
//! (tenants, authentication, access policy) and hands it to an [`agent`],
//! which decodes and validates every request, runs it on a
//! [`backend::Backend`] and replies. Everything a client holds lives in its
//! agent's device contexts and is released when the connection ends, however
//! it ends.
#![warn(missing_docs)]
#![forbid(unsafe_code)]

pub mod activity;
pub mod agent;
pub mod backend;
pub mod config;
pub mod embedded;
pub mod gate;
pub mod ipc;
pub mod isolation;
pub mod listener;
pub mod metrics;
mod occupancy;
pub mod peer;
pub mod qos;
pub mod resume;
pub mod tenant_memory;
pub mod tenants;

pub use backend::{select_backend, Backend, BackendKind};
pub use listener::{Server, ServerHandle};
