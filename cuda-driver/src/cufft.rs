//! NVIDIA's cuFFT, loaded at run time, for the `cuda` backend's math calls.
//!
//! As for cuBLAS ([`crate::cublas`]), every entry point is resolved once
//! when the library is opened ([`Fft::load_from`]), and device addresses
//! are plain numbers: the backend checks the input and output extents of an
//! execution against the client's allocations before it calls
//! [`FftPlan::exec`]. A plan is made in one client context, bound to its
//! stream, and destroyed with that context current when dropped.

use std::ffi::{c_int, c_longlong, c_void};
use std::fmt;
use std::sync::Arc;

use crate::math_library::loaded_library;
use crate::{symbol, CtxInner, DriverError, LoadError};
use cudarc::driver::sys::CUstream;

/// The file names NVIDIA's cuFFT is installed under, newest first (CUDA 13,
/// then CUDA 12).
pub const LIBRARIES: [&str; 2] = ["libcufft.so.12", "libcufft.so.11"];

type Handle = c_int;
type Status = c_int;
type Exec = unsafe extern "C" fn(Handle, *mut c_void, *mut c_void) -> Status;
type ExecDirected = unsafe extern "C" fn(Handle, *mut c_void, *mut c_void, c_int) -> Status;
type MakePlanMany64 = unsafe extern "C" fn(
    Handle,
    c_int,
    *mut c_longlong,
    *mut c_longlong,
    c_longlong,
    c_longlong,
    *mut c_longlong,
    c_longlong,
    c_longlong,
    c_int,
    c_longlong,
    *mut usize,
) -> Status;

/// The cuFFT entry points the backend uses, with the prototypes of
/// `cufft.h` (data pointers as `void *`, `cufftType` as `int`).
struct FftApi {
    create: unsafe extern "C" fn(*mut Handle) -> Status,
    destroy: unsafe extern "C" fn(Handle) -> Status,
    set_stream: unsafe extern "C" fn(Handle, CUstream) -> Status,
    make_plan_many64: MakePlanMany64,
    /// C2C, Z2Z.
    exec_complex: [ExecDirected; 2],
    /// R2C, D2Z.
    exec_forward: [Exec; 2],
    /// C2R, Z2D.
    exec_inverse: [Exec; 2],
    /// Keeps the code behind the pointers mapped; dropped last.
    _library: libloading::Library,
}

impl FftApi {
    fn resolve(library: libloading::Library) -> Result<Self, LoadError> {
        let lib = &library;
        // SAFETY: every field's type is the prototype in cufft.h of the
        // entry point it is resolved from (data pointers as `void *`,
        // `cufftType` as `int`, `long long` as `c_longlong`); the pointers
        // are stored next to `library`, which outlives them.
        unsafe {
            Ok(Self {
                create: symbol(lib, "cufftCreate")?,
                destroy: symbol(lib, "cufftDestroy")?,
                set_stream: symbol(lib, "cufftSetStream")?,
                make_plan_many64: symbol(lib, "cufftMakePlanMany64")?,
                exec_complex: [symbol(lib, "cufftExecC2C")?, symbol(lib, "cufftExecZ2Z")?],
                exec_forward: [symbol(lib, "cufftExecR2C")?, symbol(lib, "cufftExecD2Z")?],
                exec_inverse: [symbol(lib, "cufftExecC2R")?, symbol(lib, "cufftExecZ2D")?],
                _library: library,
            })
        }
    }
}

loaded_library! {
    /// NVIDIA's cuFFT, opened once and shared by every client.
    Fft(FftApi), "cuFFT", "cuFFT 11"
}

/// A cuFFT call failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FftError {
    /// Making the context current failed.
    Driver(DriverError),
    /// cuFFT answered this `cufftResult`.
    Status {
        /// The entry point.
        call: &'static str,
        /// Its result.
        status: i32,
    },
}

impl From<DriverError> for FftError {
    fn from(e: DriverError) -> Self {
        Self::Driver(e)
    }
}

impl fmt::Display for FftError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Driver(e) => e.fmt(f),
            Self::Status { call, status } => write!(f, "{call} failed: cufftResult {status}"),
        }
    }
}

impl std::error::Error for FftError {}

/// What `cufftMakePlanMany64` is given: sizes slowest dimension first and,
/// for the advanced layout, the embeddings, strides and distances.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlanShape {
    /// `cufftType`.
    pub kind: i32,
    /// Transform sizes (rank 1 to 3).
    pub n: Vec<i64>,
    /// Number of transforms.
    pub batch: i64,
    /// The advanced layout; `None` for the basic one (NULL embeddings).
    pub advanced: Option<AdvancedLayout>,
}

/// `cufftMakePlanMany64`'s advanced layout arguments.
#[allow(missing_docs)] // named as in the cuFFT documentation
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AdvancedLayout {
    pub inembed: Vec<i64>,
    pub istride: i64,
    pub idist: i64,
    pub onembed: Vec<i64>,
    pub ostride: i64,
    pub odist: i64,
}

/// The kind of data an execution transforms, which picks the entry point;
/// `double` for the f64 forms (Z2Z, D2Z, Z2D), `direction` `CUFFT_FORWARD`
/// (-1) or `CUFFT_INVERSE` (1).
#[allow(missing_docs)] // the fields are described above
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExecKind {
    /// C2C (`double` false) or Z2Z, with a direction.
    Complex { double: bool, direction: i32 },
    /// R2C or D2Z.
    RealToComplex { double: bool },
    /// C2R or Z2D.
    ComplexToReal { double: bool },
}

/// A cuFFT plan made in a client's context, on its stream; destroyed (with
/// the context current) when dropped.
pub struct FftPlan {
    api: Arc<FftApi>,
    ctx: Arc<CtxInner>,
    raw: Handle,
}

// SAFETY: cuFFT plans may be used from any thread, one call at a time;
// `&mut self` on every call and the context bound first make it so.
unsafe impl Send for FftPlan {}

impl fmt::Debug for FftPlan {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FftPlan")
            .field("raw", &self.raw)
            .finish_non_exhaustive()
    }
}

impl Drop for FftPlan {
    fn drop(&mut self) {
        if let Err(e) = self.ctx.bind() {
            tracing::warn!("releasing a cuFFT plan: {e}");
        }
        // SAFETY: `raw` is a live plan, used by nothing else after this.
        let status = unsafe { (self.api.destroy)(self.raw) };
        if status != 0 {
            tracing::warn!("cufftDestroy failed: cufftResult {status}");
        }
    }
}

fn check(status: Status, call: &'static str) -> Result<(), FftError> {
    if status == 0 {
        Ok(())
    } else {
        Err(FftError::Status { call, status })
    }
}

impl crate::Context {
    /// A cuFFT plan of `shape` in this context, on its stream
    /// (`cufftCreate`, `cufftSetStream`, `cufftMakePlanMany64`; cuFFT
    /// allocates its work area in this context).
    pub fn fft_plan(&self, fft: &Fft, shape: &PlanShape) -> Result<FftPlan, FftError> {
        self.inner.bind()?;
        let mut raw: Handle = 0;
        // SAFETY: `raw` is a valid out-pointer; the context is current.
        check(unsafe { (fft.api.create)(&mut raw) }, "cufftCreate")?;
        let plan = FftPlan {
            api: fft.api.clone(),
            ctx: self.inner.clone(),
            raw,
        };
        // SAFETY: a live plan and this context's live stream.
        let status = unsafe { (fft.api.set_stream)(raw, self.inner.stream) };
        check(status, "cufftSetStream")?;
        let rank = c_int::try_from(shape.n.len()).unwrap_or(c_int::MAX);
        let mut n = shape.n.clone();
        let mut work = 0usize;
        let AdvancedLayout {
            mut inembed,
            istride,
            idist,
            mut onembed,
            ostride,
            odist,
        } = shape.advanced.clone().unwrap_or(AdvancedLayout {
            inembed: Vec::new(),
            istride: 1,
            idist: 0,
            onembed: Vec::new(),
            ostride: 1,
            odist: 0,
        });
        let embed = |e: &mut Vec<i64>| {
            if shape.advanced.is_some() {
                e.as_mut_ptr()
            } else {
                std::ptr::null_mut()
            }
        };
        let (inembed_ptr, onembed_ptr) = (embed(&mut inembed), embed(&mut onembed));
        // SAFETY: `n` holds `rank` sizes and the embeddings `rank` entries
        // each (or are NULL for the basic layout), all living across the
        // call, which only reads them; `work` is a valid out-pointer.
        let status = unsafe {
            (fft.api.make_plan_many64)(
                raw,
                rank,
                n.as_mut_ptr(),
                inembed_ptr,
                istride,
                idist,
                onembed_ptr,
                ostride,
                odist,
                shape.kind,
                shape.batch,
                &mut work,
            )
        };
        check(status, "cufftMakePlanMany64")?;
        Ok(plan)
    }
}

impl FftPlan {
    /// Runs one transform from device address `input` to `output` and
    /// waits for it, so that it is complete when this returns.
    pub fn exec(&mut self, kind: ExecKind, input: u64, output: u64) -> Result<(), FftError> {
        self.ctx.bind()?;
        let (i, o) = (input as *mut c_void, output as *mut c_void);
        // SAFETY: the prototypes match (see `FftApi::resolve`); the caller
        // checked the plan's input and output extents at these addresses
        // against the client's allocations.
        let (status, call) = unsafe {
            match kind {
                ExecKind::Complex { double, direction } => (
                    (self.api.exec_complex[usize::from(double)])(self.raw, i, o, direction),
                    "cufftExec (complex)",
                ),
                ExecKind::RealToComplex { double } => (
                    (self.api.exec_forward[usize::from(double)])(self.raw, i, o),
                    "cufftExec (real to complex)",
                ),
                ExecKind::ComplexToReal { double } => (
                    (self.api.exec_inverse[usize::from(double)])(self.raw, i, o),
                    "cufftExec (complex to real)",
                ),
            }
        };
        check(status, call)?;
        self.ctx.sync_stream()?;
        Ok(())
    }
}
