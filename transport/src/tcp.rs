//! The TCP module: one connection per remote GPU, `TCP_NODELAY`, large socket
//! buffers, and bulk payloads streamed in chunks straight from and into the
//! caller's memory.
//!
//! Small frames cost system calls, not bandwidth, so both directions coalesce
//! them: reads fill a buffer from which many headers and bodies are parsed, and
//! small frames are gathered and written together, just before the channel
//! would block on a read (or when the gathered bytes fill the buffer). Large
//! payloads bypass both buffers.

use std::io::{self, IoSlice, Write};
use std::net::{SocketAddr, TcpStream, ToSocketAddrs};
use std::time::Duration;

use rcud_proto::frame::{FrameHeader, HEADER_LEN};
use socket2::{SockRef, TcpKeepalive};

use crate::channel::{parse_header, Channel, TransportError};
use crate::tls::Link;
use crate::DEFAULT_CHUNK;

/// How long a read polls before it blocks.
const SPIN: Duration = Duration::from_micros(50);

/// Tunables of the TCP module.
#[derive(Debug, Clone)]
pub struct TcpOptions {
    /// Bytes per bulk chunk.
    pub chunk: usize,
    /// Socket send and receive buffer size.
    pub socket_buffer: usize,
    /// How long to wait for a connection to be established.
    pub connect_timeout: Duration,
    /// How long a read may wait for the peer (a server's idle timeout);
    /// `None`: forever.
    pub read_timeout: Option<Duration>,
    /// How long a write may wait for the peer to take bytes (a server's
    /// bound on clients that do not read their replies); `None`: forever.
    pub write_timeout: Option<Duration>,
}

impl Default for TcpOptions {
    fn default() -> Self {
        Self {
            chunk: DEFAULT_CHUNK,
            socket_buffer: 4 << 20,
            connect_timeout: Duration::from_secs(5),
            read_timeout: None,
            write_timeout: None,
        }
    }
}

/// Applies the options every rcud connection runs with: no Nagle delay,
/// `opts.socket_buffer` send and receive buffers, keepalive. Public so that
/// a baseline on a plain socket (`rcud bench --baseline`) runs with the same.
pub fn tune(stream: &TcpStream, opts: &TcpOptions) -> io::Result<()> {
    stream.set_nodelay(true)?;
    let sock = SockRef::from(stream);
    // Buffer sizes are hints; the kernel may clamp them.
    if opts.socket_buffer > 0 {
        let _ = sock.set_send_buffer_size(opts.socket_buffer);
        let _ = sock.set_recv_buffer_size(opts.socket_buffer);
    }
    // A peer that vanishes without closing (power loss, cable, a network
    // that drops everything) is noticed within about 5 s, on the scale of a
    // client's outage budget (3 s), so a session resumes or fails cleanly
    // instead of waiting forever. The probes are answered by the peer's
    // kernel, so a peer busy with a long kernel is never taken for dead.
    let keepalive = TcpKeepalive::new()
        .with_time(Duration::from_secs(2))
        .with_interval(Duration::from_secs(1))
        .with_retries(3);
    let _ = sock.set_tcp_keepalive(&keepalive);
    Ok(())
}

/// A [`Channel`] over a TCP stream, or TLS on one ([`crate::tls`]).
#[derive(Debug)]
pub struct TcpChannel<S: Link = TcpStream> {
    stream: S,
    chunk: usize,
    body: Vec<u8>,
    scratch: Vec<u8>,
    peer: String,
    /// Bytes read from the socket and not consumed yet: `rbuf[rstart..rend]`.
    rbuf: Box<[u8]>,
    rstart: usize,
    rend: usize,
    /// Small frames waiting to be written.
    wbuf: Vec<u8>,
}

/// Size of the read buffer and most bytes gathered before a write.
const COALESCE: usize = 64 << 10;

impl TcpChannel {
    /// Connects to the first address of `addr` that answers.
    pub fn connect(addr: &str, opts: &TcpOptions) -> io::Result<Self> {
        Self::from_stream(connect_stream(addr, opts)?, opts)
    }
}

impl<S: Link> TcpChannel<S> {
    /// Wraps an accepted or connected stream and applies the socket options.
    pub fn from_stream(stream: S, opts: &TcpOptions) -> io::Result<Self> {
        tune(stream.socket(), opts)?;
        stream.socket().set_read_timeout(opts.read_timeout)?;
        stream.socket().set_write_timeout(opts.write_timeout)?;
        let peer = stream
            .socket()
            .peer_addr()
            .map(|a: SocketAddr| a.to_string())
            .unwrap_or_else(|_| "?".into());
        Ok(Self {
            stream,
            chunk: opts.chunk.max(4096),
            body: Vec::with_capacity(256),
            scratch: Vec::new(),
            peer,
            rbuf: vec![0u8; COALESCE].into_boxed_slice(),
            rstart: 0,
            rend: 0,
            wbuf: Vec::with_capacity(COALESCE),
        })
    }

    /// The underlying stream, for the handshake and timeouts.
    pub fn stream(&mut self) -> &mut S {
        &mut self.stream
    }

    /// Fills `dst` from the read buffer and the socket. Gathered writes go
    /// out first: the peer may be waiting for them before it sends anything.
    fn read_exact(&mut self, dst: &mut [u8]) -> Result<(), TransportError> {
        let mut done = 0;
        while done < dst.len() {
            if self.rstart == self.rend {
                self.flush_writes()?;
                let want = dst.len() - done;
                if want >= self.rbuf.len() {
                    // Large payloads go straight to their destination.
                    return self.stream.read_exact(&mut dst[done..]).map_err(map_eof);
                }
                let n = match self.spin_read()? {
                    Some(n) => n,
                    None => loop {
                        match self.stream.read(&mut self.rbuf) {
                            Ok(0) => return Err(TransportError::Closed),
                            Ok(n) => break n,
                            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                            Err(e) => return Err(map_eof(e)),
                        }
                    },
                };
                self.rstart = 0;
                self.rend = n;
            }
            let n = (self.rend - self.rstart).min(dst.len() - done);
            dst[done..done + n].copy_from_slice(&self.rbuf[self.rstart..self.rstart + n]);
            self.rstart += n;
            done += n;
        }
        Ok(())
    }

    /// Polls the socket for a short while before the caller blocks: an
    /// answer that comes within the spin is read without the sleep and
    /// wake-up of a blocking read (tens of microseconds across CPUs of a
    /// virtual machine). Yields between polls, so a peer on the same CPU runs.
    fn spin_read(&mut self) -> Result<Option<usize>, TransportError> {
        if SPIN.is_zero() {
            return Ok(None);
        }
        self.stream.socket().set_nonblocking(true)?;
        let start = std::time::Instant::now();
        let got = loop {
            match self.stream.read(&mut self.rbuf) {
                Ok(0) => break Err(TransportError::Closed),
                Ok(n) => break Ok(Some(n)),
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    if start.elapsed() >= SPIN {
                        break Ok(None);
                    }
                    std::thread::yield_now();
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => break Err(map_eof(e)),
            }
        };
        self.stream.socket().set_nonblocking(false)?;
        got
    }

    /// Writes the gathered small frames.
    fn flush_writes(&mut self) -> Result<(), TransportError> {
        if !self.wbuf.is_empty() {
            let res = self.stream.write_all(&self.wbuf).map_err(map_eof);
            self.wbuf.clear();
            res?;
        }
        Ok(())
    }
}

/// A TCP connection to the first address of `addr` that answers within the
/// connect timeout.
pub fn connect_stream(addr: &str, opts: &TcpOptions) -> io::Result<TcpStream> {
    let mut last_err = None;
    for sa in addr.to_socket_addrs()? {
        match TcpStream::connect_timeout(&sa, opts.connect_timeout) {
            Ok(stream) => return Ok(stream),
            Err(e) => last_err = Some(e),
        }
    }
    Err(last_err
        .unwrap_or_else(|| io::Error::new(io::ErrorKind::NotFound, format!("{addr}: no address"))))
}

/// The end of the stream is the peer closing; a reset is a broken
/// connection (a middlebox, a network that gave up), which a session may
/// ride out.
fn map_eof(e: io::Error) -> TransportError {
    match e.kind() {
        io::ErrorKind::UnexpectedEof => TransportError::Closed,
        _ => TransportError::Io(e),
    }
}

impl<S: Link> Channel for TcpChannel<S> {
    fn send_frame(
        &mut self,
        header: &FrameHeader,
        body: &[u8],
        bulk: &[u8],
    ) -> Result<(), TransportError> {
        debug_assert_eq!(header.body_len as usize, body.len());
        debug_assert!(bulk.len() as u64 <= header.bulk_len);
        let head = header.to_bytes();
        let total = head.len() + body.len() + bulk.len();
        if self.wbuf.len() + total <= COALESCE {
            self.wbuf.extend_from_slice(&head);
            self.wbuf.extend_from_slice(body);
            self.wbuf.extend_from_slice(bulk);
            return Ok(());
        }
        let first = bulk.len().min(self.chunk);
        let gathered = std::mem::take(&mut self.wbuf);
        let res = write_all_vectored(&mut self.stream, &[&gathered, &head, body, &bulk[..first]]);
        self.wbuf = gathered;
        self.wbuf.clear();
        res.map_err(map_eof)?;
        self.send_bulk(&bulk[first..])
    }

    fn send_bulk(&mut self, bulk: &[u8]) -> Result<(), TransportError> {
        if bulk.is_empty() {
            return Ok(());
        }
        if self.wbuf.len() + bulk.len() <= COALESCE {
            self.wbuf.extend_from_slice(bulk);
            return Ok(());
        }
        self.flush_writes()?;
        for chunk in bulk.chunks(self.chunk) {
            self.stream.write_all(chunk).map_err(map_eof)?;
        }
        Ok(())
    }

    fn send_raw(&mut self, frames: &[u8]) -> Result<(), TransportError> {
        if self.wbuf.len() + frames.len() <= COALESCE {
            self.wbuf.extend_from_slice(frames);
            return Ok(());
        }
        self.flush_writes()?;
        self.stream.write_all(frames).map_err(map_eof)
    }

    fn flush(&mut self) -> Result<(), TransportError> {
        self.flush_writes()
    }

    fn recv_header(&mut self) -> Result<FrameHeader, TransportError> {
        let mut raw = [0u8; HEADER_LEN];
        self.read_exact(&mut raw)?;
        parse_header(&raw)
    }

    fn recv_body(&mut self, len: u32) -> Result<&[u8], TransportError> {
        let mut body = std::mem::take(&mut self.body);
        body.resize(len as usize, 0);
        let res = self.read_exact(&mut body);
        self.body = body;
        res?;
        Ok(&self.body)
    }

    fn recv_bulk_into(&mut self, dst: &mut [u8]) -> Result<(), TransportError> {
        let chunk = self.chunk;
        for piece in dst.chunks_mut(chunk) {
            self.read_exact(piece)?;
        }
        Ok(())
    }

    fn discard_bulk(&mut self, mut len: u64) -> Result<(), TransportError> {
        let mut scratch = std::mem::take(&mut self.scratch);
        scratch.resize(self.chunk.min(len as usize).max(1), 0);
        let mut res = Ok(());
        while len > 0 {
            let n = scratch.len().min(len as usize);
            if let Err(e) = self.read_exact(&mut scratch[..n]) {
                res = Err(e);
                break;
            }
            len -= n as u64;
        }
        self.scratch = scratch;
        res
    }

    fn peer(&self) -> String {
        self.peer.clone()
    }
}

/// Writes every byte of `parts` with as few system calls as the kernel allows.
fn write_all_vectored<W: Write>(stream: &mut W, parts: &[&[u8]; 4]) -> io::Result<()> {
    let mut slices: [IoSlice<'_>; 4] = [
        IoSlice::new(&[]),
        IoSlice::new(&[]),
        IoSlice::new(&[]),
        IoSlice::new(&[]),
    ];
    let mut count = 0;
    for p in parts.iter().filter(|p| !p.is_empty()) {
        slices[count] = IoSlice::new(p);
        count += 1;
    }
    let mut bufs = &mut slices[..count];
    while !bufs.is_empty() {
        match stream.write_vectored(bufs) {
            Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
            Ok(n) => IoSlice::advance_slices(&mut bufs, n),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use rcud_proto::FrameKind;
    use std::net::TcpListener;

    fn pair(chunk: usize) -> (TcpChannel, TcpChannel) {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap().to_string();
        let opts = TcpOptions {
            chunk,
            ..TcpOptions::default()
        };
        let client = TcpChannel::connect(&addr, &opts).unwrap();
        let (stream, _) = listener.accept().unwrap();
        (client, TcpChannel::from_stream(stream, &opts).unwrap())
    }

    #[test]
    fn frames_with_bulk_arrive_intact_across_chunks() {
        let (mut a, mut b) = pair(4096);
        let bulk: Vec<u8> = (0..(3 * 4096 + 17)).map(|i| (i * 7) as u8).collect();
        let body = [1u8, 2, 3];
        let header = FrameHeader {
            flags: 0,
            kind: FrameKind::REQUEST,
            op: 0x12,
            body_len: 3,
            id: 5,
            bulk_len: bulk.len() as u64,
        };
        let sent = bulk.clone();
        let t = std::thread::spawn(move || {
            a.send_frame(&header, &body, &sent)?;
            a.flush().map(|_| a)
        });
        let got = b.recv_header().unwrap();
        assert_eq!(got, header);
        assert_eq!(b.recv_body(got.body_len).unwrap(), &body);
        let mut dst = vec![0u8; bulk.len() - 100];
        b.recv_bulk_into(&mut dst).unwrap();
        b.discard_bulk(100).unwrap();
        assert_eq!(&dst[..], &bulk[..bulk.len() - 100]);
        t.join().unwrap().unwrap();
    }

    #[test]
    fn closed_peer_is_reported() {
        let (a, mut b) = pair(4096);
        drop(a);
        assert!(matches!(b.recv_header(), Err(TransportError::Closed)));
    }
}
