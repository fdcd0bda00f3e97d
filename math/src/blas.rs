//! cuBLAS on the CPU.

use rcud_proto::math::blas::Call;

use crate::{DeviceMemory, MathError, Reply};

/// `CUBLAS_STATUS_NOT_SUPPORTED`.
const NOT_SUPPORTED: i32 = 15;

/// The cuBLAS objects of one client context.
#[derive(Default)]
pub struct State {}

impl State {
    /// Runs one cuBLAS call.
    pub fn call(&mut self, _memory: &mut dyn DeviceMemory, call: Call) -> Result<Reply, MathError> {
        match call {
            Call::Unused {} => Ok(Reply::status(NOT_SUPPORTED)),
        }
    }
}
