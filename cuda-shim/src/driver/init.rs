//! Initialization, versions, and the ways to find functions:
//! `cuGetProcAddress` (how CUDA 12+ runtimes, cuda-python and others reach
//! every driver function) and `cuGetExportTable` (NVIDIA's private tables).

use std::collections::HashSet;
use std::ffi::c_void;
use std::os::raw::{c_char, c_int, c_uint};
use std::sync::atomic::Ordering;
use std::sync::Mutex;

use super::{c_str, export_tables, out, rt, DriverError, DriverResult, INITIALIZED};
use crate::cudart::logs;

/// The driver API version this library implements: the `CUDA_VERSION` of
/// the cuda.h its export list comes from. It is at least what every CUDA 12
/// and 13 runtime asks for.
pub(crate) const DRIVER_VERSION: c_int = parse_version(env!("RCUD_CUDA_VERSION"));

/// A decimal number from the build environment.
pub(crate) const fn parse_version(text: &str) -> c_int {
    let bytes = text.as_bytes();
    let mut value = 0;
    let mut i = 0;
    while i < bytes.len() {
        value = value * 10 + (bytes[i] - b'0') as c_int;
        i += 1;
    }
    value
}

/// One `cuGetProcAddress` entry (generated from cudaTypedefs.h).
pub(crate) struct Proc {
    name: &'static str,
    version: c_int,
    per_thread: bool,
    function: *const (),
}

// SAFETY: the table holds addresses of this library's functions, immutable.
unsafe impl Sync for Proc {}

/// The generated table, apart: it declares every exported function.
#[allow(clippy::missing_safety_doc, unreachable_pub)]
mod procs {
    use super::Proc;
    include!(concat!(env!("OUT_DIR"), "/procs.rs"));
}
use procs::PROCS;

driver_fn! { cuInit (flags: c_uint) {
    if flags != 0 {
        return Err(DriverError::INVALID_VALUE);
    }
    // No remote GPU: the runtime has said why on stderr.
    rt().device_count().map_err(|_| DriverError::NO_DEVICE)?;
    INITIALIZED.store(true, Ordering::Release);
    Ok(())
} }

driver_fn! { cuDriverGetVersion (version: *mut c_int) {
    out(version, DRIVER_VERSION)
} }

/// `CU_GET_PROC_ADDRESS_*` flags.
const PROC_LEGACY_STREAM: u64 = 1;
const PROC_PER_THREAD_STREAM: u64 = 2;
/// `CUdriverProcAddressQueryResult`.
const PROC_SUCCESS: c_int = 0;
const PROC_SYMBOL_NOT_FOUND: c_int = 1;
const PROC_VERSION_NOT_SUFFICIENT: c_int = 2;

/// The function `symbol` names for a program built against CUDA
/// `version`: the newest variant not newer than `version`, the
/// per-thread-stream one when asked and there is one. Err is the
/// `CUdriverProcAddressQueryResult` of a miss.
pub(crate) fn lookup(symbol: &str, version: c_int, flags: u64) -> Result<*const (), c_int> {
    let mut known = false;
    let mut best: Option<&Proc> = None;
    for p in PROCS.iter().filter(|p| p.name == symbol) {
        known = true;
        if p.version > version {
            continue;
        }
        let wanted = flags & PROC_PER_THREAD_STREAM != 0;
        let better = match best {
            None => true,
            // Prefer the asked-for stream flavour, then the newer version.
            Some(b) => (p.per_thread == wanted, p.version) > (b.per_thread == wanted, b.version),
        };
        if better {
            best = Some(p);
        }
    }
    match best {
        Some(p) => Ok(p.function),
        None if known => Err(PROC_VERSION_NOT_SUFFICIENT),
        None => Err(PROC_SYMBOL_NOT_FOUND),
    }
}

fn get_proc_address(
    symbol: *const c_char,
    pfn: *mut *mut c_void,
    version: c_int,
    flags: u64,
    status: *mut c_int,
) -> DriverResult {
    let name = c_str(symbol)?;
    // A version newer than this driver is refused, as CUDA documents.
    if pfn.is_null()
        || flags & !(PROC_LEGACY_STREAM | PROC_PER_THREAD_STREAM) != 0
        || version > DRIVER_VERSION
    {
        return Err(DriverError::INVALID_VALUE);
    }
    let found = lookup(name, version, flags);
    if !status.is_null() {
        out(status, found.err().unwrap_or(PROC_SUCCESS))?;
    }
    // A miss is no error (CUDA 12+): the pointer is NULL and the status,
    // when asked for, says why. NVIDIA's runtime passes the answer on from
    // cudaGetDriverEntryPoint, which is documented to succeed then.
    match found {
        Ok(f) => out(pfn, f as *mut c_void),
        Err(_) => {
            tracing::debug!("cuGetProcAddress: no {name} for CUDA {version}");
            out(pfn, std::ptr::null_mut())
        }
    }
}

driver_fn! { cuGetProcAddress (symbol: *const c_char, pfn: *mut *mut c_void, version: c_int, flags: u64) {
    get_proc_address(symbol, pfn, version, flags, std::ptr::null_mut())
} }

driver_fn! { [cuGetProcAddress_v2, cuGetProcAddress_v2_ptsz] (symbol: *const c_char, pfn: *mut *mut c_void, version: c_int, flags: u64, status: *mut c_int) {
    get_proc_address(symbol, pfn, version, flags, status)
} }

/// `{xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx}` of a 16-byte `CUuuid`.
fn uuid_text(bytes: &[u8; 16]) -> String {
    let hex: Vec<String> = bytes.iter().map(|b| format!("{b:02x}")).collect();
    format!(
        "{{{}-{}-{}-{}-{}}}",
        hex[0..4].concat(),
        hex[4..6].concat(),
        hex[6..8].concat(),
        hex[8..10].concat(),
        hex[10..16].concat()
    )
}

driver_fn! { cuGetExportTable (table: *mut *const c_void, id: *const [u8; 16]) {
    if table.is_null() || id.is_null() {
        return Err(DriverError::INVALID_VALUE);
    }
    // SAFETY: non-NULL, and the API passes a 16-byte CUuuid.
    let id = unsafe { &*id };
    match export_tables::lookup(id) {
        Ok(t) => out(table, t),
        Err(quiet) => {
            out(table, std::ptr::null())?;
            let text = uuid_text(id);
            static REPORTED: Mutex<Option<HashSet<String>>> = Mutex::new(None);
            let first = REPORTED
                .lock()
                .map(|mut r| r.get_or_insert_with(HashSet::new).insert(text.clone()))
                .unwrap_or(false);
            if quiet {
                tracing::debug!("cuGetExportTable: optional table {text} refused");
            } else if first {
                eprintln!("rcud: cuGetExportTable: the driver's private table {text} is not provided by rcud");
            }
            Err(DriverError::INVALID_VALUE)
        }
    }
} }

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_pick_the_variant_a_program_was_built_for() {
        let f = |name: &str, version, flags| lookup(name, version, flags).map(|p| p as usize);
        let mem_alloc = f("cuMemAlloc", 13000, 0).expect("cuMemAlloc");
        assert_eq!(
            mem_alloc,
            super::super::memory::cuMemAlloc_v2 as *const () as usize
        );
        assert_eq!(
            f("cuMemAlloc", 2000, 0).ok(),
            Some(crate::generated::cuMemAlloc as *const () as usize)
        );
        assert_eq!(f("cuMemAlloc", 1000, 0), Err(PROC_VERSION_NOT_SUFFICIENT));
        assert_eq!(f("cuNoSuchFunction", 13000, 0), Err(PROC_SYMBOL_NOT_FOUND));
        let ptds = f("cuMemcpyHtoD", 13000, PROC_PER_THREAD_STREAM).expect("ptds");
        assert_eq!(
            ptds,
            super::super::memory::cuMemcpyHtoD_v2_ptds as *const () as usize
        );
        let legacy = f("cuMemcpyHtoD", 13000, PROC_LEGACY_STREAM).expect("legacy");
        assert_eq!(
            legacy,
            super::super::memory::cuMemcpyHtoD_v2 as *const () as usize
        );
        // No per-thread variant: the default one.
        assert_eq!(
            f("cuInit", 13000, PROC_PER_THREAD_STREAM).ok(),
            Some(cuInit as *const () as usize)
        );
    }

    const _: () = assert!(DRIVER_VERSION >= 13000, "CUDA 13 headers or newer");

    #[test]
    fn uuids_print_canonically() {
        let id = [
            0x6b, 0xd5, 0xfb, 0x6c, 0x5b, 0xf4, 0xe7, 0x4a, 0x89, 0x87, 0xd9, 0x39, 0x12, 0xfd,
            0x9d, 0xf9,
        ];
        assert_eq!(uuid_text(&id), "{6bd5fb6c-5bf4-e74a-8987-d93912fd9df9}");
    }
}

// ---- the error log (empty: see `cudart/logs.rs`) ----------------------------------

driver_fn! { cuLogsRegisterCallback (callback: *mut c_void, _data: *mut c_void, handle: *mut *mut c_void) {
    Ok(logs::register(callback, handle)?)
} }

driver_fn! { cuLogsUnregisterCallback (handle: *mut c_void) {
    Ok(logs::unregister(handle)?)
} }

driver_fn! { cuLogsCurrent (iterator: *mut c_uint, flags: c_uint) {
    Ok(logs::current(iterator, flags)?)
} }

driver_fn! { cuLogsDumpToFile (iterator: *mut c_uint, path: *const c_char, flags: c_uint) {
    Ok(logs::dump_to_file(iterator, path, flags)?)
} }

driver_fn! { cuLogsDumpToMemory (iterator: *mut c_uint, buffer: *mut c_char, size: *mut usize, flags: c_uint) {
    Ok(logs::dump_to_memory(iterator, buffer, size, flags)?)
} }
