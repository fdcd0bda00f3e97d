//! Sobol's quasi-random sequences with cuRAND's direction numbers
//! (`CURAND_DIRECTION_VECTORS_32_JOEKUO6`/`_64_JOEKUO6`): Joe and Kuo's
//! `new-joe-kuo-6.21201` for dimensions 2 to 20,000, van der Corput's
//! sequence for dimension 1.
//!
//! Point `n` of a dimension is the XOR of the direction vectors `v_k` for
//! the set bits `k` of `n`'s Gray code `n ^ (n >> 1)` (as `curand_init`
//! with an offset and `curand` for `curandStateSobol32_t` compute it). The
//! host API lays out a call of `n` values over `d` dimensions
//! dimension-major: `n/d` consecutive points of dimension 1, then of
//! dimension 2, ...; offsets and successive calls count points.

use std::sync::OnceLock;

/// Dimensions cuRAND's direction-vector sets have.
pub const MAX_DIMENSIONS: u32 = 20_000;

/// One dimension's primitive polynomial and initial direction numbers.
struct Numbers {
    /// Degree `s`.
    degree: u32,
    /// The polynomial's inner coefficients, `a` of Joe and Kuo's file.
    a: u32,
    /// `m_1 ... m_s`.
    m: Vec<u64>,
}

/// The direction numbers of dimensions 2 to 20,000, from the generated
/// data file (format in `scripts/gen-curand-tables.py`).
fn numbers() -> &'static [Numbers] {
    static NUMBERS: OnceLock<Vec<Numbers>> = OnceLock::new();
    NUMBERS.get_or_init(|| {
        include_str!("generated/joe_kuo_6.txt")
            .lines()
            .filter(|line| !line.starts_with('#'))
            .map(|line| {
                let mut digits = line.bytes().map(|c| u64::from(c.wrapping_sub(b'0') & 0x3f));
                let degree = digits.next().unwrap_or(0) as u32;
                // The remaining digits as one bit string, read from the top.
                let mut bits = digits.flat_map(|d| (0..6).rev().map(move |k| (d >> k) & 1));
                let mut read =
                    |count: u32| (0..count).fold(0u64, |x, _| (x << 1) | bits.next().unwrap_or(0));
                let a = read(degree.saturating_sub(1)) as u32;
                let m = (1..=degree).map(|i| (read(i - 1) << 1) | 1).collect();
                Numbers { degree, a, m }
            })
            .collect()
    })
}

/// The `BITS` direction vectors (`BITS` 32 or 64) of `dimension` (0-based),
/// as `curandGetDirectionVectors32/64` answers them.
///
/// # Panics
/// If `dimension` is not below [`MAX_DIMENSIONS`].
pub fn direction_vectors<const BITS: usize>(dimension: u32) -> [u64; BITS] {
    let mut v = [0u64; BITS];
    if dimension == 0 {
        for (k, x) in v.iter_mut().enumerate() {
            *x = 1 << (BITS - 1 - k);
        }
        return v;
    }
    let n = &numbers()[dimension as usize - 1];
    let s = n.degree as usize;
    for k in 0..BITS {
        v[k] = if k < s {
            n.m[k] << (BITS - 1 - k)
        } else {
            // Bratley and Fox's recurrence: the polynomial's taps on the
            // previous vectors.
            let mut x = v[k - s] ^ (v[k - s] >> s);
            for j in 1..s {
                if (n.a >> (s - 1 - j)) & 1 == 1 {
                    x ^= v[k - j];
                }
            }
            x
        };
    }
    v
}

/// One dimension's points from a position on, in order.
pub struct Points<const BITS: usize> {
    vectors: [u64; BITS],
    /// The index of the next point.
    index: u64,
    /// The next point.
    x: u64,
}

impl<const BITS: usize> Points<BITS> {
    /// Dimension `dimension` (0-based) from point `index` on.
    pub fn new(dimension: u32, index: u64) -> Self {
        let vectors = direction_vectors::<BITS>(dimension);
        let gray = index ^ (index >> 1);
        let x = (0..BITS)
            .filter(|&k| (gray >> k) & 1 == 1)
            .fold(0, |x, k| x ^ vectors[k]);
        Self { vectors, index, x }
    }

    /// The next point.
    pub fn next_point(&mut self) -> u64 {
        let x = self.x;
        // Gray code order: the next point differs in the vector of the
        // lowest zero bit of the index.
        let k = (!self.index).trailing_zeros() as usize;
        self.x ^= self.vectors[k.min(BITS - 1)];
        self.index += 1;
        x
    }
}
