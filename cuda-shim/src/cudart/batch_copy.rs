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
