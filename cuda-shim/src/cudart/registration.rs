//! Registration of device code, called by nvcc-generated start-up code in
//! every program before `main`. The fat binary is copied into the client's
//! registry; nothing is sent to a server until a kernel or variable is used.

use std::collections::BTreeMap;
use std::ffi::{c_char, c_void, CStr};
use std::os::raw::c_int;
use std::sync::Mutex;

use rcud_client::Runtime;

/// Reads the fat binary a `__fatBinC_Wrapper_t` points to.
pub(crate) fn read_fatbin(wrapper: *const c_void) -> Result<Vec<u8>, String> {
    if wrapper.is_null() {
        return Err("NULL fat binary wrapper".into());
    }
    // SAFETY: nvcc passes the address of its 24-byte `__fatBinC_Wrapper_t`,
    // static data of the program.
    let raw: [u8; 24] = unsafe { std::ptr::read_unaligned(wrapper as *const [u8; 24]) };
    let wrapper = rcud_fatbin::parse_wrapper(&raw).map_err(|e| e.to_string())?;
    let data = wrapper.data as *const u8;
    if data.is_null() {
        return Err("fat binary wrapper without data".into());
    }
    let image = read_containers(data)?;
    if wrapper.version == 2 && wrapper.filename_or_fatbins != 0 {
        return with_linked_ptx(image, wrapper.filename_or_fatbins as *const *const u8);
    }
    Ok(image)
}

/// Architecture whose PTX the per-object fat binaries of separately
/// compiled code give (the emulated device's).
const LINK_PTX_ARCH: u32 = 80;

/// A program built with `-rdc=true` registers the device-linked image,
/// which holds SASS only; the PTX stays in the per-object fat binaries its
/// link stub lists (`__cudaPrelinkedFatbins`, NULL-terminated). Their PTX
/// is linked here as the device linker links their code, and added to the
/// image as one more container: a real GPU still runs the SASS, the
/// emulated one the linked PTX.
fn with_linked_ptx(mut image: Vec<u8>, objects: *const *const u8) -> Result<Vec<u8>, String> {
    let has_ptx = rcud_fatbin::FatBinary::parse(&image)
        .map(|f| f.ptx_for(LINK_PTX_ARCH).is_some())
        .unwrap_or(false);
    if has_ptx {
        return Ok(image);
    }
    let mut texts = Vec::new();
    for i in 0.. {
        // SAFETY: nvcc's link stub passes a NULL-terminated array of
        // pointers to the objects' fat binaries, static data of the program.
        let object = unsafe { *objects.add(i) };
        if object.is_null() {
            break;
        }
        let bytes = read_containers(object)?;
        let fatbin = rcud_fatbin::FatBinary::parse(&bytes).map_err(|e| e.to_string())?;
        if let Some(ptx) = fatbin.ptx_for(LINK_PTX_ARCH) {
            texts.push(ptx.to_string());
        }
    }
    if texts.is_empty() {
        return Ok(image);
    }
    let inputs: Vec<&str> = texts.iter().map(String::as_str).collect();
    let linked = rcud_fatbin::ptx_link::link(&inputs).map_err(|e| e.to_string())?;
    image.extend(rcud_fatbin::image::wrap_ptx(linked.as_bytes()));
    Ok(image)
}

/// Reads the fat binary containers at `data`, which come without a length:
/// container headers are read until the parser knows how long they are.
/// `data` must point to a fat binary (nvcc's, or one a program passes to the
/// driver).
pub(crate) fn read_containers(data: *const u8) -> Result<Vec<u8>, String> {
    let mut want = 16;
    loop {
        // SAFETY: `data` points to a fat binary; the parser only asks for
        // bytes announced by headers it has already read.
        let prefix = unsafe { std::slice::from_raw_parts(data, want) };
        match rcud_fatbin::containers_len(prefix) {
            Ok(len) => {
                // SAFETY: as above; `len` covers exactly the containers.
                return Ok(unsafe { std::slice::from_raw_parts(data, len) }.to_vec());
            }
            Err(rcud_fatbin::FatbinError::NeedMore(n)) if n > want => want = n,
            Err(e) => return Err(e.to_string()),
        }
    }
}

fn c_string(p: *const c_char) -> String {
    if p.is_null() {
        return String::new();
    }
    // SAFETY: nvcc passes NUL-terminated names that live as long as the program.
    unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned()
}

/// The handle nvcc's code keeps is the address of a heap cell holding the
/// registry index; only this library reads it.
fn handle_index(handle: *mut *mut c_void) -> Option<usize> {
    if handle.is_null() {
        return None;
    }
    // SAFETY: handles are only created by `__cudaRegisterFatBinary` below and
    // stay valid until `__cudaUnregisterFatBinary`.
    Some(unsafe { *handle } as usize)
}

#[no_mangle]
pub extern "C" fn __cudaRegisterFatBinary(fat_cubin: *mut c_void) -> *mut *mut c_void {
    let index = match std::panic::catch_unwind(|| read_fatbin(fat_cubin)) {
        Ok(Ok(image)) => Runtime::global().register_module(image),
        Ok(Err(e)) => {
            eprintln!("rcud: cannot read the program's device code: {e}");
            usize::MAX
        }
        Err(_) => usize::MAX,
    };
    Box::into_raw(Box::new(index as *mut c_void))
}

#[no_mangle]
pub extern "C" fn __cudaRegisterFatBinaryEnd(_handle: *mut *mut c_void) {}

#[no_mangle]
pub extern "C" fn __cudaUnregisterFatBinary(handle: *mut *mut c_void) {
    let Some(index) = handle_index(handle) else {
        return;
    };
    Runtime::global().unregister_module(index);
    // SAFETY: created by Box::into_raw in __cudaRegisterFatBinary; nvcc's code
    // unregisters each handle once, at exit.
    drop(unsafe { Box::from_raw(handle) });
}

#[allow(clippy::too_many_arguments)]
#[no_mangle]
pub extern "C" fn __cudaRegisterFunction(
    handle: *mut *mut c_void,
    host_fun: *const c_char,
    device_fun: *mut c_char,
    _device_name: *const c_char,
    _thread_limit: c_int,
    _tid: *mut c_void,
    _bid: *mut c_void,
    _block_dim: *mut c_void,
    _grid_dim: *mut c_void,
    _warp_size: *mut c_int,
) {
    if let Some(index) = handle_index(handle) {
        Runtime::global().register_kernel(index, host_fun as u64, c_string(device_fun));
    }
}

#[allow(clippy::too_many_arguments)]
#[no_mangle]
pub extern "C" fn __cudaRegisterVar(
    handle: *mut *mut c_void,
    host_var: *mut c_char,
    device_address: *mut c_char,
    _device_name: *const c_char,
    _ext: c_int,
    size: usize,
    _constant: c_int,
    _global: c_int,
) {
    if let Some(index) = handle_index(handle) {
        Runtime::global().register_variable(
            index,
            host_var as u64,
            c_string(device_address),
            size as u64,
        );
    }
}

/// The `__managed__` variables of each registered module: the addresses of
/// the host pointers nvcc's code reads them through.
static MANAGED_VARIABLES: Mutex<BTreeMap<usize, Vec<u64>>> = Mutex::new(BTreeMap::new());

#[allow(clippy::too_many_arguments)]
#[no_mangle]
pub extern "C" fn __cudaRegisterManagedVar(
    handle: *mut *mut c_void,
    host_var_pointer: *mut *mut c_void,
    device_address: *mut c_char,
    _device_name: *const c_char,
    _ext: c_int,
    size: usize,
    _constant: c_int,
    _global: c_int,
) {
    let Some(index) = handle_index(handle) else {
        return;
    };
    if host_var_pointer.is_null() {
        return;
    }
    Runtime::global().register_variable(
        index,
        host_var_pointer as u64,
        c_string(device_address),
        size as u64,
    );
    MANAGED_VARIABLES
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
        .entry(index)
        .or_default()
        .push(host_var_pointer as u64);
}

/// Called by nvcc's code before the host first touches a `__managed__`
/// variable: loads the module on the current device, mirrors its managed
/// variables on the host and points their host pointers at them. Returns 1
/// when they are ready.
#[no_mangle]
pub extern "C" fn __cudaInitModule(handle: *mut *mut c_void) -> c_char {
    let Some(index) = handle_index(handle) else {
        return 0;
    };
    match std::panic::catch_unwind(|| init_managed_variables(index)) {
        Ok(Ok(())) => 1,
        Ok(Err(e)) => {
            eprintln!("rcud: the program's __managed__ variables cannot be set up: {e}");
            0
        }
        Err(_) => 0,
    }
}

fn init_managed_variables(index: usize) -> Result<(), rcud_proto::CudaError> {
    let pointers = MANAGED_VARIABLES
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
        .get(&index)
        .cloned()
        .unwrap_or_default();
    let mut resolved = Vec::with_capacity(pointers.len());
    for &pointer in &pointers {
        let (d, address, size) = Runtime::global().symbol(pointer)?;
        resolved.push((d, address, size));
    }
    let Some(&(d, _, _)) = resolved.first() else {
        return Ok(());
    };
    let variables: Vec<(u64, u64)> = resolved.iter().map(|&(_, a, s)| (a, s)).collect();
    super::managed::adopt_variables(d, &variables)?;
    for (&pointer, &(_, address, _)) in pointers.iter().zip(&resolved) {
        // SAFETY: nvcc registered `pointer` as the address of the host
        // pointer variable of a `__managed__` variable, static data of the
        // program.
        unsafe { *(pointer as *mut *mut c_void) = address as *mut c_void };
    }
    Ok(())
}
