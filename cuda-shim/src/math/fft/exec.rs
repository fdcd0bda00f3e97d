//! `cufftExec*`: checked on the client, queued on the plan's stream.

use std::os::raw::{c_int, c_void};

use rcud_proto::math::fft::{status, Call, Kind, FORWARD, INVERSE};
use rcud_proto::math::Library;

use super::{plan_state, run};

/// Checks an execution of plan `handle` by the function for `kind` and
/// queues it.
fn exec(
    handle: c_int,
    kind: Kind,
    input: *mut c_void,
    output: *mut c_void,
    direction: c_int,
) -> c_int {
    run(|| {
        let state = plan_state(handle)?;
        let geometry = state.geometry.ok_or(status::INVALID_PLAN)?;
        if geometry.kind() != Some(kind) {
            return Err(status::INVALID_TYPE);
        }
        if direction != FORWARD && direction != INVERSE {
            return Err(status::INVALID_VALUE);
        }
        let (input, output) = (input as u64, output as u64);
        if input == 0 || output == 0 {
            return Err(status::INVALID_VALUE);
        }
        let (in_layout, out_layout) = geometry
            .layouts(input == output)
            .ok_or(status::INVALID_PLAN)?;
        // Data outside the application's allocations would fault cuFFT's
        // kernels; rcud refuses before queueing anything.
        for (ptr, layout) in [(input, &in_layout), (output, &out_layout)] {
            let extent = layout.extent_bytes().ok_or(status::INVALID_SIZE)?;
            if !super::super::is_device_range(ptr, extent) {
                tracing::debug!(ptr, extent, "cuFFT data outside the device allocations");
                return Err(status::INVALID_VALUE);
            }
        }
        let call = Call::Exec {
            plan: state.id,
            kind: kind.raw(),
            input,
            output,
            direction,
        };
        super::super::enqueue(state.stream, Library::Fft, &call).map_err(|e| {
            tracing::debug!("cuFFT execution could not be queued: {e:?}");
            status::EXEC_FAILED
        })
    })
}

#[no_mangle]
pub extern "C" fn cufftExecC2C(
    plan: c_int,
    idata: *mut c_void,
    odata: *mut c_void,
    direction: c_int,
) -> c_int {
    exec(plan, Kind::C2C, idata, odata, direction)
}

#[no_mangle]
pub extern "C" fn cufftExecZ2Z(
    plan: c_int,
    idata: *mut c_void,
    odata: *mut c_void,
    direction: c_int,
) -> c_int {
    exec(plan, Kind::Z2Z, idata, odata, direction)
}

#[no_mangle]
pub extern "C" fn cufftExecR2C(plan: c_int, idata: *mut c_void, odata: *mut c_void) -> c_int {
    exec(plan, Kind::R2C, idata, odata, FORWARD)
}

#[no_mangle]
pub extern "C" fn cufftExecD2Z(plan: c_int, idata: *mut c_void, odata: *mut c_void) -> c_int {
    exec(plan, Kind::D2Z, idata, odata, FORWARD)
}

#[no_mangle]
pub extern "C" fn cufftExecC2R(plan: c_int, idata: *mut c_void, odata: *mut c_void) -> c_int {
    exec(plan, Kind::C2R, idata, odata, INVERSE)
}

#[no_mangle]
pub extern "C" fn cufftExecZ2D(plan: c_int, idata: *mut c_void, odata: *mut c_void) -> c_int {
    exec(plan, Kind::Z2D, idata, odata, INVERSE)
}

/// `cufftXtExec`: the execution function of the plan's type.
#[no_mangle]
pub extern "C" fn cufftXtExec(
    plan: c_int,
    input: *mut c_void,
    output: *mut c_void,
    direction: c_int,
) -> c_int {
    let kind = match plan_state(plan) {
        Ok(state) => state.geometry.as_ref().and_then(|g| g.kind()),
        Err(status) => return status,
    };
    match kind {
        None => status::INVALID_PLAN,
        Some(kind @ (Kind::C2C | Kind::Z2Z)) => exec(plan, kind, input, output, direction),
        Some(kind @ (Kind::R2C | Kind::D2Z)) => exec(plan, kind, input, output, FORWARD),
        Some(kind) => exec(plan, kind, input, output, INVERSE),
    }
}
