//! L'Ecuyer's MRG32k3a ("Good parameters and implementations for combined
//! multiple recursive random number generators", 1999) as cuRAND defines
//! it in `curand_kernel.h`: two order-3 recurrences modulo m1 and m2,
//! seeded from 12345 with cuRAND's salts, subsequences 2^76 values apart.

use std::sync::OnceLock;

use super::Engine;

const M1: u64 = 4_294_967_087;
const M2: u64 = 4_294_944_443;
const A12: u64 = 1_403_580;
const A13N: u64 = 810_728;
const A21: u64 = 527_612;
const A23N: u64 = 1_370_589;
/// Log2 of the distance between subsequences.
const SUBSEQUENCE_SHIFT: u32 = 76;
/// Enough powers for 2^64 offsets and 2^17 subsequences (81920 streams).
const POWERS: usize = 96;

/// 1/m1 as cuRAND scales a draw to (0, 1] (`MRG32K3A_NORM`).
pub(super) const NORM: f64 = 2.328306549837829e-10;
/// cuRAND's scale of a draw to 32 bits (`MRG32K3A_BITS_NORM`).
pub(super) const BITS_NORM: f64 = 1.000_000_048_662;

type Matrix = [[u64; 3]; 3];

/// One MRG32k3a generator.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mrg32k3a {
    s1: [u64; 3],
    s2: [u64; 3],
}

impl Mrg32k3a {
    /// The next draw of the combined generator, in (0, m1] (`curand_MRG32k3a`).
    pub fn draw(&mut self) -> f64 {
        let p1 = (A12 * self.s1[1] + A13N * (M1 - self.s1[0])) % M1;
        self.s1 = [self.s1[1], self.s1[2], p1];
        let p2 = (A21 * self.s2[2] + A23N * (M2 - self.s2[0])) % M2;
        self.s2 = [self.s2[1], self.s2[2], p2];
        if p1 <= p2 {
            (p1 + M1 - p2) as f64
        } else {
            (p1 - p2) as f64
        }
    }

    fn skip(&mut self, n: u128) {
        let (p1, p2) = powers();
        let mut bits = n;
        let mut i = 0;
        while bits != 0 {
            if bits & 1 == 1 {
                self.s1 = mat_vec(&p1[i], &self.s1, M1);
                self.s2 = mat_vec(&p2[i], &self.s2, M2);
            }
            bits >>= 1;
            i += 1;
        }
    }
}

impl Engine for Mrg32k3a {
    fn at(seed: u64, subsequence: u64, position: u64) -> Self {
        let mut g = Self {
            s1: [12345; 3],
            s2: [12345; 3],
        };
        if seed != 0 {
            let x1 = u64::from(seed as u32 ^ 0x5555_5555);
            let x2 = u64::from((seed >> 32) as u32 ^ 0xAAAA_AAAA);
            g.s1 = [x1 * 12345 % M1, x2 * 12345 % M1, x1 * 12345 % M1];
            g.s2 = [x2 * 12345 % M2, x1 * 12345 % M2, x2 * 12345 % M2];
        }
        g.skip((u128::from(subsequence) << SUBSEQUENCE_SHIFT) + u128::from(position));
        g
    }

    /// `curand(state)`: the draw scaled to 32 bits.
    fn next(&mut self) -> u32 {
        (self.draw() * BITS_NORM) as u32
    }
}

fn mat_vec(a: &Matrix, v: &[u64; 3], m: u64) -> [u64; 3] {
    std::array::from_fn(|r| {
        let sum: u128 = (0..3).map(|k| u128::from(a[r][k]) * u128::from(v[k])).sum();
        (sum % u128::from(m)) as u64
    })
}

fn mat_mul(a: &Matrix, b: &Matrix, m: u64) -> Matrix {
    std::array::from_fn(|r| {
        std::array::from_fn(|c| {
            let sum: u128 = (0..3)
                .map(|k| u128::from(a[r][k]) * u128::from(b[k][c]))
                .sum();
            (sum % u128::from(m)) as u64
        })
    })
}

/// The two recurrences' step matrices raised to 2^i, for i < [`POWERS`].
fn powers() -> &'static (Vec<Matrix>, Vec<Matrix>) {
    static POWERS_OF_STEP: OnceLock<(Vec<Matrix>, Vec<Matrix>)> = OnceLock::new();
    POWERS_OF_STEP.get_or_init(|| {
        let series = |step: Matrix, m: u64| {
            let mut all = vec![step];
            while all.len() < POWERS {
                let last = all[all.len() - 1];
                all.push(mat_mul(&last, &last, m));
            }
            all
        };
        (
            series([[0, 1, 0], [0, 0, 1], [M1 - A13N, A12, 0]], M1),
            series([[0, 1, 0], [0, 0, 1], [M2 - A23N, 0, A21]], M2),
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lecuyer_reference_start() {
        // L'Ecuyer's reference seeds all six values with 12345 (cuRAND's
        // seed 0). By his recurrences: p1 = 592852·12345 mod m1 =
        // 3023790853, p2 = -842977·12345 mod m2 = 2478282264, and the
        // output p1 - p2 = 545508589 (0.1270111220 with norm 1/(m1+1)).
        let mut g = Mrg32k3a::at(0, 0, 0);
        assert_eq!(g.draw(), 545_508_589.0);
    }

    #[test]
    fn skip_matches_stepping() {
        let mut g = Mrg32k3a::at(77, 0, 0);
        for _ in 0..500 {
            g.draw();
        }
        assert_eq!(Mrg32k3a::at(77, 0, 500), g);
    }

    #[test]
    fn subsequence_step_is_curands_first_table_entry() {
        // curand_mrg32k3a.h: mrg32k3aM1SubSeq[0] = A1^(2^76), first row.
        let (p1, _) = powers();
        assert_eq!(p1[76][0], [82_758_667, 1_871_391_091, 4_127_413_238]);
    }
}
