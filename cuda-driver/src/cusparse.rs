//! NVIDIA's cuSPARSE (its generic API), loaded at run time, for the `cuda`
//! backend's math calls.
//!
//! As for cuBLAS ([`crate::cublas`]), every entry point is resolved once
//! when the library is opened ([`Sparse::load_from`]) and device addresses
//! are plain numbers: the backend checks every array a call touches
//! against the client's own allocations before it calls a method here.
//! rcud's wire carries matrix and vector descriptors by value, so each
//! method makes NVIDIA's descriptors for its call and destroys them after.
//! cuSPARSE's external buffers are not on the wire either: a handle owns
//! [`Workspace`]s in its context, asked for `*_bufferSize` bytes and grown
//! as needed. Host scalars point into [`HostScalar`]s owned by the caller's
//! arguments, and the pointer mode is set for each call from the kind of
//! its scalars.

use std::ffi::{c_int, c_void};
use std::fmt;
use std::sync::Arc;

pub use crate::cublas::{HostScalar, ScalarArg};
use crate::math_library::loaded_library;
use crate::workspace::Workspace;
use crate::{optional, symbol, CtxInner, DriverError, LoadError};
use cudarc::driver::sys::CUstream;

/// The file names NVIDIA's cuSPARSE is installed under, newest first: CUDA
/// 13 and CUDA 12 both ship `libcusparse.so.12`; CUDA 11 `.so.11`.
pub const LIBRARIES: [&str; 2] = ["libcusparse.so.12", "libcusparse.so.11"];

type Handle = *mut c_void;
type Descr = *mut c_void;
type Status = c_int;
type In = *const c_void;
type Out = *mut c_void;

/// `CUSPARSE_STATUS_INVALID_VALUE`.
pub const STATUS_INVALID_VALUE: i32 = 3;

/// `CUSPARSE_POINTER_MODE_HOST` / `_DEVICE`.
const POINTER_MODE_HOST: c_int = 0;
const POINTER_MODE_DEVICE: c_int = 1;
/// `CUSPARSE_SPMAT_FILL_MODE`, `CUSPARSE_SPMAT_DIAG_TYPE`.
const ATTRIBUTE_FILL_MODE: c_int = 0;
const ATTRIBUTE_DIAG_TYPE: c_int = 1;
/// The default algorithm of SpMV, SpMM, SpGEMM, SpSV, SparseToDense and
/// DenseToSparse (`*_ALG_DEFAULT`).
const ALG_DEFAULT: c_int = 0;
/// `CUSPARSE_CSR2CSC_ALG1` (deterministic, CUDA 11 and 12).
const CSR2CSC_ALG1: c_int = 1;
/// `CUSPARSE_OPERATION_NON_TRANSPOSE`.
const NON_TRANSPOSE: c_int = 0;
/// `CUSPARSE_ACTION_SYMBOLIC` / `_NUMERIC`.
const ACTION_SYMBOLIC: c_int = 0;
const ACTION_NUMERIC: c_int = 1;

type CreateCompressed = unsafe extern "C" fn(
    *mut Descr,
    i64,
    i64,
    i64,
    Out,
    Out,
    Out,
    c_int,
    c_int,
    c_int,
    c_int,
) -> Status;
type CreateCoo =
    unsafe extern "C" fn(*mut Descr, i64, i64, i64, Out, Out, Out, c_int, c_int, c_int) -> Status;
type DestroyDescr = unsafe extern "C" fn(Descr) -> Status;
type CreateDescr = unsafe extern "C" fn(*mut Descr) -> Status;
type SpMvBufferSize = unsafe extern "C" fn(
    Handle,
    c_int,
    In,
    Descr,
    Descr,
    In,
    Descr,
    c_int,
    c_int,
    *mut usize,
) -> Status;
type SpMv =
    unsafe extern "C" fn(Handle, c_int, In, Descr, Descr, In, Descr, c_int, c_int, Out) -> Status;
type SpMmBufferSize = unsafe extern "C" fn(
    Handle,
    c_int,
    c_int,
    In,
    Descr,
    Descr,
    In,
    Descr,
    c_int,
    c_int,
    *mut usize,
) -> Status;
type SpMm = unsafe extern "C" fn(
    Handle,
    c_int,
    c_int,
    In,
    Descr,
    Descr,
    In,
    Descr,
    c_int,
    c_int,
    Out,
) -> Status;
type SpGemmPhase = unsafe extern "C" fn(
    Handle,
    c_int,
    c_int,
    In,
    Descr,
    Descr,
    In,
    Descr,
    c_int,
    c_int,
    Descr,
    *mut usize,
    Out,
) -> Status;
type SpGemmCopy = unsafe extern "C" fn(
    Handle,
    c_int,
    c_int,
    In,
    Descr,
    Descr,
    In,
    Descr,
    c_int,
    c_int,
    Descr,
) -> Status;
type SpSvBufferSize = unsafe extern "C" fn(
    Handle,
    c_int,
    In,
    Descr,
    Descr,
    Descr,
    c_int,
    c_int,
    Descr,
    *mut usize,
) -> Status;
type SpSvAnalysis = unsafe extern "C" fn(
    Handle,
    c_int,
    In,
    Descr,
    Descr,
    Descr,
    c_int,
    c_int,
    Descr,
    Out,
) -> Status;
type SpSvSolve =
    unsafe extern "C" fn(Handle, c_int, In, Descr, Descr, Descr, c_int, c_int, Descr) -> Status;
type Csr2CscBufferSize = unsafe extern "C" fn(
    Handle,
    c_int,
    c_int,
    c_int,
    In,
    *const c_int,
    *const c_int,
    Out,
    *mut c_int,
    *mut c_int,
    c_int,
    c_int,
    c_int,
    c_int,
    *mut usize,
) -> Status;
type Csr2Csc = unsafe extern "C" fn(
    Handle,
    c_int,
    c_int,
    c_int,
    In,
    *const c_int,
    *const c_int,
    Out,
    *mut c_int,
    *mut c_int,
    c_int,
    c_int,
    c_int,
    c_int,
    Out,
) -> Status;
type Compress =
    unsafe extern "C" fn(Handle, *const c_int, c_int, c_int, *mut c_int, c_int) -> Status;
type ConvertBufferSize = unsafe extern "C" fn(Handle, Descr, Descr, c_int, *mut usize) -> Status;
type Convert = unsafe extern "C" fn(Handle, Descr, Descr, c_int, Out) -> Status;

type SortBufferSize = unsafe extern "C" fn(
    Handle,
    c_int,
    c_int,
    c_int,
    *const c_int,
    *const c_int,
    *mut usize,
) -> Status;
type CooSort = unsafe extern "C" fn(
    Handle,
    c_int,
    c_int,
    c_int,
    *mut c_int,
    *mut c_int,
    *mut c_int,
    Out,
) -> Status;
type CsrSort = unsafe extern "C" fn(
    Handle,
    c_int,
    c_int,
    c_int,
    Descr,
    *const c_int,
    *mut c_int,
    *mut c_int,
    Out,
) -> Status;
type CreateSpVec =
    unsafe extern "C" fn(*mut Descr, i64, i64, Out, Out, c_int, c_int, c_int) -> Status;

/// `CUSPARSE_STATUS_NOT_SUPPORTED`.
const STATUS_NOT_SUPPORTED: i32 = 10;

/// The legacy sorts, the identity permutation and Gather/Scatter: resolved
/// when present, so that a cuSPARSE without them (a future release that
/// drops the legacy API) still serves the generic calls.
struct LegacyApi {
    identity_permutation: unsafe extern "C" fn(Handle, c_int, *mut c_int) -> Status,
    coosort_buffer_size: SortBufferSize,
    coosort_by_row: CooSort,
    coosort_by_column: CooSort,
    csrsort_buffer_size: SortBufferSize,
    csrsort: CsrSort,
    create_mat_descr: CreateDescr,
    destroy_mat_descr: DestroyDescr,
    set_mat_index_base: unsafe extern "C" fn(Descr, c_int) -> Status,
    create_sp_vec: CreateSpVec,
    destroy_sp_vec: DestroyDescr,
    gather: unsafe extern "C" fn(Handle, Descr, Descr) -> Status,
    scatter: unsafe extern "C" fn(Handle, Descr, Descr) -> Status,
}

impl LegacyApi {
    /// # Safety
    ///
    /// As for `SparseApi::resolve`: the prototypes match cusparse.h and
    /// `lib` outlives the pointers.
    unsafe fn resolve(lib: &libloading::Library) -> Option<Self> {
        // SAFETY: forwarded from the caller.
        unsafe {
            Some(Self {
                identity_permutation: optional(lib, "cusparseCreateIdentityPermutation")?,
                coosort_buffer_size: optional(lib, "cusparseXcoosort_bufferSizeExt")?,
                coosort_by_row: optional(lib, "cusparseXcoosortByRow")?,
                coosort_by_column: optional(lib, "cusparseXcoosortByColumn")?,
                csrsort_buffer_size: optional(lib, "cusparseXcsrsort_bufferSizeExt")?,
                csrsort: optional(lib, "cusparseXcsrsort")?,
                create_mat_descr: optional(lib, "cusparseCreateMatDescr")?,
                destroy_mat_descr: optional(lib, "cusparseDestroyMatDescr")?,
                set_mat_index_base: optional(lib, "cusparseSetMatIndexBase")?,
                create_sp_vec: optional(lib, "cusparseCreateSpVec")?,
                destroy_sp_vec: optional(lib, "cusparseDestroySpVec")?,
                gather: optional(lib, "cusparseGather")?,
                scatter: optional(lib, "cusparseScatter")?,
            })
        }
    }
}

/// The cuSPARSE entry points the backend uses, with the prototypes of
/// `cusparse.h` (data pointers as `void *`, enums as `int`, `int64_t` as
/// `i64`; the `const` descriptor types of CUDA 12 are the same pointers).
struct SparseApi {
    create: unsafe extern "C" fn(*mut Handle) -> Status,
    destroy: unsafe extern "C" fn(Handle) -> Status,
    set_stream: unsafe extern "C" fn(Handle, CUstream) -> Status,
    set_pointer_mode: unsafe extern "C" fn(Handle, c_int) -> Status,
    create_csr: CreateCompressed,
    create_csc: CreateCompressed,
    create_coo: CreateCoo,
    destroy_sp_mat: DestroyDescr,
    sp_mat_set_attribute: unsafe extern "C" fn(Descr, c_int, Out, usize) -> Status,
    sp_mat_get_size: unsafe extern "C" fn(Descr, *mut i64, *mut i64, *mut i64) -> Status,
    csr_set_pointers: unsafe extern "C" fn(Descr, Out, Out, Out) -> Status,
    create_dn_vec: unsafe extern "C" fn(*mut Descr, i64, Out, c_int) -> Status,
    destroy_dn_vec: DestroyDescr,
    create_dn_mat: unsafe extern "C" fn(*mut Descr, i64, i64, i64, Out, c_int, c_int) -> Status,
    destroy_dn_mat: DestroyDescr,
    spmv_buffer_size: SpMvBufferSize,
    spmv: SpMv,
    spmm_buffer_size: SpMmBufferSize,
    spmm: SpMm,
    spgemm_create_descr: CreateDescr,
    spgemm_destroy_descr: DestroyDescr,
    spgemm_work_estimation: SpGemmPhase,
    spgemm_compute: SpGemmPhase,
    spgemm_copy: SpGemmCopy,
    spsv_create_descr: CreateDescr,
    spsv_destroy_descr: DestroyDescr,
    spsv_buffer_size: SpSvBufferSize,
    spsv_analysis: SpSvAnalysis,
    spsv_solve: SpSvSolve,
    csr2csc_buffer_size: Csr2CscBufferSize,
    csr2csc: Csr2Csc,
    coo2csr: Compress,
    csr2coo: Compress,
    sparse_to_dense_buffer_size: ConvertBufferSize,
    sparse_to_dense: Convert,
    dense_to_sparse_buffer_size: ConvertBufferSize,
    dense_to_sparse_analysis: Convert,
    dense_to_sparse_convert: Convert,
    /// None where the library lacks one of them.
    legacy: Option<LegacyApi>,
    /// Keeps the code behind the pointers mapped; dropped last.
    _library: libloading::Library,
}

impl SparseApi {
    fn resolve(library: libloading::Library) -> Result<Self, LoadError> {
        let lib = &library;
        // SAFETY: every field's type is the prototype in cusparse.h of the
        // entry point it is resolved from (see the type aliases above); the
        // pointers are stored next to `library`, which outlives them.
        unsafe {
            Ok(Self {
                create: symbol(lib, "cusparseCreate")?,
                destroy: symbol(lib, "cusparseDestroy")?,
                set_stream: symbol(lib, "cusparseSetStream")?,
                set_pointer_mode: symbol(lib, "cusparseSetPointerMode")?,
                create_csr: symbol(lib, "cusparseCreateCsr")?,
                create_csc: symbol(lib, "cusparseCreateCsc")?,
                create_coo: symbol(lib, "cusparseCreateCoo")?,
                destroy_sp_mat: symbol(lib, "cusparseDestroySpMat")?,
                sp_mat_set_attribute: symbol(lib, "cusparseSpMatSetAttribute")?,
                sp_mat_get_size: symbol(lib, "cusparseSpMatGetSize")?,
                csr_set_pointers: symbol(lib, "cusparseCsrSetPointers")?,
                create_dn_vec: symbol(lib, "cusparseCreateDnVec")?,
                destroy_dn_vec: symbol(lib, "cusparseDestroyDnVec")?,
                create_dn_mat: symbol(lib, "cusparseCreateDnMat")?,
                destroy_dn_mat: symbol(lib, "cusparseDestroyDnMat")?,
                spmv_buffer_size: symbol(lib, "cusparseSpMV_bufferSize")?,
                spmv: symbol(lib, "cusparseSpMV")?,
                spmm_buffer_size: symbol(lib, "cusparseSpMM_bufferSize")?,
                spmm: symbol(lib, "cusparseSpMM")?,
                spgemm_create_descr: symbol(lib, "cusparseSpGEMM_createDescr")?,
                spgemm_destroy_descr: symbol(lib, "cusparseSpGEMM_destroyDescr")?,
                spgemm_work_estimation: symbol(lib, "cusparseSpGEMM_workEstimation")?,
                spgemm_compute: symbol(lib, "cusparseSpGEMM_compute")?,
                spgemm_copy: symbol(lib, "cusparseSpGEMM_copy")?,
                spsv_create_descr: symbol(lib, "cusparseSpSV_createDescr")?,
                spsv_destroy_descr: symbol(lib, "cusparseSpSV_destroyDescr")?,
                spsv_buffer_size: symbol(lib, "cusparseSpSV_bufferSize")?,
                spsv_analysis: symbol(lib, "cusparseSpSV_analysis")?,
                spsv_solve: symbol(lib, "cusparseSpSV_solve")?,
                csr2csc_buffer_size: symbol(lib, "cusparseCsr2cscEx2_bufferSize")?,
                csr2csc: symbol(lib, "cusparseCsr2cscEx2")?,
                coo2csr: symbol(lib, "cusparseXcoo2csr")?,
                csr2coo: symbol(lib, "cusparseXcsr2coo")?,
                sparse_to_dense_buffer_size: symbol(lib, "cusparseSparseToDense_bufferSize")?,
                sparse_to_dense: symbol(lib, "cusparseSparseToDense")?,
                dense_to_sparse_buffer_size: symbol(lib, "cusparseDenseToSparse_bufferSize")?,
                dense_to_sparse_analysis: symbol(lib, "cusparseDenseToSparse_analysis")?,
                dense_to_sparse_convert: symbol(lib, "cusparseDenseToSparse_convert")?,
                legacy: LegacyApi::resolve(lib),
                _library: library,
            })
        }
    }
}

loaded_library! {
    /// NVIDIA's cuSPARSE, opened once and shared by every client.
    Sparse(SparseApi), "cuSPARSE", "cuSPARSE 11.3"
}

/// A cuSPARSE call failed or was not made.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SparseError {
    /// Making the context current, or a buffer of the server's own, failed.
    #[error(transparent)]
    Driver(#[from] DriverError),
    /// cuSPARSE answered this `cusparseStatus_t`.
    #[error("{call} failed: cusparseStatus_t {status}")]
    Status {
        /// The entry point.
        call: &'static str,
        /// Its status.
        status: i32,
    },
    /// The arguments do not fit one call (host and device scalars
    /// together, a descriptor whose nnz is not the one computed):
    /// `CUSPARSE_STATUS_INVALID_VALUE` for the client.
    #[error("cuSPARSE arguments: {0}")]
    Arguments(String),
}

impl SparseError {
    /// The `cusparseStatus_t` the client gets, unless the driver failed.
    pub fn status(&self) -> Option<i32> {
        match self {
            Self::Driver(_) => None,
            Self::Status { status, .. } => Some(*status),
            Self::Arguments(_) => Some(STATUS_INVALID_VALUE),
        }
    }
}

fn check(status: Status, call: &'static str) -> Result<(), SparseError> {
    if status == 0 {
        Ok(())
    } else {
        Err(SparseError::Status { call, status })
    }
}

/// `cusparseFormat_t` of a sparse matrix.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// `CUSPARSE_FORMAT_CSR`: offsets by row, column indices.
    Csr,
    /// `CUSPARSE_FORMAT_CSC`: offsets by column, row indices.
    Csc,
    /// `CUSPARSE_FORMAT_COO`: row indices (in `offsets`), column indices.
    Coo,
}

/// A sparse matrix descriptor's contents (`cusparseCreateCsr`/`Csc`/`Coo`);
/// enumerations and `cudaDataType` as their `int` values.
#[allow(missing_docs)] // named as in cusparse.h
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SpMatArgs {
    pub format: Format,
    pub rows: i64,
    pub cols: i64,
    pub nnz: i64,
    /// CSR row offsets, CSC column offsets, COO row indices.
    pub offsets: u64,
    /// CSR column indices, CSC and COO the other indices.
    pub indices: u64,
    pub values: u64,
    /// Index type of `offsets` (CSR and CSC).
    pub offset_type: i32,
    pub index_type: i32,
    pub base: i32,
    pub value_type: i32,
    /// `(cusparseFillMode_t, cusparseDiagType_t)`, set as attributes for SpSV.
    pub triangle: Option<(i32, i32)>,
}

/// A dense vector descriptor's contents (`cusparseCreateDnVec`).
#[allow(missing_docs)] // named as in cusparse.h
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DnVecArgs {
    pub size: i64,
    pub values: u64,
    pub value_type: i32,
}

/// A dense matrix descriptor's contents (`cusparseCreateDnMat`).
#[allow(missing_docs)] // named as in cusparse.h
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DnMatArgs {
    pub rows: i64,
    pub cols: i64,
    pub ld: i64,
    pub values: u64,
    pub value_type: i32,
    /// `cusparseOrder_t`: 1 column-major, 2 row-major.
    pub order: i32,
}

/// `cusparseCsr2cscEx2`'s arguments (32-bit indices by its signature).
#[allow(missing_docs)] // named as in cusparse.h
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Csr2CscArgs {
    pub m: i32,
    pub n: i32,
    pub nnz: i32,
    pub csr_values: u64,
    pub csr_offsets: u64,
    pub csr_columns: u64,
    pub csc_values: u64,
    pub csc_offsets: u64,
    pub csc_rows: u64,
    pub value_type: i32,
    /// `CUSPARSE_ACTION_NUMERIC` when true, else `_SYMBOLIC`.
    pub copy_values: bool,
    pub base: i32,
}

/// A legacy entry point the server's cuSPARSE lacks: NOT_SUPPORTED for the
/// client.
fn missing(call: &'static str) -> SparseError {
    tracing::info!("{call} is not in the server's cuSPARSE");
    SparseError::Status {
        call,
        status: STATUS_NOT_SUPPORTED,
    }
}

/// A sparse vector descriptor's contents (`cusparseCreateSpVec`).
#[allow(missing_docs)] // named as in cusparse.h
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SpVecArgs {
    pub size: i64,
    pub nnz: i64,
    pub indices: u64,
    pub values: u64,
    pub index_type: i32,
    pub base: i32,
    pub value_type: i32,
}

/// One of NVIDIA's descriptors, made for one call and destroyed after it.
struct Descriptor<'a> {
    raw: Descr,
    destroy: DestroyDescr,
    call: &'static str,
    _api: &'a SparseApi,
}

impl Drop for Descriptor<'_> {
    fn drop(&mut self) {
        // SAFETY: `raw` is a live descriptor of the kind `destroy` takes,
        // used by nothing after this (the call using it has completed).
        let status = unsafe { (self.destroy)(self.raw) };
        if status != 0 {
            tracing::warn!("{} failed: cusparseStatus_t {status}", self.call);
        }
    }
}

fn made<'a>(
    api: &'a SparseApi,
    raw: Descr,
    status: Status,
    call: &'static str,
    destroy: DestroyDescr,
    destroy_name: &'static str,
) -> Result<Descriptor<'a>, SparseError> {
    check(status, call)?;
    Ok(Descriptor {
        raw,
        destroy,
        call: destroy_name,
        _api: api,
    })
}

impl SparseApi {
    fn sp_mat(&self, m: &SpMatArgs) -> Result<Descriptor<'_>, SparseError> {
        let mut raw: Descr = std::ptr::null_mut();
        let (o, i, v) = (m.offsets as Out, m.indices as Out, m.values as Out);
        // SAFETY: `raw` is a valid out-pointer; the arrays are device
        // addresses the caller checked, only recorded here.
        let (status, call) = unsafe {
            match m.format {
                Format::Csr => (
                    (self.create_csr)(
                        &mut raw,
                        m.rows,
                        m.cols,
                        m.nnz,
                        o,
                        i,
                        v,
                        m.offset_type,
                        m.index_type,
                        m.base,
                        m.value_type,
                    ),
                    "cusparseCreateCsr",
                ),
                Format::Csc => (
                    (self.create_csc)(
                        &mut raw,
                        m.rows,
                        m.cols,
                        m.nnz,
                        o,
                        i,
                        v,
                        m.offset_type,
                        m.index_type,
                        m.base,
                        m.value_type,
                    ),
                    "cusparseCreateCsc",
                ),
                Format::Coo => (
                    (self.create_coo)(
                        &mut raw,
                        m.rows,
                        m.cols,
                        m.nnz,
                        o,
                        i,
                        v,
                        m.index_type,
                        m.base,
                        m.value_type,
                    ),
                    "cusparseCreateCoo",
                ),
            }
        };
        let d = made(
            self,
            raw,
            status,
            call,
            self.destroy_sp_mat,
            "cusparseDestroySpMat",
        )?;
        if let Some((fill, diag)) = m.triangle {
            for (attribute, value) in [(ATTRIBUTE_FILL_MODE, fill), (ATTRIBUTE_DIAG_TYPE, diag)] {
                let mut value: c_int = value;
                // SAFETY: a live descriptor; `value` is the attribute's
                // `int`-sized enum, read during the call.
                let status = unsafe {
                    (self.sp_mat_set_attribute)(
                        d.raw,
                        attribute,
                        (&mut value as *mut c_int).cast(),
                        std::mem::size_of::<c_int>(),
                    )
                };
                check(status, "cusparseSpMatSetAttribute")?;
            }
        }
        Ok(d)
    }

    fn dn_vec(&self, v: &DnVecArgs) -> Result<Descriptor<'_>, SparseError> {
        let mut raw: Descr = std::ptr::null_mut();
        // SAFETY: a valid out-pointer; the values' address was checked.
        let status =
            unsafe { (self.create_dn_vec)(&mut raw, v.size, v.values as Out, v.value_type) };
        made(
            self,
            raw,
            status,
            "cusparseCreateDnVec",
            self.destroy_dn_vec,
            "cusparseDestroyDnVec",
        )
    }

    fn dn_mat(&self, m: &DnMatArgs) -> Result<Descriptor<'_>, SparseError> {
        let mut raw: Descr = std::ptr::null_mut();
        // SAFETY: a valid out-pointer; the values' extent was checked.
        let status = unsafe {
            (self.create_dn_mat)(
                &mut raw,
                m.rows,
                m.cols,
                m.ld,
                m.values as Out,
                m.value_type,
                m.order,
            )
        };
        made(
            self,
            raw,
            status,
            "cusparseCreateDnMat",
            self.destroy_dn_mat,
            "cusparseDestroyDnMat",
        )
    }

    /// A SpGEMM or SpSV descriptor.
    fn operation_descr(
        &self,
        create: CreateDescr,
        destroy: DestroyDescr,
        names: (&'static str, &'static str),
    ) -> Result<Descriptor<'_>, SparseError> {
        let mut raw: Descr = std::ptr::null_mut();
        // SAFETY: a valid out-pointer.
        let status = unsafe { create(&mut raw) };
        made(self, raw, status, names.0, destroy, names.1)
    }

    /// The nnz a descriptor holds now (after SpGEMM_compute or
    /// DenseToSparse_analysis set it).
    fn nnz(&self, m: &Descriptor<'_>) -> Result<i64, SparseError> {
        let (mut rows, mut cols, mut nnz) = (0i64, 0i64, 0i64);
        // SAFETY: a live descriptor and valid out-pointers.
        let status = unsafe { (self.sp_mat_get_size)(m.raw, &mut rows, &mut cols, &mut nnz) };
        check(status, "cusparseSpMatGetSize")?;
        Ok(nnz)
    }
}

/// The pointer mode of a call's scalars: all host or all device.
fn pointer_mode(scalars: &[&ScalarArg]) -> Result<c_int, SparseError> {
    if scalars.iter().all(|s| matches!(s, ScalarArg::Host(_))) {
        Ok(POINTER_MODE_HOST)
    } else if scalars.iter().all(|s| matches!(s, ScalarArg::Device(_))) {
        Ok(POINTER_MODE_DEVICE)
    } else {
        Err(SparseError::Arguments(
            "host and device scalars in one call (one pointer mode per handle)".into(),
        ))
    }
}

/// The pointer cuSPARSE reads a scalar from: into `s` itself in host mode.
fn scalar_ptr(s: &ScalarArg) -> In {
    match s {
        ScalarArg::Host(bytes) => bytes.0.as_ptr().cast(),
        ScalarArg::Device(ptr) => *ptr as In,
    }
}

/// A cuSPARSE handle created in a client's context, bound to its stream,
/// with the device buffers its calls need; destroyed (with the context
/// current) when dropped, then its buffers freed.
pub struct SparseHandle {
    api: Arc<SparseApi>,
    ctx: Arc<CtxInner>,
    raw: Handle,
    /// The external buffer of every call (SpGEMM's first one).
    buffer: Workspace,
    /// SpGEMM's second buffer, which must live beside the first.
    spgemm_buffer: Workspace,
    /// A zero beta in device memory for SpGEMM in device pointer mode, and
    /// the offsets of a product whose nnz only is asked for; a sort's
    /// permutation when the client passed none. Set afresh by each call.
    scratch: Workspace,
}

// SAFETY: cuSPARSE handles may be used from any thread, one call at a
// time; `&mut self` on every call and the context bound first make it so.
unsafe impl Send for SparseHandle {}

impl fmt::Debug for SparseHandle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SparseHandle")
            .field("buffer", &self.buffer)
            .field("spgemm_buffer", &self.spgemm_buffer)
            .finish_non_exhaustive()
    }
}

impl Drop for SparseHandle {
    fn drop(&mut self) {
        if let Err(e) = self.ctx.bind() {
            tracing::warn!("releasing a cuSPARSE handle: {e}");
        }
        // SAFETY: `raw` is a live handle, used by nothing else after this.
        let status = unsafe { (self.api.destroy)(self.raw) };
        if status != 0 {
            tracing::warn!("cusparseDestroy failed: cusparseStatus_t {status}");
        }
    }
}

impl crate::Context {
    /// A new cuSPARSE handle in this context, on its stream
    /// (`cusparseCreate`, `cusparseSetStream`).
    pub fn sparse_handle(&self, sparse: &Sparse) -> Result<SparseHandle, SparseError> {
        self.inner.bind()?;
        let mut raw: Handle = std::ptr::null_mut();
        // SAFETY: `raw` is a valid out-pointer; the context is current.
        check(unsafe { (sparse.api.create)(&mut raw) }, "cusparseCreate")?;
        let handle = SparseHandle {
            api: sparse.api.clone(),
            ctx: self.inner.clone(),
            raw,
            buffer: Workspace::new(self),
            spgemm_buffer: Workspace::new(self),
            scratch: Workspace::new(self),
        };
        // SAFETY: a live handle and this context's live stream.
        let status = unsafe { (sparse.api.set_stream)(raw, self.inner.stream) };
        check(status, "cusparseSetStream")?;
        Ok(handle)
    }
}

/// Zero in any type (16 zero bytes), in `alpha`'s pointer mode.
fn zero_like(alpha: &ScalarArg, device_zero: u64) -> ScalarArg {
    match alpha {
        ScalarArg::Host(_) => ScalarArg::Host(HostScalar::default()),
        ScalarArg::Device(_) => ScalarArg::Device(device_zero),
    }
}

impl SparseHandle {
    /// Binds the context and sets the pointer mode of `scalars`.
    fn prepare(&mut self, scalars: &[&ScalarArg]) -> Result<(), SparseError> {
        let mode = pointer_mode(scalars)?;
        self.ctx.bind()?;
        // A call that failed half-way may have left work queued on our
        // buffers: it completes before this call can regrow them.
        self.ctx.sync_stream()?;
        // SAFETY: a live handle; `mode` is one of the two valid values.
        let status = unsafe { (self.api.set_pointer_mode)(self.raw, mode) };
        check(status, "cusparseSetPointerMode")
    }

    /// Waits for the call's work, so that it is complete when we return.
    fn finish(&self, status: Status, call: &'static str) -> Result<(), SparseError> {
        check(status, call)?;
        self.ctx.sync_stream()?;
        Ok(())
    }

    /// `y = alpha op(A) x + beta y` (`cusparseSpMV`).
    #[allow(clippy::too_many_arguments)]
    pub fn spmv(
        &mut self,
        op: i32,
        alpha: &ScalarArg,
        a: &SpMatArgs,
        x: &DnVecArgs,
        beta: &ScalarArg,
        y: &DnVecArgs,
        compute: i32,
    ) -> Result<(), SparseError> {
        self.prepare(&[alpha, beta])?;
        let api = self.api.clone();
        let (ma, vx, vy) = (api.sp_mat(a)?, api.dn_vec(x)?, api.dn_vec(y)?);
        let (al, be) = (scalar_ptr(alpha), scalar_ptr(beta));
        let mut size = 0usize;
        // SAFETY: live handle and descriptors; host scalars point into
        // `alpha`/`beta`, which outlive the call; a valid out-pointer.
        let status = unsafe {
            (api.spmv_buffer_size)(
                self.raw,
                op,
                al,
                ma.raw,
                vx.raw,
                be,
                vy.raw,
                compute,
                ALG_DEFAULT,
                &mut size,
            )
        };
        check(status, "cusparseSpMV_bufferSize")?;
        let buffer = self.buffer.at_least(size as u64)?;
        // SAFETY: as above; the device ranges of the descriptors were
        // checked by the caller, `buffer` holds `size` bytes of our own.
        let status = unsafe {
            (api.spmv)(
                self.raw,
                op,
                al,
                ma.raw,
                vx.raw,
                be,
                vy.raw,
                compute,
                ALG_DEFAULT,
                buffer as Out,
            )
        };
        self.finish(status, "cusparseSpMV")
    }

    /// `C = alpha op(A) op(B) + beta C` (`cusparseSpMM`).
    #[allow(clippy::too_many_arguments)]
    pub fn spmm(
        &mut self,
        [op_a, op_b]: [i32; 2],
        alpha: &ScalarArg,
        a: &SpMatArgs,
        b: &DnMatArgs,
        beta: &ScalarArg,
        c: &DnMatArgs,
        compute: i32,
    ) -> Result<(), SparseError> {
        self.prepare(&[alpha, beta])?;
        let api = self.api.clone();
        let (ma, mb, mc) = (api.sp_mat(a)?, api.dn_mat(b)?, api.dn_mat(c)?);
        let (al, be) = (scalar_ptr(alpha), scalar_ptr(beta));
        let mut size = 0usize;
        // SAFETY: as in `spmv`.
        let status = unsafe {
            (api.spmm_buffer_size)(
                self.raw,
                op_a,
                op_b,
                al,
                ma.raw,
                mb.raw,
                be,
                mc.raw,
                compute,
                ALG_DEFAULT,
                &mut size,
            )
        };
        check(status, "cusparseSpMM_bufferSize")?;
        let buffer = self.buffer.at_least(size as u64)?;
        // SAFETY: as in `spmv`.
        let status = unsafe {
            (api.spmm)(
                self.raw,
                op_a,
                op_b,
                al,
                ma.raw,
                mb.raw,
                be,
                mc.raw,
                compute,
                ALG_DEFAULT,
                buffer as Out,
            )
        };
        self.finish(status, "cusparseSpMM")
    }

    /// Work estimation and compute of `alpha A B` into `c`, whose arrays
    /// may still be unset (NULL): answers C's nnz with the SpGEMM
    /// descriptor, which holds the product until `cusparseSpGEMM_copy`.
    fn spgemm_product<'a>(
        &mut self,
        api: &'a SparseApi,
        (alpha, beta): (&ScalarArg, &ScalarArg),
        mats: [&Descriptor<'a>; 3],
        compute: i32,
    ) -> Result<(Descriptor<'a>, i64), SparseError> {
        let [ma, mb, mc] = mats;
        let descr = api.operation_descr(
            api.spgemm_create_descr,
            api.spgemm_destroy_descr,
            ("cusparseSpGEMM_createDescr", "cusparseSpGEMM_destroyDescr"),
        )?;
        let (al, be) = (scalar_ptr(alpha), scalar_ptr(beta));
        let n = NON_TRANSPOSE;
        for phase in 0..2 {
            let (f, call, workspace) = if phase == 0 {
                (
                    api.spgemm_work_estimation,
                    "cusparseSpGEMM_workEstimation",
                    &mut self.buffer,
                )
            } else {
                (
                    api.spgemm_compute,
                    "cusparseSpGEMM_compute",
                    &mut self.spgemm_buffer,
                )
            };
            let mut size = 0usize;
            // SAFETY: live handle and descriptors; scalars as in `spmv`;
            // a NULL buffer asks for its size only.
            let status = unsafe {
                f(
                    self.raw,
                    n,
                    n,
                    al,
                    ma.raw,
                    mb.raw,
                    be,
                    mc.raw,
                    compute,
                    ALG_DEFAULT,
                    descr.raw,
                    &mut size,
                    std::ptr::null_mut(),
                )
            };
            check(status, call)?;
            let buffer = workspace.at_least(size as u64)?;
            // SAFETY: as above, with a buffer of `size` bytes of our own,
            // which stays allocated until the product is copied (the
            // other phase uses the other buffer).
            let status = unsafe {
                f(
                    self.raw,
                    n,
                    n,
                    al,
                    ma.raw,
                    mb.raw,
                    be,
                    mc.raw,
                    compute,
                    ALG_DEFAULT,
                    descr.raw,
                    &mut size,
                    buffer as Out,
                )
            };
            check(status, call)?;
        }
        self.ctx.sync_stream()?;
        let nnz = api.nnz(mc)?;
        Ok((descr, nnz))
    }

    /// A zero scalar matching `alpha`'s pointer mode (SpGEMM's beta),
    /// and the address of `extra` bytes of scratch memory after the
    /// device-side zero.
    fn zero_beta(
        &mut self,
        alpha: &ScalarArg,
        extra: u64,
    ) -> Result<(ScalarArg, u64), SparseError> {
        let len = extra
            .checked_add(16)
            .ok_or_else(|| SparseError::Arguments(format!("{extra} bytes of scratch memory")))?;
        let ptr = self.scratch.at_least(len)?;
        crate::Context {
            inner: self.ctx.clone(),
        }
        .memset(ptr, 0, 16)?;
        Ok((zero_like(alpha, ptr), ptr + 16))
    }

    /// The nnz of `A B` (`cusparseSpGEMM_workEstimation` and `_compute`,
    /// in `compute`'s type with alpha 1). The product goes with the call:
    /// the wire's copy call recomputes it with its own alpha.
    pub fn spgemm_nnz(
        &mut self,
        a: &SpMatArgs,
        b: &SpMatArgs,
        one: &ScalarArg,
        compute: i32,
    ) -> Result<i64, SparseError> {
        self.prepare(&[one])?;
        // C's offsets land in scratch memory of ours: the client gave none
        // (it sized nothing yet).
        let offsets_len = u64::try_from(a.rows)
            .ok()
            .and_then(|r| r.checked_add(1))
            .and_then(|r| r.checked_mul(8))
            .ok_or_else(|| SparseError::Arguments(format!("{} rows", a.rows)))?;
        let (beta, offsets) = self.zero_beta(one, offsets_len)?;
        let c = SpMatArgs {
            format: Format::Csr,
            rows: a.rows,
            cols: b.cols,
            nnz: 0,
            offsets,
            indices: 0,
            values: 0,
            offset_type: a.offset_type,
            index_type: a.index_type,
            base: a.base,
            value_type: a.value_type,
            triangle: None,
        };
        let api = self.api.clone();
        let (ma, mb, mc) = (api.sp_mat(a)?, api.sp_mat(b)?, api.sp_mat(&c)?);
        let (_descr, nnz) = self.spgemm_product(&api, (one, &beta), [&ma, &mb, &mc], compute)?;
        Ok(nnz)
    }

    /// `C = alpha A B` (`cusparseSpGEMM_workEstimation`, `_compute`,
    /// `_copy`) into `c`'s arrays, which the caller checked for `c.nnz`
    /// entries: a product of another size is refused before the copy.
    pub fn spgemm_copy(
        &mut self,
        alpha: &ScalarArg,
        a: &SpMatArgs,
        b: &SpMatArgs,
        c: &SpMatArgs,
        compute: i32,
    ) -> Result<(), SparseError> {
        self.prepare(&[alpha])?;
        let (beta, _) = self.zero_beta(alpha, 0)?;
        let api = self.api.clone();
        let empty = SpMatArgs {
            nnz: 0,
            indices: 0,
            values: 0,
            ..*c
        };
        let (ma, mb, mc) = (api.sp_mat(a)?, api.sp_mat(b)?, api.sp_mat(&empty)?);
        let (descr, nnz) = self.spgemm_product(&api, (alpha, &beta), [&ma, &mb, &mc], compute)?;
        if nnz != c.nnz {
            return Err(SparseError::Arguments(format!(
                "the product has {nnz} entries, C is described with {}",
                c.nnz
            )));
        }
        // SAFETY: a live CSR descriptor; C's arrays were checked for
        // `c.nnz` entries (its offsets for rows + 1).
        let status = unsafe {
            (api.csr_set_pointers)(mc.raw, c.offsets as Out, c.indices as Out, c.values as Out)
        };
        check(status, "cusparseCsrSetPointers")?;
        let (al, be) = (scalar_ptr(alpha), scalar_ptr(&beta));
        let n = NON_TRANSPOSE;
        // SAFETY: live handle and descriptors, the SpGEMM descriptor that
        // computed the product with its buffers still held; scalars as in
        // `spmv`.
        let status = unsafe {
            (api.spgemm_copy)(
                self.raw,
                n,
                n,
                al,
                ma.raw,
                mb.raw,
                be,
                mc.raw,
                compute,
                ALG_DEFAULT,
                descr.raw,
            )
        };
        self.finish(status, "cusparseSpGEMM_copy")
    }

    /// Solves `op(A) y = alpha x` (`cusparseSpSV_bufferSize`, `_analysis`,
    /// `_solve`); `a.triangle` says which triangle and diagonal.
    #[allow(clippy::too_many_arguments)]
    pub fn spsv(
        &mut self,
        op: i32,
        alpha: &ScalarArg,
        a: &SpMatArgs,
        x: &DnVecArgs,
        y: &DnVecArgs,
        compute: i32,
    ) -> Result<(), SparseError> {
        self.prepare(&[alpha])?;
        let api = self.api.clone();
        let (ma, vx, vy) = (api.sp_mat(a)?, api.dn_vec(x)?, api.dn_vec(y)?);
        let descr = api.operation_descr(
            api.spsv_create_descr,
            api.spsv_destroy_descr,
            ("cusparseSpSV_createDescr", "cusparseSpSV_destroyDescr"),
        )?;
        let al = scalar_ptr(alpha);
        let mut size = 0usize;
        // SAFETY: as in `spmv`.
        let status = unsafe {
            (api.spsv_buffer_size)(
                self.raw,
                op,
                al,
                ma.raw,
                vx.raw,
                vy.raw,
                compute,
                ALG_DEFAULT,
                descr.raw,
                &mut size,
            )
        };
        check(status, "cusparseSpSV_bufferSize")?;
        let buffer = self.buffer.at_least(size as u64)?;
        // SAFETY: as in `spmv`; the buffer stays ours through the solve.
        let status = unsafe {
            (api.spsv_analysis)(
                self.raw,
                op,
                al,
                ma.raw,
                vx.raw,
                vy.raw,
                compute,
                ALG_DEFAULT,
                descr.raw,
                buffer as Out,
            )
        };
        check(status, "cusparseSpSV_analysis")?;
        // SAFETY: as above, after the analysis of the same operands.
        let status = unsafe {
            (api.spsv_solve)(
                self.raw,
                op,
                al,
                ma.raw,
                vx.raw,
                vy.raw,
                compute,
                ALG_DEFAULT,
                descr.raw,
            )
        };
        self.finish(status, "cusparseSpSV_solve")
    }

    /// `cusparseCsr2cscEx2` (with its buffer size).
    pub fn csr2csc(&mut self, t: &Csr2CscArgs) -> Result<(), SparseError> {
        self.prepare(&[])?;
        let action = if t.copy_values {
            ACTION_NUMERIC
        } else {
            ACTION_SYMBOLIC
        };
        let (cv, co, cc) = (
            t.csr_values as In,
            t.csr_offsets as *const c_int,
            t.csr_columns as *const c_int,
        );
        let (sv, so, sr) = (
            t.csc_values as Out,
            t.csc_offsets as *mut c_int,
            t.csc_rows as *mut c_int,
        );
        let mut size = 0usize;
        // SAFETY: a live handle; device arrays the caller checked; a valid
        // out-pointer.
        let status = unsafe {
            (self.api.csr2csc_buffer_size)(
                self.raw,
                t.m,
                t.n,
                t.nnz,
                cv,
                co,
                cc,
                sv,
                so,
                sr,
                t.value_type,
                action,
                t.base,
                CSR2CSC_ALG1,
                &mut size,
            )
        };
        check(status, "cusparseCsr2cscEx2_bufferSize")?;
        let buffer = self.buffer.at_least(size as u64)?;
        // SAFETY: as above, with `size` bytes of our own.
        let status = unsafe {
            (self.api.csr2csc)(
                self.raw,
                t.m,
                t.n,
                t.nnz,
                cv,
                co,
                cc,
                sv,
                so,
                sr,
                t.value_type,
                action,
                t.base,
                CSR2CSC_ALG1,
                buffer as Out,
            )
        };
        self.finish(status, "cusparseCsr2cscEx2")
    }

    /// `cusparseXcoo2csr` (`to_csr`) or `cusparseXcsr2coo`: from the `nnz`
    /// or `m + 1` indices at `src` to those at `dst`.
    pub fn compress(
        &mut self,
        to_csr: bool,
        [src, dst]: [u64; 2],
        nnz: i32,
        m: i32,
        base: i32,
    ) -> Result<(), SparseError> {
        self.prepare(&[])?;
        let (f, call) = if to_csr {
            (self.api.coo2csr, "cusparseXcoo2csr")
        } else {
            (self.api.csr2coo, "cusparseXcsr2coo")
        };
        // SAFETY: a live handle; device arrays the caller checked.
        let status = unsafe {
            f(
                self.raw,
                src as *const c_int,
                nnz,
                m,
                dst as *mut c_int,
                base,
            )
        };
        self.finish(status, call)
    }

    /// `cusparseCreateIdentityPermutation`: `p[0..n] = 0..n`.
    pub fn identity_permutation(&mut self, n: i32, p: u64) -> Result<(), SparseError> {
        self.prepare(&[])?;
        let call = "cusparseCreateIdentityPermutation";
        let api = self.api.clone();
        let Some(l) = api.legacy.as_ref() else {
            return Err(missing(call));
        };
        // SAFETY: a live handle; `p` holds `n` ints, checked by the caller.
        let status = unsafe { (l.identity_permutation)(self.raw, n, p as *mut c_int) };
        self.finish(status, call)
    }

    /// The permutation a sort carries along: the client's `p`, or (for 0,
    /// none) `nnz` ints of the server's own set to the identity, since
    /// cuSPARSE's sorts always permute one.
    fn sort_permutation(&mut self, l: &LegacyApi, nnz: i32, p: u64) -> Result<u64, SparseError> {
        if p != 0 {
            return Ok(p);
        }
        let bytes = u64::try_from(nnz).unwrap_or(0) * 4;
        let own = self.scratch.at_least(bytes.max(4))?;
        // SAFETY: a live handle; `own` holds at least `nnz` ints.
        let status = unsafe { (l.identity_permutation)(self.raw, nnz, own as *mut c_int) };
        check(status, "cusparseCreateIdentityPermutation")?;
        Ok(own)
    }

    /// `cusparseXcoosortByRow` (`by_row`) or `ByColumn`, with the buffer
    /// `cusparseXcoosort_bufferSizeExt` asks for.
    #[allow(clippy::too_many_arguments)]
    pub fn coo_sort(
        &mut self,
        by_row: bool,
        m: i32,
        n: i32,
        nnz: i32,
        rows: u64,
        cols: u64,
        p: u64,
    ) -> Result<(), SparseError> {
        self.prepare(&[])?;
        let call = if by_row {
            "cusparseXcoosortByRow"
        } else {
            "cusparseXcoosortByColumn"
        };
        let api = self.api.clone();
        let Some(l) = api.legacy.as_ref() else {
            return Err(missing(call));
        };
        let (r, c) = (rows as *mut c_int, cols as *mut c_int);
        let mut size = 0usize;
        // SAFETY: a live handle; device arrays the caller checked; a valid
        // out-pointer.
        let status = unsafe { (l.coosort_buffer_size)(self.raw, m, n, nnz, r, c, &mut size) };
        check(status, "cusparseXcoosort_bufferSizeExt")?;
        let buffer = self.buffer.at_least(size as u64)?;
        let p = self.sort_permutation(l, nnz, p)?;
        let sort = if by_row {
            l.coosort_by_row
        } else {
            l.coosort_by_column
        };
        // SAFETY: as above, with `size` bytes of our own and `p` of `nnz`
        // ints (the client's, checked, or ours).
        let status = unsafe { sort(self.raw, m, n, nnz, r, c, p as *mut c_int, buffer as Out) };
        self.finish(status, call)
    }

    /// `cusparseXcsrsort` of `major` rows of `minor` columns: also a CSC
    /// matrix's sort (`cusparseXcscsort` is the same sort with the
    /// dimensions swapped), with the buffer its `_bufferSizeExt` asks for.
    #[allow(clippy::too_many_arguments)]
    pub fn compressed_sort(
        &mut self,
        major: i32,
        minor: i32,
        nnz: i32,
        base: i32,
        offsets: u64,
        indices: u64,
        p: u64,
    ) -> Result<(), SparseError> {
        self.prepare(&[])?;
        let call = "cusparseXcsrsort";
        let api = self.api.clone();
        let Some(l) = api.legacy.as_ref() else {
            return Err(missing(call));
        };
        let mut raw: Descr = std::ptr::null_mut();
        // SAFETY: a valid out-pointer.
        let status = unsafe { (l.create_mat_descr)(&mut raw) };
        let descr = made(
            &api,
            raw,
            status,
            "cusparseCreateMatDescr",
            l.destroy_mat_descr,
            "cusparseDestroyMatDescr",
        )?;
        // SAFETY: a live descriptor; `base` is 0 or 1 (checked).
        let status = unsafe { (l.set_mat_index_base)(descr.raw, base) };
        check(status, "cusparseSetMatIndexBase")?;
        let (o, i) = (offsets as *const c_int, indices as *mut c_int);
        let mut size = 0usize;
        // SAFETY: a live handle; device arrays the caller checked; a valid
        // out-pointer.
        let status =
            unsafe { (l.csrsort_buffer_size)(self.raw, major, minor, nnz, o, i, &mut size) };
        check(status, "cusparseXcsrsort_bufferSizeExt")?;
        let buffer = self.buffer.at_least(size as u64)?;
        let p = self.sort_permutation(l, nnz, p)?;
        // SAFETY: as above, with `size` bytes of our own and `p` of `nnz`
        // ints.
        let status = unsafe {
            (l.csrsort)(
                self.raw,
                major,
                minor,
                nnz,
                descr.raw,
                o,
                i,
                p as *mut c_int,
                buffer as Out,
            )
        };
        self.finish(status, call)
    }

    /// `cusparseGather` (`x.values[k] = y[x.indices[k]]`) or, with
    /// `scatter`, `cusparseScatter` (`y[x.indices[k]] = x.values[k]`).
    pub fn gather_scatter(
        &mut self,
        scatter: bool,
        x: &SpVecArgs,
        y: &DnVecArgs,
    ) -> Result<(), SparseError> {
        self.prepare(&[])?;
        let call = if scatter {
            "cusparseScatter"
        } else {
            "cusparseGather"
        };
        let api = self.api.clone();
        let Some(l) = api.legacy.as_ref() else {
            return Err(missing(call));
        };
        let mut raw: Descr = std::ptr::null_mut();
        // SAFETY: a valid out-pointer; the arrays are device addresses the
        // caller checked, only recorded here.
        let status = unsafe {
            (l.create_sp_vec)(
                &mut raw,
                x.size,
                x.nnz,
                x.indices as Out,
                x.values as Out,
                x.index_type,
                x.base,
                x.value_type,
            )
        };
        let vx = made(
            &api,
            raw,
            status,
            "cusparseCreateSpVec",
            l.destroy_sp_vec,
            "cusparseDestroySpVec",
        )?;
        let vy = api.dn_vec(y)?;
        // SAFETY: a live handle and descriptors over checked arrays.
        let status = unsafe {
            if scatter {
                (l.scatter)(self.raw, vx.raw, vy.raw)
            } else {
                (l.gather)(self.raw, vy.raw, vx.raw)
            }
        };
        self.finish(status, call)
    }

    /// `cusparseSparseToDense` (with its buffer size).
    pub fn sparse_to_dense(&mut self, a: &SpMatArgs, b: &DnMatArgs) -> Result<(), SparseError> {
        self.prepare(&[])?;
        let api = self.api.clone();
        let (ma, mb) = (api.sp_mat(a)?, api.dn_mat(b)?);
        let mut size = 0usize;
        // SAFETY: live handle and descriptors; a valid out-pointer.
        let status = unsafe {
            (api.sparse_to_dense_buffer_size)(self.raw, ma.raw, mb.raw, ALG_DEFAULT, &mut size)
        };
        check(status, "cusparseSparseToDense_bufferSize")?;
        let buffer = self.buffer.at_least(size as u64)?;
        // SAFETY: as above, with `size` bytes of our own.
        let status =
            unsafe { (api.sparse_to_dense)(self.raw, ma.raw, mb.raw, ALG_DEFAULT, buffer as Out) };
        self.finish(status, "cusparseSparseToDense")
    }

    /// `cusparseDenseToSparse_analysis` of dense `a` into `b`: writes B's
    /// offsets (CSR, CSC) and answers the nnz found, after which, with
    /// `convert`, `cusparseDenseToSparse_convert` fills B's arrays if `b`
    /// is described with that nnz.
    pub fn dense_to_sparse(
        &mut self,
        a: &DnMatArgs,
        b: &SpMatArgs,
        convert: bool,
    ) -> Result<i64, SparseError> {
        self.prepare(&[])?;
        let api = self.api.clone();
        let (ma, mb) = (api.dn_mat(a)?, api.sp_mat(b)?);
        let mut size = 0usize;
        // SAFETY: live handle and descriptors; a valid out-pointer.
        let status = unsafe {
            (api.dense_to_sparse_buffer_size)(self.raw, ma.raw, mb.raw, ALG_DEFAULT, &mut size)
        };
        check(status, "cusparseDenseToSparse_bufferSize")?;
        let buffer = self.buffer.at_least(size as u64)? as Out;
        // SAFETY: as above, with `size` bytes of our own, kept through the
        // conversion.
        let status = unsafe {
            (api.dense_to_sparse_analysis)(self.raw, ma.raw, mb.raw, ALG_DEFAULT, buffer)
        };
        self.finish(status, "cusparseDenseToSparse_analysis")?;
        let nnz = api.nnz(&mb)?;
        if !convert {
            return Ok(nnz);
        }
        if nnz != b.nnz {
            return Err(SparseError::Arguments(format!(
                "the dense matrix has {nnz} nonzeros, B is described with {}",
                b.nnz
            )));
        }
        // SAFETY: as above; B's arrays were checked for `b.nnz` entries,
        // the number the analysis found.
        let status =
            unsafe { (api.dense_to_sparse_convert)(self.raw, ma.raw, mb.raw, ALG_DEFAULT, buffer) };
        self.finish(status, "cusparseDenseToSparse_convert")?;
        Ok(nnz)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_cusparse_is_an_error_value_naming_the_first_candidate() {
        let e = Sparse::load_from(&["/nonexistent/libcusparse.so.12"]).unwrap_err();
        assert!(
            e.to_string().contains("/nonexistent/libcusparse.so.12"),
            "{e}"
        );
    }

    #[test]
    fn one_pointer_mode_per_call() {
        let h = ScalarArg::Host(HostScalar::default());
        let d = ScalarArg::Device(0x1000);
        assert_eq!(pointer_mode(&[&h, &h]), Ok(POINTER_MODE_HOST));
        assert_eq!(pointer_mode(&[&d, &d]), Ok(POINTER_MODE_DEVICE));
        assert_eq!(pointer_mode(&[]), Ok(POINTER_MODE_HOST));
        let mixed = pointer_mode(&[&h, &d]).unwrap_err();
        assert_eq!(mixed.status(), Some(STATUS_INVALID_VALUE));
    }
}
