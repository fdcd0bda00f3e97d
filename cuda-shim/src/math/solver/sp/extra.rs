//! The rest of the sparse API: `csrlsqvqrHost` (least squares with a
//! numerical rank), `csreigvsi(Host)` (the shift-inverse power method),
//! `csreigsHost` (eigenvalues in a box), `csrzfdHost` (zero-free
//! diagonal), `XcsrsymmdqHost` and `csrcholDiag`. The host forms compute
//! here with `rcud-math`'s code; `csreigvsi` and `csrcholDiag` run on the
//! server with the same code.

use super::*;

/// `dtype`'s real type (S for S and C, D for D and Z), for the real
/// outputs (`min_norm`, `diag`).
fn real_dtype(dtype: u8) -> u8 {
    dtype % 2
}

/// The square CSR matrix of a host call, checked, with its values.
fn host_square(
    (m, nnz): (c_int, c_int),
    descr: *const c_void,
    val: *const c_void,
    rowptr: *const c_int,
    colind: *const c_int,
    dtype: u8,
) -> Result<Csr, c_int> {
    if m <= 0 || nnz <= 0 {
        return Err(INVALID_VALUE);
    }
    let pattern = host_pattern((m, m, nnz), descr, rowptr, colind)?;
    let values = host_values(val, pattern.nnz(), dtype)?;
    Ok(Csr { pattern, values })
}

#[no_mangle]
pub extern "C" fn cusolverSpXcsrsymmdqHost(
    handle: Handle,
    n: c_int,
    nnz: c_int,
    descr: *const c_void,
    rowptr: *const c_int,
    colind: *const c_int,
    p: *mut c_int,
) -> c_int {
    ordering(handle, (n, nnz), descr, rowptr, colind, p, sparse::symmdq)
}

/// `?csrlsqvqrHost`: writes rank, x, p and min_norm.
#[allow(clippy::too_many_arguments)]
fn lsqvqr_host(
    handle: Handle,
    dtype: u8,
    (m, n, nnz): (c_int, c_int, c_int),
    descr: *const c_void,
    (val, rowptr, colind): (*const c_void, *const c_int, *const c_int),
    b: *const c_void,
    tol: f64,
    (rank, x, p, min_norm): (*mut c_int, *mut c_void, *mut c_int, *mut c_void),
) -> c_int {
    run(|| {
        check_handle(handle)?;
        if m <= 0 || n <= 0 || nnz <= 0 || m < n {
            return Err(INVALID_VALUE);
        }
        if rank.is_null() || x.is_null() || p.is_null() || min_norm.is_null() {
            return Err(INVALID_VALUE);
        }
        let pattern = host_pattern((m, n, nnz), descr, rowptr, colind)?;
        let values = host_values(val, pattern.nnz(), dtype)?;
        let rhs = host_values(b, count(m)?, dtype)?;
        let ls = sparse::lsqvqr(&Csr { pattern, values }, &rhs, tol).map_err(sp_status)?;
        let perm: Vec<i32> =
            ls.p.iter()
                .map(|&v| i32::try_from(v).map_err(|_| INTERNAL_ERROR))
                .collect::<Result<_, _>>()?;
        out(rank, c_int::try_from(ls.rank).map_err(|_| INTERNAL_ERROR)?)?;
        write_values(x, &ls.x, dtype)?;
        write_ints(p, &perm)?;
        write_values(min_norm, &[C::new(ls.min_norm, 0.0)], real_dtype(dtype))
    })
}

/// The operands of one `csreigvsi(Host)` call.
struct Vsi {
    m: c_int,
    nnz: c_int,
    descr: *const c_void,
    val: *const c_void,
    rowptr: *const c_int,
    colind: *const c_int,
    mu0: C,
    x0: *const c_void,
    maxite: c_int,
    eps: f64,
    mu: *mut c_void,
    x: *mut c_void,
}

fn eigvsi_host(handle: Handle, dtype: u8, a: &Vsi) -> c_int {
    run(|| {
        check_handle(handle)?;
        if a.maxite <= 0 || a.mu.is_null() || a.x.is_null() {
            return Err(INVALID_VALUE);
        }
        let csr = host_square((a.m, a.nnz), a.descr, a.val, a.rowptr, a.colind, dtype)?;
        let start = host_values(a.x0, count(a.m)?, dtype)?;
        let (mu, x) = sparse::eigvsi(&csr, a.mu0, &start, a.maxite, a.eps).map_err(sp_status)?;
        write_values(a.mu, &[mu], dtype)?;
        write_values(a.x, &x, dtype)
    })
}

fn eigvsi_device(handle: Handle, dtype: u8, a: &Vsi) -> c_int {
    run(|| {
        let stream = check_handle(handle)?;
        if a.m <= 0 || a.nnz <= 0 || a.maxite <= 0 {
            return Err(INVALID_VALUE);
        }
        let base = general_base(a.descr)?;
        sync(
            stream,
            &Call::SpEigvsi {
                handle: handle as u64,
                dtype,
                m: a.m,
                nnz: a.nnz,
                base,
                val: a.val as u64,
                rowptr: a.rowptr as u64,
                colind: a.colind as u64,
                mu0_re: a.mu0.re,
                mu0_im: a.mu0.im,
                x0: a.x0 as u64,
                maxite: a.maxite,
                eps: a.eps,
                mu: a.mu as u64,
                x: a.x as u64,
            },
        )
        .map(drop)
    })
}

#[allow(clippy::too_many_arguments)]
fn eigs_host(
    handle: Handle,
    dtype: u8,
    (m, nnz): (c_int, c_int),
    descr: *const c_void,
    (val, rowptr, colind): (*const c_void, *const c_int, *const c_int),
    (lower_left, upper_right): (C, C),
    num_eigs: *mut c_int,
) -> c_int {
    run(|| {
        check_handle(handle)?;
        if num_eigs.is_null() {
            return Err(INVALID_VALUE);
        }
        let csr = host_square((m, nnz), descr, val, rowptr, colind, dtype)?;
        let found = sparse::eigs(&csr, lower_left, upper_right).map_err(sp_status)?;
        out(
            num_eigs,
            c_int::try_from(found).map_err(|_| INTERNAL_ERROR)?,
        )
    })
}

#[allow(clippy::too_many_arguments)]
fn zfd_host(
    handle: Handle,
    dtype: u8,
    (n, nnz): (c_int, c_int),
    descr: *const c_void,
    (val, rowptr, colind): (*const c_void, *const c_int, *const c_int),
    p: *mut c_int,
    numnz: *mut c_int,
) -> c_int {
    run(|| {
        check_handle(handle)?;
        if p.is_null() || numnz.is_null() {
            return Err(INVALID_VALUE);
        }
        let csr = host_square((n, nnz), descr, val, rowptr, colind, dtype)?;
        let (perm, found) = sparse::zfd(&csr).map_err(sp_status)?;
        let perm: Vec<i32> = perm
            .iter()
            .map(|&v| i32::try_from(v).map_err(|_| INTERNAL_ERROR))
            .collect::<Result<_, _>>()?;
        write_ints(p, &perm)?;
        out(numnz, c_int::try_from(found).map_err(|_| INTERNAL_ERROR)?)
    })
}

/// `?csrcholDiag`: the device info's diagonal of L, `n` (the analysis's)
/// reals of `dtype`'s real type.
fn chol_diag(handle: Handle, dtype: u8, info: *mut c_void, diag: *mut c_void) -> c_int {
    run(|| {
        let stream = check_handle(handle)?;
        if diag.is_null() {
            return Err(INVALID_VALUE);
        }
        let n = device_rows(info, Method::Cholesky)?;
        sync(
            stream,
            &Call::SpCholDiag {
                handle: handle as u64,
                info: info as u64,
                dtype,
                n,
                diag: diag as u64,
            },
        )
        .map(drop)
    })
}

macro_rules! sparse_extras {
    (
        dtype $dtype:expr, real $real:ty, scalar $scalar:ty, corner $corner:ty;
        fn $lsq:ident / $vsi_h:ident / $vsi:ident / $eigs:ident / $zfd:ident / $diag:ident (extras);
    ) => {
        #[no_mangle]
        #[allow(clippy::too_many_arguments)]
        pub extern "C" fn $lsq(
            handle: Handle,
            m: c_int,
            n: c_int,
            nnz: c_int,
            descr: *const c_void,
            val: *const c_void,
            rowptr: *const c_int,
            colind: *const c_int,
            b: *const c_void,
            tol: $real,
            rank: *mut c_int,
            x: *mut c_void,
            p: *mut c_int,
            min_norm: *mut $real,
        ) -> c_int {
            lsqvqr_host(
                handle,
                $dtype,
                (m, n, nnz),
                descr,
                (val, rowptr, colind),
                b,
                f64::from(tol),
                (rank, x, p, min_norm.cast()),
            )
        }

        sparse_extras!(@vsi $dtype, $real, $scalar, $vsi_h, eigvsi_host);
        sparse_extras!(@vsi $dtype, $real, $scalar, $vsi, eigvsi_device);

        #[no_mangle]
        #[allow(clippy::too_many_arguments)]
        pub extern "C" fn $eigs(
            handle: Handle,
            m: c_int,
            nnz: c_int,
            descr: *const c_void,
            val: *const c_void,
            rowptr: *const c_int,
            colind: *const c_int,
            left_bottom_corner: $corner,
            right_upper_corner: $corner,
            num_eigs: *mut c_int,
        ) -> c_int {
            eigs_host(
                handle,
                $dtype,
                (m, nnz),
                descr,
                (val, rowptr, colind),
                (
                    Scalar::complex(left_bottom_corner),
                    Scalar::complex(right_upper_corner),
                ),
                num_eigs,
            )
        }

        #[no_mangle]
        #[allow(clippy::too_many_arguments)]
        pub extern "C" fn $zfd(
            handle: Handle,
            n: c_int,
            nnz: c_int,
            descr: *const c_void,
            val: *const c_void,
            rowptr: *const c_int,
            colind: *const c_int,
            p: *mut c_int,
            numnz: *mut c_int,
        ) -> c_int {
            zfd_host(handle, $dtype, (n, nnz), descr, (val, rowptr, colind), p, numnz)
        }

        #[no_mangle]
        pub extern "C" fn $diag(handle: Handle, info: *mut c_void, diag: *mut $real) -> c_int {
            chol_diag(handle, $dtype, info, diag.cast())
        }
    };
    (@vsi $dtype:expr, $real:ty, $scalar:ty, $name:ident, $body:ident) => {
        #[no_mangle]
        #[allow(clippy::too_many_arguments)]
        pub extern "C" fn $name(
            handle: Handle,
            m: c_int,
            nnz: c_int,
            descr: *const c_void,
            val: *const c_void,
            rowptr: *const c_int,
            colind: *const c_int,
            mu0: $scalar,
            x0: *const c_void,
            maxite: c_int,
            eps: $real,
            mu: *mut c_void,
            x: *mut c_void,
        ) -> c_int {
            let operands = Vsi {
                m,
                nnz,
                descr,
                val,
                rowptr,
                colind,
                mu0: Scalar::complex(mu0),
                x0,
                maxite,
                eps: f64::from(eps),
                mu,
                x,
            };
            $body(handle, $dtype, &operands)
        }
    };
}

sparse_extras! {
    dtype 0, real f32, scalar f32, corner Complex32;
    fn cusolverSpScsrlsqvqrHost / cusolverSpScsreigvsiHost / cusolverSpScsreigvsi / cusolverSpScsreigsHost / cusolverSpScsrzfdHost / cusolverSpScsrcholDiag (extras);
}

sparse_extras! {
    dtype 1, real f64, scalar f64, corner Complex64;
    fn cusolverSpDcsrlsqvqrHost / cusolverSpDcsreigvsiHost / cusolverSpDcsreigvsi / cusolverSpDcsreigsHost / cusolverSpDcsrzfdHost / cusolverSpDcsrcholDiag (extras);
}

sparse_extras! {
    dtype 2, real f32, scalar Complex32, corner Complex32;
    fn cusolverSpCcsrlsqvqrHost / cusolverSpCcsreigvsiHost / cusolverSpCcsreigvsi / cusolverSpCcsreigsHost / cusolverSpCcsrzfdHost / cusolverSpCcsrcholDiag (extras);
}

sparse_extras! {
    dtype 3, real f64, scalar Complex64, corner Complex64;
    fn cusolverSpZcsrlsqvqrHost / cusolverSpZcsreigvsiHost / cusolverSpZcsreigvsi / cusolverSpZcsreigsHost / cusolverSpZcsrzfdHost / cusolverSpZcsrcholDiag (extras);
}
