//! Runs COUNT random kernels from seed FIRST on both engines of the emulated
//! device and stops at the first difference:
//!
//!     cargo run --release -p rcud-fuzz-targets --example jit_diff -- 0 100000

use std::process::ExitCode;

fn main() -> ExitCode {
    let mut args = std::env::args().skip(1);
    let mut num = |default: u64| args.next().and_then(|s| s.parse().ok()).unwrap_or(default);
    let first = num(0);
    let count = num(10_000);
    let started = std::time::Instant::now();
    for seed in first..first + count {
        if let Err(e) = rcud_fuzz_targets::jit::compare_seed(seed) {
            eprintln!("{e}");
            return ExitCode::FAILURE;
        }
    }
    println!(
        "{count} random kernels (seeds {first}..{}) agree on both engines ({:.1} s)",
        first + count,
        started.elapsed().as_secs_f64()
    );
    ExitCode::SUCCESS
}
