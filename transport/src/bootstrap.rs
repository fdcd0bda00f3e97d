//! Turning a connected TCP socket into the channel a client asked for.
//!
//! Every connection starts on TCP (the handshake names the transport). For
//! RDMA modules both ends then create their RDMA state, exchange its
//! description over the TCP socket, and connect; all of it happens inside the
//! agent that serves the connection, never in the listener.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::str::FromStr;

use crate::channel::{Channel, TransportError};
use crate::csr::{CsrChannel, CsrEndpoint, CsrOptions, Polling};
use crate::msr::{MsrChannel, MsrEndpoint, MsrOptions};
use crate::tcp::{TcpChannel, TcpOptions};
use crate::verbs::Context;

/// Which transport module carries a connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum TransportKind {
    /// The TCP module.
    #[default]
    Tcp,
    /// RDMA with channel semantics.
    Csr,
    /// RDMA with memory semantics (RDMA write, dual channel).
    Msr,
}

impl TransportKind {
    /// Code in the handshake.
    pub fn code(self) -> u8 {
        match self {
            TransportKind::Tcp => 0,
            TransportKind::Csr => 1,
            TransportKind::Msr => 2,
        }
    }

    /// From a handshake code.
    pub fn from_code(code: u8) -> Option<Self> {
        match code {
            0 => Some(TransportKind::Tcp),
            1 => Some(TransportKind::Csr),
            2 => Some(TransportKind::Msr),
            _ => None,
        }
    }
}

impl FromStr for TransportKind {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s.trim().to_ascii_lowercase().as_str() {
            "tcp" => Ok(TransportKind::Tcp),
            "csr" => Ok(TransportKind::Csr),
            "msr" => Ok(TransportKind::Msr),
            other => Err(format!("unknown transport `{other}` (tcp, csr or msr)")),
        }
    }
}

impl std::fmt::Display for TransportKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            TransportKind::Tcp => "tcp",
            TransportKind::Csr => "csr",
            TransportKind::Msr => "msr",
        })
    }
}

/// Longest RDMA connection description accepted from a peer.
const MAX_BLOB: usize = 64 << 10;

/// RDMA device the RDMA modules use: `RCUD_RDMA_DEVICE`, else the first one.
fn rdma_context() -> Result<Context, TransportError> {
    let name = std::env::var("RCUD_RDMA_DEVICE").ok();
    let found =
        match name {
            Some(n) => Context::open_by_name(&n),
            None => match crate::verbs::devices().first() {
                Some(d) => Context::open(d),
                None => return Err(TransportError::Io(std::io::Error::other(
                    "no RDMA device: install rdma-core and an adapter, or use the TCP transport",
                ))),
            },
        };
    found.map_err(|e| TransportError::Io(std::io::Error::other(format!("RDMA device: {e}"))))
}

/// The CSR tunables from the environment: `RCUD_CSR_CHUNKS` (n ≥ 9, a
/// multiple of 3) and `RCUD_CSR_POLLING=busy|event`. On the soft provider,
/// which shares two cores with the rest of a test machine, waiting for events
/// is the measured better default.
pub fn csr_options_from_env() -> Result<CsrOptions, TransportError> {
    let mut opts = CsrOptions {
        polling: Polling::Event,
        ..CsrOptions::default()
    };
    if let Ok(n) = std::env::var("RCUD_CSR_CHUNKS") {
        opts.chunks = n.parse().map_err(|_| {
            TransportError::Io(std::io::Error::other(format!(
                "RCUD_CSR_CHUNKS={n} is not a number"
            )))
        })?;
    }
    if let Ok(p) = std::env::var("RCUD_CSR_POLLING") {
        opts.polling = match p.as_str() {
            "busy" => Polling::Busy,
            "event" => Polling::Event,
            other => {
                return Err(TransportError::Io(std::io::Error::other(format!(
                    "RCUD_CSR_POLLING={other}: expected busy or event"
                ))))
            }
        };
    }
    opts.validate()?;
    Ok(opts)
}

/// The MSR tunables from the environment: `RCUD_MSR_CHUNKS` (n ≥ 1) and
/// `RCUD_MSR_POLLING=busy|event`; wait-for-event is the default on the soft
/// provider, as for CSR.
pub fn msr_options_from_env() -> Result<MsrOptions, TransportError> {
    let mut opts = MsrOptions {
        polling: Polling::Event,
        ..MsrOptions::default()
    };
    if let Ok(n) = std::env::var("RCUD_MSR_CHUNKS") {
        opts.chunks = n.parse().map_err(|_| {
            TransportError::Io(std::io::Error::other(format!(
                "RCUD_MSR_CHUNKS={n} is not a number"
            )))
        })?;
    }
    if let Ok(p) = std::env::var("RCUD_MSR_POLLING") {
        opts.polling = match p.as_str() {
            "busy" => Polling::Busy,
            "event" => Polling::Event,
            other => {
                return Err(TransportError::Io(std::io::Error::other(format!(
                    "RCUD_MSR_POLLING={other}: expected busy or event"
                ))))
            }
        };
    }
    opts.validate()?;
    Ok(opts)
}

/// Sends our RDMA description (length-prefixed) and reads the peer's.
fn exchange_description(stream: &mut TcpStream, blob: &[u8]) -> Result<Vec<u8>, TransportError> {
    let mut out = Vec::with_capacity(4 + blob.len());
    out.extend_from_slice(&(blob.len() as u32).to_le_bytes());
    out.extend_from_slice(blob);
    stream.write_all(&out)?;
    let mut len = [0u8; 4];
    stream.read_exact(&mut len)?;
    let len = u32::from_le_bytes(len) as usize;
    if len > MAX_BLOB {
        return Err(TransportError::Io(std::io::Error::other(format!(
            "peer's RDMA description of {len} bytes is too long"
        ))));
    }
    let mut peer = vec![0u8; len];
    stream.read_exact(&mut peer)?;
    Ok(peer)
}

/// Builds the channel of `kind` on a socket whose handshake is done. Both
/// ends call it with the same kind. A read timeout on `stream` bounds the RDMA
/// set-up exchange; the TCP channel is left without one.
pub fn establish(
    mut stream: TcpStream,
    kind: TransportKind,
    tcp: &TcpOptions,
) -> Result<Box<dyn Channel>, TransportError> {
    match kind {
        TransportKind::Tcp => {
            // A timeout that bounded the handshake must not cut idle clients.
            stream.set_read_timeout(None)?;
            Ok(Box::new(TcpChannel::from_stream(stream, tcp)?))
        }
        TransportKind::Csr => {
            let ctx = rdma_context()?;
            let opts = csr_options_from_env()?;
            let (endpoint, blob) = CsrEndpoint::new(&ctx, &opts)?;
            // Both ends post their receives before their description leaves,
            // so each may write as soon as it has the other's.
            let peer = exchange_description(&mut stream, &blob)?;
            let chan: CsrChannel = endpoint.connect(&peer)?;
            Ok(Box::new(chan))
        }
        TransportKind::Msr => {
            let ctx = rdma_context()?;
            let opts = msr_options_from_env()?;
            // All notification and flow-control receives are posted and the
            // receive chunks registered before the description (with their
            // addresses and keys) leaves.
            let (endpoint, blob) = MsrEndpoint::new(&ctx, &opts)?;
            let peer = exchange_description(&mut stream, &blob)?;
            let chan: MsrChannel = endpoint.connect(&peer)?;
            Ok(Box::new(chan))
        }
    }
}
