//! The low-level sparse LU on the host (`csrluInfoHost_t`, the `csrlu*Host`
//! functions of `cusolverSp_LOWLEVEL_PREVIEW.h`): computed here, in the
//! client, with `rcud-math`'s left-looking LU with threshold partial
//! pivoting. Q is the identity (the application orders the columns first);
//! L comes out without its unit diagonal, as NVIDIA's sample expects
//! ("L has implicit unit diagonal").

use super::*;
use rcud_math::solver::sparse::SparseLu;

/// One `csrluInfoHost_t`: the analyzed pattern and the factor.
#[derive(Debug, Default)]
pub(super) struct LuInfo {
    pattern: Option<Pattern>,
    lu: Option<SparseLu>,
}

fn with_lu<R>(
    info: *mut c_void,
    f: impl FnOnce(&mut LuInfo) -> Result<R, c_int>,
) -> Result<R, c_int> {
    with_infos(|_, table| match table.get_mut(&(info as u64)) {
        Some(Entry::Lu(i)) => f(i),
        _ => Err(INVALID_VALUE),
    })
}

#[no_mangle]
pub extern "C" fn cusolverSpCreateCsrluInfoHost(info: *mut *mut c_void) -> c_int {
    create_info(info, Entry::Lu(Box::default()))
}

#[no_mangle]
pub extern "C" fn cusolverSpDestroyCsrluInfoHost(info: *mut c_void) -> c_int {
    run(|| {
        with_infos(|_, table| match table.get(&(info as u64)) {
            Some(Entry::Lu(_)) => table.remove(&(info as u64)).map(drop).ok_or(INVALID_VALUE),
            _ => Err(INVALID_VALUE),
        })
    })
}

#[no_mangle]
pub extern "C" fn cusolverSpXcsrluAnalysisHost(
    handle: Handle,
    n: c_int,
    nnz: c_int,
    descr: *const c_void,
    rowptr: *const c_int,
    colind: *const c_int,
    info: *mut c_void,
) -> c_int {
    run(|| {
        check_handle(handle)?;
        if n <= 0 || nnz <= 0 {
            return Err(INVALID_VALUE);
        }
        let pattern = host_pattern((n, n, nnz), descr, rowptr, colind)?;
        with_lu(info, |i| {
            i.pattern = Some(pattern);
            i.lu = None;
            Ok(())
        })
    })
}

/// Checks n and nnz against the analysis.
fn analyzed(i: &LuInfo, n: c_int, nnz: Option<c_int>) -> Result<&Pattern, c_int> {
    let pattern = i.pattern.as_ref().ok_or(INVALID_VALUE)?;
    let nnz_ok = nnz.map_or(Ok(true), |nnz| count(nnz).map(|v| v == pattern.nnz()))?;
    if count(n)? != pattern.n || !nnz_ok {
        return Err(INVALID_VALUE);
    }
    Ok(pattern)
}

fn lu_buffer_info(
    handle: Handle,
    (n, nnz): (c_int, c_int),
    descr: *const c_void,
    info: *mut c_void,
    (internal, workspace): (*mut usize, *mut usize),
) -> c_int {
    run(|| {
        check_handle(handle)?;
        general_base(descr)?;
        if internal.is_null() || workspace.is_null() {
            return Err(INVALID_VALUE);
        }
        let n = with_lu(info, |i| analyzed(i, n, Some(nnz)).map(|p| p.n))?;
        // The factor lives in the info; its fill is known only after the
        // factorization: the estimate is A's entries twice over.
        out(internal, 16 * (2 * count(nnz)? + n))?;
        out(workspace, 16 * n)
    })
}

#[allow(clippy::too_many_arguments)]
fn lu_factor(
    handle: Handle,
    dtype: u8,
    (n, nnz): (c_int, c_int),
    descr: *const c_void,
    val: *const c_void,
    info: *mut c_void,
    threshold: f64,
    buffer: *mut c_void,
) -> c_int {
    run(|| {
        check_handle(handle)?;
        general_base(descr)?;
        if buffer.is_null() || !(0.0..=1.0).contains(&threshold) {
            return Err(INVALID_VALUE);
        }
        let values = host_values(val, count(nnz)?, dtype)?;
        with_lu(info, |i| {
            let pattern = analyzed(i, n, Some(nnz))?.clone();
            let a = Csr { pattern, values };
            i.lu = Some(SparseLu::factor(&a, threshold).map_err(sp_status)?);
            Ok(())
        })
    })
}

fn lu_zero_pivot(handle: Handle, info: *mut c_void, tol: f64, at: *mut c_int) -> c_int {
    run(|| {
        check_handle(handle)?;
        if at.is_null() {
            return Err(INVALID_VALUE);
        }
        let found = with_lu(info, |i| {
            Ok(i.lu.as_ref().ok_or(INVALID_VALUE)?.zero_pivot(tol))
        })?;
        out(at, position(found))
    })
}

fn lu_solve(
    handle: Handle,
    dtype: u8,
    n: c_int,
    b: *const c_void,
    x: *mut c_void,
    info: *mut c_void,
    buffer: *mut c_void,
) -> c_int {
    run(|| {
        check_handle(handle)?;
        if n <= 0 || buffer.is_null() || b.is_null() || x.is_null() {
            return Err(INVALID_VALUE);
        }
        let rhs = host_values(b, count(n)?, dtype)?;
        let sol = with_lu(info, |i| {
            let lu = i.lu.as_ref().ok_or(INVALID_VALUE)?;
            if lu.n() != rhs.len() {
                return Err(INVALID_VALUE);
            }
            Ok(lu.solve(&rhs))
        })?;
        write_values(x, &sol, dtype)
    })
}

#[no_mangle]
pub extern "C" fn cusolverSpXcsrluNnzHost(
    handle: Handle,
    nnz_l: *mut c_int,
    nnz_u: *mut c_int,
    info: *mut c_void,
) -> c_int {
    run(|| {
        check_handle(handle)?;
        let (l, u) = with_lu(info, |i| Ok(i.lu.as_ref().ok_or(INVALID_VALUE)?.nnz()))?;
        out(nnz_l, c_int::try_from(l).map_err(|_| ALLOC_FAILED)?)?;
        out(nnz_u, c_int::try_from(u).map_err(|_| ALLOC_FAILED)?)
    })
}

/// Writes one extracted factor in CSR with the descriptor's base.
fn write_factor(
    f: &sparse::CsrFactor,
    dtype: u8,
    descr: *const c_void,
    (val, rowptr, colind): (*mut c_void, *mut c_int, *mut c_int),
) -> Status {
    let (_, base) = crate::math::sparse::legacy_descr(descr).ok_or(INVALID_VALUE)?;
    let ints = |v: &[usize]| -> Result<Vec<i32>, c_int> {
        v.iter()
            .map(|&x| i32::try_from(x).map(|x| x + base).map_err(|_| ALLOC_FAILED))
            .collect()
    };
    if rowptr.is_null() || (!f.colind.is_empty() && (val.is_null() || colind.is_null())) {
        return Err(INVALID_VALUE);
    }
    write_ints(rowptr, &ints(&f.rowptr)?)?;
    write_ints(colind, &ints(&f.colind)?)?;
    write_values(val, &f.values, dtype)
}

#[allow(clippy::too_many_arguments)]
fn lu_extract(
    handle: Handle,
    dtype: u8,
    (p, q): (*mut c_int, *mut c_int),
    l: (*const c_void, *mut c_void, *mut c_int, *mut c_int),
    u: (*const c_void, *mut c_void, *mut c_int, *mut c_int),
    info: *mut c_void,
    buffer: *mut c_void,
) -> c_int {
    run(|| {
        check_handle(handle)?;
        if buffer.is_null() || p.is_null() || q.is_null() {
            return Err(INVALID_VALUE);
        }
        let (perm, (lf, uf)) = with_lu(info, |i| {
            let lu = i.lu.as_ref().ok_or(INVALID_VALUE)?;
            Ok((lu.p().to_vec(), lu.extract()))
        })?;
        let to_i32 = |v: usize| i32::try_from(v).map_err(|_| ALLOC_FAILED);
        let perm = perm
            .into_iter()
            .map(to_i32)
            .collect::<Result<Vec<_>, _>>()?;
        let ident = (0..perm.len()).map(to_i32).collect::<Result<Vec<_>, _>>()?;
        write_factor(&lf, dtype, l.0, (l.1, l.2, l.3))?;
        write_factor(&uf, dtype, u.0, (u.1, u.2, u.3))?;
        write_ints(p, &perm)?;
        write_ints(q, &ident)
    })
}

macro_rules! csrlu_routines {
    ($(dtype $dtype:expr, real $real:ty;
       fn $buf:ident / $fac:ident / $zp:ident / $solve:ident / $extract:ident (lu);)*) => {$(
        #[no_mangle]
        pub extern "C" fn $buf(
            handle: Handle,
            n: c_int,
            nnz: c_int,
            descr: *const c_void,
            _val: *const c_void,
            _rowptr: *const c_int,
            _colind: *const c_int,
            info: *mut c_void,
            internal: *mut usize,
            workspace: *mut usize,
        ) -> c_int {
            lu_buffer_info(handle, (n, nnz), descr, info, (internal, workspace))
        }

        #[no_mangle]
        pub extern "C" fn $fac(
            handle: Handle,
            n: c_int,
            nnz: c_int,
            descr: *const c_void,
            val: *const c_void,
            _rowptr: *const c_int,
            _colind: *const c_int,
            info: *mut c_void,
            threshold: $real,
            buffer: *mut c_void,
        ) -> c_int {
            lu_factor(handle, $dtype, (n, nnz), descr, val, info, f64::from(threshold), buffer)
        }

        #[no_mangle]
        pub extern "C" fn $zp(handle: Handle, info: *mut c_void, tol: $real, at: *mut c_int) -> c_int {
            lu_zero_pivot(handle, info, f64::from(tol), at)
        }

        #[no_mangle]
        pub extern "C" fn $solve(
            handle: Handle,
            n: c_int,
            b: *const c_void,
            x: *mut c_void,
            info: *mut c_void,
            buffer: *mut c_void,
        ) -> c_int {
            lu_solve(handle, $dtype, n, b, x, info, buffer)
        }

        #[no_mangle]
        pub extern "C" fn $extract(
            handle: Handle,
            p: *mut c_int,
            q: *mut c_int,
            descr_l: *const c_void,
            val_l: *mut c_void,
            rowptr_l: *mut c_int,
            colind_l: *mut c_int,
            descr_u: *const c_void,
            val_u: *mut c_void,
            rowptr_u: *mut c_int,
            colind_u: *mut c_int,
            info: *mut c_void,
            buffer: *mut c_void,
        ) -> c_int {
            lu_extract(
                handle,
                $dtype,
                (p, q),
                (descr_l, val_l, rowptr_l, colind_l),
                (descr_u, val_u, rowptr_u, colind_u),
                info,
                buffer,
            )
        }
    )*};
}

csrlu_routines! {
    dtype 0, real f32;
    fn cusolverSpScsrluBufferInfoHost / cusolverSpScsrluFactorHost / cusolverSpScsrluZeroPivotHost / cusolverSpScsrluSolveHost / cusolverSpScsrluExtractHost (lu);
    dtype 1, real f64;
    fn cusolverSpDcsrluBufferInfoHost / cusolverSpDcsrluFactorHost / cusolverSpDcsrluZeroPivotHost / cusolverSpDcsrluSolveHost / cusolverSpDcsrluExtractHost (lu);
    dtype 2, real f32;
    fn cusolverSpCcsrluBufferInfoHost / cusolverSpCcsrluFactorHost / cusolverSpCcsrluZeroPivotHost / cusolverSpCcsrluSolveHost / cusolverSpCcsrluExtractHost (lu);
    dtype 3, real f64;
    fn cusolverSpZcsrluBufferInfoHost / cusolverSpZcsrluFactorHost / cusolverSpZcsrluZeroPivotHost / cusolverSpZcsrluSolveHost / cusolverSpZcsrluExtractHost (lu);
}
