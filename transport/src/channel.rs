//! The transport-independent channel interface.

use rcud_proto::frame::{FrameHeader, HEADER_LEN};
use rcud_proto::DecodeError;
use thiserror::Error;

/// Why a channel operation failed. Any error leaves the channel unusable.
#[derive(Debug, Error)]
pub enum TransportError {
    /// The peer closed the connection.
    #[error("connection closed by peer")]
    Closed,
    /// An I/O error from the operating system.
    #[error("I/O error: {0}")]
    Io(#[from] std::io::Error),
    /// The peer sent bytes that are not a valid frame.
    #[error("malformed frame: {0}")]
    Malformed(#[from] DecodeError),
}

/// A bidirectional, ordered, reliable frame channel.
///
/// A frame is written with one [`Channel::send_frame`] call (and
/// [`Channel::send_bulk`] for the rest of its payload); it is on its way once
/// the channel next receives or is flushed. A frame is read with
/// [`Channel::recv_header`], then [`Channel::recv_body`], then exactly
/// `bulk_len` bytes through [`Channel::recv_bulk_into`] or
/// [`Channel::discard_bulk`] (in any number of calls).
pub trait Channel: Send {
    /// Sends a frame header, its body and the first `bulk.len()` bytes of its
    /// payload; `header.body_len` must equal `body.len()`. When `bulk` is shorter
    /// than `header.bulk_len`, the rest follows through [`Channel::send_bulk`].
    fn send_frame(
        &mut self,
        header: &FrameHeader,
        body: &[u8],
        bulk: &[u8],
    ) -> Result<(), TransportError>;

    /// Sends the next piece of the payload of the frame being sent.
    fn send_bulk(&mut self, bulk: &[u8]) -> Result<(), TransportError>;

    /// Sends frames already encoded back to back (a client's batch of queued
    /// operations), as if each had been sent with [`Channel::send_frame`].
    fn send_raw(&mut self, frames: &[u8]) -> Result<(), TransportError>;

    /// Pushes out frames the channel may still hold: small frames can be
    /// gathered and are otherwise sent when the channel next waits to receive.
    fn flush(&mut self) -> Result<(), TransportError>;

    /// Reads and validates the next frame header.
    fn recv_header(&mut self) -> Result<FrameHeader, TransportError>;

    /// Reads a body of `len` bytes into a buffer owned by the channel.
    fn recv_body(&mut self, len: u32) -> Result<&[u8], TransportError>;

    /// Reads the next `dst.len()` bytes of the current bulk payload into `dst`.
    fn recv_bulk_into(&mut self, dst: &mut [u8]) -> Result<(), TransportError>;

    /// Reads and drops the next `len` bytes of the current bulk payload.
    fn discard_bulk(&mut self, len: u64) -> Result<(), TransportError>;

    /// A short description of the peer, for logs.
    fn peer(&self) -> String;

    /// After [`TransportError::Closed`]: whether the peer ended the
    /// connection itself (closed it, or its process ended) rather than the
    /// link breaking under it. A server ends a session whose client left
    /// and waits for one whose link broke. TCP tells them apart by FIN and
    /// reset, the RDMA modules by their queue pairs.
    fn peer_left(&self) -> bool {
        true
    }
}

/// Decodes a header from raw bytes read off a channel.
pub(crate) fn parse_header(raw: &[u8; HEADER_LEN]) -> Result<FrameHeader, TransportError> {
    Ok(FrameHeader::from_bytes(raw)?)
}
