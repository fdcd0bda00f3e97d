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

/// Iterations of the `poly` loop and threads that run it.
const POLY_ITERS: u32 = 256;
const POLY_THREADS: usize = 16 << 10;

/// A compute-bound loop: z = z² + c on (f32, f32) per thread, `iters`
/// times, with no memory access or barrier inside the loop.
const POLY: &str = r#".version 8.4
.target sm_80
.address_size 64
.visible .entry poly(.param .u64 out, .param .u32 iters)
{
.reg .pred %p<2>;
.reg .b32 %r<6>;
.reg .f32 %f<6>;
.reg .b64 %rd<4>;
ld.param.u64 %rd1, [out];
ld.param.u32 %r2, [iters];
mov.u32 %r3, %ctaid.x;
mov.u32 %r4, %ntid.x;
mov.u32 %r5, %tid.x;
mad.lo.s32 %r1, %r3, %r4, %r5;
cvt.rn.f32.s32 %f1, %r1;
mul.f32 %f1, %f1, 0f37800000;
mov.f32 %f2, 0f00000000;
mov.f32 %f3, 0f00000000;
mov.u32 %r3, 0;
LOOP:
mul.f32 %f4, %f2, %f2;
mul.f32 %f5, %f3, %f3;
sub.f32 %f4, %f4, %f5;
add.f32 %f4, %f4, %f1;
mul.f32 %f5, %f2, %f3;
fma.rn.f32 %f3, %f5, 0f40000000, 0f3E800000;
mov.f32 %f2, %f4;
add.u32 %r3, %r3, 1;
setp.lt.u32 %p1, %r3, %r2;
@%p1 bra LOOP;
cvta.to.global.u64 %rd1, %rd1;
mul.wide.s32 %rd2, %r1, 4;
add.s64 %rd3, %rd1, %rd2;
add.f32 %f4, %f2, %f3;
st.global.f32 [%rd3], %f4;
ret;
}
"#;

fn plain_poly() {
    let mut out = vec![0f32; POLY_THREADS];
    for (i, o) in out.iter_mut().enumerate() {
        let c = i as f32 * f32::from_bits(0x3780_0000);
        let (mut zr, mut zi) = (0f32, 0f32);
        for _ in 0..std::hint::black_box(POLY_ITERS) {
            let nr = zr * zr - zi * zi + c;
            zi = (zr * zi).mul_add(2.0, 0.25);
            zr = nr;
        }
        *o = zr + zi;
    }
    std::hint::black_box(&out);
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

    let mut mem = DeviceMemory::new(EmuGpu::new(0, 1 << 30), 0);
    let o = mem.malloc((POLY_THREADS * 4) as u64).expect("malloc");
    let module = Module::parse(POLY).expect("parse");
    let params = pack(
        &module,
        "poly",
        &[o.to_le_bytes().to_vec(), POLY_ITERS.to_le_bytes().to_vec()],
    );
    out.push(Case {
        name: "poly_loop_16K",
        module,
        kernel: "poly",
        config: LaunchConfig {
            grid: [(POLY_THREADS / 256) as u32, 1, 1],
            block: [256, 1, 1],
            dynamic_shared: 0,
            cooperative: false,
        },
        params,
        mem,
        plain: plain_poly,
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
