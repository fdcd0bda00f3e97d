"""Numba CUDA kernels checked against numpy, for running under `rcud run`.

    rcud run -- .venv-numba/bin/python -m pytest -q tests/python/numba_smoke.py

Each test compiles `@cuda.jit` code (Numba -> NVVM -> PTX -> the driver's
cuLink* and cuLibraryLoadData, all answered by rcud) and compares what the
device computed with numpy. Needs numba-cuda, numpy and pytest
(scripts/ensure-numba.sh installs them into .venv-numba).
"""

import math

import numpy as np
import pytest
from numba import cuda, float32, int32


@pytest.fixture(scope="module", autouse=True)
def device():
    assert cuda.is_available(), "no CUDA device (run under `rcud run`)"
    return cuda.get_current_device()


def test_device_is_the_emulated_sm80_or_a_real_gpu(device):
    assert device.compute_capability >= (8, 0)
    major, minor = cuda.runtime.get_version()
    assert major >= 12
    assert cuda.driver.driver.get_version() >= (13, 0)


def test_elementwise_with_grid_stride_loop():
    @cuda.jit
    def axpy(a, x, y, out):
        start = cuda.grid(1)
        for i in range(start, x.size, cuda.gridsize(1)):
            out[i] = a * x[i] + y[i]

    n = 10_000
    rng = np.random.default_rng(1)
    x = rng.random(n, dtype=np.float32)
    y = rng.random(n, dtype=np.float32)
    out = cuda.device_array_like(x)
    axpy[8, 128](np.float32(2.5), cuda.to_device(x), cuda.to_device(y), out)
    np.testing.assert_allclose(out.copy_to_host(), 2.5 * x + y, rtol=1e-6)


def test_2d_grid_and_device_function():
    @cuda.jit(device=True)
    def clamp(v, lo, hi):
        return min(max(v, lo), hi)

    @cuda.jit
    def kernel(a, out):
        i, j = cuda.grid(2)
        if i < a.shape[0] and j < a.shape[1]:
            out[i, j] = clamp(a[i, j] * 2.0 - 1.0, -0.5, 0.5) + i - j

    a = np.random.default_rng(2).random((37, 53))
    out = np.zeros_like(a)
    kernel[(3, 4), (16, 16)](a, out)
    i, j = np.indices(a.shape)
    np.testing.assert_allclose(out, np.clip(a * 2.0 - 1.0, -0.5, 0.5) + i - j)


def test_static_shared_memory_block_reduction():
    threads = 128

    @cuda.jit
    def block_sum(x, out):
        buf = cuda.shared.array(threads, dtype=float32)
        t = cuda.threadIdx.x
        i = cuda.grid(1)
        buf[t] = x[i] if i < x.size else 0.0
        cuda.syncthreads()
        step = threads // 2
        while step > 0:
            if t < step:
                buf[t] += buf[t + step]
            cuda.syncthreads()
            step //= 2
        if t == 0:
            out[cuda.blockIdx.x] = buf[0]

    n = 1000
    x = np.arange(n, dtype=np.float32)
    blocks = (n + threads - 1) // threads
    out = np.zeros(blocks, dtype=np.float32)
    block_sum[blocks, threads](x, out)
    padded = np.zeros(blocks * threads, dtype=np.float32)
    padded[:n] = x
    np.testing.assert_allclose(out, padded.reshape(blocks, threads).sum(axis=1))


def test_dynamic_shared_memory_reverse():
    @cuda.jit
    def reverse(x):
        buf = cuda.shared.array(0, dtype=int32)
        t = cuda.threadIdx.x
        buf[t] = x[t]
        cuda.syncthreads()
        x[t] = buf[cuda.blockDim.x - 1 - t]

    n = 96
    x = np.arange(n, dtype=np.int32)
    d = cuda.to_device(x)
    reverse[1, n, 0, n * 4](d)
    np.testing.assert_array_equal(d.copy_to_host(), x[::-1])


def test_atomics_histogram_max_and_cas():
    bins = 16

    @cuda.jit
    def histogram(x, hist, biggest, first_odd):
        i = cuda.grid(1)
        if i < x.size:
            v = x[i]
            cuda.atomic.add(hist, v % bins, 1)
            cuda.atomic.max(biggest, 0, v)
            if v % 2 == 1:
                # Only the first odd value's thread finds -1 there.
                cuda.atomic.cas(first_odd, 0, -1, i)

    x = np.random.default_rng(3).integers(0, 1000, size=5000).astype(np.int32)
    hist = np.zeros(bins, dtype=np.int32)
    biggest = np.zeros(1, dtype=np.int32)
    first_odd = np.full(1, -1, dtype=np.int32)
    histogram[40, 128](x, hist, biggest, first_odd)
    np.testing.assert_array_equal(hist, np.bincount(x % bins, minlength=bins))
    assert biggest[0] == x.max()
    assert first_odd[0] >= 0 and x[first_odd[0]] % 2 == 1


def test_float_atomic_add_and_math():
    @cuda.jit
    def kernel(x, total, out):
        i = cuda.grid(1)
        if i < x.size:
            v = x[i]
            out[i] = math.sqrt(v) + math.sin(v) * math.exp(-v) + math.log1p(v)
            cuda.atomic.add(total, 0, v)

    x = np.linspace(0.0, 4.0, 513, dtype=np.float64)
    total = np.zeros(1, dtype=np.float64)
    out = np.zeros_like(x)
    kernel[5, 128](x, total, out)
    np.testing.assert_allclose(out, np.sqrt(x) + np.sin(x) * np.exp(-x) + np.log1p(x), rtol=1e-12)
    np.testing.assert_allclose(total[0], x.sum(), rtol=1e-12)


def test_local_array_and_loops():
    @cuda.jit
    def prefix(x, out):
        i = cuda.grid(1)
        if i < x.shape[0]:
            acc = cuda.local.array(8, dtype=int32)
            s = 0
            for k in range(8):
                s += x[i, k]
                acc[k] = s
            for k in range(8):
                out[i, k] = acc[7 - k]

    x = np.random.default_rng(4).integers(-50, 50, size=(70, 8)).astype(np.int32)
    out = np.zeros_like(x)
    prefix[3, 32](x, out)
    np.testing.assert_array_equal(out, np.cumsum(x, axis=1)[:, ::-1])


def test_warp_shuffle_sum():
    @cuda.jit
    def warp_sum(x, out):
        t = cuda.threadIdx.x
        v = x[cuda.grid(1)]
        offset = 16
        while offset > 0:
            v += cuda.shfl_down_sync(0xFFFFFFFF, v, offset)
            offset //= 2
        if t % 32 == 0:
            out[cuda.grid(1) // 32] = v

    x = np.arange(256, dtype=np.int32)
    out = np.zeros(8, dtype=np.int32)
    warp_sum[2, 128](x, out)
    np.testing.assert_array_equal(out, x.reshape(8, 32).sum(axis=1))


def test_streams_events_and_async_copies():
    @cuda.jit
    def scale(x, factor):
        i = cuda.grid(1)
        if i < x.size:
            x[i] *= factor

    n = 4096
    streams = [cuda.stream() for _ in range(2)]
    hosts = [cuda.pinned_array(n, dtype=np.float32) for _ in streams]
    start, stop = cuda.event(), cuda.event()
    start.record()
    devs = []
    for k, (s, h) in enumerate(zip(streams, hosts)):
        h[:] = np.arange(n, dtype=np.float32) + k
        d = cuda.to_device(h, stream=s)
        scale[n // 128, 128, s](d, np.float32(k + 2))
        d.copy_to_host(h, stream=s)
        devs.append(d)
    stop.record()
    for s in streams:
        s.synchronize()
    stop.synchronize()
    assert stop.query()
    elapsed = cuda.event_elapsed_time(start, stop)
    assert elapsed >= 0.0
    for k, h in enumerate(hosts):
        np.testing.assert_array_equal(h, (np.arange(n, dtype=np.float32) + k) * (k + 2))


def test_event_wait_orders_two_streams():
    @cuda.jit
    def fill(x, v):
        i = cuda.grid(1)
        if i < x.size:
            x[i] = v

    @cuda.jit
    def add_from(dst, src):
        i = cuda.grid(1)
        if i < dst.size:
            dst[i] += src[i]

    s1, s2 = cuda.stream(), cuda.stream()
    a = cuda.device_array(1000, dtype=np.int64)
    b = cuda.device_array(1000, dtype=np.int64)
    fill[8, 128, s1](a, 7)
    done = cuda.event()
    done.record(s1)
    fill[8, 128, s2](b, 5)
    done.wait(s2)
    add_from[8, 128, s2](b, a)
    s2.synchronize()
    np.testing.assert_array_equal(b.copy_to_host(), np.full(1000, 12))


def test_vectorize_ufunc():
    from numba import vectorize

    @vectorize(["float64(float64, float64)"], target="cuda")
    def hypot(a, b):
        return math.sqrt(a * a + b * b)

    a = np.linspace(-3, 3, 1001)
    b = np.linspace(4, -4, 1001)
    np.testing.assert_allclose(hypot(a, b), np.hypot(a, b), rtol=1e-12)


def test_reduce():
    @cuda.reduce
    def sum_reduce(a, b):
        return a + b

    x = np.arange(12345, dtype=np.float64)
    assert sum_reduce(x) == x.sum()


def test_constant_memory_and_records():
    table = np.array([3, 1, 4, 1, 5, 9, 2, 6], dtype=np.int32)
    rec = np.dtype([("a", np.int32), ("b", np.float64)], align=True)

    @cuda.jit
    def kernel(recs, out):
        c = cuda.const.array_like(table)
        i = cuda.grid(1)
        if i < recs.size:
            out[i] = recs[i].b * c[recs[i].a % 8]

    recs = np.zeros(100, dtype=rec)
    recs["a"] = np.arange(100)
    recs["b"] = np.linspace(0, 1, 100)
    out = np.zeros(100)
    kernel[1, 128](recs, out)
    np.testing.assert_allclose(out, recs["b"] * table[recs["a"] % 8])


def test_kernel_error_is_reported_not_crashed():
    @cuda.jit
    def bad(x):
        x[0] = 1

    with pytest.raises(Exception):
        # A host scalar is not an array: Numba refuses before launching.
        bad[1, 1](3)
    # The context still works.
    x = np.zeros(4, dtype=np.int32)
    bad[1, 1](x)
    assert x[0] == 1


def test_managed_array_moves_between_host_and_device():
    @cuda.jit
    def bump(x):
        i = cuda.grid(1)
        if i < x.size:
            x[i] = x[i] * 2 + 1

    dev = cuda.get_current_device()
    # rcud's managed memory: no concurrent access while kernels run.
    assert dev.MANAGED_MEMORY == 1
    a = cuda.managed_array(100, dtype=np.int64)
    a[:] = np.arange(100)
    bump[1, 128](a)
    cuda.synchronize()
    np.testing.assert_array_equal(np.asarray(a), np.arange(100) * 2 + 1)
    a[0] = 1000
    bump[1, 128](a)
    cuda.synchronize()
    assert a[0] == 2001 and a[99] == (99 * 2 + 1) * 2 + 1


def test_reshape_links_numbas_cuda_helpers():
    # Numba links its C helpers (compiled by NVRTC) with the kernel's PTX:
    # two PTX inputs to cuLinkAddData, linked by rcud.
    @cuda.jit
    def flat(a, out):
        b = a.reshape(a.size)
        for i in range(b.shape[0]):
            out[i] = b[i]

    a = np.arange(24, dtype=np.int32).reshape(4, 6)
    out = np.zeros(24, dtype=np.int32)
    flat[1, 1](a, out)
    np.testing.assert_array_equal(out, a.ravel())


def test_runtime_allocations_in_kernels():
    # Numba's runtime (NRT): arrays made inside a kernel come from the device
    # heap (malloc/free) and are released through function pointers.
    from numba.cuda import config

    old = config.CUDA_ENABLE_NRT
    config.CUDA_ENABLE_NRT = True
    try:
        @cuda.jit
        def copy_reversed(x, out):
            tmp = x[::-1].copy()
            for i in range(tmp.size):
                out[i] = tmp[i] + 1

        x = np.arange(10, dtype=np.float64)
        out = np.zeros_like(x)
        copy_reversed[1, 1](x, out)
        np.testing.assert_array_equal(out, x[::-1] + 1)
    finally:
        config.CUDA_ENABLE_NRT = old
