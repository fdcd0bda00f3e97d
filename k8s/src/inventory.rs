//! The remote GPUs and their health, from probing the servers.

use std::collections::HashMap;
use std::time::Duration;

use rcud_client::config::ServerEntry;
use rcud_client::session::Session;
use tokio::sync::watch;

/// One remote GPU as the plugin advertises it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RemoteGpu {
    /// `host:port`.
    pub server: String,
    /// The GPU's index on its server.
    pub gpu: u32,
    /// Whether the server answered the last probe and has this GPU.
    pub healthy: bool,
}

impl RemoteGpu {
    /// The device ID: the GPU's `RCUD_SERVERS` entry, so that Allocate turns
    /// the IDs it is given into `RCUD_SERVERS` as they are.
    pub fn id(&self) -> String {
        format!("{}#{}", self.server, self.gpu)
    }
}

const CLIENT_NAME: &str = "rcud k8s-device-plugin";

/// Asks a server how many GPUs it serves: a handshake, as every client does
/// first. Blocking (the client library is synchronous).
fn gpu_count(server: &str) -> Result<u32, String> {
    Session::connect(server, CLIENT_NAME)
        .map(|session| session.server_hello().gpu_count)
        .map_err(|e| e.to_string())
}

/// The GPUs of `entries` after one probe of every server.
pub(crate) struct Inventory {
    entries: Vec<ServerEntry>,
    /// GPUs each server reported when it last answered; a server that stops
    /// answering keeps them, Unhealthy.
    known: HashMap<String, u32>,
    /// The last probe's error of each server, to log changes only.
    failing: HashMap<String, String>,
}

impl Inventory {
    pub(crate) fn new(entries: Vec<ServerEntry>) -> Self {
        Self {
            entries,
            known: HashMap::new(),
            failing: HashMap::new(),
        }
    }

    /// Probes every server (in parallel) and returns the devices.
    pub(crate) async fn probe(&mut self) -> Vec<RemoteGpu> {
        let mut servers: Vec<String> = self.entries.iter().map(|e| e.addr.clone()).collect();
        servers.sort();
        servers.dedup();
        let probes: Vec<_> = servers
            .iter()
            .map(|s| {
                let s = s.clone();
                tokio::task::spawn_blocking(move || gpu_count(&s))
            })
            .collect();
        let mut answers: HashMap<String, Result<u32, String>> = HashMap::new();
        for (server, probe) in servers.into_iter().zip(probes) {
            let answer = probe
                .await
                .unwrap_or_else(|e| Err(format!("probe task failed: {e}")));
            match &answer {
                Ok(n) => {
                    if self.failing.remove(&server).is_some() {
                        tracing::info!(%server, gpus = n, "server answers again");
                    }
                    self.known.insert(server.clone(), *n);
                }
                Err(e) => {
                    if self.failing.insert(server.clone(), e.clone()).as_ref() != Some(e) {
                        tracing::warn!(%server, error = %e, "server does not answer: its GPUs are Unhealthy");
                    }
                }
            }
            answers.insert(server, answer);
        }
        self.devices(&answers)
    }

    fn devices(&self, answers: &HashMap<String, Result<u32, String>>) -> Vec<RemoteGpu> {
        let mut devices: Vec<RemoteGpu> = Vec::new();
        for entry in &self.entries {
            let answered = match answers.get(&entry.addr) {
                Some(Ok(n)) => Some(*n),
                _ => None,
            };
            // A server that never answered has no known GPUs yet, unless the
            // entry names one.
            let gpus = match entry.gpu {
                Some(g) => g..g + 1,
                None => 0..self.known.get(&entry.addr).copied().unwrap_or(0),
            };
            for gpu in gpus {
                if devices
                    .iter()
                    .any(|d| d.server == entry.addr && d.gpu == gpu)
                {
                    continue;
                }
                devices.push(RemoteGpu {
                    server: entry.addr.clone(),
                    gpu,
                    healthy: answered.is_some_and(|n| gpu < n),
                });
            }
        }
        devices
    }
}

/// Probes the servers every `interval` and publishes the devices on `tx`
/// when they change, until every receiver is gone.
pub(crate) async fn watch_servers(
    mut inventory: Inventory,
    tx: watch::Sender<Vec<RemoteGpu>>,
    interval: Duration,
) {
    loop {
        tokio::select! {
            _ = tokio::time::sleep(interval) => {}
            _ = tx.closed() => return,
        }
        let devices = inventory.probe().await;
        tx.send_if_modified(|current| {
            if *current == devices {
                return false;
            }
            *current = devices;
            true
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(addr: &str, gpu: Option<u32>) -> ServerEntry {
        ServerEntry {
            addr: addr.into(),
            gpu,
        }
    }

    #[test]
    fn devices_follow_answers_and_keep_known_gpus_of_silent_servers() {
        let mut inv = Inventory::new(vec![
            entry("a:1", None),
            entry("b:1", Some(1)),
            entry("a:1", Some(0)),
        ]);
        inv.known.insert("a:1".into(), 2);
        let mut answers = HashMap::new();
        answers.insert("a:1".to_string(), Ok(2));
        answers.insert("b:1".to_string(), Ok(1));
        let d = inv.devices(&answers);
        let ids: Vec<(String, bool)> = d.iter().map(|d| (d.id(), d.healthy)).collect();
        // a:1#0 is listed once; b:1 has one GPU, so its #1 is Unhealthy.
        assert_eq!(
            ids,
            vec![
                ("a:1#0".into(), true),
                ("a:1#1".into(), true),
                ("b:1#1".into(), false)
            ]
        );
        answers.insert("a:1".to_string(), Err("refused".into()));
        let d = inv.devices(&answers);
        assert_eq!(d.len(), 3);
        assert!(d.iter().all(|d| !d.healthy));
    }
}
