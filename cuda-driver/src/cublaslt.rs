//! NVIDIA's cuBLASLt, loaded at run time, for the `cuda` backend's
//! `cublasLtMatmul` calls.
//!
//! The client keeps matmul descriptors, layouts and preferences as records
//! of their attributes and sends one resolved product per call; here the
//! product becomes NVIDIA's descriptor and four layouts, a heuristic query
//! with the handle's workspace as the limit, and `cublasLtMatmul` on the
//! context's stream, waited for before [`LtHandle::matmul`] returns. Device
//! addresses are plain numbers: the backend checks every range the product
//! touches against the client's allocations first.

use std::ffi::{c_int, c_void};
use std::fmt;
use std::sync::Arc;

use crate::cublas::ScalarArg;
use crate::math_library::loaded_library;
use crate::workspace::Workspace;
use crate::{symbol, Context, CtxInner, DriverError, LoadError};
use cudarc::driver::sys::CUstream;

/// The file names NVIDIA's cuBLASLt is installed under, newest first (CUDA
/// 13, then CUDA 12).
pub const LIBRARIES: [&str; 2] = ["libcublasLt.so.13", "libcublasLt.so.12"];

/// The workspace each handle offers the heuristic: NVIDIA's recommendation
/// for Hopper (32 MiB), allocated on a handle's first product.
pub const WORKSPACE_BYTES: u64 = 32 << 20;

type Handle = *mut c_void;
type Desc = *mut c_void;
type Layout = *mut c_void;
type Preference = *mut c_void;
type Status = c_int;

/// `cublasLtMatmulDescAttributes_t`.
mod desc {
    pub(super) const POINTER_MODE: i32 = 2;
    pub(super) const TRANSA: i32 = 3;
    pub(super) const TRANSB: i32 = 4;
    pub(super) const EPILOGUE: i32 = 7;
    pub(super) const BIAS_POINTER: i32 = 8;
    pub(super) const BIAS_BATCH_STRIDE: i32 = 10;
}
/// `cublasLtMatrixLayoutAttribute_t`.
mod layout {
    pub(super) const BATCH_COUNT: i32 = 5;
    pub(super) const STRIDED_BATCH_OFFSET: i32 = 6;
}
/// `CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES`.
const PREF_MAX_WORKSPACE_BYTES: i32 = 1;
/// `CUBLAS_STATUS_NOT_SUPPORTED`: no algorithm for the product.
const NOT_SUPPORTED: i32 = 15;

/// `cublasLtMatmulAlgo_t`: opaque, 8 words.
#[repr(C)]
#[derive(Clone, Copy, Default)]
struct Algo {
    data: [u64; 8],
}

/// `cublasLtMatmulHeuristicResult_t`.
#[repr(C)]
#[derive(Clone, Copy, Default)]
struct HeuristicResult {
    algo: Algo,
    workspace_size: usize,
    state: Status,
    waves_count: f32,
    reserved: [c_int; 4],
}

type SetAttribute = unsafe extern "C" fn(*mut c_void, c_int, *const c_void, usize) -> Status;
type Heuristic = unsafe extern "C" fn(
    Handle,
    Desc,
    Layout,
    Layout,
    Layout,
    Layout,
    Preference,
    c_int,
    *mut HeuristicResult,
    *mut c_int,
) -> Status;
type Matmul = unsafe extern "C" fn(
    Handle,
    Desc,
    *const c_void,
    *const c_void,
    Layout,
    *const c_void,
    Layout,
    *const c_void,
    *const c_void,
    Layout,
    *mut c_void,
    Layout,
    *const Algo,
    *mut c_void,
    usize,
    CUstream,
) -> Status;

/// The cuBLASLt entry points the backend uses, with the prototypes of
/// `cublasLt.h` (opaque objects as `void *`, enums as `int`).
struct LtApi {
    create: unsafe extern "C" fn(*mut Handle) -> Status,
    destroy: unsafe extern "C" fn(Handle) -> Status,
    desc_create: unsafe extern "C" fn(*mut Desc, c_int, c_int) -> Status,
    desc_destroy: unsafe extern "C" fn(Desc) -> Status,
    desc_set: SetAttribute,
    layout_create: unsafe extern "C" fn(*mut Layout, c_int, u64, u64, i64) -> Status,
    layout_destroy: unsafe extern "C" fn(Layout) -> Status,
    layout_set: SetAttribute,
    preference_create: unsafe extern "C" fn(*mut Preference) -> Status,
    preference_destroy: unsafe extern "C" fn(Preference) -> Status,
    preference_set: SetAttribute,
    heuristic: Heuristic,
    matmul: Matmul,
    /// Keeps the code behind the pointers mapped; dropped last.
    _library: libloading::Library,
}

impl LtApi {
    fn resolve(library: libloading::Library) -> Result<Self, LoadError> {
        let lib = &library;
        // SAFETY: every field's type is the prototype in cublasLt.h of the
        // entry point it is resolved from; the pointers are stored next to
        // `library`, which outlives them.
        unsafe {
            Ok(Self {
                create: symbol(lib, "cublasLtCreate")?,
                destroy: symbol(lib, "cublasLtDestroy")?,
                desc_create: symbol(lib, "cublasLtMatmulDescCreate")?,
                desc_destroy: symbol(lib, "cublasLtMatmulDescDestroy")?,
                desc_set: symbol(lib, "cublasLtMatmulDescSetAttribute")?,
                layout_create: symbol(lib, "cublasLtMatrixLayoutCreate")?,
                layout_destroy: symbol(lib, "cublasLtMatrixLayoutDestroy")?,
                layout_set: symbol(lib, "cublasLtMatrixLayoutSetAttribute")?,
                preference_create: symbol(lib, "cublasLtMatmulPreferenceCreate")?,
                preference_destroy: symbol(lib, "cublasLtMatmulPreferenceDestroy")?,
                preference_set: symbol(lib, "cublasLtMatmulPreferenceSetAttribute")?,
                heuristic: symbol(lib, "cublasLtMatmulAlgoGetHeuristic")?,
                matmul: symbol(lib, "cublasLtMatmul")?,
                _library: library,
            })
        }
    }
}

loaded_library! {
    /// NVIDIA's cuBLASLt, loaded.
    BlasLt(LtApi), "cuBLASLt", "cuBLASLt 12"
}

/// A cuBLASLt call failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LtError {
    /// Making the context current, the workspace, or waiting for the
    /// stream failed.
    #[error(transparent)]
    Driver(#[from] DriverError),
    /// cuBLASLt answered this `cublasStatus_t`.
    #[error("{call} failed: cublasStatus_t {status}")]
    Status {
        /// The entry point.
        call: &'static str,
        /// Its status.
        status: i32,
    },
    /// Host and device scalars in one product: cuBLASLt has one pointer
    /// mode per descriptor (`CUBLAS_STATUS_INVALID_VALUE` for the client).
    #[error("alpha and beta must both be host or both device scalars")]
    MixedScalars,
}

fn check(status: Status, call: &'static str) -> Result<(), LtError> {
    if status == 0 {
        Ok(())
    } else {
        Err(LtError::Status { call, status })
    }
}

/// One operand matrix of a product: column-major, `batch` of them
/// `stride` elements apart.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LtMatrix {
    /// Device address of the first matrix.
    pub ptr: u64,
    /// `cudaDataType` of its elements.
    pub dtype: i32,
    /// Rows and columns as stored (before transposition).
    pub rows: u64,
    /// Columns as stored.
    pub cols: u64,
    /// Leading dimension, in elements.
    pub ld: i64,
    /// Elements between consecutive matrices.
    pub stride: i64,
}

/// `D = epilogue(alpha op(A) op(B) + beta C)`, already checked.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LtMatmul {
    /// `cublasComputeType_t`.
    pub compute: i32,
    /// `cudaDataType` of alpha, beta and the accumulation.
    pub scale_type: i32,
    /// `cublasOperation_t` of A and B.
    pub trans: [i32; 2],
    /// Alpha and beta.
    pub scalars: [ScalarArg; 2],
    /// A, B, C and D.
    pub matrices: [LtMatrix; 4],
    /// Products in the batch.
    pub batch: i32,
    /// `cublasLtEpilogue_t`.
    pub epilogue: u32,
    /// Device address of the bias vector (0: none) and its batch stride.
    pub bias: (u64, i64),
}

/// cuBLASLt objects made for one call, destroyed when it ends.
struct Objects<'a> {
    api: &'a LtApi,
    desc: Desc,
    layouts: Vec<Layout>,
    preference: Preference,
}

impl Drop for Objects<'_> {
    fn drop(&mut self) {
        // SAFETY: each object was created by this library and is destroyed
        // once; null ones were never created.
        unsafe {
            for &l in &self.layouts {
                (self.api.layout_destroy)(l);
            }
            if !self.desc.is_null() {
                (self.api.desc_destroy)(self.desc);
            }
            if !self.preference.is_null() {
                (self.api.preference_destroy)(self.preference);
            }
        }
    }
}

/// Sets one attribute of a cuBLASLt object from a plain value.
///
/// # Safety
/// `object` is a live object of the kind `set` takes, and `T` is the type
/// cublasLt.h gives attribute `id`.
unsafe fn set<T: Copy>(
    set: SetAttribute,
    object: *mut c_void,
    id: i32,
    value: T,
    call: &'static str,
) -> Result<(), LtError> {
    // SAFETY: `value` lives through the call and is `size_of::<T>()` bytes;
    // the caller vouches for the object and the attribute's type.
    let status = unsafe {
        set(
            object,
            id,
            (&value as *const T).cast(),
            std::mem::size_of::<T>(),
        )
    };
    check(status, call)
}

/// A cuBLASLt handle made in one client context, with the workspace it
/// offers its products; destroyed with that context current when dropped.
pub struct LtHandle {
    api: Arc<LtApi>,
    ctx: Arc<CtxInner>,
    raw: Handle,
    workspace: Workspace,
}

// SAFETY: cuBLASLt handles may be used from any thread, one call at a time;
// `&mut self` on every call and the context bound first make it so.
unsafe impl Send for LtHandle {}

impl fmt::Debug for LtHandle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LtHandle").finish_non_exhaustive()
    }
}

impl Drop for LtHandle {
    fn drop(&mut self) {
        if let Err(e) = self.ctx.bind() {
            tracing::warn!("releasing a cuBLASLt handle: {e}");
        }
        // SAFETY: `raw` is a live handle, used by nothing else after this.
        let status = unsafe { (self.api.destroy)(self.raw) };
        if status != 0 {
            tracing::warn!("cublasLtDestroy failed: cublasStatus_t {status}");
        }
    }
}

impl Context {
    /// `cublasLtCreate` in this context.
    pub fn blaslt_handle(&self, lt: &BlasLt) -> Result<LtHandle, LtError> {
        self.inner.bind()?;
        let mut raw: Handle = std::ptr::null_mut();
        // SAFETY: `raw` is a valid out-pointer; the context is current.
        let status = unsafe { (lt.api.create)(&mut raw) };
        check(status, "cublasLtCreate")?;
        Ok(LtHandle {
            api: lt.api.clone(),
            ctx: self.inner.clone(),
            raw,
            workspace: Workspace::new(self),
        })
    }
}

impl LtHandle {
    /// Runs one product on the context's stream and waits for it.
    pub fn matmul(&mut self, p: &LtMatmul) -> Result<(), LtError> {
        let pointer_mode: i32 = match p.scalars {
            [ScalarArg::Host(_), ScalarArg::Host(_)] => 0,
            [ScalarArg::Device(_), ScalarArg::Device(_)] => 1,
            _ => return Err(LtError::MixedScalars),
        };
        self.ctx.bind()?;
        let workspace = self.workspace.at_least(WORKSPACE_BYTES)?;
        let api = &*self.api;
        let mut objects = Objects {
            api,
            desc: std::ptr::null_mut(),
            layouts: Vec::with_capacity(4),
            preference: std::ptr::null_mut(),
        };
        // SAFETY: valid out-pointer; compute and scale types are checked by
        // the library.
        let status = unsafe { (api.desc_create)(&mut objects.desc, p.compute, p.scale_type) };
        check(status, "cublasLtMatmulDescCreate")?;
        const DESC_SET: &str = "cublasLtMatmulDescSetAttribute";
        // SAFETY: a live descriptor; each attribute with its type in
        // cublasLt.h (int32 modes and operations, uint32 epilogue, a device
        // pointer, int64 stride).
        unsafe {
            set(
                api.desc_set,
                objects.desc,
                desc::POINTER_MODE,
                pointer_mode,
                DESC_SET,
            )?;
            set(
                api.desc_set,
                objects.desc,
                desc::TRANSA,
                p.trans[0],
                DESC_SET,
            )?;
            set(
                api.desc_set,
                objects.desc,
                desc::TRANSB,
                p.trans[1],
                DESC_SET,
            )?;
            set(
                api.desc_set,
                objects.desc,
                desc::EPILOGUE,
                p.epilogue,
                DESC_SET,
            )?;
            if p.bias.0 != 0 {
                let bias = p.bias.0 as usize as *const c_void;
                set(
                    api.desc_set,
                    objects.desc,
                    desc::BIAS_POINTER,
                    bias,
                    DESC_SET,
                )?;
                set(
                    api.desc_set,
                    objects.desc,
                    desc::BIAS_BATCH_STRIDE,
                    p.bias.1,
                    DESC_SET,
                )?;
            }
        }
        const LAYOUT_SET: &str = "cublasLtMatrixLayoutSetAttribute";
        for m in &p.matrices {
            let mut l: Layout = std::ptr::null_mut();
            // SAFETY: valid out-pointer; the library checks the shape.
            let status = unsafe { (api.layout_create)(&mut l, m.dtype, m.rows, m.cols, m.ld) };
            check(status, "cublasLtMatrixLayoutCreate")?;
            objects.layouts.push(l);
            if p.batch > 1 {
                // SAFETY: a live layout; int32 count, int64 offset.
                unsafe {
                    set(api.layout_set, l, layout::BATCH_COUNT, p.batch, LAYOUT_SET)?;
                    set(
                        api.layout_set,
                        l,
                        layout::STRIDED_BATCH_OFFSET,
                        m.stride,
                        LAYOUT_SET,
                    )?;
                }
            }
        }
        // SAFETY: valid out-pointer.
        let status = unsafe { (api.preference_create)(&mut objects.preference) };
        check(status, "cublasLtMatmulPreferenceCreate")?;
        // SAFETY: a live preference; the limit is a uint64.
        unsafe {
            set(
                api.preference_set,
                objects.preference,
                PREF_MAX_WORKSPACE_BYTES,
                self.workspace.len(),
                "cublasLtMatmulPreferenceSetAttribute",
            )?;
        }
        let l = &objects.layouts;
        let mut found = HeuristicResult::default();
        let mut count: c_int = 0;
        // SAFETY: live handle, descriptor, layouts and preference; room for
        // the one result asked for.
        let status = unsafe {
            (api.heuristic)(
                self.raw,
                objects.desc,
                l[0],
                l[1],
                l[2],
                l[3],
                objects.preference,
                1,
                &mut found,
                &mut count,
            )
        };
        check(status, "cublasLtMatmulAlgoGetHeuristic")?;
        if count < 1 {
            return Err(LtError::Status {
                call: "cublasLtMatmulAlgoGetHeuristic",
                status: NOT_SUPPORTED,
            });
        }
        let scalar = |s: &ScalarArg| -> *const c_void {
            match s {
                ScalarArg::Host(bytes) => bytes.0.as_ptr().cast(),
                ScalarArg::Device(ptr) => *ptr as usize as *const c_void,
            }
        };
        let [a, b, c, d] = p.matrices;
        let addr = |ptr: u64| ptr as usize as *const c_void;
        // SAFETY: live objects; host scalars live in `p` through the call
        // (16-byte aligned `HostScalar`s); device addresses were checked
        // against the client's allocations by the backend; the workspace is
        // ours and at least as large as the heuristic was allowed.
        let status = unsafe {
            (api.matmul)(
                self.raw,
                objects.desc,
                scalar(&p.scalars[0]),
                addr(a.ptr),
                l[0],
                addr(b.ptr),
                l[1],
                scalar(&p.scalars[1]),
                addr(c.ptr),
                l[2],
                d.ptr as usize as *mut c_void,
                l[3],
                &found.algo,
                workspace as usize as *mut c_void,
                self.workspace.len() as usize,
                self.ctx.stream,
            )
        };
        check(status, "cublasLtMatmul")?;
        drop(objects);
        self.ctx.sync_stream()?;
        Ok(())
    }
}
