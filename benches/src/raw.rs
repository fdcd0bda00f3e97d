//! The raw transport baseline: the same bytes over the same transport module
//! with no CUDA semantics, measured in the same run as rcud.
//!
//! - TCP: a plain socket pair on loopback, with a 9-byte header per request.
//! - CSR and MSR: a channel pair of the module alone (on the soft RDMA device,
//!   with the options the runtime's connections read from the environment),
//!   with one frame header per request.
//!
//! Both have the shape of the copies they stand for: an upload answered by an
//! empty reply (host to device), a request answered by the bytes (device to
//! host). A peer thread answers.

use std::io::{self, Read, Write};
use std::net::{TcpListener, TcpStream};

use rcud_proto::frame::{FrameHeader, FrameKind};
use rcud_transport::bootstrap::{self, TransportKind};
use rcud_transport::csr::CsrChannel;
use rcud_transport::msr::MsrChannel;
use rcud_transport::tcp::{self, TcpOptions};
use rcud_transport::{Channel, TransportError};

/// One end of a raw connection; the other end is a peer thread.
pub(crate) enum RawLink {
    Tcp(TcpStream),
    Module {
        chan: Box<dyn Channel>,
        chunks: usize,
    },
}

impl RawLink {
    /// Starts a peer for `kind`; its thread is pinned to `cpu` when given.
    pub(crate) fn start(
        kind: TransportKind,
        cpu: Option<usize>,
    ) -> Result<Self, Box<dyn std::error::Error>> {
        let pin = move || {
            if let Some(cpu) = cpu {
                if let Err(e) = super::pin::pin_current(cpu) {
                    tracing::warn!("raw peer: {e}");
                }
            }
        };
        match kind {
            TransportKind::Tcp => {
                let listener = TcpListener::bind("127.0.0.1:0")?;
                let addr = listener.local_addr()?;
                std::thread::Builder::new()
                    .name("rcud-bench-raw".into())
                    .spawn(move || {
                        pin();
                        if let Ok((conn, _)) = listener.accept() {
                            if tcp::tune(&conn, &TcpOptions::default()).is_ok() {
                                let _ = serve_tcp(conn);
                            }
                        }
                    })?;
                // The same socket options as rcud's connections.
                let stream = TcpStream::connect(addr)?;
                tcp::tune(&stream, &TcpOptions::default())?;
                Ok(RawLink::Tcp(stream))
            }
            TransportKind::Csr | TransportKind::Msr => {
                let (ours, theirs, chunks): (Box<dyn Channel>, Box<dyn Channel>, usize) =
                    if kind == TransportKind::Csr {
                        let (a, b) = CsrChannel::pair_local(&bootstrap::csr_options_from_env()?)?;
                        let n = a.chunks();
                        (Box::new(a), Box::new(b), n)
                    } else {
                        let (a, b) = MsrChannel::pair_local(&bootstrap::msr_options_from_env()?)?;
                        let n = a.chunks();
                        (Box::new(a), Box::new(b), n)
                    };
                std::thread::Builder::new()
                    .name("rcud-bench-raw".into())
                    .spawn(move || {
                        pin();
                        if let Err(e) = serve_channel(theirs) {
                            tracing::debug!("raw peer ended: {e}");
                        }
                    })?;
                Ok(RawLink::Module { chan: ours, chunks })
            }
        }
    }

    /// Staging chunks per direction of the module's pair (`None` for TCP).
    pub(crate) fn chunks(&self) -> Option<usize> {
        match self {
            RawLink::Tcp(_) => None,
            RawLink::Module { chunks, .. } => Some(*chunks),
        }
    }

    /// Sends `bytes` and waits for the answer (a host-to-device copy's shape).
    pub(crate) fn upload(&mut self, bytes: &[u8]) -> Result<(), Box<dyn std::error::Error>> {
        match self {
            RawLink::Tcp(s) => {
                s.write_all(&tcp_header(b'U', bytes.len()))?;
                s.write_all(bytes)?;
                s.read_exact(&mut [0u8; 1])?;
            }
            RawLink::Module { chan, .. } => {
                chan.send_frame(&request(OP_UPLOAD, 0, bytes.len()), &[], bytes)?;
                let h = chan.recv_header()?;
                chan.recv_body(h.body_len)?;
                chan.discard_bulk(h.bulk_len)?;
            }
        }
        Ok(())
    }

    /// Asks for `into.len()` bytes and reads them (a device-to-host copy's shape).
    pub(crate) fn download(&mut self, into: &mut [u8]) -> Result<(), Box<dyn std::error::Error>> {
        match self {
            RawLink::Tcp(s) => {
                s.write_all(&tcp_header(b'D', into.len()))?;
                s.read_exact(into)?;
            }
            RawLink::Module { chan, .. } => {
                let len = (into.len() as u64).to_le_bytes();
                chan.send_frame(&request(OP_DOWNLOAD, len.len(), 0), &len, &[])?;
                let h = chan.recv_header()?;
                chan.recv_body(h.body_len)?;
                if h.bulk_len != into.len() as u64 {
                    return Err(format!(
                        "raw peer sent {} bytes for {} asked",
                        h.bulk_len,
                        into.len()
                    )
                    .into());
                }
                chan.recv_bulk_into(into)?;
            }
        }
        Ok(())
    }
}

impl Drop for RawLink {
    fn drop(&mut self) {
        // The TCP peer sees the socket close; a module's peer is told.
        if let RawLink::Module { chan, .. } = self {
            let _ = chan
                .send_frame(&request(OP_QUIT, 0, 0), &[], &[])
                .and_then(|()| chan.flush());
        }
    }
}

fn tcp_header(kind: u8, len: usize) -> [u8; 9] {
    let mut h = [kind; 9];
    h[1..].copy_from_slice(&(len as u64).to_le_bytes());
    h
}

/// The raw peer keeps the bytes in a buffer as large as the transfer, as the
/// device's memory holds them: a small buffer reused for every piece would
/// stay in the CPU cache and flatter the baseline.
fn sized(buf: &mut Vec<u8>, len: usize) -> io::Result<&mut [u8]> {
    if len > MAX_TRANSFER {
        return Err(io::Error::other(format!(
            "raw peer: {len} bytes asked, more than {MAX_TRANSFER}"
        )));
    }
    if buf.len() < len {
        buf.resize(len, 0x5a);
    }
    Ok(&mut buf[..len])
}

/// Largest transfer the raw peer serves.
const MAX_TRANSFER: usize = 4 << 30;

fn serve_tcp(mut conn: TcpStream) -> io::Result<()> {
    let mut buf = Vec::new();
    let mut head = [0u8; 9];
    loop {
        conn.read_exact(&mut head)?;
        let len = u64::from_le_bytes(head[1..].try_into().unwrap_or([0; 8])) as usize;
        let bytes = sized(&mut buf, len)?;
        match head[0] {
            b'U' => {
                conn.read_exact(bytes)?;
                conn.write_all(&[1])?;
            }
            _ => conn.write_all(bytes)?,
        }
    }
}

const OP_UPLOAD: u16 = 1;
const OP_DOWNLOAD: u16 = 2;
const OP_QUIT: u16 = 3;

fn request(op: u16, body_len: usize, bulk_len: usize) -> FrameHeader {
    FrameHeader {
        flags: 0,
        kind: FrameKind::REQUEST,
        op,
        body_len: body_len as u32,
        id: 0,
        bulk_len: bulk_len as u64,
    }
}

fn serve_channel(mut chan: Box<dyn Channel>) -> Result<(), TransportError> {
    let mut buf = Vec::new();
    loop {
        let h = chan.recv_header()?;
        let body = chan.recv_body(h.body_len)?;
        let asked = body
            .get(..8)
            .and_then(|b| b.try_into().ok())
            .map_or(0, u64::from_le_bytes);
        let mut reply = FrameHeader {
            flags: 0,
            kind: FrameKind::REPLY,
            ..h
        };
        reply.body_len = 0;
        match h.op {
            OP_UPLOAD => {
                chan.recv_bulk_into(sized(&mut buf, h.bulk_len as usize)?)?;
                reply.bulk_len = 0;
                chan.send_frame(&reply, &[], &[])?;
            }
            OP_DOWNLOAD => {
                chan.discard_bulk(h.bulk_len)?;
                reply.bulk_len = asked;
                chan.send_frame(&reply, &[], sized(&mut buf, asked as usize)?)?;
            }
            _ => return Ok(()),
        }
        chan.flush()?;
    }
}
