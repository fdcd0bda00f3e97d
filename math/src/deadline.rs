//! The time one library call may take on the emulated device.
//!
//! A call's work is not bounded by the memory it touches: a getrf, an
//! eigensolver or a GEMM does O(n³) work on O(n²) bytes, so one request of
//! a few bytes naming a large matrix could hold a server thread for hours.
//! [`within`] runs a call under the device's deadline; the numerical loops
//! ask [`passed`] once per column or sweep (work of at most O(n²) between
//! questions) and stop early when it says so. Whatever they computed then is
//! discarded: `within` answers [`Expired`] if any loop saw the deadline, so
//! a result cut short can never pass for a finished one.
//!
//! The deadline is thread-local rather than a parameter so that the pure
//! numerical routines keep their signatures; outside `within` (unit tests,
//! the client library's host-side functions) there is none.

use std::cell::Cell;
use std::time::Instant;

thread_local! {
    static DEADLINE: Cell<Option<Instant>> = const { Cell::new(None) };
    static TRIPPED: Cell<bool> = const { Cell::new(false) };
}

/// The call ran past its deadline and its results were cut short.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("the call ran past its deadline")]
pub struct Expired;

/// Runs `f` with `deadline` in force on this thread (`None`: no limit).
/// Scopes nest; the inner one ends with its own deadline restored to the
/// outer.
pub fn within<T>(deadline: Option<Instant>, f: impl FnOnce() -> T) -> Result<T, Expired> {
    /// Puts the outer scope back, also when `f` unwinds.
    struct Restore {
        deadline: Option<Instant>,
        tripped: bool,
    }
    impl Drop for Restore {
        fn drop(&mut self) {
            DEADLINE.with(|d| d.set(self.deadline));
            TRIPPED.with(|t| t.set(self.tripped));
        }
    }
    let _outer = Restore {
        deadline: DEADLINE.with(|d| d.replace(deadline)),
        tripped: TRIPPED.with(|t| t.replace(false)),
    };
    let value = f();
    if TRIPPED.with(Cell::get) {
        Err(Expired)
    } else {
        Ok(value)
    }
}

/// Whether the current call has run out of time. Loops that ask must stop
/// soon after a `true`; the answer stays `true` for the rest of the call.
pub fn passed() -> bool {
    if TRIPPED.with(Cell::get) {
        return true;
    }
    let late = DEADLINE
        .with(Cell::get)
        .is_some_and(|d| Instant::now() >= d);
    if late {
        TRIPPED.with(|t| t.set(true));
    }
    late
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn no_deadline_never_passes() {
        assert!(!passed());
        assert_eq!(within(None, passed), Ok(false));
    }

    #[test]
    fn a_past_deadline_discards_the_result() {
        let past = Instant::now();
        assert_eq!(within(Some(past), || 7), Ok(7), "nobody asked");
        assert_eq!(within(Some(past), passed), Err(Expired));
        assert!(!passed(), "the scope ended");
    }

    #[test]
    fn scopes_nest() {
        let far = Instant::now() + Duration::from_secs(3600);
        let outer = within(Some(far), || {
            let inner = within(Some(Instant::now()), passed);
            (inner, passed())
        });
        assert_eq!(outer, Ok((Err(Expired), false)));
    }
}
