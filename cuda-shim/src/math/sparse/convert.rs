//! Conversions between CSR, CSC, COO and dense matrices.

use std::os::raw::{c_int, c_void};

use rcud_proto::math::sparse::{Call, DnMat, SpMat};

use super::{
    call_async, call_sync, check_dn_mat, check_sp_mat, device_range, dn_mat, handle, offsets_bytes,
    out, reply_i64, run, sp_mat, update, value_size, Handle, Object, FORMAT_COO, INVALID_VALUE,
};

/// See `compute::WORKSPACE`: no workspace is needed.
const WORKSPACE: usize = 16;
/// `CUSPARSE_ACTION_NUMERIC`: values are converted too.
const ACTION_NUMERIC: c_int = 1;

/// `count` 32-bit indices in bytes, for counts the API passes as `int`.
fn int_bytes(count: c_int) -> Result<u64, c_int> {
    u64::try_from(count)
        .map(|c| c * 4)
        .map_err(|_| INVALID_VALUE)
}

fn base(base: c_int) -> Result<u8, c_int> {
    match base {
        0 | 1 => Ok(base as u8),
        _ => Err(INVALID_VALUE),
    }
}

/// Everything a `cusparseCsr2cscEx2` names, checked.
#[allow(clippy::too_many_arguments)]
fn csr2csc_call(
    h: *const c_void,
    m: c_int,
    n: c_int,
    nnz: c_int,
    csr_values: *const c_void,
    csr_offsets: *const c_int,
    csr_columns: *const c_int,
    csc_values: *mut c_void,
    csc_offsets: *mut c_int,
    csc_rows: *mut c_int,
    value_type: c_int,
    action: c_int,
    idx_base: c_int,
) -> Result<(Handle, Call), c_int> {
    let handle = handle(h)?;
    if m < 0 || n < 0 || nnz < 0 || !matches!(action, 0 | 1) {
        return Err(INVALID_VALUE);
    }
    let value_type = u8::try_from(value_type).map_err(|_| INVALID_VALUE)?;
    let copy_values = action == ACTION_NUMERIC;
    device_range(csr_offsets as u64, int_bytes(m + 1)?)?;
    device_range(csc_offsets as u64, int_bytes(n + 1)?)?;
    device_range(csr_columns as u64, int_bytes(nnz)?)?;
    device_range(csc_rows as u64, int_bytes(nnz)?)?;
    if copy_values {
        let len = int_bytes(nnz)? / 4 * value_size(value_type)?;
        device_range(csr_values as u64, len)?;
        device_range(csc_values as u64, len)?;
    }
    let call = Call::Csr2Csc {
        handle: handle.server,
        m,
        n,
        nnz,
        csr_values: csr_values as u64,
        csr_offsets: csr_offsets as u64,
        csr_columns: csr_columns as u64,
        csc_values: csc_values as u64,
        csc_offsets: csc_offsets as u64,
        csc_rows: csc_rows as u64,
        value_type,
        copy_values,
        base: base(idx_base)?,
    };
    Ok((handle, call))
}

#[no_mangle]
#[allow(clippy::too_many_arguments)]
pub extern "C" fn cusparseCsr2cscEx2(
    h: *mut c_void,
    m: c_int,
    n: c_int,
    nnz: c_int,
    csr_values: *const c_void,
    csr_offsets: *const c_int,
    csr_columns: *const c_int,
    csc_values: *mut c_void,
    csc_offsets: *mut c_int,
    csc_rows: *mut c_int,
    value_type: c_int,
    action: c_int,
    idx_base: c_int,
    _alg: c_int,
    _buffer: *mut c_void,
) -> c_int {
    run(|| {
        let (handle, call) = csr2csc_call(
            h,
            m,
            n,
            nnz,
            csr_values,
            csr_offsets,
            csr_columns,
            csc_values,
            csc_offsets,
            csc_rows,
            value_type,
            action,
            idx_base,
        )?;
        call_async(&handle, &call)
    })
}

#[no_mangle]
#[allow(clippy::too_many_arguments)]
pub extern "C" fn cusparseCsr2cscEx2_bufferSize(
    h: *mut c_void,
    m: c_int,
    n: c_int,
    nnz: c_int,
    csr_values: *const c_void,
    csr_offsets: *const c_int,
    csr_columns: *const c_int,
    csc_values: *mut c_void,
    csc_offsets: *mut c_int,
    csc_rows: *mut c_int,
    value_type: c_int,
    action: c_int,
    idx_base: c_int,
    _alg: c_int,
    size: *mut usize,
) -> c_int {
    run(|| {
        csr2csc_call(
            h,
            m,
            n,
            nnz,
            csr_values,
            csr_offsets,
            csr_columns,
            csc_values,
            csc_offsets,
            csc_rows,
            value_type,
            action,
            idx_base,
        )?;
        out(size, WORKSPACE)
    })
}

#[no_mangle]
pub extern "C" fn cusparseXcoo2csr(
    h: *mut c_void,
    coo_rows: *const c_int,
    nnz: c_int,
    m: c_int,
    csr_offsets: *mut c_int,
    idx_base: c_int,
) -> c_int {
    run(|| {
        let handle = handle(h)?;
        if m < 0 || nnz < 0 {
            return Err(INVALID_VALUE);
        }
        device_range(coo_rows as u64, int_bytes(nnz)?)?;
        device_range(csr_offsets as u64, int_bytes(m + 1)?)?;
        let call = Call::Coo2Csr {
            handle: handle.server,
            coo_rows: coo_rows as u64,
            nnz,
            m,
            csr_offsets: csr_offsets as u64,
            base: base(idx_base)?,
        };
        call_async(&handle, &call)
    })
}

#[no_mangle]
pub extern "C" fn cusparseXcsr2coo(
    h: *mut c_void,
    csr_offsets: *const c_int,
    nnz: c_int,
    m: c_int,
    coo_rows: *mut c_int,
    idx_base: c_int,
) -> c_int {
    run(|| {
        let handle = handle(h)?;
        if m < 0 || nnz < 0 {
            return Err(INVALID_VALUE);
        }
        device_range(csr_offsets as u64, int_bytes(m + 1)?)?;
        device_range(coo_rows as u64, int_bytes(nnz)?)?;
        let call = Call::Csr2Coo {
            handle: handle.server,
            csr_offsets: csr_offsets as u64,
            nnz,
            m,
            coo_rows: coo_rows as u64,
            base: base(idx_base)?,
        };
        call_async(&handle, &call)
    })
}

/// The operands of a sparse-dense conversion, checked: same shape.
fn sparse_dense(
    h: *const c_void,
    sparse: *const c_void,
    dense: *const c_void,
) -> Result<(Handle, SpMat, DnMat), c_int> {
    let handle = handle(h)?;
    let (s, d) = (sp_mat(sparse)?, dn_mat(dense)?);
    if s.rows != d.rows || s.cols != d.cols {
        return Err(INVALID_VALUE);
    }
    check_dn_mat(&d)?;
    value_size(s.value_type)?;
    Ok((handle, s, d))
}

#[no_mangle]
pub extern "C" fn cusparseSparseToDense_bufferSize(
    h: *mut c_void,
    a: *const c_void,
    b: *mut c_void,
    _alg: c_int,
    size: *mut usize,
) -> c_int {
    run(|| {
        sparse_dense(h, a, b)?;
        out(size, WORKSPACE)
    })
}

#[no_mangle]
pub extern "C" fn cusparseSparseToDense(
    h: *mut c_void,
    a: *const c_void,
    b: *mut c_void,
    _alg: c_int,
    _buffer: *mut c_void,
) -> c_int {
    run(|| {
        let (handle, a, b) = sparse_dense(h, a, b)?;
        check_sp_mat(&a)?;
        let call = Call::SparseToDense {
            handle: handle.server,
            a,
            b,
        };
        call_async(&handle, &call)
    })
}

#[no_mangle]
pub extern "C" fn cusparseDenseToSparse_bufferSize(
    h: *mut c_void,
    a: *const c_void,
    b: *mut c_void,
    _alg: c_int,
    size: *mut usize,
) -> c_int {
    run(|| {
        sparse_dense(h, b, a)?;
        out(size, WORKSPACE)
    })
}

#[no_mangle]
pub extern "C" fn cusparseDenseToSparse_analysis(
    h: *mut c_void,
    a: *const c_void,
    b: *mut c_void,
    _alg: c_int,
    _buffer: *mut c_void,
) -> c_int {
    run(|| {
        let (handle, sparse, dense) = sparse_dense(h, b, a)?;
        if sparse.format != FORMAT_COO {
            device_range(sparse.offsets, offsets_bytes(&sparse)?)?;
        }
        // The application reads the count next (cusparseSpMatGetSize) to
        // allocate the arrays: wait for it.
        let call = Call::DenseToSparseAnalysis {
            handle: handle.server,
            a: dense,
            b: sparse,
        };
        let nnz = reply_i64(&call_sync(handle.stream, &call)?)?;
        update(b, |o| match o {
            Object::SpMat(m) => {
                m.nnz = nnz;
                Ok(())
            }
            _ => Err(INVALID_VALUE),
        })
    })
}

#[no_mangle]
pub extern "C" fn cusparseDenseToSparse_convert(
    h: *mut c_void,
    a: *const c_void,
    b: *mut c_void,
    _alg: c_int,
    _buffer: *mut c_void,
) -> c_int {
    run(|| {
        let (handle, sparse, dense) = sparse_dense(h, b, a)?;
        check_sp_mat(&sparse)?;
        device_range(sparse.offsets, offsets_bytes(&sparse)?)?;
        let call = Call::DenseToSparseConvert {
            handle: handle.server,
            a: dense,
            b: sparse,
        };
        call_async(&handle, &call)
    })
}
