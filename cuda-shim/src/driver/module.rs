//! Modules, libraries, the linker and functions: device code the program
//! loads itself, from a fatbin, a cubin or PTX text, in memory or in a file.

use std::collections::HashMap;
use std::ffi::{c_void, CString};
use std::os::raw::{c_char, c_int, c_uint};
use std::sync::Mutex;

use rcud_fatbin::image::{self, ImageKind};

use super::{c_str, context_device, initialized, out, rt, DriverError, DriverResult};
use crate::cudart::launch::occupancy;

/// Bytes of a module image in memory, which the API passes without a
/// length: a fatbin's container headers, an ELF header's tables, or PTX's
/// terminating NUL tell it.
pub(crate) fn image_bytes(image: *const c_void) -> Result<Vec<u8>, DriverError> {
    if image.is_null() {
        return Err(DriverError::INVALID_VALUE);
    }
    let data = image as *const u8;
    // No image form has a NUL in its first 4 bytes, so reading up to the
    // first NUL never passes the end of a short string.
    let mut head = Vec::with_capacity(4);
    while head.len() < 4 {
        // SAFETY: every byte read so far was non-NUL, so this one belongs to
        // the image or is the terminating NUL of a C string.
        let byte = unsafe { *data.add(head.len()) };
        if byte == 0 {
            return Ok(head);
        }
        head.push(byte);
    }
    if head == rcud_fatbin::CONTAINER_MAGIC.to_le_bytes() {
        return crate::cudart::registration::read_containers(data).map_err(|e| {
            eprintln!("rcud: cannot load module: {e}");
            DriverError::INVALID_IMAGE
        });
    }
    if head == b"\x7fELF" {
        // SAFETY: an ELF image starts with its 64-byte header.
        let header = unsafe { std::slice::from_raw_parts(data, 64) };
        let len = image::cubin_len(header).ok_or(DriverError::INVALID_IMAGE)?;
        // SAFETY: the header's tables end the image.
        return Ok(unsafe { std::slice::from_raw_parts(data, len) }.to_vec());
    }
    if u32::from_le_bytes([head[0], head[1], head[2], head[3]]) == rcud_fatbin::WRAPPER_MAGIC {
        return crate::cudart::registration::read_fatbin(image).map_err(|e| {
            eprintln!("rcud: cannot load module: {e}");
            DriverError::INVALID_IMAGE
        });
    }
    // PTX (or garbage): a C string.
    // SAFETY: text images are NUL-terminated.
    Ok(unsafe { std::ffi::CStr::from_ptr(image as *const c_char) }
        .to_bytes()
        .to_vec())
}

fn read_file(path: *const c_char) -> Result<Vec<u8>, DriverError> {
    let path = c_str(path)?;
    std::fs::read(path).map_err(|e| {
        tracing::warn!("cannot read module file {path}: {e}");
        DriverError::FILE_NOT_FOUND
    })
}

/// The device a context-independent load (`cuLibrary*`) goes to: the
/// current context's, else device 0's.
fn library_device() -> Result<usize, DriverError> {
    initialized()?;
    Ok(rt().context_device().unwrap_or(0))
}

fn load(module: *mut u64, bytes: &[u8], d: usize) -> DriverResult {
    if module.is_null() {
        return Err(DriverError::INVALID_VALUE);
    }
    if image::classify(bytes).is_none() {
        eprintln!("rcud: cannot load module: the image is neither a fat binary, a cubin nor PTX");
        return Err(DriverError::INVALID_IMAGE);
    }
    out(module, rt().module_load(d, bytes)?)
}

driver_fn! { cuModuleLoad (module: *mut u64, path: *const c_char) {
    let d = context_device()?;
    load(module, &read_file(path)?, d)
} }

driver_fn! { [cuModuleLoadData, cuModuleLoadFatBinary] (module: *mut u64, image: *const c_void) {
    let d = context_device()?;
    load(module, &image_bytes(image)?, d)
} }

driver_fn! { cuModuleLoadDataEx (module: *mut u64, image: *const c_void, count: c_uint, options: *const c_int, values: *mut *mut c_void) {
    let d = context_device()?;
    let logs = JitLogs::new(count, options, values);
    let result = image_bytes(image).and_then(|bytes| load(module, &bytes, d));
    logs.finish(&result);
    result
} }

driver_fn! { cuModuleUnload (module: u64) {
    initialized()?;
    rt().module_unload(module)?;
    super::texref::module_unloaded(module);
    Ok(())
} }

driver_fn! { cuModuleGetFunction (function: *mut u64, module: u64, name: *const c_char) {
    let d = context_device()?;
    let name = c_str(name)?;
    if function.is_null() {
        return Err(DriverError::INVALID_VALUE);
    }
    out(function, rt().module_function(d, module, name)?)
} }

driver_fn! { cuModuleGetGlobal_v2 (dptr: *mut u64, bytes: *mut usize, module: u64, name: *const c_char) {
    let d = context_device()?;
    let (p, size) = rt().module_global(d, module, c_str(name)?)?;
    if !dptr.is_null() {
        out(dptr, p)?;
    }
    if !bytes.is_null() {
        out(bytes, size as usize)?;
    }
    Ok(())
} }

// `CU_MODULE_EAGER_LOADING`: modules load when asked.
driver_fn! { cuModuleGetLoadingMode (mode: *mut c_int) {
    initialized()?;
    out(mode, 1)
} }

// ---- libraries (context-independent modules, CUDA 12) -----------------------

driver_fn! { cuLibraryLoadData (library: *mut u64, code: *const c_void, _jit_options: *mut c_int, _jit_values: *mut *mut c_void, _jit_count: c_uint, _options: *mut c_int, _values: *mut *mut c_void, _count: c_uint) {
    let d = library_device()?;
    load(library, &image_bytes(code)?, d)
} }

driver_fn! { cuLibraryLoadFromFile (library: *mut u64, path: *const c_char, _jit_options: *mut c_int, _jit_values: *mut *mut c_void, _jit_count: c_uint, _options: *mut c_int, _values: *mut *mut c_void, _count: c_uint) {
    let d = library_device()?;
    load(library, &read_file(path)?, d)
} }

driver_fn! { cuLibraryUnload (library: u64) {
    initialized()?;
    Ok(rt().module_unload(library)?)
} }

driver_fn! { cuLibraryGetKernel (kernel: *mut u64, library: u64, name: *const c_char) {
    let d = library_device()?;
    let name = c_str(name)?;
    if kernel.is_null() {
        return Err(DriverError::INVALID_VALUE);
    }
    out(kernel, rt().module_function(d, library, name)?)
} }

// A module and a library are one thing here, so are a function and a
// kernel: the module forms count and list the same kernels.
driver_fn! { [cuLibraryGetKernelCount, cuModuleGetFunctionCount] (count: *mut c_uint, library: u64) {
    initialized()?;
    out(count, rt().module_kernel_names(library)?.len() as c_uint)
} }

driver_fn! { [cuLibraryEnumerateKernels, cuModuleEnumerateFunctions] (kernels: *mut u64, capacity: c_uint, library: u64) {
    let d = library_device()?;
    if kernels.is_null() {
        return Err(DriverError::INVALID_VALUE);
    }
    let names = rt().module_kernel_names(library)?;
    for (i, name) in names.iter().take(capacity as usize).enumerate() {
        let k = rt().module_function(d, library, name)?;
        // SAFETY: the caller's array holds `capacity` handles; `i` is below it.
        out(unsafe { kernels.add(i) }, k)?;
    }
    Ok(())
} }

// A library is its own module.
driver_fn! { cuLibraryGetModule (module: *mut u64, library: u64) {
    initialized()?;
    if !rt().module_exists(library) {
        return Err(DriverError::INVALID_HANDLE);
    }
    out(module, library)
} }

driver_fn! { cuLibraryGetGlobal (dptr: *mut u64, bytes: *mut usize, library: u64, name: *const c_char) {
    let d = library_device()?;
    let (p, size) = rt().module_global(d, library, c_str(name)?)?;
    if !dptr.is_null() {
        out(dptr, p)?;
    }
    if !bytes.is_null() {
        out(bytes, size as usize)?;
    }
    Ok(())
} }

// A `__managed__` variable of a library: its global, mirrored on the host
// like managed memory. (NVIDIA's static runtime asks for each variable it
// registered as managed; the emulator keeps no mark of `.managed` globals,
// so the name is trusted.)
driver_fn! { cuLibraryGetManaged (dptr: *mut u64, bytes: *mut usize, library: u64, name: *const c_char) {
    let d = library_device()?;
    let (p, size) = rt().module_global(d, library, c_str(name)?)?;
    crate::cudart::managed::adopt_variables(d, &[(p, size)])?;
    if !dptr.is_null() {
        out(dptr, p)?;
    }
    if !bytes.is_null() {
        out(bytes, size as usize)?;
    }
    Ok(())
} }

// A kernel is its function in every context.
driver_fn! { cuKernelGetFunction (function: *mut u64, kernel: u64) {
    context_device()?;
    rt().function_module(kernel)?;
    out(function, kernel)
} }

driver_fn! { cuKernelGetLibrary (library: *mut u64, kernel: u64) {
    initialized()?;
    out(library, rt().function_module(kernel)?)
} }

// ---- functions ---------------------------------------------------------------

/// `CUfunction_attribute` values.
mod attr {
    pub(super) const MAX_THREADS_PER_BLOCK: i32 = 0;
    pub(super) const SHARED_SIZE_BYTES: i32 = 1;
    pub(super) const CONST_SIZE_BYTES: i32 = 2;
    pub(super) const LOCAL_SIZE_BYTES: i32 = 3;
    pub(super) const NUM_REGS: i32 = 4;
    pub(super) const PTX_VERSION: i32 = 5;
    pub(super) const BINARY_VERSION: i32 = 6;
    pub(super) const CACHE_MODE_CA: i32 = 7;
    pub(super) const MAX_DYNAMIC_SHARED_SIZE_BYTES: i32 = 8;
    pub(super) const PREFERRED_SHARED_MEMORY_CARVEOUT: i32 = 9;
}

fn function_attribute(function: u64, attribute: c_int) -> Result<c_int, DriverError> {
    let a = rt().kernel_attributes(function)?;
    Ok(match attribute {
        attr::MAX_THREADS_PER_BLOCK => a.max_threads_per_block,
        attr::SHARED_SIZE_BYTES => a.shared_size_bytes as c_int,
        attr::CONST_SIZE_BYTES => a.const_size_bytes as c_int,
        attr::LOCAL_SIZE_BYTES => a.local_size_bytes as c_int,
        attr::NUM_REGS => a.num_regs,
        attr::PTX_VERSION => a.ptx_version,
        attr::BINARY_VERSION => a.binary_version,
        attr::CACHE_MODE_CA => 0,
        attr::MAX_DYNAMIC_SHARED_SIZE_BYTES => a.max_dynamic_shared_size_bytes,
        attr::PREFERRED_SHARED_MEMORY_CARVEOUT => a.preferred_shmem_carveout,
        // Cluster attributes: no cluster is required or set.
        10..=15 => 0,
        _ => return Err(DriverError::INVALID_VALUE),
    })
}

driver_fn! { cuFuncGetAttribute (value: *mut c_int, attribute: c_int, function: u64) {
    context_device()?;
    out(value, function_attribute(function, attribute)?)
} }

driver_fn! { cuKernelGetAttribute (value: *mut c_int, attribute: c_int, kernel: u64, dev: c_int) {
    super::device(dev)?;
    out(value, function_attribute(kernel, attribute)?)
} }

fn set_attribute(function: u64, attribute: c_int, value: c_int) -> DriverResult {
    match attribute {
        attr::MAX_DYNAMIC_SHARED_SIZE_BYTES | attr::PREFERRED_SHARED_MEMORY_CARVEOUT => {
            Ok(rt().set_kernel_attribute(function, attribute, value)?)
        }
        // Hints with no effect on results.
        attr::CACHE_MODE_CA | 10..=15 => Ok(()),
        _ => Err(DriverError::INVALID_VALUE),
    }
}

driver_fn! { cuFuncSetAttribute (function: u64, attribute: c_int, value: c_int) {
    context_device()?;
    set_attribute(function, attribute, value)
} }

driver_fn! { cuKernelSetAttribute (attribute: c_int, value: c_int, kernel: u64, dev: c_int) {
    super::device(dev)?;
    set_attribute(kernel, attribute, value)
} }

// Cache and shared-memory bank preferences are hints.
driver_fn! { [cuFuncSetCacheConfig, cuFuncSetSharedMemConfig] (function: u64, _config: c_int) {
    context_device()?;
    rt().kernel_attributes(function)?;
    Ok(())
} }

driver_fn! { cuKernelSetCacheConfig (kernel: u64, _config: c_int, dev: c_int) {
    super::device(dev)?;
    rt().kernel_attributes(kernel)?;
    Ok(())
} }

driver_fn! { cuFuncGetModule (module: *mut u64, function: u64) {
    initialized()?;
    out(module, rt().function_module(function)?)
} }

/// Names handed out stay valid for the life of the process.
pub(crate) fn static_name(function: u64) -> Result<*const c_char, DriverError> {
    static NAMES: Mutex<Option<HashMap<u64, CString>>> = Mutex::new(None);
    let name = rt().function_name(function)?;
    let mut names = NAMES.lock().map_err(|_| DriverError::UNKNOWN)?;
    let names = names.get_or_insert_with(HashMap::new);
    let entry = names
        .entry(function)
        .or_insert_with(|| CString::new(name).unwrap_or_default());
    Ok(entry.as_ptr())
}

driver_fn! { [cuFuncGetName, cuKernelGetName] (name: *mut *const c_char, function: u64) {
    initialized()?;
    if name.is_null() {
        return Err(DriverError::INVALID_VALUE);
    }
    out(name, static_name(function)?)
} }

driver_fn! { [cuFuncGetParamCount, cuKernelGetParamCount] (function: u64, count: *mut usize) {
    let d = context_device().or_else(|_| library_device())?;
    if count.is_null() {
        return Err(DriverError::INVALID_VALUE);
    }
    out(count, rt().kernel_params(d, function)?.len())
} }

driver_fn! { [cuFuncGetParamInfo, cuKernelGetParamInfo] (function: u64, index: usize, offset: *mut usize, size: *mut usize) {
    let d = context_device().or_else(|_| library_device())?;
    let params = rt().kernel_params(d, function)?;
    let &(o, s) = params.get(index).ok_or(DriverError::INVALID_VALUE)?;
    if !offset.is_null() {
        out(offset, o)?;
    }
    if !size.is_null() {
        out(size, s)?;
    }
    Ok(())
} }

driver_fn! { cuFuncIsLoaded (state: *mut c_int, function: u64) {
    initialized()?;
    rt().kernel_attributes(function)?;
    // CU_FUNCTION_LOADING_STATE_LOADED.
    out(state, 1)
} }

driver_fn! { cuFuncLoad (function: u64) {
    initialized()?;
    rt().kernel_attributes(function)?;
    Ok(())
} }

driver_fn! { cuOccupancyMaxActiveBlocksPerMultiprocessor (blocks: *mut c_int, function: u64, block_size: c_int, dynamic_smem: usize) {
    context_device()?;
    out(blocks, occupancy(function as *const c_void, block_size, dynamic_smem)?)
} }

driver_fn! { cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags (blocks: *mut c_int, function: u64, block_size: c_int, dynamic_smem: usize, _flags: c_uint) {
    context_device()?;
    out(blocks, occupancy(function as *const c_void, block_size, dynamic_smem)?)
} }

/// `size_t (*)(int blockSize)`.
type SmemForBlock = Option<extern "C" fn(c_int) -> usize>;

// The block size with the most resident threads per multiprocessor, and
// the grid that fills the device at that size.
driver_fn! { cuOccupancyMaxPotentialBlockSize (min_grid: *mut c_int, block: *mut c_int, function: u64, smem_for_block: SmemForBlock, dynamic_smem: usize, limit: c_int) {
    max_potential_block_size(min_grid, block, function, smem_for_block, dynamic_smem, limit)
} }

/// `CU_OCCUPANCY_DEFAULT` and `CU_OCCUPANCY_DISABLE_CACHING_OVERRIDE`: the
/// emulated device has no cache configuration to override.
const OCCUPANCY_FLAGS: c_uint = 0x1;

driver_fn! { cuOccupancyMaxPotentialBlockSizeWithFlags (min_grid: *mut c_int, block: *mut c_int, function: u64, smem_for_block: SmemForBlock, dynamic_smem: usize, limit: c_int, flags: c_uint) {
    if flags & !OCCUPANCY_FLAGS != 0 {
        return Err(DriverError::INVALID_VALUE);
    }
    max_potential_block_size(min_grid, block, function, smem_for_block, dynamic_smem, limit)
} }

/// The block size that keeps the most threads resident, and the grid that
/// fills the device at that size.
fn max_potential_block_size(
    min_grid: *mut c_int,
    block: *mut c_int,
    function: u64,
    smem_for_block: SmemForBlock,
    dynamic_smem: usize,
    limit: c_int,
) -> DriverResult {
    let d = context_device()?;
    let props = rt().props(d as c_int)?;
    let attrs = rt().kernel_attributes(function)?;
    let warp = props.warp_size.max(1);
    let mut max_block = attrs.max_threads_per_block.min(props.max_threads_per_block);
    if limit > 0 {
        max_block = max_block.min(limit);
    }
    let mut best = (0, 0, 0);
    let mut size = max_block / warp * warp;
    while size > 0 {
        let smem = smem_for_block.map_or(dynamic_smem, |f| f(size));
        let blocks = occupancy(function as *const c_void, size, smem)?;
        if blocks * size > best.0 {
            best = (blocks * size, size, blocks);
        }
        size -= warp;
    }
    out(block, best.1)?;
    out(min_grid, best.2 * props.multi_processor_count)
}

// ---- the linker ----------------------------------------------------------------

/// `CUjitInputType`.
const JIT_INPUT_CUBIN: c_int = 0;
const JIT_INPUT_PTX: c_int = 1;
const JIT_INPUT_FATBINARY: c_int = 2;
const JIT_INPUT_OBJECT: c_int = 3;
const JIT_INPUT_LIBRARY: c_int = 4;

/// `CUjit_option` values for the log buffers.
const JIT_INFO_LOG_BUFFER: c_int = 3;
const JIT_INFO_LOG_BUFFER_SIZE_BYTES: c_int = 4;
const JIT_ERROR_LOG_BUFFER: c_int = 5;
const JIT_ERROR_LOG_BUFFER_SIZE_BYTES: c_int = 6;

/// The JIT log buffers a caller passed, filled when the work is done: empty
/// on success, the failure's reason on error.
struct JitLogs {
    info: Option<(*mut c_char, *mut *mut c_void)>,
    error: Option<(*mut c_char, *mut *mut c_void)>,
}

impl JitLogs {
    fn new(count: c_uint, options: *const c_int, values: *mut *mut c_void) -> Self {
        let mut logs = JitLogs {
            info: None,
            error: None,
        };
        if options.is_null() || values.is_null() {
            return logs;
        }
        let (mut info, mut info_size, mut error, mut error_size) = (None, None, None, None);
        for i in 0..count as usize {
            // SAFETY: the API passes `count` options and as many values.
            let (option, slot) = unsafe { (*options.add(i), values.add(i)) };
            // SAFETY: as above.
            let value = unsafe { *slot };
            match option {
                JIT_INFO_LOG_BUFFER => info = Some(value as *mut c_char),
                JIT_INFO_LOG_BUFFER_SIZE_BYTES => info_size = Some(slot),
                JIT_ERROR_LOG_BUFFER => error = Some(value as *mut c_char),
                JIT_ERROR_LOG_BUFFER_SIZE_BYTES => error_size = Some(slot),
                _ => {}
            }
        }
        logs.info = info.zip(info_size);
        logs.error = error.zip(error_size);
        logs
    }

    fn finish(&self, result: &DriverResult) {
        self.finish_with(result, None);
    }

    /// [`JitLogs::finish`], with the failure's reason when known.
    fn finish_with(&self, result: &DriverResult, why: Option<&str>) {
        let message = match (result, why) {
            (Ok(()), _) => String::new(),
            (Err(_), Some(why)) => format!("rcud: {why}"),
            (Err(e), None) => format!("rcud: the module could not be loaded (CUresult {})", e.0),
        };
        Self::write(self.info, "");
        Self::write(self.error, &message);
    }

    /// Writes `text` (cut to fit, NUL-terminated) and stores the bytes
    /// written in the size option, as the driver does.
    fn write(log: Option<(*mut c_char, *mut *mut c_void)>, text: &str) {
        let Some((buffer, size_slot)) = log else {
            return;
        };
        // SAFETY: the size option's value slot holds the buffer's size.
        let capacity = unsafe { *size_slot } as usize;
        if buffer.is_null() || capacity == 0 {
            return;
        }
        let n = text.len().min(capacity - 1);
        // SAFETY: the caller's buffer holds `capacity` bytes; n + 1 fit.
        unsafe {
            std::ptr::copy_nonoverlapping(text.as_ptr(), buffer as *mut u8, n);
            *buffer.add(n) = 0;
            *size_slot = n as *mut c_void;
        }
    }
}

/// A link in progress: the code added so far and, once complete, the image.
struct LinkState {
    code: Vec<Vec<u8>>,
    logs: JitLogs,
    image: Vec<u8>,
    /// Why the link failed, for the error log.
    error: Option<String>,
}

fn link_state<'a>(state: *mut c_void) -> Result<&'a mut LinkState, DriverError> {
    if state.is_null() {
        return Err(DriverError::INVALID_HANDLE);
    }
    // SAFETY: link states are made by cuLinkCreate and live until
    // cuLinkDestroy; the API forbids using one from two threads at once.
    Ok(unsafe { &mut *(state as *mut LinkState) })
}

// The pre-CUDA 6.5 names (cuLinkCreate, ...) have the same signatures.
driver_fn! { [cuLinkCreate_v2, cuLinkCreate] (count: c_uint, options: *const c_int, values: *mut *mut c_void, state: *mut *mut c_void) {
    context_device()?;
    let link = Box::new(LinkState { code: Vec::new(), logs: JitLogs::new(count, options, values), image: Vec::new(), error: None });
    out(state, Box::into_raw(link) as *mut c_void)
} }

fn link_add(state: *mut c_void, kind: c_int, bytes: Vec<u8>, name: &str) -> DriverResult {
    let link = link_state(state)?;
    match kind {
        // The device runtime library serves dynamic parallelism, which the
        // emulated device does not run; kernels that do not use it link
        // without it.
        JIT_INPUT_LIBRARY if name.contains("cudadevrt") => Ok(()),
        JIT_INPUT_CUBIN | JIT_INPUT_PTX | JIT_INPUT_FATBINARY => {
            if image::classify(&bytes).is_none() {
                return Err(DriverError::INVALID_IMAGE);
            }
            link.code.push(bytes);
            Ok(())
        }
        JIT_INPUT_OBJECT | JIT_INPUT_LIBRARY => {
            tracing::warn!("cuLinkAddData: relocatable objects and libraries ({name}) are not supported by rcud");
            Err(DriverError::NOT_SUPPORTED)
        }
        _ => Err(DriverError::INVALID_VALUE),
    }
}

driver_fn! { [cuLinkAddData_v2, cuLinkAddData] (state: *mut c_void, kind: c_int, data: *mut c_void, size: usize, name: *const c_char, _count: c_uint, _options: *mut c_int, _values: *mut *mut c_void) {
    if data.is_null() {
        return Err(DriverError::INVALID_VALUE);
    }
    // SAFETY: the API passes `size` bytes at `data`.
    let mut bytes = unsafe { std::slice::from_raw_parts(data as *const u8, size) }.to_vec();
    if kind == JIT_INPUT_PTX {
        // PTX sizes may count the terminating NUL; the text ends before it.
        if let Some(n) = bytes.iter().position(|&b| b == 0) {
            bytes.truncate(n);
        }
    }
    let name = if name.is_null() { "" } else { c_str(name).unwrap_or("") };
    link_add(state, kind, bytes, name)
} }

driver_fn! { [cuLinkAddFile_v2, cuLinkAddFile] (state: *mut c_void, kind: c_int, path: *const c_char, _count: c_uint, _options: *mut c_int, _values: *mut *mut c_void) {
    let name = c_str(path)?.to_string();
    if kind == JIT_INPUT_LIBRARY && name.contains("cudadevrt") {
        return link_add(state, kind, Vec::new(), &name);
    }
    link_add(state, kind, read_file(path)?, &name)
} }

// One code input links to itself; several are linked as PTX (the emulated
// device runs PTX, and a real driver JIT-compiles it).
driver_fn! { cuLinkComplete (state: *mut c_void, image_out: *mut *mut c_void, size_out: *mut usize) {
    let d = context_device()?;
    let link = link_state(state)?;
    let result = match link.code.len() {
        0 => Err(DriverError::INVALID_VALUE),
        1 => {
            let code = &link.code[0];
            link.image = match image::classify(code) {
                Some(ImageKind::Ptx) => image::wrap_ptx(code),
                Some(ImageKind::Cubin) => image::wrap_cubin(code),
                _ => code.clone(),
            };
            Ok(())
        }
        _ => {
            let props = rt().props(d as c_int)?;
            let arch = (props.major * 10 + props.minor) as u32;
            match link_ptx(&link.code, arch) {
                Ok(ptx) => {
                    link.image = image::wrap_ptx(ptx.as_bytes());
                    Ok(())
                }
                Err((e, why)) => {
                    tracing::warn!("cuLinkComplete: {why}");
                    link.error = Some(why);
                    Err(e)
                }
            }
        }
    };
    link.logs.finish_with(&result, link.error.as_deref());
    result?;
    out(image_out, link.image.as_mut_ptr() as *mut c_void)?;
    out(size_out, link.image.len())
} }

/// The PTX of each input, linked into one text. Inputs are PTX or fat
/// binaries with PTX for `arch` or older; machine code (SASS) cannot be
/// linked here.
fn link_ptx(code: &[Vec<u8>], arch: u32) -> Result<String, (DriverError, String)> {
    let mut texts = Vec::with_capacity(code.len());
    for (i, bytes) in code.iter().enumerate() {
        let text = match image::classify(bytes) {
            Some(ImageKind::Ptx) => String::from_utf8_lossy(bytes).into_owned(),
            Some(ImageKind::Fatbin) => rcud_fatbin::FatBinary::parse(bytes)
                .ok()
                .and_then(|f| f.ptx_for(arch).map(str::to_string))
                .ok_or_else(|| {
                    (
                        DriverError::NOT_SUPPORTED,
                        format!("input {i}: a fat binary without PTX for sm_{arch} cannot be linked with other inputs by rcud"),
                    )
                })?,
            _ => {
                return Err((
                    DriverError::NOT_SUPPORTED,
                    format!("input {i}: machine code (cubin) cannot be linked with other inputs by rcud; link PTX"),
                ))
            }
        };
        texts.push(text);
    }
    let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
    rcud_fatbin::ptx_link::link(&refs).map_err(|e| (DriverError::INVALID_PTX, e.to_string()))
}

driver_fn! { cuLinkDestroy (state: *mut c_void) {
    if state.is_null() {
        return Err(DriverError::INVALID_HANDLE);
    }
    // SAFETY: made by Box::into_raw in cuLinkCreate; destroyed once.
    drop(unsafe { Box::from_raw(state as *mut LinkState) });
    Ok(())
} }
