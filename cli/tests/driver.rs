//! The CUDA driver API end to end: the self-checking programs of
//! `tests/cuda/driver/`, written against `cuda.h` only (or mixing it with the
//! runtime), built with nvcc and linked as on a CUDA machine (`-lcuda`, here
//! against a link-time stub, so the binaries need `libcuda.so.1`; one program
//! `dlopen`s it instead), run unmodified under `rcud run`. Their kernels come
//! as PTX text and fat binaries built from `kernels.cu` / `matmul.cu`, or from
//! NVRTC at run time. Every run must exit with status 0 and print `PASS` last;
//! each test also checks the program's own lines.
//!
//! Requirements and skipping as in `e2e.rs` (see `common/mod.rs`): without
//! nvcc the tests print `skipped: ...` and pass, unless `RCUD_REQUIRE_CUDA=1`.
//! `d_nvrtc` also needs NVRTC beside nvcc (`scripts/ensure-nvcc.sh` installs
//! it). Everything is built into `<repo>/target/cuda-tests/`.

mod common;

use std::ffi::OsString;
use std::path::PathBuf;
use std::time::Duration;

use common::{
    cuda_stub_dir, driver_src_dir, nvcc_build, nvrtc_lib, rcud_run_opts, setup, Env, Run, Server,
};

/// Limit for one run; each program takes a few seconds at most.
const DRIVER_RUN_TIMEOUT: Duration = Duration::from_secs(90);

fn src(name: &str) -> PathBuf {
    driver_src_dir().join(name)
}

fn strings(args: &[&str]) -> Vec<String> {
    args.iter().map(|a| a.to_string()).collect()
}

/// The device code of `kernels.cu` as PTX text, a fat binary with only
/// compute_80 PTX, and a fat binary with sm_80 code and compute_80 PTX.
struct Kernels {
    ptx: PathBuf,
    ptx_fatbin: PathBuf,
    full_fatbin: PathBuf,
}

fn kernels(env: &Env) -> Kernels {
    let source = [src("kernels.cu")];
    Kernels {
        ptx: nvcc_build(
            env,
            "d-kernels.ptx",
            &source,
            &[],
            &strings(&["-ptx", "-arch=compute_80"]),
        ),
        ptx_fatbin: nvcc_build(
            env,
            "d-kernels-ptx.fatbin",
            &source,
            &[],
            &strings(&["-fatbin", "-gencode", "arch=compute_80,code=compute_80"]),
        ),
        full_fatbin: nvcc_build(
            env,
            "d-kernels-full.fatbin",
            &source,
            &[],
            &strings(&[
                "-fatbin",
                "-gencode",
                "arch=compute_80,code=[sm_80,compute_80]",
            ]),
        ),
    }
}

fn path_arg(path: &std::path::Path) -> String {
    path.to_str()
        .unwrap_or_else(|| panic!("{} is not UTF-8", path.display()))
        .to_string()
}

/// Builds the host program `tests/cuda/driver/<file>` into
/// `target/cuda-tests/<name>`: driver API only (`-cudart none`), linked
/// against the libcuda stub, plus `extra` arguments.
fn build_driver_program(env: &Env, name: &str, file: &str, extra: &[String]) -> PathBuf {
    let stubs = cuda_stub_dir();
    let mut args = strings(&["-cudart", "none", "-O2", "-Xcompiler", "-Wall"]);
    args.push(format!("-L{}", path_arg(&stubs)));
    args.push("-lcuda".into());
    args.extend_from_slice(extra);
    nvcc_build(
        env,
        name,
        &[src(file)],
        &[src("drv_check.h"), stubs.join("libcuda.so")],
        &args,
    )
}

/// `rcud run --backend emu [RCUD_ARGS] -- PROGRAM ARGS` with an embedded
/// server, or `rcud run --server ADDR -- ...` against `server`.
fn run(
    env: &Env,
    server: Option<&Server>,
    rcud_args: &[&str],
    vars: &[(&str, &std::ffi::OsStr)],
    program: &std::path::Path,
    args: &[&str],
) -> Run {
    let mut all_args = Vec::new();
    if server.is_none() {
        all_args.extend(["--backend", "emu"]);
    }
    all_args.extend_from_slice(rcud_args);
    let run = rcud_run_opts(
        env,
        server,
        &all_args,
        vars,
        program,
        args,
        DRIVER_RUN_TIMEOUT,
    );
    run.assert_pass(server);
    run
}

fn assert_lines(run: &Run, lines: &[&str]) {
    for line in lines {
        run.assert_line(line);
    }
}

// ---------------------------------------------------------------------------
// d_vector_add
// ---------------------------------------------------------------------------

fn vector_add(env: &Env, server: Option<&Server>, rcud_args: &[&str]) {
    let k = kernels(env);
    let bin = build_driver_program(env, "d_vector_add", "d_vector_add.c", &[]);
    let (ptx, ptx_fatbin, full_fatbin) = (
        path_arg(&k.ptx),
        path_arg(&k.ptx_fatbin),
        path_arg(&k.full_fatbin),
    );
    let run = run(
        env,
        server,
        rcud_args,
        &[],
        &bin,
        &[&ptx, &ptx_fatbin, &full_fatbin],
    );
    assert_lines(
        &run,
        &[
            "compute capability: 8.0",
            "vector_add cuModuleLoadData(ptx): ok",
            "vector_add cuModuleLoad(fatbin): ok",
            "vector_add cuModuleLoadFatBinary: ok",
            "axpy cuLaunchKernel(extra): ok",
            "axpy cuParamSet*, cuLaunchGrid, cuLaunchGridAsync, cuLaunch: ok",
            "vector_add cuLinkCreate (pre-6.5 names): ok",
            "cuCtxPopCurrent, cuCtxPushCurrent, cuLinkCreate, cuLinkAddData, cuMemAllocHost (old names): ok",
            "vector_add cuLaunchKernel(stream): ok",
            "vector_add cuLaunchKernelEx: ok",
            "rotate_after_sync cuLaunchCooperativeKernel: ok",
            "cuModuleGetGlobal: ok",
            "cuModuleGetFunctionCount, cuModuleEnumerateFunctions, occupancy with flags: ok",
        ],
    );
    run.assert_contains("device 0: rcud emulated GPU");
}

#[test]
fn d_vector_add() {
    let Some(env) = setup("d_vector_add") else {
        return;
    };
    vector_add(env, None, &[]);
}

#[test]
fn d_vector_add_over_csr() {
    let Some(env) = setup("d_vector_add_over_csr") else {
        return;
    };
    vector_add(env, None, &["--transport", "csr"]);
}

#[test]
fn d_vector_add_over_msr() {
    let Some(env) = setup("d_vector_add_over_msr") else {
        return;
    };
    vector_add(env, None, &["--transport", "msr"]);
}

/// Against a separately started `rcud-server` (agent processes).
#[test]
fn d_vector_add_remote_server() {
    let Some(env) = setup("d_vector_add_remote_server") else {
        return;
    };
    let mut server = Server::start(env);
    vector_add(env, Some(&server), &[]);
    server.assert_running();
}

// ---------------------------------------------------------------------------
// The other programs
// ---------------------------------------------------------------------------

#[test]
fn d_matmul() {
    let Some(env) = setup("d_matmul") else {
        return;
    };
    let ptx = nvcc_build(
        env,
        "d-matmul.ptx",
        &[src("matmul.cu")],
        &[],
        &strings(&["-ptx", "-arch=compute_80"]),
    );
    let bin = build_driver_program(env, "d_matmul", "d_matmul.c", &[]);
    let run = run(env, None, &[], &[], &bin, &[&path_arg(&ptx)]);
    run.assert_line("matmul 256x256 * 256x256 on 2 streams: ok");
    run.assert_contains("elapsed: ");
}

/// Runs d_contexts under `rcud run --backend emu RCUD_ARGS` and checks its
/// lines, and `second_device`.
fn contexts(name: &str, rcud_args: &[&str], second_device: &str) {
    let Some(env) = setup(name) else {
        return;
    };
    let k = kernels(env);
    let bin = build_driver_program(env, "d_contexts", "d_contexts.c", &strings(&["-lpthread"]));
    let run = run(env, None, rcud_args, &[], &bin, &[&path_arg(&k.ptx)]);
    assert_lines(
        &run,
        &[
            "cuGetErrorName(9999) -> CUDA_ERROR_INVALID_VALUE",
            "driver version >= 13000: ok",
            "cuDeviceGet before cuInit -> CUDA_ERROR_NOT_INITIALIZED",
            "cuDeviceGet(count) -> CUDA_ERROR_INVALID_DEVICE",
            "cuDeviceGet(-1) -> CUDA_ERROR_INVALID_DEVICE",
            "cuMemAlloc without context -> CUDA_ERROR_INVALID_CONTEXT",
            "cuCtxPopCurrent on an empty stack -> CUDA_ERROR_INVALID_CONTEXT",
            "no current context: ok",
            "primary context: ok",
            "cuCtxGetApiVersion: ok",
            "context stack: ok",
            "cuModuleGetFunction(no_such_kernel) -> CUDA_ERROR_NOT_FOUND",
            "cuModuleGetGlobal(no_such_variable) -> CUDA_ERROR_NOT_FOUND",
            "kernel in a created context: ok",
            "per-thread current context: ok",
            second_device,
            "cuGetProcAddress: ok",
            "cuCtxDestroy: ok",
        ],
    );
}

#[test]
fn d_contexts() {
    contexts("d_contexts", &[], "second device: not present");
}

/// With two emulated GPUs: contexts of the second one, cuMemcpyPeer.
#[test]
fn d_contexts_two_gpus() {
    contexts(
        "d_contexts_two_gpus",
        &["--emu-gpus", "2"],
        "second device: ok",
    );
}

#[test]
fn d_mixed() {
    let Some(env) = setup("d_mixed") else {
        return;
    };
    let k = kernels(env);
    let stubs = cuda_stub_dir();
    let mut args = strings(&[
        "-cudart",
        "shared",
        "-arch=sm_80",
        "-O2",
        "-Xcompiler",
        "-Wall",
    ]);
    if let Some(dir) = &env.link_dir {
        args.push(format!("-L{}", path_arg(dir)));
    }
    args.push(format!("-L{}", path_arg(&stubs)));
    args.push("-lcuda".into());
    let bin = nvcc_build(
        env,
        "d_mixed",
        &[src("d_mixed.cu")],
        &[src("drv_check.h"), stubs.join("libcuda.so")],
        &args,
    );
    let run = run(env, None, &[], &[], &bin, &[&path_arg(&k.ptx)]);
    assert_lines(
        &run,
        &[
            "primary context shared: ok",
            "cudaMalloc + cuMemcpyHtoD: ok",
            "cuMemAlloc + cudaMemcpy: ok",
            "cuLaunchKernel on a cudaStream_t: ok",
            "cudaMemcpyAsync on a CUstream: ok",
        ],
    );
}

#[test]
fn d_nvrtc() {
    let Some(env) = setup("d_nvrtc") else {
        return;
    };
    let Some((nvrtc_dir, nvrtc_link)) = nvrtc_lib(env) else {
        let why = format!(
            "no NVRTC beside {} (scripts/ensure-nvcc.sh installs it into .venv-cuda)",
            env.nvcc.display()
        );
        if std::env::var("RCUD_REQUIRE_CUDA").as_deref() == Ok("1") {
            panic!("RCUD_REQUIRE_CUDA=1 but {why}");
        }
        use std::io::Write;
        let _ = writeln!(std::io::stderr(), "skipped: d_nvrtc: {why}");
        return;
    };
    let bin = build_driver_program(
        env,
        "d_nvrtc",
        "d_nvrtc.c",
        &[format!("-L{}", path_arg(&nvrtc_dir)), nvrtc_link],
    );
    // `rcud run` puts its own directory in front of LD_LIBRARY_PATH.
    let mut library_path = OsString::from(nvrtc_dir.as_os_str());
    if let Some(old) = std::env::var_os("LD_LIBRARY_PATH").filter(|v| !v.is_empty()) {
        library_path.push(":");
        library_path.push(old);
    }
    let run = run(
        env,
        None,
        &[],
        &[("LD_LIBRARY_PATH", library_path.as_os_str())],
        &bin,
        &[],
    );
    assert_lines(
        &run,
        &[
            "cuModuleLoadDataEx: ok",
            "saxpy: ok",
            "jit::scale<double>: ok",
        ],
    );
}

#[test]
fn d_dlopen() {
    let Some(env) = setup("d_dlopen") else {
        return;
    };
    let k = kernels(env);
    // Not linked with libcuda: it dlopens libcuda.so.1.
    let bin = nvcc_build(
        env,
        "d_dlopen",
        &[src("d_dlopen.c")],
        &[],
        &strings(&["-cudart", "none", "-O2", "-Xcompiler", "-Wall", "-ldl"]),
    );
    let run = run(env, None, &[], &[], &bin, &[&path_arg(&k.ptx)]);
    assert_lines(
        &run,
        &[
            "vector_add via dlsym: ok",
            "vector_add via cuGetProcAddress: ok",
        ],
    );
}

/// Bad handles, pointers, modules and tables get the driver's own codes and
/// one line of explanation; the program and the server carry on.
#[test]
fn d_bad_input() {
    let Some(env) = setup("d_bad_input") else {
        return;
    };
    let k = kernels(env);
    let bin = build_driver_program(env, "d_bad_input", "d_bad_input.c", &[]);
    let run = run(env, None, &[], &[], &bin, &[&path_arg(&k.ptx)]);
    assert_lines(
        &run,
        &[
            "cuLaunchKernel(NULL function) -> CUDA_ERROR_INVALID_HANDLE",
            "cuLaunchKernel(made-up function) -> CUDA_ERROR_INVALID_HANDLE",
            "cuStreamSynchronize(made-up stream) -> CUDA_ERROR_INVALID_HANDLE",
            "cuModuleGetFunction(made-up module) -> CUDA_ERROR_INVALID_HANDLE",
            "cuCtxDestroy(made-up context) -> CUDA_ERROR_INVALID_CONTEXT",
            "cuMemcpyHtoD(no allocation) -> CUDA_ERROR_INVALID_VALUE",
            "cuMemFree(no allocation) -> CUDA_ERROR_INVALID_VALUE",
            "cuModuleLoadData(broken PTX) -> CUDA_ERROR_INVALID_PTX",
            "cuModuleLoad(missing file) -> CUDA_ERROR_FILE_NOT_FOUND",
            "cuGetExportTable(unknown) -> CUDA_ERROR_INVALID_VALUE",
            "after bad input: vector_add ok",
        ],
    );
    // Each refusal that a user must understand says why, in one line.
    assert!(
        run.stderr.contains(
            "cuGetExportTable: the driver's private table \
             {01234567-89ab-cdef-0123-456789abcdef} is not provided by rcud"
        ),
        "{}",
        run.transcript()
    );
    assert!(run.stderr.contains("rcud: "), "{}", run.transcript());
}

// ---------------------------------------------------------------------------
// d_vmm: virtual memory management and stream memory operations
// ---------------------------------------------------------------------------

/// Physical allocations mapped at reserved addresses (aliasing, access,
/// kernels, copies, memsets, retain/release, export and import through a
/// file descriptor) and stream memory operations, with the driver's codes
/// for what it refuses.
#[test]
fn d_vmm() {
    let Some(env) = setup("d_vmm") else {
        return;
    };
    let k = kernels(env);
    let bin = build_driver_program(env, "d_vmm", "d_vmm.c", &[]);
    let run = run(env, None, &[], &[], &bin, &[&path_arg(&k.ptx)]);
    assert_lines(
        &run,
        &[
            "attributes: ok",
            "granularity: 2097152",
            "cuMemGetAllocationGranularity(bad location) -> CUDA_ERROR_INVALID_VALUE",
            "cuMemCreate(size not a multiple of the granularity) -> CUDA_ERROR_INVALID_VALUE",
            "cuMemMap(over a mapping) -> CUDA_ERROR_INVALID_VALUE",
            "cuMemcpyHtoD(before cuMemSetAccess) -> CUDA_ERROR_INVALID_VALUE",
            "two mappings alias: ok",
            "kernel, memset on mapped memory: ok",
            "cuMemcpyHtoD(past the last mapping) -> CUDA_ERROR_INVALID_VALUE",
            "copies and memsets across adjacent mappings: ok",
            "cuMemRelease(twice) -> CUDA_ERROR_INVALID_VALUE",
            "cuMemFree(mapped address) -> CUDA_ERROR_INVALID_VALUE",
            "cuMemUnmap(half a mapping) -> CUDA_ERROR_INVALID_VALUE",
            "cuMemAddressFree(still mapped) -> CUDA_ERROR_INVALID_VALUE",
            "cuMemcpyHtoD(after cuMemUnmap) -> CUDA_ERROR_INVALID_VALUE",
            "retain, release while mapped, unmap, free: ok",
            "cuMemExportToShareableHandle(type not requested) -> CUDA_ERROR_INVALID_VALUE",
            "cuMemImportFromShareableHandle(not a handle) -> CUDA_ERROR_INVALID_VALUE",
            "export, import through a file descriptor: ok",
            "cuStreamWaitValue32(bad flags) -> CUDA_ERROR_INVALID_VALUE",
            "cuStreamWriteValue64(misaligned) -> CUDA_ERROR_INVALID_VALUE",
            "stream memory operations: ok",
        ],
    );
}

/// A stream wait that nothing queued before it can satisfy ends with
/// `CUDA_ERROR_TIMEOUT` at the server's operation time limit instead of
/// hanging (rcud runs a context's work in order).
#[test]
fn d_vmm_wait_times_out() {
    let Some(env) = setup("d_vmm_wait_times_out") else {
        return;
    };
    let k = kernels(env);
    let bin = build_driver_program(env, "d_vmm", "d_vmm.c", &[]);
    let server = Server::start_with(env, &["--op-timeout", "2"]);
    let run = run(
        env,
        Some(&server),
        &[],
        &[],
        &bin,
        &[&path_arg(&k.ptx), "timeout"],
    );
    assert_lines(
        &run,
        &[
            "stream memory operations: ok",
            "cuStreamWaitValue32(never satisfied) -> CUDA_ERROR_TIMEOUT",
        ],
    );
}

// ---------------------------------------------------------------------------
// d_legacy_v1: the pre-CUDA 3.2 entry points that can work
// ---------------------------------------------------------------------------

/// The unversioned (v1) sizes, arrays and array copies, with 32-bit sizes and
/// the v1 copy structures, agree with the `_v2` forms; a 32-bit device
/// pointer in a copy structure fails as `_v2` fails for no allocation.
#[test]
fn d_legacy_v1() {
    let Some(env) = setup("d_legacy_v1") else {
        return;
    };
    let bin = build_driver_program(env, "d_legacy_v1", "d_legacy_v1.c", &[]);
    let run = run(env, None, &[], &[], &bin, &[]);
    assert_lines(
        &run,
        &[
            "cuDeviceTotalMem: v1 = min(v2, 2^32 - 1): ok",
            "cuDeviceTotalMem(bad device) -> CUDA_ERROR_INVALID_DEVICE",
            "cuMemGetInfo: v1 = min(v2, 2^32 - 1): ok",
            "cuMemGetInfo(NULL) -> CUDA_ERROR_INVALID_VALUE",
            "1-D cuArrayCreate, cuArrayGetDescriptor: ok",
            "1-D cuMemcpyHtoA, AtoH, AtoA, HtoAAsync, AtoHAsync: ok",
            "cuMemcpyHtoA(past the end) -> CUDA_ERROR_INVALID_VALUE",
            "2-D cuArrayCreate, cuArray3DGetDescriptor: ok",
            "2-D cuMemcpy2D, cuMemcpy2DUnaligned, cuMemcpy2DAsync: ok",
            "3-D cuArray3DCreate, cuArray3DGetDescriptor: ok",
            "cuMemcpy3D, cuMemcpy3DAsync (host, 2-D and 3-D arrays): ok",
            "cuMemcpy2D(32-bit device pointer) -> CUDA_ERROR_INVALID_VALUE",
            "cuMemcpy2DAsync(32-bit device pointer) -> CUDA_ERROR_INVALID_VALUE",
            "cuMemcpy3D(32-bit device pointer) -> CUDA_ERROR_INVALID_VALUE",
            "cuMemcpyDtoH_v2(no allocation) -> CUDA_ERROR_INVALID_VALUE",
            "cuArrayCreate(NULL descriptor) -> CUDA_ERROR_INVALID_VALUE",
            "cuMemAlloc (v1) -> CUDA_ERROR_NOT_SUPPORTED",
        ],
    );
}

// ---------------------------------------------------------------------------
// d_texref: texture and surface references over hand-written PTX
// ---------------------------------------------------------------------------

/// `.global .texref` / `.global .surfref` in non-unified mode: linear,
/// pitched 2-D and array bindings, filtering, addressing, normalized
/// coordinates, integer reads, a surface write, Get after Set and the error
/// codes (see `tests/cuda/driver/d_texref.c`).
#[test]
fn d_texref() {
    let Some(env) = setup("d_texref") else {
        return;
    };
    let bin = build_driver_program(env, "d_texref", "d_texref.c", &strings(&["-lm"]));
    let run = run(env, None, &[], &[], &bin, &[]);
    assert_lines(
        &run,
        &[
            "1-D linear memory (cuTexRefSetAddress, tex.1d): ok",
            "misaligned cuTexRefSetAddress: byte offset 8: ok",
            "cuTexRefGetArray(&array, tex) -> CUDA_ERROR_INVALID_VALUE",
            "cuTexRefSetAddress(past the allocation) -> CUDA_ERROR_INVALID_VALUE",
            "2-D pitched memory (cuTexRefSetAddress2D), linear filter, clamp: ok",
            "2-D point filter, border addressing: ok",
            "cuTexRefSetAddress2D(misaligned pointer) -> CUDA_ERROR_INVALID_VALUE",
            "cuTexRefSetAddress2D(pitch below a row) -> CUDA_ERROR_INVALID_VALUE",
            "cuTexRefSetAddress2D(NULL descriptor) -> CUDA_ERROR_INVALID_VALUE",
            "cuTexRefSetArray(flags 0) -> CUDA_ERROR_INVALID_VALUE",
            "CUDA array (cuTexRefSetArray), normalized coordinates, wrap: ok",
            "CUDA array, linear filter: ok",
            "CUDA array, CU_TRSF_READ_AS_INTEGER: ok",
            "cuSurfRefGetArray(nothing bound) -> CUDA_ERROR_INVALID_VALUE",
            "cuSurfRefSetArray(array without CUDA_ARRAY3D_SURFACE_LDST) -> CUDA_ERROR_INVALID_VALUE",
            "surface reference (cuSurfRefSetArray, sust.b.2d): ok",
            "cuTexRefCreate, every Get after its Set: ok",
            "cuTexRefGetBorderColor(NULL, tex) -> CUDA_ERROR_INVALID_VALUE",
            "cuModuleGetTexRef(no such name) -> CUDA_ERROR_NOT_FOUND",
            "cuModuleGetTexRef(a plain variable) -> CUDA_ERROR_NOT_FOUND",
            "cuModuleGetSurfRef(a texture reference) -> CUDA_ERROR_NOT_FOUND",
            "cuModuleGetTexRef(NULL) -> CUDA_ERROR_INVALID_VALUE",
            "cuModuleGetTexRef(NULL name) -> CUDA_ERROR_INVALID_VALUE",
            "cuModuleGetGlobal(a texture reference) -> CUDA_ERROR_NOT_FOUND",
            "cuParamSetTexRef(texture unit 0) -> CUDA_ERROR_INVALID_VALUE",
            "module references: ok",
            "cuTexRefGetFilterMode(reference of an unloaded module) -> CUDA_ERROR_INVALID_HANDLE",
        ],
    );
}
