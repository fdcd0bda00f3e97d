// (Plain comments, not `//!`: `benches/criterion/interp.rs` includes this file.)
// Throughput of both engines on the kernels of `rcud_emu::bench_kernels`,
// on one host thread and on all cores, beside a plain Rust loop doing the
// same work on one thread.
//
// ```sh
// cargo bench -p rcud-emu --bench kernels
// cargo bench -p rcud-bench --bench interp   # the same file, included
// ```
//
// Criterion's "thrpt" figure is in PTX instructions (per thread) per second.
// `rcud bench kernels` measures the same cases in one table.

use std::time::Duration;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use rcud_emu::bench_kernels::{cases, Size};
use rcud_emu::kernel::Limits;
use rcud_emu::Engine;

fn bench(c: &mut Criterion) {
    for mut case in cases(Size::Full) {
        let mut g = c.benchmark_group(&case.name);
        g.sample_size(10);
        g.measurement_time(Duration::from_secs(4));
        g.bench_function("plain rust, 1 thread", |b| b.iter(&case.plain));
        g.finish();
        for (label, threads, engine) in [
            ("interp, 1 thread", 1usize, Engine::Interp),
            ("jit, 1 thread", 1, Engine::Jit),
            ("interp, all cores", 0, Engine::Interp),
            ("jit, all cores", 0, Engine::Jit),
        ] {
            let limits = Limits {
                timeout: Duration::from_secs(600),
                threads,
                engine,
                ..Limits::default()
            };
            // The first launch compiles (jit) and gives the instruction count.
            let once = case.launch(&limits).expect("launch");
            let mut g = c.benchmark_group(&case.name);
            g.sample_size(10);
            g.measurement_time(Duration::from_secs(4));
            g.throughput(Throughput::Elements(once.instructions));
            g.bench_function(label, |b| b.iter(|| case.launch(&limits).expect("launch")));
            g.finish();
        }
    }
}

criterion_group!(benches, bench);
criterion_main!(benches);
