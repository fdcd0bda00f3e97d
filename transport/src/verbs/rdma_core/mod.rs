//! The `rdma-core` provider: InfiniBand, RoCE and iWARP adapters through
//! libibverbs, with connection management through librdmacm ([`cm`]).
//!
//! Both libraries are opened at run time (`libibverbs.so.1`,
//! `librdmacm.so.1`; paths overridable with `RCUD_IBVERBS_LIBRARY` and
//! `RCUD_RDMACM_LIBRARY`), every entry point resolved when they load, so a
//! binary built here starts on hosts without them; [`availability`] says why
//! no device is listed. Types and constants come from bindgen output of
//! rdma-core's headers (`sys.rs`, produced by `scripts/gen-rdma-bindings.sh`).
//!
//! How the provider maps the verbs layer onto libibverbs:
//! - memory regions are page-aligned anonymous mappings owned by the region,
//!   registered with `ibv_reg_mr`; a registration the adapter refuses for
//!   lack of resources (`ENOMEM`, `ENOSPC`, `EAGAIN`: its translation tables,
//!   or the locked-memory limit `ulimit -l`) is [`VerbsError::Limit`], so that
//!   callers can fall back to fewer regions;
//! - a completion queue has its own completion channel; waiting arms it
//!   (`ibv_req_notify_cq`), polls, and sleeps in `poll(2)` on the channel's
//!   descriptor for at most the timeout; completions seen while checking are
//!   kept for the next poll, so waiting consumes nothing;
//! - the provider numbers work requests itself (the adapter sees a sequence
//!   number, the caller's id is restored from a per-queue-pair table), which
//!   gives exact queue-depth checks before posting, the opcode and length of
//!   failed send completions (the adapter leaves them undefined), and
//!   retirement of unsignaled sends;
//! - endpoints carry LID, GID, port, QPN, PSN and MTU; `connect` moves the
//!   queue pair INIT → RTR → RTS, with a global route (GRH) on Ethernet
//!   (RoCE) ports or when the peer has no LID.
//!
//! Tunables from the environment, read when a device is opened:
//! `RCUD_RDMA_PORT` (default: the first active port) and
//! `RCUD_RDMA_GID_INDEX` (default: on RoCE the first RoCE v2 IPv4 GID, else
//! the first valid one; on InfiniBand 0).
//!
//! Differences from the `soft` provider a caller may notice: a send that
//! finds no receive posted is retried by the adapter (`rnr_retry` 3 with a
//! 0.64 ms timer) before it fails with [`WcStatus::RnrRetryExceeded`]; if the
//! adapter rejects a list part-way (after our checks passed) the requests
//! before the rejected one stay posted and the error says how many.
//!
//! [`WcStatus::RnrRetryExceeded`]: super::WcStatus::RnrRetryExceeded

#[allow(unsafe_code)]
mod api;
#[allow(unsafe_code)]
pub mod cm;
mod endpoint;
#[allow(unsafe_code)]
mod events;
#[allow(unsafe_code)]
mod provider;
#[allow(unsafe_code)]
mod sys;
#[cfg(test)]
#[allow(unsafe_code)]
mod tests;

use std::sync::Arc;

use thiserror::Error;

use super::{ContextOps, DeviceInfo, Provider, Result, VerbsError};

/// What to install to get rdma-core.
pub const INSTALL_HINT: &str = "install rdma-core (Debian/Ubuntu: `apt install rdma-core \
    libibverbs1 librdmacm1`; RHEL/Fedora: `dnf install rdma-core libibverbs librdmacm`)";

/// Why the `rdma-core` provider lists no device.
#[derive(Debug, Clone, Error)]
pub enum Unavailable {
    /// A library could not be opened.
    #[error("{library} could not be loaded ({reason}): {INSTALL_HINT}, or set {env} to its path")]
    Library {
        /// The name or path that was opened.
        library: String,
        /// The dynamic loader's message.
        reason: String,
        /// The environment variable that overrides the path.
        env: String,
    },
    /// A library lacks an entry point.
    #[error(
        "{library} lacks {symbol} ({reason}): it is too old or not rdma-core's; {INSTALL_HINT}"
    )]
    Symbol {
        /// The library.
        library: String,
        /// The missing entry point.
        symbol: &'static str,
        /// The dynamic loader's message.
        reason: String,
    },
    /// libibverbs loaded but found no adapter.
    #[error(
        "no RDMA device: ibv_get_device_list returned 0 devices (is an adapter installed, its \
         kernel driver loaded (e.g. mlx5_ib, or rdma_rxe/siw for software RoCE/iWARP) and \
         /dev/infiniband present? `ibv_devices` lists them)"
    )]
    NoDevice,
    /// ibv_get_device_list failed.
    #[error("ibv_get_device_list failed: {0} (is the ib_uverbs kernel module loaded?)")]
    DeviceList(String),
}

/// The names of the adapters libibverbs lists, or why there are none.
pub fn availability() -> std::result::Result<Vec<String>, Unavailable> {
    let names = provider::device_names()?;
    if names.is_empty() {
        return Err(Unavailable::NoDevice);
    }
    Ok(names)
}

/// The devices of this provider for [`super::devices`]: none when the
/// library or an adapter is missing.
pub(crate) fn devices() -> Vec<DeviceInfo> {
    availability()
        .unwrap_or_default()
        .into_iter()
        .map(|name| DeviceInfo {
            name,
            provider: Provider::RdmaCore,
        })
        .collect()
}

/// Opens the adapter `name`.
pub(crate) fn open(name: &str) -> Result<Arc<dyn ContextOps>> {
    let ctx = provider::open(name).map_err(|e| match e {
        provider::OpenError::Unavailable(u) => VerbsError::NoSuchDevice {
            name: name.to_owned(),
            available: format!("none from rdma-core: {u}"),
        },
        provider::OpenError::Verbs(v) => v,
    })?;
    Ok(ctx)
}
