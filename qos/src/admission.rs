//! Admission of connections into the high-priority table of one port.
//!
//! A request is a mean bandwidth and a maximum distance between consecutive
//! entries of its lane (from its delay bound). The distance is rounded down to
//! a power of two `d = 2^i`; the bandwidth becomes a weight `w` in 64-byte
//! units; the request needs `max(⌈w/255⌉, N/d)` entries. Connections of one
//! distance class share a *sequence* (a set of the table) while its weight,
//! recomputed from their summed bandwidth, fits 255 per entry; otherwise a new
//! sequence is placed by the management model. Every sequence of a distance
//! class carries that class's VL, so a VL never mixes distances.
//!
//! Because the models keep the table normalized, a new sequence of `k`
//! entries is placed exactly when `k` entries are free (the theorem of seed
//! 002): a refusal is never caused by fragmentation, and [`Refusal`] can say
//! precisely what would still fit.
//!
//! A server keeps one [`Table`] per port (or GPU); [`Table::arbitration`]
//! gives the `(VL, weight)` entries, in table order, for an arbiter or for
//! OpenSM, and [`Table::generation`] changes whenever they do.

use std::collections::BTreeMap;
use std::time::Duration;

use crate::arbiter::{ArbEntry, LIMIT_UNIT, WEIGHT_UNIT};
use crate::manage::Model;
use crate::sets::{bit_reverse, Handle, SetError, SetTable};
use crate::workload::level_of_distance;

/// Largest weight of one entry.
pub const MAX_WEIGHT: u32 = 255;

/// The link a table arbitrates.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Link {
    /// Data rate in bytes per second.
    pub bytes_per_second: f64,
    /// MTU in bytes.
    pub mtu: u32,
}

impl Link {
    /// A link of `gbps` gigabits per second of data.
    pub fn gbps(gbps: f64, mtu: u32) -> Self {
        Link {
            bytes_per_second: gbps * 1e9 / 8.0,
            mtu,
        }
    }
}

/// Settings of a port's table.
#[derive(Debug, Clone, PartialEq)]
pub struct TableConfig {
    /// Entries of the high-priority table (a power of two, 2 to 64): the
    /// port's VLArbHighCap.
    pub entries: u32,
    /// The link.
    pub link: Link,
    /// The management model.
    pub model: Model,
    /// LimitOfHighPriority the port runs with (bounds how much low-priority
    /// traffic can slip between two high entries).
    pub high_limit: u8,
    /// VL of each distance class, indexed by level (`lanes[i]` for distance
    /// `2^i`; index 0 unused). `None`: that class is not served.
    pub lanes: Vec<Option<u8>>,
}

impl TableConfig {
    /// A 64-entry table on `link` with the smart model, no limit, and
    /// distance `2^i` on VL `i - 1` (VL0 for distance 2 … VL5 for 64).
    pub fn new(link: Link) -> Self {
        TableConfig {
            entries: 64,
            link,
            model: Model::Smart,
            high_limit: 255,
            lanes: (0..=6u8).map(|i| i.checked_sub(1)).collect(),
        }
    }

    /// Bytes per second that one unit of weight guarantees: the whole table
    /// at full weight (`N × 255` units per cycle) is the link's rate.
    pub fn bytes_per_second_per_unit(&self) -> f64 {
        self.link.bytes_per_second / (self.entries as f64 * MAX_WEIGHT as f64)
    }

    /// Weight (units) for a bandwidth; at least 1.
    pub fn weight(&self, bytes_per_second: f64) -> u32 {
        let w = (bytes_per_second / self.bytes_per_second_per_unit() - 1e-9).ceil();
        w.clamp(1.0, u32::MAX as f64) as u32
    }

    /// Worst-case time for the arbiter to get through one high-table entry:
    /// its full weight plus one overdrawing packet, plus the low-priority
    /// packets the limit lets in meanwhile.
    pub fn slot(&self) -> Duration {
        Duration::from_secs_f64(self.slot_seconds())
    }

    /// [`TableConfig::slot`] in seconds, unrounded.
    pub fn slot_seconds(&self) -> f64 {
        let mtu = self.link.mtu as u64;
        let entry = MAX_WEIGHT as u64 * WEIGHT_UNIT + mtu;
        let low = match self.high_limit {
            255 => 0,
            // One low packet per high packet.
            0 => entry.div_ceil(mtu) * mtu,
            q => entry.div_ceil(q as u64 * LIMIT_UNIT) * mtu,
        };
        (entry + low) as f64 / self.link.bytes_per_second
    }

    /// The largest power-of-two distance whose worst-case gap (`d` slots)
    /// stays within `delay`, capped at the table size; `None` below 2.
    pub fn distance_for_delay(&self, delay: Duration) -> Option<u32> {
        let slots = (delay.as_secs_f64() / self.slot_seconds()).floor();
        if slots < 2.0 {
            return None;
        }
        let d = slots.min(self.entries as f64) as u32;
        Some(1 << level_of_distance(d))
    }
}

/// A connection's needs.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Request {
    /// Mean bandwidth, bytes per second.
    pub bytes_per_second: f64,
    /// Maximum distance between consecutive entries of its lane (any value
    /// from 2 up; rounded down to a power of two, capped at the table size).
    pub distance: u32,
}

impl Request {
    /// A request with an explicit distance.
    pub fn new(bytes_per_second: f64, distance: u32) -> Self {
        Request {
            bytes_per_second,
            distance,
        }
    }

    /// A request from a delay bound on `config`'s link.
    pub fn with_delay(
        bytes_per_second: f64,
        delay: Duration,
        config: &TableConfig,
    ) -> Result<Self, Refusal> {
        match config.distance_for_delay(delay) {
            Some(distance) => Ok(Request::new(bytes_per_second, distance)),
            None => Err(Refusal::DelayTooShort {
                delay,
                shortest: Duration::from_secs_f64(config.slot_seconds() * 2.0),
            }),
        }
    }

    /// A request with only a bandwidth need: the largest distance.
    pub fn bandwidth_only(bytes_per_second: f64, config: &TableConfig) -> Self {
        Request::new(bytes_per_second, config.entries)
    }
}

/// Name of an admitted connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ConnectionId(pub u64);

/// What a request got.
#[derive(Debug, Clone, PartialEq)]
pub struct Allocation {
    /// The connection's name, for [`Table::release`].
    pub id: ConnectionId,
    /// Its distance class (the request's distance rounded down).
    pub distance: u32,
    /// The lane of its distance class.
    pub vl: u8,
    /// Entries of its sequence, as table positions (0-based; swaps may move
    /// them later: read [`Table::arbitration`] again after any change).
    pub positions: Vec<u32>,
    /// Summed weight of its sequence after admission.
    pub sequence_weight: u32,
    /// Whether it joined an existing sequence.
    pub shared: bool,
    /// Set swaps the management model did.
    pub swaps: u32,
}

/// What would still be admitted, reported with a refusal.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Headroom {
    /// Free entries of the table.
    pub free_entries: u32,
    /// The smallest distance a new sequence can still get (`None`: the table
    /// is full).
    pub smallest_distance: Option<u32>,
    /// The most bandwidth (bytes/s) a request of the refused request's
    /// distance could still get, in an existing sequence or a new one.
    pub bytes_per_second: f64,
}

/// Why a request was refused.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum Refusal {
    /// The bandwidth is zero, negative or not a number.
    #[error("the bandwidth must be a positive number of bytes per second")]
    BadBandwidth,
    /// The distance rounds below 2 (distance 1 would take every entry).
    #[error("distance {0} is below 2: the smallest class is an entry every 2 positions")]
    DistanceTooSmall(u32),
    /// The distance class has no lane in this port's configuration.
    #[error("distance class {0} has no lane on this port")]
    NoLane(u32),
    /// Even an entry every 2 positions cannot meet the delay.
    #[error(
        "a delay of {delay:?} is below the {shortest:?} that distance 2 guarantees on this link"
    )]
    DelayTooShort {
        /// The bound asked for.
        delay: Duration,
        /// The tightest bound the table offers.
        shortest: Duration,
    },
    /// The bandwidth needs more weight than the whole table holds.
    #[error("{bytes_per_second:.0} B/s needs weight {weight}, more than the table's {capacity}")]
    TooMuchBandwidth {
        /// The request.
        bytes_per_second: f64,
        /// Its weight.
        weight: u32,
        /// All entries at full weight.
        capacity: u32,
    },
    /// Not enough free entries for a new sequence.
    #[error("{needed} entries needed, {} free", headroom.free_entries)]
    NoRoom {
        /// Entries a new sequence would take.
        needed: u32,
        /// What still fits.
        headroom: Headroom,
    },
}

/// An unknown connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("no connection {0:?} in this table")]
pub struct UnknownConnection(pub ConnectionId);

#[derive(Debug, Clone)]
struct Sequence {
    level: u32,
    handle: Handle,
    bytes_per_second: f64,
    connections: u32,
}

/// The high-priority table of one port, with its admitted connections.
///
/// ```
/// use std::time::Duration;
/// use rcud_qos::admission::{Link, Refusal, Request, Table, TableConfig};
/// use rcud_qos::arbiter::{ArbEntry, Arbiter, ArbiterConfig, Discipline};
///
/// let mut cfg = TableConfig::new(Link::gbps(100.0, 2048)); // 64 entries, smart model
/// cfg.high_limit = 4;
/// let mut table = Table::new(cfg.clone()).unwrap();
/// // 2 GB/s within 20 µs per hop: distance 8 (VL 2), 16 entries for the weight.
/// let req = Request::with_delay(2e9, Duration::from_micros(20), &cfg).unwrap();
/// let a = table.admit(req).unwrap();
/// assert_eq!((a.distance, a.vl), (8, 2));
/// // 11 GB/s more at distance 2 needs 57 entries (a set of 64); 48 are free.
/// match table.admit(Request::new(11e9, 2)) {
///     Err(Refusal::NoRoom { headroom, .. }) => assert_eq!(headroom.free_entries, 48),
///     other => panic!("{other:?}"),
/// }
/// // The (VL, weight) entries drive the port's arbiter.
/// let arbiter = Arbiter::new(ArbiterConfig {
///     high: table.arbitration(),
///     low: vec![ArbEntry { vl: 7, weight: 10 }],
///     limit: cfg.high_limit,
///     discipline: Discipline::Iba,
///     mtu: 2048,
/// })
/// .unwrap();
/// # let _ = arbiter;
/// table.release(a.id).unwrap();
/// ```
#[derive(Debug, Clone)]
pub struct Table {
    config: TableConfig,
    sets: SetTable,
    sequences: BTreeMap<u32, Sequence>,
    by_handle: BTreeMap<Handle, u32>,
    connections: BTreeMap<ConnectionId, (u32, f64)>,
    next_sequence: u32,
    next_connection: u64,
    generation: u64,
}

impl Table {
    /// An empty table.
    pub fn new(config: TableConfig) -> Result<Self, SetError> {
        let sets = SetTable::new(config.entries)?;
        Ok(Table {
            config,
            sets,
            sequences: BTreeMap::new(),
            by_handle: BTreeMap::new(),
            connections: BTreeMap::new(),
            next_sequence: 0,
            next_connection: 0,
            generation: 0,
        })
    }

    /// The settings.
    pub fn config(&self) -> &TableConfig {
        &self.config
    }

    /// The set model underneath.
    pub fn sets(&self) -> &SetTable {
        &self.sets
    }

    /// Changes whenever [`Table::arbitration`] may have changed.
    pub fn generation(&self) -> u64 {
        self.generation
    }

    /// Admitted connections.
    pub fn connections(&self) -> usize {
        self.connections.len()
    }

    fn lane(&self, level: u32) -> Option<u8> {
        self.config.lanes.get(level as usize).copied().flatten()
    }

    fn capacity(&self, seq: &Sequence) -> u32 {
        MAX_WEIGHT * self.sets.set_size(self.held(seq).level)
    }

    fn held(&self, seq: &Sequence) -> crate::sets::Set {
        self.sets.held(seq.handle).expect("a sequence holds a set")
    }

    /// What a request of `distance` could still get.
    pub fn headroom(&self, distance: u32) -> Headroom {
        let n = self.config.entries;
        let free = self.sets.free_entries();
        // Normalized: the largest free set has the largest power of two ≤ free.
        let largest = if free == 0 {
            0
        } else {
            1 << level_of_distance(free)
        };
        let smallest_distance = (largest > 0).then(|| (n / largest).max(2));
        let level = level_of_distance(distance.clamp(2, n));
        let unit = self.config.bytes_per_second_per_unit();
        let fresh = if largest >= n >> level {
            (MAX_WEIGHT * largest) as f64 * unit
        } else {
            0.0
        };
        let shared = self
            .sequences
            .values()
            .filter(|s| s.level == level)
            .map(|s| {
                let cap = self.capacity(s) as f64 * unit;
                (cap - s.bytes_per_second).max(0.0)
            })
            .fold(0.0, f64::max);
        Headroom {
            free_entries: free,
            smallest_distance,
            bytes_per_second: fresh.max(shared),
        }
    }

    /// Admits a connection or says why not and what would fit.
    pub fn admit(&mut self, request: Request) -> Result<Allocation, Refusal> {
        let bw = request.bytes_per_second;
        if !(bw.is_finite() && bw > 0.0) {
            return Err(Refusal::BadBandwidth);
        }
        if request.distance < 2 {
            return Err(Refusal::DistanceTooSmall(request.distance));
        }
        let n = self.config.entries;
        let distance = 1 << level_of_distance(request.distance.min(n));
        let level = level_of_distance(distance);
        let vl = self.lane(level).ok_or(Refusal::NoLane(distance))?;
        let weight = self.config.weight(bw);
        let capacity = MAX_WEIGHT * n;
        if weight > capacity {
            return Err(Refusal::TooMuchBandwidth {
                bytes_per_second: bw,
                weight,
                capacity,
            });
        }
        let id = ConnectionId(self.next_connection);

        // Join a sequence of the class whose recomputed weight still fits.
        let joinable = self
            .sequences
            .iter()
            .find(|(_, s)| {
                s.level == level && self.config.weight(s.bytes_per_second + bw) <= self.capacity(s)
            })
            .map(|(&k, _)| k);
        let (key, shared, swaps) = match joinable {
            Some(k) => (k, true, 0),
            None => {
                // Entries for the weight or the distance, whichever needs more,
                // as a whole set.
                let needed = weight
                    .div_ceil(MAX_WEIGHT)
                    .max(n / distance)
                    .next_power_of_two();
                let set_level = level_of_distance(n / needed);
                if self.sets.free_entries() < needed {
                    return Err(Refusal::NoRoom {
                        needed,
                        headroom: self.headroom(distance),
                    });
                }
                let placed = self.config.model.insert(&mut self.sets, set_level);
                debug_assert!(placed.is_some(), "a normalized table had room");
                let Some(placed) = placed else {
                    return Err(Refusal::NoRoom {
                        needed,
                        headroom: self.headroom(distance),
                    });
                };
                let k = self.next_sequence;
                self.next_sequence += 1;
                self.sequences.insert(
                    k,
                    Sequence {
                        level,
                        handle: placed.handle,
                        bytes_per_second: 0.0,
                        connections: 0,
                    },
                );
                self.by_handle.insert(placed.handle, k);
                (k, false, placed.swaps)
            }
        };
        let seq = self.sequences.get_mut(&key).expect("just found or made");
        seq.bytes_per_second += bw;
        seq.connections += 1;
        let seq = seq.clone();
        self.connections.insert(id, (key, bw));
        self.next_connection += 1;
        self.generation += 1;
        Ok(Allocation {
            id,
            distance,
            vl,
            positions: self.sets.positions(self.held(&seq)),
            sequence_weight: self.config.weight(seq.bytes_per_second),
            shared,
            swaps,
        })
    }

    /// Releases a connection; its sequence's weight shrinks, and an empty
    /// sequence gives its set back (with the model's repairs). Returns the
    /// set swaps done.
    pub fn release(&mut self, id: ConnectionId) -> Result<u32, UnknownConnection> {
        let (key, bw) = self.connections.remove(&id).ok_or(UnknownConnection(id))?;
        let seq = self
            .sequences
            .get_mut(&key)
            .expect("a connection's sequence");
        seq.connections -= 1;
        seq.bytes_per_second -= bw;
        let mut swaps = 0;
        if seq.connections == 0 {
            let handle = seq.handle;
            self.sequences.remove(&key);
            self.by_handle.remove(&handle);
            swaps = self
                .config
                .model
                .release(&mut self.sets, handle)
                .expect("a sequence's set is held");
        }
        self.generation += 1;
        Ok(swaps)
    }

    /// The table as `(VL, weight)` per position, `N` entries; free positions
    /// have weight 0 (skipped). A sequence's summed weight is spread over its
    /// entries, the first (lowest ids) taking the remainder, every entry at
    /// least 1 so none of them looks free to the arbiter.
    pub fn arbitration(&self) -> Vec<ArbEntry> {
        let n = self.config.entries;
        let bits = self.sets.bits();
        let mut out = vec![ArbEntry { vl: 0, weight: 0 }; n as usize];
        for seq in self.sequences.values() {
            let set = self.held(seq);
            let size = self.sets.set_size(set.level);
            let total = self
                .config
                .weight(seq.bytes_per_second)
                .min(MAX_WEIGHT * size);
            let (base, extra) = (total / size, total % size);
            let vl = self.lane(seq.level).expect("admitted classes have a lane");
            for (k, id) in self.sets.ids(set).enumerate() {
                let w = (base + u32::from((k as u32) < extra)).max(1);
                out[bit_reverse(id, bits) as usize] = ArbEntry {
                    vl,
                    weight: w as u8,
                };
            }
        }
        out
    }

    /// Summed weight of all entries (at most `N × 255`).
    pub fn total_weight(&self) -> u32 {
        self.arbitration().iter().map(|e| e.weight as u32).sum()
    }

    /// Reserved bandwidth, bytes per second.
    pub fn reserved(&self) -> f64 {
        self.connections.values().map(|&(_, bw)| bw).sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// 64 entries on a link where one weight unit is exactly 1000 B/s.
    fn config() -> TableConfig {
        TableConfig::new(Link {
            bytes_per_second: 64.0 * 255.0 * 1000.0,
            mtu: 2048,
        })
    }

    #[test]
    fn weights_and_entries_follow_bandwidth_and_distance() {
        let c = config();
        assert_eq!(c.weight(1000.0), 1);
        assert_eq!(c.weight(1.0), 1);
        assert_eq!(c.weight(255_001.0), 256);
        let mut t = Table::new(c).unwrap();
        // Distance 45 rounds to 32: 2 entries, weight 10 over them.
        let a = t.admit(Request::new(10_000.0, 45)).unwrap();
        assert_eq!((a.distance, a.vl, a.positions.len()), (32, 4, 2));
        assert_eq!(a.positions[1] - a.positions[0], 32);
        // Distance 64 but weight 1000: ⌈1000/255⌉ = 4 entries, at distance 16.
        let b = t.admit(Request::new(1_000_000.0, 64)).unwrap();
        assert_eq!((b.distance, b.vl, b.positions.len()), (64, 5, 4));
        let arb = t.arbitration();
        let of_b: Vec<u8> = b
            .positions
            .iter()
            .map(|&p| arb[p as usize].weight)
            .collect();
        assert_eq!(of_b.iter().map(|&w| w as u32).sum::<u32>(), 1000);
        assert!(of_b.iter().all(|&w| w == 250));
        assert_eq!(t.sets().free_entries(), 64 - 2 - 4);
    }

    #[test]
    fn connections_of_a_class_share_a_sequence_and_weights_are_recomputed() {
        let mut t = Table::new(config()).unwrap();
        // 0.4 units each: 1 unit each if rounded separately, 2 units summed.
        let ids: Vec<ConnectionId> = (0..5)
            .map(|_| t.admit(Request::new(400.0, 8)).unwrap())
            .map(|a| a.id)
            .collect();
        assert_eq!(t.sets().free_entries(), 64 - 8);
        // 5 × 0.4 = 2 units over 8 entries: every entry at least 1.
        assert_eq!(t.total_weight(), 8);
        let a = t
            .admit(Request::new(8.0 * 255.0 * 1000.0 - 2000.0, 8))
            .unwrap();
        assert!(a.shared);
        assert_eq!(a.sequence_weight, 8 * 255);
        // Full now: the next one of the class opens a second sequence.
        let b = t.admit(Request::new(1000.0, 8)).unwrap();
        assert!(!b.shared);
        assert_eq!(t.sets().free_entries(), 64 - 16);
        for id in ids {
            t.release(id).unwrap();
        }
        t.release(a.id).unwrap();
        // The first sequence is empty and gone; the second remains.
        assert_eq!(t.sets().free_entries(), 64 - 8);
        assert!(t.release(a.id).is_err());
    }

    #[test]
    fn refusals_say_what_still_fits() {
        let mut t = Table::new(config()).unwrap();
        assert_eq!(t.admit(Request::new(0.0, 8)), Err(Refusal::BadBandwidth));
        assert_eq!(
            t.admit(Request::new(1.0, 1)),
            Err(Refusal::DistanceTooSmall(1))
        );
        let too_much = 64.0 * 255.0 * 1000.0 + 1000.0;
        assert!(matches!(
            t.admit(Request::new(too_much, 2)),
            Err(Refusal::TooMuchBandwidth { .. })
        ));
        // Fill 32 + 16 + 8 + 4 entries, leaving 4.
        for d in [2, 4, 8, 16] {
            t.admit(Request::new(1000.0, d)).unwrap();
        }
        // Too much to join the distance-8 sequence, no room for another.
        match t.admit(Request::new(8.0 * 255.0 * 1000.0, 8)) {
            Err(Refusal::NoRoom { needed, headroom }) => {
                assert_eq!(needed, 8);
                assert_eq!(headroom.free_entries, 4);
                assert_eq!(headroom.smallest_distance, Some(16));
                // The distance-8 sequence has weight 1 of 8 × 255.
                assert_eq!(headroom.bytes_per_second, (8.0 * 255.0 - 1.0) * 1000.0);
            }
            other => panic!("{other:?}"),
        }
        // What the headroom promised is admitted.
        t.admit(Request::new(4.0 * 255.0 * 1000.0, 16)).unwrap();
        assert_eq!(t.sets().free_entries(), 0);
        assert_eq!(t.headroom(64).smallest_distance, None);
    }

    #[test]
    fn delay_bounds_become_distances() {
        let mut c = TableConfig::new(Link::gbps(100.0, 4096));
        c.high_limit = 255;
        // One slot: 255·64 + 4096 bytes at 12.5 GB/s = 1.633 µs.
        let slot = c.slot_seconds();
        assert!((slot - 20416.0 / 12.5e9).abs() < 1e-15);
        assert_eq!(
            c.distance_for_delay(Duration::from_secs_f64(slot * 9.5)),
            Some(8)
        );
        assert_eq!(c.distance_for_delay(Duration::from_secs(1)), Some(64));
        assert_eq!(c.distance_for_delay(Duration::from_secs_f64(slot)), None);
        assert!(matches!(
            Request::with_delay(1e6, Duration::from_nanos(100), &c),
            Err(Refusal::DelayTooShort { .. })
        ));
        // A limit lets low packets in between: slots get longer.
        c.high_limit = 1;
        assert!(c.slot_seconds() > slot);
    }

    #[test]
    fn the_arbitration_table_drives_the_arbiter_in_proportion_to_bandwidth() {
        use crate::arbiter::{saturate, ArbiterConfig, Discipline};
        let mut t = Table::new(config()).unwrap();
        t.admit(Request::new(300_000.0, 4)).unwrap(); // VL1, weight 300
        t.admit(Request::new(100_000.0, 32)).unwrap(); // VL4, weight 100
        let cfg = ArbiterConfig {
            high: t.arbitration(),
            low: vec![],
            limit: 255,
            discipline: Discipline::Iba,
            mtu: 2048,
        };
        let mut waiting = [None; 16];
        waiting[1] = Some(64);
        waiting[4] = Some(64);
        let mut arb = crate::arbiter::Arbiter::new(cfg.clone()).unwrap();
        let mut bytes = [0u64; 16];
        for _ in 0..100_000 {
            let g = arb.next(&waiting).unwrap();
            bytes[g.vl as usize] += g.bytes as u64;
        }
        let r = bytes[1] as f64 / bytes[4] as f64;
        assert!((r - 3.0).abs() < 0.01, "{r}");
        assert!(saturate(cfg, 64, 10).unwrap().high > 0);
    }
}
