//! Syntax tree of one function → IR.

use std::collections::{HashMap, HashSet};

use super::ir::*;
use super::limits::{
    map_entry_bytes, str_bytes, vec_bytes, Budget, MAX_FUNC_INSTS, MAX_FUNC_SLOTS,
};
use super::parser::{FuncDecl, FuncKind, Inst as PInst, Operand, Stmt, VarDecl};
use super::types::{Space, Ty};
use super::PtxError;

#[path = "translate_mbarrier.rs"]
mod mbarrier;

/// Module-wide names the translator resolves against.
pub(crate) struct ModCtx<'a> {
    /// Module-scope symbols (variables and functions) → symbol id.
    pub(crate) syms: &'a HashMap<String, u32>,
    /// Functions with bodies → function index.
    pub(crate) funcs: &'a HashMap<String, u32>,
    /// Declared functions without bodies (extern).
    pub(crate) externs: &'a HashMap<String, ()>,
    /// Shared opcode-string table.
    pub(crate) opcodes: &'a mut Vec<String>,
    pub(crate) opcode_ids: &'a mut HashMap<String, u32>,
    /// What the module may still take.
    pub(crate) budget: &'a Budget,
}

#[derive(Debug, Clone, Copy)]
enum Binding {
    Reg(Option<R>),
    Pred(Option<P>),
    Frame { off: u32, size: u32 },
}

#[derive(Default)]
struct Scope {
    names: HashMap<String, Binding>,
    /// `%r<N>`-style ranges by prefix: count, predicate?, and the order of
    /// declaration. The first declared range that holds a name wins, so a
    /// range no larger than an earlier one of its prefix never does and is
    /// left out: each list grows in count, and is searched by bisection.
    ranges: HashMap<String, Vec<(u32, bool, usize)>>,
    nranges: usize,
    frame_mark: u32,
}

/// The capacity `v` should have before the next statement: its own, or
/// half as much again once fewer than 16 elements are free (no statement
/// emits more than a few instructions).
fn room_for<T>(v: &Vec<T>) -> usize {
    if v.capacity() - v.len() >= 16 {
        v.capacity()
    } else {
        (v.capacity() + v.capacity() / 2).max(v.len() + 32)
    }
}

/// Most digits of a register number looked at when matching `%r<N>`
/// ranges: a `u32` has 10, leading zeros aside.
const MAX_REG_DIGITS: usize = 20;

struct Tr<'m, 'a> {
    m: &'m mut ModCtx<'a>,
    f: Function,
    scopes: Vec<Scope>,
    kparams: HashMap<String, (u32, u32)>,
    frame_cur: u32,
    frame_max: u32,
    labels: HashMap<String, u32>,
    fixups: Vec<(usize, String, u32)>,
    const_cache: HashMap<ConstVal, R>,
    cc: Option<R>,
    sink: Option<R>,
    psink: Option<P>,
    guard: u32,
    line: u32,
    opcode: u32,
    opcode_text: String,
    /// Products of `mul.f32`/`mul.f64` without a rounding modifier, by the
    /// slot they went to, since the last label: an `add`/`sub` without one
    /// that uses such a product becomes an `fma`, as ptxas contracts them on
    /// a GPU, so that results agree to the bit.
    products: HashMap<R, Product>,
    /// For each slot, the products (by destination) that read it: writing
    /// the slot forgets them without a search of every product.
    product_users: HashMap<R, Vec<R>>,
    /// Module symbols in `f.syms`.
    sym_set: HashSet<u32>,
    /// Heap bytes the translator keeps besides its vectors' elements (names
    /// of labels and registers, call sites' lists), for the budget.
    heap_bytes: u64,
    /// What has been charged to the budget for this function.
    charged: u64,
}

/// An unguarded `mul` of `a` and `b` whose sources still hold their values.
#[derive(Debug, Clone, Copy)]
struct Product {
    t: Ft,
    ftz: bool,
    a: R,
    b: R,
}

fn align_up(v: u32, a: u32) -> u32 {
    let a = a.max(1);
    v.div_ceil(a).saturating_mul(a)
}

/// Whether `name` is one of the registers a `%r<N>` range of `scope`
/// declares (`Some(is_pred)` of the first such range declared), found by
/// looking up the prefixes left of its trailing digits.
fn range_hit(scope: &Scope, name: &str) -> Option<bool> {
    if scope.ranges.is_empty() {
        return None;
    }
    let digits = name.bytes().rev().take_while(u8::is_ascii_digit).count();
    let mut best: Option<(usize, bool)> = None;
    for split in (name.len() - digits.min(MAX_REG_DIGITS))..name.len() {
        let (prefix, rest) = name.split_at(split);
        let Some(list) = scope.ranges.get(prefix) else {
            continue;
        };
        let Ok(n) = rest.parse::<u32>() else {
            continue;
        };
        // The first declared range with room for `n`.
        let first = list.partition_point(|&(count, _, _)| count <= n);
        if let Some(&(_, is_pred, order)) = list.get(first) {
            if best.is_none_or(|(o, _)| order < o) {
                best = Some((order, is_pred));
            }
        }
    }
    best.map(|(_, is_pred)| is_pred)
}

/// Translates one function whose body's statements `next` gives, one at a
/// time (`None` after the last).
pub(crate) fn translate(
    m: &mut ModCtx<'_>,
    decl: &FuncDecl,
    mut next: impl FnMut() -> Result<Option<Stmt>, PtxError>,
) -> Result<Function, PtxError> {
    let is_entry = decl.kind == FuncKind::Entry;
    let mut tr = Tr {
        m,
        f: Function {
            name: decl.name.clone(),
            is_entry,
            maxntid: decl.maxntid,
            reqntid: decl.reqntid,
            ..Function::default()
        },
        scopes: vec![Scope::default()],
        kparams: HashMap::new(),
        frame_cur: 0,
        frame_max: 0,
        labels: HashMap::new(),
        fixups: Vec::new(),
        const_cache: HashMap::new(),
        cc: None,
        sink: None,
        psink: None,
        guard: NONE,
        line: decl.line,
        opcode: 0,
        opcode_text: String::new(),
        products: HashMap::new(),
        product_users: HashMap::new(),
        sym_set: HashSet::new(),
        heap_bytes: 0,
        charged: 0,
    };
    if is_entry {
        // Kernel parameters: offsets in the launch's parameter buffer.
        tr.f.params = entry_params(decl);
        for (p, &layout) in decl.params.iter().zip(&tr.f.params) {
            tr.kparams.insert(p.name.clone(), layout);
        }
    } else {
        if decl
            .params
            .iter()
            .chain(&decl.rets)
            .any(|p| p.space == Space::Reg)
        {
            return Err(PtxError::unsupported_decl(
                decl.line,
                ".reg parameters of device functions",
            ));
        }
        // Function parameters and return values live in the frame.
        for r in &decl.rets {
            let (off, size) = tr.frame_var(r)?;
            tr.f.rets.push((off, size));
        }
        for p in &decl.params {
            let (off, size) = tr.frame_var(p)?;
            tr.f.params.push((off, size));
        }
    }
    while let Some(stmt) = next()? {
        tr.stmt(&stmt)?;
        tr.account()?;
    }
    // A body that falls off its end returns.
    tr.guard = NONE;
    tr.emit(Op::Ret);
    tr.account()?;
    for (at, label, line) in std::mem::take(&mut tr.fixups) {
        let Some(&target) = tr.labels.get(&label) else {
            return Err(PtxError::semantic(
                line,
                &decl.name,
                format!("unknown label '{label}'"),
            ));
        };
        if let Some(Inst {
            op: Op::Bra { target: t },
            ..
        }) = tr.f.code.get_mut(at)
        {
            *t = target;
        }
    }
    tr.f.frame_size = align_up(tr.frame_max, 16);
    let mut f = tr.f;
    // Kept for the module's life: no spare capacity.
    f.code.shrink_to_fit();
    f.src.shrink_to_fit();
    f.consts.shrink_to_fit();
    f.calls.shrink_to_fit();
    f.syms.shrink_to_fit();
    Ok(f)
}

/// (offset, size) of each kernel parameter in the parameter buffer.
pub(crate) fn entry_params(decl: &FuncDecl) -> Vec<(u32, u32)> {
    let mut off = 0u32;
    let mut out = Vec::new();
    for p in &decl.params {
        let size = u32::try_from(p.size()).unwrap_or(u32::MAX);
        off = align_up(off, p.alignment());
        out.push((off, size));
        off = off.saturating_add(size);
    }
    out
}

fn split_opcode(op: &str) -> (&str, Vec<&str>) {
    let mut it = op.split('.');
    let base = it.next().unwrap_or("");
    (base, it.collect())
}

fn types_of(mods: &[&str]) -> Vec<Ty> {
    mods.iter().filter_map(|m| Ty::from_suffix(m)).collect()
}

fn rnd_of(mods: &[&str]) -> Rnd {
    for m in mods {
        match *m {
            "rn" => return Rnd::Rn,
            "rz" => return Rnd::Rz,
            "rm" => return Rnd::Rm,
            "rp" => return Rnd::Rp,
            "rni" => return Rnd::Rni,
            "rzi" => return Rnd::Rzi,
            "rmi" => return Rnd::Rmi,
            "rpi" => return Rnd::Rpi,
            _ => {}
        }
    }
    Rnd::Default
}

fn space_of(mods: &[&str]) -> Space {
    for m in mods {
        match *m {
            "global" => return Space::Global,
            "shared" | "shared::cta" => return Space::Shared,
            "local" => return Space::Local,
            "param" => return Space::Param,
            "const" => return Space::Const,
            _ => {}
        }
    }
    Space::Generic
}

impl Tr<'_, '_> {
    /// Charges what the function has grown by since the last call (its IR
    /// and the translator's tables), and checks its size against the
    /// interpreter's limits.
    fn account(&mut self) -> Result<(), PtxError> {
        let f = &self.f;
        if f.nslots > MAX_FUNC_SLOTS || f.npreds > MAX_FUNC_SLOTS {
            return Err(PtxError::unsupported_decl(
                self.line,
                &format!("a function with more than {MAX_FUNC_SLOTS} registers and constants"),
            ));
        }
        if f.code.len() > MAX_FUNC_INSTS {
            return Err(PtxError::unsupported_decl(
                self.line,
                &format!("a function of more than {MAX_FUNC_INSTS} instructions"),
            ));
        }
        let names: usize = self.scopes.iter().map(|s| s.names.len() + s.nranges).sum();
        // Room for the code of the next statements is made here, once
        // charged, so that its largest allocations are refused before they
        // are made.
        let code_cap = room_for(&f.code);
        let now = vec_bytes::<Inst>(code_cap)
            + vec_bytes::<SrcPos>(code_cap)
            + vec_bytes::<(R, ConstVal)>(f.consts.len())
            + vec_bytes::<CallSite>(f.calls.len())
            + vec_bytes::<u32>(f.syms.len()) * 2
            + map_entry_bytes::<ConstVal, R>() * self.const_cache.len() as u64
            + map_entry_bytes::<String, Binding>() * names as u64
            + map_entry_bytes::<String, u32>() * self.labels.len() as u64
            + vec_bytes::<(usize, String, u32)>(self.fixups.len())
            + map_entry_bytes::<R, Product>() * self.products.len() as u64
            + self.heap_bytes;
        if now > self.charged {
            self.m.budget.charge(now - self.charged, self.line)?;
            self.charged = now;
        }
        let f = &mut self.f;
        f.code.reserve_exact(code_cap - f.code.len());
        f.src.reserve_exact(code_cap - f.src.len());
        Ok(())
    }

    /// Forgets the products that writing slot `r` invalidates: the one held
    /// in `r`, and those made from `r`.
    fn forget_products(&mut self, r: R) {
        self.products.remove(&r);
        for p in self.product_users.remove(&r).unwrap_or_default() {
            if self.products.get(&p).is_some_and(|m| m.a == r || m.b == r) {
                self.products.remove(&p);
            }
        }
    }

    fn err<T>(&self, msg: impl Into<String>) -> Result<T, PtxError> {
        Err(PtxError::semantic(self.line, &self.f.name, msg.into()))
    }

    fn unsupported<T>(&self) -> Result<T, PtxError> {
        Err(PtxError::unsupported(
            self.line,
            &self.f.name,
            self.f.is_entry,
            &self.opcode_text,
        ))
    }

    fn emit(&mut self, op: Op) {
        self.f.code.push(Inst {
            op,
            guard: self.guard,
        });
        self.f.src.push(SrcPos {
            line: self.line,
            opcode: self.opcode,
        });
    }

    fn new_slot(&mut self) -> R {
        let s = self.f.nslots;
        self.f.nslots += 1;
        s
    }

    fn new_pred(&mut self) -> P {
        let p = self.f.npreds;
        self.f.npreds += 1;
        p
    }

    fn frame_var(&mut self, v: &VarDecl) -> Result<(u32, u32), PtxError> {
        let size = u32::try_from(v.size()).unwrap_or(u32::MAX);
        if size > 1 << 24 {
            return self.err(format!("variable '{}' is too large", v.name));
        }
        let off = align_up(self.frame_cur, v.alignment().min(256));
        self.frame_cur = off.saturating_add(size);
        self.frame_max = self.frame_max.max(self.frame_cur);
        self.heap_bytes += str_bytes(&v.name);
        let scope = self.scopes.last_mut().map(|s| &mut s.names);
        if let Some(names) = scope {
            names.insert(v.name.clone(), Binding::Frame { off, size });
        }
        Ok((off, size))
    }

    fn stmt(&mut self, s: &Stmt) -> Result<(), PtxError> {
        match s {
            Stmt::Open => {
                let frame_mark = self.frame_cur;
                self.scopes.push(Scope {
                    frame_mark,
                    ..Scope::default()
                });
            }
            Stmt::Close => {
                if self.scopes.len() > 1 {
                    if let Some(s) = self.scopes.pop() {
                        // Call-site parameters of a closed scope are dead:
                        // their frame bytes are reused.
                        self.frame_cur = s.frame_mark;
                    }
                }
            }
            Stmt::Reg(ty, names, line) => {
                self.line = *line;
                let is_pred = *ty == Ty::Pred;
                let Some(scope) = self.scopes.last_mut() else {
                    return Ok(());
                };
                for (name, count) in names {
                    self.heap_bytes += str_bytes(name);
                    match count {
                        Some(n) => {
                            let order = scope.nranges;
                            scope.nranges += 1;
                            let list = scope.ranges.entry(name.clone()).or_default();
                            if list.last().is_none_or(|&(c, _, _)| *n > c) {
                                list.push((*n, is_pred, order));
                                self.heap_bytes += vec_bytes::<(u32, bool, usize)>(1);
                            }
                        }
                        None => {
                            let b = if is_pred {
                                Binding::Pred(None)
                            } else {
                                Binding::Reg(None)
                            };
                            scope.names.insert(name.clone(), b);
                        }
                    }
                }
            }
            Stmt::Var(v) => {
                self.line = v.line;
                match v.space {
                    Space::Local | Space::Param => {
                        self.frame_var(v)?;
                    }
                    // Registered as module symbols by the module parser.
                    Space::Shared | Space::Global | Space::Const => {}
                    _ => {
                        return Err(PtxError::unsupported_decl(
                            v.line,
                            "function-scope .reg-space variables",
                        ))
                    }
                }
            }
            Stmt::Label(l, line) => {
                self.line = *line;
                // Other paths join here, with other values in the registers.
                self.products.clear();
                self.product_users.clear();
                let at = self.f.code.len() as u32;
                self.heap_bytes += str_bytes(l);
                self.labels.insert(l.clone(), at);
            }
            Stmt::Inst(i) => self.inst(i)?,
        }
        Ok(())
    }

    /// Looks a name up in the scopes, allocating its slot on first use.
    fn lookup(&mut self, name: &str) -> Option<Binding> {
        for si in (0..self.scopes.len()).rev() {
            if let Some(b) = self.scopes[si].names.get(name).copied() {
                let b = match b {
                    Binding::Reg(None) => {
                        let s = self.new_slot();
                        Binding::Reg(Some(s))
                    }
                    Binding::Pred(None) => {
                        let p = self.new_pred();
                        Binding::Pred(Some(p))
                    }
                    b => return Some(b),
                };
                self.scopes[si].names.insert(name.to_string(), b);
                return Some(b);
            }
            if let Some(is_pred) = range_hit(&self.scopes[si], name) {
                let b = if is_pred {
                    Binding::Pred(Some(self.new_pred()))
                } else {
                    Binding::Reg(Some(self.new_slot()))
                };
                self.heap_bytes += str_bytes(name);
                self.scopes[si].names.insert(name.to_string(), b);
                return Some(b);
            }
        }
        None
    }

    fn konst(&mut self, v: ConstVal) -> R {
        if let Some(&r) = self.const_cache.get(&v) {
            return r;
        }
        let r = self.new_slot();
        self.f.consts.push((r, v));
        self.const_cache.insert(v, r);
        r
    }

    fn imm(&mut self, v: u64) -> R {
        self.konst(ConstVal::Imm(v))
    }

    fn sym_ref(&mut self, id: u32, add: i64) -> R {
        if self.sym_set.insert(id) {
            self.f.syms.push(id);
        }
        self.konst(ConstVal::Sym(id, add))
    }

    fn sink(&mut self) -> R {
        if let Some(s) = self.sink {
            return s;
        }
        let s = self.new_slot();
        self.sink = Some(s);
        s
    }

    /// Bits of an immediate for an instruction of type `t`.
    fn imm_bits(o: &Operand, t: Ty) -> Option<u64> {
        let as_float = |v: f64| -> u64 {
            match t {
                Ty::F32 => u64::from((v as f32).to_bits()),
                Ty::F16 => u64::from(half::f16::from_f64(v).to_bits()),
                Ty::BF16 => u64::from(half::bf16::from_f64(v).to_bits()),
                _ => v.to_bits(),
            }
        };
        Some(match o {
            Operand::Int(v) => {
                if t.is_float() && !matches!(t, Ty::F16x2 | Ty::BF16x2) && *v != 0 {
                    as_float(*v as i64 as f64)
                } else {
                    *v
                }
            }
            Operand::F32(b) => match t {
                Ty::F32 | Ty::B32 | Ty::U32 | Ty::S32 => u64::from(*b),
                _ => as_float(f64::from(f32::from_bits(*b))),
            },
            Operand::F64(b) => match t {
                Ty::F64 | Ty::B64 | Ty::U64 | Ty::S64 => *b,
                _ => as_float(f64::from_bits(*b)),
            },
            _ => return None,
        })
    }

    /// A source operand as a value slot.
    fn src(&mut self, o: &Operand, t: Ty) -> Result<R, PtxError> {
        if let Some(bits) = Self::imm_bits(o, t) {
            return Ok(self.imm(bits));
        }
        match o {
            Operand::Name(n) => self.name_value(n, 0),
            Operand::SymOff(n, off) => self.name_value(n, *off),
            _ => self.err(format!("bad source operand {o:?}")),
        }
    }

    fn name_value(&mut self, n: &str, add: i64) -> Result<R, PtxError> {
        match self.lookup(n) {
            Some(Binding::Reg(Some(r))) if add == 0 => return Ok(r),
            Some(Binding::Pred(Some(p))) if add == 0 => {
                // A predicate used as a value (selp/cvt forms): 0 or 1.
                let d = self.new_slot();
                self.emit(Op::FromPred { d, p });
                return Ok(d);
            }
            Some(Binding::Frame { off, .. }) => {
                let d = self.new_slot();
                let off = (i64::from(off) + add) as u32;
                self.emit(Op::FrameAddr { d, off });
                return Ok(d);
            }
            Some(_) => return self.err(format!("bad use of '{n}'")),
            None => {}
        }
        if let Some(sr) = Sreg::from_name(n) {
            let d = self.new_slot();
            self.emit(Op::Special { d, sr });
            return Ok(d);
        }
        if let Some(&(off, _)) = self.kparams.get(n) {
            return Ok(self.imm((i64::from(off) + add) as u64));
        }
        if let Some(&id) = self.m.syms.get(n) {
            return Ok(self.sym_ref(id, add));
        }
        // PTX's predefined constant: the warp size.
        if n == "WARP_SZ" {
            return Ok(self.imm((32 + add) as u64));
        }
        self.err(format!("unknown name '{n}'"))
    }

    fn dst(&mut self, o: &Operand) -> Result<R, PtxError> {
        let r = match o {
            Operand::Sink => self.sink(),
            Operand::Name(n) => match self.lookup(n) {
                Some(Binding::Reg(Some(r))) => r,
                _ => return self.err(format!("'{n}' is not a register")),
            },
            _ => return self.err(format!("bad destination {o:?}")),
        };
        // Every register write goes through here: products made from the
        // old value, or held in the slot, are gone.
        self.forget_products(r);
        Ok(r)
    }

    /// `add`/`sub` (`sub` when `negate_b`) of `a` and `b` as an `fma` when
    /// one of them is a contractible product: `(x, y, z)` with the sum
    /// being `x * y + z`, after emitting the negations it needs.
    fn contract(&mut self, t: Ft, ftz: bool, a: R, b: R, negate_b: bool) -> Option<(R, R, R)> {
        let product = |r: R| {
            self.products
                .get(&r)
                .copied()
                .filter(|p| p.t == t && p.ftz == ftz)
        };
        // Like LLVM's combine: the first operand first.
        let (p, rest, negate_product, negate_rest) = match (product(a), product(b)) {
            (Some(p), _) => (p, b, false, negate_b),
            (None, Some(p)) => (p, a, negate_b, false),
            (None, None) => return None,
        };
        let mut negated = |r: R| {
            let d = self.new_slot();
            let (op, rnd) = (F1::Neg, Rnd::Default);
            let (ftz, sat) = (false, false);
            self.emit(Op::F1 {
                op,
                t,
                rnd,
                ftz,
                sat,
                d,
                a: r,
            });
            d
        };
        let x = if negate_product { negated(p.a) } else { p.a };
        let z = if negate_rest { negated(rest) } else { rest };
        Some((x, p.b, z))
    }

    fn pred_dst(&mut self, o: &Operand) -> Result<P, PtxError> {
        match o {
            Operand::Sink => {
                if let Some(p) = self.psink {
                    return Ok(p);
                }
                let p = self.new_pred();
                self.psink = Some(p);
                Ok(p)
            }
            Operand::Name(n) => match self.lookup(n) {
                Some(Binding::Pred(Some(p))) => Ok(p),
                _ => self.err(format!("'{n}' is not a predicate")),
            },
            _ => self.err(format!("bad predicate destination {o:?}")),
        }
    }

    /// A predicate source: slot, with `GUARD_NEG` for `!p`.
    fn pred_src(&mut self, o: &Operand) -> Result<P, PtxError> {
        match o {
            Operand::Name(n) => match self.lookup(n) {
                Some(Binding::Pred(Some(p))) => Ok(p),
                Some(Binding::Reg(Some(r))) => {
                    let d = self.new_pred();
                    self.emit(Op::ToPred { d, a: r });
                    Ok(d)
                }
                _ => self.err(format!("'{n}' is not a predicate")),
            },
            Operand::Not(n) => {
                let p = self.pred_src(&Operand::Name(n.clone()))?;
                Ok(p ^ GUARD_NEG)
            }
            Operand::Int(v) => {
                let d = self.new_pred();
                self.emit(Op::PredConst { d, v: *v != 0 });
                Ok(d)
            }
            _ => self.err(format!("bad predicate operand {o:?}")),
        }
    }

    /// A memory operand: space as executed, base slot (or NONE) and offset.
    fn addr(&mut self, o: &Operand, sp: Space) -> Result<(Msp, R, i64), PtxError> {
        let Operand::Addr(base, off) = o else {
            return self.err(format!("expected an address, found {o:?}"));
        };
        let msp = Msp::from_space(sp);
        let Some(name) = base else {
            return Ok((msp, NONE, *off));
        };
        match self.lookup(name) {
            Some(Binding::Reg(Some(r))) => {
                // Function parameters live in the frame: a register pointing
                // at one holds a local address.
                let msp = if msp == Msp::Param && !self.f.is_entry {
                    Msp::Local
                } else {
                    msp
                };
                return Ok((msp, r, *off));
            }
            Some(Binding::Frame { off: fo, .. }) => {
                return match msp {
                    Msp::Param | Msp::Local => Ok((Msp::Frame, NONE, i64::from(fo) + off)),
                    _ => {
                        let r = self.name_value(name, 0)?;
                        Ok((Msp::Local, r, *off))
                    }
                };
            }
            Some(_) => return self.err(format!("bad address base '{name}'")),
            None => {}
        }
        if let Some(&(po, _)) = self.kparams.get(name.as_str()) {
            return Ok((Msp::Param, NONE, i64::from(po) + off));
        }
        if let Some(&id) = self.m.syms.get(name.as_str()) {
            let r = self.sym_ref(id, 0);
            return Ok((msp, r, *off));
        }
        self.err(format!("unknown name '{name}' in address"))
    }

    fn cc_slot(&mut self) -> R {
        if let Some(c) = self.cc {
            return c;
        }
        let c = self.new_slot();
        self.cc = Some(c);
        c
    }

    /// The member mask operand at `index` of a `.sync` warp instruction,
    /// or [`NONE`] when it has none (the old, mask-less forms).
    fn member_mask(&mut self, o: &[Operand], index: usize) -> Result<R, PtxError> {
        match o.get(index) {
            Some(m) => self.src(m, Ty::B32),
            None => Ok(NONE),
        }
    }

    fn ops<'o>(&self, i: &'o PInst, n: usize) -> Result<&'o [Operand], PtxError> {
        if i.operands.len() < n {
            return self.err(format!(
                "'{}' needs {n} operands, has {}",
                i.opcode,
                i.operands.len()
            ));
        }
        Ok(&i.operands)
    }

    fn inst(&mut self, i: &PInst) -> Result<(), PtxError> {
        self.line = i.line;
        self.opcode_text = i.opcode.clone();
        self.opcode = match self.m.opcode_ids.get(&i.opcode) {
            Some(&id) => id,
            None => {
                let bytes = 2 * str_bytes(&i.opcode)
                    + vec_bytes::<String>(1)
                    + map_entry_bytes::<String, u32>();
                self.m.budget.charge(bytes, self.line)?;
                let id = self.m.opcodes.len() as u32;
                self.m.opcodes.push(i.opcode.clone());
                self.m.opcode_ids.insert(i.opcode.clone(), id);
                id
            }
        };
        self.guard = match &i.guard {
            None => NONE,
            Some((p, neg)) => {
                self.guard = NONE;
                let p = match self.lookup(p) {
                    Some(Binding::Pred(Some(p))) => p,
                    _ => return self.err(format!("guard '{p}' is not a predicate")),
                };
                if *neg {
                    p | GUARD_NEG
                } else {
                    p
                }
            }
        };
        let (base, mods) = split_opcode(&i.opcode);
        let has = |m: &str| mods.contains(&m);
        let tys = types_of(&mods);
        let t0 = tys.first().copied();
        match base {
            "mov" => self.mov(i, t0),
            "ld" | "ldu" => self.ld(i, &mods, t0),
            "st" => self.st(i, &mods, t0),
            "min" | "max" if has("s16x2") || has("u16x2") => self.packed_min_max(i, base, &mods),
            "add" | "sub" | "addc" | "subc" | "mul" | "mad" | "madc" | "mul24" | "mad24"
            | "div" | "rem" | "min" | "max" | "and" | "or" | "xor" | "not" | "cnot" | "neg"
            | "abs" | "shl" | "shr" | "popc" | "clz" | "brev" | "bfind" | "sad" | "copysign"
            | "fma" | "rcp" | "sqrt" | "rsqrt" | "ex2" | "lg2" | "sin" | "cos" | "tanh" => {
                self.arith(i, base, &mods, t0)
            }
            "bfe" | "bfi" | "prmt" | "shf" | "lop3" | "dp4a" => self.bits(i, base, &mods, t0),
            "bmsk" => {
                let o = self.ops(i, 3)?;
                let clamp = has("clamp");
                let d = self.dst(&o[0])?;
                let a = self.src(&o[1], Ty::U32)?;
                let b = self.src(&o[2], Ty::U32)?;
                self.emit(Op::Bmsk { clamp, d, a, b });
                Ok(())
            }
            "setp" => self.setp(i, &mods, t0),
            "set" => self.set(i, &mods, &tys),
            "selp" => {
                let o = self.ops(i, 4)?;
                let t = t0.unwrap_or(Ty::B64);
                let d = self.dst(&o[0])?;
                let a = self.src(&o[1], t)?;
                let b = self.src(&o[2], t)?;
                let p = self.pred_src(&o[3])?;
                self.emit(Op::Selp { d, a, b, p });
                Ok(())
            }
            "slct" => {
                let o = self.ops(i, 4)?;
                let t = t0.unwrap_or(Ty::B32);
                let fsel = tys.get(1) == Some(&Ty::F32);
                let d = self.dst(&o[0])?;
                let a = self.src(&o[1], t)?;
                let b = self.src(&o[2], t)?;
                let c = self.src(&o[3], tys.get(1).copied().unwrap_or(Ty::S32))?;
                self.emit(Op::Slct { fsel, d, a, b, c });
                Ok(())
            }
            "cvt" => self.cvt(i, &mods, &tys),
            "cvta" => {
                let o = self.ops(i, 2)?;
                let to = has("to");
                let sp = Msp::from_space(space_of(&mods));
                let d = self.dst(&o[0])?;
                let a = self.src(&o[1], Ty::U64)?;
                self.emit(Op::Cvta { to, sp, d, a });
                Ok(())
            }
            "isspacep" => {
                let o = self.ops(i, 2)?;
                let sp = Msp::from_space(space_of(&mods));
                let d = self.pred_dst(&o[0])?;
                let a = self.src(&o[1], Ty::U64)?;
                self.emit(Op::Isspacep { sp, d, a });
                Ok(())
            }
            "testp" => {
                let o = self.ops(i, 2)?;
                let op = match mods.first().copied() {
                    Some("finite") => Testp::Finite,
                    Some("infinite") => Testp::Infinite,
                    Some("number") => Testp::Number,
                    Some("notanumber") => Testp::NotANumber,
                    Some("normal") => Testp::Normal,
                    Some("subnormal") => Testp::Subnormal,
                    _ => return self.unsupported(),
                };
                let Some(t) = t0.and_then(Ft::from_ty) else {
                    return self.unsupported();
                };
                let d = self.pred_dst(&o[0])?;
                let a = self.src(&o[1], t0.unwrap_or(Ty::F32))?;
                self.emit(Op::Testp { op, t, d, a });
                Ok(())
            }
            "bra" | "brx" => {
                if base == "brx" {
                    return self.unsupported();
                }
                let o = self.ops(i, 1)?;
                let Operand::Name(l) = &o[0] else {
                    return self.err("branch target must be a label");
                };
                let at = self.f.code.len();
                self.heap_bytes += str_bytes(l);
                self.fixups.push((at, l.clone(), self.line));
                self.emit(Op::Bra { target: 0 });
                Ok(())
            }
            "call" => self.call(i),
            "ret" => {
                self.emit(Op::Ret);
                Ok(())
            }
            "exit" => {
                self.emit(Op::Exit);
                Ok(())
            }
            "trap" => {
                self.emit(Op::Trap);
                Ok(())
            }
            "brkpt" | "nanosleep" | "prefetch" | "prefetchu" | "pmevent" | "discard"
            | "applypriority" => {
                self.emit(Op::Nop);
                Ok(())
            }
            // Programmatic dependent launch: the device runs each grid to
            // completion before the next starts, so the prerequisite grids
            // are always complete and early launch is only a hint.
            "griddepcontrol" if has("wait") || has("launch_dependents") => {
                self.emit(Op::Nop);
                Ok(())
            }
            "membar" | "fence" => {
                self.emit(Op::Fence);
                Ok(())
            }
            "createpolicy" => {
                let o = self.ops(i, 1)?;
                let d = self.dst(&o[0])?;
                let a = self.imm(0);
                self.emit(Op::Mov { d, a });
                Ok(())
            }
            "bar" | "barrier" => self.bar(i, &mods),
            "mbarrier" => self.mbarrier(i, &mods),
            "shfl" => {
                let o = self.ops(i, 5)?;
                if !has("sync") {
                    return self.unsupported();
                }
                let mode = if has("up") {
                    Shfl::Up
                } else if has("down") {
                    Shfl::Down
                } else if has("bfly") {
                    Shfl::Bfly
                } else if has("idx") {
                    Shfl::Idx
                } else {
                    return self.unsupported();
                };
                let (d, dp) = match &o[0] {
                    Operand::Pair(d, p) => {
                        let d = self.dst(&Operand::Name(d.clone()))?;
                        let p = self.pred_dst(&Operand::Name(p.clone()))?;
                        (d, p)
                    }
                    other => (self.dst(other)?, NONE),
                };
                let a = self.src(&o[1], Ty::B32)?;
                let b = self.src(&o[2], Ty::B32)?;
                let c = self.src(&o[3], Ty::B32)?;
                self.emit(Op::Shfl {
                    mode,
                    d,
                    dp,
                    a,
                    b,
                    c,
                });
                Ok(())
            }
            "vote" => {
                let o = self.ops(i, 2)?;
                let mode = if has("all") {
                    Vote::All
                } else if has("any") {
                    Vote::Any
                } else if has("uni") {
                    Vote::Uni
                } else if has("ballot") {
                    Vote::Ballot
                } else {
                    return self.unsupported();
                };
                let a = self.pred_src(&o[1])?;
                let d = if mode == Vote::Ballot {
                    self.dst(&o[0])?
                } else {
                    self.pred_dst(&o[0])?
                };
                let mask = self.member_mask(o, 2)?;
                self.emit(Op::Vote { mode, d, a, mask });
                Ok(())
            }
            "match" => {
                let o = self.ops(i, 2)?;
                let all = has("all");
                if !all && !has("any") {
                    return self.unsupported();
                }
                let wide = t0.map(Ty::size) == Some(8);
                let (d, dp) = match &o[0] {
                    Operand::Pair(d, p) => {
                        let d = self.dst(&Operand::Name(d.clone()))?;
                        let p = self.pred_dst(&Operand::Name(p.clone()))?;
                        (d, p)
                    }
                    other => (self.dst(other)?, NONE),
                };
                let a = self.src(&o[1], t0.unwrap_or(Ty::B32))?;
                let mask = self.member_mask(o, 2)?;
                self.emit(Op::Match {
                    all,
                    wide,
                    d,
                    dp,
                    a,
                    mask,
                });
                Ok(())
            }
            "activemask" => {
                let o = self.ops(i, 1)?;
                let d = self.dst(&o[0])?;
                self.emit(Op::Activemask { d });
                Ok(())
            }
            "redux" => {
                let o = self.ops(i, 2)?;
                let op = if has("add") {
                    Redux::Add
                } else if has("min") {
                    Redux::Min
                } else if has("max") {
                    Redux::Max
                } else if has("and") {
                    Redux::And
                } else if has("or") {
                    Redux::Or
                } else if has("xor") {
                    Redux::Xor
                } else {
                    return self.unsupported();
                };
                let signed = t0.is_some_and(Ty::is_signed);
                let d = self.dst(&o[0])?;
                let a = self.src(&o[1], Ty::B32)?;
                let mask = self.member_mask(o, 2)?;
                self.emit(Op::Redux {
                    op,
                    signed,
                    d,
                    a,
                    mask,
                });
                Ok(())
            }
            "atom" | "red" => self.atom(i, base == "red", &mods, t0),
            "mma" => self.mma(i, &mods, FragLayout::Mma),
            "wmma" => match mods.first().copied() {
                Some("mma") => self.mma(i, &mods[1..], FragLayout::Wmma),
                Some("load") | Some("store") => self.wmma_mem(i, &mods),
                _ => self.unsupported(),
            },
            "ldmatrix" | "stmatrix" => self.ldmatrix(i, base == "stmatrix", &mods),
            "tex" | "tld4" | "txq" | "suq" | "suld" | "sust" => self.image(i, base, &mods),
            "movmatrix" => {
                let o = self.ops(i, 2)?;
                if !(has("sync") && has("aligned") && has("m8n8") && has("trans") && has("b16")) {
                    return self.unsupported();
                }
                let d = self.dst(&o[0])?;
                let a = self.src(&o[1], Ty::B32)?;
                self.emit(Op::Movmatrix { d, a });
                Ok(())
            }
            "cp" if mods.first() == Some(&"async") => {
                if mods.contains(&"commit_group")
                    || mods.contains(&"wait_group")
                    || mods.contains(&"wait_all")
                {
                    // The copies are done when issued.
                    self.emit(Op::Nop);
                    return Ok(());
                }
                if mods.contains(&"mbarrier") {
                    return self.cp_async_mbarrier(i, &mods);
                }
                if mods.contains(&"bulk") && !mods.contains(&"tensor") {
                    return self.cp_async_bulk(i, &mods);
                }
                if mods.contains(&"bulk") {
                    return self.unsupported();
                }
                let o = self.ops(i, 3)?;
                let (dsp, dbase, doff) = self.addr(&o[0], Space::Shared)?;
                let (ssp, sbase, soff) = self.addr(&o[1], Space::Global)?;
                if dsp != Msp::Shared || ssp != Msp::Global {
                    return self.unsupported();
                }
                let Operand::Int(size) = o[2] else {
                    return self.err("cp.async needs an immediate copy size");
                };
                if !matches!(size, 4 | 8 | 16) {
                    return self.err(format!("cp.async copy size {size}"));
                }
                let src_size = match o.get(3) {
                    Some(x) => self.src(x, Ty::U32)?,
                    None => NONE,
                };
                self.emit(Op::CpAsync {
                    dbase,
                    doff,
                    sbase,
                    soff,
                    size: size as u8,
                    src_size,
                });
                Ok(())
            }
            _ => self.unsupported(),
        }
    }

    fn mov(&mut self, i: &PInst, t: Option<Ty>) -> Result<(), PtxError> {
        let o = self.ops(i, 2)?;
        let t = t.unwrap_or(Ty::B64);
        if t == Ty::B128 {
            return self.unsupported();
        }
        match (&o[0], &o[1]) {
            (Operand::Vec(ds), a) => {
                if ds.is_empty() || ds.len() > 4 {
                    return self.unsupported();
                }
                let n = ds.len() as u8;
                let bits = (t.bits() / u32::from(n)) as u8;
                let a = self.src(a, t)?;
                let mut d = [NONE; 4];
                for (k, x) in ds.iter().enumerate() {
                    d[k] = self.dst(x)?;
                }
                self.emit(Op::Unpack { d, n, bits, a });
            }
            (d, Operand::Vec(ss)) => {
                if ss.is_empty() || ss.len() > 4 {
                    return self.unsupported();
                }
                let n = ss.len() as u8;
                let bits = (t.bits() / u32::from(n)) as u8;
                let et = match bits {
                    8 => Ty::B8,
                    16 => Ty::B16,
                    32 => Ty::B32,
                    _ => Ty::B64,
                };
                let mut src = [NONE; 4];
                for (k, x) in ss.iter().enumerate() {
                    src[k] = self.src(x, et)?;
                }
                let d = self.dst(d)?;
                self.emit(Op::Pack { d, src, n, bits });
            }
            (d, a) if t == Ty::Pred => {
                let d = self.pred_dst(d)?;
                match a {
                    Operand::Int(v) => self.emit(Op::PredConst { d, v: *v != 0 }),
                    a => {
                        let a = self.pred_src(a)?;
                        self.emit(Op::Pred {
                            op: PredOp::Mov,
                            d,
                            a,
                            b: a,
                        });
                    }
                }
            }
            (d, a) => {
                let d = self.dst(d)?;
                if let Operand::Name(n) = a {
                    if let Some(sr) = Sreg::from_name(n) {
                        if self.lookup(n).is_none() {
                            self.emit(Op::Special { d, sr });
                            return Ok(());
                        }
                    }
                    if let Some(Binding::Frame { off, .. }) = self.lookup(n) {
                        self.emit(Op::FrameAddr { d, off });
                        return Ok(());
                    }
                }
                let a = self.src(a, t)?;
                self.emit(Op::Mov { d, a });
            }
        }
        Ok(())
    }

    fn ld(&mut self, i: &PInst, mods: &[&str], t: Option<Ty>) -> Result<(), PtxError> {
        let o = self.ops(i, 2)?;
        let Some(t) = t else {
            return self.unsupported();
        };
        if t == Ty::B128 || mods.iter().any(|m| m.starts_with("v8")) {
            return self.unsupported();
        }
        let (sp, base, off) = self.addr(&o[1], space_of(mods))?;
        let mut d = [NONE; 4];
        let n = match &o[0] {
            Operand::Vec(ds) => {
                if ds.is_empty() || ds.len() > 4 {
                    return self.unsupported();
                }
                for (k, x) in ds.iter().enumerate() {
                    d[k] = self.dst(x)?;
                }
                ds.len() as u8
            }
            x => {
                d[0] = self.dst(x)?;
                1
            }
        };
        self.emit(Op::Ld {
            sp,
            size: t.size() as u8,
            signed: t.is_signed(),
            n,
            d,
            base,
            off,
        });
        Ok(())
    }

    fn st(&mut self, i: &PInst, mods: &[&str], t: Option<Ty>) -> Result<(), PtxError> {
        let o = self.ops(i, 2)?;
        let Some(t) = t else {
            return self.unsupported();
        };
        if t == Ty::B128 || mods.iter().any(|m| m.starts_with("v8")) {
            return self.unsupported();
        }
        let (sp, base, off) = self.addr(&o[0], space_of(mods))?;
        let mut s = [NONE; 4];
        let n = match &o[1] {
            Operand::Vec(ss) => {
                if ss.is_empty() || ss.len() > 4 {
                    return self.unsupported();
                }
                for (k, x) in ss.iter().enumerate() {
                    s[k] = self.src(x, t)?;
                }
                ss.len() as u8
            }
            x => {
                s[0] = self.src(x, t)?;
                1
            }
        };
        self.emit(Op::St {
            sp,
            size: t.size() as u8,
            n,
            s,
            base,
            off,
        });
        Ok(())
    }

    fn arith(
        &mut self,
        i: &PInst,
        base: &str,
        mods: &[&str],
        t: Option<Ty>,
    ) -> Result<(), PtxError> {
        let Some(t) = t else {
            return self.unsupported();
        };
        let has = |m: &str| mods.contains(&m);
        if t == Ty::Pred {
            let o = self.ops(i, 2)?;
            let d = self.pred_dst(&o[0])?;
            let a = self.pred_src(&o[1])?;
            let (op, b) = match base {
                "not" => (PredOp::Not, a),
                "and" | "or" | "xor" => {
                    let o3 = self.ops(i, 3)?;
                    let b = self.pred_src(&o3[2])?;
                    let op = match base {
                        "and" => PredOp::And,
                        "or" => PredOp::Or,
                        _ => PredOp::Xor,
                    };
                    (op, b)
                }
                _ => return self.unsupported(),
            };
            self.emit(Op::Pred { op, d, a, b });
            return Ok(());
        }
        if let Some(ft) = Ft::from_ty(t) {
            return self.float_arith(i, base, mods, t, ft);
        }
        let Some(w) = Iw::from_ty(t) else {
            return self.unsupported();
        };
        let unary = matches!(
            base,
            "not" | "cnot" | "neg" | "abs" | "popc" | "clz" | "brev" | "bfind"
        );
        if unary {
            let o = self.ops(i, 2)?;
            let op = match base {
                "not" => Int1::Not,
                "cnot" => Int1::Cnot,
                "neg" => Int1::Neg,
                "abs" => Int1::Abs,
                "popc" => Int1::Popc,
                "clz" => Int1::Clz,
                "brev" => Int1::Brev,
                _ if has("shiftamt") => Int1::BfindShift,
                _ => Int1::Bfind,
            };
            let d = self.dst(&o[0])?;
            let a = self.src(&o[1], t)?;
            self.emit(Op::Int1 { op, w, d, a });
            return Ok(());
        }
        let cc = has("cc");
        match base {
            "addc" | "subc" | "add" | "sub" if cc || base.ends_with('c') => {
                let o = self.ops(i, 3)?;
                let kind = if base.starts_with("add") {
                    CarryKind::Add
                } else {
                    CarryKind::Sub
                };
                let d = self.dst(&o[0])?;
                let a = self.src(&o[1], t)?;
                let b = self.src(&o[2], t)?;
                let ccs = self.cc_slot();
                self.emit(Op::Carry {
                    kind,
                    cin: base.ends_with('c'),
                    cout: cc,
                    wide: w.bits() == 64,
                    d,
                    a,
                    b,
                    c: a,
                    cc: ccs,
                });
                return Ok(());
            }
            "mad" | "madc" if cc || base == "madc" => {
                let o = self.ops(i, 4)?;
                let kind = if has("hi") {
                    CarryKind::MadHi
                } else {
                    CarryKind::MadLo
                };
                let d = self.dst(&o[0])?;
                let a = self.src(&o[1], t)?;
                let b = self.src(&o[2], t)?;
                let c = self.src(&o[3], t)?;
                let ccs = self.cc_slot();
                self.emit(Op::Carry {
                    kind,
                    cin: base == "madc",
                    cout: cc,
                    wide: w.bits() == 64,
                    d,
                    a,
                    b,
                    c,
                    cc: ccs,
                });
                return Ok(());
            }
            "mad" | "mad24" | "sad" => {
                let o = self.ops(i, 4)?;
                let op = if base == "sad" {
                    Mad::Sad
                } else if base == "mad24" {
                    if has("hi") {
                        return self.unsupported();
                    }
                    Mad::Lo24
                } else if has("hi") {
                    Mad::Hi
                } else if has("wide") {
                    Mad::Wide
                } else {
                    Mad::Lo
                };
                let d = self.dst(&o[0])?;
                let a = self.src(&o[1], t)?;
                let b = self.src(&o[2], t)?;
                let ct = if op == Mad::Wide { wide_ty(t) } else { t };
                let c = self.src(&o[3], ct)?;
                self.emit(Op::Mad { op, w, d, a, b, c });
                return Ok(());
            }
            _ => {}
        }
        let o = self.ops(i, 3)?;
        let op = match base {
            "add" if has("sat") => Int2::AddSat,
            "add" => Int2::Add,
            "sub" if has("sat") => Int2::SubSat,
            "sub" => Int2::Sub,
            "mul" if has("hi") => Int2::MulHi,
            "mul" if has("wide") => Int2::MulWide,
            "mul" => Int2::MulLo,
            "mul24" if has("hi") => Int2::Mul24Hi,
            "mul24" => Int2::Mul24Lo,
            "div" => Int2::Div,
            "rem" => Int2::Rem,
            "min" => Int2::Min,
            "max" => Int2::Max,
            "and" => Int2::And,
            "or" => Int2::Or,
            "xor" => Int2::Xor,
            "shl" => Int2::Shl,
            "shr" => Int2::Shr,
            _ => return self.unsupported(),
        };
        if (op == Int2::Min || op == Int2::Max) && has("relu") {
            return self.unsupported();
        }
        let d = self.dst(&o[0])?;
        let a = self.src(&o[1], t)?;
        let bt = if matches!(op, Int2::Shl | Int2::Shr) {
            Ty::U32
        } else {
            t
        };
        let b = self.src(&o[2], bt)?;
        self.emit(Op::Int2 { op, w, d, a, b });
        Ok(())
    }

    fn int2(&mut self, op: Int2, w: Iw, d: R, a: R, b: R) {
        self.emit(Op::Int2 { op, w, d, a, b });
    }

    /// `min`/`max` on two 16-bit halves at once (`.s16x2`, `.u16x2`, with
    /// `.relu` for signed): each half on its own, then packed again. The
    /// destination is written last, so it may be a source.
    fn packed_min_max(&mut self, i: &PInst, base: &str, mods: &[&str]) -> Result<(), PtxError> {
        let o = self.ops(i, 3)?;
        let w = if mods.contains(&"s16x2") {
            Iw::S16
        } else {
            Iw::U16
        };
        let relu = mods.contains(&"relu");
        if relu && w == Iw::U16 {
            return self.unsupported();
        }
        let op = if base == "min" { Int2::Min } else { Int2::Max };
        let d = self.dst(&o[0])?;
        let a = self.src(&o[1], Ty::B32)?;
        let b = self.src(&o[2], Ty::B32)?;
        let (sixteen, zero, mask) = (self.imm(16), self.imm(0), self.imm(0xffff));
        let [a_hi, b_hi, lo, hi] = [(); 4].map(|()| self.new_slot());
        self.int2(Int2::Shr, Iw::U32, a_hi, a, sixteen);
        self.int2(Int2::Shr, Iw::U32, b_hi, b, sixteen);
        // A 16-bit operation reads the low halves straight from the sources.
        self.int2(op, w, lo, a, b);
        self.int2(op, w, hi, a_hi, b_hi);
        if relu {
            self.int2(Int2::Max, w, lo, lo, zero);
            self.int2(Int2::Max, w, hi, hi, zero);
        }
        self.int2(Int2::And, Iw::U32, lo, lo, mask);
        self.int2(Int2::Shl, Iw::U32, hi, hi, sixteen);
        self.int2(Int2::Or, Iw::U32, d, hi, lo);
        Ok(())
    }

    fn float_arith(
        &mut self,
        i: &PInst,
        base: &str,
        mods: &[&str],
        t: Ty,
        ft: Ft,
    ) -> Result<(), PtxError> {
        let has = |m: &str| mods.contains(&m);
        let rnd = rnd_of(mods);
        let ftz = has("ftz");
        let sat = has("sat");
        let relu = has("relu");
        if relu && !matches!(base, "fma" | "mad") {
            return self.unsupported();
        }
        match base {
            "fma" | "mad" => {
                let o = self.ops(i, 4)?;
                let d = self.dst(&o[0])?;
                let a = self.src(&o[1], t)?;
                let b = self.src(&o[2], t)?;
                let c = self.src(&o[3], t)?;
                self.emit(Op::Fma {
                    t: ft,
                    rnd,
                    ftz,
                    sat,
                    d,
                    a,
                    b,
                    c,
                });
                if relu {
                    // `.relu` (f16/bf16, sm_80): a negative result becomes
                    // +0, NaN stays the canonical NaN: max.NaN with zero.
                    let zero = self.imm(0);
                    self.emit(Op::F2 {
                        op: F2::MaxNaN,
                        t: ft,
                        rnd,
                        ftz: false,
                        sat: false,
                        d,
                        a: d,
                        b: zero,
                    });
                }
                Ok(())
            }
            "neg" | "abs" | "sqrt" | "rsqrt" | "rcp" | "ex2" | "lg2" | "sin" | "cos" | "tanh" => {
                let o = self.ops(i, 2)?;
                let approx = has("approx");
                let op = match base {
                    "neg" => F1::Neg,
                    "abs" => F1::Abs,
                    "sqrt" if approx => F1::SqrtApprox,
                    "sqrt" => F1::Sqrt,
                    "rsqrt" => F1::Rsqrt,
                    "rcp" if approx => F1::RcpApprox,
                    "rcp" => F1::Rcp,
                    "ex2" => F1::Ex2,
                    "lg2" => F1::Lg2,
                    "sin" => F1::Sin,
                    "cos" => F1::Cos,
                    _ => F1::Tanh,
                };
                let d = self.dst(&o[0])?;
                let a = self.src(&o[1], t)?;
                self.emit(Op::F1 {
                    op,
                    t: ft,
                    rnd,
                    ftz,
                    sat,
                    d,
                    a,
                });
                Ok(())
            }
            "add" | "sub" | "mul" | "div" | "min" | "max" | "copysign" => {
                let o = self.ops(i, 3)?;
                let nan = has("NaN");
                let op = match base {
                    "add" => F2::Add,
                    "sub" => F2::Sub,
                    "mul" => F2::Mul,
                    "div" if has("approx") || has("full") => F2::DivApprox,
                    "div" => F2::Div,
                    "min" if nan => F2::MinNaN,
                    "min" => F2::Min,
                    "max" if nan => F2::MaxNaN,
                    "max" => F2::Max,
                    _ => F2::Copysign,
                };
                // Sources before the destination: writing it forgets products.
                let a = self.src(&o[1], t)?;
                let b = self.src(&o[2], t)?;
                let plain = rnd == Rnd::Default && !sat && matches!(ft, Ft::F32 | Ft::F64);
                let fused = match op {
                    F2::Add | F2::Sub if plain => self.contract(ft, ftz, a, b, op == F2::Sub),
                    _ => None,
                };
                let d = self.dst(&o[0])?;
                if let Some((a, b, c)) = fused {
                    let (rnd, sat) = (Rnd::Rn, false);
                    self.emit(Op::Fma {
                        t: ft,
                        rnd,
                        ftz,
                        sat,
                        d,
                        a,
                        b,
                        c,
                    });
                    return Ok(());
                }
                self.emit(Op::F2 {
                    op,
                    t: ft,
                    rnd,
                    ftz,
                    sat,
                    d,
                    a,
                    b,
                });
                if op == F2::Mul && plain && self.guard == NONE && d != a && d != b {
                    let (t, a, b) = (ft, a, b);
                    self.products.insert(d, Product { t, ftz, a, b });
                    self.product_users.entry(a).or_default().push(d);
                    if b != a {
                        self.product_users.entry(b).or_default().push(d);
                    }
                    self.heap_bytes += 2 * map_entry_bytes::<R, Vec<R>>();
                }
                Ok(())
            }
            _ => self.unsupported(),
        }
    }

    fn bits(
        &mut self,
        i: &PInst,
        base: &str,
        mods: &[&str],
        t: Option<Ty>,
    ) -> Result<(), PtxError> {
        let t = t.unwrap_or(Ty::B32);
        match base {
            "bfe" => {
                let o = self.ops(i, 4)?;
                let d = self.dst(&o[0])?;
                let a = self.src(&o[1], t)?;
                let b = self.src(&o[2], Ty::U32)?;
                let c = self.src(&o[3], Ty::U32)?;
                self.emit(Op::Bfe {
                    wide: t.size() == 8,
                    signed: t.is_signed(),
                    d,
                    a,
                    b,
                    c,
                });
            }
            "bfi" => {
                let o = self.ops(i, 5)?;
                let d = self.dst(&o[0])?;
                let a = self.src(&o[1], t)?;
                let b = self.src(&o[2], t)?;
                let c = self.src(&o[3], Ty::U32)?;
                let e = self.src(&o[4], Ty::U32)?;
                self.emit(Op::Bfi {
                    wide: t.size() == 8,
                    d,
                    a,
                    b,
                    c,
                    e,
                });
            }
            "prmt" => {
                let o = self.ops(i, 4)?;
                let mode = match mods
                    .iter()
                    .find(|m| matches!(**m, "f4e" | "b4e" | "rc8" | "ecl" | "ecr" | "rc16"))
                {
                    None => 0,
                    Some(&"f4e") => 1,
                    Some(&"b4e") => 2,
                    Some(&"rc8") => 3,
                    Some(&"ecl") => 4,
                    Some(&"ecr") => 5,
                    Some(_) => 6,
                };
                let d = self.dst(&o[0])?;
                let a = self.src(&o[1], Ty::B32)?;
                let b = self.src(&o[2], Ty::B32)?;
                let c = self.src(&o[3], Ty::B32)?;
                self.emit(Op::Prmt { mode, d, a, b, c });
            }
            "shf" => {
                let o = self.ops(i, 4)?;
                let left = mods.contains(&"l");
                let clamp = mods.contains(&"clamp");
                let d = self.dst(&o[0])?;
                let a = self.src(&o[1], Ty::B32)?;
                let b = self.src(&o[2], Ty::B32)?;
                let c = self.src(&o[3], Ty::U32)?;
                self.emit(Op::Shf {
                    left,
                    clamp,
                    d,
                    a,
                    b,
                    c,
                });
            }
            "lop3" => {
                let o = self.ops(i, 5)?;
                let Operand::Int(lut) = o[4] else {
                    return self.err("lop3 needs an immediate truth table");
                };
                let d = self.dst(&o[0])?;
                let a = self.src(&o[1], Ty::B32)?;
                let b = self.src(&o[2], Ty::B32)?;
                let c = self.src(&o[3], Ty::B32)?;
                self.emit(Op::Lop3 {
                    lut: lut as u8,
                    d,
                    a,
                    b,
                    c,
                });
            }
            _ => {
                // dp4a.atype.btype
                let o = self.ops(i, 4)?;
                let tys = types_of(mods);
                if mods.first() != Some(&"u32") && mods.first() != Some(&"s32") {
                    return self.unsupported();
                }
                let us = tys.first() == Some(&Ty::U32);
                let ut = tys.get(1) == Some(&Ty::U32);
                let d = self.dst(&o[0])?;
                let a = self.src(&o[1], Ty::B32)?;
                let b = self.src(&o[2], Ty::B32)?;
                let c = self.src(&o[3], Ty::B32)?;
                self.emit(Op::Dp4a { us, ut, d, a, b, c });
            }
        }
        Ok(())
    }

    fn setp(&mut self, i: &PInst, mods: &[&str], t: Option<Ty>) -> Result<(), PtxError> {
        let o = self.ops(i, 3)?;
        let Some(t) = t else {
            return self.unsupported();
        };
        let Some(cmp) = mods.first().and_then(|m| Cmp::from_name(m)) else {
            return self.unsupported();
        };
        let bop = if mods.contains(&"and") {
            BoolOp::And
        } else if mods.contains(&"or") {
            BoolOp::Or
        } else if mods.contains(&"xor") {
            BoolOp::Xor
        } else {
            BoolOp::None
        };
        if matches!(t, Ty::F16x2 | Ty::BF16x2) {
            return self.unsupported();
        }
        let (d, dn) = match &o[0] {
            Operand::Pair(p, q) => (
                self.pred_dst(&Operand::Name(p.clone()))?,
                self.pred_dst(&Operand::Name(q.clone()))?,
            ),
            x => (self.pred_dst(x)?, NONE),
        };
        let a = self.src(&o[1], t)?;
        let b = self.src(&o[2], t)?;
        let c = if bop != BoolOp::None {
            let Some(c) = o.get(3) else {
                return self.err("setp with a boolean operation needs a predicate operand");
            };
            self.pred_src(c)?
        } else {
            NONE
        };
        self.emit(Op::Setp {
            cmp,
            ty: t,
            bop,
            d,
            dn,
            a,
            b,
            c,
        });
        Ok(())
    }

    fn set(&mut self, i: &PInst, mods: &[&str], tys: &[Ty]) -> Result<(), PtxError> {
        let o = self.ops(i, 3)?;
        let Some(cmp) = mods.first().and_then(|m| Cmp::from_name(m)) else {
            return self.unsupported();
        };
        if mods.iter().any(|m| matches!(*m, "and" | "or" | "xor")) || tys.len() < 2 {
            return self.unsupported();
        }
        let float_dst = tys[0] == Ty::F32;
        let st = tys[1];
        let d = self.dst(&o[0])?;
        let a = self.src(&o[1], st)?;
        let b = self.src(&o[2], st)?;
        self.emit(Op::Set {
            cmp,
            ty: st,
            float_dst,
            d,
            a,
            b,
        });
        Ok(())
    }

    fn cvt(&mut self, i: &PInst, mods: &[&str], tys: &[Ty]) -> Result<(), PtxError> {
        let o = self.ops(i, 2)?;
        let rnd = rnd_of(mods);
        let sat = mods.contains(&"sat");
        let ftz = mods.contains(&"ftz");
        let relu = mods.contains(&"relu");
        if mods.contains(&"tf32") {
            return self.cvt_tf32(i, mods);
        }
        if tys.len() < 2 {
            return self.unsupported();
        }
        let (dt, st) = (tys[0], tys[1]);
        if matches!(dt, Ty::F16x2 | Ty::BF16x2) && o.len() == 3 && st == Ty::F32 {
            let d = self.dst(&o[0])?;
            let a = self.src(&o[1], st)?;
            let b = self.src(&o[2], st)?;
            self.emit(Op::CvtPack {
                dt,
                rnd,
                relu,
                d,
                a,
                b,
            });
            return Ok(());
        }
        if relu
            || matches!(dt, Ty::F16x2 | Ty::BF16x2 | Ty::Pred | Ty::B128)
            || matches!(st, Ty::F16x2 | Ty::BF16x2 | Ty::Pred | Ty::B128)
            || mods.contains(&"pack")
        {
            return self.unsupported();
        }
        let d = self.dst(&o[0])?;
        let a = self.src(&o[1], st)?;
        self.emit(Op::Cvt {
            dt,
            st,
            rnd,
            sat,
            ftz,
            d,
            a,
        });
        Ok(())
    }

    fn bar(&mut self, i: &PInst, mods: &[&str]) -> Result<(), PtxError> {
        let has = |m: &str| mods.contains(&m);
        if has("warp") {
            // bar.warp.sync: lanes are already converged where they meet.
            self.emit(Op::Nop);
            return Ok(());
        }
        if has("red") {
            let o = self.ops(i, 3)?;
            let kind = if has("popc") {
                Bar::Popc
            } else if has("and") {
                Bar::And
            } else if has("or") {
                Bar::Or
            } else {
                return self.unsupported();
            };
            let p = self.pred_src(&o[o.len() - 1])?;
            let d = if kind == Bar::Popc {
                self.dst(&o[0])?
            } else {
                self.pred_dst(&o[0])?
            };
            let (id, n) = (NONE, NONE);
            self.emit(Op::Bar { kind, d, p, id, n });
            return Ok(());
        }
        let kind = if has("arrive") {
            Bar::Arrive
        } else if has("sync") || mods.is_empty() || has("aligned") {
            Bar::Sync
        } else {
            return self.unsupported();
        };
        // With a thread count, the numbered barrier is a real one (16 per
        // block); without, it waits for the whole block.
        let o = &i.operands;
        let (id, n) = match (o.first(), o.get(1)) {
            (Some(a), Some(b)) => (self.src(a, Ty::U32)?, self.src(b, Ty::U32)?),
            _ => (NONE, NONE),
        };
        self.emit(Op::Bar {
            kind,
            d: NONE,
            p: NONE,
            id,
            n,
        });
        Ok(())
    }

    fn atom(&mut self, i: &PInst, red: bool, mods: &[&str], t: Option<Ty>) -> Result<(), PtxError> {
        let has = |m: &str| mods.contains(&m);
        let op = if has("add") {
            AtomOp::Add
        } else if has("min") {
            AtomOp::Min
        } else if has("max") {
            AtomOp::Max
        } else if has("and") {
            AtomOp::And
        } else if has("or") {
            AtomOp::Or
        } else if has("xor") {
            AtomOp::Xor
        } else if has("exch") {
            AtomOp::Exch
        } else if has("cas") {
            AtomOp::Cas
        } else if has("inc") {
            AtomOp::Inc
        } else if has("dec") {
            AtomOp::Dec
        } else {
            return self.unsupported();
        };
        let Some(t) = t else {
            return self.unsupported();
        };
        let ty = match t {
            Ty::U32 | Ty::B32 => AtomTy::U32,
            Ty::S32 => AtomTy::S32,
            Ty::U64 | Ty::B64 => AtomTy::U64,
            Ty::S64 => AtomTy::S64,
            Ty::F32 => AtomTy::F32,
            Ty::F64 => AtomTy::F64,
            Ty::F16 if op == AtomOp::Add => AtomTy::F16,
            Ty::BF16 if op == AtomOp::Add => AtomTy::BF16,
            Ty::F16x2 if op == AtomOp::Add => AtomTy::F16x2,
            Ty::BF16x2 if op == AtomOp::Add => AtomTy::BF16x2,
            _ => return self.unsupported(),
        };
        if mods
            .iter()
            .any(|m| m.starts_with("v2") || m.starts_with("v4"))
        {
            return self.unsupported();
        }
        let o = self.ops(i, if red { 2 } else { 3 })?;
        let (d, rest) = if red {
            (NONE, o)
        } else {
            (self.dst(&o[0])?, &o[1..])
        };
        let (sp, base, off) = self.addr(&rest[0], space_of(mods))?;
        let b = self.src(&rest[1], t)?;
        let c = if op == AtomOp::Cas {
            let Some(c) = rest.get(2) else {
                return self.err("atom.cas needs a third operand");
            };
            self.src(c, t)?
        } else {
            NONE
        };
        self.emit(Op::Atom {
            sp,
            op,
            ty,
            d,
            base,
            off,
            b,
            c,
        });
        Ok(())
    }

    fn call(&mut self, i: &PInst) -> Result<(), PtxError> {
        let mut it = i.operands.iter().peekable();
        let mut rets = Vec::new();
        if let Some(Operand::List(l)) = it.peek() {
            rets = l.clone();
            it.next();
        }
        let Some(Operand::Name(callee)) = it.next() else {
            return self.unsupported();
        };
        let args = match it.next() {
            Some(Operand::List(l)) => l.clone(),
            None => Vec::new(),
            Some(_) => return self.unsupported(),
        };
        let prototype = it.next().is_some();
        let through = match self.lookup(callee) {
            Some(Binding::Reg(Some(r))) => Some(r),
            _ => None,
        };
        let target = if let Some(r) = through {
            // Through a function pointer (with its prototype).
            Callee::Indirect(r)
        } else if prototype {
            return self.unsupported();
        } else if let Some(&f) = self.m.funcs.get(callee) {
            Callee::Func(f)
        } else {
            match callee.as_str() {
                "vprintf" => Callee::Vprintf,
                "__assertfail" | "__assert_fail" => Callee::AssertFail,
                "malloc" => Callee::Malloc,
                "free" => Callee::Free,
                other => match DevRt::from_name(other) {
                    Some(k) => Callee::DevRt(k),
                    None => {
                        let what = if self.m.externs.contains_key(callee) {
                            "external function"
                        } else {
                            "unknown function"
                        };
                        return self.err(format!("call to {what} '{callee}'"));
                    }
                },
            }
        };
        let mut frame_args = |list: &[Operand]| -> Result<Vec<(u32, u32)>, PtxError> {
            let mut out = Vec::new();
            for a in list {
                let Operand::Name(n) = a else {
                    return self.err(format!("call argument {a:?} is not a .param variable"));
                };
                match self.lookup(n) {
                    Some(Binding::Frame { off, size }) => out.push((off, size)),
                    _ => {
                        return self.err(format!(
                            "call argument '{n}' is not a .param variable (register arguments are unsupported)"
                        ))
                    }
                }
            }
            Ok(out)
        };
        let rets = frame_args(&rets)?;
        let args = frame_args(&args)?;
        let site = self.f.calls.len() as u32;
        self.heap_bytes += vec_bytes::<(u32, u32)>(args.len() + rets.len());
        self.f.calls.push(CallSite {
            callee: target,
            args,
            rets,
        });
        self.emit(Op::Call { site });
        Ok(())
    }
}

/// `mXnYkZ` → [X, Y, Z].
fn mma_shape(mods: &[&str]) -> Option<[u32; 3]> {
    let s = mods
        .iter()
        .find(|m| m.starts_with('m') && m.contains('n'))?;
    let s = s.strip_prefix('m')?;
    let (m, rest) = s.split_once('n')?;
    let (n, k) = rest.split_once('k')?;
    Some([m.parse().ok()?, n.parse().ok()?, k.parse().ok()?])
}

/// Whether A/B element type `a` may be multiplied with `b` on `shape`
/// (`wmma` or `mma.sync`), accumulating in `c` and giving `d`.
fn mma_valid(layout: FragLayout, shape: [u32; 3], [a, b, c, d]: [El; 4]) -> bool {
    use El::*;
    let fp8 = |t: El| matches!(t, E4m3 | E5m2);
    let inputs = match (a, b) {
        (F16, F16) | (BF16, BF16) | (Tf32, Tf32) | (F64, F64) | (B1, B1) => true,
        (S8 | U8, S8 | U8) | (S4 | U4, S4 | U4) => true,
        _ => fp8(a) && fp8(b),
    };
    let acc = match a {
        F16 => matches!(c, F16 | F32) && matches!(d, F16 | F32),
        BF16 | Tf32 => c == F32 && d == F32,
        F64 => c == F64 && d == F64,
        E4m3 | E5m2 => matches!(c, F16 | F32) && c == d,
        _ => c == S32 && d == S32,
    };
    let shapes: &[[u32; 3]] = match (layout, a) {
        (FragLayout::Wmma, F16 | BF16 | S8 | U8) => &[[16, 16, 16], [32, 8, 16], [8, 32, 16]],
        (FragLayout::Wmma, Tf32) => &[[16, 16, 8]],
        (FragLayout::Wmma, F64) => &[[8, 8, 4]],
        (FragLayout::Wmma, S4 | U4) => &[[8, 8, 32]],
        (FragLayout::Wmma, B1) => &[[8, 8, 128]],
        (FragLayout::Wmma, _) => &[],
        (FragLayout::QuadPair { .. }, F16) => &[[8, 8, 4]],
        (FragLayout::QuadPair { .. }, _) => &[],
        (FragLayout::Mma, F16 | BF16) => &[[16, 8, 8], [16, 8, 16]],
        (FragLayout::Mma, Tf32) => &[[16, 8, 4], [16, 8, 8]],
        (FragLayout::Mma, F64) => &[[8, 8, 4], [16, 8, 4], [16, 8, 8], [16, 8, 16]],
        (FragLayout::Mma, S8 | U8) => &[[8, 8, 16], [16, 8, 16], [16, 8, 32]],
        (FragLayout::Mma, S4 | U4) => &[[8, 8, 32], [16, 8, 32], [16, 8, 64]],
        (FragLayout::Mma, B1) => &[[8, 8, 128], [16, 8, 128], [16, 8, 256]],
        (FragLayout::Mma, E4m3 | E5m2) => &[[16, 8, 32]],
        (FragLayout::Mma, _) => &[],
    };
    inputs && acc && shapes.contains(&shape)
}

impl Tr<'_, '_> {
    /// A brace-enclosed register list (or one register).
    fn reg_list(&mut self, o: &Operand, dst: bool, t: Ty) -> Result<Vec<R>, PtxError> {
        let one = std::slice::from_ref(o);
        let items = match o {
            Operand::Vec(v) => &v[..],
            _ => one,
        };
        if items.is_empty() || items.len() > 16 {
            return self.err(format!("bad register list {o:?}"));
        }
        self.heap_bytes += vec_bytes::<R>(items.len());
        items
            .iter()
            .map(|x| if dst { self.dst(x) } else { self.src(x, t) })
            .collect()
    }

    /// Checks that a fragment list has the registers its layout needs:
    /// exactly so for `mma.sync`; for `wmma`, whole copies of the matrix.
    fn frag_regs(
        &self,
        layout: FragLayout,
        f: Frag,
        shape: [u32; 3],
        el: El,
        regs: &[R],
    ) -> Result<(), PtxError> {
        let (rows, cols) = frag_dims(f, shape);
        let need = rows * cols;
        let have = regs.len() as u32 * el.per_reg() * 32;
        let ok = match layout {
            FragLayout::Mma | FragLayout::QuadPair { .. } => have == need * layout.batches(),
            FragLayout::Wmma => have >= need && have.is_multiple_of(need),
        };
        if ok {
            Ok(())
        } else {
            self.err(format!(
                "{} registers for a {rows}x{cols} {el:?} fragment",
                regs.len()
            ))
        }
    }

    /// `mma.sync.aligned.shape.row.col{.satfinite}.dtype.atype.btype.ctype`
    /// and `wmma.mma` (`mods` after `mma`).
    fn mma(&mut self, i: &PInst, mods: &[&str], layout: FragLayout) -> Result<(), PtxError> {
        let has = |m: &str| mods.contains(&m);
        let exotic = mods
            .iter()
            .any(|m| *m == "sp" || m.starts_with("sp::") || m.contains("::"));
        if exotic || !has("sync") || !has("aligned") {
            return self.unsupported();
        }
        let Some(shape) = mma_shape(mods) else {
            return self.unsupported();
        };
        let els: Vec<El> = mods.iter().filter_map(|m| El::from_name(m)).collect();
        let ty = match els[..] {
            // wmma with f16 inputs names only D and C.
            [d, c] if layout == FragLayout::Wmma => [El::F16, El::F16, c, d],
            [d, a, b, c] => [a, b, c, d],
            _ => return self.unsupported(),
        };
        let majors: Vec<&str> = mods
            .iter()
            .copied()
            .filter(|m| matches!(*m, "row" | "col"))
            .collect();
        let mut layout = layout;
        if layout == FragLayout::Mma {
            if shape == [8, 8, 4] && ty[0] == El::F16 {
                // sm_70's shape takes any A and B layouts.
                let [a, b] = majors[..] else {
                    return self.unsupported();
                };
                layout = FragLayout::QuadPair {
                    a_col: a == "col",
                    b_row: b == "row",
                };
            } else if majors != ["row", "col"] {
                // The other mma.sync shapes are defined for .row.col only.
                return self.unsupported();
            }
        }
        if !mma_valid(layout, shape, ty) {
            return self.unsupported();
        }
        let bop = if has("xor") { BitOp::Xor } else { BitOp::And };
        if ty[0] == El::B1 && !(has("popc") && (has("xor") || has("and"))) {
            return self.unsupported();
        }
        // f64 is computed with fused multiply-adds rounded to nearest.
        if ty[0] == El::F64 && mods.iter().any(|m| matches!(*m, "rz" | "rm" | "rp")) {
            return self.unsupported();
        }
        let o = self.ops(i, 4)?;
        let (da, aa, ba, ca) = (&o[0], &o[1], &o[2], &o[3]);
        let a = self.reg_list(aa, false, Ty::B32)?;
        let b = self.reg_list(ba, false, Ty::B32)?;
        let c = self.reg_list(ca, false, Ty::B32)?;
        let d = self.reg_list(da, true, Ty::B32)?;
        self.frag_regs(layout, Frag::A, shape, ty[0], &a)?;
        self.frag_regs(layout, Frag::B, shape, ty[1], &b)?;
        self.frag_regs(layout, Frag::C, shape, ty[2], &c)?;
        self.frag_regs(layout, Frag::C, shape, ty[3], &d)?;
        self.heap_bytes += std::mem::size_of::<MmaOp>() as u64;
        self.emit(Op::Mma(Box::new(MmaOp {
            shape,
            layout,
            ty,
            sat: has("satfinite"),
            bop,
            a,
            b,
            c,
            d,
        })));
        Ok(())
    }

    /// `wmma.load.{a,b,c}.sync.aligned.layout.shape{.ss}.type r, [p]{, stride}`
    /// and `wmma.store.d.sync.aligned.layout.shape{.ss}.type [p], r{, stride}`.
    fn wmma_mem(&mut self, i: &PInst, mods: &[&str]) -> Result<(), PtxError> {
        let has = |m: &str| mods.contains(&m);
        let store = mods.first() == Some(&"store");
        let frag = match (store, mods.get(1).copied()) {
            (false, Some("a")) => Frag::A,
            (false, Some("b")) => Frag::B,
            (false, Some("c")) | (true, Some("d")) => Frag::C,
            _ => return self.unsupported(),
        };
        let shape = mma_shape(mods);
        let el = mods.iter().rev().find_map(|m| El::from_name(m));
        let (Some(shape), Some(el)) = (shape, el) else {
            return self.unsupported();
        };
        if !has("sync") || !has("aligned") || !(has("row") || has("col")) {
            return self.unsupported();
        }
        // The shape must exist for the element type (accumulators: any).
        let probe = match frag {
            Frag::C => None,
            _ => Some(el),
        };
        let valid = match probe {
            Some(a) => [El::F16, El::F32, El::F64, El::S32]
                .iter()
                .any(|&c| mma_valid(FragLayout::Wmma, shape, [a, a, c, c])),
            None => {
                // Accumulators: any wmma shape (the list also keeps
                // hostile shapes, zero or huge, out of the index arithmetic).
                let shapes = [El::F16, El::Tf32, El::F64, El::S4, El::B1]
                    .iter()
                    .any(|&a| {
                        [El::F16, El::F32, El::F64, El::S32]
                            .iter()
                            .any(|&c| mma_valid(FragLayout::Wmma, shape, [a, a, c, c]))
                    });
                shapes && matches!(el, El::F16 | El::F32 | El::F64 | El::S32)
            }
        };
        if !valid {
            return self.unsupported();
        }
        let o = self.ops(i, 2)?;
        let (ro, ao) = if store {
            (&o[1], &o[0])
        } else {
            (&o[0], &o[1])
        };
        let (sp, base, off) = self.addr(ao, space_of(mods))?;
        let stride = match o.get(2) {
            Some(x) => self.src(x, Ty::U32)?,
            None => NONE,
        };
        let regs = self.reg_list(ro, !store, Ty::B32)?;
        self.frag_regs(FragLayout::Wmma, frag, shape, el, &regs)?;
        self.heap_bytes += std::mem::size_of::<WmmaMem>() as u64;
        self.emit(Op::WmmaMem(Box::new(WmmaMem {
            store,
            frag,
            shape,
            el,
            col: has("col"),
            sp,
            base,
            off,
            stride,
            regs,
        })));
        Ok(())
    }

    /// `ldmatrix.sync.aligned.m8n8.{x1,x2,x4}{.trans}{.shared{::cta}}.b16`
    /// (and `stmatrix`, operands swapped).
    fn ldmatrix(&mut self, i: &PInst, store: bool, mods: &[&str]) -> Result<(), PtxError> {
        let has = |m: &str| mods.contains(&m);
        let n = if has("x1") {
            1
        } else if has("x2") {
            2
        } else if has("x4") {
            4
        } else {
            return self.unsupported();
        };
        if !(has("sync") && has("aligned") && has("m8n8") && has("b16")) {
            return self.unsupported();
        }
        let sp = space_of(mods);
        if !matches!(sp, Space::Shared | Space::Generic) {
            return self.unsupported();
        }
        let o = self.ops(i, 2)?;
        let (ro, ao) = if store {
            (&o[1], &o[0])
        } else {
            (&o[0], &o[1])
        };
        let (sp, base, off) = self.addr(ao, sp)?;
        let list = self.reg_list(ro, !store, Ty::B32)?;
        if list.len() != n {
            return self.err(format!("{} registers for ldmatrix .x{n}", list.len()));
        }
        let mut r = [NONE; 4];
        r[..n].copy_from_slice(&list);
        self.emit(Op::Ldmatrix {
            store,
            trans: has("trans"),
            n: n as u8,
            sp,
            r,
            base,
            off,
        });
        Ok(())
    }

    /// `cvt.{rna,rn,rz}{.relu}{.satfinite}.tf32.f32`.
    fn cvt_tf32(&mut self, i: &PInst, mods: &[&str]) -> Result<(), PtxError> {
        let o = self.ops(i, 2)?;
        let rnd = if mods.contains(&"rna") {
            Rnd::Default
        } else {
            rnd_of(mods)
        };
        let f32_src = mods.last() == Some(&"f32");
        if !f32_src || !matches!(rnd, Rnd::Default | Rnd::Rn | Rnd::Rz) || mods.contains(&"relu") {
            return self.unsupported();
        }
        let d = self.dst(&o[0])?;
        let a = self.src(&o[1], Ty::F32)?;
        self.emit(Op::CvtTf32 {
            rnd,
            sat: mods.contains(&"satfinite"),
            d,
            a,
        });
        Ok(())
    }
}

impl Tr<'_, '_> {
    /// The handle of a texture or surface instruction (`surface`: `suld`,
    /// `sust`, `suq`): a 64-bit register, a `.param .u64` (read here), or a
    /// module-scope `.texref`/`.surfref` (non-unified mode), whose variable
    /// (see [`super::opaque_var_name`]) holds the handle of the texture or
    /// surface object the driver bound to it (0, an invalid handle, until
    /// one is bound).
    fn image_handle(&mut self, name: &str, surface: bool) -> Result<R, PtxError> {
        if let Some(Binding::Reg(Some(r))) = self.lookup(name) {
            return Ok(r);
        }
        let is_param = self.kparams.contains_key(name)
            || matches!(self.lookup(name), Some(Binding::Frame { .. }));
        let (operand, space) = if is_param {
            (Operand::Addr(Some(name.to_string()), 0), Space::Param)
        } else if self.lookup(name).is_none() {
            let var = super::opaque_var_name(if surface { "surfref" } else { "texref" }, name);
            if !self.m.syms.contains_key(var.as_str()) {
                return self.unsupported();
            }
            (Operand::Addr(Some(var), 0), Space::Global)
        } else {
            return self.unsupported();
        };
        let (sp, base, off) = self.addr(&operand, space)?;
        let d = self.new_slot();
        self.emit(Op::Ld {
            sp,
            size: 8,
            signed: false,
            n: 1,
            d: [d, NONE, NONE, NONE],
            base,
            off,
        });
        Ok(d)
    }

    /// `tex`, `tld4`, `txq`, `suq`, `suld.b`, `sust.b` in unified mode.
    fn image(&mut self, i: &PInst, base: &str, mods: &[&str]) -> Result<(), PtxError> {
        let has = |m: &str| mods.contains(&m);
        let o = self.ops(i, 2)?;
        // txq/suq: `d, [a]` (txq.level: `d, [a], lod`, level 0 only exists).
        if base == "txq" || base == "suq" {
            let q = mods.iter().find_map(|m| {
                Some(match *m {
                    "width" => Query::Width,
                    "height" => Query::Height,
                    "depth" => Query::Depth,
                    "channel_data_type" => Query::ChannelDataType,
                    "channel_order" => Query::ChannelOrder,
                    "normalized_coords" => Query::NormalizedCoords,
                    "force_unnormalized_coords" => Query::ForceUnnormalizedCoords,
                    "filter_mode" => Query::FilterMode,
                    "addr_mode_0" => Query::AddrMode(0),
                    "addr_mode_1" => Query::AddrMode(1),
                    "addr_mode_2" => Query::AddrMode(2),
                    "array_size" => Query::ArraySize,
                    "num_mipmap_levels" => Query::NumMipmapLevels,
                    "num_samples" => Query::NumSamples,
                    "memory_layout" => Query::MemoryLayout,
                    _ => return None,
                })
            });
            let surface = base == "suq";
            let Some(q) = q else {
                return self.unsupported();
            };
            let valid = if surface {
                matches!(
                    q,
                    Query::Width
                        | Query::Height
                        | Query::Depth
                        | Query::ChannelDataType
                        | Query::ChannelOrder
                        | Query::ArraySize
                        | Query::MemoryLayout
                )
            } else {
                q != Query::MemoryLayout
            };
            let Operand::Addr(Some(name), 0) = &o[1] else {
                return self.unsupported();
            };
            if !valid || !has("b32") || o.len() > 2 + usize::from(has("level")) {
                return self.unsupported();
            }
            let handle = self.image_handle(name, surface)?;
            let d = self.dst(&o[0])?;
            let lod = match o.get(2) {
                Some(level) => Lod::Level(self.src(level, Ty::S32)?),
                None => Lod::Base,
            };
            self.heap_bytes += std::mem::size_of::<ImageOp>() as u64;
            self.emit(Op::Image(Box::new(ImageOp {
                kind: ImageKind::Query { q, surface },
                geom: Geom::D1,
                handle,
                coords: [NONE; 3],
                layer: NONE,
                regs: [d, NONE, NONE, NONE],
                p: NONE,
                lod,
            })));
            return Ok(());
        }
        let Some(geom) = Geom::from_mods(mods) else {
            return self.unsupported();
        };
        let (img, data) = if base == "sust" {
            (&o[0], &o[1])
        } else {
            (&o[1], &o[0])
        };
        // Independent mode (a sampler operand), offsets and depth compares
        // are not supported.
        let Operand::Image(name, rest) = img else {
            return self.unsupported();
        };
        let [coords_op] = &rest[..] else {
            return self.unsupported();
        };
        let extra = match base {
            "tex" if has("level") => 1,
            "tex" if has("grad") => 2,
            _ => 0,
        };
        if o.len() != 2 + extra {
            return self.unsupported();
        }
        let ty_last = |k: usize| mods.len().checked_sub(k).map(|i| mods[i]);
        let kind = match base {
            "tex" | "tld4" => {
                let float_coords = match ty_last(1) {
                    Some("f32") => true,
                    Some("s32") => false,
                    _ => return self.unsupported(),
                };
                let out = match ty_last(2) {
                    Some("f32") => TexOut::F32,
                    Some("s32") => TexOut::S32,
                    Some("u32") => TexOut::U32,
                    Some("f16x2") => TexOut::F16x2,
                    _ => return self.unsupported(),
                };
                if base == "tex" {
                    ImageKind::Tex {
                        out,
                        int_coords: !float_coords,
                    }
                } else {
                    let comp = match mods.first().copied() {
                        Some("r") => 0,
                        Some("g") => 1,
                        Some("b") => 2,
                        Some("a") => 3,
                        _ => return self.unsupported(),
                    };
                    if geom != Geom::D2 || !float_coords || out == TexOut::F16x2 {
                        return self.unsupported();
                    }
                    ImageKind::Tld4 { out, comp }
                }
            }
            _ => {
                // Formatted surface accesses (`.p`) and layered cubemap
                // surfaces are not supported.
                if mods.first() != Some(&"b") || matches!(geom, Geom::Cube | Geom::ACube) {
                    return self.unsupported();
                }
                let bits = if has("b8") {
                    8
                } else if has("b16") {
                    16
                } else if has("b32") {
                    32
                } else if has("b64") {
                    64
                } else {
                    return self.unsupported();
                };
                let n = if has("v4") {
                    4
                } else if has("v2") {
                    2
                } else {
                    1
                };
                let oob = if has("clamp") {
                    Oob::Clamp
                } else if has("zero") {
                    Oob::Zero
                } else {
                    Oob::Trap
                };
                if base == "suld" {
                    ImageKind::Suld { bits, n, oob }
                } else {
                    ImageKind::Sust { bits, n, oob }
                }
            }
        };
        let handle = self.image_handle(name, matches!(base, "suld" | "sust"))?;
        let float_coords = matches!(
            kind,
            ImageKind::Tex {
                int_coords: false,
                ..
            } | ImageKind::Tld4 { .. }
        );
        // Immediates among the coordinates are read with the coordinate
        // type; the layer is always an integer.
        let items: Vec<&Operand> = match coords_op {
            Operand::Vec(v) => v.iter().collect(),
            x => vec![x],
        };
        let need = geom.coord_regs();
        if items.len() < need.min(3) || items.len() > need {
            return self.err(format!("{} coordinates for a {geom:?} access", items.len()));
        }
        let coord_ty = if float_coords { Ty::F32 } else { Ty::S32 };
        let mut regs = Vec::with_capacity(items.len());
        for (k, x) in items.iter().enumerate() {
            let t = if geom.layered() && k == 0 {
                Ty::S32
            } else {
                coord_ty
            };
            regs.push(self.src(x, t)?);
        }
        let (layer, xyz) = if geom.layered() {
            (regs[0], &regs[1..])
        } else {
            (NONE, &regs[..])
        };
        let mut coords = [NONE; 3];
        for (k, r) in xyz.iter().take(3).enumerate() {
            coords[k] = *r;
        }
        let (list, p) = match data {
            Operand::VecPred(v, p) if base != "sust" => {
                let p = self.pred_dst(&Operand::Name(p.clone()))?;
                (self.reg_list(&Operand::Vec(v.clone()), true, Ty::B32)?, p)
            }
            x => (self.reg_list(x, base != "sust", Ty::B32)?, NONE),
        };
        let want = match kind {
            ImageKind::Tex {
                out: TexOut::F16x2, ..
            } => 2,
            ImageKind::Tex { .. } | ImageKind::Tld4 { .. } => 4,
            ImageKind::Suld { n, .. } | ImageKind::Sust { n, .. } => usize::from(n),
            ImageKind::Query { .. } => 1,
        };
        if list.len() != want {
            return self.err(format!("{} registers where {want} are needed", list.len()));
        }
        let mut r4 = [NONE; 4];
        r4[..want].copy_from_slice(&list);
        let lod = match extra {
            1 => Lod::Level(self.src(&o[2], Ty::F32)?),
            2 => {
                let mut grad = [[NONE; 3]; 2];
                for (g, op) in grad.iter_mut().zip(&o[2..4]) {
                    let items: Vec<&Operand> = match op {
                        Operand::Vec(v) => v.iter().collect(),
                        x => vec![x],
                    };
                    for (k, x) in items.iter().take(3).enumerate() {
                        g[k] = self.src(x, Ty::F32)?;
                    }
                }
                Lod::Grad {
                    dx: grad[0],
                    dy: grad[1],
                }
            }
            _ => Lod::Base,
        };
        self.heap_bytes += std::mem::size_of::<ImageOp>() as u64;
        self.emit(Op::Image(Box::new(ImageOp {
            kind,
            geom,
            handle,
            coords,
            layer,
            regs: r4,
            p,
            lod,
        })));
        Ok(())
    }
}

fn wide_ty(t: Ty) -> Ty {
    match t {
        Ty::U16 => Ty::U32,
        Ty::S16 => Ty::S32,
        Ty::U32 => Ty::U64,
        Ty::S32 => Ty::S64,
        t => t,
    }
}
