//! The compiling engine: the IR of a kernel's straight-line regions
//! compiled to native code with Cranelift, working directly on the
//! interpreter's warp state so that the interpreter can take over at any
//! instruction boundary.
//!
//! Compiled code runs only while the warp is converged (no lanes waiting at
//! another pc) in the kernel's own frame. It returns the index of the
//! instruction to resume at whenever it meets something it does not compile
//! (calls, warp operations, barriers, atomics, exits, ...), a branch whose
//! lanes diverge, or a memory access that would fault: every lane's address
//! is checked before any lane's access is made, so the interpreter then
//! executes that instruction itself and raises the fault with its own
//! semantics. Taken branches count against the launch's instruction budget
//! exactly as the interpreter's do, so time limits keep working.

mod codegen;

use std::collections::HashMap;
use std::hash::{Hash, Hasher};
use std::str::FromStr;
use std::sync::{Arc, Mutex, OnceLock};

use crate::memory::MemoryView;
use crate::ptx::ir::Function;

pub(crate) use codegen::Compiled;

/// Which engine runs kernels on the emulated device.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Engine {
    /// The interpreter alone (the reference).
    #[default]
    Interp,
    /// Compiled code for the regions the compiler takes, the interpreter
    /// for the rest.
    Jit,
}

impl FromStr for Engine {
    type Err = String;

    fn from_str(s: &str) -> Result<Engine, String> {
        match s {
            "interp" => Ok(Engine::Interp),
            "jit" => Ok(Engine::Jit),
            _ => Err(format!("unknown emulator engine {s:?} (jit or interp)")),
        }
    }
}

impl std::fmt::Display for Engine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Engine::Interp => "interp",
            Engine::Jit => "jit",
        })
    }
}

/// Kernels larger than this stay on the interpreter (compile time grows
/// with the code).
const MAX_INSTS: usize = 50_000;
/// Compiled kernels the process keeps.
const CACHE_ENTRIES: usize = 4096;

type Cache = Mutex<HashMap<(u64, usize), Option<Arc<Compiled>>>>;

fn cache() -> &'static Cache {
    static CACHE: OnceLock<Cache> = OnceLock::new();
    CACHE.get_or_init(|| Mutex::new(HashMap::new()))
}

/// The content hash of a function's IR: its code and register files.
fn content_key(f: &Function) -> (u64, usize) {
    let mut h = std::collections::hash_map::DefaultHasher::new();
    format!("{:?}", f.code).hash(&mut h);
    f.nslots.hash(&mut h);
    f.npreds.hash(&mut h);
    (h.finish(), f.code.len())
}

/// What compiling one kernel cost, and how often its compiled code was
/// reused: one entry per kernel content compiled in this process.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CompileStats {
    /// The kernel's name (the first one compiled with this content).
    pub kernel: String,
    /// Instructions the compiler took; the interpreter runs the others.
    pub compiled_insts: usize,
    /// Instructions of the kernel's IR.
    pub total_insts: usize,
    /// Time spent compiling, paid at the kernel's first launch only.
    pub compile_micros: u64,
    /// Launches after the first that found the kernel's compiled code (or
    /// its refusal) in the cache.
    pub cache_hits: u64,
    /// Why the kernel runs on the interpreter alone, when it does.
    pub fallback: Option<String>,
}

type Stats = Mutex<HashMap<(u64, usize), CompileStats>>;

fn stats_table() -> &'static Stats {
    static STATS: OnceLock<Stats> = OnceLock::new();
    STATS.get_or_init(|| Mutex::new(HashMap::new()))
}

/// The compile statistics of every kernel compiled in this process, in
/// kernel name order. Kept when the cache of compiled code is cleared, so
/// a kernel compiled twice shows up as two compilations' worth of time.
pub fn stats() -> Vec<CompileStats> {
    let table = stats_table().lock().unwrap_or_else(|e| e.into_inner());
    let mut all: Vec<CompileStats> = table.values().cloned().collect();
    all.sort_by(|a, b| a.kernel.cmp(&b.kernel));
    all
}

/// The compile statistics of the kernel whose IR is `f`, if it was
/// compiled (or refused) in this process.
#[cfg(test)]
fn stats_for(f: &Function) -> Option<CompileStats> {
    let table = stats_table().lock().unwrap_or_else(|e| e.into_inner());
    table.get(&content_key(f)).cloned()
}

/// The compiled code of `f`, compiled at its first launch in this process;
/// `None` when the compiler takes none of it (logged once per kernel).
pub(crate) fn compiled(f: &Function) -> Option<Arc<Compiled>> {
    let key = content_key(f);
    let mut c = cache().lock().unwrap_or_else(|e| e.into_inner());
    if let Some(hit) = c.get(&key) {
        let hit = hit.clone();
        drop(c);
        let mut table = stats_table().lock().unwrap_or_else(|e| e.into_inner());
        if let Some(s) = table.get_mut(&key) {
            s.cache_hits += 1;
        }
        return hit;
    }
    let started = std::time::Instant::now();
    let result = if f.code.len() > MAX_INSTS {
        Err(format!("{} instructions", f.code.len()))
    } else {
        codegen::compile(f)
    };
    let micros = u64::try_from(started.elapsed().as_micros()).unwrap_or(u64::MAX);
    let (entry, compiled_insts, fallback) = match result {
        Ok(code) => {
            tracing::debug!(
                kernel = %f.name,
                compiled = code.compiled_insts,
                total = f.code.len(),
                micros,
                "kernel compiled"
            );
            let n = code.compiled_insts;
            (Some(Arc::new(code)), n, None)
        }
        Err(why) => {
            tracing::info!(kernel = %f.name, "kernel runs on the interpreter: {why}");
            (None, 0, Some(why))
        }
    };
    {
        let mut table = stats_table().lock().unwrap_or_else(|e| e.into_inner());
        let s = table.entry(key).or_insert_with(|| CompileStats {
            kernel: f.name.clone(),
            compiled_insts: 0,
            total_insts: f.code.len(),
            compile_micros: 0,
            cache_hits: 0,
            fallback: None,
        });
        s.compiled_insts = compiled_insts;
        s.compile_micros += micros;
        s.fallback = fallback;
    }
    if c.len() >= CACHE_ENTRIES {
        c.clear();
    }
    c.insert(key, entry.clone());
    entry
}

/// The warp state compiled code works on, laid out for it (`repr(C)`: the
/// code reads the fields at fixed offsets, see `codegen::off`).
#[repr(C)]
pub(crate) struct JitState {
    /// The frame's value slots: slot s of lane l at `regs[s * 32 + l]`.
    pub(crate) regs: *mut u64,
    /// The frame's predicates, one lane mask each.
    pub(crate) preds: *mut u32,
    pub(crate) shared: *mut u8,
    pub(crate) shared_len: u64,
    pub(crate) params: *const u8,
    pub(crate) params_len: u64,
    /// The allocation last reached: device base, length, host pointer.
    pub(crate) gbase: u64,
    pub(crate) glen: u64,
    pub(crate) gptr: *mut u8,
    /// The one reached before it (a kernel that reads one buffer and
    /// writes another alternates between two).
    pub(crate) gbase2: u64,
    pub(crate) glen2: u64,
    pub(crate) gptr2: *mut u8,
    /// Finds the allocation holding an access (see [`lookup`]).
    pub(crate) lookup: extern "C" fn(*mut JitState, u64, u64) -> *mut u8,
    pub(crate) view: *const MemoryView<'static>,
    /// tid.x, tid.y, tid.z of each lane.
    pub(crate) tid: *const [[u32; 32]; 3],
    /// %ntid.{x,y,z}, %ctaid.{x,y,z}, %nctaid.{x,y,z}, %warpid.
    pub(crate) sregs: [u64; 10],
    /// The lanes running (the warp is converged).
    pub(crate) mask: u32,
    pub(crate) _pad: u32,
    /// Warp instructions and thread instructions executed (the
    /// interpreter's counters, carried on).
    pub(crate) executed: u64,
    pub(crate) threads: u64,
    /// A taken branch at or past this many warp instructions yields.
    pub(crate) budget: u64,
    /// Host addresses of one memory instruction's lanes, checked before any
    /// lane's access.
    pub(crate) scratch: [u64; 32],
    /// The lane and address of the load that faulted, when the result has
    /// [`FAULT`] set.
    pub(crate) fault_lane: u64,
    pub(crate) fault_addr: u64,
}

/// Set in the value compiled code returns when the warp must yield.
pub(crate) const YIELD: u64 = 1 << 32;
/// Set in the value compiled code returns when a load faulted: the pc is
/// the load's, and the lane and address are in the state. It is the fault
/// the interpreter would raise first: the lowest lane at the lowest pc.
pub(crate) const FAULT: u64 = 1 << 33;

/// Looks up the allocation holding `[addr, addr + size)`, which must be
/// aligned to `size`, and makes it the cached one (the previous one becomes
/// the second); the host address of
/// `addr`, or null when the access would fault.
pub(crate) extern "C" fn lookup(state: *mut JitState, addr: u64, size: u64) -> *mut u8 {
    // SAFETY: compiled code passes the state pointer it was called with,
    // which `Compiled::run` made from a live `&mut JitState`; its `view`
    // points to the launch's memory view, alive for the whole call.
    let st = unsafe { &mut *state };
    // SAFETY: as above.
    let view = unsafe { &*st.view };
    if size == 0 || !addr.is_multiple_of(size) {
        return std::ptr::null_mut();
    }
    let Some(r) = view.region(addr) else {
        return std::ptr::null_mut();
    };
    if !r.contains(addr, size) {
        return std::ptr::null_mut();
    }
    let Some(first) = r.atomic_u8(r.base()) else {
        return std::ptr::null_mut();
    };
    st.gbase2 = st.gbase;
    st.glen2 = st.glen;
    st.gptr2 = st.gptr;
    st.gbase = r.base();
    st.glen = r.len();
    st.gptr = first.as_ptr();
    // `addr - base < len`, checked by `contains`.
    first.as_ptr().wrapping_add((addr - r.base()) as usize)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ptx::Module;

    const VEC_ADD: &str = r#".version 8.4
.target sm_80
.address_size 64
.visible .entry vec_add(.param .u64 a, .param .u64 c, .param .u32 n)
{
.reg .pred %p<2>;
.reg .b32 %r<6>;
.reg .f32 %f<3>;
.reg .b64 %rd<6>;
ld.param.u64 %rd1, [a];
ld.param.u64 %rd2, [c];
ld.param.u32 %r2, [n];
mov.u32 %r3, %ctaid.x;
mov.u32 %r4, %ntid.x;
mov.u32 %r5, %tid.x;
mad.lo.s32 %r1, %r3, %r4, %r5;
setp.ge.s32 %p1, %r1, %r2;
@%p1 bra DONE;
cvta.to.global.u64 %rd3, %rd1;
mul.wide.s32 %rd4, %r1, 4;
add.s64 %rd5, %rd3, %rd4;
ld.global.f32 %f1, [%rd5];
add.f32 %f2, %f1, %f1;
cvta.to.global.u64 %rd3, %rd2;
add.s64 %rd5, %rd3, %rd4;
st.global.f32 [%rd5], %f2;
DONE:
ret;
}
"#;

    #[test]
    fn compiles_once_per_content_and_takes_the_straight_line_code() {
        let m = Module::parse(VEC_ADD).unwrap();
        let f = &m.funcs[0];
        let a = compiled(f).expect("compiled");
        // Everything but `ret`.
        let others = f
            .code
            .iter()
            .filter(|i| matches!(i.op, crate::ptx::ir::Op::Ret))
            .count();
        assert_eq!(a.compiled_insts + others, f.code.len(), "{:?}", f.code);
        // The same text parsed again hits the cache.
        let m2 = Module::parse(VEC_ADD).unwrap();
        let b = compiled(&m2.funcs[0]).expect("compiled");
        assert!(Arc::ptr_eq(&a, &b));
    }

    /// A kernel no other test compiles, so the process-wide counters are
    /// this test's alone.
    const STATS_KERNEL: &str = r#".version 8.4
.target sm_80
.address_size 64
.visible .entry stats_probe(.param .u64 out)
{
.reg .b32 %r<3>;
.reg .b64 %rd<4>;
ld.param.u64 %rd1, [out];
mov.u32 %r1, %tid.x;
add.u32 %r2, %r1, 7;
cvta.to.global.u64 %rd2, %rd1;
mul.wide.u32 %rd3, %r1, 4;
add.s64 %rd2, %rd2, %rd3;
st.global.u32 [%rd2], %r2;
ret;
}
"#;

    #[test]
    fn a_second_launch_does_not_compile_again() {
        use crate::kernel::{launch, LaunchConfig, Limits};
        use crate::{DeviceMemory, EmuGpu};

        let m = Module::parse(STATS_KERNEL).unwrap();
        let mut mem = DeviceMemory::new(EmuGpu::new(0, 1 << 20), 0);
        let out = mem.malloc(32 * 4).unwrap();
        let params = out.to_le_bytes();
        let config = LaunchConfig {
            grid: [1, 1, 1],
            block: [32, 1, 1],
            dynamic_shared: 0,
            cooperative: false,
        };
        let limits = Limits {
            engine: Engine::Jit,
            ..Limits::default()
        };
        let symbols = HashMap::new();
        let run = |mem: &mut DeviceMemory| {
            launch(&m, "stats_probe", &config, &params, &symbols, mem, &limits).unwrap();
        };
        assert_eq!(stats_for(&m.funcs[0]), None, "not launched yet");

        run(&mut mem);
        let first = stats_for(&m.funcs[0]).expect("compiled at the first launch");
        assert_eq!(first.kernel, "stats_probe");
        assert_eq!(first.total_insts, m.funcs[0].code.len());
        assert!(first.compiled_insts > 0 && first.compiled_insts < first.total_insts);
        assert_eq!(first.cache_hits, 0);
        assert_eq!(first.fallback, None);

        run(&mut mem);
        run(&mut mem);
        let later = stats_for(&m.funcs[0]).expect("still there");
        assert_eq!(later.cache_hits, 2, "each later launch is a cache hit");
        assert_eq!(
            later.compile_micros, first.compile_micros,
            "no compile time added after the first launch"
        );
        assert!(stats().iter().any(|s| s.kernel == "stats_probe"));

        let bytes = mem.slice_mut(out, 32 * 4).unwrap().to_vec();
        let lane5 = u32::from_le_bytes(bytes[20..24].try_into().unwrap());
        assert_eq!(lane5, 12, "the compiled code ran");
    }

    #[test]
    fn engine_names_parse() {
        assert_eq!("jit".parse::<Engine>(), Ok(Engine::Jit));
        assert_eq!("interp".parse::<Engine>(), Ok(Engine::Interp));
        assert!("llvm".parse::<Engine>().is_err());
        assert_eq!(Engine::default(), Engine::Interp);
    }
}
