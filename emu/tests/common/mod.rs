//! Helpers for the interpreter's integration tests: load a checked-in PTX
//! module, allocate and fill device memory, pack arguments, launch.
#![allow(dead_code, unreachable_pub)]

use std::collections::HashMap;
use std::path::PathBuf;
use std::time::Duration;

use rcud_emu::kernel::{self, KernelError, LaunchConfig, LaunchOutput, Limits};
use rcud_emu::ptx::Module;
use rcud_emu::{DeviceMemory, EmuGpu};

/// Plain numeric types that device memory holds.
pub trait Scalar: Copy + std::fmt::Debug {
    const SIZE: usize;
    fn put(self, out: &mut Vec<u8>);
    fn get(b: &[u8]) -> Self;
}

macro_rules! scalar {
    ($($t:ty),*) => {$(
        impl Scalar for $t {
            const SIZE: usize = std::mem::size_of::<$t>();
            fn put(self, out: &mut Vec<u8>) {
                out.extend_from_slice(&self.to_le_bytes());
            }
            fn get(b: &[u8]) -> Self {
                <$t>::from_le_bytes(b.try_into().unwrap())
            }
        }
    )*};
}
scalar!(u8, i8, u16, i16, u32, i32, u64, i64, f32, f64);

/// A kernel argument: its bytes.
pub struct Arg(pub Vec<u8>);

pub fn arg<T: Scalar>(v: T) -> Arg {
    let mut b = Vec::new();
    v.put(&mut b);
    Arg(b)
}

/// A struct argument from explicit (offset, bytes) fields.
pub fn arg_struct(size: usize, fields: &[(usize, Vec<u8>)]) -> Arg {
    let mut b = vec![0u8; size];
    for (off, bytes) in fields {
        b[*off..*off + bytes.len()].copy_from_slice(bytes);
    }
    Arg(b)
}

pub fn bytes<T: Scalar>(v: T) -> Vec<u8> {
    let mut b = Vec::new();
    v.put(&mut b);
    b
}

pub struct Dev {
    pub mem: DeviceMemory,
    pub module: Module,
    pub symbols: HashMap<String, u64>,
    pub limits: Limits,
}

pub fn ptx_path(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/ptx")
        .join(name)
}

impl Dev {
    /// Parses `tests/ptx/<name>` and loads its module variables.
    pub fn load(name: &str) -> Dev {
        let text = std::fs::read_to_string(ptx_path(name)).unwrap();
        Dev::from_text(&text)
    }

    pub fn from_text(text: &str) -> Dev {
        let module = Module::parse(text).unwrap();
        let mut mem = DeviceMemory::new(EmuGpu::new(0, 1 << 30), 0);
        let mut symbols = HashMap::new();
        for g in module.globals() {
            let a = mem.malloc(g.size.max(1)).unwrap();
            symbols.insert(g.name.clone(), a);
        }
        for g in module.globals() {
            let init = g
                .init_with(|s| {
                    symbols
                        .get(s)
                        .copied()
                        .or_else(|| module.function_address(s))
                })
                .unwrap();
            if !init.is_empty() {
                mem.slice_mut(symbols[&g.name], init.len() as u64)
                    .unwrap()
                    .copy_from_slice(&init);
            }
        }
        Dev {
            mem,
            module,
            symbols,
            limits: Limits {
                timeout: Duration::from_secs(60),
                threads: 0,
                // `RCUD_EMU_ENGINE=jit` runs every test on the compiling
                // engine (the differential run of docs/interpreter.md).
                engine: std::env::var("RCUD_EMU_ENGINE")
                    .ok()
                    .and_then(|s| s.parse().ok())
                    .unwrap_or_default(),
                ..Limits::default()
            },
        }
    }

    pub fn alloc<T: Scalar>(&mut self, data: &[T]) -> u64 {
        let mut b = Vec::new();
        for v in data {
            v.put(&mut b);
        }
        let a = self.mem.malloc(b.len().max(1) as u64).unwrap();
        self.mem
            .slice_mut(a, b.len() as u64)
            .unwrap()
            .copy_from_slice(&b);
        a
    }

    pub fn zeros<T: Scalar>(&mut self, n: usize) -> u64 {
        self.mem.malloc((n * T::SIZE).max(1) as u64).unwrap()
    }

    pub fn read<T: Scalar>(&self, addr: u64, n: usize) -> Vec<T> {
        let b = self.mem.slice(addr, (n * T::SIZE) as u64).unwrap();
        b.chunks(T::SIZE).map(T::get).collect()
    }

    pub fn write_symbol<T: Scalar>(&mut self, name: &str, data: &[T]) {
        let mut b = Vec::new();
        for v in data {
            v.put(&mut b);
        }
        let a = self.symbols[name];
        self.mem
            .slice_mut(a, b.len() as u64)
            .unwrap()
            .copy_from_slice(&b);
    }

    pub fn read_symbol<T: Scalar>(&self, name: &str, n: usize) -> Vec<T> {
        self.read(self.symbols[name], n)
    }

    pub fn pack(&self, kernel: &str, args: &[Arg]) -> Vec<u8> {
        let layout = self.module.kernel_params(kernel).unwrap();
        assert_eq!(layout.len(), args.len(), "argument count of {kernel}");
        let size = layout.iter().map(|(o, s)| o + s).max().unwrap_or(0);
        let mut buf = vec![0u8; size];
        for ((off, sz), a) in layout.iter().zip(args) {
            assert!(a.0.len() <= *sz, "argument too large for {kernel}");
            buf[*off..*off + a.0.len()].copy_from_slice(&a.0);
        }
        buf
    }

    pub fn launch(
        &mut self,
        kernel: &str,
        grid: [u32; 3],
        block: [u32; 3],
        dynamic_shared: u32,
        args: &[Arg],
    ) -> Result<LaunchOutput, KernelError> {
        self.launch_with(kernel, grid, block, dynamic_shared, false, args)
    }

    /// A launch whose blocks are all resident (`cudaLaunchCooperativeKernel`).
    #[allow(dead_code)]
    pub fn launch_cooperative(
        &mut self,
        kernel: &str,
        grid: [u32; 3],
        block: [u32; 3],
        args: &[Arg],
    ) -> Result<LaunchOutput, KernelError> {
        self.launch_with(kernel, grid, block, 0, true, args)
    }

    fn launch_with(
        &mut self,
        kernel: &str,
        grid: [u32; 3],
        block: [u32; 3],
        dynamic_shared: u32,
        cooperative: bool,
        args: &[Arg],
    ) -> Result<LaunchOutput, KernelError> {
        let params = self.pack(kernel, args);
        let cfg = LaunchConfig {
            grid,
            block,
            dynamic_shared,
            cooperative,
        };
        kernel::launch(
            &self.module,
            kernel,
            &cfg,
            &params,
            &self.symbols,
            &mut self.mem,
            &self.limits,
        )
    }
}

/// A small deterministic generator.
pub struct Rng(pub u64);

impl Rng {
    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    pub fn f32(&mut self) -> f32 {
        (self.next() % 2_000_001) as f32 / 1000.0 - 1000.0
    }
    pub fn i32(&mut self) -> i32 {
        self.next() as i32
    }
}
