//! The generic API's computations: SpMV, SpMM, SpGEMM and SpSV. Each checks
//! what it can on the client (handle, descriptors, shapes, device ranges)
//! and returns cuSPARSE's status at once; the work itself is queued on the
//! handle's stream.

use std::os::raw::{c_int, c_void};

use rcud_proto::math::sparse::{Call, Scalar, SpMat};

use super::{
    call_async, call_sync, check_dn_mat, check_dn_vec, check_sp_mat, device_range, dn_mat, dn_vec,
    get, handle, input, insert, out, remove, reply_i64, run, sp_mat, update, value_size, Handle,
    Object, FORMAT_CSR, INVALID_VALUE, NOT_SUPPORTED,
};

/// The workspace size the buffer-size queries answer: the computations
/// need none, but applications allocate what is asked, and a zero-byte
/// allocation is an edge case some of them check for.
const WORKSPACE: usize = 16;

fn byte(v: c_int) -> Result<u8, c_int> {
    u8::try_from(v).map_err(|_| INVALID_VALUE)
}

/// `cusparseOperation_t`, checked.
fn operation(op: c_int) -> Result<u8, c_int> {
    if (0..=2).contains(&op) {
        byte(op)
    } else {
        Err(INVALID_VALUE)
    }
}

/// The scalar at `ptr`: read now in host pointer mode (in `compute_type`),
/// its address in device pointer mode.
pub(super) fn scalar(
    handle: &Handle,
    ptr: *const c_void,
    compute_type: u8,
) -> Result<Scalar, c_int> {
    if ptr.is_null() {
        return Err(INVALID_VALUE);
    }
    let size = value_size(compute_type)?;
    if handle.pointer_mode == 1 {
        device_range(ptr as u64, size)?;
        return Ok(Scalar {
            value: (0.0, 0.0),
            device: Some(ptr as u64),
        });
    }
    let value = match compute_type {
        0 => (f64::from(input(ptr.cast::<f32>())?), 0.0),
        1 => (input(ptr.cast::<f64>())?, 0.0),
        4 => {
            let [re, im] = input(ptr.cast::<[f32; 2]>())?;
            (f64::from(re), f64::from(im))
        }
        _ => {
            let [re, im] = input(ptr.cast::<[f64; 2]>())?;
            (re, im)
        }
    };
    Ok(Scalar {
        value,
        device: None,
    })
}

/// Rows and columns of `op(m)`.
fn op_shape(op: u8, rows: i64, cols: i64) -> (i64, i64) {
    if op == 0 {
        (rows, cols)
    } else {
        (cols, rows)
    }
}

/// Everything an SpMV names, checked.
#[allow(clippy::too_many_arguments)]
fn spmv_call(
    h: *const c_void,
    op: c_int,
    alpha: *const c_void,
    a: *const c_void,
    x: *const c_void,
    beta: *const c_void,
    y: *const c_void,
    compute_type: c_int,
) -> Result<(Handle, Call), c_int> {
    let handle = handle(h)?;
    let op = operation(op)?;
    let (a, x, y) = (sp_mat(a)?, dn_vec(x)?, dn_vec(y)?);
    let compute_type = byte(compute_type)?;
    let (rows, cols) = op_shape(op, a.rows, a.cols);
    if x.size != cols || y.size != rows {
        return Err(INVALID_VALUE);
    }
    check_sp_mat(&a)?;
    check_dn_vec(&x)?;
    check_dn_vec(&y)?;
    let alpha = scalar(&handle, alpha, compute_type)?;
    let beta = scalar(&handle, beta, compute_type)?;
    let call = Call::SpMv {
        handle: handle.server,
        op,
        alpha,
        a,
        x,
        beta,
        y,
        compute_type,
    };
    Ok((handle, call))
}

#[no_mangle]
#[allow(clippy::too_many_arguments)]
pub extern "C" fn cusparseSpMV(
    h: *mut c_void,
    op: c_int,
    alpha: *const c_void,
    a: *const c_void,
    x: *const c_void,
    beta: *const c_void,
    y: *mut c_void,
    compute_type: c_int,
    _alg: c_int,
    _buffer: *mut c_void,
) -> c_int {
    run(|| {
        let (handle, call) = spmv_call(h, op, alpha, a, x, beta, y, compute_type)?;
        call_async(&handle, &call)
    })
}

#[no_mangle]
#[allow(clippy::too_many_arguments)]
pub extern "C" fn cusparseSpMV_bufferSize(
    h: *mut c_void,
    op: c_int,
    alpha: *const c_void,
    a: *const c_void,
    x: *const c_void,
    beta: *const c_void,
    y: *mut c_void,
    compute_type: c_int,
    _alg: c_int,
    size: *mut usize,
) -> c_int {
    run(|| {
        spmv_call(h, op, alpha, a, x, beta, y, compute_type)?;
        out(size, WORKSPACE)
    })
}

#[no_mangle]
#[allow(clippy::too_many_arguments)]
pub extern "C" fn cusparseSpMV_preprocess(
    h: *mut c_void,
    op: c_int,
    alpha: *const c_void,
    a: *const c_void,
    x: *const c_void,
    beta: *const c_void,
    y: *mut c_void,
    compute_type: c_int,
    _alg: c_int,
    _buffer: *mut c_void,
) -> c_int {
    // Nothing to prepare: the computation reads the matrix as it is.
    run(|| spmv_call(h, op, alpha, a, x, beta, y, compute_type).map(drop))
}

/// Everything an SpMM names, checked.
#[allow(clippy::too_many_arguments)]
fn spmm_call(
    h: *const c_void,
    op_a: c_int,
    op_b: c_int,
    alpha: *const c_void,
    a: *const c_void,
    b: *const c_void,
    beta: *const c_void,
    c: *const c_void,
    compute_type: c_int,
) -> Result<(Handle, Call), c_int> {
    let handle = handle(h)?;
    let (op_a, op_b) = (operation(op_a)?, operation(op_b)?);
    let (a, b, c) = (sp_mat(a)?, dn_mat(b)?, dn_mat(c)?);
    let compute_type = byte(compute_type)?;
    let (m, k) = op_shape(op_a, a.rows, a.cols);
    let (kb, n) = op_shape(op_b, b.rows, b.cols);
    if k != kb || c.rows != m || c.cols != n {
        return Err(INVALID_VALUE);
    }
    check_sp_mat(&a)?;
    check_dn_mat(&b)?;
    check_dn_mat(&c)?;
    let alpha = scalar(&handle, alpha, compute_type)?;
    let beta = scalar(&handle, beta, compute_type)?;
    let call = Call::SpMm {
        handle: handle.server,
        op_a,
        op_b,
        alpha,
        a,
        b,
        beta,
        c,
        compute_type,
    };
    Ok((handle, call))
}

#[no_mangle]
#[allow(clippy::too_many_arguments)]
pub extern "C" fn cusparseSpMM(
    h: *mut c_void,
    op_a: c_int,
    op_b: c_int,
    alpha: *const c_void,
    a: *const c_void,
    b: *const c_void,
    beta: *const c_void,
    c: *mut c_void,
    compute_type: c_int,
    _alg: c_int,
    _buffer: *mut c_void,
) -> c_int {
    run(|| {
        let (handle, call) = spmm_call(h, op_a, op_b, alpha, a, b, beta, c, compute_type)?;
        call_async(&handle, &call)
    })
}

#[no_mangle]
#[allow(clippy::too_many_arguments)]
pub extern "C" fn cusparseSpMM_bufferSize(
    h: *mut c_void,
    op_a: c_int,
    op_b: c_int,
    alpha: *const c_void,
    a: *const c_void,
    b: *const c_void,
    beta: *const c_void,
    c: *mut c_void,
    compute_type: c_int,
    _alg: c_int,
    size: *mut usize,
) -> c_int {
    run(|| {
        spmm_call(h, op_a, op_b, alpha, a, b, beta, c, compute_type)?;
        out(size, WORKSPACE)
    })
}

#[no_mangle]
#[allow(clippy::too_many_arguments)]
pub extern "C" fn cusparseSpMM_preprocess(
    h: *mut c_void,
    op_a: c_int,
    op_b: c_int,
    alpha: *const c_void,
    a: *const c_void,
    b: *const c_void,
    beta: *const c_void,
    c: *mut c_void,
    compute_type: c_int,
    _alg: c_int,
    _buffer: *mut c_void,
) -> c_int {
    // Nothing to prepare: the computation reads the matrix as it is.
    run(|| spmm_call(h, op_a, op_b, alpha, a, b, beta, c, compute_type).map(drop))
}

// --- SpGEMM ----------------------------------------------------------------

#[no_mangle]
pub extern "C" fn cusparseSpGEMM_createDescr(descr: *mut *mut c_void) -> c_int {
    run(|| {
        if descr.is_null() {
            return Err(INVALID_VALUE);
        }
        out(
            descr,
            insert(Object::SpGemm { computed: false }) as *mut c_void,
        )
    })
}

#[no_mangle]
pub extern "C" fn cusparseSpGEMM_destroyDescr(descr: *mut c_void) -> c_int {
    run(|| remove(descr, |o| matches!(o, Object::SpGemm { .. })))
}

/// The operands of an SpGEMM phase, checked: A and B in CSR, not
/// transposed (cuSPARSE's own limits), C in CSR of the product's shape.
#[allow(clippy::too_many_arguments)]
fn spgemm_operands(
    h: *const c_void,
    op_a: c_int,
    op_b: c_int,
    alpha: *const c_void,
    a: *const c_void,
    b: *const c_void,
    c: *const c_void,
    compute_type: c_int,
    descr: *const c_void,
) -> Result<(Handle, Scalar, SpMat, SpMat, SpMat, u8), c_int> {
    let handle = handle(h)?;
    let (op_a, op_b) = (operation(op_a)?, operation(op_b)?);
    let (a, b, c) = (sp_mat(a)?, sp_mat(b)?, sp_mat(c)?);
    if !matches!(get(descr), Some(Object::SpGemm { .. })) {
        return Err(INVALID_VALUE);
    }
    if op_a != 0 || op_b != 0 {
        return Err(NOT_SUPPORTED);
    }
    if a.format != FORMAT_CSR || b.format != FORMAT_CSR || c.format != FORMAT_CSR {
        return Err(NOT_SUPPORTED);
    }
    if a.cols != b.rows || c.rows != a.rows || c.cols != b.cols {
        return Err(INVALID_VALUE);
    }
    check_sp_mat(&a)?;
    check_sp_mat(&b)?;
    let compute_type = byte(compute_type)?;
    let alpha = scalar(&handle, alpha, compute_type)?;
    Ok((handle, alpha, a, b, c, compute_type))
}

#[no_mangle]
#[allow(clippy::too_many_arguments)]
pub extern "C" fn cusparseSpGEMM_workEstimation(
    h: *mut c_void,
    op_a: c_int,
    op_b: c_int,
    alpha: *const c_void,
    a: *const c_void,
    b: *const c_void,
    _beta: *const c_void,
    c: *mut c_void,
    compute_type: c_int,
    _alg: c_int,
    descr: *mut c_void,
    size: *mut usize,
    buffer: *mut c_void,
) -> c_int {
    run(|| {
        spgemm_operands(h, op_a, op_b, alpha, a, b, c, compute_type, descr)?;
        if buffer.is_null() {
            out(size, WORKSPACE)
        } else {
            input(size.cast_const()).map(drop)
        }
    })
}

#[no_mangle]
#[allow(clippy::too_many_arguments)]
pub extern "C" fn cusparseSpGEMM_compute(
    h: *mut c_void,
    op_a: c_int,
    op_b: c_int,
    alpha: *const c_void,
    a: *const c_void,
    b: *const c_void,
    _beta: *const c_void,
    c: *mut c_void,
    compute_type: c_int,
    _alg: c_int,
    descr: *mut c_void,
    size: *mut usize,
    buffer: *mut c_void,
) -> c_int {
    run(|| {
        let (handle, _, sa, sb, _, _) =
            spgemm_operands(h, op_a, op_b, alpha, a, b, c, compute_type, descr)?;
        if buffer.is_null() {
            return out(size, WORKSPACE);
        }
        // The product's size is what the application reads next
        // (cusparseSpMatGetSize): wait for it.
        let call = Call::SpGemmNnz {
            handle: handle.server,
            a: sa,
            b: sb,
        };
        let nnz = reply_i64(&call_sync(handle.stream, &call)?)?;
        update(c, |o| match o {
            Object::SpMat(m) => {
                m.nnz = nnz;
                Ok(())
            }
            _ => Err(INVALID_VALUE),
        })?;
        update(descr, |o| {
            *o = Object::SpGemm { computed: true };
            Ok(())
        })
    })
}

#[no_mangle]
#[allow(clippy::too_many_arguments)]
pub extern "C" fn cusparseSpGEMM_copy(
    h: *mut c_void,
    op_a: c_int,
    op_b: c_int,
    alpha: *const c_void,
    a: *const c_void,
    b: *const c_void,
    _beta: *const c_void,
    c: *mut c_void,
    compute_type: c_int,
    _alg: c_int,
    descr: *mut c_void,
) -> c_int {
    run(|| {
        let (handle, alpha, a, b, c, compute_type) =
            spgemm_operands(h, op_a, op_b, alpha, a, b, c, compute_type, descr)?;
        if !matches!(get(descr), Some(Object::SpGemm { computed: true })) {
            return Err(INVALID_VALUE);
        }
        check_sp_mat(&c)?;
        // The offsets are written even for an empty product.
        device_range(c.offsets, super::offsets_bytes(&c)?)?;
        let call = Call::SpGemmCopy {
            handle: handle.server,
            alpha,
            a,
            b,
            c,
            compute_type,
        };
        call_async(&handle, &call)
    })
}

// --- SpSV ------------------------------------------------------------------

#[no_mangle]
pub extern "C" fn cusparseSpSV_createDescr(descr: *mut *mut c_void) -> c_int {
    run(|| {
        if descr.is_null() {
            return Err(INVALID_VALUE);
        }
        out(descr, insert(Object::SpSv) as *mut c_void)
    })
}

#[no_mangle]
pub extern "C" fn cusparseSpSV_destroyDescr(descr: *mut c_void) -> c_int {
    run(|| remove(descr, |o| matches!(o, Object::SpSv)))
}

/// Everything an SpSV names, checked: A square, x and y of its size.
#[allow(clippy::too_many_arguments)]
fn spsv_call(
    h: *const c_void,
    op: c_int,
    alpha: *const c_void,
    a: *const c_void,
    x: *const c_void,
    y: *const c_void,
    compute_type: c_int,
    descr: *const c_void,
) -> Result<(Handle, Call), c_int> {
    let handle = handle(h)?;
    let op = operation(op)?;
    let (a, x, y) = (sp_mat(a)?, dn_vec(x)?, dn_vec(y)?);
    if !matches!(get(descr), Some(Object::SpSv)) {
        return Err(INVALID_VALUE);
    }
    if a.rows != a.cols || x.size != a.rows || y.size != a.rows {
        return Err(INVALID_VALUE);
    }
    check_sp_mat(&a)?;
    check_dn_vec(&x)?;
    check_dn_vec(&y)?;
    let compute_type = byte(compute_type)?;
    let alpha = scalar(&handle, alpha, compute_type)?;
    let call = Call::SpSv {
        handle: handle.server,
        op,
        alpha,
        a,
        x,
        y,
        compute_type,
    };
    Ok((handle, call))
}

#[no_mangle]
#[allow(clippy::too_many_arguments)]
pub extern "C" fn cusparseSpSV_bufferSize(
    h: *mut c_void,
    op: c_int,
    alpha: *const c_void,
    a: *const c_void,
    x: *const c_void,
    y: *mut c_void,
    compute_type: c_int,
    _alg: c_int,
    descr: *mut c_void,
    size: *mut usize,
) -> c_int {
    run(|| {
        spsv_call(h, op, alpha, a, x, y, compute_type, descr)?;
        out(size, WORKSPACE)
    })
}

#[no_mangle]
#[allow(clippy::too_many_arguments)]
pub extern "C" fn cusparseSpSV_analysis(
    h: *mut c_void,
    op: c_int,
    alpha: *const c_void,
    a: *const c_void,
    x: *const c_void,
    y: *mut c_void,
    compute_type: c_int,
    _alg: c_int,
    descr: *mut c_void,
    _buffer: *mut c_void,
) -> c_int {
    // The solve works from the matrix itself; analysis only checks.
    run(|| spsv_call(h, op, alpha, a, x, y, compute_type, descr).map(drop))
}

#[no_mangle]
#[allow(clippy::too_many_arguments)]
pub extern "C" fn cusparseSpSV_solve(
    h: *mut c_void,
    op: c_int,
    alpha: *const c_void,
    a: *const c_void,
    x: *const c_void,
    y: *mut c_void,
    compute_type: c_int,
    _alg: c_int,
    descr: *mut c_void,
) -> c_int {
    run(|| {
        let (handle, call) = spsv_call(h, op, alpha, a, x, y, compute_type, descr)?;
        call_async(&handle, &call)
    })
}
