//! Tests of the `cuda` backend. Those marked "GPU" need `libcuda.so.1` and a
//! device; without them they print `skipped: <what is missing>` and pass.

use std::collections::HashMap;
use std::path::PathBuf;
use std::process::Command;

use parking_lot::Mutex;

use super::*;
use crate::backend::{select_backend, BackendKind, EmuSettings};

/// The backend on this host's GPUs, or `None` after saying what is missing.
fn gpu(test: &str) -> Option<CudaBackend> {
    match CudaBackend::new() {
        Ok(b) => Some(b),
        Err(why) => {
            eprintln!("{test}: skipped: no usable NVIDIA GPU: {why}");
            None
        }
    }
}

/// A host payload served from a slice, in the pieces the backend asks for.
struct SliceSource<'a> {
    data: &'a [u8],
    pos: usize,
    reads: usize,
}

impl<'a> SliceSource<'a> {
    fn new(data: &'a [u8]) -> Self {
        Self {
            data,
            pos: 0,
            reads: 0,
        }
    }
}

impl HostSource for SliceSource<'_> {
    fn read_into(&mut self, dst: &mut [u8]) -> Result<(), TransportError> {
        let end = self.pos + dst.len();
        let src = self.data.get(self.pos..end).ok_or(TransportError::Closed)?;
        dst.copy_from_slice(src);
        self.pos = end;
        self.reads += 1;
        Ok(())
    }
}

fn pattern(len: usize, seed: u32) -> Vec<u8> {
    let mut x = seed.wrapping_mul(2_654_435_761).max(1);
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            x as u8
        })
        .collect()
}

fn read_back(ctx: &mut dyn DeviceContext, ptr: u64, len: u64) -> Vec<u8> {
    let mut out = Vec::new();
    ctx.copy_to_host(ptr, len, &mut |piece| {
        out.extend_from_slice(piece);
        Ok(())
    })
    .unwrap();
    out
}

// ---- without a GPU ----------------------------------------------------

#[test]
fn backend_cuda_says_what_is_missing() {
    let emu = EmuSettings::default();
    match (CudaBackend::new(), select_backend(BackendKind::Cuda, &emu)) {
        (Ok(_), Ok(b)) => assert_eq!(b.name(), "cuda"),
        (Err(why), Err(e)) => {
            let text = e.to_string();
            assert!(text.contains("backend `cuda` is not available"), "{text}");
            assert!(text.contains("--backend emu"), "{text}");
            assert!(text.contains(&why.to_string()), "{text}");
            match why {
                Unavailable::Library(_) => assert!(text.contains("libcuda.so.1"), "{text}"),
                Unavailable::NoDevice(_) => assert!(text.contains("no CUDA device"), "{text}"),
                Unavailable::Driver(_) => {}
            }
        }
        (probe, selected) => panic!(
            "the probe ({}) and select_backend ({}) disagree",
            probe.map_or_else(|e| e.to_string(), |b| b.summary()),
            selected.map_or_else(|e| e.to_string(), |b| b.name().to_string())
        ),
    }
}

#[test]
fn backend_auto_takes_a_gpu_when_there_is_one_else_the_emulated_device() {
    let emu = EmuSettings::default();
    let chosen = select_backend(BackendKind::Auto, &emu).unwrap();
    let expected = if CudaBackend::new().is_ok() {
        "cuda"
    } else {
        "emu"
    };
    assert_eq!(chosen.name(), expected);
}

#[test]
fn a_missing_driver_library_is_named() {
    let why = CudaBackend::with_library("/nonexistent/libcuda.so.1").unwrap_err();
    assert!(matches!(why, Unavailable::Library(_)), "{why}");
    let text = why.to_string();
    assert!(text.contains("/nonexistent/libcuda.so.1"), "{text}");
    assert!(text.contains("NVIDIA driver"), "{text}");
}

#[test]
fn launch_configurations_are_checked_against_the_device() {
    let limits = Limits {
        max_block: [1024, 1024, 64],
        max_grid: [i32::MAX, 65_535, 65_535],
        max_threads: 1024,
    };
    assert!(limits.check([1, 1, 1], [1024, 1, 1]).is_ok());
    assert!(limits
        .check([u32::MAX >> 1, 65_535, 65_535], [32, 32, 1])
        .is_ok());
    for (grid, block) in [
        ([1, 1, 1], [2048, 1, 1]),
        ([1, 1, 1], [1, 1, 65]),
        ([1, 65_536, 1], [1, 1, 1]),
        ([0, 1, 1], [32, 1, 1]),
        ([1, 1, 1], [0, 1, 1]),
        ([1, 1, 1], [64, 32, 1]),
        ([u32::MAX, 1, 1], [1, 1, 1]),
    ] {
        let f = limits.check(grid, block).unwrap_err();
        assert_eq!(f.code, CudaError::INVALID_VALUE, "{grid:?} {block:?}");
    }
}

#[test]
fn images_must_match_their_hash_and_be_fat_binaries() {
    let cache = ImageCache::default();
    let image_for = |hash, image| cache.get_or_parse("a", hash, image, check_image);
    // A miss without an image asks the client for it, silently.
    let f = image_for([7; 32], None).unwrap_err();
    assert_eq!(f, Failure::from(CudaError::INVALID_VALUE));
    // An image under another image's name.
    let bytes = b"garbage".to_vec();
    let f = image_for([7; 32], Some(bytes.clone())).unwrap_err();
    assert_eq!(f.code, CudaError::INVALID_VALUE);
    assert!(f.message.contains("hash"), "{f}");
    // Not a fat binary: refused before the driver sees it.
    let hash = rcud_fatbin::content_hash(&bytes);
    let f = image_for(hash, Some(bytes)).unwrap_err();
    assert_eq!(f.code, CudaError::INVALID_KERNEL_IMAGE);
}

#[test]
fn names_with_nul_bytes_are_refused() {
    assert_eq!(
        c_name("k\0ernel", CudaError::INVALID_DEVICE_FUNCTION)
            .unwrap_err()
            .code,
        CudaError::INVALID_DEVICE_FUNCTION
    );
    assert_eq!(
        c_name("_Z1kPi", CudaError::INVALID_SYMBOL)
            .unwrap()
            .as_bytes(),
        b"_Z1kPi"
    );
}

// ---- with the fake driver (fake_libcuda.c) ------------------------------
//
// The backend and its FFI layer against a stand-in for libcuda that keeps
// device memory in host memory and runs queued work only when it is waited
// for. Needs a C compiler (`$CC`, else `cc`); without one these tests say so
// and pass.

/// `fake_libcuda.c` built with `defines`, as `<target dir>/rcud-fake-libcuda/<variant>/libcuda.so.1`.
fn fake_driver(test: &str, variant: &'static str, defines: &[&str]) -> Option<PathBuf> {
    static BUILT: Mutex<Option<HashMap<&'static str, Option<PathBuf>>>> = Mutex::new(None);
    let mut built = BUILT.lock();
    let built = built.get_or_insert_with(HashMap::new);
    if let Some(result) = built.get(variant) {
        if result.is_none() {
            eprintln!("{test}: skipped: the fake driver library could not be built");
        }
        return result.clone();
    }
    let source = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/src/backend/cuda/fake_libcuda.c"
    );
    // Next to the test executable, in the target directory.
    let dir = std::env::current_exe().ok().and_then(|exe| {
        exe.parent()
            .map(|d| d.join("rcud-fake-libcuda").join(variant))
    });
    let result = dir.and_then(|dir| {
        std::fs::create_dir_all(&dir).ok()?;
        let out = dir.join("libcuda.so.1");
        let cc = std::env::var("CC").unwrap_or_else(|_| "cc".into());
        let status = Command::new(&cc)
            .args(["-shared", "-fPIC", "-O1", "-o"])
            .arg(&out)
            .arg(source)
            .args(defines)
            .status();
        match status {
            Ok(s) if s.success() => Some(out),
            Ok(s) => {
                eprintln!("{test}: skipped: {cc} failed to build {source}: {s}");
                None
            }
            Err(e) => {
                eprintln!("{test}: skipped: no C compiler ({cc}: {e})");
                None
            }
        }
    });
    built.insert(variant, result.clone());
    result
}

fn fake_backend(test: &str) -> Option<CudaBackend> {
    let lib = fake_driver(test, "one-device", &[])?;
    Some(CudaBackend::with_library(lib).unwrap())
}

/// The smallest fat binary `rcud-fatbin` accepts: one container, no entries.
fn empty_fatbin() -> Vec<u8> {
    let mut b = Vec::new();
    b.extend_from_slice(&rcud_fatbin::CONTAINER_MAGIC.to_le_bytes());
    b.extend_from_slice(&1u16.to_le_bytes());
    b.extend_from_slice(&16u16.to_le_bytes());
    b.extend_from_slice(&0u64.to_le_bytes());
    b
}

/// Parameters of the fake's `fill(unsigned char *p, size_t n, unsigned char v)`.
fn fill_params(p: u64, n: u64, v: u8) -> Vec<u8> {
    let mut params = Vec::new();
    params.extend_from_slice(&p.to_le_bytes());
    params.extend_from_slice(&n.to_le_bytes());
    params.push(v);
    params
}

const FILL: &str = "_Z4fillPhmh";

fn launch_of(function: u32, params: &[u8]) -> KernelLaunch<'_> {
    KernelLaunch {
        function,
        grid: [1, 1, 1],
        block: [32, 1, 1],
        shared_mem: 0,
        params,
        cooperative: false,
    }
}

#[test]
fn fake_driver_devices_are_described_with_the_remote_view() {
    let Some(b) = fake_backend("fake_driver_devices_are_described_with_the_remote_view") else {
        return;
    };
    assert_eq!(b.name(), "cuda");
    assert_eq!(b.gpu_count(), 1);
    assert_eq!(b.driver_version(), 13000);
    let (p, attrs) = b.device_info(0).unwrap();
    assert_eq!(p.name, "Fake GPU");
    assert_eq!(p.total_global_mem, 1 << 30);
    assert_eq!(p.uuid[0], 1);
    assert_eq!((p.major, p.minor, p.warp_size), (8, 0, 32));
    assert_eq!(p.max_threads_dim, [1024, 1024, 64]);
    // The fake says it has managed memory; a remote client cannot use it.
    assert_eq!(p.managed_memory, 0);
    assert!(attrs.contains(&(DeviceAttr::MANAGED_MEMORY.0, 0)));
    // Attributes the driver rejects are left out.
    assert!(!attrs
        .iter()
        .any(|&(a, _)| a == DeviceAttr::TENSOR_MAP_LARGE_TENSOR_MIN_SIZE.0));
    assert_eq!(b.dma_buf_support(0), Ok(()));
    assert!(b.summary().contains("Fake GPU"), "{}", b.summary());
}

#[test]
fn fake_driver_without_devices_is_reported_as_such() {
    let test = "fake_driver_without_devices_is_reported_as_such";
    if let Some(lib) = fake_driver(test, "no-device", &["-DFAKE_DEVICES=0"]) {
        let why = CudaBackend::with_library(lib).unwrap_err();
        assert!(matches!(why, Unavailable::NoDevice(_)), "{why}");
        assert!(why.to_string().contains("no CUDA device"), "{why}");
    }
    if let Some(lib) = fake_driver(test, "init-no-device", &["-DFAKE_INIT_ERROR=100"]) {
        let why = CudaBackend::with_library(lib).unwrap_err();
        assert!(matches!(why, Unavailable::NoDevice(_)), "{why}");
    }
    if let Some(lib) = fake_driver(test, "init-stub", &["-DFAKE_INIT_ERROR=34"]) {
        let why = CudaBackend::with_library(lib).unwrap_err();
        assert!(matches!(why, Unavailable::Driver(_)), "{why}");
        assert!(why.to_string().contains("cuInit"), "{why}");
    }
}

#[test]
fn fake_driver_staged_copies_wait_before_reusing_a_chunk() {
    let Some(b) = fake_backend("fake_driver_staged_copies_wait_before_reusing_a_chunk") else {
        return;
    };
    let mut ctx = b.open(0, 0).unwrap();
    let chunk = STAGING_CHUNK;
    for (i, len) in [
        1,
        chunk - 1,
        chunk,
        chunk + 1,
        3 * chunk,
        3 * chunk + 1,
        10 * chunk + 77,
    ]
    .into_iter()
    .enumerate()
    {
        let data = pattern(len, i as u32 + 100);
        let ptr = ctx.malloc(len as u64).unwrap();
        let mut src = SliceSource::new(&data);
        ctx.copy_from_host(ptr, len as u64, &mut src).unwrap();
        assert_eq!(src.reads, len.div_ceil(chunk));
        let mut pieces = 0;
        let mut out = Vec::new();
        ctx.copy_to_host(ptr, len as u64, &mut |piece| {
            pieces += 1;
            out.extend_from_slice(piece);
            Ok(())
        })
        .unwrap();
        assert_eq!(pieces, len.div_ceil(chunk));
        assert!(out == data, "{len} bytes came back different");
        ctx.free(ptr).unwrap();
    }
    assert_eq!(ctx.memory_held(), 0);
}

#[test]
fn fake_driver_a_failing_network_leaves_the_context_usable() {
    let Some(b) = fake_backend("fake_driver_a_failing_network_leaves_the_context_usable") else {
        return;
    };
    let mut ctx = b.open(0, 0).unwrap();
    let len = 5 * STAGING_CHUNK;
    let ptr = ctx.malloc(len as u64).unwrap();
    // The payload ends after two and a half chunks.
    let short = pattern(5 * STAGING_CHUNK / 2, 3);
    let mut src = SliceSource::new(&short);
    assert!(matches!(
        ctx.copy_from_host(ptr, len as u64, &mut src),
        Err(CopyError::Transport(_))
    ));
    let mut sent = 0;
    let res = ctx.copy_to_host(ptr, len as u64, &mut |_| {
        sent += 1;
        if sent == 2 {
            Err(TransportError::Closed)
        } else {
            Ok(())
        }
    });
    assert!(matches!(res, Err(CopyError::Transport(_))));
    // Nothing is left in flight: the next copies work.
    let data = pattern(len, 4);
    ctx.copy_from_host(ptr, len as u64, &mut SliceSource::new(&data))
        .unwrap();
    assert!(read_back(ctx.as_mut(), ptr, len as u64) == data);
}

#[test]
fn fake_driver_kernels_launch_with_their_packed_parameters() {
    let Some(b) = fake_backend("fake_driver_kernels_launch_with_their_packed_parameters") else {
        return;
    };
    let mut ctx = b.open(0, 0).unwrap();
    let image = empty_fatbin();
    let hash = rcud_fatbin::content_hash(&image);
    assert_eq!(
        ctx.load_module("a", hash, None).unwrap_err(),
        Failure::from(CudaError::INVALID_VALUE)
    );
    let (m, _) = ctx.load_module("a", hash, Some(image)).unwrap();
    // Cached for this owner's other contexts now, and only for them.
    let mut other = b.open(0, 0).unwrap();
    other.load_module("a", hash, None).unwrap();
    assert!(other.load_module("b", hash, None).is_err());

    let (f, attrs) = ctx.get_function(m, FILL).unwrap();
    assert_eq!(attrs.max_threads_per_block, 1024);
    assert_eq!(attrs.num_regs, 16);
    assert_eq!(attrs.max_dynamic_shared_size_bytes, 49152);
    assert_eq!(ctx.get_function(m, FILL).unwrap().0, f, "one id per kernel");
    let missing = ctx.get_function(m, "_Z7missingv").unwrap_err();
    assert_eq!(missing.code, CudaError::INVALID_DEVICE_FUNCTION);
    assert!(missing.message.contains("_Z7missingv"), "{missing}");

    let p = ctx.malloc(4096).unwrap();
    ctx.launch(&launch_of(f, &fill_params(p + 10, 100, 0x5a)))
        .unwrap();
    let out = read_back(ctx.as_mut(), p, 200);
    assert!(out[..10].iter().all(|&x| x == 0));
    assert!(out[10..110].iter().all(|&x| x == 0x5a));
    assert!(out[110..].iter().all(|&x| x == 0));

    // Too few parameter bytes for the kernel: refused before the driver.
    let f2 = ctx
        .launch(&launch_of(f, &fill_params(p, 1, 1)[..16]))
        .unwrap_err();
    assert_eq!(f2.code, CudaError::INVALID_VALUE);
    // Configurations the device cannot run.
    let mut bad = launch_of(f, &[]);
    bad.block = [2048, 1, 1];
    assert_eq!(ctx.launch(&bad).unwrap_err().code, CudaError::INVALID_VALUE);
    // Dynamic shared memory above the kernel's limit, then with it raised.
    let params = fill_params(p, 1, 1);
    let mut big = launch_of(f, &params);
    big.shared_mem = 64 << 10;
    assert_eq!(ctx.launch(&big).unwrap_err().code, CudaError::INVALID_VALUE);
    ctx.set_function_attribute(f, ATTR_MAX_DYNAMIC_SHARED, 64 << 10)
        .unwrap();
    ctx.launch(&big).unwrap();
    assert_eq!(
        ctx.get_function(m, FILL)
            .unwrap()
            .1
            .max_dynamic_shared_size_bytes,
        64 << 10
    );
    assert_eq!(
        ctx.set_function_attribute(f, ATTR_MAX_DYNAMIC_SHARED, -1)
            .unwrap_err()
            .code,
        CudaError::INVALID_VALUE
    );
    assert_eq!(
        ctx.set_function_attribute(f, 10, 1).unwrap_err().code,
        CudaError::INVALID_VALUE
    );
    assert_eq!(
        ctx.set_function_attribute(99, ATTR_CARVEOUT, 50)
            .unwrap_err()
            .code,
        CudaError::INVALID_DEVICE_FUNCTION
    );
}

/// Device printf output (the driver writes it to standard output) comes back
/// with the launch that produced it once the backend owns its process. The
/// check runs in a child process, since it takes over standard output.
#[test]
fn fake_driver_device_printf_comes_back_with_the_launch() {
    const CHILD: &str = "RCUD_PRINTF_CHILD";
    let test = "fake_driver_device_printf_comes_back_with_the_launch";
    let Some(lib) = fake_driver(test, "printf", &["-DFAKE_PRINTF"]) else {
        return;
    };
    if std::env::var_os(CHILD).is_none() {
        let exe = std::env::current_exe().unwrap();
        // The test's full name: its module path without the crate.
        let module = module_path!().split_once("::").map_or("", |(_, m)| m);
        let out = Command::new(exe)
            .args([&format!("{module}::{test}"), "--exact", "--nocapture"])
            .env(CHILD, "1")
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "child failed: {stderr}");
        assert!(stderr.contains("printf checked"), "{stderr}");
        return;
    }
    let b = CudaBackend::with_library(lib).unwrap();
    b.own_process();
    let mut ctx = b.open(0, 0).unwrap();
    let image = empty_fatbin();
    let m = ctx
        .load_module("a", rcud_fatbin::content_hash(&image), Some(image))
        .unwrap()
        .0;
    let (f, _) = ctx.get_function(m, FILL).unwrap();
    let p = ctx.malloc(4096).unwrap();
    // Each launch returns its own output, and only its own.
    let first = ctx.launch(&launch_of(f, &fill_params(p, 100, 90))).unwrap();
    assert_eq!(String::from_utf8_lossy(&first), "fill: 100 bytes of 90\n");
    let second = ctx.launch(&launch_of(f, &fill_params(p, 7, 1))).unwrap();
    assert_eq!(String::from_utf8_lossy(&second), "fill: 7 bytes of 1\n");
    eprintln!("printf checked");
}

#[test]
fn fake_driver_module_variables_are_copy_targets() {
    let Some(b) = fake_backend("fake_driver_module_variables_are_copy_targets") else {
        return;
    };
    let mut ctx = b.open(0, 0).unwrap();
    let image = empty_fatbin();
    let m = ctx
        .load_module("a", rcud_fatbin::content_hash(&image), Some(image))
        .unwrap()
        .0;
    let (ptr, size) = ctx.get_global(m, "counter").unwrap();
    assert_eq!(size, 8);
    assert_eq!(ctx.memory_held(), 8);
    let value = 0x1122_3344_5566_7788u64.to_le_bytes();
    ctx.copy_from_host(ptr, 8, &mut SliceSource::new(&value))
        .unwrap();
    assert!(read_back(ctx.as_mut(), ptr, 8) == value);
    assert_eq!(ctx.check(ptr, 9), Err(CudaError::INVALID_VALUE));
    assert_eq!(ctx.free(ptr), Err(CudaError::INVALID_VALUE));
    let f = ctx.get_global(m, "nothing").unwrap_err();
    assert_eq!(f.code, CudaError::INVALID_SYMBOL);
    let f = ctx.get_global(m, "bad\0name").unwrap_err();
    assert_eq!(f.code, CudaError::INVALID_SYMBOL);
}

#[test]
fn fake_driver_a_kernel_fault_is_sticky_until_reset() {
    let Some(b) = fake_backend("fake_driver_a_kernel_fault_is_sticky_until_reset") else {
        return;
    };
    let mut ctx = b.open(0, 0).unwrap();
    let mut bystander = b.open(0, 0).unwrap();
    let kept = bystander.malloc(64).unwrap();
    let image = empty_fatbin();
    let m = ctx
        .load_module("a", rcud_fatbin::content_hash(&image), Some(image))
        .unwrap()
        .0;
    let (fault, _) = ctx.get_function(m, "_Z5faultv").unwrap();
    let p = ctx.malloc(64).unwrap();
    let f = ctx.launch(&launch_of(fault, &[])).unwrap_err();
    assert_eq!(f.code, CudaError::ILLEGAL_ADDRESS);
    assert!(f.message.contains("CUDA_ERROR_ILLEGAL_ADDRESS"), "{f}");
    // Everything fails the same way, without reaching the driver.
    assert_eq!(ctx.malloc(8), Err(CudaError::ILLEGAL_ADDRESS));
    assert_eq!(ctx.memset(p, 0, 8), Err(CudaError::ILLEGAL_ADDRESS));
    assert_eq!(ctx.synchronize(), Err(CudaError::ILLEGAL_ADDRESS));
    assert!(matches!(
        ctx.copy_to_host(p, 8, &mut |_| Ok(())),
        Err(CopyError::Cuda(CudaError::ILLEGAL_ADDRESS))
    ));
    // Another client is not disturbed.
    bystander.memset(kept, 7, 64).unwrap();
    // A reset brings a fresh context.
    ctx.reset();
    assert_eq!(ctx.check(p, 1), Err(CudaError::INVALID_VALUE));
    let q = ctx.malloc(64).unwrap();
    ctx.memset(q, 1, 64).unwrap();
    ctx.synchronize().unwrap();
    assert_eq!(
        ctx.get_function(m, FILL).unwrap_err().code,
        CudaError::INVALID_RESOURCE_HANDLE,
        "modules went with the old context"
    );
}

#[test]
fn fake_driver_device_memory_exports_as_a_dma_buf() {
    let Some(b) = fake_backend("fake_driver_device_memory_exports_as_a_dma_buf") else {
        return;
    };
    let mut ctx = b.open_cuda(0).unwrap();
    let p = ctx.malloc(100_000).unwrap();
    let buf = ctx.export_dma_buf(p + 5000, 10_000).unwrap();
    let page = driver::host_page_size();
    assert_eq!(buf.base % page, 0);
    assert_eq!(buf.len % page, 0);
    assert_eq!(buf.base + buf.offset, p + 5000);
    assert!(buf.offset + 10_000 <= buf.len);
    let err = ctx.export_dma_buf(p + 99_999, 2).unwrap_err();
    assert_eq!(err.code, CudaError::INVALID_VALUE);
}

#[test]
fn fake_driver_ipc_handles_travel_in_a_memory_file() {
    let Some(b) = fake_backend("fake_driver_ipc_handles_travel_in_a_memory_file") else {
        return;
    };
    let mut owner = b.open_cuda(0).unwrap();
    let mut other = b.open_cuda(0).unwrap();
    let p = owner.malloc(4096).unwrap();
    // An address inside the allocation names all of it.
    let (file, base, len) = owner.ipc_export(p + 100).unwrap();
    assert_eq!((base, len), (p, 4096));
    assert_eq!(
        owner.ipc_export(p + 4096).unwrap_err(),
        CudaError::INVALID_VALUE,
        "past the allocation"
    );
    let held = other.memory_held();
    let q = other.ipc_import(file, len).unwrap();
    assert_eq!(q, p);
    assert_eq!(
        other.memory_held(),
        held,
        "the owner pays for opened memory"
    );
    // Usable for copies, not freed by cudaFree, closed once.
    other.memset(q, 7, 4096).unwrap();
    assert_eq!(other.free(q).unwrap_err(), CudaError::INVALID_VALUE);
    other.ipc_close(q).unwrap();
    assert_eq!(other.ipc_close(q).unwrap_err(), CudaError::INVALID_VALUE);
    assert_eq!(other.memset(q, 7, 1).unwrap_err(), CudaError::INVALID_VALUE);
    // A file that holds no driver handle.
    let junk = tempfile::tempfile().unwrap();
    assert_eq!(
        other.ipc_import(junk, 16).unwrap_err(),
        CudaError::INVALID_VALUE
    );
}

// ---- GPU --------------------------------------------------------------

#[test]
fn gpu_device_info_is_the_devices() {
    let Some(b) = gpu("gpu_device_info_is_the_devices") else {
        return;
    };
    assert!(b.gpu_count() >= 1);
    assert!(b.driver_version() >= 11_040, "{}", b.driver_version());
    let (p, attrs) = b.device_info(0).unwrap();
    assert!(!p.name.is_empty());
    assert!(p.major >= 5, "compute capability {}.{}", p.major, p.minor);
    assert_eq!(p.warp_size, 32);
    assert!(p.total_global_mem > 0);
    assert!(p.multi_processor_count > 0);
    assert!(p.max_threads_per_block >= 1024);
    assert_ne!(p.uuid, [0; 16]);
    let get = |a: DeviceAttr| attrs.iter().find(|&&(k, _)| k == a.0).map(|&(_, v)| v);
    assert_eq!(get(DeviceAttr::WARP_SIZE), Some(32));
    assert_eq!(get(DeviceAttr::COMPUTE_CAPABILITY_MAJOR), Some(p.major));
    assert_eq!(get(DeviceAttr::RESERVED_92), None);
    assert_eq!(get(DeviceAttr::MANAGED_MEMORY), Some(0));
    assert_eq!(
        b.device_info(b.gpu_count()).unwrap_err(),
        CudaError::INVALID_DEVICE
    );
}

#[test]
fn gpu_copies_round_trip_through_the_staging_chunks() {
    let Some(b) = gpu("gpu_copies_round_trip_through_the_staging_chunks") else {
        return;
    };
    let mut ctx = b.open(0, 0).unwrap();
    let chunk = STAGING_CHUNK;
    for (i, len) in [
        1,
        1000,
        chunk - 1,
        chunk,
        chunk + 1,
        3 * chunk + 7,
        7 * chunk + 3,
    ]
    .into_iter()
    .enumerate()
    {
        let data = pattern(len, i as u32 + 1);
        let ptr = ctx.malloc(len as u64).unwrap();
        let mut src = SliceSource::new(&data);
        ctx.copy_from_host(ptr, len as u64, &mut src).unwrap();
        assert_eq!(src.pos, len);
        assert_eq!(src.reads, len.div_ceil(chunk), "one read per chunk");
        assert!(
            read_back(ctx.as_mut(), ptr, len as u64) == data,
            "{len} bytes"
        );
        // A sub-range at an odd offset.
        if len > 10 {
            let part = read_back(ctx.as_mut(), ptr + 3, len as u64 - 5);
            assert!(part == data[3..len - 2], "{len} bytes at offset 3");
        }
        ctx.free(ptr).unwrap();
    }
    let (free, total) = ctx.mem_info();
    assert!(free > 0 && free <= total, "{free} {total}");
}

#[test]
fn gpu_ranges_are_checked_against_the_clients_own_memory() {
    let Some(b) = gpu("gpu_ranges_are_checked_against_the_clients_own_memory") else {
        return;
    };
    let mut a = b.open(0, 0).unwrap();
    let mut other = b.open(0, 0).unwrap();
    let mine = a.malloc(4096).unwrap();
    let theirs = other.malloc(4096).unwrap();
    let invalid = Err(CudaError::INVALID_VALUE);
    assert_eq!(a.check(theirs, 1), invalid);
    assert_eq!(a.check(mine, 4097), invalid);
    assert_eq!(a.check(mine + 4096, 1), invalid);
    assert_eq!(a.memset(theirs, 0, 1), invalid);
    assert_eq!(a.copy_device(mine, theirs, 16), invalid);
    assert_eq!(a.copy_device(theirs, mine, 16), invalid);
    assert_eq!(a.free(theirs), invalid);
    assert_eq!(a.free(mine + 8), invalid);
    let data = [1u8; 16];
    let mut src = SliceSource::new(&data);
    match a.copy_from_host(theirs, 16, &mut src) {
        Err(CopyError::Cuda(e)) => assert_eq!(e, CudaError::INVALID_VALUE),
        other => panic!("{other:?}"),
    }
    assert_eq!(src.pos, 0, "nothing may be read for an invalid range");
    match a.copy_to_host(theirs, 16, &mut |_| Ok(())) {
        Err(CopyError::Cuda(e)) => assert_eq!(e, CudaError::INVALID_VALUE),
        other => panic!("{other:?}"),
    }
    // The other client's memory is untouched and still its own.
    assert_eq!(other.check(theirs, 4096), Ok(()));
    a.free(mine).unwrap();
    assert_eq!(a.free(mine), invalid);
}

#[test]
fn gpu_memset_and_device_copies_including_overlapping_ones() {
    let Some(b) = gpu("gpu_memset_and_device_copies_including_overlapping_ones") else {
        return;
    };
    let mut ctx = b.open(0, 0).unwrap();
    let len = 3 * STAGING_CHUNK as u64 + 11;
    let p = ctx.malloc(len).unwrap();
    ctx.memset(p, 0xab, len).unwrap();
    assert!(read_back(ctx.as_mut(), p, len).iter().all(|&x| x == 0xab));
    let data = pattern(1000, 9);
    let mut src = SliceSource::new(&data);
    ctx.copy_from_host(p, 1000, &mut src).unwrap();
    // memmove semantics, forwards and backwards.
    ctx.copy_device(p + 100, p, 1000).unwrap();
    assert!(read_back(ctx.as_mut(), p + 100, 1000) == data);
    ctx.copy_device(p, p + 100, 1000).unwrap();
    assert!(read_back(ctx.as_mut(), p, 1000) == data);
    let q = ctx.malloc(1000).unwrap();
    ctx.copy_device(q, p, 1000).unwrap();
    assert!(read_back(ctx.as_mut(), q, 1000) == data);
    assert_eq!(ctx.malloc(0), Err(CudaError::INVALID_VALUE));
}

#[test]
fn gpu_reset_replaces_the_context() {
    let Some(b) = gpu("gpu_reset_replaces_the_context") else {
        return;
    };
    let mut ctx = b.open(0, 0).unwrap();
    let p = ctx.malloc(1 << 20).unwrap();
    ctx.reset();
    assert_eq!(ctx.check(p, 1), Err(CudaError::INVALID_VALUE));
    let q = ctx.malloc(1 << 20).unwrap();
    ctx.memset(q, 1, 1 << 20).unwrap();
    ctx.synchronize().unwrap();
}

#[test]
fn gpu_modules_come_from_checked_images() {
    let Some(b) = gpu("gpu_modules_come_from_checked_images") else {
        return;
    };
    let mut ctx = b.open(0, 0).unwrap();
    let f = ctx.load_module("a", [1; 32], None).unwrap_err();
    assert_eq!(f, Failure::from(CudaError::INVALID_VALUE));
    let junk = vec![0x50, 0xed, 0x55, 0xba, 1, 0, 0x10, 0];
    let hash = rcud_fatbin::content_hash(&junk);
    let f = ctx.load_module("a", hash, Some(junk)).unwrap_err();
    assert_eq!(f.code, CudaError::INVALID_KERNEL_IMAGE);
    let f = ctx.get_function(0, "_Z6kernelv").unwrap_err();
    assert_eq!(f.code, CudaError::INVALID_RESOURCE_HANDLE);
    let f = ctx.get_global(3, "x").unwrap_err();
    assert_eq!(f.code, CudaError::INVALID_RESOURCE_HANDLE);
    let f = ctx
        .launch(&KernelLaunch {
            function: 0,
            grid: [1, 1, 1],
            block: [1, 1, 1],
            shared_mem: 0,
            params: &[],
            cooperative: false,
        })
        .unwrap_err();
    assert_eq!(f.code, CudaError::INVALID_DEVICE_FUNCTION);
}

#[test]
fn gpu_dma_buf_export_or_a_clear_refusal() {
    let Some(b) = gpu("gpu_dma_buf_export_or_a_clear_refusal") else {
        return;
    };
    let mut ctx = b.open_cuda(0).unwrap();
    let p = ctx.malloc(4 << 20).unwrap();
    match b.dma_buf_support(0) {
        Ok(()) => {
            let buf = ctx.export_dma_buf(p + 100, 8192).unwrap();
            assert_eq!(buf.base, p, "allocations are page aligned");
            assert_eq!(buf.offset, 100);
            assert!(buf.len >= 8192 + 100);
        }
        Err(why) => {
            eprintln!("gpu_dma_buf_export_or_a_clear_refusal: dma-buf unavailable: {why}");
            let f = ctx.export_dma_buf(p, 4096).unwrap_err();
            assert_eq!(f.code, CudaError::NOT_SUPPORTED);
            assert_eq!(f.message, why);
        }
    }
    let other = b.open_cuda(0);
    if let Ok(mut other) = other {
        let theirs = other.malloc(4096).unwrap();
        let f = ctx.export_dma_buf(theirs, 4096).unwrap_err();
        assert!(
            f.code == CudaError::INVALID_VALUE || f.code == CudaError::NOT_SUPPORTED,
            "{f}"
        );
    }
}

#[test]
fn fake_driver_limits_are_set_through_the_driver() {
    let Some(b) = fake_backend("fake_driver_limits_are_set_through_the_driver") else {
        return;
    };
    let mut ctx = b.open(0, 0).unwrap();
    assert_eq!(
        ctx.set_limit(rcud_proto::ops::LIMIT_MALLOC_HEAP_SIZE, 64 << 20),
        Ok(64 << 20)
    );
    assert_eq!(
        ctx.set_limit(7, 1).map_err(|f| f.code),
        Err(CudaError::UNSUPPORTED_LIMIT)
    );
}

// ---- cuBLAS with the fake driver and fake_libcublas.c --------------------

use rcud_proto::math::blas::{self as wire, dtype, Operand, Scalar};

/// `src/backend/cuda/<source>` (a stand-in math library) built for `test`
/// as `soname`, logging to a file of its own: (library, log).
fn fake_math_library(test: &str, source: &str, soname: &str) -> Option<(PathBuf, PathBuf)> {
    let source = format!("{}/src/backend/cuda/{source}", env!("CARGO_MANIFEST_DIR"));
    let dir = std::env::current_exe()
        .ok()?
        .parent()?
        .join("rcud-fake-math")
        .join(soname)
        .join(test);
    std::fs::create_dir_all(&dir).ok()?;
    let (lib, log) = (dir.join(soname), dir.join("calls.log"));
    let _ = std::fs::remove_file(&log);
    let cc = std::env::var("CC").unwrap_or_else(|_| "cc".into());
    let status = Command::new(&cc)
        .args(["-shared", "-fPIC", "-O1", "-o"])
        .arg(&lib)
        .arg(&source)
        .arg(format!("-DFAKE_LOG=\"{}\"", log.display()))
        .arg("-lm")
        .status();
    match status {
        Ok(s) if s.success() => Some((lib, log)),
        other => {
            eprintln!("{test}: skipped: {cc} could not build {source}: {other:?}");
            None
        }
    }
}

/// `fake_libcublas.c` built for `test`: (library, log).
fn fake_cublas(test: &str) -> Option<(PathBuf, PathBuf)> {
    fake_math_library(test, "fake_libcublas.c", "libcublas.so.13")
}

/// The fake driver with the fake cuBLAS: (backend, log).
fn fake_blas_backend(test: &str) -> Option<(CudaBackend, PathBuf)> {
    let backend = fake_backend(test)?;
    let (lib, log) = fake_cublas(test)?;
    Some((backend.with_blas_libraries(vec![lib.into()]), log))
}

fn blas(ctx: &mut dyn DeviceContext, call: wire::Call) -> Result<rcud_math::Reply, Failure> {
    ctx.math_call(1, &rcud_proto::codec::to_vec(&call))
}

fn log_lines(log: &PathBuf) -> Vec<String> {
    std::fs::read_to_string(log)
        .unwrap_or_default()
        .lines()
        .map(str::to_string)
        .collect()
}

fn put(ctx: &mut dyn DeviceContext, ptr: u64, bytes: &[u8]) {
    ctx.copy_from_host(ptr, bytes.len() as u64, &mut SliceSource::new(bytes))
        .unwrap();
}

fn f32s(values: &[f32]) -> Vec<u8> {
    values.iter().flat_map(|v| v.to_le_bytes()).collect()
}

fn read_f32s(ctx: &mut dyn DeviceContext, ptr: u64, n: usize) -> Vec<f32> {
    read_back(ctx, ptr, 4 * n as u64)
        .chunks_exact(4)
        .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect()
}

fn ptrs(values: &[u64]) -> Vec<u8> {
    values.iter().flat_map(|v| v.to_le_bytes()).collect()
}

fn host(v: f64) -> Scalar {
    Scalar::Host { re: v, im: 0.0 }
}

fn operand(ptr: u64, ld: i64, stride: i64) -> Operand {
    Operand { ptr, ld, stride }
}

/// SGEMM of m=2, n=2, k=3 with A (ld 2), B (ld 3) and C (ld 2).
fn sgemm(handle: u64, a: Operand, b: Operand, c: Operand, batch: i64, arrays: bool) -> wire::Call {
    wire::Call::Gemm {
        handle,
        types: [dtype::R32F; 4],
        transa: 0,
        transb: 0,
        m: 2,
        n: 2,
        k: 3,
        alpha: host(1.0),
        a,
        b,
        beta: host(0.0),
        c,
        batch,
        pointer_arrays: arrays,
    }
}

fn dot(handle: u64, x: u64, y: u64, result: u64) -> wire::Call {
    wire::Call::Level1 {
        handle,
        op: wire::level1::DOTU,
        dtype: dtype::R32F,
        scalar_dtype: dtype::R32F,
        n: 3,
        x: operand(x, 1, 0),
        y: operand(y, 1, 0),
        alpha: host(0.0),
        beta: host(0.0),
        result,
    }
}

fn create(ctx: &mut dyn DeviceContext) -> u64 {
    let reply = blas(ctx, wire::Call::Create {}).unwrap();
    assert_eq!(reply.status, 0);
    u64::from_le_bytes(reply.out.try_into().unwrap())
}

// A = [[1, 3, 5], [2, 4, 6]] (column-major, ld 2); B = [e1, e2 + e3]:
// A B = [[1, 8], [2, 10]].
const A: [f32; 6] = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0];
const B: [f32; 6] = [1.0, 0.0, 0.0, 0.0, 1.0, 1.0];
const AB: [f32; 4] = [1.0, 2.0, 8.0, 10.0];

#[test]
fn fake_cublas_gemm_and_level1_run_on_the_contexts_stream() {
    let test = "fake_cublas_gemm_and_level1_run_on_the_contexts_stream";
    let Some((b, log)) = fake_blas_backend(test) else {
        return;
    };
    let mut ctx = b.open(0, 0).unwrap();
    let ctx = ctx.as_mut();
    let h = create(ctx);

    // Two copies of A (the second doubled) and of B, room for two Cs.
    let (a, bm, c) = (
        ctx.malloc(48).unwrap(),
        ctx.malloc(48).unwrap(),
        ctx.malloc(32).unwrap(),
    );
    let doubled: Vec<f32> = A.iter().map(|v| 2.0 * v).collect();
    put(ctx, a, &f32s(&[A.as_slice(), &doubled].concat()));
    put(ctx, bm, &f32s(&[B, B].concat()));

    // Single.
    let reply = blas(
        ctx,
        sgemm(
            h,
            operand(a, 2, 0),
            operand(bm, 3, 0),
            operand(c, 2, 0),
            1,
            false,
        ),
    )
    .unwrap();
    assert_eq!(reply.status, 0);
    assert_eq!(read_f32s(ctx, c, 4), AB);

    // Strided batch of two.
    put(ctx, c, &[0; 32]);
    let call = sgemm(
        h,
        operand(a, 2, 6),
        operand(bm, 3, 6),
        operand(c, 2, 4),
        2,
        false,
    );
    assert_eq!(blas(ctx, call).unwrap().status, 0);
    let doubled_ab: Vec<f32> = AB.iter().map(|v| 2.0 * v).collect();
    assert_eq!(read_f32s(ctx, c, 8), [AB.as_slice(), &doubled_ab].concat());

    // Pointer arrays: the second product first.
    put(ctx, c, &[0; 32]);
    let arrays = ctx.malloc(48).unwrap();
    put(ctx, arrays, &ptrs(&[a + 24, a, bm + 24, bm, c, c + 16]));
    let call = sgemm(
        h,
        operand(arrays, 2, 0),
        operand(arrays + 16, 3, 0),
        operand(arrays + 32, 2, 0),
        2,
        true,
    );
    assert_eq!(blas(ctx, call).unwrap().status, 0);
    assert_eq!(read_f32s(ctx, c, 8), [doubled_ab.as_slice(), &AB].concat());

    // Device scalars.
    let scalars = ctx.malloc(8).unwrap();
    put(ctx, scalars, &f32s(&[3.0, 0.0]));
    let mut call = sgemm(
        h,
        operand(a, 2, 0),
        operand(bm, 3, 0),
        operand(c, 2, 0),
        1,
        false,
    );
    if let wire::Call::Gemm { alpha, beta, .. } = &mut call {
        *alpha = Scalar::Device { ptr: scalars };
        *beta = Scalar::Device { ptr: scalars + 4 };
    }
    assert_eq!(blas(ctx, call).unwrap().status, 0);
    let tripled: Vec<f32> = AB.iter().map(|v| 3.0 * v).collect();
    assert_eq!(read_f32s(ctx, c, 4), tripled);

    // A reduction to the host and to device memory.
    let (x, y, r) = (
        ctx.malloc(12).unwrap(),
        ctx.malloc(12).unwrap(),
        ctx.malloc(4).unwrap(),
    );
    put(ctx, x, &f32s(&[1.0, 2.0, 3.0]));
    put(ctx, y, &f32s(&[4.0, 5.0, 6.0]));
    let reply = blas(ctx, dot(h, x, y, 0)).unwrap();
    assert_eq!((reply.status, reply.out), (0, 32f32.to_le_bytes().to_vec()));
    let reply = blas(ctx, dot(h, x, y, r)).unwrap();
    assert_eq!((reply.status, reply.out.len()), (0, 0));
    assert_eq!(read_f32s(ctx, r, 1), [32.0]);

    // An index, widened for the _64 form's int64_t.
    let amax = |scalar_dtype| wire::Call::Level1 {
        handle: h,
        op: wire::level1::AMAX,
        dtype: dtype::R32F,
        scalar_dtype,
        n: 3,
        x: operand(x, 1, 0),
        y: operand(0, 1, 0),
        alpha: host(0.0),
        beta: host(0.0),
        result: 0,
    };
    assert_eq!(
        blas(ctx, amax(dtype::R32F)).unwrap().out,
        3i32.to_le_bytes()
    );
    assert_eq!(blas(ctx, amax(24)).unwrap().out, 3i64.to_le_bytes());

    // gemv, y = A x with A 2 x 3 and x = (1, 2, 3): (22, 28).
    let gx = ctx.malloc(12).unwrap();
    put(ctx, gx, &f32s(&[1.0, 2.0, 3.0]));
    let gemv = wire::Call::Gemv {
        handle: h,
        dtype: dtype::R32F,
        trans: 0,
        m: 2,
        n: 3,
        alpha: host(1.0),
        a: operand(a, 2, 0),
        x: operand(gx, 1, 0),
        beta: host(0.0),
        y: operand(c, 1, 0),
    };
    assert_eq!(blas(ctx, gemv).unwrap().status, 0);
    assert_eq!(read_f32s(ctx, c, 2), [22.0, 28.0]);

    let lines = log_lines(&log);
    let stream = lines
        .iter()
        .find(|l| l.starts_with("cublasSetStream"))
        .and_then(|l| l.split_whitespace().nth(2))
        .expect("cublasSetStream was called")
        .to_string();
    assert_ne!(stream, "stream=(nil)", "{lines:?}");
    let calls: Vec<(&str, &str, &str)> = lines
        .iter()
        .filter(|l| !l.starts_with("cublasCreate") && !l.starts_with("cublasSetStream"))
        .map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            (f[0], f[2], f[3])
        })
        .collect();
    assert!(calls.iter().all(|(_, s, _)| *s == stream), "{lines:?}");
    let expected = [
        ("cublasGemmEx", "mode=0"),
        ("cublasGemmStridedBatchedEx", "mode=0"),
        ("cublasGemmBatchedEx", "mode=0"),
        ("cublasGemmEx", "mode=1"),
        ("cublasSdot", "mode=0"),
        ("cublasSdot", "mode=1"),
        ("cublasIsamax", "mode=0"),
        ("cublasIsamax", "mode=0"),
        ("cublasSgemv", "mode=0"),
    ];
    let seen: Vec<(&str, &str)> = calls.iter().map(|(f, _, m)| (*f, *m)).collect();
    assert_eq!(seen, expected, "{lines:?}");

    // Destroyed on request; an unknown handle is NOT_INITIALIZED.
    assert_eq!(
        blas(ctx, wire::Call::Destroy { handle: h }).unwrap().status,
        0
    );
    assert_eq!(
        blas(ctx, wire::Call::Destroy { handle: h }).unwrap().status,
        1
    );
    assert!(log_lines(&log).last().unwrap().starts_with("cublasDestroy"));
}

#[test]
fn fake_cublas_bad_operands_are_refused_before_the_library() {
    let test = "fake_cublas_bad_operands_are_refused_before_the_library";
    let Some((b, log)) = fake_blas_backend(test) else {
        return;
    };
    let mut ctx = b.open(0, 0).unwrap();
    let mut other = b.open(0, 0).unwrap();
    let foreign = other.malloc(64).unwrap();
    let ctx = ctx.as_mut();
    let h = create(ctx);
    let (a, bm, c) = (
        ctx.malloc(24).unwrap(),
        ctx.malloc(24).unwrap(),
        ctx.malloc(16).unwrap(),
    );
    put(ctx, a, &f32s(&A));
    put(ctx, bm, &f32s(&B));
    let before = log_lines(&log).len();
    let illegal = |r: Result<rcud_math::Reply, Failure>| {
        let f = r.unwrap_err();
        assert_eq!(f.code, CudaError::ILLEGAL_ADDRESS, "{f}");
        f.message
    };

    // C one column too wide for its allocation (ld 4: 4 + 2 floats).
    illegal(blas(
        ctx,
        sgemm(
            h,
            operand(a, 2, 0),
            operand(bm, 3, 0),
            operand(c, 4, 0),
            1,
            false,
        ),
    ));
    // A strided batch running past A.
    illegal(blas(
        ctx,
        sgemm(
            h,
            operand(a, 2, 6),
            operand(bm, 3, 0),
            operand(c, 2, 0),
            2,
            false,
        ),
    ));
    // Another context's memory.
    let m = illegal(blas(
        ctx,
        sgemm(
            h,
            operand(foreign, 2, 0),
            operand(bm, 3, 0),
            operand(c, 2, 0),
            1,
            false,
        ),
    ));
    assert!(m.contains("A"), "{m}");
    // A forged pointer inside a pointer array, and an array past its end.
    let arrays = ctx.malloc(48).unwrap();
    put(ctx, arrays, &ptrs(&[a, foreign, bm, bm, c, c]));
    let batched = |ptr| {
        sgemm(
            h,
            operand(ptr, 2, 0),
            operand(arrays + 16, 3, 0),
            operand(arrays + 32, 2, 0),
            2,
            true,
        )
    };
    let m = illegal(blas(ctx, batched(arrays)));
    assert!(m.contains("A[1]"), "{m}");
    let m = illegal(blas(ctx, batched(arrays + 40)));
    assert!(m.contains("pointer array"), "{m}");
    // A device scalar and a reduction's result outside the client's memory.
    let mut call = sgemm(
        h,
        operand(a, 2, 0),
        operand(bm, 3, 0),
        operand(c, 2, 0),
        1,
        false,
    );
    if let wire::Call::Gemm { alpha, .. } = &mut call {
        *alpha = Scalar::Device { ptr: foreign };
    }
    illegal(blas(ctx, call));
    illegal(blas(ctx, dot(h, a, bm, foreign)));
    // A vector running past its allocation (increment 8).
    let mut call = dot(h, a, bm, 0);
    if let wire::Call::Level1 { x, .. } = &mut call {
        x.ld = 8;
    }
    illegal(blas(ctx, call));
    // Bad leading dimension: cuBLAS's own status, without the library.
    let reply = blas(
        ctx,
        sgemm(
            h,
            operand(a, 1, 0),
            operand(bm, 3, 0),
            operand(c, 2, 0),
            1,
            false,
        ),
    )
    .unwrap();
    assert_eq!(reply.status, 7);
    // Unknown handle.
    let reply = blas(
        ctx,
        sgemm(
            h + 7,
            operand(a, 2, 0),
            operand(bm, 3, 0),
            operand(c, 2, 0),
            1,
            false,
        ),
    )
    .unwrap();
    assert_eq!(reply.status, 1);

    let after = log_lines(&log);
    assert_eq!(after.len(), before, "the library was called: {after:?}");

    // The context is still usable, and the handle goes with it.
    let reply = blas(
        ctx,
        sgemm(
            h,
            operand(a, 2, 0),
            operand(bm, 3, 0),
            operand(c, 2, 0),
            1,
            false,
        ),
    )
    .unwrap();
    assert_eq!(reply.status, 0);
    assert_eq!(read_f32s(ctx, c, 4), AB);
}

/// A complex host scalar reaches cuBLAS 16-byte aligned: NVIDIA's Zscal
/// reads it with an aligned vector load, and faulted on the byte array the
/// backend once kept it in (the fake refuses a misaligned one instead).
#[test]
fn fake_cublas_complex_host_scalars_are_aligned() {
    let test = "fake_cublas_complex_host_scalars_are_aligned";
    let Some((b, _log)) = fake_blas_backend(test) else {
        return;
    };
    let mut ctx = b.open(0, 0).unwrap();
    let ctx = ctx.as_mut();
    let h = create(ctx);
    let x = ctx.malloc(32).unwrap();
    let values: Vec<u8> = [1.0f64, 2.0, -3.0, 0.5]
        .iter()
        .flat_map(|v| v.to_le_bytes())
        .collect();
    put(ctx, x, &values);
    let zscal = wire::Call::Level1 {
        handle: h,
        op: wire::level1::SCAL,
        dtype: dtype::C64F,
        scalar_dtype: dtype::C64F,
        n: 2,
        x: operand(x, 1, 0),
        y: operand(x, 1, 0),
        alpha: Scalar::Host { re: 0.5, im: 2.0 },
        beta: host(0.0),
        result: 0,
    };
    let reply = blas(ctx, zscal).unwrap();
    assert_eq!(reply.status, 0, "Zscal with a host alpha");
    let got: Vec<f64> = read_back(ctx, x, 32)
        .chunks_exact(8)
        .map(|c| f64::from_le_bytes(c.try_into().unwrap()))
        .collect();
    // (0.5 + 2i)(1 + 2i) = -3.5 + 3i; (0.5 + 2i)(-3 + 0.5i) = -2.5 - 5.75i.
    assert_eq!(got, [-3.5, 3.0, -2.5, -5.75]);
}

#[test]
fn fake_cublas_handles_are_destroyed_with_the_context() {
    let test = "fake_cublas_handles_are_destroyed_with_the_context";
    let Some((b, log)) = fake_blas_backend(test) else {
        return;
    };
    let mut ctx = b.open(0, 0).unwrap();
    create(ctx.as_mut());
    create(ctx.as_mut());
    drop(ctx);
    let lines = log_lines(&log);
    let destroyed = lines
        .iter()
        .filter(|l| l.starts_with("cublasDestroy"))
        .count();
    assert_eq!(destroyed, 2, "{lines:?}");
}

#[test]
fn fake_driver_without_cublas_says_so() {
    let Some(b) = fake_backend("fake_driver_without_cublas_says_so") else {
        return;
    };
    let b = b.with_blas_libraries(vec!["/nonexistent/libcublas.so.13".into()]);
    let mut ctx = b.open(0, 0).unwrap();
    let f = blas(ctx.as_mut(), wire::Call::Create {}).unwrap_err();
    assert_eq!(f.code, CudaError::NOT_SUPPORTED);
    assert!(
        f.message
            .contains("NVIDIA's cuBLAS (libcublas.so.13) was not found on the server"),
        "{f}"
    );
    // Libraries not forwarded are still refused as before.
    let f = ctx.math_call(5, &[]).unwrap_err();
    assert_eq!(f.code, CudaError::NOT_SUPPORTED);
    assert!(f.message.contains("cuda backend"), "{f}");
}

#[test]
fn fake_cublas_level3_calls_are_checked_and_forwarded() {
    let test = "fake_cublas_level3_calls_are_checked_and_forwarded";
    let Some((b, log)) = fake_blas_backend(test) else {
        return;
    };
    let mut ctx = b.open(0, 0).unwrap();
    let ctx = ctx.as_mut();
    let h = create(ctx);
    let (a, c, x) = (
        ctx.malloc(24).unwrap(),
        ctx.malloc(24).unwrap(),
        ctx.malloc(12).unwrap(),
    );
    put(ctx, a, &f32s(&A));
    put(ctx, x, &f32s(&[1.0, 10.0, 100.0]));

    // geam: C (3 x 2) = A^T.
    let geam = |ld_c| wire::Call::Geam {
        handle: h,
        dtype: dtype::R32F,
        transa: 1,
        transb: 0,
        m: 3,
        n: 2,
        alpha: host(1.0),
        a: operand(a, 2, 0),
        beta: host(0.0),
        b: operand(c, 3, 0),
        c: operand(c, ld_c, 0),
    };
    assert_eq!(blas(ctx, geam(3)).unwrap().status, 0);
    assert_eq!(read_f32s(ctx, c, 6), [1.0, 3.0, 5.0, 2.0, 4.0, 6.0]);

    // dgmm: C (2 x 3) = A diag(x).
    let dgmm = wire::Call::Dgmm {
        handle: h,
        dtype: dtype::R32F,
        side: 1,
        m: 2,
        n: 3,
        a: operand(a, 2, 0),
        x: operand(x, 1, 0),
        c: operand(c, 2, 0),
    };
    assert_eq!(blas(ctx, dgmm).unwrap().status, 0);
    assert_eq!(read_f32s(ctx, c, 6), [1.0, 2.0, 30.0, 40.0, 500.0, 600.0]);

    // syrk reaches the library (which answers NOT_SUPPORTED here).
    let syrk = |c_ptr| wire::Call::Syrk {
        handle: h,
        dtype: dtype::R32F,
        hermitian: false,
        uplo: 0,
        trans: 0,
        n: 2,
        k: 3,
        alpha: host(1.0),
        a: operand(a, 2, 0),
        beta: host(0.0),
        c: operand(c_ptr, 2, 0),
    };
    assert_eq!(blas(ctx, syrk(c)).unwrap().status, 15);
    let before = log_lines(&log).len();

    // Refused before the library: C of geam past its allocation, C of
    // syrk past it, trsm's B, and a bad fill mode.
    let illegal = |r: Result<rcud_math::Reply, Failure>| {
        assert_eq!(r.unwrap_err().code, CudaError::ILLEGAL_ADDRESS);
    };
    illegal(blas(ctx, geam(4)));
    illegal(blas(ctx, syrk(c + 16)));
    let trsm = wire::Call::Trmm {
        handle: h,
        dtype: dtype::R32F,
        solve: true,
        side: 0,
        uplo: 0,
        trans: 0,
        diag: 0,
        m: 2,
        n: 4,
        alpha: host(1.0),
        a: operand(a, 2, 0),
        b: operand(c, 2, 0),
        c: operand(0, 2, 0),
    };
    illegal(blas(ctx, trsm));
    let mut bad_fill = syrk(c);
    if let wire::Call::Syrk { uplo, .. } = &mut bad_fill {
        *uplo = 9;
    }
    assert_eq!(blas(ctx, bad_fill).unwrap().status, 7);
    let after = log_lines(&log);
    assert_eq!(after.len(), before, "the library was called: {after:?}");
    let names: Vec<&str> = after
        .iter()
        .filter_map(|l| l.split_whitespace().next())
        .filter(|n| !n.starts_with("cublasCreate") && !n.starts_with("cublasSetStream"))
        .collect();
    assert_eq!(names, ["cublasSgeam", "cublasSdgmm", "cublasSsyrk_v2"]);
}

// ---- cuFFT with the fake driver and fake_libcufft.c ----------------------

use rcud_proto::math::fft::{self as fft_wire, Geometry};

/// The fake driver with the fake cuFFT: (backend, log).
fn fake_fft_backend(test: &str) -> Option<(CudaBackend, PathBuf)> {
    let backend = fake_backend(test)?;
    let (lib, log) = fake_math_library(test, "fake_libcufft.c", "libcufft.so.12")?;
    Some((backend.with_fft_libraries(vec![lib.into()]), log))
}

fn fft(ctx: &mut dyn DeviceContext, call: fft_wire::Call) -> Result<rcud_math::Reply, Failure> {
    ctx.math_call(3, &rcud_proto::codec::to_vec(&call))
}

fn fft_plan(ctx: &mut dyn DeviceContext) -> u32 {
    let reply = fft(ctx, fft_wire::Call::Create {}).unwrap();
    assert_eq!(reply.status, 0);
    u32::from_le_bytes(reply.out.try_into().unwrap())
}

/// A C2C plan of `batch` transforms of `n` points, basic layout.
fn c2c(n: i64, batch: i64) -> Geometry {
    Geometry {
        kind: 0x29,
        n: vec![n],
        batch,
        advanced: None,
    }
}

fn exec_c2c(plan: u32, input: u64, output: u64, direction: i32) -> fft_wire::Call {
    fft_wire::Call::Exec {
        plan,
        kind: 0x29,
        input,
        output,
        direction,
    }
}

#[test]
fn fake_cufft_plans_run_on_the_contexts_stream() {
    let test = "fake_cufft_plans_run_on_the_contexts_stream";
    let Some((b, log)) = fake_fft_backend(test) else {
        return;
    };
    let mut ctx = b.open(0, 0).unwrap();
    let ctx = ctx.as_mut();
    let plan = fft_plan(ctx);
    let reply = fft(
        ctx,
        fft_wire::Call::MakePlan {
            plan,
            geometry: c2c(8, 2),
        },
    )
    .unwrap();
    assert_eq!(reply.status, 0);
    // Batch 0 a unit impulse (spectrum all ones), batch 1 all ones
    // (spectrum 8 at frequency 0).
    let (input, output) = (ctx.malloc(128).unwrap(), ctx.malloc(128).unwrap());
    let mut values = vec![0f32; 32];
    values[0] = 1.0;
    for k in 0..8 {
        values[16 + 2 * k] = 1.0;
    }
    put(ctx, input, &f32s(&values));
    let reply = fft(ctx, exec_c2c(plan, input, output, fft_wire::FORWARD)).unwrap();
    assert_eq!(reply.status, 0);
    let got = read_f32s(ctx, output, 32);
    for k in 0..8 {
        assert!(
            (got[2 * k] - 1.0).abs() < 1e-5 && got[2 * k + 1].abs() < 1e-5,
            "{got:?}"
        );
        let want = if k == 0 { 8.0 } else { 0.0 };
        assert!((got[16 + 2 * k] - want).abs() < 1e-4, "{got:?}");
    }
    let lines = log_lines(&log);
    let stream = lines
        .iter()
        .find(|l| l.starts_with("cufftSetStream"))
        .and_then(|l| l.split("stream=").nth(1))
        .expect("cufftSetStream reached the library")
        .to_string();
    assert_ne!(stream, "(nil)", "{lines:?}");
    assert!(
        lines
            .iter()
            .any(|l| l.starts_with("cufftMakePlanMany64") && l.contains("n0=8 batch=2")),
        "{lines:?}"
    );
    assert!(
        lines.iter().any(
            |l| l.starts_with("cufftExecC2C") && l.contains(&format!("stream={stream} dir=-1"))
        ),
        "{lines:?}"
    );
    // cuFFT's own result comes back: the fake computes no in-place transform.
    let reply = fft(ctx, exec_c2c(plan, input, input, fft_wire::INVERSE)).unwrap();
    assert_eq!(reply.status, fft_wire::status::NOT_SUPPORTED);
    assert_eq!(
        fft(ctx, fft_wire::Call::Destroy { plan }).unwrap().status,
        0
    );
    assert!(log_lines(&log)
        .iter()
        .any(|l| l == &format!("cufftDestroy plan={plan}")));
}

#[test]
fn fake_cufft_bad_calls_are_answered_before_the_library() {
    let test = "fake_cufft_bad_calls_are_answered_before_the_library";
    let Some((b, log)) = fake_fft_backend(test) else {
        return;
    };
    let mut ctx = b.open(0, 0).unwrap();
    let ctx = ctx.as_mut();
    let plan = fft_plan(ctx);
    let (input, small) = (ctx.malloc(128).unwrap(), ctx.malloc(64).unwrap());
    // Before a geometry, and an unknown plan.
    let status = |r: Result<rcud_math::Reply, Failure>| r.unwrap().status;
    assert_eq!(
        status(fft(ctx, exec_c2c(plan, input, input, -1))),
        fft_wire::status::INVALID_PLAN
    );
    assert_eq!(
        status(fft(ctx, exec_c2c(plan + 7, input, input, -1))),
        fft_wire::status::INVALID_PLAN
    );
    // Bad geometries, as cufftMakePlan* answers them.
    let make = |geometry| fft_wire::Call::MakePlan { plan, geometry };
    assert_eq!(
        status(fft(ctx, make(c2c(0, 1)))),
        fft_wire::status::INVALID_SIZE
    );
    let mut rank4 = c2c(8, 1);
    rank4.n = vec![2, 2, 2, 2];
    assert_eq!(
        status(fft(ctx, make(rank4))),
        fft_wire::status::INVALID_VALUE
    );
    let mut bad_type = c2c(8, 1);
    bad_type.kind = 0x77;
    assert_eq!(
        status(fft(ctx, make(bad_type))),
        fft_wire::status::INVALID_TYPE
    );
    assert!(
        !log_lines(&log)
            .iter()
            .any(|l| l.starts_with("cufftMakePlanMany64")),
        "a bad geometry reached the library"
    );
    assert_eq!(status(fft(ctx, make(c2c(8, 2)))), 0);
    let before = log_lines(&log).len();
    // The wrong execution type, a bad direction, a NULL pointer.
    let mut z2z = exec_c2c(plan, input, input, -1);
    if let fft_wire::Call::Exec { kind, .. } = &mut z2z {
        *kind = 0x69;
    }
    assert_eq!(status(fft(ctx, z2z)), fft_wire::status::INVALID_TYPE);
    assert_eq!(
        status(fft(ctx, exec_c2c(plan, input, input, 3))),
        fft_wire::status::INVALID_VALUE
    );
    assert_eq!(
        status(fft(ctx, exec_c2c(plan, 0, input, -1))),
        fft_wire::status::INVALID_VALUE
    );
    // Two transforms of 8 complex f32 need 128 bytes on each side.
    for (i, o) in [(input, small), (small, input), (input + 8, input + 8)] {
        let f = fft(ctx, exec_c2c(plan, i, o, -1)).unwrap_err();
        assert_eq!(f.code, CudaError::ILLEGAL_ADDRESS, "{f}");
        assert!(
            f.message.contains("outside the client's device memory"),
            "{f}"
        );
    }
    assert_eq!(
        log_lines(&log).len(),
        before,
        "a bad execution reached the library"
    );
}

#[test]
fn fake_cufft_plans_are_destroyed_with_the_context() {
    let test = "fake_cufft_plans_are_destroyed_with_the_context";
    let Some((b, log)) = fake_fft_backend(test) else {
        return;
    };
    let mut ctx = b.open(0, 0).unwrap();
    let plan = fft_plan(ctx.as_mut());
    let reply = fft(
        ctx.as_mut(),
        fft_wire::Call::MakePlan {
            plan,
            geometry: c2c(4, 1),
        },
    )
    .unwrap();
    assert_eq!(reply.status, 0);
    drop(ctx);
    assert!(
        log_lines(&log)
            .iter()
            .any(|l| l.starts_with("cufftDestroy")),
        "{:?}",
        log_lines(&log)
    );
}

#[test]
fn fake_driver_without_cufft_says_so() {
    let Some(b) = fake_backend("fake_driver_without_cufft_says_so") else {
        return;
    };
    let b = b.with_fft_libraries(vec!["/nonexistent/libcufft.so.12".into()]);
    let mut ctx = b.open(0, 0).unwrap();
    let f = fft(ctx.as_mut(), fft_wire::Call::Create {}).unwrap_err();
    assert_eq!(f.code, CudaError::NOT_SUPPORTED);
    assert!(
        f.message
            .contains("NVIDIA's cuFFT (libcufft.so.12) was not found on the server"),
        "{f}"
    );
}

// ---- cuRAND with the fake driver and fake_libcurand.c --------------------

use rcud_proto::math::rand::{Call as RandCall, Distribution};

/// `fake_libcurand.c` built for `test`: (library, log).
fn fake_curand(test: &str) -> Option<(PathBuf, PathBuf)> {
    fake_math_library(test, "fake_libcurand.c", "libcurand.so.10")
}

/// The fake driver with the fake cuRAND: (backend, log).
fn fake_rand_backend(test: &str) -> Option<(CudaBackend, PathBuf)> {
    let backend = fake_backend(test)?;
    let (lib, log) = fake_curand(test)?;
    Some((backend.with_rand_libraries(vec![lib.into()]), log))
}

fn rand(ctx: &mut dyn DeviceContext, call: RandCall) -> Result<rcud_math::Reply, Failure> {
    ctx.math_call(4, &rcud_proto::codec::to_vec(&call))
}

/// A new generator of `rng_type` (its wire id).
fn generator(ctx: &mut dyn DeviceContext, rng_type: u32) -> u64 {
    let reply = rand(ctx, RandCall::Create { rng_type }).unwrap();
    assert_eq!(reply.status, 0);
    u64::from_le_bytes(reply.out.try_into().unwrap())
}

fn generate(g: u64, d: Distribution, ptr: u64, n: u64, mean: f64, stddev: f64) -> RandCall {
    RandCall::Generate {
        generator: g,
        distribution: d as u32,
        ptr,
        n,
        mean,
        stddev,
    }
}

/// Status of a call that must reach no failure.
fn rand_status(ctx: &mut dyn DeviceContext, call: RandCall) -> i32 {
    rand(ctx, call).unwrap().status
}

fn u32s(bytes: &[u8]) -> Vec<u32> {
    bytes
        .chunks_exact(4)
        .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect()
}

fn f64s(bytes: &[u8]) -> Vec<f64> {
    bytes
        .chunks_exact(8)
        .map(|c| f64::from_le_bytes(c.try_into().unwrap()))
        .collect()
}

/// The log lines of calls after the first `skip`, by function name.
fn calls_after(log: &PathBuf, skip: usize) -> Vec<String> {
    log_lines(log)
        .iter()
        .skip(skip)
        .filter_map(|l| l.split_whitespace().next().map(str::to_string))
        .collect()
}

/// `key=value` of a log line.
fn field<'a>(line: &'a str, key: &str) -> &'a str {
    line.split_whitespace()
        .find_map(|w| w.strip_prefix(key)?.strip_prefix('='))
        .unwrap_or_default()
}

#[test]
fn fake_curand_generators_run_on_the_contexts_stream() {
    let test = "fake_curand_generators_run_on_the_contexts_stream";
    let Some((b, log)) = fake_rand_backend(test) else {
        return;
    };
    let mut ctx = b.open(0, 0).unwrap();
    let ctx = ctx.as_mut();
    let g = generator(ctx, rcud_math::rand::RNG_XORWOW);
    for call in [
        RandCall::SetSeed {
            generator: g,
            seed: 1000,
        },
        RandCall::SetOffset {
            generator: g,
            offset: 20,
        },
        RandCall::SetOrdering {
            generator: g,
            ordering: 101,
        },
    ] {
        assert_eq!(rand_status(ctx, call), 0);
    }
    // Words seed + offset + position, just inside the allocation's end.
    let buf = ctx.malloc(64).unwrap();
    put(ctx, buf, &[0xee; 64]);
    let call = generate(g, Distribution::Bits, buf + 48, 4, 0.0, 1.0);
    assert_eq!(rand(ctx, call).unwrap(), rcud_math::Reply::ok(Vec::new()));
    let got = read_back(ctx, buf, 64);
    assert_eq!(&got[..48], &[0xee; 48]);
    assert_eq!(u32s(&got[48..]), [1020, 1021, 1022, 1023]);

    // Every distribution of a pseudo-random generator, each value where
    // the fake puts it: uniform (w & 0xffff + 1) / 2^16, normal mean +
    // stddev (w mod 7 - 3), log-normal its exponential.
    let u = |w: u32| f64::from((w & 0xffff) + 1) / 65536.0;
    let z = |w: u32, m: f64, s: f64| m + s * f64::from(w % 7) - 3.0 * s;
    let call = generate(g, Distribution::Uniform, buf, 2, 0.0, 1.0);
    assert_eq!(rand_status(ctx, call), 0);
    assert_eq!(read_f32s(ctx, buf, 2), [u(1024) as f32, u(1025) as f32]);
    let call = generate(g, Distribution::UniformDouble, buf, 2, 0.0, 1.0);
    assert_eq!(rand_status(ctx, call), 0);
    assert_eq!(f64s(&read_back(ctx, buf, 16)), [u(1026), u(1027)]);
    let call = generate(g, Distribution::Normal, buf, 2, 1.5, 2.0);
    assert_eq!(rand_status(ctx, call), 0);
    let want = [z(1028, 1.5, 2.0) as f32, z(1029, 1.5, 2.0) as f32];
    assert_eq!(read_f32s(ctx, buf, 2), want);
    let call = generate(g, Distribution::NormalDouble, buf, 2, -1.0, 0.5);
    assert_eq!(rand_status(ctx, call), 0);
    let want = [z(1030, -1.0, 0.5), z(1031, -1.0, 0.5)];
    assert_eq!(f64s(&read_back(ctx, buf, 16)), want);
    let call = generate(g, Distribution::LogNormal, buf, 2, 0.0, 1.0);
    assert_eq!(rand_status(ctx, call), 0);
    let want = [
        z(1032, 0.0, 1.0).exp() as f32,
        z(1033, 0.0, 1.0).exp() as f32,
    ];
    assert_eq!(read_f32s(ctx, buf, 2), want);
    let call = generate(g, Distribution::LogNormalDouble, buf, 2, 0.0, 1.0);
    assert_eq!(rand_status(ctx, call), 0);
    let want = [z(1034, 0.0, 1.0).exp(), z(1035, 0.0, 1.0).exp()];
    assert_eq!(f64s(&read_back(ctx, buf, 16)), want);

    // 64-bit words of a Sobol64 generator of 2 dimensions.
    let q = generator(ctx, rcud_math::rand::RNG_SOBOL64);
    let call = RandCall::SetDimensions {
        generator: q,
        dimensions: 2,
    };
    assert_eq!(rand_status(ctx, call), 0);
    let call = generate(q, Distribution::LongLong, buf, 4, 0.0, 1.0);
    assert_eq!(rand_status(ctx, call), 0);
    let words: Vec<u64> = read_back(ctx, buf, 32)
        .chunks_exact(8)
        .map(|c| u64::from_le_bytes(c.try_into().unwrap()))
        .collect();
    assert_eq!(words, [0, 1 << 32, 2 << 32, 3 << 32]);

    // Every call reached the library on the context's one stream, set once
    // per generator.
    let lines = log_lines(&log);
    let names: Vec<&str> = lines.iter().filter_map(|l| l.split(' ').next()).collect();
    assert_eq!(
        names,
        [
            "curandCreateGenerator",
            "curandSetStream",
            "curandSetPseudoRandomGeneratorSeed",
            "curandSetGeneratorOffset",
            "curandSetGeneratorOrdering",
            "curandGenerate",
            "curandGenerateUniform",
            "curandGenerateUniformDouble",
            "curandGenerateNormal",
            "curandGenerateNormalDouble",
            "curandGenerateLogNormal",
            "curandGenerateLogNormalDouble",
            "curandCreateGenerator",
            "curandSetStream",
            "curandSetQuasiRandomGeneratorDimensions",
            "curandGenerateLongLong",
        ]
    );
    let stream = field(&lines[1], "stream");
    assert!(stream != "(nil)" && stream != "0x0", "{lines:?}");
    // (A generator is created before its stream is set.)
    for l in lines
        .iter()
        .filter(|l| !l.starts_with("curandCreateGenerator"))
    {
        assert_eq!(field(l, "stream"), stream, "{l}");
    }
    assert_eq!(field(&lines[5], "n"), "4");
    assert_eq!(field(&lines[0], "type"), "101");
    assert_eq!(field(&lines[12], "type"), "203");
}

#[test]
fn fake_curand_bad_requests_are_refused_before_the_library() {
    use rcud_math::rand::{LENGTH_NOT_MULTIPLE, NOT_INITIALIZED, TYPE_ERROR};
    let test = "fake_curand_bad_requests_are_refused_before_the_library";
    let Some((b, log)) = fake_rand_backend(test) else {
        return;
    };
    let mut ctx = b.open(0, 0).unwrap();
    let mut other = b.open(0, 0).unwrap();
    let foreign = other.malloc(64).unwrap();
    let ctx = ctx.as_mut();
    let g = generator(ctx, rcud_math::rand::RNG_PHILOX);
    let buf = ctx.malloc(64).unwrap();
    put(ctx, buf, &[0; 64]);
    let before = log_lines(&log).len();
    let illegal = |r: Result<rcud_math::Reply, Failure>| {
        let f = r.unwrap_err();
        assert_eq!(f.code, CudaError::ILLEGAL_ADDRESS, "{f}");
    };
    // Past the end, by one value; another client's memory; no memory.
    illegal(rand(
        ctx,
        generate(g, Distribution::Bits, buf + 4, 16, 0.0, 1.0),
    ));
    illegal(rand(
        ctx,
        generate(g, Distribution::NormalDouble, buf, 10, 0.0, 1.0),
    ));
    illegal(rand(
        ctx,
        generate(g, Distribution::Uniform, foreign, 4, 0.0, 1.0),
    ));
    illegal(rand(
        ctx,
        generate(g, Distribution::Uniform, 0x10, 4, 0.0, 1.0),
    ));
    // A count whose bytes overflow: CURAND_STATUS_OUT_OF_RANGE.
    let call = generate(g, Distribution::UniformDouble, buf, u64::MAX / 4, 0.0, 1.0);
    assert_eq!(rand_status(ctx, call), rcud_math::rand::OUT_OF_RANGE);
    // Statuses answered as rcud_math answers them, before the range: odd
    // normals of a Box–Muller generator, 64-bit words of a 32-bit one, an
    // unknown distribution.
    let call = generate(g, Distribution::Normal, 0x10, 3, 0.0, 1.0);
    assert_eq!(rand_status(ctx, call), LENGTH_NOT_MULTIPLE);
    let call = generate(g, Distribution::LongLong, buf, 2, 0.0, 1.0);
    assert_eq!(rand_status(ctx, call), TYPE_ERROR);
    let call = RandCall::Generate {
        generator: g,
        distribution: 99,
        ptr: buf,
        n: 2,
        mean: 0.0,
        stddev: 1.0,
    };
    assert_eq!(rand_status(ctx, call), TYPE_ERROR);
    // Unknown and destroyed generators: CURAND_STATUS_NOT_INITIALIZED.
    let call = generate(g + 100, Distribution::Bits, buf, 4, 0.0, 1.0);
    assert_eq!(rand_status(ctx, call), NOT_INITIALIZED);
    let call = RandCall::SetSeed {
        generator: g + 100,
        seed: 1,
    };
    assert_eq!(rand_status(ctx, call), NOT_INITIALIZED);
    assert_eq!(calls_after(&log, before), Vec::<String>::new());

    let destroyed = generator(ctx, rcud_math::rand::RNG_XORWOW);
    assert_eq!(
        rand_status(
            ctx,
            RandCall::Destroy {
                generator: destroyed
            }
        ),
        0
    );
    let before = log_lines(&log).len();
    let call = generate(destroyed, Distribution::Bits, buf, 4, 0.0, 1.0);
    assert_eq!(rand_status(ctx, call), NOT_INITIALIZED);
    let call = RandCall::Destroy {
        generator: destroyed,
    };
    assert_eq!(rand_status(ctx, call), NOT_INITIALIZED);
    assert_eq!(calls_after(&log, before), Vec::<String>::new());

    // Settings the library refuses answer its status (seeds of a
    // quasi-random generator, an ordering of another kind).
    let q = generator(ctx, rcud_math::rand::RNG_SOBOL32);
    let before = log_lines(&log).len();
    let call = RandCall::SetSeed {
        generator: q,
        seed: 5,
    };
    assert_eq!(rand_status(ctx, call), TYPE_ERROR);
    let call = RandCall::SetOrdering {
        generator: q,
        ordering: 101,
    };
    assert_eq!(rand_status(ctx, call), rcud_math::rand::OUT_OF_RANGE);
    assert_eq!(
        calls_after(&log, before),
        [
            "curandSetPseudoRandomGeneratorSeed",
            "curandSetGeneratorOrdering"
        ]
    );
    // The generators still work, and nothing was written by the refusals.
    assert_eq!(read_back(ctx, buf, 64), vec![0; 64]);
    let call = generate(g, Distribution::Bits, buf, 16, 0.0, 1.0);
    assert_eq!(rand_status(ctx, call), 0);
    assert_eq!(
        u32s(&read_back(ctx, buf, 64)),
        (0..16).collect::<Vec<u32>>()
    );
}

#[test]
fn fake_curand_host_generators_answer_through_a_server_buffer() {
    use rcud_math::rand::{
        LENGTH_NOT_MULTIPLE, OUT_OF_RANGE, RNG_MT19937, RNG_SCRAMBLED_SOBOL32, RNG_XORWOW,
    };
    let test = "fake_curand_host_generators_answer_through_a_server_buffer";
    let Some((b, log)) = fake_rand_backend(test) else {
        return;
    };
    let mut ctx = b.open(0, 0).unwrap();
    let ctx = ctx.as_mut();
    // NVIDIA's host generators, answering in the reply through a buffer of
    // the server's own: MT19937 (rcud's CPU generator matches NVIDIA's
    // first value only).
    let host_generator = |ctx: &mut dyn DeviceContext, rng_type| {
        let reply = rand(ctx, RandCall::CreateHost { rng_type }).unwrap();
        assert_eq!(reply.status, 0);
        u64::from_le_bytes(reply.out.try_into().unwrap())
    };
    let g = host_generator(ctx, RNG_MT19937);
    let call = RandCall::SetSeed {
        generator: g,
        seed: 77,
    };
    assert_eq!(rand_status(ctx, call), 0);
    let held = ctx.memory_held();
    let reply = rand(ctx, generate(g, Distribution::Bits, 0, 4, 0.0, 1.0)).unwrap();
    assert_eq!(reply.status, 0);
    assert_eq!(u32s(&reply.out), [77, 78, 79, 80]);
    let reply = rand(ctx, generate(g, Distribution::NormalDouble, 0, 2, 1.0, 0.5)).unwrap();
    // Words 81 and 82: mean + stddev (w mod 7 - 3).
    assert_eq!(f64s(&reply.out), [1.0 + 0.5 * 1.0, 1.0 + 0.5 * 2.0]);
    assert_eq!(ctx.memory_held(), held);
    let lines = log_lines(&log);
    let generated: Vec<&String> = lines
        .iter()
        .filter(|l| l.starts_with("curandGenerate"))
        .collect();
    assert_eq!(generated.len(), 2, "{lines:?}");
    assert!(
        lines[0].starts_with("curandCreateGeneratorHost"),
        "{lines:?}"
    );
    // Statuses before the library: odd normals, more than one answer holds.
    let before = log_lines(&log).len();
    let call = generate(g, Distribution::Normal, 0, 3, 0.0, 1.0);
    assert_eq!(rand_status(ctx, call), LENGTH_NOT_MULTIPLE);
    let call = generate(g, Distribution::Bits, 0, (1 << 19) / 4 + 1, 0.0, 1.0);
    assert_eq!(rand_status(ctx, call), OUT_OF_RANGE);
    assert_eq!(calls_after(&log, before), Vec::<String>::new());

    // XORWOW, with an offset and two calls continuing one sequence.
    let x = host_generator(ctx, RNG_XORWOW);
    let call = RandCall::SetOffset {
        generator: x,
        offset: 10,
    };
    assert_eq!(rand_status(ctx, call), 0);
    let reply = rand(ctx, generate(x, Distribution::Bits, 0, 3, 0.0, 1.0)).unwrap();
    assert_eq!(u32s(&reply.out), [10, 11, 12]);
    let reply = rand(ctx, generate(x, Distribution::Uniform, 0, 1, 0.0, 1.0)).unwrap();
    assert_eq!(reply.out, (14.0f32 / 65536.0).to_le_bytes());

    // Scrambled Sobol (rcud cannot compute it: NVIDIA's constants are
    // unpublished): a device and a host generator.
    let s = generator(ctx, RNG_SCRAMBLED_SOBOL32);
    let buf = ctx.malloc(16).unwrap();
    let call = generate(s, Distribution::Bits, buf, 4, 0.0, 1.0);
    assert_eq!(rand_status(ctx, call), 0);
    assert_eq!(u32s(&read_back(ctx, buf, 16)), [0, 1, 2, 3]);
    let h = host_generator(ctx, RNG_SCRAMBLED_SOBOL32);
    let reply = rand(ctx, generate(h, Distribution::Bits, 0, 4, 0.0, 1.0)).unwrap();
    assert_eq!(u32s(&reply.out), [0, 1, 2, 3]);
    // Neither is asked for the other side's memory.
    let f = rand(ctx, generate(s, Distribution::Bits, 0, 4, 0.0, 1.0)).unwrap_err();
    assert_eq!(f.code, CudaError::INVALID_VALUE);
    let f = rand(ctx, generate(h, Distribution::Bits, buf, 4, 0.0, 1.0)).unwrap_err();
    assert_eq!(f.code, CudaError::INVALID_VALUE);
    assert_eq!(u32s(&read_back(ctx, buf, 16)), [0, 1, 2, 3]);
}

#[test]
fn fake_curand_generators_are_destroyed_with_the_context() {
    let test = "fake_curand_generators_are_destroyed_with_the_context";
    let Some((b, log)) = fake_rand_backend(test) else {
        return;
    };
    let mut ctx = b.open(0, 0).unwrap();
    generator(ctx.as_mut(), rcud_math::rand::RNG_XORWOW);
    generator(ctx.as_mut(), rcud_math::rand::RNG_MTGP32);
    let g = generator(ctx.as_mut(), rcud_math::rand::RNG_PHILOX);
    // One destroyed by the client, the others with the reset and the context.
    assert_eq!(
        rand_status(ctx.as_mut(), RandCall::Destroy { generator: g }),
        0
    );
    let destroyed = |log| {
        log_lines(log)
            .iter()
            .filter(|l| l.starts_with("curandDestroyGenerator"))
            .count()
    };
    assert_eq!(destroyed(&log), 1);
    ctx.reset();
    assert_eq!(destroyed(&log), 3);
    let call = generate(1, Distribution::Bits, 0, 2, 0.0, 1.0);
    assert_eq!(
        rand_status(ctx.as_mut(), call),
        rcud_math::rand::NOT_INITIALIZED
    );
    generator(ctx.as_mut(), rcud_math::rand::RNG_XORWOW);
    drop(ctx);
    assert_eq!(destroyed(&log), 4);
}

#[test]
fn fake_driver_without_curand_says_so() {
    let Some(b) = fake_backend("fake_driver_without_curand_says_so") else {
        return;
    };
    let b = b.with_rand_libraries(vec!["/nonexistent/libcurand.so.10".into()]);
    let mut ctx = b.open(0, 0).unwrap();
    let f = rand(ctx.as_mut(), RandCall::Create { rng_type: 101 }).unwrap_err();
    assert_eq!(f.code, CudaError::NOT_SUPPORTED);
    assert!(
        f.message
            .contains("NVIDIA's cuRAND (libcurand.so.10) was not found on the server"),
        "{f}"
    );
    assert!(f.message.contains("/nonexistent/libcurand.so.10"), "{f}");
}

#[test]
fn fake_curand_poisson_reaches_the_library_with_its_lambda() {
    let test = "fake_curand_poisson_reaches_the_library_with_its_lambda";
    let Some((b, log)) = fake_rand_backend(test) else {
        return;
    };
    let mut ctx = b.open(0, 0).unwrap();
    let ctx = ctx.as_mut();
    let g = generator(ctx, rcud_math::rand::RNG_XORWOW);
    let buf = ctx.malloc(64).unwrap();
    // Odd counts are whole values for Poisson.
    let call = generate(g, Distribution::Poisson, buf, 5, 50.0, 0.0);
    assert_eq!(rand_status(ctx, call), 0);
    let counts = u32s(&read_back(ctx, buf, 20));
    assert!(counts.iter().all(|c| (49..=51).contains(c)), "{counts:?}");
    // NVIDIA's own status for a lambda out of range comes back.
    let call = generate(g, Distribution::Poisson, buf, 4, 0.0, 0.0);
    assert_eq!(rand_status(ctx, call), rcud_math::rand::OUT_OF_RANGE);
    let calls: Vec<String> = log_lines(&log)
        .into_iter()
        .filter(|l| l.starts_with("curandGeneratePoisson"))
        .collect();
    assert_eq!(calls.len(), 2, "{calls:?}");
    // Past the allocation: refused before the library.
    let f = rand(ctx, generate(g, Distribution::Poisson, buf, 17, 5.0, 0.0)).unwrap_err();
    assert_eq!(f.code, CudaError::ILLEGAL_ADDRESS);
}
