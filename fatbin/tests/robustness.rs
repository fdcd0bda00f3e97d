//! Truncated, bit-flipped and otherwise damaged fatbins give errors, never
//! panics. A deterministic, quick stand-in for the cargo-fuzz targets in
//! `fatbin/fuzz`.

use rcud_fatbin::{containers_len, nvinfo, ptx, EntryKind, FatBinary, FatbinError};

const FIXTURES: &[&str] = &[
    "params_sm80_default.fatbin",
    "params_sm80_none.fatbin",
    "params_sm80_speed.fatbin",
    "params_sm80_size.fatbin",
    "params_cubin_only.fatbin",
    "params_ptx_only.fatbin",
    "params_lto.fatbin",
    "params_variants.fatbin",
    "params_concat_speed.fatbin",
    "multi_sm80.fatbin",
    "multi_archs.fatbin",
    "multi_concat.fatbin",
    "bigparam_sm80.fatbin",
    "initdata_size.fatbin",
    "app.nv_fatbin",
];

const KERNELS: &[&str] = &["_Z1kPfi1Sc", "_Z8noparamsv", "_Z5mixedcsd6float4h3BigPx"];

fn fixture(name: &str) -> Vec<u8> {
    let path = format!("{}/tests/fixtures/{name}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// xorshift64*: a small deterministic generator, so failures reproduce.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

/// Runs everything a caller would on `bytes`; only a panic can fail.
fn exercise(bytes: &[u8], deep: bool) {
    match containers_len(bytes) {
        Ok(n) => assert!(n <= bytes.len()),
        Err(FatbinError::NeedMore(n)) => assert!(n > bytes.len()),
        Err(_) => {}
    }
    let Ok(fb) = FatBinary::parse(bytes) else {
        return;
    };
    for arch in [75, 80, 90, 100, 120] {
        let _ = fb.ptx_for(arch);
        let _ = fb.cubin_for(arch);
    }
    if deep {
        for kernel in KERNELS {
            let _ = fb.param_layout(kernel);
        }
    }
}

/// Offsets of the container and entry headers of a fixture, with their lengths.
fn header_ranges(bytes: &[u8]) -> Vec<(usize, usize)> {
    let fb = FatBinary::parse(bytes).unwrap();
    let mut ranges = vec![(0, 16)];
    for e in &fb.entries {
        let len = u32::from_le_bytes(bytes[e.offset + 4..e.offset + 8].try_into().unwrap());
        ranges.push((e.offset, len as usize));
    }
    ranges.sort_unstable();
    ranges.dedup();
    ranges
}

#[test]
fn truncated_fixtures() {
    for name in FIXTURES {
        let bytes = fixture(name);
        let mut lengths: Vec<usize> = (0..bytes.len().min(256)).collect();
        lengths.extend((256..bytes.len()).step_by(61));
        for (start, len) in header_ranges(&bytes) {
            for edge in [start, start + len] {
                lengths.extend(edge.saturating_sub(3)..(edge + 3).min(bytes.len()));
            }
        }
        for len in lengths {
            let prefix = &bytes[..len];
            exercise(prefix, false);
            // A prefix parses only when it ends at a container boundary.
            if FatBinary::parse(prefix).is_ok() {
                assert!(
                    containers_len(prefix).is_ok(),
                    "{name}: a prefix of {len} bytes parsed"
                );
            }
        }
    }
}

#[test]
fn every_header_bit_flipped() {
    for name in FIXTURES {
        let bytes = fixture(name);
        for (start, len) in header_ranges(&bytes) {
            for at in start..start + len {
                for bit in 0..8 {
                    let mut damaged = bytes.clone();
                    damaged[at] ^= 1 << bit;
                    exercise(&damaged, false);
                }
            }
        }
    }
}

#[test]
fn header_fields_set_to_extremes() {
    for name in FIXTURES {
        let bytes = fixture(name);
        for (start, len) in header_ranges(&bytes) {
            for field in (start..start + len.min(72)).step_by(4) {
                for value in [0u32, 1, 0x7fff_ffff, 0xffff_ffff, 0x8000_0000, 64, 8] {
                    let mut damaged = bytes.clone();
                    damaged[field..field + 4].copy_from_slice(&value.to_le_bytes());
                    exercise(&damaged, true);
                }
            }
        }
    }
}

#[test]
fn random_bit_flips_anywhere() {
    let mut rng = Rng(0x5eed_f00d_dead_beef);
    for name in FIXTURES {
        let bytes = fixture(name);
        for _ in 0..150 {
            let mut damaged = bytes.clone();
            for _ in 0..1 + rng.below(4) {
                let at = rng.below(damaged.len());
                damaged[at] ^= 1 << rng.below(8);
            }
            exercise(&damaged, true);
        }
    }
}

#[test]
fn damaged_payloads_of_every_compression() {
    // Flip bits inside compressed payloads only, where decompressors see them.
    let mut rng = Rng(42);
    for name in [
        "params_sm80_default.fatbin",
        "params_sm80_speed.fatbin",
        "params_sm80_size.fatbin",
        "params_concat_speed.fatbin",
        "multi_concat.fatbin",
    ] {
        let bytes = fixture(name);
        let fb = FatBinary::parse(&bytes).unwrap();
        for e in &fb.entries {
            let header_len =
                u32::from_le_bytes(bytes[e.offset + 4..e.offset + 8].try_into().unwrap()) as usize;
            let size = u64::from_le_bytes(bytes[e.offset + 8..e.offset + 16].try_into().unwrap());
            let payload = e.offset + header_len..e.offset + header_len + size as usize;
            for _ in 0..120 {
                let mut damaged = bytes.clone();
                for _ in 0..1 + rng.below(3) {
                    let at = payload.start + rng.below(payload.len());
                    damaged[at] ^= 1 << rng.below(8);
                }
                exercise(&damaged, true);
            }
        }
    }
}

#[test]
fn damaged_cubins_and_nv_info() {
    use object::{Object, ObjectSection};
    let fb = FatBinary::parse(&fixture("params_sm80_none.fatbin")).unwrap();
    let cubin = fb.cubin_for(80).unwrap().to_vec();
    let file = object::File::parse(&*cubin).unwrap();
    let (start, len) = file
        .section_by_name(".nv.info._Z1kPfi1Sc")
        .unwrap()
        .file_range()
        .unwrap();
    let (start, len) = (start as usize, len as usize);
    let check = |bytes: &[u8]| {
        for kernel in KERNELS {
            let _ = nvinfo::cubin_param_layout(bytes, kernel);
        }
    };
    // Every bit of the kernel's .nv.info section and of the ELF header.
    for at in (start..start + len).chain(0..64) {
        for bit in 0..8 {
            let mut damaged = cubin.clone();
            damaged[at] ^= 1 << bit;
            check(&damaged);
        }
    }
    // Truncations and random flips of the whole cubin.
    for cut in (0..cubin.len()).step_by(7) {
        check(&cubin[..cut]);
    }
    let mut rng = Rng(7);
    for _ in 0..400 {
        let mut damaged = cubin.clone();
        let at = rng.below(damaged.len());
        damaged[at] = rng.next() as u8;
        check(&damaged);
    }
    // Attribute walking alone, on random bytes.
    for _ in 0..2000 {
        let n = rng.below(64);
        let bytes: Vec<u8> = (0..n).map(|_| (rng.next() % 6) as u8).collect();
        if let Ok(attrs) = nvinfo::parse_attributes(&bytes) {
            let _ = nvinfo::layout_from_attributes(&attrs);
        }
    }
}

#[test]
fn damaged_ptx_signatures() {
    let fb = FatBinary::parse(&fixture("multi_sm80.fatbin")).unwrap();
    let text = fb
        .entries
        .iter()
        .find(|e| e.kind == EntryKind::Ptx)
        .and_then(|e| e.ptx())
        .unwrap()
        .to_owned();
    let kernel = "_Z5mixedcsd6float4h3BigPx";
    let start = text.find(&format!(".entry {kernel}")).unwrap();
    let end = start + text[start..].find(')').unwrap() + 1;
    for cut in start..=end {
        let _ = ptx::entry_param_layout(&text[..cut], kernel);
    }
    let alphabet = b"()[],.;/*\"\n 0123456789abx_$";
    let mut rng = Rng(99);
    for _ in 0..3000 {
        let mut damaged = text.as_bytes()[..end + 20].to_vec();
        for _ in 0..1 + rng.below(3) {
            let at = start + rng.below(end - start);
            damaged[at] = alphabet[rng.below(alphabet.len())];
        }
        let damaged = String::from_utf8(damaged).unwrap();
        let _ = ptx::entry_param_layout(&damaged, kernel);
    }
}
