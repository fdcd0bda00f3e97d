//! One client's device memory on an emulated GPU.

use std::collections::{BTreeMap, BTreeSet};
use std::marker::PhantomData;
use std::ops::Bound;
use std::sync::atomic::{AtomicU16, AtomicU32, AtomicU64, AtomicU8};
use std::sync::Arc;

use rcud_proto::CudaError;

use crate::buffer::{Buffer, ALIGN, MAP_THRESHOLD, PAGE};
use crate::EmuGpu;

/// Device addresses of address window `w` start at `BASE + (w mod WINDOWS) *
/// SPAN`: a client gives each of its GPUs its own window (its device
/// ordinal), so its pointers never collide, even across servers (unified
/// addressing). The windows lie between 16 TiB and 80 TiB, below where Linux
/// places executables (0x5555…) and mappings (0x7f…), so device pointers do
/// not look like the client's own host pointers either.
const BASE: u64 = 0x1000_0000_0000;
const SPAN: u64 = 1 << 40;
const WINDOWS: u64 = 64;
/// Unmapped gap after every allocation: an access just past the end of one
/// allocation never lands in the next one.
const GUARD: u64 = 4096;

/// Host bytes charged for the bookkeeping of each heap-backed allocation (its
/// entry in the table, the heap block's header and alignment slack), so that
/// many tiny allocations cannot hold far more host memory than they are
/// charged for.
pub const ALLOC_OVERHEAD: u64 = 256;

/// What an allocation of `size` bytes costs the client's and the GPU's
/// budgets: below 128 KiB (heap blocks) its size rounded up to 256 bytes plus
/// [`ALLOC_OVERHEAD`]; from 128 KiB (mapped pages) its size rounded up to
/// 4 KiB pages. `None` when that does not fit in a `u64`.
pub fn allocation_charge(size: u64) -> Option<u64> {
    if size >= MAP_THRESHOLD as u64 {
        size.checked_next_multiple_of(PAGE)
    } else {
        size.max(1)
            .checked_next_multiple_of(ALIGN as u64)?
            .checked_add(ALLOC_OVERHEAD)
    }
}

/// The allocations one client holds on one emulated GPU. Dropping it frees
/// them all and returns their bytes to the GPU's budget.
#[derive(Debug)]
pub struct DeviceMemory {
    gpu: Arc<EmuGpu>,
    allocs: BTreeMap<u64, Buffer>,
    next: u64,
    /// End of this table's address window.
    end: u64,
    /// Bytes charged for the allocations (see [`allocation_charge`]) and by
    /// [`DeviceMemory::charge_extra`].
    held: u64,
    /// The part of `held` charged by [`DeviceMemory::charge_extra`].
    extra: u64,
    /// The device heap of kernels' `malloc`, made at the first launch of a
    /// kernel that calls it; it lives as long as the context, as in CUDA.
    heap: Option<Heap>,
    /// Allocations the runtime made for itself (module variables, the
    /// device heap): `cudaFree` refuses them, as CUDA refuses to free what
    /// `cudaMalloc` did not return.
    internal: BTreeSet<u64>,
    /// The grid workspace of cooperative launches (cooperative groups'
    /// `grid.sync()` barrier word), made at the first one.
    grid_workspace: Option<u64>,
    /// Allocations of other clients opened here through CUDA IPC: not
    /// charged (their owner pays), closed rather than freed.
    imported: BTreeSet<u64>,
    /// Virtual memory management: physical allocations, reserved address
    /// ranges and the mappings between them.
    vmm: Vmm,
}

/// Granularity of virtual memory management (`cuMemGetAllocationGranularity`,
/// minimum and recommended): sizes, addresses and alignments of physical
/// allocations, reservations and mappings are multiples of it, as on GPUs.
pub const VMM_GRANULARITY: u64 = 2 << 20;

/// A physical allocation of `cuMemCreate` (or one imported from another
/// client): pages of a memory file that mappings share, so that every
/// mapping of it aliases the same bytes.
#[derive(Debug)]
struct Physical {
    file: std::fs::File,
    len: u64,
    /// What it costs this client: its size, or 0 when imported (the
    /// exporting client pays).
    charge: u64,
}

/// One mapping of a physical allocation at a reserved address.
#[derive(Debug)]
struct Mapping {
    len: u64,
    physical: Arc<Physical>,
}

#[derive(Debug, Default)]
struct Vmm {
    /// Live physical allocations by handle. A mapping holds its allocation
    /// too: released allocations live on until their last mapping goes.
    physical: BTreeMap<u64, Arc<Physical>>,
    next_handle: u64,
    /// Reserved address ranges: start -> length.
    reserved: BTreeMap<u64, u64>,
    /// Mappings by start address. An accessible mapping's buffer is in
    /// `allocs` (copies, memsets and kernels reach it); one without access
    /// (`cuMemSetAccess` not called, or `PROT_NONE`) waits in `parked`.
    mappings: BTreeMap<u64, Mapping>,
    parked: BTreeMap<u64, Buffer>,
}

/// The device heap: one allocation, carved up by `malloc` and `free` of
/// the kernels running on many threads at once.
#[derive(Debug)]
pub struct Heap {
    base: u64,
    len: u64,
    state: std::sync::Mutex<HeapState>,
}

#[derive(Debug, Default)]
struct HeapState {
    /// Free blocks: offset -> length.
    free: BTreeMap<u64, u64>,
    /// Blocks handed out: offset -> length.
    used: BTreeMap<u64, u64>,
}

/// Alignment of what `malloc` returns, as on a GPU.
const HEAP_ALIGN: u64 = 16;

impl Heap {
    fn new(base: u64, len: u64) -> Self {
        let state = HeapState {
            free: BTreeMap::from([(0, len)]),
            used: BTreeMap::new(),
        };
        Heap {
            base,
            len,
            state: std::sync::Mutex::new(state),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HeapState> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// `malloc(size)`: an address, or 0 when the heap has no room (as a
    /// GPU's `malloc` returns NULL).
    pub fn malloc(&self, size: u64) -> u64 {
        let Some(size) = size.max(1).checked_next_multiple_of(HEAP_ALIGN) else {
            return 0;
        };
        let mut st = self.lock();
        let Some((&off, &len)) = st.free.iter().find(|(_, &len)| len >= size) else {
            return 0;
        };
        st.free.remove(&off);
        if len > size {
            st.free.insert(off + size, len - size);
        }
        st.used.insert(off, size);
        self.base + off
    }

    /// `free(ptr)`: false when `ptr` is not a block `malloc` returned.
    pub fn free(&self, ptr: u64) -> bool {
        let Some(off) = ptr.checked_sub(self.base).filter(|&o| o < self.len) else {
            return false;
        };
        let mut st = self.lock();
        let Some(size) = st.used.remove(&off) else {
            return false;
        };
        // Merged with the free neighbours.
        let (mut start, mut end) = (off, off + size);
        if let Some((&prev, &plen)) = st.free.range(..off).next_back() {
            if prev + plen == off {
                st.free.remove(&prev);
                start = prev;
            }
        }
        if let Some(nlen) = st.free.remove(&end) {
            end += nlen;
        }
        st.free.insert(start, end - start);
        true
    }
}

impl DeviceMemory {
    /// An empty allocation table on `gpu`, handing out addresses of address
    /// window `window`.
    pub fn new(gpu: Arc<EmuGpu>, window: u32) -> Self {
        Self {
            gpu,
            allocs: BTreeMap::new(),
            next: BASE + (u64::from(window) % WINDOWS) * SPAN,
            end: BASE + (u64::from(window) % WINDOWS + 1) * SPAN,
            held: 0,
            extra: 0,
            heap: None,
            internal: BTreeSet::new(),
            grid_workspace: None,
            imported: BTreeSet::new(),
            vmm: Vmm::default(),
        }
    }

    /// The GPU this memory lives on.
    pub fn gpu(&self) -> &Arc<EmuGpu> {
        &self.gpu
    }

    /// Bytes this client holds: every allocation's [`allocation_charge`]
    /// plus what [`DeviceMemory::charge_extra`] charged.
    pub fn held(&self) -> u64 {
        self.held
    }

    /// Number of live allocations.
    pub fn allocations(&self) -> usize {
        self.allocs.len()
    }

    /// Allocates `size` bytes (`size > 0`) and returns the device address.
    /// The allocation is charged [`allocation_charge`]`(size)` bytes.
    pub fn malloc(&mut self, size: u64) -> Result<u64, CudaError> {
        if size == 0 {
            return Err(CudaError::INVALID_VALUE);
        }
        let len = usize::try_from(size).map_err(|_| CudaError::MEMORY_ALLOCATION)?;
        let charge = allocation_charge(size).ok_or(CudaError::MEMORY_ALLOCATION)?;
        let next = size
            .div_ceil(ALIGN as u64)
            .checked_mul(ALIGN as u64)
            .and_then(|s| s.checked_add(GUARD))
            .and_then(|s| self.next.checked_add(s))
            .filter(|&n| n <= self.end)
            // The window's addresses are used up (a terabyte of allocations
            // in this context): never hand out one of another window.
            .ok_or(CudaError::MEMORY_ALLOCATION)?;
        self.gpu.reserve(charge)?;
        let Some(buffer) = Buffer::zeroed(len) else {
            self.gpu.release(charge);
            return Err(CudaError::MEMORY_ALLOCATION);
        };
        let addr = self.next;
        // Addresses are never reused, so a stale pointer never aliases new memory.
        self.next = next;
        self.allocs.insert(addr, buffer);
        self.held += charge;
        Ok(addr)
    }

    /// Allocates `size` bytes for the runtime's own use (a module
    /// variable): host copies reach it, [`DeviceMemory::free`] does not.
    pub fn malloc_internal(&mut self, size: u64) -> Result<u64, CudaError> {
        let addr = self.malloc(size)?;
        self.internal.insert(addr);
        Ok(addr)
    }

    /// Frees an allocation of [`DeviceMemory::malloc_internal`].
    pub fn free_internal(&mut self, ptr: u64) -> Result<(), CudaError> {
        if !self.internal.remove(&ptr) {
            return Err(CudaError::INVALID_VALUE);
        }
        self.release_allocation(ptr)
    }

    /// Frees the allocation that starts at `ptr`, which
    /// [`DeviceMemory::malloc`] returned.
    pub fn free(&mut self, ptr: u64) -> Result<(), CudaError> {
        if self.internal.contains(&ptr)
            || self.imported.contains(&ptr)
            || self.vmm.mappings.contains_key(&ptr)
        {
            return Err(CudaError::INVALID_VALUE);
        }
        self.release_allocation(ptr)
    }

    fn release_allocation(&mut self, ptr: u64) -> Result<(), CudaError> {
        let buffer = self.allocs.remove(&ptr).ok_or(CudaError::INVALID_VALUE)?;
        // Charged this much when it was made (`len` fits in u64, so does its charge).
        let charge = allocation_charge(buffer.len() as u64).unwrap_or(0);
        self.held -= charge;
        self.gpu.release(charge);
        Ok(())
    }

    /// CUDA IPC, exporting side: the memory file, start and length of the
    /// allocation holding `ptr` (made shareable at the first export).
    pub fn export(&mut self, ptr: u64) -> Result<(std::fs::File, u64, u64), CudaError> {
        if self.internal.contains(&ptr) || self.imported.contains(&ptr) {
            return Err(CudaError::INVALID_VALUE);
        }
        let (base, _) = self.locate(ptr, 1)?;
        // Mapped physical memory is shared through its handle
        // (`cuMemExportToShareableHandle`), as in CUDA.
        if self.vmm.mappings.contains_key(&base) {
            return Err(CudaError::INVALID_VALUE);
        }
        let buffer = self.allocs.get_mut(&base).ok_or(CudaError::INVALID_VALUE)?;
        let file = buffer.share().map_err(|e| {
            tracing::warn!("CUDA IPC: cannot share an allocation: {e}");
            CudaError::MEMORY_ALLOCATION
        })?;
        Ok((file, base, buffer.len() as u64))
    }

    /// CUDA IPC, opening side: maps `len` bytes of another client's memory
    /// file at a new address of this table.
    pub fn import(&mut self, file: std::fs::File, len: u64) -> Result<u64, CudaError> {
        let size = usize::try_from(len).map_err(|_| CudaError::INVALID_VALUE)?;
        if size == 0 || file.metadata().map(|m| m.len()).ok() != Some(len) {
            return Err(CudaError::INVALID_VALUE);
        }
        let next = len
            .div_ceil(ALIGN as u64)
            .checked_mul(ALIGN as u64)
            .and_then(|s| s.checked_add(GUARD))
            .and_then(|s| self.next.checked_add(s))
            .filter(|&n| n <= self.end)
            .ok_or(CudaError::MEMORY_ALLOCATION)?;
        let buffer = Buffer::from_shared(file, size).map_err(|e| {
            tracing::warn!("CUDA IPC: cannot map another client's allocation: {e}");
            CudaError::MAP_BUFFER_OBJECT_FAILED
        })?;
        let addr = self.next;
        self.next = next;
        self.allocs.insert(addr, buffer);
        self.imported.insert(addr);
        Ok(addr)
    }

    /// Unmaps memory [`DeviceMemory::import`] mapped at `ptr`.
    pub fn close_import(&mut self, ptr: u64) -> Result<(), CudaError> {
        if !self.imported.remove(&ptr) {
            return Err(CudaError::INVALID_VALUE);
        }
        self.allocs.remove(&ptr);
        Ok(())
    }

    /// Charges `bytes` of host memory that this client's use of the GPU
    /// costs besides its allocations (a loaded module's code, say) to this
    /// table and the GPU's budget, as if allocated: fails with
    /// `cudaErrorMemoryAllocation`, charging nothing, when the GPU has not
    /// that much left. [`DeviceMemory::release_extra`] and
    /// [`DeviceMemory::reset`] give it back.
    pub fn charge_extra(&mut self, bytes: u64) -> Result<(), CudaError> {
        self.gpu.reserve(bytes)?;
        self.held += bytes;
        self.extra += bytes;
        Ok(())
    }

    /// Gives back `bytes` charged by [`DeviceMemory::charge_extra`] (at most
    /// what is still charged).
    pub fn release_extra(&mut self, bytes: u64) {
        let bytes = bytes.min(self.extra);
        self.extra -= bytes;
        self.held -= bytes;
        self.gpu.release(bytes);
    }

    /// Frees every allocation and gives back every extra charge.
    pub fn reset(&mut self) {
        self.heap = None;
        self.grid_workspace = None;
        self.internal.clear();
        self.imported.clear();
        self.allocs.clear();
        // Their charges are part of `held`.
        self.vmm = Vmm::default();
        self.gpu.release(self.held);
        self.held = 0;
        self.extra = 0;
    }

    /// Finds the allocation holding `[ptr, ptr + len)` and the offset of
    /// `ptr` in it. The device heap is kernels' alone: as in CUDA, the
    /// runtime API cannot reach what device-side `malloc` returns.
    fn locate(&self, ptr: u64, len: u64) -> Result<(u64, usize), CudaError> {
        let (&base, buffer) = self
            .allocs
            .range((Bound::Unbounded, Bound::Included(ptr)))
            .next_back()
            .filter(|(&base, _)| self.heap.as_ref().is_none_or(|h| h.base != base))
            .ok_or(CudaError::INVALID_VALUE)?;
        let offset = ptr - base;
        let end = offset.checked_add(len).ok_or(CudaError::INVALID_VALUE)?;
        if end > buffer.len() as u64 {
            return Err(CudaError::INVALID_VALUE);
        }
        Ok((base, offset as usize))
    }

    /// Checks that `[ptr, ptr + len)` lies inside one allocation, or across
    /// adjacent accessible mappings (see [`DeviceMemory::pieces`]).
    pub fn check(&self, ptr: u64, len: u64) -> Result<(), CudaError> {
        self.pieces(ptr, len).map(|_| ())
    }

    /// The parts of `[ptr, ptr + len)` in address order, as (allocation
    /// base, offset, length): one inside an allocation; across virtual
    /// memory mappings that follow each other without a gap and are all
    /// accessible, one per mapping, since the range is contiguous device
    /// memory there as on a GPU. Separate `cudaMalloc` allocations never
    /// join, even where they happen to be adjacent.
    fn pieces(&self, ptr: u64, len: u64) -> Result<Vec<(u64, usize, usize)>, CudaError> {
        if let Ok((base, off)) = self.locate(ptr, len) {
            return Ok(vec![(base, off, len as usize)]);
        }
        let end = ptr.checked_add(len).ok_or(CudaError::INVALID_VALUE)?;
        let mut pieces = Vec::new();
        let mut at = ptr;
        while at < end {
            let (&base, mapping) = self
                .vmm
                .mappings
                .range(..=at)
                .next_back()
                .ok_or(CudaError::INVALID_VALUE)?;
            let mapping_end = base + mapping.len;
            // Accessible mappings are the ones in `allocs`.
            if at >= mapping_end || (at != ptr && at != base) || !self.allocs.contains_key(&base) {
                return Err(CudaError::INVALID_VALUE);
            }
            let piece_end = mapping_end.min(end);
            pieces.push((base, (at - base) as usize, (piece_end - at) as usize));
            at = piece_end;
        }
        Ok(pieces)
    }

    /// Calls `f` on each part of `[ptr, ptr + len)` in address order (see
    /// [`DeviceMemory::pieces`]); stops at `f`'s first error.
    pub fn for_each_piece<E: From<CudaError>>(
        &self,
        ptr: u64,
        len: u64,
        mut f: impl FnMut(&[u8]) -> Result<(), E>,
    ) -> Result<(), E> {
        for (base, off, n) in self.pieces(ptr, len)? {
            let buffer = self.allocs.get(&base).ok_or(CudaError::INVALID_VALUE)?;
            f(&buffer.as_slice()[off..off + n])?;
        }
        Ok(())
    }

    /// As [`DeviceMemory::for_each_piece`], writable.
    pub fn for_each_piece_mut<E: From<CudaError>>(
        &mut self,
        ptr: u64,
        len: u64,
        mut f: impl FnMut(&mut [u8]) -> Result<(), E>,
    ) -> Result<(), E> {
        for (base, off, n) in self.pieces(ptr, len)? {
            let buffer = self.allocs.get_mut(&base).ok_or(CudaError::INVALID_VALUE)?;
            f(&mut buffer.as_mut_slice()[off..off + n])?;
        }
        Ok(())
    }

    /// The bytes at `[ptr, ptr + len)`.
    pub fn slice(&self, ptr: u64, len: u64) -> Result<&[u8], CudaError> {
        let (base, off) = self.locate(ptr, len)?;
        let buffer = &self.allocs[&base];
        Ok(&buffer.as_slice()[off..off + len as usize])
    }

    /// The bytes at `[ptr, ptr + len)`, writable.
    pub fn slice_mut(&mut self, ptr: u64, len: u64) -> Result<&mut [u8], CudaError> {
        let (base, off) = self.locate(ptr, len)?;
        let buffer = self.allocs.get_mut(&base).ok_or(CudaError::INVALID_VALUE)?;
        Ok(&mut buffer.as_mut_slice()[off..off + len as usize])
    }

    /// Copies `len` bytes from `src` to `dst`; the ranges may overlap.
    pub fn copy(&mut self, dst: u64, src: u64, len: u64) -> Result<(), CudaError> {
        let (Ok((src_base, src_off)), Ok((dst_base, dst_off))) =
            (self.locate(src, len), self.locate(dst, len))
        else {
            // Across mappings: through a copy of the source, which may
            // overlap the destination.
            self.check(dst, len)?;
            let mut staged = Vec::with_capacity(usize::try_from(len).unwrap_or(0));
            self.for_each_piece(src, len, |piece| {
                staged.extend_from_slice(piece);
                Ok::<(), CudaError>(())
            })?;
            let mut rest = &staged[..];
            return self.for_each_piece_mut(dst, len, |piece| {
                let (now, later) = rest.split_at(piece.len());
                piece.copy_from_slice(now);
                rest = later;
                Ok(())
            });
        };
        let len = len as usize;
        if src_base == dst_base {
            let buf = self
                .allocs
                .get_mut(&dst_base)
                .ok_or(CudaError::INVALID_VALUE)?;
            buf.as_mut_slice()
                .copy_within(src_off..src_off + len, dst_off);
            return Ok(());
        }
        // Two distinct allocations: take the source out briefly to borrow both.
        let src_buf = self
            .allocs
            .remove(&src_base)
            .ok_or(CudaError::INVALID_VALUE)?;
        let result = match self.allocs.get_mut(&dst_base) {
            Some(dst_buf) => {
                dst_buf.as_mut_slice()[dst_off..dst_off + len]
                    .copy_from_slice(&src_buf.as_slice()[src_off..src_off + len]);
                Ok(())
            }
            None => Err(CudaError::INVALID_VALUE),
        };
        self.allocs.insert(src_base, src_buf);
        result
    }

    /// Sets `len` bytes at `dst` to `value` (zeroing large ranges commits
    /// no memory).
    pub fn fill(&mut self, dst: u64, value: u8, len: u64) -> Result<(), CudaError> {
        for (base, off, n) in self.pieces(dst, len)? {
            let buffer = self.allocs.get_mut(&base).ok_or(CudaError::INVALID_VALUE)?;
            buffer.fill(off..off + n, value);
        }
        Ok(())
    }
}

/// Virtual memory management (`cuMemCreate`, `cuMemAddressReserve`,
/// `cuMemMap`, `cuMemSetAccess` and their inverses). Every refusal is
/// `cudaErrorInvalidValue`, as the driver's `CUDA_ERROR_INVALID_VALUE`.
impl DeviceMemory {
    /// `cuMemCreate`: a physical allocation of `size` bytes (a multiple of
    /// [`VMM_GRANULARITY`]), charged like an allocation; its handle.
    pub fn create_physical(&mut self, size: u64) -> Result<u64, CudaError> {
        if size == 0 || !size.is_multiple_of(VMM_GRANULARITY) {
            return Err(CudaError::INVALID_VALUE);
        }
        self.gpu.reserve(size)?;
        let file = rustix::fs::memfd_create("rcud-vmm", rustix::fs::MemfdFlags::CLOEXEC)
            .map_err(std::io::Error::from)
            .map(std::fs::File::from)
            .and_then(|f| f.set_len(size).map(|()| f));
        let file = match file {
            Ok(f) => f,
            Err(e) => {
                tracing::warn!("cuMemCreate: no memory file for {size} bytes: {e}");
                self.gpu.release(size);
                return Err(CudaError::MEMORY_ALLOCATION);
            }
        };
        self.held += size;
        Ok(self.add_physical(Physical {
            file,
            len: size,
            charge: size,
        }))
    }

    fn add_physical(&mut self, physical: Physical) -> u64 {
        self.vmm.next_handle += 1;
        let handle = self.vmm.next_handle;
        self.vmm.physical.insert(handle, Arc::new(physical));
        handle
    }

    /// Drops one reference to a physical allocation; the last one gives
    /// its charge back.
    fn drop_physical(&mut self, physical: Arc<Physical>) {
        if let Some(last) = Arc::into_inner(physical) {
            self.held -= last.charge;
            self.gpu.release(last.charge);
        }
    }

    /// `cuMemRelease`: the handle is gone; the memory stays while mapped.
    pub fn release_physical(&mut self, handle: u64) -> Result<(), CudaError> {
        let physical = self
            .vmm
            .physical
            .remove(&handle)
            .ok_or(CudaError::INVALID_VALUE)?;
        self.drop_physical(physical);
        Ok(())
    }

    /// `cuMemExportToShareableHandle`: the memory file of a physical
    /// allocation and its size, for another client to import.
    pub fn export_physical(&self, handle: u64) -> Result<(std::fs::File, u64), CudaError> {
        let physical = self
            .vmm
            .physical
            .get(&handle)
            .ok_or(CudaError::INVALID_VALUE)?;
        let file = physical.file.try_clone().map_err(|e| {
            tracing::warn!("cuMemExportToShareableHandle: {e}");
            CudaError::OPERATING_SYSTEM
        })?;
        Ok((file, physical.len))
    }

    /// `cuMemImportFromShareableHandle`: another client's physical
    /// allocation (`len` bytes of `file`) under a handle of this table; not
    /// charged here (the exporter pays).
    pub fn import_physical(&mut self, file: std::fs::File, len: u64) -> Result<u64, CudaError> {
        if len == 0 || file.metadata().map(|m| m.len()).ok() != Some(len) {
            return Err(CudaError::INVALID_VALUE);
        }
        Ok(self.add_physical(Physical {
            file,
            len,
            charge: 0,
        }))
    }

    /// `cuMemAddressReserve`: `size` bytes of addresses of this table's
    /// window aligned to `alignment` (0: the granularity), mapped to
    /// nothing. Both must be multiples of [`VMM_GRANULARITY`]; the address
    /// hint of CUDA is a hint only, and is not taken.
    pub fn reserve_address(&mut self, size: u64, alignment: u64) -> Result<u64, CudaError> {
        let alignment = if alignment == 0 {
            VMM_GRANULARITY
        } else {
            alignment
        };
        if size == 0
            || !size.is_multiple_of(VMM_GRANULARITY)
            || !alignment.is_power_of_two()
            || !alignment.is_multiple_of(VMM_GRANULARITY)
        {
            return Err(CudaError::INVALID_VALUE);
        }
        let start = self
            .next
            .checked_next_multiple_of(alignment)
            .ok_or(CudaError::MEMORY_ALLOCATION)?;
        let next = start
            .checked_add(size)
            .and_then(|e| e.checked_add(GUARD))
            .filter(|&n| n <= self.end)
            .ok_or(CudaError::MEMORY_ALLOCATION)?;
        self.next = next;
        self.vmm.reserved.insert(start, size);
        Ok(start)
    }

    /// `cuMemAddressFree`: `ptr` and `size` must be those of a reservation
    /// with nothing mapped in it any more.
    pub fn free_address(&mut self, ptr: u64, size: u64) -> Result<(), CudaError> {
        if self.vmm.reserved.get(&ptr) != Some(&size) || self.mapped_in(ptr, size).next().is_some()
        {
            return Err(CudaError::INVALID_VALUE);
        }
        self.vmm.reserved.remove(&ptr);
        Ok(())
    }

    /// Mappings that start inside `[ptr, ptr + size)`.
    fn mapped_in(&self, ptr: u64, size: u64) -> impl Iterator<Item = (&u64, &Mapping)> {
        self.vmm.mappings.range(ptr..ptr.saturating_add(size))
    }

    /// `cuMemMap`: maps the first `size` bytes of physical allocation
    /// `handle` at `ptr`, inside one reservation and over nothing else
    /// mapped. The mapping is not accessible until
    /// [`DeviceMemory::set_access`] makes it so. `offset` must be 0, as
    /// CUDA requires.
    pub fn map(&mut self, ptr: u64, size: u64, offset: u64, handle: u64) -> Result<(), CudaError> {
        let physical = self
            .vmm
            .physical
            .get(&handle)
            .cloned()
            .ok_or(CudaError::INVALID_VALUE)?;
        let end = ptr.checked_add(size).ok_or(CudaError::INVALID_VALUE)?;
        let granular = |v: u64| v.is_multiple_of(VMM_GRANULARITY);
        let reserved = self
            .vmm
            .reserved
            .range(..=ptr)
            .next_back()
            .is_some_and(|(&start, &len)| end <= start + len);
        let overlaps = self
            .vmm
            .mappings
            .range(..end)
            .next_back()
            .is_some_and(|(&start, m)| start + m.len > ptr);
        if offset != 0
            || size == 0
            || size > physical.len
            || !granular(ptr)
            || !granular(size)
            || !reserved
            || overlaps
        {
            return Err(CudaError::INVALID_VALUE);
        }
        let file = physical.file.try_clone().map_err(|e| {
            tracing::warn!("cuMemMap: {e}");
            CudaError::OPERATING_SYSTEM
        })?;
        let len = usize::try_from(size).map_err(|_| CudaError::INVALID_VALUE)?;
        let buffer = Buffer::from_shared(file, len).map_err(|e| {
            tracing::warn!("cuMemMap: cannot map {size} bytes: {e}");
            CudaError::MEMORY_ALLOCATION
        })?;
        self.vmm.parked.insert(ptr, buffer);
        self.vmm.mappings.insert(
            ptr,
            Mapping {
                len: size,
                physical,
            },
        );
        Ok(())
    }

    /// The mappings that exactly cover `[ptr, ptr + size)`, with no gap
    /// and none sticking out: their start addresses.
    fn covering(&self, ptr: u64, size: u64) -> Result<Vec<u64>, CudaError> {
        let end = ptr.checked_add(size).ok_or(CudaError::INVALID_VALUE)?;
        let mut at = ptr;
        let mut starts = Vec::new();
        for (&start, m) in self.mapped_in(ptr, size) {
            if start != at {
                return Err(CudaError::INVALID_VALUE);
            }
            starts.push(start);
            at = start + m.len;
        }
        if size == 0 || at != end {
            return Err(CudaError::INVALID_VALUE);
        }
        Ok(starts)
    }

    /// `cuMemUnmap`: `[ptr, ptr + size)` must be whole mappings.
    pub fn unmap(&mut self, ptr: u64, size: u64) -> Result<(), CudaError> {
        for start in self.covering(ptr, size)? {
            self.allocs.remove(&start);
            self.vmm.parked.remove(&start);
            if let Some(m) = self.vmm.mappings.remove(&start) {
                self.drop_physical(m.physical);
            }
        }
        Ok(())
    }

    /// `cuMemSetAccess` for this device: `[ptr, ptr + size)`, which must be
    /// whole mappings, becomes readable and writable (`accessible`) or
    /// inaccessible.
    pub fn set_access(&mut self, ptr: u64, size: u64, accessible: bool) -> Result<(), CudaError> {
        for start in self.covering(ptr, size)? {
            let (from, to) = if accessible {
                (&mut self.vmm.parked, &mut self.allocs)
            } else {
                (&mut self.allocs, &mut self.vmm.parked)
            };
            if let Some(buffer) = from.remove(&start) {
                to.insert(start, buffer);
            }
        }
        Ok(())
    }

    /// Whether the mapping holding `ptr` is accessible, or `None` when
    /// nothing is mapped there.
    pub fn access(&self, ptr: u64) -> Option<bool> {
        let (&start, m) = self.vmm.mappings.range(..=ptr).next_back()?;
        (ptr < start + m.len).then(|| self.allocs.contains_key(&start))
    }
}

impl DeviceMemory {
    /// Whether kernels' device heap exists (a kernel calling `malloc` ran).
    pub fn has_heap(&self) -> bool {
        self.heap.is_some()
    }

    /// Makes the device heap of `len` bytes unless there is one.
    pub fn ensure_heap(&mut self, len: u64) -> Result<(), CudaError> {
        if self.heap.is_none() {
            let base = self.malloc_internal(len)?;
            self.heap = Some(Heap::new(base, len));
        }
        Ok(())
    }

    /// The workspace a cooperative launch finds through `%envreg1`/`%envreg2`
    /// (the driver ABI of cooperative groups): `{ u32 size; u32 barrier; }`,
    /// reset before each launch so that a grid that stopped half-way through
    /// a `grid.sync()` leaves nothing behind.
    pub fn grid_workspace(&mut self) -> Result<u64, CudaError> {
        const SIZE: u64 = 8;
        let addr = match self.grid_workspace {
            Some(a) => a,
            None => {
                let a = self.malloc_internal(SIZE)?;
                self.grid_workspace = Some(a);
                a
            }
        };
        let ws = self.slice_mut(addr, SIZE)?;
        ws[..4].copy_from_slice(&(SIZE as u32).to_le_bytes());
        ws[4..].fill(0);
        Ok(addr)
    }

    /// A view of every allocation that many threads can use at once, for the
    /// duration of a kernel launch. Holding it borrows this table mutably, so
    /// no allocation can be freed, resized or accessed by other means while
    /// kernels run; every access through the view is an atomic access of its
    /// own size, so racing accesses from different threads (the kernel's own
    /// data races) are never undefined behaviour in the server.
    pub fn launch_view(&mut self) -> MemoryView<'_> {
        let regions = self
            .allocs
            .iter_mut()
            .map(|(&base, buf)| {
                let s = buf.as_mut_slice();
                RawRegion {
                    base,
                    len: s.len() as u64,
                    ptr: s.as_mut_ptr(),
                }
            })
            .collect();
        MemoryView {
            regions,
            heap: self.heap.as_ref(),
            _mem: PhantomData,
        }
    }
}

#[derive(Debug, Clone, Copy)]
struct RawRegion {
    base: u64,
    len: u64,
    ptr: *mut u8,
}

/// Every allocation of one client, shareable between the threads that run a
/// launch. See [`DeviceMemory::launch_view`].
#[derive(Debug)]
pub struct MemoryView<'a> {
    /// Sorted by base address.
    regions: Vec<RawRegion>,
    heap: Option<&'a Heap>,
    _mem: PhantomData<&'a mut DeviceMemory>,
}

// SAFETY: the view only hands out atomic accesses to the buffers it points
// into (see `Region`), which the `&'a mut DeviceMemory` borrow keeps alive and
// unaliased by anything but this view for 'a.
unsafe impl Send for MemoryView<'_> {}
// SAFETY: as above: shared use from many threads only performs atomic accesses.
unsafe impl Sync for MemoryView<'_> {}

impl<'a> MemoryView<'a> {
    /// The allocation that contains `addr`, if any.
    #[inline]
    pub fn region(&self, addr: u64) -> Option<Region<'a>> {
        let i = self.regions.partition_point(|r| r.base <= addr);
        let r = self.regions.get(i.checked_sub(1)?)?;
        if addr - r.base < r.len {
            Some(Region {
                raw: *r,
                _view: PhantomData,
            })
        } else {
            None
        }
    }

    /// The device heap, if the context has one.
    pub fn heap(&self) -> Option<&'a Heap> {
        self.heap
    }

    /// Number of allocations.
    pub fn len(&self) -> usize {
        self.regions.len()
    }

    /// Whether there are no allocations.
    pub fn is_empty(&self) -> bool {
        self.regions.is_empty()
    }
}

/// One allocation seen through a [`MemoryView`]. Every accessor checks that
/// the access lies inside the allocation and is aligned to its size, and
/// returns `None` otherwise.
#[derive(Debug, Clone, Copy)]
pub struct Region<'a> {
    raw: RawRegion,
    _view: PhantomData<&'a ()>,
}

// SAFETY: see `MemoryView`: only atomic accesses are handed out.
unsafe impl Send for Region<'_> {}
// SAFETY: see `MemoryView`.
unsafe impl Sync for Region<'_> {}

macro_rules! region_atomic {
    ($name:ident, $atomic:ty, $size:expr) => {
        /// The naturally aligned atomic of this size at device address `addr`.
        #[inline]
        pub fn $name(&self, addr: u64) -> Option<&'a $atomic> {
            let off = addr.wrapping_sub(self.raw.base);
            if off >= self.raw.len || self.raw.len - off < $size || !addr.is_multiple_of($size) {
                return None;
            }
            // SAFETY: `off + size <= len`, so the bytes lie inside the
            // allocation, which lives (and is not freed or moved) for 'a
            // because the view borrows the DeviceMemory mutably for 'a. The
            // buffer is 256-byte aligned and device addresses of allocations
            // are 256-byte aligned, so `addr % size == 0` makes the host
            // pointer aligned for the atomic type. All accesses during 'a go
            // through such atomics, so there is no non-atomic data race.
            Some(unsafe { <$atomic>::from_ptr(self.raw.ptr.add(off as usize).cast()) })
        }
    };
}

impl<'a> Region<'a> {
    /// Device address of the allocation's first byte.
    pub fn base(&self) -> u64 {
        self.raw.base
    }

    /// Size of the allocation in bytes.
    pub fn len(&self) -> u64 {
        self.raw.len
    }

    /// Whether the allocation is empty (never: allocations have a size).
    pub fn is_empty(&self) -> bool {
        self.raw.len == 0
    }

    /// Whether `[addr, addr + size)` lies inside this allocation.
    #[inline]
    pub fn contains(&self, addr: u64, size: u64) -> bool {
        let off = addr.wrapping_sub(self.raw.base);
        off < self.raw.len && self.raw.len - off >= size
    }

    region_atomic!(atomic_u8, AtomicU8, 1);
    region_atomic!(atomic_u16, AtomicU16, 2);
    region_atomic!(atomic_u32, AtomicU32, 4);
    region_atomic!(atomic_u64, AtomicU64, 8);
    region_atomic!(atomic_u128, portable_atomic::AtomicU128, 16);
}

impl Drop for DeviceMemory {
    fn drop(&mut self) {
        self.reset();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mem(total: u64) -> DeviceMemory {
        DeviceMemory::new(EmuGpu::new(0, total), 0)
    }

    #[test]
    fn accesses_are_checked_against_allocations() {
        let mut m = mem(1 << 20);
        let a = m.malloc(100).unwrap();
        assert_eq!(a % ALIGN as u64, 0);
        assert!(m.check(a, 100).is_ok());
        assert!(m.check(a + 99, 1).is_ok());
        assert_eq!(m.check(a + 99, 2), Err(CudaError::INVALID_VALUE));
        assert_eq!(m.check(a - 1, 1), Err(CudaError::INVALID_VALUE));
        assert_eq!(m.check(u64::MAX, 2), Err(CudaError::INVALID_VALUE));
        assert_eq!(m.check(a + 50, u64::MAX), Err(CudaError::INVALID_VALUE));
        let b = m.malloc(100).unwrap();
        assert!(b >= a + 100 + GUARD);
        assert_eq!(m.check(a + 100, 1), Err(CudaError::INVALID_VALUE));
    }

    #[test]
    fn copies_fill_and_overlap() {
        let mut m = mem(1 << 20);
        let a = m.malloc(64).unwrap();
        let b = m.malloc(64).unwrap();
        m.slice_mut(a, 64)
            .unwrap()
            .iter_mut()
            .enumerate()
            .for_each(|(i, x)| *x = i as u8);
        m.copy(b + 1, a, 10).unwrap();
        assert_eq!(
            m.slice(b, 12).unwrap(),
            &[0, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 0]
        );
        m.copy(a + 2, a, 4).unwrap();
        assert_eq!(m.slice(a, 6).unwrap(), &[0, 1, 0, 1, 2, 3]);
        m.fill(a + 60, 0xAB, 4).unwrap();
        assert_eq!(m.slice(a + 60, 4).unwrap(), &[0xAB; 4]);
        assert_eq!(m.copy(b, a, 65), Err(CudaError::INVALID_VALUE));
    }

    #[test]
    fn launch_view_checks_bounds_and_alignment() {
        use std::sync::atomic::Ordering::Relaxed;
        let mut m = mem(1 << 20);
        let a = m.malloc(16).unwrap();
        let b = m.malloc(8).unwrap();
        {
            let v = m.launch_view();
            assert_eq!(v.len(), 2);
            let r = v.region(a + 15).unwrap();
            assert_eq!(r.base(), a);
            r.atomic_u32(a + 4).unwrap().store(0x0403_0201, Relaxed);
            assert!(r.atomic_u32(a + 2).is_none());
            assert!(r.atomic_u64(a + 16).is_none());
            assert!(r.atomic_u64(a + 8).is_some());
            assert!(v.region(a + 16).is_none());
            assert!(v.region(a - 1).is_none());
            assert!(v.region(b + 8).is_none());
            let rb = v.region(b).unwrap();
            assert!(rb.atomic_u64(b).is_some());
            assert!(rb.atomic_u8(a).is_none());
        }
        assert_eq!(m.slice(a + 4, 4).unwrap(), &[1, 2, 3, 4]);
    }

    #[test]
    fn address_windows_are_disjoint() {
        let gpu = EmuGpu::new(0, 1 << 20);
        let mut w0 = DeviceMemory::new(gpu.clone(), 0);
        let mut w1 = DeviceMemory::new(gpu.clone(), 1);
        let (a, b) = (w0.malloc(4096).unwrap(), w1.malloc(4096).unwrap());
        assert_eq!(b - a, SPAN, "window 1 starts one span after window 0");
        // Not where Linux puts a process's own executable or mappings.
        let last = DeviceMemory::new(gpu, (WINDOWS - 1) as u32).next;
        assert!(a >= BASE && last + SPAN <= 0x5555_0000_0000);
        assert!(
            w1.slice(a, 1).is_err(),
            "one window's pointer is invalid in another"
        );
    }

    #[test]
    fn budget_is_shared_and_returned() {
        let c = allocation_charge(600).unwrap();
        let gpu = EmuGpu::new(0, 2 * c - 1);
        let mut m1 = DeviceMemory::new(gpu.clone(), 0);
        let mut m2 = DeviceMemory::new(gpu.clone(), 0);
        let a = m1.malloc(600).unwrap();
        assert_eq!(m2.malloc(600), Err(CudaError::MEMORY_ALLOCATION));
        assert_eq!(gpu.free_memory(), c - 1);
        m1.free(a).unwrap();
        assert_eq!(m1.free(a), Err(CudaError::INVALID_VALUE));
        m2.malloc(600).unwrap();
        drop(m2);
        assert_eq!(gpu.free_memory(), 2 * c - 1);
        assert_eq!(m1.malloc(u64::MAX), Err(CudaError::MEMORY_ALLOCATION));
    }

    #[test]
    fn allocations_are_charged_with_their_overhead() {
        assert_eq!(allocation_charge(1), Some(256 + ALLOC_OVERHEAD));
        assert_eq!(allocation_charge(256), Some(256 + ALLOC_OVERHEAD));
        assert_eq!(allocation_charge(257), Some(512 + ALLOC_OVERHEAD));
        // Mapped pages: whole pages, no heap bookkeeping.
        assert_eq!(allocation_charge(256 << 20), Some(256 << 20));
        assert_eq!(allocation_charge((1 << 20) + 1), Some((1 << 20) + PAGE));
        assert_eq!(allocation_charge(u64::MAX), None);

        // One-byte allocations against a 1 MiB budget: a few thousand, not a million.
        let gpu = EmuGpu::new(0, 1 << 20);
        let mut m = DeviceMemory::new(gpu.clone(), 0);
        let mut n = 0u64;
        while m.malloc(1).is_ok() {
            n += 1;
            assert!(n <= 1 << 20, "a million one-byte allocations fit in 1 MiB");
        }
        assert_eq!(n, (1 << 20) / allocation_charge(1).unwrap());
        assert_eq!(m.held(), n * allocation_charge(1).unwrap());
        assert_eq!(m.allocations() as u64, n);
        assert_eq!(gpu.free_memory(), (1 << 20) - m.held());
        m.reset();
        assert_eq!((m.held(), gpu.free_memory()), (0, 1 << 20));
    }

    #[test]
    fn extra_charges_count_and_come_back() {
        let gpu = EmuGpu::new(0, 10_000);
        let mut m = DeviceMemory::new(gpu.clone(), 0);
        m.charge_extra(6_000).unwrap();
        assert_eq!(m.held(), 6_000);
        assert_eq!(m.charge_extra(6_000), Err(CudaError::MEMORY_ALLOCATION));
        assert_eq!(m.held(), 6_000, "a refused charge charges nothing");
        let a = m.malloc(100).unwrap();
        assert_eq!(m.held(), 6_000 + allocation_charge(100).unwrap());
        // Never gives back more than was charged.
        m.release_extra(10_000);
        assert_eq!(m.held(), allocation_charge(100).unwrap());
        m.free(a).unwrap();
        m.charge_extra(4_000).unwrap();
        drop(m);
        assert_eq!(gpu.free_memory(), 10_000);
    }

    #[test]
    fn large_buffers_are_mapped_and_zeroed() {
        let mut m = mem(64 << 20);
        let big = m.malloc(32 << 20).unwrap();
        let small = m.malloc(1000).unwrap();
        assert!(m.allocs[&big].is_mapped() && !m.allocs[&small].is_mapped());
        for (p, n) in [(big, 32u64 << 20), (small, 1000)] {
            assert_eq!(p % ALIGN as u64, 0);
            assert!(m.slice(p, n).unwrap().iter().all(|&b| b == 0));
        }
        m.fill(big + (16 << 20), 7, 4096).unwrap();
        m.copy(small, big + (16 << 20), 1000).unwrap();
        assert_eq!(m.slice(small, 1000).unwrap(), &[7; 1000][..]);
        // Zeroing a large range discards whole pages: the edges are kept.
        m.fill(big, 0xcd, 32 << 20).unwrap();
        let (from, len) = (big + 4097, (8 << 20) + 5000);
        m.fill(from, 0, len).unwrap();
        let all = m.slice(big, 32 << 20).unwrap();
        let (a, b) = (4097, 4097 + len as usize);
        assert!(all[..a].iter().all(|&x| x == 0xcd));
        assert!(all[a..b].iter().all(|&x| x == 0));
        assert!(all[b..].iter().all(|&x| x == 0xcd));
        m.free(big).unwrap();
        assert_eq!(m.held(), allocation_charge(1000).unwrap());
    }

    #[test]
    fn vmm_mappings_alias_and_need_access() {
        const G: u64 = VMM_GRANULARITY;
        let gpu = EmuGpu::new(0, 64 << 20);
        let mut m = DeviceMemory::new(gpu.clone(), 0);
        assert_eq!(m.create_physical(G + 1), Err(CudaError::INVALID_VALUE));
        let h = m.create_physical(2 * G).unwrap();
        assert_eq!(m.held(), 2 * G);
        let va = m.reserve_address(8 * G, 0).unwrap();
        assert!(va.is_multiple_of(G));
        assert_eq!(m.reserve_address(G, 3 * G), Err(CudaError::INVALID_VALUE));
        // Two mappings of one allocation, inaccessible at first.
        m.map(va, 2 * G, 0, h).unwrap();
        m.map(va + 4 * G, 2 * G, 0, h).unwrap();
        assert_eq!(
            m.map(va + G, 2 * G, 0, h),
            Err(CudaError::INVALID_VALUE),
            "overlap"
        );
        assert_eq!(
            m.map(va + 6 * G, 4 * G, 0, h),
            Err(CudaError::INVALID_VALUE),
            "too long"
        );
        assert_eq!(
            m.map(va + 2 * G, G, G, h),
            Err(CudaError::INVALID_VALUE),
            "offset"
        );
        assert_eq!(
            m.map(va + 7 * G, 2 * G, 0, h),
            Err(CudaError::INVALID_VALUE),
            "outside"
        );
        assert_eq!(m.access(va), Some(false));
        assert_eq!(m.fill(va, 1, 4), Err(CudaError::INVALID_VALUE));
        assert_eq!(
            m.set_access(va, 3 * G, true),
            Err(CudaError::INVALID_VALUE),
            "gap"
        );
        m.set_access(va, 2 * G, true).unwrap();
        m.set_access(va + 4 * G, 2 * G, true).unwrap();
        m.fill(va + G + 8, 0x5a, 4).unwrap();
        assert_eq!(m.slice(va + 4 * G + G + 8, 4).unwrap(), &[0x5a; 4]);
        {
            use std::sync::atomic::Ordering::Relaxed;
            let v = m.launch_view();
            let r = v.region(va + 4 * G).unwrap();
            r.atomic_u32(va + 4 * G).unwrap().store(7, Relaxed);
        }
        assert_eq!(m.slice(va, 4).unwrap(), &7u32.to_le_bytes());
        m.set_access(va, 2 * G, false).unwrap();
        assert_eq!(m.access(va + 5), Some(false));
        assert_eq!(m.check(va, 1), Err(CudaError::INVALID_VALUE));
        assert_eq!(m.free(va + 4 * G), Err(CudaError::INVALID_VALUE));
        // Released while mapped: still charged and readable until unmapped.
        m.release_physical(h).unwrap();
        assert_eq!(m.release_physical(h), Err(CudaError::INVALID_VALUE));
        assert_eq!(m.held(), 2 * G);
        assert_eq!(m.slice(va + 4 * G + G + 8, 4).unwrap(), &[0x5a; 4]);
        assert_eq!(
            m.free_address(va, 8 * G),
            Err(CudaError::INVALID_VALUE),
            "mapped"
        );
        assert_eq!(
            m.unmap(va, G),
            Err(CudaError::INVALID_VALUE),
            "half a mapping"
        );
        m.unmap(va, 2 * G).unwrap();
        assert_eq!(m.held(), 2 * G);
        m.unmap(va + 4 * G, 2 * G).unwrap();
        assert_eq!((m.held(), gpu.free_memory()), (0, 64 << 20));
        assert_eq!(m.free_address(va, 4 * G), Err(CudaError::INVALID_VALUE));
        m.free_address(va, 8 * G).unwrap();
        assert_eq!(m.free_address(va, 8 * G), Err(CudaError::INVALID_VALUE));
    }

    /// Copies and memsets cross adjacent accessible mappings as contiguous
    /// memory; a gap, an inaccessible mapping or separate `cudaMalloc`
    /// allocations that happen to touch stop them.
    #[test]
    fn copies_and_fills_cross_adjacent_mappings() {
        const G: u64 = VMM_GRANULARITY;
        let mut m = DeviceMemory::new(EmuGpu::new(0, 64 << 20), 0);
        let (h1, h2, h3) = (
            m.create_physical(G).unwrap(),
            m.create_physical(G).unwrap(),
            m.create_physical(G).unwrap(),
        );
        let va = m.reserve_address(4 * G, 0).unwrap();
        m.map(va, G, 0, h1).unwrap();
        m.map(va + G, G, 0, h2).unwrap();
        m.map(va + 3 * G, G, 0, h3).unwrap();
        // Not accessible yet.
        assert_eq!(m.fill(va + G - 4, 1, 8), Err(CudaError::INVALID_VALUE));
        m.set_access(va, 2 * G, true).unwrap();
        m.set_access(va + 3 * G, G, true).unwrap();
        m.fill(va + G - 4, 0xab, 8).unwrap();
        assert_eq!(m.slice(va + G - 4, 4).unwrap(), &[0xab; 4]);
        assert_eq!(m.slice(va + G, 4).unwrap(), &[0xab; 4]);
        // A device-to-device copy that crosses on both sides, overlapping.
        let pattern: Vec<u8> = (0..16u8).collect();
        let mut at = 0;
        m.for_each_piece_mut(va + G - 8, 16, |piece| {
            let n = piece.len();
            piece.copy_from_slice(&pattern[at..at + n]);
            at += n;
            Ok::<(), CudaError>(())
        })
        .unwrap();
        m.copy(va + G - 6, va + G - 8, 16).unwrap();
        let mut got = Vec::new();
        m.for_each_piece(va + G - 8, 18, |piece| {
            got.extend_from_slice(piece);
            Ok::<(), CudaError>(())
        })
        .unwrap();
        let mut want = vec![0u8, 1];
        want.extend(0..16u8);
        assert_eq!(got, want);
        // The gap at 2G..3G stops a range, as does the end of the last mapping.
        assert_eq!(m.check(va + 2 * G - 4, 8), Err(CudaError::INVALID_VALUE));
        assert_eq!(m.check(va + 4 * G - 4, 8), Err(CudaError::INVALID_VALUE));
        assert_eq!(m.check(va, 2 * G), Ok(()));
        // Plain allocations never join.
        let a = m.malloc(4096).unwrap();
        let b = m.malloc(4096).unwrap();
        if b == a + 4096 {
            assert_eq!(m.check(a + 4000, 200), Err(CudaError::INVALID_VALUE));
        }
        assert_eq!(m.fill(a + 4000, 0, 200), Err(CudaError::INVALID_VALUE));
    }

    #[test]
    fn vmm_export_import_between_tables_and_reset() {
        const G: u64 = VMM_GRANULARITY;
        let gpu = EmuGpu::new(0, 64 << 20);
        let mut a = DeviceMemory::new(gpu.clone(), 0);
        let mut b = DeviceMemory::new(gpu.clone(), 0);
        let h = a.create_physical(G).unwrap();
        let (file, len) = a.export_physical(h).unwrap();
        let hb = b.import_physical(file, len).unwrap();
        assert_eq!(b.held(), 0, "the exporter pays");
        let (va, vb) = (
            a.reserve_address(G, 0).unwrap(),
            b.reserve_address(G, 0).unwrap(),
        );
        a.map(va, G, 0, h).unwrap();
        b.map(vb, G, 0, hb).unwrap();
        a.set_access(va, G, true).unwrap();
        b.set_access(vb, G, true).unwrap();
        a.fill(va + 100, 9, 3).unwrap();
        assert_eq!(b.slice(vb + 100, 3).unwrap(), &[9; 3]);
        a.reset();
        assert_eq!(gpu.free_memory(), 64 << 20);
        assert_eq!(a.map(va, G, 0, h), Err(CudaError::INVALID_VALUE));
    }
}
