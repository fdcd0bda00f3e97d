//! `mbarrier` objects: split arrive/wait barriers in shared memory
//! (`cuda::barrier`, `cuda::pipeline`, `cp.async.mbarrier.arrive`).
//!
//! The 8-byte object, little endian:
//!
//! | bits  | field                                                 |
//! |-------|-------------------------------------------------------|
//! | 0–20  | pending arrivals of the current phase                 |
//! | 21–41 | expected arrivals of each phase (lowered by `arrive_drop`) |
//! | 42–62 | tx-count, 21-bit two's complement                     |
//! | 63    | phase parity                                          |
//!
//! A phase completes when its pending count and tx-count are both zero:
//! the parity flips, pending is reloaded from expected, tx-count cleared.
//! The state token `arrive` returns is the object just after the arrival,
//! before any completion, so its bit 63 names the phase it arrived on and
//! `test_wait(state)` is true once the parity differs. PTX leaves
//! overflow and underflow undefined; here counts saturate (an arrival on a
//! phase with nothing pending completes it) and never panic.
//!
//! A block's warps run on one host thread, so each lane's operation is a
//! plain read-modify-write of shared memory, lane after lane.

use super::{decode, get, lanes_of, pset, set_lane, ExcKind, Mem, Res};
use crate::ptx::ir::{MbarOp, Msp, NONE, R};

const COUNT_BITS: u32 = 21;
const COUNT_MASK: u64 = (1 << COUNT_BITS) - 1;
/// Largest arrival count PTX allows (2^20 - 1).
const MAX_COUNT: u64 = (1 << 20) - 1;
const EXPECTED_SHIFT: u32 = COUNT_BITS;
const TX_SHIFT: u32 = 2 * COUNT_BITS;
const TX_MIN: i64 = -(1 << 20);
const TX_MAX: i64 = (1 << 20) - 1;
const PHASE_BIT: u64 = 1 << 63;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Mbar {
    pub(crate) pending: u64,
    pub(crate) expected: u64,
    pub(crate) tx: i64,
    pub(crate) phase: bool,
}

impl Mbar {
    pub(crate) fn decode(v: u64) -> Mbar {
        let tx = ((v >> TX_SHIFT) & COUNT_MASK) as i64;
        Mbar {
            pending: v & COUNT_MASK,
            expected: (v >> EXPECTED_SHIFT) & COUNT_MASK,
            // Sign-extend the 21-bit field.
            tx: (tx << (64 - COUNT_BITS)) >> (64 - COUNT_BITS),
            phase: v & PHASE_BIT != 0,
        }
    }

    pub(crate) fn encode(self) -> u64 {
        (self.pending & COUNT_MASK)
            | (self.expected & COUNT_MASK) << EXPECTED_SHIFT
            | ((self.tx as u64) & COUNT_MASK) << TX_SHIFT
            | if self.phase { PHASE_BIT } else { 0 }
    }

    pub(crate) fn init(count: u64) -> Mbar {
        // Counts outside PTX's 1..2^20-1 are undefined: clamp them.
        let c = count.clamp(1, MAX_COUNT);
        Mbar {
            pending: c,
            expected: c,
            tx: 0,
            phase: false,
        }
    }

    fn add_tx(&mut self, tx: i64) {
        self.tx = self.tx.saturating_add(tx).clamp(TX_MIN, TX_MAX);
    }

    fn complete_if_done(&mut self) {
        if self.pending == 0 && self.tx == 0 {
            self.phase = !self.phase;
            self.pending = self.expected;
        }
    }

    /// An arrive-on of `count` arrivals (after `arrive_drop`'s lowering of
    /// the expected count); returns the state token.
    pub(crate) fn arrive(&mut self, count: u64, drop: bool) -> u64 {
        let count = count.min(MAX_COUNT);
        if drop {
            self.expected = self.expected.saturating_sub(count);
        }
        self.pending = self.pending.saturating_sub(count);
        let token = self.encode();
        // `.noComplete` arrivals must not complete the phase; if one does
        // anyway (undefined), completing it is the choice that cannot hang.
        self.complete_if_done();
        token
    }
}

/// Whether the phase `state` (a token from arrive) or, with `parity`, the
/// phase of parity `b & 1`, has completed.
fn phase_done(obj: u64, b: u64, parity: bool) -> bool {
    let cur = obj & PHASE_BIT != 0;
    let waited = if parity {
        b & 1 != 0
    } else {
        b & PHASE_BIT != 0
    };
    cur != waited
}

/// Executes an `Op::Mbar` for lanes `m`. Returns true when a wait found its
/// phase incomplete in some lane: the warp then ends its time slice so that
/// the block's other warps can arrive.
#[allow(clippy::too_many_arguments)]
pub(super) fn exec(
    op: MbarOp,
    sp: Msp,
    d: u32,
    base: R,
    off: i64,
    b: R,
    r: &mut [u64],
    p: &mut [u32],
    m: u32,
    mem: &mut Mem<'_, '_, '_>,
) -> Res<bool> {
    let bv = if b == NONE { [1u64; 32] } else { get(r, b) };
    if op == MbarOp::PendingCount {
        for l in lanes_of(m) {
            set_lane(r, d, l, Mbar::decode(bv[l]).pending);
        }
        return Ok(false);
    }
    let av = if base == NONE {
        [0u64; 32]
    } else {
        get(r, base)
    };
    if let MbarOp::BulkCopy { src } = op {
        let dv = get(r, d);
        for l in lanes_of(m) {
            let (dst, from, n) = (dv[l], av[l].wrapping_add(off as u64), bv[l] as u32);
            if n % 16 != 0 || dst % 16 != 0 || from % 16 != 0 {
                return Err(mem.fault(sp, dst, 16, l));
            }
            // Word by word: the first word out of bounds faults, so a huge
            // size costs no more than the memory that is there.
            for k in (0..u64::from(n)).step_by(4) {
                let v = mem.load(src, from.wrapping_add(k), 4, l)?;
                mem.store(sp, dst.wrapping_add(k), 4, v, l)?;
            }
        }
        return Ok(false);
    }
    let mut failed = 0u32;
    for l in lanes_of(m) {
        let mut addr = av[l].wrapping_add(off as u64);
        if sp == Msp::Generic {
            // The object lives in shared memory; a generic address
            // elsewhere is an illegal access, as on the hardware.
            let (s, a) = decode(addr);
            if s != Msp::Shared {
                return Err(super::Exc::mem(ExcKind::Illegal, l, addr, 8, sp));
            }
            addr = a;
        }
        let v = mem.load(Msp::Shared, addr, 8, l)?;
        let mut o = Mbar::decode(v);
        let new = match op {
            MbarOp::Init => Mbar::init(bv[l] as u32 as u64).encode(),
            MbarOp::Inval => 0,
            MbarOp::Arrive { drop, expect_tx } => {
                let count = if expect_tx {
                    o.add_tx(bv[l] as u32 as i64);
                    1
                } else {
                    bv[l] as u32 as u64
                };
                let token = o.arrive(count, drop);
                if d != NONE {
                    set_lane(r, d, l, token);
                }
                o.encode()
            }
            MbarOp::ExpectTx => {
                // A copy may have completed its bytes before they were
                // expected (libcu++ issues the copy first).
                o.add_tx(bv[l] as u32 as i64);
                o.complete_if_done();
                o.encode()
            }
            MbarOp::CompleteTx => {
                o.add_tx(-(bv[l] as u32 as i64));
                o.complete_if_done();
                o.encode()
            }
            MbarOp::CpAsyncArrive { noinc } => {
                // Copies complete when issued, so the arrive-on happens now.
                // Without `.noinc` the pending count is raised by one first,
                // which that arrival takes back: no change.
                if noinc {
                    o.arrive(1, false);
                }
                o.encode()
            }
            MbarOp::Wait { parity } => {
                if !phase_done(v, bv[l], parity) {
                    failed |= 1 << l;
                }
                continue;
            }
            MbarOp::PendingCount | MbarOp::BulkCopy { .. } => continue,
        };
        mem.store(Msp::Shared, addr, 8, new, l)?;
    }
    if let MbarOp::Wait { .. } = op {
        pset(p, d, m, !failed);
    }
    Ok(failed != 0)
}

/// The 16 numbered barriers of a block as `bar.sync a, b` and
/// `bar.arrive a, b` use them: threads arrived in the current generation.
#[derive(Debug, Clone, Default)]
pub(crate) struct NamedBars {
    arrived: [u32; 16],
    gen: [u32; 16],
}

impl NamedBars {
    pub(crate) fn gen(&self, id: u8) -> u32 {
        self.gen[usize::from(id & 15)]
    }
}

/// `arrivals` threads arrive at barrier `id` expecting `count` threads.
/// Returns the generation to wait for, or `None` when this arrival
/// completed the barrier (and released its waiters). Ids past 15 wrap and
/// a count of 0 completes at once: undefined in PTX, harmless here.
pub(crate) fn named_arrive(
    bars: &mut NamedBars,
    id: u64,
    count: u64,
    arrivals: u32,
) -> Option<u32> {
    let i = (id & 15) as usize;
    let a = bars.arrived[i].saturating_add(arrivals);
    if u64::from(a) >= count {
        bars.arrived[i] = 0;
        bars.gen[i] = bars.gen[i].wrapping_add(1);
        None
    } else {
        bars.arrived[i] = a;
        Some(bars.gen[i])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encoding_round_trips() {
        for o in [
            Mbar::init(1),
            Mbar::init(MAX_COUNT),
            Mbar {
                pending: 3,
                expected: 7,
                tx: -5,
                phase: true,
            },
            Mbar {
                pending: 0,
                expected: 0,
                tx: TX_MAX,
                phase: false,
            },
        ] {
            assert_eq!(Mbar::decode(o.encode()), o);
        }
    }

    #[test]
    fn phases_tokens_drop_and_saturation() {
        let mut o = Mbar::init(2);
        let t0 = o.arrive(1, false);
        assert!(!phase_done(o.encode(), t0, false));
        assert_eq!(Mbar::decode(t0).pending, 1);
        let t1 = o.arrive(1, false);
        assert!(phase_done(o.encode(), t0, false) && phase_done(o.encode(), t1, false));
        assert!(phase_done(o.encode(), 0, true) && !phase_done(o.encode(), 1, true));
        assert_eq!((o.pending, o.phase), (2, true));
        // Drop: this phase and later ones expect one arrival fewer.
        o.arrive(1, true);
        assert_eq!((o.pending, o.expected, o.phase), (1, 1, true));
        // Too many arrivals complete the phase, never underflow.
        o.arrive(1000, false);
        assert_eq!((o.pending, o.phase), (1, false));
        // A phase with tx outstanding waits for it.
        o.add_tx(64);
        o.arrive(1, false);
        assert_eq!((o.pending, o.tx, o.phase), (0, 64, false));
        o.add_tx(-64);
        o.complete_if_done();
        assert_eq!((o.pending, o.tx, o.phase), (1, 0, true));
        // Zero and huge counts are clamped.
        assert_eq!(Mbar::init(0).expected, 1);
        assert_eq!(Mbar::init(u64::MAX).expected, MAX_COUNT);
    }
}
