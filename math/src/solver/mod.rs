//! cuSOLVER (dense) on the CPU.
//!
//! Each call reads the application's matrices from device memory into
//! complex double-precision matrices, runs the LAPACK-style algorithm of
//! [`dense`] and writes the results back in the call's element type, in
//! LAPACK's storage conventions, with `devInfo` as LAPACK's `info`.

mod batched;
pub mod dense;
pub mod geev;
pub mod irs;
mod rf;
mod sp;
pub mod sparse;

use std::collections::{HashMap, HashSet};

use num_complex::Complex64 as C;
use rcud_proto::math::solver::{element_size, is_complex, real_size, Call, OP_C, OP_N, OP_T};

use crate::{DeviceMemory, Fault, MathError, Reply};
use dense::{Mat, Op, Side, Uplo};

/// `CUSOLVER_STATUS_NOT_INITIALIZED`: an unknown or destroyed handle.
pub const NOT_INITIALIZED: i32 = 1;
/// `CUSOLVER_STATUS_INVALID_VALUE`.
pub const INVALID_VALUE: i32 = 3;

/// Bytes one client context's server-held sparse-solver objects
/// (`csrcholInfo_t`/`csrqrInfo_t`, cusolverRf objects) may hold together:
/// each is bounded by the device memory it was read from, but a client
/// could make any number of them. Past it the call that grew them answers
/// `CUSOLVER_STATUS_ALLOC_FAILED` and the object it touched is dropped.
const OBJECT_BYTES: usize = 1 << 30;
/// How many such objects one client context may hold.
const OBJECTS: usize = 4096;
/// `CUSOLVER_STATUS_ALLOC_FAILED`.
const ALLOC_FAILED: i32 = 2;

/// The cuSOLVER handles of one client context.
#[derive(Default)]
pub struct State {
    handles: HashSet<u64>,
    last_id: u64,
    /// The sparse API's `csrcholInfo_t` / `csrqrInfo_t` objects, by the
    /// client's id.
    sp_infos: HashMap<u64, sparse::Info>,
    /// cusolverRf's objects, by the client's id.
    rfs: HashMap<u64, sparse::Refactor>,
    /// cusolverRf's batched objects (`cusolverRfBatchSetupHost`), by the
    /// client's id: one object per matrix of the batch.
    rf_batches: HashMap<u64, Vec<sparse::Refactor>>,
}

impl State {
    /// Runs one cuSOLVER call.
    pub fn call(&mut self, memory: &mut dyn DeviceMemory, call: Call) -> Result<Reply, MathError> {
        if let Some(handle) = call.handle() {
            if !self.handles.contains(&handle) {
                tracing::debug!(handle, "cuSOLVER call on an unknown handle");
                return Ok(Reply::status(NOT_INITIALIZED));
            }
        }
        let ranges = match call.device_ranges() {
            Ok(ranges) => ranges,
            Err(invalid) => {
                tracing::debug!("{invalid}");
                return Ok(Reply::status(INVALID_VALUE));
            }
        };
        // Every range is checked before anything is written.
        for &(ptr, len) in &ranges {
            if len > 0 {
                memory.read(ptr, len)?;
            }
        }
        match call {
            Call::Create {} => {
                self.last_id += 1;
                self.handles.insert(self.last_id);
                Ok(Reply::ok(self.last_id.to_le_bytes().to_vec()))
            }
            Call::Destroy { handle } => {
                self.handles.remove(&handle);
                Ok(Reply::ok(Vec::new()))
            }
            call @ Call::Gesvda { .. } => Ok(Reply::ok(batched::gesvda(memory, &call)?)),
            call @ Call::Irs { .. } => Ok(Reply::ok(irs::run(memory, &call)?)),
            call => {
                if let Some(reply) = sp::run(&mut self.sp_infos, memory, &call) {
                    return Ok(self.within_budget(reply?, &call));
                }
                if let Some(reply) = rf::run(&mut self.rfs, &mut self.rf_batches, memory, &call) {
                    return Ok(self.within_budget(reply?, &call));
                }
                match batched::run(memory, &call) {
                    Some(result) => result?,
                    None => run(memory, call)?,
                }
                Ok(Reply::ok(Vec::new()))
            }
        }
    }
}

impl State {
    /// `reply`, unless the objects the server holds for this client are
    /// now past [`OBJECT_BYTES`] or [`OBJECTS`]: then the object `call`
    /// touched is dropped and the call fails as an allocation would.
    fn within_budget(&mut self, reply: Reply, call: &Call) -> Reply {
        let bytes = self
            .sp_infos
            .values()
            .map(sparse::Info::bytes)
            .sum::<usize>()
            + self
                .rfs
                .values()
                .map(sparse::Refactor::bytes)
                .sum::<usize>()
            + self
                .rf_batches
                .values()
                .flatten()
                .map(sparse::Refactor::bytes)
                .sum::<usize>();
        let count = self.sp_infos.len() + self.rfs.len() + self.rf_batches.len();
        if bytes <= OBJECT_BYTES && count <= OBJECTS {
            return reply;
        }
        tracing::warn!(
            bytes,
            count,
            "cuSOLVER objects of one client past the server's bound: call refused"
        );
        match *call {
            Call::SpAnalysis { info, .. }
            | Call::SpSetup { info, .. }
            | Call::SpFactor { info, .. } => {
                self.sp_infos.remove(&info);
            }
            Call::RfSetup { rf, .. } | Call::RfResetValues { rf, .. } => {
                self.rfs.remove(&rf);
            }
            Call::RfBatchSetup { rf, .. } | Call::RfBatchResetValues { rf, .. } => {
                self.rf_batches.remove(&rf);
            }
            _ => return reply,
        }
        Reply::status(ALLOC_FAILED)
    }
}

/// Dimensions were checked by [`Call::device_ranges`]: they are ≥ 0.
fn size(value: i32) -> usize {
    usize::try_from(value).unwrap_or(0)
}

/// A matrix of `dtype` at `ptr` with leading dimension `ld`.
pub(crate) struct Place {
    ptr: u64,
    ld: usize,
    dtype: u8,
}

impl Place {
    pub(crate) fn new(ptr: u64, ld: i32, dtype: u8) -> Self {
        Self {
            ptr,
            ld: size(ld),
            dtype,
        }
    }

    fn element(&self) -> u64 {
        element_size(self.dtype).unwrap_or(8)
    }

    pub(crate) fn read(
        &self,
        memory: &dyn DeviceMemory,
        rows: usize,
        cols: usize,
    ) -> Result<Mat, Fault> {
        let mut mat = Mat::zeros(rows, cols);
        if rows == 0 || cols == 0 {
            return Ok(mat);
        }
        let es = self.element();
        for j in 0..cols {
            let at = self.ptr + (j * self.ld) as u64 * es;
            let bytes = memory.read(at, rows as u64 * es)?;
            for (i, chunk) in bytes.chunks_exact(es as usize).enumerate() {
                mat[(i, j)] = decode(self.dtype, chunk);
            }
        }
        Ok(mat)
    }

    pub(crate) fn write(
        &self,
        memory: &mut dyn DeviceMemory,
        mat: &Mat,
        cols: usize,
    ) -> Result<(), Fault> {
        let es = self.element();
        if mat.rows == 0 {
            return Ok(());
        }
        for j in 0..cols.min(mat.cols) {
            let mut bytes = Vec::with_capacity(mat.rows * es as usize);
            for i in 0..mat.rows {
                encode(self.dtype, mat[(i, j)], &mut bytes);
            }
            memory.write(self.ptr + (j * self.ld) as u64 * es, &bytes)?;
        }
        Ok(())
    }
}

/// One element of `dtype` (S, D, C, Z) from its little-endian bytes, as a
/// complex double.
pub fn decode(dtype: u8, b: &[u8]) -> C {
    let f32_at = |o: usize| f64::from(f32::from_le_bytes([b[o], b[o + 1], b[o + 2], b[o + 3]]));
    let f64_at = |o: usize| {
        let mut x = [0u8; 8];
        x.copy_from_slice(&b[o..o + 8]);
        f64::from_le_bytes(x)
    };
    match dtype {
        0 => C::new(f32_at(0), 0.0),
        1 => C::new(f64_at(0), 0.0),
        2 => C::new(f32_at(0), f32_at(4)),
        _ => C::new(f64_at(0), f64_at(8)),
    }
}

/// Appends `z` stored as `dtype` (S, D, C, Z; real types drop the
/// imaginary part) to `out`.
pub fn encode(dtype: u8, z: C, out: &mut Vec<u8>) {
    match dtype {
        0 => out.extend_from_slice(&(z.re as f32).to_le_bytes()),
        1 => out.extend_from_slice(&z.re.to_le_bytes()),
        2 => {
            out.extend_from_slice(&(z.re as f32).to_le_bytes());
            out.extend_from_slice(&(z.im as f32).to_le_bytes());
        }
        _ => {
            out.extend_from_slice(&z.re.to_le_bytes());
            out.extend_from_slice(&z.im.to_le_bytes());
        }
    }
}

/// Writes real values in `dtype`'s real type (float for S and C).
pub(crate) fn write_reals(
    memory: &mut dyn DeviceMemory,
    ptr: u64,
    dtype: u8,
    values: &[f64],
) -> Result<(), Fault> {
    let mut bytes = Vec::new();
    for &v in values {
        if real_size(dtype) == Some(4) {
            bytes.extend_from_slice(&(v as f32).to_le_bytes());
        } else {
            bytes.extend_from_slice(&v.to_le_bytes());
        }
    }
    if bytes.is_empty() {
        return Ok(());
    }
    memory.write(ptr, &bytes)
}

pub(crate) fn write_ints(
    memory: &mut dyn DeviceMemory,
    ptr: u64,
    values: &[i32],
) -> Result<(), Fault> {
    if values.is_empty() {
        return Ok(());
    }
    let bytes: Vec<u8> = values.iter().flat_map(|v| v.to_le_bytes()).collect();
    memory.write(ptr, &bytes)
}

pub(crate) fn read_ints(
    memory: &dyn DeviceMemory,
    ptr: u64,
    count: usize,
) -> Result<Vec<i32>, Fault> {
    if count == 0 {
        return Ok(Vec::new());
    }
    let bytes = memory.read(ptr, count as u64 * 4)?;
    Ok(bytes
        .chunks_exact(4)
        .map(|c| i32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect())
}

fn read_vector(
    memory: &dyn DeviceMemory,
    ptr: u64,
    count: usize,
    dtype: u8,
) -> Result<Vec<C>, Fault> {
    Ok(Place::new(ptr, count.max(1) as i32, dtype)
        .read(memory, count, 1)?
        .data)
}

fn uplo(value: i32) -> Uplo {
    if value == 0 {
        Uplo::Lower
    } else {
        Uplo::Upper
    }
}

fn op(value: i32) -> Op {
    match value {
        OP_N => Op::N,
        OP_T => Op::T,
        OP_C => Op::C,
        _ => Op::N,
    }
}

/// Runs a call whose arguments and ranges were checked.
fn run(memory: &mut dyn DeviceMemory, call: Call) -> Result<(), Fault> {
    match call {
        // Handled by `State::call` (and `batched::run`).
        Call::Create {}
        | Call::Destroy { .. }
        | Call::PotrfBatched { .. }
        | Call::PotrsBatched { .. }
        | Call::Syevj { .. }
        | Call::Gesvdj { .. }
        | Call::Gesvda { .. }
        | Call::Irs { .. }
        | Call::SpLsv { .. }
        | Call::SpAnalysis { .. }
        | Call::SpBufferInfo { .. }
        | Call::SpSetup { .. }
        | Call::SpFactor { .. }
        | Call::SpZeroPivot { .. }
        | Call::SpSolve { .. }
        | Call::SpCholDiag { .. }
        | Call::SpEigvsi { .. }
        | Call::SpQrsvBatched { .. }
        | Call::SpInfoDestroy { .. }
        | Call::RfSetup { .. }
        | Call::RfResetValues { .. }
        | Call::RfRefactor { .. }
        | Call::RfSolve { .. }
        | Call::RfExtract { .. }
        | Call::RfBatchSetup { .. }
        | Call::RfBatchResetValues { .. }
        | Call::RfBatchRefactor { .. }
        | Call::RfBatchSolve { .. }
        | Call::RfDestroy { .. } => Ok(()),
        Call::Getrf {
            dtype,
            m,
            n,
            a,
            lda,
            ipiv,
            info,
            ..
        } => {
            let (m, n) = (size(m), size(n));
            let place = Place::new(a, lda, dtype);
            let mut mat = place.read(memory, m, n)?;
            let (pivots, status) = dense::getrf(&mut mat, ipiv != 0);
            place.write(memory, &mat, n)?;
            if ipiv != 0 {
                write_ints(memory, ipiv, &pivots)?;
            }
            write_ints(memory, info, &[status])
        }
        Call::Getrs {
            dtype,
            trans,
            n,
            nrhs,
            a,
            lda,
            ipiv,
            b,
            ldb,
            info,
            ..
        } => {
            let (n, nrhs) = (size(n), size(nrhs));
            let lu = Place::new(a, lda, dtype).read(memory, n, n)?;
            let pivots = if ipiv != 0 {
                Some(read_ints(memory, ipiv, n)?)
            } else {
                None
            };
            let rhs = Place::new(b, ldb, dtype);
            let mut x = rhs.read(memory, n, nrhs)?;
            dense::getrs(op(trans), &lu, pivots.as_deref(), &mut x);
            rhs.write(memory, &x, nrhs)?;
            write_ints(memory, info, &[0])
        }
        Call::Potrf {
            dtype,
            uplo: u,
            n,
            a,
            lda,
            info,
            ..
        } => {
            let n = size(n);
            let place = Place::new(a, lda, dtype);
            let mut mat = place.read(memory, n, n)?;
            let status = dense::potrf(uplo(u), &mut mat);
            place.write(memory, &mat, n)?;
            write_ints(memory, info, &[status])
        }
        Call::Potrs {
            dtype,
            uplo: u,
            n,
            nrhs,
            a,
            lda,
            b,
            ldb,
            info,
            ..
        } => {
            let (n, nrhs) = (size(n), size(nrhs));
            let factor = Place::new(a, lda, dtype).read(memory, n, n)?;
            let rhs = Place::new(b, ldb, dtype);
            let mut x = rhs.read(memory, n, nrhs)?;
            dense::potrs(uplo(u), &factor, &mut x);
            rhs.write(memory, &x, nrhs)?;
            write_ints(memory, info, &[0])
        }
        Call::Geqrf {
            dtype,
            m,
            n,
            a,
            lda,
            tau,
            info,
            ..
        } => {
            let (m, n) = (size(m), size(n));
            let place = Place::new(a, lda, dtype);
            let mut mat = place.read(memory, m, n)?;
            let taus = dense::geqrf(&mut mat);
            place.write(memory, &mat, n)?;
            let tau_mat = Mat {
                rows: taus.len(),
                cols: 1,
                data: taus,
            };
            Place::new(tau, tau_mat.rows.max(1) as i32, dtype).write(memory, &tau_mat, 1)?;
            write_ints(memory, info, &[0])
        }
        Call::Ormqr {
            dtype,
            side,
            trans,
            m,
            n,
            k,
            a,
            lda,
            tau,
            c,
            ldc,
            info,
            ..
        } => {
            let (m, n, k) = (size(m), size(n), size(k));
            let (side, nq) = if side == 0 {
                (Side::Left, m)
            } else {
                (Side::Right, n)
            };
            let qr = Place::new(a, lda, dtype).read(memory, nq, k)?;
            let taus = read_vector(memory, tau, k, dtype)?;
            let target = Place::new(c, ldc, dtype);
            let mut mat = target.read(memory, m, n)?;
            dense::ormqr(side, op(trans), &qr, &taus, &mut mat);
            target.write(memory, &mat, n)?;
            write_ints(memory, info, &[0])
        }
        Call::Orgqr {
            dtype,
            m,
            n,
            k,
            a,
            lda,
            tau,
            info,
            ..
        } => {
            let (m, n, k) = (size(m), size(n), size(k));
            let place = Place::new(a, lda, dtype);
            let reflectors = place.read(memory, m, k)?;
            let taus = read_vector(memory, tau, k, dtype)?;
            // Q's first n columns: Q applied to the identity's.
            let mut q = Mat::zeros(m, n);
            for i in 0..n {
                q[(i, i)] = C::new(1.0, 0.0);
            }
            dense::ormqr(Side::Left, Op::N, &reflectors, &taus, &mut q);
            place.write(memory, &q, n)?;
            write_ints(memory, info, &[0])
        }
        Call::Syevd {
            dtype,
            jobz,
            uplo: u,
            n,
            a,
            lda,
            w,
            info,
            ..
        } => {
            let n = size(n);
            let place = Place::new(a, lda, dtype);
            let mat = place.read(memory, n, n)?;
            match dense::syevd(uplo(u), &mat, jobz == 1) {
                Some((values, vectors)) => {
                    write_reals(memory, w, dtype, &values)?;
                    if jobz == 1 {
                        place.write(memory, &vectors, n)?;
                    }
                    write_ints(memory, info, &[0])
                }
                // LAPACK's info > 0: the algorithm did not converge.
                None => write_ints(memory, info, &[n.max(1) as i32]),
            }
        }
        Call::Gesvd {
            dtype,
            jobu,
            jobvt,
            m,
            n,
            a,
            lda,
            s,
            u,
            ldu,
            vt,
            ldvt,
            info,
            ..
        } => {
            let (m, n) = (size(m), size(n));
            let place = Place::new(a, lda, dtype);
            let mat = place.read(memory, m, n)?;
            let u_cols = match jobu {
                b'A' => m,
                b'S' | b'O' => n,
                _ => 0,
            };
            let Some(svd) = dense::gesvd(&mat, u_cols) else {
                return write_ints(memory, info, &[n.max(1) as i32]);
            };
            write_reals(memory, s, dtype, &svd.s)?;
            match jobu {
                b'A' => Place::new(u, ldu, dtype).write(memory, &svd.u, m)?,
                b'S' => Place::new(u, ldu, dtype).write(memory, &svd.u, n)?,
                b'O' => place.write(memory, &svd.u, n)?,
                _ => {}
            }
            match jobvt {
                b'A' | b'S' => Place::new(vt, ldvt, dtype).write(memory, &svd.vt, n)?,
                // Vᴴ's n rows overwrite A's first n rows.
                b'O' => place.write(memory, &svd.vt, n)?,
                _ => {}
            }
            write_ints(memory, info, &[0])
        }
        Call::Geev {
            dtype,
            w_real,
            jobvl,
            jobvr,
            n,
            a,
            lda,
            w,
            vl,
            ldvl,
            vr,
            ldvr,
            info,
            ..
        } => {
            let n = size(n);
            let mat = Place::new(a, lda, dtype).read(memory, n, n)?;
            let eigen = match geev::geev(&mat, jobvl == 1, jobvr == 1) {
                Ok(eigen) => eigen,
                Err(unconverged) => return write_ints(memory, info, &[unconverged as i32]),
            };
            let (values, left, right) = if is_complex(dtype) {
                (eigen.values, eigen.left, eigen.right)
            } else {
                let real = geev::real_form(&eigen);
                (real.values, real.left, real.right)
            };
            if w_real == 1 {
                let parts: Vec<f64> = values
                    .iter()
                    .map(|z| z.re)
                    .chain(values.iter().map(|z| z.im))
                    .collect();
                write_reals(memory, w, dtype, &parts)?;
            } else {
                // Complex W: for a real A, of the real type's complex twin.
                let w_dtype = if is_complex(dtype) { dtype } else { dtype + 2 };
                let column = Mat {
                    rows: n,
                    cols: 1,
                    data: values,
                };
                Place::new(w, n.max(1) as i32, w_dtype).write(memory, &column, 1)?;
            }
            // LAPACK leaves A's contents undefined; rcud leaves A as it was.
            if let Some(left) = left {
                Place::new(vl, ldvl, dtype).write(memory, &left, n)?;
            }
            if let Some(right) = right {
                Place::new(vr, ldvr, dtype).write(memory, &right, n)?;
            }
            write_ints(memory, info, &[0])
        }
    }
}

#[cfg(test)]
mod tests;
