//! cuSOLVER (`libcusolver.so.12`): the dense API (`cusolverDn*`) and the
//! sparse API (`cusolverSp*`, in [`sp`]).
//!
//! A `cusolverDnHandle_t` is the server's id of the handle; the client
//! keeps each live handle's stream. Factorizations and solves check their
//! arguments as cuSOLVER does ([`Call::device_ranges`]), check every device
//! range and the workspace against the application's allocations, and are
//! queued on the handle's stream: their results (`devInfo` included) are in
//! device memory, as cuSOLVER's kernels leave them.

mod dense;
mod irs;
mod jacobi;
mod rf;
mod sp;

use std::collections::HashMap;
use std::os::raw::{c_int, c_void};
use std::sync::atomic::AtomicBool;
use std::sync::Mutex;

use rcud_proto::math::solver::{element_size, Call, InvalidValue};
use rcud_proto::math::Library;

/// `CUSOLVER_STATUS_SUCCESS`.
pub(crate) const SUCCESS: c_int = 0;
/// `CUSOLVER_STATUS_NOT_INITIALIZED`: a NULL, unknown or destroyed handle.
pub(crate) const NOT_INITIALIZED: c_int = 1;
/// `CUSOLVER_STATUS_ALLOC_FAILED`: the server could not make the handle.
pub(crate) const ALLOC_FAILED: c_int = 2;
/// `CUSOLVER_STATUS_INVALID_VALUE`.
pub(crate) const INVALID_VALUE: c_int = 3;
/// `CUSOLVER_STATUS_EXECUTION_FAILED`: the device could not run the call.
pub(crate) const EXECUTION_FAILED: c_int = 6;
/// `CUSOLVER_STATUS_INTERNAL_ERROR`.
pub(crate) const INTERNAL_ERROR: c_int = 7;
/// `CUSOLVER_STATUS_NOT_SUPPORTED`: what a function rcud does not implement returns.
pub(crate) const NOT_SUPPORTED: c_int = 9;
/// `CUSOLVER_STATUS_ZERO_PIVOT`: `cusolverRfBatchZeroPivot` found one.
pub(crate) const ZERO_PIVOT: c_int = 10;

/// `cusolverDnHandle_t`.
pub(crate) type Handle = *mut c_void;

/// The body of every generated cuSOLVER stub.
pub(crate) fn not_supported(name: &str, why: &str, logged: &AtomicBool) -> c_int {
    super::log_stub("cuSOLVER", name, why, logged);
    NOT_SUPPORTED
}

/// The live handles (by id, which is also the `cusolverDnHandle_t` value)
/// and the stream each runs on.
static HANDLES: Mutex<Option<HashMap<u64, u64>>> = Mutex::new(None);

fn with_handles<R>(f: impl FnOnce(&mut HashMap<u64, u64>) -> R) -> R {
    let mut guard = HANDLES
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    f(guard.get_or_insert_with(HashMap::new))
}

/// The stream of a live handle.
pub(crate) fn handle_stream(handle: Handle) -> Option<u64> {
    with_handles(|handles| handles.get(&(handle as u64)).copied())
}

/// `cusolverDnCreate`: a new handle on the current device's default stream.
pub(crate) fn create() -> Result<u64, c_int> {
    let reply = super::call(0, Library::Solver, &Call::Create {}).map_err(|_| ALLOC_FAILED)?;
    if reply.status != SUCCESS {
        return Err(reply.status);
    }
    let id = <[u8; 8]>::try_from(reply.out.as_slice())
        .map(u64::from_le_bytes)
        .map_err(|_| INTERNAL_ERROR)?;
    with_handles(|handles| handles.insert(id, 0));
    Ok(id)
}

/// `cusolverDnDestroy`: after the work queued on the handle's stream.
pub(crate) fn destroy(handle: Handle) -> c_int {
    let Some(stream) = with_handles(|handles| handles.remove(&(handle as u64))) else {
        return NOT_INITIALIZED;
    };
    match super::call(
        stream,
        Library::Solver,
        &Call::Destroy {
            handle: handle as u64,
        },
    ) {
        Ok(reply) => reply.status,
        Err(_) => EXECUTION_FAILED,
    }
}

/// `cusolverDnSetStream`.
pub(crate) fn set_stream(handle: Handle, stream: u64) -> c_int {
    if super::stream_device(stream).is_err() {
        return INVALID_VALUE;
    }
    with_handles(|handles| match handles.get_mut(&(handle as u64)) {
        Some(slot) => {
            *slot = stream;
            SUCCESS
        }
        None => NOT_INITIALIZED,
    })
}

/// A workspace the application passes: its address, the element count it
/// says it has (`lwork`), the count the call needs, the element size.
pub(crate) struct Workspace {
    pub(crate) ptr: u64,
    pub(crate) lwork: i64,
    pub(crate) needed: i64,
    pub(crate) dtype: u8,
}

/// Checks and queues `call` (built with the handle's id) on the handle's
/// stream.
pub(crate) fn submit(
    handle: Handle,
    workspace: Option<Workspace>,
    build: impl FnOnce(u64) -> Call,
) -> c_int {
    let (stream, call) = match checked(handle, workspace, build) {
        Ok(checked) => checked,
        Err(status) => return status,
    };
    match super::enqueue(stream, Library::Solver, &call) {
        Ok(()) => SUCCESS,
        Err(_) => EXECUTION_FAILED,
    }
}

/// Checks `call` as [`submit`] does, runs it after the work queued on the
/// handle's stream and waits: its output bytes, for a routine that writes
/// host memory.
pub(crate) fn run_now(
    handle: Handle,
    workspace: Option<Workspace>,
    build: impl FnOnce(u64) -> Call,
) -> Result<Vec<u8>, c_int> {
    let (stream, call) = checked(handle, workspace, build)?;
    match super::call(stream, Library::Solver, &call) {
        Ok(reply) if reply.status == SUCCESS => Ok(reply.out),
        Ok(reply) => Err(reply.status),
        Err(_) => Err(EXECUTION_FAILED),
    }
}

/// The handle's stream and `call` (built with the handle's id), once its
/// arguments, its workspace and its device ranges passed cuSOLVER's checks.
fn checked(
    handle: Handle,
    workspace: Option<Workspace>,
    build: impl FnOnce(u64) -> Call,
) -> Result<(u64, Call), c_int> {
    let Some(stream) = handle_stream(handle) else {
        return Err(NOT_INITIALIZED);
    };
    let call = build(handle as u64);
    let ranges = match call.device_ranges() {
        Ok(ranges) => ranges,
        Err(invalid) => {
            tracing::debug!(target: "rcud::cusolver", "{invalid}");
            return Err(INVALID_VALUE);
        }
    };
    if let Some(ws) = workspace {
        let bytes = element_size(ws.dtype).unwrap_or(0) * u64::try_from(ws.needed).unwrap_or(0);
        if ws.lwork < ws.needed || !super::is_device_range(ws.ptr, bytes) {
            tracing::warn!(
                target: "rcud::cusolver",
                "workspace {:#x} of {} elements, {} needed, is too small or outside the application's allocations",
                ws.ptr,
                ws.lwork,
                ws.needed
            );
            return Err(INVALID_VALUE);
        }
    }
    if let Some(&(ptr, len)) = ranges
        .iter()
        .find(|&&(ptr, len)| !super::is_device_range(ptr, len))
    {
        tracing::warn!(
            target: "rcud::cusolver",
            "device range {ptr:#x}+{len} is outside the application's allocations"
        );
        return Err(INVALID_VALUE);
    }
    Ok((stream, call))
}

/// Checks a `*_bufferSize` query's handle and arguments (as the call they
/// size would) and answers the workspace's element count.
pub(crate) fn buffer_size(
    handle: Handle,
    probe: impl FnOnce(u64) -> Call,
    elements: i64,
) -> Result<c_int, c_int> {
    if handle_stream(handle).is_none() {
        return Err(NOT_INITIALIZED);
    }
    // Leading dimensions are not checked here: CuPy asks geqrf's size with
    // lda = n for an m×n matrix, and cuSOLVER answers.
    match probe(handle as u64).device_ranges() {
        Ok(_) => {}
        Err(InvalidValue(what)) if what.starts_with("ld") => {}
        Err(_) => return Err(INVALID_VALUE),
    }
    c_int::try_from(elements.max(1)).map_err(|_| INVALID_VALUE)
}

/// Answers a `*_bufferSize` query in `*lwork`.
pub(crate) fn answer(lwork: *mut c_int, size: Result<c_int, c_int>) -> c_int {
    match size {
        Ok(size) => match crate::ffi::write_out(lwork, size) {
            Ok(()) => SUCCESS,
            Err(_) => INVALID_VALUE,
        },
        Err(status) => status,
    }
}

/// Workspace element counts. The CPU implementation does not use the
/// workspace, but programs allocate what the query answers and pass it
/// back; these are small multiples of the dimensions, as LAPACK's
/// unblocked routines need.
pub(crate) mod lwork {
    /// getrf: one row's worth of scratch.
    pub(crate) fn getrf(_m: i32, n: i32) -> i64 {
        i64::from(n.max(1))
    }
    /// potrf.
    pub(crate) fn potrf(n: i32) -> i64 {
        i64::from(n.max(1))
    }
    /// geqrf.
    pub(crate) fn geqrf(_m: i32, n: i32) -> i64 {
        i64::from(n.max(1))
    }
    /// ormqr / unmqr: one row or column of C.
    pub(crate) fn ormqr(m: i32, n: i32) -> i64 {
        i64::from(m.max(n).max(1))
    }
    /// orgqr / ungqr.
    pub(crate) fn orgqr(n: i32) -> i64 {
        i64::from(n.max(1))
    }
    /// syevd / heevd: LAPACK's 1 + 6n + 2n² of dsyevd.
    pub(crate) fn syevd(n: i32) -> i64 {
        let n = i64::from(n.max(0));
        1 + 6 * n + 2 * n * n
    }
    /// geev: LAPACK's 4n of dgeev with eigenvectors.
    pub(crate) fn geev(n: i32) -> i64 {
        4 * i64::from(n.max(1))
    }
    /// gesvd: LAPACK's max(3 min(m,n) + max(m,n), 5 min(m,n)).
    pub(crate) fn gesvd(m: i32, n: i32) -> i64 {
        let (small, large) = (i64::from(m.min(n).max(0)), i64::from(m.max(n).max(0)));
        (3 * small + large).max(5 * small).max(1)
    }
}
