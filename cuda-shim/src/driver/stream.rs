//! Streams, events and host functions: the runtime's objects, so a
//! `CUstream` is a `cudaStream_t` and a `CUevent` a `cudaEvent_t`.

use std::ffi::c_void;
use std::os::raw::{c_int, c_uint};

use rcud_client::runtime::STREAM_PRIORITY_LEAST;

use super::{context_device, initialized, out, rt, DriverError};
use crate::abi::launch::AttrValue;
use crate::cudart::stream::{self as rt_stream, Event, HostFn, Stream, StreamCallback};

driver_fn! { cuStreamCreate (stream: *mut Stream, flags: c_uint) {
    context_device()?;
    if stream.is_null() {
        return Err(DriverError::INVALID_VALUE);
    }
    out(stream, rt().stream_create(flags, STREAM_PRIORITY_LEAST)? as Stream)
} }

driver_fn! { cuStreamCreateWithPriority (stream: *mut Stream, flags: c_uint, priority: c_int) {
    context_device()?;
    if stream.is_null() {
        return Err(DriverError::INVALID_VALUE);
    }
    out(stream, rt().stream_create(flags, priority)? as Stream)
} }

driver_fn! { [cuStreamDestroy, cuStreamDestroy_v2] (stream: Stream) {
    initialized()?;
    Ok(rt_stream::stream_destroy(stream)?)
} }

driver_fn! { [cuStreamSynchronize, cuStreamSynchronize_ptsz] (stream: Stream) {
    initialized()?;
    Ok(rt_stream::stream_synchronize(stream)?)
} }

// Not ready while the device's work is queued or in flight.
driver_fn! { [cuStreamQuery, cuStreamQuery_ptsz] (stream: Stream) {
    initialized()?;
    Ok(rt_stream::stream_query(stream)?)
} }

driver_fn! { [cuStreamWaitEvent, cuStreamWaitEvent_ptsz] (stream: Stream, event: Event, flags: c_uint) {
    initialized()?;
    if flags & !1 != 0 {
        return Err(DriverError::INVALID_VALUE);
    }
    Ok(rt_stream::stream_wait_event(stream, event)?)
} }

driver_fn! { [cuStreamGetPriority, cuStreamGetPriority_ptsz] (stream: Stream, priority: *mut c_int) {
    initialized()?;
    out(priority, rt().stream_info(stream as u64)?.1)
} }

driver_fn! { [cuStreamGetFlags, cuStreamGetFlags_ptsz] (stream: Stream, flags: *mut c_uint) {
    initialized()?;
    out(flags, rt().stream_info(stream as u64)?.0)
} }

driver_fn! { [cuStreamGetId, cuStreamGetId_ptsz] (stream: Stream, id: *mut u64) {
    initialized()?;
    rt().stream_device(stream as u64)?;
    out(id, stream as u64)
} }

driver_fn! { [cuStreamGetDevice, cuStreamGetDevice_ptsz] (stream: Stream, dev: *mut c_int) {
    initialized()?;
    out(dev, rt().stream_device(stream as u64)? as c_int)
} }

// A stream belongs to its device's primary context (or to the current
// context, for the special streams).
driver_fn! { [cuStreamGetCtx, cuStreamGetCtx_ptsz] (stream: Stream, ctx: *mut u64) {
    initialized()?;
    let handle = match stream as u64 {
        0..=2 => rt().current_context().ok_or(DriverError::INVALID_CONTEXT)?,
        s => rt().primary_context(rt().stream_device(s)? as c_int)?,
    };
    out(ctx, handle)
} }

driver_fn! { [cuStreamAddCallback, cuStreamAddCallback_ptsz] (stream: Stream, cb: StreamCallback, data: *mut c_void, flags: c_uint) {
    initialized()?;
    Ok(rt_stream::add_callback(stream, cb, data, flags)?)
} }

driver_fn! { [cuLaunchHostFunc_v2, cuLaunchHostFunc_v2_ptsz] (stream: Stream, f: HostFn, data: *mut c_void, flags: c_uint) {
    initialized()?;
    if flags != 0 {
        return Err(DriverError::INVALID_VALUE);
    }
    Ok(rt_stream::launch_host_func(stream, f, data)?)
} }

driver_fn! { [cuLaunchHostFunc, cuLaunchHostFunc_ptsz] (stream: Stream, f: HostFn, data: *mut c_void) {
    initialized()?;
    Ok(rt_stream::launch_host_func(stream, f, data)?)
} }

driver_fn! { cuEventCreate (event: *mut Event, flags: c_uint) {
    context_device()?;
    if event.is_null() {
        return Err(DriverError::INVALID_VALUE);
    }
    out(event, rt().event_create(flags)? as Event)
} }

driver_fn! { [cuEventDestroy, cuEventDestroy_v2] (event: Event) {
    initialized()?;
    Ok(rt().event_destroy(event as u64)?)
} }

driver_fn! { [cuEventRecord, cuEventRecord_ptsz] (event: Event, stream: Stream) {
    initialized()?;
    Ok(rt_stream::event_record(event, stream)?)
} }

// `CU_EVENT_RECORD_EXTERNAL` (1) only matters inside graph capture.
driver_fn! { [cuEventRecordWithFlags, cuEventRecordWithFlags_ptsz] (event: Event, stream: Stream, flags: c_uint) {
    initialized()?;
    if flags & !1 != 0 {
        return Err(DriverError::INVALID_VALUE);
    }
    Ok(rt_stream::event_record(event, stream)?)
} }

driver_fn! { cuEventSynchronize (event: Event) {
    initialized()?;
    Ok(rt_stream::event_synchronize(event)?)
} }

driver_fn! { cuEventQuery (event: Event) {
    initialized()?;
    Ok(rt_stream::event_query(event)?)
} }

driver_fn! { [cuEventElapsedTime, cuEventElapsedTime_v2] (ms: *mut f32, start: Event, end: Event) {
    initialized()?;
    out(ms, rt().event_elapsed_ms(start as u64, end as u64)?)
} }

driver_fn! { [cuStreamSetAttribute, cuStreamSetAttribute_ptsz] (stream: Stream, id: c_uint, value: *const AttrValue) {
    initialized()?;
    Ok(rt_stream::stream_set_attribute(stream, id, value)?)
} }

driver_fn! { [cuStreamGetAttribute, cuStreamGetAttribute_ptsz] (stream: Stream, id: c_uint, value: *mut AttrValue) {
    initialized()?;
    Ok(rt_stream::stream_get_attribute(stream, id, value)?)
} }

driver_fn! { [cuStreamCopyAttributes, cuStreamCopyAttributes_ptsz] (dst: Stream, src: Stream) {
    initialized()?;
    Ok(rt_stream::stream_copy_attributes(dst, src)?)
} }
