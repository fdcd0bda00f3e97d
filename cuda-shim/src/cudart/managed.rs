//! Managed memory (`cudaMallocManaged`, `cuMemAllocManaged`) on remote GPUs,
//! with the semantics CUDA gives devices without concurrent managed access
//! (`cudaDevAttrConcurrentManagedAccess` = 0): the host may touch managed
//! memory only while the device is idle, that is after a synchronization.
//!
//! An allocation is device memory plus a host mirror mapped at the same
//! address, so one pointer serves both sides (unified addressing). The
//! mirrors of a device move with the work: the first device operation after
//! the host owned them (a launch, a copy, a memset) copies them to the
//! device; the next synchronization copies them back. Each move copies
//! every managed allocation of the device, whatever was touched.
//!
//! Mapped page-locked memory (`cudaHostAllocMapped`) is made the same way:
//! its device pointer is its host pointer, and kernels that read and write
//! it see what the host wrote before the launch, and the host sees what
//! they wrote after a synchronization, the coherence points CUDA gives.

use std::collections::{BTreeMap, BTreeSet};
use std::ffi::c_void;
use std::ops::Bound;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

use rcud_client::Runtime;
use rcud_proto::CudaError;

fn rt() -> &'static Runtime {
    Runtime::global()
}

/// `cudaMemAttachGlobal` and `cudaMemAttachHost`.
const ATTACH_FLAGS: u32 = 0x1 | 0x2;

#[derive(Debug, Clone, Copy)]
struct Region {
    len: usize,
    /// The host mapping: whole pages around `[base, base + len)`.
    map_start: usize,
    map_len: usize,
    device: usize,
}

#[derive(Default)]
struct Managed {
    regions: BTreeMap<u64, Region>,
    /// Devices whose managed memory the device side holds: work ran since
    /// the mirrors were last brought back.
    on_device: BTreeSet<usize>,
}

static MANAGED: Mutex<Managed> = Mutex::new(Managed {
    regions: BTreeMap::new(),
    on_device: BTreeSet::new(),
});
/// Number of managed allocations: the hooks cost nothing without any.
static COUNT: AtomicUsize = AtomicUsize::new(0);

fn table() -> std::sync::MutexGuard<'static, Managed> {
    MANAGED
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

fn page_size() -> usize {
    // SAFETY: sysconf has no preconditions.
    let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    usize::try_from(page).unwrap_or(4096).max(1)
}

/// Allocates `size` bytes of managed memory on the current device.
pub(crate) fn alloc(size: usize, flags: u32) -> Result<u64, CudaError> {
    if size == 0 || flags & !ATTACH_FLAGS != 0 || flags.count_ones() != 1 {
        return Err(CudaError::INVALID_VALUE);
    }
    alloc_mirrored(size)
}

/// Whether `ptr` is the start of a mirrored allocation.
pub(crate) fn is_allocation(ptr: u64) -> bool {
    COUNT.load(Ordering::Relaxed) != 0 && table().regions.contains_key(&ptr)
}

/// Device memory of the current device with a host mirror at the same
/// address, moved as managed memory moves: managed memory itself, and
/// mapped page-locked memory (`cudaHostAllocMapped`), which kernels reach
/// through the same pointer.
pub(crate) fn alloc_mirrored(size: usize) -> Result<u64, CudaError> {
    if size == 0 {
        return Err(CudaError::INVALID_VALUE);
    }
    let d = rt().current_device()?;
    let base = rt().malloc(size as u64)?;
    let page = page_size();
    let start = base as usize / page * page;
    let Some(end) = (base as usize)
        .checked_add(size)
        .and_then(|e| e.checked_next_multiple_of(page))
    else {
        let _ = rt().free(base);
        return Err(CudaError::MEMORY_ALLOCATION);
    };
    let map_len = end - start;
    // SAFETY: a new private anonymous mapping; MAP_FIXED_NOREPLACE never
    // replaces an existing mapping of the process.
    let mapped = unsafe {
        libc::mmap(
            start as *mut c_void,
            map_len,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_FIXED_NOREPLACE,
            -1,
            0,
        )
    };
    if mapped as usize != start {
        if mapped != libc::MAP_FAILED {
            // An old kernel took the address as a hint only.
            // SAFETY: the mapping was just made, and nothing uses it.
            unsafe { libc::munmap(mapped, map_len) };
        }
        let _ = rt().free(base);
        eprintln!(
            "rcud: cudaMallocManaged: the device address {base:#x} is taken in this process, so \
             it cannot be mapped on the host"
        );
        return Err(CudaError::MEMORY_ALLOCATION);
    }
    let mut t = table();
    // The device holds what it held: new memory reads as zero on both sides.
    t.regions.insert(
        base,
        Region {
            len: size,
            map_start: start,
            map_len,
            device: d,
        },
    );
    COUNT.fetch_add(1, Ordering::Relaxed);
    Ok(base)
}

/// Frees managed memory at `ptr`; `None` when `ptr` is not managed.
pub(crate) fn free(ptr: u64) -> Option<Result<(), CudaError>> {
    if COUNT.load(Ordering::Relaxed) == 0 {
        return None;
    }
    let region = table().regions.remove(&ptr)?;
    COUNT.fetch_sub(1, Ordering::Relaxed);
    // Work still queued may use it, as for cudaFree.
    let result = rt().free(ptr);
    // SAFETY: the mapping made by `alloc`, no longer in the table, so no
    // copy reads or writes it any more.
    unsafe { libc::munmap(region.map_start as *mut c_void, region.map_len) };
    Some(result)
}

/// Whether `[ptr, ptr + len)` overlaps managed memory, and of which device.
pub(crate) fn device_of(ptr: u64) -> Option<usize> {
    if COUNT.load(Ordering::Relaxed) == 0 {
        return None;
    }
    table()
        .regions
        .range((Bound::Unbounded, Bound::Included(ptr)))
        .next_back()
        .filter(|(&base, r)| ptr < base + r.len as u64)
        .map(|(_, r)| r.device)
}

/// Before work on device `d`: hands the mirrors of `d` to the device if
/// the host held them.
pub(crate) fn to_device(d: usize) {
    if COUNT.load(Ordering::Relaxed) == 0 {
        return;
    }
    let mut t = table();
    if t.on_device.contains(&d) {
        return;
    }
    for (&base, r) in t.regions.iter().filter(|(_, r)| r.device == d) {
        // SAFETY: the mirror is mapped for `len` bytes at `base` while it is
        // in the table (the table's lock is held).
        let bytes = unsafe { std::slice::from_raw_parts(base as *const u8, r.len) };
        if let Err(e) = rt().memcpy_htod(d, base, bytes) {
            tracing::debug!("managed memory at {base:#x} to device {d}: {e:?}");
        }
    }
    t.on_device.insert(d);
}

/// [`to_device`] for the device of `stream`.
pub(crate) fn to_device_of_stream(stream: u64) {
    if COUNT.load(Ordering::Relaxed) == 0 {
        return;
    }
    if let Ok(d) = rt().stream_device(stream) {
        to_device(d);
    }
}

/// After a synchronization with device `d`: its work is done (the server
/// runs a device's work in issue order), so the mirrors come back.
pub(crate) fn to_host(d: usize) {
    if COUNT.load(Ordering::Relaxed) == 0 {
        return;
    }
    let mut t = table();
    if !t.on_device.remove(&d) {
        return;
    }
    for (&base, r) in t.regions.iter().filter(|(_, r)| r.device == d) {
        // SAFETY: as in `to_device`; the host does not touch managed memory
        // during a synchronizing call.
        let bytes = unsafe { std::slice::from_raw_parts_mut(base as *mut u8, r.len) };
        if let Err(e) = rt().memcpy_dtoh(d, bytes, base) {
            tracing::debug!("managed memory at {base:#x} from device {d}: {e:?}");
        }
    }
}

/// [`to_host`] for every device.
pub(crate) fn to_host_all() {
    if COUNT.load(Ordering::Relaxed) == 0 {
        return;
    }
    let devices: Vec<usize> = table().on_device.iter().copied().collect();
    for d in devices {
        to_host(d);
    }
}

/// [`to_host`] for the device of `stream`.
pub(crate) fn to_host_of_stream(stream: u64) {
    if COUNT.load(Ordering::Relaxed) == 0 {
        return;
    }
    if let Ok(d) = rt().stream_device(stream) {
        to_host(d);
    }
}
