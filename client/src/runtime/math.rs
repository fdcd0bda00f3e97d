//! Calls of the math libraries (cuBLAS, cuFFT, ...), one request each, in
//! the order of the device's other work.

use rcud_proto::codec::{to_vec, Blob, Wire};
use rcud_proto::math::Library;
use rcud_proto::ops::req;
use rcud_proto::CudaError;

use super::Runtime;
use crate::session::Completion;

/// What a synchronous library call answered.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct MathReply {
    /// The library's status (`cublasStatus_t`, `cufftResult`, ...).
    pub status: i32,
    /// The call's output bytes.
    pub out: Vec<u8>,
}

impl Runtime {
    /// Runs `call` of `library` on the device of `stream`, after the work
    /// queued before it, and waits for its answer: for calls whose result
    /// the application reads at once (a new handle, a host-side scalar, a
    /// workspace size).
    pub fn math_call(
        &self,
        stream: u64,
        library: Library,
        call: &impl Wire,
    ) -> Result<MathReply, CudaError> {
        let d = self.stream_device(stream)?;
        let request = req::MathCall {
            library: library as u8,
            call: Blob(to_vec(call)),
        };
        self.call(d, &request, &[], &mut []).map(|r| MathReply {
            status: r.status,
            out: r.out.0,
        })
    }

    /// Queues `call` of `library` on the device of `stream`, in order with
    /// the device's other asynchronous work, as NVIDIA's libraries queue
    /// their kernels on the handle's stream.
    pub fn math_enqueue(
        &'static self,
        stream: u64,
        library: Library,
        call: &impl Wire,
    ) -> Result<(), CudaError> {
        let d = self.stream_device(stream)?;
        let request = req::MathCall {
            library: library as u8,
            call: Blob(to_vec(call)),
        };
        self.enqueue(d, &request, &[], Completion::Math(library.name()), 0)
    }
}
