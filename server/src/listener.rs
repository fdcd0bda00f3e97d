//! The listener: accepts connections and starts one agent per client.

use std::io;
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread;

use rcud_transport::{TcpChannel, TcpOptions};

use crate::agent::{self, Agent, AgentError};
use crate::backend::Backend;

/// A bound, not yet running server.
pub struct Server {
    listener: TcpListener,
    backend: Arc<dyn Backend>,
    tcp: TcpOptions,
    stop: Arc<AtomicBool>,
}

/// Controls a server running on a background thread.
#[derive(Debug)]
pub struct ServerHandle {
    addr: SocketAddr,
    stop: Arc<AtomicBool>,
    thread: Option<thread::JoinHandle<()>>,
}

impl Server {
    /// Binds `addr` (use port 0 for any free port).
    pub fn bind(addr: &str, backend: Arc<dyn Backend>) -> io::Result<Self> {
        Ok(Self {
            listener: TcpListener::bind(addr)?,
            backend,
            tcp: TcpOptions::default(),
            stop: Arc::new(AtomicBool::new(false)),
        })
    }

    /// The address the server listens on.
    pub fn local_addr(&self) -> io::Result<SocketAddr> {
        self.listener.local_addr()
    }

    /// Accepts clients until stopped; each one is served on its own thread.
    pub fn serve(self) {
        let addr = self.listener.local_addr().ok();
        tracing::info!(
            ?addr,
            backend = self.backend.name(),
            "rcud-server listening"
        );
        for conn in self.listener.incoming() {
            if self.stop.load(Ordering::Acquire) {
                break;
            }
            match conn {
                Ok(stream) => {
                    let backend = self.backend.clone();
                    let tcp = self.tcp.clone();
                    let spawned = thread::Builder::new()
                        .name("rcud-agent".into())
                        .spawn(move || serve_client(stream, backend, &tcp));
                    if let Err(e) = spawned {
                        tracing::error!("cannot start an agent thread: {e}");
                    }
                }
                Err(e) => tracing::warn!("accept failed: {e}"),
            }
        }
    }

    /// Runs [`Server::serve`] on a background thread.
    pub fn spawn(self) -> io::Result<ServerHandle> {
        let addr = self.local_addr()?;
        let stop = self.stop.clone();
        let thread = thread::Builder::new()
            .name("rcud-listener".into())
            .spawn(move || self.serve())?;
        Ok(ServerHandle {
            addr,
            stop,
            thread: Some(thread),
        })
    }
}

impl ServerHandle {
    /// The address the server listens on.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Stops accepting clients and waits for the listener to end. Agents of
    /// connected clients finish when their clients disconnect.
    pub fn shutdown(mut self) {
        self.stop_listener();
    }

    fn stop_listener(&mut self) {
        self.stop.store(true, Ordering::Release);
        // Wake the blocking accept.
        let _ = TcpStream::connect(self.addr);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl Drop for ServerHandle {
    fn drop(&mut self) {
        self.stop_listener();
    }
}

fn serve_client(mut stream: TcpStream, backend: Arc<dyn Backend>, tcp: &TcpOptions) {
    let peer = stream
        .peer_addr()
        .map(|a| a.to_string())
        .unwrap_or_else(|_| "?".into());
    let _ = stream.set_read_timeout(Some(agent::HELLO_TIMEOUT));
    let client = match agent::handshake(&mut stream, backend.as_ref()) {
        Ok(client) => client,
        Err(AgentError::Transport(rcud_transport::TransportError::Closed)) => {
            tracing::debug!(%peer, "connection closed before the handshake");
            return;
        }
        Err(e) => {
            tracing::warn!(%peer, "handshake failed, closing: {e}");
            return;
        }
    };
    let _ = stream.set_read_timeout(None);
    let chan = match TcpChannel::from_stream(stream, tcp) {
        Ok(c) => c,
        Err(e) => {
            tracing::warn!(%peer, "cannot set up the connection: {e}");
            return;
        }
    };
    tracing::info!(%peer, %client, "client connected");
    match Agent::new(backend, Box::new(chan)).run() {
        Ok(()) => tracing::info!(%peer, %client, "client disconnected; its resources are released"),
        Err(e) => {
            tracing::warn!(%peer, %client, "closing connection: {e}; its resources are released")
        }
    }
}
