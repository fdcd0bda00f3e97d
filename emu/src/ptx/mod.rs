//! PTX front end: parse the PTX that nvcc emits, translate each function once
//! into a compact register IR (see `ir`), and describe what a loader needs:
//! kernels, their parameter layouts, module-scope variables.
//!
//! A function that uses something the interpreter does not support does not
//! make the whole module fail: the module parses, and launching a kernel that
//! reaches that function fails with the translation error.
//!
//! PTX comes from clients, so the front end is bounded (see `limits`): the
//! text's length, the memory it holds (in proportion to the text), the time
//! it takes, declared sizes and nesting. Parsing reads an outline of the
//! module first (declarations, and the variables declared in bodies, which
//! are module symbols), then parses and translates one body at a time, so
//! that only one function's syntax tree is held at once.

use std::collections::{HashMap, HashSet};
use std::fmt;

mod devrt;
pub(crate) mod ir;
mod lexer;
mod limits;
mod parser;
mod translate;
mod types;

pub use limits::{
    ParseLimits, BYTES_PER_TEXT_BYTE, MAX_BLOCK_NESTING, MAX_FUNC_INSTS, MAX_FUNC_SLOTS,
    MAX_PTX_TEXT, MAX_REG_RANGE, MIN_BUDGET, PARSE_TIMEOUT,
};
pub use parser::opaque_var_name;
pub use types::{Space, Ty};

use ir::{Callee, DevRt, Function};
use limits::{map_entry_bytes, str_bytes, vec_bytes, Budget};
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
    /// A bound of the front end was passed (see [`PtxError::is_limit`]).
    limit: bool,
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

    /// The module passes a bound of the front end (memory, time, a declared
    /// size): reported as malformed PTX (`cudaErrorInvalidPtx`), as a GPU's
    /// JIT reports input it cannot compile.
    pub(crate) fn limit(line: u32, message: String) -> Self {
        let mut e = Self::new(PtxErrorKind::Semantic, line, None, message);
        e.inner.limit = true;
        e
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
                limit: false,
            }),
        }
    }

    /// Estimated heap bytes of the error.
    fn heap_bytes(&self) -> u64 {
        let i = &self.inner;
        std::mem::size_of::<PtxErrorInner>() as u64
            + str_bytes(&i.message)
            + i.function.as_ref().map_or(0, |(n, _)| str_bytes(n))
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

    /// Whether the module was refused for passing a bound of the front end
    /// ([`ParseLimits`], or a declared size) rather than for its syntax or
    /// meaning. Its kind is [`PtxErrorKind::Semantic`].
    pub fn is_limit(&self) -> bool {
        self.inner.limit
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
            PtxErrorKind::Semantic if i.limit => {
                write!(f, "PTX refused: {}", i.message)?;
                place(f)
            }
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
    /// Initial contents: the first `init.len()` bytes (at most `size`: as far
    /// as the initializer goes); the rest are zeros. A large variable without
    /// an initializer costs nothing until it is loaded.
    pub init: Vec<u8>,
    /// Addresses to patch into `init` once every variable has one.
    pub relocs: Vec<Reloc>,
}

impl GlobalVar {
    /// The initial bytes with relocations applied, given each symbol's
    /// device address; `None` when a relocation names an unknown symbol.
    /// Like [`GlobalVar::init`], they may stop short of `size`: the rest
    /// are zeros.
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

impl KernelMeta {
    /// Estimated heap bytes.
    fn heap_bytes(&self) -> u64 {
        vec_bytes::<u32>(self.reach.capacity())
            + map_entry_bytes::<u32, u64>() * self.shared.capacity() as u64
    }
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
    /// Estimated heap bytes of all of the above.
    approx_bytes: u64,
}

impl Module {
    /// Parses and translates PTX text, within the default [`ParseLimits`].
    pub fn parse(ptx: &str) -> Result<Module, PtxError> {
        Module::parse_with_limits(ptx, &ParseLimits::default())
    }

    /// Parses and translates PTX text within `limits`: longer text, or text
    /// whose module would take more memory or time than they allow, fails
    /// with an error for which [`PtxError::is_limit`] holds, before the
    /// memory is taken.
    pub fn parse_with_limits(ptx: &str, limits: &ParseLimits) -> Result<Module, PtxError> {
        if ptx.len() > limits.max_text {
            return Err(PtxError::limit(
                0,
                format!(
                    "{} bytes of PTX text, more than the {} the emulator accepts",
                    ptx.len(),
                    limits.max_text
                ),
            ));
        }
        let budget = Budget::new(limits.budget_for(ptx.len()), limits.timeout);
        let module = Module::build(ptx, &budget)?;
        tracing::debug!(
            text = ptx.len(),
            peak = budget.peak(),
            kept = module.approx_bytes,
            "parsed a PTX module"
        );
        Ok(module)
    }

    /// An estimate of the heap bytes the module holds (code, tables,
    /// variables' initial bytes): what a server may charge a client for
    /// keeping it loaded.
    pub fn approx_bytes(&self) -> u64 {
        self.approx_bytes
    }

    fn build(ptx: &str, budget: &Budget) -> Result<Module, PtxError> {
        let mut ast = parser::parse_outline(ptx, budget)?;
        let defined = |name: &str| ast.funcs.iter().any(|f| f.name == name && f.body.is_some());
        let external = ast
            .funcs
            .iter()
            .filter(|f| f.body.is_none())
            .map(|f| f.name.as_str());
        if let Some(library) = devrt::completion(external, defined) {
            // Functions of the device runtime the emulator provides itself.
            return Module::build(&format!("{ptx}\n{library}"), budget);
        }
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
        let sym_bytes = |name: &str| {
            vec_bytes::<Symbol>(1) + 2 * str_bytes(name) + map_entry_bytes::<String, u32>()
        };
        // Variables declared inside function bodies ("demoted" __shared__
        // variables of a kernel, function-scope statics) live for the whole
        // launch like module variables; nvcc gives them unique mangled names.
        // The outline holds only those of each body.
        let body_vars = ast.funcs.iter_mut().flat_map(|f| {
            f.body.iter_mut().flatten().filter_map(|s| match s {
                parser::Stmt::Var(v)
                    if matches!(v.space, Space::Shared | Space::Global | Space::Const) =>
                {
                    Some(v)
                }
                _ => None,
            })
        });
        for v in ast.vars.iter_mut().chain(body_vars) {
            budget.charge(sym_bytes(&v.name), v.line)?;
            match v.space {
                Space::Global | Space::Const => {
                    let kind = SymKind::Var;
                    globals.push(global_var(v, budget)?);
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
        // The module's variables are symbols now (their initial bytes moved
        // into `globals`): their declarations go.
        let declared: u64 = ast
            .vars
            .iter()
            .map(|v| parser::var_bytes(v) + vec_bytes::<parser::VarDecl>(1))
            .sum();
        ast.vars = Vec::new();
        budget.refund(declared);
        let mut func_ids: HashMap<String, u32> = HashMap::new();
        let mut externs: HashMap<String, ()> = HashMap::new();
        let defined: Vec<_> = ast.funcs.iter().filter(|f| f.body.is_some()).collect();
        for (i, f) in defined.iter().enumerate() {
            budget.charge(sym_bytes(&f.name) * 2, f.line)?;
            func_ids.insert(f.name.clone(), i as u32);
            add_sym(&mut syms, &mut sym_ids, &f.name, SymKind::Func(i as u32));
        }
        for f in ast.funcs.iter().filter(|f| f.body.is_none()) {
            if !func_ids.contains_key(&f.name) {
                budget.charge(sym_bytes(&f.name) * 2, f.line)?;
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
                budget,
            };
            for f in &defined {
                let before = ctx.budget.used();
                // The body is parsed again, in full this time, one statement
                // at a time as the translator takes them.
                let mut stream = f.body_at.map(|at| parser::BodyStream::new(ptx, at, budget));
                let mut parse_error = None;
                let next = || match stream.as_mut().map(parser::BodyStream::next_stmt) {
                    Some(Err(e)) => {
                        parse_error = Some(e.clone());
                        Err(e)
                    }
                    Some(Ok(s)) => Ok(s),
                    None => Ok(None),
                };
                let result = translate::translate(&mut ctx, f, next);
                drop(stream);
                if let Some(e) = parse_error {
                    return Err(e);
                }
                let func = match result {
                    Ok(func) => {
                        errors.push(None);
                        func
                    }
                    // Out of memory or time: the module as a whole.
                    Err(e) if e.is_limit() => return Err(e),
                    Err(e) => {
                        let e = if e.function().is_none() {
                            e.in_function(&f.name, f.kind == FuncKind::Entry)
                        } else {
                            e
                        };
                        errors.push(Some(e));
                        Function {
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
                        }
                    }
                };
                // What stays: the function's IR (the body and the
                // translator's tables are gone).
                let used = ctx.budget.used();
                ctx.budget.refund(used.saturating_sub(before));
                ctx.budget.charge(func.heap_bytes(), f.line)?;
                funcs.push(func);
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
            approx_bytes: 0,
        };
        let func_syms = module.func_syms();
        let held_funcs = module.functions_held_by_variables();
        let const_globals: HashMap<&str, u64> = module
            .globals
            .iter()
            .filter(|g| g.space == Space::Const)
            .map(|g| (g.name.as_str(), g.size))
            .collect();
        let mut kernels = HashMap::new();
        let mut kernel_order = Vec::new();
        for (i, f) in defined.iter().enumerate() {
            if f.kind == FuncKind::Entry {
                let meta = module.kernel_meta(
                    i as u32,
                    f,
                    (&func_syms, &held_funcs),
                    &const_globals,
                    budget,
                )?;
                // ptxas refuses a second definition; keeping either would
                // let other PTX readers pick the other one.
                if kernels.insert(f.name.clone(), meta).is_some() {
                    return Err(PtxError::semantic(
                        f.line,
                        &f.name,
                        "the kernel is defined twice".to_string(),
                    ));
                }
                kernel_order.push(f.name.clone());
            }
        }
        module.kernels = kernels;
        module.kernel_order = kernel_order;
        module.approx_bytes = module.estimate_bytes();
        Ok(module)
    }

    /// The functions that are module symbols, in symbol order: any may be
    /// called through a function pointer.
    fn func_syms(&self) -> Vec<u32> {
        self.syms
            .iter()
            .filter_map(|s| match s.kind {
                SymKind::Func(g) => Some(g),
                _ => None,
            })
            .collect()
    }

    /// Estimated heap bytes of the module.
    fn estimate_bytes(&self) -> u64 {
        let funcs: u64 = self.funcs.iter().map(Function::heap_bytes).sum();
        let errors = vec_bytes::<Option<PtxError>>(self.errors.len())
            + self
                .errors
                .iter()
                .flatten()
                .map(|e| e.heap_bytes())
                .sum::<u64>();
        let syms = vec_bytes::<Symbol>(self.syms.len())
            + self.syms.iter().map(|s| str_bytes(&s.name)).sum::<u64>();
        let globals = vec_bytes::<GlobalVar>(self.globals.len())
            + self
                .globals
                .iter()
                .map(|g| {
                    str_bytes(&g.name)
                        + g.init.capacity() as u64
                        + vec_bytes::<Reloc>(g.relocs.len())
                        + g.relocs.iter().map(|r| str_bytes(&r.symbol)).sum::<u64>()
                })
                .sum::<u64>();
        let opcodes = vec_bytes::<String>(self.opcodes.len())
            + self.opcodes.iter().map(|o| str_bytes(o)).sum::<u64>();
        let kernels: u64 = self
            .kernels
            .iter()
            .map(|(name, k)| 2 * str_bytes(name) + k.heap_bytes())
            .sum::<u64>()
            + map_entry_bytes::<String, KernelMeta>() * self.kernels.len() as u64
            + vec_bytes::<String>(self.kernel_order.len());
        std::mem::size_of::<Module>() as u64 + funcs + errors + syms + globals + opcodes + kernels
    }

    /// The functions whose addresses variables hold (vtables, tables of
    /// function pointers).
    fn functions_held_by_variables(&self) -> Vec<u32> {
        let by_name: HashMap<&str, u32> = self
            .syms
            .iter()
            .filter_map(|s| match s.kind {
                SymKind::Func(g) => Some((s.name.as_str(), g)),
                _ => None,
            })
            .collect();
        let mut held: Vec<u32> = self
            .globals
            .iter()
            .flat_map(|v| &v.relocs)
            .filter_map(|r| by_name.get(r.symbol.as_str()).copied())
            .collect();
        held.sort_unstable();
        held.dedup();
        held
    }

    fn kernel_meta(
        &self,
        func: u32,
        decl: &parser::FuncDecl,
        (func_syms, held_funcs): (&[u32], &[u32]),
        const_globals: &HashMap<&str, u64>,
        budget: &Budget,
    ) -> Result<KernelMeta, PtxError> {
        let line = decl.line;
        // Functions reachable from the kernel, with those whose addresses
        // variables hold (vtables): any of them may be called through a
        // pointer loaded from memory.
        let mut reach = vec![func];
        let mut seen: HashSet<u32> = HashSet::from([func]);
        for &g in held_funcs {
            if seen.insert(g) {
                reach.push(g);
            }
        }
        let mut i = 0;
        while i < reach.len() {
            budget.tick(line)?;
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
        let shared_count = used
            .iter()
            .filter(|&&s| {
                matches!(
                    self.syms[s as usize].kind,
                    SymKind::Shared { .. } | SymKind::ExternShared { .. }
                )
            })
            .count();
        // What the kernel's metadata keeps.
        budget.charge(
            vec_bytes::<u32>(reach.len())
                + map_entry_bytes::<u32, u64>() * shared_count as u64
                + std::mem::size_of::<KernelMeta>() as u64,
            line,
        )?;
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
        let const_bytes = used
            .iter()
            .filter(|&&s| matches!(self.syms[s as usize].kind, SymKind::Var))
            .filter_map(|&s| const_globals.get(self.syms[s as usize].name.as_str()))
            .fold(0u64, |a, &b| a.saturating_add(b));
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
            .map(|(_, &(off, size))| off.saturating_add(size))
            .max()
            .unwrap_or(0);
        let mut walk = StackWalk {
            func_syms,
            path: Vec::new(),
            memo: HashMap::new(),
            budget,
            line,
        };
        let local_bytes = self.stack_depth(func, &mut walk)?;
        Ok(KernelMeta {
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
        })
    }

    /// Deepest frame-size sum along call chains from `f` (cycles cut).
    fn stack_depth(&self, f: u32, w: &mut StackWalk<'_, '_>) -> Result<u32, PtxError> {
        if let Some(&d) = w.memo.get(&f) {
            return Ok(d);
        }
        if w.path.contains(&f) || w.path.len() > 256 {
            return Ok(0);
        }
        w.budget.tick(w.line)?;
        w.path.push(f);
        let func = &self.funcs[f as usize];
        let mut deepest = 0;
        let mut indirect = false;
        for c in &func.calls {
            match c.callee {
                Callee::Func(g) => deepest = deepest.max(self.stack_depth(g, w)?),
                Callee::Indirect(_) => indirect = true,
                _ => {}
            }
        }
        // Any function whose address the module takes (once, however many
        // indirect calls there are).
        if indirect {
            for &g in w.func_syms {
                deepest = deepest.max(self.stack_depth(g, w)?);
            }
        }
        w.path.pop();
        let d = func.frame_size.saturating_add(deepest);
        w.memo.insert(f, d);
        Ok(d)
    }

    /// Whether kernel `name` may call `malloc` or `free`.
    pub(crate) fn kernel_uses_heap(&self, name: &str) -> bool {
        self.kernels.get(name).is_some_and(|k| {
            k.reach.iter().any(|&f| {
                self.funcs[f as usize].calls.iter().any(|c| {
                    matches!(
                        c.callee,
                        Callee::Malloc
                            | Callee::Free
                            | Callee::DevRt(DevRt::GetParameterBuffer | DevRt::GetErrorString)
                    )
                })
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

    /// The address a device function `name` has in kernels (what `mov`
    /// of its name gives and an indirect `call` accepts): for the
    /// initialisers of variables that hold function pointers (vtables).
    pub fn function_address(&self, name: &str) -> Option<u64> {
        self.syms.iter().find_map(|s| match s.kind {
            SymKind::Func(i) if s.name == name => Some(ir::FUNC_ADDR_TAG | u64::from(i) << 4),
            _ => None,
        })
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

/// State of [`Module::stack_depth`]'s walk of the call graph.
struct StackWalk<'f, 'b> {
    func_syms: &'f [u32],
    path: Vec<u32>,
    memo: HashMap<u32, u32>,
    budget: &'b Budget,
    line: u32,
}

fn global_var(v: &mut parser::VarDecl, budget: &Budget) -> Result<GlobalVar, PtxError> {
    let size = v.size();
    if size > 1 << 32 {
        return Err(PtxError::limit(
            v.line,
            format!(
                "variable '{}' of {size} bytes is larger than 4 GiB",
                lexer::clip(&v.name)
            ),
        ));
    }
    // Only as many bytes as the initializer gives (whole values that fit):
    // the rest are zeros, and a large variable without one takes no memory.
    let es = u64::from(v.ty.size().max(1));
    let parser::Init {
        count,
        bytes: mut init,
        relocs,
    } = v.init.take().unwrap_or_default();
    let fit = count.min(size / es) * es;
    init.truncate(fit as usize);
    init.shrink_to_fit();
    let relocs = relocs
        .into_iter()
        .filter(|&(off, _, _)| off < fit)
        .map(|(offset, symbol, addend)| Reloc {
            offset,
            size: es.min(8) as u8,
            symbol,
            addend,
        })
        .collect();
    budget.charge(vec_bytes::<GlobalVar>(1) + str_bytes(&v.name), v.line)?;
    Ok(GlobalVar {
        name: v.name.clone(),
        space: v.space,
        size,
        align: v.alignment(),
        init,
        relocs,
    })
}

#[cfg(test)]
mod tests;
