//! The file names the rcud client library is offered under.

/// File name of the library cargo builds.
pub const LIBRARY_FILE: &str = "librcudart.so";

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
