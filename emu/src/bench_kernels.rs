//! The kernels both engines are measured on, each with a plain Rust loop
//! doing the same work: the one set behind `cargo bench -p rcud-emu`,
//! `cargo bench -p rcud-bench --bench interp` and `rcud bench kernels`.
//!
//! The kernels are nvcc's PTX from `emu/tests/ptx` (vector add, a matrix
//! multiply with 16×16 shared-memory tiles, a reduction with warp shuffles)
//! and a hand-written compute-bound loop.

use std::collections::HashMap;
use std::sync::Arc;

use crate::kernel::{self, KernelError, LaunchConfig, LaunchOutput, Limits};
use crate::ptx::Module;
use crate::{DeviceMemory, EmuGpu};

/// How much work each case does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Size {
    /// The measured sizes: 1 Mi elements, 128³, 16 Ki threads × 256 iterations.
    Full,
    /// Small enough for a test to run every case on every engine in
    /// well under a second.
    Quick,
}

/// One kernel with its inputs in its own device memory, ready to launch.
pub struct Case {
    /// A name saying the kernel and its size.
    pub name: String,
    /// The parsed module.
    pub module: Module,
    /// The kernel's entry name in `module`.
    pub kernel: &'static str,
    /// Grid, block and dynamic shared memory.
    pub config: LaunchConfig,
    /// The packed kernel parameters.
    pub params: Vec<u8>,
    /// The device memory holding the inputs and outputs.
    pub mem: DeviceMemory,
    /// The same work as a plain Rust loop on one thread (inputs prepared
    /// beforehand, as the device's are).
    pub plain: Box<dyn Fn() + Send + Sync>,
}

impl Case {
    /// Launches the kernel once with `limits`.
    pub fn launch(&mut self, limits: &Limits) -> Result<LaunchOutput, KernelError> {
        kernel::launch(
            &self.module,
            self.kernel,
            &self.config,
            &self.params,
            &HashMap::new(),
            &mut self.mem,
            limits,
        )
    }
}

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

fn parse(text: &str) -> Module {
    // The texts are fixed at build time and parsed by the crate's tests.
    Module::parse(text).expect("benchmark PTX parses")
}

fn upload_f32(mem: &mut DeviceMemory, v: &[f32]) -> u64 {
    let bytes: Vec<u8> = v.iter().flat_map(|x| x.to_le_bytes()).collect();
    let a = mem
        .malloc(bytes.len() as u64)
        .expect("benchmark allocation");
    mem.slice_mut(a, bytes.len() as u64)
        .expect("just allocated")
        .copy_from_slice(&bytes);
    a
}

fn pack(module: &Module, kernel: &str, args: &[&[u8]]) -> Vec<u8> {
    let layout = module.kernel_params(kernel).expect("benchmark kernel");
    let size = layout.iter().map(|(o, s)| o + s).max().unwrap_or(0);
    let mut buf = vec![0u8; size];
    for ((off, _), a) in layout.iter().zip(args) {
        buf[*off..*off + a.len()].copy_from_slice(a);
    }
    buf
}

fn memory() -> DeviceMemory {
    DeviceMemory::new(EmuGpu::new(0, 1 << 30), 0)
}

fn config(grid: [u32; 3], block: [u32; 3], dynamic_shared: u32) -> LaunchConfig {
    LaunchConfig {
        grid,
        block,
        dynamic_shared,
        cooperative: false,
    }
}

fn vec_add(size: Size) -> Case {
    let n: usize = match size {
        Size::Full => 1 << 20,
        Size::Quick => 1 << 14,
    };
    let mut mem = memory();
    let x: Arc<Vec<f32>> = Arc::new((0..n).map(|i| i as f32).collect());
    let a = upload_f32(&mut mem, &x);
    let b = upload_f32(&mut mem, &x);
    let c = mem.malloc((n * 4) as u64).expect("benchmark allocation");
    let module = parse(include_str!("../tests/ptx/basic.ptx"));
    let params = pack(
        &module,
        "vec_add",
        &[
            &a.to_le_bytes(),
            &b.to_le_bytes(),
            &c.to_le_bytes(),
            &(n as i32).to_le_bytes(),
        ],
    );
    Case {
        name: format!("vec_add_{}", count(n)),
        module,
        kernel: "vec_add",
        config: config([(n / 256) as u32, 1, 1], [256, 1, 1], 0),
        params,
        mem,
        plain: Box::new(move || {
            let c: Vec<f32> = x.iter().zip(x.iter()).map(|(a, b)| a + b).collect();
            std::hint::black_box(&c);
        }),
    }
}

fn matmul(size: Size) -> Case {
    let dim: usize = match size {
        Size::Full => 128,
        Size::Quick => 32,
    };
    let mut mem = memory();
    let m: Arc<Vec<f32>> = Arc::new((0..dim * dim).map(|i| (i % 17) as f32 * 0.25).collect());
    let a = upload_f32(&mut mem, &m);
    let b = upload_f32(&mut mem, &m);
    let c = mem
        .malloc((dim * dim * 4) as u64)
        .expect("benchmark allocation");
    let module = parse(include_str!("../tests/ptx/matmul.ptx"));
    let d = (dim as i32).to_le_bytes();
    let params = pack(
        &module,
        "matmul",
        &[
            &a.to_le_bytes(),
            &b.to_le_bytes(),
            &c.to_le_bytes(),
            &d,
            &d,
            &d,
        ],
    );
    let tiles = (dim / 16) as u32;
    Case {
        name: format!("matmul_tile16_{dim}"),
        module,
        kernel: "matmul",
        config: config([tiles, tiles, 1], [16, 16, 1], 0),
        params,
        mem,
        plain: Box::new(move || {
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
        }),
    }
}

fn reduce(size: Size) -> Case {
    let n: usize = match size {
        Size::Full => 1 << 20,
        Size::Quick => 1 << 14,
    };
    let mut mem = memory();
    let x: Arc<Vec<f32>> = Arc::new((0..n).map(|i| (i % 7) as f32).collect());
    let a = upload_f32(&mut mem, &x);
    let blocks = 64;
    let o = mem.malloc(blocks * 4).expect("benchmark allocation");
    let module = parse(include_str!("../tests/ptx/reduce.ptx"));
    let params = pack(
        &module,
        "reduce_sum",
        &[
            &a.to_le_bytes(),
            &o.to_le_bytes(),
            &(n as i32).to_le_bytes(),
        ],
    );
    Case {
        name: format!("reduce_shfl_{}", count(n)),
        module,
        kernel: "reduce_sum",
        // One partial sum per warp in dynamic shared memory.
        config: config([blocks as u32, 1, 1], [256, 1, 1], 32),
        params,
        mem,
        plain: Box::new(move || {
            std::hint::black_box(x.iter().sum::<f32>());
        }),
    }
}

fn poly(size: Size) -> Case {
    let (threads, iters): (usize, u32) = match size {
        Size::Full => (16 << 10, 256),
        Size::Quick => (1 << 10, 32),
    };
    let mut mem = memory();
    let o = mem
        .malloc((threads * 4) as u64)
        .expect("benchmark allocation");
    let module = parse(POLY);
    let params = pack(&module, "poly", &[&o.to_le_bytes(), &iters.to_le_bytes()]);
    Case {
        name: format!("poly_loop_{}", count(threads)),
        module,
        kernel: "poly",
        config: config([(threads / 256) as u32, 1, 1], [256, 1, 1], 0),
        params,
        mem,
        plain: Box::new(move || {
            let mut out = vec![0f32; threads];
            for (i, o) in out.iter_mut().enumerate() {
                let c = i as f32 * f32::from_bits(0x3780_0000);
                let (mut zr, mut zi) = (0f32, 0f32);
                for _ in 0..std::hint::black_box(iters) {
                    let nr = zr * zr - zi * zi + c;
                    zi = (zr * zi).mul_add(2.0, 0.25);
                    zr = nr;
                }
                *o = zr + zi;
            }
            std::hint::black_box(&out);
        }),
    }
}

/// `1M`, `16K`: an element count in names.
fn count(n: usize) -> String {
    if n >= 1 << 20 {
        format!("{}M", n >> 20)
    } else {
        format!("{}K", n >> 10)
    }
}

/// Every case, its inputs uploaded: vector add, tiled matrix multiply,
/// shuffle reduction and the compute-bound loop.
pub fn cases(size: Size) -> Vec<Case> {
    vec![vec_add(size), matmul(size), reduce(size), poly(size)]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Engine;

    #[test]
    fn every_case_runs_on_both_engines_with_the_same_instruction_count() {
        for mut case in cases(Size::Quick) {
            let mut counts = Vec::new();
            for engine in [Engine::Interp, Engine::Jit] {
                let limits = Limits {
                    engine,
                    ..Limits::default()
                };
                let out = case.launch(&limits).expect("launch");
                assert!(out.instructions > 0, "{}", case.name);
                counts.push(out.instructions);
            }
            assert_eq!(counts[0], counts[1], "{}", case.name);
            (case.plain)();
        }
    }
}
