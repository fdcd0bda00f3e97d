//! The exported batched and Jacobi routines: `potrfBatched` and
//! `potrsBatched`, `syevj`/`heevj` and `gesvdj` with their `*Batched` forms,
//! `gesvdaStridedBatched`, and the `syevjInfo_t` / `gesvdjInfo_t` settings
//! objects.
//!
//! A settings object is the application's: it lives here, and its values
//! travel with each call that names it.

// C names, exported (unreachable from Rust, reachable from C).
#![allow(non_snake_case, unreachable_pub)]

use std::collections::HashMap;
use std::os::raw::{c_int, c_void};
use std::sync::Mutex;

use rcud_proto::math::solver::Call;

use super::{
    answer, buffer_size, lwork, run_now, submit, Handle, Workspace, INTERNAL_ERROR, INVALID_VALUE,
    SUCCESS,
};
use crate::ffi::write_out;
use crate::math::guard;

/// A device pointer the application passed.
type Dev = *mut c_void;
/// `syevjInfo_t` / `gesvdjInfo_t`: the id of a [`Settings`].
type Info = *mut c_void;

/// Which routine family a settings object was made for.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    Syevj,
    Gesvdj,
}

/// A `syevjInfo_t` or `gesvdjInfo_t`: cuSOLVER's defaults are tolerance
/// machine precision (0 here), 100 sweeps, sorted eigenvalues.
#[derive(Clone, Copy)]
struct Settings {
    kind: Kind,
    tol: f64,
    max_sweeps: i32,
    sort: i32,
}

impl Settings {
    fn new(kind: Kind) -> Self {
        Self {
            kind,
            tol: 0.0,
            max_sweeps: 100,
            sort: 1,
        }
    }
}

/// Live settings objects by id (the value the application holds).
static SETTINGS: Mutex<Option<(u64, HashMap<u64, Settings>)>> = Mutex::new(None);

fn with_settings<R>(f: impl FnOnce(&mut u64, &mut HashMap<u64, Settings>) -> R) -> R {
    let mut guard = SETTINGS
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    let (last, map) = guard.get_or_insert_with(|| (0, HashMap::new()));
    f(last, map)
}

fn create(out: *mut Info, kind: Kind) -> c_int {
    if out.is_null() {
        return INVALID_VALUE;
    }
    let id = with_settings(|last, map| {
        *last += 1;
        // Ids look like no small integer an application might pass by
        // mistake.
        let id = 0x5e77_0000_0000 + *last;
        map.insert(id, Settings::new(kind));
        id
    });
    match write_out(out, id as Info) {
        Ok(()) => super::SUCCESS,
        Err(_) => INVALID_VALUE,
    }
}

fn destroy(info: Info, kind: Kind) -> c_int {
    with_settings(|_, map| match map.get(&(info as u64)) {
        Some(s) if s.kind == kind => {
            map.remove(&(info as u64));
            super::SUCCESS
        }
        _ => INVALID_VALUE,
    })
}

fn update(info: Info, kind: Kind, set: impl FnOnce(&mut Settings)) -> c_int {
    with_settings(|_, map| match map.get_mut(&(info as u64)) {
        Some(s) if s.kind == kind => {
            set(s);
            super::SUCCESS
        }
        _ => INVALID_VALUE,
    })
}

/// The settings a call names: cuSOLVER's defaults for NULL, None for an
/// object that is not a live one of `kind`.
fn settings(info: Info, kind: Kind) -> Option<Settings> {
    if info.is_null() {
        return Some(Settings::new(kind));
    }
    with_settings(|_, map| map.get(&(info as u64)).copied()).filter(|s| s.kind == kind)
}

#[no_mangle]
pub extern "C" fn cusolverDnCreateSyevjInfo(info: *mut Info) -> c_int {
    guard(INTERNAL_ERROR, || create(info, Kind::Syevj))
}

#[no_mangle]
pub extern "C" fn cusolverDnDestroySyevjInfo(info: Info) -> c_int {
    guard(INTERNAL_ERROR, || destroy(info, Kind::Syevj))
}

#[no_mangle]
pub extern "C" fn cusolverDnXsyevjSetTolerance(info: Info, tolerance: f64) -> c_int {
    guard(INTERNAL_ERROR, || {
        update(info, Kind::Syevj, |s| s.tol = tolerance)
    })
}

#[no_mangle]
pub extern "C" fn cusolverDnXsyevjSetMaxSweeps(info: Info, max_sweeps: c_int) -> c_int {
    guard(INTERNAL_ERROR, || {
        if max_sweeps <= 0 {
            return INVALID_VALUE;
        }
        update(info, Kind::Syevj, |s| s.max_sweeps = max_sweeps)
    })
}

#[no_mangle]
pub extern "C" fn cusolverDnXsyevjSetSortEig(info: Info, sort_eig: c_int) -> c_int {
    guard(INTERNAL_ERROR, || {
        update(info, Kind::Syevj, |s| s.sort = sort_eig)
    })
}

#[no_mangle]
pub extern "C" fn cusolverDnCreateGesvdjInfo(info: *mut Info) -> c_int {
    guard(INTERNAL_ERROR, || create(info, Kind::Gesvdj))
}

#[no_mangle]
pub extern "C" fn cusolverDnDestroyGesvdjInfo(info: Info) -> c_int {
    guard(INTERNAL_ERROR, || destroy(info, Kind::Gesvdj))
}

#[no_mangle]
pub extern "C" fn cusolverDnXgesvdjSetTolerance(info: Info, tolerance: f64) -> c_int {
    guard(INTERNAL_ERROR, || {
        update(info, Kind::Gesvdj, |s| s.tol = tolerance)
    })
}

#[no_mangle]
pub extern "C" fn cusolverDnXgesvdjSetMaxSweeps(info: Info, max_sweeps: c_int) -> c_int {
    guard(INTERNAL_ERROR, || {
        if max_sweeps <= 0 {
            return INVALID_VALUE;
        }
        update(info, Kind::Gesvdj, |s| s.max_sweeps = max_sweeps)
    })
}

#[no_mangle]
pub extern "C" fn cusolverDnXgesvdjSetSortEig(info: Info, sort_svd: c_int) -> c_int {
    guard(INTERNAL_ERROR, || {
        update(info, Kind::Gesvdj, |s| s.sort = sort_svd)
    })
}

/// Workspace elements for `batch` problems of `each`.
fn times(each: i64, batch: c_int) -> i64 {
    each.saturating_mul(i64::from(batch.max(1)))
}

#[allow(clippy::too_many_arguments)]
fn syevj_call(
    handle: u64,
    dtype: u8,
    (jobz, uplo, n): (c_int, c_int, c_int),
    (a, lda): (Dev, c_int),
    w: Dev,
    info: u64,
    (batch, batched): (c_int, bool),
    s: Settings,
) -> Call {
    Call::Syevj {
        handle,
        dtype,
        jobz,
        uplo,
        n,
        a: a as u64,
        lda,
        w: w as u64,
        info,
        batch,
        batched: u8::from(batched),
        tol: s.tol,
        max_sweeps: s.max_sweeps,
        sort: s.sort,
    }
}

/// A `gesvdj` call's matrices: A, U, V with their leading dimensions, and S.
struct SvdOperands {
    a: (Dev, c_int),
    s: Dev,
    u: (Dev, c_int),
    v: (Dev, c_int),
}

#[allow(clippy::too_many_arguments)]
fn gesvdj_call(
    handle: u64,
    dtype: u8,
    (jobz, econ, m, n): (c_int, c_int, c_int, c_int),
    ops: &SvdOperands,
    info: u64,
    (batch, batched): (c_int, bool),
    s: Settings,
) -> Call {
    Call::Gesvdj {
        handle,
        dtype,
        jobz,
        econ,
        m,
        n,
        a: ops.a.0 as u64,
        lda: ops.a.1,
        s: ops.s as u64,
        u: ops.u.0 as u64,
        ldu: ops.u.1,
        v: ops.v.0 as u64,
        ldv: ops.v.1,
        info,
        batch,
        batched: u8::from(batched),
        tol: s.tol,
        max_sweeps: s.max_sweeps,
        sort: s.sort,
    }
}

/// One element type's batched Cholesky, Jacobi eigensolver (`$syevj`:
/// `syevj` or `heevj`) and Jacobi SVD.
/// Each `fn a / b` line names two exported functions (the form
/// `build.rs` reads to know them implemented).
macro_rules! jacobi_routines {
    (
        dtype $dtype:literal;
        fn $potrf_batched:ident / $potrs_batched:ident (cholesky);
        fn $syevj:ident / $syevj_size:ident (syevj);
        fn $syevj_batched:ident / $syevj_batched_size:ident (syevj batched);
        fn $gesvdj:ident / $gesvdj_size:ident (gesvdj);
        fn $gesvdj_batched:ident / $gesvdj_batched_size:ident (gesvdj batched);
    ) => {
        #[no_mangle]
        pub extern "C" fn $potrf_batched(
            handle: Handle,
            uplo: c_int,
            n: c_int,
            a: *mut Dev,
            lda: c_int,
            info: *mut c_int,
            batch: c_int,
        ) -> c_int {
            guard(INTERNAL_ERROR, || {
                submit(handle, None, |handle| Call::PotrfBatched {
                    handle,
                    dtype: $dtype,
                    uplo,
                    n,
                    a: a as u64,
                    lda,
                    info: info as u64,
                    batch,
                })
            })
        }

        #[no_mangle]
        pub extern "C" fn $potrs_batched(
            handle: Handle,
            uplo: c_int,
            n: c_int,
            nrhs: c_int,
            a: *mut Dev,
            lda: c_int,
            b: *mut Dev,
            ldb: c_int,
            info: *mut c_int,
            batch: c_int,
        ) -> c_int {
            guard(INTERNAL_ERROR, || {
                submit(handle, None, |handle| Call::PotrsBatched {
                    handle,
                    dtype: $dtype,
                    uplo,
                    n,
                    nrhs,
                    a: a as u64,
                    lda,
                    b: b as u64,
                    ldb,
                    info: info as u64,
                    batch,
                })
            })
        }

        #[no_mangle]
        pub extern "C" fn $syevj_size(
            handle: Handle,
            jobz: c_int,
            uplo: c_int,
            n: c_int,
            a: Dev,
            lda: c_int,
            w: Dev,
            lwork: *mut c_int,
            params: Info,
        ) -> c_int {
            guard(INTERNAL_ERROR, || {
                let Some(s) = settings(params, Kind::Syevj) else {
                    return INVALID_VALUE;
                };
                let probe =
                    |h| syevj_call(h, $dtype, (jobz, uplo, n), (a, lda), w, 0, (1, false), s);
                answer(lwork, buffer_size(handle, probe, lwork::syevd(n)))
            })
        }

        #[no_mangle]
        pub extern "C" fn $syevj(
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
            params: Info,
        ) -> c_int {
            guard(INTERNAL_ERROR, || {
                let Some(s) = settings(params, Kind::Syevj) else {
                    return INVALID_VALUE;
                };
                let ws = Workspace {
                    ptr: work as u64,
                    lwork: i64::from(lwork),
                    needed: lwork::syevd(n),
                    dtype: $dtype,
                };
                submit(handle, Some(ws), |h| {
                    syevj_call(
                        h,
                        $dtype,
                        (jobz, uplo, n),
                        (a, lda),
                        w,
                        info as u64,
                        (1, false),
                        s,
                    )
                })
            })
        }

        #[no_mangle]
        pub extern "C" fn $syevj_batched_size(
            handle: Handle,
            jobz: c_int,
            uplo: c_int,
            n: c_int,
            a: Dev,
            lda: c_int,
            w: Dev,
            lwork: *mut c_int,
            params: Info,
            batch: c_int,
        ) -> c_int {
            guard(INTERNAL_ERROR, || {
                let Some(s) = settings(params, Kind::Syevj) else {
                    return INVALID_VALUE;
                };
                let probe =
                    |h| syevj_call(h, $dtype, (jobz, uplo, n), (a, lda), w, 0, (batch, true), s);
                answer(
                    lwork,
                    buffer_size(handle, probe, times(lwork::syevd(n), batch)),
                )
            })
        }

        #[no_mangle]
        pub extern "C" fn $syevj_batched(
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
            params: Info,
            batch: c_int,
        ) -> c_int {
            guard(INTERNAL_ERROR, || {
                let Some(s) = settings(params, Kind::Syevj) else {
                    return INVALID_VALUE;
                };
                let ws = Workspace {
                    ptr: work as u64,
                    lwork: i64::from(lwork),
                    needed: times(lwork::syevd(n), batch),
                    dtype: $dtype,
                };
                submit(handle, Some(ws), |h| {
                    let info = info as u64;
                    syevj_call(
                        h,
                        $dtype,
                        (jobz, uplo, n),
                        (a, lda),
                        w,
                        info,
                        (batch, true),
                        s,
                    )
                })
            })
        }

        #[no_mangle]
        pub extern "C" fn $gesvdj_size(
            handle: Handle,
            jobz: c_int,
            econ: c_int,
            m: c_int,
            n: c_int,
            a: Dev,
            lda: c_int,
            s: Dev,
            u: Dev,
            ldu: c_int,
            v: Dev,
            ldv: c_int,
            lwork: *mut c_int,
            params: Info,
        ) -> c_int {
            guard(INTERNAL_ERROR, || {
                let Some(set) = settings(params, Kind::Gesvdj) else {
                    return INVALID_VALUE;
                };
                let ops = SvdOperands {
                    a: (a, lda),
                    s,
                    u: (u, ldu),
                    v: (v, ldv),
                };
                let probe =
                    |h| gesvdj_call(h, $dtype, (jobz, econ, m, n), &ops, 0, (1, false), set);
                answer(lwork, buffer_size(handle, probe, lwork::gesvd(m, n)))
            })
        }

        #[no_mangle]
        pub extern "C" fn $gesvdj(
            handle: Handle,
            jobz: c_int,
            econ: c_int,
            m: c_int,
            n: c_int,
            a: Dev,
            lda: c_int,
            s: Dev,
            u: Dev,
            ldu: c_int,
            v: Dev,
            ldv: c_int,
            work: Dev,
            lwork: c_int,
            info: *mut c_int,
            params: Info,
        ) -> c_int {
            guard(INTERNAL_ERROR, || {
                let Some(set) = settings(params, Kind::Gesvdj) else {
                    return INVALID_VALUE;
                };
                let ops = SvdOperands {
                    a: (a, lda),
                    s,
                    u: (u, ldu),
                    v: (v, ldv),
                };
                let ws = Workspace {
                    ptr: work as u64,
                    lwork: i64::from(lwork),
                    needed: lwork::gesvd(m, n),
                    dtype: $dtype,
                };
                submit(handle, Some(ws), |h| {
                    let info = info as u64;
                    gesvdj_call(h, $dtype, (jobz, econ, m, n), &ops, info, (1, false), set)
                })
            })
        }

        #[no_mangle]
        pub extern "C" fn $gesvdj_batched_size(
            handle: Handle,
            jobz: c_int,
            m: c_int,
            n: c_int,
            a: Dev,
            lda: c_int,
            s: Dev,
            u: Dev,
            ldu: c_int,
            v: Dev,
            ldv: c_int,
            lwork: *mut c_int,
            params: Info,
            batch: c_int,
        ) -> c_int {
            guard(INTERNAL_ERROR, || {
                let Some(set) = settings(params, Kind::Gesvdj) else {
                    return INVALID_VALUE;
                };
                let ops = SvdOperands {
                    a: (a, lda),
                    s,
                    u: (u, ldu),
                    v: (v, ldv),
                };
                let probe =
                    |h| gesvdj_call(h, $dtype, (jobz, 0, m, n), &ops, 0, (batch, true), set);
                answer(
                    lwork,
                    buffer_size(handle, probe, times(lwork::gesvd(m, n), batch)),
                )
            })
        }

        #[no_mangle]
        pub extern "C" fn $gesvdj_batched(
            handle: Handle,
            jobz: c_int,
            m: c_int,
            n: c_int,
            a: Dev,
            lda: c_int,
            s: Dev,
            u: Dev,
            ldu: c_int,
            v: Dev,
            ldv: c_int,
            work: Dev,
            lwork: c_int,
            info: *mut c_int,
            params: Info,
            batch: c_int,
        ) -> c_int {
            guard(INTERNAL_ERROR, || {
                let Some(set) = settings(params, Kind::Gesvdj) else {
                    return INVALID_VALUE;
                };
                let ops = SvdOperands {
                    a: (a, lda),
                    s,
                    u: (u, ldu),
                    v: (v, ldv),
                };
                let ws = Workspace {
                    ptr: work as u64,
                    lwork: i64::from(lwork),
                    needed: times(lwork::gesvd(m, n), batch),
                    dtype: $dtype,
                };
                submit(handle, Some(ws), |h| {
                    let info = info as u64;
                    gesvdj_call(h, $dtype, (jobz, 0, m, n), &ops, info, (batch, true), set)
                })
            })
        }
    };
}

jacobi_routines! {
    dtype 0;
    fn cusolverDnSpotrfBatched / cusolverDnSpotrsBatched (cholesky);
    fn cusolverDnSsyevj / cusolverDnSsyevj_bufferSize (syevj);
    fn cusolverDnSsyevjBatched / cusolverDnSsyevjBatched_bufferSize (syevj batched);
    fn cusolverDnSgesvdj / cusolverDnSgesvdj_bufferSize (gesvdj);
    fn cusolverDnSgesvdjBatched / cusolverDnSgesvdjBatched_bufferSize (gesvdj batched);
}

jacobi_routines! {
    dtype 1;
    fn cusolverDnDpotrfBatched / cusolverDnDpotrsBatched (cholesky);
    fn cusolverDnDsyevj / cusolverDnDsyevj_bufferSize (syevj);
    fn cusolverDnDsyevjBatched / cusolverDnDsyevjBatched_bufferSize (syevj batched);
    fn cusolverDnDgesvdj / cusolverDnDgesvdj_bufferSize (gesvdj);
    fn cusolverDnDgesvdjBatched / cusolverDnDgesvdjBatched_bufferSize (gesvdj batched);
}

jacobi_routines! {
    dtype 2;
    fn cusolverDnCpotrfBatched / cusolverDnCpotrsBatched (cholesky);
    fn cusolverDnCheevj / cusolverDnCheevj_bufferSize (syevj);
    fn cusolverDnCheevjBatched / cusolverDnCheevjBatched_bufferSize (syevj batched);
    fn cusolverDnCgesvdj / cusolverDnCgesvdj_bufferSize (gesvdj);
    fn cusolverDnCgesvdjBatched / cusolverDnCgesvdjBatched_bufferSize (gesvdj batched);
}

jacobi_routines! {
    dtype 3;
    fn cusolverDnZpotrfBatched / cusolverDnZpotrsBatched (cholesky);
    fn cusolverDnZheevj / cusolverDnZheevj_bufferSize (syevj);
    fn cusolverDnZheevjBatched / cusolverDnZheevjBatched_bufferSize (syevj batched);
    fn cusolverDnZgesvdj / cusolverDnZgesvdj_bufferSize (gesvdj);
    fn cusolverDnZgesvdjBatched / cusolverDnZgesvdjBatched_bufferSize (gesvdj batched);
}

/// A `gesvdaStridedBatched` call's operands: each matrix with its leading
/// dimension and its stride (elements) to the next one.
struct StridedSvd {
    a: (Dev, c_int, i64),
    s: (Dev, i64),
    u: (Dev, c_int, i64),
    v: (Dev, c_int, i64),
}

fn gesvda_call(
    handle: u64,
    dtype: u8,
    (jobz, rank, m, n): (c_int, c_int, c_int, c_int),
    ops: &StridedSvd,
    info: u64,
    batch: c_int,
) -> Call {
    Call::Gesvda {
        handle,
        dtype,
        jobz,
        rank,
        m,
        n,
        a: ops.a.0 as u64,
        lda: ops.a.1,
        stride_a: ops.a.2,
        s: ops.s.0 as u64,
        stride_s: ops.s.1,
        u: ops.u.0 as u64,
        ldu: ops.u.1,
        stride_u: ops.u.2,
        v: ops.v.0 as u64,
        ldv: ops.v.1,
        stride_v: ops.v.2,
        info,
        batch,
    }
}

/// One element type's `gesvdaStridedBatched` and its size query. The call
/// waits for the device, as cuSOLVER's does when it writes `h_R_nrmF`.
macro_rules! gesvda_routines {
    ($( fn $solve:ident / $size:ident (dtype $dtype:literal); )*) => {$(
        #[no_mangle]
        pub extern "C" fn $size(
            handle: Handle,
            jobz: c_int,
            rank: c_int,
            m: c_int,
            n: c_int,
            a: Dev,
            lda: c_int,
            stride_a: i64,
            s: Dev,
            stride_s: i64,
            u: Dev,
            ldu: c_int,
            stride_u: i64,
            v: Dev,
            ldv: c_int,
            stride_v: i64,
            lwork: *mut c_int,
            batch: c_int,
        ) -> c_int {
            guard(INTERNAL_ERROR, || {
                let ops = StridedSvd {
                    a: (a, lda, stride_a),
                    s: (s, stride_s),
                    u: (u, ldu, stride_u),
                    v: (v, ldv, stride_v),
                };
                let probe = |h| gesvda_call(h, $dtype, (jobz, rank, m, n), &ops, 0, batch);
                answer(lwork, buffer_size(handle, probe, times(lwork::gesvd(m, n), batch)))
            })
        }

        #[no_mangle]
        pub extern "C" fn $solve(
            handle: Handle,
            jobz: c_int,
            rank: c_int,
            m: c_int,
            n: c_int,
            a: Dev,
            lda: c_int,
            stride_a: i64,
            s: Dev,
            stride_s: i64,
            u: Dev,
            ldu: c_int,
            stride_u: i64,
            v: Dev,
            ldv: c_int,
            stride_v: i64,
            work: Dev,
            lwork: c_int,
            info: *mut c_int,
            h_r_nrm_f: *mut f64,
            batch: c_int,
        ) -> c_int {
            guard(INTERNAL_ERROR, || {
                let ops = StridedSvd {
                    a: (a, lda, stride_a),
                    s: (s, stride_s),
                    u: (u, ldu, stride_u),
                    v: (v, ldv, stride_v),
                };
                let ws = Workspace {
                    ptr: work as u64,
                    lwork: i64::from(lwork),
                    needed: times(lwork::gesvd(m, n), batch),
                    dtype: $dtype,
                };
                let build = |h| {
                    gesvda_call(h, $dtype, (jobz, rank, m, n), &ops, info as u64, batch)
                };
                match run_now(handle, Some(ws), build) {
                    Ok(residuals) => {
                        write_residuals(h_r_nrm_f, &residuals);
                        SUCCESS
                    }
                    Err(status) => status,
                }
            })
        }
    )*};
}

/// Writes the residual norms the server answered to the application's
/// host array, if it passed one.
fn write_residuals(out: *mut f64, bytes: &[u8]) {
    if out.is_null() {
        return;
    }
    for (i, chunk) in bytes.chunks_exact(8).enumerate() {
        let value = f64::from_le_bytes(chunk.try_into().unwrap_or([0; 8]));
        // The array holds batchSize doubles, one per matrix, as cuSOLVER's
        // contract says; the server answers exactly that many.
        let _ = write_out(out.wrapping_add(i), value);
    }
}

gesvda_routines! {
    fn cusolverDnSgesvdaStridedBatched / cusolverDnSgesvdaStridedBatched_bufferSize (dtype 0);
    fn cusolverDnDgesvdaStridedBatched / cusolverDnDgesvdaStridedBatched_bufferSize (dtype 1);
    fn cusolverDnCgesvdaStridedBatched / cusolverDnCgesvdaStridedBatched_bufferSize (dtype 2);
    fn cusolverDnZgesvdaStridedBatched / cusolverDnZgesvdaStridedBatched_bufferSize (dtype 3);
}
