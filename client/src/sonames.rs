//! The file names the rcud client library is offered under.

use std::path::{Path, PathBuf};

/// File name of the library cargo builds.
pub const LIBRARY_FILE: &str = "librcudart.so";

/// Where the library lies relative to the directory of the running tool:
/// beside it (cargo's `target/<profile>/`), or in `../lib/rcud/` (the Debian
/// package: `/usr/bin/rcud`, `/usr/lib/rcud/librcudart.so`).
const LIBRARY_DIRS: &[&str] = &[".", "../lib/rcud"];

/// The first library found in [`LIBRARY_DIRS`] of the running executable,
/// else the one beside it (which the caller reports as missing).
pub fn installed_library() -> std::io::Result<PathBuf> {
    let exe = std::env::current_exe()?;
    let dir = exe.parent().unwrap_or(Path::new("."));
    Ok(LIBRARY_DIRS
        .iter()
        .map(|d| dir.join(d).join(LIBRARY_FILE))
        .find(|p| p.is_file())
        .unwrap_or_else(|| dir.join(LIBRARY_FILE)))
}

/// The names programs load the library by: the runtime's soname (programs
/// linked with `-cudart shared`), the driver's (everything else: nvcc's
/// static runtime, driver-API programs, CuPy, Numba, cuda-python), the
/// math libraries' of CUDA 13 and 12, and NVML's (monitoring tools,
/// `pynvml`). `rcud run` and the Kubernetes device plugin both build a
/// directory of these names pointing at the library.
pub const SONAMES: &[&str] = &[
    "libcudart.so.13",
    "libcuda.so.1",
    "libcublas.so.13",
    "libcublas.so.12",
    "libcublasLt.so.13",
    "libcublasLt.so.12",
    "libcufft.so.12",
    "libcufft.so.11",
    "libcurand.so.10",
    "libcusparse.so.12",
    "libcusolver.so.12",
    "libcusolver.so.11",
    "libnvidia-ml.so.1",
    // NVIDIA's cuSPARSE links nvJitLink, so CuPy's loader (cuda.pathfinder)
    // loads it before cuSPARSE; rcud's cuSPARSE needs none, and this name
    // only has to resolve.
    "libnvJitLink.so.13",
    "libnvJitLink.so.12",
];
