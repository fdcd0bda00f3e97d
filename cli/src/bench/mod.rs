//! `rcud bench`: bandwidthTest-style measurements through the rcud client
//! runtime, each next to the raw transport measured in the same run, so the
//! ratio holds on a shared, noisy machine.

mod launch;
mod raw;

use std::process::ExitCode;
use std::time::{Duration, Instant};

use rcud_client::config::parse_servers;
use rcud_client::Runtime;
use rcud_server::backend::{BackendKind, EmuSettings};
use serde::Serialize;

/// Arguments of `rcud bench`.
#[derive(Debug, clap::Args)]
pub(crate) struct BenchArgs {
    #[command(subcommand)]
    what: What,
    /// Server to measure (`host:port`); without it an embedded server on loopback.
    #[arg(long, global = true, env = "RCUD_SERVERS")]
    server: Option<String>,
    /// Output format.
    #[arg(long, global = true, value_enum, default_value_t = Format::Table)]
    format: Format,
    /// Transport module to the server (`tcp`, `csr`, `msr`).
    #[arg(long, global = true, env = "RCUD_TRANSPORT", default_value = "tcp")]
    transport: rcud_transport::bootstrap::TransportKind,
}

#[derive(Debug, clap::Subcommand)]
enum What {
    /// Host<->device and device<->device bandwidth, like NVIDIA's bandwidthTest.
    Bandwidth(BandwidthArgs),
    /// Round trip of a small synchronous call next to a raw ping-pong.
    Latency {
        /// Round trips to time.
        #[arg(long, default_value_t = 2000)]
        iterations: u32,
    },
    /// Asynchronous empty-kernel launches per second.
    Launch {
        /// Launches to time.
        #[arg(long, default_value_t = 100_000)]
        launches: u32,
        /// Also measure with a synchronize every this many launches.
        #[arg(long, default_value_t = 100)]
        sync_every: u32,
    },
}

#[derive(Debug, clap::Args)]
struct BandwidthArgs {
    /// Directions to measure.
    #[arg(long, value_enum, default_value_t = Direction::All)]
    direction: Direction,
    /// Transfer sizes, e.g. `1KB,1MB,32MB` (powers of 1024), or `shmoo`
    /// (1 KB to 64 MB).
    #[arg(long, default_value = "32MB")]
    sizes: String,
    /// Also stream the same bytes over the raw transport and print ratios.
    #[arg(long)]
    baseline: bool,
    /// Least time spent per measurement, in milliseconds.
    #[arg(long, default_value_t = 300)]
    min_ms: u64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum Direction {
    H2d,
    D2h,
    D2d,
    All,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum Format {
    Table,
    Json,
    Csv,
}

#[derive(Debug, Serialize)]
struct BandwidthRow {
    direction: &'static str,
    bytes: u64,
    gb_per_s: f64,
    raw_gb_per_s: Option<f64>,
    ratio: Option<f64>,
}

#[derive(Debug, Serialize)]
struct LaunchRow {
    mode: String,
    launches_per_s: f64,
}

#[derive(Debug, Serialize)]
struct LatencyRow {
    call: &'static str,
    us: f64,
    raw_us: f64,
    ratio: f64,
}

pub(crate) fn bench(args: BenchArgs) -> Result<ExitCode, Box<dyn std::error::Error>> {
    let (servers, _embedded) = match &args.server {
        Some(s) => (s.clone(), None),
        None => {
            let handle = crate::run::embedded_server(BackendKind::Auto, &EmuSettings::default())?;
            (handle.addr().to_string(), Some(handle))
        }
    };
    let entries = parse_servers(&servers)?;
    // The runtime lives as long as the process, as in an application.
    let rt: &'static Runtime = Box::leak(Box::new(Runtime::connect_with(
        &entries,
        "rcud bench".into(),
        args.transport,
    )));
    rt.device_count()
        .map_err(|e| format!("no remote GPU at {servers}: {e}"))?;
    match args.what {
        What::Bandwidth(b) => bandwidth(rt, &b, args.format),
        What::Latency { iterations } => latency(rt, iterations, args.format),
        What::Launch {
            launches,
            sync_every,
        } => {
            let (free, synced) = launch::measure(rt, launches, sync_every)?;
            let rows = [
                LaunchRow {
                    mode: "asynchronous".into(),
                    launches_per_s: free,
                },
                LaunchRow {
                    mode: format!("synchronize every {sync_every}"),
                    launches_per_s: synced,
                },
            ];
            match args.format {
                Format::Json => println!("{}", serde_json::to_string_pretty(&rows)?),
                Format::Csv => {
                    println!("mode,launches_per_s");
                    for r in &rows {
                        println!("{},{:.0}", r.mode, r.launches_per_s);
                    }
                }
                Format::Table => {
                    println!("{:<28} {:>14}", "empty kernel <<<1,1>>>", "launches/s");
                    for r in &rows {
                        println!("{:<28} {:>14.0}", r.mode, r.launches_per_s);
                    }
                }
            }
            Ok(ExitCode::SUCCESS)
        }
    }
}

fn parse_sizes(spec: &str) -> Result<Vec<u64>, String> {
    if spec == "shmoo" {
        return Ok((10..=26).map(|p| 1u64 << p).collect());
    }
    spec.split(',').map(parse_size).collect()
}

/// `4096`, `64K`, `1MB`, `32MiB`: like bandwidthTest, K/M/G are powers of 1024.
fn parse_size(s: &str) -> Result<u64, String> {
    let t = s.trim().to_ascii_uppercase();
    let digits = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    let (num, unit) = t.split_at(digits);
    let shift = match unit.trim() {
        "" | "B" => 0,
        "K" | "KB" | "KIB" => 10,
        "M" | "MB" | "MIB" => 20,
        "G" | "GB" | "GIB" => 30,
        _ => return Err(format!("bad size `{s}`: unknown unit")),
    };
    let n: u64 = num.parse().map_err(|_| format!("bad size `{s}`"))?;
    n.checked_mul(1 << shift)
        .filter(|&b| b > 0)
        .ok_or_else(|| format!("bad size `{s}`"))
}

fn bandwidth(
    rt: &'static Runtime,
    args: &BandwidthArgs,
    format: Format,
) -> Result<ExitCode, Box<dyn std::error::Error>> {
    let sizes = parse_sizes(&args.sizes)?;
    let min = Duration::from_millis(args.min_ms);
    let dirs: &[Direction] = match args.direction {
        Direction::All => &[Direction::H2d, Direction::D2h, Direction::D2d],
        Direction::H2d => &[Direction::H2d],
        Direction::D2h => &[Direction::D2h],
        Direction::D2d => &[Direction::D2d],
    };
    let mut raw = if args.baseline {
        Some(raw::RawPeer::start()?)
    } else {
        None
    };
    let mut rows = Vec::new();
    for &size in &sizes {
        let mut host = vec![0x5Au8; size as usize];
        let a = rt.malloc(size)?;
        let b = rt.malloc(size)?;
        for &dir in dirs {
            // rcud and raw steps alternate, so that both see the same load.
            let rcud_step = |host: &mut [u8]| -> Result<(), Box<dyn std::error::Error>> {
                match dir {
                    Direction::H2d => rt.memcpy_htod(0, a, host)?,
                    Direction::D2h => rt.memcpy_dtoh(0, host, a)?,
                    _ => rt.memcpy_dtod(0, b, 0, a, size)?,
                }
                Ok(())
            };
            let mut raw_step = |host: &mut [u8]| -> Result<bool, Box<dyn std::error::Error>> {
                match (dir, raw.as_mut()) {
                    (Direction::H2d, Some(r)) => r.upload(host)?,
                    (Direction::D2h, Some(r)) => r.download(host)?,
                    _ => return Ok(false),
                }
                Ok(true)
            };
            rcud_step(&mut host)?;
            let with_raw = raw_step(&mut host)?;
            let (mut rcud_t, mut raw_t, mut n) = (Duration::ZERO, Duration::ZERO, 0u32);
            let start = Instant::now();
            while n < 3 || start.elapsed() < min {
                let t0 = Instant::now();
                rcud_step(&mut host)?;
                let t1 = Instant::now();
                raw_step(&mut host)?;
                raw_t += t1.elapsed();
                rcud_t += t1 - t0;
                n += 1;
            }
            let secs = rcud_t.as_secs_f64() / f64::from(n);
            let raw_secs = with_raw.then(|| raw_t.as_secs_f64() / f64::from(n));
            let gbps = |s: f64| size as f64 / s / 1e9;
            rows.push(BandwidthRow {
                direction: match dir {
                    Direction::H2d => "h2d",
                    Direction::D2h => "d2h",
                    _ => "d2d",
                },
                bytes: size,
                gb_per_s: gbps(secs),
                raw_gb_per_s: raw_secs.map(gbps),
                ratio: raw_secs.map(|r| r / secs),
            });
        }
        rt.free(a)?;
        rt.free(b)?;
    }
    match format {
        Format::Json => println!("{}", serde_json::to_string_pretty(&rows)?),
        Format::Csv => {
            println!("direction,bytes,gb_per_s,raw_gb_per_s,ratio");
            for r in &rows {
                println!(
                    "{},{},{:.4},{},{}",
                    r.direction,
                    r.bytes,
                    r.gb_per_s,
                    r.raw_gb_per_s.map_or(String::new(), |v| format!("{v:.4}")),
                    r.ratio.map_or(String::new(), |v| format!("{v:.3}"))
                );
            }
        }
        Format::Table => {
            println!(
                "{:<5} {:>12} {:>10} {:>10} {:>8}",
                "copy", "size", "GB/s", "raw GB/s", "ratio"
            );
            for r in &rows {
                println!(
                    "{:<5} {:>12} {:>10.3} {:>10} {:>8}",
                    r.direction,
                    bytesize::ByteSize(r.bytes).to_string(),
                    r.gb_per_s,
                    r.raw_gb_per_s.map_or("-".into(), |v| format!("{v:.3}")),
                    r.ratio.map_or("-".into(), |v| format!("{:.1}%", v * 100.0))
                );
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}

fn latency(
    rt: &'static Runtime,
    iterations: u32,
    format: Format,
) -> Result<ExitCode, Box<dyn std::error::Error>> {
    let ptr = rt.malloc(4)?;
    let mut word = [0u8; 4];
    let mut raw = raw::RawPeer::start()?;
    let mut buf = [0u8; 4];
    // Interleaved, so that both see the same load on a shared machine.
    let (mut d2h, mut sync, mut raw_t) = (Duration::ZERO, Duration::ZERO, Duration::ZERO);
    for i in 0..=iterations {
        let t0 = Instant::now();
        rt.memcpy_dtoh(0, &mut word, ptr)?;
        let t1 = Instant::now();
        rt.synchronize()?;
        let t2 = Instant::now();
        raw.download(&mut buf)?;
        let t3 = Instant::now();
        // The first round warms up connections and caches.
        if i > 0 {
            d2h += t1 - t0;
            sync += t2 - t1;
            raw_t += t3 - t2;
        }
    }
    let us = |d: Duration| d.as_secs_f64() * 1e6 / f64::from(iterations.max(1));
    let (d2h, sync, raw_us) = (us(d2h), us(sync), us(raw_t));
    rt.free(ptr)?;
    let rows = [
        LatencyRow {
            call: "cudaMemcpy 4 B D2H",
            us: d2h,
            raw_us,
            ratio: d2h / raw_us,
        },
        LatencyRow {
            call: "cudaDeviceSynchronize",
            us: sync,
            raw_us,
            ratio: sync / raw_us,
        },
    ];
    match format {
        Format::Json => println!("{}", serde_json::to_string_pretty(&rows)?),
        Format::Csv => {
            println!("call,us,raw_us,ratio");
            for r in &rows {
                println!("{},{:.2},{:.2},{:.3}", r.call, r.us, r.raw_us, r.ratio);
            }
        }
        Format::Table => {
            println!(
                "{:<24} {:>10} {:>14} {:>8}",
                "call", "µs", "raw ping-pong", "ratio"
            );
            for r in &rows {
                println!(
                    "{:<24} {:>10.2} {:>14.2} {:>7.2}x",
                    r.call, r.us, r.raw_us, r.ratio
                );
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_are_binary() {
        assert_eq!(
            parse_sizes("1KB,32MB,4096,2g"),
            Ok(vec![1024, 32 << 20, 4096, 2 << 30])
        );
        assert_eq!(parse_sizes("shmoo").map(|v| v.len()), Ok(17));
        assert!(parse_sizes("12XB").is_err());
        assert!(parse_sizes("0").is_err());
    }
}
