//! What a call would touch, without touching it: its arguments checked as
//! this module checks them (the same statuses), and the device ranges of
//! every array and device-side scalar it reads or writes, sized as this
//! module reads them. For a backend that hands the call to NVIDIA's
//! library, which checks no address: the `cuda` backend checks each range
//! against the client's allocations before cuSPARSE sees it.
//!
//! Where NVIDIA's kernels touch more than the emulated computation, the
//! ranges here cover it: a CSR or CSC matrix's offsets are walked even when
//! it has no entries, and SpGEMM's nnz phase reads the values too.
//! Index contents are not checked here (that would read them all): the
//! emulated device checks them as it reads; on a GPU the kernels run in the
//! client's own context.

use rcud_proto::math::sparse::{Call, DnMat, DnVec, Scalar, SpMat};

use super::kernels::Op;
use super::values::{byte_len, IndexType, ValueType};
use super::NOT_SUPPORTED;
use super::{dense_layout, dim, invalid, op, Failure, FORMAT_COO, FORMAT_CSC, FORMAT_CSR};

/// Bytes at a device address a call reads or writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Extent {
    /// Which operand, for messages ("A values").
    pub what: &'static str,
    /// Device address.
    pub ptr: u64,
    /// Bytes (never zero: empty arrays are left out).
    pub len: u64,
}

/// Collects the non-empty extents of one call.
#[derive(Default)]
struct Extents(Vec<Extent>);

impl Extents {
    fn add(&mut self, what: &'static str, ptr: u64, len: u64) {
        if len > 0 {
            self.0.push(Extent { what, ptr, len });
        }
    }

    fn scalar(&mut self, what: &'static str, s: &Scalar, compute: ValueType) {
        if let Some(ptr) = s.device {
            self.add(what, ptr, compute.size());
        }
    }

    fn vector(&mut self, what: &'static str, v: &DnVec, expected: i64) -> Result<(), Failure> {
        if v.size != expected {
            return Err(invalid());
        }
        let ty = ValueType::from_cuda(v.value_type)?;
        self.add(what, v.values, byte_len(v.size, ty.size())?);
        Ok(())
    }

    /// A dense matrix: its shape `(rows, cols)`.
    fn dense(&mut self, what: &'static str, m: &DnMat) -> Result<(usize, usize), Failure> {
        let layout = dense_layout(m)?;
        self.add(
            what,
            m.values,
            byte_len(
                i64::try_from(layout.extent).map_err(|_| invalid())?,
                layout.ty.size(),
            )?,
        );
        Ok((layout.rows, layout.cols))
    }

    /// A sparse matrix's arrays (`names`: offsets, indices, values), the
    /// values when `with_values`: its shape `(rows, cols)`.
    fn sparse(
        &mut self,
        names: [&'static str; 3],
        m: &SpMat,
        with_values: bool,
    ) -> Result<(usize, usize), Failure> {
        let (rows, cols) = (dim(m.rows)?, dim(m.cols)?);
        dim(m.nnz)?;
        if m.base > 1 {
            return Err(invalid());
        }
        let index = IndexType::from_cusparse(m.index_type)?;
        let value = ValueType::from_cuda(m.value_type)?;
        let offsets = match m.format {
            FORMAT_COO => byte_len(m.nnz, index.size())?,
            FORMAT_CSR | FORMAT_CSC => {
                let major = if m.format == FORMAT_CSR { rows } else { cols };
                let count = i64::try_from(major).map_err(|_| invalid())?;
                byte_len(count + 1, IndexType::from_cusparse(m.offset_type)?.size())?
            }
            _ => return Err(Failure::Status(NOT_SUPPORTED)),
        };
        self.add(names[0], m.offsets, offsets);
        self.add(names[1], m.indices, byte_len(m.nnz, index.size())?);
        if with_values {
            self.add(names[2], m.values, byte_len(m.nnz, value.size())?);
        }
        Ok((rows, cols))
    }
}

const A: [&str; 3] = ["A offsets", "A indices", "A values"];
const B: [&str; 3] = ["B offsets", "B indices", "B values"];
const C: [&str; 3] = ["C offsets", "C indices", "C values"];

/// `(rows, cols)` of `op(m)`.
fn applied(op: Op, (rows, cols): (usize, usize)) -> (usize, usize) {
    if op == Op::None {
        (rows, cols)
    } else {
        (cols, rows)
    }
}

/// A 32-bit count of the legacy-style calls as a length.
fn count32(v: i32) -> Result<i64, Failure> {
    dim(i64::from(v)).map(|_| i64::from(v))
}

/// Checks `call`'s arguments as the emulated device does and answers the
/// device ranges it touches; `Create` and `Destroy` touch none. Sizes that
/// only the computation finds (SpGEMM's and DenseToSparse's nnz) are the
/// caller's to compare with the descriptors.
pub fn of(call: &Call) -> Result<Vec<Extent>, Failure> {
    let mut e = Extents::default();
    match call {
        Call::Create {} | Call::Destroy { .. } => {}
        Call::IdentityPermutation { n, p, .. } => {
            e.add("permutation", *p, byte_len(count32(*n)?, 4)?);
        }
        Call::CooSort {
            m,
            n,
            nnz,
            rows,
            cols,
            p,
            ..
        } => {
            count32(*m)?;
            count32(*n)?;
            let len = byte_len(count32(*nnz)?, 4)?;
            e.add("COO rows", *rows, len);
            e.add("COO columns", *cols, len);
            if *p != 0 {
                e.add("permutation", *p, len);
            }
        }
        Call::CompressedSort {
            major,
            minor,
            nnz,
            base,
            offsets,
            indices,
            p,
            ..
        } => {
            let major = count32(*major)?;
            count32(*minor)?;
            let len = byte_len(count32(*nnz)?, 4)?;
            if *base > 1 {
                return Err(invalid());
            }
            e.add("offsets", *offsets, byte_len(major + 1, 4)?);
            e.add("indices", *indices, len);
            if *p != 0 {
                e.add("permutation", *p, len);
            }
        }
        Call::Gather { y, x, .. } | Call::Scatter { x, y, .. } => {
            let ty = ValueType::from_cuda(x.value_type)?;
            if ValueType::from_cuda(y.value_type)? != ty
                || x.size != y.size
                || x.nnz < 0
                || x.nnz > x.size
                || x.base > 1
            {
                return Err(invalid());
            }
            let index = IndexType::from_cusparse(x.index_type)?;
            e.add("X indices", x.indices, byte_len(x.nnz, index.size())?);
            e.add("X values", x.values, byte_len(x.nnz, ty.size())?);
            e.add("Y values", y.values, byte_len(y.size, ty.size())?);
        }
        // ILU(0)/IC(0) are computed on the emulated device only: their
        // info objects are the server's, not forwarded to NVIDIA's yet.
        Call::CreateInfo { .. }
        | Call::DestroyInfo { .. }
        | Call::Factor0 { .. }
        | Call::ZeroPivot { .. } => return Err(Failure::Status(NOT_SUPPORTED)),
        Call::SpMv {
            op: op_a,
            alpha,
            a,
            x,
            beta,
            y,
            compute_type,
            ..
        } => {
            let compute = ValueType::from_cuda(*compute_type)?;
            let shape = e.sparse(A, a, true)?;
            let (rows, cols) = applied(op(*op_a)?, shape);
            e.vector("x", x, cols as i64)?;
            e.vector("y", y, rows as i64)?;
            e.scalar("alpha", alpha, compute);
            e.scalar("beta", beta, compute);
        }
        Call::SpMm {
            op_a,
            op_b,
            alpha,
            a,
            b,
            beta,
            c,
            compute_type,
            ..
        } => {
            let compute = ValueType::from_cuda(*compute_type)?;
            let a_shape = applied(op(*op_a)?, e.sparse(A, a, true)?);
            let b_shape = applied(op(*op_b)?, e.dense("B", b)?);
            let c_shape = e.dense("C", c)?;
            if a_shape.1 != b_shape.0 || c_shape != (a_shape.0, b_shape.1) {
                return Err(invalid());
            }
            e.scalar("alpha", alpha, compute);
            e.scalar("beta", beta, compute);
        }
        Call::SpGemmNnz { a, b, .. } => {
            product(&mut e, a, b)?;
        }
        Call::SpGemmCopy {
            alpha,
            a,
            b,
            c,
            compute_type,
            ..
        } => {
            let compute = ValueType::from_cuda(*compute_type)?;
            let shape = product(&mut e, a, b)?;
            if c.format != FORMAT_CSR || e.sparse(C, c, true)? != shape {
                return Err(invalid());
            }
            e.scalar("alpha", alpha, compute);
        }
        Call::SpSv {
            op: op_a,
            alpha,
            a,
            x,
            y,
            compute_type,
            ..
        } => {
            let compute = ValueType::from_cuda(*compute_type)?;
            op(*op_a)?;
            if a.rows != a.cols || a.fill_mode > 1 || a.diag_type > 1 {
                return Err(invalid());
            }
            e.sparse(A, a, true)?;
            e.vector("x", x, a.rows)?;
            e.vector("y", y, a.rows)?;
            e.scalar("alpha", alpha, compute);
        }
        Call::Csr2Csc {
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
            ..
        } => {
            let (m, n, nnz) = (count32(*m)?, count32(*n)?, count32(*nnz)?);
            if *base > 1 {
                return Err(invalid());
            }
            e.add("CSR offsets", *csr_offsets, byte_len(m + 1, 4)?);
            e.add("CSR columns", *csr_columns, byte_len(nnz, 4)?);
            e.add("CSC offsets", *csc_offsets, byte_len(n + 1, 4)?);
            e.add("CSC rows", *csc_rows, byte_len(nnz, 4)?);
            if *copy_values {
                let size = ValueType::from_cuda(*value_type)?.size();
                e.add("CSR values", *csr_values, byte_len(nnz, size)?);
                e.add("CSC values", *csc_values, byte_len(nnz, size)?);
            }
        }
        Call::Coo2Csr {
            coo_rows,
            nnz,
            m,
            csr_offsets,
            base,
            ..
        } => {
            if *base > 1 {
                return Err(invalid());
            }
            e.add("COO rows", *coo_rows, byte_len(count32(*nnz)?, 4)?);
            e.add("CSR offsets", *csr_offsets, byte_len(count32(*m)? + 1, 4)?);
        }
        Call::Csr2Coo {
            csr_offsets,
            nnz,
            m,
            coo_rows,
            base,
            ..
        } => {
            if *base > 1 {
                return Err(invalid());
            }
            e.add("CSR offsets", *csr_offsets, byte_len(count32(*m)? + 1, 4)?);
            e.add("COO rows", *coo_rows, byte_len(count32(*nnz)?, 4)?);
        }
        Call::SparseToDense { a, b, .. } => {
            if e.sparse(A, a, true)? != e.dense("B", b)? {
                return Err(invalid());
            }
        }
        Call::DenseToSparseAnalysis { a, b, .. } => {
            let shape = e.dense("A", a)?;
            let mut sparse = Extents::default();
            if sparse.sparse(B, b, true)? != shape {
                return Err(invalid());
            }
            // The analysis writes B's offsets only (CSR, CSC).
            if b.format != FORMAT_COO {
                e.0.extend(sparse.0.into_iter().filter(|x| x.what == B[0]));
            }
        }
        Call::DenseToSparseConvert { a, b, .. } => {
            if e.dense("A", a)? != e.sparse(B, b, true)? {
                return Err(invalid());
            }
        }
    }
    Ok(e.0)
}

/// SpGEMM's operands: both CSR (cuSPARSE's own limit), `a.cols == b.rows`;
/// answers the product's shape.
fn product(e: &mut Extents, a: &SpMat, b: &SpMat) -> Result<(usize, usize), Failure> {
    if a.format != FORMAT_CSR || b.format != FORMAT_CSR {
        return Err(Failure::Status(NOT_SUPPORTED));
    }
    let (a_rows, a_cols) = e.sparse(A, a, true)?;
    let (b_rows, b_cols) = e.sparse(B, b, true)?;
    if a_cols != b_rows {
        return Err(invalid());
    }
    Ok((a_rows, b_cols))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn csr(rows: i64, cols: i64, nnz: i64) -> SpMat {
        SpMat {
            format: FORMAT_CSR,
            rows,
            cols,
            nnz,
            offsets: 0x1000,
            indices: 0x2000,
            values: 0x3000,
            offset_type: 3,
            index_type: 2,
            value_type: 5,
            ..SpMat::default()
        }
    }

    fn dense(values: u64) -> DnMat {
        DnMat {
            rows: 3,
            cols: 2,
            ld: 5,
            values,
            value_type: 0,
            order: 1,
        }
    }

    #[test]
    fn sparse_arrays_are_sized_by_their_types_and_offsets_even_when_empty() {
        let call = Call::SparseToDense {
            handle: 1,
            a: csr(3, 2, 4),
            b: dense(0x4000),
        };
        let got: Vec<(u64, u64)> = of(&call).unwrap().iter().map(|e| (e.ptr, e.len)).collect();
        // 4 i64 offsets, 4 i32 columns, 4 c64 values; (2 - 1) * 5 + 3 f32.
        assert_eq!(
            got,
            vec![(0x1000, 32), (0x2000, 16), (0x3000, 64), (0x4000, 32)]
        );
        let call = Call::SparseToDense {
            handle: 1,
            a: csr(3, 2, 0),
            b: dense(0x4000),
        };
        assert_eq!(of(&call).unwrap()[0].len, 32);
    }

    #[test]
    fn the_analysis_touches_the_offsets_only_and_shapes_must_agree() {
        let call = Call::DenseToSparseAnalysis {
            handle: 1,
            a: dense(0x4000),
            b: csr(3, 2, 9),
        };
        let whats: Vec<&str> = of(&call).unwrap().iter().map(|e| e.what).collect();
        assert_eq!(whats, vec!["A", "B offsets"]);
        let call = Call::DenseToSparseAnalysis {
            handle: 1,
            a: dense(0x4000),
            b: csr(2, 3, 0),
        };
        assert_eq!(of(&call), Err(invalid()));
    }
}
