//! A tenant's `memory` limit over all its connections at once (every GPU,
//! every agent thread or process), not per connection.
//!
//! The listener keeps one table in shared memory (`rcud-shm`): per tenant
//! the bytes all its connections hold, and per connection slot the bytes
//! that slot holds and whose they are. An agent reserves an allocation's
//! charge before it makes it (so racing connections cannot pass the limit
//! together), then settles the account to what its device context really
//! holds after every request. When a connection ends, however its agent
//! ended, the listener gives back whatever its slot still holds.

use std::io;
use std::os::fd::{BorrowedFd, OwnedFd};
use std::sync::atomic::Ordering;
use std::sync::Arc;

use parking_lot::Mutex;
use rcud_shm::SharedWords;

/// Connection slots of the table.
pub const SLOTS: u32 = 1024;

/// The shared table: `[used per tenant] [held per slot] [tenant + 1 per slot]`.
#[derive(Debug)]
pub struct TenantMemory {
    words: SharedWords,
    tenants: u32,
    free: Mutex<Vec<u32>>,
}

impl TenantMemory {
    fn len(tenants: u32) -> u64 {
        u64::from(tenants) + 2 * u64::from(SLOTS)
    }

    /// A table for `tenants` tenants, for the listener.
    pub fn create(tenants: u32) -> io::Result<Self> {
        let words = SharedWords::create(c"rcud-tenant-memory", Self::len(tenants.max(1)))?;
        Ok(Self {
            words,
            tenants: tenants.max(1),
            free: Mutex::new((0..SLOTS).rev().collect()),
        })
    }

    /// The table behind `fd`, for an agent process.
    pub fn open(fd: OwnedFd, tenants: u32) -> io::Result<Self> {
        let words = SharedWords::open(fd, Self::len(tenants.max(1)))?;
        Ok(Self {
            words,
            tenants: tenants.max(1),
            free: Mutex::new(Vec::new()),
        })
    }

    /// The descriptor to hand to agent processes.
    pub fn fd(&self) -> BorrowedFd<'_> {
        self.words.fd()
    }

    /// Number of tenants the table counts.
    pub fn tenants(&self) -> u32 {
        self.tenants
    }

    fn used(&self, tenant: u32) -> &std::sync::atomic::AtomicU64 {
        self.words.word(u64::from(tenant.min(self.tenants - 1)))
    }

    fn held(&self, slot: u32) -> &std::sync::atomic::AtomicU64 {
        self.words
            .word(u64::from(self.tenants) + u64::from(slot.min(SLOTS - 1)))
    }

    fn owner(&self, slot: u32) -> &std::sync::atomic::AtomicU64 {
        self.words
            .word(u64::from(self.tenants) + u64::from(SLOTS) + u64::from(slot.min(SLOTS - 1)))
    }

    /// Bytes tenant `tenant` holds over all its connections.
    pub fn used_by(&self, tenant: u32) -> u64 {
        self.used(tenant).load(Ordering::Acquire)
    }

    /// A slot for a connection of tenant `tenant`, given back (with what it
    /// still holds) when the returned ticket is dropped.
    pub fn open_slot(self: &Arc<Self>, tenant: u32) -> Option<MemorySlot> {
        let slot = self.free.lock().pop()?;
        self.held(slot).store(0, Ordering::Release);
        self.owner(slot)
            .store(u64::from(tenant) + 1, Ordering::Release);
        Some(MemorySlot {
            table: self.clone(),
            slot,
        })
    }

    /// Gives back what `slot` still holds.
    fn reclaim(&self, slot: u32) {
        let left = self.held(slot).swap(0, Ordering::AcqRel);
        let owner = self.owner(slot).swap(0, Ordering::AcqRel);
        if let (true, Some(tenant)) = (left > 0, owner.checked_sub(1)) {
            sub(self.used(tenant as u32), left);
        }
    }
}

fn sub(word: &std::sync::atomic::AtomicU64, bytes: u64) {
    let _ = word.fetch_update(Ordering::AcqRel, Ordering::Acquire, |v| {
        Some(v.saturating_sub(bytes))
    });
}

/// A connection's slot, in the listener; dropping it reclaims the slot.
#[derive(Debug)]
pub struct MemorySlot {
    table: Arc<TenantMemory>,
    slot: u32,
}

impl MemorySlot {
    /// The slot's number, for the agent.
    pub fn slot(&self) -> u32 {
        self.slot
    }
}

impl Drop for MemorySlot {
    fn drop(&mut self) {
        self.table.reclaim(self.slot);
        self.table.free.lock().push(self.slot);
    }
}

/// One connection's account, in its agent.
#[derive(Debug)]
pub struct MemoryAccount {
    table: Arc<TenantMemory>,
    slot: u32,
    tenant: u32,
    limit: u64,
    /// What the account says this connection holds.
    settled: u64,
}

impl MemoryAccount {
    /// The account of `slot` for tenant `tenant` with limit `limit`.
    pub fn new(table: Arc<TenantMemory>, slot: u32, tenant: u32, limit: u64) -> Self {
        Self {
            table,
            slot,
            tenant,
            limit,
            settled: 0,
        }
    }

    /// The tenant's limit.
    pub fn limit(&self) -> u64 {
        self.limit
    }

    /// Bytes the tenant holds over all its connections.
    pub fn tenant_used(&self) -> u64 {
        self.table.used_by(self.tenant)
    }

    /// Reserves `bytes` for an allocation about to be made; `false` when the
    /// tenant's connections together would pass the limit.
    pub fn reserve(&mut self, bytes: u64) -> bool {
        let limit = self.limit;
        let ok = self
            .table
            .used(self.tenant)
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |v| {
                v.checked_add(bytes).filter(|&n| n <= limit)
            })
            .is_ok();
        if ok {
            self.table
                .held(self.slot)
                .fetch_add(bytes, Ordering::AcqRel);
            self.settled += bytes;
        }
        ok
    }

    /// Settles the account to `held`, what the connection's device context
    /// holds now (allocations made or freed, reservations not used).
    pub fn settle(&mut self, held: u64) {
        if held > self.settled {
            let more = held - self.settled;
            self.table
                .used(self.tenant)
                .fetch_add(more, Ordering::AcqRel);
            self.table.held(self.slot).fetch_add(more, Ordering::AcqRel);
        } else if held < self.settled {
            let less = self.settled - held;
            sub(self.table.used(self.tenant), less);
            sub(self.table.held(self.slot), less);
        }
        self.settled = held;
    }
}

impl Drop for MemoryAccount {
    fn drop(&mut self) {
        // The context is gone with the agent: nothing is held any more.
        self.settle(0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn connections_of_a_tenant_share_one_limit_and_give_back_what_they_held() {
        let table = Arc::new(TenantMemory::create(2).unwrap());
        let (s1, s2) = (table.open_slot(0).unwrap(), table.open_slot(0).unwrap());
        let other = table.open_slot(1).unwrap();
        let mut a = MemoryAccount::new(table.clone(), s1.slot(), 0, 100);
        let mut b = MemoryAccount::new(table.clone(), s2.slot(), 0, 100);
        let mut c = MemoryAccount::new(table.clone(), other.slot(), 1, 100);
        assert!(a.reserve(60));
        a.settle(60);
        assert!(!b.reserve(60), "60 + 60 is over the tenant's 100");
        assert!(b.reserve(40));
        assert!(c.reserve(100), "another tenant has its own limit");
        assert_eq!(table.used_by(0), 100);
        // A connection that ends gives back what it held, even unsettled.
        std::mem::forget(a);
        drop(s1);
        assert_eq!(table.used_by(0), 40);
        b.settle(10);
        assert_eq!(table.used_by(0), 10);
        drop(b);
        assert_eq!(table.used_by(0), 0);
        drop(c);
        assert_eq!(table.used_by(1), 0);
    }
}
