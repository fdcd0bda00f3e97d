//! cuSPARSE on the CPU: the generic API's SpMV, SpMM, SpGEMM and SpSV, the
//! conversions between CSR, CSC, COO and dense matrices, and the legacy
//! sorts, Gather/Scatter and ILU(0)/IC(0) ([`legacy`]).
//!
//! Handles live here; the client sends the contents of its matrix and
//! vector descriptors with each call. Every array is read through
//! [`DeviceMemory`] (so bounds-checked) and every index is checked against
//! the matrix's dimensions before use: a malformed matrix gives
//! `CUSPARSE_STATUS_INVALID_VALUE`, never an out-of-range access.

pub mod extents;
pub mod kernels;
pub mod legacy;
pub mod values;

#[cfg(test)]
mod tests;

use std::collections::HashSet;

use rcud_proto::math::sparse::{Call, DnMat, DnVec, Scalar, SpMat};

use crate::{DeviceMemory, Fault, MathError, Reply};
use kernels::{Dense, Op, Triplets};
use values::{
    read_indices, read_values, write_indices, write_values, Complex, IndexType, ValueType,
};

/// `CUSPARSE_STATUS_NOT_INITIALIZED`: an unknown or destroyed handle.
pub const NOT_INITIALIZED: i32 = 1;
/// `CUSPARSE_STATUS_INVALID_VALUE`.
pub const INVALID_VALUE: i32 = 3;
/// `CUSPARSE_STATUS_MATRIX_TYPE_NOT_SUPPORTED`.
pub const MATRIX_TYPE_NOT_SUPPORTED: i32 = 8;
/// `CUSPARSE_STATUS_ZERO_PIVOT`.
pub const ZERO_PIVOT: i32 = 9;
/// `CUSPARSE_STATUS_NOT_SUPPORTED`.
pub const NOT_SUPPORTED: i32 = 10;

/// `cusparseFormat_t`.
const FORMAT_CSR: u8 = 1;
const FORMAT_CSC: u8 = 2;
const FORMAT_COO: u8 = 3;
/// `cusparseOrder_t`.
const ORDER_COL: u8 = 1;
const ORDER_ROW: u8 = 2;

/// Why a call stopped: a cuSPARSE status, or a device range outside the
/// client's allocations.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Failure {
    /// The library's status.
    Status(i32),
    /// A fault, as NVIDIA's kernel would take.
    Fault(Fault),
}

impl From<Fault> for Failure {
    fn from(f: Fault) -> Self {
        Self::Fault(f)
    }
}

fn invalid() -> Failure {
    Failure::Status(INVALID_VALUE)
}

/// The cuSPARSE handles of one client context.
#[derive(Default)]
pub struct State {
    handles: HashSet<u64>,
    next_handle: u64,
    infos: legacy::Infos,
}

impl State {
    /// Runs one cuSPARSE call.
    pub fn call(&mut self, memory: &mut dyn DeviceMemory, call: Call) -> Result<Reply, MathError> {
        match self.run(memory, call) {
            Ok(out) => Ok(Reply::ok(out)),
            Err(Failure::Status(status)) => Ok(Reply::status(status)),
            Err(Failure::Fault(fault)) => Err(MathError::Fault(fault)),
        }
    }

    fn check(&self, handle: u64) -> Result<(), Failure> {
        if self.handles.contains(&handle) {
            Ok(())
        } else {
            Err(Failure::Status(NOT_INITIALIZED))
        }
    }

    fn run(&mut self, memory: &mut dyn DeviceMemory, call: Call) -> Result<Vec<u8>, Failure> {
        match call {
            Call::Create {} => {
                self.next_handle += 1;
                self.handles.insert(self.next_handle);
                Ok(self.next_handle.to_le_bytes().to_vec())
            }
            Call::Destroy { handle } => {
                self.check(handle)?;
                self.handles.remove(&handle);
                Ok(Vec::new())
            }
            Call::SpMv {
                handle,
                op,
                alpha,
                a,
                x,
                beta,
                y,
                compute_type,
            } => {
                self.check(handle)?;
                spmv(memory, op, alpha, &a, &x, beta, &y, compute_type)?;
                Ok(Vec::new())
            }
            Call::SpMm {
                handle,
                op_a,
                op_b,
                alpha,
                a,
                b,
                beta,
                c,
                compute_type,
            } => {
                self.check(handle)?;
                spmm(memory, op_a, op_b, alpha, &a, &b, beta, &c, compute_type)?;
                Ok(Vec::new())
            }
            Call::SpGemmNnz { handle, a, b } => {
                self.check(handle)?;
                let (a, b) = spgemm_operands(memory, &a, &b, false)?;
                let nnz = kernels::spgemm_nnz(&a, &b);
                Ok((nnz as i64).to_le_bytes().to_vec())
            }
            Call::SpGemmCopy {
                handle,
                alpha,
                a,
                b,
                c,
                compute_type,
            } => {
                self.check(handle)?;
                spgemm_copy(memory, alpha, &a, &b, &c, compute_type)?;
                Ok(Vec::new())
            }
            Call::SpSv {
                handle,
                op,
                alpha,
                a,
                x,
                y,
                compute_type,
            } => {
                self.check(handle)?;
                spsv(memory, op, alpha, &a, &x, &y, compute_type)?;
                Ok(Vec::new())
            }
            Call::Csr2Csc {
                handle,
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
                copy_values,
                base,
            } => {
                self.check(handle)?;
                let csr = SpMat {
                    format: FORMAT_CSR,
                    rows: i64::from(m),
                    cols: i64::from(n),
                    nnz: i64::from(nnz),
                    offsets: csr_offsets,
                    indices: csr_columns,
                    values: csr_values,
                    offset_type: 2,
                    index_type: 2,
                    base,
                    value_type,
                    ..SpMat::default()
                };
                let a = read_sparse(memory, &csr, copy_values)?;
                let (offsets, rows, values) = kernels::by_column(&a);
                let base = i64::from(base);
                write_indices(memory, csc_offsets, &rebase(&offsets, base), IndexType::I32)?;
                write_indices(memory, csc_rows, &rebase(&rows, base), IndexType::I32)?;
                if copy_values {
                    write_values(
                        memory,
                        csc_values,
                        &values,
                        ValueType::from_cuda(value_type)?,
                    )?;
                }
                Ok(Vec::new())
            }
            Call::Coo2Csr {
                handle,
                coo_rows,
                nnz,
                m,
                csr_offsets,
                base,
            } => {
                self.check(handle)?;
                let rows = read_indices(memory, coo_rows, i64::from(nnz), IndexType::I32)?;
                let m = dim(i64::from(m))?;
                let rows = zero_based(&rows, i64::from(base), m)?;
                let offsets = kernels::compress(&rows, m);
                write_indices(
                    memory,
                    csr_offsets,
                    &rebase(&offsets, i64::from(base)),
                    IndexType::I32,
                )?;
                Ok(Vec::new())
            }
            Call::Csr2Coo {
                handle,
                csr_offsets,
                nnz,
                m,
                coo_rows,
                base,
            } => {
                self.check(handle)?;
                let m = dim(i64::from(m))?;
                let offsets = read_indices(memory, csr_offsets, m as i64 + 1, IndexType::I32)?;
                let ranges = row_ranges(&offsets, i64::from(base), i64::from(nnz))?;
                let mut rows = vec![0i64; dim(i64::from(nnz))?];
                for (i, range) in ranges.into_iter().enumerate() {
                    for k in range {
                        rows[k] = i as i64 + i64::from(base);
                    }
                }
                write_indices(memory, coo_rows, &rows, IndexType::I32)?;
                Ok(Vec::new())
            }
            Call::SparseToDense { handle, a, b } => {
                self.check(handle)?;
                let sparse = read_sparse(memory, &a, true)?;
                let mut dense = DeviceDense::read(memory, &b)?;
                if (sparse.rows, sparse.cols) != (dense.rows, dense.cols) {
                    return Err(invalid());
                }
                dense.store(&kernels::to_dense(&sparse));
                dense.write(memory)?;
                Ok(Vec::new())
            }
            Call::DenseToSparseAnalysis { handle, a, b } => {
                self.check(handle)?;
                let found = dense_nonzeros(memory, &a, &b)?;
                if b.format != FORMAT_COO {
                    let offsets = major_offsets(&b, &found);
                    let ty = IndexType::from_cusparse(b.offset_type)?;
                    write_indices(memory, b.offsets, &rebase(&offsets, i64::from(b.base)), ty)?;
                }
                Ok((found.entries.len() as i64).to_le_bytes().to_vec())
            }
            Call::DenseToSparseConvert { handle, a, b } => {
                self.check(handle)?;
                let found = dense_nonzeros(memory, &a, &b)?;
                if found.entries.len() as i64 != b.nnz {
                    return Err(invalid());
                }
                write_sparse(memory, &b, &found)?;
                Ok(Vec::new())
            }
            Call::IdentityPermutation { handle, n, p } => {
                self.check(handle)?;
                legacy::identity_permutation(memory, n, p)?;
                Ok(Vec::new())
            }
            Call::CooSort {
                handle,
                by_row,
                m,
                n,
                nnz,
                rows,
                cols,
                p,
            } => {
                self.check(handle)?;
                legacy::coo_sort(memory, by_row, m, n, nnz, rows, cols, p)?;
                Ok(Vec::new())
            }
            Call::CompressedSort {
                handle,
                major,
                minor,
                nnz,
                base,
                offsets,
                indices,
                p,
            } => {
                self.check(handle)?;
                legacy::compressed_sort(memory, major, minor, nnz, base, offsets, indices, p)?;
                Ok(Vec::new())
            }
            Call::Gather { handle, y, x } => {
                self.check(handle)?;
                legacy::gather(memory, &y, &x)?;
                Ok(Vec::new())
            }
            Call::Scatter { handle, x, y } => {
                self.check(handle)?;
                legacy::scatter(memory, &x, &y)?;
                Ok(Vec::new())
            }
            Call::CreateInfo { ic } => Ok(self.infos.create(ic).to_le_bytes().to_vec()),
            Call::DestroyInfo { info } => {
                self.infos.destroy(info)?;
                Ok(Vec::new())
            }
            Call::Factor0 {
                handle,
                info,
                ic,
                analysis,
                m,
                nnz,
                base,
                values,
                offsets,
                columns,
                value_type,
                boost,
            } => {
                self.check(handle)?;
                // The pivot is recorded even when the call fails later
                // (a malformed matrix): forget the previous one first.
                self.infos.get(info, ic)?.pivot = None;
                let pivot = legacy::factor0(
                    memory,
                    ic,
                    analysis,
                    m,
                    nnz,
                    base,
                    values,
                    offsets,
                    columns,
                    value_type,
                    boost.as_ref(),
                )?;
                let info = self.infos.get(info, ic)?;
                info.pivot = pivot;
                info.base = base;
                Ok(Vec::new())
            }
            Call::ZeroPivot {
                handle,
                info,
                ic,
                device_out,
            } => {
                self.check(handle)?;
                let position = self.infos.get(info, ic)?.position();
                if let Some(ptr) = device_out {
                    write_indices(memory, ptr, &[position], IndexType::I32)?;
                }
                Ok(position.to_le_bytes().to_vec())
            }
        }
    }
}

/// A non-negative dimension as `usize`.
fn dim(v: i64) -> Result<usize, Failure> {
    usize::try_from(v).map_err(|_| invalid())
}

fn rebase(v: &[i64], base: i64) -> Vec<i64> {
    v.iter().map(|x| x + base).collect()
}

/// Zero-based indices from `base`-based ones, each checked to lie in `0..dim`.
fn zero_based(indices: &[i64], base: i64, dim: usize) -> Result<Vec<usize>, Failure> {
    indices
        .iter()
        .map(|&i| {
            i.checked_sub(base)
                .and_then(|i| usize::try_from(i).ok())
                .filter(|&i| i < dim)
                .ok_or_else(invalid)
        })
        .collect()
}

/// The entry ranges of each row (or column) from `base`-based offsets,
/// checked to be non-decreasing and inside `0..nnz`.
fn row_ranges(
    offsets: &[i64],
    base: i64,
    nnz: i64,
) -> Result<Vec<std::ops::Range<usize>>, Failure> {
    offsets
        .windows(2)
        .map(|w| {
            let (start, end) = (w[0] - base, w[1] - base);
            if start < 0 || start > end || end > nnz {
                return Err(invalid());
            }
            Ok(start as usize..end as usize)
        })
        .collect()
}

/// The stored entries of `m`; with `with_values` false, zeros in place of
/// its values (which are then not read).
fn read_sparse(
    memory: &dyn DeviceMemory,
    m: &SpMat,
    with_values: bool,
) -> Result<Triplets, Failure> {
    let rows = dim(m.rows)?;
    let cols = dim(m.cols)?;
    let nnz = dim(m.nnz)?;
    let mut t = Triplets {
        rows,
        cols,
        entries: Vec::new(),
    };
    if nnz == 0 {
        return Ok(t);
    }
    let base = i64::from(m.base);
    if base > 1 {
        return Err(invalid());
    }
    let index_type = IndexType::from_cusparse(m.index_type)?;
    let values = if with_values {
        read_values(memory, m.values, m.nnz, ValueType::from_cuda(m.value_type)?)?
    } else {
        vec![Complex::ZERO; nnz]
    };
    let minor = read_indices(memory, m.indices, m.nnz, index_type)?;
    match m.format {
        FORMAT_COO => {
            let row_of = zero_based(
                &read_indices(memory, m.offsets, m.nnz, index_type)?,
                base,
                rows,
            )?;
            let col_of = zero_based(&minor, base, cols)?;
            t.entries = (0..nnz)
                .map(|k| (row_of[k], col_of[k], values[k]))
                .collect();
        }
        FORMAT_CSR | FORMAT_CSC => {
            let csr = m.format == FORMAT_CSR;
            let (major_dim, minor_dim) = if csr { (rows, cols) } else { (cols, rows) };
            let offset_type = IndexType::from_cusparse(m.offset_type)?;
            let offsets = read_indices(memory, m.offsets, major_dim as i64 + 1, offset_type)?;
            let minor = zero_based(&minor, base, minor_dim)?;
            t.entries.reserve(nnz);
            for (major, range) in row_ranges(&offsets, base, m.nnz)?.into_iter().enumerate() {
                for k in range {
                    let (i, j) = if csr {
                        (major, minor[k])
                    } else {
                        (minor[k], major)
                    };
                    t.entries.push((i, j, values[k]));
                }
            }
        }
        _ => return Err(Failure::Status(NOT_SUPPORTED)),
    }
    Ok(t)
}

/// Offsets (zero-based) of `found`'s entries by row for CSR `m`, by column
/// for CSC.
fn major_offsets(m: &SpMat, found: &Triplets) -> Vec<i64> {
    if m.format == FORMAT_CSR {
        let rows: Vec<usize> = found.entries.iter().map(|e| e.0).collect();
        kernels::compress(&rows, found.rows)
    } else {
        let cols: Vec<usize> = found.entries.iter().map(|e| e.1).collect();
        kernels::compress(&cols, found.cols)
    }
}

/// Stores `t` (in the order of `m`'s format) into the arrays of `m`.
fn write_sparse(memory: &mut dyn DeviceMemory, m: &SpMat, t: &Triplets) -> Result<(), Failure> {
    let base = i64::from(m.base);
    let index_type = IndexType::from_cusparse(m.index_type)?;
    let value_type = ValueType::from_cuda(m.value_type)?;
    let minor: Vec<i64> = t
        .entries
        .iter()
        .map(|e| if m.format == FORMAT_CSC { e.0 } else { e.1 } as i64 + base)
        .collect();
    match m.format {
        FORMAT_COO => {
            let rows: Vec<i64> = t.entries.iter().map(|e| e.0 as i64 + base).collect();
            write_indices(memory, m.offsets, &rows, index_type)?;
        }
        FORMAT_CSR | FORMAT_CSC => {
            let offsets = major_offsets(m, t);
            let ty = IndexType::from_cusparse(m.offset_type)?;
            write_indices(memory, m.offsets, &rebase(&offsets, base), ty)?;
        }
        _ => return Err(Failure::Status(NOT_SUPPORTED)),
    }
    write_indices(memory, m.indices, &minor, index_type)?;
    let values: Vec<Complex> = t.entries.iter().map(|e| e.2).collect();
    write_values(memory, m.values, &values, value_type)
}

/// The nonzeros of dense `a`, in the order sparse `b`'s format stores them.
fn dense_nonzeros(memory: &dyn DeviceMemory, a: &DnMat, b: &SpMat) -> Result<Triplets, Failure> {
    let dense = DeviceDense::read(memory, a)?;
    if (dense.rows as i64, dense.cols as i64) != (b.rows, b.cols) {
        return Err(invalid());
    }
    ValueType::from_cuda(b.value_type)?;
    Ok(kernels::nonzeros(&dense.load(), b.format != FORMAT_CSC))
}

/// A dense matrix's whole extent in device memory (its padding between
/// columns is kept as it was when written back).
struct DeviceDense {
    rows: usize,
    cols: usize,
    ld: usize,
    row_major: bool,
    ptr: u64,
    ty: ValueType,
    storage: Vec<Complex>,
}

/// A dense matrix's shape and storage, checked: its order, `ld` at least
/// the inner dimension (and 1), and the elements its storage spans.
struct DenseLayout {
    rows: usize,
    cols: usize,
    ld: usize,
    row_major: bool,
    ty: ValueType,
    /// Elements from the first to the last one stored.
    extent: usize,
}

fn dense_layout(m: &DnMat) -> Result<DenseLayout, Failure> {
    let rows = dim(m.rows)?;
    let cols = dim(m.cols)?;
    let ld = dim(m.ld)?;
    let row_major = match m.order {
        ORDER_COL => false,
        ORDER_ROW => true,
        _ => return Err(invalid()),
    };
    let (outer, inner) = if row_major {
        (rows, cols)
    } else {
        (cols, rows)
    };
    if ld < inner.max(1) {
        return Err(invalid());
    }
    let ty = ValueType::from_cuda(m.value_type)?;
    let extent = if outer == 0 || inner == 0 {
        0
    } else {
        (outer - 1)
            .checked_mul(ld)
            .and_then(|e| e.checked_add(inner))
            .ok_or_else(invalid)?
    };
    Ok(DenseLayout {
        rows,
        cols,
        ld,
        row_major,
        ty,
        extent,
    })
}

impl DeviceDense {
    fn read(memory: &dyn DeviceMemory, m: &DnMat) -> Result<Self, Failure> {
        let DenseLayout {
            rows,
            cols,
            ld,
            row_major,
            ty,
            extent,
        } = dense_layout(m)?;
        let storage = read_values(memory, m.values, extent as i64, ty)?;
        Ok(Self {
            rows,
            cols,
            ld,
            row_major,
            ptr: m.values,
            ty,
            storage,
        })
    }

    fn index(&self, i: usize, j: usize) -> usize {
        if self.row_major {
            i * self.ld + j
        } else {
            j * self.ld + i
        }
    }

    /// Its values as a compact column-major matrix.
    fn load(&self) -> Dense {
        let mut d = Dense::zeros(self.rows, self.cols);
        for j in 0..self.cols {
            for i in 0..self.rows {
                *d.at_mut(i, j) = self.storage[self.index(i, j)];
            }
        }
        d
    }

    /// Replaces its values with `d` (of the same shape).
    fn store(&mut self, d: &Dense) {
        for j in 0..self.cols {
            for i in 0..self.rows {
                let k = self.index(i, j);
                self.storage[k] = d.at(i, j);
            }
        }
    }

    fn write(&self, memory: &mut dyn DeviceMemory) -> Result<(), Failure> {
        write_values(memory, self.ptr, &self.storage, self.ty)
    }
}

/// Reads a dense vector of `expected` elements.
fn read_vector(
    memory: &dyn DeviceMemory,
    v: &DnVec,
    expected: usize,
) -> Result<(Vec<Complex>, ValueType), Failure> {
    if v.size != expected as i64 {
        return Err(invalid());
    }
    let ty = ValueType::from_cuda(v.value_type)?;
    Ok((read_values(memory, v.values, v.size, ty)?, ty))
}

/// The value of `s`, read from the device in `compute_type` if it lives
/// there.
fn scalar(
    memory: &dyn DeviceMemory,
    s: Scalar,
    compute_type: ValueType,
) -> Result<Complex, Failure> {
    match s.device {
        None => Ok(Complex::new(s.value.0, s.value.1)),
        Some(ptr) => {
            let bytes = memory.read(ptr, compute_type.size())?;
            Ok(compute_type.decode(bytes)[0])
        }
    }
}

fn op(id: u8) -> Result<Op, Failure> {
    Op::from_cusparse(id).ok_or_else(invalid)
}

#[allow(clippy::too_many_arguments)]
fn spmv(
    memory: &mut dyn DeviceMemory,
    op_a: u8,
    alpha: Scalar,
    a: &SpMat,
    x: &DnVec,
    beta: Scalar,
    y: &DnVec,
    compute_type: u8,
) -> Result<(), Failure> {
    let compute_type = ValueType::from_cuda(compute_type)?;
    let a = read_sparse(memory, a, true)?.apply(op(op_a)?);
    let (xv, _) = read_vector(memory, x, a.cols)?;
    let (mut yv, y_type) = read_vector(memory, y, a.rows)?;
    let alpha = scalar(memory, alpha, compute_type)?;
    let beta = scalar(memory, beta, compute_type)?;
    kernels::spmv(&a, &xv, alpha, beta, &mut yv);
    write_values(memory, y.values, &yv, y_type)
}

#[allow(clippy::too_many_arguments)]
fn spmm(
    memory: &mut dyn DeviceMemory,
    op_a: u8,
    op_b: u8,
    alpha: Scalar,
    a: &SpMat,
    b: &DnMat,
    beta: Scalar,
    c: &DnMat,
    compute_type: u8,
) -> Result<(), Failure> {
    let compute_type = ValueType::from_cuda(compute_type)?;
    let a = read_sparse(memory, a, true)?.apply(op(op_a)?);
    let b = DeviceDense::read(memory, b)?.load().apply(op(op_b)?);
    let mut c_dense = DeviceDense::read(memory, c)?;
    if a.cols != b.rows || c_dense.rows != a.rows || c_dense.cols != b.cols {
        return Err(invalid());
    }
    let alpha = scalar(memory, alpha, compute_type)?;
    let beta = scalar(memory, beta, compute_type)?;
    let mut result = c_dense.load();
    kernels::spmm(&a, &b, alpha, beta, &mut result);
    c_dense.store(&result);
    c_dense.write(memory)
}

/// The two CSR matrices (the only format cuSPARSE's SpGEMM takes) of a
/// product, read; `values`: with their values, not only their patterns.
fn spgemm_operands(
    memory: &dyn DeviceMemory,
    a: &SpMat,
    b: &SpMat,
    values: bool,
) -> Result<(kernels::Triplets, kernels::Triplets), Failure> {
    if a.format != FORMAT_CSR || b.format != FORMAT_CSR {
        return Err(Failure::Status(NOT_SUPPORTED));
    }
    let a = read_sparse(memory, a, values)?;
    let b = read_sparse(memory, b, values)?;
    if a.cols != b.rows {
        return Err(invalid());
    }
    Ok((a, b))
}

fn spgemm_copy(
    memory: &mut dyn DeviceMemory,
    alpha: Scalar,
    a: &SpMat,
    b: &SpMat,
    c: &SpMat,
    compute_type: u8,
) -> Result<(), Failure> {
    let compute_type = ValueType::from_cuda(compute_type)?;
    if c.format != FORMAT_CSR || c.rows != a.rows || c.cols != b.cols {
        return Err(invalid());
    }
    let alpha = scalar(memory, alpha, compute_type)?;
    let (a, b) = spgemm_operands(memory, a, b, true)?;
    // C's arrays were sized by the nnz phase: a product that does not fit
    // them is refused before it is formed.
    let room = usize::try_from(c.nnz).map_err(|_| invalid())?;
    let product = kernels::spgemm(&a, &b, alpha, room).ok_or_else(invalid)?;
    if product.columns.len() != room {
        return Err(invalid());
    }
    let base = i64::from(c.base);
    let offset_type = IndexType::from_cusparse(c.offset_type)?;
    let index_type = IndexType::from_cusparse(c.index_type)?;
    write_indices(
        memory,
        c.offsets,
        &rebase(&product.offsets, base),
        offset_type,
    )?;
    write_indices(
        memory,
        c.indices,
        &rebase(&product.columns, base),
        index_type,
    )?;
    write_values(
        memory,
        c.values,
        &product.values,
        ValueType::from_cuda(c.value_type)?,
    )
}

fn spsv(
    memory: &mut dyn DeviceMemory,
    op_a: u8,
    alpha: Scalar,
    a: &SpMat,
    x: &DnVec,
    y: &DnVec,
    compute_type: u8,
) -> Result<(), Failure> {
    let compute_type = ValueType::from_cuda(compute_type)?;
    let op_a = op(op_a)?;
    if a.rows != a.cols || a.fill_mode > 1 || a.diag_type > 1 {
        return Err(invalid());
    }
    // The fill mode names a triangle of A as stored; op(A) has the other
    // one when transposed.
    let lower = (a.fill_mode == 0) == (op_a == Op::None);
    let unit = a.diag_type == 1;
    let a = read_sparse(memory, a, true)?.apply(op_a);
    let (xv, _) = read_vector(memory, x, a.rows)?;
    let (_, y_type) = read_vector(memory, y, a.rows)?;
    let alpha = scalar(memory, alpha, compute_type)?;
    let solution = kernels::triangular_solve(&a, lower, unit, alpha, &xv);
    write_values(memory, y.values, &solution, y_type)
}
