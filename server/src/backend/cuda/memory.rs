//! The device memory one client may name: what it allocated, and the
//! module-scope variables of the modules it loaded. Every address or range
//! from the wire is checked here before it reaches the driver.

use std::collections::BTreeMap;
use std::ops::Bound;

use rcud_proto::CudaError;

/// What a region is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum RegionKind {
    /// From `cudaMalloc`: the client may free it.
    Malloc,
    /// A `__device__`/`__constant__` variable of a loaded module: copies may
    /// target it, `cudaFree` may not.
    Global,
    /// Another client's allocation opened through CUDA IPC: copies and
    /// kernels may use it, only `cudaIpcCloseMemHandle` lets it go, and its
    /// owner pays for it.
    Imported,
}

#[derive(Debug, Clone, Copy)]
struct Region {
    size: u64,
    kind: RegionKind,
}

/// The regions of one client's context, by start address. Regions never
/// overlap: the driver hands out disjoint ranges.
#[derive(Debug, Default)]
pub(crate) struct AllocTable {
    regions: BTreeMap<u64, Region>,
}

impl AllocTable {
    /// Records an allocation the driver just made.
    pub(crate) fn insert_malloc(&mut self, ptr: u64, size: u64) {
        self.regions.insert(
            ptr,
            Region {
                size,
                kind: RegionKind::Malloc,
            },
        );
    }

    /// Records a module variable; asking again for the same one is harmless.
    pub(crate) fn insert_global(&mut self, ptr: u64, size: u64) {
        if size == 0 {
            return;
        }
        self.regions.entry(ptr).or_insert(Region {
            size,
            kind: RegionKind::Global,
        });
    }

    /// Records another client's allocation opened here through CUDA IPC.
    pub(crate) fn insert_imported(&mut self, ptr: u64, size: u64) {
        self.regions.insert(
            ptr,
            Region {
                size,
                kind: RegionKind::Imported,
            },
        );
    }

    /// Forgets the imported allocation that starts exactly at `ptr`.
    pub(crate) fn remove_imported(&mut self, ptr: u64) -> Result<(), CudaError> {
        match self.regions.get(&ptr) {
            Some(r) if r.kind == RegionKind::Imported => {
                self.regions.remove(&ptr);
                Ok(())
            }
            _ => Err(CudaError::INVALID_VALUE),
        }
    }

    /// Forgets the allocation that starts exactly at `ptr`, which must be one
    /// from `cudaMalloc`; returns its size.
    pub(crate) fn remove_malloc(&mut self, ptr: u64) -> Result<u64, CudaError> {
        match self.regions.get(&ptr) {
            Some(r) if r.kind == RegionKind::Malloc => {
                let size = r.size;
                self.regions.remove(&ptr);
                Ok(size)
            }
            _ => Err(CudaError::INVALID_VALUE),
        }
    }

    /// Checks that `[ptr, ptr + len)` lies inside one region. An empty range
    /// is valid anywhere from a region's start to its end, as on the emulated
    /// device.
    pub(crate) fn check(&self, ptr: u64, len: u64) -> Result<RegionKind, CudaError> {
        let (&base, region) = self
            .regions
            .range((Bound::Unbounded, Bound::Included(ptr)))
            .next_back()
            .ok_or(CudaError::INVALID_VALUE)?;
        let offset = ptr - base;
        let end = offset.checked_add(len).ok_or(CudaError::INVALID_VALUE)?;
        if end > region.size {
            return Err(CudaError::INVALID_VALUE);
        }
        Ok(region.kind)
    }

    /// The region holding `ptr`: its start and size.
    pub(crate) fn region_of(&self, ptr: u64) -> Option<(u64, u64)> {
        let (&base, region) = self
            .regions
            .range((Bound::Unbounded, Bound::Included(ptr)))
            .next_back()?;
        (ptr - base < region.size).then_some((base, region.size))
    }

    /// Forgets everything (the context that held it is gone).
    pub(crate) fn clear(&mut self) {
        self.regions.clear();
    }

    /// Bytes of every region the client pays for: allocations and the module
    /// variables looked up (not other clients' allocations it opened).
    pub(crate) fn held_bytes(&self) -> u64 {
        self.regions
            .values()
            .filter(|r| r.kind != RegionKind::Imported)
            .map(|r| r.size)
            .sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table() -> AllocTable {
        let mut t = AllocTable::default();
        t.insert_malloc(0x1000, 0x100);
        t.insert_malloc(0x2000, 0x10);
        t.insert_global(0x3000, 8);
        t
    }

    #[test]
    fn ranges_must_lie_inside_one_region() {
        let t = table();
        assert_eq!(t.check(0x1000, 0x100), Ok(RegionKind::Malloc));
        assert_eq!(t.check(0x10ff, 1), Ok(RegionKind::Malloc));
        assert_eq!(t.check(0x1100, 0), Ok(RegionKind::Malloc));
        assert_eq!(t.check(0x3000, 8), Ok(RegionKind::Global));
        for (ptr, len) in [
            (0x1000, 0x101),
            (0x10ff, 2),
            (0x1100, 1),
            (0xfff, 1),
            (0, 0),
            (0x1800, 1),
            (0x2000, 0x1000),
            (0x3004, 8),
            (0x1000, u64::MAX),
            (u64::MAX, 1),
        ] {
            assert_eq!(
                t.check(ptr, len),
                Err(CudaError::INVALID_VALUE),
                "{ptr:#x}+{len:#x}"
            );
        }
    }

    #[test]
    fn only_allocation_starts_can_be_freed() {
        let mut t = table();
        assert_eq!(t.remove_malloc(0x1001), Err(CudaError::INVALID_VALUE));
        assert_eq!(t.remove_malloc(0x3000), Err(CudaError::INVALID_VALUE));
        assert_eq!(t.held_bytes(), 0x118);
        assert_eq!(t.remove_malloc(0x1000), Ok(0x100));
        assert_eq!(t.remove_malloc(0x1000), Err(CudaError::INVALID_VALUE));
        assert_eq!(t.check(0x1000, 1), Err(CudaError::INVALID_VALUE));
        assert_eq!(t.held_bytes(), 0x18);
    }

    #[test]
    fn globals_are_recorded_once_and_empty_ones_not_at_all() {
        let mut t = table();
        t.insert_global(0x3000, 8);
        t.insert_global(0x4000, 0);
        assert_eq!(t.check(0x4000, 0), Err(CudaError::INVALID_VALUE));
        assert_eq!(t.region_of(0x3007), Some((0x3000, 8)));
        assert_eq!(t.region_of(0x3008), None);
        t.clear();
        assert_eq!(t.check(0x3000, 1), Err(CudaError::INVALID_VALUE));
    }
}
