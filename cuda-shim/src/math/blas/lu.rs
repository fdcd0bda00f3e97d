//! cuBLAS's batched LU routines: `cublas<t>getrfBatched`, `getrsBatched`,
//! `getriBatched` (CuPy's `det`, batched `inv` and `solve`) and
//! `matinvBatched`.
//!
//! Arguments are checked here as cuBLAS checks them; the matrices, named by
//! device arrays of pointers, are read on the server, which checks every
//! pointer against the client's allocations. `getrsBatched` settles its
//! host `info` here: it only reports invalid arguments.

use std::os::raw::{c_int, c_void};

use rcud_proto::math::blas::{dtype, Call, MATINV_MAX};

use super::{handle, op_arg, pointer_array, run, write_host, Handle, INVALID_VALUE};

/// A device range of `count` ints (`NULL` allowed when `optional`).
fn int_array(ptr: *const c_int, count: i64, optional: bool) -> Result<u64, c_int> {
    let address = ptr as u64;
    if address == 0 {
        return if optional { Ok(0) } else { Err(INVALID_VALUE) };
    }
    let bytes = u64::try_from(count)
        .ok()
        .and_then(|c| c.checked_mul(4))
        .ok_or(INVALID_VALUE)?;
    if bytes > 0 && !super::super::is_device_range(address, bytes) {
        return Err(INVALID_VALUE);
    }
    Ok(address)
}

#[allow(clippy::too_many_arguments)]
fn getrf(
    h: Handle,
    dt: u8,
    n: c_int,
    a: *const c_void,
    lda: c_int,
    pivots: *mut c_int,
    info: *mut c_int,
    batch: c_int,
) -> Result<(), c_int> {
    let s = handle(h)?;
    let (n, batch) = (i64::from(n), i64::from(batch));
    if n < 0 || batch < 0 {
        return Err(INVALID_VALUE);
    }
    let a = pointer_array(a, lda.into(), n, batch)?;
    let pivots = int_array(pivots, n * batch, true)?;
    let info = int_array(info, batch, false)?;
    if n == 0 || batch == 0 {
        return Ok(());
    }
    s.enqueue(&Call::GetrfBatched {
        handle: s.id(),
        dtype: dt,
        n,
        a,
        pivots,
        info,
        batch,
    })
}

#[allow(clippy::too_many_arguments)]
fn getrs(
    h: Handle,
    dt: u8,
    trans: c_int,
    n: c_int,
    nrhs: c_int,
    a: *const c_void,
    lda: c_int,
    pivots: *const c_int,
    b: *const c_void,
    ldb: c_int,
    info: *mut c_int,
    batch: c_int,
) -> Result<(), c_int> {
    let s = handle(h)?;
    if info.is_null() {
        return Err(INVALID_VALUE);
    }
    let (n, nrhs, batch) = (i64::from(n), i64::from(nrhs), i64::from(batch));
    // LAPACK's convention: minus the position of the first bad argument.
    let bad = if op_arg(trans).is_err() {
        -1
    } else if n < 0 {
        -2
    } else if nrhs < 0 {
        -3
    } else if i64::from(lda) < n.max(1) {
        -5
    } else if i64::from(ldb) < n.max(1) {
        -8
    } else if batch < 0 {
        -10
    } else {
        0
    };
    write_host(info, bad)?;
    if bad != 0 {
        return Err(INVALID_VALUE);
    }
    let a = pointer_array(a, lda.into(), n, batch)?;
    let b = pointer_array(b, ldb.into(), n, batch)?;
    let pivots = int_array(pivots, n * batch, true)?;
    if n == 0 || nrhs == 0 || batch == 0 {
        return Ok(());
    }
    s.enqueue(&Call::GetrsBatched {
        handle: s.id(),
        dtype: dt,
        trans,
        n,
        nrhs,
        a,
        pivots,
        b,
        batch,
    })
}

#[allow(clippy::too_many_arguments)]
fn getri(
    h: Handle,
    dt: u8,
    n: c_int,
    a: *const c_void,
    lda: c_int,
    pivots: *const c_int,
    c: *const c_void,
    ldc: c_int,
    info: *mut c_int,
    batch: c_int,
) -> Result<(), c_int> {
    let s = handle(h)?;
    let (n, batch) = (i64::from(n), i64::from(batch));
    if n < 0 || batch < 0 {
        return Err(INVALID_VALUE);
    }
    let a = pointer_array(a, lda.into(), n, batch)?;
    let c = pointer_array(c, ldc.into(), n, batch)?;
    let pivots = int_array(pivots, n * batch, true)?;
    let info = int_array(info, batch, false)?;
    if n == 0 || batch == 0 {
        return Ok(());
    }
    s.enqueue(&Call::GetriBatched {
        handle: s.id(),
        dtype: dt,
        n,
        a,
        pivots,
        c,
        info,
        batch,
    })
}

#[no_mangle]
pub extern "C" fn cublasSgetrfBatched(
    h: Handle,
    n: c_int,
    a: *const *mut c_void,
    lda: c_int,
    pivots: *mut c_int,
    info: *mut c_int,
    batch: c_int,
) -> c_int {
    run(|| getrf(h, dtype::R32F, n, a.cast(), lda, pivots, info, batch))
}

#[no_mangle]
#[allow(clippy::too_many_arguments)]
pub extern "C" fn cublasSgetrsBatched(
    h: Handle,
    trans: c_int,
    n: c_int,
    nrhs: c_int,
    a: *const *const c_void,
    lda: c_int,
    pivots: *const c_int,
    b: *const *mut c_void,
    ldb: c_int,
    info: *mut c_int,
    batch: c_int,
) -> c_int {
    run(|| {
        getrs(
            h,
            dtype::R32F,
            trans,
            n,
            nrhs,
            a.cast(),
            lda,
            pivots,
            b.cast(),
            ldb,
            info,
            batch,
        )
    })
}

#[no_mangle]
#[allow(clippy::too_many_arguments)]
pub extern "C" fn cublasSgetriBatched(
    h: Handle,
    n: c_int,
    a: *const *const c_void,
    lda: c_int,
    pivots: *const c_int,
    c: *const *mut c_void,
    ldc: c_int,
    info: *mut c_int,
    batch: c_int,
) -> c_int {
    run(|| {
        getri(
            h,
            dtype::R32F,
            n,
            a.cast(),
            lda,
            pivots,
            c.cast(),
            ldc,
            info,
            batch,
        )
    })
}

#[no_mangle]
pub extern "C" fn cublasDgetrfBatched(
    h: Handle,
    n: c_int,
    a: *const *mut c_void,
    lda: c_int,
    pivots: *mut c_int,
    info: *mut c_int,
    batch: c_int,
) -> c_int {
    run(|| getrf(h, dtype::R64F, n, a.cast(), lda, pivots, info, batch))
}

#[no_mangle]
#[allow(clippy::too_many_arguments)]
pub extern "C" fn cublasDgetrsBatched(
    h: Handle,
    trans: c_int,
    n: c_int,
    nrhs: c_int,
    a: *const *const c_void,
    lda: c_int,
    pivots: *const c_int,
    b: *const *mut c_void,
    ldb: c_int,
    info: *mut c_int,
    batch: c_int,
) -> c_int {
    run(|| {
        getrs(
            h,
            dtype::R64F,
            trans,
            n,
            nrhs,
            a.cast(),
            lda,
            pivots,
            b.cast(),
            ldb,
            info,
            batch,
        )
    })
}

#[no_mangle]
#[allow(clippy::too_many_arguments)]
pub extern "C" fn cublasDgetriBatched(
    h: Handle,
    n: c_int,
    a: *const *const c_void,
    lda: c_int,
    pivots: *const c_int,
    c: *const *mut c_void,
    ldc: c_int,
    info: *mut c_int,
    batch: c_int,
) -> c_int {
    run(|| {
        getri(
            h,
            dtype::R64F,
            n,
            a.cast(),
            lda,
            pivots,
            c.cast(),
            ldc,
            info,
            batch,
        )
    })
}

#[no_mangle]
pub extern "C" fn cublasCgetrfBatched(
    h: Handle,
    n: c_int,
    a: *const *mut c_void,
    lda: c_int,
    pivots: *mut c_int,
    info: *mut c_int,
    batch: c_int,
) -> c_int {
    run(|| getrf(h, dtype::C32F, n, a.cast(), lda, pivots, info, batch))
}

#[no_mangle]
#[allow(clippy::too_many_arguments)]
pub extern "C" fn cublasCgetrsBatched(
    h: Handle,
    trans: c_int,
    n: c_int,
    nrhs: c_int,
    a: *const *const c_void,
    lda: c_int,
    pivots: *const c_int,
    b: *const *mut c_void,
    ldb: c_int,
    info: *mut c_int,
    batch: c_int,
) -> c_int {
    run(|| {
        getrs(
            h,
            dtype::C32F,
            trans,
            n,
            nrhs,
            a.cast(),
            lda,
            pivots,
            b.cast(),
            ldb,
            info,
            batch,
        )
    })
}

#[no_mangle]
#[allow(clippy::too_many_arguments)]
pub extern "C" fn cublasCgetriBatched(
    h: Handle,
    n: c_int,
    a: *const *const c_void,
    lda: c_int,
    pivots: *const c_int,
    c: *const *mut c_void,
    ldc: c_int,
    info: *mut c_int,
    batch: c_int,
) -> c_int {
    run(|| {
        getri(
            h,
            dtype::C32F,
            n,
            a.cast(),
            lda,
            pivots,
            c.cast(),
            ldc,
            info,
            batch,
        )
    })
}

#[no_mangle]
pub extern "C" fn cublasZgetrfBatched(
    h: Handle,
    n: c_int,
    a: *const *mut c_void,
    lda: c_int,
    pivots: *mut c_int,
    info: *mut c_int,
    batch: c_int,
) -> c_int {
    run(|| getrf(h, dtype::C64F, n, a.cast(), lda, pivots, info, batch))
}

#[no_mangle]
#[allow(clippy::too_many_arguments)]
pub extern "C" fn cublasZgetrsBatched(
    h: Handle,
    trans: c_int,
    n: c_int,
    nrhs: c_int,
    a: *const *const c_void,
    lda: c_int,
    pivots: *const c_int,
    b: *const *mut c_void,
    ldb: c_int,
    info: *mut c_int,
    batch: c_int,
) -> c_int {
    run(|| {
        getrs(
            h,
            dtype::C64F,
            trans,
            n,
            nrhs,
            a.cast(),
            lda,
            pivots,
            b.cast(),
            ldb,
            info,
            batch,
        )
    })
}

#[no_mangle]
#[allow(clippy::too_many_arguments)]
pub extern "C" fn cublasZgetriBatched(
    h: Handle,
    n: c_int,
    a: *const *const c_void,
    lda: c_int,
    pivots: *const c_int,
    c: *const *mut c_void,
    ldc: c_int,
    info: *mut c_int,
    batch: c_int,
) -> c_int {
    run(|| {
        getri(
            h,
            dtype::C64F,
            n,
            a.cast(),
            lda,
            pivots,
            c.cast(),
            ldc,
            info,
            batch,
        )
    })
}

/// `matinvBatched`: n ≤ 32 ([`MATINV_MAX`]), as cuBLAS requires.
#[allow(clippy::too_many_arguments)]
fn matinv(
    h: Handle,
    dt: u8,
    n: c_int,
    a: *const c_void,
    lda: c_int,
    c: *const c_void,
    ldc: c_int,
    info: *mut c_int,
    batch: c_int,
) -> Result<(), c_int> {
    let s = handle(h)?;
    let (n, batch) = (i64::from(n), i64::from(batch));
    if !(0..=MATINV_MAX).contains(&n) || batch < 0 {
        return Err(INVALID_VALUE);
    }
    let a = pointer_array(a, lda.into(), n, batch)?;
    let c = pointer_array(c, ldc.into(), n, batch)?;
    let info = int_array(info, batch, false)?;
    if n == 0 || batch == 0 {
        return Ok(());
    }
    s.enqueue(&Call::MatinvBatched {
        handle: s.id(),
        dtype: dt,
        n,
        a,
        c,
        info,
        batch,
    })
}

/// `cublas<t>matinvBatched(handle, n, A[], lda, Ainv[], lda_inv, info,
/// batchSize)`, two element types per line.
macro_rules! matinv_exports {
    ($(fn $first:ident / $second:ident ($dt1:expr, $dt2:expr);)*) => {$(
        #[no_mangle]
        #[allow(clippy::too_many_arguments)]
        pub extern "C" fn $first(
            h: Handle,
            n: c_int,
            a: *const *const c_void,
            lda: c_int,
            c: *const *mut c_void,
            ldc: c_int,
            info: *mut c_int,
            batch: c_int,
        ) -> c_int {
            run(|| matinv(h, $dt1, n, a.cast(), lda, c.cast(), ldc, info, batch))
        }

        #[no_mangle]
        #[allow(clippy::too_many_arguments)]
        pub extern "C" fn $second(
            h: Handle,
            n: c_int,
            a: *const *const c_void,
            lda: c_int,
            c: *const *mut c_void,
            ldc: c_int,
            info: *mut c_int,
            batch: c_int,
        ) -> c_int {
            run(|| matinv(h, $dt2, n, a.cast(), lda, c.cast(), ldc, info, batch))
        }
    )*};
}

matinv_exports! {
    fn cublasSmatinvBatched / cublasDmatinvBatched (dtype::R32F, dtype::R64F);
    fn cublasCmatinvBatched / cublasZmatinvBatched (dtype::C32F, dtype::C64F);
}
