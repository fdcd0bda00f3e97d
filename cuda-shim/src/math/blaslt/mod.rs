//! cuBLASLt (`libcublasLt.so.13`).
//!
//! The handle lives on the server. Matmul descriptors, matrix layouts and
//! preferences are client-side records of their attributes (as set, byte
//! for byte); `cublasLtMatmul` resolves them, checks the operands as the
//! library does, and queues one request on the call's stream.
#![allow(non_snake_case, unreachable_pub)]

use std::collections::{BTreeMap, HashMap};
use std::ffi::c_char;
use std::os::raw::{c_int, c_void};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::OnceLock;

use parking_lot::Mutex;
use rcud_proto::math::blas::{dtype, Operand, Scalar};
use rcud_proto::math::blaslt::{epilogue, Call};
use rcud_proto::math::Library;

use super::blas::{
    nonnegative, read_host, strided, write_host, Half, HostValue, EXECUTION_FAILED, INTERNAL_ERROR,
    INVALID_VALUE, NOT_INITIALIZED, VERSION,
};

/// `CUBLAS_STATUS_NOT_SUPPORTED`: what a function rcud does not implement returns.
pub(crate) const NOT_SUPPORTED: c_int = 15;

/// The body of every generated cuBLASLt stub.
pub(crate) fn not_supported(name: &str, why: &str, logged: &AtomicBool) -> c_int {
    super::log_stub("cuBLASLt", name, why, logged);
    NOT_SUPPORTED
}

/// What an opaque cuBLASLt pointer names on the client.
enum Object {
    /// A handle: the server's id.
    Handle(u64),
    /// `cublasLtMatmulDesc_t`.
    Desc(Attributes),
    /// `cublasLtMatrixLayout_t`.
    Layout(Attributes),
    /// `cublasLtMatmulPreference_t`.
    Preference(Attributes),
}

/// Attributes as the application set them: id to bytes.
type Attributes = BTreeMap<c_int, Vec<u8>>;

fn objects() -> &'static Mutex<HashMap<usize, Object>> {
    static OBJECTS: OnceLock<Mutex<HashMap<usize, Object>>> = OnceLock::new();
    OBJECTS.get_or_init(Default::default)
}

/// Next opaque pointer value: non-null, never reused.
static NEXT: AtomicUsize = AtomicUsize::new(0x1a7_0000);

fn insert(object: Object) -> *mut c_void {
    let value = NEXT.fetch_add(0x10, Ordering::Relaxed);
    objects().lock().insert(value, object);
    value as *mut c_void
}

fn run(body: impl FnOnce() -> Result<(), c_int>) -> c_int {
    super::blas::run(body)
}

/// An attribute's value as a signed integer (stored as 1, 4 or 8 bytes).
fn int(attrs: &Attributes, id: c_int, default: i64) -> i64 {
    match attrs.get(&id).map(Vec::as_slice) {
        Some([b]) => i64::from(*b as i8),
        Some(&[a, b, c, d]) => i64::from(i32::from_le_bytes([a, b, c, d])),
        Some(bytes) if bytes.len() == 8 => {
            let mut v = [0; 8];
            v.copy_from_slice(bytes);
            i64::from_le_bytes(v)
        }
        _ => default,
    }
}

fn set_int(attrs: &mut Attributes, id: c_int, value: i64, size: usize) {
    attrs.insert(id, value.to_le_bytes()[..size].to_vec());
}

/// The size in bytes an attribute of a descriptor (`desc`) or layout must
/// have, where rcud reads it.
fn attribute_size(kind: Kind, id: c_int) -> Option<usize> {
    match (kind, id) {
        // COMPUTE_TYPE, SCALE_TYPE, POINTER_MODE, TRANSA, TRANSB, TRANSC,
        // FILL_MODE, EPILOGUE, BIAS_DATA_TYPE.
        (Kind::Desc, 0..=7 | 26) => Some(4),
        // BIAS_POINTER, BIAS_BATCH_STRIDE.
        (Kind::Desc, 8 | 10) => Some(8),
        // TYPE, ORDER, BATCH_COUNT.
        (Kind::Layout, 0 | 1 | 5) => Some(4),
        // ROWS, COLS, LD, STRIDED_BATCH_OFFSET.
        (Kind::Layout, 2..=4 | 6) => Some(8),
        _ => None,
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    Desc,
    Layout,
    Preference,
}

fn attributes_of(object: &mut Object, kind: Kind) -> Option<&mut Attributes> {
    match (object, kind) {
        (Object::Desc(a), Kind::Desc)
        | (Object::Layout(a), Kind::Layout)
        | (Object::Preference(a), Kind::Preference) => Some(a),
        _ => None,
    }
}

fn set_attribute(
    kind: Kind,
    obj: *mut c_void,
    id: c_int,
    buf: *const c_void,
    size: usize,
) -> c_int {
    run(|| {
        if buf.is_null() || size == 0 || size > 4096 {
            return Err(INVALID_VALUE);
        }
        if attribute_size(kind, id).is_some_and(|want| want != size) {
            return Err(INVALID_VALUE);
        }
        // SAFETY: cuBLASLt's contract: `buf` holds `size` readable bytes;
        // NULL was rejected and the size bounded above.
        let bytes = unsafe { std::slice::from_raw_parts(buf.cast::<u8>(), size) }.to_vec();
        let mut table = objects().lock();
        let attrs = table
            .get_mut(&(obj as usize))
            .and_then(|o| attributes_of(o, kind))
            .ok_or(INVALID_VALUE)?;
        attrs.insert(id, bytes);
        Ok(())
    })
}

fn get_attribute(
    kind: Kind,
    obj: *mut c_void,
    id: c_int,
    buf: *mut c_void,
    size: usize,
    written: *mut usize,
) -> c_int {
    run(|| {
        let mut table = objects().lock();
        let attrs = table
            .get_mut(&(obj as usize))
            .and_then(|o| attributes_of(o, kind))
            .ok_or(INVALID_VALUE)?;
        // An attribute never set reads as zero of its size.
        let value = match attrs.get(&id) {
            Some(v) => v.clone(),
            None => vec![0; attribute_size(kind, id).ok_or(INVALID_VALUE)?],
        };
        if size == 0 && buf.is_null() {
            // A size query.
            return write_host(written, value.len());
        }
        if buf.is_null() || size < value.len() {
            return Err(INVALID_VALUE);
        }
        // SAFETY: cuBLASLt's contract: `buf` has room for `size` bytes, at
        // least the value's length (checked above); NULL was rejected.
        unsafe { std::ptr::copy_nonoverlapping(value.as_ptr(), buf.cast::<u8>(), value.len()) };
        if !written.is_null() {
            write_host(written, value.len())?;
        }
        Ok(())
    })
}

fn destroy(kind: Option<Kind>, obj: *mut c_void) -> c_int {
    run(|| {
        let mut table = objects().lock();
        let matches = matches!(
            (table.get(&(obj as usize)), kind),
            (Some(Object::Desc(_)), Some(Kind::Desc))
                | (Some(Object::Layout(_)), Some(Kind::Layout))
                | (Some(Object::Preference(_)), Some(Kind::Preference))
                | (Some(Object::Handle(_)), None)
        );
        if !matches {
            return Err(if kind.is_none() {
                NOT_INITIALIZED
            } else {
                INVALID_VALUE
            });
        }
        table.remove(&(obj as usize));
        Ok(())
    })
}

// ---- handle and library ---------------------------------------------------

#[no_mangle]
pub extern "C" fn cublasLtCreate(out: *mut *mut c_void) -> c_int {
    run(|| {
        if out.is_null() {
            return Err(INVALID_VALUE);
        }
        let reply = super::call(0, Library::BlasLt, &Call::Create {}).map_err(|e| {
            tracing::debug!("cublasLtCreate: {e:?}");
            NOT_INITIALIZED
        })?;
        if reply.status != 0 {
            return Err(reply.status);
        }
        let id = u64::from_le_bytes(reply.out.try_into().map_err(|_| INTERNAL_ERROR)?);
        write_host(out, insert(Object::Handle(id)))
    })
}

#[no_mangle]
pub extern "C" fn cublasLtDestroy(handle: *mut c_void) -> c_int {
    let id = match objects().lock().get(&(handle as usize)) {
        Some(Object::Handle(id)) => *id,
        _ => return NOT_INITIALIZED,
    };
    let status = destroy(None, handle);
    if status != 0 {
        return status;
    }
    run(
        || match super::call(0, Library::BlasLt, &Call::Destroy { handle: id }) {
            Ok(reply) if reply.status == 0 => Ok(()),
            Ok(reply) => Err(reply.status),
            Err(_) => Err(EXECUTION_FAILED),
        },
    )
}

#[no_mangle]
pub extern "C" fn cublasLtGetVersion() -> usize {
    (VERSION.0 * 10000 + VERSION.1 * 100 + VERSION.2) as usize
}

#[no_mangle]
pub extern "C" fn cublasLtGetCudartVersion() -> usize {
    13000
}

#[no_mangle]
pub extern "C" fn cublasLtGetProperty(kind: c_int, value: *mut c_int) -> c_int {
    super::blas::cublasGetProperty(kind, value)
}

#[no_mangle]
pub extern "C" fn cublasLtGetStatusName(status: c_int) -> *const c_char {
    super::blas::cublasGetStatusName(status)
}

#[no_mangle]
pub extern "C" fn cublasLtGetStatusString(status: c_int) -> *const c_char {
    super::blas::cublasGetStatusString(status)
}

// ---- descriptors, layouts, preferences --------------------------------------

#[no_mangle]
pub extern "C" fn cublasLtMatmulDescCreate(
    out: *mut *mut c_void,
    compute: c_int,
    scale: c_int,
) -> c_int {
    run(|| {
        if out.is_null() {
            return Err(INVALID_VALUE);
        }
        let mut attrs = Attributes::new();
        set_int(&mut attrs, 0, compute.into(), 4);
        set_int(&mut attrs, 1, scale.into(), 4);
        set_int(&mut attrs, 7, epilogue::DEFAULT.into(), 4);
        write_host(out, insert(Object::Desc(attrs)))
    })
}

#[no_mangle]
pub extern "C" fn cublasLtMatmulDescSetAttribute(
    desc: *mut c_void,
    id: c_int,
    buf: *const c_void,
    size: usize,
) -> c_int {
    set_attribute(Kind::Desc, desc, id, buf, size)
}

#[no_mangle]
pub extern "C" fn cublasLtMatmulDescGetAttribute(
    desc: *mut c_void,
    id: c_int,
    buf: *mut c_void,
    size: usize,
    written: *mut usize,
) -> c_int {
    get_attribute(Kind::Desc, desc, id, buf, size, written)
}

#[no_mangle]
pub extern "C" fn cublasLtMatmulDescDestroy(desc: *mut c_void) -> c_int {
    destroy(Some(Kind::Desc), desc)
}

#[no_mangle]
pub extern "C" fn cublasLtMatrixLayoutCreate(
    out: *mut *mut c_void,
    ty: c_int,
    rows: u64,
    cols: u64,
    ld: i64,
) -> c_int {
    run(|| {
        if out.is_null() {
            return Err(INVALID_VALUE);
        }
        let mut attrs = Attributes::new();
        set_int(&mut attrs, 0, ty.into(), 4);
        set_int(&mut attrs, 2, rows as i64, 8);
        set_int(&mut attrs, 3, cols as i64, 8);
        set_int(&mut attrs, 4, ld, 8);
        set_int(&mut attrs, 5, 1, 4);
        write_host(out, insert(Object::Layout(attrs)))
    })
}

#[no_mangle]
pub extern "C" fn cublasLtMatrixLayoutSetAttribute(
    layout: *mut c_void,
    id: c_int,
    buf: *const c_void,
    size: usize,
) -> c_int {
    set_attribute(Kind::Layout, layout, id, buf, size)
}

#[no_mangle]
pub extern "C" fn cublasLtMatrixLayoutGetAttribute(
    layout: *mut c_void,
    id: c_int,
    buf: *mut c_void,
    size: usize,
    written: *mut usize,
) -> c_int {
    get_attribute(Kind::Layout, layout, id, buf, size, written)
}

#[no_mangle]
pub extern "C" fn cublasLtMatrixLayoutDestroy(layout: *mut c_void) -> c_int {
    destroy(Some(Kind::Layout), layout)
}

#[no_mangle]
pub extern "C" fn cublasLtMatmulPreferenceCreate(out: *mut *mut c_void) -> c_int {
    run(|| {
        if out.is_null() {
            return Err(INVALID_VALUE);
        }
        write_host(out, insert(Object::Preference(Attributes::new())))
    })
}

#[no_mangle]
pub extern "C" fn cublasLtMatmulPreferenceSetAttribute(
    pref: *mut c_void,
    id: c_int,
    buf: *const c_void,
    size: usize,
) -> c_int {
    set_attribute(Kind::Preference, pref, id, buf, size)
}

#[no_mangle]
pub extern "C" fn cublasLtMatmulPreferenceGetAttribute(
    pref: *mut c_void,
    id: c_int,
    buf: *mut c_void,
    size: usize,
    written: *mut usize,
) -> c_int {
    get_attribute(Kind::Preference, pref, id, buf, size, written)
}

#[no_mangle]
pub extern "C" fn cublasLtMatmulPreferenceDestroy(pref: *mut c_void) -> c_int {
    destroy(Some(Kind::Preference), pref)
}

// ---- matmul ---------------------------------------------------------------

/// A matrix layout, resolved.
#[derive(Clone, Copy)]
struct Layout {
    ty: u8,
    rows: i64,
    cols: i64,
    ld: i64,
    batch: i64,
    stride: i64,
}

/// A matmul, resolved from its handle, descriptor and layouts.
struct Plan {
    handle: u64,
    compute: c_int,
    scale: u8,
    pointer_mode: i64,
    transa: c_int,
    transb: c_int,
    epilogue: i32,
    bias: u64,
    bias_stride: i64,
    a: Layout,
    b: Layout,
    c: Layout,
    d: Layout,
    m: i64,
    n: i64,
    k: i64,
}

fn layout(table: &HashMap<usize, Object>, ptr: *mut c_void) -> Result<Layout, c_int> {
    let Some(Object::Layout(attrs)) = table.get(&(ptr as usize)) else {
        return Err(INVALID_VALUE);
    };
    // Only column-major (CUBLASLT_ORDER_COL) layouts are computed.
    if int(attrs, 1, 0) != 0 {
        return Err(NOT_SUPPORTED);
    }
    let ty = u8::try_from(int(attrs, 0, -1))
        .ok()
        .filter(|&t| dtype::size(t).is_some())
        .ok_or(NOT_SUPPORTED)?;
    Ok(Layout {
        ty,
        rows: int(attrs, 2, 0),
        cols: int(attrs, 3, 0),
        ld: int(attrs, 4, 0),
        batch: int(attrs, 5, 1),
        stride: int(attrs, 6, 0),
    })
}

/// Resolves and checks a matmul's shapes and types (as
/// `cublasLtMatmulAlgoGetHeuristic` and `cublasLtMatmul` both do).
fn plan(handle: *mut c_void, desc: *mut c_void, layouts: [*mut c_void; 4]) -> Result<Plan, c_int> {
    let table = objects().lock();
    let Some(Object::Handle(id)) = table.get(&(handle as usize)) else {
        return Err(NOT_INITIALIZED);
    };
    let Some(Object::Desc(attrs)) = table.get(&(desc as usize)) else {
        return Err(INVALID_VALUE);
    };
    let [a, b, c, d] = layouts.map(|l| layout(&table, l));
    let (a, b, c, d) = (a?, b?, c?, d?);
    let transa = int(attrs, 3, 0) as c_int;
    let transb = int(attrs, 4, 0) as c_int;
    if !(0..=2).contains(&transa) || !(0..=2).contains(&transb) {
        return Err(INVALID_VALUE);
    }
    let (m, n) = (d.rows, d.cols);
    let k = if transa == 0 { a.cols } else { a.rows };
    let a_shape = if transa == 0 { (m, k) } else { (k, m) };
    let b_shape = if transb == 0 { (k, n) } else { (n, k) };
    nonnegative(&[m, n, k])?;
    if (a.rows, a.cols) != a_shape || (b.rows, b.cols) != b_shape || (c.rows, c.cols) != (m, n) {
        return Err(INVALID_VALUE);
    }
    if a.batch != d.batch || b.batch != d.batch || c.batch != d.batch || d.batch < 1 {
        return Err(INVALID_VALUE);
    }
    if c.ty != d.ty
        || dtype::is_complex(a.ty) != dtype::is_complex(d.ty)
        || dtype::is_complex(b.ty) != dtype::is_complex(d.ty)
    {
        return Err(NOT_SUPPORTED);
    }
    let scale = u8::try_from(int(attrs, 1, -1))
        .ok()
        .filter(|&t| dtype::size(t).is_some())
        .ok_or(NOT_SUPPORTED)?;
    let epilogue = int(attrs, 7, epilogue::DEFAULT.into()) as i32;
    if ![
        epilogue::DEFAULT,
        epilogue::RELU,
        epilogue::BIAS,
        epilogue::RELU_BIAS,
        epilogue::GELU,
        epilogue::GELU_BIAS,
    ]
    .contains(&epilogue)
    {
        return Err(NOT_SUPPORTED);
    }
    // The bias must be of D's type (the default, -1, means so).
    let bias_type = int(attrs, 26, -1);
    if bias_type != -1 && bias_type != i64::from(d.ty) {
        return Err(NOT_SUPPORTED);
    }
    Ok(Plan {
        handle: *id,
        compute: int(attrs, 0, 68) as c_int,
        scale,
        pointer_mode: int(attrs, 2, 0),
        transa,
        transb,
        epilogue,
        bias: int(attrs, 8, 0) as u64,
        bias_stride: int(attrs, 10, 0),
        a,
        b,
        c,
        d,
        m,
        n,
        k,
    })
}

/// `cublasLtMatmulHeuristicResult_t`.
#[repr(C)]
pub struct HeuristicResult {
    algo: [u64; 8],
    workspace_size: usize,
    state: c_int,
    waves_count: f32,
    reserved: [c_int; 4],
}

#[no_mangle]
pub extern "C" fn cublasLtMatmulAlgoGetHeuristic(
    handle: *mut c_void,
    desc: *mut c_void,
    a: *mut c_void,
    b: *mut c_void,
    c: *mut c_void,
    d: *mut c_void,
    _preference: *mut c_void,
    requested: c_int,
    results: *mut HeuristicResult,
    returned: *mut c_int,
) -> c_int {
    run(|| {
        if requested <= 0 || results.is_null() || returned.is_null() {
            return Err(INVALID_VALUE);
        }
        plan(handle, desc, [a, b, c, d])?;
        // One algorithm: the CPU's GEMM, needing no workspace.
        write_host(
            results,
            HeuristicResult {
                algo: [1, 0, 0, 0, 0, 0, 0, 0],
                workspace_size: 0,
                state: 0,
                waves_count: 1.0,
                reserved: [0; 4],
            },
        )?;
        write_host(returned, 1)
    })
}

fn scalars<T: HostValue>(
    pointer_mode: i64,
    alpha: *const c_void,
    beta: *const c_void,
) -> Result<(Scalar, Scalar), c_int> {
    let one = |p: *const c_void| -> Result<Scalar, c_int> {
        if pointer_mode == 1 {
            let ptr = p as u64;
            if ptr == 0 || !super::is_device_range(ptr, std::mem::size_of::<T>() as u64) {
                return Err(INVALID_VALUE);
            }
            return Ok(Scalar::Device { ptr });
        }
        let (re, im) = read_host(p.cast::<T>())?.parts();
        Ok(Scalar::Host { re, im })
    };
    Ok((one(alpha)?, one(beta)?))
}

#[no_mangle]
pub extern "C" fn cublasLtMatmul(
    handle: *mut c_void,
    desc: *mut c_void,
    alpha: *const c_void,
    a: *const c_void,
    a_layout: *mut c_void,
    b: *const c_void,
    b_layout: *mut c_void,
    beta: *const c_void,
    c: *const c_void,
    c_layout: *mut c_void,
    d: *mut c_void,
    d_layout: *mut c_void,
    _algo: *const c_void,
    _workspace: *mut c_void,
    _workspace_size: usize,
    stream: *mut c_void,
) -> c_int {
    run(|| {
        let p = plan(handle, desc, [a_layout, b_layout, c_layout, d_layout])?;
        // Host (0) or device (1) scalars; the vector modes are not supported.
        if !(0..=1).contains(&p.pointer_mode) {
            return Err(NOT_SUPPORTED);
        }
        let (alpha, beta) = match p.scale {
            dtype::R16F => scalars::<Half>(p.pointer_mode, alpha, beta)?,
            dtype::R32F => scalars::<f32>(p.pointer_mode, alpha, beta)?,
            dtype::R64F => scalars::<f64>(p.pointer_mode, alpha, beta)?,
            dtype::C32F => scalars::<[f32; 2]>(p.pointer_mode, alpha, beta)?,
            dtype::C64F => scalars::<[f64; 2]>(p.pointer_mode, alpha, beta)?,
            _ => return Err(NOT_SUPPORTED),
        };
        // Integer compute (CUBLAS_COMPUTE_32I) is not computed.
        if matches!(p.compute, 72 | 73) {
            return Err(NOT_SUPPORTED);
        }
        let size = |t: u8| dtype::size(t).unwrap_or(1) as usize;
        let operand = |ptr: *const c_void, l: Layout| -> Result<Operand, c_int> {
            strided(ptr, l.rows, l.cols, l.ld, l.stride, l.batch, size(l.ty))
        };
        let with_bias = matches!(
            p.epilogue,
            epilogue::BIAS | epilogue::RELU_BIAS | epilogue::GELU_BIAS
        );
        if with_bias {
            operand(
                p.bias as *const c_void,
                Layout {
                    rows: p.m,
                    cols: 1,
                    ld: p.m.max(1),
                    stride: p.bias_stride,
                    ..p.d
                },
            )?;
        }
        let call = Call::Matmul {
            handle: p.handle,
            types: [p.a.ty, p.b.ty, p.d.ty, p.scale],
            transa: p.transa,
            transb: p.transb,
            m: p.m,
            n: p.n,
            k: p.k,
            alpha,
            a: operand(a, p.a)?,
            b: operand(b, p.b)?,
            beta,
            c: operand(c, p.c)?,
            d: operand(d.cast_const(), p.d)?,
            batch: p.d.batch,
            epilogue: p.epilogue,
            bias: if with_bias { p.bias } else { 0 },
            bias_stride: p.bias_stride,
        };
        if p.m == 0 || p.n == 0 {
            return Ok(());
        }
        super::enqueue(stream as u64, Library::BlasLt, &call).map_err(|e| {
            tracing::debug!("cublasLtMatmul could not be queued: {e:?}");
            EXECUTION_FAILED
        })
    })
}
