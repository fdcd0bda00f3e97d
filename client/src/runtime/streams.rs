//! Streams and events.

use std::sync::atomic::Ordering;

use rcud_proto::ops::req;
use rcud_proto::CudaError;

use super::{
    ipc_events, report, EventState, PrintfSink, Runtime, StreamState, EVENT_DISABLE_TIMING,
    EVENT_FLAGS, EVENT_INTERPROCESS, STREAM_FLAGS, STREAM_PRIORITY_GREATEST, STREAM_PRIORITY_LEAST,
};
use crate::session::Completion;

impl Runtime {
    // ---- streams and events --------------------------------------------

    /// Where `cudaDeviceSynchronize`-style `printf` output goes (the C layer
    /// writes it to the application's `stdout`).
    pub fn set_printf_sink(&self, sink: PrintfSink) {
        let _ = self.printf_sink.set(sink);
    }

    pub(super) fn new_handle(&self) -> u64 {
        self.next_handle.fetch_add(16, Ordering::Relaxed)
    }

    /// The device a stream belongs to; the special streams mean the calling
    /// thread's current device.
    pub fn stream_device(&self, stream: u64) -> Result<usize, CudaError> {
        match stream {
            0..=2 => self.current_device(),
            s => self
                .streams
                .lock()
                .get(&s)
                .map(|st| st.device)
                .ok_or(CudaError::INVALID_RESOURCE_HANDLE),
        }
    }

    /// `cudaStreamCreateWithPriority` on the current device.
    pub fn stream_create(&self, flags: u32, priority: i32) -> Result<u64, CudaError> {
        if flags & !STREAM_FLAGS != 0 {
            return Err(CudaError::INVALID_VALUE);
        }
        let device = self.current_device()?;
        let priority = priority.clamp(STREAM_PRIORITY_GREATEST, STREAM_PRIORITY_LEAST);
        let handle = self.new_handle();
        self.streams.lock().insert(
            handle,
            StreamState {
                device,
                flags,
                priority,
            },
        );
        Ok(handle)
    }

    /// `cudaStreamDestroy`: work already queued on it still completes.
    pub fn stream_destroy(&self, stream: u64) -> Result<(), CudaError> {
        self.streams
            .lock()
            .remove(&stream)
            .map(|_| ())
            .ok_or(CudaError::INVALID_RESOURCE_HANDLE)
    }

    /// A stream's priority set anew (`cudaLaunchAttributePriority` on the
    /// stream), clamped to the range as at creation; the special streams
    /// keep theirs.
    pub fn stream_set_priority(&self, stream: u64, priority: i32) -> Result<(), CudaError> {
        if stream <= 2 {
            self.current_device()?;
            return Ok(());
        }
        let mut streams = self.streams.lock();
        let st = streams
            .get_mut(&stream)
            .ok_or(CudaError::INVALID_RESOURCE_HANDLE)?;
        st.priority = priority.clamp(STREAM_PRIORITY_GREATEST, STREAM_PRIORITY_LEAST);
        Ok(())
    }

    /// `(flags, priority)` of a stream.
    pub fn stream_info(&self, stream: u64) -> Result<(u32, i32), CudaError> {
        match stream {
            0..=2 => {
                self.current_device()?;
                Ok((0, STREAM_PRIORITY_LEAST))
            }
            s => self
                .streams
                .lock()
                .get(&s)
                .map(|st| (st.flags, st.priority))
                .ok_or(CudaError::INVALID_RESOURCE_HANDLE),
        }
    }

    /// `cudaStreamSynchronize`: the device's queued work is sent and
    /// answered (the server runs a device's operations in order, to
    /// completion).
    pub fn stream_synchronize(&self, stream: u64) -> Result<(), CudaError> {
        let d = self.stream_device(stream)?;
        self.synchronize_device(d)
    }

    /// Whether device `d` has work queued or in flight; the progress
    /// thread is woken to send it.
    fn device_busy(&'static self, d: usize) -> bool {
        let busy = {
            let st = self.states[d].lock();
            st.flushing || st.queued_since.is_some() || !st.held.is_empty()
        };
        if busy {
            self.wake_progress();
        }
        busy
    }

    /// `cudaStreamQuery`: `cudaErrorNotReady` while the device's work is
    /// queued or running (a device's streams share its queue), else what a
    /// synchronization reports.
    pub fn stream_query(&'static self, stream: u64) -> Result<(), CudaError> {
        let d = self.stream_device(stream)?;
        if self.device_busy(d) {
            return Err(CudaError::NOT_READY);
        }
        self.synchronize_device(d)
    }

    /// `cudaEventQuery`: complete once the reply to its record arrived (an
    /// event never recorded is complete).
    pub fn event_query(&'static self, event: u64) -> Result<(), CudaError> {
        let (device, timestamp) = {
            let events = self.events.lock();
            let e = events
                .get(&event)
                .ok_or(CudaError::INVALID_RESOURCE_HANDLE)?;
            if let Some(ipc) = &e.ipc {
                // Every process's records count; this one's go out soon.
                if !ipc.reached(ipc.issued()) {
                    self.wake_progress();
                    return Err(CudaError::NOT_READY);
                }
                return Ok(());
            }
            (e.device, e.timestamp)
        };
        match (device, timestamp) {
            (None, _) | (Some(_), Some(_)) => Ok(()),
            (Some(d), None) if self.device_busy(d) => Err(CudaError::NOT_READY),
            // The record failed: its error is the device's.
            (Some(d), None) => self.synchronize_device(d),
        }
    }

    /// `cudaStreamWaitEvent`: work on one device already runs in order, so only
    /// an event of another device needs waiting for, now.
    pub fn stream_wait_event(&self, stream: u64, event: u64) -> Result<(), CudaError> {
        let d = self.stream_device(stream)?;
        if self.wait_interprocess(event)? {
            return Ok(());
        }
        let recorded_on = self
            .events
            .lock()
            .get(&event)
            .ok_or(CudaError::INVALID_RESOURCE_HANDLE)?
            .device;
        match recorded_on {
            Some(e) if e != d => self.synchronize_device(e),
            _ => Ok(()),
        }
    }

    /// For an interprocess event: waits until the records issued before
    /// now, in any process, completed (this process's own ones sent first),
    /// and returns true; false for other events. The host waits: rcud
    /// cannot make a remote stream wait for another process's server work.
    fn wait_interprocess(&self, event: u64) -> Result<bool, CudaError> {
        let (cell, target, own_device) = {
            let events = self.events.lock();
            let e = events
                .get(&event)
                .ok_or(CudaError::INVALID_RESOURCE_HANDLE)?;
            let Some(ipc) = &e.ipc else {
                return Ok(false);
            };
            let target = ipc.issued();
            if ipc.reached(target) {
                return Ok(true);
            }
            let cell = ipc.waiter().map_err(|_| CudaError::OPERATING_SYSTEM)?;
            (cell, target, e.device)
        };
        if let Some(d) = own_device {
            // This process's own records must reach the device first.
            self.synchronize_device(d)?;
        }
        ipc_events::wait_for(&cell, target);
        Ok(true)
    }

    /// `cudaIpcGetEventHandle`: the handle of an interprocess event.
    pub fn ipc_get_event_handle(
        &self,
        event: u64,
    ) -> Result<[u8; ipc_events::EVENT_HANDLE_BYTES], CudaError> {
        let events = self.events.lock();
        let e = events
            .get(&event)
            .ok_or(CudaError::INVALID_RESOURCE_HANDLE)?;
        e.ipc
            .as_ref()
            .map(|ipc| ipc.handle())
            .ok_or(CudaError::INVALID_RESOURCE_HANDLE)
    }

    /// `cudaIpcOpenEventHandle`: another process's interprocess event.
    pub fn ipc_open_event_handle(
        &self,
        handle: &[u8; ipc_events::EVENT_HANDLE_BYTES],
    ) -> Result<u64, CudaError> {
        self.current_device()?;
        let ipc = ipc_events::IpcEvent::open(handle)?;
        let event = self.new_handle();
        self.events.lock().insert(
            event,
            EventState {
                flags: EVENT_INTERPROCESS | EVENT_DISABLE_TIMING,
                device: None,
                timestamp: None,
                ipc: Some(ipc),
            },
        );
        Ok(event)
    }

    /// `cudaEventCreateWithFlags`.
    pub fn event_create(&self, flags: u32) -> Result<u64, CudaError> {
        if flags & !EVENT_FLAGS != 0
            || (flags & EVENT_INTERPROCESS != 0 && flags & EVENT_DISABLE_TIMING == 0)
        {
            return Err(CudaError::INVALID_VALUE);
        }
        let ipc = match flags & EVENT_INTERPROCESS {
            0 => None,
            _ => Some(ipc_events::IpcEvent::create().map_err(|e| {
                report(&format!(
                    "cudaEventCreate: an interprocess event needs shared memory: {e}"
                ));
                CudaError::MEMORY_ALLOCATION
            })?),
        };
        let handle = self.new_handle();
        self.events.lock().insert(
            handle,
            EventState {
                flags,
                device: None,
                timestamp: None,
                ipc,
            },
        );
        Ok(handle)
    }

    /// `cudaEventDestroy`.
    pub fn event_destroy(&self, event: u64) -> Result<(), CudaError> {
        self.events
            .lock()
            .remove(&event)
            .map(|_| ())
            .ok_or(CudaError::INVALID_RESOURCE_HANDLE)
    }

    /// `cudaEventRecord`: queued on the stream's device.
    pub fn event_record(&'static self, event: u64, stream: u64) -> Result<(), CudaError> {
        let d = self.stream_device(stream)?;
        {
            let mut events = self.events.lock();
            let e = events
                .get_mut(&event)
                .ok_or(CudaError::INVALID_RESOURCE_HANDLE)?;
            e.device = Some(d);
            e.timestamp = None;
            if let Some(ipc) = &mut e.ipc {
                ipc.record();
            }
        }
        self.enqueue(d, &req::EventRecord {}, &[], Completion::Event(event), 0)
    }

    /// `cudaEventSynchronize` and `cudaEventQuery`: an event never recorded
    /// is complete.
    pub fn event_synchronize(&self, event: u64) -> Result<(), CudaError> {
        if self.wait_interprocess(event)? {
            return Ok(());
        }
        let device = self
            .events
            .lock()
            .get(&event)
            .ok_or(CudaError::INVALID_RESOURCE_HANDLE)?
            .device;
        match device {
            Some(d) => self.synchronize_device(d),
            None => Ok(()),
        }
    }

    /// `cudaEventElapsedTime`, in milliseconds, between two completed events.
    pub fn event_elapsed_ms(&self, start: u64, end: u64) -> Result<f32, CudaError> {
        self.event_synchronize(start)?;
        self.event_synchronize(end)?;
        let events = self.events.lock();
        let (a, b) = (
            events
                .get(&start)
                .ok_or(CudaError::INVALID_RESOURCE_HANDLE)?,
            events.get(&end).ok_or(CudaError::INVALID_RESOURCE_HANDLE)?,
        );
        if (a.flags | b.flags) & EVENT_DISABLE_TIMING != 0 || a.device != b.device {
            return Err(CudaError::INVALID_RESOURCE_HANDLE);
        }
        match (a.timestamp, b.timestamp) {
            (Some(t0), Some(t1)) => Ok((t1 as f64 - t0 as f64) as f32 / 1e6),
            // Never recorded.
            _ => Err(CudaError::INVALID_RESOURCE_HANDLE),
        }
    }
}
