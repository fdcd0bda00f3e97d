//! Matrix and vector descriptors (generic API) and the legacy matrix
//! descriptor: host objects, kept in the client's table.

use std::os::raw::{c_int, c_void};

use rcud_proto::math::sparse::{DnMat, DnVec, SpMat, SpVec};

use super::{
    dn_mat, dn_vec, get, index_size, input, insert, out, remove, run, sp_mat, sp_vec, update,
    value_size, MatDescr, Object, Status, FORMAT_COO, FORMAT_CSC, FORMAT_CSR, INVALID_VALUE,
    NOT_SUPPORTED,
};

/// `CUSPARSE_SPMAT_FILL_MODE`, `CUSPARSE_SPMAT_DIAG_TYPE`.
const ATTRIBUTE_FILL_MODE: c_int = 0;
const ATTRIBUTE_DIAG_TYPE: c_int = 1;

/// Checks what `cusparseCreateCsr` & co. check: non-negative sizes, at
/// most `rows * cols` entries, known index types and base.
fn check_new(m: &SpMat) -> Status {
    if m.rows < 0 || m.cols < 0 || m.nnz < 0 || m.base > 1 {
        return Err(INVALID_VALUE);
    }
    if m.rows.checked_mul(m.cols).is_some_and(|size| m.nnz > size) {
        return Err(INVALID_VALUE);
    }
    index_size(m.offset_type)?;
    index_size(m.index_type)?;
    Ok(())
}

/// Converts C enum arguments (always small) to their wire bytes.
fn byte(v: c_int) -> Result<u8, c_int> {
    u8::try_from(v).map_err(|_| INVALID_VALUE)
}

#[allow(clippy::too_many_arguments)]
fn create_compressed(
    descr: *mut *mut c_void,
    format: u8,
    rows: i64,
    cols: i64,
    nnz: i64,
    offsets: *const c_void,
    indices: *const c_void,
    values: *const c_void,
    offset_type: c_int,
    index_type: c_int,
    base: c_int,
    value_type: c_int,
) -> Status {
    if descr.is_null() {
        return Err(INVALID_VALUE);
    }
    let m = SpMat {
        format,
        rows,
        cols,
        nnz,
        offsets: offsets as u64,
        indices: indices as u64,
        values: values as u64,
        offset_type: byte(offset_type)?,
        index_type: byte(index_type)?,
        base: byte(base)?,
        value_type: byte(value_type)?,
        fill_mode: 0,
        diag_type: 0,
    };
    check_new(&m)?;
    out(descr, insert(Object::SpMat(m)) as *mut c_void)
}

#[no_mangle]
#[allow(clippy::too_many_arguments)]
pub extern "C" fn cusparseCreateCsr(
    descr: *mut *mut c_void,
    rows: i64,
    cols: i64,
    nnz: i64,
    offsets: *const c_void,
    indices: *const c_void,
    values: *const c_void,
    offset_type: c_int,
    index_type: c_int,
    base: c_int,
    value_type: c_int,
) -> c_int {
    run(|| {
        create_compressed(
            descr,
            FORMAT_CSR,
            rows,
            cols,
            nnz,
            offsets,
            indices,
            values,
            offset_type,
            index_type,
            base,
            value_type,
        )
    })
}

#[no_mangle]
#[allow(clippy::too_many_arguments)]
pub extern "C" fn cusparseCreateConstCsr(
    descr: *mut *mut c_void,
    rows: i64,
    cols: i64,
    nnz: i64,
    offsets: *const c_void,
    indices: *const c_void,
    values: *const c_void,
    offset_type: c_int,
    index_type: c_int,
    base: c_int,
    value_type: c_int,
) -> c_int {
    run(|| {
        create_compressed(
            descr,
            FORMAT_CSR,
            rows,
            cols,
            nnz,
            offsets,
            indices,
            values,
            offset_type,
            index_type,
            base,
            value_type,
        )
    })
}

#[no_mangle]
#[allow(clippy::too_many_arguments)]
pub extern "C" fn cusparseCreateCsc(
    descr: *mut *mut c_void,
    rows: i64,
    cols: i64,
    nnz: i64,
    offsets: *const c_void,
    indices: *const c_void,
    values: *const c_void,
    offset_type: c_int,
    index_type: c_int,
    base: c_int,
    value_type: c_int,
) -> c_int {
    run(|| {
        create_compressed(
            descr,
            FORMAT_CSC,
            rows,
            cols,
            nnz,
            offsets,
            indices,
            values,
            offset_type,
            index_type,
            base,
            value_type,
        )
    })
}

#[no_mangle]
#[allow(clippy::too_many_arguments)]
pub extern "C" fn cusparseCreateConstCsc(
    descr: *mut *mut c_void,
    rows: i64,
    cols: i64,
    nnz: i64,
    offsets: *const c_void,
    indices: *const c_void,
    values: *const c_void,
    offset_type: c_int,
    index_type: c_int,
    base: c_int,
    value_type: c_int,
) -> c_int {
    run(|| {
        create_compressed(
            descr,
            FORMAT_CSC,
            rows,
            cols,
            nnz,
            offsets,
            indices,
            values,
            offset_type,
            index_type,
            base,
            value_type,
        )
    })
}

#[no_mangle]
#[allow(clippy::too_many_arguments)]
pub extern "C" fn cusparseCreateCoo(
    descr: *mut *mut c_void,
    rows: i64,
    cols: i64,
    nnz: i64,
    row_indices: *const c_void,
    col_indices: *const c_void,
    values: *const c_void,
    index_type: c_int,
    base: c_int,
    value_type: c_int,
) -> c_int {
    run(|| {
        create_compressed(
            descr,
            FORMAT_COO,
            rows,
            cols,
            nnz,
            row_indices,
            col_indices,
            values,
            index_type,
            index_type,
            base,
            value_type,
        )
    })
}

#[no_mangle]
#[allow(clippy::too_many_arguments)]
pub extern "C" fn cusparseCreateConstCoo(
    descr: *mut *mut c_void,
    rows: i64,
    cols: i64,
    nnz: i64,
    row_indices: *const c_void,
    col_indices: *const c_void,
    values: *const c_void,
    index_type: c_int,
    base: c_int,
    value_type: c_int,
) -> c_int {
    run(|| {
        create_compressed(
            descr,
            FORMAT_COO,
            rows,
            cols,
            nnz,
            row_indices,
            col_indices,
            values,
            index_type,
            index_type,
            base,
            value_type,
        )
    })
}

#[no_mangle]
pub extern "C" fn cusparseDestroySpMat(descr: *const c_void) -> c_int {
    run(|| remove(descr, |o| matches!(o, Object::SpMat(_))))
}

/// Writes every property of a CSR, CSC (`format`) or COO descriptor to the
/// application's pointers.
#[allow(clippy::too_many_arguments)]
fn get_sp_mat(
    descr: *const c_void,
    format: u8,
    rows: *mut i64,
    cols: *mut i64,
    nnz: *mut i64,
    offsets: *mut *mut c_void,
    indices: *mut *mut c_void,
    values: *mut *mut c_void,
    offset_type: Option<*mut c_int>,
    index_type: *mut c_int,
    base: *mut c_int,
    value_type: *mut c_int,
) -> Status {
    let m = sp_mat(descr)?;
    if m.format != format {
        return Err(INVALID_VALUE);
    }
    out(rows, m.rows)?;
    out(cols, m.cols)?;
    out(nnz, m.nnz)?;
    out(offsets, m.offsets as *mut c_void)?;
    out(indices, m.indices as *mut c_void)?;
    out(values, m.values as *mut c_void)?;
    if let Some(offset_type) = offset_type {
        out(offset_type, c_int::from(m.offset_type))?;
    }
    out(index_type, c_int::from(m.index_type))?;
    out(base, c_int::from(m.base))?;
    out(value_type, c_int::from(m.value_type))
}

#[no_mangle]
#[allow(clippy::too_many_arguments)]
pub extern "C" fn cusparseCsrGet(
    descr: *const c_void,
    rows: *mut i64,
    cols: *mut i64,
    nnz: *mut i64,
    offsets: *mut *mut c_void,
    indices: *mut *mut c_void,
    values: *mut *mut c_void,
    offset_type: *mut c_int,
    index_type: *mut c_int,
    base: *mut c_int,
    value_type: *mut c_int,
) -> c_int {
    run(|| {
        get_sp_mat(
            descr,
            FORMAT_CSR,
            rows,
            cols,
            nnz,
            offsets,
            indices,
            values,
            Some(offset_type),
            index_type,
            base,
            value_type,
        )
    })
}

#[no_mangle]
#[allow(clippy::too_many_arguments)]
pub extern "C" fn cusparseConstCsrGet(
    descr: *const c_void,
    rows: *mut i64,
    cols: *mut i64,
    nnz: *mut i64,
    offsets: *mut *mut c_void,
    indices: *mut *mut c_void,
    values: *mut *mut c_void,
    offset_type: *mut c_int,
    index_type: *mut c_int,
    base: *mut c_int,
    value_type: *mut c_int,
) -> c_int {
    run(|| {
        get_sp_mat(
            descr,
            FORMAT_CSR,
            rows,
            cols,
            nnz,
            offsets,
            indices,
            values,
            Some(offset_type),
            index_type,
            base,
            value_type,
        )
    })
}

#[no_mangle]
#[allow(clippy::too_many_arguments)]
pub extern "C" fn cusparseCscGet(
    descr: *const c_void,
    rows: *mut i64,
    cols: *mut i64,
    nnz: *mut i64,
    offsets: *mut *mut c_void,
    indices: *mut *mut c_void,
    values: *mut *mut c_void,
    offset_type: *mut c_int,
    index_type: *mut c_int,
    base: *mut c_int,
    value_type: *mut c_int,
) -> c_int {
    run(|| {
        get_sp_mat(
            descr,
            FORMAT_CSC,
            rows,
            cols,
            nnz,
            offsets,
            indices,
            values,
            Some(offset_type),
            index_type,
            base,
            value_type,
        )
    })
}

#[no_mangle]
#[allow(clippy::too_many_arguments)]
pub extern "C" fn cusparseConstCscGet(
    descr: *const c_void,
    rows: *mut i64,
    cols: *mut i64,
    nnz: *mut i64,
    offsets: *mut *mut c_void,
    indices: *mut *mut c_void,
    values: *mut *mut c_void,
    offset_type: *mut c_int,
    index_type: *mut c_int,
    base: *mut c_int,
    value_type: *mut c_int,
) -> c_int {
    run(|| {
        get_sp_mat(
            descr,
            FORMAT_CSC,
            rows,
            cols,
            nnz,
            offsets,
            indices,
            values,
            Some(offset_type),
            index_type,
            base,
            value_type,
        )
    })
}

#[no_mangle]
#[allow(clippy::too_many_arguments)]
pub extern "C" fn cusparseCooGet(
    descr: *const c_void,
    rows: *mut i64,
    cols: *mut i64,
    nnz: *mut i64,
    row_indices: *mut *mut c_void,
    col_indices: *mut *mut c_void,
    values: *mut *mut c_void,
    index_type: *mut c_int,
    base: *mut c_int,
    value_type: *mut c_int,
) -> c_int {
    run(|| {
        get_sp_mat(
            descr,
            FORMAT_COO,
            rows,
            cols,
            nnz,
            row_indices,
            col_indices,
            values,
            None,
            index_type,
            base,
            value_type,
        )
    })
}

#[no_mangle]
#[allow(clippy::too_many_arguments)]
pub extern "C" fn cusparseConstCooGet(
    descr: *const c_void,
    rows: *mut i64,
    cols: *mut i64,
    nnz: *mut i64,
    row_indices: *mut *mut c_void,
    col_indices: *mut *mut c_void,
    values: *mut *mut c_void,
    index_type: *mut c_int,
    base: *mut c_int,
    value_type: *mut c_int,
) -> c_int {
    run(|| {
        get_sp_mat(
            descr,
            FORMAT_COO,
            rows,
            cols,
            nnz,
            row_indices,
            col_indices,
            values,
            None,
            index_type,
            base,
            value_type,
        )
    })
}

/// Changes the sparse matrix descriptor `descr` by `f`.
fn update_sp_mat(descr: *const c_void, f: impl FnOnce(&mut SpMat) -> Status) -> Status {
    update(descr, |o| match o {
        Object::SpMat(m) => f(m),
        _ => Err(INVALID_VALUE),
    })
}

/// Points a descriptor of `format` at new arrays.
fn set_pointers(
    descr: *const c_void,
    format: u8,
    offsets: *const c_void,
    indices: *const c_void,
    values: *const c_void,
) -> Status {
    update_sp_mat(descr, |m| {
        if m.format != format {
            return Err(INVALID_VALUE);
        }
        m.offsets = offsets as u64;
        m.indices = indices as u64;
        m.values = values as u64;
        Ok(())
    })
}

#[no_mangle]
pub extern "C" fn cusparseCsrSetPointers(
    descr: *mut c_void,
    offsets: *mut c_void,
    columns: *mut c_void,
    values: *mut c_void,
) -> c_int {
    run(|| set_pointers(descr, FORMAT_CSR, offsets, columns, values))
}

#[no_mangle]
pub extern "C" fn cusparseCscSetPointers(
    descr: *mut c_void,
    offsets: *mut c_void,
    rows: *mut c_void,
    values: *mut c_void,
) -> c_int {
    run(|| set_pointers(descr, FORMAT_CSC, offsets, rows, values))
}

#[no_mangle]
pub extern "C" fn cusparseCooSetPointers(
    descr: *mut c_void,
    rows: *mut c_void,
    columns: *mut c_void,
    values: *mut c_void,
) -> c_int {
    run(|| set_pointers(descr, FORMAT_COO, rows, columns, values))
}

#[no_mangle]
pub extern "C" fn cusparseSpMatGetSize(
    descr: *const c_void,
    rows: *mut i64,
    cols: *mut i64,
    nnz: *mut i64,
) -> c_int {
    run(|| {
        let m = sp_mat(descr)?;
        out(rows, m.rows)?;
        out(cols, m.cols)?;
        out(nnz, m.nnz)
    })
}

#[no_mangle]
pub extern "C" fn cusparseSpMatGetFormat(descr: *const c_void, format: *mut c_int) -> c_int {
    run(|| out(format, c_int::from(sp_mat(descr)?.format)))
}

#[no_mangle]
pub extern "C" fn cusparseSpMatGetIndexBase(descr: *const c_void, base: *mut c_int) -> c_int {
    run(|| out(base, c_int::from(sp_mat(descr)?.base)))
}

#[no_mangle]
pub extern "C" fn cusparseSpMatGetValues(descr: *mut c_void, values: *mut *mut c_void) -> c_int {
    run(|| out(values, sp_mat(descr)?.values as *mut c_void))
}

#[no_mangle]
pub extern "C" fn cusparseConstSpMatGetValues(
    descr: *const c_void,
    values: *mut *const c_void,
) -> c_int {
    run(|| out(values, sp_mat(descr)?.values as *const c_void))
}

#[no_mangle]
pub extern "C" fn cusparseSpMatSetValues(descr: *mut c_void, values: *mut c_void) -> c_int {
    run(|| {
        update_sp_mat(descr, |m| {
            m.values = values as u64;
            Ok(())
        })
    })
}

#[no_mangle]
pub extern "C" fn cusparseSpMatGetAttribute(
    descr: *const c_void,
    attribute: c_int,
    data: *mut c_void,
    size: usize,
) -> c_int {
    run(|| {
        let m = sp_mat(descr)?;
        if size != size_of::<c_int>() {
            return Err(INVALID_VALUE);
        }
        let value = match attribute {
            ATTRIBUTE_FILL_MODE => m.fill_mode,
            ATTRIBUTE_DIAG_TYPE => m.diag_type,
            _ => return Err(NOT_SUPPORTED),
        };
        out(data.cast::<c_int>(), c_int::from(value))
    })
}

#[no_mangle]
pub extern "C" fn cusparseSpMatSetAttribute(
    descr: *mut c_void,
    attribute: c_int,
    data: *mut c_void,
    size: usize,
) -> c_int {
    run(|| {
        sp_mat(descr)?;
        if size != size_of::<c_int>() {
            return Err(INVALID_VALUE);
        }
        let value = input(data.cast::<c_int>().cast_const())?;
        if !matches!(value, 0 | 1) {
            return Err(INVALID_VALUE);
        }
        update_sp_mat(descr, |m| {
            match attribute {
                ATTRIBUTE_FILL_MODE => m.fill_mode = value as u8,
                ATTRIBUTE_DIAG_TYPE => m.diag_type = value as u8,
                _ => return Err(NOT_SUPPORTED),
            }
            Ok(())
        })
    })
}

// --- Sparse vectors --------------------------------------------------------

#[allow(clippy::too_many_arguments)]
fn create_sp_vec(
    descr: *mut *mut c_void,
    size: i64,
    nnz: i64,
    indices: *const c_void,
    values: *const c_void,
    index_type: c_int,
    base: c_int,
    value_type: c_int,
) -> Status {
    if descr.is_null() || size < 0 || nnz < 0 || nnz > size || !(0..=1).contains(&base) {
        return Err(INVALID_VALUE);
    }
    let v = SpVec {
        size,
        nnz,
        indices: indices as u64,
        values: values as u64,
        index_type: byte(index_type)?,
        base: byte(base)?,
        value_type: byte(value_type)?,
    };
    index_size(v.index_type)?;
    value_size(v.value_type)?;
    out(descr, insert(Object::SpVec(v)) as *mut c_void)
}

#[no_mangle]
#[allow(clippy::too_many_arguments)]
pub extern "C" fn cusparseCreateSpVec(
    descr: *mut *mut c_void,
    size: i64,
    nnz: i64,
    indices: *mut c_void,
    values: *mut c_void,
    index_type: c_int,
    base: c_int,
    value_type: c_int,
) -> c_int {
    run(|| {
        create_sp_vec(
            descr, size, nnz, indices, values, index_type, base, value_type,
        )
    })
}

#[no_mangle]
#[allow(clippy::too_many_arguments)]
pub extern "C" fn cusparseCreateConstSpVec(
    descr: *mut *mut c_void,
    size: i64,
    nnz: i64,
    indices: *const c_void,
    values: *const c_void,
    index_type: c_int,
    base: c_int,
    value_type: c_int,
) -> c_int {
    run(|| {
        create_sp_vec(
            descr, size, nnz, indices, values, index_type, base, value_type,
        )
    })
}

#[no_mangle]
pub extern "C" fn cusparseDestroySpVec(descr: *const c_void) -> c_int {
    run(|| remove(descr, |o| matches!(o, Object::SpVec(_))))
}

#[allow(clippy::too_many_arguments)]
fn get_sp_vec(
    descr: *const c_void,
    size: *mut i64,
    nnz: *mut i64,
    indices: *mut *mut c_void,
    values: *mut *mut c_void,
    index_type: *mut c_int,
    base: *mut c_int,
    value_type: *mut c_int,
) -> Status {
    let v = sp_vec(descr)?;
    out(size, v.size)?;
    out(nnz, v.nnz)?;
    out(indices, v.indices as *mut c_void)?;
    out(values, v.values as *mut c_void)?;
    out(index_type, c_int::from(v.index_type))?;
    out(base, c_int::from(v.base))?;
    out(value_type, c_int::from(v.value_type))
}

#[no_mangle]
#[allow(clippy::too_many_arguments)]
pub extern "C" fn cusparseSpVecGet(
    descr: *mut c_void,
    size: *mut i64,
    nnz: *mut i64,
    indices: *mut *mut c_void,
    values: *mut *mut c_void,
    index_type: *mut c_int,
    base: *mut c_int,
    value_type: *mut c_int,
) -> c_int {
    run(|| {
        get_sp_vec(
            descr, size, nnz, indices, values, index_type, base, value_type,
        )
    })
}

#[no_mangle]
#[allow(clippy::too_many_arguments)]
pub extern "C" fn cusparseConstSpVecGet(
    descr: *const c_void,
    size: *mut i64,
    nnz: *mut i64,
    indices: *mut *mut c_void,
    values: *mut *mut c_void,
    index_type: *mut c_int,
    base: *mut c_int,
    value_type: *mut c_int,
) -> c_int {
    run(|| {
        get_sp_vec(
            descr, size, nnz, indices, values, index_type, base, value_type,
        )
    })
}

#[no_mangle]
pub extern "C" fn cusparseSpVecGetIndexBase(descr: *const c_void, base: *mut c_int) -> c_int {
    run(|| out(base, c_int::from(sp_vec(descr)?.base)))
}

#[no_mangle]
pub extern "C" fn cusparseSpVecGetValues(descr: *mut c_void, values: *mut *mut c_void) -> c_int {
    run(|| out(values, sp_vec(descr)?.values as *mut c_void))
}

#[no_mangle]
pub extern "C" fn cusparseConstSpVecGetValues(
    descr: *const c_void,
    values: *mut *mut c_void,
) -> c_int {
    run(|| out(values, sp_vec(descr)?.values as *mut c_void))
}

#[no_mangle]
pub extern "C" fn cusparseSpVecSetValues(descr: *mut c_void, values: *mut c_void) -> c_int {
    run(|| {
        update(descr, |o| match o {
            Object::SpVec(v) => {
                v.values = values as u64;
                Ok(())
            }
            _ => Err(INVALID_VALUE),
        })
    })
}

// --- Dense vectors ---------------------------------------------------------

fn create_dn_vec(descr: *mut *mut c_void, size: i64, values: *const c_void, ty: c_int) -> Status {
    if descr.is_null() || size < 0 {
        return Err(INVALID_VALUE);
    }
    let v = DnVec {
        size,
        values: values as u64,
        value_type: byte(ty)?,
    };
    out(descr, insert(Object::DnVec(v)) as *mut c_void)
}

#[no_mangle]
pub extern "C" fn cusparseCreateDnVec(
    descr: *mut *mut c_void,
    size: i64,
    values: *mut c_void,
    value_type: c_int,
) -> c_int {
    run(|| create_dn_vec(descr, size, values, value_type))
}

#[no_mangle]
pub extern "C" fn cusparseCreateConstDnVec(
    descr: *mut *mut c_void,
    size: i64,
    values: *const c_void,
    value_type: c_int,
) -> c_int {
    run(|| create_dn_vec(descr, size, values, value_type))
}

#[no_mangle]
pub extern "C" fn cusparseDestroyDnVec(descr: *const c_void) -> c_int {
    run(|| remove(descr, |o| matches!(o, Object::DnVec(_))))
}

fn get_dn_vec(
    descr: *const c_void,
    size: *mut i64,
    values: *mut *mut c_void,
    value_type: *mut c_int,
) -> Status {
    let v = dn_vec(descr)?;
    out(size, v.size)?;
    out(values, v.values as *mut c_void)?;
    out(value_type, c_int::from(v.value_type))
}

#[no_mangle]
pub extern "C" fn cusparseDnVecGet(
    descr: *mut c_void,
    size: *mut i64,
    values: *mut *mut c_void,
    value_type: *mut c_int,
) -> c_int {
    run(|| get_dn_vec(descr, size, values, value_type))
}

#[no_mangle]
pub extern "C" fn cusparseConstDnVecGet(
    descr: *const c_void,
    size: *mut i64,
    values: *mut *mut c_void,
    value_type: *mut c_int,
) -> c_int {
    run(|| get_dn_vec(descr, size, values, value_type))
}

#[no_mangle]
pub extern "C" fn cusparseDnVecGetValues(descr: *mut c_void, values: *mut *mut c_void) -> c_int {
    run(|| out(values, dn_vec(descr)?.values as *mut c_void))
}

#[no_mangle]
pub extern "C" fn cusparseConstDnVecGetValues(
    descr: *const c_void,
    values: *mut *mut c_void,
) -> c_int {
    run(|| out(values, dn_vec(descr)?.values as *mut c_void))
}

#[no_mangle]
pub extern "C" fn cusparseDnVecSetValues(descr: *mut c_void, values: *mut c_void) -> c_int {
    run(|| {
        update(descr, |o| match o {
            Object::DnVec(v) => {
                v.values = values as u64;
                Ok(())
            }
            _ => Err(INVALID_VALUE),
        })
    })
}

// --- Dense matrices --------------------------------------------------------

fn create_dn_mat(
    descr: *mut *mut c_void,
    rows: i64,
    cols: i64,
    ld: i64,
    values: *const c_void,
    ty: c_int,
    order: c_int,
) -> Status {
    if descr.is_null() || rows < 0 || cols < 0 || !matches!(order, 1 | 2) {
        return Err(INVALID_VALUE);
    }
    let inner = if order == 2 { cols } else { rows };
    if ld < inner.max(1) {
        return Err(INVALID_VALUE);
    }
    let m = DnMat {
        rows,
        cols,
        ld,
        values: values as u64,
        value_type: byte(ty)?,
        order: byte(order)?,
    };
    out(descr, insert(Object::DnMat(m)) as *mut c_void)
}

#[no_mangle]
pub extern "C" fn cusparseCreateDnMat(
    descr: *mut *mut c_void,
    rows: i64,
    cols: i64,
    ld: i64,
    values: *mut c_void,
    value_type: c_int,
    order: c_int,
) -> c_int {
    run(|| create_dn_mat(descr, rows, cols, ld, values, value_type, order))
}

#[no_mangle]
pub extern "C" fn cusparseCreateConstDnMat(
    descr: *mut *mut c_void,
    rows: i64,
    cols: i64,
    ld: i64,
    values: *const c_void,
    value_type: c_int,
    order: c_int,
) -> c_int {
    run(|| create_dn_mat(descr, rows, cols, ld, values, value_type, order))
}

#[no_mangle]
pub extern "C" fn cusparseDestroyDnMat(descr: *const c_void) -> c_int {
    run(|| remove(descr, |o| matches!(o, Object::DnMat(_))))
}

fn get_dn_mat(
    descr: *const c_void,
    rows: *mut i64,
    cols: *mut i64,
    ld: *mut i64,
    values: *mut *mut c_void,
    value_type: *mut c_int,
    order: *mut c_int,
) -> Status {
    let m = dn_mat(descr)?;
    out(rows, m.rows)?;
    out(cols, m.cols)?;
    out(ld, m.ld)?;
    out(values, m.values as *mut c_void)?;
    out(value_type, c_int::from(m.value_type))?;
    out(order, c_int::from(m.order))
}

#[no_mangle]
pub extern "C" fn cusparseDnMatGet(
    descr: *mut c_void,
    rows: *mut i64,
    cols: *mut i64,
    ld: *mut i64,
    values: *mut *mut c_void,
    value_type: *mut c_int,
    order: *mut c_int,
) -> c_int {
    run(|| get_dn_mat(descr, rows, cols, ld, values, value_type, order))
}

#[no_mangle]
pub extern "C" fn cusparseConstDnMatGet(
    descr: *const c_void,
    rows: *mut i64,
    cols: *mut i64,
    ld: *mut i64,
    values: *mut *mut c_void,
    value_type: *mut c_int,
    order: *mut c_int,
) -> c_int {
    run(|| get_dn_mat(descr, rows, cols, ld, values, value_type, order))
}

#[no_mangle]
pub extern "C" fn cusparseDnMatGetValues(descr: *mut c_void, values: *mut *mut c_void) -> c_int {
    run(|| out(values, dn_mat(descr)?.values as *mut c_void))
}

#[no_mangle]
pub extern "C" fn cusparseConstDnMatGetValues(
    descr: *const c_void,
    values: *mut *mut c_void,
) -> c_int {
    run(|| out(values, dn_mat(descr)?.values as *mut c_void))
}

#[no_mangle]
pub extern "C" fn cusparseDnMatSetValues(descr: *mut c_void, values: *mut c_void) -> c_int {
    run(|| {
        update(descr, |o| match o {
            Object::DnMat(m) => {
                m.values = values as u64;
                Ok(())
            }
            _ => Err(INVALID_VALUE),
        })
    })
}

// --- Legacy matrix descriptor (cusparseMatDescr_t) -------------------------

#[no_mangle]
pub extern "C" fn cusparseCreateMatDescr(descr: *mut *mut c_void) -> c_int {
    run(|| {
        if descr.is_null() {
            return Err(INVALID_VALUE);
        }
        out(
            descr,
            insert(Object::MatDescr(MatDescr::default())) as *mut c_void,
        )
    })
}

#[no_mangle]
pub extern "C" fn cusparseDestroyMatDescr(descr: *mut c_void) -> c_int {
    run(|| remove(descr, |o| matches!(o, Object::MatDescr(_))))
}

/// Sets one property of a legacy descriptor, `valid` its allowed values.
fn set_mat_descr(
    descr: *mut c_void,
    value: c_int,
    valid: std::ops::RangeInclusive<c_int>,
    field: impl FnOnce(&mut MatDescr) -> &mut c_int,
) -> c_int {
    run(|| {
        if !valid.contains(&value) {
            return Err(INVALID_VALUE);
        }
        update(descr, |o| match o {
            Object::MatDescr(d) => {
                *field(d) = value;
                Ok(())
            }
            _ => Err(INVALID_VALUE),
        })
    })
}

/// A legacy descriptor that a call takes: INVALID_VALUE when unknown.
pub(super) fn legacy_descr(descr: *const c_void) -> Result<MatDescr, c_int> {
    match get(descr) {
        Some(Object::MatDescr(d)) => Ok(d),
        _ => Err(INVALID_VALUE),
    }
}

/// One property of a legacy descriptor (its default for an unknown one,
/// as the getters have no status to fail with).
fn mat_descr(descr: *const c_void) -> MatDescr {
    match get(descr) {
        Some(Object::MatDescr(d)) => d,
        _ => MatDescr::default(),
    }
}

#[no_mangle]
pub extern "C" fn cusparseSetMatType(descr: *mut c_void, kind: c_int) -> c_int {
    set_mat_descr(descr, kind, 0..=3, |d| &mut d.matrix_type)
}

#[no_mangle]
pub extern "C" fn cusparseGetMatType(descr: *const c_void) -> c_int {
    mat_descr(descr).matrix_type
}

#[no_mangle]
pub extern "C" fn cusparseSetMatFillMode(descr: *mut c_void, mode: c_int) -> c_int {
    set_mat_descr(descr, mode, 0..=1, |d| &mut d.fill_mode)
}

#[no_mangle]
pub extern "C" fn cusparseGetMatFillMode(descr: *const c_void) -> c_int {
    mat_descr(descr).fill_mode
}

#[no_mangle]
pub extern "C" fn cusparseSetMatDiagType(descr: *mut c_void, kind: c_int) -> c_int {
    set_mat_descr(descr, kind, 0..=1, |d| &mut d.diag_type)
}

#[no_mangle]
pub extern "C" fn cusparseGetMatDiagType(descr: *const c_void) -> c_int {
    mat_descr(descr).diag_type
}

#[no_mangle]
pub extern "C" fn cusparseSetMatIndexBase(descr: *mut c_void, base: c_int) -> c_int {
    set_mat_descr(descr, base, 0..=1, |d| &mut d.base)
}

#[no_mangle]
pub extern "C" fn cusparseGetMatIndexBase(descr: *const c_void) -> c_int {
    mat_descr(descr).base
}
