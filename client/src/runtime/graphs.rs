//! The device side of CUDA graphs: an instantiated graph's kernels, device
//! copies, memsets and event records go to the server once, and each launch
//! of them is one message, however many nodes they are. The graphs
//! themselves (nodes, edges, capture, host nodes) are the C layer's.

use rcud_proto::ops::{req, GraphStep};
use rcud_proto::CudaError;

use super::{LaunchConfig, Runtime};
use crate::session::Completion;

impl Runtime {
    /// The step that launches `function` (a host stub or a driver function
    /// handle) on device `d` with `params` packed at their offsets; the
    /// configuration is checked as a launch checks it.
    pub fn kernel_step(
        &self,
        d: usize,
        function: u64,
        config: &LaunchConfig,
        params: &[u8],
    ) -> Result<GraphStep, CudaError> {
        let kernel = self.remote_kernel(d, function)?;
        self.check_launch(d, &kernel, config)?;
        let params = params
            .get(..kernel.layout.total_size)
            .ok_or(CudaError::INVALID_VALUE)?;
        Ok(Self::launch_step(&kernel, config, params.to_vec()))
    }

    /// Bytes of a kernel's packed parameters, on device `d`.
    pub fn kernel_params_size(&self, d: usize, function: u64) -> Result<usize, CudaError> {
        Ok(self.remote_kernel(d, function)?.layout.total_size)
    }

    /// Keeps `steps` on device `d`'s server; returns the graph's id there.
    pub fn graph_upload(&self, d: usize, steps: Vec<GraphStep>) -> Result<u32, CudaError> {
        Ok(self
            .call(d, &req::GraphUpload { steps }, &[], &mut [])?
            .graph)
    }

    /// Queues a launch of uploaded graph `graph` on device `d`; `events`
    /// are the events of its event-record steps, in step order.
    pub fn graph_launch(
        &'static self,
        d: usize,
        graph: u32,
        events: Vec<u64>,
    ) -> Result<(), CudaError> {
        {
            let mut table = self.events.lock();
            for event in &events {
                let e = table
                    .get_mut(event)
                    .ok_or(CudaError::INVALID_RESOURCE_HANDLE)?;
                e.device = Some(d);
                e.timestamp = None;
            }
        }
        let launch = req::GraphLaunch { graph };
        self.enqueue(d, &launch, &[], Completion::Graph(events), 0)
    }

    /// Forgets an uploaded graph. A device that is gone, or was reset, has
    /// forgotten it already.
    pub fn graph_release(&self, d: usize, graph: u32) {
        if let Err(e) = self.call(d, &req::GraphDestroy { graph }, &[], &mut []) {
            tracing::debug!("graph {graph} on device {d} was not released: {e}");
        }
    }

    /// Whether `event` exists.
    pub fn event_exists(&self, event: u64) -> bool {
        self.events.lock().contains_key(&event)
    }
}
