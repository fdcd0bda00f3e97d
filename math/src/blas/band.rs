//! BLAS level 2 on banded and packed storage (gbmv, sbmv/hbmv, spmv/hpmv,
//! tbmv/tbsv, tpmv/tpsv) and the symmetric/Hermitian rank updates (syr/her,
//! syr2/her2, spr/hpr, spr2/hpr2).
//!
//! The stored elements are read as one range (a banded matrix spans
//! `lda * (n - 1) + band` elements, a packed one `n (n + 1) / 2`) and
//! addressed through [`Stored`], which knows for each column the rows that
//! may be non-zero, so that work is proportional to the band, not `n^2`.

use std::ops::Range;

use rcud_proto::math::blas::{dtype, level2 as kind, Operand, Scalar};

use super::elem::{dim, load, mul, scalar, store, Elem, Vector};
use super::{one_of, Failure, INVALID_VALUE, LOWER, NOT_SUPPORTED, OP_C, OP_N, OP_T, UNIT, UPPER};
use crate::DeviceMemory;

/// How `A`'s elements are laid out.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Layout {
    /// Dense column-major with leading dimension `ld`.
    Dense { ld: usize },
    /// General banded: `kl` sub- and `ku` superdiagonals, `A(i, j)` at
    /// `ku + i - j + j * ld`.
    General { kl: usize, ku: usize, ld: usize },
    /// One triangle of a band of width `k`: upper at `k + i - j + j * ld`,
    /// lower at `i - j + j * ld`.
    Band { k: usize, ld: usize },
    /// One triangle packed column by column.
    Packed,
}

/// What `A` is besides its storage.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Shape {
    General,
    /// Symmetric, or Hermitian (the diagonal's imaginary part taken as 0).
    Symmetric {
        hermitian: bool,
    },
    /// Triangular, with a unit diagonal that is not read if `unit`.
    Triangular {
        unit: bool,
    },
}

/// A banded, packed or dense matrix as read from device memory.
struct Stored<T> {
    data: Vec<T>,
    layout: Layout,
    shape: Shape,
    upper: bool,
    m: usize,
    n: usize,
}

/// Elements of `n (n + 1) / 2`, checked.
fn packed_len(n: usize) -> Result<usize, Failure> {
    Ok(mul(n, n.checked_add(1).ok_or(Failure::Status(INVALID_VALUE))?)? / 2)
}

/// Reads `elements` of `T` at `ptr`.
fn read_elements<T: Elem>(
    memory: &dyn DeviceMemory,
    ptr: u64,
    elements: usize,
) -> Result<Vec<T>, Failure> {
    let size = dtype::size(T::DTYPE).ok_or(Failure::Status(NOT_SUPPORTED))? as usize;
    let bytes = mul(elements, size)?;
    if bytes == 0 {
        return Ok(Vec::new());
    }
    load(T::DTYPE, memory.read(ptr, bytes as u64)?)
}

impl<T: Elem> Stored<T> {
    /// Reads the stored elements of an `m` x `n` matrix at `ptr`.
    fn read(
        memory: &dyn DeviceMemory,
        ptr: u64,
        (layout, shape, upper): (Layout, Shape, bool),
        m: usize,
        n: usize,
    ) -> Result<Self, Failure> {
        let elements = if m == 0 || n == 0 {
            0
        } else {
            let last = match layout {
                Layout::Dense { .. } => m,
                Layout::General { kl, ku, ld } => (kl + ku + 1).min(ld),
                Layout::Band { k, ld } => (k + 1).min(ld),
                Layout::Packed => 0,
            };
            match layout {
                Layout::Packed => packed_len(n)?,
                Layout::Dense { ld } | Layout::General { ld, .. } | Layout::Band { ld, .. } => {
                    mul(ld, n - 1)?
                        .checked_add(last)
                        .ok_or(Failure::Status(INVALID_VALUE))?
                }
            }
        };
        Ok(Self {
            data: read_elements(memory, ptr, elements)?,
            layout,
            shape,
            upper,
            m,
            n,
        })
    }

    /// Writes the elements back: a dense matrix column by column, so that
    /// the rows between columns are not touched.
    fn write(&self, memory: &mut dyn DeviceMemory, ptr: u64) -> Result<(), Failure> {
        if self.data.is_empty() {
            return Ok(());
        }
        match self.layout {
            Layout::Dense { ld } if ld > self.m => {
                let size = dtype::size(T::DTYPE).ok_or(Failure::Status(NOT_SUPPORTED))?;
                for j in 0..self.n {
                    let column = store(T::DTYPE, &self.data[j * ld..j * ld + self.m])?;
                    let at = (j as u64)
                        .checked_mul(ld as u64 * size)
                        .and_then(|o| ptr.checked_add(o))
                        .ok_or(Failure::Status(INVALID_VALUE))?;
                    memory.write(at, &column)?;
                }
                Ok(())
            }
            _ => Ok(memory.write(ptr, &store(T::DTYPE, &self.data)?)?),
        }
    }

    /// Whether `(i, j)` is in the stored triangle.
    fn in_triangle(&self, i: usize, j: usize) -> bool {
        if self.upper {
            i <= j
        } else {
            i >= j
        }
    }

    /// Index in `data` of stored element `(i, j)` (in the band and, but for
    /// a general matrix, in the stored triangle).
    fn index(&self, i: usize, j: usize) -> usize {
        match self.layout {
            Layout::Dense { ld } => i + j * ld,
            Layout::General { ku, ld, .. } => ku + i - j + j * ld,
            Layout::Band { k, ld } if self.upper => k + i - j + j * ld,
            Layout::Band { ld, .. } => i - j + j * ld,
            Layout::Packed if self.upper => i + j * (j + 1) / 2,
            Layout::Packed => i + (2 * self.n - j - 1) * j / 2,
        }
    }

    /// The rows of column `j` of the stored triangle (all stored rows of a
    /// general matrix).
    fn stored_rows(&self, j: usize) -> Range<usize> {
        let (below, above) = match self.layout {
            Layout::General { kl, ku, .. } => {
                return j.saturating_sub(ku)..(j + kl + 1).min(self.m);
            }
            Layout::Band { k, .. } => (k, k),
            Layout::Dense { .. } | Layout::Packed => (self.n, self.n),
        };
        if self.upper {
            j.saturating_sub(above)..j + 1
        } else {
            j..(j + below + 1).min(self.n)
        }
    }

    /// The rows of column `j` of the full matrix that may be non-zero.
    fn rows(&self, j: usize) -> Range<usize> {
        match (self.shape, self.layout) {
            (Shape::Symmetric { .. }, Layout::Band { k, .. }) => {
                j.saturating_sub(k)..(j + k + 1).min(self.n)
            }
            (Shape::Symmetric { .. }, _) => 0..self.n,
            _ => self.stored_rows(j),
        }
    }

    /// `A(i, j)` for `i` in [`Self::rows`]`(j)`.
    fn get(&self, i: usize, j: usize) -> T {
        match self.shape {
            Shape::General => self.data[self.index(i, j)],
            Shape::Triangular { unit } => {
                if unit && i == j {
                    T::one()
                } else {
                    self.data[self.index(i, j)]
                }
            }
            Shape::Symmetric { hermitian } => {
                if hermitian && i == j {
                    T::from_parts(self.data[self.index(i, i)].re(), 0.0)
                } else if self.in_triangle(i, j) {
                    self.data[self.index(i, j)]
                } else if hermitian {
                    self.data[self.index(j, i)].conj()
                } else {
                    self.data[self.index(j, i)]
                }
            }
        }
    }
}

/// `op(A)(i, j)` given `A(j, i)` for the transposed forms.
fn op_value<T: Elem>(v: T, trans: i32) -> T {
    if trans == OP_C {
        v.conj()
    } else {
        v
    }
}

/// `op(A) x` over the non-zero elements.
fn product<T: Elem>(a: &Stored<T>, trans: i32, x: &[T]) -> Vec<T> {
    if trans == OP_N {
        let mut out = vec![T::zero(); a.m];
        for (j, &xj) in x.iter().enumerate().take(a.n) {
            for i in a.rows(j) {
                out[i] = out[i] + a.get(i, j) * xj;
            }
        }
        out
    } else {
        (0..a.n)
            .map(|j| {
                a.rows(j)
                    .fold(T::zero(), |s, i| s + op_value(a.get(i, j), trans) * x[i])
            })
            .collect()
    }
}

/// Solves `op(A) x = b` in place for a triangular `A`, over its band.
fn solve<T: Elem>(a: &Stored<T>, trans: i32, x: &mut [T]) {
    let n = a.n;
    match (trans == OP_N, a.upper) {
        // Column sweeps: x_j final, then eliminated from the other rows.
        (true, false) => {
            for j in 0..n {
                x[j] = x[j] / a.get(j, j);
                for i in a.rows(j).filter(|&i| i > j) {
                    x[i] = x[i] - a.get(i, j) * x[j];
                }
            }
        }
        (true, true) => {
            for j in (0..n).rev() {
                x[j] = x[j] / a.get(j, j);
                for i in a.rows(j).filter(|&i| i < j) {
                    x[i] = x[i] - a.get(i, j) * x[j];
                }
            }
        }
        // Row `j` of op(A) is column `j` of A: dot products.
        (false, upper) => {
            let order: Box<dyn Iterator<Item = usize>> = if upper {
                Box::new(0..n)
            } else {
                Box::new((0..n).rev())
            };
            for j in order {
                let mut v = x[j];
                for i in a.rows(j).filter(|&i| i != j) {
                    v = v - op_value(a.get(i, j), trans) * x[i];
                }
                x[j] = v / op_value(a.get(j, j), trans);
            }
        }
    }
}

/// The arguments of [`banded`] (one `Call::Banded`).
pub(crate) struct BandArgs {
    pub(crate) kind: u8,
    pub(crate) hermitian: bool,
    pub(crate) uplo: i32,
    pub(crate) trans: i32,
    pub(crate) diag: i32,
    pub(crate) m: i64,
    pub(crate) n: i64,
    pub(crate) kl: i64,
    pub(crate) k: i64,
    pub(crate) alpha: Scalar,
    pub(crate) a: Operand,
    pub(crate) x: Operand,
    pub(crate) beta: Scalar,
    pub(crate) y: Operand,
}

/// gbmv, sbmv/hbmv, spmv/hpmv, tbmv/tbsv, tpmv/tpsv.
pub(crate) fn banded<T: Elem>(
    memory: &mut dyn DeviceMemory,
    b: BandArgs,
) -> Result<Vec<u8>, Failure> {
    let complex = dtype::is_complex(T::DTYPE);
    if b.hermitian && !complex {
        return Err(Failure::Status(INVALID_VALUE));
    }
    let triangular = matches!(b.kind, kind::TBMV | kind::TBSV | kind::TPMV | kind::TPSV);
    let n = dim(b.n)?;
    let (m, trans, upper, unit) = match b.kind {
        kind::GBMV => (
            dim(b.m)?,
            one_of(b.trans, &[OP_N, OP_T, OP_C])?,
            false,
            false,
        ),
        kind::SBMV | kind::SPMV => (n, OP_N, one_of(b.uplo, &[LOWER, UPPER])? == UPPER, false),
        kind::TBMV | kind::TBSV | kind::TPMV | kind::TPSV => (
            n,
            one_of(b.trans, &[OP_N, OP_T, OP_C])?,
            one_of(b.uplo, &[LOWER, UPPER])? == UPPER,
            one_of(b.diag, &[0, UNIT])? == UNIT,
        ),
        _ => return Err(Failure::Status(INVALID_VALUE)),
    };
    let ld = || dim(b.a.ld);
    let layout = match b.kind {
        kind::GBMV => {
            let (kl, ku) = (dim(b.kl)?, dim(b.k)?);
            let ld = ld()?;
            if ld < kl + ku + 1 {
                return Err(Failure::Status(INVALID_VALUE));
            }
            Layout::General { kl, ku, ld }
        }
        kind::SBMV | kind::TBMV | kind::TBSV => {
            let k = dim(b.k)?;
            let ld = ld()?;
            if ld < k + 1 {
                return Err(Failure::Status(INVALID_VALUE));
            }
            Layout::Band { k, ld }
        }
        _ => Layout::Packed,
    };
    if b.x.ld == 0 || (!triangular && b.y.ld == 0) {
        return Err(Failure::Status(INVALID_VALUE));
    }
    let shape = match b.kind {
        kind::GBMV => Shape::General,
        kind::SBMV | kind::SPMV => Shape::Symmetric {
            hermitian: b.hermitian,
        },
        _ => Shape::Triangular { unit },
    };
    let dt = T::DTYPE;
    let (alpha, beta): (T, T) = if triangular {
        (T::one(), T::zero())
    } else {
        (scalar(memory, b.alpha, dt)?, scalar(memory, b.beta, dt)?)
    };
    if m == 0 || n == 0 {
        return Ok(Vec::new());
    }
    let a = Stored::<T>::read(memory, b.a.ptr, (layout, shape, upper), m, n)?;
    let (len_x, len_y) = if trans == OP_N { (n, m) } else { (m, n) };
    let xv = Vector::<T>::read(memory, dt, b.x, len_x)?;
    let x: Vec<T> = (0..len_x).map(|i| xv.get(i)).collect();
    if triangular {
        let out = if matches!(b.kind, kind::TBSV | kind::TPSV) {
            let mut x = x;
            solve(&a, trans, &mut x);
            x
        } else {
            product(&a, trans, &x)
        };
        let mut xv = xv;
        for (i, v) in out.into_iter().enumerate() {
            xv.set(i, v);
        }
        xv.write(memory, dt, b.x.ptr)?;
        return Ok(Vec::new());
    }
    let mut yv = Vector::<T>::read(memory, dt, b.y, len_y)?;
    let p = product(&a, trans, &x);
    for (i, v) in p.into_iter().enumerate() {
        // beta = 0 ignores y, as in BLAS.
        let old = if beta == T::zero() {
            T::zero()
        } else {
            beta * yv.get(i)
        };
        yv.set(i, alpha * v + old);
    }
    yv.write(memory, dt, b.y.ptr)?;
    Ok(Vec::new())
}

/// The arguments of [`rank`] (one `Call::Syr`).
pub(crate) struct RankArgs {
    pub(crate) hermitian: bool,
    pub(crate) two: bool,
    pub(crate) packed: bool,
    pub(crate) uplo: i32,
    pub(crate) n: i64,
    pub(crate) alpha: Scalar,
    pub(crate) x: Operand,
    pub(crate) y: Operand,
    pub(crate) a: Operand,
}

/// syr/her, syr2/her2, spr/hpr, spr2/hpr2: the stored triangle of `A`
/// updated, the rest left as it is.
pub(crate) fn rank<T: Elem>(
    memory: &mut dyn DeviceMemory,
    r: RankArgs,
) -> Result<Vec<u8>, Failure> {
    if r.hermitian && !dtype::is_complex(T::DTYPE) {
        return Err(Failure::Status(INVALID_VALUE));
    }
    let upper = one_of(r.uplo, &[LOWER, UPPER])? == UPPER;
    let n = dim(r.n)?;
    let layout = if r.packed {
        Layout::Packed
    } else {
        let ld = dim(r.a.ld)?;
        if ld < n.max(1) {
            return Err(Failure::Status(INVALID_VALUE));
        }
        Layout::Dense { ld }
    };
    if r.x.ld == 0 || (r.two && r.y.ld == 0) {
        return Err(Failure::Status(INVALID_VALUE));
    }
    let dt = T::DTYPE;
    // her's alpha is real; her2's is complex.
    let alpha_dt = if r.hermitian && !r.two {
        T::REAL_DTYPE
    } else {
        dt
    };
    let alpha: T = scalar(memory, r.alpha, alpha_dt)?;
    if n == 0 {
        return Ok(Vec::new());
    }
    let shape = Shape::General;
    let mut a = Stored::<T>::read(memory, r.a.ptr, (layout, shape, upper), n, n)?;
    // Dense: every element of the columns was read; only the triangle moves.
    let xv = Vector::<T>::read(memory, dt, r.x, n)?;
    let yv = if r.two {
        Some(Vector::<T>::read(memory, dt, r.y, n)?)
    } else {
        None
    };
    let c = |v: T| if r.hermitian { v.conj() } else { v };
    for j in 0..n {
        for i in a.stored_rows(j) {
            let (xi, xj) = (xv.get(i), xv.get(j));
            let delta = match &yv {
                None => alpha * xi * c(xj),
                Some(y) => alpha * xi * c(y.get(j)) + c(alpha) * y.get(i) * c(xj),
            };
            let at = a.index(i, j);
            let mut v = a.data[at] + delta;
            if r.hermitian && i == j {
                v = T::from_parts(v.re(), 0.0);
            }
            a.data[at] = v;
        }
    }
    a.write(memory, r.a.ptr)?;
    Ok(Vec::new())
}

#[cfg(test)]
pub(crate) fn packed_index(upper: bool, n: usize, i: usize, j: usize) -> usize {
    if upper {
        i + j * (j + 1) / 2
    } else {
        i + (2 * n - j - 1) * j / 2
    }
}
