//! Graphics interoperability (OpenGL, EGL, VDPAU, graphics resources) and
//! external memory and semaphores.
//!
//! rcud's GPUs are remote: no local OpenGL context, EGL display or VDPAU
//! device is driven by one of them, and no handle exported by a local
//! driver (a file descriptor, an EGL stream or sync object) names their
//! memory. So nothing is ever registered or imported, and every call
//! answers what CUDA answers on a machine whose graphics and handles
//! belong to no CUDA device (checked against NVIDIA's static runtime where
//! it answers by itself): malformed arguments first
//! (`cudaErrorInvalidValue`), then the missing graphics context or device,
//! and `cudaErrorInvalidResourceHandle` for resources, external memory and
//! semaphores, none of which can exist. The driver's twins
//! (`driver/interop.rs`) share these bodies.

use std::ffi::c_void;
use std::os::raw::{c_char, c_int, c_uint};

use rcud_client::Runtime;
use rcud_proto::CudaError;

use super::stream::Stream;
use crate::ffi::{guard, CudaErrorT};

type Resource = *mut c_void;
type GlUint = c_uint;

/// Whether the process has an OpenGL (GLX) or EGL context current on this
/// thread: the functions are looked up, not linked, so a program without
/// OpenGL needs no OpenGL library.
fn graphics_context_current() -> bool {
    gl_context_functions().iter().any(|&f| {
        // SAFETY: both functions take no arguments and return the current
        // context (NULL for none), as their headers declare.
        let current: extern "C" fn() -> *mut c_void = unsafe { std::mem::transmute(f) };
        !current().is_null()
    })
}

/// `glXGetCurrentContext` and `eglGetCurrentContext`, of the libraries the
/// process has loaded.
fn gl_context_functions() -> Vec<*mut c_void> {
    ["glXGetCurrentContext\0", "eglGetCurrentContext\0"]
        .iter()
        .map(|name| {
            // SAFETY: dlsym with RTLD_DEFAULT and a NUL-terminated name only
            // searches the loaded objects.
            unsafe { libc::dlsym(libc::RTLD_DEFAULT, name.as_ptr() as *const c_char) }
        })
        .filter(|f| !f.is_null())
        .collect()
}

/// The error for an OpenGL object. Without an OpenGL library in the process
/// NVIDIA's runtime answers `cudaErrorOperatingSystem` (seen on a headless
/// H200); with one but no current context, `cudaErrorInvalidGraphicsContext`;
/// with a context, its GPU is not a CUDA device of this process.
fn gl_unavailable() -> CudaError {
    if gl_context_functions().is_empty() {
        CudaError::OPERATING_SYSTEM
    } else if graphics_context_current() {
        CudaError::INVALID_DEVICE
    } else {
        CudaError::INVALID_GRAPHICS_CONTEXT
    }
}

/// `cudaGraphicsRegisterFlags`: read-only, write-discard, surface
/// load/store, texture gather.
const REGISTER_FLAGS: c_uint = 0xf;
/// `cudaGraphicsMapFlags`: none, read-only, write-discard.
const MAP_FLAGS_MAX: c_uint = 2;

fn not_null<T>(p: *const T) -> Result<(), CudaError> {
    if p.is_null() {
        Err(CudaError::INVALID_VALUE)
    } else {
        Ok(())
    }
}

/// `cudaGLGetDevices`: no CUDA device drives the OpenGL context.
pub(crate) fn gl_get_devices(count: *mut c_uint) -> Result<(), CudaError> {
    not_null(count)?;
    if !graphics_context_current() {
        return Err(gl_unavailable());
    }
    crate::ffi::write_out(count, 0)?;
    Err(CudaError::NO_DEVICE)
}

/// `cudaGraphicsGLRegisterBuffer` / `Image`.
pub(crate) fn gl_register(resource: *mut Resource, flags: c_uint) -> Result<(), CudaError> {
    not_null(resource)?;
    if flags & !REGISTER_FLAGS != 0 {
        return Err(CudaError::INVALID_VALUE);
    }
    Err(gl_unavailable())
}

/// The deprecated buffer-object functions: no buffer can be registered, so
/// none can be mapped or unmapped (`cudaErrorInvalidValue`, as NVIDIA's
/// runtime answers).
pub(crate) fn gl_buffer_object(map: Option<bool>) -> Result<(), CudaError> {
    match map {
        Some(_) => Err(CudaError::INVALID_VALUE),
        None => Err(gl_unavailable()),
    }
}

/// `cudaGraphicsEGLRegisterImage` and the EGL stream connections: the EGL
/// object names nothing CUDA can use. NVIDIA's runtime answers
/// `cudaErrorUnknown` before it looks at the object (seen on a headless
/// H200, for a NULL image too).
pub(crate) fn egl_object(out: *const c_void, _object: *const c_void) -> Result<(), CudaError> {
    not_null(out)?;
    Err(CudaError::UNKNOWN)
}

/// `cudaVDPAUSetVDPAUDevice` / `cudaGraphicsVDPAURegister*Surface`: the
/// VDPAU device is not one of CUDA's.
pub(crate) fn vdpau(device: Option<c_int>, out: *const c_void) -> Result<(), CudaError> {
    not_null(out)?;
    if let Some(d) = device {
        Runtime::global()
            .props(d)
            .map_err(|_| CudaError::INVALID_DEVICE)?;
        return Err(CudaError::INVALID_DEVICE);
    }
    // Registering a surface with no VDPAU device set: NVIDIA's runtime
    // answers `cudaErrorDeviceUninitialized`.
    Err(CudaError::DEVICE_UNINITIALIZED)
}

/// `cudaVDPAUGetDevice`: no CUDA device drives the VDPAU device.
pub(crate) fn vdpau_get_device(
    device: *mut c_int,
    get_proc: *const c_void,
) -> Result<(), CudaError> {
    not_null(device)?;
    not_null(get_proc)?;
    Err(CudaError::NO_DEVICE)
}

/// A graphics resource handle: none exists.
pub(crate) fn resource(_r: Resource) -> Result<(), CudaError> {
    Err(CudaError::INVALID_RESOURCE_HANDLE)
}

/// `cudaGraphicsResourceSetMapFlags`: NVIDIA's runtime checks the
/// resource before the flags.
pub(crate) fn resource_set_map_flags(r: Resource, _flags: c_uint) -> Result<(), CudaError> {
    resource(r)
}

/// `cudaGraphicsMapResources` / `Unmap`.
pub(crate) fn map_resources(count: c_int, resources: *const Resource) -> Result<(), CudaError> {
    if count <= 0 {
        return Err(CudaError::INVALID_VALUE);
    }
    not_null(resources)?;
    Err(CudaError::INVALID_RESOURCE_HANDLE)
}

/// A resource query with an output: the output must exist, the resource
/// cannot.
pub(crate) fn resource_query(out: *const c_void, r: Resource) -> Result<(), CudaError> {
    not_null(out)?;
    resource(r)
}

/// `cudaImportExternalMemory` and `cudaImportExternalSemaphore`: whatever
/// the descriptor's type, its handle (a file descriptor, an NvSci object, a
/// Windows handle, which Linux lacks) names memory or a semaphore of no
/// CUDA device here. An unknown type is an invalid argument; a handle of a
/// known type that names nothing the driver can import, `cudaErrorUnknown`,
/// as NVIDIA's driver answers (seen on an H200).
pub(crate) fn import(out: *mut *mut c_void, desc: *const c_void) -> Result<(), CudaError> {
    not_null(out)?;
    // Both descriptors start with their handle type: memory 1..=8,
    // semaphores 1..=10.
    let kind = super::mempool::read_in(desc as *const c_uint)?;
    if !(1..=10).contains(&kind) {
        return Err(CudaError::INVALID_VALUE);
    }
    Err(CudaError::UNKNOWN)
}

/// `cudaSignalExternalSemaphoresAsync` / `Wait`: no semaphore exists, so
/// any named one is an invalid handle; none at all is an invalid argument,
/// as NVIDIA's runtime answers.
pub(crate) fn semaphores_async(
    sems: *const *mut c_void,
    params: *const c_void,
    count: c_uint,
    stream: Stream,
) -> Result<(), CudaError> {
    Runtime::global().stream_device(stream as u64)?;
    if count == 0 {
        return Err(CudaError::INVALID_VALUE);
    }
    not_null(sems)?;
    not_null(params)?;
    Err(CudaError::INVALID_RESOURCE_HANDLE)
}

// ---- OpenGL --------------------------------------------------------------------

#[no_mangle]
pub extern "C" fn cudaGLGetDevices(
    count: *mut c_uint,
    _devices: *mut c_int,
    _capacity: c_uint,
    _list: c_int,
) -> CudaErrorT {
    guard(|| gl_get_devices(count))
}

#[no_mangle]
pub extern "C" fn cudaGraphicsGLRegisterBuffer(
    resource: *mut Resource,
    _buffer: GlUint,
    flags: c_uint,
) -> CudaErrorT {
    guard(|| gl_register(resource, flags))
}

#[no_mangle]
pub extern "C" fn cudaGraphicsGLRegisterImage(
    resource: *mut Resource,
    _image: GlUint,
    _target: c_uint,
    flags: c_uint,
) -> CudaErrorT {
    guard(|| gl_register(resource, flags))
}

/// Deprecated: interop follows the current device since CUDA 5.
#[no_mangle]
pub extern "C" fn cudaGLSetGLDevice(device: c_int) -> CudaErrorT {
    guard(|| {
        Runtime::global()
            .props(device)
            .map(|_| ())
            .map_err(|_| CudaError::INVALID_DEVICE)
    })
}

#[no_mangle]
pub extern "C" fn cudaGLRegisterBufferObject(_buffer: GlUint) -> CudaErrorT {
    guard(|| gl_buffer_object(None))
}

#[no_mangle]
pub extern "C" fn cudaGLUnregisterBufferObject(_buffer: GlUint) -> CudaErrorT {
    guard(|| Err(CudaError::INVALID_RESOURCE_HANDLE))
}

#[no_mangle]
pub extern "C" fn cudaGLSetBufferObjectMapFlags(_buffer: GlUint, flags: c_uint) -> CudaErrorT {
    guard(|| {
        if flags > MAP_FLAGS_MAX {
            return Err(CudaError::INVALID_VALUE);
        }
        Err(CudaError::INVALID_RESOURCE_HANDLE)
    })
}

#[no_mangle]
pub extern "C" fn cudaGLMapBufferObject(_ptr: *mut *mut c_void, _buffer: GlUint) -> CudaErrorT {
    guard(|| gl_buffer_object(Some(true)))
}

#[no_mangle]
pub extern "C" fn cudaGLMapBufferObjectAsync(
    _ptr: *mut *mut c_void,
    _buffer: GlUint,
    _stream: Stream,
) -> CudaErrorT {
    guard(|| gl_buffer_object(Some(true)))
}

#[no_mangle]
pub extern "C" fn cudaGLUnmapBufferObject(_buffer: GlUint) -> CudaErrorT {
    guard(|| gl_buffer_object(Some(false)))
}

#[no_mangle]
pub extern "C" fn cudaGLUnmapBufferObjectAsync(_buffer: GlUint, _stream: Stream) -> CudaErrorT {
    guard(|| gl_buffer_object(Some(false)))
}

// ---- EGL -------------------------------------------------------------------------

#[no_mangle]
pub extern "C" fn cudaGraphicsEGLRegisterImage(
    resource: *mut Resource,
    image: *mut c_void,
    _flags: c_uint,
) -> CudaErrorT {
    guard(|| egl_object(resource as *const c_void, image))
}

#[no_mangle]
pub extern "C" fn cudaEGLStreamConsumerConnect(
    conn: *mut c_void,
    egl_stream: *mut c_void,
) -> CudaErrorT {
    guard(|| egl_object(conn, egl_stream))
}

#[no_mangle]
pub extern "C" fn cudaEGLStreamConsumerConnectWithFlags(
    conn: *mut c_void,
    egl_stream: *mut c_void,
    _flags: c_uint,
) -> CudaErrorT {
    guard(|| egl_object(conn, egl_stream))
}

#[no_mangle]
pub extern "C" fn cudaEGLStreamProducerConnect(
    conn: *mut c_void,
    egl_stream: *mut c_void,
    _width: c_int,
    _height: c_int,
) -> CudaErrorT {
    guard(|| egl_object(conn, egl_stream))
}

/// The stream-connection calls on a connection: none was ever made.
/// `PresentFrame` passes a frame structure by value, in memory, so the
/// connection is the only argument in a register: like the others it
/// reads nothing else.
#[no_mangle]
pub extern "C" fn cudaEGLStreamConsumerDisconnect(_conn: *mut c_void) -> CudaErrorT {
    guard(|| Err(CudaError::INVALID_VALUE))
}

#[no_mangle]
pub extern "C" fn cudaEGLStreamProducerDisconnect(_conn: *mut c_void) -> CudaErrorT {
    guard(|| Err(CudaError::INVALID_VALUE))
}

#[no_mangle]
pub extern "C" fn cudaEGLStreamConsumerAcquireFrame(_conn: *mut c_void) -> CudaErrorT {
    guard(|| Err(CudaError::INVALID_VALUE))
}

#[no_mangle]
pub extern "C" fn cudaEGLStreamConsumerReleaseFrame(_conn: *mut c_void) -> CudaErrorT {
    guard(|| Err(CudaError::INVALID_VALUE))
}

#[no_mangle]
pub extern "C" fn cudaEGLStreamProducerPresentFrame(_conn: *mut c_void) -> CudaErrorT {
    guard(|| Err(CudaError::INVALID_VALUE))
}

#[no_mangle]
pub extern "C" fn cudaEGLStreamProducerReturnFrame(_conn: *mut c_void) -> CudaErrorT {
    guard(|| Err(CudaError::INVALID_VALUE))
}

/// EGL sync objects become events on Tegra only: NVIDIA's x86-64 runtime
/// answers `cudaErrorNotSupported` whatever the arguments.
#[no_mangle]
pub extern "C" fn cudaEventCreateFromEGLSync(
    _event: *mut *mut c_void,
    _sync: *mut c_void,
    _flags: c_uint,
) -> CudaErrorT {
    guard(|| Err(CudaError::NOT_SUPPORTED))
}

#[no_mangle]
pub extern "C" fn cudaGraphicsResourceGetMappedEglFrame(
    frame: *mut c_void,
    r: Resource,
    _index: c_uint,
    _level: c_uint,
) -> CudaErrorT {
    guard(|| resource_query(frame, r))
}

// ---- VDPAU -------------------------------------------------------------------------

#[no_mangle]
pub extern "C" fn cudaVDPAUGetDevice(
    device: *mut c_int,
    _vdp_device: c_uint,
    get_proc: *mut c_void,
) -> CudaErrorT {
    guard(|| vdpau_get_device(device, get_proc))
}

#[no_mangle]
pub extern "C" fn cudaVDPAUSetVDPAUDevice(
    device: c_int,
    _vdp_device: c_uint,
    get_proc: *mut c_void,
) -> CudaErrorT {
    guard(|| vdpau(Some(device), get_proc))
}

#[no_mangle]
pub extern "C" fn cudaGraphicsVDPAURegisterVideoSurface(
    resource: *mut Resource,
    _surface: c_uint,
    flags: c_uint,
) -> CudaErrorT {
    guard(|| {
        if flags > MAP_FLAGS_MAX {
            return Err(CudaError::INVALID_VALUE);
        }
        vdpau(None, resource as *const c_void)
    })
}

#[no_mangle]
pub extern "C" fn cudaGraphicsVDPAURegisterOutputSurface(
    resource: *mut Resource,
    _surface: c_uint,
    flags: c_uint,
) -> CudaErrorT {
    guard(|| {
        if flags > MAP_FLAGS_MAX {
            return Err(CudaError::INVALID_VALUE);
        }
        vdpau(None, resource as *const c_void)
    })
}

// ---- graphics resources --------------------------------------------------------------

#[no_mangle]
pub extern "C" fn cudaGraphicsUnregisterResource(r: Resource) -> CudaErrorT {
    guard(|| resource(r))
}

#[no_mangle]
pub extern "C" fn cudaGraphicsResourceSetMapFlags(r: Resource, flags: c_uint) -> CudaErrorT {
    guard(|| resource_set_map_flags(r, flags))
}

#[no_mangle]
pub extern "C" fn cudaGraphicsMapResources(
    count: c_int,
    resources: *mut Resource,
    _stream: Stream,
) -> CudaErrorT {
    guard(|| map_resources(count, resources))
}

#[no_mangle]
pub extern "C" fn cudaGraphicsUnmapResources(
    count: c_int,
    resources: *mut Resource,
    _stream: Stream,
) -> CudaErrorT {
    guard(|| map_resources(count, resources))
}

#[no_mangle]
pub extern "C" fn cudaGraphicsResourceGetMappedPointer(
    ptr: *mut *mut c_void,
    size: *mut usize,
    r: Resource,
) -> CudaErrorT {
    guard(|| {
        not_null(size)?;
        resource_query(ptr as *const c_void, r)
    })
}

#[no_mangle]
pub extern "C" fn cudaGraphicsSubResourceGetMappedArray(
    array: *mut *mut c_void,
    r: Resource,
    _index: c_uint,
    _level: c_uint,
) -> CudaErrorT {
    guard(|| resource_query(array as *const c_void, r))
}

#[no_mangle]
pub extern "C" fn cudaGraphicsResourceGetMappedMipmappedArray(
    array: *mut *mut c_void,
    r: Resource,
) -> CudaErrorT {
    guard(|| resource_query(array as *const c_void, r))
}

// ---- external memory and semaphores ------------------------------------------------------

#[no_mangle]
pub extern "C" fn cudaImportExternalMemory(
    out: *mut *mut c_void,
    desc: *const c_void,
) -> CudaErrorT {
    guard(|| import(out, desc))
}

#[no_mangle]
pub extern "C" fn cudaExternalMemoryGetMappedBuffer(
    ptr: *mut *mut c_void,
    memory: *mut c_void,
    desc: *const c_void,
) -> CudaErrorT {
    guard(|| {
        not_null(desc)?;
        resource_query(ptr as *const c_void, memory)
    })
}

#[no_mangle]
pub extern "C" fn cudaExternalMemoryGetMappedMipmappedArray(
    array: *mut *mut c_void,
    memory: *mut c_void,
    desc: *const c_void,
) -> CudaErrorT {
    guard(|| {
        not_null(desc)?;
        resource_query(array as *const c_void, memory)
    })
}

#[no_mangle]
pub extern "C" fn cudaDestroyExternalMemory(memory: *mut c_void) -> CudaErrorT {
    guard(|| resource(memory))
}

#[no_mangle]
pub extern "C" fn cudaImportExternalSemaphore(
    out: *mut *mut c_void,
    desc: *const c_void,
) -> CudaErrorT {
    guard(|| import(out, desc))
}

#[no_mangle]
pub extern "C" fn cudaDestroyExternalSemaphore(semaphore: *mut c_void) -> CudaErrorT {
    guard(|| resource(semaphore))
}

with_ptsz! {
    fn cudaSignalExternalSemaphoresAsync / cudaSignalExternalSemaphoresAsync_ptsz (sems: *const *mut c_void, params: *const c_void, count: c_uint, stream: Stream) {
        semaphores_async(sems, params, count, stream)
    }
}

with_ptsz! {
    fn cudaWaitExternalSemaphoresAsync / cudaWaitExternalSemaphoresAsync_ptsz (sems: *const *mut c_void, params: *const c_void, count: c_uint, stream: Stream) {
        semaphores_async(sems, params, count, stream)
    }
}
