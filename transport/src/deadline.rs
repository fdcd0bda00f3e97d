//! One deadline for a whole exchange on a socket.

use std::io::{self, Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

/// A stream whose every read and write must end before one deadline: each
/// operation gets the time left as its socket timeout.
#[derive(Debug)]
pub struct Deadline<'a> {
    stream: &'a mut TcpStream,
    deadline: Instant,
}

impl<'a> Deadline<'a> {
    /// `budget` from now.
    pub fn new(stream: &'a mut TcpStream, budget: Duration) -> Self {
        Self::until(stream, Instant::now() + budget)
    }

    /// Until `deadline`.
    pub fn until(stream: &'a mut TcpStream, deadline: Instant) -> Self {
        Self { stream, deadline }
    }

    fn left(&self) -> io::Result<Duration> {
        let left = self.deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(io::Error::new(
                io::ErrorKind::TimedOut,
                "the handshake took too long",
            ));
        }
        Ok(left)
    }
}

impl Read for Deadline<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let left = self.left()?;
        self.stream.set_read_timeout(Some(left))?;
        self.stream.read(buf)
    }
}

impl Write for Deadline<'_> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let left = self.left()?;
        self.stream.set_write_timeout(Some(left))?;
        self.stream.write(buf)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.stream.flush()
    }
}
