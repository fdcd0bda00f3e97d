//! Connection management, one model for both providers: RDMA CM's.
//!
//! An agent listens on a port ([`Listener::bind`]) and takes a connection
//! request ([`Listener::get_request`]); a client resolves the agent's address
//! and port ([`resolve`]). Both then create the connection's objects on
//! [`Pending::context`] (the device the connection runs on is known only at
//! that point with RDMA CM), create the queue pair through
//! [`Pending::create_qp`], post their receives, and call
//! [`Pending::establish`] (accept or connect). When `establish` returns, the
//! queue pair may send: the peer's is ready to receive.
//!
//! - `rdma-core`: librdmacm ([`rdma_core::cm`](super::rdma_core::cm)); the
//!   address is an IP address of an RDMA interface (IPoIB, or the RoCE or
//!   iWARP netdev) and the port an RDMA CM port.
//! - `soft`: a port of this host (an abstract Unix socket); the address is
//!   not used, the provider reaches peers of the same host only.
//!
//! Every wait has a timeout ([`CmError::Timeout`]).

use std::net::{IpAddr, SocketAddr};
use std::time::Duration;

use super::rdma_core::cm as rdmacm;
pub use super::rdma_core::cm::CmError;
use super::soft::cm as softcm;
use super::{Context, DeviceInfo, ProtectionDomain, Provider, QpInit, QueuePair, SOFT_DEVICE};

fn soft_context() -> Result<Context, CmError> {
    Ok(Context::open(&DeviceInfo {
        name: SOFT_DEVICE.into(),
        provider: Provider::Soft,
    })?)
}

/// A port on which connection requests arrive (the agent's side).
pub struct Listener {
    kind: ListenerKind,
}

enum ListenerKind {
    Soft(softcm::Listener, Context),
    RdmaCore(rdmacm::CmListener),
}

impl std::fmt::Debug for Listener {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let provider = match self.kind {
            ListenerKind::Soft(..) => Provider::Soft,
            ListenerKind::RdmaCore(_) => Provider::RdmaCore,
        };
        f.debug_struct("Listener")
            .field("provider", &provider)
            .field("port", &self.port())
            .finish()
    }
}

impl Listener {
    /// Listens at a port the system picks, on `ip` for `rdma-core` (an
    /// address of an RDMA interface) and on this host for `soft`. Returns
    /// the listener and its port.
    pub fn bind(provider: Provider, ip: IpAddr) -> Result<(Listener, u16), CmError> {
        match provider {
            Provider::Soft => {
                let ctx = soft_context()?;
                let (l, port) = softcm::Listener::bind()?;
                Ok((
                    Listener {
                        kind: ListenerKind::Soft(l, ctx),
                    },
                    port,
                ))
            }
            Provider::RdmaCore => {
                let (l, port) = rdmacm::CmListener::bind(ip)?;
                Ok((
                    Listener {
                        kind: ListenerKind::RdmaCore(l),
                    },
                    port,
                ))
            }
        }
    }

    /// The port it listens on.
    pub fn port(&self) -> u16 {
        match &self.kind {
            ListenerKind::Soft(l, _) => l.port(),
            ListenerKind::RdmaCore(l) => l.port(),
        }
    }

    /// Waits up to `timeout` for a connection request.
    pub fn get_request(&self, timeout: Duration) -> Result<Pending, CmError> {
        Ok(Pending {
            kind: match &self.kind {
                ListenerKind::Soft(l, ctx) => PendingKind::Soft(l.get_request(ctx, timeout)?),
                ListenerKind::RdmaCore(l) => PendingKind::RdmaCore(l.get_request(timeout)?),
            },
        })
    }
}

/// Resolves the agent at `addr` (its port from the agent) and waits up to
/// `timeout` for the route (the client's side).
pub fn resolve(
    provider: Provider,
    addr: SocketAddr,
    timeout: Duration,
) -> Result<Pending, CmError> {
    Ok(Pending {
        kind: match provider {
            Provider::Soft => PendingKind::Soft(softcm::resolve(&soft_context()?, addr.port())?),
            Provider::RdmaCore => PendingKind::RdmaCore(rdmacm::resolve(addr, timeout)?),
        },
    })
}

/// A connection being set up.
pub struct Pending {
    kind: PendingKind,
}

enum PendingKind {
    Soft(softcm::Pending),
    RdmaCore(rdmacm::CmPending),
}

impl std::fmt::Debug for Pending {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Pending")
            .field("context", self.context())
            .finish()
    }
}

impl Pending {
    /// The device the connection runs on: create its protection domain,
    /// completion queues and regions here.
    pub fn context(&self) -> &Context {
        match &self.kind {
            PendingKind::Soft(p) => p.context(),
            PendingKind::RdmaCore(p) => p.context(),
        }
    }

    /// Creates the connection's queue pair in `pd` (of [`Self::context`]).
    pub fn create_qp(
        &mut self,
        pd: &ProtectionDomain,
        init: &QpInit<'_>,
    ) -> Result<QueuePair, CmError> {
        match &mut self.kind {
            PendingKind::Soft(p) => p.create_qp(pd, init),
            PendingKind::RdmaCore(p) => p.create_qp(pd, init),
        }
    }

    /// Accepts the request (agent) or connects (client), waiting up to
    /// `timeout`; then the queue pair may send.
    pub fn establish(self, timeout: Duration) -> Result<(), CmError> {
        match self.kind {
            PendingKind::Soft(p) => p.establish(timeout),
            PendingKind::RdmaCore(p) => p.establish(timeout),
        }
    }
}
