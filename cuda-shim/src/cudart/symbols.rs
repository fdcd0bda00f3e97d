//! `__device__` and `__constant__` variables through the symbol API. A symbol
//! is the address of the variable's host shadow; copies go through the
//! ordinary memcpy path once its device address is known. Copies on a stream
//! complete before returning, which CUDA allows for asynchronous calls.

use std::ffi::c_void;
use std::os::raw::c_int;

use rcud_client::Runtime;
use rcud_proto::CudaError;

use super::memory::memcpy;
use crate::ffi::{guard, write_out, CudaErrorT};

/// `cudaMemcpyHostToDevice`, `cudaMemcpyDeviceToHost`, `cudaMemcpyDeviceToDevice`, `cudaMemcpyDefault`.
const H2D: c_int = 1;
const D2H: c_int = 2;
const D2D: c_int = 3;
const DEFAULT: c_int = 4;

/// The device address of `offset` bytes into `symbol`, checked to hold `count` bytes.
fn symbol_range(symbol: *const c_void, count: usize, offset: usize) -> Result<u64, CudaError> {
    let (_, ptr, size) = Runtime::global().symbol(symbol as u64)?;
    let end = (offset as u64)
        .checked_add(count as u64)
        .ok_or(CudaError::INVALID_VALUE)?;
    if end > size {
        return Err(CudaError::INVALID_VALUE);
    }
    Ok(ptr + offset as u64)
}

fn to_symbol(
    symbol: *const c_void,
    src: *const c_void,
    count: usize,
    offset: usize,
    kind: c_int,
) -> Result<(), CudaError> {
    if !matches!(kind, H2D | D2D | DEFAULT) {
        return Err(CudaError::INVALID_MEMCPY_DIRECTION);
    }
    let dst = symbol_range(symbol, count, offset)?;
    memcpy(dst as *mut c_void, src, count, kind)
}

fn from_symbol(
    dst: *mut c_void,
    symbol: *const c_void,
    count: usize,
    offset: usize,
    kind: c_int,
) -> Result<(), CudaError> {
    if !matches!(kind, D2H | D2D | DEFAULT) {
        return Err(CudaError::INVALID_MEMCPY_DIRECTION);
    }
    let src = symbol_range(symbol, count, offset)?;
    memcpy(dst, src as *const c_void, count, kind)
}

with_ptsz! {
    fn cudaMemcpyToSymbol / cudaMemcpyToSymbol_ptds (symbol: *const c_void, src: *const c_void, count: usize, offset: usize, kind: c_int) {
        to_symbol(symbol, src, count, offset, kind)
    }
}

with_ptsz! {
    fn cudaMemcpyToSymbolAsync / cudaMemcpyToSymbolAsync_ptsz (symbol: *const c_void, src: *const c_void, count: usize, offset: usize, kind: c_int, _stream: *mut c_void) {
        to_symbol(symbol, src, count, offset, kind)
    }
}

with_ptsz! {
    fn cudaMemcpyFromSymbol / cudaMemcpyFromSymbol_ptds (dst: *mut c_void, symbol: *const c_void, count: usize, offset: usize, kind: c_int) {
        from_symbol(dst, symbol, count, offset, kind)
    }
}

with_ptsz! {
    fn cudaMemcpyFromSymbolAsync / cudaMemcpyFromSymbolAsync_ptsz (dst: *mut c_void, symbol: *const c_void, count: usize, offset: usize, kind: c_int, _stream: *mut c_void) {
        from_symbol(dst, symbol, count, offset, kind)
    }
}

#[no_mangle]
pub extern "C" fn cudaGetSymbolAddress(
    dev_ptr: *mut *mut c_void,
    symbol: *const c_void,
) -> CudaErrorT {
    guard(|| {
        let (_, ptr, _) = Runtime::global().symbol(symbol as u64)?;
        write_out(dev_ptr, ptr as *mut c_void)
    })
}

#[no_mangle]
pub extern "C" fn cudaGetSymbolSize(size: *mut usize, symbol: *const c_void) -> CudaErrorT {
    guard(|| {
        let (_, _, bytes) = Runtime::global().symbol(symbol as u64)?;
        write_out(size, bytes as usize)
    })
}
