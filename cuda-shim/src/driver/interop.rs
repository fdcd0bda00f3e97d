//! The driver's graphics interoperability and external memory and
//! semaphores, over the runtime's bodies (`cudart/interop.rs`, which says
//! why every registration and import fails). The driver's codes for these
//! errors have the runtime's values. The legacy variants with 32-bit
//! device pointers (`cuGLMapBufferObject` without `_v2`, ...) and the
//! deprecated interop context constructors stay stubs.

use std::ffi::c_void;
use std::os::raw::{c_int, c_uint};

use super::{initialized, DriverError};
use crate::cudart::interop as core;
use crate::cudart::stream::Stream;

type Resource = *mut c_void;

driver_fn! { [cuGLGetDevices, cuGLGetDevices_v2] (count: *mut c_uint, _devices: *mut c_int, _capacity: c_uint, _list: c_int) {
    initialized()?;
    Ok(core::gl_get_devices(count)?)
} }

// Deprecated and without effect since CUDA 5.
driver_fn! { cuGLInit () {
    initialized()?;
    Ok(())
} }

driver_fn! { cuGraphicsGLRegisterBuffer (resource: *mut Resource, _buffer: c_uint, flags: c_uint) {
    initialized()?;
    Ok(core::gl_register(resource, flags)?)
} }

driver_fn! { cuGraphicsGLRegisterImage (resource: *mut Resource, _image: c_uint, _target: c_uint, flags: c_uint) {
    initialized()?;
    Ok(core::gl_register(resource, flags)?)
} }

driver_fn! { cuGLRegisterBufferObject (_buffer: c_uint) {
    initialized()?;
    Ok(core::gl_buffer_object(None)?)
} }

driver_fn! { cuGLUnregisterBufferObject (_buffer: c_uint) {
    initialized()?;
    Err(DriverError::INVALID_HANDLE)
} }

driver_fn! { cuGLSetBufferObjectMapFlags (_buffer: c_uint, flags: c_uint) {
    initialized()?;
    if flags > 2 {
        return Err(DriverError::INVALID_VALUE);
    }
    Err(DriverError::INVALID_HANDLE)
} }

driver_fn! { [cuGLMapBufferObject_v2, cuGLMapBufferObject_v2_ptds] (_ptr: *mut u64, _size: *mut usize, _buffer: c_uint) {
    initialized()?;
    Ok(core::gl_buffer_object(Some(true))?)
} }

driver_fn! { [cuGLMapBufferObjectAsync_v2, cuGLMapBufferObjectAsync_v2_ptsz] (_ptr: *mut u64, _size: *mut usize, _buffer: c_uint, _stream: Stream) {
    initialized()?;
    Ok(core::gl_buffer_object(Some(true))?)
} }

driver_fn! { cuGLUnmapBufferObject (_buffer: c_uint) {
    initialized()?;
    Ok(core::gl_buffer_object(Some(false))?)
} }

driver_fn! { cuGLUnmapBufferObjectAsync (_buffer: c_uint, _stream: Stream) {
    initialized()?;
    Ok(core::gl_buffer_object(Some(false))?)
} }

driver_fn! { cuGraphicsEGLRegisterImage (resource: *mut Resource, image: *mut c_void, _flags: c_uint) {
    initialized()?;
    Ok(core::egl_object(resource as *const c_void, image)?)
} }

driver_fn! { cuEGLStreamConsumerConnect (conn: *mut c_void, stream: *mut c_void) {
    initialized()?;
    Ok(core::egl_object(conn, stream)?)
} }

driver_fn! { cuEGLStreamConsumerConnectWithFlags (conn: *mut c_void, stream: *mut c_void, _flags: c_uint) {
    initialized()?;
    Ok(core::egl_object(conn, stream)?)
} }

driver_fn! { cuEGLStreamProducerConnect (conn: *mut c_void, stream: *mut c_void, _width: c_int, _height: c_int) {
    initialized()?;
    Ok(core::egl_object(conn, stream)?)
} }

// No connection was ever made; `PresentFrame`'s frame travels in memory,
// so the connection is the only argument read (see the runtime's).
driver_fn! { [cuEGLStreamConsumerDisconnect, cuEGLStreamProducerDisconnect, cuEGLStreamConsumerAcquireFrame, cuEGLStreamConsumerReleaseFrame, cuEGLStreamProducerPresentFrame, cuEGLStreamProducerReturnFrame] (_conn: *mut c_void) {
    initialized()?;
    Err(DriverError::INVALID_VALUE)
} }

// Tegra only, as the runtime's.
driver_fn! { cuEventCreateFromEGLSync (_event: *mut *mut c_void, _sync: *mut c_void, _flags: c_uint) {
    initialized()?;
    Err(DriverError::NOT_SUPPORTED)
} }

driver_fn! { cuGraphicsResourceGetMappedEglFrame (frame: *mut c_void, r: Resource, _index: c_uint, _level: c_uint) {
    initialized()?;
    Ok(core::resource_query(frame, r)?)
} }

driver_fn! { cuVDPAUGetDevice (dev: *mut c_int, _vdp_device: c_uint, get_proc: *mut c_void) {
    initialized()?;
    Ok(core::vdpau_get_device(dev, get_proc)?)
} }

driver_fn! { [cuGraphicsVDPAURegisterVideoSurface, cuGraphicsVDPAURegisterOutputSurface] (resource: *mut Resource, _surface: c_uint, flags: c_uint) {
    initialized()?;
    if flags > 2 {
        return Err(DriverError::INVALID_VALUE);
    }
    Ok(core::vdpau(None, resource as *const c_void)?)
} }

driver_fn! { cuGraphicsUnregisterResource (r: Resource) {
    initialized()?;
    Ok(core::resource(r)?)
} }

driver_fn! { [cuGraphicsResourceSetMapFlags, cuGraphicsResourceSetMapFlags_v2] (r: Resource, flags: c_uint) {
    initialized()?;
    Ok(core::resource_set_map_flags(r, flags)?)
} }

driver_fn! { [cuGraphicsMapResources, cuGraphicsMapResources_ptsz, cuGraphicsUnmapResources, cuGraphicsUnmapResources_ptsz] (count: c_uint, resources: *mut Resource, _stream: Stream) {
    initialized()?;
    let count = c_int::try_from(count).map_err(|_| DriverError::INVALID_VALUE)?;
    Ok(core::map_resources(count, resources)?)
} }

driver_fn! { [cuGraphicsResourceGetMappedPointer, cuGraphicsResourceGetMappedPointer_v2] (ptr: *mut u64, size: *mut usize, r: Resource) {
    initialized()?;
    if size.is_null() {
        return Err(DriverError::INVALID_VALUE);
    }
    Ok(core::resource_query(ptr as *const c_void, r)?)
} }

driver_fn! { cuGraphicsSubResourceGetMappedArray (array: *mut *mut c_void, r: Resource, _index: c_uint, _level: c_uint) {
    initialized()?;
    Ok(core::resource_query(array as *const c_void, r)?)
} }

driver_fn! { cuGraphicsResourceGetMappedMipmappedArray (array: *mut *mut c_void, r: Resource) {
    initialized()?;
    Ok(core::resource_query(array as *const c_void, r)?)
} }

driver_fn! { [cuImportExternalMemory, cuImportExternalSemaphore] (out: *mut *mut c_void, desc: *const c_void) {
    initialized()?;
    Ok(core::import(out, desc)?)
} }

driver_fn! { [cuExternalMemoryGetMappedBuffer, cuExternalMemoryGetMappedMipmappedArray] (out: *mut *mut c_void, memory: *mut c_void, desc: *const c_void) {
    initialized()?;
    if desc.is_null() {
        return Err(DriverError::INVALID_VALUE);
    }
    Ok(core::resource_query(out as *const c_void, memory)?)
} }

driver_fn! { [cuDestroyExternalMemory, cuDestroyExternalSemaphore] (handle: *mut c_void) {
    initialized()?;
    Ok(core::resource(handle)?)
} }

driver_fn! { [cuSignalExternalSemaphoresAsync, cuSignalExternalSemaphoresAsync_ptsz, cuWaitExternalSemaphoresAsync, cuWaitExternalSemaphoresAsync_ptsz] (sems: *const *mut c_void, params: *const c_void, count: c_uint, stream: Stream) {
    initialized()?;
    Ok(core::semaphores_async(sems, params, count, stream)?)
} }
