//! Executable graphs: a graph flattened into launch order, its device work
//! uploaded to the servers in runs (one message per run at each launch), and
//! the rest (copies touching host memory, host functions, cross-device
//! waits) done by the client in stream order between the runs.

use std::collections::HashMap;
use std::ffi::c_void;
use std::sync::Arc;

use parking_lot::Mutex;
use rcud_client::runtime::{LaunchConfig, Route};
use rcud_client::{MemcpyKind, Runtime};
use rcud_proto::ops::{req, GraphStep};
use rcud_proto::CudaError;

use super::conditional::{self, ConditionalNode};
use super::model::{
    graphs, new_handle, Graphs, Handle, HostNode, MemcpyNode, MemsetNode, NodeKind,
};
use crate::cudart::{memory, pitched, stream};

/// `cudaGraphInstantiateFlagAutoFreeOnLaunch`.
const AUTO_FREE_ON_LAUNCH: u64 = 1;

/// Largest encoded run sent as one upload: a frame body holds 1 MiB.
const MAX_RUN_BYTES: usize = 768 << 10;

/// `cudaGraphExecUpdateResult`.
pub(crate) mod update_result {
    pub(crate) const SUCCESS: i32 = 0;
    pub(crate) const TOPOLOGY_CHANGED: i32 = 2;
    pub(crate) const NODE_TYPE_CHANGED: i32 = 3;
    pub(crate) const PARAMETERS_CHANGED: i32 = 5;
    pub(crate) const NOT_SUPPORTED: i32 = 6;
}

/// One node of an executable graph.
#[derive(Debug, Clone)]
struct Item {
    /// The node of the instantiated graph (or of a child graph) it came from.
    node: Handle,
    kind: NodeKind,
    enabled: bool,
    /// A conditional node's body graphs, each flattened.
    bodies: Vec<Vec<Item>>,
}

/// What a launch does, in order.
#[derive(Debug)]
enum Part {
    /// Steps uploaded to `device`'s server as graph `graph`.
    Remote {
        device: usize,
        graph: u32,
        events: Vec<u64>,
    },
    Copy(MemcpyNode),
    HostFn(HostNode),
    Wait(u64),
    /// A conditional body uploaded to `device`'s server, which the
    /// conditional steps name; nothing to do at launch.
    Body {
        device: usize,
        graph: u32,
    },
}

/// An instantiated graph.
#[derive(Debug)]
pub(crate) struct Exec {
    items: Vec<Item>,
    /// Node of the source graph (or its children) -> index in `items`.
    index: HashMap<Handle, usize>,
    /// Nodes' types and edges, to check an update against.
    shape: Vec<(i32, Vec<usize>)>,
    /// The parts, and the device event records go to; `None` after a
    /// change, until the next launch or upload.
    plan: Option<(usize, Vec<Part>)>,
    pub(crate) flags: u64,
    /// References to user objects it holds.
    user_objects: HashMap<Handle, u32>,
    /// The conditional handles of its nodes and graphs (one reference each).
    cond_handles: Vec<u64>,
}

fn rt() -> &'static Runtime {
    Runtime::global()
}

/// Executable graphs of the process.
fn execs() -> &'static Mutex<HashMap<Handle, Arc<Mutex<Exec>>>> {
    static EXECS: std::sync::OnceLock<Mutex<HashMap<Handle, Arc<Mutex<Exec>>>>> =
        std::sync::OnceLock::new();
    EXECS.get_or_init(Mutex::default)
}

fn exec(h: Handle) -> Result<Arc<Mutex<Exec>>, CudaError> {
    execs()
        .lock()
        .get(&h)
        .cloned()
        .ok_or(CudaError::INVALID_VALUE)
}

/// The nodes of graph `g` in launch order, child graphs inlined.
fn flatten(all: &Graphs, g: Handle, out: &mut Vec<Item>) -> Result<(), CudaError> {
    let graph = all.graph(g)?;
    let order = graph.topological().ok_or(CudaError::INVALID_VALUE)?;
    for n in order {
        let kind = graph.nodes[&n].kind.clone();
        if let NodeKind::Child(c) = kind {
            flatten(all, c, out)?;
        }
        let mut bodies = Vec::new();
        if let NodeKind::Conditional(c) = &kind {
            for b in c.bodies.iter() {
                let mut body = Vec::new();
                flatten(all, *b, &mut body)?;
                bodies.push(body);
            }
        }
        out.push(Item {
            node: n,
            kind,
            enabled: true,
            bodies,
        });
    }
    Ok(())
}

/// Checks graph `g`'s conditional nodes, at any depth, as instantiation
/// does: a handle that exists, and bodies of allowed nodes on its device.
fn check_conditionals(all: &Graphs, g: Handle) -> Result<(), CudaError> {
    for node in all.graph(g)?.nodes.values() {
        match &node.kind {
            NodeKind::Child(c) => check_conditionals(all, *c)?,
            NodeKind::Conditional(c) => {
                let handle = conditional::handle(c.handle).ok_or(CudaError::INVALID_VALUE)?;
                for b in c.bodies.iter() {
                    conditional::check_body(all, *b, handle.device)?;
                }
            }
            _ => {}
        }
    }
    Ok(())
}

/// Types and edges of graph `g` (children after their node), by position.
fn shape(all: &Graphs, g: Handle, out: &mut Vec<(i32, Vec<usize>)>) -> Result<(), CudaError> {
    let graph = all.graph(g)?;
    let position: HashMap<Handle, usize> = graph
        .order
        .iter()
        .enumerate()
        .map(|(i, &n)| (n, i))
        .collect();
    for n in &graph.order {
        let node = &graph.nodes[n];
        let mut deps: Vec<usize> = node.deps.iter().map(|d| position[d]).collect();
        deps.sort_unstable();
        out.push((node.kind.type_code(), deps));
        match &node.kind {
            NodeKind::Child(c) => {
                shape(all, *c, out)?;
                out.push((-1, Vec::new()));
            }
            // The conditional's type and body count, then each body.
            NodeKind::Conditional(c) => {
                out.push((-2, vec![c.kind as usize, c.bodies.len()]));
                for b in c.bodies.iter() {
                    shape(all, *b, out)?;
                    out.push((-1, Vec::new()));
                }
            }
            _ => {}
        }
    }
    Ok(())
}

/// The nodes of `g` and its children, in creation order.
fn creation_order(all: &Graphs, g: Handle, out: &mut Vec<Handle>) -> Result<(), CudaError> {
    let graph = all.graph(g)?;
    for n in &graph.order {
        out.push(*n);
        if let NodeKind::Child(c) = graph.nodes[n].kind {
            creation_order(all, c, out)?;
        }
    }
    Ok(())
}

/// `cudaGraphInstantiate`: the graph's device work is checked and uploaded
/// now, as CUDA checks a graph when it instantiates it.
pub(crate) fn instantiate(g: Handle, flags: u64) -> Result<Handle, CudaError> {
    // AutoFreeOnLaunch, Upload (with a stream) and UseNodePriority.
    if flags & !(1 | 2 | 8) != 0 {
        return Err(CudaError::INVALID_VALUE);
    }
    let (items, shape, user_objects, mut cond_handles) = {
        let all = graphs().lock();
        check_conditionals(&all, g)?;
        let mut items = Vec::new();
        flatten(&all, g, &mut items)?;
        let mut sh = Vec::new();
        shape(&all, g, &mut sh)?;
        let mut handles = Vec::new();
        conditional::handles_of(&all, g, &mut handles);
        (items, sh, all.graph(g)?.user_objects.clone(), handles)
    };
    // A graph with memory nodes has one executable graph at a time: its
    // allocations have one address each (CUDA answers cudaErrorNotSupported,
    // as an H200 did).
    let allocs: Vec<u64> = items
        .iter()
        .filter_map(|it| match it.kind {
            NodeKind::MemAlloc { ptr, .. } => Some(ptr),
            _ => None,
        })
        .collect();
    {
        let mut live = instantiated_allocations().lock();
        if allocs.iter().any(|p| live.contains(p)) {
            return Err(CudaError::NOT_SUPPORTED);
        }
        live.extend(allocs.iter().copied());
    }
    cond_handles.sort_unstable();
    cond_handles.dedup();
    // The conditions outlive the graph while the executable graph exists.
    for c in &cond_handles {
        conditional::retain(*c);
    }
    for item in &items {
        item.kind.held();
    }
    let index = items
        .iter()
        .enumerate()
        .map(|(i, it)| (it.node, i))
        .collect();
    // The executable graph keeps the graph's user objects alive too.
    super::user_objects::retain_all(&user_objects);
    let mut exec = Exec {
        items,
        index,
        shape,
        plan: None,
        flags,
        user_objects,
        cond_handles,
    };
    let planned = rt().current_device().and_then(|d| exec.ensure_plan(d));
    if let Err(e) = planned {
        forget_allocations(&exec.items);
        return Err(e);
    }
    let h = new_handle();
    execs().lock().insert(h, Arc::new(Mutex::new(exec)));
    Ok(h)
}

/// The alloc nodes (by address) of the executable graphs that exist.
fn instantiated_allocations() -> &'static Mutex<std::collections::HashSet<u64>> {
    static LIVE: std::sync::OnceLock<Mutex<std::collections::HashSet<u64>>> =
        std::sync::OnceLock::new();
    LIVE.get_or_init(Default::default)
}

fn forget_allocations(items: &[Item]) {
    let mut live = instantiated_allocations().lock();
    for it in items {
        if let NodeKind::MemAlloc { ptr, .. } = it.kind {
            live.remove(&ptr);
        }
    }
}

/// `cudaGraphExecDestroy`.
pub(crate) fn destroy(h: Handle) -> Result<(), CudaError> {
    let exec = execs().lock().remove(&h).ok_or(CudaError::INVALID_VALUE)?;
    let mut exec = exec.lock();
    exec.drop_plan();
    forget_allocations(&exec.items);
    for item in &exec.items {
        item.kind.dropped();
    }
    super::user_objects::release_all(&exec.user_objects);
    for c in &exec.cond_handles {
        conditional::release(*c);
    }
    Ok(())
}

/// `cudaGraphLaunch`.
pub(crate) fn launch(h: Handle, stream: u64) -> Result<(), CudaError> {
    let exec = exec(h)?;
    let mut exec = exec.lock();
    let sd = rt().stream_device(stream)?;
    exec.ensure_plan(sd)?;
    exec.run_memory_nodes()?;
    // Managed and mapped memory go to the device before its work, as for a
    // kernel launch.
    crate::cudart::managed::to_device_of_stream(stream);
    let Some((_, parts)) = &exec.plan else {
        return Err(CudaError::ILLEGAL_STATE);
    };
    let mut last = sd;
    for part in parts {
        let device = match part {
            Part::Remote { device, .. } => *device,
            Part::Body { .. } => continue,
            _ => sd,
        };
        // Work on two devices is ordered by waiting for the first.
        if device != last {
            rt().device_synchronize(last)?;
            last = device;
        }
        match part {
            Part::Remote {
                device,
                graph,
                events,
            } => rt().graph_launch(*device, *graph, events.clone())?,
            Part::Copy(c) => run_copy(c, Some(stream))?,
            Part::HostFn(h) => {
                // SAFETY: `func` is the address of the application's host
                // function, given as a cudaHostFn_t when the node was made.
                let f: stream::HostFn = unsafe { std::mem::transmute(h.func) };
                stream::launch_host_func(stream as stream::Stream, f, h.data as *mut c_void)?
            }
            Part::Wait(event) => rt().stream_wait_event(stream, *event)?,
            Part::Body { .. } => {}
        }
    }
    Ok(())
}

/// `cudaGraphUpload`: the device work is on the servers from instantiation
/// on; after a parameter change it goes up again here.
pub(crate) fn upload(h: Handle, stream: u64) -> Result<(), CudaError> {
    let exec = exec(h)?;
    let sd = rt().stream_device(stream)?;
    let mut exec = exec.lock();
    exec.ensure_plan(sd)
}

/// Runs a copy node's copy now: on `stream` (queued where CUDA queues
/// it), or synchronously. Graph launches use it for copies whose source or
/// destination is not device memory of one device, and `cudaMemcpy3D` for
/// all of its copies.
pub(crate) fn run_copy(c: &MemcpyNode, stream: Option<u64>) -> Result<(), CudaError> {
    let s = stream.map(|s| s as *mut c_void);
    for (dst, src) in c.slices() {
        let (d, sr) = (dst as *mut c_void, src as *const c_void);
        match (c.height, s) {
            (1, Some(s)) => memory::memcpy_async(d, sr, c.width as usize, c.kind, s)?,
            (1, None) => memory::memcpy(d, sr, c.width as usize, c.kind)?,
            _ => pitched::memcpy2d(
                d,
                c.dst_pitch as usize,
                sr,
                c.src_pitch as usize,
                c.width as usize,
                c.height as usize,
                c.kind,
                s,
            )?,
        }
    }
    Ok(())
}

/// The step that fills a memset node's rows.
fn memset_step(m: &MemsetNode) -> GraphStep {
    let byte = m.value.to_le_bytes()[0];
    let uniform = match m.element {
        1 => true,
        2 => m.value & 0xFFFF == u32::from(byte) * 0x0101,
        _ => m.value == u32::from(byte) * 0x0101_0101,
    };
    let row = m.width * u64::from(m.element);
    match (uniform, m.height) {
        (true, 1) => GraphStep::of(&req::Memset {
            dst: m.dst,
            value: byte,
            len: row,
        }),
        (true, _) => GraphStep::of(&req::Memset2D {
            dst: m.dst,
            pitch: m.pitch,
            value: byte,
            width: row,
            height: m.height,
        }),
        (false, _) => GraphStep::of(&req::MemsetElements {
            dst: m.dst,
            pitch: m.pitch,
            value: m.value,
            element: m.element,
            width: m.width,
            height: m.height,
        }),
    }
}

/// Checks a memset node's parameters as `cudaGraphAddMemsetNode` does.
pub(crate) fn check_memset(m: &MemsetNode) -> Result<(), CudaError> {
    let row = m.width.checked_mul(u64::from(m.element));
    if !matches!(m.element, 1 | 2 | 4)
        || m.width == 0
        || m.height == 0
        || (m.height > 1 && row.is_none_or(|r| r > m.pitch))
        || rt().device_of(m.dst).is_none()
    {
        return Err(CudaError::INVALID_VALUE);
    }
    Ok(())
}

/// Runs of steps for one device, as they are gathered.
struct Runs<'a> {
    parts: &'a mut Vec<Part>,
    current: Option<(usize, Vec<GraphStep>, Vec<u64>, usize)>,
}

impl Runs<'_> {
    fn push(
        &mut self,
        device: usize,
        step: GraphStep,
        event: Option<u64>,
    ) -> Result<(), CudaError> {
        let size = step.body.0.len() + 8;
        let full = matches!(&self.current, Some((d, _, _, bytes)) if *d != device || bytes + size > MAX_RUN_BYTES);
        if full {
            self.flush()?;
        }
        let run = self
            .current
            .get_or_insert_with(|| (device, Vec::new(), Vec::new(), 0));
        run.1.push(step);
        run.2.extend(event);
        run.3 += size;
        Ok(())
    }

    fn flush(&mut self) -> Result<(), CudaError> {
        if let Some((device, steps, events, _)) = self.current.take() {
            let graph = rt().graph_upload(device, steps)?;
            self.parts.push(Part::Remote {
                device,
                graph,
                events,
            });
        }
        Ok(())
    }
}

impl Exec {
    /// Uploads the device work, unless it is up for device `sd` already.
    fn ensure_plan(&mut self, sd: usize) -> Result<(), CudaError> {
        if matches!(&self.plan, Some((d, _)) if *d == sd) {
            return Ok(());
        }
        self.drop_plan();
        let mut parts = Vec::new();
        let built = self.build(sd, &mut parts);
        if let Err(e) = built {
            release(&parts);
            return Err(e);
        }
        self.plan = Some((sd, parts));
        Ok(())
    }

    fn build(&self, sd: usize, parts: &mut Vec<Part>) -> Result<(), CudaError> {
        let mut runs = Runs {
            parts,
            current: None,
        };
        // Each launch starts by storing the defaults of the conditions
        // that have one.
        for &cond in &self.cond_handles {
            match conditional::handle(cond) {
                Some(h) if h.assign_default => {
                    runs.push(h.device, default_step(cond, h.default), None)?
                }
                _ => {}
            }
        }
        for item in self.items.iter().filter(|i| i.enabled) {
            match &item.kind {
                NodeKind::Kernel(k) => {
                    let config = LaunchConfig {
                        grid: k.grid,
                        block: k.block,
                        shared_mem: u64::from(k.shared_mem),
                        stream: 0,
                        cooperative: k.cooperative,
                    };
                    let step = rt().kernel_step(k.device, k.func, &config, &k.params)?;
                    runs.push(k.device, step, None)?;
                }
                NodeKind::Memset(m) => {
                    let d = rt().device_of(m.dst).ok_or(CudaError::INVALID_VALUE)?;
                    runs.push(d, memset_step(m), None)?;
                }
                NodeKind::Memcpy(c) => {
                    let kind = MemcpyKind::from_raw(c.kind)?;
                    match rt().memcpy_route(c.dst, c.src, kind)? {
                        Route::DeviceToDevice { dst, src } if dst == src => {
                            for step in copy_steps(c) {
                                runs.push(dst, step, None)?;
                            }
                        }
                        _ => {
                            runs.flush()?;
                            runs.parts.push(Part::Copy(*c));
                        }
                    }
                }
                NodeKind::EventRecord(e) => {
                    runs.push(sd, GraphStep::of(&req::EventRecord {}), Some(*e))?;
                }
                NodeKind::EventWait(e) => {
                    runs.flush()?;
                    runs.parts.push(Part::Wait(*e));
                }
                NodeKind::Host(h) => {
                    runs.flush()?;
                    runs.parts.push(Part::HostFn(*h));
                }
                NodeKind::Conditional(c) => {
                    let (device, step) = conditional_step(c, &item.bodies, runs.parts)?;
                    runs.push(device, step, None)?;
                }
                NodeKind::Library(l) => runs.push(l.device, l.step.clone(), None)?,
                // Graph memory is reserved already; its state changes at launch.
                NodeKind::Empty
                | NodeKind::Child(_)
                | NodeKind::MemAlloc { .. }
                | NodeKind::MemFree(_) => {}
            }
        }
        runs.flush()
    }

    /// A launch's graph memory: every alloc node's allocation becomes live
    /// and every free node's is freed, all checked before anything changes.
    fn run_memory_nodes(&self) -> Result<(), CudaError> {
        let auto_free = self.flags & AUTO_FREE_ON_LAUNCH != 0;
        let enabled = || self.items.iter().filter(|i| i.enabled);
        let allocs: Vec<u64> = enabled()
            .filter_map(|i| match i.kind {
                NodeKind::MemAlloc { ptr, .. } => Some(ptr),
                _ => None,
            })
            .collect();
        super::memory::can_allocate(&allocs, auto_free)?;
        for item in enabled() {
            match item.kind {
                NodeKind::MemAlloc { ptr, .. } => super::memory::allocate(ptr, auto_free)?,
                NodeKind::MemFree(ptr) => {
                    super::memory::free(ptr).unwrap_or(Err(CudaError::INVALID_VALUE))?
                }
                _ => {}
            }
        }
        Ok(())
    }

    /// Forgets the uploaded work (after a change, or when destroyed).
    fn drop_plan(&mut self) {
        if let Some((_, parts)) = self.plan.take() {
            release(&parts);
        }
    }
}

fn release(parts: &[Part]) {
    for part in parts {
        if let Part::Remote { device, graph, .. } | Part::Body { device, graph } = part {
            rt().graph_release(*device, *graph);
        }
    }
}

/// The step that stores a condition's default value.
fn default_step(cond: u64, value: u32) -> GraphStep {
    GraphStep::of(&req::MemsetElements {
        dst: cond,
        pitch: 4,
        value,
        element: 4,
        width: 1,
        height: 1,
    })
}

/// The step of a conditional node on its condition's device, its bodies
/// uploaded first (noted in `parts`, to be released with them).
fn conditional_step(
    c: &ConditionalNode,
    bodies: &[Vec<Item>],
    parts: &mut Vec<Part>,
) -> Result<(usize, GraphStep), CudaError> {
    let device = conditional::handle(c.handle)
        .ok_or(CudaError::INVALID_VALUE)?
        .device;
    let mut ids = Vec::with_capacity(bodies.len());
    for body in bodies {
        let steps = body_steps(body, device, parts)?;
        let size: usize = steps.iter().map(|s| s.body.0.len() + 8).sum();
        if size > MAX_RUN_BYTES {
            return Err(CudaError::NOT_SUPPORTED);
        }
        let graph = rt().graph_upload(device, steps)?;
        parts.push(Part::Body { device, graph });
        ids.push(graph);
    }
    let step = GraphStep::of(&req::GraphConditional {
        cond: c.handle,
        kind: c.kind,
        bodies: ids,
    });
    Ok((device, step))
}

/// The steps of a conditional body: device work on `device` only, as
/// instantiation checked, and copies between its own memory.
fn body_steps(
    items: &[Item],
    device: usize,
    parts: &mut Vec<Part>,
) -> Result<Vec<GraphStep>, CudaError> {
    let mut steps = Vec::new();
    for item in items {
        match &item.kind {
            NodeKind::Kernel(k) => {
                let config = LaunchConfig {
                    grid: k.grid,
                    block: k.block,
                    shared_mem: u64::from(k.shared_mem),
                    stream: 0,
                    cooperative: k.cooperative,
                };
                steps.push(rt().kernel_step(k.device, k.func, &config, &k.params)?);
            }
            NodeKind::Memset(m) => {
                if rt().device_of(m.dst) != Some(device) {
                    return Err(CudaError::INVALID_VALUE);
                }
                steps.push(memset_step(m));
            }
            NodeKind::Memcpy(c) => {
                let kind = MemcpyKind::from_raw(c.kind)?;
                match rt().memcpy_route(c.dst, c.src, kind)? {
                    Route::DeviceToDevice { dst, src } if dst == device && src == device => {
                        steps.extend(copy_steps(c));
                    }
                    // Host memory would need the client in the loop.
                    _ => return Err(CudaError::NOT_SUPPORTED),
                }
            }
            NodeKind::Conditional(c) => {
                let (_, step) = conditional_step(c, &item.bodies, parts)?;
                steps.push(step);
            }
            NodeKind::Library(l) if l.device == device => steps.push(l.step.clone()),
            NodeKind::Empty | NodeKind::Child(_) => {}
            _ => return Err(CudaError::INVALID_VALUE),
        }
    }
    Ok(steps)
}

/// The steps of a copy between addresses of one device.
fn copy_steps(c: &MemcpyNode) -> impl Iterator<Item = GraphStep> + '_ {
    c.slices().map(|(d, s)| {
        if c.height == 1 {
            GraphStep::of(&req::MemcpyDtoD {
                dst: d,
                src: s,
                len: c.width,
            })
        } else {
            GraphStep::of(&req::Memcpy2DDtoD {
                dst: d,
                dpitch: c.dst_pitch,
                src: s,
                spitch: c.src_pitch,
                width: c.width,
                height: c.height,
            })
        }
    })
}

/// Changes the parameters of one node of an executable graph
/// (`cudaGraphExec*NodeSetParams`); the node keeps its type.
pub(crate) fn set_node(h: Handle, node: Handle, kind: NodeKind) -> Result<(), CudaError> {
    let exec = exec(h)?;
    let mut exec = exec.lock();
    let i = *exec.index.get(&node).ok_or(CudaError::INVALID_VALUE)?;
    let item = &mut exec.items[i];
    let same_device = match (&item.kind, &kind) {
        (NodeKind::Kernel(a), NodeKind::Kernel(b)) => a.device == b.device,
        (a, b) => a.type_code() == b.type_code(),
    };
    if !same_device || matches!(kind, NodeKind::Child(_) | NodeKind::Conditional(_)) {
        super::discard(&kind);
        return Err(CudaError::INVALID_VALUE);
    }
    item.kind = kind;
    exec.drop_plan();
    Ok(())
}

/// `cudaGraphExecChildGraphNodeSetParams`: the nodes of child graph node
/// `node` take their parameters from `child`, which must have the same
/// topology and node types, in the same creation order.
pub(crate) fn set_child(h: Handle, node: Handle, child: Handle) -> Result<(), CudaError> {
    let exec = exec(h)?;
    let mut exec = exec.lock();
    let i = *exec.index.get(&node).ok_or(CudaError::INVALID_VALUE)?;
    let NodeKind::Child(current) = exec.items[i].kind else {
        return Err(CudaError::INVALID_VALUE);
    };
    let (old, new) = {
        let all = graphs().lock();
        let (mut old_shape, mut new_shape) = (Vec::new(), Vec::new());
        shape(&all, current, &mut old_shape)?;
        shape(&all, child, &mut new_shape)?;
        if old_shape != new_shape {
            // As NVIDIA's runtime answers (seen on an H200).
            return Err(CudaError::GRAPH_EXEC_UPDATE_FAILURE);
        }
        let (mut old, mut new) = (Vec::new(), Vec::new());
        flatten(&all, current, &mut old)?;
        flatten(&all, child, &mut new)?;
        (old, new)
    };
    // Check every node before changing any.
    let mut changes = Vec::with_capacity(old.len());
    for (o, n) in old.iter().zip(new) {
        let at = *exec.index.get(&o.node).ok_or(CudaError::INVALID_VALUE)?;
        let item = &exec.items[at];
        let allowed = match (&item.kind, &n.kind) {
            (NodeKind::Kernel(a), NodeKind::Kernel(b)) => a.device == b.device,
            // Graph memory is fixed at instantiation.
            (a @ (NodeKind::MemAlloc { .. } | NodeKind::MemFree(_)), b) => a == b,
            (NodeKind::Child(_), NodeKind::Child(_)) => true,
            (NodeKind::Conditional(a), NodeKind::Conditional(b)) => {
                a.handle == b.handle
                    && o.bodies
                        .iter()
                        .zip(&n.bodies)
                        .all(|(o, n)| check_update(o, n).is_none())
            }
            (a, b) => a.type_code() == b.type_code(),
        };
        if !allowed {
            return Err(CudaError::INVALID_VALUE);
        }
        if !matches!(n.kind, NodeKind::Child(_)) {
            changes.push((at, n.kind, n.bodies));
        }
    }
    for (at, kind, bodies) in changes {
        exec.items[at].kind = kind;
        exec.items[at].bodies = bodies;
    }
    exec.drop_plan();
    Ok(())
}

/// `cudaGraphNodeSetEnabled` / `GetEnabled`.
pub(crate) fn set_enabled(
    h: Handle,
    node: Handle,
    enabled: Option<bool>,
) -> Result<bool, CudaError> {
    let exec = exec(h)?;
    let mut exec = exec.lock();
    let i = *exec.index.get(&node).ok_or(CudaError::INVALID_VALUE)?;
    let item = &mut exec.items[i];
    if !matches!(
        item.kind,
        NodeKind::Kernel(_) | NodeKind::Memcpy(_) | NodeKind::Memset(_)
    ) {
        return Err(CudaError::INVALID_VALUE);
    }
    let was = item.enabled;
    if let Some(e) = enabled {
        if e != was {
            item.enabled = e;
            exec.drop_plan();
        }
    }
    Ok(was)
}

/// `cudaGraphExecGetFlags`.
pub(crate) fn flags(h: Handle) -> Result<u64, CudaError> {
    Ok(exec(h)?.lock().flags)
}

/// The outcome of `cudaGraphExecUpdate`: the result code and the node that
/// stopped it.
pub(crate) struct UpdateOutcome {
    pub result: i32,
    pub error_node: Handle,
}

/// Why the items of an executable graph cannot take the parameters of
/// `new`, which has the same topology; conditional bodies too.
fn check_update(old: &[Item], new: &[Item]) -> Option<UpdateOutcome> {
    for (old, new) in old.iter().zip(new) {
        let refused = |result| {
            Some(UpdateOutcome {
                result,
                error_node: new.node,
            })
        };
        let memory = matches!(old.kind, NodeKind::MemAlloc { .. } | NodeKind::MemFree(_));
        if memory && old.kind != new.kind {
            return refused(update_result::NOT_SUPPORTED);
        }
        match (&old.kind, &new.kind) {
            (NodeKind::Kernel(a), NodeKind::Kernel(b)) if a.device != b.device => {
                return refused(update_result::PARAMETERS_CHANGED);
            }
            // A conditional node keeps its handle; its bodies' nodes may
            // take new parameters.
            (NodeKind::Conditional(a), NodeKind::Conditional(b)) => {
                if a.handle != b.handle {
                    return refused(update_result::PARAMETERS_CHANGED);
                }
                for (o, n) in old.bodies.iter().zip(&new.bodies) {
                    if let Some(outcome) = check_update(o, n) {
                        return Some(outcome);
                    }
                }
            }
            _ => {}
        }
    }
    None
}

/// `cudaGraphExecUpdate`: takes every node's parameters from graph `g`,
/// which must have the instantiated graph's topology and node types.
pub(crate) fn update(h: Handle, g: Handle) -> Result<UpdateOutcome, CudaError> {
    let exec = exec(h)?;
    let mut exec = exec.lock();
    let (items, sh, order) = {
        let all = graphs().lock();
        let mut sh = Vec::new();
        shape(&all, g, &mut sh)?;
        let mut items = Vec::new();
        flatten(&all, g, &mut items)?;
        let mut order = Vec::new();
        creation_order(&all, g, &mut order)?;
        (items, sh, order)
    };
    if sh.len() != exec.shape.len() {
        return Ok(UpdateOutcome {
            result: update_result::TOPOLOGY_CHANGED,
            error_node: 0,
        });
    }
    for (i, (new, old)) in sh.iter().zip(&exec.shape).enumerate() {
        let node = order.get(i).copied().unwrap_or_default();
        if new.0 != old.0 {
            return Ok(UpdateOutcome {
                result: update_result::NODE_TYPE_CHANGED,
                error_node: node,
            });
        }
        if new.1 != old.1 {
            return Ok(UpdateOutcome {
                result: update_result::TOPOLOGY_CHANGED,
                error_node: node,
            });
        }
    }
    // Same topology: the flattened orders correspond item by item.
    if let Some(outcome) = check_update(&exec.items, &items) {
        return Ok(outcome);
    }
    for (old, new) in exec.items.iter_mut().zip(items) {
        old.kind = new.kind;
        old.bodies = new.bodies;
    }
    exec.drop_plan();
    Ok(UpdateOutcome {
        result: update_result::SUCCESS,
        error_node: 0,
    })
}
