"""cuda-python's `cuda.core`: an NVRTC-compiled saxpy launched on a stream,
checked against numpy, for running under `rcud run`.

    rcud run -- .venv-numba/bin/python -m pytest -q tests/python/cuda_core_saxpy.py

cuda.core reaches the driver through cuda-bindings (libcuda.so.1, that is
rcud); NVRTC runs on the client. The emulated GPU runs PTX, so the kernels
are compiled to PTX, which every CUDA driver loads (JIT-compiling it on a
real GPU).
"""

import numpy as np
import pytest
from cuda.core import (
    Device,
    LaunchConfig,
    LegacyPinnedMemoryResource,
    Program,
    ProgramOptions,
    launch,
)

SAXPY = r"""
template<typename T>
__global__ void saxpy(const T a, const T* x, const T* y, T* out, size_t n) {
    const size_t tid = threadIdx.x + (size_t)blockIdx.x * blockDim.x;
    for (size_t i = tid; i < n; i += (size_t)gridDim.x * blockDim.x) {
        out[i] = a * x[i] + y[i];
    }
}
"""


@pytest.fixture(scope="module")
def dev():
    d = Device()
    d.set_current()
    return d


@pytest.fixture(scope="module")
def module(dev):
    opts = ProgramOptions(std="c++17", arch=f"compute_{dev.arch}")
    prog = Program(SAXPY, code_type="c++", options=opts)
    return prog.compile("ptx", name_expressions=("saxpy<float>", "saxpy<double>"))


def test_device_properties(dev):
    assert dev.compute_capability >= (8, 0)
    assert dev.name
    assert dev.properties.max_threads_per_block >= 1024


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_saxpy_on_a_stream(dev, module, dtype):
    kernel = module.get_kernel(f"saxpy<{'float' if dtype == np.float32 else 'double'}>")
    stream = dev.create_stream()
    n = 50_000
    nbytes = n * np.dtype(dtype).itemsize
    rng = np.random.default_rng(7)

    pinned = LegacyPinnedMemoryResource()
    hx = pinned.allocate(nbytes, stream=stream)
    hy = pinned.allocate(nbytes, stream=stream)
    hout = pinned.allocate(nbytes, stream=stream)
    x = np.from_dlpack(hx).view(dtype)
    y = np.from_dlpack(hy).view(dtype)
    out = np.from_dlpack(hout).view(dtype)
    x[:] = rng.random(n, dtype=dtype)
    y[:] = rng.random(n, dtype=dtype)
    out[:] = 0

    dx = dev.allocate(nbytes, stream=stream)
    dy = dev.allocate(nbytes, stream=stream)
    dout = dev.allocate(nbytes, stream=stream)
    hx.copy_to(dx, stream=stream)
    hy.copy_to(dy, stream=stream)

    a = dtype(3.5)
    config = LaunchConfig(grid=64, block=256)
    launch(stream, config, kernel, a, dx, dy, dout, np.uint64(n))
    dout.copy_to(hout, stream=stream)
    stream.sync()

    np.testing.assert_allclose(out, a * x + y, rtol=1e-6 if dtype == np.float32 else 1e-12)

    for b in (dx, dy, dout, hx, hy, hout):
        b.close(stream)
    stream.close()


def test_events_time_a_launch(dev, module):
    kernel = module.get_kernel("saxpy<float>")
    stream = dev.create_stream()
    n = 4096
    buf = dev.allocate(n * 4, stream=stream)
    start = stream.record(options={"timing_enabled": True})
    launch(stream, LaunchConfig(grid=16, block=256), kernel, np.float32(0), buf, buf, buf, np.uint64(n))
    stop = stream.record(options={"timing_enabled": True})
    stop.sync()
    assert stop.is_done
    assert stop - start >= 0.0
    buf.close(stream)
    stream.close()


def test_cubin_runs_on_a_real_gpu_and_is_refused_by_the_emulated_one(dev):
    """NVRTC's cubin holds SASS only. A real GPU runs it; the emulated GPU
    (which runs PTX) refuses it the way CUDA refuses code built for another
    architecture, with CUDA_ERROR_NO_BINARY_FOR_GPU, and stays usable."""
    from cuda.core._utils.cuda_utils import CUDAError

    opts = ProgramOptions(std="c++17", arch=f"sm_{dev.arch}")
    mod = Program(SAXPY, code_type="c++", options=opts).compile(
        "cubin", name_expressions=("saxpy<float>",)
    )
    if "emulated" in dev.name:
        with pytest.raises(CUDAError, match="CUDA_ERROR_NO_BINARY_FOR_GPU"):
            mod.get_kernel("saxpy<float>")
        return
    kernel = mod.get_kernel("saxpy<float>")
    stream = dev.create_stream()
    buf = dev.allocate(1024 * 4, stream=stream)
    launch(stream, LaunchConfig(grid=4, block=256), kernel, np.float32(0), buf, buf, buf, np.uint64(1024))
    stream.sync()
    buf.close(stream)
    stream.close()
