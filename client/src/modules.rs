//! Device code the program registered at start-up: fat binaries, the host
//! stubs of its kernels and the host shadows of its device variables.
//!
//! nvcc's start-up code registers everything before `main`; nothing is sent
//! to a server then. A fat binary is shipped to a device the first time one of
//! its kernels or variables is used there (see `Runtime`), and parsed here only
//! when a kernel's parameter layout is first needed.

use std::collections::HashMap;
use std::sync::{Arc, OnceLock};

use rcud_fatbin::{FatBinary, ParamLayout};

/// One registered fat binary.
#[derive(Debug)]
pub struct ModuleImage {
    /// The fat binary's bytes, shipped as they are.
    pub bytes: Vec<u8>,
    /// Content hash, for the server's cache.
    pub hash: [u8; 32],
    parsed: OnceLock<Result<FatBinary, String>>,
}

impl ModuleImage {
    fn new(bytes: Vec<u8>) -> Self {
        Self {
            hash: rcud_fatbin::content_hash(&bytes),
            bytes,
            parsed: OnceLock::new(),
        }
    }

    /// The parsed fat binary, or why it could not be parsed.
    pub fn fatbin(&self) -> Result<&FatBinary, &str> {
        self.parsed
            .get_or_init(|| FatBinary::parse(&self.bytes).map_err(|e| e.to_string()))
            .as_ref()
            .map_err(String::as_str)
    }

    /// The parameter layout of kernel `name`, or a message naming it.
    pub fn param_layout(&self, name: &str) -> Result<ParamLayout, String> {
        let fatbin = self
            .fatbin()
            .map_err(|e| format!("cannot parse the fat binary of kernel {name}: {e}"))?;
        fatbin.param_layout(name).map_err(|e| e.to_string())
    }
}

/// A kernel as registered: which module, which mangled name.
#[derive(Debug, Clone)]
pub struct KernelEntry {
    /// Index of its module in the registry.
    pub module: usize,
    /// Mangled device name.
    pub name: String,
}

/// A device variable as registered.
#[derive(Debug, Clone)]
pub struct VariableEntry {
    /// Index of its module in the registry.
    pub module: usize,
    /// Device name.
    pub name: String,
    /// Size in bytes.
    pub size: u64,
}

/// Everything registered, keyed the way the CUDA API names it.
#[derive(Debug, Default)]
pub struct Registry {
    modules: Vec<Option<Arc<ModuleImage>>>,
    kernels: HashMap<u64, KernelEntry>,
    variables: HashMap<u64, VariableEntry>,
}

impl Registry {
    /// Adds a fat binary; returns its index.
    pub fn add_module(&mut self, bytes: Vec<u8>) -> usize {
        self.modules.push(Some(Arc::new(ModuleImage::new(bytes))));
        self.modules.len() - 1
    }

    /// Forgets a fat binary and everything registered with it.
    pub fn remove_module(&mut self, index: usize) {
        if let Some(slot) = self.modules.get_mut(index) {
            *slot = None;
        }
        self.kernels.retain(|_, k| k.module != index);
        self.variables.retain(|_, v| v.module != index);
    }

    /// A registered module.
    pub fn module(&self, index: usize) -> Option<&Arc<ModuleImage>> {
        self.modules.get(index).and_then(Option::as_ref)
    }

    /// Records `__cudaRegisterFunction`.
    pub fn add_kernel(&mut self, module: usize, host_stub: u64, name: String) {
        if self.module(module).is_some() {
            self.kernels.insert(host_stub, KernelEntry { module, name });
        }
    }

    /// Records `__cudaRegisterVar`.
    pub fn add_variable(&mut self, module: usize, host_var: u64, name: String, size: u64) {
        if self.module(module).is_some() {
            self.variables
                .insert(host_var, VariableEntry { module, name, size });
        }
    }

    /// Forgets one kernel.
    pub fn remove_kernel(&mut self, host_stub: u64) {
        self.kernels.remove(&host_stub);
    }

    /// The kernel whose host stub is `host_stub`.
    pub fn kernel(&self, host_stub: u64) -> Option<&KernelEntry> {
        self.kernels.get(&host_stub)
    }

    /// The variable whose host shadow is `host_var`.
    pub fn variable(&self, host_var: u64) -> Option<&VariableEntry> {
        self.variables.get(&host_var)
    }
}
