//! Interprocess events (`cudaEventInterprocess`, `cudaIpcGetEventHandle`,
//! `cudaIpcOpenEventHandle`) between processes of one client host.
//!
//! An interprocess event is three words of shared memory in a file of the
//! host's shared-memory directory (`/dev/shm/rcud-event-<uid>-<random>`,
//! readable by its user only), mapped by every process that holds the
//! event: how many records were issued, the last one completed, and a
//! futex that completions wake. A record in any process takes the next
//! number and, when its device reaches it, stores it as completed; a wait
//! (`cudaStreamWaitEvent`, `cudaEventSynchronize`) waits until the records
//! issued before it completed. The handle names the file; the process that
//! created the event removes it when it destroys the event.

use std::collections::VecDeque;
use std::io;
use std::os::fd::OwnedFd;
use std::os::unix::fs::OpenOptionsExt;
use std::path::PathBuf;
use std::sync::atomic::Ordering;
use std::time::Duration;

use rcud_proto::CudaError;
use rcud_shm::SharedWords;

/// Bytes of `cudaIpcEventHandle_t`.
pub const EVENT_HANDLE_BYTES: usize = 64;
const MAGIC: [u8; 4] = *b"rEVT";
/// Words: records issued, last record completed, completion futex.
const RECORDED: u64 = 0;
const COMPLETED: u64 = 1;
const WAKE: u64 = 2;
const WORDS: u64 = 3;
/// Longest sleep between checks of a waited-for record.
const POLL: Duration = Duration::from_millis(50);

/// One process's view of an interprocess event.
#[derive(Debug)]
pub(super) struct IpcEvent {
    cell: SharedWords,
    id: [u8; 16],
    /// The process that created the file removes it.
    creator: bool,
    /// Numbers of this process's records whose completion is pending, in
    /// issue order (a device completes them in that order).
    pending: VecDeque<u64>,
}

fn directory() -> PathBuf {
    let shm = PathBuf::from("/dev/shm");
    if shm.is_dir() {
        shm
    } else {
        std::env::temp_dir()
    }
}

fn path_of(id: &[u8; 16]) -> PathBuf {
    let hex: String = id.iter().map(|b| format!("{b:02x}")).collect();
    directory().join(format!("rcud-event-{hex}"))
}

impl IpcEvent {
    /// A new event's shared words.
    pub(super) fn create() -> io::Result<Self> {
        let mut id = [0u8; 16];
        getrandom::fill(&mut id).map_err(|e| io::Error::other(format!("random source: {e}")))?;
        let file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(path_of(&id))?;
        file.set_len(WORDS * 8)?;
        Ok(Self {
            cell: SharedWords::open(OwnedFd::from(file), WORDS)?,
            id,
            creator: true,
            pending: VecDeque::new(),
        })
    }

    /// The event another process exported as `handle`.
    pub(super) fn open(handle: &[u8; EVENT_HANDLE_BYTES]) -> Result<Self, CudaError> {
        if handle[..4] != MAGIC {
            return Err(CudaError::INVALID_RESOURCE_HANDLE);
        }
        let mut id = [0u8; 16];
        id.copy_from_slice(&handle[8..24]);
        let file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open(path_of(&id))
            .map_err(|_| CudaError::INVALID_RESOURCE_HANDLE)?;
        let cell = SharedWords::open(OwnedFd::from(file), WORDS)
            .map_err(|_| CudaError::INVALID_RESOURCE_HANDLE)?;
        Ok(Self {
            cell,
            id,
            creator: false,
            pending: VecDeque::new(),
        })
    }

    /// The handle other processes open it by.
    pub(super) fn handle(&self) -> [u8; EVENT_HANDLE_BYTES] {
        let mut h = [0u8; EVENT_HANDLE_BYTES];
        h[..4].copy_from_slice(&MAGIC);
        h[8..24].copy_from_slice(&self.id);
        h
    }

    /// A record issued by this process: its number.
    pub(super) fn record(&mut self) -> u64 {
        let n = self.cell.word(RECORDED).fetch_add(1, Ordering::AcqRel) + 1;
        self.pending.push_back(n);
        n
    }

    /// This process's oldest pending record completed.
    pub(super) fn completed(&mut self) {
        if let Some(n) = self.pending.pop_front() {
            self.cell.word(COMPLETED).fetch_max(n, Ordering::AcqRel);
            self.cell.wake(WAKE);
        }
    }

    /// The records issued so far, by any process.
    pub(super) fn issued(&self) -> u64 {
        self.cell.word(RECORDED).load(Ordering::Acquire)
    }

    /// Whether every record up to `target` completed.
    pub(super) fn reached(&self, target: u64) -> bool {
        self.cell.word(COMPLETED).load(Ordering::Acquire) >= target
    }

    /// The shared words, for waiting without holding the event table.
    pub(super) fn waiter(&self) -> io::Result<SharedWords> {
        SharedWords::open(self.cell.fd().try_clone_to_owned()?, WORDS)
    }
}

/// Waits until the records up to `target` of the event behind `cell`
/// completed.
pub(super) fn wait_for(cell: &SharedWords, target: u64) {
    loop {
        let seen = cell.sequence(WAKE);
        if cell.word(COMPLETED).load(Ordering::Acquire) >= target {
            return;
        }
        cell.wait(WAKE, seen, POLL);
    }
}

impl Drop for IpcEvent {
    fn drop(&mut self) {
        if self.creator {
            let _ = std::fs::remove_file(path_of(&self.id));
        }
    }
}
