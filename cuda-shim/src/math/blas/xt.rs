//! cuBLASXt (`cublasXt.h`): the level-3 routines on matrices in host or
//! device memory, blocking.
//!
//! An Xt handle owns a cuBLAS handle, made by `cublasXtDeviceSelect` on
//! the first selected device; every routine runs there. rcud does not tile
//! a call across the other selected devices: the server's cuBLAS computes
//! the whole product at once, so tiling would only add copies. Each call
//! copies the operands in host memory (exactly the column-major submatrix
//! its leading dimension describes) to temporary device buffers, runs the
//! cuBLAS routine of this library, copies the output (C, or B for trsm)
//! back, waits for the device and frees the buffers. Operands already in
//! device memory (inside an application allocation, managed or mapped
//! memory) are used in place.
//!
//! The CPU share (`cublasXtSetCpuRatio`, `cublasXtSetCpuRoutine`) is
//! checked and stored, but the work still goes to the device: the "CPU"
//! of an rcud client is not where the data is computed.
//!
//! spmm stays a stub: rcud's cuBLAS has no packed level-3 routine to run
//! it on (`exports/unsupported.txt`).

use std::collections::HashMap;
use std::os::raw::{c_int, c_void};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::OnceLock;

use parking_lot::Mutex;
use rcud_client::Runtime;

use super::level3;
use super::{
    copy2d, diag_arg, fill_arg, leading, matrix_bytes, op_arg, read_host, run, side_arg,
    write_host, Handle, HostValue, EXECUTION_FAILED, INVALID_VALUE, NOT_INITIALIZED, SUCCESS,
};

/// `CUBLAS_STATUS_ALLOC_FAILED`: a temporary device buffer could not be had.
const ALLOC_FAILED: c_int = 3;

/// `cublasXtHandle_t`.
type XtHandle = *mut c_void;

/// cuBLASXt's default block dimension.
const DEFAULT_BLOCK_DIM: c_int = 1024;
/// `CUBLASXT_ROUTINE_MAX`: the routines of `cublasXtBlasOp_t`.
const ROUTINES: usize = 12;
/// The types of `cublasXtOpType_t` (float, double, complex, double complex).
const TYPES: usize = 4;

/// What the client keeps of an Xt handle.
struct XtState {
    /// The cuBLAS handle on `devices[0]`, once devices are selected.
    blas: Option<usize>,
    devices: Vec<c_int>,
    block_dim: c_int,
    pinning: c_int,
    /// Stored as set; the work goes to the device all the same.
    #[allow(dead_code)]
    cpu_ratio: [[f32; TYPES]; ROUTINES],
    /// Stored as set (a host BLAS function); never called.
    #[allow(dead_code)]
    cpu_routine: [[usize; TYPES]; ROUTINES],
}

fn handles() -> &'static Mutex<HashMap<usize, XtState>> {
    static HANDLES: OnceLock<Mutex<HashMap<usize, XtState>>> = OnceLock::new();
    HANDLES.get_or_init(Default::default)
}

fn rt() -> &'static Runtime {
    Runtime::global()
}

/// Next client-side handle value: non-null, pointer-sized, never reused.
static NEXT_HANDLE: AtomicUsize = AtomicUsize::new(0xb1a7_0000);

/// Runs `f` on the state of handle `h`, or answers `NOT_INITIALIZED`.
fn with_state<R>(h: XtHandle, f: impl FnOnce(&mut XtState) -> R) -> Result<R, c_int> {
    let mut table = handles().lock();
    let state = table.get_mut(&(h as usize)).ok_or(NOT_INITIALIZED)?;
    Ok(f(state))
}

/// A `size_t` argument as the signed size cuBLAS's `_64` routines take.
fn dim(v: usize) -> Result<i64, c_int> {
    i64::try_from(v).map_err(|_| INVALID_VALUE)
}

/// The runtime's device count; no server means no library.
fn device_count() -> Result<usize, c_int> {
    rt().device_count().map_err(|e| {
        tracing::debug!("cuBLASXt: no devices: {e:?}");
        NOT_INITIALIZED
    })
}

/// Makes `device` current until dropped, then restores the application's.
struct OnDevice(Option<usize>);

impl OnDevice {
    fn new(device: c_int) -> Result<Self, c_int> {
        let current = rt().current_device().map_err(|_| NOT_INITIALIZED)?;
        if usize::try_from(device).ok() == Some(current) {
            return Ok(Self(None));
        }
        rt().set_device(device).map_err(|e| {
            tracing::debug!("cuBLASXt: device {device}: {e:?}");
            EXECUTION_FAILED
        })?;
        Ok(Self(Some(current)))
    }
}

impl Drop for OnDevice {
    fn drop(&mut self) {
        if let Some(previous) = self.0 {
            if let Err(e) = rt().set_device(previous as c_int) {
                tracing::debug!("cuBLASXt: restoring device {previous}: {e:?}");
            }
        }
    }
}

/// Temporary device buffers of one call, freed when it ends (also on an
/// error).
struct Temps(Vec<u64>);

impl Drop for Temps {
    fn drop(&mut self) {
        for &ptr in &self.0 {
            if let Err(e) = rt().free(ptr) {
                tracing::debug!("cuBLASXt: freeing a temporary: {e:?}");
            }
        }
    }
}

/// How a routine uses a matrix.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Role {
    /// Read only.
    In,
    /// Read and written (C with beta, B of trsm).
    InOut,
    /// Written only (C of trmm).
    Out,
}

/// A matrix operand as the application passed it: `rows` x `cols` in
/// column-major order with leading dimension `ld`.
#[derive(Clone, Copy)]
struct Mat {
    ptr: *mut c_void,
    rows: i64,
    cols: i64,
    ld: i64,
    role: Role,
}

impl Mat {
    fn new<T>(ptr: *const T, rows: i64, cols: i64, ld: usize, role: Role) -> Result<Self, c_int> {
        Ok(Self {
            ptr: ptr.cast_mut().cast(),
            rows,
            cols,
            ld: dim(ld)?,
            role,
        })
    }
}

/// Copies a `rows` x `cols` matrix of `size`-byte elements.
fn copy_matrix(
    (dst, ldd): (*mut c_void, i64),
    (src, lds): (*const c_void, i64),
    rows: i64,
    cols: i64,
    size: u64,
) -> Result<(), c_int> {
    copy2d(
        dst,
        ldd as u64 * size,
        src,
        lds as u64 * size,
        rows as u64 * size,
        cols as u64,
        None,
    )
}

/// Where the device routine finds `m`: in place when it already lies in
/// device memory, else a new temporary (filled unless only written).
fn stage(m: &Mat, size: u64, temps: &mut Temps) -> Result<(*mut c_void, i64), c_int> {
    if m.rows == 0 || m.cols == 0 || m.ptr.is_null() {
        // Nothing to move; cuBLAS checks the pointer itself.
        return Ok((m.ptr, m.ld));
    }
    let span = matrix_bytes(m.rows, m.cols, m.ld, size).ok_or(INVALID_VALUE)?;
    if super::super::is_device_range(m.ptr as u64, span) {
        return Ok((m.ptr, m.ld));
    }
    let bytes = (m.rows as u64)
        .checked_mul(m.cols as u64)
        .and_then(|e| e.checked_mul(size))
        .ok_or(ALLOC_FAILED)?;
    let dev = rt().malloc(bytes).map_err(|e| {
        tracing::debug!("cuBLASXt: temporary of {bytes} bytes: {e:?}");
        ALLOC_FAILED
    })?;
    temps.0.push(dev);
    let dev = dev as *mut c_void;
    if m.role != Role::Out {
        copy_matrix((dev, m.rows), (m.ptr, m.ld), m.rows, m.cols, size)?;
    }
    Ok((dev, m.rows))
}

/// Runs one Xt routine: checks the leading dimensions, stages the
/// operands on the handle's device, runs `body` with the cuBLAS handle
/// and the staged (pointer, leading dimension) pairs, copies the outputs
/// back and waits for the device.
fn launch<const N: usize>(
    h: XtHandle,
    size: usize,
    mats: [Mat; N],
    body: impl FnOnce(Handle, [(*mut c_void, i64); N]) -> c_int,
) -> Result<(), c_int> {
    let (blas, device) = with_state(h, |s| (s.blas, s.devices.first().copied()))?;
    // Routines before cublasXtDeviceSelect have no device to run on.
    let (Some(blas), Some(device)) = (blas, device) else {
        return Err(NOT_INITIALIZED);
    };
    for m in &mats {
        if m.rows < 0 || m.cols < 0 {
            return Err(INVALID_VALUE);
        }
        leading(m.ld, m.rows)?;
    }
    let size = size as u64;
    let _device = OnDevice::new(device)?;
    let mut temps = Temps(Vec::new());
    let mut staged = [(std::ptr::null_mut(), 0); N];
    for (slot, m) in staged.iter_mut().zip(&mats) {
        *slot = stage(m, size, &mut temps)?;
    }
    let status = body(blas as Handle, staged);
    if status != SUCCESS {
        return Err(status);
    }
    for (m, &(dev, ld)) in mats.iter().zip(&staged) {
        if m.role != Role::In && dev != m.ptr {
            copy_matrix((m.ptr, m.ld), (dev, ld), m.rows, m.cols, size)?;
        }
    }
    // Blocking, as cuBLASXt is, also when every operand was on the device.
    rt().synchronize().map_err(|e| {
        tracing::debug!("cuBLASXt: synchronize: {e:?}");
        EXECUTION_FAILED
    })
}

// ---- handles and settings ---------------------------------------------------

#[no_mangle]
pub extern "C" fn cublasXtCreate(out: *mut XtHandle) -> c_int {
    run(|| {
        if out.is_null() {
            return Err(INVALID_VALUE);
        }
        device_count()?;
        let value = NEXT_HANDLE.fetch_add(0x10, Ordering::Relaxed);
        handles().lock().insert(
            value,
            XtState {
                blas: None,
                devices: Vec::new(),
                block_dim: DEFAULT_BLOCK_DIM,
                pinning: 0,
                cpu_ratio: [[0.0; TYPES]; ROUTINES],
                cpu_routine: [[0; TYPES]; ROUTINES],
            },
        );
        write_host(out, value as XtHandle)
    })
}

#[no_mangle]
pub extern "C" fn cublasXtDestroy(h: XtHandle) -> c_int {
    run(|| {
        let state = handles()
            .lock()
            .remove(&(h as usize))
            .ok_or(NOT_INITIALIZED)?;
        match state.blas {
            Some(blas) => match super::cublasDestroy_v2(blas as Handle) {
                SUCCESS => Ok(()),
                status => Err(status),
            },
            None => Ok(()),
        }
    })
}

#[no_mangle]
pub extern "C" fn cublasXtDeviceSelect(h: XtHandle, count: c_int, ids: *mut c_int) -> c_int {
    run(|| {
        with_state(h, |_| ())?;
        let available = device_count()?;
        let n = usize::try_from(count).map_err(|_| INVALID_VALUE)?;
        if n == 0 || n > available || ids.is_null() {
            return Err(INVALID_VALUE);
        }
        // SAFETY: cuBLASXt's contract: `ids` holds `count` device ids;
        // NULL and non-positive counts were rejected.
        let list = unsafe { std::slice::from_raw_parts(ids, n) }.to_vec();
        for (i, &d) in list.iter().enumerate() {
            let known = usize::try_from(d).is_ok_and(|d| d < available);
            if !known || list[..i].contains(&d) {
                return Err(INVALID_VALUE);
            }
        }
        let mut blas: Handle = std::ptr::null_mut();
        {
            // The cuBLAS handle belongs to the first selected device.
            let _device = OnDevice::new(list[0])?;
            match super::cublasCreate_v2(&mut blas) {
                SUCCESS => {}
                status => return Err(status),
            }
        }
        let old = with_state(h, |s| {
            s.devices = list;
            s.blas.replace(blas as usize)
        });
        match old {
            Ok(Some(old)) => {
                super::cublasDestroy_v2(old as Handle);
                Ok(())
            }
            Ok(None) => Ok(()),
            Err(status) => {
                // Destroyed meanwhile by another thread.
                super::cublasDestroy_v2(blas);
                Err(status)
            }
        }
    })
}

#[no_mangle]
pub extern "C" fn cublasXtSetBlockDim(h: XtHandle, block_dim: c_int) -> c_int {
    run(|| {
        with_state(h, |_| ())?;
        if block_dim <= 0 {
            return Err(INVALID_VALUE);
        }
        with_state(h, |s| s.block_dim = block_dim)
    })
}

#[no_mangle]
pub extern "C" fn cublasXtGetBlockDim(h: XtHandle, block_dim: *mut c_int) -> c_int {
    run(|| write_host(block_dim, with_state(h, |s| s.block_dim)?))
}

#[no_mangle]
pub extern "C" fn cublasXtSetPinningMemMode(h: XtHandle, mode: c_int) -> c_int {
    run(|| {
        with_state(h, |_| ())?;
        // CUBLASXT_PINNING_DISABLED, CUBLASXT_PINNING_ENABLED. Pinning would
        // speed up copies to a local GPU; rcud's copies go to the server
        // either way, so the mode is only kept.
        if !(0..=1).contains(&mode) {
            return Err(INVALID_VALUE);
        }
        with_state(h, |s| s.pinning = mode)
    })
}

#[no_mangle]
pub extern "C" fn cublasXtGetPinningMemMode(h: XtHandle, mode: *mut c_int) -> c_int {
    run(|| write_host(mode, with_state(h, |s| s.pinning)?))
}

/// The (routine, type) indices of a CPU-share setting, checked.
fn routine_slot(op: c_int, kind: c_int) -> Result<(usize, usize), c_int> {
    let op = usize::try_from(op).ok().filter(|&o| o < ROUTINES);
    let kind = usize::try_from(kind).ok().filter(|&t| t < TYPES);
    match (op, kind) {
        (Some(op), Some(kind)) => Ok((op, kind)),
        _ => Err(INVALID_VALUE),
    }
}

#[no_mangle]
pub extern "C" fn cublasXtSetCpuRatio(h: XtHandle, op: c_int, kind: c_int, ratio: f32) -> c_int {
    run(|| {
        with_state(h, |_| ())?;
        let (op, kind) = routine_slot(op, kind)?;
        if !(0.0..=1.0).contains(&ratio) {
            return Err(INVALID_VALUE);
        }
        with_state(h, |s| s.cpu_ratio[op][kind] = ratio)
    })
}

#[no_mangle]
pub extern "C" fn cublasXtSetCpuRoutine(
    h: XtHandle,
    op: c_int,
    kind: c_int,
    routine: *mut c_void,
) -> c_int {
    run(|| {
        with_state(h, |_| ())?;
        let (op, kind) = routine_slot(op, kind)?;
        with_state(h, |s| s.cpu_routine[op][kind] = routine as usize)
    })
}

#[no_mangle]
pub extern "C" fn cublasXtGetNumBoards(count: c_int, ids: *mut c_int, boards: *mut c_int) -> c_int {
    run(|| {
        let available = device_count()?;
        let n = usize::try_from(count).map_err(|_| INVALID_VALUE)?;
        if n > 0 && ids.is_null() {
            return Err(INVALID_VALUE);
        }
        if n > 0 {
            // SAFETY: cuBLASXt's contract: `ids` holds `count` device ids;
            // NULL was rejected.
            let list = unsafe { std::slice::from_raw_parts(ids, n) };
            if !list
                .iter()
                .all(|&d| usize::try_from(d).is_ok_and(|d| d < available))
            {
                return Err(INVALID_VALUE);
            }
        }
        // Every rcud device is a board of its own.
        write_host(boards, count)
    })
}

#[no_mangle]
pub extern "C" fn cublasXtMaxBoards(boards: *mut c_int) -> c_int {
    run(|| {
        write_host(
            boards,
            c_int::try_from(device_count()?).unwrap_or(c_int::MAX),
        )
    })
}

// ---- routines -------------------------------------------------------------

/// Whether a host scalar is zero (A and B of a GEMM are then not read).
fn host_zero<T: HostValue>(alpha: *const T) -> Result<bool, c_int> {
    Ok(read_host(alpha)?.parts() == (0.0, 0.0))
}

macro_rules! xt_gemm {
    ($(pub extern "C" fn $name:ident($t:ty) => $inner:ident;)*) => {$(
        #[no_mangle]
        #[allow(clippy::too_many_arguments)]
        pub extern "C" fn $name(h: XtHandle, transa: c_int, transb: c_int, m: usize, n: usize, k: usize, alpha: *const $t, a: *const $t, lda: usize, b: *const $t, ldb: usize, beta: *const $t, c: *mut $t, ldc: usize) -> c_int {
            run(|| {
                with_state(h, |_| ())?;
                op_arg(transa)?;
                op_arg(transb)?;
                let (m, n, k) = (dim(m)?, dim(n)?, dim(k)?);
                let (ar, ac) = if transa == 0 { (m, k) } else { (k, m) };
                let (br, bc) = if transb == 0 { (k, n) } else { (n, k) };
                // A and B need not be valid when alpha is zero.
                let read = !host_zero(alpha)?;
                let (ac, bc) = if read { (ac, bc) } else { (0, 0) };
                let mats = [
                    Mat::new(a, ar, ac, lda, Role::In)?,
                    Mat::new(b, br, bc, ldb, Role::In)?,
                    Mat::new(c, m, n, ldc, Role::InOut)?,
                ];
                launch(h, std::mem::size_of::<$t>(), mats, |blas, [(a, lda), (b, ldb), (c, ldc)]| {
                    level3::$inner::$inner(blas, transa, transb, m, n, k, alpha, a.cast(), lda, b.cast(), ldb, beta, c.cast(), ldc)
                })
            })
        }
    )*};
}

xt_gemm! {
    pub extern "C" fn cublasXtSgemm(f32) => cublasSgemm_v2_64;
    pub extern "C" fn cublasXtDgemm(f64) => cublasDgemm_v2_64;
    pub extern "C" fn cublasXtCgemm([f32; 2]) => cublasCgemm_v2_64;
    pub extern "C" fn cublasXtZgemm([f64; 2]) => cublasZgemm_v2_64;
}

macro_rules! xt_symm {
    ($(pub extern "C" fn $name:ident($t:ty) => $inner:ident;)*) => {$(
        #[no_mangle]
        #[allow(clippy::too_many_arguments)]
        pub extern "C" fn $name(h: XtHandle, side: c_int, uplo: c_int, m: usize, n: usize, alpha: *const $t, a: *const $t, lda: usize, b: *const $t, ldb: usize, beta: *const $t, c: *mut $t, ldc: usize) -> c_int {
            run(|| {
                with_state(h, |_| ())?;
                side_arg(side)?;
                fill_arg(uplo)?;
                let (m, n) = (dim(m)?, dim(n)?);
                let na = if side == 0 { m } else { n };
                let mats = [
                    Mat::new(a, na, na, lda, Role::In)?,
                    Mat::new(b, m, n, ldb, Role::In)?,
                    Mat::new(c, m, n, ldc, Role::InOut)?,
                ];
                launch(h, std::mem::size_of::<$t>(), mats, |blas, [(a, lda), (b, ldb), (c, ldc)]| {
                    level3::$inner::$inner(blas, side, uplo, m, n, alpha, a.cast(), lda, b.cast(), ldb, beta, c.cast(), ldc)
                })
            })
        }
    )*};
}

xt_symm! {
    pub extern "C" fn cublasXtSsymm(f32) => cublasSsymm_v2_64;
    pub extern "C" fn cublasXtDsymm(f64) => cublasDsymm_v2_64;
    pub extern "C" fn cublasXtCsymm([f32; 2]) => cublasCsymm_v2_64;
    pub extern "C" fn cublasXtZsymm([f64; 2]) => cublasZsymm_v2_64;
    pub extern "C" fn cublasXtChemm([f32; 2]) => cublasChemm_v2_64;
    pub extern "C" fn cublasXtZhemm([f64; 2]) => cublasZhemm_v2_64;
}

macro_rules! xt_syrk {
    ($(pub extern "C" fn $name:ident($t:ty, $s:ty) => $inner:ident;)*) => {$(
        #[no_mangle]
        #[allow(clippy::too_many_arguments)]
        pub extern "C" fn $name(h: XtHandle, uplo: c_int, trans: c_int, n: usize, k: usize, alpha: *const $s, a: *const $t, lda: usize, beta: *const $s, c: *mut $t, ldc: usize) -> c_int {
            run(|| {
                with_state(h, |_| ())?;
                fill_arg(uplo)?;
                op_arg(trans)?;
                let (n, k) = (dim(n)?, dim(k)?);
                let (ar, ac) = if trans == 0 { (n, k) } else { (k, n) };
                // The whole square of C travels, so the triangle cuBLAS
                // leaves alone comes back unchanged.
                let mats = [
                    Mat::new(a, ar, ac, lda, Role::In)?,
                    Mat::new(c, n, n, ldc, Role::InOut)?,
                ];
                launch(h, std::mem::size_of::<$t>(), mats, |blas, [(a, lda), (c, ldc)]| {
                    level3::$inner::$inner(blas, uplo, trans, n, k, alpha, a.cast(), lda, beta, c.cast(), ldc)
                })
            })
        }
    )*};
}

xt_syrk! {
    pub extern "C" fn cublasXtSsyrk(f32, f32) => cublasSsyrk_v2_64;
    pub extern "C" fn cublasXtDsyrk(f64, f64) => cublasDsyrk_v2_64;
    pub extern "C" fn cublasXtCsyrk([f32; 2], [f32; 2]) => cublasCsyrk_v2_64;
    pub extern "C" fn cublasXtZsyrk([f64; 2], [f64; 2]) => cublasZsyrk_v2_64;
    pub extern "C" fn cublasXtCherk([f32; 2], f32) => cublasCherk_v2_64;
    pub extern "C" fn cublasXtZherk([f64; 2], f64) => cublasZherk_v2_64;
}

/// syr2k/her2k (`C = alpha op(A) op(B)ᴴ + conj(alpha) op(B) op(A)ᴴ + beta
/// C`) and syrkx/herkx (`C = alpha op(A) op(B)ᴴ + beta C`): one shape.
macro_rules! xt_syr2k {
    ($(pub extern "C" fn $name:ident($t:ty, $s:ty) => $inner:ident;)*) => {$(
        #[no_mangle]
        #[allow(clippy::too_many_arguments)]
        pub extern "C" fn $name(h: XtHandle, uplo: c_int, trans: c_int, n: usize, k: usize, alpha: *const $t, a: *const $t, lda: usize, b: *const $t, ldb: usize, beta: *const $s, c: *mut $t, ldc: usize) -> c_int {
            run(|| {
                with_state(h, |_| ())?;
                fill_arg(uplo)?;
                op_arg(trans)?;
                let (n, k) = (dim(n)?, dim(k)?);
                let (r, cols) = if trans == 0 { (n, k) } else { (k, n) };
                let mats = [
                    Mat::new(a, r, cols, lda, Role::In)?,
                    Mat::new(b, r, cols, ldb, Role::In)?,
                    Mat::new(c, n, n, ldc, Role::InOut)?,
                ];
                launch(h, std::mem::size_of::<$t>(), mats, |blas, [(a, lda), (b, ldb), (c, ldc)]| {
                    level3::$inner::$inner(blas, uplo, trans, n, k, alpha, a.cast(), lda, b.cast(), ldb, beta, c.cast(), ldc)
                })
            })
        }
    )*};
}

xt_syr2k! {
    pub extern "C" fn cublasXtSsyr2k(f32, f32) => cublasSsyr2k_v2_64;
    pub extern "C" fn cublasXtDsyr2k(f64, f64) => cublasDsyr2k_v2_64;
    pub extern "C" fn cublasXtCsyr2k([f32; 2], [f32; 2]) => cublasCsyr2k_v2_64;
    pub extern "C" fn cublasXtZsyr2k([f64; 2], [f64; 2]) => cublasZsyr2k_v2_64;
    pub extern "C" fn cublasXtCher2k([f32; 2], f32) => cublasCher2k_v2_64;
    pub extern "C" fn cublasXtZher2k([f64; 2], f64) => cublasZher2k_v2_64;
    pub extern "C" fn cublasXtSsyrkx(f32, f32) => cublasSsyrkx_64;
    pub extern "C" fn cublasXtDsyrkx(f64, f64) => cublasDsyrkx_64;
    pub extern "C" fn cublasXtCsyrkx([f32; 2], [f32; 2]) => cublasCsyrkx_64;
    pub extern "C" fn cublasXtZsyrkx([f64; 2], [f64; 2]) => cublasZsyrkx_64;
    pub extern "C" fn cublasXtCherkx([f32; 2], f32) => cublasCherkx_64;
    pub extern "C" fn cublasXtZherkx([f64; 2], f64) => cublasZherkx_64;
}

macro_rules! xt_trmm {
    ($(pub extern "C" fn $name:ident($t:ty) => $inner:ident;)*) => {$(
        #[no_mangle]
        #[allow(clippy::too_many_arguments)]
        pub extern "C" fn $name(h: XtHandle, side: c_int, uplo: c_int, trans: c_int, diag: c_int, m: usize, n: usize, alpha: *const $t, a: *const $t, lda: usize, b: *const $t, ldb: usize, c: *mut $t, ldc: usize) -> c_int {
            run(|| {
                with_state(h, |_| ())?;
                side_arg(side)?;
                fill_arg(uplo)?;
                op_arg(trans)?;
                diag_arg(diag)?;
                let (m, n) = (dim(m)?, dim(n)?);
                let na = if side == 0 { m } else { n };
                let mats = [
                    Mat::new(a, na, na, lda, Role::In)?,
                    Mat::new(b, m, n, ldb, Role::In)?,
                    Mat::new(c, m, n, ldc, Role::Out)?,
                ];
                launch(h, std::mem::size_of::<$t>(), mats, |blas, [(a, lda), (b, ldb), (c, ldc)]| {
                    level3::$inner::$inner(blas, side, uplo, trans, diag, m, n, alpha, a.cast(), lda, b.cast(), ldb, c.cast(), ldc)
                })
            })
        }
    )*};
}

xt_trmm! {
    pub extern "C" fn cublasXtStrmm(f32) => cublasStrmm_v2_64;
    pub extern "C" fn cublasXtDtrmm(f64) => cublasDtrmm_v2_64;
    pub extern "C" fn cublasXtCtrmm([f32; 2]) => cublasCtrmm_v2_64;
    pub extern "C" fn cublasXtZtrmm([f64; 2]) => cublasZtrmm_v2_64;
}

macro_rules! xt_trsm {
    ($(pub extern "C" fn $name:ident($t:ty) => $inner:ident;)*) => {$(
        #[no_mangle]
        #[allow(clippy::too_many_arguments)]
        pub extern "C" fn $name(h: XtHandle, side: c_int, uplo: c_int, trans: c_int, diag: c_int, m: usize, n: usize, alpha: *const $t, a: *const $t, lda: usize, b: *mut $t, ldb: usize) -> c_int {
            run(|| {
                with_state(h, |_| ())?;
                side_arg(side)?;
                fill_arg(uplo)?;
                op_arg(trans)?;
                diag_arg(diag)?;
                let (m, n) = (dim(m)?, dim(n)?);
                let na = if side == 0 { m } else { n };
                let mats = [
                    Mat::new(a, na, na, lda, Role::In)?,
                    Mat::new(b, m, n, ldb, Role::InOut)?,
                ];
                launch(h, std::mem::size_of::<$t>(), mats, |blas, [(a, lda), (b, ldb)]| {
                    level3::$inner::$inner(blas, side, uplo, trans, diag, m, n, alpha, a.cast(), lda, b.cast(), ldb)
                })
            })
        }
    )*};
}

xt_trsm! {
    pub extern "C" fn cublasXtStrsm(f32) => cublasStrsm_v2_64;
    pub extern "C" fn cublasXtDtrsm(f64) => cublasDtrsm_v2_64;
    pub extern "C" fn cublasXtCtrsm([f32; 2]) => cublasCtrsm_v2_64;
    pub extern "C" fn cublasXtZtrsm([f64; 2]) => cublasZtrsm_v2_64;
}
