//! Philox4x32-10 (Salmon, Moraes, Dror, Shaw, "Parallel random numbers: as
//! easy as 1, 2, 3", SC 2011) as cuRAND uses it: key = seed, a 128-bit
//! counter whose high 64 bits are the subsequence, four values per counter.

use super::Engine;

const M0: u32 = 0xD251_1F53;
const M1: u32 = 0xCD9E_8D57;
const W0: u32 = 0x9E37_79B9;
const W1: u32 = 0xBB67_AE85;

/// The ten-round Philox bijection of counter `c` under key `k`.
pub fn philox4x32_10(mut c: [u32; 4], mut k: [u32; 2]) -> [u32; 4] {
    for round in 0..10 {
        if round > 0 {
            k[0] = k[0].wrapping_add(W0);
            k[1] = k[1].wrapping_add(W1);
        }
        let p0 = u64::from(M0) * u64::from(c[0]);
        let p1 = u64::from(M1) * u64::from(c[2]);
        c = [
            (p1 >> 32) as u32 ^ c[1] ^ k[0],
            p1 as u32,
            (p0 >> 32) as u32 ^ c[3] ^ k[1],
            p0 as u32,
        ];
    }
    c
}

/// One Philox stream: the counter of the current block of four, the block,
/// and the index of the next value in it.
#[derive(Debug, Clone)]
pub struct Philox {
    key: [u32; 2],
    counter: u128,
    block: [u32; 4],
    index: usize,
}

impl Philox {
    fn words(counter: u128) -> [u32; 4] {
        [
            counter as u32,
            (counter >> 32) as u32,
            (counter >> 64) as u32,
            (counter >> 96) as u32,
        ]
    }
}

impl Engine for Philox {
    fn at(seed: u64, subsequence: u64, position: u64) -> Self {
        let key = [seed as u32, (seed >> 32) as u32];
        let counter = (u128::from(subsequence) << 64).wrapping_add(u128::from(position / 4));
        Self {
            key,
            counter,
            block: philox4x32_10(Self::words(counter), key),
            index: (position % 4) as usize,
        }
    }

    fn next(&mut self) -> u32 {
        let value = self.block[self.index];
        self.index += 1;
        if self.index == 4 {
            self.counter = self.counter.wrapping_add(1);
            self.block = philox4x32_10(Self::words(self.counter), self.key);
            self.index = 0;
        }
        value
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Known-answer vectors of Random123 (`kat_vectors`, philox4x32 10 rounds).
    #[test]
    fn random123_known_answers() {
        assert_eq!(
            philox4x32_10([0; 4], [0; 2]),
            [0x6627_e8d5, 0xe169_c58d, 0xbc57_ac4c, 0x9b00_dbd8]
        );
        assert_eq!(
            philox4x32_10([u32::MAX; 4], [u32::MAX; 2]),
            [0x408f_276d, 0x41c8_3b0e, 0xa20b_c7c6, 0x6d54_51fd]
        );
        assert_eq!(
            philox4x32_10(
                [0x243f_6a88, 0x85a3_08d3, 0x1319_8a2e, 0x0370_7344],
                [0xa409_3822, 0x299f_31d0]
            ),
            [0xd16c_fe09, 0x94fd_cceb, 0x5001_e420, 0x2412_6ea1]
        );
    }

    #[test]
    fn positions_are_counter_and_index() {
        let mut p = Philox::at(7, 3, 0);
        let first: Vec<u32> = (0..10).map(|_| p.next()).collect();
        let mut q = Philox::at(7, 3, 6);
        assert_eq!(q.next(), first[6]);
        assert_eq!(q.next(), first[7]);
        let block = philox4x32_10([0, 0, 3, 0], [7, 0]);
        assert_eq!(&first[..4], &block);
    }
}
