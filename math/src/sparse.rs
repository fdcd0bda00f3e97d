//! cuSPARSE on the CPU.

use rcud_proto::math::sparse::Call;

use crate::{DeviceMemory, MathError, Reply};

/// `CUSPARSE_STATUS_NOT_SUPPORTED`.
const NOT_SUPPORTED: i32 = 10;

/// The cuSPARSE objects of one client context.
#[derive(Default)]
pub struct State {}

impl State {
    /// Runs one cuSPARSE call.
    pub fn call(&mut self, _memory: &mut dyn DeviceMemory, call: Call) -> Result<Reply, MathError> {
        match call {
            Call::Unused {} => Ok(Reply::status(NOT_SUPPORTED)),
        }
    }
}
