//! cuSPARSE (`libcusparse.so.12`): the generic API (SpMV, SpMM, SpGEMM,
//! SpSV, Gather, Scatter), the CSR/CSC/COO/dense conversions, and the
//! legacy sorts and incomplete factorizations (`legacy`).
//!
//! Handles live on the server; the client keeps each one's stream and
//! pointer mode. Matrix and vector descriptors are host objects, as in
//! NVIDIA's library: they live here, in one table, and their contents
//! travel with each compute call. The application gets table keys, never
//! Rust pointers, so a destroyed or forged descriptor is an
//! `INVALID_VALUE`, not a dangling access.

// Exported C functions are `pub` by nature; their names follow cuSPARSE's.
#![allow(non_snake_case, unreachable_pub)]

mod compute;
mod convert;
mod descr;
mod handle;
mod legacy;

use std::collections::HashMap;
use std::os::raw::{c_int, c_void};
use std::sync::atomic::AtomicBool;
use std::sync::LazyLock;

use parking_lot::Mutex;
use rcud_proto::codec::Wire;
use rcud_proto::math::sparse::{Boost, Call, DnMat, DnVec, SpMat, SpVec};
use rcud_proto::math::Library;

/// `CUSPARSE_STATUS_NOT_INITIALIZED`: a NULL, unknown or destroyed handle.
pub(crate) const NOT_INITIALIZED: c_int = 1;
/// `CUSPARSE_STATUS_INVALID_VALUE`.
pub(crate) const INVALID_VALUE: c_int = 3;
/// `CUSPARSE_STATUS_EXECUTION_FAILED`: the device's work failed.
pub(crate) const EXECUTION_FAILED: c_int = 6;
/// `CUSPARSE_STATUS_INTERNAL_ERROR`.
pub(crate) const INTERNAL_ERROR: c_int = 7;
/// `CUSPARSE_STATUS_MATRIX_TYPE_NOT_SUPPORTED`.
pub(crate) const MATRIX_TYPE_NOT_SUPPORTED: c_int = 8;
/// `CUSPARSE_STATUS_ZERO_PIVOT`.
pub(crate) const ZERO_PIVOT: c_int = 9;
/// `CUSPARSE_STATUS_NOT_SUPPORTED`: what a function rcud does not implement returns.
pub(crate) const NOT_SUPPORTED: c_int = 10;

/// `cusparseFormat_t`.
pub(crate) const FORMAT_CSR: u8 = 1;
pub(crate) const FORMAT_CSC: u8 = 2;
pub(crate) const FORMAT_COO: u8 = 3;

/// The body of every generated cuSPARSE stub.
pub(crate) fn not_supported(name: &str, why: &str, logged: &AtomicBool) -> c_int {
    super::log_stub("cuSPARSE", name, why, logged);
    NOT_SUPPORTED
}

/// A status other than success, as the function returns it.
pub(crate) type Status = Result<(), c_int>;

/// Runs an exported function's body: `Err(status)` and panics become its
/// return value.
pub(crate) fn run(body: impl FnOnce() -> Status) -> c_int {
    super::guard(INTERNAL_ERROR, || match body() {
        Ok(()) => 0,
        Err(status) => status,
    })
}

/// Stores `value` at the application's output pointer `ptr`.
pub(crate) fn out<T>(ptr: *mut T, value: T) -> Status {
    if ptr.is_null() {
        return Err(INVALID_VALUE);
    }
    // SAFETY: the cuSPARSE API makes output pointers valid for a write of
    // their type; NULL was rejected above.
    unsafe { ptr.write(value) };
    Ok(())
}

/// Reads the application's input pointer `ptr`.
pub(crate) fn input<T: Copy>(ptr: *const T) -> Result<T, c_int> {
    if ptr.is_null() {
        return Err(INVALID_VALUE);
    }
    // SAFETY: the cuSPARSE API makes input pointers valid for a read of
    // their type; NULL was rejected above.
    Ok(unsafe { ptr.read_unaligned() })
}

/// What the client knows of a handle.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Handle {
    /// The server's id.
    server: u64,
    /// `cudaStream_t` its work goes to.
    stream: u64,
    /// `cusparsePointerMode_t`: 0 host, 1 device.
    pointer_mode: c_int,
}

/// A legacy matrix descriptor (`cusparseMatDescr_t`): only properties.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct MatDescr {
    matrix_type: c_int,
    fill_mode: c_int,
    diag_type: c_int,
    base: c_int,
}

/// An object handed to the application.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Object {
    Handle(Handle),
    SpMat(SpMat),
    DnVec(DnVec),
    DnMat(DnMat),
    SpGemm {
        computed: bool,
    },
    SpSv,
    MatDescr(MatDescr),
    SpVec(SpVec),
    /// A `csrilu02Info_t` (`ic` false) or `csric02Info_t`: the server's
    /// id (it keeps the zero pivot), and the pivot boost set for it.
    Info {
        server: u64,
        ic: bool,
        boost: Option<Boost>,
    },
}

struct Objects {
    next: usize,
    live: HashMap<usize, Object>,
}

static OBJECTS: LazyLock<Mutex<Objects>> = LazyLock::new(|| {
    Mutex::new(Objects {
        next: 0x5000,
        live: HashMap::new(),
    })
});

/// Registers `object`, answering the non-null value the application names
/// it by.
pub(crate) fn insert(object: Object) -> usize {
    let mut objects = OBJECTS.lock();
    objects.next += 16;
    let key = objects.next;
    objects.live.insert(key, object);
    key
}

/// The object named `key`, if live.
pub(crate) fn get(key: *const c_void) -> Option<Object> {
    OBJECTS.lock().live.get(&(key as usize)).copied()
}

/// Replaces the object named `key` (if live) by `f` of it.
pub(crate) fn update(key: *const c_void, f: impl FnOnce(&mut Object) -> Status) -> Status {
    let mut objects = OBJECTS.lock();
    match objects.live.get_mut(&(key as usize)) {
        Some(object) => f(object),
        None => Err(INVALID_VALUE),
    }
}

/// Removes the object named `key` if `is_kind` accepts it.
pub(crate) fn remove(key: *const c_void, is_kind: impl Fn(&Object) -> bool) -> Status {
    let mut objects = OBJECTS.lock();
    match objects.live.get(&(key as usize)) {
        Some(object) if is_kind(object) => {
            objects.live.remove(&(key as usize));
            Ok(())
        }
        _ => Err(INVALID_VALUE),
    }
}

/// The handle named `key`.
pub(crate) fn handle(key: *const c_void) -> Result<Handle, c_int> {
    match get(key) {
        Some(Object::Handle(h)) => Ok(h),
        _ => Err(NOT_INITIALIZED),
    }
}

/// The sparse matrix descriptor named `key`.
pub(crate) fn sp_mat(key: *const c_void) -> Result<SpMat, c_int> {
    match get(key) {
        Some(Object::SpMat(m)) => Ok(m),
        _ => Err(INVALID_VALUE),
    }
}

/// The matrix type and index base of the legacy matrix descriptor named
/// `key` (for cuSOLVER's sparse API), if live.
pub(crate) fn legacy_descr(key: *const c_void) -> Option<(c_int, c_int)> {
    match get(key) {
        Some(Object::MatDescr(d)) => Some((d.matrix_type, d.base)),
        _ => None,
    }
}

/// The sparse vector descriptor named `key`.
pub(crate) fn sp_vec(key: *const c_void) -> Result<SpVec, c_int> {
    match get(key) {
        Some(Object::SpVec(v)) => Ok(v),
        _ => Err(INVALID_VALUE),
    }
}

/// The dense vector descriptor named `key`.
pub(crate) fn dn_vec(key: *const c_void) -> Result<DnVec, c_int> {
    match get(key) {
        Some(Object::DnVec(v)) => Ok(v),
        _ => Err(INVALID_VALUE),
    }
}

/// The dense matrix descriptor named `key`.
pub(crate) fn dn_mat(key: *const c_void) -> Result<DnMat, c_int> {
    match get(key) {
        Some(Object::DnMat(m)) => Ok(m),
        _ => Err(INVALID_VALUE),
    }
}

/// Sends `call` and waits: the library status, or its output bytes.
pub(crate) fn call_sync(stream: u64, call: &Call) -> Result<Vec<u8>, c_int> {
    match super::call(stream, Library::Sparse, call) {
        Ok(reply) if reply.status == 0 => Ok(reply.out),
        Ok(reply) => Err(reply.status),
        Err(e) => {
            tracing::debug!("cuSPARSE call failed: {e:?}");
            Err(EXECUTION_FAILED)
        }
    }
}

/// Queues `call` on the handle's stream.
pub(crate) fn call_async(handle: &Handle, call: &impl Wire) -> Status {
    super::enqueue(handle.stream, Library::Sparse, call).map_err(|e| {
        tracing::debug!("cuSPARSE call failed: {e:?}");
        EXECUTION_FAILED
    })
}

/// An `i64` from the first 8 bytes of a reply.
pub(crate) fn reply_i64(out: &[u8]) -> Result<i64, c_int> {
    let bytes: [u8; 8] = out
        .get(..8)
        .and_then(|b| b.try_into().ok())
        .ok_or(INTERNAL_ERROR)?;
    Ok(i64::from_le_bytes(bytes))
}

/// Bytes per element of `cudaDataType` `ty`, for the types computed here.
pub(crate) fn value_size(ty: u8) -> Result<u64, c_int> {
    match ty {
        0 => Ok(4),
        1 | 4 => Ok(8),
        5 => Ok(16),
        _ => Err(NOT_SUPPORTED),
    }
}

/// Bytes per index of `cusparseIndexType_t` `ty`.
pub(crate) fn index_size(ty: u8) -> Result<u64, c_int> {
    match ty {
        2 => Ok(4),
        3 => Ok(8),
        _ => Err(NOT_SUPPORTED),
    }
}

/// `count * size`, INVALID_VALUE on a negative count or overflow.
fn bytes(count: i64, size: u64) -> Result<u64, c_int> {
    u64::try_from(count)
        .ok()
        .and_then(|c| c.checked_mul(size))
        .ok_or(INVALID_VALUE)
}

/// Checks that `[ptr, ptr + len)` lies in the application's device memory.
pub(crate) fn device_range(ptr: u64, len: u64) -> Status {
    if super::is_device_range(ptr, len) {
        Ok(())
    } else {
        Err(INVALID_VALUE)
    }
}

/// Bytes of the offsets array of `m` (rows + 1 for CSR, cols + 1 for
/// CSC, nnz row indices for COO).
pub(crate) fn offsets_bytes(m: &SpMat) -> Result<u64, c_int> {
    match m.format {
        FORMAT_CSR => bytes(
            m.rows.checked_add(1).ok_or(INVALID_VALUE)?,
            index_size(m.offset_type)?,
        ),
        FORMAT_CSC => bytes(
            m.cols.checked_add(1).ok_or(INVALID_VALUE)?,
            index_size(m.offset_type)?,
        ),
        _ => bytes(m.nnz, index_size(m.index_type)?),
    }
}

/// Checks the arrays of `m` against the application's device memory (an
/// empty matrix has none to check) and its types against those computed.
pub(crate) fn check_sp_mat(m: &SpMat) -> Status {
    value_size(m.value_type)?;
    if m.nnz == 0 {
        return Ok(());
    }
    device_range(m.offsets, offsets_bytes(m)?)?;
    device_range(m.indices, bytes(m.nnz, index_size(m.index_type)?)?)?;
    device_range(m.values, bytes(m.nnz, value_size(m.value_type)?)?)
}

/// Checks a sparse vector's arrays against the application's device
/// memory and its types against those computed.
pub(crate) fn check_sp_vec(v: &SpVec) -> Status {
    if v.nnz == 0 {
        return Ok(());
    }
    device_range(v.indices, bytes(v.nnz, index_size(v.index_type)?)?)?;
    device_range(v.values, bytes(v.nnz, value_size(v.value_type)?)?)
}

/// Checks a dense vector against the application's device memory.
pub(crate) fn check_dn_vec(v: &DnVec) -> Status {
    device_range(v.values, bytes(v.size, value_size(v.value_type)?)?)
}

/// Checks a dense matrix (its leading dimension, its extent) against the
/// application's device memory.
pub(crate) fn check_dn_mat(m: &DnMat) -> Status {
    let (outer, inner) = if m.order == 2 {
        (m.rows, m.cols)
    } else {
        (m.cols, m.rows)
    };
    if m.ld < inner.max(1) {
        return Err(INVALID_VALUE);
    }
    if outer == 0 || inner == 0 {
        return Ok(());
    }
    let extent = (outer - 1)
        .checked_mul(m.ld)
        .and_then(|e| e.checked_add(inner))
        .ok_or(INVALID_VALUE)?;
    device_range(m.values, bytes(extent, value_size(m.value_type)?)?)
}
