//! `rcud bench latency`: the round trip of small synchronous calls next to a
//! raw ping-pong of 4 bytes over the same transport module.

use std::process::ExitCode;
use std::time::{Duration, Instant};

use rcud_transport::bootstrap::TransportKind;
use serde::Serialize;

use super::hostmem::MemcpyProbe;
use super::output::{emit, Format, Table};
use super::raw::RawLink;
use super::{progress, BenchResult, Setup};

/// Bytes of the small copy and of the raw ping-pong.
const WORD: usize = 4;

#[derive(Debug, Serialize)]
struct LatencyRow {
    transport: String,
    call: &'static str,
    us: f64,
    raw_us: f64,
    /// rcud over raw.
    ratio: f64,
    /// One 4-byte host memcpy, in nanoseconds.
    memcpy_ns: f64,
    memcpy_gb_per_s: f64,
    /// rcud's bandwidth over memcpy's for the same 4 bytes.
    memcpy_ratio: f64,
    placement: String,
}

pub(crate) fn run(
    setup: &Setup,
    transports: &[TransportKind],
    iterations: u32,
    format: Format,
) -> BenchResult<ExitCode> {
    let bar = progress(transports.len() as u64 * u64::from(iterations), format);
    let mut rows = Vec::new();
    for &kind in transports {
        bar.set_message(kind.to_string());
        let rt = setup.runtime(kind)?;
        let ptr = rt.malloc(WORD as u64)?;
        let mut word = [0u8; WORD];
        let mut raw = RawLink::start(kind, setup.server_cpu())?;
        let mut buf = [0u8; WORD];
        let mut memcpy = MemcpyProbe::new(WORD);
        // Interleaved, so that all see the same load on a shared machine.
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
                memcpy.step();
                if i % 64 == 0 {
                    bar.inc(64);
                }
            }
        }
        rt.free(ptr)?;
        let us = |d: Duration| d.as_secs_f64() * 1e6 / f64::from(iterations.max(1));
        let raw_us = us(raw_t);
        let memcpy_s = memcpy.secs_per_copy();
        for (call, d) in [("cudaMemcpy 4 B D2H", d2h), ("cudaDeviceSynchronize", sync)] {
            let v = us(d);
            rows.push(LatencyRow {
                transport: kind.to_string(),
                call,
                us: v,
                raw_us,
                ratio: v / raw_us,
                memcpy_ns: memcpy_s * 1e9,
                memcpy_gb_per_s: memcpy.bytes_per_s() / 1e9,
                memcpy_ratio: memcpy_s / (v / 1e6),
                placement: setup.placement_label(),
            });
        }
    }
    bar.finish_and_clear();
    emit(format, &rows, || {
        let mut t = Table::new(&[
            "transport",
            "call",
            "µs",
            "raw ping-pong µs",
            "rcud/raw",
            "memcpy 4 B ns",
            "memcpy GB/s",
            "placement",
        ]);
        for r in &rows {
            t.push(vec![
                r.transport.clone(),
                r.call.into(),
                format!("{:.2}", r.us),
                format!("{:.2}", r.raw_us),
                format!("{:.2}x", r.ratio),
                format!("{:.1}", r.memcpy_ns),
                format!("{:.2}", r.memcpy_gb_per_s),
                r.placement.clone(),
            ]);
        }
        t
    })?;
    Ok(ExitCode::SUCCESS)
}
