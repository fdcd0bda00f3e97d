//! The sparse API's batched QR: `XcsrqrAnalysisBatched`,
//! `?csrqrBufferInfoBatched` and `?csrqrsvBatched`. Many systems share one
//! analysed pattern, each with its own values and right-hand side; the
//! server solves the whole batch in one request.

use super::*;

/// `cusolverSpXcsrqrAnalysisBatched`: the analysis of the unbatched form
/// (the pattern is the same for every system).
#[no_mangle]
#[allow(clippy::too_many_arguments)]
pub extern "C" fn cusolverSpXcsrqrAnalysisBatched(
    handle: Handle,
    m: c_int,
    n: c_int,
    nnz: c_int,
    descr: *const c_void,
    rowptr: *const c_int,
    colind: *const c_int,
    info: *mut c_void,
) -> c_int {
    super::cusolverSpXcsrqrAnalysis(handle, m, n, nnz, descr, rowptr, colind, info)
}

/// The operands both batched routines check alike.
struct Batch {
    m: c_int,
    n: c_int,
    nnz: c_int,
    descr: *const c_void,
    size: c_int,
    info: *mut c_void,
}

impl Batch {
    /// cuSOLVER's argument checks; the analysis must have seen `m` rows.
    fn check(&self) -> Status {
        let Batch {
            m, n, nnz, size, ..
        } = *self;
        if m <= 0 || n <= 0 || nnz <= 0 || size <= 0 || m < n {
            return Err(INVALID_VALUE);
        }
        general_base(self.descr)?;
        if device_rows(self.info, Method::Qr)? != m {
            return Err(INVALID_VALUE);
        }
        Ok(())
    }
}

/// `?csrqrBufferInfoBatched`: one system's factor and workspace, as the
/// unbatched form answers them, for each system of the batch.
fn buffer_info_batched(
    handle: Handle,
    dtype: u8,
    batch: &Batch,
    (internal, workspace): (*mut usize, *mut usize),
) -> c_int {
    run(|| {
        check_handle(handle)?;
        batch.check()?;
        if internal.is_null() || workspace.is_null() {
            return Err(INVALID_VALUE);
        }
        let (mut one_internal, mut one_workspace) = (0usize, 0usize);
        match buffer_info(
            handle,
            false,
            Method::Qr,
            dtype,
            batch.info,
            (&mut one_internal, &mut one_workspace),
        ) {
            SUCCESS => {}
            status => return Err(status),
        }
        let systems = count(batch.size)?;
        out(internal, one_internal.saturating_mul(systems))?;
        out(workspace, one_workspace.saturating_mul(systems))
    })
}

/// `?csrqrsvBatched`: every system A_j x_j = b_j (least squares when
/// m > n), values `nnz` apart, b `m` apart and x `n` apart.
fn qrsv_batched(
    handle: Handle,
    dtype: u8,
    batch: &Batch,
    (val, b, x): (*const c_void, *const c_void, *mut c_void),
    buffer: *mut c_void,
) -> c_int {
    run(|| {
        check_handle(handle)?;
        batch.check()?;
        if val.is_null() || b.is_null() || x.is_null() || buffer.is_null() {
            return Err(INVALID_VALUE);
        }
        queue(handle, |h| Call::SpQrsvBatched {
            handle: h,
            info: batch.info as u64,
            dtype,
            m: batch.m,
            n: batch.n,
            nnz: batch.nnz,
            val: val as u64,
            b: b as u64,
            x: x as u64,
            batch: batch.size,
        })
    })
}

macro_rules! batched_qr {
    ($(fn $buffer_info:ident / $qrsv:ident (dtype $dtype:expr);)*) => {$(
        #[no_mangle]
        #[allow(clippy::too_many_arguments)]
        pub extern "C" fn $buffer_info(
            handle: Handle,
            m: c_int,
            n: c_int,
            nnz: c_int,
            descr: *const c_void,
            val: *const c_void,
            rowptr: *const c_int,
            colind: *const c_int,
            batch_size: c_int,
            info: *mut c_void,
            internal: *mut usize,
            workspace: *mut usize,
        ) -> c_int {
            // The sizes follow from the analysed pattern alone.
            let _ = (val, rowptr, colind);
            let batch = Batch { m, n, nnz, descr, size: batch_size, info };
            buffer_info_batched(handle, $dtype, &batch, (internal, workspace))
        }

        #[no_mangle]
        #[allow(clippy::too_many_arguments)]
        pub extern "C" fn $qrsv(
            handle: Handle,
            m: c_int,
            n: c_int,
            nnz: c_int,
            descr: *const c_void,
            val: *const c_void,
            rowptr: *const c_int,
            colind: *const c_int,
            b: *const c_void,
            x: *mut c_void,
            batch_size: c_int,
            info: *mut c_void,
            buffer: *mut c_void,
        ) -> c_int {
            // The analysis's pattern is used, as in the unbatched factor.
            let _ = (rowptr, colind);
            let batch = Batch { m, n, nnz, descr, size: batch_size, info };
            qrsv_batched(handle, $dtype, &batch, (val, b, x), buffer)
        }
    )*};
}

batched_qr! {
    fn cusolverSpScsrqrBufferInfoBatched / cusolverSpScsrqrsvBatched (dtype 0);
    fn cusolverSpDcsrqrBufferInfoBatched / cusolverSpDcsrqrsvBatched (dtype 1);
    fn cusolverSpCcsrqrBufferInfoBatched / cusolverSpCcsrqrsvBatched (dtype 2);
    fn cusolverSpZcsrqrBufferInfoBatched / cusolverSpZcsrqrsvBatched (dtype 3);
}
