//! `rcud bench kernels`: the emulated device's two engines on the kernels of
//! `rcud_emu::bench_kernels`, on one host thread and on all cores, beside a
//! plain Rust loop doing the same work, in one run so that the ratios hold
//! on a shared machine. No server: the engines are called directly.

use std::process::ExitCode;
use std::time::{Duration, Instant};

use rcud_emu::bench_kernels::{cases, Size};
use rcud_emu::kernel::Limits;
use rcud_emu::Engine;
use serde::Serialize;

use crate::output::{emit, num, Format, Table};
use crate::BenchResult;

/// Arguments of `rcud bench kernels`.
#[derive(Debug, clap::Args)]
pub(crate) struct KernelsArgs {
    /// Small sizes and one timed launch each: checks that everything runs,
    /// measures nothing worth quoting.
    #[arg(long)]
    quick: bool,
    /// Time each point for at least this long (after one untimed launch,
    /// which is where the compiling engine compiles).
    #[arg(long, default_value_t = 500)]
    min_ms: u64,
}

/// One measured point.
#[derive(Debug, Serialize)]
struct Row {
    kernel: String,
    /// `plain`, `interp` or `jit`.
    runner: &'static str,
    /// Host threads (the plain loop always uses one).
    threads: usize,
    ms_per_launch: f64,
    /// PTX instructions executed per launch, counted per thread.
    thread_instructions: u64,
    /// Thread instructions per second; for the plain loop, the kernel's
    /// count divided by the loop's time.
    g_thread_insts_per_s: f64,
    /// The interpreter's time divided by this row's, at the same thread
    /// count (the jit's speed-up; 1 for the interpreter).
    jit_over_interp: Option<f64>,
    /// The plain loop's time (one thread) divided by this row's: 1 is as
    /// fast as the plain loop.
    plain_over_engine: f64,
    /// The compiling engine's compile time for this kernel, paid once at
    /// its first launch in the process.
    compile_ms: Option<f64>,
    /// Instructions the compiler took, of the kernel's total.
    compiled_insts: Option<String>,
}

/// Mean time of `f` over repetitions filling at least `min`, after one
/// untimed call.
fn time(min: Duration, mut f: impl FnMut()) -> Duration {
    f();
    let start = Instant::now();
    let mut reps = 0u32;
    loop {
        f();
        reps += 1;
        let spent = start.elapsed();
        if spent >= min {
            return spent / reps;
        }
    }
}

pub(crate) fn run(args: &KernelsArgs, format: Format) -> BenchResult<ExitCode> {
    let (size, min) = if args.quick {
        (Size::Quick, Duration::ZERO)
    } else {
        (Size::Full, Duration::from_millis(args.min_ms))
    };
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let mut rows = Vec::new();
    for mut case in cases(size) {
        let plain = time(min, &case.plain);
        let mut measured = Vec::new();
        for threads in [1, cores] {
            for engine in [Engine::Interp, Engine::Jit] {
                let limits = Limits {
                    timeout: Duration::from_secs(600),
                    threads,
                    engine,
                    ..Limits::default()
                };
                let insts = case.launch(&limits)?.instructions;
                let mut failed = None;
                let per_launch = time(min, || {
                    if let Err(e) = case.launch(&limits) {
                        failed = Some(e);
                    }
                });
                if let Some(e) = failed {
                    return Err(format!("{} on {engine}: {e}", case.name).into());
                }
                measured.push((engine, threads, per_launch, insts));
            }
        }
        let stats = rcud_emu::jit::stats()
            .into_iter()
            .find(|s| s.kernel == case.kernel);
        let insts = measured.first().map_or(0, |m| m.3);
        rows.push(Row {
            kernel: case.name.clone(),
            runner: "plain",
            threads: 1,
            ms_per_launch: ms(plain),
            thread_instructions: insts,
            g_thread_insts_per_s: insts as f64 / plain.as_secs_f64() / 1e9,
            jit_over_interp: None,
            plain_over_engine: 1.0,
            compile_ms: None,
            compiled_insts: None,
        });
        for &(engine, threads, per_launch, insts) in &measured {
            let interp = measured
                .iter()
                .find(|m| m.0 == Engine::Interp && m.1 == threads)
                .map_or(per_launch, |m| m.2);
            let jit = engine == Engine::Jit;
            rows.push(Row {
                kernel: case.name.clone(),
                runner: if jit { "jit" } else { "interp" },
                threads,
                ms_per_launch: ms(per_launch),
                thread_instructions: insts,
                g_thread_insts_per_s: insts as f64 / per_launch.as_secs_f64() / 1e9,
                jit_over_interp: Some(interp.as_secs_f64() / per_launch.as_secs_f64()),
                plain_over_engine: plain.as_secs_f64() / per_launch.as_secs_f64(),
                compile_ms: stats
                    .as_ref()
                    .filter(|_| jit)
                    .map(|s| s.compile_micros as f64 / 1e3),
                compiled_insts: stats
                    .as_ref()
                    .filter(|_| jit)
                    .map(|s| format!("{}/{}", s.compiled_insts, s.total_insts)),
            });
        }
    }
    emit(format, &rows, || {
        let mut t = Table::new(&[
            "kernel",
            "engine",
            "threads",
            "ms/launch",
            "G thread-inst/s",
            "jit/interp",
            "plain/engine",
            "compile ms",
            "compiled insts",
        ]);
        for r in &rows {
            t.push(vec![
                r.kernel.clone(),
                r.runner.into(),
                r.threads.to_string(),
                format!("{:.3}", r.ms_per_launch),
                format!("{:.3}", r.g_thread_insts_per_s),
                num(r.jit_over_interp, 2),
                format!("{:.3}", r.plain_over_engine),
                num(r.compile_ms, 2),
                r.compiled_insts.clone().unwrap_or_else(|| "-".into()),
            ]);
        }
        t
    })?;
    Ok(ExitCode::SUCCESS)
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}
