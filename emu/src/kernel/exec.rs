//! The warp interpreter: runs the IR of one warp (32 lanes) instruction by
//! instruction, each instruction for all its active lanes at once.
//!
//! SIMT: every lane of the current call frame has its own pc. The warp runs
//! the group of lanes with the lowest pc; lanes whose pc is higher wait, and
//! rejoin the group when it reaches their pc. Since nvcc lays out structured
//! code with the join point after both sides of a branch and loop exits
//! after the loop body, this reconverges exactly where the hardware does, and
//! warp-level operations (shfl, vote, match, activemask) see exactly the
//! lanes that are converged at that instruction. While the warp is
//! converged (the common case) the per-lane pcs are not touched at all.
//! A call pushes a frame for the calling lanes only; the other lanes of the
//! caller wait for its return.

// The width-generic macros cast every width to u64, including u64 itself.
#![allow(clippy::unnecessary_cast)]

use std::sync::atomic::AtomicI64;
use std::sync::atomic::Ordering::{Relaxed, SeqCst};
use std::time::Instant;

use half::{bf16, f16};

use super::num::{self, f32b, f32v, f64v, fmax, fmin};
use super::printf::{self, PrintfSource};
use crate::memory::{MemoryView, Region};
use crate::ptx::ir::*;
use crate::ptx::{Module, Ty};

#[path = "mbarrier.rs"]
pub(crate) mod mbarrier;
#[path = "tensor.rs"]
mod tensor;
#[path = "texture.rs"]
mod texture;

pub(crate) const FULL: u32 = u32::MAX;

/// Generic-address windows of the per-block and per-thread spaces.
/// Device addresses (global and const) lie below 2^48.
pub const SHARED_WINDOW: u64 = 1 << 48;
/// Generic address of local (per-thread) offset 0.
pub const LOCAL_WINDOW: u64 = 2 << 48;
/// Generic address of kernel-parameter offset 0.
pub const PARAM_WINDOW: u64 = 3 << 48;
const WINDOW_SIZE: u64 = 1 << 48;

/// Deepest call chain.
const MAX_DEPTH: usize = 4096;
/// Most register values of one warp's call chain (32 MiB).
const REG_LIMIT: usize = 4 << 20;
/// Most local memory per thread (frames of the whole call chain).
pub(crate) const LOCAL_LIMIT: usize = 256 << 10;

/// Launch-wide, read-only state shared by all workers.
pub(crate) struct Ctx<'a, 'm> {
    pub(crate) module: &'a Module,
    pub(crate) kernel: u32,
    /// Resolved constant slots of each function.
    pub(crate) consts: Vec<Vec<(u32, u64)>>,
    pub(crate) view: &'a MemoryView<'m>,
    pub(crate) params: &'a [u8],
    pub(crate) grid: [u32; 3],
    pub(crate) block: [u32; 3],
    pub(crate) shared_bytes: u32,
    pub(crate) dyn_shared: u32,
    pub(crate) nwarps: u32,
    pub(crate) nworkers: u32,
    /// Kernels this grid launches (dynamic parallelism).
    pub(crate) device_launches: super::device_launch::DeviceLaunches,
    /// Device address of the cooperative-groups grid workspace; 0 unless
    /// the launch is cooperative (then `grid.sync()` traps, as in CUDA).
    pub(crate) grid_workspace: u64,
    pub(crate) start: Instant,
    /// Bytes of `printf` output the launch may still produce.
    pub(crate) printf_left: AtomicI64,
    /// The kernel's compiled code (engine `jit`), if the compiler took any.
    pub(crate) jit: Option<std::sync::Arc<crate::jit::Compiled>>,
}

/// Per-block mutable state owned by the worker that runs the block.
pub(crate) struct BlockEnv<'m> {
    pub(crate) shared: Vec<u8>,
    pub(crate) printf: Vec<u8>,
    pub(crate) ctaid: [u32; 3],
    pub(crate) cache: Option<Region<'m>>,
    pub(crate) insts: u64,
    pub(crate) bar_popc: u32,
    pub(crate) bar_and: bool,
    pub(crate) bar_or: bool,
    /// The 16 numbered barriers used with thread counts.
    pub(crate) named: mbarrier::NamedBars,
    pub(crate) worker: u32,
}

/// What stopped a warp with an error.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ExcKind {
    Illegal,
    Misaligned,
    Trap,
    Assert,
    StackOverflow,
    Unsupported,
}

/// A warp's error, with where it happened.
#[derive(Debug)]
pub(crate) struct Exc {
    pub(crate) kind: ExcKind,
    pub(crate) lane: u32,
    pub(crate) addr: u64,
    pub(crate) size: u32,
    pub(crate) space: Msp,
    pub(crate) func: u32,
    pub(crate) pc: u32,
    pub(crate) msg: String,
}

impl Exc {
    fn new(kind: ExcKind, lane: usize) -> Box<Exc> {
        Box::new(Exc {
            kind,
            lane: lane as u32,
            addr: 0,
            size: 0,
            space: Msp::Generic,
            func: 0,
            pc: 0,
            msg: String::new(),
        })
    }

    fn mem(kind: ExcKind, lane: usize, addr: u64, size: u32, space: Msp) -> Box<Exc> {
        let mut e = Exc::new(kind, lane);
        e.addr = addr;
        e.size = size;
        e.space = space;
        e
    }
}

type Res<T> = Result<T, Box<Exc>>;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum WState {
    Running,
    Barrier,
    Done,
}

pub(crate) enum Status {
    Yield,
    Barrier,
    Done,
}

/// SIMT control state of the current frame.
#[derive(Debug, Clone)]
pub(crate) struct Ctl {
    pub(crate) pc: u32,
    pub(crate) mask: u32,
    /// Lanes of this frame that have not returned or exited.
    pub(crate) live: u32,
    /// Lanes waiting at a barrier.
    pub(crate) blocked: u32,
    /// Live lanes outside `mask` that are not blocked exist.
    pub(crate) split: bool,
    /// Lowest pc among them.
    pub(crate) next_pc: u32,
    /// Per-lane pcs; valid for lanes outside `mask`.
    pub(crate) pcs: [u32; 32],
}

#[inline(always)]
fn lanes_of(mut m: u32) -> impl Iterator<Item = usize> {
    std::iter::from_fn(move || {
        if m == 0 {
            None
        } else {
            let l = m.trailing_zeros() as usize;
            m &= m - 1;
            Some(l)
        }
    })
}

impl Ctl {
    fn new(mask: u32) -> Ctl {
        Ctl {
            pc: 0,
            mask,
            live: mask,
            blocked: 0,
            split: false,
            next_pc: u32::MAX,
            pcs: [0; 32],
        }
    }

    /// Stores the current group's pc into its lanes' slots.
    #[inline]
    fn sync(&mut self) {
        for l in lanes_of(self.mask) {
            self.pcs[l] = self.pc;
        }
    }

    /// Picks the runnable lanes with the lowest pc.
    fn reschedule(&mut self) {
        let run = self.live & !self.blocked;
        if run == 0 {
            self.mask = 0;
            self.split = false;
            return;
        }
        let mut min = u32::MAX;
        for l in lanes_of(run) {
            min = min.min(self.pcs[l]);
        }
        let mut mask = 0;
        let mut next = u32::MAX;
        for l in lanes_of(run) {
            let p = self.pcs[l];
            if p == min {
                mask |= 1 << l;
            } else {
                next = next.min(p);
            }
        }
        self.pc = min;
        self.mask = mask;
        self.split = next != u32::MAX;
        self.next_pc = next;
    }
}

/// Per-thread local memory of a warp: one region of `stride` bytes per lane.
#[derive(Debug, Default)]
pub(crate) struct Local {
    data: Vec<u8>,
    stride: usize,
    /// Bytes in use (frames of the current call chain).
    top: u32,
}

impl Local {
    fn reset(&mut self, top: u32) {
        let want = (top as usize).max(self.stride).max(16);
        if self.stride != want || self.data.len() != 32 * want {
            self.stride = want;
            self.data.clear();
            self.data.resize(32 * want, 0);
        } else {
            // Only the bytes the kernel frame uses need clearing.
            for l in 0..32 {
                let b = l * self.stride;
                self.data[b..b + top as usize].fill(0);
            }
        }
        self.top = top;
    }

    /// Makes room for `top` bytes per lane; false when over the limit.
    fn ensure(&mut self, top: u32) -> bool {
        let need = top as usize;
        if need > self.stride {
            if need > LOCAL_LIMIT {
                return false;
            }
            let stride = need.max(self.stride * 2).min(LOCAL_LIMIT);
            let mut data = vec![0u8; 32 * stride];
            for l in 0..32 {
                let old = &self.data[l * self.stride..(l + 1) * self.stride];
                data[l * stride..l * stride + self.stride].copy_from_slice(old);
            }
            self.data = data;
            self.stride = stride;
        }
        self.top = top;
        true
    }

    #[inline]
    fn bytes(&self, lane: usize, off: u64, size: u64) -> Option<&[u8]> {
        if off.checked_add(size)? > u64::from(self.top) {
            return None;
        }
        let b = lane * self.stride + off as usize;
        self.data.get(b..b + size as usize)
    }

    #[inline]
    fn bytes_mut(&mut self, lane: usize, off: u64, size: u64) -> Option<&mut [u8]> {
        if off.checked_add(size)? > u64::from(self.top) {
            return None;
        }
        let b = lane * self.stride + off as usize;
        self.data.get_mut(b..b + size as usize)
    }

    fn copy_lane(&mut self, lane: usize, from: u32, to: u32, n: u32) {
        let b = lane * self.stride;
        let (from, to, n) = (from as usize, to as usize, n as usize);
        if from + n <= self.stride && to + n <= self.stride {
            self.data.copy_within(b + from..b + from + n, b + to);
        }
    }
}

#[derive(Debug)]
struct Saved {
    func: u32,
    rbase: usize,
    pbase: usize,
    lbase: u32,
    ctl: Ctl,
    site: u32,
    callee_mask: u32,
}

/// One warp of a block.
#[derive(Debug)]
pub(crate) struct Warp {
    pub(crate) id: u32,
    /// tid.x, tid.y, tid.z of each lane.
    pub(crate) tid: [[u32; 32]; 3],
    /// Lanes that exist (the last warp of a block may be partial).
    pub(crate) exists: u32,
    pub(crate) func: u32,
    rbase: usize,
    pbase: usize,
    lbase: u32,
    pub(crate) ctl: Ctl,
    pub(crate) exited: u32,
    frames: Vec<Saved>,
    regs: Vec<u64>,
    preds: Vec<u32>,
    local: Local,
    pub(crate) state: WState,
    /// Destination of a pending `bar.red` (slot, kind).
    bar_red: Option<(u32, Bar)>,
    /// The counted barrier the warp waits at: (number, generation).
    pub(crate) bar_wait: Option<(u8, u32)>,
}

impl Warp {
    pub(crate) fn new() -> Warp {
        Warp {
            id: 0,
            tid: [[0; 32]; 3],
            exists: 0,
            func: 0,
            rbase: 0,
            pbase: 0,
            lbase: 0,
            ctl: Ctl::new(0),
            exited: 0,
            frames: Vec::new(),
            regs: Vec::new(),
            preds: Vec::new(),
            local: Local::default(),
            state: WState::Done,
            bar_red: None,
            bar_wait: None,
        }
    }

    /// Sets the warp up to run the kernel from its first instruction.
    pub(crate) fn start(&mut self, cx: &Ctx<'_, '_>, id: u32) {
        self.id = id;
        let [bx, by, _] = cx.block;
        let nthreads = cx.block.iter().product::<u32>();
        let first = id * 32;
        self.exists = match nthreads.saturating_sub(first) {
            n if n >= 32 => u32::MAX,
            n => (1u32 << n) - 1,
        };
        // Divide once and count up: 96 divisions per warp were a sixth of
        // a short kernel's time.
        let (mut x, mut y, mut z) = (first % bx, (first / bx) % by, first / (bx * by));
        for l in 0..32 {
            self.tid[0][l] = x;
            self.tid[1][l] = y;
            self.tid[2][l] = z;
            x += 1;
            if x == bx {
                x = 0;
                y += 1;
                if y == by {
                    y = 0;
                    z += 1;
                }
            }
        }
        let f = &cx.module.funcs[cx.kernel as usize];
        self.func = cx.kernel;
        self.frames.clear();
        self.rbase = 0;
        self.pbase = 0;
        self.lbase = 0;
        self.regs.clear();
        self.regs.resize(f.nslots as usize * 32, 0);
        self.fill_consts(cx);
        self.preds.clear();
        self.preds.resize(f.npreds as usize, 0);
        self.local.reset(f.frame_size);
        self.ctl = Ctl::new(self.exists);
        self.exited = 0;
        self.state = WState::Running;
        self.bar_red = None;
        self.bar_wait = None;
    }

    fn fill_consts(&mut self, cx: &Ctx<'_, '_>) {
        if let Some(consts) = cx.consts.get(self.func as usize) {
            for &(slot, v) in consts {
                let b = self.rbase + slot as usize * 32;
                if let Some(s) = self.regs.get_mut(b..b + 32) {
                    s.fill(v);
                }
            }
        }
    }

    /// Releases the warp from a barrier; `bar.red` lanes get the result.
    pub(crate) fn release(&mut self, popc: u32, all: bool, any: bool) {
        if let Some((d, kind)) = self.bar_red.take() {
            let lanes = self.ctl.blocked;
            match kind {
                Bar::Popc => {
                    let b = self.rbase + d as usize * 32;
                    for l in lanes_of(lanes) {
                        if let Some(x) = self.regs.get_mut(b + l) {
                            *x = u64::from(popc);
                        }
                    }
                }
                Bar::And | Bar::Or => {
                    let v = if kind == Bar::And { all } else { any };
                    if let Some(x) = self.preds.get_mut(self.pbase + d as usize) {
                        *x = if v { *x | lanes } else { *x & !lanes };
                    }
                }
                _ => {}
            }
        }
        self.ctl.blocked = 0;
        for f in &mut self.frames {
            f.ctl.blocked = 0;
        }
        self.ctl.reschedule();
        self.state = WState::Running;
        self.bar_wait = None;
    }

    /// Whether the counted barrier the warp waits at has completed.
    pub(crate) fn counted_wait_over(&self, env: &BlockEnv<'_>) -> bool {
        self.bar_wait
            .is_some_and(|(id, gen)| env.named.gen(id) != gen)
    }

    fn push_frame(&mut self, cx: &Ctx<'_, '_>, site_idx: u32, mut m: u32) -> Res<()> {
        let caller = &cx.module.funcs[self.func as usize];
        let Some(site) = caller.calls.get(site_idx as usize) else {
            return Err(Exc::new(ExcKind::Unsupported, 0));
        };
        // Lanes that call another function than the first lane: they stay at
        // the call and make it after these return (a virtual call on objects
        // of several classes runs one class after another, as on a GPU).
        let mut later = 0u32;
        let g = match site.callee {
            Callee::Func(g) => g,
            Callee::Indirect(reg) => {
                let first = m.trailing_zeros() as usize;
                let at = |l: usize| {
                    self.regs
                        .get(self.rbase + reg as usize * 32 + l)
                        .copied()
                        .unwrap_or(0)
                };
                let addr = at(first);
                later = lanes_of(m)
                    .filter(|&l| at(l) != addr)
                    .fold(0, |acc, l| acc | 1 << l);
                m &= !later;
                match crate::ptx::ir::func_of_addr(addr)
                    .filter(|&g| cx.module.funcs.get(g as usize).is_some_and(|f| !f.is_entry))
                {
                    Some(g) => g,
                    None => {
                        let mut e = Exc::new(ExcKind::Illegal, first);
                        e.addr = addr;
                        e.msg = format!("indirect call to {addr:#x}, which is no function");
                        return Err(e);
                    }
                }
            }
            _ => return Err(Exc::new(ExcKind::Unsupported, 0)),
        };
        let callee = &cx.module.funcs[g as usize];
        let overflow = || {
            let mut e = Exc::new(ExcKind::StackOverflow, m.trailing_zeros() as usize);
            e.msg = format!("call depth {} to {}", self.frames.len() + 1, callee.name);
            e
        };
        let regs_needed = self.regs.len() + callee.nslots as usize * 32;
        if self.frames.len() >= MAX_DEPTH || regs_needed > REG_LIMIT {
            return Err(overflow());
        }
        let new_lbase = self.lbase + caller.frame_size;
        let Some(new_top) = new_lbase.checked_add(callee.frame_size) else {
            return Err(overflow());
        };
        if !self.local.ensure(new_top) {
            return Err(overflow());
        }
        for (k, &(aoff, asize)) in site.args.iter().enumerate() {
            let Some(&(poff, psize)) = callee.params.get(k) else {
                break;
            };
            let n = asize.min(psize);
            for l in lanes_of(m) {
                self.local
                    .copy_lane(l, self.lbase + aoff, new_lbase + poff, n);
            }
        }
        let mut saved = self.ctl.clone();
        let call_pc = saved.pc;
        saved.pc += 1;
        saved.sync();
        for l in lanes_of(later) {
            saved.pcs[l] = call_pc;
        }
        self.frames.push(Saved {
            func: self.func,
            rbase: self.rbase,
            pbase: self.pbase,
            lbase: self.lbase,
            ctl: saved,
            site: site_idx,
            callee_mask: m,
        });
        self.func = g;
        self.rbase = self.regs.len();
        self.regs
            .resize(self.rbase + callee.nslots as usize * 32, 0);
        self.fill_consts(cx);
        self.pbase = self.preds.len();
        self.preds.resize(self.pbase + callee.npreds as usize, 0);
        self.lbase = new_lbase;
        self.ctl = Ctl::new(m);
        Ok(())
    }

    fn pop_frame(&mut self, cx: &Ctx<'_, '_>) {
        let Some(s) = self.frames.pop() else { return };
        let callee = &cx.module.funcs[self.func as usize];
        let caller = &cx.module.funcs[s.func as usize];
        let returned = s.callee_mask & !self.exited;
        if let Some(site) = caller.calls.get(s.site as usize) {
            for (k, &(roff, rsize)) in site.rets.iter().enumerate() {
                if let Some(&(coff, csize)) = callee.rets.get(k) {
                    for l in lanes_of(returned) {
                        self.local.copy_lane(
                            l,
                            self.lbase + coff,
                            s.lbase + roff,
                            rsize.min(csize),
                        );
                    }
                }
            }
        }
        self.regs.truncate(self.rbase);
        self.preds.truncate(self.pbase);
        self.local.top = self.lbase;
        self.func = s.func;
        self.rbase = s.rbase;
        self.pbase = s.pbase;
        self.lbase = s.lbase;
        self.ctl = s.ctl;
        self.ctl.live &= !self.exited;
        self.ctl.blocked &= !self.exited;
        self.ctl.reschedule();
    }
}

// ---- lane helpers -------------------------------------------------------

#[inline(always)]
fn get(r: &[u64], s: R) -> [u64; 32] {
    let i = s as usize * 32;
    let mut o = [0u64; 32];
    o.copy_from_slice(&r[i..i + 32]);
    o
}

#[inline(always)]
fn put(r: &mut [u64], d: R, m: u32, v: &[u64; 32]) {
    let i = d as usize * 32;
    let dst = &mut r[i..i + 32];
    if m == FULL {
        dst.copy_from_slice(v);
    } else {
        for l in lanes_of(m) {
            dst[l] = v[l];
        }
    }
}

#[inline(always)]
fn set_lane(r: &mut [u64], d: R, l: usize, v: u64) {
    r[d as usize * 32 + l] = v;
}

#[inline(always)]
fn pmask(p: &[u32], g: u32) -> u32 {
    let v = p[(g & !GUARD_NEG) as usize];
    if g & GUARD_NEG != 0 {
        !v
    } else {
        v
    }
}

#[inline(always)]
/// Per lane of `m`, the lanes it runs a `.sync` warp instruction with: its
/// member mask (register `mask`) among the lanes running it now, so that
/// disjoint groups converged on one instruction each see only their own
/// members. Without a mask, all of `m`.
fn member_groups(r: &[u64], mask: R, m: u32) -> [u32; 32] {
    if mask == NONE {
        return [m; 32];
    }
    let mv = get(r, mask);
    let mut g = [0u32; 32];
    for l in lanes_of(m) {
        g[l] = (mv[l] as u32) & m;
    }
    g
}

fn pset(p: &mut [u32], d: P, m: u32, v: u32) {
    let x = &mut p[d as usize];
    *x = (*x & !m) | (v & m);
}

macro_rules! un {
    ($r:ident, $m:ident, $d:expr, $a:expr, |$x:ident| $e:expr) => {{
        let av = get($r, $a);
        let mut o = [0u64; 32];
        for l in 0..32 {
            let $x = av[l];
            o[l] = $e;
        }
        put($r, $d, $m, &o);
    }};
}

macro_rules! bin {
    ($r:ident, $m:ident, $d:expr, $a:expr, $b:expr, |$x:ident, $y:ident| $e:expr) => {{
        let av = get($r, $a);
        let bv = get($r, $b);
        let mut o = [0u64; 32];
        for l in 0..32 {
            let $x = av[l];
            let $y = bv[l];
            o[l] = $e;
        }
        put($r, $d, $m, &o);
    }};
}

macro_rules! tern {
    ($r:ident, $m:ident, $d:expr, $a:expr, $b:expr, $c:expr, |$x:ident, $y:ident, $z:ident| $e:expr) => {{
        let av = get($r, $a);
        let bv = get($r, $b);
        let cv = get($r, $c);
        let mut o = [0u64; 32];
        for l in 0..32 {
            let $x = av[l];
            let $y = bv[l];
            let $z = cv[l];
            o[l] = $e;
        }
        put($r, $d, $m, &o);
    }};
}

/// Integer binary op dispatched on width: `$x`, `$y` typed, `$yr` raw.
macro_rules! ibin {
    ($r:ident, $m:ident, $w:expr, $d:expr, $a:expr, $b:expr, |$x:ident, $y:ident, $yr:ident| $e:expr) => {
        num::by_width!($w, |_x: T, U| bin!($r, $m, $d, $a, $b, |xa, yb| {
            let $x = xa as T;
            let $y = yb as T;
            let $yr = yb;
            let _ = $yr;
            $e
        }))
    };
}

// ---- memory ---------------------------------------------------------------

/// The memory a warp's instructions reach.
struct Mem<'e, 'a, 'm> {
    view: &'a MemoryView<'m>,
    cache: &'e mut Option<Region<'m>>,
    shared: &'e mut [u8],
    local: &'e mut Local,
    params: &'a [u8],
}

#[inline(always)]
fn rd(b: &[u8], size: u8) -> u64 {
    match size {
        1 => u64::from(b[0]),
        2 => u64::from(u16::from_le_bytes([b[0], b[1]])),
        4 => u64::from(u32::from_le_bytes([b[0], b[1], b[2], b[3]])),
        _ => u64::from_le_bytes([b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7]]),
    }
}

#[inline(always)]
fn wr(b: &mut [u8], size: u8, v: u64) {
    b.copy_from_slice(&v.to_le_bytes()[..size as usize]);
}

#[inline(always)]
fn sext(v: u64, size: u8) -> u64 {
    match size {
        1 => v as i8 as i64 as u64,
        2 => v as i16 as i64 as u64,
        4 => v as i32 as i64 as u64,
        _ => v,
    }
}

/// Resolves a generic address to (space, space address).
#[inline(always)]
fn decode(addr: u64) -> (Msp, u64) {
    match addr / WINDOW_SIZE {
        0 => (Msp::Global, addr),
        1 => (Msp::Shared, addr - SHARED_WINDOW),
        2 => (Msp::Local, addr - LOCAL_WINDOW),
        3 => (Msp::Param, addr - PARAM_WINDOW),
        _ => (Msp::Generic, addr),
    }
}

impl<'m> Mem<'_, '_, 'm> {
    #[inline(always)]
    fn region(&mut self, addr: u64, size: u64) -> Option<Region<'m>> {
        if let Some(r) = *self.cache {
            if r.contains(addr, size) {
                return Some(r);
            }
        }
        let r = self.view.region(addr)?;
        *self.cache = Some(r);
        Some(r)
    }

    fn fault(&mut self, sp: Msp, addr: u64, size: u8, lane: usize) -> Box<Exc> {
        let aligned = addr.is_multiple_of(u64::from(size));
        let kind = if !aligned && self.in_bounds(sp, addr, u64::from(size)) {
            ExcKind::Misaligned
        } else {
            ExcKind::Illegal
        };
        Exc::mem(kind, lane, addr, u32::from(size), sp)
    }

    fn in_bounds(&mut self, sp: Msp, addr: u64, size: u64) -> bool {
        match sp {
            Msp::Global | Msp::Const => self.region(addr, size).is_some(),
            Msp::Shared => addr
                .checked_add(size)
                .is_some_and(|e| e <= self.shared.len() as u64),
            Msp::Local => self.local.bytes(0, addr, size).is_some(),
            Msp::Frame => self.local.bytes(0, addr, size).is_some(),
            Msp::Param => addr
                .checked_add(size)
                .is_some_and(|e| e <= self.params.len() as u64),
            Msp::Generic => {
                let (s, a) = decode(addr);
                s != Msp::Generic && self.in_bounds(s, a, size)
            }
        }
    }

    #[inline(always)]
    fn load(&mut self, sp: Msp, addr: u64, size: u8, lane: usize) -> Res<u64> {
        let v = match sp {
            Msp::Global | Msp::Const => self.load_global(addr, size),
            Msp::Shared => {
                if !addr.is_multiple_of(u64::from(size)) {
                    None
                } else {
                    usize::try_from(addr)
                        .ok()
                        .and_then(|a| self.shared.get(a..a + usize::from(size)))
                        .map(|b| rd(b, size))
                }
            }
            Msp::Local | Msp::Frame => {
                if !addr.is_multiple_of(u64::from(size)) {
                    None
                } else {
                    self.local
                        .bytes(lane, addr, u64::from(size))
                        .map(|b| rd(b, size))
                }
            }
            Msp::Param => usize::try_from(addr)
                .ok()
                .and_then(|a| self.params.get(a..a + usize::from(size)))
                .map(|b| rd(b, size)),
            Msp::Generic => {
                let (s, a) = decode(addr);
                if s == Msp::Generic {
                    None
                } else {
                    return self
                        .load(s, a, size, lane)
                        .map_err(|_| self.fault(Msp::Generic, addr, size, lane));
                }
            }
        };
        match v {
            Some(v) => Ok(v),
            None => Err(self.fault(sp, addr, size, lane)),
        }
    }

    #[inline(always)]
    fn load_global(&mut self, addr: u64, size: u8) -> Option<u64> {
        let r = self.region(addr, u64::from(size))?;
        match size {
            1 => r.atomic_u8(addr).map(|a| u64::from(a.load(Relaxed))),
            2 => r.atomic_u16(addr).map(|a| u64::from(a.load(Relaxed))),
            4 => r.atomic_u32(addr).map(|a| u64::from(a.load(Relaxed))),
            _ => r.atomic_u64(addr).map(|a| a.load(Relaxed)),
        }
    }

    /// A vector of `total` (8 or 16) bytes of global memory as one access,
    /// as on hardware: a racing store is never seen half done (CUB's
    /// decoupled look-back relies on it). `None` when the address is not
    /// global, aligned and inside one allocation: the caller then goes
    /// element by element and reports the fault.
    fn load_vector(&mut self, sp: Msp, addr: u64, total: u64) -> Option<u128> {
        let addr = self.global_address(sp, addr)?;
        let r = self.region(addr, total)?;
        match total {
            8 => r.atomic_u64(addr).map(|a| u128::from(a.load(Relaxed))),
            16 => r.atomic_u128(addr).map(|a| a.load(Relaxed)),
            _ => None,
        }
    }

    /// The store of [`Mem::load_vector`].
    fn store_vector(&mut self, sp: Msp, addr: u64, total: u64, v: u128) -> Option<()> {
        let addr = self.global_address(sp, addr)?;
        let r = self.region(addr, total)?;
        match total {
            8 => r.atomic_u64(addr).map(|a| a.store(v as u64, Relaxed)),
            16 => r.atomic_u128(addr).map(|a| a.store(v, Relaxed)),
            _ => None,
        }
    }

    /// `addr` of space `sp` as a global address, if it is one.
    fn global_address(&self, sp: Msp, addr: u64) -> Option<u64> {
        match sp {
            Msp::Global => Some(addr),
            Msp::Generic => match decode(addr) {
                (Msp::Global, a) => Some(a),
                _ => None,
            },
            _ => None,
        }
    }

    #[inline(always)]
    fn store(&mut self, sp: Msp, addr: u64, size: u8, v: u64, lane: usize) -> Res<()> {
        let ok = match sp {
            Msp::Global => self.store_global(addr, size, v),
            Msp::Shared => {
                if !addr.is_multiple_of(u64::from(size)) {
                    None
                } else {
                    usize::try_from(addr)
                        .ok()
                        .and_then(|a| self.shared.get_mut(a..a + usize::from(size)))
                        .map(|b| wr(b, size, v))
                }
            }
            Msp::Local | Msp::Frame => {
                if !addr.is_multiple_of(u64::from(size)) {
                    None
                } else {
                    self.local
                        .bytes_mut(lane, addr, u64::from(size))
                        .map(|b| wr(b, size, v))
                }
            }
            // Constant and kernel-parameter memory are read-only.
            Msp::Const | Msp::Param => None,
            Msp::Generic => {
                let (s, a) = decode(addr);
                if s == Msp::Generic || s == Msp::Param {
                    None
                } else {
                    return self
                        .store(s, a, size, v, lane)
                        .map_err(|_| self.fault(Msp::Generic, addr, size, lane));
                }
            }
        };
        match ok {
            Some(()) => Ok(()),
            None => Err(self.fault(sp, addr, size, lane)),
        }
    }

    #[inline(always)]
    fn store_global(&mut self, addr: u64, size: u8, v: u64) -> Option<()> {
        let r = self.region(addr, u64::from(size))?;
        match size {
            1 => r.atomic_u8(addr).map(|a| a.store(v as u8, Relaxed)),
            2 => r.atomic_u16(addr).map(|a| a.store(v as u16, Relaxed)),
            4 => r.atomic_u32(addr).map(|a| a.store(v as u32, Relaxed)),
            _ => r.atomic_u64(addr).map(|a| a.store(v, Relaxed)),
        }
    }

    /// An atomic read-modify-write; returns the old value.
    #[allow(clippy::too_many_arguments)]
    fn atom(
        &mut self,
        sp: Msp,
        addr: u64,
        op: AtomOp,
        ty: AtomTy,
        b: u64,
        c: u64,
        lane: usize,
    ) -> Res<u64> {
        let size: u8 = match ty {
            AtomTy::F16 | AtomTy::BF16 => 2,
            AtomTy::U32 | AtomTy::S32 | AtomTy::F32 | AtomTy::F16x2 | AtomTy::BF16x2 => 4,
            _ => 8,
        };
        let (sp, a) = match sp {
            Msp::Generic => decode(addr),
            s => (s, addr),
        };
        let res = match sp {
            Msp::Global => self.atom_global(a, size, op, ty, b, c),
            Msp::Shared | Msp::Local => {
                let old = self.load(sp, a, size, lane).ok();
                match old {
                    Some(old) => {
                        let new = atom_new(op, ty, old, b, c);
                        self.store(sp, a, size, new, lane).ok().map(|_| old)
                    }
                    None => None,
                }
            }
            _ => None,
        };
        match res {
            Some(v) => Ok(v),
            None => Err(self.fault(sp, a, size, lane)),
        }
    }

    fn atom_global(
        &mut self,
        addr: u64,
        size: u8,
        op: AtomOp,
        ty: AtomTy,
        b: u64,
        c: u64,
    ) -> Option<u64> {
        let r = self.region(addr, u64::from(size))?;
        if size == 2 {
            let a = r.atomic_u16(addr)?;
            let old = match a.fetch_update(SeqCst, SeqCst, |old| {
                Some(atom_new(op, ty, u64::from(old), b, c) as u16)
            }) {
                Ok(v) | Err(v) => v,
            };
            return Some(u64::from(old));
        }
        if size == 4 {
            let a = r.atomic_u32(addr)?;
            let (b32, c32) = (b as u32, c as u32);
            let int = matches!(ty, AtomTy::U32 | AtomTy::S32);
            let old = match op {
                AtomOp::Add if int => a.fetch_add(b32, SeqCst),
                AtomOp::And => a.fetch_and(b32, SeqCst),
                AtomOp::Or => a.fetch_or(b32, SeqCst),
                AtomOp::Xor => a.fetch_xor(b32, SeqCst),
                AtomOp::Exch => a.swap(b32, SeqCst),
                AtomOp::Min if ty == AtomTy::U32 => a.fetch_min(b32, SeqCst),
                AtomOp::Max if ty == AtomTy::U32 => a.fetch_max(b32, SeqCst),
                AtomOp::Cas => match a.compare_exchange(b32, c32, SeqCst, SeqCst) {
                    Ok(v) | Err(v) => v,
                },
                _ => {
                    match a.fetch_update(SeqCst, SeqCst, |old| {
                        Some(atom_new(op, ty, u64::from(old), b, c) as u32)
                    }) {
                        Ok(v) | Err(v) => v,
                    }
                }
            };
            Some(u64::from(old))
        } else {
            let a = r.atomic_u64(addr)?;
            let int = matches!(ty, AtomTy::U64 | AtomTy::S64);
            let old = match op {
                AtomOp::Add if int => a.fetch_add(b, SeqCst),
                AtomOp::And => a.fetch_and(b, SeqCst),
                AtomOp::Or => a.fetch_or(b, SeqCst),
                AtomOp::Xor => a.fetch_xor(b, SeqCst),
                AtomOp::Exch => a.swap(b, SeqCst),
                AtomOp::Min if ty == AtomTy::U64 => a.fetch_min(b, SeqCst),
                AtomOp::Max if ty == AtomTy::U64 => a.fetch_max(b, SeqCst),
                AtomOp::Cas => match a.compare_exchange(b, c, SeqCst, SeqCst) {
                    Ok(v) | Err(v) => v,
                },
                _ => {
                    match a.fetch_update(SeqCst, SeqCst, |old| Some(atom_new(op, ty, old, b, c))) {
                        Ok(v) | Err(v) => v,
                    }
                }
            };
            Some(old)
        }
    }

    /// Reads a NUL-terminated string at a generic address.
    fn cstr(&mut self, addr: u64, max: usize, lane: usize) -> Res<Vec<u8>> {
        let mut out = Vec::new();
        for i in 0..max as u64 {
            let b = self.load(Msp::Generic, addr.wrapping_add(i), 1, lane)? as u8;
            if b == 0 {
                break;
            }
            out.push(b);
        }
        Ok(out)
    }
}

/// The new value of an atomic, from the old one.
pub(crate) fn atom_new(op: AtomOp, ty: AtomTy, old: u64, b: u64, c: u64) -> u64 {
    match ty {
        AtomTy::U32 | AtomTy::S32 => {
            let (o, b, c) = (old as u32, b as u32, c as u32);
            u64::from(match op {
                AtomOp::Add => o.wrapping_add(b),
                AtomOp::Min if ty == AtomTy::S32 => (o as i32).min(b as i32) as u32,
                AtomOp::Max if ty == AtomTy::S32 => (o as i32).max(b as i32) as u32,
                AtomOp::Min => o.min(b),
                AtomOp::Max => o.max(b),
                AtomOp::And => o & b,
                AtomOp::Or => o | b,
                AtomOp::Xor => o ^ b,
                AtomOp::Exch => b,
                AtomOp::Cas => {
                    if o == b {
                        c
                    } else {
                        o
                    }
                }
                AtomOp::Inc => {
                    if o >= b {
                        0
                    } else {
                        o + 1
                    }
                }
                AtomOp::Dec => {
                    if o == 0 || o > b {
                        b
                    } else {
                        o - 1
                    }
                }
            })
        }
        AtomTy::U64 | AtomTy::S64 => match op {
            AtomOp::Add => old.wrapping_add(b),
            AtomOp::Min if ty == AtomTy::S64 => (old as i64).min(b as i64) as u64,
            AtomOp::Max if ty == AtomTy::S64 => (old as i64).max(b as i64) as u64,
            AtomOp::Min => old.min(b),
            AtomOp::Max => old.max(b),
            AtomOp::And => old & b,
            AtomOp::Or => old | b,
            AtomOp::Xor => old ^ b,
            AtomOp::Exch => b,
            AtomOp::Cas => {
                if old == b {
                    c
                } else {
                    old
                }
            }
            AtomOp::Inc => {
                if old >= b {
                    0
                } else {
                    old + 1
                }
            }
            AtomOp::Dec => {
                if old == 0 || old > b {
                    b
                } else {
                    old - 1
                }
            }
        },
        AtomTy::F32 => {
            let (o, x) = (f32v(old), f32v(b));
            f32b(match op {
                AtomOp::Add => o + x,
                AtomOp::Min => fmin(o, x),
                AtomOp::Max => fmax(o, x),
                AtomOp::Exch => x,
                AtomOp::Cas => {
                    return if old as u32 == b as u32 { c } else { old };
                }
                _ => o,
            })
        }
        AtomTy::F16 | AtomTy::BF16 | AtomTy::F16x2 | AtomTy::BF16x2 => {
            let (pairs, brain) = match ty {
                AtomTy::F16 => (1, false),
                AtomTy::BF16 => (1, true),
                AtomTy::F16x2 => (2, false),
                _ => (2, true),
            };
            halves(old, b, 0, pairs, brain, |x, y, _| x + y)
        }
        AtomTy::F64 => {
            let (o, x) = (f64v(old), f64v(b));
            match op {
                AtomOp::Add => (o + x).to_bits(),
                AtomOp::Min => fmin(o, x).to_bits(),
                AtomOp::Max => fmax(o, x).to_bits(),
                AtomOp::Exch => b,
                AtomOp::Cas => {
                    if old == b {
                        c
                    } else {
                        old
                    }
                }
                _ => old,
            }
        }
    }
}

struct ArgSource<'x, 'e, 'a, 'm> {
    mem: &'x mut Mem<'e, 'a, 'm>,
    lane: usize,
    base: u64,
    err: Option<Box<Exc>>,
}

impl PrintfSource for ArgSource<'_, '_, '_, '_> {
    fn arg(&mut self, off: u64, size: u32) -> Option<u64> {
        let addr = self.base.wrapping_add(off);
        match self.mem.load(Msp::Generic, addr, size as u8, self.lane) {
            Ok(v) => Some(v),
            Err(e) => {
                self.err = Some(e);
                None
            }
        }
    }

    fn cstr(&mut self, addr: u64, max: usize) -> Option<Vec<u8>> {
        match self.mem.cstr(addr, max, self.lane) {
            Ok(v) => Some(v),
            Err(e) => {
                self.err = Some(e);
                None
            }
        }
    }
}

// ---- floating point -------------------------------------------------------

fn f2_32(op: F2, rnd: Rnd, ftz: bool, sat: bool, a: u64, b: u64) -> u64 {
    let (mut x, mut y) = (f32v(a), f32v(b));
    if ftz {
        x = num::ftz32(x);
        y = num::ftz32(y);
    }
    let directed = matches!(rnd, Rnd::Rz | Rnd::Rm | Rnd::Rp);
    let mut r = match op {
        F2::Add if directed => num::f64_to_f32(f64::from(x) + f64::from(y), rnd),
        F2::Sub if directed => num::f64_to_f32(f64::from(x) - f64::from(y), rnd),
        F2::Mul if directed => num::f64_to_f32(f64::from(x) * f64::from(y), rnd),
        F2::Div if directed => num::f64_to_f32(num::div64(f64::from(x), f64::from(y), rnd), rnd),
        F2::Add => x + y,
        F2::Sub => x - y,
        F2::Mul => x * y,
        F2::Div | F2::DivApprox => x / y,
        F2::Min => fmin(x, y),
        F2::Max => fmax(x, y),
        F2::MinNaN if x.is_nan() || y.is_nan() => f32::NAN,
        F2::MaxNaN if x.is_nan() || y.is_nan() => f32::NAN,
        F2::MinNaN => fmin(x, y),
        F2::MaxNaN => fmax(x, y),
        F2::Copysign => y.copysign(x),
    };
    if ftz {
        r = num::ftz32(r);
    }
    if sat {
        r = num::sat32(r);
    }
    f32b(r)
}

fn f2_64(op: F2, rnd: Rnd, sat: bool, a: u64, b: u64) -> u64 {
    let (x, y) = (f64v(a), f64v(b));
    let mut r = match op {
        F2::Add => num::add64(x, y, rnd),
        F2::Sub => num::add64(x, -y, rnd),
        F2::Mul => num::mul64(x, y, rnd),
        F2::Div => num::div64(x, y, rnd),
        F2::DivApprox => x / y,
        F2::Min => fmin(x, y),
        F2::Max => fmax(x, y),
        F2::MinNaN if x.is_nan() || y.is_nan() => f64::NAN,
        F2::MaxNaN if x.is_nan() || y.is_nan() => f64::NAN,
        F2::MinNaN => fmin(x, y),
        F2::MaxNaN => fmax(x, y),
        F2::Copysign => y.copysign(x),
    };
    if sat {
        r = num::sat64(r);
    }
    r.to_bits()
}

/// A 16-bit float (f16 or bf16) in f32.
#[inline]
fn h2f(x: u16, brain: bool) -> f32 {
    if brain {
        bf16::from_bits(x).to_f32()
    } else {
        f16::from_bits(x).to_f32()
    }
}

#[inline]
fn f2h(x: f32, brain: bool) -> u16 {
    if brain {
        bf16::from_f32(x).to_bits()
    } else {
        f16::from_f32(x).to_bits()
    }
}

/// Applies `f` to each 16-bit half (`pairs` = 2) of a packed value.
fn halves(
    a: u64,
    b: u64,
    c: u64,
    pairs: u32,
    brain: bool,
    f: impl Fn(f32, f32, f32) -> f32,
) -> u64 {
    let mut out = 0u64;
    for k in 0..pairs {
        let sh = 16 * k;
        let x = h2f((a >> sh) as u16, brain);
        let y = h2f((b >> sh) as u16, brain);
        let z = h2f((c >> sh) as u16, brain);
        out |= u64::from(f2h(f(x, y, z), brain)) << sh;
    }
    out
}

fn half_kind(t: Ft) -> (u32, bool) {
    match t {
        Ft::F16 => (1, false),
        Ft::BF16 => (1, true),
        Ft::F16x2 => (2, false),
        _ => (2, true),
    }
}

fn f2_half(op: F2, t: Ft, sat: bool, a: u64, b: u64) -> u64 {
    let (pairs, brain) = half_kind(t);
    halves(a, b, 0, pairs, brain, |x, y, _| {
        let r = match op {
            F2::Add => x + y,
            F2::Sub => x - y,
            F2::Mul => x * y,
            F2::Div | F2::DivApprox => x / y,
            F2::Min => fmin(x, y),
            F2::Max => fmax(x, y),
            F2::MinNaN if x.is_nan() || y.is_nan() => f32::NAN,
            F2::MaxNaN if x.is_nan() || y.is_nan() => f32::NAN,
            F2::MinNaN => fmin(x, y),
            F2::MaxNaN => fmax(x, y),
            F2::Copysign => y.copysign(x),
        };
        if sat {
            num::sat32(r)
        } else {
            r
        }
    })
}

fn f1_32(op: F1, ftz: bool, sat: bool, a: u64) -> u64 {
    let mut x = f32v(a);
    if ftz {
        x = num::ftz32(x);
    }
    let mut r = match op {
        F1::Neg => -x,
        F1::Abs => x.abs(),
        F1::Sqrt | F1::SqrtApprox => x.sqrt(),
        F1::Rsqrt => 1.0 / x.sqrt(),
        F1::Rcp | F1::RcpApprox => 1.0 / x,
        F1::Ex2 => x.exp2(),
        F1::Lg2 => x.log2(),
        F1::Sin => x.sin(),
        F1::Cos => x.cos(),
        F1::Tanh => x.tanh(),
    };
    if ftz {
        r = num::ftz32(r);
    }
    if sat {
        r = num::sat32(r);
    }
    f32b(r)
}

fn f1_64(op: F1, rnd: Rnd, sat: bool, a: u64) -> u64 {
    let x = f64v(a);
    let mut r = match op {
        F1::Neg => -x,
        F1::Abs => x.abs(),
        F1::Sqrt => num::sqrt64(x, rnd),
        F1::SqrtApprox => x.sqrt(),
        F1::Rsqrt => 1.0 / x.sqrt(),
        F1::Rcp => num::div64(1.0, x, rnd),
        F1::RcpApprox => 1.0 / x,
        F1::Ex2 => x.exp2(),
        F1::Lg2 => x.log2(),
        F1::Sin => x.sin(),
        F1::Cos => x.cos(),
        F1::Tanh => x.tanh(),
    };
    if sat {
        r = num::sat64(r);
    }
    r.to_bits()
}

fn f1_half(op: F1, t: Ft, a: u64) -> u64 {
    let (pairs, brain) = half_kind(t);
    if matches!(op, F1::Neg | F1::Abs) {
        // Sign-bit operations: exact on NaNs too.
        let mut out = a;
        for k in 0..pairs {
            let bit = 1u64 << (16 * k + 15);
            out = if op == F1::Neg { out ^ bit } else { out & !bit };
        }
        return out;
    }
    halves(a, 0, 0, pairs, brain, |x, _, _| {
        f32v(f1_32(op, false, false, f32b(x)))
    })
}

fn fma_any(t: Ft, rnd: Rnd, ftz: bool, sat: bool, a: u64, b: u64, c: u64) -> u64 {
    match t {
        Ft::F32 => {
            let (mut x, mut y, mut z) = (f32v(a), f32v(b), f32v(c));
            if ftz {
                x = num::ftz32(x);
                y = num::ftz32(y);
                z = num::ftz32(z);
            }
            let mut r = if matches!(rnd, Rnd::Rz | Rnd::Rm | Rnd::Rp) {
                // The product is exact in f64; one rounding of the sum in
                // f64 then one directed rounding to f32.
                num::f64_to_f32(f64::from(x).mul_add(f64::from(y), f64::from(z)), rnd)
            } else {
                x.mul_add(y, z)
            };
            if ftz {
                r = num::ftz32(r);
            }
            if sat {
                r = num::sat32(r);
            }
            f32b(r)
        }
        Ft::F64 => {
            let r = f64v(a).mul_add(f64v(b), f64v(c));
            (if sat { num::sat64(r) } else { r }).to_bits()
        }
        _ => {
            let (pairs, brain) = half_kind(t);
            halves(a, b, c, pairs, brain, |x, y, z| {
                let r = (f64::from(x) * f64::from(y) + f64::from(z)) as f32;
                if sat {
                    num::sat32(r)
                } else {
                    r
                }
            })
        }
    }
}

fn testp(op: Testp, t: Ft, a: u64) -> bool {
    let v = match t {
        Ft::F64 => f64v(a),
        Ft::F32 => f64::from(f32v(a)),
        _ => {
            let (_, brain) = half_kind(t);
            f64::from(h2f(a as u16, brain))
        }
    };
    let sub = match t {
        Ft::F32 => f32v(a).is_subnormal(),
        Ft::F64 => v.is_subnormal(),
        _ => false,
    };
    match op {
        Testp::Finite => v.is_finite(),
        Testp::Infinite => v.is_infinite(),
        Testp::Number => !v.is_nan(),
        Testp::NotANumber => v.is_nan(),
        Testp::Normal => v.is_finite() && v != 0.0 && !sub,
        Testp::Subnormal => sub,
    }
}

#[inline(always)]
fn cmp_u(c: Cmp, x: u64, y: u64) -> bool {
    match c {
        Cmp::Eq | Cmp::Equ => x == y,
        Cmp::Ne | Cmp::Neu => x != y,
        Cmp::Lt | Cmp::Lo | Cmp::Ltu => x < y,
        Cmp::Le | Cmp::Ls | Cmp::Leu => x <= y,
        Cmp::Gt | Cmp::Hi | Cmp::Gtu => x > y,
        Cmp::Ge | Cmp::Hs | Cmp::Geu => x >= y,
        Cmp::Num => true,
        Cmp::Nan => false,
    }
}

#[inline(always)]
fn cmp_s(c: Cmp, x: i64, y: i64) -> bool {
    match c {
        Cmp::Lo | Cmp::Ls | Cmp::Hi | Cmp::Hs => cmp_u(c, x as u64, y as u64),
        Cmp::Eq | Cmp::Equ => x == y,
        Cmp::Ne | Cmp::Neu => x != y,
        Cmp::Lt | Cmp::Ltu => x < y,
        Cmp::Le | Cmp::Leu => x <= y,
        Cmp::Gt | Cmp::Gtu => x > y,
        Cmp::Ge | Cmp::Geu => x >= y,
        Cmp::Num => true,
        Cmp::Nan => false,
    }
}

#[inline(always)]
fn cmp_f(c: Cmp, x: f64, y: f64) -> bool {
    let nan = x.is_nan() || y.is_nan();
    match c {
        Cmp::Eq => x == y,
        Cmp::Ne => !nan && x != y,
        Cmp::Lt | Cmp::Lo => x < y,
        Cmp::Le | Cmp::Ls => x <= y,
        Cmp::Gt | Cmp::Hi => x > y,
        Cmp::Ge | Cmp::Hs => x >= y,
        Cmp::Equ => nan || x == y,
        Cmp::Neu => nan || x != y,
        Cmp::Ltu => nan || x < y,
        Cmp::Leu => nan || x <= y,
        Cmp::Gtu => nan || x > y,
        Cmp::Geu => nan || x >= y,
        Cmp::Num => !nan,
        Cmp::Nan => nan,
    }
}

/// Lane mask of `a cmp b` for type `ty`.
fn compare(r: &[u64], cmp: Cmp, ty: Ty, a: R, b: R) -> u32 {
    let av = get(r, a);
    let bv = get(r, b);
    let mut bits = 0u32;
    macro_rules! each {
        (|$x:ident, $y:ident| $e:expr) => {
            for l in 0..32 {
                let $x = av[l];
                let $y = bv[l];
                bits |= u32::from($e) << l;
            }
        };
    }
    match ty {
        Ty::F32 => each!(|x, y| cmp_f(cmp, f64::from(f32v(x)), f64::from(f32v(y)))),
        Ty::F64 => each!(|x, y| cmp_f(cmp, f64v(x), f64v(y))),
        Ty::F16 | Ty::BF16 => {
            let brain = ty == Ty::BF16;
            each!(|x, y| cmp_f(
                cmp,
                f64::from(h2f(x as u16, brain)),
                f64::from(h2f(y as u16, brain))
            ))
        }
        Ty::S8 => each!(|x, y| cmp_s(cmp, i64::from(x as i8), i64::from(y as i8))),
        Ty::S16 => each!(|x, y| cmp_s(cmp, i64::from(x as i16), i64::from(y as i16))),
        Ty::S32 => each!(|x, y| cmp_s(cmp, i64::from(x as i32), i64::from(y as i32))),
        Ty::S64 => each!(|x, y| cmp_s(cmp, x as i64, y as i64)),
        Ty::U8 | Ty::B8 => each!(|x, y| cmp_u(cmp, u64::from(x as u8), u64::from(y as u8))),
        Ty::U16 | Ty::B16 => {
            each!(|x, y| cmp_u(cmp, u64::from(x as u16), u64::from(y as u16)))
        }
        Ty::U32 | Ty::B32 => {
            each!(|x, y| cmp_u(cmp, u64::from(x as u32), u64::from(y as u32)))
        }
        _ => each!(|x, y| cmp_u(cmp, x, y)),
    }
    bits
}

fn special(
    cx: &Ctx<'_, '_>,
    ctaid: [u32; 3],
    worker: u32,
    tid: &[[u32; 32]; 3],
    warp: u32,
    sr: Sreg,
    l: usize,
) -> u64 {
    let lane = l as u32;
    u64::from(match sr {
        Sreg::Tid(d) => tid[d as usize][l],
        Sreg::Ntid(d) => cx.block[d as usize],
        Sreg::Ctaid(d) => ctaid[d as usize],
        Sreg::Nctaid(d) => cx.grid[d as usize],
        Sreg::Laneid => lane,
        Sreg::Warpid => warp,
        Sreg::Nwarpid => cx.nwarps,
        Sreg::Smid => worker,
        Sreg::Nsmid => cx.nworkers,
        Sreg::Gridid => 1,
        Sreg::Clock => cx.start.elapsed().as_nanos() as u32,
        Sreg::Clock64 => return cx.start.elapsed().as_nanos() as u64,
        Sreg::Globaltimer | Sreg::GlobaltimerLo | Sreg::GlobaltimerHi => {
            let ns = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_nanos() as u64);
            return match sr {
                Sreg::GlobaltimerLo => ns & 0xFFFF_FFFF,
                Sreg::GlobaltimerHi => ns >> 32,
                _ => ns,
            };
        }
        Sreg::LanemaskEq => 1u32 << lane,
        Sreg::LanemaskLe => ((2u64 << lane) - 1) as u32,
        Sreg::LanemaskLt => (1u32 << lane) - 1,
        Sreg::LanemaskGe => !((1u32 << lane) - 1),
        Sreg::LanemaskGt => !(((2u64 << lane) - 1) as u32),
        Sreg::DynamicSmem => cx.dyn_shared,
        Sreg::TotalSmem => cx.shared_bytes,
        Sreg::Envreg(1) => (cx.grid_workspace >> 32) as u32,
        Sreg::Envreg(2) => cx.grid_workspace as u32,
        Sreg::Envreg(_) => 0,
    })
}

enum Ev {
    Call(u32, u32),
    Frame,
    Yield,
}

/// Runs the warp until it finishes, waits at a barrier, or has executed at
/// least `budget` instructions (checked at branches and calls).
pub(crate) fn run<'m>(
    w: &mut Warp,
    cx: &Ctx<'_, 'm>,
    env: &mut BlockEnv<'m>,
    budget: u64,
) -> Res<Status> {
    let mut executed: u64 = 0;
    let mut threads: u64 = 0;
    let status = loop {
        if w.ctl.live == 0 {
            if w.frames.is_empty() {
                w.state = WState::Done;
                break Ok(Status::Done);
            }
            w.pop_frame(cx);
            continue;
        }
        if w.ctl.mask == 0 {
            break Ok(Status::Barrier);
        }
        let fidx = w.func;
        let f = &cx.module.funcs[fidx as usize];
        match step(w, cx, env, f, budget, &mut executed, &mut threads) {
            Ok(Ev::Frame) => {}
            Ok(Ev::Yield) => break Ok(Status::Yield),
            Ok(Ev::Call(site, m)) => {
                if let Err(mut e) = w.push_frame(cx, site, m) {
                    e.func = fidx;
                    e.pc = w.ctl.pc;
                    break Err(e);
                }
            }
            Err(mut e) => {
                e.func = fidx;
                break Err(e);
            }
        }
    };
    env.insts += threads;
    status
}

/// Runs the kernel's compiled code from `pc` on the warp's state (converged
/// on `mask`); returns the compiled code's result: the pc to resume at, with
/// [`crate::jit::YIELD`] when the budget ran out at a taken branch, or the
/// pc of a load that faulted with [`crate::jit::FAULT`], and then the
/// faulting lane and address.
#[allow(clippy::too_many_arguments)]
fn run_compiled<'m>(
    j: &crate::jit::Compiled,
    cx: &Ctx<'_, 'm>,
    ctaid: [u32; 3],
    worker: u32,
    tid: &[[u32; 32]; 3],
    wid: u32,
    r: &mut [u64],
    p: &mut [u32],
    mem: &mut Mem<'_, '_, 'm>,
    mask: u32,
    pc: u32,
    budget: u64,
    executed: &mut u64,
    threads: &mut u64,
) -> (u64, usize, u64) {
    let sr = |s: Sreg| special(cx, ctaid, worker, tid, wid, s, 0);
    let (gbase, glen, gptr) = match *mem.cache {
        Some(reg) => match reg.atomic_u8(reg.base()) {
            Some(first) => (reg.base(), reg.len(), first.as_ptr()),
            None => (0, 0, std::ptr::null_mut()),
        },
        None => (0, 0, std::ptr::null_mut()),
    };
    let mut st = crate::jit::JitState {
        regs: r.as_mut_ptr(),
        preds: p.as_mut_ptr(),
        shared: mem.shared.as_mut_ptr(),
        shared_len: mem.shared.len() as u64,
        params: mem.params.as_ptr(),
        params_len: mem.params.len() as u64,
        gbase,
        glen,
        gptr,
        gbase2: 0,
        glen2: 0,
        gptr2: std::ptr::null_mut(),
        lookup: crate::jit::lookup,
        view: (mem.view as *const MemoryView<'m>).cast::<MemoryView<'static>>(),
        tid: tid as *const [[u32; 32]; 3],
        sregs: [
            sr(Sreg::Ntid(0)),
            sr(Sreg::Ntid(1)),
            sr(Sreg::Ntid(2)),
            sr(Sreg::Ctaid(0)),
            sr(Sreg::Ctaid(1)),
            sr(Sreg::Ctaid(2)),
            sr(Sreg::Nctaid(0)),
            sr(Sreg::Nctaid(1)),
            sr(Sreg::Nctaid(2)),
            sr(Sreg::Warpid),
        ],
        mask,
        _pad: 0,
        executed: *executed,
        threads: *threads,
        budget,
        scratch: [0; 32],
        fault_lane: 0,
        fault_addr: 0,
    };
    // SAFETY: the compiled code reads and writes only through the pointers
    // in `st`, within bounds the compiler proved from the function's slot
    // and predicate counts (`r` and `p` are this frame's files) or checked
    // at run time (shared, parameter and global memory: every access is
    // checked against the length, or the allocation `lookup` found, before
    // it is made); all of them outlive the call.
    let res = unsafe { j.run(&mut st, pc) };
    *executed = st.executed;
    *threads = st.threads;
    (res, (st.fault_lane & 31) as usize, st.fault_addr)
}

/// Executes instructions of the current frame until control leaves it.
#[inline(never)]
fn step<'m>(
    w: &mut Warp,
    cx: &Ctx<'_, 'm>,
    env: &mut BlockEnv<'m>,
    f: &Function,
    budget: u64,
    executed: &mut u64,
    threads: &mut u64,
) -> Res<Ev> {
    let code = &f.code[..];
    // Compiled code runs in the kernel's own frame only.
    let jit = match &cx.jit {
        Some(j) if w.frames.is_empty() && w.func == cx.kernel => Some(&**j),
        _ => None,
    };
    // Set when compiled code just returned: the interpreter executes the
    // instruction there before compiled code may run again.
    let mut jit_returned = false;
    let rb = w.rbase;
    let r = &mut w.regs[rb..rb + f.nslots as usize * 32];
    let pb = w.pbase;
    let p = &mut w.preds[pb..pb + f.npreds as usize];
    let ctl = &mut w.ctl;
    let lbase = w.lbase;
    let mut mem = Mem {
        view: cx.view,
        cache: &mut env.cache,
        shared: &mut env.shared,
        local: &mut w.local,
        params: cx.params,
    };
    let mut pc = ctl.pc;
    let mut mask = ctl.mask;
    let mut n_exec = *executed;
    let mut n_thr = *threads;
    macro_rules! fail {
        ($e:expr) => {{
            let mut e: Box<Exc> = $e;
            e.pc = pc;
            *executed = n_exec;
            *threads = n_thr;
            return Err(e);
        }};
    }
    macro_rules! tri {
        ($e:expr) => {
            match $e {
                Ok(v) => v,
                Err(e) => fail!(e),
            }
        };
    }
    // Leaves the frame loop with control state written back.
    macro_rules! leave {
        ($ev:expr) => {{
            ctl.pc = pc;
            ctl.mask = mask;
            *executed = n_exec;
            *threads = n_thr;
            return Ok($ev);
        }};
    }
    // Moves the current group to the next instruction, rejoining the lanes
    // that wait there.
    macro_rules! step {
        () => {{
            pc += 1;
            if ctl.split && pc == ctl.next_pc {
                ctl.pc = pc;
                ctl.mask = mask;
                ctl.sync();
                ctl.reschedule();
                pc = ctl.pc;
                mask = ctl.mask;
            }
        }};
    }
    // Lanes `moved` jump to `target`; the others of `mask` go on at pc + 1.
    macro_rules! jump {
        ($moved:expr, $target:expr) => {{
            let moved: u32 = $moved;
            let target: u32 = $target;
            if moved == mask {
                pc = target;
                if ctl.split && pc >= ctl.next_pc {
                    ctl.pc = pc;
                    ctl.mask = mask;
                    ctl.sync();
                    ctl.reschedule();
                    pc = ctl.pc;
                    mask = ctl.mask;
                }
            } else if moved == 0 {
                step!();
            } else {
                for l in lanes_of(moved) {
                    ctl.pcs[l] = target;
                }
                for l in lanes_of(mask & !moved) {
                    ctl.pcs[l] = pc + 1;
                }
                ctl.reschedule();
                pc = ctl.pc;
                mask = ctl.mask;
            }
        }};
    }
    // `step!` and on to the next instruction.
    macro_rules! advance {
        () => {{
            step!();
            continue;
        }};
    }
    loop {
        if let Some(j) = jit {
            if !jit_returned && !ctl.split && n_exec < budget && j.is_entry(pc) {
                let (res, fault_lane, fault_addr) = run_compiled(
                    j,
                    cx,
                    env.ctaid,
                    env.worker,
                    &w.tid,
                    w.id,
                    r,
                    p,
                    &mut mem,
                    mask,
                    pc,
                    budget,
                    &mut n_exec,
                    &mut n_thr,
                );
                pc = res as u32;
                jit_returned = true;
                if res & crate::jit::FAULT != 0 {
                    // A load the compiled code checked and refused: the
                    // interpreter's own fault for that lane and address.
                    if let Some(&Inst {
                        op: Op::Ld { sp, size, .. },
                        ..
                    }) = code.get(pc as usize)
                    {
                        fail!(mem.fault(sp, fault_addr, size, fault_lane));
                    }
                    let mut e = Exc::new(ExcKind::Unsupported, fault_lane);
                    e.msg = "compiled code reported a fault outside a load".into();
                    fail!(e)
                }
                if res & crate::jit::YIELD != 0 {
                    leave!(Ev::Yield);
                }
                continue;
            }
            jit_returned = false;
        }
        let Some(inst) = code.get(pc as usize) else {
            let mut e = Exc::new(ExcKind::Unsupported, 0);
            e.msg = "control fell off the end of the function".into();
            fail!(e)
        };
        n_exec += 1;
        n_thr += u64::from(mask.count_ones());
        let m = if inst.guard == NONE {
            mask
        } else {
            mask & pmask(p, inst.guard)
        };
        match inst.op {
            Op::Nop => {}
            Op::Fence => std::sync::atomic::fence(SeqCst),
            Op::Mov { d, a } => un!(r, m, d, a, |x| x),
            Op::Special { d, sr } => {
                let mut o = [0u64; 32];
                match sr {
                    Sreg::Tid(k) => {
                        for (x, t) in o.iter_mut().zip(&w.tid[k as usize & 3]) {
                            *x = u64::from(*t);
                        }
                    }
                    Sreg::Ntid(_) | Sreg::Ctaid(_) | Sreg::Nctaid(_) | Sreg::Warpid => {
                        o = [special(cx, env.ctaid, env.worker, &w.tid, w.id, sr, 0); 32];
                    }
                    _ => {
                        for l in lanes_of(m) {
                            o[l] = special(cx, env.ctaid, env.worker, &w.tid, w.id, sr, l);
                        }
                    }
                }
                put(r, d, m, &o);
            }
            Op::FrameAddr { d, off } => {
                let v = u64::from(lbase) + u64::from(off);
                let o = [v; 32];
                put(r, d, m, &o);
            }
            Op::Pack { d, src, n, bits } => {
                let mut o = [0u64; 32];
                let em = if bits >= 64 {
                    u64::MAX
                } else {
                    (1u64 << bits) - 1
                };
                for (k, &s) in src.iter().take(n as usize).enumerate() {
                    let v = get(r, s);
                    for l in 0..32 {
                        o[l] |= (v[l] & em) << (k as u32 * u32::from(bits));
                    }
                }
                put(r, d, m, &o);
            }
            Op::Unpack { d, n, bits, a } => {
                let v = get(r, a);
                let em = if bits >= 64 {
                    u64::MAX
                } else {
                    (1u64 << bits) - 1
                };
                for (k, &dk) in d.iter().take(n as usize).enumerate() {
                    if dk == NONE {
                        continue;
                    }
                    let mut o = [0u64; 32];
                    for l in 0..32 {
                        o[l] = (v[l] >> (k as u32 * u32::from(bits))) & em;
                    }
                    put(r, dk, m, &o);
                }
            }
            Op::Int2 { op, w: iw, d, a, b } => match op {
                Int2::Add => ibin!(r, m, iw, d, a, b, |x, y, _yr| x.wrapping_add(y) as u64),
                Int2::Sub => ibin!(r, m, iw, d, a, b, |x, y, _yr| x.wrapping_sub(y) as u64),
                Int2::MulLo => ibin!(r, m, iw, d, a, b, |x, y, _yr| x.wrapping_mul(y) as u64),
                Int2::MulWide => {
                    ibin!(
                        r,
                        m,
                        iw,
                        d,
                        a,
                        b,
                        |x, y, _yr| (x as i128).wrapping_mul(y as i128) as u64
                    )
                }
                Int2::MulHi => ibin!(r, m, iw, d, a, b, |x, y, _yr| ((x as i128)
                    .wrapping_mul(y as i128)
                    >> T::BITS)
                    as u64),
                Int2::Min => ibin!(r, m, iw, d, a, b, |x, y, _yr| x.min(y) as u64),
                Int2::Max => ibin!(r, m, iw, d, a, b, |x, y, _yr| x.max(y) as u64),
                Int2::And => bin!(r, m, d, a, b, |x, y| x & y),
                Int2::Or => bin!(r, m, d, a, b, |x, y| x | y),
                Int2::Xor => bin!(r, m, d, a, b, |x, y| x ^ y),
                Int2::Shl => ibin!(r, m, iw, d, a, b, |x, _y, yr| {
                    let s = yr as u32;
                    if s >= T::BITS {
                        0
                    } else {
                        (x << s) as u64
                    }
                }),
                Int2::Shr => ibin!(r, m, iw, d, a, b, |x, _y, yr| {
                    let s = yr as u32;
                    if s >= T::BITS {
                        (x >> (T::BITS - 1) >> 1) as u64
                    } else {
                        (x >> s) as u64
                    }
                }),
                Int2::Div => ibin!(r, m, iw, d, a, b, |x, y, _yr| if y == 0 {
                    U::MAX as u64
                } else {
                    x.wrapping_div(y) as u64
                }),
                Int2::Rem => ibin!(r, m, iw, d, a, b, |x, y, _yr| if y == 0 {
                    x as u64
                } else {
                    x.wrapping_rem(y) as u64
                }),
                _ => bin!(r, m, d, a, b, |x, y| num::int2(op, iw, x, y)),
            },
            Op::Int1 { op, w: iw, d, a } => match op {
                Int1::Not => un!(r, m, d, a, |x| !x),
                _ => un!(r, m, d, a, |x| num::int1(op, iw, x)),
            },
            Op::Mad {
                op,
                w: iw,
                d,
                a,
                b,
                c,
            } => match op {
                Mad::Lo => {
                    num::by_width!(iw, |_x: T, U| tern!(r, m, d, a, b, c, |x, y, z| (x as T)
                        .wrapping_mul(y as T)
                        .wrapping_add(z as T)
                        as u64))
                }
                Mad::Wide => num::by_width!(iw, |_x: T, U| tern!(r, m, d, a, b, c, |x, y, z| {
                    let p = (x as T as i128).wrapping_mul(y as T as i128) as u64;
                    // The addend has twice the width; wrap at it.
                    if T::BITS == 64 {
                        p.wrapping_add(z)
                    } else {
                        let wbits = 2 * T::BITS;
                        let mask = if wbits >= 64 {
                            u64::MAX
                        } else {
                            (1u64 << wbits) - 1
                        };
                        (p.wrapping_add(z)) & mask
                    }
                })),
                Mad::Hi => tern!(r, m, d, a, b, c, |x, y, z| num::int2(
                    Int2::Add,
                    iw,
                    num::int2(Int2::MulHi, iw, x, y),
                    z
                )),
                Mad::Lo24 => tern!(r, m, d, a, b, c, |x, y, z| num::int2(
                    Int2::Add,
                    iw,
                    num::int2(Int2::Mul24Lo, iw, x, y),
                    z
                )),
                Mad::Sad => tern!(r, m, d, a, b, c, |x, y, z| {
                    let diff = (num::int_value(x, sty(iw)) - num::int_value(y, sty(iw)))
                        .unsigned_abs() as u64;
                    num::int2(Int2::Add, iw, diff, z)
                }),
            },
            Op::Carry {
                kind,
                cin,
                cout,
                wide,
                d,
                a,
                b,
                c,
                cc,
            } => {
                let av = get(r, a);
                let bv = get(r, b);
                let cv = get(r, c);
                let ccv = get(r, cc);
                let mut o = [0u64; 32];
                let mut oc = ccv;
                for l in 0..32 {
                    let carry_in = if cin { ccv[l] & 1 } else { 0 };
                    let bits = if wide { 64 } else { 32 };
                    let mk = |v: u64| if wide { v } else { v & 0xFFFF_FFFF };
                    let (x, y, z) = (mk(av[l]), mk(bv[l]), mk(cv[l]));
                    let (res, carry): (u128, u128) = match kind {
                        CarryKind::Add => {
                            let s = u128::from(x) + u128::from(y) + u128::from(carry_in);
                            (s, s >> bits)
                        }
                        CarryKind::Sub => {
                            let s = u128::from(x)
                                .wrapping_sub(u128::from(y))
                                .wrapping_sub(u128::from(carry_in));
                            let borrow =
                                u128::from(u128::from(x) < u128::from(y) + u128::from(carry_in));
                            (s, borrow)
                        }
                        CarryKind::MadLo | CarryKind::MadHi => {
                            let prod = u128::from(x) * u128::from(y);
                            let part = if kind == CarryKind::MadLo {
                                prod & ((1u128 << bits) - 1)
                            } else {
                                prod >> bits
                            };
                            let s = part + u128::from(z) + u128::from(carry_in);
                            (s, s >> bits)
                        }
                    };
                    o[l] = res as u64;
                    if cout {
                        oc[l] = (carry & 1) as u64;
                    }
                }
                put(r, d, m, &o);
                if cout {
                    put(r, cc, m, &oc);
                }
            }
            Op::Bfe {
                wide,
                signed,
                d,
                a,
                b,
                c,
            } => tern!(r, m, d, a, b, c, |x, y, z| num::bfe(x, y, z, wide, signed)),
            Op::Bfi {
                wide,
                d,
                a,
                b,
                c,
                e,
            } => {
                let ev = get(r, e);
                let av = get(r, a);
                let bv = get(r, b);
                let cv = get(r, c);
                let mut o = [0u64; 32];
                for l in 0..32 {
                    o[l] = num::bfi(av[l], bv[l], cv[l], ev[l], wide);
                }
                put(r, d, m, &o);
            }
            Op::Prmt { mode, d, a, b, c } => {
                tern!(r, m, d, a, b, c, |x, y, z| num::prmt(x, y, z, mode))
            }
            Op::Shf {
                left,
                clamp,
                d,
                a,
                b,
                c,
            } => tern!(r, m, d, a, b, c, |x, y, z| num::shf(x, y, z, left, clamp)),
            Op::Bmsk { clamp, d, a, b } => bin!(r, m, d, a, b, |x, y| {
                let (p, w) = if clamp {
                    ((x as u32).min(32), (y as u32).min(32))
                } else {
                    (x as u32 & 31, y as u32 & 31)
                };
                if p >= 32 {
                    0
                } else {
                    let w = w.min(32 - p);
                    (((1u64 << w) - 1) << p) & 0xFFFF_FFFF
                }
            }),
            Op::Lop3 { lut, d, a, b, c } => {
                tern!(r, m, d, a, b, c, |x, y, z| num::lop3(x, y, z, lut))
            }
            Op::Dp4a { us, ut, d, a, b, c } => tern!(r, m, d, a, b, c, |x, y, z| {
                let mut s = z as u32 as i32 as i64;
                for k in 0..4 {
                    let xa = (x >> (8 * k)) as u8;
                    let yb = (y >> (8 * k)) as u8;
                    let xa = if us {
                        i64::from(xa)
                    } else {
                        i64::from(xa as i8)
                    };
                    let yb = if ut {
                        i64::from(yb)
                    } else {
                        i64::from(yb as i8)
                    };
                    s += xa * yb;
                }
                s as u64
            }),
            Op::Setp {
                cmp,
                ty,
                bop,
                d,
                dn,
                a,
                b,
                c,
            } => {
                let t = compare(r, cmp, ty, a, b);
                let (v, vn) = if bop == BoolOp::None {
                    (t, !t)
                } else {
                    let cm = pmask(p, c);
                    match bop {
                        BoolOp::And => (t & cm, !t & cm),
                        BoolOp::Or => (t | cm, !t | cm),
                        _ => (t ^ cm, !t ^ cm),
                    }
                };
                pset(p, d, m, v);
                if dn != NONE {
                    pset(p, dn, m, vn);
                }
            }
            Op::Set {
                cmp,
                ty,
                float_dst,
                d,
                a,
                b,
            } => {
                let t = compare(r, cmp, ty, a, b);
                let mut o = [0u64; 32];
                for (l, x) in o.iter_mut().enumerate() {
                    let on = t & (1 << l) != 0;
                    *x = match (on, float_dst) {
                        (true, true) => f32b(1.0),
                        (true, false) => 0xFFFF_FFFF,
                        _ => 0,
                    };
                }
                put(r, d, m, &o);
            }
            Op::Selp { d, a, b, p: q } => {
                let pm = pmask(p, q);
                let av = get(r, a);
                let bv = get(r, b);
                let mut o = [0u64; 32];
                for l in 0..32 {
                    o[l] = if pm & (1 << l) != 0 { av[l] } else { bv[l] };
                }
                put(r, d, m, &o);
            }
            Op::Slct { fsel, d, a, b, c } => tern!(r, m, d, a, b, c, |x, y, z| {
                let ge = if fsel {
                    f32v(z) >= 0.0
                } else {
                    (z as i32) >= 0
                };
                if ge {
                    x
                } else {
                    y
                }
            }),
            Op::Pred { op, d, a, b } => {
                let (x, y) = (pmask(p, a), pmask(p, b));
                let v = match op {
                    PredOp::And => x & y,
                    PredOp::Or => x | y,
                    PredOp::Xor => x ^ y,
                    PredOp::Not => !x,
                    PredOp::Mov => x,
                };
                pset(p, d, m, v);
            }
            Op::PredConst { d, v } => pset(p, d, m, if v { FULL } else { 0 }),
            Op::FromPred { d, p: q } => {
                let pm = pmask(p, q);
                let mut o = [0u64; 32];
                for (l, x) in o.iter_mut().enumerate() {
                    *x = u64::from(pm & (1 << l) != 0);
                }
                put(r, d, m, &o);
            }
            Op::ToPred { d, a } => {
                let av = get(r, a);
                let mut v = 0u32;
                for (l, x) in av.iter().enumerate() {
                    v |= ((*x & 1) as u32) << l;
                }
                pset(p, d, m, v);
            }
            Op::F2 {
                op,
                t,
                rnd,
                ftz,
                sat,
                d,
                a,
                b,
            } => match t {
                Ft::F32 if !ftz && !sat && matches!(rnd, Rnd::Default | Rnd::Rn) => match op {
                    F2::Add => bin!(r, m, d, a, b, |x, y| f32b(f32v(x) + f32v(y))),
                    F2::Sub => bin!(r, m, d, a, b, |x, y| f32b(f32v(x) - f32v(y))),
                    F2::Mul => bin!(r, m, d, a, b, |x, y| f32b(f32v(x) * f32v(y))),
                    _ => bin!(r, m, d, a, b, |x, y| f2_32(op, rnd, ftz, sat, x, y)),
                },
                Ft::F32 => bin!(r, m, d, a, b, |x, y| f2_32(op, rnd, ftz, sat, x, y)),
                Ft::F64 if !sat && matches!(rnd, Rnd::Default | Rnd::Rn) => match op {
                    F2::Add => bin!(r, m, d, a, b, |x, y| (f64v(x) + f64v(y)).to_bits()),
                    F2::Sub => bin!(r, m, d, a, b, |x, y| (f64v(x) - f64v(y)).to_bits()),
                    F2::Mul => bin!(r, m, d, a, b, |x, y| (f64v(x) * f64v(y)).to_bits()),
                    _ => bin!(r, m, d, a, b, |x, y| f2_64(op, rnd, sat, x, y)),
                },
                Ft::F64 => bin!(r, m, d, a, b, |x, y| f2_64(op, rnd, sat, x, y)),
                _ => bin!(r, m, d, a, b, |x, y| f2_half(op, t, sat, x, y)),
            },
            Op::F1 {
                op,
                t,
                rnd,
                ftz,
                sat,
                d,
                a,
            } => match t {
                Ft::F32 => un!(r, m, d, a, |x| f1_32(op, ftz, sat, x)),
                Ft::F64 => un!(r, m, d, a, |x| f1_64(op, rnd, sat, x)),
                _ => un!(r, m, d, a, |x| f1_half(op, t, x)),
            },
            Op::Fma {
                t,
                rnd,
                ftz,
                sat,
                d,
                a,
                b,
                c,
            } => match t {
                Ft::F32 if !ftz && !sat && matches!(rnd, Rnd::Default | Rnd::Rn) => {
                    // The product of two f32 is exact in f64; when the f64
                    // sum is exact too, one rounding to f32 is the fused
                    // result. Lanes where it is not take the slow path.
                    let (av, bv, cv) = (get(r, a), get(r, b), get(r, c));
                    let mut o = [0u64; 32];
                    let mut slow = 0u32;
                    for l in 0..32 {
                        let p = f64::from(f32v(av[l])) * f64::from(f32v(bv[l]));
                        let z = f64::from(f32v(cv[l]));
                        let s = p + z;
                        let bb = s - p;
                        let err = (p - (s - bb)) + (z - bb);
                        o[l] = f32b(s as f32);
                        slow |= u32::from(err != 0.0 || err.is_nan()) << l;
                    }
                    for l in lanes_of(slow & m) {
                        o[l] = f32b(f32v(av[l]).mul_add(f32v(bv[l]), f32v(cv[l])));
                    }
                    put(r, d, m, &o);
                }
                Ft::F64 if !sat => {
                    tern!(r, m, d, a, b, c, |x, y, z| f64v(x)
                        .mul_add(f64v(y), f64v(z))
                        .to_bits())
                }
                _ => tern!(r, m, d, a, b, c, |x, y, z| fma_any(
                    t, rnd, ftz, sat, x, y, z
                )),
            },
            Op::Testp { op, t, d, a } => {
                let av = get(r, a);
                let mut v = 0u32;
                for (l, x) in av.iter().enumerate() {
                    v |= u32::from(testp(op, t, *x)) << l;
                }
                pset(p, d, m, v);
            }
            Op::Cvt {
                dt,
                st,
                rnd,
                sat,
                ftz,
                d,
                a,
            } => match (dt, st) {
                (Ty::F32, Ty::S32) if !sat && matches!(rnd, Rnd::Rn | Rnd::Default) => {
                    un!(r, m, d, a, |x| f32b(x as u32 as i32 as f32))
                }
                (Ty::F32, Ty::U32) if !sat && matches!(rnd, Rnd::Rn | Rnd::Default) => {
                    un!(r, m, d, a, |x| f32b(x as u32 as f32))
                }
                (Ty::U64, Ty::U32) => un!(r, m, d, a, |x| x & 0xFFFF_FFFF),
                (Ty::S64, Ty::S32) | (Ty::U64, Ty::S32) => {
                    un!(r, m, d, a, |x| x as u32 as i32 as i64 as u64)
                }
                (Ty::U32, Ty::U64) | (Ty::S32, Ty::S64) | (Ty::U32, Ty::S64) if !sat => {
                    un!(r, m, d, a, |x| x & 0xFFFF_FFFF)
                }
                (Ty::F64, Ty::F32) => un!(r, m, d, a, |x| f64::from(f32v(x)).to_bits()),
                _ => un!(r, m, d, a, |x| num::cvt(x, dt, st, rnd, sat, ftz)),
            },
            Op::CvtPack {
                dt,
                rnd,
                relu,
                d,
                a,
                b,
            } => bin!(r, m, d, a, b, |x, y| {
                let conv = |v: u64| {
                    let mut f = f64::from(f32v(v));
                    if relu && f < 0.0 {
                        f = 0.0;
                    }
                    let t = if dt == Ty::BF16x2 { Ty::BF16 } else { Ty::F16 };
                    num::to_float_bits(f, t, rnd) & 0xFFFF
                };
                (conv(x) << 16) | conv(y)
            }),
            Op::Ld {
                sp,
                size,
                signed,
                n,
                d,
                base,
                off,
            } => {
                let total = u64::from(size) * u64::from(n);
                // One address for every lane in a space shared by all
                // lanes: load once and broadcast.
                if base == NONE && matches!(sp, Msp::Param | Msp::Const | Msp::Global) && m != 0 {
                    let l = m.trailing_zeros() as usize;
                    let addr = off as u64;
                    if n > 1 && !addr.is_multiple_of(total) {
                        fail!(mem.fault(sp, addr, total as u8, l));
                    }
                    for (k, &dk) in d.iter().take(n as usize).enumerate() {
                        let v = tri!(mem.load(sp, addr + k as u64 * u64::from(size), size, l));
                        let v = if signed { sext(v, size) } else { v };
                        if dk != NONE {
                            put(r, dk, m, &[v; 32]);
                        }
                    }
                    advance!();
                }
                let bv = if base == NONE {
                    [0u64; 32]
                } else {
                    get(r, base)
                };
                let add = if sp == Msp::Frame {
                    (i64::from(lbase) + off) as u64
                } else {
                    off as u64
                };
                // Plain global loads: the allocation of the first lane
                // usually holds all of them.
                if sp == Msp::Global && n == 1 && (size == 4 || size == 8) {
                    let mut o = [0u64; 32];
                    for l in lanes_of(m) {
                        let addr = bv[l].wrapping_add(add);
                        let hit = match (size, *mem.cache) {
                            (4, Some(reg)) => {
                                reg.atomic_u32(addr).map(|a| u64::from(a.load(Relaxed)))
                            }
                            (_, Some(reg)) => reg.atomic_u64(addr).map(|a| a.load(Relaxed)),
                            _ => None,
                        };
                        let v = match hit {
                            Some(v) => v,
                            None => tri!(mem.load(sp, addr, size, l)),
                        };
                        o[l] = if signed { sext(v, size) } else { v };
                    }
                    put(r, d[0], m, &o);
                    advance!();
                }
                if sp == Msp::Shared && n == 1 && (size == 4 || size == 8) {
                    let mut o = [0u64; 32];
                    let len = mem.shared.len() as u64;
                    let sz = u64::from(size);
                    for l in lanes_of(m) {
                        let addr = bv[l].wrapping_add(add);
                        if addr >= len || len - addr < sz || !addr.is_multiple_of(sz) {
                            fail!(mem.fault(sp, addr, size, l));
                        }
                        let a = addr as usize;
                        let v = rd(&mem.shared[a..a + size as usize], size);
                        o[l] = if signed { sext(v, size) } else { v };
                    }
                    put(r, d[0], m, &o);
                    advance!();
                }
                let bits = u32::from(size) * 8;
                let elem_mask = if bits == 64 {
                    u64::MAX
                } else {
                    (1u64 << bits) - 1
                };
                for l in lanes_of(m) {
                    let addr = bv[l].wrapping_add(add);
                    if n > 1 && !addr.is_multiple_of(total) {
                        fail!(mem.fault(sp, addr, total as u8, l));
                    }
                    if n > 1 && (total == 8 || total == 16) {
                        if let Some(whole) = mem.load_vector(sp, addr, total) {
                            for (k, &dk) in d.iter().take(n as usize).enumerate() {
                                let v = (whole >> (k as u32 * bits)) as u64 & elem_mask;
                                let v = if signed { sext(v, size) } else { v };
                                if dk != NONE {
                                    set_lane(r, dk, l, v);
                                }
                            }
                            continue;
                        }
                    }
                    for (k, &dk) in d.iter().take(n as usize).enumerate() {
                        let v = tri!(mem.load(sp, addr + k as u64 * u64::from(size), size, l));
                        let v = if signed { sext(v, size) } else { v };
                        if dk != NONE {
                            set_lane(r, dk, l, v);
                        }
                    }
                }
            }
            Op::St {
                sp,
                size,
                n,
                s,
                base,
                off,
            } => {
                let total = u64::from(size) * u64::from(n);
                let bv = if base == NONE {
                    [0u64; 32]
                } else {
                    get(r, base)
                };
                let add = if sp == Msp::Frame {
                    (i64::from(lbase) + off) as u64
                } else {
                    off as u64
                };
                if n == 1 && (size == 4 || size == 8) && matches!(sp, Msp::Global | Msp::Shared) {
                    let sv = get(r, s[0]);
                    let sz = u64::from(size);
                    for l in lanes_of(m) {
                        let addr = bv[l].wrapping_add(add);
                        let done = if sp == Msp::Shared {
                            let len = mem.shared.len() as u64;
                            if addr < len && len - addr >= sz && addr.is_multiple_of(sz) {
                                let a = addr as usize;
                                wr(&mut mem.shared[a..a + size as usize], size, sv[l]);
                                true
                            } else {
                                false
                            }
                        } else {
                            match (size, *mem.cache) {
                                (4, Some(reg)) => reg
                                    .atomic_u32(addr)
                                    .map(|a| a.store(sv[l] as u32, Relaxed))
                                    .is_some(),
                                (_, Some(reg)) => reg
                                    .atomic_u64(addr)
                                    .map(|a| a.store(sv[l], Relaxed))
                                    .is_some(),
                                _ => false,
                            }
                        };
                        if !done {
                            tri!(mem.store(sp, addr, size, sv[l], l));
                        }
                    }
                    advance!();
                }
                let bits = u32::from(size) * 8;
                let elem_mask = if bits == 64 {
                    u64::MAX
                } else {
                    (1u64 << bits) - 1
                };
                for l in lanes_of(m) {
                    let addr = bv[l].wrapping_add(add);
                    if n > 1 && !addr.is_multiple_of(total) {
                        fail!(mem.fault(sp, addr, total as u8, l));
                    }
                    if n > 1 && (total == 8 || total == 16) {
                        let whole = (0..n as usize).fold(0u128, |acc, k| {
                            let v = r[s[k] as usize * 32 + l] & elem_mask;
                            acc | (u128::from(v) << (k as u32 * bits))
                        });
                        if mem.store_vector(sp, addr, total, whole).is_some() {
                            continue;
                        }
                    }
                    for k in 0..n as usize {
                        let v = r[s[k] as usize * 32 + l];
                        tri!(mem.store(sp, addr + k as u64 * u64::from(size), size, v, l));
                    }
                }
            }
            Op::Atom {
                sp,
                op,
                ty,
                d,
                base,
                off,
                b,
                c,
            } => {
                let bv0 = if base == NONE {
                    [0u64; 32]
                } else {
                    get(r, base)
                };
                let xv = get(r, b);
                let cv = if c == NONE { [0u64; 32] } else { get(r, c) };
                for l in lanes_of(m) {
                    let addr = bv0[l].wrapping_add(off as u64);
                    let old = tri!(mem.atom(sp, addr, op, ty, xv[l], cv[l], l));
                    if d != NONE {
                        set_lane(r, d, l, old);
                    }
                }
            }
            Op::CpAsync {
                dbase,
                doff,
                sbase,
                soff,
                size,
                src_size,
            } => {
                let dv = get(r, dbase);
                let sv = get(r, sbase);
                let nv = if src_size == NONE {
                    [u64::from(size); 32]
                } else {
                    get(r, src_size)
                };
                for l in lanes_of(m) {
                    let dst = dv[l].wrapping_add(doff as u64);
                    let src = sv[l].wrapping_add(soff as u64);
                    if !dst.is_multiple_of(u64::from(size)) || !src.is_multiple_of(u64::from(size))
                    {
                        fail!(mem.fault(Msp::Shared, dst, size, l));
                    }
                    for k in (0..u64::from(size)).step_by(4) {
                        let v = if k < nv[l] as u32 as u64 {
                            tri!(mem.load(Msp::Global, src + k, 4, l))
                        } else {
                            0
                        };
                        tri!(mem.store(Msp::Shared, dst + k, 4, v, l));
                    }
                }
            }
            Op::Mbar {
                op,
                sp,
                d,
                base,
                off,
                b,
            } => {
                if tri!(mbarrier::exec(op, sp, d, base, off, b, r, p, m, &mut mem)) {
                    // A failed wait ends the slice (retry loops spin around
                    // it): the warps that will arrive get to run.
                    step!();
                    leave!(Ev::Yield);
                }
            }
            Op::Cvta { to, sp, d, a } => {
                let window = match sp {
                    Msp::Shared => SHARED_WINDOW,
                    Msp::Local => LOCAL_WINDOW,
                    Msp::Param => PARAM_WINDOW,
                    _ => 0,
                };
                if to {
                    un!(r, m, d, a, |x| x.wrapping_sub(window))
                } else {
                    un!(r, m, d, a, |x| x.wrapping_add(window))
                }
            }
            Op::Isspacep { sp, d, a } => {
                let av = get(r, a);
                let mut v = 0u32;
                for (l, x) in av.iter().enumerate() {
                    let (s, _) = decode(*x);
                    let hit = match sp {
                        Msp::Global => s == Msp::Global && cx.view.region(*x).is_some(),
                        Msp::Const => s == Msp::Global,
                        other => s == other,
                    };
                    v |= u32::from(hit) << l;
                }
                pset(p, d, m, v);
            }
            Op::Bra { target } => {
                if n_exec >= budget {
                    // Take the branch first so that the state is consistent.
                    jump!(m, target);
                    leave!(Ev::Yield);
                }
                jump!(m, target);
                continue;
            }
            Op::Call { site } => {
                let Some(cs) = f.calls.get(site as usize) else {
                    fail!(Exc::new(ExcKind::Unsupported, 0));
                };
                match cs.callee {
                    Callee::Func(_) | Callee::Indirect(_) => {
                        if m == 0 {
                            // Every lane predicated off: a no-op.
                        } else {
                            pc_commit(ctl, pc, mask);
                            *executed = n_exec;
                            *threads = n_thr;
                            return Ok(Ev::Call(site, m));
                        }
                    }
                    Callee::Vprintf => {
                        for l in lanes_of(m) {
                            let fmt_ptr = match cs.args.first() {
                                Some(&(o, _)) => {
                                    tri!(mem.load(Msp::Frame, u64::from(lbase + o), 8, l))
                                }
                                None => 0,
                            };
                            let arg_ptr = match cs.args.get(1) {
                                Some(&(o, _)) => {
                                    tri!(mem.load(Msp::Frame, u64::from(lbase + o), 8, l))
                                }
                                None => 0,
                            };
                            let fmt = tri!(mem.cstr(fmt_ptr, printf::MAX_STRING, l));
                            let mut src = ArgSource {
                                mem: &mut mem,
                                lane: l,
                                base: arg_ptr,
                                err: None,
                            };
                            let before = env.printf.len();
                            let count = printf::vprintf(&fmt, &mut src, &mut env.printf);
                            if let Some(e) = src.err.take() {
                                fail!(e);
                            }
                            // Like the device's printf buffer: output past
                            // the launch's budget is dropped.
                            let added = (env.printf.len() - before) as i64;
                            if cx.printf_left.fetch_sub(added, Relaxed) < added {
                                env.printf.truncate(before);
                            }
                            if let Some(&(o, size)) = cs.rets.first() {
                                let v = count.map_or(u64::MAX, u64::from);
                                tri!(mem.store(
                                    Msp::Frame,
                                    u64::from(lbase + o),
                                    size.min(4) as u8,
                                    v,
                                    l
                                ));
                            }
                        }
                    }
                    Callee::AssertFail => {
                        if let Some(l) = lanes_of(m).next() {
                            let arg = |mem: &mut Mem<'_, '_, '_>, k: usize, size: u8| -> u64 {
                                cs.args
                                    .get(k)
                                    .and_then(|&(o, _)| {
                                        mem.load(Msp::Frame, u64::from(lbase + o), size, l).ok()
                                    })
                                    .unwrap_or(0)
                            };
                            let msg_p = arg(&mut mem, 0, 8);
                            let file_p = arg(&mut mem, 1, 8);
                            let line = arg(&mut mem, 2, 4) as u32;
                            let func_p = arg(&mut mem, 3, 8);
                            let s = |mem: &mut Mem<'_, '_, '_>, p: u64| {
                                mem.cstr(p, 4096, l)
                                    .map(|v| String::from_utf8_lossy(&v).into_owned())
                                    .unwrap_or_default()
                            };
                            let msg = s(&mut mem, msg_p);
                            let file = s(&mut mem, file_p);
                            let func = s(&mut mem, func_p);
                            let c = env.ctaid;
                            let text = format!(
                                "{file}:{line}: {func}: block: [{},{},{}], thread: [{},{},{}] Assertion `{msg}` failed.\n",
                                c[0], c[1], c[2], w.tid[0][l], w.tid[1][l], w.tid[2][l]
                            );
                            env.printf.extend_from_slice(text.as_bytes());
                            let mut e = Exc::new(ExcKind::Assert, l);
                            e.msg = text.trim_end().to_string();
                            fail!(e);
                        }
                    }
                    Callee::DevRt(k) => {
                        let arg =
                            |mem: &mut Mem<'_, '_, '_>, i: usize, at: u32, size: u8, l| match cs
                                .args
                                .get(i)
                            {
                                Some(&(o, _)) => {
                                    mem.load(Msp::Frame, u64::from(lbase + o + at), size, l)
                                }
                                None => Ok(0),
                            };
                        let dl = &cx.device_launches;
                        for l in lanes_of(m) {
                            let thread = (env.ctaid, [w.tid[0][l], w.tid[1][l], w.tid[2][l]]);
                            let ret = match k {
                                DevRt::GetParameterBuffer => {
                                    let func = tri!(arg(&mut mem, 0, 0, 8, l));
                                    let mut dims = [[0u32; 3]; 2];
                                    for (d, dim) in dims.iter_mut().enumerate() {
                                        for (c, v) in dim.iter_mut().enumerate() {
                                            *v = tri!(arg(&mut mem, d + 1, 4 * c as u32, 4, l))
                                                as u32;
                                        }
                                    }
                                    let config = super::LaunchConfig {
                                        grid: dims[0],
                                        block: dims[1],
                                        dynamic_shared: tri!(arg(&mut mem, 3, 0, 4, l)) as u32,
                                        cooperative: false,
                                    };
                                    dl.parameter_buffer(cx.module, cx.view, thread, func, config)
                                }
                                DevRt::LaunchDevice => {
                                    let buffer = tri!(arg(&mut mem, 0, 0, 8, l));
                                    let stream = tri!(arg(&mut mem, 1, 0, 8, l));
                                    u64::from(dl.launch(thread, buffer, stream))
                                }
                                DevRt::StreamCreate => {
                                    let out = tri!(arg(&mut mem, 0, 0, 8, l));
                                    tri!(mem.store(Msp::Generic, out, 8, dl.stream(), l));
                                    0
                                }
                                DevRt::StreamDestroy => 0,
                                DevRt::GetLastError => u64::from(dl.last_error(thread, true)),
                                DevRt::PeekAtLastError => u64::from(dl.last_error(thread, false)),
                                DevRt::MemcpyAsync => {
                                    let dst = tri!(arg(&mut mem, 0, 0, 8, l));
                                    let src = tri!(arg(&mut mem, 1, 0, 8, l));
                                    let len = tri!(arg(&mut mem, 2, 0, 8, l));
                                    let work =
                                        super::device_launch::ChildWork::Copy { dst, src, len };
                                    u64::from(dl.queue_work(thread, work))
                                }
                                DevRt::GetErrorString => {
                                    let code = tri!(arg(&mut mem, 0, 0, 4, l)) as u32;
                                    let text = rcud_proto::CudaError(code)
                                        .description()
                                        .unwrap_or("unrecognized error code");
                                    // A copy in the device heap, as the
                                    // string must be device memory; NULL
                                    // when the heap is full.
                                    let heap = cx.view.heap();
                                    let at = heap.map_or(0, |h| h.malloc(text.len() as u64 + 1));
                                    if at != 0 {
                                        for (i, b) in text.bytes().chain([0]).enumerate() {
                                            tri!(mem.store(
                                                Msp::Generic,
                                                at + i as u64,
                                                1,
                                                u64::from(b),
                                                l
                                            ));
                                        }
                                    }
                                    at
                                }
                                DevRt::GraphSetConditional => {
                                    let handle = tri!(arg(&mut mem, 0, 0, 8, l));
                                    let value = tri!(arg(&mut mem, 1, 0, 4, l));
                                    tri!(mem.store(Msp::Generic, handle, 4, value, l));
                                    0
                                }
                                DevRt::MemsetAsync => {
                                    let dst = tri!(arg(&mut mem, 0, 0, 8, l));
                                    let value = tri!(arg(&mut mem, 1, 0, 4, l)) as u8;
                                    let len = tri!(arg(&mut mem, 2, 0, 8, l));
                                    let work =
                                        super::device_launch::ChildWork::Fill { dst, value, len };
                                    u64::from(dl.queue_work(thread, work))
                                }
                            };
                            if let Some(&(o, size)) = cs.rets.first() {
                                tri!(mem.store(
                                    Msp::Frame,
                                    u64::from(lbase + o),
                                    size.min(8) as u8,
                                    ret,
                                    l
                                ));
                            }
                        }
                    }
                    Callee::Malloc | Callee::Free => {
                        let malloc = matches!(cs.callee, Callee::Malloc);
                        for l in lanes_of(m) {
                            let arg = match cs.args.first() {
                                Some(&(o, _)) => {
                                    tri!(mem.load(Msp::Frame, u64::from(lbase + o), 8, l))
                                }
                                None => 0,
                            };
                            let heap = cx.view.heap();
                            if malloc {
                                let ptr = heap.map_or(0, |h| h.malloc(arg));
                                if let Some(&(o, size)) = cs.rets.first() {
                                    tri!(mem.store(
                                        Msp::Frame,
                                        u64::from(lbase + o),
                                        size.min(8) as u8,
                                        ptr,
                                        l
                                    ));
                                }
                            } else if arg != 0 && !heap.is_some_and(|h| h.free(arg)) {
                                // A pointer `malloc` did not return: the
                                // device's `free` traps.
                                let mut e = Exc::new(ExcKind::Illegal, l);
                                e.addr = arg;
                                e.msg = format!("free({arg:#x}) of memory malloc did not return");
                                fail!(e);
                            }
                        }
                    }
                }
            }
            Op::Ret | Op::Exit => {
                let exit = matches!(inst.op, Op::Exit) || w.frames.is_empty();
                if exit {
                    w.exited |= m;
                }
                if m == mask {
                    ctl.live &= !m;
                    ctl.pc = pc;
                    ctl.mask = 0;
                    ctl.reschedule();
                } else {
                    // Lanes whose guard is false go on.
                    ctl.pc = pc;
                    ctl.mask = mask;
                    ctl.sync();
                    for l in lanes_of(mask & !m) {
                        ctl.pcs[l] = pc + 1;
                    }
                    ctl.live &= !m;
                    ctl.reschedule();
                }
                pc = ctl.pc;
                mask = ctl.mask;
                if mask == 0 {
                    leave!(Ev::Frame);
                }
                continue;
            }
            Op::Trap => {
                if m != 0 {
                    fail!(Exc::new(ExcKind::Trap, m.trailing_zeros() as usize));
                }
            }
            Op::Bar {
                kind,
                d,
                p: q,
                id,
                n,
            } => {
                let mut wait = kind != Bar::Arrive;
                if n != NONE && m != 0 && matches!(kind, Bar::Sync | Bar::Arrive) {
                    let l0 = m.trailing_zeros() as usize;
                    let (b, c) = (get(r, id)[l0], get(r, n)[l0]);
                    // A converged warp counts whole, as `bar` counts warps.
                    let arrivals = if m == w.exists { 32 } else { m.count_ones() };
                    match mbarrier::named_arrive(&mut env.named, b, c, arrivals) {
                        Some(gen) if wait => w.bar_wait = Some((b as u8 & 15, gen)),
                        _ => wait = false,
                    }
                }
                if wait && m != 0 {
                    match kind {
                        Bar::Popc => {
                            env.bar_popc += (pmask(p, q) & m).count_ones();
                            w.bar_red = Some((d, kind));
                        }
                        Bar::And => {
                            env.bar_and &= pmask(p, q) & m == m;
                            w.bar_red = Some((d, kind));
                        }
                        Bar::Or => {
                            env.bar_or |= pmask(p, q) & m != 0;
                            w.bar_red = Some((d, kind));
                        }
                        _ => {}
                    }
                    ctl.pc = pc;
                    ctl.mask = mask;
                    ctl.sync();
                    for l in lanes_of(mask) {
                        ctl.pcs[l] = pc + 1;
                    }
                    ctl.blocked |= m;
                    ctl.reschedule();
                    pc = ctl.pc;
                    mask = ctl.mask;
                    if mask == 0 {
                        leave!(Ev::Frame);
                    }
                    continue;
                }
            }
            Op::Shfl {
                mode,
                d,
                dp,
                a,
                b,
                c,
            } => {
                let av = get(r, a);
                let bv = get(r, b);
                let cv = get(r, c);
                let mut o = [0u64; 32];
                let mut ok = 0u32;
                for l in lanes_of(m) {
                    let lane = l as i32;
                    let bval = (bv[l] & 31) as i32;
                    let cval = (cv[l] & 31) as i32;
                    let seg = ((cv[l] >> 8) & 31) as i32;
                    let max_lane = (lane & seg) | (cval & !seg);
                    let min_lane = lane & seg;
                    let (j, pval) = match mode {
                        Shfl::Up => (lane - bval, lane - bval >= max_lane),
                        Shfl::Down => (lane + bval, lane + bval <= max_lane),
                        Shfl::Bfly => (lane ^ bval, (lane ^ bval) <= max_lane),
                        Shfl::Idx => {
                            let j = min_lane | (bval & !seg);
                            (j, j <= max_lane)
                        }
                    };
                    let src = if pval { (j & 31) as usize } else { l };
                    o[l] = av[src];
                    ok |= u32::from(pval) << l;
                }
                put(r, d, m, &o);
                if dp != NONE {
                    pset(p, dp, m, ok);
                }
            }
            Op::Vote { mode, d, a, mask } => {
                let pv = pmask(p, a) & m;
                let groups = member_groups(r, mask, m);
                match mode {
                    Vote::Ballot => {
                        let mut o = [0u64; 32];
                        for l in lanes_of(m) {
                            o[l] = u64::from(pv & groups[l]);
                        }
                        put(r, d, m, &o);
                    }
                    _ => {
                        let mut bits = 0u32;
                        for l in lanes_of(m) {
                            let (g, v) = (groups[l], pv & groups[l]);
                            let yes = match mode {
                                Vote::All => v == g,
                                Vote::Any => v != 0,
                                _ => v == g || v == 0,
                            };
                            bits |= u32::from(yes) << l;
                        }
                        pset(p, d, m, bits);
                    }
                }
            }
            Op::Match {
                all,
                wide,
                d,
                dp,
                a,
                mask,
            } => {
                let av = get(r, a);
                let groups = member_groups(r, mask, m);
                let key = |x: u64| if wide { x } else { x & 0xFFFF_FFFF };
                let mut o = [0u64; 32];
                let mut same_bits = 0u32;
                for l in lanes_of(m) {
                    let g = groups[l];
                    let mut eq = 0u32;
                    for k in lanes_of(g) {
                        if key(av[k]) == key(av[l]) {
                            eq |= 1 << k;
                        }
                    }
                    if all {
                        let same = eq == g;
                        o[l] = if same { u64::from(g) } else { 0 };
                        same_bits |= u32::from(same) << l;
                    } else {
                        o[l] = u64::from(eq);
                    }
                }
                put(r, d, m, &o);
                if all && dp != NONE {
                    pset(p, dp, m, same_bits);
                }
            }
            Op::Activemask { d } => {
                let o = [u64::from(m); 32];
                put(r, d, m, &o);
            }
            Op::Redux {
                op,
                signed,
                d,
                a,
                mask,
            } => {
                let av = get(r, a);
                let groups = member_groups(r, mask, m);
                let mut o = [0u64; 32];
                for l in lanes_of(m) {
                    let mut acc: Option<u32> = None;
                    for k in lanes_of(groups[l]) {
                        let x = av[k] as u32;
                        acc = Some(match acc {
                            None => x,
                            Some(v) => match op {
                                Redux::Add => v.wrapping_add(x),
                                Redux::Min if signed => (v as i32).min(x as i32) as u32,
                                Redux::Max if signed => (v as i32).max(x as i32) as u32,
                                Redux::Min => v.min(x),
                                Redux::Max => v.max(x),
                                Redux::And => v & x,
                                Redux::Or => v | x,
                                Redux::Xor => v ^ x,
                            },
                        });
                    }
                    o[l] = u64::from(acc.unwrap_or(0));
                }
                put(r, d, m, &o);
            }
            Op::Mma(ref op) => tensor::mma(r, m, op),
            Op::WmmaMem(ref op) => tri!(tensor::wmma_mem(r, m, op, &mut mem, lbase)),
            Op::Ldmatrix {
                store,
                trans,
                n,
                sp,
                r: ref regs,
                base,
                off,
            } => tri!(tensor::ldmatrix(
                r, m, store, trans, n, sp, regs, base, off, &mut mem, lbase
            )),
            Op::Movmatrix { d, a } => tensor::movmatrix(r, m, d, a),
            Op::Image(ref op) => tri!(texture::image(r, p, m, op, &mut mem)),
            Op::CvtTf32 { rnd, sat, d, a } => {
                un!(r, m, d, a, |x| u64::from(tensor::tf32(x as u32, rnd, sat)))
            }
        }
        step!();
    }
}

#[inline(always)]
fn pc_commit(ctl: &mut Ctl, pc: u32, mask: u32) {
    ctl.pc = pc;
    ctl.mask = mask;
}

fn sty(w: Iw) -> Ty {
    match w {
        Iw::U8 => Ty::U8,
        Iw::U16 => Ty::U16,
        Iw::U32 => Ty::U32,
        Iw::U64 => Ty::U64,
        Iw::S8 => Ty::S8,
        Iw::S16 => Ty::S16,
        Iw::S32 => Ty::S32,
        Iw::S64 => Ty::S64,
    }
}
