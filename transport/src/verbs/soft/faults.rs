//! Fault injection of the `soft` provider: asynchronous events on demand.
//!
//! Two ways, both process-wide:
//! - [`inject`] delivers an [`AsyncEvent`] to every soft context of this
//!   process now, as an adapter would (in-process tests);
//! - a fault knob, [`set_fault`] or the environment variable
//!   [`FAULT_ENV`] (`RCUD_SOFT_RDMA_FAULT`, read when the first soft context
//!   opens, so that an end-to-end test can arm it in another process), fires
//!   once on the N-th SEND or RDMA WRITE this process posts:
//!   - `qp-fatal-after-sends:N`: that queue pair fails, as on a
//!     [`AsyncEvent::QpFatal`] event;
//!   - `port-error-after-sends:N`: every queue pair of its context fails, as
//!     on [`AsyncEvent::PortError`] of port 1.
//!
//!   The list of work requests holding the N-th one is not posted: it fails
//!   with [`VerbsError::LinkDown`](crate::verbs::VerbsError::LinkDown).
//!
//! Either way the queue pairs concerned go to the error state, and their
//! peers see them broken too (as when a peer process dies). An unset knob
//! costs the post path one relaxed atomic load.

use std::fmt;
use std::str::FromStr;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock, Weak};

use thiserror::Error;

use super::{lock, QpCore};
use crate::verbs::{AsyncEvent, EventHub, VerbsError};

/// The environment variable of the fault knob.
pub const FAULT_ENV: &str = "RCUD_SOFT_RDMA_FAULT";

/// The only port of the soft device.
pub(crate) const SOFT_PORT: u8 = 1;

/// What the fault knob does when it fires.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FaultKind {
    /// The queue pair that posted fails (`qp-fatal`).
    QpFatal,
    /// Every queue pair of its context fails (`port-error`).
    PortError,
}

/// A fault to fire on the `after_sends`-th SEND or RDMA WRITE posted by this
/// process from the moment it is armed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Fault {
    /// What happens.
    pub kind: FaultKind,
    /// Which send fires it (1 = the next one).
    pub after_sends: u64,
}

/// A fault specification that does not parse.
#[derive(Debug, Clone, Error, PartialEq, Eq)]
#[error(
    "invalid soft RDMA fault {spec:?}: {why} (expected qp-fatal-after-sends:N or \
     port-error-after-sends:N with N ≥ 1)"
)]
pub struct FaultParseError {
    /// What was given.
    pub spec: String,
    /// What is wrong with it.
    pub why: &'static str,
}

impl FromStr for Fault {
    type Err = FaultParseError;

    fn from_str(spec: &str) -> Result<Fault, FaultParseError> {
        let err = |why| FaultParseError {
            spec: spec.to_owned(),
            why,
        };
        let (name, n) = spec.trim().split_once(':').ok_or(err("no ':N'"))?;
        let kind = match name {
            "qp-fatal-after-sends" => FaultKind::QpFatal,
            "port-error-after-sends" => FaultKind::PortError,
            _ => return Err(err("unknown fault")),
        };
        let after_sends: u64 = n.parse().map_err(|_| err("N is not a number"))?;
        if after_sends == 0 {
            return Err(err("N must be at least 1"));
        }
        Ok(Fault { kind, after_sends })
    }
}

impl fmt::Display for Fault {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let name = match self.kind {
            FaultKind::QpFatal => "qp-fatal-after-sends",
            FaultKind::PortError => "port-error-after-sends",
        };
        write!(f, "{name}:{}", self.after_sends)
    }
}

/// The knob from a value of [`FAULT_ENV`]: `None` when unset or empty.
pub fn parse_env(value: Option<&str>) -> Result<Option<Fault>, FaultParseError> {
    match value.map(str::trim) {
        None | Some("") => Ok(None),
        Some(v) => v.parse().map(Some),
    }
}

/// Whether a fault is armed: the only thing the post path reads when not.
static ARMED: AtomicBool = AtomicBool::new(false);
/// Sends posted since the fault was armed.
static SENDS: AtomicU64 = AtomicU64::new(0);
static FAULT: Mutex<Option<Fault>> = Mutex::new(None);

/// Arms the fault knob (`None` disarms it); sends are counted from now.
pub fn set_fault(fault: Option<Fault>) {
    let mut g = lock(&FAULT);
    *g = fault;
    SENDS.store(0, Ordering::Relaxed);
    ARMED.store(fault.is_some(), Ordering::Release);
    if let Some(f) = fault {
        tracing::info!("soft verbs: fault armed: {f}");
    }
}

/// The armed fault, if any (it disarms itself when it fires).
pub fn fault() -> Option<Fault> {
    *lock(&FAULT)
}

/// Reads [`FAULT_ENV`] once per process and arms the knob; a bad value is
/// an error for every soft context opened.
pub(crate) fn init_from_env() -> Result<(), VerbsError> {
    static ENV: OnceLock<Result<(), FaultParseError>> = OnceLock::new();
    ENV.get_or_init(|| {
        let v = std::env::var(FAULT_ENV).ok();
        let fault = parse_env(v.as_deref())?;
        if fault.is_some() {
            set_fault(fault);
        }
        Ok(())
    })
    .clone()
    .map_err(|e| VerbsError::InvalidArgument(format!("{FAULT_ENV}: {e}")))
}

/// Counts `n` sends about to be posted; the fault to fire if the armed one's
/// send is among them. Called only when [`armed`] says so.
pub(crate) fn count_sends(n: u64) -> Option<FaultKind> {
    let mut g = lock(&FAULT);
    let f = (*g)?;
    let before = SENDS.fetch_add(n, Ordering::Relaxed);
    if before < f.after_sends && before + n >= f.after_sends {
        *g = None;
        ARMED.store(false, Ordering::Release);
        tracing::info!("soft verbs: fault fires: {f}");
        return Some(f.kind);
    }
    None
}

/// Whether a fault is armed (one relaxed load).
#[inline]
pub(crate) fn armed() -> bool {
    ARMED.load(Ordering::Relaxed)
}

/// What a context shares with its queue pairs: the queue pairs an event
/// reaches, and the subscribers to its events.
#[derive(Default)]
pub(crate) struct CtxShared {
    qps: Mutex<Vec<Weak<QpCore>>>,
    pub(crate) hub: EventHub,
}

impl CtxShared {
    /// A new context's share, listed for [`inject`].
    pub(crate) fn register() -> Arc<CtxShared> {
        let ctx = Arc::new(CtxShared::default());
        let mut all = lock(contexts());
        all.retain(|w| w.strong_count() > 0);
        all.push(Arc::downgrade(&ctx));
        ctx
    }

    pub(super) fn add_qp(&self, qp: &Arc<QpCore>) {
        let mut qps = lock(&self.qps);
        qps.retain(|w| w.strong_count() > 0);
        qps.push(Arc::downgrade(qp));
    }

    /// Marks the queue pairs `event` concerns down, then delivers it;
    /// returns how many were marked.
    pub(crate) fn apply(&self, event: AsyncEvent) -> usize {
        let hit: Vec<Arc<QpCore>> = lock(&self.qps)
            .iter()
            .filter_map(Weak::upgrade)
            .filter(|qp| match event {
                AsyncEvent::PortError { port } => port == SOFT_PORT,
                AsyncEvent::DeviceFatal => true,
                AsyncEvent::QpFatal { qp_num } => qp.num == qp_num,
                _ => false,
            })
            .collect();
        let mut marked = 0;
        for qp in &hit {
            if qp.mark_down(event) {
                marked += 1;
            }
        }
        if event.is_fatal() {
            tracing::warn!(queue_pairs = marked, "soft verbs: {event}");
        } else {
            tracing::info!("soft verbs: {event}");
        }
        self.hub.publish(event);
        marked
    }
}

fn contexts() -> &'static Mutex<Vec<Weak<CtxShared>>> {
    static ALL: Mutex<Vec<Weak<CtxShared>>> = Mutex::new(Vec::new());
    &ALL
}

/// Delivers `event` to every soft context of this process, as an adapter
/// would: [`AsyncEvent::PortError`] of port 1 and [`AsyncEvent::DeviceFatal`]
/// mark every queue pair down, [`AsyncEvent::QpFatal`] the one of that
/// number; the other events are only delivered to the subscribers
/// ([`Context::subscribe_events`](crate::verbs::Context::subscribe_events)).
/// Returns how many queue pairs were marked down.
pub fn inject(event: AsyncEvent) -> usize {
    let live: Vec<Arc<CtxShared>> = lock(contexts()).iter().filter_map(Weak::upgrade).collect();
    live.iter().map(|c| c.apply(event)).sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn knob_parses_and_rejects_garbage() {
        assert_eq!(
            "qp-fatal-after-sends:3".parse::<Fault>(),
            Ok(Fault {
                kind: FaultKind::QpFatal,
                after_sends: 3
            })
        );
        assert_eq!(
            parse_env(Some(" port-error-after-sends:1 ")),
            Ok(Some(Fault {
                kind: FaultKind::PortError,
                after_sends: 1
            }))
        );
        assert_eq!(parse_env(None), Ok(None));
        assert_eq!(parse_env(Some("")), Ok(None));
        for bad in [
            "qp-fatal",
            "qp-fatal-after-sends:",
            "qp-fatal-after-sends:0",
            "qp-fatal-after-sends:-1",
            "qp-fatal-after-sends:x",
            "lid-change-after-sends:2",
            ":5",
            "port-error-after-sends:99999999999999999999999",
        ] {
            let e = parse_env(Some(bad)).unwrap_err();
            assert!(
                e.to_string().contains("expected qp-fatal-after-sends:N"),
                "{e}"
            );
        }
        let f = Fault {
            kind: FaultKind::PortError,
            after_sends: 7,
        };
        assert_eq!(f.to_string().parse::<Fault>(), Ok(f));
    }
}
