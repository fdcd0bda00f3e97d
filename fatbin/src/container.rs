//! Fatbin containers (`0xBA55ED50`) and the entries inside them.
//!
//! Layouts (little-endian), as nvcc 13.5 writes them; see `shared/spec/fatbin.md`.
//!
//! Container header, 16 bytes: `u32 magic; u16 version (1); u16 header_size;
//! u64 size` (bytes of entries that follow the header).
//!
//! Entry header, `header_size` bytes (64 for most cubins, 80 for PTX, 120 for
//! sm_100+ cubins, more for `--concat` entries), of which the first 64 are fixed:
//!
//! | offset | field |
//! |---|---|
//! | 0 | `u16 kind` (1 PTX, 2 ELF cubin, 8 LTO-IR, 0x100 concatenated) |
//! | 2 | `u16 version` (0x0101) |
//! | 4 | `u32 header_size` |
//! | 8 | `u64 size`: payload bytes as stored, padded |
//! | 16 | `u32 compressed_size`: bytes of the compressed stream (0 when stored as is) |
//! | 20 | `u32` offset in the header of an `{u32 offset; u32 len}` extension (options), or 0 |
//! | 24 | `u16 minor; u16 major`: PTX ISA version, or ELF format version |
//! | 28 | `u32 arch` (80 for sm_80 / compute_80) |
//! | 32 | `u32 name_offset; u32 name_len` |
//! | 40 | `u64 flags` ([`crate::flags`]) |
//! | 48 | `u64` |
//! | 56 | `u64 decompressed_size` (0 when stored as is) |
//!
//! A concatenated entry (`nvcc --concat`, kind 0x100) compresses the payloads of
//! several PTX or several cubins as one stream. Its header continues at 64 with
//! `u32 count; u32 bytes` (bytes of this table, these 8 included) and `count`
//! sub-entry headers of the same layout, except that the `header_size` field holds
//! the sub-entry's offset in the decompressed stream. The sub-headers have
//! extensions of varying length and no length field of their own: each one ends
//! where the next (a header of kind 1 or 2 whose offset follows on from the
//! previous sub-entry's) begins.

use crate::decompress::{self, Budget, Compression, DecompressLimits};
use crate::error::FatbinError;
use crate::le::{u16_at, u32_at, u64_at, usize_sat};
use crate::{flags, ArchVariant, Entry, EntryKind, FatBinary, SkippedEntry};

/// Magic number at the start of every fatbin container.
pub const CONTAINER_MAGIC: u32 = 0xBA55_ED50;
/// Bytes of a container header as nvcc writes it.
pub const CONTAINER_HEADER_LEN: usize = 16;
/// Bytes of the fixed part of an entry header (the whole header is often longer).
pub const ENTRY_HEADER_MIN_LEN: usize = 64;
/// Largest container accepted (16 GiB): a bound on what a hostile header can make
/// a caller copy.
pub const MAX_CONTAINER_LEN: u64 = 1 << 34;

pub(crate) const KIND_PTX: u16 = 1;
pub(crate) const KIND_ELF: u16 = 2;
pub(crate) const KIND_CONCATENATED: u16 = 0x100;

/// The 16-byte header of a fatbin container.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ContainerHeader {
    /// Format version (1).
    pub version: u16,
    /// Bytes of this header (16).
    pub header_size: u16,
    /// Bytes of entries that follow the header.
    pub size: u64,
}

impl ContainerHeader {
    /// Reads the container header at the start of `bytes`.
    pub fn parse(bytes: &[u8]) -> Result<Self, FatbinError> {
        Self::parse_at(bytes, 0)
    }

    /// Bytes of the whole container: header and entries.
    pub fn total_len(&self) -> u64 {
        u64::from(self.header_size).saturating_add(self.size)
    }

    /// Reads the container header at `offset` of `bytes`.
    pub(crate) fn parse_at(bytes: &[u8], offset: usize) -> Result<Self, FatbinError> {
        let rest = bytes.get(offset..).unwrap_or_default();
        if let Some(magic) = u32_at(rest, 0) {
            if magic != CONTAINER_MAGIC {
                return Err(FatbinError::BadContainerMagic {
                    offset,
                    found: magic,
                });
            }
        }
        let (Some(version), Some(header_size), Some(size)) =
            (u16_at(rest, 4), u16_at(rest, 6), u64_at(rest, 8))
        else {
            return Err(FatbinError::Truncated {
                what: "fatbin container header",
                offset,
                needed: CONTAINER_HEADER_LEN as u64,
                available: rest.len(),
            });
        };
        let invalid = |field, value, reason| FatbinError::InvalidField {
            what: "fatbin container header",
            field,
            offset,
            value,
            reason,
        };
        if version != 1 {
            return Err(invalid(
                "version",
                u64::from(version),
                "only version 1 is known",
            ));
        }
        if usize::from(header_size) < CONTAINER_HEADER_LEN {
            return Err(invalid(
                "header_size",
                u64::from(header_size),
                "shorter than the 16 bytes of the header's fields",
            ));
        }
        let header = ContainerHeader {
            version,
            header_size,
            size,
        };
        if header.total_len() > MAX_CONTAINER_LEN {
            return Err(invalid(
                "size",
                size,
                "larger than the 16 GiB this parser accepts",
            ));
        }
        Ok(header)
    }
}

/// The fixed 64 bytes of an entry header.
#[derive(Debug, Clone, Copy)]
pub(crate) struct EntryHeader {
    pub(crate) kind: u16,
    pub(crate) version: u16,
    /// Header bytes; in a sub-entry of a concatenated entry, the payload's offset.
    pub(crate) header_size: u32,
    pub(crate) size: u64,
    pub(crate) compressed_size: u32,
    pub(crate) ext_offset: u32,
    pub(crate) minor: u16,
    pub(crate) major: u16,
    pub(crate) arch: u32,
    pub(crate) flags: u64,
    pub(crate) decompressed_size: u64,
}

impl EntryHeader {
    /// Reads the fixed part of an entry header from `bytes` (which starts with it);
    /// `offset` is only for error messages.
    fn parse(bytes: &[u8], offset: usize, what: &'static str) -> Result<Self, FatbinError> {
        if bytes.len() < ENTRY_HEADER_MIN_LEN {
            return Err(FatbinError::Truncated {
                what,
                offset,
                needed: ENTRY_HEADER_MIN_LEN as u64,
                available: bytes.len(),
            });
        }
        // In bounds: checked above.
        let u16_ = |at| u16_at(bytes, at).unwrap_or_default();
        let u32_ = |at| u32_at(bytes, at).unwrap_or_default();
        let u64_ = |at| u64_at(bytes, at).unwrap_or_default();
        Ok(EntryHeader {
            kind: u16_(0),
            version: u16_(2),
            header_size: u32_(4),
            size: u64_(8),
            compressed_size: u32_(16),
            ext_offset: u32_(20),
            minor: u16_(24),
            major: u16_(26),
            arch: u32_(28),
            flags: u64_(40),
            decompressed_size: u64_(56),
        })
    }

    /// Offset in this header where its extension ends (at least 64): the
    /// extension is `{u32 offset; u32 len}` at `ext_offset`, naming `len` bytes at
    /// `offset` of the header.
    fn extension_end(&self, header: &[u8]) -> usize {
        let ext = usize_sat(u64::from(self.ext_offset));
        if ext == 0 {
            return ENTRY_HEADER_MIN_LEN;
        }
        let data_end = match (u32_at(header, ext), u32_at(header, ext.saturating_add(4))) {
            (Some(off), Some(len)) => usize_sat(u64::from(off) + u64::from(len)),
            _ => 0,
        };
        ENTRY_HEADER_MIN_LEN
            .max(ext.saturating_add(8))
            .max(data_end)
    }
}

fn variant(flags: u64) -> ArchVariant {
    if flags & flags::ARCH_SPECIFIC != 0 {
        ArchVariant::ArchSpecific
    } else if flags & flags::FAMILY_SPECIFIC != 0 {
        ArchVariant::FamilySpecific
    } else {
        ArchVariant::Generic
    }
}

/// Makes an [`Entry`] of a PTX or cubin payload (already decompressed).
fn make_entry(
    h: &EntryHeader,
    mut payload: Vec<u8>,
    compression: Compression,
    offset: usize,
    concatenated: bool,
) -> Entry {
    let kind = if h.kind == KIND_PTX {
        // PTX is NUL-terminated and padded with NULs.
        let text_len = payload
            .iter()
            .rposition(|&b| b != 0)
            .map_or(0, |last| last + 1);
        payload.truncate(text_len);
        EntryKind::Ptx
    } else {
        EntryKind::Cubin
    };
    Entry {
        kind,
        arch: h.arch,
        payload,
        variant: variant(h.flags),
        version: (h.major, h.minor),
        flags: h.flags,
        compression,
        offset,
        concatenated,
    }
}

/// Parses every container in `bytes` (back to back, zero padding between and
/// after them allowed) into `fatbin`.
pub(crate) fn parse_all(bytes: &[u8], limits: &DecompressLimits) -> Result<FatBinary, FatbinError> {
    let mut fatbin = FatBinary::default();
    let mut budget = Budget::new(limits.limit_for(bytes.len()));
    let mut containers = 0usize;
    let mut pos = 0usize;
    loop {
        pos += bytes[pos..].iter().take_while(|&&b| b == 0).count();
        if pos == bytes.len() {
            break;
        }
        let header = match ContainerHeader::parse_at(bytes, pos) {
            Err(FatbinError::BadContainerMagic { offset, .. }) if containers > 0 => {
                return Err(FatbinError::TrailingGarbage { offset })
            }
            other => other?,
        };
        let available = bytes.len() - pos;
        let total = header.total_len();
        if total > available as u64 {
            return Err(FatbinError::Truncated {
                what: "fatbin container",
                offset: pos,
                needed: total,
                available,
            });
        }
        // Fits in `bytes`, so in usize.
        let end = pos + total as usize;
        parse_entries(
            bytes,
            pos + usize::from(header.header_size),
            end,
            &mut fatbin,
            &mut budget,
        )?;
        containers += 1;
        pos = end;
    }
    if containers == 0 {
        return Err(FatbinError::Empty { len: bytes.len() });
    }
    Ok(fatbin)
}

/// Parses the entries in `bytes[start..end]` (one container's).
fn parse_entries(
    bytes: &[u8],
    start: usize,
    end: usize,
    fatbin: &mut FatBinary,
    budget: &mut Budget,
) -> Result<(), FatbinError> {
    let region = &bytes[..end];
    let mut at = start;
    while at < end {
        let rest = &region[at..];
        if u16_at(rest, 0) == Some(0) {
            // No entry has kind 0: this can only be zero padding to the end.
            if rest.iter().any(|&b| b != 0) {
                return Err(FatbinError::InvalidField {
                    what: "fatbin entry header",
                    field: "kind",
                    offset: at,
                    value: 0,
                    reason: "0 is no entry kind, and the bytes from there are not zero padding",
                });
            }
            break;
        }
        let h = EntryHeader::parse(rest, at, "fatbin entry header")?;
        let header_len = usize_sat(u64::from(h.header_size));
        if header_len < ENTRY_HEADER_MIN_LEN {
            return Err(FatbinError::InvalidField {
                what: "fatbin entry header",
                field: "header_size",
                offset: at,
                value: u64::from(h.header_size),
                reason: "shorter than the 64 bytes of the header's fixed fields",
            });
        }
        let needed = u64::from(h.header_size).saturating_add(h.size);
        if needed > rest.len() as u64 {
            return Err(FatbinError::Truncated {
                what: "fatbin entry (header and payload)",
                offset: at,
                needed,
                available: rest.len(),
            });
        }
        let header = &rest[..header_len];
        let stored = &rest[header_len..needed as usize];
        match h.kind {
            KIND_PTX | KIND_ELF => {
                let (payload, compression) = decompress::payload(stored, &h, at, budget)?;
                fatbin
                    .entries
                    .push(make_entry(&h, payload, compression, at, false));
            }
            KIND_CONCATENATED => parse_concatenated(header, stored, &h, at, fatbin, budget)?,
            other => fatbin.skipped.push(SkippedEntry {
                offset: at,
                kind: other,
                arch: h.arch,
                flags: h.flags,
            }),
        }
        at += needed as usize;
    }
    Ok(())
}

/// Parses a concatenated entry (kind 0x100, `nvcc --concat`) into its sub-entries.
fn parse_concatenated(
    header: &[u8],
    stored: &[u8],
    h: &EntryHeader,
    offset: usize,
    fatbin: &mut FatBinary,
    budget: &mut Budget,
) -> Result<(), FatbinError> {
    let bad = |detail: String| FatbinError::BadConcatenated { offset, detail };
    let (Some(count), Some(table_len)) = (u32_at(header, 64), u32_at(header, 68)) else {
        return Err(bad(format!(
            "header of {} bytes has no sub-entry table at 64",
            header.len()
        )));
    };
    let table_end = 64u64 + u64::from(table_len);
    if u64::from(table_len) < 8 || table_end > header.len() as u64 {
        return Err(bad(format!(
            "sub-entry table of {table_len} bytes does not fit in the header's {} bytes",
            header.len()
        )));
    }
    let table = &header[72..table_end as usize];
    let count = usize_sat(u64::from(count));
    if count == 0 || count > table.len() / ENTRY_HEADER_MIN_LEN {
        return Err(bad(format!(
            "{count} sub-entries cannot fit in a table of {} bytes",
            table.len()
        )));
    }
    let (data, compression) = decompress::payload(stored, h, offset, budget)?;

    // Find where each sub-header starts.
    let mut subs: Vec<(usize, EntryHeader)> = Vec::with_capacity(count);
    let mut start = 0usize;
    for i in 0..count {
        let sub = EntryHeader::parse(&table[start..], offset, "concatenated sub-entry header")?;
        subs.push((start, sub));
        if i + 1 == count {
            break;
        }
        let min_len = sub
            .extension_end(&table[start..])
            .min(table.len())
            .next_multiple_of(8);
        let prev_end = u64::from(sub.header_size).saturating_add(sub.size);
        let first_version = subs[0].1.version;
        let next = (start.saturating_add(min_len)..)
            .step_by(8)
            .take_while(|&c| c.saturating_add(ENTRY_HEADER_MIN_LEN) <= table.len())
            .find(|&c| {
                let kind = u16_at(table, c);
                let version = u16_at(table, c + 2);
                let data_offset = u32_at(table, c + 4).map(u64::from);
                matches!(kind, Some(KIND_PTX | KIND_ELF))
                    && version == Some(first_version)
                    && data_offset.is_some_and(|o| o >= prev_end && o - prev_end < 64)
            });
        start = next.ok_or_else(|| {
            bad(format!(
                "cannot find sub-entry {} of {count} after the one at table offset {start}",
                i + 1
            ))
        })?;
    }

    for (table_offset, sub) in subs {
        if sub.kind != KIND_PTX && sub.kind != KIND_ELF {
            fatbin.skipped.push(SkippedEntry {
                offset,
                kind: sub.kind,
                arch: sub.arch,
                flags: sub.flags,
            });
            continue;
        }
        let data_offset = u64::from(sub.header_size);
        let data_end = data_offset.saturating_add(sub.size);
        if data_end > data.len() as u64 {
            return Err(bad(format!(
                "sub-entry at table offset {table_offset} covers bytes {data_offset}..{data_end} \
                 of a {}-byte decompressed payload",
                data.len()
            )));
        }
        let stored = &data[data_offset as usize..data_end as usize];
        let (payload, sub_compression) = decompress::payload(stored, &sub, offset, budget)?;
        let compression = match sub_compression {
            Compression::None => compression,
            c => c,
        };
        fatbin
            .entries
            .push(make_entry(&sub, payload, compression, offset, true));
    }
    Ok(())
}

/// See [`crate::containers_len`].
pub(crate) fn containers_len(bytes: &[u8]) -> Result<usize, FatbinError> {
    let mut end = 0usize;
    let mut first = true;
    loop {
        let mut next = end;
        if !first {
            next += bytes[end..].iter().take_while(|&&b| b == 0).count();
            // Another container only if its magic is there.
            if u32_at(bytes, next) != Some(CONTAINER_MAGIC) {
                return Ok(end);
            }
        }
        let needed_header = next.saturating_add(CONTAINER_HEADER_LEN);
        if bytes.len() < needed_header {
            // A wrong magic is an error as soon as 4 bytes show it.
            if let Some(found) = u32_at(bytes, next).filter(|&m| m != CONTAINER_MAGIC) {
                return Err(FatbinError::BadContainerMagic {
                    offset: next,
                    found,
                });
            }
            return Err(FatbinError::NeedMore(needed_header));
        }
        let header = ContainerHeader::parse_at(bytes, next)?;
        // total_len <= MAX_CONTAINER_LEN, so this fits in u64 and, saturated, usize.
        let container_end = usize_sat(next as u64 + header.total_len());
        if bytes.len() < container_end {
            return Err(FatbinError::NeedMore(container_end));
        }
        end = container_end;
        first = false;
    }
}
