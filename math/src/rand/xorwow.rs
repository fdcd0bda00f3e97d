//! Marsaglia's xorwow ("Xorshift RNGs", 2003) as cuRAND defines it in
//! `curand_kernel.h`: a 160-bit xorshift state plus a Weyl sequence `d`,
//! seeded with cuRAND's salts, subsequences 2^67 values apart.

use std::sync::OnceLock;

use super::Engine;

/// Increment of the Weyl sequence per value.
const WEYL: u32 = 362_437;
/// Log2 of the distance between subsequences.
const SUBSEQUENCE_SHIFT: u32 = 67;
/// Enough powers of the step matrix for 2^64 offsets and 2^12 subsequences.
const POWERS: usize = 80;

/// One xorwow generator.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Xorwow {
    v: [u32; 5],
    d: u32,
}

/// A GF(2)-linear map of the 160-bit state, as the images of its 160 unit
/// vectors.
type Matrix = Vec<[u32; 5]>;

impl Xorwow {
    /// The state `curand_init(seed, 0, 0)` sets.
    fn seeded(seed: u64) -> Self {
        let t0 = 1_099_087_573u32.wrapping_mul(seed as u32 ^ 0xaad2_6b49);
        let t1 = 2_591_861_531u32.wrapping_mul((seed >> 32) as u32 ^ 0xf7dc_efdd);
        Self {
            d: 6_615_241u32.wrapping_add(t1).wrapping_add(t0),
            v: [
                123_456_789u32.wrapping_add(t0),
                362_436_069 ^ t0,
                521_288_629u32.wrapping_add(t1),
                88_675_123 ^ t1,
                5_783_321u32.wrapping_add(t0),
            ],
        }
    }

    /// The xorshift part of one step (without the Weyl sequence).
    fn shift(v: &mut [u32; 5]) {
        let t = v[0] ^ (v[0] >> 2);
        v.copy_within(1..5, 0);
        v[4] = (v[4] ^ (v[4] << 4)) ^ (t ^ (t << 1));
    }

    /// Advances the state by `n` values (n < 2^80) with the matrix powers.
    fn skip(&mut self, n: u128) {
        let powers = powers();
        let mut bits = n;
        let mut i = 0;
        while bits != 0 {
            if bits & 1 == 1 {
                self.v = apply(&powers[i], &self.v);
            }
            bits >>= 1;
            i += 1;
        }
        // 362437 * 2^67 * s vanishes mod 2^32: only the low bits count.
        self.d = self.d.wrapping_add(WEYL.wrapping_mul(n as u32));
    }
}

impl Engine for Xorwow {
    fn at(seed: u64, subsequence: u64, position: u64) -> Self {
        let mut x = Self::seeded(seed);
        x.skip(((subsequence as u128) << SUBSEQUENCE_SHIFT) + position as u128);
        x
    }

    fn next(&mut self) -> u32 {
        Self::shift(&mut self.v);
        self.d = self.d.wrapping_add(WEYL);
        self.v[4].wrapping_add(self.d)
    }
}

/// `m` applied to `v`.
fn apply(m: &Matrix, v: &[u32; 5]) -> [u32; 5] {
    let mut out = [0u32; 5];
    for (bit, image) in m.iter().enumerate() {
        if v[bit / 32] >> (bit % 32) & 1 == 1 {
            for (o, x) in out.iter_mut().zip(image) {
                *o ^= x;
            }
        }
    }
    out
}

/// The step matrix raised to 2^i, for i < [`POWERS`].
fn powers() -> &'static [Matrix] {
    static POWERS_OF_STEP: OnceLock<Vec<Matrix>> = OnceLock::new();
    POWERS_OF_STEP.get_or_init(|| {
        let step: Matrix = (0..160)
            .map(|bit| {
                let mut v = [0u32; 5];
                v[bit / 32] = 1 << (bit % 32);
                Xorwow::shift(&mut v);
                v
            })
            .collect();
        let mut all = Vec::with_capacity(POWERS);
        all.push(step);
        while all.len() < POWERS {
            let last = &all[all.len() - 1];
            let squared = last.iter().map(|image| apply(last, image)).collect();
            all.push(squared);
        }
        all
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn skip_matches_stepping() {
        let mut stepped = Xorwow::at(1234, 0, 0);
        for _ in 0..1000 {
            stepped.next();
        }
        assert_eq!(Xorwow::at(1234, 0, 1000), stepped);
    }

    #[test]
    fn marsaglia_recurrence_with_curand_seeding() {
        // curand_init(0, 0, 0): the salted state, then xorwow steps.
        let mut x = Xorwow::at(0, 0, 0);
        let t0 = 1_099_087_573u32.wrapping_mul(0xaad2_6b49);
        let t1 = 2_591_861_531u32.wrapping_mul(0xf7dc_efdd);
        let mut v = [
            123_456_789u32.wrapping_add(t0),
            362_436_069 ^ t0,
            521_288_629u32.wrapping_add(t1),
            88_675_123 ^ t1,
            5_783_321u32.wrapping_add(t0),
        ];
        let mut d = 6_615_241u32.wrapping_add(t1).wrapping_add(t0);
        for _ in 0..100 {
            let t = v[0] ^ (v[0] >> 2);
            v = [
                v[1],
                v[2],
                v[3],
                v[4],
                (v[4] ^ (v[4] << 4)) ^ (t ^ (t << 1)),
            ];
            d = d.wrapping_add(362_437);
            assert_eq!(x.next(), v[4].wrapping_add(d));
        }
    }

    #[test]
    fn subsequence_is_two_to_the_67_values() {
        // 2^67 = (2^64) * 8: skipping 2^64 eight times reaches subsequence 1.
        let mut x = Xorwow::at(99, 0, 0);
        for _ in 0..8 {
            x.skip(1u128 << 64);
        }
        assert_eq!(x, Xorwow::at(99, 1, 0));
    }
}
