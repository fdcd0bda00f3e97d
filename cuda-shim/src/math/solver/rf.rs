//! cusolverRf (`cusolverRf.h`): refactorization of matrices that share one
//! sparsity pattern, in double precision.
//!
//! A `cusolverRfHandle_t` is an id of the client, which keeps its settings
//! (matrix format, unit diagonal, numeric properties, algorithms, fast
//! mode) and the host copies that the `Extract*Host` functions hand out.
//! The server holds the Rf object's numbers: P, Q, A, and L - I + U on the
//! pattern of the setup. Every call is one request, answered before the
//! function returns (cusolverRf has no stream; its results are ready when
//! the application synchronizes, and earlier here).

// C names, exported (unreachable from Rust, reachable from C).
#![allow(non_snake_case, unreachable_pub)]

use std::collections::HashMap;
use std::os::raw::{c_int, c_void};
use std::sync::Mutex;

use rcud_proto::math::solver::Call;
use rcud_proto::math::Library;

use super::{
    EXECUTION_FAILED, INTERNAL_ERROR, INVALID_VALUE, NOT_INITIALIZED, NOT_SUPPORTED, SUCCESS,
    ZERO_PIVOT,
};
use crate::ffi::write_out;
use crate::math::guard;

type Handle = *mut c_void;
type Status = Result<(), c_int>;

/// One extracted CSR factor on the host: the arrays the application is
/// handed pointers to, alive until the next extraction or the destroy.
#[derive(Default)]
struct HostFactor {
    nnz: i32,
    rowptr: Vec<i32>,
    colind: Vec<i32>,
    values: Vec<f64>,
}

/// A setup's n, nnz(A), entries of L - I + U and of its strictly lower
/// part.
#[derive(Clone, Copy)]
struct Counts {
    n: c_int,
    nnz_a: c_int,
    nnz_m: c_int,
    lower: c_int,
}

impl Counts {
    /// Entries of L and U as `diag` (`cusolverRfUnitDiagonal_t`) splits
    /// them: the unit factor has its diagonal when it is stored, the other
    /// always.
    fn split(self, diag: c_int) -> (c_int, c_int) {
        let upper = self.nnz_m - self.lower - self.n;
        match diag {
            0 | 1 => (self.lower + self.n, upper + self.n),
            2 => (self.lower, upper + self.n),
            _ => (self.lower + self.n, upper),
        }
    }
}

#[derive(Default)]
struct Rf {
    format: c_int,
    diag: c_int,
    zero: f64,
    boost: f64,
    fast_mode: c_int,
    fact_alg: c_int,
    solve_alg: c_int,
    /// The setup's counts.
    setup: Option<Counts>,
    /// A batched setup's counts and, per matrix, the last batched
    /// refactorization's zero pivot (-1: none).
    batch: Option<(Counts, Vec<c_int>)>,
    boosted: bool,
    bundled: Option<HostFactor>,
    split: Option<(HostFactor, HostFactor)>,
    /// `AccessBundledFactorsDevice`'s device arrays (row offsets, columns,
    /// values), freed on destroy.
    device: Option<[u64; 3]>,
}

static RFS: Mutex<Option<(u64, HashMap<u64, Rf>)>> = Mutex::new(None);

fn with_rfs<R>(f: impl FnOnce(&mut u64, &mut HashMap<u64, Rf>) -> R) -> R {
    let mut guard = RFS.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    let (next, table) = guard.get_or_insert_with(|| (0x9000, HashMap::new()));
    f(next, table)
}

fn run(body: impl FnOnce() -> Status) -> c_int {
    guard(INTERNAL_ERROR, || match body() {
        Ok(()) => SUCCESS,
        Err(status) => status,
    })
}

fn with_rf<R>(handle: Handle, f: impl FnOnce(&mut Rf) -> Result<R, c_int>) -> Result<R, c_int> {
    with_rfs(|_, table| match table.get_mut(&(handle as u64)) {
        Some(rf) => f(rf),
        None => Err(NOT_INITIALIZED),
    })
}

fn out<T>(ptr: *mut T, value: T) -> Status {
    write_out(ptr, value).map_err(|_| INVALID_VALUE)
}

/// Sends `call` and waits: its output bytes, or its status.
fn sync(call: &Call) -> Result<Vec<u8>, c_int> {
    let ranges = call.device_ranges().map_err(|_| INVALID_VALUE)?;
    if let Some(&(ptr, len)) = ranges
        .iter()
        .find(|&&(ptr, len)| !crate::math::is_device_range(ptr, len))
    {
        tracing::warn!(
            target: "rcud::cusolver",
            "device range {ptr:#x}+{len} is outside the application's allocations"
        );
        return Err(INVALID_VALUE);
    }
    match crate::math::call(0, Library::Solver, call) {
        Ok(reply) if reply.status == SUCCESS => Ok(reply.out),
        Ok(reply) => Err(reply.status),
        Err(_) => Err(EXECUTION_FAILED),
    }
}

fn word(bytes: &[u8], at: usize) -> Result<i32, c_int> {
    bytes
        .get(at..at + 4)
        .and_then(|b| <[u8; 4]>::try_from(b).ok())
        .map(i32::from_le_bytes)
        .ok_or(INTERNAL_ERROR)
}

/// Device memory the library allocates for itself: staging buffers, freed
/// on drop, or kept (`keep`) for `AccessBundledFactorsDevice`.
struct Staged(Vec<u64>);

impl Staged {
    fn alloc(&mut self, bytes: usize) -> Result<u64, c_int> {
        let mut ptr: *mut c_void = std::ptr::null_mut();
        if crate::cudart::memory::cudaMalloc(&mut ptr, bytes.max(1)) != 0 {
            return Err(super::ALLOC_FAILED);
        }
        self.0.push(ptr as u64);
        Ok(ptr as u64)
    }

    /// A device copy of `count` elements at the host pointer `src`.
    fn upload<T>(&mut self, src: *const T, count: c_int) -> Result<u64, c_int> {
        let count = usize::try_from(count).map_err(|_| INVALID_VALUE)?;
        let bytes = count * std::mem::size_of::<T>();
        let ptr = self.alloc(bytes)?;
        if bytes > 0 {
            if src.is_null() {
                return Err(INVALID_VALUE);
            }
            // cudaMemcpy reads the application's host array, as
            // cusolverRfSetupHost would.
            let status =
                crate::cudart::memory::cudaMemcpy(ptr as *mut c_void, src.cast(), bytes, 1);
            if status != 0 {
                return Err(EXECUTION_FAILED);
            }
        }
        Ok(ptr)
    }

    /// Device copies of a host CSR matrix of `rows` rows and `nnz` entries
    /// (zero-based, double values): row offsets, columns, values.
    fn upload_csr(
        &mut self,
        (rows, nnz): (c_int, c_int),
        rowptr: *const c_int,
        colind: *const c_int,
        val: *const f64,
    ) -> Result<[u64; 3], c_int> {
        let offsets = rows.checked_add(1).ok_or(INVALID_VALUE)?;
        Ok([
            self.upload(rowptr, offsets)?,
            self.upload(colind, nnz)?,
            self.upload(val, nnz)?,
        ])
    }

    /// A CSR matrix's three device arrays of `nnz` entries.
    fn csr(&mut self, n: c_int, nnz: c_int) -> Result<[u64; 3], c_int> {
        let rows = usize::try_from(n).map_err(|_| INVALID_VALUE)? + 1;
        let nnz = usize::try_from(nnz).map_err(|_| INVALID_VALUE)?;
        Ok([
            self.alloc(4 * rows)?,
            self.alloc(4 * nnz)?,
            self.alloc(8 * nnz)?,
        ])
    }

    fn keep(mut self) -> Vec<u64> {
        std::mem::take(&mut self.0)
    }
}

impl Drop for Staged {
    fn drop(&mut self) {
        for &ptr in &self.0 {
            crate::cudart::memory::cudaFree(ptr as *mut c_void);
        }
    }
}

/// `count` elements of device memory at `ptr`.
fn download<T: Copy + Default>(ptr: u64, count: usize) -> Result<Vec<T>, c_int> {
    let mut out = vec![T::default(); count];
    if count > 0 {
        let bytes = count * std::mem::size_of::<T>();
        let status = crate::cudart::memory::cudaMemcpy(
            out.as_mut_ptr().cast(),
            ptr as *const c_void,
            bytes,
            2,
        );
        if status != 0 {
            return Err(EXECUTION_FAILED);
        }
    }
    Ok(out)
}

/// A factor the server wrote at `ptrs`, copied to the host.
fn fetch(n: c_int, nnz: c_int, ptrs: [u64; 3]) -> Result<HostFactor, c_int> {
    let rows = usize::try_from(n).map_err(|_| INTERNAL_ERROR)? + 1;
    let count = usize::try_from(nnz).map_err(|_| INTERNAL_ERROR)?;
    Ok(HostFactor {
        nnz,
        rowptr: download(ptrs[0], rows)?,
        colind: download(ptrs[1], count)?,
        values: download(ptrs[2], count)?,
    })
}

#[no_mangle]
pub extern "C" fn cusolverRfCreate(handle: *mut Handle) -> c_int {
    run(|| {
        if handle.is_null() {
            return Err(INVALID_VALUE);
        }
        let id = with_rfs(|next, table| {
            *next += 16;
            // cuSOLVER's defaults: CSR, L's unit diagonal stored, ALG0 and
            // ALG1, fast mode off, no zero detection nor boost.
            table.insert(
                *next,
                Rf {
                    solve_alg: 1,
                    ..Rf::default()
                },
            );
            *next
        });
        out(handle, id as Handle)
    })
}

#[no_mangle]
pub extern "C" fn cusolverRfDestroy(handle: Handle) -> c_int {
    run(|| {
        let rf = with_rfs(|_, table| table.remove(&(handle as u64))).ok_or(NOT_INITIALIZED)?;
        if let Some(ptrs) = rf.device {
            for ptr in ptrs {
                crate::cudart::memory::cudaFree(ptr as *mut c_void);
            }
        }
        if rf.setup.is_some() || rf.batch.is_some() {
            sync(&Call::RfDestroy { rf: handle as u64 })?;
        }
        Ok(())
    })
}

#[no_mangle]
pub extern "C" fn cusolverRfGetMatrixFormat(
    handle: Handle,
    format: *mut c_int,
    diag: *mut c_int,
) -> c_int {
    run(|| {
        let (f, d) = with_rf(handle, |rf| Ok((rf.format, rf.diag)))?;
        out(format, f)?;
        out(diag, d)
    })
}

#[no_mangle]
pub extern "C" fn cusolverRfSetMatrixFormat(handle: Handle, format: c_int, diag: c_int) -> c_int {
    run(|| {
        with_rf(handle, |rf| {
            if !(0..=1).contains(&format) || !(0..=3).contains(&diag) {
                return Err(INVALID_VALUE);
            }
            rf.format = format;
            rf.diag = diag;
            Ok(())
        })
    })
}

#[no_mangle]
pub extern "C" fn cusolverRfSetNumericProperties(handle: Handle, zero: f64, boost: f64) -> c_int {
    run(|| {
        with_rf(handle, |rf| {
            // NaN is refused too.
            if !(0.0..).contains(&zero) || !(0.0..).contains(&boost) {
                return Err(INVALID_VALUE);
            }
            rf.zero = zero;
            rf.boost = boost;
            Ok(())
        })
    })
}

#[no_mangle]
pub extern "C" fn cusolverRfGetNumericProperties(
    handle: Handle,
    zero: *mut f64,
    boost: *mut f64,
) -> c_int {
    run(|| {
        let (z, b) = with_rf(handle, |rf| Ok((rf.zero, rf.boost)))?;
        out(zero, z)?;
        out(boost, b)
    })
}

#[no_mangle]
pub extern "C" fn cusolverRfGetNumericBoostReport(handle: Handle, report: *mut c_int) -> c_int {
    run(|| {
        let boosted = with_rf(handle, |rf| Ok(rf.boosted))?;
        out(report, c_int::from(boosted))
    })
}

#[no_mangle]
pub extern "C" fn cusolverRfSetAlgs(handle: Handle, fact_alg: c_int, solve_alg: c_int) -> c_int {
    run(|| {
        with_rf(handle, |rf| {
            // The algorithms choose GPU kernels; one CPU code serves all.
            if !(0..=2).contains(&fact_alg) || !(1..=3).contains(&solve_alg) {
                return Err(INVALID_VALUE);
            }
            rf.fact_alg = fact_alg;
            rf.solve_alg = solve_alg;
            Ok(())
        })
    })
}

#[no_mangle]
pub extern "C" fn cusolverRfGetAlgs(
    handle: Handle,
    fact_alg: *mut c_int,
    solve_alg: *mut c_int,
) -> c_int {
    run(|| {
        let (f, s) = with_rf(handle, |rf| Ok((rf.fact_alg, rf.solve_alg)))?;
        out(fact_alg, f)?;
        out(solve_alg, s)
    })
}

#[no_mangle]
pub extern "C" fn cusolverRfSetResetValuesFastMode(handle: Handle, mode: c_int) -> c_int {
    run(|| {
        with_rf(handle, |rf| {
            if !(0..=1).contains(&mode) {
                return Err(INVALID_VALUE);
            }
            rf.fast_mode = mode;
            Ok(())
        })
    })
}

#[no_mangle]
pub extern "C" fn cusolverRfGetResetValuesFastMode(handle: Handle, mode: *mut c_int) -> c_int {
    run(|| {
        let m = with_rf(handle, |rf| Ok(rf.fast_mode))?;
        out(mode, m)
    })
}

/// The settings a setup needs: its unit diagonal. Only CSR input is taken.
fn setup_checks(handle: Handle, n: c_int, nnz: [c_int; 3]) -> Result<c_int, c_int> {
    let (format, diag) = with_rf(handle, |rf| Ok((rf.format, rf.diag)))?;
    if n <= 0 || nnz.iter().any(|&v| v < 0) {
        return Err(INVALID_VALUE);
    }
    if format != 0 {
        tracing::info!(target: "rcud::cusolver", "cusolverRf: CSC input is not supported");
        return Err(NOT_SUPPORTED);
    }
    Ok(diag)
}

fn record_setup(handle: Handle, n: c_int, nnz_a: c_int, reply: &[u8]) -> Status {
    let counts = Counts {
        n,
        nnz_a,
        nnz_m: word(reply, 0)?,
        lower: word(reply, 4)?,
    };
    with_rf(handle, |rf| {
        rf.setup = Some(counts);
        rf.batch = None;
        rf.boosted = false;
        Ok(())
    })
}

#[no_mangle]
pub extern "C" fn cusolverRfSetupHost(
    n: c_int,
    nnz_a: c_int,
    rowptr_a: *const c_int,
    colind_a: *const c_int,
    val_a: *const f64,
    nnz_l: c_int,
    rowptr_l: *const c_int,
    colind_l: *const c_int,
    val_l: *const f64,
    nnz_u: c_int,
    rowptr_u: *const c_int,
    colind_u: *const c_int,
    val_u: *const f64,
    p: *const c_int,
    q: *const c_int,
    handle: Handle,
) -> c_int {
    run(|| {
        let diag = setup_checks(handle, n, [nnz_a, nnz_l, nnz_u])?;
        // A frame is bounded and factors are not: the arrays go to device
        // memory first, and the setup reads them there.
        let mut staged = Staged(Vec::new());
        let a = staged.upload_csr((n, nnz_a), rowptr_a, colind_a, val_a)?;
        let l = staged.upload_csr((n, nnz_l), rowptr_l, colind_l, val_l)?;
        let u = staged.upload_csr((n, nnz_u), rowptr_u, colind_u, val_u)?;
        let call = Call::RfSetup {
            rf: handle as u64,
            n,
            nnz_a,
            a,
            nnz_l,
            l,
            nnz_u,
            u,
            p: staged.upload(p, n)?,
            q: staged.upload(q, n)?,
            diag,
        };
        let reply = sync(&call)?;
        record_setup(handle, n, nnz_a, &reply)
    })
}

#[no_mangle]
pub extern "C" fn cusolverRfSetupDevice(
    n: c_int,
    nnz_a: c_int,
    rowptr_a: *const c_int,
    colind_a: *const c_int,
    val_a: *const f64,
    nnz_l: c_int,
    rowptr_l: *const c_int,
    colind_l: *const c_int,
    val_l: *const f64,
    nnz_u: c_int,
    rowptr_u: *const c_int,
    colind_u: *const c_int,
    val_u: *const f64,
    p: *const c_int,
    q: *const c_int,
    handle: Handle,
) -> c_int {
    run(|| {
        let diag = setup_checks(handle, n, [nnz_a, nnz_l, nnz_u])?;
        let call = Call::RfSetup {
            rf: handle as u64,
            n,
            nnz_a,
            a: [rowptr_a as u64, colind_a as u64, val_a as u64],
            nnz_l,
            l: [rowptr_l as u64, colind_l as u64, val_l as u64],
            nnz_u,
            u: [rowptr_u as u64, colind_u as u64, val_u as u64],
            p: p as u64,
            q: q as u64,
            diag,
        };
        let reply = sync(&call)?;
        record_setup(handle, n, nnz_a, &reply)
    })
}

/// The setup's counts, or NOT_INITIALIZED before one.
fn set_up(handle: Handle) -> Result<Counts, c_int> {
    with_rf(handle, |rf| rf.setup.ok_or(NOT_INITIALIZED))
}

#[no_mangle]
pub extern "C" fn cusolverRfResetValues(
    n: c_int,
    nnz_a: c_int,
    rowptr_a: *const c_int,
    colind_a: *const c_int,
    val_a: *const f64,
    p: *const c_int,
    q: *const c_int,
    handle: Handle,
) -> c_int {
    run(|| {
        let counts = set_up(handle)?;
        if n != counts.n || nnz_a != counts.nnz_a {
            return Err(INVALID_VALUE);
        }
        sync(&Call::RfResetValues {
            rf: handle as u64,
            n,
            nnz_a,
            a: [rowptr_a as u64, colind_a as u64, val_a as u64],
            p: p as u64,
            q: q as u64,
        })
        .map(drop)
    })
}

#[no_mangle]
pub extern "C" fn cusolverRfAnalyze(handle: Handle) -> c_int {
    // The analysis finds parallelism for GPU kernels; the pattern is all
    // the CPU code needs, and the setup has it.
    run(|| set_up(handle).map(drop))
}

#[no_mangle]
pub extern "C" fn cusolverRfRefactor(handle: Handle) -> c_int {
    run(|| {
        set_up(handle)?;
        let (zero, boost) = with_rf(handle, |rf| Ok((rf.zero, rf.boost)))?;
        let reply = sync(&Call::RfRefactor {
            rf: handle as u64,
            zero,
            boost,
        })?;
        // Word 0, the first zero pivot, is what cusolverRfBatchRefactor
        // answers per matrix; a single matrix has no report of it.
        let boosted = reply.get(4).copied().ok_or(INTERNAL_ERROR)? != 0;
        with_rf(handle, |rf| {
            rf.boosted = boosted;
            Ok(())
        })
    })
}

#[no_mangle]
pub extern "C" fn cusolverRfSolve(
    handle: Handle,
    p: *const c_int,
    q: *const c_int,
    nrhs: c_int,
    temp: *mut f64,
    ldt: c_int,
    xf: *mut f64,
    ldxf: c_int,
) -> c_int {
    run(|| {
        let n = set_up(handle)?.n;
        sync(&Call::RfSolve {
            rf: handle as u64,
            n,
            p: p as u64,
            q: q as u64,
            nrhs,
            temp: temp as u64,
            ldt,
            xf: xf as u64,
            ldxf,
        })
        .map(drop)
    })
}

/// Hands out one host factor's arrays.
fn hand_out(
    f: &mut HostFactor,
    nnz: *mut c_int,
    rowptr: *mut *mut c_int,
    colind: *mut *mut c_int,
    val: *mut *mut f64,
) -> Status {
    out(nnz, f.nnz)?;
    out(rowptr, f.rowptr.as_mut_ptr())?;
    out(colind, f.colind.as_mut_ptr())?;
    out(val, f.values.as_mut_ptr())
}

#[no_mangle]
pub extern "C" fn cusolverRfExtractBundledFactorsHost(
    handle: Handle,
    nnz: *mut c_int,
    rowptr: *mut *mut c_int,
    colind: *mut *mut c_int,
    val: *mut *mut f64,
) -> c_int {
    run(|| {
        let c = set_up(handle)?;
        if [
            nnz.is_null(),
            rowptr.is_null(),
            colind.is_null(),
            val.is_null(),
        ]
        .contains(&true)
        {
            return Err(INVALID_VALUE);
        }
        let mut staged = Staged(Vec::new());
        let m = staged.csr(c.n, c.nnz_m)?;
        sync(&Call::RfExtract {
            rf: handle as u64,
            n: c.n,
            diag: -1,
            nnz_l: c.nnz_m,
            l: m,
            nnz_u: 0,
            u: [0; 3],
        })?;
        let factor = fetch(c.n, c.nnz_m, m)?;
        with_rf(handle, |rf| {
            let f = rf.bundled.insert(factor);
            hand_out(f, nnz, rowptr, colind, val)
        })
    })
}

#[no_mangle]
pub extern "C" fn cusolverRfExtractSplitFactorsHost(
    handle: Handle,
    nnz_l: *mut c_int,
    rowptr_l: *mut *mut c_int,
    colind_l: *mut *mut c_int,
    val_l: *mut *mut f64,
    nnz_u: *mut c_int,
    rowptr_u: *mut *mut c_int,
    colind_u: *mut *mut c_int,
    val_u: *mut *mut f64,
) -> c_int {
    run(|| {
        let c = set_up(handle)?;
        let outs = [
            nnz_l.is_null(),
            rowptr_l.is_null(),
            colind_l.is_null(),
            val_l.is_null(),
        ];
        let outs_u = [
            nnz_u.is_null(),
            rowptr_u.is_null(),
            colind_u.is_null(),
            val_u.is_null(),
        ];
        if outs.contains(&true) || outs_u.contains(&true) {
            return Err(INVALID_VALUE);
        }
        let diag = with_rf(handle, |rf| Ok(rf.diag))?;
        let (count_l, count_u) = c.split(diag);
        let mut staged = Staged(Vec::new());
        let (l, u) = (staged.csr(c.n, count_l)?, staged.csr(c.n, count_u)?);
        sync(&Call::RfExtract {
            rf: handle as u64,
            n: c.n,
            diag,
            nnz_l: count_l,
            l,
            nnz_u: count_u,
            u,
        })?;
        let l = fetch(c.n, count_l, l)?;
        let u = fetch(c.n, count_u, u)?;
        with_rf(handle, |rf| {
            let (l, u) = rf.split.insert((l, u));
            hand_out(l, nnz_l, rowptr_l, colind_l, val_l)?;
            hand_out(u, nnz_u, rowptr_u, colind_u, val_u)
        })
    })
}

#[no_mangle]
pub extern "C" fn cusolverRfAccessBundledFactorsDevice(
    handle: Handle,
    nnz: *mut c_int,
    rowptr: *mut *mut c_int,
    colind: *mut *mut c_int,
    val: *mut *mut f64,
) -> c_int {
    run(|| {
        let Counts { n, nnz_m, .. } = set_up(handle)?;
        if [
            nnz.is_null(),
            rowptr.is_null(),
            colind.is_null(),
            val.is_null(),
        ]
        .contains(&true)
        {
            return Err(INVALID_VALUE);
        }
        let ptrs = match with_rf(handle, |rf| Ok(rf.device))? {
            Some(ptrs) => ptrs,
            None => {
                let mut staged = Staged(Vec::new());
                let ptrs = staged.csr(n, nnz_m)?;
                // The application may read them until the destroy.
                staged.keep();
                with_rf(handle, |rf| {
                    rf.device = Some(ptrs);
                    Ok(())
                })?;
                ptrs
            }
        };
        sync(&Call::RfExtract {
            rf: handle as u64,
            n,
            diag: -1,
            nnz_l: nnz_m,
            l: ptrs,
            nnz_u: 0,
            u: [0; 3],
        })?;
        out(nnz, nnz_m)?;
        out(rowptr, ptrs[0] as *mut c_int)?;
        out(colind, ptrs[1] as *mut c_int)?;
        out(val, ptrs[2] as *mut f64)
    })
}

/// The batched setup's counts and batch size, or NOT_INITIALIZED before
/// one.
fn batch_set_up(handle: Handle) -> Result<(Counts, usize), c_int> {
    with_rf(handle, |rf| {
        rf.batch
            .as_ref()
            .map(|(counts, pivots)| (*counts, pivots.len()))
            .ok_or(NOT_INITIALIZED)
    })
}

/// Checks the device array `array` of `size` device pointers, and that each
/// names `bytes` inside the application's allocations: the server would
/// fault on another (cuSOLVER reads them on the device; rcud answers
/// INVALID_VALUE rather than a sticky illegal address).
fn check_members(array: u64, size: usize, bytes: u64) -> Status {
    let span = u64::try_from(size)
        .ok()
        .and_then(|s| s.checked_mul(8))
        .ok_or(INVALID_VALUE)?;
    if !crate::math::is_device_range(array, span) {
        return Err(INVALID_VALUE);
    }
    let pointers: Vec<u64> = download(array, size)?;
    if bytes > 0 {
        if let Some(&bad) = pointers
            .iter()
            .find(|&&ptr| !crate::math::is_device_range(ptr, bytes))
        {
            tracing::warn!(
                target: "rcud::cusolver",
                "cusolverRfBatch: pointer {bad:#x}+{bytes} is outside the application's allocations"
            );
            return Err(INVALID_VALUE);
        }
    }
    Ok(())
}

/// Bytes of `count` doubles.
fn doubles(count: c_int) -> Result<u64, c_int> {
    u64::try_from(count)
        .ok()
        .and_then(|c| c.checked_mul(8))
        .ok_or(INVALID_VALUE)
}

/// A batch size as cusolverRf takes it: at least 1.
fn batch_size(batch: c_int) -> Result<usize, c_int> {
    match usize::try_from(batch) {
        Ok(size) if size >= 1 => Ok(size),
        _ => Err(INVALID_VALUE),
    }
}

#[no_mangle]
pub extern "C" fn cusolverRfBatchSetupHost(
    batch: c_int,
    n: c_int,
    nnz_a: c_int,
    rowptr_a: *const c_int,
    colind_a: *const c_int,
    val_a_array: *const *const f64,
    nnz_l: c_int,
    rowptr_l: *const c_int,
    colind_l: *const c_int,
    val_l: *const f64,
    nnz_u: c_int,
    rowptr_u: *const c_int,
    colind_u: *const c_int,
    val_u: *const f64,
    p: *const c_int,
    q: *const c_int,
    handle: Handle,
) -> c_int {
    run(|| {
        let diag = setup_checks(handle, n, [nnz_a, nnz_l, nnz_u])?;
        let size = batch_size(batch)?;
        if val_a_array.is_null() {
            return Err(INVALID_VALUE);
        }
        // SAFETY: the application passes `batchSize` host pointers.
        let values = unsafe { std::slice::from_raw_parts(val_a_array, size) };
        // As cusolverRfSetupHost: the arrays are staged in device memory,
        // with a device array of the batch's device pointers.
        let rows = n.checked_add(1).ok_or(INVALID_VALUE)?;
        let mut staged = Staged(Vec::new());
        let members = values
            .iter()
            .map(|&v| staged.upload(v, nnz_a))
            .collect::<Result<Vec<u64>, c_int>>()?;
        let count = c_int::try_from(members.len()).map_err(|_| INVALID_VALUE)?;
        let a = [
            staged.upload(rowptr_a, rows)?,
            staged.upload(colind_a, nnz_a)?,
            staged.upload(members.as_ptr(), count)?,
        ];
        let l = staged.upload_csr((n, nnz_l), rowptr_l, colind_l, val_l)?;
        let u = staged.upload_csr((n, nnz_u), rowptr_u, colind_u, val_u)?;
        let call = Call::RfBatchSetup {
            rf: handle as u64,
            batch,
            n,
            nnz_a,
            a,
            nnz_l,
            l,
            nnz_u,
            u,
            p: staged.upload(p, n)?,
            q: staged.upload(q, n)?,
            diag,
        };
        let reply = sync(&call)?;
        let counts = Counts {
            n,
            nnz_a,
            nnz_m: word(&reply, 0)?,
            lower: word(&reply, 4)?,
        };
        with_rf(handle, |rf| {
            rf.setup = None;
            rf.batch = Some((counts, vec![-1; size]));
            rf.boosted = false;
            Ok(())
        })
    })
}

#[no_mangle]
pub extern "C" fn cusolverRfBatchAnalyze(handle: Handle) -> c_int {
    // As cusolverRfAnalyze: the batched setup has the pattern.
    run(|| batch_set_up(handle).map(drop))
}

#[no_mangle]
pub extern "C" fn cusolverRfBatchResetValues(
    batch: c_int,
    n: c_int,
    nnz_a: c_int,
    rowptr_a: *const c_int,
    colind_a: *const c_int,
    val_a_array: *const *const f64,
    p: *const c_int,
    q: *const c_int,
    handle: Handle,
) -> c_int {
    run(|| {
        let (counts, size) = batch_set_up(handle)?;
        if batch_size(batch)? != size || n != counts.n || nnz_a != counts.nnz_a {
            return Err(INVALID_VALUE);
        }
        check_members(val_a_array as u64, size, doubles(nnz_a)?)?;
        sync(&Call::RfBatchResetValues {
            rf: handle as u64,
            batch,
            n,
            nnz_a,
            a: [rowptr_a as u64, colind_a as u64, val_a_array as u64],
            p: p as u64,
            q: q as u64,
        })
        .map(drop)
    })
}

#[no_mangle]
pub extern "C" fn cusolverRfBatchRefactor(handle: Handle) -> c_int {
    run(|| {
        let (_, size) = batch_set_up(handle)?;
        let (zero, boost) = with_rf(handle, |rf| Ok((rf.zero, rf.boost)))?;
        let reply = sync(&Call::RfBatchRefactor {
            rf: handle as u64,
            zero,
            boost,
        })?;
        let pivots = (0..size)
            .map(|i| word(&reply, 4 * i))
            .collect::<Result<Vec<c_int>, c_int>>()?;
        let boosted = reply.get(4 * size).copied().ok_or(INTERNAL_ERROR)? != 0;
        with_rf(handle, |rf| {
            rf.boosted = boosted;
            if let Some((_, last)) = rf.batch.as_mut() {
                *last = pivots;
            }
            Ok(())
        })
    })
}

#[no_mangle]
pub extern "C" fn cusolverRfBatchSolve(
    handle: Handle,
    p: *const c_int,
    q: *const c_int,
    nrhs: c_int,
    temp: *mut f64,
    ldt: c_int,
    xf_array: *const *mut f64,
    ldxf: c_int,
) -> c_int {
    run(|| {
        let (counts, size) = batch_set_up(handle)?;
        if nrhs != 1 || ldt < counts.n || ldxf < counts.n {
            return Err(INVALID_VALUE);
        }
        check_members(xf_array as u64, size, doubles(counts.n)?)?;
        sync(&Call::RfBatchSolve {
            rf: handle as u64,
            batch: c_int::try_from(size).map_err(|_| INTERNAL_ERROR)?,
            n: counts.n,
            p: p as u64,
            q: q as u64,
            nrhs,
            temp: temp as u64,
            ldt,
            xf: xf_array as u64,
            ldxf,
        })
        .map(drop)
    })
}

#[no_mangle]
pub extern "C" fn cusolverRfBatchZeroPivot(handle: Handle, position: *mut c_int) -> c_int {
    run(|| {
        let pivots = with_rf(handle, |rf| {
            rf.batch
                .as_ref()
                .map(|(_, pivots)| pivots.clone())
                .ok_or(NOT_INITIALIZED)
        })?;
        if position.is_null() {
            return Err(INVALID_VALUE);
        }
        // SAFETY: the application passes a host array of `batchSize` ints.
        let out = unsafe { std::slice::from_raw_parts_mut(position, pivots.len()) };
        out.copy_from_slice(&pivots);
        if pivots.iter().any(|&at| at >= 0) {
            Err(ZERO_PIVOT)
        } else {
            Ok(())
        }
    })
}
