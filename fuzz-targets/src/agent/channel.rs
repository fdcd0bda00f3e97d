//! The in-memory channel between the fuzzed client and a real agent: it
//! hands the agent one request frame at a time, built by the driver
//! ([`Shared`]) only when the agent asks for it, and gives every reply to
//! the driver to check.

use std::sync::{Arc, Mutex, MutexGuard};

use rcud_proto::frame::{FrameHeader, HEADER_LEN};
use rcud_transport::{Channel, TransportError};

pub(crate) use super::model::Shared;

/// The payload of the request being served.
#[derive(Debug, Clone)]
pub(crate) enum Bulk {
    /// `len` bytes of [`pattern`] from `seed`.
    Pattern { seed: u8, len: u64 },
    /// These bytes.
    Bytes(Vec<u8>),
}

impl Bulk {
    pub(crate) fn none() -> Bulk {
        Bulk::Bytes(Vec::new())
    }

    pub(crate) fn len(&self) -> u64 {
        match self {
            Bulk::Pattern { len, .. } => *len,
            Bulk::Bytes(b) => b.len() as u64,
        }
    }
}

/// Byte `i` of the payload that seed `seed` makes.
pub(crate) fn pattern(seed: u8, i: u64) -> u8 {
    (i as u8).wrapping_mul(31).wrapping_add(seed) ^ ((i >> 8) as u8)
}

/// A request frame: its header as raw bytes (decoded as a transport would),
/// its body and its payload.
#[derive(Debug, Clone)]
pub(crate) struct Frame {
    pub(crate) header: [u8; HEADER_LEN],
    pub(crate) body: Vec<u8>,
    pub(crate) bulk: Bulk,
}

/// The agent's end of the connection.
pub(crate) struct MemChannel {
    shared: Arc<Mutex<Shared>>,
    body: Vec<u8>,
    bulk: Bulk,
    /// Payload bytes the agent has taken (read or discarded).
    taken: u64,
}

impl MemChannel {
    pub(crate) fn new(shared: Arc<Mutex<Shared>>) -> Self {
        Self {
            shared,
            body: Vec::new(),
            bulk: Bulk::none(),
            taken: 0,
        }
    }

    fn shared(&self) -> MutexGuard<'_, Shared> {
        self.shared.lock().expect("driver state")
    }

    fn take(&mut self, n: u64) {
        let end = self.taken.checked_add(n).expect("payload offset overflows");
        assert!(
            end <= self.bulk.len(),
            "the agent read {end} payload bytes of a {}-byte payload",
            self.bulk.len()
        );
        self.taken = end;
    }
}

impl Channel for MemChannel {
    fn send_frame(
        &mut self,
        header: &FrameHeader,
        body: &[u8],
        bulk: &[u8],
    ) -> Result<(), TransportError> {
        self.shared().reply_started(header, body, bulk);
        Ok(())
    }

    fn send_bulk(&mut self, bulk: &[u8]) -> Result<(), TransportError> {
        self.shared().reply_continued(bulk);
        Ok(())
    }

    fn send_raw(&mut self, frames: &[u8]) -> Result<(), TransportError> {
        panic!("an agent sent {} bytes of raw frames", frames.len());
    }

    fn flush(&mut self) -> Result<(), TransportError> {
        Ok(())
    }

    fn recv_header(&mut self) -> Result<FrameHeader, TransportError> {
        let consumed = self.taken;
        let frame = self.shared().next_frame(consumed);
        let Some(frame) = frame else {
            return Err(TransportError::Closed);
        };
        self.body = frame.body;
        self.bulk = frame.bulk;
        self.taken = 0;
        // As a transport does: a header that does not decode ends the
        // connection.
        Ok(FrameHeader::from_bytes(&frame.header)?)
    }

    fn recv_body(&mut self, len: u32) -> Result<&[u8], TransportError> {
        // A frame whose body is shorter than its header says: the peer
        // closed in the middle of it.
        if len as usize > self.body.len() {
            return Err(TransportError::Closed);
        }
        self.body.truncate(len as usize);
        Ok(&self.body)
    }

    fn recv_bulk_into(&mut self, dst: &mut [u8]) -> Result<(), TransportError> {
        let start = self.taken;
        self.take(dst.len() as u64);
        match &self.bulk {
            Bulk::Pattern { seed, .. } => {
                for (i, b) in dst.iter_mut().enumerate() {
                    *b = pattern(*seed, start + i as u64);
                }
            }
            Bulk::Bytes(bytes) => {
                let s = start as usize;
                dst.copy_from_slice(&bytes[s..s + dst.len()]);
            }
        }
        Ok(())
    }

    fn discard_bulk(&mut self, len: u64) -> Result<(), TransportError> {
        self.take(len);
        Ok(())
    }

    fn peer(&self) -> String {
        "fuzz".into()
    }
}
