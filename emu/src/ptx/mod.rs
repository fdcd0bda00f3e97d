//! PTX front end: parse the PTX that nvcc emits, translate each function once
//! into a compact register IR (see `ir`), and describe what a loader needs:
//! kernels, their parameter layouts, module-scope variables.
//!
//! A function that uses something the interpreter does not support does not
//! make the whole module fail: the module parses, and launching a kernel that
//! reaches that function fails with the translation error.

use std::collections::{HashMap, HashSet};
use std::fmt;

pub(crate) mod ir;
mod lexer;
mod parser;
mod translate;
mod types;

pub use types::{Space, Ty};

use ir::{Callee, Function};
use parser::FuncKind;

/// An error in PTX text, or PTX the interpreter does not support.
#[derive(Clone, PartialEq, Eq)]
pub struct PtxError {
    inner: Box<PtxErrorInner>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
struct PtxErrorInner {
    kind: PtxErrorKind,
    line: u32,
    function: Option<(String, bool)>,
    message: String,
}

/// What kind of problem a [`PtxError`] reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PtxErrorKind {
    /// Malformed text.
    Syntax,
    /// Well-formed, but uses an instruction or form the interpreter lacks.
    Unsupported,
    /// Well-formed text that does not make sense (unknown names, ...).
    Semantic,
}

impl PtxError {
    pub(crate) fn syntax(line: u32, message: String) -> Self {
        Self::new(PtxErrorKind::Syntax, line, None, message)
    }

    pub(crate) fn semantic(line: u32, function: &str, message: String) -> Self {
        Self::new(
            PtxErrorKind::Semantic,
            line,
            Some((function.to_string(), false)),
            message,
        )
    }

    pub(crate) fn unsupported(line: u32, function: &str, is_kernel: bool, opcode: &str) -> Self {
        Self::new(
            PtxErrorKind::Unsupported,
            line,
            Some((function.to_string(), is_kernel)),
            opcode.to_string(),
        )
    }

    pub(crate) fn unsupported_decl(line: u32, what: &str) -> Self {
        Self::new(
            PtxErrorKind::Unsupported,
            line,
            None,
            format!("declaration: {what}"),
        )
    }

    fn new(
        kind: PtxErrorKind,
        line: u32,
        function: Option<(String, bool)>,
        message: String,
    ) -> Self {
        Self {
            inner: Box::new(PtxErrorInner {
                kind,
                line,
                function,
                message,
            }),
        }
    }

    fn in_function(mut self, name: &str, is_kernel: bool) -> Self {
        self.inner.function = Some((name.to_string(), is_kernel));
        self
    }

    /// The kind of error.
    pub fn kind(&self) -> PtxErrorKind {
        self.inner.kind
    }

    /// The 1-based source line.
    pub fn line(&self) -> u32 {
        self.inner.line
    }

    /// The function or kernel the error is in, if any.
    pub fn function(&self) -> Option<&str> {
        self.inner.function.as_ref().map(|(n, _)| n.as_str())
    }
}

impl fmt::Display for PtxError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let i = &self.inner;
        let place = |f: &mut fmt::Formatter<'_>| match &i.function {
            Some((name, true)) => write!(f, " in kernel {name} (line {})", i.line),
            Some((name, false)) => write!(f, " in function {name} (line {})", i.line),
            None => write!(f, " (line {})", i.line),
        };
        match i.kind {
            PtxErrorKind::Unsupported if i.message.starts_with("declaration: ") => {
                write!(f, "unsupported PTX {}", i.message)?;
                place(f)
            }
            PtxErrorKind::Unsupported => {
                write!(f, "unsupported PTX instruction '{}'", i.message)?;
                place(f)
            }
            PtxErrorKind::Syntax => write!(f, "PTX syntax error (line {}): {}", i.line, i.message),
            PtxErrorKind::Semantic => {
                write!(f, "PTX error: {}", i.message)?;
                place(f)
            }
        }
    }
}

impl fmt::Debug for PtxError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "PtxError({self})")
    }
}

impl std::error::Error for PtxError {}

/// What a launch needs to know about a kernel.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KernelInfo {
    /// Bytes of static shared memory (module `.shared` variables the kernel
    /// and the functions it calls use).
    pub static_shared: u32,
    /// Largest block size: the product of `.reqntid` or `.maxntid`, or 1024.
    pub max_threads: u32,
    /// Local memory bytes per thread: the kernel's frame plus its deepest
    /// call chain (recursive cycles counted once).
    pub local_bytes: u32,
    /// Bytes of the parameter buffer.
    pub param_bytes: u32,
    /// Bytes of the module's `.const` variables the kernel and the
    /// functions it calls use.
    pub const_bytes: u32,
}

/// A relocation in a module variable's initial bytes: the address of
/// `symbol` plus `addend` must be stored (little-endian, `size` bytes) at
/// `offset`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reloc {
    /// Byte offset in the variable.
    pub offset: u64,
    /// Size of the stored address: 4 or 8.
    pub size: u8,
    /// Variable (or function) whose address is stored.
    pub symbol: String,
    /// Added to the address.
    pub addend: i64,
}

/// A module-scope variable the loader must allocate in device memory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GlobalVar {
    /// Its name (the symbol `cudaMemcpyToSymbol` and the interpreter use).
    pub name: String,
    /// `Space::Global` or `Space::Const`.
    pub space: Space,
    /// Size in bytes.
    pub size: u64,
    /// Required alignment.
    pub align: u32,
    /// Initial contents, `size` bytes (zeros where there is no initializer).
    pub init: Vec<u8>,
    /// Addresses to patch into `init` once every variable has one.
    pub relocs: Vec<Reloc>,
}

impl GlobalVar {
    /// The initial bytes with relocations applied, given each symbol's
    /// device address; `None` when a relocation names an unknown symbol.
    pub fn init_with(&self, addr_of: impl Fn(&str) -> Option<u64>) -> Option<Vec<u8>> {
        let mut out = self.init.clone();
        for r in &self.relocs {
            let v = addr_of(&r.symbol)?.wrapping_add(r.addend as u64);
            let off = usize::try_from(r.offset).ok()?;
            let n = usize::from(r.size);
            out.get_mut(off..off + n)?
                .copy_from_slice(&v.to_le_bytes()[..n]);
        }
        Some(out)
    }
}

#[derive(Debug, Clone)]
pub(crate) enum SymKind {
    /// A `.global` or `.const` variable (one of `globals`).
    Var,
    Shared {
        size: u64,
        align: u32,
    },
    ExternShared {
        align: u32,
    },
    Func(u32),
    /// Declared, never defined (extern functions).
    Extern,
}

#[derive(Debug, Clone)]
pub(crate) struct Symbol {
    pub(crate) name: String,
    pub(crate) kind: SymKind,
}

/// Per-kernel data computed once at parse time.
#[derive(Debug, Clone)]
pub(crate) struct KernelMeta {
    pub(crate) func: u32,
    /// Shared symbol id → offset in the block's shared memory.
    pub(crate) shared: HashMap<u32, u64>,
    pub(crate) static_shared: u32,
    /// Offset of dynamic (extern) shared memory.
    pub(crate) dyn_base: u32,
    pub(crate) info: KernelInfo,
    /// Functions reachable from the kernel, the kernel included.
    pub(crate) reach: Vec<u32>,
}

/// A parsed and translated PTX module.
#[derive(Debug)]
pub struct Module {
    pub(crate) funcs: Vec<Function>,
    /// Translation error of each function, if any.
    pub(crate) errors: Vec<Option<PtxError>>,
    pub(crate) syms: Vec<Symbol>,
    pub(crate) globals: Vec<GlobalVar>,
    pub(crate) opcodes: Vec<String>,
    pub(crate) kernels: HashMap<String, KernelMeta>,
    kernel_order: Vec<String>,
}

impl Module {
    /// Parses and translates PTX text.
    pub fn parse(ptx: &str) -> Result<Module, PtxError> {
        let ast = parser::parse(ptx)?;
        let mut syms = Vec::new();
        let mut sym_ids: HashMap<String, u32> = HashMap::new();
        let mut globals = Vec::new();
        fn add_sym(
            syms: &mut Vec<Symbol>,
            ids: &mut HashMap<String, u32>,
            name: &str,
            kind: SymKind,
        ) {
            let id = syms.len() as u32;
            syms.push(Symbol {
                name: name.to_string(),
                kind,
            });
            ids.insert(name.to_string(), id);
        }
        // Variables declared inside function bodies ("demoted" __shared__
        // variables of a kernel, function-scope statics) live for the whole
        // launch like module variables; nvcc gives them unique mangled names.
        let body_vars = ast.funcs.iter().flat_map(|f| {
            f.body.iter().flatten().filter_map(|s| match s {
                parser::Stmt::Var(v)
                    if matches!(v.space, Space::Shared | Space::Global | Space::Const) =>
                {
                    Some(v)
                }
                _ => None,
            })
        });
        for v in ast.vars.iter().chain(body_vars) {
            match v.space {
                Space::Global | Space::Const => {
                    let kind = SymKind::Var;
                    globals.push(global_var(v)?);
                    add_sym(&mut syms, &mut sym_ids, &v.name, kind);
                }
                Space::Shared => {
                    let kind = if v.is_extern || v.dims.contains(&None) {
                        SymKind::ExternShared {
                            align: v.alignment(),
                        }
                    } else {
                        SymKind::Shared {
                            size: v.size(),
                            align: v.alignment(),
                        }
                    };
                    add_sym(&mut syms, &mut sym_ids, &v.name, kind);
                }
                _ => {
                    return Err(PtxError::unsupported_decl(
                        v.line,
                        &format!(".{} variables at module scope", v.space.name()),
                    ))
                }
            }
        }
        let mut func_ids: HashMap<String, u32> = HashMap::new();
        let mut externs: HashMap<String, ()> = HashMap::new();
        let defined: Vec<_> = ast.funcs.iter().filter(|f| f.body.is_some()).collect();
        for (i, f) in defined.iter().enumerate() {
            func_ids.insert(f.name.clone(), i as u32);
            add_sym(&mut syms, &mut sym_ids, &f.name, SymKind::Func(i as u32));
        }
        for f in ast.funcs.iter().filter(|f| f.body.is_none()) {
            if !func_ids.contains_key(&f.name) {
                externs.insert(f.name.clone(), ());
                if !sym_ids.contains_key(&f.name) {
                    add_sym(&mut syms, &mut sym_ids, &f.name, SymKind::Extern);
                }
            }
        }
        let mut opcodes = Vec::new();
        let mut opcode_ids = HashMap::new();
        let mut funcs = Vec::new();
        let mut errors = Vec::new();
        {
            let mut ctx = translate::ModCtx {
                syms: &sym_ids,
                funcs: &func_ids,
                externs: &externs,
                opcodes: &mut opcodes,
                opcode_ids: &mut opcode_ids,
            };
            for f in &defined {
                match translate::translate(&mut ctx, f) {
                    Ok(func) => {
                        funcs.push(func);
                        errors.push(None);
                    }
                    Err(e) => {
                        let e = if e.function().is_none() {
                            e.in_function(&f.name, f.kind == FuncKind::Entry)
                        } else {
                            e
                        };
                        funcs.push(Function {
                            name: f.name.clone(),
                            is_entry: f.kind == FuncKind::Entry,
                            params: if f.kind == FuncKind::Entry {
                                translate::entry_params(f)
                            } else {
                                Vec::new()
                            },
                            maxntid: f.maxntid,
                            reqntid: f.reqntid,
                            ..Function::default()
                        });
                        errors.push(Some(e));
                    }
                }
            }
        }
        let mut module = Module {
            funcs,
            errors,
            syms,
            globals,
            opcodes,
            kernels: HashMap::new(),
            kernel_order: Vec::new(),
        };
        for (i, f) in defined.iter().enumerate() {
            if f.kind == FuncKind::Entry {
                let meta = module.kernel_meta(i as u32, f);
                module.kernel_order.push(f.name.clone());
                module.kernels.insert(f.name.clone(), meta);
            }
        }
        Ok(module)
    }

    fn kernel_meta(&self, func: u32, decl: &parser::FuncDecl) -> KernelMeta {
        // Functions reachable from the kernel.
        let mut reach = vec![func];
        let mut seen: HashSet<u32> = HashSet::from([func]);
        let mut i = 0;
        while i < reach.len() {
            let f = &self.funcs[reach[i] as usize];
            for c in &f.calls {
                if let Callee::Func(g) = c.callee {
                    if seen.insert(g) {
                        reach.push(g);
                    }
                }
            }
            // A function whose address is taken may be called through it.
            for &s in &f.syms {
                if let SymKind::Func(g) = self.syms[s as usize].kind {
                    if seen.insert(g) {
                        reach.push(g);
                    }
                }
            }
            i += 1;
        }
        // Shared variables they use, laid out in symbol order.
        let mut used: Vec<u32> = reach
            .iter()
            .flat_map(|&f| self.funcs[f as usize].syms.iter().copied())
            .collect();
        used.sort_unstable();
        used.dedup();
        let mut shared = HashMap::new();
        let mut off = 0u64;
        let mut dyn_align = 16u64;
        for &s in &used {
            match self.syms[s as usize].kind {
                SymKind::Shared { size, align } => {
                    let a = u64::from(align.max(1));
                    off = off.div_ceil(a) * a;
                    shared.insert(s, off);
                    off += size;
                }
                SymKind::ExternShared { align } => {
                    dyn_align = dyn_align.max(u64::from(align));
                }
                _ => {}
            }
        }
        let static_shared = u32::try_from(off).unwrap_or(u32::MAX);
        let const_bytes: u64 = used
            .iter()
            .filter(|&&s| matches!(self.syms[s as usize].kind, SymKind::Var))
            .filter_map(|&s| {
                let name = &self.syms[s as usize].name;
                self.globals
                    .iter()
                    .find(|g| &g.name == name && g.space == Space::Const)
            })
            .map(|g| g.size)
            .sum();
        let dyn_base = u32::try_from(off.div_ceil(dyn_align) * dyn_align).unwrap_or(u32::MAX);
        for &s in &used {
            if let SymKind::ExternShared { .. } = self.syms[s as usize].kind {
                shared.insert(s, u64::from(dyn_base));
            }
        }
        let k = &self.funcs[func as usize];
        let max_threads = k.reqntid.or(k.maxntid).map_or(1024, |d| {
            d.iter()
                .fold(1u64, |a, &x| a.saturating_mul(u64::from(x.max(1))))
                .min(1024) as u32
        });
        let param_bytes = decl
            .params
            .iter()
            .zip(&k.params)
            .map(|(_, &(off, size))| off + size)
            .max()
            .unwrap_or(0);
        let local_bytes = self.stack_depth(func, &mut Vec::new(), &mut HashMap::new());
        KernelMeta {
            func,
            shared,
            static_shared,
            dyn_base,
            info: KernelInfo {
                static_shared,
                max_threads,
                local_bytes,
                param_bytes,
                const_bytes: u32::try_from(const_bytes).unwrap_or(u32::MAX),
            },
            reach,
        }
    }

    /// Deepest frame-size sum along call chains from `f` (cycles cut).
    fn stack_depth(&self, f: u32, path: &mut Vec<u32>, memo: &mut HashMap<u32, u32>) -> u32 {
        if let Some(&d) = memo.get(&f) {
            return d;
        }
        if path.contains(&f) || path.len() > 256 {
            return 0;
        }
        path.push(f);
        let func = &self.funcs[f as usize];
        let mut deepest = 0;
        for c in &func.calls {
            match c.callee {
                Callee::Func(g) => deepest = deepest.max(self.stack_depth(g, path, memo)),
                // Any function whose address the module takes.
                Callee::Indirect(_) => {
                    for s in &self.syms {
                        if let SymKind::Func(g) = s.kind {
                            deepest = deepest.max(self.stack_depth(g, path, memo));
                        }
                    }
                }
                _ => {}
            }
        }
        path.pop();
        let d = func.frame_size.saturating_add(deepest);
        memo.insert(f, d);
        d
    }

    /// Whether kernel `name` may call `malloc` or `free`.
    pub(crate) fn kernel_uses_heap(&self, name: &str) -> bool {
        self.kernels.get(name).is_some_and(|k| {
            k.reach.iter().any(|&f| {
                self.funcs[f as usize]
                    .calls
                    .iter()
                    .any(|c| matches!(c.callee, Callee::Malloc | Callee::Free))
            })
        })
    }

    /// Names of the kernels (`.entry` functions), in source order.
    pub fn kernel_names(&self) -> Vec<String> {
        self.kernel_order.clone()
    }

    /// `(offset, size)` of each parameter of kernel `name`, in order.
    pub fn kernel_params(&self, name: &str) -> Option<Vec<(usize, usize)>> {
        let k = self.kernels.get(name)?;
        Some(
            self.funcs[k.func as usize]
                .params
                .iter()
                .map(|&(o, s)| (o as usize, s as usize))
                .collect(),
        )
    }

    /// Static shared bytes, max threads, local bytes per thread and
    /// parameter bytes of kernel `name`.
    pub fn kernel_info(&self, name: &str) -> Option<KernelInfo> {
        self.kernels.get(name).map(|k| k.info)
    }

    /// Module-scope `.global` and `.const` variables the loader must allocate.
    pub fn globals(&self) -> &[GlobalVar] {
        &self.globals
    }

    /// Translation errors of functions that cannot run: a kernel reaching
    /// one of them fails to launch with this error.
    pub fn errors(&self) -> impl Iterator<Item = &PtxError> {
        self.errors.iter().flatten()
    }

    /// The first translation error among the functions kernel `name`
    /// reaches, if any.
    pub fn kernel_error(&self, name: &str) -> Option<&PtxError> {
        let k = self.kernels.get(name)?;
        k.reach
            .iter()
            .find_map(|&f| self.errors[f as usize].as_ref())
    }
}

fn global_var(v: &parser::VarDecl) -> Result<GlobalVar, PtxError> {
    let size = v.size();
    if size > 1 << 32 {
        return Err(PtxError::unsupported_decl(
            v.line,
            &format!("variable '{}' larger than 4 GiB", v.name),
        ));
    }
    let mut init = vec![0u8; size as usize];
    let mut relocs = Vec::new();
    if let Some(vals) = &v.init {
        let es = v.ty.size() as usize;
        for (k, val) in vals.iter().enumerate() {
            let off = k * es;
            if off + es > init.len() {
                break;
            }
            let bits: u64 = match (val, v.ty) {
                (parser::InitVal::Int(x), t) if t.is_float() => float_bits(*x as i64 as f64, t),
                (parser::InitVal::Int(x), _) => *x,
                (parser::InitVal::F32(b), t) if !t.is_float() => u64::from(*b),
                (parser::InitVal::F64(b), t) if !t.is_float() => *b,
                (parser::InitVal::F32(b), t) => float_bits(f64::from(f32::from_bits(*b)), t),
                (parser::InitVal::F64(b), t) => float_bits(f64::from_bits(*b), t),
                (parser::InitVal::Sym(name, add), _) => {
                    relocs.push(Reloc {
                        offset: off as u64,
                        size: es.min(8) as u8,
                        symbol: name.clone(),
                        addend: *add,
                    });
                    0
                }
            };
            let bytes = bits.to_le_bytes();
            init[off..off + es.min(8)].copy_from_slice(&bytes[..es.min(8)]);
        }
    }
    Ok(GlobalVar {
        name: v.name.clone(),
        space: v.space,
        size,
        align: v.alignment(),
        init,
        relocs,
    })
}

fn float_bits(v: f64, t: Ty) -> u64 {
    match t {
        Ty::F32 => u64::from((v as f32).to_bits()),
        Ty::F16 => u64::from(half::f16::from_f64(v).to_bits()),
        Ty::BF16 => u64::from(half::bf16::from_f64(v).to_bits()),
        Ty::F64 => v.to_bits(),
        _ => v as i64 as u64,
    }
}

#[cfg(test)]
mod tests;
