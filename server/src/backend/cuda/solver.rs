//! cuSOLVER (dense) calls on a real GPU, through NVIDIA's library opened on
//! the first `cusolverDnCreate` ([`SolverLibrary`]).
//!
//! Every call is checked as the emulated device checks it before cuSOLVER
//! sees it: an unknown handle is `CUSOLVER_STATUS_NOT_INITIALIZED`, bad
//! arguments `CUSOLVER_STATUS_INVALID_VALUE` (the wire's own checks,
//! `Call::device_ranges`), and every device range the call touches (each
//! matrix as its leading dimension spans it, pivots, `tau`, `W`, `S`,
//! `devInfo`) is checked against the client's own allocations; a range
//! outside them is `cudaErrorIllegalAddress`, as on the emulated device.
//! The workspace cuSOLVER wants is the server's own (one per handle, see
//! [`rcud_cuda_driver::cusolver`]): the application's stays on the client.

use std::collections::BTreeMap;

use rcud_cuda_driver::cusolver::{self as nv, Dense, Precision, SolverError};
use rcud_math::Reply;
use rcud_proto::math::solver::Call;
use rcud_proto::ops::Failure;
use rcud_proto::CudaError;

use super::blas::{Outcome, PointerArray, Refusal};
use super::library::LazyLibrary;
use super::CudaDeviceContext;

/// `CUSOLVER_STATUS_NOT_INITIALIZED`: an unknown or destroyed handle.
const NOT_INITIALIZED: i32 = 1;
/// `CUSOLVER_STATUS_INVALID_VALUE`.
const INVALID_VALUE: i32 = 3;
/// `CUSOLVER_STATUS_INTERNAL_ERROR`.
const INTERNAL_ERROR: i32 = 7;
/// `CUSOLVER_STATUS_NOT_SUPPORTED`.
const NOT_SUPPORTED: i32 = 9;

/// NVIDIA's cuSOLVER, opened on first use and shared by every client.
pub(super) type SolverLibrary = LazyLibrary<nv::Solver>;

/// The cuSOLVER handles of one client context, by wire id.
#[derive(Debug, Default)]
pub(super) struct SolverHandles {
    handles: BTreeMap<u64, nv::SolverHandle>,
    next: u64,
}

impl SolverHandles {
    /// Destroys every handle and frees its workspace (before the context
    /// goes).
    pub(super) fn clear(&mut self) {
        self.handles.clear();
    }

    /// The bytes of workspace the server holds for this client's handles.
    #[cfg(test)]
    pub(super) fn workspace_bytes(&self) -> u64 {
        self.handles.values().map(|h| h.workspace_bytes()).sum()
    }
}

/// The routine a checked call runs, and its precision.
fn dense(call: &Call) -> Option<(Precision, Dense)> {
    let p = |dtype: u8| Precision::from_dtype(dtype);
    Some(match *call {
        // Answered by `solver_call` itself, or by `jacobi` and `irs`.
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
        | Call::RfDestroy { .. } => return None,
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
        } => (
            p(dtype)?,
            // `device_ranges` allows w_real 1 for a real A only.
            Dense::Geev {
                w_real: w_real == 1,
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
            },
        ),
        Call::Getrf {
            dtype,
            m,
            n,
            a,
            lda,
            ipiv,
            info,
            ..
        } => (
            p(dtype)?,
            Dense::Getrf {
                m,
                n,
                a,
                lda,
                ipiv,
                info,
            },
        ),
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
        } => (
            p(dtype)?,
            Dense::Getrs {
                trans,
                n,
                nrhs,
                a,
                lda,
                ipiv,
                b,
                ldb,
                info,
            },
        ),
        Call::Potrf {
            dtype,
            uplo,
            n,
            a,
            lda,
            info,
            ..
        } => (
            p(dtype)?,
            Dense::Potrf {
                uplo,
                n,
                a,
                lda,
                info,
            },
        ),
        Call::Potrs {
            dtype,
            uplo,
            n,
            nrhs,
            a,
            lda,
            b,
            ldb,
            info,
            ..
        } => (
            p(dtype)?,
            Dense::Potrs {
                uplo,
                n,
                nrhs,
                a,
                lda,
                b,
                ldb,
                info,
            },
        ),
        Call::Geqrf {
            dtype,
            m,
            n,
            a,
            lda,
            tau,
            info,
            ..
        } => (
            p(dtype)?,
            Dense::Geqrf {
                m,
                n,
                a,
                lda,
                tau,
                info,
            },
        ),
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
        } => (
            p(dtype)?,
            Dense::Ormqr {
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
            },
        ),
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
        } => (
            p(dtype)?,
            Dense::Orgqr {
                m,
                n,
                k,
                a,
                lda,
                tau,
                info,
            },
        ),
        Call::Syevd {
            dtype,
            jobz,
            uplo,
            n,
            a,
            lda,
            w,
            info,
            ..
        } => (
            p(dtype)?,
            Dense::Syevd {
                jobz,
                uplo,
                n,
                a,
                lda,
                w,
                info,
            },
        ),
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
        } => (
            p(dtype)?,
            Dense::Gesvd {
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
            },
        ),
    })
}

/// The Jacobi or gesvda routine a checked call describes.
fn jacobi(call: &Call) -> Option<(Precision, nv::Jacobi)> {
    let p = |dtype: u8| Precision::from_dtype(dtype);
    Some(match *call {
        Call::Syevj {
            dtype,
            jobz,
            uplo,
            n,
            a,
            lda,
            w,
            info,
            batch,
            batched,
            tol,
            max_sweeps,
            sort,
            ..
        } => (
            p(dtype)?,
            nv::Jacobi::Syevj {
                jobz,
                uplo,
                n,
                a,
                lda,
                w,
                info,
                batched: batched == 1,
                batch,
                settings: nv::JacobiSettings {
                    tol,
                    max_sweeps,
                    sort,
                },
            },
        ),
        Call::Gesvdj {
            dtype,
            jobz,
            econ,
            m,
            n,
            a,
            lda,
            s,
            u,
            ldu,
            v,
            ldv,
            info,
            batch,
            batched,
            tol,
            max_sweeps,
            sort,
            ..
        } => (
            p(dtype)?,
            nv::Jacobi::Gesvdj {
                jobz,
                econ,
                m,
                n,
                a,
                lda,
                s,
                u,
                ldu,
                v,
                ldv,
                info,
                batched: batched == 1,
                batch,
                settings: nv::JacobiSettings {
                    tol,
                    max_sweeps,
                    sort,
                },
            },
        ),
        Call::Gesvda {
            dtype,
            jobz,
            rank,
            m,
            n,
            a,
            lda,
            stride_a,
            s,
            stride_s,
            u,
            ldu,
            stride_u,
            v,
            ldv,
            stride_v,
            info,
            batch,
            ..
        } => (
            p(dtype)?,
            nv::Jacobi::Gesvda {
                jobz,
                rank,
                m,
                n,
                a: (a, lda, stride_a),
                s: (s, stride_s),
                u: (u, ldu, stride_u),
                v: (v, ldv, stride_v),
                info,
                batch,
            },
        ),
        _ => return None,
    })
}

/// The IRS solve a checked [`Call::Irs`] describes.
fn irs(call: &Call) -> Option<nv::Irs> {
    let Call::Irs {
        dtype,
        lowest,
        gels,
        m,
        n,
        nrhs,
        a,
        lda,
        ipiv,
        b,
        ldb,
        x,
        ldx,
        info,
        refine,
        max_iters,
        tol,
        fallback,
        ..
    } = *call
    else {
        return None;
    };
    Some(nv::Irs {
        main: Precision::from_dtype(dtype)?,
        lowest,
        gels: gels == 1,
        m,
        n,
        nrhs,
        a,
        lda,
        ipiv,
        b,
        ldb,
        x,
        ldx,
        info,
        refine,
        max_iters,
        tol,
        fallback: fallback != 0,
    })
}

impl CudaDeviceContext {
    /// Runs one cuSOLVER call (the library's calls on the `cuda` backend).
    pub(super) fn solver_call(&mut self, call: Call) -> Result<Reply, Failure> {
        let handle = match call {
            Call::Create {} => return self.solver_create(),
            Call::Destroy { handle } => {
                // Dropping the handle destroys it, with its context current,
                // and frees its workspace.
                return Ok(match self.solver.handles.remove(&handle) {
                    Some(_) => Reply::ok(Vec::new()),
                    None => Reply::status(NOT_INITIALIZED),
                });
            }
            Call::SpInfoDestroy { .. } => return Ok(Reply::status(NOT_SUPPORTED)),
            // cusolverRf is computed on the emulated device only.
            Call::RfSetup { .. }
            | Call::RfResetValues { .. }
            | Call::RfRefactor { .. }
            | Call::RfSolve { .. }
            | Call::RfExtract { .. }
            | Call::RfBatchSetup { .. }
            | Call::RfBatchResetValues { .. }
            | Call::RfBatchRefactor { .. }
            | Call::RfBatchSolve { .. }
            | Call::RfDestroy { .. } => {
                tracing::info!("cusolverRf is not forwarded to the GPU");
                return Ok(Reply::status(NOT_SUPPORTED));
            }
            ref other => other.handle(),
        };
        if !handle.is_some_and(|h| self.solver.handles.contains_key(&h)) {
            return Ok(Reply::status(NOT_INITIALIZED));
        }
        let ranges = match call.device_ranges() {
            Ok(ranges) => ranges,
            Err(invalid) => {
                tracing::debug!("{invalid}");
                return Ok(Reply::status(INVALID_VALUE));
            }
        };
        if matches!(
            call,
            Call::SpLsv { .. }
                | Call::SpAnalysis { .. }
                | Call::SpBufferInfo { .. }
                | Call::SpSetup { .. }
                | Call::SpFactor { .. }
                | Call::SpZeroPivot { .. }
                | Call::SpSolve { .. }
                | Call::SpCholDiag { .. }
                | Call::SpEigvsi { .. }
                | Call::SpQrsvBatched { .. }
        ) {
            tracing::info!("cuSOLVER's sparse API is not forwarded to the GPU");
            return Ok(Reply::status(NOT_SUPPORTED));
        }
        if let Some(reply) = self.batched_cholesky(&call) {
            return reply;
        }
        // Empty ranges touch nothing, as on the emulated device.
        for (ptr, len) in ranges.into_iter().filter(|&(_, len)| len > 0) {
            if self.memory.check(ptr, len).is_err() {
                return Err(Failure::new(
                    CudaError::ILLEGAL_ADDRESS,
                    format!(
                        "cuSOLVER: {len} bytes at {ptr:#x} are outside the client's device memory"
                    ),
                ));
            }
        }
        if let Some((precision, op)) = jacobi(&call) {
            self.live()?;
            let Some(h) = handle.and_then(|h| self.solver.handles.get_mut(&h)) else {
                return Ok(Reply::status(NOT_INITIALIZED));
            };
            return match h.run_jacobi(precision, &op) {
                Ok(host) => Ok(Reply::ok(host)),
                Err(e) => self.solver_failed(e),
            };
        }
        if let Some(irs) = irs(&call) {
            self.live()?;
            let Some(h) = handle.and_then(|h| self.solver.handles.get_mut(&h)) else {
                return Ok(Reply::status(NOT_INITIALIZED));
            };
            // The residual history is the emulated device's alone: the
            // answer carries `niters` only.
            return match h.run_irs(&irs) {
                Ok(niters) => Ok(Reply::ok(niters.to_le_bytes().to_vec())),
                Err(e) => self.solver_failed(e),
            };
        }
        let Some((precision, op)) = dense(&call) else {
            // `device_ranges` refused every other data type.
            return Ok(Reply::status(INVALID_VALUE));
        };
        self.live()?;
        let Some(h) = handle.and_then(|h| self.solver.handles.get_mut(&h)) else {
            return Ok(Reply::status(NOT_INITIALIZED));
        };
        match h.run(precision, op) {
            Ok(()) => Ok(Reply::ok(Vec::new())),
            Err(e) => self.solver_failed(e),
        }
    }

    /// `potrfBatched` / `potrsBatched` (None for another call): every
    /// matrix the pointer arrays name is checked against the client's
    /// allocations, and cuSOLVER gets the server's copies of the arrays.
    fn batched_cholesky(&mut self, call: &Call) -> Option<Result<Reply, Failure>> {
        // The routine (its arrays filled in once staged) and, for each
        // operand, (pointer array, rows, columns, leading dimension).
        let (handle, dtype, template, operands) = match *call {
            Call::PotrfBatched {
                handle,
                dtype,
                uplo,
                n,
                a,
                lda,
                info,
                batch,
            } => (
                handle,
                dtype,
                nv::Batched::Potrf {
                    uplo,
                    n,
                    a: 0,
                    lda,
                    info,
                    batch,
                },
                vec![(a, n, n, lda)],
            ),
            Call::PotrsBatched {
                handle,
                dtype,
                uplo,
                n,
                nrhs,
                a,
                lda,
                b,
                ldb,
                info,
                batch,
            } => (
                handle,
                dtype,
                nv::Batched::Potrs {
                    uplo,
                    n,
                    nrhs,
                    a: 0,
                    lda,
                    b: 0,
                    ldb,
                    info,
                    batch,
                },
                vec![(a, n, n, lda), (b, n, nrhs, ldb)],
            ),
            _ => return None,
        };
        // `device_ranges` refused every other data type.
        let precision = Precision::from_dtype(dtype)?;
        let elem = rcud_proto::math::solver::element_size(dtype)?;
        let arrays: Vec<PointerArray> = operands
            .iter()
            .zip(["Aarray", "Barray"])
            .map(|(&(ptr, rows, cols, ld), what)| PointerArray {
                what,
                ptr,
                shape: (i64::from(rows), i64::from(cols)),
                ld: i64::from(ld),
                elem,
            })
            .collect();
        let batch = match template {
            nv::Batched::Potrf { batch, .. } | nv::Batched::Potrs { batch, .. } => batch,
        };
        // The server's copies of the arrays in place of the client's (one
        // staged address per operand).
        let staged_call = |staged: &[u64]| match template {
            nv::Batched::Potrf {
                uplo,
                n,
                lda,
                info,
                batch,
                ..
            } => nv::Batched::Potrf {
                uplo,
                n,
                a: staged[0],
                lda,
                info,
                batch,
            },
            nv::Batched::Potrs {
                uplo,
                n,
                nrhs,
                lda,
                ldb,
                info,
                batch,
                ..
            } => nv::Batched::Potrs {
                uplo,
                n,
                nrhs,
                a: staged[0],
                lda,
                b: staged[1],
                ldb,
                info,
                batch,
            },
        };
        let mut ran = None;
        let checked = self.with_checked_arrays(&arrays, batch, |ctx, staged| {
            let Some(h) = ctx.solver.handles.get_mut(&handle) else {
                ran = Some(Ok(Reply::status(NOT_INITIALIZED)));
                return Ok(());
            };
            ran = Some(match h.run_batched(precision, &staged_call(staged)) {
                Ok(()) => Ok(Reply::ok(Vec::new())),
                Err(e) => ctx.solver_failed(e),
            });
            Ok(())
        });
        Some(match checked {
            Ok(()) => ran.unwrap_or(Ok(Reply::status(INTERNAL_ERROR))),
            // The dimensions passed `device_ranges`: a refusal here is a
            // matrix outside the client's memory.
            Err(Outcome::Refused(Refusal::Fault { what, ptr, len })) => Err(Failure::new(
                CudaError::ILLEGAL_ADDRESS,
                format!(
                    "cuSOLVER {what}: {len} bytes at {ptr:#x} are outside the client's device memory"
                ),
            )),
            Err(Outcome::Refused(Refusal::Status(_))) => Ok(Reply::status(INVALID_VALUE)),
            Err(Outcome::Library(e)) => {
                tracing::warn!("cuSOLVER batched Cholesky: {e}");
                Ok(Reply::status(INTERNAL_ERROR))
            }
            Err(Outcome::Failed(f)) => Err(f),
        })
    }

    fn solver_create(&mut self) -> Result<Reply, Failure> {
        let library = self.solver_library.clone();
        let solver = library.get()?;
        let ctx = self.live()?.clone();
        match ctx.solver_handle(solver) {
            Ok(h) => {
                self.solver.next += 1;
                let id = self.solver.next;
                self.solver.handles.insert(id, h);
                Ok(Reply::ok(id.to_le_bytes().to_vec()))
            }
            Err(e) => self.solver_failed(e),
        }
    }

    /// cuSOLVER's own status goes back to the application; a driver failure
    /// (the context broken, the workspace not allocated) is the runtime's
    /// error.
    fn solver_failed(&mut self, e: SolverError) -> Result<Reply, Failure> {
        match e {
            SolverError::Status { call, status } => {
                tracing::debug!("{call}: cusolverStatus_t {status}");
                Ok(Reply::status(status))
            }
            SolverError::Missing { call } => {
                tracing::info!("{call} is not in the server's cuSOLVER (CUDA 12.6 added it)");
                Ok(Reply::status(NOT_SUPPORTED))
            }
            SolverError::Workspace { .. } => {
                tracing::warn!("{e}");
                Ok(Reply::status(INTERNAL_ERROR))
            }
            SolverError::Driver(e) => Err(self.note(&e)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn calls_map_to_their_routine_and_precision() {
        let call = Call::Gesvd {
            handle: 1,
            dtype: 3,
            jobu: b'S',
            jobvt: b'N',
            m: 4,
            n: 2,
            a: 0x100,
            lda: 4,
            s: 0x200,
            u: 0x300,
            ldu: 4,
            vt: 0,
            ldvt: 1,
            info: 0x400,
        };
        assert_eq!(
            dense(&call),
            Some((
                Precision::Z,
                Dense::Gesvd {
                    jobu: b'S',
                    jobvt: b'N',
                    m: 4,
                    n: 2,
                    a: 0x100,
                    lda: 4,
                    s: 0x200,
                    u: 0x300,
                    ldu: 4,
                    vt: 0,
                    ldvt: 1,
                    info: 0x400,
                }
            ))
        );
        assert_eq!(dense(&Call::Create {}), None);
        let bad = Call::Potrf {
            handle: 1,
            dtype: 9,
            uplo: 0,
            n: 1,
            a: 0,
            lda: 1,
            info: 0,
        };
        assert_eq!(dense(&bad), None);
    }
}
