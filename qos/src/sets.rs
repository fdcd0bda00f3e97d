//! The formal model of an arbitration table: entries grouped into sets `E(i, j)`.
//!
//! A table has `N = 2^n` entries (`n` ≤ 6; InfiniBand uses 64). Entry ids are
//! not table positions: id `m` sits at position `bitreverse_n(m)`. With that
//! numbering the set `E(i, j)` — level `i` in `0..=n`, `j` a multiple of
//! `2^(n-i)` — is the contiguous id range `j .. j + 2^(n-i)`, and its entries
//! are evenly spaced `2^i` apart in the table: it serves a request that needs an
//! entry at least every `d = 2^i` positions. The sets form a binary tree (a set
//! is the union of its two children one level down), so the state of the whole
//! table is one bit per id: free or not. Every set question is a few word
//! operations on that bit mask.
//!
//! Vocabulary (seed 002, section 7): a set is *free* when all its entries are;
//! *singular* when free but its brother is not (the free root, which has no
//! brother, counts too, as in seed 000). The singular sets are exactly the
//! maximal free sets. A table is *normalized* with at most one singular set per
//! level and *ordered* when smaller singular sets lie left of larger ones.

use std::fmt;

/// Largest supported `n`: the InfiniBand table has 64 entries.
pub const MAX_BITS: u32 = 6;

/// Why a set operation was rejected.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SetError {
    /// The table size is not `2^n` with `1 ≤ n ≤ 6`.
    #[error("a table has 2, 4, 8, 16, 32 or 64 entries, not {0}")]
    BadSize(u32),
    /// The level is outside `0..=n`.
    #[error("level {level} is outside 0..={max}")]
    BadLevel {
        /// The level asked for.
        level: u32,
        /// The deepest level of this table.
        max: u32,
    },
    /// `j` is not a valid start of a set at that level.
    #[error("E({level}, {j}) is not a set of this table: j must be a multiple of {size} below {entries}")]
    BadIndex {
        /// The level.
        level: u32,
        /// The start asked for.
        j: u32,
        /// Entries of a set at this level.
        size: u32,
        /// Entries of the table.
        entries: u32,
    },
    /// Two sets given as free overlap.
    #[error("E({level}, {j}) overlaps another set given as free")]
    Overlap {
        /// The level.
        level: u32,
        /// The start.
        j: u32,
    },
    /// The set has free entries or entries of another owner.
    #[error("E({level}, {j}) is not wholly held by one request")]
    NotHeld {
        /// The level.
        level: u32,
        /// The start.
        j: u32,
    },
    /// The handle does not name a placed request.
    #[error("no request with handle {0}")]
    UnknownHandle(u32),
}

/// A set `E(level, start)`, by the ids it covers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Set {
    /// The level `i`: the set serves requests of distance `2^i`.
    pub level: u32,
    /// The first id `j`.
    pub start: u32,
}

impl fmt::Display for Set {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "E({},{})", self.level, self.start)
    }
}

/// Which free set an insertion takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Insertion {
    /// The leftmost free set of the level (seed 002, section 8).
    Leftmost,
    /// The leftmost set of the level inside the smallest singular set that can
    /// hold it (seed 000, section 4.4): a normalized table stays normalized.
    Smart,
}

/// Opaque name of a request placed in a [`SetTable`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Handle(pub u32);

/// Owner mark of an entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Owner {
    Free,
    /// Occupied by something the table does not track (worked examples).
    Filler,
    Held(u32),
}

/// The entries of one table, their sets, and the requests holding them.
#[derive(Debug, Clone)]
pub struct SetTable {
    bits: u32,
    /// Bit `m` set: id `m` is free.
    free: u64,
    owner: Vec<Owner>,
    /// Set held by each handle (`None`: released slot, reusable).
    held: Vec<Option<Set>>,
    spare: Vec<u32>,
    swaps: u64,
}

/// The `n` low bits of `m`, reversed.
pub fn bit_reverse(m: u32, bits: u32) -> u32 {
    if bits == 0 {
        0
    } else {
        m.reverse_bits() >> (32 - bits)
    }
}

fn low_mask(len: u32) -> u64 {
    if len >= 64 {
        u64::MAX
    } else {
        (1u64 << len) - 1
    }
}

impl SetTable {
    /// An empty table of `entries` entries (a power of two, 2 to 64).
    pub fn new(entries: u32) -> Result<Self, SetError> {
        if !entries.is_power_of_two() || !(2..=1 << MAX_BITS).contains(&entries) {
            return Err(SetError::BadSize(entries));
        }
        let bits = entries.trailing_zeros();
        Ok(SetTable {
            bits,
            free: low_mask(entries),
            owner: vec![Owner::Free; entries as usize],
            held: Vec::new(),
            spare: Vec::new(),
            swaps: 0,
        })
    }

    /// A table whose only free entries are the given sets; everything else is
    /// occupied by requests the table does not track (the spec's examples
    /// list a table by its singular sets).
    pub fn with_free_sets(entries: u32, sets: &[(u32, u32)]) -> Result<Self, SetError> {
        let mut t = SetTable::new(entries)?;
        t.free = 0;
        t.owner.fill(Owner::Filler);
        for &(level, j) in sets {
            let s = t.set(level, j)?;
            let m = t.range_mask(s);
            if t.free & m != 0 {
                return Err(SetError::Overlap { level, j });
            }
            t.free |= m;
            for id in t.ids(s) {
                t.owner[id as usize] = Owner::Free;
            }
        }
        Ok(t)
    }

    /// Number of entries `N`.
    pub fn entries(&self) -> u32 {
        1 << self.bits
    }

    /// `n = log2 N`, the deepest level.
    pub fn bits(&self) -> u32 {
        self.bits
    }

    /// Entries of a set at `level`: `N / 2^level`.
    pub fn set_size(&self, level: u32) -> u32 {
        1 << (self.bits - level)
    }

    /// Checks and names the set `E(level, j)`.
    pub fn set(&self, level: u32, j: u32) -> Result<Set, SetError> {
        if level > self.bits {
            return Err(SetError::BadLevel {
                level,
                max: self.bits,
            });
        }
        let size = self.set_size(level);
        if !j.is_multiple_of(size) || j >= self.entries() {
            return Err(SetError::BadIndex {
                level,
                j,
                size,
                entries: self.entries(),
            });
        }
        Ok(Set { level, start: j })
    }

    /// The ids of a set.
    pub fn ids(&self, s: Set) -> std::ops::Range<u32> {
        s.start..s.start + self.set_size(s.level)
    }

    /// The table positions (0-based) of a set's entries, in table order.
    pub fn positions(&self, s: Set) -> Vec<u32> {
        let mut p: Vec<u32> = self.ids(s).map(|m| bit_reverse(m, self.bits)).collect();
        p.sort_unstable();
        p
    }

    /// The brother of a set (the other child of its parent); the root has none.
    pub fn brother(&self, s: Set) -> Option<Set> {
        (s.level > 0).then(|| Set {
            level: s.level,
            start: s.start ^ self.set_size(s.level),
        })
    }

    /// The set at `level` (≤ `s.level`) that contains `s`.
    pub fn ancestor(&self, s: Set, level: u32) -> Set {
        debug_assert!(level <= s.level);
        Set {
            level,
            start: s.start & !(self.set_size(level) - 1),
        }
    }

    fn range_mask(&self, s: Set) -> u64 {
        low_mask(self.set_size(s.level)) << s.start
    }

    /// Free entries.
    pub fn free_entries(&self) -> u32 {
        self.free.count_ones()
    }

    /// Whether every entry of `s` is free.
    pub fn is_free(&self, s: Set) -> bool {
        let m = self.range_mask(s);
        self.free & m == m
    }

    /// Bit masks of the free sets: element `i` has bit `j` set when `E(i, j)` is
    /// free. Folding pairs of free children from the deepest level up costs one
    /// shift and two ands per level.
    fn free_sets(&self) -> [u64; (MAX_BITS + 1) as usize] {
        let mut full = [0u64; (MAX_BITS + 1) as usize];
        let n = self.bits;
        full[n as usize] = self.free;
        for i in (0..n).rev() {
            let child = self.set_size(i + 1);
            let below = full[i as usize + 1];
            full[i as usize] = below & (below >> child) & self.aligned(self.set_size(i));
        }
        full
    }

    /// Bits at the multiples of `size` below `N`.
    fn aligned(&self, size: u32) -> u64 {
        let mut m = 0u64;
        let mut j = 0;
        while j < self.entries() {
            m |= 1 << j;
            j += size;
        }
        m
    }

    /// Bit masks of the singular sets (maximal free sets) per level.
    fn singular_masks(&self) -> [u64; (MAX_BITS + 1) as usize] {
        let full = self.free_sets();
        let mut sing = [0u64; (MAX_BITS + 1) as usize];
        sing[0] = full[0];
        for i in 1..=self.bits {
            let parent = full[i as usize - 1];
            let size = self.set_size(i);
            // A free parent covers both children: neither is maximal.
            let covered = parent | (parent << size);
            sing[i as usize] = full[i as usize] & !covered;
        }
        sing
    }

    /// The singular sets, by level then position (the free root counts).
    pub fn singular_sets(&self) -> Vec<Set> {
        let sing = self.singular_masks();
        let mut out = Vec::new();
        for level in 0..=self.bits {
            let mut m = sing[level as usize];
            while m != 0 {
                out.push(Set {
                    level,
                    start: m.trailing_zeros(),
                });
                m &= m - 1;
            }
        }
        out
    }

    /// The leftmost free set at `level`, if any.
    pub fn leftmost_free(&self, level: u32) -> Option<Set> {
        let m = self.free_sets()[level as usize];
        (m != 0).then(|| Set {
            level,
            start: m.trailing_zeros(),
        })
    }

    /// At most one singular set per level.
    pub fn is_normalized(&self) -> bool {
        self.singular_masks().iter().all(|m| m.count_ones() <= 1)
    }

    /// Every singular set lies left of every larger singular set.
    pub fn is_ordered(&self) -> bool {
        let s = self.singular_sets();
        s.iter().all(|small| {
            s.iter()
                .all(|large| large.level >= small.level || small.start < large.start)
        })
    }

    /// Whether a request at `level` finds a free set now.
    pub fn fits(&self, level: u32) -> bool {
        level <= self.bits && self.free_sets()[level as usize] != 0
    }

    /// Set swaps done so far by [`SetTable::defragment`] and [`SetTable::reorder`].
    pub fn swaps(&self) -> u64 {
        self.swaps
    }

    /// The set a placed request holds now (swaps move it).
    pub fn held(&self, h: Handle) -> Option<Set> {
        self.held.get(h.0 as usize).copied().flatten()
    }

    /// The request holding id `m`, if a tracked one does.
    pub fn holder(&self, m: u32) -> Option<Handle> {
        match self.owner.get(m as usize) {
            Some(Owner::Held(h)) => Some(Handle(*h)),
            _ => None,
        }
    }

    /// Places a request of distance `2^level` in a free set chosen by `how`.
    /// `None` when no free set of that level exists. Nothing is moved.
    pub fn insert(&mut self, level: u32, how: Insertion) -> Option<(Handle, Set)> {
        if level > self.bits {
            return None;
        }
        let s = match how {
            Insertion::Leftmost => self.leftmost_free(level)?,
            Insertion::Smart => {
                // The smallest singular set that can hold the request: levels
                // from the request's up to the root.
                let sing = self.singular_masks();
                let found = (0..=level).rev().find(|&i| sing[i as usize] != 0)?;
                Set {
                    level,
                    start: sing[found as usize].trailing_zeros(),
                }
            }
        };
        let h = match self.spare.pop() {
            Some(h) => h,
            None => {
                self.held.push(None);
                (self.held.len() - 1) as u32
            }
        };
        self.held[h as usize] = Some(s);
        self.free &= !self.range_mask(s);
        for id in self.ids(s) {
            self.owner[id as usize] = Owner::Held(h);
        }
        Some((Handle(h), s))
    }

    /// Frees the set of a placed request; returns the set it held.
    pub fn release(&mut self, h: Handle) -> Result<Set, SetError> {
        let s = self.held(h).ok_or(SetError::UnknownHandle(h.0))?;
        self.held[h.0 as usize] = None;
        self.spare.push(h.0);
        self.free |= self.range_mask(s);
        for id in self.ids(s) {
            self.owner[id as usize] = Owner::Free;
        }
        Ok(s)
    }

    /// Frees `E(level, j)` when it is wholly occupied by untracked entries or
    /// is exactly the set of one request (worked examples name sets this way).
    pub fn free_set(&mut self, level: u32, j: u32) -> Result<(), SetError> {
        let s = self.set(level, j)?;
        let first = self.owner[s.start as usize];
        let uniform = self.ids(s).all(|m| self.owner[m as usize] == first);
        match first {
            Owner::Held(h) if uniform && self.held[h as usize] == Some(s) => {
                self.release(Handle(h))?;
            }
            Owner::Filler if uniform => {
                self.free |= self.range_mask(s);
                for id in self.ids(s) {
                    self.owner[id as usize] = Owner::Free;
                }
            }
            _ => return Err(SetError::NotHeld { level, j }),
        }
        Ok(())
    }

    /// Exchanges the contents of two sets of one level (Proposition 5 of seed
    /// 002: whatever occupies one set can be served by the other just as well).
    /// Requests inside either set move with their entries.
    pub fn swap(&mut self, a: Set, b: Set) {
        debug_assert_eq!(a.level, b.level);
        if a == b {
            return;
        }
        let size = self.set_size(a.level);
        let m = low_mask(size);
        let fa = (self.free >> a.start) & m;
        let fb = (self.free >> b.start) & m;
        self.free &= !(m << a.start) & !(m << b.start);
        self.free |= (fb << a.start) | (fa << b.start);
        for t in 0..size {
            self.owner
                .swap((a.start + t) as usize, (b.start + t) as usize);
        }
        // Each request inside the moved ranges shifts by the distance between
        // them. A request never spans a swapped set: one side of every swap
        // holds a free entry, so no occupied set contains it.
        for t in 0..size {
            for (from, to) in [(a, b), (b, a)] {
                if let Owner::Held(h) = self.owner[(to.start + t) as usize] {
                    let held = self.held[h as usize].as_mut().expect("owner of a live set");
                    if held.start == from.start + t {
                        debug_assert!(held.level >= a.level, "a request spans a swapped set");
                        held.start = to.start + t;
                    }
                }
            }
        }
        self.swaps += 1;
    }

    /// Merges singular sets pairwise from `level` up to level 1 (seed 002,
    /// figure 14): while a level has two singular sets, the left one swaps with
    /// the brother of the right one, which makes the right one's parent free.
    /// Returns the swaps done.
    pub fn defragment(&mut self, level: u32) -> u32 {
        let mut swaps = 0;
        for i in (1..=level.min(self.bits)).rev() {
            loop {
                let m = self.singular_masks()[i as usize];
                if m.count_ones() < 2 {
                    break;
                }
                let left = Set {
                    level: i,
                    start: m.trailing_zeros(),
                };
                let rest = m & (m - 1);
                let right = Set {
                    level: i,
                    start: rest.trailing_zeros(),
                };
                let target = self.brother(right).expect("level ≥ 1 has brothers");
                self.swap(left, target);
                swaps += 1;
            }
        }
        swaps
    }

    /// Moves every singular set left of all larger singular sets, smallest
    /// first, like a selection sort (seed 002, figure 17): a larger set left of
    /// a smaller one swaps with the smaller one's ancestor at its own level.
    /// Returns the swaps done.
    pub fn reorder(&mut self) -> u32 {
        let mut swaps = 0;
        for k in (2..=self.bits).rev() {
            // Each singular set of level k in turn, by position; a set that
            // moved is found again at its new place, so restart after a move.
            'level: loop {
                let sing = self.singular_masks();
                let mut m = sing[k as usize];
                while m != 0 {
                    let small = Set {
                        level: k,
                        start: m.trailing_zeros(),
                    };
                    m &= m - 1;
                    // The leftmost larger singular set lying left of `small`.
                    let below = low_mask(small.start);
                    let larger = (1..k)
                        .filter_map(|i| {
                            let c = sing[i as usize] & below;
                            (c != 0).then(|| Set {
                                level: i,
                                start: c.trailing_zeros(),
                            })
                        })
                        .min_by_key(|s| s.start);
                    if let Some(large) = larger {
                        let anc = self.ancestor(small, large.level);
                        self.swap(large, anc);
                        swaps += 1;
                        continue 'level;
                    }
                }
                break;
            }
        }
        swaps
    }

    /// The singular sets as `{level: [starts]}`, the spec's notation.
    pub fn describe(&self) -> String {
        let mut out = String::from("{");
        let sets = self.singular_sets();
        for level in 0..=self.bits {
            let starts: Vec<String> = sets
                .iter()
                .filter(|s| s.level == level)
                .map(|s| s.start.to_string())
                .collect();
            if !starts.is_empty() {
                if out.len() > 1 {
                    out.push_str(", ");
                }
                out.push_str(&format!("{level}:[{}]", starts.join(",")));
            }
        }
        out.push('}');
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Singular sets as `(level, start)` pairs, sorted.
    fn singular(t: &SetTable) -> Vec<(u32, u32)> {
        let mut v: Vec<(u32, u32)> = t
            .singular_sets()
            .iter()
            .map(|s| (s.level, s.start))
            .collect();
        v.sort_unstable();
        v
    }

    #[test]
    fn bit_reversal_places_sets_evenly() {
        let t = SetTable::new(64).unwrap();
        // E(3, 8): ids 8..16, one entry every 8 positions.
        let p = t.positions(Set { level: 3, start: 8 });
        assert_eq!(p, vec![4, 12, 20, 28, 36, 44, 52, 60]);
        assert_eq!(bit_reverse(1, 6), 32);
        assert_eq!(bit_reverse(19, 6), 50);
        assert_eq!(
            t.brother(Set {
                level: 2,
                start: 16
            }),
            Some(Set { level: 2, start: 0 })
        );
    }

    #[test]
    fn sizes_other_than_powers_of_two_up_to_64_are_refused() {
        for bad in [0, 1, 3, 48, 128] {
            assert!(SetTable::new(bad).is_err(), "{bad}");
        }
        assert!(SetTable::with_free_sets(16, &[(2, 2)]).is_err());
        assert!(SetTable::with_free_sets(16, &[(2, 4), (3, 4)]).is_err());
    }

    // The worked examples of the spec, N = 16, levels 0..4.

    #[test]
    fn spec_insert_takes_the_leftmost_free_set() {
        let mut t = SetTable::with_free_sets(16, &[(3, 4), (1, 8)]).unwrap();
        let (_, s) = t.insert(2, Insertion::Leftmost).unwrap();
        assert_eq!(s, Set { level: 2, start: 8 });
        assert_eq!(singular(&t), vec![(2, 12), (3, 4)]);
        assert_eq!(t.describe(), "{2:[12], 3:[4]}");
    }

    #[test]
    fn spec_release_then_defragment() {
        let mut t = SetTable::with_free_sets(16, &[(3, 4), (2, 12)]).unwrap();
        t.free_set(2, 0).unwrap();
        assert_eq!(singular(&t), vec![(2, 0), (2, 12), (3, 4)]);
        assert!(!t.is_normalized());
        assert_eq!(t.defragment(2), 1);
        assert_eq!(singular(&t), vec![(1, 8), (3, 4)]);
        assert!(t.is_normalized());
    }

    #[test]
    fn spec_defragment_swaps_the_left_set_with_the_right_ones_brother() {
        // The swap itself is E(2,0)↔E(2,8), not some other pair with the same
        // singular levels afterwards: a request in E(2,8) ends up in E(2,0).
        let mut t = SetTable::with_free_sets(16, &[(3, 4), (1, 8)]).unwrap();
        let (h, s) = t.insert(2, Insertion::Leftmost).unwrap();
        assert_eq!(s, Set { level: 2, start: 8 });
        t.free_set(2, 0).unwrap();
        assert_eq!(t.defragment(2), 1);
        assert_eq!(t.held(h), Some(Set { level: 2, start: 0 }));
        assert_eq!(singular(&t), vec![(1, 8), (3, 4)]);
    }

    #[test]
    fn spec_reorder_moves_the_small_set_left() {
        let mut t = SetTable::with_free_sets(16, &[(2, 8), (3, 14)]).unwrap();
        assert!(!t.is_ordered());
        assert_eq!(t.reorder(), 1);
        assert_eq!(singular(&t), vec![(2, 12), (3, 10)]);
        assert!(t.is_ordered());
    }

    #[test]
    fn spec_release_then_defragment_over_two_levels() {
        let mut t = SetTable::with_free_sets(16, &[(4, 5), (3, 10)]).unwrap();
        t.free_set(4, 3).unwrap();
        assert_eq!(singular(&t), vec![(3, 10), (4, 3), (4, 5)]);
        // First swap E(4,3)↔E(4,4), giving {3:[4,10]}.
        let mut step = t.clone();
        step.swap(Set { level: 4, start: 3 }, Set { level: 4, start: 4 });
        assert_eq!(singular(&step), vec![(3, 4), (3, 10)]);
        // Then E(3,4)↔E(3,8), giving {2:[8]}.
        step.swap(Set { level: 3, start: 4 }, Set { level: 3, start: 8 });
        assert_eq!(singular(&step), vec![(2, 8)]);
        // The algorithm does exactly these two swaps.
        assert_eq!(t.defragment(4), 2);
        assert_eq!(singular(&t), vec![(2, 8)]);
    }

    #[test]
    fn spec_smart_insertion_uses_the_smallest_singular_set() {
        let mut t = SetTable::with_free_sets(16, &[(1, 0), (3, 8), (4, 15)]).unwrap();
        let mut leftmost = t.clone();
        let (_, s) = t.insert(3, Insertion::Smart).unwrap();
        assert_eq!(s, Set { level: 3, start: 8 });
        assert_eq!(singular(&t), vec![(1, 0), (4, 15)]);
        assert!(t.is_normalized());
        // Leftmost insertion would cut E(1,0) instead and lose normalization.
        let (_, s) = leftmost.insert(3, Insertion::Leftmost).unwrap();
        assert_eq!(s, Set { level: 3, start: 0 });
        assert!(!leftmost.is_normalized());
    }

    #[test]
    fn spec_fill_in_of_64_entries() {
        // Distances 45, 8, 53, 61, 60, 55, 24, 3, 9 round down to 32, 8, 32,
        // 32, 32, 32, 16, 2, 8: levels 5, 3, 5, 5, 5, 5, 4, 1, 3.
        let mut t = SetTable::new(64).unwrap();
        let wanted = [
            (45, (5, 0), 2),
            (8, (3, 8), 10),
            (53, (5, 2), 12),
            (61, (5, 4), 14),
            (60, (5, 6), 16),
            (55, (5, 16), 18),
            (24, (4, 20), 22),
            (3, (1, 32), 54),
            (9, (3, 24), 62),
        ];
        for (d, (level, start), occupied) in wanted {
            let level_of_d = 31 - u32::leading_zeros(d); // ⌊log2 d⌋
            assert_eq!(level_of_d, level, "distance {d}");
            let (_, s) = t.insert(level, Insertion::Leftmost).unwrap();
            assert_eq!(s, Set { level, start }, "distance {d}");
            assert_eq!(64 - t.free_entries(), occupied, "after distance {d}");
            assert!(t.is_normalized() && t.is_ordered());
        }
        // The two free entries are ids 18 and 19: positions 19 and 51, 1-based.
        let free: Vec<u32> = (0..64)
            .filter(|&m| t.is_free(Set { level: 6, start: m }))
            .map(|m| bit_reverse(m, 6) + 1)
            .collect();
        assert_eq!(free, vec![19, 51]);
        // They form E(5,18), a set of distance 32: one more such request fits.
        assert_eq!(singular(&t), vec![(5, 18)]);
    }

    #[test]
    fn swaps_carry_requests_along() {
        let mut t = SetTable::new(16).unwrap();
        let (a, _) = t.insert(4, Insertion::Leftmost).unwrap(); // E(4,0)
        let (b, _) = t.insert(3, Insertion::Leftmost).unwrap(); // E(3,2)
        t.swap(Set { level: 2, start: 0 }, Set { level: 2, start: 8 });
        assert_eq!(t.held(a), Some(Set { level: 4, start: 8 }));
        assert_eq!(
            t.held(b),
            Some(Set {
                level: 3,
                start: 10
            })
        );
        assert_eq!(t.holder(8), Some(a));
        assert_eq!(t.holder(0), None);
        assert_eq!(
            t.release(b).unwrap(),
            Set {
                level: 3,
                start: 10
            }
        );
        assert!(t.release(b).is_err());
    }
}
