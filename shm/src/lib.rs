//! Words of memory shared by the processes of one server.
//!
//! The listener creates a table ([`SharedWords::create`], a memfd) and hands
//! its descriptor to every agent process, which maps the same memory
//! ([`SharedWords::open`]). Every access goes through atomics; a process
//! that waits for a word to change sleeps on a futex ([`SharedWords::wait`])
//! and is woken by the writer ([`SharedWords::wake`]). This crate is the only
//! place where that memory is touched through raw pointers.

pub mod fdpass;

use std::io;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::time::Duration;

use memmap2::MmapMut;

/// Largest table: 128 MiB of words.
const MAX_WORDS: u64 = 16 << 20;

/// A table of 64-bit words in shared memory.
#[derive(Debug)]
pub struct SharedWords {
    map: MmapMut,
    fd: OwnedFd,
    words: u64,
}

impl SharedWords {
    /// A new table of `words` zeroed words; `name` shows in
    /// `/proc/PID/fd` for whoever debugs the server.
    pub fn create(name: &std::ffi::CStr, words: u64) -> io::Result<Self> {
        let fd = nix::sys::memfd::memfd_create(name, nix::sys::memfd::MFdFlags::MFD_CLOEXEC)
            .map_err(io::Error::from)?;
        let file = std::fs::File::from(fd);
        file.set_len(Self::bytes(words)?)?;
        Self::map(OwnedFd::from(file), words)
    }

    /// The table behind `fd`, made by [`SharedWords::create`] with the same
    /// size in another process.
    pub fn open(fd: OwnedFd, words: u64) -> io::Result<Self> {
        let file = std::fs::File::from(fd);
        if file.metadata()?.len() != Self::bytes(words)? {
            return Err(io::Error::other(
                "the shared table's size is not what its user expects",
            ));
        }
        Self::map(OwnedFd::from(file), words)
    }

    fn bytes(words: u64) -> io::Result<u64> {
        if words == 0 || words > MAX_WORDS {
            return Err(io::Error::other("shared table size out of range"));
        }
        Ok(words * 8)
    }

    fn map(fd: OwnedFd, words: u64) -> io::Result<Self> {
        // SAFETY: the file is a memfd of exactly the mapped size, shared only
        // with the processes of this server, which access it through atomics
        // alone; no process truncates it.
        let map = unsafe { MmapMut::map_mut(&std::fs::File::from(fd.try_clone()?))? };
        Ok(Self { map, fd, words })
    }

    /// The descriptor to hand to other processes.
    pub fn fd(&self) -> BorrowedFd<'_> {
        self.fd.as_fd()
    }

    /// Number of words.
    pub fn len(&self) -> u64 {
        self.words
    }

    /// Whether the table has no words (never: tables have at least one).
    pub fn is_empty(&self) -> bool {
        self.words == 0
    }

    /// Word `index`.
    ///
    /// # Panics
    /// When `index` is out of range: indices are the caller's layout, not
    /// input.
    pub fn word(&self, index: u64) -> &AtomicU64 {
        assert!(index < self.words, "shared word {index} out of range");
        let offset = (index * 8) as usize;
        // SAFETY: in bounds (checked above), 8-byte aligned (the mapping is
        // page-aligned and offsets are multiples of 8), and the memory lives
        // as long as `self`; every process accesses it through atomics only.
        unsafe { &*(self.map.as_ptr().add(offset) as *const AtomicU64) }
    }

    /// The low half of word `index`, the futex of [`SharedWords::wait`].
    fn futex(&self, index: u64) -> &AtomicU32 {
        let word = self.word(index);
        // SAFETY: the low 4 bytes of an aligned, live 8-byte atomic word (the
        // target is little-endian x86-64/aarch64), accessed only atomically.
        unsafe { &*(word as *const AtomicU64 as *const AtomicU32) }
    }

    /// Sleeps while the low 32 bits of word `index` equal `seen`, at most
    /// `timeout` (spurious wake-ups happen: callers re-check their
    /// condition).
    pub fn wait(&self, index: u64, seen: u32, timeout: Duration) {
        let futex = self.futex(index);
        if futex.load(Ordering::Acquire) != seen {
            return;
        }
        let ts = libc::timespec {
            tv_sec: timeout.as_secs() as libc::time_t,
            tv_nsec: timeout.subsec_nanos() as libc::c_long,
        };
        // SAFETY: a FUTEX_WAIT on a live, aligned 32-bit word of shared
        // memory with a valid timeout; the kernel only reads both.
        unsafe {
            libc::syscall(
                libc::SYS_futex,
                futex.as_ptr(),
                libc::FUTEX_WAIT,
                seen,
                &ts as *const libc::timespec,
            );
        }
    }

    /// Adds one to the low 32 bits of word `index` and wakes every process
    /// waiting on it.
    pub fn wake(&self, index: u64) {
        let futex = self.futex(index);
        futex.fetch_add(1, Ordering::AcqRel);
        // SAFETY: a FUTEX_WAKE on a live, aligned 32-bit word of shared
        // memory; the kernel only reads it.
        unsafe {
            libc::syscall(libc::SYS_futex, futex.as_ptr(), libc::FUTEX_WAKE, i32::MAX);
        }
    }

    /// The low 32 bits of word `index`, as [`SharedWords::wait`] compares
    /// them.
    pub fn sequence(&self, index: u64) -> u32 {
        self.futex(index).load(Ordering::Acquire)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;
    use std::time::Instant;

    #[test]
    fn a_second_mapping_sees_the_first_ones_writes() {
        let a = SharedWords::create(c"test", 4).unwrap();
        let b = SharedWords::open(a.fd().try_clone_to_owned().unwrap(), 4).unwrap();
        a.word(3).store(42, Ordering::Release);
        assert_eq!(b.word(3).load(Ordering::Acquire), 42);
        assert!(SharedWords::open(a.fd().try_clone_to_owned().unwrap(), 5).is_err());
    }

    #[test]
    fn a_waiter_wakes_when_the_word_changes() {
        let t = Arc::new(SharedWords::create(c"test", 1).unwrap());
        let seen = t.sequence(0);
        let waker = {
            let t = t.clone();
            std::thread::spawn(move || {
                std::thread::sleep(Duration::from_millis(20));
                t.wake(0);
            })
        };
        let start = Instant::now();
        while t.sequence(0) == seen {
            t.wait(0, seen, Duration::from_secs(5));
        }
        assert!(start.elapsed() < Duration::from_secs(4));
        waker.join().unwrap();
    }
}
