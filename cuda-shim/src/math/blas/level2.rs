//! cuBLAS level 2: gemv, ger/geru/gerc, symv/hemv, trmv, trsv (and their
//! `_64` forms).

use std::os::raw::c_int;

use rcud_proto::math::blas::{dtype, Call};

use super::{both, diag_arg, fill_arg, handle, matrix, nonnegative, op_arg, vector, Handle};

macro_rules! gemv {
    ($(fn $name:ident / $name64:ident ($t:ty, $dt:ident);)*) => {$(
        both! { fn $name / $name64 (h: Handle, trans: c_int, m: Int, n: Int, alpha: *const $t, a: *const $t, lda: Int, x: *const $t, incx: Int, beta: *const $t, y: *mut $t, incy: Int) {
            let s = handle(h)?;
            op_arg(trans)?;
            let (m, n) = (i64::from(m), i64::from(n));
            nonnegative(&[m, n])?;
            let size = std::mem::size_of::<$t>();
            let (lx, ly) = if trans == 0 { (n, m) } else { (m, n) };
            s.enqueue(&Call::Gemv {
                handle: s.id(),
                dtype: dtype::$dt,
                trans,
                m,
                n,
                alpha: s.scalar(alpha)?,
                a: matrix(a.cast(), m, n, lda.into(), size)?,
                x: vector(x.cast(), lx, incx.into(), size)?,
                beta: s.scalar(beta)?,
                y: vector(y.cast_const().cast(), ly, incy.into(), size)?,
            })
        } }
    )*};
}

gemv! {
    fn cublasSgemv_v2 / cublasSgemv_v2_64 (f32, R32F);
    fn cublasDgemv_v2 / cublasDgemv_v2_64 (f64, R64F);
    fn cublasCgemv_v2 / cublasCgemv_v2_64 ([f32; 2], C32F);
    fn cublasZgemv_v2 / cublasZgemv_v2_64 ([f64; 2], C64F);
}

macro_rules! ger {
    ($(fn $name:ident / $name64:ident ($t:ty, $dt:ident, $conj:expr);)*) => {$(
        both! { fn $name / $name64 (h: Handle, m: Int, n: Int, alpha: *const $t, x: *const $t, incx: Int, y: *const $t, incy: Int, a: *mut $t, lda: Int) {
            let s = handle(h)?;
            let (m, n) = (i64::from(m), i64::from(n));
            nonnegative(&[m, n])?;
            let size = std::mem::size_of::<$t>();
            s.enqueue(&Call::Ger {
                handle: s.id(),
                dtype: dtype::$dt,
                conj: $conj,
                m,
                n,
                alpha: s.scalar(alpha)?,
                x: vector(x.cast(), m, incx.into(), size)?,
                y: vector(y.cast(), n, incy.into(), size)?,
                a: matrix(a.cast_const().cast(), m, n, lda.into(), size)?,
            })
        } }
    )*};
}

ger! {
    fn cublasSger_v2 / cublasSger_v2_64 (f32, R32F, false);
    fn cublasDger_v2 / cublasDger_v2_64 (f64, R64F, false);
    fn cublasCgeru_v2 / cublasCgeru_v2_64 ([f32; 2], C32F, false);
    fn cublasCgerc_v2 / cublasCgerc_v2_64 ([f32; 2], C32F, true);
    fn cublasZgeru_v2 / cublasZgeru_v2_64 ([f64; 2], C64F, false);
    fn cublasZgerc_v2 / cublasZgerc_v2_64 ([f64; 2], C64F, true);
}

macro_rules! symv {
    ($(fn $name:ident / $name64:ident ($t:ty, $dt:ident, $hermitian:expr);)*) => {$(
        both! { fn $name / $name64 (h: Handle, uplo: c_int, n: Int, alpha: *const $t, a: *const $t, lda: Int, x: *const $t, incx: Int, beta: *const $t, y: *mut $t, incy: Int) {
            let s = handle(h)?;
            fill_arg(uplo)?;
            let n = i64::from(n);
            nonnegative(&[n])?;
            let size = std::mem::size_of::<$t>();
            s.enqueue(&Call::Symv {
                handle: s.id(),
                dtype: dtype::$dt,
                hermitian: $hermitian,
                uplo,
                n,
                alpha: s.scalar(alpha)?,
                a: matrix(a.cast(), n, n, lda.into(), size)?,
                x: vector(x.cast(), n, incx.into(), size)?,
                beta: s.scalar(beta)?,
                y: vector(y.cast_const().cast(), n, incy.into(), size)?,
            })
        } }
    )*};
}

symv! {
    fn cublasSsymv_v2 / cublasSsymv_v2_64 (f32, R32F, false);
    fn cublasDsymv_v2 / cublasDsymv_v2_64 (f64, R64F, false);
    fn cublasCsymv_v2 / cublasCsymv_v2_64 ([f32; 2], C32F, false);
    fn cublasZsymv_v2 / cublasZsymv_v2_64 ([f64; 2], C64F, false);
    fn cublasChemv_v2 / cublasChemv_v2_64 ([f32; 2], C32F, true);
    fn cublasZhemv_v2 / cublasZhemv_v2_64 ([f64; 2], C64F, true);
}

macro_rules! trmv {
    ($(fn $name:ident / $name64:ident ($t:ty, $dt:ident, $solve:expr);)*) => {$(
        both! { fn $name / $name64 (h: Handle, uplo: c_int, trans: c_int, diag: c_int, n: Int, a: *const $t, lda: Int, x: *mut $t, incx: Int) {
            let s = handle(h)?;
            fill_arg(uplo)?;
            op_arg(trans)?;
            diag_arg(diag)?;
            let n = i64::from(n);
            nonnegative(&[n])?;
            let size = std::mem::size_of::<$t>();
            s.enqueue(&Call::Trmv {
                handle: s.id(),
                dtype: dtype::$dt,
                solve: $solve,
                uplo,
                trans,
                diag,
                n,
                a: matrix(a.cast(), n, n, lda.into(), size)?,
                x: vector(x.cast_const().cast(), n, incx.into(), size)?,
            })
        } }
    )*};
}

trmv! {
    fn cublasStrmv_v2 / cublasStrmv_v2_64 (f32, R32F, false);
    fn cublasDtrmv_v2 / cublasDtrmv_v2_64 (f64, R64F, false);
    fn cublasCtrmv_v2 / cublasCtrmv_v2_64 ([f32; 2], C32F, false);
    fn cublasZtrmv_v2 / cublasZtrmv_v2_64 ([f64; 2], C64F, false);
    fn cublasStrsv_v2 / cublasStrsv_v2_64 (f32, R32F, true);
    fn cublasDtrsv_v2 / cublasDtrsv_v2_64 (f64, R64F, true);
    fn cublasCtrsv_v2 / cublasCtrsv_v2_64 ([f32; 2], C32F, true);
    fn cublasZtrsv_v2 / cublasZtrsv_v2_64 ([f64; 2], C64F, true);
}
