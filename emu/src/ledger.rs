//! Device memory budgets shared by the agent processes of one server.
//!
//! With process isolation every client is served by a process of its own,
//! each with its own [`crate::EmuGpu`]. So that `--emu-memory` is the size of
//! the device, as on a real GPU, and not the size of each client's share,
//! those processes count their allocations in one table in shared memory:
//! the ledger. The listener creates it (a memfd) and hands it to every agent
//! process, together with a slot of its own.
//!
//! Per GPU, the table holds the bytes used by all agents, and per slot the
//! bytes each agent holds. An agent that dies without releasing anything
//! (killed, crashed) leaves its slot's count behind; the listener reclaims it
//! when it reaps the process ([`Ledger::reclaim`]).

use std::io;
use std::os::fd::{BorrowedFd, OwnedFd};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use rcud_shm::SharedWords;

/// The shared table of one server.
#[derive(Debug)]
pub struct Ledger {
    words: SharedWords,
    gpus: u32,
    slots: u32,
}

impl Ledger {
    /// A new table for `gpus` devices and `slots` agents at once, all zero.
    pub fn create(gpus: u32, slots: u32) -> io::Result<Self> {
        let words = SharedWords::create(c"rcud-ledger", Self::words(gpus, slots)?)?;
        Ok(Self { words, gpus, slots })
    }

    /// The table behind `fd`, made by [`Ledger::create`] with the same sizes
    /// in another process.
    pub fn open(fd: OwnedFd, gpus: u32, slots: u32) -> io::Result<Self> {
        let words = SharedWords::open(fd, Self::words(gpus, slots)?).map_err(|_| {
            io::Error::other("the ledger's size does not match its GPU and slot counts")
        })?;
        Ok(Self { words, gpus, slots })
    }

    fn words(gpus: u32, slots: u32) -> io::Result<u64> {
        u64::from(gpus)
            .checked_mul(u64::from(slots) + 1)
            .filter(|&n| n > 0 && n <= 1 << 27)
            .ok_or_else(|| io::Error::other("ledger size out of range"))
    }

    /// The descriptor to hand to agent processes.
    pub fn fd(&self) -> BorrowedFd<'_> {
        self.words.fd()
    }

    /// Number of GPUs and of slots.
    pub fn shape(&self) -> (u32, u32) {
        (self.gpus, self.slots)
    }

    /// Bytes used on `gpu` by all agents.
    fn used(&self, gpu: u32) -> &AtomicU64 {
        self.words.word(u64::from(gpu))
    }

    /// Bytes agent `slot` holds on `gpu`.
    fn held(&self, slot: u32, gpu: u32) -> &AtomicU64 {
        self.words
            .word(u64::from(self.gpus) + u64::from(slot) * u64::from(self.gpus) + u64::from(gpu))
    }

    /// Gives back what the agent in `slot` still held (it has ended), and
    /// empties the slot for the next agent.
    pub fn reclaim(&self, slot: u32) {
        if slot >= self.slots {
            return;
        }
        for gpu in 0..self.gpus {
            let left = self.held(slot, gpu).swap(0, Ordering::AcqRel);
            if left > 0 {
                let _ = self
                    .used(gpu)
                    .fetch_update(Ordering::AcqRel, Ordering::Acquire, |u| {
                        Some(u.saturating_sub(left))
                    });
            }
        }
    }

    /// Bytes used on `gpu` by all agents.
    pub fn used_on(&self, gpu: u32) -> u64 {
        if gpu >= self.gpus {
            return 0;
        }
        self.used(gpu).load(Ordering::Acquire)
    }
}

/// One agent's account in a ledger, for one GPU.
#[derive(Debug, Clone)]
pub struct SharedBudget {
    ledger: Arc<Ledger>,
    slot: u32,
    gpu: u32,
}

impl SharedBudget {
    /// The account of agent `slot` on `gpu`.
    pub fn new(ledger: Arc<Ledger>, slot: u32, gpu: u32) -> io::Result<Self> {
        if slot >= ledger.slots || gpu >= ledger.gpus {
            return Err(io::Error::other(format!(
                "ledger slot {slot} or GPU {gpu} out of range {:?}",
                ledger.shape()
            )));
        }
        Ok(Self { ledger, slot, gpu })
    }

    pub(crate) fn used(&self) -> u64 {
        self.ledger.used_on(self.gpu)
    }

    /// Takes `bytes` if the device's `total` allows, counting them in this
    /// agent's slot.
    pub(crate) fn reserve(&self, bytes: u64, total: u64) -> bool {
        let taken = self
            .ledger
            .used(self.gpu)
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |used| {
                used.checked_add(bytes).filter(|&n| n <= total)
            })
            .is_ok();
        if taken {
            self.ledger
                .held(self.slot, self.gpu)
                .fetch_add(bytes, Ordering::AcqRel);
        }
        taken
    }

    pub(crate) fn release(&self, bytes: u64) {
        self.ledger
            .held(self.slot, self.gpu)
            .fetch_sub(bytes, Ordering::AcqRel);
        self.ledger
            .used(self.gpu)
            .fetch_sub(bytes, Ordering::AcqRel);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn agents_share_one_budget_and_a_dead_agents_bytes_are_reclaimed() {
        let ledger = Arc::new(Ledger::create(2, 4).unwrap());
        // A second mapping of the same memory, as another process has.
        let fd = ledger.fd().try_clone_to_owned().unwrap();
        let other = Arc::new(Ledger::open(fd, 2, 4).unwrap());
        let a = SharedBudget::new(ledger.clone(), 0, 1).unwrap();
        let b = SharedBudget::new(other.clone(), 1, 1).unwrap();
        assert!(a.reserve(600, 1000));
        assert!(!b.reserve(500, 1000), "the device's total is shared");
        assert!(b.reserve(400, 1000));
        assert_eq!(ledger.used_on(1), 1000);
        assert_eq!(ledger.used_on(0), 0);
        b.release(100);
        assert_eq!(other.used_on(1), 900);
        // Agent 0 dies holding 600 bytes.
        ledger.reclaim(0);
        assert_eq!(other.used_on(1), 300);
        assert!(b.reserve(700, 1000));
        assert!(SharedBudget::new(ledger.clone(), 4, 0).is_err());
        assert!(Ledger::open(ledger.fd().try_clone_to_owned().unwrap(), 3, 4).is_err());
    }
}
