//! Stream capture: work queued on a capturing stream becomes nodes of a
//! graph instead of running. Streams join a capture by waiting on an event
//! recorded in it, and must join back before it ends. Calls that would wait
//! for or touch the device behind the capture's back are refused, with the
//! errors CUDA gives, and invalidate the capture.

use std::cell::Cell;
use std::collections::HashMap;
use std::thread::ThreadId;

use parking_lot::Mutex;
use rcud_client::Runtime;
use rcud_proto::CudaError;

use super::model::{graphs, Handle, NodeKind};

/// `cudaStreamCaptureMode`.
pub(crate) mod mode {
    pub(crate) const GLOBAL: i32 = 0;
    pub(crate) const THREAD_LOCAL: i32 = 1;
    pub(crate) const RELAXED: i32 = 2;
}

/// `cudaStreamCaptureStatus`.
pub(crate) mod status {
    pub(crate) const NONE: i32 = 0;
    pub(crate) const ACTIVE: i32 = 1;
    pub(crate) const INVALIDATED: i32 = 2;
}

/// `cudaStreamNonBlocking`.
const NON_BLOCKING: u32 = 1;

#[derive(Debug)]
struct Capture {
    graph: Handle,
    mode: i32,
    thread: ThreadId,
    origin: u64,
    invalidated: bool,
    /// Into a graph the application made (`cudaStreamBeginCaptureToGraph`).
    into_existing: bool,
    /// Each stream in the capture and the nodes its next work depends on.
    frontiers: HashMap<u64, Vec<Handle>>,
}

#[derive(Debug, Default)]
struct Captures {
    next_id: u64,
    by_id: HashMap<u64, Capture>,
    /// Capturing stream -> capture id.
    stream: HashMap<u64, u64>,
    /// Event recorded in a capture -> (capture id, the nodes before it).
    events: HashMap<u64, (u64, Vec<Handle>)>,
}

fn captures() -> &'static Mutex<Captures> {
    static CAPTURES: std::sync::OnceLock<Mutex<Captures>> = std::sync::OnceLock::new();
    CAPTURES.get_or_init(Mutex::default)
}

thread_local! {
    /// This thread's mode for unsafe calls (`cudaThreadExchangeStreamCaptureMode`).
    static THREAD_MODE: Cell<i32> = const { Cell::new(mode::GLOBAL) };
}

fn is_legacy(stream: u64) -> bool {
    matches!(stream, 0 | 1)
}

/// `cudaStreamBeginCapture` (into a fresh graph) and
/// `cudaStreamBeginCaptureToGraph` (after `deps` of an existing graph).
pub(crate) fn begin(
    stream: u64,
    mode: i32,
    into: Option<(Handle, Vec<Handle>)>,
) -> Result<(), CudaError> {
    if !matches!(mode, mode::GLOBAL | mode::THREAD_LOCAL | mode::RELAXED) {
        return Err(CudaError::INVALID_VALUE);
    }
    Runtime::global().stream_device(stream)?;
    if is_legacy(stream) {
        return Err(CudaError::STREAM_CAPTURE_UNSUPPORTED);
    }
    let mut caps = captures().lock();
    if caps.stream.contains_key(&stream) {
        return Err(CudaError::ILLEGAL_STATE);
    }
    let into_existing = into.is_some();
    let (graph, deps) = match into {
        Some((g, deps)) => {
            let all = graphs().lock();
            all.graph(g)?;
            if deps.iter().any(|d| all.owner.get(d) != Some(&g)) {
                return Err(CudaError::INVALID_VALUE);
            }
            (g, deps)
        }
        None => (graphs().lock().create(), Vec::new()),
    };
    caps.next_id += 1;
    let id = caps.next_id;
    caps.by_id.insert(
        id,
        Capture {
            graph,
            mode,
            thread: std::thread::current().id(),
            origin: stream,
            invalidated: false,
            into_existing,
            frontiers: HashMap::from([(stream, deps)]),
        },
    );
    caps.stream.insert(stream, id);
    Ok(())
}

/// Whether `stream`'s capture goes into a graph the application made, which
/// `cudaStreamEndCapture` need not hand back (NVIDIA's samples pass NULL).
pub(crate) fn into_existing(stream: u64) -> bool {
    let caps = captures().lock();
    caps.stream
        .get(&stream)
        .and_then(|id| caps.by_id.get(id))
        .is_some_and(|c| c.into_existing)
}

/// `cudaStreamEndCapture`: the graph, once every stream has joined back.
pub(crate) fn end(stream: u64) -> Result<Handle, CudaError> {
    Runtime::global().stream_device(stream)?;
    let mut caps = captures().lock();
    let id = *caps.stream.get(&stream).ok_or(CudaError::ILLEGAL_STATE)?;
    let Some(cap) = caps.by_id.get_mut(&id) else {
        return Err(CudaError::ILLEGAL_STATE);
    };
    if cap.origin != stream {
        // Ending from a stream that joined breaks the capture.
        cap.invalidated = true;
        return Err(CudaError::STREAM_CAPTURE_UNMATCHED);
    }
    if cap.mode != mode::RELAXED && cap.thread != std::thread::current().id() {
        return Err(CudaError::STREAM_CAPTURE_WRONG_THREAD);
    }
    let Some(cap) = caps.by_id.remove(&id) else {
        return Err(CudaError::ILLEGAL_STATE);
    };
    caps.stream.retain(|_, c| *c != id);
    caps.events.retain(|_, (c, _)| *c != id);
    drop(caps);
    let mut all = graphs().lock();
    let unjoined = {
        let graph = all.graph(cap.graph)?;
        let origin = &cap.frontiers[&cap.origin];
        cap.frontiers.iter().any(|(s, nodes)| {
            *s != cap.origin
                && nodes
                    .iter()
                    .any(|n| !origin.iter().any(|o| graph.reaches(*n, *o)))
        })
    };
    if cap.invalidated || unjoined {
        let _ = all.destroy(cap.graph);
        return Err(if unjoined && !cap.invalidated {
            CudaError::STREAM_CAPTURE_UNJOINED
        } else {
            CudaError::STREAM_CAPTURE_INVALIDATED
        });
    }
    Ok(cap.graph)
}

/// What `cudaStreamGetCaptureInfo` reports: status, id, graph and the
/// nodes the stream's next work would depend on.
pub(crate) fn info(stream: u64) -> Result<(i32, u64, Handle, Vec<Handle>), CudaError> {
    Runtime::global().stream_device(stream)?;
    let caps = captures().lock();
    if is_legacy(stream) && !blocking_captures(&caps).is_empty() {
        // The legacy stream would synchronize with a capturing blocking
        // stream: asking about it is refused, without harm to the capture.
        return Err(CudaError::STREAM_CAPTURE_IMPLICIT);
    }
    Ok(match caps.stream.get(&stream) {
        None => (status::NONE, 0, 0, Vec::new()),
        Some(&id) => {
            let cap = &caps.by_id[&id];
            let st = if cap.invalidated {
                status::INVALIDATED
            } else {
                status::ACTIVE
            };
            let deps = cap.frontiers.get(&stream).cloned().unwrap_or_default();
            (st, id, cap.graph, deps)
        }
    })
}

/// Whether `stream` is capturing, for calls that must refuse it.
pub(crate) fn is_capturing(stream: u64) -> bool {
    captures().lock().stream.contains_key(&stream)
}

/// Refuses a call that waits for `stream` while it captures
/// (`cudaStreamSynchronize`, `cudaStreamQuery`), invalidating the capture;
/// the legacy stream waits for every blocking stream.
pub(crate) fn refuse_wait(stream: u64) -> Result<(), CudaError> {
    let mut caps = captures().lock();
    if let Some(&id) = caps.stream.get(&stream) {
        if let Some(cap) = caps.by_id.get_mut(&id) {
            cap.invalidated = true;
        }
        return Err(CudaError::STREAM_CAPTURE_UNSUPPORTED);
    }
    if is_legacy(stream) {
        implicit(&mut caps)?;
    }
    Ok(())
}

/// The captures that a blocking stream (one the legacy stream waits for)
/// takes part in.
fn blocking_captures(caps: &Captures) -> Vec<u64> {
    let rt = Runtime::global();
    caps.stream
        .iter()
        .filter(|(s, _)| {
            rt.stream_info(**s)
                .is_ok_and(|(f, _)| f & NON_BLOCKING == 0)
        })
        .map(|(_, id)| *id)
        .collect()
}

/// Work on the legacy stream waits for every blocking stream: one that
/// captures makes that an illegal dependency.
fn implicit(caps: &mut Captures) -> Result<(), CudaError> {
    let blocking = blocking_captures(caps);
    if blocking.is_empty() {
        return Ok(());
    }
    for id in blocking {
        if let Some(cap) = caps.by_id.get_mut(&id) {
            cap.invalidated = true;
        }
    }
    Err(CudaError::STREAM_CAPTURE_IMPLICIT)
}

/// Refuses a potentially unsafe call (`cudaMalloc`, a synchronous copy, a
/// device-wide synchronization) where the calling thread's mode forbids it
/// during the captures under way; those captures are invalidated.
pub(crate) fn refuse_unsafe() -> Result<(), CudaError> {
    let mut caps = captures().lock();
    if caps.by_id.is_empty() {
        return Ok(());
    }
    let me = std::thread::current().id();
    let thread_mode = THREAD_MODE.with(Cell::get);
    let mut refused = false;
    for cap in caps.by_id.values_mut() {
        let forbids = match thread_mode {
            mode::GLOBAL => {
                (cap.thread == me && cap.mode != mode::RELAXED) || cap.mode == mode::GLOBAL
            }
            mode::THREAD_LOCAL => cap.thread == me && cap.mode != mode::RELAXED,
            _ => false,
        };
        if forbids {
            cap.invalidated = true;
            refused = true;
        }
    }
    if refused {
        return Err(CudaError::STREAM_CAPTURE_UNSUPPORTED);
    }
    Ok(())
}

/// A synchronous call on the legacy stream (`cudaMemcpy`, `cudaMemset`):
/// unsafe during capture, and an implicit dependency on capturing streams.
pub(crate) fn refuse_legacy_sync() -> Result<(), CudaError> {
    refuse_unsafe()?;
    implicit(&mut captures().lock())
}

/// `cudaThreadExchangeStreamCaptureMode`: sets this thread's mode and
/// returns the previous one.
pub(crate) fn exchange_mode(new: i32) -> Result<i32, CudaError> {
    if !matches!(new, mode::GLOBAL | mode::THREAD_LOCAL | mode::RELAXED) {
        return Err(CudaError::INVALID_VALUE);
    }
    Ok(THREAD_MODE.with(|m| m.replace(new)))
}

/// Adds the node `make()` builds to the capture `stream` is part of, after
/// the stream's last work. `Ok(false)`: the stream is not capturing, and the
/// call should run the work itself. Work on the legacy stream while a
/// blocking stream captures fails with `cudaErrorStreamCaptureImplicit`.
pub(crate) fn record(
    stream: u64,
    make: impl FnOnce() -> Result<NodeKind, CudaError>,
) -> Result<bool, CudaError> {
    let mut caps = captures().lock();
    let Some(&id) = caps.stream.get(&stream) else {
        if is_legacy(stream) {
            implicit(&mut caps)?;
        }
        return Ok(false);
    };
    let Some(cap) = caps.by_id.get_mut(&id) else {
        return Ok(false);
    };
    if cap.invalidated {
        return Err(CudaError::STREAM_CAPTURE_INVALIDATED);
    }
    let kind = match make() {
        Ok(kind) => kind,
        Err(e) => {
            cap.invalidated = true;
            return Err(e);
        }
    };
    let deps = cap.frontiers.get(&stream).cloned().unwrap_or_default();
    let node = graphs().lock().add(cap.graph, &deps, kind)?;
    cap.frontiers.insert(stream, vec![node]);
    Ok(true)
}

/// `cudaEventRecord` on a capturing stream: the event stands for the work
/// captured so far; no node is made.
pub(crate) fn record_event(event: u64, stream: u64) -> Result<bool, CudaError> {
    let mut caps = captures().lock();
    let Some(&id) = caps.stream.get(&stream) else {
        caps.events.remove(&event);
        if is_legacy(stream) {
            implicit(&mut caps)?;
        }
        return Ok(false);
    };
    let cap = &caps.by_id[&id];
    if cap.invalidated {
        return Err(CudaError::STREAM_CAPTURE_INVALIDATED);
    }
    let nodes = cap.frontiers.get(&stream).cloned().unwrap_or_default();
    caps.events.insert(event, (id, nodes));
    Ok(true)
}

/// `cudaStreamWaitEvent` with an event recorded in a capture: the stream
/// joins that capture (or, capturing already, depends on the event's
/// nodes too).
pub(crate) fn wait_event(stream: u64, event: u64) -> Result<bool, CudaError> {
    let mut caps = captures().lock();
    let Some((id, nodes)) = caps.events.get(&event).cloned() else {
        return Ok(false);
    };
    if is_legacy(stream) {
        return Err(CudaError::STREAM_CAPTURE_IMPLICIT);
    }
    match caps.stream.get(&stream).copied() {
        Some(other) if other != id => Err(CudaError::STREAM_CAPTURE_ISOLATION),
        Some(_) => {
            if let Some(cap) = caps.by_id.get_mut(&id) {
                let frontier = cap.frontiers.entry(stream).or_default();
                for n in nodes {
                    if !frontier.contains(&n) {
                        frontier.push(n);
                    }
                }
            }
            Ok(true)
        }
        None => {
            caps.stream.insert(stream, id);
            if let Some(cap) = caps.by_id.get_mut(&id) {
                cap.frontiers.insert(stream, nodes);
            }
            Ok(true)
        }
    }
}

/// Waiting for or querying an event of a capture under way: refused, and,
/// as with NVIDIA's driver, the capture the event belongs to is invalidated.
pub(crate) fn refuse_captured_event(event: u64) -> Result<(), CudaError> {
    let mut caps = captures().lock();
    let Some(&(id, _)) = caps.events.get(&event) else {
        return Ok(());
    };
    if let Some(cap) = caps.by_id.get_mut(&id) {
        cap.invalidated = true;
    }
    Err(CudaError::CAPTURED_EVENT)
}

/// `cudaStreamUpdateCaptureDependencies`: add (flags 0) or set (1) the
/// nodes the stream's next work depends on.
pub(crate) fn update_dependencies(
    stream: u64,
    nodes: &[Handle],
    flags: u32,
) -> Result<(), CudaError> {
    let mut caps = captures().lock();
    let id = *caps.stream.get(&stream).ok_or(CudaError::ILLEGAL_STATE)?;
    let cap = caps.by_id.get_mut(&id).ok_or(CudaError::ILLEGAL_STATE)?;
    {
        let all = graphs().lock();
        if nodes.iter().any(|n| all.owner.get(n) != Some(&cap.graph)) {
            return Err(CudaError::INVALID_VALUE);
        }
    }
    let frontier = cap.frontiers.entry(stream).or_default();
    match flags {
        0 => {
            for n in nodes {
                if !frontier.contains(n) {
                    frontier.push(*n);
                }
            }
        }
        1 => *frontier = nodes.to_vec(),
        _ => return Err(CudaError::INVALID_VALUE),
    }
    Ok(())
}

/// `stream` is destroyed. Destroying the stream a capture began in ends
/// the capture (invalidated); a stream forked into a capture leaves it, and
/// its work stays in the graph: joined back before, as CUDA's samples do
/// (graphMemoryNodes destroys its second stream before ending the
/// capture), it harms nothing; left unjoined, the end of the capture
/// reports it, since its frontier is kept.
pub(crate) fn forget_stream(stream: u64) {
    let mut caps = captures().lock();
    if let Some(id) = caps.stream.remove(&stream) {
        if let Some(cap) = caps.by_id.get_mut(&id) {
            if cap.origin == stream {
                cap.invalidated = true;
                cap.frontiers.remove(&stream);
            }
        }
    }
}
