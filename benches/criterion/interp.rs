//! PTX interpreter and compiling-engine throughput: thread-instructions per
//! second on real nvcc kernels (`emu/tests/ptx`), on one host thread and on
//! all cores, for both engines, beside a plain Rust loop doing the same work
//! on one thread.
//!
//!     cargo bench -p rcud-bench --bench interp
//!
//! Criterion's "thrpt" figure is in PTX instructions (per thread) per second.

use std::collections::HashMap;
use std::time::Duration;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use rcud_emu::kernel::{self, LaunchConfig, Limits};
use rcud_emu::ptx::Module;
use rcud_emu::{DeviceMemory, EmuGpu, Engine};

struct Case {
    name: &'static str,
    module: Module,
    kernel: &'static str,
    config: LaunchConfig,
    params: Vec<u8>,
    mem: DeviceMemory,
    /// The same work as a plain Rust loop on one thread.
    plain: fn(),
}

fn plain_vec_add() {
    static A: std::sync::OnceLock<Vec<f32>> = std::sync::OnceLock::new();
    let n = 1 << 20;
    let a = A.get_or_init(|| (0..n).map(|i| i as f32).collect());
    let mut c = vec![0f32; n];
    for i in 0..n {
        c[i] = a[i] + a[i];
    }
    std::hint::black_box(&c);
}

fn plain_matmul() {
    static M: std::sync::OnceLock<Vec<f32>> = std::sync::OnceLock::new();
    let dim = 128;
    let m = M.get_or_init(|| (0..dim * dim).map(|i| (i % 17) as f32 * 0.25).collect());
    let mut c = vec![0f32; dim * dim];
    for i in 0..dim {
        for j in 0..dim {
            let mut acc = 0f32;
            for k in 0..dim {
                acc += m[i * dim + k] * m[k * dim + j];
            }
            c[i * dim + j] = acc;
        }
    }
    std::hint::black_box(&c);
}

fn plain_reduce() {
    static X: std::sync::OnceLock<Vec<f32>> = std::sync::OnceLock::new();
    let x = X.get_or_init(|| (0..1 << 20).map(|i| (i % 7) as f32).collect());
    std::hint::black_box(x.iter().sum::<f32>());
}

fn load(file: &str) -> Module {
    let path = format!("{}/../emu/tests/ptx/{file}", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(path).expect("test PTX");
    Module::parse(&text).expect("parse")
}

fn upload_f32(mem: &mut DeviceMemory, v: &[f32]) -> u64 {
    let a = mem.malloc((v.len() * 4) as u64).expect("malloc");
    let bytes: Vec<u8> = v.iter().flat_map(|x| x.to_le_bytes()).collect();
    mem.slice_mut(a, bytes.len() as u64)
        .expect("slice")
        .copy_from_slice(&bytes);
    a
}

fn pack(module: &Module, kernel: &str, args: &[Vec<u8>]) -> Vec<u8> {
    let layout = module.kernel_params(kernel).expect("kernel");
    let size = layout.iter().map(|(o, s)| o + s).max().unwrap_or(0);
    let mut buf = vec![0u8; size];
    for ((off, _), a) in layout.iter().zip(args) {
        buf[*off..*off + a.len()].copy_from_slice(a);
    }
    buf
}

fn cases() -> Vec<Case> {
    let mut out = Vec::new();

    let n: usize = 1 << 20;
    let mut mem = DeviceMemory::new(EmuGpu::new(0, 1 << 30), 0);
    let x: Vec<f32> = (0..n).map(|i| i as f32).collect();
    let a = upload_f32(&mut mem, &x);
    let b = upload_f32(&mut mem, &x);
    let c = mem.malloc((n * 4) as u64).expect("malloc");
    let module = load("basic.ptx");
    let params = pack(
        &module,
        "vec_add",
        &[
            a.to_le_bytes().to_vec(),
            b.to_le_bytes().to_vec(),
            c.to_le_bytes().to_vec(),
            (n as i32).to_le_bytes().to_vec(),
        ],
    );
    out.push(Case {
        name: "vec_add_1M",
        module,
        kernel: "vec_add",
        config: LaunchConfig {
            grid: [(n / 256) as u32, 1, 1],
            block: [256, 1, 1],
            dynamic_shared: 0,
            cooperative: false,
        },
        params,
        mem,
        plain: plain_vec_add,
    });

    let dim: usize = 128;
    let mut mem = DeviceMemory::new(EmuGpu::new(0, 1 << 30), 0);
    let m: Vec<f32> = (0..dim * dim).map(|i| (i % 17) as f32 * 0.25).collect();
    let a = upload_f32(&mut mem, &m);
    let b = upload_f32(&mut mem, &m);
    let c = mem.malloc((dim * dim * 4) as u64).expect("malloc");
    let module = load("matmul.ptx");
    let d = (dim as i32).to_le_bytes().to_vec();
    let params = pack(
        &module,
        "matmul",
        &[
            a.to_le_bytes().to_vec(),
            b.to_le_bytes().to_vec(),
            c.to_le_bytes().to_vec(),
            d.clone(),
            d.clone(),
            d,
        ],
    );
    out.push(Case {
        name: "matmul_tile16_128",
        module,
        kernel: "matmul",
        config: LaunchConfig {
            grid: [(dim / 16) as u32, (dim / 16) as u32, 1],
            block: [16, 16, 1],
            dynamic_shared: 0,
            cooperative: false,
        },
        params,
        mem,
        plain: plain_matmul,
    });

    let n: usize = 1 << 20;
    let mut mem = DeviceMemory::new(EmuGpu::new(0, 1 << 30), 0);
    let x: Vec<f32> = (0..n).map(|i| (i % 7) as f32).collect();
    let a = upload_f32(&mut mem, &x);
    let o = mem.malloc(64 * 4).expect("malloc");
    let module = load("reduce.ptx");
    let params = pack(
        &module,
        "reduce_sum",
        &[
            a.to_le_bytes().to_vec(),
            o.to_le_bytes().to_vec(),
            (n as i32).to_le_bytes().to_vec(),
        ],
    );
    out.push(Case {
        name: "reduce_shfl_1M",
        module,
        kernel: "reduce_sum",
        config: LaunchConfig {
            grid: [64, 1, 1],
            block: [256, 1, 1],
            dynamic_shared: 32,
            cooperative: false,
        },
        params,
        mem,
        plain: plain_reduce,
    });
    out
}

fn bench(c: &mut Criterion) {
    let symbols = HashMap::new();
    for mut case in cases() {
        let mut g = c.benchmark_group(case.name);
        g.sample_size(10);
        g.measurement_time(Duration::from_secs(4));
        g.bench_function("plain rust, 1 thread", |b| b.iter(case.plain));
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
            let once = kernel::launch(
                &case.module,
                case.kernel,
                &case.config,
                &case.params,
                &symbols,
                &mut case.mem,
                &limits,
            )
            .expect("launch");
            let mut g = c.benchmark_group(case.name);
            g.sample_size(10);
            g.measurement_time(Duration::from_secs(4));
            g.throughput(Throughput::Elements(once.instructions));
            g.bench_function(label, |b| {
                b.iter(|| {
                    kernel::launch(
                        &case.module,
                        case.kernel,
                        &case.config,
                        &case.params,
                        &symbols,
                        &mut case.mem,
                        &limits,
                    )
                    .expect("launch")
                })
            });
            g.finish();
        }
    }
}

criterion_group!(benches, bench);
criterion_main!(benches);
