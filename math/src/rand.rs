//! cuRAND on the CPU.

use rcud_proto::math::rand::Call;

use crate::{DeviceMemory, MathError, Reply};

/// `CURAND_STATUS_INTERNAL_ERROR`.
const NOT_SUPPORTED: i32 = 999;

/// The cuRAND objects of one client context.
#[derive(Default)]
pub struct State {}

impl State {
    /// Runs one cuRAND call.
    pub fn call(&mut self, _memory: &mut dyn DeviceMemory, call: Call) -> Result<Reply, MathError> {
        match call {
            Call::Unused {} => Ok(Reply::status(NOT_SUPPORTED)),
        }
    }
}
