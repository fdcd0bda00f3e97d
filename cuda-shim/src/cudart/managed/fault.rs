//! The SIGSEGV handler that turns host touches of mirrored pages into
//! coherence steps, and passes every other fault to whoever handled it
//! before.
//!
//! The handler runs on the faulting thread and may fetch pages from the
//! server. That is not async-signal-safe in general; it holds here because
//! the fault is synchronous (the thread is stopped at an access to managed
//! memory, not inside the allocator or rcud), and rcud itself never touches
//! a protected page (copies involving managed memory run on the device side).

use std::ffi::c_void;
use std::sync::OnceLock;

/// The disposition that was in place before ours.
struct Previous(libc::sigaction);

// SAFETY: a plain C struct written once before the handler is installed
// and only read afterwards.
unsafe impl Sync for Previous {}
// SAFETY: as for Sync; it holds no thread-bound state.
unsafe impl Send for Previous {}

static PREVIOUS: OnceLock<Previous> = OnceLock::new();

/// Installs the handler once per process.
pub(super) fn install() {
    PREVIOUS.get_or_init(|| {
        // SAFETY: sigaction with a zeroed struct whose handler is a valid
        // `extern "C"` function of the SA_SIGINFO form; the old disposition
        // is written to `old`.
        unsafe {
            let mut action: libc::sigaction = std::mem::zeroed();
            let handler: extern "C" fn(libc::c_int, *mut libc::siginfo_t, *mut c_void) = on_fault;
            action.sa_sigaction = handler as usize;
            action.sa_flags = libc::SA_SIGINFO;
            libc::sigemptyset(&mut action.sa_mask);
            let mut old: libc::sigaction = std::mem::zeroed();
            if libc::sigaction(libc::SIGSEGV, &action, &mut old) != 0 {
                tracing::warn!("rcud: cannot install the managed-memory fault handler");
            }
            Previous(old)
        }
    });
}

extern "C" fn on_fault(signal: libc::c_int, info: *mut libc::siginfo_t, context: *mut c_void) {
    // SAFETY: the kernel passes a valid siginfo for a SA_SIGINFO handler.
    let address = unsafe { (*info).si_addr() } as usize;
    // A fault raised by kill() or raise() carries no address to serve.
    // SAFETY: as above.
    let from_kernel = unsafe { (*info).si_code } > 0;
    if from_kernel && super::on_host_touch(address) {
        return;
    }
    pass_on(signal, info, context);
}

/// Hands a fault that is not ours to the previous disposition.
fn pass_on(signal: libc::c_int, info: *mut libc::siginfo_t, context: *mut c_void) {
    let Some(Previous(previous)) = PREVIOUS.get() else {
        return restore_default(signal);
    };
    let handler = previous.sa_sigaction;
    if handler == libc::SIG_DFL || handler == libc::SIG_IGN {
        // Returning re-runs the access, which now ends the process as it
        // would have without rcud (a fault cannot be ignored).
        return restore_default(signal);
    }
    if previous.sa_flags & libc::SA_SIGINFO != 0 {
        // SAFETY: the previous handler was installed in the SA_SIGINFO form.
        let f: extern "C" fn(libc::c_int, *mut libc::siginfo_t, *mut c_void) =
            unsafe { std::mem::transmute(handler) };
        f(signal, info, context);
    } else {
        // SAFETY: the previous handler was installed in the plain form.
        let f: extern "C" fn(libc::c_int) = unsafe { std::mem::transmute(handler) };
        f(signal);
    }
}

fn restore_default(signal: libc::c_int) {
    // SAFETY: resets one signal to its default disposition.
    unsafe { libc::signal(signal, libc::SIG_DFL) };
}
