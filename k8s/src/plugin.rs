//! The plugin's life: serve the socket, register with the kubelet, start
//! again when the kubelet restarts.

use std::future::Future;
use std::path::{Path, PathBuf};
use std::time::Duration;

use rcud_client::sonames::{LIBRARY_FILE, SONAMES};
use thiserror::Error;
use tokio::net::UnixListener;
use tokio::sync::{oneshot, watch};
use tokio_stream::wrappers::UnixListenerStream;
use tonic::transport::{Endpoint, Server};

use crate::api::device_plugin_server::DevicePluginServer;
use crate::api::registration_client::RegistrationClient;
use crate::api::{DevicePluginOptions, RegisterRequest};
use crate::inventory::{watch_servers, Inventory};
use crate::service::RcudDevicePlugin;
use crate::{PluginConfig, API_VERSION, KUBELET_SOCKET};

/// Why the plugin stopped.
#[derive(Debug, Error)]
pub enum PluginError {
    #[error("cannot listen on {path}: {source}")]
    Listen {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("cannot install the client library into {dir}: {source}")]
    Install {
        dir: PathBuf,
        source: std::io::Error,
    },
    #[error("the kubelet refused the registration: {0}")]
    Refused(tonic::Status),
}

/// How often the plugin looks whether its socket is still there: the
/// kubelet removes the plugins' sockets when it restarts, and plugins then
/// register again.
const SOCKET_CHECK: Duration = Duration::from_secs(1);
/// Time between registration attempts while the kubelet is not there.
const REGISTER_RETRY: Duration = Duration::from_secs(2);

/// Copies `library` into `dir` and links NVIDIA's sonames to it there, with
/// relative links so that they resolve wherever `dir` is mounted.
pub fn install_library(library: &Path, dir: &Path) -> Result<(), PluginError> {
    let err = |source| PluginError::Install {
        dir: dir.to_path_buf(),
        source,
    };
    std::fs::create_dir_all(dir).map_err(err)?;
    // Copy then rename: a container starting now sees the old file or the
    // new one, never half of one.
    let partial = dir.join(format!(".{LIBRARY_FILE}.partial"));
    std::fs::copy(library, &partial).map_err(err)?;
    std::fs::rename(&partial, dir.join(LIBRARY_FILE)).map_err(err)?;
    for soname in SONAMES {
        let link = dir.join(soname);
        match std::fs::remove_file(&link) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(err(e)),
        }
        std::os::unix::fs::symlink(LIBRARY_FILE, &link).map_err(err)?;
    }
    tracing::info!(dir = %dir.display(), "client library installed");
    Ok(())
}

/// Serves the plugin until `stop` completes: probes the servers, serves the
/// `DevicePlugin` API on `kubelet_dir/socket_name`, registers it with the
/// kubelet, and serves and registers again whenever the kubelet removes the
/// socket (it does when it restarts).
pub async fn serve(
    config: PluginConfig,
    stop: impl Future<Output = ()>,
) -> Result<(), PluginError> {
    let mut inventory = Inventory::new(config.servers.clone());
    // Probe once before registering: the kubelet's first ListAndWatch then
    // lists the GPUs.
    let (devices_tx, devices_rx) = watch::channel(inventory.probe().await);
    tracing::info!(devices = ?*devices_rx.borrow(), "remote GPUs");
    let prober = tokio::spawn(watch_servers(inventory, devices_tx, config.probe_interval));
    tokio::pin!(stop);

    let socket = config.kubelet_dir.join(&config.socket_name);
    let result = loop {
        let (server_stop, server_done) = oneshot::channel::<()>();
        let (stopping_tx, stopping) = watch::channel(false);
        let listener = match listen(&socket) {
            Ok(l) => l,
            Err(e) => break Err(e),
        };
        let service = RcudDevicePlugin {
            devices: devices_rx.clone(),
            stopping,
            library_dir: config.library_dir.clone(),
            container_library_dir: config.container_library_dir.clone(),
        };
        let server = tokio::spawn(
            // One service: no router needed (tonic's `router` feature pulls
            // in axum).
            Server::builder().serve_with_incoming_shutdown(
                DevicePluginServer::new(service),
                UnixListenerStream::new(listener),
                async {
                    let _ = server_done.await;
                },
            ),
        );
        let outcome = tokio::select! {
            r = register_until_accepted(&config) => r.map(|()| true),
            () = &mut stop => Ok(false),
        };
        let keep_going = match outcome {
            Ok(true) => {
                tracing::info!(socket = %socket.display(), resource = %config.resource_name, "registered with the kubelet");
                // Serve until the kubelet removes the socket, or the end.
                loop {
                    tokio::select! {
                        () = &mut stop => break false,
                        () = tokio::time::sleep(SOCKET_CHECK) => {
                            if !socket.exists() {
                                tracing::warn!("the kubelet removed the plugin's socket (restart?): registering again");
                                break true;
                            }
                        }
                    }
                }
            }
            Ok(false) => false,
            Err(e) => {
                stopping_tx.send_replace(true);
                let _ = server_stop.send(());
                let _ = server.await;
                break Err(e);
            }
        };
        stopping_tx.send_replace(true);
        let _ = server_stop.send(());
        match server.await {
            Ok(Ok(())) => {}
            Ok(Err(e)) => tracing::warn!(error = %e, "device-plugin server failed"),
            Err(e) => tracing::warn!(error = %e, "device-plugin server task failed"),
        }
        if !keep_going {
            break Ok(());
        }
    };
    // Ends the ListAndWatch streams and the prober.
    drop(devices_rx);
    prober.abort();
    remove_socket(&socket);
    result
}

fn listen(socket: &Path) -> Result<UnixListener, PluginError> {
    // A socket left by an earlier run of the plugin.
    remove_socket(socket);
    UnixListener::bind(socket).map_err(|source| PluginError::Listen {
        path: socket.to_path_buf(),
        source,
    })
}

fn remove_socket(socket: &Path) {
    match std::fs::remove_file(socket) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => {
            tracing::warn!(socket = %socket.display(), error = %e, "cannot remove the socket")
        }
    }
}

/// Registers with the kubelet, trying again while it cannot be reached. A
/// refusal (wrong version, resource name taken) ends the plugin, as the API
/// asks.
async fn register_until_accepted(config: &PluginConfig) -> Result<(), PluginError> {
    let kubelet = config.kubelet_dir.join(KUBELET_SOCKET);
    let request = RegisterRequest {
        version: API_VERSION.to_string(),
        endpoint: config.socket_name.clone(),
        resource_name: config.resource_name.clone(),
        options: Some(DevicePluginOptions {
            pre_start_required: false,
            get_preferred_allocation_available: true,
        }),
    };
    let mut reported = false;
    loop {
        match register(&kubelet, request.clone()).await {
            Ok(Ok(())) => return Ok(()),
            Ok(Err(status)) if status.code() != tonic::Code::Unavailable => {
                return Err(PluginError::Refused(status))
            }
            Ok(Err(status)) => {
                if !reported {
                    tracing::warn!(kubelet = %kubelet.display(), error = %status, "cannot reach the kubelet; trying again");
                    reported = true;
                }
            }
            Err(e) => {
                if !reported {
                    tracing::warn!(kubelet = %kubelet.display(), error = %e, "cannot reach the kubelet; trying again");
                    reported = true;
                }
            }
        }
        tokio::time::sleep(REGISTER_RETRY).await;
    }
}

/// One registration: the outer error is the transport's (try again), the
/// inner one the kubelet's answer.
async fn register(
    kubelet: &Path,
    request: RegisterRequest,
) -> Result<Result<(), tonic::Status>, tonic::transport::Error> {
    let channel = Endpoint::from_shared(format!("unix://{}", kubelet.display()))?
        .connect_timeout(Duration::from_secs(5))
        .timeout(Duration::from_secs(10))
        .connect()
        .await?;
    let answer = RegistrationClient::new(channel).register(request).await;
    Ok(answer.map(|_| ()))
}
