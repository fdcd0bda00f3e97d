//! Virtual memory management (`cuMemCreate`, `cuMemAddressReserve`,
//! `cuMemMap`, `cuMemSetAccess`, shareable handles) and stream memory
//! operations (`cuStreamWriteValue*`, `cuStreamWaitValue*`,
//! `cuStreamBatchMemOp`).
//!
//! The server keeps the memory: physical allocations, reservations and
//! mappings (see `rcud_emu::memory`). This file keeps what the driver
//! answers without asking it: the properties and reference counts of
//! handles, which handle is mapped where, and the access granted.
//!
//! A shareable handle of type `CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR` is
//! a real file descriptor of the exporting process: a memory file holding the
//! server's 64-byte token. It travels like NVIDIA's (`SCM_RIGHTS`, `fork`,
//! `pidfd_getfd`), and the importing process reads the token from it; both
//! processes must use the same server, as for CUDA IPC.

use std::collections::{BTreeMap, HashMap};
use std::ffi::c_void;
use std::os::fd::{FromRawFd, IntoRawFd};
use std::os::raw::{c_int, c_uint};

use parking_lot::Mutex;

use super::{context_device, device, initialized, out, rt, DriverError, DriverResult};
use crate::graph::capture;

/// Granularity of mappings: the emulated device's (2 MiB, as GPUs).
const GRANULARITY: u64 = 2 << 20;

/// `CUmemAllocationType`, `CUmemLocationType`, `CUmemAllocationHandleType`.
const ALLOCATION_TYPE_PINNED: c_uint = 1;
const LOCATION_TYPE_DEVICE: c_uint = 1;
const HANDLE_TYPE_POSIX_FILE_DESCRIPTOR: c_uint = 1;

/// `CUmemAccess_flags`.
const PROT_NONE: c_uint = 0;

/// `CUmemLocation`.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MemLocation {
    kind: c_uint,
    id: c_int,
}

/// `CUmemAllocationProp`.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct AllocationProp {
    kind: c_uint,
    requested_handle_types: c_uint,
    location: MemLocation,
    win32_handle_meta_data: *mut c_void,
    /// `allocFlags`: compressionType, gpuDirectRDMACapable, usage, reserved.
    alloc_flags: [u8; 8],
}

/// `CUmemAccessDesc`.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct AccessDesc {
    location: MemLocation,
    flags: c_uint,
}

/// A physical allocation as this process knows it.
#[derive(Debug)]
struct Handle {
    device: usize,
    /// The server's handle on `device`'s connection.
    server: u64,
    prop: AllocationProp,
    /// `cuMemCreate`/`cuMemImportFromShareableHandle` and each
    /// `cuMemRetainAllocationHandle` count one; `cuMemRelease` takes one.
    refs: u32,
    /// Mappings of it: the server's handle is released when both are 0.
    mappings: u32,
}

#[derive(Debug)]
struct Mapping {
    size: u64,
    handle: u64,
    access: c_uint,
}

#[derive(Debug, Default)]
struct Table {
    handles: HashMap<u64, Handle>,
    next_handle: u64,
    /// Reservations: start -> (size, device).
    reserved: BTreeMap<u64, (u64, usize)>,
    mappings: BTreeMap<u64, Mapping>,
}

// SAFETY: the only pointer, `win32HandleMetaData`, is kept to be handed back
// by `cuMemGetAllocationPropertiesFromHandle`, never dereferenced.
unsafe impl Send for Table {}

static TABLE: Mutex<Option<Table>> = Mutex::new(None);

fn with_table<R>(f: impl FnOnce(&mut Table) -> R) -> R {
    f(TABLE.lock().get_or_insert_with(Table::default))
}

/// Reads a C struct argument, or `CUDA_ERROR_INVALID_VALUE` for NULL.
fn read<T: Copy>(p: *const T) -> Result<T, DriverError> {
    if p.is_null() {
        return Err(DriverError::INVALID_VALUE);
    }
    // SAFETY: the API contract makes `p` point to a valid `T` for the call.
    Ok(unsafe { p.read_unaligned() })
}

/// The device of an allocation property: pinned device memory of an
/// existing device, with a handle type rcud can export.
fn prop_device(prop: &AllocationProp) -> Result<usize, DriverError> {
    if prop.kind != ALLOCATION_TYPE_PINNED
        || prop.location.kind != LOCATION_TYPE_DEVICE
        || prop.requested_handle_types & !HANDLE_TYPE_POSIX_FILE_DESCRIPTOR != 0
    {
        return Err(DriverError::INVALID_VALUE);
    }
    Ok(device(prop.location.id)? as usize)
}

driver_fn! { cuMemGetAllocationGranularity (granularity: *mut usize, prop: *const AllocationProp, option: c_uint) {
    initialized()?;
    let prop = read(prop)?;
    prop_device(&prop)?;
    if option > 1 {
        return Err(DriverError::INVALID_VALUE);
    }
    out(granularity, GRANULARITY as usize)
} }

driver_fn! { cuMemCreate (handle: *mut u64, size: usize, prop: *const AllocationProp, flags: u64) {
    initialized()?;
    let prop = read(prop)?;
    let d = prop_device(&prop)?;
    if handle.is_null() || flags != 0 || size == 0 || !(size as u64).is_multiple_of(GRANULARITY) {
        return Err(DriverError::INVALID_VALUE);
    }
    let server = rt().vmm_create(d, size as u64)?;
    let id = add_handle(d, server, prop);
    out(handle, id)
} }

fn add_handle(device: usize, server: u64, prop: AllocationProp) -> u64 {
    with_table(|t| {
        t.next_handle += 1;
        let id = t.next_handle;
        t.handles.insert(
            id,
            Handle {
                device,
                server,
                prop,
                refs: 1,
                mappings: 0,
            },
        );
        id
    })
}

/// Releases the server's allocation of `id` once nothing holds it.
fn release_if_unused(id: u64) -> DriverResult {
    let gone = with_table(|t| match t.handles.get(&id) {
        Some(h) if h.refs == 0 && h.mappings == 0 => t.handles.remove(&id),
        _ => None,
    });
    if let Some(h) = gone {
        rt().vmm_release(h.device, h.server)?;
    }
    Ok(())
}

driver_fn! { cuMemRelease (handle: u64) {
    initialized()?;
    with_table(|t| match t.handles.get_mut(&handle) {
        Some(h) if h.refs > 0 => {
            h.refs -= 1;
            Ok(())
        }
        _ => Err(DriverError::INVALID_VALUE),
    })?;
    release_if_unused(handle)
} }

driver_fn! { cuMemGetAllocationPropertiesFromHandle (prop: *mut AllocationProp, handle: u64) {
    initialized()?;
    let p = with_table(|t| t.handles.get(&handle).filter(|h| h.refs > 0).map(|h| h.prop));
    out(prop, p.ok_or(DriverError::INVALID_VALUE)?)
} }

driver_fn! { cuMemRetainAllocationHandle (handle: *mut u64, addr: *mut c_void) {
    initialized()?;
    let addr = addr as u64;
    let id = with_table(|t| {
        let (&start, m) = t.mappings.range(..=addr).next_back()?;
        if addr >= start + m.size {
            return None;
        }
        let h = t.handles.get_mut(&m.handle)?;
        h.refs += 1;
        Some(m.handle)
    });
    out(handle, id.ok_or(DriverError::INVALID_VALUE)?)
} }

driver_fn! { cuMemAddressReserve (ptr: *mut u64, size: usize, alignment: usize, _addr: u64, flags: u64) {
    let d = context_device()?;
    // `addr` is a hint CUDA may ignore; rcud places reservations itself.
    if ptr.is_null() || flags != 0 {
        return Err(DriverError::INVALID_VALUE);
    }
    let start = rt().vmm_reserve(d, size as u64, alignment as u64)?;
    with_table(|t| t.reserved.insert(start, (size as u64, d)));
    out(ptr, start)
} }

driver_fn! { cuMemAddressFree (ptr: u64, size: usize) {
    initialized()?;
    let d = with_table(|t| t.reserved.get(&ptr).filter(|r| r.0 == size as u64).map(|r| r.1));
    let d = d.ok_or(DriverError::INVALID_VALUE)?;
    rt().vmm_free_address(d, ptr, size as u64)?;
    with_table(|t| t.reserved.remove(&ptr));
    Ok(())
} }

/// The device whose reservation holds `[ptr, ptr + size)`.
fn reservation_device(t: &Table, ptr: u64, size: u64) -> Option<usize> {
    let (&start, &(len, d)) = t.reserved.range(..=ptr).next_back()?;
    (ptr.checked_add(size)? <= start + len).then_some(d)
}

driver_fn! { cuMemMap (ptr: u64, size: usize, offset: usize, handle: u64, flags: u64) {
    initialized()?;
    if flags != 0 {
        return Err(DriverError::INVALID_VALUE);
    }
    let (d, server) = with_table(|t| {
        let h = t.handles.get(&handle).filter(|h| h.refs > 0)?;
        let d = reservation_device(t, ptr, size as u64)?;
        Some((d, h.device, h.server))
    })
    .map(|(d, owner, server)| {
        // Each device's memory lives on its own connection (and possibly
        // server): a reservation of one cannot map another's allocation.
        if d == owner { Ok((d, server)) } else { Err(DriverError::NOT_SUPPORTED) }
    })
    .ok_or(DriverError::INVALID_VALUE)??;
    rt().vmm_map(d, ptr, size as u64, offset as u64, server)?;
    with_table(|t| {
        t.mappings.insert(
            ptr,
            Mapping {
                size: size as u64,
                handle,
                access: PROT_NONE,
            },
        );
        if let Some(h) = t.handles.get_mut(&handle) {
            h.mappings += 1;
        }
    });
    Ok(())
} }

driver_fn! { cuMemUnmap (ptr: u64, size: usize) {
    initialized()?;
    let d = with_table(|t| reservation_device(t, ptr, size as u64)).ok_or(DriverError::INVALID_VALUE)?;
    rt().vmm_unmap(d, ptr, size as u64)?;
    let end = ptr.saturating_add(size as u64);
    let unmapped: Vec<u64> = with_table(|t| {
        let starts: Vec<u64> = t.mappings.range(ptr..end).map(|(&s, _)| s).collect();
        let mut handles = Vec::new();
        for start in starts {
            if let Some(m) = t.mappings.remove(&start) {
                if let Some(h) = t.handles.get_mut(&m.handle) {
                    h.mappings = h.mappings.saturating_sub(1);
                }
                handles.push(m.handle);
            }
        }
        handles
    });
    for handle in unmapped {
        release_if_unused(handle)?;
    }
    Ok(())
} }

driver_fn! { cuMemSetAccess (ptr: u64, size: usize, desc: *const AccessDesc, count: usize) {
    initialized()?;
    if desc.is_null() || count == 0 {
        return Err(DriverError::INVALID_VALUE);
    }
    let d = with_table(|t| reservation_device(t, ptr, size as u64)).ok_or(DriverError::INVALID_VALUE)?;
    // SAFETY: the caller passes `count` descriptors at `desc`.
    let descs = unsafe { std::slice::from_raw_parts(desc, count) };
    for desc in descs {
        if desc.location.kind != LOCATION_TYPE_DEVICE {
            return Err(DriverError::INVALID_VALUE);
        }
        let target = device(desc.location.id)? as usize;
        if target != d {
            // Peer access to another device's mapping: the memory lives in
            // that device's connection, which another device cannot reach.
            return Err(DriverError::NOT_SUPPORTED);
        }
        rt().vmm_set_access(d, ptr, size as u64, desc.flags)?;
        let end = ptr.saturating_add(size as u64);
        with_table(|t| {
            for (_, m) in t.mappings.range_mut(ptr..end) {
                m.access = desc.flags;
            }
        });
    }
    Ok(())
} }

driver_fn! { cuMemGetAccess (flags: *mut u64, location: *const MemLocation, ptr: u64) {
    initialized()?;
    let location = read(location)?;
    if location.kind != LOCATION_TYPE_DEVICE {
        return Err(DriverError::INVALID_VALUE);
    }
    let target = device(location.id)? as usize;
    let access = with_table(|t| {
        let (&start, m) = t.mappings.range(..=ptr).next_back()?;
        let owner = t.handles.get(&m.handle)?.device;
        // Other devices have no access to this device's mappings.
        (ptr < start + m.size).then_some(if owner == target { m.access } else { PROT_NONE })
    });
    out(flags, u64::from(access.ok_or(DriverError::INVALID_VALUE)?))
} }

driver_fn! { cuMemExportToShareableHandle (shareable: *mut c_void, handle: u64, handle_type: c_uint, flags: u64) {
    initialized()?;
    if shareable.is_null() || flags != 0 {
        return Err(DriverError::INVALID_VALUE);
    }
    let (d, server, allowed) = with_table(|t| {
        t.handles
            .get(&handle)
            .filter(|h| h.refs > 0)
            .map(|h| (h.device, h.server, h.prop.requested_handle_types))
    })
    .ok_or(DriverError::INVALID_VALUE)?;
    // Only the types asked for at cuMemCreate can be exported.
    if handle_type != HANDLE_TYPE_POSIX_FILE_DESCRIPTOR || allowed & handle_type == 0 {
        return Err(DriverError::INVALID_VALUE);
    }
    let token = rt().vmm_export(d, server)?;
    let fd = token_file(&token).map_err(|e| {
        tracing::warn!("cuMemExportToShareableHandle: cannot make a file descriptor: {e}");
        DriverError(304)
    })?;
    out(shareable as *mut c_int, fd.into_raw_fd())
} }

/// A memory file holding `token`: the file descriptor handed out.
fn token_file(token: &[u8; 64]) -> std::io::Result<std::fs::File> {
    use std::io::Write;
    // SAFETY: memfd_create with a NUL-terminated name and valid flags.
    let fd = unsafe { libc::memfd_create(c"rcud-mem-handle".as_ptr(), libc::MFD_CLOEXEC) };
    if fd < 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: `fd` is a new descriptor that nothing else owns.
    let mut file = unsafe { std::fs::File::from_raw_fd(fd) };
    file.write_all(token)?;
    Ok(file)
}

/// The token in a file descriptor of [`token_file`] (of this process or
/// another one), or `None` when `fd` is not one.
fn read_token(fd: c_int) -> Option<[u8; 64]> {
    let mut token = [0u8; 64];
    // SAFETY: pread into a buffer of 64 bytes; a bad `fd` makes it fail.
    let n = unsafe { libc::pread(fd, token.as_mut_ptr().cast(), token.len(), 0) };
    (n == 64).then_some(token)
}

driver_fn! { cuMemImportFromShareableHandle (handle: *mut u64, os_handle: *mut c_void, handle_type: c_uint) {
    let d = context_device()?;
    if handle.is_null() || handle_type != HANDLE_TYPE_POSIX_FILE_DESCRIPTOR {
        return Err(DriverError::INVALID_VALUE);
    }
    // A POSIX file descriptor travels in the pointer's value.
    let fd = os_handle as usize as c_int;
    let token = read_token(fd).ok_or(DriverError::INVALID_VALUE)?;
    let (server, _size) = rt().vmm_import(d, &token)?;
    let prop = AllocationProp {
        kind: ALLOCATION_TYPE_PINNED,
        requested_handle_types: HANDLE_TYPE_POSIX_FILE_DESCRIPTOR,
        location: MemLocation {
            kind: LOCATION_TYPE_DEVICE,
            id: d as c_int,
        },
        win32_handle_meta_data: std::ptr::null_mut(),
        alloc_flags: [0; 8],
    };
    out(handle, add_handle(d, server, prop))
} }

// ---- stream memory operations --------------------------------------------------

type Stream = *mut c_void;

/// `CU_STREAM_WRITE_VALUE_NO_MEMORY_BARRIER`; `CU_STREAM_WAIT_VALUE_FLUSH`.
const WRITE_NO_MEMORY_BARRIER: c_uint = 1;
const WAIT_FLUSH: c_uint = 1 << 30;

/// Stream memory operations in a capture would be graph nodes of their
/// own, which rcud's graphs do not have.
fn refuse_capture(stream: Stream) -> DriverResult {
    if capture::is_capturing(stream as u64) {
        return Err(DriverError::NOT_SUPPORTED);
    }
    Ok(())
}

fn write_value(stream: Stream, addr: u64, value: u64, size: u32, flags: c_uint) -> DriverResult {
    initialized()?;
    // Without the barrier flag the write is ordered as well: stronger, allowed.
    if flags & !WRITE_NO_MEMORY_BARRIER != 0 || !addr.is_multiple_of(u64::from(size)) {
        return Err(DriverError::INVALID_VALUE);
    }
    refuse_capture(stream)?;
    Ok(rt().stream_write_value(stream as u64, addr, value, size)?)
}

fn wait_value(stream: Stream, addr: u64, value: u64, size: u32, flags: c_uint) -> DriverResult {
    initialized()?;
    if (flags & !WAIT_FLUSH) > 3 || !addr.is_multiple_of(u64::from(size)) {
        return Err(DriverError::INVALID_VALUE);
    }
    refuse_capture(stream)?;
    Ok(rt().stream_wait_value(stream as u64, addr, value, size, flags)?)
}

driver_fn! { [cuStreamWriteValue32_v2, cuStreamWriteValue32, cuStreamWriteValue32_ptsz, cuStreamWriteValue32_v2_ptsz] (stream: Stream, addr: u64, value: u32, flags: c_uint) {
    write_value(stream, addr, u64::from(value), 4, flags)
} }

driver_fn! { [cuStreamWriteValue64_v2, cuStreamWriteValue64, cuStreamWriteValue64_ptsz, cuStreamWriteValue64_v2_ptsz] (stream: Stream, addr: u64, value: u64, flags: c_uint) {
    write_value(stream, addr, value, 8, flags)
} }

driver_fn! { [cuStreamWaitValue32_v2, cuStreamWaitValue32, cuStreamWaitValue32_ptsz, cuStreamWaitValue32_v2_ptsz] (stream: Stream, addr: u64, value: u32, flags: c_uint) {
    wait_value(stream, addr, u64::from(value), 4, flags)
} }

driver_fn! { [cuStreamWaitValue64_v2, cuStreamWaitValue64, cuStreamWaitValue64_ptsz, cuStreamWaitValue64_v2_ptsz] (stream: Stream, addr: u64, value: u64, flags: c_uint) {
    wait_value(stream, addr, value, 8, flags)
} }

/// `CUstreamBatchMemOpType`.
const OP_WAIT_VALUE_32: c_uint = 1;
const OP_WRITE_VALUE_32: c_uint = 2;
const OP_WAIT_VALUE_64: c_uint = 4;
const OP_WRITE_VALUE_64: c_uint = 5;
const OP_BARRIER: c_uint = 6;
const OP_FLUSH_REMOTE_WRITES: c_uint = 3;
const OP_ATOMIC_REDUCTION: c_uint = 8;

/// `CUstreamBatchMemOpParams`: a union of 48 bytes whose members begin
/// with the operation; the wait and write members are
/// `{ operation, address, value (or value64), flags, alias }`.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct BatchMemOpParams {
    operation: c_uint,
    _pad: c_uint,
    address: u64,
    value: u64,
    flags: c_uint,
    _pad2: c_uint,
    alias: u64,
    _rest: u64,
}

driver_fn! { [cuStreamBatchMemOp_v2, cuStreamBatchMemOp, cuStreamBatchMemOp_ptsz, cuStreamBatchMemOp_v2_ptsz] (stream: Stream, count: c_uint, ops: *const BatchMemOpParams, flags: c_uint) {
    initialized()?;
    if flags != 0 || count == 0 || ops.is_null() || count > 256 {
        return Err(DriverError::INVALID_VALUE);
    }
    // SAFETY: the caller passes `count` operations at `ops`.
    let ops = unsafe { std::slice::from_raw_parts(ops, count as usize) };
    // Checked before any is queued, so a bad batch queues nothing.
    for op in ops {
        match op.operation {
            OP_ATOMIC_REDUCTION => {
                tracing::warn!("cuStreamBatchMemOp: CU_STREAM_MEM_OP_ATOMIC_REDUCTION is not supported by rcud");
                return Err(DriverError::NOT_SUPPORTED);
            }
            OP_WAIT_VALUE_32 | OP_WAIT_VALUE_64 | OP_WRITE_VALUE_32 | OP_WRITE_VALUE_64
            | OP_BARRIER | OP_FLUSH_REMOTE_WRITES => {}
            _ => return Err(DriverError::INVALID_VALUE),
        }
    }
    for op in ops {
        match op.operation {
            OP_WAIT_VALUE_32 => wait_value(stream, op.address, op.value & 0xffff_ffff, 4, op.flags)?,
            OP_WAIT_VALUE_64 => wait_value(stream, op.address, op.value, 8, op.flags)?,
            OP_WRITE_VALUE_32 => write_value(stream, op.address, op.value & 0xffff_ffff, 4, op.flags)?,
            OP_WRITE_VALUE_64 => write_value(stream, op.address, op.value, 8, op.flags)?,
            // The server runs each operation to completion in order: its
            // writes are visible to the next one already.
            OP_BARRIER | OP_FLUSH_REMOTE_WRITES => {
                initialized()?;
                rt().stream_device(stream as u64)?;
            }
            _ => return Err(DriverError::INVALID_VALUE),
        }
    }
    Ok(())
} }
