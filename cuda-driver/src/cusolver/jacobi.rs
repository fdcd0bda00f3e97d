//! cuSOLVER's Jacobi solvers and the approximate strided SVD on a GPU:
//! `syevj`/`heevj` and `syevjBatched`/`heevjBatched`, `gesvdj` and
//! `gesvdjBatched` (each with a `syevjInfo_t` / `gesvdjInfo_t` made for the
//! call from the wire's tolerance, sweep limit and sorting), and
//! `gesvdaStridedBatched`. Every entry point is optional: a library without
//! one answers [`SolverError::Missing`].

use std::ffi::c_void;

use super::{check, int_ptr, ptr, Data, Handle, Int, IntPtr, Precision, SolverError, Status};
use crate::optional;

type Object = *mut c_void;
type SyevjSize =
    unsafe extern "C" fn(Handle, Int, Int, Int, Data, Int, Data, IntPtr, Object) -> Status;
type Syevj = unsafe extern "C" fn(
    Handle,
    Int,
    Int,
    Int,
    Data,
    Int,
    Data,
    Data,
    Int,
    IntPtr,
    Object,
) -> Status;
type SyevjBatchedSize =
    unsafe extern "C" fn(Handle, Int, Int, Int, Data, Int, Data, IntPtr, Object, Int) -> Status;
type SyevjBatched = unsafe extern "C" fn(
    Handle,
    Int,
    Int,
    Int,
    Data,
    Int,
    Data,
    Data,
    Int,
    IntPtr,
    Object,
    Int,
) -> Status;
type GesvdjSize = unsafe extern "C" fn(
    Handle,
    Int,
    Int,
    Int,
    Int,
    Data,
    Int,
    Data,
    Data,
    Int,
    Data,
    Int,
    IntPtr,
    Object,
) -> Status;
type Gesvdj = unsafe extern "C" fn(
    Handle,
    Int,
    Int,
    Int,
    Int,
    Data,
    Int,
    Data,
    Data,
    Int,
    Data,
    Int,
    Data,
    Int,
    IntPtr,
    Object,
) -> Status;
type GesvdjBatchedSize = unsafe extern "C" fn(
    Handle,
    Int,
    Int,
    Int,
    Data,
    Int,
    Data,
    Data,
    Int,
    Data,
    Int,
    IntPtr,
    Object,
    Int,
) -> Status;
type GesvdjBatched = unsafe extern "C" fn(
    Handle,
    Int,
    Int,
    Int,
    Data,
    Int,
    Data,
    Data,
    Int,
    Data,
    Int,
    Data,
    Int,
    IntPtr,
    Object,
    Int,
) -> Status;
type GesvdaSize = unsafe extern "C" fn(
    Handle,
    Int,
    Int,
    Int,
    Int,
    Data,
    Int,
    i64,
    Data,
    i64,
    Data,
    Int,
    i64,
    Data,
    Int,
    i64,
    IntPtr,
    Int,
) -> Status;
type Gesvda = unsafe extern "C" fn(
    Handle,
    Int,
    Int,
    Int,
    Int,
    Data,
    Int,
    i64,
    Data,
    i64,
    Data,
    Int,
    i64,
    Data,
    Int,
    i64,
    Data,
    Int,
    IntPtr,
    *mut f64,
    Int,
) -> Status;

/// A `syevjInfo_t` or `gesvdjInfo_t` family: create, destroy and setters.
#[derive(Clone, Copy)]
struct Settings {
    create: unsafe extern "C" fn(*mut Object) -> Status,
    destroy: unsafe extern "C" fn(Object) -> Status,
    tolerance: unsafe extern "C" fn(Object, f64) -> Status,
    max_sweeps: unsafe extern "C" fn(Object, Int) -> Status,
    sort: unsafe extern "C" fn(Object, Int) -> Status,
}

/// The Jacobi and gesvda entry points this cuSOLVER has, each routine's
/// four forms indexed by [`Precision`].
pub(super) struct JacobiApi {
    syevj: Option<([SyevjSize; 4], [Syevj; 4], Settings)>,
    syevj_batched: Option<([SyevjBatchedSize; 4], [SyevjBatched; 4])>,
    gesvdj: Option<([GesvdjSize; 4], [Gesvdj; 4], Settings)>,
    gesvdj_batched: Option<([GesvdjBatchedSize; 4], [GesvdjBatched; 4])>,
    gesvda: Option<([GesvdaSize; 4], [Gesvda; 4])>,
}

/// The four forms of one routine, or None if the library lacks one.
macro_rules! optional_forms {
    ($lib:expr, $real:literal, $complex:literal) => {
        (|| {
            Some([
                optional($lib, concat!("cusolverDnS", $real))?,
                optional($lib, concat!("cusolverDnD", $real))?,
                optional($lib, concat!("cusolverDnC", $complex))?,
                optional($lib, concat!("cusolverDnZ", $complex))?,
            ])
        })()
    };
}

impl JacobiApi {
    /// # Safety
    ///
    /// As for [`crate::symbol`]: the types are the prototypes of
    /// `cusolverDn.h` (handles, info objects and data as `void *`, enums as
    /// `int`), and `lib` outlives the pointers.
    pub(super) unsafe fn resolve(lib: &libloading::Library) -> Self {
        // SAFETY: forwarded from the caller.
        unsafe {
            let settings = |family: &str| -> Option<Settings> {
                Some(match family {
                    "syevj" => Settings {
                        create: optional(lib, "cusolverDnCreateSyevjInfo")?,
                        destroy: optional(lib, "cusolverDnDestroySyevjInfo")?,
                        tolerance: optional(lib, "cusolverDnXsyevjSetTolerance")?,
                        max_sweeps: optional(lib, "cusolverDnXsyevjSetMaxSweeps")?,
                        sort: optional(lib, "cusolverDnXsyevjSetSortEig")?,
                    },
                    _ => Settings {
                        create: optional(lib, "cusolverDnCreateGesvdjInfo")?,
                        destroy: optional(lib, "cusolverDnDestroyGesvdjInfo")?,
                        tolerance: optional(lib, "cusolverDnXgesvdjSetTolerance")?,
                        max_sweeps: optional(lib, "cusolverDnXgesvdjSetMaxSweeps")?,
                        sort: optional(lib, "cusolverDnXgesvdjSetSortEig")?,
                    },
                })
            };
            Self {
                syevj: (|| {
                    Some((
                        optional_forms!(lib, "syevj_bufferSize", "heevj_bufferSize")?,
                        optional_forms!(lib, "syevj", "heevj")?,
                        settings("syevj")?,
                    ))
                })(),
                syevj_batched: (|| {
                    Some((
                        optional_forms!(lib, "syevjBatched_bufferSize", "heevjBatched_bufferSize")?,
                        optional_forms!(lib, "syevjBatched", "heevjBatched")?,
                    ))
                })(),
                gesvdj: (|| {
                    Some((
                        optional_forms!(lib, "gesvdj_bufferSize", "gesvdj_bufferSize")?,
                        optional_forms!(lib, "gesvdj", "gesvdj")?,
                        settings("gesvdj")?,
                    ))
                })(),
                gesvdj_batched: (|| {
                    Some((
                        optional_forms!(
                            lib,
                            "gesvdjBatched_bufferSize",
                            "gesvdjBatched_bufferSize"
                        )?,
                        optional_forms!(lib, "gesvdjBatched", "gesvdjBatched")?,
                    ))
                })(),
                gesvda: (|| {
                    Some((
                        optional_forms!(
                            lib,
                            "gesvdaStridedBatched_bufferSize",
                            "gesvdaStridedBatched_bufferSize"
                        )?,
                        optional_forms!(lib, "gesvdaStridedBatched", "gesvdaStridedBatched")?,
                    ))
                })(),
            }
        }
    }
}

/// The Jacobi settings of a call: tolerance (0: cuSOLVER's default), the
/// sweep limit (0: the default) and whether to sort.
#[allow(missing_docs)]
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct JacobiSettings {
    pub tol: f64,
    pub max_sweeps: i32,
    pub sort: i32,
}

/// One Jacobi or gesvda routine with its arguments as `cusolverDn.h` names
/// them (device addresses as numbers). `batched` selects the `*Batched`
/// form, which takes `batch` matrices `lda * n` elements apart.
#[allow(missing_docs)] // named as in the cuSOLVER documentation
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Jacobi {
    Syevj {
        jobz: i32,
        uplo: i32,
        n: i32,
        a: u64,
        lda: i32,
        w: u64,
        info: u64,
        batched: bool,
        batch: i32,
        settings: JacobiSettings,
    },
    Gesvdj {
        jobz: i32,
        econ: i32,
        m: i32,
        n: i32,
        a: u64,
        lda: i32,
        s: u64,
        u: u64,
        ldu: i32,
        v: u64,
        ldv: i32,
        info: u64,
        batched: bool,
        batch: i32,
        settings: JacobiSettings,
    },
    Gesvda {
        jobz: i32,
        rank: i32,
        m: i32,
        n: i32,
        a: (u64, i32, i64),
        s: (u64, i64),
        u: (u64, i32, i64),
        v: (u64, i32, i64),
        info: u64,
        batch: i32,
    },
}

/// A guard that destroys an info object.
struct Owned {
    raw: Object,
    destroy: unsafe extern "C" fn(Object) -> Status,
}

impl Drop for Owned {
    fn drop(&mut self) {
        // SAFETY: `raw` was made by the matching create and is used by
        // nothing after this.
        let status = unsafe { (self.destroy)(self.raw) };
        if status != 0 {
            tracing::warn!("destroying a Jacobi info object failed: cusolverStatus_t {status}");
        }
    }
}

/// A settings object made for one call.
fn made(family: &Settings, s: &JacobiSettings) -> Result<Owned, SolverError> {
    let mut raw: Object = std::ptr::null_mut();
    // SAFETY: `raw` is a valid out-pointer.
    let status = unsafe { (family.create)(&mut raw) };
    check(status, "cusolverDnCreate{Syevj,Gesvdj}Info")?;
    let owned = Owned {
        raw,
        destroy: family.destroy,
    };
    // SAFETY: `raw` is a live info object of this library.
    unsafe {
        if s.tol > 0.0 {
            check((family.tolerance)(raw, s.tol), "cusolverDnX*SetTolerance")?;
        }
        if s.max_sweeps > 0 {
            check(
                (family.max_sweeps)(raw, s.max_sweeps),
                "cusolverDnX*SetMaxSweeps",
            )?;
        }
        check((family.sort)(raw, s.sort), "cusolverDnX*SetSortEig")?;
    }
    Ok(owned)
}

impl super::SolverHandle {
    /// Runs one Jacobi or gesvda routine in precision `p` and waits for it.
    /// Answers what goes to the host: gesvda's `h_R_nrmF` (`batch` f64),
    /// nothing for the others. The caller checked every range it touches.
    pub fn run_jacobi(&mut self, p: Precision, op: &Jacobi) -> Result<Vec<u8>, SolverError> {
        self.ctx.bind()?;
        let api = self.api.clone();
        let (h, i) = (self.raw, p.index());
        let mut lwork: Int = 0;
        let mut host = Vec::new();
        // Every unsafe block below is sound because: the prototypes match
        // (`JacobiApi::resolve`); `h` is a live handle on this context's
        // stream, which is current; the caller checked every client range;
        // the workspace holds what the size query answered; `lwork` and
        // `host` are valid out-pointers of the sizes cuSOLVER writes.
        let (status, call) = match *op {
            Jacobi::Syevj {
                jobz,
                uplo,
                n,
                a,
                lda,
                w,
                info,
                batched,
                batch,
                settings,
            } => {
                let Some((size, run, family)) = api.jacobi.syevj.as_ref() else {
                    return Err(SolverError::Missing {
                        call: "cusolverDn?syevj",
                    });
                };
                let params = made(family, &settings)?;
                if batched {
                    let Some((bsize, brun)) = api.jacobi.syevj_batched.as_ref() else {
                        return Err(SolverError::Missing {
                            call: "cusolverDn?syevjBatched",
                        });
                    };
                    let name = "cusolverDn?syevjBatched_bufferSize";
                    // SAFETY: see above.
                    let status = unsafe {
                        (bsize[i])(
                            h,
                            jobz,
                            uplo,
                            n,
                            ptr(a),
                            lda,
                            ptr(w),
                            &mut lwork,
                            params.raw,
                            batch,
                        )
                    };
                    check(status, name)?;
                    let (work, _) = self.work(p, lwork, 0, name)?;
                    // SAFETY: see above.
                    let status = unsafe {
                        (brun[i])(
                            h,
                            jobz,
                            uplo,
                            n,
                            ptr(a),
                            lda,
                            ptr(w),
                            ptr(work),
                            lwork,
                            int_ptr(info),
                            params.raw,
                            batch,
                        )
                    };
                    check(status, "cusolverDn?syevjBatched")?;
                    self.ctx.sync_stream()?;
                    drop(params);
                    return Ok(Vec::new());
                }
                let name = "cusolverDn?syevj_bufferSize";
                // SAFETY: see above.
                let status = unsafe {
                    (size[i])(
                        h,
                        jobz,
                        uplo,
                        n,
                        ptr(a),
                        lda,
                        ptr(w),
                        &mut lwork,
                        params.raw,
                    )
                };
                check(status, name)?;
                let (work, _) = self.work(p, lwork, 0, name)?;
                // SAFETY: see above.
                let status = unsafe {
                    (run[i])(
                        h,
                        jobz,
                        uplo,
                        n,
                        ptr(a),
                        lda,
                        ptr(w),
                        ptr(work),
                        lwork,
                        int_ptr(info),
                        params.raw,
                    )
                };
                check(status, "cusolverDn?syevj")?;
                // cuSOLVER writes the sweeps and residual into the info
                // object: it lives until the work is done.
                self.ctx.sync_stream()?;
                drop(params);
                return Ok(Vec::new());
            }
            Jacobi::Gesvdj {
                jobz,
                econ,
                m,
                n,
                a,
                lda,
                s,
                u,
                ldu,
                v,
                ldv,
                info,
                batched,
                batch,
                settings,
            } => {
                let Some((size, run, family)) = api.jacobi.gesvdj.as_ref() else {
                    return Err(SolverError::Missing {
                        call: "cusolverDn?gesvdj",
                    });
                };
                let params = made(family, &settings)?;
                if batched {
                    let Some((bsize, brun)) = api.jacobi.gesvdj_batched.as_ref() else {
                        return Err(SolverError::Missing {
                            call: "cusolverDn?gesvdjBatched",
                        });
                    };
                    let name = "cusolverDn?gesvdjBatched_bufferSize";
                    // SAFETY: see above.
                    let status = unsafe {
                        (bsize[i])(
                            h,
                            jobz,
                            m,
                            n,
                            ptr(a),
                            lda,
                            ptr(s),
                            ptr(u),
                            ldu,
                            ptr(v),
                            ldv,
                            &mut lwork,
                            params.raw,
                            batch,
                        )
                    };
                    check(status, name)?;
                    let (work, _) = self.work(p, lwork, 0, name)?;
                    // SAFETY: see above.
                    let status = unsafe {
                        (brun[i])(
                            h,
                            jobz,
                            m,
                            n,
                            ptr(a),
                            lda,
                            ptr(s),
                            ptr(u),
                            ldu,
                            ptr(v),
                            ldv,
                            ptr(work),
                            lwork,
                            int_ptr(info),
                            params.raw,
                            batch,
                        )
                    };
                    check(status, "cusolverDn?gesvdjBatched")?;
                    self.ctx.sync_stream()?;
                    drop(params);
                    return Ok(Vec::new());
                }
                let name = "cusolverDn?gesvdj_bufferSize";
                // SAFETY: see above.
                let status = unsafe {
                    (size[i])(
                        h,
                        jobz,
                        econ,
                        m,
                        n,
                        ptr(a),
                        lda,
                        ptr(s),
                        ptr(u),
                        ldu,
                        ptr(v),
                        ldv,
                        &mut lwork,
                        params.raw,
                    )
                };
                check(status, name)?;
                let (work, _) = self.work(p, lwork, 0, name)?;
                // SAFETY: see above.
                let status = unsafe {
                    (run[i])(
                        h,
                        jobz,
                        econ,
                        m,
                        n,
                        ptr(a),
                        lda,
                        ptr(s),
                        ptr(u),
                        ldu,
                        ptr(v),
                        ldv,
                        ptr(work),
                        lwork,
                        int_ptr(info),
                        params.raw,
                    )
                };
                check(status, "cusolverDn?gesvdj")?;
                // cuSOLVER writes the sweeps and residual into the info
                // object: it lives until the work is done.
                self.ctx.sync_stream()?;
                drop(params);
                return Ok(Vec::new());
            }
            Jacobi::Gesvda {
                jobz,
                rank,
                m,
                n,
                a,
                s,
                u,
                v,
                info,
                batch,
            } => {
                let Some((size, run)) = api.jacobi.gesvda.as_ref() else {
                    return Err(SolverError::Missing {
                        call: "cusolverDn?gesvdaStridedBatched",
                    });
                };
                let name = "cusolverDn?gesvdaStridedBatched_bufferSize";
                // SAFETY: see above.
                let status = unsafe {
                    (size[i])(
                        h,
                        jobz,
                        rank,
                        m,
                        n,
                        ptr(a.0),
                        a.1,
                        a.2,
                        ptr(s.0),
                        s.1,
                        ptr(u.0),
                        u.1,
                        u.2,
                        ptr(v.0),
                        v.1,
                        v.2,
                        &mut lwork,
                        batch,
                    )
                };
                check(status, name)?;
                let (work, _) = self.work(p, lwork, 0, name)?;
                host.resize(usize::try_from(batch.max(0)).unwrap_or(0), 0f64);
                // SAFETY: see above; `host` holds `batch` doubles.
                let status = unsafe {
                    (run[i])(
                        h,
                        jobz,
                        rank,
                        m,
                        n,
                        ptr(a.0),
                        a.1,
                        a.2,
                        ptr(s.0),
                        s.1,
                        ptr(u.0),
                        u.1,
                        u.2,
                        ptr(v.0),
                        v.1,
                        v.2,
                        ptr(work),
                        lwork,
                        int_ptr(info),
                        host.as_mut_ptr(),
                        batch,
                    )
                };
                (status, "cusolverDn?gesvdaStridedBatched")
            }
        };
        check(status, call)?;
        self.ctx.sync_stream()?;
        Ok(host.iter().flat_map(|x| x.to_le_bytes()).collect())
    }
}
