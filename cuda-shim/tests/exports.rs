//! The built library exports every libcudart.so.13 function, each with the
//! default version `libcudart.so.13`, under the soname `libcudart.so.13`: the
//! three things the dynamic linker checks when a program linked against
//! NVIDIA's library loads ours instead. It also exports every function of
//! libcuda.so.1, unversioned as NVIDIA's are, and an unimplemented one
//! answers `CUDA_ERROR_NOT_SUPPORTED`.

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
    // Conditional graph nodes are not implemented; the call takes
    // (CUgraphConditionalHandle*, CUgraph, CUcontext, unsigned, unsigned).
    type Create = unsafe extern "C" fn(*mut u64, *mut u8, *mut u8, u32, u32) -> i32;
    // SAFETY: the symbol is a C function of that signature.
    let create: libloading::Symbol<Create> =
        unsafe { lib.get(b"cuGraphConditionalHandleCreate\0") }
            .expect("cuGraphConditionalHandleCreate exported");
    let mut handle = 0u64;
    let null = std::ptr::null_mut();
    // SAFETY: a valid output pointer; the stub reads nothing else.
    let status = unsafe { create(&mut handle, null, null, 0, 0) };
    assert_eq!(status, 801, "CUDA_ERROR_NOT_SUPPORTED");
}

#[test]
fn nothing_but_the_cuda_api_is_exported() {
    let syms = readelf(&["-W", "--dyn-syms"]);
    let driver: HashSet<&str> = driver_functions().into_iter().collect();
    let leaked: Vec<&str> = syms
        .lines()
        .filter(|l| (l.contains(" FUNC ") || l.contains(" OBJECT ")) && !l.contains(" UND "))
        .filter_map(|l| l.split_whitespace().last())
        .filter(|s| !s.ends_with("@@libcudart.so.13") && !driver.contains(s))
        .collect();
    assert!(
        leaked.is_empty(),
        "exported beyond the CUDA API: {leaked:?}"
    );
}
