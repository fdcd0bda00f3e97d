"""CuPy checked against numpy, for running under `rcud run`.

    rcud run -- .venv-cupy13/bin/python -m pytest -q tests/python/cupy_smoke.py

CuPy's wheel carries NVIDIA's CUDA runtime (linked statically), so every
call here reaches rcud through its libcuda.so.1: NVIDIA's runtime with its
private export tables, CuPy's own driver calls (modules from NVRTC's PTX,
cuLaunchKernel), and the CUB and Thrust kernels precompiled into the wheel.
Works with cupy-cuda13x and cupy-cuda12x (scripts/ensure-cupy.sh installs
both). The math libraries are tested by tests/python/cupy_math.py.
"""

import ctypes
import glob
import os
import subprocess
import sys
import threading

import numpy as np
import pytest

import cupy as cp
from cupy.cuda import runtime


@pytest.fixture(scope="module", autouse=True)
def device():
    assert runtime.getDeviceCount() >= 1, "no CUDA device (run under `rcud run`)"
    return cp.cuda.Device(0)


def rng(seed):
    return np.random.default_rng(seed)


# ---- the device ---------------------------------------------------------------


def test_device_is_the_emulated_sm80_or_a_real_gpu(device):
    assert int(device.compute_capability) >= 80
    props = runtime.getDeviceProperties(0)
    assert props["totalGlobalMem"] > 0
    assert runtime.driverGetVersion() >= 12000
    free, total = runtime.memGetInfo()
    assert 0 < free <= total
    # CuPy's own runtime, linked into its wheel: 12.x or 13.x.
    assert runtime.runtimeGetVersion() // 1000 in (12, 13)


def test_kernels_are_compiled_to_ptx_under_rcud():
    # `rcud run` asks CuPy for PTX, which every device runs; the emulated one
    # runs nothing else. Run natively (scripts/gpu-check.sh), CuPy's default.
    from cupy.cuda import compiler

    ptx = os.environ.get("CUPY_COMPILE_WITH_PTX") == "1"
    if "RCUD_SERVERS" in os.environ:
        assert ptx, "rcud run sets CUPY_COMPILE_WITH_PTX=1"
    expected = "ptx" if ptx else "cubin"
    assert compiler._get_arch_for_options_for_nvrtc()[1] == expected


# ---- elementwise ----------------------------------------------------------------


@pytest.mark.parametrize("dtype", [np.int32, np.int64, np.float32, np.float64])
def test_arithmetic_ufuncs(dtype):
    a = (rng(1).random(1000) * 100).astype(dtype)
    b = (rng(2).random(1000) * 100 + 1).astype(dtype)
    da, db = cp.asarray(a), cp.asarray(b)
    np.testing.assert_array_equal((da + db).get(), a + b)
    np.testing.assert_array_equal((da * db - da).get(), a * b - a)
    np.testing.assert_array_equal(cp.maximum(da, db).get(), np.maximum(a, b))
    np.testing.assert_array_equal((da < db).get(), a < b)
    np.testing.assert_allclose((da / db).get(), a / b, rtol=1e-6)


def test_float_remainder_matches_numpy_to_the_bit():
    # CuPy computes `x - floor(x / y) * y`; a GPU fuses the multiply and the
    # subtraction into one fma, and so must the emulated device.
    x = np.array([255.6, 254.6, 2.6, 7.3, -5.5])
    np.testing.assert_array_equal(cp.mod(cp.asarray(x), 1.2).get(), np.mod(x, 1.2))


def test_transcendental_ufuncs():
    x = rng(3).random(4096) * 4 - 2
    dx = cp.asarray(x)
    for name in ("sin", "cos", "exp", "tanh", "arctan", "sqrt", "log1p"):
        arg = np.abs(x) if name in ("sqrt", "log1p") else x
        got = getattr(cp, name)(cp.asarray(arg)).get()
        np.testing.assert_allclose(got, getattr(np, name)(arg), rtol=1e-12, err_msg=name)
    xf = x.astype(np.float32)
    np.testing.assert_allclose(cp.exp(cp.asarray(xf)).get(), np.exp(xf), rtol=1e-6)
    np.testing.assert_allclose(cp.hypot(dx, dx).get(), np.hypot(x, x), rtol=1e-12)


def test_broadcasting_strides_and_complex():
    a = rng(4).random((64, 1, 33))
    b = rng(5).random((1, 17, 33))
    got = cp.asarray(a) * cp.asarray(b) + 1
    np.testing.assert_allclose(got.get(), a * b + 1, rtol=1e-12)
    t = cp.asarray(a[:, 0, :]).T[::2]
    np.testing.assert_array_equal(cp.ascontiguousarray(t).get(), a[:, 0, :].T[::2])
    z = a[:, 0, :] + 1j * a[:, 0, ::-1]
    np.testing.assert_allclose(cp.abs(cp.asarray(z) ** 2).get(), np.abs(z**2), rtol=1e-12)


def test_elementwise_kernel():
    kernel = cp.ElementwiseKernel(
        "T x, T y, float64 alpha",
        "T z",
        "z = alpha * x + y",
        "rcud_axpy",
    )
    x = rng(6).random(10_001).astype(np.float32)
    y = rng(7).random(10_001).astype(np.float32)
    got = kernel(cp.asarray(x), cp.asarray(y), 2.5)
    np.testing.assert_allclose(got.get(), 2.5 * x + y, rtol=1e-6)
    # A raw argument, indexed by hand.
    reverse = cp.ElementwiseKernel(
        "raw T src", "T dst", "dst = src[_ind.size() - 1 - i]", "rcud_reverse"
    )
    src = cp.arange(1000, dtype=cp.int64)
    np.testing.assert_array_equal(reverse(src, size=1000).get(), np.arange(1000)[::-1])


# ---- reductions -------------------------------------------------------------------


@pytest.mark.parametrize("cub", [True, False], ids=["cub", "cupy"])
def test_reductions(cub):
    from cupy._core import _accelerator

    saved = (_accelerator.get_routine_accelerators(), _accelerator.get_reduction_accelerators())
    if not cub:
        _accelerator.set_routine_accelerators([])
        _accelerator.set_reduction_accelerators([])
    try:
        x = rng(8).random((300, 70))
        dx = cp.asarray(x)
        np.testing.assert_allclose(float(dx.sum()), x.sum(), rtol=1e-12)
        np.testing.assert_allclose(dx.sum(axis=0).get(), x.sum(axis=0), rtol=1e-12)
        np.testing.assert_allclose(dx.mean(axis=1).get(), x.mean(axis=1), rtol=1e-12)
        np.testing.assert_allclose(float(dx.std()), x.std(), rtol=1e-10)
        assert float(dx.max()) == x.max() and float(dx.min()) == x.min()
        assert int(dx.argmax()) == x.argmax() and int(dx.argmin()) == x.argmin()
        np.testing.assert_array_equal(dx.argmax(axis=1).get(), x.argmax(axis=1))
        i = np.arange(100_000, dtype=np.int64)
        assert int(cp.asarray(i).sum()) == i.sum()
        np.testing.assert_allclose(cp.prod(cp.asarray(x[:5, :5] + 1), axis=1).get(),
                                   np.prod(x[:5, :5] + 1, axis=1), rtol=1e-14)
        assert bool(cp.asarray(x > 0.5).any()) and not bool(cp.asarray(x > 2).any())
    finally:
        _accelerator.set_routine_accelerators(saved[0])
        _accelerator.set_reduction_accelerators(saved[1])


@pytest.mark.parametrize("dtype", [np.int8, np.int16, np.uint16, np.int32, np.float32])
def test_cub_min_max_of_small_integers(dtype):
    # CUB's kernels for 16-bit types use packed min/max (`max.s16x2`).
    x = rng(9).integers(-100 if dtype != np.uint16 else 0, 100, 5000).astype(dtype)
    dx = cp.asarray(x)
    assert dx.max() == x.max() and dx.min() == x.min()


def test_reduction_kernel():
    l2 = cp.ReductionKernel(
        "T x", "T y", "x * x", "a + b", "y = sqrt(a)", "0", "rcud_l2norm"
    )
    x = rng(10).random((50, 200))
    np.testing.assert_allclose(l2(cp.asarray(x), axis=1).get(),
                               np.sqrt((x * x).sum(axis=1)), rtol=1e-12)
    np.testing.assert_allclose(float(l2(cp.asarray(x))), np.sqrt((x * x).sum()), rtol=1e-12)


# ---- CUB and Thrust ---------------------------------------------------------------


@pytest.mark.parametrize("dtype", [np.int32, np.float32, np.float64])
def test_sort_and_argsort(dtype):
    x = (rng(11).random(5000) * 1000).astype(dtype)
    dx = cp.asarray(x)
    np.testing.assert_array_equal(cp.sort(dx).get(), np.sort(x))
    order = cp.argsort(dx).get()
    np.testing.assert_array_equal(x[order], np.sort(x))
    m = (rng(12).random((20, 50)) * 100).astype(dtype)
    np.testing.assert_array_equal(cp.sort(cp.asarray(m), axis=1).get(), np.sort(m, axis=1))


def test_scan():
    x = rng(13).integers(0, 10, 100_000)
    np.testing.assert_array_equal(cp.cumsum(cp.asarray(x)).get(), np.cumsum(x))
    f = rng(14).random((30, 40))
    np.testing.assert_allclose(cp.cumsum(cp.asarray(f), axis=1).get(), np.cumsum(f, axis=1),
                               rtol=1e-12)


def test_unique_nonzero_and_search():
    x = rng(15).integers(0, 50, 2000)
    dx = cp.asarray(x)
    np.testing.assert_array_equal(cp.unique(dx).get(), np.unique(x))
    np.testing.assert_array_equal(cp.nonzero(dx > 40)[0].get(), np.nonzero(x > 40)[0])
    s = np.sort(x)
    np.testing.assert_array_equal(cp.searchsorted(cp.asarray(s), dx[:100]).get(),
                                  np.searchsorted(s, x[:100]))


# ---- RawKernel and RawModule -------------------------------------------------------


def test_raw_kernel_with_dynamic_shared_memory():
    code = r"""
    extern "C" __global__ void block_sum(const float* x, float* out, int n) {
        extern __shared__ float buf[];
        int i = blockIdx.x * blockDim.x + threadIdx.x;
        buf[threadIdx.x] = i < n ? x[i] : 0.0f;
        __syncthreads();
        for (int s = blockDim.x / 2; s > 0; s >>= 1) {
            if (threadIdx.x < s) buf[threadIdx.x] += buf[threadIdx.x + s];
            __syncthreads();
        }
        if (threadIdx.x == 0) out[blockIdx.x] = buf[0];
    }
    """
    kernel = cp.RawKernel(code, "block_sum")
    n, threads = 10_000, 256
    blocks = (n + threads - 1) // threads
    x = rng(16).random(n).astype(np.float32)
    out = cp.zeros(blocks, dtype=cp.float32)
    kernel((blocks,), (threads,), (cp.asarray(x), out, np.int32(n)), shared_mem=threads * 4)
    expect = np.pad(x, (0, blocks * threads - n)).reshape(blocks, threads).sum(axis=1)
    np.testing.assert_allclose(out.get(), expect, rtol=1e-5)
    assert kernel.max_threads_per_block >= threads
    assert kernel.num_regs >= 0


def test_raw_module_templates_and_globals():
    code = r"""
    __device__ int counter;
    __constant__ float scale[4];
    template <typename T>
    __global__ void scaled(const T* x, T* y, int n) {
        int i = blockIdx.x * blockDim.x + threadIdx.x;
        if (i < n) { y[i] = x[i] * (T)scale[i % 4]; atomicAdd(&counter, 1); }
    }
    """
    module = cp.RawModule(code=code, options=("-std=c++17",),
                          name_expressions=["scaled<float>", "scaled<double>"])
    scale = module.get_global("scale")
    cp.ndarray((4,), cp.float32, scale).set(np.array([1, 2, 3, 4], np.float32))
    counter = cp.ndarray((1,), cp.int32, module.get_global("counter"))
    counter.fill(0)
    for dtype, name in ((np.float32, "scaled<float>"), (np.float64, "scaled<double>")):
        x = rng(17).random(1000).astype(dtype)
        y = cp.empty(1000, dtype=dtype)
        module.get_function(name)((4,), (256,), (cp.asarray(x), y, np.int32(1000)))
        np.testing.assert_allclose(y.get(), x * np.tile([1, 2, 3, 4], 250), rtol=1e-6)
    assert int(counter[0]) == 2000


def test_raw_module_from_ptx_text():
    from cupy.cuda import nvrtc

    # PTX text for a virtual architecture, from NVRTC directly (CuPy's own
    # compiler helper gives a cubin on a GPU it knows).
    prog = nvrtc.createProgram(
        'extern "C" __global__ void twice(int* x) { x[threadIdx.x] *= 2; }', "twice.cu", [], [])
    try:
        nvrtc.compileProgram(prog, ["-arch=compute_75"])
        ptx = nvrtc.getPTX(prog)
    finally:
        nvrtc.destroyProgram(prog)
    if isinstance(ptx, bytes):
        ptx = ptx.decode()
    ptx = ptx.rstrip("\0")
    assert ".entry twice" in ptx
    mod = cp.cuda.function.Module()
    mod.load(ptx.encode())
    x = cp.arange(32, dtype=cp.int32)
    mod.get_function("twice")((1,), (32,), (x,))
    np.testing.assert_array_equal(x.get(), np.arange(32) * 2)


def test_kernel_fault_is_reported():
    # An illegal address is sticky: it ends the process's use of the device,
    # so it runs in a process of its own (on the same server, through the
    # environment `rcud run` set up).
    code = """
import cupy as cp
bad = cp.RawKernel('extern "C" __global__ void oob(int* x) { x[1 << 30] = 1; }', "oob")
try:
    bad((1,), (1,), (cp.zeros(1, dtype=cp.int32),))
    cp.cuda.Device().synchronize()
except cp.cuda.runtime.CUDARuntimeError as e:
    print("fault:", e)
except cp.cuda.driver.CUDADriverError as e:
    print("fault:", e)
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stderr
    # cudaErrorIllegalAddress, or on some GPUs (an H200) for an address
    # outside the global space, cudaErrorInvalidAddressSpace.
    message = out.stdout.lower()
    assert "fault:" in message and ("illegal" in message or "address space" in message), \
        out.stdout + out.stderr


# ---- streams, events, memory ------------------------------------------------------


def test_streams_and_events():
    s1 = cp.cuda.Stream(non_blocking=True)
    s2 = cp.cuda.Stream()
    x = rng(18).random(100_000)
    with s1:
        start = s1.record()
        a = cp.asarray(x) * 2
        done = s1.record()
    s2.wait_event(done)
    with s2:
        b = a + 1
    s2.synchronize()
    assert s1.done and s2.done
    np.testing.assert_allclose(b.get(), x * 2 + 1)
    assert cp.cuda.get_elapsed_time(start, done) >= 0
    assert cp.cuda.get_current_stream() == cp.cuda.Stream.null
    ptds = cp.cuda.Stream.ptds
    with ptds:
        np.testing.assert_allclose((cp.asarray(x) - 1).get(), x - 1)


def test_stream_callbacks_run_in_order():
    stream = cp.cuda.Stream()
    seen = []
    with stream:
        a = cp.arange(10)
        stream.add_callback(lambda s, status, data: seen.append((data, status)), "cb")
        b = a * 3
        stream.launch_host_func(lambda data: seen.append(data), "host")
    stream.synchronize()
    assert seen == [("cb", 0), "host"]
    assert int(b.sum()) == 135


def test_memory_pool_reuses_blocks():
    pool = cp.get_default_memory_pool()
    pool.free_all_blocks()
    a = cp.zeros(1 << 20, dtype=cp.uint8)
    ptr = a.data.ptr
    assert pool.used_bytes() >= 1 << 20
    del a
    assert pool.free_bytes() >= 1 << 20
    b = cp.ones(1 << 20, dtype=cp.uint8)
    assert b.data.ptr == ptr
    assert int(b.sum()) == 1 << 20
    held = pool.total_bytes()
    del b
    pool.free_all_blocks()
    assert pool.total_bytes() <= held - (1 << 20)


def test_pinned_memory_async_copies():
    n = 1 << 16
    pinned = cp.cuda.alloc_pinned_memory(n * 8)
    host = np.frombuffer(pinned, np.float64, n)
    host[:] = np.arange(n)
    stream = cp.cuda.Stream()
    dev = cp.empty(n, dtype=cp.float64)
    dev.set(host, stream=stream)
    with stream:
        dev *= 2
    back_mem = cp.cuda.alloc_pinned_memory(n * 8)
    back = np.frombuffer(back_mem, np.float64, n)
    dev.get(stream=stream, out=back)
    stream.synchronize()
    np.testing.assert_array_equal(back, np.arange(n) * 2)
    assert runtime.pointerGetAttributes(host.ctypes.data).type == runtime.memoryTypeHost
    assert runtime.pointerGetAttributes(dev.data.ptr).type == runtime.memoryTypeDevice
    pool = cp.get_default_pinned_memory_pool()
    assert pool.n_free_blocks() >= 0


def test_managed_memory_with_hints():
    mem = cp.cuda.malloc_managed(8 * 1000)
    a = cp.ndarray((1000,), cp.float64, mem)
    a[...] = cp.arange(1000)
    mem.mem.prefetch(cp.cuda.get_current_stream())
    mem.mem.advise(1, cp.cuda.Device(0))  # cudaMemAdviseSetReadMostly
    a *= 2
    cp.cuda.Device().synchronize()
    # The host reads managed memory in place once the device is idle.
    host = np.ctypeslib.as_array((ctypes.c_double * 1000).from_address(mem.ptr))
    np.testing.assert_array_equal(host, np.arange(1000) * 2)
    assert runtime.pointerGetAttributes(mem.ptr).type == runtime.memoryTypeManaged


def test_device_to_device_and_views():
    x = cp.arange(1000, dtype=cp.int32).reshape(10, 100)
    y = cp.empty_like(x)
    y[...] = x
    np.testing.assert_array_equal(y[:, ::7].get(), np.arange(1000).reshape(10, 100)[:, ::7])
    z = cp.asarray(y.T, order="C")
    np.testing.assert_array_equal(z.get(), np.arange(1000).reshape(10, 100).T)


def test_threads_share_the_device():
    results = {}

    def work(k):
        with cp.cuda.Stream():
            results[k] = int((cp.arange(1000) * k).sum())

    threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert results == {k: 499500 * k for k in range(4)}


# ---- NVIDIA's shared runtime on rcud's driver ---------------------------------


def nvidia_shared_runtime():
    """NVIDIA's libcudart.so.1x from the PyPI package beside CuPy, by path
    (rcud's stands in for libcudart.so.13 by name)."""
    import site

    major = runtime.runtimeGetVersion() // 1000
    patterns = [f"nvidia/cuda_runtime/lib/libcudart.so.{major}",
                f"nvidia/cu{major}/lib/libcudart.so.{major}"]
    for base in site.getsitepackages():
        for p in patterns:
            found = glob.glob(os.path.join(base, p))
            if found:
                return found[0]
    pytest.skip(f"no NVIDIA libcudart.so.{major} installed beside CuPy")


def test_nvidia_shared_runtime_on_rcud_driver():
    lib = ctypes.CDLL(nvidia_shared_runtime())
    # NVIDIA's library, not rcud's (which also holds the driver API).
    assert not hasattr(lib, "cuInit")
    count, version = ctypes.c_int(), ctypes.c_int()
    assert lib.cudaGetDeviceCount(ctypes.byref(count)) == 0 and count.value >= 1
    assert lib.cudaRuntimeGetVersion(ctypes.byref(version)) == 0
    assert version.value // 1000 == runtime.runtimeGetVersion() // 1000
    ptr = ctypes.c_void_p()
    assert lib.cudaMalloc(ctypes.byref(ptr), ctypes.c_size_t(4096)) == 0
    expect = [i % 251 for i in range(4096)]
    src = (ctypes.c_uint8 * 4096)(*expect)
    dst = (ctypes.c_uint8 * 4096)()
    assert lib.cudaMemcpy(ptr, src, ctypes.c_size_t(4096), 1) == 0  # host to device
    assert lib.cudaMemset(ctypes.c_void_p(ptr.value + 100), 7, ctypes.c_size_t(10)) == 0
    assert lib.cudaMemcpy(dst, ptr, ctypes.c_size_t(4096), 2) == 0  # device to host
    expect[100:110] = [7] * 10
    assert list(dst) == expect
    # The same memory, seen by CuPy through its own runtime.
    view = cp.ndarray((4096,), cp.uint8,
                      cp.cuda.MemoryPointer(cp.cuda.UnownedMemory(ptr.value, 4096, None), 0))
    assert int(view.astype(cp.int64).sum()) == sum(expect)
    assert lib.cudaFree(ptr) == 0
    assert lib.cudaDeviceSynchronize() == 0


# ---- graphs ---------------------------------------------------------------------


def _chain(x):
    y = x + 3
    y = y * 7.5
    return cp.sqrt(y * y + 1)


def test_graph_captured_and_launched_on_two_streams():
    x = cp.arange(1000, dtype=cp.float32)
    capture, other = cp.cuda.Stream(non_blocking=True), cp.cuda.Stream(non_blocking=True)
    with capture:
        capture.begin_capture()
        assert capture.is_capturing()
        assert not cp.cuda.Stream.null.is_capturing()
        out = _chain(x)
        graph = capture.end_capture()
    assert not capture.is_capturing()
    # Nothing ran while capturing: the graph's launches compute `out`.
    with other:
        graph.upload()
        graph.launch()
        graph.launch()
    other.synchronize()
    np.testing.assert_allclose(cp.asnumpy(out), cp.asnumpy(_chain(x)), rtol=1e-6)


def test_graph_fork_join_and_host_function():
    a = cp.arange(256, dtype=cp.float64)
    s1, s2 = cp.cuda.Stream(non_blocking=True), cp.cuda.Stream(non_blocking=True)
    e1, e2 = cp.cuda.Event(), cp.cuda.Event()
    calls = {"n": 0}

    def ran(counter):
        counter["n"] += 1

    with s1:
        s1.begin_capture()
        first = a * 100
        e1.record(s1)
        s2.wait_event(e1)
        with s2:
            second = 3 * first + 1
            e2.record(s2)
        s1.wait_event(e2)
        # CuPy keeps a captured host function's arguments with the stream
        # that began the capture.
        s1.launch_host_func(ran, calls)
        graph = s1.end_capture()
    assert not s2.is_capturing()
    for _ in range(2):
        graph.launch(s1)
    s1.synchronize()
    assert calls["n"] == 2
    np.testing.assert_array_equal(cp.asnumpy(second), 300 * np.arange(256) + 1)


def test_graph_capture_errors_are_cudas():
    s = cp.cuda.Stream(non_blocking=True)
    with s:
        s.begin_capture()
        with pytest.raises(runtime.CUDARuntimeError, match="cudaErrorStreamCaptureUnsupported"):
            s.synchronize()
        with pytest.raises(runtime.CUDARuntimeError, match="cudaErrorStreamCaptureInvalidated"):
            s.end_capture()
    assert not s.is_capturing()
    s.synchronize()

    blocking, joined = cp.cuda.Stream(non_blocking=False), cp.cuda.Stream(non_blocking=True)
    x = cp.ones(8)
    with blocking:
        blocking.begin_capture()
        with pytest.raises(runtime.CUDARuntimeError, match="cudaErrorStreamCaptureImplicit"):
            cp.cuda.Stream.null.is_capturing()
        with pytest.raises(runtime.CUDARuntimeError, match="cudaErrorIllegalState"):
            joined.end_capture()
        event = cp.cuda.Event()
        event.record(blocking)
        joined.wait_event(event)
        with joined:
            x * 2
        with pytest.raises(runtime.CUDARuntimeError, match="cudaErrorStreamCaptureUnmatched"):
            joined.end_capture()
        with pytest.raises(runtime.CUDARuntimeError, match="cudaErrorStreamCaptureInvalidated"):
            blocking.end_capture()
    assert not blocking.is_capturing() and not joined.is_capturing()


def test_graph_debug_dot_names_the_kernels():
    s = cp.cuda.Stream(non_blocking=True)
    a = cp.arange(100, dtype=cp.float32)
    with s:
        s.begin_capture()
        cp.sin(a)
        graph = s.end_capture()
    plain = graph.debug_dot_str()
    verbose = graph.debug_dot_str(runtime.cudaGraphDebugDotFlagsVerbose)
    assert "cupy_sin" in plain and "cupy_sin" in verbose and plain != verbose


def test_memory_async_pool_allocates_in_stream_order():
    pool = cp.cuda.MemoryAsyncPool()
    with cp.cuda.using_allocator(pool.malloc):
        a = cp.arange(100_000, dtype=cp.float64)
        b = a * 2
        del a
        c = cp.ones(100_000)
        total = float((b + c).sum())
    assert total == 2 * 99_999 * 100_000 / 2 + 100_000
    assert pool.used_bytes() >= 0
