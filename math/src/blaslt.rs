//! cuBLASLt on the CPU: its matmul with the GEMM of [`crate::blas`] and
//! the bias, ReLU and GELU epilogues applied before the store.

use std::collections::BTreeSet;

use num_complex::{Complex32, Complex64};
use rcud_proto::math::blas::dtype;
use rcud_proto::math::blaslt::Call;

use crate::blas::{
    matmul, with_type, Failure, GemmArgs, MatmulArgs, NOT_INITIALIZED, NOT_SUPPORTED,
};
use crate::{DeviceMemory, MathError, Reply};

/// The cuBLASLt handles of one client context.
#[derive(Default)]
pub struct State {
    handles: BTreeSet<u64>,
    next_handle: u64,
}

impl State {
    /// Runs one cuBLASLt call.
    pub fn call(&mut self, memory: &mut dyn DeviceMemory, call: Call) -> Result<Reply, MathError> {
        match call {
            Call::Create {} => {
                self.next_handle += 1;
                self.handles.insert(self.next_handle);
                Ok(Reply::ok(self.next_handle.to_le_bytes().to_vec()))
            }
            Call::Destroy { handle } => Ok(if self.handles.remove(&handle) {
                Reply::ok(Vec::new())
            } else {
                Reply::status(NOT_INITIALIZED)
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
                if !self.handles.contains(&handle) {
                    return Ok(Reply::status(NOT_INITIALIZED));
                }
                let args = MatmulArgs {
                    gemm: GemmArgs {
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
                        batch,
                        pointer_arrays: false,
                    },
                    d,
                    epilogue,
                    bias,
                    bias_stride,
                };
                // FP16 scale type computes in f32 (its scalars read as half).
                let outcome = match types[3] {
                    dtype::R16F => matmul::<f32>(memory, args),
                    scale => with_type!(scale, T => matmul::<T>(memory, args)),
                };
                match outcome {
                    Ok(out) => Ok(Reply::ok(out)),
                    Err(Failure::Status(status)) => Ok(Reply::status(status)),
                    Err(Failure::Fault(fault)) => Err(MathError::Fault(fault)),
                    Err(Failure::Timeout) => Err(MathError::Timeout),
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use rcud_proto::math::blas::{Operand, Scalar};
    use rcud_proto::math::blaslt::epilogue;

    use super::*;
    use crate::Fault;

    /// One allocation at address 0x1000.
    struct Memory(Vec<u8>);

    impl DeviceMemory for Memory {
        fn read(&self, ptr: u64, len: u64) -> Result<&[u8], Fault> {
            let start = ptr.checked_sub(0x1000).ok_or(Fault { ptr, len })? as usize;
            self.0
                .get(start..start + len as usize)
                .ok_or(Fault { ptr, len })
        }
        fn write(&mut self, ptr: u64, data: &[u8]) -> Result<(), Fault> {
            let len = data.len() as u64;
            let start = ptr.checked_sub(0x1000).ok_or(Fault { ptr, len })? as usize;
            self.0
                .get_mut(start..start + data.len())
                .ok_or(Fault { ptr, len })?
                .copy_from_slice(data);
            Ok(())
        }
    }

    fn floats(bytes: &[u8]) -> Vec<f32> {
        bytes
            .chunks_exact(4)
            .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
            .collect()
    }

    #[test]
    fn matmul_epilogues_bias_relu_gelu_and_a_layout_for_d() {
        // A 2x2 = [[1, -2], [3, 4]] (column-major), B = I, C = 1, bias (10, -10).
        let a = [1.0f32, 3.0, -2.0, 4.0];
        let b = [1.0f32, 0.0, 0.0, 1.0];
        let c = [1.0f32; 4];
        let bias = [10.0f32, -10.0];
        let mut bytes = Vec::new();
        for v in a.iter().chain(&b).chain(&c).chain(&bias) {
            bytes.extend_from_slice(&v.to_le_bytes());
        }
        // D: 2x2 with leading dimension 3, after the others.
        bytes.extend_from_slice(&[0u8; 6 * 4]);
        let base = 0x1000u64;
        let (pa, pb, pc, pbias, pd) = (base, base + 16, base + 32, base + 48, base + 56);
        let mut state = State::default();
        let mut memory = Memory(bytes);
        let handle = u64::from_le_bytes(
            state
                .call(&mut memory, Call::Create {})
                .unwrap()
                .out
                .try_into()
                .unwrap(),
        );
        let op = |ptr, ld| Operand { ptr, ld, stride: 0 };
        let run = |state: &mut State, memory: &mut Memory, epi| {
            let reply = state
                .call(
                    memory,
                    Call::Matmul {
                        handle,
                        types: [dtype::R32F; 4],
                        transa: 0,
                        transb: 0,
                        m: 2,
                        n: 2,
                        k: 2,
                        alpha: Scalar::Host { re: 2.0, im: 0.0 },
                        a: op(pa, 2),
                        b: op(pb, 2),
                        beta: Scalar::Host { re: 1.0, im: 0.0 },
                        c: op(pc, 2),
                        d: op(pd, 3),
                        batch: 1,
                        epilogue: epi,
                        bias: pbias,
                        bias_stride: 0,
                    },
                )
                .unwrap();
            assert_eq!(reply.status, 0);
            let d = floats(&memory.0[56..56 + 24]);
            [d[0], d[1], d[3], d[4]]
        };
        // 2 A + C = [[3, -3], [7, 9]].
        assert_eq!(
            run(&mut state, &mut memory, epilogue::DEFAULT),
            [3.0, 7.0, -3.0, 9.0]
        );
        assert_eq!(
            run(&mut state, &mut memory, epilogue::BIAS),
            [13.0, -3.0, 7.0, -1.0]
        );
        assert_eq!(
            run(&mut state, &mut memory, epilogue::RELU_BIAS),
            [13.0, 0.0, 7.0, 0.0]
        );
        assert_eq!(
            run(&mut state, &mut memory, epilogue::RELU),
            [3.0, 7.0, 0.0, 9.0]
        );
        let g = run(&mut state, &mut memory, epilogue::GELU);
        let gelu = |x: f64| {
            0.5 * x * (1.0 + (0.797_884_560_802_865_4 * (x + 0.044_715 * x * x * x)).tanh())
        };
        for (got, x) in g.iter().zip([3.0, 7.0, -3.0, 9.0]) {
            assert!((f64::from(*got) - gelu(x)).abs() < 1e-6);
        }
        // The padding row of D's layout is untouched.
        assert_eq!(floats(&memory.0[56..80])[2], 0.0);
        // Unknown handle.
        state.call(&mut memory, Call::Destroy { handle }).unwrap();
        assert_eq!(
            state
                .call(&mut memory, Call::Destroy { handle })
                .unwrap()
                .status,
            1
        );
    }
}
