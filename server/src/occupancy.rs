//! Counting what is held at once per key (a source address, a tenant), with
//! tickets that give their place back when dropped, whatever ends the
//! connection: the agent thread returning, or the reaper of an agent process.

use std::collections::HashMap;
use std::sync::Arc;

use parking_lot::Mutex;

/// Places held per key.
#[derive(Debug, Default)]
pub(crate) struct Occupancy {
    held: Mutex<HashMap<String, u32>>,
}

/// One place, given back on drop.
#[derive(Debug)]
pub(crate) struct Ticket {
    occupancy: Arc<Occupancy>,
    key: String,
}

impl Occupancy {
    /// Takes a place for `key` if fewer than `limit` are held.
    pub(crate) fn try_take(self: &Arc<Self>, key: String, limit: u32) -> Option<Ticket> {
        let mut held = self.held.lock();
        let n = held.entry(key.clone()).or_insert(0);
        if *n >= limit {
            return None;
        }
        *n += 1;
        Some(Ticket {
            occupancy: self.clone(),
            key,
        })
    }

    #[cfg(test)]
    fn held(&self, key: &str) -> u32 {
        self.held.lock().get(key).copied().unwrap_or(0)
    }
}

impl Drop for Ticket {
    fn drop(&mut self) {
        let mut held = self.occupancy.held.lock();
        if let Some(n) = held.get_mut(&self.key) {
            *n -= 1;
            if *n == 0 {
                held.remove(&self.key);
            }
        }
    }
}

/// The tickets one connection holds, and its QoS admission.
#[derive(Debug, Default)]
pub(crate) struct Lease(
    Vec<Ticket>,
    Option<crate::qos::QosTicket>,
    Option<crate::tenant_memory::MemorySlot>,
    Option<crate::resume::Registered>,
);

impl Lease {
    pub(crate) fn add(&mut self, ticket: Ticket) {
        self.0.push(ticket);
    }

    pub(crate) fn add_qos(&mut self, ticket: crate::qos::QosTicket) {
        self.1 = Some(ticket);
    }

    pub(crate) fn add_memory_slot(&mut self, slot: crate::tenant_memory::MemorySlot) {
        self.2 = Some(slot);
    }

    /// Keeps the connection's session routable while the lease lives.
    pub(crate) fn add_session(&mut self, session: crate::resume::Registered) {
        self.3 = Some(session);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn places_are_limited_per_key_and_given_back_on_drop() {
        let o = Arc::new(Occupancy::default());
        let a = o.try_take("a".into(), 2).unwrap();
        let b = o.try_take("a".into(), 2).unwrap();
        assert!(o.try_take("a".into(), 2).is_none());
        let _other = o.try_take("b".into(), 2).unwrap();
        drop(a);
        assert_eq!(o.held("a"), 1);
        let mut lease = Lease::default();
        lease.add(o.try_take("a".into(), 2).unwrap());
        drop(b);
        drop(lease);
        assert_eq!(o.held("a"), 0);
    }
}
