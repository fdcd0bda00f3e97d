//! Framing: every message is a fixed 24-byte header, a body of `body_len` bytes
//! and a bulk payload of `bulk_len` bytes.
//!
//! The body is the encoded request or reply and is small; the bulk payload is
//! raw memory contents and is never buffered whole by the transport. Limits are
//! enforced when the header is decoded, before anything is allocated.

use crate::codec::{DecodeError, Reader, Wire};

/// Size of an encoded [`FrameHeader`].
pub const HEADER_LEN: usize = 24;
/// Largest body accepted: requests and replies are small.
pub const MAX_BODY: u32 = 1 << 20;
/// Largest bulk payload accepted in one frame (host memory sizes, not buffers).
pub const MAX_BULK: u64 = 1 << 40;

const MAGIC: u16 = 0x5243; // "RC"

/// What a frame carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FrameKind(pub u8);

impl FrameKind {
    /// A request from the client; `op` names the operation.
    pub const REQUEST: Self = Self(1);
    /// The reply to the request with the same id.
    pub const REPLY: Self = Self(2);
}

/// Header flag of a request: the client has received every reply to the
/// requests before this one, so the server may forget them (session
/// resumption keeps the rest).
pub const FLAG_ACK: u8 = 1;

/// Whether request id `a` comes after `b`: ids wrap, so they compare as
/// serial numbers (RFC 1982), never more than 2^31 apart.
pub fn id_after(a: u32, b: u32) -> bool {
    (a.wrapping_sub(b) as i32) > 0
}

/// The fixed header in front of every frame after the handshake.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FrameHeader {
    /// Flags ([`FLAG_ACK`]); zero on replies.
    pub flags: u8,
    /// Request or reply.
    pub kind: FrameKind,
    /// Operation id (see [`crate::ops::OpId`]).
    pub op: u16,
    /// Length of the encoded body.
    pub body_len: u32,
    /// Request id, one more for each request of a session (the sequence
    /// number session resumption counts by); a reply repeats the id of its
    /// request. It wraps: see [`id_after`].
    pub id: u32,
    /// Length of the raw payload that follows the body.
    pub bulk_len: u64,
}

impl FrameHeader {
    /// Encodes the header into its fixed 24 bytes:
    /// magic u16, kind u8, flags u8, op u16, reserved u16, body_len u32, id u32,
    /// bulk_len u64.
    pub fn to_bytes(&self) -> [u8; HEADER_LEN] {
        // Built in place: this runs for every request and reply.
        let mut out = [0u8; HEADER_LEN];
        out[0..2].copy_from_slice(&MAGIC.to_le_bytes());
        out[2] = self.kind.0;
        out[3] = self.flags;
        out[4..6].copy_from_slice(&self.op.to_le_bytes());
        out[8..12].copy_from_slice(&self.body_len.to_le_bytes());
        out[12..16].copy_from_slice(&self.id.to_le_bytes());
        out[16..24].copy_from_slice(&self.bulk_len.to_le_bytes());
        out
    }

    /// Decodes and validates a header.
    pub fn from_bytes(bytes: &[u8; HEADER_LEN]) -> Result<Self, DecodeError> {
        let mut r = Reader::new(bytes);
        if u16::decode(&mut r)? != MAGIC {
            return Err(DecodeError::Invalid("frame magic"));
        }
        let kind = FrameKind(u8::decode(&mut r)?);
        if kind != FrameKind::REQUEST && kind != FrameKind::REPLY {
            return Err(DecodeError::Invalid("frame kind"));
        }
        let flags = u8::decode(&mut r)?;
        let op = u16::decode(&mut r)?;
        let _reserved = u16::decode(&mut r)?;
        let body_len = u32::decode(&mut r)?;
        let id = u32::decode(&mut r)?;
        let bulk_len = u64::decode(&mut r)?;
        r.finish()?;
        if body_len > MAX_BODY {
            return Err(DecodeError::TooLong {
                what: "frame body",
                len: body_len.into(),
                limit: MAX_BODY.into(),
            });
        }
        if bulk_len > MAX_BULK {
            return Err(DecodeError::TooLong {
                what: "bulk payload",
                len: bulk_len,
                limit: MAX_BULK,
            });
        }
        Ok(Self {
            flags,
            kind,
            op,
            body_len,
            id,
            bulk_len,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_round_trip() {
        let h = FrameHeader {
            flags: 0,
            kind: FrameKind::REQUEST,
            op: 0x0012,
            body_len: 17,
            id: 99,
            bulk_len: 64 << 20,
        };
        assert_eq!(FrameHeader::from_bytes(&h.to_bytes()), Ok(h));
    }

    #[test]
    fn garbage_headers_are_rejected() {
        assert!(FrameHeader::from_bytes(&[0xAB; HEADER_LEN]).is_err());
        let mut h = FrameHeader {
            flags: 0,
            kind: FrameKind::REPLY,
            op: 1,
            body_len: MAX_BODY + 1,
            id: 0,
            bulk_len: 0,
        }
        .to_bytes();
        assert!(matches!(
            FrameHeader::from_bytes(&h),
            Err(DecodeError::TooLong { .. })
        ));
        h[2] = 7;
        assert_eq!(
            FrameHeader::from_bytes(&h),
            Err(DecodeError::Invalid("frame kind"))
        );
    }
}
