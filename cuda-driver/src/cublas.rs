//! NVIDIA's cuBLAS, loaded at run time, for the `cuda` backend's math calls.
//!
//! As for the driver, every entry point is resolved once when the library is
//! opened ([`Blas::load_from`]), through checked function pointers; a host without
//! cuBLAS gets a [`LibraryLoadError`] value. Device addresses are plain numbers here:
//! the backend checks every range a call touches against the client's own
//! allocations before it calls any of these methods. Host pointers (scalars
//! and results in `CUBLAS_POINTER_MODE_HOST`) never come from the caller:
//! they point into buffers owned here, sized for the function's types, and
//! the pointer mode is set for each call from the kind of its scalars, so a
//! device address is never read as a host pointer or the other way round.

use std::ffi::{c_int, c_void};
use std::fmt;
use std::sync::Arc;

use crate::math_library::loaded_library;
use crate::{symbol, CtxInner, DriverError, LoadError};
use cudarc::driver::sys::CUstream;

/// The file names NVIDIA's cuBLAS is installed under, newest first.
pub const LIBRARIES: [&str; 2] = ["libcublas.so.13", "libcublas.so.12"];

type Handle = *mut c_void;
type Status = c_int;
type In = *const c_void;
type Out = *mut c_void;

/// `CUBLAS_POINTER_MODE_HOST` / `_DEVICE`.
const POINTER_MODE_HOST: c_int = 0;
const POINTER_MODE_DEVICE: c_int = 1;
/// `CUBLAS_GEMM_DEFAULT`.
const GEMM_DEFAULT: c_int = -1;

/// Element precision of the typed (`S`, `D`, `C`, `Z`) entry points.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Precision {
    /// float.
    S = 0,
    /// double.
    D = 1,
    /// cuComplex.
    C = 2,
    /// cuDoubleComplex.
    Z = 3,
}

impl Precision {
    /// Bytes of one element.
    pub fn size(self) -> usize {
        match self {
            Self::S => 4,
            Self::D | Self::C => 8,
            Self::Z => 16,
        }
    }

    /// Bytes of the real type of the same precision.
    pub fn real_size(self) -> usize {
        match self {
            Self::S | Self::C => 4,
            Self::D | Self::Z => 8,
        }
    }
}

type Axpy = unsafe extern "C" fn(Handle, c_int, In, In, c_int, Out, c_int) -> Status;
type Scal = unsafe extern "C" fn(Handle, c_int, In, Out, c_int) -> Status;
type Dot = unsafe extern "C" fn(Handle, c_int, In, c_int, In, c_int, Out) -> Status;
type Reduce = unsafe extern "C" fn(Handle, c_int, In, c_int, Out) -> Status;
type Copy2 = unsafe extern "C" fn(Handle, c_int, In, c_int, Out, c_int) -> Status;
type Rot = unsafe extern "C" fn(Handle, c_int, Out, c_int, Out, c_int, In, In) -> Status;
type Gemv = unsafe extern "C" fn(
    Handle,
    c_int,
    c_int,
    c_int,
    In,
    In,
    c_int,
    In,
    c_int,
    In,
    Out,
    c_int,
) -> Status;
type GemmEx = unsafe extern "C" fn(
    Handle,
    c_int,
    c_int,
    c_int,
    c_int,
    c_int,
    In,
    In,
    c_int,
    c_int,
    In,
    c_int,
    c_int,
    In,
    Out,
    c_int,
    c_int,
    c_int,
    c_int,
) -> Status;
type GemmStridedBatchedEx = unsafe extern "C" fn(
    Handle,
    c_int,
    c_int,
    c_int,
    c_int,
    c_int,
    In,
    In,
    c_int,
    c_int,
    i64,
    In,
    c_int,
    c_int,
    i64,
    In,
    Out,
    c_int,
    c_int,
    i64,
    c_int,
    c_int,
    c_int,
) -> Status;
type GemmBatchedEx = unsafe extern "C" fn(
    Handle,
    c_int,
    c_int,
    c_int,
    c_int,
    c_int,
    In,
    *const In,
    c_int,
    c_int,
    *const In,
    c_int,
    c_int,
    In,
    *const Out,
    c_int,
    c_int,
    c_int,
    c_int,
    c_int,
) -> Status;

type Ger =
    unsafe extern "C" fn(Handle, c_int, c_int, In, In, c_int, In, c_int, Out, c_int) -> Status;
type Symv =
    unsafe extern "C" fn(Handle, c_int, c_int, In, In, c_int, In, c_int, In, Out, c_int) -> Status;
type Trmv =
    unsafe extern "C" fn(Handle, c_int, c_int, c_int, c_int, In, c_int, Out, c_int) -> Status;
type Symm = unsafe extern "C" fn(
    Handle,
    c_int,
    c_int,
    c_int,
    c_int,
    In,
    In,
    c_int,
    In,
    c_int,
    In,
    Out,
    c_int,
) -> Status;
type Syrk = unsafe extern "C" fn(
    Handle,
    c_int,
    c_int,
    c_int,
    c_int,
    In,
    In,
    c_int,
    In,
    Out,
    c_int,
) -> Status;
type Trmm = unsafe extern "C" fn(
    Handle,
    c_int,
    c_int,
    c_int,
    c_int,
    c_int,
    c_int,
    In,
    In,
    c_int,
    In,
    c_int,
    Out,
    c_int,
) -> Status;
type Trsm = unsafe extern "C" fn(
    Handle,
    c_int,
    c_int,
    c_int,
    c_int,
    c_int,
    c_int,
    In,
    In,
    c_int,
    Out,
    c_int,
) -> Status;
type Geam = unsafe extern "C" fn(
    Handle,
    c_int,
    c_int,
    c_int,
    c_int,
    In,
    In,
    c_int,
    In,
    In,
    c_int,
    Out,
    c_int,
) -> Status;
type Dgmm =
    unsafe extern "C" fn(Handle, c_int, c_int, c_int, In, c_int, In, c_int, Out, c_int) -> Status;

type Gbmv = unsafe extern "C" fn(
    Handle,
    c_int,
    c_int,
    c_int,
    c_int,
    c_int,
    In,
    In,
    c_int,
    In,
    c_int,
    In,
    Out,
    c_int,
) -> Status;
type Sbmv = unsafe extern "C" fn(
    Handle,
    c_int,
    c_int,
    c_int,
    In,
    In,
    c_int,
    In,
    c_int,
    In,
    Out,
    c_int,
) -> Status;
type Spmv = unsafe extern "C" fn(Handle, c_int, c_int, In, In, In, c_int, In, Out, c_int) -> Status;
type Tbmv = unsafe extern "C" fn(
    Handle,
    c_int,
    c_int,
    c_int,
    c_int,
    c_int,
    In,
    c_int,
    Out,
    c_int,
) -> Status;
type Tpmv = unsafe extern "C" fn(Handle, c_int, c_int, c_int, c_int, In, Out, c_int) -> Status;
type Syr = unsafe extern "C" fn(Handle, c_int, c_int, In, In, c_int, Out, c_int) -> Status;
type Syr2 =
    unsafe extern "C" fn(Handle, c_int, c_int, In, In, c_int, In, c_int, Out, c_int) -> Status;
type Spr = unsafe extern "C" fn(Handle, c_int, c_int, In, In, c_int, Out) -> Status;
type Spr2 = unsafe extern "C" fn(Handle, c_int, c_int, In, In, c_int, In, c_int, Out) -> Status;
/// syr2k, her2k, syrkx, herkx: `(handle, uplo, trans, n, k, alpha, A, lda,
/// B, ldb, beta, C, ldc)`.
type Syr2k = unsafe extern "C" fn(
    Handle,
    c_int,
    c_int,
    c_int,
    c_int,
    In,
    In,
    c_int,
    In,
    c_int,
    In,
    Out,
    c_int,
) -> Status;
type Rotg = unsafe extern "C" fn(Handle, Out, Out, Out, Out) -> Status;
type Rotmg = unsafe extern "C" fn(Handle, Out, Out, Out, In, Out) -> Status;
type Rotm = unsafe extern "C" fn(Handle, c_int, Out, c_int, Out, c_int, In) -> Status;

/// `cublas<t>getrfBatched(handle, n, A[], lda, P, info, batch)`.
type GetrfBatched =
    unsafe extern "C" fn(Handle, c_int, Out, c_int, *mut c_int, *mut c_int, c_int) -> Status;
/// `cublas<t>getrsBatched(handle, trans, n, nrhs, A[], lda, P, B[], ldb, info, batch)`
/// (`info` in host memory).
type GetrsBatched = unsafe extern "C" fn(
    Handle,
    c_int,
    c_int,
    c_int,
    In,
    c_int,
    *const c_int,
    Out,
    c_int,
    *mut c_int,
    c_int,
) -> Status;
/// `cublas<t>getriBatched(handle, n, A[], lda, P, C[], ldc, info, batch)`.
type GetriBatched = unsafe extern "C" fn(
    Handle,
    c_int,
    In,
    c_int,
    *const c_int,
    Out,
    c_int,
    *mut c_int,
    c_int,
) -> Status;

/// `cublas<t>matinvBatched(handle, n, A[], lda, Ainv[], lda_inv, info, batch)`.
type MatinvBatched =
    unsafe extern "C" fn(Handle, c_int, In, c_int, Out, c_int, *mut c_int, c_int) -> Status;

/// `cublas<t>trsmBatched(handle, side, uplo, trans, diag, m, n, alpha,
/// A[], lda, B[], ldb, batch)`.
type TrsmBatched = unsafe extern "C" fn(
    Handle,
    c_int,
    c_int,
    c_int,
    c_int,
    c_int,
    c_int,
    In,
    In,
    c_int,
    In,
    c_int,
    c_int,
) -> Status;
/// `cublas<t>gemvBatched(handle, trans, m, n, alpha, A[], lda, x[], incx,
/// beta, y[], incy, batch)`.
type GemvBatched = unsafe extern "C" fn(
    Handle,
    c_int,
    c_int,
    c_int,
    In,
    In,
    c_int,
    In,
    c_int,
    In,
    In,
    c_int,
    c_int,
) -> Status;
/// `cublas<t>gemvStridedBatched(handle, trans, m, n, alpha, A, lda,
/// strideA, x, incx, stridex, beta, y, incy, stridey, batch)`.
type GemvStridedBatched = unsafe extern "C" fn(
    Handle,
    c_int,
    c_int,
    c_int,
    In,
    In,
    c_int,
    i64,
    In,
    c_int,
    i64,
    In,
    Out,
    c_int,
    i64,
    c_int,
) -> Status;
/// `cublas<t>geqrfBatched(handle, m, n, A[], lda, Tau[], info, batch)`
/// (`info` in host memory).
type GeqrfBatched =
    unsafe extern "C" fn(Handle, c_int, c_int, In, c_int, In, *mut c_int, c_int) -> Status;
/// `cublas<t>gelsBatched(handle, trans, m, n, nrhs, A[], lda, C[], ldc,
/// info, devInfoArray, batch)` (`info` in host memory).
type GelsBatched = unsafe extern "C" fn(
    Handle,
    c_int,
    c_int,
    c_int,
    c_int,
    In,
    c_int,
    In,
    c_int,
    *mut c_int,
    *mut c_int,
    c_int,
) -> Status;

/// The cuBLAS entry points the backend uses, with the prototypes of
/// `cublas_api.h` (element pointers as `void *`, enums as `int`).
struct BlasApi {
    create: unsafe extern "C" fn(*mut Handle) -> Status,
    destroy: unsafe extern "C" fn(Handle) -> Status,
    set_stream: unsafe extern "C" fn(Handle, CUstream) -> Status,
    set_pointer_mode: unsafe extern "C" fn(Handle, c_int) -> Status,
    axpy: [Axpy; 4],
    /// S, D, C, Z, then Cs, Zd (complex vector, real scalar).
    scal: [Scal; 6],
    /// S, D, Cdotu, Zdotu.
    dotu: [Dot; 4],
    /// Cdotc, Zdotc.
    dotc: [Dot; 2],
    nrm2: [Reduce; 4],
    asum: [Reduce; 4],
    amax: [Reduce; 4],
    amin: [Reduce; 4],
    copy: [Copy2; 4],
    swap: [Copy2; 4],
    /// S, D, C, Z, then Cs, Zd (real sine).
    rot: [Rot; 6],
    gemv: [Gemv; 4],
    /// S, D, Cgeru, Zgeru.
    ger: [Ger; 4],
    /// Cgerc, Zgerc.
    gerc: [Ger; 2],
    symv: [Symv; 4],
    /// Chemv, Zhemv.
    hemv: [Symv; 2],
    trmv: [Trmv; 4],
    trsv: [Trmv; 4],
    symm: [Symm; 4],
    /// Chemm, Zhemm.
    hemm: [Symm; 2],
    syrk: [Syrk; 4],
    /// Cherk, Zherk (real alpha and beta).
    herk: [Syrk; 2],
    trmm: [Trmm; 4],
    trsm: [Trsm; 4],
    geam: [Geam; 4],
    dgmm: [Dgmm; 4],
    gbmv: [Gbmv; 4],
    /// Ssbmv, Dsbmv, Chbmv, Zhbmv (cuBLAS has no complex symmetric form).
    sbmv: [Sbmv; 4],
    /// Sspmv, Dspmv, Chpmv, Zhpmv.
    spmv: [Spmv; 4],
    tbmv: [Tbmv; 4],
    tbsv: [Tbmv; 4],
    tpmv: [Tpmv; 4],
    tpsv: [Tpmv; 4],
    syr: [Syr; 4],
    /// Cher, Zher (real alpha).
    her: [Syr; 2],
    syr2: [Syr2; 4],
    /// Cher2, Zher2.
    her2: [Syr2; 2],
    /// Sspr, Dspr, Chpr, Zhpr.
    spr: [Spr; 4],
    /// Sspr2, Dspr2, Chpr2, Zhpr2.
    spr2: [Spr2; 4],
    syr2k: [Syr2k; 4],
    /// Cher2k, Zher2k (real beta).
    her2k: [Syr2k; 2],
    syrkx: [Syr2k; 4],
    /// Cherkx, Zherkx (real beta).
    herkx: [Syr2k; 2],
    rotg: [Rotg; 4],
    /// Srotmg, Drotmg.
    rotmg: [Rotmg; 2],
    /// Srotm, Drotm.
    rotm: [Rotm; 2],
    gemm_ex: GemmEx,
    gemm_strided_batched_ex: GemmStridedBatchedEx,
    gemm_batched_ex: GemmBatchedEx,
    getrf_batched: [GetrfBatched; 4],
    getrs_batched: [GetrsBatched; 4],
    getri_batched: [GetriBatched; 4],
    matinv_batched: [MatinvBatched; 4],
    trsm_batched: [TrsmBatched; 4],
    gemv_batched: [GemvBatched; 4],
    gemv_strided_batched: [GemvStridedBatched; 4],
    geqrf_batched: [GeqrfBatched; 4],
    gels_batched: [GelsBatched; 4],
    /// Keeps the code behind the pointers mapped; dropped last.
    _library: libloading::Library,
}

/// Resolves the four (or more) typed names of one function.
///
/// # Safety
///
/// As for [`symbol`]: `T` is the prototype of every name.
unsafe fn typed<T: Copy, const N: usize>(
    lib: &libloading::Library,
    names: [&'static str; N],
) -> Result<[T; N], LoadError> {
    let mut out = Vec::with_capacity(N);
    for name in names {
        // SAFETY: forwarded from the caller.
        out.push(unsafe { symbol::<T>(lib, name) }?);
    }
    out.try_into().map_err(|_| LoadError::Symbol {
        symbol: "cublas",
        reason: "internal: wrong number of typed entry points".into(),
    })
}

impl BlasApi {
    fn resolve(library: libloading::Library) -> Result<Self, LoadError> {
        let lib = &library;
        // SAFETY: every field's type is the prototype in cublas_api.h of the
        // entry points it is resolved from (element and scalar pointers as
        // `void *`, enums as `int`, `int64_t` strides as `i64`); the pointers
        // are stored next to `library`, which outlives them.
        unsafe {
            Ok(Self {
                create: symbol(lib, "cublasCreate_v2")?,
                destroy: symbol(lib, "cublasDestroy_v2")?,
                set_stream: symbol(lib, "cublasSetStream_v2")?,
                set_pointer_mode: symbol(lib, "cublasSetPointerMode_v2")?,
                axpy: typed(
                    lib,
                    [
                        "cublasSaxpy_v2",
                        "cublasDaxpy_v2",
                        "cublasCaxpy_v2",
                        "cublasZaxpy_v2",
                    ],
                )?,
                scal: typed(
                    lib,
                    [
                        "cublasSscal_v2",
                        "cublasDscal_v2",
                        "cublasCscal_v2",
                        "cublasZscal_v2",
                        "cublasCsscal_v2",
                        "cublasZdscal_v2",
                    ],
                )?,
                dotu: typed(
                    lib,
                    [
                        "cublasSdot_v2",
                        "cublasDdot_v2",
                        "cublasCdotu_v2",
                        "cublasZdotu_v2",
                    ],
                )?,
                dotc: typed(lib, ["cublasCdotc_v2", "cublasZdotc_v2"])?,
                nrm2: typed(
                    lib,
                    [
                        "cublasSnrm2_v2",
                        "cublasDnrm2_v2",
                        "cublasScnrm2_v2",
                        "cublasDznrm2_v2",
                    ],
                )?,
                asum: typed(
                    lib,
                    [
                        "cublasSasum_v2",
                        "cublasDasum_v2",
                        "cublasScasum_v2",
                        "cublasDzasum_v2",
                    ],
                )?,
                amax: typed(
                    lib,
                    [
                        "cublasIsamax_v2",
                        "cublasIdamax_v2",
                        "cublasIcamax_v2",
                        "cublasIzamax_v2",
                    ],
                )?,
                amin: typed(
                    lib,
                    [
                        "cublasIsamin_v2",
                        "cublasIdamin_v2",
                        "cublasIcamin_v2",
                        "cublasIzamin_v2",
                    ],
                )?,
                copy: typed(
                    lib,
                    [
                        "cublasScopy_v2",
                        "cublasDcopy_v2",
                        "cublasCcopy_v2",
                        "cublasZcopy_v2",
                    ],
                )?,
                swap: typed(
                    lib,
                    [
                        "cublasSswap_v2",
                        "cublasDswap_v2",
                        "cublasCswap_v2",
                        "cublasZswap_v2",
                    ],
                )?,
                rot: typed(
                    lib,
                    [
                        "cublasSrot_v2",
                        "cublasDrot_v2",
                        "cublasCrot_v2",
                        "cublasZrot_v2",
                        "cublasCsrot_v2",
                        "cublasZdrot_v2",
                    ],
                )?,
                gemv: typed(
                    lib,
                    [
                        "cublasSgemv_v2",
                        "cublasDgemv_v2",
                        "cublasCgemv_v2",
                        "cublasZgemv_v2",
                    ],
                )?,
                ger: typed(
                    lib,
                    [
                        "cublasSger_v2",
                        "cublasDger_v2",
                        "cublasCgeru_v2",
                        "cublasZgeru_v2",
                    ],
                )?,
                gerc: typed(lib, ["cublasCgerc_v2", "cublasZgerc_v2"])?,
                symv: typed(
                    lib,
                    [
                        "cublasSsymv_v2",
                        "cublasDsymv_v2",
                        "cublasCsymv_v2",
                        "cublasZsymv_v2",
                    ],
                )?,
                hemv: typed(lib, ["cublasChemv_v2", "cublasZhemv_v2"])?,
                trmv: typed(
                    lib,
                    [
                        "cublasStrmv_v2",
                        "cublasDtrmv_v2",
                        "cublasCtrmv_v2",
                        "cublasZtrmv_v2",
                    ],
                )?,
                trsv: typed(
                    lib,
                    [
                        "cublasStrsv_v2",
                        "cublasDtrsv_v2",
                        "cublasCtrsv_v2",
                        "cublasZtrsv_v2",
                    ],
                )?,
                symm: typed(
                    lib,
                    [
                        "cublasSsymm_v2",
                        "cublasDsymm_v2",
                        "cublasCsymm_v2",
                        "cublasZsymm_v2",
                    ],
                )?,
                hemm: typed(lib, ["cublasChemm_v2", "cublasZhemm_v2"])?,
                syrk: typed(
                    lib,
                    [
                        "cublasSsyrk_v2",
                        "cublasDsyrk_v2",
                        "cublasCsyrk_v2",
                        "cublasZsyrk_v2",
                    ],
                )?,
                herk: typed(lib, ["cublasCherk_v2", "cublasZherk_v2"])?,
                trmm: typed(
                    lib,
                    [
                        "cublasStrmm_v2",
                        "cublasDtrmm_v2",
                        "cublasCtrmm_v2",
                        "cublasZtrmm_v2",
                    ],
                )?,
                trsm: typed(
                    lib,
                    [
                        "cublasStrsm_v2",
                        "cublasDtrsm_v2",
                        "cublasCtrsm_v2",
                        "cublasZtrsm_v2",
                    ],
                )?,
                geam: typed(
                    lib,
                    ["cublasSgeam", "cublasDgeam", "cublasCgeam", "cublasZgeam"],
                )?,
                dgmm: typed(
                    lib,
                    ["cublasSdgmm", "cublasDdgmm", "cublasCdgmm", "cublasZdgmm"],
                )?,
                gbmv: typed(
                    lib,
                    [
                        "cublasSgbmv_v2",
                        "cublasDgbmv_v2",
                        "cublasCgbmv_v2",
                        "cublasZgbmv_v2",
                    ],
                )?,
                sbmv: typed(
                    lib,
                    [
                        "cublasSsbmv_v2",
                        "cublasDsbmv_v2",
                        "cublasChbmv_v2",
                        "cublasZhbmv_v2",
                    ],
                )?,
                spmv: typed(
                    lib,
                    [
                        "cublasSspmv_v2",
                        "cublasDspmv_v2",
                        "cublasChpmv_v2",
                        "cublasZhpmv_v2",
                    ],
                )?,
                tbmv: typed(
                    lib,
                    [
                        "cublasStbmv_v2",
                        "cublasDtbmv_v2",
                        "cublasCtbmv_v2",
                        "cublasZtbmv_v2",
                    ],
                )?,
                tbsv: typed(
                    lib,
                    [
                        "cublasStbsv_v2",
                        "cublasDtbsv_v2",
                        "cublasCtbsv_v2",
                        "cublasZtbsv_v2",
                    ],
                )?,
                tpmv: typed(
                    lib,
                    [
                        "cublasStpmv_v2",
                        "cublasDtpmv_v2",
                        "cublasCtpmv_v2",
                        "cublasZtpmv_v2",
                    ],
                )?,
                tpsv: typed(
                    lib,
                    [
                        "cublasStpsv_v2",
                        "cublasDtpsv_v2",
                        "cublasCtpsv_v2",
                        "cublasZtpsv_v2",
                    ],
                )?,
                syr: typed(
                    lib,
                    [
                        "cublasSsyr_v2",
                        "cublasDsyr_v2",
                        "cublasCsyr_v2",
                        "cublasZsyr_v2",
                    ],
                )?,
                syr2: typed(
                    lib,
                    [
                        "cublasSsyr2_v2",
                        "cublasDsyr2_v2",
                        "cublasCsyr2_v2",
                        "cublasZsyr2_v2",
                    ],
                )?,
                her: typed(lib, ["cublasCher_v2", "cublasZher_v2"])?,
                her2: typed(lib, ["cublasCher2_v2", "cublasZher2_v2"])?,
                spr: typed(
                    lib,
                    [
                        "cublasSspr_v2",
                        "cublasDspr_v2",
                        "cublasChpr_v2",
                        "cublasZhpr_v2",
                    ],
                )?,
                spr2: typed(
                    lib,
                    [
                        "cublasSspr2_v2",
                        "cublasDspr2_v2",
                        "cublasChpr2_v2",
                        "cublasZhpr2_v2",
                    ],
                )?,
                syr2k: typed(
                    lib,
                    [
                        "cublasSsyr2k_v2",
                        "cublasDsyr2k_v2",
                        "cublasCsyr2k_v2",
                        "cublasZsyr2k_v2",
                    ],
                )?,
                her2k: typed(lib, ["cublasCher2k_v2", "cublasZher2k_v2"])?,
                syrkx: typed(
                    lib,
                    [
                        "cublasSsyrkx",
                        "cublasDsyrkx",
                        "cublasCsyrkx",
                        "cublasZsyrkx",
                    ],
                )?,
                herkx: typed(lib, ["cublasCherkx", "cublasZherkx"])?,
                rotg: typed(
                    lib,
                    [
                        "cublasSrotg_v2",
                        "cublasDrotg_v2",
                        "cublasCrotg_v2",
                        "cublasZrotg_v2",
                    ],
                )?,
                rotmg: typed(lib, ["cublasSrotmg_v2", "cublasDrotmg_v2"])?,
                rotm: typed(lib, ["cublasSrotm_v2", "cublasDrotm_v2"])?,
                gemm_ex: symbol(lib, "cublasGemmEx")?,
                gemm_strided_batched_ex: symbol(lib, "cublasGemmStridedBatchedEx")?,
                gemm_batched_ex: symbol(lib, "cublasGemmBatchedEx")?,
                getrf_batched: typed(
                    lib,
                    [
                        "cublasSgetrfBatched",
                        "cublasDgetrfBatched",
                        "cublasCgetrfBatched",
                        "cublasZgetrfBatched",
                    ],
                )?,
                getrs_batched: typed(
                    lib,
                    [
                        "cublasSgetrsBatched",
                        "cublasDgetrsBatched",
                        "cublasCgetrsBatched",
                        "cublasZgetrsBatched",
                    ],
                )?,
                getri_batched: typed(
                    lib,
                    [
                        "cublasSgetriBatched",
                        "cublasDgetriBatched",
                        "cublasCgetriBatched",
                        "cublasZgetriBatched",
                    ],
                )?,
                matinv_batched: typed(
                    lib,
                    [
                        "cublasSmatinvBatched",
                        "cublasDmatinvBatched",
                        "cublasCmatinvBatched",
                        "cublasZmatinvBatched",
                    ],
                )?,
                trsm_batched: typed(
                    lib,
                    [
                        "cublasStrsmBatched",
                        "cublasDtrsmBatched",
                        "cublasCtrsmBatched",
                        "cublasZtrsmBatched",
                    ],
                )?,
                gemv_batched: typed(
                    lib,
                    [
                        "cublasSgemvBatched",
                        "cublasDgemvBatched",
                        "cublasCgemvBatched",
                        "cublasZgemvBatched",
                    ],
                )?,
                gemv_strided_batched: typed(
                    lib,
                    [
                        "cublasSgemvStridedBatched",
                        "cublasDgemvStridedBatched",
                        "cublasCgemvStridedBatched",
                        "cublasZgemvStridedBatched",
                    ],
                )?,
                geqrf_batched: typed(
                    lib,
                    [
                        "cublasSgeqrfBatched",
                        "cublasDgeqrfBatched",
                        "cublasCgeqrfBatched",
                        "cublasZgeqrfBatched",
                    ],
                )?,
                gels_batched: typed(
                    lib,
                    [
                        "cublasSgelsBatched",
                        "cublasDgelsBatched",
                        "cublasCgelsBatched",
                        "cublasZgelsBatched",
                    ],
                )?,
                _library: library,
            })
        }
    }
}

loaded_library! {
    /// NVIDIA's cuBLAS, loaded.
    Blas(BlasApi), "cuBLAS", "cuBLAS 12"
}

/// A cuBLAS call failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BlasError {
    /// Making the context current failed.
    Driver(DriverError),
    /// cuBLAS answered this `cublasStatus_t`.
    Status {
        /// The entry point.
        call: &'static str,
        /// Its status.
        status: i32,
    },
    /// The arguments do not fit the entry point (e.g. host and device
    /// scalars in one call); `CUBLAS_STATUS_INVALID_VALUE` for the client.
    Arguments(&'static str),
}

impl From<DriverError> for BlasError {
    fn from(e: DriverError) -> Self {
        Self::Driver(e)
    }
}

impl fmt::Display for BlasError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Driver(e) => e.fmt(f),
            Self::Status { call, status } => write!(f, "{call} failed: cublasStatus_t {status}"),
            Self::Arguments(why) => write!(f, "cuBLAS arguments: {why}"),
        }
    }
}

impl std::error::Error for BlasError {}

/// The bytes of a host scalar or result (little-endian, of the call's
/// type), aligned as a `cuDoubleComplex` (`double2`): cuBLAS reads and
/// writes complex values in host memory with aligned vector instructions,
/// and a `cublasZscal` alpha at an odd address faults (seen on an H200,
/// cuBLAS 13.1).
#[repr(C, align(16))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct HostScalar(pub [u8; 16]);

/// A scalar argument: its value (at most a `cuDoubleComplex`) or its
/// device address.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ScalarArg {
    /// `CUBLAS_POINTER_MODE_HOST`.
    Host(HostScalar),
    /// `CUBLAS_POINTER_MODE_DEVICE`.
    Device(u64),
}

/// Where a reduction's result goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ResultArg {
    /// Back to the caller (host pointer mode).
    Host,
    /// To this device address (device pointer mode).
    Device(u64),
}

/// A level-1 operation and its operands. `alpha`, `c` and `s` are the
/// scalars of the operation; `result` is where a reduction's result goes.
#[allow(missing_docs)] // the fields are named as in the cuBLAS documentation
#[derive(Debug, Clone, Copy)]
pub enum Level1 {
    /// `y = alpha x + y`.
    Axpy { alpha: ScalarArg },
    /// `x = alpha x`; `real_alpha` for Csscal/Zdscal.
    Scal { alpha: ScalarArg, real_alpha: bool },
    /// `x . y`, conjugating `x` with `conj`.
    Dot { conj: bool, result: ResultArg },
    /// Euclidean norm.
    Nrm2 { result: ResultArg },
    /// Sum of magnitudes.
    Asum { result: ResultArg },
    /// 1-based index of the largest magnitude (`int`).
    Amax { result: ResultArg },
    /// 1-based index of the smallest magnitude (`int`).
    Amin { result: ResultArg },
    /// `y = x`.
    Copy,
    /// `x <-> y`.
    Swap,
    /// Plane rotation: `c` real, `s` real with `real_s`.
    Rot {
        c: ScalarArg,
        s: ScalarArg,
        real_s: bool,
    },
}

/// A vector operand: device address and increment.
#[derive(Debug, Clone, Copy)]
pub struct Vector {
    /// Device address.
    pub ptr: u64,
    /// Increment (may be negative, as cuBLAS documents).
    pub inc: i32,
}

/// A matrix operand: device address and leading dimension.
#[derive(Debug, Clone, Copy)]
pub struct Matrix {
    /// Device address.
    pub ptr: u64,
    /// Leading dimension.
    pub ld: i32,
}

/// A batched LU routine of cuBLAS on `batch` n x n matrices. `a`, `b` and
/// `c` are device arrays of matrix pointers that the caller filled with
/// checked pointers, in memory the client cannot change during the call;
/// `pivots` (0: none) and `info` are checked device ranges.
#[allow(missing_docs)] // the fields are named as in the cuBLAS documentation
#[derive(Debug, Clone, Copy)]
pub enum LuBatched {
    /// getrfBatched: in place in the A_i.
    Getrf {
        n: i32,
        a: u64,
        lda: i32,
        pivots: u64,
        info: u64,
        batch: i32,
    },
    /// getrsBatched: op(A_i) X_i = B_i in place in the B_i.
    Getrs {
        trans: i32,
        n: i32,
        nrhs: i32,
        a: u64,
        lda: i32,
        pivots: u64,
        b: u64,
        ldb: i32,
        batch: i32,
    },
    /// getriBatched: C_i = inv(A_i) from getrf's factors.
    Getri {
        n: i32,
        a: u64,
        lda: i32,
        pivots: u64,
        c: u64,
        ldc: i32,
        info: u64,
        batch: i32,
    },
    /// matinvBatched: C_i = inv(A_i), n ≤ 32.
    Matinv {
        n: i32,
        a: u64,
        lda: i32,
        c: u64,
        ldc: i32,
        info: u64,
        batch: i32,
    },
}

/// A batched cuBLAS routine other than GEMM and LU. Pointer arrays (`a`,
/// `b`, `x`, `y`, `c`, `tau` of the array forms) are device arrays the
/// caller filled with checked pointers, in memory the client cannot change
/// during the call; the strided form's ranges and `dev_info` are checked
/// device ranges.
#[allow(missing_docs)] // the fields are named as in the cuBLAS documentation
#[derive(Debug, Clone, Copy)]
pub enum Batched {
    /// trsmBatched: B_i = alpha op(A_i)^-1 B_i (or B_i op(A_i)^-1).
    Trsm {
        side: i32,
        uplo: i32,
        trans: i32,
        diag: i32,
        m: i32,
        n: i32,
        alpha: ScalarArg,
        a: u64,
        lda: i32,
        b: u64,
        ldb: i32,
        batch: i32,
    },
    /// gemvBatched (`strides` None: `a`, `x`, `y` are pointer arrays) or
    /// gemvStridedBatched (`strides` of A, x, y in elements).
    Gemv {
        trans: i32,
        m: i32,
        n: i32,
        alpha: ScalarArg,
        a: u64,
        lda: i32,
        x: u64,
        incx: i32,
        beta: ScalarArg,
        y: u64,
        incy: i32,
        strides: Option<[i64; 3]>,
        batch: i32,
    },
    /// geqrfBatched: QR of the A_i in place, tau_i.
    Geqrf {
        m: i32,
        n: i32,
        a: u64,
        lda: i32,
        tau: u64,
        batch: i32,
    },
    /// gelsBatched: least squares, X_i in the C_i; `dev_info` 0 for none.
    Gels {
        trans: i32,
        m: i32,
        n: i32,
        nrhs: i32,
        a: u64,
        lda: i32,
        c: u64,
        ldc: i32,
        dev_info: u64,
        batch: i32,
    },
}

/// A level-2 or level-3 call other than gemv and GEMM, with cuBLAS's
/// arguments (enumerations as their `int` values, dimensions as `int`).
#[allow(missing_docs)] // the fields are named as in the cuBLAS documentation
#[derive(Debug, Clone, Copy)]
pub enum Blas23 {
    /// ger/geru, or gerc with `conj`.
    Ger {
        conj: bool,
        m: i32,
        n: i32,
        alpha: ScalarArg,
        x: Vector,
        y: Vector,
        a: Matrix,
    },
    /// symv, or hemv with `hermitian`.
    Symv {
        hermitian: bool,
        uplo: i32,
        n: i32,
        alpha: ScalarArg,
        a: Matrix,
        x: Vector,
        beta: ScalarArg,
        y: Vector,
    },
    /// trmv, or trsv with `solve`.
    Trmv {
        solve: bool,
        uplo: i32,
        trans: i32,
        diag: i32,
        n: i32,
        a: Matrix,
        x: Vector,
    },
    /// symm, or hemm with `hermitian`.
    Symm {
        hermitian: bool,
        side: i32,
        uplo: i32,
        m: i32,
        n: i32,
        alpha: ScalarArg,
        a: Matrix,
        b: Matrix,
        beta: ScalarArg,
        c: Matrix,
    },
    /// syrk, or herk with `hermitian` (real alpha and beta).
    Syrk {
        hermitian: bool,
        uplo: i32,
        trans: i32,
        n: i32,
        k: i32,
        alpha: ScalarArg,
        a: Matrix,
        beta: ScalarArg,
        c: Matrix,
    },
    /// trmm out of place into `c`, or trsm in place in `b` with `solve`.
    Trmm {
        solve: bool,
        side: i32,
        uplo: i32,
        trans: i32,
        diag: i32,
        m: i32,
        n: i32,
        alpha: ScalarArg,
        a: Matrix,
        b: Matrix,
        c: Matrix,
    },
    /// geam.
    Geam {
        transa: i32,
        transb: i32,
        m: i32,
        n: i32,
        alpha: ScalarArg,
        a: Matrix,
        beta: ScalarArg,
        b: Matrix,
        c: Matrix,
    },
    /// dgmm.
    Dgmm {
        side: i32,
        m: i32,
        n: i32,
        a: Matrix,
        x: Vector,
        c: Matrix,
    },
    /// gbmv.
    Gbmv {
        trans: i32,
        m: i32,
        n: i32,
        kl: i32,
        ku: i32,
        alpha: ScalarArg,
        a: Matrix,
        x: Vector,
        beta: ScalarArg,
        y: Vector,
    },
    /// sbmv (real types), hbmv (complex types).
    Sbmv {
        uplo: i32,
        n: i32,
        k: i32,
        alpha: ScalarArg,
        a: Matrix,
        x: Vector,
        beta: ScalarArg,
        y: Vector,
    },
    /// spmv (real types), hpmv (complex types); `ap` packed.
    Spmv {
        uplo: i32,
        n: i32,
        alpha: ScalarArg,
        ap: u64,
        x: Vector,
        beta: ScalarArg,
        y: Vector,
    },
    /// tbmv, or tbsv with `solve`.
    Tbmv {
        solve: bool,
        uplo: i32,
        trans: i32,
        diag: i32,
        n: i32,
        k: i32,
        a: Matrix,
        x: Vector,
    },
    /// tpmv, or tpsv with `solve`; `ap` packed.
    Tpmv {
        solve: bool,
        uplo: i32,
        trans: i32,
        diag: i32,
        n: i32,
        ap: u64,
        x: Vector,
    },
    /// syr/her (`y` unused), syr2/her2 with `two`; packed (spr/hpr,
    /// spr2/hpr2; `a.ld` unused) with `packed`.
    Syr {
        hermitian: bool,
        two: bool,
        packed: bool,
        uplo: i32,
        n: i32,
        alpha: ScalarArg,
        x: Vector,
        y: Vector,
        a: Matrix,
    },
    /// syr2k/her2k, or syrkx/herkx with `x`.
    Syr2k {
        hermitian: bool,
        x: bool,
        uplo: i32,
        trans: i32,
        n: i32,
        k: i32,
        alpha: ScalarArg,
        a: Matrix,
        b: Matrix,
        beta: ScalarArg,
        c: Matrix,
    },
}

/// Host buffers of a rotation construction in host pointer mode: rotg's
/// `a`, `b`, `c`, `s` or rotmg's `d1`, `d2`, `x1`, `y1` in `values`, and
/// rotmg's 5-element `param` in `param`.
#[derive(Debug, Clone, Copy, Default)]
pub struct RotBuffers {
    /// One value each.
    pub values: [HostScalar; 4],
    /// 48 contiguous bytes, 16-aligned: room for 5 doubles.
    pub param: [HostScalar; 3],
}

/// rotm's `param`: 5 values of the call's type.
#[derive(Debug, Clone, Copy)]
pub enum ParamArg {
    /// In host memory (the buffer holds them).
    Host([HostScalar; 3]),
    /// At this device address.
    Device(u64),
}

/// GEMM arguments of `cublasGemmEx` and its batched forms.
#[derive(Debug, Clone, Copy)]
pub struct GemmArgs {
    /// `cublasOperation_t` of A and B.
    pub trans: [i32; 2],
    /// m, n, k.
    pub dims: [i32; 3],
    /// `alpha`, `beta`, of the compute type's scalar type.
    pub alpha: ScalarArg,
    /// See `alpha`.
    pub beta: ScalarArg,
    /// `cudaDataType` of A, B, C.
    pub types: [i32; 3],
    /// Leading dimensions of A, B, C.
    pub ld: [i32; 3],
    /// `cublasComputeType_t`.
    pub compute: i32,
}

/// How the matrices of a GEMM are named.
#[derive(Debug, Clone, Copy)]
pub enum GemmOperands {
    /// One product.
    Single {
        /// A, B, C.
        ptrs: [u64; 3],
    },
    /// `batch` products, matrices `stride` elements apart.
    Strided {
        /// A, B, C.
        ptrs: [u64; 3],
        /// Element strides of A, B, C.
        strides: [i64; 3],
        /// Products.
        batch: i32,
    },
    /// `batch` products; device arrays of per-product device pointers.
    Arrays {
        /// Device addresses of the arrays of A, B, C.
        arrays: [u64; 3],
        /// Products.
        batch: i32,
    },
}

fn pointer_mode(scalars: &[ScalarArg], result: Option<ResultArg>) -> Result<c_int, BlasError> {
    let host = scalars.iter().all(|s| matches!(s, ScalarArg::Host(_)))
        && !matches!(result, Some(ResultArg::Device(_)));
    let device = scalars.iter().all(|s| matches!(s, ScalarArg::Device(_)))
        && !matches!(result, Some(ResultArg::Host));
    match (host, device) {
        (true, _) => Ok(POINTER_MODE_HOST),
        (false, true) => Ok(POINTER_MODE_DEVICE),
        (false, false) => Err(BlasError::Arguments(
            "host and device scalars in one call (one pointer mode per handle)",
        )),
    }
}

/// The pointer cuBLAS reads a scalar from: into `s` itself in host mode.
fn scalar_ptr(s: &ScalarArg) -> In {
    match s {
        ScalarArg::Host(bytes) => bytes.0.as_ptr().cast(),
        ScalarArg::Device(ptr) => *ptr as In,
    }
}

fn dev(ptr: u64) -> In {
    ptr as In
}

fn dev_mut(ptr: u64) -> Out {
    ptr as Out
}

/// A cuBLAS handle created in a client's context, bound to its stream;
/// destroyed (with the context current) when dropped.
pub struct BlasHandle {
    api: Arc<BlasApi>,
    ctx: Arc<CtxInner>,
    raw: Handle,
}

// SAFETY: cuBLAS handles may be used from any thread, one call at a time;
// `&mut self` on every call and the context bound first make it so.
unsafe impl Send for BlasHandle {}

impl fmt::Debug for BlasHandle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("BlasHandle").finish_non_exhaustive()
    }
}

impl Drop for BlasHandle {
    fn drop(&mut self) {
        if let Err(e) = self.ctx.bind() {
            tracing::warn!("releasing a cuBLAS handle: {e}");
        }
        // SAFETY: `raw` is a live handle, used by nothing else after this.
        let status = unsafe { (self.api.destroy)(self.raw) };
        if status != 0 {
            tracing::warn!("cublasDestroy failed: cublasStatus_t {status}");
        }
    }
}

impl crate::Context {
    /// A new cuBLAS handle in this context, on its stream (`cublasCreate`,
    /// `cublasSetStream`).
    pub fn blas_handle(&self, blas: &Blas) -> Result<BlasHandle, BlasError> {
        self.inner.bind()?;
        let mut raw: Handle = std::ptr::null_mut();
        // SAFETY: `raw` is a valid out-pointer; the context is current.
        let status = unsafe { (blas.api.create)(&mut raw) };
        if status != 0 {
            return Err(BlasError::Status {
                call: "cublasCreate",
                status,
            });
        }
        let handle = BlasHandle {
            api: blas.api.clone(),
            ctx: self.inner.clone(),
            raw,
        };
        // SAFETY: a live handle and this context's live stream.
        let status = unsafe { (blas.api.set_stream)(raw, self.inner.stream) };
        handle.check(status, "cublasSetStream")?;
        Ok(handle)
    }
}

impl BlasHandle {
    fn check(&self, status: Status, call: &'static str) -> Result<(), BlasError> {
        if status == 0 {
            Ok(())
        } else {
            Err(BlasError::Status { call, status })
        }
    }

    /// Binds the context and sets the pointer mode for one call.
    fn prepare(&mut self, mode: c_int) -> Result<(), BlasError> {
        self.ctx.bind()?;
        // SAFETY: a live handle; `mode` is one of the two valid values.
        let status = unsafe { (self.api.set_pointer_mode)(self.raw, mode) };
        self.check(status, "cublasSetPointerMode")
    }

    /// Waits for the call's work, so that it is complete when we return.
    fn finish(&self, status: Status, call: &'static str) -> Result<(), BlasError> {
        self.check(status, call)?;
        self.ctx.sync_stream()?;
        Ok(())
    }

    /// A level-1 operation on `n` elements of `x` (and `y`). Answers the
    /// result's bytes for a reduction to the host (the function's result
    /// type: the element type for a dot product, its real type for norms
    /// and sums, `int` for indices), else nothing.
    pub fn level1(
        &mut self,
        op: Level1,
        p: Precision,
        n: i32,
        x: Vector,
        y: Vector,
    ) -> Result<Vec<u8>, BlasError> {
        let pi = p as usize;
        let complex = matches!(p, Precision::C | Precision::Z);
        let (scalars, result, result_size): (Vec<ScalarArg>, Option<ResultArg>, usize) = match op {
            Level1::Axpy { alpha } | Level1::Scal { alpha, .. } => (vec![alpha], None, 0),
            Level1::Rot { c, s, .. } => (vec![c, s], None, 0),
            Level1::Dot { result, .. } => (vec![], Some(result), p.size()),
            Level1::Nrm2 { result } | Level1::Asum { result } => {
                (vec![], Some(result), p.real_size())
            }
            Level1::Amax { result } | Level1::Amin { result } => (vec![], Some(result), 4),
            Level1::Copy | Level1::Swap => (vec![], None, 0),
        };
        self.prepare(pointer_mode(&scalars, result)?)?;
        // Host results land here; 16 bytes hold any result type.
        let mut host = HostScalar::default();
        let result_ptr: Out = match result {
            Some(ResultArg::Device(ptr)) => dev_mut(ptr),
            _ => host.0.as_mut_ptr().cast(),
        };
        let h = self.raw;
        let (xp, xm, yp, ym) = (dev(x.ptr), dev_mut(x.ptr), dev(y.ptr), dev_mut(y.ptr));
        // SAFETY: for every call below, the prototypes match (see `resolve`);
        // device addresses were checked by the caller against the client's
        // allocations for the ranges these operations touch; host scalars
        // and results point into `op`'s 16-byte buffers and `host`, which
        // hold any scalar or result type and outlive the call, which is
        // complete (stream synchronised) before they go.
        let (status, call) = unsafe {
            match op {
                Level1::Axpy { alpha } => (
                    (self.api.axpy[pi])(h, n, scalar_ptr(&alpha), xp, x.inc, ym, y.inc),
                    "cublas<t>axpy",
                ),
                Level1::Scal { alpha, real_alpha } => {
                    let f = if real_alpha && complex {
                        self.api.scal[pi + 2]
                    } else {
                        self.api.scal[pi]
                    };
                    (f(h, n, scalar_ptr(&alpha), xm, x.inc), "cublas<t>scal")
                }
                Level1::Dot { conj, .. } => {
                    let f = if conj && complex {
                        self.api.dotc[pi - 2]
                    } else {
                        self.api.dotu[pi]
                    };
                    (f(h, n, xp, x.inc, yp, y.inc, result_ptr), "cublas<t>dot")
                }
                Level1::Nrm2 { .. } => (
                    (self.api.nrm2[pi])(h, n, xp, x.inc, result_ptr),
                    "cublas<t>nrm2",
                ),
                Level1::Asum { .. } => (
                    (self.api.asum[pi])(h, n, xp, x.inc, result_ptr),
                    "cublas<t>asum",
                ),
                Level1::Amax { .. } => (
                    (self.api.amax[pi])(h, n, xp, x.inc, result_ptr),
                    "cublasI<t>amax",
                ),
                Level1::Amin { .. } => (
                    (self.api.amin[pi])(h, n, xp, x.inc, result_ptr),
                    "cublasI<t>amin",
                ),
                Level1::Copy => (
                    (self.api.copy[pi])(h, n, xp, x.inc, ym, y.inc),
                    "cublas<t>copy",
                ),
                Level1::Swap => (
                    (self.api.swap[pi])(h, n, xm, x.inc, ym, y.inc),
                    "cublas<t>swap",
                ),
                Level1::Rot { c, s, real_s } => {
                    let f = if real_s && complex {
                        self.api.rot[pi + 2]
                    } else {
                        self.api.rot[pi]
                    };
                    (
                        f(h, n, xm, x.inc, ym, y.inc, scalar_ptr(&c), scalar_ptr(&s)),
                        "cublas<t>rot",
                    )
                }
            }
        };
        self.finish(status, call)?;
        Ok(match result {
            Some(ResultArg::Host) => host.0[..result_size].to_vec(),
            _ => Vec::new(),
        })
    }

    /// `y = alpha op(A) x + beta y` (`cublas<t>gemv`).
    #[allow(clippy::too_many_arguments)]
    pub fn gemv(
        &mut self,
        p: Precision,
        trans: i32,
        [m, n]: [i32; 2],
        alpha: ScalarArg,
        (a, lda): (u64, i32),
        x: Vector,
        beta: ScalarArg,
        y: Vector,
    ) -> Result<(), BlasError> {
        self.prepare(pointer_mode(&[alpha, beta], None)?)?;
        // SAFETY: as in `level1`: checked device ranges, host scalars in
        // `alpha`/`beta`, which outlive the completed call.
        let status = unsafe {
            (self.api.gemv[p as usize])(
                self.raw,
                trans,
                m,
                n,
                scalar_ptr(&alpha),
                dev(a),
                lda,
                dev(x.ptr),
                x.inc,
                scalar_ptr(&beta),
                dev_mut(y.ptr),
                y.inc,
            )
        };
        self.finish(status, "cublas<t>gemv")
    }

    /// A level-2 or level-3 call ([`Blas23`]) in precision `p`.
    pub fn blas23(&mut self, call: Blas23, p: Precision) -> Result<(), BlasError> {
        let pi = p as usize;
        let scalars: Vec<ScalarArg> = match call {
            Blas23::Ger { alpha, .. } | Blas23::Trmm { alpha, .. } => vec![alpha],
            Blas23::Symv { alpha, beta, .. }
            | Blas23::Symm { alpha, beta, .. }
            | Blas23::Syrk { alpha, beta, .. }
            | Blas23::Geam { alpha, beta, .. } => vec![alpha, beta],
            Blas23::Trmv { .. }
            | Blas23::Dgmm { .. }
            | Blas23::Tbmv { .. }
            | Blas23::Tpmv { .. } => vec![],
            Blas23::Syr { alpha, .. } => vec![alpha],
            Blas23::Gbmv { alpha, beta, .. }
            | Blas23::Sbmv { alpha, beta, .. }
            | Blas23::Spmv { alpha, beta, .. }
            | Blas23::Syr2k { alpha, beta, .. } => vec![alpha, beta],
        };
        self.prepare(pointer_mode(&scalars, None)?)?;
        let h = self.raw;
        let api = &*self.api;
        // The Hermitian and conjugated forms exist for complex types only;
        // for real ones they are the symmetric and plain forms.
        fn pick<F: Copy>(plain: &[F], special: &[F], use_special: bool, pi: usize) -> F {
            if use_special && pi >= 2 {
                special[pi - 2]
            } else {
                plain[pi]
            }
        }
        let s = scalar_ptr;
        // SAFETY: for every call below, as in `level1`: the prototypes
        // match, device ranges were checked by the caller, host scalars live
        // in `call`, which outlives the completed call.
        let (status, name) = unsafe {
            match call {
                Blas23::Ger {
                    conj,
                    m,
                    n,
                    alpha,
                    x,
                    y,
                    a,
                } => (
                    pick(&api.ger, &api.gerc, conj, pi)(
                        h,
                        m,
                        n,
                        s(&alpha),
                        dev(x.ptr),
                        x.inc,
                        dev(y.ptr),
                        y.inc,
                        dev_mut(a.ptr),
                        a.ld,
                    ),
                    "cublas<t>ger",
                ),
                Blas23::Symv {
                    hermitian,
                    uplo,
                    n,
                    alpha,
                    a,
                    x,
                    beta,
                    y,
                } => (
                    pick(&api.symv, &api.hemv, hermitian, pi)(
                        h,
                        uplo,
                        n,
                        s(&alpha),
                        dev(a.ptr),
                        a.ld,
                        dev(x.ptr),
                        x.inc,
                        s(&beta),
                        dev_mut(y.ptr),
                        y.inc,
                    ),
                    "cublas<t>symv",
                ),
                Blas23::Trmv {
                    solve,
                    uplo,
                    trans,
                    diag,
                    n,
                    a,
                    x,
                } => {
                    let f = if solve { api.trsv[pi] } else { api.trmv[pi] };
                    (
                        f(
                            h,
                            uplo,
                            trans,
                            diag,
                            n,
                            dev(a.ptr),
                            a.ld,
                            dev_mut(x.ptr),
                            x.inc,
                        ),
                        "cublas<t>trmv",
                    )
                }
                Blas23::Symm {
                    hermitian,
                    side,
                    uplo,
                    m,
                    n,
                    alpha,
                    a,
                    b,
                    beta,
                    c,
                } => (
                    pick(&api.symm, &api.hemm, hermitian, pi)(
                        h,
                        side,
                        uplo,
                        m,
                        n,
                        s(&alpha),
                        dev(a.ptr),
                        a.ld,
                        dev(b.ptr),
                        b.ld,
                        s(&beta),
                        dev_mut(c.ptr),
                        c.ld,
                    ),
                    "cublas<t>symm",
                ),
                Blas23::Syrk {
                    hermitian,
                    uplo,
                    trans,
                    n,
                    k,
                    alpha,
                    a,
                    beta,
                    c,
                } => (
                    pick(&api.syrk, &api.herk, hermitian, pi)(
                        h,
                        uplo,
                        trans,
                        n,
                        k,
                        s(&alpha),
                        dev(a.ptr),
                        a.ld,
                        s(&beta),
                        dev_mut(c.ptr),
                        c.ld,
                    ),
                    "cublas<t>syrk",
                ),
                Blas23::Trmm {
                    solve: false,
                    side,
                    uplo,
                    trans,
                    diag,
                    m,
                    n,
                    alpha,
                    a,
                    b,
                    c,
                } => (
                    (api.trmm[pi])(
                        h,
                        side,
                        uplo,
                        trans,
                        diag,
                        m,
                        n,
                        s(&alpha),
                        dev(a.ptr),
                        a.ld,
                        dev(b.ptr),
                        b.ld,
                        dev_mut(c.ptr),
                        c.ld,
                    ),
                    "cublas<t>trmm",
                ),
                Blas23::Trmm {
                    solve: true,
                    side,
                    uplo,
                    trans,
                    diag,
                    m,
                    n,
                    alpha,
                    a,
                    b,
                    ..
                } => (
                    (api.trsm[pi])(
                        h,
                        side,
                        uplo,
                        trans,
                        diag,
                        m,
                        n,
                        s(&alpha),
                        dev(a.ptr),
                        a.ld,
                        dev_mut(b.ptr),
                        b.ld,
                    ),
                    "cublas<t>trsm",
                ),
                Blas23::Geam {
                    transa,
                    transb,
                    m,
                    n,
                    alpha,
                    a,
                    beta,
                    b,
                    c,
                } => (
                    (api.geam[pi])(
                        h,
                        transa,
                        transb,
                        m,
                        n,
                        s(&alpha),
                        dev(a.ptr),
                        a.ld,
                        s(&beta),
                        dev(b.ptr),
                        b.ld,
                        dev_mut(c.ptr),
                        c.ld,
                    ),
                    "cublas<t>geam",
                ),
                Blas23::Dgmm {
                    side,
                    m,
                    n,
                    a,
                    x,
                    c,
                } => (
                    (api.dgmm[pi])(
                        h,
                        side,
                        m,
                        n,
                        dev(a.ptr),
                        a.ld,
                        dev(x.ptr),
                        x.inc,
                        dev_mut(c.ptr),
                        c.ld,
                    ),
                    "cublas<t>dgmm",
                ),
                Blas23::Gbmv {
                    trans,
                    m,
                    n,
                    kl,
                    ku,
                    alpha,
                    a,
                    x,
                    beta,
                    y,
                } => (
                    (api.gbmv[pi])(
                        h,
                        trans,
                        m,
                        n,
                        kl,
                        ku,
                        s(&alpha),
                        dev(a.ptr),
                        a.ld,
                        dev(x.ptr),
                        x.inc,
                        s(&beta),
                        dev_mut(y.ptr),
                        y.inc,
                    ),
                    "cublas<t>gbmv",
                ),
                Blas23::Sbmv {
                    uplo,
                    n,
                    k,
                    alpha,
                    a,
                    x,
                    beta,
                    y,
                } => (
                    (api.sbmv[pi])(
                        h,
                        uplo,
                        n,
                        k,
                        s(&alpha),
                        dev(a.ptr),
                        a.ld,
                        dev(x.ptr),
                        x.inc,
                        s(&beta),
                        dev_mut(y.ptr),
                        y.inc,
                    ),
                    "cublas<t>sbmv",
                ),
                Blas23::Spmv {
                    uplo,
                    n,
                    alpha,
                    ap,
                    x,
                    beta,
                    y,
                } => (
                    (api.spmv[pi])(
                        h,
                        uplo,
                        n,
                        s(&alpha),
                        dev(ap),
                        dev(x.ptr),
                        x.inc,
                        s(&beta),
                        dev_mut(y.ptr),
                        y.inc,
                    ),
                    "cublas<t>spmv",
                ),
                Blas23::Tbmv {
                    solve,
                    uplo,
                    trans,
                    diag,
                    n,
                    k,
                    a,
                    x,
                } => {
                    let f = if solve { api.tbsv[pi] } else { api.tbmv[pi] };
                    (
                        f(
                            h,
                            uplo,
                            trans,
                            diag,
                            n,
                            k,
                            dev(a.ptr),
                            a.ld,
                            dev_mut(x.ptr),
                            x.inc,
                        ),
                        "cublas<t>tbmv",
                    )
                }
                Blas23::Tpmv {
                    solve,
                    uplo,
                    trans,
                    diag,
                    n,
                    ap,
                    x,
                } => {
                    let f = if solve { api.tpsv[pi] } else { api.tpmv[pi] };
                    (
                        f(h, uplo, trans, diag, n, dev(ap), dev_mut(x.ptr), x.inc),
                        "cublas<t>tpmv",
                    )
                }
                Blas23::Syr {
                    hermitian,
                    two,
                    packed,
                    uplo,
                    n,
                    alpha,
                    x,
                    y,
                    a,
                } => {
                    let (xp, yp, ap) = (dev(x.ptr), dev(y.ptr), dev_mut(a.ptr));
                    match (two, packed) {
                        (false, false) => (
                            pick(&api.syr, &api.her, hermitian, pi)(
                                h,
                                uplo,
                                n,
                                s(&alpha),
                                xp,
                                x.inc,
                                ap,
                                a.ld,
                            ),
                            "cublas<t>syr",
                        ),
                        (true, false) => (
                            pick(&api.syr2, &api.her2, hermitian, pi)(
                                h,
                                uplo,
                                n,
                                s(&alpha),
                                xp,
                                x.inc,
                                yp,
                                y.inc,
                                ap,
                                a.ld,
                            ),
                            "cublas<t>syr2",
                        ),
                        (false, true) => (
                            (api.spr[pi])(h, uplo, n, s(&alpha), xp, x.inc, ap),
                            "cublas<t>spr",
                        ),
                        (true, true) => (
                            (api.spr2[pi])(h, uplo, n, s(&alpha), xp, x.inc, yp, y.inc, ap),
                            "cublas<t>spr2",
                        ),
                    }
                }
                Blas23::Syr2k {
                    hermitian,
                    x,
                    uplo,
                    trans,
                    n,
                    k,
                    alpha,
                    a,
                    b,
                    beta,
                    c,
                } => {
                    let f = if x {
                        pick(&api.syrkx, &api.herkx, hermitian, pi)
                    } else {
                        pick(&api.syr2k, &api.her2k, hermitian, pi)
                    };
                    (
                        f(
                            h,
                            uplo,
                            trans,
                            n,
                            k,
                            s(&alpha),
                            dev(a.ptr),
                            a.ld,
                            dev(b.ptr),
                            b.ld,
                            s(&beta),
                            dev_mut(c.ptr),
                            c.ld,
                        ),
                        "cublas<t>syr2k",
                    )
                }
            }
        };
        self.finish(status, name)
    }

    /// rotg (rotmg with `modified`, real precisions): in host pointer mode
    /// (`device` `None`) on the values in `host`, which receive the
    /// results; else on the checked device addresses in `device` (rotg: a,
    /// b, c, s; rotmg: d1, d2, x1, y1, param).
    pub fn rotg(
        &mut self,
        p: Precision,
        modified: bool,
        device: Option<[u64; 5]>,
        host: &mut RotBuffers,
    ) -> Result<(), BlasError> {
        let pi = p as usize;
        if modified && pi >= 2 {
            return Err(BlasError::Arguments("rotmg has real forms only"));
        }
        self.prepare(if device.is_some() {
            POINTER_MODE_DEVICE
        } else {
            POINTER_MODE_HOST
        })?;
        let ptrs: [Out; 5] = match device {
            Some(d) => d.map(dev_mut),
            None => {
                let [a, b, c, s] = &mut host.values;
                [
                    a.0.as_mut_ptr().cast(),
                    b.0.as_mut_ptr().cast(),
                    c.0.as_mut_ptr().cast(),
                    s.0.as_mut_ptr().cast(),
                    host.param.as_mut_ptr().cast(),
                ]
            }
        };
        // SAFETY: the prototypes match (see `resolve`); in device mode the
        // addresses were checked by the caller for one value each (param:
        // five); in host mode they point into `host`, 16 bytes per value
        // and 48 for param, which outlive the completed call.
        let (status, name) = unsafe {
            if modified {
                (
                    (self.api.rotmg[pi])(self.raw, ptrs[0], ptrs[1], ptrs[2], ptrs[3], ptrs[4]),
                    "cublas<t>rotmg",
                )
            } else {
                (
                    (self.api.rotg[pi])(self.raw, ptrs[0], ptrs[1], ptrs[2], ptrs[3]),
                    "cublas<t>rotg",
                )
            }
        };
        self.finish(status, name)
    }

    /// rotm (real precisions) on `n` elements of `x` and `y`.
    pub fn rotm(
        &mut self,
        p: Precision,
        n: i32,
        x: Vector,
        y: Vector,
        param: ParamArg,
    ) -> Result<(), BlasError> {
        let pi = p as usize;
        if pi >= 2 {
            return Err(BlasError::Arguments("rotm has real forms only"));
        }
        let (mode, param_ptr): (c_int, In) = match &param {
            ParamArg::Host(buffer) => (POINTER_MODE_HOST, buffer.as_ptr().cast()),
            ParamArg::Device(ptr) => (POINTER_MODE_DEVICE, dev(*ptr)),
        };
        self.prepare(mode)?;
        // SAFETY: the prototype matches; x, y and a device param were
        // checked by the caller; a host param points into `param`, 48
        // bytes, which outlives the completed call.
        let status = unsafe {
            (self.api.rotm[pi])(
                self.raw,
                n,
                dev_mut(x.ptr),
                x.inc,
                dev_mut(y.ptr),
                y.inc,
                param_ptr,
            )
        };
        self.finish(status, "cublas<t>rotm")
    }

    /// A batched LU routine (see [`LuBatched`]).
    pub fn lu_batched(&mut self, call: LuBatched, p: Precision) -> Result<(), BlasError> {
        self.prepare(POINTER_MODE_HOST)?;
        let (h, api, pi) = (self.raw, &*self.api, p as usize);
        let ints = |ptr: u64| ptr as *mut c_int;
        // SAFETY: the arrays hold checked pointers to matrices inside the
        // client's allocations and live in the server's own device memory;
        // pivots and info are checked device ranges (pivots NULL asks for
        // no pivoting, as cuBLAS documents); getrs's info is a local.
        let (status, name) = unsafe {
            match call {
                LuBatched::Getrf {
                    n,
                    a,
                    lda,
                    pivots,
                    info,
                    batch,
                } => (
                    (api.getrf_batched[pi])(h, n, dev_mut(a), lda, ints(pivots), ints(info), batch),
                    "cublas<t>getrfBatched",
                ),
                LuBatched::Getrs {
                    trans,
                    n,
                    nrhs,
                    a,
                    lda,
                    pivots,
                    b,
                    ldb,
                    batch,
                } => {
                    let mut info: c_int = 0;
                    let status = (api.getrs_batched[pi])(
                        h,
                        trans,
                        n,
                        nrhs,
                        dev(a),
                        lda,
                        ints(pivots),
                        dev_mut(b),
                        ldb,
                        &mut info,
                        batch,
                    );
                    if status == 0 && info != 0 {
                        tracing::debug!("cublas<t>getrsBatched: info {info}");
                    }
                    (status, "cublas<t>getrsBatched")
                }
                LuBatched::Getri {
                    n,
                    a,
                    lda,
                    pivots,
                    c,
                    ldc,
                    info,
                    batch,
                } => (
                    (api.getri_batched[pi])(
                        h,
                        n,
                        dev(a),
                        lda,
                        ints(pivots),
                        dev_mut(c),
                        ldc,
                        ints(info),
                        batch,
                    ),
                    "cublas<t>getriBatched",
                ),
                LuBatched::Matinv {
                    n,
                    a,
                    lda,
                    c,
                    ldc,
                    info,
                    batch,
                } => (
                    (api.matinv_batched[pi])(h, n, dev(a), lda, dev_mut(c), ldc, ints(info), batch),
                    "cublas<t>matinvBatched",
                ),
            }
        };
        self.finish(status, name)
    }

    /// A batched routine (see [`Batched`]) in precision `p`.
    pub fn batched(&mut self, call: Batched, p: Precision) -> Result<(), BlasError> {
        let scalars: Vec<ScalarArg> = match call {
            Batched::Trsm { alpha, .. } => vec![alpha],
            Batched::Gemv { alpha, beta, .. } => vec![alpha, beta],
            Batched::Geqrf { .. } | Batched::Gels { .. } => vec![],
        };
        self.prepare(pointer_mode(&scalars, None)?)?;
        let (h, api, pi) = (self.raw, &*self.api, p as usize);
        // SAFETY: the arrays hold checked pointers to matrices and vectors
        // inside the client's allocations and live in the server's own
        // device memory; strided ranges and devInfoArray are checked device
        // ranges; host scalars live in `call` and the host `info` is a
        // local, both outliving the completed call.
        let (status, name) = unsafe {
            match call {
                Batched::Trsm {
                    side,
                    uplo,
                    trans,
                    diag,
                    m,
                    n,
                    ref alpha,
                    a,
                    lda,
                    b,
                    ldb,
                    batch,
                } => (
                    (api.trsm_batched[pi])(
                        h,
                        side,
                        uplo,
                        trans,
                        diag,
                        m,
                        n,
                        scalar_ptr(alpha),
                        dev(a),
                        lda,
                        dev(b),
                        ldb,
                        batch,
                    ),
                    "cublas<t>trsmBatched",
                ),
                Batched::Gemv {
                    trans,
                    m,
                    n,
                    ref alpha,
                    a,
                    lda,
                    x,
                    incx,
                    ref beta,
                    y,
                    incy,
                    strides: None,
                    batch,
                } => (
                    (api.gemv_batched[pi])(
                        h,
                        trans,
                        m,
                        n,
                        scalar_ptr(alpha),
                        dev(a),
                        lda,
                        dev(x),
                        incx,
                        scalar_ptr(beta),
                        dev(y),
                        incy,
                        batch,
                    ),
                    "cublas<t>gemvBatched",
                ),
                Batched::Gemv {
                    trans,
                    m,
                    n,
                    ref alpha,
                    a,
                    lda,
                    x,
                    incx,
                    ref beta,
                    y,
                    incy,
                    strides: Some([sa, sx, sy]),
                    batch,
                } => (
                    (api.gemv_strided_batched[pi])(
                        h,
                        trans,
                        m,
                        n,
                        scalar_ptr(alpha),
                        dev(a),
                        lda,
                        sa,
                        dev(x),
                        incx,
                        sx,
                        scalar_ptr(beta),
                        dev_mut(y),
                        incy,
                        sy,
                        batch,
                    ),
                    "cublas<t>gemvStridedBatched",
                ),
                Batched::Geqrf {
                    m,
                    n,
                    a,
                    lda,
                    tau,
                    batch,
                } => {
                    let mut info: c_int = 0;
                    let status =
                        (api.geqrf_batched[pi])(h, m, n, dev(a), lda, dev(tau), &mut info, batch);
                    if info != 0 {
                        tracing::debug!("cublas<t>geqrfBatched: info {info}");
                    }
                    (status, "cublas<t>geqrfBatched")
                }
                Batched::Gels {
                    trans,
                    m,
                    n,
                    nrhs,
                    a,
                    lda,
                    c,
                    ldc,
                    dev_info,
                    batch,
                } => {
                    let mut info: c_int = 0;
                    let status = (api.gels_batched[pi])(
                        h,
                        trans,
                        m,
                        n,
                        nrhs,
                        dev(a),
                        lda,
                        dev(c),
                        ldc,
                        &mut info,
                        dev_info as *mut c_int,
                        batch,
                    );
                    if info != 0 {
                        tracing::debug!("cublas<t>gelsBatched: info {info}");
                    }
                    (status, "cublas<t>gelsBatched")
                }
            }
        };
        self.finish(status, name)
    }

    /// `C = alpha op(A) op(B) + beta C`: `cublasGemmEx`,
    /// `cublasGemmStridedBatchedEx` or `cublasGemmBatchedEx`. For
    /// [`GemmOperands::Arrays`] the arrays must be device memory the
    /// caller filled with checked pointers and that the client cannot
    /// change during the call.
    pub fn gemm(&mut self, g: GemmArgs, operands: GemmOperands) -> Result<(), BlasError> {
        self.prepare(pointer_mode(&[g.alpha, g.beta], None)?)?;
        let [ta, tb] = g.trans;
        let [m, n, k] = g.dims;
        let [at, bt, ct] = g.types;
        let [lda, ldb, ldc] = g.ld;
        let (alpha, beta) = (scalar_ptr(&g.alpha), scalar_ptr(&g.beta));
        // SAFETY: as in `level1`: checked device ranges (every matrix of
        // every product, the pointer arrays included), host scalars in `g`,
        // which outlives the completed call.
        let (status, call) = unsafe {
            match operands {
                GemmOperands::Single { ptrs: [a, b, c] } => (
                    (self.api.gemm_ex)(
                        self.raw,
                        ta,
                        tb,
                        m,
                        n,
                        k,
                        alpha,
                        dev(a),
                        at,
                        lda,
                        dev(b),
                        bt,
                        ldb,
                        beta,
                        dev_mut(c),
                        ct,
                        ldc,
                        g.compute,
                        GEMM_DEFAULT,
                    ),
                    "cublasGemmEx",
                ),
                GemmOperands::Strided {
                    ptrs: [a, b, c],
                    strides: [sa, sb, sc],
                    batch,
                } => (
                    (self.api.gemm_strided_batched_ex)(
                        self.raw,
                        ta,
                        tb,
                        m,
                        n,
                        k,
                        alpha,
                        dev(a),
                        at,
                        lda,
                        sa,
                        dev(b),
                        bt,
                        ldb,
                        sb,
                        beta,
                        dev_mut(c),
                        ct,
                        ldc,
                        sc,
                        batch,
                        g.compute,
                        GEMM_DEFAULT,
                    ),
                    "cublasGemmStridedBatchedEx",
                ),
                GemmOperands::Arrays {
                    arrays: [a, b, c],
                    batch,
                } => (
                    (self.api.gemm_batched_ex)(
                        self.raw,
                        ta,
                        tb,
                        m,
                        n,
                        k,
                        alpha,
                        a as *const In,
                        at,
                        lda,
                        b as *const In,
                        bt,
                        ldb,
                        beta,
                        c as *const Out,
                        ct,
                        ldc,
                        batch,
                        g.compute,
                        GEMM_DEFAULT,
                    ),
                    "cublasGemmBatchedEx",
                ),
            }
        };
        self.finish(status, call)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_cublas_is_an_error_value_naming_the_first_candidate() {
        let e = Blas::load_from(&[
            "/nonexistent/libcublas.so.13",
            "/nonexistent/libcublas.so.12",
        ])
        .unwrap_err();
        let text = e.to_string();
        assert!(text.contains("/nonexistent/libcublas.so.13"), "{text}");
    }

    #[test]
    fn one_pointer_mode_per_call() {
        let h = ScalarArg::Host(HostScalar::default());
        let d = ScalarArg::Device(0x1000);
        assert_eq!(pointer_mode(&[h, h], None), Ok(POINTER_MODE_HOST));
        assert_eq!(pointer_mode(&[d, d], None), Ok(POINTER_MODE_DEVICE));
        assert_eq!(
            pointer_mode(&[], Some(ResultArg::Host)),
            Ok(POINTER_MODE_HOST)
        );
        assert_eq!(
            pointer_mode(&[], Some(ResultArg::Device(8))),
            Ok(POINTER_MODE_DEVICE)
        );
        assert!(pointer_mode(&[h, d], None).is_err());
        assert!(pointer_mode(&[h], Some(ResultArg::Device(8))).is_err());
    }
}
