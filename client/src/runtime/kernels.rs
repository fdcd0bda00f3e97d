//! Device code: registered fat binaries, kernels and variables, loaded on
//! each device on first use; launches.

use std::sync::Arc;

use rcud_proto::codec::Blob;
use rcud_proto::ops::{req, FuncAttributes, GraphStep, ATTR_CARVEOUT, ATTR_MAX_DYNAMIC_SHARED};
use rcud_proto::CudaError;

use super::{report, LaunchConfig, RemoteKernel, Runtime};
use crate::modules::ModuleImage;
use crate::session::Completion;

impl Runtime {
    // ---- device code ---------------------------------------------------

    /// `__cudaRegisterFatBinary`: records a fat binary; returns its index.
    pub fn register_module(&self, image: Vec<u8>) -> usize {
        self.registry.write().add_module(image)
    }

    /// `__cudaUnregisterFatBinary`.
    pub fn unregister_module(&self, index: usize) {
        self.registry.write().remove_module(index);
    }

    /// `__cudaRegisterFunction`.
    pub fn register_kernel(&self, module: usize, host_stub: u64, name: String) {
        self.registry.write().add_kernel(module, host_stub, name);
    }

    /// `__cudaRegisterVar`.
    pub fn register_variable(&self, module: usize, host_var: u64, name: String, size: u64) {
        self.registry
            .write()
            .add_variable(module, host_var, name, size);
    }

    /// Whether `host_stub` is a registered kernel.
    pub fn is_kernel(&self, host_stub: u64) -> bool {
        self.registry.read().kernel(host_stub).is_some()
    }

    /// The module id of registry module `index` on device `d`, shipping the
    /// fat binary there unless the server already has it.
    pub(super) fn remote_module(
        &self,
        d: usize,
        index: usize,
        image: &ModuleImage,
    ) -> Result<u32, CudaError> {
        if let Some(&id) = self.states[d].lock().modules.get(&index) {
            return Ok(id);
        }
        let cached = self.call(d, &req::ModuleLoadCached { hash: image.hash }, &[], &mut []);
        let id = match cached {
            Ok(r) => r.module,
            Err(CudaError::INVALID_VALUE) => {
                let len = image.bytes.len() as u64;
                let load = req::ModuleLoad {
                    hash: image.hash,
                    len,
                };
                self.call(d, &load, &image.bytes, &mut [])?.module
            }
            Err(e) => return Err(e),
        };
        self.states[d].lock().modules.insert(index, id);
        Ok(id)
    }

    /// The kernel `host_stub` on device `d`, loading it there on first use.
    pub(super) fn remote_kernel(
        &self,
        d: usize,
        host_stub: u64,
    ) -> Result<Arc<RemoteKernel>, CudaError> {
        if let Some(k) = self.states[d].lock().kernels.get(&host_stub) {
            return Ok(k.clone());
        }
        let (entry, image) = {
            let registry = self.registry.read();
            let entry = registry
                .kernel(host_stub)
                .cloned()
                .ok_or(CudaError::INVALID_DEVICE_FUNCTION)?;
            let image = registry
                .module(entry.module)
                .cloned()
                .ok_or(CudaError::INVALID_DEVICE_FUNCTION)?;
            (entry, image)
        };
        let layout = image.param_layout(&entry.name).map_err(|message| {
            report(&message);
            CudaError::INVALID_KERNEL_IMAGE
        })?;
        let module = self.remote_module(d, entry.module, &image)?;
        let reply = self.call(
            d,
            &req::ModuleGetFunction {
                module,
                name: entry.name,
            },
            &[],
            &mut [],
        )?;
        let kernel = Arc::new(RemoteKernel {
            function: reply.function,
            layout,
            attributes: reply.attributes,
        });
        self.states[d]
            .lock()
            .kernels
            .insert(host_stub, kernel.clone());
        Ok(kernel)
    }

    /// Launches kernel `host_stub` on `config.stream`'s device, asynchronously.
    /// `read_arg(i, dst)` fills `dst` with the bytes of parameter `i`. A bad
    /// configuration fails here; a fault while the kernel runs surfaces at a
    /// later call, as on a GPU. Device `printf` output goes to the sink.
    pub fn launch(
        &'static self,
        host_stub: u64,
        config: &LaunchConfig,
        read_arg: &mut dyn FnMut(usize, &mut [u8]),
    ) -> Result<(), CudaError> {
        let d = self.stream_device(config.stream)?;
        let kernel = self.remote_kernel(d, host_stub)?;
        self.check_launch(d, &kernel, config)?;
        let mut params = vec![0u8; kernel.layout.total_size];
        for (i, p) in kernel.layout.params.iter().enumerate() {
            let dst = params
                .get_mut(p.offset..p.offset + p.size)
                .ok_or(CudaError::INVALID_KERNEL_IMAGE)?;
            read_arg(i, dst);
        }
        self.enqueue_launch(d, &kernel, config, params)
    }

    /// Queues a checked launch with its packed parameters.
    fn enqueue_launch(
        &'static self,
        d: usize,
        kernel: &RemoteKernel,
        config: &LaunchConfig,
        params: Vec<u8>,
    ) -> Result<(), CudaError> {
        match launch_request(kernel, config, params) {
            LaunchRequest::Plain(req) => self.enqueue(d, &req, &[], Completion::Launch, 0),
            LaunchRequest::Cooperative(req) => self.enqueue(d, &req, &[], Completion::Launch, 0),
        }
    }

    /// Launches kernel `function` with its parameters already packed at
    /// their offsets (`CU_LAUNCH_PARAM_BUFFER_POINTER`); `packed` must hold
    /// at least the kernel's parameter bytes.
    pub fn launch_packed(
        &'static self,
        function: u64,
        config: &LaunchConfig,
        packed: &[u8],
    ) -> Result<(), CudaError> {
        let d = self.stream_device(config.stream)?;
        let kernel = self.remote_kernel(d, function)?;
        self.check_launch(d, &kernel, config)?;
        let params = packed
            .get(..kernel.layout.total_size)
            .ok_or(CudaError::INVALID_VALUE)?;
        self.enqueue_launch(d, &kernel, config, params.to_vec())
    }

    /// The device step of a checked launch, as a graph holds it.
    pub(super) fn launch_step(
        kernel: &RemoteKernel,
        config: &LaunchConfig,
        params: Vec<u8>,
    ) -> GraphStep {
        match launch_request(kernel, config, params) {
            LaunchRequest::Plain(req) => GraphStep::of(&req),
            LaunchRequest::Cooperative(req) => GraphStep::of(&req),
        }
    }

    /// The launch configuration checks CUDA makes before a kernel is queued.
    pub(super) fn check_launch(
        &self,
        d: usize,
        kernel: &RemoteKernel,
        c: &LaunchConfig,
    ) -> Result<(), CudaError> {
        let p = &self.devices[d].props;
        let [bx, by, bz] = c.block.map(u64::from);
        let [gx, gy, gz] = c.grid.map(u64::from);
        let max_block = [
            p.max_threads_dim[0],
            p.max_threads_dim[1],
            p.max_threads_dim[2],
        ]
        .map(|v| v.max(0) as u64);
        let max_grid =
            [p.max_grid_size[0], p.max_grid_size[1], p.max_grid_size[2]].map(|v| v.max(0) as u64);
        let threads = bx * by * bz;
        let max_threads = (kernel.attributes.max_threads_per_block.max(0) as u64)
            .min(p.max_threads_per_block.max(0) as u64);
        let bad = threads == 0
            || gx * gy * gz == 0
            || bx > max_block[0]
            || by > max_block[1]
            || bz > max_block[2]
            || gx > max_grid[0]
            || gy > max_grid[1]
            || gz > max_grid[2]
            || threads > max_threads;
        // CUDA 13's runtime reports the driver's CUDA_ERROR_INVALID_VALUE
        // here, not cudaErrorInvalidConfiguration (seen on an H200).
        if bad {
            return Err(CudaError::INVALID_VALUE);
        }
        if c.shared_mem > kernel.attributes.max_dynamic_shared_size_bytes.max(0) as u64 {
            return Err(CudaError::INVALID_VALUE);
        }
        if c.cooperative {
            if p.cooperative_launch == 0 {
                return Err(CudaError::NOT_SUPPORTED);
            }
            let most = kernel
                .attributes
                .max_cooperative_blocks(p, threads as u32, c.shared_mem);
            if gx * gy * gz > most {
                return Err(CudaError::COOPERATIVE_LAUNCH_TOO_LARGE);
            }
        }
        Ok(())
    }

    /// `cudaFuncGetAttributes` on the current device.
    pub fn kernel_attributes(&self, host_stub: u64) -> Result<FuncAttributes, CudaError> {
        let d = self.current_device()?;
        Ok(self.remote_kernel(d, host_stub)?.attributes.clone())
    }

    /// `cudaFuncSetAttribute` on the current device.
    pub fn set_kernel_attribute(
        &self,
        host_stub: u64,
        attr: i32,
        value: i32,
    ) -> Result<(), CudaError> {
        let d = self.current_device()?;
        let kernel = self.remote_kernel(d, host_stub)?;
        let req = req::FuncSetAttribute {
            function: kernel.function,
            attr,
            value,
        };
        self.call(d, &req, &[], &mut [])?;
        let mut attributes = kernel.attributes.clone();
        match attr {
            ATTR_MAX_DYNAMIC_SHARED => attributes.max_dynamic_shared_size_bytes = value,
            ATTR_CARVEOUT => attributes.preferred_shmem_carveout = value,
            _ => {}
        }
        let updated = Arc::new(RemoteKernel {
            function: kernel.function,
            layout: kernel.layout.clone(),
            attributes,
        });
        self.states[d].lock().kernels.insert(host_stub, updated);
        Ok(())
    }

    /// Device address and size of the variable whose host shadow is
    /// `host_var`, on the current device (`cudaGetSymbolAddress`).
    pub fn symbol(&self, host_var: u64) -> Result<(usize, u64, u64), CudaError> {
        let d = self.current_device()?;
        if let Some(&(ptr, size)) = self.states[d].lock().variables.get(&host_var) {
            return Ok((d, ptr, size));
        }
        let (entry, image) = {
            let registry = self.registry.read();
            let entry = registry
                .variable(host_var)
                .cloned()
                .ok_or(CudaError::INVALID_SYMBOL)?;
            let image = registry
                .module(entry.module)
                .cloned()
                .ok_or(CudaError::INVALID_SYMBOL)?;
            (entry, image)
        };
        let module = self.remote_module(d, entry.module, &image)?;
        let reply = self.call(
            d,
            &req::ModuleGetGlobal {
                module,
                name: entry.name,
            },
            &[],
            &mut [],
        )?;
        self.states[d]
            .lock()
            .variables
            .insert(host_var, (reply.ptr, reply.size));
        self.allocs.write().insert(reply.ptr, (reply.size, d));
        Ok((d, reply.ptr, reply.size))
    }
}

/// The request that runs one launch: cooperative launches have their own.
enum LaunchRequest {
    Plain(req::LaunchKernel),
    Cooperative(req::LaunchCooperative),
}

fn launch_request(kernel: &RemoteKernel, config: &LaunchConfig, params: Vec<u8>) -> LaunchRequest {
    let (function, grid, block) = (kernel.function, config.grid, config.block);
    let (shared_mem, stream, params) = (config.shared_mem as u32, config.stream, Blob(params));
    if config.cooperative {
        LaunchRequest::Cooperative(req::LaunchCooperative {
            function,
            grid,
            block,
            shared_mem,
            stream,
            params,
        })
    } else {
        LaunchRequest::Plain(req::LaunchKernel {
            function,
            grid,
            block,
            shared_mem,
            stream,
            params,
        })
    }
}
