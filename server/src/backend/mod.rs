//! Backends execute CUDA operations on GPUs.

pub mod emu;

use std::sync::Arc;

use rcud_proto::{CudaError, DeviceProps};
use thiserror::Error;

/// A source of host bytes for a host-to-device copy: the bulk payload of the
/// request, still arriving from the network.
pub trait HostSource {
    /// Fills `dst` with the next `dst.len()` bytes of the payload.
    fn read_into(&mut self, dst: &mut [u8]) -> Result<(), rcud_transport::TransportError>;
}

/// Why a copy from the network to the device failed.
#[derive(Debug, Error)]
pub enum CopyError {
    /// The copy itself is invalid; the rest of the payload must be discarded.
    #[error("{0}")]
    Cuda(CudaError),
    /// The connection failed while the payload was arriving.
    #[error("transport: {0}")]
    Transport(#[from] rcud_transport::TransportError),
}

/// A family of GPUs on this node.
pub trait Backend: Send + Sync {
    /// Short name for logs and the handshake (`emu`, `cuda`).
    fn name(&self) -> &'static str;
    /// Number of GPUs served.
    fn gpu_count(&self) -> u32;
    /// Driver version reported to clients.
    fn driver_version(&self) -> i32;
    /// Properties and `(cudaDeviceAttr, value)` pairs of one GPU.
    fn device_info(&self, gpu: u32) -> Result<(DeviceProps, Vec<(i32, i32)>), CudaError>;
    /// A fresh context for one client on one GPU.
    fn open(&self, gpu: u32) -> Result<Box<dyn DeviceContext>, CudaError>;
}

/// One client's state on one GPU. Dropping it releases everything it holds.
pub trait DeviceContext: Send {
    /// `cudaMalloc`.
    fn malloc(&mut self, size: u64) -> Result<u64, CudaError>;
    /// `cudaFree`.
    fn free(&mut self, ptr: u64) -> Result<(), CudaError>;
    /// `cudaMemGetInfo`: (free, total).
    fn mem_info(&self) -> (u64, u64);
    /// `cudaDeviceSynchronize`.
    fn synchronize(&mut self) -> Result<(), CudaError>;
    /// `cudaDeviceReset`: release everything this client holds on the GPU.
    fn reset(&mut self);
    /// Checks that `[ptr, ptr + len)` is device memory this client owns.
    fn check(&self, ptr: u64, len: u64) -> Result<(), CudaError>;
    /// Copies `len` bytes arriving from `src` to device address `dst`. Returns
    /// `CopyError::Cuda` before reading anything when the range is invalid.
    fn copy_from_host(
        &mut self,
        dst: u64,
        len: u64,
        src: &mut dyn HostSource,
    ) -> Result<(), CopyError>;
    /// Hands the `len` device bytes at `src` to `sink`, in order, in one or
    /// more pieces. The range has been checked with [`DeviceContext::check`].
    fn copy_to_host(
        &mut self,
        src: u64,
        len: u64,
        sink: &mut dyn FnMut(&[u8]) -> Result<(), rcud_transport::TransportError>,
    ) -> Result<(), CopyError>;
    /// Device-to-device copy.
    fn copy_device(&mut self, dst: u64, src: u64, len: u64) -> Result<(), CudaError>;
    /// `cudaMemset`.
    fn memset(&mut self, dst: u64, value: u8, len: u64) -> Result<(), CudaError>;
}

/// Which backend the server runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum BackendKind {
    /// Real GPUs when present, else the emulated device.
    Auto,
    /// The emulated device.
    Emu,
    /// Real NVIDIA GPUs through the driver API.
    Cuda,
}

/// Settings of the emulated device.
#[derive(Debug, Clone)]
pub struct EmuSettings {
    /// Number of emulated GPUs.
    pub gpus: u32,
    /// Memory of each emulated GPU, in bytes.
    pub memory: u64,
}

impl Default for EmuSettings {
    fn default() -> Self {
        Self {
            gpus: 1,
            memory: rcud_emu::DEFAULT_MEMORY,
        }
    }
}

/// A backend could not be started.
#[derive(Debug, Error)]
pub enum BackendError {
    /// The requested backend is not available on this host or in this build.
    #[error("backend `{backend}` is not available: {reason}")]
    Unavailable {
        /// Which backend.
        backend: &'static str,
        /// What is missing.
        reason: String,
    },
}

/// Builds the backend `kind`, falling back from `auto` to `emu` with a log line.
pub fn select_backend(
    kind: BackendKind,
    emu: &EmuSettings,
) -> Result<Arc<dyn Backend>, BackendError> {
    match kind {
        BackendKind::Emu => Ok(Arc::new(emu::EmuBackend::new(emu))),
        BackendKind::Cuda => Err(BackendError::Unavailable {
            backend: "cuda",
            reason: "this build of rcud-server has no real-GPU backend yet; \
                     use --backend emu (or auto) for the emulated device"
                .into(),
        }),
        BackendKind::Auto => {
            tracing::info!(
                "backend auto: no real-GPU backend in this build, using the emulated device"
            );
            Ok(Arc::new(emu::EmuBackend::new(emu)))
        }
    }
}
