//! cuSPARSE calls on a real GPU, through NVIDIA's library opened on the
//! first handle ([`SparseLibrary`]).
//!
//! The wire sends matrix and vector descriptors by value with each call;
//! NVIDIA's descriptors are made for the call and destroyed after it. Each
//! call's arguments are checked as the emulated device checks them, and
//! every array and device-side scalar it touches, sized as the emulated
//! device sizes them (`rcud_math::sparse::extents`), is checked against
//! the client's own allocations before cuSPARSE sees it: a range outside
//! them is `cudaErrorIllegalAddress`, as on the emulated device. The
//! external buffers cuSPARSE asks for are the server's own, per handle
//! (`rcud_cuda_driver::cusparse::SparseHandle`). Sizes only the library
//! finds (a product's or a dense matrix's nnz) are compared with the
//! client's descriptor before anything is written through it.

use std::collections::BTreeMap;

use rcud_cuda_driver::cusparse::{
    self as nv, Csr2CscArgs, DnMatArgs, DnVecArgs, Format, HostScalar, ScalarArg, SpMatArgs,
    SpVecArgs, SparseError,
};
use rcud_math::sparse::values::{Complex, ValueType};
use rcud_math::sparse::{
    extents, Failure as Refusal, INVALID_VALUE, NOT_INITIALIZED, NOT_SUPPORTED,
};
use rcud_math::Reply;
use rcud_proto::math::sparse::{Call, DnMat, DnVec, Scalar, SpMat, SpVec};
use rcud_proto::ops::Failure;
use rcud_proto::CudaError;

use super::library::LazyLibrary;
use super::CudaDeviceContext;

/// NVIDIA's cuSPARSE, opened on first use and shared by every client.
pub(super) type SparseLibrary = LazyLibrary<nv::Sparse>;

/// The cuSPARSE handles of one client context, by wire id.
#[derive(Debug, Default)]
pub(super) struct SparseHandles {
    handles: BTreeMap<u64, nv::SparseHandle>,
    next: u64,
}

impl SparseHandles {
    /// Destroys every handle and frees its buffers (before the context goes).
    pub(super) fn clear(&mut self) {
        self.handles.clear();
    }
}

/// `cusparseFormat_t` of a checked descriptor.
fn format(id: u8) -> Result<Format, i32> {
    match id {
        1 => Ok(Format::Csr),
        2 => Ok(Format::Csc),
        3 => Ok(Format::Coo),
        _ => Err(NOT_SUPPORTED),
    }
}

/// NVIDIA's descriptor contents for `m`; with `triangle`, its fill mode
/// and diagonal type as SpSV attributes.
fn sp_mat(m: &SpMat, triangle: bool) -> Result<SpMatArgs, i32> {
    Ok(SpMatArgs {
        format: format(m.format)?,
        rows: m.rows,
        cols: m.cols,
        nnz: m.nnz,
        offsets: m.offsets,
        indices: m.indices,
        values: m.values,
        offset_type: i32::from(m.offset_type),
        index_type: i32::from(m.index_type),
        base: i32::from(m.base),
        value_type: i32::from(m.value_type),
        triangle: triangle.then_some((i32::from(m.fill_mode), i32::from(m.diag_type))),
    })
}

fn dn_vec(v: &DnVec) -> DnVecArgs {
    DnVecArgs {
        size: v.size,
        values: v.values,
        value_type: i32::from(v.value_type),
    }
}

fn sp_vec(v: &SpVec) -> SpVecArgs {
    SpVecArgs {
        size: v.size,
        nnz: v.nnz,
        indices: v.indices,
        values: v.values,
        index_type: i32::from(v.index_type),
        base: i32::from(v.base),
        value_type: i32::from(v.value_type),
    }
}

fn dn_mat(m: &DnMat) -> DnMatArgs {
    DnMatArgs {
        rows: m.rows,
        cols: m.cols,
        ld: m.ld,
        values: m.values,
        value_type: i32::from(m.value_type),
        order: i32::from(m.order),
    }
}

/// A scalar for cuSPARSE: its device address (checked with the call's
/// extents), or its value in `compute`'s type, aligned for complex loads.
fn scalar(s: &Scalar, compute: u8) -> Result<ScalarArg, i32> {
    if let Some(ptr) = s.device {
        return Ok(ScalarArg::Device(ptr));
    }
    let ty = ValueType::from_cuda(compute).map_err(|_| NOT_SUPPORTED)?;
    let bytes = ty.encode(&[Complex::new(s.value.0, s.value.1)]);
    let mut host = HostScalar::default();
    host.0[..bytes.len()].copy_from_slice(&bytes);
    Ok(ScalarArg::Host(host))
}

/// One in `ty` (SpGEMM's alpha when only the product's size is asked).
fn one(ty: u8) -> Result<ScalarArg, i32> {
    scalar(
        &Scalar {
            value: (1.0, 0.0),
            device: None,
        },
        ty,
    )
}

/// The handle a compute call names.
fn handle_of(call: &Call) -> u64 {
    match call {
        Call::Create {} | Call::CreateInfo { .. } | Call::DestroyInfo { .. } => 0,
        Call::Destroy { handle }
        | Call::IdentityPermutation { handle, .. }
        | Call::CooSort { handle, .. }
        | Call::CompressedSort { handle, .. }
        | Call::Gather { handle, .. }
        | Call::Scatter { handle, .. }
        | Call::Factor0 { handle, .. }
        | Call::ZeroPivot { handle, .. }
        | Call::SpMv { handle, .. }
        | Call::SpMm { handle, .. }
        | Call::SpGemmNnz { handle, .. }
        | Call::SpGemmCopy { handle, .. }
        | Call::SpSv { handle, .. }
        | Call::Csr2Csc { handle, .. }
        | Call::Coo2Csr { handle, .. }
        | Call::Csr2Coo { handle, .. }
        | Call::SparseToDense { handle, .. }
        | Call::DenseToSparseAnalysis { handle, .. }
        | Call::DenseToSparseConvert { handle, .. } => *handle,
    }
}

/// What one checked call asks of its handle: the reply's bytes.
fn run(h: &mut nv::SparseHandle, call: &Call) -> Result<Result<Vec<u8>, SparseError>, i32> {
    let nothing = |r: Result<(), SparseError>| r.map(|()| Vec::new());
    let nnz = |r: Result<i64, SparseError>| r.map(|n| n.to_le_bytes().to_vec());
    Ok(match call {
        Call::Create {} | Call::Destroy { .. } => Ok(Vec::new()),
        Call::IdentityPermutation { n, p, .. } => nothing(h.identity_permutation(*n, *p)),
        Call::CooSort {
            by_row,
            m,
            n,
            nnz,
            rows,
            cols,
            p,
            ..
        } => nothing(h.coo_sort(*by_row, *m, *n, *nnz, *rows, *cols, *p)),
        Call::CompressedSort {
            major,
            minor,
            nnz,
            base,
            offsets,
            indices,
            p,
            ..
        } => nothing(h.compressed_sort(
            *major,
            *minor,
            *nnz,
            i32::from(*base),
            *offsets,
            *indices,
            *p,
        )),
        Call::Gather { y, x, .. } => nothing(h.gather_scatter(false, &sp_vec(x), &dn_vec(y))),
        Call::Scatter { x, y, .. } => nothing(h.gather_scatter(true, &sp_vec(x), &dn_vec(y))),
        // Refused by `extents::of` before this: ILU(0)/IC(0) are not
        // forwarded.
        Call::CreateInfo { .. }
        | Call::DestroyInfo { .. }
        | Call::Factor0 { .. }
        | Call::ZeroPivot { .. } => return Err(NOT_SUPPORTED),
        Call::SpMv {
            op,
            alpha,
            a,
            x,
            beta,
            y,
            compute_type,
            ..
        } => nothing(h.spmv(
            i32::from(*op),
            &scalar(alpha, *compute_type)?,
            &sp_mat(a, false)?,
            &dn_vec(x),
            &scalar(beta, *compute_type)?,
            &dn_vec(y),
            i32::from(*compute_type),
        )),
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
        } => nothing(h.spmm(
            [i32::from(*op_a), i32::from(*op_b)],
            &scalar(alpha, *compute_type)?,
            &sp_mat(a, false)?,
            &dn_mat(b),
            &scalar(beta, *compute_type)?,
            &dn_mat(c),
            i32::from(*compute_type),
        )),
        // The wire's nnz call has no alpha or compute type: the product is
        // computed with alpha 1 in A's type, for its size only.
        Call::SpGemmNnz { a, b, .. } => nnz(h.spgemm_nnz(
            &sp_mat(a, false)?,
            &sp_mat(b, false)?,
            &one(a.value_type)?,
            i32::from(a.value_type),
        )),
        Call::SpGemmCopy {
            alpha,
            a,
            b,
            c,
            compute_type,
            ..
        } => nothing(h.spgemm_copy(
            &scalar(alpha, *compute_type)?,
            &sp_mat(a, false)?,
            &sp_mat(b, false)?,
            &sp_mat(c, false)?,
            i32::from(*compute_type),
        )),
        Call::SpSv {
            op,
            alpha,
            a,
            x,
            y,
            compute_type,
            ..
        } => nothing(h.spsv(
            i32::from(*op),
            &scalar(alpha, *compute_type)?,
            &sp_mat(a, true)?,
            &dn_vec(x),
            &dn_vec(y),
            i32::from(*compute_type),
        )),
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
        } => nothing(h.csr2csc(&Csr2CscArgs {
            m: *m,
            n: *n,
            nnz: *nnz,
            csr_values: *csr_values,
            csr_offsets: *csr_offsets,
            csr_columns: *csr_columns,
            csc_values: *csc_values,
            csc_offsets: *csc_offsets,
            csc_rows: *csc_rows,
            value_type: i32::from(*value_type),
            copy_values: *copy_values,
            base: i32::from(*base),
        })),
        Call::Coo2Csr {
            coo_rows,
            nnz,
            m,
            csr_offsets,
            base,
            ..
        } => nothing(h.compress(true, [*coo_rows, *csr_offsets], *nnz, *m, i32::from(*base))),
        Call::Csr2Coo {
            csr_offsets,
            nnz,
            m,
            coo_rows,
            base,
            ..
        } => nothing(h.compress(false, [*csr_offsets, *coo_rows], *nnz, *m, i32::from(*base))),
        Call::SparseToDense { a, b, .. } => {
            nothing(h.sparse_to_dense(&sp_mat(a, false)?, &dn_mat(b)))
        }
        Call::DenseToSparseAnalysis { a, b, .. } => {
            nnz(h.dense_to_sparse(&dn_mat(a), &sp_mat(b, false)?, false))
        }
        Call::DenseToSparseConvert { a, b, .. } => nothing(
            h.dense_to_sparse(&dn_mat(a), &sp_mat(b, false)?, true)
                .map(|_| ()),
        ),
    })
}

impl CudaDeviceContext {
    /// Runs one cuSPARSE call (the library's calls on the `cuda` backend).
    pub(super) fn sparse_call(&mut self, call: Call) -> Result<Reply, Failure> {
        match call {
            Call::Create {} => return self.sparse_create(),
            Call::Destroy { handle } => {
                // Dropping the handle destroys it, with its context
                // current, and frees its buffers.
                return Ok(match self.sparse.handles.remove(&handle) {
                    Some(_) => Reply::ok(Vec::new()),
                    None => Reply::status(NOT_INITIALIZED),
                });
            }
            // The legacy ILU(0)/IC(0) (their info objects, the
            // factorizations and zero pivots) are not forwarded to NVIDIA's
            // library yet.
            Call::CreateInfo { .. } | Call::DestroyInfo { .. } => {
                tracing::debug!("cuSPARSE's legacy incomplete factorizations are not forwarded");
                return Ok(Reply::status(NOT_SUPPORTED));
            }
            _ => {}
        }
        let handle = handle_of(&call);
        if !self.sparse.handles.contains_key(&handle) {
            return Ok(Reply::status(NOT_INITIALIZED));
        }
        let touched = match extents::of(&call) {
            Ok(touched) => touched,
            Err(Refusal::Status(status)) => return Ok(Reply::status(status)),
            Err(Refusal::Fault(f)) => {
                return Err(Failure::new(
                    CudaError::ILLEGAL_ADDRESS,
                    format!("cuSPARSE: {} bytes at {:#x}", f.len, f.ptr),
                ))
            }
        };
        for x in &touched {
            if self.memory.check(x.ptr, x.len).is_err() {
                return Err(Failure::new(
                    CudaError::ILLEGAL_ADDRESS,
                    format!(
                        "cuSPARSE {}: {} bytes at {:#x} are outside the client's device memory",
                        x.what, x.len, x.ptr
                    ),
                ));
            }
        }
        self.live()?;
        let Some(h) = self.sparse.handles.get_mut(&handle) else {
            return Ok(Reply::status(NOT_INITIALIZED));
        };
        match run(h, &call) {
            Err(status) => Ok(Reply::status(status)),
            Ok(Ok(out)) => Ok(Reply::ok(out)),
            Ok(Err(e)) => self.sparse_failed(e),
        }
    }

    fn sparse_create(&mut self) -> Result<Reply, Failure> {
        // Opened here, so that a server without cuSPARSE says so at the
        // application's first cuSPARSE call.
        let library = self.sparse_library.clone();
        let sparse = library.get()?;
        let ctx = self.live()?.clone();
        match ctx.sparse_handle(sparse) {
            Ok(h) => {
                self.sparse.next += 1;
                let id = self.sparse.next;
                self.sparse.handles.insert(id, h);
                Ok(Reply::ok(id.to_le_bytes().to_vec()))
            }
            Err(e) => self.sparse_failed(e),
        }
    }

    /// cuSPARSE's own status goes back to the application (arguments that
    /// do not fit are `INVALID_VALUE`); a driver failure (the context
    /// broken, no memory for a buffer) is the runtime's error.
    fn sparse_failed(&mut self, e: SparseError) -> Result<Reply, Failure> {
        match e {
            SparseError::Driver(e) => Err(self.note(&e)),
            other => {
                tracing::debug!("cuSPARSE: {other}");
                Ok(Reply::status(other.status().unwrap_or(INVALID_VALUE)))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn host_scalars_are_encoded_in_the_compute_type() {
        let s = Scalar {
            value: (2.0, -1.0),
            device: None,
        };
        let ScalarArg::Host(c) = scalar(&s, 4).unwrap() else {
            panic!("a host scalar");
        };
        assert_eq!(&c.0[..4], &2f32.to_le_bytes());
        assert_eq!(&c.0[4..8], &(-1f32).to_le_bytes());
        let ScalarArg::Host(d) = scalar(&s, 1).unwrap() else {
            panic!("a host scalar");
        };
        assert_eq!(&d.0[..8], &2f64.to_le_bytes());
        assert_eq!(&d.0[8..], &[0u8; 8]);
        let device = Scalar {
            value: (0.0, 0.0),
            device: Some(0x1000),
        };
        assert_eq!(scalar(&device, 0), Ok(ScalarArg::Device(0x1000)));
        assert_eq!(scalar(&s, 9), Err(NOT_SUPPORTED));
    }
}
