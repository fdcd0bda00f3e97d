//! cusolverRf on the emulated device: the Rf objects (by the client's id)
//! hold P, Q, A's pattern and values, and the bundle L - I + U whose
//! pattern the setup fixed. Matrices and vectors are in device memory
//! (`cusolverRfSetupHost`'s and the host extractions' are staged there by
//! the client). A batch (`cusolverRfBatch*`) is one object per matrix,
//! sharing the pattern, P and Q.

use std::collections::HashMap;

use num_complex::Complex64 as C;
use rcud_proto::math::solver::Call;

use super::sparse::{permutation, Csr, Pattern, Refactor, SpError, UnitDiagonal};
use super::{read_ints, write_ints, INVALID_VALUE};
use crate::{DeviceMemory, Fault, MathError, Reply};

/// `CUSOLVER_STATUS_NOT_INITIALIZED`: no setup for this Rf object.
const NOT_INITIALIZED: i32 = 1;
/// `CUSOLVER_STATUS_INTERNAL_ERROR`: a count past `int`.
const INTERNAL_ERROR: i32 = 7;

fn status(error: SpError) -> Reply {
    tracing::debug!("cusolverRf: {error}");
    Reply::status(INVALID_VALUE)
}

fn len(value: i32) -> usize {
    usize::try_from(value).unwrap_or(0)
}

fn read_doubles(memory: &dyn DeviceMemory, ptr: u64, count: usize) -> Result<Vec<C>, Fault> {
    if count == 0 {
        return Ok(Vec::new());
    }
    let bytes = memory.read(ptr, count as u64 * 8)?;
    Ok(bytes
        .chunks_exact(8)
        .map(|b| C::new(f64::from_le_bytes(b.try_into().unwrap_or([0; 8])), 0.0))
        .collect())
}

fn write_doubles(memory: &mut dyn DeviceMemory, ptr: u64, values: &[C]) -> Result<(), Fault> {
    if values.is_empty() {
        return Ok(());
    }
    let bytes: Vec<u8> = values.iter().flat_map(|v| v.re.to_le_bytes()).collect();
    memory.write(ptr, &bytes)
}

/// A zero-based n×n CSR from its arrays, checked.
fn csr(n: i32, rowptr: &[i32], colind: &[i32], values: &[f64]) -> Result<Csr, SpError> {
    let nnz = i32::try_from(colind.len()).map_err(|_| SpError::Invalid("nnz"))?;
    if values.len() != colind.len() {
        return Err(SpError::Invalid("values"));
    }
    let pattern = Pattern::new(n, n, nnz, 0, rowptr, colind)?;
    Ok(Csr {
        pattern,
        values: values.iter().map(|&v| C::new(v, 0.0)).collect(),
    })
}

/// A CSR matrix's arrays as read from device memory.
struct RawCsr {
    rowptr: Vec<i32>,
    colind: Vec<i32>,
    values: Vec<f64>,
}

fn read_csr(
    memory: &dyn DeviceMemory,
    n: i32,
    nnz: i32,
    [rowptr, colind, val]: [u64; 3],
) -> Result<RawCsr, Fault> {
    Ok(RawCsr {
        rowptr: read_ints(memory, rowptr, len(n) + 1)?,
        colind: read_ints(memory, colind, len(nnz))?,
        values: read_doubles(memory, val, len(nnz))?
            .iter()
            .map(|v| v.re)
            .collect(),
    })
}

/// Builds the Rf object of a setup.
fn setup(
    n: i32,
    a: &RawCsr,
    l: &RawCsr,
    u: &RawCsr,
    p: &[i32],
    q: &[i32],
    diag: i32,
) -> Result<Refactor, SpError> {
    let diag = UnitDiagonal::from_raw(diag).ok_or(SpError::Invalid("unit diagonal"))?;
    let size = len(n);
    let p = permutation(p, size).ok_or(SpError::Invalid("P"))?;
    let q = permutation(q, size).ok_or(SpError::Invalid("Q"))?;
    let a = csr(n, &a.rowptr, &a.colind, &a.values)?;
    let l = csr(n, &l.rowptr, &l.colind, &l.values)?;
    let u = csr(n, &u.rowptr, &u.colind, &u.values)?;
    Refactor::new(a, (p, q), &l, &u, diag)
}

/// A setup's answer: the entries of L - I + U and of its strictly lower
/// part (`None`: past `int`).
fn setup_counts(object: &Refactor) -> Option<Vec<u8>> {
    let nnz = i32::try_from(object.bundled().colind.len()).ok()?;
    let lower = i32::try_from(object.lower_nnz()).ok()?;
    let mut out = nnz.to_le_bytes().to_vec();
    out.extend_from_slice(&lower.to_le_bytes());
    Some(out)
}

fn setup_reply(
    rfs: &mut HashMap<u64, Refactor>,
    rf: u64,
    made: Result<Refactor, SpError>,
) -> Reply {
    match made {
        Ok(object) => {
            let Some(out) = setup_counts(&object) else {
                return Reply::status(INTERNAL_ERROR);
            };
            rfs.insert(rf, object);
            Reply::ok(out)
        }
        Err(error) => status(error),
    }
}

/// P and Q, checked; `None` for an array that is not a permutation.
type Perms = Option<(Vec<usize>, Vec<usize>)>;

fn perms(memory: &dyn DeviceMemory, n: usize, p: u64, q: u64) -> Result<Perms, Fault> {
    let p = read_ints(memory, p, n)?;
    let q = read_ints(memory, q, n)?;
    Ok(permutation(&p, n).zip(permutation(&q, n)))
}

/// The `batch` device pointers of the array at `ptr`.
fn pointers(memory: &dyn DeviceMemory, ptr: u64, batch: usize) -> Result<Vec<u64>, Fault> {
    if batch == 0 {
        return Ok(Vec::new());
    }
    let bytes = memory.read(ptr, batch as u64 * 8)?;
    Ok(bytes
        .chunks_exact(8)
        .map(|b| u64::from_le_bytes(b.try_into().unwrap_or([0; 8])))
        .collect())
}

/// `count` doubles at each of the `batch` pointers of the array at `ptr`:
/// all read (so all checked) before anything changes.
fn read_batch(
    memory: &dyn DeviceMemory,
    ptr: u64,
    batch: usize,
    count: usize,
) -> Result<(Vec<u64>, Vec<Vec<C>>), Fault> {
    let pointers = pointers(memory, ptr, batch)?;
    let values = pointers
        .iter()
        .map(|&p| read_doubles(memory, p, count))
        .collect::<Result<_, _>>()?;
    Ok((pointers, values))
}

/// `cusolverRfBatchSetupHost`: the first matrix sets the object up as
/// `cusolverRfSetup*` does, the others share all but A's values. Nothing
/// is kept unless every matrix was read and the batch fits the server's
/// bound on the objects of a client.
#[allow(clippy::too_many_arguments)]
fn batch_setup(
    memory: &dyn DeviceMemory,
    batch: usize,
    n: i32,
    nnz_a: i32,
    a: [u64; 3],
    l: &RawCsr,
    u: &RawCsr,
    p: &[i32],
    q: &[i32],
    diag: i32,
) -> Result<Result<Vec<Refactor>, Reply>, Fault> {
    let count = len(nnz_a);
    let rowptr = read_ints(memory, a[0], len(n) + 1)?;
    let colind = read_ints(memory, a[1], count)?;
    let pointers = pointers(memory, a[2], batch)?;
    let Some(&first) = pointers.first() else {
        return Ok(Err(Reply::status(INVALID_VALUE)));
    };
    let a0 = RawCsr {
        rowptr,
        colind,
        values: read_doubles(memory, first, count)?
            .iter()
            .map(|v| v.re)
            .collect(),
    };
    let object = match setup(n, &a0, l, u, p, q, diag) {
        Ok(object) => object,
        Err(error) => return Ok(Err(status(error))),
    };
    // Each matrix is a copy: refuse a batch past the bound before making
    // them (`within_budget` checks the objects once kept).
    let each = object.bytes() + std::mem::size_of::<Refactor>();
    if each.saturating_mul(batch) > super::OBJECT_BYTES {
        return Ok(Err(Reply::status(super::ALLOC_FAILED)));
    }
    let mut members = Vec::with_capacity(batch);
    for &ptr in pointers.iter().skip(1) {
        let values = read_doubles(memory, ptr, count)?;
        match object.with_values(values) {
            Ok(member) => members.push(member),
            Err(error) => return Ok(Err(status(error))),
        }
    }
    members.insert(0, object);
    Ok(Ok(members))
}

/// Runs one batched Rf call (`None`: not one).
fn run_batch(
    rfs: &mut HashMap<u64, Refactor>,
    batches: &mut HashMap<u64, Vec<Refactor>>,
    memory: &mut dyn DeviceMemory,
    call: &Call,
) -> Option<Result<Reply, Fault>> {
    if !matches!(
        call,
        Call::RfBatchSetup { .. }
            | Call::RfBatchResetValues { .. }
            | Call::RfBatchRefactor { .. }
            | Call::RfBatchSolve { .. }
    ) {
        return None;
    }
    let mut body = || -> Result<Reply, Fault> {
        Ok(match *call {
            Call::RfBatchSetup {
                rf,
                batch,
                n,
                nnz_a,
                a,
                nnz_l,
                l,
                nnz_u,
                u,
                p,
                q,
                diag,
            } => {
                let l = read_csr(memory, n, nnz_l, l)?;
                let u = read_csr(memory, n, nnz_u, u)?;
                let p = read_ints(memory, p, len(n))?;
                let q = read_ints(memory, q, len(n))?;
                let members =
                    match batch_setup(memory, len(batch), n, nnz_a, a, &l, &u, &p, &q, diag)? {
                        Ok(members) => members,
                        Err(reply) => return Ok(reply),
                    };
                let Some(out) = members.first().map(setup_counts) else {
                    return Ok(Reply::status(INVALID_VALUE));
                };
                let Some(out) = out else {
                    return Ok(Reply::status(INTERNAL_ERROR));
                };
                // A handle is set up one way or the other, not both.
                rfs.remove(&rf);
                batches.insert(rf, members);
                Reply::ok(out)
            }
            Call::RfBatchResetValues {
                rf,
                batch,
                n,
                nnz_a,
                a,
                p,
                q,
            } => {
                let Some(members) = batches.get_mut(&rf) else {
                    return Ok(Reply::status(NOT_INITIALIZED));
                };
                let Some(first) = members.first() else {
                    return Ok(Reply::status(NOT_INITIALIZED));
                };
                if len(batch) != members.len()
                    || len(n) != first.n()
                    || len(nnz_a) != first.a_pattern().nnz()
                {
                    return Ok(Reply::status(INVALID_VALUE));
                }
                let (_, values) = read_batch(memory, a[2], len(batch), len(nnz_a))?;
                let Some((p, q)) = perms(memory, len(n), p, q)? else {
                    return Ok(Reply::status(INVALID_VALUE));
                };
                // The members share nnz, P and Q: only the first can
                // refuse, before any has changed.
                for (member, values) in members.iter_mut().zip(values) {
                    if let Err(error) = member.reset_values(values, &p, &q) {
                        return Ok(status(error));
                    }
                }
                Reply::ok(Vec::new())
            }
            Call::RfBatchRefactor { rf, zero, boost } => {
                let Some(members) = batches.get_mut(&rf) else {
                    return Ok(Reply::status(NOT_INITIALIZED));
                };
                let mut out = Vec::with_capacity(members.len() * 4 + 1);
                let mut boosted = false;
                for member in members.iter_mut() {
                    let report = member.refactor(zero, boost);
                    boosted |= report.boosted;
                    let at = report
                        .zero_pivot
                        .and_then(|i| i32::try_from(i).ok())
                        .unwrap_or(-1);
                    out.extend_from_slice(&at.to_le_bytes());
                }
                out.push(u8::from(boosted));
                Reply::ok(out)
            }
            Call::RfBatchSolve {
                rf,
                batch,
                n,
                p,
                q,
                xf,
                ..
            } => {
                let Some(members) = batches.get(&rf) else {
                    return Ok(Reply::status(NOT_INITIALIZED));
                };
                if len(batch) != members.len() || members.first().map(Refactor::n) != Some(len(n)) {
                    return Ok(Reply::status(INVALID_VALUE));
                }
                let Some((p, q)) = perms(memory, len(n), p, q)? else {
                    return Ok(Reply::status(INVALID_VALUE));
                };
                let (pointers, mut xs) = read_batch(memory, xf, len(batch), len(n))?;
                for (member, x) in members.iter().zip(xs.iter_mut()) {
                    if crate::deadline::passed() {
                        break;
                    }
                    member.solve(x, &p, &q);
                }
                for (&ptr, x) in pointers.iter().zip(&xs) {
                    write_doubles(memory, ptr, x)?;
                }
                Reply::ok(Vec::new())
            }
            // Not a batched Rf call: filtered out above.
            _ => Reply::status(INTERNAL_ERROR),
        })
    };
    Some(body())
}

/// Runs one Rf call whose ranges were checked (`None`: not one).
pub(super) fn run(
    rfs: &mut HashMap<u64, Refactor>,
    batches: &mut HashMap<u64, Vec<Refactor>>,
    memory: &mut dyn DeviceMemory,
    call: &Call,
) -> Option<Result<Reply, MathError>> {
    if let Some(result) = run_batch(rfs, batches, memory, call) {
        return Some(result.map_err(MathError::from));
    }
    if !matches!(
        call,
        Call::RfSetup { .. }
            | Call::RfResetValues { .. }
            | Call::RfRefactor { .. }
            | Call::RfSolve { .. }
            | Call::RfExtract { .. }
            | Call::RfDestroy { .. }
    ) {
        return None;
    }
    let result = (|| -> Result<Reply, Fault> {
        Ok(match *call {
            Call::RfSetup {
                rf,
                n,
                nnz_a,
                a,
                nnz_l,
                l,
                nnz_u,
                u,
                p,
                q,
                diag,
            } => {
                let a = read_csr(memory, n, nnz_a, a)?;
                let l = read_csr(memory, n, nnz_l, l)?;
                let u = read_csr(memory, n, nnz_u, u)?;
                let p = read_ints(memory, p, len(n))?;
                let q = read_ints(memory, q, len(n))?;
                let made = setup(n, &a, &l, &u, &p, &q, diag);
                let reply = setup_reply(rfs, rf, made);
                if reply.status == 0 {
                    batches.remove(&rf);
                }
                reply
            }
            Call::RfResetValues {
                rf,
                n,
                nnz_a,
                a,
                p,
                q,
            } => {
                let Some(object) = rfs.get_mut(&rf) else {
                    return Ok(Reply::status(NOT_INITIALIZED));
                };
                if len(n) != object.n() || len(nnz_a) != object.a_pattern().nnz() {
                    return Ok(Reply::status(INVALID_VALUE));
                }
                // The pattern is the setup's (cuSOLVER's fast mode assumes so
                // too); only the values are read.
                let values = read_doubles(memory, a[2], len(nnz_a))?;
                let Some((p, q)) = perms(memory, len(n), p, q)? else {
                    return Ok(Reply::status(INVALID_VALUE));
                };
                match object.reset_values(values, &p, &q) {
                    Ok(()) => Reply::ok(Vec::new()),
                    Err(error) => status(error),
                }
            }
            Call::RfRefactor { rf, zero, boost } => {
                let Some(object) = rfs.get_mut(&rf) else {
                    return Ok(Reply::status(NOT_INITIALIZED));
                };
                let report = object.refactor(zero, boost);
                let at = report
                    .zero_pivot
                    .and_then(|i| i32::try_from(i).ok())
                    .unwrap_or(-1);
                let mut out = at.to_le_bytes().to_vec();
                out.push(u8::from(report.boosted));
                Reply::ok(out)
            }
            Call::RfSolve {
                rf, n, p, q, xf, ..
            } => {
                let Some(object) = rfs.get(&rf) else {
                    return Ok(Reply::status(NOT_INITIALIZED));
                };
                if len(n) != object.n() {
                    return Ok(Reply::status(INVALID_VALUE));
                }
                let Some((p, q)) = perms(memory, len(n), p, q)? else {
                    return Ok(Reply::status(INVALID_VALUE));
                };
                let mut x = read_doubles(memory, xf, len(n))?;
                object.solve(&mut x, &p, &q);
                write_doubles(memory, xf, &x)?;
                Reply::ok(Vec::new())
            }
            Call::RfExtract {
                rf,
                n,
                diag,
                nnz_l,
                l,
                nnz_u,
                u,
            } => {
                let Some(object) = rfs.get(&rf) else {
                    return Ok(Reply::status(NOT_INITIALIZED));
                };
                if len(n) != object.n() {
                    return Ok(Reply::status(INVALID_VALUE));
                }
                let factors = if diag == -1 {
                    vec![(object.bundled().clone(), nnz_l, l)]
                } else {
                    let Some(diag) = UnitDiagonal::from_raw(diag) else {
                        return Ok(Reply::status(INVALID_VALUE));
                    };
                    let (lf, uf) = object.split(diag);
                    vec![(lf, nnz_l, l), (uf, nnz_u, u)]
                };
                // The client sized the arrays from the setup's counts.
                if factors
                    .iter()
                    .any(|(f, nnz, _)| f.colind.len() != len(*nnz))
                {
                    return Ok(Reply::status(INVALID_VALUE));
                }
                for (f, _, [rowptr, colind, val]) in &factors {
                    let ints = |v: &[usize]| -> Option<Vec<i32>> {
                        v.iter().map(|&x| i32::try_from(x).ok()).collect()
                    };
                    let (Some(offsets), Some(cols)) = (ints(&f.rowptr), ints(&f.colind)) else {
                        return Ok(Reply::status(INTERNAL_ERROR));
                    };
                    write_ints(memory, *rowptr, &offsets)?;
                    write_ints(memory, *colind, &cols)?;
                    write_doubles(memory, *val, &f.values)?;
                }
                Reply::ok(Vec::new())
            }
            Call::RfDestroy { rf } => {
                // An Rf object never set up has nothing here.
                rfs.remove(&rf);
                batches.remove(&rf);
                Reply::ok(Vec::new())
            }
            // Not an Rf call: filtered out above.
            _ => Reply::status(INTERNAL_ERROR),
        })
    })();
    Some(result.map_err(MathError::from))
}
