"""CuPy's math-library paths checked against numpy, under `rcud run`.

    rcud run -- .venv-cupy13/bin/python -m pytest -q tests/python/cupy_math.py

CuPy loads cuBLAS, cuFFT, cuRAND, cuSPARSE and cuSOLVER by their sonames
(`libcublas.so.13` ... or the CUDA 12 ones); `rcud run` offers rcud's
libraries under those names, so every call below is one request to the
server, computed on the CPU for the emulated device. Works with
cupy-cuda13x and cupy-cuda12x.
"""

import numpy as np
import pytest

import cupy as cp
import cupyx.scipy.sparse as sparse
from cupy.cuda import runtime


@pytest.fixture(scope="module", autouse=True)
def device():
    assert runtime.getDeviceCount() >= 1, "no CUDA device (run under `rcud run`)"
    return cp.cuda.Device(0)


def rng(seed):
    return np.random.default_rng(seed)


def tolerance(dtype):
    return 1e-4 if np.dtype(dtype) in (np.float32, np.complex64) else 1e-10


def random_matrix(seed, shape, dtype):
    r = rng(seed)
    a = r.standard_normal(shape)
    if np.dtype(dtype).kind == "c":
        a = a + 1j * r.standard_normal(shape)
    return a.astype(dtype)


# ---- cuBLAS -------------------------------------------------------------------

DTYPES = [np.float32, np.float64, np.complex64, np.complex128]


@pytest.mark.parametrize("dtype", DTYPES)
def test_matmul_dot_and_norm(dtype):
    a = random_matrix(1, (37, 23), dtype)
    b = random_matrix(2, (23, 19), dtype)
    got = (cp.asarray(a) @ cp.asarray(b)).get()
    np.testing.assert_allclose(got, a @ b, rtol=tolerance(dtype), atol=tolerance(dtype))
    # Transposed operands take cuBLAS's transpose flags.
    got_t = cp.dot(cp.asarray(b).T, cp.asarray(a).T).get()
    np.testing.assert_allclose(got_t, (a @ b).T, rtol=tolerance(dtype), atol=tolerance(dtype))
    v = random_matrix(3, (101,), dtype)
    np.testing.assert_allclose(
        float(cp.linalg.norm(cp.asarray(v))), np.linalg.norm(v), rtol=tolerance(dtype)
    )


def test_batched_matmul():
    a = random_matrix(4, (8, 5, 6), np.float32)
    b = random_matrix(5, (8, 6, 7), np.float32)
    np.testing.assert_allclose(cp.matmul(cp.asarray(a), cp.asarray(b)).get(), a @ b, rtol=1e-4, atol=1e-4)


def test_half_precision_matmul():
    a = random_matrix(6, (16, 16), np.float16)
    b = random_matrix(7, (16, 16), np.float16)
    want = a.astype(np.float32) @ b.astype(np.float32)
    got = (cp.asarray(a) @ cp.asarray(b)).get().astype(np.float32)
    np.testing.assert_allclose(got, want, rtol=2e-2, atol=2e-2)


# ---- cuSOLVER -----------------------------------------------------------------


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.complex128])
def test_solve_inv_cholesky(dtype):
    a = random_matrix(8, (12, 12), dtype) + 12 * np.eye(12, dtype=dtype)
    b = random_matrix(9, (12, 3), dtype)
    tol = tolerance(dtype) * 10
    np.testing.assert_allclose(
        cp.linalg.solve(cp.asarray(a), cp.asarray(b)).get(), np.linalg.solve(a, b), rtol=tol, atol=tol
    )
    np.testing.assert_allclose(cp.linalg.inv(cp.asarray(a)).get(), np.linalg.inv(a), rtol=tol, atol=tol)
    spd = a @ a.conj().T
    np.testing.assert_allclose(
        cp.linalg.cholesky(cp.asarray(spd)).get(), np.linalg.cholesky(spd), rtol=tol, atol=tol * 10
    )


@pytest.mark.parametrize("dtype", [np.float32, np.complex128])
def test_det_and_batched_inv_and_solve(dtype):
    # cuBLAS's batched LU: getrfBatched for det, getriBatched for a stack of
    # inverses, getrsBatched for a stack of systems.
    tol = tolerance(dtype) * 10
    a = random_matrix(20, (4, 6, 6), dtype) + 6 * np.eye(6, dtype=dtype)
    b = random_matrix(21, (4, 6, 2), dtype)
    np.testing.assert_allclose(cp.linalg.det(cp.asarray(a)).get(), np.linalg.det(a), rtol=tol)
    sign, logdet = cp.linalg.slogdet(cp.asarray(a[0]))
    want_sign, want_logdet = np.linalg.slogdet(a[0])
    np.testing.assert_allclose(complex(sign), complex(want_sign), rtol=tol, atol=tol)
    np.testing.assert_allclose(float(logdet), want_logdet, rtol=tol)
    np.testing.assert_allclose(cp.linalg.inv(cp.asarray(a)).get(), np.linalg.inv(a), rtol=tol, atol=tol)
    np.testing.assert_allclose(
        cp.linalg.solve(cp.asarray(a), cp.asarray(b)).get(), np.linalg.solve(a, b), rtol=tol, atol=tol
    )
    singular = a[1].copy()
    singular[:, 2] = 0
    assert float(abs(cp.linalg.det(cp.asarray(singular)))) == 0.0


@pytest.mark.parametrize("dtype", [np.float64, np.complex64])
def test_qr_eigh_svd(dtype):
    tol = tolerance(dtype) * 10
    a = random_matrix(10, (9, 6), dtype)
    q, r = cp.linalg.qr(cp.asarray(a))
    np.testing.assert_allclose((q @ r).get(), a, rtol=tol, atol=tol)
    h = a.conj().T @ a
    w, v = cp.linalg.eigh(cp.asarray(h))
    np.testing.assert_allclose(w.get(), np.linalg.eigvalsh(h), rtol=tol, atol=tol * 10)
    np.testing.assert_allclose((cp.asarray(h) @ v - v * w).get(), 0, atol=tol * 100)
    s = cp.linalg.svd(cp.asarray(a), compute_uv=False)
    np.testing.assert_allclose(s.get(), np.linalg.svd(a, compute_uv=False), rtol=tol, atol=tol)


# ---- cuFFT --------------------------------------------------------------------


@pytest.mark.parametrize("dtype", [np.complex64, np.complex128])
def test_fft_family(dtype):
    tol = tolerance(dtype) * 10
    x = random_matrix(11, (6, 10), dtype)
    np.testing.assert_allclose(cp.fft.fft(cp.asarray(x)).get(), np.fft.fft(x), rtol=tol, atol=tol)
    np.testing.assert_allclose(cp.fft.ifft(cp.asarray(x)).get(), np.fft.ifft(x), rtol=tol, atol=tol)
    np.testing.assert_allclose(cp.fft.fft2(cp.asarray(x)).get(), np.fft.fft2(x), rtol=tol, atol=tol)
    real = x.real.copy()
    spectrum = np.fft.rfft(real)
    np.testing.assert_allclose(cp.fft.rfft(cp.asarray(real)).get(), spectrum, rtol=tol, atol=tol)
    np.testing.assert_allclose(
        cp.fft.irfft(cp.asarray(spectrum), n=10).get(), np.fft.irfft(spectrum, n=10), rtol=tol, atol=tol
    )
    cube = random_matrix(12, (4, 6, 5), dtype)
    np.testing.assert_allclose(cp.fft.fftn(cp.asarray(cube)).get(), np.fft.fftn(cube), rtol=tol, atol=tol)


# ---- cuRAND -------------------------------------------------------------------


def test_random_state_is_seeded_and_distributed():
    first = cp.random.RandomState(1234).uniform(size=4096).get()
    again = cp.random.RandomState(1234).uniform(size=4096).get()
    np.testing.assert_array_equal(first, again)
    assert 0.0 <= first.min() and first.max() < 1.0
    assert abs(first.mean() - 0.5) < 0.02
    normal = cp.random.RandomState(99).normal(size=20000).get()
    assert abs(normal.mean()) < 0.05 and abs(normal.std() - 1.0) < 0.05
    ints = cp.random.RandomState(7).randint(0, 10, size=5000).get()
    assert set(np.unique(ints)) == set(range(10))


# ---- cuSPARSE -----------------------------------------------------------------


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.complex128])
def test_csr_matvec_and_conversions(dtype):
    dense = random_matrix(13, (40, 30), dtype)
    dense[np.abs(dense) < 1.0] = 0
    indptr = np.concatenate([[0], np.cumsum((dense != 0).sum(axis=1))]).astype(np.int32)
    indices = np.nonzero(dense)[1].astype(np.int32)
    data = dense[dense != 0]
    m = sparse.csr_matrix((cp.asarray(data), cp.asarray(indices), cp.asarray(indptr)), shape=dense.shape)
    x = random_matrix(14, (30,), dtype)
    tol = tolerance(dtype) * 10
    np.testing.assert_allclose((m @ cp.asarray(x)).get(), dense @ x, rtol=tol, atol=tol)
    np.testing.assert_allclose(m.todense().get(), dense, rtol=0, atol=0)
    # CSR to CSC (cusparseCsr2cscEx2), rebuilt column by column on the host.
    c = m.tocsc()
    cdata, cindices, cindptr = c.data.get(), c.indices.get(), c.indptr.get()
    rebuilt = np.zeros_like(dense)
    for col in range(dense.shape[1]):
        rows = cindices[cindptr[col] : cindptr[col + 1]]
        rebuilt[rows, col] = cdata[cindptr[col] : cindptr[col + 1]]
    np.testing.assert_array_equal(rebuilt, dense)


def unsorted_entries(seed, shape, nnz, dtype):
    """COO entries in random order with repeated positions, and their sum."""
    r = rng(seed)
    row = r.integers(0, shape[0], nnz).astype(np.int32)
    col = r.integers(0, shape[1], nnz).astype(np.int32)
    data = random_matrix(seed + 1, (nnz,), dtype)
    dense = np.zeros(shape, dtype)
    np.add.at(dense, (row, col), data)
    return row, col, data, dense


@pytest.mark.parametrize("dtype", DTYPES)
def test_duplicates_and_unsorted_indices(dtype):
    # cusparseXcoosortByRow/ByColumn, CreateIdentityPermutation, Gather
    # (how CuPy applies the permutation), Xcsrsort, Xcscsort.
    shape, nnz = (12, 9), 70
    row, col, data, dense = unsorted_entries(31, shape, nnz, dtype)
    tol = tolerance(dtype) * 10
    coo = sparse.coo_matrix((cp.asarray(data), (cp.asarray(row), cp.asarray(col))), shape=shape)
    csr = coo.tocsr()
    indptr, indices = csr.indptr.get(), csr.indices.get()
    for i in range(shape[0]):
        seg = indices[indptr[i] : indptr[i + 1]]
        assert np.all(np.diff(seg) > 0), f"row {i}: {seg}"
    np.testing.assert_allclose(csr.todense().get(), dense, rtol=tol, atol=tol)
    np.testing.assert_allclose(coo.tocsc().todense().get(), dense, rtol=tol, atol=tol)
    # A CSC matrix with duplicates and rows out of order in each column.
    order = np.argsort(col, kind="stable")
    cindptr = np.concatenate([[0], np.cumsum(np.bincount(col, minlength=shape[1]))]).astype(np.int32)
    csc = sparse.csc_matrix(
        (cp.asarray(data[order]), cp.asarray(row[order]), cp.asarray(cindptr)), shape=shape
    )
    np.testing.assert_allclose(csc.todense().get(), dense, rtol=tol, atol=tol)
    csc.sort_indices()
    ci = csc.indices.get()
    for j in range(shape[1]):
        assert np.all(np.diff(ci[cindptr[j] : cindptr[j + 1]]) >= 0), f"column {j}"
    np.testing.assert_allclose(csc.todense().get(), dense, rtol=tol, atol=tol)
    # Unsorted CSR (duplicates kept): sorted_indices() and sort_indices()
    # sort each row stably and carry the values along.
    rorder = np.argsort(row, kind="stable")
    rindptr = np.concatenate([[0], np.cumsum(np.bincount(row, minlength=shape[0]))]).astype(np.int32)
    rcols, rdata = col[rorder], data[rorder]
    want_indices, want_data = rcols.copy(), rdata.copy()
    for i in range(shape[0]):
        s = slice(rindptr[i], rindptr[i + 1])
        p = np.argsort(rcols[s], kind="stable")
        want_indices[s], want_data[s] = rcols[s][p], rdata[s][p]
    unsorted = sparse.csr_matrix((cp.asarray(rdata), cp.asarray(rcols), cp.asarray(rindptr)), shape=shape)
    got = unsorted.sorted_indices()
    np.testing.assert_array_equal(got.indices.get(), want_indices)
    np.testing.assert_array_equal(got.data.get(), want_data)
    unsorted.sort_indices()
    np.testing.assert_array_equal(unsorted.indices.get(), want_indices)
    np.testing.assert_array_equal(unsorted.data.get(), want_data)
