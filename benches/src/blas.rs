//! `rcud bench blas`: GEMM through rcud's cuBLAS on the device (one
//! request per call, the emulated device computing with its CPU BLAS) next
//! to the same CPU GEMM called directly in this process, interleaved in the
//! same run so that both see the same load.

use std::process::ExitCode;
use std::time::{Duration, Instant};

use rcud_client::Runtime;
use rcud_proto::math::blas::{dtype, Call, Operand, Scalar};
use rcud_proto::math::Library;
use rcud_transport::bootstrap::TransportKind;
use serde::Serialize;

use super::output::{emit, Format, Table};
use super::{BenchResult, Setup};

/// Arguments of `rcud bench blas`.
#[derive(Debug, Clone, clap::Args)]
pub(crate) struct BlasArgs {
    /// Size of the square SGEMM and DGEMM (m = n = k).
    #[arg(long, default_value_t = 1024)]
    size: usize,
    /// Products in the batched GEMM.
    #[arg(long, default_value_t = 1000)]
    batch: usize,
    /// Size of each product of the batched GEMM.
    #[arg(long, default_value_t = 32)]
    batch_size: usize,
    /// Timed repetitions of each measurement (after one warm-up).
    #[arg(long, default_value_t = 5)]
    repeat: u32,
}

#[derive(Debug, Serialize)]
struct BlasRow {
    transport: String,
    call: String,
    /// Through rcud (cublas call queued, then a synchronize).
    rcud_gflops: f64,
    /// The same CPU GEMM called directly.
    direct_gflops: f64,
    /// rcud over direct.
    ratio: f64,
}

/// One GEMM case: element type and shape.
struct Case {
    name: String,
    dt: u8,
    size: usize,
    batch: usize,
}

pub(crate) fn run(
    setup: &Setup,
    transports: &[TransportKind],
    args: &BlasArgs,
    format: Format,
) -> BenchResult<ExitCode> {
    let cases = [
        Case {
            name: format!("SGEMM {0}x{0}x{0}", args.size),
            dt: dtype::R32F,
            size: args.size,
            batch: 1,
        },
        Case {
            name: format!("DGEMM {0}x{0}x{0}", args.size),
            dt: dtype::R64F,
            size: args.size,
            batch: 1,
        },
        Case {
            name: format!(
                "SGEMM strided batch {} x {1}x{1}x{1}",
                args.batch, args.batch_size
            ),
            dt: dtype::R32F,
            size: args.batch_size,
            batch: args.batch,
        },
    ];
    let mut rows = Vec::new();
    for &kind in transports {
        let rt = setup.runtime(kind)?;
        let handle = create_handle(rt)?;
        for case in &cases {
            let (rcud, direct) = measure(rt, handle, case, args.repeat)?;
            let flops = 2.0 * (case.size as f64).powi(3) * case.batch as f64;
            let gflops = |d: Duration| flops / d.as_secs_f64() / 1e9;
            rows.push(BlasRow {
                transport: kind.to_string(),
                call: case.name.clone(),
                rcud_gflops: gflops(rcud),
                direct_gflops: gflops(direct),
                ratio: direct.as_secs_f64() / rcud.as_secs_f64(),
            });
        }
        rt.math_call(0, Library::Blas, &Call::Destroy { handle })?;
    }
    emit(format, &rows, || {
        let mut t = Table::new(&[
            "transport",
            "call",
            "rcud GFLOP/s",
            "direct GFLOP/s",
            "rcud/direct",
        ]);
        for r in &rows {
            t.push(vec![
                r.transport.clone(),
                r.call.clone(),
                format!("{:.2}", r.rcud_gflops),
                format!("{:.2}", r.direct_gflops),
                format!("{:.2}", r.ratio),
            ]);
        }
        t
    })?;
    Ok(ExitCode::SUCCESS)
}

fn create_handle(rt: &Runtime) -> BenchResult<u64> {
    let reply = rt.math_call(0, Library::Blas, &Call::Create {})?;
    let bytes: [u8; 8] = reply
        .out
        .try_into()
        .map_err(|_| format!("cublasCreate answered status {}", reply.status))?;
    Ok(u64::from_le_bytes(bytes))
}

/// The fastest of `repeat` runs through rcud and directly, interleaved.
fn measure(
    rt: &'static Runtime,
    handle: u64,
    case: &Case,
    repeat: u32,
) -> BenchResult<(Duration, Duration)> {
    let n = case.size;
    let elements = n * n * case.batch;
    let bytes_per = if case.dt == dtype::R64F { 8 } else { 4 };
    let a_host: Vec<f64> = (0..elements)
        .map(|i| ((i % 97) as f64 - 48.0) / 97.0)
        .collect();
    let b_host: Vec<f64> = (0..elements)
        .map(|i| ((i % 89) as f64 - 44.0) / 89.0)
        .collect();
    let device = rt.current_device()?;
    let upload = |values: &[f64]| -> BenchResult<u64> {
        let bytes: Vec<u8> = if case.dt == dtype::R64F {
            values.iter().flat_map(|v| v.to_le_bytes()).collect()
        } else {
            values
                .iter()
                .flat_map(|v| (*v as f32).to_le_bytes())
                .collect()
        };
        let ptr = rt.malloc(bytes.len() as u64)?;
        rt.memcpy_htod(device, ptr, &bytes)?;
        Ok(ptr)
    };
    let (da, db) = (upload(&a_host)?, upload(&b_host)?);
    let dc = rt.malloc((elements * bytes_per) as u64)?;
    let stride = (n * n) as i64;
    let operand = |ptr| Operand {
        ptr,
        ld: n as i64,
        stride,
    };
    let call = Call::Gemm {
        handle,
        types: [case.dt; 4],
        transa: 0,
        transb: 0,
        m: n as i64,
        n: n as i64,
        k: n as i64,
        alpha: Scalar::Host { re: 1.0, im: 0.0 },
        a: operand(da),
        b: operand(db),
        beta: Scalar::Host { re: 0.0, im: 0.0 },
        c: operand(dc),
        batch: case.batch as i64,
        pointer_arrays: false,
    };
    let a32: Vec<f32> = a_host.iter().map(|&v| v as f32).collect();
    let b32: Vec<f32> = b_host.iter().map(|&v| v as f32).collect();
    let mut c32 = vec![0f32; elements];
    let mut c64 = vec![0f64; elements];
    let direct = |c32: &mut [f32], c64: &mut [f64]| {
        for p in 0..case.batch {
            let r = p * n * n..(p + 1) * n * n;
            if case.dt == dtype::R64F {
                rcud_math::blas::gemm_direct(
                    n,
                    n,
                    n,
                    &a_host[r.clone()],
                    &b_host[r.clone()],
                    &mut c64[r],
                );
            } else {
                rcud_math::blas::gemm_direct(
                    n,
                    n,
                    n,
                    &a32[r.clone()],
                    &b32[r.clone()],
                    &mut c32[r],
                );
            }
        }
    };
    let (mut best_rcud, mut best_direct) = (Duration::MAX, Duration::MAX);
    for round in 0..=repeat {
        let t0 = Instant::now();
        rt.math_enqueue(0, Library::Blas, &call)?;
        rt.synchronize()?;
        let t1 = Instant::now();
        direct(&mut c32, &mut c64);
        let t2 = Instant::now();
        // Round 0 warms up (page faults, caches).
        if round > 0 {
            best_rcud = best_rcud.min(t1 - t0);
            best_direct = best_direct.min(t2 - t1);
        }
    }
    // The device's result must be the direct one.
    let mut out = vec![0u8; elements * bytes_per];
    rt.memcpy_dtoh(device, &mut out, dc)?;
    let matches = if case.dt == dtype::R64F {
        out.chunks_exact(8).zip(&c64).all(|(b, want)| {
            b.try_into()
                .map(f64::from_le_bytes)
                .is_ok_and(|v| v == *want)
        })
    } else {
        out.chunks_exact(4).zip(&c32).all(|(b, want)| {
            b.try_into()
                .map(f32::from_le_bytes)
                .is_ok_and(|v| v == *want)
        })
    };
    if !matches {
        return Err(format!(
            "{}: the device's result differs from the direct GEMM's",
            case.name
        )
        .into());
    }
    for ptr in [da, db, dc] {
        rt.free(ptr)?;
    }
    Ok((best_rcud, best_direct))
}
