//! What `rcud smi` and NVML ask of a device: its status on the server
//! (`DeviceStatus`), without attaching to it, so that asking creates no
//! context on the GPU.

use rcud_proto::ops::{rep, req};
use rcud_proto::CudaError;

use super::Runtime;
use crate::session::Session;

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
        let pid = std::process::id();
        if st.session.is_some() && st.session_pid != pid {
            // Forked: the parent's connection is not ours to use (see
            // `ready_session`); a fresh one, attached later as needed.
            std::mem::forget(std::mem::take(st));
        }
        if st.session.is_none() {
            let dev = &self.devices[d];
            match Session::connect_secured(
                &dev.server,
                &self.client_name,
                self.transport,
                &self.security,
            ) {
                Ok(s) => {
                    st.session = Some(s);
                    st.session_pid = pid;
                }
                Err(e) => return Err(self.lost(st, d, &e)),
            }
        }
        let session = st.session.as_mut().ok_or(CudaError::DEVICES_UNAVAILABLE)?;
        match session.call(&req::DeviceStatus { gpu }, &[], &mut []) {
            Ok(Ok(reply)) => Ok(reply),
            Ok(Err(failure)) => Err(failure.code),
            Err(e) => Err(self.lost(st, d, &e)),
        }
    }
}
