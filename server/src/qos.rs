//! Quality of service in the server: which connections a port admits, and
//! who sends next.
//!
//! Every connection has a service class ([`ServiceRequest`]): its tenant's
//! (`qos = "..."` in the tenants file), or one its client asks for in
//! `RCUD_QOS`, within the tenant's. At connect the listener admits it into
//! the port's high-priority table (the guaranteed classes, with the table
//! model of `rcud-qos`) or gives it its class's share of the low-priority
//! table; a class that does not fit is refused with what would fit.
//!
//! One arbiter, [`SharedArbiter`], then decides for every agent of the
//! server, threads and processes alike, whose bulk chunk goes next and whose
//! kernel launch runs next. It lives in shared memory: the table's
//! `(VL, weight)` entries, the arbiter's position in them, and one slot per
//! connection with what it has waiting. The table picks a lane; among the
//! connections of one lane, the one furthest behind its weighted share goes
//! first. The arbiter is work conserving: a lane with nothing waiting is
//! skipped.
//!
//! Arbitration decides shares only where the port is the bottleneck. With a
//! port rate ([`PortQos::paced`], `rcud-server --qos-port-rate`), the
//! arbiter models the port as a link of that line rate: a bulk grant no
//! longer holds the port while its agent moves the chunk, it books the
//! chunk's time on the link (a virtual clock in the shared words) and the
//! next chunk is granted when the link is free again. Connections that keep
//! a chunk waiting then get the table's shares, whatever their clients'
//! pace. [`PortQos::fifo`] is the same paced port without QoS: one queue of
//! copies in arrival order, each copy's chunks going out back to back.

use std::io;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::Mutex;
use rcud_qos::admission::{ConnectionId, Refusal, Table, TableConfig};
use rcud_qos::arbiter::{ArbEntry, Arbiter, ArbiterConfig, Discipline, Waiting, STATE_WORDS, VL15};
use rcud_qos::class::TrafficClass;
use rcud_qos::service::ServiceRequest;
use rcud_shm::SharedWords;

/// How long one chunk may wait for a paced port at most before its waiter
/// looks again.
const MAX_WAIT: Duration = Duration::from_millis(5);

/// What the arbiter hands out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Resource {
    /// Sending or receiving one chunk of a bulk copy.
    Bulk = 0,
    /// Running one kernel.
    Launch = 1,
}

const RESOURCES: u64 = 2;

/// Bulk copies are cut into chunks of this many bytes, each granted on its
/// own, so that a waiting connection waits for one chunk at most.
pub const CHUNK: usize = 256 << 10;

/// What a kernel launch weighs, in the bytes the table's weights count.
const LAUNCH_BYTES: u32 = 4096;

/// The arbiter counts in units of this many bytes: chunks are far larger
/// than InfiniBand packets, and the ConnectX discipline's deficits then
/// stay a few table cycles deep.
const UNIT: u32 = 64;

/// Connections that can hold a slot at once.
pub const MAX_SLOTS: u32 = 256;

/// First lane of the non-guaranteed classes (after the six distance
/// classes of the high table).
const FIRST_LOW_VL: u8 = 6;

// Layout of the shared words.
const LOCK: u64 = 0;
const GENERATION: u64 = 1;
const HIGH_LEN: u64 = 2;
const LOW_LEN: u64 = 3;
const LIMIT: u64 = 4;
const MTU: u64 = 5;
const HIGH: u64 = 6;
const LOW: u64 = HIGH + 64;
const RES_BASE: u64 = LOW + 64;
// Per resource: in flight, wake sequence, 16 lane clocks, arbiter state.
const RES_IN_FLIGHT: u64 = 0;
const RES_WAKE: u64 = 1;
const RES_CLOCK: u64 = 2;
const RES_STATE: u64 = RES_CLOCK + 16;
const RES_WORDS: u64 = RES_STATE + STATE_WORDS as u64;
const SLOT_BASE: u64 = RES_BASE + RESOURCES * RES_WORDS;
// Per slot: active, lane, share; per resource: waiting, granted, holding,
// virtual time.
const SLOT_ACTIVE: u64 = 0;
const SLOT_VL: u64 = 1;
const SLOT_SHARE: u64 = 2;
const SLOT_RES: u64 = 3;
const SLOT_WAITING: u64 = 0;
const SLOT_GRANTED: u64 = 1;
const SLOT_HOLDING: u64 = 2;
const SLOT_VTIME: u64 = 3;
const SLOT_WORDS: u64 = SLOT_RES + RESOURCES * 4;
// The paced port: its rate in bytes per second (0: not paced), when it is
// free again (CLOCK_MONOTONIC nanoseconds), whether it is one FIFO queue
// rather than the tables, and the FIFO's last ticket.
const PORT_RATE: u64 = SLOT_BASE + MAX_SLOTS as u64 * SLOT_WORDS;
const PORT_FREE: u64 = PORT_RATE + 1;
const FIFO: u64 = PORT_RATE + 2;
const TICKET: u64 = PORT_RATE + 3;
const WORDS: u64 = PORT_RATE + 4;

// What a slot's `granted` word says.
/// A grant that holds the resource until it is given back.
const GRANT_HELD: u64 = 1;
/// A grant of paced port time, already booked: nothing to give back.
const GRANT_BOOKED: u64 = 2;

/// Bytes of turns a connection keeps while idle (see [`SharedArbiter::acquire`]).
const IDLE_CREDIT: u64 = 64 * CHUNK as u64;

/// Virtual time of one byte at share 1.
const VTIME_SCALE: u64 = 1 << 20;

/// The arbiter all agents of one server share.
#[derive(Debug)]
pub struct SharedArbiter {
    words: SharedWords,
    /// This process's copy of the arbiter for the configuration of one
    /// generation (its state lives in the shared words).
    local: Mutex<Option<(u64, Arbiter)>>,
}

/// The shared lock, held while the value lives.
struct Locked<'a>(&'a SharedArbiter);

impl Drop for Locked<'_> {
    fn drop(&mut self) {
        self.0.words.word(LOCK).store(0, Ordering::Release);
    }
}

impl SharedArbiter {
    /// A new arbiter with empty tables, for the listener.
    pub fn create() -> io::Result<Self> {
        let words = SharedWords::create(c"rcud-qos", WORDS)?;
        Ok(Self::from_words(words))
    }

    /// The arbiter behind `fd`, for an agent process.
    pub fn open(fd: std::os::fd::OwnedFd) -> io::Result<Self> {
        Ok(Self::from_words(SharedWords::open(fd, WORDS)?))
    }

    fn from_words(words: SharedWords) -> Self {
        Self {
            words,
            local: Mutex::new(None),
        }
    }

    /// The descriptor to hand to agent processes.
    pub fn fd(&self) -> std::os::fd::BorrowedFd<'_> {
        self.words.fd()
    }

    fn w(&self, i: u64) -> &AtomicU64 {
        self.words.word(i)
    }

    fn get(&self, i: u64) -> u64 {
        self.w(i).load(Ordering::Relaxed)
    }

    fn set(&self, i: u64, v: u64) {
        self.w(i).store(v, Ordering::Relaxed)
    }

    fn res(r: Resource, field: u64) -> u64 {
        RES_BASE + r as u64 * RES_WORDS + field
    }

    fn slot(slot: u32, field: u64) -> u64 {
        SLOT_BASE + u64::from(slot) * SLOT_WORDS + field
    }

    fn slot_res(slot: u32, r: Resource, field: u64) -> u64 {
        Self::slot(slot, SLOT_RES + r as u64 * 4 + field)
    }

    /// Takes the lock. A holder that died inside its (short) critical
    /// section is detected by its pid and the lock taken over.
    fn lock(&self) -> Locked<'_> {
        let me = u64::from(std::process::id());
        let lock = self.w(LOCK);
        let mut spins = 0u32;
        let mut since = None::<Instant>;
        loop {
            match lock.compare_exchange_weak(0, me, Ordering::Acquire, Ordering::Relaxed) {
                Ok(_) => return Locked(self),
                Err(holder) => {
                    spins += 1;
                    if spins < 64 {
                        std::hint::spin_loop();
                        continue;
                    }
                    std::thread::yield_now();
                    let started = *since.get_or_insert_with(Instant::now);
                    if holder != 0
                        && holder != me
                        && started.elapsed() > Duration::from_millis(200)
                        && !process_alive(holder)
                    {
                        let _ =
                            lock.compare_exchange(holder, 0, Ordering::AcqRel, Ordering::Relaxed);
                    }
                }
            }
        }
    }

    /// Publishes new tables; the arbiter starts again at their first
    /// entries.
    fn publish(&self, config: &ArbiterConfig) {
        let _held = self.lock();
        self.set(HIGH_LEN, config.high.len() as u64);
        self.set(LOW_LEN, config.low.len() as u64);
        for (i, e) in config.high.iter().enumerate() {
            self.set(HIGH + i as u64, entry_word(*e));
        }
        for (i, e) in config.low.iter().enumerate() {
            self.set(LOW + i as u64, entry_word(*e));
        }
        self.set(LIMIT, u64::from(config.limit));
        self.set(MTU, u64::from(config.mtu));
        if let Ok(fresh) = Arbiter::new(config.clone()) {
            let mut words = [0i64; STATE_WORDS];
            fresh.save(&mut words);
            for r in [Resource::Bulk, Resource::Launch] {
                for (k, w) in words.iter().enumerate() {
                    self.set(Self::res(r, RES_STATE + k as u64), *w as u64);
                }
            }
        }
        self.set(GENERATION, self.get(GENERATION) + 1);
    }

    /// Paces bulk grants at `bytes_per_second` (`None`: one chunk on the
    /// port at a time, as fast as agents move them), and hands turns out
    /// in arrival order rather than by the tables when `fifo`.
    fn set_port(&self, bytes_per_second: Option<f64>, fifo: bool) {
        let _held = self.lock();
        let rate = bytes_per_second.map_or(0, |b| b.clamp(1.0, 1e15) as u64);
        self.set(PORT_RATE, rate);
        self.set(PORT_FREE, 0);
        self.set(FIFO, u64::from(fifo));
    }

    /// The paced port's rate, bytes per second.
    fn port_rate(&self, r: Resource) -> Option<u64> {
        match (r, self.get(PORT_RATE)) {
            (Resource::Bulk, rate) if rate > 0 => Some(rate),
            _ => None,
        }
    }

    fn fifo(&self) -> bool {
        self.get(FIFO) != 0
    }

    fn config(&self) -> ArbiterConfig {
        let read = |base: u64, len: u64| -> Vec<ArbEntry> {
            (0..len.min(64))
                .map(|i| {
                    let w = self.get(base + i);
                    ArbEntry {
                        vl: ((w >> 8) as u8).min(VL15 - 1),
                        weight: w as u8,
                    }
                })
                .collect()
        };
        ArbiterConfig {
            high: read(HIGH, self.get(HIGH_LEN)),
            low: read(LOW, self.get(LOW_LEN)),
            limit: self.get(LIMIT) as u8,
            discipline: Discipline::ConnectX,
            mtu: match self.get(MTU) {
                m @ (256 | 512 | 1024 | 2048 | 4096) => m as u32,
                _ => 2048,
            },
        }
    }

    /// Opens slot `slot` for a connection on lane `vl` with share `share`.
    fn open_slot(&self, slot: u32, vl: u8, share: u64) {
        let _held = self.lock();
        for f in 0..SLOT_WORDS {
            self.set(Self::slot(slot, f), 0);
        }
        self.set(Self::slot(slot, SLOT_VL), u64::from(vl));
        self.set(Self::slot(slot, SLOT_SHARE), share.max(1));
        // A new connection starts at its lane's virtual time, as a new flow
        // of start-time fair queueing does: starting at zero, it would get
        // the idle credit of `enqueue`, which buys a low share a burst worth
        // more of its lane's time than a high one's.
        let lane = u64::from(vl).min(15);
        for r in [Resource::Bulk, Resource::Launch] {
            let clock = self.get(Self::res(r, RES_CLOCK + lane));
            self.set(Self::slot_res(slot, r, SLOT_VTIME), clock);
        }
        self.set(Self::slot(slot, SLOT_ACTIVE), 1);
    }

    /// Closes slot `slot`, giving back whatever its connection held or was
    /// granted (it may have died mid-transfer).
    fn close_slot(&self, slot: u32) {
        let held = self.lock();
        self.set(Self::slot(slot, SLOT_ACTIVE), 0);
        for r in [Resource::Bulk, Resource::Launch] {
            let owed = self.get(Self::slot_res(slot, r, SLOT_HOLDING))
                + u64::from(self.get(Self::slot_res(slot, r, SLOT_GRANTED)) == GRANT_HELD);
            let in_flight = self.get(Self::res(r, RES_IN_FLIGHT));
            self.set(Self::res(r, RES_IN_FLIGHT), in_flight.saturating_sub(owed));
            for f in 0..4 {
                self.set(Self::slot_res(slot, r, f), 0);
            }
            self.dispatch(&held, r, now_ns());
        }
    }

    /// Waits until connection `slot` may use `r` for `bytes`, and returns
    /// the grant, which gives it back when dropped.
    pub fn acquire(&self, slot: u32, r: Resource, bytes: u32) -> Grant<'_> {
        let units = bytes.div_ceil(UNIT).max(1);
        let mut held = self.lock();
        self.enqueue(&held, slot, r, units);
        loop {
            let granted = Self::slot_res(slot, r, SLOT_GRANTED);
            let grant = self.get(granted);
            if grant != 0 {
                self.set(granted, 0);
                self.set(Self::slot_res(slot, r, SLOT_WAITING), 0);
                if grant == GRANT_HELD {
                    let holding = Self::slot_res(slot, r, SLOT_HOLDING);
                    self.set(holding, self.get(holding) + 1);
                }
                drop(held);
                return Grant {
                    arbiter: self,
                    slot,
                    resource: r,
                    next: 0,
                };
            }
            let now = now_ns();
            self.dispatch(&held, r, now);
            if self.get(granted) != 0 {
                continue;
            }
            // A paced port frees itself: whoever waits looks again then.
            let timeout = match self.port_rate(r) {
                Some(_) => Duration::from_nanos(self.get(PORT_FREE).saturating_sub(now))
                    .clamp(Duration::from_micros(1), MAX_WAIT),
                None => MAX_WAIT,
            };
            let seen = self.words.sequence(Self::res(r, RES_WAKE));
            drop(held);
            self.words.wait(Self::res(r, RES_WAKE), seen, timeout);
            held = self.lock();
        }
    }

    /// Marks `units` of `r` waiting on `slot`, with its place: in a FIFO, a
    /// new ticket unless its copy's previous chunk left one; otherwise its
    /// virtual time, of which an idle connection keeps at most
    /// IDLE_CREDIT of its share (the round trip between two copies costs
    /// it nothing, but a long idle spell earns no burst later).
    fn enqueue(&self, _held: &Locked<'_>, slot: u32, r: Resource, units: u32) {
        let waiting = Self::slot_res(slot, r, SLOT_WAITING);
        let vtime = Self::slot_res(slot, r, SLOT_VTIME);
        if self.fifo() {
            if self.get(waiting) == 0 {
                let ticket = self.get(TICKET) + 1;
                self.set(TICKET, ticket);
                self.set(vtime, ticket);
            }
        } else {
            let vl = self.get(Self::slot(slot, SLOT_VL)).min(15);
            let clock = self.get(Self::res(r, RES_CLOCK + vl));
            let share = self.get(Self::slot(slot, SLOT_SHARE)).max(1);
            let floor = clock.saturating_sub(IDLE_CREDIT / u64::from(UNIT) * VTIME_SCALE / share);
            if self.get(vtime) < floor {
                self.set(vtime, floor);
            }
        }
        self.set(waiting, u64::from(units));
    }

    fn release(&self, slot: u32, r: Resource, next: u32) {
        let held = self.lock();
        if next > 0 && self.get(Self::slot(slot, SLOT_ACTIVE)) != 0 {
            // Its next chunk competes now, with everybody else's.
            self.set(
                Self::slot_res(slot, r, SLOT_WAITING),
                u64::from(next.div_ceil(UNIT)),
            );
        }
        let holding = Self::slot_res(slot, r, SLOT_HOLDING);
        if self.get(holding) > 0 {
            self.set(holding, self.get(holding) - 1);
            let f = Self::res(r, RES_IN_FLIGHT);
            self.set(f, self.get(f).saturating_sub(1));
        }
        self.dispatch(&held, r, now_ns());
    }

    /// Grants `r` to waiting connections while it has room: one at a time
    /// (the port sends one chunk, the device runs one client's kernel), or,
    /// on a paced port, whenever the link is free at `now` (nanoseconds of
    /// CLOCK_MONOTONIC), booking each chunk's time on it.
    fn dispatch(&self, _held: &Locked<'_>, r: Resource, now: u64) {
        let mut local = self.local.lock();
        let generation = self.get(GENERATION);
        if local.as_ref().map(|(g, _)| *g) != Some(generation) {
            match Arbiter::new(self.config()) {
                Ok(a) => *local = Some((generation, a)),
                Err(e) => {
                    tracing::error!("QoS tables unusable: {e}");
                    return;
                }
            }
        }
        let Some((_, arbiter)) = local.as_mut() else {
            return;
        };
        let rate = self.port_rate(r);
        let fifo = self.fifo();
        let mut woke = false;
        while rate.is_some() || self.get(Self::res(r, RES_IN_FLIGHT)) == 0 {
            // Per lane, the waiting connection furthest behind its share.
            let mut waiting: Waiting = [None; 16];
            let mut first: [Option<(u64, u32)>; 16] = [None; 16];
            for s in 0..MAX_SLOTS {
                if self.get(Self::slot(s, SLOT_ACTIVE)) == 0
                    || self.get(Self::slot_res(s, r, SLOT_GRANTED)) != 0
                {
                    continue;
                }
                let units = self.get(Self::slot_res(s, r, SLOT_WAITING));
                if units == 0 {
                    continue;
                }
                let vl = self.get(Self::slot(s, SLOT_VL)).min(14) as usize;
                let vtime = self.get(Self::slot_res(s, r, SLOT_VTIME));
                if first[vl].is_none_or(|(t, _)| vtime < t) {
                    first[vl] = Some((vtime, s));
                    waiting[vl] = Some(units as u32);
                }
            }
            if waiting.iter().all(Option::is_none) {
                break;
            }
            if rate.is_some() && now < self.get(PORT_FREE) {
                break;
            }
            if fifo {
                // The oldest ticket, whatever its lane.
                let Some((_, s)) = first.iter().flatten().min().copied() else {
                    break;
                };
                let units = self.get(Self::slot_res(s, r, SLOT_WAITING));
                self.grant(s, r, rate, units, now);
                woke = true;
                continue;
            }
            let mut state = [0i64; STATE_WORDS];
            for (k, w) in state.iter_mut().enumerate() {
                *w = self.get(Self::res(r, RES_STATE + k as u64)) as i64;
            }
            arbiter.load(&state);
            // A lane the tables do not serve (a class without entries)
            // still gets the port when nobody else wants it.
            let picked = arbiter
                .next(&waiting)
                .map(|g| g.vl as usize)
                .or_else(|| (0..16).find(|&vl| waiting[vl].is_some()));
            arbiter.save(&mut state);
            for (k, w) in state.iter().enumerate() {
                self.set(Self::res(r, RES_STATE + k as u64), *w as u64);
            }
            let Some(vl) = picked else { break };
            let Some((vtime, s)) = first[vl] else { break };
            let units = self.get(Self::slot_res(s, r, SLOT_WAITING));
            let share = self.get(Self::slot(s, SLOT_SHARE)).max(1);
            self.set(
                Self::slot_res(s, r, SLOT_VTIME),
                vtime.saturating_add(units * VTIME_SCALE / share),
            );
            self.set(Self::res(r, RES_CLOCK + vl as u64), vtime);
            self.grant(s, r, rate, units, now);
            woke = true;
        }
        if woke {
            self.words.wake(Self::res(r, RES_WAKE));
        }
    }

    /// Grants `units` of `r` to `slot`: on a paced port, the link's time
    /// for them from when it was free, when the waiter who saw it free is
    /// late by less than one chunk's time (what a late wake-up lost is made
    /// up, the link does not idle for it), or else from `now` (after an
    /// idle spell, no burst); otherwise the resource until the grant is
    /// given back.
    fn grant(&self, slot: u32, r: Resource, rate: Option<u64>, units: u64, now: u64) {
        match rate {
            Some(rate) => {
                let time =
                    |bytes: u64| (u128::from(bytes) * 1_000_000_000 / u128::from(rate)) as u64;
                let slack = time(CHUNK as u64);
                let free = self.get(PORT_FREE);
                let from = if now.saturating_sub(free) <= slack {
                    free
                } else {
                    now
                };
                self.set(
                    PORT_FREE,
                    from.saturating_add(time(units * u64::from(UNIT))),
                );
                self.set(Self::slot_res(slot, r, SLOT_GRANTED), GRANT_BOOKED);
            }
            None => {
                self.set(Self::slot_res(slot, r, SLOT_GRANTED), GRANT_HELD);
                let f = Self::res(r, RES_IN_FLIGHT);
                self.set(f, self.get(f) + 1);
            }
        }
    }
}

/// Now, in nanoseconds of CLOCK_MONOTONIC: the same clock in every process
/// of the machine, for the paced port's virtual clock.
fn now_ns() -> u64 {
    match nix::time::clock_gettime(nix::time::ClockId::CLOCK_MONOTONIC) {
        Ok(t) => (t.tv_sec() as u64)
            .saturating_mul(1_000_000_000)
            .saturating_add(t.tv_nsec() as u64),
        // CLOCK_MONOTONIC does not fail on Linux; a port that never frees
        // would be worse than one that never waits.
        Err(_) => u64::MAX,
    }
}

fn entry_word(e: ArbEntry) -> u64 {
    (u64::from(e.vl) << 8) | u64::from(e.weight)
}

fn process_alive(pid: u64) -> bool {
    let Ok(pid) = i32::try_from(pid) else {
        return false;
    };
    // Signal 0 checks existence only.
    !matches!(
        nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), None),
        Err(nix::errno::Errno::ESRCH)
    )
}

/// Permission to send one chunk or run one kernel; given back on drop.
#[derive(Debug)]
pub struct Grant<'a> {
    arbiter: &'a SharedArbiter,
    slot: u32,
    resource: Resource,
    next: u32,
}

impl Grant<'_> {
    /// Gives the grant back saying that `bytes` more follow at once (the
    /// next chunk of the same copy), so that they compete for the next
    /// turn rather than arrive after it was decided.
    pub fn then(mut self, bytes: usize) {
        self.next = u32::try_from(bytes).unwrap_or(u32::MAX);
    }
}

impl Drop for Grant<'_> {
    fn drop(&mut self) {
        self.arbiter.release(self.slot, self.resource, self.next);
    }
}

/// One connection's place in the arbiter.
#[derive(Debug, Clone)]
pub struct Lane {
    arbiter: Arc<SharedArbiter>,
    slot: u32,
}

impl Lane {
    /// The lane of connection `slot`.
    pub fn new(arbiter: Arc<SharedArbiter>, slot: u32) -> Self {
        Self { arbiter, slot }
    }

    /// Waits for the turn of `bytes` of `r` (a launch weighs the same
    /// whatever `bytes` says).
    pub fn acquire(&self, r: Resource, bytes: usize) -> Grant<'_> {
        let bytes = match r {
            Resource::Launch => LAUNCH_BYTES,
            Resource::Bulk => u32::try_from(bytes).unwrap_or(u32::MAX),
        };
        self.arbiter.acquire(self.slot, r, bytes)
    }

    /// Moves `total` bytes in chunks of [`CHUNK`], each in its turn:
    /// `send` gets each chunk's range. The next chunk competes for its turn
    /// as the previous one ends; a failure ends the copy.
    pub fn chunked<E>(
        &self,
        total: usize,
        mut send: impl FnMut(std::ops::Range<usize>) -> Result<(), E>,
    ) -> Result<(), E> {
        let mut at = 0;
        while at < total {
            let len = (total - at).min(CHUNK);
            let grant = self.acquire(Resource::Bulk, len);
            send(at..at + len)?;
            at += len;
            if at < total {
                grant.then((total - at).min(CHUNK));
            }
        }
        Ok(())
    }
}

/// The QoS of one port, in the listener.
#[derive(Debug)]
pub struct PortQos {
    shared: Arc<SharedArbiter>,
    state: Mutex<PortState>,
    /// Bulk chunks paced at this rate, bytes per second.
    port_rate: Option<f64>,
    /// One queue in arrival order: no classes, no tables.
    fifo: bool,
}

#[derive(Debug)]
struct PortState {
    table: Table,
    free: Vec<u32>,
}

/// A class that the port cannot admit.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum QosRefusal {
    /// The table model refused it.
    #[error("service class {asked} does not fit this server: {why}{fits}")]
    NoRoom {
        /// The class asked for.
        asked: String,
        /// The table model's reason.
        why: Refusal,
        /// What would still fit, as a sentence.
        fits: String,
    },
    /// More than the tenant's class.
    #[error("service class {asked} is more than tenant `{tenant}` may have ({ceiling})")]
    AboveCeiling {
        /// The class asked for.
        asked: String,
        /// The tenant.
        tenant: String,
        /// The tenant's class.
        ceiling: String,
    },
    /// The client's class could not be read.
    #[error("RCUD_QOS {0:?} cannot be read: {1}")]
    Unreadable(String, String),
    /// Every slot of the arbiter is taken.
    #[error("the server arbitrates {MAX_SLOTS} connections at most")]
    Full,
}

/// A connection's admission; released when dropped (the connection ended).
#[derive(Debug)]
pub struct QosTicket {
    port: Arc<PortQos>,
    slot: u32,
    connection: Option<ConnectionId>,
    class: ServiceRequest,
}

impl QosTicket {
    /// The connection's slot in the shared arbiter.
    pub fn slot(&self) -> u32 {
        self.slot
    }

    /// The admitted class.
    pub fn class(&self) -> &ServiceRequest {
        &self.class
    }
}

impl Drop for QosTicket {
    fn drop(&mut self) {
        self.port.shared.close_slot(self.slot);
        let mut state = self.port.state.lock();
        if let Some(id) = self.connection {
            if state.table.release(id).is_ok() {
                self.port.shared.publish(&arbiter_config(&state.table));
            }
        }
        state.free.push(self.slot);
    }
}

impl PortQos {
    /// The QoS of a port with table settings `config`: one chunk on the
    /// port at a time, as fast as the agents move them.
    pub fn new(config: TableConfig) -> io::Result<Arc<Self>> {
        Self::build(config, None, false)
    }

    /// The QoS of a port with table settings `config` whose bulk chunks go
    /// out at `bytes_per_second` (`None`: as [`PortQos::new`]).
    pub fn paced(config: TableConfig, bytes_per_second: Option<f64>) -> io::Result<Arc<Self>> {
        Self::build(config, bytes_per_second, false)
    }

    /// A port without QoS whose bulk chunks go out at `bytes_per_second`:
    /// every connection is admitted whatever its class, copies queue in
    /// arrival order and each goes out whole before the next (a NIC's send
    /// queue without arbitration).
    pub fn fifo(bytes_per_second: f64, mtu: u32) -> io::Result<Arc<Self>> {
        let link = rcud_qos::admission::Link {
            bytes_per_second,
            mtu,
        };
        Self::build(TableConfig::new(link), Some(bytes_per_second), true)
    }

    fn build(config: TableConfig, port_rate: Option<f64>, fifo: bool) -> io::Result<Arc<Self>> {
        if let Some(rate) = port_rate {
            if !(rate.is_finite() && rate >= 1.0) {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidInput,
                    format!("a port rate of {rate} bytes per second"),
                ));
            }
        }
        let table = Table::new(config).map_err(|e| io::Error::other(e.to_string()))?;
        let shared = Arc::new(SharedArbiter::create()?);
        shared.set_port(port_rate, fifo);
        shared.publish(&arbiter_config(&table));
        Ok(Arc::new(Self {
            shared,
            state: Mutex::new(PortState {
                table,
                free: (0..MAX_SLOTS).rev().collect(),
            }),
            port_rate,
            fifo,
        }))
    }

    /// The rate bulk chunks are paced at, bytes per second.
    pub fn port_rate(&self) -> Option<f64> {
        self.port_rate
    }

    /// Whether the port is one FIFO queue, without QoS.
    pub fn is_fifo(&self) -> bool {
        self.fifo
    }

    /// The arbiter, for agents of this process and to hand to agent
    /// processes.
    pub fn arbiter(&self) -> &Arc<SharedArbiter> {
        &self.shared
    }

    /// Admits a connection: the client's class (`asked`, from its
    /// `RCUD_QOS`; empty for none) within its tenant's (`ceiling`), or the
    /// tenant's, or best effort.
    pub fn admit(
        self: &Arc<Self>,
        asked: &str,
        tenant: Option<(&str, Option<&ServiceRequest>)>,
    ) -> Result<QosTicket, QosRefusal> {
        let ceiling = tenant.and_then(|(_, c)| c.copied());
        let class = if asked.trim().is_empty() {
            ceiling.unwrap_or(ServiceRequest::BEST_EFFORT)
        } else {
            let r: ServiceRequest =
                asked
                    .parse()
                    .map_err(|e: rcud_qos::service::ServiceError| {
                        QosRefusal::Unreadable(asked.to_owned(), e.to_string())
                    })?;
            if let (Some(c), Some((name, _))) = (ceiling, tenant) {
                if !r.within(&c) {
                    return Err(QosRefusal::AboveCeiling {
                        asked: r.to_string(),
                        tenant: name.to_owned(),
                        ceiling: c.to_string(),
                    });
                }
            }
            r
        };
        let mut state = self.state.lock();
        let slot = state.free.pop().ok_or(QosRefusal::Full)?;
        if self.fifo {
            // No classes: one lane, in arrival order.
            self.shared.open_slot(slot, low_vl(TrafficClass::Be), 1);
            drop(state);
            return Ok(QosTicket {
                port: self.clone(),
                slot,
                connection: None,
                class,
            });
        }
        let admitted = match class.admission(state.table.config()) {
            None => Ok(None),
            Some(request) => request
                .and_then(|req| state.table.admit(req))
                .map(|a| Some((a.id, a.vl))),
        };
        let (connection, vl) = match admitted {
            Ok(Some((id, vl))) => (Some(id), vl),
            Ok(None) => (None, low_vl(class.class)),
            Err(why) => {
                state.free.push(slot);
                let fits = match &why {
                    Refusal::NoRoom { headroom, .. } => format!(
                        "; what still fits: {:.0} MB/s at this delay bound, {} free entries{}",
                        headroom.bytes_per_second / 1e6,
                        headroom.free_entries,
                        match headroom.smallest_distance {
                            Some(d) => format!(", a new sequence of distance {d} or more"),
                            None => String::new(),
                        }
                    ),
                    _ => String::new(),
                };
                return Err(QosRefusal::NoRoom {
                    asked: class.to_string(),
                    why,
                    fits,
                });
            }
        };
        if connection.is_some() {
            self.shared.publish(&arbiter_config(&state.table));
        }
        // Within a lane, shares follow bandwidth (MB/s) or the class weight.
        let share = match class.bytes_per_second {
            Some(b) => (b / 1e6).max(1.0) as u64,
            None => class
                .class
                .low_table_default()
                .map_or(1, |(n, w)| u64::from(n) * u64::from(w)),
        };
        self.shared.open_slot(slot, vl, share);
        drop(state);
        Ok(QosTicket {
            port: self.clone(),
            slot,
            connection,
            class,
        })
    }
}

/// The lane of a class without a guarantee.
fn low_vl(class: TrafficClass) -> u8 {
    match class {
        TrafficClass::Pbe => FIRST_LOW_VL,
        TrafficClass::Be | TrafficClass::Dbts | TrafficClass::Db => FIRST_LOW_VL + 1,
        TrafficClass::Ch => FIRST_LOW_VL + 2,
    }
}

/// The arbiter's tables: the admission table's entries, and the default
/// low-table shares of the classes without a guarantee.
fn arbiter_config(table: &Table) -> ArbiterConfig {
    let mut low = Vec::new();
    for class in [TrafficClass::Pbe, TrafficClass::Be, TrafficClass::Ch] {
        if let Some((entries, weight)) = class.low_table_default() {
            for _ in 0..entries {
                low.push(ArbEntry {
                    vl: low_vl(class),
                    weight,
                });
            }
        }
    }
    ArbiterConfig {
        high: table.arbitration(),
        low,
        limit: table.config().high_limit,
        discipline: Discipline::ConnectX,
        mtu: table.config().link.mtu,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rcud_qos::admission::Link;
    use std::sync::atomic::AtomicBool;

    fn port() -> Arc<PortQos> {
        PortQos::new(TableConfig::new(Link::gbps(100.0, 2048))).unwrap()
    }

    /// Bytes each of `classes` gets in `run` when all send chunks as fast
    /// as they can.
    fn race(port: &Arc<PortQos>, classes: &[&str], run: Duration) -> Vec<u64> {
        let tickets: Vec<QosTicket> = classes
            .iter()
            .map(|c| port.admit(c, None).unwrap())
            .collect();
        let stop = Arc::new(AtomicBool::new(false));
        let threads: Vec<_> = tickets
            .iter()
            .map(|t| {
                let lane = Lane::new(port.arbiter().clone(), t.slot());
                let stop = stop.clone();
                std::thread::spawn(move || {
                    let mut sent = 0u64;
                    while !stop.load(Ordering::Relaxed) {
                        let copy = lane.chunked(64 * CHUNK, |range| {
                            if stop.load(Ordering::Relaxed) {
                                return Err(());
                            }
                            // Sending the chunk.
                            std::thread::sleep(Duration::from_micros(50));
                            sent += range.len() as u64;
                            Ok(())
                        });
                        if copy.is_err() {
                            break;
                        }
                    }
                    sent
                })
            })
            .collect();
        std::thread::sleep(run);
        stop.store(true, Ordering::Relaxed);
        threads.into_iter().map(|t| t.join().unwrap()).collect()
    }

    #[test]
    fn two_bulk_connections_of_weights_three_to_one_share_three_to_one() {
        let port = port();
        let sent = race(
            &port,
            &["class=db,bandwidth=3GB/s", "class=db,bandwidth=1GB/s"],
            Duration::from_millis(600),
        );
        let ratio = sent[0] as f64 / sent[1] as f64;
        assert!((ratio / 3.0 - 1.0).abs() < 0.1, "{sent:?}: {ratio}");
    }

    #[test]
    fn guaranteed_traffic_goes_before_best_effort_and_idle_lanes_are_skipped() {
        let port = port();
        let sent = race(
            &port,
            &["class=db,bandwidth=2GB/s", "class=be"],
            Duration::from_millis(400),
        );
        assert!(sent[0] > 4 * sent[1], "{sent:?}");
        // Alone, best effort takes everything (work conserving).
        let alone = race(&port, &["class=be"], Duration::from_millis(200));
        assert!(alone[0] > 0);
    }

    /// A paced port at `rate` bytes per second, driven by a virtual clock
    /// rather than the machine's: what the arbiter grants is all there is.
    struct Sim<'a> {
        arbiter: &'a SharedArbiter,
        now: u64,
    }

    impl Sim<'_> {
        /// `slot` asks for `bytes` (a new copy, or a small call).
        fn ask(&self, slot: u32, bytes: u32) {
            let held = self.arbiter.lock();
            self.arbiter
                .enqueue(&held, slot, Resource::Bulk, bytes.div_ceil(UNIT));
        }

        /// `slot`'s copy goes on with `bytes` more, as [`Grant::then`] says.
        fn then(&self, slot: u32, bytes: u32) {
            let _held = self.arbiter.lock();
            self.arbiter.set(
                SharedArbiter::slot_res(slot, Resource::Bulk, SLOT_WAITING),
                u64::from(bytes.div_ceil(UNIT)),
            );
        }

        /// Lets the arbiter decide at the current time; returns who got a
        /// grant (taking it, as the waiter's `acquire` does).
        fn step(&mut self, slots: &[u32]) -> Vec<u32> {
            let held = self.arbiter.lock();
            self.arbiter.dispatch(&held, Resource::Bulk, self.now);
            let mut got = Vec::new();
            for &s in slots {
                let granted = SharedArbiter::slot_res(s, Resource::Bulk, SLOT_GRANTED);
                if self.arbiter.get(granted) != 0 {
                    assert_eq!(self.arbiter.get(granted), GRANT_BOOKED);
                    self.arbiter.set(granted, 0);
                    self.arbiter
                        .set(SharedArbiter::slot_res(s, Resource::Bulk, SLOT_WAITING), 0);
                    got.push(s);
                }
            }
            got
        }

        /// When the link is free again.
        fn free(&self) -> u64 {
            self.arbiter.get(PORT_FREE)
        }
    }

    const RATE: f64 = 1e9;

    /// Nanoseconds one chunk takes on the paced port.
    fn chunk_ns() -> u64 {
        (CHUNK as f64 / RATE * 1e9) as u64
    }

    /// Chunks each of `classes` gets out of `total` on a paced port when
    /// every one always has its next chunk waiting, in copies of 32 chunks.
    fn always_ready(port: &Arc<PortQos>, classes: &[&str], total: u64) -> Vec<u64> {
        const COPY: u64 = 32;
        let tickets: Vec<QosTicket> = classes
            .iter()
            .map(|c| port.admit(c, None).unwrap())
            .collect();
        let slots: Vec<u32> = tickets.iter().map(QosTicket::slot).collect();
        let mut sim = Sim {
            arbiter: port.arbiter(),
            now: 1_000_000,
        };
        for &s in &slots {
            sim.ask(s, CHUNK as u32);
        }
        let mut got = vec![0u64; slots.len()];
        let mut last = sim.now;
        while got.iter().sum::<u64>() < total {
            let granted = sim.step(&slots);
            assert!(granted.len() <= 1, "two chunks on the link at once");
            for s in granted {
                let i = slots.iter().position(|&x| x == s).unwrap();
                got[i] += 1;
                // Ready again at once: the copy's next chunk, or the
                // client's next copy.
                if got[i] / COPY * COPY == got[i] {
                    sim.ask(s, CHUNK as u32);
                } else {
                    sim.then(s, CHUNK as u32);
                }
            }
            // The link is busy exactly one chunk time per chunk.
            assert!(sim.free() >= last, "the port's clock went back");
            last = sim.free();
            sim.now = sim.free();
        }
        got
    }

    #[test]
    fn a_paced_port_gives_always_ready_bulk_connections_of_weights_three_to_one_three_to_one() {
        let port = PortQos::paced(TableConfig::new(Link::gbps(100.0, 2048)), Some(RATE)).unwrap();
        let got = always_ready(
            &port,
            &["class=db,bandwidth=3GB/s", "class=db,bandwidth=1GB/s"],
            4000,
        );
        let ratio = got[0] as f64 / got[1] as f64;
        assert!((ratio / 3.0 - 1.0).abs() < 0.05, "{got:?}: {ratio}");
        let fifo = PortQos::fifo(RATE, 2048).unwrap();
        let got = always_ready(
            &fifo,
            &["class=db,bandwidth=3GB/s", "class=db,bandwidth=1GB/s"],
            4000,
        );
        // The same on a FIFO port without QoS: whole copies alternate.
        assert!(got[0].abs_diff(got[1]) <= 32, "{got:?}");
    }

    #[test]
    fn connections_that_join_a_busy_lane_start_even_and_get_their_shares() {
        let port = PortQos::paced(TableConfig::new(Link::gbps(100.0, 2048)), Some(RATE)).unwrap();
        let classes = ["class=db,bandwidth=3GB/s", "class=db,bandwidth=1GB/s"];
        // The lane's virtual time moves on while others use it ...
        always_ready(&port, &classes, 4000);
        // ... and two new connections start from it: neither inherits an
        // idle credit that buys the smaller share a burst.
        let got = always_ready(&port, &classes, 400);
        let ratio = got[0] as f64 / got[1] as f64;
        assert!((ratio / 3.0 - 1.0).abs() < 0.05, "{got:?}: {ratio}");
    }

    /// How long (virtual ns) each of a DBTS client's small calls waits on a
    /// paced port beside a bulk client copying 8 MiB at a time without
    /// pause; the calls come at odd moments, mid-chunk.
    fn small_call_waits(port: &Arc<PortQos>) -> Vec<u64> {
        let bulk = port.admit("class=be", None).unwrap();
        let dbts = port
            .admit("class=dbts,bandwidth=100MB/s,latency=2ms", None)
            .unwrap();
        let slots = [bulk.slot(), dbts.slot()];
        let copy_chunks = 32;
        let mut sim = Sim {
            arbiter: port.arbiter(),
            now: 1_000_000,
        };
        sim.ask(bulk.slot(), CHUNK as u32);
        let mut left = copy_chunks;
        let mut next_call = sim.now + 777_777;
        let mut asked = None;
        let mut waits = Vec::new();
        while waits.len() < 200 {
            if asked.is_none() && next_call <= sim.free().max(sim.now) {
                sim.now = next_call;
                sim.ask(dbts.slot(), 4);
                asked = Some(next_call);
            }
            for s in sim.step(&slots) {
                if s == dbts.slot() {
                    let at = asked.take().unwrap();
                    waits.push(sim.now - at);
                    // The next call 2 ms and a bit after its reply.
                    next_call = sim.now + 2_000_000 + (waits.len() as u64 * 104_729) % 700_000;
                } else {
                    left -= 1;
                    if left > 0 {
                        sim.then(bulk.slot(), CHUNK as u32);
                    } else {
                        // The client's next copy follows at once.
                        left = copy_chunks;
                        sim.ask(bulk.slot(), CHUNK as u32);
                    }
                }
            }
            sim.now = sim.free().max(sim.now);
            if asked.is_none() && next_call < sim.now {
                sim.now = next_call;
            }
        }
        waits
    }

    #[test]
    fn on_a_paced_port_a_dbts_call_waits_one_chunk_at_most_beside_a_saturating_bulk_client() {
        let port = PortQos::paced(TableConfig::new(Link::gbps(100.0, 2048)), Some(RATE)).unwrap();
        let waits = small_call_waits(&port);
        let worst = waits.iter().max().copied().unwrap();
        // The chunk on the link when the call comes, and the call's own
        // 64-byte unit.
        assert!(
            worst <= chunk_ns() + 1_000,
            "{worst} ns > one chunk ({} ns)",
            chunk_ns()
        );
        assert!(waits.iter().any(|&w| w > 0));
        // Without QoS the call queues behind the rest of the copy.
        let fifo = PortQos::fifo(RATE, 2048).unwrap();
        let mut waits = small_call_waits(&fifo);
        waits.sort_unstable();
        let p99 = waits[waits.len() * 99 / 100];
        assert!(p99 > 10 * chunk_ns(), "{p99} ns");
    }

    #[test]
    fn a_paced_port_paces_real_agents_and_keeps_the_shares() {
        // 128 MB/s: a chunk is 2 ms on the link, far longer than the
        // threads' own work, so each has its next chunk waiting in time.
        let rate = 128e6;
        let port = PortQos::paced(TableConfig::new(Link::gbps(100.0, 2048)), Some(rate)).unwrap();
        let started = Instant::now();
        let sent = race(
            &port,
            &["class=db,bandwidth=3GB/s", "class=db,bandwidth=1GB/s"],
            Duration::from_millis(800),
        );
        let secs = started.elapsed().as_secs_f64();
        let total: u64 = sent.iter().sum();
        // Never faster than the link (the first chunk after idle is free).
        assert!(
            total as f64 <= rate * secs + 2.0 * CHUNK as f64,
            "{total} bytes in {secs} s"
        );
        let ratio = sent[0] as f64 / sent[1] as f64;
        assert!((ratio / 3.0 - 1.0).abs() < 0.15, "{sent:?}: {ratio}");
    }

    #[test]
    fn a_class_that_does_not_fit_is_refused_with_what_fits() {
        let port = port();
        let big = port.admit("class=db,bandwidth=10GB/s", None).unwrap();
        let e = port.admit("class=db,bandwidth=5GB/s", None).unwrap_err();
        let text = e.to_string();
        assert!(
            text.contains("does not fit") && text.contains("what still fits"),
            "{text}"
        );
        drop(big);
        // Released with the connection.
        port.admit("class=db,bandwidth=5GB/s", None).unwrap();
    }

    #[test]
    fn a_tenant_cannot_ask_for_more_than_its_class() {
        let port = port();
        let ceiling: ServiceRequest = "class=db,bandwidth=1GB/s".parse().unwrap();
        let e = port
            .admit("class=db,bandwidth=2GB/s", Some(("alice", Some(&ceiling))))
            .unwrap_err();
        assert!(matches!(e, QosRefusal::AboveCeiling { .. }), "{e}");
        let t = port.admit("", Some(("alice", Some(&ceiling)))).unwrap();
        assert_eq!(t.class(), &ceiling);
        assert!(matches!(
            port.admit("class=gold", None),
            Err(QosRefusal::Unreadable(..))
        ));
    }

    #[test]
    fn a_connection_that_dies_holding_a_grant_does_not_block_the_others() {
        let port = port();
        let a = port.admit("class=be", None).unwrap();
        let b = port.admit("class=be", None).unwrap();
        let lane_a = Lane::new(port.arbiter().clone(), a.slot());
        let grant = lane_a.acquire(Resource::Bulk, CHUNK);
        // The agent is killed: its grant is never dropped, its ticket is.
        std::mem::forget(grant);
        drop(a);
        let lane_b = Lane::new(port.arbiter().clone(), b.slot());
        let _g = lane_b.acquire(Resource::Bulk, CHUNK);
    }
}
