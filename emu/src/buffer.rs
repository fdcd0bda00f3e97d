//! Zero-initialised host buffers that back device allocations.
//!
//! `vec![0; n]` aborts the process when the host is out of memory; a device
//! allocation must fail with `cudaErrorMemoryAllocation` instead. Zeroed
//! allocation also lets the kernel hand out lazily-zeroed pages, so a large
//! `cudaMalloc` costs nothing until it is touched.

use std::alloc::{self, Layout};
use std::ptr::NonNull;

/// Alignment of every device allocation, as `cudaMalloc` guarantees.
pub(crate) const ALIGN: usize = 256;

/// An owned, zeroed, 256-byte-aligned byte buffer.
pub(crate) struct Buffer {
    ptr: NonNull<u8>,
    len: usize,
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
        let layout = Layout::from_size_align(len, ALIGN).ok()?;
        // SAFETY: the layout has a non-zero size.
        let ptr = unsafe { alloc::alloc_zeroed(layout) };
        NonNull::new(ptr).map(|ptr| Self { ptr, len })
    }

    pub(crate) fn as_slice(&self) -> &[u8] {
        // SAFETY: ptr points to len initialised bytes owned by self.
        unsafe { std::slice::from_raw_parts(self.ptr.as_ptr(), self.len) }
    }

    pub(crate) fn as_mut_slice(&mut self) -> &mut [u8] {
        // SAFETY: ptr points to len initialised bytes owned exclusively by self.
        unsafe { std::slice::from_raw_parts_mut(self.ptr.as_ptr(), self.len) }
    }
}

impl Drop for Buffer {
    fn drop(&mut self) {
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
        write!(f, "Buffer({} bytes)", self.len)
    }
}
