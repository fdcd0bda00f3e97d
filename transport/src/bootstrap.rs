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
use crate::verbs::{Context, Fabric};

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

/// RDMA device the RDMA modules use: `RCUD_RDMA_DEVICE`, else the first
/// rdma-core adapter, else the `soft` device (peers on this host). Both ends
/// must end up on the same provider: set `RCUD_RDMA_DEVICE` where a host has
/// an adapter but its peer is reached over shared memory, or the other way.
fn rdma_context() -> Result<Context, TransportError> {
    let found = match std::env::var("RCUD_RDMA_DEVICE") {
        Ok(n) => Context::open_by_name(&n),
        Err(_) => {
            let all = crate::verbs::devices();
            let pick = all
                .iter()
                .find(|d| d.provider != crate::verbs::Provider::Soft)
                .or_else(|| all.first());
            match pick {
                Some(d) => Context::open(d),
                None => {
                    return Err(env_error(
                        "no RDMA device: install rdma-core and an adapter, or use the TCP \
                         transport"
                            .into(),
                    ))
                }
            }
        }
    };
    let ctx = found.map_err(|e| env_error(format!("RDMA device: {e}")))?;
    tracing::debug!(device = %ctx.device().name, fabric = ?ctx.fabric(), "RDMA device");
    Ok(ctx)
}

/// Tunables both RDMA modules read from the environment.
struct RdmaTunables {
    chunks: Option<usize>,
    polling: Polling,
    zero_copy: bool,
}

fn env_error(msg: String) -> TransportError {
    TransportError::Io(std::io::Error::other(msg))
}

/// `RCUD_<MODULE>_CHUNKS`, `RCUD_<MODULE>_POLLING=busy|event` (wait-for-event
/// by default: on the soft provider, which shares two cores with the rest of a
/// test machine, it is the measured better choice) and `RCUD_GPUDIRECT=on|off`.
fn rdma_tunables(module: &str) -> Result<RdmaTunables, TransportError> {
    let mut t = RdmaTunables {
        chunks: None,
        polling: Polling::Event,
        zero_copy: true,
    };
    let chunks_var = format!("RCUD_{module}_CHUNKS");
    if let Ok(n) = std::env::var(&chunks_var) {
        t.chunks = Some(
            n.parse()
                .map_err(|_| env_error(format!("{chunks_var}={n} is not a number")))?,
        );
    }
    let polling_var = format!("RCUD_{module}_POLLING");
    if let Ok(p) = std::env::var(&polling_var) {
        t.polling = match p.as_str() {
            "busy" => Polling::Busy,
            "event" => Polling::Event,
            other => {
                return Err(env_error(format!(
                    "{polling_var}={other}: expected busy or event"
                )))
            }
        };
    }
    if let Ok(v) = std::env::var("RCUD_GPUDIRECT") {
        t.zero_copy = match v.as_str() {
            "on" | "1" => true,
            "off" | "0" => false,
            other => {
                return Err(env_error(format!(
                    "RCUD_GPUDIRECT={other}: expected on or off"
                )))
            }
        };
    }
    Ok(t)
}

/// The CSR tunables from the environment for the `soft` device
/// ([`csr_options_for`] with shared memory).
pub fn csr_options_from_env() -> Result<CsrOptions, TransportError> {
    csr_options_for(Fabric::SharedMemory)
}

/// The CSR tunables for a device on `fabric`: `RCUD_CSR_CHUNKS` (n ≥ 9, a
/// multiple of 3; by default the measured optimum of the fabric,
/// [`Fabric::best_chunks`]), `RCUD_CSR_POLLING=busy|event` and
/// `RCUD_GPUDIRECT=on|off` (payloads posted in place from device memory on
/// the server and from the application's buffer on the client, where the
/// adapter registers memory cheaply; off: every byte through the staging
/// chunks).
pub fn csr_options_for(fabric: Fabric) -> Result<CsrOptions, TransportError> {
    let t = rdma_tunables("CSR")?;
    let opts = CsrOptions {
        chunks: t.chunks.unwrap_or(fabric.best_chunks()),
        polling: t.polling,
        zero_copy: t.zero_copy,
        ..CsrOptions::default()
    };
    opts.validate()?;
    Ok(opts)
}

/// The MSR tunables from the environment for the `soft` device
/// ([`msr_options_for`] with shared memory).
pub fn msr_options_from_env() -> Result<MsrOptions, TransportError> {
    msr_options_for(Fabric::SharedMemory)
}

/// The MSR tunables for a device on `fabric`: `RCUD_MSR_CHUNKS` (n ≥ 1; by
/// default [`Fabric::best_chunks`]), `RCUD_MSR_POLLING=busy|event` and
/// `RCUD_GPUDIRECT=on|off`, as for CSR.
pub fn msr_options_for(fabric: Fabric) -> Result<MsrOptions, TransportError> {
    let t = rdma_tunables("MSR")?;
    let opts = MsrOptions {
        chunks: t.chunks.unwrap_or(fabric.best_chunks()),
        polling: t.polling,
        zero_copy: t.zero_copy,
        ..MsrOptions::default()
    };
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
            let opts = csr_options_for(ctx.fabric())?;
            let (endpoint, blob) = CsrEndpoint::new(&ctx, &opts)?;
            // Both ends post their receives before their description leaves,
            // so each may write as soon as it has the other's.
            let peer = exchange_description(&mut stream, &blob)?;
            let chan: CsrChannel = endpoint.connect(&peer)?;
            Ok(Box::new(chan))
        }
        TransportKind::Msr => {
            let ctx = rdma_context()?;
            let opts = msr_options_for(ctx.fabric())?;
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
