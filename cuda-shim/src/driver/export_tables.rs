//! NVIDIA's private driver tables (`cuGetExportTable`): what NVIDIA's own
//! runtime, linked into every program nvcc builds by default and shipped as
//! `libcudart.so.12/13`, needs beyond the public driver API. What each table
//! and slot means, and how that was learned, is in `docs/driver-api.md`.
//!
//! A table is an array of pointer-sized words: word 0 its size in bytes
//! (except context-local storage, which has none), then functions. Slots
//! nobody was seen calling answer `CUDA_ERROR_NOT_SUPPORTED` and log.

use std::collections::HashMap;
use std::ffi::c_void;
use std::os::raw::{c_int, c_uint};
use std::sync::Mutex;

use hmac::{Mac, SimpleHmac};

use super::init::DRIVER_VERSION;
use super::{rt, CuResult, DriverError};

/// A table as the driver hands it out: static, never written.
#[repr(C)]
pub(crate) struct Table<const N: usize>([*const (); N]);

// SAFETY: the tables hold function addresses and sizes, immutable for the
// life of the process.
unsafe impl<const N: usize> Sync for Table<N> {}

impl<const N: usize> Table<N> {
    fn address(&'static self) -> *const c_void {
        self.0.as_ptr() as *const c_void
    }
}

/// Word 0 of a table: its size in bytes.
const fn size_word(words: usize) -> *const () {
    (words * std::mem::size_of::<*const ()>()) as *const ()
}

/// A slot nobody was seen calling: whatever its arguments, the C calling
/// convention lets it ignore them.
extern "C" fn unknown_slot() -> CuResult {
    tracing::warn!(
        "an unknown slot of a private driver table was called; rcud does not implement it"
    );
    DriverError::NOT_SUPPORTED.0
}

const UNKNOWN: *const () = unknown_slot as *const ();

/// What `cuGetExportTable` hands out for `id`, or `None` for a table rcud
/// does not serve. `quiet` tables are optional ones their callers do
/// without.
pub(crate) fn lookup(id: &[u8; 16]) -> Result<*const c_void, bool> {
    match *id {
        CUDART_INTERFACE_ID => Ok(CUDART_INTERFACE.address()),
        TOOLS_HOOKS_ID => Ok(TOOLS_HOOKS.address()),
        TOOLS_TLS_ID => Ok(TOOLS_TLS.address()),
        TOOLS_CONTEXT_ID => Ok(TOOLS_CONTEXT.address()),
        CONTEXT_STORAGE_ID => Ok(CONTEXT_STORAGE.address()),
        CONTEXT_CHECKS_ID => Ok(CONTEXT_CHECKS.address()),
        INTEGRITY_ID => Ok(INTEGRITY.address()),
        // The runtime's error log and NVRTC's table: both callers carry on
        // without them.
        RUNTIME_LOG_ID | NVRTC_ID => Err(true),
        _ => Err(false),
    }
}

// ---- cudart interface -------------------------------------------------------

const CUDART_INTERFACE_ID: [u8; 16] = [
    0x6b, 0xd5, 0xfb, 0x6c, 0x5b, 0xf4, 0xe7, 0x4a, 0x89, 0x87, 0xd9, 0x39, 0x12, 0xfd, 0x9d, 0xf9,
];

static CUDART_INTERFACE: Table<13> = Table([
    size_word(13),
    module_from_wrapper as *const (),
    primary_context as *const (),
    UNKNOWN,
    UNKNOWN,
    UNKNOWN,
    module_from_wrapper_ext as *const (),
    ignore as *const (),
    module_from_fatbin as *const (),
    UNKNOWN,
    UNKNOWN,
    UNKNOWN,
    success as *const (),
]);

/// Slot 1: a module from nvcc's fat binary wrapper.
extern "C" fn module_from_wrapper(module: *mut u64, wrapper: *const c_void) -> CuResult {
    super::module::cuModuleLoadData(module, wrapper)
}

/// Slot 6: the same, with arguments nobody has explained.
extern "C" fn module_from_wrapper_ext(
    module: *mut u64,
    wrapper: *const c_void,
    _: *mut c_void,
    _: *mut c_void,
    _: c_uint,
) -> CuResult {
    super::module::cuModuleLoadData(module, wrapper)
}

/// Slot 8: a module from a bare fat binary.
extern "C" fn module_from_fatbin(
    fatbin: *const c_void,
    module: *mut u64,
    _: *mut c_void,
    _: *mut c_void,
    _: c_uint,
) -> CuResult {
    super::module::cuModuleLoadData(module, fatbin)
}

/// Slot 2: the device's primary context, neither created nor retained.
extern "C" fn primary_context(ctx: *mut u64, device: c_int) -> CuResult {
    super::guard(|| {
        let d = super::device(device)?;
        super::out(ctx, rt().primary_context(d)?)
    })
}

extern "C" fn ignore(_: usize) {}

extern "C" fn success() -> CuResult {
    0
}

// ---- tools: runtime callbacks, thread-local context, context ----------------

const TOOLS_HOOKS_ID: [u8; 16] = [
    0xa0, 0x94, 0x79, 0x8c, 0x2e, 0x74, 0x2e, 0x74, 0x93, 0xf2, 0x08, 0x00, 0x20, 0x0c, 0x0a, 0x66,
];

static TOOLS_HOOKS: Table<7> = Table([
    size_word(7),
    success as *const (),
    runtime_callback_flags as *const (),
    stream_id as *const (),
    context_id as *const (),
    success as *const (),
    internal_callback_flags as *const (),
]);

/// "Callback enabled" flags per runtime API and internal callback id, read
/// by the runtime on every call: no tool subscribes, so all stay zero.
static RUNTIME_CALLBACKS: [u32; 1024] = [0; 1024];
static INTERNAL_CALLBACKS: [u32; 64] = [0; 64];

extern "C" fn runtime_callback_flags(flags: *mut *const u32, count: *mut usize) {
    write_flags(flags, count, &RUNTIME_CALLBACKS);
}

extern "C" fn internal_callback_flags(flags: *mut *const u32, count: *mut usize) {
    write_flags(flags, count, &INTERNAL_CALLBACKS);
}

fn write_flags(flags: *mut *const u32, count: *mut usize, array: &'static [u32]) {
    let _ = super::out(flags, array.as_ptr());
    let _ = super::out(count, array.len());
}

extern "C" fn stream_id(_ctx: u64, stream: u64, id: *mut u64) -> CuResult {
    super::guard(|| super::out(id, stream))
}

extern "C" fn context_id(ctx: u64, id: *mut u64) -> CuResult {
    super::guard(|| {
        let ctx = match ctx {
            0 => rt().current_context().ok_or(DriverError::INVALID_CONTEXT)?,
            c => c,
        };
        super::out(id, rt().context_info(ctx)?.id)
    })
}

const TOOLS_TLS_ID: [u8; 16] = [
    0x42, 0xd8, 0x5a, 0x81, 0x23, 0xf6, 0xcb, 0x47, 0x82, 0x98, 0xf6, 0xe7, 0x8a, 0x3a, 0xec, 0xdc,
];

static TOOLS_TLS: Table<3> = Table([
    size_word(3),
    super::context::cuCtxSetCurrent as *const (),
    super::context::cuCtxGetCurrent as *const (),
]);

const TOOLS_CONTEXT_ID: [u8; 16] = [
    0x21, 0x31, 0x8c, 0x60, 0x97, 0x14, 0x32, 0x48, 0x8c, 0xa6, 0x41, 0xff, 0x73, 0x24, 0xc8, 0xf2,
];

/// Required by the runtime, never called by it: as large as NVIDIA's, every
/// slot reports itself.
static TOOLS_CONTEXT: Table<95> = {
    let mut words = [UNKNOWN; 95];
    words[0] = size_word(95);
    Table(words)
};

// ---- context-local storage ---------------------------------------------------

const CONTEXT_STORAGE_ID: [u8; 16] = [
    0xc6, 0x93, 0x33, 0x6e, 0x11, 0x21, 0xdf, 0x11, 0xa8, 0xc3, 0x68, 0xf3, 0x55, 0xd8, 0x95, 0x93,
];

/// No size word: three functions and a NULL.
static CONTEXT_STORAGE: Table<4> = Table([
    storage_put as *const (),
    storage_delete as *const (),
    storage_get as *const (),
    std::ptr::null(),
]);

/// `void (*)(CUcontext, void *key, void *value)`, called when the context
/// goes away.
type Destructor = Option<extern "C" fn(u64, *mut c_void, *mut c_void)>;

/// (context, key) -> (value, destructor). Addresses stored as integers: the
/// map only keeps them for the runtime that owns them.
type Storage = HashMap<(u64, usize), (usize, Destructor)>;

static STORAGE: Mutex<Option<Storage>> = Mutex::new(None);

fn with_storage<R>(f: impl FnOnce(&mut Storage) -> R) -> R {
    let mut guard = STORAGE
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    f(guard.get_or_insert_with(HashMap::new))
}

/// A context argument: NULL means the current one.
fn resolve(ctx: u64) -> Result<u64, DriverError> {
    match ctx {
        0 => rt().current_context().ok_or(DriverError::INVALID_CONTEXT),
        c => Ok(c),
    }
}

extern "C" fn storage_put(
    ctx: u64,
    key: *mut c_void,
    value: *mut c_void,
    destroy: Destructor,
) -> CuResult {
    super::guard(|| {
        let ctx = resolve(ctx)?;
        with_storage(|s| s.insert((ctx, key as usize), (value as usize, destroy)));
        Ok(())
    })
}

extern "C" fn storage_delete(ctx: u64, key: *mut c_void) -> CuResult {
    super::guard(|| {
        let ctx = resolve(ctx)?;
        with_storage(|s| s.remove(&(ctx, key as usize)))
            .map(|_| ())
            .ok_or(DriverError::INVALID_HANDLE)
    })
}

/// "Absent" must be an error: the runtime sets a context up when it is.
extern "C" fn storage_get(value: *mut *mut c_void, ctx: u64, key: *mut c_void) -> CuResult {
    super::guard(|| {
        let ctx = resolve(ctx)?;
        let found = with_storage(|s| s.get(&(ctx, key as usize)).map(|&(v, _)| v));
        super::out(
            value,
            found.ok_or(DriverError::INVALID_HANDLE)? as *mut c_void,
        )
    })
}

/// A context is destroyed: the runtimes that kept state in it release it.
pub(crate) fn context_gone(ctx: u64) {
    let entries: Vec<((u64, usize), (usize, Destructor))> = with_storage(|s| {
        let keys: Vec<_> = s.keys().filter(|(c, _)| *c == ctx).copied().collect();
        keys.into_iter()
            .filter_map(|k| s.remove(&k).map(|v| (k, v)))
            .collect()
    });
    for ((ctx, key), (value, destroy)) in entries {
        if let Some(destroy) = destroy {
            destroy(ctx, key as *mut c_void, value as *mut c_void);
        }
    }
}

// ---- context checks ------------------------------------------------------------

const CONTEXT_CHECKS_ID: [u8; 16] = [
    0x26, 0x3e, 0x88, 0x60, 0x7c, 0xd2, 0x61, 0x43, 0x92, 0xf6, 0xbb, 0xd5, 0x00, 0x6d, 0xfa, 0x7e,
];

static CONTEXT_CHECKS: Table<4> = Table([
    size_word(4),
    UNKNOWN,
    context_check as *const (),
    zero as *const (),
]);

/// Slot 2: a context the runtime binds passes, with no flags set.
extern "C" fn context_check(_ctx: u64, flags: *mut u32, _: *mut *mut c_void) -> CuResult {
    super::guard(|| super::out(flags, 0))
}

extern "C" fn zero() -> u32 {
    0
}

// ---- integrity check ---------------------------------------------------------------

const INTEGRITY_ID: [u8; 16] = [
    0xd4, 0x08, 0x20, 0x55, 0xbd, 0xe6, 0x70, 0x4b, 0x8d, 0x34, 0xba, 0x12, 0x3c, 0x66, 0xe1, 0xf2,
];

static INTEGRITY: Table<3> = Table([size_word(3), integrity_check as *const (), UNKNOWN]);

/// The key of the runtime's HMAC-MD2 (from ZLUDA's work; see the docs).
const INTEGRITY_KEY: [u8; 16] = [
    0x14, 0x6a, 0xdd, 0xae, 0x53, 0xa9, 0xa7, 0x52, 0xaa, 0x08, 0x41, 0x36, 0x0b, 0xf5, 0x5a, 0x9f,
];

/// PCI domain, bus and device attributes.
const ATTR_PCI_DOMAIN: c_int = 50;
const ATTR_PCI_BUS: c_int = 33;
const ATTR_PCI_DEVICE: c_int = 34;

/// Slot 1: the runtime checks that the driver is NVIDIA's by asking for an
/// HMAC over the driver's version, the process, the calling thread, these
/// tables' addresses, a timestamp and every device's identity; it computes
/// the same itself from what the public API answers.
extern "C" fn integrity_check(version: u32, unix_seconds: u64, out: *mut [u8; 16]) -> CuResult {
    super::guard(|| {
        let mut message = Vec::with_capacity(48 + 28);
        message.extend(DRIVER_VERSION.to_le_bytes());
        message.extend(version.to_le_bytes());
        message.extend(std::process::id().to_le_bytes());
        // SAFETY: pthread_self has no preconditions.
        let thread = unsafe { libc::pthread_self() } as u64 as u32;
        message.extend(thread.to_le_bytes());
        message.extend((CUDART_INTERFACE.address() as u64).to_le_bytes());
        message.extend((INTEGRITY.address() as u64).to_le_bytes());
        message.extend((INTEGRITY.0[1] as u64).to_le_bytes());
        message.extend(unix_seconds.to_le_bytes());
        let count = rt().device_count().map_err(|_| DriverError::NO_DEVICE)?;
        for d in 0..count as c_int {
            let props = rt().props(d)?;
            message.extend(props.uuid);
            for attr in [ATTR_PCI_DOMAIN, ATTR_PCI_BUS, ATTR_PCI_DEVICE] {
                message.extend(rt().attribute(attr, d)?.to_le_bytes());
            }
        }
        super::out(out, hmac_md2(&message))
    })
}

fn hmac_md2(message: &[u8]) -> [u8; 16] {
    let mut mac = <SimpleHmac<md2::Md2> as hmac::KeyInit>::new_from_slice(&INTEGRITY_KEY)
        .expect("HMAC takes keys of any length");
    mac.update(message);
    mac.finalize().into_bytes().into()
}

const RUNTIME_LOG_ID: [u8; 16] = [
    0xf8, 0xcf, 0xf9, 0x51, 0x21, 0x46, 0x8b, 0x4e, 0xb9, 0xe2, 0xfb, 0x46, 0x9e, 0x7c, 0x0d, 0xd9,
];

const NVRTC_ID: [u8; 16] = [
    0xda, 0x91, 0x51, 0xd3, 0x3a, 0xe6, 0xcc, 0x41, 0xa5, 0xc0, 0x4f, 0x26, 0xd5, 0x33, 0xe3, 0x28,
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hmac_md2_matches_rfc_2202_style_vectors() {
        // MD2 itself, RFC 1319's test suite: MD2("abc").
        use md2::Digest;
        let digest: [u8; 16] = md2::Md2::digest(b"abc").into();
        assert_eq!(
            digest,
            [
                0xda, 0x85, 0x3b, 0x0d, 0x3f, 0x88, 0xd9, 0x9b, 0x30, 0x28, 0x3a, 0x69, 0xe6, 0xde,
                0xd6, 0xbb
            ]
        );
        // A keyed digest differs from the plain one and depends on every byte.
        assert_ne!(hmac_md2(b"abc"), digest);
        assert_ne!(hmac_md2(b"abc"), hmac_md2(b"abd"));
    }

    #[test]
    fn tables_have_their_sizes() {
        assert_eq!(CUDART_INTERFACE.0[0] as usize, 13 * 8);
        assert_eq!(TOOLS_HOOKS.0[0] as usize, 56);
        assert_eq!(TOOLS_CONTEXT.0[0] as usize, 760);
        assert!(CONTEXT_STORAGE.0[3].is_null());
        assert!(lookup(&[0; 16]) == Err(false));
        assert!(lookup(&RUNTIME_LOG_ID) == Err(true));
        assert!(lookup(&INTEGRITY_ID).is_ok());
    }
}
