//! Device memory, copies in every direction (synchronous, queued, pitched,
//! between devices) and the page-locked host memory table.

use std::ops::Bound;

use rcud_proto::codec::Blob;
use rcud_proto::ops::req;
use rcud_proto::CudaError;

use super::{MemcpyKind, Route, Runtime};
use crate::hostmem::{HostRegion, HOST_ALLOC_FLAGS};
use crate::session::{Completion, HostDst, HostSrc};

impl Runtime {
    /// `cudaMalloc` on the current device.
    pub fn malloc(&self, size: u64) -> Result<u64, CudaError> {
        let d = self.current_device()?;
        if size == 0 {
            return Ok(0);
        }
        let ptr = self.call(d, &req::Malloc { size }, &[], &mut [])?.ptr;
        self.allocs.write().insert(ptr, (size, d));
        Ok(ptr)
    }

    /// `cudaFree`: frees on the device that owns `ptr`.
    pub fn free(&self, ptr: u64) -> Result<(), CudaError> {
        let d = self.current_device()?;
        if ptr == 0 {
            return Ok(());
        }
        // Memory of `cudaMallocAsync` may be freed here too, once the work
        // queued before is done.
        if let Some((_, _, owner)) = self.allocation(ptr) {
            if self.pool_owns(ptr) {
                self.synchronize_device(owner)?;
                self.pool_free(ptr)?;
                return Ok(());
            }
        }
        let owner = self.allocs.read().get(&ptr).map(|&(_, d)| d);
        // Unknown pointers go to the current device, which rejects them; a
        // pointer freed twice gets the same answer.
        self.call(owner.unwrap_or(d), &req::Free { ptr }, &[], &mut [])?;
        self.allocs.write().remove(&ptr);
        Ok(())
    }

    /// The device that owns the allocation containing `ptr`.
    pub fn device_of(&self, ptr: u64) -> Option<usize> {
        self.allocation(ptr).map(|(_, _, d)| d)
    }

    /// The device allocation containing `ptr`: (base, length, device).
    pub fn allocation(&self, ptr: u64) -> Option<(u64, u64, usize)> {
        self.allocs
            .read()
            .range((Bound::Unbounded, Bound::Included(ptr)))
            .next_back()
            .filter(|(&base, &(len, _))| ptr < base + len)
            .map(|(&base, &(len, d))| (base, len, d))
    }

    /// The page-locked host region containing `ptr`: (base, length, flags).
    pub fn host_region(&self, ptr: u64) -> Option<(u64, u64, u32)> {
        self.host
            .lock()
            .lookup(ptr)
            .map(|(base, r)| (base, r.len, r.flags))
    }

    /// `cudaMemGetInfo` of the current device: (free, total).
    pub fn mem_get_info(&self) -> Result<(u64, u64), CudaError> {
        let d = self.current_device()?;
        let r = self.call(d, &req::MemGetInfo {}, &[], &mut [])?;
        Ok((r.free, r.total))
    }

    /// `cudaDeviceSynchronize` on the current device.
    pub fn synchronize(&self) -> Result<(), CudaError> {
        let d = self.current_device()?;
        self.call(d, &req::DeviceSynchronize {}, &[], &mut [])?;
        Ok(())
    }

    /// `cudaDeviceReset`: releases everything this process holds on the current
    /// device and clears its errors; the next call reconnects.
    pub fn reset(&self) -> Result<(), CudaError> {
        let d = self.current_device()?;
        self.reset_device(d)
    }

    /// Frees everything device `d` held for this process and clears its errors.
    pub(super) fn reset_device(&self, d: usize) -> Result<(), CudaError> {
        let mut guard = self.lock_idle(d);
        let st = &mut *guard;
        // Queued work runs first; its errors die with the context.
        let _ = self.flush_locked(st, d);
        st.async_error = None;
        if let (Some(session), true) = (st.session.as_mut(), st.attached) {
            // Closing the connection frees everything server-side anyway; the
            // explicit reset keeps the connection for the next call.
            match session.call(&req::DeviceReset {}, &[], &mut []) {
                Ok(_) => {}
                Err(_) => {
                    st.session = None;
                    st.attached = false;
                }
            }
        }
        st.sticky = None;
        st.sticky_unseen = false;
        st.flags = 0;
        st.forget_remote();
        drop(guard);
        self.allocs.write().retain(|_, &mut (_, owner)| owner != d);
        self.forget_pools(d);
        self.forget_limits(d);
        Ok(())
    }

    /// Resolves a `cudaMemcpy` direction to devices.
    pub fn memcpy_route(&self, dst: u64, src: u64, kind: MemcpyKind) -> Result<Route, CudaError> {
        let current = || self.current_device();
        let on = |ptr: u64| -> Result<usize, CudaError> {
            match self.device_of(ptr) {
                Some(d) => Ok(d),
                None => current(),
            }
        };
        Ok(match kind {
            MemcpyKind::HostToHost => Route::HostToHost,
            MemcpyKind::HostToDevice => Route::HostToDevice(on(dst)?),
            MemcpyKind::DeviceToHost => Route::DeviceToHost(on(src)?),
            MemcpyKind::DeviceToDevice => Route::DeviceToDevice {
                dst: on(dst)?,
                src: on(src)?,
            },
            MemcpyKind::Default => match (self.device_of(dst), self.device_of(src)) {
                (None, None) => Route::HostToHost,
                (Some(d), None) => Route::HostToDevice(d),
                (None, Some(s)) => Route::DeviceToHost(s),
                (Some(d), Some(s)) => Route::DeviceToDevice { dst: d, src: s },
            },
        })
    }

    /// `cudaIpcGetMemHandle`: exports the allocation holding `ptr` to other
    /// processes using the same server; the 64-byte handle opens it there.
    pub fn ipc_get_mem_handle(&self, ptr: u64) -> Result<[u8; 64], CudaError> {
        let d = self.device_of(ptr).ok_or(CudaError::INVALID_VALUE)?;
        let reply = self.call(d, &req::IpcGetMemHandle { ptr }, &[], &mut [])?;
        <[u8; 64]>::try_from(reply.handle.0.as_slice()).map_err(|_| CudaError::UNKNOWN)
    }

    /// `cudaIpcOpenMemHandle` on the current device: the address of the
    /// other process's allocation here.
    pub fn ipc_open_mem_handle(&self, handle: &[u8; 64]) -> Result<u64, CudaError> {
        let d = self.current_device()?;
        let request = req::IpcOpenMemHandle {
            handle: Blob(handle.to_vec()),
        };
        let reply = self.call(d, &request, &[], &mut [])?;
        self.allocs.write().insert(reply.ptr, (reply.len, d));
        Ok(reply.ptr)
    }

    /// `cudaIpcCloseMemHandle`: unmaps what [`Runtime::ipc_open_mem_handle`]
    /// mapped at `ptr`.
    pub fn ipc_close_mem_handle(&self, ptr: u64) -> Result<(), CudaError> {
        let d = match self.allocs.read().get(&ptr) {
            Some(&(_, d)) => d,
            None => return Err(CudaError::INVALID_VALUE),
        };
        self.call(d, &req::IpcCloseMemHandle { ptr }, &[], &mut [])?;
        self.allocs.write().remove(&ptr);
        Ok(())
    }

    // ---- virtual memory management (driver API) ---------------------------

    /// `cuMemCreate` on device `d`: the server's handle of a physical
    /// allocation of `size` bytes.
    pub fn vmm_create(&self, d: usize, size: u64) -> Result<u64, CudaError> {
        Ok(self.call(d, &req::MemCreate { size }, &[], &mut [])?.handle)
    }

    /// `cuMemRelease` of a server handle of device `d`.
    pub fn vmm_release(&self, d: usize, handle: u64) -> Result<(), CudaError> {
        self.call(d, &req::MemRelease { handle }, &[], &mut [])
            .map(|_| ())
    }

    /// `cuMemAddressReserve` in device `d`'s address window.
    pub fn vmm_reserve(&self, d: usize, size: u64, alignment: u64) -> Result<u64, CudaError> {
        let request = req::MemAddressReserve { size, alignment };
        Ok(self.call(d, &request, &[], &mut [])?.ptr)
    }

    /// `cuMemAddressFree`.
    pub fn vmm_free_address(&self, d: usize, ptr: u64, size: u64) -> Result<(), CudaError> {
        self.call(d, &req::MemAddressFree { ptr, size }, &[], &mut [])
            .map(|_| ())
    }

    /// `cuMemMap`: the mapping becomes device memory of `d` to the
    /// allocation table (copies find their direction by it; the server
    /// refuses them until access is set).
    pub fn vmm_map(
        &self,
        d: usize,
        ptr: u64,
        size: u64,
        offset: u64,
        handle: u64,
    ) -> Result<(), CudaError> {
        let request = req::MemMap {
            ptr,
            size,
            offset,
            handle,
        };
        self.call(d, &request, &[], &mut [])?;
        self.allocs.write().insert(ptr, (size, d));
        Ok(())
    }

    /// `cuMemUnmap`: whole mappings of `[ptr, ptr + size)` on device `d`.
    pub fn vmm_unmap(&self, d: usize, ptr: u64, size: u64) -> Result<(), CudaError> {
        self.call(d, &req::MemUnmap { ptr, size }, &[], &mut [])?;
        let end = ptr.saturating_add(size);
        self.allocs
            .write()
            .retain(|&base, _| base < ptr || base >= end);
        Ok(())
    }

    /// `cuMemSetAccess` for device `d` (`flags`: `CUmemAccess_flags`).
    pub fn vmm_set_access(
        &self,
        d: usize,
        ptr: u64,
        size: u64,
        flags: u32,
    ) -> Result<(), CudaError> {
        self.call(d, &req::MemSetAccess { ptr, size, flags }, &[], &mut [])
            .map(|_| ())
    }

    /// `cuMemExportToShareableHandle`: the 64-byte token that imports the
    /// physical allocation in another process using the same server.
    pub fn vmm_export(&self, d: usize, handle: u64) -> Result<[u8; 64], CudaError> {
        let reply = self.call(d, &req::MemExport { handle }, &[], &mut [])?;
        <[u8; 64]>::try_from(reply.token.0.as_slice()).map_err(|_| CudaError::UNKNOWN)
    }

    /// `cuMemImportFromShareableHandle` on device `d`: (server handle, size).
    pub fn vmm_import(&self, d: usize, token: &[u8; 64]) -> Result<(u64, u64), CudaError> {
        let request = req::MemImport {
            token: Blob(token.to_vec()),
        };
        let reply = self.call(d, &request, &[], &mut [])?;
        Ok((reply.handle, reply.size))
    }

    // ---- stream memory operations (driver API) ----------------------------

    /// Queued `cuStreamWriteValue32/64`: `size` (4 or 8) bytes of `value`.
    pub fn stream_write_value(
        &'static self,
        stream: u64,
        addr: u64,
        value: u64,
        size: u32,
    ) -> Result<(), CudaError> {
        let d = self.stream_device(stream)?;
        self.check_device_range(d, addr, u64::from(size))?;
        let request = req::StreamWriteValue { addr, value, size };
        self.enqueue(d, &request, &[], Completion::Status, 0)
    }

    /// Queued `cuStreamWaitValue32/64` (`flags`: `CUstreamWaitValue_flags`).
    pub fn stream_wait_value(
        &'static self,
        stream: u64,
        addr: u64,
        value: u64,
        size: u32,
        flags: u32,
    ) -> Result<(), CudaError> {
        let d = self.stream_device(stream)?;
        self.check_device_range(d, addr, u64::from(size))?;
        let request = req::StreamWaitValue {
            addr,
            value,
            size,
            flags,
        };
        self.enqueue(d, &request, &[], Completion::Status, 0)
    }

    /// Host-to-device copy of `src` to `dst` on device `d`.
    pub fn memcpy_htod(&self, d: usize, dst: u64, src: &[u8]) -> Result<(), CudaError> {
        let len = src.len() as u64;
        self.call(d, &req::MemcpyHtoD { dst, len }, src, &mut [])?;
        Ok(())
    }

    /// Device-to-host copy from `src` on device `d` into `dst`.
    pub fn memcpy_dtoh(&self, d: usize, dst: &mut [u8], src: u64) -> Result<(), CudaError> {
        let len = dst.len() as u64;
        self.call(d, &req::MemcpyDtoH { src, len }, &[], dst)?;
        Ok(())
    }

    /// Device-to-device copy, complete when it returns. Between two GPUs of
    /// one server, the server moves the bytes from one agent to the other
    /// (see [`Runtime::memcpy_between_agents`]); between servers they travel
    /// through this host, in bounded pieces.
    pub fn memcpy_dtod(
        &self,
        dst_dev: usize,
        dst: u64,
        src_dev: usize,
        src: u64,
        len: u64,
    ) -> Result<(), CudaError> {
        if dst_dev == src_dev {
            self.call(dst_dev, &req::MemcpyDtoD { dst, src, len }, &[], &mut [])?;
            return Ok(());
        }
        if len == 0 {
            return Ok(());
        }
        if let Some(done) = self.memcpy_between_agents(dst_dev, dst, src_dev, src, len) {
            return done;
        }
        const PIECE: u64 = 8 << 20;
        let mut staging = vec![0u8; len.min(PIECE) as usize];
        let mut done = 0;
        while done < len {
            let n = (len - done).min(PIECE) as usize;
            self.memcpy_dtoh(src_dev, &mut staging[..n], src + done)?;
            self.memcpy_htod(dst_dev, dst + done, &staging[..n])?;
            done += n as u64;
        }
        Ok(())
    }

    /// A copy between two GPUs of one server, done by the server: the
    /// destination's agent receives straight from the source's agent. `None`
    /// when the two sessions are not on one server instance (or it offers no
    /// such copies); the caller then copies through this host.
    ///
    /// Both devices' queued work completes first (the legacy default
    /// stream's ordering). `PeerReceive` goes to the destination on a
    /// helper thread, because its agent answers only once the bytes are in;
    /// `PeerSend` to the source runs here meanwhile.
    fn memcpy_between_agents(
        &self,
        dst_dev: usize,
        dst: u64,
        src_dev: usize,
        src: u64,
        len: u64,
    ) -> Option<Result<(), CudaError>> {
        // Devices are always locked in ordinal order: two threads copying in
        // opposite directions cannot deadlock.
        let (first, second) = (dst_dev.min(src_dev), dst_dev.max(src_dev));
        let mut first_guard = self.lock_idle(first);
        let mut second_guard = self.lock_idle(second);
        let (dst_st, src_st) = if first == dst_dev {
            (&mut *first_guard, &mut *second_guard)
        } else {
            (&mut *second_guard, &mut *first_guard)
        };
        let ready = |st: &mut super::DeviceState, d: usize| -> Result<(), CudaError> {
            self.flush_locked(st, d)?;
            self.ready_session(st, d).map(|_| ())
        };
        if let Err(e) = ready(dst_st, dst_dev).and_then(|()| ready(src_st, src_dev)) {
            return Some(Err(e));
        }
        let (Some(dst_session), Some(src_session)) =
            (dst_st.session.as_mut(), src_st.session.as_mut())
        else {
            return Some(Err(CudaError::DEVICES_UNAVAILABLE));
        };
        let instance = dst_session.server_hello().instance;
        if instance == [0; 16] || src_session.server_hello().instance != instance {
            return None;
        }
        let listen = match dst_session.call(&req::PeerListen {}, &[], &mut []) {
            Ok(Ok(r)) => r,
            // The server cannot meet its own agents (no local sockets): the
            // copy through this host still works, and reports the device's
            // own errors.
            Ok(Err(f)) => {
                tracing::debug!(
                    "copies between GPUs of {} go through this host: {f}",
                    dst_session.server()
                );
                return None;
            }
            Err(e) => return Some(Err(self.lost(dst_st, dst_dev, &e))),
        };
        let receive = req::PeerReceive {
            dst,
            len,
            ticket: listen.ticket,
        };
        let send = req::PeerSend {
            src,
            len,
            endpoint: listen.endpoint,
            ticket: listen.ticket,
        };
        let outcome = std::thread::scope(|scope| {
            let receiver = std::thread::Builder::new()
                .name("rcud-peer-copy".into())
                .spawn_scoped(scope, || dst_session.call(&receive, &[], &mut []));
            // Without the receiving thread nothing was sent: the copy goes
            // through this host instead.
            let receiver = receiver.ok()?;
            let sent = src_session.call(&send, &[], &mut []);
            Some((receiver.join(), sent))
        });
        let (received, sent) = outcome?;
        // The source's own failure (a bad pointer) is the one to report; the
        // destination's then only says that the copy was called off.
        let sent = match sent {
            Ok(Ok(_)) => Ok(()),
            Ok(Err(f)) => Err(self.failed(src_st, src_dev, &f)),
            Err(e) => Err(self.lost(src_st, src_dev, &e)),
        };
        let received = match received {
            Ok(Ok(Ok(_))) => Ok(()),
            Ok(Ok(Err(f))) if sent.is_err() => Err(f.code),
            Ok(Ok(Err(f))) => Err(self.failed(dst_st, dst_dev, &f)),
            Ok(Err(e)) => Err(self.lost(dst_st, dst_dev, &e)),
            // `Session::call` does not panic; were it to, the connection's
            // state would be unknown.
            Err(_) => {
                dst_st.session = None;
                dst_st.attached = false;
                dst_st.forget_remote();
                Err(CudaError::DEVICES_UNAVAILABLE)
            }
        };
        Some(sent.and(received))
    }

    /// `cudaMemset` of `len` bytes at `dst`.
    pub fn memset(&self, dst: u64, value: u8, len: u64) -> Result<(), CudaError> {
        let d = match self.device_of(dst) {
            Some(d) => d,
            None => self.current_device()?,
        };
        self.call(d, &req::Memset { dst, value, len }, &[], &mut [])?;
        Ok(())
    }

    // ---- page-locked host memory ---------------------------------------

    /// Validates `cudaHostAlloc` flags.
    pub fn check_host_alloc_flags(flags: u32) -> Result<(), CudaError> {
        if flags & !HOST_ALLOC_FLAGS != 0 {
            return Err(CudaError::INVALID_VALUE);
        }
        Ok(())
    }

    /// Records memory the C layer allocated for `cudaHostAlloc`.
    pub fn host_alloc_insert(&self, base: u64, len: u64, flags: u32) {
        self.host.lock().insert_allocated(base, len, flags);
    }

    /// Forgets an allocation for `cudaFreeHost`, returning it for release.
    pub fn host_alloc_remove(&self, base: u64) -> Result<HostRegion, CudaError> {
        self.host.lock().remove_allocated(base)
    }

    /// `cudaHostRegister`.
    pub fn host_register(&self, base: u64, len: u64, flags: u32) -> Result<(), CudaError> {
        self.host.lock().register(base, len, flags)
    }

    /// `cudaHostUnregister`.
    pub fn host_unregister(&self, base: u64) -> Result<(), CudaError> {
        self.host.lock().unregister(base)
    }

    /// `cudaHostGetDevicePointer`: with unified addressing, the device address
    /// of page-locked host memory is its host address.
    pub fn host_device_pointer(&self, host: u64, flags: u32) -> Result<u64, CudaError> {
        if flags != 0 {
            return Err(CudaError::INVALID_VALUE);
        }
        self.host
            .lock()
            .lookup(host)
            .map(|_| host)
            .ok_or(CudaError::INVALID_VALUE)
    }

    // ---- asynchronous copies and launches -------------------------------

    /// Checks that `[ptr, ptr + len)` is device memory of device `d`, so that
    /// an asynchronous call can fail at once, as CUDA's does.
    pub(super) fn check_device_range(&self, d: usize, ptr: u64, len: u64) -> Result<(), CudaError> {
        let allocs = self.allocs.read();
        let ok = allocs
            .range((Bound::Unbounded, Bound::Included(ptr)))
            .next_back()
            .is_some_and(|(&base, &(size, owner))| {
                owner == d && ptr.checked_add(len).is_some_and(|end| end <= base + size)
            });
        if ok {
            Ok(())
        } else {
            Err(CudaError::INVALID_VALUE)
        }
    }

    /// Whether `[ptr, ptr + len)` is page-locked host memory.
    pub fn is_pinned(&self, ptr: u64, len: u64) -> bool {
        self.host
            .lock()
            .lookup(ptr)
            .is_some_and(|(base, r)| ptr + len <= base + r.len)
    }

    /// Queued host-to-device copy: the bytes are taken now, so the caller may
    /// reuse its buffer at once (CUDA's rule for pageable memory, and allowed
    /// for page-locked memory).
    pub fn memcpy_htod_async(
        &'static self,
        d: usize,
        dst: u64,
        src: &[u8],
    ) -> Result<(), CudaError> {
        let len = src.len() as u64;
        self.check_device_range(d, dst, len)?;
        self.enqueue(d, &req::MemcpyHtoD { dst, len }, src, Completion::Status, 0)
    }

    /// Queued host-to-device copy from page-locked memory, read when the copy
    /// is sent (after the host functions queued before it have run).
    pub fn memcpy_htod_async_from(
        &'static self,
        d: usize,
        dst: u64,
        src: Box<dyn HostSrc>,
    ) -> Result<(), CudaError> {
        let len = src.len() as u64;
        self.check_device_range(d, dst, len)?;
        self.enqueue_from(d, req::MemcpyHtoD { dst, len }, src)
    }

    /// Queued 2-D host-to-device copy from page-locked memory: `src` yields
    /// the `height` rows of `width` bytes, packed, when the copy is sent.
    pub fn memcpy2d_htod_async_from(
        &'static self,
        d: usize,
        dst: u64,
        dpitch: u64,
        width: u64,
        height: u64,
        src: Box<dyn HostSrc>,
    ) -> Result<(), CudaError> {
        let req = req::Memcpy2DHtoD {
            dst,
            dpitch,
            width,
            height,
        };
        self.enqueue_from(d, req, src)
    }

    /// Queued device-to-host copy into page-locked memory, written when the
    /// reply arrives (at the latest by the next synchronizing call).
    pub fn memcpy_dtoh_async(
        &'static self,
        d: usize,
        dst: Box<dyn HostDst>,
        src: u64,
        len: u64,
    ) -> Result<(), CudaError> {
        self.check_device_range(d, src, len)?;
        self.enqueue(
            d,
            &req::MemcpyDtoH { src, len },
            &[],
            Completion::ToHost(dst),
            len,
        )
    }

    /// Queued copy within one device.
    pub fn memcpy_dtod_async(
        &'static self,
        d: usize,
        dst: u64,
        src: u64,
        len: u64,
    ) -> Result<(), CudaError> {
        self.check_device_range(d, dst, len)?;
        self.check_device_range(d, src, len)?;
        self.enqueue(
            d,
            &req::MemcpyDtoD { dst, src, len },
            &[],
            Completion::Status,
            0,
        )
    }

    /// Queued `cudaMemsetAsync`.
    pub fn memset_async(
        &'static self,
        dst: u64,
        value: u8,
        len: u64,
        stream: u64,
    ) -> Result<(), CudaError> {
        let d = self.stream_device(stream)?;
        self.check_device_range(d, dst, len)?;
        self.enqueue(
            d,
            &req::Memset { dst, value, len },
            &[],
            Completion::Status,
            0,
        )
    }

    // ---- pitched memory and peers -----------------------------------------

    /// `cudaMallocPitch`: rows padded to the device's texture pitch alignment.
    pub fn malloc_pitch(&self, width: u64, height: u64) -> Result<(u64, u64), CudaError> {
        let d = self.current_device()?;
        let align = self.devices[d].props.texture_pitch_alignment.max(1);
        let pitch = width.div_ceil(align).max(1) * align;
        let size = pitch
            .checked_mul(height)
            .ok_or(CudaError::MEMORY_ALLOCATION)?;
        Ok((self.malloc(size)?, pitch))
    }

    /// Host-to-device copy of `height` rows of `width` bytes, packed in `src`,
    /// to rows `dpitch` apart at `dst`; queued when `stream` is given.
    #[allow(clippy::too_many_arguments)]
    pub fn memcpy2d_htod(
        &'static self,
        d: usize,
        dst: u64,
        dpitch: u64,
        width: u64,
        height: u64,
        src: &[u8],
        stream: Option<u64>,
    ) -> Result<(), CudaError> {
        let req = req::Memcpy2DHtoD {
            dst,
            dpitch,
            width,
            height,
        };
        match stream {
            Some(_) => self.enqueue(d, &req, src, Completion::Status, 0),
            None => self.call(d, &req, src, &mut []).map(|_| ()),
        }
    }

    /// Device-to-host copy of `height` rows of `width` bytes, `spitch` apart at
    /// `src`, packed into `dst`.
    pub fn memcpy2d_dtoh(
        &self,
        d: usize,
        dst: &mut [u8],
        src: u64,
        spitch: u64,
        width: u64,
        height: u64,
    ) -> Result<(), CudaError> {
        let req = req::Memcpy2DDtoH {
            src,
            spitch,
            width,
            height,
        };
        self.call(d, &req, &[], dst).map(|_| ())
    }

    /// Device-to-device copy between pitched regions of device `d`.
    #[allow(clippy::too_many_arguments)]
    pub fn memcpy2d_dtod(
        &'static self,
        d: usize,
        dst: u64,
        dpitch: u64,
        src: u64,
        spitch: u64,
        width: u64,
        height: u64,
        stream: Option<u64>,
    ) -> Result<(), CudaError> {
        let req = req::Memcpy2DDtoD {
            dst,
            dpitch,
            src,
            spitch,
            width,
            height,
        };
        match stream {
            Some(_) => self.enqueue(d, &req, &[], Completion::Status, 0),
            None => self.call(d, &req, &[], &mut []).map(|_| ()),
        }
    }

    /// `cudaMemset2D`, queued when `stream` is given.
    pub fn memset2d(
        &'static self,
        dst: u64,
        pitch: u64,
        value: u8,
        width: u64,
        height: u64,
        stream: Option<u64>,
    ) -> Result<(), CudaError> {
        let d = match (self.device_of(dst), stream) {
            (Some(d), _) => d,
            (None, Some(s)) => self.stream_device(s)?,
            (None, None) => self.current_device()?,
        };
        let req = req::Memset2D {
            dst,
            pitch,
            value,
            width,
            height,
        };
        match stream {
            Some(_) => self.enqueue(d, &req, &[], Completion::Status, 0),
            None => self.call(d, &req, &[], &mut []).map(|_| ()),
        }
    }

    /// `cudaDeviceCanAccessPeer`: remote GPUs never map each other's memory,
    /// so kernels on one cannot reach the other's; copies between them work
    /// all the same (see [`Runtime::memcpy_dtod`]).
    pub fn can_access_peer(&self, device: i32, peer: i32) -> Result<bool, CudaError> {
        self.check_device(device)?;
        self.check_device(peer)?;
        Ok(false)
    }

    /// `cudaMemcpyPeer`: device `src_dev`'s bytes to device `dst_dev`.
    pub fn memcpy_peer(
        &self,
        dst_dev: i32,
        dst: u64,
        src_dev: i32,
        src: u64,
        len: u64,
    ) -> Result<(), CudaError> {
        let dd = self.check_device(dst_dev)?;
        let sd = self.check_device(src_dev)?;
        if len == 0 {
            return Ok(());
        }
        self.memcpy_dtod(dd, dst, sd, src, len)
    }
}
