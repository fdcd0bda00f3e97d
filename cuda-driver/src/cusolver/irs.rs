//! cuSOLVER's iterative-refinement solvers on a GPU.
//!
//! A `<t1><t2>gesv` the application called by name runs as that routine, so
//! that its pivots reach `dipiv`. Everything else (`<t1><t2>gels` and the
//! expert `cusolverDnIRSXgesv`/`IRSXgels`) runs through the expert API with
//! a `cusolverDnIRSParams_t` made for the call from the wire's settings
//! (precisions, refinement solver, tolerance, iterations, fallback). Every
//! entry point is optional: a library without one answers
//! [`SolverError::Missing`].

use std::ffi::{c_int, c_void};

use super::{check, int_ptr, ptr, Data, Handle, Int, IntPtr, Precision, SolverError, Status};
use crate::optional;

type TypedSize = unsafe extern "C" fn(
    Handle,
    Int,
    Int,
    Data,
    Int,
    IntPtr,
    Data,
    Int,
    Data,
    Int,
    Data,
    *mut usize,
) -> Status;
type Typed = unsafe extern "C" fn(
    Handle,
    Int,
    Int,
    Data,
    Int,
    IntPtr,
    Data,
    Int,
    Data,
    Int,
    Data,
    usize,
    IntPtr,
    IntPtr,
) -> Status;
type Object = *mut c_void;
type XgesvSize = unsafe extern "C" fn(Handle, Object, Int, Int, *mut usize) -> Status;
type XgelsSize = unsafe extern "C" fn(Handle, Object, Int, Int, Int, *mut usize) -> Status;
type Xgesv = unsafe extern "C" fn(
    Handle,
    Object,
    Object,
    Int,
    Int,
    Data,
    Int,
    Data,
    Int,
    Data,
    Int,
    Data,
    usize,
    IntPtr,
    IntPtr,
) -> Status;
type Xgels = unsafe extern "C" fn(
    Handle,
    Object,
    Object,
    Int,
    Int,
    Int,
    Data,
    Int,
    Data,
    Int,
    Data,
    Int,
    Data,
    usize,
    IntPtr,
    IntPtr,
) -> Status;

/// `cusolverPrecType_t` values of the real precisions, in the order of the
/// typed routines' table columns; the complex ones are 10 more.
const PRECISIONS: [c_int; 5] = [1203, 1204, 1205, 1206, 1207];

/// The typed gesv routines (solve, size) by main precision (S, D, C, Z) and
/// lowest precision (64F, 32F, 16F, 16BF, TF32).
const TYPED: [[Option<(&str, &str)>; 5]; 4] = [
    [
        None,
        Some(("cusolverDnSSgesv", "cusolverDnSSgesv_bufferSize")),
        Some(("cusolverDnSHgesv", "cusolverDnSHgesv_bufferSize")),
        Some(("cusolverDnSBgesv", "cusolverDnSBgesv_bufferSize")),
        Some(("cusolverDnSXgesv", "cusolverDnSXgesv_bufferSize")),
    ],
    [
        Some(("cusolverDnDDgesv", "cusolverDnDDgesv_bufferSize")),
        Some(("cusolverDnDSgesv", "cusolverDnDSgesv_bufferSize")),
        Some(("cusolverDnDHgesv", "cusolverDnDHgesv_bufferSize")),
        Some(("cusolverDnDBgesv", "cusolverDnDBgesv_bufferSize")),
        Some(("cusolverDnDXgesv", "cusolverDnDXgesv_bufferSize")),
    ],
    [
        None,
        Some(("cusolverDnCCgesv", "cusolverDnCCgesv_bufferSize")),
        Some(("cusolverDnCKgesv", "cusolverDnCKgesv_bufferSize")),
        Some(("cusolverDnCEgesv", "cusolverDnCEgesv_bufferSize")),
        Some(("cusolverDnCYgesv", "cusolverDnCYgesv_bufferSize")),
    ],
    [
        Some(("cusolverDnZZgesv", "cusolverDnZZgesv_bufferSize")),
        Some(("cusolverDnZCgesv", "cusolverDnZCgesv_bufferSize")),
        Some(("cusolverDnZKgesv", "cusolverDnZKgesv_bufferSize")),
        Some(("cusolverDnZEgesv", "cusolverDnZEgesv_bufferSize")),
        Some(("cusolverDnZYgesv", "cusolverDnZYgesv_bufferSize")),
    ],
];

/// The expert API's entry points.
struct Expert {
    params_create: unsafe extern "C" fn(*mut Object) -> Status,
    params_destroy: unsafe extern "C" fn(Object) -> Status,
    set_precisions: unsafe extern "C" fn(Object, c_int, c_int) -> Status,
    set_refinement: unsafe extern "C" fn(Object, c_int) -> Status,
    set_tol: unsafe extern "C" fn(Object, f64) -> Status,
    set_max_iters: unsafe extern "C" fn(Object, c_int) -> Status,
    enable_fallback: unsafe extern "C" fn(Object) -> Status,
    disable_fallback: unsafe extern "C" fn(Object) -> Status,
    infos_create: unsafe extern "C" fn(*mut Object) -> Status,
    infos_destroy: unsafe extern "C" fn(Object) -> Status,
    xgesv_size: XgesvSize,
    xgesv: Xgesv,
    xgels_size: XgelsSize,
    xgels: Xgels,
}

/// The iterative-refinement entry points this cuSOLVER has.
pub(super) struct IrsApi {
    typed: [[Option<(Typed, TypedSize)>; 5]; 4],
    expert: Option<Expert>,
}

impl IrsApi {
    /// # Safety
    ///
    /// As for [`crate::symbol`]: the types are the prototypes of
    /// `cusolverDn.h` (handles, params, infos and data as `void *`, enums as
    /// `int`), and `lib` outlives the pointers.
    pub(super) unsafe fn resolve(lib: &libloading::Library) -> Self {
        let typed = TYPED.map(|row| {
            row.map(|names| {
                let (solve, size) = names?;
                // SAFETY: forwarded from the caller.
                unsafe { Some((optional(lib, solve)?, optional(lib, size)?)) }
            })
        });
        // SAFETY: forwarded from the caller.
        let expert = unsafe {
            (|| {
                Some(Expert {
                    params_create: optional(lib, "cusolverDnIRSParamsCreate")?,
                    params_destroy: optional(lib, "cusolverDnIRSParamsDestroy")?,
                    set_precisions: optional(lib, "cusolverDnIRSParamsSetSolverPrecisions")?,
                    set_refinement: optional(lib, "cusolverDnIRSParamsSetRefinementSolver")?,
                    set_tol: optional(lib, "cusolverDnIRSParamsSetTol")?,
                    set_max_iters: optional(lib, "cusolverDnIRSParamsSetMaxIters")?,
                    enable_fallback: optional(lib, "cusolverDnIRSParamsEnableFallback")?,
                    disable_fallback: optional(lib, "cusolverDnIRSParamsDisableFallback")?,
                    infos_create: optional(lib, "cusolverDnIRSInfosCreate")?,
                    infos_destroy: optional(lib, "cusolverDnIRSInfosDestroy")?,
                    xgesv_size: optional(lib, "cusolverDnIRSXgesv_bufferSize")?,
                    xgesv: optional(lib, "cusolverDnIRSXgesv")?,
                    xgels_size: optional(lib, "cusolverDnIRSXgels_bufferSize")?,
                    xgels: optional(lib, "cusolverDnIRSXgels")?,
                })
            })()
        };
        Self { typed, expert }
    }
}

/// One IRS solve as the wire describes it (`rcud_proto`'s `Call::Irs`).
#[allow(missing_docs)] // named as in the cuSOLVER documentation
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Irs {
    /// The main precision: A, B, X.
    pub main: Precision,
    /// The `cusolverPrecType_t` of the factorization.
    pub lowest: c_int,
    /// Least squares (`gels`) rather than a square system.
    pub gels: bool,
    pub m: i32,
    pub n: i32,
    pub nrhs: i32,
    pub a: u64,
    pub lda: i32,
    /// Pivots out (0: none): a typed `gesv` the application called.
    pub ipiv: u64,
    pub b: u64,
    pub ldb: i32,
    pub x: u64,
    pub ldx: i32,
    pub info: u64,
    /// `cusolverIRSRefinement_t`.
    pub refine: c_int,
    pub max_iters: i32,
    /// 0: cuSOLVER's default.
    pub tol: f64,
    pub fallback: bool,
}

/// A guard that destroys an expert-API object.
struct Owned {
    raw: Object,
    destroy: unsafe extern "C" fn(Object) -> Status,
    what: &'static str,
}

impl Drop for Owned {
    fn drop(&mut self) {
        // SAFETY: `raw` was made by the matching create and is used by
        // nothing after this.
        let status = unsafe { (self.destroy)(self.raw) };
        if status != 0 {
            tracing::warn!("{} failed: cusolverStatus_t {status}", self.what);
        }
    }
}

fn make(
    create: unsafe extern "C" fn(*mut Object) -> Status,
    destroy: unsafe extern "C" fn(Object) -> Status,
    what: &'static str,
) -> Result<Owned, SolverError> {
    let mut raw: Object = std::ptr::null_mut();
    // SAFETY: `raw` is a valid out-pointer.
    check(unsafe { create(&mut raw) }, what)?;
    Ok(Owned { raw, destroy, what })
}

impl super::SolverHandle {
    /// Runs one IRS solve and waits for it: `niters`. The caller checked
    /// every range it touches against the client's allocations.
    pub fn run_irs(&mut self, irs: &Irs) -> Result<i32, SolverError> {
        self.ctx.bind()?;
        let api = self.api.clone();
        let h = self.raw;
        let complex = matches!(irs.main, Precision::C | Precision::Z);
        let real = if complex { irs.lowest - 10 } else { irs.lowest };
        let column = PRECISIONS.iter().position(|&p| p == real);
        let mut niters: c_int = 0;
        let mut bytes = 0usize;
        if irs.ipiv != 0 && !irs.gels {
            let call = "cusolverDn<t1><t2>gesv";
            let Some((solve, size)) = column.and_then(|c| api.irs.typed[irs.main.index()][c])
            else {
                return Err(SolverError::Missing { call });
            };
            // Every unsafe block below is sound because: the prototypes
            // match (`IrsApi::resolve`); `h` is a live handle on this
            // context's stream, which is current; the caller checked every
            // client range; the workspace holds what the size query
            // answered; `bytes`, `niters` are valid out-pointers.
            // SAFETY: see above.
            let status = unsafe {
                size(
                    h,
                    irs.n,
                    irs.nrhs,
                    ptr(irs.a),
                    irs.lda,
                    int_ptr(irs.ipiv),
                    ptr(irs.b),
                    irs.ldb,
                    ptr(irs.x),
                    irs.ldx,
                    std::ptr::null_mut(),
                    &mut bytes,
                )
            };
            check(status, "cusolverDn<t1><t2>gesv_bufferSize")?;
            let work = self.workspace.at_least(bytes as u64)?;
            // SAFETY: see above.
            let status = unsafe {
                solve(
                    h,
                    irs.n,
                    irs.nrhs,
                    ptr(irs.a),
                    irs.lda,
                    int_ptr(irs.ipiv),
                    ptr(irs.b),
                    irs.ldb,
                    ptr(irs.x),
                    irs.ldx,
                    ptr(work),
                    bytes,
                    &mut niters,
                    int_ptr(irs.info),
                )
            };
            check(status, call)?;
            self.ctx.sync_stream()?;
            return Ok(niters);
        }
        let Some(x) = api.irs.expert.as_ref() else {
            return Err(SolverError::Missing {
                call: "cusolverDnIRSXgesv",
            });
        };
        let params = make(
            x.params_create,
            x.params_destroy,
            "cusolverDnIRSParamsCreate",
        )?;
        let infos = make(x.infos_create, x.infos_destroy, "cusolverDnIRSInfosCreate")?;
        let main = match irs.main {
            Precision::S => 1204,
            Precision::D => 1203,
            Precision::C => 1214,
            Precision::Z => 1213,
        };
        let p = params.raw;
        // SAFETY: `p` is a live params object of this library.
        unsafe {
            check(
                (x.set_precisions)(p, main, irs.lowest),
                "cusolverDnIRSParamsSetSolverPrecisions",
            )?;
            check(
                (x.set_refinement)(p, irs.refine),
                "cusolverDnIRSParamsSetRefinementSolver",
            )?;
            check(
                (x.set_max_iters)(p, irs.max_iters),
                "cusolverDnIRSParamsSetMaxIters",
            )?;
            if irs.tol > 0.0 {
                check((x.set_tol)(p, irs.tol), "cusolverDnIRSParamsSetTol")?;
            }
            let fallback = if irs.fallback {
                x.enable_fallback
            } else {
                x.disable_fallback
            };
            check(fallback(p), "cusolverDnIRSParams{Enable,Disable}Fallback")?;
        }
        // SAFETY: as for the typed routine above; `p` and `infos` are live
        // objects of this library.
        let status = unsafe {
            if irs.gels {
                (x.xgels_size)(h, p, irs.m, irs.n, irs.nrhs, &mut bytes)
            } else {
                (x.xgesv_size)(h, p, irs.n, irs.nrhs, &mut bytes)
            }
        };
        check(status, "cusolverDnIRSX{gesv,gels}_bufferSize")?;
        let work = self.workspace.at_least(bytes as u64)?;
        // SAFETY: see above.
        let status = unsafe {
            if irs.gels {
                (x.xgels)(
                    h,
                    p,
                    infos.raw,
                    irs.m,
                    irs.n,
                    irs.nrhs,
                    ptr(irs.a),
                    irs.lda,
                    ptr(irs.b),
                    irs.ldb,
                    ptr(irs.x),
                    irs.ldx,
                    ptr(work),
                    bytes,
                    &mut niters,
                    int_ptr(irs.info),
                )
            } else {
                (x.xgesv)(
                    h,
                    p,
                    infos.raw,
                    irs.n,
                    irs.nrhs,
                    ptr(irs.a),
                    irs.lda,
                    ptr(irs.b),
                    irs.ldb,
                    ptr(irs.x),
                    irs.ldx,
                    ptr(work),
                    bytes,
                    &mut niters,
                    int_ptr(irs.info),
                )
            }
        };
        check(status, "cusolverDnIRSX{gesv,gels}")?;
        self.ctx.sync_stream()?;
        Ok(niters)
    }
}
