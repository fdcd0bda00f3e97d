//! cuBLAS's batched routines beyond GEMM and LU on a real GPU
//! (`trsmBatched`, `gemvBatched`, `gemvStridedBatched`, `geqrfBatched`,
//! `gelsBatched`), checked as the emulated device checks them: the
//! arguments first (cuBLAS's statuses), then every matrix and vector the
//! pointer arrays name, or the whole span of a strided batch, and
//! `devInfoArray`, against the client's allocations. cuBLAS gets copies of
//! the checked pointer arrays in the server's own memory
//! ([`CudaDeviceContext::with_checked_arrays`]).

use rcud_cuda_driver::cublas::Batched;
use rcud_proto::math::blas::{Call, Operand};

use super::{
    fill, int, matrix_range, one_of, precision, range_of, sided, size, strided_range, transpose,
    unit, vector_range, Outcome, PointerArray, Refusal, INVALID_VALUE, NOT_SUPPORTED,
};
use crate::backend::cuda::CudaDeviceContext;

/// A size that must not be negative, as cuBLAS's `int`.
fn count(v: i64) -> Result<i32, Refusal> {
    if v < 0 {
        return Err(Refusal::Status(INVALID_VALUE));
    }
    int(v)
}

/// A leading dimension of `rows`-row matrices: at least max(1, rows).
fn leading(ld: i64, rows: i64) -> Result<i32, Refusal> {
    if ld < rows.max(1) {
        return Err(Refusal::Status(INVALID_VALUE));
    }
    int(ld)
}

/// Array `what` of matrices `rows` x `cols` with leading dimension `ld`.
fn matrices(what: &'static str, o: Operand, rows: i64, cols: i64, elem: u64) -> PointerArray {
    PointerArray {
        what,
        ptr: o.ptr,
        shape: (rows, cols),
        ld: o.ld,
        elem,
    }
}

/// Array `what` of vectors of `n` elements at increment `o.ld`: 1 x n
/// matrices with leading dimension |inc|.
fn vectors(what: &'static str, o: Operand, n: i64, elem: u64) -> PointerArray {
    PointerArray {
        what,
        ptr: o.ptr,
        shape: (1, n),
        ld: o.ld.saturating_abs(),
        elem,
    }
}

impl CudaDeviceContext {
    pub(super) fn batched(&mut self, handle: u64, call: Call) -> Result<Vec<u8>, Outcome> {
        match call {
            Call::TrsmBatched {
                dtype,
                side,
                uplo,
                trans,
                diag,
                m,
                n,
                alpha,
                a,
                b,
                batch,
                ..
            } => {
                let p = precision(dtype)?;
                let (side, uplo, trans, diag) =
                    (sided(side)?, fill(uplo)?, transpose(trans)?, unit(diag)?);
                let (m32, n32, batch32) = (count(m)?, count(n)?, count(batch)?);
                let na = if side == 0 { m } else { n };
                let (lda, ldb) = (leading(a.ld, na)?, leading(b.ld, m)?);
                let alpha = self.scalar_arg(alpha, dtype, "alpha")?;
                if m == 0 || n == 0 || batch == 0 {
                    return Ok(Vec::new());
                }
                let elem = size(dtype)?;
                let arrays = [matrices("A", a, na, na, elem), matrices("B", b, m, n, elem)];
                self.with_checked_arrays(&arrays, batch32, |ctx, staged| {
                    let call = Batched::Trsm {
                        side,
                        uplo,
                        trans,
                        diag,
                        m: m32,
                        n: n32,
                        alpha,
                        a: staged[0],
                        lda,
                        b: staged[1],
                        ldb,
                        batch: batch32,
                    };
                    ctx.handle(handle)?.batched(call, p).map_err(Outcome::from)
                })?;
            }
            Call::GemvBatched {
                types,
                trans,
                m,
                n,
                alpha,
                a,
                x,
                beta,
                y,
                batch,
                pointer_arrays,
                ..
            } => {
                // The half and bfloat16 forms are not forwarded.
                let [dt, y_dt, compute] = types;
                if y_dt != dt || compute != dt {
                    return Err(Refusal::Status(NOT_SUPPORTED).into());
                }
                let p = precision(dt)?;
                let trans = transpose(trans)?;
                let (m32, n32, batch32) = (count(m)?, count(n)?, count(batch)?);
                let lda = leading(a.ld, m)?;
                if x.ld == 0 || y.ld == 0 {
                    return Err(Refusal::Status(INVALID_VALUE).into());
                }
                let (incx, incy) = (int(x.ld)?, int(y.ld)?);
                let alpha = self.scalar_arg(alpha, dt, "alpha")?;
                let beta = self.scalar_arg(beta, dt, "beta")?;
                if m == 0 || n == 0 || batch == 0 {
                    return Ok(Vec::new());
                }
                let elem = size(dt)?;
                let (lx, ly) = if trans == 0 { (n, m) } else { (m, n) };
                let call = |a, x, y, strides| Batched::Gemv {
                    trans,
                    m: m32,
                    n: n32,
                    alpha,
                    a,
                    lda,
                    x,
                    incx,
                    beta,
                    y,
                    incy,
                    strides,
                    batch: batch32,
                };
                if pointer_arrays {
                    let arrays = [
                        matrices("A", a, m, n, elem),
                        vectors("x", x, lx, elem),
                        vectors("y", y, ly, elem),
                    ];
                    self.with_checked_arrays(&arrays, batch32, |ctx, staged| {
                        let call = call(staged[0], staged[1], staged[2], None);
                        ctx.handle(handle)?.batched(call, p).map_err(Outcome::from)
                    })?;
                } else {
                    let spans = [
                        ("A", a, matrix_range("A", a.ptr, m, n, a.ld, elem)?),
                        ("x", x, vector_range("x", x.ptr, lx, x.ld, elem)?),
                        ("y", y, vector_range("y", y.ptr, ly, y.ld, elem)?),
                    ];
                    for (what, o, first) in spans {
                        let all = strided_range(what, first, o.stride, elem, batch)?;
                        self.check_range(all, what)?;
                    }
                    let strides = Some([a.stride, x.stride, y.stride]);
                    self.handle(handle)?
                        .batched(call(a.ptr, x.ptr, y.ptr, strides), p)?;
                }
            }
            Call::GeqrfBatched {
                dtype,
                m,
                n,
                a,
                tau,
                batch,
                ..
            } => {
                let p = precision(dtype)?;
                let (m32, n32, batch32) = (count(m)?, count(n)?, count(batch)?);
                let lda = leading(a.ld, m)?;
                let k = m.min(n);
                if k == 0 || batch == 0 {
                    return Ok(Vec::new());
                }
                let elem = size(dtype)?;
                let taus = Operand {
                    ptr: tau,
                    ld: k,
                    stride: 0,
                };
                let arrays = [
                    matrices("A", a, m, n, elem),
                    matrices("Tau", taus, k, 1, elem),
                ];
                self.with_checked_arrays(&arrays, batch32, |ctx, staged| {
                    let call = Batched::Geqrf {
                        m: m32,
                        n: n32,
                        a: staged[0],
                        lda,
                        tau: staged[1],
                        batch: batch32,
                    };
                    ctx.handle(handle)?.batched(call, p).map_err(Outcome::from)
                })?;
            }
            Call::GelsBatched {
                dtype,
                trans,
                m,
                n,
                nrhs,
                a,
                c,
                dev_info,
                batch,
                ..
            } => {
                let p = precision(dtype)?;
                one_of(trans, &[0, 1, 2])?;
                let (m32, n32, nrhs32, batch32) =
                    (count(m)?, count(n)?, count(nrhs)?, count(batch)?);
                let (lda, ldc) = (leading(a.ld, m)?, leading(c.ld, m)?);
                if trans != 0 || m < n {
                    return Err(Refusal::Status(NOT_SUPPORTED).into());
                }
                if batch == 0 {
                    return Ok(Vec::new());
                }
                if dev_info != 0 {
                    let len = i128::from(batch) * 4;
                    self.check_range(range_of("devInfoArray", dev_info, 0, len)?, "devInfoArray")?;
                }
                let elem = size(dtype)?;
                let arrays = [
                    matrices("A", a, m, n, elem),
                    matrices("C", c, m, nrhs, elem),
                ];
                self.with_checked_arrays(&arrays, batch32, |ctx, staged| {
                    let call = Batched::Gels {
                        trans,
                        m: m32,
                        n: n32,
                        nrhs: nrhs32,
                        a: staged[0],
                        lda,
                        c: staged[1],
                        ldc,
                        dev_info,
                        batch: batch32,
                    };
                    ctx.handle(handle)?.batched(call, p).map_err(Outcome::from)
                })?;
            }
            _ => return Err(Refusal::Status(INVALID_VALUE).into()),
        }
        Ok(Vec::new())
    }
}
