//! Copies between two GPUs of one server (`cudaMemcpyPeer`), agent to agent.
//!
//! Every remote GPU is a session of its own, so the two GPUs of a peer copy
//! are served by two agents (two processes under process isolation). The
//! bytes go from one to the other over a local Unix-domain socket and never
//! through the client:
//!
//! 1. `PeerListen` on the destination's session: its agent opens, once, a
//!    listening socket in Linux's abstract namespace named
//!    `rcud-peer/<instance>/<random>` ([`PeerPort`]) and issues a single-use
//!    128-bit ticket.
//! 2. `PeerReceive` on the destination's session (the client does not wait
//!    for its reply): the agent accepts connections until one presents the
//!    ticket ([`ACCEPT_TIMEOUT`] at most), then receives into device memory
//!    through the backend's host-to-device path.
//! 3. `PeerSend` on the source's session, at the same time: its agent connects
//!    to the endpoint — only to names of its own server instance — and sends
//!    the device bytes through the backend's device-to-host path, in pieces of
//!    [`PIECE`] bytes.
//!
//! On the socket the source first sends a [`Hello`] (magic, ticket, length,
//! and its own status: a source that cannot copy still connects to release
//! the waiting destination), the destination answers with a status (go, or
//! why not), then the bytes flow and the destination confirms with a final
//! status. Both sides check that the other end runs as the same user, and
//! every wait is bounded: a peer that dies gives an error at once, one that
//! stalls gives [`CudaError::TIMEOUT`] after [`IO_TIMEOUT`].

use std::fmt;
use std::io::{self, Read, Write};
use std::os::fd::AsFd;
use std::os::linux::net::SocketAddrExt;
use std::os::unix::net::{SocketAddr, UnixListener, UnixStream};
use std::str::FromStr;
use std::time::{Duration, Instant};

use nix::errno::Errno;
use nix::poll::{poll, PollFd, PollFlags, PollTimeout};
use nix::sys::socket::{getsockopt, sockopt::PeerCredentials};
use rcud_proto::ops::Failure;
use rcud_proto::CudaError;
use rcud_transport::TransportError;
use thiserror::Error;

use crate::backend::{CopyError, DeviceContext, HostSource};

/// First component of every endpoint name.
pub const ENDPOINT_PREFIX: &str = "rcud-peer/";
/// Bytes moved per socket read or write.
pub const PIECE: usize = 1 << 20;
/// Longest the destination waits for its source to connect. The client sends
/// `PeerSend` right after `PeerReceive` to an agent with nothing queued, so
/// only a failed or dead source agent takes this long.
pub const ACCEPT_TIMEOUT: Duration = Duration::from_secs(10);
/// Longest either side waits for the other to make progress once connected.
pub const IO_TIMEOUT: Duration = Duration::from_secs(10);

/// Magic bytes that open a source's hello.
const MAGIC: [u8; 4] = *b"RCPC";
/// Hex digits of the random part of an endpoint name.
const PORT_ID_HEX: usize = 16;

/// Random id of one server instance: the listener draws it and hands it to
/// every agent, thread or process. Zero means none (peer copies off).
#[derive(Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct InstanceId(pub [u8; 16]);

impl InstanceId {
    /// No instance id: the server offers no peer copies.
    pub const NONE: Self = Self([0; 16]);

    /// A fresh random id.
    pub fn random() -> io::Result<Self> {
        Ok(Self(random_bytes()?))
    }

    /// Whether this is [`InstanceId::NONE`].
    pub fn is_none(&self) -> bool {
        *self == Self::NONE
    }

    /// `rcud-peer/<instance>/`: every endpoint of this instance starts so.
    fn endpoint_prefix(&self) -> String {
        format!("{ENDPOINT_PREFIX}{self}/")
    }
}

impl fmt::Display for InstanceId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&hex(&self.0))
    }
}

impl fmt::Debug for InstanceId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "InstanceId({self})")
    }
}

impl FromStr for InstanceId {
    type Err = String;

    /// 32 hex digits, as [`fmt::Display`] writes them.
    fn from_str(s: &str) -> Result<Self, String> {
        let bad = || format!("`{s}` is not an instance id (32 hex digits)");
        if s.len() != 32 || !s.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Err(bad());
        }
        let mut id = [0u8; 16];
        for (i, byte) in id.iter_mut().enumerate() {
            *byte = u8::from_str_radix(&s[2 * i..2 * i + 2], 16).map_err(|_| bad())?;
        }
        Ok(Self(id))
    }
}

pub(crate) fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// `N` bytes from the operating system's random source.
pub fn random_bytes<const N: usize>() -> io::Result<[u8; N]> {
    let mut out = [0u8; N];
    getrandom::fill(&mut out).map_err(|e| io::Error::other(format!("random source: {e}")))?;
    Ok(out)
}

/// Why a peer copy failed, on either side.
#[derive(Debug, Error)]
pub enum PeerError {
    /// The request is invalid: bad endpoint, unknown ticket, no rendezvous.
    #[error("{1}")]
    Invalid(CudaError, String),
    /// This side's device refused the range or failed.
    #[error("this side: {0}")]
    Device(CudaError),
    /// The other agent reported a failure of its own.
    #[error("the other agent of the copy failed: {0:?}")]
    Remote(CudaError),
    /// No source presented the ticket in time.
    #[error("no source agent connected within {0:?}")]
    NoSource(Duration),
    /// The other agent went away or cannot be reached.
    #[error("the other agent of the copy is gone: {0}")]
    Gone(io::Error),
    /// The other agent stopped making progress.
    #[error("the other agent of the copy stalled for {0:?}")]
    Stalled(Duration),
    /// The endpoint is held by a process of another user.
    #[error("the peer endpoint belongs to another user (uid {0})")]
    ForeignPeer(u32),
    /// A local socket operation failed.
    #[error("local socket: {0}")]
    Local(io::Error),
}

impl PeerError {
    /// The CUDA error the client gets. A remote sticky error is not this
    /// side's: it must not poison this side's context.
    pub fn code(&self) -> CudaError {
        match self {
            Self::Invalid(code, _) | Self::Device(code) => *code,
            Self::Remote(code) if !code.is_sticky() => *code,
            Self::Remote(_) | Self::Gone(_) | Self::ForeignPeer(_) | Self::Local(_) => {
                CudaError::DEVICES_UNAVAILABLE
            }
            Self::NoSource(_) | Self::Stalled(_) => CudaError::TIMEOUT,
        }
    }

    /// Classifies an I/O error on a connected peer socket.
    fn io(e: io::Error) -> Self {
        match e.kind() {
            io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut => Self::Stalled(IO_TIMEOUT),
            _ => Self::Gone(e),
        }
    }

    fn copy(e: CopyError) -> Self {
        match e {
            CopyError::Cuda(code) => Self::Device(code),
            CopyError::Transport(TransportError::Io(e)) => Self::io(e),
            CopyError::Transport(other) => Self::Gone(io::Error::other(other.to_string())),
        }
    }
}

impl From<PeerError> for Failure {
    fn from(e: PeerError) -> Self {
        match e {
            // The code says it all.
            PeerError::Device(code) => Failure::from(code),
            e => Failure::new(e.code(), format!("peer copy: {e}")),
        }
    }
}

/// What a source sends first: who it is, how much, and whether it can send.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Hello {
    ticket: [u8; 16],
    len: u64,
    /// `cudaSuccess`, or why the source cannot send (the copy is off).
    status: CudaError,
}

impl Hello {
    const SIZE: usize = 32;

    fn to_bytes(self) -> [u8; Self::SIZE] {
        let mut out = [0u8; Self::SIZE];
        out[..4].copy_from_slice(&MAGIC);
        out[4..20].copy_from_slice(&self.ticket);
        out[20..28].copy_from_slice(&self.len.to_le_bytes());
        out[28..].copy_from_slice(&self.status.0.to_le_bytes());
        out
    }

    fn from_bytes(b: &[u8; Self::SIZE]) -> Option<Self> {
        if b[..4] != MAGIC {
            return None;
        }
        let mut ticket = [0u8; 16];
        ticket.copy_from_slice(&b[4..20]);
        let mut len = [0u8; 8];
        len.copy_from_slice(&b[20..28]);
        let mut status = [0u8; 4];
        status.copy_from_slice(&b[28..]);
        Some(Self {
            ticket,
            len: u64::from_le_bytes(len),
            status: CudaError(u32::from_le_bytes(status)),
        })
    }
}

fn send_status(stream: &mut UnixStream, status: CudaError) -> io::Result<()> {
    stream.write_all(&status.0.to_le_bytes())
}

fn recv_status(stream: &mut UnixStream) -> io::Result<CudaError> {
    let mut b = [0u8; 4];
    stream.read_exact(&mut b)?;
    Ok(CudaError(u32::from_le_bytes(b)))
}

/// Bounds every read and write on a connected peer socket and refuses a
/// peer that runs as another user.
pub(crate) fn prepare(stream: &UnixStream) -> Result<(), PeerError> {
    stream.set_nonblocking(false).map_err(PeerError::Local)?;
    stream
        .set_read_timeout(Some(IO_TIMEOUT))
        .map_err(PeerError::Local)?;
    stream
        .set_write_timeout(Some(IO_TIMEOUT))
        .map_err(PeerError::Local)?;
    let creds = getsockopt(&stream.as_fd(), PeerCredentials)
        .map_err(|e| PeerError::Local(io::Error::from(e)))?;
    if creds.uid() != nix::unistd::geteuid().as_raw() {
        return Err(PeerError::ForeignPeer(creds.uid()));
    }
    Ok(())
}

/// One agent's rendezvous point for incoming peer copies; the name is
/// released when it is dropped (and by the kernel when the process dies).
#[derive(Debug)]
pub struct PeerPort {
    listener: UnixListener,
    endpoint: String,
}

impl PeerPort {
    /// Opens a listening socket named `rcud-peer/<instance>/<random>`.
    pub fn open(instance: InstanceId) -> io::Result<Self> {
        let endpoint = format!(
            "{}{}",
            instance.endpoint_prefix(),
            hex(&random_bytes::<{ PORT_ID_HEX / 2 }>()?)
        );
        let addr = SocketAddr::from_abstract_name(endpoint.as_bytes())?;
        let listener = UnixListener::bind_addr(&addr)?;
        // Accepts are bounded by `poll`.
        listener.set_nonblocking(true)?;
        Ok(Self { listener, endpoint })
    }

    /// The name a source connects to.
    pub fn endpoint(&self) -> &str {
        &self.endpoint
    }

    /// The next connection, or `NoSource` at `deadline`.
    fn accept_until(&self, deadline: Instant) -> Result<UnixStream, PeerError> {
        loop {
            match self.listener.accept() {
                Ok((stream, _)) => return Ok(stream),
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(PeerError::Local(e)),
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Err(PeerError::NoSource(ACCEPT_TIMEOUT));
            }
            // At most a minute per wait: fits poll's milliseconds.
            let ms = left.as_millis().clamp(1, 60_000) as u16;
            let mut fds = [PollFd::new(self.listener.as_fd(), PollFlags::POLLIN)];
            match poll(&mut fds, PollTimeout::from(ms)) {
                Ok(_) | Err(Errno::EINTR) => {}
                Err(e) => return Err(PeerError::Local(e.into())),
            }
        }
    }

    /// The connection of the source holding `ticket`. Other connections
    /// (strays of an earlier, failed copy, or anything else) are told off
    /// and closed.
    fn accept_source(&self, ticket: &[u8; 16]) -> Result<(UnixStream, Hello), PeerError> {
        let deadline = Instant::now() + ACCEPT_TIMEOUT;
        loop {
            let mut stream = self.accept_until(deadline)?;
            if let Err(e) = prepare(&stream) {
                tracing::warn!("peer copy: refusing a connection: {e}");
                continue;
            }
            let mut raw = [0u8; Hello::SIZE];
            let hello = match stream.read_exact(&mut raw) {
                Ok(()) => Hello::from_bytes(&raw),
                Err(e) => {
                    tracing::debug!("peer copy: a connection sent no hello: {e}");
                    continue;
                }
            };
            match hello {
                Some(h) if h.ticket == *ticket => return Ok((stream, h)),
                _ => {
                    tracing::debug!("peer copy: a connection presented a wrong ticket");
                    let _ = send_status(&mut stream, CudaError::INVALID_VALUE);
                }
            }
        }
    }
}

/// The rest of a peer copy's bytes, read from the source's socket as the
/// backend asks for them.
struct SocketSource<'a> {
    stream: &'a mut UnixStream,
    remaining: u64,
}

impl HostSource for SocketSource<'_> {
    fn read_into(&mut self, dst: &mut [u8]) -> Result<(), TransportError> {
        if dst.len() as u64 > self.remaining {
            return Err(TransportError::Io(io::Error::other(
                "backend read past the end of the peer copy",
            )));
        }
        for piece in dst.chunks_mut(PIECE) {
            self.stream.read_exact(piece)?;
            self.remaining -= piece.len() as u64;
        }
        Ok(())
    }
}

/// The destination's side: waits for the source presenting `ticket` and
/// receives `len` bytes into `dst`. With `refusal`, the source is still
/// waited for, and told why the copy is off.
pub fn receive(
    port: &PeerPort,
    ctx: &mut dyn DeviceContext,
    refusal: Option<CudaError>,
    dst: u64,
    len: u64,
    ticket: &[u8; 16],
) -> Result<(), PeerError> {
    let started = Instant::now();
    let (mut stream, hello) = port.accept_source(ticket)?;
    if hello.status != CudaError::SUCCESS {
        return Err(PeerError::Remote(hello.status));
    }
    let status = match refusal {
        Some(code) => code,
        None if hello.len != len => CudaError::INVALID_VALUE,
        None => ctx.check(dst, len).err().unwrap_or(CudaError::SUCCESS),
    };
    send_status(&mut stream, status).map_err(PeerError::io)?;
    if status != CudaError::SUCCESS {
        return Err(if hello.len != len && refusal.is_none() {
            PeerError::Invalid(
                status,
                format!("the source offers {} bytes, {len} expected", hello.len),
            )
        } else {
            PeerError::Device(status)
        });
    }
    let mut source = SocketSource {
        stream: &mut stream,
        remaining: len,
    };
    if let Err(e) = ctx.copy_from_host(dst, len, &mut source) {
        let e = PeerError::copy(e);
        if let PeerError::Device(code) = e {
            // The source is waiting for the final status.
            let _ = send_status(&mut stream, code);
        }
        return Err(e);
    }
    // All bytes are in device memory: a source gone by now changes nothing.
    if let Err(e) = send_status(&mut stream, CudaError::SUCCESS) {
        tracing::debug!("peer copy: the source left before the confirmation: {e}");
    }
    tracing::debug!(
        bytes = len,
        took = ?started.elapsed(),
        "peer copy: received from the source agent"
    );
    Ok(())
}

/// Checks that `endpoint` is a peer endpoint of this very server instance,
/// so that a client cannot make an agent connect to any other socket.
fn check_endpoint(instance: InstanceId, endpoint: &str) -> Result<(), PeerError> {
    let invalid = || {
        PeerError::Invalid(
            CudaError::INVALID_VALUE,
            format!("`{endpoint}` is not a peer endpoint of this server"),
        )
    };
    if instance.is_none() {
        return Err(PeerError::Invalid(
            CudaError::NOT_SUPPORTED,
            "this server has no instance id: no copies between its agents".into(),
        ));
    }
    let port_id = endpoint
        .strip_prefix(&instance.endpoint_prefix())
        .ok_or_else(invalid)?;
    if port_id.len() != PORT_ID_HEX
        || !port_id
            .bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
    {
        return Err(invalid());
    }
    Ok(())
}

/// The source's side: sends the `len` bytes at `src` to the destination at
/// `endpoint`. With `refusal`, or when the range is invalid, the destination
/// is told the copy is off and the reason is returned.
pub fn send(
    instance: InstanceId,
    ctx: &mut dyn DeviceContext,
    refusal: Option<CudaError>,
    src: u64,
    len: u64,
    endpoint: &str,
    ticket: &[u8; 16],
) -> Result<(), PeerError> {
    check_endpoint(instance, endpoint)?;
    let started = Instant::now();
    let status = match refusal {
        Some(code) => code,
        None => ctx.check(src, len).err().unwrap_or(CudaError::SUCCESS),
    };
    let addr = SocketAddr::from_abstract_name(endpoint.as_bytes()).map_err(PeerError::Local)?;
    let mut stream = UnixStream::connect_addr(&addr).map_err(PeerError::Gone)?;
    prepare(&stream)?;
    let hello = Hello {
        ticket: *ticket,
        len,
        status,
    };
    stream.write_all(&hello.to_bytes()).map_err(PeerError::io)?;
    if status != CudaError::SUCCESS {
        return Err(PeerError::Device(status));
    }
    let go = recv_status(&mut stream).map_err(PeerError::io)?;
    if go != CudaError::SUCCESS {
        return Err(PeerError::Remote(go));
    }
    ctx.copy_to_host(src, len, &mut |bytes| {
        for piece in bytes.chunks(PIECE) {
            stream.write_all(piece)?;
        }
        Ok(())
    })
    .map_err(PeerError::copy)?;
    let done = recv_status(&mut stream).map_err(PeerError::io)?;
    if done != CudaError::SUCCESS {
        return Err(PeerError::Remote(done));
    }
    tracing::debug!(
        bytes = len,
        took = ?started.elapsed(),
        "peer copy: sent to the destination agent"
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn instance_ids_print_and_parse() {
        let id = InstanceId::random().unwrap();
        assert!(!id.is_none());
        let text = id.to_string();
        assert_eq!(text.len(), 32);
        assert_eq!(text.parse::<InstanceId>(), Ok(id));
        assert!("00".parse::<InstanceId>().is_err());
        assert!("zz112233445566778899aabbccddeeff"
            .parse::<InstanceId>()
            .is_err());
        assert_ne!(InstanceId::random().unwrap(), id);
    }

    #[test]
    fn only_endpoints_of_this_instance_are_accepted() {
        let id = InstanceId::random().unwrap();
        let other = InstanceId::random().unwrap();
        let port = PeerPort::open(id).unwrap();
        assert!(check_endpoint(id, port.endpoint()).is_ok());
        assert!(check_endpoint(other, port.endpoint()).is_err());
        for bad in [
            "rcud-peer/",
            "some-other-service",
            &format!("{}0123", id.endpoint_prefix()),
            &format!("{}0123456789ABCDEF", id.endpoint_prefix()),
            &format!("{}0123456789abcdef/x", id.endpoint_prefix()),
        ] {
            let e = check_endpoint(id, bad).unwrap_err();
            assert_eq!(e.code(), CudaError::INVALID_VALUE, "{bad}");
        }
        assert_eq!(
            check_endpoint(InstanceId::NONE, port.endpoint())
                .unwrap_err()
                .code(),
            CudaError::NOT_SUPPORTED
        );
    }

    #[test]
    fn hello_round_trips_and_rejects_other_magic() {
        let h = Hello {
            ticket: [9; 16],
            len: (64 << 20) + 1,
            status: CudaError::INVALID_VALUE,
        };
        assert_eq!(Hello::from_bytes(&h.to_bytes()), Some(h));
        let mut raw = h.to_bytes();
        raw[0] = b'X';
        assert_eq!(Hello::from_bytes(&raw), None);
    }

    #[test]
    fn remote_sticky_errors_do_not_become_this_sides() {
        assert_eq!(
            PeerError::Remote(CudaError::ILLEGAL_ADDRESS).code(),
            CudaError::DEVICES_UNAVAILABLE
        );
        assert_eq!(
            PeerError::Remote(CudaError::INVALID_VALUE).code(),
            CudaError::INVALID_VALUE
        );
        assert_eq!(PeerError::Stalled(IO_TIMEOUT).code(), CudaError::TIMEOUT);
    }
}
