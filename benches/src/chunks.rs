//! `rcud bench chunks`: bandwidth of the RDMA modules per staging chunk
//! count, laid out like Table 3.1 of the rCUDA communications thesis (rows:
//! chunk counts; value: the mean of pageable and pinned bandwidth of N
//! consecutive transfers).
//!
//! Both ends read the chunk count from the environment when a connection is
//! set up (`RCUD_CSR_CHUNKS`, `RCUD_MSR_CHUNKS`). Every point therefore runs
//! in a child process (`rcud bench chunk-point`) whose environment holds the
//! count, with its own embedded server: no variable of this process changes
//! while threads read it, and each point's staging memory is returned when
//! its process ends.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use rcud_transport::bootstrap::TransportKind;
use rcud_transport::csr::CsrOptions;
use rcud_transport::msr::MsrOptions;
use serde::{Deserialize, Serialize};

use super::hostmem::{HostBuffer, MemcpyProbe, Memory};
use super::output::{emit, num, Table};
use super::raw::RawLink;
use super::{parse_size, plot, point_command, progress, BenchArgs, BenchResult, Setup};

#[derive(Debug, clap::Args)]
pub(crate) struct ChunksArgs {
    /// Staging chunk counts; a count a module does not accept shows as `-`
    /// (CSR needs at least 9 and a multiple of 3).
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "1,3,6,9,18,36,72,144,288,504"
    )]
    counts: Vec<usize>,
    /// Bytes per transfer (powers of 1024: `32MB`).
    #[arg(long, default_value = "32MB")]
    size: String,
    /// Consecutive transfers timed per memory kind and direction.
    #[arg(long, default_value_t = 10)]
    transfers: u32,
    /// Draw bandwidth against chunk count into these files (`.svg` or `.png`,
    /// comma-separated).
    #[arg(long, value_name = "FILE", value_delimiter = ',')]
    plot: Vec<PathBuf>,
}

#[derive(Debug, clap::Args)]
pub(crate) struct PointArgs {
    /// Bytes per transfer.
    #[arg(long)]
    bytes: u64,
    /// Consecutive transfers timed per memory kind and direction.
    #[arg(long)]
    transfers: u32,
}

/// What one child measures, in MB/s (10^6 bytes per second, as the thesis).
#[derive(Debug, Serialize, Deserialize)]
struct Point {
    /// The count a raw pair with the same options registered on the same
    /// device (lower than asked when the device cannot register that many).
    chunks_used: usize,
    h2d_pageable: f64,
    h2d_pinned: f64,
    d2h_pageable: f64,
    d2h_pinned: f64,
    raw_h2d: f64,
    raw_d2h: f64,
    memcpy: f64,
}

#[derive(Debug, Serialize)]
pub(crate) struct ChunkRow {
    pub(crate) transport: String,
    /// The count asked for.
    pub(crate) chunks: usize,
    pub(crate) chunks_used: Option<usize>,
    /// Mean of pageable and pinned, host-to-device and device-to-host.
    pub(crate) mb_per_s: Option<f64>,
    /// Mean of pageable and pinned host-to-device.
    pub(crate) h2d_mb_per_s: Option<f64>,
    /// Mean of pageable and pinned device-to-host.
    pub(crate) d2h_mb_per_s: Option<f64>,
    pub(crate) h2d_pageable: Option<f64>,
    pub(crate) h2d_pinned: Option<f64>,
    pub(crate) d2h_pageable: Option<f64>,
    pub(crate) d2h_pinned: Option<f64>,
    /// The module alone: mean of upload and download.
    pub(crate) raw_mb_per_s: Option<f64>,
    pub(crate) memcpy_mb_per_s: Option<f64>,
    /// rcud over memcpy.
    pub(crate) memcpy_ratio: Option<f64>,
    /// Why a point has no figures.
    pub(crate) note: Option<String>,
}

impl ChunkRow {
    fn empty(transport: TransportKind, chunks: usize, note: String) -> Self {
        Self {
            transport: transport.to_string(),
            chunks,
            chunks_used: None,
            mb_per_s: None,
            h2d_mb_per_s: None,
            d2h_mb_per_s: None,
            h2d_pageable: None,
            h2d_pinned: None,
            d2h_pageable: None,
            d2h_pinned: None,
            raw_mb_per_s: None,
            memcpy_mb_per_s: None,
            memcpy_ratio: None,
            note: Some(note),
        }
    }

    fn from_point(transport: TransportKind, chunks: usize, p: &Point) -> Self {
        let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len() as f64;
        let all = mean(&[p.h2d_pageable, p.h2d_pinned, p.d2h_pageable, p.d2h_pinned]);
        Self {
            transport: transport.to_string(),
            chunks,
            chunks_used: Some(p.chunks_used),
            mb_per_s: Some(all),
            h2d_mb_per_s: Some(mean(&[p.h2d_pageable, p.h2d_pinned])),
            d2h_mb_per_s: Some(mean(&[p.d2h_pageable, p.d2h_pinned])),
            h2d_pageable: Some(p.h2d_pageable),
            h2d_pinned: Some(p.h2d_pinned),
            d2h_pageable: Some(p.d2h_pageable),
            d2h_pinned: Some(p.d2h_pinned),
            raw_mb_per_s: Some(mean(&[p.raw_h2d, p.raw_d2h])),
            memcpy_mb_per_s: Some(p.memcpy),
            memcpy_ratio: Some(all / p.memcpy),
            note: None,
        }
    }
}

/// Why `count` is not a valid chunk count for `kind`, if it is not.
fn invalid(kind: TransportKind, count: usize) -> Option<String> {
    let checked = match kind {
        TransportKind::Tcp => return Some("the TCP module has no staging chunks".into()),
        TransportKind::Csr => CsrOptions {
            chunks: count,
            ..CsrOptions::default()
        }
        .validate(),
        TransportKind::Msr => MsrOptions {
            chunks: count,
            ..MsrOptions::default()
        }
        .validate(),
    };
    checked.err().map(|e| e.to_string())
}

pub(crate) fn run(
    args: &ChunksArgs,
    transports: &[TransportKind],
    bench: &BenchArgs,
) -> BenchResult<ExitCode> {
    if let Some(t) = transports.iter().find(|&&t| t == TransportKind::Tcp) {
        return Err(format!("`chunks` measures the RDMA modules (csr, msr), not {t}").into());
    }
    for p in &args.plot {
        plot::check_path(p)?;
    }
    let bytes = parse_size(&args.size)?;
    let bar = progress((transports.len() * args.counts.len()) as u64, bench.format);
    let mut rows = Vec::new();
    for &kind in transports {
        for &count in &args.counts {
            bar.set_message(format!("{kind} {count} chunks"));
            if let Some(why) = invalid(kind, count) {
                rows.push(ChunkRow::empty(kind, count, why));
                bar.inc(1);
                continue;
            }
            let mut cmd = point_command(bench.server.as_deref(), bench.pin, kind)?;
            cmd.args([
                "chunk-point",
                "--bytes",
                &bytes.to_string(),
                "--transfers",
                &args.transfers.to_string(),
            ]);
            let var = match kind {
                TransportKind::Csr => "RCUD_CSR_CHUNKS",
                _ => "RCUD_MSR_CHUNKS",
            };
            cmd.env(var, count.to_string());
            let out = cmd.output()?;
            let stderr = String::from_utf8_lossy(&out.stderr);
            if !stderr.trim().is_empty() {
                // The modules' own warnings (a count that did not register).
                bar.suspend(|| eprint!("{stderr}"));
            }
            let point = if out.status.success() {
                serde_json::from_slice::<Point>(&out.stdout)
                    .map_err(|e| format!("unreadable result: {e}"))
            } else {
                Err(stderr
                    .lines()
                    .last()
                    .unwrap_or("the measurement failed")
                    .to_string())
            };
            rows.push(match point {
                Ok(p) => ChunkRow::from_point(kind, count, &p),
                Err(why) => ChunkRow::empty(kind, count, why),
            });
            bar.inc(1);
        }
    }
    bar.finish_and_clear();
    emit(bench.format, &rows, || {
        table(&rows, transports, &args.counts)
    })?;
    for path in &args.plot {
        plot::chunks(path, &rows, bytes)?;
    }
    Ok(ExitCode::SUCCESS)
}

/// Rows: chunk counts; per module the count used, the mean, H2D, D2H and the
/// module alone; memcpy last (the mean over the modules' runs).
fn table(rows: &[ChunkRow], transports: &[TransportKind], counts: &[usize]) -> Table {
    let mut headers = vec!["chunks".to_string()];
    for t in transports {
        for h in ["used", "MB/s", "H2D", "D2H", "raw"] {
            headers.push(format!("{t} {h}"));
        }
    }
    headers.push("memcpy MB/s".into());
    let mut t = Table {
        headers,
        rows: Vec::new(),
    };
    for &count in counts {
        let mut line = vec![count.to_string()];
        let mut memcpy = Vec::new();
        for kind in transports {
            let row = rows
                .iter()
                .find(|r| r.chunks == count && r.transport == kind.to_string());
            let get = |f: fn(&ChunkRow) -> Option<f64>| row.and_then(f);
            line.push(
                row.and_then(|r| r.chunks_used)
                    .map_or("-".into(), |n| n.to_string()),
            );
            line.push(num(get(|r| r.mb_per_s), 1));
            line.push(num(get(|r| r.h2d_mb_per_s), 1));
            line.push(num(get(|r| r.d2h_mb_per_s), 1));
            line.push(num(get(|r| r.raw_mb_per_s), 1));
            memcpy.extend(get(|r| r.memcpy_mb_per_s));
        }
        let mean = (!memcpy.is_empty()).then(|| memcpy.iter().sum::<f64>() / memcpy.len() as f64);
        line.push(num(mean, 0));
        t.push(line);
    }
    t
}

/// One point, in the child: `transfers` consecutive copies per memory kind
/// and direction through rcud, then the same over the module alone.
pub(crate) fn point(setup: &Setup, kind: TransportKind, args: &PointArgs) -> BenchResult<ExitCode> {
    let rt = setup.runtime(kind)?;
    let mut raw = RawLink::start(kind, setup.server_cpu())?;
    let size = usize::try_from(args.bytes)?;
    let n = args.transfers.max(1);
    let dev = rt.malloc(args.bytes)?;
    let mut memcpy = MemcpyProbe::new(size);
    let mb_per_s = |t: Duration| args.bytes as f64 * f64::from(n) / t.as_secs_f64() / 1e6;
    let staging = raw.chunks().unwrap_or(1) * rcud_transport::DEFAULT_CHUNK;
    let warm_up = staging.div_ceil(size.max(1)) + 1;
    let mut rcud = [[0f64; 2]; 2];
    let mut raw_time = [Duration::ZERO; 2];
    for (m, memory) in [Memory::Pageable, Memory::Pinned].into_iter().enumerate() {
        let mut host = HostBuffer::new(memory, size, rt)?;
        for (d, upload) in [true, false].into_iter().enumerate() {
            let copy = |host: &mut [u8]| -> BenchResult<()> {
                if upload {
                    rt.memcpy_htod(0, dev, host)?;
                } else {
                    rt.memcpy_dtoh(0, host, dev)?;
                }
                Ok(())
            };
            let mut raw_copy = |host: &mut [u8]| -> BenchResult<()> {
                if upload {
                    raw.upload(host)
                } else {
                    raw.download(host)
                }
            };
            // Every staging chunk is written once before timing: the first
            // write of a fresh chunk faults its pages in, which a device's
            // registration would have done up front.
            for _ in 0..warm_up {
                copy(&mut host)?;
                raw_copy(&mut host)?;
            }
            let start = Instant::now();
            for _ in 0..n {
                copy(&mut host)?;
            }
            rcud[d][m] = mb_per_s(start.elapsed());
            let start = Instant::now();
            for _ in 0..n {
                raw_copy(&mut host)?;
            }
            raw_time[d] += start.elapsed();
            for _ in 0..n {
                memcpy.step();
            }
        }
    }
    rt.free(dev)?;
    let point = Point {
        chunks_used: raw.chunks().unwrap_or(0),
        h2d_pageable: rcud[0][0],
        h2d_pinned: rcud[0][1],
        d2h_pageable: rcud[1][0],
        d2h_pinned: rcud[1][1],
        // Twice the transfers: one block per memory kind.
        raw_h2d: mb_per_s(raw_time[0] / 2),
        raw_d2h: mb_per_s(raw_time[1] / 2),
        memcpy: memcpy.bytes_per_s() / 1e6,
    };
    println!("{}", serde_json::to_string(&point)?);
    Ok(ExitCode::SUCCESS)
}
