//! Prometheus metrics: `rcud-server --metrics ADDR` serves them as text at
//! `http://ADDR/metrics`.
//!
//! What agents count (bytes and frames per transport and direction, call
//! latency, kernel time) lives in a small table in shared memory
//! ([`SharedStats`]) that the listener creates and hands to every agent
//! process, as it does the table of tenants' memory; agent threads use the
//! listener's own. What the listener decides (admissions, refusals, QoS
//! classes) it counts itself. A scrape reads both, so every agent reports
//! without a round trip to it.

use std::io::{self, BufRead, BufReader, Write};
use std::net::{TcpListener, TcpStream};
use std::os::fd::{BorrowedFd, OwnedFd};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use parking_lot::Mutex;
use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeMetric, NoLabelSet};
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::ConstGauge;
use prometheus_client::metrics::MetricType;
use prometheus_client::registry::{Registry, Unit};
use rcud_proto::frame::{FrameHeader, HEADER_LEN};
use rcud_shm::SharedWords;
use rcud_transport::bootstrap::TransportKind;
use rcud_transport::{Channel, TransportError};

use crate::tenant_memory::TenantMemory;
use crate::tenants::Tenants;

/// The transports, in the order of the table.
const TRANSPORTS: [TransportKind; 3] = [TransportKind::Tcp, TransportKind::Csr, TransportKind::Msr];

/// Which way bytes go, seen from the server.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Direction {
    /// From the client.
    Received = 0,
    /// To the client.
    Sent = 1,
}

/// Upper bounds of the call latency buckets, in seconds (then +Inf).
const LATENCY_BOUNDS: [f64; 12] = [
    50e-6, 100e-6, 250e-6, 500e-6, 1e-3, 2.5e-3, 5e-3, 10e-3, 50e-3, 250e-3, 1.0, 10.0,
];

// The table's layout, in words.
const TRAFFIC: u64 = 0;
const TRAFFIC_WORDS: u64 = TRANSPORTS.len() as u64 * 2 * 2;
const LATENCY: u64 = TRAFFIC + TRAFFIC_WORDS;
const LATENCY_BUCKETS: u64 = LATENCY_BOUNDS.len() as u64 + 1;
const LATENCY_SUM_NS: u64 = LATENCY + LATENCY_BUCKETS;
const KERNELS: u64 = LATENCY_SUM_NS + 1;
const KERNEL_NS: u64 = KERNELS + 1;
const SESSIONS: u64 = KERNEL_NS + 1;
const WORDS: u64 = SESSIONS + SessionEvent::ALL.len() as u64;

/// What happened to a session whose connection broke ([`crate::resume`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SessionEvent {
    /// Its connection broke; the agent waits for the client.
    Interrupted = 0,
    /// The client came back and the session goes on.
    Resumed = 1,
    /// The grace period passed, or the client could not be given what it
    /// missed: the session's resources were released.
    Expired = 2,
}

impl SessionEvent {
    const ALL: [(SessionEvent, &'static str); 3] = [
        (SessionEvent::Interrupted, "interrupted"),
        (SessionEvent::Resumed, "resumed"),
        (SessionEvent::Expired, "expired"),
    ];
}

/// What agents count, in shared memory.
#[derive(Debug)]
pub struct SharedStats {
    words: SharedWords,
}

impl SharedStats {
    /// A table for the listener.
    pub fn create() -> io::Result<Self> {
        Ok(Self {
            words: SharedWords::create(c"rcud-stats", WORDS)?,
        })
    }

    /// The listener's table, in an agent process.
    pub fn open(fd: OwnedFd) -> io::Result<Self> {
        Ok(Self {
            words: SharedWords::open(fd, WORDS)?,
        })
    }

    /// The descriptor to hand to agent processes.
    pub fn fd(&self) -> BorrowedFd<'_> {
        self.words.fd()
    }

    fn word(&self, index: u64) -> &AtomicU64 {
        self.words.word(index)
    }

    fn traffic_index(kind: TransportKind, direction: Direction) -> u64 {
        let t = TRANSPORTS.iter().position(|k| *k == kind).unwrap_or(0) as u64;
        TRAFFIC + (t * 2 + direction as u64) * 2
    }

    /// One frame of `bytes` bytes (header, body and bulk payload).
    pub fn frame(&self, kind: TransportKind, direction: Direction, bytes: u64) {
        let i = Self::traffic_index(kind, direction);
        self.word(i).fetch_add(bytes, Ordering::Relaxed);
        self.word(i + 1).fetch_add(1, Ordering::Relaxed);
    }

    /// More bulk payload of a frame counted already.
    pub fn bytes(&self, kind: TransportKind, direction: Direction, bytes: u64) {
        let i = Self::traffic_index(kind, direction);
        self.word(i).fetch_add(bytes, Ordering::Relaxed);
    }

    /// One call answered `latency` after its request arrived.
    pub fn call(&self, latency: Duration) {
        let secs = latency.as_secs_f64();
        let bucket = LATENCY_BOUNDS
            .iter()
            .position(|b| secs <= *b)
            .unwrap_or(LATENCY_BOUNDS.len()) as u64;
        self.word(LATENCY + bucket).fetch_add(1, Ordering::Relaxed);
        let ns = u64::try_from(latency.as_nanos()).unwrap_or(u64::MAX);
        self.word(LATENCY_SUM_NS).fetch_add(ns, Ordering::Relaxed);
    }

    /// One kernel that ran for `time`.
    pub fn kernel(&self, time: Duration) {
        self.word(KERNELS).fetch_add(1, Ordering::Relaxed);
        let ns = u64::try_from(time.as_nanos()).unwrap_or(u64::MAX);
        self.word(KERNEL_NS).fetch_add(ns, Ordering::Relaxed);
    }

    /// One session event.
    pub fn session(&self, event: SessionEvent) {
        self.word(SESSIONS + event as u64)
            .fetch_add(1, Ordering::Relaxed);
    }

    fn load(&self, index: u64) -> u64 {
        self.word(index).load(Ordering::Relaxed)
    }
}

static SHARED: OnceLock<Arc<SharedStats>> = OnceLock::new();

/// Makes `stats` the table this process counts in (once per process: the
/// listener when it serves metrics, an agent process when handed one).
pub fn install(stats: Arc<SharedStats>) {
    let _ = SHARED.set(stats);
}

/// The table this process counts in, if metrics are on.
pub fn shared() -> Option<&'static Arc<SharedStats>> {
    SHARED.get()
}

/// Counts one kernel, if metrics are on.
pub fn kernel_ran(time: Duration) {
    if let Some(s) = shared() {
        s.kernel(time);
    }
}

/// What the listener counts itself.
#[derive(Debug, Default)]
pub struct ListenerStats {
    /// Connections the gate admitted, by tenant (`-` without tenants).
    admitted: Family<Vec<(String, String)>, Counter>,
    /// Connections refused, by reason.
    refused: Family<Vec<(String, String)>, Counter>,
    /// QoS admissions, by service class.
    qos_admitted: Family<Vec<(String, String)>, Counter>,
    /// QoS refusals.
    qos_refused: Counter,
    /// Reloads of the configuration, by result.
    reloads: Family<Vec<(String, String)>, Counter>,
}

static LISTENER: OnceLock<Arc<ListenerStats>> = OnceLock::new();

/// The listener's counters, once metrics are on.
pub fn listener() -> Option<&'static Arc<ListenerStats>> {
    LISTENER.get()
}

fn label(key: &str, value: &str) -> Vec<(String, String)> {
    vec![(key.into(), value.into())]
}

impl ListenerStats {
    /// A connection admitted for `tenant`.
    pub fn admitted(&self, tenant: &str) {
        self.admitted.get_or_create(&label("tenant", tenant)).inc();
    }

    /// A connection refused for `reason` (a short word).
    pub fn refused(&self, reason: &str) {
        self.refused.get_or_create(&label("reason", reason)).inc();
    }

    /// A QoS admission into `class`.
    pub fn qos_admitted(&self, class: &str) {
        self.qos_admitted
            .get_or_create(&label("class", class))
            .inc();
    }

    /// A QoS refusal.
    pub fn qos_refused(&self) {
        self.qos_refused.inc();
    }

    /// A reload of the configuration, `ok` or not.
    pub fn reloaded(&self, ok: bool) {
        let result = if ok { "ok" } else { "failed" };
        self.reloads.get_or_create(&label("result", result)).inc();
    }
}

/// Reads the listener's live state at scrape time.
pub trait Probe: Send + Sync + 'static {
    /// Clients being served.
    fn clients(&self) -> u64;
    /// Agent processes alive (0 with agent threads).
    fn agent_processes(&self) -> u64;
    /// The tenants now in force, if any.
    fn tenants(&self) -> Option<Arc<Tenants>>;
    /// The table of tenants' memory, if any.
    fn tenant_memory(&self) -> Option<Arc<TenantMemory>>;
}

/// Encodes the shared table and the listener's live state at each scrape.
struct Live {
    stats: Arc<SharedStats>,
    probe: Box<dyn Probe>,
}

impl std::fmt::Debug for Live {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Live").finish_non_exhaustive()
    }
}

fn gauge(
    encoder: &mut DescriptorEncoder<'_>,
    name: &str,
    help: &str,
    value: u64,
) -> Result<(), std::fmt::Error> {
    let g = ConstGauge::new(i64::try_from(value).unwrap_or(i64::MAX));
    g.encode(encoder.encode_descriptor(name, help, None, g.metric_type())?)
}

impl Collector for Live {
    fn encode(&self, mut encoder: DescriptorEncoder<'_>) -> Result<(), std::fmt::Error> {
        gauge(
            &mut encoder,
            "rcud_clients_connected",
            "Clients being served",
            self.probe.clients(),
        )?;
        gauge(
            &mut encoder,
            "rcud_agent_processes",
            "Agent processes alive (process isolation; 0 with agent threads)",
            self.probe.agent_processes(),
        )?;
        for (suffix, help, offset, unit) in [
            (
                "transport",
                "Bytes carried, by transport and direction (frames: headers, bodies, payloads)",
                0,
                Some(Unit::Bytes),
            ),
            (
                "transport_frames",
                "Frames (operations and replies), by transport and direction",
                1,
                None,
            ),
        ] {
            let name = format!("rcud_{suffix}");
            let mut family =
                encoder.encode_descriptor(&name, help, unit.as_ref(), MetricType::Counter)?;
            for kind in TRANSPORTS {
                for (direction, dir_name) in
                    [(Direction::Received, "received"), (Direction::Sent, "sent")]
                {
                    let labels = [
                        ("transport", kind.to_string()),
                        ("direction", dir_name.into()),
                    ];
                    let value = self
                        .stats
                        .load(SharedStats::traffic_index(kind, direction) + offset);
                    family
                        .encode_family(&labels)?
                        .encode_counter::<NoLabelSet, _, u64>(&value, None)?;
                }
            }
        }
        let buckets: Vec<(f64, u64)> = (0..LATENCY_BUCKETS)
            .map(|i| {
                let bound = LATENCY_BOUNDS.get(i as usize).copied().unwrap_or(f64::MAX);
                (bound, self.stats.load(LATENCY + i))
            })
            .collect();
        let count = buckets.iter().map(|(_, c)| c).sum();
        let sum = self.stats.load(LATENCY_SUM_NS) as f64 / 1e9;
        encoder
            .encode_descriptor(
                "rcud_call_latency",
                "Time from a request's arrival to its reply, for calls that are answered",
                Some(&Unit::Seconds),
                MetricType::Histogram,
            )?
            .encode_histogram::<NoLabelSet>(sum, count, &buckets, None)?;
        encoder
            .encode_descriptor(
                "rcud_kernels",
                "Kernels launched",
                None,
                MetricType::Counter,
            )?
            .encode_counter::<NoLabelSet, _, u64>(&self.stats.load(KERNELS), None)?;
        encoder
            .encode_descriptor(
                "rcud_kernel_time",
                "Time kernels ran on the devices",
                Some(&Unit::Seconds),
                MetricType::Counter,
            )?
            .encode_counter::<NoLabelSet, _, u64>(
                &(self.stats.load(KERNEL_NS) as f64 / 1e9),
                None,
            )?;
        let mut family = encoder.encode_descriptor(
            "rcud_sessions",
            "Sessions whose connection broke, by what became of them",
            None,
            MetricType::Counter,
        )?;
        for (event, name) in SessionEvent::ALL {
            let value = self.stats.load(SESSIONS + event as u64);
            family
                .encode_family(&[("event", name.to_string())])?
                .encode_counter::<NoLabelSet, _, u64>(&value, None)?;
        }
        if let (Some(tenants), Some(table)) = (self.probe.tenants(), self.probe.tenant_memory()) {
            let mut family = encoder.encode_descriptor(
                "rcud_tenant_device_memory",
                "Device memory a tenant holds over all its connections",
                Some(&Unit::Bytes),
                MetricType::Gauge,
            )?;
            for (index, name) in tenants.names().enumerate() {
                let used = u32::try_from(index).map_or(0, |i| table.used_by(i));
                let labels = [("tenant", name.to_string())];
                family
                    .encode_family(&labels)?
                    .encode_gauge(&i64::try_from(used).unwrap_or(i64::MAX))?;
            }
        }
        Ok(())
    }
}

/// The metrics of a listener: its registry, served by [`serve`].
pub struct Metrics {
    registry: Mutex<Registry>,
}

impl std::fmt::Debug for Metrics {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Metrics").finish_non_exhaustive()
    }
}

impl Metrics {
    /// Turns metrics on for this process (the listener's): creates the
    /// shared table agents count in, and the listener's counters.
    pub fn enable(probe: Box<dyn Probe>) -> io::Result<Arc<Self>> {
        let stats = match shared() {
            Some(s) => s.clone(),
            None => {
                install(Arc::new(SharedStats::create()?));
                shared()
                    .cloned()
                    .ok_or_else(|| io::Error::other("metrics table"))?
            }
        };
        let listener = LISTENER.get_or_init(Arc::default).clone();
        let mut registry = Registry::default();
        registry.register(
            "rcud_admissions",
            "Connections admitted by the gate, by tenant",
            listener.admitted.clone(),
        );
        registry.register(
            "rcud_refusals",
            "Connections refused, by reason",
            listener.refused.clone(),
        );
        registry.register(
            "rcud_qos_admissions",
            "Connections admitted into a QoS service class, by class",
            listener.qos_admitted.clone(),
        );
        registry.register(
            "rcud_qos_refusals",
            "Connections the QoS admission refused",
            listener.qos_refused.clone(),
        );
        registry.register(
            "rcud_config_reloads",
            "Reloads of the configuration (SIGHUP), by result",
            listener.reloads.clone(),
        );
        registry.register_collector(Box::new(Live { stats, probe }));
        Ok(Arc::new(Self {
            registry: Mutex::new(registry),
        }))
    }

    /// The metrics in Prometheus' text format (OpenMetrics).
    pub fn render(&self) -> String {
        let mut text = String::new();
        if let Err(e) = prometheus_client::encoding::text::encode(&mut text, &self.registry.lock())
        {
            tracing::warn!("cannot encode the metrics: {e}");
        }
        text
    }
}

/// The content type of [`Metrics::render`].
pub const CONTENT_TYPE: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

/// Serves `GET /metrics` on `listener` from a thread of its own, one
/// request at a time.
pub fn serve(listener: TcpListener, metrics: Arc<Metrics>) -> io::Result<()> {
    std::thread::Builder::new()
        .name("rcud-metrics".into())
        .spawn(move || {
            for stream in listener.incoming() {
                match stream {
                    Ok(s) => {
                        if let Err(e) = answer(s, &metrics) {
                            tracing::debug!("metrics request: {e}");
                        }
                    }
                    Err(e) => {
                        tracing::warn!("metrics listener: {e}");
                        std::thread::sleep(Duration::from_millis(50));
                    }
                }
            }
        })?;
    Ok(())
}

/// Longest request line or header line read.
const MAX_LINE: u64 = 8 << 10;

fn answer(stream: TcpStream, metrics: &Metrics) -> io::Result<()> {
    stream.set_read_timeout(Some(Duration::from_secs(5)))?;
    stream.set_write_timeout(Some(Duration::from_secs(5)))?;
    let mut reader = BufReader::new(io::Read::take(stream.try_clone()?, 64 * MAX_LINE));
    let mut request = String::new();
    reader.read_line(&mut request)?;
    // Headers are read and dropped: nothing in them changes the answer.
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line)? == 0 || line.trim().is_empty() {
            break;
        }
    }
    let mut parts = request.split_whitespace();
    let (method, target) = (parts.next().unwrap_or(""), parts.next().unwrap_or(""));
    let path = target.split('?').next().unwrap_or("");
    let (status, content_type, body) = match (method, path) {
        ("GET", "/metrics") => ("200 OK", CONTENT_TYPE, metrics.render()),
        ("GET", _) => ("404 Not Found", "text/plain", "try /metrics\n".into()),
        _ => (
            "405 Method Not Allowed",
            "text/plain",
            "GET /metrics only\n".into(),
        ),
    };
    let mut out = stream;
    write!(
        out,
        "HTTP/1.1 {status}\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\n\
         Connection: close\r\n\r\n{body}",
        body.len()
    )?;
    out.flush()
}

/// A channel that counts what goes through it in the shared table.
pub struct CountingChannel {
    inner: Box<dyn Channel>,
    stats: &'static SharedStats,
    kind: TransportKind,
    /// When the request being served arrived.
    request_at: Option<Instant>,
}

impl CountingChannel {
    /// `inner`, counted when metrics are on; otherwise `inner` itself.
    pub fn wrap(inner: Box<dyn Channel>, kind: TransportKind) -> Box<dyn Channel> {
        match shared() {
            Some(stats) => Box::new(Self {
                inner,
                stats,
                kind,
                request_at: None,
            }),
            None => inner,
        }
    }

    fn frame_bytes(header: &FrameHeader) -> u64 {
        HEADER_LEN as u64 + u64::from(header.body_len) + header.bulk_len
    }
}

impl Channel for CountingChannel {
    fn send_frame(
        &mut self,
        header: &FrameHeader,
        body: &[u8],
        bulk: &[u8],
    ) -> Result<(), TransportError> {
        if let Some(at) = self.request_at.take() {
            self.stats.call(at.elapsed());
        }
        self.stats
            .frame(self.kind, Direction::Sent, Self::frame_bytes(header));
        self.inner.send_frame(header, body, bulk)
    }

    fn send_bulk(&mut self, bulk: &[u8]) -> Result<(), TransportError> {
        // Counted with its frame's header.
        self.inner.send_bulk(bulk)
    }

    fn send_raw(&mut self, frames: &[u8]) -> Result<(), TransportError> {
        self.stats
            .bytes(self.kind, Direction::Sent, frames.len() as u64);
        self.inner.send_raw(frames)
    }

    fn flush(&mut self) -> Result<(), TransportError> {
        self.inner.flush()
    }

    fn recv_header(&mut self) -> Result<FrameHeader, TransportError> {
        let header = self.inner.recv_header()?;
        self.request_at = Some(Instant::now());
        self.stats
            .frame(self.kind, Direction::Received, Self::frame_bytes(&header));
        Ok(header)
    }

    fn recv_body(&mut self, len: u32) -> Result<&[u8], TransportError> {
        self.inner.recv_body(len)
    }

    fn recv_bulk_into(&mut self, dst: &mut [u8]) -> Result<(), TransportError> {
        self.inner.recv_bulk_into(dst)
    }

    fn discard_bulk(&mut self, len: u64) -> Result<(), TransportError> {
        self.inner.discard_bulk(len)
    }

    fn peer(&self) -> String {
        self.inner.peer()
    }

    fn peer_left(&self) -> bool {
        self.inner.peer_left()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table_counts_and_buckets() {
        let s = SharedStats::create().unwrap();
        s.frame(TransportKind::Csr, Direction::Sent, 100);
        s.bytes(TransportKind::Csr, Direction::Sent, 50);
        s.call(Duration::from_micros(70));
        s.call(Duration::from_secs(100));
        let i = SharedStats::traffic_index(TransportKind::Csr, Direction::Sent);
        assert_eq!((s.load(i), s.load(i + 1)), (150, 1));
        assert_eq!(s.load(LATENCY + 1), 1, "70 µs is in the 100 µs bucket");
        assert_eq!(s.load(LATENCY + LATENCY_BUCKETS - 1), 1, "+Inf");
    }
}
