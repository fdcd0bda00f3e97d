//! Pieces shared by the RDMA modules (CSR and MSR): how completions are
//! waited for, and error helpers.

use std::io;
use std::time::{Duration, Instant};

use crate::channel::TransportError;
use crate::verbs::{
    Completion, CompletionQueue, QpState, QueuePair, VerbsError, WcOpcode, WcStatus,
};

/// Longest single wait for an event before the queue pair's state is tested.
const WAIT_SLICE: Duration = Duration::from_millis(50);
/// Busy polls between state tests and yields.
const SPINS: u32 = 256;
/// How long wait-for-event polls before it sleeps.
const EVENT_SPIN: Duration = Duration::from_micros(50);

/// How completions are detected.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Polling {
    /// Poll the completion queue in a loop (the thesis's default).
    Busy,
    /// Sleep on the completion channel until an event arrives.
    Event,
}

/// A transport error with a message.
pub(crate) fn other(msg: impl Into<String>) -> TransportError {
    TransportError::Io(io::Error::other(msg.into()))
}

/// A failed verbs call of `module` while doing `what`. A queue pair that an
/// asynchronous event took down (port or device error, fatal queue-pair
/// error) is an I/O error of kind `ConnectionAborted`, so that upper layers
/// can tell a broken link (reconnect) from a misuse.
pub(crate) fn verbs_error(module: &str, what: &str, e: VerbsError) -> TransportError {
    let kind = match e {
        VerbsError::LinkDown { .. } => io::ErrorKind::ConnectionAborted,
        _ => io::ErrorKind::Other,
    };
    TransportError::Io(io::Error::new(kind, format!("{module}: {what}: {e}")))
}

/// An empty completion, to size polling buffers.
pub(crate) fn blank() -> Completion {
    Completion {
        wr_id: 0,
        qp_num: 0,
        opcode: WcOpcode::Send,
        status: WcStatus::Success,
        byte_len: 0,
        imm: None,
    }
}

/// Polls `cq` until at least one completion arrives. Returns `Closed` when
/// one of the connection's queue pairs `watch` is in the error state and
/// nothing more will come: a connection whose control channel failed is as
/// broken as one whose data channel did.
pub(crate) fn wait_cq(
    cq: &CompletionQueue,
    watch: [&QueuePair; 2],
    polling: Polling,
    out: &mut [Completion],
) -> Result<usize, TransportError> {
    let poll_err = |e| other(format!("RDMA: polling a completion queue: {e}"));
    loop {
        match polling {
            Polling::Busy => {
                for i in 0..SPINS {
                    let n = cq.poll(out).map_err(poll_err)?;
                    if n > 0 {
                        return Ok(n);
                    }
                    if i % 32 == 31 {
                        std::thread::yield_now();
                    } else {
                        std::hint::spin_loop();
                    }
                }
            }
            Polling::Event => {
                // A completion that comes within a short spin is taken
                // without the sleep and wake-up of an event (tens of
                // microseconds across CPUs of a virtual machine); yielding
                // lets a peer on the same CPU run.
                let spin = Instant::now();
                while spin.elapsed() < EVENT_SPIN {
                    let n = cq.poll(out).map_err(poll_err)?;
                    if n > 0 {
                        return Ok(n);
                    }
                    std::thread::yield_now();
                }
                let n = cq.poll_wait(out, WAIT_SLICE).map_err(poll_err)?;
                if n > 0 {
                    return Ok(n);
                }
            }
        }
        if watch.iter().any(|qp| qp.state() == QpState::Error) {
            // Anything that raced with the state change comes first.
            let n = cq.poll(out).map_err(poll_err)?;
            return if n > 0 {
                Ok(n)
            } else {
                Err(TransportError::Closed)
            };
        }
    }
}
