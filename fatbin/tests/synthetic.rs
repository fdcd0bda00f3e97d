//! Hand-made fatbins for cases nvcc does not produce on demand: unusual header
//! sizes, bad sizes and flags, decompression bombs.

use rcud_fatbin::{flags, Compression, EntryKind, FatBinary, FatbinError};

/// An entry: `kind`, `arch`, `flags`, its stored payload, and the
/// compressed/decompressed size fields; `header_size` bytes of header (the bytes
/// past 64 are filled with 0xee).
struct Synth<'a> {
    kind: u16,
    arch: u32,
    flags: u64,
    payload: &'a [u8],
    compressed_size: u32,
    decompressed_size: u64,
    header_size: u32,
}

impl Default for Synth<'_> {
    fn default() -> Self {
        Synth {
            kind: 1,
            arch: 80,
            flags: 0x11,
            payload: b"",
            compressed_size: 0,
            decompressed_size: 0,
            header_size: 64,
        }
    }
}

impl Synth<'_> {
    fn bytes(&self) -> Vec<u8> {
        let mut h = Vec::new();
        h.extend(self.kind.to_le_bytes());
        h.extend(0x0101u16.to_le_bytes());
        h.extend(self.header_size.to_le_bytes());
        h.extend((self.payload.len() as u64).to_le_bytes());
        h.extend(self.compressed_size.to_le_bytes());
        h.extend(0u32.to_le_bytes());
        h.extend(5u16.to_le_bytes());
        h.extend(9u16.to_le_bytes());
        h.extend(self.arch.to_le_bytes());
        h.extend([0u8; 8]);
        h.extend(self.flags.to_le_bytes());
        h.extend([0u8; 8]);
        h.extend(self.decompressed_size.to_le_bytes());
        assert_eq!(h.len(), 64);
        h.resize(self.header_size as usize, 0xee);
        h.extend(self.payload);
        h
    }
}

fn container(entries: &[Synth<'_>]) -> Vec<u8> {
    let body: Vec<u8> = entries.iter().flat_map(Synth::bytes).collect();
    let mut c = Vec::new();
    c.extend(0xBA55_ED50u32.to_le_bytes());
    c.extend(1u16.to_le_bytes());
    c.extend(16u16.to_le_bytes());
    c.extend((body.len() as u64).to_le_bytes());
    c.extend(body);
    c
}

const PTX: &[u8] = b".version 9.5\n.target sm_80\n.address_size 64\n\n.visible .entry k(\n\t.param .u32 k_param_0\n)\n{\n\tret;\n}\n";

#[test]
fn header_sizes_other_than_64_and_80() {
    let padded: Vec<u8> = PTX.iter().copied().chain([0; 11]).collect();
    let bytes = container(&[
        Synth {
            header_size: 200,
            payload: &padded,
            ..Synth::default()
        },
        Synth {
            header_size: 72,
            arch: 90,
            payload: PTX,
            ..Synth::default()
        },
    ]);
    let fb = FatBinary::parse(&bytes).unwrap();
    assert_eq!(fb.entries.len(), 2);
    assert_eq!(fb.entries[0].payload, PTX, "trailing NULs stripped");
    assert_eq!(fb.entries[1].offset, 16 + 200 + padded.len());
    assert_eq!(fb.ptx_for(89).unwrap().as_bytes(), PTX);
    assert_eq!(fb.param_layout("k").unwrap().total_size, 4);
}

#[test]
fn lz4_and_zstd_sizes_are_checked() {
    let compressed = lz4_flex::block::compress(PTX);
    let mut padded = compressed.clone();
    padded.resize(compressed.len().next_multiple_of(8) + 8, 0);
    let lz4 = |csz: usize, dsz: usize| {
        container(&[Synth {
            flags: 0x11 | flags::LZ4,
            payload: &padded,
            compressed_size: csz as u32,
            decompressed_size: dsz as u64,
            ..Synth::default()
        }])
    };
    let fb = FatBinary::parse(&lz4(compressed.len(), PTX.len())).unwrap();
    assert_eq!(fb.entries[0].compression, Compression::Lz4);
    assert_eq!(fb.entries[0].payload, PTX);

    let err = FatBinary::parse(&lz4(compressed.len(), PTX.len() - 1)).unwrap_err();
    assert!(
        matches!(
            err,
            FatbinError::Decompress {
                algorithm: "LZ4",
                offset: 16,
                ..
            }
        ),
        "{err}"
    );
    let err = FatBinary::parse(&lz4(compressed.len(), PTX.len() + 1)).unwrap_err();
    assert!(
        matches!(err, FatbinError::DecompressedSize { expected, actual, .. }
            if expected == PTX.len() as u64 + 1 && actual == PTX.len() as u64),
        "{err}"
    );
    let err = FatBinary::parse(&lz4(compressed.len(), 0)).unwrap_err();
    assert!(err.to_string().contains("decompressed_size"), "{err}");
    // More than LZ4 can expand this input to.
    let err = FatBinary::parse(&lz4(compressed.len(), 1 << 20)).unwrap_err();
    assert!(err.to_string().contains("decompressed_size"), "{err}");
    // More than the limit.
    let err = FatBinary::parse(&lz4(compressed.len(), 1 << 40)).unwrap_err();
    assert!(matches!(err, FatbinError::TooLarge { .. }), "{err}");
    let err = FatBinary::parse(&lz4(padded.len() + 1, PTX.len())).unwrap_err();
    assert!(err.to_string().contains("compressed_size"), "{err}");

    let both = container(&[Synth {
        flags: flags::LZ4 | flags::ZSTD,
        payload: &padded,
        ..Synth::default()
    }]);
    let err = FatBinary::parse(&both).unwrap_err();
    assert!(err.to_string().contains("both LZ4"), "{err}");
}

/// A Zstandard frame of `blocks` RLE blocks of 128 KiB, without a content size.
fn zstd_bomb(blocks: usize) -> Vec<u8> {
    let mut f = vec![0x28, 0xb5, 0x2f, 0xfd];
    f.push(0x00); // frame header: no content size, not single-segment
    f.push(7 << 3); // window 2^(10+7) = 128 KiB
    for i in 0..blocks {
        let last = u32::from(i + 1 == blocks);
        let header = last | (1 << 1) | ((128 * 1024) << 3); // RLE block
        f.extend(&header.to_le_bytes()[..3]);
        f.push(b' ');
    }
    f
}

#[test]
fn decompression_is_bounded() {
    let bomb = zstd_bomb(64); // 8 MiB from 262 bytes
    let entry = |dsz: u64| {
        container(&[Synth {
            flags: 0x11 | flags::ZSTD,
            payload: &bomb,
            decompressed_size: dsz,
            ..Synth::default()
        }])
    };
    let eight_mib = 8u64 << 20;
    // Within the limit, with and without a size in the header.
    for dsz in [0, eight_mib] {
        let fb = FatBinary::parse_with_limit(&entry(dsz), eight_mib).unwrap();
        assert_eq!(fb.entries[0].payload.len() as u64, eight_mib);
    }
    // Over it.
    for dsz in [0, eight_mib] {
        let err = FatBinary::parse_with_limit(&entry(dsz), 1 << 20).unwrap_err();
        assert_eq!(
            err,
            FatbinError::TooLarge {
                offset: 16,
                limit: 1 << 20
            }
        );
        assert!(err.to_string().contains("limit"), "{err}");
    }
    // The header lies about the size.
    let err = FatBinary::parse(&entry(1000)).unwrap_err();
    assert!(
        matches!(err, FatbinError::DecompressedSize { expected: 1000, .. }),
        "{err}"
    );
    // The limit counts all entries together.
    let two = [
        Synth {
            flags: 0x11 | flags::ZSTD,
            payload: &bomb,
            decompressed_size: eight_mib,
            ..Synth::default()
        },
        Synth {
            flags: 0x11 | flags::ZSTD,
            payload: &bomb,
            decompressed_size: eight_mib,
            ..Synth::default()
        },
    ];
    let bytes = container(&two);
    assert!(FatBinary::parse_with_limit(&bytes, 2 * eight_mib).is_ok());
    let err = FatBinary::parse_with_limit(&bytes, 2 * eight_mib - 1).unwrap_err();
    assert!(
        matches!(err, FatbinError::TooLarge { offset, .. } if offset > 16),
        "{err}"
    );
}

#[test]
fn unknown_kinds_are_skipped_and_kind_zero_is_padding_only() {
    let mut bytes = container(&[
        Synth {
            kind: 8,
            payload: b"opaque",
            ..Synth::default()
        },
        Synth {
            kind: 2,
            payload: b"\x7fELF not really",
            ..Synth::default()
        },
    ]);
    let fb = FatBinary::parse(&bytes).unwrap();
    assert_eq!(fb.skipped.len(), 1);
    assert_eq!(fb.entries[0].kind, EntryKind::Cubin);
    // A cubin that is not ELF only matters when asked for parameters.
    let err = fb.param_layout("k").unwrap_err();
    assert!(
        matches!(err, FatbinError::Elf { offset, .. } if offset == fb.entries[0].offset),
        "{err}"
    );

    // With PTX beside it, the PTX gives the layout.
    let with_ptx = container(&[
        Synth {
            kind: 2,
            payload: b"\x7fELF not really",
            ..Synth::default()
        },
        Synth {
            payload: PTX,
            ..Synth::default()
        },
    ]);
    let fb = FatBinary::parse(&with_ptx).unwrap();
    assert_eq!(fb.param_layout("k").unwrap().total_size, 4);

    // Zero padding inside the container after the last entry.
    let size_at = 8;
    let size = u64::from_le_bytes(bytes[size_at..size_at + 8].try_into().unwrap());
    bytes[size_at..size_at + 8].copy_from_slice(&(size + 16).to_le_bytes());
    bytes.extend([0; 16]);
    assert_eq!(FatBinary::parse(&bytes).unwrap().entries.len(), 1);
    // But not something else after a zero kind.
    let last = bytes.len() - 1;
    bytes[last] = 1;
    let err = FatBinary::parse(&bytes).unwrap_err();
    assert!(err.to_string().contains("kind"), "{err}");
}

#[test]
fn huge_sizes_in_headers() {
    // Found by fuzzing: a container size of u64::MAX.
    let mut bytes = vec![0x50, 0xed, 0x55, 0xba, 1, 0, 0x50, 0xba];
    bytes.extend([0xff; 64]);
    for parse in [FatBinary::parse, |b: &[u8]| {
        FatBinary::parse_with_limit(b, 1)
    }] {
        let err = parse(&bytes).unwrap_err();
        assert!(
            matches!(err, FatbinError::InvalidField { field: "size", .. }),
            "{err}"
        );
    }
    assert!(rcud_fatbin::containers_len(&bytes).is_err());
    // An entry size of u64::MAX.
    let mut bytes = container(&[Synth {
        payload: PTX,
        ..Synth::default()
    }]);
    bytes[16 + 8..16 + 16].copy_from_slice(&u64::MAX.to_le_bytes());
    let err = FatBinary::parse(&bytes).unwrap_err();
    assert!(
        matches!(err, FatbinError::Truncated { offset: 16, .. }),
        "{err}"
    );
}
