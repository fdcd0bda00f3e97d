//! IR to Cranelift: the units a function is cut into and their code.
//!
//! A function becomes one native function `fn(state, pc) -> u64` that
//! dispatches on `pc` to the unit starting there:
//! - a *segment*: consecutive lane-local instructions (integer and float
//!   arithmetic, compares, selects, predicate logic, moves, and loads from
//!   global, constant, shared and parameter memory), run lane by lane with
//!   the lane's values kept in registers. Loads have no side effects, so a
//!   lane may run its loads before the next lane runs its own; a load that
//!   would fault ends the segment with [`super::FAULT`] and the fault the
//!   interpreter would have raised first (lowest pc, then lowest lane);
//! - a *memory* instruction (stores, and loads through generic addresses),
//!   run in two passes: every lane's address checked first, then every
//!   lane's access;
//! - a *branch*, taken when all running lanes agree;
//! - anything else: a return to the interpreter at that instruction.
//!
//! The result is the pc to resume at, with [`super::YIELD`] set when the
//! instruction budget ran out at a taken branch.

use std::collections::{BTreeSet, HashMap};
use std::mem::offset_of;

use cranelift_codegen::ir::condcodes::{FloatCC, IntCC};
use cranelift_codegen::ir::{
    types, AbiParam, Block, InstBuilder, MemFlagsData as MemFlags, Type, Value,
};
use cranelift_codegen::settings::{self, Configurable};
use cranelift_frontend::{FunctionBuilder, FunctionBuilderContext, Switch, Variable};
use cranelift_jit::{JITBuilder, JITModule};
use cranelift_module::{Linkage, Module};

use super::{JitState, FAULT, YIELD};
use crate::ptx::ir::{
    BoolOp, Cmp, Ft, Function, Int1, Int2, Iw, Mad, Msp, Op, PredOp, Rnd, Sreg, F2, GUARD_NEG,
    NONE, P, R,
};
use crate::ptx::Ty;

/// A compiled function: native code and the pcs it can be entered at.
pub(crate) struct Compiled {
    _module: JITModule,
    entry: extern "C" fn(*mut JitState, u32) -> u64,
    /// Per pc: whether compiled code starts there.
    entries: Vec<bool>,
    /// Instructions the compiler took.
    pub(crate) compiled_insts: usize,
}

// SAFETY: after `finalize_definitions` the module's code and data are never
// written again; the module is only kept so that its memory stays mapped.
// Calling the code from several threads at once is fine: it keeps no state
// of its own.
unsafe impl Send for Compiled {}
// SAFETY: as above.
unsafe impl Sync for Compiled {}

impl Compiled {
    /// Whether compiled code can start at `pc`.
    pub(crate) fn is_entry(&self, pc: u32) -> bool {
        self.entries.get(pc as usize).copied().unwrap_or(false)
    }

    /// Runs compiled code from `pc` on the state; the pc to resume at,
    /// with [`YIELD`] set when the warp must yield.
    ///
    /// # Safety
    /// `st.regs` must point to `nslots * 32` values and `st.preds` to
    /// `npreds` masks of the function compiled, `st.shared` and `st.params`
    /// to as many bytes as their lengths say, `st.tid` to the warp's thread
    /// ids and `st.view` to the launch's memory view, all valid for the call.
    pub(crate) unsafe fn run(&self, st: &mut JitState, pc: u32) -> u64 {
        (self.entry)(st as *mut JitState, pc)
    }
}

/// What a unit of the function is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Lane,
    Mem,
    Branch,
    Other,
}

fn int_bits(w: Iw) -> u32 {
    w.bits()
}

/// Integer compare types: (bits, signed).
fn cmp_int(ty: Ty) -> Option<(u32, bool)> {
    Some(match ty {
        Ty::U8 | Ty::B8 => (8, false),
        Ty::U16 | Ty::B16 => (16, false),
        Ty::U32 | Ty::B32 => (32, false),
        Ty::U64 | Ty::B64 => (64, false),
        Ty::S8 => (8, true),
        Ty::S16 => (16, true),
        Ty::S32 => (32, true),
        Ty::S64 => (64, true),
        _ => return None,
    })
}

fn plain_rnd(rnd: Rnd) -> bool {
    matches!(rnd, Rnd::Default | Rnd::Rn)
}

fn is_wide(w: Iw) -> bool {
    matches!(w, Iw::U32 | Iw::S32 | Iw::U64 | Iw::S64)
}

/// Loads a segment runs itself: in these spaces a failed check is always
/// a fault (a generic address may also name local memory, which compiled
/// code leaves to the interpreter).
fn lane_load(sp: Msp) -> bool {
    matches!(sp, Msp::Global | Msp::Const | Msp::Shared | Msp::Param)
}

/// Which kind of unit an operation makes.
fn kind(op: &Op) -> Kind {
    match *op {
        Op::Nop | Op::Mov { .. } | Op::Cvta { .. } => Kind::Lane,
        Op::Special { sr, .. } => match sr {
            Sreg::Tid(k) | Sreg::Ntid(k) | Sreg::Ctaid(k) | Sreg::Nctaid(k) if k < 3 => Kind::Lane,
            Sreg::Laneid | Sreg::Warpid => Kind::Lane,
            _ => Kind::Other,
        },
        Op::Int2 { op, w, .. } => match op {
            Int2::And | Int2::Or | Int2::Xor => Kind::Lane,
            Int2::Add
            | Int2::Sub
            | Int2::MulLo
            | Int2::Min
            | Int2::Max
            | Int2::Shl
            | Int2::Shr
            | Int2::MulHi
            | Int2::Div
            | Int2::Rem
                if is_wide(w) =>
            {
                Kind::Lane
            }
            Int2::MulWide if int_bits(w) == 32 => Kind::Lane,
            _ => Kind::Other,
        },
        Op::Int1 { op: Int1::Not, .. } => Kind::Lane,
        Op::Mad { op: Mad::Lo, w, .. } if is_wide(w) => Kind::Lane,
        Op::Mad {
            op: Mad::Wide, w, ..
        } if int_bits(w) == 32 => Kind::Lane,
        Op::Setp { ty, .. } if cmp_int(ty).is_some() || matches!(ty, Ty::F32 | Ty::F64) => {
            Kind::Lane
        }
        Op::Selp { .. }
        | Op::Pred { .. }
        | Op::PredConst { .. }
        | Op::FromPred { .. }
        | Op::ToPred { .. } => Kind::Lane,
        Op::F2 {
            op: F2::Add | F2::Sub | F2::Mul,
            t: Ft::F32 | Ft::F64,
            rnd,
            ftz: false,
            sat: false,
            ..
        } if plain_rnd(rnd) => Kind::Lane,
        Op::Fma {
            t: Ft::F32 | Ft::F64,
            rnd,
            ftz: false,
            sat: false,
            ..
        } if plain_rnd(rnd) => Kind::Lane,
        Op::Cvt {
            dt,
            st,
            rnd,
            sat: false,
            ..
        } => match (dt, st) {
            (Ty::U64, Ty::U32)
            | (Ty::S64, Ty::S32)
            | (Ty::U64, Ty::S32)
            | (Ty::U32, Ty::U64)
            | (Ty::S32, Ty::S64)
            | (Ty::U32, Ty::S64)
            | (Ty::F64, Ty::F32) => Kind::Lane,
            (Ty::F32, Ty::S32) | (Ty::F32, Ty::U32) if plain_rnd(rnd) => Kind::Lane,
            _ => Kind::Other,
        },
        Op::Ld {
            sp, size, n: 1, d, ..
        } if lane_load(sp) && matches!(size, 1 | 2 | 4 | 8) && d[0] != NONE => Kind::Lane,
        Op::Ld {
            sp: Msp::Generic,
            size,
            n: 1,
            d,
            ..
        } if matches!(size, 1 | 2 | 4 | 8) && d[0] != NONE => Kind::Mem,
        Op::St { sp, size, n: 1, .. }
            if matches!(sp, Msp::Global | Msp::Shared | Msp::Generic)
                && matches!(size, 1 | 2 | 4 | 8) =>
        {
            Kind::Mem
        }
        Op::Bra { .. } => Kind::Branch,
        _ => Kind::Other,
    }
}

/// Field offsets of [`JitState`].
mod off {
    use super::*;
    pub(super) const REGS: i32 = offset_of!(JitState, regs) as i32;
    pub(super) const PREDS: i32 = offset_of!(JitState, preds) as i32;
    pub(super) const SHARED: i32 = offset_of!(JitState, shared) as i32;
    pub(super) const SHARED_LEN: i32 = offset_of!(JitState, shared_len) as i32;
    pub(super) const PARAMS: i32 = offset_of!(JitState, params) as i32;
    pub(super) const PARAMS_LEN: i32 = offset_of!(JitState, params_len) as i32;
    pub(super) const GBASE: i32 = offset_of!(JitState, gbase) as i32;
    pub(super) const GLEN: i32 = offset_of!(JitState, glen) as i32;
    pub(super) const GPTR: i32 = offset_of!(JitState, gptr) as i32;
    pub(super) const GBASE2: i32 = offset_of!(JitState, gbase2) as i32;
    pub(super) const GLEN2: i32 = offset_of!(JitState, glen2) as i32;
    pub(super) const GPTR2: i32 = offset_of!(JitState, gptr2) as i32;
    pub(super) const LOOKUP: i32 = offset_of!(JitState, lookup) as i32;
    pub(super) const TID: i32 = offset_of!(JitState, tid) as i32;
    pub(super) const SREGS: i32 = offset_of!(JitState, sregs) as i32;
    pub(super) const MASK: i32 = offset_of!(JitState, mask) as i32;
    pub(super) const EXECUTED: i32 = offset_of!(JitState, executed) as i32;
    pub(super) const THREADS: i32 = offset_of!(JitState, threads) as i32;
    pub(super) const BUDGET: i32 = offset_of!(JitState, budget) as i32;
    pub(super) const SCRATCH: i32 = offset_of!(JitState, scratch) as i32;
    pub(super) const FAULT_LANE: i32 = offset_of!(JitState, fault_lane) as i32;
    pub(super) const FAULT_ADDR: i32 = offset_of!(JitState, fault_addr) as i32;
}

/// Compiles `f`; an error when the compiler takes none of it.
pub(crate) fn compile(f: &Function) -> Result<Compiled, String> {
    let n = f.code.len();
    FILES.with(|c| c.set((f.nslots, f.npreds)));
    let kinds: Vec<Kind> = f.code.iter().map(|i| kind(&i.op)).collect();
    if !kinds.iter().any(|k| *k != Kind::Other) {
        return Err("no instruction it compiles".into());
    }
    // Unit starts: pc 0, branch targets, after branches, and around every
    // instruction that is not lane-local.
    let mut starts = BTreeSet::new();
    starts.insert(0u32);
    for (pc, inst) in f.code.iter().enumerate() {
        let pc = pc as u32;
        if let Op::Bra { target } = inst.op {
            starts.insert(target);
        }
        if kinds[pc as usize] != Kind::Lane {
            starts.insert(pc);
            starts.insert(pc + 1);
        }
    }
    starts.retain(|&s| (s as usize) <= n);

    let mut flags = settings::builder();
    let set = |flags: &mut settings::Builder, k: &str, v: &str| {
        flags
            .set(k, v)
            .map_err(|e| format!("cranelift setting {k}: {e}"))
    };
    set(&mut flags, "opt_level", "speed")?;
    set(&mut flags, "is_pic", "false")?;
    set(&mut flags, "use_colocated_libcalls", "false")?;
    let isa = cranelift_native::builder()
        .map_err(|e| format!("host not supported by cranelift: {e}"))?
        .finish(settings::Flags::new(flags))
        .map_err(|e| format!("cranelift: {e}"))?;
    let mut module = JITModule::new(JITBuilder::with_isa(
        isa,
        cranelift_module::default_libcall_names(),
    ));
    let ptr = module.target_config().pointer_type();
    let mut ctx = module.make_context();
    ctx.func.signature.params.push(AbiParam::new(ptr));
    ctx.func.signature.params.push(AbiParam::new(types::I32));
    ctx.func.signature.returns.push(AbiParam::new(types::I64));
    let mut lookup_sig = module.make_signature();
    lookup_sig.params.push(AbiParam::new(ptr));
    lookup_sig.params.push(AbiParam::new(types::I64));
    lookup_sig.params.push(AbiParam::new(types::I64));
    lookup_sig.returns.push(AbiParam::new(ptr));

    let mut fctx = FunctionBuilderContext::new();
    let mut compiled_insts = 0;
    {
        let mut b = FunctionBuilder::new(&mut ctx.func, &mut fctx);
        let lookup_sig = b.import_signature(lookup_sig);
        let entry = b.create_block();
        b.append_block_params_for_function_params(entry);
        b.switch_to_block(entry);
        let state = b.block_params(entry)[0];
        let start_pc = b.block_params(entry)[1];
        let fl = MemFlags::trusted();
        let executed = b.declare_var(types::I64);
        let threads = b.declare_var(types::I64);
        let v = b.ins().load(types::I64, fl, state, off::EXECUTED);
        b.def_var(executed, v);
        let v = b.ins().load(types::I64, fl, state, off::THREADS);
        b.def_var(threads, v);
        let mask = b.ins().load(types::I32, fl, state, off::MASK);
        let popc32 = b.ins().popcnt(mask);
        let popc = b.ins().uextend(types::I64, popc32);
        let budget = b.ins().load(types::I64, fl, state, off::BUDGET);
        let regs = b.ins().load(ptr, fl, state, off::REGS);
        let preds = b.ins().load(ptr, fl, state, off::PREDS);
        let tid = b.ins().load(ptr, fl, state, off::TID);
        let shared = b.ins().load(ptr, fl, state, off::SHARED);
        let shared_len = b.ins().load(types::I64, fl, state, off::SHARED_LEN);
        let params = b.ins().load(ptr, fl, state, off::PARAMS);
        let params_len = b.ins().load(types::I64, fl, state, off::PARAMS_LEN);
        let lookup_fn = b.ins().load(ptr, fl, state, off::LOOKUP);

        let exit = b.create_block();
        b.append_block_param(exit, types::I64);
        let unit_blocks: HashMap<u32, Block> =
            starts.iter().map(|&s| (s, b.create_block())).collect();
        let g = Gen {
            state,
            mask,
            popc,

            regs,
            preds,
            tid,
            shared,
            shared_len,
            params,
            params_len,
            lookup_fn,
            lookup_sig,
            executed,
            threads,
            exit,
        };
        // Dispatch on the entry pc.
        let mut sw = Switch::new();
        for (&s, &blk) in &unit_blocks {
            if (s as usize) < n && kinds[s as usize] != Kind::Other {
                sw.set_entry(u128::from(s), blk);
            }
        }
        let bad_entry = b.create_block();
        sw.emit(&mut b, start_pc, bad_entry);
        b.switch_to_block(bad_entry);
        let v = b.ins().uextend(types::I64, start_pc);
        b.ins().jump(exit, &[v.into()]);

        let starts_v: Vec<u32> = starts.iter().copied().collect();
        for (i, &s) in starts_v.iter().enumerate() {
            let blk = unit_blocks[&s];
            b.switch_to_block(blk);
            let next_pc = starts_v.get(i + 1).copied().unwrap_or(n as u32 + 1);
            if s as usize >= n {
                // Past the end: the interpreter reports it.
                let v = b.ins().iconst(types::I64, i64::from(s));
                b.ins().jump(exit, &[v.into()]);
                continue;
            }
            let next_blk = unit_blocks.get(&next_pc).copied();
            let next = |b: &mut FunctionBuilder| match next_blk {
                Some(nb) => {
                    b.ins().jump(nb, &[]);
                }
                None => {
                    let v = b.ins().iconst(types::I64, i64::from(next_pc));
                    b.ins().jump(exit, &[v.into()]);
                }
            };
            match kinds[s as usize] {
                Kind::Other => {
                    let v = b.ins().iconst(types::I64, i64::from(s));
                    b.ins().jump(exit, &[v.into()]);
                }
                Kind::Lane => {
                    let end = next_pc.min(n as u32);
                    g.segment(&mut b, f, s, end)?;
                    compiled_insts += (end - s) as usize;
                    next(&mut b);
                }
                Kind::Mem => {
                    g.memory(&mut b, f, s)?;
                    compiled_insts += 1;
                    next(&mut b);
                }
                Kind::Branch => {
                    let Op::Bra { target } = f.code[s as usize].op else {
                        return Err("branch expected".into());
                    };
                    let guard = f.code[s as usize].guard;
                    let taken = b.create_block();
                    let not_taken = b.create_block();
                    if guard == NONE {
                        b.ins().jump(taken, &[]);
                    } else {
                        // All running lanes jump, none does, or they diverge
                        // (the interpreter's business).
                        let gm = g.guard_mask(&mut b, guard)?;
                        let all = b.ins().icmp(IntCC::Equal, gm, mask);
                        let none = b.ins().icmp_imm(IntCC::Equal, gm, 0);
                        let split = b.create_block();
                        let check_none = b.create_block();
                        b.ins().brif(all, taken, &[], check_none, &[]);
                        b.switch_to_block(check_none);
                        b.ins().brif(none, not_taken, &[], split, &[]);
                        b.switch_to_block(split);
                        let v = b.ins().iconst(types::I64, i64::from(s));
                        b.ins().jump(exit, &[v.into()]);
                    }
                    b.switch_to_block(taken);
                    g.count(&mut b, 1);
                    let e = b.use_var(executed);
                    let over = b.ins().icmp(IntCC::UnsignedGreaterThanOrEqual, e, budget);
                    let go = b.create_block();
                    let yield_blk = b.create_block();
                    b.ins().brif(over, yield_blk, &[], go, &[]);
                    b.switch_to_block(yield_blk);
                    let v = b
                        .ins()
                        .iconst(types::I64, (YIELD | u64::from(target)) as i64);
                    b.ins().jump(exit, &[v.into()]);
                    b.switch_to_block(go);
                    match unit_blocks.get(&target) {
                        Some(&tb) if (target as usize) < n => {
                            b.ins().jump(tb, &[]);
                        }
                        _ => {
                            let v = b.ins().iconst(types::I64, i64::from(target));
                            b.ins().jump(exit, &[v.into()]);
                        }
                    }
                    b.switch_to_block(not_taken);
                    g.count(&mut b, 1);
                    next(&mut b);
                    compiled_insts += 1;
                }
            }
        }
        b.switch_to_block(exit);
        let ret = b.block_params(exit)[0];
        let e = b.use_var(executed);
        let t = b.use_var(threads);
        b.ins().store(fl, e, state, off::EXECUTED);
        b.ins().store(fl, t, state, off::THREADS);
        b.ins().return_(&[ret]);
        b.seal_all_blocks();
        b.finalize();
    }
    let id = module
        .declare_function("kernel", Linkage::Local, &ctx.func.signature)
        .map_err(|e| format!("cranelift: {e}"))?;
    module
        .define_function(id, &mut ctx)
        .map_err(|e| format!("cranelift: {e:?}"))?;
    module.clear_context(&mut ctx);
    module
        .finalize_definitions()
        .map_err(|e| format!("cranelift: {e}"))?;
    let code = module.get_finalized_function(id);
    // SAFETY: `code` is the finalized function declared above with the
    // signature (pointer, i32) -> i64 in the host's default calling
    // convention, which is that of `extern "C" fn(*mut JitState, u32) -> u64`;
    // it stays mapped as long as `module`, which `Compiled` owns.
    let entry =
        unsafe { std::mem::transmute::<*const u8, extern "C" fn(*mut JitState, u32) -> u64>(code) };
    let mut entries = vec![false; n];
    for &s in &starts {
        if (s as usize) < n && kinds[s as usize] != Kind::Other {
            entries[s as usize] = true;
        }
    }
    Ok(Compiled {
        _module: module,
        entry,
        entries,
        compiled_insts,
    })
}

/// Values of the entry block every unit uses.
struct Gen {
    state: Value,
    mask: Value,
    popc: Value,
    regs: Value,
    preds: Value,
    tid: Value,
    shared: Value,
    shared_len: Value,
    params: Value,
    params_len: Value,
    lookup_fn: Value,
    lookup_sig: cranelift_codegen::ir::SigRef,
    executed: Variable,
    threads: Variable,
    exit: Block,
}

/// One lane's view of the registers within a segment.
struct LaneRegs {
    lane: Value,
    /// `regs + lane * 8`.
    base: Value,
    vals: HashMap<R, Value>,
    dirty: Vec<R>,
    /// Predicate bits of this lane (i32, 0 or 1).
    bits: HashMap<P, Value>,
    pdirty: Vec<P>,
    /// The instruction being compiled.
    pc: u32,
    /// With loads in the segment: the lowest pc at which a lane's load
    /// faulted (`u32::MAX`: none), and the block that goes on with the next
    /// lane.
    fault: Option<(Variable, Block)>,
}

thread_local! {
    /// Slot and predicate counts of the function being compiled: compiled
    /// code must never reach past the frame's files.
    static FILES: std::cell::Cell<(u32, u32)> = const { std::cell::Cell::new((0, 0)) };
}

fn slot_off(s: R) -> Result<i32, String> {
    if s >= FILES.with(|f| f.get().0) {
        return Err(format!("slot {s} outside the register file"));
    }
    i32::try_from(u64::from(s) * 256).map_err(|_| "register file too large".to_string())
}

fn pred_off(p: P) -> Result<i32, String> {
    if p >= FILES.with(|f| f.get().1) {
        return Err(format!("predicate {p} outside the predicate file"));
    }
    i32::try_from(u64::from(p) * 4).map_err(|_| "predicate file too large".to_string())
}

impl Gen {
    /// Adds `n` instructions to the counters.
    fn count(&self, b: &mut FunctionBuilder, n: i64) {
        let e = b.use_var(self.executed);
        let e = b.ins().iadd_imm(e, n);
        b.def_var(self.executed, e);
        let t = b.use_var(self.threads);
        let add = b.ins().imul_imm(self.popc, n);
        let t = b.ins().iadd(t, add);
        b.def_var(self.threads, t);
    }

    /// The lanes of the running mask whose guard holds.
    fn guard_mask(&self, b: &mut FunctionBuilder, guard: u32) -> Result<Value, String> {
        let w = b.ins().load(
            types::I32,
            MemFlags::trusted(),
            self.preds,
            pred_off(guard & !GUARD_NEG)?,
        );
        let w = if guard & GUARD_NEG != 0 {
            b.ins().bnot(w)
        } else {
            w
        };
        Ok(b.ins().band(w, self.mask))
    }

    fn read(&self, b: &mut FunctionBuilder, lr: &mut LaneRegs, s: R) -> Result<Value, String> {
        if let Some(&v) = lr.vals.get(&s) {
            return Ok(v);
        }
        let v = b
            .ins()
            .load(types::I64, MemFlags::trusted(), lr.base, slot_off(s)?);
        lr.vals.insert(s, v);
        Ok(v)
    }

    /// Writes `v` to slot `d` where the guard bit `g` (if any) is set.
    fn write(
        &self,
        b: &mut FunctionBuilder,
        lr: &mut LaneRegs,
        d: R,
        g: Option<Value>,
        v: Value,
    ) -> Result<(), String> {
        if d == NONE {
            return Ok(());
        }
        let v = match g {
            Some(g) => {
                let old = self.read(b, lr, d)?;
                b.ins().select(g, v, old)
            }
            None => v,
        };
        lr.vals.insert(d, v);
        if !lr.dirty.contains(&d) {
            lr.dirty.push(d);
        }
        Ok(())
    }

    /// This lane's bit of predicate `p` (with `GUARD_NEG`), as i32 0/1.
    fn pbit(&self, b: &mut FunctionBuilder, lr: &mut LaneRegs, p: u32) -> Result<Value, String> {
        let idx = p & !GUARD_NEG;
        let bit = match lr.bits.get(&idx) {
            Some(&v) => v,
            None => {
                let w = b
                    .ins()
                    .load(types::I32, MemFlags::trusted(), self.preds, pred_off(idx)?);
                let lane32 = b.ins().ireduce(types::I32, lr.lane);
                let s = b.ins().ushr(w, lane32);
                let v = b.ins().band_imm(s, 1);
                lr.bits.insert(idx, v);
                v
            }
        };
        Ok(if p & GUARD_NEG != 0 {
            b.ins().bxor_imm(bit, 1)
        } else {
            bit
        })
    }

    fn pwrite(
        &self,
        b: &mut FunctionBuilder,
        lr: &mut LaneRegs,
        d: P,
        g: Option<Value>,
        v: Value,
    ) -> Result<(), String> {
        if d == NONE {
            return Ok(());
        }
        let v = match g {
            Some(g) => {
                let old = self.pbit(b, lr, d)?;
                b.ins().select(g, v, old)
            }
            None => v,
        };
        lr.bits.insert(d, v);
        if !lr.pdirty.contains(&d) {
            lr.pdirty.push(d);
        }
        Ok(())
    }

    /// Instructions `[s, e)`, all lane-local, lane by lane.
    fn segment(&self, b: &mut FunctionBuilder, f: &Function, s: u32, e: u32) -> Result<(), String> {
        let head = b.create_block();
        b.append_block_param(head, types::I64);
        let check = b.create_block();
        let body = b.create_block();
        let next = b.create_block();
        let done = b.create_block();
        let loads = (s..e).any(|pc| matches!(f.code[pc as usize].op, Op::Ld { .. }));
        let fault = loads.then(|| {
            let v = b.declare_var(types::I32);
            let none = b.ins().iconst(types::I32, i64::from(u32::MAX));
            b.def_var(v, none);
            (v, next)
        });
        let zero = b.ins().iconst(types::I64, 0);
        b.ins().jump(head, &[zero.into()]);

        b.switch_to_block(head);
        let lane = b.block_params(head)[0];
        let end = b.ins().icmp_imm(IntCC::Equal, lane, 32);
        b.ins().brif(end, done, &[], check, &[]);

        b.switch_to_block(check);
        let mask64 = b.ins().uextend(types::I64, self.mask);
        let sh = b.ins().ushr(mask64, lane);
        let on = b.ins().band_imm(sh, 1);
        b.ins().brif(on, body, &[], next, &[]);

        b.switch_to_block(body);
        let lane8 = b.ins().ishl_imm(lane, 3);
        let base = b.ins().iadd(self.regs, lane8);
        let mut lr = LaneRegs {
            lane,
            base,
            vals: HashMap::new(),
            dirty: Vec::new(),
            bits: HashMap::new(),
            pdirty: Vec::new(),
            pc: s,
            fault,
        };
        for pc in s..e {
            lr.pc = pc;
            let inst = &f.code[pc as usize];
            let g = if inst.guard == NONE {
                None
            } else {
                Some(self.pbit(b, &mut lr, inst.guard)?)
            };
            self.lane_op(b, &mut lr, &inst.op, g)?;
        }
        for &d in &lr.dirty {
            b.ins()
                .store(MemFlags::trusted(), lr.vals[&d], lr.base, slot_off(d)?);
        }
        let lane32 = b.ins().ireduce(types::I32, lane);
        for &d in &lr.pdirty {
            let w = b
                .ins()
                .load(types::I32, MemFlags::trusted(), self.preds, pred_off(d)?);
            let one = b.ins().iconst(types::I32, 1);
            let bitm = b.ins().ishl(one, lane32);
            let cleared = b.ins().band_not(w, bitm);
            let nb = b.ins().ishl(lr.bits[&d], lane32);
            let w = b.ins().bor(cleared, nb);
            b.ins()
                .store(MemFlags::trusted(), w, self.preds, pred_off(d)?);
        }
        b.ins().jump(next, &[]);

        b.switch_to_block(next);
        let l1 = b.ins().iadd_imm(lane, 1);
        b.ins().jump(head, &[l1.into()]);

        b.switch_to_block(done);
        if let Some((v, _)) = fault {
            let at = b.use_var(v);
            let faulted = b.ins().icmp_imm(IntCC::NotEqual, at, i64::from(u32::MAX));
            let raise = b.create_block();
            let fine = b.create_block();
            b.ins().brif(faulted, raise, &[], fine, &[]);
            b.switch_to_block(raise);
            let at = b.ins().uextend(types::I64, at);
            let r = b.ins().bor_imm(at, FAULT as i64);
            b.ins().jump(self.exit, &[r.into()]);
            b.switch_to_block(fine);
        }
        self.count(b, i64::from(e - s));
        Ok(())
    }

    /// One lane's load (`g`: its guard bit): the value, or a fault recorded
    /// for this lane, which then stops (its registers are not written
    /// back: the launch fails).
    #[allow(clippy::too_many_arguments)]
    fn lane_load(
        &self,
        b: &mut FunctionBuilder,
        lr: &mut LaneRegs,
        g: Option<Value>,
        (sp, size, signed): (Msp, u8, bool),
        d: R,
        base: R,
        off: i64,
    ) -> Result<(), String> {
        let (fault_pc, next_lane) = lr.fault.ok_or("a load outside a segment with loads")?;
        let addr = if base == NONE {
            b.ins().iconst(types::I64, off)
        } else {
            let v = self.read(b, lr, base)?;
            b.ins().iadd_imm(v, off)
        };
        let join = b.create_block();
        b.append_block_param(join, types::I64);
        if let Some(g) = g {
            let old = self.read(b, lr, d)?;
            let go = b.create_block();
            b.ins().brif(g, go, &[], join, &[old.into()]);
            b.switch_to_block(go);
        }
        let host = self.host_address(b, sp, addr, i64::from(size))?;
        let bad = b.ins().icmp_imm(IntCC::Equal, host, 0);
        let fault = b.create_block();
        let ok = b.create_block();
        b.ins().brif(bad, fault, &[], ok, &[]);

        // The first fault in the interpreter's order: a lower pc, or the
        // same pc in a lower lane (lanes run in ascending order).
        b.switch_to_block(fault);
        let pc = i64::from(lr.pc);
        let at = b.use_var(fault_pc);
        let first = b.ins().icmp_imm(IntCC::UnsignedGreaterThan, at, pc);
        let record = b.create_block();
        b.ins().brif(first, record, &[], next_lane, &[]);
        b.switch_to_block(record);
        let fl = MemFlags::trusted();
        b.ins().store(fl, lr.lane, self.state, off::FAULT_LANE);
        b.ins().store(fl, addr, self.state, off::FAULT_ADDR);
        let pc = b.ins().iconst(types::I32, pc);
        b.def_var(fault_pc, pc);
        b.ins().jump(next_lane, &[]);

        b.switch_to_block(ok);
        let ty = match size {
            1 => types::I8,
            2 => types::I16,
            4 => types::I32,
            _ => types::I64,
        };
        // Checked above; shared and parameter memory have no alignment
        // promise on the host, and other threads write global memory.
        let v = b.ins().load(ty, MemFlags::new().with_notrap(), host, 0);
        let v = if ty == types::I64 {
            v
        } else if signed {
            b.ins().sextend(types::I64, v)
        } else {
            b.ins().uextend(types::I64, v)
        };
        b.ins().jump(join, &[v.into()]);

        b.switch_to_block(join);
        let v = b.block_params(join)[0];
        self.write(b, lr, d, None, v)
    }

    fn lane_op(
        &self,
        b: &mut FunctionBuilder,
        lr: &mut LaneRegs,
        op: &Op,
        g: Option<Value>,
    ) -> Result<(), String> {
        match *op {
            Op::Nop => {}
            Op::Ld {
                sp,
                size,
                signed,
                n: 1,
                d,
                base,
                off,
            } if lane_load(sp) => {
                return self.lane_load(b, lr, g, (sp, size, signed), d[0], base, off);
            }
            Op::Mov { d, a } => {
                let v = self.read(b, lr, a)?;
                self.write(b, lr, d, g, v)?;
            }
            Op::Cvta { to, sp, d, a } => {
                let window = match sp {
                    Msp::Shared => crate::kernel::SHARED_WINDOW,
                    Msp::Local => crate::kernel::LOCAL_WINDOW,
                    Msp::Param => crate::kernel::PARAM_WINDOW,
                    _ => 0,
                } as i64;
                let x = self.read(b, lr, a)?;
                let v = if to {
                    b.ins().iadd_imm(x, window.wrapping_neg())
                } else {
                    b.ins().iadd_imm(x, window)
                };
                self.write(b, lr, d, g, v)?;
            }
            Op::Special { d, sr } => {
                let v = match sr {
                    Sreg::Tid(k) => {
                        let l4 = b.ins().ishl_imm(lr.lane, 2);
                        let addr = b.ins().iadd(self.tid, l4);
                        let t =
                            b.ins()
                                .load(types::I32, MemFlags::trusted(), addr, i32::from(k) * 128);
                        b.ins().uextend(types::I64, t)
                    }
                    Sreg::Ntid(k) | Sreg::Ctaid(k) | Sreg::Nctaid(k) => {
                        let base = match sr {
                            Sreg::Ntid(_) => 0,
                            Sreg::Ctaid(_) => 3,
                            _ => 6,
                        };
                        b.ins().load(
                            types::I64,
                            MemFlags::trusted(),
                            self.state,
                            off::SREGS + (base + i32::from(k)) * 8,
                        )
                    }
                    Sreg::Warpid => b.ins().load(
                        types::I64,
                        MemFlags::trusted(),
                        self.state,
                        off::SREGS + 9 * 8,
                    ),
                    Sreg::Laneid => lr.lane,
                    _ => return Err("special register".into()),
                };
                self.write(b, lr, d, g, v)?;
            }
            Op::Int2 { op, w, d, a, b: bb } => {
                let x = self.read(b, lr, a)?;
                let y = self.read(b, lr, bb)?;
                let v = int2(b, op, w, x, y)?;
                self.write(b, lr, d, g, v)?;
            }
            Op::Int1 {
                op: Int1::Not,
                d,
                a,
                ..
            } => {
                let x = self.read(b, lr, a)?;
                let v = b.ins().bnot(x);
                self.write(b, lr, d, g, v)?;
            }
            Op::Mad {
                op,
                w,
                d,
                a,
                b: bb,
                c,
            } => {
                let x = self.read(b, lr, a)?;
                let y = self.read(b, lr, bb)?;
                let z = self.read(b, lr, c)?;
                let v = match op {
                    Mad::Lo => {
                        let t = ity(w);
                        let (x, y, z) = (narrow(b, x, t), narrow(b, y, t), narrow(b, z, t));
                        let p = b.ins().imul(x, y);
                        let s = b.ins().iadd(p, z);
                        widen(b, s, w)
                    }
                    Mad::Wide => {
                        let t = ity(w);
                        let (x, y) = (narrow(b, x, t), narrow(b, y, t));
                        let (x, y) = (widen(b, x, w), widen(b, y, w));
                        let p = b.ins().imul(x, y);
                        b.ins().iadd(p, z)
                    }
                    _ => return Err("mad form".into()),
                };
                self.write(b, lr, d, g, v)?;
            }
            Op::Setp {
                cmp,
                ty,
                bop,
                d,
                dn,
                a,
                b: bb,
                c,
            } => {
                let x = self.read(b, lr, a)?;
                let y = self.read(b, lr, bb)?;
                let t = compare(b, cmp, ty, x, y)?;
                let t = b.ins().uextend(types::I32, t);
                let nt = b.ins().bxor_imm(t, 1);
                let (v, vn) = if bop == BoolOp::None {
                    (t, nt)
                } else {
                    let cm = self.pbit(b, lr, c)?;
                    match bop {
                        BoolOp::And => (b.ins().band(t, cm), b.ins().band(nt, cm)),
                        BoolOp::Or => (b.ins().bor(t, cm), b.ins().bor(nt, cm)),
                        _ => (b.ins().bxor(t, cm), b.ins().bxor(nt, cm)),
                    }
                };
                self.pwrite(b, lr, d, g, v)?;
                if dn != NONE {
                    self.pwrite(b, lr, dn, g, vn)?;
                }
            }
            Op::Selp { d, a, b: bb, p } => {
                let x = self.read(b, lr, a)?;
                let y = self.read(b, lr, bb)?;
                let pb = self.pbit(b, lr, p)?;
                let v = b.ins().select(pb, x, y);
                self.write(b, lr, d, g, v)?;
            }
            Op::Pred { op, d, a, b: bb } => {
                let x = self.pbit(b, lr, a)?;
                let v = match op {
                    PredOp::Not => b.ins().bxor_imm(x, 1),
                    PredOp::Mov => x,
                    _ => {
                        let y = self.pbit(b, lr, bb)?;
                        match op {
                            PredOp::And => b.ins().band(x, y),
                            PredOp::Or => b.ins().bor(x, y),
                            _ => b.ins().bxor(x, y),
                        }
                    }
                };
                self.pwrite(b, lr, d, g, v)?;
            }
            Op::PredConst { d, v } => {
                let v = b.ins().iconst(types::I32, i64::from(v));
                self.pwrite(b, lr, d, g, v)?;
            }
            Op::FromPred { d, p } => {
                let x = self.pbit(b, lr, p)?;
                let v = b.ins().uextend(types::I64, x);
                self.write(b, lr, d, g, v)?;
            }
            Op::ToPred { d, a } => {
                let x = self.read(b, lr, a)?;
                let x = b.ins().band_imm(x, 1);
                let v = b.ins().ireduce(types::I32, x);
                self.pwrite(b, lr, d, g, v)?;
            }
            Op::F2 {
                op, t, d, a, b: bb, ..
            } => {
                let x = self.read(b, lr, a)?;
                let y = self.read(b, lr, bb)?;
                let v = match t {
                    Ft::F32 => {
                        let (x, y) = (to_f32(b, x), to_f32(b, y));
                        let r = match op {
                            F2::Add => b.ins().fadd(x, y),
                            F2::Sub => b.ins().fsub(x, y),
                            _ => b.ins().fmul(x, y),
                        };
                        from_f32(b, r)
                    }
                    _ => {
                        let (x, y) = (to_f64(b, x), to_f64(b, y));
                        let r = match op {
                            F2::Add => b.ins().fadd(x, y),
                            F2::Sub => b.ins().fsub(x, y),
                            _ => b.ins().fmul(x, y),
                        };
                        b.ins().bitcast(types::I64, MemFlags::new(), r)
                    }
                };
                self.write(b, lr, d, g, v)?;
            }
            Op::Fma {
                t, d, a, b: bb, c, ..
            } => {
                let x = self.read(b, lr, a)?;
                let y = self.read(b, lr, bb)?;
                let z = self.read(b, lr, c)?;
                let v = if t == Ft::F32 {
                    let (x, y, z) = (to_f32(b, x), to_f32(b, y), to_f32(b, z));
                    let r = b.ins().fma(x, y, z);
                    from_f32(b, r)
                } else {
                    let (x, y, z) = (to_f64(b, x), to_f64(b, y), to_f64(b, z));
                    let r = b.ins().fma(x, y, z);
                    b.ins().bitcast(types::I64, MemFlags::new(), r)
                };
                self.write(b, lr, d, g, v)?;
            }
            Op::Cvt { dt, st, d, a, .. } => {
                let x = self.read(b, lr, a)?;
                let v = match (dt, st) {
                    (Ty::U64, Ty::U32)
                    | (Ty::U32, Ty::U64)
                    | (Ty::S32, Ty::S64)
                    | (Ty::U32, Ty::S64) => b.ins().band_imm(x, 0xFFFF_FFFF),
                    (Ty::S64, Ty::S32) | (Ty::U64, Ty::S32) => {
                        let n = b.ins().ireduce(types::I32, x);
                        b.ins().sextend(types::I64, n)
                    }
                    (Ty::F64, Ty::F32) => {
                        let f = to_f32(b, x);
                        let r = b.ins().fpromote(types::F64, f);
                        b.ins().bitcast(types::I64, MemFlags::new(), r)
                    }
                    (Ty::F32, Ty::S32) => {
                        let n = b.ins().ireduce(types::I32, x);
                        let r = b.ins().fcvt_from_sint(types::F32, n);
                        from_f32(b, r)
                    }
                    (Ty::F32, Ty::U32) => {
                        let n = b.ins().ireduce(types::I32, x);
                        let r = b.ins().fcvt_from_uint(types::F32, n);
                        from_f32(b, r)
                    }
                    _ => return Err("cvt form".into()),
                };
                self.write(b, lr, d, g, v)?;
            }
            _ => return Err(format!("not lane-local: {op:?}")),
        }
        Ok(())
    }

    /// A load or store of one element: every lane's address checked (and
    /// its host address kept), then every lane's access.
    fn memory(&self, b: &mut FunctionBuilder, f: &Function, pc: u32) -> Result<(), String> {
        let inst = &f.code[pc as usize];
        let (sp, size, base, off) = match inst.op {
            Op::Ld {
                sp,
                size,
                base,
                off,
                ..
            } => (sp, size, base, off),
            Op::St {
                sp,
                size,
                base,
                off,
                ..
            } => (sp, size, base, off),
            _ => return Err("memory instruction expected".into()),
        };
        let m = if inst.guard == NONE {
            self.mask
        } else {
            self.guard_mask(b, inst.guard)?
        };
        let m64 = b.ins().uextend(types::I64, m);
        let fl = MemFlags::trusted();
        let sz = i64::from(size);

        // Pass 1: addresses.
        let head = b.create_block();
        b.append_block_param(head, types::I64);
        let check = b.create_block();
        let body = b.create_block();
        let next = b.create_block();
        let pass2 = b.create_block();
        let fault = b.create_block();
        let zero = b.ins().iconst(types::I64, 0);
        b.ins().jump(head, &[zero.into()]);
        b.switch_to_block(head);
        let lane = b.block_params(head)[0];
        let end = b.ins().icmp_imm(IntCC::Equal, lane, 32);
        b.ins().brif(end, pass2, &[], check, &[]);
        b.switch_to_block(check);
        let sh = b.ins().ushr(m64, lane);
        let on = b.ins().band_imm(sh, 1);
        b.ins().brif(on, body, &[], next, &[]);
        b.switch_to_block(body);
        let lane8 = b.ins().ishl_imm(lane, 3);
        let addr = if base == NONE {
            b.ins().iconst(types::I64, off)
        } else {
            let rb = b.ins().iadd(self.regs, lane8);
            let v = b.ins().load(types::I64, fl, rb, slot_off(base)?);
            b.ins().iadd_imm(v, off)
        };
        let host = self.host_address(b, sp, addr, sz)?;
        let bad = b.ins().icmp_imm(IntCC::Equal, host, 0);
        let keep = b.create_block();
        b.ins().brif(bad, fault, &[], keep, &[]);
        b.switch_to_block(keep);
        let sa = b.ins().iadd(self.state, lane8);
        b.ins().store(fl, host, sa, off::SCRATCH);
        b.ins().jump(next, &[]);
        b.switch_to_block(next);
        let l1 = b.ins().iadd_imm(lane, 1);
        b.ins().jump(head, &[l1.into()]);

        b.switch_to_block(fault);
        let v = b.ins().iconst(types::I64, i64::from(pc));
        b.ins().jump(self.exit, &[v.into()]);

        // Pass 2: accesses.
        b.switch_to_block(pass2);
        let head2 = b.create_block();
        b.append_block_param(head2, types::I64);
        let check2 = b.create_block();
        let body2 = b.create_block();
        let next2 = b.create_block();
        let done = b.create_block();
        b.ins().jump(head2, &[zero.into()]);
        b.switch_to_block(head2);
        let lane = b.block_params(head2)[0];
        let end = b.ins().icmp_imm(IntCC::Equal, lane, 32);
        b.ins().brif(end, done, &[], check2, &[]);
        b.switch_to_block(check2);
        let sh = b.ins().ushr(m64, lane);
        let on = b.ins().band_imm(sh, 1);
        b.ins().brif(on, body2, &[], next2, &[]);
        b.switch_to_block(body2);
        let lane8 = b.ins().ishl_imm(lane, 3);
        let sa = b.ins().iadd(self.state, lane8);
        let host = b.ins().load(types::I64, fl, sa, off::SCRATCH);
        let rb = b.ins().iadd(self.regs, lane8);
        // Host memory of shared and parameter space has no alignment
        // promise, and other threads write global memory: plain accesses
        // that never trap (checked above).
        let mf = MemFlags::new().with_notrap();
        let ty = match size {
            1 => types::I8,
            2 => types::I16,
            4 => types::I32,
            _ => types::I64,
        };
        match inst.op {
            Op::Ld { signed, d, .. } => {
                let v = b.ins().load(ty, mf, host, 0);
                let v = if ty == types::I64 {
                    v
                } else if signed {
                    b.ins().sextend(types::I64, v)
                } else {
                    b.ins().uextend(types::I64, v)
                };
                b.ins().store(fl, v, rb, slot_off(d[0])?);
            }
            Op::St { s, .. } => {
                let v = b.ins().load(types::I64, fl, rb, slot_off(s[0])?);
                let v = if ty == types::I64 {
                    v
                } else {
                    b.ins().ireduce(ty, v)
                };
                b.ins().store(mf, v, host, 0);
            }
            _ => {}
        }
        b.ins().jump(next2, &[]);
        b.switch_to_block(next2);
        let l1 = b.ins().iadd_imm(lane, 1);
        b.ins().jump(head2, &[l1.into()]);
        b.switch_to_block(done);
        self.count(b, 1);
        Ok(())
    }

    /// The host address of an access of `size` bytes at `addr` in space
    /// `sp`, or 0 where the interpreter would fault (or where the compiled
    /// code does not reach: local memory through a generic address).
    fn host_address(
        &self,
        b: &mut FunctionBuilder,
        sp: Msp,
        addr: Value,
        size: i64,
    ) -> Result<Value, String> {
        let res = b.create_block();
        b.append_block_param(res, types::I64);
        let zero = b.ins().iconst(types::I64, 0);
        match sp {
            Msp::Global | Msp::Const => self.global(b, addr, size, res),
            Msp::Shared => self.bounded(b, addr, size, self.shared, self.shared_len, true, res),
            Msp::Param => self.bounded(b, addr, size, self.params, self.params_len, false, res),
            Msp::Generic => {
                let window = b.ins().ushr_imm(addr, 48);
                let is_global = b.ins().icmp_imm(IntCC::Equal, window, 0);
                let g = b.create_block();
                let not_g = b.create_block();
                b.ins().brif(is_global, g, &[], not_g, &[]);
                b.switch_to_block(g);
                self.global(b, addr, size, res);
                b.switch_to_block(not_g);
                let is_shared = b.ins().icmp_imm(IntCC::Equal, window, 1);
                let s = b.create_block();
                let other = b.create_block();
                b.ins().brif(is_shared, s, &[], other, &[]);
                b.switch_to_block(s);
                let a = b.ins().iadd_imm(addr, -(1i64 << 48));
                self.bounded(b, a, size, self.shared, self.shared_len, true, res);
                b.switch_to_block(other);
                b.ins().jump(res, &[zero.into()]);
            }
            _ => return Err("memory space".into()),
        }
        b.switch_to_block(res);
        Ok(b.block_params(res)[0])
    }

    /// Global memory: the two cached allocations inline, else the lookup
    /// helper.
    fn global(&self, b: &mut FunctionBuilder, addr: Value, size: i64, res: Block) {
        let second = b.create_block();
        self.cached(
            b,
            addr,
            size,
            (off::GBASE, off::GLEN, off::GPTR),
            res,
            second,
        );
        b.switch_to_block(second);
        let miss = b.create_block();
        self.cached(
            b,
            addr,
            size,
            (off::GBASE2, off::GLEN2, off::GPTR2),
            res,
            miss,
        );
        b.switch_to_block(miss);
        let sz = b.ins().iconst(types::I64, size);
        let call = b
            .ins()
            .call_indirect(self.lookup_sig, self.lookup_fn, &[self.state, addr, sz]);
        let h = b.inst_results(call)[0];
        b.ins().jump(res, &[h.into()]);
    }

    /// The host address of `addr` in the cached allocation whose base,
    /// length and host pointer are at `fields` of the state, to `res`; to
    /// `miss` when the access is not inside it or not aligned.
    fn cached(
        &self,
        b: &mut FunctionBuilder,
        addr: Value,
        size: i64,
        (base, len, ptr): (i32, i32, i32),
        res: Block,
        miss: Block,
    ) {
        let fl = MemFlags::trusted();
        let gbase = b.ins().load(types::I64, fl, self.state, base);
        let glen = b.ins().load(types::I64, fl, self.state, len);
        let o = b.ins().isub(addr, gbase);
        // off < len && len - off >= size && addr % size == 0
        let inside = b.ins().icmp(IntCC::UnsignedLessThan, o, glen);
        let room = b.ins().isub(glen, o);
        let fits = b
            .ins()
            .icmp_imm(IntCC::UnsignedGreaterThanOrEqual, room, size);
        let mis = b.ins().band_imm(addr, size - 1);
        let aligned = b.ins().icmp_imm(IntCC::Equal, mis, 0);
        let ok = b.ins().band(inside, fits);
        let ok = b.ins().band(ok, aligned);
        let hit = b.create_block();
        b.ins().brif(ok, hit, &[], miss, &[]);
        b.switch_to_block(hit);
        let gptr = b.ins().load(types::I64, fl, self.state, ptr);
        let h = b.ins().iadd(gptr, o);
        b.ins().jump(res, &[h.into()]);
    }

    /// A flat space of `len` bytes at `host`, aligned accesses only when
    /// `align`.
    #[allow(clippy::too_many_arguments)]
    fn bounded(
        &self,
        b: &mut FunctionBuilder,
        addr: Value,
        size: i64,
        host: Value,
        len: Value,
        align: bool,
        res: Block,
    ) {
        let inside = b.ins().icmp(IntCC::UnsignedLessThan, addr, len);
        let room = b.ins().isub(len, addr);
        let fits = b
            .ins()
            .icmp_imm(IntCC::UnsignedGreaterThanOrEqual, room, size);
        let mut ok = b.ins().band(inside, fits);
        if align {
            let mis = b.ins().band_imm(addr, size - 1);
            let aligned = b.ins().icmp_imm(IntCC::Equal, mis, 0);
            ok = b.ins().band(ok, aligned);
        }
        let h = b.ins().iadd(host, addr);
        let zero = b.ins().iconst(types::I64, 0);
        let v = b.ins().select(ok, h, zero);
        b.ins().jump(res, &[v.into()]);
    }
}

fn ity(w: Iw) -> Type {
    match w.bits() {
        8 => types::I8,
        16 => types::I16,
        32 => types::I32,
        _ => types::I64,
    }
}

fn narrow(b: &mut FunctionBuilder, v: Value, t: Type) -> Value {
    if t == types::I64 {
        v
    } else {
        b.ins().ireduce(t, v)
    }
}

/// `x as u64` for a value of the operation's type: sign-extended when
/// signed.
fn widen(b: &mut FunctionBuilder, v: Value, w: Iw) -> Value {
    if w.bits() == 64 {
        v
    } else if w.signed() {
        b.ins().sextend(types::I64, v)
    } else {
        b.ins().uextend(types::I64, v)
    }
}

fn to_f32(b: &mut FunctionBuilder, v: Value) -> Value {
    let n = b.ins().ireduce(types::I32, v);
    b.ins().bitcast(types::F32, MemFlags::new(), n)
}

fn from_f32(b: &mut FunctionBuilder, v: Value) -> Value {
    let n = b.ins().bitcast(types::I32, MemFlags::new(), v);
    b.ins().uextend(types::I64, n)
}

/// The interpreter's integer operations of the 32- and 64-bit types (and
/// the bitwise ones of every type, which work on all 64 bits).
fn int2(b: &mut FunctionBuilder, op: Int2, w: Iw, x: Value, y: Value) -> Result<Value, String> {
    match op {
        Int2::And => return Ok(b.ins().band(x, y)),
        Int2::Or => return Ok(b.ins().bor(x, y)),
        Int2::Xor => return Ok(b.ins().bxor(x, y)),
        _ => {}
    }
    let t = ity(w);
    let bits = w.bits();
    let signed = w.signed();
    let xn = narrow(b, x, t);
    let yn = narrow(b, y, t);
    Ok(match op {
        Int2::Add => {
            let r = b.ins().iadd(xn, yn);
            widen(b, r, w)
        }
        Int2::Sub => {
            let r = b.ins().isub(xn, yn);
            widen(b, r, w)
        }
        Int2::MulLo => {
            let r = b.ins().imul(xn, yn);
            widen(b, r, w)
        }
        Int2::Min | Int2::Max => {
            let r = match (op, signed) {
                (Int2::Min, true) => b.ins().smin(xn, yn),
                (Int2::Min, false) => b.ins().umin(xn, yn),
                (_, true) => b.ins().smax(xn, yn),
                (_, false) => b.ins().umax(xn, yn),
            };
            widen(b, r, w)
        }
        Int2::MulWide => {
            let (xw, yw) = (widen(b, xn, w), widen(b, yn, w));
            b.ins().imul(xw, yw)
        }
        Int2::MulHi => {
            if bits == 64 {
                if signed {
                    b.ins().smulhi(xn, yn)
                } else {
                    b.ins().umulhi(xn, yn)
                }
            } else {
                let (xw, yw) = (widen(b, xn, w), widen(b, yn, w));
                let p = b.ins().imul(xw, yw);
                if signed {
                    b.ins().sshr_imm(p, i64::from(bits))
                } else {
                    b.ins().ushr_imm(p, i64::from(bits))
                }
            }
        }
        Int2::Shl | Int2::Shr => {
            // The amount is the low 32 bits of the raw operand; amounts of
            // the width or more shift everything out.
            let amt = b.ins().ireduce(types::I32, y);
            let big = b
                .ins()
                .icmp_imm(IntCC::UnsignedGreaterThanOrEqual, amt, i64::from(bits));
            let (r, out) = if op == Int2::Shl {
                let r = b.ins().ishl(xn, amt);
                (r, b.ins().iconst(t, 0))
            } else if signed {
                let r = b.ins().sshr(xn, amt);
                (r, b.ins().sshr_imm(xn, i64::from(bits - 1)))
            } else {
                let r = b.ins().ushr(xn, amt);
                (r, b.ins().iconst(t, 0))
            };
            let r = b.ins().select(big, out, r);
            widen(b, r, w)
        }
        Int2::Div | Int2::Rem => {
            // Division by zero gives all ones (div) or the dividend (rem);
            // MIN / -1 wraps. A divisor of 1 stands in where the hardware
            // instruction would trap.
            let is_zero = b.ins().icmp_imm(IntCC::Equal, yn, 0);
            let one = b.ins().iconst(t, 1);
            let mut safe = b.ins().select(is_zero, one, yn);
            if signed {
                let min = if bits == 64 {
                    i64::MIN
                } else {
                    -(1i64 << (bits - 1))
                };
                let xmin = b.ins().icmp_imm(IntCC::Equal, xn, min);
                let yneg = b.ins().icmp_imm(IntCC::Equal, yn, -1);
                let ovf = b.ins().band(xmin, yneg);
                safe = b.ins().select(ovf, one, safe);
            }
            let r = match (op, signed) {
                (Int2::Div, true) => b.ins().sdiv(xn, safe),
                (Int2::Div, false) => b.ins().udiv(xn, safe),
                (_, true) => b.ins().srem(xn, safe),
                (_, false) => b.ins().urem(xn, safe),
            };
            let r = widen(b, r, w);
            let z = if op == Int2::Div {
                let all = if bits == 64 {
                    -1i64
                } else {
                    ((1u64 << bits) - 1) as i64
                };
                b.ins().iconst(types::I64, all)
            } else {
                widen(b, xn, w)
            };
            b.ins().select(is_zero, z, r)
        }
        _ => return Err(format!("integer operation {op:?}")),
    })
}

/// The compare of `setp` as a bool (i8).
fn compare(b: &mut FunctionBuilder, cmp: Cmp, ty: Ty, x: Value, y: Value) -> Result<Value, String> {
    if let Some((bits, signed)) = cmp_int(ty) {
        let t = match bits {
            8 => types::I8,
            16 => types::I16,
            32 => types::I32,
            _ => types::I64,
        };
        let (xn, yn) = (narrow(b, x, t), narrow(b, y, t));
        let cc = match cmp {
            Cmp::Eq | Cmp::Equ => IntCC::Equal,
            Cmp::Ne | Cmp::Neu => IntCC::NotEqual,
            Cmp::Lo | Cmp::Ls | Cmp::Hi | Cmp::Hs => match cmp {
                Cmp::Lo => IntCC::UnsignedLessThan,
                Cmp::Ls => IntCC::UnsignedLessThanOrEqual,
                Cmp::Hi => IntCC::UnsignedGreaterThan,
                _ => IntCC::UnsignedGreaterThanOrEqual,
            },
            Cmp::Lt | Cmp::Ltu if signed => IntCC::SignedLessThan,
            Cmp::Le | Cmp::Leu if signed => IntCC::SignedLessThanOrEqual,
            Cmp::Gt | Cmp::Gtu if signed => IntCC::SignedGreaterThan,
            Cmp::Ge | Cmp::Geu if signed => IntCC::SignedGreaterThanOrEqual,
            Cmp::Lt | Cmp::Ltu => IntCC::UnsignedLessThan,
            Cmp::Le | Cmp::Leu => IntCC::UnsignedLessThanOrEqual,
            Cmp::Gt | Cmp::Gtu => IntCC::UnsignedGreaterThan,
            Cmp::Ge | Cmp::Geu => IntCC::UnsignedGreaterThanOrEqual,
            Cmp::Num => return Ok(b.ins().iconst(types::I8, 1)),
            Cmp::Nan => return Ok(b.ins().iconst(types::I8, 0)),
        };
        return Ok(b.ins().icmp(cc, xn, yn));
    }
    let (xf, yf) = match ty {
        Ty::F32 => (to_f32(b, x), to_f32(b, y)),
        Ty::F64 => (to_f64(b, x), to_f64(b, y)),
        _ => return Err("compare type".into()),
    };
    let cc = match cmp {
        Cmp::Eq => FloatCC::Equal,
        Cmp::Ne => FloatCC::OrderedNotEqual,
        Cmp::Lt | Cmp::Lo => FloatCC::LessThan,
        Cmp::Le | Cmp::Ls => FloatCC::LessThanOrEqual,
        Cmp::Gt | Cmp::Hi => FloatCC::GreaterThan,
        Cmp::Ge | Cmp::Hs => FloatCC::GreaterThanOrEqual,
        Cmp::Equ => FloatCC::UnorderedOrEqual,
        Cmp::Neu => FloatCC::NotEqual,
        Cmp::Ltu => FloatCC::UnorderedOrLessThan,
        Cmp::Leu => FloatCC::UnorderedOrLessThanOrEqual,
        Cmp::Gtu => FloatCC::UnorderedOrGreaterThan,
        Cmp::Geu => FloatCC::UnorderedOrGreaterThanOrEqual,
        Cmp::Num => FloatCC::Ordered,
        Cmp::Nan => FloatCC::Unordered,
    };
    Ok(b.ins().fcmp(cc, xf, yf))
}

fn to_f64(b: &mut FunctionBuilder, v: Value) -> Value {
    b.ins().bitcast(types::F64, MemFlags::new(), v)
}
