//! Stream-ordered memory: `cudaMallocAsync`, `cudaFreeAsync` and memory
//! pools, for the runtime and the driver API alike.
//!
//! A pool reserves segments of device memory from the server (ordinary
//! allocations, so tenants' limits count them) and carves them up here,
//! without a round trip. Reuse is always safe: every device's work travels
//! one connection and the server runs it in the order it was queued, so
//! whatever a stream did with a block before `cudaFreeAsync` runs before
//! whatever any stream does with it after the next `cudaMallocAsync`. The
//! reuse policies therefore never have to hold a block back; they are kept
//! and reported as set. Segments nobody uses are given back to the server
//! at synchronizing calls, down to the pool's release threshold, as CUDA
//! does.

use std::collections::BTreeMap;

use rcud_proto::ops::req;
use rcud_proto::CudaError;

use super::Runtime;

/// Segments are reserved in multiples of this (CUDA's granularity).
const SEGMENT: u64 = 2 << 20;
/// Alignment of what a pool hands out.
const ALIGN: u64 = 256;

/// `cudaMemPoolAttr`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PoolAttr {
    /// `cudaMemPoolReuseFollowEventDependencies` (int).
    ReuseFollowEventDependencies,
    /// `cudaMemPoolReuseAllowOpportunistic` (int).
    ReuseAllowOpportunistic,
    /// `cudaMemPoolReuseAllowInternalDependencies` (int).
    ReuseAllowInternalDependencies,
    /// `cudaMemPoolAttrReleaseThreshold` (u64).
    ReleaseThreshold,
    /// `cudaMemPoolAttrReservedMemCurrent` (u64, read only).
    ReservedMemCurrent,
    /// `cudaMemPoolAttrReservedMemHigh` (u64; only 0 may be set: reset).
    ReservedMemHigh,
    /// `cudaMemPoolAttrUsedMemCurrent` (u64, read only).
    UsedMemCurrent,
    /// `cudaMemPoolAttrUsedMemHigh` (u64; only 0 may be set: reset).
    UsedMemHigh,
}

impl PoolAttr {
    /// The attribute of CUDA's value `v` (the runtime's and the driver's
    /// enums agree).
    pub fn from_raw(v: i32) -> Result<Self, CudaError> {
        Ok(match v {
            1 => Self::ReuseFollowEventDependencies,
            2 => Self::ReuseAllowOpportunistic,
            3 => Self::ReuseAllowInternalDependencies,
            4 => Self::ReleaseThreshold,
            5 => Self::ReservedMemCurrent,
            6 => Self::ReservedMemHigh,
            7 => Self::UsedMemCurrent,
            8 => Self::UsedMemHigh,
            _ => return Err(CudaError::INVALID_VALUE),
        })
    }

    /// Whether the value is an `int` (the reuse flags) rather than a
    /// `cuuint64_t`.
    pub fn is_int(self) -> bool {
        matches!(
            self,
            Self::ReuseFollowEventDependencies
                | Self::ReuseAllowOpportunistic
                | Self::ReuseAllowInternalDependencies
        )
    }
}

/// `cudaMemAccessFlags`.
pub const ACCESS_NONE: i32 = 0;
/// `cudaMemAccessFlagsProtRead`.
pub const ACCESS_READ: i32 = 1;
/// `cudaMemAccessFlagsProtReadWrite`.
pub const ACCESS_READ_WRITE: i32 = 3;

/// One reserved segment: its free ranges (start -> length).
#[derive(Debug)]
struct Segment {
    len: u64,
    free: BTreeMap<u64, u64>,
}

impl Segment {
    fn new(base: u64, len: u64) -> Self {
        Self {
            len,
            free: BTreeMap::from([(base, len)]),
        }
    }

    fn is_unused(&self) -> bool {
        self.free.len() == 1 && self.free.values().next() == Some(&self.len)
    }

    /// First fit.
    fn take(&mut self, size: u64) -> Option<u64> {
        let (&start, &len) = self.free.iter().find(|(_, &len)| len >= size)?;
        self.free.remove(&start);
        if len > size {
            self.free.insert(start + size, len - size);
        }
        Some(start)
    }

    /// Gives `[start, start + size)` back, merging with its neighbours.
    fn give(&mut self, mut start: u64, mut size: u64) {
        if let Some((&prev, &plen)) = self.free.range(..start).next_back() {
            if prev + plen == start {
                self.free.remove(&prev);
                start = prev;
                size += plen;
            }
        }
        if let Some(&nlen) = self.free.get(&(start + size)) {
            self.free.remove(&(start + size));
            size += nlen;
        }
        self.free.insert(start, size);
    }
}

/// One memory pool.
#[derive(Debug)]
pub struct Pool {
    device: usize,
    /// Segment base -> segment.
    segments: BTreeMap<u64, Segment>,
    /// Live blocks: start -> (size as asked, size taken).
    blocks: BTreeMap<u64, (u64, u64)>,
    release_threshold: u64,
    reuse: [bool; 3],
    reserved_high: u64,
    used: u64,
    used_high: u64,
    /// Access of other devices (the owner always has read-write).
    access: BTreeMap<usize, i32>,
    /// Largest size of the pool (`maxSize`; 0: no limit).
    max_size: u64,
    /// The device's default pool (cannot be destroyed).
    default: bool,
}

impl Pool {
    fn new(device: usize, max_size: u64, default: bool) -> Self {
        Self {
            device,
            segments: BTreeMap::new(),
            blocks: BTreeMap::new(),
            release_threshold: 0,
            reuse: [true; 3],
            reserved_high: 0,
            used: 0,
            used_high: 0,
            access: BTreeMap::new(),
            max_size,
            default,
        }
    }

    fn reserved(&self) -> u64 {
        self.segments.values().map(|s| s.len).sum()
    }

    /// A block from the segments already reserved.
    fn take(&mut self, size: u64) -> Option<u64> {
        let taken = size.div_ceil(ALIGN) * ALIGN;
        let start = self.segments.values_mut().find_map(|s| s.take(taken))?;
        self.blocks.insert(start, (size, taken));
        self.used += taken;
        self.used_high = self.used_high.max(self.used);
        Some(start)
    }

    fn segment_of(&self, ptr: u64) -> Option<u64> {
        self.segments
            .range(..=ptr)
            .next_back()
            .filter(|(&base, s)| ptr < base + s.len)
            .map(|(&base, _)| base)
    }
}

/// The pools of one process.
#[derive(Debug, Default)]
pub struct Pools {
    pools: BTreeMap<u64, Pool>,
    /// Per device: its default pool, and its current one.
    default: BTreeMap<usize, u64>,
    current: BTreeMap<usize, u64>,
    next: u64,
}

/// Pool handles start here (never a valid pointer of ours).
const FIRST_POOL: u64 = 0x7f00_0000;

impl Pools {
    fn handle(&mut self) -> u64 {
        self.next += 1;
        FIRST_POOL + self.next * 16
    }

    fn default_of(&mut self, device: usize) -> u64 {
        if let Some(&h) = self.default.get(&device) {
            return h;
        }
        let h = self.handle();
        self.pools.insert(h, Pool::new(device, 0, true));
        self.default.insert(device, h);
        h
    }

    fn get(&mut self, pool: u64) -> Result<&mut Pool, CudaError> {
        self.pools.get_mut(&pool).ok_or(CudaError::INVALID_VALUE)
    }

    /// The pool and block holding `ptr`, if a pool handed it out.
    fn block_of(&self, ptr: u64) -> Option<u64> {
        self.pools
            .iter()
            .find(|(_, p)| p.blocks.contains_key(&ptr))
            .map(|(&h, _)| h)
    }
}

impl Runtime {
    /// `cudaDeviceGetDefaultMemPool`.
    pub fn default_mem_pool(&self, device: i32) -> Result<u64, CudaError> {
        let d = self.check_device(device)?;
        Ok(self.pools.lock().default_of(d))
    }

    /// `cudaDeviceGetMemPool`: the pool `cudaMallocAsync` uses on `device`.
    pub fn current_mem_pool(&self, device: i32) -> Result<u64, CudaError> {
        let d = self.check_device(device)?;
        let mut pools = self.pools.lock();
        match pools.current.get(&d) {
            Some(&h) => Ok(h),
            None => Ok(pools.default_of(d)),
        }
    }

    /// `cudaDeviceSetMemPool`.
    pub fn set_mem_pool(&self, device: i32, pool: u64) -> Result<(), CudaError> {
        let d = self.check_device(device)?;
        let mut pools = self.pools.lock();
        if pools.get(pool)?.device != d {
            return Err(CudaError::INVALID_DEVICE);
        }
        pools.current.insert(d, pool);
        Ok(())
    }

    /// `cudaMemPoolCreate` for device `device` (the location of the props),
    /// at most `max_size` bytes (0: no limit).
    pub fn mem_pool_create(&self, device: i32, max_size: u64) -> Result<u64, CudaError> {
        let d = self.check_device(device)?;
        let mut pools = self.pools.lock();
        let h = pools.handle();
        pools.pools.insert(h, Pool::new(d, max_size, false));
        Ok(h)
    }

    /// `cudaMemPoolDestroy`: once the work queued on its device is done,
    /// every segment goes back to the server, blocks still allocated with
    /// them (CUDA frees them with the pool too).
    pub fn mem_pool_destroy(&self, pool: u64) -> Result<(), CudaError> {
        let removed = {
            let mut pools = self.pools.lock();
            let p = pools.get(pool)?;
            if p.default {
                return Err(CudaError::INVALID_VALUE);
            }
            let p = pools.pools.remove(&pool).ok_or(CudaError::INVALID_VALUE)?;
            // A device whose current pool this was falls back to its default.
            pools.current.retain(|_, &mut h| h != pool);
            p
        };
        self.synchronize_device(removed.device)?;
        for &base in removed.segments.keys() {
            self.release_segment(removed.device, base)?;
        }
        Ok(())
    }

    /// `cudaMallocAsync`: from the current pool of the stream's device.
    pub fn malloc_async(&self, size: u64, stream: u64) -> Result<u64, CudaError> {
        let d = self.stream_device(stream)?;
        let pool = self.current_mem_pool(d as i32)?;
        self.malloc_from_pool(size, pool, stream)
    }

    /// `cudaMallocFromPoolAsync`.
    pub fn malloc_from_pool(&self, size: u64, pool: u64, stream: u64) -> Result<u64, CudaError> {
        let d = self.stream_device(stream)?;
        if size == 0 {
            return Err(CudaError::INVALID_VALUE);
        }
        {
            let mut pools = self.pools.lock();
            let p = pools.get(pool)?;
            if p.device != d {
                return Err(CudaError::INVALID_VALUE);
            }
            if let Some(ptr) = p.take(size) {
                return Ok(ptr);
            }
            let want = size.div_ceil(SEGMENT) * SEGMENT;
            if p.max_size > 0 && p.reserved() + want > p.max_size {
                return Err(CudaError::MEMORY_ALLOCATION);
            }
        }
        // A new segment: one round trip, outside the lock.
        let len = size.div_ceil(SEGMENT) * SEGMENT;
        let base = self.call(d, &req::Malloc { size: len }, &[], &mut [])?.ptr;
        self.allocs.write().insert(base, (len, d));
        let mut pools = self.pools.lock();
        let Ok(p) = pools.get(pool) else {
            // Destroyed meanwhile.
            drop(pools);
            self.release_segment(d, base)?;
            return Err(CudaError::INVALID_VALUE);
        };
        p.segments.insert(base, Segment::new(base, len));
        p.reserved_high = p.reserved_high.max(p.reserved());
        p.take(size).ok_or(CudaError::MEMORY_ALLOCATION)
    }

    /// `cudaFreeAsync`: the block goes back to its pool at once (see the
    /// module documentation for why that respects stream order).
    pub fn free_async(&self, ptr: u64, stream: u64) -> Result<(), CudaError> {
        self.stream_device(stream)?;
        if self.pool_free(ptr)? {
            Ok(())
        } else {
            Err(CudaError::INVALID_VALUE)
        }
    }

    /// Whether a pool handed out the block at `ptr`.
    pub(super) fn pool_owns(&self, ptr: u64) -> bool {
        self.pools.lock().block_of(ptr).is_some()
    }

    /// Frees `ptr` if a pool handed it out; `Ok(false)` if none did.
    pub(super) fn pool_free(&self, ptr: u64) -> Result<bool, CudaError> {
        let mut pools = self.pools.lock();
        let Some(h) = pools.block_of(ptr) else {
            return Ok(false);
        };
        let p = pools.get(h)?;
        let (_, taken) = p.blocks.remove(&ptr).ok_or(CudaError::INVALID_VALUE)?;
        p.used -= taken;
        let seg = p.segment_of(ptr).ok_or(CudaError::INVALID_VALUE)?;
        if let Some(s) = p.segments.get_mut(&seg) {
            s.give(ptr, taken);
        }
        Ok(true)
    }

    /// Gives back the unused segments of device `d`'s pools above their
    /// release thresholds: CUDA does it at synchronizing calls.
    pub(super) fn trim_pools(&self, d: usize) -> Result<(), CudaError> {
        let handles: Vec<(u64, u64)> = {
            let pools = self.pools.lock();
            pools
                .pools
                .iter()
                .filter(|(_, p)| p.device == d)
                .map(|(&h, p)| (h, p.release_threshold))
                .collect()
        };
        for (h, keep) in handles {
            self.trim_pool_to(h, keep)?;
        }
        Ok(())
    }

    /// `cudaMemPoolTrimTo`: gives back unused segments until at most `keep`
    /// bytes stay reserved (or no unused segment is left).
    pub fn mem_pool_trim_to(&self, pool: u64, keep: u64) -> Result<(), CudaError> {
        self.pools.lock().get(pool)?;
        self.trim_pool_to(pool, keep)
    }

    fn trim_pool_to(&self, pool: u64, keep: u64) -> Result<(), CudaError> {
        loop {
            let (d, base) = {
                let mut pools = self.pools.lock();
                let Ok(p) = pools.get(pool) else {
                    return Ok(());
                };
                if p.reserved() <= keep {
                    return Ok(());
                }
                let Some((&base, _)) = p.segments.iter().find(|(_, s)| s.is_unused()) else {
                    return Ok(());
                };
                p.segments.remove(&base);
                (p.device, base)
            };
            self.release_segment(d, base)?;
        }
    }

    fn release_segment(&self, d: usize, base: u64) -> Result<(), CudaError> {
        self.allocs.write().remove(&base);
        self.call(d, &req::Free { ptr: base }, &[], &mut [])?;
        Ok(())
    }

    /// `cudaMemPoolGetAttribute`.
    pub fn mem_pool_get_attribute(&self, pool: u64, attr: PoolAttr) -> Result<u64, CudaError> {
        let mut pools = self.pools.lock();
        let p = pools.get(pool)?;
        Ok(match attr {
            PoolAttr::ReuseFollowEventDependencies => u64::from(p.reuse[0]),
            PoolAttr::ReuseAllowOpportunistic => u64::from(p.reuse[1]),
            PoolAttr::ReuseAllowInternalDependencies => u64::from(p.reuse[2]),
            PoolAttr::ReleaseThreshold => p.release_threshold,
            PoolAttr::ReservedMemCurrent => p.reserved(),
            PoolAttr::ReservedMemHigh => p.reserved_high,
            PoolAttr::UsedMemCurrent => p.used,
            PoolAttr::UsedMemHigh => p.used_high,
        })
    }

    /// `cudaMemPoolSetAttribute`.
    pub fn mem_pool_set_attribute(
        &self,
        pool: u64,
        attr: PoolAttr,
        value: u64,
    ) -> Result<(), CudaError> {
        let mut pools = self.pools.lock();
        let p = pools.get(pool)?;
        match attr {
            PoolAttr::ReuseFollowEventDependencies => p.reuse[0] = value != 0,
            PoolAttr::ReuseAllowOpportunistic => p.reuse[1] = value != 0,
            PoolAttr::ReuseAllowInternalDependencies => p.reuse[2] = value != 0,
            PoolAttr::ReleaseThreshold => p.release_threshold = value,
            // The high-water marks may only be reset.
            PoolAttr::ReservedMemHigh if value == 0 => p.reserved_high = p.reserved(),
            PoolAttr::UsedMemHigh if value == 0 => p.used_high = p.used,
            _ => return Err(CudaError::INVALID_VALUE),
        }
        Ok(())
    }

    /// `cudaMemPoolSetAccess` for `device`.
    pub fn mem_pool_set_access(&self, pool: u64, device: i32, flags: i32) -> Result<(), CudaError> {
        let d = self.check_device(device)?;
        if !matches!(flags, ACCESS_NONE | ACCESS_READ_WRITE) {
            // CUDA pools offer read-write or nothing.
            return Err(CudaError::INVALID_VALUE);
        }
        let mut pools = self.pools.lock();
        let p = pools.get(pool)?;
        if d == p.device {
            // The owner's access cannot be taken away.
            return if flags == ACCESS_READ_WRITE {
                Ok(())
            } else {
                Err(CudaError::INVALID_DEVICE)
            };
        }
        p.access.insert(d, flags);
        Ok(())
    }

    /// `cudaMemPoolGetAccess` of `device`.
    pub fn mem_pool_get_access(&self, pool: u64, device: i32) -> Result<i32, CudaError> {
        let d = self.check_device(device)?;
        let mut pools = self.pools.lock();
        let p = pools.get(pool)?;
        Ok(if d == p.device {
            ACCESS_READ_WRITE
        } else {
            p.access.get(&d).copied().unwrap_or(ACCESS_NONE)
        })
    }

    /// Forgets the pools of device `d` (its memory is gone: a reset).
    pub(super) fn forget_pools(&self, d: usize) {
        let mut pools = self.pools.lock();
        pools.pools.retain(|_, p| p.device != d || p.default);
        pools.current.remove(&d);
        for p in pools.pools.values_mut().filter(|p| p.device == d) {
            p.segments.clear();
            p.blocks.clear();
            p.used = 0;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_segment_hands_out_first_fit_and_merges_what_comes_back() {
        let mut s = Segment::new(0x1000, 4096);
        let a = s.take(1024).unwrap();
        let b = s.take(1024).unwrap();
        let c = s.take(2048).unwrap();
        assert_eq!((a, b, c), (0x1000, 0x1400, 0x1800));
        assert!(s.take(1).is_none());
        s.give(b, 1024);
        assert_eq!(s.take(512), Some(0x1400), "the hole is reused");
        s.give(0x1400, 512);
        s.give(a, 1024);
        s.give(c, 2048);
        assert!(s.is_unused(), "{:?}", s.free);
    }

    #[test]
    fn pool_blocks_are_aligned_and_counted() {
        let mut p = Pool::new(0, 0, false);
        p.segments
            .insert(0x10_0000, Segment::new(0x10_0000, SEGMENT));
        let a = p.take(100).unwrap();
        let b = p.take(300).unwrap();
        assert_eq!(b - a, 256);
        assert_eq!(p.used, 256 + 512);
        assert_eq!(p.used_high, 768);
        assert!(p.take(SEGMENT).is_none(), "larger than what is left");
    }
}
