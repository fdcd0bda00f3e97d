//! cuSOLVER on the CPU.

use rcud_proto::math::solver::Call;

use crate::{DeviceMemory, MathError, Reply};

/// `CUSOLVER_STATUS_NOT_SUPPORTED`.
const NOT_SUPPORTED: i32 = 9;

/// The cuSOLVER objects of one client context.
#[derive(Default)]
pub struct State {}

impl State {
    /// Runs one cuSOLVER call.
    pub fn call(&mut self, _memory: &mut dyn DeviceMemory, call: Call) -> Result<Reply, MathError> {
        match call {
            Call::Unused {} => Ok(Reply::status(NOT_SUPPORTED)),
        }
    }
}
