//! cuBLASLt calls on a real GPU, through NVIDIA's library opened on the
//! first handle ([`BlasLtLibrary`]).
//!
//! A `Matmul` from the wire is checked as the emulated device checks it
//! (operations, leading dimensions, epilogue, the ranges of A, B, C, D, the
//! bias and device scalars over the whole strided batch) before
//! [`nv::LtHandle::matmul`] builds NVIDIA's descriptor and layouts for it.
//! The workspace cuBLASLt's heuristic may use is the server's own, one per
//! handle ([`nv::WORKSPACE_BYTES`]): the application's workspace, a
//! preference on the client, never reaches the server.

use std::collections::BTreeMap;

use rcud_cuda_driver::cublaslt::{self as nv, LtError, LtMatmul, LtMatrix};
use rcud_math::Reply;
use rcud_proto::math::blas::{dtype, Operand, Scalar};
use rcud_proto::math::blaslt::{epilogue, Call};
use rcud_proto::ops::Failure;
use rcud_proto::CudaError;

use super::blas::{self, matrix_range, strided_range, Refusal};
use super::library::LazyLibrary;
use super::CudaDeviceContext;

/// `CUBLAS_STATUS_NOT_INITIALIZED`: an unknown or destroyed handle.
const NOT_INITIALIZED: i32 = 1;
/// `CUBLAS_STATUS_INVALID_VALUE`.
const INVALID_VALUE: i32 = 7;
/// `CUBLAS_STATUS_NOT_SUPPORTED`.
const NOT_SUPPORTED: i32 = 15;

/// NVIDIA's cuBLASLt, opened on first use and shared by every client.
pub(super) type BlasLtLibrary = LazyLibrary<nv::BlasLt>;

/// The cuBLASLt handles of one client context, by wire id.
#[derive(Debug, Default)]
pub(super) struct BlasLtHandles {
    handles: BTreeMap<u64, nv::LtHandle>,
    next: u64,
}

impl BlasLtHandles {
    /// Destroys every handle and its workspace (before the context goes).
    pub(super) fn clear(&mut self) {
        self.handles.clear();
    }
}

/// The `cublasComputeType_t` cuBLASLt computes a product of scale type
/// `scale` in (16F, 32F, 64F), as `cublasGemmEx` on the emulated device.
fn compute_type(scale: u8) -> Option<i32> {
    match scale {
        dtype::R16F => Some(64),
        dtype::R32F | dtype::C32F => Some(68),
        dtype::R64F | dtype::C64F => Some(70),
        _ => None,
    }
}

/// Whether rcud computes `e` (the emulated device's set).
fn known_epilogue(e: i32) -> bool {
    [
        epilogue::DEFAULT,
        epilogue::RELU,
        epilogue::BIAS,
        epilogue::RELU_BIAS,
        epilogue::GELU,
        epilogue::GELU_BIAS,
    ]
    .contains(&e)
}

fn has_bias(e: i32) -> bool {
    e & epilogue::BIAS != 0
}

impl CudaDeviceContext {
    /// Runs one cuBLASLt call (the library's calls on the `cuda` backend).
    pub(super) fn blaslt_call(&mut self, call: Call) -> Result<Reply, Failure> {
        match call {
            Call::Create {} => self.blaslt_create(),
            // Dropping the handle destroys it, with its context current.
            Call::Destroy { handle } => Ok(match self.blaslt.handles.remove(&handle) {
                Some(_) => Reply::ok(Vec::new()),
                None => Reply::status(NOT_INITIALIZED),
            }),
            Call::Matmul {
                handle,
                types,
                transa,
                transb,
                m,
                n,
                k,
                alpha,
                a,
                b,
                beta,
                c,
                d,
                batch,
                epilogue,
                bias,
                bias_stride,
            } => {
                if !self.blaslt.handles.contains_key(&handle) {
                    return Ok(Reply::status(NOT_INITIALIZED));
                }
                let product = Product {
                    types,
                    trans: [transa, transb],
                    dims: [m, n, k, batch],
                    scalars: [alpha, beta],
                    operands: [a, b, c, d],
                    epilogue,
                    bias: (bias, bias_stride),
                };
                let checked = match self.blaslt_check(&product) {
                    Ok(Some(checked)) => checked,
                    Ok(None) => return Ok(Reply::ok(Vec::new())),
                    Err(Refusal::Status(s)) => return Ok(Reply::status(s)),
                    Err(Refusal::Fault { what, ptr, len }) => {
                        return Err(Failure::new(
                            CudaError::ILLEGAL_ADDRESS,
                            format!(
                                "cuBLASLt {what}: {len} bytes at {ptr:#x} are outside the client's device memory"
                            ),
                        ))
                    }
                };
                self.live()?;
                let Some(h) = self.blaslt.handles.get_mut(&handle) else {
                    return Ok(Reply::status(NOT_INITIALIZED));
                };
                match h.matmul(&checked) {
                    Ok(()) => Ok(Reply::ok(Vec::new())),
                    Err(e) => self.blaslt_failed(e),
                }
            }
        }
    }

    fn blaslt_create(&mut self) -> Result<Reply, Failure> {
        let library = self.blaslt_library.clone();
        let lt = library.get()?;
        let ctx = self.live()?.clone();
        match ctx.blaslt_handle(lt) {
            Ok(h) => {
                self.blaslt.next += 1;
                let id = self.blaslt.next;
                self.blaslt.handles.insert(id, h);
                Ok(Reply::ok(id.to_le_bytes().to_vec()))
            }
            Err(e) => self.blaslt_failed(e),
        }
    }

    /// The product for cuBLASLt after every check, or `None` when it has
    /// nothing to compute (an empty D or batch).
    fn blaslt_check(&self, p: &Product) -> Result<Option<LtMatmul>, Refusal> {
        let [ta, tb, tc, ts] = p.types;
        let size = |dt: u8| dtype::size(dt).ok_or(Refusal::Status(NOT_SUPPORTED));
        let sizes = [size(ta)?, size(tb)?, size(tc)?, size(tc)?];
        let compute = compute_type(ts).ok_or(Refusal::Status(NOT_SUPPORTED))?;
        let [transa, transb] = p.trans;
        for t in [transa, transb] {
            if !(0..=2).contains(&t) {
                return Err(Refusal::Status(INVALID_VALUE));
            }
        }
        let [m, n, k, batch] = p.dims;
        if m < 0 || n < 0 || k < 0 || batch < 0 {
            return Err(Refusal::Status(INVALID_VALUE));
        }
        let (ar, ac) = if transa == 0 { (m, k) } else { (k, m) };
        let (br, bc) = if transb == 0 { (k, n) } else { (n, k) };
        let shapes = [(ar, ac), (br, bc), (m, n), (m, n)];
        const NAMES: [&str; 4] = ["A", "B", "C", "D"];
        // Leading dimensions first, even for an empty product, as cuBLASLt
        // refuses a bad layout whatever the sizes.
        let mut first = [None; 4];
        for i in 0..4 {
            let (rows, cols) = shapes[i];
            let o = p.operands[i];
            first[i] = matrix_range(NAMES[i], o.ptr, rows, cols, o.ld, sizes[i])?;
        }
        if !known_epilogue(p.epilogue) || (p.epilogue != epilogue::DEFAULT && dtype::is_complex(tc))
        {
            return Err(Refusal::Status(NOT_SUPPORTED));
        }
        let alpha = self.scalar_arg(p.scalars[0], ts, "alpha")?;
        let beta = self.scalar_arg(p.scalars[1], ts, "beta")?;
        if m == 0 || n == 0 || batch == 0 {
            return Ok(None);
        }
        let int = |v: i64| i32::try_from(v).map_err(|_| Refusal::Status(NOT_SUPPORTED));
        let batch_count = int(batch)?;
        for i in 0..4 {
            // A and B are not read when k is 0; cuBLASLt scales C alone.
            if i < 2 && k == 0 {
                continue;
            }
            let all = strided_range(NAMES[i], first[i], p.operands[i].stride, sizes[i], batch)?;
            self.check_range(all, NAMES[i])?;
        }
        let (bias, bias_stride) = p.bias;
        if has_bias(p.epilogue) {
            let one = blas::vector_range("bias", bias, m, 1, sizes[3])?;
            let all = strided_range("bias", one, bias_stride, sizes[3], batch)?;
            // A missing bias is a fault at 0, as on the emulated device.
            match all {
                Some(range) if bias != 0 => self.check_range(Some(range), "bias")?,
                _ => {
                    return Err(Refusal::Fault {
                        what: "bias".into(),
                        ptr: bias,
                        len: sizes[3] * m as u64,
                    })
                }
            }
        }
        let matrices = std::array::from_fn(|i| {
            let (rows, cols) = shapes[i];
            LtMatrix {
                ptr: p.operands[i].ptr,
                dtype: i32::from([ta, tb, tc, tc][i]),
                rows: rows as u64,
                cols: cols as u64,
                ld: p.operands[i].ld,
                stride: p.operands[i].stride,
            }
        });
        Ok(Some(LtMatmul {
            compute,
            scale_type: i32::from(ts),
            trans: [transa, transb],
            scalars: [alpha, beta],
            matrices,
            batch: batch_count,
            epilogue: p.epilogue as u32,
            bias: if has_bias(p.epilogue) {
                (bias, bias_stride)
            } else {
                (0, 0)
            },
        }))
    }

    /// cuBLASLt's own status goes back to the application; a driver
    /// failure (the context broken) is the runtime's error.
    fn blaslt_failed(&mut self, e: LtError) -> Result<Reply, Failure> {
        match e {
            LtError::Status { call, status } => {
                tracing::debug!("{call}: cublasStatus_t {status}");
                Ok(Reply::status(status))
            }
            LtError::MixedScalars => Ok(Reply::status(INVALID_VALUE)),
            LtError::Driver(e) => Err(self.note(&e)),
        }
    }
}

/// One `Matmul` from the wire, grouped.
struct Product {
    /// A, B, C (= D) and scale types.
    types: [u8; 4],
    trans: [i32; 2],
    /// m, n, k, batch.
    dims: [i64; 4],
    scalars: [Scalar; 2],
    /// A, B, C, D.
    operands: [Operand; 4],
    epilogue: i32,
    bias: (u64, i64),
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scale_types_pick_the_compute_type() {
        assert_eq!(compute_type(dtype::R16F), Some(64));
        assert_eq!(compute_type(dtype::R32F), Some(68));
        assert_eq!(compute_type(dtype::C64F), Some(70));
        assert_eq!(compute_type(dtype::R16BF), None);
    }

    #[test]
    fn bias_epilogues_are_those_with_the_bias_bit() {
        assert!(has_bias(epilogue::BIAS));
        assert!(has_bias(epilogue::RELU_BIAS));
        assert!(has_bias(epilogue::GELU_BIAS));
        assert!(!has_bias(epilogue::RELU));
        assert!(!has_bias(epilogue::GELU));
        assert!(!known_epilogue(8));
    }
}
