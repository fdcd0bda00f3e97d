//! The compiling engine of the emulated device against its interpreter:
//! random valid PTX kernels (arithmetic, compares, selects, uniform and
//! divergent branches, bounded loops, global and shared loads and stores,
//! some out of bounds or misaligned, traps) run on both engines, which must
//! leave the same memory and report the same result or fault.
//!
//! ```sh
//! cargo run --release -p rcud-fuzz-targets --example jit_diff -- FIRST COUNT
//! ```

use std::collections::HashMap;
use std::time::Duration;

use rcud_emu::kernel::{self, KernelError, LaunchConfig, Limits};
use rcud_emu::ptx::Module;
use rcud_emu::{DeviceMemory, EmuGpu, Engine};

#[allow(dead_code, missing_docs)]
#[path = "../../emu/tests/jit_gen/mod.rs"]
mod jit_gen;

pub use jit_gen::random_kernel;

/// What one launch leaves: `out` and `inp`, and the result.
type Outcome = (Vec<u8>, Vec<u8>, Result<(String, u64), KernelError>);

fn launch(module: &Module, engine: Engine, seed: u64) -> Outcome {
    let mut mem = DeviceMemory::new(EmuGpu::new(0, 1 << 28), 0);
    let mut state = seed | 1;
    let mut fill = |mem: &mut DeviceMemory| -> u64 {
        let a = mem.malloc(jit_gen::BUF as u64).expect("buffer");
        let bytes: Vec<u8> = (0..jit_gen::BUF / 4)
            .flat_map(|_| {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                ((state % 1000) as u32).to_le_bytes()
            })
            .collect();
        mem.slice_mut(a, bytes.len() as u64)
            .expect("buffer")
            .copy_from_slice(&bytes);
        a
    };
    let out = fill(&mut mem);
    let inp = fill(&mut mem);
    let mut params = Vec::new();
    params.extend_from_slice(&out.to_le_bytes());
    params.extend_from_slice(&inp.to_le_bytes());
    params.extend_from_slice(&((seed % 100) as u32).to_le_bytes());
    params.extend_from_slice(&[0; 4]);
    let config = LaunchConfig {
        grid: [2, 1, 1],
        block: [if seed % 3 == 0 { 40 } else { 64 }, 1, 1],
        dynamic_shared: 0,
        cooperative: false,
    };
    let limits = Limits {
        timeout: Duration::from_secs(5),
        // One worker: which fault is reported first is then deterministic.
        threads: 1,
        engine,
        ..Limits::default()
    };
    let res = kernel::launch(
        module,
        "k",
        &config,
        &params,
        &HashMap::new(),
        &mut mem,
        &limits,
    );
    let read = |a: u64| mem.slice(a, jit_gen::BUF as u64).expect("buffer").to_vec();
    (
        read(out),
        read(inp),
        res.map(|o| (o.printf, o.instructions)),
    )
}

/// Runs random kernel `seed` on both engines; the kernel and both results
/// when they differ.
pub fn compare_seed(seed: u64) -> Result<(), String> {
    let ptx = random_kernel(seed);
    let module = Module::parse(&ptx).map_err(|e| format!("seed {seed}: {e}\n{ptx}"))?;
    let a = launch(&module, Engine::Interp, seed);
    let b = launch(&module, Engine::Jit, seed);
    if a == b {
        Ok(())
    } else {
        Err(format!(
            "seed {seed}:\n{ptx}\ninterp: {:?}\njit: {:?}",
            a.2, b.2
        ))
    }
}

/// The fuzz target: the first 8 bytes are the seed of a random kernel.
pub fn jit(data: &[u8]) {
    let mut seed = [0u8; 8];
    for (d, s) in seed.iter_mut().zip(data) {
        *d = *s;
    }
    if let Err(e) = compare_seed(u64::from_le_bytes(seed)) {
        panic!("{e}");
    }
}
