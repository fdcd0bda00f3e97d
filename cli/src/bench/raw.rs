//! The raw transport baseline: the same bytes over a plain TCP socket pair on
//! the same path, with no CUDA semantics, measured in the same run.

use std::io::{self, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::thread::JoinHandle;

/// A loopback peer that answers two kinds of request, each a 9-byte header
/// (`b'U'`/`b'D'` and a little-endian length): `U` reads that many bytes and
/// answers one byte, `D` sends that many bytes.
pub(crate) struct RawPeer {
    stream: TcpStream,
    scratch: Vec<u8>,
    _thread: JoinHandle<()>,
}

impl RawPeer {
    pub(crate) fn start() -> io::Result<Self> {
        let listener = TcpListener::bind("127.0.0.1:0")?;
        let addr = listener.local_addr()?;
        let thread = std::thread::spawn(move || {
            if let Ok((conn, _)) = listener.accept() {
                let _ = serve(conn);
            }
        });
        let stream = TcpStream::connect(addr)?;
        stream.set_nodelay(true)?;
        Ok(Self {
            stream,
            scratch: Vec::new(),
            _thread: thread,
        })
    }

    /// Sends `bytes` and waits for the one-byte answer (a host-to-device copy's shape).
    pub(crate) fn upload(&mut self, bytes: &[u8]) -> io::Result<()> {
        self.header(b'U', bytes.len())?;
        self.stream.write_all(bytes)?;
        let mut ack = [0u8; 1];
        self.stream.read_exact(&mut ack)
    }

    /// Asks for `into.len()` bytes and reads them (a device-to-host copy's shape).
    pub(crate) fn download(&mut self, into: &mut [u8]) -> io::Result<()> {
        self.header(b'D', into.len())?;
        self.stream.read_exact(into)
    }

    fn header(&mut self, kind: u8, len: usize) -> io::Result<()> {
        self.scratch.clear();
        self.scratch.push(kind);
        self.scratch.extend_from_slice(&(len as u64).to_le_bytes());
        self.stream.write_all(&self.scratch)
    }
}

fn serve(mut conn: TcpStream) -> io::Result<()> {
    conn.set_nodelay(true)?;
    let mut buf = vec![0u8; 1 << 20];
    let mut head = [0u8; 9];
    loop {
        conn.read_exact(&mut head)?;
        let mut len = u64::from_le_bytes(head[1..].try_into().unwrap_or([0; 8])) as usize;
        match head[0] {
            b'U' => {
                while len > 0 {
                    let n = len.min(buf.len());
                    conn.read_exact(&mut buf[..n])?;
                    len -= n;
                }
                conn.write_all(&[1])?;
            }
            _ => {
                while len > 0 {
                    let n = len.min(buf.len());
                    conn.write_all(&buf[..n])?;
                    len -= n;
                }
            }
        }
    }
}
