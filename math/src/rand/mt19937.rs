//! MT19937 (Matsumoto and Nishimura, 1998): the 32-bit Mersenne Twister
//! with the reference `init_genrand` seeding.

const N: usize = 624;
const M: usize = 397;

/// One MT19937 generator.
#[derive(Clone)]
pub struct Mt19937 {
    mt: Box<[u32; N]>,
    index: usize,
}

impl Mt19937 {
    /// The reference seeding (`init_genrand`) with `seed`.
    pub fn new(seed: u32) -> Self {
        let mut mt = Box::new([0u32; N]);
        mt[0] = seed;
        for i in 1..N {
            let prev = mt[i - 1];
            mt[i] = 1_812_433_253u32
                .wrapping_mul(prev ^ (prev >> 30))
                .wrapping_add(i as u32);
        }
        Self { mt, index: N }
    }

    fn twist(&mut self) {
        for i in 0..N {
            let y = (self.mt[i] & 0x8000_0000) | (self.mt[(i + 1) % N] & 0x7fff_ffff);
            let mag = if y & 1 == 1 { 0x9908_b0df } else { 0 };
            self.mt[i] = self.mt[(i + M) % N] ^ (y >> 1) ^ mag;
        }
        self.index = 0;
    }

    /// The next tempered output.
    pub fn next_u32(&mut self) -> u32 {
        if self.index >= N {
            self.twist();
        }
        let mut y = self.mt[self.index];
        self.index += 1;
        y ^= y >> 11;
        y ^= (y << 7) & 0x9d2c_5680;
        y ^= (y << 15) & 0xefc6_0000;
        y ^ (y >> 18)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reference_outputs() {
        // The first output for the reference default seed 5489, and the
        // 10000th (C++11 requires it of std::mt19937).
        let mut mt = Mt19937::new(5489);
        assert_eq!(mt.next_u32(), 3_499_211_612);
        for _ in 1..9999 {
            mt.next_u32();
        }
        assert_eq!(mt.next_u32(), 4_123_659_995);
    }
}
