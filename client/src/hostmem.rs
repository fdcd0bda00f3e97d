//! The table of page-locked host memory: what `cudaMallocHost`/`cudaHostAlloc`
//! returned and what `cudaHostRegister` registered. The memory itself is
//! allocated by the C ABI layer; this table holds ranges and flags only.

use std::collections::BTreeMap;
use std::ops::Bound;

use rcud_proto::CudaError;

/// How a host range became page-locked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Origin {
    /// Allocated by `cudaMallocHost`/`cudaHostAlloc`; freed with `cudaFreeHost`.
    Allocated,
    /// User memory registered with `cudaHostRegister`.
    Registered,
}

/// One page-locked range.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HostRegion {
    /// Length in bytes.
    pub len: u64,
    /// Flags given at allocation or registration.
    pub flags: u32,
    /// Allocation or registration.
    pub origin: Origin,
}

/// `cudaHostAlloc` flags: Portable | Mapped | WriteCombined.
pub const HOST_ALLOC_FLAGS: u32 = 0x7;
/// `cudaHostRegister` flags: Portable | Mapped | IoMemory | ReadOnly.
pub const HOST_REGISTER_FLAGS: u32 = 0xF;
/// `cudaHostRegisterIoMemory`: the range is device I/O memory, not RAM.
pub const HOST_REGISTER_IO_MEMORY: u32 = 0x4;

/// Page-locked host ranges, keyed by start address.
#[derive(Debug, Default)]
pub struct HostMemory {
    regions: BTreeMap<u64, HostRegion>,
}

impl HostMemory {
    /// The region containing `addr`, with its start.
    pub fn lookup(&self, addr: u64) -> Option<(u64, HostRegion)> {
        self.regions
            .range((Bound::Unbounded, Bound::Included(addr)))
            .next_back()
            .filter(|(&base, r)| addr < base + r.len.max(1))
            .map(|(&base, &r)| (base, r))
    }

    fn overlaps(&self, base: u64, len: u64) -> bool {
        let end = base.saturating_add(len);
        self.lookup(base).is_some()
            || self
                .regions
                .range((Bound::Excluded(base), Bound::Excluded(end)))
                .next()
                .is_some()
    }

    /// Records memory allocated by `cudaHostAlloc`.
    pub fn insert_allocated(&mut self, base: u64, len: u64, flags: u32) {
        self.regions.insert(
            base,
            HostRegion {
                len,
                flags,
                origin: Origin::Allocated,
            },
        );
    }

    /// Removes an allocation for `cudaFreeHost`; `base` must be its start.
    pub fn remove_allocated(&mut self, base: u64) -> Result<HostRegion, CudaError> {
        match self.regions.get(&base) {
            Some(r) if r.origin == Origin::Allocated => {
                let r = *r;
                self.regions.remove(&base);
                Ok(r)
            }
            _ => Err(CudaError::INVALID_VALUE),
        }
    }

    /// `cudaHostRegister`.
    pub fn register(&mut self, base: u64, len: u64, flags: u32) -> Result<(), CudaError> {
        if base == 0 || len == 0 || flags & !HOST_REGISTER_FLAGS != 0 {
            return Err(CudaError::INVALID_VALUE);
        }
        if flags & HOST_REGISTER_IO_MEMORY != 0 {
            // Device I/O memory cannot be shipped to a remote GPU.
            return Err(CudaError::NOT_SUPPORTED);
        }
        if self.overlaps(base, len) {
            return Err(CudaError::HOST_MEMORY_ALREADY_REGISTERED);
        }
        self.regions.insert(
            base,
            HostRegion {
                len,
                flags,
                origin: Origin::Registered,
            },
        );
        Ok(())
    }

    /// `cudaHostUnregister`; `base` must be the start of a registration.
    pub fn unregister(&mut self, base: u64) -> Result<(), CudaError> {
        match self.regions.get(&base) {
            Some(r) if r.origin == Origin::Registered => {
                self.regions.remove(&base);
                Ok(())
            }
            _ => Err(CudaError::HOST_MEMORY_NOT_REGISTERED),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn registration_rules() {
        let mut m = HostMemory::default();
        m.register(0x1000, 0x1000, 0).unwrap();
        assert_eq!(
            m.register(0x1800, 0x10, 0),
            Err(CudaError::HOST_MEMORY_ALREADY_REGISTERED)
        );
        assert_eq!(
            m.register(0x0800, 0x1000, 0),
            Err(CudaError::HOST_MEMORY_ALREADY_REGISTERED)
        );
        m.register(0x2000, 0x10, 1).unwrap();
        assert_eq!(m.lookup(0x1FFF).map(|(b, _)| b), Some(0x1000));
        assert_eq!(m.lookup(0x3000), None);
        assert_eq!(
            m.unregister(0x1001),
            Err(CudaError::HOST_MEMORY_NOT_REGISTERED)
        );
        m.unregister(0x1000).unwrap();
        assert_eq!(m.register(0x5000, 1, 0x100), Err(CudaError::INVALID_VALUE));
        assert_eq!(m.remove_allocated(0x2000), Err(CudaError::INVALID_VALUE));
        m.insert_allocated(0x9000, 64, 2);
        assert_eq!(m.remove_allocated(0x9000).map(|r| r.flags), Ok(2));
    }
}
