//! Batched and attributed copies (CUDA 12.8 and later):
//! `cudaMemcpyBatchAsync`, `cudaMemcpyWithAttributesAsync` and their
//! driver twins `cuMemcpyBatchAsync{,_v2}`, `cuMemcpyWithAttributesAsync`.
//!
//! Each copy of a batch is queued like `cudaMemcpyAsync` with
//! `cudaMemcpyDefault`: the batch as a whole is in stream order, which
//! every access order allows. A copy whose attribute says its source must
//! be read before the call returns (`cudaMemcpySrcAccessOrderDuringApiCall`,
//! meant for stack buffers) and whose source is page-locked memory, which
//! the queue would read later, waits for the stream before returning.

use std::ffi::c_void;
use std::os::raw::{c_int, c_uint};

use rcud_client::Runtime;
use rcud_proto::CudaError;

use super::graph::{Extent, Memcpy3DParms, PitchedPtr, Pos};
use super::memory::memcpy_async;

/// `cudaMemcpyAttributes` / `CUmemcpyAttributes`.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub(crate) struct MemcpyAttributes {
    src_access_order: c_int,
    src_loc_hint: [c_int; 2],
    dst_loc_hint: [c_int; 2],
    flags: c_uint,
}

const _: () = assert!(std::mem::size_of::<MemcpyAttributes>() == 24);

/// `cudaMemcpySrcAccessOrder` values.
const ORDER_STREAM: c_int = 1;
const ORDER_DURING_API_CALL: c_int = 2;
const ORDER_ANY: c_int = 3;
/// `cudaMemcpyFlagPreferOverlapWithCompute`: a hint.
const FLAG_PREFER_OVERLAP: c_uint = 1;

/// `cudaMemcpyDefault`.
const COPY_DEFAULT: c_int = 4;

fn rt() -> &'static Runtime {
    Runtime::global()
}

impl MemcpyAttributes {
    fn check(&self) -> Result<(), CudaError> {
        let order_ok = matches!(
            self.src_access_order,
            ORDER_STREAM | ORDER_DURING_API_CALL | ORDER_ANY
        );
        if !order_ok || self.flags & !FLAG_PREFER_OVERLAP != 0 {
            return Err(CudaError::INVALID_VALUE);
        }
        Ok(())
    }
}

/// One copy of a batch: destination, source, bytes.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Copy {
    pub(crate) dst: u64,
    pub(crate) src: u64,
    pub(crate) len: usize,
}

/// Queues `copies` on `stream` (never the legacy NULL stream), copy `i`
/// with the attribute whose range holds it: `attrs[k]` applies from
/// `idxs[k]` to the next entry's start (the last to the end).
pub(crate) fn batch(
    copies: &[Copy],
    attrs: &[MemcpyAttributes],
    idxs: &[usize],
    stream: u64,
) -> Result<(), CudaError> {
    let count = copies.len();
    let ranges_ok = !attrs.is_empty()
        && attrs.len() == idxs.len()
        && attrs.len() <= count
        && idxs.first() == Some(&0)
        && idxs.windows(2).all(|w| w[0] < w[1])
        && idxs.last().is_some_and(|&l| l < count);
    if stream == 0 || !ranges_ok {
        return Err(CudaError::INVALID_VALUE);
    }
    for a in attrs {
        a.check()?;
    }
    let mut wait = false;
    for (k, a) in attrs.iter().enumerate() {
        let end = idxs.get(k + 1).copied().unwrap_or(count);
        for c in &copies[idxs[k]..end] {
            memcpy_async(
                c.dst as *mut c_void,
                c.src as *const c_void,
                c.len,
                COPY_DEFAULT,
                stream as *mut c_void,
            )?;
            wait |=
                a.src_access_order == ORDER_DURING_API_CALL && rt().is_pinned(c.src, c.len as u64);
        }
    }
    if wait {
        rt().stream_synchronize(stream)?;
    }
    Ok(())
}

/// Reads `n` elements of an array argument (none for `n` = 0).
///
/// # Safety
/// A non-NULL `p` points to `n` readable elements.
pub(crate) unsafe fn slice<'a, T>(p: *const T, n: usize) -> Result<&'a [T], CudaError> {
    match (p.is_null(), n) {
        (_, 0) => Ok(&[]),
        (true, _) => Err(CudaError::INVALID_VALUE),
        // SAFETY: the caller's contract.
        (false, n) => Ok(unsafe { std::slice::from_raw_parts(p, n) }),
    }
}

/// The copies named by three parallel arrays of `count` entries.
///
/// # Safety
/// Each non-NULL array holds `count` elements.
pub(crate) unsafe fn copies(
    dsts: *const u64,
    srcs: *const u64,
    sizes: *const usize,
    count: usize,
) -> Result<Vec<Copy>, CudaError> {
    if count == 0 {
        return Err(CudaError::INVALID_VALUE);
    }
    // SAFETY: forwarded from the caller.
    let (d, s, n) = unsafe {
        (
            slice(dsts, count)?,
            slice(srcs, count)?,
            slice(sizes, count)?,
        )
    };
    Ok((0..count)
        .map(|i| Copy {
            dst: d[i],
            src: s[i],
            len: n[i],
        })
        .collect())
}

with_ptsz! {
    fn cudaMemcpyBatchAsync / cudaMemcpyBatchAsync_ptsz (dsts: *const u64, srcs: *const u64, sizes: *const usize, count: usize, attrs: *const MemcpyAttributes, attrs_idxs: *const usize, num_attrs: usize, stream: *mut c_void) {
        // SAFETY: the API passes arrays of `count` and `num_attrs` entries.
        let (copies, attrs, idxs) = unsafe {
            (copies(dsts, srcs, sizes, count)?, slice(attrs, num_attrs)?, slice(attrs_idxs, num_attrs)?)
        };
        batch(&copies, attrs, idxs, stream as u64)
    }
}

with_ptsz! {
    fn cudaMemcpyWithAttributesAsync / cudaMemcpyWithAttributesAsync_ptsz (dst: *mut c_void, src: *const c_void, size: usize, attr: *const MemcpyAttributes, stream: *mut c_void) {
        // SAFETY: the API passes one attribute or NULL.
        let attr = unsafe { attr.as_ref() }.ok_or(CudaError::INVALID_VALUE)?;
        let copy = Copy { dst: dst as u64, src: src as u64, len: size };
        batch(&[copy], std::slice::from_ref(attr), &[0], stream as u64)
    }
}

// ---- 3-D batches -------------------------------------------------------------

/// `cudaMemcpy3DOperandType`.
const OPERAND_POINTER: c_int = 1;
const OPERAND_ARRAY: c_int = 2;

/// `cudaMemcpy3DOperand::op::ptr`.
#[repr(C)]
#[derive(Clone, Copy)]
struct PointerOperand {
    ptr: *mut c_void,
    /// Row length in elements; 0 is the copy's width.
    row_length: usize,
    /// Layer height in rows; 0 is the copy's height.
    layer_height: usize,
    _location_hint: [c_int; 2],
}

/// `cudaMemcpy3DOperand::op::array`.
#[repr(C)]
#[derive(Clone, Copy)]
struct ArrayOperand {
    array: *mut c_void,
    offset: [usize; 3],
}

#[repr(C)]
#[derive(Clone, Copy)]
union OperandUnion {
    ptr: PointerOperand,
    array: ArrayOperand,
}

/// `cudaMemcpy3DOperand` / `CUmemcpy3DOperand`.
#[repr(C)]
#[derive(Clone, Copy)]
pub(crate) struct Operand3D {
    kind: c_int,
    op: OperandUnion,
}

/// `cudaMemcpy3DBatchOp` / `CUDA_MEMCPY3D_BATCH_OP`.
#[repr(C)]
#[derive(Clone, Copy)]
pub(crate) struct Memcpy3DBatchOp {
    src: Operand3D,
    dst: Operand3D,
    extent: Extent,
    src_access_order: c_int,
    flags: c_uint,
}

const _: () = assert!(std::mem::size_of::<Memcpy3DBatchOp>() == 112);

/// One end of a 3-D batch copy as a `cudaMemcpy3DParms` end: an array at
/// an element offset, or a pitched pointer (`elem` bytes per element).
fn operand_end(
    operand: &Operand3D,
    extent: &Extent,
    elem: usize,
) -> Result<(*mut c_void, Pos, PitchedPtr), CudaError> {
    match operand.kind {
        OPERAND_POINTER => {
            // SAFETY: the type says the pointer member is the live one.
            let p = unsafe { operand.op.ptr };
            let too_short = |given: usize, need: usize| given != 0 && given < need;
            if p.ptr.is_null()
                || too_short(p.row_length, extent.width)
                || too_short(p.layer_height, extent.height)
            {
                return Err(CudaError::INVALID_VALUE);
            }
            let row = if p.row_length == 0 {
                extent.width
            } else {
                p.row_length
            };
            let rows = if p.layer_height == 0 {
                extent.height
            } else {
                p.layer_height
            };
            let pitch = row.checked_mul(elem).ok_or(CudaError::INVALID_VALUE)?;
            let pitched = PitchedPtr {
                ptr: p.ptr,
                pitch,
                xsize: pitch,
                ysize: rows,
            };
            Ok((std::ptr::null_mut(), Pos::default(), pitched))
        }
        OPERAND_ARRAY => {
            // SAFETY: the type says the array member is the live one.
            let a = unsafe { operand.op.array };
            let [x, y, z] = a.offset;
            let none = PitchedPtr {
                ptr: std::ptr::null_mut(),
                pitch: 0,
                xsize: 0,
                ysize: 0,
            };
            Ok((a.array, Pos::new(x, y, z), none))
        }
        _ => Err(CudaError::INVALID_VALUE),
    }
}

/// The element size of a copy: an array's texel, or a byte between pointers.
fn element_bytes(op: &Memcpy3DBatchOp) -> Result<usize, CudaError> {
    let of = |o: &Operand3D| -> Result<Option<usize>, CudaError> {
        if o.kind != OPERAND_ARRAY {
            return Ok(None);
        }
        // SAFETY: the type says the array member is the live one.
        let handle = unsafe { o.op.array.array } as u64;
        Ok(Some(crate::image::array(handle)?.format.bytes() as usize))
    };
    match (of(&op.src)?, of(&op.dst)?) {
        (Some(a), Some(b)) if a != b => Err(CudaError::INVALID_VALUE),
        (Some(a), _) | (None, Some(a)) => Ok(a),
        (None, None) => Ok(1),
    }
}

/// Queues the 3-D copies of `ops` on `stream` (never the legacy NULL
/// stream), each as `cudaMemcpy3DAsync` with `cudaMemcpyDefault`.
pub(crate) fn batch_3d(ops: &[Memcpy3DBatchOp], flags: u64, stream: u64) -> Result<(), CudaError> {
    if ops.is_empty() || flags != 0 || stream == 0 {
        return Err(CudaError::INVALID_VALUE);
    }
    let mut parms = Vec::with_capacity(ops.len());
    for op in ops {
        let e = &op.extent;
        MemcpyAttributes {
            src_access_order: op.src_access_order,
            src_loc_hint: [0; 2],
            dst_loc_hint: [0; 2],
            flags: op.flags,
        }
        .check()?;
        if e.width == 0 || e.height == 0 || e.depth == 0 {
            return Err(CudaError::INVALID_VALUE);
        }
        let elem = element_bytes(op)?;
        let src = operand_end(&op.src, e, elem)?;
        let dst = operand_end(&op.dst, e, elem)?;
        // Between pointers the extent is in bytes, with an array in its
        // elements, as in cudaMemcpy3DParms; the element size is 1 then.
        parms.push(Memcpy3DParms::new(src, dst, *e, COPY_DEFAULT));
    }
    let mut wait = false;
    for (op, p) in ops.iter().zip(&parms) {
        super::memory3d::memcpy3d(p, Some(stream))?;
        wait |= op.src_access_order == ORDER_DURING_API_CALL && op.src.kind == OPERAND_POINTER;
    }
    if wait {
        rt().stream_synchronize(stream)?;
    }
    Ok(())
}

with_ptsz! {
    fn cudaMemcpy3DBatchAsync / cudaMemcpy3DBatchAsync_ptsz (num_ops: usize, ops: *const Memcpy3DBatchOp, flags: u64, stream: *mut c_void) {
        // SAFETY: the API passes `num_ops` operations.
        let ops = unsafe { slice(ops, num_ops)? };
        batch_3d(ops, flags, stream as u64)
    }
}

with_ptsz! {
    fn cudaMemcpy3DWithAttributesAsync / cudaMemcpy3DWithAttributesAsync_ptsz (op: *const Memcpy3DBatchOp, flags: u64, stream: *mut c_void) {
        // SAFETY: the API passes one operation or NULL.
        let op = unsafe { op.as_ref() }.ok_or(CudaError::INVALID_VALUE)?;
        batch_3d(std::slice::from_ref(op), flags, stream as u64)
    }
}
