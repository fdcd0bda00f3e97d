//! The `DevicePlugin` service the kubelet calls.

use std::collections::HashMap;
use std::path::PathBuf;
use std::pin::Pin;

use rcud_client::sonames::LIBRARY_FILE;
use tokio::sync::{mpsc, watch};
use tokio_stream::wrappers::ReceiverStream;
use tokio_stream::Stream;
use tonic::{Request, Response, Status};

use crate::api::device_plugin_server::DevicePlugin;
use crate::api::{
    AllocateRequest, AllocateResponse, ContainerAllocateResponse,
    ContainerPreferredAllocationResponse, Device, DevicePluginOptions, Empty, ListAndWatchResponse,
    Mount, PreStartContainerRequest, PreStartContainerResponse, PreferredAllocationRequest,
    PreferredAllocationResponse,
};
use crate::inventory::RemoteGpu;
use crate::{HEALTHY, UNHEALTHY};

pub(crate) struct RcudDevicePlugin {
    pub(crate) devices: watch::Receiver<Vec<RemoteGpu>>,
    /// Becomes true when this socket stops being served: the streams end,
    /// so that the server's graceful shutdown does not wait for the kubelet.
    pub(crate) stopping: watch::Receiver<bool>,
    pub(crate) library_dir: PathBuf,
    pub(crate) container_library_dir: PathBuf,
}

fn list(devices: &[RemoteGpu]) -> ListAndWatchResponse {
    ListAndWatchResponse {
        devices: devices
            .iter()
            .map(|d| Device {
                id: d.id(),
                health: if d.healthy { HEALTHY } else { UNHEALTHY }.to_string(),
            })
            .collect(),
    }
}

/// The server part of a device ID (`host:port#gpu`).
fn server_of(id: &str) -> &str {
    id.rsplit_once('#').map_or(id, |(server, _)| server)
}

impl RcudDevicePlugin {
    fn container_response(&self, ids: &[String]) -> Result<ContainerAllocateResponse, Status> {
        if ids.is_empty() {
            return Err(Status::invalid_argument("no device to allocate"));
        }
        let known = self.devices.borrow();
        for id in ids {
            if !known.iter().any(|d| d.id() == *id) {
                return Err(Status::not_found(format!("unknown device {id}")));
            }
        }
        drop(known);
        let lib = self.container_library_dir.to_string_lossy().into_owned();
        let envs = HashMap::from([
            // The allocated GPUs, in device-ordinal order.
            ("RCUD_SERVERS".to_string(), ids.join(",")),
            // What `rcud run` sets: NVIDIA's sonames resolve to the rcud
            // library, and the library is loaded first even by programs
            // that open NVIDIA's libraries by path (CuPy's wheels).
            ("LD_LIBRARY_PATH".to_string(), lib.clone()),
            (
                "LD_PRELOAD".to_string(),
                self.container_library_dir
                    .join(LIBRARY_FILE)
                    .to_string_lossy()
                    .into_owned(),
            ),
            // Kernels as PTX, which every GPU and the emulated one run.
            ("CUPY_COMPILE_WITH_PTX".to_string(), "1".to_string()),
        ]);
        Ok(ContainerAllocateResponse {
            envs,
            mounts: vec![Mount {
                container_path: lib,
                host_path: self.library_dir.to_string_lossy().into_owned(),
                read_only: true,
            }],
            devices: Vec::new(),
            annotations: HashMap::new(),
        })
    }
}

type DeviceStream = Pin<Box<dyn Stream<Item = Result<ListAndWatchResponse, Status>> + Send>>;

#[tonic::async_trait]
impl DevicePlugin for RcudDevicePlugin {
    async fn get_device_plugin_options(
        &self,
        _request: Request<Empty>,
    ) -> Result<Response<DevicePluginOptions>, Status> {
        Ok(Response::new(DevicePluginOptions {
            pre_start_required: false,
            get_preferred_allocation_available: true,
        }))
    }

    type ListAndWatchStream = DeviceStream;

    /// The devices now, then again at every change, until the plugin stops.
    async fn list_and_watch(
        &self,
        _request: Request<Empty>,
    ) -> Result<Response<Self::ListAndWatchStream>, Status> {
        let mut rx = self.devices.clone();
        let mut stopping = self.stopping.clone();
        let (tx, out) = mpsc::channel(4);
        tokio::spawn(async move {
            loop {
                let message = list(&rx.borrow_and_update());
                if tx.send(Ok(message)).await.is_err() {
                    return; // the kubelet hung up
                }
                tokio::select! {
                    changed = rx.changed() => {
                        if changed.is_err() {
                            return; // the prober is gone
                        }
                    }
                    // The socket is no longer served: the stream ends.
                    _ = stopping.wait_for(|s| *s) => return,
                }
            }
        });
        Ok(Response::new(Box::pin(ReceiverStream::new(out))))
    }

    /// Prefers GPUs of as few servers as possible: one connection serves
    /// all the GPUs of a server.
    async fn get_preferred_allocation(
        &self,
        request: Request<PreferredAllocationRequest>,
    ) -> Result<Response<PreferredAllocationResponse>, Status> {
        let container_responses = request
            .into_inner()
            .container_requests
            .into_iter()
            .map(|r| {
                let size = usize::try_from(r.allocation_size).unwrap_or(0);
                let mut chosen = r.must_include_device_ids.clone();
                let mut rest: Vec<&String> = r
                    .available_device_ids
                    .iter()
                    .filter(|id| !chosen.contains(id))
                    .collect();
                // Servers already chosen first, then servers with the most
                // available GPUs; the IDs' order otherwise.
                let count = |server: &str| {
                    r.available_device_ids
                        .iter()
                        .filter(|id| server_of(id) == server)
                        .count()
                };
                rest.sort_by_key(|id| {
                    let server = server_of(id);
                    let used = chosen.iter().any(|c| server_of(c) == server);
                    (!used, std::cmp::Reverse(count(server)), server.to_string())
                });
                chosen.extend(rest.into_iter().cloned());
                chosen.truncate(size.max(r.must_include_device_ids.len()));
                ContainerPreferredAllocationResponse { device_ids: chosen }
            })
            .collect();
        Ok(Response::new(PreferredAllocationResponse {
            container_responses,
        }))
    }

    async fn allocate(
        &self,
        request: Request<AllocateRequest>,
    ) -> Result<Response<AllocateResponse>, Status> {
        let container_responses = request
            .into_inner()
            .container_requests
            .iter()
            .map(|r| self.container_response(&r.devices_ids))
            .collect::<Result<_, _>>()?;
        Ok(Response::new(AllocateResponse {
            container_responses,
        }))
    }

    async fn pre_start_container(
        &self,
        _request: Request<PreStartContainerRequest>,
    ) -> Result<Response<PreStartContainerResponse>, Status> {
        // Not required (see the options): nothing to prepare on the node.
        Ok(Response::new(PreStartContainerResponse {}))
    }
}
