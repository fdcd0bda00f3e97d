//! The runtime's managed-memory calls beyond allocation: stream
//! attachment, advice, prefetches and range queries. The work is in
//! [`super::managed`], shared with the driver API.

use std::ffi::c_void;
use std::os::raw::{c_int, c_uint, c_ulonglong};

use rcud_proto::CudaError;

use super::managed;
use super::mempool::MemLocation;
use crate::ffi::{guard, CudaErrorT};

with_ptsz! {
    fn cudaStreamAttachMemAsync / cudaStreamAttachMemAsync_ptsz (stream: *mut c_void, dev_ptr: *mut c_void, length: usize, flags: c_uint) {
        managed::attach(stream as u64, dev_ptr as u64, length as u64, flags)
    }
}

with_ptsz! {
    fn cudaMemPrefetchAsync / cudaMemPrefetchAsync_ptsz (dev_ptr: *const c_void, count: usize, location: MemLocation, flags: c_uint, stream: *mut c_void) {
        rcud_client::Runtime::global().stream_device(stream as u64)?;
        let to = managed::location(location.kind, location.id)?.ok_or(CudaError::INVALID_VALUE)?;
        if flags != 0 {
            return Err(CudaError::INVALID_VALUE);
        }
        managed::prefetch(dev_ptr as u64, count as u64, to)
    }
}

#[no_mangle]
pub extern "C" fn cudaMemAdvise(
    dev_ptr: *const c_void,
    count: usize,
    advice: c_int,
    location: MemLocation,
) -> CudaErrorT {
    guard(|| {
        managed::advise(
            dev_ptr as u64,
            count as u64,
            advice,
            location.kind,
            location.id,
        )
    })
}

#[no_mangle]
pub extern "C" fn cudaMemRangeGetAttribute(
    data: *mut c_void,
    data_size: usize,
    attribute: c_int,
    dev_ptr: *const c_void,
    count: usize,
) -> CudaErrorT {
    guard(|| {
        managed::write_range_attribute(data, data_size, attribute, dev_ptr as u64, count as u64)
    })
}

#[no_mangle]
pub extern "C" fn cudaMemRangeGetAttributes(
    data: *mut *mut c_void,
    data_sizes: *const usize,
    attributes: *const c_int,
    num_attributes: usize,
    dev_ptr: *const c_void,
    count: usize,
) -> CudaErrorT {
    guard(|| {
        managed::write_range_attributes(
            data,
            data_sizes,
            attributes,
            num_attributes,
            dev_ptr as u64,
            count as u64,
        )
    })
}

/// The batched prefetches and discards require concurrent managed access
/// on every device, and rcud's devices report none
/// (`cudaDevAttrConcurrentManagedAccess` = 0), so CUDA refuses them, after
/// checking the batch.
fn batch_without_concurrent_access(
    dptrs: *mut *mut c_void,
    sizes: *mut usize,
    count: usize,
    stream: *mut c_void,
) -> Result<(), CudaError> {
    if count == 0 || dptrs.is_null() || sizes.is_null() || stream.is_null() {
        return Err(CudaError::INVALID_VALUE);
    }
    rcud_client::Runtime::global().stream_device(stream as u64)?;
    Err(CudaError::NOT_SUPPORTED)
}

with_ptsz! {
    fn cudaMemPrefetchBatchAsync / cudaMemPrefetchBatchAsync_ptsz (dptrs: *mut *mut c_void, sizes: *mut usize, count: usize, _locations: *mut MemLocation, _location_indices: *mut usize, _locations_count: usize, _flags: c_ulonglong, stream: *mut c_void) {
        batch_without_concurrent_access(dptrs, sizes, count, stream)
    }
}

with_ptsz! {
    fn cudaMemDiscardBatchAsync / cudaMemDiscardBatchAsync_ptsz (dptrs: *mut *mut c_void, sizes: *mut usize, count: usize, _flags: c_ulonglong, stream: *mut c_void) {
        batch_without_concurrent_access(dptrs, sizes, count, stream)
    }
}

with_ptsz! {
    fn cudaMemDiscardAndPrefetchBatchAsync / cudaMemDiscardAndPrefetchBatchAsync_ptsz (dptrs: *mut *mut c_void, sizes: *mut usize, count: usize, _locations: *mut MemLocation, _location_indices: *mut usize, _locations_count: usize, _flags: c_ulonglong, stream: *mut c_void) {
        batch_without_concurrent_access(dptrs, sizes, count, stream)
    }
}
