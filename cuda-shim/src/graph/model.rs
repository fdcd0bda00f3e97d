//! Graphs as the application builds them: nodes with their parameters and
//! the edges between them, behind opaque handles shared by both APIs.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};

use parking_lot::Mutex;
use rcud_proto::CudaError;

/// A graph, node or executable graph handle as the application sees it.
pub(crate) type Handle = u64;

/// `cudaGraphNodeType`.
pub(crate) mod node_type {
    pub(crate) const KERNEL: i32 = 0;
    pub(crate) const MEMCPY: i32 = 1;
    pub(crate) const MEMSET: i32 = 2;
    pub(crate) const HOST: i32 = 3;
    pub(crate) const GRAPH: i32 = 4;
    pub(crate) const EMPTY: i32 = 5;
    pub(crate) const WAIT_EVENT: i32 = 6;
    pub(crate) const EVENT_RECORD: i32 = 7;
    pub(crate) const MEM_ALLOC: i32 = 10;
    pub(crate) const MEM_FREE: i32 = 11;
    pub(crate) const CONDITIONAL: i32 = 13;
}

/// A kernel launch with its arguments, copied when the node was made.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct KernelNode {
    /// Host stub (runtime) or function handle (driver).
    pub func: u64,
    /// The device current when the node was made.
    pub device: usize,
    pub grid: [u32; 3],
    pub block: [u32; 3],
    pub shared_mem: u32,
    /// Arguments packed at their offsets.
    pub params: Vec<u8>,
    /// (offset, size) of each parameter, for `kernelParams` going back out.
    pub layout: Vec<(usize, usize)>,
    /// A cooperative launch (captured from one, or the node's
    /// `cudaLaunchAttributeCooperative`).
    pub cooperative: bool,
    /// The node's other launch attributes (`cudaGraphKernelNodeSetAttribute`).
    pub attrs: crate::abi::launch::LaunchAttrs,
}

/// A math library call captured from a stream (cuBLAS, cuFFT, cuRAND, ...):
/// the request the server runs, encoded when the call was made (host
/// scalars by value, as the library bakes them into its kernels).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct LibraryNode {
    /// The device of the stream it was captured from.
    pub device: usize,
    pub library: &'static str,
    pub step: rcud_proto::ops::GraphStep,
}

/// A copy of `depth` slices of `height` rows of `width` bytes; a 1-D copy
/// is one row. Positions are folded into the addresses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct MemcpyNode {
    pub dst: u64,
    pub dst_pitch: u64,
    /// Rows per slice of the destination.
    pub dst_rows: u64,
    pub src: u64,
    pub src_pitch: u64,
    pub src_rows: u64,
    pub width: u64,
    pub height: u64,
    pub depth: u64,
    /// `cudaMemcpyKind`.
    pub kind: i32,
}

impl MemcpyNode {
    /// A linear copy of `count` bytes.
    pub(crate) fn linear(dst: u64, src: u64, count: u64, kind: i32) -> Self {
        Self {
            dst,
            dst_pitch: count,
            dst_rows: 1,
            src,
            src_pitch: count,
            src_rows: 1,
            width: count,
            height: 1,
            depth: 1,
            kind,
        }
    }

    /// The (dst, src) start of each row, slice after slice.
    pub(crate) fn slices(&self) -> impl Iterator<Item = (u64, u64)> + '_ {
        (0..self.depth).map(move |z| {
            (
                self.dst + z * self.dst_pitch * self.dst_rows,
                self.src + z * self.src_pitch * self.src_rows,
            )
        })
    }
}

/// `cudaMemsetParams`: `height` rows of `width` elements.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct MemsetNode {
    pub dst: u64,
    pub pitch: u64,
    pub value: u32,
    /// 1, 2 or 4 bytes.
    pub element: u32,
    pub width: u64,
    pub height: u64,
}

/// `cudaHostNodeParams`: a function and its argument, as addresses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct HostNode {
    pub func: usize,
    pub data: usize,
}

/// What a node does.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum NodeKind {
    Kernel(KernelNode),
    Memcpy(MemcpyNode),
    Memset(MemsetNode),
    Host(HostNode),
    /// A child graph, owned by the node.
    Child(Handle),
    Empty,
    EventRecord(u64),
    EventWait(u64),
    /// Graph memory reserved at `ptr` ([`super::memory`]).
    MemAlloc {
        ptr: u64,
        size: u64,
        device: usize,
    },
    /// Frees the graph allocation at this address.
    MemFree(u64),
    /// An IF, WHILE or SWITCH node and its body graphs ([`super::conditional`]).
    Conditional(super::conditional::ConditionalNode),
    /// A captured math library call: the library's kernels in CUDA.
    Library(LibraryNode),
}

impl NodeKind {
    /// Its `cudaGraphNodeType`.
    pub(crate) fn type_code(&self) -> i32 {
        match self {
            NodeKind::Kernel(_) => node_type::KERNEL,
            NodeKind::Memcpy(_) => node_type::MEMCPY,
            NodeKind::Memset(_) => node_type::MEMSET,
            NodeKind::Host(_) => node_type::HOST,
            NodeKind::Child(_) => node_type::GRAPH,
            NodeKind::Empty => node_type::EMPTY,
            NodeKind::EventRecord(_) => node_type::EVENT_RECORD,
            NodeKind::EventWait(_) => node_type::WAIT_EVENT,
            NodeKind::MemAlloc { .. } => node_type::MEM_ALLOC,
            NodeKind::MemFree(_) => node_type::MEM_FREE,
            NodeKind::Conditional(_) => node_type::CONDITIONAL,
            NodeKind::Library(_) => node_type::KERNEL,
        }
    }

    /// Another holder of what the node names (graph memory).
    pub(crate) fn held(&self) {
        if let NodeKind::MemAlloc { ptr, .. } = self {
            super::memory::hold(*ptr);
        }
    }

    /// One holder less of what the node names.
    pub(crate) fn dropped(&self) {
        if let NodeKind::MemAlloc { ptr, .. } = self {
            super::memory::release(*ptr);
        }
    }
}

/// One node of a graph.
#[derive(Debug, Clone)]
pub(crate) struct Node {
    pub kind: NodeKind,
    /// The nodes it depends on, in the order the edges were added.
    pub deps: Vec<Handle>,
}

/// A graph: its nodes in creation order.
#[derive(Debug, Clone, Default)]
pub(crate) struct Graph {
    pub order: Vec<Handle>,
    pub nodes: HashMap<Handle, Node>,
    /// For a clone: original node -> its copy here (`cudaGraphNodeFindInClone`).
    pub cloned_from: HashMap<Handle, Handle>,
    /// User objects the graph keeps alive, with its reference counts.
    pub user_objects: HashMap<Handle, u32>,
    /// Conditional handles made for it (each holds one reference).
    pub cond_handles: Vec<u64>,
}

impl Graph {
    /// The nodes that depend on `node`, in creation order.
    pub(crate) fn dependents(&self, node: Handle) -> Vec<Handle> {
        self.order
            .iter()
            .copied()
            .filter(|n| self.nodes[n].deps.contains(&node))
            .collect()
    }

    /// The nodes in an order that respects every edge (creation order among
    /// independent nodes); `None` if the edges form a cycle.
    pub(crate) fn topological(&self) -> Option<Vec<Handle>> {
        let mut placed: HashMap<Handle, bool> = HashMap::with_capacity(self.order.len());
        let mut out = Vec::with_capacity(self.order.len());
        while out.len() < self.order.len() {
            let before = out.len();
            for &n in &self.order {
                if placed.contains_key(&n) {
                    continue;
                }
                if self.nodes[&n].deps.iter().all(|d| placed.contains_key(d)) {
                    placed.insert(n, true);
                    out.push(n);
                }
            }
            if out.len() == before {
                return None;
            }
        }
        Some(out)
    }

    /// Whether `to` is reachable from `from` along the edges.
    pub(crate) fn reaches(&self, from: Handle, to: Handle) -> bool {
        let mut stack = vec![to];
        let mut seen = std::collections::HashSet::new();
        while let Some(n) = stack.pop() {
            if n == from {
                return true;
            }
            if seen.insert(n) {
                if let Some(node) = self.nodes.get(&n) {
                    stack.extend(node.deps.iter().copied());
                }
            }
        }
        false
    }
}

/// Every graph and node of the process.
#[derive(Debug, Default)]
pub(crate) struct Graphs {
    pub graphs: HashMap<Handle, Graph>,
    /// Node -> the graph holding it.
    pub owner: HashMap<Handle, Handle>,
}

static NEXT_HANDLE: AtomicU64 = AtomicU64::new(0x6_0000);

/// A fresh handle, never 0 and never reused.
pub(crate) fn new_handle() -> Handle {
    NEXT_HANDLE.fetch_add(16, Ordering::Relaxed)
}

/// The process's graphs.
pub(crate) fn graphs() -> &'static Mutex<Graphs> {
    static GRAPHS: std::sync::OnceLock<Mutex<Graphs>> = std::sync::OnceLock::new();
    GRAPHS.get_or_init(Mutex::default)
}

impl Graphs {
    pub(crate) fn create(&mut self) -> Handle {
        let h = new_handle();
        self.graphs.insert(h, Graph::default());
        h
    }

    pub(crate) fn graph(&self, g: Handle) -> Result<&Graph, CudaError> {
        self.graphs.get(&g).ok_or(CudaError::INVALID_VALUE)
    }

    pub(crate) fn graph_mut(&mut self, g: Handle) -> Result<&mut Graph, CudaError> {
        self.graphs.get_mut(&g).ok_or(CudaError::INVALID_VALUE)
    }

    /// The graph holding `node`, and the node.
    pub(crate) fn node(&self, node: Handle) -> Result<(Handle, &Node), CudaError> {
        let g = *self.owner.get(&node).ok_or(CudaError::INVALID_VALUE)?;
        let n = self
            .graphs
            .get(&g)
            .and_then(|graph| graph.nodes.get(&node))
            .ok_or(CudaError::INVALID_VALUE)?;
        Ok((g, n))
    }

    pub(crate) fn node_mut(&mut self, node: Handle) -> Result<&mut Node, CudaError> {
        let g = *self.owner.get(&node).ok_or(CudaError::INVALID_VALUE)?;
        self.graphs
            .get_mut(&g)
            .and_then(|graph| graph.nodes.get_mut(&node))
            .ok_or(CudaError::INVALID_VALUE)
    }

    /// Adds a node depending on `deps` (nodes of the same graph, no repeats).
    pub(crate) fn add(
        &mut self,
        g: Handle,
        deps: &[Handle],
        kind: NodeKind,
    ) -> Result<Handle, CudaError> {
        for (i, d) in deps.iter().enumerate() {
            if self.owner.get(d) != Some(&g) || deps[..i].contains(d) {
                return Err(CudaError::INVALID_VALUE);
            }
        }
        let graph = self.graph_mut(g)?;
        let h = new_handle();
        graph.order.push(h);
        graph.nodes.insert(
            h,
            Node {
                kind,
                deps: deps.to_vec(),
            },
        );
        self.owner.insert(h, g);
        Ok(h)
    }

    /// Destroys a graph, its nodes and the child graphs they own.
    pub(crate) fn destroy(&mut self, g: Handle) -> Result<(), CudaError> {
        let graph = self.graphs.remove(&g).ok_or(CudaError::INVALID_VALUE)?;
        super::user_objects::release_all(&graph.user_objects);
        for cond in &graph.cond_handles {
            super::conditional::release(*cond);
        }
        for (h, node) in graph.nodes {
            self.owner.remove(&h);
            node.kind.dropped();
            self.destroy_owned(&node.kind);
        }
        Ok(())
    }

    /// Destroys the graphs a node owns: a child graph, conditional bodies.
    fn destroy_owned(&mut self, kind: &NodeKind) {
        match kind {
            NodeKind::Child(c) => {
                let _ = self.destroy(*c);
            }
            NodeKind::Conditional(c) => {
                for b in c.bodies.iter() {
                    let _ = self.destroy(*b);
                }
            }
            _ => {}
        }
    }

    /// Removes one node and every edge to or from it.
    pub(crate) fn destroy_node(&mut self, node: Handle) -> Result<(), CudaError> {
        let g = self.owner.remove(&node).ok_or(CudaError::INVALID_VALUE)?;
        let graph = self.graph_mut(g)?;
        let removed = graph.nodes.remove(&node);
        graph.order.retain(|&n| n != node);
        for n in graph.nodes.values_mut() {
            n.deps.retain(|&d| d != node);
        }
        if let Some(node) = removed {
            node.kind.dropped();
            self.destroy_owned(&node.kind);
        }
        Ok(())
    }

    /// A deep copy of graph `g` (child graphs too) with fresh node handles.
    pub(crate) fn clone_graph(&mut self, g: Handle) -> Result<Handle, CudaError> {
        let source = self.graph(g)?.clone();
        let mut map: HashMap<Handle, Handle> = HashMap::new();
        for &n in &source.order {
            map.insert(n, new_handle());
        }
        let copy = new_handle();
        let mut graph = Graph::default();
        for &n in &source.order {
            let node = &source.nodes[&n];
            let kind = match &node.kind {
                NodeKind::Child(c) => NodeKind::Child(self.clone_graph(*c)?),
                // The copy has bodies of its own, and the same handle: the
                // kernels setting the condition name it.
                NodeKind::Conditional(c) => {
                    let bodies = c
                        .bodies
                        .iter()
                        .map(|b| self.clone_graph(*b))
                        .collect::<Result<Vec<_>, _>>()?;
                    NodeKind::Conditional(super::conditional::ConditionalNode {
                        bodies: bodies.into(),
                        ..c.clone()
                    })
                }
                k => k.clone(),
            };
            kind.held();
            let h = map[&n];
            graph.order.push(h);
            graph.nodes.insert(
                h,
                Node {
                    kind,
                    deps: node.deps.iter().map(|d| map[d]).collect(),
                },
            );
            self.owner.insert(h, copy);
        }
        graph.cloned_from = map;
        graph.user_objects = source.user_objects.clone();
        super::user_objects::retain_all(&graph.user_objects);
        graph.cond_handles = source.cond_handles.clone();
        for cond in &graph.cond_handles {
            super::conditional::retain(*cond);
        }
        self.graphs.insert(copy, graph);
        Ok(copy)
    }
}
