//! Compression bombs and huge PTX cost bounded memory and time: a few
//! kilobytes of fatbin never become a gigabyte, a declared size or window is
//! never trusted beyond the cap, and PTX is scanned without holding its
//! tokens.
//!
//! The heap is measured through a counting allocator, so the tests run one
//! at a time.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

use rcud_fatbin::{
    flags, inflate_cap, ptx, DecompressLimits, FatBinary, FatbinError, MIN_INFLATE_CAP,
};

/// The global allocator: the system's, counting the bytes it holds.
struct Counting;

static HELD: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

fn took(n: usize) {
    let now = HELD.fetch_add(n, Relaxed) + n;
    PEAK.fetch_max(now, Relaxed);
}

// SAFETY: every method forwards to `System` with the caller's arguments,
// so `System`'s guarantees hold; the counters have no effect on memory.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: the caller meets `GlobalAlloc::alloc`'s contract.
        let p = unsafe { System.alloc(layout) };
        if !p.is_null() {
            took(layout.size());
        }
        p
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: as for `alloc`.
        let p = unsafe { System.alloc_zeroed(layout) };
        if !p.is_null() {
            took(layout.size());
        }
        p
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: `ptr` came from this allocator (so from `System`) with `layout`.
        unsafe { System.dealloc(ptr, layout) };
        HELD.fetch_sub(layout.size(), Relaxed);
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: as for `dealloc`, and `new_size` meets `realloc`'s contract.
        let p = unsafe { System.realloc(ptr, layout, new_size) };
        if !p.is_null() {
            HELD.fetch_sub(layout.size(), Relaxed);
            took(new_size);
        }
        p
    }
}

#[global_allocator]
static ALLOC: Counting = Counting;

static ALONE: Mutex<()> = Mutex::new(());

fn alone() -> MutexGuard<'static, ()> {
    ALONE.lock().unwrap_or_else(|p| p.into_inner())
}

const MIB: usize = 1 << 20;

/// `n` seconds of an optimised build (unoptimised ones are far slower).
fn secs(n: u64) -> Duration {
    Duration::from_secs(if cfg!(debug_assertions) { 20 * n } else { n })
}

/// `f`'s result, the most heap it held above what was held before, and
/// how long it took.
fn measured<T>(f: impl FnOnce() -> T) -> (T, usize, Duration) {
    let base = HELD.load(Relaxed);
    PEAK.store(base, Relaxed);
    let t = Instant::now();
    let r = f();
    let elapsed = t.elapsed();
    (r, PEAK.load(Relaxed).saturating_sub(base), elapsed)
}

/// A container of one PTX entry whose stored payload is `payload`, with
/// compression flag `flag` and the given decompressed size.
fn fatbin(payload: &[u8], flag: u64, decompressed: u64) -> Vec<u8> {
    let mut e = Vec::new();
    e.extend(1u16.to_le_bytes());
    e.extend(0x0101u16.to_le_bytes());
    e.extend(64u32.to_le_bytes());
    e.extend((payload.len() as u64).to_le_bytes());
    e.extend((payload.len() as u32).to_le_bytes());
    e.extend(0u32.to_le_bytes());
    e.extend(0u16.to_le_bytes());
    e.extend(8u16.to_le_bytes());
    e.extend(80u32.to_le_bytes());
    e.extend([0u8; 8]);
    e.extend((0x11 | flag).to_le_bytes());
    e.extend([0u8; 8]);
    e.extend(decompressed.to_le_bytes());
    e.extend(payload);
    let mut c = Vec::new();
    c.extend(0xBA55_ED50u32.to_le_bytes());
    c.extend(1u16.to_le_bytes());
    c.extend(16u16.to_le_bytes());
    c.extend((e.len() as u64).to_le_bytes());
    c.extend(e);
    c
}

/// A Zstandard frame without a content size, with window descriptor
/// `window_descriptor`: `blocks` RLE blocks of 128 KiB of spaces.
fn zstd_rle(window_descriptor: u8, blocks: usize) -> Vec<u8> {
    let mut f = vec![0x28, 0xb5, 0x2f, 0xfd, 0x00, window_descriptor];
    for i in 0..blocks {
        let last = u32::from(i + 1 == blocks);
        let header = last | (1 << 1) | ((128 << 10) << 3);
        f.extend(&header.to_le_bytes()[..3]);
        f.push(b' ');
    }
    f
}

/// An LZ4 block that repeats `text` for `len` bytes in all (one literal run,
/// one overlapping match whose length takes a byte per 255).
fn lz4_repeat(text: &[u8], len: usize) -> Vec<u8> {
    let mut b = vec![0xff];
    let mut n = text.len() - 15;
    while n >= 255 {
        b.push(255);
        n -= 255;
    }
    b.push(n as u8);
    b.extend(text);
    b.extend((text.len() as u16).to_le_bytes());
    let mut n = len - text.len() - 5 - 4 - 15;
    while n >= 255 {
        b.push(255);
        n -= 255;
    }
    b.push(n as u8);
    b.push(5 << 4);
    b.extend(b"\n\n\n\n\n");
    b
}

#[test]
fn a_zstd_bomb_stops_at_the_cap() {
    let _g = alone();
    // 32 KB that inflate to 1 GiB.
    let bomb = zstd_rle(7 << 3, 8192);
    assert!(bomb.len() < 33 << 10);
    for declared in [0, 1 << 30] {
        let image = fatbin(&bomb, flags::ZSTD, declared);
        assert_eq!(inflate_cap(image.len()), MIN_INFLATE_CAP);
        for parse in [FatBinary::parse, |b: &[u8]| {
            FatBinary::parse_with_limit(b, 1 << 30)
        }] {
            let (r, heap, time) = measured(|| parse(&image));
            let err = r.unwrap_err();
            assert_eq!(
                err,
                FatbinError::TooLarge {
                    offset: 16,
                    limit: MIN_INFLATE_CAP
                }
            );
            // Never more than the cap (nothing at all when the header
            // declares more), plus the decoder's window and a read's worth.
            let most = if declared == 0 { 70 * MIB } else { MIB };
            assert!(heap < most, "declared {declared}: {heap} bytes of heap");
            assert!(time < secs(5), "{time:?}");
        }
    }
    // Trusted input may opt out of the ratio bound, not of the total.
    let image = fatbin(&zstd_rle(7 << 3, 800), flags::ZSTD, 0);
    let trusting = DecompressLimits {
        max_total: 128 << 20,
        max_ratio: None,
    };
    let fb = FatBinary::parse_with_limits(&image, &trusting).unwrap();
    assert_eq!(fb.entries[0].payload.len(), 800 << 17);
    let image = fatbin(&bomb, flags::ZSTD, 0);
    let err = FatBinary::parse_with_limits(&image, &trusting).unwrap_err();
    assert!(matches!(err, FatbinError::TooLarge { limit, .. } if limit == 128 << 20));
}

#[test]
fn windows_and_sizes_are_not_trusted() {
    let _g = alone();
    // A frame asking for a 1 GiB window, and a 96 MiB one (the decoder
    // would reserve it), for a few bytes of output.
    for descriptor in [20 << 3, 16 << 3 | 4] {
        let image = fatbin(&zstd_rle(descriptor, 1), flags::ZSTD, 131072);
        let (r, heap, _) = measured(|| FatBinary::parse(&image));
        let err = r.unwrap_err();
        assert!(err.to_string().contains("window"), "{err}");
        assert!(heap < MIB, "{heap}");
    }
    // A single-segment frame whose content size claims 1 GiB.
    let mut frame = vec![0x28, 0xb5, 0x2f, 0xfd, 0xa0];
    frame.extend(((1u32 << 30) - 1).to_le_bytes());
    frame.extend([1, 0, 0, b' ']);
    let (r, heap, _) = measured(|| FatBinary::parse(&fatbin(&frame, flags::ZSTD, 0)));
    assert!(r.is_err());
    assert!(heap < MIB, "{heap}");

    // LZ4 of 1 GiB (4 MiB stored): refused before a byte is allocated.
    let text = b".version 8.0\n.target sm_80\n.address_size 64\n// padding\n";
    let bomb = lz4_repeat(text, 1 << 30);
    let image = fatbin(&bomb, flags::LZ4, 1 << 30);
    let cap = inflate_cap(image.len());
    assert!(cap > 64 * bomb.len() as u64 && cap < 1 << 30);
    let (r, heap, _) = measured(|| FatBinary::parse_with_limit(&image, 1 << 30));
    assert_eq!(
        r.unwrap_err(),
        FatbinError::TooLarge {
            offset: 16,
            limit: cap
        }
    );
    assert!(heap < MIB, "{heap}");
    // Within the cap, it inflates as declared.
    let small = lz4_repeat(text, 8 << 20);
    let fb = FatBinary::parse(&fatbin(&small, flags::LZ4, 8 << 20)).unwrap();
    assert!(fb.ptx_for(80).unwrap().starts_with(".version 8.0"));
}

#[test]
fn parameter_layouts_of_huge_ptx_hold_no_tokens() {
    let _g = alone();
    // 32 MiB of short tokens before the kernel.
    let mut text = String::from(".version 8.0\n");
    while text.len() < 32 * MIB {
        text.push_str("a , b ; c [ d ] // e\n");
    }
    text.push_str(".visible .entry _Z1kPfi(.param .u64 p, .param .u32 n) { ret; }\n");
    let (r, heap, time) = measured(|| ptx::entry_param_layout(&text, "_Z1kPfi"));
    let layout = r.unwrap().unwrap();
    assert_eq!(layout.total_size, 12);
    assert!(heap < MIB, "{heap} bytes of heap for 32 MiB of PTX");
    assert!(time < secs(5), "{time:?}");
    // A parameter list that never closes.
    let open = format!("{text}.entry g({}", ".param .u32 x, ".repeat(1000));
    assert!(ptx::entry_param_layout(&open, "g").is_err());
    // Alignments that would overflow the layout.
    let p = ".param .align 9223372036854775808 .b8 a[1]";
    let huge = format!(".entry h({p}, {p}, {p}) {{ }}");
    let err = ptx::entry_param_layout(&huge, "h").unwrap_err();
    assert!(err.to_string().contains("too large"), "{err}");
}
