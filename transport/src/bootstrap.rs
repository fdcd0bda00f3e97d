//! Turning a connected TCP socket into the channel a client asked for.
//!
//! Every connection starts on TCP (the handshake names the transport). For
//! the RDMA modules the agent then offers the first RDMA channel's port over
//! the TCP socket and the modules' set-up runs through the connection
//! manager ([`crate::setup`], [`crate::verbs::cm`]); all of it happens inside
//! the agent that serves the connection, never in the listener.

use std::str::FromStr;

use crate::channel::{Channel, TransportError};
use crate::csr::{CsrChannel, CsrOptions, Polling};
use crate::msr::{MsrChannel, MsrOptions};
use crate::setup;
use crate::tcp::{TcpChannel, TcpOptions};
use crate::tls::Link;
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

/// Which end of a connection calls [`establish`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// The server's agent: it offers the RDMA channels' ports and accepts.
    Agent,
    /// The client (the thesis's connector): it connects.
    Client,
}

/// Builds the channel of `kind` on a socket whose handshake is done. Both
/// ends call it with the same kind, each in its role. A read timeout on
/// `stream` bounds the RDMA set-up (else [`setup::SETUP_TIMEOUT`]); the TCP
/// channel is left without one.
pub fn establish<S: Link>(
    mut stream: S,
    kind: TransportKind,
    role: Role,
    tcp: &TcpOptions,
) -> Result<Box<dyn Channel>, TransportError> {
    let csr_opts = |ctx: &Context| csr_options_for(ctx.fabric());
    let msr_opts = |ctx: &Context| msr_options_for(ctx.fabric());
    Ok(match (kind, role) {
        (TransportKind::Tcp, _) => {
            // The timeouts that bounded the handshake give way to the
            // channel's own (`tcp.read_timeout`, `tcp.write_timeout`).
            Box::new(TcpChannel::from_stream(stream, tcp)?)
        }
        (TransportKind::Csr, Role::Agent) => {
            let (rv, first) = setup::offer(&mut stream, "CSR")?;
            Box::new(CsrChannel::accept(&rv, first, &csr_opts)?)
        }
        (TransportKind::Csr, Role::Client) => {
            let (rv, port) = setup::take_offer(&mut stream, "CSR")?;
            Box::new(CsrChannel::connect(&rv, port, &csr_opts)?)
        }
        (TransportKind::Msr, Role::Agent) => {
            let (rv, first) = setup::offer(&mut stream, "MSR")?;
            Box::new(MsrChannel::accept(&rv, first, &msr_opts)?)
        }
        (TransportKind::Msr, Role::Client) => {
            let (rv, port) = setup::take_offer(&mut stream, "MSR")?;
            Box::new(MsrChannel::connect(&rv, port, &msr_opts)?)
        }
    })
}
