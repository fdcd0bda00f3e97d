//! Generic node parameters (`cudaGraphNodeParams`, `CUgraphNodeParams`) of
//! `cudaGraphAddNode`, `cudaGraphNodeGetParams`/`SetParams` and
//! `cudaGraphExecNodeSetParams`. The two APIs' structures share one layout
//! and the members of memset, host, child-graph, event and graph-memory
//! nodes; the kernel and copy members differ, and each API reads and
//! writes those with its own functions ([`ApiParams`]).

use std::ffi::c_void;
use std::os::raw::c_int;

use rcud_proto::CudaError;

use super::model::{graphs, node_type, Handle, NodeKind};
use crate::cudart::graph as rg;

/// `cudaGraphNodeParams`: a node type and a 232-byte union.
#[repr(C)]
pub(crate) struct GraphNodeParams {
    kind: c_int,
    reserved0: [c_int; 3],
    union: [u64; 29],
    reserved2: i64,
}

const _: () = assert!(std::mem::size_of::<GraphNodeParams>() == 256);

/// Where a copy node's copy parameters start in the union, in 8-byte
/// words: after its flags, a reserved word and a context.
const COPY_PARAMS_WORD: usize = 2;

/// `cudaGraphChildGraphOwnershipMove`; a query reports `Invalid` (-1).
const OWNERSHIP_CLONE: u64 = 0;
const OWNERSHIP_MOVE: u64 = 1;
const OWNERSHIP_INVALID: c_int = -1;

/// Node types graphs here do not support: external semaphores, batch
/// memory operations, batched copies.
const UNSUPPORTED_TYPES: [c_int; 4] = [8, 9, 12, 14];

/// Words of a conditional node's members: the handle, the type and size
/// (two 32-bit fields), the `phGraph_out` pointer.
const COND_HANDLE_WORD: usize = 0;
const COND_TYPE_SIZE_WORD: usize = 1;
const COND_BODIES_WORD: usize = 2;

/// An API's readers and writers of the kernel and copy members (pointers
/// to the member).
pub(crate) struct ApiParams {
    pub(crate) kernel: fn(*const c_void) -> Result<NodeKind, CudaError>,
    pub(crate) memcpy: fn(*const c_void) -> Result<NodeKind, CudaError>,
    pub(crate) kernel_out: fn(Handle, *mut c_void) -> Result<(), CudaError>,
    pub(crate) memcpy_out: fn(Handle, *mut c_void) -> Result<(), CudaError>,
    /// Whether the members name the node's context (`CUcontext`), which
    /// NVIDIA's runtime turns into its execution context: the driver's do.
    pub(crate) contexts: bool,
}

/// The word of the context in each member of the driver's union.
fn context_word(kind: &NodeKind) -> Option<usize> {
    match kind {
        NodeKind::Kernel(_) => Some(8),
        NodeKind::Memcpy(_) | NodeKind::EventRecord(_) => Some(1),
        NodeKind::Memset(_) => Some(5),
        NodeKind::Host(_) | NodeKind::Conditional(_) => Some(3),
        _ => None,
    }
}

fn params<'a>(p: *mut GraphNodeParams) -> Result<&'a mut GraphNodeParams, CudaError> {
    // SAFETY: the API passes a valid, writable structure or NULL.
    unsafe { p.as_mut() }.ok_or(CudaError::INVALID_VALUE)
}

/// The node `p` describes. A memory alloc node's address, and a conditional
/// node's body graphs, are written back into `p`, as CUDA does.
pub(crate) fn kind_of(p: *mut GraphNodeParams, api: &ApiParams) -> Result<NodeKind, CudaError> {
    let p = params(p)?;
    let u = p.union.as_mut_ptr();
    let first = p.union[0];
    match p.kind {
        node_type::KERNEL => (api.kernel)(u.cast()),
        node_type::MEMCPY => {
            // `flags` must be 0.
            if first as u32 != 0 {
                return Err(CudaError::INVALID_VALUE);
            }
            (api.memcpy)(p.union[COPY_PARAMS_WORD..].as_ptr().cast())
        }
        node_type::MEMSET => rg::memset_kind(u.cast()),
        node_type::HOST => rg::host_kind(u.cast()),
        node_type::GRAPH => {
            let child = first as Handle;
            let mut all = graphs().lock();
            match p.union[1] as u32 as u64 {
                // The node owns a copy of the child graph.
                OWNERSHIP_CLONE => Ok(NodeKind::Child(all.clone_graph(child)?)),
                // The node takes the graph itself.
                OWNERSHIP_MOVE => {
                    all.graph(child)?;
                    Ok(NodeKind::Child(child))
                }
                _ => Err(CudaError::INVALID_VALUE),
            }
        }
        node_type::EMPTY => Ok(NodeKind::Empty),
        node_type::WAIT_EVENT => rg::event_kind(first as *mut c_void, false),
        node_type::EVENT_RECORD => rg::event_kind(first as *mut c_void, true),
        node_type::MEM_ALLOC => rg::mem_alloc_kind(u.cast()),
        node_type::MEM_FREE => rg::mem_free_kind(first),
        node_type::CONDITIONAL => {
            let type_size = p.union[COND_TYPE_SIZE_WORD];
            let node = super::conditional::new_node(
                p.union[COND_HANDLE_WORD],
                type_size as u32,
                (type_size >> 32) as u32,
            )?;
            p.union[COND_BODIES_WORD] = node.bodies.as_ptr() as u64;
            Ok(NodeKind::Conditional(node))
        }
        t if UNSUPPORTED_TYPES.contains(&t) => Err(CudaError::NOT_SUPPORTED),
        _ => Err(CudaError::INVALID_VALUE),
    }
}

/// Writes node `node`'s type and parameters to `p`.
pub(crate) fn write_params(
    node: Handle,
    p: *mut GraphNodeParams,
    api: &ApiParams,
) -> Result<(), CudaError> {
    let kind = super::node_kind(node)?;
    let p = params(p)?;
    p.kind = kind.type_code();
    p.reserved0 = [0; 3];
    p.union = [0; 29];
    p.reserved2 = 0;
    let context = match (api.contexts, context_word(&kind)) {
        (true, Some(word)) => {
            let rt = rcud_client::Runtime::global();
            let ctx = match &kind {
                NodeKind::Kernel(k) => rt.primary_context(k.device as c_int)?,
                _ => rt.current_context().ok_or(CudaError::INVALID_CONTEXT)?,
            };
            Some((word, ctx))
        }
        _ => None,
    };
    let u = p.union.as_mut_ptr();
    let n = node as *mut c_void;
    match kind {
        NodeKind::Kernel(_) => (api.kernel_out)(node, u.cast()),
        NodeKind::Memcpy(_) => {
            (api.memcpy_out)(node, p.union[COPY_PARAMS_WORD..].as_mut_ptr().cast())
        }
        NodeKind::Memset(_) => rg::memset_params_out(n, u.cast()),
        NodeKind::Host(_) => rg::host_params_out(n, u.cast()),
        NodeKind::Child(c) => {
            p.union[0] = c;
            p.union[1] = u64::from(OWNERSHIP_INVALID as u32);
            Ok(())
        }
        NodeKind::Empty => Ok(()),
        NodeKind::EventRecord(e) | NodeKind::EventWait(e) => {
            p.union[0] = e;
            Ok(())
        }
        NodeKind::MemAlloc { .. } => rg::mem_alloc_params_out(n, u.cast()),
        NodeKind::MemFree(ptr) => {
            p.union[0] = ptr;
            Ok(())
        }
        // CUDA shows the library's own kernels, which rcud does not have.
        NodeKind::Library(_) => Err(CudaError::NOT_SUPPORTED),
        NodeKind::Conditional(c) => {
            p.union[COND_HANDLE_WORD] = c.handle;
            p.union[COND_TYPE_SIZE_WORD] = u64::from(c.kind) | (c.bodies.len() as u64) << 32;
            p.union[COND_BODIES_WORD] = c.bodies.as_ptr() as u64;
            Ok(())
        }
    }?;
    if let Some((word, ctx)) = context {
        p.union[word] = ctx;
    }
    Ok(())
}
