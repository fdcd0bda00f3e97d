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

/// Inflated bytes per input byte a parse may produce beyond
/// [`MIN_INFLATE_CAP`] (see [`inflate_cap`]).
///
/// PTX and cubins compress about 4 to 15 to 1; tens of megabytes of PTX (CuPy's
/// and NVIDIA's libraries) stay far below 64 to 1. What compresses better is
/// initialised device data (thousands to one: `__device__ char buf[1 << 22] =
/// {1};` makes a 4 MiB cubin of a 1.5 KB fatbin), which [`MIN_INFLATE_CAP`]
/// leaves room for.
pub const INFLATE_RATIO: u64 = 64;

/// Inflated bytes any parse may produce, however small its input (64 MiB).
pub const MIN_INFLATE_CAP: u64 = 64 << 20;

/// Most bytes that decompressing the entries of `input_len` bytes of fatbin
/// may produce: `max(MIN_INFLATE_CAP, INFLATE_RATIO × input_len)`, so that a
/// few kilobytes of request cannot become a gigabyte (a compression bomb).
/// Every parse applies it, besides its own limit, unless
/// [`DecompressLimits::max_ratio`] says otherwise.
pub fn inflate_cap(input_len: usize) -> u64 {
    inflate_cap_with(input_len, INFLATE_RATIO)
}

fn inflate_cap_with(input_len: usize, ratio: u64) -> u64 {
    MIN_INFLATE_CAP.max(ratio.saturating_mul(input_len as u64))
}

/// Bounds on what decompressing the entries of one fatbin may produce (see
/// [`crate::FatBinary::parse_with_limits`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DecompressLimits {
    /// Most bytes in all.
    pub max_total: u64,
    /// Most inflated bytes per input byte above [`MIN_INFLATE_CAP`]; `None`
    /// for no bound on the ratio (trusted input with initialised device data
    /// of more than 64 MiB that compresses better than [`INFLATE_RATIO`]).
    pub max_ratio: Option<u64>,
}

impl Default for DecompressLimits {
    fn default() -> Self {
        DecompressLimits {
            max_total: MAX_DECOMPRESSED,
            max_ratio: Some(INFLATE_RATIO),
        }
    }
}

impl DecompressLimits {
    /// The bytes decompression may produce for `input_len` bytes of input.
    pub fn limit_for(&self, input_len: usize) -> u64 {
        match self.max_ratio {
            Some(ratio) => self.max_total.min(inflate_cap_with(input_len, ratio)),
            None => self.max_total,
        }
    }
}

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
    // 0 = size not recorded in the header: take what the frame gives, within budget.
    let limit = if expected == 0 { budget.left } else { expected };
    // The decoder reserves the frame's window up front (up to 100 MiB): a
    // window far larger than the output may be is a lie, refused first.
    if let Some(window) = zstd_window(input) {
        let most = limit.saturating_mul(2).max(ZSTD_MIN_WINDOW);
        if window > most {
            return Err(err(format!(
                "frame window of {window} bytes for at most {limit} bytes of output"
            )));
        }
    }
    let decoder = ruzstd::decoding::StreamingDecoder::new(input).map_err(|e| err(e.to_string()))?;
    // Grow with the data actually produced rather than trusting the header,
    // and never past one byte more than the limit (which tells a payload
    // that goes on).
    let initial = limit.min(input.len() as u64 * 16);
    let out =
        read_bounded(decoder, initial, limit.saturating_add(1)).map_err(|e| err(e.to_string()))?;
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

/// Everything `reader` gives, up to `cap` bytes: the buffer starts at
/// `initial` bytes and doubles, but never beyond `cap`, so what a hostile
/// stream makes this allocate is bounded by `cap`, not twice it. Reads ask
/// for at most 1 MiB, as a decoder buffers what one read asks for.
fn read_bounded(mut reader: impl Read, initial: u64, cap: u64) -> std::io::Result<Vec<u8>> {
    const MIN_CHUNK: usize = 64 << 10;
    const MAX_READ: usize = 1 << 20;
    let cap = usize_sat(cap);
    let mut out = Vec::new();
    out.try_reserve_exact(
        usize_sat(initial)
            .clamp(MIN_CHUNK, cap.max(MIN_CHUNK))
            .min(cap),
    )
    .map_err(std::io::Error::other)?;
    let mut len = 0;
    while len < cap {
        if len == out.len() {
            let grow = out.len().max(MIN_CHUNK).min(cap - len);
            out.try_reserve_exact(grow).map_err(std::io::Error::other)?;
            out.resize(len + grow, 0);
        }
        let end = out.len().min(len + MAX_READ);
        match reader.read(&mut out[len..end]) {
            Ok(0) => break,
            Ok(n) => len += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    out.truncate(len);
    Ok(out)
}

/// Window that a frame's header asks for: at least this much is accepted
/// whatever the output's size (encoders pick windows of 2^10 and up).
const ZSTD_MIN_WINDOW: u64 = 1 << 20;

/// The window size (bytes) that the Zstandard frame at the start of `frame`
/// declares (RFC 8878, 3.1.1.1), or `None` when it is no Zstandard frame or
/// its header is cut short (the decoder then reports the error).
fn zstd_window(frame: &[u8]) -> Option<u64> {
    if frame.get(..4)? != [0x28, 0xb5, 0x2f, 0xfd] {
        return None;
    }
    let descriptor = *frame.get(4)?;
    let single_segment = descriptor & 0x20 != 0;
    if !single_segment {
        // Window descriptor: exponent and mantissa.
        let wd = *frame.get(5)?;
        let base = 1u64 << (10 + (wd >> 3));
        return Some(base + base / 8 * u64::from(wd & 7));
    }
    // Single segment: the window is the content size, after the dictionary id.
    let did_len = [0usize, 1, 2, 4][usize::from(descriptor & 3)];
    let fcs_len = [1usize, 2, 4, 8][usize::from(descriptor >> 6)];
    let at = 5 + did_len;
    let field = frame.get(at..at + fcs_len)?;
    let mut le = [0u8; 8];
    le[..fcs_len].copy_from_slice(field);
    let fcs = u64::from_le_bytes(le);
    // A 2-byte field counts from 256.
    Some(if fcs_len == 2 { fcs + 256 } else { fcs })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn zstd_windows() {
        let magic = [0x28, 0xb5, 0x2f, 0xfd];
        let frame = |rest: &[u8]| [&magic[..], rest].concat();
        // Window descriptor 7 << 3: 2^17.
        assert_eq!(zstd_window(&frame(&[0x00, 7 << 3])), Some(1 << 17));
        // Exponent 20, mantissa 4: 2^30 * 1.5.
        assert_eq!(zstd_window(&frame(&[0x00, 20 << 3 | 4])), Some(3 << 29));
        // Single segment, 1-byte content size.
        assert_eq!(zstd_window(&frame(&[0x20, 200])), Some(200));
        // Single segment, 2-byte content size (+256), 1-byte dictionary id.
        assert_eq!(zstd_window(&frame(&[0x61, 9, 0x00, 0x01])), Some(256 + 256));
        // Single segment, 8-byte content size.
        let mut h = vec![0xe0];
        h.extend(u64::MAX.to_le_bytes());
        assert_eq!(zstd_window(&frame(&h)), Some(u64::MAX));
        assert_eq!(zstd_window(&frame(&[0xe0, 1, 2])), None);
        assert_eq!(zstd_window(&magic), None);
        assert_eq!(zstd_window(&[0x50, 0x2a, 0x4d, 0x18, 0, 0, 0, 0]), None);
    }

    #[test]
    fn bounded_reads_stop_at_the_cap() {
        let data: Vec<u8> = (0..200_000u32).map(|i| i as u8).collect();
        let all = read_bounded(&data[..], 10, 1 << 20).unwrap();
        assert_eq!(all, data);
        let cut = read_bounded(&data[..], 1 << 30, 100_001).unwrap();
        assert_eq!(cut, &data[..100_001]);
        assert!(cut.capacity() <= 100_001, "{}", cut.capacity());
        assert!(read_bounded(&[][..], 0, 5).unwrap().is_empty());
    }

    #[test]
    fn caps() {
        assert_eq!(inflate_cap(0), MIN_INFLATE_CAP);
        assert_eq!(inflate_cap(10 << 20), 640 << 20);
        let l = DecompressLimits {
            max_total: 1 << 30,
            max_ratio: Some(64),
        };
        assert_eq!(l.limit_for(33 << 10), MIN_INFLATE_CAP);
        assert_eq!(l.limit_for(100 << 20), 1 << 30);
        let trusting = DecompressLimits {
            max_ratio: None,
            ..l
        };
        assert_eq!(trusting.limit_for(1), 1 << 30);
        assert_eq!(DecompressLimits::default().limit_for(1), MIN_INFLATE_CAP);
    }
}
