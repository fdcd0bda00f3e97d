//! `rcud bench bandwidth`: host<->device and device<->device copies through
//! the runtime, with the raw transport and the host's memcpy of the same size
//! timed in the same loop.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use rcud_transport::bootstrap::TransportKind;
use serde::Serialize;

use super::hostmem::{HostBuffer, MemcpyProbe, MemoryArg};
use super::output::{emit, num, pct, Format, Table};
use super::raw::RawLink;
use super::{parse_sizes, plot, progress, BenchResult, Setup};

#[derive(Debug, clap::Args)]
pub(crate) struct BandwidthArgs {
    /// Directions to measure.
    #[arg(long, value_enum, default_value_t = Direction::All)]
    direction: Direction,
    /// Transfer sizes, e.g. `1KB,1MB,32MB` (powers of 1024), or `shmoo`
    /// (1 KB to 64 MB).
    #[arg(long, default_value = "32MB")]
    sizes: String,
    /// Host memory: a plain vector, a page-locked buffer registered with the
    /// runtime (as `cudaHostRegister`), or both.
    #[arg(long, value_enum, default_value_t = MemoryArg::Pageable)]
    memory: MemoryArg,
    /// Also stream the same bytes over the raw transport and print ratios.
    #[arg(long)]
    baseline: bool,
    /// Least time spent per measurement, in milliseconds.
    #[arg(long, default_value_t = 300)]
    min_ms: u64,
    /// Also copy over TLS (a second embedded server with a self-signed
    /// certificate), each TLS row next to plain TCP of the same run.
    #[arg(long)]
    tls: bool,
    /// Draw bandwidth against size into these files (`.svg` or `.png`,
    /// comma-separated).
    #[arg(long, value_name = "FILE", value_delimiter = ',')]
    plot: Vec<PathBuf>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum Direction {
    H2d,
    D2h,
    D2d,
    All,
}

impl Direction {
    pub(crate) fn name(self) -> &'static str {
        match self {
            Direction::H2d => "h2d",
            Direction::D2h => "d2h",
            Direction::D2d => "d2d",
            Direction::All => "all",
        }
    }
}

#[derive(Debug, Clone, Serialize)]
pub(crate) struct BandwidthRow {
    pub(crate) transport: String,
    /// `pageable`, `pinned`, or `device` for device-to-device copies.
    pub(crate) memory: &'static str,
    pub(crate) direction: &'static str,
    pub(crate) bytes: u64,
    pub(crate) gb_per_s: f64,
    pub(crate) raw_gb_per_s: Option<f64>,
    /// rcud over raw.
    pub(crate) ratio: Option<f64>,
    pub(crate) memcpy_gb_per_s: f64,
    /// rcud over memcpy.
    pub(crate) memcpy_ratio: f64,
    /// TLS rows: over the plain TCP row of the same copy.
    pub(crate) of_plain: Option<f64>,
}

pub(crate) fn run(
    setup: &Setup,
    transports: &[TransportKind],
    args: &BandwidthArgs,
    format: Format,
) -> BenchResult<ExitCode> {
    let sizes = parse_sizes(&args.sizes)?;
    for p in &args.plot {
        plot::check_path(p)?;
    }
    let min = Duration::from_millis(args.min_ms);
    let dirs: &[Direction] = match args.direction {
        Direction::All => &[Direction::H2d, Direction::D2h, Direction::D2d],
        Direction::H2d => &[Direction::H2d],
        Direction::D2h => &[Direction::D2h],
        Direction::D2d => &[Direction::D2d],
    };
    let kinds = args.memory.kinds();
    let host_dirs = dirs.iter().filter(|&&d| d != Direction::D2d).count();
    let per_size = host_dirs * kinds.len() + dirs.len() - host_dirs;
    let mut runs = Vec::new();
    for &kind in transports {
        runs.push((kind, kind.to_string(), setup.runtime(kind)?));
        if args.tls && kind == TransportKind::Tcp {
            runs.push((kind, "tcp+tls".to_string(), setup.tls_runtime()?));
        }
    }
    if args.tls && !transports.contains(&TransportKind::Tcp) {
        return Err("--tls measures TLS beside plain TCP: include tcp in --transport".into());
    }
    let bar = progress((runs.len() * sizes.len() * per_size) as u64, format);
    let mut rows: Vec<BandwidthRow> = Vec::new();
    for (kind, label, rt) in runs {
        let mut raw = if args.baseline {
            Some(RawLink::start(kind, setup.server_cpu())?)
        } else {
            None
        };
        for &size in &sizes {
            let a = rt.malloc(size)?;
            let b = rt.malloc(size)?;
            let mut memcpy = MemcpyProbe::new(size as usize);
            for (k, &memory) in kinds.iter().enumerate() {
                let mut host = HostBuffer::new(memory, size as usize, rt)?;
                for &dir in dirs {
                    // Device-to-device copies do not touch host memory.
                    if dir == Direction::D2d && k > 0 {
                        continue;
                    }
                    bar.set_message(format!(
                        "{label} {} {} {}",
                        memory.name(),
                        dir.name(),
                        bytesize::ByteSize(size)
                    ));
                    let rcud_step = |host: &mut [u8]| -> BenchResult<()> {
                        match dir {
                            Direction::H2d => rt.memcpy_htod(0, a, host)?,
                            Direction::D2h => rt.memcpy_dtoh(0, host, a)?,
                            _ => rt.memcpy_dtod(0, b, 0, a, size)?,
                        }
                        Ok(())
                    };
                    let mut raw_step = |host: &mut [u8]| -> BenchResult<bool> {
                        match (dir, raw.as_mut()) {
                            (Direction::H2d, Some(r)) => r.upload(host)?,
                            (Direction::D2h, Some(r)) => r.download(host)?,
                            _ => return Ok(false),
                        }
                        Ok(true)
                    };
                    rcud_step(&mut host)?;
                    let with_raw = raw_step(&mut host)?;
                    // rcud, raw and memcpy steps alternate, so that all see
                    // the same load.
                    memcpy.reset();
                    let (mut rcud_t, mut raw_t, mut n) = (Duration::ZERO, Duration::ZERO, 0u32);
                    let start = Instant::now();
                    while n < 3 || start.elapsed() < min {
                        let t0 = Instant::now();
                        rcud_step(&mut host)?;
                        let t1 = Instant::now();
                        raw_step(&mut host)?;
                        raw_t += t1.elapsed();
                        rcud_t += t1 - t0;
                        memcpy.step();
                        n += 1;
                    }
                    let gbps = |t: Duration| size as f64 * f64::from(n) / t.as_secs_f64() / 1e9;
                    let rcud = gbps(rcud_t);
                    let raw_gbps = with_raw.then(|| gbps(raw_t));
                    let memcpy_gbps = memcpy.bytes_per_s() / 1e9;
                    let memory_name = if dir == Direction::D2d {
                        "device"
                    } else {
                        memory.name()
                    };
                    let of_plain = rows
                        .iter()
                        .find(|r| {
                            label != kind.to_string()
                                && r.transport == kind.to_string()
                                && r.memory == memory_name
                                && r.direction == dir.name()
                                && r.bytes == size
                        })
                        .map(|plain| rcud / plain.gb_per_s);
                    rows.push(BandwidthRow {
                        transport: label.clone(),
                        memory: memory_name,
                        direction: dir.name(),
                        bytes: size,
                        gb_per_s: rcud,
                        raw_gb_per_s: raw_gbps,
                        ratio: raw_gbps.map(|r| rcud / r),
                        memcpy_gb_per_s: memcpy_gbps,
                        memcpy_ratio: rcud / memcpy_gbps,
                        of_plain,
                    });
                    bar.inc(1);
                }
            }
            rt.free(a)?;
            rt.free(b)?;
        }
    }
    bar.finish_and_clear();
    emit(format, &rows, || table(&rows))?;
    for path in &args.plot {
        plot::bandwidth(path, &rows)?;
    }
    Ok(ExitCode::SUCCESS)
}

fn table(rows: &[BandwidthRow]) -> Table {
    let mut t = Table::new(&[
        "transport",
        "memory",
        "copy",
        "size",
        "GB/s",
        "raw GB/s",
        "rcud/raw",
        "memcpy GB/s",
        "rcud/memcpy",
        "tls/plain",
    ]);
    for r in rows {
        t.push(vec![
            r.transport.clone(),
            r.memory.into(),
            r.direction.into(),
            bytesize::ByteSize(r.bytes).to_string(),
            format!("{:.3}", r.gb_per_s),
            num(r.raw_gb_per_s, 3),
            pct(r.ratio),
            format!("{:.2}", r.memcpy_gb_per_s),
            pct(Some(r.memcpy_ratio)),
            pct(r.of_plain),
        ]);
    }
    t
}
