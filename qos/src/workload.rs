//! Random insertions and releases against a table, as in the evaluation of
//! seed 000 (section 5): a long run of operations, each an insertion of a
//! request of random distance or the release of a random placed request, with
//! the set swaps the management model needed.
//!
//! Seed 000 says only that the operations are "randomly distributed between
//! insertions and releases". The distance mixes are those of the fill-in
//! experiment of seed 002 (section 6.2): distances uniform in 2..=64, or with
//! probability proportional to the distance, rounded down to a power of two.

use std::fmt;
use std::str::FromStr;

use crate::manage::Model;
use crate::sets::{Handle, SetTable};

/// A small deterministic generator (SplitMix64): the same seed gives the same
/// run on every machine, with no dependency whose stream could change.
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    /// A generator started from `seed`.
    pub fn new(seed: u64) -> Self {
        Rng(seed)
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Uniform in `0..n` (`n` > 0), without modulo bias worth speaking of for
    /// the small `n` used here (Lemire's multiply-shift).
    pub fn below(&mut self, n: u64) -> u64 {
        ((self.next_u64() as u128 * n as u128) >> 64) as u64
    }

    /// True with probability `p`.
    pub fn chance(&mut self, p: f64) -> bool {
        (self.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64) < p
    }
}

/// How request distances are drawn.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DistanceMix {
    /// Uniform over `2..=N`, then rounded down to a power of two.
    Uniform,
    /// Probability proportional to the distance, over `2..=N`, rounded down.
    Proportional,
    /// Each level `1..=n` (distances 2, 4, …, N) equally likely.
    Levels,
}

impl DistanceMix {
    /// A distance (before rounding) for a table of `2^bits` entries.
    pub fn draw(self, rng: &mut Rng, bits: u32) -> u32 {
        let n = 1u64 << bits;
        match self {
            DistanceMix::Uniform => 2 + rng.below(n - 1) as u32,
            DistanceMix::Proportional => {
                // d in 2..=n with weight d: total = n(n+1)/2 - 1.
                let total = n * (n + 1) / 2 - 1;
                let mut r = rng.below(total);
                let mut d = 2;
                while r >= d {
                    r -= d;
                    d += 1;
                }
                d as u32
            }
            DistanceMix::Levels => 1 << (1 + rng.below(bits as u64) as u32),
        }
    }
}

impl fmt::Display for DistanceMix {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            DistanceMix::Uniform => "uniform",
            DistanceMix::Proportional => "proportional",
            DistanceMix::Levels => "levels",
        })
    }
}

/// A distance mix name that is not `uniform`, `proportional` or `levels`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown distance mix {0:?}: use uniform, proportional or levels")]
pub struct UnknownMix(pub String);

impl FromStr for DistanceMix {
    type Err = UnknownMix;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.to_ascii_lowercase().as_str() {
            "uniform" => Ok(DistanceMix::Uniform),
            "proportional" => Ok(DistanceMix::Proportional),
            "levels" => Ok(DistanceMix::Levels),
            _ => Err(UnknownMix(s.to_owned())),
        }
    }
}

/// `⌊log2 d⌋` for `d ≥ 1`: the level of a distance rounded down to a power of two.
pub fn level_of_distance(d: u32) -> u32 {
    31 - d.max(1).leading_zeros()
}

/// Parameters of a run.
#[derive(Debug, Clone)]
pub struct Workload {
    /// Management model.
    pub model: Model,
    /// Entries of the table (a power of two, 2 to 64).
    pub entries: u32,
    /// Probability that an operation is an insertion (when something could be
    /// released; an empty table always gets an insertion).
    pub insert_probability: f64,
    /// Distances of the requests.
    pub mix: DistanceMix,
    /// Seed of the generator.
    pub seed: u64,
}

/// One operation of a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    /// A request of this distance (before rounding).
    Insert(u32),
    /// Release of the `i`-th placed request (index into the live list).
    Release(usize),
}

/// Counters of a run.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Tally {
    /// Operations done.
    pub ops: u64,
    /// Insertions placed.
    pub inserted: u64,
    /// Insertions refused for lack of free entries.
    pub refused_full: u64,
    /// Insertions refused although enough entries were free: the theorem
    /// says a normalized table never does this, so it stays 0.
    pub refused_fragmented: u64,
    /// Releases.
    pub released: u64,
    /// Set swaps after insertions.
    pub swaps_after_insert: u64,
    /// Set swaps after releases.
    pub swaps_after_release: u64,
    /// Insertions per level (index = level).
    pub inserted_per_level: Vec<u64>,
    /// Sum over operations of the occupied entries after each (for the mean).
    pub occupied_sum: u64,
    /// Operations after which the table was not normalized.
    pub not_normalized: u64,
}

impl Tally {
    /// All swaps.
    pub fn swaps(&self) -> u64 {
        self.swaps_after_insert + self.swaps_after_release
    }

    /// Swaps per operation.
    pub fn swaps_per_op(&self) -> f64 {
        self.swaps() as f64 / self.ops.max(1) as f64
    }

    /// Mean occupied entries after an operation.
    pub fn mean_occupied(&self) -> f64 {
        self.occupied_sum as f64 / self.ops.max(1) as f64
    }
}

/// A run in progress: the table, the placed requests and the counters.
#[derive(Debug, Clone)]
pub struct Run {
    spec: Workload,
    table: SetTable,
    rng: Rng,
    live: Vec<Handle>,
    tally: Tally,
}

impl Run {
    /// An empty table set up for `spec`.
    pub fn new(spec: Workload) -> Result<Self, crate::sets::SetError> {
        let table = SetTable::new(spec.entries)?;
        let tally = Tally {
            inserted_per_level: vec![0; table.bits() as usize + 1],
            ..Tally::default()
        };
        Ok(Run {
            rng: Rng::new(spec.seed),
            spec,
            table,
            live: Vec::new(),
            tally,
        })
    }

    /// Draws the next operation.
    pub fn draw(&mut self) -> Op {
        if self.live.is_empty() || self.rng.chance(self.spec.insert_probability) {
            Op::Insert(self.spec.mix.draw(&mut self.rng, self.table.bits()))
        } else {
            Op::Release(self.rng.below(self.live.len() as u64) as usize)
        }
    }

    /// Applies one operation with the model's repairs.
    pub fn apply(&mut self, op: Op) {
        let t = &mut self.tally;
        match op {
            Op::Insert(d) => {
                let level = level_of_distance(d).min(self.table.bits());
                match self.spec.model.insert(&mut self.table, level) {
                    Some(p) => {
                        self.live.push(p.handle);
                        t.inserted += 1;
                        t.inserted_per_level[level as usize] += 1;
                        t.swaps_after_insert += p.swaps as u64;
                    }
                    None if self.table.free_entries() >= self.table.set_size(level) => {
                        t.refused_fragmented += 1
                    }
                    None => t.refused_full += 1,
                }
            }
            Op::Release(i) => {
                let h = self.live.swap_remove(i);
                let swaps = self
                    .spec
                    .model
                    .release(&mut self.table, h)
                    .expect("a live request");
                t.released += 1;
                t.swaps_after_release += swaps as u64;
            }
        }
        t.ops += 1;
        t.occupied_sum += (self.table.entries() - self.table.free_entries()) as u64;
    }

    /// Draws and applies one operation.
    pub fn step(&mut self) {
        let op = self.draw();
        self.apply(op);
    }

    /// Checks the table after the last operation (normalization) and counts a
    /// failure; cheap enough to call after every operation in tests.
    pub fn check(&mut self) -> bool {
        let ok = self.table.is_normalized();
        if !ok {
            self.tally.not_normalized += 1;
        }
        ok
    }

    /// The counters so far.
    pub fn tally(&self) -> &Tally {
        &self.tally
    }

    /// The table.
    pub fn table(&self) -> &SetTable {
        &self.table
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn distance_mixes_cover_their_range() {
        let mut rng = Rng::new(7);
        for mix in [
            DistanceMix::Uniform,
            DistanceMix::Proportional,
            DistanceMix::Levels,
        ] {
            let mut seen = [0u32; 65];
            for _ in 0..20_000 {
                let d = mix.draw(&mut rng, 6);
                assert!((2..=64).contains(&d), "{mix}: {d}");
                seen[d as usize] += 1;
            }
            match mix {
                // Proportional: 64 comes about 32 times as often as 2.
                DistanceMix::Proportional => assert!(seen[64] > 10 * seen[2]),
                DistanceMix::Uniform => assert!(seen[2] > 150 && seen[64] > 150),
                DistanceMix::Levels => assert!(seen[3] == 0 && seen[2] > 2_500),
            }
        }
        assert_eq!(level_of_distance(45), 5);
        assert_eq!(level_of_distance(64), 6);
        assert_eq!(level_of_distance(3), 1);
    }

    #[test]
    fn runs_are_deterministic_and_never_refuse_for_fragmentation() {
        for model in Model::ALL {
            let spec = Workload {
                model,
                entries: 64,
                insert_probability: 0.5,
                mix: DistanceMix::Uniform,
                seed: 42,
            };
            let mut a = Run::new(spec.clone()).unwrap();
            let mut b = Run::new(spec).unwrap();
            for _ in 0..20_000 {
                a.step();
                b.step();
                assert!(a.check(), "{model}: {}", a.table().describe());
            }
            assert_eq!(a.tally(), b.tally());
            let t = a.tally();
            assert_eq!(t.refused_fragmented, 0, "{model}");
            assert!(t.refused_full > 0 && t.released > 0, "{model}: {t:?}");
            assert_eq!(t.ops, 20_000);
            assert_eq!(t.inserted + t.refused_full + t.released, t.ops);
        }
    }
}
