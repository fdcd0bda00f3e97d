//! cuSOLVER's sparse API (`cusolverSp*`, and the low-level `csrchol*` /
//! `csrqr*` of `cusolverSp_LOWLEVEL_PREVIEW.h`).
//!
//! A `cusolverSpHandle_t` is a cuSOLVER handle of the server, as a
//! `cusolverDnHandle_t` is. The `*Host` functions take host arrays and run
//! on the caller's CPU, as NVIDIA's do: here in the client, with
//! `rcud-math`'s code. The others take device arrays and run on the server
//! with the same code; `csrlsv*` and the low-level analysis, buffer query
//! and zero-pivot query answer on the host and wait, the set-up, factor and
//! solve steps are queued on the handle's stream.

// C names, exported (unreachable from Rust, reachable from C).
#![allow(non_snake_case, unreachable_pub)]

use std::collections::HashMap;
use std::os::raw::{c_int, c_void};
use std::sync::Mutex;

use rcud_math::solver::sparse::{self, Csr, Info, Method, Pattern, SpError};
use rcud_math::solver::{decode, encode};
use rcud_proto::math::solver::{element_size, Call, SP_CHOL, SP_LU, SP_QR};
use rcud_proto::math::Library;

use super::{handle_stream, submit, Handle, ALLOC_FAILED, INTERNAL_ERROR, INVALID_VALUE};
use super::{EXECUTION_FAILED, NOT_INITIALIZED, SUCCESS};
use crate::ffi::write_out;
use crate::math::guard;
use num_complex::Complex64 as C;

/// `CUSOLVER_STATUS_MATRIX_TYPE_NOT_SUPPORTED`.
const MATRIX_TYPE_NOT_SUPPORTED: c_int = 8;

mod batched;
mod extra;
mod lu;

type Status = Result<(), c_int>;

fn run(body: impl FnOnce() -> Status) -> c_int {
    guard(INTERNAL_ERROR, || match body() {
        Ok(()) => SUCCESS,
        Err(status) => status,
    })
}

fn sp_status(error: SpError) -> c_int {
    tracing::debug!(target: "rcud::cusolver", "cusolverSp: {error}");
    match error {
        SpError::Invalid(_) => INVALID_VALUE,
        SpError::TooLarge => ALLOC_FAILED,
    }
}

fn check_handle(handle: Handle) -> Result<u64, c_int> {
    handle_stream(handle).ok_or(NOT_INITIALIZED)
}

fn out<T>(ptr: *mut T, value: T) -> Status {
    write_out(ptr, value).map_err(|_| INVALID_VALUE)
}

fn count(value: c_int) -> Result<usize, c_int> {
    usize::try_from(value).map_err(|_| INVALID_VALUE)
}

/// `count` ints of the host array at `ptr`.
fn host_ints(ptr: *const c_int, count: usize) -> Result<Vec<i32>, c_int> {
    if count == 0 {
        return Ok(Vec::new());
    }
    if ptr.is_null() {
        return Err(INVALID_VALUE);
    }
    // SAFETY: the application passes a host array of at least `count` ints
    // (cuSOLVER's contract); NULL was refused above.
    Ok(unsafe { std::slice::from_raw_parts(ptr, count) }.to_vec())
}

fn write_ints(ptr: *mut c_int, values: &[i32]) -> Status {
    if values.is_empty() {
        return Ok(());
    }
    if ptr.is_null() {
        return Err(INVALID_VALUE);
    }
    // SAFETY: the application passes a host array of `values.len()` ints
    // (cuSOLVER's contract); NULL was refused above.
    unsafe { std::slice::from_raw_parts_mut(ptr, values.len()) }.copy_from_slice(values);
    Ok(())
}

/// `count` values of `dtype` from the host array at `ptr`.
fn host_values(ptr: *const c_void, count: usize, dtype: u8) -> Result<Vec<C>, c_int> {
    if count == 0 {
        return Ok(Vec::new());
    }
    if ptr.is_null() {
        return Err(INVALID_VALUE);
    }
    let size = element_size(dtype).ok_or(INTERNAL_ERROR)? as usize;
    // SAFETY: the application passes a host array of `count` elements of
    // the function's type (cuSOLVER's contract); NULL was refused above.
    let bytes = unsafe { std::slice::from_raw_parts(ptr.cast::<u8>(), count * size) };
    Ok(bytes.chunks_exact(size).map(|b| decode(dtype, b)).collect())
}

fn write_values(ptr: *mut c_void, values: &[C], dtype: u8) -> Status {
    if values.is_empty() {
        return Ok(());
    }
    if ptr.is_null() {
        return Err(INVALID_VALUE);
    }
    let mut bytes = Vec::new();
    for &v in values {
        encode(dtype, v, &mut bytes);
    }
    // SAFETY: the application passes a host array of `values.len()`
    // elements of the function's type; NULL was refused above.
    unsafe { std::slice::from_raw_parts_mut(ptr.cast::<u8>(), bytes.len()) }
        .copy_from_slice(&bytes);
    Ok(())
}

/// The index base of a general matrix descriptor: INVALID_VALUE for an
/// unknown descriptor, MATRIX_TYPE_NOT_SUPPORTED for another type.
fn general_base(descr: *const c_void) -> Result<i32, c_int> {
    let (matrix_type, base) = crate::math::sparse::legacy_descr(descr).ok_or(INVALID_VALUE)?;
    if matrix_type != 0 {
        return Err(MATRIX_TYPE_NOT_SUPPORTED);
    }
    Ok(base)
}

/// A host CSR pattern, checked and rebased.
fn host_pattern(
    (m, n, nnz): (c_int, c_int, c_int),
    descr: *const c_void,
    rowptr: *const c_int,
    colind: *const c_int,
) -> Result<Pattern, c_int> {
    if m < 0 || n < 0 || nnz < 0 {
        return Err(INVALID_VALUE);
    }
    let base = general_base(descr)?;
    let offsets = host_ints(rowptr, count(m)? + 1)?;
    let cols = host_ints(colind, count(nnz)?)?;
    Pattern::new(m, n, nnz, base, &offsets, &cols).map_err(sp_status)
}

// ---- handles ----

#[no_mangle]
pub extern "C" fn cusolverSpCreate(handle: *mut Handle) -> c_int {
    run(|| {
        if handle.is_null() {
            return Err(INVALID_VALUE);
        }
        let id = super::create()?;
        out(handle, id as Handle)
    })
}

#[no_mangle]
pub extern "C" fn cusolverSpDestroy(handle: Handle) -> c_int {
    guard(INTERNAL_ERROR, || super::destroy(handle))
}

#[no_mangle]
pub extern "C" fn cusolverSpSetStream(handle: Handle, stream: *mut c_void) -> c_int {
    guard(INTERNAL_ERROR, || super::set_stream(handle, stream as u64))
}

#[no_mangle]
pub extern "C" fn cusolverSpGetStream(handle: Handle, stream: *mut *mut c_void) -> c_int {
    run(|| out(stream, check_handle(handle)? as *mut c_void))
}

// ---- orderings and permutations (host) ----

#[no_mangle]
pub extern "C" fn cusolverSpXcsrissymHost(
    handle: Handle,
    m: c_int,
    nnz: c_int,
    descr: *const c_void,
    row_start: *const c_int,
    row_end: *const c_int,
    colind: *const c_int,
    issym: *mut c_int,
) -> c_int {
    run(|| {
        check_handle(handle)?;
        if m < 0 || nnz < 0 || issym.is_null() {
            return Err(INVALID_VALUE);
        }
        let base = general_base(descr)?;
        let rows = count(m)?;
        let starts = host_ints(row_start, rows)?;
        let ends = host_ints(row_end, rows)?;
        let cols = host_ints(colind, count(nnz)?)?;
        // Gather each row's [start, end) into one zero-based CSR.
        let mut rowptr = vec![0];
        let mut packed = Vec::new();
        for (&s, &e) in starts.iter().zip(&ends) {
            let (s, e) = (count(s - base)?, count(e - base)?);
            if s > e || e > cols.len() {
                return Err(INVALID_VALUE);
            }
            packed.extend(cols[s..e].iter().map(|&c| c - base));
            rowptr.push(i32::try_from(packed.len()).map_err(|_| INVALID_VALUE)?);
        }
        let packed_nnz = i32::try_from(packed.len()).map_err(|_| INVALID_VALUE)?;
        let pattern = Pattern::new(m, m, packed_nnz, 0, &rowptr, &packed).map_err(sp_status)?;
        out(issym, c_int::from(pattern.is_symmetric()))
    })
}

/// The orderings' common frame: checks, then writes `order(pattern)` to `p`.
fn ordering(
    handle: Handle,
    (n, nnz): (c_int, c_int),
    descr: *const c_void,
    rowptr: *const c_int,
    colind: *const c_int,
    p: *mut c_int,
    order: fn(&Pattern) -> Vec<usize>,
) -> c_int {
    run(|| {
        check_handle(handle)?;
        if n <= 0 || nnz <= 0 || p.is_null() {
            return Err(INVALID_VALUE);
        }
        let pattern = host_pattern((n, n, nnz), descr, rowptr, colind)?;
        let perm: Vec<i32> = order(&pattern)
            .into_iter()
            .map(|v| i32::try_from(v).unwrap_or(0))
            .collect();
        write_ints(p, &perm)
    })
}

#[no_mangle]
pub extern "C" fn cusolverSpXcsrsymrcmHost(
    handle: Handle,
    n: c_int,
    nnz: c_int,
    descr: *const c_void,
    rowptr: *const c_int,
    colind: *const c_int,
    p: *mut c_int,
) -> c_int {
    ordering(handle, (n, nnz), descr, rowptr, colind, p, sparse::symrcm)
}

#[no_mangle]
pub extern "C" fn cusolverSpXcsrsymamdHost(
    handle: Handle,
    n: c_int,
    nnz: c_int,
    descr: *const c_void,
    rowptr: *const c_int,
    colind: *const c_int,
    p: *mut c_int,
) -> c_int {
    ordering(handle, (n, nnz), descr, rowptr, colind, p, sparse::symamd)
}

/// `options` (METIS's) are ignored: the ordering is rcud's own.
#[no_mangle]
pub extern "C" fn cusolverSpXcsrmetisndHost(
    handle: Handle,
    n: c_int,
    nnz: c_int,
    descr: *const c_void,
    rowptr: *const c_int,
    colind: *const c_int,
    _options: *const i64,
    p: *mut c_int,
) -> c_int {
    ordering(handle, (n, nnz), descr, rowptr, colind, p, sparse::metisnd)
}

/// Reads and checks a permutation of `0..len` (zero-based, whatever the
/// matrix's base).
fn host_perm(p: *const c_int, len: usize) -> Result<Vec<usize>, c_int> {
    sparse::permutation(&host_ints(p, len)?, len).ok_or(INVALID_VALUE)
}

#[no_mangle]
pub extern "C" fn cusolverSpXcsrperm_bufferSizeHost(
    handle: Handle,
    m: c_int,
    n: c_int,
    nnz: c_int,
    descr: *const c_void,
    rowptr: *const c_int,
    colind: *const c_int,
    p: *const c_int,
    q: *const c_int,
    size: *mut usize,
) -> c_int {
    run(|| {
        check_handle(handle)?;
        if m <= 0 || n <= 0 || nnz < 0 || size.is_null() {
            return Err(INVALID_VALUE);
        }
        host_pattern((m, n, nnz), descr, rowptr, colind)?;
        host_perm(p, count(m)?)?;
        host_perm(q, count(n)?)?;
        // Room for one (column, entry) pair per entry, as the
        // implementation sorts.
        out(size, (count(nnz)? + 1) * 16)
    })
}

#[no_mangle]
pub extern "C" fn cusolverSpXcsrpermHost(
    handle: Handle,
    m: c_int,
    n: c_int,
    nnz: c_int,
    descr: *const c_void,
    rowptr: *mut c_int,
    colind: *mut c_int,
    p: *const c_int,
    q: *const c_int,
    map: *mut c_int,
    buffer: *mut c_void,
) -> c_int {
    run(|| {
        check_handle(handle)?;
        if m <= 0 || n <= 0 || nnz < 0 || buffer.is_null() {
            return Err(INVALID_VALUE);
        }
        let base = general_base(descr)?;
        let pattern = host_pattern((m, n, nnz), descr, rowptr, colind)?;
        let (p, q) = (host_perm(p, count(m)?)?, host_perm(q, count(n)?)?);
        let old_map = host_ints(map, pattern.nnz())?;
        let (b, entries) = sparse::csrperm(&pattern, &p, &q);
        let to_int = |v: usize| {
            i32::try_from(v)
                .map(|v| v + base)
                .map_err(|_| INVALID_VALUE)
        };
        let rows: Vec<i32> = b
            .rowptr
            .iter()
            .map(|&v| to_int(v))
            .collect::<Result<_, _>>()?;
        let cols: Vec<i32> = b
            .colind
            .iter()
            .map(|&v| to_int(v))
            .collect::<Result<_, _>>()?;
        let new_map: Vec<i32> = entries.iter().map(|&k| old_map[k]).collect();
        write_ints(rowptr, &rows)?;
        write_ints(colind, &cols)?;
        write_ints(map, &new_map)
    })
}

// ---- csrlsv{lu,qr,chol}: host and device ----

/// What every `csrlsv*` checks: handle, sizes, reorder, descriptor.
fn lsv_checks(
    handle: Handle,
    n: c_int,
    nnz: c_int,
    reorder: c_int,
    descr: *const c_void,
) -> Result<(u64, i32), c_int> {
    let stream = check_handle(handle)?;
    if n <= 0 || nnz <= 0 || !(0..=3).contains(&reorder) {
        return Err(INVALID_VALUE);
    }
    Ok((stream, general_base(descr)?))
}

fn method_of(method: u8) -> Method {
    match method {
        SP_LU => Method::Lu,
        SP_CHOL => Method::Cholesky,
        _ => Method::Qr,
    }
}

/// The operands of one `csrlsv*` call.
struct Lsv {
    n: c_int,
    nnz: c_int,
    descr: *const c_void,
    val: *const c_void,
    rowptr: *const c_int,
    colind: *const c_int,
    b: *const c_void,
    tol: f64,
    reorder: c_int,
    x: *mut c_void,
    singularity: *mut c_int,
}

fn lsv_host(handle: Handle, method: u8, dtype: u8, a: &Lsv) -> c_int {
    run(|| {
        lsv_checks(handle, a.n, a.nnz, a.reorder, a.descr)?;
        if a.singularity.is_null() {
            return Err(INVALID_VALUE);
        }
        let pattern = host_pattern((a.n, a.n, a.nnz), a.descr, a.rowptr, a.colind)?;
        let values = host_values(a.val, pattern.nnz(), dtype)?;
        let rhs = host_values(a.b, count(a.n)?, dtype)?;
        if a.x.is_null() {
            return Err(INVALID_VALUE);
        }
        let csr = Csr { pattern, values };
        let (x, singular) = sparse::solve(&csr, &rhs, method_of(method), a.tol, a.reorder != 0)
            .map_err(sp_status)?;
        out(a.singularity, position(singular))?;
        if singular.is_none() {
            write_values(a.x, &x, dtype)?;
        }
        Ok(())
    })
}

fn position(at: Option<usize>) -> c_int {
    at.and_then(|p| c_int::try_from(p).ok()).unwrap_or(-1)
}

/// Sends `call` on `stream` and waits: its output bytes, or its status.
fn sync(stream: u64, call: &Call) -> Result<Vec<u8>, c_int> {
    let ranges = call.device_ranges().map_err(|_| INVALID_VALUE)?;
    if let Some(&(ptr, len)) = ranges
        .iter()
        .find(|&&(ptr, len)| !crate::math::is_device_range(ptr, len))
    {
        tracing::warn!(
            target: "rcud::cusolver",
            "device range {ptr:#x}+{len} is outside the application's allocations"
        );
        return Err(INVALID_VALUE);
    }
    match crate::math::call(stream, Library::Solver, call) {
        Ok(reply) if reply.status == SUCCESS => Ok(reply.out),
        Ok(reply) => Err(reply.status),
        Err(_) => Err(EXECUTION_FAILED),
    }
}

fn reply_i32(bytes: &[u8]) -> Result<i32, c_int> {
    <[u8; 4]>::try_from(bytes.get(..4).ok_or(INTERNAL_ERROR)?)
        .map(i32::from_le_bytes)
        .map_err(|_| INTERNAL_ERROR)
}

fn lsv_device(handle: Handle, method: u8, dtype: u8, a: &Lsv) -> c_int {
    run(|| {
        let (stream, base) = lsv_checks(handle, a.n, a.nnz, a.reorder, a.descr)?;
        if a.singularity.is_null() {
            return Err(INVALID_VALUE);
        }
        let reply = sync(
            stream,
            &Call::SpLsv {
                handle: handle as u64,
                dtype,
                method,
                n: a.n,
                nnz: a.nnz,
                base,
                val: a.val as u64,
                rowptr: a.rowptr as u64,
                colind: a.colind as u64,
                b: a.b as u64,
                tol: a.tol,
                reorder: a.reorder,
                x: a.x as u64,
            },
        )?;
        out(a.singularity, reply_i32(&reply)?)
    })
}

// ---- low-level infos ----

/// A `csrcholInfo(Host)_t` / `csrqrInfo(Host)_t`: host ones hold their
/// factor here, device ones live on the server under the same id.
enum Entry {
    Host(Box<Info>),
    /// A server info for its method, and the rows of its last analysis
    /// (0 before one).
    Device(Method, c_int),
    Lu(Box<lu::LuInfo>),
}

static INFOS: Mutex<Option<(u64, HashMap<u64, Entry>)>> = Mutex::new(None);

fn with_infos<R>(f: impl FnOnce(&mut u64, &mut HashMap<u64, Entry>) -> R) -> R {
    let mut guard = INFOS
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    let (next, table) = guard.get_or_insert_with(|| (0x7000, HashMap::new()));
    f(next, table)
}

fn create_info(info: *mut *mut c_void, entry: Entry) -> c_int {
    run(|| {
        if info.is_null() {
            return Err(INVALID_VALUE);
        }
        let id = with_infos(|next, table| {
            *next += 16;
            table.insert(*next, entry);
            *next
        });
        out(info, id as *mut c_void)
    })
}

fn destroy_info(info: *mut c_void, host: bool, method: Method) -> c_int {
    run(|| {
        let removed = with_infos(|_, table| match table.get(&(info as u64)) {
            Some(Entry::Host(i)) if host && i.method() == method => table.remove(&(info as u64)),
            Some(Entry::Device(m, _)) if !host && *m == method => table.remove(&(info as u64)),
            _ => None,
        });
        match removed {
            None => Err(INVALID_VALUE),
            Some(Entry::Host(_) | Entry::Lu(_)) => Ok(()),
            Some(Entry::Device(..)) => {
                // The server holds it only after an analysis; either way it is gone.
                let _ = crate::math::call(
                    0,
                    Library::Solver,
                    &Call::SpInfoDestroy { info: info as u64 },
                );
                Ok(())
            }
        }
    })
}

/// Runs `f` on the host info `info` made for `method`.
fn with_host_info<R>(
    info: *mut c_void,
    method: Method,
    f: impl FnOnce(&mut Info) -> Result<R, c_int>,
) -> Result<R, c_int> {
    with_infos(|_, table| match table.get_mut(&(info as u64)) {
        Some(Entry::Host(i)) if i.method() == method => f(i),
        _ => Err(INVALID_VALUE),
    })
}

/// Checks that `info` is a device info made for `method`.
fn device_info(info: *mut c_void, method: Method) -> Status {
    with_infos(|_, table| match table.get(&(info as u64)) {
        Some(Entry::Device(m, _)) if *m == method => Ok(()),
        _ => Err(INVALID_VALUE),
    })
}

/// The rows of the device info `info` made for `method`, once analyzed.
fn device_rows(info: *mut c_void, method: Method) -> Result<c_int, c_int> {
    with_infos(|_, table| match table.get(&(info as u64)) {
        Some(&Entry::Device(m, rows)) if m == method && rows > 0 => Ok(rows),
        _ => Err(INVALID_VALUE),
    })
}

fn wire_method(method: Method) -> u8 {
    match method {
        Method::Lu => SP_LU,
        Method::Cholesky => SP_CHOL,
        Method::Qr => SP_QR,
    }
}

macro_rules! info_objects {
    ($(fn $create:ident / $destroy:ident ($host:expr, $method:expr);)*) => {$(
        #[no_mangle]
        pub extern "C" fn $create(info: *mut *mut c_void) -> c_int {
            let entry = if $host {
                Entry::Host(Box::new(Info::new($method)))
            } else {
                Entry::Device($method, 0)
            };
            create_info(info, entry)
        }

        #[no_mangle]
        pub extern "C" fn $destroy(info: *mut c_void) -> c_int {
            destroy_info(info, $host, $method)
        }
    )*};
}

info_objects! {
    fn cusolverSpCreateCsrcholInfoHost / cusolverSpDestroyCsrcholInfoHost (true, Method::Cholesky);
    fn cusolverSpCreateCsrcholInfo / cusolverSpDestroyCsrcholInfo (false, Method::Cholesky);
    fn cusolverSpCreateCsrqrInfoHost / cusolverSpDestroyCsrqrInfoHost (true, Method::Qr);
    fn cusolverSpCreateCsrqrInfo / cusolverSpDestroyCsrqrInfo (false, Method::Qr);
}

/// `Xcsr{chol,qr}Analysis(Host)`.
#[allow(clippy::too_many_arguments)]
fn analysis(
    handle: Handle,
    host: bool,
    method: Method,
    (m, n, nnz): (c_int, c_int, c_int),
    descr: *const c_void,
    rowptr: *const c_int,
    colind: *const c_int,
    info: *mut c_void,
) -> c_int {
    run(|| {
        let stream = check_handle(handle)?;
        if m <= 0 || n <= 0 || nnz <= 0 {
            return Err(INVALID_VALUE);
        }
        if host {
            let pattern = host_pattern((m, n, nnz), descr, rowptr, colind)?;
            return with_host_info(info, method, |i| i.analysis(pattern).map_err(sp_status));
        }
        let base = general_base(descr)?;
        device_info(info, method)?;
        sync(
            stream,
            &Call::SpAnalysis {
                handle: handle as u64,
                info: info as u64,
                method: wire_method(method),
                m,
                n,
                nnz,
                base,
                rowptr: rowptr as u64,
                colind: colind as u64,
            },
        )?;
        with_infos(|_, table| {
            if let Some(Entry::Device(_, rows)) = table.get_mut(&(info as u64)) {
                *rows = m;
            }
        });
        Ok(())
    })
}

/// `?csr{chol,qr}BufferInfo(Host)`.
fn buffer_info(
    handle: Handle,
    host: bool,
    method: Method,
    dtype: u8,
    info: *mut c_void,
    (internal, workspace): (*mut usize, *mut usize),
) -> c_int {
    run(|| {
        let stream = check_handle(handle)?;
        if internal.is_null() || workspace.is_null() {
            return Err(INVALID_VALUE);
        }
        let (data, work) = if host {
            with_host_info(info, method, |i| i.buffer_info().map_err(sp_status))?
        } else {
            device_info(info, method)?;
            let reply = sync(
                stream,
                &Call::SpBufferInfo {
                    handle: handle as u64,
                    info: info as u64,
                    dtype,
                },
            )?;
            let word = |k: usize| {
                reply
                    .get(8 * k..8 * k + 8)
                    .and_then(|b| <[u8; 8]>::try_from(b).ok())
                    .map(u64::from_le_bytes)
                    .and_then(|v| usize::try_from(v).ok())
                    .ok_or(INTERNAL_ERROR)
            };
            (word(0)?, word(1)?)
        };
        out(internal, data)?;
        out(workspace, work)
    })
}

/// `?csr{chol,qr}ZeroPivot(Host)`.
fn zero_pivot(
    handle: Handle,
    host: bool,
    method: Method,
    info: *mut c_void,
    tol: f64,
    at: *mut c_int,
) -> c_int {
    run(|| {
        let stream = check_handle(handle)?;
        if at.is_null() {
            return Err(INVALID_VALUE);
        }
        let found = if host {
            with_host_info(info, method, |i| i.zero_pivot(tol).map_err(sp_status)).map(position)?
        } else {
            device_info(info, method)?;
            let call = Call::SpZeroPivot {
                handle: handle as u64,
                info: info as u64,
                tol,
            };
            reply_i32(&sync(stream, &call)?)?
        };
        out(at, found)
    })
}

/// `?csrcholFactor(Host)`.
#[allow(clippy::too_many_arguments)]
fn chol_factor(
    handle: Handle,
    host: bool,
    dtype: u8,
    (n, nnz): (c_int, c_int),
    descr: *const c_void,
    val: *const c_void,
    rowptr: *const c_int,
    colind: *const c_int,
    info: *mut c_void,
    buffer: *mut c_void,
) -> c_int {
    run(|| {
        check_handle(handle)?;
        if n <= 0 || nnz <= 0 || buffer.is_null() {
            return Err(INVALID_VALUE);
        }
        general_base(descr)?;
        let _ = (rowptr, colind); // the analysis's pattern is used
        if host {
            let values = host_values(val, count(nnz)?, dtype)?;
            return with_host_info(info, Method::Cholesky, |i| {
                check_dims(i, n, n, Some(nnz))?;
                i.factor(Some(values)).map_err(sp_status)
            });
        }
        device_info(info, Method::Cholesky)?;
        if val.is_null() {
            return Err(INVALID_VALUE);
        }
        queue(handle, |h| Call::SpFactor {
            handle: h,
            info: info as u64,
            dtype,
            m: n,
            n,
            nnz,
            val: val as u64,
            b: 0,
            x: 0,
        })
    })
}

fn check_dims(info: &Info, m: c_int, n: c_int, nnz: Option<c_int>) -> Status {
    let dims_match = info.dims() == Some((count(m)?, count(n)?));
    let nnz_match = match (nnz, info.pattern()) {
        (Some(nnz), Some(p)) => count(nnz)? == p.nnz(),
        _ => true,
    };
    if dims_match && nnz_match {
        Ok(())
    } else {
        Err(INVALID_VALUE)
    }
}

fn queue(handle: Handle, build: impl FnOnce(u64) -> Call) -> Status {
    match submit(handle, None, build) {
        SUCCESS => Ok(()),
        status => Err(status),
    }
}

/// `?csr{chol,qr}Solve(Host)` and QR's factor-and-solve.
#[allow(clippy::too_many_arguments)]
fn solve(
    handle: Handle,
    host: bool,
    method: Method,
    dtype: u8,
    (m, n): (c_int, c_int),
    b: *const c_void,
    x: *mut c_void,
    info: *mut c_void,
    buffer: *mut c_void,
) -> c_int {
    run(|| {
        check_handle(handle)?;
        if m <= 0 || n <= 0 || buffer.is_null() || b.is_null() || x.is_null() {
            return Err(INVALID_VALUE);
        }
        if host {
            let rhs = host_values(b, count(m)?, dtype)?;
            let sol = with_host_info(info, method, |i| {
                check_dims(i, m, n, None)?;
                i.solve(&rhs).map_err(sp_status)
            })?;
            return write_values(x, &sol, dtype);
        }
        device_info(info, method)?;
        queue(handle, |h| Call::SpSolve {
            handle: h,
            info: info as u64,
            dtype,
            m,
            n,
            b: b as u64,
            x: x as u64,
        })
    })
}

/// `?csrqrSetup(Host)`.
#[allow(clippy::too_many_arguments)]
fn qr_setup(
    handle: Handle,
    host: bool,
    dtype: u8,
    (m, n, nnz): (c_int, c_int, c_int),
    descr: *const c_void,
    val: *const c_void,
    mu: C,
    info: *mut c_void,
) -> c_int {
    run(|| {
        check_handle(handle)?;
        if m <= 0 || n <= 0 || nnz <= 0 {
            return Err(INVALID_VALUE);
        }
        general_base(descr)?;
        if host {
            let values = host_values(val, count(nnz)?, dtype)?;
            return with_host_info(info, Method::Qr, |i| {
                check_dims(i, m, n, Some(nnz))?;
                i.setup(values, mu).map_err(sp_status)
            });
        }
        device_info(info, Method::Qr)?;
        if val.is_null() {
            return Err(INVALID_VALUE);
        }
        queue(handle, |h| Call::SpSetup {
            handle: h,
            info: info as u64,
            dtype,
            m,
            n,
            nnz,
            val: val as u64,
            mu_re: mu.re,
            mu_im: mu.im,
        })
    })
}

/// `?csrqrFactor(Host)`: factors the setup's matrix; solves too when `b`
/// and `x` are both given.
#[allow(clippy::too_many_arguments)]
fn qr_factor(
    handle: Handle,
    host: bool,
    dtype: u8,
    (m, n, nnz): (c_int, c_int, c_int),
    b: *const c_void,
    x: *mut c_void,
    info: *mut c_void,
    buffer: *mut c_void,
) -> c_int {
    run(|| {
        check_handle(handle)?;
        if m <= 0 || n <= 0 || nnz <= 0 || buffer.is_null() {
            return Err(INVALID_VALUE);
        }
        let solves = !b.is_null() && !x.is_null();
        if host {
            let rhs = if solves {
                Some(host_values(b, count(m)?, dtype)?)
            } else {
                None
            };
            let sol = with_host_info(info, Method::Qr, |i| {
                check_dims(i, m, n, Some(nnz))?;
                i.factor(None).map_err(sp_status)?;
                rhs.map(|rhs| i.solve(&rhs).map_err(sp_status)).transpose()
            })?;
            return match sol {
                Some(sol) => write_values(x, &sol, dtype),
                None => Ok(()),
            };
        }
        device_info(info, Method::Qr)?;
        queue(handle, |h| Call::SpFactor {
            handle: h,
            info: info as u64,
            dtype,
            m,
            n,
            nnz,
            val: 0,
            b: if solves { b as u64 } else { 0 },
            x: if solves { x as u64 } else { 0 },
        })
    })
}

/// `cuComplex` by value.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct Complex32 {
    re: f32,
    im: f32,
}

/// `cuDoubleComplex` by value.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct Complex64 {
    re: f64,
    im: f64,
}

/// Scalars of the element types: the tolerance's type and `mu`'s.
trait Scalar: Copy {
    fn complex(self) -> C;
}

impl Scalar for f32 {
    fn complex(self) -> C {
        C::new(f64::from(self), 0.0)
    }
}

impl Scalar for f64 {
    fn complex(self) -> C {
        C::new(self, 0.0)
    }
}

impl Scalar for Complex32 {
    fn complex(self) -> C {
        C::new(f64::from(self.re), f64::from(self.im))
    }
}

impl Scalar for Complex64 {
    fn complex(self) -> C {
        C::new(self.re, self.im)
    }
}

macro_rules! sparse_routines {
    (
        dtype $dtype:expr, real $real:ty, scalar $scalar:ty;
        fn $lu_host:ident / $qr_host:ident / $chol_host:ident / $qr:ident / $chol:ident (lsv);
        fn $chol_buf_h:ident / $chol_fac_h:ident / $chol_zp_h:ident / $chol_solve_h:ident (chol host);
        fn $chol_buf:ident / $chol_fac:ident / $chol_zp:ident / $chol_solve:ident (chol);
        fn $qr_buf_h:ident / $qr_setup_h:ident / $qr_fac_h:ident / $qr_zp_h:ident / $qr_solve_h:ident (qr host);
        fn $qr_buf:ident / $qr_setup:ident / $qr_fac:ident / $qr_zp:ident / $qr_solve:ident (qr);
    ) => {
        sparse_routines!(@lsv $dtype, $real, $lu_host, lsv_host, SP_LU);
        sparse_routines!(@lsv $dtype, $real, $qr_host, lsv_host, SP_QR);
        sparse_routines!(@lsv $dtype, $real, $chol_host, lsv_host, SP_CHOL);
        sparse_routines!(@lsv $dtype, $real, $qr, lsv_device, SP_QR);
        sparse_routines!(@lsv $dtype, $real, $chol, lsv_device, SP_CHOL);
        sparse_routines!(@chol $dtype, $real, true, $chol_buf_h, $chol_fac_h, $chol_zp_h, $chol_solve_h);
        sparse_routines!(@chol $dtype, $real, false, $chol_buf, $chol_fac, $chol_zp, $chol_solve);
        sparse_routines!(@qr $dtype, $real, $scalar, true, $qr_buf_h, $qr_setup_h, $qr_fac_h, $qr_zp_h, $qr_solve_h);
        sparse_routines!(@qr $dtype, $real, $scalar, false, $qr_buf, $qr_setup, $qr_fac, $qr_zp, $qr_solve);
    };
    (@lsv $dtype:expr, $real:ty, $name:ident, $body:ident, $method:expr) => {
        #[no_mangle]
        #[allow(clippy::too_many_arguments)]
        pub extern "C" fn $name(
            handle: Handle,
            n: c_int,
            nnz: c_int,
            descr: *const c_void,
            val: *const c_void,
            rowptr: *const c_int,
            colind: *const c_int,
            b: *const c_void,
            tol: $real,
            reorder: c_int,
            x: *mut c_void,
            singularity: *mut c_int,
        ) -> c_int {
            let operands = Lsv {
                n,
                nnz,
                descr,
                val,
                rowptr,
                colind,
                b,
                tol: f64::from(tol),
                reorder,
                x,
                singularity,
            };
            $body(handle, $method, $dtype, &operands)
        }
    };
    (@chol $dtype:expr, $real:ty, $host:expr, $buf:ident, $fac:ident, $zp:ident, $solve:ident) => {
        #[no_mangle]
        #[allow(clippy::too_many_arguments)]
        pub extern "C" fn $buf(
            handle: Handle,
            _n: c_int,
            _nnz: c_int,
            _descr: *const c_void,
            _val: *const c_void,
            _rowptr: *const c_int,
            _colind: *const c_int,
            info: *mut c_void,
            internal: *mut usize,
            workspace: *mut usize,
        ) -> c_int {
            buffer_info(handle, $host, Method::Cholesky, $dtype, info, (internal, workspace))
        }

        #[no_mangle]
        #[allow(clippy::too_many_arguments)]
        pub extern "C" fn $fac(
            handle: Handle,
            n: c_int,
            nnz: c_int,
            descr: *const c_void,
            val: *const c_void,
            rowptr: *const c_int,
            colind: *const c_int,
            info: *mut c_void,
            buffer: *mut c_void,
        ) -> c_int {
            chol_factor(handle, $host, $dtype, (n, nnz), descr, val, rowptr, colind, info, buffer)
        }

        #[no_mangle]
        pub extern "C" fn $zp(handle: Handle, info: *mut c_void, tol: $real, at: *mut c_int) -> c_int {
            zero_pivot(handle, $host, Method::Cholesky, info, f64::from(tol), at)
        }

        #[no_mangle]
        pub extern "C" fn $solve(
            handle: Handle,
            n: c_int,
            b: *const c_void,
            x: *mut c_void,
            info: *mut c_void,
            buffer: *mut c_void,
        ) -> c_int {
            solve(handle, $host, Method::Cholesky, $dtype, (n, n), b, x, info, buffer)
        }
    };
    (@qr $dtype:expr, $real:ty, $scalar:ty, $host:expr, $buf:ident, $setup:ident, $fac:ident, $zp:ident, $solve:ident) => {
        #[no_mangle]
        #[allow(clippy::too_many_arguments)]
        pub extern "C" fn $buf(
            handle: Handle,
            _m: c_int,
            _n: c_int,
            _nnz: c_int,
            _descr: *const c_void,
            _val: *const c_void,
            _rowptr: *const c_int,
            _colind: *const c_int,
            info: *mut c_void,
            internal: *mut usize,
            workspace: *mut usize,
        ) -> c_int {
            buffer_info(handle, $host, Method::Qr, $dtype, info, (internal, workspace))
        }

        #[no_mangle]
        #[allow(clippy::too_many_arguments)]
        pub extern "C" fn $setup(
            handle: Handle,
            m: c_int,
            n: c_int,
            nnz: c_int,
            descr: *const c_void,
            val: *const c_void,
            _rowptr: *const c_int,
            _colind: *const c_int,
            mu: $scalar,
            info: *mut c_void,
        ) -> c_int {
            qr_setup(handle, $host, $dtype, (m, n, nnz), descr, val, Scalar::complex(mu), info)
        }

        #[no_mangle]
        #[allow(clippy::too_many_arguments)]
        pub extern "C" fn $fac(
            handle: Handle,
            m: c_int,
            n: c_int,
            nnz: c_int,
            b: *const c_void,
            x: *mut c_void,
            info: *mut c_void,
            buffer: *mut c_void,
        ) -> c_int {
            qr_factor(handle, $host, $dtype, (m, n, nnz), b, x, info, buffer)
        }

        #[no_mangle]
        pub extern "C" fn $zp(handle: Handle, info: *mut c_void, tol: $real, at: *mut c_int) -> c_int {
            zero_pivot(handle, $host, Method::Qr, info, f64::from(tol), at)
        }

        #[no_mangle]
        #[allow(clippy::too_many_arguments)]
        pub extern "C" fn $solve(
            handle: Handle,
            m: c_int,
            n: c_int,
            b: *const c_void,
            x: *mut c_void,
            info: *mut c_void,
            buffer: *mut c_void,
        ) -> c_int {
            solve(handle, $host, Method::Qr, $dtype, (m, n), b, x, info, buffer)
        }
    };
}

#[no_mangle]
#[allow(clippy::too_many_arguments)]
pub extern "C" fn cusolverSpXcsrqrAnalysisHost(
    handle: Handle,
    m: c_int,
    n: c_int,
    nnz: c_int,
    descr: *const c_void,
    rowptr: *const c_int,
    colind: *const c_int,
    info: *mut c_void,
) -> c_int {
    analysis(
        handle,
        true,
        Method::Qr,
        (m, n, nnz),
        descr,
        rowptr,
        colind,
        info,
    )
}

#[no_mangle]
#[allow(clippy::too_many_arguments)]
pub extern "C" fn cusolverSpXcsrqrAnalysis(
    handle: Handle,
    m: c_int,
    n: c_int,
    nnz: c_int,
    descr: *const c_void,
    rowptr: *const c_int,
    colind: *const c_int,
    info: *mut c_void,
) -> c_int {
    analysis(
        handle,
        false,
        Method::Qr,
        (m, n, nnz),
        descr,
        rowptr,
        colind,
        info,
    )
}

// Cholesky's analyses take n only.
#[no_mangle]
pub extern "C" fn cusolverSpXcsrcholAnalysisHost(
    handle: Handle,
    n: c_int,
    nnz: c_int,
    descr: *const c_void,
    rowptr: *const c_int,
    colind: *const c_int,
    info: *mut c_void,
) -> c_int {
    analysis(
        handle,
        true,
        Method::Cholesky,
        (n, n, nnz),
        descr,
        rowptr,
        colind,
        info,
    )
}

#[no_mangle]
pub extern "C" fn cusolverSpXcsrcholAnalysis(
    handle: Handle,
    n: c_int,
    nnz: c_int,
    descr: *const c_void,
    rowptr: *const c_int,
    colind: *const c_int,
    info: *mut c_void,
) -> c_int {
    analysis(
        handle,
        false,
        Method::Cholesky,
        (n, n, nnz),
        descr,
        rowptr,
        colind,
        info,
    )
}

sparse_routines! {
    dtype 0, real f32, scalar f32;
    fn cusolverSpScsrlsvluHost / cusolverSpScsrlsvqrHost / cusolverSpScsrlsvcholHost / cusolverSpScsrlsvqr / cusolverSpScsrlsvchol (lsv);
    fn cusolverSpScsrcholBufferInfoHost / cusolverSpScsrcholFactorHost / cusolverSpScsrcholZeroPivotHost / cusolverSpScsrcholSolveHost (chol host);
    fn cusolverSpScsrcholBufferInfo / cusolverSpScsrcholFactor / cusolverSpScsrcholZeroPivot / cusolverSpScsrcholSolve (chol);
    fn cusolverSpScsrqrBufferInfoHost / cusolverSpScsrqrSetupHost / cusolverSpScsrqrFactorHost / cusolverSpScsrqrZeroPivotHost / cusolverSpScsrqrSolveHost (qr host);
    fn cusolverSpScsrqrBufferInfo / cusolverSpScsrqrSetup / cusolverSpScsrqrFactor / cusolverSpScsrqrZeroPivot / cusolverSpScsrqrSolve (qr);
}

sparse_routines! {
    dtype 1, real f64, scalar f64;
    fn cusolverSpDcsrlsvluHost / cusolverSpDcsrlsvqrHost / cusolverSpDcsrlsvcholHost / cusolverSpDcsrlsvqr / cusolverSpDcsrlsvchol (lsv);
    fn cusolverSpDcsrcholBufferInfoHost / cusolverSpDcsrcholFactorHost / cusolverSpDcsrcholZeroPivotHost / cusolverSpDcsrcholSolveHost (chol host);
    fn cusolverSpDcsrcholBufferInfo / cusolverSpDcsrcholFactor / cusolverSpDcsrcholZeroPivot / cusolverSpDcsrcholSolve (chol);
    fn cusolverSpDcsrqrBufferInfoHost / cusolverSpDcsrqrSetupHost / cusolverSpDcsrqrFactorHost / cusolverSpDcsrqrZeroPivotHost / cusolverSpDcsrqrSolveHost (qr host);
    fn cusolverSpDcsrqrBufferInfo / cusolverSpDcsrqrSetup / cusolverSpDcsrqrFactor / cusolverSpDcsrqrZeroPivot / cusolverSpDcsrqrSolve (qr);
}

sparse_routines! {
    dtype 2, real f32, scalar Complex32;
    fn cusolverSpCcsrlsvluHost / cusolverSpCcsrlsvqrHost / cusolverSpCcsrlsvcholHost / cusolverSpCcsrlsvqr / cusolverSpCcsrlsvchol (lsv);
    fn cusolverSpCcsrcholBufferInfoHost / cusolverSpCcsrcholFactorHost / cusolverSpCcsrcholZeroPivotHost / cusolverSpCcsrcholSolveHost (chol host);
    fn cusolverSpCcsrcholBufferInfo / cusolverSpCcsrcholFactor / cusolverSpCcsrcholZeroPivot / cusolverSpCcsrcholSolve (chol);
    fn cusolverSpCcsrqrBufferInfoHost / cusolverSpCcsrqrSetupHost / cusolverSpCcsrqrFactorHost / cusolverSpCcsrqrZeroPivotHost / cusolverSpCcsrqrSolveHost (qr host);
    fn cusolverSpCcsrqrBufferInfo / cusolverSpCcsrqrSetup / cusolverSpCcsrqrFactor / cusolverSpCcsrqrZeroPivot / cusolverSpCcsrqrSolve (qr);
}

sparse_routines! {
    dtype 3, real f64, scalar Complex64;
    fn cusolverSpZcsrlsvluHost / cusolverSpZcsrlsvqrHost / cusolverSpZcsrlsvcholHost / cusolverSpZcsrlsvqr / cusolverSpZcsrlsvchol (lsv);
    fn cusolverSpZcsrcholBufferInfoHost / cusolverSpZcsrcholFactorHost / cusolverSpZcsrcholZeroPivotHost / cusolverSpZcsrcholSolveHost (chol host);
    fn cusolverSpZcsrcholBufferInfo / cusolverSpZcsrcholFactor / cusolverSpZcsrcholZeroPivot / cusolverSpZcsrcholSolve (chol);
    fn cusolverSpZcsrqrBufferInfoHost / cusolverSpZcsrqrSetupHost / cusolverSpZcsrqrFactorHost / cusolverSpZcsrqrZeroPivotHost / cusolverSpZcsrqrSolveHost (qr host);
    fn cusolverSpZcsrqrBufferInfo / cusolverSpZcsrqrSetup / cusolverSpZcsrqrFactor / cusolverSpZcsrqrZeroPivot / cusolverSpZcsrqrSolve (qr);
}
