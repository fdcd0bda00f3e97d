//! Remote calls and the queue of asynchronous work: synchronous calls,
//! batching, flushing, the progress thread, and lost connections.

use std::time::{Duration, Instant};

use rcud_proto::ops::{req, Failure, Op};
use rcud_proto::CudaError;

use super::{report, DeviceState, Held, Runtime};
use crate::session::{Completion, HostSrc, Session};
use crate::ClientError;

impl Runtime {
    // ---- remote calls --------------------------------------------------

    /// The attached session of device `d`, connecting and attaching on first
    /// use. Fails with the device's sticky error, if it has one.
    pub(super) fn ready_session<'a>(
        &self,
        st: &'a mut DeviceState,
        d: usize,
    ) -> Result<&'a mut Session, CudaError> {
        if let Some(e) = st.sticky {
            st.sticky_unseen = false;
            return Err(e);
        }
        let dev = &self.devices[d];
        if st.session.is_none() {
            match Session::connect_secured(
                &dev.server,
                &self.client_name,
                self.transport,
                &self.security,
            ) {
                Ok(s) => st.session = Some(s),
                Err(e) => return Err(self.lost(st, d, &e)),
            }
        }
        if !st.attached {
            let attach = match st.session.as_mut() {
                // The device ordinal names the address window: allocations
                // of GPUs on different servers never collide.
                Some(session) => session.call(
                    &req::Attach {
                        gpu: dev.gpu,
                        window: d as u32,
                    },
                    &[],
                    &mut [],
                ),
                None => return Err(CudaError::DEVICES_UNAVAILABLE),
            };
            match attach {
                Ok(Ok(_)) => st.attached = true,
                Ok(Err(f)) => return Err(f.code),
                Err(e) => return Err(self.lost(st, d, &e)),
            }
        }
        st.session.as_mut().ok_or(CudaError::DEVICES_UNAVAILABLE)
    }

    /// Runs `req` on device `d` and waits for its reply. Queued asynchronous
    /// work goes first; a failure of that work is returned instead of running
    /// `req`, as CUDA reports asynchronous errors at the next call.
    pub(super) fn call<O: Op>(
        &self,
        d: usize,
        req: &O,
        bulk_out: &[u8],
        bulk_in: &mut [u8],
    ) -> Result<O::Reply, CudaError> {
        let mut guard = self.states[d].lock();
        let st = &mut *guard;
        self.flush_locked(st, d)?;
        let session = self.ready_session(st, d)?;
        match session.call(req, bulk_out, bulk_in) {
            Ok(Ok(reply)) => Ok(reply),
            Ok(Err(failure)) => Err(self.failed(st, d, &failure)),
            Err(e) => Err(self.lost(st, d, &e)),
        }
    }

    /// Records a failure the server reported and returns its code.
    pub(super) fn failed(&self, st: &mut DeviceState, d: usize, failure: &Failure) -> CudaError {
        if !failure.message.is_empty() {
            report(&format!("device {d}: {failure}"));
        }
        if failure.code.is_sticky() {
            st.sticky = Some(failure.code);
        }
        failure.code
    }

    /// Queues an asynchronous operation on device `d`; it runs at the next
    /// flush (a synchronizing call, a full batch, or the progress thread).
    pub(super) fn enqueue<O: Op + Clone + Send + 'static>(
        &'static self,
        d: usize,
        req: &O,
        bulk_out: &[u8],
        completion: Completion,
        reply_bytes: u64,
    ) -> Result<(), CudaError> {
        let mut guard = self.states[d].lock();
        let st = &mut *guard;
        if st.session.as_ref().is_some_and(Session::batch_full) {
            self.flush_locked(st, d)?;
        }
        let holding = !st.held.is_empty();
        let session = self.ready_session(st, d)?;
        if !holding {
            session.enqueue(req, bulk_out, completion);
            session.expect_reply_bytes(reply_bytes);
        } else {
            let (req, bulk) = (req.clone(), bulk_out.to_vec());
            st.held.push_back(Held {
                apply: Box::new(move |s: &mut Session| {
                    s.enqueue(&req, &bulk, completion);
                    s.expect_reply_bytes(reply_bytes);
                }),
                callback: false,
            });
        }
        st.queued_since.get_or_insert_with(Instant::now);
        drop(guard);
        self.wake_progress();
        Ok(())
    }

    /// Queues a host-to-device copy (`req`) whose source is read when the
    /// copy is sent: behind a host function that has not run yet, the copy
    /// waits for it (with everything queued after it), so it sees what the
    /// function wrote, as CUDA's stream order requires.
    pub(super) fn enqueue_from<O: Op + Clone + Send + 'static>(
        &'static self,
        d: usize,
        req: O,
        src: Box<dyn HostSrc>,
    ) -> Result<(), CudaError> {
        let mut guard = self.states[d].lock();
        let st = &mut *guard;
        if st.session.as_ref().is_some_and(Session::batch_full) {
            self.flush_locked(st, d)?;
        }
        let holding = !st.held.is_empty();
        let session = self.ready_session(st, d)?;
        if !holding && !session.has_pending_callback() {
            session.enqueue(&req, &src.bytes(), Completion::Status);
        } else {
            st.held.push_back(Held {
                apply: Box::new(move |s: &mut Session| {
                    s.enqueue(&req, &src.bytes(), Completion::Status)
                }),
                callback: false,
            });
        }
        st.queued_since.get_or_insert_with(Instant::now);
        drop(guard);
        self.wake_progress();
        Ok(())
    }

    /// Queues a host function on device `d`, to run after the work before it.
    pub fn enqueue_host_fn(
        &'static self,
        stream: u64,
        f: Box<dyn FnOnce() + Send>,
    ) -> Result<(), CudaError> {
        let d = self.stream_device(stream)?;
        let mut guard = self.states[d].lock();
        let st = &mut *guard;
        let holding = !st.held.is_empty();
        let session = self.ready_session(st, d)?;
        if !holding {
            session.enqueue_callback(f);
        } else {
            st.held.push_back(Held {
                apply: Box::new(move |s: &mut Session| s.enqueue_callback(f)),
                callback: true,
            });
        }
        st.queued_since.get_or_insert_with(Instant::now);
        drop(guard);
        self.wake_progress();
        Ok(())
    }

    /// Sends device `d`'s queued work and applies what the replies say: event
    /// timestamps, `printf` output, and the first failure (sticky, or kept
    /// for the next call).
    pub(super) fn flush_locked(&self, st: &mut DeviceState, d: usize) -> Result<(), CudaError> {
        loop {
            self.flush_once(st, d)?;
            // The host functions queued so far have run: what waited for the
            // first of them is queued now, up to the next one.
            let Some(session) = st.session.as_mut() else {
                st.held.clear();
                return Ok(());
            };
            if st.held.is_empty() {
                return Ok(());
            }
            while let Some(h) = st.held.pop_front() {
                (h.apply)(session);
                if h.callback {
                    break;
                }
            }
        }
    }

    fn flush_once(&self, st: &mut DeviceState, d: usize) -> Result<(), CudaError> {
        st.queued_since = None;
        let Some(session) = st.session.as_mut() else {
            return Ok(());
        };
        if session.queued() == 0 {
            return Ok(());
        }
        let outcome = match session.flush() {
            Ok(o) => o,
            Err(e) => return Err(self.lost(st, d, &e)),
        };
        if !outcome.events.is_empty() {
            let mut events = self.events.lock();
            for (event, ts) in outcome.events {
                if let Some(e) = events.get_mut(&event) {
                    e.timestamp = Some(ts);
                }
            }
        }
        if !outcome.printf.is_empty() {
            match self.printf_sink.get() {
                Some(sink) => sink(&outcome.printf),
                None => {
                    use std::io::Write;
                    let _ = std::io::stdout().write_all(&outcome.printf);
                }
            }
        }
        if let Some(failure) = outcome.first_error {
            let code = self.failed(st, d, &failure);
            if code.is_sticky() {
                st.sticky_unseen = true;
            } else {
                st.async_error.get_or_insert(code);
            }
        }
        Ok(())
    }

    /// Sends every device's queued work and waits for it, keeping its errors
    /// for the next synchronizing call: host memory that queued copies write
    /// into is about to be released.
    pub fn drain_all(&self) {
        for (d, state) in self.states.iter().enumerate() {
            let mut guard = state.lock();
            let _ = self.flush_locked(&mut guard, d);
        }
    }

    /// Flushes device `d` and returns the error its asynchronous work left.
    pub(super) fn synchronize_device(&self, d: usize) -> Result<(), CudaError> {
        let mut guard = self.states[d].lock();
        let st = &mut *guard;
        self.flush_locked(st, d)?;
        if let Some(e) = st.sticky {
            st.sticky_unseen = false;
            return Err(e);
        }
        if let Some(e) = st.async_error.take() {
            return Err(e);
        }
        drop(guard);
        // What pools hold beyond their release thresholds goes back now.
        self.trim_pools(d)
    }

    /// Starts, or wakes, the thread that sends queued work nobody waits for,
    /// so that callbacks run and streams progress without a synchronizing call.
    pub(super) fn wake_progress(&'static self) {
        let thread = self.progress.get_or_init(|| {
            let spawned = std::thread::Builder::new()
                .name("rcud-progress".into())
                .spawn(move || self.progress_loop());
            match spawned {
                Ok(handle) => Some(handle.thread().clone()),
                Err(e) => {
                    report(&format!("cannot start the progress thread: {e}"));
                    None
                }
            }
        });
        if let Some(t) = thread {
            t.unpark();
        }
    }

    pub(super) fn progress_loop(&self) {
        const DELAY: Duration = Duration::from_millis(1);
        loop {
            let mut busy = false;
            for (d, state) in self.states.iter().enumerate() {
                let Some(mut guard) = state.try_lock() else {
                    busy = true;
                    continue;
                };
                if let Some(since) = guard.queued_since {
                    busy = true;
                    if since.elapsed() >= DELAY {
                        let _ = self.flush_locked(&mut guard, d);
                    }
                }
            }
            if busy {
                std::thread::park_timeout(DELAY);
            } else {
                std::thread::park();
            }
        }
    }

    /// Marks device `d` unusable after a connection failure.
    pub(super) fn lost(&self, st: &mut DeviceState, d: usize, err: &ClientError) -> CudaError {
        report(&format!("device {d}: {err}"));
        st.session = None;
        st.attached = false;
        st.forget_remote();
        let code = err.cuda_error();
        st.sticky = Some(code);
        code
    }
}
