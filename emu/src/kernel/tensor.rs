//! Tensor-core instructions, each for the whole warp at once: `mma.sync`
//! and `wmma.mma`, `wmma.load`/`wmma.store`, `ldmatrix`/`stmatrix`,
//! `movmatrix`, and tf32 rounding. Fragments map to matrix elements through
//! [`FragSpec::index`]; these functions gather every lane's registers into whole
//! matrices, compute, and scatter the result to the active lanes.

use half::{bf16, f16};

use super::{lanes_of, Mem, Res};
use crate::ptx::ir::*;

fn reg(r: &[u64], s: R, lane: usize) -> u64 {
    r[s as usize * 32 + lane]
}

fn set(r: &mut [u64], s: R, lane: usize, v: u64) {
    r[s as usize * 32 + lane] = v;
}

fn ones(bits: u32) -> u64 {
    if bits >= 64 {
        u64::MAX
    } else {
        (1 << bits) - 1
    }
}

/// Element `j` of a register holding elements of type `el`.
fn field(v: u64, el: El, j: u32) -> u64 {
    let b = el.bits();
    if b == 64 {
        v
    } else {
        (v >> (j * b)) & ones(b)
    }
}

fn sext(x: u64, bits: u32) -> i64 {
    let s = 64 - bits;
    ((x << s) as i64) >> s
}

/// fp8 e4m3: bias 7, no infinities, S.1111.111 is NaN.
fn e4m3(x: u64) -> f64 {
    let (e, m) = ((x >> 3) & 15, (x & 7) as f64);
    let v = if e == 15 && x & 7 == 7 {
        f64::NAN
    } else if e == 0 {
        m * (-9f64).exp2()
    } else {
        (8.0 + m) * (e as f64 - 10.0).exp2()
    };
    if x & 0x80 != 0 {
        -v
    } else {
        v
    }
}

fn float_of(x: u64, el: El) -> f64 {
    match el {
        El::F16 => f16::from_bits(x as u16).to_f64(),
        El::BF16 => bf16::from_bits(x as u16).to_f64(),
        // The tensor cores read tf32's 19 bits and ignore the rest.
        El::Tf32 => f64::from(f32::from_bits(x as u32 & 0xFFFF_E000)),
        El::F32 => f64::from(f32::from_bits(x as u32)),
        El::F64 => f64::from_bits(x),
        El::E4m3 => e4m3(x),
        // e5m2 is the high byte of an f16.
        El::E5m2 => f16::from_bits((x as u16) << 8).to_f64(),
        _ => int_of(x, el) as f64,
    }
}

fn int_of(x: u64, el: El) -> i64 {
    match el {
        El::S8 | El::S4 | El::S32 => sext(x, el.bits()),
        _ => (x & ones(el.bits())) as i64,
    }
}

/// Gathers a whole matrix from the fragments of all 32 lanes. Where
/// fragments hold elements more than once, the last copy wins.
fn gather<T: Copy + Default>(
    r: &[u64],
    layout: FragLayout,
    f: Frag,
    shape: [u32; 3],
    el: El,
    regs: &[R],
    conv: impl Fn(u64) -> T,
) -> Vec<T> {
    let (rows, cols) = frag_dims(f, shape);
    let mut out = vec![T::default(); (rows * cols * layout.batches()) as usize];
    let spec = FragSpec {
        layout,
        f,
        shape,
        el,
        nregs: regs.len() as u32,
    };
    for lane in 0..32u32 {
        for (ri, &s) in regs.iter().enumerate() {
            let v = reg(r, s, lane as usize);
            for j in 0..el.per_reg() {
                let i = spec.index(lane, ri as u32, j);
                if let Some(o) = out.get_mut(i) {
                    *o = conv(field(v, el, j));
                }
            }
        }
    }
    out
}

/// Writes D (element bits in `d`) to the fragments of the active lanes.
fn scatter(r: &mut [u64], m: u32, op: &MmaOp, d: &[u64]) {
    let el = op.ty[3];
    let spec = FragSpec {
        layout: op.layout,
        f: Frag::C,
        shape: op.shape,
        el,
        nregs: op.d.len() as u32,
    };
    for lane in lanes_of(m) {
        for (ri, &s) in op.d.iter().enumerate() {
            let mut v = 0u64;
            for j in 0..el.per_reg() {
                let i = spec.index(lane as u32, ri as u32, j);
                let x = d.get(i).copied().unwrap_or(0) & ones(el.bits());
                v |= x << (j * el.bits());
            }
            set(r, s, lane, v);
        }
    }
}

/// D = A * B + C for the warp.
pub(super) fn mma(r: &mut [u64], m: u32, op: &MmaOp) {
    if m == 0 {
        return;
    }
    let [mm, nn, kk] = op.shape.map(|x| x as usize);
    let [ta, tb, tc, td] = op.ty;
    // Batch q of a quad-pair MMA: its matrices follow the previous ones'.
    let total = mm * nn * op.layout.batches() as usize;
    let split = |x: usize| {
        let (q, ij) = (x / (mm * nn), x % (mm * nn));
        (q * mm * kk, q * kk * nn, ij / nn, ij % nn)
    };
    let d: Vec<u64> = if ta.is_int() {
        let a = gather(r, op.layout, Frag::A, op.shape, ta, &op.a, |x| {
            int_of(x, ta)
        });
        let b = gather(r, op.layout, Frag::B, op.shape, tb, &op.b, |x| {
            int_of(x, tb)
        });
        let c = gather(r, op.layout, Frag::C, op.shape, tc, &op.c, |x| {
            int_of(x, tc)
        });
        (0..total)
            .map(|ij| {
                let (qa, qb, i, j) = split(ij);
                let dot: i64 = (0..kk)
                    .map(|k| {
                        let (x, y) = (a[qa + i * kk + k], b[qb + k * nn + j]);
                        match (ta, op.bop) {
                            (El::B1, BitOp::Xor) => x ^ y,
                            (El::B1, BitOp::And) => x & y,
                            _ => x * y,
                        }
                    })
                    .sum();
                let acc = c[ij] + dot;
                let v = if op.sat {
                    acc.clamp(i64::from(i32::MIN), i64::from(i32::MAX))
                } else {
                    acc
                };
                // Without .satfinite the sum wraps as s32 additions do.
                u64::from(v as i32 as u32)
            })
            .collect()
    } else {
        let a = gather(r, op.layout, Frag::A, op.shape, ta, &op.a, |x| {
            float_of(x, ta)
        });
        let b = gather(r, op.layout, Frag::B, op.shape, tb, &op.b, |x| {
            float_of(x, tb)
        });
        let c = gather(r, op.layout, Frag::C, op.shape, tc, &op.c, |x| {
            float_of(x, tc)
        });
        (0..total)
            .map(|ij| {
                let (qa, qb, i, j) = split(ij);
                let (a, b) = (&a[qa..], &b[qb..]);
                if td == El::F64 {
                    let v = (0..kk).fold(c[ij], |acc, k| a[i * kk + k].mul_add(b[k * nn + j], acc));
                    return v.to_bits();
                }
                // Products of f16, bf16, tf32 and fp8 values are exact in
                // f32 (at most 22 significant bits); the sums are f32.
                let mut acc = c[ij] as f32;
                for k in 0..kk {
                    acc += (a[i * kk + k] * b[k * nn + j]) as f32;
                }
                if op.sat && acc.is_infinite() {
                    let max = if td == El::F16 {
                        f16::MAX.to_f32()
                    } else {
                        f32::MAX
                    };
                    acc = max.copysign(acc);
                }
                match td {
                    El::F16 => u64::from(f16::from_f32(acc).to_bits()),
                    _ => u64::from(acc.to_bits()),
                }
            })
            .collect()
    };
    scatter(r, m, op, &d);
}

/// `wmma.load` / `wmma.store` for the active lanes, each with its own
/// address and stride (the same for all on any correct program).
pub(super) fn wmma_mem(
    r: &mut [u64],
    m: u32,
    op: &WmmaMem,
    mem: &mut Mem<'_, '_, '_>,
    lbase: u32,
) -> Res<()> {
    let (rows, cols) = frag_dims(op.frag, op.shape);
    let (el, bits) = (op.el, op.el.bits());
    let spec = FragSpec {
        layout: FragLayout::Wmma,
        f: op.frag,
        shape: op.shape,
        el,
        nregs: op.regs.len() as u32,
    };
    let add = if op.sp == Msp::Frame {
        (i64::from(lbase) + op.off) as u64
    } else {
        op.off as u64
    };
    for lane in lanes_of(m) {
        let base = if op.base == NONE {
            0
        } else {
            reg(r, op.base, lane)
        };
        let addr0 = base.wrapping_add(add);
        let stride = if op.stride != NONE {
            u64::from(reg(r, op.stride, lane) as u32)
        } else if op.col {
            u64::from(rows)
        } else {
            u64::from(cols)
        };
        for (ri, &s) in op.regs.iter().enumerate() {
            let mut v = if op.store { reg(r, s, lane) } else { 0 };
            for j in 0..el.per_reg() {
                let i = spec.index(lane as u32, ri as u32, j) as u64;
                let (row, col) = (i / u64::from(cols), i % u64::from(cols));
                let e = if op.col {
                    col.wrapping_mul(stride).wrapping_add(row)
                } else {
                    row.wrapping_mul(stride).wrapping_add(col)
                };
                let bit = e.wrapping_mul(u64::from(bits));
                let a = addr0.wrapping_add(bit / 8);
                if bits >= 8 {
                    let size = (bits / 8) as u8;
                    if op.store {
                        mem.store(op.sp, a, size, field(v, el, j), lane)?;
                    } else {
                        v |= mem.load(op.sp, a, size, lane)? << (j * bits);
                    }
                } else {
                    // Sub-byte elements (loads only: accumulators are wider).
                    let x = (mem.load(op.sp, a, 1, lane)? >> (bit % 8)) & ones(bits);
                    v |= x << (j * bits);
                }
            }
            if !op.store {
                set(r, s, lane, v);
            }
        }
    }
    Ok(())
}

/// Where lane `lane`'s element `h` (0 low, 1 high) of matrix `i` lies:
/// (row index among the 8n rows, column), transposed with `trans`.
fn ldm_pos(lane: usize, i: usize, h: usize, trans: bool) -> (usize, usize) {
    let (g, t) = (lane >> 2, lane & 3);
    if trans {
        (i * 8 + 2 * t + h, g)
    } else {
        (i * 8 + g, 2 * t + h)
    }
}

/// `ldmatrix` / `stmatrix`: lanes 0..8n give the addresses of the rows
/// (16 bytes, 16-byte aligned) of the n matrices.
#[allow(clippy::too_many_arguments)]
pub(super) fn ldmatrix(
    r: &mut [u64],
    m: u32,
    store: bool,
    trans: bool,
    n: u8,
    sp: Msp,
    regs: &[R; 4],
    base: R,
    off: i64,
    mem: &mut Mem<'_, '_, '_>,
    lbase: u32,
) -> Res<()> {
    // A guard false in every lane: no access at all.
    if m == 0 {
        return Ok(());
    }
    let n = usize::from(n).min(4);
    let add = if sp == Msp::Frame {
        (i64::from(lbase) + off) as u64
    } else {
        off as u64
    };
    let addr = |r: &[u64], src: usize| {
        let b = if base == NONE { 0 } else { reg(r, base, src) };
        b.wrapping_add(add)
    };
    let mut rows = [[0u16; 8]; 32];
    if store {
        for lane in 0..32 {
            for (i, &s) in regs.iter().take(n).enumerate() {
                let v = reg(r, s, lane);
                for h in 0..2 {
                    let (row, col) = ldm_pos(lane, i, h, trans);
                    rows[row][col] = (v >> (16 * h)) as u16;
                }
            }
        }
    }
    for (src, row) in rows.iter_mut().enumerate().take(8 * n) {
        let a = addr(r, src);
        if !a.is_multiple_of(16) {
            return Err(mem.fault(sp, a, 16, src));
        }
        for (c, x) in row.iter_mut().enumerate() {
            let ac = a.wrapping_add(2 * c as u64);
            if store {
                mem.store(sp, ac, 2, u64::from(*x), src)?;
            } else {
                *x = mem.load(sp, ac, 2, src)? as u16;
            }
        }
    }
    if !store {
        for lane in lanes_of(m) {
            for (i, &s) in regs.iter().take(n).enumerate() {
                let (r0, c0) = ldm_pos(lane, i, 0, trans);
                let (r1, c1) = ldm_pos(lane, i, 1, trans);
                let v = u64::from(rows[r0][c0]) | u64::from(rows[r1][c1]) << 16;
                set(r, s, lane, v);
            }
        }
    }
    Ok(())
}

/// `movmatrix.sync.aligned.m8n8.trans.b16`: the 8x8 matrix held as by
/// `ldmatrix` (lane 4 row + col / 2), transposed.
pub(super) fn movmatrix(r: &mut [u64], m: u32, d: R, a: R) {
    let mut mat = [[0u16; 8]; 8];
    for lane in 0..32 {
        let v = reg(r, a, lane);
        for h in 0..2 {
            let (row, col) = ldm_pos(lane, 0, h, false);
            mat[row][col] = (v >> (16 * h)) as u16;
        }
    }
    for lane in lanes_of(m) {
        let (r0, c0) = ldm_pos(lane, 0, 0, true);
        let (r1, c1) = ldm_pos(lane, 0, 1, true);
        set(
            r,
            d,
            lane,
            u64::from(mat[r0][c0]) | u64::from(mat[r1][c1]) << 16,
        );
    }
}

/// An f32 rounded to tf32 (`Rnd::Default` is `.rna`, ties away from zero).
pub(super) fn tf32(x: u32, rnd: Rnd, sat: bool) -> u32 {
    const LOW: u32 = 0x1FFF;
    if f32::from_bits(x).is_nan() {
        return (x & !LOW) | 0x0040_0000;
    }
    let v = match rnd {
        Rnd::Rz => x & !LOW,
        Rnd::Rn => x.wrapping_add(0xFFF + ((x >> 13) & 1)) & !LOW,
        _ => x.wrapping_add(0x1000) & !LOW,
    };
    if sat && v & 0x7FFF_FFFF == 0x7F80_0000 {
        return (v & 0x8000_0000) | 0x7F7F_E000;
    }
    v
}
