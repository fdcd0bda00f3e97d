//! Plans: creation, geometry, sizes, stream, work area, properties.

use std::collections::HashMap;
use std::os::raw::{c_int, c_longlong, c_void};

use rcud_proto::math::fft::{status, Advanced, Call, Geometry, Kind};

use super::{
    call, plan_state, plans, read_array, run, update, write_host, write_optional, PlanState,
};

/// The work area the CPU transforms need: none.
const WORK_SIZE: usize = 0;

/// The version rcud's cuFFT reports: that of the headers it follows
/// (cuFFT 12.5.0, `CUFFT_VERSION`).
const VERSION: (c_int, c_int, c_int) = (12, 5, 0);

/// `libraryPropertyType`: `MAJOR_VERSION`, `MINOR_VERSION`, `PATCH_LEVEL`.
const MAJOR_VERSION: c_int = 0;
const MINOR_VERSION: c_int = 1;
const PATCH_LEVEL: c_int = 2;

/// `NVFFT_PLAN_PROPERTY_INT64_*`: PATIENT_JIT .. DISABLE_FMA.
const PROPERTIES: std::ops::RangeInclusive<c_int> = 1..=4;

fn basic(kind: c_int, n: &[c_int], batch: c_int) -> Geometry {
    Geometry {
        kind,
        n: n.iter().map(|&n| i64::from(n)).collect(),
        batch: i64::from(batch),
        advanced: None,
    }
}

/// The geometry of a `cufftPlanMany`-style call; a NULL `inembed` or
/// `onembed` selects the basic layout, ignoring strides and distances.
#[allow(clippy::too_many_arguments)]
fn many<T: Copy + Into<i64>>(
    rank: c_int,
    n: *const T,
    inembed: *const T,
    istride: i64,
    idist: i64,
    onembed: *const T,
    ostride: i64,
    odist: i64,
    kind: c_int,
    batch: i64,
) -> Result<Geometry, c_int> {
    // A rank other than 1, 2 or 3 is an invalid value (cuFFT 12 on an
    // H200), not an invalid size.
    if !(1..=3).contains(&rank) {
        return Err(status::INVALID_VALUE);
    }
    let rank = rank as usize;
    let n = read_array(n, rank)?;
    let advanced = if inembed.is_null() || onembed.is_null() {
        None
    } else {
        Some(Advanced {
            inembed: read_array(inembed, rank)?,
            istride,
            idist,
            onembed: read_array(onembed, rank)?,
            ostride,
            odist,
        })
    };
    Ok(Geometry {
        kind,
        n,
        batch,
        advanced,
    })
}

/// Creates a plan on the server and its client record.
fn create() -> Result<c_int, c_int> {
    let out = call(0, &Call::Create {})?;
    let id = u32::from_le_bytes(out.try_into().map_err(|_| status::INTERNAL_ERROR)?);
    let mut plans = plans().lock();
    let handle = plans.next_handle;
    plans.next_handle = plans.next_handle.checked_add(1).unwrap_or(1);
    plans.by_handle.insert(
        handle,
        PlanState {
            id,
            stream: 0,
            geometry: None,
            properties: HashMap::new(),
        },
    );
    Ok(handle)
}

fn destroy(handle: c_int) -> Result<(), c_int> {
    let state = plans()
        .lock()
        .by_handle
        .remove(&handle)
        .ok_or(status::INVALID_PLAN)?;
    // After the plan's queued executions, as cuFFT frees a plan's memory.
    call(state.stream, &Call::Destroy { plan: state.id }).map(drop)
}

/// Gives plan `handle` its geometry (`cufftMakePlan*`).
fn make(handle: c_int, geometry: Geometry, work_size: *mut usize) -> Result<(), c_int> {
    let state = plan_state(handle)?;
    geometry.check()?;
    call(
        state.stream,
        &Call::MakePlan {
            plan: state.id,
            geometry: geometry.clone(),
        },
    )?;
    update(handle, |s| s.geometry = Some(geometry))?;
    write_optional(work_size, WORK_SIZE);
    Ok(())
}

/// `cufftPlan*`: a new plan made with `geometry`, written to `out`.
fn plan_new(out: *mut c_int, geometry: Result<Geometry, c_int>) -> Result<(), c_int> {
    if out.is_null() {
        return Err(status::INVALID_VALUE);
    }
    let geometry = geometry?;
    geometry.check()?;
    let handle = create()?;
    if let Err(status) = make(handle, geometry, std::ptr::null_mut()) {
        // The application gets no plan; the failure is what it sees.
        let _ = destroy(handle);
        return Err(status);
    }
    write_host(out, handle)
}

/// `cufftEstimate*` and `cufftGetSize*`: the work size `geometry` needs.
fn size_of(
    handle: Option<c_int>,
    geometry: Result<Geometry, c_int>,
    work_size: *mut usize,
) -> c_int {
    run(|| {
        if let Some(handle) = handle {
            plan_state(handle)?;
        }
        geometry?.check()?;
        write_host(work_size, WORK_SIZE)
    })
}

#[no_mangle]
pub extern "C" fn cufftCreate(handle: *mut c_int) -> c_int {
    run(|| {
        if handle.is_null() {
            return Err(status::INVALID_VALUE);
        }
        let new = create()?;
        write_host(handle, new)
    })
}

#[no_mangle]
pub extern "C" fn cufftDestroy(plan: c_int) -> c_int {
    run(|| destroy(plan))
}

#[no_mangle]
pub extern "C" fn cufftPlan1d(plan: *mut c_int, nx: c_int, kind: c_int, batch: c_int) -> c_int {
    run(|| plan_new(plan, Ok(basic(kind, &[nx], batch))))
}

#[no_mangle]
pub extern "C" fn cufftPlan2d(plan: *mut c_int, nx: c_int, ny: c_int, kind: c_int) -> c_int {
    run(|| plan_new(plan, Ok(basic(kind, &[nx, ny], 1))))
}

#[no_mangle]
pub extern "C" fn cufftPlan3d(
    plan: *mut c_int,
    nx: c_int,
    ny: c_int,
    nz: c_int,
    kind: c_int,
) -> c_int {
    run(|| plan_new(plan, Ok(basic(kind, &[nx, ny, nz], 1))))
}

#[no_mangle]
#[allow(clippy::too_many_arguments)]
pub extern "C" fn cufftPlanMany(
    plan: *mut c_int,
    rank: c_int,
    n: *mut c_int,
    inembed: *mut c_int,
    istride: c_int,
    idist: c_int,
    onembed: *mut c_int,
    ostride: c_int,
    odist: c_int,
    kind: c_int,
    batch: c_int,
) -> c_int {
    run(|| {
        let geometry = many(
            rank,
            n,
            inembed,
            istride.into(),
            idist.into(),
            onembed,
            ostride.into(),
            odist.into(),
            kind,
            batch.into(),
        );
        plan_new(plan, geometry)
    })
}

#[no_mangle]
pub extern "C" fn cufftMakePlan1d(
    plan: c_int,
    nx: c_int,
    kind: c_int,
    batch: c_int,
    work_size: *mut usize,
) -> c_int {
    run(|| make(plan, basic(kind, &[nx], batch), work_size))
}

#[no_mangle]
pub extern "C" fn cufftMakePlan2d(
    plan: c_int,
    nx: c_int,
    ny: c_int,
    kind: c_int,
    work_size: *mut usize,
) -> c_int {
    run(|| make(plan, basic(kind, &[nx, ny], 1), work_size))
}

#[no_mangle]
pub extern "C" fn cufftMakePlan3d(
    plan: c_int,
    nx: c_int,
    ny: c_int,
    nz: c_int,
    kind: c_int,
    work_size: *mut usize,
) -> c_int {
    run(|| make(plan, basic(kind, &[nx, ny, nz], 1), work_size))
}

#[no_mangle]
#[allow(clippy::too_many_arguments)]
pub extern "C" fn cufftMakePlanMany(
    plan: c_int,
    rank: c_int,
    n: *mut c_int,
    inembed: *mut c_int,
    istride: c_int,
    idist: c_int,
    onembed: *mut c_int,
    ostride: c_int,
    odist: c_int,
    kind: c_int,
    batch: c_int,
    work_size: *mut usize,
) -> c_int {
    run(|| {
        plan_state(plan)?;
        let geometry = many(
            rank,
            n,
            inembed,
            istride.into(),
            idist.into(),
            onembed,
            ostride.into(),
            odist.into(),
            kind,
            batch.into(),
        )?;
        make(plan, geometry, work_size)
    })
}

#[no_mangle]
#[allow(clippy::too_many_arguments)]
pub extern "C" fn cufftMakePlanMany64(
    plan: c_int,
    rank: c_int,
    n: *mut c_longlong,
    inembed: *mut c_longlong,
    istride: c_longlong,
    idist: c_longlong,
    onembed: *mut c_longlong,
    ostride: c_longlong,
    odist: c_longlong,
    kind: c_int,
    batch: c_longlong,
    work_size: *mut usize,
) -> c_int {
    run(|| {
        plan_state(plan)?;
        let geometry = many(
            rank, n, inembed, istride, idist, onembed, ostride, odist, kind, batch,
        )?;
        make(plan, geometry, work_size)
    })
}

#[no_mangle]
pub extern "C" fn cufftEstimate1d(
    nx: c_int,
    kind: c_int,
    batch: c_int,
    work_size: *mut usize,
) -> c_int {
    size_of(None, Ok(basic(kind, &[nx], batch)), work_size)
}

#[no_mangle]
pub extern "C" fn cufftEstimate2d(
    nx: c_int,
    ny: c_int,
    kind: c_int,
    work_size: *mut usize,
) -> c_int {
    size_of(None, Ok(basic(kind, &[nx, ny], 1)), work_size)
}

#[no_mangle]
pub extern "C" fn cufftEstimate3d(
    nx: c_int,
    ny: c_int,
    nz: c_int,
    kind: c_int,
    work_size: *mut usize,
) -> c_int {
    size_of(None, Ok(basic(kind, &[nx, ny, nz], 1)), work_size)
}

#[no_mangle]
#[allow(clippy::too_many_arguments)]
pub extern "C" fn cufftEstimateMany(
    rank: c_int,
    n: *mut c_int,
    inembed: *mut c_int,
    istride: c_int,
    idist: c_int,
    onembed: *mut c_int,
    ostride: c_int,
    odist: c_int,
    kind: c_int,
    batch: c_int,
    work_size: *mut usize,
) -> c_int {
    let geometry = many(
        rank,
        n,
        inembed,
        istride.into(),
        idist.into(),
        onembed,
        ostride.into(),
        odist.into(),
        kind,
        batch.into(),
    );
    size_of(None, geometry, work_size)
}

#[no_mangle]
pub extern "C" fn cufftGetSize1d(
    plan: c_int,
    nx: c_int,
    kind: c_int,
    batch: c_int,
    work_size: *mut usize,
) -> c_int {
    size_of(Some(plan), Ok(basic(kind, &[nx], batch)), work_size)
}

#[no_mangle]
pub extern "C" fn cufftGetSize2d(
    plan: c_int,
    nx: c_int,
    ny: c_int,
    kind: c_int,
    work_size: *mut usize,
) -> c_int {
    size_of(Some(plan), Ok(basic(kind, &[nx, ny], 1)), work_size)
}

#[no_mangle]
pub extern "C" fn cufftGetSize3d(
    plan: c_int,
    nx: c_int,
    ny: c_int,
    nz: c_int,
    kind: c_int,
    work_size: *mut usize,
) -> c_int {
    size_of(Some(plan), Ok(basic(kind, &[nx, ny, nz], 1)), work_size)
}

#[no_mangle]
#[allow(clippy::too_many_arguments)]
pub extern "C" fn cufftGetSizeMany(
    plan: c_int,
    rank: c_int,
    n: *mut c_int,
    inembed: *mut c_int,
    istride: c_int,
    idist: c_int,
    onembed: *mut c_int,
    ostride: c_int,
    odist: c_int,
    kind: c_int,
    batch: c_int,
    work_size: *mut usize,
) -> c_int {
    let geometry = many(
        rank,
        n,
        inembed,
        istride.into(),
        idist.into(),
        onembed,
        ostride.into(),
        odist.into(),
        kind,
        batch.into(),
    );
    size_of(Some(plan), geometry, work_size)
}

#[no_mangle]
#[allow(clippy::too_many_arguments)]
pub extern "C" fn cufftGetSizeMany64(
    plan: c_int,
    rank: c_int,
    n: *mut c_longlong,
    inembed: *mut c_longlong,
    istride: c_longlong,
    idist: c_longlong,
    onembed: *mut c_longlong,
    ostride: c_longlong,
    odist: c_longlong,
    kind: c_int,
    batch: c_longlong,
    work_size: *mut usize,
) -> c_int {
    let geometry = many(
        rank, n, inembed, istride, idist, onembed, ostride, odist, kind, batch,
    );
    size_of(Some(plan), geometry, work_size)
}

#[no_mangle]
pub extern "C" fn cufftGetSize(plan: c_int, work_size: *mut usize) -> c_int {
    run(|| {
        plan_state(plan)?;
        write_host(work_size, WORK_SIZE)
    })
}

#[no_mangle]
pub extern "C" fn cufftSetWorkArea(plan: c_int, _work_area: *mut c_void) -> c_int {
    run(|| plan_state(plan).map(drop))
}

#[no_mangle]
pub extern "C" fn cufftSetAutoAllocation(plan: c_int, _auto_allocate: c_int) -> c_int {
    run(|| plan_state(plan).map(drop))
}

#[no_mangle]
pub extern "C" fn cufftSetStream(plan: c_int, stream: *mut c_void) -> c_int {
    run(|| {
        plan_state(plan)?;
        // 0, 1 and 2 are the legacy and per-thread default streams.
        if stream as u64 > 2 && super::super::stream_device(stream as u64).is_err() {
            return Err(status::INVALID_VALUE);
        }
        update(plan, |s| s.stream = stream as u64)
    })
}

#[no_mangle]
pub extern "C" fn cufftGetVersion(version: *mut c_int) -> c_int {
    run(|| write_host(version, VERSION.0 * 1000 + VERSION.1 * 100 + VERSION.2))
}

#[no_mangle]
pub extern "C" fn cufftGetProperty(property: c_int, value: *mut c_int) -> c_int {
    run(|| {
        let v = match property {
            MAJOR_VERSION => VERSION.0,
            MINOR_VERSION => VERSION.1,
            PATCH_LEVEL => VERSION.2,
            _ => return Err(status::INVALID_TYPE),
        };
        write_host(value, v)
    })
}

#[no_mangle]
pub extern "C" fn cufftSetPlanPropertyInt64(
    plan: c_int,
    property: c_int,
    value: c_longlong,
) -> c_int {
    run(|| {
        if !PROPERTIES.contains(&property) {
            return Err(status::INVALID_VALUE);
        }
        update(plan, |s| {
            s.properties.insert(property, value);
        })
    })
}

#[no_mangle]
pub extern "C" fn cufftGetPlanPropertyInt64(
    plan: c_int,
    property: c_int,
    value: *mut c_longlong,
) -> c_int {
    run(|| {
        let state = plan_state(plan)?;
        if !PROPERTIES.contains(&property) {
            return Err(status::INVALID_VALUE);
        }
        write_host(value, state.properties.get(&property).copied().unwrap_or(0))
    })
}

#[no_mangle]
pub extern "C" fn cufftResetPlanProperty(plan: c_int, property: c_int) -> c_int {
    run(|| {
        if !PROPERTIES.contains(&property) {
            return Err(status::INVALID_VALUE);
        }
        update(plan, |s| {
            s.properties.remove(&property);
        })
    })
}

/// `cudaDataType` values of cuFFT's standard transforms.
const CUDA_R_32F: c_int = 0;
const CUDA_R_64F: c_int = 1;
const CUDA_R_16F: c_int = 2;
const CUDA_C_32F: c_int = 4;
const CUDA_C_64F: c_int = 5;
const CUDA_C_16F: c_int = 6;
const CUDA_R_16BF: c_int = 14;
const CUDA_C_16BF: c_int = 15;

/// The `cufftType` of a `cufftXtMakePlanMany` type triple: the six
/// standard transforms; FP16 and BF16 ones are not supported.
fn xt_kind(input: c_int, output: c_int, execution: c_int) -> Result<c_int, c_int> {
    let kind = match (input, output, execution) {
        (CUDA_C_32F, CUDA_C_32F, CUDA_C_32F) => Kind::C2C,
        (CUDA_R_32F, CUDA_C_32F, CUDA_C_32F) => Kind::R2C,
        (CUDA_C_32F, CUDA_R_32F, CUDA_C_32F) => Kind::C2R,
        (CUDA_C_64F, CUDA_C_64F, CUDA_C_64F) => Kind::Z2Z,
        (CUDA_R_64F, CUDA_C_64F, CUDA_C_64F) => Kind::D2Z,
        (CUDA_C_64F, CUDA_R_64F, CUDA_C_64F) => Kind::Z2D,
        _ if [input, output, execution]
            .iter()
            .any(|t| [CUDA_R_16F, CUDA_C_16F, CUDA_R_16BF, CUDA_C_16BF].contains(t)) =>
        {
            tracing::warn!(
                "cuFFT: half-precision (FP16, BF16) transforms are not supported by rcud"
            );
            return Err(status::NOT_SUPPORTED);
        }
        _ => return Err(status::INVALID_TYPE),
    };
    Ok(kind.raw())
}

#[no_mangle]
#[allow(clippy::too_many_arguments)]
pub extern "C" fn cufftXtMakePlanMany(
    plan: c_int,
    rank: c_int,
    n: *mut c_longlong,
    inembed: *mut c_longlong,
    istride: c_longlong,
    idist: c_longlong,
    input_type: c_int,
    onembed: *mut c_longlong,
    ostride: c_longlong,
    odist: c_longlong,
    output_type: c_int,
    batch: c_longlong,
    work_size: *mut usize,
    execution_type: c_int,
) -> c_int {
    run(|| {
        plan_state(plan)?;
        let kind = xt_kind(input_type, output_type, execution_type)?;
        let geometry = many(
            rank, n, inembed, istride, idist, onembed, ostride, odist, kind, batch,
        )?;
        make(plan, geometry, work_size)
    })
}

#[no_mangle]
#[allow(clippy::too_many_arguments)]
pub extern "C" fn cufftXtGetSizeMany(
    plan: c_int,
    rank: c_int,
    n: *mut c_longlong,
    inembed: *mut c_longlong,
    istride: c_longlong,
    idist: c_longlong,
    input_type: c_int,
    onembed: *mut c_longlong,
    ostride: c_longlong,
    odist: c_longlong,
    output_type: c_int,
    batch: c_longlong,
    work_size: *mut usize,
    execution_type: c_int,
) -> c_int {
    let geometry = xt_kind(input_type, output_type, execution_type).and_then(|kind| {
        many(
            rank, n, inembed, istride, idist, onembed, ostride, odist, kind, batch,
        )
    });
    size_of(Some(plan), geometry, work_size)
}
