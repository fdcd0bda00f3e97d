//! Decompression of entry payloads: LZ4 block format and Zstandard frames.

use std::io::Read;

use crate::container::EntryHeader;
use crate::error::FatbinError;
use crate::flags;
use crate::le::usize_sat;

/// How an entry's payload was stored in the fatbin.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Compression {
    /// Stored as is.
    #[default]
    None,
    /// LZ4 block format, no frame (flag `0x2000`; `nvcc --compress-mode speed`).
    Lz4,
    /// A Zstandard frame (flag `0x8000`; `nvcc --compress-mode default|size`).
    Zstd,
}

/// Default limit on the bytes that decompressing the entries of one
/// [`crate::FatBinary::parse`] may produce (4 GiB): a bound on what a hostile
/// fatbin can make the parser allocate. See [`crate::FatBinary::parse_with_limit`].
pub const MAX_DECOMPRESSED: u64 = 1 << 32;

/// LZ4 cannot expand a block by more than about 255:1.
const LZ4_MAX_RATIO: u64 = 255;

/// What decompression may still produce in this parse.
#[derive(Debug)]
pub(crate) struct Budget {
    pub(crate) left: u64,
    pub(crate) limit: u64,
}

impl Budget {
    pub(crate) fn new(limit: u64) -> Self {
        Budget { left: limit, limit }
    }

    fn exceeded(&self, offset: usize) -> FatbinError {
        FatbinError::TooLarge {
            offset,
            limit: self.limit,
        }
    }
}

/// Returns the payload of the entry whose header is `h` (at `offset`) and whose
/// stored bytes are `stored`, decompressed when its flags say so.
pub(crate) fn payload(
    stored: &[u8],
    h: &EntryHeader,
    offset: usize,
    budget: &mut Budget,
) -> Result<(Vec<u8>, Compression), FatbinError> {
    let lz4 = h.flags & flags::LZ4 != 0;
    let zstd = h.flags & flags::ZSTD != 0;
    let compression = match (lz4, zstd) {
        (false, false) => return Ok((stored.to_vec(), Compression::None)),
        (true, false) => Compression::Lz4,
        (false, true) => Compression::Zstd,
        (true, true) => {
            return Err(FatbinError::InvalidField {
                what: "fatbin entry header",
                field: "flags",
                offset,
                value: h.flags,
                reason: "both LZ4 (0x2000) and Zstandard (0x8000) compression set",
            })
        }
    };
    // The stored payload is padded; the compressed stream is its first
    // `compressed_size` bytes (0: all of it).
    let input = match usize_sat(u64::from(h.compressed_size)) {
        0 => stored,
        n if n <= stored.len() => &stored[..n],
        _ => {
            return Err(FatbinError::InvalidField {
                what: "fatbin entry header",
                field: "compressed_size",
                offset,
                value: u64::from(h.compressed_size),
                reason: "larger than the stored payload",
            })
        }
    };
    if h.decompressed_size > budget.left {
        return Err(budget.exceeded(offset));
    }
    let out = match compression {
        Compression::Lz4 => decode_lz4(input, h.decompressed_size, offset)?,
        Compression::Zstd => decode_zstd(input, h.decompressed_size, offset, budget)?,
        Compression::None => unreachable!("handled above"),
    };
    budget.left -= out.len() as u64;
    Ok((out, compression))
}

fn decode_lz4(input: &[u8], expected: u64, offset: usize) -> Result<Vec<u8>, FatbinError> {
    const ALGORITHM: &str = "LZ4";
    let bound = (input.len() as u64)
        .saturating_mul(LZ4_MAX_RATIO)
        .saturating_add(64);
    if expected == 0 || expected > bound {
        return Err(FatbinError::InvalidField {
            what: "fatbin entry header",
            field: "decompressed_size",
            offset,
            value: expected,
            reason: if expected == 0 {
                "an LZ4 block needs its decompressed size, and the header gives 0"
            } else {
                "more than the LZ4 payload can expand to"
            },
        });
    }
    let mut out = vec![0u8; usize_sat(expected)];
    let n =
        lz4_flex::block::decompress_into(input, &mut out).map_err(|e| FatbinError::Decompress {
            algorithm: ALGORITHM,
            offset,
            detail: e.to_string(),
        })?;
    if n as u64 != expected {
        return Err(FatbinError::DecompressedSize {
            algorithm: ALGORITHM,
            offset,
            expected,
            actual: n as u64,
        });
    }
    Ok(out)
}

fn decode_zstd(
    input: &[u8],
    expected: u64,
    offset: usize,
    budget: &Budget,
) -> Result<Vec<u8>, FatbinError> {
    const ALGORITHM: &str = "Zstandard";
    let err = |detail: String| FatbinError::Decompress {
        algorithm: ALGORITHM,
        offset,
        detail,
    };
    let decoder = ruzstd::decoding::StreamingDecoder::new(input).map_err(|e| err(e.to_string()))?;
    // 0 = size not recorded in the header: take what the frame gives, within budget.
    let limit = if expected == 0 { budget.left } else { expected };
    // Grow with the data actually produced rather than trusting the header.
    let mut out = Vec::with_capacity(usize_sat(limit.min(input.len() as u64 * 16)));
    decoder
        .take(limit.saturating_add(1))
        .read_to_end(&mut out)
        .map_err(|e| err(e.to_string()))?;
    let actual = out.len() as u64;
    if expected == 0 && actual > limit {
        return Err(budget.exceeded(offset));
    }
    if expected != 0 && actual != expected {
        return Err(FatbinError::DecompressedSize {
            algorithm: ALGORITHM,
            offset,
            expected,
            actual,
        });
    }
    Ok(out)
}
