//! `rcud bench qos`: clients sharing one server, with and without QoS, in
//! one run. Two embedded servers on loopback, alike but for `--qos-link`;
//! the same clients run against each in turn. Both pace their bulk chunks
//! as a port of `--port-rate` would (`--qos-port-rate`): arbitration decides
//! shares only where the port, not the CPUs, is the bottleneck. "QoS off"
//! is that paced port as one FIFO queue of copies (a NIC's send queue
//! without arbitration); "QoS on" is the table's arbitration of it.
//! `--port-rate off` compares the unpaced server without QoS instead.
//!
//! - two bulk clients of weights 3:1 (`class=db` at 3 and 1 GB/s) copying
//!   host to device as fast as they can: their share of the bytes;
//! - a DBTS client's small synchronous calls (a 4-byte device-to-host copy)
//!   beside a saturating best-effort bulk client: their 50th and 99th
//!   percentile latency, against the class's delay bound.

use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use rcud_client::session::Session;
use rcud_client::Security;
use rcud_proto::ops::req;
use rcud_qos::admission::{Link, TableConfig};
use rcud_server::backend::{BackendKind, EmuSettings};
use rcud_server::qos::PortQos;
use rcud_server::{select_backend, Server, ServerHandle};
use rcud_transport::bootstrap::TransportKind;
use serde::Serialize;

use super::output::{emit, Format, Table};
use super::BenchResult;

/// Arguments of `rcud bench qos`.
#[derive(Debug, clap::Args)]
pub(crate) struct QosArgs {
    /// Seconds each scenario runs on each server.
    #[arg(long, default_value_t = 3.0)]
    seconds: f64,
    /// Bytes of each bulk copy.
    #[arg(long, default_value = "2MiB")]
    copy: bytesize::ByteSize,
    /// The QoS server's link rate for its table (`--qos-link`).
    #[arg(long, default_value = "40Gb/s")]
    link: String,
    /// The rate both servers pace bulk chunks at (`--qos-port-rate`), or
    /// `off`: unpaced, and "QoS off" is then a server without QoS.
    #[arg(long, default_value = "250MB/s", value_parser = parse_port_rate)]
    port_rate: PortRate,
    /// Directions of the bulk copies, comma-separated.
    #[arg(long, value_enum, value_delimiter = ',', default_values_t = [Direction::H2d, Direction::D2h])]
    direction: Vec<Direction>,
    /// The DBTS client's class.
    #[arg(long, default_value = "class=dbts,bandwidth=100MB/s,latency=2ms")]
    latency_class: String,
}

/// A `--port-rate`: bytes per second, or none.
#[derive(Debug, Clone, Copy)]
pub(crate) struct PortRate(Option<f64>);

fn parse_port_rate(s: &str) -> Result<PortRate, String> {
    if s.eq_ignore_ascii_case("off") {
        return Ok(PortRate(None));
    }
    match rcud_qos::service::parse_bandwidth(s) {
        Ok(rate) if rate >= 1e3 => Ok(PortRate(Some(rate))),
        Ok(_) => Err("a port rate below 1 kB/s".into()),
        Err(e) => Err(e.to_string()),
    }
}

#[derive(Debug, Serialize)]
struct Row {
    scenario: &'static str,
    client: String,
    qos: bool,
    /// What "QoS off" / "on" was: `fifo`, `table`, `none`.
    arbitration: &'static str,
    /// The rate both servers paced bulk chunks at, GB/s; none: unpaced.
    port_gb_per_s: Option<f64>,
    /// Bulk clients: GB/s moved.
    gb_per_s: Option<f64>,
    /// Bulk clients: this client's bytes over the other's.
    share_ratio: Option<f64>,
    /// Latency client: percentiles of its calls, µs.
    p50_us: Option<f64>,
    p99_us: Option<f64>,
    /// Latency client: its class's bound, µs.
    bound_us: Option<f64>,
}

/// A server with the table of a `qos` link, or without QoS; both with
/// bulk chunks paced at `port` (without QoS, in FIFO order).
fn server(qos: Option<&str>, port: PortRate) -> BenchResult<ServerHandle> {
    let backend = select_backend(BackendKind::Emu, &EmuSettings::default())?;
    // Loopback clients only, no tenants: the bench's own.
    let mut server = Server::bind("127.0.0.1:0", backend)?;
    match (qos, port.0) {
        (Some(link), rate) => {
            let link = rcud_qos::service::parse_bandwidth(link)?;
            let config = TableConfig::new(Link {
                bytes_per_second: link,
                mtu: 2048,
            });
            server = server.with_qos(PortQos::paced(config, rate)?);
        }
        (None, Some(rate)) => server = server.with_qos(PortQos::fifo(rate, 2048)?),
        (None, None) => {}
    }
    Ok(server.spawn()?)
}

/// What a run's arbitration was.
fn arbitration(qos: bool, port: PortRate) -> &'static str {
    match (qos, port.0) {
        (true, _) => "table",
        (false, Some(_)) => "fifo",
        (false, None) => "none",
    }
}

/// The reply of a call, or its transport or CUDA failure.
fn done<T>(
    r: Result<Result<T, rcud_proto::ops::Failure>, rcud_client::ClientError>,
) -> BenchResult<T> {
    Ok(r?.map_err(|f| f.to_string())?)
}

fn session(addr: &str, qos: &str) -> BenchResult<Session> {
    let security = Security {
        credentials: None,
        tls: None,
        qos: qos.into(),
    };
    let mut s = Session::connect_secured(addr, "rcud bench qos", TransportKind::Tcp, &security)?;
    done(s.call(&req::Attach { gpu: 0, window: 0 }, &[], &mut []))?;
    Ok(s)
}

/// Which way the bulk clients copy.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, Serialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum Direction {
    /// Host to device: the server arbitrates which socket it drains.
    H2d,
    /// Device to host: the server arbitrates what it sends.
    D2h,
}

/// Copies `len` bytes `way` until `stop`; returns the bytes moved.
fn bulk(mut s: Session, len: usize, way: Direction, stop: &AtomicBool) -> BenchResult<u64> {
    let ptr = done(s.call(&req::Malloc { size: len as u64 }, &[], &mut []))?.ptr;
    let mut data = vec![0x5au8; len];
    let mut moved = 0u64;
    while !stop.load(Ordering::Relaxed) {
        match way {
            Direction::H2d => done(s.call(
                &req::MemcpyHtoD {
                    dst: ptr,
                    len: len as u64,
                },
                &data,
                &mut [],
            ))
            .map(drop)?,
            Direction::D2h => done(s.call(
                &req::MemcpyDtoH {
                    src: ptr,
                    len: len as u64,
                },
                &[],
                &mut data,
            ))
            .map(drop)?,
        }
        // A copy that ends after the window closed would credit a client
        // with bytes it moved alone on the port once the other had stopped.
        if !stop.load(Ordering::Relaxed) {
            moved += len as u64;
        }
    }
    Ok(moved)
}

fn shares(addr: &str, args: &QosArgs, way: Direction, qos: bool) -> BenchResult<Vec<Row>> {
    let classes = ["class=db,bandwidth=3GB/s", "class=db,bandwidth=1GB/s"];
    let stop = Arc::new(AtomicBool::new(false));
    let len = args.copy.as_u64() as usize;
    let workers: Vec<_> = classes
        .iter()
        .map(|class| {
            let s = session(addr, class)?;
            let stop = stop.clone();
            Ok(std::thread::spawn(move || {
                bulk(s, len, way, &stop).map_err(|e| e.to_string())
            }))
        })
        .collect::<BenchResult<_>>()?;
    let started = Instant::now();
    std::thread::sleep(Duration::from_secs_f64(args.seconds));
    stop.store(true, Ordering::Relaxed);
    // The window the counted copies ended in.
    let secs = started.elapsed().as_secs_f64();
    let moved: Vec<u64> = workers
        .into_iter()
        .map(|w| {
            w.join()
                .map_err(|_| "a bulk client panicked")?
                .map_err(Into::into)
        })
        .collect::<BenchResult<_>>()?;
    Ok(classes
        .iter()
        .zip(&moved)
        .enumerate()
        .map(|(i, (class, &bytes))| Row {
            scenario: match way {
                Direction::H2d => "H2D shares, weights 3:1",
                Direction::D2h => "D2H shares, weights 3:1",
            },
            client: (*class).to_string(),
            qos,
            arbitration: arbitration(qos, args.port_rate),
            port_gb_per_s: args.port_rate.0.map(|r| r / 1e9),
            gb_per_s: Some(bytes as f64 / secs / 1e9),
            share_ratio: Some(bytes as f64 / moved[1 - i].max(1) as f64),
            p50_us: None,
            p99_us: None,
            bound_us: None,
        })
        .collect())
}

fn latency(addr: &str, args: &QosArgs, qos: bool) -> BenchResult<Row> {
    let class: rcud_qos::service::ServiceRequest = args.latency_class.parse()?;
    let stop = Arc::new(AtomicBool::new(false));
    let len = args.copy.as_u64() as usize;
    let noisy = {
        let s = session(addr, "class=be")?;
        let stop = stop.clone();
        std::thread::spawn(move || bulk(s, len, Direction::D2h, &stop).map_err(|e| e.to_string()))
    };
    let mut s = session(addr, &args.latency_class)?;
    let ptr = done(s.call(&req::Malloc { size: 4 }, &[], &mut []))?.ptr;
    let mut word = [0u8; 4];
    let mut samples = Vec::new();
    // Let the bulk client saturate first.
    std::thread::sleep(Duration::from_millis(200));
    let end = Instant::now() + Duration::from_secs_f64(args.seconds);
    while Instant::now() < end {
        let t = Instant::now();
        done(s.call(&req::MemcpyDtoH { src: ptr, len: 4 }, &[], &mut word))?;
        samples.push(t.elapsed().as_secs_f64() * 1e6);
        // A small call every 2 to 3 ms: latency-sensitive, not
        // bandwidth-hungry. The jitter keeps the calls from locking onto
        // the paced port's chunk boundaries (2 ms is two chunks at 250 MB/s).
        let jitter = (samples.len() as u64).wrapping_mul(7919) % 1000;
        std::thread::sleep(Duration::from_micros(2000 + jitter));
    }
    stop.store(true, Ordering::Relaxed);
    noisy
        .join()
        .map_err(|_| "the bulk client panicked")?
        .map_err(|e| -> Box<dyn std::error::Error> { e.into() })?;
    samples.sort_by(f64::total_cmp);
    let at = |q: f64| samples[((samples.len() - 1) as f64 * q) as usize];
    Ok(Row {
        scenario: "small calls beside bulk",
        client: args.latency_class.clone(),
        qos,
        arbitration: arbitration(qos, args.port_rate),
        port_gb_per_s: args.port_rate.0.map(|r| r / 1e9),
        gb_per_s: None,
        share_ratio: None,
        p50_us: Some(at(0.5)),
        p99_us: Some(at(0.99)),
        bound_us: class.latency.map(|l| l.as_secs_f64() * 1e6),
    })
}

pub(crate) fn run(args: &QosArgs, format: Format) -> BenchResult<ExitCode> {
    let plain = server(None, args.port_rate)?;
    let arbitrated = server(Some(&args.link), args.port_rate)?;
    let mut rows = Vec::new();
    // Interleaved, so that both servers see the same machine.
    for &way in &args.direction {
        for (handle, qos) in [(&plain, false), (&arbitrated, true)] {
            rows.extend(shares(&handle.addr().to_string(), args, way, qos)?);
        }
    }
    for (handle, qos) in [(&plain, false), (&arbitrated, true)] {
        rows.push(latency(&handle.addr().to_string(), args, qos)?);
    }
    if matches!(format, Format::Table | Format::Markdown) {
        match args.port_rate.0 {
            Some(rate) => println!(
                "port paced at {:.2} GB/s on both servers; QoS off: one FIFO queue of copies, \
                 QoS on: the table of a {} link",
                rate / 1e9,
                args.link
            ),
            None => println!(
                "port not paced; QoS off: no arbitration, QoS on: the table of a {} link",
                args.link
            ),
        }
    }
    emit(format, &rows, || {
        let mut t = Table::new(&[
            "scenario",
            "client",
            "QoS",
            "GB/s",
            "share",
            "p50 µs",
            "p99 µs",
            "bound µs",
        ]);
        let f = |v: Option<f64>, d: usize| v.map_or(String::new(), |v| format!("{v:.d$}"));
        for r in &rows {
            t.push(vec![
                r.scenario.into(),
                r.client.clone(),
                match (r.qos, r.arbitration) {
                    (true, _) => "on".into(),
                    (false, "fifo") => "off (FIFO)".into(),
                    (false, _) => "off".into(),
                },
                f(r.gb_per_s, 2),
                f(r.share_ratio, 2),
                f(r.p50_us, 0),
                f(r.p99_us, 0),
                f(r.bound_us, 0),
            ]);
        }
        t
    })?;
    Ok(ExitCode::SUCCESS)
}
