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

// ---- stand-ins for NVIDIA's math libraries (fake_lib*.c) ---------------

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

fn log_lines(log: &PathBuf) -> Vec<String> {
    std::fs::read_to_string(log)
        .unwrap_or_default()
        .lines()
        .map(str::to_string)
        .collect()
}

/// Writes `bytes` to the client's device memory at `ptr`.
fn put(ctx: &mut dyn DeviceContext, ptr: u64, bytes: &[u8]) {
    ctx.copy_from_host(ptr, bytes.len() as u64, &mut SliceSource::new(bytes))
        .unwrap();
}

/// Little-endian bytes of `values`.
fn f32s(values: &[f32]) -> Vec<u8> {
    values.iter().flat_map(|v| v.to_le_bytes()).collect()
}

/// `n` floats of the client's device memory at `ptr`.
fn read_f32s(ctx: &mut dyn DeviceContext, ptr: u64, n: usize) -> Vec<f32> {
    read_back(ctx, ptr, 4 * n as u64)
        .chunks_exact(4)
        .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect()
}

mod blas;
mod blaslt;
mod fft;
mod rand;
mod solver;
mod sparse;
