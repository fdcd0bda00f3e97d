//! Rotation construction and the modified rotation: rotg, rotmg, rotm, as
//! the reference BLAS computes them.

use rcud_proto::math::blas::{dtype, Operand};

use super::elem::{dim, load, store, Elem, Vector};
use super::{Failure, INVALID_VALUE, NOT_SUPPORTED};
use crate::DeviceMemory;

/// Givens rotation of `(a, b)`: `(r, z, c, s)` with `[c s; -conj(s) c]
/// [a; b] = [r; 0]` (z, the reconstruction value, for real types only).
pub(crate) fn givens<T: Elem>(a: T, b: T) -> (T, T, f64, T) {
    if dtype::is_complex(T::DTYPE) {
        let abs = |v: T| v.norm_sqr().sqrt();
        let (aa, ab) = (abs(a), abs(b));
        if aa == 0.0 {
            return (b, b, 0.0, T::one());
        }
        let scale = aa + ab;
        let norm = scale * ((aa / scale).powi(2) + (ab / scale).powi(2)).sqrt();
        let unit = T::from_parts(a.re() / aa, a.im() / aa);
        let c = aa / norm;
        let s = unit * b.conj() * T::from_parts(1.0 / norm, 0.0);
        let r = unit * T::from_parts(norm, 0.0);
        return (r, b, c, s);
    }
    let (a, b) = (a.re(), b.re());
    let roe = if a.abs() > b.abs() { a } else { b };
    let scale = a.abs() + b.abs();
    if scale == 0.0 {
        let zero = T::zero();
        return (zero, zero, 1.0, zero);
    }
    let r = scale * ((a / scale).powi(2) + (b / scale).powi(2)).sqrt() * roe.signum();
    let (c, s) = (a / r, b / r);
    let z = if a.abs() > b.abs() {
        s
    } else if c != 0.0 {
        1.0 / c
    } else {
        1.0
    };
    (
        T::from_parts(r, 0.0),
        T::from_parts(z, 0.0),
        c,
        T::from_parts(s, 0.0),
    )
}

/// Modified Givens rotation of `(sqrt(d1) x1, sqrt(d2) y1)`: the new `d1`,
/// `d2`, `x1` and `param` (flag, h11, h21, h12, h22), as the reference
/// BLAS's rotmg computes them (rescaling by `gam` to keep `d1`, `d2` in
/// range).
pub(crate) fn modified_givens(d1: f64, d2: f64, x1: f64, y1: f64) -> ([f64; 3], [f64; 5]) {
    const GAM: f64 = 4096.0;
    const GAMSQ: f64 = GAM * GAM;
    const RGAMSQ: f64 = 1.0 / GAMSQ;
    let (mut d1, mut d2, mut x1) = (d1, d2, x1);
    let (mut h11, mut h12, mut h21, mut h22) = (0.0, 0.0, 0.0, 0.0);
    let mut flag;
    if d1 < 0.0 {
        flag = -1.0;
        d1 = 0.0;
        d2 = 0.0;
        x1 = 0.0;
    } else {
        let p2 = d2 * y1;
        if p2 == 0.0 {
            return ([d1, d2, x1], [-2.0, 0.0, 0.0, 0.0, 0.0]);
        }
        let p1 = d1 * x1;
        let q2 = p2 * y1;
        let q1 = p1 * x1;
        if q1.abs() > q2.abs() {
            h21 = -y1 / x1;
            h12 = p2 / p1;
            let u = 1.0 - h12 * h21;
            if u > 0.0 {
                flag = 0.0;
                d1 /= u;
                d2 /= u;
                x1 *= u;
            } else {
                flag = -1.0;
                (h11, h12, h21, h22) = (0.0, 0.0, 0.0, 0.0);
                d1 = 0.0;
                d2 = 0.0;
                x1 = 0.0;
            }
        } else if q2 < 0.0 {
            flag = -1.0;
            (h11, h12, h21, h22) = (0.0, 0.0, 0.0, 0.0);
            d1 = 0.0;
            d2 = 0.0;
            x1 = 0.0;
        } else {
            flag = 1.0;
            h11 = p1 / p2;
            h22 = x1 / y1;
            let u = 1.0 + h11 * h22;
            let temp = d2 / u;
            d2 = d1 / u;
            d1 = temp;
            x1 = y1 * u;
        }
        if d1 != 0.0 {
            while d1 <= RGAMSQ || d1 >= GAMSQ {
                fix_h(&mut flag, &mut h11, &mut h12, &mut h21, &mut h22);
                if d1 <= RGAMSQ {
                    d1 *= GAMSQ;
                    x1 /= GAM;
                    h11 /= GAM;
                    h12 /= GAM;
                } else {
                    d1 /= GAMSQ;
                    x1 *= GAM;
                    h11 *= GAM;
                    h12 *= GAM;
                }
            }
        }
        if d2 != 0.0 {
            while d2.abs() <= RGAMSQ || d2.abs() >= GAMSQ {
                fix_h(&mut flag, &mut h11, &mut h12, &mut h21, &mut h22);
                if d2.abs() <= RGAMSQ {
                    d2 *= GAMSQ;
                    h21 /= GAM;
                    h22 /= GAM;
                } else {
                    d2 /= GAMSQ;
                    h21 *= GAM;
                    h22 *= GAM;
                }
            }
        }
    }
    // Only the entries the flag says are stored are set, as in BLAS.
    let param = if flag < 0.0 {
        [flag, h11, h21, h12, h22]
    } else if flag == 0.0 {
        [flag, 0.0, h21, h12, 0.0]
    } else {
        [flag, h11, 0.0, 0.0, h22]
    };
    ([d1, d2, x1], param)
}

/// Makes `H`'s implied entries explicit (flag -1), once: the rescaling
/// that follows scales them.
fn fix_h(flag: &mut f64, h11: &mut f64, h12: &mut f64, h21: &mut f64, h22: &mut f64) {
    if *flag == 0.0 {
        *h11 = 1.0;
        *h22 = 1.0;
    } else if *flag > 0.0 {
        *h21 = -1.0;
        *h12 = 1.0;
    }
    *flag = -1.0;
}

/// The entries of rotmg's `param` that the flag says are stored (BLAS
/// leaves the others as they were).
pub(crate) fn param_entries(flag: f64) -> &'static [usize] {
    if flag == -2.0 {
        &[0]
    } else if flag < 0.0 {
        &[0, 1, 2, 3, 4]
    } else if flag == 0.0 {
        &[0, 2, 3]
    } else {
        &[0, 1, 4]
    }
}

/// Reads one value of `dt` at `ptr`.
fn read_one<T: Elem>(memory: &dyn DeviceMemory, ptr: u64, dt: u8) -> Result<T, Failure> {
    let size = dtype::size(dt).ok_or(Failure::Status(NOT_SUPPORTED))?;
    load::<T>(dt, memory.read(ptr, size)?)?
        .first()
        .copied()
        .ok_or(Failure::Status(INVALID_VALUE))
}

/// rotg (rotmg with `modified`): host inputs in `values` and outputs in the
/// reply, or everything at the device addresses `ptrs`.
pub(crate) fn rotg<T: Elem>(
    memory: &mut dyn DeviceMemory,
    modified: bool,
    values: [f64; 4],
    ptrs: [u64; 5],
) -> Result<Vec<u8>, Failure> {
    let dt = T::DTYPE;
    let device = ptrs[0] != 0;
    if modified {
        if dtype::is_complex(dt) {
            return Err(Failure::Status(NOT_SUPPORTED));
        }
        let inputs = if device {
            let mut v = [0.0; 4];
            for (slot, &ptr) in v.iter_mut().zip(&ptrs[..4]) {
                *slot = read_one::<T>(memory, ptr, dt)?.re();
            }
            v
        } else {
            values
        };
        // Rounded to the call's type first, as the library sees them.
        let r = |v: f64| T::from_parts(v, 0.0).re();
        let ([d1, d2, x1], param) =
            modified_givens(r(inputs[0]), r(inputs[1]), r(inputs[2]), r(inputs[3]));
        let out: Vec<T> = [d1, d2, x1]
            .iter()
            .chain(&param)
            .map(|&v| T::from_parts(v, 0.0))
            .collect();
        if !device {
            return store(dt, &out);
        }
        for (v, &ptr) in out[..3].iter().zip(&ptrs[..3]) {
            memory.write(ptr, &store(dt, &[*v])?)?;
        }
        let size = dtype::size(dt).ok_or(Failure::Status(NOT_SUPPORTED))?;
        for &i in param_entries(param[0]) {
            let at = ptrs[4]
                .checked_add(i as u64 * size)
                .ok_or(Failure::Status(INVALID_VALUE))?;
            memory.write(at, &store(dt, &[out[3 + i]])?)?;
        }
        return Ok(Vec::new());
    }
    let (a, b): (T, T) = if device {
        (
            read_one(memory, ptrs[0], dt)?,
            read_one(memory, ptrs[1], dt)?,
        )
    } else {
        (
            T::from_parts(values[0], values[1]),
            T::from_parts(values[2], values[3]),
        )
    };
    let (r, z, c, s) = givens(a, b);
    let c = store(T::REAL_DTYPE, &[T::from_parts(c, 0.0)])?;
    if !device {
        let mut out = store(dt, &[r, z])?;
        out.extend_from_slice(&c);
        out.extend_from_slice(&store(dt, &[s])?);
        return Ok(out);
    }
    memory.write(ptrs[0], &store(dt, &[r])?)?;
    memory.write(ptrs[1], &store(dt, &[z])?)?;
    memory.write(ptrs[2], &c)?;
    memory.write(ptrs[3], &store(dt, &[s])?)?;
    Ok(Vec::new())
}

/// rotm: `[x_i; y_i] = H [x_i; y_i]` with `H` from `param` (host values,
/// or at `param_ptr` in device pointer mode).
pub(crate) fn rotm<T: Elem>(
    memory: &mut dyn DeviceMemory,
    n: i64,
    x: Operand,
    y: Operand,
    param: [f64; 5],
    param_ptr: u64,
) -> Result<Vec<u8>, Failure> {
    let dt = T::DTYPE;
    if dtype::is_complex(dt) {
        return Err(Failure::Status(NOT_SUPPORTED));
    }
    let n = dim(n.max(0))?;
    let param = if param_ptr != 0 {
        let size = dtype::size(dt).ok_or(Failure::Status(NOT_SUPPORTED))?;
        let v = load::<T>(dt, memory.read(param_ptr, 5 * size)?)?;
        let mut p = [0.0; 5];
        for (slot, value) in p.iter_mut().zip(v) {
            *slot = value.re();
        }
        p
    } else {
        param
    };
    let [flag, h11, h21, h12, h22] = param;
    // flag -2 is the identity; BLAS returns before touching x and y.
    if n == 0 || flag == -2.0 {
        return Ok(Vec::new());
    }
    let (h11, h12, h21, h22) = if flag < 0.0 {
        (h11, h12, h21, h22)
    } else if flag == 0.0 {
        (1.0, h12, h21, 1.0)
    } else {
        (h11, 1.0, -1.0, h22)
    };
    let mut xv = Vector::<T>::read(memory, dt, x, n)?;
    let mut yv = Vector::<T>::read(memory, dt, y, n)?;
    let h = |v: f64| T::from_parts(v, 0.0);
    for i in 0..n {
        let (w, z) = (xv.get(i), yv.get(i));
        xv.set(i, w * h(h11) + z * h(h12));
        yv.set(i, w * h(h21) + z * h(h22));
    }
    xv.write(memory, dt, x.ptr)?;
    yv.write(memory, dt, y.ptr)?;
    Ok(Vec::new())
}
