//! Generates the parts of the C ABI that follow from the export list:
//!
//! - `stubs.rs`: an exported function for every symbol of `exports/cudart13.txt`
//!   that `src/api/` does not implement; it returns `cudaErrorNotSupported` and
//!   logs its name once.
//! - `symver.rs`: `.symver` directives that give every exported function the
//!   version `libcudart.so.13`, as NVIDIA's library does, so that programs
//!   linked against it (whose references read `cudaMalloc@libcudart.so.13`)
//!   bind to ours.
//! - `libcudart.map`: the linker version script that defines that version node.
//!
//! Generated at build time from the list and the sources, so it cannot drift.

use std::collections::BTreeSet;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

const VERSION_NODE: &str = "libcudart.so.13";

/// Exported although CUDA 13 dropped them: CUDA 12 headers named
/// `cudaGetDeviceProperties` `cudaGetDeviceProperties_v2`, and code that
/// looks symbols up by name (dlsym) still asks for it.
const EXTRA_EXPORTS: &[&str] = &["cudaGetDeviceProperties_v2"];

fn main() {
    let root = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").expect("cargo sets this"));
    let out = PathBuf::from(std::env::var("OUT_DIR").expect("cargo sets this"));
    let list = root.join("exports/cudart13.txt");
    println!("cargo:rerun-if-changed={}", list.display());
    println!("cargo:rerun-if-changed=src/api");

    let exports: Vec<String> = std::fs::read_to_string(&list)
        .expect("read exports/cudart13.txt")
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#') && *l != VERSION_NODE)
        .map(String::from)
        .chain(EXTRA_EXPORTS.iter().map(|s| s.to_string()))
        .collect();
    let implemented = implemented_functions(&root.join("src/api"));
    for name in &implemented {
        assert!(
            exports.contains(name),
            "src/api implements `{name}`, which libcudart.so.13 does not export"
        );
    }

    let mut stubs = String::new();
    let mut symver = String::from("std::arch::global_asm!(\n");
    let mut map = format!("{VERSION_NODE} {{\n  global:\n");
    for name in &exports {
        writeln!(symver, "    \".symver {name}, {name}@@@{VERSION_NODE}\",").unwrap();
        writeln!(map, "    {name};").unwrap();
        if implemented.contains(name) {
            continue;
        }
        writeln!(
            stubs,
            "#[no_mangle]\npub extern \"C\" fn {name}() -> ::std::os::raw::c_int {{\n    \
             static LOGGED: ::std::sync::atomic::AtomicBool = ::std::sync::atomic::AtomicBool::new(false);\n    \
             crate::ffi::not_supported(\"{name}\", &LOGGED)\n}}\n"
        )
        .unwrap();
    }
    symver.push_str(");\n");
    map.push_str("  local:\n    *;\n};\n");

    write(&out.join("stubs.rs"), &stubs);
    write(&out.join("symver.rs"), &symver);
    let map_path = out.join("libcudart.map");
    write(&map_path, &map);

    // Link the cdylib with the soname and version node of NVIDIA's library.
    println!("cargo:rustc-cdylib-link-arg=-Wl,-soname,{VERSION_NODE}");
    println!(
        "cargo:rustc-cdylib-link-arg=-Wl,--version-script={}",
        map_path.display()
    );
    println!("cargo:rustc-env=RCUD_EXPORT_COUNT={}", exports.len());
}

/// Names of the `extern "C"` functions defined in `dir`'s Rust files.
fn implemented_functions(dir: &Path) -> BTreeSet<String> {
    let mut names = BTreeSet::new();
    let mut files: Vec<_> = std::fs::read_dir(dir)
        .expect("read src/api")
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "rs"))
        .collect();
    files.sort();
    for file in files {
        println!("cargo:rerun-if-changed={}", file.display());
        let text = std::fs::read_to_string(&file).expect("read api source");
        for line in text.lines() {
            // `with_ptsz! { fn name / name_ptsz (...) { ... } }` defines both.
            if let Some(rest) = line.trim_start().strip_prefix("fn ") {
                if let Some((a, b)) = rest.split('(').next().and_then(|h| h.split_once(" / ")) {
                    names.insert(a.trim().to_string());
                    names.insert(b.trim().to_string());
                }
                continue;
            }
            let Some(rest) = line.trim_start().strip_prefix("pub ") else {
                continue;
            };
            let rest = rest.strip_prefix("unsafe ").unwrap_or(rest);
            let Some(rest) = rest.strip_prefix("extern \"C\" fn ") else {
                continue;
            };
            match rest.split('(').next().map(str::trim) {
                // The macro's own template.
                Some(name) if name.starts_with('$') => {}
                Some(name) => {
                    names.insert(name.to_string());
                }
                None => {}
            }
        }
    }
    names
}

fn write(path: &Path, text: &str) {
    // Rewrite only on change, so dependent builds stay incremental.
    if std::fs::read_to_string(path).ok().as_deref() != Some(text) {
        std::fs::write(path, text).expect("write generated file");
    }
}
