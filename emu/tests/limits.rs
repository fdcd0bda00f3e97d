//! Hostile input costs bounded memory and time: device memory is committed
//! when touched and charged with its overhead, and the PTX front end (with
//! the fatbin parser in front of it, as the server uses them) refuses bombs
//! fast, without large allocations.
//!
//! The tests measure the whole process (heap through a counting allocator,
//! resident memory through /proc), so they run one at a time.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

use rcud_emu::kernel::{self, KernelError, LaunchConfig, Limits};
use rcud_emu::memory::allocation_charge;
use rcud_emu::ptx::{Module, ParseLimits, MAX_FUNC_SLOTS, MAX_PTX_TEXT};
use rcud_emu::{DeviceMemory, EmuGpu};
use rcud_fatbin::{flags, FatBinary, FatbinError};
use rcud_proto::CudaError;

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

/// Resident memory of the process, in bytes.
fn rss() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let line = status.lines().find(|l| l.starts_with("VmRSS:")).unwrap();
    let kib: u64 = line.split_whitespace().nth(1).unwrap().parse().unwrap();
    kib << 10
}

/// Resident memory of the mapping that holds host address `addr`, in bytes
/// (from /proc/self/smaps: unlike the process's, no other test's memory
/// coming and going shows in it).
fn mapping_rss(addr: usize) -> u64 {
    let smaps = std::fs::read_to_string("/proc/self/smaps").unwrap();
    let mut inside = false;
    for line in smaps.lines() {
        let range = line.split_whitespace().next().unwrap_or("");
        if let Some((a, b)) = range.split_once('-') {
            if let (Ok(a), Ok(b)) = (usize::from_str_radix(a, 16), usize::from_str_radix(b, 16)) {
                inside = (a..b).contains(&addr);
                continue;
            }
        }
        if inside {
            if let Some(kib) = line.strip_prefix("Rss:") {
                return kib
                    .trim()
                    .trim_end_matches("kB")
                    .trim()
                    .parse::<u64>()
                    .unwrap()
                    << 10;
            }
        }
    }
    panic!("no mapping holds {addr:#x}");
}

// ---- device memory ---------------------------------------------------------

/// Set in the process [`untouched_device_memory_costs_no_host_memory`]
/// runs itself in.
const ALONE_IN_PROCESS: &str = "RCUD_EMU_TEST_ALONE";

#[test]
fn untouched_device_memory_costs_no_host_memory() {
    let name = "untouched_device_memory_costs_no_host_memory";
    if std::env::var_os(ALONE_IN_PROCESS).is_none() {
        // In a process of its own: the memory other tests' threads take and
        // give back would blur the measure.
        let out = std::process::Command::new(std::env::current_exe().unwrap())
            .args(["--exact", name, "--test-threads", "1"])
            .env(ALONE_IN_PROCESS, "1")
            .output()
            .unwrap();
        assert!(
            out.status.success() && String::from_utf8_lossy(&out.stdout).contains("1 passed"),
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        return;
    }
    let _g = alone();
    let gpu = EmuGpu::new(0, 4 << 30);
    let mut mem = DeviceMemory::new(gpu.clone(), 0);
    let before = rss();
    let p = mem.malloc(2 << 30).unwrap();
    let grown = rss().saturating_sub(before);
    assert!(grown < 16 * MIB as u64, "2 GiB allocated: RSS grew {grown}");
    assert_eq!(mem.held(), 2 << 30);
    assert_eq!(gpu.free_memory(), 2 << 30);
    // The mapping may have merged with a neighbour: only differences count.
    let host = mem.slice(p, 1).unwrap().as_ptr() as usize;
    let untouched = mapping_rss(host);

    // A byte every 256 MiB: a page each.
    for i in 0..8u64 {
        mem.slice_mut(p + i * (256 << 20), 1).unwrap()[0] = 1;
    }
    assert_eq!(mem.slice(p + (256 << 20), 2).unwrap(), &[1, 0]);
    let grown = rss().saturating_sub(before);
    assert!(grown < 16 * MIB as u64, "8 pages touched: RSS grew {grown}");
    let touched = mapping_rss(host);
    assert!(
        touched - untouched <= 8 * 2 * MIB as u64,
        "8 pages touched: {untouched} then {touched} bytes resident"
    );

    // What is touched is committed, and only that (one of these pages
    // was touched above).
    mem.fill(p + (1 << 30), 0xab, 64 << 20).unwrap();
    let filled = mapping_rss(host);
    assert!(
        filled >= touched + (63 << 20) && filled <= touched + (66 << 20),
        "64 MiB written: {touched} then {filled} bytes resident"
    );
    // Zeroing gives pages back rather than committing them.
    mem.fill(p, 0, 2 << 30).unwrap();
    let zeroed = mapping_rss(host);
    assert!(
        zeroed <= untouched + MIB as u64,
        "zeroed: {zeroed} bytes resident"
    );
    assert!(mem
        .slice(p + (1 << 30), 64 << 20)
        .unwrap()
        .iter()
        .all(|&b| b == 0));
    let grown = rss().saturating_sub(before);
    assert!(grown < 16 * MIB as u64, "zeroed: RSS grew {grown}");

    mem.free(p).unwrap();
    let grown = rss().saturating_sub(before);
    assert!(grown < 16 * MIB as u64, "freed: RSS still {grown} above");
    assert_eq!(gpu.free_memory(), 4 << 30);
}

#[test]
fn huge_allocations_fail_cleanly() {
    let _g = alone();
    // More than the host could ever give: refused by the budget, or by the
    // host, as cudaErrorMemoryAllocation.
    let gpu = EmuGpu::new(0, u64::MAX);
    let mut mem = DeviceMemory::new(gpu, 0);
    for size in [1 << 62, u64::MAX - 4096, (1 << 40) + 1] {
        assert_eq!(mem.malloc(size), Err(CudaError::MEMORY_ALLOCATION));
    }
    assert_eq!(mem.held(), 0);
    assert!(mem.malloc(4096).is_ok());
}

#[test]
fn tiny_allocations_are_charged_with_their_overhead() {
    let _g = alone();
    // A 1 MiB device: a client cannot hold a million one-byte allocations.
    let gpu = EmuGpu::new(0, 1 << 20);
    let mut mem = DeviceMemory::new(gpu, 0);
    let mut n = 0u64;
    let (_, heap, _) = measured(|| {
        while n < 1_000_000 && mem.malloc(1).is_ok() {
            n += 1;
        }
    });
    let charge = allocation_charge(1).unwrap();
    assert!(charge >= 512, "{charge}");
    assert_eq!(n, (1 << 20) / charge);
    assert_eq!(mem.held(), n * charge);
    // What the charge stands for: the host memory it takes, and more.
    assert!(
        (heap as u64) <= mem.held(),
        "{n} allocations hold {heap} bytes of heap, charged {}",
        mem.held()
    );
}

// ---- PTX and fatbin front ends -------------------------------------------

const HEAD: &str = ".version 8.0\n.target sm_80\n.address_size 64\n";

/// A kernel `k` whose body is `body`.
fn kernel(body: &str) -> String {
    format!("{HEAD}.visible .entry k()\n{{\n{body}\n}}\n")
}

/// A fatbin of one PTX entry whose payload is `payload`, stored with `flag`
/// (LZ4 or Zstandard) and the given decompressed size.
fn fatbin(payload: &[u8], flag: u64, decompressed: u64) -> Vec<u8> {
    let mut e = Vec::new();
    e.extend(1u16.to_le_bytes()); // PTX
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

/// A Zstandard frame (no content size) of `text` in a raw block, then
/// `runs` RLE blocks of 128 KiB of `byte`.
fn zstd_bomb(text: &[u8], byte: u8, runs: usize) -> Vec<u8> {
    let mut f = vec![0x28, 0xb5, 0x2f, 0xfd, 0x00, 7 << 3];
    let raw = u32::try_from(text.len() << 3).unwrap();
    f.extend(&raw.to_le_bytes()[..3]);
    f.extend(text);
    for i in 0..runs {
        let last = u32::from(i + 1 == runs);
        let header = last | (1 << 1) | ((128 << 10) << 3);
        f.extend(&header.to_le_bytes()[..3]);
        f.push(byte);
    }
    f
}

/// An LZ4 block of `text` and then `text`'s last `period` bytes repeated
/// for `more` bytes: one literal run and one overlapping match, whose length
/// takes a byte per 255.
fn lz4_bomb(text: &[u8], period: usize, more: usize) -> Vec<u8> {
    fn length(out: &mut Vec<u8>, mut n: usize) {
        while n >= 255 {
            out.push(255);
            n -= 255;
        }
        out.push(n as u8);
    }
    let mut b = Vec::new();
    let lit = text.len();
    let ml = more - 4;
    b.push(((lit.min(15) as u8) << 4) | ml.min(15) as u8);
    if lit >= 15 {
        length(&mut b, lit - 15);
    }
    b.extend(text);
    b.extend((period as u16).to_le_bytes());
    if ml >= 15 {
        length(&mut b, ml - 15);
    }
    // The last sequence is literals only (at least 5 bytes of them).
    b.push(5 << 4);
    b.extend(b"\n\n\n\n\n");
    b
}

/// What the server does with an image: at most 1 GiB decompressed, then
/// the PTX.
fn load(image: &[u8]) -> Result<Module, String> {
    let fb = FatBinary::parse_with_limit(image, 1 << 30).map_err(|e| e.to_string())?;
    let text = fb.ptx_for(80).ok_or("no PTX")?;
    Module::parse(text).map_err(|e| e.to_string())
}

#[test]
fn a_compressed_ptx_bomb_fails_fast_in_bounded_memory() {
    let _g = alone();
    let prologue = kernel("").replace("\n}\n", "\n");
    // 33 KB of Zstandard that inflates to 1 GiB, without or with its size
    // in the entry header.
    let zstd = zstd_bomb(prologue.as_bytes(), b' ', 8192);
    assert!(zstd.len() < 40 << 10);
    for declared in [0, (1 << 30) + prologue.len() as u64] {
        let image = fatbin(&zstd, flags::ZSTD, declared);
        let (r, heap, time) = measured(|| FatBinary::parse_with_limit(&image, 1 << 30));
        let err = r.unwrap_err();
        assert!(
            matches!(err, FatbinError::TooLarge { limit, .. } if limit == 64 << 20),
            "{err}"
        );
        assert!(heap < 80 * MIB, "zstd bomb: {heap} bytes of heap");
        assert!(time < secs(10), "{time:?}");
    }

    // 4 MiB of LZ4 that inflates to 1 GiB of instructions.
    let text = format!("{prologue}\tadd.s32 %r1, %r2, %r3;\n");
    let lz4 = lz4_bomb(text.as_bytes(), 24, 1 << 30);
    let image = fatbin(&lz4, flags::LZ4, (text.len() + (1 << 30) + 5) as u64);
    let (r, heap, time) = measured(|| load(&image));
    let err = r.unwrap_err();
    assert!(err.contains("limit"), "{err}");
    assert!(heap < 16 * MIB, "lz4 bomb: {heap} bytes of heap");
    assert!(time < secs(5), "{time:?}");

    // Within the fatbin's cap (64 MiB), the PTX front end bounds the rest:
    // 60 MiB of `{` nests too deeply, of digits is no number, of a name is
    // one (long) name that no instruction follows.
    for byte in [b'{', b'7', b'a', b';'] {
        let image = fatbin(&zstd_bomb(prologue.as_bytes(), byte, 480), flags::ZSTD, 0);
        let (r, heap, time) = measured(|| load(&image));
        assert!(r.is_err(), "{}", byte as char);
        // The inflated text, and at most a copy of it.
        assert!(heap < 160 * MIB, "{}: {heap} bytes of heap", byte as char);
        assert!(time < secs(10), "{time:?}");
    }
}

#[test]
fn ptx_text_and_what_it_makes_are_bounded() {
    let _g = alone();
    // Longer than the front end takes: refused before anything is made.
    let long = " ".repeat(MAX_PTX_TEXT + 1);
    let (r, heap, _) = measured(|| Module::parse(&long));
    let e = r.unwrap_err();
    assert!(e.is_limit() && e.to_string().contains("PTX text"), "{e}");
    assert!(heap < MIB, "{heap}");
    drop(long);

    // 16 MiB of `ret;` (well-formed, degenerate): its IR would take 14
    // times the text, more than the budget of 8 times it.
    let body = "ret;".repeat(4 << 20);
    let text = kernel(&body);
    drop(body);
    let limits = ParseLimits::default();
    let budget = limits.budget_for(text.len()) as usize;
    let (r, heap, time) = measured(|| Module::parse(&text));
    let e = r.unwrap_err();
    assert!(e.is_limit() && e.to_string().contains("memory"), "{e}");
    // The budget, and the old buffer while the code's last doubling copies it.
    assert!(
        heap <= budget + budget / 2,
        "{heap} bytes for a budget of {budget}"
    );
    assert!(time < secs(20), "{time:?}");

    // Real-looking code of the same size fits, and says what it keeps.
    let mut body = String::from(".reg .b32 %r<4>;\n.reg .f32 %f<4>;\n.reg .pred %p<2>;\n");
    let mut i = 0;
    while body.len() < 16 * MIB {
        body.push_str("\tadd.s32 %r1, %r2, %r3;\n\tmul.f32 %f1, %f2, %f3;\n");
        body.push_str("\tsetp.lt.s32 %p1, %r1, 100;\n\tld.global.f32 %f2, [%rd1+16];\n");
        body.push_str(&format!("\t@%p1 bra $L__BB0_{i};\n$L__BB0_{i}:\n"));
        i += 1;
    }
    let text = kernel(&body).replace("{\n", "{\n.reg .b64 %rd<2>;\n");
    drop(body);
    let budget = limits.budget_for(text.len()) as usize;
    let (m, heap, time) = measured(|| Module::parse(&text).unwrap());
    assert!(heap <= budget, "{heap} bytes for a budget of {budget}");
    assert!(time < secs(20), "{time:?}");
    let approx = m.approx_bytes() as usize;
    let (_, freed, _) = measured(|| drop(m));
    let kept = heap - freed.min(heap);
    assert!(
        approx > kept / 2 && approx < 2 * heap,
        "approx_bytes {approx}, heap held {heap}"
    );
}

#[test]
fn declared_sizes_are_bounded() {
    let _g = alone();
    // Registers are made when used: a large range costs nothing, a huge
    // one is refused.
    let ok = kernel(".reg .b32 %r<16777216>;\nmov.b32 %r16777215, 1;\nret;");
    let (m, heap, _) = measured(|| Module::parse(&ok).unwrap());
    assert!(m.kernel_error("k").is_none());
    assert!(heap < 4 * MIB, "{heap}");
    for count in ["100000000", "4294967297", "18446744073709551615"] {
        let text = kernel(&format!(".reg .b32 %r<{count}>;\nret;"));
        let e = Module::parse(&text).unwrap_err();
        assert!(
            e.is_limit() && e.to_string().contains("register range"),
            "{e}"
        );
    }

    // A variable of a terabyte: refused. Of 4 GiB: costs nothing until loaded.
    let e = Module::parse(&format!("{HEAD}.global .b8 x[1099511627776];\n")).unwrap_err();
    assert!(
        e.is_limit() && e.to_string().contains("larger than 4 GiB"),
        "{e}"
    );
    let text = format!("{HEAD}.global .align 8 .b8 x[4294967296] = {{1, 2, 3}};\n");
    let (m, heap, _) = measured(|| Module::parse(&text).unwrap());
    assert!(heap < MIB, "{heap}");
    let x = &m.globals()[0];
    assert_eq!((x.size, &x.init[..]), (1 << 32, &[1, 2, 3][..]));
    assert!(m.approx_bytes() < MIB as u64);
    // Loading it takes the GPU's budget, not the host's memory.
    let mut mem = DeviceMemory::new(EmuGpu::new(0, 1 << 30), 0);
    assert_eq!(mem.malloc(x.size), Err(CudaError::MEMORY_ALLOCATION));

    // Alignments and block sizes that do not fit their fields.
    for text in [
        format!("{HEAD}.global .align 4294967296 .b8 x[4];\n"),
        format!("{HEAD}.visible .entry k() .maxntid 4294967296 {{ ret; }}\n"),
    ] {
        assert!(Module::parse(&text).is_err(), "{text}");
    }
}

#[test]
fn hostile_kernels_fail_at_load_or_launch() {
    let _g = alone();
    let launch = |text: &str, block: u32, shared: u32| {
        let m = Module::parse(text).unwrap();
        let mut mem = DeviceMemory::new(EmuGpu::new(0, 1 << 30), 0);
        let config = LaunchConfig {
            grid: [1, 1, 1],
            block: [block, 1, 1],
            dynamic_shared: shared,
            cooperative: false,
        };
        let limits = Limits {
            timeout: secs(5),
            threads: 1,
            ..Limits::default()
        };
        measured(|| {
            kernel::launch(
                &m,
                "k",
                &config,
                &[],
                &Default::default(),
                &mut mem,
                &limits,
            )
        })
    };
    // Giant shared memory, static or dynamic.
    let text = kernel(".shared .align 4 .b8 s[1099511627776];\nmov.u64 %rd1, s;\nret;")
        .replace("{\n", "{\n.reg .b64 %rd<2>;\n");
    let (r, heap, _) = launch(&text, 32, 0);
    assert!(
        matches!(r, Err(KernelError::InvalidConfiguration(_))),
        "{r:?}"
    );
    assert!(heap < MIB, "{heap}");
    let (r, _, _) = launch(&kernel("ret;"), 32, u32::MAX);
    assert!(
        matches!(r, Err(KernelError::InvalidConfiguration(_))),
        "{r:?}"
    );

    // Local memory per thread past what a thread may have.
    let text = kernel(".local .align 4 .b8 a[16000000];\n.local .align 4 .b8 b[16000000];\nret;");
    let (r, heap, _) = launch(&text, 1024, 0);
    assert!(matches!(r, Err(KernelError::Unsupported(_))), "{r:?}");
    assert!(heap < MIB, "{heap}");

    // More registers than a warp may hold: the kernel cannot run.
    let mut body = String::from(".reg .b32 %r<200000>;\n");
    for i in 0..=MAX_FUNC_SLOTS {
        body.push_str(&format!("mov.b32 %r{i}, 1;\n"));
    }
    let text = kernel(&body);
    let m = Module::parse(&text).unwrap();
    let e = m.kernel_error("k").unwrap();
    assert!(e.to_string().contains("registers"), "{e}");
    let (r, heap, _) = launch(&text, 1024, 0);
    assert!(matches!(r, Err(KernelError::Unsupported(_))), "{r:?}");
    assert!(heap < 64 * MIB, "{heap}");
}

#[test]
fn deep_nesting_is_an_error_not_a_crash() {
    let _g = alone();
    for text in [
        kernel(&"{".repeat(1_000_000)),
        kernel(&format!("{}ret;{}", "{".repeat(10_000), "}".repeat(10_000))),
        kernel(&format!("mov.b32 %r1, {};", "{".repeat(1_000_000))),
        kernel(&format!("call f, {};", "(".repeat(1_000_000))),
        format!("{HEAD}.global .b8 x[2] = {};", "{".repeat(1_000_000)),
        format!(
            "{HEAD}.visible .entry .attribute({}) k() {{ ret; }}",
            "(".repeat(1_000_000)
        ),
    ] {
        let (r, heap, time) = measured(|| Module::parse(&text));
        let e = r.unwrap_err();
        assert!(e.to_string().contains("line"), "{e}");
        assert!(heap < 16 * MIB, "{heap}");
        assert!(time < secs(5), "{time:?}");
    }
    // Deep and wide call graphs: depth is cut, the walk is bounded.
    let mut text = String::from(HEAD);
    for i in (0..3000).rev() {
        if i == 2999 {
            text.push_str(&format!(".func f{i}() {{ ret; }}\n"));
        } else {
            text.push_str(&format!(".func f{i}() {{ call f{}, (); ret; }}\n", i + 1));
        }
    }
    for k in 0..300 {
        text.push_str(&format!(".visible .entry k{k}() {{ call f0, (); ret; }}\n"));
    }
    let (r, _, time) = measured(|| Module::parse(&text));
    let m = r.unwrap();
    assert_eq!(m.kernel_names().len(), 300);
    assert!(time < secs(20), "{time:?}");
}

#[test]
fn translation_time_grows_linearly() {
    let _g = alone();
    // Each of these made the translator search all it had seen for every
    // new instruction: minutes for a few megabytes.
    let n = 100_000;
    let mut products = String::from(".reg .f32 %f<300000>;\n");
    for i in 3..n {
        products.push_str(&format!("mul.f32 %f{i}, %f1, %f2;\n"));
    }
    let mut ranges = String::new();
    for i in 0..n {
        ranges.push_str(&format!(".reg .b32 %a{i}_<2>;\n"));
    }
    for i in 0..n {
        ranges.push_str(&format!("mov.b32 %a{i}_1, 1;\n"));
    }
    let mut symbols = String::from(HEAD);
    for i in 0..n {
        symbols.push_str(&format!(".global .u32 g{i};\n"));
    }
    symbols.push_str(".visible .entry k()\n{\n.reg .b64 %rd<2>;\n");
    for i in 0..n {
        symbols.push_str(&format!("mov.u64 %rd1, g{i};\n"));
    }
    symbols.push_str("ret;\n}\n");
    for text in [kernel(&products), kernel(&ranges), symbols] {
        let (r, _, time) = measured(|| Module::parse(&text));
        let m = r.unwrap();
        assert!(m.kernel_error("k").is_none());
        assert!(time < secs(15), "{time:?}");
    }
}

#[test]
fn parsing_stops_at_its_deadline() {
    let _g = alone();
    let text =
        kernel(&"add.s32 %r1, %r2, %r3;\n".repeat(200_000)).replace("{\n", "{\n.reg .b32 %r<4>;\n");
    let limits = ParseLimits {
        timeout: Duration::ZERO,
        ..ParseLimits::default()
    };
    let (r, _, time) = measured(|| Module::parse_with_limits(&text, &limits));
    let e = r.unwrap_err();
    assert!(e.is_limit() && e.to_string().contains("longer than"), "{e}");
    assert!(time < secs(2), "{time:?}");
    assert!(Module::parse(&text).is_ok());
}

#[test]
fn real_ptx_fits_the_budget_with_room_to_spare() {
    let _g = alone();
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/ptx");
    let mut files: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "ptx"))
        .collect();
    files.sort();
    assert!(files.len() >= 10);
    // With a floor of 64 KiB rather than 64 MiB (for the fixed costs of a
    // small module), at half the default bytes per byte of text: the
    // default leaves room for twice as much.
    let tight = ParseLimits {
        min_bytes: 64 << 10,
        bytes_per_text_byte: rcud_emu::ptx::BYTES_PER_TEXT_BYTE / 2,
        ..ParseLimits::default()
    };
    for f in &files {
        let text = std::fs::read_to_string(f).unwrap();
        let (m, heap, _) = measured(|| Module::parse_with_limits(&text, &tight));
        let m = m.unwrap_or_else(|e| panic!("{}: {e}", f.display()));
        let ratio = heap as f64 / text.len() as f64;
        assert!(ratio < 8.0, "{}: {heap} bytes of heap", f.display());
        let approx = m.approx_bytes() as f64 / text.len() as f64;
        assert!((1.0..4.0).contains(&approx), "{}: {approx}", f.display());
    }
    // The budget is enforced.
    let text = std::fs::read_to_string(&files[0]).unwrap();
    let starved = ParseLimits {
        min_bytes: 0,
        bytes_per_text_byte: 0,
        ..ParseLimits::default()
    };
    let e = Module::parse_with_limits(&text, &starved).unwrap_err();
    assert!(e.is_limit(), "{e}");
}
