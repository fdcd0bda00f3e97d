//! Tokens of PTX source text.

use super::PtxError;

/// One token with the line it starts on.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Token {
    pub(crate) kind: Tok,
    pub(crate) line: u32,
}

#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Tok {
    /// Identifiers, directives (`.reg`), opcodes with modifiers
    /// (`ld.global.nc.v4.f32`), registers (`%r1`, `%tid.x`), labels.
    Ident(String),
    /// An integer literal (decimal, hex, octal, binary; `U` suffix dropped),
    /// as its 64-bit pattern.
    Int(u64),
    /// `0fXXXXXXXX`: the bits of an f32.
    F32(u32),
    /// `0dXXXXXXXXXXXXXXXX` or a decimal float literal: the bits of an f64.
    F64(u64),
    Str(String),
    Punct(char),
}

fn ident_start(c: u8) -> bool {
    c.is_ascii_alphabetic() || matches!(c, b'_' | b'$' | b'%' | b'.')
}

fn ident_char(c: u8) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, b'_' | b'$' | b'.')
}

/// Splits PTX text into tokens, dropping comments.
pub(crate) fn lex(src: &str) -> Result<Vec<Token>, PtxError> {
    let b = src.as_bytes();
    let mut out = Vec::with_capacity(src.len() / 4);
    let mut i = 0;
    let mut line = 1u32;
    while i < b.len() {
        let c = b[i];
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
            let s = src.get(start..i.min(b.len())).unwrap_or("").to_string();
            i += 1;
            out.push(Token {
                kind: Tok::Str(s),
                line,
            });
            continue;
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
            out.push(Token {
                kind: Tok::Ident(src[start..i].to_string()),
                line,
            });
            continue;
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
            let kind = number(text)
                .ok_or_else(|| PtxError::syntax(line, format!("bad numeric literal '{text}'")))?;
            out.push(Token { kind, line });
            continue;
        }
        if b",;:[]{}()+-|!<>=@*".contains(&c) {
            out.push(Token {
                kind: Tok::Punct(c as char),
                line,
            });
            i += 1;
            continue;
        }
        return Err(PtxError::syntax(
            line,
            format!("unexpected character '{}'", c as char),
        ));
    }
    Ok(out)
}

fn number(text: &str) -> Option<Tok> {
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

    fn kinds(s: &str) -> Vec<Tok> {
        lex(s).unwrap().into_iter().map(|t| t.kind).collect()
    }

    #[test]
    fn tokens() {
        assert_eq!(
            kinds("ld.global.L2::128B.f32 %f1, [%rd2+-8]; // x\n$L__BB0_2:"),
            vec![
                Tok::Ident("ld.global.L2::128B.f32".into()),
                Tok::Ident("%f1".into()),
                Tok::Punct(','),
                Tok::Punct('['),
                Tok::Ident("%rd2".into()),
                Tok::Punct('+'),
                Tok::Punct('-'),
                Tok::Int(8),
                Tok::Punct(']'),
                Tok::Punct(';'),
                Tok::Ident("$L__BB0_2".into()),
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
}
