//! cuSOLVER's sparse API on the emulated device: `csrlsv{qr,chol}` and the
//! low-level `csrchol*` / `csrqr*` routines, whose matrices and vectors are
//! in device memory and whose `info` objects live here.

use std::collections::HashMap;

use num_complex::Complex64 as C;
use rcud_proto::math::solver::{element_size, Call, SP_CHOL, SP_LU, SP_QR};

use super::sparse::{self, Csr, Info, Method, Pattern, SpError};
use super::{decode, encode, read_ints, write_reals, INVALID_VALUE};
use crate::{DeviceMemory, Fault, MathError, Reply};

/// `CUSOLVER_STATUS_ALLOC_FAILED`: the band would exceed the memory bound.
const ALLOC_FAILED: i32 = 2;

/// cuSOLVER's status for a refused sparse call.
fn status(error: SpError) -> Reply {
    tracing::debug!("cusolverSp: {error}");
    Reply::status(match error {
        SpError::Invalid(_) => INVALID_VALUE,
        SpError::TooLarge => ALLOC_FAILED,
    })
}

fn len(value: i32) -> usize {
    usize::try_from(value).unwrap_or(0)
}

/// `count` values of `dtype` at `ptr`.
fn read_values(
    memory: &dyn DeviceMemory,
    ptr: u64,
    count: usize,
    dtype: u8,
) -> Result<Vec<C>, Fault> {
    let size = element_size(dtype).unwrap_or(8);
    if count == 0 {
        return Ok(Vec::new());
    }
    let bytes = memory.read(ptr, count as u64 * size)?;
    Ok(bytes
        .chunks_exact(size as usize)
        .map(|chunk| decode(dtype, chunk))
        .collect())
}

fn write_values(
    memory: &mut dyn DeviceMemory,
    ptr: u64,
    values: &[C],
    dtype: u8,
) -> Result<(), Fault> {
    if values.is_empty() {
        return Ok(());
    }
    let mut bytes = Vec::new();
    for &v in values {
        encode(dtype, v, &mut bytes);
    }
    memory.write(ptr, &bytes)
}

/// Reads a CSR pattern from device memory and checks it.
fn read_pattern(
    memory: &dyn DeviceMemory,
    (m, n, nnz, base): (i32, i32, i32, i32),
    rowptr: u64,
    colind: u64,
) -> Result<Result<Pattern, SpError>, Fault> {
    let offsets = read_ints(memory, rowptr, len(m) + 1)?;
    let cols = read_ints(memory, colind, len(nnz))?;
    Ok(Pattern::new(m, n, nnz, base, &offsets, &cols))
}

fn position(at: Option<usize>) -> Vec<u8> {
    at.and_then(|p| i32::try_from(p).ok())
        .unwrap_or(-1)
        .to_le_bytes()
        .to_vec()
}

/// Runs one sparse call whose ranges were checked (`None`: not one).
pub(super) fn run(
    infos: &mut HashMap<u64, Info>,
    memory: &mut dyn DeviceMemory,
    call: &Call,
) -> Option<Result<Reply, MathError>> {
    let result = match *call {
        Call::SpLsv {
            dtype,
            method,
            n,
            nnz,
            base,
            val,
            rowptr,
            colind,
            b,
            tol,
            reorder,
            x,
            ..
        } => lsv(
            memory,
            dtype,
            method,
            (n, nnz, base),
            (val, rowptr, colind),
            (b, x),
            tol,
            reorder,
        ),
        Call::SpAnalysis {
            info,
            method,
            m,
            n,
            nnz,
            base,
            rowptr,
            colind,
            ..
        } => (|| {
            let pattern = match read_pattern(memory, (m, n, nnz, base), rowptr, colind)? {
                Ok(pattern) => pattern,
                Err(error) => return Ok(status(error)),
            };
            let method = if method == SP_QR {
                Method::Qr
            } else {
                Method::Cholesky
            };
            let entry = infos.entry(info).or_insert_with(|| Info::new(method));
            if entry.method() != method {
                *entry = Info::new(method);
            }
            Ok(match entry.analysis(pattern) {
                Ok(()) => Reply::ok(Vec::new()),
                Err(error) => status(error),
            })
        })(),
        Call::SpBufferInfo { info, .. } => Ok(match infos.get(&info).map(Info::buffer_info) {
            Some(Ok((internal, work))) => {
                let mut out = (internal as u64).to_le_bytes().to_vec();
                out.extend_from_slice(&(work as u64).to_le_bytes());
                Reply::ok(out)
            }
            Some(Err(error)) => status(error),
            None => Reply::status(INVALID_VALUE),
        }),
        Call::SpSetup {
            info,
            dtype,
            m,
            n,
            nnz,
            val,
            mu_re,
            mu_im,
            ..
        } => (|| {
            let Some(entry) = infos
                .get_mut(&info)
                .filter(|i| matches_dims(i, m, n, Some(nnz)))
            else {
                return Ok(Reply::status(INVALID_VALUE));
            };
            let values = read_values(memory, val, len(nnz), dtype)?;
            Ok(match entry.setup(values, C::new(mu_re, mu_im)) {
                Ok(()) => Reply::ok(Vec::new()),
                Err(error) => status(error),
            })
        })(),
        Call::SpFactor {
            info,
            dtype,
            m,
            n,
            nnz,
            val,
            b,
            x,
            ..
        } => (|| {
            let Some(entry) = infos
                .get_mut(&info)
                .filter(|i| matches_dims(i, m, n, Some(nnz)))
            else {
                return Ok(Reply::status(INVALID_VALUE));
            };
            let values = if val != 0 {
                Some(read_values(memory, val, len(nnz), dtype)?)
            } else {
                None
            };
            if let Err(error) = entry.factor(values) {
                return Ok(status(error));
            }
            if b != 0 && x != 0 {
                let rhs = read_values(memory, b, len(m), dtype)?;
                match entry.solve(&rhs) {
                    Ok(sol) => write_values(memory, x, &sol, dtype)?,
                    Err(error) => return Ok(status(error)),
                }
            }
            Ok(Reply::ok(Vec::new()))
        })(),
        Call::SpZeroPivot { info, tol, .. } => {
            Ok(match infos.get(&info).map(|i| i.zero_pivot(tol)) {
                Some(Ok(at)) => Reply::ok(position(at)),
                Some(Err(error)) => status(error),
                None => Reply::status(INVALID_VALUE),
            })
        }
        Call::SpSolve {
            info,
            dtype,
            m,
            n,
            b,
            x,
            ..
        } => (|| {
            let Some(entry) = infos.get(&info).filter(|i| matches_dims(i, m, n, None)) else {
                return Ok(Reply::status(INVALID_VALUE));
            };
            let rhs = read_values(memory, b, len(m), dtype)?;
            Ok(match entry.solve(&rhs) {
                Ok(sol) => {
                    write_values(memory, x, &sol, dtype)?;
                    Reply::ok(Vec::new())
                }
                Err(error) => status(error),
            })
        })(),
        Call::SpCholDiag {
            info,
            dtype,
            n,
            diag,
            ..
        } => (|| {
            let Some(entry) = infos.get(&info).filter(|i| matches_dims(i, n, n, None)) else {
                return Ok(Reply::status(INVALID_VALUE));
            };
            Ok(match entry.chol_diag() {
                Ok(values) => {
                    write_reals(memory, diag, dtype, &values)?;
                    Reply::ok(Vec::new())
                }
                Err(error) => status(error),
            })
        })(),
        Call::SpEigvsi {
            dtype,
            m,
            nnz,
            base,
            val,
            rowptr,
            colind,
            mu0_re,
            mu0_im,
            x0,
            maxite,
            eps,
            mu,
            x,
            ..
        } => (|| {
            let pattern = match read_pattern(memory, (m, m, nnz, base), rowptr, colind)? {
                Ok(pattern) => pattern,
                Err(error) => return Ok(status(error)),
            };
            let values = read_values(memory, val, len(nnz), dtype)?;
            let start = read_values(memory, x0, len(m), dtype)?;
            let a = Csr { pattern, values };
            Ok(
                match sparse::eigvsi(&a, C::new(mu0_re, mu0_im), &start, maxite, eps) {
                    Ok((value, vector)) => {
                        write_values(memory, mu, &[value], dtype)?;
                        write_values(memory, x, &vector, dtype)?;
                        Reply::ok(Vec::new())
                    }
                    Err(error) => status(error),
                },
            )
        })(),
        Call::SpQrsvBatched {
            info,
            dtype,
            m,
            n,
            nnz,
            val,
            b,
            x,
            batch,
            ..
        } => (|| {
            let Some(entry) = infos
                .get_mut(&info)
                .filter(|i| i.method() == Method::Qr && matches_dims(i, m, n, Some(nnz)))
            else {
                return Ok(Reply::status(INVALID_VALUE));
            };
            let size = element_size(dtype).unwrap_or(8);
            // Offsets of system j's operands, in bytes (the ranges were
            // checked as a whole, so none of these overflows).
            let at = |base: u64, count: i32, j: u64| base + j * len(count) as u64 * size;
            // Every system is solved before any x is written, so that an
            // error leaves x as it was (cuSOLVER reports one status for the
            // whole batch).
            let mut solutions = Vec::with_capacity(len(batch));
            for j in 0..len(batch) as u64 {
                if crate::deadline::passed() {
                    break;
                }
                let values = read_values(memory, at(val, nnz, j), len(nnz), dtype)?;
                let rhs = read_values(memory, at(b, m, j), len(m), dtype)?;
                let solved = entry
                    .setup(values, C::new(0.0, 0.0))
                    .and_then(|()| entry.factor(None))
                    .and_then(|()| entry.solve(&rhs));
                match solved {
                    Ok(sol) => solutions.push(sol),
                    Err(error) => return Ok(status(error)),
                }
            }
            for (j, sol) in solutions.iter().enumerate() {
                write_values(memory, at(x, n, j as u64), sol, dtype)?;
            }
            Ok(Reply::ok(Vec::new()))
        })(),
        Call::SpInfoDestroy { info } => Ok(match infos.remove(&info) {
            Some(_) => Reply::ok(Vec::new()),
            None => Reply::status(INVALID_VALUE),
        }),
        _ => return None,
    };
    Some(result.map_err(MathError::from))
}

/// Whether the call's dimensions are those of the analysis.
fn matches_dims(info: &Info, m: i32, n: i32, nnz: Option<i32>) -> bool {
    let same_nnz = match (nnz, info.pattern()) {
        (Some(nnz), Some(p)) => usize::try_from(nnz).is_ok_and(|nnz| nnz == p.nnz()),
        _ => true,
    };
    info.dims() == Some((len(m), len(n))) && m >= 0 && n >= 0 && same_nnz
}

#[allow(clippy::too_many_arguments)]
fn lsv(
    memory: &mut dyn DeviceMemory,
    dtype: u8,
    method: u8,
    (n, nnz, base): (i32, i32, i32),
    (val, rowptr, colind): (u64, u64, u64),
    (b, x): (u64, u64),
    tol: f64,
    reorder: i32,
) -> Result<Reply, Fault> {
    let pattern = match read_pattern(memory, (n, n, nnz, base), rowptr, colind)? {
        Ok(pattern) => pattern,
        Err(error) => return Ok(status(error)),
    };
    let values = read_values(memory, val, len(nnz), dtype)?;
    let rhs = read_values(memory, b, len(n), dtype)?;
    let method = match method {
        SP_LU => Method::Lu,
        SP_CHOL => Method::Cholesky,
        _ => Method::Qr,
    };
    let a = Csr { pattern, values };
    match sparse::solve(&a, &rhs, method, tol, reorder != 0) {
        Ok((sol, singular)) => {
            if singular.is_none() {
                write_values(memory, x, &sol, dtype)?;
            }
            Ok(Reply::ok(position(singular)))
        }
        Err(error) => Ok(status(error)),
    }
}
