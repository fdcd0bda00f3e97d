//! cuSPARSE on the cuda backend, with the fake driver and `fake_libcusparse.c`.

use super::*;

use rcud_proto::math::sparse::{self as sparse_wire, DnMat, DnVec, Scalar, SpMat};

const INVALID_VALUE: i32 = 3;
const NOT_INITIALIZED: i32 = 1;
const NOT_SUPPORTED: i32 = 10;

/// The fake driver with the fake cuSPARSE: (backend, log).
fn fake_sparse_backend(test: &str) -> Option<(CudaBackend, PathBuf)> {
    let backend = fake_backend(test)?;
    let (lib, log) = fake_math_library(test, "fake_libcusparse.c", "libcusparse.so.12")?;
    Some((backend.with_sparse_libraries(vec![lib.into()]), log))
}

fn sparse(
    ctx: &mut dyn DeviceContext,
    call: sparse_wire::Call,
) -> Result<rcud_math::Reply, Failure> {
    ctx.math_call(5, &rcud_proto::codec::to_vec(&call))
}

fn status(ctx: &mut dyn DeviceContext, call: sparse_wire::Call) -> i32 {
    sparse(ctx, call).unwrap().status
}

fn sparse_handle(ctx: &mut dyn DeviceContext) -> u64 {
    let reply = sparse(ctx, sparse_wire::Call::Create {}).unwrap();
    assert_eq!(reply.status, 0);
    u64::from_le_bytes(reply.out.try_into().unwrap())
}

fn i32s(values: &[i32]) -> Vec<u8> {
    values.iter().flat_map(|v| v.to_le_bytes()).collect()
}

fn read_i32s(ctx: &mut dyn DeviceContext, ptr: u64, n: usize) -> Vec<i32> {
    read_back(ctx, ptr, 4 * n as u64)
        .chunks_exact(4)
        .map(|c| i32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect()
}

fn host(v: f64) -> Scalar {
    Scalar {
        value: (v, 0.0),
        device: None,
    }
}

/// A CSR matrix of f32 values with 32-bit indices, zero-based.
fn csr(rows: i64, cols: i64, nnz: i64, [offsets, indices, values]: [u64; 3]) -> SpMat {
    SpMat {
        format: 1,
        rows,
        cols,
        nnz,
        offsets,
        indices,
        values,
        offset_type: 2,
        index_type: 2,
        base: 0,
        value_type: 0,
        fill_mode: 0,
        diag_type: 0,
    }
}

fn vector(size: i64, values: u64) -> DnVec {
    DnVec {
        size,
        values,
        value_type: 0,
    }
}

/// The 3 x 3 lower triangular matrix [[2, 0, 0], [1, 3, 0], [0, 4, 5]] in
/// the client's memory: (offsets, columns, values).
fn lower(ctx: &mut dyn DeviceContext) -> [u64; 3] {
    let (o, c, v) = (
        ctx.malloc(16).unwrap(),
        ctx.malloc(20).unwrap(),
        ctx.malloc(20).unwrap(),
    );
    put(ctx, o, &i32s(&[0, 1, 3, 5]));
    put(ctx, c, &i32s(&[0, 0, 1, 1, 2]));
    put(ctx, v, &f32s(&[2.0, 1.0, 3.0, 4.0, 5.0]));
    [o, c, v]
}

fn spmv(
    handle: u64,
    a: SpMat,
    x: DnVec,
    y: DnVec,
    alpha: Scalar,
    beta: Scalar,
) -> sparse_wire::Call {
    sparse_wire::Call::SpMv {
        handle,
        op: 0,
        alpha,
        a,
        x,
        beta,
        y,
        compute_type: 0,
    }
}

#[test]
fn fake_cusparse_calls_run_on_the_contexts_stream_with_buffers_of_the_servers() {
    let test = "fake_cusparse_calls_run_on_the_contexts_stream_with_buffers_of_the_servers";
    let Some((b, log)) = fake_sparse_backend(test) else {
        return;
    };
    let mut ctx = b.open(0, 0).unwrap();
    let ctx = ctx.as_mut();
    let h = sparse_handle(ctx);
    let arrays = lower(ctx);
    let a = csr(3, 3, 5, arrays);
    let (x, y) = (ctx.malloc(12).unwrap(), ctx.malloc(12).unwrap());
    put(ctx, x, &f32s(&[1.0, 2.0, 3.0]));
    put(ctx, y, &f32s(&[1.0, 1.0, 1.0]));
    // y = 2 A x + 1 y, host scalars.
    let call = spmv(h, a, vector(3, x), vector(3, y), host(2.0), host(1.0));
    assert_eq!(status(ctx, call), 0);
    assert_eq!(read_f32s(ctx, y, 3), vec![5.0, 15.0, 47.0]);
    // Device scalars: device pointer mode.
    let scalars = ctx.malloc(8).unwrap();
    put(ctx, scalars, &f32s(&[1.0, 0.0]));
    let device = |at| Scalar {
        value: (0.0, 0.0),
        device: Some(at),
    };
    let call = spmv(
        h,
        a,
        vector(3, x),
        vector(3, y),
        device(scalars),
        device(scalars + 4),
    );
    assert_eq!(status(ctx, call), 0);
    assert_eq!(read_f32s(ctx, y, 3), vec![2.0, 7.0, 23.0]);
    let lines = log_lines(&log);
    let stream = lines
        .iter()
        .find(|l| l.starts_with("cusparseSetStream"))
        .and_then(|l| l.split("stream=").nth(1))
        .and_then(|s| s.split(' ').next())
        .expect("cusparseSetStream reached the library")
        .to_string();
    assert_ne!(stream, "(nil)", "{lines:?}");
    let runs: Vec<&String> = lines
        .iter()
        .filter(|l| l.starts_with("cusparseSpMV "))
        .collect();
    assert_eq!(runs.len(), 2, "{lines:?}");
    assert!(
        runs[0].contains(&format!("stream={stream} mode=0")),
        "{runs:?}"
    );
    assert!(
        runs[1].contains(&format!("stream={stream} mode=1")),
        "{runs:?}"
    );
    assert!(runs.iter().all(|l| !l.contains("buffer=(nil)")), "{runs:?}");
    // Descriptors are made for the call and destroyed after it.
    let made = lines
        .iter()
        .filter(|l| l.starts_with("cusparseCreateSpMat"))
        .count();
    let gone = lines
        .iter()
        .filter(|l| l.starts_with("cusparseDestroySpMat"))
        .count();
    assert_eq!((made, gone), (2, 2), "{lines:?}");
    // cuSPARSE's own status comes back: the fake computes no SpMM.
    let (bm, cm) = (ctx.malloc(36).unwrap(), ctx.malloc(36).unwrap());
    let dense = |values| DnMat {
        rows: 3,
        cols: 3,
        ld: 3,
        values,
        value_type: 0,
        order: 1,
    };
    let call = sparse_wire::Call::SpMm {
        handle: h,
        op_a: 0,
        op_b: 0,
        alpha: host(1.0),
        a,
        b: dense(bm),
        beta: host(0.0),
        c: dense(cm),
        compute_type: 0,
    };
    assert_eq!(status(ctx, call), NOT_SUPPORTED);
    assert_eq!(status(ctx, sparse_wire::Call::Destroy { handle: h }), 0);
    assert!(log_lines(&log)
        .iter()
        .any(|l| l.starts_with("cusparseDestroy ")));
    assert_eq!(
        status(ctx, sparse_wire::Call::Destroy { handle: h }),
        NOT_INITIALIZED
    );
}

#[test]
fn fake_cusparse_spgemm_answers_the_nnz_then_copies_the_product() {
    let test = "fake_cusparse_spgemm_answers_the_nnz_then_copies_the_product";
    let Some((b, log)) = fake_sparse_backend(test) else {
        return;
    };
    let mut ctx = b.open(0, 0).unwrap();
    let ctx = ctx.as_mut();
    let h = sparse_handle(ctx);
    let a = csr(3, 3, 5, lower(ctx));
    let reply = sparse(ctx, sparse_wire::Call::SpGemmNnz { handle: h, a, b: a }).unwrap();
    assert_eq!(reply.status, 0);
    // L * L is lower triangular and full below the diagonal: 6 entries.
    assert_eq!(i64::from_le_bytes(reply.out.try_into().unwrap()), 6);
    let c_arrays = [
        ctx.malloc(16).unwrap(),
        ctx.malloc(24).unwrap(),
        ctx.malloc(24).unwrap(),
    ];
    let copy = |c: SpMat| sparse_wire::Call::SpGemmCopy {
        handle: h,
        alpha: host(2.0),
        a,
        b: a,
        c,
        compute_type: 0,
    };
    // C described with another nnz: refused before anything is copied.
    let copies = |log: &PathBuf| {
        log_lines(log)
            .iter()
            .filter(|l| l.starts_with("cusparseSpGEMM_copy"))
            .count()
    };
    assert_eq!(status(ctx, copy(csr(3, 3, 5, c_arrays))), INVALID_VALUE);
    assert_eq!(copies(&log), 0);
    assert_eq!(status(ctx, copy(csr(3, 3, 6, c_arrays))), 0);
    assert_eq!(copies(&log), 1);
    assert_eq!(read_i32s(ctx, c_arrays[0], 4), vec![0, 1, 3, 6]);
    assert_eq!(read_i32s(ctx, c_arrays[1], 6), vec![0, 0, 1, 0, 1, 2]);
    // 2 L^2 = 2 [[4, 0, 0], [5, 9, 0], [4, 32, 25]].
    assert_eq!(
        read_f32s(ctx, c_arrays[2], 6),
        vec![8.0, 10.0, 18.0, 8.0, 64.0, 50.0]
    );
    // Alpha in device memory: device pointer mode, with a zero beta there.
    let alpha = ctx.malloc(4).unwrap();
    put(ctx, alpha, &f32s(&[-1.0]));
    let mut call = copy(csr(3, 3, 6, c_arrays));
    if let sparse_wire::Call::SpGemmCopy { alpha: a, .. } = &mut call {
        *a = Scalar {
            value: (0.0, 0.0),
            device: Some(alpha),
        };
    }
    assert_eq!(status(ctx, call), 0);
    assert_eq!(
        read_f32s(ctx, c_arrays[2], 6),
        vec![-4.0, -5.0, -9.0, -4.0, -32.0, -25.0]
    );
    assert!(log_lines(&log)
        .iter()
        .any(|l| l.starts_with("cusparseSpGEMM_copy") && l.ends_with("mode=1")));
    let lines = log_lines(&log);
    assert!(
        lines
            .iter()
            .filter(|l| l.starts_with("cusparseSpGEMM_compute") && !l.contains("buffer=(nil)"))
            .all(|l| !l.contains("c_offsets=(nil)")),
        "the product's offsets need memory even when only its size is asked: {lines:?}"
    );
    let created = lines
        .iter()
        .filter(|l| l.starts_with("cusparseSpGEMM_createDescr"))
        .count();
    let destroyed = lines
        .iter()
        .filter(|l| l.starts_with("cusparseSpGEMM_destroyDescr"))
        .count();
    assert_eq!(created, destroyed, "{lines:?}");
}

#[test]
fn fake_cusparse_solves_and_converts() {
    let test = "fake_cusparse_solves_and_converts";
    let Some((b, log)) = fake_sparse_backend(test) else {
        return;
    };
    let mut ctx = b.open(0, 0).unwrap();
    let ctx = ctx.as_mut();
    let h = sparse_handle(ctx);
    let arrays = lower(ctx);
    let a = csr(3, 3, 5, arrays);
    // SpSV: L y = 2 x with x = L [1, 1, 1] / 2.
    let (x, y) = (ctx.malloc(12).unwrap(), ctx.malloc(12).unwrap());
    put(ctx, x, &f32s(&[1.0, 2.0, 4.5]));
    let call = sparse_wire::Call::SpSv {
        handle: h,
        op: 0,
        alpha: host(2.0),
        a,
        x: vector(3, x),
        y: vector(3, y),
        compute_type: 0,
    };
    assert_eq!(status(ctx, call), 0);
    assert_eq!(read_f32s(ctx, y, 3), vec![1.0, 1.0, 1.0]);
    assert!(log_lines(&log)
        .iter()
        .any(|l| l.starts_with("cusparseSpMatSetAttribute attribute=0 value=0")));
    // CSR to CSC: the transpose's arrays.
    let (so, sr, sv) = (
        ctx.malloc(16).unwrap(),
        ctx.malloc(20).unwrap(),
        ctx.malloc(20).unwrap(),
    );
    let call = sparse_wire::Call::Csr2Csc {
        handle: h,
        m: 3,
        n: 3,
        nnz: 5,
        csr_values: arrays[2],
        csr_offsets: arrays[0],
        csr_columns: arrays[1],
        csc_values: sv,
        csc_offsets: so,
        csc_rows: sr,
        value_type: 0,
        copy_values: true,
        base: 0,
    };
    assert_eq!(status(ctx, call), 0);
    assert_eq!(read_i32s(ctx, so, 4), vec![0, 2, 4, 5]);
    assert_eq!(read_i32s(ctx, sr, 5), vec![0, 1, 1, 2, 2]);
    assert_eq!(read_f32s(ctx, sv, 5), vec![2.0, 1.0, 3.0, 4.0, 5.0]);
    // CSR offsets to COO rows and back.
    let (rows, offsets) = (ctx.malloc(20).unwrap(), ctx.malloc(16).unwrap());
    let call = sparse_wire::Call::Csr2Coo {
        handle: h,
        csr_offsets: arrays[0],
        nnz: 5,
        m: 3,
        coo_rows: rows,
        base: 0,
    };
    assert_eq!(status(ctx, call), 0);
    assert_eq!(read_i32s(ctx, rows, 5), vec![0, 1, 1, 2, 2]);
    let call = sparse_wire::Call::Coo2Csr {
        handle: h,
        coo_rows: rows,
        nnz: 5,
        m: 3,
        csr_offsets: offsets,
        base: 0,
    };
    assert_eq!(status(ctx, call), 0);
    assert_eq!(read_i32s(ctx, offsets, 4), vec![0, 1, 3, 5]);
    // To a dense matrix (ld 4) and back.
    let dense = ctx.malloc(48).unwrap();
    let d = DnMat {
        rows: 3,
        cols: 3,
        ld: 4,
        values: dense,
        value_type: 0,
        order: 1,
    };
    assert_eq!(
        status(ctx, sparse_wire::Call::SparseToDense { handle: h, a, b: d }),
        0
    );
    let got = read_f32s(ctx, dense, 12);
    assert_eq!(
        [got[0], got[1], got[5], got[6], got[10], got[4]],
        [2.0, 1.0, 3.0, 4.0, 5.0, 0.0]
    );
    let back = [
        ctx.malloc(16).unwrap(),
        ctx.malloc(20).unwrap(),
        ctx.malloc(20).unwrap(),
    ];
    let reply = sparse(
        ctx,
        sparse_wire::Call::DenseToSparseAnalysis {
            handle: h,
            a: d,
            b: csr(3, 3, 0, [back[0], 0, 0]),
        },
    )
    .unwrap();
    assert_eq!(reply.status, 0);
    assert_eq!(i64::from_le_bytes(reply.out.try_into().unwrap()), 5);
    assert_eq!(read_i32s(ctx, back[0], 4), vec![0, 1, 3, 5]);
    // Described with another nnz: refused before the conversion.
    let convert = |nnz| sparse_wire::Call::DenseToSparseConvert {
        handle: h,
        a: d,
        b: csr(3, 3, nnz, back),
    };
    assert_eq!(status(ctx, convert(4)), INVALID_VALUE);
    assert!(!log_lines(&log)
        .iter()
        .any(|l| l.starts_with("cusparseDenseToSparse_convert")));
    assert_eq!(status(ctx, convert(5)), 0);
    assert_eq!(read_i32s(ctx, back[1], 5), vec![0, 0, 1, 1, 2]);
    assert_eq!(read_f32s(ctx, back[2], 5), vec![2.0, 1.0, 3.0, 4.0, 5.0]);
}

/// A change to an SpMV's A, x and compute type.
type Tweak = dyn Fn(&mut SpMat, &mut DnVec, &mut u8);

#[test]
fn fake_cusparse_bad_calls_are_answered_before_the_library() {
    let test = "fake_cusparse_bad_calls_are_answered_before_the_library";
    let Some((b, log)) = fake_sparse_backend(test) else {
        return;
    };
    let mut ctx = b.open(0, 0).unwrap();
    let ctx = ctx.as_mut();
    let h = sparse_handle(ctx);
    let arrays = lower(ctx);
    let a = csr(3, 3, 5, arrays);
    let (x, y) = (ctx.malloc(12).unwrap(), ctx.malloc(12).unwrap());
    let before = log_lines(&log).len();
    let ok = spmv(h, a, vector(3, x), vector(3, y), host(1.0), host(0.0));
    // An unknown handle.
    let mut call = ok.clone();
    if let sparse_wire::Call::SpMv { handle, .. } = &mut call {
        *handle = h + 7;
    }
    assert_eq!(status(ctx, call), NOT_INITIALIZED);
    // Bad dimensions, enumerations and types, as cuSPARSE answers them.
    let with = |f: &Tweak| {
        let mut call = ok.clone();
        if let sparse_wire::Call::SpMv {
            a, x, compute_type, ..
        } = &mut call
        {
            f(a, x, compute_type);
        }
        call
    };
    let cases: [(&Tweak, i32); 6] = [
        (&|_, x, _| x.size = 4, INVALID_VALUE),
        (&|a, _, _| a.rows = -1, INVALID_VALUE),
        (&|a, _, _| a.base = 2, INVALID_VALUE),
        (&|a, _, _| a.format = 9, NOT_SUPPORTED),
        (&|a, _, _| a.value_type = 2, NOT_SUPPORTED),
        (&|_, _, ct| *ct = 7, NOT_SUPPORTED),
    ];
    for (i, (f, want)) in cases.into_iter().enumerate() {
        assert_eq!(status(ctx, with(f)), want, "case {i}");
    }
    // Ranges outside the client's memory: values, indices, offsets, the
    // vectors, a device scalar.
    let faults: [&Tweak; 4] = [
        &|a, _, _| a.nnz = 6,
        &|a, _, _| a.offsets += 4,
        &|a, x, _| {
            a.cols = 4;
            x.size = 4;
        },
        &|a, _, _| a.values += 4,
    ];
    for (i, f) in faults.into_iter().enumerate() {
        let e = sparse(ctx, with(f)).unwrap_err();
        assert_eq!(e.code, CudaError::ILLEGAL_ADDRESS, "case {i}: {e}");
        assert!(
            e.message.contains("outside the client's device memory"),
            "{e}"
        );
    }
    let mut call = ok.clone();
    if let sparse_wire::Call::SpMv { alpha, .. } = &mut call {
        alpha.device = Some(y + 12);
    }
    assert_eq!(
        sparse(ctx, call).unwrap_err().code,
        CudaError::ILLEGAL_ADDRESS
    );
    // SpGEMM takes CSR only; C must fit the product.
    let mut coo = a;
    coo.format = 3;
    assert_eq!(
        status(
            ctx,
            sparse_wire::Call::SpGemmNnz {
                handle: h,
                a: coo,
                b: a
            }
        ),
        NOT_SUPPORTED
    );
    let copy = sparse_wire::Call::SpGemmCopy {
        handle: h,
        alpha: host(1.0),
        a,
        b: a,
        c: csr(3, 2, 5, arrays),
        compute_type: 0,
    };
    assert_eq!(status(ctx, copy), INVALID_VALUE);
    // A conversion writing past an allocation.
    let small = ctx.malloc(8).unwrap();
    let call = sparse_wire::Call::Csr2Coo {
        handle: h,
        csr_offsets: arrays[0],
        nnz: 5,
        m: 3,
        coo_rows: small,
        base: 0,
    };
    assert_eq!(
        sparse(ctx, call).unwrap_err().code,
        CudaError::ILLEGAL_ADDRESS
    );
    assert_eq!(
        log_lines(&log).len(),
        before,
        "a bad call reached the library: {:?}",
        &log_lines(&log)[before..]
    );
    // The good call still runs.
    assert_eq!(status(ctx, ok), 0);
}

#[test]
fn fake_cusparse_handles_are_destroyed_with_the_context() {
    let test = "fake_cusparse_handles_are_destroyed_with_the_context";
    let Some((b, log)) = fake_sparse_backend(test) else {
        return;
    };
    let mut ctx = b.open(0, 0).unwrap();
    let ctx_ref = ctx.as_mut();
    sparse_handle(ctx_ref);
    let arrays = lower(ctx_ref);
    let (x, y) = (ctx_ref.malloc(12).unwrap(), ctx_ref.malloc(12).unwrap());
    let call = spmv(
        1,
        csr(3, 3, 5, arrays),
        vector(3, x),
        vector(3, y),
        host(1.0),
        host(0.0),
    );
    assert_eq!(status(ctx_ref, call), 0);
    drop(ctx);
    assert!(
        log_lines(&log)
            .iter()
            .any(|l| l.starts_with("cusparseDestroy ")),
        "{:?}",
        log_lines(&log)
    );
}

#[test]
fn fake_driver_without_cusparse_says_so() {
    let Some(b) = fake_backend("fake_driver_without_cusparse_says_so") else {
        return;
    };
    let b = b.with_sparse_libraries(vec!["/nonexistent/libcusparse.so.12".into()]);
    let mut ctx = b.open(0, 0).unwrap();
    let f = sparse(ctx.as_mut(), sparse_wire::Call::Create {}).unwrap_err();
    assert_eq!(f.code, CudaError::NOT_SUPPORTED);
    assert!(
        f.message
            .contains("NVIDIA's cuSPARSE (libcusparse.so.12) was not found on the server"),
        "{f}"
    );
}

#[test]
fn fake_cusparse_incomplete_factorizations_are_not_supported_yet() {
    let test = "fake_cusparse_incomplete_factorizations_are_not_supported_yet";
    let Some((b, _log)) = fake_sparse_backend(test) else {
        return;
    };
    let mut ctx = b.open(0, 0).unwrap();
    let ctx = ctx.as_mut();
    let h = sparse_handle(ctx);
    assert_eq!(
        status(ctx, sparse_wire::Call::CreateInfo { ic: false }),
        NOT_SUPPORTED
    );
    let call = sparse_wire::Call::ZeroPivot {
        handle: h,
        info: 1,
        ic: true,
        device_out: None,
    };
    assert_eq!(status(ctx, call), NOT_SUPPORTED);
}

fn sp_vec(size: i64, nnz: i64, indices: u64, values: u64, base: u8) -> sparse_wire::SpVec {
    sparse_wire::SpVec {
        size,
        nnz,
        indices,
        values,
        index_type: 2,
        base,
        value_type: 0,
    }
}

#[test]
fn fake_cusparse_sorts_and_gather_scatter_reach_the_library() {
    let test = "fake_cusparse_sorts_and_gather_scatter_reach_the_library";
    let Some((b, log)) = fake_sparse_backend(test) else {
        return;
    };
    let mut ctx = b.open(0, 0).unwrap();
    let ctx = ctx.as_mut();
    let h = sparse_handle(ctx);
    let (p, rows, cols) = (
        ctx.malloc(16).unwrap(),
        ctx.malloc(16).unwrap(),
        ctx.malloc(16).unwrap(),
    );
    let identity = sparse_wire::Call::IdentityPermutation { handle: h, n: 4, p };
    assert_eq!(status(ctx, identity), 0);
    assert_eq!(read_i32s(ctx, p, 4), [0, 1, 2, 3]);

    // COO by row with the client's P, then by column without one.
    put(ctx, rows, &i32s(&[2, 0, 1, 0]));
    put(ctx, cols, &i32s(&[0, 2, 1, 1]));
    let coo = |by_row, p| sparse_wire::Call::CooSort {
        handle: h,
        by_row,
        m: 3,
        n: 3,
        nnz: 4,
        rows,
        cols,
        p,
    };
    assert_eq!(status(ctx, coo(true, p)), 0);
    assert_eq!(read_i32s(ctx, rows, 4), [0, 0, 1, 2]);
    assert_eq!(read_i32s(ctx, cols, 4), [1, 2, 1, 0]);
    assert_eq!(read_i32s(ctx, p, 4), [3, 1, 2, 0]);
    assert_eq!(status(ctx, coo(false, 0)), 0);
    assert_eq!(read_i32s(ctx, cols, 4), [0, 1, 1, 2]);
    assert_eq!(read_i32s(ctx, rows, 4), [2, 0, 1, 0]);
    assert_eq!(read_i32s(ctx, p, 4), [3, 1, 2, 0], "P 0 leaves it alone");

    // CSR (one-based) rows [3, 1] and [2]: sorted within each row.
    let (offsets, indices) = (ctx.malloc(12).unwrap(), ctx.malloc(12).unwrap());
    put(ctx, offsets, &i32s(&[1, 3, 4]));
    put(ctx, indices, &i32s(&[3, 1, 2]));
    let csr_sort = sparse_wire::Call::CompressedSort {
        handle: h,
        major: 2,
        minor: 3,
        nnz: 3,
        base: 1,
        offsets,
        indices,
        p,
    };
    assert_eq!(status(ctx, csr_sort), 0);
    assert_eq!(read_i32s(ctx, indices, 3), [1, 3, 2]);
    assert_eq!(read_i32s(ctx, p, 3), [1, 3, 2]);

    // Gather and Scatter: x = y[[2, 0]], then y[[1, 3]] = x (one-based).
    let (y, xi, xv) = (
        ctx.malloc(16).unwrap(),
        ctx.malloc(8).unwrap(),
        ctx.malloc(8).unwrap(),
    );
    put(ctx, y, &f32s(&[10.0, 20.0, 30.0, 40.0]));
    put(ctx, xi, &i32s(&[3, 1]));
    let x = sp_vec(4, 2, xi, xv, 1);
    let gather = sparse_wire::Call::Gather {
        handle: h,
        y: vector(4, y),
        x,
    };
    assert_eq!(status(ctx, gather), 0);
    assert_eq!(read_f32s(ctx, xv, 2), [30.0, 10.0]);
    put(ctx, xi, &i32s(&[2, 4]));
    let scatter = sparse_wire::Call::Scatter {
        handle: h,
        x,
        y: vector(4, y),
    };
    assert_eq!(status(ctx, scatter), 0);
    assert_eq!(read_f32s(ctx, y, 4), [10.0, 30.0, 30.0, 10.0]);

    let lines = log_lines(&log);
    let find = |prefix: &str| -> Vec<String> {
        lines
            .iter()
            .filter(|l| l.starts_with(prefix))
            .cloned()
            .collect()
    };
    // The sorts ran with the server's buffer; without the client's P, with
    // a permutation of the server's own (identity first), not the client's.
    let by_row = find("cusparseXcoosortByRow ");
    assert!(
        by_row.len() == 1 && by_row[0].contains(&format!("P={p:#x} ")),
        "{lines:?}"
    );
    let by_col = find("cusparseXcoosortByColumn ");
    assert_eq!(by_col.len(), 1, "{lines:?}");
    let own = by_col[0]
        .split("P=")
        .nth(1)
        .unwrap()
        .split(' ')
        .next()
        .unwrap();
    let own = u64::from_str_radix(own.trim_start_matches("0x"), 16).unwrap();
    assert!(own != 0 && ctx.check(own, 16).is_err(), "{}", by_col[0]);
    assert_eq!(find("cusparseCreateIdentityPermutation ").len(), 2);
    let csr = find("cusparseXcsrsort ");
    assert!(
        csr.len() == 1 && csr[0].contains("m=2 n=3 nnz=3 base=1 "),
        "{lines:?}"
    );
    assert_eq!(find("cusparseXcsrsort_bufferSizeExt ").len(), 1);
    assert_eq!(find("cusparseXcoosort_bufferSizeExt ").len(), 2);
    assert_eq!(find("cusparseDestroyMatDescr").len(), 1);
    assert_eq!(
        find("cusparseCreateSpVec size=4 nnz=2 itype=2 base=1 vtype=0").len(),
        2,
        "{lines:?}"
    );
    assert_eq!(find("cusparseDestroySpVec").len(), 2);
    assert!(find("cusparseGather ")[0].contains("nnz=2 size=4"));
    assert_eq!(find("cusparseScatter ").len(), 1);

    // Bad calls are answered before the library.
    let before = log_lines(&log).len();
    let call = sparse_wire::Call::IdentityPermutation {
        handle: h + 1,
        n: 4,
        p,
    };
    assert_eq!(status(ctx, call), NOT_INITIALIZED);
    let call = sparse_wire::Call::IdentityPermutation {
        handle: h,
        n: -1,
        p,
    };
    assert_eq!(status(ctx, call), INVALID_VALUE);
    let mut wide = sp_vec(4, 2, xi, xv, 2);
    assert_eq!(
        status(
            ctx,
            sparse_wire::Call::Gather {
                handle: h,
                y: vector(4, y),
                x: wide
            }
        ),
        INVALID_VALUE,
        "base 2"
    );
    wide.base = 0;
    wide.size = 5;
    assert_eq!(
        status(
            ctx,
            sparse_wire::Call::Scatter {
                handle: h,
                x: wide,
                y: vector(4, y)
            }
        ),
        INVALID_VALUE,
        "sizes differ"
    );
    let f = sparse(
        ctx,
        sparse_wire::Call::IdentityPermutation { handle: h, n: 5, p },
    )
    .unwrap_err();
    assert_eq!(f.code, CudaError::ILLEGAL_ADDRESS, "{f}");
    let f = sparse(
        ctx,
        sparse_wire::Call::Gather {
            handle: h,
            y: vector(5, y),
            x: sp_vec(5, 2, xi, xv, 0),
        },
    )
    .unwrap_err();
    assert_eq!(f.code, CudaError::ILLEGAL_ADDRESS, "{f}");
    assert_eq!(
        log_lines(&log).len(),
        before,
        "a bad call reached the library: {:?}",
        log_lines(&log)
    );
}
