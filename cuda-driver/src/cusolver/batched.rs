//! cuSOLVER's batched Cholesky on a GPU: `potrfBatched` and `potrsBatched`,
//! whose matrices are named by device arrays of pointers. The caller hands
//! over arrays it has read, checked against the client's allocations and
//! copied into device memory of the server's own, so that the client cannot
//! change a pointer between the check and the call. Both entry points are
//! optional: a library without them answers [`SolverError::Missing`].

use super::{check, int_ptr, ptr, Data, Handle, Int, IntPtr, Precision, SolverError, Status};
use crate::optional;

type PotrfBatched = unsafe extern "C" fn(Handle, Int, Int, Data, Int, IntPtr, Int) -> Status;
type PotrsBatched =
    unsafe extern "C" fn(Handle, Int, Int, Int, Data, Int, Data, Int, IntPtr, Int) -> Status;

/// The batched Cholesky entry points, four forms each by [`Precision`].
pub(super) struct BatchedApi {
    potrf: Option<[PotrfBatched; 4]>,
    potrs: Option<[PotrsBatched; 4]>,
}

impl BatchedApi {
    /// # Safety
    ///
    /// As for [`crate::symbol`]: the types are the prototypes of
    /// `cusolverDn.h` (handles and data as `void *`, enums as `int`), and
    /// `lib` outlives the pointers.
    pub(super) unsafe fn resolve(lib: &libloading::Library) -> Self {
        // SAFETY: forwarded from the caller.
        unsafe {
            Self {
                potrf: (|| {
                    Some([
                        optional(lib, "cusolverDnSpotrfBatched")?,
                        optional(lib, "cusolverDnDpotrfBatched")?,
                        optional(lib, "cusolverDnCpotrfBatched")?,
                        optional(lib, "cusolverDnZpotrfBatched")?,
                    ])
                })(),
                potrs: (|| {
                    Some([
                        optional(lib, "cusolverDnSpotrsBatched")?,
                        optional(lib, "cusolverDnDpotrsBatched")?,
                        optional(lib, "cusolverDnCpotrsBatched")?,
                        optional(lib, "cusolverDnZpotrsBatched")?,
                    ])
                })(),
            }
        }
    }
}

/// One batched Cholesky routine. `a` and `b` are the server's checked
/// copies of the pointer arrays; `info` is the client's (one `int` per
/// matrix for potrf, one for potrs).
#[allow(missing_docs)] // named as in the cuSOLVER documentation
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Batched {
    Potrf {
        uplo: i32,
        n: i32,
        a: u64,
        lda: i32,
        info: u64,
        batch: i32,
    },
    Potrs {
        uplo: i32,
        n: i32,
        nrhs: i32,
        a: u64,
        lda: i32,
        b: u64,
        ldb: i32,
        info: u64,
        batch: i32,
    },
}

impl super::SolverHandle {
    /// Runs one batched Cholesky routine in precision `p` and waits for it
    /// (the pointer arrays are freed after).
    pub fn run_batched(&mut self, p: Precision, op: &Batched) -> Result<(), SolverError> {
        self.ctx.bind()?;
        let (h, i) = (self.raw, p.index());
        // Both unsafe blocks are sound because: the prototypes match
        // (`BatchedApi::resolve`); `h` is a live handle on this context's
        // stream, which is current; the pointer arrays are the server's
        // copies of arrays whose every matrix was checked, and `info` was
        // checked too.
        let (status, call) = match *op {
            Batched::Potrf {
                uplo,
                n,
                a,
                lda,
                info,
                batch,
            } => {
                let Some(potrf) = self.api.batched.potrf else {
                    return Err(SolverError::Missing {
                        call: "cusolverDn?potrfBatched",
                    });
                };
                // SAFETY: see above.
                let status = unsafe { (potrf[i])(h, uplo, n, ptr(a), lda, int_ptr(info), batch) };
                (status, "cusolverDn?potrfBatched")
            }
            Batched::Potrs {
                uplo,
                n,
                nrhs,
                a,
                lda,
                b,
                ldb,
                info,
                batch,
            } => {
                let Some(potrs) = self.api.batched.potrs else {
                    return Err(SolverError::Missing {
                        call: "cusolverDn?potrsBatched",
                    });
                };
                // SAFETY: see above.
                let status = unsafe {
                    (potrs[i])(
                        h,
                        uplo,
                        n,
                        nrhs,
                        ptr(a),
                        lda,
                        ptr(b),
                        ldb,
                        int_ptr(info),
                        batch,
                    )
                };
                (status, "cusolverDn?potrsBatched")
            }
        };
        check(status, call)?;
        self.ctx.sync_stream()?;
        Ok(())
    }
}
