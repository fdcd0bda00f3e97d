//! The built library exports every libcudart.so.13 function, each with the
//! default version `libcudart.so.13`, under the soname `libcudart.so.13`: the
//! three things the dynamic linker checks when a program linked against
//! NVIDIA's library loads ours instead. It also exports every function of
//! libcuda.so.1 and of libnvidia-ml.so.1, unversioned as NVIDIA's are, and
//! an unimplemented one answers its library's "not supported".

use std::collections::HashSet;
use std::path::PathBuf;
use std::process::Command;

/// `target/<profile>/librcudart.so`, beside this test's `deps/` directory.
fn library() -> PathBuf {
    let exe = std::env::current_exe().expect("test executable path");
    let profile_dir = exe
        .parent()
        .and_then(|deps| deps.parent())
        .expect("target/<profile>/deps layout");
    let lib = profile_dir.join("librcudart.so");
    assert!(
        lib.is_file(),
        "{} is missing: build the workspace first (cargo build --workspace)",
        lib.display()
    );
    lib
}

fn readelf(args: &[&str]) -> String {
    let out = Command::new("readelf")
        .args(args)
        .arg(library())
        .output()
        .expect("readelf (binutils) must be installed to check the library");
    assert!(out.status.success(), "readelf {args:?} failed");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn soname_is_libcudart_so_13() {
    let dynamic = readelf(&["-d"]);
    assert!(
        dynamic.contains("Library soname: [libcudart.so.13]"),
        "{dynamic}"
    );
}

#[test]
fn every_cudart_function_is_exported_with_its_version() {
    let syms = readelf(&["-W", "--dyn-syms"]);
    let versioned: HashSet<&str> = syms
        .lines()
        .filter(|l| l.contains(" FUNC ") && !l.contains(" UND "))
        .filter_map(|l| l.split_whitespace().last())
        .filter_map(|s| s.strip_suffix("@@libcudart.so.13"))
        .collect();
    let expected = list(include_str!("../exports/cudart13.txt"), "libcudart.so.13");
    assert_eq!(expected.len(), 458);
    let missing: Vec<_> = expected
        .iter()
        .filter(|s| !versioned.contains(*s))
        .collect();
    assert!(
        missing.is_empty(),
        "not exported as NAME@@libcudart.so.13: {missing:?}"
    );
    let versions = readelf(&["-V"]);
    assert!(versions.contains("Name: libcudart.so.13"), "{versions}");
}

/// The symbols of an export list, without comments and the version node.
fn list<'a>(text: &'a str, node: &str) -> Vec<&'a str> {
    text.lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#') && *l != node)
        .collect()
}

fn driver_functions() -> Vec<&'static str> {
    list(include_str!("../exports/cuda.txt"), "libcuda.so.1")
}

/// The math libraries: (CUDA 13 soname, CUDA 12 soname where it differs,
/// export list).
const MATH_LIBRARIES: &[(&str, Option<&str>, &str)] = &[
    (
        "libcublas.so.13",
        Some("libcublas.so.12"),
        include_str!("../exports/cublas.txt"),
    ),
    (
        "libcublasLt.so.13",
        Some("libcublasLt.so.12"),
        include_str!("../exports/cublasLt.txt"),
    ),
    (
        "libcufft.so.12",
        Some("libcufft.so.11"),
        include_str!("../exports/cufft.txt"),
    ),
    (
        "libcurand.so.10",
        None,
        include_str!("../exports/curand.txt"),
    ),
    (
        "libcusparse.so.12",
        None,
        include_str!("../exports/cusparse.txt"),
    ),
    (
        "libcusolver.so.12",
        Some("libcusolver.so.11"),
        include_str!("../exports/cusolver.txt"),
    ),
];

/// Every versioned name the math libraries export: `name@@<CUDA 13 soname>`
/// for each listed function, and `name@<CUDA 12 soname>` where that differs.
fn math_symbols() -> HashSet<String> {
    let mut symbols = HashSet::new();
    for (node, cuda12, text) in MATH_LIBRARIES {
        for line in list(text, node) {
            let name = line.split_whitespace().next().unwrap_or_default();
            symbols.insert(format!("{name}@@{node}"));
            if let Some(old) = cuda12 {
                symbols.insert(format!("{name}@{old}"));
            }
        }
    }
    symbols
}

#[test]
fn every_math_function_is_exported_with_both_versions() {
    let syms = readelf(&["-W", "--dyn-syms"]);
    let exported: HashSet<&str> = syms
        .lines()
        .filter(|l| l.contains(" FUNC ") && !l.contains(" UND "))
        .filter_map(|l| l.split_whitespace().last())
        .collect();
    let expected = math_symbols();
    assert!(expected.len() > 3000, "{} math symbols", expected.len());
    let missing: Vec<_> = expected
        .iter()
        .filter(|s| !exported.contains(s.as_str()))
        .collect();
    assert!(
        missing.is_empty(),
        "math functions not exported: {missing:?}"
    );
}

#[test]
fn every_driver_function_is_exported_unversioned() {
    let syms = readelf(&["-W", "--dyn-syms"]);
    let exported: HashSet<&str> = syms
        .lines()
        .filter(|l| l.contains(" FUNC ") && !l.contains(" UND "))
        .filter_map(|l| l.split_whitespace().last())
        .collect();
    let expected = driver_functions();
    assert!(expected.len() > 650, "{} driver functions", expected.len());
    let missing: Vec<_> = expected.iter().filter(|s| !exported.contains(*s)).collect();
    assert!(
        missing.is_empty(),
        "libcuda.so.1 functions not exported: {missing:?}"
    );
}

#[test]
fn an_unimplemented_driver_function_says_not_supported() {
    let lib = library();
    // SAFETY: loading our own library; its initializers only set up state.
    let lib = unsafe { libloading::Library::new(&lib) }.expect("load the library");
    // Device resources (green contexts) are not implemented; the call takes
    // (CUdevice, CUdevResource*, CUdevResourceType).
    type GetResource = unsafe extern "C" fn(i32, *mut u8, i32) -> i32;
    // SAFETY: the symbol is a C function of that signature.
    let get: libloading::Symbol<GetResource> =
        unsafe { lib.get(b"cuDeviceGetDevResource\0") }.expect("cuDeviceGetDevResource exported");
    let mut resource = [0u8; 256];
    // SAFETY: a valid output buffer larger than a CUdevResource; the stub
    // reads nothing.
    let status = unsafe { get(0, resource.as_mut_ptr(), 1) };
    assert_eq!(status, 801, "CUDA_ERROR_NOT_SUPPORTED");
}

fn nvml_functions() -> Vec<&'static str> {
    list(include_str!("../exports/nvml.txt"), "libnvidia-ml.so.1")
        .into_iter()
        .filter_map(|l| l.split_whitespace().next())
        .collect()
}

#[test]
fn every_nvml_function_is_exported_unversioned_under_both_names() {
    let syms = readelf(&["-W", "--dyn-syms"]);
    let exported: HashSet<&str> = syms
        .lines()
        .filter(|l| l.contains(" FUNC ") && !l.contains(" UND "))
        .filter_map(|l| l.split_whitespace().last())
        .collect();
    let expected = nvml_functions();
    assert!(expected.len() > 400, "{} NVML functions", expected.len());
    // nvml.h's macros name the versioned ones; older programs and
    // pynvml's fallbacks the plain ones.
    for name in [
        "nvmlInit",
        "nvmlInit_v2",
        "nvmlInitWithFlags",
        "nvmlDeviceGetCount",
        "nvmlDeviceGetCount_v2",
        "nvmlDeviceGetHandleByIndex",
        "nvmlDeviceGetHandleByIndex_v2",
        "nvmlDeviceGetPciInfo_v3",
        "nvmlDeviceGetMemoryInfo_v2",
        "nvmlDeviceGetComputeRunningProcesses",
        "nvmlDeviceGetComputeRunningProcesses_v3",
    ] {
        assert!(expected.contains(&name), "nvml.txt lacks {name}");
    }
    let missing: Vec<_> = expected.iter().filter(|s| !exported.contains(*s)).collect();
    assert!(
        missing.is_empty(),
        "libnvidia-ml.so.1 functions not exported: {missing:?}"
    );
}

#[test]
fn nvml_needs_init_and_its_stubs_say_not_supported() {
    let lib = library();
    // SAFETY: loading our own library; its initializers only set up state.
    let lib = unsafe { libloading::Library::new(&lib) }.expect("load the library");
    type GetCount = unsafe extern "C" fn(*mut u32) -> i32;
    // SAFETY: `nvmlReturn_t nvmlDeviceGetCount_v2(unsigned int *)`.
    let count: libloading::Symbol<GetCount> =
        unsafe { lib.get(b"nvmlDeviceGetCount_v2\0") }.expect("nvmlDeviceGetCount_v2 exported");
    let mut n = 7u32;
    // SAFETY: a valid output pointer.
    assert_eq!(unsafe { count(&mut n) }, 1, "NVML_ERROR_UNINITIALIZED");
    assert_eq!(n, 7, "written before nvmlInit");
    // Sensors are not reported: (nvmlDevice_t, sensor, unsigned int *).
    type GetTemperature = unsafe extern "C" fn(*mut u8, i32, *mut u32) -> i32;
    // SAFETY: the symbol is a C function of that signature.
    let temperature: libloading::Symbol<GetTemperature> =
        unsafe { lib.get(b"nvmlDeviceGetTemperature\0") }
            .expect("nvmlDeviceGetTemperature exported");
    let mut t = 0u32;
    // SAFETY: the stub reads nothing.
    let status = unsafe { temperature(std::ptr::null_mut(), 0, &mut t) };
    assert_eq!(status, 3, "NVML_ERROR_NOT_SUPPORTED");
}

#[test]
fn nothing_but_the_cuda_api_is_exported() {
    let syms = readelf(&["-W", "--dyn-syms"]);
    let driver: HashSet<&str> = driver_functions()
        .into_iter()
        .chain(nvml_functions())
        .collect();
    let math = math_symbols();
    let leaked: Vec<&str> = syms
        .lines()
        .filter(|l| (l.contains(" FUNC ") || l.contains(" OBJECT ")) && !l.contains(" UND "))
        .filter_map(|l| l.split_whitespace().last())
        .filter(|s| !s.ends_with("@@libcudart.so.13") && !driver.contains(s) && !math.contains(*s))
        .collect();
    assert!(
        leaked.is_empty(),
        "exported beyond the CUDA API: {leaked:?}"
    );
}
