//! `rcud bench overlap`: how much host work an application gets done while
//! an asynchronous copy from page-locked memory is in flight, as NVIDIA's
//! asyncAPI sample asks it: `cudaMemcpyAsync` returns, the host computes
//! while `cudaEventQuery` answers `cudaErrorNotReady`, and the share of the
//! copy's time the host spent computing is reported, next to the same copy
//! done synchronously in the same run. Measured through the client
//! library's C functions in a child process per transport (`rcud bench
//! overlap-point`).

use std::ffi::{c_int, c_void};
use std::process::ExitCode;
use std::time::{Duration, Instant};

use rcud_transport::bootstrap::TransportKind;
use serde::{Deserialize, Serialize};

use super::launch::check;
use super::output::{emit, Table};
use super::{
    load_client_library, parse_sizes, point_command, progress, run_point, BenchArgs, BenchResult,
    Setup,
};

/// Arguments of `rcud bench overlap` and its hidden `overlap-point`.
#[derive(Debug, Clone, clap::Args)]
pub(crate) struct OverlapArgs {
    /// Copy sizes: `16MB,64MB`, or `shmoo`.
    #[arg(long, default_value = "4MB,16MB,64MB")]
    sizes: String,
    /// Copies of each size to time; the best counts.
    #[arg(long, default_value_t = 3)]
    rounds: u32,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
struct OverlapPoint {
    bytes: u64,
    /// The same copy with `cudaMemcpy`, ms.
    synchronous_ms: f64,
    /// Time `cudaMemcpyAsync` took to return, µs.
    call_us: f64,
    /// From the call until the event after the copy completed, ms.
    in_flight_ms: f64,
    /// Host work done meanwhile, ms.
    host_work_ms: f64,
}

#[derive(Debug, Serialize)]
struct OverlapRow {
    transport: String,
    #[serde(flatten)]
    point: OverlapPoint,
    /// Host work over time in flight.
    overlap: f64,
}

pub(crate) fn run(
    setup: &Setup,
    transports: &[TransportKind],
    args: &OverlapArgs,
    bench: &BenchArgs,
) -> BenchResult<ExitCode> {
    parse_sizes(&args.sizes)?;
    let bar = progress(transports.len() as u64, bench.format);
    let mut rows = Vec::new();
    for &kind in transports {
        bar.set_message(kind.to_string());
        let mut cmd = point_command(Some(&setup.servers), bench.pin, kind)?;
        cmd.args(["overlap-point", "--sizes", &args.sizes])
            .args(["--rounds", &args.rounds.to_string()]);
        let points: Vec<OverlapPoint> = run_point(cmd, &kind.to_string())?;
        for point in points {
            rows.push(OverlapRow {
                transport: kind.to_string(),
                overlap: point.host_work_ms / point.in_flight_ms,
                point,
            });
        }
        bar.inc(1);
    }
    bar.finish_and_clear();
    emit(bench.format, &rows, || {
        let mut t = Table::new(&[
            "transport",
            "host→device",
            "cudaMemcpy (ms)",
            "cudaMemcpyAsync returns (µs)",
            "in flight (ms)",
            "host work meanwhile (ms)",
            "overlap",
        ]);
        for r in &rows {
            t.push(vec![
                r.transport.clone(),
                format!("{} MB", r.point.bytes >> 20),
                format!("{:.1}", r.point.synchronous_ms),
                format!("{:.1}", r.point.call_us),
                format!("{:.1}", r.point.in_flight_ms),
                format!("{:.1}", r.point.host_work_ms),
                format!("{:.0}%", r.overlap * 100.0),
            ]);
        }
        t
    })?;
    Ok(ExitCode::SUCCESS)
}

type Alloc = unsafe extern "C" fn(*mut *mut c_void, usize) -> c_int;
type Copy = unsafe extern "C" fn(*mut c_void, *const c_void, usize, c_int) -> c_int;
type CopyAsync =
    unsafe extern "C" fn(*mut c_void, *const c_void, usize, c_int, *mut c_void) -> c_int;
type EventFn = unsafe extern "C" fn(*mut c_void) -> c_int;

/// `cudaMemcpyHostToDevice`.
const H2D: c_int = 1;
/// `cudaErrorNotReady`.
const NOT_READY: c_int = 600;
const API: &str = "runtime API";

/// A unit of host work: a few microseconds of arithmetic the compiler
/// cannot drop.
fn host_work(seed: u64) -> u64 {
    let mut x = seed | 1;
    for _ in 0..2000 {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
    }
    std::hint::black_box(x)
}

/// `rcud bench overlap-point`: measures in this process and prints JSON.
pub(crate) fn point(
    setup: &Setup,
    kind: TransportKind,
    args: &OverlapArgs,
) -> BenchResult<ExitCode> {
    let sizes = parse_sizes(&args.sizes)?;
    let lib = load_client_library(setup, kind)?;
    // SAFETY: the library's functions with cuda_runtime_api.h's signatures.
    let (malloc_host, malloc, memcpy, memcpy_async, create, record, query, destroy) = unsafe {
        (
            *lib.get::<Alloc>(b"cudaMallocHost\0")?,
            *lib.get::<Alloc>(b"cudaMalloc\0")?,
            *lib.get::<Copy>(b"cudaMemcpy\0")?,
            *lib.get::<CopyAsync>(b"cudaMemcpyAsync\0")?,
            *lib.get::<unsafe extern "C" fn(*mut *mut c_void) -> c_int>(b"cudaEventCreate\0")?,
            *lib.get::<unsafe extern "C" fn(*mut c_void, *mut c_void) -> c_int>(
                b"cudaEventRecord\0",
            )?,
            *lib.get::<EventFn>(b"cudaEventQuery\0")?,
            *lib.get::<EventFn>(b"cudaEventDestroy\0")?,
        )
    };
    let largest = sizes.iter().copied().max().unwrap_or(0) as usize;
    let (mut host, mut dev, mut event) = (
        std::ptr::null_mut(),
        std::ptr::null_mut(),
        std::ptr::null_mut(),
    );
    // SAFETY: valid output pointers; the buffers are used within their sizes.
    unsafe {
        check(API, "cudaMallocHost", malloc_host(&mut host, largest))?;
        check(API, "cudaMalloc", malloc(&mut dev, largest))?;
        check(API, "cudaEventCreate", create(&mut event))?;
        std::ptr::write_bytes(host as *mut u8, 0x5A, largest);
    }
    let null = std::ptr::null_mut();
    let mut points = Vec::new();
    for &bytes in &sizes {
        let n = bytes as usize;
        let mut best: Option<OverlapPoint> = None;
        for round in 0..args.rounds.max(1) {
            let start = Instant::now();
            // SAFETY: buffers of at least `n` bytes.
            check(API, "cudaMemcpy", unsafe { memcpy(dev, host, n, H2D) })?;
            let synchronous = start.elapsed();
            let start = Instant::now();
            // SAFETY: page-locked source and device buffer of `n` bytes, the
            // legacy stream, an event of this library.
            unsafe {
                check(
                    API,
                    "cudaMemcpyAsync",
                    memcpy_async(dev, host, n, H2D, null),
                )?;
            }
            let call = start.elapsed();
            // SAFETY: as above.
            check(API, "cudaEventRecord", unsafe { record(event, null) })?;
            let mut work = Duration::ZERO;
            loop {
                // SAFETY: an event of this library.
                match unsafe { query(event) } {
                    NOT_READY => {
                        let t = Instant::now();
                        host_work(u64::from(round) ^ work.as_nanos() as u64);
                        work += t.elapsed();
                    }
                    status => {
                        check(API, "cudaEventQuery", status)?;
                        break;
                    }
                }
            }
            let point = OverlapPoint {
                bytes,
                synchronous_ms: synchronous.as_secs_f64() * 1e3,
                call_us: call.as_secs_f64() * 1e6,
                in_flight_ms: start.elapsed().as_secs_f64() * 1e3,
                host_work_ms: work.as_secs_f64() * 1e3,
            };
            if best
                .as_ref()
                .is_none_or(|b| point.in_flight_ms < b.in_flight_ms)
            {
                best = Some(point);
            }
        }
        points.extend(best);
    }
    // SAFETY: an event of this library, destroyed once.
    check(API, "cudaEventDestroy", unsafe { destroy(event) })?;
    println!("{}", serde_json::to_string(&points)?);
    Ok(ExitCode::SUCCESS)
}
