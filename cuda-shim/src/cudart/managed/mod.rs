//! Managed memory (`cudaMallocManaged`, `cuMemAllocManaged`, `__managed__`
//! variables) and mapped page-locked memory (`cudaHostAllocMapped`) on
//! remote GPUs.
//!
//! Each is device memory with a host mirror mapped at the same address, so
//! one pointer serves host and kernels. The mirror's pages track where their
//! bytes are ([`PageState`]) by page protection:
//!
//! - before device work that may touch a region (a launch, a graph launch,
//!   a copy or memset on it, a prefetch), the pages the host wrote are sent,
//!   and for a launch every page of the region becomes device-held;
//! - the host's first touch of a device-held page faults, and the handler
//!   fetches the aligned [`FETCH_CHUNK`] around it, after all work issued
//!   to the device (the server runs a device's requests in order);
//! - the host's first write to a page it holds faults too, and the handler
//!   marks the [`DIRTY_BLOCK`] around it dirty.
//!
//! So only what the host wrote travels to the device, and only what the
//! host reads comes back. The coherence points are CUDA's for devices
//! without concurrent managed access: launches and synchronizations. A host
//! touch while a kernel runs waits for the device instead of crashing.
//! Memory attached to the host or to another stream
//! (`cudaStreamAttachMemAsync`) stays with the host across launches.
//!
//! A system call that reads into or writes from a page the host does not
//! hold fails with EFAULT, as the kernel does not raise the fault in user
//! space: touch such memory from the program (or prefetch it to the host)
//! before handing it to `read(2)`/`write(2)`.

mod fault;
mod hints;
mod pages;

use std::cell::Cell;
use std::collections::BTreeMap;
use std::ops::{Bound, Range};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, MutexGuard};

use rcud_client::Runtime;
use rcud_proto::CudaError;

use hints::Hints;
pub(crate) use hints::{
    advise, legacy_location, location, prefetch, write_range_attribute, write_range_attributes,
};
use pages::{page_size, PageState};

fn rt() -> &'static Runtime {
    Runtime::global()
}

/// How much a fault on a device-held page fetches: the aligned chunk
/// around it (as far as its pages are device-held), the transport's unit.
const FETCH_CHUNK: usize = 1 << 20;
/// How much a write fault marks dirty: the aligned block around it (as far
/// as its pages are shared), so that a sequential write faults every
/// 64 KiB rather than every page.
const DIRTY_BLOCK: usize = 64 << 10;

/// `cudaMemAttachGlobal`, `cudaMemAttachHost`, `cudaMemAttachSingle`.
const ATTACH_GLOBAL: u32 = 0x1;
const ATTACH_HOST: u32 = 0x2;
const ATTACH_SINGLE: u32 = 0x4;

/// Which work may touch a region (`cudaStreamAttachMemAsync`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Attach {
    Global,
    Host,
    Single(u64),
}

struct Region {
    /// The device allocation behind the region, freed with it; `None` for
    /// managed variables, which belong to their module.
    allocation: Option<u64>,
    /// The mirrored bytes, `(address, length)`: the allocation, or the
    /// managed variables of a module that share these pages.
    extents: Vec<(u64, u64)>,
    /// The host mapping, whole pages.
    map_start: usize,
    states: Vec<PageState>,
    /// Pages the host holds (not [`PageState::Device`]): a launch has
    /// nothing to do for a region with none, without scanning its pages.
    host_pages: usize,
    hints: Vec<Hints>,
    device: usize,
    attach: Attach,
    /// The attachment restored when the attached stream is destroyed.
    default_attach: Attach,
}

impl Region {
    fn map_len(&self) -> usize {
        self.states.len() * page_size()
    }

    fn page_address(&self, page: usize) -> usize {
        self.map_start + page * page_size()
    }

    fn contains(&self, address: usize) -> bool {
        address >= self.map_start && address - self.map_start < self.map_len()
    }

    /// The pages holding `[address, address + len)`, clamped to the region.
    fn pages_of(&self, address: u64, len: u64) -> Range<usize> {
        let page = page_size() as u64;
        let start = self.map_start as u64;
        let lo = address.saturating_sub(start) / page;
        let hi = address
            .saturating_add(len)
            .saturating_sub(start)
            .div_ceil(page);
        lo.min(self.states.len() as u64) as usize..hi.min(self.states.len() as u64) as usize
    }

    /// Whether a launch on `stream` may touch the region.
    fn reachable_from(&self, stream: u64) -> bool {
        match self.attach {
            Attach::Global => true,
            Attach::Host => false,
            Attach::Single(s) => s == stream,
        }
    }

    /// The maximal runs of pages in `state` within `pages`.
    fn runs(&self, pages: Range<usize>, state: PageState) -> Vec<Range<usize>> {
        let mut runs = Vec::new();
        let mut i = pages.start;
        while i < pages.end {
            if self.states[i] != state {
                i += 1;
                continue;
            }
            let start = i;
            while i < pages.end && self.states[i] == state {
                i += 1;
            }
            runs.push(start..i);
        }
        runs
    }

    /// The run of pages in `state` around `page` within the aligned
    /// `window`-byte window that holds it.
    fn run_around(&self, page: usize, window: usize, state: PageState) -> Range<usize> {
        let per_window = (window / page_size()).max(1);
        let absolute = self.map_start / page_size() + page;
        let window_start = (absolute / per_window * per_window)
            .saturating_sub(self.map_start / page_size())
            .min(page);
        let window_end = (window_start + per_window).min(self.states.len());
        let mut lo = page;
        while lo > window_start && self.states[lo - 1] == state {
            lo -= 1;
        }
        let mut hi = page + 1;
        while hi < window_end && self.states[hi] == state {
            hi += 1;
        }
        lo..hi
    }

    /// The parts of the extents inside `pages`, as (address, offset from
    /// the first page, length).
    fn extent_parts(&self, pages: &Range<usize>) -> Vec<(u64, usize, usize)> {
        let start = self.page_address(pages.start) as u64;
        let end = self.page_address(pages.end) as u64;
        self.extents
            .iter()
            .filter_map(|&(a, len)| {
                let lo = a.max(start);
                let hi = (a + len).min(end);
                (lo < hi).then(|| (lo, (lo - start) as usize, (hi - lo) as usize))
            })
            .collect()
    }

    fn set_state(&mut self, pages: Range<usize>, state: PageState) {
        if pages.is_empty() {
            return;
        }
        pages::protect(
            self.page_address(pages.start),
            pages.len() * page_size(),
            state,
        );
        self.fill_states(pages, state);
    }

    /// Records `state` for `pages`, keeping [`Region::host_pages`].
    fn fill_states(&mut self, pages: Range<usize>, state: PageState) {
        let held = |s: &PageState| *s != PageState::Device;
        let before = self.states[pages.clone()]
            .iter()
            .filter(|s| held(s))
            .count();
        let after = if held(&state) { pages.len() } else { 0 };
        self.host_pages = self.host_pages - before + after;
        self.states[pages].fill(state);
    }

    /// Sends the pages of `pages` the host wrote; they are shared after.
    fn send_dirty(&mut self, pages: Range<usize>) {
        for run in self.runs(pages, PageState::HostDirty) {
            for (address, _, len) in self.extent_parts(&run) {
                // SAFETY: dirty pages are mapped read-write while the
                // region is in the table, whose lock the caller holds.
                let bytes = unsafe { std::slice::from_raw_parts(address as *const u8, len) };
                if let Err(e) = rt().memcpy_htod(self.device, address, bytes) {
                    tracing::warn!("rcud: managed memory at {address:#x} to the device: {e:?}");
                }
            }
            // Read-only first: a write racing with the send faults again.
            self.set_state(run, PageState::Shared);
        }
    }

    /// Hands `pages` to device work that may write them.
    fn give_to_device(&mut self, pages: Range<usize>) {
        self.send_dirty(pages.clone());
        for run in self.runs(pages, PageState::Shared) {
            self.set_state(run, PageState::Device);
        }
    }

    /// Fetches the device-held pages of `pages`; they are shared after.
    fn fetch(&mut self, pages: Range<usize>) -> Result<(), CudaError> {
        for run in self.runs(pages, PageState::Device) {
            let parts = self.extent_parts(&run);
            let device = self.device;
            pages::install_shared(
                self.page_address(run.start),
                run.len() * page_size(),
                |fresh| {
                    for &(address, offset, len) in &parts {
                        rt().memcpy_dtoh(device, &mut fresh[offset..offset + len], address)?;
                    }
                    Ok(())
                },
            )?;
            self.fill_states(run, PageState::Shared);
        }
        Ok(())
    }
}

#[derive(Default)]
struct Managed {
    /// By the start of their host mapping.
    regions: BTreeMap<usize, Region>,
}

impl Managed {
    fn containing(&mut self, address: usize) -> Option<&mut Region> {
        self.regions
            .range_mut((Bound::Unbounded, Bound::Included(address)))
            .next_back()
            .map(|(_, r)| r)
            .filter(|r| r.contains(address))
    }

    /// The region whose extents hold `ptr`.
    fn holding(&mut self, ptr: u64) -> Option<&mut Region> {
        self.containing(ptr as usize)
            .filter(|r| r.extents.iter().any(|&(a, len)| ptr >= a && ptr - a < len))
    }

    /// The region holding all of `[ptr, ptr + count)` in one extent.
    fn range(&mut self, ptr: u64, count: u64) -> Option<&mut Region> {
        self.holding(ptr).filter(|r| {
            r.extents
                .iter()
                .any(|&(a, len)| ptr >= a && count <= len - (ptr - a))
        })
    }

    fn overlaps(&self, start: usize, len: usize) -> bool {
        self.regions
            .range(..start + len)
            .next_back()
            .is_some_and(|(_, r)| r.map_start + r.map_len() > start)
    }
}

static MANAGED: Mutex<Managed> = Mutex::new(Managed {
    regions: BTreeMap::new(),
});
/// Number of regions: the hooks cost nothing without any.
static COUNT: AtomicUsize = AtomicUsize::new(0);

thread_local! {
    /// Whether this thread holds the table: a fault then is rcud's own bug,
    /// and the handler must not wait for the lock it holds.
    static HOLDS_TABLE: Cell<bool> = const { Cell::new(false) };
}

struct Table(MutexGuard<'static, Managed>);

impl std::ops::Deref for Table {
    type Target = Managed;
    fn deref(&self) -> &Managed {
        &self.0
    }
}

impl std::ops::DerefMut for Table {
    fn deref_mut(&mut self) -> &mut Managed {
        &mut self.0
    }
}

impl Drop for Table {
    fn drop(&mut self) {
        HOLDS_TABLE.with(|h| h.set(false));
    }
}

fn table() -> Table {
    let guard = MANAGED
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    HOLDS_TABLE.with(|h| h.set(true));
    Table(guard)
}

fn active() -> bool {
    COUNT.load(Ordering::Relaxed) != 0
}

// ---- allocation -------------------------------------------------------------

fn attach_of_flags(flags: u32) -> Result<Attach, CudaError> {
    match flags {
        ATTACH_GLOBAL => Ok(Attach::Global),
        ATTACH_HOST => Ok(Attach::Host),
        _ => Err(CudaError::INVALID_VALUE),
    }
}

/// Allocates `size` bytes of managed memory on the current device.
pub(crate) fn alloc(size: usize, flags: u32) -> Result<u64, CudaError> {
    if size == 0 {
        return Err(CudaError::INVALID_VALUE);
    }
    let attach = attach_of_flags(flags)?;
    alloc_with(size, attach)
}

/// Device memory of the current device with a host mirror at the same
/// address: mapped page-locked memory (`cudaHostAllocMapped`), which
/// kernels reach through the host's pointer.
pub(crate) fn alloc_mirrored(size: usize) -> Result<u64, CudaError> {
    if size == 0 {
        return Err(CudaError::INVALID_VALUE);
    }
    alloc_with(size, Attach::Global)
}

fn alloc_with(size: usize, attach: Attach) -> Result<u64, CudaError> {
    let d = rt().current_device()?;
    let page = page_size();
    let map_len = size
        .checked_next_multiple_of(page)
        .ok_or(CudaError::MEMORY_ALLOCATION)?;
    // A page more than asked, so that the region starts on a page of its
    // own: its mirror shares no page with other memory.
    let total = map_len
        .checked_add(page)
        .ok_or(CudaError::MEMORY_ALLOCATION)?;
    let allocation = rt().malloc(total as u64)?;
    let base = (allocation as usize).next_multiple_of(page);
    let mut t = table();
    if t.overlaps(base, map_len) || pages::map_at(base, map_len).is_err() {
        drop(t);
        let _ = rt().free(allocation);
        eprintln!(
            "rcud: managed memory: the device address {base:#x} is taken in this process, so it \
             cannot be mapped on the host"
        );
        return Err(CudaError::MEMORY_ALLOCATION);
    }
    // Both sides start as zeros.
    if let Err(e) = rt().memset(allocation, 0, total as u64) {
        pages::unmap(base, map_len);
        drop(t);
        let _ = rt().free(allocation);
        return Err(e);
    }
    fault::install();
    let pages = map_len / page;
    let mut region = Region {
        allocation: Some(allocation),
        extents: vec![(base as u64, size as u64)],
        map_start: base,
        states: vec![PageState::HostDirty; pages],
        host_pages: pages,
        hints: vec![Hints::default(); pages],
        device: d,
        attach,
        default_attach: attach,
    };
    region.set_state(0..pages, PageState::Shared);
    t.regions.insert(base, region);
    COUNT.fetch_add(1, Ordering::Relaxed);
    Ok(base as u64)
}

/// Whole pages `[start, end)` and the variables `(address, size)` in them.
type Span = (u64, u64, Vec<(u64, u64)>);

/// Mirrors the `__managed__` variables `(address, size)` of a module just
/// loaded on device `d`. Their pages start device-held: the module's image
/// initialized them there.
pub(crate) fn adopt_variables(d: usize, variables: &[(u64, u64)]) -> Result<(), CudaError> {
    let page = page_size() as u64;
    let mut spans: Vec<Span> = variables
        .iter()
        .filter(|&&(_, size)| size > 0)
        .map(|&(a, size)| {
            let lo = a / page * page;
            let hi = (a + size).div_ceil(page) * page;
            (lo, hi, vec![(a, size)])
        })
        .collect();
    spans.sort_by_key(|s| s.0);
    // Variables sharing pages share a region.
    let mut merged: Vec<Span> = Vec::new();
    for span in spans {
        match merged.last_mut() {
            Some(last) if span.0 < last.1 => {
                last.1 = last.1.max(span.1);
                last.2.extend(span.2);
            }
            _ => merged.push(span),
        }
    }
    let mut t = table();
    for (lo, hi, extents) in merged {
        let (start, len) = (lo as usize, (hi - lo) as usize);
        if let Some(region) = t.containing(start) {
            // Loaded before (another device's context, or a reload).
            if region.contains(start + len - 1) {
                for extent in extents {
                    if !region.extents.contains(&extent) {
                        region.extents.push(extent);
                    }
                }
                continue;
            }
        }
        if t.overlaps(start, len) || pages::map_at(start, len).is_err() {
            eprintln!(
                "rcud: the __managed__ variables at {lo:#x} share pages with other memory of \
                 this process, so they cannot be mapped on the host"
            );
            return Err(CudaError::MEMORY_ALLOCATION);
        }
        fault::install();
        let pages = len / page_size();
        let mut region = Region {
            allocation: None,
            extents,
            map_start: start,
            states: vec![PageState::HostDirty; pages],
            host_pages: pages,
            hints: vec![Hints::default(); pages],
            device: d,
            attach: Attach::Global,
            default_attach: Attach::Global,
        };
        region.set_state(0..pages, PageState::Device);
        t.regions.insert(start, region);
        COUNT.fetch_add(1, Ordering::Relaxed);
    }
    Ok(())
}

/// Whether `ptr` is the start of a mirrored allocation.
pub(crate) fn is_allocation(ptr: u64) -> bool {
    active()
        && table()
            .holding(ptr)
            .is_some_and(|r| r.allocation.is_some() && r.extents[0].0 == ptr)
}

/// Frees managed memory at `ptr`; `None` when `ptr` is not managed.
pub(crate) fn free(ptr: u64) -> Option<Result<(), CudaError>> {
    if !active() {
        return None;
    }
    let region = {
        let mut t = table();
        let start = t
            .holding(ptr)
            .filter(|r| r.allocation.is_some() && r.extents[0].0 == ptr)?
            .map_start;
        t.regions.remove(&start)?
    };
    COUNT.fetch_sub(1, Ordering::Relaxed);
    pages::unmap(region.map_start, region.map_len());
    // Work still queued may use it, as for cudaFree.
    region.allocation.map(|a| rt().free(a))
}

/// The device of the managed memory holding `ptr`.
pub(crate) fn device_of(ptr: u64) -> Option<usize> {
    if !active() {
        return None;
    }
    table().holding(ptr).map(|r| r.device)
}

// ---- coherence points ---------------------------------------------------------

/// Before a launch on `stream` of device `d`: hands every region the
/// launch may touch to the device.
fn before_launch(d: usize, stream: u64) {
    let mut t = table();
    for region in t.regions.values_mut() {
        if region.device == d && region.host_pages > 0 && region.reachable_from(stream) {
            let all = 0..region.states.len();
            region.give_to_device(all);
        }
    }
}

/// [`before_launch`] for the device of `stream`.
pub(crate) fn to_device_of_stream(stream: u64) {
    if !active() {
        return;
    }
    if let Ok(d) = rt().stream_device(stream) {
        before_launch(d, stream);
    }
}

/// Before a copy or memset that reads (`writes` false) or writes
/// `[ptr, ptr + len)` on the device side: the host's writes there are
/// sent, and written pages become device-held. Returns the device when the
/// range is managed.
pub(crate) fn to_device_range(ptr: u64, len: u64, writes: bool) -> Option<usize> {
    if !active() {
        return None;
    }
    let mut t = table();
    let region = t.holding(ptr)?;
    let pages = region.pages_of(ptr, len.max(1));
    if writes {
        region.give_to_device(pages);
    } else {
        region.send_dirty(pages);
    }
    Some(region.device)
}

/// The fault handler's part: serves a host touch of `address`, or returns
/// false when the address is not managed memory.
fn on_host_touch(address: usize) -> bool {
    if HOLDS_TABLE.with(Cell::get) {
        // rcud itself touched a protected page while holding the table.
        return false;
    }
    let mut t = table();
    let Some(region) = t.containing(address) else {
        return false;
    };
    let page = (address - region.map_start) / page_size();
    match region.states[page] {
        PageState::Device => {
            let run = region.run_around(page, FETCH_CHUNK, PageState::Device);
            if let Err(e) = region.fetch(run) {
                eprintln!(
                    "rcud: managed memory at {address:#x} could not be fetched from device {}: {e}",
                    region.device
                );
                return false;
            }
        }
        PageState::Shared => {
            let run = region.run_around(page, DIRTY_BLOCK, PageState::Shared);
            region.set_state(run, PageState::HostDirty);
        }
        // Another thread served it first.
        PageState::HostDirty => {}
    }
    true
}

// ---- attachment, advice, prefetch ---------------------------------------------

/// `cudaStreamAttachMemAsync`: which work may touch the managed allocation
/// at `ptr` (`length` 0 or its whole size). Applies at once, which CUDA's
/// stream order allows for a program that orders its accesses as CUDA
/// requires.
pub(crate) fn attach(stream: u64, ptr: u64, length: u64, flags: u32) -> Result<(), CudaError> {
    let attach = match flags {
        ATTACH_GLOBAL => Attach::Global,
        ATTACH_HOST => Attach::Host,
        // The NULL stream is every stream, not a single one.
        ATTACH_SINGLE if matches!(stream, 0 | 1) => return Err(CudaError::INVALID_VALUE),
        ATTACH_SINGLE => Attach::Single(stream),
        _ => return Err(CudaError::INVALID_VALUE),
    };
    let d = rt().stream_device(stream)?;
    let mut t = table();
    let region = t.holding(ptr).ok_or(CudaError::INVALID_VALUE)?;
    let (start, size) = region.extents[0];
    let whole = region.extents.len() == 1 && ptr == start;
    if !whole || (length != 0 && length != size) {
        return Err(CudaError::INVALID_VALUE);
    }
    if region.device != d && attach != Attach::Host {
        tracing::debug!(
            "rcud: managed memory of device {} attached to a stream of device {d}",
            region.device
        );
    }
    region.attach = attach;
    Ok(())
}

/// A destroyed stream's attachments revert to their allocation's default.
pub(crate) fn forget_stream(stream: u64) {
    if !active() {
        return;
    }
    for region in table().regions.values_mut() {
        if region.attach == Attach::Single(stream) {
            region.attach = region.default_attach;
        }
    }
}
