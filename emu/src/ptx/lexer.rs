//! Tokens of PTX source text.

use super::PtxError;

/// One token with the line it starts on.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Token<'a> {
    pub(crate) kind: Tok<'a>,
    pub(crate) line: u32,
    /// Byte offset where it starts.
    pub(crate) at: usize,
}

/// A token; names and strings borrow the source text, so lexing allocates
/// nothing.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Tok<'a> {
    /// Identifiers, directives (`.reg`), opcodes with modifiers
    /// (`ld.global.nc.v4.f32`), registers (`%r1`, `%tid.x`), labels.
    Ident(&'a str),
    /// An integer literal (decimal, hex, octal, binary; `U` suffix dropped),
    /// as its 64-bit pattern.
    Int(u64),
    /// `0fXXXXXXXX`: the bits of an f32.
    F32(u32),
    /// `0dXXXXXXXXXXXXXXXX` or a decimal float literal: the bits of an f64.
    F64(u64),
    Str(&'a str),
    Punct(char),
}

fn ident_start(c: u8) -> bool {
    c.is_ascii_alphabetic() || matches!(c, b'_' | b'$' | b'%' | b'.')
}

fn ident_char(c: u8) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, b'_' | b'$' | b'.')
}

/// Splits PTX text into tokens, one at a time, dropping comments. It holds
/// no tokens: the parser pulls them as it goes, so the memory lexing takes
/// does not grow with the text.
#[derive(Debug, Clone)]
pub(crate) struct Lexer<'a> {
    src: &'a str,
    i: usize,
    line: u32,
}

impl<'a> Lexer<'a> {
    pub(crate) fn new(src: &'a str) -> Self {
        Lexer { src, i: 0, line: 1 }
    }

    /// A lexer that goes on at byte `at` of `src` (a token boundary an
    /// earlier lexer reached), on line `line`.
    pub(crate) fn resume(src: &'a str, at: usize, line: u32) -> Self {
        Lexer { src, i: at, line }
    }

    /// Byte offset and line where the next token search starts.
    #[cfg(test)]
    pub(crate) fn position(&self) -> (usize, u32) {
        (self.i, self.line)
    }

    /// The next token, `None` at the end of the text.
    pub(crate) fn next_token(&mut self) -> Result<Option<Token<'a>>, PtxError> {
        let src = self.src;
        let b = src.as_bytes();
        let mut i = self.i;
        let mut line = self.line;
        let result = loop {
            let Some(&c) = b.get(i) else {
                break Ok(None);
            };
            if c == b'\n' {
                line += 1;
                i += 1;
                continue;
            }
            if c.is_ascii_whitespace() {
                i += 1;
                continue;
            }
            if c == b'/' && b.get(i + 1) == Some(&b'/') {
                while i < b.len() && b[i] != b'\n' {
                    i += 1;
                }
                continue;
            }
            if c == b'/' && b.get(i + 1) == Some(&b'*') {
                i += 2;
                while i < b.len() && !(b[i] == b'*' && b.get(i + 1) == Some(&b'/')) {
                    if b[i] == b'\n' {
                        line += 1;
                    }
                    i += 1;
                }
                i += 2;
                continue;
            }
            if c == b'"' {
                let start = i + 1;
                i += 1;
                while i < b.len() && b[i] != b'"' {
                    if b[i] == b'\\' {
                        i += 1;
                    }
                    if b.get(i) == Some(&b'\n') {
                        line += 1;
                    }
                    i += 1;
                }
                let s = src.get(start..i.min(b.len())).unwrap_or("");
                i += 1;
                break Ok(Some(Token {
                    kind: Tok::Str(s),
                    line,
                    at: start - 1,
                }));
            }
            if ident_start(c) {
                let start = i;
                i += 1;
                loop {
                    if i < b.len() && ident_char(b[i]) {
                        i += 1;
                    } else if i + 2 < b.len()
                        && b[i] == b':'
                        && b[i + 1] == b':'
                        && ident_char(b[i + 2])
                    {
                        // Cache-hint modifiers such as `.L2::128B`.
                        i += 2;
                    } else {
                        break;
                    }
                }
                break Ok(Some(Token {
                    kind: Tok::Ident(&src[start..i]),
                    line,
                    at: start,
                }));
            }
            if c.is_ascii_digit() {
                let start = i;
                while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'.') {
                    // Exponent signs of decimal floats: 1.5e-3.
                    i += 1;
                    if i < b.len()
                        && matches!(b[i], b'+' | b'-')
                        && matches!(b[i - 1], b'e' | b'E')
                        && !src[start..i].starts_with("0x")
                        && !src[start..i].starts_with("0X")
                    {
                        i += 1;
                    }
                }
                let text = &src[start..i];
                break match number(text) {
                    Some(kind) => Ok(Some(Token {
                        kind,
                        line,
                        at: start,
                    })),
                    None => Err(PtxError::syntax(
                        line,
                        format!("bad numeric literal '{}'", clip(text)),
                    )),
                };
            }
            if b",;:[]{}()+-|!<>=@*".contains(&c) {
                i += 1;
                break Ok(Some(Token {
                    kind: Tok::Punct(c as char),
                    line,
                    at: i - 1,
                }));
            }
            break Err(PtxError::syntax(
                line,
                format!("unexpected character '{}'", c as char),
            ));
        };
        self.i = i.min(b.len());
        self.line = line;
        result
    }
}

/// `text`, or its first 64 bytes and an ellipsis: error messages quote
/// input, which may be huge.
pub(crate) fn clip(text: &str) -> std::borrow::Cow<'_, str> {
    const MAX: usize = 64;
    if text.len() <= MAX {
        return text.into();
    }
    let mut end = MAX;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}...", &text[..end]).into()
}

/// Every token of `src` (tests only: the parser pulls them one by one).
#[cfg(test)]
pub(crate) fn lex(src: &str) -> Result<Vec<Token<'_>>, PtxError> {
    let mut lx = Lexer::new(src);
    let mut out = Vec::new();
    while let Some(t) = lx.next_token()? {
        out.push(t);
    }
    Ok(out)
}

fn number(text: &str) -> Option<Tok<'static>> {
    // The longest literal PTX writes is a binary one of 64 digits; far
    // longer text is no number (and is not copied to find out).
    if text.len() > 1024 {
        return None;
    }
    let lower = text.to_ascii_lowercase();
    if let Some(h) = lower.strip_prefix("0f") {
        if h.len() == 8 {
            return u32::from_str_radix(h, 16).ok().map(Tok::F32);
        }
    }
    if let Some(h) = lower.strip_prefix("0d") {
        if h.len() == 16 {
            return u64::from_str_radix(h, 16).ok().map(Tok::F64);
        }
    }
    let t = lower.strip_suffix('u').unwrap_or(&lower);
    if let Some(h) = t.strip_prefix("0x") {
        return u64::from_str_radix(h, 16).ok().map(Tok::Int);
    }
    if let Some(h) = t.strip_prefix("0b") {
        return u64::from_str_radix(h, 2).ok().map(Tok::Int);
    }
    if t.contains(['.', 'e']) {
        return t.parse::<f64>().ok().map(|f| Tok::F64(f.to_bits()));
    }
    if t.len() > 1 && t.starts_with('0') {
        return u64::from_str_radix(&t[1..], 8).ok().map(Tok::Int);
    }
    t.parse::<u64>().ok().map(Tok::Int)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kinds(s: &str) -> Vec<Tok<'_>> {
        lex(s).unwrap().into_iter().map(|t| t.kind).collect()
    }

    #[test]
    fn tokens() {
        assert_eq!(
            kinds("ld.global.L2::128B.f32 %f1, [%rd2+-8]; // x\n$L__BB0_2:"),
            vec![
                Tok::Ident("ld.global.L2::128B.f32"),
                Tok::Ident("%f1"),
                Tok::Punct(','),
                Tok::Punct('['),
                Tok::Ident("%rd2"),
                Tok::Punct('+'),
                Tok::Punct('-'),
                Tok::Int(8),
                Tok::Punct(']'),
                Tok::Punct(';'),
                Tok::Ident("$L__BB0_2"),
                Tok::Punct(':'),
            ]
        );
        assert_eq!(
            kinds("0f3F800000 0d3FF0000000000000 0x3f80U 017 1.5"),
            vec![
                Tok::F32(0x3F80_0000),
                Tok::F64(1.0f64.to_bits()),
                Tok::Int(0x3f80),
                Tok::Int(15),
                Tok::F64(1.5f64.to_bits()),
            ]
        );
        let t = lex("/* a\nb */ x\ny").unwrap();
        assert_eq!(t[0].line, 2);
        assert_eq!(t[1].line, 3);
    }

    #[test]
    fn resumes_where_it_stopped() {
        let src = "a b\n c";
        let mut lx = Lexer::new(src);
        lx.next_token().unwrap();
        let (at, line) = lx.position();
        let mut again = Lexer::resume(src, at, line);
        assert_eq!(again.next_token().unwrap().unwrap().kind, Tok::Ident("b"));
        assert_eq!(again.next_token().unwrap().unwrap().line, 2);
        assert_eq!(again.next_token().unwrap(), None);
        assert_eq!(again.next_token().unwrap(), None);
    }

    #[test]
    fn errors_quote_little_of_huge_literals() {
        let big = format!("1{}", "z".repeat(1 << 20));
        let e = lex(&big).unwrap_err().to_string();
        assert!(e.len() < 200, "{}", e.len());
    }
}
