//! PTX text → a light syntax tree: module-scope variables, functions with
//! their parameter lists, and function bodies as statements whose
//! instructions still carry their opcode text and raw operands. Meaning is
//! given later, by the translator.

use std::collections::VecDeque;

use super::lexer::{clip, Lexer, Tok, Token};
use super::limits::{str_bytes, vec_bytes, Budget, MAX_BLOCK_NESTING, MAX_REG_RANGE};
use super::types::{Space, Ty};
use super::PtxError;

/// A parsed module.
#[derive(Debug, Default)]
pub(crate) struct Ast {
    pub(crate) vars: Vec<VarDecl>,
    pub(crate) funcs: Vec<FuncDecl>,
}

/// One value of a variable initializer.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum InitVal {
    Int(u64),
    F32(u32),
    F64(u64),
    /// The address of a symbol plus an offset (`sym`, `generic(sym)`, `sym+8`).
    Sym(String, i64),
}

impl InitVal {
    /// The bits of the value as an element of type `t`.
    fn bits(&self, t: Ty) -> u64 {
        match (self, t) {
            (InitVal::Int(x), t) if t.is_float() => float_bits(*x as i64 as f64, t),
            (InitVal::Int(x), _) => *x,
            (InitVal::F32(b), t) if !t.is_float() => u64::from(*b),
            (InitVal::F64(b), t) if !t.is_float() => *b,
            (InitVal::F32(b), t) => float_bits(f64::from(f32::from_bits(*b)), t),
            (InitVal::F64(b), t) => float_bits(f64::from_bits(*b), t),
            // Patched in when the symbol has an address.
            (InitVal::Sym(..), _) => 0,
        }
    }
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

/// A variable's initializer, encoded as it is parsed (a large table must
/// not take a syntax-tree node per value): each value takes the bytes of
/// one element of the variable's type, little-endian (at most 8 of them;
/// the rest of a wider element stays zero).
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Init {
    /// Number of values.
    pub(crate) count: u64,
    /// The values' bytes.
    pub(crate) bytes: Vec<u8>,
    /// Symbol addresses to store: offset in `bytes`, symbol, addend.
    pub(crate) relocs: Vec<(u64, String, i64)>,
}

/// The name of the module variable holding the handle of the `.texref`,
/// `.surfref` or `.samplerref` (`kind`) named `name`: `texref.name`, which
/// no PTX identifier can spell.
pub fn opaque_var_name(kind: &str, name: &str) -> String {
    format!("{kind}.{name}")
}

/// A variable declaration (`.global`, `.const`, `.shared`, `.local`, `.param`).
#[derive(Debug, Clone)]
pub(crate) struct VarDecl {
    pub(crate) space: Space,
    pub(crate) name: String,
    pub(crate) align: u32,
    pub(crate) ty: Ty,
    pub(crate) vec: u32,
    /// Array dimensions; `None` for an unsized `[]`.
    pub(crate) dims: Vec<Option<u64>>,
    pub(crate) init: Option<Init>,
    pub(crate) is_extern: bool,
    pub(crate) line: u32,
}

impl VarDecl {
    /// Size in bytes of one element (`.v4 .f32` counts as one 16-byte element).
    pub(crate) fn elem_size(&self) -> u64 {
        u64::from(self.ty.size()) * u64::from(self.vec)
    }

    /// Declared size in bytes (an unsized array with an initializer takes
    /// the initializer's length; without one, 0).
    pub(crate) fn size(&self) -> u64 {
        let mut n: u64 = 1;
        for d in &self.dims {
            match d {
                Some(d) => n = n.saturating_mul(*d),
                None => {
                    let init = self.init.as_ref().map_or(0, |v| v.count);
                    let per = u64::from(self.vec).max(1);
                    n = n.saturating_mul(init.div_ceil(per));
                }
            }
        }
        n.saturating_mul(self.elem_size())
    }

    /// Alignment: the explicit `.align`, or the element size.
    pub(crate) fn alignment(&self) -> u32 {
        if self.align > 0 {
            self.align
        } else {
            (self.ty.size() * self.vec).max(1)
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum FuncKind {
    Entry,
    Func,
}

#[derive(Debug)]
pub(crate) struct FuncDecl {
    pub(crate) kind: FuncKind,
    pub(crate) name: String,
    pub(crate) rets: Vec<VarDecl>,
    pub(crate) params: Vec<VarDecl>,
    /// The statements of the body, if the function has one. In an outline
    /// (see [`parse_outline`]), only its variable declarations.
    pub(crate) body: Option<Vec<Stmt>>,
    /// Where the body's `{` is: byte offset and line, for [`BodyStream`].
    pub(crate) body_at: Option<(usize, u32)>,
    pub(crate) maxntid: Option<[u32; 3]>,
    pub(crate) reqntid: Option<[u32; 3]>,
    pub(crate) line: u32,
}

#[derive(Debug)]
pub(crate) enum Stmt {
    Open,
    Close,
    /// `.reg .ty names;` — each name with its `<N>` count when it declares a range.
    Reg(Ty, Vec<(String, Option<u32>)>, u32),
    Var(VarDecl),
    Label(String, u32),
    Inst(Inst),
}

#[derive(Debug, Clone)]
pub(crate) struct Inst {
    pub(crate) guard: Option<(String, bool)>,
    pub(crate) opcode: String,
    pub(crate) operands: Vec<Operand>,
    pub(crate) line: u32,
}

#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Operand {
    /// A register, symbol, label or function name.
    Name(String),
    /// A symbol plus an offset.
    SymOff(String, i64),
    Int(u64),
    F32(u32),
    F64(u64),
    /// `[base+offset]`; `base` is `None` for an absolute address.
    Addr(Option<String>, i64),
    /// `{a, b}`.
    Vec(Vec<Operand>),
    /// `(a, b)` in calls.
    List(Vec<Operand>),
    /// `d|p`.
    Pair(String, String),
    /// `{a, b, ...}|p`: a vector destination and a predicate (`tex`).
    VecPred(Vec<Operand>, String),
    /// `[a, b, ...]`: a texture or surface handle and its coordinates.
    Image(String, Vec<Operand>),
    /// `!p`.
    Not(String),
    /// `_`.
    Sink,
}

struct Parser<'a, 'b> {
    lx: Lexer<'a>,
    /// Tokens read ahead (at most two).
    look: VecDeque<Token<'a>>,
    /// Line of the last token taken, for errors at the end of the text.
    last_line: u32,
    /// The lexer's error, if it met one: the text ends there for the
    /// parser, and the error is what parsing returns.
    lex_err: Option<PtxError>,
    /// Nesting of initializer braces and operand lists.
    depth: u32,
    /// Whether function bodies are kept whole (else only their variables).
    full: bool,
    budget: &'b Budget,
}

/// Deepest nesting of `{...}` in initializers and operands.
const MAX_NESTING: u32 = 32;

/// Parses a whole module, function bodies included (tests: the module
/// parser reads an outline, then one body at a time).
#[cfg(test)]
pub(crate) fn parse(src: &str) -> Result<Ast, PtxError> {
    let budget = Budget::unlimited();
    let mut p = Parser::new(Lexer::new(src), true, &budget);
    let ast = p.module();
    p.finish(ast)
}

/// Parses a module's outline: its variables and functions, with only the
/// variable declarations of each body (which are module symbols) and where
/// the body is, for [`BodyStream`]. What it keeps is charged to `budget`.
pub(crate) fn parse_outline(src: &str, budget: &Budget) -> Result<Ast, PtxError> {
    let mut p = Parser::new(Lexer::new(src), false, budget);
    let ast = p.module();
    p.finish(ast)
}

/// The statements of a function body, parsed one at a time as they are
/// asked for, so that a body is never held whole: the translator takes each
/// statement in turn. The statements handed out are charged to the budget
/// until the next one is asked for.
pub(crate) struct BodyStream<'a, 'b> {
    p: Parser<'a, 'b>,
    depth: u32,
    ready: VecDeque<Stmt>,
    done: bool,
    /// What the statements in `ready` (and the last handed out) are charged.
    held: u64,
}

impl<'a, 'b> BodyStream<'a, 'b> {
    /// The body whose `{` is at `at` (see [`FuncDecl::body_at`]) of `src`.
    pub(crate) fn new(src: &'a str, at: (usize, u32), budget: &'b Budget) -> Self {
        BodyStream {
            p: Parser::new(Lexer::resume(src, at.0, at.1), true, budget),
            depth: 0,
            ready: VecDeque::new(),
            done: false,
            held: 0,
        }
    }

    /// The next statement, `None` after the body's closing `}`.
    pub(crate) fn next_stmt(&mut self) -> Result<Option<Stmt>, PtxError> {
        loop {
            if let Some(s) = self.ready.pop_front() {
                return Ok(Some(s));
            }
            // Those handed out so far are gone.
            self.p.budget.refund(std::mem::take(&mut self.held));
            if self.done {
                return Ok(None);
            }
            let before = self.p.budget.used();
            let mut out = Vec::new();
            let more = self.p.body_stmt(&mut self.depth, &mut out);
            let more = self.p.finish(more)?;
            self.held = self.p.budget.used().saturating_sub(before);
            self.ready.extend(out);
            self.done = !more;
        }
    }
}

impl Drop for BodyStream<'_, '_> {
    fn drop(&mut self) {
        self.p.budget.refund(self.held);
    }
}

/// Estimated heap bytes of an operand (its strings and nested lists).
fn operand_bytes(o: &Operand) -> u64 {
    match o {
        Operand::Name(n) | Operand::SymOff(n, _) | Operand::Not(n) => str_bytes(n),
        Operand::Addr(n, _) => n.as_deref().map_or(0, str_bytes),
        Operand::Vec(v) | Operand::List(v) => {
            vec_bytes::<Operand>(v.len()) + v.iter().map(operand_bytes).sum::<u64>()
        }
        Operand::Pair(a, b) => str_bytes(a) + str_bytes(b),
        Operand::VecPred(v, p) | Operand::Image(p, v) => {
            str_bytes(p) + vec_bytes::<Operand>(v.len()) + v.iter().map(operand_bytes).sum::<u64>()
        }
        Operand::Int(_) | Operand::F32(_) | Operand::F64(_) | Operand::Sink => 0,
    }
}

/// Estimated heap bytes of a variable declaration, its initializer aside.
pub(crate) fn var_bytes(v: &VarDecl) -> u64 {
    str_bytes(&v.name) + vec_bytes::<Option<u64>>(v.dims.len())
}

impl<'a, 'b> Parser<'a, 'b> {
    fn new(lx: Lexer<'a>, full: bool, budget: &'b Budget) -> Self {
        Parser {
            lx,
            look: VecDeque::with_capacity(2),
            last_line: 1,
            lex_err: None,
            depth: 0,
            full,
            budget,
        }
    }

    /// The result of a parse: the lexer's error, if any, comes first (the
    /// text ends at it, so whatever went wrong after is its consequence).
    fn finish<T>(&mut self, r: Result<T, PtxError>) -> Result<T, PtxError> {
        match self.lex_err.take() {
            Some(e) => Err(e),
            None => r,
        }
    }

    /// Reads ahead until `n` tokens wait (or the text ends).
    fn fill(&mut self, n: usize) {
        while self.look.len() < n && self.lex_err.is_none() {
            match self.lx.next_token() {
                Ok(Some(t)) => self.look.push_back(t),
                Ok(None) => break,
                Err(e) => self.lex_err = Some(e),
            }
        }
    }

    fn peek(&mut self) -> Option<Tok<'a>> {
        self.peek_at(0)
    }

    fn peek_at(&mut self, n: usize) -> Option<Tok<'a>> {
        self.fill(n + 1);
        self.look.get(n).map(|t| t.kind)
    }

    /// Takes the next token.
    fn bump(&mut self) {
        self.fill(1);
        if let Some(t) = self.look.pop_front() {
            self.last_line = t.line;
        }
    }

    fn line(&mut self) -> u32 {
        self.fill(1);
        self.look.front().map_or(self.last_line, |t| t.line)
    }

    fn next(&mut self) -> Result<Tok<'a>, PtxError> {
        let line = self.line();
        let t = self
            .peek()
            .ok_or_else(|| PtxError::syntax(line, "unexpected end of input".into()))?;
        self.bump();
        self.budget.tick(line)?;
        Ok(t)
    }

    fn err<T>(&mut self, msg: impl Into<String>) -> Result<T, PtxError> {
        Err(PtxError::syntax(self.line(), msg.into()))
    }

    /// Charges `bytes` that the tree is about to keep.
    fn charge(&mut self, bytes: u64) -> Result<(), PtxError> {
        let line = self.line();
        self.budget.charge(bytes, line)
    }

    /// Charges `bytes` of a statement that only a full parse keeps (an
    /// outline drops instructions once parsed).
    fn charge_kept(&mut self, bytes: u64) -> Result<(), PtxError> {
        if self.full {
            self.charge(bytes)
        } else {
            self.budget.tick(self.last_line)
        }
    }

    fn is_punct(&mut self, c: char) -> bool {
        self.peek() == Some(Tok::Punct(c))
    }

    fn eat_punct(&mut self, c: char) -> bool {
        if self.is_punct(c) {
            self.bump();
            true
        } else {
            false
        }
    }

    fn expect_punct(&mut self, c: char) -> Result<(), PtxError> {
        if self.eat_punct(c) {
            Ok(())
        } else {
            let found = self.peek();
            self.err(format!("expected '{c}', found {}", describe(found)))
        }
    }

    fn ident(&mut self) -> Result<&'a str, PtxError> {
        match self.peek() {
            Some(Tok::Ident(s)) => {
                self.bump();
                Ok(s)
            }
            t => self.err(format!("expected a name, found {}", describe(t))),
        }
    }

    /// A name being declared. PTX names have no dots; the lexer reads
    /// dotted words as one token (for opcodes), so `a.v2` must be refused
    /// here rather than read differently from other PTX readers.
    fn declared_name(&mut self) -> Result<&'a str, PtxError> {
        let name = self.ident()?;
        if name.starts_with('.') || name.contains('.') {
            return self.err(format!("'{}' is not a valid name", clip(name)));
        }
        Ok(name)
    }

    fn peek_ident(&mut self) -> Option<&'a str> {
        match self.peek() {
            Some(Tok::Ident(s)) => Some(s),
            _ => None,
        }
    }

    fn int(&mut self) -> Result<u64, PtxError> {
        let neg = self.eat_punct('-');
        match self.peek() {
            Some(Tok::Int(v)) => {
                self.bump();
                Ok(if neg { v.wrapping_neg() } else { v })
            }
            t => self.err(format!("expected an integer, found {}", describe(t))),
        }
    }

    /// An integer that must fit in a `u32` (dimensions, counts, alignments).
    fn u32(&mut self, what: &str) -> Result<u32, PtxError> {
        let v = self.int()?;
        match u32::try_from(v) {
            Ok(v) => Ok(v),
            Err(_) => self.err(format!("{what} {v} is out of range")),
        }
    }

    /// Skips every remaining token on the current token's line.
    fn skip_line(&mut self) -> Result<(), PtxError> {
        let line = self.line();
        while self.peek().is_some() && self.line() == line {
            self.bump();
            self.budget.tick(line)?;
        }
        Ok(())
    }

    /// Skips to just past the next `;`.
    fn skip_stmt(&mut self) -> Result<(), PtxError> {
        while let Some(t) = self.peek() {
            self.next()?;
            if t == Tok::Punct(';') {
                break;
            }
        }
        Ok(())
    }

    /// Skips a balanced `{ ... }` starting at the current `{`.
    fn skip_braces(&mut self) -> Result<(), PtxError> {
        let mut depth = 0usize;
        while let Some(t) = self.peek() {
            self.next()?;
            match t {
                Tok::Punct('{') => depth += 1,
                Tok::Punct('}') => {
                    depth = depth.saturating_sub(1);
                    if depth == 0 {
                        break;
                    }
                }
                _ => {}
            }
        }
        Ok(())
    }

    fn module(&mut self) -> Result<Ast, PtxError> {
        let mut ast = Ast::default();
        while let Some(tok) = self.peek() {
            let line = self.line();
            let Tok::Ident(word) = tok else {
                return self.err(format!(
                    "unexpected {} at module scope",
                    describe(Some(tok))
                ));
            };
            match word {
                ".version" | ".target" | ".address_size" | ".file" | ".loc" => self.skip_line()?,
                ".pragma" => self.skip_stmt()?,
                ".section" => {
                    self.bump();
                    while self.peek().is_some() && !self.is_punct('{') {
                        self.next()?;
                    }
                    self.skip_braces()?;
                }
                _ => {
                    // Linkage attributes, then a function or a variable.
                    let mut is_extern = false;
                    loop {
                        match self.peek_ident() {
                            Some(".visible" | ".weak" | ".common") => self.bump(),
                            Some(".extern") => {
                                is_extern = true;
                                self.bump();
                            }
                            _ => break,
                        }
                    }
                    match self.peek_ident() {
                        Some(".entry") => {
                            self.bump();
                            let f = self.function(FuncKind::Entry, line)?;
                            ast.funcs.push(f);
                        }
                        Some(".func") => {
                            self.bump();
                            let f = self.function(FuncKind::Func, line)?;
                            ast.funcs.push(f);
                        }
                        Some(s) => {
                            let Some(space) = Space::from_directive(s) else {
                                return self.err(format!("unknown module directive '{}'", clip(s)));
                            };
                            self.bump();
                            let vars = self.var_decls(space, is_extern, true)?;
                            self.charge(vec_bytes::<VarDecl>(vars.len()))?;
                            ast.vars.extend(vars);
                        }
                        None => return self.err("expected a declaration"),
                    }
                }
            }
        }
        Ok(ast)
    }

    /// Parses the declarations after a state-space directive up to `;`
    /// (`stmt` = true) or one parameter up to `,`/`)` (`stmt` = false).
    fn var_decls(
        &mut self,
        space: Space,
        is_extern: bool,
        stmt: bool,
    ) -> Result<Vec<VarDecl>, PtxError> {
        let line = self.line();
        let mut align = 0;
        let mut vec = 1;
        let mut ty = None;
        let mut space = space;
        let mut pointer = false;
        // `.texref`, `.surfref`, `.samplerref`: an opaque handle.
        let mut opaque = None;
        while let Some(word) = self.peek_ident() {
            if !word.starts_with('.') {
                break;
            }
            self.next()?;
            match word {
                // In `.param .u64 .ptr .global .align 1 p` the alignment is the
                // pointee's; the parameter keeps its natural one.
                ".align" if pointer => {
                    self.int()?;
                }
                ".align" => align = self.u32("alignment")?,
                ".v2" => vec = 2,
                ".v4" => vec = 4,
                ".v8" => vec = 8,
                ".ptr" => pointer = true,
                ".attribute" => {
                    // `.attribute(.managed)`: skip the parenthesised list.
                    if self.eat_punct('(') {
                        while self.peek().is_some() && !self.eat_punct(')') {
                            self.next()?;
                        }
                    }
                }
                ".texref" | ".surfref" | ".samplerref" => {
                    ty = Some(Ty::B64);
                    opaque = Some(&word[1..]);
                }
                w => {
                    if let Some(t) = Ty::from_suffix(&w[1..]) {
                        ty = Some(t);
                    } else if let Some(s) = Space::from_directive(w) {
                        // `.ptr .global` inside a parameter: the pointee's space.
                        if space != Space::Param {
                            space = s;
                        }
                    } else {
                        return self.err(format!("unknown qualifier '{}' in declaration", clip(w)));
                    }
                }
            }
        }
        let Some(ty) = ty else {
            return self.err("declaration without a type");
        };
        let mut out = Vec::new();
        loop {
            let name = self.declared_name()?;
            let mut dims = Vec::new();
            while self.eat_punct('[') {
                if self.eat_punct(']') {
                    dims.push(None);
                } else {
                    dims.push(Some(self.int()?));
                    self.expect_punct(']')?;
                }
                self.budget.tick(line)?;
            }
            // A module-scope `.texref`/`.surfref` (non-unified mode) is a
            // variable holding a texture or surface object handle, under a
            // name no PTX identifier can have (`texref.tex1`): a kernel's
            // `tex`/`suld`/`sust` on `tex1` loads the handle from it, and
            // the driver's cuModuleGetTexRef finds it, while
            // cuModuleGetGlobal does not. A parameter of such a type is an
            // 8-byte handle.
            let name = match opaque {
                Some(kind) if space != Space::Param => {
                    if !dims.is_empty() || self.is_punct('=') {
                        return Err(PtxError::unsupported_decl(
                            line,
                            &format!(".{kind} arrays or initializers"),
                        ));
                    }
                    opaque_var_name(kind, name)
                }
                _ => name.to_string(),
            };
            // `.reg .b32 %r<10>` style ranges are handled by `reg_decl`.
            let init = if self.eat_punct('=') {
                let mut init = Init::default();
                self.initializer(&mut init, ty)?;
                Some(init)
            } else {
                None
            };
            let v = VarDecl {
                space,
                name,
                align,
                ty,
                vec,
                dims,
                init,
                is_extern,
                line,
            };
            // The initializer's values were charged as they came.
            self.charge(var_bytes(&v))?;
            out.push(v);
            if stmt && self.eat_punct(',') {
                continue;
            }
            break;
        }
        if stmt {
            self.expect_punct(';')?;
        }
        Ok(out)
    }

    fn initializer(&mut self, out: &mut Init, ty: Ty) -> Result<(), PtxError> {
        if self.depth >= MAX_NESTING {
            return self.err("initializer nested too deeply");
        }
        self.depth += 1;
        let r = self.initializer_inner(out, ty);
        self.depth -= 1;
        r
    }

    fn initializer_inner(&mut self, out: &mut Init, ty: Ty) -> Result<(), PtxError> {
        if self.eat_punct('{') {
            if self.eat_punct('}') {
                return Ok(());
            }
            loop {
                self.initializer(out, ty)?;
                if self.eat_punct(',') {
                    continue;
                }
                self.expect_punct('}')?;
                return Ok(());
            }
        }
        let neg = self.eat_punct('-');
        let val = match self.next()? {
            Tok::Int(v) => InitVal::Int(if neg { v.wrapping_neg() } else { v }),
            Tok::F32(v) => InitVal::F32(if neg { v ^ 0x8000_0000 } else { v }),
            Tok::F64(v) => InitVal::F64(if neg { v ^ (1 << 63) } else { v }),
            Tok::Ident(name) => {
                let name = if (name == "generic" || name == "mask") && self.eat_punct('(') {
                    let n = self.ident()?;
                    self.expect_punct(')')?;
                    n
                } else {
                    name
                };
                let mut off = 0i64;
                while self.is_punct('+') || self.is_punct('-') {
                    let minus = self.eat_punct('-');
                    if !minus {
                        self.bump();
                    }
                    let v = self.int()? as i64;
                    off = if minus {
                        off.wrapping_sub(v)
                    } else {
                        off.wrapping_add(v)
                    };
                }
                InitVal::Sym(name.to_string(), off)
            }
            t => return self.err(format!("bad initializer value {}", describe(Some(t)))),
        };
        let es = ty.size() as usize;
        let n = es.min(8);
        let mut bytes = es as u64;
        if let InitVal::Sym(..) = val {
            bytes += vec_bytes::<(u64, String, i64)>(1);
        }
        let at = out.bytes.len();
        let value = val.bits(ty).to_le_bytes();
        if let InitVal::Sym(name, add) = val {
            bytes += str_bytes(&name);
            self.charge(bytes)?;
            out.relocs.push((at as u64, name, add));
        } else {
            self.charge(bytes)?;
        }
        out.bytes.extend_from_slice(&value[..n]);
        out.bytes.resize(at + es, 0);
        out.count += 1;
        Ok(())
    }

    /// Parses a parenthesised parameter list (the `(` already seen).
    fn param_list(&mut self) -> Result<Vec<VarDecl>, PtxError> {
        let mut out = Vec::new();
        if self.eat_punct(')') {
            return Ok(out);
        }
        loop {
            let d = self.ident()?;
            let space = match d {
                ".param" => Space::Param,
                ".reg" => Space::Reg,
                _ => return self.err(format!("expected .param, found '{}'", clip(d))),
            };
            let decls = self.var_decls(space, false, false)?;
            self.charge(vec_bytes::<VarDecl>(decls.len()))?;
            out.extend(decls);
            if self.eat_punct(',') {
                continue;
            }
            self.expect_punct(')')?;
            return Ok(out);
        }
    }

    fn function(&mut self, kind: FuncKind, line: u32) -> Result<FuncDecl, PtxError> {
        if self.peek_ident() == Some(".attribute") {
            self.bump();
            if self.eat_punct('(') {
                let mut depth = 1u64;
                while depth > 0 {
                    match self.next()? {
                        Tok::Punct('(') => depth += 1,
                        Tok::Punct(')') => depth -= 1,
                        _ => {}
                    }
                }
            }
        }
        let mut rets = Vec::new();
        if kind == FuncKind::Func && self.eat_punct('(') {
            rets = self.param_list()?;
        }
        let name = self.declared_name()?.to_string();
        self.charge(std::mem::size_of::<FuncDecl>() as u64 + str_bytes(&name))?;
        let mut params = Vec::new();
        if self.eat_punct('(') {
            params = self.param_list()?;
        }
        let mut maxntid = None;
        let mut reqntid = None;
        loop {
            match self.peek_ident() {
                Some(which @ (".maxntid" | ".reqntid")) => {
                    self.bump();
                    let mut dims = [1u32; 3];
                    dims[0] = self.u32("block size")?;
                    for d in dims.iter_mut().skip(1) {
                        if !self.eat_punct(',') {
                            break;
                        }
                        *d = self.u32("block size")?;
                    }
                    if which == ".maxntid" {
                        maxntid = Some(dims);
                    } else {
                        reqntid = Some(dims);
                    }
                }
                Some(".pragma") => self.skip_stmt()?,
                Some(w) if w.starts_with('.') => {
                    // .noreturn, .minnctapersm N, .maxnreg N, cluster directives...
                    self.next()?;
                    while matches!(self.peek(), Some(Tok::Int(_))) {
                        self.next()?;
                        self.eat_punct(',');
                    }
                }
                _ => break,
            }
        }
        let (body, body_at) = if self.eat_punct(';') {
            (None, None)
        } else if self.is_punct('{') {
            let at = self.look.front().map(|t| (t.at, t.line));
            (Some(self.body()?), at)
        } else {
            return self.err(format!(
                "expected a body or ';' after function '{}'",
                clip(&name)
            ));
        };
        Ok(FuncDecl {
            kind,
            name,
            rets,
            params,
            body,
            body_at,
            maxntid,
            reqntid,
            line,
        })
    }

    /// Keeps `s`, charging it; an outline keeps only variables.
    fn push_stmt(&mut self, out: &mut Vec<Stmt>, s: Stmt) -> Result<(), PtxError> {
        if !self.full && !matches!(s, Stmt::Var(_)) {
            return Ok(());
        }
        let heap = match &s {
            Stmt::Open | Stmt::Close => 0,
            // Its names were charged as they came.
            Stmt::Reg(..) => 0,
            // The declaration itself was charged when parsed.
            Stmt::Var(_) => 0,
            Stmt::Label(l, _) => str_bytes(l),
            Stmt::Inst(i) => inst_bytes(i),
        };
        self.charge(vec_bytes::<Stmt>(1) + heap)?;
        out.push(s);
        Ok(())
    }

    /// A whole body (its `{` next): its statements, or in an outline only
    /// its variables.
    fn body(&mut self) -> Result<Vec<Stmt>, PtxError> {
        let mut out = Vec::new();
        let mut depth = 0u32;
        while self.body_stmt(&mut depth, &mut out)? {}
        Ok(out)
    }

    /// Parses the next statement of a body into `out` (nothing for a lone
    /// `;`, several statements for a declaration of several variables);
    /// false once the body's closing `}` is taken. `depth` is the nesting
    /// of blocks, 0 before the body's `{`.
    fn body_stmt(&mut self, depth: &mut u32, out: &mut Vec<Stmt>) -> Result<bool, PtxError> {
        let line = self.line();
        self.budget.tick(line)?;
        let Some(tok) = self.peek() else {
            return self.err("unterminated function body");
        };
        match tok {
            Tok::Punct('{') => {
                if *depth > MAX_BLOCK_NESTING {
                    return self.err(format!("blocks nested more than {MAX_BLOCK_NESTING} deep"));
                }
                self.bump();
                *depth += 1;
                self.push_stmt(out, Stmt::Open)?;
            }
            Tok::Punct('}') => {
                self.bump();
                *depth = depth.saturating_sub(1);
                self.push_stmt(out, Stmt::Close)?;
                if *depth == 0 {
                    return Ok(false);
                }
            }
            Tok::Punct('@') => {
                self.bump();
                let neg = self.eat_punct('!');
                let p = self.ident()?;
                let mut inst = self.instruction(line)?;
                inst.guard = Some((p.to_string(), neg));
                self.push_stmt(out, Stmt::Inst(inst))?;
            }
            Tok::Punct(';') => self.bump(),
            Tok::Ident(word) => {
                if self.peek_at(1) == Some(Tok::Punct(':')) {
                    self.bump();
                    self.bump();
                    self.push_stmt(out, Stmt::Label(word.to_string(), line))?;
                } else if word.starts_with('.') {
                    match word {
                        ".reg" => {
                            self.bump();
                            let r = self.reg_decl(line, "")?;
                            self.push_stmt(out, r)?;
                        }
                        // `.reg.f32 f;`, as CUDA's headers write it in
                        // inline assembly.
                        w if w.starts_with(".reg.") => {
                            self.bump();
                            let r = self.reg_decl(line, &w[4..])?;
                            self.push_stmt(out, r)?;
                        }
                        ".loc" | ".file" => self.skip_line()?,
                        ".pragma" | ".callprototype" | ".maxnreg" => {
                            self.bump();
                            self.skip_stmt()?;
                        }
                        w => {
                            self.bump();
                            let Some(space) = Space::from_directive(w) else {
                                return self.err(format!("unknown directive '{}'", clip(w)));
                            };
                            for v in self.var_decls(space, false, true)? {
                                self.push_stmt(out, Stmt::Var(v))?;
                            }
                        }
                    }
                } else {
                    let inst = self.instruction(line)?;
                    self.push_stmt(out, Stmt::Inst(inst))?;
                }
            }
            t => return self.err(format!("unexpected {} in function body", describe(Some(t)))),
        }
        Ok(true)
    }

    /// A `.reg` declaration after its directive; `attached` holds the
    /// modifiers written onto the directive (`.f32` of `.reg.f32`).
    fn reg_decl(&mut self, line: u32, attached: &str) -> Result<Stmt, PtxError> {
        let mut ty = None;
        let mut vec = 1;
        let mut attached = attached.split('.').filter(|m| !m.is_empty());
        loop {
            let w = if let Some(m) = attached.next() {
                m
            } else {
                match self.peek_ident() {
                    Some(w) if w.starts_with('.') => {
                        self.next()?;
                        &w[1..]
                    }
                    _ => break,
                }
            };
            match w {
                "v2" => vec = 2,
                "v4" => vec = 4,
                _ => match Ty::from_suffix(w) {
                    Some(t) => ty = Some(t),
                    None => return self.err(format!("unknown register type '.{}'", clip(w))),
                },
            }
        }
        let Some(ty) = ty else {
            return self.err(".reg without a type");
        };
        if vec != 1 {
            return Err(PtxError::unsupported_decl(
                line,
                ".reg .v2/.v4 vector registers",
            ));
        }
        let mut names = Vec::new();
        loop {
            let name = self.ident()?;
            let count = if self.eat_punct('<') {
                let n = self.int()?;
                if n > MAX_REG_RANGE {
                    return Err(PtxError::limit(
                        self.line(),
                        format!(
                            "register range {}<{n}> is larger than the {MAX_REG_RANGE} registers a declaration may name",
                            clip(name)
                        ),
                    ));
                }
                self.expect_punct('>')?;
                Some(n as u32)
            } else {
                None
            };
            self.charge_kept(vec_bytes::<(String, Option<u32>)>(1) + str_bytes(name))?;
            names.push((name.to_string(), count));
            if !self.eat_punct(',') {
                break;
            }
        }
        self.expect_punct(';')?;
        Ok(Stmt::Reg(ty, names, line))
    }

    fn instruction(&mut self, line: u32) -> Result<Inst, PtxError> {
        let opcode = self.ident()?.to_string();
        let mut operands = Vec::new();
        if !self.eat_punct(';') {
            loop {
                let o = self.operand()?;
                self.charge_kept(vec_bytes::<Operand>(1) + operand_bytes(&o))?;
                operands.push(o);
                if self.eat_punct(',') {
                    continue;
                }
                self.expect_punct(';')?;
                break;
            }
        }
        Ok(Inst {
            guard: None,
            opcode,
            operands,
            line,
        })
    }

    fn operand(&mut self) -> Result<Operand, PtxError> {
        if self.depth >= MAX_NESTING {
            return self.err("operand nested too deeply");
        }
        self.depth += 1;
        let r = self.operand_inner();
        self.depth -= 1;
        r
    }

    /// Operands up to `close`, after the opening bracket.
    fn operand_list(&mut self, close: char) -> Result<Vec<Operand>, PtxError> {
        let mut v = Vec::new();
        if !self.eat_punct(close) {
            loop {
                let o = self.operand()?;
                self.charge_kept(vec_bytes::<Operand>(1) + operand_bytes(&o))?;
                v.push(o);
                if self.eat_punct(',') {
                    continue;
                }
                self.expect_punct(close)?;
                break;
            }
        }
        Ok(v)
    }

    fn operand_inner(&mut self) -> Result<Operand, PtxError> {
        match self.next()? {
            Tok::Punct('[') => {
                let (base, mut off) = match self.next()? {
                    // `[handle, {coordinates}]` of texture and surface instructions.
                    Tok::Ident(n) if self.is_punct(',') => {
                        self.bump();
                        let n = n.to_string();
                        return Ok(Operand::Image(n, self.operand_list(']')?));
                    }
                    Tok::Ident(n) => (Some(n.to_string()), 0i64),
                    Tok::Int(v) => (None, v as i64),
                    t => return self.err(format!("bad address {}", describe(Some(t)))),
                };
                while !self.eat_punct(']') {
                    let minus = match self.next()? {
                        Tok::Punct('+') => self.eat_punct('-'),
                        Tok::Punct('-') => true,
                        t => return self.err(format!("bad address {}", describe(Some(t)))),
                    };
                    let v = self.int()? as i64;
                    off = if minus {
                        off.wrapping_sub(v)
                    } else {
                        off.wrapping_add(v)
                    };
                }
                Ok(Operand::Addr(base, off))
            }
            // The nested operands are charged as they come: the caller
            // charges only the list's own strings (none).
            Tok::Punct('{') => {
                let v = self.operand_list('}')?;
                if self.eat_punct('|') {
                    return Ok(Operand::VecPred(v, self.ident()?.to_string()));
                }
                Ok(Operand::Vec(v))
            }
            Tok::Punct('(') => Ok(Operand::List(self.operand_list(')')?)),
            Tok::Punct('!') => Ok(Operand::Not(self.ident()?.to_string())),
            Tok::Punct('-') => match self.next()? {
                Tok::Int(v) => Ok(Operand::Int(v.wrapping_neg())),
                Tok::F32(v) => Ok(Operand::F32(v ^ 0x8000_0000)),
                Tok::F64(v) => Ok(Operand::F64(v ^ (1 << 63))),
                t => self.err(format!("bad operand -{}", describe(Some(t)))),
            },
            Tok::Int(v) => Ok(Operand::Int(v)),
            Tok::F32(v) => Ok(Operand::F32(v)),
            Tok::F64(v) => Ok(Operand::F64(v)),
            Tok::Ident(n) => {
                if n == "_" {
                    return Ok(Operand::Sink);
                }
                if self.eat_punct('|') {
                    let q = self.ident()?;
                    return Ok(Operand::Pair(n.to_string(), q.to_string()));
                }
                if self.is_punct('+') && matches!(self.peek_at(1), Some(Tok::Int(_))) {
                    self.bump();
                    let v = self.int()? as i64;
                    return Ok(Operand::SymOff(n.to_string(), v));
                }
                Ok(Operand::Name(n.to_string()))
            }
            t => self.err(format!("unexpected {} in operands", describe(Some(t)))),
        }
    }
}

/// A token for an error message (long names and strings cut short).
fn describe(t: Option<Tok<'_>>) -> String {
    match t {
        None => "end of input".into(),
        Some(Tok::Ident(s)) => format!("'{}'", clip(s)),
        Some(Tok::Str(s)) => format!("string \"{}\"", clip(s)),
        Some(Tok::Punct(c)) => format!("'{c}'"),
        Some(Tok::Int(v)) => format!("integer {v}"),
        Some(Tok::F32(b)) => format!("float 0f{b:08X}"),
        Some(Tok::F64(b)) => format!("double 0d{b:016X}"),
    }
}

/// Estimated heap bytes of an instruction (opcode, guard; its operands
/// are charged as they are parsed).
fn inst_bytes(i: &Inst) -> u64 {
    str_bytes(&i.opcode) + i.guard.as_ref().map_or(0, |(g, _)| str_bytes(g))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pointer_alignment_is_the_pointees() {
        let src = ".version 9.5\n.target sm_80\n.address_size 64\n\
            .visible .entry k(.param .u8 a, .param .u64 .ptr .global .align 1 p) { ret; }";
        let ast = parse(src).unwrap();
        let p = &ast.funcs[0].params[1];
        assert_eq!((p.align, p.alignment()), (0, 8));
    }

    #[test]
    fn parses_module_items() {
        let src = r#"
.version 9.5
.target sm_80
.address_size 64
.extern .func (.param .b32 func_retval0) vprintf
(
	.param .b64 vprintf_param_0,
	.param .b64 vprintf_param_1
)
;
.const .align 4 .b8 cf[64];
.global .align 4 .b8 gtable[16] = {1, 0, 0, 0, 2};
.extern .shared .align 16 .b8 sm[];
.visible .entry k(.param .u64 k_param_0, .param .align 8 .b8 k_param_1[24]) .maxntid 128, 1, 1
{
	.reg .pred %p<2>;
	.reg .b32 %r<9>, %x;
	@!%p1 bra $L__BB0_2;
	{ .reg .b16 c; mov.b16 c, 0x3f80U; }
	ld.param.v2.u32 {%r1, %r2}, [k_param_1+-8];
	shfl.sync.down.b32 %r1|%p1, %r2, 1, 31, -1;
$L__BB0_2:
	ret;
}
"#;
        let ast = parse(src).unwrap();
        assert_eq!(ast.vars.len(), 3);
        assert_eq!(ast.vars[1].size(), 16);
        let init = ast.vars[1].init.as_ref().unwrap();
        assert_eq!((init.count, &init.bytes[..]), (5, &[1, 0, 0, 0, 2][..]));
        assert!(ast.vars[2].is_extern);
        assert_eq!(ast.funcs.len(), 2);
        assert!(ast.funcs[0].body.is_none());
        let k = &ast.funcs[1];
        assert_eq!(k.params.len(), 2);
        assert_eq!(k.params[1].size(), 24);
        assert_eq!(k.params[1].align, 8);
        assert_eq!(k.maxntid, Some([128, 1, 1]));
        let body = k.body.as_ref().unwrap();
        let insts: Vec<_> = body
            .iter()
            .filter_map(|s| match s {
                Stmt::Inst(i) => Some(i),
                _ => None,
            })
            .collect();
        assert_eq!(insts[0].guard, Some(("%p1".into(), true)));
        assert_eq!(
            insts[2].operands[1],
            Operand::Addr(Some("k_param_1".into()), -8)
        );
        assert_eq!(
            insts[3].operands[0],
            Operand::Pair("%r1".into(), "%p1".into())
        );
        assert_eq!(insts[3].operands[4], Operand::Int(u64::MAX));
    }
}
