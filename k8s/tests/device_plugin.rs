//! The device plugin against a test kubelet: a `Registration` server on a
//! temporary `kubelet.sock`, and calls to the plugin's socket as the kubelet
//! makes them (GetDevicePluginOptions, ListAndWatch, GetPreferredAllocation,
//! Allocate), with GPUs of an `rcud-server --backend emu` that is then
//! stopped. Needs `target/release/rcud-server` (`cargo build --release
//! --workspace`); the end-to-end part also `target/release/librcudart.so` and
//! nvcc (RCUD_NVCC; skipped without it unless RCUD_REQUIRE_CUDA is set).

use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use rcud_client::config::parse_servers;
use rcud_k8s::api::device_plugin_client::DevicePluginClient;
use rcud_k8s::api::registration_server::{Registration, RegistrationServer};
use rcud_k8s::api::{
    AllocateRequest, ContainerAllocateRequest, ContainerPreferredAllocationRequest, Empty,
    ListAndWatchResponse, PreferredAllocationRequest, RegisterRequest,
};
use rcud_k8s::{PluginConfig, HEALTHY, UNHEALTHY};
use tokio::sync::mpsc;
use tokio_stream::wrappers::UnixListenerStream;
use tonic::transport::{Channel, Endpoint, Server};
use tonic::{Request, Response, Status, Streaming};

const WAIT: Duration = Duration::from_secs(30);

fn release_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/release")
}

/// A kubelet that accepts every registration and passes it to the test.
struct TestKubelet {
    registrations: mpsc::UnboundedSender<RegisterRequest>,
}

#[tonic::async_trait]
impl Registration for TestKubelet {
    async fn register(&self, request: Request<RegisterRequest>) -> Result<Response<Empty>, Status> {
        self.registrations
            .send(request.into_inner())
            .map_err(|_| Status::unavailable("test over"))?;
        Ok(Response::new(Empty {}))
    }
}

fn start_kubelet(dir: &Path) -> mpsc::UnboundedReceiver<RegisterRequest> {
    let (tx, rx) = mpsc::unbounded_channel();
    let listener =
        tokio::net::UnixListener::bind(dir.join("kubelet.sock")).expect("bind kubelet.sock");
    tokio::spawn(Server::builder().serve_with_incoming_shutdown(
        RegistrationServer::new(TestKubelet { registrations: tx }),
        UnixListenerStream::new(listener),
        std::future::pending(),
    ));
    rx
}

/// `rcud-server --backend emu --emu-gpus 2` on a loopback port, killed when
/// dropped.
struct EmuServer {
    child: Child,
    addr: SocketAddr,
}

impl EmuServer {
    fn start() -> EmuServer {
        let binary = release_dir().join("rcud-server");
        assert!(
            binary.is_file(),
            "{} is missing: cargo build --release --workspace",
            binary.display()
        );
        let port = TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .expect("free port")
            .port();
        let addr = SocketAddr::from(([127, 0, 0, 1], port));
        let child = Command::new(&binary)
            .args([
                "--listen",
                &addr.to_string(),
                "--backend",
                "emu",
                "--emu-gpus",
                "2",
            ])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start rcud-server");
        let mut server = EmuServer { child, addr };
        let start = Instant::now();
        while TcpStream::connect_timeout(&addr, Duration::from_millis(200)).is_err() {
            assert!(
                server
                    .child
                    .try_wait()
                    .expect("rcud-server status")
                    .is_none(),
                "rcud-server exited at start"
            );
            assert!(
                start.elapsed() < WAIT,
                "rcud-server did not listen on {addr}"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        server
    }

    fn stop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for EmuServer {
    fn drop(&mut self) {
        self.stop();
    }
}

async fn connect_plugin(socket: &Path) -> DevicePluginClient<Channel> {
    let channel = Endpoint::from_shared(format!("unix://{}", socket.display()))
        .expect("endpoint")
        .connect()
        .await
        .expect("connect to the plugin's socket");
    DevicePluginClient::new(channel)
}

async fn next_list(stream: &mut Streaming<ListAndWatchResponse>) -> Vec<(String, String)> {
    let message = tokio::time::timeout(WAIT, stream.message())
        .await
        .expect("a ListAndWatch message in time")
        .expect("ListAndWatch stream error")
        .expect("ListAndWatch stream ended");
    message
        .devices
        .into_iter()
        .map(|d| (d.id, d.health))
        .collect()
}

fn config(kubelet_dir: &Path, servers: &str, library_dir: &Path) -> PluginConfig {
    PluginConfig {
        servers: parse_servers(servers).expect("servers"),
        kubelet_dir: kubelet_dir.to_path_buf(),
        socket_name: "rcud.sock".into(),
        resource_name: "rcud.io/gpu".into(),
        library_dir: library_dir.to_path_buf(),
        container_library_dir: "/usr/local/rcud/lib".into(),
        probe_interval: Duration::from_millis(200),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn registers_lists_allocates_and_reports_a_stopped_server_unhealthy() {
    let mut server = EmuServer::start();
    let dir = tempfile::tempdir().expect("temporary kubelet directory");
    let mut registrations = start_kubelet(dir.path());
    let addr = server.addr.to_string();
    // A second entry for a server nobody listens on: no GPU until it answers.
    let silent = TcpListener::bind("127.0.0.1:0").expect("bind");
    let silent_addr = silent.local_addr().expect("address");
    drop(silent);
    let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
    let plugin = tokio::spawn(rcud_k8s::serve(
        config(
            dir.path(),
            &format!("{addr},{silent_addr}"),
            Path::new("/var/lib/rcud/lib"),
        ),
        async {
            let _ = stop_rx.await;
        },
    ));

    // Registration: version, the socket's name in the kubelet's directory,
    // the resource.
    let reg = tokio::time::timeout(WAIT, registrations.recv())
        .await
        .expect("registration in time")
        .expect("registration");
    assert_eq!(reg.version, "v1beta1");
    assert_eq!(reg.endpoint, "rcud.sock");
    assert_eq!(reg.resource_name, "rcud.io/gpu");
    let options = reg.options.expect("options in the registration");
    assert!(!options.pre_start_required);
    assert!(options.get_preferred_allocation_available);
    let socket = dir.path().join("rcud.sock");
    assert!(
        socket.exists(),
        "the plugin serves on the endpoint it registered"
    );

    let mut client = connect_plugin(&socket).await;
    let options = client
        .get_device_plugin_options(Empty {})
        .await
        .expect("GetDevicePluginOptions")
        .into_inner();
    assert!(!options.pre_start_required);
    assert!(options.get_preferred_allocation_available);

    // The first ListAndWatch message lists the server's two GPUs, Healthy.
    let mut stream = client
        .list_and_watch(Empty {})
        .await
        .expect("ListAndWatch")
        .into_inner();
    let gpu0 = format!("{addr}#0");
    let gpu1 = format!("{addr}#1");
    assert_eq!(
        next_list(&mut stream).await,
        vec![
            (gpu0.clone(), HEALTHY.to_string()),
            (gpu1.clone(), HEALTHY.to_string())
        ]
    );

    // Allocate: RCUD_SERVERS names the allocated GPU; the library directory
    // is mounted read-only and found first.
    let answer = client
        .allocate(AllocateRequest {
            container_requests: vec![
                ContainerAllocateRequest {
                    devices_ids: vec![gpu1.clone()],
                },
                ContainerAllocateRequest {
                    devices_ids: vec![gpu0.clone(), gpu1.clone()],
                },
            ],
        })
        .await
        .expect("Allocate")
        .into_inner();
    assert_eq!(answer.container_responses.len(), 2);
    let first = &answer.container_responses[0];
    assert_eq!(first.envs.get("RCUD_SERVERS"), Some(&gpu1));
    assert_eq!(
        first.envs.get("LD_LIBRARY_PATH").map(String::as_str),
        Some("/usr/local/rcud/lib")
    );
    assert_eq!(
        first.envs.get("LD_PRELOAD").map(String::as_str),
        Some("/usr/local/rcud/lib/librcudart.so")
    );
    assert_eq!(first.mounts.len(), 1);
    assert_eq!(first.mounts[0].host_path, "/var/lib/rcud/lib");
    assert_eq!(first.mounts[0].container_path, "/usr/local/rcud/lib");
    assert!(first.mounts[0].read_only);
    assert!(
        first.devices.is_empty(),
        "no device node: the GPUs are remote"
    );
    assert_eq!(
        answer.container_responses[1].envs.get("RCUD_SERVERS"),
        Some(&format!("{gpu0},{gpu1}"))
    );

    // A device the plugin never listed is refused.
    let unknown = client
        .allocate(AllocateRequest {
            container_requests: vec![ContainerAllocateRequest {
                devices_ids: vec![format!("{silent_addr}#0")],
            }],
        })
        .await
        .expect_err("Allocate of an unknown device");
    assert_eq!(unknown.code(), tonic::Code::NotFound);

    // The preferred allocation keeps the required device and fills up from
    // the same server.
    let preferred = client
        .get_preferred_allocation(PreferredAllocationRequest {
            container_requests: vec![ContainerPreferredAllocationRequest {
                available_device_ids: vec![
                    "h2:1#0".into(),
                    gpu0.clone(),
                    "h3:1#0".into(),
                    gpu1.clone(),
                ],
                must_include_device_ids: vec![gpu1.clone()],
                allocation_size: 2,
            }],
        })
        .await
        .expect("GetPreferredAllocation")
        .into_inner();
    assert_eq!(
        preferred.container_responses[0].device_ids,
        vec![gpu1.clone(), gpu0.clone()]
    );

    // The server stops answering: its GPUs turn Unhealthy in the stream.
    server.stop();
    assert_eq!(
        next_list(&mut stream).await,
        vec![
            (gpu0.clone(), UNHEALTHY.to_string()),
            (gpu1.clone(), UNHEALTHY.to_string())
        ]
    );

    // The kubelet restarts and removes the plugins' sockets: the plugin
    // serves and registers again.
    std::fs::remove_file(&socket).expect("remove the plugin's socket");
    let again = tokio::time::timeout(WAIT, registrations.recv())
        .await
        .expect("second registration in time")
        .expect("second registration");
    assert_eq!(again.resource_name, "rcud.io/gpu");
    let mut client = connect_plugin(&socket).await;
    let mut stream = client
        .list_and_watch(Empty {})
        .await
        .expect("ListAndWatch after re-registration")
        .into_inner();
    assert_eq!(
        next_list(&mut stream).await,
        vec![(gpu0, UNHEALTHY.to_string()), (gpu1, UNHEALTHY.to_string())]
    );

    // Stopping the plugin ends the stream and removes its socket.
    stop_tx.send(()).expect("plugin still running");
    tokio::time::timeout(WAIT, plugin)
        .await
        .expect("plugin stops in time")
        .expect("plugin task")
        .expect("plugin result");
    let end = tokio::time::timeout(WAIT, stream.message())
        .await
        .expect("stream ends in time");
    assert!(matches!(end, Ok(None) | Err(_)), "the stream ends: {end:?}");
    assert!(!socket.exists(), "socket removed at exit");
}

#[test]
fn installed_library_answers_to_nvidia_sonames_through_relative_links() {
    let dir = tempfile::tempdir().expect("temporary directory");
    let library = dir.path().join("build.so");
    std::fs::write(&library, b"not really a library").expect("write");
    let target = dir.path().join("lib");
    rcud_k8s::install_library(&library, &target).expect("install");
    // Twice: a restarted plugin replaces what the last one installed.
    rcud_k8s::install_library(&library, &target).expect("install again");
    for soname in rcud_client::sonames::SONAMES {
        let link = target.join(soname);
        assert_eq!(
            std::fs::read_link(&link).expect("symlink"),
            Path::new("librcudart.so"),
            "{soname} links relatively, so it resolves where the directory is mounted"
        );
        assert_eq!(
            std::fs::read(&link).expect("read through the link"),
            b"not really a library"
        );
    }
}

/// What a pod given a GPU runs: a CUDA program, with exactly the
/// environment and library directory Allocate hands out, on the GPU of an
/// emulating server.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cuda_program_runs_with_what_allocate_hands_out() {
    let Some(nvcc) = std::env::var_os("RCUD_NVCC") else {
        assert!(
            std::env::var_os("RCUD_REQUIRE_CUDA").is_none(),
            "RCUD_REQUIRE_CUDA is set but RCUD_NVCC is not"
        );
        eprintln!("skipped: set RCUD_NVCC to an nvcc to compile the CUDA program");
        return;
    };
    let library = release_dir().join("librcudart.so");
    assert!(
        library.is_file(),
        "{} is missing: cargo build --release --workspace",
        library.display()
    );
    let work = tempfile::tempdir().expect("temporary directory");
    let source = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/cuda/k_vector_add.cu");
    // nvcc's two runtimes: libcudart.so.13, and the static one that loads
    // libcuda.so.1.
    let programs: Vec<PathBuf> = ["shared", "static"]
        .iter()
        .map(|cudart| {
            let program = work.path().join(format!("k_vector_add_{cudart}"));
            let status = Command::new(&nvcc)
                .args(["-arch=sm_80", "-cudart", cudart, "-o"])
                .arg(&program)
                .arg(&source)
                .status()
                .expect("run nvcc");
            assert!(
                status.success(),
                "nvcc -cudart {cudart} failed on {}",
                source.display()
            );
            program
        })
        .collect();

    let mut server = EmuServer::start();
    let kubelet_dir = work.path().join("kubelet");
    std::fs::create_dir(&kubelet_dir).expect("kubelet directory");
    let _registrations = start_kubelet(&kubelet_dir);
    let library_dir = work.path().join("host-lib");
    rcud_k8s::install_library(&library, &library_dir).expect("install the client library");
    let mut config = config(&kubelet_dir, &server.addr.to_string(), &library_dir);
    // No container here: the "container" sees the host directory as it is.
    config.container_library_dir = library_dir.clone();
    let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
    let plugin = tokio::spawn(rcud_k8s::serve(config, async {
        let _ = stop_rx.await;
    }));
    let socket = kubelet_dir.join("rcud.sock");
    let start = Instant::now();
    while !socket.exists() {
        assert!(start.elapsed() < WAIT, "the plugin did not serve");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let mut client = connect_plugin(&socket).await;
    let response = client
        .allocate(AllocateRequest {
            container_requests: vec![ContainerAllocateRequest {
                devices_ids: vec![format!("{}#1", server.addr)],
            }],
        })
        .await
        .expect("Allocate")
        .into_inner();
    let container = &response.container_responses[0];
    assert_eq!(Path::new(&container.mounts[0].host_path), library_dir);

    for program in &programs {
        let output = Command::new(program)
            .env_clear()
            .env("PATH", "/usr/bin:/bin")
            .envs(&container.envs)
            .output()
            .expect("run the CUDA program");
        let stdout = String::from_utf8_lossy(&output.stdout);
        assert!(
            output.status.success() && stdout.contains("PASS"),
            "{}: status {}\n--- stdout ---\n{stdout}\n--- stderr ---\n{}",
            program.display(),
            output.status,
            String::from_utf8_lossy(&output.stderr)
        );
    }
    server.stop();
    stop_tx.send(()).expect("plugin still running");
    plugin.await.expect("plugin task").expect("plugin result");
}
