//! cuBLAS's batched LU routines on a real GPU (`getrfBatched`,
//! `getrsBatched`, `getriBatched`, `matinvBatched`), checked as the emulated device checks
//! them: the dimensions first (cuBLAS's `INVALID_VALUE`), then every
//! matrix the pointer arrays name, the pivots and `info` against the
//! client's allocations. cuBLAS gets copies of the checked pointer arrays
//! in the server's own memory ([`CudaDeviceContext::with_checked_arrays`]).

use rcud_cuda_driver::cublas::LuBatched;
use rcud_proto::math::blas::{Call, Operand, MATINV_MAX};

use super::{
    int, precision, range_of, size, transpose, Outcome, PointerArray, Refusal, INVALID_VALUE,
};
use crate::backend::cuda::CudaDeviceContext;

/// A dimension that must not be negative, as cuBLAS's `int`.
fn dimension(v: i64) -> Result<i32, Refusal> {
    if v < 0 {
        return Err(Refusal::Status(INVALID_VALUE));
    }
    int(v)
}

/// A leading dimension of an n-row matrix: at least max(1, n).
fn leading(ld: i64, n: i64) -> Result<i32, Refusal> {
    if ld < n.max(1) {
        return Err(Refusal::Status(INVALID_VALUE));
    }
    int(ld)
}

impl CudaDeviceContext {
    /// Checks a device range of `count` ints at `ptr`.
    fn check_ints(&self, what: &str, ptr: u64, count: i64) -> Result<(), Refusal> {
        let len = i128::from(count) * 4;
        self.check_range(range_of(what, ptr, 0, len)?, what)
    }

    pub(super) fn lu_batched(&mut self, handle: u64, call: Call) -> Result<Vec<u8>, Outcome> {
        let array = |what: &'static str, o: Operand, cols: i64, n: i64, elem: u64| PointerArray {
            what,
            ptr: o.ptr,
            shape: (n, cols),
            ld: o.ld,
            elem,
        };
        match call {
            Call::GetrfBatched {
                dtype,
                n,
                a,
                pivots,
                info,
                batch,
                ..
            } => {
                let p = precision(dtype)?;
                let (n32, lda, batch32) = (dimension(n)?, leading(a.ld, n)?, dimension(batch)?);
                if n == 0 || batch == 0 {
                    return Ok(Vec::new());
                }
                if pivots != 0 {
                    self.check_ints("pivots", pivots, n * batch)?;
                }
                self.check_ints("info", info, batch)?;
                let arrays = [array("A", a, n, n, size(dtype)?)];
                self.with_checked_arrays(&arrays, batch32, |ctx, staged| {
                    let call = LuBatched::Getrf {
                        n: n32,
                        a: staged[0],
                        lda,
                        pivots,
                        info,
                        batch: batch32,
                    };
                    ctx.handle(handle)?
                        .lu_batched(call, p)
                        .map_err(Outcome::from)
                })?;
            }
            Call::GetrsBatched {
                dtype,
                trans,
                n,
                nrhs,
                a,
                pivots,
                b,
                batch,
                ..
            } => {
                let p = precision(dtype)?;
                let trans = transpose(trans)?;
                let (n32, nrhs32, batch32) = (dimension(n)?, dimension(nrhs)?, dimension(batch)?);
                let (lda, ldb) = (leading(a.ld, n)?, leading(b.ld, n)?);
                if n == 0 || nrhs == 0 || batch == 0 {
                    return Ok(Vec::new());
                }
                if pivots != 0 {
                    self.check_ints("pivots", pivots, n * batch)?;
                }
                let elem = size(dtype)?;
                let arrays = [array("A", a, n, n, elem), array("B", b, nrhs, n, elem)];
                self.with_checked_arrays(&arrays, batch32, |ctx, staged| {
                    let call = LuBatched::Getrs {
                        trans,
                        n: n32,
                        nrhs: nrhs32,
                        a: staged[0],
                        lda,
                        pivots,
                        b: staged[1],
                        ldb,
                        batch: batch32,
                    };
                    ctx.handle(handle)?
                        .lu_batched(call, p)
                        .map_err(Outcome::from)
                })?;
            }
            Call::GetriBatched {
                dtype,
                n,
                a,
                pivots,
                c,
                info,
                batch,
                ..
            } => {
                let p = precision(dtype)?;
                let (n32, batch32) = (dimension(n)?, dimension(batch)?);
                let (lda, ldc) = (leading(a.ld, n)?, leading(c.ld, n)?);
                if n == 0 || batch == 0 {
                    return Ok(Vec::new());
                }
                if pivots != 0 {
                    self.check_ints("pivots", pivots, n * batch)?;
                }
                self.check_ints("info", info, batch)?;
                let elem = size(dtype)?;
                let arrays = [array("A", a, n, n, elem), array("C", c, n, n, elem)];
                self.with_checked_arrays(&arrays, batch32, |ctx, staged| {
                    let call = LuBatched::Getri {
                        n: n32,
                        a: staged[0],
                        lda,
                        pivots,
                        c: staged[1],
                        ldc,
                        info,
                        batch: batch32,
                    };
                    ctx.handle(handle)?
                        .lu_batched(call, p)
                        .map_err(Outcome::from)
                })?;
            }
            Call::MatinvBatched {
                dtype,
                n,
                a,
                c,
                info,
                batch,
                ..
            } => {
                let p = precision(dtype)?;
                if n > MATINV_MAX {
                    return Err(Refusal::Status(INVALID_VALUE).into());
                }
                let (n32, batch32) = (dimension(n)?, dimension(batch)?);
                let (lda, ldc) = (leading(a.ld, n)?, leading(c.ld, n)?);
                if n == 0 || batch == 0 {
                    return Ok(Vec::new());
                }
                self.check_ints("info", info, batch)?;
                let elem = size(dtype)?;
                let arrays = [array("A", a, n, n, elem), array("C", c, n, n, elem)];
                self.with_checked_arrays(&arrays, batch32, |ctx, staged| {
                    let call = LuBatched::Matinv {
                        n: n32,
                        a: staged[0],
                        lda,
                        c: staged[1],
                        ldc,
                        info,
                        batch: batch32,
                    };
                    ctx.handle(handle)?
                        .lu_batched(call, p)
                        .map_err(Outcome::from)
                })?;
            }
            _ => return Err(Refusal::Status(INVALID_VALUE).into()),
        }
        Ok(Vec::new())
    }
}
