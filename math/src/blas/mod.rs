//! cuBLAS on the CPU.
//!
//! Each call reads its operands from the client's device memory (bounds
//! checked by [`DeviceMemory`]), computes with ndarray's GEMM
//! (matrixmultiply kernels) or plain loops for levels 1 and 2, and writes
//! the results back. Mixed-precision GEMMs convert FP16/BF16 operands to
//! the compute type on load and round on store, as cuBLAS does.

mod band;
mod batched;
mod elem;
mod level1;
mod level2;
mod level3;
mod lu;
mod rot;
#[cfg(test)]
mod tests;

use std::collections::BTreeSet;

use num_complex::{Complex32, Complex64};
use rcud_proto::math::blas::{dtype, Call};

use crate::{DeviceMemory, Fault, MathError, Reply};

pub use level3::gemm_direct;
pub(crate) use level3::{matmul, GemmArgs, MatmulArgs};

/// `CUBLAS_STATUS_NOT_INITIALIZED`: an unknown or destroyed handle.
pub(crate) const NOT_INITIALIZED: i32 = 1;
/// `CUBLAS_STATUS_INVALID_VALUE`.
const INVALID_VALUE: i32 = 7;
/// `CUBLAS_STATUS_NOT_SUPPORTED`.
pub(crate) const NOT_SUPPORTED: i32 = 15;

/// Why a call stopped: a cuBLAS status, or a fault in device memory.
#[derive(Debug)]
pub(crate) enum Failure {
    Status(i32),
    Fault(Fault),
    /// [`crate::DeviceMemory::expired`] said so between pieces of work.
    Timeout,
}

impl From<Fault> for Failure {
    fn from(f: Fault) -> Self {
        Self::Fault(f)
    }
}

/// The cuBLAS objects of one client context.
#[derive(Default)]
pub struct State {
    handles: BTreeSet<u64>,
    next_handle: u64,
}

/// Runs `$body` with `$t` bound to the Rust type of cuBLAS type `$dtype`.
macro_rules! with_type {
    ($dtype:expr, $t:ident => $body:expr) => {
        match $dtype {
            dtype::R32F => {
                type $t = f32;
                $body
            }
            dtype::R64F => {
                type $t = f64;
                $body
            }
            dtype::C32F => {
                type $t = Complex32;
                $body
            }
            dtype::C64F => {
                type $t = Complex64;
                $body
            }
            _ => Err(Failure::Status(NOT_SUPPORTED)),
        }
    };
}
pub(crate) use with_type;

impl State {
    /// Runs one cuBLAS call.
    pub fn call(&mut self, memory: &mut dyn DeviceMemory, call: Call) -> Result<Reply, MathError> {
        let outcome = match call {
            Call::Create {} => {
                self.next_handle += 1;
                self.handles.insert(self.next_handle);
                return Ok(Reply::ok(self.next_handle.to_le_bytes().to_vec()));
            }
            Call::Destroy { handle } => {
                return Ok(if self.handles.remove(&handle) {
                    Reply::ok(Vec::new())
                } else {
                    Reply::status(NOT_INITIALIZED)
                });
            }
            call => {
                if !self.handles.contains(&handle_of(&call)) {
                    return Ok(Reply::status(NOT_INITIALIZED));
                }
                run(memory, call)
            }
        };
        match outcome {
            Ok(out) => Ok(Reply::ok(out)),
            Err(Failure::Status(status)) => Ok(Reply::status(status)),
            Err(Failure::Fault(fault)) => Err(MathError::Fault(fault)),
            Err(Failure::Timeout) => Err(MathError::Timeout),
        }
    }
}

fn handle_of(call: &Call) -> u64 {
    match call {
        Call::Create {} => 0,
        Call::Destroy { handle }
        | Call::Level1 { handle, .. }
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
        | Call::Banded { handle, .. }
        | Call::Syr { handle, .. }
        | Call::Syr2k { handle, .. }
        | Call::Rotg { handle, .. }
        | Call::Rotm { handle, .. }
        | Call::MatinvBatched { handle, .. }
        | Call::TrsmBatched { handle, .. }
        | Call::GemvBatched { handle, .. }
        | Call::GeqrfBatched { handle, .. }
        | Call::GelsBatched { handle, .. } => *handle,
    }
}

/// Runs a call on a valid handle; answers the bytes of a host-side result.
fn run(memory: &mut dyn DeviceMemory, call: Call) -> Result<Vec<u8>, Failure> {
    match call {
        Call::Create {} | Call::Destroy { .. } => Ok(Vec::new()),
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
        } => with_type!(dtype, T => level1::run::<T>(memory, level1::Args {
            op, scalar_dtype, n, x, y, alpha, beta, result,
        })),
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
        } => with_type!(dtype, T => level2::gemv::<T>(memory, trans, m, n, alpha, a, x, beta, y)),
        Call::Ger {
            dtype,
            conj,
            m,
            n,
            alpha,
            x,
            y,
            a,
            ..
        } => with_type!(dtype, T => level2::ger::<T>(memory, conj, m, n, alpha, x, y, a)),
        Call::Symv {
            dtype,
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
            with_type!(dtype, T => level2::symv::<T>(memory, hermitian, uplo, n, alpha, a, x, beta, y))
        }
        Call::Trmv {
            dtype,
            solve,
            uplo,
            trans,
            diag,
            n,
            a,
            x,
            ..
        } => with_type!(dtype, T => level2::trmv::<T>(memory, solve, uplo, trans, diag, n, a, x)),
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
        } => {
            let args = level3::GemmArgs {
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
            };
            // Half-precision compute runs in f32 (its scalars are read as
            // half), as the emulated device has no FP16 arithmetic of its own.
            match types[3] {
                dtype::R16F => level3::gemm::<f32>(memory, args),
                compute => with_type!(compute, T => level3::gemm::<T>(memory, args)),
            }
        }
        Call::Symm {
            dtype,
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
            with_type!(dtype, T => level3::symm::<T>(memory, hermitian, side, uplo, m, n, alpha, a, b, beta, c))
        }
        Call::Syrk {
            dtype,
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
            with_type!(dtype, T => level3::syrk::<T>(memory, hermitian, uplo, trans, n, k, alpha, a, beta, c))
        }
        Call::Trmm {
            dtype,
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
        } => with_type!(dtype, T => level3::trmm::<T>(memory, level3::TriArgs {
            solve, side, uplo, trans, diag, m, n, alpha, a, b, c,
        })),
        Call::Geam {
            dtype,
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
            with_type!(dtype, T => level3::geam::<T>(memory, transa, transb, m, n, alpha, a, beta, b, c))
        }
        Call::Dgmm {
            dtype,
            side,
            m,
            n,
            a,
            x,
            c,
            ..
        } => with_type!(dtype, T => level3::dgmm::<T>(memory, side, m, n, a, x, c)),
        Call::GetrfBatched {
            dtype,
            n,
            a,
            pivots,
            info,
            batch,
            ..
        } => lu::getrf_batched(memory, dtype, n, a, pivots, info, batch),
        Call::GetrsBatched {
            dtype,
            trans,
            n,
            nrhs,
            a,
            pivots,
            b,
            batch,
            ..
        } => lu::getrs_batched(memory, dtype, trans, n, nrhs, a, pivots, b, batch),
        Call::GetriBatched {
            dtype,
            n,
            a,
            pivots,
            c,
            info,
            batch,
            ..
        } => lu::getri_batched(memory, dtype, n, a, pivots, c, info, batch),
        Call::MatinvBatched {
            dtype,
            n,
            a,
            c,
            info,
            batch,
            ..
        } => lu::matinv_batched(memory, dtype, n, a, c, info, batch),
        Call::TrsmBatched {
            dtype,
            side,
            uplo,
            trans,
            diag,
            m,
            n,
            alpha,
            a,
            b,
            batch,
            ..
        } => with_type!(dtype, T => batched::trsm_batched::<T>(memory, batched::TrsmBatched {
            side, uplo, trans, diag, m, n, alpha, a, b, batch,
        })),
        Call::GemvBatched {
            types,
            trans,
            m,
            n,
            alpha,
            a,
            x,
            beta,
            y,
            batch,
            pointer_arrays,
            ..
        } => {
            let args = batched::GemvBatched {
                types,
                trans,
                m,
                n,
                alpha,
                a,
                x,
                beta,
                y,
                batch,
                pointer_arrays,
            };
            // The half and bfloat16 forms compute in float.
            with_type!(types[2], T => batched::gemv_batched::<T>(memory, args))
        }
        Call::GeqrfBatched {
            dtype,
            m,
            n,
            a,
            tau,
            batch,
            ..
        } => batched::geqrf_batched(memory, dtype, m, n, a, tau, batch),
        Call::GelsBatched {
            dtype,
            trans,
            m,
            n,
            nrhs,
            a,
            c,
            dev_info,
            batch,
            ..
        } => batched::gels_batched(
            memory,
            batched::GelsBatched {
                dtype,
                trans,
                m,
                n,
                nrhs,
                a,
                c,
                dev_info,
                batch,
            },
        ),
        Call::Banded {
            dtype,
            kind,
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
        } => with_type!(dtype, T => band::banded::<T>(memory, band::BandArgs {
            kind, hermitian, uplo, trans, diag, m, n, kl, k, alpha, a, x, beta, y,
        })),
        Call::Syr {
            dtype,
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
        } => with_type!(dtype, T => band::rank::<T>(memory, band::RankArgs {
            hermitian, two, packed, uplo, n, alpha, x, y, a,
        })),
        Call::Syr2k {
            dtype,
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
        } => with_type!(dtype, T => level3::syr2k::<T>(memory, level3::Syr2kArgs {
            hermitian, x, uplo, trans, n, k, alpha, a, b, beta, c,
        })),
        Call::Rotg {
            dtype,
            modified,
            values,
            ptrs,
            ..
        } => with_type!(dtype, T => rot::rotg::<T>(memory, modified, values, ptrs)),
        Call::Rotm {
            dtype,
            n,
            x,
            y,
            param,
            param_ptr,
            ..
        } => with_type!(dtype, T => rot::rotm::<T>(memory, n, x, y, param, param_ptr)),
    }
}

/// `cublasOperation_t`: no transpose.
pub(crate) const OP_N: i32 = 0;
/// `CUBLAS_OP_T`.
pub(crate) const OP_T: i32 = 1;
/// `CUBLAS_OP_C` (`CUBLAS_OP_HERMITAN`).
pub(crate) const OP_C: i32 = 2;
/// `CUBLAS_FILL_MODE_LOWER`.
pub(crate) const LOWER: i32 = 0;
/// `CUBLAS_FILL_MODE_UPPER`.
pub(crate) const UPPER: i32 = 1;
/// `CUBLAS_DIAG_UNIT`.
pub(crate) const UNIT: i32 = 1;
/// `CUBLAS_SIDE_LEFT`.
pub(crate) const LEFT: i32 = 0;
/// `CUBLAS_SIDE_RIGHT`.
pub(crate) const RIGHT: i32 = 1;

/// Checks an enumeration argument.
pub(crate) fn one_of(value: i32, allowed: &[i32]) -> Result<i32, Failure> {
    if allowed.contains(&value) {
        Ok(value)
    } else {
        Err(Failure::Status(INVALID_VALUE))
    }
}
