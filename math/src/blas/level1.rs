//! BLAS level 1: vector operations.

use rcud_proto::math::blas::{level1 as op, Operand, Scalar};

use super::elem::{dim, scalar, store, Elem, Vector};
use super::{Failure, INVALID_VALUE};
use crate::DeviceMemory;

/// `CUDA_R_64I`.
const R64I: u8 = 24;

pub(crate) struct Args {
    pub(crate) op: u8,
    pub(crate) scalar_dtype: u8,
    pub(crate) n: i64,
    pub(crate) x: Operand,
    pub(crate) y: Operand,
    pub(crate) alpha: Scalar,
    pub(crate) beta: Scalar,
    pub(crate) result: u64,
}

/// Runs a level-1 operation; a reduction answers its result's bytes in
/// host pointer mode, or writes them to `result` in device pointer mode.
pub(crate) fn run<T: Elem>(memory: &mut dyn DeviceMemory, a: Args) -> Result<Vec<u8>, Failure> {
    // cuBLAS answers 0 (and index 0) for n <= 0 rather than an error.
    let n = dim(a.n.max(0))?;
    let dt = T::DTYPE;
    let reduction = |memory: &mut dyn DeviceMemory, bytes: Vec<u8>| -> Result<Vec<u8>, Failure> {
        if a.result != 0 {
            memory.write(a.result, &bytes)?;
            Ok(Vec::new())
        } else {
            Ok(bytes)
        }
    };
    match a.op {
        op::AXPY => {
            let alpha: T = scalar(memory, a.alpha, dt)?;
            // An increment of 0 is cuBLAS's too: x broadcasts its one
            // element; y accumulates into one, in index order.
            let x = Vector::<T>::read_or_broadcast(memory, dt, a.x, n)?;
            let mut y = Vector::<T>::read_or_broadcast(memory, dt, a.y, n)?;
            for i in 0..n {
                y.set(i, alpha * x.get(i) + y.get(i));
            }
            y.write(memory, dt, a.y.ptr)?;
            Ok(Vec::new())
        }
        op::SCAL => {
            let alpha: T = scalar(memory, a.alpha, a.scalar_dtype)?;
            let mut x = Vector::<T>::read(memory, dt, a.x, n)?;
            for i in 0..n {
                x.set(i, alpha * x.get(i));
            }
            x.write(memory, dt, a.x.ptr)?;
            Ok(Vec::new())
        }
        op::DOTU | op::DOTC => {
            let x = Vector::<T>::read(memory, dt, a.x, n)?;
            let y = Vector::<T>::read(memory, dt, a.y, n)?;
            let conj = a.op == op::DOTC;
            let mut sum = T::zero();
            for i in 0..n {
                let xi = if conj { x.get(i).conj() } else { x.get(i) };
                sum = sum + xi * y.get(i);
            }
            reduction(memory, store(dt, &[sum])?)
        }
        op::NRM2 | op::ASUM => {
            let x = Vector::<T>::read(memory, dt, a.x, n)?;
            // Accumulated in f64: within the library's accuracy for both
            // precisions, and without the overflow a naive f32 sum of
            // squares would have.
            let value = if a.op == op::NRM2 {
                (0..n).map(|i| x.get(i).norm_sqr()).sum::<f64>().sqrt()
            } else {
                (0..n).map(|i| x.get(i).abs1()).sum::<f64>()
            };
            reduction(memory, store(T::REAL_DTYPE, &[value])?)
        }
        op::AMAX | op::AMIN => {
            let x = Vector::<T>::read(memory, dt, a.x, n)?;
            let mut best: Option<(usize, f64)> = None;
            for i in 0..n {
                let v = x.get(i).abs1();
                let better = match best {
                    None => true,
                    Some((_, b)) if a.op == op::AMAX => v > b,
                    Some((_, b)) => v < b,
                };
                if better {
                    best = Some((i, v));
                }
            }
            // 1-based, as Fortran BLAS; 0 for an empty vector.
            // `scalar_dtype` names the result's integer type: CUDA_R_64I
            // for the `_64` forms' int64_t, else int.
            let index = best.map_or(0, |(i, _)| i as i64 + 1);
            let bytes = if a.scalar_dtype == R64I {
                index.to_le_bytes().to_vec()
            } else {
                (index as i32).to_le_bytes().to_vec()
            };
            reduction(memory, bytes)
        }
        op::COPY => {
            let x = Vector::<T>::read(memory, dt, a.x, n)?;
            let mut y = Vector::<T>::read(memory, dt, a.y, n)?;
            for i in 0..n {
                y.set(i, x.get(i));
            }
            y.write(memory, dt, a.y.ptr)?;
            Ok(Vec::new())
        }
        op::SWAP => {
            let mut x = Vector::<T>::read(memory, dt, a.x, n)?;
            let mut y = Vector::<T>::read(memory, dt, a.y, n)?;
            for i in 0..n {
                let t = x.get(i);
                x.set(i, y.get(i));
                y.set(i, t);
            }
            x.write(memory, dt, a.x.ptr)?;
            y.write(memory, dt, a.y.ptr)?;
            Ok(Vec::new())
        }
        op::ROT => {
            let c: T = scalar(memory, a.alpha, T::REAL_DTYPE)?;
            let s: T = scalar(memory, a.beta, a.scalar_dtype)?;
            let mut x = Vector::<T>::read(memory, dt, a.x, n)?;
            let mut y = Vector::<T>::read(memory, dt, a.y, n)?;
            for i in 0..n {
                let (xi, yi) = (x.get(i), y.get(i));
                x.set(i, c * xi + s * yi);
                y.set(i, c * yi - s.conj() * xi);
            }
            x.write(memory, dt, a.x.ptr)?;
            y.write(memory, dt, a.y.ptr)?;
            Ok(Vec::new())
        }
        _ => Err(Failure::Status(INVALID_VALUE)),
    }
}
