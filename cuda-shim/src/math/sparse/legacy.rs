//! The legacy API that programs still call: `Xcoosort`, `Xcsrsort`,
//! `Xcscsort` and `CreateIdentityPermutation` (CuPy sorts with them),
//! `Gather` and `Scatter` (with which CuPy applies the permutation), and
//! the incomplete factorizations `csrilu02` and `csric02` with their info
//! objects (NVIDIA's preconditioned conjugate gradient sample).
//!
//! The info objects live on the server: the zero pivot is found by work
//! queued on the handle's stream, and `X*02_zeroPivot` reads it there
//! after that work. The client keeps the pivot boost, sent with each
//! factorization.

use std::os::raw::{c_int, c_void};

use rcud_proto::math::sparse::{Boost, Call, SpVec};

use super::compute::scalar;
use super::descr::legacy_descr;
use super::{
    call_async, call_sync, check_dn_vec, check_sp_vec, device_range, dn_vec, get, handle, insert,
    out, reply_i64, run, sp_vec, update, Handle, Object, Status, INTERNAL_ERROR, INVALID_VALUE,
    MATRIX_TYPE_NOT_SUPPORTED, ZERO_PIVOT,
};

/// See `compute::WORKSPACE`: no buffer is needed.
const WORKSPACE: usize = 16;
/// `CUSPARSE_MATRIX_TYPE_GENERAL`, the only type the factorizations take.
const MATRIX_TYPE_GENERAL: c_int = 0;

/// `count` 32-bit indices in bytes; INVALID_VALUE for a negative count.
fn int_bytes(count: c_int) -> Result<u64, c_int> {
    u64::try_from(count)
        .map(|c| c * 4)
        .map_err(|_| INVALID_VALUE)
}

/// The handle and the checked sizes every sorting call takes.
fn sort_args(h: *const c_void, m: c_int, n: c_int, nnz: c_int) -> Result<Handle, c_int> {
    let handle = handle(h)?;
    if m < 0 || n < 0 || nnz < 0 {
        return Err(INVALID_VALUE);
    }
    Ok(handle)
}

/// A permutation array of `nnz` entries; NULL means none is wanted.
fn permutation(p: *const c_int, nnz: c_int) -> Result<u64, c_int> {
    if !p.is_null() {
        device_range(p as u64, int_bytes(nnz)?)?;
    }
    Ok(p as u64)
}

#[no_mangle]
pub extern "C" fn cusparseCreateIdentityPermutation(
    h: *mut c_void,
    n: c_int,
    p: *mut c_int,
) -> c_int {
    run(|| {
        let handle = sort_args(h, 0, 0, n)?;
        device_range(p as u64, int_bytes(n)?)?;
        let call = Call::IdentityPermutation {
            handle: handle.server,
            n,
            p: p as u64,
        };
        call_async(&handle, &call)
    })
}

/// `cusparseXcoosort_bufferSizeExt`, `Xcsrsort_...` and `Xcscsort_...`.
fn sort_buffer_size(h: *const c_void, m: c_int, n: c_int, nnz: c_int, size: *mut usize) -> c_int {
    run(|| {
        sort_args(h, m, n, nnz)?;
        out(size, WORKSPACE)
    })
}

#[no_mangle]
pub extern "C" fn cusparseXcoosort_bufferSizeExt(
    h: *mut c_void,
    m: c_int,
    n: c_int,
    nnz: c_int,
    _rows: *const c_int,
    _cols: *const c_int,
    size: *mut usize,
) -> c_int {
    sort_buffer_size(h, m, n, nnz, size)
}

#[no_mangle]
pub extern "C" fn cusparseXcsrsort_bufferSizeExt(
    h: *mut c_void,
    m: c_int,
    n: c_int,
    nnz: c_int,
    _offsets: *const c_int,
    _columns: *const c_int,
    size: *mut usize,
) -> c_int {
    sort_buffer_size(h, m, n, nnz, size)
}

#[no_mangle]
pub extern "C" fn cusparseXcscsort_bufferSizeExt(
    h: *mut c_void,
    m: c_int,
    n: c_int,
    nnz: c_int,
    _offsets: *const c_int,
    _rows: *const c_int,
    size: *mut usize,
) -> c_int {
    sort_buffer_size(h, m, n, nnz, size)
}

#[allow(clippy::too_many_arguments)]
fn coo_sort(
    h: *const c_void,
    by_row: bool,
    m: c_int,
    n: c_int,
    nnz: c_int,
    rows: *mut c_int,
    cols: *mut c_int,
    p: *mut c_int,
) -> c_int {
    run(|| {
        let handle = sort_args(h, m, n, nnz)?;
        device_range(rows as u64, int_bytes(nnz)?)?;
        device_range(cols as u64, int_bytes(nnz)?)?;
        let call = Call::CooSort {
            handle: handle.server,
            by_row,
            m,
            n,
            nnz,
            rows: rows as u64,
            cols: cols as u64,
            p: permutation(p, nnz)?,
        };
        call_async(&handle, &call)
    })
}

#[no_mangle]
#[allow(clippy::too_many_arguments)]
pub extern "C" fn cusparseXcoosortByRow(
    h: *mut c_void,
    m: c_int,
    n: c_int,
    nnz: c_int,
    rows: *mut c_int,
    cols: *mut c_int,
    p: *mut c_int,
    _buffer: *mut c_void,
) -> c_int {
    coo_sort(h, true, m, n, nnz, rows, cols, p)
}

#[no_mangle]
#[allow(clippy::too_many_arguments)]
pub extern "C" fn cusparseXcoosortByColumn(
    h: *mut c_void,
    m: c_int,
    n: c_int,
    nnz: c_int,
    rows: *mut c_int,
    cols: *mut c_int,
    p: *mut c_int,
    _buffer: *mut c_void,
) -> c_int {
    coo_sort(h, false, m, n, nnz, rows, cols, p)
}

/// `Xcsrsort` (`csr`) and `Xcscsort`: the minor indices sorted within
/// each row (column).
#[allow(clippy::too_many_arguments)]
fn compressed_sort(
    h: *const c_void,
    csr: bool,
    m: c_int,
    n: c_int,
    nnz: c_int,
    descr: *const c_void,
    offsets: *const c_int,
    indices: *mut c_int,
    p: *mut c_int,
) -> c_int {
    run(|| {
        let handle = sort_args(h, m, n, nnz)?;
        let descr = legacy_descr(descr)?;
        let (major, minor) = if csr { (m, n) } else { (n, m) };
        device_range(offsets as u64, int_bytes(major + 1)?)?;
        device_range(indices as u64, int_bytes(nnz)?)?;
        let call = Call::CompressedSort {
            handle: handle.server,
            major,
            minor,
            nnz,
            base: u8::try_from(descr.base).map_err(|_| INVALID_VALUE)?,
            offsets: offsets as u64,
            indices: indices as u64,
            p: permutation(p, nnz)?,
        };
        call_async(&handle, &call)
    })
}

#[no_mangle]
#[allow(clippy::too_many_arguments)]
pub extern "C" fn cusparseXcsrsort(
    h: *mut c_void,
    m: c_int,
    n: c_int,
    nnz: c_int,
    descr: *const c_void,
    offsets: *const c_int,
    columns: *mut c_int,
    p: *mut c_int,
    _buffer: *mut c_void,
) -> c_int {
    compressed_sort(h, true, m, n, nnz, descr, offsets, columns, p)
}

#[no_mangle]
#[allow(clippy::too_many_arguments)]
pub extern "C" fn cusparseXcscsort(
    h: *mut c_void,
    m: c_int,
    n: c_int,
    nnz: c_int,
    descr: *const c_void,
    offsets: *const c_int,
    rows: *mut c_int,
    p: *mut c_int,
    _buffer: *mut c_void,
) -> c_int {
    compressed_sort(h, false, m, n, nnz, descr, offsets, rows, p)
}

/// The operands of Gather and Scatter: the same size and value type.
fn gather_args(
    h: *const c_void,
    sparse: *const c_void,
    dense: *const c_void,
) -> Result<(Handle, SpVec, rcud_proto::math::sparse::DnVec), c_int> {
    let handle = handle(h)?;
    let (x, y) = (sp_vec(sparse)?, dn_vec(dense)?);
    if x.size != y.size || x.value_type != y.value_type {
        return Err(INVALID_VALUE);
    }
    check_sp_vec(&x)?;
    check_dn_vec(&y)?;
    Ok((handle, x, y))
}

#[no_mangle]
pub extern "C" fn cusparseGather(h: *mut c_void, y: *const c_void, x: *mut c_void) -> c_int {
    run(|| {
        let (handle, x, y) = gather_args(h, x, y)?;
        let call = Call::Gather {
            handle: handle.server,
            y,
            x,
        };
        call_async(&handle, &call)
    })
}

#[no_mangle]
pub extern "C" fn cusparseScatter(h: *mut c_void, x: *const c_void, y: *mut c_void) -> c_int {
    run(|| {
        let (handle, x, y) = gather_args(h, x, y)?;
        let call = Call::Scatter {
            handle: handle.server,
            x,
            y,
        };
        call_async(&handle, &call)
    })
}

// --- Incomplete factorizations ----------------------------------------------

/// The info object named `key`, of kind `ic`: its server id and boost.
fn info(key: *const c_void, ic: bool) -> Result<(u64, Option<Boost>), c_int> {
    match get(key) {
        Some(Object::Info {
            server,
            ic: kind,
            boost,
        }) if kind == ic => Ok((server, boost)),
        _ => Err(INVALID_VALUE),
    }
}

fn create_info(out_ptr: *mut *mut c_void, ic: bool) -> c_int {
    run(|| {
        if out_ptr.is_null() {
            return Err(INVALID_VALUE);
        }
        let reply = call_sync(0, &Call::CreateInfo { ic })?;
        let server = u64::try_from(reply_i64(&reply)?).map_err(|_| INTERNAL_ERROR)?;
        let key = insert(Object::Info {
            server,
            ic,
            boost: None,
        });
        out(out_ptr, key as *mut c_void)
    })
}

fn destroy_info(key: *const c_void, ic: bool) -> c_int {
    run(|| {
        let (server, _) = info(key, ic)?;
        call_sync(0, &Call::DestroyInfo { info: server })?;
        super::remove(key, |o| matches!(o, Object::Info { .. }))
    })
}

#[no_mangle]
pub extern "C" fn cusparseCreateCsrilu02Info(info: *mut *mut c_void) -> c_int {
    create_info(info, false)
}

#[no_mangle]
pub extern "C" fn cusparseDestroyCsrilu02Info(info: *mut c_void) -> c_int {
    destroy_info(info, false)
}

#[no_mangle]
pub extern "C" fn cusparseCreateCsric02Info(info: *mut *mut c_void) -> c_int {
    create_info(info, true)
}

#[no_mangle]
pub extern "C" fn cusparseDestroyCsric02Info(info: *mut c_void) -> c_int {
    destroy_info(info, true)
}

/// Everything a `csrilu02` or `csric02` call names, checked: the call
/// (the factorization, or with `analysis` its analysis).
#[allow(clippy::too_many_arguments)]
fn factor_call(
    h: *const c_void,
    m: c_int,
    nnz: c_int,
    descr: *const c_void,
    values: *const c_void,
    offsets: *const c_int,
    columns: *const c_int,
    info_key: *const c_void,
    ic: bool,
    value_type: u8,
    analysis: bool,
) -> Result<(Handle, Call), c_int> {
    let handle = handle(h)?;
    if m < 0 || nnz < 0 {
        return Err(INVALID_VALUE);
    }
    let descr = legacy_descr(descr)?;
    if descr.matrix_type != MATRIX_TYPE_GENERAL {
        return Err(MATRIX_TYPE_NOT_SUPPORTED);
    }
    let (info, boost) = info(info_key, ic)?;
    device_range(offsets as u64, int_bytes(m + 1)?)?;
    device_range(columns as u64, int_bytes(nnz)?)?;
    let size = super::value_size(value_type)?;
    device_range(values as u64, int_bytes(nnz)? / 4 * size)?;
    let call = Call::Factor0 {
        handle: handle.server,
        info,
        ic,
        analysis,
        m,
        nnz,
        base: u8::try_from(descr.base).map_err(|_| INVALID_VALUE)?,
        values: values as u64,
        offsets: offsets as u64,
        columns: columns as u64,
        value_type,
        boost: if ic { None } else { boost },
    };
    Ok((handle, call))
}

/// `cusparseSolvePolicy_t`: NO_LEVEL or USE_LEVEL (only a hint here).
fn policy(p: c_int) -> Status {
    if matches!(p, 0 | 1) {
        Ok(())
    } else {
        Err(INVALID_VALUE)
    }
}

/// `_bufferSize` (an `int`) and `_bufferSizeExt` (a `size_t`) for each
/// type: `fn NAME / NAME_EXT (ic, cudaDataType);`.
macro_rules! buffer_size_fns {
    ($(fn $size:ident / $size_ext:ident ($ic:expr, $ty:expr);)*) => {$(
        #[no_mangle]
        #[allow(clippy::too_many_arguments)]
        pub extern "C" fn $size(
            h: *mut c_void,
            m: c_int,
            nnz: c_int,
            descr: *const c_void,
            values: *mut c_void,
            offsets: *const c_int,
            columns: *const c_int,
            info: *mut c_void,
            size: *mut c_int,
        ) -> c_int {
            run(|| {
                factor_call(h, m, nnz, descr, values, offsets, columns, info, $ic, $ty, true)?;
                out(size, WORKSPACE as c_int)
            })
        }

        #[no_mangle]
        #[allow(clippy::too_many_arguments)]
        pub extern "C" fn $size_ext(
            h: *mut c_void,
            m: c_int,
            nnz: c_int,
            descr: *const c_void,
            values: *mut c_void,
            offsets: *const c_int,
            columns: *const c_int,
            info: *mut c_void,
            size: *mut usize,
        ) -> c_int {
            run(|| {
                factor_call(h, m, nnz, descr, values, offsets, columns, info, $ic, $ty, true)?;
                out(size, WORKSPACE)
            })
        }
    )*};
}

buffer_size_fns! {
    fn cusparseScsrilu02_bufferSize / cusparseScsrilu02_bufferSizeExt (false, 0);
    fn cusparseDcsrilu02_bufferSize / cusparseDcsrilu02_bufferSizeExt (false, 1);
    fn cusparseCcsrilu02_bufferSize / cusparseCcsrilu02_bufferSizeExt (false, 4);
    fn cusparseZcsrilu02_bufferSize / cusparseZcsrilu02_bufferSizeExt (false, 5);
    fn cusparseScsric02_bufferSize / cusparseScsric02_bufferSizeExt (true, 0);
    fn cusparseDcsric02_bufferSize / cusparseDcsric02_bufferSizeExt (true, 1);
    fn cusparseCcsric02_bufferSize / cusparseCcsric02_bufferSizeExt (true, 4);
    fn cusparseZcsric02_bufferSize / cusparseZcsric02_bufferSizeExt (true, 5);
}

/// `_analysis` and the factorization for each type:
/// `fn ANALYSIS / FACTOR (ic, cudaDataType);`.
macro_rules! factor_fns {
    ($(fn $analysis:ident / $factor:ident ($ic:expr, $ty:expr);)*) => {$(
        #[no_mangle]
        #[allow(clippy::too_many_arguments)]
        pub extern "C" fn $analysis(
            h: *mut c_void,
            m: c_int,
            nnz: c_int,
            descr: *const c_void,
            values: *const c_void,
            offsets: *const c_int,
            columns: *const c_int,
            info: *mut c_void,
            solve_policy: c_int,
            _buffer: *mut c_void,
        ) -> c_int {
            run(|| {
                let (handle, call) =
                    factor_call(h, m, nnz, descr, values, offsets, columns, info, $ic, $ty, true)?;
                policy(solve_policy)?;
                call_async(&handle, &call)
            })
        }

        #[no_mangle]
        #[allow(clippy::too_many_arguments)]
        pub extern "C" fn $factor(
            h: *mut c_void,
            m: c_int,
            nnz: c_int,
            descr: *const c_void,
            values: *mut c_void,
            offsets: *const c_int,
            columns: *const c_int,
            info: *mut c_void,
            solve_policy: c_int,
            _buffer: *mut c_void,
        ) -> c_int {
            run(|| {
                let (handle, call) =
                    factor_call(h, m, nnz, descr, values, offsets, columns, info, $ic, $ty, false)?;
                policy(solve_policy)?;
                call_async(&handle, &call)
            })
        }
    )*};
}

factor_fns! {
    fn cusparseScsrilu02_analysis / cusparseScsrilu02 (false, 0);
    fn cusparseDcsrilu02_analysis / cusparseDcsrilu02 (false, 1);
    fn cusparseCcsrilu02_analysis / cusparseCcsrilu02 (false, 4);
    fn cusparseZcsrilu02_analysis / cusparseZcsrilu02 (false, 5);
    fn cusparseScsric02_analysis / cusparseScsric02 (true, 0);
    fn cusparseDcsric02_analysis / cusparseDcsric02 (true, 1);
    fn cusparseCcsric02_analysis / cusparseCcsric02 (true, 4);
    fn cusparseZcsric02_analysis / cusparseZcsric02 (true, 5);
}

/// `cusparse?csrilu02_numericBoost`: kept in the info and sent with each
/// factorization; the threshold is a double, the value of the matrix's
/// type, each in host or device memory by the handle's pointer mode.
fn numeric_boost(
    h: *const c_void,
    key: *mut c_void,
    enable: c_int,
    tol: *const c_void,
    value: *const c_void,
    value_type: u8,
) -> c_int {
    run(|| {
        let handle = handle(h)?;
        info(key, false)?;
        let boost = if enable == 0 {
            None
        } else {
            Some(Boost {
                tol: scalar(&handle, tol, 1)?,
                value: scalar(&handle, value, value_type)?,
            })
        };
        update(key, |o| match o {
            Object::Info { boost: b, .. } => {
                *b = boost;
                Ok(())
            }
            _ => Err(INVALID_VALUE),
        })
    })
}

#[no_mangle]
pub extern "C" fn cusparseScsrilu02_numericBoost(
    h: *mut c_void,
    info: *mut c_void,
    enable: c_int,
    tol: *mut f64,
    value: *mut f32,
) -> c_int {
    numeric_boost(h, info, enable, tol.cast(), value.cast(), 0)
}

#[no_mangle]
pub extern "C" fn cusparseDcsrilu02_numericBoost(
    h: *mut c_void,
    info: *mut c_void,
    enable: c_int,
    tol: *mut f64,
    value: *mut f64,
) -> c_int {
    numeric_boost(h, info, enable, tol.cast(), value.cast(), 1)
}

#[no_mangle]
pub extern "C" fn cusparseCcsrilu02_numericBoost(
    h: *mut c_void,
    info: *mut c_void,
    enable: c_int,
    tol: *mut f64,
    value: *mut [f32; 2],
) -> c_int {
    numeric_boost(h, info, enable, tol.cast(), value.cast(), 4)
}

#[no_mangle]
pub extern "C" fn cusparseZcsrilu02_numericBoost(
    h: *mut c_void,
    info: *mut c_void,
    enable: c_int,
    tol: *mut f64,
    value: *mut [f64; 2],
) -> c_int {
    numeric_boost(h, info, enable, tol.cast(), value.cast(), 5)
}

/// `cusparseX*02_zeroPivot`: waits for the handle's work, then answers
/// `ZERO_PIVOT` with the position (in the matrix's base) of the first
/// zero pivot, or success with -1; the position goes to host or device
/// memory by the pointer mode.
fn zero_pivot(h: *const c_void, key: *const c_void, position: *mut c_int, ic: bool) -> c_int {
    run(|| {
        let handle = handle(h)?;
        let (server, _) = info(key, ic)?;
        if position.is_null() {
            return Err(INVALID_VALUE);
        }
        let device = handle.pointer_mode == 1;
        if device {
            device_range(position as u64, 4)?;
        }
        let call = Call::ZeroPivot {
            handle: handle.server,
            info: server,
            ic,
            device_out: device.then_some(position as u64),
        };
        let found = reply_i64(&call_sync(handle.stream, &call)?)?;
        if !device {
            out(
                position,
                c_int::try_from(found).map_err(|_| INTERNAL_ERROR)?,
            )?;
        }
        if found >= 0 {
            Err(ZERO_PIVOT)
        } else {
            Ok(())
        }
    })
}

#[no_mangle]
pub extern "C" fn cusparseXcsrilu02_zeroPivot(
    h: *mut c_void,
    info: *mut c_void,
    position: *mut c_int,
) -> c_int {
    zero_pivot(h, info, position, false)
}

#[no_mangle]
pub extern "C" fn cusparseXcsric02_zeroPivot(
    h: *mut c_void,
    info: *mut c_void,
    position: *mut c_int,
) -> c_int {
    zero_pivot(h, info, position, true)
}
