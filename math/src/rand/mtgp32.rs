//! MTGP32 (Saito and Matsumoto, "Variants of Mersenne Twister Suitable for
//! Graphic Processors", 2013) with the parameter sets and seeding cuRAND
//! uses, and the order its host API hands out the values of its blocks.
//!
//! One parameter set drives one block: a linear recurrence over a state of
//! 351 words (Mersenne exponent 11213), `x[k+351] = rec(x[k], x[k+1],
//! x[k+pos])`, each new word tempered with `x[k+pos-1]`. A GPU block's 256
//! threads compute 256 consecutive words at once; they depend only on words
//! at least 95 places back, so computing them one after the other gives the
//! same sequence.
//!
//! NVIDIA's host API (checked against its library in
//! `math/tests/curand_oracle.rs`) runs `B` blocks, 192 in the `BEST` and
//! `DEFAULT` orderings ([`HOST_BLOCKS`]) and 64 in `LEGACY`
//! ([`LEGACY_BLOCKS`]), block `b` with parameter set `b`, seeded
//! `mtgp32_init_state(seed32 + b + 1)` where `seed32` is the low word of
//! `seed ^ (seed >> 32)`. Value `v` (counted across calls) is in chunk
//! `c = ⌊v/256⌋`, which block `c mod B` produces as its `⌊c/B⌋`-th run of
//! 256 values. Offsets are refused.

#[rustfmt::skip]
#[path = "generated/mtgp32_params.rs"]
mod params;

/// One parameter set (`mtgp32_params_fast_t`, without the fields the host
/// API does not use).
pub struct Params {
    /// Pick-up position of the recurrence.
    pub pos: u32,
    /// Left shift of the recurrence.
    pub sh1: u32,
    /// Right shift of the recurrence.
    pub sh2: u32,
    /// The recurrence's 16-entry matrix table.
    pub tbl: [u32; 16],
    /// The tempering table.
    pub tmp_tbl: [u32; 16],
}

/// Words of state (`MTGPDC_N`, ⌊11213/32⌋ + 1).
const N: usize = 351;
/// The ring the state lives in (`MTGP32_STATE_SIZE`), a power of two above N.
const RING: usize = 1024;
/// Values one block produces per turn (`THREAD_NUM`).
pub const CHUNK: u64 = 256;
/// Blocks NVIDIA's host API runs in its `BEST` and `DEFAULT` orderings.
pub const HOST_BLOCKS: u64 = 192;
/// Blocks NVIDIA's host API runs in its `LEGACY` ordering.
pub const LEGACY_BLOCKS: u64 = 64;

/// One MTGP32 block: its parameter set and state.
pub struct Block {
    params: &'static Params,
    ring: Box<[u32; RING]>,
    /// Ring index of the oldest state word.
    start: usize,
}

impl Block {
    /// Block `index` (its parameter set) seeded as `mtgp32_init_state`
    /// does with `seed`: the reference MT seeding over words prefilled with
    /// a byte of the parameter set's hidden seed.
    ///
    /// # Panics
    /// If `index` is not below the 200 parameter sets.
    pub fn new(index: usize, seed: u32) -> Self {
        let params = &params::PARAMS[index];
        let hidden = params.tbl[4] ^ (params.tbl[8] << 16);
        let mut fill = hidden;
        fill = fill.wrapping_add(fill >> 16);
        fill = fill.wrapping_add(fill >> 8);
        let mut ring = Box::new([u32::from_ne_bytes([fill as u8; 4]); RING]);
        ring[0] = seed;
        ring[1] = hidden;
        for i in 1..N {
            let prev = ring[i - 1];
            ring[i] ^= 1_812_433_253u32
                .wrapping_mul(prev ^ (prev >> 30))
                .wrapping_add(i as u32);
        }
        Self {
            params,
            ring,
            start: 0,
        }
    }

    /// The next value (`curand` of the device API, one thread at a time).
    pub fn next_u32(&mut self) -> u32 {
        let p = self.params;
        let pos = p.pos as usize;
        let at = |k: usize| (self.start + k) % RING;
        let mut x = (self.ring[at(0)] & params::MASK) ^ self.ring[at(1)];
        x ^= x << p.sh1;
        let y = x ^ (self.ring[at(pos)] >> p.sh2);
        let r = y ^ p.tbl[(y & 0x0f) as usize];
        self.ring[at(N)] = r;
        let mut t = self.ring[at(pos - 1)];
        t ^= t >> 16;
        t ^= t >> 8;
        self.start = at(1);
        r ^ p.tmp_tbl[(t & 0x0f) as usize]
    }
}

/// MTGP32 as NVIDIA's host API lays it out (see the module documentation).
pub struct HostMtgp32 {
    seed: u32,
    /// Values handed out so far.
    next: u64,
    blocks: Vec<Option<Block>>,
}

impl HostMtgp32 {
    /// The generator `curandSetPseudoRandomGeneratorSeed(seed)` sets, with
    /// `blocks` blocks ([`HOST_BLOCKS`] or [`LEGACY_BLOCKS`]).
    pub fn new(seed: u64, blocks: u64) -> Self {
        Self {
            seed: (seed ^ (seed >> 32)) as u32,
            next: 0,
            blocks: (0..blocks.min(200)).map(|_| None).collect(),
        }
    }

    /// The next value in the host API's order.
    pub fn next_u32(&mut self) -> u32 {
        let b = (self.next / CHUNK % self.blocks.len() as u64) as usize;
        self.next += 1;
        let seed = self.seed.wrapping_add(b as u32 + 1);
        // Each block's values are taken in its own order, so the block just
        // steps on.
        self.blocks[b]
            .get_or_insert_with(|| Block::new(b, seed))
            .next_u32()
    }
}
