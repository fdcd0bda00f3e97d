//! Numeric semantics of PTX instructions that Rust does not give directly:
//! directed rounding, conversions with saturation, PTX min/max, bit fields.

// The width-generic macros cast every width to u64, including u64 itself.
#![allow(clippy::unnecessary_cast)]

use half::{bf16, f16};

use crate::ptx::ir::{Int1, Int2, Iw, Rnd};
use crate::ptx::Ty;

#[inline(always)]
pub(crate) fn f32v(x: u64) -> f32 {
    f32::from_bits(x as u32)
}

#[inline(always)]
pub(crate) fn f32b(x: f32) -> u64 {
    u64::from(x.to_bits())
}

#[inline(always)]
pub(crate) fn f64v(x: u64) -> f64 {
    f64::from_bits(x)
}

pub(crate) fn next_up32(x: f32) -> f32 {
    if x.is_nan() || x == f32::INFINITY {
        return x;
    }
    if x == 0.0 {
        return f32::from_bits(1);
    }
    let b = x.to_bits();
    f32::from_bits(if x > 0.0 { b + 1 } else { b - 1 })
}

pub(crate) fn next_down32(x: f32) -> f32 {
    -next_up32(-x)
}

pub(crate) fn next_up64(x: f64) -> f64 {
    if x.is_nan() || x == f64::INFINITY {
        return x;
    }
    if x == 0.0 {
        return f64::from_bits(1);
    }
    let b = x.to_bits();
    f64::from_bits(if x > 0.0 { b + 1 } else { b - 1 })
}

pub(crate) fn next_down64(x: f64) -> f64 {
    -next_up64(-x)
}

/// Adjusts a round-to-nearest result `r` toward the mode, given the sign of
/// `exact - r` (`err`: negative, zero or positive).
fn adjust64(r: f64, err: f64, rnd: Rnd) -> f64 {
    if err == 0.0 || err.is_nan() {
        return r;
    }
    match rnd {
        Rnd::Rz => {
            if r > 0.0 && err < 0.0 {
                next_down64(r)
            } else if r < 0.0 && err > 0.0 {
                next_up64(r)
            } else {
                r
            }
        }
        Rnd::Rm if err < 0.0 => next_down64(r),
        Rnd::Rp if err > 0.0 => next_up64(r),
        _ => r,
    }
}

/// Rounds an f64 to f32 in the given mode.
pub(crate) fn f64_to_f32(x: f64, rnd: Rnd) -> f32 {
    let r = x as f32;
    if !matches!(rnd, Rnd::Rz | Rnd::Rm | Rnd::Rp) || x.is_nan() || x.is_infinite() {
        return r;
    }
    let back = f64::from(r);
    if back == x {
        return r;
    }
    let toward_down = back > x;
    match rnd {
        Rnd::Rz if x > 0.0 && toward_down => next_down32(r),
        Rnd::Rz if x < 0.0 && !toward_down => next_up32(r),
        Rnd::Rm if toward_down => next_down32(r),
        Rnd::Rp if !toward_down => next_up32(r),
        _ => r,
    }
}

fn two_sum(a: f64, b: f64, s: f64) -> f64 {
    let bb = s - a;
    (a - (s - bb)) + (b - bb)
}

pub(crate) fn add64(a: f64, b: f64, rnd: Rnd) -> f64 {
    let s = a + b;
    if matches!(rnd, Rnd::Rz | Rnd::Rm | Rnd::Rp) && s.is_finite() {
        adjust64(s, two_sum(a, b, s), rnd)
    } else {
        s
    }
}

pub(crate) fn mul64(a: f64, b: f64, rnd: Rnd) -> f64 {
    let p = a * b;
    if matches!(rnd, Rnd::Rz | Rnd::Rm | Rnd::Rp) && p.is_finite() {
        adjust64(p, a.mul_add(b, -p), rnd)
    } else {
        p
    }
}

pub(crate) fn div64(a: f64, b: f64, rnd: Rnd) -> f64 {
    let q = a / b;
    if matches!(rnd, Rnd::Rz | Rnd::Rm | Rnd::Rp) && q.is_finite() && q != 0.0 {
        // a - q*b exactly; the error of q has the sign of that over b.
        let r = (-q).mul_add(b, a);
        adjust64(q, if b > 0.0 { r } else { -r }, rnd)
    } else {
        q
    }
}

pub(crate) fn sqrt64(a: f64, rnd: Rnd) -> f64 {
    let s = a.sqrt();
    if matches!(rnd, Rnd::Rz | Rnd::Rm | Rnd::Rp) && s.is_finite() && s > 0.0 {
        adjust64(s, (-s).mul_add(s, a), rnd)
    } else {
        s
    }
}

/// Flushes a subnormal f32 to a zero of the same sign.
#[inline(always)]
pub(crate) fn ftz32(x: f32) -> f32 {
    if x.is_subnormal() {
        f32::from_bits(x.to_bits() & 0x8000_0000)
    } else {
        x
    }
}

#[inline(always)]
pub(crate) fn sat32(x: f32) -> f32 {
    if x.is_nan() {
        0.0
    } else {
        x.clamp(0.0, 1.0)
    }
}

#[inline(always)]
pub(crate) fn sat64(x: f64) -> f64 {
    if x.is_nan() {
        0.0
    } else {
        x.clamp(0.0, 1.0)
    }
}

/// PTX `min`: a NaN operand yields the other; -0 is below +0.
#[inline(always)]
pub(crate) fn fmin<T: Copy + PartialOrd + Neg0>(a: T, b: T) -> T {
    if a.isnan() {
        return b;
    }
    if b.isnan() {
        return a;
    }
    if a == b {
        return if a.neg_sign() { a } else { b };
    }
    if a < b {
        a
    } else {
        b
    }
}

#[inline(always)]
pub(crate) fn fmax<T: Copy + PartialOrd + Neg0>(a: T, b: T) -> T {
    if a.isnan() {
        return b;
    }
    if b.isnan() {
        return a;
    }
    if a == b {
        return if a.neg_sign() { b } else { a };
    }
    if a > b {
        a
    } else {
        b
    }
}

pub(crate) trait Neg0 {
    fn isnan(self) -> bool;
    fn neg_sign(self) -> bool;
}

impl Neg0 for f32 {
    fn isnan(self) -> bool {
        self.is_nan()
    }
    fn neg_sign(self) -> bool {
        self.is_sign_negative()
    }
}

impl Neg0 for f64 {
    fn isnan(self) -> bool {
        self.is_nan()
    }
    fn neg_sign(self) -> bool {
        self.is_sign_negative()
    }
}

/// Rounds to an integral value (the `.rni` family), in f64.
pub(crate) fn round_int(x: f64, rnd: Rnd) -> f64 {
    match rnd {
        Rnd::Rni | Rnd::Rn => x.round_ties_even(),
        Rnd::Rmi | Rnd::Rm => x.floor(),
        Rnd::Rpi | Rnd::Rp => x.ceil(),
        _ => x.trunc(),
    }
}

/// Reads a register value of integer type `t` as an i128.
#[inline]
pub(crate) fn int_value(x: u64, t: Ty) -> i128 {
    match t {
        Ty::S8 => i128::from(x as i8),
        Ty::S16 => i128::from(x as i16),
        Ty::S32 => i128::from(x as i32),
        Ty::S64 => i128::from(x as i64),
        Ty::U8 | Ty::B8 => i128::from(x as u8),
        Ty::U16 | Ty::B16 | Ty::F16 | Ty::BF16 => i128::from(x as u16),
        Ty::U32 | Ty::B32 | Ty::F32 | Ty::F16x2 | Ty::BF16x2 => i128::from(x as u32),
        _ => i128::from(x),
    }
}

fn int_range(t: Ty) -> (i128, i128) {
    let bits = t.bits();
    if t.is_signed() {
        (-(1i128 << (bits - 1)), (1i128 << (bits - 1)) - 1)
    } else {
        (0, (1i128 << bits) - 1)
    }
}

/// Reads a float register of type `t` as an f64 (exactly).
#[inline]
pub(crate) fn float_value(x: u64, t: Ty) -> f64 {
    match t {
        Ty::F16 => f16::from_bits(x as u16).to_f64(),
        Ty::BF16 => bf16::from_bits(x as u16).to_f64(),
        Ty::F32 => f64::from(f32v(x)),
        _ => f64v(x),
    }
}

/// Rounds an f64 to the float type `t` in the given mode, as bits.
pub(crate) fn to_float_bits(v: f64, t: Ty, rnd: Rnd) -> u64 {
    match t {
        Ty::F64 => v.to_bits(),
        Ty::F32 => f32b(f64_to_f32(v, rnd)),
        Ty::F16 => u64::from(round_small(v, rnd, false)),
        Ty::BF16 => u64::from(round_small(v, rnd, true)),
        _ => 0,
    }
}

/// f64 → f16/bf16 bits with directed rounding.
fn round_small(v: f64, rnd: Rnd, brain: bool) -> u16 {
    let (r, back) = if brain {
        let r = bf16::from_f64(v);
        (r.to_bits(), r.to_f64())
    } else {
        let r = f16::from_f64(v);
        (r.to_bits(), r.to_f64())
    };
    if !matches!(rnd, Rnd::Rz | Rnd::Rm | Rnd::Rp) || v.is_nan() || back == v || v.is_infinite() {
        return r;
    }
    // Step one unit toward the wanted side: the bit pattern of a
    // sign-magnitude float moves away from zero when incremented.
    let up = |b: u16| {
        if b & 0x8000 == 0 {
            b + 1
        } else if b == 0x8000 {
            1
        } else {
            b - 1
        }
    };
    let down = |b: u16| {
        if b & 0x8000 != 0 {
            b + 1
        } else if b == 0 {
            0x8001
        } else {
            b - 1
        }
    };
    let too_big = back > v;
    match rnd {
        Rnd::Rz if v > 0.0 && too_big => down(r),
        Rnd::Rz if v < 0.0 && !too_big => up(r),
        Rnd::Rm if too_big => down(r),
        Rnd::Rp if !too_big => up(r),
        _ => r,
    }
}

/// `cvt` between any two scalar types.
pub(crate) fn cvt(x: u64, dt: Ty, st: Ty, rnd: Rnd, sat: bool, ftz: bool) -> u64 {
    let st_f = st.is_float();
    let dt_f = dt.is_float();
    match (dt_f, st_f) {
        (false, false) => {
            let v = int_value(x, st);
            if sat {
                let (lo, hi) = int_range(dt);
                v.clamp(lo, hi) as u64
            } else {
                v as u64
            }
        }
        (false, true) => {
            let mut f = float_value(x, st);
            if ftz && st == Ty::F32 && (f as f32).is_subnormal() {
                f = 0.0;
            }
            let r = round_int(f, rnd);
            if r.is_nan() {
                return 0;
            }
            let (lo, hi) = int_range(dt);
            // Float-to-integer conversions saturate.
            let v = if r <= lo as f64 {
                lo
            } else if r >= hi as f64 {
                hi
            } else {
                r as i128
            };
            v as u64
        }
        (true, false) => {
            let v = int_value(x, st);
            let r = match dt {
                Ty::F32 => {
                    let r = v as f32;
                    f32b(adjust_int_to_float32(r, v, rnd))
                }
                Ty::F64 => {
                    let r = v as f64;
                    adjust_int_to_float64(r, v, rnd).to_bits()
                }
                _ => to_float_bits(v as f64, dt, rnd),
            };
            if sat {
                let f = float_value(r, dt);
                to_float_bits(sat64(f), dt, Rnd::Rn)
            } else {
                r
            }
        }
        (true, true) => {
            let mut f = float_value(x, st);
            if ftz && st == Ty::F32 && (f as f32).is_subnormal() {
                f = if f < 0.0 { -0.0 } else { 0.0 };
            }
            let integral = matches!(rnd, Rnd::Rni | Rnd::Rzi | Rnd::Rmi | Rnd::Rpi);
            let mut r = if integral {
                let v = round_int(f, rnd);
                to_float_bits(v, dt, Rnd::Rn)
            } else if dt == st {
                x
            } else {
                to_float_bits(f, dt, rnd)
            };
            if dt == Ty::F32 && ftz && f32v(r).is_subnormal() {
                r = f32b(ftz32(f32v(r)));
            }
            if sat {
                let f = float_value(r, dt);
                r = to_float_bits(sat64(f), dt, Rnd::Rn);
            }
            r
        }
    }
}

fn adjust_int_to_float32(r: f32, v: i128, rnd: Rnd) -> f32 {
    if !matches!(rnd, Rnd::Rz | Rnd::Rm | Rnd::Rp) {
        return r;
    }
    let back = r as f64 as i128;
    if back == v {
        return r;
    }
    let too_big = back > v;
    match rnd {
        Rnd::Rz if v > 0 && too_big => next_down32(r),
        Rnd::Rz if v < 0 && !too_big => next_up32(r),
        Rnd::Rm if too_big => next_down32(r),
        Rnd::Rp if !too_big => next_up32(r),
        _ => r,
    }
}

fn adjust_int_to_float64(r: f64, v: i128, rnd: Rnd) -> f64 {
    if !matches!(rnd, Rnd::Rz | Rnd::Rm | Rnd::Rp) {
        return r;
    }
    let back = r as i128;
    if back == v {
        return r;
    }
    let too_big = back > v;
    match rnd {
        Rnd::Rz if v > 0 && too_big => next_down64(r),
        Rnd::Rz if v < 0 && !too_big => next_up64(r),
        Rnd::Rm if too_big => next_down64(r),
        Rnd::Rp if !too_big => next_up64(r),
        _ => r,
    }
}

macro_rules! by_width {
    ($w:expr, |$x:ident : $t:ident, $ut:ident| $body:expr) => {
        match $w {
            Iw::U8 => {
                type $t = u8;
                #[allow(dead_code)]
                type $ut = u8;
                $body
            }
            Iw::U16 => {
                type $t = u16;
                #[allow(dead_code)]
                type $ut = u16;
                $body
            }
            Iw::U32 => {
                type $t = u32;
                #[allow(dead_code)]
                type $ut = u32;
                $body
            }
            Iw::U64 => {
                type $t = u64;
                #[allow(dead_code)]
                type $ut = u64;
                $body
            }
            Iw::S8 => {
                type $t = i8;
                #[allow(dead_code)]
                type $ut = u8;
                $body
            }
            Iw::S16 => {
                type $t = i16;
                #[allow(dead_code)]
                type $ut = u16;
                $body
            }
            Iw::S32 => {
                type $t = i32;
                #[allow(dead_code)]
                type $ut = u32;
                $body
            }
            Iw::S64 => {
                type $t = i64;
                #[allow(dead_code)]
                type $ut = u64;
                $body
            }
        }
    };
}
pub(crate) use by_width;

/// A two-operand integer operation on one lane (used by tests and by the
/// rarely executed forms; the interpreter inlines the common ones).
pub(crate) fn int2(op: Int2, w: Iw, a: u64, b: u64) -> u64 {
    let bits = w.bits();
    by_width!(w, |x: T, U| {
        let x = a as T;
        let y = b as T;
        match op {
            Int2::Add => x.wrapping_add(y) as u64,
            Int2::Sub => x.wrapping_sub(y) as u64,
            Int2::AddSat => x.saturating_add(y) as u64,
            Int2::SubSat => x.saturating_sub(y) as u64,
            Int2::MulLo => x.wrapping_mul(y) as u64,
            Int2::MulHi => ((x as i128).wrapping_mul(y as i128) >> bits) as u64,
            Int2::MulWide => (x as i128).wrapping_mul(y as i128) as u64,
            Int2::Mul24Lo => {
                let (p, q) = (ext24(a, w.signed()), ext24(b, w.signed()));
                p.wrapping_mul(q) as u64
            }
            Int2::Mul24Hi => {
                let (p, q) = (ext24(a, w.signed()), ext24(b, w.signed()));
                (p.wrapping_mul(q) >> 16) as u64
            }
            Int2::Div => {
                if y == 0 {
                    U::MAX as u64
                } else {
                    x.wrapping_div(y) as u64
                }
            }
            Int2::Rem => {
                if y == 0 {
                    x as u64
                } else {
                    x.wrapping_rem(y) as u64
                }
            }
            Int2::Min => x.min(y) as u64,
            Int2::Max => x.max(y) as u64,
            Int2::And => (x & y) as u64,
            Int2::Or => (x | y) as u64,
            Int2::Xor => (x ^ y) as u64,
            Int2::Shl => {
                let s = b as u32;
                if s >= bits {
                    0
                } else {
                    (x << s) as u64
                }
            }
            Int2::Shr => {
                let s = (b as u32).min(bits - 1 + u32::from(!w.signed()));
                if s >= bits {
                    0
                } else {
                    (x >> s) as u64
                }
            }
        }
    })
}

fn ext24(x: u64, signed: bool) -> i64 {
    if signed {
        ((x as i64) << 40) >> 40
    } else {
        (x & 0xFF_FFFF) as i64
    }
}

pub(crate) fn int1(op: Int1, w: Iw, a: u64) -> u64 {
    let bits = w.bits();
    by_width!(w, |x: T, U| {
        let x = a as T;
        match op {
            Int1::Not => (!x) as u64,
            Int1::Neg => x.wrapping_neg() as u64,
            Int1::Abs => ((x as i128).unsigned_abs() as T) as u64,
            Int1::Popc => u64::from((x as U).count_ones()),
            Int1::Clz => u64::from((x as U).leading_zeros()),
            Int1::Brev => (x as U).reverse_bits() as u64,
            Int1::Cnot => u64::from(x == 0),
            Int1::Bfind | Int1::BfindShift => {
                // Most significant bit that differs from the sign (signed)
                // or that is set (unsigned).
                let v = if w.signed() && (x as i128) < 0 {
                    !(x as U)
                } else {
                    x as U
                };
                if v == 0 {
                    u64::from(u32::MAX)
                } else {
                    let msb = bits - 1 - v.leading_zeros();
                    if op == Int1::BfindShift {
                        u64::from(bits - 1 - msb)
                    } else {
                        u64::from(msb)
                    }
                }
            }
        }
    })
}

/// `bfe`: extract `len` bits at `pos`, sign-extended for signed types.
pub(crate) fn bfe(a: u64, pos: u64, len: u64, wide: bool, signed: bool) -> u64 {
    let bits: u64 = if wide { 64 } else { 32 };
    let a = if wide { a } else { a & 0xFFFF_FFFF };
    let pos = pos & 0xff;
    let len = len & 0xff;
    let msb = bits - 1;
    let sbit = if !signed || len == 0 {
        false
    } else {
        let at = (pos + len - 1).min(msb);
        (a >> at) & 1 == 1
    };
    let take = if pos > msb { 0 } else { len.min(bits - pos) };
    let val = if take == 0 {
        0
    } else {
        (a >> pos) & mask64(take)
    };
    let r = if sbit { val | !mask64(take) } else { val };
    if wide {
        r
    } else {
        r & 0xFFFF_FFFF
    }
}

/// `bfi`: insert the low `len` bits of `a` into `b` at `pos`.
pub(crate) fn bfi(a: u64, b: u64, pos: u64, len: u64, wide: bool) -> u64 {
    let bits: u64 = if wide { 64 } else { 32 };
    let pos = pos & 0xff;
    let len = len & 0xff;
    if pos >= bits || len == 0 {
        return b;
    }
    let take = len.min(bits - pos);
    let m = mask64(take) << pos;
    (b & !m) | ((a << pos) & m)
}

#[inline]
fn mask64(n: u64) -> u64 {
    if n >= 64 {
        u64::MAX
    } else {
        (1u64 << n) - 1
    }
}

/// `prmt` in each of its modes (0 = default selector nibbles).
pub(crate) fn prmt(a: u64, b: u64, c: u64, mode: u8) -> u64 {
    let tmp = ((b & 0xFFFF_FFFF) << 32) | (a & 0xFFFF_FFFF);
    let byte = |i: u64| (tmp >> ((i & 7) * 8)) & 0xff;
    if mode == 0 {
        let mut r = 0u64;
        for k in 0..4 {
            let sel = (c >> (4 * k)) & 0xf;
            let mut v = byte(sel & 7);
            if sel & 8 != 0 {
                v = if v & 0x80 != 0 { 0xff } else { 0 };
            }
            r |= v << (8 * k);
        }
        return r;
    }
    // Tables of source bytes for d.b3..d.b0, by c[1:0].
    const F4E: [[u64; 4]; 4] = [[3, 2, 1, 0], [4, 3, 2, 1], [5, 4, 3, 2], [6, 5, 4, 3]];
    const B4E: [[u64; 4]; 4] = [[5, 6, 7, 0], [6, 7, 0, 1], [7, 0, 1, 2], [0, 1, 2, 3]];
    const RC8: [[u64; 4]; 4] = [[0, 0, 0, 0], [1, 1, 1, 1], [2, 2, 2, 2], [3, 3, 3, 3]];
    const ECL: [[u64; 4]; 4] = [[3, 2, 1, 0], [3, 2, 1, 1], [3, 2, 2, 2], [3, 3, 3, 3]];
    const ECR: [[u64; 4]; 4] = [[0, 0, 0, 0], [1, 1, 1, 0], [2, 2, 1, 0], [3, 2, 1, 0]];
    const RC16: [[u64; 4]; 4] = [[1, 0, 1, 0], [3, 2, 3, 2], [1, 0, 1, 0], [3, 2, 3, 2]];
    let t = match mode {
        1 => &F4E,
        2 => &B4E,
        3 => &RC8,
        4 => &ECL,
        5 => &ECR,
        _ => &RC16,
    };
    let row = t[(c & 3) as usize];
    (byte(row[0]) << 24) | (byte(row[1]) << 16) | (byte(row[2]) << 8) | byte(row[3])
}

/// Funnel shift of the 64-bit value b:a.
pub(crate) fn shf(a: u64, b: u64, c: u64, left: bool, clamp: bool) -> u64 {
    let n = if clamp {
        (c as u32).min(32)
    } else {
        c as u32 & 31
    };
    let v = ((b & 0xFFFF_FFFF) << 32) | (a & 0xFFFF_FFFF);
    if left {
        ((v << n) >> 32) & 0xFFFF_FFFF
    } else {
        (v >> n) & 0xFFFF_FFFF
    }
}

pub(crate) fn lop3(a: u64, b: u64, c: u64, lut: u8) -> u64 {
    let mut r = 0u64;
    for k in 0..8u8 {
        if lut & (1 << k) != 0 {
            let x = if k & 4 != 0 { a } else { !a };
            let y = if k & 2 != 0 { b } else { !b };
            let z = if k & 1 != 0 { c } else { !c };
            r |= x & y & z;
        }
    }
    r & 0xFFFF_FFFF
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn integer_edges() {
        assert_eq!(int2(Int2::Add, Iw::S32, 0x7fff_ffff, 1) as u32, 0x8000_0000);
        assert_eq!(
            int2(Int2::AddSat, Iw::S32, 0x7fff_ffff, 1) as u32,
            0x7fff_ffff
        );
        assert_eq!(int2(Int2::MulHi, Iw::S32, -2i64 as u64, 3) as u32, u32::MAX);
        assert_eq!(int2(Int2::MulHi, Iw::U32, u64::from(u32::MAX), 2) as u32, 1);
        assert_eq!(int2(Int2::MulHi, Iw::U64, u64::MAX, u64::MAX), u64::MAX - 1);
        assert_eq!(int2(Int2::MulHi, Iw::S64, -1i64 as u64, 5), u64::MAX);
        assert_eq!(int2(Int2::MulWide, Iw::S32, -3i64 as u64, 5) as i64, -15);
        assert_eq!(
            int2(Int2::MulWide, Iw::U32, u64::from(u32::MAX), 2),
            0x1_FFFF_FFFE
        );
        assert_eq!(int2(Int2::Shr, Iw::S32, 0x8000_0000, 40) as u32, u32::MAX);
        assert_eq!(int2(Int2::Shr, Iw::U32, 0x8000_0000, 40) as u32, 0);
        assert_eq!(int2(Int2::Shr, Iw::S32, (-8i32) as u64, 1) as i32, -4);
        assert_eq!(int2(Int2::Shl, Iw::U32, 1, 32) as u32, 0);
        assert_eq!(
            int2(Int2::Div, Iw::S32, i32::MIN as u64, -1i64 as u64) as i32,
            i32::MIN
        );
        assert_eq!(int2(Int2::Rem, Iw::S32, -7i64 as u64, 3) as i32, -1);
        assert_eq!(int2(Int2::Div, Iw::U32, 7, 0) as u32, u32::MAX);
        assert_eq!(int2(Int2::Min, Iw::S32, -1i64 as u64, 1) as i32, -1);
        assert_eq!(int2(Int2::Min, Iw::U32, -1i64 as u64, 1) as u32, 1);
        assert_eq!(int2(Int2::Mul24Lo, Iw::U32, 0x100_0002, 3) as u32, 6);
        assert_eq!(int1(Int1::Clz, Iw::U32, 1), 31);
        assert_eq!(int1(Int1::Clz, Iw::U64, 1), 63);
        assert_eq!(int1(Int1::Popc, Iw::U64, u64::MAX), 64);
        assert_eq!(int1(Int1::Brev, Iw::U32, 1) as u32, 0x8000_0000);
        assert_eq!(int1(Int1::Bfind, Iw::U32, 0x10), 4);
        assert_eq!(int1(Int1::Bfind, Iw::U32, 0), 0xFFFF_FFFF);
        assert_eq!(int1(Int1::Bfind, Iw::S32, -1i64 as u64), 0xFFFF_FFFF);
        assert_eq!(int1(Int1::Bfind, Iw::S32, (-16i32) as u64), 3);
        assert_eq!(int1(Int1::BfindShift, Iw::U32, 0x10), 27);
        assert_eq!(int1(Int1::Abs, Iw::S32, i32::MIN as u64) as i32, i32::MIN);
    }

    #[test]
    fn bit_fields() {
        assert_eq!(bfe(0xF0, 4, 4, false, false), 0xF);
        assert_eq!(bfe(0xF0, 4, 4, false, true), 0xFFFF_FFFF);
        assert_eq!(bfe(0x70, 4, 4, false, true), 7);
        assert_eq!(bfe(0x8000_0000, 31, 8, false, true), 0xFFFF_FFFF);
        assert_eq!(bfe(0x8000_0000, 40, 8, false, true), 0xFFFF_FFFF);
        assert_eq!(bfe(0x8000_0000, 40, 8, false, false), 0);
        assert_eq!(bfe(0x1234, 0, 0, false, true), 0);
        assert_eq!(bfe(u64::MAX, 60, 8, true, false), 0xF);
        assert_eq!(bfi(0xF, 0, 4, 4, false), 0xF0);
        assert_eq!(
            bfi(0xFF, 0xFFFF_0000, 28, 8, false),
            0xFFFF_0000 | 0xF000_0000
        );
        assert_eq!(prmt(0x4433_2211, 0x8877_6655, 0x5140, 0), 0x6622_5511);
        assert_eq!(prmt(0x0000_0080, 0, 0x1118, 0), 0x0000_00ff);
        assert_eq!(shf(0x8000_0000, 1, 1, true, false), 3);
        assert_eq!(shf(1, 1, 1, false, false), 0x8000_0000);
        assert_eq!(shf(0, 5, 40, true, true), 0);
        assert_eq!(lop3(0xF0, 0xCC, 0xAA, 0x80), 0x80);
        assert_eq!(lop3(0xF0, 0xCC, 0xAA, 0x96), 0xF0 ^ 0xCC ^ 0xAA);
    }

    #[test]
    fn conversions() {
        // Saturating float-to-int, NaN to 0.
        assert_eq!(
            cvt(f32b(3.0e9), Ty::S32, Ty::F32, Rnd::Rzi, false, false) as i32,
            i32::MAX
        );
        assert_eq!(
            cvt(f32b(-1.5), Ty::U32, Ty::F32, Rnd::Rzi, false, false) as u32,
            0
        );
        assert_eq!(
            cvt(f32b(f32::NAN), Ty::S32, Ty::F32, Rnd::Rni, false, false),
            0
        );
        assert_eq!(
            cvt(f32b(2.5), Ty::S32, Ty::F32, Rnd::Rni, false, false) as i32,
            2
        );
        assert_eq!(
            cvt(f32b(-2.5), Ty::S32, Ty::F32, Rnd::Rmi, false, false) as i32,
            -3
        );
        assert_eq!(
            cvt(f32b(2.1), Ty::S32, Ty::F32, Rnd::Rpi, false, false) as i32,
            3
        );
        // Integer saturation and extension.
        assert_eq!(
            cvt(300, Ty::U8, Ty::S32, Rnd::Default, true, false) as u8,
            255
        );
        assert_eq!(
            cvt(-5i64 as u64, Ty::U8, Ty::S32, Rnd::Default, true, false) as u8,
            0
        );
        assert_eq!(
            cvt(0x80, Ty::S32, Ty::S8, Rnd::Default, false, false) as i32,
            -128
        );
        assert_eq!(
            cvt(0xFFFF_FFFF, Ty::U64, Ty::U32, Rnd::Default, false, false),
            0xFFFF_FFFF
        );
        assert_eq!(
            cvt(0xFFFF_FFFF, Ty::S64, Ty::S32, Rnd::Default, false, false),
            u64::MAX
        );
        assert_eq!(
            cvt(u64::MAX, Ty::S32, Ty::U64, Rnd::Default, true, false) as i32,
            i32::MAX
        );
        // Int to float with directed rounding.
        let big = (1u64 << 24) + 1;
        assert_eq!(
            f32v(cvt(big, Ty::F32, Ty::U64, Rnd::Rn, false, false)),
            16777216.0
        );
        assert_eq!(
            f32v(cvt(big, Ty::F32, Ty::U64, Rnd::Rp, false, false)),
            16777218.0
        );
        assert_eq!(
            f32v(cvt(big, Ty::F32, Ty::U64, Rnd::Rz, false, false)),
            16777216.0
        );
        // Float to float.
        let x = 1.0f64 + f64::EPSILON;
        assert_eq!(
            f32v(cvt(x.to_bits(), Ty::F32, Ty::F64, Rnd::Rp, false, false)),
            next_up32(1.0)
        );
        assert_eq!(
            f32v(cvt(x.to_bits(), Ty::F32, Ty::F64, Rnd::Rm, false, false)),
            1.0
        );
        assert_eq!(
            f32v(cvt(f32b(1.7), Ty::F32, Ty::F32, Rnd::Rzi, false, false)),
            1.0
        );
        assert_eq!(
            f32v(cvt(f32b(1.7), Ty::F32, Ty::F32, Rnd::Default, true, false)),
            1.0
        );
        assert_eq!(
            f32v(cvt(f32b(-0.5), Ty::F32, Ty::F32, Rnd::Default, true, false)),
            0.0
        );
        let h = cvt(f32b(1.0 / 3.0), Ty::F16, Ty::F32, Rnd::Rz, false, false) as u16;
        let hn = cvt(f32b(1.0 / 3.0), Ty::F16, Ty::F32, Rnd::Rn, false, false) as u16;
        assert!(f16::from_bits(h).to_f32() <= 1.0 / 3.0);
        assert_eq!(hn, f16::from_f32(1.0 / 3.0).to_bits());
        assert_eq!(
            f32v(cvt(
                u64::from(f16::from_f32(1.5).to_bits()),
                Ty::F32,
                Ty::F16,
                Rnd::Default,
                false,
                false
            )),
            1.5
        );
        let tiny = f32::from_bits(1);
        assert_eq!(
            f32v(cvt(f32b(tiny), Ty::F32, Ty::F32, Rnd::Default, false, true)),
            0.0
        );
    }

    #[test]
    fn float_rounding_and_minmax() {
        assert_eq!(add64(1.0, 1e-30, Rnd::Rp), next_up64(1.0));
        assert_eq!(add64(1.0, 1e-30, Rnd::Rz), 1.0);
        assert_eq!(add64(-1.0, -1e-30, Rnd::Rm), next_down64(-1.0));
        assert_eq!(add64(-1.0, -1e-30, Rnd::Rz), -1.0);
        assert_eq!(
            div64(1.0, 3.0, Rnd::Rp),
            next_up64(1.0 / 3.0).max(1.0 / 3.0)
        );
        assert!(div64(1.0, 3.0, Rnd::Rm) <= 1.0 / 3.0);
        assert_eq!(f64_to_f32(1e300, Rnd::Rz), f32::MAX);
        assert_eq!(f64_to_f32(1e300, Rnd::Rn), f32::INFINITY);
        assert_eq!(fmin(f32::NAN, 1.0f32), 1.0);
        assert_eq!(fmax(2.0f32, f32::NAN), 2.0);
        assert!(fmin(f32::NAN, f32::NAN).is_nan());
        assert!(fmin(0.0f32, -0.0).is_sign_negative());
        assert!(fmax(-0.0f32, 0.0).is_sign_positive());
    }
}
