//! cuFFT on the CPU.

use rcud_proto::math::fft::Call;

use crate::{DeviceMemory, MathError, Reply};

/// `CUFFT_NOT_SUPPORTED`.
const NOT_SUPPORTED: i32 = 16;

/// The cuFFT objects of one client context.
#[derive(Default)]
pub struct State {}

impl State {
    /// Runs one cuFFT call.
    pub fn call(&mut self, _memory: &mut dyn DeviceMemory, call: Call) -> Result<Reply, MathError> {
        match call {
            Call::Unused {} => Ok(Reply::status(NOT_SUPPORTED)),
        }
    }
}
