//! Parsing of fatbins that nvcc 13.5 produced (tests/fixtures, rebuilt by
//! tests/fixtures/regen.sh).

use rcud_fatbin::{
    containers_len, content_hash, nvinfo, parse_wrapper, ptx, ArchVariant, Compression, Entry,
    EntryKind, FatBinary, FatbinError, Param, ParamLayout, WRAPPER_LEN,
};

fn fixture(name: &str) -> Vec<u8> {
    let path = format!("{}/tests/fixtures/{name}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

fn parse(name: &str) -> FatBinary {
    FatBinary::parse(&fixture(name)).unwrap_or_else(|e| panic!("{name}: {e}"))
}

fn layout(pairs: &[(usize, usize)], total_size: usize) -> ParamLayout {
    ParamLayout {
        params: pairs
            .iter()
            .map(|&(offset, size)| Param { offset, size })
            .collect(),
        total_size,
    }
}

/// `(kind, arch, compression)` of each entry.
fn shape(fb: &FatBinary) -> Vec<(EntryKind, u32, Compression)> {
    fb.entries
        .iter()
        .map(|e| (e.kind, e.arch, e.compression))
        .collect()
}

fn entry(fb: &FatBinary, kind: EntryKind, arch: u32) -> &Entry {
    fb.entries
        .iter()
        .find(|e| e.kind == kind && e.arch == arch)
        .unwrap_or_else(|| panic!("no {kind:?} entry for {arch}"))
}

/// Layout of a kernel from one PTX text, failing when it is not there.
fn ptx_layout(text: &str, kernel: &str) -> ParamLayout {
    ptx::entry_param_layout(text, kernel)
        .unwrap()
        .unwrap_or_else(|| panic!("no .entry {kernel}"))
}

/// Layout of a kernel from one cubin, failing when it is not there.
fn cubin_layout(cubin: &[u8], kernel: &str) -> ParamLayout {
    nvinfo::cubin_param_layout(cubin, kernel)
        .unwrap()
        .unwrap_or_else(|| panic!("no .nv.info.{kernel}"))
}

const SPEC_KERNEL: &str = "_Z1kPfi1Sc";
const NO_PARAMS: &str = "_Z8noparamsv";

fn spec_layout() -> ParamLayout {
    layout(&[(0, 8), (8, 4), (16, 24), (40, 1)], 41)
}

const ELF_MAGIC: &[u8] = b"\x7fELF";

use Compression::{Lz4, Zstd};
use EntryKind::{Cubin, Ptx};

#[test]
fn compress_modes_store_what_nvcc_wrote() {
    let none = Compression::None;
    let cases = [
        (
            "params_sm80_default.fatbin",
            [(Cubin, 80, none), (Ptx, 80, Zstd)],
        ),
        (
            "params_sm80_none.fatbin",
            [(Cubin, 80, none), (Ptx, 80, none)],
        ),
        (
            "params_sm80_speed.fatbin",
            [(Cubin, 80, none), (Ptx, 80, Lz4)],
        ),
        (
            "params_sm80_size.fatbin",
            [(Cubin, 80, Zstd), (Ptx, 80, Zstd)],
        ),
    ];
    let reference = parse("params_sm80_none.fatbin");
    for (name, expected) in cases {
        let fb = parse(name);
        assert_eq!(shape(&fb), expected, "{name}");
        assert!(fb.skipped.is_empty(), "{name}");
        // Decompressed payloads are the same bytes whatever the mode.
        assert_eq!(fb.cubin_for(80), reference.cubin_for(80), "{name}");
        assert_eq!(fb.ptx_for(80), reference.ptx_for(80), "{name}");
        let cubin = fb.cubin_for(80).unwrap();
        assert!(cubin.starts_with(ELF_MAGIC), "{name}");
        let text = fb.ptx_for(80).unwrap();
        assert!(text.contains(".version 9.5"), "{name}");
        assert!(text.contains(".target sm_80"), "{name}");
        assert!(!text.ends_with('\0'), "{name}: trailing NULs kept");
        assert!(text.ends_with('\n'), "{name}");
        let ptx_entry = entry(&fb, Ptx, 80);
        assert_eq!(ptx_entry.version, (9, 5));
        assert_eq!(ptx_entry.variant, ArchVariant::Generic);
        assert!(!ptx_entry.is_debug());
    }
    // Stored with NUL padding, handed out without it.
    let none = fixture("params_sm80_none.fatbin");
    let text = reference.ptx_for(80).unwrap();
    let at = none
        .windows(text.len())
        .position(|w| w == text.as_bytes())
        .unwrap();
    assert_eq!(none[at + text.len()], 0);
}

#[test]
fn spec_kernel_layout_from_cubin_and_ptx() {
    for name in [
        "params_sm80_default.fatbin",
        "params_sm80_none.fatbin",
        "params_sm80_speed.fatbin",
        "params_sm80_size.fatbin",
        "params_cubin_only.fatbin",
        "params_ptx_only.fatbin",
        "params_lto.fatbin",
        "params_variants.fatbin",
        "params_concat_speed.fatbin",
    ] {
        let fb = parse(name);
        assert_eq!(
            fb.param_layout(SPEC_KERNEL).unwrap(),
            spec_layout(),
            "{name}"
        );
        assert_eq!(
            fb.param_layout(NO_PARAMS).unwrap(),
            layout(&[], 0),
            "{name}"
        );
        // Every cubin and every PTX agrees.
        for e in &fb.entries {
            let (spec, none) = match e.kind {
                Cubin => (
                    cubin_layout(&e.payload, SPEC_KERNEL),
                    cubin_layout(&e.payload, NO_PARAMS),
                ),
                Ptx => (
                    ptx_layout(e.ptx().unwrap(), SPEC_KERNEL),
                    ptx_layout(e.ptx().unwrap(), NO_PARAMS),
                ),
            };
            assert_eq!(spec, spec_layout(), "{name}: {:?} {}", e.kind, e.arch);
            assert_eq!(none, layout(&[], 0), "{name}: {:?} {}", e.kind, e.arch);
        }
    }
}

#[test]
fn cubin_only_and_ptx_only() {
    let cubin_only = parse("params_cubin_only.fatbin");
    assert_eq!(shape(&cubin_only), [(Cubin, 80, Compression::None)]);
    assert_eq!(cubin_only.ptx_for(80), None);
    assert_eq!(cubin_only.ptx_for(120), None);
    assert!(cubin_only.cubin_for(80).is_some());

    let ptx_only = parse("params_ptx_only.fatbin");
    assert_eq!(shape(&ptx_only), [(Ptx, 80, Zstd)]);
    assert_eq!(ptx_only.cubin_for(80), None);
    // The PTX fallback is what gives the layout here.
    assert_eq!(ptx_only.param_layout(SPEC_KERNEL).unwrap(), spec_layout());
}

#[test]
fn ptx_and_cubin_selection_by_arch() {
    let fb = parse("params_sm80_default.fatbin");
    assert!(fb.ptx_for(80).is_some());
    assert_eq!(fb.ptx_for(86), fb.ptx_for(80));
    assert_eq!(fb.ptx_for(120), fb.ptx_for(80));
    assert_eq!(fb.ptx_for(75), None);
    assert!(fb.cubin_for(80).is_some());
    assert_eq!(fb.cubin_for(86), None);
    assert_eq!(fb.cubin_for(75), None);
    assert!(entry(&fb, Cubin, 80).compatible_with(86));
    assert!(!entry(&fb, Cubin, 80).compatible_with(90));
    assert!(entry(&fb, Ptx, 80).compatible_with(90));
}

#[test]
fn multi_kernel_file_with_device_and_constant_variables() {
    let fb = parse("multi_sm80.fatbin");
    assert_eq!(
        shape(&fb),
        [(Cubin, 80, Compression::None), (Ptx, 80, Zstd)]
    );
    let text = fb.ptx_for(80).unwrap();
    assert!(text.contains(".global .align 4 .u32 counter;"));
    assert!(text.contains(".const .align 4 .b8 table[64];"));
    let expected = [
        (
            "_Z5saxpyifPKfPf",
            layout(&[(0, 4), (4, 4), (8, 8), (16, 8)], 24),
        ),
        (
            "_Z5mixedcsd6float4h3BigPx",
            layout(
                &[(0, 1), (2, 2), (8, 8), (16, 16), (32, 1), (48, 48), (96, 8)],
                104,
            ),
        ),
        ("_Z5emptyv", layout(&[], 0)),
        ("_Z4fillIdEvPT_S0_j", layout(&[(0, 8), (8, 8), (16, 4)], 20)),
        ("_Z4fillIcEvPT_S0_j", layout(&[(0, 8), (8, 1), (12, 4)], 16)),
    ];
    let cubin = fb.cubin_for(80).unwrap();
    for (kernel, want) in &expected {
        assert_eq!(&fb.param_layout(kernel).unwrap(), want, "{kernel}");
        assert_eq!(&cubin_layout(cubin, kernel), want, "{kernel} (cubin)");
        assert_eq!(&ptx_layout(text, kernel), want, "{kernel} (PTX)");
    }
    // Variables are no kernels.
    for name in ["counter", "table", "_Z5saxpy", "nonexistent"] {
        let err = fb.param_layout(name).unwrap_err();
        assert_eq!(
            err,
            FatbinError::NoParamInfo {
                kernel: name.into()
            }
        );
        assert!(err.to_string().contains(name), "{err}");
    }
}

#[test]
fn several_architectures_and_header_sizes() {
    let bytes = fixture("multi_archs.fatbin");
    let fb = FatBinary::parse(&bytes).unwrap();
    let none = Compression::None;
    assert_eq!(
        shape(&fb),
        [
            (Cubin, 75, none),
            (Cubin, 80, none),
            (Ptx, 80, Zstd),
            (Ptx, 90, Zstd),
            (Cubin, 100, none),
        ]
    );
    // Entry header sizes, from where each entry starts: 64, 64, 80, 80, 120.
    let header_size =
        |e: &Entry| u32::from_le_bytes(bytes[e.offset + 4..e.offset + 8].try_into().unwrap());
    let sizes: Vec<u32> = fb.entries.iter().map(header_size).collect();
    assert_eq!(sizes, [64, 64, 80, 80, 120]);
    assert!(entry(&fb, Ptx, 80).compatible_with(80));
    assert!(fb.ptx_for(86).unwrap().contains(".target sm_80"));
    assert!(fb.ptx_for(90).unwrap().contains(".target sm_90"));
    assert!(fb.ptx_for(120).unwrap().contains(".target sm_90"));
    assert_eq!(fb.ptx_for(75), None);
    for arch in [75, 80, 100] {
        assert!(fb.cubin_for(arch).unwrap().starts_with(ELF_MAGIC));
    }
    assert_eq!(fb.cubin_for(90), None);
    let sm80 = parse("multi_sm80.fatbin");
    for e in &fb.entries {
        let kernel = "_Z5mixedcsd6float4h3BigPx";
        let want = sm80.param_layout(kernel).unwrap();
        let got = match e.kind {
            Cubin => cubin_layout(&e.payload, kernel),
            Ptx => ptx_layout(e.ptx().unwrap(), kernel),
        };
        assert_eq!(got, want, "{:?} {}", e.kind, e.arch);
    }
}

#[test]
fn concatenated_entries_zstd() {
    let fb = parse("multi_concat.fatbin");
    assert_eq!(
        shape(&fb),
        [
            (Ptx, 80, Zstd),
            (Ptx, 90, Zstd),
            (Cubin, 80, Zstd),
            (Cubin, 90, Zstd),
        ]
    );
    assert!(fb.entries.iter().all(|e| e.concatenated));
    // The same code as without --concat.
    let plain = parse("multi_sm80.fatbin");
    assert_eq!(fb.cubin_for(80), plain.cubin_for(80));
    assert_eq!(fb.ptx_for(80), plain.ptx_for(80));
    assert!(fb.ptx_for(90).unwrap().contains(".target sm_90"));
    assert!(fb.cubin_for(90).unwrap().starts_with(ELF_MAGIC));
    let kernel = "_Z5saxpyifPKfPf";
    assert_eq!(
        cubin_layout(fb.cubin_for(90).unwrap(), kernel),
        plain.param_layout(kernel).unwrap()
    );
}

#[test]
fn concatenated_entries_lz4_with_mixed_sub_headers() {
    let fb = parse("params_concat_speed.fatbin");
    let none = Compression::None;
    assert_eq!(
        shape(&fb),
        [
            (Cubin, 80, none),
            (Ptx, 80, Lz4),
            (Ptx, 100, Lz4),
            (Cubin, 100, Lz4),
            (Cubin, 100, Lz4),
        ]
    );
    let concatenated: Vec<bool> = fb.entries.iter().map(|e| e.concatenated).collect();
    assert_eq!(concatenated, [false, true, true, true, true]);
    let variants: Vec<ArchVariant> = fb.entries.iter().map(|e| e.variant).collect();
    use ArchVariant::{ArchSpecific, Generic};
    assert_eq!(
        variants,
        [Generic, Generic, ArchSpecific, Generic, ArchSpecific]
    );
    let plain = parse("params_sm80_default.fatbin");
    assert_eq!(fb.cubin_for(80), plain.cubin_for(80));
    assert_eq!(fb.ptx_for(80), plain.ptx_for(80));
    assert!(fb.ptx_for(100).unwrap().contains(".target sm_100a"));
    assert!(fb.ptx_for(103).unwrap().contains(".target sm_80"));
}

#[test]
fn arch_and_family_specific_code() {
    let fb = parse("params_variants.fatbin");
    let variants: Vec<(EntryKind, u32, ArchVariant)> = fb
        .entries
        .iter()
        .map(|e| (e.kind, e.arch, e.variant))
        .collect();
    use ArchVariant::{ArchSpecific, FamilySpecific, Generic};
    assert_eq!(
        variants,
        [
            (Cubin, 90, ArchSpecific),
            (Ptx, 90, ArchSpecific),
            (Cubin, 100, FamilySpecific),
            (Ptx, 100, FamilySpecific),
            (Cubin, 90, Generic),
            (Ptx, 90, Generic),
        ]
    );
    assert!(fb.ptx_for(90).unwrap().contains(".target sm_90a"));
    assert!(fb.ptx_for(100).unwrap().contains(".target sm_100f"));
    // sm_103 is in the sm_100 family; sm_120 is not, and gets generic PTX.
    assert!(fb.ptx_for(103).unwrap().contains(".target sm_100f"));
    assert!(fb.ptx_for(120).unwrap().contains(".target sm_90\n"));
    assert_eq!(fb.ptx_for(89), None);
    assert!(!entry(&fb, Cubin, 100).compatible_with(120));
    assert!(entry(&fb, Cubin, 100).compatible_with(103));
}

#[test]
fn high_compression_ratios_and_the_limit() {
    let bytes = fixture("initdata_size.fatbin");
    let fb = FatBinary::parse(&bytes).unwrap();
    assert_eq!(shape(&fb), [(Cubin, 80, Zstd), (Ptx, 80, Zstd)]);
    let cubin = fb.cubin_for(80).unwrap();
    assert!(cubin.len() > 4 << 20, "{}", cubin.len());
    assert!(cubin.len() > 1000 * bytes.len());
    assert_eq!(fb.param_layout("_Z1gPc").unwrap(), layout(&[(0, 8)], 8));
    let err = FatBinary::parse_with_limit(&bytes, 1 << 20).unwrap_err();
    assert_eq!(
        err,
        FatbinError::TooLarge {
            offset: 16,
            limit: 1 << 20
        }
    );
}

#[test]
fn lto_ir_entries_are_skipped() {
    let fb = parse("params_lto.fatbin");
    assert_eq!(shape(&fb), [(Ptx, 80, Zstd)]);
    assert_eq!(fb.skipped.len(), 1);
    assert_eq!(fb.skipped[0].kind, 8);
    assert_eq!(fb.skipped[0].arch, 80);
}

#[test]
fn large_parameter_lists_use_kparam_info_v2() {
    let fb = parse("bigparam_sm80.fatbin");
    let large = layout(&[(0, 4), (4, 5000), (5008, 8)], 5016);
    let small = layout(&[(0, 2), (8, 8)], 16);
    let cubin = fb.cubin_for(80).unwrap();
    let text = fb.ptx_for(80).unwrap();
    for (kernel, want) in [("_Z5largei3BigPi", large), ("_Z5smallsPi", small)] {
        assert_eq!(fb.param_layout(kernel).unwrap(), want, "{kernel}");
        assert_eq!(cubin_layout(cubin, kernel), want, "{kernel} (cubin)");
        assert_eq!(ptx_layout(text, kernel), want, "{kernel} (PTX)");
    }
    // The large kernel really is described by EIATTR_KPARAM_INFO_V2.
    let file = object::File::parse(cubin).unwrap();
    use object::{Object, ObjectSection};
    let section = file.section_by_name(".nv.info._Z5largei3BigPi").unwrap();
    let attrs = nvinfo::parse_attributes(section.data().unwrap()).unwrap();
    assert!(attrs
        .iter()
        .any(|a| a.attribute == nvinfo::EIATTR_KPARAM_INFO_V2));
    assert!(!attrs
        .iter()
        .any(|a| a.attribute == nvinfo::EIATTR_KPARAM_INFO));
}

/// Reads a linked program's fatbins the way the client does: from each wrapper's
/// `data` pointer, asking `containers_len` how much to read.
#[test]
fn linked_program_wrappers_and_containers() {
    let section = fixture("app.nv_fatbin");
    let wrappers = fixture("app.nvFatBinSegment");
    let addr_text = String::from_utf8(fixture("app.nv_fatbin.addr")).unwrap();
    let base = u64::from_str_radix(addr_text.trim().trim_start_matches("0x"), 16).unwrap();

    // The whole section: four containers back to back.
    assert_eq!(containers_len(&section).unwrap(), section.len());
    let all = FatBinary::parse(&section).unwrap();
    assert_eq!(all.entries.len(), 7);

    let mut versions = Vec::new();
    let mut lens = Vec::new();
    for chunk in wrappers.chunks_exact(WRAPPER_LEN) {
        let w = parse_wrapper(chunk.try_into().unwrap()).unwrap();
        versions.push(w.version);
        let start = usize::try_from(w.data - base).unwrap();
        // Read 16 bytes, then as many as asked for, until it knows.
        let mut have = 16;
        let len = loop {
            match containers_len(&section[start..start + have]) {
                Ok(len) => break len,
                Err(FatbinError::NeedMore(n)) => {
                    assert!(n > have, "NeedMore({n}) after {have} bytes");
                    have = n;
                }
                Err(e) => panic!("{e}"),
            }
        };
        assert_eq!(len, have);
        lens.push(len);
        FatBinary::parse(&section[start..start + len]).unwrap();
    }
    assert_eq!(versions, [2, 1, 1, 1]);
    assert_eq!(lens.iter().sum::<usize>(), section.len());

    // The second wrapper's container is params.cu's.
    let w = parse_wrapper(wrappers[24..48].try_into().unwrap()).unwrap();
    let start = usize::try_from(w.data - base).unwrap();
    let fb = FatBinary::parse(&section[start..start + lens[1]]).unwrap();
    assert_eq!(fb.param_layout(SPEC_KERNEL).unwrap(), spec_layout());
    // All four containers together know every kernel.
    assert_eq!(all.param_layout(SPEC_KERNEL).unwrap(), spec_layout());
    assert!(all.param_layout("_Z5saxpyifPKfPf").is_ok());
}

#[test]
fn padding_between_and_after_containers() {
    let a = fixture("params_sm80_speed.fatbin");
    let b = fixture("multi_sm80.fatbin");
    let mut joined = a.clone();
    joined.extend([0u8; 8]);
    joined.extend(&b);
    joined.extend([0u8; 24]);
    let fb = FatBinary::parse(&joined).unwrap();
    assert_eq!(fb.entries.len(), 4);
    assert_eq!(fb.entries[2].offset, a.len() + 8 + 16);
    assert_eq!(containers_len(&joined).unwrap(), a.len() + 8 + b.len());
    assert_eq!(containers_len(&joined[..a.len() + 8]).unwrap(), a.len());
    // The second container's header cut short.
    assert_eq!(
        containers_len(&joined[..a.len() + 8 + 10]),
        Err(FatbinError::NeedMore(a.len() + 8 + 16))
    );
    assert_eq!(
        containers_len(&joined[..a.len() + 8 + 100]),
        Err(FatbinError::NeedMore(a.len() + 8 + b.len()))
    );
    // Not a container after the first: not counted.
    let mut other = a.clone();
    other.extend(b"\x01\x02\x03\x04 some other data");
    assert_eq!(containers_len(&other).unwrap(), a.len());
}

#[test]
fn errors_say_what_is_wrong() {
    let good = fixture("params_sm80_default.fatbin");

    assert_eq!(FatBinary::parse(&[]), Err(FatbinError::Empty { len: 0 }));
    assert_eq!(
        FatBinary::parse(&[0; 32]),
        Err(FatbinError::Empty { len: 32 })
    );

    let err = FatBinary::parse(b"not a fatbin at all").unwrap_err();
    assert!(matches!(
        err,
        FatbinError::BadContainerMagic { offset: 0, .. }
    ));
    assert!(err.to_string().contains("magic"), "{err}");

    let err = FatBinary::parse(&good[..good.len() - 1]).unwrap_err();
    assert!(
        matches!(err, FatbinError::Truncated { offset: 0, .. }),
        "{err}"
    );
    assert!(err.to_string().contains("truncated"), "{err}");

    let mut trailing = good.clone();
    trailing.extend(b"junk");
    assert_eq!(
        FatBinary::parse(&trailing),
        Err(FatbinError::TrailingGarbage { offset: good.len() })
    );

    // Entry header_size below 64.
    let mut bad = good.clone();
    bad[16 + 4] = 8;
    let err = FatBinary::parse(&bad).unwrap_err();
    assert!(
        matches!(
            err,
            FatbinError::InvalidField {
                field: "header_size",
                offset: 16,
                ..
            }
        ),
        "{err}"
    );
    assert!(err.to_string().contains("header_size"), "{err}");

    // A corrupted Zstandard stream (the PTX entry's payload).
    let ptx_at = FatBinary::parse(&good).unwrap().entries[1].offset;
    let mut bad = good.clone();
    for b in &mut bad[ptx_at + 80..ptx_at + 80 + 8] {
        *b = 0xff;
    }
    let err = FatBinary::parse(&bad).unwrap_err();
    assert!(
        matches!(err, FatbinError::Decompress { offset, .. } if offset == ptx_at),
        "{err}"
    );
    assert!(err.to_string().contains("Zstandard"), "{err}");

    // Container version.
    let mut bad = good.clone();
    bad[4] = 2;
    let err = FatBinary::parse(&bad).unwrap_err();
    assert!(err.to_string().contains("version"), "{err}");

    // containers_len on prefixes.
    assert_eq!(containers_len(&[]), Err(FatbinError::NeedMore(16)));
    assert_eq!(containers_len(&good[..3]), Err(FatbinError::NeedMore(16)));
    assert_eq!(containers_len(&good[..15]), Err(FatbinError::NeedMore(16)));
    assert_eq!(
        containers_len(&good[..16]),
        Err(FatbinError::NeedMore(good.len()))
    );
    assert_eq!(containers_len(&good).unwrap(), good.len());
    assert!(matches!(
        containers_len(b"\x7fELF"),
        Err(FatbinError::BadContainerMagic { offset: 0, .. })
    ));
}

#[test]
fn content_hash_is_blake3() {
    assert_eq!(
        content_hash(b""),
        [
            0xaf, 0x13, 0x49, 0xb9, 0xf5, 0xf9, 0xa1, 0xa6, 0xa0, 0x40, 0x4d, 0xea, 0x36, 0xdc,
            0xc9, 0x49, 0x9b, 0xcb, 0x25, 0xc9, 0xad, 0xc1, 0x12, 0xb7, 0xcc, 0x9a, 0x93, 0xca,
            0xe4, 0x1f, 0x32, 0x62
        ]
    );
    let a = fixture("params_sm80_default.fatbin");
    let b = fixture("params_sm80_speed.fatbin");
    assert_eq!(content_hash(&a), content_hash(&a.clone()));
    assert_ne!(content_hash(&a), content_hash(&b));
}
