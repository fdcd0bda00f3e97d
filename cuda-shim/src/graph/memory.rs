//! Graph memory: allocations made by memory alloc nodes (and by
//! `cudaMallocAsync` during capture). A node's address is fixed when the
//! node is made, so its memory is reserved on the device then. The
//! allocation is live from a launch of its alloc node until a free node,
//! `cudaFree` or `cudaFreeAsync` frees it; the reservation goes back to the
//! device once no graph or executable graph holds the node and the
//! allocation is not live.

use std::collections::HashMap;

use parking_lot::Mutex;
use rcud_client::Runtime;
use rcud_proto::CudaError;

/// `cudaGraphMemAttributeType`.
pub(crate) mod attr {
    pub(crate) const USED_MEM_CURRENT: i32 = 0;
    pub(crate) const USED_MEM_HIGH: i32 = 1;
    pub(crate) const RESERVED_MEM_CURRENT: i32 = 2;
    pub(crate) const RESERVED_MEM_HIGH: i32 = 3;
}

#[derive(Debug)]
struct Reservation {
    device: usize,
    size: u64,
    /// Graph nodes and executable graphs that name it.
    holders: u32,
    live: bool,
}

#[derive(Debug, Default)]
struct Table {
    by_ptr: HashMap<u64, Reservation>,
    /// Per device: high-water marks of live and reserved bytes.
    used_high: HashMap<usize, u64>,
    reserved_high: HashMap<usize, u64>,
}

impl Table {
    fn sum(&self, device: usize, live_only: bool) -> u64 {
        self.by_ptr
            .values()
            .filter(|r| r.device == device && (r.live || !live_only))
            .map(|r| r.size)
            .sum()
    }

    fn note_highs(&mut self, device: usize) {
        let (used, reserved) = (self.sum(device, true), self.sum(device, false));
        let u = self.used_high.entry(device).or_default();
        *u = (*u).max(used);
        let r = self.reserved_high.entry(device).or_default();
        *r = (*r).max(reserved);
    }

    /// Gives a reservation back once nothing needs it.
    fn settle(&mut self, ptr: u64) {
        if self
            .by_ptr
            .get(&ptr)
            .is_some_and(|r| r.holders == 0 && !r.live)
        {
            self.by_ptr.remove(&ptr);
            if let Err(e) = Runtime::global().free(ptr) {
                tracing::debug!("graph memory {ptr:#x} was not released: {e}");
            }
        }
    }
}

fn table() -> &'static Mutex<Table> {
    static TABLE: std::sync::OnceLock<Mutex<Table>> = std::sync::OnceLock::new();
    TABLE.get_or_init(Mutex::default)
}

/// Reserves `size` bytes on `device` for a new alloc node; the node holds it.
pub(crate) fn reserve(device: usize, size: u64) -> Result<u64, CudaError> {
    if size == 0 {
        return Err(CudaError::INVALID_VALUE);
    }
    let rt = Runtime::global();
    let current = rt.current_device()?;
    rt.set_device(device as i32)?;
    let ptr = rt.malloc(size);
    rt.set_device(current as i32)?;
    let ptr = ptr?;
    let mut t = table().lock();
    t.by_ptr.insert(
        ptr,
        Reservation {
            device,
            size,
            holders: 1,
            live: false,
        },
    );
    t.note_highs(device);
    Ok(ptr)
}

/// One more node or executable graph names `ptr`.
pub(crate) fn hold(ptr: u64) {
    if let Some(r) = table().lock().by_ptr.get_mut(&ptr) {
        r.holders += 1;
    }
}

/// One node or executable graph naming `ptr` is gone.
pub(crate) fn release(ptr: u64) {
    let mut t = table().lock();
    if let Some(r) = t.by_ptr.get_mut(&ptr) {
        r.holders = r.holders.saturating_sub(1);
    }
    t.settle(ptr);
}

/// Whether `ptr` is graph memory.
pub(crate) fn is_graph_memory(ptr: u64) -> bool {
    table().lock().by_ptr.contains_key(&ptr)
}

/// An alloc node's launch: the allocation becomes live. One still live
/// from an earlier launch is an error unless the graph frees it on launch.
pub(crate) fn allocate(ptr: u64, auto_free: bool) -> Result<(), CudaError> {
    let mut t = table().lock();
    let r = t.by_ptr.get_mut(&ptr).ok_or(CudaError::INVALID_VALUE)?;
    if r.live && !auto_free {
        return Err(CudaError::INVALID_VALUE);
    }
    r.live = true;
    let device = r.device;
    t.note_highs(device);
    Ok(())
}

/// Whether the allocations of `ptrs` may all be made now.
pub(crate) fn can_allocate(ptrs: &[u64], auto_free: bool) -> Result<(), CudaError> {
    let t = table().lock();
    for p in ptrs {
        let r = t.by_ptr.get(p).ok_or(CudaError::INVALID_VALUE)?;
        if r.live && !auto_free {
            return Err(CudaError::INVALID_VALUE);
        }
    }
    Ok(())
}

/// Frees a live graph allocation (a free node's launch, `cudaFree`,
/// `cudaFreeAsync`). `None`: `ptr` is no graph memory.
pub(crate) fn free(ptr: u64) -> Option<Result<(), CudaError>> {
    let mut t = table().lock();
    let r = t.by_ptr.get_mut(&ptr)?;
    if !r.live {
        return Some(Err(CudaError::INVALID_VALUE));
    }
    r.live = false;
    t.settle(ptr);
    Some(Ok(()))
}

/// `cudaDeviceGetGraphMemAttribute`.
pub(crate) fn attribute(device: usize, which: i32) -> Result<u64, CudaError> {
    let t = table().lock();
    Ok(match which {
        attr::USED_MEM_CURRENT => t.sum(device, true),
        attr::USED_MEM_HIGH => t.used_high.get(&device).copied().unwrap_or_default(),
        attr::RESERVED_MEM_CURRENT => t.sum(device, false),
        attr::RESERVED_MEM_HIGH => t.reserved_high.get(&device).copied().unwrap_or_default(),
        _ => return Err(CudaError::INVALID_VALUE),
    })
}

/// `cudaDeviceSetGraphMemAttribute`: only the high-water marks, reset to
/// the current amounts with 0.
pub(crate) fn reset_high(device: usize, which: i32, value: u64) -> Result<(), CudaError> {
    if value != 0 {
        return Err(CudaError::INVALID_VALUE);
    }
    let mut t = table().lock();
    match which {
        attr::USED_MEM_HIGH => {
            let now = t.sum(device, true);
            t.used_high.insert(device, now);
        }
        attr::RESERVED_MEM_HIGH => {
            let now = t.sum(device, false);
            t.reserved_high.insert(device, now);
        }
        _ => return Err(CudaError::INVALID_VALUE),
    }
    Ok(())
}
