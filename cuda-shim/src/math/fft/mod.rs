//! cuFFT (`libcufft.so.12`).
//!
//! A plan (`cufftHandle`, a C int) is a client-side record (its stream,
//! geometry, work area and properties) naming a plan on the server, which
//! computes the transforms. The client checks what cuFFT checks before
//! launching (plan, sizes, transform type, the data inside the
//! application's device allocations), so an execution can be queued on the
//! plan's stream as one request, and answers with cuFFT's status. The CPU
//! transforms need no work area: plans report a work size of 0 and accept
//! any work area or allocation policy.

// The exported C functions are `pub` for the linker, not for Rust.
#![allow(unreachable_pub)]

mod exec;
mod plan;

use std::collections::HashMap;
use std::os::raw::c_int;
use std::sync::atomic::AtomicBool;
use std::sync::OnceLock;

use parking_lot::Mutex;
use rcud_proto::math::fft::{status, Call, Geometry};
use rcud_proto::math::Library;

/// `CUFFT_NOT_SUPPORTED`: what a function rcud does not implement returns.
pub(crate) const NOT_SUPPORTED: c_int = status::NOT_SUPPORTED;

/// The body of every generated cuFFT stub.
pub(crate) fn not_supported(name: &str, why: &str, logged: &AtomicBool) -> c_int {
    super::log_stub("cuFFT", name, why, logged);
    NOT_SUPPORTED
}

/// What the client keeps of a plan.
#[derive(Debug, Clone)]
struct PlanState {
    /// The server's id of the plan.
    id: u32,
    stream: u64,
    /// `None` until a `cufftMakePlan*` succeeded.
    geometry: Option<Geometry>,
    /// `cufftSetPlanPropertyInt64` values: hints to cuFFT's code generation
    /// that do not change results, so they are kept and reported only.
    properties: HashMap<c_int, i64>,
}

struct Plans {
    by_handle: HashMap<c_int, PlanState>,
    next_handle: c_int,
}

fn plans() -> &'static Mutex<Plans> {
    static PLANS: OnceLock<Mutex<Plans>> = OnceLock::new();
    PLANS.get_or_init(|| {
        Mutex::new(Plans {
            by_handle: HashMap::new(),
            next_handle: 1,
        })
    })
}

/// Runs an exported function's body: `Err(status)` and panics become the
/// status cuFFT returns.
fn run(body: impl FnOnce() -> Result<(), c_int>) -> c_int {
    super::guard(status::INTERNAL_ERROR, || match body() {
        Ok(()) => status::SUCCESS,
        Err(status) => status,
    })
}

/// A copy of plan `handle`'s state, or `CUFFT_INVALID_PLAN`.
fn plan_state(handle: c_int) -> Result<PlanState, c_int> {
    plans()
        .lock()
        .by_handle
        .get(&handle)
        .cloned()
        .ok_or(status::INVALID_PLAN)
}

fn update(handle: c_int, f: impl FnOnce(&mut PlanState)) -> Result<(), c_int> {
    let mut plans = plans().lock();
    let state = plans
        .by_handle
        .get_mut(&handle)
        .ok_or(status::INVALID_PLAN)?;
    f(state);
    Ok(())
}

/// Runs `call` on the device of `stream` after its queued work, answering
/// its output or cuFFT's status.
fn call(stream: u64, call: &Call) -> Result<Vec<u8>, c_int> {
    match super::call(stream, Library::Fft, call) {
        Ok(reply) if reply.status == status::SUCCESS => Ok(reply.out),
        Ok(reply) => Err(reply.status),
        Err(e) => {
            tracing::debug!("cuFFT call failed: {e:?}");
            Err(status::EXEC_FAILED)
        }
    }
}

/// Writes a result through a host pointer the application passed; NULL is
/// `CUFFT_INVALID_VALUE`.
fn write_host<T>(ptr: *mut T, value: T) -> Result<(), c_int> {
    if ptr.is_null() {
        return Err(status::INVALID_VALUE);
    }
    // SAFETY: cuFFT's contract: a result pointer is valid for a write of
    // its type; NULL was rejected.
    unsafe { ptr.write_unaligned(value) };
    Ok(())
}

/// Writes an optional result (a work size the application may not want).
fn write_optional<T>(ptr: *mut T, value: T) {
    if !ptr.is_null() {
        // SAFETY: as in `write_host`; NULL means "not wanted" here.
        unsafe { ptr.write_unaligned(value) };
    }
}

/// Reads the `len` values of an array argument (`n`, `inembed`, ...).
fn read_array<T: Copy + Into<i64>>(ptr: *const T, len: usize) -> Result<Vec<i64>, c_int> {
    if ptr.is_null() {
        return Err(status::INVALID_VALUE);
    }
    (0..len)
        .map(|i| {
            // SAFETY: cuFFT's contract: an array argument holds `rank`
            // values; NULL was rejected and `len` is the checked rank.
            Ok(unsafe { ptr.add(i).read_unaligned() }.into())
        })
        .collect()
}
