//! Device code the program loads itself through the driver API
//! (`cuModuleLoadData`, `cuLibraryLoadData`, `cuLinkComplete`, ...).
//!
//! A loaded module joins the same registry as the fat binaries nvcc
//! registers, and a function handle (`CUfunction`, `CUkernel`) is a kernel
//! registered under a handle of its own instead of a host stub: so launches,
//! attributes, batching and reloading after a reset are the runtime's own.

use std::collections::HashMap;
use std::sync::Arc;

use rcud_fatbin::image::{self, ImageKind};
use rcud_proto::ops::req;
use rcud_proto::CudaError;

use super::{report, Runtime};
use crate::modules::ModuleImage;

/// Modules and functions loaded through the driver API.
#[derive(Debug, Default)]
pub(super) struct Loaded {
    /// Module handle -> registry index.
    modules: HashMap<u64, usize>,
    /// (module handle, kernel name) -> function handle.
    functions: HashMap<(u64, String), u64>,
    /// Function handle -> its module handle.
    function_module: HashMap<u64, u64>,
}

impl Runtime {
    /// Loads a module image on device `d`: a fatbin, an ELF cubin or PTX
    /// text (a wrapper must be resolved by the caller). Fails at once, as
    /// `cuModuleLoadData` does, when the device cannot load it. Returns the
    /// module handle.
    pub fn module_load(&self, d: usize, image: &[u8]) -> Result<u64, CudaError> {
        let bytes = match image::classify(image) {
            Some(ImageKind::Fatbin) => {
                let len = rcud_fatbin::containers_len(image).map_err(|e| {
                    report(&format!("cannot load module: {e}"));
                    CudaError::INVALID_KERNEL_IMAGE
                })?;
                image[..len].to_vec()
            }
            Some(ImageKind::Ptx) => image::wrap_ptx(image),
            Some(ImageKind::Cubin) => image::wrap_cubin(image),
            Some(ImageKind::Wrapper) | None => {
                report("cannot load module: the image is neither a fat binary, a cubin nor PTX");
                return Err(CudaError::INVALID_KERNEL_IMAGE);
            }
        };
        let index = self.register_module(bytes);
        let module = self.registry.read().module(index).cloned();
        let loaded = match module {
            Some(m) => self.remote_module(d, index, &m),
            None => Err(CudaError::INVALID_KERNEL_IMAGE),
        };
        if let Err(e) = loaded {
            self.unregister_module(index);
            return Err(e);
        }
        let handle = self.new_handle();
        self.loaded.lock().modules.insert(handle, index);
        Ok(handle)
    }

    /// The registry index and image of loaded module `module`.
    fn module_image(&self, module: u64) -> Result<(usize, Arc<ModuleImage>), CudaError> {
        let index = self.module_index(module)?;
        let image = self
            .registry
            .read()
            .module(index)
            .cloned()
            .ok_or(CudaError::INVALID_RESOURCE_HANDLE)?;
        Ok((index, image))
    }

    fn module_index(&self, module: u64) -> Result<usize, CudaError> {
        self.loaded
            .lock()
            .modules
            .get(&module)
            .copied()
            .ok_or(CudaError::INVALID_RESOURCE_HANDLE)
    }

    /// Names of the kernels of `module` (`cuLibraryGetKernelCount`,
    /// `cuLibraryEnumerateKernels`), from its PTX.
    pub fn module_kernel_names(&self, module: u64) -> Result<Vec<String>, CudaError> {
        let (_, image) = self.module_image(module)?;
        let names = image
            .fatbin()
            .map(|f| f.kernel_names())
            .map_err(|_| CudaError::INVALID_KERNEL_IMAGE)?;
        Ok(names)
    }

    /// Whether `module` is a loaded module or library handle.
    pub fn module_exists(&self, module: u64) -> bool {
        self.loaded.lock().modules.contains_key(&module)
    }

    /// `cuModuleUnload`: its functions become invalid handles.
    pub fn module_unload(&self, module: u64) -> Result<(), CudaError> {
        let index = self.module_index(module)?;
        let mut loaded = self.loaded.lock();
        loaded.modules.remove(&module);
        let gone: Vec<u64> = loaded
            .function_module
            .iter()
            .filter(|&(_, &m)| m == module)
            .map(|(&f, _)| f)
            .collect();
        for f in &gone {
            loaded.function_module.remove(f);
        }
        loaded.functions.retain(|(m, _), _| *m != module);
        drop(loaded);
        for state in &self.states {
            let mut st = state.lock();
            st.modules.remove(&index);
            for f in &gone {
                st.kernels.remove(f);
            }
        }
        self.unregister_module(index);
        Ok(())
    }

    /// `cuModuleGetFunction`, checked on device `d`: the same handle for the
    /// same name; `SYMBOL_NOT_FOUND` when the module has no such kernel.
    pub fn module_function(&self, d: usize, module: u64, name: &str) -> Result<u64, CudaError> {
        let key = (module, name.to_string());
        if let Some(&f) = self.loaded.lock().functions.get(&key) {
            return Ok(f);
        }
        // A name the image does not have is an answer, not a failure to
        // report: asked before anything is sent.
        let (index, image) = self.module_image(module)?;
        if let Err(why) = image.param_layout(name) {
            tracing::debug!("cuModuleGetFunction({name}): {why}");
            return Err(CudaError::SYMBOL_NOT_FOUND);
        }
        let handle = self.new_handle();
        self.register_kernel(index, handle, name.to_string());
        if let Err(e) = self.remote_kernel(d, handle) {
            self.registry.write().remove_kernel(handle);
            return Err(e);
        }
        let mut loaded = self.loaded.lock();
        loaded.functions.insert(key, handle);
        loaded.function_module.insert(handle, module);
        Ok(handle)
    }

    /// The module a function handle belongs to (`cuFuncGetModule`).
    pub fn function_module(&self, function: u64) -> Result<u64, CudaError> {
        self.loaded
            .lock()
            .function_module
            .get(&function)
            .copied()
            .ok_or(CudaError::INVALID_RESOURCE_HANDLE)
    }

    /// The kernel name of a function handle (`cuFuncGetName`).
    pub fn function_name(&self, function: u64) -> Result<String, CudaError> {
        self.registry
            .read()
            .kernel(function)
            .map(|k| k.name.clone())
            .ok_or(CudaError::INVALID_RESOURCE_HANDLE)
    }

    /// `cuModuleGetGlobal`: device address and size of a module variable on
    /// device `d`.
    pub fn module_global(
        &self,
        d: usize,
        module: u64,
        name: &str,
    ) -> Result<(u64, u64), CudaError> {
        let (index, image) = self.module_image(module)?;
        let module = self.remote_module(d, index, &image)?;
        let reply = self.call(
            d,
            &req::ModuleGetGlobal {
                module,
                name: name.to_string(),
            },
            &[],
            &mut [],
        );
        let reply = reply.map_err(|e| match e {
            CudaError::INVALID_SYMBOL | CudaError::INVALID_VALUE => CudaError::SYMBOL_NOT_FOUND,
            e => e,
        })?;
        self.allocs.write().insert(reply.ptr, (reply.size, d));
        Ok((reply.ptr, reply.size))
    }

    /// Parameter (offset, size) pairs of a kernel, on device `d`.
    pub fn kernel_params(&self, d: usize, function: u64) -> Result<Vec<(usize, usize)>, CudaError> {
        let kernel = self.remote_kernel(d, function)?;
        Ok(kernel
            .layout
            .params
            .iter()
            .map(|p| (p.offset, p.size))
            .collect())
    }
}
