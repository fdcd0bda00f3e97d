//! User objects (`cudaUserObjectCreate`): reference-counted application
//! resources that graphs keep alive. A graph holds the references it was
//! given, its clones and executable graphs hold their own, and the
//! destructor runs once the last reference is gone, on a thread of its own
//! (`cudaUserObjectNoDestructorSync`: nothing waits for it).

use std::collections::HashMap;

use parking_lot::Mutex;
use rcud_proto::CudaError;

use super::model::{new_handle, Handle};

/// `cudaUserObjectNoDestructorSync`, the one flag CUDA accepts.
const NO_DESTRUCTOR_SYNC: u32 = 1;

#[derive(Debug)]
struct UserObject {
    /// The application's pointer and destructor (`cudaHostFn_t`), as addresses.
    ptr: usize,
    destroy: usize,
    refs: u32,
}

fn objects() -> &'static Mutex<HashMap<Handle, UserObject>> {
    static OBJECTS: std::sync::OnceLock<Mutex<HashMap<Handle, UserObject>>> =
        std::sync::OnceLock::new();
    OBJECTS.get_or_init(Mutex::default)
}

/// `cudaUserObjectCreate`.
pub(crate) fn create(
    ptr: usize,
    destroy: usize,
    initial: u32,
    flags: u32,
) -> Result<Handle, CudaError> {
    if destroy == 0 || initial == 0 || flags != NO_DESTRUCTOR_SYNC {
        return Err(CudaError::INVALID_VALUE);
    }
    let h = new_handle();
    objects().lock().insert(
        h,
        UserObject {
            ptr,
            destroy,
            refs: initial,
        },
    );
    Ok(h)
}

/// `cudaUserObjectRetain`.
pub(crate) fn retain(object: Handle, count: u32) -> Result<(), CudaError> {
    let mut all = objects().lock();
    let o = all.get_mut(&object).ok_or(CudaError::INVALID_VALUE)?;
    if count == 0 {
        return Err(CudaError::INVALID_VALUE);
    }
    o.refs = o.refs.checked_add(count).ok_or(CudaError::INVALID_VALUE)?;
    Ok(())
}

/// `cudaUserObjectRelease`: the destructor runs when no reference is left.
pub(crate) fn release(object: Handle, count: u32) -> Result<(), CudaError> {
    let gone = {
        let mut all = objects().lock();
        let o = all.get_mut(&object).ok_or(CudaError::INVALID_VALUE)?;
        if count == 0 || count > o.refs {
            return Err(CudaError::INVALID_VALUE);
        }
        o.refs -= count;
        if o.refs > 0 {
            return Ok(());
        }
        all.remove(&object)
    };
    if let Some(o) = gone {
        let (ptr, destroy) = (o.ptr, o.destroy);
        let run = move || {
            // SAFETY: `destroy` is the address of the application's
            // cudaHostFn_t, called once with its own pointer, as
            // cudaUserObjectCreate promises.
            let f: unsafe extern "C" fn(*mut std::ffi::c_void) =
                unsafe { std::mem::transmute(destroy) };
            // SAFETY: as above.
            unsafe { f(ptr as *mut std::ffi::c_void) };
        };
        if std::thread::Builder::new()
            .name("rcud-user-object".into())
            .spawn(run)
            .is_err()
        {
            tracing::warn!("no thread for a user object's destructor: it did not run");
        }
    }
    Ok(())
}

/// Releases every reference in `held` (a graph or executable graph gone).
pub(crate) fn release_all(held: &HashMap<Handle, u32>) {
    for (&object, &count) in held {
        if count > 0 {
            let _ = release(object, count);
        }
    }
}

/// Takes a reference for each in `held` (a copy of a graph's references).
pub(crate) fn retain_all(held: &HashMap<Handle, u32>) {
    for (&object, &count) in held {
        if count > 0 {
            let _ = retain(object, count);
        }
    }
}
