//! Values and indices in device memory: cuSPARSE's four value types, all
//! computed as complex f64, and its 32- and 64-bit index types.

use std::ops::{Add, AddAssign, Div, Mul, Neg, Sub};

use super::{Failure, INVALID_VALUE, NOT_SUPPORTED};
use crate::DeviceMemory;

/// A value of any of the four types, computed in double precision: a
/// result in single precision is rounded once, when it is stored.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Complex {
    /// Real part.
    pub re: f64,
    /// Imaginary part (zero for the real types).
    pub im: f64,
}

impl Complex {
    /// Zero.
    pub const ZERO: Self = Self { re: 0.0, im: 0.0 };
    /// One.
    pub const ONE: Self = Self { re: 1.0, im: 0.0 };

    /// `re + i im`.
    pub const fn new(re: f64, im: f64) -> Self {
        Self { re, im }
    }

    /// The complex conjugate.
    pub fn conj(self) -> Self {
        Self::new(self.re, -self.im)
    }

    /// Whether both parts are zero (a dense entry that is not stored).
    pub fn is_zero(self) -> bool {
        self.re == 0.0 && self.im == 0.0
    }
}

impl Add for Complex {
    type Output = Self;
    fn add(self, o: Self) -> Self {
        Self::new(self.re + o.re, self.im + o.im)
    }
}

impl AddAssign for Complex {
    fn add_assign(&mut self, o: Self) {
        *self = *self + o;
    }
}

impl Sub for Complex {
    type Output = Self;
    fn sub(self, o: Self) -> Self {
        Self::new(self.re - o.re, self.im - o.im)
    }
}

impl Neg for Complex {
    type Output = Self;
    fn neg(self) -> Self {
        Self::new(-self.re, -self.im)
    }
}

impl Mul for Complex {
    type Output = Self;
    fn mul(self, o: Self) -> Self {
        Self::new(
            self.re * o.re - self.im * o.im,
            self.re * o.im + self.im * o.re,
        )
    }
}

impl Div for Complex {
    type Output = Self;
    fn div(self, o: Self) -> Self {
        if o.im == 0.0 {
            return Self::new(self.re / o.re, self.im / o.re);
        }
        let d = o.re * o.re + o.im * o.im;
        Self::new(
            (self.re * o.re + self.im * o.im) / d,
            (self.im * o.re - self.re * o.im) / d,
        )
    }
}

/// `cudaDataType` of the values cuSPARSE's generic API computes with here.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ValueType {
    /// `CUDA_R_32F`.
    F32,
    /// `CUDA_R_64F`.
    F64,
    /// `CUDA_C_32F`.
    C32,
    /// `CUDA_C_64F`.
    C64,
}

impl ValueType {
    /// The type with `cudaDataType` `id`; other types (half, integers) are
    /// not supported.
    pub fn from_cuda(id: u8) -> Result<Self, Failure> {
        match id {
            0 => Ok(Self::F32),
            1 => Ok(Self::F64),
            4 => Ok(Self::C32),
            5 => Ok(Self::C64),
            _ => Err(Failure::Status(NOT_SUPPORTED)),
        }
    }

    /// Bytes per element.
    pub fn size(self) -> u64 {
        match self {
            Self::F32 => 4,
            Self::F64 | Self::C32 => 8,
            Self::C64 => 16,
        }
    }

    /// Decodes `bytes` (a whole number of elements).
    pub fn decode(self, bytes: &[u8]) -> Vec<Complex> {
        let size = self.size() as usize;
        bytes
            .chunks_exact(size)
            .map(|c| match self {
                Self::F32 => Complex::new(f64::from(f32_at(c, 0)), 0.0),
                Self::F64 => Complex::new(f64_at(c, 0), 0.0),
                Self::C32 => Complex::new(f64::from(f32_at(c, 0)), f64::from(f32_at(c, 4))),
                Self::C64 => Complex::new(f64_at(c, 0), f64_at(c, 8)),
            })
            .collect()
    }

    /// Encodes `values` (rounding to single precision where the type is).
    pub fn encode(self, values: &[Complex]) -> Vec<u8> {
        let mut out = Vec::with_capacity(values.len() * self.size() as usize);
        for v in values {
            match self {
                Self::F32 => out.extend_from_slice(&(v.re as f32).to_le_bytes()),
                Self::F64 => out.extend_from_slice(&v.re.to_le_bytes()),
                Self::C32 => {
                    out.extend_from_slice(&(v.re as f32).to_le_bytes());
                    out.extend_from_slice(&(v.im as f32).to_le_bytes());
                }
                Self::C64 => {
                    out.extend_from_slice(&v.re.to_le_bytes());
                    out.extend_from_slice(&v.im.to_le_bytes());
                }
            }
        }
        out
    }
}

fn f32_at(bytes: &[u8], at: usize) -> f32 {
    let mut b = [0u8; 4];
    b.copy_from_slice(&bytes[at..at + 4]);
    f32::from_le_bytes(b)
}

fn f64_at(bytes: &[u8], at: usize) -> f64 {
    let mut b = [0u8; 8];
    b.copy_from_slice(&bytes[at..at + 8]);
    f64::from_le_bytes(b)
}

/// `cusparseIndexType_t`: 32- or 64-bit signed indices.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IndexType {
    /// `CUSPARSE_INDEX_32I`.
    I32,
    /// `CUSPARSE_INDEX_64I`.
    I64,
}

impl IndexType {
    /// The type with `cusparseIndexType_t` `id` (16-bit indices are not
    /// supported by the generic API's routines either).
    pub fn from_cusparse(id: u8) -> Result<Self, Failure> {
        match id {
            2 => Ok(Self::I32),
            3 => Ok(Self::I64),
            _ => Err(Failure::Status(NOT_SUPPORTED)),
        }
    }

    /// Bytes per index.
    pub fn size(self) -> u64 {
        match self {
            Self::I32 => 4,
            Self::I64 => 8,
        }
    }

    /// Encodes `values`; an index too large for 32 bits is invalid.
    pub fn encode(self, values: &[i64]) -> Result<Vec<u8>, Failure> {
        let mut out = Vec::with_capacity(values.len() * self.size() as usize);
        for &v in values {
            match self {
                Self::I32 => {
                    let v = i32::try_from(v).map_err(|_| Failure::Status(INVALID_VALUE))?;
                    out.extend_from_slice(&v.to_le_bytes());
                }
                Self::I64 => out.extend_from_slice(&v.to_le_bytes()),
            }
        }
        Ok(out)
    }
}

/// `count * size` bytes, or INVALID_VALUE on overflow or a negative count.
pub fn byte_len(count: i64, size: u64) -> Result<u64, Failure> {
    u64::try_from(count)
        .ok()
        .and_then(|c| c.checked_mul(size))
        .ok_or(Failure::Status(INVALID_VALUE))
}

/// Reads `count` indices of type `ty` at `ptr`.
pub fn read_indices(
    memory: &dyn DeviceMemory,
    ptr: u64,
    count: i64,
    ty: IndexType,
) -> Result<Vec<i64>, Failure> {
    let len = byte_len(count, ty.size())?;
    if len == 0 {
        return Ok(Vec::new());
    }
    let bytes = memory.read(ptr, len)?;
    Ok(match ty {
        IndexType::I32 => bytes
            .chunks_exact(4)
            .map(|c| i64::from(i32::from_le_bytes([c[0], c[1], c[2], c[3]])))
            .collect(),
        IndexType::I64 => bytes
            .chunks_exact(8)
            .map(|c| {
                let mut b = [0u8; 8];
                b.copy_from_slice(c);
                i64::from_le_bytes(b)
            })
            .collect(),
    })
}

/// Reads `count` values of type `ty` at `ptr`.
pub fn read_values(
    memory: &dyn DeviceMemory,
    ptr: u64,
    count: i64,
    ty: ValueType,
) -> Result<Vec<Complex>, Failure> {
    let len = byte_len(count, ty.size())?;
    if len == 0 {
        return Ok(Vec::new());
    }
    Ok(ty.decode(memory.read(ptr, len)?))
}

/// Writes `values` as type `ty` at `ptr`.
pub fn write_values(
    memory: &mut dyn DeviceMemory,
    ptr: u64,
    values: &[Complex],
    ty: ValueType,
) -> Result<(), Failure> {
    if values.is_empty() {
        return Ok(());
    }
    memory.write(ptr, &ty.encode(values))?;
    Ok(())
}

/// Writes `values` as indices of type `ty` at `ptr`.
pub fn write_indices(
    memory: &mut dyn DeviceMemory,
    ptr: u64,
    values: &[i64],
    ty: IndexType,
) -> Result<(), Failure> {
    if values.is_empty() {
        return Ok(());
    }
    let bytes = ty.encode(values)?;
    memory.write(ptr, &bytes)?;
    Ok(())
}
