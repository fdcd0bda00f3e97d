//! Shared-memory primitives of the `soft` provider: named files in a tmpfs
//! directory mapped `MAP_SHARED`, typed views of all-atomic layouts inside
//! them, byte copies, owner liveness through `flock`, and futex waits.
//!
//! This is the only module of the verbs layer with unsafe code.

use std::fs::{File, OpenOptions};
use std::io;
use std::os::fd::AsRawFd;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::ptr::NonNull;
use std::sync::atomic::AtomicU32;
use std::time::Duration;

use crate::verbs::{Result, VerbsError};

/// Prefix of every file the provider creates.
pub(crate) const FILE_PREFIX: &str = "rcud-verbs-";

/// Marker for `#[repr(C)]` types made only of atomic integers (or arrays of
/// them), so that any bit pattern is valid and a shared reference may be
/// mutated concurrently by another process.
///
/// # Safety
/// The implementor must be `#[repr(C)]`, contain only `Atomic*` integer fields
/// (or arrays of them) and have no `Drop`.
pub(crate) unsafe trait SharedLayout: Sync {}

fn io_err(what: impl Into<String>, source: io::Error) -> VerbsError {
    VerbsError::Io {
        what: what.into(),
        source,
    }
}

/// The directory for shared-memory files: `$RCUD_VERBS_SHM_DIR`, else
/// `/dev/shm`, else the temporary directory.
pub(crate) fn shm_dir() -> PathBuf {
    if let Some(d) = std::env::var_os("RCUD_VERBS_SHM_DIR") {
        return PathBuf::from(d);
    }
    let dev_shm = Path::new("/dev/shm");
    if dev_shm.is_dir() {
        dev_shm.to_path_buf()
    } else {
        std::env::temp_dir()
    }
}

/// A file mapped shared into this process.
#[derive(Debug)]
pub(crate) struct Shm {
    ptr: NonNull<u8>,
    len: usize,
    file: File,
    path: PathBuf,
    unlink: bool,
}

// SAFETY: `Shm` owns its mapping; the memory is only accessed through atomics
// (`SharedLayout`) or raw byte copies, which are valid from any thread.
unsafe impl Send for Shm {}
// SAFETY: as above; no `&mut` to the mapped memory is ever handed out.
unsafe impl Sync for Shm {}

impl Shm {
    /// Creates `path` (which must not exist) of `len` zeroed bytes, reserves its
    /// blocks (so a full tmpfs fails here and not with SIGBUS later), maps it,
    /// and unlinks it when dropped.
    pub(crate) fn create(path: PathBuf, len: usize) -> Result<Shm> {
        if len == 0 {
            return Err(VerbsError::InvalidArgument(
                "shared memory of zero bytes".into(),
            ));
        }
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create_new(true)
            .mode(0o600)
            .custom_flags(libc::O_CLOEXEC)
            .open(&path)
            .map_err(|e| io_err(format!("creating {}", path.display()), e))?;
        let shm = Shm::finish_create(file, &path, len);
        if shm.is_err() {
            let _ = std::fs::remove_file(&path);
        }
        shm
    }

    fn finish_create(file: File, path: &Path, len: usize) -> Result<Shm> {
        let off_len = libc::off_t::try_from(len)
            .map_err(|_| VerbsError::InvalidArgument(format!("{len} bytes is too large")))?;
        // SAFETY: plain syscall on an fd we own.
        let rc = unsafe { libc::posix_fallocate(file.as_raw_fd(), 0, off_len) };
        if rc != 0 {
            return Err(io_err(
                format!(
                    "reserving {len} bytes of shared memory in {}",
                    path.display()
                ),
                io::Error::from_raw_os_error(rc),
            ));
        }
        let ptr = map(&file, len).map_err(|e| io_err(format!("mapping {}", path.display()), e))?;
        Ok(Shm {
            ptr,
            len,
            file,
            path: path.to_path_buf(),
            unlink: true,
        })
    }

    /// Opens and maps an existing file whole; fails if shorter than `min_len`.
    pub(crate) fn open(path: &Path, min_len: usize) -> Result<Shm> {
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .custom_flags(libc::O_CLOEXEC)
            .open(path)
            .map_err(|e| io_err(format!("opening {}", path.display()), e))?;
        let len = file
            .metadata()
            .map_err(|e| io_err(format!("inspecting {}", path.display()), e))?
            .len();
        let len = usize::try_from(len).unwrap_or(usize::MAX);
        if len < min_len.max(1) {
            return Err(VerbsError::BadEndpoint(format!(
                "{} has {len} bytes, expected at least {min_len}",
                path.display()
            )));
        }
        let ptr = map(&file, len).map_err(|e| io_err(format!("mapping {}", path.display()), e))?;
        Ok(Shm {
            ptr,
            len,
            file,
            path: path.to_path_buf(),
            unlink: false,
        })
    }

    /// Length of the mapping.
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// The file's path.
    pub(crate) fn path(&self) -> &Path {
        &self.path
    }

    /// Start of the mapping.
    pub(crate) fn as_ptr(&self) -> *mut u8 {
        self.ptr.as_ptr()
    }

    /// Takes the exclusive `flock` that marks this process as the owner; it is
    /// released by the kernel when the process exits, however it exits.
    pub(crate) fn lock_owner(&self) -> Result<()> {
        // SAFETY: plain syscall on an fd we own.
        let rc = unsafe { libc::flock(self.file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) };
        if rc != 0 {
            return Err(io_err(
                format!("locking {}", self.path.display()),
                io::Error::last_os_error(),
            ));
        }
        Ok(())
    }

    /// Whether the owner's lock is gone (its process exited or closed it).
    pub(crate) fn owner_gone(&self) -> bool {
        let fd = self.file.as_raw_fd();
        // SAFETY: plain syscall on an fd we own (its own open file description,
        // so it conflicts with the owner's lock even inside one process).
        let rc = unsafe { libc::flock(fd, libc::LOCK_SH | libc::LOCK_NB) };
        if rc == 0 {
            // SAFETY: as above.
            unsafe { libc::flock(fd, libc::LOCK_UN) };
            true
        } else {
            false
        }
    }

    /// A typed view of the layout at `offset`, or `None` if it does not fit or
    /// is misaligned.
    pub(crate) fn at<T: SharedLayout>(&self, offset: usize) -> Option<&T> {
        let end = offset.checked_add(std::mem::size_of::<T>())?;
        if end > self.len {
            return None;
        }
        let p = self.ptr.as_ptr().wrapping_add(offset);
        if !p.cast::<T>().is_aligned() {
            return None;
        }
        // SAFETY: `p..p + size_of::<T>()` lies inside our live mapping
        // (checked above), is aligned, and `T: SharedLayout` is made of atomics
        // only, so every bit pattern is valid and concurrent writes by other
        // processes through their own mappings are atomic accesses. The
        // reference cannot outlive `self`, which keeps the mapping alive.
        Some(unsafe { &*p.cast::<T>() })
    }

    /// Copies `src` to `offset`; `false` (nothing copied) if out of bounds.
    pub(crate) fn write_bytes(&self, offset: usize, src: &[u8]) -> bool {
        match offset.checked_add(src.len()) {
            Some(end) if end <= self.len => {}
            _ => return false,
        }
        // SAFETY: the destination range lies inside our live mapping (checked
        // above) and `src` is a distinct Rust slice; the mapped memory is never
        // referenced as a Rust slice, so no reference is aliased. Concurrent
        // writes by a peer to the same bytes only make their value unspecified,
        // as with DMA.
        unsafe {
            std::ptr::copy_nonoverlapping(src.as_ptr(), self.ptr.as_ptr().add(offset), src.len())
        };
        true
    }

    /// Copies bytes at `offset` into `dst`; `false` (nothing copied) if out of
    /// bounds.
    pub(crate) fn read_bytes(&self, offset: usize, dst: &mut [u8]) -> bool {
        match offset.checked_add(dst.len()) {
            Some(end) if end <= self.len => {}
            _ => return false,
        }
        // SAFETY: the source range lies inside our live mapping (checked
        // above); `dst` is an exclusive Rust slice that cannot overlap a
        // mapping we never expose as a slice.
        unsafe {
            std::ptr::copy_nonoverlapping(
                self.ptr.as_ptr().add(offset),
                dst.as_mut_ptr(),
                dst.len(),
            )
        };
        true
    }

    /// Copies `len` bytes from `src` at `src_off` to `dst` at `dst_off`;
    /// `false` (nothing copied) if either range is out of bounds.
    pub(crate) fn copy(src: &Shm, src_off: usize, dst: &Shm, dst_off: usize, len: usize) -> bool {
        let in_bounds = |off: usize, total: usize| off.checked_add(len).is_some_and(|e| e <= total);
        if !in_bounds(src_off, src.len) || !in_bounds(dst_off, dst.len) {
            return false;
        }
        if len == 0 {
            return true;
        }
        let s = src.ptr.as_ptr().wrapping_add(src_off);
        let d = dst.ptr.as_ptr().wrapping_add(dst_off);
        // SAFETY: both ranges lie inside live mappings (checked above). `copy`
        // (memmove) is correct when both ranges are in one mapping; when two
        // mappings of one file overlap physically the result is unspecified
        // bytes, as for overlapping DMA, but no memory outside the ranges is
        // touched.
        unsafe { std::ptr::copy(s, d, len) };
        true
    }
}

/// Memory of this process registered in place by its owner. Peers cannot
/// map it, so it only serves as the local source of sends and RDMA writes.
#[derive(Debug)]
pub(crate) struct UserMem {
    ptr: NonNull<u8>,
    len: usize,
}

// SAFETY: `UserMem` only copies bytes out of (or into) a range its creator
// promised stays valid; raw byte copies are valid from any thread.
unsafe impl Send for UserMem {}
// SAFETY: as above; no reference into the range is ever handed out.
unsafe impl Sync for UserMem {}

impl UserMem {
    /// Wraps `ptr..ptr + len`; `None` for a null pointer or an empty range.
    ///
    /// # Safety
    /// The range must stay valid for reads and writes for as long as the
    /// returned value lives.
    pub(crate) unsafe fn new(ptr: *mut u8, len: usize) -> Option<UserMem> {
        let ptr = NonNull::new(ptr)?;
        (len > 0 && (ptr.as_ptr() as usize).checked_add(len).is_some())
            .then_some(UserMem { ptr, len })
    }

    pub(crate) fn len(&self) -> usize {
        self.len
    }

    pub(crate) fn as_ptr(&self) -> *mut u8 {
        self.ptr.as_ptr()
    }

    fn in_bounds(&self, offset: usize, len: usize) -> bool {
        offset.checked_add(len).is_some_and(|e| e <= self.len)
    }

    /// Copies `src` to `offset`; `false` (nothing copied) if out of bounds.
    pub(crate) fn write_bytes(&self, offset: usize, src: &[u8]) -> bool {
        if !self.in_bounds(offset, src.len()) {
            return false;
        }
        // SAFETY: the destination lies inside the registered range, valid for
        // writes by `new`'s contract; `src` is a Rust slice, and the range is
        // never exposed as one, so nothing is aliased.
        unsafe {
            std::ptr::copy_nonoverlapping(src.as_ptr(), self.ptr.as_ptr().add(offset), src.len())
        };
        true
    }

    /// Copies bytes at `offset` into `dst`; `false` if out of bounds.
    pub(crate) fn read_bytes(&self, offset: usize, dst: &mut [u8]) -> bool {
        if !self.in_bounds(offset, dst.len()) {
            return false;
        }
        // SAFETY: the source lies inside the registered range, valid for reads
        // by `new`'s contract; `dst` is an exclusive slice of other memory.
        unsafe {
            std::ptr::copy_nonoverlapping(
                self.ptr.as_ptr().add(offset),
                dst.as_mut_ptr(),
                dst.len(),
            )
        };
        true
    }

    /// Copies `len` bytes at `offset` into `dst` at `dst_off`; `false`
    /// (nothing copied) if either range is out of bounds.
    pub(crate) fn copy_to(&self, offset: usize, dst: &Shm, dst_off: usize, len: usize) -> bool {
        let fits = dst_off.checked_add(len).is_some_and(|e| e <= dst.len);
        if !self.in_bounds(offset, len) || !fits {
            return false;
        }
        // SAFETY: the source lies inside the registered range (valid for
        // reads by `new`'s contract) and the destination inside a live
        // mapping, both checked above; a process-private range cannot overlap
        // a shared mapping.
        unsafe {
            std::ptr::copy_nonoverlapping(
                self.ptr.as_ptr().add(offset),
                dst.ptr.as_ptr().add(dst_off),
                len,
            )
        };
        true
    }
}

impl Drop for Shm {
    fn drop(&mut self) {
        // SAFETY: we mapped exactly `ptr..ptr + len` and every view borrowed
        // from `self` has ended.
        unsafe { libc::munmap(self.ptr.as_ptr().cast(), self.len) };
        if self.unlink {
            let _ = std::fs::remove_file(&self.path);
        }
    }
}

fn map(file: &File, len: usize) -> io::Result<NonNull<u8>> {
    // SAFETY: a fresh shared mapping of a file we hold open; the kernel picks
    // the address, so no existing memory is affected.
    let p = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            len,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_SHARED,
            file.as_raw_fd(),
            0,
        )
    };
    if p == libc::MAP_FAILED {
        return Err(io::Error::last_os_error());
    }
    NonNull::new(p.cast()).ok_or_else(|| io::Error::other("mmap returned null"))
}

/// Sleeps while `word` holds `expected`, at most `timeout` (spurious wake-ups
/// happen; callers re-check). Works across processes on shared mappings.
pub(crate) fn futex_wait(word: &AtomicU32, expected: u32, timeout: Duration) {
    let ts = libc::timespec {
        tv_sec: libc::time_t::try_from(timeout.as_secs()).unwrap_or(libc::time_t::MAX),
        // Below 10^9: fits every `c_long`.
        tv_nsec: timeout.subsec_nanos() as libc::c_long,
    };
    // SAFETY: `word` is a valid, aligned 32-bit atomic for the duration of the
    // call; FUTEX_WAIT only reads it and `ts` outlives the call.
    unsafe {
        libc::syscall(
            libc::SYS_futex,
            word.as_ptr(),
            libc::FUTEX_WAIT,
            expected,
            &ts as *const libc::timespec,
            std::ptr::null::<u32>(),
            0u32,
        )
    };
}

/// Wakes every waiter on `word`, in any process.
pub(crate) fn futex_wake(word: &AtomicU32) {
    // SAFETY: `word` is a valid, aligned 32-bit atomic; FUTEX_WAKE does not
    // access memory beyond hashing its address.
    unsafe {
        libc::syscall(
            libc::SYS_futex,
            word.as_ptr(),
            libc::FUTEX_WAKE,
            i32::MAX,
            std::ptr::null::<libc::timespec>(),
            std::ptr::null::<u32>(),
            0u32,
        )
    };
}

/// Whether process `pid` no longer exists.
fn process_gone(pid: i32) -> bool {
    // SAFETY: signal 0 only checks for existence and permission.
    let rc = unsafe { libc::kill(pid, 0) };
    rc != 0 && io::Error::last_os_error().raw_os_error() == Some(libc::ESRCH)
}

/// Removes files left in `dir` by processes that no longer exist (a process
/// killed with SIGKILL cannot unlink its own).
pub(crate) fn sweep_stale(dir: &Path) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(rest) = name.to_str().and_then(|n| n.strip_prefix(FILE_PREFIX)) else {
            continue;
        };
        let Some(pid) = rest.split('-').next().and_then(|p| p.parse::<i32>().ok()) else {
            continue;
        };
        if pid > 0 && process_gone(pid) {
            let _ = std::fs::remove_file(entry.path());
        }
    }
}
