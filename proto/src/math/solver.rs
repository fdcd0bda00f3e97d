//! cuSOLVER (dense) calls on the wire.
//!
//! Each factorization or solve carries its element type (`dtype`: 0 = S
//! (`float`), 1 = D (`double`), 2 = C (`cuComplex`), 3 = Z
//! (`cuDoubleComplex`)), its dimensions and leading dimensions as the
//! application passed them, and device addresses of its matrices, pivots
//! and `devInfo`. Workspaces stay on the client: the CPU implementation does
//! not need them, and the client checks them. `handle` is the id `Create`
//! answered (8 bytes, little endian). Options (`trans`, `uplo`, `side`,
//! `jobz`) carry cuBLAS's / cuSOLVER's enum values; `jobu`/`jobvt` LAPACK's
//! characters.

crate::wire_enum! {
    /// A cuSOLVER call.
    #[derive(Debug, Clone, PartialEq)]
    pub enum Call {
        /// `cusolverDnCreate`: answers the new handle's id (u64).
        1 Create {},
        /// `cusolverDnDestroy`.
        2 Destroy { handle: u64 },
        /// `cusolverDn?getrf`: LU with partial pivoting (`ipiv` 0: none).
        3 Getrf { handle: u64, dtype: u8, m: i32, n: i32, a: u64, lda: i32, ipiv: u64, info: u64 },
        /// `cusolverDn?getrs` (`ipiv` 0: the LU was made without pivoting).
        4 Getrs { handle: u64, dtype: u8, trans: i32, n: i32, nrhs: i32, a: u64, lda: i32, ipiv: u64, b: u64, ldb: i32, info: u64 },
        /// `cusolverDn?potrf`: Cholesky.
        5 Potrf { handle: u64, dtype: u8, uplo: i32, n: i32, a: u64, lda: i32, info: u64 },
        /// `cusolverDn?potrs`.
        6 Potrs { handle: u64, dtype: u8, uplo: i32, n: i32, nrhs: i32, a: u64, lda: i32, b: u64, ldb: i32, info: u64 },
        /// `cusolverDn?geqrf`: Householder QR, LAPACK's storage.
        7 Geqrf { handle: u64, dtype: u8, m: i32, n: i32, a: u64, lda: i32, tau: u64, info: u64 },
        /// `cusolverDn?ormqr` / `?unmqr`: C = op(Q) C or C op(Q).
        8 Ormqr { handle: u64, dtype: u8, side: i32, trans: i32, m: i32, n: i32, k: i32, a: u64, lda: i32, tau: u64, c: u64, ldc: i32, info: u64 },
        /// `cusolverDn?syevd` / `?heevd`: eigenvalues ascending in `w`.
        9 Syevd { handle: u64, dtype: u8, jobz: i32, uplo: i32, n: i32, a: u64, lda: i32, w: u64, info: u64 },
        /// `cusolverDn?orgqr` / `?ungqr`: A's first n columns of Q.
        11 Orgqr { handle: u64, dtype: u8, m: i32, n: i32, k: i32, a: u64, lda: i32, tau: u64, info: u64 },
        /// `cusolverDn?gesvd` (m ≥ n, as cuSOLVER requires).
        10 Gesvd { handle: u64, dtype: u8, jobu: u8, jobvt: u8, m: i32, n: i32, a: u64, lda: i32, s: u64, u: u64, ldu: i32, vt: u64, ldvt: i32, info: u64 },
        /// `cusolverDn?potrfBatched`: Cholesky of `batch` matrices named
        /// by the device array of pointers `a`; `info` holds one `int` per
        /// matrix.
        12 PotrfBatched { handle: u64, dtype: u8, uplo: i32, n: i32, a: u64, lda: i32, info: u64, batch: i32 },
        /// `cusolverDn?potrsBatched`: `a` and `b` are device arrays of
        /// pointers; `nrhs` must be 1 and `info` is one `int`, as cuSOLVER
        /// requires.
        13 PotrsBatched { handle: u64, dtype: u8, uplo: i32, n: i32, nrhs: i32, a: u64, lda: i32, b: u64, ldb: i32, info: u64, batch: i32 },
        /// `cusolverDn?syevj` (`batched` 0, `batch` 1) and
        /// `?syevjBatched` (n ≤ 32): Jacobi's eigensolver on `batch`
        /// matrices `lda * n` elements apart, eigenvalues `n` apart, one
        /// `info` per matrix. `tol`, `max_sweeps` and `sort` are the
        /// `syevjInfo_t`'s settings (0 for cuSOLVER's defaults).
        14 Syevj { handle: u64, dtype: u8, jobz: i32, uplo: i32, n: i32, a: u64, lda: i32, w: u64, info: u64, batch: i32, batched: u8, tol: f64, max_sweeps: i32, sort: i32 },
        /// `cusolverDn?gesvdj` (`batched` 0, `batch` 1, `econ` honoured)
        /// and `?gesvdjBatched` (m, n ≤ 32, full U and V): A = U S Vᴴ with
        /// V itself (not Vᴴ) in `v`; one `info` per matrix.
        15 Gesvdj { handle: u64, dtype: u8, jobz: i32, econ: i32, m: i32, n: i32, a: u64, lda: i32, s: u64, u: u64, ldu: i32, v: u64, ldv: i32, info: u64, batch: i32, batched: u8, tol: f64, max_sweeps: i32, sort: i32 },
        /// `cusolverDnXgeev`: eigenvalues of a general n×n matrix (A is
        /// overwritten) and, for `jobvl`/`jobvr` 1, left/right
        /// eigenvectors. For a complex A, W and the vectors are complex.
        /// For a real A the vectors are real in LAPACK's storage (a
        /// conjugate pair's two columns hold the real and imaginary parts
        /// of the first one's), and W is complex (`w_real` 0) or 2n reals,
        /// real parts then imaginary parts (`w_real` 1).
        16 Geev { handle: u64, dtype: u8, w_real: u8, jobvl: i32, jobvr: i32, n: i32, a: u64, lda: i32, w: u64, vl: u64, ldvl: i32, vr: u64, ldvr: i32, info: u64 },
        /// `cusolverSp?csrlsv{qr,chol}`: solves A x = b for the n×n CSR
        /// matrix A (`base` its index base) by `method` ([`SP_LU`],
        /// [`SP_CHOL`], [`SP_QR`]); `reorder` nonzero reorders by reverse
        /// Cuthill–McKee first. Answers the singularity (i32, -1: none).
        17 SpLsv { handle: u64, dtype: u8, method: u8, n: i32, nnz: i32, base: i32, val: u64, rowptr: u64, colind: u64, b: u64, tol: f64, reorder: i32, x: u64 },
        /// `cusolverSpXcsr{chol,qr}Analysis`: records the m×n pattern in
        /// the server's `csrcholInfo_t` / `csrqrInfo_t` `info` (an id the
        /// client chose), for `method` [`SP_CHOL`] or [`SP_QR`].
        18 SpAnalysis { handle: u64, info: u64, method: u8, m: i32, n: i32, nnz: i32, base: i32, rowptr: u64, colind: u64 },
        /// `cusolverSp?csr{chol,qr}BufferInfo`: answers the factor's bytes
        /// and the workspace's bytes (two u64).
        19 SpBufferInfo { handle: u64, info: u64, dtype: u8 },
        /// `cusolverSp?csrqrSetup`: A's values (`nnz` of them) and the
        /// shift `mu` (A - mu I is factored).
        20 SpSetup { handle: u64, info: u64, dtype: u8, m: i32, n: i32, nnz: i32, val: u64, mu_re: f64, mu_im: f64 },
        /// `cusolverSp?csr{chol,qr}Factor`: Cholesky of the values at
        /// `val` (0 for QR, which factors the values of its setup); QR
        /// also solves when `b` and `x` are both nonzero.
        21 SpFactor { handle: u64, info: u64, dtype: u8, m: i32, n: i32, nnz: i32, val: u64, b: u64, x: u64 },
        /// `cusolverSp?csr{chol,qr}ZeroPivot`: answers the position (i32,
        /// -1: none) of the first pivot at most `tol`.
        22 SpZeroPivot { handle: u64, info: u64, tol: f64 },
        /// `cusolverSp?csr{chol,qr}Solve`: x (n) from b (m).
        23 SpSolve { handle: u64, info: u64, dtype: u8, m: i32, n: i32, b: u64, x: u64 },
        /// `cusolverSpDestroyCsr{chol,qr}Info`: forgets `info`.
        24 SpInfoDestroy { info: u64 },
        /// `cusolverRfSetup{Device,Host}`: records in the server's Rf
        /// object `rf` (an id the client chose) the n×n CSR matrices A, L
        /// and U (zero-based; `a`, `l`, `u` are the row offsets, column
        /// indices and double values of each) and P, Q with P A Qᵀ = L U;
        /// `diag` is the `cusolverRfUnitDiagonal_t`. (The host form stages
        /// its arrays in device memory: a frame is bounded, factors are
        /// not.) Answers the entries of the bundle L - I + U and those of
        /// its strictly lower part (two i32).
        25 RfSetup { rf: u64, n: i32, nnz_a: i32, a: [u64; 3], nnz_l: i32, l: [u64; 3], nnz_u: i32, u: [u64; 3], p: u64, q: u64, diag: i32 },
        /// `cusolverRfResetValues`: A's new values (same pattern, P, Q).
        26 RfResetValues { rf: u64, n: i32, nnz_a: i32, a: [u64; 3], p: u64, q: u64 },
        /// `cusolverRfRefactor`: answers the first pivot at most `zero`
        /// (i32, -1: none) and whether one was replaced by `boost` (u8).
        27 RfRefactor { rf: u64, zero: f64, boost: f64 },
        /// `cusolverRfSolve` (nrhs 1): x from b in `xf`, in place; `temp`
        /// is the application's scratch (`ldt` ≥ n), checked, not used.
        28 RfSolve { rf: u64, n: i32, p: u64, q: u64, nrhs: i32, temp: u64, ldt: i32, xf: u64, ldxf: i32 },
        /// The factors into device arrays: the bundle L - I + U into `l`
        /// (`diag` -1; `u` unused), or L into `l` and U into `u` as the
        /// `cusolverRfUnitDiagonal_t` `diag` says. `nnz_l` and `nnz_u` are
        /// the entries the client expects (from the setup's answer).
        29 RfExtract { rf: u64, n: i32, diag: i32, nnz_l: i32, l: [u64; 3], nnz_u: i32, u: [u64; 3] },
        /// `cusolverRfDestroy`: forgets `rf`.
        30 RfDestroy { rf: u64 },
        /// `cusolverRfBatchSetupHost`: [`Call::RfSetup`] for `batch`
        /// matrices A_j sharing A's pattern, L, U, P and Q; `a[2]` is a
        /// device array of `batch` device pointers, each to A_j's `nnz_a`
        /// values (the client stages the host arrays). Answers as
        /// [`Call::RfSetup`].
        31 RfBatchSetup { rf: u64, batch: i32, n: i32, nnz_a: i32, a: [u64; 3], nnz_l: i32, l: [u64; 3], nnz_u: i32, u: [u64; 3], p: u64, q: u64, diag: i32 },
        /// `cusolverRfBatchResetValues`: the batch's new values, `a[2]` a
        /// device array of `batch` device pointers.
        32 RfBatchResetValues { rf: u64, batch: i32, n: i32, nnz_a: i32, a: [u64; 3], p: u64, q: u64 },
        /// `cusolverRfBatchRefactor`: answers, per matrix, the first pivot
        /// at most `zero` (`batch` i32, -1: none), then whether any pivot
        /// was replaced by `boost` (u8).
        33 RfBatchRefactor { rf: u64, zero: f64, boost: f64 },
        /// `cusolverRfBatchSolve` (nrhs 1): `xf` is a device array of
        /// `batch` device pointers, each to one right-hand side solved in
        /// place; `temp` (n×2`batch`, `ldt` ≥ n) is checked, not used.
        34 RfBatchSolve { rf: u64, batch: i32, n: i32, p: u64, q: u64, nrhs: i32, temp: u64, ldt: i32, xf: u64, ldxf: i32 },
        /// `cusolverSp?csrcholDiag`: the diagonal of the factored
        /// Cholesky info's L, `n` reals (S, D: `dtype`'s own; C, Z: their
        /// real parts' type) to `diag`; `n` must be the analysis's.
        35 SpCholDiag { handle: u64, info: u64, dtype: u8, n: i32, diag: u64 },
        /// `cusolverSp?csreigvsi`: the shift-inverse power method on the
        /// m×m CSR A from `x0`: the eigenvalue nearest `mu0` to `mu` (one
        /// element of `dtype`) and its eigenvector to `x` (m elements).
        36 SpEigvsi { handle: u64, dtype: u8, m: i32, nnz: i32, base: i32, val: u64, rowptr: u64, colind: u64, mu0_re: f64, mu0_im: f64, x0: u64, maxite: i32, eps: f64, mu: u64, x: u64 },
        /// `cusolverSp?csrqrsvBatched`: `batch` systems that share the
        /// analysed QR `info`'s pattern (m×n, m ≥ n), each with its own
        /// values (`nnz` apart at `val`) and right-hand side (`m` apart at
        /// `b`): x (`n` apart at `x`) solves each in the least-squares
        /// sense, exactly when m = n.
        37 SpQrsvBatched { handle: u64, info: u64, dtype: u8, m: i32, n: i32, nnz: i32, val: u64, b: u64, x: u64, batch: i32 },
        /// `cusolverDn?gesvdaStridedBatched`: the `rank` largest singular
        /// values (and with `jobz` 1 their left and right vectors: U m×rank,
        /// V itself n×rank) of `batch` m×n matrices (m ≥ n), each operand
        /// its own stride (elements) apart; one `info` per matrix. Answers
        /// ‖A − U S Vᴴ‖_F of each matrix (`batch` f64), which cuSOLVER
        /// writes to the host.
        40 Gesvda { handle: u64, dtype: u8, jobz: i32, rank: i32, m: i32, n: i32, a: u64, lda: i32, stride_a: i64, s: u64, stride_s: i64, u: u64, ldu: i32, stride_u: i64, v: u64, ldv: i32, stride_v: i64, info: u64, batch: i32 },
        /// The iterative-refinement solvers: `cusolverDn<t1><t2>gesv`
        /// (`gels` 0: n×n A, `m` = `n`, pivots to `ipiv` unless it is 0) and
        /// `cusolverDn<t1><t2>gels` (`gels` 1: least squares of an m×n A,
        /// m ≥ n), and their expert forms `cusolverDnIRSXgesv`/`IRSXgels`.
        /// `dtype` is the main precision (A, B and X), `lowest` the
        /// `cusolverPrecType_t` the factorization runs in, `refine` the
        /// `cusolverIRSRefinement_t`; `max_iters`, `tol` (0: the default)
        /// and `fallback` are the `cusolverDnIRSParams_t`'s. Answers the
        /// iteration count (i32, negative when the refinement did not
        /// converge) and, with `history` 1, the residual norm after each
        /// iteration (f64 each, the first one before any).
        41 Irs { handle: u64, dtype: u8, lowest: i32, gels: u8, m: i32, n: i32, nrhs: i32, a: u64, lda: i32, ipiv: u64, b: u64, ldb: i32, x: u64, ldx: i32, info: u64, refine: i32, max_iters: i32, tol: f64, fallback: u8, history: u8 },
    }
}

/// The largest matrix the `*Batched` Jacobi solvers take (cuSOLVER's rule
/// for `syevjBatched` and `gesvdjBatched`).
pub const JACOBI_BATCHED_MAX: i32 = 32;

/// [`Call::SpLsv`]'s method: LU with partial pivoting.
pub const SP_LU: u8 = 0;
/// Cholesky.
pub const SP_CHOL: u8 = 1;
/// Householder QR.
pub const SP_QR: u8 = 2;

/// `cusolverPrecType_t`: the real precisions an IRS factorization may run
/// in, and their complex twins (each the real one plus [`PREC_COMPLEX`]).
pub const PREC_R_64F: i32 = 1203;
/// `CUSOLVER_R_32F`.
pub const PREC_R_32F: i32 = 1204;
/// `CUSOLVER_R_16F`.
pub const PREC_R_16F: i32 = 1205;
/// `CUSOLVER_R_16BF`.
pub const PREC_R_16BF: i32 = 1206;
/// `CUSOLVER_R_TF32`.
pub const PREC_R_TF32: i32 = 1207;
/// `CUSOLVER_C_*` = `CUSOLVER_R_*` + 10.
pub const PREC_COMPLEX: i32 = 10;

/// `cusolverIRSRefinement_t`: not set (the expert API refuses it).
pub const REFINE_NOT_SET: i32 = 1100;
/// No refinement: the lowest precision's factorization and solve only.
pub const REFINE_NONE: i32 = 1101;
/// Classical iterative refinement.
pub const REFINE_CLASSICAL: i32 = 1102;
/// `CUSOLVER_IRS_REFINE_GMRES_NOPCOND`, the last value.
pub const REFINE_LAST: i32 = 1106;

/// The `cusolverPrecType_t` of `dtype` itself (S, D, C, Z).
pub fn main_precision(dtype: u8) -> Option<i32> {
    Some(match dtype {
        0 => PREC_R_32F,
        1 => PREC_R_64F,
        2 => PREC_R_32F + PREC_COMPLEX,
        3 => PREC_R_64F + PREC_COMPLEX,
        _ => return None,
    })
}

/// Whether an IRS solver of main precision `dtype` may factor in
/// `lowest`: the same kind (real or complex), and no wider than the main
/// precision (a float problem cannot factor in double).
pub fn irs_lowest_allowed(dtype: u8, lowest: i32) -> bool {
    let base = if is_complex(dtype) { PREC_COMPLEX } else { 0 };
    let Some(real) = lowest.checked_sub(base) else {
        return false;
    };
    match real {
        PREC_R_64F => dtype == 1 || dtype == 3,
        PREC_R_32F | PREC_R_16F | PREC_R_16BF | PREC_R_TF32 => element_size(dtype).is_some(),
        _ => false,
    }
}

/// `cublasOperation_t`: op(A) = A.
pub const OP_N: i32 = 0;
/// `cublasOperation_t`: op(A) = Aᵀ.
pub const OP_T: i32 = 1;
/// `cublasOperation_t`: op(A) = Aᴴ.
pub const OP_C: i32 = 2;

/// Bytes of one element of `dtype` (S, D, C, Z), None for another value.
pub fn element_size(dtype: u8) -> Option<u64> {
    match dtype {
        0 => Some(4),
        1 => Some(8),
        2 => Some(8),
        3 => Some(16),
        _ => None,
    }
}

/// Whether `dtype` is complex (C or Z).
pub fn is_complex(dtype: u8) -> bool {
    dtype >= 2
}

/// Bytes of one real value of `dtype`: what eigenvalues and singular values
/// are stored as.
pub fn real_size(dtype: u8) -> Option<u64> {
    element_size(dtype).map(|size| if is_complex(dtype) { size / 2 } else { size })
}

/// Arguments that cuSOLVER rejects with `CUSOLVER_STATUS_INVALID_VALUE`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("invalid cuSOLVER argument: {0}")]
pub struct InvalidValue(pub &'static str);

/// A device range `(address, bytes)` that a call reads or writes.
pub type Range = (u64, u64);

fn dim(value: i32, what: &'static str) -> Result<u64, InvalidValue> {
    u64::try_from(value).map_err(|_| InvalidValue(what))
}

/// The bytes an m×n column-major matrix with leading dimension `ld` spans
/// (none when it is empty), after checking ld ≥ max(1, rows).
fn matrix(
    ptr: u64,
    rows: u64,
    cols: u64,
    ld: i32,
    size: u64,
    what: &'static str,
) -> Result<Range, InvalidValue> {
    let ld = dim(ld, what)?;
    if ld < rows.max(1) {
        return Err(InvalidValue(what));
    }
    if rows == 0 || cols == 0 {
        return Ok((ptr, 0));
    }
    let elements = (cols - 1)
        .checked_mul(ld)
        .and_then(|e| e.checked_add(rows))
        .and_then(|e| e.checked_mul(size))
        .ok_or(InvalidValue(what))?;
    Ok((ptr, elements))
}

/// `batch` m×n matrices `ld * cols` elements apart, as one range.
fn strided(
    ptr: u64,
    rows: u64,
    cols: u64,
    ld: i32,
    size: u64,
    batch: u64,
    what: &'static str,
) -> Result<Range, InvalidValue> {
    let (_, one) = matrix(ptr, rows, cols, ld, size, what)?;
    if batch <= 1 || one == 0 {
        return Ok((ptr, if batch == 0 { 0 } else { one }));
    }
    let stride = dim(ld, what)?
        .checked_mul(cols)
        .and_then(|e| e.checked_mul(size))
        .ok_or(InvalidValue(what))?;
    let bytes = stride
        .checked_mul(batch - 1)
        .and_then(|b| b.checked_add(one))
        .ok_or(InvalidValue(what))?;
    Ok((ptr, bytes))
}

/// `batch` rows×cols matrices `stride` elements apart (at least one
/// matrix's `ld * cols`), as one range.
#[allow(clippy::too_many_arguments)]
fn with_stride(
    ptr: u64,
    rows: u64,
    cols: u64,
    ld: i32,
    stride: i64,
    size: u64,
    batch: u64,
    what: &'static str,
) -> Result<Range, InvalidValue> {
    let (_, one) = matrix(ptr, rows, cols, ld, size, what)?;
    let stride = u64::try_from(stride).map_err(|_| InvalidValue(what))?;
    if stride < dim(ld, what)?.saturating_mul(cols) {
        return Err(InvalidValue(what));
    }
    if batch == 0 || one == 0 {
        return Ok((ptr, 0));
    }
    let bytes = stride
        .checked_mul(size)
        .and_then(|b| b.checked_mul(batch - 1))
        .and_then(|b| b.checked_add(one))
        .ok_or(InvalidValue(what))?;
    Ok((ptr, bytes))
}

fn array(ptr: u64, count: u64, size: u64, what: &'static str) -> Result<Range, InvalidValue> {
    Ok((ptr, count.checked_mul(size).ok_or(InvalidValue(what))?))
}

fn uplo(value: i32) -> Result<(), InvalidValue> {
    if value == 0 || value == 1 {
        Ok(())
    } else {
        Err(InvalidValue("uplo"))
    }
}

/// The ranges of an Rf CSR matrix: row offsets, columns, double values.
fn rf_csr(n: u64, nnz: i32, [rowptr, colind, val]: [u64; 3]) -> Result<[Range; 3], InvalidValue> {
    let nnz = dim(nnz, "nnz")?;
    Ok([
        array(rowptr, n + 1, 4, "csrRowPtr")?,
        array(colind, nnz, 4, "csrColInd")?,
        array(val, nnz, 8, "csrVal")?,
    ])
}

/// A cusolverRf batch size: at least 1.
fn rf_batch(batch: i32) -> Result<u64, InvalidValue> {
    match dim(batch, "batchSize")? {
        0 => Err(InvalidValue("batchSize")),
        batch => Ok(batch),
    }
}

/// The ranges of a batched Rf CSR matrix: row offsets, columns and the
/// device array of `batch` pointers to values (the values themselves are
/// checked where the pointers are read: on the device).
fn rf_batch_csr(
    n: u64,
    nnz: i32,
    [rowptr, colind, values]: [u64; 3],
    batch: u64,
) -> Result<[Range; 3], InvalidValue> {
    let [rowptr, colind, _] = rf_csr(n, nnz, [rowptr, colind, 0])?;
    Ok([rowptr, colind, array(values, batch, 8, "csrValA_array")?])
}

/// A CSR index base (`cusparseIndexBase_t`): 0 or 1.
fn sp_base(base: i32) -> Result<(), InvalidValue> {
    if base == 0 || base == 1 {
        Ok(())
    } else {
        Err(InvalidValue("index base"))
    }
}

/// What `devInfo` spans: one `int`.
fn info_range(info: u64) -> Range {
    (info, 4)
}

impl Call {
    /// Checks the call's arguments as cuSOLVER does before launching, and
    /// answers the device ranges it reads and writes (the matrices as their
    /// leading dimensions span them, pivots, `tau`, `devInfo`, ...). The
    /// client checks them against the application's allocations, the server
    /// against its memory before touching any.
    pub fn device_ranges(&self) -> Result<Vec<Range>, InvalidValue> {
        let size = |dtype: u8| element_size(dtype).ok_or(InvalidValue("data type"));
        Ok(match *self {
            Call::Create {}
            | Call::Destroy { .. }
            | Call::SpBufferInfo { .. }
            | Call::SpZeroPivot { .. }
            | Call::SpInfoDestroy { .. }
            | Call::RfRefactor { .. }
            | Call::RfBatchRefactor { .. }
            | Call::RfDestroy { .. } => Vec::new(),
            Call::RfBatchSetup {
                batch,
                n,
                nnz_a,
                a,
                nnz_l,
                l,
                nnz_u,
                u,
                p,
                q,
                ..
            } => {
                let (n, batch) = (dim(n, "n")?, rf_batch(batch)?);
                let mut ranges = vec![array(p, n, 4, "P")?, array(q, n, 4, "Q")?];
                ranges.extend(rf_batch_csr(n, nnz_a, a, batch)?);
                for (nnz, m) in [(nnz_l, l), (nnz_u, u)] {
                    ranges.extend(rf_csr(n, nnz, m)?);
                }
                ranges
            }
            Call::RfBatchResetValues {
                batch,
                n,
                nnz_a,
                a,
                p,
                q,
                ..
            } => {
                let (n, batch) = (dim(n, "n")?, rf_batch(batch)?);
                let mut ranges = vec![array(p, n, 4, "P")?, array(q, n, 4, "Q")?];
                ranges.extend(rf_batch_csr(n, nnz_a, a, batch)?);
                ranges
            }
            Call::RfBatchSolve {
                batch,
                n,
                p,
                q,
                nrhs,
                temp,
                ldt,
                xf,
                ldxf,
                ..
            } => {
                if nrhs != 1 {
                    return Err(InvalidValue("nrhs"));
                }
                let (n, batch) = (dim(n, "n")?, rf_batch(batch)?);
                // The right-hand sides are checked where the pointers are
                // read: on the device.
                matrix(0, n, 1, ldxf, 8, "ldxf")?;
                vec![
                    array(p, n, 4, "P")?,
                    array(q, n, 4, "Q")?,
                    matrix(temp, n, batch.saturating_mul(2), ldt, 8, "ldt")?,
                    array(xf, batch, 8, "XF_array")?,
                ]
            }
            Call::RfSetup {
                n,
                nnz_a,
                a,
                nnz_l,
                l,
                nnz_u,
                u,
                p,
                q,
                ..
            } => {
                let n = dim(n, "n")?;
                let mut ranges = vec![array(p, n, 4, "P")?, array(q, n, 4, "Q")?];
                for (nnz, m) in [(nnz_a, a), (nnz_l, l), (nnz_u, u)] {
                    ranges.extend(rf_csr(n, nnz, m)?);
                }
                ranges
            }
            Call::RfResetValues {
                n, nnz_a, a, p, q, ..
            } => {
                let n = dim(n, "n")?;
                let mut ranges = vec![array(p, n, 4, "P")?, array(q, n, 4, "Q")?];
                ranges.extend(rf_csr(n, nnz_a, a)?);
                ranges
            }
            Call::RfExtract {
                n,
                diag,
                nnz_l,
                l,
                nnz_u,
                u,
                ..
            } => {
                let n = dim(n, "n")?;
                let mut ranges = rf_csr(n, nnz_l, l)?.to_vec();
                match diag {
                    -1 => {}
                    0..=3 => ranges.extend(rf_csr(n, nnz_u, u)?),
                    _ => return Err(InvalidValue("unit diagonal")),
                }
                ranges
            }
            Call::RfSolve {
                n,
                p,
                q,
                nrhs,
                temp,
                ldt,
                xf,
                ldxf,
                ..
            } => {
                // cuSOLVER supports one right-hand side.
                if nrhs != 1 {
                    return Err(InvalidValue("nrhs"));
                }
                let n = dim(n, "n")?;
                vec![
                    array(p, n, 4, "P")?,
                    array(q, n, 4, "Q")?,
                    matrix(temp, n, 1, ldt, 8, "ldt")?,
                    matrix(xf, n, 1, ldxf, 8, "ldxf")?,
                ]
            }
            Call::SpLsv {
                dtype,
                method,
                n,
                nnz,
                base,
                val,
                rowptr,
                colind,
                b,
                x,
                ..
            } => {
                if method > SP_QR {
                    return Err(InvalidValue("method"));
                }
                let (n, nnz, size) = (dim(n, "n")?, dim(nnz, "nnz")?, size(dtype)?);
                sp_base(base)?;
                vec![
                    array(val, nnz, size, "csrVal")?,
                    array(rowptr, n + 1, 4, "csrRowPtr")?,
                    array(colind, nnz, 4, "csrColInd")?,
                    array(b, n, size, "b")?,
                    array(x, n, size, "x")?,
                ]
            }
            Call::SpAnalysis {
                method,
                m,
                n,
                nnz,
                base,
                rowptr,
                colind,
                ..
            } => {
                if method != SP_CHOL && method != SP_QR {
                    return Err(InvalidValue("method"));
                }
                let (m, _, nnz) = (dim(m, "m")?, dim(n, "n")?, dim(nnz, "nnz")?);
                sp_base(base)?;
                vec![
                    array(rowptr, m + 1, 4, "csrRowPtr")?,
                    array(colind, nnz, 4, "csrColInd")?,
                ]
            }
            Call::SpSetup {
                dtype,
                m,
                n,
                nnz,
                val,
                ..
            } => {
                let (_, _, nnz, size) =
                    (dim(m, "m")?, dim(n, "n")?, dim(nnz, "nnz")?, size(dtype)?);
                vec![array(val, nnz, size, "csrVal")?]
            }
            Call::SpFactor {
                dtype,
                m,
                n,
                nnz,
                val,
                b,
                x,
                ..
            } => {
                let (m, n, nnz, size) =
                    (dim(m, "m")?, dim(n, "n")?, dim(nnz, "nnz")?, size(dtype)?);
                let mut ranges = Vec::new();
                if val != 0 {
                    ranges.push(array(val, nnz, size, "csrVal")?);
                }
                if b != 0 && x != 0 {
                    ranges.push(array(b, m, size, "b")?);
                    ranges.push(array(x, n, size, "x")?);
                }
                ranges
            }
            Call::SpCholDiag { dtype, n, diag, .. } => {
                let real = real_size(dtype).ok_or(InvalidValue("data type"))?;
                vec![array(diag, dim(n, "n")?, real, "diag")?]
            }
            Call::SpEigvsi {
                dtype,
                m,
                nnz,
                base,
                val,
                rowptr,
                colind,
                x0,
                maxite,
                mu,
                x,
                ..
            } => {
                let (m, nnz, size) = (dim(m, "m")?, dim(nnz, "nnz")?, size(dtype)?);
                sp_base(base)?;
                if maxite <= 0 {
                    return Err(InvalidValue("maxite"));
                }
                vec![
                    array(val, nnz, size, "csrVal")?,
                    array(rowptr, m + 1, 4, "csrRowPtr")?,
                    array(colind, nnz, 4, "csrColInd")?,
                    array(x0, m, size, "x0")?,
                    array(mu, 1, size, "mu")?,
                    array(x, m, size, "x")?,
                ]
            }
            Call::SpQrsvBatched {
                dtype,
                m,
                n,
                nnz,
                val,
                b,
                x,
                batch,
                ..
            } => {
                let (m, n, nnz, size) =
                    (dim(m, "m")?, dim(n, "n")?, dim(nnz, "nnz")?, size(dtype)?);
                let batch = dim(batch, "batchSize")?;
                let times = |count: u64, what| count.checked_mul(batch).ok_or(InvalidValue(what));
                vec![
                    array(val, times(nnz, "csrVal")?, size, "csrVal")?,
                    array(b, times(m, "b")?, size, "b")?,
                    array(x, times(n, "x")?, size, "x")?,
                ]
            }
            Call::SpSolve {
                dtype, m, n, b, x, ..
            } => {
                let (m, n, size) = (dim(m, "m")?, dim(n, "n")?, size(dtype)?);
                vec![array(b, m, size, "b")?, array(x, n, size, "x")?]
            }
            Call::Getrf {
                dtype,
                m,
                n,
                a,
                lda,
                ipiv,
                info,
                ..
            } => {
                let (m, n) = (dim(m, "m")?, dim(n, "n")?);
                let mut ranges = vec![matrix(a, m, n, lda, size(dtype)?, "lda")?, info_range(info)];
                if ipiv != 0 {
                    ranges.push(array(ipiv, m.min(n), 4, "ipiv")?);
                }
                ranges
            }
            Call::Getrs {
                dtype,
                trans,
                n,
                nrhs,
                a,
                lda,
                ipiv,
                b,
                ldb,
                info,
                ..
            } => {
                if !(OP_N..=OP_C).contains(&trans) {
                    return Err(InvalidValue("trans"));
                }
                let (n, nrhs, size) = (dim(n, "n")?, dim(nrhs, "nrhs")?, size(dtype)?);
                let mut ranges = vec![
                    matrix(a, n, n, lda, size, "lda")?,
                    matrix(b, n, nrhs, ldb, size, "ldb")?,
                    info_range(info),
                ];
                if ipiv != 0 {
                    ranges.push(array(ipiv, n, 4, "ipiv")?);
                }
                ranges
            }
            Call::Potrf {
                dtype,
                uplo: u,
                n,
                a,
                lda,
                info,
                ..
            } => {
                uplo(u)?;
                vec![
                    matrix(a, dim(n, "n")?, dim(n, "n")?, lda, size(dtype)?, "lda")?,
                    info_range(info),
                ]
            }
            Call::Potrs {
                dtype,
                uplo: u,
                n,
                nrhs,
                a,
                lda,
                b,
                ldb,
                info,
                ..
            } => {
                uplo(u)?;
                let (n, nrhs, size) = (dim(n, "n")?, dim(nrhs, "nrhs")?, size(dtype)?);
                vec![
                    matrix(a, n, n, lda, size, "lda")?,
                    matrix(b, n, nrhs, ldb, size, "ldb")?,
                    info_range(info),
                ]
            }
            Call::Geqrf {
                dtype,
                m,
                n,
                a,
                lda,
                tau,
                info,
                ..
            } => {
                let (m, n, size) = (dim(m, "m")?, dim(n, "n")?, size(dtype)?);
                vec![
                    matrix(a, m, n, lda, size, "lda")?,
                    array(tau, m.min(n), size, "tau")?,
                    info_range(info),
                ]
            }
            Call::Ormqr {
                dtype,
                side,
                trans,
                m,
                n,
                k,
                a,
                lda,
                tau,
                c,
                ldc,
                info,
                ..
            } => {
                let adjoint = if is_complex(dtype) { OP_C } else { OP_T };
                if trans != OP_N && trans != adjoint {
                    return Err(InvalidValue("trans"));
                }
                let (m, n, k, size) = (dim(m, "m")?, dim(n, "n")?, dim(k, "k")?, size(dtype)?);
                let nq = match side {
                    0 => m,
                    1 => n,
                    _ => return Err(InvalidValue("side")),
                };
                if k > nq {
                    return Err(InvalidValue("k"));
                }
                vec![
                    matrix(a, nq, k, lda, size, "lda")?,
                    array(tau, k, size, "tau")?,
                    matrix(c, m, n, ldc, size, "ldc")?,
                    info_range(info),
                ]
            }
            Call::Orgqr {
                dtype,
                m,
                n,
                k,
                a,
                lda,
                tau,
                info,
                ..
            } => {
                let (m, n, k, size) = (dim(m, "m")?, dim(n, "n")?, dim(k, "k")?, size(dtype)?);
                // LAPACK's m ≥ n ≥ k.
                if n > m || k > n {
                    return Err(InvalidValue("m >= n >= k"));
                }
                vec![
                    matrix(a, m, n, lda, size, "lda")?,
                    array(tau, k, size, "tau")?,
                    info_range(info),
                ]
            }
            Call::Syevd {
                dtype,
                jobz,
                uplo: u,
                n,
                a,
                lda,
                w,
                info,
                ..
            } => {
                uplo(u)?;
                if jobz != 0 && jobz != 1 {
                    return Err(InvalidValue("jobz"));
                }
                let n = dim(n, "n")?;
                let real = real_size(dtype).ok_or(InvalidValue("data type"))?;
                vec![
                    matrix(a, n, n, lda, size(dtype)?, "lda")?,
                    array(w, n, real, "W")?,
                    info_range(info),
                ]
            }
            Call::Geev {
                dtype,
                w_real,
                jobvl,
                jobvr,
                n,
                a,
                lda,
                w,
                vl,
                ldvl,
                vr,
                ldvr,
                info,
                ..
            } => {
                let (n, size) = (dim(n, "n")?, size(dtype)?);
                // Complex W of a real A holds pairs of reals, as does W of
                // 2n reals.
                if w_real > 1 || (w_real == 1 && is_complex(dtype)) {
                    return Err(InvalidValue("data type of W"));
                }
                let w_bytes = if is_complex(dtype) { size } else { 2 * size };
                let mut ranges = vec![
                    matrix(a, n, n, lda, size, "lda")?,
                    array(w, n, w_bytes, "W")?,
                    info_range(info),
                ];
                for (job, ptr, ld, what) in [(jobvl, vl, ldvl, "ldvl"), (jobvr, vr, ldvr, "ldvr")] {
                    match job {
                        0 if ld >= 1 => {}
                        1 => ranges.push(matrix(ptr, n, n, ld, size, what)?),
                        0 => return Err(InvalidValue(what)),
                        _ => return Err(InvalidValue("jobvl/jobvr")),
                    }
                }
                ranges
            }
            Call::PotrfBatched {
                dtype,
                uplo: u,
                n,
                a,
                lda,
                info,
                batch,
                ..
            } => {
                uplo(u)?;
                let (n, batch) = (dim(n, "n")?, dim(batch, "batchSize")?);
                // The matrices themselves are checked where the pointers
                // are read: on the device.
                matrix(0, n, n, lda, size(dtype)?, "lda")?;
                vec![
                    array(a, batch, 8, "Aarray")?,
                    array(info, batch, 4, "infoArray")?,
                ]
            }
            Call::PotrsBatched {
                dtype,
                uplo: u,
                n,
                nrhs,
                a,
                lda,
                b,
                ldb,
                info,
                batch,
                ..
            } => {
                uplo(u)?;
                if nrhs != 1 {
                    return Err(InvalidValue("nrhs (must be 1)"));
                }
                let (n, batch, size) = (dim(n, "n")?, dim(batch, "batchSize")?, size(dtype)?);
                matrix(0, n, n, lda, size, "lda")?;
                matrix(0, n, 1, ldb, size, "ldb")?;
                vec![
                    array(a, batch, 8, "Aarray")?,
                    array(b, batch, 8, "Barray")?,
                    info_range(info),
                ]
            }
            Call::Syevj {
                dtype,
                jobz,
                uplo: u,
                n,
                a,
                lda,
                w,
                info,
                batch,
                batched,
                ..
            } => {
                uplo(u)?;
                if jobz != 0 && jobz != 1 {
                    return Err(InvalidValue("jobz"));
                }
                if batched != 0 && n > JACOBI_BATCHED_MAX {
                    return Err(InvalidValue("n > 32 (syevjBatched)"));
                }
                if batched == 0 && batch != 1 {
                    return Err(InvalidValue("batch of a non-batched call"));
                }
                let (n, batch, size) = (dim(n, "n")?, dim(batch, "batchSize")?, size(dtype)?);
                let real = real_size(dtype).ok_or(InvalidValue("data type"))?;
                vec![
                    strided(a, n, n, lda, size, batch, "lda")?,
                    array(w, n.checked_mul(batch).ok_or(InvalidValue("W"))?, real, "W")?,
                    array(info, batch, 4, "info")?,
                ]
            }
            Call::Gesvdj {
                dtype,
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
                batch,
                batched,
                ..
            } => {
                if jobz != 0 && jobz != 1 {
                    return Err(InvalidValue("jobz"));
                }
                if batched != 0 && (m > JACOBI_BATCHED_MAX || n > JACOBI_BATCHED_MAX) {
                    return Err(InvalidValue("m or n > 32 (gesvdjBatched)"));
                }
                if batched == 0 && batch != 1 {
                    return Err(InvalidValue("batch of a non-batched call"));
                }
                if econ != 0 && econ != 1 {
                    return Err(InvalidValue("econ"));
                }
                let (m, n, batch, size) = (
                    dim(m, "m")?,
                    dim(n, "n")?,
                    dim(batch, "batchSize")?,
                    size(dtype)?,
                );
                let real = real_size(dtype).ok_or(InvalidValue("data type"))?;
                let k = m.min(n);
                let (ucols, vcols) = if econ == 1 && batched == 0 {
                    (k, k)
                } else {
                    (m, n)
                };
                let mut ranges = vec![
                    strided(a, m, n, lda, size, batch, "lda")?,
                    array(s, k.checked_mul(batch).ok_or(InvalidValue("S"))?, real, "S")?,
                    array(info, batch, 4, "info")?,
                ];
                // cuSOLVER checks ldu and ldv whatever jobz says.
                let u_range = strided(u, m, ucols, ldu, size, batch, "ldu")?;
                let v_range = strided(v, n, vcols, ldv, size, batch, "ldv")?;
                if jobz == 1 {
                    ranges.extend([u_range, v_range]);
                }
                ranges
            }
            Call::Gesvda {
                dtype,
                jobz,
                rank,
                m,
                n,
                a,
                lda,
                stride_a,
                s,
                stride_s,
                u,
                ldu,
                stride_u,
                v,
                ldv,
                stride_v,
                info,
                batch,
                ..
            } => {
                if jobz != 0 && jobz != 1 {
                    return Err(InvalidValue("jobz"));
                }
                let (m, n, batch, size) = (
                    dim(m, "m")?,
                    dim(n, "n")?,
                    dim(batch, "batchSize")?,
                    size(dtype)?,
                );
                // cuSOLVER's gesvda takes tall matrices and 1 ≤ rank ≤ n.
                if m < n {
                    return Err(InvalidValue("m < n"));
                }
                let (k, rank) = (rank, dim(rank, "rank")?);
                if rank == 0 || rank > n {
                    return Err(InvalidValue("rank"));
                }
                let real = real_size(dtype).ok_or(InvalidValue("data type"))?;
                let mut ranges = vec![
                    with_stride(a, m, n, lda, stride_a, size, batch, "lda/strideA")?,
                    with_stride(s, rank, 1, k, stride_s, real, batch, "strideS")?,
                    array(info, batch, 4, "info")?,
                ];
                // Checked whatever jobz says, as cuSOLVER does.
                let u_range = with_stride(u, m, rank, ldu, stride_u, size, batch, "ldu/strideU")?;
                let v_range = with_stride(v, n, rank, ldv, stride_v, size, batch, "ldv/strideV")?;
                if jobz == 1 {
                    ranges.extend([u_range, v_range]);
                }
                ranges
            }
            Call::Irs {
                dtype,
                lowest,
                gels,
                m,
                n,
                nrhs,
                a,
                lda,
                ipiv,
                b,
                ldb,
                x,
                ldx,
                info,
                refine,
                max_iters,
                ..
            } => {
                let (m, n, nrhs, size) =
                    (dim(m, "m")?, dim(n, "n")?, dim(nrhs, "nrhs")?, size(dtype)?);
                if !irs_lowest_allowed(dtype, lowest) {
                    return Err(InvalidValue("lowest precision"));
                }
                if !(REFINE_NONE..=REFINE_LAST).contains(&refine) {
                    return Err(InvalidValue("refinement solver"));
                }
                if max_iters < 0 {
                    return Err(InvalidValue("maximum iterations"));
                }
                match gels {
                    0 if m != n => return Err(InvalidValue("gesv: m != n")),
                    // cuSOLVER's IRS least squares takes tall matrices only.
                    1 if m < n => return Err(InvalidValue("gels: m < n")),
                    0 | 1 => {}
                    _ => return Err(InvalidValue("gels")),
                }
                let mut ranges = vec![
                    matrix(a, m, n, lda, size, "ldda")?,
                    matrix(b, m, nrhs, ldb, size, "lddb")?,
                    matrix(x, n, nrhs, ldx, size, "lddx")?,
                    info_range(info),
                ];
                if ipiv != 0 {
                    ranges.push(array(ipiv, n, 4, "dipiv")?);
                }
                ranges
            }
            Call::Gesvd {
                dtype,
                jobu,
                jobvt,
                m,
                n,
                a,
                lda,
                s,
                u,
                ldu,
                vt,
                ldvt,
                info,
                ..
            } => {
                let job = |j: u8| matches!(j, b'A' | b'S' | b'O' | b'N');
                if !job(jobu) || !job(jobvt) {
                    return Err(InvalidValue("jobu/jobvt"));
                }
                if jobu == b'O' && jobvt == b'O' {
                    return Err(InvalidValue("jobu and jobvt both 'O'"));
                }
                let (m, n, size) = (dim(m, "m")?, dim(n, "n")?, size(dtype)?);
                // cuSOLVER's gesvd supports only m >= n.
                if m < n {
                    return Err(InvalidValue("m < n"));
                }
                let real = real_size(dtype).ok_or(InvalidValue("data type"))?;
                let mut ranges = vec![
                    matrix(a, m, n, lda, size, "lda")?,
                    array(s, n, real, "S")?,
                    info_range(info),
                ];
                match jobu {
                    b'A' => ranges.push(matrix(u, m, m, ldu, size, "ldu")?),
                    b'S' => ranges.push(matrix(u, m, n, ldu, size, "ldu")?),
                    _ => {}
                }
                if matches!(jobvt, b'A' | b'S') {
                    ranges.push(matrix(vt, n, n, ldvt, size, "ldvt")?);
                }
                ranges
            }
        })
    }

    /// The handle the call runs on, if any.
    pub fn handle(&self) -> Option<u64> {
        match *self {
            Call::Create {}
            | Call::SpInfoDestroy { .. }
            | Call::RfSetup { .. }
            | Call::RfResetValues { .. }
            | Call::RfRefactor { .. }
            | Call::RfSolve { .. }
            | Call::RfExtract { .. }
            | Call::RfBatchSetup { .. }
            | Call::RfBatchResetValues { .. }
            | Call::RfBatchRefactor { .. }
            | Call::RfBatchSolve { .. }
            | Call::RfDestroy { .. } => None,
            Call::Destroy { handle }
            | Call::Getrf { handle, .. }
            | Call::Getrs { handle, .. }
            | Call::Potrf { handle, .. }
            | Call::Potrs { handle, .. }
            | Call::Geqrf { handle, .. }
            | Call::Ormqr { handle, .. }
            | Call::Orgqr { handle, .. }
            | Call::Syevd { handle, .. }
            | Call::Gesvd { handle, .. }
            | Call::PotrfBatched { handle, .. }
            | Call::PotrsBatched { handle, .. }
            | Call::Syevj { handle, .. }
            | Call::Gesvdj { handle, .. }
            | Call::Geev { handle, .. }
            | Call::Gesvda { handle, .. }
            | Call::Irs { handle, .. } => Some(handle),
            Call::SpLsv { handle, .. }
            | Call::SpAnalysis { handle, .. }
            | Call::SpBufferInfo { handle, .. }
            | Call::SpSetup { handle, .. }
            | Call::SpFactor { handle, .. }
            | Call::SpZeroPivot { handle, .. }
            | Call::SpSolve { handle, .. }
            | Call::SpCholDiag { handle, .. }
            | Call::SpEigvsi { handle, .. }
            | Call::SpQrsvBatched { handle, .. } => Some(handle),
        }
    }
}
