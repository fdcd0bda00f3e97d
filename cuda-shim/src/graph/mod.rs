//! CUDA graphs and stream capture, one implementation behind the runtime
//! (`cudaGraph*`) and driver (`cuGraph*`) entry points: [`model`] holds the
//! graphs the application builds, [`capture`] turns stream work into nodes,
//! and [`exec`] instantiates and launches them, their device work kept on
//! the servers (`rcud_client::Runtime::graph_upload`).

pub(crate) mod capture;
pub(crate) mod conditional;
pub(crate) mod exec;
pub(crate) mod memory;
pub(crate) mod model;
pub(crate) mod params;
pub(crate) mod user_objects;

use std::ffi::c_void;
use std::fmt::Write as _;

use rcud_client::Runtime;
use rcud_proto::CudaError;

use crate::abi::launch::{attr_id, AttrHolder, AttrValue};

pub(crate) use model::{graphs, Handle, HostNode, KernelNode, MemcpyNode, MemsetNode, NodeKind};

/// `CU_LAUNCH_PARAM_*` markers of a kernel's `extra` array.
const PARAM_END: usize = 0x00;
const PARAM_BUFFER_POINTER: usize = 0x01;
const PARAM_BUFFER_SIZE: usize = 0x02;

/// Where a kernel's arguments are.
#[derive(Debug, Clone, Copy)]
pub(crate) enum KernelArgs {
    /// One pointer per parameter (`kernelParams`).
    Pointers(*mut *mut c_void),
    /// All parameters packed at their offsets (`CU_LAUNCH_PARAM_BUFFER_*`).
    Buffer(*const u8, usize),
}

/// The arguments a launch names with `params` or `extra` (not both).
pub(crate) fn kernel_args(
    params: *mut *mut c_void,
    extra: *mut *mut c_void,
) -> Result<KernelArgs, CudaError> {
    if extra.is_null() {
        return Ok(KernelArgs::Pointers(params));
    }
    if !params.is_null() {
        return Err(CudaError::INVALID_VALUE);
    }
    let (mut buffer, mut size) = (None, None);
    let mut i = 0;
    loop {
        // SAFETY: the API passes a CU_LAUNCH_PARAM_END-terminated array of
        // (marker, value) pairs.
        let marker = unsafe { *extra.add(i) } as usize;
        match marker {
            PARAM_END => break,
            PARAM_BUFFER_POINTER | PARAM_BUFFER_SIZE => {
                // SAFETY: as above: a marker is followed by its value.
                let value = unsafe { *extra.add(i + 1) };
                if marker == PARAM_BUFFER_POINTER {
                    buffer = Some(value as *const u8);
                } else if !value.is_null() {
                    // SAFETY: the size marker's value points to a size_t.
                    size = Some(unsafe { *(value as *const usize) });
                }
                i += 2;
            }
            _ => return Err(CudaError::INVALID_VALUE),
        }
    }
    match (buffer, size) {
        (Some(b), Some(s)) if !b.is_null() || s == 0 => Ok(KernelArgs::Buffer(b, s)),
        _ => Err(CudaError::INVALID_VALUE),
    }
}

/// A kernel node of `func` on device `device`, its arguments copied now.
pub(crate) fn kernel_node(
    func: u64,
    device: usize,
    grid: [u32; 3],
    block: [u32; 3],
    shared_mem: u64,
    args: KernelArgs,
) -> Result<KernelNode, CudaError> {
    let rt = Runtime::global();
    let layout = rt.kernel_params(device, func)?;
    let total = rt.kernel_params_size(device, func)?;
    let mut params = vec![0u8; total];
    match args {
        KernelArgs::Pointers(p) => {
            for (i, &(offset, size)) in layout.iter().enumerate() {
                if p.is_null() {
                    break;
                }
                // SAFETY: kernelParams holds one pointer per parameter, each
                // to a value of the parameter's size.
                unsafe {
                    let src = *p.add(i) as *const u8;
                    if !src.is_null() {
                        std::ptr::copy_nonoverlapping(src, params[offset..].as_mut_ptr(), size);
                    }
                }
            }
        }
        KernelArgs::Buffer(b, size) => {
            if size < total {
                return Err(CudaError::INVALID_VALUE);
            }
            if total > 0 {
                // SAFETY: the `extra` array names `size` (>= total) bytes at `b`.
                let packed = unsafe { std::slice::from_raw_parts(b, total) };
                params.copy_from_slice(packed);
            }
        }
    }
    Ok(KernelNode {
        func,
        device,
        grid,
        block,
        shared_mem: u32::try_from(shared_mem).map_err(|_| CudaError::INVALID_VALUE)?,
        params,
        layout,
        cooperative: false,
        attrs: Default::default(),
    })
}

/// Records a memset on a capturing `stream` as a node, checked as
/// `cudaGraphAddMemsetNode` checks one; whether it was captured.
pub(crate) fn capture_memset(stream: u64, node: MemsetNode) -> Result<bool, CudaError> {
    capture::record(stream, || {
        exec::check_memset(&node)?;
        Ok(NodeKind::Memset(node))
    })
}

/// Adds a node to graph `g` after `deps`.
pub(crate) fn add_node(g: Handle, deps: &[Handle], kind: NodeKind) -> Result<Handle, CudaError> {
    graphs().lock().add(g, deps, kind)
}

/// A node's parameters.
pub(crate) fn node_kind(node: Handle) -> Result<NodeKind, CudaError> {
    Ok(graphs().lock().node(node)?.1.kind.clone())
}

/// Replaces a node's parameters with others of the same type.
pub(crate) fn set_node_kind(node: Handle, kind: NodeKind) -> Result<(), CudaError> {
    let mut all = graphs().lock();
    let n = all.node_mut(node)?;
    // A conditional node's handle, type and bodies are fixed, as CUDA has
    // them.
    let fixed = matches!(
        kind,
        NodeKind::Child(_)
            | NodeKind::MemAlloc { .. }
            | NodeKind::MemFree(_)
            | NodeKind::Conditional(_)
    );
    if n.kind.type_code() != kind.type_code() || fixed {
        drop(all);
        discard(&kind);
        return Err(CudaError::INVALID_VALUE);
    }
    let mut kind = kind;
    // New parameters leave a kernel node's attributes as they were.
    if let (NodeKind::Kernel(old), NodeKind::Kernel(new)) = (&n.kind, &mut kind) {
        new.cooperative = old.cooperative;
        new.attrs = old.attrs.clone();
    }
    n.kind = kind;
    Ok(())
}

/// Undoes what making `kind` from parameters did, when it goes unused: the
/// body graphs of a conditional node.
pub(crate) fn discard(kind: &NodeKind) {
    if let NodeKind::Conditional(c) = kind {
        let mut all = graphs().lock();
        for b in c.bodies.iter() {
            let _ = all.destroy(*b);
        }
    }
}

/// Runs `f` on kernel node `node`; any other node is refused.
pub(crate) fn with_kernel_node<T>(
    node: Handle,
    f: impl FnOnce(&mut KernelNode) -> Result<T, CudaError>,
) -> Result<T, CudaError> {
    match &mut graphs().lock().node_mut(node)?.kind {
        NodeKind::Kernel(k) => f(k),
        _ => Err(CudaError::INVALID_VALUE),
    }
}

/// The largest access-policy window of device `device`.
fn max_window(device: usize) -> Result<u64, CudaError> {
    let most = Runtime::global().attribute(
        rcud_proto::DeviceAttr::MAX_ACCESS_POLICY_WINDOW_SIZE.0,
        device as i32,
    )?;
    Ok(u64::try_from(most).unwrap_or(0))
}

/// `cudaGraphKernelNodeSetAttribute`; the cooperative attribute is the
/// node's launch mode.
pub(crate) fn kernel_node_set_attribute(
    node: Handle,
    id: u32,
    value: &AttrValue,
) -> Result<(), CudaError> {
    let device = with_kernel_node(node, |k| Ok(k.device))?;
    let limit = max_window(device)?;
    with_kernel_node(node, |k| {
        k.attrs.set(AttrHolder::KernelNode, id, value, limit)?;
        if id == attr_id::COOPERATIVE {
            k.cooperative = value[..4] != [0; 4];
        }
        Ok(())
    })
}

/// `cudaGraphKernelNodeGetAttribute`.
pub(crate) fn kernel_node_get_attribute(node: Handle, id: u32) -> Result<AttrValue, CudaError> {
    with_kernel_node(node, |k| {
        let mut v = k.attrs.get(AttrHolder::KernelNode, id)?;
        if id == attr_id::COOPERATIVE {
            v[..4].copy_from_slice(&u32::from(k.cooperative).to_ne_bytes());
        }
        Ok(v)
    })
}

/// `cudaGraphKernelNodeCopyAttributes`: every attribute of kernel node
/// `src` onto kernel node `dst`.
pub(crate) fn kernel_node_copy_attributes(dst: Handle, src: Handle) -> Result<(), CudaError> {
    let (cooperative, attrs) = with_kernel_node(src, |k| Ok((k.cooperative, k.attrs.clone())))?;
    with_kernel_node(dst, |k| {
        k.cooperative = cooperative;
        k.attrs = attrs;
        Ok(())
    })
}

/// `cudaGraphDebugDotFlagsVerbose`.
const DOT_VERBOSE: u32 = 1;

/// `cudaGraphDebugDotPrint`: the graph in Graphviz's DOT language; verbose,
/// with every node's handle and argument bytes.
pub(crate) fn dot(g: Handle, flags: u32) -> Result<String, CudaError> {
    let all = graphs().lock();
    let mut out = String::from("digraph rcud {\n  rankdir=TB;\n  compound=true;\n");
    dot_graph(&all, g, flags & DOT_VERBOSE != 0, &mut out)?;
    out.push_str("}\n");
    Ok(out)
}

fn dot_graph(
    all: &model::Graphs,
    g: Handle,
    verbose: bool,
    out: &mut String,
) -> Result<(), CudaError> {
    let graph = all.graph(g)?;
    let _ = writeln!(
        out,
        "  subgraph cluster_{g:x} {{\n    label=\"graph {g:#x}\";"
    );
    for n in &graph.order {
        let node = &graph.nodes[n];
        let label = match &node.kind {
            NodeKind::Kernel(k) => {
                let name = Runtime::global()
                    .function_name(k.func)
                    .unwrap_or_else(|_| format!("{:#x}", k.func));
                format!(
                    "KERNEL\\n{name}\\ngrid ({},{},{}) block ({},{},{})\\nshared {} B",
                    k.grid[0],
                    k.grid[1],
                    k.grid[2],
                    k.block[0],
                    k.block[1],
                    k.block[2],
                    k.shared_mem
                )
            }
            NodeKind::Memcpy(c) => format!(
                "MEMCPY\\n{:#x} <- {:#x}\\n{} x {} x {} B, kind {}",
                c.dst, c.src, c.width, c.height, c.depth, c.kind
            ),
            NodeKind::Memset(m) => format!(
                "MEMSET\\n{:#x}\\nvalue {:#x}, {} x {} elements of {} B",
                m.dst, m.value, m.width, m.height, m.element
            ),
            NodeKind::Host(h) => format!("HOST\\nfunction {:#x}", h.func),
            NodeKind::Child(c) => format!("GRAPH\\n{c:#x}"),
            NodeKind::Empty => "EMPTY".to_string(),
            NodeKind::Library(l) => format!("KERNEL\\n{} call on device {}", l.library, l.device),
            NodeKind::EventRecord(e) => format!("EVENT_RECORD\\n{e:#x}"),
            NodeKind::EventWait(e) => format!("WAIT_EVENT\\n{e:#x}"),
            NodeKind::MemAlloc { ptr, size, device } => {
                format!("MEM_ALLOC\\n{ptr:#x}, {size} B on device {device}")
            }
            NodeKind::MemFree(ptr) => format!("MEM_FREE\\n{ptr:#x}"),
            NodeKind::Conditional(c) => {
                let kind = match c.kind {
                    rcud_proto::ops::cond_kind::IF => "IF",
                    rcud_proto::ops::cond_kind::WHILE => "WHILE",
                    _ => "SWITCH",
                };
                let bodies: Vec<String> = c.bodies.iter().map(|b| format!("{b:#x}")).collect();
                format!(
                    "CONDITIONAL\\n{kind}, handle {:#x}\\nbodies {}",
                    c.handle,
                    bodies.join(" ")
                )
            }
        };
        let label = match (&node.kind, verbose) {
            (NodeKind::Kernel(k), true) => {
                let bytes: Vec<String> = k.params.iter().map(|b| format!("{b:02x}")).collect();
                format!("{label}\\nnode {n:#x}\\nparams {}", bytes.join(" "))
            }
            (_, true) => format!("{label}\\nnode {n:#x}"),
            (_, false) => label,
        };
        let _ = writeln!(out, "    n{n:x} [shape=box, label=\"{label}\"];");
        for d in &node.deps {
            let _ = writeln!(out, "    n{d:x} -> n{n:x};");
        }
    }
    out.push_str("  }\n");
    for n in &graph.order {
        match &graph.nodes[n].kind {
            NodeKind::Child(c) => dot_graph(all, *c, verbose, out)?,
            NodeKind::Conditional(c) => {
                for (i, b) in c.bodies.iter().enumerate() {
                    dot_graph(all, *b, verbose, out)?;
                    // An edge to the body's first node, drawn to its box.
                    if let Some(first) = all.graph(*b)?.order.first() {
                        let _ = writeln!(
                            out,
                            "  n{n:x} -> n{first:x} [lhead=cluster_{b:x}, style=dashed, label=\"body {i}\"];"
                        );
                    }
                }
            }
            _ => {}
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn extra_arrays_name_a_buffer() {
        let mut args = [7u8; 12];
        let mut size = 12usize;
        let mut extra = [
            PARAM_BUFFER_POINTER as *mut c_void,
            args.as_mut_ptr() as *mut c_void,
            PARAM_BUFFER_SIZE as *mut c_void,
            &mut size as *mut usize as *mut c_void,
            PARAM_END as *mut c_void,
        ];
        let none = std::ptr::null_mut();
        match kernel_args(none, extra.as_mut_ptr()) {
            Ok(KernelArgs::Buffer(p, 12)) => assert_eq!(p, args.as_ptr()),
            _ => panic!("buffer expected"),
        }
        let mut no_size = [
            PARAM_BUFFER_POINTER as *mut c_void,
            args.as_mut_ptr() as *mut c_void,
            PARAM_END as *mut c_void,
        ];
        assert!(kernel_args(none, no_size.as_mut_ptr()).is_err());
        let mut bad = [9usize as *mut c_void, PARAM_END as *mut c_void];
        assert!(kernel_args(none, bad.as_mut_ptr()).is_err());
        // kernelParams and extra together are refused.
        let mut one = [args.as_mut_ptr() as *mut c_void];
        assert!(kernel_args(one.as_mut_ptr(), extra.as_mut_ptr()).is_err());
    }

    #[test]
    fn graphs_order_clone_and_refuse_cycles() {
        let mut all = model::Graphs::default();
        let g = all.create();
        let a = all.add(g, &[], NodeKind::Empty).unwrap();
        let b = all.add(g, &[a], NodeKind::EventWait(1)).unwrap();
        let c = all.add(g, &[], NodeKind::Empty).unwrap();
        all.node_mut(a).unwrap().deps.push(c);
        assert_eq!(all.graph(g).unwrap().topological(), Some(vec![c, a, b]));
        assert!(all.graph(g).unwrap().reaches(c, b));
        // A dependency on a node of another graph, or twice on one node.
        let other = all.create();
        assert!(all.add(other, &[a], NodeKind::Empty).is_err());
        assert!(all.add(g, &[a, a], NodeKind::Empty).is_err());
        let copy = all.clone_graph(g).unwrap();
        let b2 = all.graph(copy).unwrap().cloned_from[&b];
        assert_eq!(all.node(b2).unwrap().0, copy);
        all.node_mut(c).unwrap().deps.push(b);
        assert_eq!(all.graph(g).unwrap().topological(), None);
        all.destroy(g).unwrap();
        assert!(all.node(a).is_err());
        assert!(all.node(b2).is_ok());
    }
}
