//! The emulated device: a GPU that lives in host memory, for machines without
//! one and for tests.
//!
//! An [`EmuGpu`] describes one emulated device (properties, attributes, memory
//! budget shared by all clients). Each client gets its own [`DeviceMemory`]: an
//! allocation table through which every access is checked, so a bad pointer is
//! a CUDA error and never touches memory the client does not own.
#![warn(missing_docs)]

pub mod bench_kernels;
mod buffer;
pub mod jit;
pub mod kernel;
pub mod ledger;
pub mod memory;
pub mod properties;
pub mod ptx;

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use rcud_proto::{CudaError, DeviceProps};

pub use jit::Engine;
pub use kernel::{launch, KernelError, LaunchConfig, LaunchOutput, Limits};
pub use memory::{DeviceMemory, MemoryView};
pub use ptx::{Module, PtxError};

/// Driver version the emulated device reports (`cudaDriverGetVersion`).
pub const DRIVER_VERSION: i32 = 13000;

/// Default memory size of an emulated GPU.
pub const DEFAULT_MEMORY: u64 = 8 << 30;

/// One emulated GPU, shared by every client that uses it.
#[derive(Debug)]
pub struct EmuGpu {
    props: DeviceProps,
    attributes: HashMap<i32, i32>,
    total: u64,
    used: Budget,
}

/// Where a device's allocations are counted.
#[derive(Debug)]
enum Budget {
    /// In this process: every client of the device is served here.
    Local(AtomicU64),
    /// In a ledger shared by the agent processes of one server.
    Shared(ledger::SharedBudget),
}

impl EmuGpu {
    /// An emulated GPU with index `gpu` and `total_mem` bytes of memory.
    pub fn new(gpu: u32, total_mem: u64) -> Arc<Self> {
        let props = properties::emulated_props(gpu, total_mem);
        let attributes = properties::attributes(&props).into_iter().collect();
        Arc::new(Self {
            props,
            attributes,
            total: total_mem,
            used: Budget::Local(AtomicU64::new(0)),
        })
    }

    /// An emulated GPU whose `total_mem` bytes are shared with the other
    /// agent processes of a server through `budget`.
    pub fn with_shared_budget(gpu: u32, total_mem: u64, budget: ledger::SharedBudget) -> Arc<Self> {
        let props = properties::emulated_props(gpu, total_mem);
        let attributes = properties::attributes(&props).into_iter().collect();
        Arc::new(Self {
            props,
            attributes,
            total: total_mem,
            used: Budget::Shared(budget),
        })
    }

    /// The device's properties.
    pub fn props(&self) -> &DeviceProps {
        &self.props
    }

    /// Every attribute the device answers, as `(cudaDeviceAttr, value)`.
    pub fn attributes(&self) -> Vec<(i32, i32)> {
        let mut attrs: Vec<_> = self.attributes.iter().map(|(&a, &v)| (a, v)).collect();
        attrs.sort_unstable();
        attrs
    }

    /// Bytes of device memory in all.
    pub fn total_memory(&self) -> u64 {
        self.total
    }

    /// Bytes of device memory not allocated by any client.
    pub fn free_memory(&self) -> u64 {
        let used = match &self.used {
            Budget::Local(used) => used.load(Ordering::Relaxed),
            Budget::Shared(shared) => shared.used(),
        };
        self.total.saturating_sub(used)
    }

    /// Takes `bytes` from the shared budget, or fails without changing it.
    fn reserve(&self, bytes: u64) -> Result<(), CudaError> {
        let taken = match &self.used {
            Budget::Local(used) => used
                .fetch_update(Ordering::AcqRel, Ordering::Acquire, |used| {
                    used.checked_add(bytes).filter(|&n| n <= self.total)
                })
                .is_ok(),
            Budget::Shared(shared) => shared.reserve(bytes, self.total),
        };
        if taken {
            Ok(())
        } else {
            Err(CudaError::MEMORY_ALLOCATION)
        }
    }

    fn release(&self, bytes: u64) {
        match &self.used {
            Budget::Local(used) => {
                used.fetch_sub(bytes, Ordering::AcqRel);
            }
            Budget::Shared(shared) => shared.release(bytes),
        }
    }
}
