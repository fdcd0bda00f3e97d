//! Contexts, as the driver API sees them, and the runtime's device on top.
//!
//! Each device has one primary context, which is what the runtime API calls
//! "the device": `cudaSetDevice(d)` makes device `d`'s primary context
//! current. `cuCtxCreate` makes further contexts; every context of a device
//! shares that device's session, so memory, streams, events and modules are
//! the same objects whichever API made them. The current context is the top
//! of a per-thread stack (`cuCtxPushCurrent` / `cuCtxPopCurrent`;
//! `cuCtxSetCurrent` replaces the top).

use std::cell::RefCell;
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};

use rcud_proto::CudaError;

use super::Runtime;

/// Primary context handles are `PRIMARY_BASE + device * 16`: fixed, so that
/// every thread and both APIs see the same value for one device.
const PRIMARY_BASE: u64 = 0x7c00_0000;

thread_local! {
    /// This thread's context stack, top last: (handle, device).
    static STACK: RefCell<Vec<(u64, usize)>> = const { RefCell::new(Vec::new()) };
}

/// A context.
#[derive(Debug, Clone, Copy)]
pub struct ContextInfo {
    /// Its device ordinal.
    pub device: usize,
    /// `CU_CTX_*` flags.
    pub flags: u32,
    /// It is the device's primary context.
    pub primary: bool,
    /// `cuCtxGetId`.
    pub id: u64,
}

/// The context table of a process.
#[derive(Debug, Default)]
pub(super) struct Contexts {
    /// Contexts made by `cuCtxCreate`, by handle.
    created: HashMap<u64, ContextInfo>,
    /// Per device: retain count and flags of its primary context.
    primary: HashMap<usize, (u32, u32)>,
}

static NEXT_CONTEXT_ID: AtomicU64 = AtomicU64::new(1);

impl Runtime {
    /// The primary context handle of `device`.
    pub fn primary_context(&self, device: i32) -> Result<u64, CudaError> {
        let d = self.check_device(device)?;
        Ok(PRIMARY_BASE + d as u64 * 16)
    }

    fn primary_device(&self, handle: u64) -> Option<usize> {
        let offset = handle.checked_sub(PRIMARY_BASE)?;
        let d = (offset % 16 == 0).then_some((offset / 16) as usize)?;
        (d < self.devices.len()).then_some(d)
    }

    /// What `handle` is, or `INVALID_CONTEXT` for a destroyed or unknown one.
    pub fn context_info(&self, handle: u64) -> Result<ContextInfo, CudaError> {
        if let Some(d) = self.primary_device(handle) {
            let flags = self.contexts.lock().primary.get(&d).map_or(0, |p| p.1);
            return Ok(ContextInfo {
                device: d,
                flags,
                primary: true,
                id: d as u64 + 1,
            });
        }
        self.contexts
            .lock()
            .created
            .get(&handle)
            .copied()
            .ok_or(CudaError::INVALID_CONTEXT)
    }

    /// The calling thread's current context, if any (`cuCtxGetCurrent`).
    pub fn current_context(&self) -> Option<u64> {
        STACK.with(|s| s.borrow().last().map(|&(h, _)| h))
    }

    /// The current context's device, for driver calls: `INVALID_CONTEXT`
    /// when none is current or it was destroyed.
    pub fn context_device(&self) -> Result<usize, CudaError> {
        let (handle, d) = STACK
            .with(|s| s.borrow().last().copied())
            .ok_or(CudaError::INVALID_CONTEXT)?;
        // Primary contexts live as long as the process: no table to consult
        // on every launch.
        if self.primary_device(handle).is_some() {
            return Ok(d);
        }
        Ok(self.context_info(handle)?.device)
    }

    /// The runtime's device: the current context's, else device 0, whose
    /// primary context becomes current, as the runtime does on first use.
    pub(super) fn runtime_device(&self) -> usize {
        STACK.with(|s| {
            let mut s = s.borrow_mut();
            match s.last() {
                Some(&(_, d)) => d,
                None => {
                    s.push((PRIMARY_BASE, 0));
                    0
                }
            }
        })
    }

    /// `cudaSetDevice`: makes `d`'s primary context current.
    pub(super) fn bind_primary(&self, d: usize) {
        let top = (PRIMARY_BASE + d as u64 * 16, d);
        STACK.with(|s| {
            let mut s = s.borrow_mut();
            match s.last_mut() {
                Some(slot) => *slot = top,
                None => s.push(top),
            }
        });
    }

    /// `cuCtxCreate`: a new context on `device`, pushed as current.
    pub fn context_create(&self, device: i32, flags: u32) -> Result<u64, CudaError> {
        let d = self.check_device(device)?;
        let handle = self.new_handle();
        self.contexts.lock().created.insert(
            handle,
            ContextInfo {
                device: d,
                flags,
                primary: false,
                id: NEXT_CONTEXT_ID.fetch_add(1, Ordering::Relaxed) + 0x100,
            },
        );
        STACK.with(|s| s.borrow_mut().push((handle, d)));
        Ok(handle)
    }

    /// `cuCtxDestroy`: the context is gone for every thread; it leaves this
    /// thread's stack. A primary context cannot be destroyed this way.
    pub fn context_destroy(&self, handle: u64) -> Result<(), CudaError> {
        let info = self.context_info(handle)?;
        if info.primary {
            return Err(CudaError::INVALID_CONTEXT);
        }
        self.synchronize_device(info.device)?;
        self.contexts.lock().created.remove(&handle);
        STACK.with(|s| s.borrow_mut().retain(|&(h, _)| h != handle));
        Ok(())
    }

    /// `cuCtxPushCurrent`.
    pub fn context_push(&self, handle: u64) -> Result<(), CudaError> {
        let info = self.context_info(handle)?;
        STACK.with(|s| s.borrow_mut().push((handle, info.device)));
        Ok(())
    }

    /// `cuCtxPopCurrent`: the context that was current.
    pub fn context_pop(&self) -> Result<u64, CudaError> {
        STACK
            .with(|s| s.borrow_mut().pop())
            .map(|(h, _)| h)
            .ok_or(CudaError::INVALID_CONTEXT)
    }

    /// `cuCtxSetCurrent`: replaces the top of the stack; 0 empties the top.
    pub fn context_set_current(&self, handle: u64) -> Result<(), CudaError> {
        if handle == 0 {
            STACK.with(|s| s.borrow_mut().pop());
            return Ok(());
        }
        let info = self.context_info(handle)?;
        STACK.with(|s| {
            let mut s = s.borrow_mut();
            match s.last_mut() {
                Some(slot) => *slot = (handle, info.device),
                None => s.push((handle, info.device)),
            }
        });
        Ok(())
    }

    /// `cuDevicePrimaryCtxRetain`.
    pub fn primary_retain(&self, device: i32) -> Result<u64, CudaError> {
        let handle = self.primary_context(device)?;
        let d = self.check_device(device)?;
        self.contexts.lock().primary.entry(d).or_default().0 += 1;
        Ok(handle)
    }

    /// `cuDevicePrimaryCtxRelease`. The context's resources stay: the
    /// runtime keeps using it, as NVIDIA's runtime does.
    pub fn primary_release(&self, device: i32) -> Result<(), CudaError> {
        let d = self.check_device(device)?;
        let mut contexts = self.contexts.lock();
        let entry = contexts.primary.entry(d).or_default();
        if entry.0 == 0 {
            return Err(CudaError::INVALID_CONTEXT);
        }
        entry.0 -= 1;
        Ok(())
    }

    /// `cuDevicePrimaryCtxGetState`: (flags, active).
    pub fn primary_state(&self, device: i32) -> Result<(u32, bool), CudaError> {
        let d = self.check_device(device)?;
        let (count, flags) = self
            .contexts
            .lock()
            .primary
            .get(&d)
            .copied()
            .unwrap_or_default();
        let attached = self.states[d].lock().attached;
        Ok((flags, count > 0 || attached))
    }

    /// `cuDevicePrimaryCtxSetFlags`.
    pub fn primary_set_flags(&self, device: i32, flags: u32) -> Result<(), CudaError> {
        let d = self.check_device(device)?;
        self.contexts.lock().primary.entry(d).or_default().1 = flags;
        Ok(())
    }

    /// `cuDevicePrimaryCtxReset`: everything the device held is freed.
    pub fn primary_reset(&self, device: i32) -> Result<(), CudaError> {
        let d = self.check_device(device)?;
        self.reset_device(d)
    }

    /// `cuCtxSynchronize` and the driver's other waits on a device.
    pub fn device_synchronize(&self, d: usize) -> Result<(), CudaError> {
        self.synchronize_device(d)
    }
}
