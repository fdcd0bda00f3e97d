//! Remote calls and the queue of asynchronous work: synchronous calls,
//! batching, flushing, the progress thread, and lost connections.

use std::time::{Duration, Instant};

use parking_lot::MutexGuard;
use rcud_proto::ops::{req, Failure, Op};
use rcud_proto::CudaError;

use super::{report, DeviceState, Held, Runtime};
use crate::session::{Completion, FlushOutcome, HostSrc, Session};
use crate::ClientError;

/// How long queued work waits for more before the progress thread sends it.
const PROGRESS_DELAY: Duration = Duration::from_millis(1);
/// Work held behind a batch in flight, beyond which the queuing thread
/// waits for the batch's replies.
const MAX_HELD: usize = 4096;
const MAX_HELD_BYTES: usize = 64 << 20;

impl Runtime {
    // ---- remote calls --------------------------------------------------

    /// The session of device `d`, connecting (not attaching) on first use
    /// and after a fork.
    pub(super) fn connected_session<'a>(
        &self,
        st: &'a mut DeviceState,
        d: usize,
    ) -> Result<&'a mut Session, CudaError> {
        let pid = std::process::id();
        if st.session.is_some() && st.session_pid != pid {
            // Forked: the connection and everything made over it are the
            // parent's. Leaked, not closed, so that nothing (a TLS close,
            // say) is written on the parent's stream.
            let inherited = std::mem::take(st);
            std::mem::forget(inherited);
        }
        if st.session.is_none() {
            match Session::connect_secured(
                &self.devices[d].server,
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
        st.session.as_mut().ok_or(CudaError::DEVICES_UNAVAILABLE)
    }

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
        self.connected_session(st, d)?;
        let dev = &self.devices[d];
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

    /// Locks device `d` once no batch of it is in flight: what needs the
    /// session itself (a call, a synchronization) waits for the progress
    /// thread's write and replies.
    pub(super) fn lock_idle(&self, d: usize) -> MutexGuard<'_, DeviceState> {
        let mut guard = self.states[d].lock();
        while guard.flushing {
            self.idle[d].wait(&mut guard);
        }
        guard
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
        let mut guard = self.lock_idle(d);
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

    /// Locks device `d` to queue work: at once, unless so much waits behind
    /// a batch in flight that this thread should wait for it to be answered.
    fn lock_to_queue(&self, d: usize) -> MutexGuard<'_, DeviceState> {
        let mut guard = self.states[d].lock();
        while guard.flushing && (guard.held.len() >= MAX_HELD || guard.held_bytes >= MAX_HELD_BYTES)
        {
            self.idle[d].wait(&mut guard);
        }
        guard
    }

    /// Whether new work must wait in `held`: behind a host function that
    /// has not run, a batch in flight, or a full batch (which the progress
    /// thread sends; the queuing thread does not wait for it).
    fn must_hold(st: &DeviceState) -> bool {
        st.flushing || !st.held.is_empty() || st.session.as_ref().is_some_and(Session::batch_full)
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
        let mut guard = self.lock_to_queue(d);
        let st = &mut *guard;
        if !Self::must_hold(st) {
            let session = self.ready_session(st, d)?;
            session.enqueue(req, bulk_out, completion);
            session.expect_reply_bytes(reply_bytes);
        } else {
            self.ready_held(st, d)?;
            let (req, bulk) = (req.clone(), bulk_out.to_vec());
            let bytes = bulk.len();
            st.held_bytes += bytes;
            st.held.push_back(Held {
                apply: Box::new(move |s: &mut Session| {
                    s.enqueue(&req, &bulk, completion);
                    s.expect_reply_bytes(reply_bytes);
                }),
                callback: false,
                bytes,
            });
        }
        st.queued_since.get_or_insert_with(Instant::now);
        drop(guard);
        self.wake_progress();
        Ok(())
    }

    /// Checks that held work will have a session to go to: the device's
    /// sticky error, or a session that is connected (or out, in flight).
    fn ready_held(&self, st: &mut DeviceState, d: usize) -> Result<(), CudaError> {
        if st.flushing {
            return match st.sticky {
                Some(e) => Err(e),
                None => Ok(()),
            };
        }
        self.ready_session(st, d).map(|_| ())
    }

    /// Queues a host-to-device copy (`req`) whose source is read when the
    /// copy is sent, not now: page-locked memory that the application leaves
    /// alone until the copy completes. Behind a host function that has not
    /// run yet, the copy waits for it (with everything queued after it), so
    /// it sees what the function wrote, as CUDA's stream order requires.
    pub(super) fn enqueue_from<O: Op + Clone + Send + 'static>(
        &'static self,
        d: usize,
        req: O,
        src: Box<dyn HostSrc>,
    ) -> Result<(), CudaError> {
        let mut guard = self.lock_to_queue(d);
        let st = &mut *guard;
        let pending_callback = st
            .session
            .as_ref()
            .is_some_and(Session::has_pending_callback);
        if !Self::must_hold(st) && !pending_callback {
            self.ready_session(st, d)?.enqueue_source(&req, src);
        } else {
            self.ready_held(st, d)?;
            st.held.push_back(Held {
                apply: Box::new(move |s: &mut Session| s.enqueue_source(&req, src)),
                callback: false,
                bytes: 0,
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
        let mut guard = self.lock_to_queue(d);
        let st = &mut *guard;
        if !Self::must_hold(st) {
            self.ready_session(st, d)?.enqueue_callback(f);
        } else {
            self.ready_held(st, d)?;
            st.held.push_back(Held {
                apply: Box::new(move |s: &mut Session| s.enqueue_callback(f)),
                callback: true,
                bytes: 0,
            });
        }
        st.queued_since.get_or_insert_with(Instant::now);
        drop(guard);
        self.wake_progress();
        Ok(())
    }

    /// Sends device `d`'s queued work and applies what the replies say: event
    /// timestamps, `printf` output, and the first failure (sticky, or kept
    /// for the next call). The caller holds the lock of an idle device.
    pub(super) fn flush_locked(&self, st: &mut DeviceState, d: usize) -> Result<(), CudaError> {
        loop {
            st.queued_since = None;
            if let Some(session) = st.session.as_mut() {
                if session.queued() > 0 {
                    let result = session.flush();
                    self.apply_outcome(st, d, result)?;
                }
            }
            // The host functions queued so far have run: what waited for the
            // first of them is queued now, up to the next one.
            if !self.release_held(st) {
                return Ok(());
            }
        }
    }

    /// Moves held work into the session, up to and including the next host
    /// function; whether anything moved.
    fn release_held(&self, st: &mut DeviceState) -> bool {
        let Some(session) = st.session.as_mut() else {
            st.held.clear();
            st.held_bytes = 0;
            return false;
        };
        if st.held.is_empty() {
            return false;
        }
        // A full batch goes first: a large reply is the last of its batch.
        while !session.batch_full() {
            let Some(h) = st.held.pop_front() else {
                break;
            };
            st.held_bytes = st.held_bytes.saturating_sub(h.bytes);
            (h.apply)(session);
            if h.callback {
                break;
            }
        }
        st.queued_since.get_or_insert_with(Instant::now);
        true
    }

    /// Applies what a flush brought back: event timestamps, `printf`
    /// output, and the first failure (sticky, or kept for the next call).
    fn apply_outcome(
        &self,
        st: &mut DeviceState,
        d: usize,
        result: Result<FlushOutcome, ClientError>,
    ) -> Result<(), CudaError> {
        let outcome = match result {
            Ok(o) => o,
            Err(e) => return Err(self.lost(st, d, &e)),
        };
        if !outcome.events.is_empty() {
            let mut events = self.events.lock();
            for (event, ts) in outcome.events {
                if let Some(e) = events.get_mut(&event) {
                    e.timestamp = Some(ts);
                    if let Some(ipc) = &mut e.ipc {
                        ipc.completed();
                    }
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
        for d in 0..self.states.len() {
            let mut guard = self.lock_idle(d);
            let _ = self.flush_locked(&mut guard, d);
        }
    }

    /// Flushes device `d` and returns the error its asynchronous work left.
    pub(super) fn synchronize_device(&self, d: usize) -> Result<(), CudaError> {
        let mut guard = self.lock_idle(d);
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
        loop {
            let mut busy = false;
            for d in 0..self.states.len() {
                busy |= self.progress_flush(d);
            }
            if busy {
                std::thread::park_timeout(PROGRESS_DELAY);
            } else {
                std::thread::park();
            }
        }
    }

    /// Sends device `d`'s batch once it has waited [`PROGRESS_DELAY`],
    /// without holding the device's lock while the batch is written and
    /// answered: the application queues more meanwhile (it is held, and
    /// goes in the next batch). Whether work is still waiting.
    fn progress_flush(&self, d: usize) -> bool {
        let Some(mut guard) = self.states[d].try_lock() else {
            return true;
        };
        let st = &mut *guard;
        let Some(since) = st.queued_since else {
            return false;
        };
        if st.flushing || since.elapsed() < PROGRESS_DELAY {
            return true;
        }
        let Some(mut session) = st.session.take() else {
            st.queued_since = None;
            return false;
        };
        st.queued_since = None;
        st.flushing = true;
        drop(guard);
        let result = if session.queued() > 0 {
            session.flush()
        } else {
            Ok(FlushOutcome::default())
        };
        let mut guard = self.states[d].lock();
        let st = &mut *guard;
        st.session = Some(session);
        st.flushing = false;
        let _ = self.apply_outcome(st, d, result);
        self.release_held(st);
        let waiting = st.queued_since.is_some();
        drop(guard);
        self.idle[d].notify_all();
        waiting
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
