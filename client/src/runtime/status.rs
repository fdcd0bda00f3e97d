//! What `rcud smi` and NVML ask of a device: its status on the server
//! (`DeviceStatus`), without attaching to it, so that asking creates no
//! context on the GPU.

use rcud_proto::ops::{rep, req};
use rcud_proto::CudaError;

use super::Runtime;

impl Runtime {
    /// Memory, utilisation and clients of device `device` as its server
    /// sees them. Uses the device's session, connecting it (unattached) on
    /// first use; queued work of the application goes first.
    pub fn device_status(&self, device: i32) -> Result<rep::DeviceStatus, CudaError> {
        let d = self.check_device(device)?;
        let gpu = self.devices[d].gpu;
        let mut guard = self.lock_idle(d);
        let st = &mut *guard;
        self.flush_locked(st, d)?;
        let session = self.connected_session(st, d)?;
        match session.call(&req::DeviceStatus { gpu }, &[], &mut []) {
            Ok(Ok(reply)) => Ok(reply),
            Ok(Err(failure)) => Err(failure.code),
            Err(e) => Err(self.lost(st, d, &e)),
        }
    }
}
