//! PTX text → a light syntax tree: module-scope variables, functions with
//! their parameter lists, and function bodies as statements whose
//! instructions still carry their opcode text and raw operands. Meaning is
//! given later, by the translator.

use super::lexer::{lex, Tok, Token};
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
    pub(crate) init: Option<Vec<InitVal>>,
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
                    let init = self.init.as_ref().map_or(0, |v| v.len() as u64);
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
    pub(crate) body: Option<Vec<Stmt>>,
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
    /// `!p`.
    Not(String),
    /// `_`.
    Sink,
}

struct Parser {
    toks: Vec<Token>,
    pos: usize,
    /// Nesting of initializer braces and operand lists.
    depth: u32,
}

/// Deepest nesting of `{...}` in initializers and operands.
const MAX_NESTING: u32 = 32;

/// Parses a whole module.
pub(crate) fn parse(src: &str) -> Result<Ast, PtxError> {
    let mut p = Parser {
        toks: lex(src)?,
        pos: 0,
        depth: 0,
    };
    p.module()
}

impl Parser {
    fn peek(&self) -> Option<&Tok> {
        self.toks.get(self.pos).map(|t| &t.kind)
    }

    fn peek_at(&self, n: usize) -> Option<&Tok> {
        self.toks.get(self.pos + n).map(|t| &t.kind)
    }

    fn line(&self) -> u32 {
        self.toks
            .get(self.pos)
            .or_else(|| self.toks.last())
            .map_or(0, |t| t.line)
    }

    fn next(&mut self) -> Result<Tok, PtxError> {
        let t = self
            .toks
            .get(self.pos)
            .map(|t| t.kind.clone())
            .ok_or_else(|| PtxError::syntax(self.line(), "unexpected end of input".into()))?;
        self.pos += 1;
        Ok(t)
    }

    fn err<T>(&self, msg: impl Into<String>) -> Result<T, PtxError> {
        Err(PtxError::syntax(self.line(), msg.into()))
    }

    fn is_punct(&self, c: char) -> bool {
        self.peek() == Some(&Tok::Punct(c))
    }

    fn eat_punct(&mut self, c: char) -> bool {
        if self.is_punct(c) {
            self.pos += 1;
            true
        } else {
            false
        }
    }

    fn expect_punct(&mut self, c: char) -> Result<(), PtxError> {
        if self.eat_punct(c) {
            Ok(())
        } else {
            let found = self.peek().cloned();
            self.err(format!("expected '{c}', found {found:?}"))
        }
    }

    fn ident(&mut self) -> Result<String, PtxError> {
        match self.next()? {
            Tok::Ident(s) => Ok(s),
            t => {
                self.pos -= 1;
                self.err(format!("expected a name, found {t:?}"))
            }
        }
    }

    fn peek_ident(&self) -> Option<&str> {
        match self.peek() {
            Some(Tok::Ident(s)) => Some(s),
            _ => None,
        }
    }

    fn int(&mut self) -> Result<u64, PtxError> {
        let neg = self.eat_punct('-');
        match self.next()? {
            Tok::Int(v) => Ok(if neg { v.wrapping_neg() } else { v }),
            t => {
                self.pos -= 1;
                self.err(format!("expected an integer, found {t:?}"))
            }
        }
    }

    /// Skips every remaining token on the current token's line.
    fn skip_line(&mut self) {
        let line = self.line();
        while self.toks.get(self.pos).is_some_and(|t| t.line == line) {
            self.pos += 1;
        }
    }

    /// Skips to just past the next `;`.
    fn skip_stmt(&mut self) {
        while let Some(t) = self.peek().cloned() {
            self.pos += 1;
            if t == Tok::Punct(';') {
                break;
            }
        }
    }

    /// Skips a balanced `{ ... }` starting at the current `{`.
    fn skip_braces(&mut self) {
        let mut depth = 0usize;
        while let Some(t) = self.peek().cloned() {
            self.pos += 1;
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
    }

    fn module(&mut self) -> Result<Ast, PtxError> {
        let mut ast = Ast::default();
        while let Some(tok) = self.peek().cloned() {
            let line = self.line();
            let Tok::Ident(word) = tok else {
                return self.err(format!("unexpected {tok:?} at module scope"));
            };
            match word.as_str() {
                ".version" | ".target" | ".address_size" | ".file" | ".loc" => self.skip_line(),
                ".pragma" => self.skip_stmt(),
                ".section" => {
                    self.pos += 1;
                    while self.peek().is_some() && !self.is_punct('{') {
                        self.pos += 1;
                    }
                    self.skip_braces();
                }
                _ => {
                    // Linkage attributes, then a function or a variable.
                    let mut is_extern = false;
                    loop {
                        match self.peek_ident() {
                            Some(".visible" | ".weak" | ".common") => self.pos += 1,
                            Some(".extern") => {
                                is_extern = true;
                                self.pos += 1;
                            }
                            _ => break,
                        }
                    }
                    match self.peek_ident() {
                        Some(".entry") => {
                            self.pos += 1;
                            let f = self.function(FuncKind::Entry, line)?;
                            ast.funcs.push(f);
                        }
                        Some(".func") => {
                            self.pos += 1;
                            let f = self.function(FuncKind::Func, line)?;
                            ast.funcs.push(f);
                        }
                        Some(s) => {
                            let Some(space) = Space::from_directive(s) else {
                                return self.err(format!("unknown module directive '{s}'"));
                            };
                            self.pos += 1;
                            let vars = self.var_decls(space, is_extern, true)?;
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
        while let Some(word) = self.peek_ident() {
            if !word.starts_with('.') {
                break;
            }
            let word = word.to_string();
            self.pos += 1;
            match word.as_str() {
                // In `.param .u64 .ptr .global .align 1 p` the alignment is the
                // pointee's; the parameter keeps its natural one.
                ".align" if pointer => {
                    self.int()?;
                }
                ".align" => align = self.int()? as u32,
                ".v2" => vec = 2,
                ".v4" => vec = 4,
                ".v8" => vec = 8,
                ".ptr" => pointer = true,
                ".attribute" => {
                    // `.attribute(.managed)`: skip the parenthesised list.
                    if self.eat_punct('(') {
                        while self.peek().is_some() && !self.eat_punct(')') {
                            self.pos += 1;
                        }
                    }
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
                        return self.err(format!("unknown qualifier '{w}' in declaration"));
                    }
                }
            }
        }
        let Some(ty) = ty else {
            return self.err("declaration without a type");
        };
        let mut out = Vec::new();
        loop {
            let name = self.ident()?;
            let mut dims = Vec::new();
            while self.eat_punct('[') {
                if self.eat_punct(']') {
                    dims.push(None);
                } else {
                    dims.push(Some(self.int()?));
                    self.expect_punct(']')?;
                }
            }
            // `.reg .b32 %r<10>` style ranges are handled by `reg_decl`.
            let init = if self.eat_punct('=') {
                let mut vals = Vec::new();
                self.initializer(&mut vals)?;
                Some(vals)
            } else {
                None
            };
            out.push(VarDecl {
                space,
                name,
                align,
                ty,
                vec,
                dims,
                init,
                is_extern,
                line,
            });
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

    fn initializer(&mut self, out: &mut Vec<InitVal>) -> Result<(), PtxError> {
        if self.depth >= MAX_NESTING {
            return self.err("initializer nested too deeply");
        }
        self.depth += 1;
        let r = self.initializer_inner(out);
        self.depth -= 1;
        r
    }

    fn initializer_inner(&mut self, out: &mut Vec<InitVal>) -> Result<(), PtxError> {
        if self.eat_punct('{') {
            if self.eat_punct('}') {
                return Ok(());
            }
            loop {
                self.initializer(out)?;
                if self.eat_punct(',') {
                    continue;
                }
                self.expect_punct('}')?;
                return Ok(());
            }
        }
        let neg = self.eat_punct('-');
        match self.next()? {
            Tok::Int(v) => out.push(InitVal::Int(if neg { v.wrapping_neg() } else { v })),
            Tok::F32(v) => out.push(InitVal::F32(if neg { v ^ 0x8000_0000 } else { v })),
            Tok::F64(v) => out.push(InitVal::F64(if neg { v ^ (1 << 63) } else { v })),
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
                        self.pos += 1;
                    }
                    let v = self.int()? as i64;
                    off = if minus {
                        off.wrapping_sub(v)
                    } else {
                        off.wrapping_add(v)
                    };
                }
                out.push(InitVal::Sym(name, off));
            }
            t => return self.err(format!("bad initializer value {t:?}")),
        }
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
            let space = match d.as_str() {
                ".param" => Space::Param,
                ".reg" => Space::Reg,
                _ => return self.err(format!("expected .param, found '{d}'")),
            };
            out.extend(self.var_decls(space, false, false)?);
            if self.eat_punct(',') {
                continue;
            }
            self.expect_punct(')')?;
            return Ok(out);
        }
    }

    fn function(&mut self, kind: FuncKind, line: u32) -> Result<FuncDecl, PtxError> {
        if self.peek_ident() == Some(".attribute") {
            self.pos += 1;
            if self.eat_punct('(') {
                let mut depth = 1;
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
        let name = self.ident()?;
        let mut params = Vec::new();
        if self.eat_punct('(') {
            params = self.param_list()?;
        }
        let mut maxntid = None;
        let mut reqntid = None;
        loop {
            match self.peek_ident() {
                Some(".maxntid") | Some(".reqntid") => {
                    let which = self.ident()?;
                    let mut dims = [1u32; 3];
                    dims[0] = self.int()? as u32;
                    for d in dims.iter_mut().skip(1) {
                        if !self.eat_punct(',') {
                            break;
                        }
                        *d = self.int()? as u32;
                    }
                    if which == ".maxntid" {
                        maxntid = Some(dims);
                    } else {
                        reqntid = Some(dims);
                    }
                }
                Some(".pragma") => self.skip_stmt(),
                Some(w) if w.starts_with('.') => {
                    // .noreturn, .minnctapersm N, .maxnreg N, cluster directives...
                    self.pos += 1;
                    while matches!(self.peek(), Some(Tok::Int(_))) {
                        self.pos += 1;
                        self.eat_punct(',');
                    }
                }
                _ => break,
            }
        }
        let body = if self.eat_punct(';') {
            None
        } else if self.is_punct('{') {
            Some(self.body()?)
        } else {
            return self.err(format!("expected a body or ';' after function '{name}'"));
        };
        Ok(FuncDecl {
            kind,
            name,
            rets,
            params,
            body,
            maxntid,
            reqntid,
            line,
        })
    }

    fn body(&mut self) -> Result<Vec<Stmt>, PtxError> {
        let mut out = Vec::new();
        let mut depth = 0usize;
        loop {
            let line = self.line();
            let Some(tok) = self.peek().cloned() else {
                return self.err("unterminated function body");
            };
            match tok {
                Tok::Punct('{') => {
                    self.pos += 1;
                    depth += 1;
                    out.push(Stmt::Open);
                }
                Tok::Punct('}') => {
                    self.pos += 1;
                    depth = depth.saturating_sub(1);
                    out.push(Stmt::Close);
                    if depth == 0 {
                        return Ok(out);
                    }
                }
                Tok::Punct('@') => {
                    self.pos += 1;
                    let neg = self.eat_punct('!');
                    let p = self.ident()?;
                    let mut inst = self.instruction(line)?;
                    inst.guard = Some((p, neg));
                    out.push(Stmt::Inst(inst));
                }
                Tok::Punct(';') => self.pos += 1,
                Tok::Ident(word) => {
                    if self.peek_at(1) == Some(&Tok::Punct(':')) {
                        self.pos += 2;
                        out.push(Stmt::Label(word, line));
                        continue;
                    }
                    if word.starts_with('.') {
                        self.pos += 1;
                        match word.as_str() {
                            ".reg" => out.push(self.reg_decl(line, "")?),
                            // `.reg.f32 f;`, as CUDA's headers write it in
                            // inline assembly.
                            w if w.starts_with(".reg.") => {
                                let attached = w[4..].to_string();
                                out.push(self.reg_decl(line, &attached)?);
                            }
                            ".loc" | ".file" => {
                                self.pos -= 1;
                                self.skip_line();
                            }
                            ".pragma" | ".callprototype" | ".maxnreg" => self.skip_stmt(),
                            w => {
                                let Some(space) = Space::from_directive(w) else {
                                    return self.err(format!("unknown directive '{w}'"));
                                };
                                for v in self.var_decls(space, false, true)? {
                                    out.push(Stmt::Var(v));
                                }
                            }
                        }
                        continue;
                    }
                    let inst = self.instruction(line)?;
                    out.push(Stmt::Inst(inst));
                }
                t => return self.err(format!("unexpected {t:?} in function body")),
            }
        }
    }

    /// A `.reg` declaration after its directive; `attached` holds the
    /// modifiers written onto the directive (`.f32` of `.reg.f32`).
    fn reg_decl(&mut self, line: u32, attached: &str) -> Result<Stmt, PtxError> {
        let mut ty = None;
        let mut vec = 1;
        let mut attached = attached.split('.').filter(|m| !m.is_empty());
        loop {
            let w = if let Some(m) = attached.next() {
                format!(".{m}")
            } else {
                match self.peek_ident() {
                    Some(w) if w.starts_with('.') => {
                        let w = w.to_string();
                        self.pos += 1;
                        w
                    }
                    _ => break,
                }
            };
            match w.as_str() {
                ".v2" => vec = 2,
                ".v4" => vec = 4,
                _ => match Ty::from_suffix(&w[1..]) {
                    Some(t) => ty = Some(t),
                    None => return self.err(format!("unknown register type '{w}'")),
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
                let n = self.int()? as u32;
                self.expect_punct('>')?;
                Some(n)
            } else {
                None
            };
            names.push((name, count));
            if !self.eat_punct(',') {
                break;
            }
        }
        self.expect_punct(';')?;
        Ok(Stmt::Reg(ty, names, line))
    }

    fn instruction(&mut self, line: u32) -> Result<Inst, PtxError> {
        let opcode = self.ident()?;
        let mut operands = Vec::new();
        if !self.eat_punct(';') {
            loop {
                operands.push(self.operand()?);
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

    fn operand_inner(&mut self) -> Result<Operand, PtxError> {
        match self.next()? {
            Tok::Punct('[') => {
                let (base, mut off) = match self.next()? {
                    Tok::Ident(n) => (Some(n), 0i64),
                    Tok::Int(v) => (None, v as i64),
                    t => return self.err(format!("bad address {t:?}")),
                };
                while !self.eat_punct(']') {
                    let minus = match self.next()? {
                        Tok::Punct('+') => self.eat_punct('-'),
                        Tok::Punct('-') => true,
                        t => return self.err(format!("bad address {t:?}")),
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
            Tok::Punct('{') => {
                let mut v = Vec::new();
                if !self.eat_punct('}') {
                    loop {
                        v.push(self.operand()?);
                        if self.eat_punct(',') {
                            continue;
                        }
                        self.expect_punct('}')?;
                        break;
                    }
                }
                Ok(Operand::Vec(v))
            }
            Tok::Punct('(') => {
                let mut v = Vec::new();
                if !self.eat_punct(')') {
                    loop {
                        v.push(self.operand()?);
                        if self.eat_punct(',') {
                            continue;
                        }
                        self.expect_punct(')')?;
                        break;
                    }
                }
                Ok(Operand::List(v))
            }
            Tok::Punct('!') => Ok(Operand::Not(self.ident()?)),
            Tok::Punct('-') => match self.next()? {
                Tok::Int(v) => Ok(Operand::Int(v.wrapping_neg())),
                Tok::F32(v) => Ok(Operand::F32(v ^ 0x8000_0000)),
                Tok::F64(v) => Ok(Operand::F64(v ^ (1 << 63))),
                t => self.err(format!("bad operand -{t:?}")),
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
                    return Ok(Operand::Pair(n, q));
                }
                if self.is_punct('+') && matches!(self.peek_at(1), Some(Tok::Int(_))) {
                    self.pos += 1;
                    let v = self.int()? as i64;
                    return Ok(Operand::SymOff(n, v));
                }
                Ok(Operand::Name(n))
            }
            t => self.err(format!("unexpected {t:?} in operands")),
        }
    }
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
        assert_eq!(ast.vars[1].init.as_ref().unwrap().len(), 5);
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
