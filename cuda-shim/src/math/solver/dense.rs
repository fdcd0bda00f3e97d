//! The exported `cusolverDn*` functions: handles, and the dense
//! factorizations and solves of every element type (S, D, C, Z), each a thin
//! wrapper over [`super::submit`] / [`super::buffer_size`].

// C names, exported (unreachable from Rust, reachable from C).
#![allow(non_snake_case, unreachable_pub)]

use std::os::raw::{c_int, c_schar, c_void};

use rcud_proto::math::solver::Call;

use super::{
    answer, buffer_size, lwork, submit, Handle, Workspace, INTERNAL_ERROR, INVALID_VALUE,
    NOT_INITIALIZED,
};
use crate::ffi::write_out;
use crate::math::guard;

/// A device pointer the application passed.
type Dev = *mut c_void;

fn addr<T>(ptr: *const T) -> u64 {
    ptr as u64
}

#[no_mangle]
pub extern "C" fn cusolverDnCreate(handle: *mut Handle) -> c_int {
    guard(INTERNAL_ERROR, || {
        if handle.is_null() {
            return INVALID_VALUE;
        }
        match super::create() {
            Ok(id) => match write_out(handle, id as Handle) {
                Ok(()) => super::SUCCESS,
                Err(_) => INVALID_VALUE,
            },
            Err(status) => status,
        }
    })
}

#[no_mangle]
pub extern "C" fn cusolverDnDestroy(handle: Handle) -> c_int {
    guard(INTERNAL_ERROR, || super::destroy(handle))
}

#[no_mangle]
pub extern "C" fn cusolverDnSetStream(handle: Handle, stream: *mut c_void) -> c_int {
    guard(INTERNAL_ERROR, || super::set_stream(handle, stream as u64))
}

#[no_mangle]
pub extern "C" fn cusolverDnGetStream(handle: Handle, stream: *mut *mut c_void) -> c_int {
    guard(INTERNAL_ERROR, || match super::handle_stream(handle) {
        Some(s) => match write_out(stream, s as *mut c_void) {
            Ok(()) => super::SUCCESS,
            Err(_) => INVALID_VALUE,
        },
        None => NOT_INITIALIZED,
    })
}

// ---- S: float ----

#[no_mangle]
pub extern "C" fn cusolverDnSgetrf_bufferSize(
    handle: Handle,
    m: c_int,
    n: c_int,
    a: Dev,
    lda: c_int,
    lwork: *mut c_int,
) -> c_int {
    guard(INTERNAL_ERROR, || {
        let probe = |handle| Call::Getrf {
            handle,
            dtype: 0,
            m,
            n,
            a: addr(a),
            lda,
            ipiv: 0,
            info: 0,
        };
        answer(lwork, buffer_size(handle, probe, lwork::getrf(m, n)))
    })
}

#[no_mangle]
pub extern "C" fn cusolverDnSgetrf(
    handle: Handle,
    m: c_int,
    n: c_int,
    a: Dev,
    lda: c_int,
    workspace: Dev,
    ipiv: *mut c_int,
    info: *mut c_int,
) -> c_int {
    guard(INTERNAL_ERROR, || {
        let needed = lwork::getrf(m, n);
        let ws = Workspace {
            ptr: addr(workspace),
            lwork: needed,
            needed,
            dtype: 0,
        };
        submit(handle, Some(ws), |handle| Call::Getrf {
            handle,
            dtype: 0,
            m,
            n,
            a: addr(a),
            lda,
            ipiv: addr(ipiv),
            info: addr(info),
        })
    })
}

#[no_mangle]
pub extern "C" fn cusolverDnSgetrs(
    handle: Handle,
    trans: c_int,
    n: c_int,
    nrhs: c_int,
    a: Dev,
    lda: c_int,
    ipiv: *const c_int,
    b: Dev,
    ldb: c_int,
    info: *mut c_int,
) -> c_int {
    guard(INTERNAL_ERROR, || {
        submit(handle, None, |handle| Call::Getrs {
            handle,
            dtype: 0,
            trans,
            n,
            nrhs,
            a: addr(a),
            lda,
            ipiv: addr(ipiv),
            b: addr(b),
            ldb,
            info: addr(info),
        })
    })
}

#[no_mangle]
pub extern "C" fn cusolverDnSpotrf_bufferSize(
    handle: Handle,
    uplo: c_int,
    n: c_int,
    a: Dev,
    lda: c_int,
    lwork: *mut c_int,
) -> c_int {
    guard(INTERNAL_ERROR, || {
        let probe = |handle| Call::Potrf {
            handle,
            dtype: 0,
            uplo,
            n,
            a: addr(a),
            lda,
            info: 0,
        };
        answer(lwork, buffer_size(handle, probe, lwork::potrf(n)))
    })
}

#[no_mangle]
pub extern "C" fn cusolverDnSpotrf(
    handle: Handle,
    uplo: c_int,
    n: c_int,
    a: Dev,
    lda: c_int,
    workspace: Dev,
    lwork: c_int,
    info: *mut c_int,
) -> c_int {
    guard(INTERNAL_ERROR, || {
        let ws = Workspace {
            ptr: addr(workspace),
            lwork: i64::from(lwork),
            needed: lwork::potrf(n),
            dtype: 0,
        };
        submit(handle, Some(ws), |handle| Call::Potrf {
            handle,
            dtype: 0,
            uplo,
            n,
            a: addr(a),
            lda,
            info: addr(info),
        })
    })
}

#[no_mangle]
pub extern "C" fn cusolverDnSpotrs(
    handle: Handle,
    uplo: c_int,
    n: c_int,
    nrhs: c_int,
    a: Dev,
    lda: c_int,
    b: Dev,
    ldb: c_int,
    info: *mut c_int,
) -> c_int {
    guard(INTERNAL_ERROR, || {
        submit(handle, None, |handle| Call::Potrs {
            handle,
            dtype: 0,
            uplo,
            n,
            nrhs,
            a: addr(a),
            lda,
            b: addr(b),
            ldb,
            info: addr(info),
        })
    })
}

#[no_mangle]
pub extern "C" fn cusolverDnSgeqrf_bufferSize(
    handle: Handle,
    m: c_int,
    n: c_int,
    a: Dev,
    lda: c_int,
    lwork: *mut c_int,
) -> c_int {
    guard(INTERNAL_ERROR, || {
        let probe = |handle| Call::Geqrf {
            handle,
            dtype: 0,
            m,
            n,
            a: addr(a),
            lda,
            tau: 0,
            info: 0,
        };
        answer(lwork, buffer_size(handle, probe, lwork::geqrf(m, n)))
    })
}

#[no_mangle]
pub extern "C" fn cusolverDnSgeqrf(
    handle: Handle,
    m: c_int,
    n: c_int,
    a: Dev,
    lda: c_int,
    tau: Dev,
    workspace: Dev,
    lwork: c_int,
    info: *mut c_int,
) -> c_int {
    guard(INTERNAL_ERROR, || {
        let ws = Workspace {
            ptr: addr(workspace),
            lwork: i64::from(lwork),
            needed: lwork::geqrf(m, n),
            dtype: 0,
        };
        submit(handle, Some(ws), |handle| Call::Geqrf {
            handle,
            dtype: 0,
            m,
            n,
            a: addr(a),
            lda,
            tau: addr(tau),
            info: addr(info),
        })
    })
}

#[no_mangle]
pub extern "C" fn cusolverDnSormqr_bufferSize(
    handle: Handle,
    side: c_int,
    trans: c_int,
    m: c_int,
    n: c_int,
    k: c_int,
    a: Dev,
    lda: c_int,
    tau: Dev,
    c: Dev,
    ldc: c_int,
    lwork: *mut c_int,
) -> c_int {
    guard(INTERNAL_ERROR, || {
        let probe = |handle| Call::Ormqr {
            handle,
            dtype: 0,
            side,
            trans,
            m,
            n,
            k,
            a: addr(a),
            lda,
            tau: addr(tau),
            c: addr(c),
            ldc,
            info: 0,
        };
        answer(lwork, buffer_size(handle, probe, lwork::ormqr(m, n)))
    })
}

#[no_mangle]
pub extern "C" fn cusolverDnSormqr(
    handle: Handle,
    side: c_int,
    trans: c_int,
    m: c_int,
    n: c_int,
    k: c_int,
    a: Dev,
    lda: c_int,
    tau: Dev,
    c: Dev,
    ldc: c_int,
    work: Dev,
    lwork: c_int,
    info: *mut c_int,
) -> c_int {
    guard(INTERNAL_ERROR, || {
        let ws = Workspace {
            ptr: addr(work),
            lwork: i64::from(lwork),
            needed: lwork::ormqr(m, n),
            dtype: 0,
        };
        submit(handle, Some(ws), |handle| Call::Ormqr {
            handle,
            dtype: 0,
            side,
            trans,
            m,
            n,
            k,
            a: addr(a),
            lda,
            tau: addr(tau),
            c: addr(c),
            ldc,
            info: addr(info),
        })
    })
}

#[no_mangle]
pub extern "C" fn cusolverDnSsyevd_bufferSize(
    handle: Handle,
    jobz: c_int,
    uplo: c_int,
    n: c_int,
    a: Dev,
    lda: c_int,
    w: Dev,
    lwork: *mut c_int,
) -> c_int {
    guard(INTERNAL_ERROR, || {
        let probe = |handle| Call::Syevd {
            handle,
            dtype: 0,
            jobz,
            uplo,
            n,
            a: addr(a),
            lda,
            w: addr(w),
            info: 0,
        };
        answer(lwork, buffer_size(handle, probe, lwork::syevd(n)))
    })
}

#[no_mangle]
pub extern "C" fn cusolverDnSsyevd(
    handle: Handle,
    jobz: c_int,
    uplo: c_int,
    n: c_int,
    a: Dev,
    lda: c_int,
    w: Dev,
    work: Dev,
    lwork: c_int,
    info: *mut c_int,
) -> c_int {
    guard(INTERNAL_ERROR, || {
        let ws = Workspace {
            ptr: addr(work),
            lwork: i64::from(lwork),
            needed: lwork::syevd(n),
            dtype: 0,
        };
        submit(handle, Some(ws), |handle| Call::Syevd {
            handle,
            dtype: 0,
            jobz,
            uplo,
            n,
            a: addr(a),
            lda,
            w: addr(w),
            info: addr(info),
        })
    })
}

#[no_mangle]
pub extern "C" fn cusolverDnSgesvd_bufferSize(
    handle: Handle,
    m: c_int,
    n: c_int,
    lwork: *mut c_int,
) -> c_int {
    guard(INTERNAL_ERROR, || {
        let probe = |handle| Call::Gesvd {
            handle,
            dtype: 0,
            jobu: b'N',
            jobvt: b'N',
            m,
            n,
            a: 0,
            lda: m.max(1),
            s: 0,
            u: 0,
            ldu: 1,
            vt: 0,
            ldvt: 1,
            info: 0,
        };
        answer(lwork, buffer_size(handle, probe, lwork::gesvd(m, n)))
    })
}

#[no_mangle]
pub extern "C" fn cusolverDnSgesvd(
    handle: Handle,
    jobu: c_schar,
    jobvt: c_schar,
    m: c_int,
    n: c_int,
    a: Dev,
    lda: c_int,
    s: Dev,
    u: Dev,
    ldu: c_int,
    vt: Dev,
    ldvt: c_int,
    work: Dev,
    lwork: c_int,
    _rwork: Dev,
    info: *mut c_int,
) -> c_int {
    guard(INTERNAL_ERROR, || {
        let ws = Workspace {
            ptr: addr(work),
            lwork: i64::from(lwork),
            needed: lwork::gesvd(m, n),
            dtype: 0,
        };
        submit(handle, Some(ws), |handle| Call::Gesvd {
            handle,
            dtype: 0,
            jobu: jobu as u8,
            jobvt: jobvt as u8,
            m,
            n,
            a: addr(a),
            lda,
            s: addr(s),
            u: addr(u),
            ldu,
            vt: addr(vt),
            ldvt,
            info: addr(info),
        })
    })
}

// ---- D: double ----

#[no_mangle]
pub extern "C" fn cusolverDnDgetrf_bufferSize(
    handle: Handle,
    m: c_int,
    n: c_int,
    a: Dev,
    lda: c_int,
    lwork: *mut c_int,
) -> c_int {
    guard(INTERNAL_ERROR, || {
        let probe = |handle| Call::Getrf {
            handle,
            dtype: 1,
            m,
            n,
            a: addr(a),
            lda,
            ipiv: 0,
            info: 0,
        };
        answer(lwork, buffer_size(handle, probe, lwork::getrf(m, n)))
    })
}

#[no_mangle]
pub extern "C" fn cusolverDnDgetrf(
    handle: Handle,
    m: c_int,
    n: c_int,
    a: Dev,
    lda: c_int,
    workspace: Dev,
    ipiv: *mut c_int,
    info: *mut c_int,
) -> c_int {
    guard(INTERNAL_ERROR, || {
        let needed = lwork::getrf(m, n);
        let ws = Workspace {
            ptr: addr(workspace),
            lwork: needed,
            needed,
            dtype: 1,
        };
        submit(handle, Some(ws), |handle| Call::Getrf {
            handle,
            dtype: 1,
            m,
            n,
            a: addr(a),
            lda,
            ipiv: addr(ipiv),
            info: addr(info),
        })
    })
}

#[no_mangle]
pub extern "C" fn cusolverDnDgetrs(
    handle: Handle,
    trans: c_int,
    n: c_int,
    nrhs: c_int,
    a: Dev,
    lda: c_int,
    ipiv: *const c_int,
    b: Dev,
    ldb: c_int,
    info: *mut c_int,
) -> c_int {
    guard(INTERNAL_ERROR, || {
        submit(handle, None, |handle| Call::Getrs {
            handle,
            dtype: 1,
            trans,
            n,
            nrhs,
            a: addr(a),
            lda,
            ipiv: addr(ipiv),
            b: addr(b),
            ldb,
            info: addr(info),
        })
    })
}

#[no_mangle]
pub extern "C" fn cusolverDnDpotrf_bufferSize(
    handle: Handle,
    uplo: c_int,
    n: c_int,
    a: Dev,
    lda: c_int,
    lwork: *mut c_int,
) -> c_int {
    guard(INTERNAL_ERROR, || {
        let probe = |handle| Call::Potrf {
            handle,
            dtype: 1,
            uplo,
            n,
            a: addr(a),
            lda,
            info: 0,
        };
        answer(lwork, buffer_size(handle, probe, lwork::potrf(n)))
    })
}

#[no_mangle]
pub extern "C" fn cusolverDnDpotrf(
    handle: Handle,
    uplo: c_int,
    n: c_int,
    a: Dev,
    lda: c_int,
    workspace: Dev,
    lwork: c_int,
    info: *mut c_int,
) -> c_int {
    guard(INTERNAL_ERROR, || {
        let ws = Workspace {
            ptr: addr(workspace),
            lwork: i64::from(lwork),
            needed: lwork::potrf(n),
            dtype: 1,
        };
        submit(handle, Some(ws), |handle| Call::Potrf {
            handle,
            dtype: 1,
            uplo,
            n,
            a: addr(a),
            lda,
            info: addr(info),
        })
    })
}

#[no_mangle]
pub extern "C" fn cusolverDnDpotrs(
    handle: Handle,
    uplo: c_int,
    n: c_int,
    nrhs: c_int,
    a: Dev,
    lda: c_int,
    b: Dev,
    ldb: c_int,
    info: *mut c_int,
) -> c_int {
    guard(INTERNAL_ERROR, || {
        submit(handle, None, |handle| Call::Potrs {
            handle,
            dtype: 1,
            uplo,
            n,
            nrhs,
            a: addr(a),
            lda,
            b: addr(b),
            ldb,
            info: addr(info),
        })
    })
}

#[no_mangle]
pub extern "C" fn cusolverDnDgeqrf_bufferSize(
    handle: Handle,
    m: c_int,
    n: c_int,
    a: Dev,
    lda: c_int,
    lwork: *mut c_int,
) -> c_int {
    guard(INTERNAL_ERROR, || {
        let probe = |handle| Call::Geqrf {
            handle,
            dtype: 1,
            m,
            n,
            a: addr(a),
            lda,
            tau: 0,
            info: 0,
        };
        answer(lwork, buffer_size(handle, probe, lwork::geqrf(m, n)))
    })
}

#[no_mangle]
pub extern "C" fn cusolverDnDgeqrf(
    handle: Handle,
    m: c_int,
    n: c_int,
    a: Dev,
    lda: c_int,
    tau: Dev,
    workspace: Dev,
    lwork: c_int,
    info: *mut c_int,
) -> c_int {
    guard(INTERNAL_ERROR, || {
        let ws = Workspace {
            ptr: addr(workspace),
            lwork: i64::from(lwork),
            needed: lwork::geqrf(m, n),
            dtype: 1,
        };
        submit(handle, Some(ws), |handle| Call::Geqrf {
            handle,
            dtype: 1,
            m,
            n,
            a: addr(a),
            lda,
            tau: addr(tau),
            info: addr(info),
        })
    })
}

#[no_mangle]
pub extern "C" fn cusolverDnDormqr_bufferSize(
    handle: Handle,
    side: c_int,
    trans: c_int,
    m: c_int,
    n: c_int,
    k: c_int,
    a: Dev,
    lda: c_int,
    tau: Dev,
    c: Dev,
    ldc: c_int,
    lwork: *mut c_int,
) -> c_int {
    guard(INTERNAL_ERROR, || {
        let probe = |handle| Call::Ormqr {
            handle,
            dtype: 1,
            side,
            trans,
            m,
            n,
            k,
            a: addr(a),
            lda,
            tau: addr(tau),
            c: addr(c),
            ldc,
            info: 0,
        };
        answer(lwork, buffer_size(handle, probe, lwork::ormqr(m, n)))
    })
}

#[no_mangle]
pub extern "C" fn cusolverDnDormqr(
    handle: Handle,
    side: c_int,
    trans: c_int,
    m: c_int,
    n: c_int,
    k: c_int,
    a: Dev,
    lda: c_int,
    tau: Dev,
    c: Dev,
    ldc: c_int,
    work: Dev,
    lwork: c_int,
    info: *mut c_int,
) -> c_int {
    guard(INTERNAL_ERROR, || {
        let ws = Workspace {
            ptr: addr(work),
            lwork: i64::from(lwork),
            needed: lwork::ormqr(m, n),
            dtype: 1,
        };
        submit(handle, Some(ws), |handle| Call::Ormqr {
            handle,
            dtype: 1,
            side,
            trans,
            m,
            n,
            k,
            a: addr(a),
            lda,
            tau: addr(tau),
            c: addr(c),
            ldc,
            info: addr(info),
        })
    })
}

#[no_mangle]
pub extern "C" fn cusolverDnDsyevd_bufferSize(
    handle: Handle,
    jobz: c_int,
    uplo: c_int,
    n: c_int,
    a: Dev,
    lda: c_int,
    w: Dev,
    lwork: *mut c_int,
) -> c_int {
    guard(INTERNAL_ERROR, || {
        let probe = |handle| Call::Syevd {
            handle,
            dtype: 1,
            jobz,
            uplo,
            n,
            a: addr(a),
            lda,
            w: addr(w),
            info: 0,
        };
        answer(lwork, buffer_size(handle, probe, lwork::syevd(n)))
    })
}

#[no_mangle]
pub extern "C" fn cusolverDnDsyevd(
    handle: Handle,
    jobz: c_int,
    uplo: c_int,
    n: c_int,
    a: Dev,
    lda: c_int,
    w: Dev,
    work: Dev,
    lwork: c_int,
    info: *mut c_int,
) -> c_int {
    guard(INTERNAL_ERROR, || {
        let ws = Workspace {
            ptr: addr(work),
            lwork: i64::from(lwork),
            needed: lwork::syevd(n),
            dtype: 1,
        };
        submit(handle, Some(ws), |handle| Call::Syevd {
            handle,
            dtype: 1,
            jobz,
            uplo,
            n,
            a: addr(a),
            lda,
            w: addr(w),
            info: addr(info),
        })
    })
}

#[no_mangle]
pub extern "C" fn cusolverDnDgesvd_bufferSize(
    handle: Handle,
    m: c_int,
    n: c_int,
    lwork: *mut c_int,
) -> c_int {
    guard(INTERNAL_ERROR, || {
        let probe = |handle| Call::Gesvd {
            handle,
            dtype: 1,
            jobu: b'N',
            jobvt: b'N',
            m,
            n,
            a: 0,
            lda: m.max(1),
            s: 0,
            u: 0,
            ldu: 1,
            vt: 0,
            ldvt: 1,
            info: 0,
        };
        answer(lwork, buffer_size(handle, probe, lwork::gesvd(m, n)))
    })
}

#[no_mangle]
pub extern "C" fn cusolverDnDgesvd(
    handle: Handle,
    jobu: c_schar,
    jobvt: c_schar,
    m: c_int,
    n: c_int,
    a: Dev,
    lda: c_int,
    s: Dev,
    u: Dev,
    ldu: c_int,
    vt: Dev,
    ldvt: c_int,
    work: Dev,
    lwork: c_int,
    _rwork: Dev,
    info: *mut c_int,
) -> c_int {
    guard(INTERNAL_ERROR, || {
        let ws = Workspace {
            ptr: addr(work),
            lwork: i64::from(lwork),
            needed: lwork::gesvd(m, n),
            dtype: 1,
        };
        submit(handle, Some(ws), |handle| Call::Gesvd {
            handle,
            dtype: 1,
            jobu: jobu as u8,
            jobvt: jobvt as u8,
            m,
            n,
            a: addr(a),
            lda,
            s: addr(s),
            u: addr(u),
            ldu,
            vt: addr(vt),
            ldvt,
            info: addr(info),
        })
    })
}

// ---- C: cuComplex ----

#[no_mangle]
pub extern "C" fn cusolverDnCgetrf_bufferSize(
    handle: Handle,
    m: c_int,
    n: c_int,
    a: Dev,
    lda: c_int,
    lwork: *mut c_int,
) -> c_int {
    guard(INTERNAL_ERROR, || {
        let probe = |handle| Call::Getrf {
            handle,
            dtype: 2,
            m,
            n,
            a: addr(a),
            lda,
            ipiv: 0,
            info: 0,
        };
        answer(lwork, buffer_size(handle, probe, lwork::getrf(m, n)))
    })
}

#[no_mangle]
pub extern "C" fn cusolverDnCgetrf(
    handle: Handle,
    m: c_int,
    n: c_int,
    a: Dev,
    lda: c_int,
    workspace: Dev,
    ipiv: *mut c_int,
    info: *mut c_int,
) -> c_int {
    guard(INTERNAL_ERROR, || {
        let needed = lwork::getrf(m, n);
        let ws = Workspace {
            ptr: addr(workspace),
            lwork: needed,
            needed,
            dtype: 2,
        };
        submit(handle, Some(ws), |handle| Call::Getrf {
            handle,
            dtype: 2,
            m,
            n,
            a: addr(a),
            lda,
            ipiv: addr(ipiv),
            info: addr(info),
        })
    })
}

#[no_mangle]
pub extern "C" fn cusolverDnCgetrs(
    handle: Handle,
    trans: c_int,
    n: c_int,
    nrhs: c_int,
    a: Dev,
    lda: c_int,
    ipiv: *const c_int,
    b: Dev,
    ldb: c_int,
    info: *mut c_int,
) -> c_int {
    guard(INTERNAL_ERROR, || {
        submit(handle, None, |handle| Call::Getrs {
            handle,
            dtype: 2,
            trans,
            n,
            nrhs,
            a: addr(a),
            lda,
            ipiv: addr(ipiv),
            b: addr(b),
            ldb,
            info: addr(info),
        })
    })
}

#[no_mangle]
pub extern "C" fn cusolverDnCpotrf_bufferSize(
    handle: Handle,
    uplo: c_int,
    n: c_int,
    a: Dev,
    lda: c_int,
    lwork: *mut c_int,
) -> c_int {
    guard(INTERNAL_ERROR, || {
        let probe = |handle| Call::Potrf {
            handle,
            dtype: 2,
            uplo,
            n,
            a: addr(a),
            lda,
            info: 0,
        };
        answer(lwork, buffer_size(handle, probe, lwork::potrf(n)))
    })
}

#[no_mangle]
pub extern "C" fn cusolverDnCpotrf(
    handle: Handle,
    uplo: c_int,
    n: c_int,
    a: Dev,
    lda: c_int,
    workspace: Dev,
    lwork: c_int,
    info: *mut c_int,
) -> c_int {
    guard(INTERNAL_ERROR, || {
        let ws = Workspace {
            ptr: addr(workspace),
            lwork: i64::from(lwork),
            needed: lwork::potrf(n),
            dtype: 2,
        };
        submit(handle, Some(ws), |handle| Call::Potrf {
            handle,
            dtype: 2,
            uplo,
            n,
            a: addr(a),
            lda,
            info: addr(info),
        })
    })
}

#[no_mangle]
pub extern "C" fn cusolverDnCpotrs(
    handle: Handle,
    uplo: c_int,
    n: c_int,
    nrhs: c_int,
    a: Dev,
    lda: c_int,
    b: Dev,
    ldb: c_int,
    info: *mut c_int,
) -> c_int {
    guard(INTERNAL_ERROR, || {
        submit(handle, None, |handle| Call::Potrs {
            handle,
            dtype: 2,
            uplo,
            n,
            nrhs,
            a: addr(a),
            lda,
            b: addr(b),
            ldb,
            info: addr(info),
        })
    })
}

#[no_mangle]
pub extern "C" fn cusolverDnCgeqrf_bufferSize(
    handle: Handle,
    m: c_int,
    n: c_int,
    a: Dev,
    lda: c_int,
    lwork: *mut c_int,
) -> c_int {
    guard(INTERNAL_ERROR, || {
        let probe = |handle| Call::Geqrf {
            handle,
            dtype: 2,
            m,
            n,
            a: addr(a),
            lda,
            tau: 0,
            info: 0,
        };
        answer(lwork, buffer_size(handle, probe, lwork::geqrf(m, n)))
    })
}

#[no_mangle]
pub extern "C" fn cusolverDnCgeqrf(
    handle: Handle,
    m: c_int,
    n: c_int,
    a: Dev,
    lda: c_int,
    tau: Dev,
    workspace: Dev,
    lwork: c_int,
    info: *mut c_int,
) -> c_int {
    guard(INTERNAL_ERROR, || {
        let ws = Workspace {
            ptr: addr(workspace),
            lwork: i64::from(lwork),
            needed: lwork::geqrf(m, n),
            dtype: 2,
        };
        submit(handle, Some(ws), |handle| Call::Geqrf {
            handle,
            dtype: 2,
            m,
            n,
            a: addr(a),
            lda,
            tau: addr(tau),
            info: addr(info),
        })
    })
}

#[no_mangle]
pub extern "C" fn cusolverDnCunmqr_bufferSize(
    handle: Handle,
    side: c_int,
    trans: c_int,
    m: c_int,
    n: c_int,
    k: c_int,
    a: Dev,
    lda: c_int,
    tau: Dev,
    c: Dev,
    ldc: c_int,
    lwork: *mut c_int,
) -> c_int {
    guard(INTERNAL_ERROR, || {
        let probe = |handle| Call::Ormqr {
            handle,
            dtype: 2,
            side,
            trans,
            m,
            n,
            k,
            a: addr(a),
            lda,
            tau: addr(tau),
            c: addr(c),
            ldc,
            info: 0,
        };
        answer(lwork, buffer_size(handle, probe, lwork::ormqr(m, n)))
    })
}

#[no_mangle]
pub extern "C" fn cusolverDnCunmqr(
    handle: Handle,
    side: c_int,
    trans: c_int,
    m: c_int,
    n: c_int,
    k: c_int,
    a: Dev,
    lda: c_int,
    tau: Dev,
    c: Dev,
    ldc: c_int,
    work: Dev,
    lwork: c_int,
    info: *mut c_int,
) -> c_int {
    guard(INTERNAL_ERROR, || {
        let ws = Workspace {
            ptr: addr(work),
            lwork: i64::from(lwork),
            needed: lwork::ormqr(m, n),
            dtype: 2,
        };
        submit(handle, Some(ws), |handle| Call::Ormqr {
            handle,
            dtype: 2,
            side,
            trans,
            m,
            n,
            k,
            a: addr(a),
            lda,
            tau: addr(tau),
            c: addr(c),
            ldc,
            info: addr(info),
        })
    })
}

#[no_mangle]
pub extern "C" fn cusolverDnCheevd_bufferSize(
    handle: Handle,
    jobz: c_int,
    uplo: c_int,
    n: c_int,
    a: Dev,
    lda: c_int,
    w: Dev,
    lwork: *mut c_int,
) -> c_int {
    guard(INTERNAL_ERROR, || {
        let probe = |handle| Call::Syevd {
            handle,
            dtype: 2,
            jobz,
            uplo,
            n,
            a: addr(a),
            lda,
            w: addr(w),
            info: 0,
        };
        answer(lwork, buffer_size(handle, probe, lwork::syevd(n)))
    })
}

#[no_mangle]
pub extern "C" fn cusolverDnCheevd(
    handle: Handle,
    jobz: c_int,
    uplo: c_int,
    n: c_int,
    a: Dev,
    lda: c_int,
    w: Dev,
    work: Dev,
    lwork: c_int,
    info: *mut c_int,
) -> c_int {
    guard(INTERNAL_ERROR, || {
        let ws = Workspace {
            ptr: addr(work),
            lwork: i64::from(lwork),
            needed: lwork::syevd(n),
            dtype: 2,
        };
        submit(handle, Some(ws), |handle| Call::Syevd {
            handle,
            dtype: 2,
            jobz,
            uplo,
            n,
            a: addr(a),
            lda,
            w: addr(w),
            info: addr(info),
        })
    })
}

#[no_mangle]
pub extern "C" fn cusolverDnCgesvd_bufferSize(
    handle: Handle,
    m: c_int,
    n: c_int,
    lwork: *mut c_int,
) -> c_int {
    guard(INTERNAL_ERROR, || {
        let probe = |handle| Call::Gesvd {
            handle,
            dtype: 2,
            jobu: b'N',
            jobvt: b'N',
            m,
            n,
            a: 0,
            lda: m.max(1),
            s: 0,
            u: 0,
            ldu: 1,
            vt: 0,
            ldvt: 1,
            info: 0,
        };
        answer(lwork, buffer_size(handle, probe, lwork::gesvd(m, n)))
    })
}

#[no_mangle]
pub extern "C" fn cusolverDnCgesvd(
    handle: Handle,
    jobu: c_schar,
    jobvt: c_schar,
    m: c_int,
    n: c_int,
    a: Dev,
    lda: c_int,
    s: Dev,
    u: Dev,
    ldu: c_int,
    vt: Dev,
    ldvt: c_int,
    work: Dev,
    lwork: c_int,
    _rwork: Dev,
    info: *mut c_int,
) -> c_int {
    guard(INTERNAL_ERROR, || {
        let ws = Workspace {
            ptr: addr(work),
            lwork: i64::from(lwork),
            needed: lwork::gesvd(m, n),
            dtype: 2,
        };
        submit(handle, Some(ws), |handle| Call::Gesvd {
            handle,
            dtype: 2,
            jobu: jobu as u8,
            jobvt: jobvt as u8,
            m,
            n,
            a: addr(a),
            lda,
            s: addr(s),
            u: addr(u),
            ldu,
            vt: addr(vt),
            ldvt,
            info: addr(info),
        })
    })
}

// ---- Z: cuDoubleComplex ----

#[no_mangle]
pub extern "C" fn cusolverDnZgetrf_bufferSize(
    handle: Handle,
    m: c_int,
    n: c_int,
    a: Dev,
    lda: c_int,
    lwork: *mut c_int,
) -> c_int {
    guard(INTERNAL_ERROR, || {
        let probe = |handle| Call::Getrf {
            handle,
            dtype: 3,
            m,
            n,
            a: addr(a),
            lda,
            ipiv: 0,
            info: 0,
        };
        answer(lwork, buffer_size(handle, probe, lwork::getrf(m, n)))
    })
}

#[no_mangle]
pub extern "C" fn cusolverDnZgetrf(
    handle: Handle,
    m: c_int,
    n: c_int,
    a: Dev,
    lda: c_int,
    workspace: Dev,
    ipiv: *mut c_int,
    info: *mut c_int,
) -> c_int {
    guard(INTERNAL_ERROR, || {
        let needed = lwork::getrf(m, n);
        let ws = Workspace {
            ptr: addr(workspace),
            lwork: needed,
            needed,
            dtype: 3,
        };
        submit(handle, Some(ws), |handle| Call::Getrf {
            handle,
            dtype: 3,
            m,
            n,
            a: addr(a),
            lda,
            ipiv: addr(ipiv),
            info: addr(info),
        })
    })
}

#[no_mangle]
pub extern "C" fn cusolverDnZgetrs(
    handle: Handle,
    trans: c_int,
    n: c_int,
    nrhs: c_int,
    a: Dev,
    lda: c_int,
    ipiv: *const c_int,
    b: Dev,
    ldb: c_int,
    info: *mut c_int,
) -> c_int {
    guard(INTERNAL_ERROR, || {
        submit(handle, None, |handle| Call::Getrs {
            handle,
            dtype: 3,
            trans,
            n,
            nrhs,
            a: addr(a),
            lda,
            ipiv: addr(ipiv),
            b: addr(b),
            ldb,
            info: addr(info),
        })
    })
}

#[no_mangle]
pub extern "C" fn cusolverDnZpotrf_bufferSize(
    handle: Handle,
    uplo: c_int,
    n: c_int,
    a: Dev,
    lda: c_int,
    lwork: *mut c_int,
) -> c_int {
    guard(INTERNAL_ERROR, || {
        let probe = |handle| Call::Potrf {
            handle,
            dtype: 3,
            uplo,
            n,
            a: addr(a),
            lda,
            info: 0,
        };
        answer(lwork, buffer_size(handle, probe, lwork::potrf(n)))
    })
}

#[no_mangle]
pub extern "C" fn cusolverDnZpotrf(
    handle: Handle,
    uplo: c_int,
    n: c_int,
    a: Dev,
    lda: c_int,
    workspace: Dev,
    lwork: c_int,
    info: *mut c_int,
) -> c_int {
    guard(INTERNAL_ERROR, || {
        let ws = Workspace {
            ptr: addr(workspace),
            lwork: i64::from(lwork),
            needed: lwork::potrf(n),
            dtype: 3,
        };
        submit(handle, Some(ws), |handle| Call::Potrf {
            handle,
            dtype: 3,
            uplo,
            n,
            a: addr(a),
            lda,
            info: addr(info),
        })
    })
}

#[no_mangle]
pub extern "C" fn cusolverDnZpotrs(
    handle: Handle,
    uplo: c_int,
    n: c_int,
    nrhs: c_int,
    a: Dev,
    lda: c_int,
    b: Dev,
    ldb: c_int,
    info: *mut c_int,
) -> c_int {
    guard(INTERNAL_ERROR, || {
        submit(handle, None, |handle| Call::Potrs {
            handle,
            dtype: 3,
            uplo,
            n,
            nrhs,
            a: addr(a),
            lda,
            b: addr(b),
            ldb,
            info: addr(info),
        })
    })
}

#[no_mangle]
pub extern "C" fn cusolverDnZgeqrf_bufferSize(
    handle: Handle,
    m: c_int,
    n: c_int,
    a: Dev,
    lda: c_int,
    lwork: *mut c_int,
) -> c_int {
    guard(INTERNAL_ERROR, || {
        let probe = |handle| Call::Geqrf {
            handle,
            dtype: 3,
            m,
            n,
            a: addr(a),
            lda,
            tau: 0,
            info: 0,
        };
        answer(lwork, buffer_size(handle, probe, lwork::geqrf(m, n)))
    })
}

#[no_mangle]
pub extern "C" fn cusolverDnZgeqrf(
    handle: Handle,
    m: c_int,
    n: c_int,
    a: Dev,
    lda: c_int,
    tau: Dev,
    workspace: Dev,
    lwork: c_int,
    info: *mut c_int,
) -> c_int {
    guard(INTERNAL_ERROR, || {
        let ws = Workspace {
            ptr: addr(workspace),
            lwork: i64::from(lwork),
            needed: lwork::geqrf(m, n),
            dtype: 3,
        };
        submit(handle, Some(ws), |handle| Call::Geqrf {
            handle,
            dtype: 3,
            m,
            n,
            a: addr(a),
            lda,
            tau: addr(tau),
            info: addr(info),
        })
    })
}

#[no_mangle]
pub extern "C" fn cusolverDnZunmqr_bufferSize(
    handle: Handle,
    side: c_int,
    trans: c_int,
    m: c_int,
    n: c_int,
    k: c_int,
    a: Dev,
    lda: c_int,
    tau: Dev,
    c: Dev,
    ldc: c_int,
    lwork: *mut c_int,
) -> c_int {
    guard(INTERNAL_ERROR, || {
        let probe = |handle| Call::Ormqr {
            handle,
            dtype: 3,
            side,
            trans,
            m,
            n,
            k,
            a: addr(a),
            lda,
            tau: addr(tau),
            c: addr(c),
            ldc,
            info: 0,
        };
        answer(lwork, buffer_size(handle, probe, lwork::ormqr(m, n)))
    })
}

#[no_mangle]
pub extern "C" fn cusolverDnZunmqr(
    handle: Handle,
    side: c_int,
    trans: c_int,
    m: c_int,
    n: c_int,
    k: c_int,
    a: Dev,
    lda: c_int,
    tau: Dev,
    c: Dev,
    ldc: c_int,
    work: Dev,
    lwork: c_int,
    info: *mut c_int,
) -> c_int {
    guard(INTERNAL_ERROR, || {
        let ws = Workspace {
            ptr: addr(work),
            lwork: i64::from(lwork),
            needed: lwork::ormqr(m, n),
            dtype: 3,
        };
        submit(handle, Some(ws), |handle| Call::Ormqr {
            handle,
            dtype: 3,
            side,
            trans,
            m,
            n,
            k,
            a: addr(a),
            lda,
            tau: addr(tau),
            c: addr(c),
            ldc,
            info: addr(info),
        })
    })
}

#[no_mangle]
pub extern "C" fn cusolverDnZheevd_bufferSize(
    handle: Handle,
    jobz: c_int,
    uplo: c_int,
    n: c_int,
    a: Dev,
    lda: c_int,
    w: Dev,
    lwork: *mut c_int,
) -> c_int {
    guard(INTERNAL_ERROR, || {
        let probe = |handle| Call::Syevd {
            handle,
            dtype: 3,
            jobz,
            uplo,
            n,
            a: addr(a),
            lda,
            w: addr(w),
            info: 0,
        };
        answer(lwork, buffer_size(handle, probe, lwork::syevd(n)))
    })
}

#[no_mangle]
pub extern "C" fn cusolverDnZheevd(
    handle: Handle,
    jobz: c_int,
    uplo: c_int,
    n: c_int,
    a: Dev,
    lda: c_int,
    w: Dev,
    work: Dev,
    lwork: c_int,
    info: *mut c_int,
) -> c_int {
    guard(INTERNAL_ERROR, || {
        let ws = Workspace {
            ptr: addr(work),
            lwork: i64::from(lwork),
            needed: lwork::syevd(n),
            dtype: 3,
        };
        submit(handle, Some(ws), |handle| Call::Syevd {
            handle,
            dtype: 3,
            jobz,
            uplo,
            n,
            a: addr(a),
            lda,
            w: addr(w),
            info: addr(info),
        })
    })
}

#[no_mangle]
pub extern "C" fn cusolverDnZgesvd_bufferSize(
    handle: Handle,
    m: c_int,
    n: c_int,
    lwork: *mut c_int,
) -> c_int {
    guard(INTERNAL_ERROR, || {
        let probe = |handle| Call::Gesvd {
            handle,
            dtype: 3,
            jobu: b'N',
            jobvt: b'N',
            m,
            n,
            a: 0,
            lda: m.max(1),
            s: 0,
            u: 0,
            ldu: 1,
            vt: 0,
            ldvt: 1,
            info: 0,
        };
        answer(lwork, buffer_size(handle, probe, lwork::gesvd(m, n)))
    })
}

#[no_mangle]
pub extern "C" fn cusolverDnZgesvd(
    handle: Handle,
    jobu: c_schar,
    jobvt: c_schar,
    m: c_int,
    n: c_int,
    a: Dev,
    lda: c_int,
    s: Dev,
    u: Dev,
    ldu: c_int,
    vt: Dev,
    ldvt: c_int,
    work: Dev,
    lwork: c_int,
    _rwork: Dev,
    info: *mut c_int,
) -> c_int {
    guard(INTERNAL_ERROR, || {
        let ws = Workspace {
            ptr: addr(work),
            lwork: i64::from(lwork),
            needed: lwork::gesvd(m, n),
            dtype: 3,
        };
        submit(handle, Some(ws), |handle| Call::Gesvd {
            handle,
            dtype: 3,
            jobu: jobu as u8,
            jobvt: jobvt as u8,
            m,
            n,
            a: addr(a),
            lda,
            s: addr(s),
            u: addr(u),
            ldu,
            vt: addr(vt),
            ldvt,
            info: addr(info),
        })
    })
}

#[no_mangle]
pub extern "C" fn cusolverDnSorgqr_bufferSize(
    handle: Handle,
    m: c_int,
    n: c_int,
    k: c_int,
    a: Dev,
    lda: c_int,
    tau: Dev,
    lwork: *mut c_int,
) -> c_int {
    guard(INTERNAL_ERROR, || {
        let probe = |handle| Call::Orgqr {
            handle,
            dtype: 0,
            m,
            n,
            k,
            a: addr(a),
            lda,
            tau: addr(tau),
            info: 0,
        };
        answer(lwork, buffer_size(handle, probe, lwork::orgqr(n)))
    })
}

#[no_mangle]
pub extern "C" fn cusolverDnSorgqr(
    handle: Handle,
    m: c_int,
    n: c_int,
    k: c_int,
    a: Dev,
    lda: c_int,
    tau: Dev,
    work: Dev,
    lwork: c_int,
    info: *mut c_int,
) -> c_int {
    guard(INTERNAL_ERROR, || {
        let ws = Workspace {
            ptr: addr(work),
            lwork: i64::from(lwork),
            needed: lwork::orgqr(n),
            dtype: 0,
        };
        submit(handle, Some(ws), |handle| Call::Orgqr {
            handle,
            dtype: 0,
            m,
            n,
            k,
            a: addr(a),
            lda,
            tau: addr(tau),
            info: addr(info),
        })
    })
}

#[no_mangle]
pub extern "C" fn cusolverDnDorgqr_bufferSize(
    handle: Handle,
    m: c_int,
    n: c_int,
    k: c_int,
    a: Dev,
    lda: c_int,
    tau: Dev,
    lwork: *mut c_int,
) -> c_int {
    guard(INTERNAL_ERROR, || {
        let probe = |handle| Call::Orgqr {
            handle,
            dtype: 1,
            m,
            n,
            k,
            a: addr(a),
            lda,
            tau: addr(tau),
            info: 0,
        };
        answer(lwork, buffer_size(handle, probe, lwork::orgqr(n)))
    })
}

#[no_mangle]
pub extern "C" fn cusolverDnDorgqr(
    handle: Handle,
    m: c_int,
    n: c_int,
    k: c_int,
    a: Dev,
    lda: c_int,
    tau: Dev,
    work: Dev,
    lwork: c_int,
    info: *mut c_int,
) -> c_int {
    guard(INTERNAL_ERROR, || {
        let ws = Workspace {
            ptr: addr(work),
            lwork: i64::from(lwork),
            needed: lwork::orgqr(n),
            dtype: 1,
        };
        submit(handle, Some(ws), |handle| Call::Orgqr {
            handle,
            dtype: 1,
            m,
            n,
            k,
            a: addr(a),
            lda,
            tau: addr(tau),
            info: addr(info),
        })
    })
}

#[no_mangle]
pub extern "C" fn cusolverDnCungqr_bufferSize(
    handle: Handle,
    m: c_int,
    n: c_int,
    k: c_int,
    a: Dev,
    lda: c_int,
    tau: Dev,
    lwork: *mut c_int,
) -> c_int {
    guard(INTERNAL_ERROR, || {
        let probe = |handle| Call::Orgqr {
            handle,
            dtype: 2,
            m,
            n,
            k,
            a: addr(a),
            lda,
            tau: addr(tau),
            info: 0,
        };
        answer(lwork, buffer_size(handle, probe, lwork::orgqr(n)))
    })
}

#[no_mangle]
pub extern "C" fn cusolverDnCungqr(
    handle: Handle,
    m: c_int,
    n: c_int,
    k: c_int,
    a: Dev,
    lda: c_int,
    tau: Dev,
    work: Dev,
    lwork: c_int,
    info: *mut c_int,
) -> c_int {
    guard(INTERNAL_ERROR, || {
        let ws = Workspace {
            ptr: addr(work),
            lwork: i64::from(lwork),
            needed: lwork::orgqr(n),
            dtype: 2,
        };
        submit(handle, Some(ws), |handle| Call::Orgqr {
            handle,
            dtype: 2,
            m,
            n,
            k,
            a: addr(a),
            lda,
            tau: addr(tau),
            info: addr(info),
        })
    })
}

#[no_mangle]
pub extern "C" fn cusolverDnZungqr_bufferSize(
    handle: Handle,
    m: c_int,
    n: c_int,
    k: c_int,
    a: Dev,
    lda: c_int,
    tau: Dev,
    lwork: *mut c_int,
) -> c_int {
    guard(INTERNAL_ERROR, || {
        let probe = |handle| Call::Orgqr {
            handle,
            dtype: 3,
            m,
            n,
            k,
            a: addr(a),
            lda,
            tau: addr(tau),
            info: 0,
        };
        answer(lwork, buffer_size(handle, probe, lwork::orgqr(n)))
    })
}

#[no_mangle]
pub extern "C" fn cusolverDnZungqr(
    handle: Handle,
    m: c_int,
    n: c_int,
    k: c_int,
    a: Dev,
    lda: c_int,
    tau: Dev,
    work: Dev,
    lwork: c_int,
    info: *mut c_int,
) -> c_int {
    guard(INTERNAL_ERROR, || {
        let ws = Workspace {
            ptr: addr(work),
            lwork: i64::from(lwork),
            needed: lwork::orgqr(n),
            dtype: 3,
        };
        submit(handle, Some(ws), |handle| Call::Orgqr {
            handle,
            dtype: 3,
            m,
            n,
            k,
            a: addr(a),
            lda,
            tau: addr(tau),
            info: addr(info),
        })
    })
}

/// The cuSOLVER version rcud stands in for: the headers' (12.4.1).
const VERSION: [c_int; 3] = [12, 4, 1];

/// `cusolverGetProperty`: `MAJOR_VERSION`, `MINOR_VERSION`, `PATCH_LEVEL`.
#[no_mangle]
pub extern "C" fn cusolverGetProperty(kind: c_int, value: *mut c_int) -> c_int {
    guard(INTERNAL_ERROR, || {
        let Some(&v) = usize::try_from(kind).ok().and_then(|k| VERSION.get(k)) else {
            return INVALID_VALUE;
        };
        match write_out(value, v) {
            Ok(()) => super::SUCCESS,
            Err(_) => INVALID_VALUE,
        }
    })
}

/// `cusolverGetVersion`: major·1000 + minor·100 + patch, as `CUSOLVER_VERSION`.
#[no_mangle]
pub extern "C" fn cusolverGetVersion(version: *mut c_int) -> c_int {
    guard(INTERNAL_ERROR, || {
        match write_out(version, VERSION[0] * 1000 + VERSION[1] * 100 + VERSION[2]) {
            Ok(()) => super::SUCCESS,
            Err(_) => INVALID_VALUE,
        }
    })
}

// ---- the 64-bit generic API ----

/// `cusolverDnParams_t`: the generic API's options; rcud has none to keep
/// (the only algorithm is the default), so a params object is a live id.
type Params = *mut c_void;

static PARAMS: std::sync::Mutex<(u64, Vec<u64>)> = std::sync::Mutex::new((0, Vec::new()));

fn params_live(params: Params) -> bool {
    let guard = PARAMS.lock().unwrap_or_else(|p| p.into_inner());
    guard.1.contains(&(params as u64))
}

#[no_mangle]
pub extern "C" fn cusolverDnCreateParams(params: *mut Params) -> c_int {
    guard(INTERNAL_ERROR, || {
        let mut table = PARAMS.lock().unwrap_or_else(|p| p.into_inner());
        table.0 += 1;
        let id = table.0;
        match write_out(params, id as Params) {
            Ok(()) => {
                table.1.push(id);
                super::SUCCESS
            }
            Err(_) => INVALID_VALUE,
        }
    })
}

#[no_mangle]
pub extern "C" fn cusolverDnDestroyParams(params: Params) -> c_int {
    guard(INTERNAL_ERROR, || {
        let mut table = PARAMS.lock().unwrap_or_else(|p| p.into_inner());
        match table.1.iter().position(|&p| p == params as u64) {
            Some(i) => {
                table.1.swap_remove(i);
                super::SUCCESS
            }
            None => INVALID_VALUE,
        }
    })
}

/// Answers a generic-API `_bufferSize` query: the device workspace in
/// bytes for `size`'s element count, and no host workspace.
fn answer_bytes(
    device_bytes: *mut usize,
    host_bytes: *mut usize,
    dtype: u8,
    size: Result<c_int, c_int>,
) -> c_int {
    let elements = match size {
        Ok(elements) => elements,
        Err(status) => return status,
    };
    let bytes =
        elements as usize * rcud_proto::math::solver::element_size(dtype).unwrap_or(16) as usize;
    match (write_out(device_bytes, bytes), write_out(host_bytes, 0)) {
        (Ok(()), Ok(())) => super::SUCCESS,
        _ => INVALID_VALUE,
    }
}

/// The generic API's device workspace (sized in bytes) as elements.
fn byte_workspace(ptr: Dev, bytes: usize, needed: i64, dtype: u8) -> Workspace {
    let size = rcud_proto::math::solver::element_size(dtype).unwrap_or(16) as usize;
    Workspace {
        ptr: addr(ptr),
        lwork: (bytes / size) as i64,
        needed,
        dtype,
    }
}

/// The wire's dtype (S, D, C, Z) of the generic API's `cudaDataType` of A,
/// when W's type is its real type and the compute type is A's (the only
/// combinations rcud computes).
fn generic_dtype(type_a: c_int, type_w: c_int, compute: c_int) -> Option<u8> {
    // CUDA_R_32F = 0, CUDA_R_64F = 1, CUDA_C_32F = 4, CUDA_C_64F = 5.
    let (dtype, real) = match type_a {
        0 => (0, 0),
        1 => (1, 1),
        4 => (2, 0),
        5 => (3, 1),
        _ => return None,
    };
    (type_w == real && compute == type_a).then_some(dtype)
}

#[no_mangle]
pub extern "C" fn cusolverDnXsyevd_bufferSize(
    handle: Handle,
    params: Params,
    jobz: c_int,
    uplo: c_int,
    n: i64,
    type_a: c_int,
    a: Dev,
    lda: i64,
    type_w: c_int,
    w: Dev,
    compute: c_int,
    device_bytes: *mut usize,
    host_bytes: *mut usize,
) -> c_int {
    guard(INTERNAL_ERROR, || {
        if !params_live(params) {
            return INVALID_VALUE;
        }
        let (Some(dtype), Ok(n), Ok(lda)) = (
            generic_dtype(type_a, type_w, compute),
            c_int::try_from(n),
            c_int::try_from(lda),
        ) else {
            return INVALID_VALUE;
        };
        let probe = |handle| Call::Syevd {
            handle,
            dtype,
            jobz,
            uplo,
            n,
            a: addr(a),
            lda,
            w: addr(w),
            info: 0,
        };
        answer_bytes(
            device_bytes,
            host_bytes,
            dtype,
            buffer_size(handle, probe, lwork::syevd(n)),
        )
    })
}

#[no_mangle]
pub extern "C" fn cusolverDnXsyevd(
    handle: Handle,
    params: Params,
    jobz: c_int,
    uplo: c_int,
    n: i64,
    type_a: c_int,
    a: Dev,
    lda: i64,
    type_w: c_int,
    w: Dev,
    compute: c_int,
    device_buffer: Dev,
    device_bytes: usize,
    _host_buffer: Dev,
    _host_bytes: usize,
    info: *mut c_int,
) -> c_int {
    guard(INTERNAL_ERROR, || {
        if !params_live(params) {
            return INVALID_VALUE;
        }
        let (Some(dtype), Ok(n), Ok(lda)) = (
            generic_dtype(type_a, type_w, compute),
            c_int::try_from(n),
            c_int::try_from(lda),
        ) else {
            return INVALID_VALUE;
        };
        let ws = byte_workspace(device_buffer, device_bytes, lwork::syevd(n), dtype);
        submit(handle, Some(ws), |handle| Call::Syevd {
            handle,
            dtype,
            jobz,
            uplo,
            n,
            a: addr(a),
            lda,
            w: addr(w),
            info: addr(info),
        })
    })
}

/// The wire's dtype of `cusolverDnXgeev`'s A and whether W is 2n reals
/// (only for a real A) rather than complex: the vectors' types and the
/// compute type must be A's.
fn geev_dtypes(
    type_a: c_int,
    type_w: c_int,
    type_vl: c_int,
    type_vr: c_int,
    compute: c_int,
) -> Option<(u8, u8)> {
    // CUDA_R_32F = 0, CUDA_R_64F = 1, CUDA_C_32F = 4, CUDA_C_64F = 5.
    let (dtype, complex_twin) = match type_a {
        0 => (0, 4),
        1 => (1, 5),
        4 => (2, 4),
        5 => (3, 5),
        _ => return None,
    };
    if type_vl != type_a || type_vr != type_a || compute != type_a {
        return None;
    }
    if type_w == complex_twin {
        Some((dtype, 0))
    } else if type_w == type_a {
        Some((dtype, 1))
    } else {
        None
    }
}

/// The checked 32-bit forms of `cusolverDnXgeev`'s dimensions.
fn geev_dims(n: i64, lds: [i64; 3]) -> Option<(c_int, [c_int; 3])> {
    let n = c_int::try_from(n).ok()?;
    let mut out = [0; 3];
    for (o, ld) in out.iter_mut().zip(lds) {
        *o = c_int::try_from(ld).ok()?;
    }
    Some((n, out))
}

#[no_mangle]
pub extern "C" fn cusolverDnXgeev_bufferSize(
    handle: Handle,
    params: Params,
    jobvl: c_int,
    jobvr: c_int,
    n: i64,
    type_a: c_int,
    a: Dev,
    lda: i64,
    type_w: c_int,
    w: Dev,
    type_vl: c_int,
    vl: Dev,
    ldvl: i64,
    type_vr: c_int,
    vr: Dev,
    ldvr: i64,
    compute: c_int,
    device_bytes: *mut usize,
    host_bytes: *mut usize,
) -> c_int {
    guard(INTERNAL_ERROR, || {
        if !params_live(params) {
            return INVALID_VALUE;
        }
        let (Some((dtype, w_real)), Some((n, [lda, ldvl, ldvr]))) = (
            geev_dtypes(type_a, type_w, type_vl, type_vr, compute),
            geev_dims(n, [lda, ldvl, ldvr]),
        ) else {
            return INVALID_VALUE;
        };
        let probe = |handle| Call::Geev {
            handle,
            dtype,
            w_real,
            jobvl,
            jobvr,
            n,
            a: addr(a),
            lda,
            w: addr(w),
            vl: addr(vl),
            ldvl,
            vr: addr(vr),
            ldvr,
            info: 0,
        };
        answer_bytes(
            device_bytes,
            host_bytes,
            dtype,
            buffer_size(handle, probe, lwork::geev(n)),
        )
    })
}

#[no_mangle]
pub extern "C" fn cusolverDnXgeev(
    handle: Handle,
    params: Params,
    jobvl: c_int,
    jobvr: c_int,
    n: i64,
    type_a: c_int,
    a: Dev,
    lda: i64,
    type_w: c_int,
    w: Dev,
    type_vl: c_int,
    vl: Dev,
    ldvl: i64,
    type_vr: c_int,
    vr: Dev,
    ldvr: i64,
    compute: c_int,
    device_buffer: Dev,
    device_bytes: usize,
    _host_buffer: Dev,
    _host_bytes: usize,
    info: *mut c_int,
) -> c_int {
    guard(INTERNAL_ERROR, || {
        if !params_live(params) {
            return INVALID_VALUE;
        }
        let (Some((dtype, w_real)), Some((n, [lda, ldvl, ldvr]))) = (
            geev_dtypes(type_a, type_w, type_vl, type_vr, compute),
            geev_dims(n, [lda, ldvl, ldvr]),
        ) else {
            return INVALID_VALUE;
        };
        let ws = byte_workspace(device_buffer, device_bytes, lwork::geev(n), dtype);
        submit(handle, Some(ws), |handle| Call::Geev {
            handle,
            dtype,
            w_real,
            jobvl,
            jobvr,
            n,
            a: addr(a),
            lda,
            w: addr(w),
            vl: addr(vl),
            ldvl,
            vr: addr(vr),
            ldvr,
            info: addr(info),
        })
    })
}
