//! The iterative-refinement solvers: `cusolverDn<t1><t2>gesv` and
//! `<t1><t2>gels` for every pair of main and lowest precision, their expert
//! forms `cusolverDnIRSXgesv`/`IRSXgels`, and the `cusolverDnIRSParams_t` /
//! `cusolverDnIRSInfos_t` objects.
//!
//! Parameters and infos are the application's: they live here, the
//! parameters travel with each solve, and a solve's iteration count (and,
//! when asked, its residual history) come back into the infos. A solve
//! writes `niters` to host memory, so it waits for the device, as
//! cuSOLVER's does.

// C names, exported (unreachable from Rust, reachable from C).
#![allow(non_snake_case, unreachable_pub)]

use std::collections::HashMap;
use std::os::raw::{c_int, c_void};
use std::sync::Mutex;

use rcud_proto::math::solver::{
    element_size, irs_lowest_allowed, main_precision, Call, PREC_COMPLEX, PREC_R_16BF, PREC_R_16F,
    PREC_R_32F, PREC_R_64F, PREC_R_TF32, REFINE_CLASSICAL, REFINE_LAST, REFINE_NOT_SET,
};

use super::{handle_stream, run_now, Handle, Workspace, INTERNAL_ERROR, INVALID_VALUE, SUCCESS};
use crate::ffi::write_out;
use crate::math::guard;

/// A device pointer the application passed.
type Dev = *mut c_void;
/// `cusolverDnIRSParams_t` / `cusolverDnIRSInfos_t`: an id here.
type Object = *mut c_void;

/// `CUSOLVER_STATUS_IRS_PARAMS_NOT_INITIALIZED`.
const PARAMS_NOT_INITIALIZED: c_int = 12;
/// `CUSOLVER_STATUS_IRS_PARAMS_INVALID`.
const PARAMS_INVALID: c_int = 13;
/// `CUSOLVER_STATUS_IRS_PARAMS_INVALID_PREC`.
const PARAMS_INVALID_PREC: c_int = 14;
/// `CUSOLVER_STATUS_IRS_PARAMS_INVALID_REFINE`.
const PARAMS_INVALID_REFINE: c_int = 15;
/// `CUSOLVER_STATUS_IRS_PARAMS_INVALID_MAXITER`.
const PARAMS_INVALID_MAXITER: c_int = 16;
/// `CUSOLVER_STATUS_IRS_NOT_SUPPORTED`: an underdetermined least squares.
const IRS_NOT_SUPPORTED: c_int = 21;
/// `CUSOLVER_STATUS_IRS_NRHS_NOT_SUPPORTED_FOR_REFINE_GMRES`.
const NRHS_NOT_SUPPORTED_FOR_GMRES: c_int = 23;
/// `CUSOLVER_STATUS_IRS_INFOS_NOT_INITIALIZED`.
const INFOS_NOT_INITIALIZED: c_int = 25;

/// cuSOLVER's default refinement steps.
const DEFAULT_MAX_ITERS: c_int = 50;

/// A `cusolverDnIRSParams_t`.
#[derive(Clone, Copy, Debug)]
struct Params {
    main: Option<c_int>,
    lowest: Option<c_int>,
    refine: c_int,
    tol: f64,
    max_iters: c_int,
    fallback: bool,
}

impl Default for Params {
    fn default() -> Self {
        Self {
            main: None,
            lowest: None,
            refine: REFINE_NOT_SET,
            tol: 0.0,
            max_iters: DEFAULT_MAX_ITERS,
            fallback: true,
        }
    }
}

/// A `cusolverDnIRSInfos_t`: what the last solve that named it reported.
#[derive(Debug, Default)]
struct Infos {
    niters: c_int,
    max_iters: c_int,
    residual_requested: bool,
    /// (iteration, residual norm) rows, in the main precision's real type:
    /// f64 pairs, or f32 pairs for single-precision problems. None when the
    /// server sent none (a GPU's cuSOLVER keeps its history to itself).
    history: Option<Vec<u8>>,
}

/// The live objects, by id (the value the application holds).
#[derive(Default)]
struct Objects {
    last: u64,
    params: HashMap<u64, Params>,
    infos: HashMap<u64, Infos>,
}

static OBJECTS: Mutex<Option<Objects>> = Mutex::new(None);

fn with_objects<R>(f: impl FnOnce(&mut Objects) -> R) -> R {
    let mut guard = OBJECTS
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    f(guard.get_or_insert_with(Objects::default))
}

fn new_id(objects: &mut Objects) -> u64 {
    objects.last += 1;
    // Ids look like no small integer an application might pass by mistake.
    0x1125_0000_0000 + objects.last
}

fn set_params(params: Object, set: impl FnOnce(&mut Params) -> c_int) -> c_int {
    with_objects(|o| match o.params.get_mut(&(params as u64)) {
        Some(p) => set(p),
        None => PARAMS_NOT_INITIALIZED,
    })
}

fn valid_precision(prec: c_int) -> bool {
    let real = if prec > PREC_R_TF32 {
        prec - PREC_COMPLEX
    } else {
        prec
    };
    matches!(
        real,
        PREC_R_64F | PREC_R_32F | PREC_R_16F | PREC_R_16BF | PREC_R_TF32
    )
}

#[no_mangle]
pub extern "C" fn cusolverDnIRSParamsCreate(out: *mut Object) -> c_int {
    guard(INTERNAL_ERROR, || {
        if out.is_null() {
            return INVALID_VALUE;
        }
        let id = with_objects(|o| {
            let id = new_id(o);
            o.params.insert(id, Params::default());
            id
        });
        match write_out(out, id as Object) {
            Ok(()) => SUCCESS,
            Err(_) => INVALID_VALUE,
        }
    })
}

#[no_mangle]
pub extern "C" fn cusolverDnIRSParamsDestroy(params: Object) -> c_int {
    guard(INTERNAL_ERROR, || {
        with_objects(|o| match o.params.remove(&(params as u64)) {
            Some(_) => SUCCESS,
            None => PARAMS_NOT_INITIALIZED,
        })
    })
}

#[no_mangle]
pub extern "C" fn cusolverDnIRSParamsSetRefinementSolver(params: Object, solver: c_int) -> c_int {
    guard(INTERNAL_ERROR, || {
        if !(REFINE_NOT_SET..=REFINE_LAST).contains(&solver) {
            return PARAMS_INVALID_REFINE;
        }
        set_params(params, |p| {
            p.refine = solver;
            SUCCESS
        })
    })
}

#[no_mangle]
pub extern "C" fn cusolverDnIRSParamsSetSolverMainPrecision(params: Object, prec: c_int) -> c_int {
    guard(INTERNAL_ERROR, || {
        if !valid_precision(prec) {
            return PARAMS_INVALID_PREC;
        }
        set_params(params, |p| {
            p.main = Some(prec);
            SUCCESS
        })
    })
}

#[no_mangle]
pub extern "C" fn cusolverDnIRSParamsSetSolverLowestPrecision(
    params: Object,
    prec: c_int,
) -> c_int {
    guard(INTERNAL_ERROR, || {
        if !valid_precision(prec) {
            return PARAMS_INVALID_PREC;
        }
        set_params(params, |p| {
            p.lowest = Some(prec);
            SUCCESS
        })
    })
}

#[no_mangle]
pub extern "C" fn cusolverDnIRSParamsSetSolverPrecisions(
    params: Object,
    main: c_int,
    lowest: c_int,
) -> c_int {
    guard(INTERNAL_ERROR, || {
        if !valid_precision(main) || !valid_precision(lowest) {
            return PARAMS_INVALID_PREC;
        }
        set_params(params, |p| {
            p.main = Some(main);
            p.lowest = Some(lowest);
            SUCCESS
        })
    })
}

#[no_mangle]
pub extern "C" fn cusolverDnIRSParamsSetTol(params: Object, tol: f64) -> c_int {
    guard(INTERNAL_ERROR, || {
        if tol.is_nan() || tol < 0.0 {
            return PARAMS_INVALID;
        }
        set_params(params, |p| {
            p.tol = tol;
            SUCCESS
        })
    })
}

/// The inner tolerance belongs to the two-level GMRES solvers, which run
/// as classical refinement here (see `rcud_math::solver::irs`): kept, not
/// used.
#[no_mangle]
pub extern "C" fn cusolverDnIRSParamsSetTolInner(params: Object, tol: f64) -> c_int {
    guard(INTERNAL_ERROR, || {
        if tol.is_nan() || tol < 0.0 {
            return PARAMS_INVALID;
        }
        set_params(params, |_| SUCCESS)
    })
}

#[no_mangle]
pub extern "C" fn cusolverDnIRSParamsSetMaxIters(params: Object, max_iters: c_int) -> c_int {
    guard(INTERNAL_ERROR, || {
        if max_iters <= 0 {
            return PARAMS_INVALID_MAXITER;
        }
        set_params(params, |p| {
            p.max_iters = max_iters;
            SUCCESS
        })
    })
}

/// Inner iterations count against the total (`SetMaxIters`), as
/// cuSOLVER's do: a larger value than the total is refused.
#[no_mangle]
pub extern "C" fn cusolverDnIRSParamsSetMaxItersInner(params: Object, inner: c_int) -> c_int {
    guard(INTERNAL_ERROR, || {
        set_params(params, |p| {
            if inner <= 0 || inner > p.max_iters {
                PARAMS_INVALID
            } else {
                SUCCESS
            }
        })
    })
}

#[no_mangle]
pub extern "C" fn cusolverDnIRSParamsGetMaxIters(params: Object, out: *mut c_int) -> c_int {
    guard(INTERNAL_ERROR, || {
        let Some(p) = with_objects(|o| o.params.get(&(params as u64)).copied()) else {
            return PARAMS_NOT_INITIALIZED;
        };
        match write_out(out, p.max_iters) {
            Ok(()) => SUCCESS,
            Err(_) => INVALID_VALUE,
        }
    })
}

#[no_mangle]
pub extern "C" fn cusolverDnIRSParamsEnableFallback(params: Object) -> c_int {
    guard(INTERNAL_ERROR, || {
        set_params(params, |p| {
            p.fallback = true;
            SUCCESS
        })
    })
}

#[no_mangle]
pub extern "C" fn cusolverDnIRSParamsDisableFallback(params: Object) -> c_int {
    guard(INTERNAL_ERROR, || {
        set_params(params, |p| {
            p.fallback = false;
            SUCCESS
        })
    })
}

#[no_mangle]
pub extern "C" fn cusolverDnIRSInfosCreate(out: *mut Object) -> c_int {
    guard(INTERNAL_ERROR, || {
        if out.is_null() {
            return INVALID_VALUE;
        }
        let id = with_objects(|o| {
            let id = new_id(o);
            o.infos.insert(id, Infos::default());
            id
        });
        match write_out(out, id as Object) {
            Ok(()) => SUCCESS,
            Err(_) => INVALID_VALUE,
        }
    })
}

#[no_mangle]
pub extern "C" fn cusolverDnIRSInfosDestroy(infos: Object) -> c_int {
    guard(INTERNAL_ERROR, || {
        with_objects(|o| match o.infos.remove(&(infos as u64)) {
            Some(_) => SUCCESS,
            None => INFOS_NOT_INITIALIZED,
        })
    })
}

fn read_infos(infos: Object, out: *mut c_int, field: impl FnOnce(&Infos) -> c_int) -> c_int {
    let Some(value) = with_objects(|o| o.infos.get(&(infos as u64)).map(field)) else {
        return INFOS_NOT_INITIALIZED;
    };
    match write_out(out, value) {
        Ok(()) => SUCCESS,
        Err(_) => INVALID_VALUE,
    }
}

#[no_mangle]
pub extern "C" fn cusolverDnIRSInfosGetNiters(infos: Object, out: *mut c_int) -> c_int {
    guard(INTERNAL_ERROR, || read_infos(infos, out, |i| i.niters))
}

/// One-level refinement: the outer loop is the only loop.
#[no_mangle]
pub extern "C" fn cusolverDnIRSInfosGetOuterNiters(infos: Object, out: *mut c_int) -> c_int {
    guard(INTERNAL_ERROR, || read_infos(infos, out, |i| i.niters))
}

#[no_mangle]
pub extern "C" fn cusolverDnIRSInfosGetMaxIters(infos: Object, out: *mut c_int) -> c_int {
    guard(INTERNAL_ERROR, || read_infos(infos, out, |i| i.max_iters))
}

#[no_mangle]
pub extern "C" fn cusolverDnIRSInfosRequestResidual(infos: Object) -> c_int {
    guard(INTERNAL_ERROR, || {
        with_objects(|o| match o.infos.get_mut(&(infos as u64)) {
            Some(i) => {
                i.residual_requested = true;
                SUCCESS
            }
            None => INFOS_NOT_INITIALIZED,
        })
    })
}

/// A pointer to the (iteration, residual norm) rows of the last solve,
/// valid until the infos are destroyed or used again.
#[no_mangle]
pub extern "C" fn cusolverDnIRSInfosGetResidualHistory(
    infos: Object,
    out: *mut *mut c_void,
) -> c_int {
    guard(INTERNAL_ERROR, || {
        let ptr = with_objects(|o| {
            o.infos.get_mut(&(infos as u64)).map(|i| {
                if !i.residual_requested {
                    // cuSOLVER refuses until residuals are asked for.
                    Err(INVALID_VALUE)
                } else {
                    match i.history.as_mut() {
                        Some(rows) => Ok(rows.as_mut_ptr().cast::<c_void>()),
                        None => Err(super::NOT_SUPPORTED),
                    }
                }
            })
        });
        match ptr {
            None => INFOS_NOT_INITIALIZED,
            Some(Err(status)) => status,
            Some(Ok(p)) => match write_out(out, p) {
                Ok(()) => SUCCESS,
                Err(_) => INVALID_VALUE,
            },
        }
    })
}

/// The shape of one IRS problem.
#[derive(Clone, Copy)]
struct Problem {
    gels: bool,
    m: c_int,
    n: c_int,
    nrhs: c_int,
    a: (Dev, c_int),
    ipiv: *mut c_int,
    b: (Dev, c_int),
    x: (Dev, c_int),
}

/// How a solve runs: the main element type (S, D, C, Z) and the params.
#[derive(Clone, Copy)]
struct Run {
    dtype: u8,
    lowest: c_int,
    params: Params,
}

/// Bytes of one element of the `cusolverPrecType_t` `prec`.
fn precision_bytes(prec: c_int) -> u64 {
    let (real, complex) = if prec > PREC_R_TF32 {
        (prec - PREC_COMPLEX, 2)
    } else {
        (prec, 1)
    };
    complex
        * match real {
            PREC_R_64F => 8,
            PREC_R_16F | PREC_R_16BF => 2,
            _ => 4,
        }
}

/// The workspace bytes an IRS solve asks for: the low-precision copy of A
/// and of the right-hand sides, and the main-precision residuals.
fn workspace_bytes(dtype: u8, lowest: c_int, gels: bool, m: c_int, n: c_int, nrhs: c_int) -> u64 {
    let dim = |v: c_int| u64::try_from(v.max(0)).unwrap_or(0);
    let (m, n, nrhs) = (dim(m), dim(n), dim(nrhs));
    let main = element_size(dtype).unwrap_or(8);
    let low = precision_bytes(lowest);
    let factors = if gels { m * n + n } else { n * n };
    // Whole elements of the main type: the check counts those.
    (low * (factors + m * nrhs) + main * (m + n) * nrhs)
        .div_ceil(main)
        .max(1)
        * main
}

fn call(handle: u64, run: &Run, p: &Problem, info: u64, history: bool) -> Call {
    Call::Irs {
        handle,
        dtype: run.dtype,
        lowest: run.lowest,
        gels: u8::from(p.gels),
        m: p.m,
        n: p.n,
        nrhs: p.nrhs,
        a: p.a.0 as u64,
        lda: p.a.1,
        ipiv: p.ipiv as u64,
        b: p.b.0 as u64,
        ldb: p.b.1,
        x: p.x.0 as u64,
        ldx: p.x.1,
        info,
        // The emulated device runs every solver but NONE as classical
        // refinement; a GPU runs the one asked for.
        refine: run.params.refine,
        max_iters: run.params.max_iters,
        tol: run.params.tol,
        fallback: u8::from(run.params.fallback),
        history: u8::from(history),
    }
}

/// Answers a size query: the handle, the problem's shape, the bytes.
fn size_query(handle: Handle, run: &Run, p: &Problem, out: *mut usize) -> c_int {
    if handle_stream(handle).is_none() {
        return super::NOT_INITIALIZED;
    }
    if p.gels && p.m < p.n {
        return IRS_NOT_SUPPORTED;
    }
    if p.m < 0 || p.n < 0 || p.nrhs < 0 {
        return INVALID_VALUE;
    }
    let bytes = workspace_bytes(run.dtype, run.lowest, p.gels, p.m, p.n, p.nrhs);
    match write_out(out, usize::try_from(bytes).unwrap_or(usize::MAX)) {
        Ok(()) => SUCCESS,
        Err(_) => INVALID_VALUE,
    }
}

/// Runs one IRS solve and writes `niters` (and, for the expert API, the
/// infos).
fn solve(
    handle: Handle,
    run: &Run,
    p: &Problem,
    (work, lwork_bytes): (Dev, usize),
    (niters, info): (*mut c_int, *mut c_int),
    infos: Option<u64>,
) -> c_int {
    if p.gels && p.m < p.n {
        return IRS_NOT_SUPPORTED;
    }
    if niters.is_null() {
        return INVALID_VALUE;
    }
    let es = element_size(run.dtype).unwrap_or(8);
    let needed = workspace_bytes(run.dtype, run.lowest, p.gels, p.m, p.n, p.nrhs);
    let ws = Workspace {
        ptr: work as u64,
        lwork: i64::try_from(lwork_bytes as u64 / es).unwrap_or(i64::MAX),
        needed: i64::try_from(needed.div_ceil(es)).unwrap_or(i64::MAX),
        dtype: run.dtype,
    };
    let history = infos
        .is_some_and(|id| with_objects(|o| o.infos.get(&id).is_some_and(|i| i.residual_requested)));
    let out = match run_now(handle, Some(ws), |h| call(h, run, p, info as u64, history)) {
        Ok(out) => out,
        Err(status) => return status,
    };
    let Some((count, norms)) = out.split_first_chunk::<4>() else {
        return INTERNAL_ERROR;
    };
    let count = c_int::from_le_bytes(*count);
    if write_out(niters, count).is_err() {
        return INVALID_VALUE;
    }
    if let Some(id) = infos {
        let single = matches!(run.dtype, 0 | 2);
        let mut rows = Vec::new();
        for (step, norm) in norms.chunks_exact(8).enumerate() {
            let norm = f64::from_le_bytes(norm.try_into().unwrap_or([0; 8]));
            if single {
                rows.extend_from_slice(&(step as f32).to_ne_bytes());
                rows.extend_from_slice(&(norm as f32).to_ne_bytes());
            } else {
                rows.extend_from_slice(&(step as f64).to_ne_bytes());
                rows.extend_from_slice(&norm.to_ne_bytes());
            }
        }
        with_objects(|o| {
            if let Some(i) = o.infos.get_mut(&id) {
                i.niters = count;
                i.max_iters = run.params.max_iters;
                i.history = (!norms.is_empty()).then_some(rows);
            }
        });
    }
    SUCCESS
}

/// The run an expert call describes, or its status: the params must name
/// a main precision matching the problem's and a lowest one it allows, and
/// a refinement solver.
fn expert_run(params: Object, nrhs: c_int) -> Result<Run, c_int> {
    let Some(p) = with_objects(|o| o.params.get(&(params as u64)).copied()) else {
        return Err(PARAMS_NOT_INITIALIZED);
    };
    let main = p.main.ok_or(PARAMS_INVALID_PREC)?;
    let dtype = (0..4u8)
        .find(|&d| main_precision(d) == Some(main))
        .ok_or(PARAMS_INVALID_PREC)?;
    let lowest = p.lowest.unwrap_or(main);
    if !irs_lowest_allowed(dtype, lowest) {
        return Err(PARAMS_INVALID_PREC);
    }
    if p.refine == REFINE_NOT_SET {
        return Err(PARAMS_INVALID_REFINE);
    }
    // GMRES and its variants take one right-hand side.
    if p.refine > REFINE_CLASSICAL && nrhs > 1 {
        return Err(NRHS_NOT_SUPPORTED_FOR_GMRES);
    }
    Ok(Run {
        dtype,
        lowest,
        params: p,
    })
}

#[no_mangle]
pub extern "C" fn cusolverDnIRSXgesv_bufferSize(
    handle: Handle,
    params: Object,
    n: c_int,
    nrhs: c_int,
    out: *mut usize,
) -> c_int {
    guard(INTERNAL_ERROR, || {
        let run = match expert_run(params, 1) {
            Ok(run) => run,
            Err(status) => return status,
        };
        let p = Problem {
            gels: false,
            m: n,
            n,
            nrhs,
            a: (std::ptr::null_mut(), 1),
            ipiv: std::ptr::null_mut(),
            b: (std::ptr::null_mut(), 1),
            x: (std::ptr::null_mut(), 1),
        };
        size_query(handle, &run, &p, out)
    })
}

#[no_mangle]
pub extern "C" fn cusolverDnIRSXgels_bufferSize(
    handle: Handle,
    params: Object,
    m: c_int,
    n: c_int,
    nrhs: c_int,
    out: *mut usize,
) -> c_int {
    guard(INTERNAL_ERROR, || {
        let run = match expert_run(params, 1) {
            Ok(run) => run,
            Err(status) => return status,
        };
        let p = Problem {
            gels: true,
            m,
            n,
            nrhs,
            a: (std::ptr::null_mut(), 1),
            ipiv: std::ptr::null_mut(),
            b: (std::ptr::null_mut(), 1),
            x: (std::ptr::null_mut(), 1),
        };
        size_query(handle, &run, &p, out)
    })
}

#[no_mangle]
pub extern "C" fn cusolverDnIRSXgesv(
    handle: Handle,
    params: Object,
    infos: Object,
    n: c_int,
    nrhs: c_int,
    a: Dev,
    lda: c_int,
    b: Dev,
    ldb: c_int,
    x: Dev,
    ldx: c_int,
    work: Dev,
    lwork_bytes: usize,
    niters: *mut c_int,
    info: *mut c_int,
) -> c_int {
    guard(INTERNAL_ERROR, || {
        let run = match expert_run(params, nrhs) {
            Ok(run) => run,
            Err(status) => return status,
        };
        if !with_objects(|o| o.infos.contains_key(&(infos as u64))) {
            return INFOS_NOT_INITIALIZED;
        }
        let p = Problem {
            gels: false,
            m: n,
            n,
            nrhs,
            a: (a, lda),
            ipiv: std::ptr::null_mut(),
            b: (b, ldb),
            x: (x, ldx),
        };
        solve(
            handle,
            &run,
            &p,
            (work, lwork_bytes),
            (niters, info),
            Some(infos as u64),
        )
    })
}

#[no_mangle]
pub extern "C" fn cusolverDnIRSXgels(
    handle: Handle,
    params: Object,
    infos: Object,
    m: c_int,
    n: c_int,
    nrhs: c_int,
    a: Dev,
    lda: c_int,
    b: Dev,
    ldb: c_int,
    x: Dev,
    ldx: c_int,
    work: Dev,
    lwork_bytes: usize,
    niters: *mut c_int,
    info: *mut c_int,
) -> c_int {
    guard(INTERNAL_ERROR, || {
        let run = match expert_run(params, nrhs) {
            Ok(run) => run,
            Err(status) => return status,
        };
        if !with_objects(|o| o.infos.contains_key(&(infos as u64))) {
            return INFOS_NOT_INITIALIZED;
        }
        let p = Problem {
            gels: true,
            m,
            n,
            nrhs,
            a: (a, lda),
            ipiv: std::ptr::null_mut(),
            b: (b, ldb),
            x: (x, ldx),
        };
        solve(
            handle,
            &run,
            &p,
            (work, lwork_bytes),
            (niters, info),
            Some(infos as u64),
        )
    })
}

/// The run of a `<t1><t2>` routine: classical refinement with cuSOLVER's
/// defaults.
fn typed_run(dtype: u8, lowest: c_int) -> Run {
    Run {
        dtype,
        lowest,
        params: Params {
            main: main_precision(dtype),
            lowest: Some(lowest),
            refine: REFINE_CLASSICAL,
            ..Params::default()
        },
    }
}

/// One `<t1><t2>gesv` and its size query.
macro_rules! gesv_routines {
    ($( fn $solve:ident / $size:ident (dtype $dtype:literal, lowest $lowest:expr); )*) => {$(
        #[no_mangle]
        pub extern "C" fn $size(
            handle: Handle,
            n: c_int,
            nrhs: c_int,
            a: Dev,
            lda: c_int,
            ipiv: *mut c_int,
            b: Dev,
            ldb: c_int,
            x: Dev,
            ldx: c_int,
            _work: Dev,
            lwork_bytes: *mut usize,
        ) -> c_int {
            guard(INTERNAL_ERROR, || {
                let p = Problem { gels: false, m: n, n, nrhs, a: (a, lda), ipiv, b: (b, ldb), x: (x, ldx) };
                size_query(handle, &typed_run($dtype, $lowest), &p, lwork_bytes)
            })
        }

        #[no_mangle]
        pub extern "C" fn $solve(
            handle: Handle,
            n: c_int,
            nrhs: c_int,
            a: Dev,
            lda: c_int,
            ipiv: *mut c_int,
            b: Dev,
            ldb: c_int,
            x: Dev,
            ldx: c_int,
            work: Dev,
            lwork_bytes: usize,
            niters: *mut c_int,
            info: *mut c_int,
        ) -> c_int {
            guard(INTERNAL_ERROR, || {
                let p = Problem { gels: false, m: n, n, nrhs, a: (a, lda), ipiv, b: (b, ldb), x: (x, ldx) };
                solve(handle, &typed_run($dtype, $lowest), &p, (work, lwork_bytes), (niters, info), None)
            })
        }
    )*};
}

/// One `<t1><t2>gels` and its size query.
macro_rules! gels_routines {
    ($( fn $solve:ident / $size:ident (dtype $dtype:literal, lowest $lowest:expr); )*) => {$(
        #[no_mangle]
        pub extern "C" fn $size(
            handle: Handle,
            m: c_int,
            n: c_int,
            nrhs: c_int,
            a: Dev,
            lda: c_int,
            b: Dev,
            ldb: c_int,
            x: Dev,
            ldx: c_int,
            _work: Dev,
            lwork_bytes: *mut usize,
        ) -> c_int {
            guard(INTERNAL_ERROR, || {
                let p = Problem { gels: true, m, n, nrhs, a: (a, lda), ipiv: std::ptr::null_mut(), b: (b, ldb), x: (x, ldx) };
                size_query(handle, &typed_run($dtype, $lowest), &p, lwork_bytes)
            })
        }

        #[no_mangle]
        pub extern "C" fn $solve(
            handle: Handle,
            m: c_int,
            n: c_int,
            nrhs: c_int,
            a: Dev,
            lda: c_int,
            b: Dev,
            ldb: c_int,
            x: Dev,
            ldx: c_int,
            work: Dev,
            lwork_bytes: usize,
            niters: *mut c_int,
            info: *mut c_int,
        ) -> c_int {
            guard(INTERNAL_ERROR, || {
                let p = Problem { gels: true, m, n, nrhs, a: (a, lda), ipiv: std::ptr::null_mut(), b: (b, ldb), x: (x, ldx) };
                solve(handle, &typed_run($dtype, $lowest), &p, (work, lwork_bytes), (niters, info), None)
            })
        }
    )*};
}

/// `CUSOLVER_C_*`.
const fn complex(real: c_int) -> c_int {
    real + PREC_COMPLEX
}

gesv_routines! {
    fn cusolverDnDDgesv / cusolverDnDDgesv_bufferSize (dtype 1, lowest PREC_R_64F);
    fn cusolverDnDSgesv / cusolverDnDSgesv_bufferSize (dtype 1, lowest PREC_R_32F);
    fn cusolverDnDHgesv / cusolverDnDHgesv_bufferSize (dtype 1, lowest PREC_R_16F);
    fn cusolverDnDBgesv / cusolverDnDBgesv_bufferSize (dtype 1, lowest PREC_R_16BF);
    fn cusolverDnDXgesv / cusolverDnDXgesv_bufferSize (dtype 1, lowest PREC_R_TF32);
    fn cusolverDnSSgesv / cusolverDnSSgesv_bufferSize (dtype 0, lowest PREC_R_32F);
    fn cusolverDnSHgesv / cusolverDnSHgesv_bufferSize (dtype 0, lowest PREC_R_16F);
    fn cusolverDnSBgesv / cusolverDnSBgesv_bufferSize (dtype 0, lowest PREC_R_16BF);
    fn cusolverDnSXgesv / cusolverDnSXgesv_bufferSize (dtype 0, lowest PREC_R_TF32);
    fn cusolverDnZZgesv / cusolverDnZZgesv_bufferSize (dtype 3, lowest complex(PREC_R_64F));
    fn cusolverDnZCgesv / cusolverDnZCgesv_bufferSize (dtype 3, lowest complex(PREC_R_32F));
    fn cusolverDnZKgesv / cusolverDnZKgesv_bufferSize (dtype 3, lowest complex(PREC_R_16F));
    fn cusolverDnZEgesv / cusolverDnZEgesv_bufferSize (dtype 3, lowest complex(PREC_R_16BF));
    fn cusolverDnZYgesv / cusolverDnZYgesv_bufferSize (dtype 3, lowest complex(PREC_R_TF32));
    fn cusolverDnCCgesv / cusolverDnCCgesv_bufferSize (dtype 2, lowest complex(PREC_R_32F));
    fn cusolverDnCKgesv / cusolverDnCKgesv_bufferSize (dtype 2, lowest complex(PREC_R_16F));
    fn cusolverDnCEgesv / cusolverDnCEgesv_bufferSize (dtype 2, lowest complex(PREC_R_16BF));
    fn cusolverDnCYgesv / cusolverDnCYgesv_bufferSize (dtype 2, lowest complex(PREC_R_TF32));
}

gels_routines! {
    fn cusolverDnDDgels / cusolverDnDDgels_bufferSize (dtype 1, lowest PREC_R_64F);
    fn cusolverDnDSgels / cusolverDnDSgels_bufferSize (dtype 1, lowest PREC_R_32F);
    fn cusolverDnDHgels / cusolverDnDHgels_bufferSize (dtype 1, lowest PREC_R_16F);
    fn cusolverDnDBgels / cusolverDnDBgels_bufferSize (dtype 1, lowest PREC_R_16BF);
    fn cusolverDnDXgels / cusolverDnDXgels_bufferSize (dtype 1, lowest PREC_R_TF32);
    fn cusolverDnSSgels / cusolverDnSSgels_bufferSize (dtype 0, lowest PREC_R_32F);
    fn cusolverDnSHgels / cusolverDnSHgels_bufferSize (dtype 0, lowest PREC_R_16F);
    fn cusolverDnSBgels / cusolverDnSBgels_bufferSize (dtype 0, lowest PREC_R_16BF);
    fn cusolverDnSXgels / cusolverDnSXgels_bufferSize (dtype 0, lowest PREC_R_TF32);
    fn cusolverDnZZgels / cusolverDnZZgels_bufferSize (dtype 3, lowest complex(PREC_R_64F));
    fn cusolverDnZCgels / cusolverDnZCgels_bufferSize (dtype 3, lowest complex(PREC_R_32F));
    fn cusolverDnZKgels / cusolverDnZKgels_bufferSize (dtype 3, lowest complex(PREC_R_16F));
    fn cusolverDnZEgels / cusolverDnZEgels_bufferSize (dtype 3, lowest complex(PREC_R_16BF));
    fn cusolverDnZYgels / cusolverDnZYgels_bufferSize (dtype 3, lowest complex(PREC_R_TF32));
    fn cusolverDnCCgels / cusolverDnCCgels_bufferSize (dtype 2, lowest complex(PREC_R_32F));
    fn cusolverDnCKgels / cusolverDnCKgels_bufferSize (dtype 2, lowest complex(PREC_R_16F));
    fn cusolverDnCEgels / cusolverDnCEgels_bufferSize (dtype 2, lowest complex(PREC_R_16BF));
    fn cusolverDnCYgels / cusolverDnCYgels_bufferSize (dtype 2, lowest complex(PREC_R_TF32));
}
