//! The fatbin parser: containers, entries (LZ4 and Zstandard payloads),
//! wrappers, cubin `.nv.info` attributes and PTX entry signatures.

use rcud_fatbin::image::{self, ImageKind};
use rcud_fatbin::{nvinfo, ptx, EntryKind, FatBinary, FatbinError, WRAPPER_LEN};

/// Most bytes the payloads of one parse may decompress to: the server
/// allows more (1 GiB), but the parser's handling of the budget is the same
/// at any size, and the fuzzer's allocation limit must stay above it.
pub const DECOMPRESSED_LIMIT: u64 = 16 << 20;

/// Kernel names the layouts are asked for: the mangled names the fixtures
/// use, and one no fatbin has.
const KERNELS: &[&str] = &[
    "_Z1kPfi1Sc",
    "_Z6vecAddPKfS0_Pfi",
    "_Z8noparamsv",
    "_Z5mixedcsd6float4h3BigPx",
    "k",
    "absent",
];

/// Parses `data` as one or more fatbin containers, and as each of the other
/// images the client and the server read: a wrapper, a cubin, PTX text.
pub fn fatbin(data: &[u8]) {
    container_length(data);
    match FatBinary::parse_with_limit(data, DECOMPRESSED_LIMIT) {
        Ok(fb) => parsed(&fb, data),
        Err(FatbinError::TooLarge { limit, .. }) => assert_eq!(limit, DECOMPRESSED_LIMIT),
        Err(_) => {}
    }
    if let Some(raw) = data.first_chunk::<WRAPPER_LEN>() {
        if let Ok(w) = rcud_fatbin::parse_wrapper(raw) {
            assert_eq!(w.magic, rcud_fatbin::WRAPPER_MAGIC);
        }
    }
    match image::classify(data) {
        Some(ImageKind::Cubin) => {
            if let Some(len) = image::cubin_len(data) {
                assert!(len >= 64);
            }
            cubin(data);
        }
        Some(ImageKind::Ptx) => {
            let wrapped = image::wrap_ptx(data);
            assert_eq!(image::classify(&wrapped), Some(ImageKind::Fatbin));
            let fb = FatBinary::parse(&wrapped).expect("a wrapped PTX text parses");
            assert_eq!(fb.entries.len(), 1);
            assert_eq!(fb.entries[0].kind, EntryKind::Ptx);
        }
        _ => {}
    }
    // Any bytes as an `.nv.info` section.
    if let Ok(attrs) = nvinfo::parse_attributes(data) {
        let _ = nvinfo::layout_from_attributes(&attrs);
    }
    if let Ok(text) = std::str::from_utf8(data) {
        for kernel in KERNELS {
            if let Ok(Some(layout)) = ptx::entry_param_layout(text, kernel) {
                check_layout(&layout);
            }
        }
    }
}

/// `containers_len` either gives a length within the input or asks for
/// more than it was given.
fn container_length(data: &[u8]) {
    match rcud_fatbin::containers_len(data) {
        Ok(n) => assert!(n <= data.len(), "{n} > {}", data.len()),
        Err(FatbinError::NeedMore(n)) => assert!(n > data.len(), "{n} <= {}", data.len()),
        Err(_) => {}
    }
}

fn parsed(fb: &FatBinary, data: &[u8]) {
    let total: u64 = fb.entries.iter().map(|e| e.payload.len() as u64).sum();
    // Stored payloads are part of the input; only decompressed ones may add.
    assert!(total <= DECOMPRESSED_LIMIT + data.len() as u64);
    for e in &fb.entries {
        assert!(e.offset < data.len().max(1), "entry offset {}", e.offset);
        if let Some(text) = e.ptx() {
            assert_eq!(e.kind, EntryKind::Ptx);
            assert!(text.len() <= e.payload.len());
        }
        if e.kind == EntryKind::Cubin {
            cubin(&e.payload);
        }
    }
    for arch in [50, 75, 80, 86, 90, 100, 120] {
        if let Some(text) = fb.ptx_for(arch) {
            assert!(fb.entries.iter().any(|e| e.ptx() == Some(text)));
        }
        if let Some(bytes) = fb.cubin_for(arch) {
            assert!(fb.entries.iter().any(|e| e.payload == bytes));
        }
    }
    for kernel in KERNELS {
        if let Ok(layout) = fb.param_layout(kernel) {
            check_layout(&layout);
        }
    }
}

fn cubin(bytes: &[u8]) {
    for kernel in KERNELS {
        if let Ok(Some(layout)) = nvinfo::cubin_param_layout(bytes, kernel) {
            check_layout(&layout);
        }
    }
}

/// Every parameter lies inside the parameter buffer.
fn check_layout(layout: &rcud_fatbin::ParamLayout) {
    for p in &layout.params {
        let end = p
            .offset
            .checked_add(p.size)
            .expect("parameter end overflows");
        assert!(end <= layout.total_size, "{layout:?}");
    }
}
