//! The runtime's graph API (`cudaGraph*`, `cudaStreamBeginCapture` and
//! friends): C structures in and out of [`crate::graph`].

use std::ffi::{c_char, c_void, CStr};
use std::os::raw::{c_int, c_uint};

use rcud_client::Runtime;
use rcud_proto::CudaError;

use super::stream::{HostFn, Stream};
use crate::abi::launch::{read_attr_value, write_attr_value, AttrValue, Dim3};
use crate::ffi::{guard, write_out, CudaErrorT};
use crate::graph::params::{ApiParams, GraphNodeParams};
use crate::graph::{
    self, capture, exec, graphs, user_objects, Handle, HostNode, KernelArgs, MemcpyNode,
    MemsetNode, NodeKind,
};

pub(crate) type Graph = *mut c_void;
pub(crate) type Node = *mut c_void;
pub(crate) type Exec = *mut c_void;

fn rt() -> &'static Runtime {
    Runtime::global()
}

/// `cudaKernelNodeParams`.
#[repr(C)]
pub(crate) struct KernelNodeParams {
    func: *mut c_void,
    grid: Dim3,
    block: Dim3,
    shared_mem_bytes: c_uint,
    kernel_params: *mut *mut c_void,
    extra: *mut *mut c_void,
}

/// `cudaMemsetParams`.
#[repr(C)]
pub(crate) struct MemsetParams {
    dst: *mut c_void,
    pitch: usize,
    value: c_uint,
    element_size: c_uint,
    width: usize,
    height: usize,
}

/// `cudaHostNodeParams`.
#[repr(C)]
pub(crate) struct HostNodeParams {
    func: HostFn,
    user_data: *mut c_void,
}

#[repr(C)]
#[derive(Clone, Copy, Default)]
pub(crate) struct Pos {
    x: usize,
    y: usize,
    z: usize,
}

impl Pos {
    pub(crate) fn new(x: usize, y: usize, z: usize) -> Self {
        Self { x, y, z }
    }
}

#[repr(C)]
#[derive(Clone, Copy)]
pub(crate) struct PitchedPtr {
    pub(crate) ptr: *mut c_void,
    pub(crate) pitch: usize,
    pub(crate) xsize: usize,
    pub(crate) ysize: usize,
}

#[repr(C)]
#[derive(Clone, Copy)]
pub(crate) struct Extent {
    pub(crate) width: usize,
    pub(crate) height: usize,
    pub(crate) depth: usize,
}

/// `cudaMemcpy3DParms`.
#[repr(C)]
pub(crate) struct Memcpy3DParms {
    src_array: *mut c_void,
    src_pos: Pos,
    src_ptr: PitchedPtr,
    dst_array: *mut c_void,
    dst_pos: Pos,
    dst_ptr: PitchedPtr,
    extent: Extent,
    kind: c_int,
}

impl Memcpy3DParms {
    /// The parameters of a copy between (array, position, pointer) ends.
    pub(crate) fn new(
        src: (*mut c_void, Pos, PitchedPtr),
        dst: (*mut c_void, Pos, PitchedPtr),
        extent: Extent,
        kind: c_int,
    ) -> Self {
        Self {
            src_array: src.0,
            src_pos: src.1,
            src_ptr: src.2,
            dst_array: dst.0,
            dst_pos: dst.1,
            dst_ptr: dst.2,
            extent,
            kind,
        }
    }
}

/// `cudaGraphExecUpdateResultInfo`.
#[repr(C)]
pub(crate) struct UpdateResultInfo {
    result: c_int,
    error_node: Node,
    error_from_node: Node,
}

/// The result code an update reported.
pub(crate) fn update_result(info: &UpdateResultInfo) -> c_int {
    info.result
}

/// The node an update stopped at.
pub(crate) fn update_error_node(info: &UpdateResultInfo) -> Node {
    info.error_node
}

/// `cudaGraphInstantiateParams`.
#[repr(C)]
pub(crate) struct InstantiateParams {
    flags: u64,
    upload_stream: Stream,
    err_node_out: Node,
    result_out: c_int,
}

/// `cudaGraphEdgeData`: only default edges exist here.
#[repr(C)]
#[derive(Clone, Copy, Default)]
pub(crate) struct EdgeData {
    from_port: u8,
    to_port: u8,
    kind: u8,
    reserved: [u8; 5],
}

pub(crate) fn h(p: *const c_void) -> Handle {
    p as Handle
}

/// The `count` handles at `list`.
pub(crate) fn handles(list: *const Node, count: usize) -> Result<Vec<Handle>, CudaError> {
    if count == 0 {
        return Ok(Vec::new());
    }
    if list.is_null() {
        return Err(CudaError::INVALID_VALUE);
    }
    // SAFETY: the API passes `count` node handles at `list`.
    let nodes = unsafe { std::slice::from_raw_parts(list, count) };
    Ok(nodes.iter().map(|&n| h(n)).collect())
}

/// Refuses edge data other than the default (ports and programmatic edges
/// need a GPU's scheduler).
pub(crate) fn default_edges(data: *const EdgeData, count: usize) -> Result<(), CudaError> {
    if data.is_null() || count == 0 {
        return Ok(());
    }
    // SAFETY: the API passes `count` edge data entries at `data`.
    let edges = unsafe { std::slice::from_raw_parts(data, count) };
    if edges
        .iter()
        .any(|e| e.from_port != 0 || e.to_port != 0 || e.kind != 0)
    {
        return Err(CudaError::NOT_SUPPORTED);
    }
    Ok(())
}

/// Writes `items` to an array of capacity `*count` (or only the count when
/// `out` is NULL), as the graph queries do; edge data, when asked for, is
/// the default.
pub(crate) fn list_out(
    items: &[Handle],
    out: *mut Node,
    edges: *mut EdgeData,
    count: *mut usize,
) -> Result<(), CudaError> {
    if count.is_null() {
        return Err(CudaError::INVALID_VALUE);
    }
    if out.is_null() {
        return write_out(count, items.len());
    }
    // SAFETY: non-NULL, checked above.
    let capacity = unsafe { *count };
    for (i, &item) in items.iter().take(capacity).enumerate() {
        // SAFETY: the caller's arrays hold `capacity` entries.
        unsafe {
            *out.add(i) = item as Node;
            if !edges.is_null() {
                *edges.add(i) = EdgeData::default();
            }
        }
    }
    if capacity > items.len() {
        for i in items.len()..capacity {
            // SAFETY: as above; the unused entries are NULL.
            unsafe {
                *out.add(i) = std::ptr::null_mut();
                if !edges.is_null() {
                    *edges.add(i) = EdgeData::default();
                }
            }
        }
    }
    write_out(count, items.len())
}

pub(crate) fn add(
    node: *mut Node,
    graph: Graph,
    deps: *const Node,
    count: usize,
    kind: impl FnOnce() -> Result<NodeKind, CudaError>,
) -> Result<(), CudaError> {
    if node.is_null() {
        return Err(CudaError::INVALID_VALUE);
    }
    let deps = handles(deps, count)?;
    let kind = kind()?;
    match graph::add_node(h(graph), &deps, kind.clone()) {
        Ok(n) => write_out(node, n as Node),
        Err(e) => {
            // What the parameters reserved (graph memory, conditional
            // bodies) goes back.
            kind.dropped();
            graph::discard(&kind);
            Err(e)
        }
    }
}

pub(crate) fn param<'a, T>(p: *const T) -> Result<&'a T, CudaError> {
    // SAFETY: the API passes a valid structure or NULL.
    unsafe { p.as_ref() }.ok_or(CudaError::INVALID_VALUE)
}

fn kernel_kind(p: *const KernelNodeParams) -> Result<NodeKind, CudaError> {
    let p = param(p)?;
    if p.func.is_null() {
        return Err(CudaError::INVALID_DEVICE_FUNCTION);
    }
    let args = graph::kernel_args(p.kernel_params, p.extra)?;
    let device = rt().current_device()?;
    let node = graph::kernel_node(
        p.func as u64,
        device,
        p.grid.into(),
        p.block.into(),
        u64::from(p.shared_mem_bytes),
        args,
    )
    .map_err(|e| match e {
        CudaError::INVALID_RESOURCE_HANDLE => CudaError::INVALID_DEVICE_FUNCTION,
        e => e,
    })?;
    Ok(NodeKind::Kernel(node))
}

pub(crate) fn memset_kind(p: *const MemsetParams) -> Result<NodeKind, CudaError> {
    let p = param(p)?;
    let node = MemsetNode {
        dst: p.dst as u64,
        pitch: p.pitch as u64,
        value: p.value,
        element: p.element_size,
        width: p.width as u64,
        height: p.height as u64,
    };
    exec::check_memset(&node)?;
    Ok(NodeKind::Memset(node))
}

pub(crate) fn host_kind(p: *const HostNodeParams) -> Result<NodeKind, CudaError> {
    let p = param(p)?;
    let func = p.func.ok_or(CudaError::INVALID_VALUE)? as usize;
    Ok(NodeKind::Host(HostNode {
        func,
        data: p.user_data as usize,
    }))
}

/// A 3-D copy between linear memory and CUDA arrays. With an array at
/// either end the extent and the array's x position count its elements;
/// the x position of a pointer end counts bytes.
pub(crate) fn memcpy_kind(p: *const Memcpy3DParms) -> Result<NodeKind, CudaError> {
    let p = param(p)?;
    let e = &p.extent;
    if e.width == 0 || e.height == 0 || e.depth == 0 {
        return Err(CudaError::INVALID_VALUE);
    }
    let element = match [p.src_array, p.dst_array]
        .into_iter()
        .find(|a| !a.is_null())
    {
        Some(a) => crate::image::array(a as u64)?.format.bytes(),
        None => 1,
    };
    let width = (e.width as u64)
        .checked_mul(element)
        .ok_or(CudaError::INVALID_VALUE)?;
    let (height, depth) = (e.height as u64, e.depth as u64);
    // Address, row pitch and rows per slice of one end.
    let end =
        |array: *mut c_void, pos: &Pos, ptr: &PitchedPtr| -> Result<(u64, u64, u64), CudaError> {
            if !array.is_null() {
                let h = array as u64;
                let x = (pos.x as u64)
                    .checked_mul(element)
                    .ok_or(CudaError::INVALID_VALUE)?;
                let (y, z) = (pos.y as u64, pos.z as u64);
                // The far corner must lie in the array too.
                crate::image::array_at(h, x + width - 1, y + height - 1, z + depth - 1)?;
                return crate::image::array_at(h, x, y, z);
            }
            if ptr.ptr.is_null() {
                return Err(CudaError::INVALID_VALUE);
            }
            if (height > 1 || depth > 1) && width > ptr.pitch as u64 {
                return Err(CudaError::INVALID_PITCH_VALUE);
            }
            let rows = ptr.ysize.max(1) as u64;
            let at = (pos.z as u64)
                .checked_mul(rows)
                .and_then(|r| r.checked_add(pos.y as u64))
                .and_then(|r| r.checked_mul(ptr.pitch as u64))
                .and_then(|o| o.checked_add(pos.x as u64))
                .and_then(|o| (ptr.ptr as u64).checked_add(o))
                .ok_or(CudaError::INVALID_VALUE)?;
            Ok((
                at,
                (ptr.pitch as u64).max(width),
                (ptr.ysize as u64).max(height),
            ))
        };
    let (src, src_pitch, src_rows) = end(p.src_array, &p.src_pos, &p.src_ptr)?;
    let (dst, dst_pitch, dst_rows) = end(p.dst_array, &p.dst_pos, &p.dst_ptr)?;
    rcud_client::MemcpyKind::from_raw(p.kind)?;
    Ok(NodeKind::Memcpy(MemcpyNode {
        dst,
        dst_pitch,
        dst_rows,
        src,
        src_pitch,
        src_rows,
        width,
        height,
        depth,
        kind: p.kind,
    }))
}

fn memcpy_1d_kind(
    dst: *mut c_void,
    src: *const c_void,
    count: usize,
    kind: c_int,
) -> Result<NodeKind, CudaError> {
    rcud_client::MemcpyKind::from_raw(kind)?;
    if dst.is_null() || src.is_null() || count == 0 {
        return Err(CudaError::INVALID_VALUE);
    }
    Ok(NodeKind::Memcpy(MemcpyNode::linear(
        dst as u64,
        src as u64,
        count as u64,
        kind,
    )))
}

/// `cudaMemcpyHostToDevice`, `DeviceToHost`, `DeviceToDevice`, `Default`.
const H2D: c_int = 1;
const D2H: c_int = 2;
const D2D: c_int = 3;
const DEFAULT: c_int = 4;

/// The device address of `offset` bytes into `symbol`, holding `count` bytes.
fn symbol_at(symbol: *const c_void, count: usize, offset: usize) -> Result<u64, CudaError> {
    let (_, ptr, size) = rt().symbol(symbol as u64)?;
    match (offset as u64).checked_add(count as u64) {
        Some(end) if end <= size => Ok(ptr + offset as u64),
        _ => Err(CudaError::INVALID_VALUE),
    }
}

fn to_symbol_kind(
    symbol: *const c_void,
    src: *const c_void,
    count: usize,
    offset: usize,
    kind: c_int,
) -> Result<NodeKind, CudaError> {
    if !matches!(kind, H2D | D2D | DEFAULT) {
        return Err(CudaError::INVALID_MEMCPY_DIRECTION);
    }
    let dst = symbol_at(symbol, count, offset)?;
    memcpy_1d_kind(dst as *mut c_void, src, count, kind)
}

fn from_symbol_kind(
    dst: *mut c_void,
    symbol: *const c_void,
    count: usize,
    offset: usize,
    kind: c_int,
) -> Result<NodeKind, CudaError> {
    if !matches!(kind, D2H | D2D | DEFAULT) {
        return Err(CudaError::INVALID_MEMCPY_DIRECTION);
    }
    let src = symbol_at(symbol, count, offset)?;
    memcpy_1d_kind(dst, src as *const c_void, count, kind)
}

pub(crate) fn event_kind(event: *mut c_void, record: bool) -> Result<NodeKind, CudaError> {
    if !rt().event_exists(event as u64) {
        return Err(CudaError::INVALID_RESOURCE_HANDLE);
    }
    Ok(if record {
        NodeKind::EventRecord(event as u64)
    } else {
        NodeKind::EventWait(event as u64)
    })
}

// ---- graphs ------------------------------------------------------------------

#[no_mangle]
pub extern "C" fn cudaGraphCreate(graph: *mut Graph, flags: c_uint) -> CudaErrorT {
    guard(|| graph_create(graph, flags))
}

pub(crate) fn graph_create(graph: *mut Graph, flags: c_uint) -> Result<(), CudaError> {
    if flags != 0 || graph.is_null() {
        return Err(CudaError::INVALID_VALUE);
    }
    write_out(graph, graphs().lock().create() as Graph)
}

#[no_mangle]
pub extern "C" fn cudaGraphDestroy(graph: Graph) -> CudaErrorT {
    guard(|| graphs().lock().destroy(h(graph)))
}

#[no_mangle]
pub extern "C" fn cudaGraphClone(clone: *mut Graph, original: Graph) -> CudaErrorT {
    guard(|| {
        let copy = graphs().lock().clone_graph(h(original))?;
        write_out(clone, copy as Graph)
    })
}

#[no_mangle]
pub extern "C" fn cudaGraphNodeFindInClone(
    node: *mut Node,
    original: Node,
    clone: Graph,
) -> CudaErrorT {
    guard(|| find_in_clone(node, original, clone))
}

pub(crate) fn find_in_clone(
    node: *mut Node,
    original: Node,
    clone: Graph,
) -> Result<(), CudaError> {
    let all = graphs().lock();
    let found = all
        .graph(h(clone))?
        .cloned_from
        .get(&h(original))
        .copied()
        .ok_or(CudaError::INVALID_VALUE)?;
    write_out(node, found as Node)
}

#[no_mangle]
pub extern "C" fn cudaGraphGetNodes(
    graph: Graph,
    nodes: *mut Node,
    count: *mut usize,
) -> CudaErrorT {
    guard(|| get_nodes(graph, nodes, count))
}

pub(crate) fn get_nodes(
    graph: Graph,
    nodes: *mut Node,
    count: *mut usize,
) -> Result<(), CudaError> {
    let order = graphs().lock().graph(h(graph))?.order.clone();
    list_out(&order, nodes, std::ptr::null_mut(), count)
}

#[no_mangle]
pub extern "C" fn cudaGraphGetRootNodes(
    graph: Graph,
    nodes: *mut Node,
    count: *mut usize,
) -> CudaErrorT {
    guard(|| get_root_nodes(graph, nodes, count))
}

pub(crate) fn get_root_nodes(
    graph: Graph,
    nodes: *mut Node,
    count: *mut usize,
) -> Result<(), CudaError> {
    let roots: Vec<Handle> = {
        let all = graphs().lock();
        let g = all.graph(h(graph))?;
        g.order
            .iter()
            .copied()
            .filter(|n| g.nodes[n].deps.is_empty())
            .collect()
    };
    list_out(&roots, nodes, std::ptr::null_mut(), count)
}

#[no_mangle]
pub extern "C" fn cudaGraphGetEdges(
    graph: Graph,
    from: *mut Node,
    to: *mut Node,
    edges: *mut EdgeData,
    count: *mut usize,
) -> CudaErrorT {
    guard(|| get_edges(graph, from, to, edges, count))
}

pub(crate) fn get_edges(
    graph: Graph,
    from: *mut Node,
    to: *mut Node,
    edges: *mut EdgeData,
    count: *mut usize,
) -> Result<(), CudaError> {
    let pairs: Vec<(Handle, Handle)> = {
        let all = graphs().lock();
        let g = all.graph(h(graph))?;
        g.order
            .iter()
            .flat_map(|n| g.nodes[n].deps.iter().map(move |d| (*d, *n)))
            .collect()
    };
    if from.is_null() != to.is_null() {
        return Err(CudaError::INVALID_VALUE);
    }
    let froms: Vec<Handle> = pairs.iter().map(|p| p.0).collect();
    let tos: Vec<Handle> = pairs.iter().map(|p| p.1).collect();
    if !from.is_null() {
        // SAFETY: non-NULL; read before the outputs are written.
        let capacity = unsafe { *count };
        list_out(&froms, from, edges, count)?;
        write_out(count, capacity)?;
    }
    list_out(&tos, to, std::ptr::null_mut(), count)
}

pub(crate) fn edge_lists(
    from: *const Node,
    to: *const Node,
    count: usize,
) -> Result<Vec<(Handle, Handle)>, CudaError> {
    let from = handles(from, count)?;
    let to = handles(to, count)?;
    Ok(from.into_iter().zip(to).collect())
}

#[no_mangle]
pub extern "C" fn cudaGraphAddDependencies(
    graph: Graph,
    from: *const Node,
    to: *const Node,
    edges: *const EdgeData,
    count: usize,
) -> CudaErrorT {
    guard(|| add_dependencies(graph, from, to, edges, count))
}

pub(crate) fn add_dependencies(
    graph: Graph,
    from: *const Node,
    to: *const Node,
    edges: *const EdgeData,
    count: usize,
) -> Result<(), CudaError> {
    default_edges(edges, count)?;
    let pairs = edge_lists(from, to, count)?;
    let mut all = graphs().lock();
    for &(f, t) in &pairs {
        if all.owner.get(&f) != Some(&h(graph)) || all.owner.get(&t) != Some(&h(graph)) || f == t {
            return Err(CudaError::INVALID_VALUE);
        }
        let g = all.graph(h(graph))?;
        if g.nodes[&t].deps.contains(&f) {
            return Err(CudaError::INVALID_VALUE);
        }
        // An edge that closes a cycle is refused.
        if g.reaches(t, f) {
            return Err(CudaError::INVALID_VALUE);
        }
        all.node_mut(t)?.deps.push(f);
    }
    Ok(())
}

#[no_mangle]
pub extern "C" fn cudaGraphRemoveDependencies(
    graph: Graph,
    from: *const Node,
    to: *const Node,
    edges: *const EdgeData,
    count: usize,
) -> CudaErrorT {
    guard(|| remove_dependencies(graph, from, to, edges, count))
}

pub(crate) fn remove_dependencies(
    graph: Graph,
    from: *const Node,
    to: *const Node,
    edges: *const EdgeData,
    count: usize,
) -> Result<(), CudaError> {
    default_edges(edges, count)?;
    let pairs = edge_lists(from, to, count)?;
    let mut all = graphs().lock();
    for &(f, t) in &pairs {
        if all.owner.get(&t) != Some(&h(graph)) {
            return Err(CudaError::INVALID_VALUE);
        }
        let node = all.node_mut(t)?;
        let before = node.deps.len();
        node.deps.retain(|&d| d != f);
        if node.deps.len() == before {
            return Err(CudaError::INVALID_VALUE);
        }
    }
    Ok(())
}

#[no_mangle]
pub extern "C" fn cudaGraphDestroyNode(node: Node) -> CudaErrorT {
    guard(|| graphs().lock().destroy_node(h(node)))
}

#[no_mangle]
pub extern "C" fn cudaGraphNodeGetType(node: Node, kind: *mut c_int) -> CudaErrorT {
    guard(|| write_out(kind, graph::node_kind(h(node))?.type_code()))
}

#[no_mangle]
pub extern "C" fn cudaGraphNodeGetContainingGraph(node: Node, graph: *mut Graph) -> CudaErrorT {
    guard(|| write_out(graph, graphs().lock().node(h(node))?.0 as Graph))
}

#[no_mangle]
pub extern "C" fn cudaGraphNodeGetDependencies(
    node: Node,
    deps: *mut Node,
    edges: *mut EdgeData,
    count: *mut usize,
) -> CudaErrorT {
    guard(|| node_dependencies(node, deps, edges, count))
}

pub(crate) fn node_dependencies(
    node: Node,
    deps: *mut Node,
    edges: *mut EdgeData,
    count: *mut usize,
) -> Result<(), CudaError> {
    let list = graphs().lock().node(h(node))?.1.deps.clone();
    list_out(&list, deps, edges, count)
}

#[no_mangle]
pub extern "C" fn cudaGraphNodeGetDependentNodes(
    node: Node,
    dependents: *mut Node,
    edges: *mut EdgeData,
    count: *mut usize,
) -> CudaErrorT {
    guard(|| node_dependents(node, dependents, edges, count))
}

pub(crate) fn node_dependents(
    node: Node,
    dependents: *mut Node,
    edges: *mut EdgeData,
    count: *mut usize,
) -> Result<(), CudaError> {
    let list = {
        let all = graphs().lock();
        let (g, _) = all.node(h(node))?;
        all.graph(g)?.dependents(h(node))
    };
    list_out(&list, dependents, edges, count)
}

#[no_mangle]
pub extern "C" fn cudaGraphDebugDotPrint(
    graph: Graph,
    path: *const c_char,
    flags: c_uint,
) -> CudaErrorT {
    guard(|| debug_dot_print(graph, path, flags))
}

pub(crate) fn debug_dot_print(
    graph: Graph,
    path: *const c_char,
    flags: c_uint,
) -> Result<(), CudaError> {
    if path.is_null() {
        return Err(CudaError::INVALID_VALUE);
    }
    // SAFETY: the API passes a NUL-terminated path.
    let path = unsafe { CStr::from_ptr(path) }
        .to_str()
        .map_err(|_| CudaError::INVALID_VALUE)?;
    let text = graph::dot(h(graph), flags)?;
    std::fs::write(path, text).map_err(|e| {
        tracing::warn!("cudaGraphDebugDotPrint: cannot write {path}: {e}");
        CudaError::OPERATING_SYSTEM
    })
}

// ---- nodes -------------------------------------------------------------------

#[no_mangle]
pub extern "C" fn cudaGraphAddKernelNode(
    node: *mut Node,
    graph: Graph,
    deps: *const Node,
    count: usize,
    params: *const KernelNodeParams,
) -> CudaErrorT {
    guard(|| add(node, graph, deps, count, || kernel_kind(params)))
}

/// Argument copies handed out by `cudaGraphKernelNodeGetParams`: node ->
/// (packed values, one pointer per parameter into them).
pub(crate) type ArgCopies = std::collections::HashMap<Handle, (Box<[u8]>, Box<[usize]>)>;

pub(crate) fn arg_copies() -> &'static parking_lot::Mutex<ArgCopies> {
    static COPIES: std::sync::OnceLock<parking_lot::Mutex<ArgCopies>> = std::sync::OnceLock::new();
    COPIES.get_or_init(Default::default)
}

#[no_mangle]
pub extern "C" fn cudaGraphKernelNodeGetParams(
    node: Node,
    out: *mut KernelNodeParams,
) -> CudaErrorT {
    guard(|| kernel_params_out(node, out))
}

pub(crate) fn kernel_params_out(node: Node, out: *mut KernelNodeParams) -> Result<(), CudaError> {
    let k = match graph::node_kind(h(node))? {
        NodeKind::Kernel(k) => k,
        // A captured library call: CUDA's library kernels, which rcud has not.
        NodeKind::Library(_) => return Err(CudaError::NOT_SUPPORTED),
        _ => return Err(CudaError::INVALID_VALUE),
    };
    if out.is_null() {
        return Err(CudaError::INVALID_VALUE);
    }
    let kernel_params = keep_arg_copies(h(node), &k);
    write_out(
        out,
        KernelNodeParams {
            func: k.func as *mut c_void,
            grid: k.grid.into(),
            block: k.block.into(),
            shared_mem_bytes: k.shared_mem,
            kernel_params,
            extra: std::ptr::null_mut(),
        },
    )
}

/// Copies of a kernel node's arguments and one pointer per parameter into
/// them, as `kernelParams`; they live until the node's parameters are
/// asked for again.
pub(crate) fn keep_arg_copies(node: Handle, k: &crate::graph::KernelNode) -> *mut *mut c_void {
    let values: Box<[u8]> = k.params.clone().into_boxed_slice();
    let pointers: Box<[usize]> = k
        .layout
        .iter()
        .map(|&(offset, _)| values.as_ptr() as usize + offset)
        .collect();
    let kernel_params = pointers.as_ptr() as *mut *mut c_void;
    arg_copies().lock().insert(node, (values, pointers));
    kernel_params
}

#[no_mangle]
pub extern "C" fn cudaGraphKernelNodeSetParams(
    node: Node,
    params: *const KernelNodeParams,
) -> CudaErrorT {
    guard(|| graph::set_node_kind(h(node), kernel_kind(params)?))
}

#[no_mangle]
pub extern "C" fn cudaGraphAddMemsetNode(
    node: *mut Node,
    graph: Graph,
    deps: *const Node,
    count: usize,
    params: *const MemsetParams,
) -> CudaErrorT {
    guard(|| add(node, graph, deps, count, || memset_kind(params)))
}

#[no_mangle]
pub extern "C" fn cudaGraphMemsetNodeGetParams(node: Node, out: *mut MemsetParams) -> CudaErrorT {
    guard(|| memset_params_out(node, out))
}

pub(crate) fn memset_params_out(node: Node, out: *mut MemsetParams) -> Result<(), CudaError> {
    let NodeKind::Memset(m) = graph::node_kind(h(node))? else {
        return Err(CudaError::INVALID_VALUE);
    };
    write_out(
        out,
        MemsetParams {
            dst: m.dst as *mut c_void,
            pitch: m.pitch as usize,
            value: m.value,
            element_size: m.element,
            width: m.width as usize,
            height: m.height as usize,
        },
    )
}

#[no_mangle]
pub extern "C" fn cudaGraphMemsetNodeSetParams(
    node: Node,
    params: *const MemsetParams,
) -> CudaErrorT {
    guard(|| graph::set_node_kind(h(node), memset_kind(params)?))
}

#[no_mangle]
pub extern "C" fn cudaGraphAddHostNode(
    node: *mut Node,
    graph: Graph,
    deps: *const Node,
    count: usize,
    params: *const HostNodeParams,
) -> CudaErrorT {
    guard(|| add(node, graph, deps, count, || host_kind(params)))
}

#[no_mangle]
pub extern "C" fn cudaGraphHostNodeGetParams(node: Node, out: *mut HostNodeParams) -> CudaErrorT {
    guard(|| host_params_out(node, out))
}

pub(crate) fn host_params_out(node: Node, out: *mut HostNodeParams) -> Result<(), CudaError> {
    let NodeKind::Host(n) = graph::node_kind(h(node))? else {
        return Err(CudaError::INVALID_VALUE);
    };
    // SAFETY: `func` is the address of a cudaHostFn_t the application gave.
    let func: HostFn = unsafe { std::mem::transmute(n.func) };
    write_out(
        out,
        HostNodeParams {
            func,
            user_data: n.data as *mut c_void,
        },
    )
}

#[no_mangle]
pub extern "C" fn cudaGraphHostNodeSetParams(
    node: Node,
    params: *const HostNodeParams,
) -> CudaErrorT {
    guard(|| graph::set_node_kind(h(node), host_kind(params)?))
}

#[no_mangle]
pub extern "C" fn cudaGraphAddMemcpyNode(
    node: *mut Node,
    graph: Graph,
    deps: *const Node,
    count: usize,
    params: *const Memcpy3DParms,
) -> CudaErrorT {
    guard(|| add(node, graph, deps, count, || memcpy_kind(params)))
}

#[no_mangle]
pub extern "C" fn cudaGraphAddMemcpyNode1D(
    node: *mut Node,
    graph: Graph,
    deps: *const Node,
    count: usize,
    dst: *mut c_void,
    src: *const c_void,
    bytes: usize,
    kind: c_int,
) -> CudaErrorT {
    guard(|| {
        add(node, graph, deps, count, || {
            memcpy_1d_kind(dst, src, bytes, kind)
        })
    })
}

#[no_mangle]
pub extern "C" fn cudaGraphAddMemcpyNodeToSymbol(
    node: *mut Node,
    graph: Graph,
    deps: *const Node,
    count: usize,
    symbol: *const c_void,
    src: *const c_void,
    bytes: usize,
    offset: usize,
    kind: c_int,
) -> CudaErrorT {
    guard(|| {
        add(node, graph, deps, count, || {
            to_symbol_kind(symbol, src, bytes, offset, kind)
        })
    })
}

#[no_mangle]
pub extern "C" fn cudaGraphAddMemcpyNodeFromSymbol(
    node: *mut Node,
    graph: Graph,
    deps: *const Node,
    count: usize,
    dst: *mut c_void,
    symbol: *const c_void,
    bytes: usize,
    offset: usize,
    kind: c_int,
) -> CudaErrorT {
    guard(|| {
        add(node, graph, deps, count, || {
            from_symbol_kind(dst, symbol, bytes, offset, kind)
        })
    })
}

#[no_mangle]
pub extern "C" fn cudaGraphMemcpyNodeGetParams(node: Node, out: *mut Memcpy3DParms) -> CudaErrorT {
    guard(|| memcpy_params_out(node, out))
}

pub(crate) fn memcpy_params_out(node: Node, out: *mut Memcpy3DParms) -> Result<(), CudaError> {
    let NodeKind::Memcpy(c) = graph::node_kind(h(node))? else {
        return Err(CudaError::INVALID_VALUE);
    };
    let pitched = |ptr: u64, pitch: u64, rows: u64| PitchedPtr {
        ptr: ptr as *mut c_void,
        pitch: pitch as usize,
        xsize: c.width as usize,
        ysize: rows as usize,
    };
    write_out(
        out,
        Memcpy3DParms {
            src_array: std::ptr::null_mut(),
            src_pos: Pos::default(),
            src_ptr: pitched(c.src, c.src_pitch, c.src_rows),
            dst_array: std::ptr::null_mut(),
            dst_pos: Pos::default(),
            dst_ptr: pitched(c.dst, c.dst_pitch, c.dst_rows),
            extent: Extent {
                width: c.width as usize,
                height: c.height as usize,
                depth: c.depth as usize,
            },
            kind: c.kind,
        },
    )
}

#[no_mangle]
pub extern "C" fn cudaGraphMemcpyNodeSetParams(
    node: Node,
    params: *const Memcpy3DParms,
) -> CudaErrorT {
    guard(|| graph::set_node_kind(h(node), memcpy_kind(params)?))
}

#[no_mangle]
pub extern "C" fn cudaGraphMemcpyNodeSetParams1D(
    node: Node,
    dst: *mut c_void,
    src: *const c_void,
    count: usize,
    kind: c_int,
) -> CudaErrorT {
    guard(|| graph::set_node_kind(h(node), memcpy_1d_kind(dst, src, count, kind)?))
}

#[no_mangle]
pub extern "C" fn cudaGraphMemcpyNodeSetParamsToSymbol(
    node: Node,
    symbol: *const c_void,
    src: *const c_void,
    count: usize,
    offset: usize,
    kind: c_int,
) -> CudaErrorT {
    guard(|| graph::set_node_kind(h(node), to_symbol_kind(symbol, src, count, offset, kind)?))
}

#[no_mangle]
pub extern "C" fn cudaGraphMemcpyNodeSetParamsFromSymbol(
    node: Node,
    dst: *mut c_void,
    symbol: *const c_void,
    count: usize,
    offset: usize,
    kind: c_int,
) -> CudaErrorT {
    guard(|| graph::set_node_kind(h(node), from_symbol_kind(dst, symbol, count, offset, kind)?))
}

#[no_mangle]
pub extern "C" fn cudaGraphAddChildGraphNode(
    node: *mut Node,
    graph: Graph,
    deps: *const Node,
    count: usize,
    child: Graph,
) -> CudaErrorT {
    guard(|| {
        add(node, graph, deps, count, || {
            // The node owns a copy of the child graph, as in CUDA.
            Ok(NodeKind::Child(graphs().lock().clone_graph(h(child))?))
        })
    })
}

#[no_mangle]
pub extern "C" fn cudaGraphChildGraphNodeGetGraph(node: Node, graph: *mut Graph) -> CudaErrorT {
    guard(|| match graph::node_kind(h(node))? {
        NodeKind::Child(c) => write_out(graph, c as Graph),
        _ => Err(CudaError::INVALID_VALUE),
    })
}

#[no_mangle]
pub extern "C" fn cudaGraphAddEmptyNode(
    node: *mut Node,
    graph: Graph,
    deps: *const Node,
    count: usize,
) -> CudaErrorT {
    guard(|| add(node, graph, deps, count, || Ok(NodeKind::Empty)))
}

#[no_mangle]
pub extern "C" fn cudaGraphAddEventRecordNode(
    node: *mut Node,
    graph: Graph,
    deps: *const Node,
    count: usize,
    event: *mut c_void,
) -> CudaErrorT {
    guard(|| add(node, graph, deps, count, || event_kind(event, true)))
}

#[no_mangle]
pub extern "C" fn cudaGraphAddEventWaitNode(
    node: *mut Node,
    graph: Graph,
    deps: *const Node,
    count: usize,
    event: *mut c_void,
) -> CudaErrorT {
    guard(|| add(node, graph, deps, count, || event_kind(event, false)))
}

pub(crate) fn node_event(node: Node, record: bool) -> Result<u64, CudaError> {
    match graph::node_kind(h(node))? {
        NodeKind::EventRecord(e) if record => Ok(e),
        NodeKind::EventWait(e) if !record => Ok(e),
        _ => Err(CudaError::INVALID_VALUE),
    }
}

#[no_mangle]
pub extern "C" fn cudaGraphEventRecordNodeGetEvent(
    node: Node,
    event: *mut *mut c_void,
) -> CudaErrorT {
    guard(|| write_out(event, node_event(node, true)? as *mut c_void))
}

#[no_mangle]
pub extern "C" fn cudaGraphEventRecordNodeSetEvent(node: Node, event: *mut c_void) -> CudaErrorT {
    guard(|| graph::set_node_kind(h(node), event_kind(event, true)?))
}

#[no_mangle]
pub extern "C" fn cudaGraphEventWaitNodeGetEvent(
    node: Node,
    event: *mut *mut c_void,
) -> CudaErrorT {
    guard(|| write_out(event, node_event(node, false)? as *mut c_void))
}

#[no_mangle]
pub extern "C" fn cudaGraphEventWaitNodeSetEvent(node: Node, event: *mut c_void) -> CudaErrorT {
    guard(|| graph::set_node_kind(h(node), event_kind(event, false)?))
}

/// `cudaMemAllocNodeParams`.
#[repr(C)]
pub(crate) struct MemAllocNodeParams {
    pool_props: super::mempool::MemPoolProps,
    access_descs: *const c_void,
    access_desc_count: usize,
    bytesize: usize,
    dptr: *mut c_void,
}

/// `cudaMemAllocationTypePinned`, the only allocation type.
const ALLOCATION_PINNED: c_int = 1;

/// Reserves a memory alloc node's memory and writes its address back.
pub(crate) fn mem_alloc_kind(p: *mut MemAllocNodeParams) -> Result<NodeKind, CudaError> {
    // SAFETY: the API passes a valid structure or NULL; `dptr` is an output.
    let p = unsafe { p.as_mut() }.ok_or(CudaError::INVALID_VALUE)?;
    let props = &p.pool_props;
    if props.alloc_type != ALLOCATION_PINNED
        || props.handle_types != 0
        || props.location.kind != super::mempool::LOCATION_DEVICE
        || p.bytesize == 0
    {
        return Err(CudaError::INVALID_VALUE);
    }
    rt().props(props.location.id)?;
    let device = props.location.id as usize;
    let size = p.bytesize as u64;
    let ptr = graph::memory::reserve(device, size)?;
    p.dptr = ptr as *mut c_void;
    Ok(NodeKind::MemAlloc { ptr, size, device })
}

pub(crate) fn mem_free_kind(ptr: u64) -> Result<NodeKind, CudaError> {
    if !graph::memory::is_graph_memory(ptr) {
        return Err(CudaError::INVALID_VALUE);
    }
    Ok(NodeKind::MemFree(ptr))
}

#[no_mangle]
pub extern "C" fn cudaGraphAddMemAllocNode(
    node: *mut Node,
    graph: Graph,
    deps: *const Node,
    count: usize,
    params: *mut MemAllocNodeParams,
) -> CudaErrorT {
    guard(|| add(node, graph, deps, count, || mem_alloc_kind(params)))
}

#[no_mangle]
pub extern "C" fn cudaGraphAddMemFreeNode(
    node: *mut Node,
    graph: Graph,
    deps: *const Node,
    count: usize,
    dptr: *mut c_void,
) -> CudaErrorT {
    guard(|| add(node, graph, deps, count, || mem_free_kind(dptr as u64)))
}

#[no_mangle]
pub extern "C" fn cudaGraphMemAllocNodeGetParams(
    node: Node,
    out: *mut MemAllocNodeParams,
) -> CudaErrorT {
    guard(|| mem_alloc_params_out(node, out))
}

pub(crate) fn mem_alloc_params_out(
    node: Node,
    out: *mut MemAllocNodeParams,
) -> Result<(), CudaError> {
    let NodeKind::MemAlloc { ptr, size, device } = graph::node_kind(h(node))? else {
        return Err(CudaError::INVALID_VALUE);
    };
    // SAFETY: the API passes a valid structure or NULL.
    let out = unsafe { out.as_mut() }.ok_or(CudaError::INVALID_VALUE)?;
    out.pool_props.alloc_type = ALLOCATION_PINNED;
    out.pool_props.handle_types = 0;
    out.pool_props.location.kind = super::mempool::LOCATION_DEVICE;
    out.pool_props.location.id = device as c_int;
    out.access_descs = std::ptr::null();
    out.access_desc_count = 0;
    out.bytesize = size as usize;
    out.dptr = ptr as *mut c_void;
    Ok(())
}

#[no_mangle]
pub extern "C" fn cudaGraphMemFreeNodeGetParams(node: Node, dptr: *mut *mut c_void) -> CudaErrorT {
    guard(|| match graph::node_kind(h(node))? {
        NodeKind::MemFree(ptr) => write_out(dptr, ptr as *mut c_void),
        _ => Err(CudaError::INVALID_VALUE),
    })
}

/// `cudaDeviceGraphMemTrim`: reservations go back as soon as nothing needs
/// them, so there is nothing left to trim.
#[no_mangle]
pub extern "C" fn cudaDeviceGraphMemTrim(device: c_int) -> CudaErrorT {
    guard(|| rt().props(device).map(|_| ()))
}

#[no_mangle]
pub extern "C" fn cudaDeviceGetGraphMemAttribute(
    device: c_int,
    attr: c_int,
    value: *mut c_void,
) -> CudaErrorT {
    guard(|| graph_mem_attribute(device, attr, value))
}

pub(crate) fn graph_mem_attribute(
    device: c_int,
    attr: c_int,
    value: *mut c_void,
) -> Result<(), CudaError> {
    rt().props(device)?;
    let v = graph::memory::attribute(device as usize, attr)?;
    write_out(value as *mut u64, v)
}

#[no_mangle]
pub extern "C" fn cudaDeviceSetGraphMemAttribute(
    device: c_int,
    attr: c_int,
    value: *mut c_void,
) -> CudaErrorT {
    guard(|| set_graph_mem_attribute(device, attr, value))
}

pub(crate) fn set_graph_mem_attribute(
    device: c_int,
    attr: c_int,
    value: *mut c_void,
) -> Result<(), CudaError> {
    rt().props(device)?;
    // SAFETY: the API passes a cuuint64_t or NULL.
    let v = unsafe { (value as *const u64).as_ref() }.ok_or(CudaError::INVALID_VALUE)?;
    graph::memory::reset_high(device as usize, attr, *v)
}

// ---- user objects and ids ------------------------------------------------------

#[no_mangle]
pub extern "C" fn cudaUserObjectCreate(
    object: *mut *mut c_void,
    ptr: *mut c_void,
    destroy: HostFn,
    initial: c_uint,
    flags: c_uint,
) -> CudaErrorT {
    guard(|| user_object_create(object, ptr, destroy, initial, flags))
}

pub(crate) fn user_object_create(
    object: *mut *mut c_void,
    ptr: *mut c_void,
    destroy: HostFn,
    initial: c_uint,
    flags: c_uint,
) -> Result<(), CudaError> {
    if object.is_null() {
        return Err(CudaError::INVALID_VALUE);
    }
    let destroy = destroy.map_or(0, |f| f as usize);
    let h = user_objects::create(ptr as usize, destroy, initial, flags)?;
    write_out(object, h as *mut c_void)
}

#[no_mangle]
pub extern "C" fn cudaUserObjectRetain(object: *mut c_void, count: c_uint) -> CudaErrorT {
    guard(|| user_objects::retain(h(object), count))
}

#[no_mangle]
pub extern "C" fn cudaUserObjectRelease(object: *mut c_void, count: c_uint) -> CudaErrorT {
    guard(|| user_objects::release(h(object), count))
}

/// `cudaGraphUserObjectMove`: the caller's references go to the graph.
const USER_OBJECT_MOVE: c_uint = 1;

pub(crate) fn graph_retain_user_object(
    graph: Graph,
    object: *mut c_void,
    count: c_uint,
    flags: c_uint,
) -> Result<(), CudaError> {
    if count == 0 || flags & !USER_OBJECT_MOVE != 0 {
        return Err(CudaError::INVALID_VALUE);
    }
    let mut all = graphs().lock();
    let g = all.graph_mut(h(graph))?;
    if flags & USER_OBJECT_MOVE == 0 {
        user_objects::retain(h(object), count)?;
    }
    *g.user_objects.entry(h(object)).or_default() += count;
    Ok(())
}

pub(crate) fn graph_release_user_object(
    graph: Graph,
    object: *mut c_void,
    count: c_uint,
) -> Result<(), CudaError> {
    let mut all = graphs().lock();
    let g = all.graph_mut(h(graph))?;
    let held = g
        .user_objects
        .get_mut(&h(object))
        .filter(|n| **n >= count && count > 0)
        .ok_or(CudaError::INVALID_VALUE)?;
    *held -= count;
    if *held == 0 {
        g.user_objects.remove(&h(object));
    }
    drop(all);
    user_objects::release(h(object), count)
}

#[no_mangle]
pub extern "C" fn cudaGraphRetainUserObject(
    graph: Graph,
    object: *mut c_void,
    count: c_uint,
    flags: c_uint,
) -> CudaErrorT {
    guard(|| graph_retain_user_object(graph, object, count, flags))
}

#[no_mangle]
pub extern "C" fn cudaGraphReleaseUserObject(
    graph: Graph,
    object: *mut c_void,
    count: c_uint,
) -> CudaErrorT {
    guard(|| graph_release_user_object(graph, object, count))
}

/// A graph's, executable graph's or node's id: from its handle, unique in
/// the process.
fn id_of(handle: Handle) -> c_uint {
    (handle >> 4) as c_uint
}

#[no_mangle]
pub extern "C" fn cudaGraphGetId(graph: Graph, id: *mut c_uint) -> CudaErrorT {
    guard(|| graph_id(graph, id))
}

pub(crate) fn graph_id(graph: Graph, id: *mut c_uint) -> Result<(), CudaError> {
    graphs().lock().graph(h(graph))?;
    write_out(id, id_of(h(graph)))
}

#[no_mangle]
pub extern "C" fn cudaGraphExecGetId(exec: Exec, id: *mut c_uint) -> CudaErrorT {
    guard(|| exec_id(exec, id))
}

pub(crate) fn exec_id(exec: Exec, id: *mut c_uint) -> Result<(), CudaError> {
    exec::flags(h(exec))?;
    write_out(id, id_of(h(exec)))
}

/// A node's id within its graph: its place in creation order.
#[no_mangle]
pub extern "C" fn cudaGraphNodeGetLocalId(node: Node, id: *mut c_uint) -> CudaErrorT {
    guard(|| node_local_id(node, id))
}

pub(crate) fn node_local_id(node: Node, id: *mut c_uint) -> Result<(), CudaError> {
    let all = graphs().lock();
    let (g, _) = all.node(h(node))?;
    let place = all
        .graph(g)?
        .order
        .iter()
        .position(|&n| n == h(node))
        .ok_or(CudaError::INVALID_VALUE)?;
    write_out(id, place as c_uint)
}

#[no_mangle]
pub extern "C" fn cudaGraphNodeGetToolsId(node: Node, id: *mut u64) -> CudaErrorT {
    guard(|| node_tools_id(node, id))
}

pub(crate) fn node_tools_id(node: Node, id: *mut u64) -> Result<(), CudaError> {
    graphs().lock().node(h(node))?;
    write_out(id, h(node))
}

// ---- executable graphs -------------------------------------------------------

#[no_mangle]
pub extern "C" fn cudaGraphInstantiate(
    exec_out: *mut Exec,
    graph: Graph,
    flags: u64,
) -> CudaErrorT {
    guard(|| {
        if exec_out.is_null() {
            return Err(CudaError::INVALID_VALUE);
        }
        write_out(exec_out, exec::instantiate(h(graph), flags)? as Exec)
    })
}

#[no_mangle]
pub extern "C" fn cudaGraphInstantiateWithFlags(
    exec_out: *mut Exec,
    graph: Graph,
    flags: u64,
) -> CudaErrorT {
    cudaGraphInstantiate(exec_out, graph, flags)
}

/// `cudaGraphInstantiateSuccess`, `cudaGraphInstantiateError`.
const INSTANTIATE_SUCCESS: c_int = 0;
const INSTANTIATE_ERROR: c_int = 1;
/// `cudaGraphInstantiateFlagUpload`.
const FLAG_UPLOAD: u64 = 2;

pub(crate) fn instantiate_with_params(
    exec_out: *mut Exec,
    graph: Graph,
    params: *mut InstantiateParams,
) -> Result<(), CudaError> {
    // SAFETY: the API passes a valid structure or NULL.
    let params = unsafe { params.as_mut() }.ok_or(CudaError::INVALID_VALUE)?;
    if exec_out.is_null() {
        return Err(CudaError::INVALID_VALUE);
    }
    let made = exec::instantiate(h(graph), params.flags).and_then(|e| {
        if params.flags & FLAG_UPLOAD != 0 {
            exec::upload(e, params.upload_stream as u64)?;
        }
        Ok(e)
    });
    params.err_node_out = std::ptr::null_mut();
    match made {
        Ok(e) => {
            params.result_out = INSTANTIATE_SUCCESS;
            write_out(exec_out, e as Exec)
        }
        Err(e) => {
            params.result_out = INSTANTIATE_ERROR;
            Err(e)
        }
    }
}

with_ptsz! {
    fn cudaGraphInstantiateWithParams / cudaGraphInstantiateWithParams_ptsz (exec_out: *mut Exec, graph: Graph, params: *mut InstantiateParams) {
        instantiate_with_params(exec_out, graph, params)
    }
}

#[no_mangle]
pub extern "C" fn cudaGraphExecDestroy(exec: Exec) -> CudaErrorT {
    guard(|| exec::destroy(h(exec)))
}

with_ptsz! {
    fn cudaGraphLaunch / cudaGraphLaunch_ptsz (exec: Exec, stream: Stream) {
        if capture::is_capturing(stream as u64) {
            // Launching a graph into a capture would nest it as a child graph.
            return Err(CudaError::STREAM_CAPTURE_UNSUPPORTED);
        }
        super::launch::printf_to_stdout();
        exec::launch(h(exec), stream as u64)
    }
}

with_ptsz! {
    fn cudaGraphUpload / cudaGraphUpload_ptsz (exec: Exec, stream: Stream) {
        exec::upload(h(exec), stream as u64)
    }
}

#[no_mangle]
pub extern "C" fn cudaGraphExecGetFlags(exec: Exec, flags: *mut u64) -> CudaErrorT {
    guard(|| write_out(flags, exec::flags(h(exec))?))
}

#[no_mangle]
pub extern "C" fn cudaGraphExecKernelNodeSetParams(
    exec: Exec,
    node: Node,
    params: *const KernelNodeParams,
) -> CudaErrorT {
    guard(|| exec::set_node(h(exec), h(node), kernel_kind(params)?))
}

#[no_mangle]
pub extern "C" fn cudaGraphExecMemsetNodeSetParams(
    exec: Exec,
    node: Node,
    params: *const MemsetParams,
) -> CudaErrorT {
    guard(|| exec::set_node(h(exec), h(node), memset_kind(params)?))
}

#[no_mangle]
pub extern "C" fn cudaGraphExecHostNodeSetParams(
    exec: Exec,
    node: Node,
    params: *const HostNodeParams,
) -> CudaErrorT {
    guard(|| exec::set_node(h(exec), h(node), host_kind(params)?))
}

#[no_mangle]
pub extern "C" fn cudaGraphExecMemcpyNodeSetParams(
    exec: Exec,
    node: Node,
    params: *const Memcpy3DParms,
) -> CudaErrorT {
    guard(|| exec::set_node(h(exec), h(node), memcpy_kind(params)?))
}

#[no_mangle]
pub extern "C" fn cudaGraphExecMemcpyNodeSetParams1D(
    exec: Exec,
    node: Node,
    dst: *mut c_void,
    src: *const c_void,
    count: usize,
    kind: c_int,
) -> CudaErrorT {
    guard(|| exec::set_node(h(exec), h(node), memcpy_1d_kind(dst, src, count, kind)?))
}

#[no_mangle]
pub extern "C" fn cudaGraphExecMemcpyNodeSetParamsToSymbol(
    exec: Exec,
    node: Node,
    symbol: *const c_void,
    src: *const c_void,
    count: usize,
    offset: usize,
    kind: c_int,
) -> CudaErrorT {
    guard(|| {
        exec::set_node(
            h(exec),
            h(node),
            to_symbol_kind(symbol, src, count, offset, kind)?,
        )
    })
}

#[no_mangle]
pub extern "C" fn cudaGraphExecMemcpyNodeSetParamsFromSymbol(
    exec: Exec,
    node: Node,
    dst: *mut c_void,
    symbol: *const c_void,
    count: usize,
    offset: usize,
    kind: c_int,
) -> CudaErrorT {
    guard(|| {
        exec::set_node(
            h(exec),
            h(node),
            from_symbol_kind(dst, symbol, count, offset, kind)?,
        )
    })
}

#[no_mangle]
pub extern "C" fn cudaGraphExecEventRecordNodeSetEvent(
    exec: Exec,
    node: Node,
    event: *mut c_void,
) -> CudaErrorT {
    guard(|| exec::set_node(h(exec), h(node), event_kind(event, true)?))
}

#[no_mangle]
pub extern "C" fn cudaGraphExecEventWaitNodeSetEvent(
    exec: Exec,
    node: Node,
    event: *mut c_void,
) -> CudaErrorT {
    guard(|| exec::set_node(h(exec), h(node), event_kind(event, false)?))
}

#[no_mangle]
pub extern "C" fn cudaGraphNodeSetEnabled(exec: Exec, node: Node, enabled: c_uint) -> CudaErrorT {
    guard(|| exec::set_enabled(h(exec), h(node), Some(enabled != 0)).map(|_| ()))
}

#[no_mangle]
pub extern "C" fn cudaGraphNodeGetEnabled(
    exec: Exec,
    node: Node,
    enabled: *mut c_uint,
) -> CudaErrorT {
    guard(|| {
        let on = exec::set_enabled(h(exec), h(node), None)?;
        write_out(enabled, c_uint::from(on))
    })
}

#[no_mangle]
pub extern "C" fn cudaGraphExecUpdate(
    exec: Exec,
    graph: Graph,
    info: *mut UpdateResultInfo,
) -> CudaErrorT {
    guard(|| exec_update(exec, graph, info))
}

pub(crate) fn exec_update(
    exec: Exec,
    graph: Graph,
    info: *mut UpdateResultInfo,
) -> Result<(), CudaError> {
    let outcome = exec::update(h(exec), h(graph))?;
    if !info.is_null() {
        write_out(
            info,
            UpdateResultInfo {
                result: outcome.result,
                error_node: outcome.error_node as Node,
                error_from_node: std::ptr::null_mut(),
            },
        )?;
    }
    match outcome.result {
        exec::update_result::SUCCESS => Ok(()),
        _ => Err(CudaError::GRAPH_EXEC_UPDATE_FAILURE),
    }
}

// ---- stream capture ------------------------------------------------------------

with_ptsz! {
    fn cudaStreamBeginCapture / cudaStreamBeginCapture_ptsz (stream: Stream, mode: c_int) {
        capture::begin(stream as u64, mode, None)
    }
}

pub(crate) fn begin_to_graph(
    stream: Stream,
    graph: Graph,
    deps: *const Node,
    edges: *const EdgeData,
    count: usize,
    mode: c_int,
) -> Result<(), CudaError> {
    default_edges(edges, count)?;
    let deps = handles(deps, count)?;
    capture::begin(stream as u64, mode, Some((h(graph), deps)))
}

with_ptsz! {
    fn cudaStreamBeginCaptureToGraph / cudaStreamBeginCaptureToGraph_ptsz (stream: Stream, graph: Graph, deps: *const Node, edges: *const EdgeData, count: usize, mode: c_int) {
        begin_to_graph(stream, graph, deps, edges, count, mode)
    }
}

with_ptsz! {
    fn cudaStreamEndCapture / cudaStreamEndCapture_ptsz (stream: Stream, graph: *mut Graph) {
        if graph.is_null() {
            if !capture::into_existing(stream as u64) {
                return Err(CudaError::INVALID_VALUE);
            }
            return capture::end(stream as u64).map(|_| ());
        }
        let made = capture::end(stream as u64);
        // A failed capture yields no graph.
        write_out(graph, *made.as_ref().unwrap_or(&0) as Graph)?;
        made.map(|_| ())
    }
}

with_ptsz! {
    fn cudaStreamIsCapturing / cudaStreamIsCapturing_ptsz (stream: Stream, status: *mut c_int) {
        write_out(status, capture::info(stream as u64)?.0)
    }
}

thread_local! {
    /// The dependencies last reported by `cudaStreamGetCaptureInfo`, valid
    /// until the thread's next call to it.
    static REPORTED_DEPS: std::cell::RefCell<Vec<Node>> = const { std::cell::RefCell::new(Vec::new()) };
}

#[allow(clippy::too_many_arguments)]
pub(crate) fn capture_info(
    stream: Stream,
    status: *mut c_int,
    id: *mut u64,
    graph: *mut Graph,
    deps: *mut *const Node,
    edges: *mut *const EdgeData,
    count: *mut usize,
) -> Result<(), CudaError> {
    let (st, capture_id, g, nodes) = capture::info(stream as u64)?;
    write_out(status, st)?;
    if st == capture::status::NONE {
        return Ok(());
    }
    if !id.is_null() {
        write_out(id, capture_id)?;
    }
    if !graph.is_null() {
        write_out(graph, g as Graph)?;
    }
    let n = nodes.len();
    let list = REPORTED_DEPS.with(|r| {
        let mut r = r.borrow_mut();
        *r = nodes.into_iter().map(|n| n as Node).collect();
        r.as_ptr()
    });
    if !deps.is_null() {
        write_out(deps, list as *const Node)?;
    }
    if !edges.is_null() {
        // Every edge is a default one: no edge data.
        write_out(edges, std::ptr::null())?;
    }
    if !count.is_null() {
        write_out(count, n)?;
    }
    Ok(())
}

with_ptsz! {
    fn cudaStreamGetCaptureInfo / cudaStreamGetCaptureInfo_ptsz (stream: Stream, status: *mut c_int, id: *mut u64, graph: *mut Graph, deps: *mut *const Node, edges: *mut *const EdgeData, count: *mut usize) {
        capture_info(stream, status, id, graph, deps, edges, count)
    }
}

pub(crate) fn update_capture_dependencies(
    stream: Stream,
    deps: *mut Node,
    edges: *const EdgeData,
    count: usize,
    flags: c_uint,
) -> Result<(), CudaError> {
    default_edges(edges, count)?;
    let nodes = handles(deps, count)?;
    capture::update_dependencies(stream as u64, &nodes, flags)
}

with_ptsz! {
    fn cudaStreamUpdateCaptureDependencies / cudaStreamUpdateCaptureDependencies_ptsz (stream: Stream, deps: *mut Node, edges: *const EdgeData, count: usize, flags: c_uint) {
        update_capture_dependencies(stream, deps, edges, count, flags)
    }
}

#[no_mangle]
pub extern "C" fn cudaThreadExchangeStreamCaptureMode(mode: *mut c_int) -> CudaErrorT {
    guard(|| exchange_capture_mode(mode))
}

pub(crate) fn exchange_capture_mode(mode: *mut c_int) -> Result<(), CudaError> {
    if mode.is_null() {
        return Err(CudaError::INVALID_VALUE);
    }
    // SAFETY: non-NULL, a cudaStreamCaptureMode in and out.
    let new = unsafe { *mode };
    let old = capture::exchange_mode(new)?;
    write_out(mode, old)
}

/// The node a kernel launch on a capturing stream becomes.
pub(crate) fn launch_node(
    func: u64,
    config: &rcud_client::runtime::LaunchConfig,
    args: KernelArgs,
) -> Result<NodeKind, CudaError> {
    let device = rt().stream_device(config.stream)?;
    let mut node = graph::kernel_node(
        func,
        device,
        config.grid,
        config.block,
        config.shared_mem,
        args,
    )?;
    node.cooperative = config.cooperative;
    Ok(NodeKind::Kernel(node))
}

// ---- kernel node attributes and generic node parameters -------------------------

#[no_mangle]
pub extern "C" fn cudaGraphKernelNodeSetAttribute(
    node: Node,
    id: c_uint,
    value: *const AttrValue,
) -> CudaErrorT {
    guard(|| graph::kernel_node_set_attribute(h(node), id, &read_attr_value(value)?))
}

#[no_mangle]
pub extern "C" fn cudaGraphKernelNodeGetAttribute(
    node: Node,
    id: c_uint,
    value: *mut AttrValue,
) -> CudaErrorT {
    guard(|| write_attr_value(value, graph::kernel_node_get_attribute(h(node), id)?))
}

#[no_mangle]
pub extern "C" fn cudaGraphKernelNodeCopyAttributes(dst: Node, src: Node) -> CudaErrorT {
    guard(|| graph::kernel_node_copy_attributes(h(dst), h(src)))
}

/// The runtime's kernel and copy members of `cudaGraphNodeParams`
/// (`cudaKernelNodeParamsV2` and `cudaMemcpyNodeParams` begin with the
/// structures of `cudaGraphAddKernelNode` and `cudaGraphAddMemcpyNode`).
pub(crate) const RUNTIME_PARAMS: ApiParams = ApiParams {
    kernel: |p| kernel_kind(p.cast()),
    memcpy: |p| memcpy_kind(p.cast()),
    kernel_out: |n, p| kernel_params_out(n as Node, p.cast()),
    memcpy_out: |n, p| memcpy_params_out(n as Node, p.cast()),
    contexts: false,
};

/// `cudaGraphAddNode`, also for the driver's structures.
pub(crate) fn add_generic(
    node: *mut Node,
    graph: Graph,
    deps: *const Node,
    edges: *const EdgeData,
    count: usize,
    params: *mut GraphNodeParams,
    api: &ApiParams,
) -> Result<(), CudaError> {
    default_edges(edges, count)?;
    add(node, graph, deps, count, || {
        graph::params::kind_of(params, api)
    })
}

#[no_mangle]
pub extern "C" fn cudaGraphAddNode(
    node: *mut Node,
    graph: Graph,
    deps: *const Node,
    edges: *const EdgeData,
    count: usize,
    params: *mut GraphNodeParams,
) -> CudaErrorT {
    guard(|| add_generic(node, graph, deps, edges, count, params, &RUNTIME_PARAMS))
}

/// `cudaGraphConditionalHandleCreate`.
#[no_mangle]
pub extern "C" fn cudaGraphConditionalHandleCreate(
    handle: *mut u64,
    graph: Graph,
    default_value: c_uint,
    flags: c_uint,
) -> CudaErrorT {
    guard(|| conditional_handle_create(handle, graph, default_value, flags))
}

/// `cudaGraphConditionalHandleCreate_v2`: execution contexts do not exist
/// here, so `ctx` must be NULL (the current device).
#[no_mangle]
pub extern "C" fn cudaGraphConditionalHandleCreate_v2(
    handle: *mut u64,
    graph: Graph,
    ctx: *mut c_void,
    default_value: c_uint,
    flags: c_uint,
) -> CudaErrorT {
    guard(|| {
        if !ctx.is_null() {
            return Err(CudaError::INVALID_VALUE);
        }
        conditional_handle_create(handle, graph, default_value, flags)
    })
}

/// A conditional handle of `graph` on the current device.
pub(crate) fn conditional_handle_create(
    handle: *mut u64,
    graph: Graph,
    default_value: c_uint,
    flags: c_uint,
) -> Result<(), CudaError> {
    if handle.is_null() {
        return Err(CudaError::INVALID_VALUE);
    }
    let cond = graph::conditional::create(h(graph), default_value, flags)?;
    write_out(handle, cond)
}

#[no_mangle]
pub extern "C" fn cudaGraphNodeSetParams(node: Node, params: *mut GraphNodeParams) -> CudaErrorT {
    guard(|| {
        let kind = graph::params::kind_of(params, &RUNTIME_PARAMS)?;
        graph::set_node_kind(h(node), kind)
    })
}

#[no_mangle]
pub extern "C" fn cudaGraphNodeGetParams(node: Node, params: *mut GraphNodeParams) -> CudaErrorT {
    guard(|| graph::params::write_params(h(node), params, &RUNTIME_PARAMS))
}

#[no_mangle]
pub extern "C" fn cudaGraphExecNodeSetParams(
    exec: Exec,
    node: Node,
    params: *mut GraphNodeParams,
) -> CudaErrorT {
    guard(|| {
        let kind = graph::params::kind_of(params, &RUNTIME_PARAMS)?;
        exec::set_node(h(exec), h(node), kind)
    })
}

#[no_mangle]
pub extern "C" fn cudaGraphExecChildGraphNodeSetParams(
    exec: Exec,
    node: Node,
    child: Graph,
) -> CudaErrorT {
    guard(|| exec::set_child(h(exec), h(node), h(child)))
}

// ---- external semaphore nodes ----------------------------------------------------

/// `cudaExternalSemaphoreSignalNodeParams` / `WaitNodeParams` (and the
/// driver's): the semaphores, their parameters, their count.
#[repr(C)]
pub(crate) struct ExtSemNodeParams {
    semaphores: *const *mut c_void,
    params: *const c_void,
    count: c_uint,
}

/// An external semaphore node: no semaphore can be imported
/// (`cudart/interop.rs`), so any named one is an invalid handle.
pub(crate) fn add_ext_sem_node(
    node: *mut Node,
    graph: Graph,
    deps: *const Node,
    count: usize,
    params: *const ExtSemNodeParams,
) -> Result<(), CudaError> {
    add(node, graph, deps, count, || {
        let p = param(params)?;
        if p.count == 0 || p.semaphores.is_null() || p.params.is_null() {
            return Err(CudaError::INVALID_VALUE);
        }
        Err(CudaError::INVALID_RESOURCE_HANDLE)
    })
}

/// A query or update of an external semaphore node: no node is one.
pub(crate) fn ext_sem_node(node: Node, params: *const c_void) -> Result<(), CudaError> {
    if params.is_null() {
        return Err(CudaError::INVALID_VALUE);
    }
    graph::node_kind(h(node))?;
    Err(CudaError::INVALID_VALUE)
}

#[no_mangle]
pub extern "C" fn cudaGraphAddExternalSemaphoresSignalNode(
    node: *mut Node,
    graph: Graph,
    deps: *const Node,
    count: usize,
    params: *const ExtSemNodeParams,
) -> CudaErrorT {
    guard(|| add_ext_sem_node(node, graph, deps, count, params))
}

#[no_mangle]
pub extern "C" fn cudaGraphAddExternalSemaphoresWaitNode(
    node: *mut Node,
    graph: Graph,
    deps: *const Node,
    count: usize,
    params: *const ExtSemNodeParams,
) -> CudaErrorT {
    guard(|| add_ext_sem_node(node, graph, deps, count, params))
}

#[no_mangle]
pub extern "C" fn cudaGraphExternalSemaphoresSignalNodeGetParams(
    node: Node,
    params: *mut ExtSemNodeParams,
) -> CudaErrorT {
    guard(|| ext_sem_node(node, params as *const c_void))
}

#[no_mangle]
pub extern "C" fn cudaGraphExternalSemaphoresWaitNodeGetParams(
    node: Node,
    params: *mut ExtSemNodeParams,
) -> CudaErrorT {
    guard(|| ext_sem_node(node, params as *const c_void))
}

#[no_mangle]
pub extern "C" fn cudaGraphExternalSemaphoresSignalNodeSetParams(
    node: Node,
    params: *const ExtSemNodeParams,
) -> CudaErrorT {
    guard(|| ext_sem_node(node, params as *const c_void))
}

#[no_mangle]
pub extern "C" fn cudaGraphExternalSemaphoresWaitNodeSetParams(
    node: Node,
    params: *const ExtSemNodeParams,
) -> CudaErrorT {
    guard(|| ext_sem_node(node, params as *const c_void))
}

#[no_mangle]
pub extern "C" fn cudaGraphExecExternalSemaphoresSignalNodeSetParams(
    _exec: Exec,
    node: Node,
    params: *const ExtSemNodeParams,
) -> CudaErrorT {
    guard(|| ext_sem_node(node, params as *const c_void))
}

#[no_mangle]
pub extern "C" fn cudaGraphExecExternalSemaphoresWaitNodeSetParams(
    _exec: Exec,
    node: Node,
    params: *const ExtSemNodeParams,
) -> CudaErrorT {
    guard(|| ext_sem_node(node, params as *const c_void))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn c_layouts_match_cuda_runtime_api_h() {
        assert_eq!(std::mem::size_of::<KernelNodeParams>(), 56);
        assert_eq!(std::mem::offset_of!(KernelNodeParams, kernel_params), 40);
        assert_eq!(std::mem::size_of::<MemsetParams>(), 40);
        assert_eq!(std::mem::size_of::<HostNodeParams>(), 16);
        assert_eq!(std::mem::size_of::<Memcpy3DParms>(), 160);
        assert_eq!(std::mem::offset_of!(Memcpy3DParms, dst_ptr), 96);
        assert_eq!(std::mem::offset_of!(Memcpy3DParms, kind), 152);
        assert_eq!(std::mem::size_of::<UpdateResultInfo>(), 24);
        assert_eq!(std::mem::size_of::<InstantiateParams>(), 32);
        assert_eq!(std::mem::size_of::<EdgeData>(), 8);
        assert_eq!(std::mem::size_of::<MemAllocNodeParams>(), 120);
        assert_eq!(std::mem::offset_of!(MemAllocNodeParams, bytesize), 104);
    }
}
