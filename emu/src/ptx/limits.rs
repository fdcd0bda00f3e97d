//! Bounds on the memory and time that parsing and translating one PTX
//! module may take: PTX comes from clients, and a few kilobytes of
//! compressed text can inflate to a gigabyte.
//!
//! The front end charges what it keeps (syntax trees, IR, tables) to a
//! [`Budget`] as it builds it, at estimates of their heap size, and stops
//! with an error as soon as the budget or the deadline is passed, before
//! the allocation that would pass it is made.

use std::cell::Cell;
use std::time::{Duration, Instant};

use super::PtxError;

/// Longest PTX text [`super::Module::parse`] accepts by default (256 MiB):
/// far more than the largest real modules (tens of megabytes for NVIDIA's
/// and CuPy's libraries).
pub const MAX_PTX_TEXT: usize = 256 << 20;

/// Heap bytes the front end may hold per byte of PTX text by default.
/// Real PTX takes 2 to 4 (one instruction of 20 to 40 bytes of text becomes
/// an IR instruction of 48 bytes and its share of tables); degenerate text
/// such as `ret;ret;ret;...` would take about 12.
pub const BYTES_PER_TEXT_BYTE: u64 = 8;

/// Heap bytes the front end may always hold, however short the text (64 MiB).
pub const MIN_BUDGET: u64 = 64 << 20;

/// Default time parsing and translating one module may take: far above
/// what the largest real modules need (a few seconds).
pub const PARSE_TIMEOUT: Duration = Duration::from_secs(60);

/// Deepest nesting of `{ }` blocks in a function body (nvcc nests two or
/// three deep; every level is a scope the translator searches).
pub const MAX_BLOCK_NESTING: u32 = 64;

/// Largest `N` of a `.reg .b32 %r<N>` declaration (2^24). Registers are
/// made when used, so a large `N` costs nothing by itself; this bounds
/// declarations that are surely not real.
pub const MAX_REG_RANGE: u64 = 1 << 24;

/// Most value slots (registers, constants and temporaries) of one function:
/// a warp holds 32 lanes × 8 bytes of each, and a warp's call chain may
/// hold 4M values (32 MiB) in all.
pub const MAX_FUNC_SLOTS: u32 = 1 << 17;

/// Most IR instructions of one function (2^24).
pub const MAX_FUNC_INSTS: usize = 1 << 24;

/// Bounds on one [`super::Module::parse_with_limits`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParseLimits {
    /// Longest text accepted, in bytes.
    pub max_text: usize,
    /// Heap bytes the parser and translator may hold: the larger of
    /// `min_bytes` and `bytes_per_text_byte` × the text's length.
    pub bytes_per_text_byte: u64,
    /// See `bytes_per_text_byte`.
    pub min_bytes: u64,
    /// Wall-clock time parsing and translating may take.
    pub timeout: Duration,
}

impl Default for ParseLimits {
    fn default() -> Self {
        ParseLimits {
            max_text: MAX_PTX_TEXT,
            bytes_per_text_byte: BYTES_PER_TEXT_BYTE,
            min_bytes: MIN_BUDGET,
            timeout: PARSE_TIMEOUT,
        }
    }
}

impl ParseLimits {
    /// Heap bytes the front end may hold for `text_len` bytes of text.
    pub fn budget_for(&self, text_len: usize) -> u64 {
        self.min_bytes
            .max(self.bytes_per_text_byte.saturating_mul(text_len as u64))
    }
}

/// Steps between two looks at the clock.
const TICKS_PER_CHECK: u32 = 1 << 12;

/// What the front end holds, against its limit and deadline. Shared (by
/// reference) by the parser and the translator, which work by turns.
#[derive(Debug)]
pub(crate) struct Budget {
    used: Cell<u64>,
    peak: Cell<u64>,
    limit: u64,
    deadline: Option<Instant>,
    timeout: Duration,
    ticks: Cell<u32>,
}

impl Budget {
    pub(crate) fn new(limit: u64, timeout: Duration) -> Self {
        Budget {
            used: Cell::new(0),
            peak: Cell::new(0),
            limit,
            deadline: Instant::now().checked_add(timeout),
            timeout,
            ticks: Cell::new(0),
        }
    }

    /// A budget without bounds (for tests of the parts).
    #[cfg(test)]
    pub(crate) fn unlimited() -> Self {
        Budget::new(u64::MAX, Duration::from_secs(3600))
    }

    /// Takes `bytes` (an estimate of what is about to be kept), or fails
    /// without taking them; also looks at the clock now and then.
    pub(crate) fn charge(&self, bytes: u64, line: u32) -> Result<(), PtxError> {
        let used = self.used.get().saturating_add(bytes);
        if used > self.limit {
            return Err(PtxError::limit(
                line,
                format!(
                    "the module needs more than the {} of memory the emulator gives a module of this size",
                    human(self.limit)
                ),
            ));
        }
        self.used.set(used);
        self.peak.set(self.peak.get().max(used));
        self.tick(line)
    }

    /// Gives back `bytes` of what was charged (what was kept has been freed).
    pub(crate) fn refund(&self, bytes: u64) {
        self.used.set(self.used.get().saturating_sub(bytes));
    }

    /// One step of work: fails once the deadline has passed.
    pub(crate) fn tick(&self, line: u32) -> Result<(), PtxError> {
        let ticks = self.ticks.get().wrapping_add(1);
        self.ticks.set(ticks);
        if !ticks.is_multiple_of(TICKS_PER_CHECK) {
            return Ok(());
        }
        match self.deadline {
            Some(d) if Instant::now() >= d => Err(PtxError::limit(
                line,
                format!(
                    "parsing and translating the module takes longer than {:?}",
                    self.timeout
                ),
            )),
            _ => Ok(()),
        }
    }

    /// Bytes charged now.
    pub(crate) fn used(&self) -> u64 {
        self.used.get()
    }

    /// Most bytes charged at any time.
    pub(crate) fn peak(&self) -> u64 {
        self.peak.get()
    }
}

/// `bytes` for a message: in MiB from 1 MiB.
fn human(bytes: u64) -> String {
    if bytes >= 1 << 20 {
        format!("{} MiB", bytes >> 20)
    } else {
        format!("{bytes} bytes")
    }
}

/// Estimated heap bytes of an owned copy of `s` (its bytes and the
/// allocator's rounding and header).
pub(crate) fn str_bytes(s: &str) -> u64 {
    if s.is_empty() {
        0
    } else {
        (s.len() as u64).next_multiple_of(16) + 16
    }
}

/// Estimated heap bytes of `n` elements of `T` in a `Vec` or `Box`.
pub(crate) fn vec_bytes<T>(n: usize) -> u64 {
    (n as u64).saturating_mul(std::mem::size_of::<T>() as u64)
}

/// Estimated bytes of one entry of a `HashMap<K, V>` (the entry, its
/// control byte, and the table's spare room at 7/8 load).
pub(crate) fn map_entry_bytes<K, V>() -> u64 {
    ((std::mem::size_of::<(K, V)>() + 1) as u64) * 8 / 7 + 1
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn charges_stop_at_the_limit_and_refunds_make_room() {
        let b = Budget::new(1000, Duration::from_secs(60));
        b.charge(600, 1).unwrap();
        let e = b.charge(600, 7).unwrap_err();
        assert_eq!(e.line(), 7);
        assert!(e.is_limit() && e.to_string().contains("memory"), "{e}");
        assert_eq!(b.used(), 600, "a refused charge takes nothing");
        b.refund(600);
        b.charge(1000, 1).unwrap();
        assert_eq!((b.used(), b.peak()), (1000, 1000));
        assert!(b.charge(u64::MAX, 1).is_err());
    }

    #[test]
    fn the_deadline_is_checked_while_working() {
        let b = Budget::new(u64::MAX, Duration::ZERO);
        let e = (0..2 * TICKS_PER_CHECK)
            .find_map(|_| b.tick(3).err())
            .unwrap();
        assert!(e.is_limit() && e.to_string().contains("longer than"), "{e}");
    }

    #[test]
    fn budgets_grow_with_the_text() {
        let l = ParseLimits::default();
        assert_eq!(l.budget_for(10), MIN_BUDGET);
        assert_eq!(l.budget_for(100 << 20), 800 << 20);
        assert!(str_bytes("a") >= 17 && str_bytes("") == 0);
        assert!(map_entry_bytes::<u64, u64>() > 16);
    }
}
