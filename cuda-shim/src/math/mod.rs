//! NVIDIA's math libraries: `libcublas.so.13`, `libcublasLt.so.13`,
//! `libcufft.so.12`, `libcurand.so.10`, `libcusparse.so.12` and
//! `libcusolver.so.12` (and their CUDA 12 sonames), all in this one file,
//! which `rcud run` offers under each name.
//!
//! Each library call is one request to the server ([`rcud_proto::math`]),
//! whose handles, plans and generators live there. The client checks what
//! the library would check before launching anything (dimensions, handles,
//! device pointers inside the application's allocations) and answers with
//! the library's own status; calls that only produce device data are queued
//! on the handle's stream, calls whose result the application reads at once
//! wait for their answer.

pub(crate) mod blas;
pub(crate) mod blaslt;
pub(crate) mod fft;
pub(crate) mod rand;
pub(crate) mod solver;
pub(crate) mod sparse;

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, Ordering};

use rcud_client::runtime::math::MathReply;
use rcud_client::Runtime;
use rcud_proto::codec::{to_vec, Blob, Wire};
use rcud_proto::math::Library;
use rcud_proto::ops::{req, GraphStep};
use rcud_proto::CudaError;

use crate::graph::model::{LibraryNode, NodeKind};

fn rt() -> &'static Runtime {
    Runtime::global()
}

/// Logs once that `name` of `library` is a stub, with the reason; the
/// caller returns its library's "not supported" status.
pub(crate) fn log_stub(library: &str, name: &str, why: &str, logged: &AtomicBool) {
    crate::ffi::init_logging();
    if !logged.swap(true, Ordering::Relaxed) {
        tracing::warn!(target: "rcud::unimplemented", "{name} ({library}) is not supported by rcud: {why}");
    }
}

/// Runs the body of a library function: a panic becomes `internal` (the
/// library's internal-error status) instead of unwinding into C.
pub(crate) fn guard(internal: i32, body: impl FnOnce() -> i32) -> i32 {
    crate::ffi::init_logging();
    catch_unwind(AssertUnwindSafe(body)).unwrap_or_else(|_| {
        eprintln!("rcud: internal error (panic) in a math library");
        internal
    })
}

/// Sends `call` and waits for its answer (see [`Runtime::math_call`]).
/// Queued work that failed, or a lost server, gives the CUDA error. (Calls
/// that only touch handles and settings are allowed during stream capture,
/// as in CUDA; the library functions that would wait for the device refuse
/// a capturing stream themselves.)
pub(crate) fn call(
    stream: u64,
    library: Library,
    call: &impl Wire,
) -> Result<MathReply, CudaError> {
    rt().math_call(stream, library, call)
}

/// Queues `call` on `stream` (see [`Runtime::math_enqueue`]), after the
/// host's writes to managed memory are sent, as before a kernel launch. On a
/// capturing stream the call becomes a node of the graph instead, and runs
/// on the server at each launch of the graph.
pub(crate) fn enqueue(stream: u64, library: Library, call: &impl Wire) -> Result<(), CudaError> {
    let captured = crate::graph::capture::record(stream, || {
        Ok(NodeKind::Library(LibraryNode {
            device: stream_device(stream)?,
            library: library.name(),
            step: GraphStep::of(&req::MathCall {
                library: library as u8,
                call: Blob(to_vec(call)),
            }),
        }))
    })?;
    if captured {
        return Ok(());
    }
    crate::cudart::managed::to_device_of_stream(stream);
    rt().math_enqueue(stream, library, call)
}

/// Whether `[ptr, ptr + len)` lies inside one device allocation of the
/// application (or managed or mapped memory), as a library argument must.
pub(crate) fn is_device_range(ptr: u64, len: u64) -> bool {
    if len == 0 {
        return true;
    }
    match rt().allocation(ptr) {
        Some((base, size, _)) => ptr.checked_add(len).is_some_and(|end| end <= base + size),
        None => false,
    }
}

/// The device (ordinal) that `stream` belongs to.
pub(crate) fn stream_device(stream: u64) -> Result<usize, CudaError> {
    rt().stream_device(stream)
}
