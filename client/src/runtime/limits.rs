//! `cudaDeviceSetLimit` / `cudaDeviceGetLimit` (and the driver's
//! `cuCtxSetLimit` / `cuCtxGetLimit`): the limits the device applies go to
//! the server, which says what is now in force; the rest have no meaning on
//! a remote device (no device runtime, no L2 to steer) and are checked,
//! kept and reported back, as the "accepted and reported" asks.

use rcud_proto::ops::{req, LIMIT_MALLOC_HEAP_SIZE, LIMIT_PRINTF_FIFO_SIZE, LIMIT_STACK_SIZE};
use rcud_proto::{CudaError, DeviceAttr};

use super::Runtime;

/// `cudaLimitDevRuntimeSyncDepth`.
const LIMIT_SYNC_DEPTH: i32 = 3;
/// `cudaLimitDevRuntimePendingLaunchCount`.
const LIMIT_PENDING_LAUNCHES: i32 = 4;
/// `cudaLimitMaxL2FetchGranularity`.
const LIMIT_L2_FETCH: i32 = 5;
/// `cudaLimitPersistingL2CacheSize`.
const LIMIT_PERSISTING_L2: i32 = 6;

/// CUDA's value of `limit` before anybody sets it.
fn default_limit(limit: i32) -> Result<u64, CudaError> {
    Ok(match limit {
        LIMIT_STACK_SIZE => 1024,
        LIMIT_PRINTF_FIFO_SIZE => 1 << 20,
        LIMIT_MALLOC_HEAP_SIZE => 8 << 20,
        LIMIT_SYNC_DEPTH => 2,
        LIMIT_PENDING_LAUNCHES => 2048,
        LIMIT_L2_FETCH => 64,
        LIMIT_PERSISTING_L2 => 0,
        // Not a limit at all: an invalid value, as NVIDIA's runtime answers
        // (seen on an H200).
        _ => return Err(CudaError::INVALID_VALUE),
    })
}

impl Runtime {
    /// `cudaDeviceGetLimit` on the current device.
    pub fn device_get_limit(&self, limit: i32) -> Result<u64, CudaError> {
        let d = self.current_device()?;
        let set = self.limits.lock().get(&(d, limit)).copied();
        match set {
            Some(v) => Ok(v),
            None => default_limit(limit),
        }
    }

    /// `cudaDeviceSetLimit` on the current device.
    pub fn device_set_limit(&self, limit: i32, value: u64) -> Result<(), CudaError> {
        let d = self.current_device()?;
        default_limit(limit)?;
        if limit == LIMIT_SYNC_DEPTH {
            // Devices of compute capability 9.0 and later have no device-side
            // synchronization to bound: CUDA refuses the limit there.
            let major = self.attribute(DeviceAttr::COMPUTE_CAPABILITY_MAJOR.0, d as i32)?;
            if major >= 9 {
                return Err(CudaError::UNSUPPORTED_LIMIT);
            }
        }
        let in_force = match limit {
            LIMIT_STACK_SIZE | LIMIT_PRINTF_FIFO_SIZE | LIMIT_MALLOC_HEAP_SIZE => {
                self.call(d, &req::SetLimit { limit, value }, &[], &mut [])?
                    .value
            }
            // A hint of at most 128 bytes: more is refused, as NVIDIA's
            // driver does (seen on an H200).
            LIMIT_L2_FETCH if value > 128 => return Err(CudaError::INVALID_VALUE),
            LIMIT_L2_FETCH => value,
            // No more than the device sets aside for persisting lines.
            LIMIT_PERSISTING_L2 => {
                let most = self
                    .attribute(DeviceAttr::MAX_PERSISTING_L2_CACHE_SIZE.0, d as i32)
                    .unwrap_or(0);
                value.min(u64::try_from(most).unwrap_or(0))
            }
            _ => value,
        };
        self.limits.lock().insert((d, limit), in_force);
        Ok(())
    }

    /// Forgets the limits set on device `d` (a reset).
    pub(super) fn forget_limits(&self, d: usize) {
        self.limits.lock().retain(|&(device, _), _| device != d);
    }
}
