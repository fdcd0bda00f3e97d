//! NVIDIA's math libraries on the server: each opened on its first use and
//! shared by every client of the process.

use std::ffi::OsString;
use std::sync::OnceLock;

use rcud_cuda_driver::math_library::MathLibrary;
use rcud_proto::ops::Failure;
use rcud_proto::CudaError;

/// A library of type `L`, opened from the first of its candidate names that
/// loads, once; a missing library is `cudaErrorNotSupported` with the
/// loader's reason, logged once.
#[derive(Debug)]
pub(super) struct LazyLibrary<L> {
    candidates: Vec<OsString>,
    loaded: OnceLock<Result<L, String>>,
}

impl<L: MathLibrary> Default for LazyLibrary<L> {
    fn default() -> Self {
        Self::new(L::LIBRARIES.iter().map(OsString::from).collect())
    }
}

impl<L: MathLibrary> LazyLibrary<L> {
    /// The library at the first of `candidates` that loads.
    pub(super) fn new(candidates: Vec<OsString>) -> Self {
        Self {
            candidates,
            loaded: OnceLock::new(),
        }
    }

    pub(super) fn get(&self) -> Result<&L, Failure> {
        let loaded = self.loaded.get_or_init(|| {
            L::load_from(&self.candidates)
                .inspect(|l| tracing::info!("{} calls run in {}", L::NAME, l.library()))
                .map_err(|e| {
                    let why = format!(
                        "NVIDIA's {} ({}) was not found on the server: {e}",
                        L::NAME,
                        L::LIBRARIES[0]
                    );
                    tracing::warn!("{why}");
                    why
                })
        });
        loaded
            .as_ref()
            .map_err(|why| Failure::new(CudaError::NOT_SUPPORTED, why.clone()))
    }
}
