//! The emulated-device backend.

use std::sync::Arc;

use rcud_emu::{DeviceMemory, EmuGpu};
use rcud_proto::{CudaError, DeviceProps};
use rcud_transport::TransportError;

use super::{Backend, CopyError, DeviceContext, EmuSettings, HostSource};

/// GPUs emulated in host memory.
#[derive(Debug)]
pub struct EmuBackend {
    gpus: Vec<Arc<EmuGpu>>,
}

impl EmuBackend {
    /// `settings.gpus` emulated GPUs of `settings.memory` bytes each.
    pub fn new(settings: &EmuSettings) -> Self {
        Self {
            gpus: (0..settings.gpus)
                .map(|i| EmuGpu::new(i, settings.memory))
                .collect(),
        }
    }

    fn gpu(&self, gpu: u32) -> Result<&Arc<EmuGpu>, CudaError> {
        self.gpus.get(gpu as usize).ok_or(CudaError::INVALID_DEVICE)
    }
}

impl Backend for EmuBackend {
    fn name(&self) -> &'static str {
        "emu"
    }

    fn gpu_count(&self) -> u32 {
        self.gpus.len() as u32
    }

    fn driver_version(&self) -> i32 {
        rcud_emu::DRIVER_VERSION
    }

    fn device_info(&self, gpu: u32) -> Result<(DeviceProps, Vec<(i32, i32)>), CudaError> {
        let g = self.gpu(gpu)?;
        Ok((g.props().clone(), g.attributes()))
    }

    fn open(&self, gpu: u32) -> Result<Box<dyn DeviceContext>, CudaError> {
        let g = self.gpu(gpu)?.clone();
        Ok(Box::new(EmuContext {
            memory: DeviceMemory::new(g, gpu),
        }))
    }
}

/// One client's view of an emulated GPU.
#[derive(Debug)]
struct EmuContext {
    memory: DeviceMemory,
}

impl DeviceContext for EmuContext {
    fn malloc(&mut self, size: u64) -> Result<u64, CudaError> {
        self.memory.malloc(size)
    }

    fn free(&mut self, ptr: u64) -> Result<(), CudaError> {
        self.memory.free(ptr)
    }

    fn mem_info(&self) -> (u64, u64) {
        let gpu = self.memory.gpu();
        (gpu.free_memory(), gpu.total_memory())
    }

    fn synchronize(&mut self) -> Result<(), CudaError> {
        // Every operation of the emulated device completes before its reply.
        Ok(())
    }

    fn reset(&mut self) {
        self.memory.reset();
    }

    fn check(&self, ptr: u64, len: u64) -> Result<(), CudaError> {
        self.memory.check(ptr, len)
    }

    fn copy_from_host(
        &mut self,
        dst: u64,
        len: u64,
        src: &mut dyn HostSource,
    ) -> Result<(), CopyError> {
        // The payload is received straight into device memory: no staging copy.
        let target = self.memory.slice_mut(dst, len).map_err(CopyError::Cuda)?;
        src.read_into(target)?;
        Ok(())
    }

    fn copy_to_host(
        &mut self,
        src: u64,
        len: u64,
        sink: &mut dyn FnMut(&[u8]) -> Result<(), TransportError>,
    ) -> Result<(), CopyError> {
        let bytes = self.memory.slice(src, len).map_err(CopyError::Cuda)?;
        sink(bytes)?;
        Ok(())
    }

    fn copy_device(&mut self, dst: u64, src: u64, len: u64) -> Result<(), CudaError> {
        self.memory.copy(dst, src, len)
    }

    fn memset(&mut self, dst: u64, value: u8, len: u64) -> Result<(), CudaError> {
        self.memory.fill(dst, value, len)
    }
}
