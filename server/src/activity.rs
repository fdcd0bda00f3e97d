//! What `rcud smi` and NVML see of a server: which clients hold which GPU,
//! how much device memory each holds, and how busy each GPU has been.
//!
//! One table per server process. Agent threads register here; with
//! process isolation every agent process has a table of its own, so a
//! client sees itself only (see docs/nvml.md).

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock, PoisonError};
use std::time::{Duration, Instant};

/// Utilisation is the busy share of the last complete window of this
/// length (NVML samples over 1/6 s to 1 s), or of the current one when
/// the last ended long ago.
const WINDOW: Duration = Duration::from_secs(1);

/// "No GPU attached" in [`ClientSlot::gpu`].
const NO_GPU: u64 = u64::MAX;

/// One connected client, updated by its agent without taking the lock.
#[derive(Debug)]
pub struct ClientSlot {
    /// The client's self-description from its hello ("program (pid N)").
    pub client: String,
    /// Its tenant; empty on a server without tenants.
    pub tenant: String,
    gpu: AtomicU64,
    memory: AtomicU64,
}

impl ClientSlot {
    /// The GPU the client attached to, if any.
    pub fn gpu(&self) -> Option<u32> {
        u32::try_from(self.gpu.load(Ordering::Relaxed)).ok()
    }

    /// Device memory its context holds, in bytes.
    pub fn memory(&self) -> u64 {
        self.memory.load(Ordering::Relaxed)
    }

    /// The process id in the client's description, 0 if it names none.
    pub fn pid(&self) -> u32 {
        self.client
            .rsplit_once("(pid ")
            .and_then(|(_, rest)| rest.strip_suffix(')'))
            .and_then(|pid| pid.parse().ok())
            .unwrap_or(0)
    }
}

/// A client's entry in the table; dropping it removes the entry.
#[derive(Debug)]
pub struct Registration {
    id: u64,
    slot: Arc<ClientSlot>,
}

impl Registration {
    /// Records that the client attached to `gpu`.
    pub fn attach(&self, gpu: u32) {
        self.slot.gpu.store(u64::from(gpu), Ordering::Relaxed);
    }

    /// Records the device memory the client's context holds.
    pub fn set_memory(&self, bytes: u64) {
        self.slot.memory.store(bytes, Ordering::Relaxed);
    }

    /// Adds `busy` time spent on a request of this client to its GPU;
    /// `memory` if the request copied or set memory.
    pub fn record(&self, busy: Duration, memory: bool) {
        if let Some(gpu) = self.slot.gpu() {
            table().busy(gpu).add(Instant::now(), busy, memory);
        }
    }
}

impl Drop for Registration {
    fn drop(&mut self) {
        lock(&table().clients).remove(&self.id);
    }
}

/// Busy time of one GPU in the current and the last window.
#[derive(Debug, Default)]
struct BusyWindow {
    start: Option<Instant>,
    busy: Duration,
    memory: Duration,
    /// Busy and memory shares (0..=1) of the last complete window.
    last: Option<(f64, f64)>,
}

impl BusyWindow {
    /// Closes the current window if it is over.
    fn roll(&mut self, now: Instant) {
        let start = *self.start.get_or_insert(now);
        let elapsed = now.saturating_duration_since(start);
        if elapsed >= WINDOW {
            let secs = elapsed.as_secs_f64();
            self.last = Some((
                (self.busy.as_secs_f64() / secs).min(1.0),
                (self.memory.as_secs_f64() / secs).min(1.0),
            ));
            // A window that ended long ago says nothing about now.
            if elapsed >= 2 * WINDOW {
                self.last = Some((0.0, 0.0));
            }
            self.start = Some(now);
            self.busy = Duration::ZERO;
            self.memory = Duration::ZERO;
        }
    }

    fn add(&mut self, now: Instant, busy: Duration, memory: bool) {
        self.roll(now);
        self.busy += busy;
        if memory {
            self.memory += busy;
        }
    }

    /// (GPU, memory) utilisation in percent.
    fn percent(&mut self, now: Instant) -> (u32, u32) {
        self.roll(now);
        let (busy, memory) = self.last.unwrap_or_else(|| {
            // Not a full window yet: the share of the time so far.
            let secs = self
                .start
                .map_or(0.0, |s| now.saturating_duration_since(s).as_secs_f64());
            if secs <= 0.0 {
                (0.0, 0.0)
            } else {
                (
                    (self.busy.as_secs_f64() / secs).min(1.0),
                    (self.memory.as_secs_f64() / secs).min(1.0),
                )
            }
        });
        // Whole percents, as NVML reports them.
        (
            (busy * 100.0).round() as u32,
            (memory * 100.0).round() as u32,
        )
    }
}

/// Per-GPU busy time, shared by the agents.
#[derive(Debug, Default)]
struct GpuBusy(Mutex<BusyWindow>);

impl GpuBusy {
    fn add(&self, now: Instant, busy: Duration, memory: bool) {
        lock(&self.0).add(now, busy, memory);
    }
}

#[derive(Debug, Default)]
struct Table {
    next: AtomicU64,
    clients: Mutex<BTreeMap<u64, Arc<ClientSlot>>>,
    gpus: Mutex<BTreeMap<u32, Arc<GpuBusy>>>,
}

impl Table {
    fn busy(&self, gpu: u32) -> Arc<GpuBusy> {
        lock(&self.gpus).entry(gpu).or_default().clone()
    }
}

fn table() -> &'static Table {
    static TABLE: OnceLock<Table> = OnceLock::new();
    TABLE.get_or_init(Table::default)
}

/// A poisoned lock only means a panicking agent; the data stay usable.
fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Enters a client in the table until the returned registration drops.
pub fn register(client: &str, tenant: &str) -> Registration {
    let t = table();
    let id = t.next.fetch_add(1, Ordering::Relaxed);
    let slot = Arc::new(ClientSlot {
        client: client.to_string(),
        tenant: tenant.to_string(),
        gpu: AtomicU64::new(NO_GPU),
        memory: AtomicU64::new(0),
    });
    lock(&t.clients).insert(id, slot.clone());
    Registration { id, slot }
}

/// The clients attached to `gpu`, oldest first.
pub fn clients_of(gpu: u32) -> Vec<Arc<ClientSlot>> {
    lock(&table().clients)
        .values()
        .filter(|c| c.gpu() == Some(gpu))
        .cloned()
        .collect()
}

/// (GPU, memory) utilisation of `gpu` in percent: the share of the last
/// second during which the server ran requests of its clients (kernels,
/// synchronisations, copies), and of that, copies and memsets.
pub fn utilisation(gpu: u32) -> (u32, u32) {
    lock(&table().busy(gpu).0).percent(Instant::now())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pid_comes_from_the_client_description() {
        let r = register("/usr/bin/python3 (pid 4242)", "");
        assert_eq!(r.slot.pid(), 4242);
        let other = register("a tool", "");
        assert_eq!(other.slot.pid(), 0);
    }

    #[test]
    fn clients_are_listed_by_gpu_until_they_leave() {
        let a = register("a (pid 1)", "t1");
        a.attach(7001);
        a.set_memory(4096);
        let b = register("b (pid 2)", "t2");
        b.attach(7002);
        let on = clients_of(7001);
        assert_eq!(on.len(), 1);
        assert_eq!((on[0].pid(), on[0].memory()), (1, 4096));
        drop(a);
        assert!(clients_of(7001).is_empty());
        assert_eq!(clients_of(7002).len(), 1);
    }

    #[test]
    fn utilisation_is_the_busy_share_of_the_last_window() {
        let mut w = BusyWindow::default();
        let t0 = Instant::now();
        w.add(t0, Duration::ZERO, false);
        w.add(t0 + WINDOW / 4, WINDOW / 4, false);
        w.add(t0 + WINDOW / 2, WINDOW / 4, true);
        assert_eq!(w.percent(t0 + WINDOW), (50, 25));
        // The next window, idle so far, does not hide the last one.
        assert_eq!(w.percent(t0 + WINDOW + WINDOW / 2), (50, 25));
        // Long idle: nothing.
        assert_eq!(w.percent(t0 + 5 * WINDOW), (0, 0));
    }
}
