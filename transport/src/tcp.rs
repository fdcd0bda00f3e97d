//! The TCP module: one connection per remote GPU, `TCP_NODELAY`, large socket
//! buffers, vectored writes of header, body and the first bulk chunk, and bulk
//! payloads streamed in chunks straight from and into the caller's memory.

use std::io::{self, IoSlice, Read, Write};
use std::net::{SocketAddr, TcpStream, ToSocketAddrs};
use std::time::Duration;

use rcud_proto::frame::{FrameHeader, HEADER_LEN};
use socket2::{SockRef, TcpKeepalive};

use crate::channel::{parse_header, Channel, TransportError};
use crate::DEFAULT_CHUNK;

/// Tunables of the TCP module.
#[derive(Debug, Clone)]
pub struct TcpOptions {
    /// Bytes per bulk chunk.
    pub chunk: usize,
    /// Socket send and receive buffer size.
    pub socket_buffer: usize,
    /// How long to wait for a connection to be established.
    pub connect_timeout: Duration,
}

impl Default for TcpOptions {
    fn default() -> Self {
        Self {
            chunk: DEFAULT_CHUNK,
            socket_buffer: 4 << 20,
            connect_timeout: Duration::from_secs(5),
        }
    }
}

/// A [`Channel`] over a TCP stream.
#[derive(Debug)]
pub struct TcpChannel {
    stream: TcpStream,
    chunk: usize,
    body: Vec<u8>,
    scratch: Vec<u8>,
    peer: String,
}

impl TcpChannel {
    /// Connects to the first address of `addr` that answers.
    pub fn connect(addr: &str, opts: &TcpOptions) -> io::Result<Self> {
        let mut last_err = None;
        for sa in addr.to_socket_addrs()? {
            match TcpStream::connect_timeout(&sa, opts.connect_timeout) {
                Ok(stream) => return Self::from_stream(stream, opts),
                Err(e) => last_err = Some(e),
            }
        }
        Err(last_err.unwrap_or_else(|| {
            io::Error::new(io::ErrorKind::NotFound, format!("{addr}: no address"))
        }))
    }

    /// Wraps an accepted or connected stream and applies the socket options.
    pub fn from_stream(stream: TcpStream, opts: &TcpOptions) -> io::Result<Self> {
        stream.set_nodelay(true)?;
        let sock = SockRef::from(&stream);
        // Buffer sizes are hints; the kernel may clamp them.
        let _ = sock.set_send_buffer_size(opts.socket_buffer);
        let _ = sock.set_recv_buffer_size(opts.socket_buffer);
        // A peer that vanishes without closing (power loss, cable) is detected
        // within a minute instead of hanging the other side forever.
        let keepalive = TcpKeepalive::new()
            .with_time(Duration::from_secs(20))
            .with_interval(Duration::from_secs(5))
            .with_retries(6);
        let _ = sock.set_tcp_keepalive(&keepalive);
        let peer = stream
            .peer_addr()
            .map(|a: SocketAddr| a.to_string())
            .unwrap_or_else(|_| "?".into());
        Ok(Self {
            stream,
            chunk: opts.chunk.max(4096),
            body: Vec::with_capacity(256),
            scratch: Vec::new(),
            peer,
        })
    }

    /// The underlying stream, for the handshake and timeouts.
    pub fn stream(&mut self) -> &mut TcpStream {
        &mut self.stream
    }

    fn read_exact(&mut self, buf: &mut [u8]) -> Result<(), TransportError> {
        self.stream.read_exact(buf).map_err(map_eof)
    }
}

fn map_eof(e: io::Error) -> TransportError {
    match e.kind() {
        io::ErrorKind::UnexpectedEof
        | io::ErrorKind::ConnectionReset
        | io::ErrorKind::ConnectionAborted
        | io::ErrorKind::BrokenPipe => TransportError::Closed,
        _ => TransportError::Io(e),
    }
}

impl Channel for TcpChannel {
    fn send_frame(
        &mut self,
        header: &FrameHeader,
        body: &[u8],
        bulk: &[u8],
    ) -> Result<(), TransportError> {
        debug_assert_eq!(header.body_len as usize, body.len());
        debug_assert!(bulk.len() as u64 <= header.bulk_len);
        let head = header.to_bytes();
        let first = bulk.len().min(self.chunk);
        write_all_vectored(&mut self.stream, &[&head, body, &bulk[..first]]).map_err(map_eof)?;
        self.send_bulk(&bulk[first..])
    }

    fn send_bulk(&mut self, bulk: &[u8]) -> Result<(), TransportError> {
        for chunk in bulk.chunks(self.chunk) {
            self.stream.write_all(chunk).map_err(map_eof)?;
        }
        Ok(())
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
fn write_all_vectored(stream: &mut TcpStream, parts: &[&[u8]]) -> io::Result<()> {
    let mut slices: [IoSlice<'_>; 3] = [IoSlice::new(&[]), IoSlice::new(&[]), IoSlice::new(&[])];
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
            kind: FrameKind::REQUEST,
            op: 0x12,
            body_len: 3,
            id: 5,
            bulk_len: bulk.len() as u64,
        };
        let sent = bulk.clone();
        let t = std::thread::spawn(move || a.send_frame(&header, &body, &sent).map(|_| a));
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
