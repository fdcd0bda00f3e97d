//! NVIDIA's cuSOLVER (dense), loaded at run time, for the `cuda` backend's
//! math calls.
//!
//! As for cuBLAS ([`crate::cublas`]), every entry point is resolved once when
//! the library is opened ([`Solver::load_from`]), and device addresses are
//! plain numbers: the backend checks every range a call touches against the
//! client's allocations before it calls [`SolverHandle::run`]. A handle is
//! made in one client context, bound to its stream, and destroyed with that
//! context current when dropped.
//!
//! The legacy `cusolverDn<t>` API wants a device workspace of the size its
//! `_bufferSize` companion answers. The application's workspace stays on the
//! client (rcud's wire protocol does not carry it), so each handle keeps a
//! [`Workspace`] of the server's own, grown to the largest size asked.

mod batched;
mod irs;
mod jacobi;

pub use batched::Batched;
pub use irs::Irs;
pub use jacobi::{Jacobi, JacobiSettings};

use std::ffi::{c_int, c_schar, c_void};
use std::fmt;
use std::sync::Arc;

use crate::math_library::loaded_library;
use crate::workspace::Workspace;
use crate::{optional, symbol, CtxInner, DriverError, LoadError};
use cudarc::driver::sys::CUstream;

/// The file names NVIDIA's cuSOLVER is installed under, newest first
/// (CUDA 13 and CUDA 12 both ship `libcusolver.so.12`; CUDA 11 `.11`).
pub const LIBRARIES: [&str; 2] = ["libcusolver.so.12", "libcusolver.so.11"];

type Handle = *mut c_void;
type Status = c_int;
/// A device pointer to data of the call's element type (`float *`,
/// `double *`, `cuComplex *`, `cuDoubleComplex *`: one ABI).
type Data = *mut c_void;
type Int = c_int;
type IntPtr = *mut c_int;

type GetrfSize = unsafe extern "C" fn(Handle, Int, Int, Data, Int, IntPtr) -> Status;
type Getrf = unsafe extern "C" fn(Handle, Int, Int, Data, Int, Data, IntPtr, IntPtr) -> Status;
type Getrs =
    unsafe extern "C" fn(Handle, Int, Int, Int, Data, Int, IntPtr, Data, Int, IntPtr) -> Status;
type PotrfSize = unsafe extern "C" fn(Handle, Int, Int, Data, Int, IntPtr) -> Status;
type Potrf = unsafe extern "C" fn(Handle, Int, Int, Data, Int, Data, Int, IntPtr) -> Status;
type Potrs = unsafe extern "C" fn(Handle, Int, Int, Int, Data, Int, Data, Int, IntPtr) -> Status;
type GeqrfSize = unsafe extern "C" fn(Handle, Int, Int, Data, Int, IntPtr) -> Status;
type Geqrf = unsafe extern "C" fn(Handle, Int, Int, Data, Int, Data, Data, Int, IntPtr) -> Status;
type OrmqrSize = unsafe extern "C" fn(
    Handle,
    Int,
    Int,
    Int,
    Int,
    Int,
    Data,
    Int,
    Data,
    Data,
    Int,
    IntPtr,
) -> Status;
type Ormqr = unsafe extern "C" fn(
    Handle,
    Int,
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
) -> Status;
type OrgqrSize = unsafe extern "C" fn(Handle, Int, Int, Int, Data, Int, Data, IntPtr) -> Status;
type Orgqr =
    unsafe extern "C" fn(Handle, Int, Int, Int, Data, Int, Data, Data, Int, IntPtr) -> Status;
type SyevdSize = unsafe extern "C" fn(Handle, Int, Int, Int, Data, Int, Data, IntPtr) -> Status;
type Syevd =
    unsafe extern "C" fn(Handle, Int, Int, Int, Data, Int, Data, Data, Int, IntPtr) -> Status;
type GesvdSize = unsafe extern "C" fn(Handle, Int, Int, IntPtr) -> Status;
type Gesvd = unsafe extern "C" fn(
    Handle,
    c_schar,
    c_schar,
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
    Data,
    IntPtr,
) -> Status;

/// `cusolverDnXgeev_bufferSize`: sizes in bytes on the device and the host.
type GeevSize = unsafe extern "C" fn(
    Handle,
    Params,
    Int,
    Int,
    i64,
    DataType,
    Data,
    i64,
    DataType,
    Data,
    DataType,
    Data,
    i64,
    DataType,
    Data,
    i64,
    DataType,
    *mut usize,
    *mut usize,
) -> Status;
type Geev = unsafe extern "C" fn(
    Handle,
    Params,
    Int,
    Int,
    i64,
    DataType,
    Data,
    i64,
    DataType,
    Data,
    DataType,
    Data,
    i64,
    DataType,
    Data,
    i64,
    DataType,
    Data,
    usize,
    *mut c_void,
    usize,
    IntPtr,
) -> Status;
/// `cusolverDnParams_t`.
type Params = *mut c_void;
/// `cudaDataType`.
type DataType = c_int;

/// The 64-bit generic API's general eigensolver, which only cuSOLVER 11.7
/// (CUDA 12.6) and newer have: resolved when present, so that an older
/// library still serves every other routine.
struct GeevApi {
    create_params: unsafe extern "C" fn(*mut Params) -> Status,
    destroy_params: unsafe extern "C" fn(Params) -> Status,
    size: GeevSize,
    geev: Geev,
}

/// The cuSOLVER entry points the backend uses, with the prototypes of
/// `cusolverDn.h` (data pointers as `void *`, enums as `int`), each
/// routine's four forms indexed by [`Precision`] (S, D, C, Z).
struct SolverApi {
    create: unsafe extern "C" fn(*mut Handle) -> Status,
    destroy: unsafe extern "C" fn(Handle) -> Status,
    set_stream: unsafe extern "C" fn(Handle, CUstream) -> Status,
    getrf_size: [GetrfSize; 4],
    getrf: [Getrf; 4],
    getrs: [Getrs; 4],
    potrf_size: [PotrfSize; 4],
    potrf: [Potrf; 4],
    potrs: [Potrs; 4],
    geqrf_size: [GeqrfSize; 4],
    geqrf: [Geqrf; 4],
    /// `?ormqr` for S and D, `?unmqr` for C and Z.
    ormqr_size: [OrmqrSize; 4],
    ormqr: [Ormqr; 4],
    /// `?orgqr` for S and D, `?ungqr` for C and Z.
    orgqr_size: [OrgqrSize; 4],
    orgqr: [Orgqr; 4],
    /// `?syevd` for S and D, `?heevd` for C and Z.
    syevd_size: [SyevdSize; 4],
    syevd: [Syevd; 4],
    gesvd_size: [GesvdSize; 4],
    gesvd: [Gesvd; 4],
    /// `cusolverDnXgeev`, None where the library predates it.
    geev: Option<GeevApi>,
    /// The iterative-refinement solvers, each where the library has it.
    irs: irs::IrsApi,
    /// The Jacobi solvers and gesvda, each where the library has it.
    jacobi: jacobi::JacobiApi,
    /// The batched Cholesky, where the library has it.
    batched: batched::BatchedApi,
    /// Keeps the code behind the pointers mapped; dropped last.
    _library: libloading::Library,
}

/// The four forms of one routine, `cusolverDn` + S/D/C/Z + the names given.
macro_rules! forms {
    ($lib:expr, $real:literal, $complex:literal) => {
        [
            symbol($lib, concat!("cusolverDnS", $real))?,
            symbol($lib, concat!("cusolverDnD", $real))?,
            symbol($lib, concat!("cusolverDnC", $complex))?,
            symbol($lib, concat!("cusolverDnZ", $complex))?,
        ]
    };
    ($lib:expr, $name:literal) => {
        forms!($lib, $name, $name)
    };
}

impl SolverApi {
    fn resolve(library: libloading::Library) -> Result<Self, LoadError> {
        let lib = &library;
        // SAFETY: every field's type is the prototype in cusolverDn.h of the
        // entry points it is resolved from (`cusolverDnHandle_t` and data
        // pointers as `void *`, the cuBLAS and cuSOLVER enums as `int`, the
        // LAPACK job characters as `signed char`); the pointers are stored
        // next to `library`, which outlives them.
        unsafe {
            Ok(Self {
                create: symbol(lib, "cusolverDnCreate")?,
                destroy: symbol(lib, "cusolverDnDestroy")?,
                set_stream: symbol(lib, "cusolverDnSetStream")?,
                getrf_size: forms!(lib, "getrf_bufferSize"),
                getrf: forms!(lib, "getrf"),
                getrs: forms!(lib, "getrs"),
                potrf_size: forms!(lib, "potrf_bufferSize"),
                potrf: forms!(lib, "potrf"),
                potrs: forms!(lib, "potrs"),
                geqrf_size: forms!(lib, "geqrf_bufferSize"),
                geqrf: forms!(lib, "geqrf"),
                ormqr_size: forms!(lib, "ormqr_bufferSize", "unmqr_bufferSize"),
                ormqr: forms!(lib, "ormqr", "unmqr"),
                orgqr_size: forms!(lib, "orgqr_bufferSize", "ungqr_bufferSize"),
                orgqr: forms!(lib, "orgqr", "ungqr"),
                syevd_size: forms!(lib, "syevd_bufferSize", "heevd_bufferSize"),
                syevd: forms!(lib, "syevd", "heevd"),
                gesvd_size: forms!(lib, "gesvd_bufferSize"),
                gesvd: forms!(lib, "gesvd"),
                geev: (|| {
                    Some(GeevApi {
                        create_params: optional(lib, "cusolverDnCreateParams")?,
                        destroy_params: optional(lib, "cusolverDnDestroyParams")?,
                        size: optional(lib, "cusolverDnXgeev_bufferSize")?,
                        geev: optional(lib, "cusolverDnXgeev")?,
                    })
                })(),
                irs: irs::IrsApi::resolve(lib),
                jacobi: jacobi::JacobiApi::resolve(lib),
                batched: batched::BatchedApi::resolve(lib),
                _library: library,
            })
        }
    }
}

loaded_library! {
    /// NVIDIA's cuSOLVER, opened once and shared by every client.
    Solver(SolverApi), "cuSOLVER", "cuSOLVER 11"
}

/// A cuSOLVER call failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SolverError {
    /// Making the context current, the workspace or waiting failed.
    #[error(transparent)]
    Driver(#[from] DriverError),
    /// cuSOLVER answered this `cusolverStatus_t`.
    #[error("{call} failed: cusolverStatus_t {status}")]
    Status {
        /// The entry point.
        call: &'static str,
        /// Its result.
        status: i32,
    },
    /// The library lacks the entry point (it predates it).
    #[error("{call} is not in this cuSOLVER (it is newer)")]
    Missing {
        /// The entry point.
        call: &'static str,
    },
    /// `_bufferSize` answered a size no workspace can have.
    #[error("{call} answered a workspace of {lwork} elements")]
    Workspace {
        /// The entry point.
        call: &'static str,
        /// What it answered.
        lwork: i32,
    },
}

/// The element type of a call: which of a routine's four forms runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Precision {
    /// `float`.
    S,
    /// `double`.
    D,
    /// `cuComplex`.
    C,
    /// `cuDoubleComplex`.
    Z,
}

impl Precision {
    /// The element type of rcud's wire (`dtype` 0 to 3).
    pub fn from_dtype(dtype: u8) -> Option<Self> {
        Some(match dtype {
            0 => Self::S,
            1 => Self::D,
            2 => Self::C,
            3 => Self::Z,
            _ => return None,
        })
    }

    fn index(self) -> usize {
        self as usize
    }

    /// `cudaDataType` of an element (`CUDA_R_32F`, `CUDA_R_64F`,
    /// `CUDA_C_32F`, `CUDA_C_64F`).
    fn data_type(self) -> DataType {
        match self {
            Self::S => 0,
            Self::D => 1,
            Self::C => 4,
            Self::Z => 5,
        }
    }

    /// `cudaDataType` of the complex numbers of this precision.
    fn complex_type(self) -> DataType {
        match self {
            Self::S | Self::C => 4,
            Self::D | Self::Z => 5,
        }
    }

    /// Bytes of one element.
    fn element(self) -> u64 {
        match self {
            Self::S => 4,
            Self::D | Self::C => 8,
            Self::Z => 16,
        }
    }

    /// Bytes of one real value (singular values, `rwork`).
    fn real(self) -> u64 {
        match self {
            Self::S | Self::C => 4,
            Self::D | Self::Z => 8,
        }
    }
}

/// One dense routine with its arguments as `cusolverDn.h` names them
/// (enums with their C values, device addresses as numbers; `ipiv` 0 is
/// NULL). The workspace is the handle's own.
#[allow(missing_docs)] // named as in the cuSOLVER documentation
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dense {
    Getrf {
        m: i32,
        n: i32,
        a: u64,
        lda: i32,
        ipiv: u64,
        info: u64,
    },
    Getrs {
        trans: i32,
        n: i32,
        nrhs: i32,
        a: u64,
        lda: i32,
        ipiv: u64,
        b: u64,
        ldb: i32,
        info: u64,
    },
    Potrf {
        uplo: i32,
        n: i32,
        a: u64,
        lda: i32,
        info: u64,
    },
    Potrs {
        uplo: i32,
        n: i32,
        nrhs: i32,
        a: u64,
        lda: i32,
        b: u64,
        ldb: i32,
        info: u64,
    },
    Geqrf {
        m: i32,
        n: i32,
        a: u64,
        lda: i32,
        tau: u64,
        info: u64,
    },
    /// `?ormqr` / `?unmqr`.
    Ormqr {
        side: i32,
        trans: i32,
        m: i32,
        n: i32,
        k: i32,
        a: u64,
        lda: i32,
        tau: u64,
        c: u64,
        ldc: i32,
        info: u64,
    },
    /// `?orgqr` / `?ungqr`.
    Orgqr {
        m: i32,
        n: i32,
        k: i32,
        a: u64,
        lda: i32,
        tau: u64,
        info: u64,
    },
    /// `?syevd` / `?heevd`.
    Syevd {
        jobz: i32,
        uplo: i32,
        n: i32,
        a: u64,
        lda: i32,
        w: u64,
        info: u64,
    },
    /// `jobu`/`jobvt` are LAPACK's characters (`b'A'`, ...).
    Gesvd {
        jobu: u8,
        jobvt: u8,
        m: i32,
        n: i32,
        a: u64,
        lda: i32,
        s: u64,
        u: u64,
        ldu: i32,
        vt: u64,
        ldvt: i32,
        info: u64,
    },
    /// `cusolverDnXgeev` (64-bit API): `jobvl`/`jobvr` are
    /// `cusolverEigMode_t`; `W` is complex unless `w_real` (a real A's
    /// W of A's own type). A, VL and VR and the computation are in the
    /// call's precision.
    Geev {
        w_real: bool,
        jobvl: i32,
        jobvr: i32,
        n: i32,
        a: u64,
        lda: i32,
        w: u64,
        vl: u64,
        ldvl: i32,
        vr: u64,
        ldvr: i32,
        info: u64,
    },
}

/// A cuSOLVER handle made in a client's context, on its stream, with the
/// workspace its calls use; destroyed (with the context current) when
/// dropped, the workspace freed after it.
pub struct SolverHandle {
    api: Arc<SolverApi>,
    ctx: Arc<CtxInner>,
    raw: Handle,
    workspace: Workspace,
    /// `cusolverDnParams_t` for the 64-bit API, made on its first call.
    params: Params,
    /// Host workspace of the 64-bit API, grown to the largest size asked.
    host: Vec<u8>,
}

// SAFETY: cuSOLVER handles may be used from any thread, one call at a time;
// `&mut self` on every call and the context bound first make it so.
unsafe impl Send for SolverHandle {}

impl fmt::Debug for SolverHandle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SolverHandle")
            .field("workspace", &self.workspace)
            .finish_non_exhaustive()
    }
}

impl Drop for SolverHandle {
    fn drop(&mut self) {
        if let Err(e) = self.ctx.bind() {
            tracing::warn!("releasing a cuSOLVER handle: {e}");
        }
        if let (Some(geev), false) = (&self.api.geev, self.params.is_null()) {
            // SAFETY: `params` is live, made by this library, used by
            // nothing else after this.
            let status = unsafe { (geev.destroy_params)(self.params) };
            if status != 0 {
                tracing::warn!("cusolverDnDestroyParams failed: cusolverStatus_t {status}");
            }
        }
        // SAFETY: `raw` is a live handle, used by nothing else after this.
        let status = unsafe { (self.api.destroy)(self.raw) };
        if status != 0 {
            tracing::warn!("cusolverDnDestroy failed: cusolverStatus_t {status}");
        }
    }
}

fn check(status: Status, call: &'static str) -> Result<(), SolverError> {
    if status == 0 {
        Ok(())
    } else {
        Err(SolverError::Status { call, status })
    }
}

/// The offset of `rwork` after a workspace of `bytes`: cuSOLVER's buffers
/// want the alignment `cuMemAlloc` gives.
const RWORK_ALIGN: u64 = 256;

impl crate::Context {
    /// A new cuSOLVER handle in this context, on its stream
    /// (`cusolverDnCreate`, `cusolverDnSetStream`).
    pub fn solver_handle(&self, solver: &Solver) -> Result<SolverHandle, SolverError> {
        self.inner.bind()?;
        let mut raw: Handle = std::ptr::null_mut();
        // SAFETY: `raw` is a valid out-pointer; the context is current.
        check(unsafe { (solver.api.create)(&mut raw) }, "cusolverDnCreate")?;
        let handle = SolverHandle {
            api: solver.api.clone(),
            ctx: self.inner.clone(),
            raw,
            workspace: Workspace::new(self),
            params: std::ptr::null_mut(),
            host: Vec::new(),
        };
        // SAFETY: a live handle and this context's live stream.
        let status = unsafe { (solver.api.set_stream)(raw, self.inner.stream) };
        check(status, "cusolverDnSetStream")?;
        Ok(handle)
    }
}

fn ptr(address: u64) -> Data {
    address as Data
}

fn int_ptr(address: u64) -> IntPtr {
    address as IntPtr
}

impl SolverHandle {
    /// The bytes of the server's workspace this handle holds now.
    pub fn workspace_bytes(&self) -> u64 {
        self.workspace.len()
    }

    /// The workspace for `lwork` elements (as `_bufferSize` answered them)
    /// of `p`, and `extra` bytes after them at an aligned offset: (address
    /// of the elements, address of the extra bytes).
    fn work(
        &mut self,
        p: Precision,
        lwork: i32,
        extra: u64,
        call: &'static str,
    ) -> Result<(u64, u64), SolverError> {
        let bytes = u64::try_from(lwork)
            .ok()
            .and_then(|l| l.checked_mul(p.element()))
            .ok_or(SolverError::Workspace { call, lwork })?;
        let offset = bytes.div_ceil(RWORK_ALIGN) * RWORK_ALIGN;
        let base = self.workspace.at_least(offset + extra)?;
        Ok((base, if extra == 0 { 0 } else { base + offset }))
    }

    /// Runs `op` in precision `p` with a workspace of the server's own and
    /// waits for it, so that it is complete (and the workspace free again)
    /// when this returns. The caller checked every range `op` touches
    /// against the client's allocations.
    pub fn run(&mut self, p: Precision, op: Dense) -> Result<(), SolverError> {
        self.ctx.bind()?;
        let (api, h, i) = (self.api.clone(), self.raw, p.index());
        let mut lwork: c_int = 0;
        // Every unsafe block below is sound because: the prototypes match (see
        // `SolverApi::resolve`); `h` is a live handle on this context's
        // stream, which is current; the caller checked the ranges of every
        // client address against the client's allocations; the workspace is
        // at least as large as the matching `_bufferSize` answered, and
        // `lwork` a valid out-pointer.
        let (status, call) = match op {
            Dense::Getrf {
                m,
                n,
                a,
                lda,
                ipiv,
                info,
            } => {
                let size = "cusolverDn?getrf_bufferSize";
                // SAFETY: see the top of `run`.
                let status = unsafe { (api.getrf_size[i])(h, m, n, ptr(a), lda, &mut lwork) };
                check(status, size)?;
                let (work, _) = self.work(p, lwork, 0, size)?;
                // SAFETY: see the top of `run`.
                let status = unsafe {
                    (api.getrf[i])(
                        h,
                        m,
                        n,
                        ptr(a),
                        lda,
                        ptr(work),
                        int_ptr(ipiv),
                        int_ptr(info),
                    )
                };
                (status, "cusolverDn?getrf")
            }
            Dense::Getrs {
                trans,
                n,
                nrhs,
                a,
                lda,
                ipiv,
                b,
                ldb,
                info,
            } => {
                // SAFETY: see the top of `run`.
                let status = unsafe {
                    (api.getrs[i])(
                        h,
                        trans,
                        n,
                        nrhs,
                        ptr(a),
                        lda,
                        int_ptr(ipiv),
                        ptr(b),
                        ldb,
                        int_ptr(info),
                    )
                };
                (status, "cusolverDn?getrs")
            }
            Dense::Potrf {
                uplo,
                n,
                a,
                lda,
                info,
            } => {
                let size = "cusolverDn?potrf_bufferSize";
                // SAFETY: see the top of `run`.
                let status = unsafe { (api.potrf_size[i])(h, uplo, n, ptr(a), lda, &mut lwork) };
                check(status, size)?;
                let (work, _) = self.work(p, lwork, 0, size)?;
                // SAFETY: see the top of `run`.
                let status = unsafe {
                    (api.potrf[i])(h, uplo, n, ptr(a), lda, ptr(work), lwork, int_ptr(info))
                };
                (status, "cusolverDn?potrf")
            }
            Dense::Potrs {
                uplo,
                n,
                nrhs,
                a,
                lda,
                b,
                ldb,
                info,
            } => {
                // SAFETY: see the top of `run`.
                let status = unsafe {
                    (api.potrs[i])(h, uplo, n, nrhs, ptr(a), lda, ptr(b), ldb, int_ptr(info))
                };
                (status, "cusolverDn?potrs")
            }
            Dense::Geqrf {
                m,
                n,
                a,
                lda,
                tau,
                info,
            } => {
                let size = "cusolverDn?geqrf_bufferSize";
                // SAFETY: see the top of `run`.
                let status = unsafe { (api.geqrf_size[i])(h, m, n, ptr(a), lda, &mut lwork) };
                check(status, size)?;
                let (work, _) = self.work(p, lwork, 0, size)?;
                // SAFETY: see the top of `run`.
                let status = unsafe {
                    (api.geqrf[i])(
                        h,
                        m,
                        n,
                        ptr(a),
                        lda,
                        ptr(tau),
                        ptr(work),
                        lwork,
                        int_ptr(info),
                    )
                };
                (status, "cusolverDn?geqrf")
            }
            Dense::Ormqr {
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
            } => {
                let size = "cusolverDn?ormqr_bufferSize";
                // SAFETY: see the top of `run`.
                // SAFETY: see the top of `run`.
                let status = unsafe {
                    (api.ormqr_size[i])(
                        h,
                        side,
                        trans,
                        m,
                        n,
                        k,
                        ptr(a),
                        lda,
                        ptr(tau),
                        ptr(c),
                        ldc,
                        &mut lwork,
                    )
                };
                check(status, size)?;
                let (work, _) = self.work(p, lwork, 0, size)?;
                // SAFETY: see the top of `run`.
                let status = unsafe {
                    (api.ormqr[i])(
                        h,
                        side,
                        trans,
                        m,
                        n,
                        k,
                        ptr(a),
                        lda,
                        ptr(tau),
                        ptr(c),
                        ldc,
                        ptr(work),
                        lwork,
                        int_ptr(info),
                    )
                };
                (status, "cusolverDn?ormqr")
            }
            Dense::Orgqr {
                m,
                n,
                k,
                a,
                lda,
                tau,
                info,
            } => {
                let size = "cusolverDn?orgqr_bufferSize";
                // SAFETY: see the top of `run`.
                // SAFETY: see the top of `run`.
                let status =
                    unsafe { (api.orgqr_size[i])(h, m, n, k, ptr(a), lda, ptr(tau), &mut lwork) };
                check(status, size)?;
                let (work, _) = self.work(p, lwork, 0, size)?;
                // SAFETY: see the top of `run`.
                let status = unsafe {
                    (api.orgqr[i])(
                        h,
                        m,
                        n,
                        k,
                        ptr(a),
                        lda,
                        ptr(tau),
                        ptr(work),
                        lwork,
                        int_ptr(info),
                    )
                };
                (status, "cusolverDn?orgqr")
            }
            Dense::Syevd {
                jobz,
                uplo,
                n,
                a,
                lda,
                w,
                info,
            } => {
                let size = "cusolverDn?syevd_bufferSize";
                // SAFETY: see the top of `run`.
                // SAFETY: see the top of `run`.
                let status = unsafe {
                    (api.syevd_size[i])(h, jobz, uplo, n, ptr(a), lda, ptr(w), &mut lwork)
                };
                check(status, size)?;
                let (work, _) = self.work(p, lwork, 0, size)?;
                // SAFETY: see the top of `run`.
                let status = unsafe {
                    (api.syevd[i])(
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
                    )
                };
                (status, "cusolverDn?syevd")
            }
            Dense::Gesvd {
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
            } => {
                let size = "cusolverDn?gesvd_bufferSize";
                // SAFETY: see the top of `run`.
                let status = unsafe { (api.gesvd_size[i])(h, m, n, &mut lwork) };
                check(status, size)?;
                // `rwork`: min(m, n) - 1 reals, where cuSOLVER leaves the
                // unconverged superdiagonal when devInfo > 0.
                let rwork = u64::try_from(m.min(n).max(1) - 1).unwrap_or(0) * p.real();
                let (work, rwork) = self.work(p, lwork, rwork, size)?;
                let job = |c: u8| c_schar::from_ne_bytes([c]);
                // SAFETY: see the top of `run`.
                let status = unsafe {
                    (api.gesvd[i])(
                        h,
                        job(jobu),
                        job(jobvt),
                        m,
                        n,
                        ptr(a),
                        lda,
                        ptr(s),
                        ptr(u),
                        ldu,
                        ptr(vt),
                        ldvt,
                        ptr(work),
                        lwork,
                        ptr(rwork),
                        int_ptr(info),
                    )
                };
                (status, "cusolverDn?gesvd")
            }
            Dense::Geev {
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
            } => {
                let Some(geev) = api.geev.as_ref() else {
                    return Err(SolverError::Missing {
                        call: "cusolverDnXgeev",
                    });
                };
                if self.params.is_null() {
                    let mut params: Params = std::ptr::null_mut();
                    // SAFETY: `params` is a valid out-pointer.
                    let status = unsafe { (geev.create_params)(&mut params) };
                    check(status, "cusolverDnCreateParams")?;
                    self.params = params;
                }
                let params = self.params;
                let (ta, tw) = (
                    p.data_type(),
                    if w_real {
                        p.data_type()
                    } else {
                        p.complex_type()
                    },
                );
                let (n, lda, ldvl, ldvr) = (
                    i64::from(n),
                    i64::from(lda),
                    i64::from(ldvl),
                    i64::from(ldvr),
                );
                let size = "cusolverDnXgeev_bufferSize";
                let (mut device_bytes, mut host_bytes) = (0usize, 0usize);
                // SAFETY: see the top of `run`; both sizes are valid
                // out-pointers.
                let status = unsafe {
                    (geev.size)(
                        h,
                        params,
                        jobvl,
                        jobvr,
                        n,
                        ta,
                        ptr(a),
                        lda,
                        tw,
                        ptr(w),
                        ta,
                        ptr(vl),
                        ldvl,
                        ta,
                        ptr(vr),
                        ldvr,
                        ta,
                        &mut device_bytes,
                        &mut host_bytes,
                    )
                };
                check(status, size)?;
                let device = self.workspace.at_least(device_bytes as u64)?;
                if self.host.len() < host_bytes {
                    self.host.resize(host_bytes, 0);
                }
                let host = if host_bytes == 0 {
                    std::ptr::null_mut()
                } else {
                    self.host.as_mut_ptr().cast::<c_void>()
                };
                // SAFETY: see the top of `run`; `host` holds at least
                // `host_bytes` bytes and is not touched by anything else
                // until the stream is synchronized below.
                let status = unsafe {
                    (geev.geev)(
                        h,
                        params,
                        jobvl,
                        jobvr,
                        n,
                        ta,
                        ptr(a),
                        lda,
                        tw,
                        ptr(w),
                        ta,
                        ptr(vl),
                        ldvl,
                        ta,
                        ptr(vr),
                        ldvr,
                        ta,
                        ptr(device),
                        device_bytes,
                        host,
                        host_bytes,
                        int_ptr(info),
                    )
                };
                (status, "cusolverDnXgeev")
            }
        };
        check(status, call)?;
        self.ctx.sync_stream()?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn precisions_follow_the_wire_dtypes() {
        assert_eq!(Precision::from_dtype(0), Some(Precision::S));
        assert_eq!(Precision::from_dtype(3), Some(Precision::Z));
        assert_eq!(Precision::from_dtype(4), None);
        assert_eq!(Precision::C.element(), 8);
        assert_eq!(Precision::C.real(), 4);
        assert_eq!(Precision::Z.index(), 3);
    }
}
