//! cuBLAS calls on a real GPU, through NVIDIA's library loaded at run time
//! on the first math call ([`BlasLibrary`]).
//!
//! On a GPU nothing checks the addresses a library kernel touches, so before
//! cuBLAS is called every range the call reads or writes is computed from
//! its arguments (dimensions, leading dimensions, increments, strides,
//! batches, element sizes, transposition; device scalars; a reduction's
//! result) and checked against the client's own allocations, as the
//! emulated device checks each access. Pointer-array batches are read back
//! from the client's memory, every pointer checked, and the checked
//! pointers handed to cuBLAS in device memory of the server's own, which
//! the client cannot change during the call. A range outside the client's
//! memory is refused with `cudaErrorIllegalAddress`, as the emulated
//! device refuses it.

use std::collections::BTreeMap;

use rcud_cuda_driver::cublas::{
    self as nv, Blas23, BlasError, GemmArgs, GemmOperands, HostScalar, Level1, ParamArg, Precision,
    ResultArg, RotBuffers, ScalarArg,
};
use rcud_math::Reply;
use rcud_proto::math::blas::{dtype, level1 as op, level2 as kind, Call, Operand, Scalar};
use rcud_proto::ops::Failure;
use rcud_proto::CudaError;

use super::library::LazyLibrary;
use super::CudaDeviceContext;

mod batched;
mod lu;

/// `CUBLAS_STATUS_NOT_INITIALIZED`: an unknown or destroyed handle.
const NOT_INITIALIZED: i32 = 1;
/// `CUBLAS_STATUS_INVALID_VALUE`.
const INVALID_VALUE: i32 = 7;
/// `CUBLAS_STATUS_NOT_SUPPORTED`.
const NOT_SUPPORTED: i32 = 15;
/// `CUDA_R_64I`: a level-1 index answered as `int64_t`.
const R64I: u8 = 24;

/// NVIDIA's cuBLAS, opened on first use and shared by every client.
pub(super) type BlasLibrary = LazyLibrary<nv::Blas>;

/// The cuBLAS handles of one client context, by wire id.
#[derive(Debug, Default)]
pub(super) struct BlasHandles {
    handles: BTreeMap<u64, nv::BlasHandle>,
    next: u64,
}

impl BlasHandles {
    /// Destroys every handle (before the context goes).
    pub(super) fn clear(&mut self) {
        self.handles.clear();
    }
}

/// Why a call does not reach cuBLAS.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Refusal {
    /// Answered with this `cublasStatus_t`, as cuBLAS itself would.
    Status(i32),
    /// A range outside the client's memory (`cudaErrorIllegalAddress`).
    Fault { what: String, ptr: u64, len: u64 },
}

/// A device array of per-batch matrix pointers: each matrix `shape`
/// (rows, columns) with leading dimension `ld` and `elem`-byte elements.
pub(super) struct PointerArray {
    pub(super) what: &'static str,
    pub(super) ptr: u64,
    pub(super) shape: (i64, i64),
    pub(super) ld: i64,
    pub(super) elem: u64,
}

/// A device range a call touches.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Range {
    pub(super) ptr: u64,
    pub(super) len: u64,
}

/// The bytes `[ptr + start, ptr + start + len)`, computed in `i128` (the
/// callers' products are checked), or a fault when they leave the 64-bit
/// address space; `None` when empty.
fn range_of(what: &str, ptr: u64, start: i128, len: i128) -> Result<Option<Range>, Refusal> {
    if len <= 0 {
        return Ok(None);
    }
    let first = i128::from(ptr) + start;
    let fault = || Refusal::Fault {
        what: what.to_string(),
        ptr: u64::try_from(first.max(0)).unwrap_or(u64::MAX),
        len: u64::try_from(len).unwrap_or(u64::MAX),
    };
    let (Ok(p), Ok(l)) = (u64::try_from(first), u64::try_from(len)) else {
        return Err(fault());
    };
    if p.checked_add(l).is_none() {
        return Err(fault());
    }
    Ok(Some(Range { ptr: p, len: l }))
}

/// A range larger than any address space.
fn too_large(what: &str, ptr: u64) -> Refusal {
    Refusal::Fault {
        what: what.to_string(),
        ptr,
        len: u64::MAX,
    }
}

/// The bytes of a vector of `n` elements of `elem` bytes, `inc` apart, at
/// `ptr`. With a negative increment cuBLAS walks the same storage from its
/// end; a zero one reads one element `n` times; `n <= 0` touches nothing.
pub(super) fn vector_range(
    what: &str,
    ptr: u64,
    n: i64,
    inc: i64,
    elem: u64,
) -> Result<Option<Range>, Refusal> {
    if n <= 0 {
        return Ok(None);
    }
    let bytes = i128::from(n - 1)
        .checked_mul(i128::from(inc).abs())
        .and_then(|e| e.checked_add(1))
        .and_then(|e| e.checked_mul(i128::from(elem)));
    range_of(what, ptr, 0, bytes.ok_or_else(|| too_large(what, ptr))?)
}

/// The bytes of a column-major `rows` x `cols` matrix with leading
/// dimension `ld` at `ptr`: `CUBLAS_STATUS_INVALID_VALUE` for a negative
/// dimension or `ld < max(1, rows)`, as cuBLAS answers.
pub(super) fn matrix_range(
    what: &str,
    ptr: u64,
    rows: i64,
    cols: i64,
    ld: i64,
    elem: u64,
) -> Result<Option<Range>, Refusal> {
    if rows < 0 || cols < 0 || ld < rows.max(1) {
        return Err(Refusal::Status(INVALID_VALUE));
    }
    if rows == 0 || cols == 0 {
        return Ok(None);
    }
    let bytes = i128::from(cols - 1)
        .checked_mul(i128::from(ld))
        .and_then(|e| e.checked_add(i128::from(rows)))
        .and_then(|e| e.checked_mul(i128::from(elem)));
    range_of(what, ptr, 0, bytes.ok_or_else(|| too_large(what, ptr))?)
}

/// The bytes of a packed triangle of an `n` x `n` matrix (`n (n + 1) / 2`
/// elements) at `ptr`.
pub(super) fn packed_range(
    what: &str,
    ptr: u64,
    n: i64,
    elem: u64,
) -> Result<Option<Range>, Refusal> {
    if n < 0 {
        return Err(Refusal::Status(INVALID_VALUE));
    }
    let bytes = i128::from(n)
        .checked_mul(i128::from(n) + 1)
        .map(|e| e / 2)
        .and_then(|e| e.checked_mul(i128::from(elem)));
    range_of(what, ptr, 0, bytes.ok_or_else(|| too_large(what, ptr))?)
}

/// The bytes of `batch` matrices, the first at `first`, each `stride`
/// elements of `elem` bytes after the previous one (a negative stride goes
/// down): the whole span from the lowest to the end of the highest.
pub(super) fn strided_range(
    what: &str,
    first: Option<Range>,
    stride: i64,
    elem: u64,
    batch: i64,
) -> Result<Option<Range>, Refusal> {
    let Some(one) = first else {
        return Ok(None);
    };
    if batch <= 0 {
        return Ok(None);
    }
    let last = i128::from(batch - 1)
        .checked_mul(i128::from(stride))
        .and_then(|e| e.checked_mul(i128::from(elem)))
        .ok_or_else(|| too_large(what, one.ptr))?;
    let start = last.min(0);
    let len = (last.max(0) + i128::from(one.len))
        .checked_sub(start)
        .ok_or_else(|| too_large(what, one.ptr))?;
    range_of(what, one.ptr, start, len)
}

/// The cuBLAS precision of element type `dt`.
fn precision(dt: u8) -> Result<Precision, Refusal> {
    Ok(match dt {
        dtype::R32F => Precision::S,
        dtype::R64F => Precision::D,
        dtype::C32F => Precision::C,
        dtype::C64F => Precision::Z,
        _ => return Err(Refusal::Status(NOT_SUPPORTED)),
    })
}

/// The bytes of one element of `dt`.
fn size(dt: u8) -> Result<u64, Refusal> {
    dtype::size(dt).ok_or(Refusal::Status(NOT_SUPPORTED))
}

/// A dimension or increment for cuBLAS's 32-bit interface.
fn int(v: i64) -> Result<i32, Refusal> {
    i32::try_from(v).map_err(|_| Refusal::Status(NOT_SUPPORTED))
}

/// `op` must be N, T or C.
fn transpose(t: i32) -> Result<i32, Refusal> {
    if (0..=2).contains(&t) {
        Ok(t)
    } else {
        Err(Refusal::Status(INVALID_VALUE))
    }
}

/// `cublasFillMode_t`: lower or upper.
fn fill(uplo: i32) -> Result<i32, Refusal> {
    one_of(uplo, &[0, 1])
}

/// `cublasDiagType_t`: non-unit or unit.
fn unit(diag: i32) -> Result<i32, Refusal> {
    one_of(diag, &[0, 1])
}

/// `cublasSideMode_t`: left or right (the shapes depend on it).
fn sided(side: i32) -> Result<i32, Refusal> {
    one_of(side, &[0, 1])
}

fn one_of(value: i32, allowed: &[i32]) -> Result<i32, Refusal> {
    if allowed.contains(&value) {
        Ok(value)
    } else {
        Err(Refusal::Status(INVALID_VALUE))
    }
}

/// The value of a host scalar as bytes of type `dt`.
fn host_bytes(re: f64, im: f64, dt: u8) -> Result<HostScalar, Refusal> {
    let mut scalar = HostScalar::default();
    let b = &mut scalar.0;
    match dt {
        dtype::R32F => b[..4].copy_from_slice(&(re as f32).to_le_bytes()),
        dtype::R64F => b[..8].copy_from_slice(&re.to_le_bytes()),
        dtype::R16F => b[..2].copy_from_slice(&half::f16::from_f64(re).to_le_bytes()),
        dtype::R16BF => b[..2].copy_from_slice(&half::bf16::from_f64(re).to_le_bytes()),
        dtype::C32F => {
            b[..4].copy_from_slice(&(re as f32).to_le_bytes());
            b[4..8].copy_from_slice(&(im as f32).to_le_bytes());
        }
        dtype::C64F => {
            b[..8].copy_from_slice(&re.to_le_bytes());
            b[8..].copy_from_slice(&im.to_le_bytes());
        }
        _ => return Err(Refusal::Status(NOT_SUPPORTED)),
    }
    Ok(scalar)
}

/// The real type of the same precision as `dt`.
fn real_of(dt: u8) -> u8 {
    match dt {
        dtype::C32F => dtype::R32F,
        dtype::C64F => dtype::R64F,
        other => other,
    }
}

impl CudaDeviceContext {
    /// Checks one range against the client's memory.
    pub(super) fn check_range(&self, range: Option<Range>, what: &str) -> Result<(), Refusal> {
        match range {
            Some(r) => self
                .memory
                .check(r.ptr, r.len)
                .map(|_| ())
                .map_err(|_| Refusal::Fault {
                    what: what.to_string(),
                    ptr: r.ptr,
                    len: r.len,
                }),
            None => Ok(()),
        }
    }

    /// A scalar of type `dt` for cuBLAS, its device address checked.
    pub(super) fn scalar_arg(&self, s: Scalar, dt: u8, what: &str) -> Result<ScalarArg, Refusal> {
        match s {
            Scalar::Host { re, im } => Ok(ScalarArg::Host(host_bytes(re, im, dt)?)),
            Scalar::Device { ptr } => {
                self.check_range(range_of(what, ptr, 0, i128::from(size(dt)?))?, what)?;
                Ok(ScalarArg::Device(ptr))
            }
        }
    }

    /// A vector operand for cuBLAS, its range checked.
    fn vector_arg(&self, v: Operand, n: i64, elem: u64, what: &str) -> Result<nv::Vector, Refusal> {
        self.check_range(vector_range(what, v.ptr, n, v.ld, elem)?, what)?;
        Ok(nv::Vector {
            ptr: v.ptr,
            inc: int(v.ld)?,
        })
    }

    /// Runs one cuBLAS call (the library's calls on the `cuda` backend).
    pub(super) fn blas_call(&mut self, call: Call) -> Result<Reply, Failure> {
        let handle = match call {
            Call::Create {} => return self.blas_create(),
            Call::Destroy { handle } => {
                // Dropping the handle destroys it, with its context current.
                return Ok(match self.blas.handles.remove(&handle) {
                    Some(_) => Reply::ok(Vec::new()),
                    None => Reply::status(NOT_INITIALIZED),
                });
            }
            Call::Level1 { handle, .. }
            | Call::Gemv { handle, .. }
            | Call::Ger { handle, .. }
            | Call::Symv { handle, .. }
            | Call::Trmv { handle, .. }
            | Call::Gemm { handle, .. }
            | Call::Symm { handle, .. }
            | Call::Syrk { handle, .. }
            | Call::Trmm { handle, .. }
            | Call::Geam { handle, .. }
            | Call::Dgmm { handle, .. }
            | Call::GetrfBatched { handle, .. }
            | Call::GetrsBatched { handle, .. }
            | Call::GetriBatched { handle, .. }
            | Call::MatinvBatched { handle, .. }
            | Call::TrsmBatched { handle, .. }
            | Call::GemvBatched { handle, .. }
            | Call::GeqrfBatched { handle, .. }
            | Call::GelsBatched { handle, .. }
            | Call::Banded { handle, .. }
            | Call::Syr { handle, .. }
            | Call::Syr2k { handle, .. }
            | Call::Rotg { handle, .. }
            | Call::Rotm { handle, .. } => handle,
        };
        if !self.blas.handles.contains_key(&handle) {
            return Ok(Reply::status(NOT_INITIALIZED));
        }
        self.live()?;
        let outcome = match call {
            Call::Level1 {
                op,
                dtype,
                scalar_dtype,
                n,
                x,
                y,
                alpha,
                beta,
                result,
                ..
            } => self.level1(
                handle,
                op,
                dtype,
                scalar_dtype,
                n,
                (x, y),
                (alpha, beta),
                result,
            ),
            Call::Gemv {
                dtype,
                trans,
                m,
                n,
                alpha,
                a,
                x,
                beta,
                y,
                ..
            } => self.gemv(handle, dtype, trans, [m, n], (alpha, beta), a, x, y),
            Call::Gemm {
                types,
                transa,
                transb,
                m,
                n,
                k,
                alpha,
                a,
                b,
                beta,
                c,
                batch,
                pointer_arrays,
                ..
            } => self.gemm(
                handle,
                types,
                [transa, transb],
                [m, n, k, batch],
                (alpha, beta),
                [a, b, c],
                pointer_arrays,
            ),
            Call::Create {} | Call::Destroy { .. } => Ok(Vec::new()),
            lu @ (Call::GetrfBatched { .. }
            | Call::GetrsBatched { .. }
            | Call::GetriBatched { .. }
            | Call::MatinvBatched { .. }) => self.lu_batched(handle, lu),
            batched @ (Call::TrsmBatched { .. }
            | Call::GemvBatched { .. }
            | Call::GeqrfBatched { .. }
            | Call::GelsBatched { .. }) => self.batched(handle, batched),
            Call::Rotg {
                dtype,
                modified,
                values,
                ptrs,
                ..
            } => self.rotg(handle, dtype, modified, values, ptrs),
            Call::Rotm {
                dtype,
                n,
                x,
                y,
                param,
                param_ptr,
                ..
            } => self.rotm(handle, dtype, n, (x, y), param, param_ptr),
            other => self.blas23(handle, other),
        };
        match outcome {
            Ok(out) => Ok(Reply::ok(out)),
            Err(Outcome::Refused(Refusal::Status(s))) => Ok(Reply::status(s)),
            Err(Outcome::Refused(Refusal::Fault { what, ptr, len })) => Err(Failure::new(
                CudaError::ILLEGAL_ADDRESS,
                format!(
                    "cuBLAS {what}: {len} bytes at {ptr:#x} are outside the client's device memory"
                ),
            )),
            Err(Outcome::Library(BlasError::Status { call, status })) => {
                tracing::debug!("{call}: cublasStatus_t {status}");
                Ok(Reply::status(status))
            }
            Err(Outcome::Library(BlasError::Arguments(why))) => {
                tracing::debug!("cuBLAS arguments refused: {why}");
                Ok(Reply::status(INVALID_VALUE))
            }
            Err(Outcome::Library(BlasError::Driver(e))) => Err(self.note(&e)),
            Err(Outcome::Failed(f)) => Err(f),
        }
    }

    fn blas_create(&mut self) -> Result<Reply, Failure> {
        let library = self.blas_library.clone();
        let blas = library.get()?;
        let ctx = self.live()?.clone();
        match ctx.blas_handle(blas) {
            Ok(h) => {
                self.blas.next += 1;
                let id = self.blas.next;
                self.blas.handles.insert(id, h);
                Ok(Reply::ok(id.to_le_bytes().to_vec()))
            }
            Err(BlasError::Status { call, status }) => {
                tracing::debug!("{call}: cublasStatus_t {status}");
                Ok(Reply::status(status))
            }
            Err(BlasError::Driver(e)) => Err(self.note(&e)),
            Err(BlasError::Arguments(why)) => Err(Failure::new(CudaError::INVALID_VALUE, why)),
        }
    }

    fn handle(&mut self, id: u64) -> Result<&mut nv::BlasHandle, Outcome> {
        self.blas
            .handles
            .get_mut(&id)
            .ok_or(Outcome::Refused(Refusal::Status(NOT_INITIALIZED)))
    }

    #[allow(clippy::too_many_arguments)]
    fn level1(
        &mut self,
        handle: u64,
        which: u8,
        dt: u8,
        scalar_dt: u8,
        n: i64,
        (x, y): (Operand, Operand),
        (alpha, beta): (Scalar, Scalar),
        result: u64,
    ) -> Result<Vec<u8>, Outcome> {
        let p = precision(dt)?;
        let elem = size(dt)?;
        let complex = dtype::is_complex(dt);
        let result_arg = |ctx: &Self, bytes: u64| -> Result<ResultArg, Refusal> {
            if result == 0 {
                return Ok(ResultArg::Host);
            }
            ctx.check_range(range_of("result", result, 0, i128::from(bytes))?, "result")?;
            Ok(ResultArg::Device(result))
        };
        let uses_y = matches!(
            which,
            op::AXPY | op::DOTU | op::DOTC | op::COPY | op::SWAP | op::ROT
        );
        let operation = match which {
            op::AXPY => Level1::Axpy {
                alpha: self.scalar_arg(alpha, dt, "alpha")?,
            },
            op::SCAL => {
                // alpha of the vector's type, or real for Csscal/Zdscal.
                if scalar_dt != dt && scalar_dt != real_of(dt) {
                    return Err(Refusal::Status(INVALID_VALUE).into());
                }
                Level1::Scal {
                    alpha: self.scalar_arg(alpha, scalar_dt, "alpha")?,
                    real_alpha: !dtype::is_complex(scalar_dt),
                }
            }
            op::DOTU | op::DOTC => Level1::Dot {
                conj: which == op::DOTC && complex,
                result: result_arg(self, elem)?,
            },
            op::NRM2 => Level1::Nrm2 {
                result: result_arg(self, p.real_size() as u64)?,
            },
            op::ASUM => Level1::Asum {
                result: result_arg(self, p.real_size() as u64)?,
            },
            op::AMAX | op::AMIN => {
                // cuBLAS's 32-bit entry points write an `int`; the `_64`
                // forms' `int64_t` in device memory is not forwarded yet.
                if scalar_dt == R64I && result != 0 {
                    return Err(Refusal::Status(NOT_SUPPORTED).into());
                }
                let result = result_arg(self, 4)?;
                if which == op::AMAX {
                    Level1::Amax { result }
                } else {
                    Level1::Amin { result }
                }
            }
            op::COPY => Level1::Copy,
            op::SWAP => Level1::Swap,
            op::ROT => {
                if real_of(dt) != real_of(scalar_dt) {
                    return Err(Refusal::Status(INVALID_VALUE).into());
                }
                Level1::Rot {
                    c: self.scalar_arg(alpha, real_of(dt), "c")?,
                    s: self.scalar_arg(beta, scalar_dt, "s")?,
                    real_s: !dtype::is_complex(scalar_dt),
                }
            }
            _ => return Err(Refusal::Status(INVALID_VALUE).into()),
        };
        let xv = self.vector_arg(x, n, elem, "x")?;
        let yv = if uses_y {
            self.vector_arg(y, n, elem, "y")?
        } else {
            nv::Vector { ptr: 0, inc: 1 }
        };
        // cuBLAS answers 0 (and index 0) for n <= 0.
        let n = int(n.max(0))?;
        let mut out = self.handle(handle)?.level1(operation, p, n, xv, yv)?;
        if matches!(which, op::AMAX | op::AMIN) && scalar_dt == R64I && result == 0 {
            let mut index = [0u8; 4];
            index.copy_from_slice(out.get(..4).unwrap_or(&[0; 4]));
            out = i64::from(i32::from_le_bytes(index)).to_le_bytes().to_vec();
        }
        Ok(out)
    }

    #[allow(clippy::too_many_arguments)]
    fn gemv(
        &mut self,
        handle: u64,
        dt: u8,
        trans: i32,
        [m, n]: [i64; 2],
        (alpha, beta): (Scalar, Scalar),
        a: Operand,
        x: Operand,
        y: Operand,
    ) -> Result<Vec<u8>, Outcome> {
        let p = precision(dt)?;
        let elem = size(dt)?;
        let trans = transpose(trans)?;
        self.check_range(matrix_range("A", a.ptr, m, n, a.ld, elem)?, "A")?;
        let (xn, yn) = if trans == 0 { (n, m) } else { (m, n) };
        let alpha = self.scalar_arg(alpha, dt, "alpha")?;
        let beta = self.scalar_arg(beta, dt, "beta")?;
        let xv = self.vector_arg(x, xn, elem, "x")?;
        let yv = self.vector_arg(y, yn, elem, "y")?;
        let dims = [int(m)?, int(n)?];
        let lda = int(a.ld)?;
        self.handle(handle)?
            .gemv(p, trans, dims, alpha, (a.ptr, lda), xv, beta, yv)?;
        Ok(Vec::new())
    }

    #[allow(clippy::too_many_arguments)]
    fn gemm(
        &mut self,
        handle: u64,
        types: [u8; 4],
        [transa, transb]: [i32; 2],
        [m, n, k, batch]: [i64; 4],
        (alpha, beta): (Scalar, Scalar),
        [a, b, c]: [Operand; 3],
        pointer_arrays: bool,
    ) -> Result<Vec<u8>, Outcome> {
        let [ta, tb, tc, ts] = types;
        let sizes = [size(ta)?, size(tb)?, size(tc)?];
        // cublasComputeType_t of the scalar/compute type: 16F, 32F, 64F.
        let compute = match ts {
            dtype::R16F => 64,
            dtype::R32F | dtype::C32F => 68,
            dtype::R64F | dtype::C64F => 70,
            _ => return Err(Refusal::Status(NOT_SUPPORTED).into()),
        };
        let (transa, transb) = (transpose(transa)?, transpose(transb)?);
        if m < 0 || n < 0 || k < 0 || batch < 0 {
            return Err(Refusal::Status(INVALID_VALUE).into());
        }
        let (ar, ac) = if transa == 0 { (m, k) } else { (k, m) };
        let (br, bc) = if transb == 0 { (k, n) } else { (n, k) };
        let shapes = [(ar, ac), (br, bc), (m, n)];
        let names = ["A", "B", "C"];
        let operands = [a, b, c];
        // The first matrix of each operand, its ld checked even when empty.
        let mut first = [None; 3];
        for i in 0..3 {
            let (rows, cols) = shapes[i];
            let ptr = if pointer_arrays { 0 } else { operands[i].ptr };
            first[i] = matrix_range(names[i], ptr, rows, cols, operands[i].ld, sizes[i])?;
        }
        let alpha = self.scalar_arg(alpha, ts, "alpha")?;
        let beta = self.scalar_arg(beta, ts, "beta")?;
        if m == 0 || n == 0 || batch == 0 {
            return Ok(Vec::new());
        }
        let args = GemmArgs {
            trans: [transa, transb],
            dims: [int(m)?, int(n)?, int(k)?],
            alpha,
            beta,
            types: [i32::from(ta), i32::from(tb), i32::from(tc)],
            ld: [int(a.ld)?, int(b.ld)?, int(c.ld)?],
            compute,
        };
        let batch_c = int(batch)?;
        if pointer_arrays {
            return self.gemm_arrays(handle, args, shapes, sizes, operands, batch_c);
        }
        for i in 0..3 {
            let all = strided_range(names[i], first[i], operands[i].stride, sizes[i], batch)?;
            self.check_range(all, names[i])?;
        }
        let ptrs = [a.ptr, b.ptr, c.ptr];
        let call = if batch == 1 {
            GemmOperands::Single { ptrs }
        } else {
            GemmOperands::Strided {
                ptrs,
                strides: [a.stride, b.stride, c.stride],
                batch: batch_c,
            }
        };
        self.handle(handle)?.gemm(args, call)?;
        Ok(Vec::new())
    }

    /// A matrix operand for cuBLAS, its range checked.
    fn matrix_arg(
        &self,
        m: Operand,
        rows: i64,
        cols: i64,
        elem: u64,
        what: &str,
    ) -> Result<nv::Matrix, Refusal> {
        self.check_range(matrix_range(what, m.ptr, rows, cols, m.ld, elem)?, what)?;
        Ok(nv::Matrix {
            ptr: m.ptr,
            ld: int(m.ld)?,
        })
    }

    /// ger, symv, trmv, symm, syrk, trmm, geam and dgmm: the ranges of
    /// their operands checked, then the call forwarded.
    fn blas23(&mut self, handle: u64, call: Call) -> Result<Vec<u8>, Outcome> {
        // The element type first, as the emulated device checks it.
        let p = match &call {
            Call::Ger { dtype, .. }
            | Call::Symv { dtype, .. }
            | Call::Trmv { dtype, .. }
            | Call::Symm { dtype, .. }
            | Call::Syrk { dtype, .. }
            | Call::Trmm { dtype, .. }
            | Call::Geam { dtype, .. }
            | Call::Dgmm { dtype, .. }
            | Call::Banded { dtype, .. }
            | Call::Syr { dtype, .. }
            | Call::Syr2k { dtype, .. } => precision(*dtype)?,
            _ => return Err(Refusal::Status(INVALID_VALUE).into()),
        };
        let (_, forwarded) = match call {
            Call::Ger {
                dtype: dt,
                conj,
                m,
                n,
                alpha,
                x,
                y,
                a,
                ..
            } => {
                let e = size(dt)?;
                (
                    dt,
                    Blas23::Ger {
                        conj,
                        a: self.matrix_arg(a, m, n, e, "A")?,
                        alpha: self.scalar_arg(alpha, dt, "alpha")?,
                        x: self.vector_arg(x, m, e, "x")?,
                        y: self.vector_arg(y, n, e, "y")?,
                        m: int(m)?,
                        n: int(n)?,
                    },
                )
            }
            Call::Symv {
                dtype: dt,
                hermitian,
                uplo,
                n,
                alpha,
                a,
                x,
                beta,
                y,
                ..
            } => {
                let e = size(dt)?;
                (
                    dt,
                    Blas23::Symv {
                        hermitian,
                        uplo: fill(uplo)?,
                        a: self.matrix_arg(a, n, n, e, "A")?,
                        alpha: self.scalar_arg(alpha, dt, "alpha")?,
                        beta: self.scalar_arg(beta, dt, "beta")?,
                        x: self.vector_arg(x, n, e, "x")?,
                        y: self.vector_arg(y, n, e, "y")?,
                        n: int(n)?,
                    },
                )
            }
            Call::Trmv {
                dtype: dt,
                solve,
                uplo,
                trans,
                diag,
                n,
                a,
                x,
                ..
            } => {
                let e = size(dt)?;
                (
                    dt,
                    Blas23::Trmv {
                        solve,
                        uplo: fill(uplo)?,
                        trans: transpose(trans)?,
                        diag: unit(diag)?,
                        a: self.matrix_arg(a, n, n, e, "A")?,
                        x: self.vector_arg(x, n, e, "x")?,
                        n: int(n)?,
                    },
                )
            }
            Call::Symm {
                dtype: dt,
                hermitian,
                side,
                uplo,
                m,
                n,
                alpha,
                a,
                b,
                beta,
                c,
                ..
            } => {
                let e = size(dt)?;
                let na = if sided(side)? == 0 { m } else { n };
                (
                    dt,
                    Blas23::Symm {
                        hermitian,
                        side,
                        uplo: fill(uplo)?,
                        a: self.matrix_arg(a, na, na, e, "A")?,
                        b: self.matrix_arg(b, m, n, e, "B")?,
                        c: self.matrix_arg(c, m, n, e, "C")?,
                        alpha: self.scalar_arg(alpha, dt, "alpha")?,
                        beta: self.scalar_arg(beta, dt, "beta")?,
                        m: int(m)?,
                        n: int(n)?,
                    },
                )
            }
            Call::Syrk {
                dtype: dt,
                hermitian,
                uplo,
                trans,
                n,
                k,
                alpha,
                a,
                beta,
                c,
                ..
            } => {
                let e = size(dt)?;
                let (ar, ac) = if transpose(trans)? == 0 {
                    (n, k)
                } else {
                    (k, n)
                };
                // herk's alpha and beta are real.
                let st = if hermitian { real_of(dt) } else { dt };
                (
                    dt,
                    Blas23::Syrk {
                        hermitian,
                        uplo: fill(uplo)?,
                        trans,
                        a: self.matrix_arg(a, ar, ac, e, "A")?,
                        c: self.matrix_arg(c, n, n, e, "C")?,
                        alpha: self.scalar_arg(alpha, st, "alpha")?,
                        beta: self.scalar_arg(beta, st, "beta")?,
                        n: int(n)?,
                        k: int(k)?,
                    },
                )
            }
            Call::Trmm {
                dtype: dt,
                solve,
                side,
                uplo,
                trans,
                diag,
                m,
                n,
                alpha,
                a,
                b,
                c,
                ..
            } => {
                let e = size(dt)?;
                let na = if sided(side)? == 0 { m } else { n };
                let a = self.matrix_arg(a, na, na, e, "A")?;
                let b = self.matrix_arg(b, m, n, e, "B")?;
                // trsm solves in place in B; C is not touched.
                let c = if solve {
                    b
                } else {
                    self.matrix_arg(c, m, n, e, "C")?
                };
                (
                    dt,
                    Blas23::Trmm {
                        solve,
                        side,
                        uplo: fill(uplo)?,
                        trans: transpose(trans)?,
                        diag: unit(diag)?,
                        alpha: self.scalar_arg(alpha, dt, "alpha")?,
                        a,
                        b,
                        c,
                        m: int(m)?,
                        n: int(n)?,
                    },
                )
            }
            Call::Geam {
                dtype: dt,
                transa,
                transb,
                m,
                n,
                alpha,
                a,
                beta,
                b,
                c,
                ..
            } => {
                let e = size(dt)?;
                let (ar, ac) = if transpose(transa)? == 0 {
                    (m, n)
                } else {
                    (n, m)
                };
                let (br, bc) = if transpose(transb)? == 0 {
                    (m, n)
                } else {
                    (n, m)
                };
                (
                    dt,
                    Blas23::Geam {
                        transa,
                        transb,
                        a: self.matrix_arg(a, ar, ac, e, "A")?,
                        b: self.matrix_arg(b, br, bc, e, "B")?,
                        c: self.matrix_arg(c, m, n, e, "C")?,
                        alpha: self.scalar_arg(alpha, dt, "alpha")?,
                        beta: self.scalar_arg(beta, dt, "beta")?,
                        m: int(m)?,
                        n: int(n)?,
                    },
                )
            }
            Call::Dgmm {
                dtype: dt,
                side,
                m,
                n,
                a,
                x,
                c,
                ..
            } => {
                let e = size(dt)?;
                let xn = if sided(side)? == 0 { m } else { n };
                (
                    dt,
                    Blas23::Dgmm {
                        side,
                        a: self.matrix_arg(a, m, n, e, "A")?,
                        x: self.vector_arg(x, xn, e, "x")?,
                        c: self.matrix_arg(c, m, n, e, "C")?,
                        m: int(m)?,
                        n: int(n)?,
                    },
                )
            }
            Call::Banded {
                dtype: dt,
                kind: which,
                hermitian,
                uplo,
                trans,
                diag,
                m,
                n,
                kl,
                k,
                alpha,
                a,
                x,
                beta,
                y,
                ..
            } => (
                dt,
                self.banded(
                    dt,
                    which,
                    hermitian,
                    (uplo, trans, diag),
                    [m, n, kl, k],
                    (alpha, beta),
                    [a, x, y],
                )?,
            ),
            Call::Syr {
                dtype: dt,
                hermitian,
                two,
                packed,
                uplo,
                n,
                alpha,
                x,
                y,
                a,
                ..
            } => {
                let e = size(dt)?;
                let complex = dtype::is_complex(dt);
                // cuBLAS has her/hpr for complex types but no complex spr.
                if (hermitian && !complex) || (packed && complex && !hermitian) {
                    return Err(Refusal::Status(NOT_SUPPORTED).into());
                }
                let uplo = fill(uplo)?;
                if n < 0 {
                    return Err(Refusal::Status(INVALID_VALUE).into());
                }
                let a = if packed {
                    self.check_range(packed_range("AP", a.ptr, n, e)?, "AP")?;
                    nv::Matrix { ptr: a.ptr, ld: 1 }
                } else {
                    self.matrix_arg(a, n, n, e, "A")?
                };
                let alpha_dt = if hermitian && !two { real_of(dt) } else { dt };
                (
                    dt,
                    Blas23::Syr {
                        hermitian,
                        two,
                        packed,
                        uplo,
                        n: int(n)?,
                        alpha: self.scalar_arg(alpha, alpha_dt, "alpha")?,
                        x: self.vector_arg(x, n, e, "x")?,
                        y: if two {
                            self.vector_arg(y, n, e, "y")?
                        } else {
                            nv::Vector { ptr: 0, inc: 1 }
                        },
                        a,
                    },
                )
            }
            Call::Syr2k {
                dtype: dt,
                hermitian,
                x,
                uplo,
                trans,
                n,
                k,
                alpha,
                a,
                b,
                beta,
                c,
                ..
            } => {
                let e = size(dt)?;
                if hermitian && !dtype::is_complex(dt) {
                    return Err(Refusal::Status(NOT_SUPPORTED).into());
                }
                if n < 0 || k < 0 {
                    return Err(Refusal::Status(INVALID_VALUE).into());
                }
                let (ar, ac) = if transpose(trans)? == 0 {
                    (n, k)
                } else {
                    (k, n)
                };
                let beta_dt = if hermitian { real_of(dt) } else { dt };
                (
                    dt,
                    Blas23::Syr2k {
                        hermitian,
                        x,
                        uplo: fill(uplo)?,
                        trans,
                        a: self.matrix_arg(a, ar, ac, e, "A")?,
                        b: self.matrix_arg(b, ar, ac, e, "B")?,
                        c: self.matrix_arg(c, n, n, e, "C")?,
                        alpha: self.scalar_arg(alpha, dt, "alpha")?,
                        beta: self.scalar_arg(beta, beta_dt, "beta")?,
                        n: int(n)?,
                        k: int(k)?,
                    },
                )
            }
            Call::Create {}
            | Call::Destroy { .. }
            | Call::Level1 { .. }
            | Call::Gemv { .. }
            | Call::Gemm { .. }
            | Call::GetrfBatched { .. }
            | Call::GetrsBatched { .. }
            | Call::GetriBatched { .. }
            | Call::MatinvBatched { .. }
            | Call::TrsmBatched { .. }
            | Call::GemvBatched { .. }
            | Call::GeqrfBatched { .. }
            | Call::GelsBatched { .. }
            | Call::Rotg { .. }
            | Call::Rotm { .. } => return Err(Refusal::Status(INVALID_VALUE).into()),
        };
        self.handle(handle)?.blas23(forwarded, p)?;
        Ok(Vec::new())
    }

    /// gbmv, sbmv/hbmv, spmv/hpmv, tbmv/tbsv, tpmv/tpsv: the band (its
    /// `lda` at least the band's rows) or the packed triangle checked, and
    /// the vectors.
    #[allow(clippy::too_many_arguments)]
    fn banded(
        &self,
        dt: u8,
        which: u8,
        hermitian: bool,
        (uplo, trans, diag): (i32, i32, i32),
        [m, n, kl, k]: [i64; 4],
        (alpha, beta): (Scalar, Scalar),
        [a, x, y]: [Operand; 3],
    ) -> Result<Blas23, Refusal> {
        let e = size(dt)?;
        if m < 0 || n < 0 || kl < 0 || k < 0 {
            return Err(Refusal::Status(INVALID_VALUE));
        }
        // cuBLAS has only the Hermitian forms of sbmv and spmv for complex
        // types, and none for real ones.
        if matches!(which, kind::SBMV | kind::SPMV) && hermitian != dtype::is_complex(dt) {
            return Err(Refusal::Status(NOT_SUPPORTED));
        }
        let band = |rows: i64| -> Result<nv::Matrix, Refusal> {
            let rows = rows.checked_add(1).ok_or(Refusal::Status(INVALID_VALUE))?;
            self.matrix_arg(a, rows, n, e, "A")
        };
        let packed = || -> Result<u64, Refusal> {
            self.check_range(packed_range("AP", a.ptr, n, e)?, "AP")?;
            Ok(a.ptr)
        };
        Ok(match which {
            kind::GBMV => {
                let trans = transpose(trans)?;
                let (xn, yn) = if trans == 0 { (n, m) } else { (m, n) };
                Blas23::Gbmv {
                    trans,
                    a: band(kl.checked_add(k).ok_or(Refusal::Status(INVALID_VALUE))?)?,
                    alpha: self.scalar_arg(alpha, dt, "alpha")?,
                    beta: self.scalar_arg(beta, dt, "beta")?,
                    x: self.vector_arg(x, xn, e, "x")?,
                    y: self.vector_arg(y, yn, e, "y")?,
                    m: int(m)?,
                    n: int(n)?,
                    kl: int(kl)?,
                    ku: int(k)?,
                }
            }
            kind::SBMV => Blas23::Sbmv {
                uplo: fill(uplo)?,
                a: band(k)?,
                alpha: self.scalar_arg(alpha, dt, "alpha")?,
                beta: self.scalar_arg(beta, dt, "beta")?,
                x: self.vector_arg(x, n, e, "x")?,
                y: self.vector_arg(y, n, e, "y")?,
                n: int(n)?,
                k: int(k)?,
            },
            kind::SPMV => Blas23::Spmv {
                uplo: fill(uplo)?,
                ap: packed()?,
                alpha: self.scalar_arg(alpha, dt, "alpha")?,
                beta: self.scalar_arg(beta, dt, "beta")?,
                x: self.vector_arg(x, n, e, "x")?,
                y: self.vector_arg(y, n, e, "y")?,
                n: int(n)?,
            },
            kind::TBMV | kind::TBSV => Blas23::Tbmv {
                solve: which == kind::TBSV,
                uplo: fill(uplo)?,
                trans: transpose(trans)?,
                diag: unit(diag)?,
                a: band(k)?,
                x: self.vector_arg(x, n, e, "x")?,
                n: int(n)?,
                k: int(k)?,
            },
            kind::TPMV | kind::TPSV => Blas23::Tpmv {
                solve: which == kind::TPSV,
                uplo: fill(uplo)?,
                trans: transpose(trans)?,
                diag: unit(diag)?,
                ap: packed()?,
                x: self.vector_arg(x, n, e, "x")?,
                n: int(n)?,
            },
            _ => return Err(Refusal::Status(INVALID_VALUE)),
        })
    }

    /// rotg/rotmg: device addresses checked (one value each, `c` real,
    /// rotmg's param five), or host values in and out through the reply
    /// (as the emulated device answers them).
    fn rotg(
        &mut self,
        handle: u64,
        dt: u8,
        modified: bool,
        values: [f64; 4],
        ptrs: [u64; 5],
    ) -> Result<Vec<u8>, Outcome> {
        let p = precision(dt)?;
        let e = size(dt)?;
        let complex = dtype::is_complex(dt);
        if modified && complex {
            return Err(Refusal::Status(NOT_SUPPORTED).into());
        }
        let real = p.real_size() as u64;
        let mut host = RotBuffers::default();
        let device = ptrs[0] != 0;
        if device {
            let sizes: [(u64, &str); 5] = if modified {
                [(e, "d1"), (e, "d2"), (e, "x1"), (e, "y1"), (5 * e, "param")]
            } else {
                [(e, "a"), (e, "b"), (real, "c"), (e, "s"), (0, "")]
            };
            for (ptr, (len, what)) in ptrs.iter().zip(sizes) {
                self.check_range(range_of(what, *ptr, 0, i128::from(len))?, what)?;
            }
        } else if modified {
            for (slot, v) in host.values.iter_mut().zip(values) {
                *slot = host_bytes(v, 0.0, dt)?;
            }
        } else {
            host.values[0] = host_bytes(values[0], values[1], dt)?;
            host.values[1] = host_bytes(values[2], values[3], dt)?;
        }
        self.handle(handle)?
            .rotg(p, modified, device.then_some(ptrs), &mut host)?;
        if device {
            return Ok(Vec::new());
        }
        let e = e as usize;
        let mut out = Vec::new();
        if modified {
            for v in &host.values[..3] {
                out.extend_from_slice(&v.0[..e]);
            }
            let param: Vec<u8> = host.param.iter().flat_map(|b| b.0).collect();
            out.extend_from_slice(&param[..5 * e]);
        } else {
            out.extend_from_slice(&host.values[0].0[..e]);
            out.extend_from_slice(&host.values[1].0[..e]);
            out.extend_from_slice(&host.values[2].0[..real as usize]);
            out.extend_from_slice(&host.values[3].0[..e]);
        }
        Ok(out)
    }

    /// rotm: x, y and a device param checked.
    fn rotm(
        &mut self,
        handle: u64,
        dt: u8,
        n: i64,
        (x, y): (Operand, Operand),
        param: [f64; 5],
        param_ptr: u64,
    ) -> Result<Vec<u8>, Outcome> {
        let p = precision(dt)?;
        if dtype::is_complex(dt) {
            return Err(Refusal::Status(NOT_SUPPORTED).into());
        }
        let e = size(dt)?;
        let param = if param_ptr != 0 {
            self.check_range(range_of("param", param_ptr, 0, i128::from(5 * e))?, "param")?;
            ParamArg::Device(param_ptr)
        } else {
            let mut bytes = [0u8; 48];
            for (i, v) in param.iter().enumerate() {
                let one = host_bytes(*v, 0.0, dt)?;
                let e = e as usize;
                bytes[i * e..(i + 1) * e].copy_from_slice(&one.0[..e]);
            }
            let mut buffer = [HostScalar::default(); 3];
            for (slot, chunk) in buffer.iter_mut().zip(bytes.chunks_exact(16)) {
                slot.0.copy_from_slice(chunk);
            }
            ParamArg::Host(buffer)
        };
        let xv = self.vector_arg(x, n, e, "x")?;
        let yv = self.vector_arg(y, n, e, "y")?;
        let n = int(n.max(0))?;
        self.handle(handle)?.rotm(p, n, xv, yv, param)?;
        Ok(Vec::new())
    }

    /// A pointer-array batch: the arrays are read back and every pointer
    /// checked, then cuBLAS gets copies of them in the server's own device
    /// memory.
    fn gemm_arrays(
        &mut self,
        handle: u64,
        args: GemmArgs,
        shapes: [(i64, i64); 3],
        sizes: [u64; 3],
        operands: [Operand; 3],
        batch: i32,
    ) -> Result<Vec<u8>, Outcome> {
        let names = ["A", "B", "C"];
        let arrays: Vec<PointerArray> = (0..3)
            .map(|i| PointerArray {
                what: names[i],
                ptr: operands[i].ptr,
                shape: shapes[i],
                ld: operands[i].ld,
                elem: sizes[i],
            })
            .collect();
        self.with_checked_arrays(&arrays, batch, |ctx, staged| {
            let call = GemmOperands::Arrays {
                arrays: [staged[0], staged[1], staged[2]],
                batch,
            };
            ctx.handle(handle)?.gemm(args, call).map_err(Outcome::from)
        })
        .map(|()| Vec::new())
    }

    /// Reads each of `arrays` (`batch` device pointers) from the client's
    /// memory, checks every matrix it names, and runs `call` with copies of
    /// the checked arrays in device memory of the server's own, which the
    /// client cannot change during the call (freed after it).
    pub(super) fn with_checked_arrays(
        &mut self,
        arrays: &[PointerArray],
        batch: i32,
        call: impl FnOnce(&mut Self, &[u64]) -> Result<(), Outcome>,
    ) -> Result<(), Outcome> {
        let count = u64::try_from(batch).unwrap_or(0);
        let array_bytes = count * 8;
        // Grown only after each array's range is checked: the batch count
        // is the client's, and only its own allocations bound it.
        let mut checked = Vec::new();
        for array in arrays {
            let what = format!("{} pointer array", array.what);
            self.check_range(
                range_of(&what, array.ptr, 0, i128::from(array_bytes))?,
                &what,
            )?;
            let bytes = self.read_device(array.ptr, array_bytes)?;
            checked.reserve(bytes.len());
            let (rows, cols) = array.shape;
            for (j, p) in bytes.chunks_exact(8).enumerate() {
                let mut word = [0u8; 8];
                word.copy_from_slice(p);
                let ptr = u64::from_le_bytes(word);
                let what = format!("{}[{j}]", array.what);
                let range = matrix_range(&what, ptr, rows, cols, array.ld, array.elem)?;
                self.check_range(range, &what)?;
                checked.extend_from_slice(&word);
            }
        }
        let ctx = self.live().map_err(Outcome::Failed)?.clone();
        let staged = ctx
            .alloc(checked.len().max(8) as u64)
            .map_err(|e| Outcome::Failed(self.note(&e)))?;
        let addresses: Vec<u64> = (0..arrays.len() as u64)
            .map(|i| staged + i * array_bytes)
            .collect();
        let result = self
            .write_device(staged, &checked)
            .and_then(|()| call(self, &addresses));
        if let Err(e) = ctx.free(staged) {
            tracing::warn!("freeing the checked pointer arrays: {e}");
        }
        result
    }

    /// `len` bytes of the client's memory at `ptr` (already checked).
    fn read_device(&mut self, ptr: u64, len: u64) -> Result<Vec<u8>, Outcome> {
        let mut out = Vec::with_capacity(len as usize);
        let Some(staging) = self.staging.as_mut() else {
            return Err(Outcome::Failed(CudaError::DEVICE_UNINITIALIZED.into()));
        };
        let result = staging.download::<std::convert::Infallible>(ptr, len, &mut |piece| {
            out.extend_from_slice(piece);
            Ok(())
        });
        match result {
            Ok(()) => Ok(out),
            Err(rcud_cuda_driver::StagedError::Driver(e)) => Err(Outcome::Failed(self.note(&e))),
            Err(rcud_cuda_driver::StagedError::Host(never)) => match never {},
        }
    }

    /// Writes `data` to device memory of the server's own at `ptr`.
    fn write_device(&mut self, ptr: u64, data: &[u8]) -> Result<(), Outcome> {
        let Some(staging) = self.staging.as_mut() else {
            return Err(Outcome::Failed(CudaError::DEVICE_UNINITIALIZED.into()));
        };
        let mut pos = 0;
        let result =
            staging.upload::<std::convert::Infallible>(ptr, data.len() as u64, &mut |chunk| {
                chunk.copy_from_slice(&data[pos..pos + chunk.len()]);
                pos += chunk.len();
                Ok(())
            });
        match result {
            Ok(()) => Ok(()),
            Err(rcud_cuda_driver::StagedError::Driver(e)) => Err(Outcome::Failed(self.note(&e))),
            Err(rcud_cuda_driver::StagedError::Host(never)) => match never {},
        }
    }
}

/// How a forwarded call ended when it did not succeed.
#[derive(Debug)]
pub(super) enum Outcome {
    Refused(Refusal),
    Library(BlasError),
    Failed(Failure),
}

impl From<Refusal> for Outcome {
    fn from(r: Refusal) -> Self {
        Self::Refused(r)
    }
}

impl From<BlasError> for Outcome {
    fn from(e: BlasError) -> Self {
        Self::Library(e)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn r(ptr: u64, len: u64) -> Option<Range> {
        Some(Range { ptr, len })
    }

    #[test]
    fn vectors_span_their_increments_either_way() {
        assert_eq!(vector_range("x", 0x1000, 4, 1, 4), Ok(r(0x1000, 16)));
        assert_eq!(vector_range("x", 0x1000, 4, 3, 8), Ok(r(0x1000, 80)));
        // Negative increments walk the same storage from its end.
        assert_eq!(vector_range("x", 0x1000, 4, -3, 8), Ok(r(0x1000, 80)));
        // A zero increment reads one element.
        assert_eq!(vector_range("x", 0x1000, 4, 0, 4), Ok(r(0x1000, 4)));
        assert_eq!(vector_range("x", 0x1000, 0, 1, 4), Ok(None));
        assert_eq!(vector_range("x", 0x1000, -5, 1, 4), Ok(None));
    }

    #[test]
    fn huge_vectors_do_not_wrap() {
        let far = vector_range("x", 0x1000, i64::MAX, i64::MAX, 16);
        assert!(matches!(far, Err(Refusal::Fault { .. })), "{far:?}");
        let end = vector_range("x", u64::MAX - 8, 4, 1, 4);
        assert!(matches!(end, Err(Refusal::Fault { .. })), "{end:?}");
        let min = vector_range("x", 0x1000, 2, i64::MIN, 4);
        assert!(matches!(min, Err(Refusal::Fault { .. })), "{min:?}");
    }

    #[test]
    fn matrices_span_their_columns_and_check_ld() {
        // 3 x 2 with ld 5: columns at 0 and 5, the last ending at 5 + 3.
        assert_eq!(matrix_range("A", 0x100, 3, 2, 5, 4), Ok(r(0x100, 32)));
        assert_eq!(
            matrix_range("A", 0x100, 3, 2, 2, 4),
            Err(Refusal::Status(7))
        );
        assert_eq!(
            matrix_range("A", 0x100, 0, 2, 0, 4),
            Err(Refusal::Status(7))
        );
        assert_eq!(matrix_range("A", 0x100, 0, 2, 1, 4), Ok(None));
        assert_eq!(matrix_range("A", 0x100, 3, 0, 3, 4), Ok(None));
        assert_eq!(
            matrix_range("A", 0x100, -1, 2, 3, 4),
            Err(Refusal::Status(7))
        );
        assert_eq!(
            matrix_range("A", 0x100, 3, -2, 3, 4),
            Err(Refusal::Status(7))
        );
    }

    #[test]
    fn huge_matrices_do_not_wrap() {
        // m * ld far beyond 2^64 bytes.
        let big = matrix_range("A", 0x100, 1 << 40, 1 << 40, 1 << 40, 16);
        assert!(matches!(big, Err(Refusal::Fault { .. })), "{big:?}");
        let max = matrix_range("A", 0x100, i64::MAX, i64::MAX, i64::MAX, 16);
        assert!(matches!(max, Err(Refusal::Fault { .. })), "{max:?}");
    }

    #[test]
    fn strided_batches_span_every_matrix() {
        let one = r(0x1000, 64);
        assert_eq!(strided_range("A", one, 16, 4, 3), Ok(r(0x1000, 128 + 64)));
        // A zero stride: the same matrix each time.
        assert_eq!(strided_range("A", one, 0, 4, 1000), Ok(r(0x1000, 64)));
        // A negative stride goes down from the first matrix.
        assert_eq!(
            strided_range("A", one, -16, 4, 3),
            Ok(r(0x1000 - 128, 128 + 64))
        );
        assert_eq!(strided_range("A", one, 16, 4, 0), Ok(None));
        assert_eq!(strided_range("A", None, 16, 4, 5), Ok(None));
        let below = strided_range("A", one, -(1 << 40), 4, 3);
        assert!(matches!(below, Err(Refusal::Fault { .. })), "{below:?}");
        let huge = strided_range("A", one, i64::MAX, 16, i64::MAX);
        assert!(matches!(huge, Err(Refusal::Fault { .. })), "{huge:?}");
        // Just inside i128 before the span is added: still no wrap.
        let edge = strided_range("A", one, i64::MIN, 2, i64::MAX);
        assert!(matches!(edge, Err(Refusal::Fault { .. })), "{edge:?}");
    }

    #[test]
    fn host_scalars_are_encoded_in_the_call_type() {
        assert_eq!(
            &host_bytes(1.5, 0.0, dtype::R32F).unwrap().0[..4],
            &1.5f32.to_le_bytes()
        );
        assert_eq!(
            &host_bytes(1.5, 0.0, dtype::R16F).unwrap().0[..2],
            &[0x00, 0x3e]
        );
        let z = host_bytes(1.0, -2.0, dtype::C64F).unwrap();
        assert_eq!(&z.0[8..], &(-2.0f64).to_le_bytes());
        // cuBLAS loads a cuDoubleComplex with an aligned 16-byte load.
        assert_eq!(std::mem::align_of_val(&z), 16);
        assert_eq!(
            host_bytes(1.0, 0.0, 99),
            Err(Refusal::Status(NOT_SUPPORTED))
        );
    }
}
