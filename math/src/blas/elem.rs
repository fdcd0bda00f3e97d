//! Element types, their storage in device memory, and strided operands.

use half::{bf16, f16};
use ndarray::{ArrayView2, ArrayViewMut2, LinalgScalar, ShapeBuilder};
use num_complex::{Complex32, Complex64};
use rcud_proto::math::blas::{dtype, Operand, Scalar};

use super::{Failure, INVALID_VALUE, NOT_SUPPORTED};
use crate::DeviceMemory;

/// A type cuBLAS computes in: f32, f64, cuComplex, cuDoubleComplex.
pub(crate) trait Elem: LinalgScalar + std::fmt::Debug + PartialEq + Send + Sync {
    /// Its `cudaDataType`.
    const DTYPE: u8;
    /// The `cudaDataType` of its real part (nrm2, asum, herk's scalars).
    const REAL_DTYPE: u8;
    /// The value `re + i im` (`im` dropped for real types).
    fn from_parts(re: f64, im: f64) -> Self;
    /// Real part.
    fn re(self) -> f64;
    /// Imaginary part (0 for real types).
    fn im(self) -> f64;
    /// Complex conjugate (itself for real types).
    fn conj(self) -> Self;
    /// `|re| + |im|`, cuBLAS's magnitude for asum, amax and amin.
    fn abs1(self) -> f64 {
        self.re().abs() + self.im().abs()
    }
    /// `|x|^2`.
    fn norm_sqr(self) -> f64 {
        self.re() * self.re() + self.im() * self.im()
    }
}

impl Elem for f32 {
    const DTYPE: u8 = dtype::R32F;
    const REAL_DTYPE: u8 = dtype::R32F;
    fn from_parts(re: f64, _im: f64) -> Self {
        re as f32
    }
    fn re(self) -> f64 {
        f64::from(self)
    }
    fn im(self) -> f64 {
        0.0
    }
    fn conj(self) -> Self {
        self
    }
}

impl Elem for f64 {
    const DTYPE: u8 = dtype::R64F;
    const REAL_DTYPE: u8 = dtype::R64F;
    fn from_parts(re: f64, _im: f64) -> Self {
        re
    }
    fn re(self) -> f64 {
        self
    }
    fn im(self) -> f64 {
        0.0
    }
    fn conj(self) -> Self {
        self
    }
}

impl Elem for Complex32 {
    const DTYPE: u8 = dtype::C32F;
    const REAL_DTYPE: u8 = dtype::R32F;
    fn from_parts(re: f64, im: f64) -> Self {
        Complex32::new(re as f32, im as f32)
    }
    fn re(self) -> f64 {
        f64::from(self.re)
    }
    fn im(self) -> f64 {
        f64::from(self.im)
    }
    fn conj(self) -> Self {
        Complex32::conj(&self)
    }
}

impl Elem for Complex64 {
    const DTYPE: u8 = dtype::C64F;
    const REAL_DTYPE: u8 = dtype::R64F;
    fn from_parts(re: f64, im: f64) -> Self {
        Complex64::new(re, im)
    }
    fn re(self) -> f64 {
        self.re
    }
    fn im(self) -> f64 {
        self.im
    }
    fn conj(self) -> Self {
        Complex64::conj(&self)
    }
}

/// Decodes device bytes of `dtype` into `T` (rounding or widening as a
/// mixed-precision cuBLAS call converts on load).
pub(crate) fn load<T: Elem>(dtype: u8, bytes: &[u8]) -> Result<Vec<T>, Failure> {
    fn each<const N: usize, T>(bytes: &[u8], f: impl Fn([u8; N]) -> T) -> Vec<T> {
        bytes
            .chunks_exact(N)
            .map(|c| {
                let mut a = [0; N];
                a.copy_from_slice(c);
                f(a)
            })
            .collect()
    }
    Ok(match dtype {
        dtype::R32F => each(bytes, |b| {
            T::from_parts(f64::from(f32::from_le_bytes(b)), 0.0)
        }),
        dtype::R64F => each(bytes, |b| T::from_parts(f64::from_le_bytes(b), 0.0)),
        dtype::R16F => each(bytes, |b| {
            T::from_parts(f16::from_le_bytes(b).to_f64(), 0.0)
        }),
        dtype::R16BF => each(bytes, |b| {
            T::from_parts(bf16::from_le_bytes(b).to_f64(), 0.0)
        }),
        dtype::C32F => each(bytes, |b: [u8; 8]| {
            let re = f32::from_le_bytes([b[0], b[1], b[2], b[3]]);
            let im = f32::from_le_bytes([b[4], b[5], b[6], b[7]]);
            T::from_parts(f64::from(re), f64::from(im))
        }),
        dtype::C64F => each(bytes, |b: [u8; 16]| {
            let mut re = [0; 8];
            let mut im = [0; 8];
            re.copy_from_slice(&b[..8]);
            im.copy_from_slice(&b[8..]);
            T::from_parts(f64::from_le_bytes(re), f64::from_le_bytes(im))
        }),
        _ => return Err(Failure::Status(NOT_SUPPORTED)),
    })
}

/// Encodes `values` as device bytes of `dtype` (rounding to nearest).
pub(crate) fn store<T: Elem>(dtype: u8, values: &[T]) -> Result<Vec<u8>, Failure> {
    let size = dtype::size(dtype).ok_or(Failure::Status(NOT_SUPPORTED))? as usize;
    let mut out = Vec::with_capacity(values.len() * size);
    for v in values {
        match dtype {
            dtype::R32F => out.extend_from_slice(&(v.re() as f32).to_le_bytes()),
            dtype::R64F => out.extend_from_slice(&v.re().to_le_bytes()),
            dtype::R16F => out.extend_from_slice(&f16::from_f64(v.re()).to_le_bytes()),
            dtype::R16BF => out.extend_from_slice(&bf16::from_f64(v.re()).to_le_bytes()),
            dtype::C32F => {
                out.extend_from_slice(&(v.re() as f32).to_le_bytes());
                out.extend_from_slice(&(v.im() as f32).to_le_bytes());
            }
            _ => {
                out.extend_from_slice(&v.re().to_le_bytes());
                out.extend_from_slice(&v.im().to_le_bytes());
            }
        }
    }
    Ok(out)
}

/// The value of scalar `s`, of type `dtype` in device memory.
pub(crate) fn scalar<T: Elem>(
    memory: &dyn DeviceMemory,
    s: Scalar,
    dtype: u8,
) -> Result<T, Failure> {
    match s {
        Scalar::Host { re, im } => Ok(T::from_parts(re, im)),
        Scalar::Device { ptr } => {
            let size = dtype::size(dtype).ok_or(Failure::Status(NOT_SUPPORTED))?;
            let values = load::<T>(dtype, memory.read(ptr, size)?)?;
            values
                .first()
                .copied()
                .ok_or(Failure::Status(INVALID_VALUE))
        }
    }
}

/// A dimension or leading dimension as a size, or `INVALID_VALUE`.
pub(crate) fn dim(value: i64) -> Result<usize, Failure> {
    usize::try_from(value).map_err(|_| Failure::Status(INVALID_VALUE))
}

/// Checked product for sizes derived from the call.
pub(crate) fn mul(a: usize, b: usize) -> Result<usize, Failure> {
    a.checked_mul(b).ok_or(Failure::Status(INVALID_VALUE))
}

/// A column-major matrix as read from device memory: element `(i, j)` at
/// `data[i + j * ld]`, the elements between columns kept so that it can be
/// written back whole.
#[derive(Debug, Clone)]
pub(crate) struct Matrix<T> {
    pub(crate) data: Vec<T>,
    pub(crate) rows: usize,
    pub(crate) cols: usize,
    pub(crate) ld: usize,
}

/// Elements a `rows` x `cols` matrix with leading dimension `ld` spans.
fn span(rows: usize, cols: usize, ld: usize) -> Result<usize, Failure> {
    if rows == 0 || cols == 0 {
        return Ok(0);
    }
    if ld < rows {
        return Err(Failure::Status(INVALID_VALUE));
    }
    mul(ld, cols - 1)?
        .checked_add(rows)
        .ok_or(Failure::Status(INVALID_VALUE))
}

impl<T: Elem> Matrix<T> {
    /// Reads the `rows` x `cols` matrix at `ptr` with leading dimension
    /// `ld`, stored as `dtype`, from `memory`.
    pub(crate) fn read(
        memory: &dyn DeviceMemory,
        dtype: u8,
        ptr: u64,
        rows: usize,
        cols: usize,
        ld: i64,
    ) -> Result<Self, Failure> {
        let ld = dim(ld)?;
        let elements = span(rows, cols, ld)?;
        let size = dtype::size(dtype).ok_or(Failure::Status(NOT_SUPPORTED))? as usize;
        let bytes = mul(elements, size)?;
        let data = if bytes == 0 {
            Vec::new()
        } else {
            load(dtype, memory.read(ptr, bytes as u64)?)?
        };
        Ok(Self {
            data,
            rows,
            cols,
            ld,
        })
    }

    /// A dense `rows` x `cols` matrix of zeros (leading dimension `rows`).
    pub(crate) fn zeros(rows: usize, cols: usize) -> Self {
        Self {
            data: vec![T::zero(); rows * cols],
            rows,
            cols,
            ld: rows.max(1),
        }
    }

    /// Writes the matrix back to `ptr` as `dtype`: only its columns when
    /// there are gaps between them, so that nothing else is touched.
    pub(crate) fn write(
        &self,
        memory: &mut dyn DeviceMemory,
        dtype: u8,
        ptr: u64,
    ) -> Result<(), Failure> {
        self.write_to(memory, dtype, ptr, self.ld as i64)
    }

    /// Writes the matrix to `ptr` as `dtype` with leading dimension `ld`
    /// (at least its rows), touching only its columns.
    pub(crate) fn write_to(
        &self,
        memory: &mut dyn DeviceMemory,
        dtype: u8,
        ptr: u64,
        ld: i64,
    ) -> Result<(), Failure> {
        if self.data.is_empty() {
            return Ok(());
        }
        let ld = dim(ld)?;
        if ld < self.rows {
            return Err(Failure::Status(INVALID_VALUE));
        }
        let size = dtype::size(dtype).ok_or(Failure::Status(NOT_SUPPORTED))?;
        if self.ld == self.rows && ld == self.rows {
            memory.write(ptr, &store(dtype, &self.data)?)?;
            return Ok(());
        }
        for j in 0..self.cols {
            let start = j * self.ld;
            let column = store(dtype, &self.data[start..start + self.rows])?;
            let at = (j as u64)
                .checked_mul(ld as u64 * size)
                .and_then(|o| ptr.checked_add(o))
                .ok_or(Failure::Status(INVALID_VALUE))?;
            memory.write(at, &column)?;
        }
        Ok(())
    }

    pub(crate) fn get(&self, i: usize, j: usize) -> T {
        self.data[i + j * self.ld]
    }

    pub(crate) fn set(&mut self, i: usize, j: usize, v: T) {
        self.data[i + j * self.ld] = v;
    }

    /// The matrix as an ndarray view (column-major strides).
    pub(crate) fn view(&self) -> ArrayView2<'_, T> {
        // `span` checked ld >= rows and the length, so the shape fits.
        ArrayView2::from_shape((self.rows, self.cols).strides((1, self.ld)), &self.data)
            .unwrap_or_else(|_| ArrayView2::from_shape((0, 0), &[]).expect("empty view"))
    }

    pub(crate) fn view_mut(&mut self) -> ArrayViewMut2<'_, T> {
        let (rows, cols, ld) = (self.rows, self.cols, self.ld);
        if self.data.is_empty() {
            return ArrayViewMut2::from_shape((rows, cols), &mut []).unwrap_or_else(|_| {
                ArrayViewMut2::from_shape((0, 0), &mut []).expect("empty view")
            });
        }
        ArrayViewMut2::from_shape((rows, cols).strides((1, ld)), &mut self.data)
            .expect("matrix span checked on read")
    }

    /// Conjugates every element in place.
    pub(crate) fn conjugate(&mut self) {
        for v in &mut self.data {
            *v = v.conj();
        }
    }
}

/// A strided vector of `n` elements as read from device memory. A negative
/// increment runs from the end, as in the reference BLAS.
#[derive(Debug, Clone)]
pub(crate) struct Vector<T> {
    pub(crate) data: Vec<T>,
    pub(crate) n: usize,
    pub(crate) inc: i64,
}

impl<T: Elem> Vector<T> {
    pub(crate) fn read(
        memory: &dyn DeviceMemory,
        dtype: u8,
        v: Operand,
        n: usize,
    ) -> Result<Self, Failure> {
        if v.ld == 0 && n > 0 {
            return Err(Failure::Status(INVALID_VALUE));
        }
        Self::read_strided(memory, dtype, v, n)
    }

    /// As [`Self::read`], with an increment of 0 allowed: one element
    /// stands for every index (axpy's `x` and `y`).
    pub(crate) fn read_or_broadcast(
        memory: &dyn DeviceMemory,
        dtype: u8,
        v: Operand,
        n: usize,
    ) -> Result<Self, Failure> {
        Self::read_strided(memory, dtype, v, n)
    }

    fn read_strided(
        memory: &dyn DeviceMemory,
        dtype: u8,
        v: Operand,
        n: usize,
    ) -> Result<Self, Failure> {
        let step = dim(v.ld.checked_abs().ok_or(Failure::Status(INVALID_VALUE))?)?;
        let elements = if n == 0 { 0 } else { mul(n - 1, step)? + 1 };
        let size = dtype::size(dtype).ok_or(Failure::Status(NOT_SUPPORTED))? as usize;
        let bytes = mul(elements, size)?;
        let data = if bytes == 0 {
            Vec::new()
        } else {
            load(dtype, memory.read(v.ptr, bytes as u64)?)?
        };
        Ok(Self { data, n, inc: v.ld })
    }

    fn index(&self, i: usize) -> usize {
        let step = self.inc.unsigned_abs() as usize;
        if self.inc > 0 {
            i * step
        } else {
            (self.n - 1 - i) * step
        }
    }

    pub(crate) fn get(&self, i: usize) -> T {
        self.data[self.index(i)]
    }

    pub(crate) fn set(&mut self, i: usize, v: T) {
        let at = self.index(i);
        self.data[at] = v;
    }

    pub(crate) fn write(
        &self,
        memory: &mut dyn DeviceMemory,
        dtype: u8,
        ptr: u64,
    ) -> Result<(), Failure> {
        if self.data.is_empty() {
            return Ok(());
        }
        memory.write(ptr, &store(dtype, &self.data)?)?;
        Ok(())
    }
}
