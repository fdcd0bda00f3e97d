//! The host side of mirrored memory: the pages mapped at device addresses,
//! their coherence states, and the protections that make each host touch
//! visible to the fault handler.

use std::ffi::c_void;
use std::sync::OnceLock;

use rcud_proto::CudaError;

/// Where the current contents of a page are.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum PageState {
    /// Host and device hold the same bytes: mapped read-only, so that the
    /// first host write faults and marks the page dirty.
    Shared,
    /// The host wrote it since the device last had it: mapped read-write,
    /// and sent before the next device work that may read it.
    HostDirty,
    /// Device work may have changed it since the host had it: mapped
    /// without access, so that the first host touch faults and fetches it.
    Device,
}

impl PageState {
    fn protection(self) -> libc::c_int {
        match self {
            PageState::Shared => libc::PROT_READ,
            PageState::HostDirty => libc::PROT_READ | libc::PROT_WRITE,
            PageState::Device => libc::PROT_NONE,
        }
    }
}

/// The host's page size.
pub(super) fn page_size() -> usize {
    static PAGE: OnceLock<usize> = OnceLock::new();
    *PAGE.get_or_init(|| {
        // SAFETY: sysconf has no preconditions.
        let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
        usize::try_from(page).unwrap_or(4096).max(1)
    })
}

/// Maps `len` bytes of zeroed, read-write memory at exactly `start`, or
/// fails if anything of the process is mapped there already.
pub(super) fn map_at(start: usize, len: usize) -> Result<(), CudaError> {
    // SAFETY: a new private anonymous mapping; MAP_FIXED_NOREPLACE never
    // replaces an existing mapping of the process.
    let mapped = unsafe {
        libc::mmap(
            start as *mut c_void,
            len,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_FIXED_NOREPLACE,
            -1,
            0,
        )
    };
    if mapped as usize == start {
        return Ok(());
    }
    if mapped != libc::MAP_FAILED {
        // An old kernel took the address as a hint only.
        // SAFETY: the mapping was just made, and nothing uses it.
        unsafe { libc::munmap(mapped, len) };
    }
    Err(CudaError::MEMORY_ALLOCATION)
}

/// Unmaps what [`map_at`] mapped.
pub(super) fn unmap(start: usize, len: usize) {
    // SAFETY: the caller owns the mapping and removed it from every table,
    // so nothing reads or writes it any more.
    unsafe { libc::munmap(start as *mut c_void, len) };
}

/// Gives `[start, start + len)` (whole pages of one mapping) the
/// protection of `state`.
pub(super) fn protect(start: usize, len: usize, state: PageState) {
    // SAFETY: the range lies in a mapping made by `map_at` and still owned
    // by the managed table; changing its protection frees nothing.
    let rc = unsafe { libc::mprotect(start as *mut c_void, len, state.protection()) };
    if rc != 0 {
        tracing::warn!(
            "rcud: mprotect({start:#x}, {len}) failed: {}",
            std::io::Error::last_os_error()
        );
    }
}

/// Replaces `[start, start + len)` (whole pages of one mapping) at once
/// with fresh read-only pages whose bytes `fill` writes: another thread
/// never sees a page half filled.
pub(super) fn install_shared(
    start: usize,
    len: usize,
    fill: impl FnOnce(&mut [u8]) -> Result<(), CudaError>,
) -> Result<(), CudaError> {
    // SAFETY: a new private anonymous mapping somewhere free.
    let fresh = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            len,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
            -1,
            0,
        )
    };
    if fresh == libc::MAP_FAILED {
        return Err(CudaError::MEMORY_ALLOCATION);
    }
    // SAFETY: `fresh` is `len` bytes of read-write memory only this
    // function knows.
    let filled = fill(unsafe { std::slice::from_raw_parts_mut(fresh as *mut u8, len) });
    // SAFETY: `fresh` is the mapping made above; mremap moves it over the
    // target pages, which belong to a mapping of the managed table (the
    // table's lock is held by the caller), replacing them in one step.
    let moved = filled.and_then(|()| unsafe {
        libc::mprotect(fresh, len, PageState::Shared.protection());
        let to = libc::mremap(
            fresh,
            len,
            len,
            libc::MREMAP_MAYMOVE | libc::MREMAP_FIXED,
            start as *mut c_void,
        );
        if to as usize == start {
            Ok(())
        } else {
            Err(CudaError::MEMORY_ALLOCATION)
        }
    });
    if moved.is_err() {
        // SAFETY: the fresh mapping was not moved, and nothing else uses it.
        unsafe { libc::munmap(fresh, len) };
    }
    moved
}
