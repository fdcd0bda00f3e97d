//! NVIDIA's math libraries on the emulated GPU, computed on the CPU.
//!
//! The server's emulated device cannot run the libraries' machine code, so
//! each call ([`rcud_proto::math`]) is computed here with well-kept CPU
//! crates, on the bytes of the client's device memory. Handles, plans and
//! generators live in [`Libraries`], one per client context. Every device
//! range is checked through [`DeviceMemory`] before it is read or written.
#![forbid(unsafe_code)]

pub mod blas;
pub mod blaslt;
pub mod deadline;
pub mod fft;
pub mod rand;
pub mod solver;
pub mod sparse;

use rcud_proto::math::Library;
use rcud_proto::DecodeError;

/// The device memory of one client context, bounds-checked.
pub trait DeviceMemory {
    /// The `len` bytes at device address `ptr`, all inside one allocation
    /// of this client.
    fn read(&self, ptr: u64, len: u64) -> Result<&[u8], Fault>;
    /// Writes `data` at device address `ptr`, all inside one allocation.
    fn write(&mut self, ptr: u64, data: &[u8]) -> Result<(), Fault>;
    /// When the call must be finished: the time the device gives one piece
    /// of work (the emulated device's kernel timeout). `None`: no limit.
    /// [`Libraries::call`] runs every call under it ([`deadline`]).
    fn deadline(&self) -> Option<std::time::Instant> {
        None
    }
    /// Whether the call has run past its deadline. Calls whose work is not
    /// bounded by the memory they touch (a strided batch of stride 0 reuses
    /// one matrix any number of times) ask between pieces.
    fn expired(&self) -> bool {
        self.deadline()
            .is_some_and(|d| std::time::Instant::now() >= d)
    }
}

/// A device range outside the client's allocations.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("device range {ptr:#x}+{len} is outside this client's allocations")]
pub struct Fault {
    /// Start of the range.
    pub ptr: u64,
    /// Its length in bytes.
    pub len: u64,
}

/// A call that could not be run at all (as opposed to one that ran and
/// returned a library status).
#[derive(Debug, thiserror::Error)]
pub enum MathError {
    /// The call's bytes do not decode.
    #[error("malformed {library} call: {source}")]
    Decode {
        /// The library called.
        library: &'static str,
        /// What was wrong.
        source: DecodeError,
    },
    /// The library id is unknown.
    #[error("unknown math library {0}")]
    UnknownLibrary(u8),
    /// A device range outside the client's allocations: what a kernel of
    /// NVIDIA's library would fault on.
    #[error(transparent)]
    Fault(#[from] Fault),
    /// The call ran past the device's time for one piece of work, as a
    /// kernel past the watchdog.
    #[error("the call ran past the device's time limit and was stopped")]
    Timeout,
}

/// What a library call answers: the library's status code (0 is success)
/// and its output bytes, if any.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Reply {
    /// `cublasStatus_t`, `cufftResult`, ... as the library returns it.
    pub status: i32,
    /// Output the client needs: a new handle's id, a result for host memory.
    pub out: Vec<u8>,
}

impl Reply {
    /// Success, with `out`.
    pub fn ok(out: Vec<u8>) -> Self {
        Self { status: 0, out }
    }

    /// The library status `status`, without output.
    pub fn status(status: i32) -> Self {
        Self {
            status,
            out: Vec::new(),
        }
    }
}

/// The state of every library for one client context: its handles, plans,
/// descriptors and generators.
#[derive(Default)]
pub struct Libraries {
    /// cuBLAS handles.
    pub blas: blas::State,
    /// cuBLASLt handles, descriptors and layouts.
    pub blaslt: blaslt::State,
    /// cuFFT plans.
    pub fft: fft::State,
    /// cuRAND generators.
    pub rand: rand::State,
    /// cuSPARSE handles and descriptors.
    pub sparse: sparse::State,
    /// cuSOLVER handles.
    pub solver: solver::State,
}

impl Libraries {
    /// Runs one encoded call of library `library` on `memory`, within the
    /// memory's deadline.
    pub fn call(
        &mut self,
        memory: &mut dyn DeviceMemory,
        library: u8,
        call: &[u8],
    ) -> Result<Reply, MathError> {
        deadline::within(memory.deadline(), || self.dispatch(memory, library, call))
            .unwrap_or(Err(MathError::Timeout))
    }

    fn dispatch(
        &mut self,
        memory: &mut dyn DeviceMemory,
        library: u8,
        call: &[u8],
    ) -> Result<Reply, MathError> {
        let library = Library::from_wire(library).ok_or(MathError::UnknownLibrary(library))?;
        let decode_error = |source| MathError::Decode {
            library: library.name(),
            source,
        };
        match library {
            Library::Blas => {
                let call = rcud_proto::codec::from_slice(call).map_err(decode_error)?;
                self.blas.call(memory, call)
            }
            Library::BlasLt => {
                let call = rcud_proto::codec::from_slice(call).map_err(decode_error)?;
                self.blaslt.call(memory, call)
            }
            Library::Fft => {
                let call = rcud_proto::codec::from_slice(call).map_err(decode_error)?;
                self.fft.call(memory, call)
            }
            Library::Rand => {
                let call = rcud_proto::codec::from_slice(call).map_err(decode_error)?;
                self.rand.call(memory, call)
            }
            Library::Sparse => {
                let call = rcud_proto::codec::from_slice(call).map_err(decode_error)?;
                self.sparse.call(memory, call)
            }
            Library::Solver => {
                let call = rcud_proto::codec::from_slice(call).map_err(decode_error)?;
                self.solver.call(memory, call)
            }
        }
    }
}
