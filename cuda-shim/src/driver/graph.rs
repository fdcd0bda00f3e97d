//! The driver's graph API (`cuGraph*`, `cuStreamBeginCapture` and friends),
//! which NVIDIA's static runtime and CuPy call: the driver's structures and
//! codes over the same graphs as the runtime's ([`crate::graph`]).

use std::ffi::{c_char, c_void};
use std::os::raw::{c_int, c_uint};

use rcud_proto::CudaError;

use super::{context_device, initialized, out, DriverError, DriverResult};
use crate::abi::launch::{read_attr_value, write_attr_value, AttrValue};
use crate::cudart::graph::{
    self as rg, add, event_kind, h, host_kind, memset_kind, EdgeData, Exec, Graph, HostNodeParams,
    InstantiateParams, MemsetParams, Node, UpdateResultInfo,
};
use crate::cudart::stream::Stream;
use crate::graph::params::{ApiParams, GraphNodeParams};
use crate::graph::{self, capture, exec, graphs, MemcpyNode, NodeKind};

/// `CUDA_KERNEL_NODE_PARAMS` (v2; v1 ends before `kern`).
#[repr(C)]
pub(crate) struct KernelNodeParams {
    func: u64,
    grid: [c_uint; 3],
    block: [c_uint; 3],
    shared_mem_bytes: c_uint,
    kernel_params: *mut *mut c_void,
    extra: *mut *mut c_void,
    kern: u64,
    ctx: u64,
}

/// `CUDA_MEMCPY3D`.
#[repr(C)]
pub struct Memcpy3D {
    pub(super) src_x_in_bytes: usize,
    pub(super) src_y: usize,
    pub(super) src_z: usize,
    pub(super) src_lod: usize,
    pub(super) src_memory_type: c_uint,
    pub(super) src_host: *const c_void,
    pub(super) src_device: u64,
    pub(super) src_array: *mut c_void,
    pub(super) reserved0: *mut c_void,
    pub(super) src_pitch: usize,
    pub(super) src_height: usize,
    pub(super) dst_x_in_bytes: usize,
    pub(super) dst_y: usize,
    pub(super) dst_z: usize,
    pub(super) dst_lod: usize,
    pub(super) dst_memory_type: c_uint,
    pub(super) dst_host: *mut c_void,
    pub(super) dst_device: u64,
    pub(super) dst_array: *mut c_void,
    pub(super) reserved1: *mut c_void,
    pub(super) dst_pitch: usize,
    pub(super) dst_height: usize,
    pub(super) width_in_bytes: usize,
    pub(super) height: usize,
    pub(super) depth: usize,
}

/// `CUmemorytype`.
const MEMORY_HOST: c_uint = 1;
const MEMORY_DEVICE: c_uint = 2;
const MEMORY_ARRAY: c_uint = 3;
const MEMORY_UNIFIED: c_uint = 4;
/// `cudaMemcpyDefault`: the direction follows from the addresses.
const COPY_DEFAULT: c_int = 4;

/// A kernel node from the driver's parameters; `v2` structures may name a
/// `CUkernel` and a context.
fn kernel_kind(p: *const KernelNodeParams, v2: bool) -> Result<NodeKind, DriverError> {
    let p = rg::param(p)?;
    let func = if p.func == 0 && v2 { p.kern } else { p.func };
    if func == 0 {
        return Err(DriverError::INVALID_VALUE);
    }
    let device = match (v2, p.ctx) {
        (true, ctx) if ctx != 0 => super::rt().context_info(ctx)?.device,
        _ => context_device()?,
    };
    let args = graph::kernel_args(p.kernel_params, p.extra)?;
    let node = graph::kernel_node(
        func,
        device,
        p.grid,
        p.block,
        u64::from(p.shared_mem_bytes),
        args,
    )?;
    Ok(NodeKind::Kernel(node))
}

pub(crate) fn memcpy_kind(p: *const Memcpy3D) -> Result<NodeKind, DriverError> {
    let p = rg::param(p)?;
    let (w, hgt, d) = (p.width_in_bytes, p.height.max(1), p.depth.max(1));
    if w == 0 {
        return Err(DriverError::INVALID_VALUE);
    }
    // Address, row pitch and rows per slice of one end at (x, y, z); an
    // array end has its own pitch and rows, and the copy must fit in it.
    let end = |kind: c_uint,
               (host, device, array): (u64, u64, *mut c_void),
               (x, y, z): (usize, usize, usize),
               (pitch, rows): (usize, usize)|
     -> Result<(u64, u64, u64), DriverError> {
        let base = match kind {
            MEMORY_HOST => host,
            MEMORY_DEVICE | MEMORY_UNIFIED => device,
            MEMORY_ARRAY => {
                let a = array as u64;
                let far = |v: usize, n: usize| (v + n - 1) as u64;
                crate::image::array_at(a, far(x, w), far(y, hgt), far(z, d))?;
                return Ok(crate::image::array_at(a, x as u64, y as u64, z as u64)?);
            }
            _ => return Err(DriverError::INVALID_VALUE),
        };
        if base == 0 {
            return Err(DriverError::INVALID_VALUE);
        }
        let (pitch, rows) = (pitch.max(w), rows.max(hgt));
        let at = (z as u64)
            .checked_mul(rows as u64)
            .and_then(|r| r.checked_add(y as u64))
            .and_then(|r| r.checked_mul(pitch as u64))
            .and_then(|o| o.checked_add(x as u64))
            .and_then(|o| o.checked_add(base))
            .ok_or(DriverError::INVALID_VALUE)?;
        Ok((at, pitch as u64, rows as u64))
    };
    let (src, src_pitch, src_rows) = end(
        p.src_memory_type,
        (p.src_host as u64, p.src_device, p.src_array),
        (p.src_x_in_bytes, p.src_y, p.src_z),
        (p.src_pitch, p.src_height),
    )?;
    let (dst, dst_pitch, dst_rows) = end(
        p.dst_memory_type,
        (p.dst_host as u64, p.dst_device, p.dst_array),
        (p.dst_x_in_bytes, p.dst_y, p.dst_z),
        (p.dst_pitch, p.dst_height),
    )?;
    Ok(NodeKind::Memcpy(MemcpyNode {
        dst,
        dst_pitch,
        dst_rows,
        src,
        src_pitch,
        src_rows,
        width: w as u64,
        height: hgt as u64,
        depth: d as u64,
        kind: COPY_DEFAULT,
    }))
}

fn kernel_params_out(node: Node, o: *mut KernelNodeParams, v2: bool) -> DriverResult {
    let k = match graph::node_kind(h(node))? {
        NodeKind::Kernel(k) => k,
        // A captured library call: CUDA's library kernels, which rcud has not.
        NodeKind::Library(_) => return Err(DriverError::NOT_SUPPORTED),
        _ => return Err(DriverError::INVALID_VALUE),
    };
    if o.is_null() {
        return Err(DriverError::INVALID_VALUE);
    }
    let pointers = rg::keep_arg_copies(h(node), &k);
    // SAFETY: non-NULL; a v1 structure ends before `kern`.
    unsafe {
        let o = &mut *o;
        o.func = k.func;
        o.grid = k.grid;
        o.block = k.block;
        o.shared_mem_bytes = k.shared_mem;
        o.kernel_params = pointers;
        o.extra = std::ptr::null_mut();
        if v2 {
            // A kernel and its function are one handle here.
            o.kern = k.func;
            o.ctx = 0;
        }
    }
    Ok(())
}

driver_fn! { cuGraphCreate (graph: *mut Graph, flags: c_uint) {
    initialized()?;
    Ok(rg::graph_create(graph, flags)?)
} }

driver_fn! { cuGraphDestroy (graph: Graph) {
    Ok(graphs().lock().destroy(h(graph))?)
} }

driver_fn! { cuGraphClone (clone: *mut Graph, original: Graph) {
    let copy = graphs().lock().clone_graph(h(original))?;
    out(clone, copy as Graph)
} }

driver_fn! { cuGraphNodeFindInClone (node: *mut Node, original: Node, clone: Graph) {
    Ok(rg::find_in_clone(node, original, clone)?)
} }

driver_fn! { cuGraphGetNodes (graph: Graph, nodes: *mut Node, count: *mut usize) {
    Ok(rg::get_nodes(graph, nodes, count)?)
} }

driver_fn! { cuGraphGetRootNodes (graph: Graph, nodes: *mut Node, count: *mut usize) {
    Ok(rg::get_root_nodes(graph, nodes, count)?)
} }

driver_fn! { cuGraphGetEdges (graph: Graph, from: *mut Node, to: *mut Node, count: *mut usize) {
    Ok(rg::get_edges(graph, from, to, std::ptr::null_mut(), count)?)
} }

driver_fn! { cuGraphGetEdges_v2 (graph: Graph, from: *mut Node, to: *mut Node, edges: *mut EdgeData, count: *mut usize) {
    Ok(rg::get_edges(graph, from, to, edges, count)?)
} }

driver_fn! { cuGraphAddDependencies (graph: Graph, from: *const Node, to: *const Node, count: usize) {
    Ok(rg::add_dependencies(graph, from, to, std::ptr::null(), count)?)
} }

driver_fn! { cuGraphAddDependencies_v2 (graph: Graph, from: *const Node, to: *const Node, edges: *const EdgeData, count: usize) {
    Ok(rg::add_dependencies(graph, from, to, edges, count)?)
} }

driver_fn! { cuGraphRemoveDependencies (graph: Graph, from: *const Node, to: *const Node, count: usize) {
    Ok(rg::remove_dependencies(graph, from, to, std::ptr::null(), count)?)
} }

driver_fn! { cuGraphRemoveDependencies_v2 (graph: Graph, from: *const Node, to: *const Node, edges: *const EdgeData, count: usize) {
    Ok(rg::remove_dependencies(graph, from, to, edges, count)?)
} }

driver_fn! { cuGraphNodeGetDependencies (node: Node, deps: *mut Node, count: *mut usize) {
    Ok(rg::node_dependencies(node, deps, std::ptr::null_mut(), count)?)
} }

driver_fn! { cuGraphNodeGetDependencies_v2 (node: Node, deps: *mut Node, edges: *mut EdgeData, count: *mut usize) {
    Ok(rg::node_dependencies(node, deps, edges, count)?)
} }

driver_fn! { cuGraphNodeGetDependentNodes (node: Node, deps: *mut Node, count: *mut usize) {
    Ok(rg::node_dependents(node, deps, std::ptr::null_mut(), count)?)
} }

driver_fn! { cuGraphNodeGetDependentNodes_v2 (node: Node, deps: *mut Node, edges: *mut EdgeData, count: *mut usize) {
    Ok(rg::node_dependents(node, deps, edges, count)?)
} }

driver_fn! { cuGraphDestroyNode (node: Node) {
    Ok(graphs().lock().destroy_node(h(node))?)
} }

driver_fn! { cuGraphNodeGetType (node: Node, kind: *mut c_int) {
    out(kind, graph::node_kind(h(node))?.type_code())
} }

driver_fn! { cuGraphNodeGetContainingGraph (node: Node, graph: *mut Graph) {
    out(graph, graphs().lock().node(h(node))?.0 as Graph)
} }

driver_fn! { cuGraphDebugDotPrint (graph: Graph, path: *const c_char, flags: c_uint) {
    Ok(rg::debug_dot_print(graph, path, flags)?)
} }

// ---- nodes -------------------------------------------------------------------

driver_fn! { cuGraphAddKernelNode (node: *mut Node, graph: Graph, deps: *const Node, count: usize, params: *const KernelNodeParams) {
    Ok(add(node, graph, deps, count, || kernel_kind(params, false).map_err(|e| CudaError(e.0 as u32)))?)
} }

driver_fn! { cuGraphAddKernelNode_v2 (node: *mut Node, graph: Graph, deps: *const Node, count: usize, params: *const KernelNodeParams) {
    Ok(add(node, graph, deps, count, || kernel_kind(params, true).map_err(|e| CudaError(e.0 as u32)))?)
} }

driver_fn! { cuGraphKernelNodeGetParams (node: Node, params: *mut KernelNodeParams) {
    kernel_params_out(node, params, false)
} }

driver_fn! { cuGraphKernelNodeGetParams_v2 (node: Node, params: *mut KernelNodeParams) {
    kernel_params_out(node, params, true)
} }

driver_fn! { cuGraphKernelNodeSetParams (node: Node, params: *const KernelNodeParams) {
    Ok(graph::set_node_kind(h(node), kernel_kind(params, false)?)?)
} }

driver_fn! { cuGraphKernelNodeSetParams_v2 (node: Node, params: *const KernelNodeParams) {
    Ok(graph::set_node_kind(h(node), kernel_kind(params, true)?)?)
} }

driver_fn! { cuGraphAddMemsetNode (node: *mut Node, graph: Graph, deps: *const Node, count: usize, params: *const MemsetParams, _ctx: u64) {
    Ok(add(node, graph, deps, count, || memset_kind(params))?)
} }

driver_fn! { cuGraphMemsetNodeGetParams (node: Node, params: *mut MemsetParams) {
    Ok(rg::memset_params_out(node, params)?)
} }

driver_fn! { cuGraphMemsetNodeSetParams (node: Node, params: *const MemsetParams) {
    Ok(graph::set_node_kind(h(node), memset_kind(params)?)?)
} }

driver_fn! { cuGraphAddMemcpyNode (node: *mut Node, graph: Graph, deps: *const Node, count: usize, params: *const Memcpy3D, _ctx: u64) {
    Ok(add(node, graph, deps, count, || memcpy_kind(params).map_err(|e| CudaError(e.0 as u32)))?)
} }

driver_fn! { cuGraphMemcpyNodeSetParams (node: Node, params: *const Memcpy3D) {
    Ok(graph::set_node_kind(h(node), memcpy_kind(params)?)?)
} }

driver_fn! { cuGraphMemcpyNodeGetParams (node: Node, params: *mut Memcpy3D) {
    memcpy_params_out(node, params)
} }

fn memcpy_params_out(node: Node, params: *mut Memcpy3D) -> DriverResult {
    let NodeKind::Memcpy(c) = graph::node_kind(h(node))? else {
        return Err(DriverError::INVALID_VALUE);
    };
    let placed = |a: u64| super::rt().device_of(a).is_some();
    out(
        params,
        Memcpy3D {
            src_x_in_bytes: 0,
            src_y: 0,
            src_z: 0,
            src_lod: 0,
            src_memory_type: if placed(c.src) {
                MEMORY_DEVICE
            } else {
                MEMORY_HOST
            },
            src_host: c.src as *const c_void,
            src_device: c.src,
            src_array: std::ptr::null_mut(),
            reserved0: std::ptr::null_mut(),
            src_pitch: c.src_pitch as usize,
            src_height: c.src_rows as usize,
            dst_x_in_bytes: 0,
            dst_y: 0,
            dst_z: 0,
            dst_lod: 0,
            dst_memory_type: if placed(c.dst) {
                MEMORY_DEVICE
            } else {
                MEMORY_HOST
            },
            dst_host: c.dst as *mut c_void,
            dst_device: c.dst,
            dst_array: std::ptr::null_mut(),
            reserved1: std::ptr::null_mut(),
            dst_pitch: c.dst_pitch as usize,
            dst_height: c.dst_rows as usize,
            width_in_bytes: c.width as usize,
            height: c.height as usize,
            depth: c.depth as usize,
        },
    )
}

driver_fn! { cuGraphAddHostNode (node: *mut Node, graph: Graph, deps: *const Node, count: usize, params: *const HostNodeParams) {
    Ok(add(node, graph, deps, count, || host_kind(params))?)
} }

driver_fn! { cuGraphHostNodeGetParams (node: Node, params: *mut HostNodeParams) {
    Ok(rg::host_params_out(node, params)?)
} }

driver_fn! { cuGraphHostNodeSetParams (node: Node, params: *const HostNodeParams) {
    Ok(graph::set_node_kind(h(node), host_kind(params)?)?)
} }

driver_fn! { cuGraphAddChildGraphNode (node: *mut Node, graph: Graph, deps: *const Node, count: usize, child: Graph) {
    Ok(add(node, graph, deps, count, || Ok(NodeKind::Child(graphs().lock().clone_graph(h(child))?)))?)
} }

driver_fn! { cuGraphChildGraphNodeGetGraph (node: Node, graph: *mut Graph) {
    match graph::node_kind(h(node))? {
        NodeKind::Child(c) => out(graph, c as Graph),
        _ => Err(DriverError::INVALID_VALUE),
    }
} }

driver_fn! { cuGraphAddEmptyNode (node: *mut Node, graph: Graph, deps: *const Node, count: usize) {
    Ok(add(node, graph, deps, count, || Ok(NodeKind::Empty))?)
} }

driver_fn! { cuGraphAddEventRecordNode (node: *mut Node, graph: Graph, deps: *const Node, count: usize, event: *mut c_void) {
    Ok(add(node, graph, deps, count, || event_kind(event, true))?)
} }

driver_fn! { cuGraphAddEventWaitNode (node: *mut Node, graph: Graph, deps: *const Node, count: usize, event: *mut c_void) {
    Ok(add(node, graph, deps, count, || event_kind(event, false))?)
} }

driver_fn! { cuGraphEventRecordNodeGetEvent (node: Node, event: *mut *mut c_void) {
    out(event, rg::node_event(node, true)? as *mut c_void)
} }

driver_fn! { cuGraphEventRecordNodeSetEvent (node: Node, event: *mut c_void) {
    Ok(graph::set_node_kind(h(node), event_kind(event, true)?)?)
} }

driver_fn! { cuGraphEventWaitNodeGetEvent (node: Node, event: *mut *mut c_void) {
    out(event, rg::node_event(node, false)? as *mut c_void)
} }

driver_fn! { cuGraphEventWaitNodeSetEvent (node: Node, event: *mut c_void) {
    Ok(graph::set_node_kind(h(node), event_kind(event, false)?)?)
} }

driver_fn! { cuGraphAddMemAllocNode (node: *mut Node, graph: Graph, deps: *const Node, count: usize, params: *mut rg::MemAllocNodeParams) {
    Ok(add(node, graph, deps, count, || rg::mem_alloc_kind(params))?)
} }

driver_fn! { cuGraphAddMemFreeNode (node: *mut Node, graph: Graph, deps: *const Node, count: usize, dptr: u64) {
    Ok(add(node, graph, deps, count, || rg::mem_free_kind(dptr))?)
} }

driver_fn! { cuGraphMemAllocNodeGetParams (node: Node, params: *mut rg::MemAllocNodeParams) {
    Ok(rg::mem_alloc_params_out(node, params)?)
} }

driver_fn! { cuGraphMemFreeNodeGetParams (node: Node, dptr: *mut u64) {
    match graph::node_kind(h(node))? {
        NodeKind::MemFree(ptr) => out(dptr, ptr),
        _ => Err(DriverError::INVALID_VALUE),
    }
} }

// Reservations go back as soon as nothing needs them: nothing to trim.
driver_fn! { cuDeviceGraphMemTrim (device: c_int) {
    initialized()?;
    super::rt().props(device)?;
    Ok(())
} }

driver_fn! { cuDeviceGetGraphMemAttribute (device: c_int, attr: c_int, value: *mut c_void) {
    initialized()?;
    Ok(rg::graph_mem_attribute(device, attr, value)?)
} }

driver_fn! { cuDeviceSetGraphMemAttribute (device: c_int, attr: c_int, value: *mut c_void) {
    initialized()?;
    Ok(rg::set_graph_mem_attribute(device, attr, value)?)
} }

driver_fn! { cuUserObjectCreate (object: *mut *mut c_void, ptr: *mut c_void, destroy: crate::cudart::stream::HostFn, initial: c_uint, flags: c_uint) {
    initialized()?;
    Ok(rg::user_object_create(object, ptr, destroy, initial, flags)?)
} }

driver_fn! { cuUserObjectRetain (object: *mut c_void, count: c_uint) {
    Ok(crate::graph::user_objects::retain(h(object), count)?)
} }

driver_fn! { cuUserObjectRelease (object: *mut c_void, count: c_uint) {
    Ok(crate::graph::user_objects::release(h(object), count)?)
} }

driver_fn! { cuGraphRetainUserObject (graph: Graph, object: *mut c_void, count: c_uint, flags: c_uint) {
    Ok(rg::graph_retain_user_object(graph, object, count, flags)?)
} }

driver_fn! { cuGraphReleaseUserObject (graph: Graph, object: *mut c_void, count: c_uint) {
    Ok(rg::graph_release_user_object(graph, object, count)?)
} }

driver_fn! { cuGraphGetId (graph: Graph, id: *mut c_uint) {
    Ok(rg::graph_id(graph, id)?)
} }

driver_fn! { cuGraphExecGetId (exec: Exec, id: *mut c_uint) {
    Ok(rg::exec_id(exec, id)?)
} }

driver_fn! { cuGraphNodeGetLocalId (node: Node, id: *mut c_uint) {
    Ok(rg::node_local_id(node, id)?)
} }

driver_fn! { cuGraphNodeGetToolsId (node: Node, id: *mut u64) {
    Ok(rg::node_tools_id(node, id)?)
} }

// ---- executable graphs -------------------------------------------------------

driver_fn! { cuGraphInstantiateWithFlags (exec_out: *mut Exec, graph: Graph, flags: u64) {
    context_device()?;
    if exec_out.is_null() {
        return Err(DriverError::INVALID_VALUE);
    }
    out(exec_out, exec::instantiate(h(graph), flags)? as Exec)
} }

// The CUDA 10 and 11 form: an error node and a log buffer, no flags.
driver_fn! { [cuGraphInstantiate, cuGraphInstantiate_v2] (exec_out: *mut Exec, graph: Graph, err_node: *mut Node, log: *mut c_char, log_size: usize) {
    context_device()?;
    if exec_out.is_null() {
        return Err(DriverError::INVALID_VALUE);
    }
    if !err_node.is_null() {
        out(err_node, std::ptr::null_mut())?;
    }
    if !log.is_null() && log_size > 0 {
        // SAFETY: the caller's buffer holds `log_size` bytes; an empty log.
        unsafe { *log = 0 };
    }
    out(exec_out, exec::instantiate(h(graph), 0)? as Exec)
} }

driver_fn! { [cuGraphInstantiateWithParams, cuGraphInstantiateWithParams_ptsz] (exec_out: *mut Exec, graph: Graph, params: *mut InstantiateParams) {
    context_device()?;
    Ok(rg::instantiate_with_params(exec_out, graph, params)?)
} }

driver_fn! { cuGraphExecDestroy (exec: Exec) {
    Ok(exec::destroy(h(exec))?)
} }

driver_fn! { [cuGraphLaunch, cuGraphLaunch_ptsz] (exec: Exec, stream: Stream) {
    context_device()?;
    if capture::is_capturing(stream as u64) {
        return Err(CudaError::STREAM_CAPTURE_UNSUPPORTED.into());
    }
    crate::cudart::launch::printf_to_stdout();
    Ok(exec::launch(h(exec), stream as u64)?)
} }

driver_fn! { [cuGraphUpload, cuGraphUpload_ptsz] (exec: Exec, stream: Stream) {
    Ok(exec::upload(h(exec), stream as u64)?)
} }

driver_fn! { cuGraphExecGetFlags (exec: Exec, flags: *mut u64) {
    out(flags, exec::flags(h(exec))?)
} }

driver_fn! { cuGraphExecKernelNodeSetParams (exec: Exec, node: Node, params: *const KernelNodeParams) {
    Ok(exec::set_node(h(exec), h(node), kernel_kind(params, false)?)?)
} }

driver_fn! { cuGraphExecKernelNodeSetParams_v2 (exec: Exec, node: Node, params: *const KernelNodeParams) {
    Ok(exec::set_node(h(exec), h(node), kernel_kind(params, true)?)?)
} }

driver_fn! { cuGraphExecMemsetNodeSetParams (exec: Exec, node: Node, params: *const MemsetParams, _ctx: u64) {
    Ok(exec::set_node(h(exec), h(node), memset_kind(params)?)?)
} }

driver_fn! { cuGraphExecMemcpyNodeSetParams (exec: Exec, node: Node, params: *const Memcpy3D, _ctx: u64) {
    Ok(exec::set_node(h(exec), h(node), memcpy_kind(params)?)?)
} }

driver_fn! { cuGraphExecHostNodeSetParams (exec: Exec, node: Node, params: *const HostNodeParams) {
    Ok(exec::set_node(h(exec), h(node), host_kind(params)?)?)
} }

driver_fn! { cuGraphExecEventRecordNodeSetEvent (exec: Exec, node: Node, event: *mut c_void) {
    Ok(exec::set_node(h(exec), h(node), event_kind(event, true)?)?)
} }

driver_fn! { cuGraphExecEventWaitNodeSetEvent (exec: Exec, node: Node, event: *mut c_void) {
    Ok(exec::set_node(h(exec), h(node), event_kind(event, false)?)?)
} }

driver_fn! { cuGraphNodeSetEnabled (exec: Exec, node: Node, enabled: c_uint) {
    exec::set_enabled(h(exec), h(node), Some(enabled != 0))?;
    Ok(())
} }

driver_fn! { cuGraphNodeGetEnabled (exec: Exec, node: Node, enabled: *mut c_uint) {
    out(enabled, c_uint::from(exec::set_enabled(h(exec), h(node), None)?))
} }

driver_fn! { cuGraphExecUpdate_v2 (exec: Exec, graph: Graph, info: *mut UpdateResultInfo) {
    Ok(rg::exec_update(exec, graph, info)?)
} }

// The CUDA 10 and 11 form: the failing node and the result separately.
driver_fn! { cuGraphExecUpdate (exec: Exec, graph: Graph, err_node: *mut Node, result: *mut c_int) {
    let mut info = std::mem::MaybeUninit::<UpdateResultInfo>::zeroed();
    let status = rg::exec_update(exec, graph, info.as_mut_ptr());
    // SAFETY: zeroed is a valid UpdateResultInfo, and exec_update only
    // writes a whole one.
    let info = unsafe { info.assume_init() };
    if !err_node.is_null() {
        out(err_node, rg::update_error_node(&info))?;
    }
    if !result.is_null() {
        out(result, rg::update_result(&info))?;
    }
    Ok(status?)
} }

// ---- stream capture ------------------------------------------------------------

/// `CU_STREAM_CAPTURE_MODE_GLOBAL`, the mode of CUDA 10's `cuStreamBeginCapture`.
const MODE_GLOBAL: c_int = 0;

driver_fn! { [cuStreamBeginCapture, cuStreamBeginCapture_ptsz] (stream: Stream) {
    initialized()?;
    Ok(capture::begin(stream as u64, MODE_GLOBAL, None)?)
} }

driver_fn! { [cuStreamBeginCapture_v2, cuStreamBeginCapture_v2_ptsz] (stream: Stream, mode: c_int) {
    initialized()?;
    Ok(capture::begin(stream as u64, mode, None)?)
} }

driver_fn! { [cuStreamBeginCaptureToGraph, cuStreamBeginCaptureToGraph_ptsz] (stream: Stream, graph: Graph, deps: *const Node, edges: *const EdgeData, count: usize, mode: c_int) {
    initialized()?;
    Ok(rg::begin_to_graph(stream, graph, deps, edges, count, mode)?)
} }

driver_fn! { [cuStreamEndCapture, cuStreamEndCapture_ptsz] (stream: Stream, graph: *mut Graph) {
    initialized()?;
    if graph.is_null() {
        if !capture::into_existing(stream as u64) {
            return Err(DriverError::INVALID_VALUE);
        }
        return Ok(capture::end(stream as u64).map(|_| ())?);
    }
    let made = capture::end(stream as u64);
    out(graph, *made.as_ref().unwrap_or(&0) as Graph)?;
    made.map(|_| ()).map_err(DriverError::from)
} }

driver_fn! { [cuStreamIsCapturing, cuStreamIsCapturing_ptsz] (stream: Stream, status: *mut c_int) {
    initialized()?;
    out(status, capture::info(stream as u64)?.0)
} }

// CUDA 10.1's form: status and id.
driver_fn! { [cuStreamGetCaptureInfo, cuStreamGetCaptureInfo_ptsz] (stream: Stream, status: *mut c_int, id: *mut u64) {
    initialized()?;
    let (graph, deps, edges, count) = (
        std::ptr::null_mut(),
        std::ptr::null_mut(),
        std::ptr::null_mut(),
        std::ptr::null_mut(),
    );
    Ok(rg::capture_info(stream, status, id, graph, deps, edges, count)?)
} }

driver_fn! { [cuStreamGetCaptureInfo_v2, cuStreamGetCaptureInfo_v2_ptsz] (stream: Stream, status: *mut c_int, id: *mut u64, graph: *mut Graph, deps: *mut *const Node, count: *mut usize) {
    initialized()?;
    Ok(rg::capture_info(stream, status, id, graph, deps, std::ptr::null_mut(), count)?)
} }

driver_fn! { [cuStreamGetCaptureInfo_v3, cuStreamGetCaptureInfo_v3_ptsz] (stream: Stream, status: *mut c_int, id: *mut u64, graph: *mut Graph, deps: *mut *const Node, edges: *mut *const EdgeData, count: *mut usize) {
    initialized()?;
    Ok(rg::capture_info(stream, status, id, graph, deps, edges, count)?)
} }

driver_fn! { [cuStreamUpdateCaptureDependencies, cuStreamUpdateCaptureDependencies_ptsz] (stream: Stream, deps: *mut Node, count: usize, flags: c_uint) {
    initialized()?;
    Ok(rg::update_capture_dependencies(stream, deps, std::ptr::null(), count, flags)?)
} }

driver_fn! { [cuStreamUpdateCaptureDependencies_v2, cuStreamUpdateCaptureDependencies_v2_ptsz] (stream: Stream, deps: *mut Node, edges: *const EdgeData, count: usize, flags: c_uint) {
    initialized()?;
    Ok(rg::update_capture_dependencies(stream, deps, edges, count, flags)?)
} }

driver_fn! { cuThreadExchangeStreamCaptureMode (mode: *mut c_int) {
    Ok(rg::exchange_capture_mode(mode)?)
} }

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn c_layouts_match_cuda_h() {
        assert_eq!(std::mem::size_of::<KernelNodeParams>(), 72);
        assert_eq!(std::mem::offset_of!(KernelNodeParams, kernel_params), 40);
        assert_eq!(std::mem::offset_of!(KernelNodeParams, kern), 56);
        assert_eq!(std::mem::size_of::<Memcpy3D>(), 200);
        assert_eq!(std::mem::offset_of!(Memcpy3D, dst_x_in_bytes), 88);
        assert_eq!(std::mem::offset_of!(Memcpy3D, width_in_bytes), 176);
    }
}

// ---- kernel node attributes and generic node parameters -------------------------

driver_fn! { cuGraphKernelNodeSetAttribute (node: Node, id: c_uint, value: *const AttrValue) {
    Ok(graph::kernel_node_set_attribute(h(node), id, &read_attr_value(value)?)?)
} }

driver_fn! { cuGraphKernelNodeGetAttribute (node: Node, id: c_uint, value: *mut AttrValue) {
    Ok(write_attr_value(value, graph::kernel_node_get_attribute(h(node), id)?)?)
} }

driver_fn! { cuGraphKernelNodeCopyAttributes (dst: Node, src: Node) {
    Ok(graph::kernel_node_copy_attributes(h(dst), h(src))?)
} }

/// The driver's kernel and copy members of `CUgraphNodeParams`
/// (`CUDA_KERNEL_NODE_PARAMS_v3`, laid out as v2, and the `CUDA_MEMCPY3D`
/// of `CUDA_MEMCPY_NODE_PARAMS`).
const DRIVER_PARAMS: ApiParams = ApiParams {
    kernel: |p| kernel_kind(p.cast(), true).map_err(runtime_code),
    memcpy: |p| memcpy_kind(p.cast()).map_err(runtime_code),
    kernel_out: |n, p| kernel_params_out(n as Node, p.cast(), true).map_err(runtime_code),
    memcpy_out: |n, p| memcpy_params_out(n as Node, p.cast()).map_err(runtime_code),
    contexts: true,
};

/// A driver code carried through the runtime's error type (the shared
/// layer's), to come back out unchanged.
fn runtime_code(e: DriverError) -> CudaError {
    CudaError(e.0 as u32)
}

driver_fn! { cuGraphConditionalHandleCreate (handle: *mut u64, graph: Graph, ctx: *mut c_void, default_value: c_uint, flags: c_uint) {
    initialized()?;
    let ctx = ctx as u64;
    let current = rcud_client::Runtime::global().current_context();
    if ctx == 0 || Some(ctx) == current {
        return Ok(rg::conditional_handle_create(handle, graph, default_value, flags)?);
    }
    // The condition lives on the context's device.
    let rt = rcud_client::Runtime::global();
    rt.context_push(ctx)?;
    let made = rg::conditional_handle_create(handle, graph, default_value, flags);
    rt.context_pop()?;
    Ok(made?)
} }

driver_fn! { cuGraphAddNode (node: *mut Node, graph: Graph, deps: *const Node, count: usize, params: *mut GraphNodeParams) {
    initialized()?;
    Ok(rg::add_generic(node, graph, deps, std::ptr::null(), count, params, &DRIVER_PARAMS)?)
} }

driver_fn! { [cuGraphAddNode_v2, cuGraphAddNode_v3] (node: *mut Node, graph: Graph, deps: *const Node, edges: *const EdgeData, count: usize, params: *mut GraphNodeParams) {
    initialized()?;
    Ok(rg::add_generic(node, graph, deps, edges, count, params, &DRIVER_PARAMS)?)
} }

driver_fn! { [cuGraphNodeSetParams, cuGraphNodeSetParams_v2] (node: Node, params: *mut GraphNodeParams) {
    let kind = graph::params::kind_of(params, &DRIVER_PARAMS)?;
    Ok(graph::set_node_kind(h(node), kind)?)
} }

driver_fn! { cuGraphNodeGetParams (node: Node, params: *mut GraphNodeParams) {
    Ok(graph::params::write_params(h(node), params, &DRIVER_PARAMS)?)
} }

driver_fn! { cuGraphExecNodeSetParams (exec: Exec, node: Node, params: *mut GraphNodeParams) {
    let kind = graph::params::kind_of(params, &DRIVER_PARAMS)?;
    Ok(exec::set_node(h(exec), h(node), kind)?)
} }

driver_fn! { cuGraphExecChildGraphNodeSetParams (exec: Exec, node: Node, child: Graph) {
    Ok(exec::set_child(h(exec), h(node), h(child))?)
} }

// ---- external semaphore nodes (none can exist: see the runtime's) ---------------

driver_fn! { [cuGraphAddExternalSemaphoresSignalNode, cuGraphAddExternalSemaphoresWaitNode] (node: *mut Node, graph: Graph, deps: *const Node, count: usize, params: *const rg::ExtSemNodeParams) {
    initialized()?;
    Ok(rg::add_ext_sem_node(node, graph, deps, count, params)?)
} }

driver_fn! { [cuGraphExternalSemaphoresSignalNodeGetParams, cuGraphExternalSemaphoresWaitNodeGetParams, cuGraphExternalSemaphoresSignalNodeSetParams, cuGraphExternalSemaphoresWaitNodeSetParams] (node: Node, params: *mut c_void) {
    Ok(rg::ext_sem_node(node, params)?)
} }

driver_fn! { [cuGraphExecExternalSemaphoresSignalNodeSetParams, cuGraphExecExternalSemaphoresWaitNodeSetParams] (_exec: Exec, node: Node, params: *const c_void) {
    Ok(rg::ext_sem_node(node, params)?)
} }
