//! Device-side `printf`: nvcc compiles `printf(fmt, ...)` into
//! `vprintf(fmt, args)`, where `args` points to a buffer in the thread's
//! local memory holding each argument after C's default promotions
//! (char/short → int, float → double), each at its natural alignment.

/// Where `vprintf` reads its arguments and strings from.
pub(crate) trait PrintfSource {
    /// `size` (4 or 8) bytes at byte `off` of the argument buffer.
    fn arg(&mut self, off: u64, size: u32) -> Option<u64>;
    /// The NUL-terminated string at `addr` (at most `max` bytes).
    fn cstr(&mut self, addr: u64, max: usize) -> Option<Vec<u8>>;
}

/// Most bytes read of one format or `%s` string.
pub(crate) const MAX_STRING: usize = 1 << 16;

struct Args<'a> {
    src: &'a mut dyn PrintfSource,
    off: u64,
    count: u32,
}

impl Args<'_> {
    fn next(&mut self, size: u32) -> Option<u64> {
        let a = u64::from(size);
        self.off = self.off.div_ceil(a) * a;
        let v = self.src.arg(self.off, size)?;
        self.off += a;
        self.count += 1;
        Some(v)
    }
}

#[derive(Default, Clone, Copy)]
struct Spec {
    left: bool,
    plus: bool,
    space: bool,
    alt: bool,
    zero: bool,
    width: usize,
    prec: Option<usize>,
}

/// Formats `fmt` with the arguments of `src` into `out`; returns the number
/// of arguments consumed, or `None` when an argument or string could not be
/// read (the output so far is kept).
pub(crate) fn vprintf(fmt: &[u8], src: &mut dyn PrintfSource, out: &mut Vec<u8>) -> Option<u32> {
    let mut args = Args {
        src,
        off: 0,
        count: 0,
    };
    let mut i = 0;
    while i < fmt.len() {
        let c = fmt[i];
        if c != b'%' {
            out.push(c);
            i += 1;
            continue;
        }
        let start = i;
        i += 1;
        let mut s = Spec::default();
        while let Some(&f) = fmt.get(i) {
            match f {
                b'-' => s.left = true,
                b'+' => s.plus = true,
                b' ' => s.space = true,
                b'#' => s.alt = true,
                b'0' => s.zero = true,
                _ => break,
            }
            i += 1;
        }
        if fmt.get(i) == Some(&b'*') {
            let w = args.next(4)? as i32;
            if w < 0 {
                s.left = true;
            }
            s.width = w.unsigned_abs() as usize;
            i += 1;
        } else {
            while let Some(d) = fmt.get(i).filter(|d| d.is_ascii_digit()) {
                s.width = s
                    .width
                    .saturating_mul(10)
                    .saturating_add(usize::from(d - b'0'));
                i += 1;
            }
        }
        if fmt.get(i) == Some(&b'.') {
            i += 1;
            if fmt.get(i) == Some(&b'*') {
                let p = args.next(4)? as i32;
                s.prec = (p >= 0).then_some(p as usize);
                i += 1;
            } else {
                let mut p = 0usize;
                while let Some(d) = fmt.get(i).filter(|d| d.is_ascii_digit()) {
                    p = p.saturating_mul(10).saturating_add(usize::from(d - b'0'));
                    i += 1;
                }
                s.prec = Some(p);
            }
        }
        s.width = s.width.min(4096);
        s.prec = s.prec.map(|p| p.min(4096));
        // Length modifiers.
        let mut long = 0;
        let mut short = 0;
        while let Some(&l) = fmt.get(i) {
            match l {
                b'l' | b'L' | b'q' | b'j' | b'z' | b't' => long += 1,
                b'h' => short += 1,
                _ => break,
            }
            i += 1;
        }
        let Some(&conv) = fmt.get(i) else {
            out.extend_from_slice(&fmt[start..]);
            break;
        };
        i += 1;
        let size = if long > 0 { 8 } else { 4 };
        match conv {
            b'%' => out.push(b'%'),
            b'd' | b'i' => {
                let raw = args.next(size)?;
                let v: i64 = match (long, short) {
                    (0, 1) => i64::from(raw as i16),
                    (0, s) if s >= 2 => i64::from(raw as i8),
                    (0, _) => i64::from(raw as i32),
                    _ => raw as i64,
                };
                let sign = if v < 0 {
                    "-"
                } else if s.plus {
                    "+"
                } else if s.space {
                    " "
                } else {
                    ""
                };
                let digits = v.unsigned_abs().to_string();
                int_out(out, &s, sign, "", &digits, v == 0);
            }
            b'u' | b'x' | b'X' | b'o' | b'b' => {
                let raw = args.next(size)?;
                let v: u64 = match (long, short) {
                    (0, 1) => u64::from(raw as u16),
                    (0, s) if s >= 2 => u64::from(raw as u8),
                    (0, _) => u64::from(raw as u32),
                    _ => raw,
                };
                let (digits, prefix) = match conv {
                    b'u' => (v.to_string(), ""),
                    b'x' => (format!("{v:x}"), if s.alt && v != 0 { "0x" } else { "" }),
                    b'X' => (format!("{v:X}"), if s.alt && v != 0 { "0X" } else { "" }),
                    b'b' => (format!("{v:b}"), ""),
                    _ => (format!("{v:o}"), if s.alt && v != 0 { "0" } else { "" }),
                };
                int_out(out, &s, "", prefix, &digits, v == 0);
            }
            b'c' => {
                let v = args.next(4)? as u8;
                pad_out(out, &s, &[v]);
            }
            b'p' => {
                let v = args.next(8)?;
                let t = format!("0x{v:x}");
                pad_out(out, &s, t.as_bytes());
            }
            b's' => {
                let p = args.next(8)?;
                let mut text = if p == 0 {
                    b"(null)".to_vec()
                } else {
                    args.src
                        .cstr(p, s.prec.unwrap_or(MAX_STRING).min(MAX_STRING))?
                };
                if let Some(pr) = s.prec {
                    text.truncate(pr);
                }
                pad_out(out, &s, &text);
            }
            b'f' | b'F' | b'e' | b'E' | b'g' | b'G' | b'a' | b'A' => {
                let v = f64::from_bits(args.next(8)?);
                float_out(out, &s, conv, v);
            }
            b'n' => {
                args.next(8)?;
            }
            _ => out.extend_from_slice(&fmt[start..i]),
        }
    }
    Some(args.count)
}

fn pad_out(out: &mut Vec<u8>, s: &Spec, text: &[u8]) {
    let pad = s.width.saturating_sub(text.len());
    if !s.left {
        out.extend(std::iter::repeat_n(b' ', pad));
    }
    out.extend_from_slice(text);
    if s.left {
        out.extend(std::iter::repeat_n(b' ', pad));
    }
}

fn int_out(out: &mut Vec<u8>, s: &Spec, sign: &str, prefix: &str, digits: &str, zero: bool) {
    let mut body = String::new();
    match s.prec {
        Some(0) if zero => {}
        Some(p) => {
            body.extend(std::iter::repeat_n('0', p.saturating_sub(digits.len())));
            body.push_str(digits);
        }
        None => body.push_str(digits),
    }
    let len = sign.len() + prefix.len() + body.len();
    let pad = s.width.saturating_sub(len);
    if s.left {
        out.extend_from_slice(sign.as_bytes());
        out.extend_from_slice(prefix.as_bytes());
        out.extend_from_slice(body.as_bytes());
        out.extend(std::iter::repeat_n(b' ', pad));
    } else if s.zero && s.prec.is_none() {
        out.extend_from_slice(sign.as_bytes());
        out.extend_from_slice(prefix.as_bytes());
        out.extend(std::iter::repeat_n(b'0', pad));
        out.extend_from_slice(body.as_bytes());
    } else {
        out.extend(std::iter::repeat_n(b' ', pad));
        out.extend_from_slice(sign.as_bytes());
        out.extend_from_slice(prefix.as_bytes());
        out.extend_from_slice(body.as_bytes());
    }
}

/// `d.ddde±XX` with `prec` digits after the point.
fn exp_form(v: f64, prec: usize, upper: bool) -> String {
    let t = format!("{:.*e}", prec, v);
    let (mant, exp) = t.split_once('e').unwrap_or((&t, "0"));
    let e: i32 = exp.parse().unwrap_or(0);
    let sign = if e < 0 { '-' } else { '+' };
    let s = format!(
        "{mant}{}{sign}{:02}",
        if upper { 'E' } else { 'e' },
        e.abs()
    );
    s
}

fn strip_zeros(s: &mut String) {
    if let Some(dot) = s.find('.') {
        let end = s.find(['e', 'E']).unwrap_or(s.len());
        let (head, tail) = s.split_at(end);
        let mut head = head.to_string();
        if head.len() > dot {
            while head.ends_with('0') {
                head.pop();
            }
            if head.ends_with('.') {
                head.pop();
            }
        }
        *s = head + tail;
    }
}

fn float_out(out: &mut Vec<u8>, s: &Spec, conv: u8, v: f64) {
    let upper = conv.is_ascii_uppercase();
    let neg = v.is_sign_negative() && !v.is_nan();
    let a = v.abs();
    let sign = if neg {
        "-"
    } else if s.plus {
        "+"
    } else if s.space {
        " "
    } else {
        ""
    };
    let body = if !a.is_finite() {
        let t = if a.is_nan() { "nan" } else { "inf" };
        let t = if upper {
            t.to_uppercase()
        } else {
            t.to_string()
        };
        let sp = Spec { zero: false, ..*s };
        let full = format!("{sign}{t}");
        pad_out(out, &sp, full.as_bytes());
        return;
    } else {
        match conv.to_ascii_lowercase() {
            b'f' => {
                let mut t = format!("{:.*}", s.prec.unwrap_or(6), a);
                if s.alt && s.prec == Some(0) {
                    t.push('.');
                }
                t
            }
            b'e' => exp_form(a, s.prec.unwrap_or(6), upper),
            b'a' => {
                // Hexadecimal floats are rare; print the exact value in %e.
                exp_form(a, 13, upper)
            }
            _ => {
                let p = match s.prec {
                    Some(0) => 1,
                    Some(p) => p,
                    None => 6,
                };
                let x = if a == 0.0 {
                    0
                } else {
                    // The exponent after rounding to p significant digits.
                    let t = format!("{:.*e}", p - 1, a);
                    t.split_once('e')
                        .and_then(|(_, e)| e.parse::<i32>().ok())
                        .unwrap_or(0)
                };
                let mut t = if x < -4 || x >= p as i32 {
                    exp_form(a, p - 1, upper)
                } else {
                    format!("{:.*}", (p as i32 - 1 - x).max(0) as usize, a)
                };
                if !s.alt {
                    strip_zeros(&mut t);
                }
                t
            }
        }
    };
    let len = sign.len() + body.len();
    let pad = s.width.saturating_sub(len);
    if s.left {
        out.extend_from_slice(sign.as_bytes());
        out.extend_from_slice(body.as_bytes());
        out.extend(std::iter::repeat_n(b' ', pad));
    } else if s.zero {
        out.extend_from_slice(sign.as_bytes());
        out.extend(std::iter::repeat_n(b'0', pad));
        out.extend_from_slice(body.as_bytes());
    } else {
        out.extend(std::iter::repeat_n(b' ', pad));
        out.extend_from_slice(sign.as_bytes());
        out.extend_from_slice(body.as_bytes());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An argument buffer laid out as nvcc does, plus strings by address.
    struct Buf {
        bytes: Vec<u8>,
        strings: Vec<(u64, &'static str)>,
    }

    impl Buf {
        fn new() -> Self {
            Buf {
                bytes: Vec::new(),
                strings: Vec::new(),
            }
        }
        fn push(&mut self, v: u64, size: usize) -> &mut Self {
            while !self.bytes.len().is_multiple_of(size) {
                self.bytes.push(0);
            }
            self.bytes.extend_from_slice(&v.to_le_bytes()[..size]);
            self
        }
        fn int(&mut self, v: i32) -> &mut Self {
            self.push(v as u32 as u64, 4)
        }
        fn long(&mut self, v: i64) -> &mut Self {
            self.push(v as u64, 8)
        }
        fn dbl(&mut self, v: f64) -> &mut Self {
            self.push(v.to_bits(), 8)
        }
        fn str(&mut self, addr: u64, s: &'static str) -> &mut Self {
            self.strings.push((addr, s));
            self.push(addr, 8)
        }
    }

    impl PrintfSource for Buf {
        fn arg(&mut self, off: u64, size: u32) -> Option<u64> {
            let o = off as usize;
            let b = self.bytes.get(o..o + size as usize)?;
            let mut v = [0u8; 8];
            v[..b.len()].copy_from_slice(b);
            Some(u64::from_le_bytes(v))
        }
        fn cstr(&mut self, addr: u64, _max: usize) -> Option<Vec<u8>> {
            self.strings
                .iter()
                .find(|(a, _)| *a == addr)
                .map(|(_, s)| s.as_bytes().to_vec())
        }
    }

    fn fmt(f: &str, b: &mut Buf) -> String {
        let mut out = Vec::new();
        vprintf(f.as_bytes(), b, &mut out).unwrap();
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn conversions_like_c() {
        let mut b = Buf::new();
        b.int(42).dbl(1.5).str(0x100, "xy").long(-7);
        assert_eq!(
            fmt("a %d %f %s %lld %%\n", &mut b),
            "a 42 1.500000 xy -7 %\n"
        );
        let mut b = Buf::new();
        b.int(5).int(-5).int(255).int(255).int(8).int(97).int(3);
        assert_eq!(
            fmt("[%4d][%-4d][%04x][%#X][%o][%c][%+d]", &mut b),
            "[   5][-5  ][00ff][0XFF][10][a][+3]"
        );
        let mut b = Buf::new();
        b.dbl(12345.678)
            .dbl(0.0001)
            .dbl(100000.0)
            .dbl(1e-5)
            .dbl(-2.5)
            .dbl(0.0);
        assert_eq!(
            fmt("%e|%g|%g|%g|%8.2f|%g", &mut b),
            "1.234568e+04|0.0001|100000|1e-05|   -2.50|0"
        );
        let mut b = Buf::new();
        b.dbl(1234567.0).dbl(f64::INFINITY).dbl(f64::NAN).dbl(0.5);
        assert_eq!(fmt("%g %f %F %.0f", &mut b), "1.23457e+06 inf NAN 0");
        let mut b = Buf::new();
        b.long(-1).long(i64::MIN).push(u64::MAX, 8);
        assert_eq!(
            fmt("%lu %ld %llx", &mut b),
            "18446744073709551615 -9223372036854775808 ffffffffffffffff"
        );
        let mut b = Buf::new();
        b.str(0x10, "abcdef").str(0x20, "ab").int(6).int(-1);
        assert_eq!(fmt("%.3s|%5s|%*d", &mut b), "abc|   ab|    -1");
        let mut b = Buf::new();
        b.push(0, 8).push(0xdead, 8);
        assert_eq!(fmt("%s %p", &mut b), "(null) 0xdead");
        let mut b = Buf::new();
        b.int(-1).int(0x1_0041);
        assert_eq!(fmt("%hhd %hx", &mut b), "-1 41");
    }

    #[test]
    fn missing_arguments_fail() {
        let mut b = Buf::new();
        let mut out = Vec::new();
        assert!(vprintf(b"%d %d", &mut b, &mut out).is_none());
    }
}
