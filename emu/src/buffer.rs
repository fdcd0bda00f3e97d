//! Zero-initialised host buffers that back device allocations.
//!
//! `vec![0; n]` aborts the process when the host is out of memory; a device
//! allocation must fail with `cudaErrorMemoryAllocation` instead. Large
//! buffers must also cost nothing until they are touched: a client may
//! `cudaMalloc` gigabytes and use a few pages. `alloc_zeroed` does not give
//! that here: with the 256-byte alignment of device allocations (above the
//! 16 bytes `calloc` guarantees) Rust's `System` allocator allocates and then
//! `memset`s, committing every page at once. Buffers of [`MAP_THRESHOLD`]
//! bytes or more are therefore anonymous private mappings, which the kernel
//! zero-fills page by page on first touch; smaller ones come from the heap.

use std::alloc::{self, Layout};
use std::ptr::NonNull;

use memmap2::{MmapMut, MmapOptions, UncheckedAdvice};

/// Alignment of every device allocation, as `cudaMalloc` guarantees.
pub(crate) const ALIGN: usize = 256;

/// Buffers of at least this many bytes are mapped pages rather than heap
/// blocks (glibc's default `M_MMAP_THRESHOLD`): below it the `memset` is
/// cheap, and mapping tiny buffers would spend a kernel mapping on each.
pub(crate) const MAP_THRESHOLD: usize = 128 << 10;

/// Page size assumed for charging mapped buffers.
pub(crate) const PAGE: u64 = 4096;

/// An owned, zeroed, 256-byte-aligned byte buffer.
pub(crate) struct Buffer {
    ptr: NonNull<u8>,
    len: usize,
    /// The mapping when the buffer is one (it owns the pages `ptr` points to).
    map: Option<MmapMut>,
    /// The memory file behind a shared mapping (CUDA IPC): other clients'
    /// buffers map the same pages.
    shared: Option<std::fs::File>,
}

// SAFETY: Buffer owns its allocation exclusively, like a Box<[u8]>.
unsafe impl Send for Buffer {}
// SAFETY: shared access only hands out `&[u8]`, like a Box<[u8]>.
unsafe impl Sync for Buffer {}

impl Buffer {
    /// Allocates `len` zeroed bytes, or `None` when the host cannot.
    pub(crate) fn zeroed(len: usize) -> Option<Self> {
        if len == 0 {
            return None;
        }
        if len >= MAP_THRESHOLD {
            // Page-aligned (so 256-byte aligned), zero-filled on first touch;
            // no swap reserved, so a large untouched allocation commits nothing.
            let mut map = MmapOptions::new()
                .len(len)
                .no_reserve_swap()
                .map_anon()
                .ok()?;
            let ptr = NonNull::new(map.as_mut_ptr())?;
            return Some(Self {
                ptr,
                len,
                map: Some(map),
                shared: None,
            });
        }
        let layout = Layout::from_size_align(len, ALIGN).ok()?;
        // SAFETY: the layout has a non-zero size.
        let ptr = unsafe { alloc::alloc_zeroed(layout) };
        NonNull::new(ptr).map(|ptr| Self {
            ptr,
            len,
            map: None,
            shared: None,
        })
    }

    /// A buffer over `len` bytes of the memory file `file`, mapped shared:
    /// what another client wrote there is read here, and the reverse.
    pub(crate) fn from_shared(file: std::fs::File, len: usize) -> std::io::Result<Self> {
        // SAFETY: the file is a memory file of this server that only other
        // buffers map, as device memory shared by CUDA IPC; racing accesses
        // through them read and write plain bytes, as racing accesses to
        // device memory do on a GPU.
        let mut map = unsafe { MmapOptions::new().len(len).map_mut(&file)? };
        let ptr = NonNull::new(map.as_mut_ptr()).ok_or(std::io::ErrorKind::InvalidInput)?;
        Ok(Self {
            ptr,
            len,
            map: Some(map),
            shared: Some(file),
        })
    }

    /// The memory file behind this buffer, made at the first call: the
    /// bytes move into a new memory file mapped in their place.
    pub(crate) fn share(&mut self) -> std::io::Result<std::fs::File> {
        if let Some(file) = &self.shared {
            return file.try_clone();
        }
        let fd = rustix::fs::memfd_create("rcud-ipc", rustix::fs::MemfdFlags::CLOEXEC)?;
        let file = std::fs::File::from(fd);
        file.set_len(self.len as u64)?;
        let mut shared = Self::from_shared(file.try_clone()?, self.len)?;
        shared.as_mut_slice().copy_from_slice(self.as_slice());
        *self = shared;
        Ok(file)
    }

    /// Whether the buffer is a mapping (committed page by page).
    pub(crate) fn is_mapped(&self) -> bool {
        self.map.is_some()
    }

    pub(crate) fn len(&self) -> usize {
        self.len
    }

    pub(crate) fn as_slice(&self) -> &[u8] {
        // SAFETY: ptr points to len initialised bytes owned by self (the
        // heap block, or the mapping, whose pages read as zero until written).
        unsafe { std::slice::from_raw_parts(self.ptr.as_ptr(), self.len) }
    }

    pub(crate) fn as_mut_slice(&mut self) -> &mut [u8] {
        // SAFETY: ptr points to len initialised bytes owned exclusively by self.
        unsafe { std::slice::from_raw_parts_mut(self.ptr.as_ptr(), self.len) }
    }

    /// Sets `range` (inside the buffer) to `value`. Zeroing whole pages of a
    /// mapping gives them back to the kernel instead of writing them: they
    /// read as zeros again, and a `cudaMemset(p, 0, n)` of a fresh
    /// allocation commits no memory.
    pub(crate) fn fill(&mut self, range: std::ops::Range<usize>, value: u8) {
        // Discarded pages of a shared file keep their bytes: written there.
        if value == 0 && range.len() >= DISCARD_MIN && self.shared.is_none() {
            if let Some(map) = &self.map {
                let page = rustix::param::page_size();
                let start = range.start.next_multiple_of(page);
                let end = range.end / page * page;
                // SAFETY: `&mut self` guarantees no reference into the
                // mapping is alive; `start..end` is whole pages inside it
                // (page-aligned, as the mapping is), which afterwards read
                // as zeros: the contents the caller asks for.
                let discarded = start < end
                    && unsafe {
                        map.unchecked_advise_range(UncheckedAdvice::DontNeed, start, end - start)
                    }
                    .is_ok();
                if discarded {
                    let bytes = self.as_mut_slice();
                    bytes[range.start..start].fill(0);
                    bytes[end..range.end].fill(0);
                    return;
                }
            }
        }
        self.as_mut_slice()[range].fill(value);
    }
}

/// Zero fills shorter than this are written (a system call costs more).
const DISCARD_MIN: usize = 1 << 20;

impl Drop for Buffer {
    fn drop(&mut self) {
        if self.map.is_some() {
            // Unmapped when `map` drops.
            return;
        }
        // SAFETY: allocated in `zeroed` with exactly this layout.
        unsafe {
            alloc::dealloc(
                self.ptr.as_ptr(),
                Layout::from_size_align_unchecked(self.len, ALIGN),
            )
        }
    }
}

impl std::fmt::Debug for Buffer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let how = if self.is_mapped() { "mapped" } else { "heap" };
        write!(f, "Buffer({} bytes, {how})", self.len)
    }
}
