//! Dynamic parallelism: kernels that launch kernels through the device
//! runtime (`cudaGetParameterBufferV2` then `cudaLaunchDeviceV2`, what nvcc
//! emits for `child<<<...>>>()` in device code).
//!
//! A parameter buffer comes from the device heap, so the parent writes the
//! child's arguments with ordinary stores. A launch is recorded; when the
//! parent grid has finished, its children run one after the other in launch
//! order, tail launches (`cudaStreamTailLaunch`) last, each child's own
//! children before its next sibling. CUDA 12 gives a parent no way to wait
//! for a child, and a grid is complete only when its children are, so this
//! order is one the hardware may take. The device runtime's
//! `cudaMemcpyAsync` and `cudaMemsetAsync` are queued the same way, in
//! order with the launches.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

use super::LaunchConfig;
use crate::memory::MemoryView;
use crate::ptx::Module;

/// Nesting depth of device launches CUDA allows (`cudaLimitDevRuntimeSyncDepth`
/// aside, 24 levels of grids).
pub(crate) const MAX_DEPTH: u32 = 24;
/// Launches one grid may have outstanding (`cudaLimitDevRuntimePendingLaunchCount`).
pub(crate) const MAX_PENDING: usize = 2048;

/// `cudaStreamTailLaunch`.
const STREAM_TAIL_LAUNCH: u64 = 0x3;

/// Device-runtime errors returned to the kernel.
const SUCCESS: u32 = 0;
const INVALID_VALUE: u32 = 1;
const MEMORY_ALLOCATION: u32 = 2;
const INVALID_CONFIGURATION: u32 = 9;
const LAUNCH_MAX_DEPTH_EXCEEDED: u32 = 65;
const LAUNCH_PENDING_COUNT_EXCEEDED: u32 = 69;
const INVALID_DEVICE_FUNCTION: u32 = 98;

/// A child grid between `cudaGetParameterBufferV2` and its launch.
#[derive(Debug, Clone)]
struct Pending {
    kernel: String,
    config: LaunchConfig,
    param_bytes: u32,
}

#[derive(Debug)]
enum Queued {
    Launch { pending: Pending, buffer: u64 },
    Work(ChildWork),
}

#[derive(Debug)]
struct Launched {
    queued: Queued,
    tail: bool,
}

/// What runs after the parent grid, in order.
#[derive(Debug, Clone)]
pub(crate) enum ChildWork {
    /// A child grid: kernel, configuration and the parameter bytes the
    /// parent wrote.
    Launch {
        kernel: String,
        config: LaunchConfig,
        params: Vec<u8>,
    },
    /// `cudaMemcpyAsync` between device addresses.
    Copy { dst: u64, src: u64, len: u64 },
    /// `cudaMemsetAsync`.
    Fill { dst: u64, value: u8, len: u64 },
}

/// The device launches of one grid.
#[derive(Debug)]
pub(crate) struct DeviceLaunches {
    /// Nesting depth of the grid (0 for a launch from the host).
    depth: u32,
    pending: Mutex<HashMap<u64, Pending>>,
    launched: Mutex<Vec<Launched>>,
    /// The last launch error of each thread that had one, by block and
    /// thread index, for the device's `cudaGetLastError`.
    last_error: Mutex<HashMap<Thread, u32>>,
    next_stream: AtomicU64,
}

/// A thread of the grid: block index and thread index.
pub(crate) type Thread = ([u32; 3], [u32; 3]);

impl DeviceLaunches {
    pub(crate) fn new(depth: u32) -> Self {
        Self {
            depth,
            pending: Mutex::new(HashMap::new()),
            launched: Mutex::new(Vec::new()),
            last_error: Mutex::new(HashMap::new()),
            next_stream: AtomicU64::new(0x100),
        }
    }

    /// `cudaGetParameterBufferV2`: a heap buffer for the arguments of
    /// kernel `func` (a function address), or 0 with the thread's error set
    /// when `func` is no kernel, the configuration is invalid or the heap is
    /// full.
    pub(crate) fn parameter_buffer(
        &self,
        module: &Module,
        view: &MemoryView<'_>,
        thread: Thread,
        func: u64,
        config: LaunchConfig,
    ) -> u64 {
        let kernel = crate::ptx::ir::func_of_addr(func)
            .and_then(|index| module.kernels.iter().find(|(_, k)| k.func == index));
        let Some((name, meta)) = kernel else {
            self.set_error(thread, INVALID_DEVICE_FUNCTION);
            return 0;
        };
        let limits = super::Limits::default();
        match super::check_config(module, name, &config, &limits) {
            Ok(()) => {}
            Err(super::KernelError::InvalidConfiguration(_)) => {
                self.set_error(thread, INVALID_CONFIGURATION);
                return 0;
            }
            Err(_) => {
                self.set_error(thread, INVALID_DEVICE_FUNCTION);
                return 0;
            }
        }
        let buffer = view
            .heap()
            .map_or(0, |h| h.malloc(u64::from(meta.info.param_bytes.max(1))));
        if buffer == 0 {
            self.set_error(thread, MEMORY_ALLOCATION);
            return 0;
        }
        let pending = Pending {
            kernel: name.clone(),
            config,
            param_bytes: meta.info.param_bytes,
        };
        self.lock_pending().insert(buffer, pending);
        buffer
    }

    /// `cudaLaunchDeviceV2`: records the launch of a filled buffer; the
    /// error the kernel sees, also kept for its `cudaGetLastError`.
    pub(crate) fn launch(&self, thread: Thread, buffer: u64, stream: u64) -> u32 {
        let e = self.try_launch(buffer, stream);
        if e != SUCCESS {
            self.set_error(thread, e);
        }
        e
    }

    fn try_launch(&self, buffer: u64, stream: u64) -> u32 {
        let Some(pending) = self.lock_pending().remove(&buffer) else {
            return INVALID_VALUE;
        };
        if self.depth + 1 >= MAX_DEPTH {
            return LAUNCH_MAX_DEPTH_EXCEEDED;
        }
        let mut launched = self.lock_launched();
        if launched.len() >= MAX_PENDING {
            return LAUNCH_PENDING_COUNT_EXCEEDED;
        }
        launched.push(Launched {
            queued: Queued::Launch { pending, buffer },
            tail: stream == STREAM_TAIL_LAUNCH,
        });
        SUCCESS
    }

    /// The device runtime's `cudaMemcpyAsync` (between device addresses) and
    /// `cudaMemsetAsync`: queued in order with the launches; the addresses
    /// are checked when the work runs, as on a GPU.
    pub(crate) fn queue_work(&self, thread: Thread, work: ChildWork) -> u32 {
        let mut launched = self.lock_launched();
        if launched.len() >= MAX_PENDING {
            drop(launched);
            self.set_error(thread, LAUNCH_PENDING_COUNT_EXCEEDED);
            return LAUNCH_PENDING_COUNT_EXCEEDED;
        }
        launched.push(Launched {
            queued: Queued::Work(work),
            tail: false,
        });
        SUCCESS
    }

    /// `cudaGetLastError` (`reset`) or `cudaPeekAtLastError` of a thread.
    pub(crate) fn last_error(&self, thread: Thread, reset: bool) -> u32 {
        let mut errors = self.last_error.lock().unwrap_or_else(|p| p.into_inner());
        if reset {
            errors.remove(&thread).unwrap_or(SUCCESS)
        } else {
            errors.get(&thread).copied().unwrap_or(SUCCESS)
        }
    }

    fn set_error(&self, thread: Thread, e: u32) {
        self.last_error
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(thread, e);
    }

    /// A handle for `cudaStreamCreateWithFlags`: streams order nothing
    /// here, since children run one at a time.
    pub(crate) fn stream(&self) -> u64 {
        self.next_stream.fetch_add(0x10, Ordering::Relaxed)
    }

    /// The grid's children in the order they run, with their parameters
    /// read from the heap (whose buffers are then freed). Buffers never
    /// launched are freed too.
    pub(crate) fn take_children(&self, view: &MemoryView<'_>) -> Vec<ChildWork> {
        let heap = view.heap();
        let free = |b: u64| {
            if let Some(h) = heap {
                h.free(b);
            }
        };
        for (b, _) in self.lock_pending().drain() {
            free(b);
        }
        let mut launched = std::mem::take(&mut *self.lock_launched());
        // Stable: launch order within each group, tail launches last.
        launched.sort_by_key(|l| l.tail);
        launched
            .into_iter()
            .map(|l| match l.queued {
                Queued::Work(w) => w,
                Queued::Launch { pending, buffer } => {
                    let n = u64::from(pending.param_bytes);
                    let params = (0..n)
                        .map(|i| {
                            view.region(buffer + i)
                                .and_then(|r| r.atomic_u8(buffer + i))
                                .map_or(0, |a| a.load(Ordering::Relaxed))
                        })
                        .collect();
                    free(buffer);
                    ChildWork::Launch {
                        kernel: pending.kernel,
                        config: pending.config,
                        params,
                    }
                }
            })
            .collect()
    }

    fn lock_pending(&self) -> std::sync::MutexGuard<'_, HashMap<u64, Pending>> {
        self.pending.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn lock_launched(&self) -> std::sync::MutexGuard<'_, Vec<Launched>> {
        self.launched.lock().unwrap_or_else(|p| p.into_inner())
    }
}
