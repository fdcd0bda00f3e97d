//! Connection management for the `soft` provider, in the RDMA CM model: an
//! agent listens on a port, a client connects to that port, and the two
//! queue pairs are connected by a request/reply/ready-to-use exchange.
//!
//! A port is a Linux abstract Unix socket `rcud-soft-cm/<port>` (host-local,
//! like the provider itself; nothing left on disk). The exchange on it:
//!
//! ```text
//! client (active)                    agent (passive)
//! REQ  magic, client's QP endpoint ─▶ get_request: the request
//!                                     create_qp, establish: connect the QP,
//!      ◀─ REP  magic, agent's QP endpoint
//! connect the QP
//! RTU  magic ───────────────────────▶ established
//! ```
//!
//! As with RDMA CM, the agent's queue pair is ready to receive before the
//! reply leaves and the client's before it says "ready to use", so each end
//! may send as soon as its `establish` returns. The socket is closed once
//! the connection is established; the queue pairs notice a dead peer on
//! their own.

use std::io::{self, Read, Write};
use std::os::linux::net::SocketAddrExt;
use std::os::unix::net::{SocketAddr, UnixListener, UnixStream};
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::super::rdma_core::cm::CmError;
use super::super::{Context, Endpoint, ProtectionDomain, QpInit, QpOps, QueuePair};

const REQ: &[u8; 4] = b"SCQ1";
const REP: &[u8; 4] = b"SCP1";
const RTU: &[u8; 4] = b"SCR1";
/// Longest queue-pair endpoint accepted from a peer.
const MAX_ENDPOINT: usize = 4096;
/// Ports tried at random before giving up (each a failed bind).
const BIND_TRIES: usize = 256;
/// Ports drawn from the dynamic range, as the kernel picks RDMA CM ports.
const PORTS: std::ops::RangeInclusive<u16> = 49152..=65535;

fn name(port: u16) -> io::Result<SocketAddr> {
    SocketAddr::from_abstract_name(format!("rcud-soft-cm/{port}"))
}

fn io_err(call: &'static str, source: io::Error) -> CmError {
    CmError::Call { call, source }
}

fn remaining(
    deadline: Instant,
    waiting_for: &'static str,
    timeout: Duration,
) -> Result<Duration, CmError> {
    let left = deadline.saturating_duration_since(Instant::now());
    if left.is_zero() {
        return Err(CmError::Timeout {
            waiting_for,
            after: timeout,
        });
    }
    Ok(left)
}

/// Reads one message: `magic`, then (with `body`) a length-prefixed endpoint.
fn read_message(
    s: &mut UnixStream,
    magic: &[u8; 4],
    body: bool,
    waiting_for: &'static str,
    timeout: Duration,
) -> Result<Option<Endpoint>, CmError> {
    let deadline = Instant::now() + timeout;
    let mut read = |buf: &mut [u8]| -> Result<(), CmError> {
        let mut got = 0;
        while got < buf.len() {
            s.set_read_timeout(Some(remaining(deadline, waiting_for, timeout)?))
                .map_err(|e| io_err("setting a socket timeout", e))?;
            match s.read(&mut buf[got..]) {
                Ok(0) => {
                    return Err(CmError::Unexpected {
                        waiting_for,
                        got: "the peer closing the connection".into(),
                        status: 0,
                    })
                }
                Ok(k) => got += k,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e)
                    if matches!(
                        e.kind(),
                        io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
                    ) =>
                {
                    return Err(CmError::Timeout {
                        waiting_for,
                        after: timeout,
                    })
                }
                Err(e) => return Err(io_err("reading from the soft RDMA CM peer", e)),
            }
        }
        Ok(())
    };
    let mut m = [0u8; 4];
    read(&mut m)?;
    if &m != magic {
        return Err(CmError::Unexpected {
            waiting_for,
            got: format!("a malformed message {m:02x?}"),
            status: 0,
        });
    }
    if !body {
        return Ok(None);
    }
    let mut len = [0u8; 4];
    read(&mut len)?;
    let len = u32::from_le_bytes(len) as usize;
    if len > MAX_ENDPOINT {
        return Err(CmError::Unexpected {
            waiting_for,
            got: format!("an endpoint of {len} bytes"),
            status: 0,
        });
    }
    let mut ep = vec![0u8; len];
    read(&mut ep)?;
    Ok(Some(Endpoint::from_bytes(&ep)))
}

fn write_message(
    s: &mut UnixStream,
    magic: &[u8; 4],
    ep: Option<&Endpoint>,
) -> Result<(), CmError> {
    let mut b = Vec::with_capacity(8 + ep.map_or(0, |e| e.as_bytes().len()));
    b.extend_from_slice(magic);
    if let Some(ep) = ep {
        b.extend_from_slice(&(ep.as_bytes().len() as u32).to_le_bytes());
        b.extend_from_slice(ep.as_bytes());
    }
    s.write_all(&b)
        .map_err(|e| io_err("writing to the soft RDMA CM peer", e))
}

/// A port of this host on which connection requests arrive.
pub(crate) struct Listener {
    socket: UnixListener,
    port: u16,
}

impl Listener {
    /// Listens on a free port of the dynamic range.
    pub(crate) fn bind() -> Result<(Listener, u16), CmError> {
        let random = std::collections::hash_map::RandomState::new();
        let span = u32::from(PORTS.end() - PORTS.start()) + 1;
        let mut last = None;
        for i in 0..BIND_TRIES {
            let draw = std::hash::BuildHasher::hash_one(&random, i);
            let port = PORTS.start() + (draw % u64::from(span)) as u16;
            let addr = name(port).map_err(|e| io_err("naming a soft RDMA CM port", e))?;
            match UnixListener::bind_addr(&addr) {
                Ok(socket) => {
                    socket
                        .set_nonblocking(true)
                        .map_err(|e| io_err("setting a soft RDMA CM port non-blocking", e))?;
                    return Ok((Listener { socket, port }, port));
                }
                Err(e) if e.kind() == io::ErrorKind::AddrInUse => last = Some(e),
                Err(e) => return Err(io_err("binding a soft RDMA CM port", e)),
            }
        }
        Err(io_err(
            "binding a soft RDMA CM port (every port tried is taken)",
            last.unwrap_or_else(|| io::Error::from(io::ErrorKind::AddrInUse)),
        ))
    }

    pub(crate) fn port(&self) -> u16 {
        self.port
    }

    /// Waits up to `timeout` for a connection request.
    pub(crate) fn get_request(&self, ctx: &Context, timeout: Duration) -> Result<Pending, CmError> {
        let deadline = Instant::now() + timeout;
        let mut nap = Duration::from_micros(50);
        let mut stream = loop {
            match self.socket.accept() {
                Ok((s, _)) => break s,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    let left = remaining(deadline, "connection request", timeout)?;
                    std::thread::sleep(nap.min(left));
                    nap = (nap * 2).min(Duration::from_millis(2));
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(io_err("accepting on a soft RDMA CM port", e)),
            }
        };
        stream
            .set_nonblocking(false)
            .map_err(|e| io_err("setting a soft RDMA CM connection blocking", e))?;
        let left = remaining(deadline, "connection request", timeout)?;
        let peer = read_message(&mut stream, REQ, true, "connection request", left)?;
        Ok(Pending {
            stream,
            passive: true,
            peer,
            context: ctx.clone(),
            qp: None,
        })
    }
}

/// Connects to `port` of this host.
pub(crate) fn resolve(ctx: &Context, port: u16) -> Result<Pending, CmError> {
    let addr = name(port).map_err(|e| io_err("naming a soft RDMA CM port", e))?;
    let stream = UnixStream::connect_addr(&addr).map_err(|e| {
        let hint = if e.kind() == io::ErrorKind::ConnectionRefused {
            format!(
                "nobody listens on soft RDMA CM port {port} of this host (the soft provider \
                 reaches peers on the same host and network namespace only)"
            )
        } else {
            format!("soft RDMA CM port {port}: {e}")
        };
        CmError::Call {
            call: "connecting to the agent",
            source: io::Error::new(e.kind(), hint),
        }
    })?;
    Ok(Pending {
        stream,
        passive: false,
        peer: None,
        context: ctx.clone(),
        qp: None,
    })
}

/// A connection being set up: a request taken by the agent, or a client
/// connected to the agent's port.
pub(crate) struct Pending {
    stream: UnixStream,
    passive: bool,
    /// The client's queue pair (agent side).
    peer: Option<Endpoint>,
    context: Context,
    qp: Option<Arc<dyn QpOps>>,
}

impl Pending {
    pub(crate) fn context(&self) -> &Context {
        &self.context
    }

    pub(crate) fn create_qp(
        &mut self,
        pd: &ProtectionDomain,
        init: &QpInit<'_>,
    ) -> Result<QueuePair, CmError> {
        if self.qp.is_some() {
            return Err(CmError::Misuse("the connection already has a queue pair"));
        }
        let qp = pd.create_qp(init)?;
        self.qp = Some(qp.ops.clone());
        Ok(qp)
    }

    pub(crate) fn establish(mut self, timeout: Duration) -> Result<(), CmError> {
        let Some(qp) = self.qp.take() else {
            return Err(CmError::Misuse("create_qp before establish"));
        };
        if self.passive {
            let peer = self
                .peer
                .take()
                .ok_or(CmError::Misuse("a request without the peer's queue pair"))?;
            qp.connect(&peer)?;
            write_message(&mut self.stream, REP, Some(&qp.endpoint()))?;
            read_message(
                &mut self.stream,
                RTU,
                false,
                "established connection",
                timeout,
            )?;
        } else {
            write_message(&mut self.stream, REQ, Some(&qp.endpoint()))?;
            let rep = read_message(&mut self.stream, REP, true, "connection reply", timeout)?
                .ok_or(CmError::Misuse("a reply without the agent's queue pair"))?;
            qp.connect(&rep)?;
            write_message(&mut self.stream, RTU, None)?;
        }
        Ok(())
    }
}
