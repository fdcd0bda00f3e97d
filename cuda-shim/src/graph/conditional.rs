//! Conditional nodes (`cudaGraphConditionalHandleCreate`, IF, WHILE and
//! SWITCH nodes). A conditional handle is the device address of a `u32`
//! allocated for it on the device current when it was made: the device-side
//! `cudaGraphSetConditional(handle, value)` stores `value` there, and the
//! server reads it when a launch reaches the node
//! ([`rcud_proto::ops::req::GraphConditional`]). So the conditions are
//! evaluated on the server and a launch of a graph with conditional nodes
//! is still one message per device run; loops end at the server's
//! operation time limit at the latest.

use std::collections::HashMap;
use std::sync::Arc;

use parking_lot::Mutex;
use rcud_client::Runtime;
use rcud_proto::ops::cond_kind;
use rcud_proto::CudaError;

use super::model::{graphs, Handle, NodeKind};

/// `cudaGraphCondAssignDefault`.
pub(crate) const ASSIGN_DEFAULT: u32 = 1;

/// A conditional node: its handle, `cudaGraphConditionalNodeType` and body
/// graphs, which the node owns.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ConditionalNode {
    pub handle: u64,
    pub kind: u32,
    /// The array `phGraph_out` points to: CUDA owns it and keeps it for the
    /// node's lifetime, so every copy of the node shares this allocation.
    pub bodies: Arc<[Handle]>,
}

/// A conditional handle's settings.
#[derive(Debug, Clone, Copy)]
pub(crate) struct CondHandle {
    /// `defaultLaunchValue`.
    pub default: u32,
    /// Whether each launch starts by storing `default`.
    pub assign_default: bool,
    /// The device of its condition, the only device its nodes may run on.
    pub device: usize,
    /// Graphs and executable graphs holding it.
    refs: u32,
}

fn handles() -> &'static Mutex<HashMap<u64, CondHandle>> {
    static HANDLES: std::sync::OnceLock<Mutex<HashMap<u64, CondHandle>>> =
        std::sync::OnceLock::new();
    HANDLES.get_or_init(Mutex::default)
}

/// `cudaGraphConditionalHandleCreate`: a handle of graph `g`, its condition
/// zeroed (CUDA leaves it undefined until a kernel or the default sets it).
pub(crate) fn create(g: Handle, default: u32, flags: u32) -> Result<u64, CudaError> {
    if flags & !ASSIGN_DEFAULT != 0 {
        return Err(CudaError::INVALID_VALUE);
    }
    graphs().lock().graph(g)?;
    let rt = Runtime::global();
    let device = rt.current_device()?;
    let cond = rt.malloc(4)?;
    if let Err(e) = rt.memcpy_htod(device, cond, &0u32.to_le_bytes()) {
        let _ = rt.free(cond);
        return Err(e);
    }
    handles().lock().insert(
        cond,
        CondHandle {
            default,
            assign_default: flags & ASSIGN_DEFAULT != 0,
            device,
            refs: 0,
        },
    );
    retain(cond);
    match graphs().lock().graph_mut(g) {
        Ok(graph) => {
            graph.cond_handles.push(cond);
            Ok(cond)
        }
        Err(e) => {
            release(cond);
            Err(e)
        }
    }
}

/// The settings of handle `h`.
pub(crate) fn handle(h: u64) -> Option<CondHandle> {
    handles().lock().get(&h).copied()
}

/// One holder more of handle `h`.
pub(crate) fn retain(h: u64) {
    if let Some(c) = handles().lock().get_mut(&h) {
        c.refs += 1;
    }
}

/// One holder less; the last frees the condition's memory.
pub(crate) fn release(h: u64) {
    let last = {
        let mut all = handles().lock();
        match all.get_mut(&h) {
            Some(c) if c.refs > 1 => {
                c.refs -= 1;
                false
            }
            Some(_) => {
                all.remove(&h);
                true
            }
            None => false,
        }
    };
    if last {
        if let Err(e) = Runtime::global().free(h) {
            tracing::debug!("conditional handle {h:#x}: its memory was not freed: {e}");
        }
    }
}

/// Checks `cudaConditionalNodeParams` and makes the node with `size` new
/// empty body graphs.
pub(crate) fn new_node(handle: u64, kind: u32, size: u32) -> Result<ConditionalNode, CudaError> {
    let size_ok = match kind {
        cond_kind::IF => matches!(size, 1 | 2),
        cond_kind::WHILE => size == 1,
        cond_kind::SWITCH => size > 0,
        _ => false,
    };
    if !size_ok || self::handle(handle).is_none() {
        return Err(CudaError::INVALID_VALUE);
    }
    let mut all = graphs().lock();
    let bodies: Vec<Handle> = (0..size).map(|_| all.create()).collect();
    Ok(ConditionalNode {
        handle,
        kind,
        bodies: bodies.into(),
    })
}

/// Checks that graph `g` may be a conditional body (or a child graph inside
/// one), as instantiation does: only kernel, empty, copy, memset, child
/// graph and conditional nodes, all on the condition's `device`.
pub(crate) fn check_body(
    all: &super::model::Graphs,
    g: Handle,
    device: usize,
) -> Result<(), CudaError> {
    let graph = all.graph(g)?;
    for node in graph.nodes.values() {
        match &node.kind {
            NodeKind::Kernel(k) if k.device == device => {}
            NodeKind::Library(l) if l.device == device => {}
            NodeKind::Empty | NodeKind::Memcpy(_) | NodeKind::Memset(_) => {}
            NodeKind::Child(c) => check_body(all, *c, device)?,
            NodeKind::Conditional(c) => {
                for b in c.bodies.iter() {
                    check_body(all, *b, device)?;
                }
            }
            _ => return Err(CudaError::INVALID_VALUE),
        }
    }
    Ok(())
}

/// The handles of graph `g`, its child graphs and conditional bodies.
pub(crate) fn handles_of(all: &super::model::Graphs, g: Handle, out: &mut Vec<u64>) {
    let Ok(graph) = all.graph(g) else {
        return;
    };
    out.extend(graph.cond_handles.iter().copied());
    for node in graph.nodes.values() {
        match &node.kind {
            NodeKind::Child(c) => handles_of(all, *c, out),
            NodeKind::Conditional(c) => {
                out.push(c.handle);
                for b in c.bodies.iter() {
                    handles_of(all, *b, out);
                }
            }
            _ => {}
        }
    }
}
