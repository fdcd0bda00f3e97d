//! Module images as the driver API accepts them (`cuModuleLoadData`,
//! `cuLibraryLoadData`, `cuLinkAddData`): a fatbin container, a fat binary
//! wrapper, an ELF cubin or PTX text. The client turns every form into a
//! fatbin container with one entry, so the server loads one format.

use crate::container::{
    CONTAINER_HEADER_LEN, CONTAINER_MAGIC, ENTRY_HEADER_MIN_LEN, KIND_ELF, KIND_PTX,
};
use crate::{flags, WRAPPER_MAGIC};

/// `\x7fELF`.
const ELF_MAGIC: &[u8; 4] = b"\x7fELF";

/// What a module image is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ImageKind {
    /// One or more fatbin containers.
    Fatbin,
    /// A fat binary wrapper: points at a fatbin elsewhere in memory.
    Wrapper,
    /// An ELF cubin.
    Cubin,
    /// PTX source text.
    Ptx,
}

/// Tells what `bytes` hold, from their first bytes; `None` for anything else.
pub fn classify(bytes: &[u8]) -> Option<ImageKind> {
    let word = bytes
        .get(..4)
        .map(|w| u32::from_le_bytes([w[0], w[1], w[2], w[3]]));
    match word {
        Some(CONTAINER_MAGIC) => Some(ImageKind::Fatbin),
        Some(WRAPPER_MAGIC) => Some(ImageKind::Wrapper),
        _ if bytes.starts_with(ELF_MAGIC) => Some(ImageKind::Cubin),
        _ if looks_like_ptx(bytes) => Some(ImageKind::Ptx),
        _ => None,
    }
}

/// PTX is text with a `.version` directive (comments may come first).
fn looks_like_ptx(bytes: &[u8]) -> bool {
    let head = &bytes[..bytes.len().min(64 * 1024)];
    let Ok(text) = std::str::from_utf8(until_nul(head)) else {
        return false;
    };
    text.contains(".version") && (text.contains(".target") || text.contains(".entry"))
}

fn until_nul(bytes: &[u8]) -> &[u8] {
    bytes
        .iter()
        .position(|&b| b == 0)
        .map_or(bytes, |n| &bytes[..n])
}

/// A fatbin container holding PTX `text` (up to its first NUL byte). Its
/// architecture is the `.target sm_XY` of the text (0 when it names none), its
/// ISA version the `.version X.Y`.
pub fn wrap_ptx(text: &[u8]) -> Vec<u8> {
    let text = until_nul(text);
    let source = String::from_utf8_lossy(text);
    let arch = directive(&source, ".target")
        .and_then(|t| t.split(',').next())
        .and_then(|t| t.trim().strip_prefix("sm_"))
        .map(|t| t.trim_end_matches(|c: char| c.is_ascii_alphabetic()))
        .and_then(|t| t.parse().ok())
        .unwrap_or(0);
    let (major, minor) = directive(&source, ".version")
        .and_then(|v| v.split_once('.'))
        .and_then(|(a, b)| Some((a.trim().parse().ok()?, b.trim().parse().ok()?)))
        .unwrap_or((0, 0));
    // The parser takes the payload up to its first NUL, as nvcc pads it.
    let mut payload = text.to_vec();
    payload.push(0);
    container(KIND_PTX, arch, (major, minor), &payload)
}

/// A fatbin container holding the ELF cubin `elf`, for the architecture its
/// header names (`e_flags`, as nvcc writes it for sm_XY).
pub fn wrap_cubin(elf: &[u8]) -> Vec<u8> {
    container(KIND_ELF, cubin_arch(elf).unwrap_or(0), (0, 0), elf)
}

/// The `sm_XY` an ELF cubin was built for, from `e_flags`: bits 8-15 in
/// the CUDA ELF ABI version 8 that nvcc 13 writes (byte 8 of the ident),
/// bits 0-7 before it.
fn cubin_arch(elf: &[u8]) -> Option<u32> {
    let abi_version = *elf.get(8)?;
    // 64-bit ELF: e_flags at offset 48.
    let flags = u32::from_le_bytes(elf.get(48..52)?.try_into().ok()?);
    Some(if abi_version >= 8 {
        (flags >> 8) & 0xff
    } else {
        flags & 0xff
    })
}

/// Bytes of the ELF cubin whose first 64 bytes are `header`: nvcc puts the
/// section and program header tables last, so the later one's end is the
/// end of the image. `None` when `header` is not a 64-bit ELF header.
pub fn cubin_len(header: &[u8]) -> Option<usize> {
    if !header.starts_with(ELF_MAGIC) || header.get(4) != Some(&2) {
        return None;
    }
    let u64_at = |o: usize| Some(u64::from_le_bytes(header.get(o..o + 8)?.try_into().ok()?));
    let u16_at = |o: usize| {
        Some(u64::from(u16::from_le_bytes(
            header.get(o..o + 2)?.try_into().ok()?,
        )))
    };
    let programs = u64_at(0x20)?.checked_add(u16_at(0x36)? * u16_at(0x38)?)?;
    let sections = u64_at(0x28)?.checked_add(u16_at(0x3a)? * u16_at(0x3c)?)?;
    usize::try_from(programs.max(sections).max(64)).ok()
}

fn directive<'a>(source: &'a str, name: &str) -> Option<&'a str> {
    source.lines().find_map(|line| {
        let line = line.trim_start();
        line.strip_prefix(name)
            .filter(|rest| rest.starts_with(char::is_whitespace))
            .map(|rest| rest.split("//").next().unwrap_or(rest).trim())
    })
}

fn container(kind: u16, arch: u32, (major, minor): (u16, u16), payload: &[u8]) -> Vec<u8> {
    let padded = payload.len().div_ceil(8) * 8;
    let entry_len = ENTRY_HEADER_MIN_LEN + padded;
    let mut out = Vec::with_capacity(CONTAINER_HEADER_LEN + entry_len);
    out.extend(CONTAINER_MAGIC.to_le_bytes());
    out.extend(1u16.to_le_bytes());
    out.extend((CONTAINER_HEADER_LEN as u16).to_le_bytes());
    out.extend((entry_len as u64).to_le_bytes());
    out.extend(kind.to_le_bytes());
    out.extend(0x0101u16.to_le_bytes());
    out.extend((ENTRY_HEADER_MIN_LEN as u32).to_le_bytes());
    out.extend((padded as u64).to_le_bytes());
    out.extend(0u32.to_le_bytes()); // not compressed
    out.extend(0u32.to_le_bytes()); // no options
    out.extend(minor.to_le_bytes());
    out.extend(major.to_le_bytes());
    out.extend(arch.to_le_bytes());
    out.extend([0u8; 8]); // no name
    out.extend((flags::ADDRESS_64 | flags::LINUX).to_le_bytes());
    out.extend([0u8; 8]);
    out.extend(0u64.to_le_bytes()); // not compressed
    out.extend(payload);
    out.resize(CONTAINER_HEADER_LEN + entry_len, 0);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{EntryKind, FatBinary};

    const PTX: &str = "//\n// Generated\n.version 8.5\n.target sm_80\n.address_size 64\n\n\
        .visible .entry k(\n\t.param .u64 k_param_0,\n\t.param .u32 k_param_1\n)\n{\n\tret;\n}\n";

    #[test]
    fn ptx_round_trips_through_a_container() {
        assert_eq!(classify(PTX.as_bytes()), Some(ImageKind::Ptx));
        let image = wrap_ptx(PTX.as_bytes());
        assert_eq!(classify(&image), Some(ImageKind::Fatbin));
        let fatbin = FatBinary::parse(&image).expect("parses");
        assert_eq!(fatbin.ptx_for(80), Some(PTX));
        assert_eq!(fatbin.ptx_for(75), None, "sm_80 PTX does not run on sm_75");
        let layout = fatbin.param_layout("k").expect("layout from the .entry");
        assert_eq!(layout.params.len(), 2);
        assert_eq!(layout.total_size, 12);
    }

    #[test]
    fn text_after_a_nul_is_not_ptx() {
        let mut bytes = PTX.as_bytes().to_vec();
        bytes.extend(b"\0garbage");
        let fatbin = FatBinary::parse(&wrap_ptx(&bytes)).expect("parses");
        assert_eq!(fatbin.ptx_for(80), Some(PTX));
    }

    #[test]
    fn cubins_keep_their_architecture() {
        let mut elf = vec![0u8; 64];
        elf[..4].copy_from_slice(ELF_MAGIC);
        elf[4] = 2;
        // As nvcc 13.5 writes sm_86 (ABI version 8) and older nvcc sm_80.
        elf[8] = 8;
        elf[48..52].copy_from_slice(&0x0600_5604u32.to_le_bytes());
        assert_eq!(cubin_arch(&elf), Some(86));
        elf[8] = 7;
        elf[48..52].copy_from_slice(&0x0050_0550u32.to_le_bytes());
        assert_eq!(cubin_arch(&elf), Some(80));
        assert_eq!(classify(&elf), Some(ImageKind::Cubin));
        let fatbin = FatBinary::parse(&wrap_cubin(&elf));
        // Not a real cubin: the container parses, the entry is a cubin of sm_80/86.
        if let Ok(f) = fatbin {
            assert!(f.entries.iter().all(|e| e.kind == EntryKind::Cubin));
        }
    }

    #[test]
    fn cubin_length_from_its_header() {
        let mut h = vec![0u8; 64];
        h[..4].copy_from_slice(ELF_MAGIC);
        h[4] = 2;
        h[0x20..0x28].copy_from_slice(&3072u64.to_le_bytes()); // phoff
        h[0x36..0x38].copy_from_slice(&56u16.to_le_bytes());
        h[0x38..0x3a].copy_from_slice(&3u16.to_le_bytes());
        h[0x28..0x30].copy_from_slice(&1024u64.to_le_bytes()); // shoff
        h[0x3a..0x3c].copy_from_slice(&64u16.to_le_bytes());
        h[0x3c..0x3e].copy_from_slice(&12u16.to_le_bytes());
        assert_eq!(cubin_len(&h), Some(3240));
        assert_eq!(cubin_len(&h[..40]), None);
        assert_eq!(cubin_len(b"not an elf"), None);
    }

    #[test]
    fn garbage_is_nothing() {
        assert_eq!(classify(b""), None);
        assert_eq!(classify(b"\x01\x02\x03\x04 hello"), None);
        assert_eq!(classify(&[0xff; 100]), None);
    }
}
