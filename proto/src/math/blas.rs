//! cuBLAS calls on the wire.
//!
//! Handles live on the server ([`Call::Create`] answers the new handle's id
//! as a `u64`); the handle's stream, pointer mode and workspace stay with
//! the client, which queues each call on the handle's stream. Element types
//! are `cudaDataType` values ([`dtype`]); matrices are column-major, named
//! by device address and leading dimension, as in cuBLAS. Enumerations
//! (`cublasOperation_t`, `cublasFillMode_t`, ...) travel as cuBLAS's own
//! values.

crate::wire_enum! {
    /// A scalar argument (`alpha`, `beta`, a rotation's `c` and `s`).
    #[derive(Debug, Clone, Copy, PartialEq)]
    pub enum Scalar {
        /// Host pointer mode: the client read the value at call time (real
        /// and imaginary part; real types leave `im` at 0).
        0 Host { re: f64, im: f64 },
        /// Device pointer mode: the server reads the value, of the call's
        /// scalar type, at this device address when the call runs.
        1 Device { ptr: u64 },
    }
}

crate::wire_struct! {
    /// One operand matrix (or vector, with `ld` as its increment).
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    pub struct Operand {
        /// Device address (of the first matrix, or of the device array of
        /// per-batch pointers in [`Call::Gemm`] with `pointer_arrays`).
        pub ptr: u64,
        /// Leading dimension (column stride) in elements, or increment.
        pub ld: i64,
        /// Element distance between consecutive matrices of a strided batch.
        pub stride: i64,
    }
}

/// `cudaDataType` values of the element types cuBLAS computes in.
pub mod dtype {
    /// `CUDA_R_32F`: float.
    pub const R32F: u8 = 0;
    /// `CUDA_R_64F`: double.
    pub const R64F: u8 = 1;
    /// `CUDA_R_16F`: IEEE half.
    pub const R16F: u8 = 2;
    /// `CUDA_C_32F`: cuComplex.
    pub const C32F: u8 = 4;
    /// `CUDA_C_64F`: cuDoubleComplex.
    pub const C64F: u8 = 5;
    /// `CUDA_R_16BF`: bfloat16.
    pub const R16BF: u8 = 14;

    /// Bytes per element of `dtype`, or `None` for a type cuBLAS on rcud
    /// does not handle.
    pub fn size(dtype: u8) -> Option<u64> {
        Some(match dtype {
            R16F | R16BF => 2,
            R32F => 4,
            R64F | C32F => 8,
            C64F => 16,
            _ => return None,
        })
    }

    /// Whether `dtype` is complex.
    pub fn is_complex(dtype: u8) -> bool {
        matches!(dtype, C32F | C64F)
    }
}

/// Level-1 operations of [`Call::Level1`].
pub mod level1 {
    /// `y = alpha x + y`.
    pub const AXPY: u8 = 0;
    /// `x = alpha x` (`alpha` real for Csscal/Zdscal: `scalar_dtype`).
    pub const SCAL: u8 = 1;
    /// `x . y` without conjugation (dot, dotu).
    pub const DOTU: u8 = 2;
    /// `conj(x) . y` (dotc).
    pub const DOTC: u8 = 3;
    /// Euclidean norm.
    pub const NRM2: u8 = 4;
    /// Sum of `|re| + |im|`.
    pub const ASUM: u8 = 5;
    /// 1-based index of the first largest `|re| + |im|`, as `int`, or as
    /// `int64_t` with `scalar_dtype` `CUDA_R_64I` (24).
    pub const AMAX: u8 = 6;
    /// 1-based index of the first smallest `|re| + |im|`.
    pub const AMIN: u8 = 7;
    /// `y = x`.
    pub const COPY: u8 = 8;
    /// `x <-> y`.
    pub const SWAP: u8 = 9;
    /// Plane rotation: `x = c x + s y`, `y = c y - conj(s) x` (`alpha` = c,
    /// `beta` = s, of `scalar_dtype`).
    pub const ROT: u8 = 10;
}

/// Banded and packed matrix-vector operations of [`Call::Banded`].
pub mod level2 {
    /// `y = alpha op(A) x + beta y`, `A` general banded (gbmv).
    pub const GBMV: u8 = 0;
    /// `y = alpha A x + beta y`, `A` symmetric (Hermitian with
    /// `hermitian`) banded (sbmv, hbmv).
    pub const SBMV: u8 = 1;
    /// As [`SBMV`] with `A` packed (spmv, hpmv).
    pub const SPMV: u8 = 2;
    /// `x = op(A) x`, `A` triangular banded (tbmv).
    pub const TBMV: u8 = 3;
    /// `x = op(A)^-1 x`, `A` triangular banded (tbsv).
    pub const TBSV: u8 = 4;
    /// `x = op(A) x`, `A` triangular packed (tpmv).
    pub const TPMV: u8 = 5;
    /// `x = op(A)^-1 x`, `A` triangular packed (tpsv).
    pub const TPSV: u8 = 6;
}

crate::wire_enum! {
    /// A cuBLAS call.
    // Decoded once and consumed at once; the size of the GEMM variants
    // costs nothing there.
    #[allow(clippy::large_enum_variant)]
    #[derive(Debug, Clone, PartialEq)]
    pub enum Call {
        /// `cublasCreate_v2`: answers the handle's id (`u64`).
        1 Create {},
        /// `cublasDestroy_v2`.
        2 Destroy { handle: u64 },
        /// Level 1 ([`level1`]) on vectors `x` (and `y`) of `n` elements.
        /// `scalar_dtype` is the type of `alpha`/`beta` (real for the
        /// real-scaled complex forms). `result` is where a reduction's
        /// result goes: its device address in device pointer mode, 0 in host
        /// pointer mode (the reply's `out` carries its bytes).
        3 Level1 {
            handle: u64,
            op: u8,
            dtype: u8,
            scalar_dtype: u8,
            n: i64,
            x: Operand,
            y: Operand,
            alpha: Scalar,
            beta: Scalar,
            result: u64,
        },
        /// `y = alpha op(A) x + beta y` (gemv).
        4 Gemv {
            handle: u64,
            dtype: u8,
            trans: i32,
            m: i64,
            n: i64,
            alpha: Scalar,
            a: Operand,
            x: Operand,
            beta: Scalar,
            y: Operand,
        },
        /// `A = alpha x y^T + A` (ger, geru), or `x y^H` with `conj` (gerc).
        5 Ger {
            handle: u64,
            dtype: u8,
            conj: bool,
            m: i64,
            n: i64,
            alpha: Scalar,
            x: Operand,
            y: Operand,
            a: Operand,
        },
        /// `y = alpha A x + beta y` with `A` symmetric (symv) or Hermitian
        /// (hemv), stored in its `uplo` triangle.
        6 Symv {
            handle: u64,
            dtype: u8,
            hermitian: bool,
            uplo: i32,
            n: i64,
            alpha: Scalar,
            a: Operand,
            x: Operand,
            beta: Scalar,
            y: Operand,
        },
        /// `x = op(A) x` (trmv) or `x = op(A)^-1 x` (trsv, with `solve`).
        7 Trmv {
            handle: u64,
            dtype: u8,
            solve: bool,
            uplo: i32,
            trans: i32,
            diag: i32,
            n: i64,
            a: Operand,
            x: Operand,
        },
        /// `C = alpha op(A) op(B) + beta C`, for `batch` products: strided
        /// (`Operand::stride`) or, with `pointer_arrays`, the operands'
        /// `ptr` name device arrays of per-batch device pointers. `types`
        /// are the `cudaDataType`s of A, B, C and of the computation (and
        /// of alpha and beta).
        8 Gemm {
            handle: u64,
            types: [u8; 4],
            transa: i32,
            transb: i32,
            m: i64,
            n: i64,
            k: i64,
            alpha: Scalar,
            a: Operand,
            b: Operand,
            beta: Scalar,
            c: Operand,
            batch: i64,
            pointer_arrays: bool,
        },
        /// `C = alpha A B + beta C` (side left) or `alpha B A + beta C`
        /// with `A` symmetric (symm) or Hermitian (hemm).
        9 Symm {
            handle: u64,
            dtype: u8,
            hermitian: bool,
            side: i32,
            uplo: i32,
            m: i64,
            n: i64,
            alpha: Scalar,
            a: Operand,
            b: Operand,
            beta: Scalar,
            c: Operand,
        },
        /// `C = alpha op(A) op(A)^T + beta C` (syrk) or `op(A) op(A)^H`
        /// (herk, real alpha and beta), updating the `uplo` triangle.
        10 Syrk {
            handle: u64,
            dtype: u8,
            hermitian: bool,
            uplo: i32,
            trans: i32,
            n: i64,
            k: i64,
            alpha: Scalar,
            a: Operand,
            beta: Scalar,
            c: Operand,
        },
        /// `C = alpha op(A) B` (side left) or `alpha B op(A)` (trmm, out of
        /// place into C), or `B = alpha op(A)^-1 B` / `alpha B op(A)^-1`
        /// in place (trsm, with `solve`; `c` is ignored).
        11 Trmm {
            handle: u64,
            dtype: u8,
            solve: bool,
            side: i32,
            uplo: i32,
            trans: i32,
            diag: i32,
            m: i64,
            n: i64,
            alpha: Scalar,
            a: Operand,
            b: Operand,
            c: Operand,
        },
        /// `C = alpha op(A) + beta op(B)` (geam).
        12 Geam {
            handle: u64,
            dtype: u8,
            transa: i32,
            transb: i32,
            m: i64,
            n: i64,
            alpha: Scalar,
            a: Operand,
            beta: Scalar,
            b: Operand,
            c: Operand,
        },
        /// `C = A diag(x)` (side right) or `diag(x) A` (side left) (dgmm).
        13 Dgmm {
            handle: u64,
            dtype: u8,
            side: i32,
            m: i64,
            n: i64,
            a: Operand,
            x: Operand,
            c: Operand,
        },
        /// `cublas<t>getrfBatched`: the LU factorization with partial
        /// pivoting (none when `pivots` is 0) of `batch` n x n matrices,
        /// in place. `a.ptr` is a device array of `batch` matrix pointers;
        /// `pivots` receives n 1-based row indices per matrix, `info` one
        /// `int` per matrix (0, or k when U(k, k) is exactly zero).
        14 GetrfBatched {
            handle: u64,
            dtype: u8,
            n: i64,
            a: Operand,
            pivots: u64,
            info: u64,
            batch: i64,
        },
        /// `cublas<t>getrsBatched`: solves op(A_i) X_i = B_i in place in
        /// B_i with the factorization of [`Call::GetrfBatched`] (`pivots`
        /// 0: made without pivoting). `a.ptr` and `b.ptr` are pointer
        /// arrays. cuBLAS's host `info` is settled on the client.
        15 GetrsBatched {
            handle: u64,
            dtype: u8,
            trans: i32,
            n: i64,
            nrhs: i64,
            a: Operand,
            pivots: u64,
            b: Operand,
            batch: i64,
        },
        /// `cublas<t>getriBatched`: C_i = inverse of A_i from the
        /// factorization of [`Call::GetrfBatched`]; `info` one `int` per
        /// matrix (0, or k when U(k, k) is exactly zero and C_i is left).
        16 GetriBatched {
            handle: u64,
            dtype: u8,
            n: i64,
            a: Operand,
            pivots: u64,
            c: Operand,
            info: u64,
            batch: i64,
        },
        /// A banded or packed matrix-vector operation ([`level2`]). `m`
        /// and `kl` are gbmv's rows and subdiagonals; `k` is gbmv's
        /// superdiagonals or the band width of the symmetric and
        /// triangular forms. Packed matrices hold `n (n + 1) / 2` elements
        /// (`a.ld` unused). The triangular forms use `uplo`, `trans`,
        /// `diag` and `x` only; the others ignore `diag`.
        17 Banded {
            handle: u64,
            dtype: u8,
            kind: u8,
            hermitian: bool,
            uplo: i32,
            trans: i32,
            diag: i32,
            m: i64,
            n: i64,
            kl: i64,
            k: i64,
            alpha: Scalar,
            a: Operand,
            x: Operand,
            beta: Scalar,
            y: Operand,
        },
        /// Rank-1 and rank-2 updates of the `uplo` triangle of `A`:
        /// `alpha x x^T` (syr), `alpha x x^H` (her, real alpha), `alpha
        /// (x y^T + y x^T)` (syr2), `alpha x y^H + conj(alpha) y x^H`
        /// (her2), with `two` for the rank-2 forms, and `A` packed
        /// (`n (n + 1) / 2` elements, `a.ld` unused) with `packed` (spr,
        /// hpr, spr2, hpr2).
        18 Syr {
            handle: u64,
            dtype: u8,
            hermitian: bool,
            two: bool,
            packed: bool,
            uplo: i32,
            n: i64,
            alpha: Scalar,
            x: Operand,
            y: Operand,
            a: Operand,
        },
        /// Updates of the `uplo` triangle of `C`: `alpha (op(A) op(B)^T +
        /// op(B) op(A)^T) + beta C` (syr2k), `alpha op(A) op(B)^H +
        /// conj(alpha) op(B) op(A)^H + beta C` (her2k, real beta), or with
        /// `x` the one product `alpha op(A) op(B)^T (^H) + beta C` (syrkx,
        /// herkx, real beta).
        19 Syr2k {
            handle: u64,
            dtype: u8,
            hermitian: bool,
            x: bool,
            uplo: i32,
            trans: i32,
            n: i64,
            k: i64,
            alpha: Scalar,
            a: Operand,
            b: Operand,
            beta: Scalar,
            c: Operand,
        },
        /// Rotation construction: Givens (rotg: in `a`, `b`; out `a` = r,
        /// `b` = z (real types), `c` (real), `s`) or modified Givens with
        /// `modified` (rotmg, real types: in `d1`, `d2`, `x1`, `y1`; out
        /// `d1`, `d2`, `x1`, `param[5]`). In host pointer mode `ptrs` are 0,
        /// `values` carry the inputs (rotg: a.re, a.im, b.re, b.im; rotmg:
        /// d1, d2, x1, y1) and the reply the outputs as bytes of their
        /// types in that order; in device pointer mode `ptrs` are their
        /// device addresses (rotg: a, b, c, s; rotmg: d1, d2, x1, y1,
        /// param).
        20 Rotg {
            handle: u64,
            dtype: u8,
            modified: bool,
            values: [f64; 4],
            ptrs: [u64; 5],
        },
        /// Applies the modified Givens rotation `param` (flag, h11, h21,
        /// h12, h22) to `x` and `y` (rotm, real types): its values in
        /// host pointer mode, or its device address `param_ptr` (non-zero)
        /// in device pointer mode.
        21 Rotm {
            handle: u64,
            dtype: u8,
            n: i64,
            x: Operand,
            y: Operand,
            param: [f64; 5],
            param_ptr: u64,
        },
        /// `cublas<t>matinvBatched`: C_i = inverse of A_i (n ≤ 32) by LU
        /// with partial pivoting, A_i untouched. `a.ptr` and `c.ptr` are
        /// pointer arrays; `info` one `int` per matrix (0, or k when
        /// U(k, k) is exactly zero).
        22 MatinvBatched {
            handle: u64,
            dtype: u8,
            n: i64,
            a: Operand,
            c: Operand,
            info: u64,
            batch: i64,
        },
        /// `cublas<t>trsmBatched`: B_i = alpha op(A_i)^-1 B_i (side left)
        /// or alpha B_i op(A_i)^-1 (side right), in place. `a.ptr` and
        /// `b.ptr` are device arrays of `batch` matrix pointers.
        23 TrsmBatched {
            handle: u64,
            dtype: u8,
            side: i32,
            uplo: i32,
            trans: i32,
            diag: i32,
            m: i64,
            n: i64,
            alpha: Scalar,
            a: Operand,
            b: Operand,
            batch: i64,
        },
        /// `cublas<t>gemvBatched` (with `pointer_arrays`: the operands'
        /// `ptr` are device arrays of per-batch pointers) or
        /// `gemvStridedBatched` (`Operand::stride` in elements): y_i =
        /// alpha op(A_i) x_i + beta y_i. `types` are the `cudaDataType`s of
        /// A and x, of y, and of the computation and the scalars (HSH, HSS,
        /// TST, TSS: half or bfloat16 inputs, float compute).
        24 GemvBatched {
            handle: u64,
            types: [u8; 3],
            trans: i32,
            m: i64,
            n: i64,
            alpha: Scalar,
            a: Operand,
            x: Operand,
            beta: Scalar,
            y: Operand,
            batch: i64,
            pointer_arrays: bool,
        },
        /// `cublas<t>geqrfBatched`: Householder QR of every m x n A_i in
        /// place (LAPACK's geqrf storage); `tau` is a device array of
        /// `batch` pointers to min(m, n) scalars each. The host `info` is
        /// settled on the client.
        25 GeqrfBatched {
            handle: u64,
            dtype: u8,
            m: i64,
            n: i64,
            a: Operand,
            tau: u64,
            batch: i64,
        },
        /// `cublas<t>gelsBatched` (trans N, m >= n): the least-squares
        /// solutions of A_i X_i = C_i, in the first n rows of the C_i; A_i
        /// is overwritten with its QR factorization. `dev_info` (0: none)
        /// gets one `int` per matrix: 0, or k when R(k, k) is exactly
        /// zero. The host `info` is settled on the client.
        26 GelsBatched {
            handle: u64,
            dtype: u8,
            trans: i32,
            m: i64,
            n: i64,
            nrhs: i64,
            a: Operand,
            c: Operand,
            dev_info: u64,
            batch: i64,
        },
    }
}

/// The largest matrix `cublas<t>matinvBatched` inverts.
pub const MATINV_MAX: i64 = 32;
