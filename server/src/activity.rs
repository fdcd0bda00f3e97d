//! What `rcud smi` and NVML see of a server: which clients hold which GPU,
//! how much device memory each holds, and how busy each GPU has been.
//!
//! One table per server in shared memory (`rcud-shm`), made by the
//! listener and handed to every agent process (or shared by the agent
//! threads), so that the agent answering `DeviceStatus` sees every client.
//! Layout, in 64-bit words: per GPU ([`GPUS`]) [`GPU_WORDS`] words of busy
//! time, then per client slot ([`SLOTS`]) [`SLOT_WORDS`] words.

use std::io;
use std::os::fd::{BorrowedFd, OwnedFd};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::OnceLock;
use std::time::Duration;

use rcud_shm::SharedWords;

/// GPUs whose busy time is counted (more are listed without utilisation).
pub const GPUS: u64 = 64;
/// Clients listed at once; more are served but not listed.
pub const SLOTS: u64 = 1024;
const GPU_WORDS: u64 = 8;
const SLOT_WORDS: u64 = 32;
/// Bytes of a client's description and of its tenant's name kept.
const CLIENT_BYTES: usize = 192;
const TENANT_BYTES: usize = 32;

// GPU words.
const BUSY_TOTAL: u64 = 0;
const MEMORY_TOTAL: u64 = 1;
const WINDOW_START: u64 = 2;
const BUSY_AT_START: u64 = 3;
const MEMORY_AT_START: u64 = 4;
/// The last complete window's percents: `LAST_SET | gpu << 32 | memory`.
const LAST: u64 = 5;
const LAST_SET: u64 = 1 << 63;

// Slot words: state (0 free, 1 taken, 2 + gpu attached), memory, pid,
// then the client's description and tenant, NUL-padded, and the pid of the
// agent's process (a killed agent process leaves its slot taken: the
// slot is freed when that process is found gone).
const STATE: u64 = 0;
const MEMORY: u64 = 1;
const PID: u64 = 2;
const CLIENT: u64 = 3;
const TENANT: u64 = CLIENT + (CLIENT_BYTES / 8) as u64;
const AGENT: u64 = TENANT + (TENANT_BYTES / 8) as u64;
const FREE: u64 = 0;
const TAKEN: u64 = 1;
const ATTACHED: u64 = 2;

/// Utilisation is the busy share of the last complete window of this
/// length (NVML samples over 1/6 s to 1 s), or of the current one while
/// none is complete.
const WINDOW: Duration = Duration::from_secs(1);

/// The shared table.
#[derive(Debug)]
pub struct Activity {
    words: SharedWords,
}

impl Activity {
    const LEN: u64 = GPUS * GPU_WORDS + SLOTS * SLOT_WORDS;

    fn create() -> io::Result<Self> {
        Ok(Self {
            words: SharedWords::create(c"rcud-activity", Self::LEN)?,
        })
    }

    /// The descriptor to hand to agent processes.
    pub fn fd(&self) -> BorrowedFd<'_> {
        self.words.fd()
    }

    fn gpu_word(&self, gpu: u32, word: u64) -> Option<&AtomicU64> {
        (u64::from(gpu) < GPUS).then(|| self.words.word(u64::from(gpu) * GPU_WORDS + word))
    }

    fn slot_word(&self, slot: u64, word: u64) -> &AtomicU64 {
        self.words.word(GPUS * GPU_WORDS + slot * SLOT_WORDS + word)
    }

    fn write_text(&self, slot: u64, first: u64, bytes: usize, text: &str) {
        let mut padded = vec![0u8; bytes];
        let kept = fit(text, bytes - 1);
        padded[..kept.len()].copy_from_slice(kept.as_bytes());
        for (i, chunk) in padded.chunks_exact(8).enumerate() {
            let word = u64::from_le_bytes(chunk.try_into().unwrap_or([0; 8]));
            self.slot_word(slot, first + i as u64)
                .store(word, Ordering::Relaxed);
        }
    }

    fn read_text(&self, slot: u64, first: u64, bytes: usize) -> String {
        let raw: Vec<u8> = (0..bytes as u64 / 8)
            .flat_map(|i| {
                self.slot_word(slot, first + i)
                    .load(Ordering::Relaxed)
                    .to_le_bytes()
            })
            .collect();
        let end = raw.iter().position(|&b| b == 0).unwrap_or(raw.len());
        String::from_utf8_lossy(&raw[..end]).into_owned()
    }

    /// Closes GPU `gpu`'s window if it is over; whoever wins the race
    /// closes it.
    fn roll(&self, gpu: u32, now: u64) {
        let word = |w| self.gpu_word(gpu, w);
        let (Some(start), Some(busy), Some(memory)) =
            (word(WINDOW_START), word(BUSY_TOTAL), word(MEMORY_TOTAL))
        else {
            return;
        };
        let (Some(busy_at), Some(memory_at), Some(last)) =
            (word(BUSY_AT_START), word(MEMORY_AT_START), word(LAST))
        else {
            return;
        };
        let began = start.load(Ordering::Acquire);
        let elapsed = now.saturating_sub(began);
        if began != 0 && elapsed < WINDOW.as_nanos() as u64 {
            return;
        }
        if start
            .compare_exchange(began, now, Ordering::AcqRel, Ordering::Acquire)
            .is_err()
        {
            return;
        }
        let (b, m) = (busy.load(Ordering::Acquire), memory.load(Ordering::Acquire));
        let (b0, m0) = (
            busy_at.swap(b, Ordering::AcqRel),
            memory_at.swap(m, Ordering::AcqRel),
        );
        if began == 0 {
            return;
        }
        // A window that ended long ago says nothing about now.
        let (gpu_pct, memory_pct) = if elapsed >= 2 * WINDOW.as_nanos() as u64 {
            (0, 0)
        } else {
            (percent(b - b0, elapsed), percent(m - m0, elapsed))
        };
        last.store(LAST_SET | gpu_pct << 32 | memory_pct, Ordering::Release);
    }
}

/// `part` of `whole` nanoseconds in whole percents, at most 100.
/// `text` in at most `bytes` bytes, cut at a character boundary. A long
/// client description (`/long/path/program (pid N)`) keeps its end, where
/// the program's name and pid are, behind a `...`; a long tenant name its
/// start.
fn fit(text: &str, bytes: usize) -> std::borrow::Cow<'_, str> {
    if text.len() <= bytes {
        return text.into();
    }
    if text.ends_with(')') && bytes > 3 {
        let mut start = text.len() - (bytes - 3);
        while !text.is_char_boundary(start) {
            start += 1;
        }
        return format!("...{}", &text[start..]).into();
    }
    let mut end = bytes;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    text[..end].into()
}

fn percent(part: u64, whole: u64) -> u64 {
    if whole == 0 {
        return 0;
    }
    ((part as f64 / whole as f64 * 100.0).round() as u64).min(100)
}

/// Nanoseconds since the epoch: a clock every process of the server
/// reads alike (a step of the system clock only skews one window).
fn now_ns() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64)
}

static TABLE: OnceLock<Option<Activity>> = OnceLock::new();

/// The server's table: made on first use in the listener, adopted from the
/// listener in an agent process ([`adopt`]). `None` when no shared memory
/// could be had; then nothing is listed.
pub fn table() -> Option<&'static Activity> {
    TABLE
        .get_or_init(|| match Activity::create() {
            Ok(t) => Some(t),
            Err(e) => {
                tracing::warn!("no table of clients for rcud smi and NVML: {e}");
                None
            }
        })
        .as_ref()
}

/// In an agent process: uses the listener's table behind `fd`.
pub fn adopt(fd: OwnedFd) -> io::Result<()> {
    let words = SharedWords::open(fd, Activity::LEN)?;
    TABLE
        .set(Some(Activity { words }))
        .map_err(|_| io::Error::other("the table of clients is set already"))
}

/// A client listed in the table until dropped.
#[derive(Debug)]
pub struct Registration {
    slot: Option<u64>,
}

/// Enters a client in the table; `client` is its self-description
/// ("program (pid N)").
pub fn register(client: &str, tenant: &str) -> Registration {
    let Some(t) = table() else {
        return Registration { slot: None };
    };
    let slot = (0..SLOTS).find(|&s| {
        t.slot_word(s, STATE)
            .compare_exchange(FREE, TAKEN, Ordering::AcqRel, Ordering::Relaxed)
            .is_ok()
    });
    if let Some(s) = slot {
        t.slot_word(s, MEMORY).store(0, Ordering::Relaxed);
        t.slot_word(s, PID)
            .store(u64::from(pid_of(client)), Ordering::Relaxed);
        t.write_text(s, CLIENT, CLIENT_BYTES, client);
        t.write_text(s, TENANT, TENANT_BYTES, tenant);
        t.slot_word(s, AGENT)
            .store(u64::from(std::process::id()), Ordering::Relaxed);
    } else {
        tracing::warn!(
            client,
            "the table of clients is full: rcud smi and NVML will not list this one"
        );
    }
    Registration { slot }
}

impl Registration {
    fn word(&self, word: u64) -> Option<&'static AtomicU64> {
        Some(table()?.slot_word(self.slot?, word))
    }

    /// Records that the client attached to `gpu`.
    pub fn attach(&self, gpu: u32) {
        if let Some(state) = self.word(STATE) {
            state.store(ATTACHED + u64::from(gpu), Ordering::Release);
        }
    }

    /// Records the device memory the client's context holds.
    pub fn set_memory(&self, bytes: u64) {
        if let Some(memory) = self.word(MEMORY) {
            memory.store(bytes, Ordering::Relaxed);
        }
    }

    /// Adds `busy` time spent on a request of this client to its GPU;
    /// `memory` if the request copied or set memory.
    pub fn record(&self, busy: Duration, memory: bool) {
        let (Some(t), Some(state)) = (table(), self.word(STATE)) else {
            return;
        };
        let Some(gpu) = state.load(Ordering::Acquire).checked_sub(ATTACHED) else {
            return;
        };
        let gpu = gpu as u32;
        t.roll(gpu, now_ns());
        let ns = busy.as_nanos() as u64;
        if let Some(w) = t.gpu_word(gpu, BUSY_TOTAL) {
            w.fetch_add(ns, Ordering::AcqRel);
        }
        if memory {
            if let Some(w) = t.gpu_word(gpu, MEMORY_TOTAL) {
                w.fetch_add(ns, Ordering::AcqRel);
            }
        }
    }
}

impl Drop for Registration {
    fn drop(&mut self) {
        if let Some(state) = self.word(STATE) {
            state.store(FREE, Ordering::Release);
        }
    }
}

/// The process id in a client's description, 0 if it names none.
fn pid_of(client: &str) -> u32 {
    client
        .rsplit_once("(pid ")
        .and_then(|(_, rest)| rest.strip_suffix(')'))
        .and_then(|pid| pid.parse().ok())
        .unwrap_or(0)
}

/// A client holding a GPU, as the table lists it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClientInfo {
    /// Its process id on its host (0 if unknown).
    pub pid: u32,
    /// Device memory its context holds.
    pub memory: u64,
    /// Its self-description.
    pub client: String,
    /// Its tenant; empty without tenants.
    pub tenant: String,
}

/// The clients attached to `gpu`, by slot.
pub fn clients_of(gpu: u32) -> Vec<ClientInfo> {
    let Some(t) = table() else {
        return Vec::new();
    };
    let state = ATTACHED + u64::from(gpu);
    (0..SLOTS)
        .filter(|&s| t.slot_word(s, STATE).load(Ordering::Acquire) == state)
        .filter(|&s| {
            let agent = t.slot_word(s, AGENT).load(Ordering::Relaxed);
            let alive = std::path::Path::new(&format!("/proc/{agent}")).exists();
            if !alive {
                let _ = t.slot_word(s, STATE).compare_exchange(
                    state,
                    FREE,
                    Ordering::AcqRel,
                    Ordering::Relaxed,
                );
            }
            alive
        })
        .map(|s| ClientInfo {
            pid: t.slot_word(s, PID).load(Ordering::Relaxed) as u32,
            memory: t.slot_word(s, MEMORY).load(Ordering::Relaxed),
            client: t.read_text(s, CLIENT, CLIENT_BYTES),
            tenant: t.read_text(s, TENANT, TENANT_BYTES),
        })
        .collect()
}

/// (GPU, memory) utilisation of `gpu` in percent: the share of the last
/// second during which the server ran requests of its clients (kernels,
/// synchronisations, copies), and of that, copies and memsets.
pub fn utilisation(gpu: u32) -> (u32, u32) {
    let Some(t) = table() else {
        return (0, 0);
    };
    let now = now_ns();
    t.roll(gpu, now);
    let (Some(last), Some(start)) = (t.gpu_word(gpu, LAST), t.gpu_word(gpu, WINDOW_START)) else {
        return (0, 0);
    };
    let last = last.load(Ordering::Acquire);
    if last & LAST_SET != 0 {
        return (((last >> 32) & 0xffff) as u32, (last & 0xffff) as u32);
    }
    // No complete window yet: the share of the current one.
    let elapsed = now.saturating_sub(start.load(Ordering::Acquire));
    let word = |w| t.gpu_word(gpu, w).map_or(0, |a| a.load(Ordering::Acquire));
    (
        percent(word(BUSY_TOTAL) - word(BUSY_AT_START), elapsed) as u32,
        percent(word(MEMORY_TOTAL) - word(MEMORY_AT_START), elapsed) as u32,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pid_comes_from_the_client_description() {
        assert_eq!(pid_of("/usr/bin/python3 (pid 4242)"), 4242);
        assert_eq!(pid_of("a tool"), 0);
    }

    #[test]
    fn clients_are_listed_by_gpu_until_they_leave() {
        let a = register("a (pid 1)", "t1");
        a.attach(61);
        a.set_memory(4096);
        let b = register("b (pid 2)", "t2");
        b.attach(62);
        let on = clients_of(61);
        assert_eq!(
            on,
            [ClientInfo {
                pid: 1,
                memory: 4096,
                client: "a (pid 1)".into(),
                tenant: "t1".into()
            }]
        );
        drop(a);
        assert!(clients_of(61).is_empty());
        assert_eq!(clients_of(62).len(), 1);
    }

    #[test]
    fn long_names_are_cut_at_a_character_boundary() {
        let name = "é".repeat(120);
        let r = register(&name, "");
        r.attach(60);
        let listed = &clients_of(60)[0].client;
        assert!(
            name.starts_with(listed.as_str()) && listed.len() == CLIENT_BYTES - 2,
            "{listed}"
        );
    }

    #[test]
    fn long_client_paths_keep_the_program_and_pid() {
        let name = format!("/{}/prögram (pid 77)", "deep/".repeat(60));
        let r = register(&name, "");
        r.attach(59);
        let listed = &clients_of(59)[0].client;
        assert!(
            listed.starts_with("...") && name.ends_with(&listed[3..]),
            "{listed}"
        );
        assert!(listed.len() < CLIENT_BYTES && listed.ends_with("prögram (pid 77)"));
        assert_eq!(clients_of(59)[0].pid, 77);
    }

    #[test]
    fn utilisation_is_the_busy_share_of_the_last_window() {
        let t = table().expect("shared memory");
        let gpu = 63;
        let w = WINDOW.as_nanos() as u64;
        let t0 = 1_000 * w;
        let add = |at: u64, busy: u64, memory: bool| {
            t.roll(gpu, at);
            t.gpu_word(gpu, BUSY_TOTAL)
                .unwrap()
                .fetch_add(busy, Ordering::AcqRel);
            if memory {
                t.gpu_word(gpu, MEMORY_TOTAL)
                    .unwrap()
                    .fetch_add(busy, Ordering::AcqRel);
            }
        };
        let last = || t.gpu_word(gpu, LAST).unwrap().load(Ordering::Acquire);
        add(t0, 0, false);
        add(t0 + w / 4, w / 4, false);
        add(t0 + w / 2, w / 4, true);
        t.roll(gpu, t0 + w);
        assert_eq!(last(), LAST_SET | 50 << 32 | 25);
        // Long idle: nothing.
        t.roll(gpu, t0 + 5 * w);
        assert_eq!(last(), LAST_SET);
    }
}
