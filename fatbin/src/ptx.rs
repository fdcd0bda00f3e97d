//! Kernel parameter layouts from PTX `.entry` signatures.
//!
//! ```text
//! .visible .entry _Z1kPfi1Sc(
//!     .param .u64 _Z1kPfi1Sc_param_0,
//!     .param .u32 _Z1kPfi1Sc_param_1,
//!     .param .align 8 .b8 _Z1kPfi1Sc_param_2[24],
//!     .param .u8 _Z1kPfi1Sc_param_3
//! )
//! ```
//!
//! Each parameter's size is its type's size times its vector width and array
//! lengths; its alignment is `.align N` when given, else the natural alignment of
//! the type. Parameters are laid out in order, each at the next multiple of its
//! alignment; the total is where the last one ends. In `.param .u64 .ptr .global
//! .align 16 p` the `.align` after `.ptr` is the alignment of the pointee, not of
//! the parameter.

use crate::{Param, ParamLayout};

/// Why a PTX `.entry` signature could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct PtxError(pub String);

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Tok<'a> {
    /// A word: `.param`, `.b8`, a name, a number.
    Word(&'a str),
    /// One punctuation character.
    Punct(char),
}

fn is_word_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, '_' | '$' | '%')
}

/// Tokens of `text`, with comments and string literals left out, made one
/// at a time: a signature is found without holding the tokens of the whole
/// text (many times its size).
struct Tokens<'a> {
    text: &'a str,
    i: usize,
}

fn tokenize(text: &str) -> Tokens<'_> {
    Tokens { text, i: 0 }
}

impl<'a> Iterator for Tokens<'a> {
    type Item = Tok<'a>;

    fn next(&mut self) -> Option<Tok<'a>> {
        let text = self.text;
        let bytes = text.as_bytes();
        while self.i < bytes.len() {
            let i = self.i;
            let c = bytes[i];
            match c {
                b'/' if bytes.get(i + 1) == Some(&b'/') => {
                    self.i = text[i..].find('\n').map_or(bytes.len(), |n| i + n);
                }
                b'/' if bytes.get(i + 1) == Some(&b'*') => {
                    self.i = text[i + 2..]
                        .find("*/")
                        .map_or(bytes.len(), |n| i + 2 + n + 2);
                }
                b'"' => {
                    // A string (`.file 1 "a/b.cu"`): skip to its closing quote.
                    let mut j = i + 1;
                    while j < bytes.len() && bytes[j] != b'"' {
                        j += if bytes[j] == b'\\' { 2 } else { 1 };
                    }
                    self.i = j.saturating_add(1);
                }
                _ if c.is_ascii_whitespace() => self.i += 1,
                _ if c == b'.' || is_word_char(char::from(c)) => {
                    let mut j = i + 1;
                    while j < bytes.len() && is_word_char(char::from(bytes[j])) {
                        j += 1;
                    }
                    self.i = j;
                    return Some(Tok::Word(&text[i..j]));
                }
                _ if c.is_ascii() => {
                    self.i += 1;
                    return Some(Tok::Punct(char::from(c)));
                }
                _ => {
                    // Skip the rest of a non-ASCII character.
                    let mut j = i + 1;
                    while j < bytes.len() && !text.is_char_boundary(j) {
                        j += 1;
                    }
                    self.i = j;
                }
            }
        }
        None
    }
}

/// Size in bytes of a PTX fundamental type usable for a kernel parameter.
fn type_size(ty: &str) -> Option<usize> {
    Some(match ty {
        ".b8" | ".s8" | ".u8" => 1,
        ".b16" | ".s16" | ".u16" | ".f16" | ".bf16" | ".e4m3x2" | ".e5m2x2" => 2,
        ".b32" | ".s32" | ".u32" | ".f32" | ".f16x2" | ".bf16x2" | ".tf32" => 4,
        ".b64" | ".s64" | ".u64" | ".f64" => 8,
        ".b128" => 16,
        // Opaque handles of textures, samplers and surfaces.
        ".texref" | ".samplerref" | ".surfref" => 8,
        _ => return None,
    })
}

fn parse_number(word: &str) -> Option<usize> {
    if let Some(hex) = word.strip_prefix("0x").or_else(|| word.strip_prefix("0X")) {
        usize::from_str_radix(hex, 16).ok()
    } else {
        word.parse().ok()
    }
}

/// Size and alignment of one parameter, from its tokens (`.param` first).
fn param_size_align(toks: &[Tok<'_>]) -> Result<(usize, usize), String> {
    let mut iter = toks.iter().copied().peekable();
    if iter.next() != Some(Tok::Word(".param")) {
        return Err(format!(
            "parameter does not start with .param: {}",
            render(toks)
        ));
    }
    let mut align: Option<usize> = None;
    let mut elem: Option<usize> = None;
    let mut vector = 1usize;
    let mut pointer = false;
    let mut name_seen = false;
    let mut count = 1usize;
    while let Some(tok) = iter.next() {
        match tok {
            Tok::Word(".align") => {
                let n = match iter.next() {
                    Some(Tok::Word(w)) => parse_number(w),
                    _ => None,
                }
                .filter(|n| n.is_power_of_two())
                .ok_or_else(|| format!(".align without a power of two: {}", render(toks)))?;
                if !pointer {
                    align = Some(n);
                }
            }
            Tok::Word(".ptr") => pointer = true,
            Tok::Word(".global" | ".const" | ".shared" | ".local") if pointer => {}
            Tok::Word(".v2") => vector = 2,
            Tok::Word(".v4") => vector = 4,
            Tok::Word(".v8") => vector = 8,
            Tok::Word(w) if w.starts_with('.') && !name_seen => {
                let size = type_size(w).ok_or_else(|| {
                    format!("unknown parameter type or attribute {w}: {}", render(toks))
                })?;
                elem = Some(size);
            }
            Tok::Word(_) if !name_seen => name_seen = true,
            Tok::Punct('[') if name_seen => {
                let n = match (iter.next(), iter.next()) {
                    (Some(Tok::Word(w)), Some(Tok::Punct(']'))) => parse_number(w),
                    _ => None,
                }
                .ok_or_else(|| format!("array length is not a number: {}", render(toks)))?;
                count = count
                    .checked_mul(n)
                    .ok_or_else(|| format!("array too large: {}", render(toks)))?;
            }
            _ => return Err(format!("unexpected {}: {}", render(&[tok]), render(toks))),
        }
    }
    let elem = elem.ok_or_else(|| format!("parameter without a type: {}", render(toks)))?;
    if !name_seen {
        return Err(format!("parameter without a name: {}", render(toks)));
    }
    let natural = elem * vector;
    let size = natural
        .checked_mul(count)
        .filter(|&s| s <= 1 << 24)
        .ok_or_else(|| format!("parameter too large: {}", render(toks)))?;
    Ok((size, align.unwrap_or(natural)))
}

fn render(toks: &[Tok<'_>]) -> String {
    let mut s = String::new();
    for t in toks {
        match t {
            Tok::Word(w) => {
                if !s.is_empty() && !s.ends_with('[') {
                    s.push(' ');
                }
                s.push_str(w);
            }
            Tok::Punct(c) => s.push(*c),
        }
    }
    s
}

/// Names of the kernels (`.entry`) `ptx` defines, in order, each once.
pub fn entry_names(ptx: &str) -> Vec<String> {
    let mut names: Vec<String> = Vec::new();
    let mut after_entry = false;
    for t in tokenize(ptx) {
        if after_entry {
            if let Tok::Word(w) = t {
                if !names.iter().any(|n| n == w) {
                    names.push(w.to_string());
                }
            }
        }
        after_entry = t == Tok::Word(".entry");
    }
    names
}

/// The parameter layout of the kernel `.entry` named `kernel` in `ptx`, or `None`
/// when the PTX has no such entry.
pub fn entry_param_layout(ptx: &str, kernel: &str) -> Result<Option<ParamLayout>, PtxError> {
    if kernel.is_empty() || !ptx.contains(kernel) {
        return Ok(None);
    }
    let mut toks = tokenize(ptx);
    let mut prev = None;
    let found = toks.by_ref().any(|t| {
        let hit = prev == Some(Tok::Word(".entry")) && t == Tok::Word(kernel);
        prev = Some(t);
        hit
    });
    if !found {
        return Ok(None);
    }
    let mut layout = ParamLayout::default();
    // `.entry name` with no parameter list at all.
    if toks.next() != Some(Tok::Punct('(')) {
        return Ok(Some(layout));
    }
    let mut list = Vec::new();
    loop {
        match toks.next() {
            Some(Tok::Punct(')')) => break,
            Some(t) => list.push(t),
            None => {
                return Err(PtxError(format!(
                    ".entry {kernel}: parameter list has no closing parenthesis"
                )))
            }
        }
    }
    if list.is_empty() {
        return Ok(Some(layout));
    }
    let mut end = 0usize;
    for param in list.split(|t| *t == Tok::Punct(',')) {
        let (size, align) =
            param_size_align(param).map_err(|e| PtxError(format!(".entry {kernel}: {e}")))?;
        let offset = end
            .checked_next_multiple_of(align)
            .and_then(|o| o.checked_add(size).map(|e| (o, e)));
        let Some((offset, param_end)) = offset else {
            return Err(PtxError(format!(".entry {kernel}: parameters too large")));
        };
        end = param_end;
        layout.params.push(Param { offset, size });
    }
    layout.total_size = end;
    Ok(Some(layout))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn layout(ptx: &str, name: &str) -> Vec<(usize, usize)> {
        entry_param_layout(ptx, name)
            .unwrap()
            .unwrap()
            .params
            .iter()
            .map(|p| (p.offset, p.size))
            .collect()
    }

    #[test]
    fn entry_names_in_order_once_each() {
        let ptx = "// .entry fake in a comment
            .visible .entry b(.param .u64 p) { ret; }
            .func helper() { ret; }
            .visible .entry a() { ret; }";
        assert_eq!(entry_names(ptx), ["b", "a"]);
    }

    #[test]
    fn spec_example() {
        let ptx = "
            // .globl _Z1kPfi1Sc
            .visible .entry _Z1kPfi1Sc(
                .param .u64 _Z1kPfi1Sc_param_0,
                .param .u32 _Z1kPfi1Sc_param_1,
                .param .align 8 .b8 _Z1kPfi1Sc_param_2[24],
                .param .u8 _Z1kPfi1Sc_param_3
            )
            { ret; }";
        assert_eq!(
            layout(ptx, "_Z1kPfi1Sc"),
            [(0, 8), (8, 4), (16, 24), (40, 1)]
        );
        let l = entry_param_layout(ptx, "_Z1kPfi1Sc").unwrap().unwrap();
        assert_eq!(l.total_size, 41);
        assert_eq!(entry_param_layout(ptx, "_Z1k").unwrap(), None);
    }

    #[test]
    fn pointers_vectors_arrays_comments() {
        let ptx = r#"
            .file 1 "/*not a comment*/ .entry bad("
            .entry f /* c */ (
                .param .u8 a, // trailing comment
                .param .u64 .ptr .global .align 16 p,
                .param .v2 .f32 v,
                .param .b32 arr[3],
                .param .align 16 .b8 big[0x30],
                .param .f16 h
            ) .maxntid 128 { }
            .entry g { }
            .entry h() { }
        "#;
        assert_eq!(
            layout(ptx, "f"),
            [(0, 1), (8, 8), (16, 8), (24, 12), (48, 48), (96, 2)]
        );
        assert_eq!(
            entry_param_layout(ptx, "f").unwrap().unwrap().total_size,
            98
        );
        assert_eq!(layout(ptx, "g"), []);
        assert_eq!(layout(ptx, "h"), []);
        assert_eq!(entry_param_layout(ptx, "bad").unwrap(), None);
    }

    #[test]
    fn errors_name_the_problem() {
        let err = entry_param_layout(".entry k(.param .q7 x)", "k").unwrap_err();
        assert!(err.0.contains(".q7"), "{err}");
        let err = entry_param_layout(".entry k(.param .u32 x", "k").unwrap_err();
        assert!(err.0.contains("closing"), "{err}");
        let err = entry_param_layout(".entry k(.param .align 3 .b8 x[4])", "k").unwrap_err();
        assert!(err.0.contains("align"), "{err}");
        let err = entry_param_layout(".entry k(.param .u32)", "k").unwrap_err();
        assert!(err.0.contains("name"), "{err}");
    }
}
