//! cuBLAS level 2: gemv, ger/geru/gerc, symv/hemv, trmv, trsv; the banded
//! and packed forms gbmv, sbmv/hbmv, spmv/hpmv, tbmv/tbsv, tpmv/tpsv; the
//! rank updates syr/her, syr2/her2, spr/hpr, spr2/hpr2 (and their `_64`
//! forms).

use std::os::raw::c_int;

use rcud_proto::math::blas::{dtype, level2 as kind, Call, Operand, Scalar};

use super::{
    both, diag_arg, fill_arg, handle, matrix, nonnegative, op_arg, packed, vector, Handle,
    HandleState,
};

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

/// The scalar a call without one sends.
const NONE: Scalar = Scalar::Host { re: 0.0, im: 0.0 };

/// The shape of a banded or packed call: (m, n, kl, k) and lda (packed: 0).
struct Band {
    kind: u8,
    hermitian: bool,
    uplo: c_int,
    trans: c_int,
    diag: c_int,
    m: i64,
    n: i64,
    kl: i64,
    k: i64,
    lda: i64,
}

/// Checks and queues gbmv, sbmv/hbmv, spmv/hpmv, tbmv/tbsv or tpmv/tpsv.
#[allow(clippy::too_many_arguments)]
fn banded(
    s: &HandleState,
    dt: u8,
    b: Band,
    (alpha, beta): (Scalar, Scalar),
    a: *const std::os::raw::c_void,
    (x, incx): (*const std::os::raw::c_void, i64),
    (y, incy): (*const std::os::raw::c_void, i64),
) -> Result<(), c_int> {
    let triangular = matches!(b.kind, kind::TBMV | kind::TBSV | kind::TPMV | kind::TPSV);
    if b.kind == kind::GBMV || triangular {
        op_arg(b.trans)?;
    }
    if b.kind != kind::GBMV {
        fill_arg(b.uplo)?;
    }
    if triangular {
        diag_arg(b.diag)?;
    }
    nonnegative(&[b.m, b.n, b.kl, b.k])?;
    let size = dtype::size(dt).unwrap_or(1) as usize;
    // Banded storage: lda >= kl + ku + 1 (gbmv) or k + 1, as cuBLAS checks.
    let a = match b.kind {
        kind::GBMV => matrix(a, b.kl + b.k + 1, b.n, b.lda, size)?,
        kind::SBMV | kind::TBMV | kind::TBSV => matrix(a, b.k + 1, b.n, b.lda, size)?,
        _ => packed(a, b.n, size)?,
    };
    let (lx, ly) = if b.kind == kind::GBMV && b.trans != 0 {
        (b.m, b.n)
    } else if b.kind == kind::GBMV {
        (b.n, b.m)
    } else {
        (b.n, b.n)
    };
    let x = vector(x, lx, incx, size)?;
    let y = if triangular {
        Operand {
            ptr: 0,
            ld: 1,
            stride: 0,
        }
    } else {
        vector(y, ly, incy, size)?
    };
    if incx == 0 || (!triangular && incy == 0) {
        return Err(super::INVALID_VALUE);
    }
    s.enqueue(&Call::Banded {
        handle: s.id(),
        dtype: dt,
        kind: b.kind,
        hermitian: b.hermitian,
        uplo: b.uplo,
        trans: b.trans,
        diag: b.diag,
        m: b.m,
        n: b.n,
        kl: b.kl,
        k: b.k,
        alpha,
        a,
        x,
        beta,
        y,
    })
}

macro_rules! gbmv {
    ($(fn $name:ident / $name64:ident ($t:ty, $dt:ident);)*) => {$(
        both! { fn $name / $name64 (h: Handle, trans: c_int, m: Int, n: Int, kl: Int, ku: Int, alpha: *const $t, a: *const $t, lda: Int, x: *const $t, incx: Int, beta: *const $t, y: *mut $t, incy: Int) {
            let s = handle(h)?;
            let b = Band { kind: kind::GBMV, hermitian: false, uplo: 0, trans, diag: 0, m: m.into(), n: n.into(), kl: kl.into(), k: ku.into(), lda: lda.into() };
            banded(&s, dtype::$dt, b, (s.scalar(alpha)?, s.scalar(beta)?), a.cast(), (x.cast(), incx.into()), (y.cast_const().cast(), incy.into()))
        } }
    )*};
}

gbmv! {
    fn cublasSgbmv_v2 / cublasSgbmv_v2_64 (f32, R32F);
    fn cublasDgbmv_v2 / cublasDgbmv_v2_64 (f64, R64F);
    fn cublasCgbmv_v2 / cublasCgbmv_v2_64 ([f32; 2], C32F);
    fn cublasZgbmv_v2 / cublasZgbmv_v2_64 ([f64; 2], C64F);
}

macro_rules! sbmv {
    ($(fn $name:ident / $name64:ident ($t:ty, $dt:ident, $hermitian:expr);)*) => {$(
        both! { fn $name / $name64 (h: Handle, uplo: c_int, n: Int, k: Int, alpha: *const $t, a: *const $t, lda: Int, x: *const $t, incx: Int, beta: *const $t, y: *mut $t, incy: Int) {
            let s = handle(h)?;
            fill_arg(uplo)?;
            let b = Band { kind: kind::SBMV, hermitian: $hermitian, uplo, trans: 0, diag: 0, m: n.into(), n: n.into(), kl: 0, k: k.into(), lda: lda.into() };
            banded(&s, dtype::$dt, b, (s.scalar(alpha)?, s.scalar(beta)?), a.cast(), (x.cast(), incx.into()), (y.cast_const().cast(), incy.into()))
        } }
    )*};
}

sbmv! {
    fn cublasSsbmv_v2 / cublasSsbmv_v2_64 (f32, R32F, false);
    fn cublasDsbmv_v2 / cublasDsbmv_v2_64 (f64, R64F, false);
    fn cublasChbmv_v2 / cublasChbmv_v2_64 ([f32; 2], C32F, true);
    fn cublasZhbmv_v2 / cublasZhbmv_v2_64 ([f64; 2], C64F, true);
}

macro_rules! spmv {
    ($(fn $name:ident / $name64:ident ($t:ty, $dt:ident, $hermitian:expr);)*) => {$(
        both! { fn $name / $name64 (h: Handle, uplo: c_int, n: Int, alpha: *const $t, ap: *const $t, x: *const $t, incx: Int, beta: *const $t, y: *mut $t, incy: Int) {
            let s = handle(h)?;
            fill_arg(uplo)?;
            let b = Band { kind: kind::SPMV, hermitian: $hermitian, uplo, trans: 0, diag: 0, m: n.into(), n: n.into(), kl: 0, k: 0, lda: 0 };
            banded(&s, dtype::$dt, b, (s.scalar(alpha)?, s.scalar(beta)?), ap.cast(), (x.cast(), incx.into()), (y.cast_const().cast(), incy.into()))
        } }
    )*};
}

spmv! {
    fn cublasSspmv_v2 / cublasSspmv_v2_64 (f32, R32F, false);
    fn cublasDspmv_v2 / cublasDspmv_v2_64 (f64, R64F, false);
    fn cublasChpmv_v2 / cublasChpmv_v2_64 ([f32; 2], C32F, true);
    fn cublasZhpmv_v2 / cublasZhpmv_v2_64 ([f64; 2], C64F, true);
}

macro_rules! tbmv {
    ($(fn $name:ident / $name64:ident ($t:ty, $dt:ident, $kind:ident);)*) => {$(
        both! { fn $name / $name64 (h: Handle, uplo: c_int, trans: c_int, diag: c_int, n: Int, k: Int, a: *const $t, lda: Int, x: *mut $t, incx: Int) {
            let s = handle(h)?;
            let b = Band { kind: kind::$kind, hermitian: false, uplo, trans, diag, m: n.into(), n: n.into(), kl: 0, k: k.into(), lda: lda.into() };
            banded(&s, dtype::$dt, b, (NONE, NONE), a.cast(), (x.cast_const().cast(), incx.into()), (std::ptr::null(), 1))
        } }
    )*};
}

tbmv! {
    fn cublasStbmv_v2 / cublasStbmv_v2_64 (f32, R32F, TBMV);
    fn cublasDtbmv_v2 / cublasDtbmv_v2_64 (f64, R64F, TBMV);
    fn cublasCtbmv_v2 / cublasCtbmv_v2_64 ([f32; 2], C32F, TBMV);
    fn cublasZtbmv_v2 / cublasZtbmv_v2_64 ([f64; 2], C64F, TBMV);
    fn cublasStbsv_v2 / cublasStbsv_v2_64 (f32, R32F, TBSV);
    fn cublasDtbsv_v2 / cublasDtbsv_v2_64 (f64, R64F, TBSV);
    fn cublasCtbsv_v2 / cublasCtbsv_v2_64 ([f32; 2], C32F, TBSV);
    fn cublasZtbsv_v2 / cublasZtbsv_v2_64 ([f64; 2], C64F, TBSV);
}

macro_rules! tpmv {
    ($(fn $name:ident / $name64:ident ($t:ty, $dt:ident, $kind:ident);)*) => {$(
        both! { fn $name / $name64 (h: Handle, uplo: c_int, trans: c_int, diag: c_int, n: Int, ap: *const $t, x: *mut $t, incx: Int) {
            let s = handle(h)?;
            let b = Band { kind: kind::$kind, hermitian: false, uplo, trans, diag, m: n.into(), n: n.into(), kl: 0, k: 0, lda: 0 };
            banded(&s, dtype::$dt, b, (NONE, NONE), ap.cast(), (x.cast_const().cast(), incx.into()), (std::ptr::null(), 1))
        } }
    )*};
}

tpmv! {
    fn cublasStpmv_v2 / cublasStpmv_v2_64 (f32, R32F, TPMV);
    fn cublasDtpmv_v2 / cublasDtpmv_v2_64 (f64, R64F, TPMV);
    fn cublasCtpmv_v2 / cublasCtpmv_v2_64 ([f32; 2], C32F, TPMV);
    fn cublasZtpmv_v2 / cublasZtpmv_v2_64 ([f64; 2], C64F, TPMV);
    fn cublasStpsv_v2 / cublasStpsv_v2_64 (f32, R32F, TPSV);
    fn cublasDtpsv_v2 / cublasDtpsv_v2_64 (f64, R64F, TPSV);
    fn cublasCtpsv_v2 / cublasCtpsv_v2_64 ([f32; 2], C32F, TPSV);
    fn cublasZtpsv_v2 / cublasZtpsv_v2_64 ([f64; 2], C64F, TPSV);
}

/// Checks and queues a rank update (syr/her, syr2/her2, spr/hpr,
/// spr2/hpr2); `lda` is `None` for the packed forms.
#[allow(clippy::too_many_arguments)]
fn rank(
    s: &HandleState,
    dt: u8,
    (hermitian, uplo, n): (bool, c_int, i64),
    alpha: Scalar,
    (x, incx): (*const std::os::raw::c_void, i64),
    y: Option<(*const std::os::raw::c_void, i64)>,
    a: *const std::os::raw::c_void,
    lda: Option<i64>,
) -> Result<(), c_int> {
    fill_arg(uplo)?;
    nonnegative(&[n])?;
    let size = dtype::size(dt).unwrap_or(1) as usize;
    let a = match lda {
        Some(lda) => matrix(a, n, n, lda, size)?,
        None => packed(a, n, size)?,
    };
    if incx == 0 || y.is_some_and(|(_, inc)| inc == 0) {
        return Err(super::INVALID_VALUE);
    }
    let x = vector(x, n, incx, size)?;
    let yv = match y {
        Some((ptr, inc)) => vector(ptr, n, inc, size)?,
        None => x,
    };
    s.enqueue(&Call::Syr {
        handle: s.id(),
        dtype: dt,
        hermitian,
        two: y.is_some(),
        packed: lda.is_none(),
        uplo,
        n,
        alpha,
        x,
        y: yv,
        a,
    })
}

macro_rules! syr {
    ($(fn $name:ident / $name64:ident ($t:ty, $s:ty, $dt:ident, $hermitian:expr);)*) => {$(
        both! { fn $name / $name64 (h: Handle, uplo: c_int, n: Int, alpha: *const $s, x: *const $t, incx: Int, a: *mut $t, lda: Int) {
            let s = handle(h)?;
            rank(&s, dtype::$dt, ($hermitian, uplo, n.into()), s.scalar(alpha)?, (x.cast(), incx.into()), None, a.cast_const().cast(), Some(lda.into()))
        } }
    )*};
}

syr! {
    fn cublasSsyr_v2 / cublasSsyr_v2_64 (f32, f32, R32F, false);
    fn cublasDsyr_v2 / cublasDsyr_v2_64 (f64, f64, R64F, false);
    fn cublasCsyr_v2 / cublasCsyr_v2_64 ([f32; 2], [f32; 2], C32F, false);
    fn cublasZsyr_v2 / cublasZsyr_v2_64 ([f64; 2], [f64; 2], C64F, false);
    fn cublasCher_v2 / cublasCher_v2_64 ([f32; 2], f32, C32F, true);
    fn cublasZher_v2 / cublasZher_v2_64 ([f64; 2], f64, C64F, true);
}

macro_rules! syr2 {
    ($(fn $name:ident / $name64:ident ($t:ty, $dt:ident, $hermitian:expr);)*) => {$(
        both! { fn $name / $name64 (h: Handle, uplo: c_int, n: Int, alpha: *const $t, x: *const $t, incx: Int, y: *const $t, incy: Int, a: *mut $t, lda: Int) {
            let s = handle(h)?;
            rank(&s, dtype::$dt, ($hermitian, uplo, n.into()), s.scalar(alpha)?, (x.cast(), incx.into()), Some((y.cast(), incy.into())), a.cast_const().cast(), Some(lda.into()))
        } }
    )*};
}

syr2! {
    fn cublasSsyr2_v2 / cublasSsyr2_v2_64 (f32, R32F, false);
    fn cublasDsyr2_v2 / cublasDsyr2_v2_64 (f64, R64F, false);
    fn cublasCsyr2_v2 / cublasCsyr2_v2_64 ([f32; 2], C32F, false);
    fn cublasZsyr2_v2 / cublasZsyr2_v2_64 ([f64; 2], C64F, false);
    fn cublasCher2_v2 / cublasCher2_v2_64 ([f32; 2], C32F, true);
    fn cublasZher2_v2 / cublasZher2_v2_64 ([f64; 2], C64F, true);
}

macro_rules! spr {
    ($(fn $name:ident / $name64:ident ($t:ty, $s:ty, $dt:ident, $hermitian:expr);)*) => {$(
        both! { fn $name / $name64 (h: Handle, uplo: c_int, n: Int, alpha: *const $s, x: *const $t, incx: Int, ap: *mut $t) {
            let s = handle(h)?;
            rank(&s, dtype::$dt, ($hermitian, uplo, n.into()), s.scalar(alpha)?, (x.cast(), incx.into()), None, ap.cast_const().cast(), None)
        } }
    )*};
}

spr! {
    fn cublasSspr_v2 / cublasSspr_v2_64 (f32, f32, R32F, false);
    fn cublasDspr_v2 / cublasDspr_v2_64 (f64, f64, R64F, false);
    fn cublasChpr_v2 / cublasChpr_v2_64 ([f32; 2], f32, C32F, true);
    fn cublasZhpr_v2 / cublasZhpr_v2_64 ([f64; 2], f64, C64F, true);
}

macro_rules! spr2 {
    ($(fn $name:ident / $name64:ident ($t:ty, $dt:ident, $hermitian:expr);)*) => {$(
        both! { fn $name / $name64 (h: Handle, uplo: c_int, n: Int, alpha: *const $t, x: *const $t, incx: Int, y: *const $t, incy: Int, ap: *mut $t) {
            let s = handle(h)?;
            rank(&s, dtype::$dt, ($hermitian, uplo, n.into()), s.scalar(alpha)?, (x.cast(), incx.into()), Some((y.cast(), incy.into())), ap.cast_const().cast(), None)
        } }
    )*};
}

spr2! {
    fn cublasSspr2_v2 / cublasSspr2_v2_64 (f32, R32F, false);
    fn cublasDspr2_v2 / cublasDspr2_v2_64 (f64, R64F, false);
    fn cublasChpr2_v2 / cublasChpr2_v2_64 ([f32; 2], C32F, true);
    fn cublasZhpr2_v2 / cublasZhpr2_v2_64 ([f64; 2], C64F, true);
}
