//! Generates the parts of the C ABI that follow from the export lists of the
//! NVIDIA libraries this one library stands in for (`exports/*.txt`, written by
//! `scripts/gen-exports.py` from NVIDIA's headers and libraries):
//!
//! - `stubs.rs`: an exported function for every listed symbol that the
//!   library's hand-written module (`src/cudart/`, `src/driver/`) does not
//!   implement; it returns the library's "not supported" code and logs its
//!   name once.
//! - `symver.rs`: `.symver` directives that give every runtime function the
//!   version `libcudart.so.13`, as NVIDIA's library does, so that programs
//!   linked against it (whose references read `cudaMalloc@libcudart.so.13`)
//!   bind to ours.
//! - `libcudart.map`: the linker version script with one version node per
//!   replaced library.
//! - `procs.rs`: the `cuGetProcAddress` table (name, CUDA version, flavour,
//!   function).
//! - `api-coverage.md`: what each library implements, and every stub with
//!   the reason from `exports/unsupported.txt` (a stub without one is a
//!   build error); `docs/api-coverage.md` is this file, checked by a test.
//!
//! Generated at build time from the lists and the sources, so it cannot drift.

use std::collections::BTreeSet;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

/// One replaced library.
struct Library {
    /// Its soname, also its symbol version node.
    node: &'static str,
    /// The export list under `exports/`.
    list: &'static str,
    /// The hand-written functions, under `src/`.
    sources: &'static str,
    /// Path of the stub body: `fn(name, &LOGGED) -> c_int`.
    not_supported: &'static str,
    /// Whether references carry the version (NVIDIA versions libcudart's
    /// symbols; libcuda's are unversioned, and bind to our default version).
    symver: bool,
    /// Exported although the list lacks them.
    extra: &'static [&'static str],
    /// The CUDA 12 soname, where it differs: every function is also
    /// exported with that version, for programs built against CUDA 12.
    cuda12: Option<&'static str>,
}

/// One of the math libraries: its functions under `src/math/<sources>`.
const fn math(
    node: &'static str,
    cuda12: Option<&'static str>,
    list: &'static str,
    sources: &'static str,
    not_supported: &'static str,
) -> Library {
    Library {
        node,
        list,
        sources,
        not_supported,
        symver: true,
        extra: &[],
        cuda12,
    }
}

const LIBRARIES: &[Library] = &[
    Library {
        node: "libcudart.so.13",
        list: "cudart13.txt",
        sources: "cudart",
        not_supported: "crate::ffi::not_supported",
        symver: true,
        // CUDA 12 headers named `cudaGetDeviceProperties`
        // `cudaGetDeviceProperties_v2`, and code that looks symbols up by
        // name (dlsym) still asks for it.
        extra: &["cudaGetDeviceProperties_v2"],
        cuda12: None,
    },
    Library {
        node: "libcuda.so.1",
        list: "cuda.txt",
        sources: "driver",
        not_supported: "crate::driver::not_supported",
        symver: false,
        extra: &[],
        cuda12: None,
    },
    math(
        "libcublas.so.13",
        Some("libcublas.so.12"),
        "cublas.txt",
        "math/blas",
        "crate::math::blas::not_supported",
    ),
    math(
        "libcublasLt.so.13",
        Some("libcublasLt.so.12"),
        "cublasLt.txt",
        "math/blaslt",
        "crate::math::blaslt::not_supported",
    ),
    math(
        "libcufft.so.12",
        Some("libcufft.so.11"),
        "cufft.txt",
        "math/fft",
        "crate::math::fft::not_supported",
    ),
    math(
        "libcurand.so.10",
        None,
        "curand.txt",
        "math/rand",
        "crate::math::rand::not_supported",
    ),
    math(
        "libcusparse.so.12",
        None,
        "cusparse.txt",
        "math/sparse",
        "crate::math::sparse::not_supported",
    ),
    math(
        "libcusolver.so.12",
        Some("libcusolver.so.11"),
        "cusolver.txt",
        "math/solver",
        "crate::math::solver::not_supported",
    ),
    // NVML: NVIDIA's library versions no symbol; programs bind to ours
    // through the default version, as to libcuda's.
    Library {
        node: "libnvidia-ml.so.1",
        list: "nvml.txt",
        sources: "nvml",
        not_supported: "crate::nvml::not_supported",
        symver: false,
        extra: &[],
        cuda12: None,
    },
];

fn main() {
    let root = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").expect("cargo sets this"));
    let out = PathBuf::from(std::env::var("OUT_DIR").expect("cargo sets this"));

    let reasons = read_reasons(&root.join("exports/unsupported.txt"));
    let mut coverage = Coverage::default();
    let mut stubs = String::new();
    let mut symver = String::from("std::arch::global_asm!(\n");
    let mut map = String::new();
    let mut cuda12_nodes = String::new();
    let mut all_exports = BTreeSet::new();
    for (i, lib) in LIBRARIES.iter().enumerate() {
        let listed = read_list(&root.join("exports").join(lib.list), lib.node);
        let returns: std::collections::BTreeMap<String, Returns> = listed
            .into_iter()
            .chain(lib.extra.iter().map(|s| (s.to_string(), Returns::Status)))
            .collect();
        let exports: Vec<String> = returns.keys().cloned().collect();
        let implemented = implemented_functions(&root.join("src").join(lib.sources));
        for name in &implemented {
            assert!(
                exports.contains(name),
                "src/{} implements `{name}`, which {} does not export",
                lib.sources,
                lib.node
            );
        }
        writeln!(map, "{} {{\n  global:", lib.node).unwrap();
        if let Some(old) = lib.cuda12 {
            writeln!(cuda12_nodes, "{old} {{\n  global:").unwrap();
        }
        for name in &exports {
            assert!(
                all_exports.insert(name.clone()),
                "`{name}` is listed for two libraries"
            );
            if lib.symver {
                writeln!(symver, "    \".symver {name}, {name}@@@{}\",", lib.node).unwrap();
            }
            writeln!(map, "    {name};").unwrap();
            if let Some(old) = lib.cuda12 {
                // A jump under a second name, since a symbol has one
                // default version: `name@<CUDA 12 soname>` for programs
                // linked against CUDA 12.
                writeln!(
                    symver,
                    "    \".globl {name}__cuda12\\n.type {name}__cuda12,@function\\n{name}__cuda12: jmp {name}@PLT\\n.symver {name}__cuda12, {name}@{old}\","
                )
                .unwrap();
                writeln!(cuda12_nodes, "    {name};").unwrap();
            }
            if implemented.contains(name) {
                continue;
            }
            let reason = reason_for(&reasons, name).unwrap_or_else(|| {
                panic!(
                    "`{name}` is a stub of {} without a reason in exports/unsupported.txt",
                    lib.node
                )
            });
            coverage.stub(lib.node, name, reason);
            let (ret, body) = match returns[name] {
                Returns::Status => (" -> ::std::os::raw::c_int", lib.not_supported),
                Returns::Void => ("", "crate::ffi::stub_void"),
                Returns::Float => (" -> f64", "crate::ffi::stub_float"),
                Returns::Value => (" -> usize", "crate::ffi::stub_value"),
            };
            writeln!(
                stubs,
                "#[no_mangle]\npub extern \"C\" fn {name}(){ret} {{\n    \
                 static LOGGED: ::std::sync::atomic::AtomicBool = ::std::sync::atomic::AtomicBool::new(false);\n    \
                 {body}(\"{name}\", {reason:?}, &LOGGED)\n}}\n",
            )
            .unwrap();
        }
        coverage.library(lib.node, exports.len());
        if i == 0 {
            map.push_str("  local:\n    *;\n");
        }
        map.push_str("};\n");
        if lib.cuda12.is_some() {
            cuda12_nodes.push_str("};\n");
        }
        println!(
            "cargo:rustc-env=RCUD_{}_EXPORT_COUNT={}",
            lib.sources.replace('/', "_").to_uppercase(),
            exports.len()
        );
    }
    symver.push_str(");\n");
    map.push_str(&cuda12_nodes);

    write(&out.join("stubs.rs"), &stubs);
    write(&out.join("api-coverage.md"), &coverage.markdown());
    write(&out.join("symver.rs"), &symver);
    write(&out.join("procs.rs"), &proc_table(&root, &all_exports));
    write(&out.join("driver_errors.rs"), &driver_errors(&root));
    println!(
        "cargo:rustc-env=RCUD_CUDA_VERSION={}",
        header_value(&root, "CUDA_VERSION")
    );
    println!(
        "cargo:rustc-env=RCUD_DEVICE_ATTRIBUTE_MAX={}",
        header_value(&root, "CU_DEVICE_ATTRIBUTE_MAX")
    );
    let map_path = out.join("libcudart.map");
    write(&map_path, &map);

    // Link the cdylib with the soname and version nodes of NVIDIA's runtime;
    // `rcud run` also offers the file as libcuda.so.1, and the dynamic
    // linker loads one file once, whatever name reached it.
    println!(
        "cargo:rustc-cdylib-link-arg=-Wl,-soname,{}",
        LIBRARIES[0].node
    );
    println!(
        "cargo:rustc-cdylib-link-arg=-Wl,--version-script={}",
        map_path.display()
    );
}

/// `exports/unsupported.txt`: (name or `prefix*`, reason) per line.
fn read_reasons(path: &Path) -> Vec<(String, String)> {
    println!("cargo:rerun-if-changed={}", path.display());
    std::fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("read {}: {e}", path.display()))
        .lines()
        .filter(|l| !l.trim().is_empty() && !l.starts_with('#'))
        .map(|l| {
            let (name, reason) = l
                .split_once('\t')
                .unwrap_or_else(|| panic!("exports/unsupported.txt: no tab in `{l}`"));
            (name.trim().to_string(), reason.trim().to_string())
        })
        .collect()
}

/// The reason for stub `name`: its own line, else the longest prefix.
fn reason_for<'a>(reasons: &'a [(String, String)], name: &str) -> Option<&'a str> {
    if let Some((_, r)) = reasons.iter().find(|(n, _)| n == name) {
        return Some(r);
    }
    reasons
        .iter()
        .filter_map(|(n, r)| {
            let prefix = n.strip_suffix('*')?;
            name.starts_with(prefix).then_some((prefix.len(), r))
        })
        .max_by_key(|(len, _)| *len)
        .map(|(_, r)| r.as_str())
}

/// A stub and why.
type Stub = (String, String);

/// The numbers and stubs of `api-coverage.md`.
#[derive(Default)]
struct Coverage {
    /// Library, its export count, its stubs.
    libraries: Vec<(String, usize, Vec<Stub>)>,
    pending: Vec<Stub>,
}

impl Coverage {
    fn stub(&mut self, _node: &str, name: &str, reason: &str) {
        self.pending.push((name.to_string(), reason.to_string()));
    }

    fn library(&mut self, node: &str, exports: usize) {
        let stubs = std::mem::take(&mut self.pending);
        self.libraries.push((node.to_string(), exports, stubs));
    }

    fn markdown(&self) -> String {
        let mut md = String::from(
            "# API coverage\n\n\
             Generated by `cuda-shim/build.rs` from the export lists of the NVIDIA\n\
             libraries rcud stands in for (`cuda-shim/exports/*.txt`, written by\n\
             `scripts/gen-exports.py` from NVIDIA's headers), the functions\n\
             `cuda-shim/src/` implements, and the reasons in\n\
             `cuda-shim/exports/unsupported.txt`. Do not edit: run\n\
             `RCUD_BLESS=1 cargo test -p rcud-cudart --test api_coverage` after a change.\n\
             A stub answers `cudaErrorNotSupported` (`CUDA_ERROR_NOT_SUPPORTED`) and logs\n\
             its name and reason once (`RCUD_LOG=warn`). Names ending in `_ptsz`/`_ptds`\n\
             are the per-thread-default-stream twins and count as functions.\n\n\
             | library | exported functions | implemented | stubs |\n|---|---|---|---|\n",
        );
        for (node, exports, stubs) in &self.libraries {
            let done = exports - stubs.len();
            writeln!(
                md,
                "| `{node}` | {exports} | {done} ({:.0} %) | {} |",
                100.0 * done as f64 / *exports as f64,
                stubs.len()
            )
            .unwrap();
        }
        for (node, _, stubs) in &self.libraries {
            writeln!(
                md,
                "\n## Stubs of `{node}`\n\n| function | why |\n|---|---|"
            )
            .unwrap();
            for (name, reason) in stubs {
                writeln!(md, "| `{name}` | {reason} |").unwrap();
            }
        }
        md
    }
}

/// What a listed function returns, so that its stub returns something sane.
#[derive(Clone, Copy)]
enum Returns {
    /// The library's status code (the runtime's and driver's too).
    Status,
    Void,
    /// A floating-point or complex value (legacy cuBLAS).
    Float,
    /// A pointer, a size or an int that is not a status.
    Value,
}

/// The symbols of an export list: one per line (a name, then optionally
/// what it returns: `status`, `void`, `float` or `value`), `#` comments, and
/// the version node's own name left out.
fn read_list(path: &Path, node: &str) -> Vec<(String, Returns)> {
    println!("cargo:rerun-if-changed={}", path.display());
    std::fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("read {}: {e}", path.display()))
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#') && *l != node)
        .map(|l| {
            let mut fields = l.split_whitespace();
            let name = fields.next().unwrap_or_default().to_string();
            let returns = match fields.next() {
                None | Some("status") => Returns::Status,
                Some("void") => Returns::Void,
                Some("float") => Returns::Float,
                Some("value") => Returns::Value,
                Some(other) => panic!("{}: `{name}` returns `{other}`?", path.display()),
            };
            (name, returns)
        })
        .collect()
}

/// `static PROCS: &[(&str, u32, bool, *const ())]`: name, the CUDA version
/// the variant appeared in, whether it is the per-thread-stream variant, and
/// the exported function.
fn proc_table(root: &Path, exports: &BTreeSet<String>) -> String {
    let path = root.join("exports/cuda-procs.txt");
    println!("cargo:rerun-if-changed={}", path.display());
    let text = std::fs::read_to_string(&path).expect("read exports/cuda-procs.txt");
    let mut out = String::from("extern \"C\" {\n");
    let mut rows = String::new();
    let mut declared = BTreeSet::new();
    for line in text
        .lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
    {
        let fields: Vec<&str> = line.split_whitespace().collect();
        let [name, version, flavour, symbol] = fields[..] else {
            panic!("exports/cuda-procs.txt: bad line `{line}`");
        };
        assert!(
            exports.contains(symbol),
            "cuda-procs.txt names `{symbol}`, which no list exports"
        );
        if declared.insert(symbol.to_string()) {
            writeln!(out, "    fn {symbol}();").unwrap();
        }
        writeln!(
            rows,
            "    Proc {{ name: \"{name}\", version: {version}, per_thread: {}, function: {symbol} as *const () }},",
            flavour == "ptds"
        )
        .unwrap();
    }
    out.push_str("}\n\n/// Every `cuGetProcAddress` entry, from cudaTypedefs.h.\n");
    out.push_str("pub(crate) static PROCS: &[Proc] = &[\n");
    out.push_str(&rows);
    out.push_str("];\n");
    out
}

/// A value of the cuda.h that `exports/cuda.txt` comes from, which the list's
/// header records (`# NAME value`): `CUDA_VERSION`, the driver API version
/// this library implements, and `CU_DEVICE_ATTRIBUTE_MAX`.
fn header_value(root: &Path, name: &str) -> u32 {
    let text =
        std::fs::read_to_string(root.join("exports/cuda.txt")).expect("read exports/cuda.txt");
    let prefix = format!("# {name} ");
    text.lines()
        .find_map(|l| l.strip_prefix(prefix.as_str()))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or_else(|| panic!("exports/cuda.txt records no {name}"))
}

/// `static DRIVER_ERRORS: &[(c_int, &CStr)]`: every `CUresult` and its name.
fn driver_errors(root: &Path) -> String {
    let path = root.join("exports/cuda-errors.txt");
    println!("cargo:rerun-if-changed={}", path.display());
    let text = std::fs::read_to_string(&path).expect("read exports/cuda-errors.txt");
    let mut out = String::from(
        "/// Every `CUresult` of cuda.h and its name.\n\
         pub(crate) static DRIVER_ERRORS: &[(::std::os::raw::c_int, &::std::ffi::CStr)] = &[\n",
    );
    for line in text
        .lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
    {
        let (value, name) = line
            .split_once(' ')
            .unwrap_or_else(|| panic!("exports/cuda-errors.txt: bad line `{line}`"));
        writeln!(out, "    ({value}, c\"{name}\"),").unwrap();
    }
    out.push_str("];\n");
    out
}

/// Names of the `extern "C"` functions defined in `dir`'s Rust files.
fn implemented_functions(dir: &Path) -> BTreeSet<String> {
    println!("cargo:rerun-if-changed={}", dir.display());
    let mut names = BTreeSet::new();
    let mut files = Vec::new();
    rust_files(dir, &mut files);
    files.sort();
    for file in files {
        println!("cargo:rerun-if-changed={}", file.display());
        let text = std::fs::read_to_string(&file).expect("read api source");
        for line in text.lines() {
            // `with_ptsz! { fn name / name_ptsz (...) { ... } }` defines both.
            if let Some(rest) = line.trim_start().strip_prefix("fn ") {
                // Macro invocations may name more: `fn a / b / c (...)`.
                let head = rest.split('(').next().unwrap_or("");
                if head.contains(" / ") {
                    // A macro's own pattern names `$name:ident`.
                    for name in head.split(" / ").map(str::trim) {
                        if !name.starts_with('$') {
                            names.insert(name.to_string());
                        }
                    }
                }
                continue;
            }
            // `driver_fn! { name (args) ...` and `driver_fn! { [name, twin] (args) ...`.
            if let Some(rest) = line.trim_start().strip_prefix("driver_fn! { ") {
                let list = rest.split('(').next().unwrap_or("");
                for name in list
                    .trim()
                    .trim_start_matches('[')
                    .trim_end_matches(']')
                    .split(',')
                {
                    let name = name.trim();
                    // The macro's own rules name `$name`.
                    if !name.is_empty() && !name.starts_with('$') {
                        names.insert(name.to_string());
                    }
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

/// The Rust files under `dir`, at any depth.
fn rust_files(dir: &Path, files: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("read {}: {e}", dir.display()))
        .filter_map(Result::ok)
    {
        let path = entry.path();
        if path.is_dir() {
            println!("cargo:rerun-if-changed={}", path.display());
            rust_files(&path, files);
        } else if path.extension().is_some_and(|e| e == "rs") {
            files.push(path);
        }
    }
}

fn write(path: &Path, text: &str) {
    // Rewrite only on change, so dependent builds stay incremental.
    if std::fs::read_to_string(path).ok().as_deref() != Some(text) {
        std::fs::write(path, text).expect("write generated file");
    }
}
