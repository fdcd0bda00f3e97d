//! Streams, events and host callbacks.
//!
//! A device's operations run on the server in the order they were issued,
//! each to completion, so every stream order CUDA promises holds; streams are
//! handles that name a device. Asynchronous work is queued by the client and
//! sent in batches; synchronizing calls send the queue and report its errors.

use std::collections::HashMap;
use std::ffi::c_void;
use std::os::raw::{c_int, c_uint};

use parking_lot::Mutex;

use rcud_client::runtime::{STREAM_PRIORITY_GREATEST, STREAM_PRIORITY_LEAST};
use rcud_client::Runtime;
use rcud_proto::CudaError;

use crate::abi::launch::{
    attr_id, read_attr_value, write_attr_value, AttrHolder, AttrValue, LaunchAttrs,
};
use crate::ffi::{guard, write_out, CudaErrorT};
use crate::graph::{capture, HostNode, NodeKind};

fn rt() -> &'static Runtime {
    Runtime::global()
}

pub(crate) type Stream = *mut c_void;
pub(crate) type Event = *mut c_void;

fn create_stream(stream: *mut Stream, flags: c_uint, priority: c_int) -> Result<(), CudaError> {
    if stream.is_null() {
        return Err(CudaError::INVALID_VALUE);
    }
    let handle = rt().stream_create(flags, priority)?;
    write_out(stream, handle as Stream)
}

#[no_mangle]
pub extern "C" fn cudaStreamCreate(stream: *mut Stream) -> CudaErrorT {
    guard(|| create_stream(stream, 0, STREAM_PRIORITY_LEAST))
}

#[no_mangle]
pub extern "C" fn cudaStreamCreateWithFlags(stream: *mut Stream, flags: c_uint) -> CudaErrorT {
    guard(|| create_stream(stream, flags, STREAM_PRIORITY_LEAST))
}

#[no_mangle]
pub extern "C" fn cudaStreamCreateWithPriority(
    stream: *mut Stream,
    flags: c_uint,
    priority: c_int,
) -> CudaErrorT {
    guard(|| create_stream(stream, flags, priority))
}

#[no_mangle]
pub extern "C" fn cudaStreamDestroy(stream: Stream) -> CudaErrorT {
    guard(|| stream_destroy(stream))
}

/// `cudaStreamDestroy`: a capture the stream was part of is invalidated.
pub(crate) fn stream_destroy(stream: Stream) -> Result<(), CudaError> {
    rt().stream_destroy(stream as u64)?;
    capture::forget_stream(stream as u64);
    super::managed::forget_stream(stream as u64);
    stream_attrs().lock().remove(&(stream as u64, 0));
    Ok(())
}

/// `cudaStreamSynchronize` and `cudaStreamQuery`: refused while the stream
/// captures (the capture is invalidated).
pub(crate) fn stream_synchronize(stream: Stream) -> Result<(), CudaError> {
    capture::refuse_wait(stream as u64)?;
    rt().stream_synchronize(stream as u64)
}

/// `cudaStreamWaitEvent`: an event recorded in a capture joins the stream
/// to it.
pub(crate) fn stream_wait_event(stream: Stream, event: Event) -> Result<(), CudaError> {
    if capture::wait_event(stream as u64, event as u64)? {
        return Ok(());
    }
    rt().stream_wait_event(stream as u64, event as u64)
}

/// `cudaEventRecord`: in a capture, the event marks the work captured so far.
pub(crate) fn event_record(event: Event, stream: Stream) -> Result<(), CudaError> {
    if capture::record_event(event as u64, stream as u64)? {
        return Ok(());
    }
    rt().event_record(event as u64, stream as u64)
}

/// `cudaEventSynchronize` and `cudaEventQuery`: not on an event of a
/// capture under way (which that invalidates).
pub(crate) fn event_synchronize(event: Event) -> Result<(), CudaError> {
    capture::refuse_captured_event(event as u64)?;
    rt().event_synchronize(event as u64)
}

#[no_mangle]
pub extern "C" fn cudaDeviceGetStreamPriorityRange(
    least: *mut c_int,
    greatest: *mut c_int,
) -> CudaErrorT {
    guard(|| {
        if !least.is_null() {
            write_out(least, STREAM_PRIORITY_LEAST)?;
        }
        if !greatest.is_null() {
            write_out(greatest, STREAM_PRIORITY_GREATEST)?;
        }
        Ok(())
    })
}

with_ptsz! {
    fn cudaStreamSynchronize / cudaStreamSynchronize_ptsz (stream: Stream) {
        stream_synchronize(stream)
    }
}

with_ptsz! {
    /// Not ready while the device's work is queued or in flight: the
    /// server answers each operation after running it.
    fn cudaStreamQuery / cudaStreamQuery_ptsz (stream: Stream) {
        stream_query(stream)
    }
}

with_ptsz! {
    fn cudaStreamWaitEvent / cudaStreamWaitEvent_ptsz (stream: Stream, event: Event, flags: c_uint) {
        if flags & !1 != 0 {
            return Err(CudaError::INVALID_VALUE);
        }
        stream_wait_event(stream, event)
    }
}

with_ptsz! {
    fn cudaStreamGetPriority / cudaStreamGetPriority_ptsz (stream: Stream, priority: *mut c_int) {
        write_out(priority, rt().stream_info(stream as u64)?.1)
    }
}

with_ptsz! {
    fn cudaStreamGetFlags / cudaStreamGetFlags_ptsz (stream: Stream, flags: *mut c_uint) {
        write_out(flags, rt().stream_info(stream as u64)?.0)
    }
}

#[no_mangle]
pub extern "C" fn cudaEventCreate(event: *mut Event) -> CudaErrorT {
    guard(|| write_out(event, rt().event_create(0)? as Event))
}

#[no_mangle]
pub extern "C" fn cudaEventCreateWithFlags(event: *mut Event, flags: c_uint) -> CudaErrorT {
    guard(|| write_out(event, rt().event_create(flags)? as Event))
}

#[no_mangle]
pub extern "C" fn cudaEventDestroy(event: Event) -> CudaErrorT {
    guard(|| rt().event_destroy(event as u64))
}

with_ptsz! {
    fn cudaEventRecord / cudaEventRecord_ptsz (event: Event, stream: Stream) {
        event_record(event, stream)
    }
}

with_ptsz! {
    /// `cudaEventRecordExternal` (1) only matters inside graph capture.
    fn cudaEventRecordWithFlags / cudaEventRecordWithFlags_ptsz (event: Event, stream: Stream, flags: c_uint) {
        if flags & !1 != 0 {
            return Err(CudaError::INVALID_VALUE);
        }
        event_record(event, stream)
    }
}

#[no_mangle]
pub extern "C" fn cudaEventSynchronize(event: Event) -> CudaErrorT {
    guard(|| event_synchronize(event))
}

#[no_mangle]
pub extern "C" fn cudaEventQuery(event: Event) -> CudaErrorT {
    guard(|| event_query(event))
}

/// `cudaEventQuery`: `cudaErrorNotReady` until the work before the event
/// is done.
pub(crate) fn event_query(event: Event) -> Result<(), CudaError> {
    capture::refuse_captured_event(event as u64)?;
    rt().event_query(event as u64)
}

/// `cudaStreamQuery`: `cudaErrorNotReady` while the stream's work runs;
/// refused while it captures.
pub(crate) fn stream_query(stream: Stream) -> Result<(), CudaError> {
    capture::refuse_wait(stream as u64)?;
    rt().stream_query(stream as u64)
}

#[no_mangle]
pub extern "C" fn cudaEventElapsedTime(ms: *mut f32, start: Event, end: Event) -> CudaErrorT {
    guard(|| write_out(ms, rt().event_elapsed_ms(start as u64, end as u64)?))
}

/// A host function and its argument, moved to whichever thread sends the
/// queue it waits in.
struct HostCall {
    run: Box<dyn FnOnce()>,
}

// SAFETY: the CUDA contract makes the user data of a host function valid
// until the function runs, from any thread (CUDA itself runs it on a thread
// of its own).
unsafe impl Send for HostCall {}

fn enqueue_host_call(stream: Stream, run: Box<dyn FnOnce()>) -> Result<(), CudaError> {
    let call = HostCall { run };
    rt().enqueue_host_fn(
        stream as u64,
        Box::new(move || {
            // Move the whole wrapper (not just its field) into the closure.
            let call = call;
            (call.run)()
        }),
    )
}

pub(crate) type HostFn = Option<unsafe extern "C" fn(*mut c_void)>;
pub(crate) type StreamCallback = Option<unsafe extern "C" fn(Stream, CudaErrorT, *mut c_void)>;

pub(crate) fn launch_host_func(
    stream: Stream,
    f: HostFn,
    data: *mut c_void,
) -> Result<(), CudaError> {
    let f = f.ok_or(CudaError::INVALID_VALUE)?;
    let data = data as usize;
    let node = || {
        Ok(NodeKind::Host(HostNode {
            func: f as usize,
            data,
        }))
    };
    if capture::record(stream as u64, node)? {
        return Ok(());
    }
    // SAFETY: `f` is the application's host function, called once with its
    // own argument, as cudaLaunchHostFunc promises.
    enqueue_host_call(stream, Box::new(move || unsafe { f(data as *mut c_void) }))
}

with_ptsz! {
    fn cudaLaunchHostFunc / cudaLaunchHostFunc_ptsz (stream: Stream, f: HostFn, data: *mut c_void) {
        launch_host_func(stream, f, data)
    }
}

pub(crate) fn add_callback(
    stream: Stream,
    cb: StreamCallback,
    data: *mut c_void,
    flags: c_uint,
) -> Result<(), CudaError> {
    if flags != 0 {
        return Err(CudaError::INVALID_VALUE);
    }
    let cb = cb.ok_or(CudaError::INVALID_VALUE)?;
    // A callback takes the stream's status: graphs have host nodes instead.
    if capture::is_capturing(stream as u64) {
        return Err(CudaError::STREAM_CAPTURE_UNSUPPORTED);
    }
    let (stream_id, data) = (stream as usize, data as usize);
    // SAFETY: `cb` is the application's callback, called once with the stream
    // and its own argument, as cudaStreamAddCallback promises. Work before it
    // completed, or its error was reported: the status is cudaSuccess.
    enqueue_host_call(
        stream,
        Box::new(move || unsafe { cb(stream_id as Stream, 0, data as *mut c_void) }),
    )
}

with_ptsz! {
    fn cudaStreamAddCallback / cudaStreamAddCallback_ptsz (stream: Stream, cb: StreamCallback, data: *mut c_void, flags: c_uint) {
        add_callback(stream, cb, data, flags)
    }
}

with_ptsz! {
    /// A stream's id: its handle, unique in the process; the special
    /// streams have ids of their own.
    fn cudaStreamGetId / cudaStreamGetId_ptsz (stream: Stream, id: *mut u64) {
        rt().stream_device(stream as u64)?;
        write_out(id, stream as u64)
    }
}

with_ptsz! {
    fn cudaStreamGetDevice / cudaStreamGetDevice_ptsz (stream: Stream, device: *mut c_int) {
        write_out(device, rt().stream_device(stream as u64)? as c_int)
    }
}

with_ptsz! {
    /// CUDA 13's form with flags; none are defined.
    fn cudaLaunchHostFunc_v2 / cudaLaunchHostFunc_v2_ptsz (stream: Stream, f: HostFn, data: *mut c_void, flags: c_uint) {
        if flags != 0 {
            return Err(CudaError::INVALID_VALUE);
        }
        launch_host_func(stream, f, data)
    }
}

/// The attributes set on streams, by (stream, device): the special streams
/// (legacy and per-thread, handles 0 to 2) are one per device.
fn stream_attrs() -> &'static Mutex<HashMap<(u64, usize), LaunchAttrs>> {
    static ATTRS: std::sync::OnceLock<Mutex<HashMap<(u64, usize), LaunchAttrs>>> =
        std::sync::OnceLock::new();
    ATTRS.get_or_init(Default::default)
}

/// The key of a stream's attributes; fails for a stream that does not exist.
fn attrs_key(stream: Stream) -> Result<(u64, usize), CudaError> {
    let device = rt().stream_device(stream as u64)?;
    Ok(match stream as u64 {
        s @ 0..=2 => (s, device),
        s => (s, 0),
    })
}

/// The largest access-policy window of the stream's device.
fn max_window(stream: Stream) -> Result<u64, CudaError> {
    let device = rt().stream_device(stream as u64)?;
    let most = rt().attribute(
        rcud_proto::device::DeviceAttr::MAX_ACCESS_POLICY_WINDOW_SIZE.0,
        device as c_int,
    )?;
    Ok(u64::try_from(most).unwrap_or(0))
}

/// `cudaStreamSetAttribute`: applies to work queued after it. The priority
/// is the stream's own (`cudaStreamGetPriority` reads it back).
pub(crate) fn stream_set_attribute(
    stream: Stream,
    id: c_uint,
    value: *const AttrValue,
) -> Result<(), CudaError> {
    let value = read_attr_value(value)?;
    let key = attrs_key(stream)?;
    let limit = max_window(stream)?;
    let mut all = stream_attrs().lock();
    let attrs = all.entry(key).or_default();
    attrs.set(AttrHolder::Stream, id, &value, limit)?;
    if id == attr_id::PRIORITY {
        let set = attrs.get(AttrHolder::Stream, id)?;
        let priority = i32::from_ne_bytes([set[0], set[1], set[2], set[3]]);
        rt().stream_set_priority(stream as u64, priority)?;
    }
    Ok(())
}

/// `cudaStreamGetAttribute`.
pub(crate) fn stream_get_attribute(
    stream: Stream,
    id: c_uint,
    out: *mut AttrValue,
) -> Result<(), CudaError> {
    let key = attrs_key(stream)?;
    let mut value = stream_attrs()
        .lock()
        .get(&key)
        .cloned()
        .unwrap_or_default()
        .get(AttrHolder::Stream, id)?;
    if id == attr_id::PRIORITY {
        let priority = rt().stream_info(stream as u64)?.1;
        value[..4].copy_from_slice(&priority.to_ne_bytes());
    }
    write_attr_value(out, value)
}

/// `cudaStreamCopyAttributes`: every attribute of `src`, its priority
/// included, onto `dst`.
pub(crate) fn stream_copy_attributes(dst: Stream, src: Stream) -> Result<(), CudaError> {
    let (dst_key, src_key) = (attrs_key(dst)?, attrs_key(src)?);
    let priority = rt().stream_info(src as u64)?.1;
    let mut all = stream_attrs().lock();
    let attrs = all.get(&src_key).cloned().unwrap_or_default();
    all.insert(dst_key, attrs);
    drop(all);
    rt().stream_set_priority(dst as u64, priority)
}

with_ptsz! {
    fn cudaStreamSetAttribute / cudaStreamSetAttribute_ptsz (stream: Stream, id: c_uint, value: *const AttrValue) {
        stream_set_attribute(stream, id, value)
    }
}

with_ptsz! {
    fn cudaStreamGetAttribute / cudaStreamGetAttribute_ptsz (stream: Stream, id: c_uint, value: *mut AttrValue) {
        stream_get_attribute(stream, id, value)
    }
}

with_ptsz! {
    fn cudaStreamCopyAttributes / cudaStreamCopyAttributes_ptsz (dst: Stream, src: Stream) {
        stream_copy_attributes(dst, src)
    }
}
