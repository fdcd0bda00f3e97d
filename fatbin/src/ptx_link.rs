//! Linking several PTX modules into one, as `cuLinkComplete` does when a
//! JIT (Numba, cuda.core) adds more than one PTX input: a kernel's module
//! declares `.extern .func helper` and another module defines it.
//!
//! The result is one PTX text that any CUDA driver loads, built from the
//! inputs' top-level items:
//!
//! 1. `.version` (the newest of the inputs), `.target` (the highest
//!    architecture), `.address_size`;
//! 2. a prototype of every `.func` defined, so that a call may precede the
//!    definition, which may now sit in a later module;
//! 3. module-scope variables, `.extern` declarations nothing defines, and
//!    other directives, in input order;
//! 4. function and kernel definitions, in input order.
//!
//! Symbols resolve as the driver's linker resolves them: an `.extern`
//! declaration binds to the definition of that name; of several `.weak` or
//! `.common` definitions the first is kept (a `.visible` one beats them);
//! two `.visible` definitions of a name are an error. Symbols without
//! linkage (internal ones, such as NVVM's `$str` string constants) are
//! renamed when another module uses the same name. `.file` numbers are
//! renumbered per module (and the `.loc`s that use them); DWARF `.section`s
//! are dropped, as they cannot be merged textually.

use std::collections::{HashMap, HashSet};

use crate::ptx::PtxError;

/// One lexical token: its byte range, and whether it is a word (directive,
/// name, number) or one punctuation character.
#[derive(Debug, Clone, Copy)]
struct Tok {
    start: usize,
    end: usize,
    word: bool,
}

/// Tokens of `text`, comments and strings left out.
fn scan(text: &str) -> Vec<Tok> {
    let bytes = text.as_bytes();
    let is_word = |c: u8| c.is_ascii_alphanumeric() || matches!(c, b'_' | b'$' | b'%');
    let mut toks = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        let c = bytes[i];
        if c == b'/' && bytes.get(i + 1) == Some(&b'/') {
            i = text[i..].find('\n').map_or(bytes.len(), |n| i + n);
        } else if c == b'/' && bytes.get(i + 1) == Some(&b'*') {
            i = text[i + 2..]
                .find("*/")
                .map_or(bytes.len(), |n| i + 2 + n + 2);
        } else if c == b'"' {
            let mut j = i + 1;
            while j < bytes.len() && bytes[j] != b'"' {
                j += if bytes[j] == b'\\' { 2 } else { 1 };
            }
            i = j.saturating_add(1);
        } else if c.is_ascii_whitespace() || !c.is_ascii() {
            i += 1;
        } else if c == b'.' || is_word(c) {
            let start = i;
            i += 1;
            while i < bytes.len() && is_word(bytes[i]) {
                i += 1;
            }
            toks.push(Tok {
                start,
                end: i,
                word: true,
            });
        } else {
            toks.push(Tok {
                start: i,
                end: i + 1,
                word: false,
            });
            i += 1;
        }
    }
    toks
}

/// How a symbol is visible to other modules.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Linkage {
    /// No linkage directive: this module only.
    Internal,
    Visible,
    Weak,
    Common,
    Extern,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Kind {
    Version,
    Target,
    AddressSize,
    File,
    Section,
    /// `.func`/`.entry`; `body` is the offset of its `{` when defined here.
    Func {
        name: String,
        entry: bool,
        body: Option<usize>,
    },
    Var {
        name: String,
    },
    Other,
}

/// One top-level item of a module: a directive, a declaration or a
/// definition, as the byte range `start..end` of the module's text.
#[derive(Debug, Clone)]
struct Item {
    start: usize,
    end: usize,
    /// Its tokens, as indices into the module's token list.
    toks: std::ops::Range<usize>,
    kind: Kind,
    linkage: Linkage,
}

struct Module<'a> {
    text: &'a str,
    toks: Vec<Tok>,
    items: Vec<Item>,
}

impl<'a> Module<'a> {
    fn word(&self, i: usize) -> Option<&'a str> {
        let t = self.toks.get(i)?;
        t.word.then(|| &self.text[t.start..t.end])
    }

    fn punct(&self, i: usize) -> Option<char> {
        let t = self.toks.get(i)?;
        (!t.word).then(|| char::from(self.text.as_bytes()[t.start]))
    }

    fn parse(text: &'a str, index: usize) -> Result<Self, PtxError> {
        let toks = scan(text);
        let mut m = Module {
            text,
            toks,
            items: Vec::new(),
        };
        let err = |what: &str| PtxError(format!("PTX input {index}: {what}"));
        let mut i = 0;
        while i < m.toks.len() {
            let first = i;
            let start = m.toks[i].start;
            let lead = m.word(i).unwrap_or("");
            let line_kind = match lead {
                ".version" => Some(Kind::Version),
                ".target" => Some(Kind::Target),
                ".address_size" => Some(Kind::AddressSize),
                ".file" => Some(Kind::File),
                _ => None,
            };
            if let Some(kind) = line_kind {
                // These directives end with their line.
                let end = text[start..].find('\n').map_or(text.len(), |n| start + n);
                while i < m.toks.len() && m.toks[i].start < end {
                    i += 1;
                }
                m.items.push(Item {
                    start,
                    end,
                    toks: first..i,
                    kind,
                    linkage: Linkage::Internal,
                });
                continue;
            }
            let mut linkage = Linkage::Internal;
            let mut func: Option<bool> = None;
            let mut assigned = false;
            let (mut parens, mut braces) = (0i32, 0i32);
            let mut body = None;
            let end_tok = loop {
                let Some(t) = m.toks.get(i) else {
                    return Err(err("unterminated declaration at the end of the text"));
                };
                if t.word {
                    match m.word(i) {
                        Some(".extern") => linkage = Linkage::Extern,
                        Some(".visible") => linkage = Linkage::Visible,
                        Some(".weak") => linkage = Linkage::Weak,
                        Some(".common") => linkage = Linkage::Common,
                        Some(".func") if func.is_none() => func = Some(false),
                        Some(".entry") if func.is_none() => func = Some(true),
                        _ => {}
                    }
                    i += 1;
                    continue;
                }
                match m.punct(i) {
                    Some('(') => parens += 1,
                    Some(')') => parens -= 1,
                    Some('=') => assigned = true,
                    Some('{')
                        if braces == 0
                            && parens == 0
                            && !assigned
                            && (func.is_some() || lead == ".section") =>
                    {
                        body = Some(t.start - start);
                        braces = 1;
                        i += 1;
                        while braces > 0 {
                            match m.toks.get(i).map(|_| m.punct(i)) {
                                None => return Err(err("unbalanced braces")),
                                Some(Some('{')) => braces += 1,
                                Some(Some('}')) => braces -= 1,
                                _ => {}
                            }
                            i += 1;
                        }
                        break i - 1;
                    }
                    Some('{') => braces += 1,
                    Some('}') => braces -= 1,
                    Some(';') if braces == 0 && parens == 0 => {
                        i += 1;
                        break i - 1;
                    }
                    _ => {}
                }
                i += 1;
            };
            let end = m.toks[end_tok].end;
            let kind = if lead == ".section" {
                Kind::Section
            } else if let Some(entry) = func {
                Kind::Func {
                    name: m
                        .func_name(first, i)
                        .ok_or_else(|| err("a function without a name"))?,
                    entry,
                    body,
                }
            } else if matches!(
                lead,
                ".extern" | ".visible" | ".weak" | ".common" | ".global" | ".const" | ".shared"
            ) {
                match m.var_name(first, i) {
                    Some(name) => Kind::Var { name },
                    None => Kind::Other,
                }
            } else {
                Kind::Other
            };
            m.items.push(Item {
                start,
                end,
                toks: first..i,
                kind,
                linkage,
            });
        }
        Ok(m)
    }

    /// The name of the function declared by tokens `from..to`: the first
    /// word after `.func`/`.entry` and the return parameters, if any.
    fn func_name(&self, from: usize, to: usize) -> Option<String> {
        let mut i = (from..to).find(|&i| matches!(self.word(i), Some(".func" | ".entry")))? + 1;
        if self.punct(i) == Some('(') {
            let mut depth = 0;
            while i < to {
                match self.punct(i) {
                    Some('(') => depth += 1,
                    Some(')') => {
                        depth -= 1;
                        if depth == 0 {
                            i += 1;
                            break;
                        }
                    }
                    _ => {}
                }
                i += 1;
            }
        }
        (i..to)
            .find_map(|i| self.word(i).filter(|w| !w.starts_with('.')))
            .map(str::to_string)
    }

    /// The name a variable declaration declares: its first word that is
    /// neither a directive nor a number (outside `.attribute(...)`).
    fn var_name(&self, from: usize, to: usize) -> Option<String> {
        let mut depth = 0;
        for i in from..to {
            match self.punct(i) {
                Some('(') => depth += 1,
                Some(')') => depth -= 1,
                Some('[' | '=' | ';' | '<') => return None,
                _ => {}
            }
            if let Some(w) = self.word(i) {
                if depth == 0 && !w.starts_with('.') && !w.starts_with(|c: char| c.is_ascii_digit())
                {
                    return Some(w.to_string());
                }
            }
        }
        None
    }

    /// The text of `item` with the words in `renames` replaced and `.file`
    /// and `.loc` numbers moved up by `file_offset`.
    fn render(&self, item: &Item, renames: &HashMap<String, String>, file_offset: u64) -> String {
        self.render_range(
            item.start,
            item.end,
            item.toks.clone(),
            renames,
            file_offset,
        )
    }

    fn render_range(
        &self,
        start: usize,
        end: usize,
        toks: std::ops::Range<usize>,
        renames: &HashMap<String, String>,
        file_offset: u64,
    ) -> String {
        let mut out = String::with_capacity(end - start);
        let mut at = start;
        let mut after_file_directive = false;
        for i in toks {
            let t = self.toks[i];
            if t.start >= end {
                break;
            }
            let Some(w) = self.word(i) else {
                after_file_directive = false;
                continue;
            };
            let replacement = if after_file_directive && file_offset > 0 {
                w.parse::<u64>().ok().map(|n| (n + file_offset).to_string())
            } else {
                renames.get(w).cloned()
            };
            after_file_directive = matches!(w, ".file" | ".loc");
            if let Some(r) = replacement {
                out.push_str(&self.text[at..t.start]);
                out.push_str(&r);
                at = t.end;
            }
        }
        out.push_str(&self.text[at..end]);
        out
    }

    /// The highest `.file` number.
    fn max_file(&self) -> u64 {
        self.items
            .iter()
            .filter(|it| it.kind == Kind::File)
            .filter_map(|it| self.word(it.toks.start + 1)?.parse().ok())
            .max()
            .unwrap_or(0)
    }

    fn directive_value(&self, kind: &Kind) -> Option<&'a str> {
        let item = self.items.iter().find(|it| &it.kind == kind)?;
        let word_end = self.toks[item.toks.start].end;
        Some(self.text[word_end..item.end].trim())
    }
}

/// `9.5` → (9, 5).
fn version_key(text: &str) -> (u32, u32) {
    let (a, b) = text.split_once('.').unwrap_or((text, "0"));
    (a.trim().parse().unwrap_or(0), b.trim().parse().unwrap_or(0))
}

/// `sm_80, debug` → 80; `sm_90a` → 90.
fn target_key(text: &str) -> u32 {
    let arch = text.split(',').next().unwrap_or("").trim();
    let digits: String = arch
        .trim_start_matches("sm_")
        .trim_start_matches("compute_")
        .chars()
        .take_while(char::is_ascii_digit)
        .collect();
    digits.parse().unwrap_or(0)
}

/// Links the PTX texts `inputs` into one PTX text (see the module docs).
/// Fails for input it cannot split into items and for symbols defined
/// twice.
pub fn link(inputs: &[&str]) -> Result<String, PtxError> {
    let modules = inputs
        .iter()
        .enumerate()
        .map(|(i, text)| Module::parse(text, i))
        .collect::<Result<Vec<_>, _>>()?;

    // Header.
    let version = modules
        .iter()
        .filter_map(|m| m.directive_value(&Kind::Version))
        .max_by_key(|v| version_key(v))
        .ok_or_else(|| PtxError("no PTX input has a .version directive".into()))?;
    let target = modules
        .iter()
        .filter_map(|m| m.directive_value(&Kind::Target))
        .max_by_key(|t| target_key(t));
    let address_size = modules
        .iter()
        .find_map(|m| m.directive_value(&Kind::AddressSize));

    // The definition each name with linkage resolves to: the first visible
    // one, else the first weak or common one.
    let mut winner: HashMap<&str, (usize, usize, Linkage)> = HashMap::new();
    for (mi, m) in modules.iter().enumerate() {
        for (ii, item) in m.items.iter().enumerate() {
            let name = match &item.kind {
                Kind::Func {
                    name,
                    body: Some(_),
                    ..
                } => name,
                Kind::Var { name } => name,
                _ => continue,
            };
            let linkage = match (&item.kind, item.linkage) {
                (_, Linkage::Extern) => continue,
                // Kernels are visible whatever they say.
                (Kind::Func { entry: true, .. }, _) => Linkage::Visible,
                (_, Linkage::Internal) => continue,
                (_, l) => l,
            };
            match winner.get(name.as_str()) {
                None => {
                    winner.insert(name, (mi, ii, linkage));
                }
                Some(&(_, _, Linkage::Visible)) if linkage == Linkage::Visible => {
                    return Err(PtxError(format!(
                        "{name} is defined by more than one PTX input"
                    )));
                }
                Some(&(_, _, Linkage::Weak | Linkage::Common)) if linkage == Linkage::Visible => {
                    winner.insert(name, (mi, ii, linkage));
                }
                Some(_) => {}
            }
        }
    }

    // Internal names another module also uses get a module-unique name.
    let mut taken: HashSet<String> = HashSet::new();
    for m in &modules {
        for item in &m.items {
            if let Kind::Func { name, .. } | Kind::Var { name } = &item.kind {
                if item.linkage != Linkage::Internal
                    || matches!(item.kind, Kind::Func { entry: true, .. })
                {
                    taken.insert(name.clone());
                }
            }
        }
    }
    let mut renames: Vec<HashMap<String, String>> = Vec::new();
    for (mi, m) in modules.iter().enumerate() {
        let mut map = HashMap::new();
        let mut own = HashSet::new();
        for item in &m.items {
            let (Kind::Func {
                name, entry: false, ..
            }
            | Kind::Var { name }) = &item.kind
            else {
                continue;
            };
            if item.linkage != Linkage::Internal || !own.insert(name.clone()) {
                continue;
            }
            if taken.contains(name) {
                let mut n = 0;
                let fresh = loop {
                    let candidate = format!("{name}_rcud{mi}_{n}");
                    if !taken.contains(&candidate) {
                        break candidate;
                    }
                    n += 1;
                };
                taken.insert(fresh.clone());
                map.insert(name.clone(), fresh);
            } else {
                taken.insert(name.clone());
            }
        }
        renames.push(map);
    }
    let mut file_offsets = Vec::with_capacity(modules.len());
    let mut next = 0;
    for m in &modules {
        file_offsets.push(next);
        next += m.max_file();
    }

    let mut out = format!(
        "//\n// Linked by rcud from {} PTX modules.\n//\n\n.version {version}\n",
        modules.len()
    );
    if let Some(t) = target {
        // The DWARF sections are dropped, so the result carries no debug
        // information whatever the inputs said.
        let t: Vec<&str> = t
            .split(',')
            .map(str::trim)
            .filter(|p| *p != "debug")
            .collect();
        out.push_str(&format!(".target {}\n", t.join(", ")));
    }
    if let Some(a) = address_size {
        out.push_str(&format!(".address_size {a}\n"));
    }
    out.push('\n');

    let is_winner = |name: &str, mi: usize, ii: usize| {
        winner
            .get(name)
            .is_some_and(|&(wm, wi, _)| (wm, wi) == (mi, ii))
    };
    let mut files = String::new();
    let mut prototypes = String::new();
    let mut vars = String::new();
    let mut funcs = String::new();
    let mut extern_declared: HashSet<&str> = HashSet::new();
    for (mi, m) in modules.iter().enumerate() {
        let names = &renames[mi];
        let offset = file_offsets[mi];
        for (ii, item) in m.items.iter().enumerate() {
            let text = || m.render(item, names, offset);
            match &item.kind {
                Kind::Version | Kind::Target | Kind::AddressSize | Kind::Section => {}
                Kind::File => {
                    files.push_str(&text());
                    files.push('\n');
                }
                Kind::Func {
                    name,
                    entry,
                    body: Some(body),
                } => {
                    let internal = item.linkage == Linkage::Internal && !entry;
                    if !internal && !is_winner(name, mi, ii) {
                        // A weak duplicate.
                        continue;
                    }
                    if !entry {
                        let head_end = item.start + body;
                        let head =
                            m.render_range(item.start, head_end, item.toks.clone(), names, offset);
                        prototypes.push_str(head.trim_end());
                        prototypes.push_str(";\n");
                    }
                    funcs.push_str(&text());
                    funcs.push_str("\n\n");
                }
                Kind::Func {
                    name, body: None, ..
                } => {
                    // Declarations: the prototypes above stand for the ones
                    // of functions defined somewhere; an internal one
                    // declares a function of its own module, which has one
                    // too. What nothing defines stays declared, once.
                    let defined = winner.contains_key(name.as_str())
                        || (item.linkage == Linkage::Internal
                            && m.items.iter().any(|o| {
                                matches!(&o.kind, Kind::Func { name: n, body: Some(_), .. } if n == name)
                            }));
                    if !defined && extern_declared.insert(name) {
                        vars.push_str(&text());
                        vars.push('\n');
                    }
                }
                Kind::Var { name } => {
                    let keep = match item.linkage {
                        Linkage::Internal => true,
                        Linkage::Extern => {
                            !winner.contains_key(name.as_str()) && extern_declared.insert(name)
                        }
                        _ => is_winner(name, mi, ii),
                    };
                    if keep {
                        vars.push_str(&text());
                        vars.push('\n');
                    }
                }
                Kind::Other => {
                    vars.push_str(&text());
                    vars.push('\n');
                }
            }
        }
    }
    for part in [files, prototypes, vars] {
        if !part.is_empty() {
            out.push_str(&part);
            out.push('\n');
        }
    }
    out.push_str(&funcs);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    const KERNEL: &str = r#"//
// Generated by NVIDIA NVVM Compiler
.version 8.4
.target sm_80
.address_size 64

.extern .func  (.param .b32 func_retval0) helper
(
	.param .b64 helper_param_0
)
;
.common .global .align 8 .u64 env;
.global .align 1 .b8 $str[3] = {104, 105, 0};
.extern .func  (.param .b32 func_retval0) vprintf
(
	.param .b64 vprintf_param_0,
	.param .b64 vprintf_param_1
)
;

.visible .entry k(
	.param .u64 k_param_0
)
{
	.reg .b32 	%r<3>;
	.reg .b64 	%rd<3>;
	ld.param.u64 	%rd1, [k_param_0];
	mov.u64 	%rd2, $str;
	{ // callseq 0, 0
	.param .b64 param0;
	st.param.b64 	[param0], %rd1;
	.param .b32 retval0;
	call.uni (retval0), helper, (param0);
	ld.param.b32 	%r1, [retval0];
	} // callseq 0
	st.global.u32 	[%rd1], %r1;
	ret;
}
"#;

    const HELPER: &str = r#"
.version 9.5
.target sm_80
.address_size 64

.common .global .align 8 .u64 env;
.global .align 1 .b8 $str[4] = {121, 111, 117, 0};
.func  (.param .b32 func_retval0) twice(
	.param .b32 twice_param_0
)
{
	.reg .b32 	%r<3>;
	ld.param.u32 	%r1, [twice_param_0];
	add.s32 	%r2, %r1, %r1;
	st.param.b32 	[func_retval0], %r2;
	ret;
}

.visible .func  (.param .b32 func_retval0) helper(
	.param .b64 helper_param_0
)
{
	.reg .b32 	%r<3>;
	.reg .b64 	%rd<2>;
	mov.u64 	%rd1, $str;
	mov.u32 	%r1, 21;
	{
	.param .b32 param0;
	st.param.b32 	[param0], %r1;
	.param .b32 retval0;
	call.uni (retval0), twice, (param0);
	ld.param.b32 	%r2, [retval0];
	}
	st.param.b32 	[func_retval0], %r2;
	ret;
}
"#;

    #[test]
    fn externs_bind_to_definitions_in_other_modules() {
        let linked = link(&[KERNEL, HELPER]).expect("links");
        // The newest ISA version of the inputs.
        assert!(linked.contains(".version 9.5\n"), "{linked}");
        assert_eq!(linked.matches(".target sm_80").count(), 1, "{linked}");
        // The extern declaration became a prototype ahead of every use.
        assert!(!linked.contains(".extern .func  (.param .b32 func_retval0) helper"));
        let proto = linked
            .find(".visible .func  (.param .b32 func_retval0) helper(")
            .expect("prototype");
        let entry = linked.find(".visible .entry k(").expect("kernel");
        assert!(proto < entry);
        assert!(linked[proto..].starts_with(
            ".visible .func  (.param .b32 func_retval0) helper(\n\t.param .b64 helper_param_0\n);"
        ));
        // vprintf, defined nowhere, stays declared once.
        assert_eq!(linked.matches(") vprintf").count(), 1);
        // One common variable.
        assert_eq!(linked.matches("u64 env;").count(), 1);
    }

    #[test]
    fn clashing_internal_names_are_renamed_in_their_module_only() {
        let linked = link(&[KERNEL, HELPER]).expect("links");
        assert!(linked.contains(".global .align 1 .b8 $str[3]"), "{linked}");
        assert!(
            linked.contains(".global .align 1 .b8 $str_rcud1_0[4]"),
            "{linked}"
        );
        assert!(linked.contains("mov.u64 \t%rd1, $str_rcud1_0;"), "{linked}");
        assert!(linked.contains("mov.u64 \t%rd2, $str;"), "{linked}");
        // `twice` clashes with nothing and keeps its name.
        assert!(linked.contains("call.uni (retval0), twice, (param0);"));
    }

    #[test]
    fn two_visible_definitions_are_an_error() {
        assert!(link(&[HELPER, HELPER]).is_err());
        let weak = HELPER.replace(".visible .func", ".weak .func");
        let linked = link(&[HELPER, &weak]).expect("a weak duplicate is dropped");
        assert_eq!(
            linked
                .matches("helper(\n\t.param .b64 helper_param_0\n)\n{")
                .count(),
            1
        );
    }

    #[test]
    fn file_numbers_are_renumbered_per_module() {
        let a = ".version 8.0\n.target sm_75\n.address_size 64\n.file 1 \"a.py\"\n\
                 .visible .entry a()\n{\n.loc 1 3 0\nret;\n}\n";
        let b = ".version 8.0\n.target sm_80, debug\n.address_size 64\n.file 1 \"b.cu\"\n.file 2 \"c.h\"\n\
                 .visible .func b()\n{\n.loc 2 7 1\nret;\n}\n.section .debug_str { $L1: .b8 0 }\n";
        let linked = link(&[a, b]).expect("links");
        assert!(linked.contains(".target sm_80\n"), "{linked}");
        assert!(linked.contains(".file 1 \"a.py\""));
        assert!(linked.contains(".file 2 \"b.cu\""));
        assert!(linked.contains(".file 3 \"c.h\""));
        assert!(linked.contains(".loc 1 3 0"));
        assert!(linked.contains(".loc 3 7 1"));
        assert!(!linked.contains(".section"));
    }

    #[test]
    fn hostile_text_is_an_error_not_a_panic() {
        for bad in [
            "",
            ".version 8.0\n.visible .entry k(\n{",
            ".version 8.0\n.global .u32 x",
            "}}}{{{;;;",
        ] {
            let _ = link(&[bad, HELPER]);
        }
        assert!(link(&[".target sm_80\n"]).is_err());
    }
}
