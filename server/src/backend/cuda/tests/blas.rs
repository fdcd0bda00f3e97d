//! cuBLAS on the cuda backend, with the fake driver and `fake_libcublas.c`.

use super::*;

use rcud_proto::math::blas::{self as wire, dtype, Operand, Scalar};

/// `fake_libcublas.c` built for `test`: (library, log).
fn fake_cublas(test: &str) -> Option<(PathBuf, PathBuf)> {
    fake_math_library(test, "fake_libcublas.c", "libcublas.so.13")
}

/// The fake driver with the fake cuBLAS: (backend, log).
fn fake_blas_backend(test: &str) -> Option<(CudaBackend, PathBuf)> {
    let backend = fake_backend(test)?;
    let (lib, log) = fake_cublas(test)?;
    Some((backend.with_blas_libraries(vec![lib.into()]), log))
}

fn blas(ctx: &mut dyn DeviceContext, call: wire::Call) -> Result<rcud_math::Reply, Failure> {
    ctx.math_call(1, &rcud_proto::codec::to_vec(&call))
}

fn ptrs(values: &[u64]) -> Vec<u8> {
    values.iter().flat_map(|v| v.to_le_bytes()).collect()
}

fn host(v: f64) -> Scalar {
    Scalar::Host { re: v, im: 0.0 }
}

fn operand(ptr: u64, ld: i64, stride: i64) -> Operand {
    Operand { ptr, ld, stride }
}

/// SGEMM of m=2, n=2, k=3 with A (ld 2), B (ld 3) and C (ld 2).
fn sgemm(handle: u64, a: Operand, b: Operand, c: Operand, batch: i64, arrays: bool) -> wire::Call {
    wire::Call::Gemm {
        handle,
        types: [dtype::R32F; 4],
        transa: 0,
        transb: 0,
        m: 2,
        n: 2,
        k: 3,
        alpha: host(1.0),
        a,
        b,
        beta: host(0.0),
        c,
        batch,
        pointer_arrays: arrays,
    }
}

fn dot(handle: u64, x: u64, y: u64, result: u64) -> wire::Call {
    wire::Call::Level1 {
        handle,
        op: wire::level1::DOTU,
        dtype: dtype::R32F,
        scalar_dtype: dtype::R32F,
        n: 3,
        x: operand(x, 1, 0),
        y: operand(y, 1, 0),
        alpha: host(0.0),
        beta: host(0.0),
        result,
    }
}

fn create(ctx: &mut dyn DeviceContext) -> u64 {
    let reply = blas(ctx, wire::Call::Create {}).unwrap();
    assert_eq!(reply.status, 0);
    u64::from_le_bytes(reply.out.try_into().unwrap())
}

// A = [[1, 3, 5], [2, 4, 6]] (column-major, ld 2); B = [e1, e2 + e3]:
// A B = [[1, 8], [2, 10]].
const A: [f32; 6] = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0];
const B: [f32; 6] = [1.0, 0.0, 0.0, 0.0, 1.0, 1.0];
const AB: [f32; 4] = [1.0, 2.0, 8.0, 10.0];

#[test]
fn fake_cublas_gemm_and_level1_run_on_the_contexts_stream() {
    let test = "fake_cublas_gemm_and_level1_run_on_the_contexts_stream";
    let Some((b, log)) = fake_blas_backend(test) else {
        return;
    };
    let mut ctx = b.open(0, 0).unwrap();
    let ctx = ctx.as_mut();
    let h = create(ctx);

    // Two copies of A (the second doubled) and of B, room for two Cs.
    let (a, bm, c) = (
        ctx.malloc(48).unwrap(),
        ctx.malloc(48).unwrap(),
        ctx.malloc(32).unwrap(),
    );
    let doubled: Vec<f32> = A.iter().map(|v| 2.0 * v).collect();
    put(ctx, a, &f32s(&[A.as_slice(), &doubled].concat()));
    put(ctx, bm, &f32s(&[B, B].concat()));

    // Single.
    let reply = blas(
        ctx,
        sgemm(
            h,
            operand(a, 2, 0),
            operand(bm, 3, 0),
            operand(c, 2, 0),
            1,
            false,
        ),
    )
    .unwrap();
    assert_eq!(reply.status, 0);
    assert_eq!(read_f32s(ctx, c, 4), AB);

    // Strided batch of two.
    put(ctx, c, &[0; 32]);
    let call = sgemm(
        h,
        operand(a, 2, 6),
        operand(bm, 3, 6),
        operand(c, 2, 4),
        2,
        false,
    );
    assert_eq!(blas(ctx, call).unwrap().status, 0);
    let doubled_ab: Vec<f32> = AB.iter().map(|v| 2.0 * v).collect();
    assert_eq!(read_f32s(ctx, c, 8), [AB.as_slice(), &doubled_ab].concat());

    // Pointer arrays: the second product first.
    put(ctx, c, &[0; 32]);
    let arrays = ctx.malloc(48).unwrap();
    put(ctx, arrays, &ptrs(&[a + 24, a, bm + 24, bm, c, c + 16]));
    let call = sgemm(
        h,
        operand(arrays, 2, 0),
        operand(arrays + 16, 3, 0),
        operand(arrays + 32, 2, 0),
        2,
        true,
    );
    assert_eq!(blas(ctx, call).unwrap().status, 0);
    assert_eq!(read_f32s(ctx, c, 8), [doubled_ab.as_slice(), &AB].concat());

    // Device scalars.
    let scalars = ctx.malloc(8).unwrap();
    put(ctx, scalars, &f32s(&[3.0, 0.0]));
    let mut call = sgemm(
        h,
        operand(a, 2, 0),
        operand(bm, 3, 0),
        operand(c, 2, 0),
        1,
        false,
    );
    if let wire::Call::Gemm { alpha, beta, .. } = &mut call {
        *alpha = Scalar::Device { ptr: scalars };
        *beta = Scalar::Device { ptr: scalars + 4 };
    }
    assert_eq!(blas(ctx, call).unwrap().status, 0);
    let tripled: Vec<f32> = AB.iter().map(|v| 3.0 * v).collect();
    assert_eq!(read_f32s(ctx, c, 4), tripled);

    // A reduction to the host and to device memory.
    let (x, y, r) = (
        ctx.malloc(12).unwrap(),
        ctx.malloc(12).unwrap(),
        ctx.malloc(4).unwrap(),
    );
    put(ctx, x, &f32s(&[1.0, 2.0, 3.0]));
    put(ctx, y, &f32s(&[4.0, 5.0, 6.0]));
    let reply = blas(ctx, dot(h, x, y, 0)).unwrap();
    assert_eq!((reply.status, reply.out), (0, 32f32.to_le_bytes().to_vec()));
    let reply = blas(ctx, dot(h, x, y, r)).unwrap();
    assert_eq!((reply.status, reply.out.len()), (0, 0));
    assert_eq!(read_f32s(ctx, r, 1), [32.0]);

    // An index, widened for the _64 form's int64_t.
    let amax = |scalar_dtype| wire::Call::Level1 {
        handle: h,
        op: wire::level1::AMAX,
        dtype: dtype::R32F,
        scalar_dtype,
        n: 3,
        x: operand(x, 1, 0),
        y: operand(0, 1, 0),
        alpha: host(0.0),
        beta: host(0.0),
        result: 0,
    };
    assert_eq!(
        blas(ctx, amax(dtype::R32F)).unwrap().out,
        3i32.to_le_bytes()
    );
    assert_eq!(blas(ctx, amax(24)).unwrap().out, 3i64.to_le_bytes());

    // gemv, y = A x with A 2 x 3 and x = (1, 2, 3): (22, 28).
    let gx = ctx.malloc(12).unwrap();
    put(ctx, gx, &f32s(&[1.0, 2.0, 3.0]));
    let gemv = wire::Call::Gemv {
        handle: h,
        dtype: dtype::R32F,
        trans: 0,
        m: 2,
        n: 3,
        alpha: host(1.0),
        a: operand(a, 2, 0),
        x: operand(gx, 1, 0),
        beta: host(0.0),
        y: operand(c, 1, 0),
    };
    assert_eq!(blas(ctx, gemv).unwrap().status, 0);
    assert_eq!(read_f32s(ctx, c, 2), [22.0, 28.0]);

    let lines = log_lines(&log);
    let stream = lines
        .iter()
        .find(|l| l.starts_with("cublasSetStream"))
        .and_then(|l| l.split_whitespace().nth(2))
        .expect("cublasSetStream was called")
        .to_string();
    assert_ne!(stream, "stream=(nil)", "{lines:?}");
    let calls: Vec<(&str, &str, &str)> = lines
        .iter()
        .filter(|l| !l.starts_with("cublasCreate") && !l.starts_with("cublasSetStream"))
        .map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            (f[0], f[2], f[3])
        })
        .collect();
    assert!(calls.iter().all(|(_, s, _)| *s == stream), "{lines:?}");
    let expected = [
        ("cublasGemmEx", "mode=0"),
        ("cublasGemmStridedBatchedEx", "mode=0"),
        ("cublasGemmBatchedEx", "mode=0"),
        ("cublasGemmEx", "mode=1"),
        ("cublasSdot", "mode=0"),
        ("cublasSdot", "mode=1"),
        ("cublasIsamax", "mode=0"),
        ("cublasIsamax", "mode=0"),
        ("cublasSgemv", "mode=0"),
    ];
    let seen: Vec<(&str, &str)> = calls.iter().map(|(f, _, m)| (*f, *m)).collect();
    assert_eq!(seen, expected, "{lines:?}");

    // Destroyed on request; an unknown handle is NOT_INITIALIZED.
    assert_eq!(
        blas(ctx, wire::Call::Destroy { handle: h }).unwrap().status,
        0
    );
    assert_eq!(
        blas(ctx, wire::Call::Destroy { handle: h }).unwrap().status,
        1
    );
    assert!(log_lines(&log).last().unwrap().starts_with("cublasDestroy"));
}

#[test]
fn fake_cublas_bad_operands_are_refused_before_the_library() {
    let test = "fake_cublas_bad_operands_are_refused_before_the_library";
    let Some((b, log)) = fake_blas_backend(test) else {
        return;
    };
    let mut ctx = b.open(0, 0).unwrap();
    let mut other = b.open(0, 0).unwrap();
    let foreign = other.malloc(64).unwrap();
    let ctx = ctx.as_mut();
    let h = create(ctx);
    let (a, bm, c) = (
        ctx.malloc(24).unwrap(),
        ctx.malloc(24).unwrap(),
        ctx.malloc(16).unwrap(),
    );
    put(ctx, a, &f32s(&A));
    put(ctx, bm, &f32s(&B));
    let before = log_lines(&log).len();
    let illegal = |r: Result<rcud_math::Reply, Failure>| {
        let f = r.unwrap_err();
        assert_eq!(f.code, CudaError::ILLEGAL_ADDRESS, "{f}");
        f.message
    };

    // C one column too wide for its allocation (ld 4: 4 + 2 floats).
    illegal(blas(
        ctx,
        sgemm(
            h,
            operand(a, 2, 0),
            operand(bm, 3, 0),
            operand(c, 4, 0),
            1,
            false,
        ),
    ));
    // A strided batch running past A.
    illegal(blas(
        ctx,
        sgemm(
            h,
            operand(a, 2, 6),
            operand(bm, 3, 0),
            operand(c, 2, 0),
            2,
            false,
        ),
    ));
    // Another context's memory.
    let m = illegal(blas(
        ctx,
        sgemm(
            h,
            operand(foreign, 2, 0),
            operand(bm, 3, 0),
            operand(c, 2, 0),
            1,
            false,
        ),
    ));
    assert!(m.contains("A"), "{m}");
    // A forged pointer inside a pointer array, and an array past its end.
    let arrays = ctx.malloc(48).unwrap();
    put(ctx, arrays, &ptrs(&[a, foreign, bm, bm, c, c]));
    let batched = |ptr| {
        sgemm(
            h,
            operand(ptr, 2, 0),
            operand(arrays + 16, 3, 0),
            operand(arrays + 32, 2, 0),
            2,
            true,
        )
    };
    let m = illegal(blas(ctx, batched(arrays)));
    assert!(m.contains("A[1]"), "{m}");
    let m = illegal(blas(ctx, batched(arrays + 40)));
    assert!(m.contains("pointer array"), "{m}");
    // A device scalar and a reduction's result outside the client's memory.
    let mut call = sgemm(
        h,
        operand(a, 2, 0),
        operand(bm, 3, 0),
        operand(c, 2, 0),
        1,
        false,
    );
    if let wire::Call::Gemm { alpha, .. } = &mut call {
        *alpha = Scalar::Device { ptr: foreign };
    }
    illegal(blas(ctx, call));
    illegal(blas(ctx, dot(h, a, bm, foreign)));
    // A vector running past its allocation (increment 8).
    let mut call = dot(h, a, bm, 0);
    if let wire::Call::Level1 { x, .. } = &mut call {
        x.ld = 8;
    }
    illegal(blas(ctx, call));
    // Bad leading dimension: cuBLAS's own status, without the library.
    let reply = blas(
        ctx,
        sgemm(
            h,
            operand(a, 1, 0),
            operand(bm, 3, 0),
            operand(c, 2, 0),
            1,
            false,
        ),
    )
    .unwrap();
    assert_eq!(reply.status, 7);
    // Unknown handle.
    let reply = blas(
        ctx,
        sgemm(
            h + 7,
            operand(a, 2, 0),
            operand(bm, 3, 0),
            operand(c, 2, 0),
            1,
            false,
        ),
    )
    .unwrap();
    assert_eq!(reply.status, 1);

    let after = log_lines(&log);
    assert_eq!(after.len(), before, "the library was called: {after:?}");

    // The context is still usable, and the handle goes with it.
    let reply = blas(
        ctx,
        sgemm(
            h,
            operand(a, 2, 0),
            operand(bm, 3, 0),
            operand(c, 2, 0),
            1,
            false,
        ),
    )
    .unwrap();
    assert_eq!(reply.status, 0);
    assert_eq!(read_f32s(ctx, c, 4), AB);
}

/// A complex host scalar reaches cuBLAS 16-byte aligned: NVIDIA's Zscal
/// reads it with an aligned vector load, and faulted on the byte array the
/// backend once kept it in (the fake refuses a misaligned one instead).
#[test]
fn fake_cublas_complex_host_scalars_are_aligned() {
    let test = "fake_cublas_complex_host_scalars_are_aligned";
    let Some((b, _log)) = fake_blas_backend(test) else {
        return;
    };
    let mut ctx = b.open(0, 0).unwrap();
    let ctx = ctx.as_mut();
    let h = create(ctx);
    let x = ctx.malloc(32).unwrap();
    let values: Vec<u8> = [1.0f64, 2.0, -3.0, 0.5]
        .iter()
        .flat_map(|v| v.to_le_bytes())
        .collect();
    put(ctx, x, &values);
    let zscal = wire::Call::Level1 {
        handle: h,
        op: wire::level1::SCAL,
        dtype: dtype::C64F,
        scalar_dtype: dtype::C64F,
        n: 2,
        x: operand(x, 1, 0),
        y: operand(x, 1, 0),
        alpha: Scalar::Host { re: 0.5, im: 2.0 },
        beta: host(0.0),
        result: 0,
    };
    let reply = blas(ctx, zscal).unwrap();
    assert_eq!(reply.status, 0, "Zscal with a host alpha");
    let got: Vec<f64> = read_back(ctx, x, 32)
        .chunks_exact(8)
        .map(|c| f64::from_le_bytes(c.try_into().unwrap()))
        .collect();
    // (0.5 + 2i)(1 + 2i) = -3.5 + 3i; (0.5 + 2i)(-3 + 0.5i) = -2.5 - 5.75i.
    assert_eq!(got, [-3.5, 3.0, -2.5, -5.75]);
}

#[test]
fn fake_cublas_handles_are_destroyed_with_the_context() {
    let test = "fake_cublas_handles_are_destroyed_with_the_context";
    let Some((b, log)) = fake_blas_backend(test) else {
        return;
    };
    let mut ctx = b.open(0, 0).unwrap();
    create(ctx.as_mut());
    create(ctx.as_mut());
    drop(ctx);
    let lines = log_lines(&log);
    let destroyed = lines
        .iter()
        .filter(|l| l.starts_with("cublasDestroy"))
        .count();
    assert_eq!(destroyed, 2, "{lines:?}");
}

#[test]
fn fake_driver_without_cublas_says_so() {
    let Some(b) = fake_backend("fake_driver_without_cublas_says_so") else {
        return;
    };
    let b = b.with_blas_libraries(vec!["/nonexistent/libcublas.so.13".into()]);
    let mut ctx = b.open(0, 0).unwrap();
    let f = blas(ctx.as_mut(), wire::Call::Create {}).unwrap_err();
    assert_eq!(f.code, CudaError::NOT_SUPPORTED);
    assert!(
        f.message
            .contains("NVIDIA's cuBLAS (libcublas.so.13) was not found on the server"),
        "{f}"
    );
    // A library number rcud does not know is refused.
    let f = ctx.math_call(99, &[]).unwrap_err();
    assert_eq!(f.code, CudaError::NOT_SUPPORTED);
    assert!(f.message.contains("cuda backend"), "{f}");
}

#[test]
fn fake_cublas_level3_calls_are_checked_and_forwarded() {
    let test = "fake_cublas_level3_calls_are_checked_and_forwarded";
    let Some((b, log)) = fake_blas_backend(test) else {
        return;
    };
    let mut ctx = b.open(0, 0).unwrap();
    let ctx = ctx.as_mut();
    let h = create(ctx);
    let (a, c, x) = (
        ctx.malloc(24).unwrap(),
        ctx.malloc(24).unwrap(),
        ctx.malloc(12).unwrap(),
    );
    put(ctx, a, &f32s(&A));
    put(ctx, x, &f32s(&[1.0, 10.0, 100.0]));

    // geam: C (3 x 2) = A^T.
    let geam = |ld_c| wire::Call::Geam {
        handle: h,
        dtype: dtype::R32F,
        transa: 1,
        transb: 0,
        m: 3,
        n: 2,
        alpha: host(1.0),
        a: operand(a, 2, 0),
        beta: host(0.0),
        b: operand(c, 3, 0),
        c: operand(c, ld_c, 0),
    };
    assert_eq!(blas(ctx, geam(3)).unwrap().status, 0);
    assert_eq!(read_f32s(ctx, c, 6), [1.0, 3.0, 5.0, 2.0, 4.0, 6.0]);

    // dgmm: C (2 x 3) = A diag(x).
    let dgmm = wire::Call::Dgmm {
        handle: h,
        dtype: dtype::R32F,
        side: 1,
        m: 2,
        n: 3,
        a: operand(a, 2, 0),
        x: operand(x, 1, 0),
        c: operand(c, 2, 0),
    };
    assert_eq!(blas(ctx, dgmm).unwrap().status, 0);
    assert_eq!(read_f32s(ctx, c, 6), [1.0, 2.0, 30.0, 40.0, 500.0, 600.0]);

    // syrk reaches the library (which answers NOT_SUPPORTED here).
    let syrk = |c_ptr| wire::Call::Syrk {
        handle: h,
        dtype: dtype::R32F,
        hermitian: false,
        uplo: 0,
        trans: 0,
        n: 2,
        k: 3,
        alpha: host(1.0),
        a: operand(a, 2, 0),
        beta: host(0.0),
        c: operand(c_ptr, 2, 0),
    };
    assert_eq!(blas(ctx, syrk(c)).unwrap().status, 15);
    let before = log_lines(&log).len();

    // Refused before the library: C of geam past its allocation, C of
    // syrk past it, trsm's B, and a bad fill mode.
    let illegal = |r: Result<rcud_math::Reply, Failure>| {
        assert_eq!(r.unwrap_err().code, CudaError::ILLEGAL_ADDRESS);
    };
    illegal(blas(ctx, geam(4)));
    illegal(blas(ctx, syrk(c + 16)));
    let trsm = wire::Call::Trmm {
        handle: h,
        dtype: dtype::R32F,
        solve: true,
        side: 0,
        uplo: 0,
        trans: 0,
        diag: 0,
        m: 2,
        n: 4,
        alpha: host(1.0),
        a: operand(a, 2, 0),
        b: operand(c, 2, 0),
        c: operand(0, 2, 0),
    };
    illegal(blas(ctx, trsm));
    let mut bad_fill = syrk(c);
    if let wire::Call::Syrk { uplo, .. } = &mut bad_fill {
        *uplo = 9;
    }
    assert_eq!(blas(ctx, bad_fill).unwrap().status, 7);
    let after = log_lines(&log);
    assert_eq!(after.len(), before, "the library was called: {after:?}");
    let names: Vec<&str> = after
        .iter()
        .filter_map(|l| l.split_whitespace().next())
        .filter(|n| !n.starts_with("cublasCreate") && !n.starts_with("cublasSetStream"))
        .collect();
    assert_eq!(names, ["cublasSgeam", "cublasSdgmm", "cublasSsyrk_v2"]);
}

/// `count` ints of the client's device memory at `ptr`.
fn read_ints(ctx: &mut dyn DeviceContext, ptr: u64, count: usize) -> Vec<i32> {
    read_back(ctx, ptr, 4 * count as u64)
        .chunks_exact(4)
        .map(|c| i32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect()
}

#[test]
fn fake_cublas_batched_lu_is_checked_and_forwarded_with_server_arrays() {
    let test = "fake_cublas_batched_lu_is_checked_and_forwarded_with_server_arrays";
    let Some((b, log)) = fake_blas_backend(test) else {
        return;
    };
    let mut ctx = b.open(0, 0).unwrap();
    let ctx = ctx.as_mut();
    let h = create(ctx);
    // Two 3 x 3 matrices (column-major): the first needs a row swap, the
    // second is singular (its second column is zero).
    let first = [0.0f32, 2.0, 1.0, 1.0, 1.0, 0.0, 2.0, 0.0, 3.0];
    let second = [1.0f32, 2.0, 3.0, 0.0, 0.0, 0.0, 4.0, 5.0, 7.0];
    let mats = ctx.malloc(72).unwrap();
    put(ctx, mats, &f32s(&[first.as_slice(), &second].concat()));
    let array = ctx.malloc(16).unwrap();
    put(ctx, array, &ptrs(&[mats, mats + 36]));
    let (pivots, info) = (ctx.malloc(24).unwrap(), ctx.malloc(8).unwrap());
    let getrf = |a: Operand, pivots: u64, info: u64| wire::Call::GetrfBatched {
        handle: h,
        dtype: dtype::R32F,
        n: 3,
        a,
        pivots,
        info,
        batch: 2,
    };
    let reply = blas(ctx, getrf(operand(array, 3, 0), pivots, info)).unwrap();
    assert_eq!(reply.status, 0);
    assert_eq!(read_ints(ctx, info, 2), [0, 2]);
    assert_eq!(
        read_ints(ctx, pivots, 3)[0],
        2,
        "row 2 has the largest first entry"
    );
    let lines = log_lines(&log);
    let line = lines
        .iter()
        .find(|l| l.starts_with("cublasSgetrfBatched"))
        .expect("forwarded");
    assert!(
        !line.contains(&format!("arrays={array:#x},")),
        "cuBLAS must get the server's copy of the pointer array: {line}"
    );

    // Solve with the first factorization (batch 1), then invert it.
    let rhs = ctx.malloc(12).unwrap();
    put(ctx, rhs, &f32s(&[3.0, 3.0, 4.0]));
    let rhs_array = ctx.malloc(8).unwrap();
    put(ctx, rhs_array, &ptrs(&[rhs]));
    let getrs = wire::Call::GetrsBatched {
        handle: h,
        dtype: dtype::R32F,
        trans: 0,
        n: 3,
        nrhs: 1,
        a: operand(array, 3, 0),
        pivots,
        b: operand(rhs_array, 3, 0),
        batch: 1,
    };
    assert_eq!(blas(ctx, getrs).unwrap().status, 0);
    // first * (1, 1, 1) = (3, 3, 4).
    for x in read_f32s(ctx, rhs, 3) {
        assert!((x - 1.0).abs() < 1e-5, "{x}");
    }
    let inverse = ctx.malloc(36).unwrap();
    let inverse_array = ctx.malloc(8).unwrap();
    put(ctx, inverse_array, &ptrs(&[inverse]));
    let getri = wire::Call::GetriBatched {
        handle: h,
        dtype: dtype::R32F,
        n: 3,
        a: operand(array, 3, 0),
        pivots,
        c: operand(inverse_array, 3, 0),
        info,
        batch: 1,
    };
    assert_eq!(blas(ctx, getri).unwrap().status, 0);
    let inv = read_f32s(ctx, inverse, 9);
    for i in 0..3 {
        for j in 0..3 {
            let e: f32 = (0..3).map(|k| first[i + 3 * k] * inv[k + 3 * j]).sum();
            let want = if i == j { 1.0 } else { 0.0 };
            assert!((e - want).abs() < 1e-5, "({i}, {j}): {e}");
        }
    }

    // matinvBatched on the original matrices: the first's inverse, the
    // second's zero pivot; n > 32 is refused before cuBLAS.
    put(ctx, mats, &f32s(&[first.as_slice(), &second].concat()));
    let inverses = ctx.malloc(72).unwrap();
    let inverses_array = ctx.malloc(16).unwrap();
    put(ctx, inverses_array, &ptrs(&[inverses, inverses + 36]));
    let matinv = |n: i64| wire::Call::MatinvBatched {
        handle: h,
        dtype: dtype::R32F,
        n,
        a: operand(array, n, 0),
        c: operand(inverses_array, n, 0),
        info,
        batch: 2,
    };
    assert_eq!(blas(ctx, matinv(3)).unwrap().status, 0);
    assert_eq!(read_ints(ctx, info, 2), [0, 2]);
    let inv = read_f32s(ctx, inverses, 9);
    for i in 0..3 {
        for j in 0..3 {
            let e: f32 = (0..3).map(|k| first[i + 3 * k] * inv[k + 3 * j]).sum();
            let want = if i == j { 1.0 } else { 0.0 };
            assert!((e - want).abs() < 1e-5, "matinv ({i}, {j}): {e}");
        }
    }
    assert_eq!(blas(ctx, matinv(33)).unwrap().status, 7);
    let matinvs = log_lines(&log)
        .iter()
        .filter(|l| l.starts_with("cublasSmatinvBatched"))
        .count();
    assert_eq!(matinvs, 1, "n > 32 never reaches cuBLAS");

    // Refused before cuBLAS: a short leading dimension (cuBLAS's status),
    // a matrix pointer outside the client's memory, an info array past
    // its allocation.
    let forwarded = |log: &PathBuf| {
        log_lines(log)
            .iter()
            .filter(|l| l.starts_with("cublasSgetrfBatched"))
            .count()
    };
    let before = forwarded(&log);
    let reply = blas(ctx, getrf(operand(array, 2, 0), pivots, info)).unwrap();
    assert_eq!(reply.status, 7);
    let wild = ctx.malloc(16).unwrap();
    put(ctx, wild, &ptrs(&[mats, 0xdead_0000]));
    let f = blas(ctx, getrf(operand(wild, 3, 0), pivots, info)).unwrap_err();
    assert_eq!(f.code, CudaError::ILLEGAL_ADDRESS, "{f}");
    assert!(f.message.contains("A[1]"), "{f}");
    let f = blas(ctx, getrf(operand(array, 3, 0), pivots, info + 4)).unwrap_err();
    assert_eq!(f.code, CudaError::ILLEGAL_ADDRESS, "{f}");
    // A batch count far beyond the pointer array is a fault, not an
    // allocation of the count's size on the server.
    let huge = wire::Call::GetrsBatched {
        handle: h,
        dtype: dtype::R32F,
        trans: 0,
        n: 3,
        nrhs: 1,
        a: operand(array, 3, 0),
        pivots: 0,
        b: operand(rhs_array, 3, 0),
        batch: i64::from(i32::MAX),
    };
    let f = blas(ctx, huge).unwrap_err();
    assert_eq!(f.code, CudaError::ILLEGAL_ADDRESS, "{f}");
    assert!(f.message.contains("A pointer array"), "{f}");
    assert_eq!(forwarded(&log), before, "{:?}", log_lines(&log));
}

#[test]
fn fake_cublas_banded_packed_rank_syr2k_and_rotations_are_checked_and_forwarded() {
    let test = "fake_cublas_banded_packed_rank_syr2k_and_rotations_are_checked_and_forwarded";
    let Some((b, log)) = fake_blas_backend(test) else {
        return;
    };
    let mut ctx = b.open(0, 0).unwrap();
    let ctx = ctx.as_mut();
    let h = create(ctx);
    // 40 floats of matrix, 4-float vectors.
    let (a, x, y) = (
        ctx.malloc(160).unwrap(),
        ctx.malloc(16).unwrap(),
        ctx.malloc(16).unwrap(),
    );
    let banded = |kind, lda, hermitian, dt, kl| wire::Call::Banded {
        handle: h,
        dtype: dt,
        kind,
        hermitian,
        uplo: 0,
        trans: 0,
        diag: 0,
        m: 4,
        n: 4,
        kl,
        k: 1,
        alpha: host(1.0),
        a: operand(a, lda, 0),
        x: operand(x, 1, 0),
        beta: host(0.0),
        y: operand(y, 1, 0),
    };
    let r32 = dtype::R32F;
    // Each reaches the library (NOT_SUPPORTED from the fake).
    for kind in [
        wire::level2::GBMV,
        wire::level2::SBMV,
        wire::level2::SPMV,
        wire::level2::TBMV,
        wire::level2::TBSV,
        wire::level2::TPMV,
        wire::level2::TPSV,
    ] {
        assert_eq!(
            blas(ctx, banded(kind, 3, false, r32, 1)).unwrap().status,
            15
        );
    }
    let syr = |two, packed, n| wire::Call::Syr {
        handle: h,
        dtype: r32,
        hermitian: false,
        two,
        packed,
        uplo: 1,
        n,
        alpha: host(1.0),
        x: operand(x, 1, 0),
        y: operand(y, 1, 0),
        a: operand(a, 4, 0),
    };
    for (two, packed) in [(false, false), (true, false), (false, true), (true, true)] {
        assert_eq!(blas(ctx, syr(two, packed, 4)).unwrap().status, 15);
    }
    let syr2k = |x_form, ldc| wire::Call::Syr2k {
        handle: h,
        dtype: r32,
        hermitian: false,
        x: x_form,
        uplo: 0,
        trans: 0,
        n: 4,
        k: 2,
        alpha: host(1.0),
        a: operand(a, 4, 0),
        b: operand(a, 4, 0),
        beta: host(0.0),
        c: operand(a, ldc, 0),
    };
    assert_eq!(blas(ctx, syr2k(false, 4)).unwrap().status, 15);
    assert_eq!(blas(ctx, syr2k(true, 4)).unwrap().status, 15);
    let rotm = |param_ptr| wire::Call::Rotm {
        handle: h,
        dtype: r32,
        n: 4,
        x: operand(x, 1, 0),
        y: operand(y, 1, 0),
        param: [-1.0, 1.0, 0.0, 0.0, 1.0],
        param_ptr,
    };
    assert_eq!(blas(ctx, rotm(0)).unwrap().status, 15);
    assert_eq!(blas(ctx, rotm(a)).unwrap().status, 15);

    // Srotg computes here: host pointer mode answers a, b, c, s.
    let rotg = |ptrs| wire::Call::Rotg {
        handle: h,
        dtype: r32,
        modified: false,
        values: [3.0, 0.0, 4.0, 0.0],
        ptrs,
    };
    let reply = blas(ctx, rotg([0; 5])).unwrap();
    assert_eq!(reply.status, 0);
    let out: Vec<f32> = reply
        .out
        .chunks_exact(4)
        .map(|c| f32::from_le_bytes(c.try_into().unwrap()))
        .collect();
    assert_eq!(out.len(), 4);
    assert!(
        (out[0] - 5.0).abs() < 1e-6 && (out[2] - 0.6).abs() < 1e-6 && (out[3] - 0.8).abs() < 1e-6,
        "{out:?}"
    );
    // Device pointer mode: in place in device memory.
    put(ctx, x, &f32s(&[3.0, 4.0, 0.0, 0.0]));
    let reply = blas(ctx, rotg([x, x + 4, x + 8, x + 12, 0])).unwrap();
    assert_eq!((reply.status, reply.out.len()), (0, 0));
    let got = read_f32s(ctx, x, 4);
    assert!(
        (got[0] - 5.0).abs() < 1e-6 && (got[3] - 0.8).abs() < 1e-6,
        "{got:?}"
    );
    let before = log_lines(&log).len();

    // Refused before the library: a band's lda below kl + ku + 1, a packed
    // triangle past its allocation (n = 9: 45 > 40 floats), a complex
    // symmetric (non-Hermitian) sbmv, C of syr2k past its allocation,
    // rotm's param and rotg's s out of range.
    assert_eq!(
        blas(ctx, banded(wire::level2::GBMV, 2, false, r32, 1))
            .unwrap()
            .status,
        7
    );
    let illegal = |r: Result<rcud_math::Reply, Failure>| {
        assert_eq!(r.unwrap_err().code, CudaError::ILLEGAL_ADDRESS);
    };
    let mut big = banded(wire::level2::TPMV, 1, false, r32, 0);
    if let wire::Call::Banded { n, x: v, .. } = &mut big {
        *n = 9;
        // x in range (in a): only the packed triangle is out.
        *v = operand(a, 1, 0);
    }
    illegal(blas(ctx, big));
    assert_eq!(
        blas(ctx, banded(wire::level2::SBMV, 3, false, dtype::C32F, 0))
            .unwrap()
            .status,
        15
    );
    illegal(blas(ctx, syr2k(false, 13)));
    illegal(blas(ctx, rotm(y + 4)));
    illegal(blas(ctx, rotg([x, x + 4, x + 8, y + 16, 0])));
    let after = log_lines(&log);
    assert_eq!(after.len(), before, "the library was called: {after:?}");
    let names: Vec<&str> = after
        .iter()
        .filter_map(|l| l.split_whitespace().next())
        .filter(|n| !n.starts_with("cublasCreate") && !n.starts_with("cublasSetStream"))
        .collect();
    assert_eq!(
        names,
        [
            "cublasSgbmv_v2",
            "cublasSsbmv_v2",
            "cublasSspmv_v2",
            "cublasStbmv_v2",
            "cublasStbsv_v2",
            "cublasStpmv_v2",
            "cublasStpsv_v2",
            "cublasSsyr_v2",
            "cublasSsyr2_v2",
            "cublasSspr_v2",
            "cublasSspr2_v2",
            "cublasSsyr2k_v2",
            "cublasSsyrkx",
            "cublasSrotm_v2",
            "cublasSrotm_v2",
            "cublasSrotg_v2",
            "cublasSrotg_v2",
        ]
    );
}

#[test]
fn fake_cublas_trsm_gemv_geqrf_gels_batched_are_checked_and_forwarded() {
    let test = "fake_cublas_trsm_gemv_geqrf_gels_batched_are_checked_and_forwarded";
    let Some((b, log)) = fake_blas_backend(test) else {
        return;
    };
    let mut ctx = b.open(0, 0).unwrap();
    let ctx = ctx.as_mut();
    let h = create(ctx);
    let staged = |log: &PathBuf, name: &str, array: u64| {
        let lines = log_lines(log);
        let line = lines
            .iter()
            .rev()
            .find(|l| l.starts_with(name))
            .unwrap_or_else(|| panic!("{name} not forwarded: {lines:?}"))
            .clone();
        assert!(
            !line.contains(&format!("arrays={array:#x},")),
            "cuBLAS must get the server's copy of the pointer array: {line}"
        );
    };
    let count = |log: &PathBuf, name: &str| {
        log_lines(log)
            .iter()
            .filter(|l| l.starts_with(name))
            .count()
    };

    // trsmBatched: two lower-triangular 2 x 2 systems L X = 2 B.
    let l = [2.0f32, 1.0, 0.0, 4.0, 1.0, 0.0, 0.0, 1.0];
    let mats = ctx.malloc(32).unwrap();
    put(ctx, mats, &f32s(&l));
    let rhs = ctx.malloc(16).unwrap();
    put(ctx, rhs, &f32s(&[2.0, 5.0, 3.0, 1.0]));
    let (a_array, b_array) = (ctx.malloc(16).unwrap(), ctx.malloc(16).unwrap());
    put(ctx, a_array, &ptrs(&[mats, mats + 16]));
    put(ctx, b_array, &ptrs(&[rhs, rhs + 8]));
    let trsm = |a: Operand, lda_side: i32| wire::Call::TrsmBatched {
        handle: h,
        dtype: dtype::R32F,
        side: lda_side,
        uplo: 0,
        trans: 0,
        diag: 0,
        m: 2,
        n: 1,
        alpha: host(2.0),
        a,
        b: operand(b_array, 2, 0),
        batch: 2,
    };
    assert_eq!(
        blas(ctx, trsm(operand(a_array, 2, 0), 0)).unwrap().status,
        0
    );
    // [[2, 0], [1, 4]] x = (4, 10): x = (2, 2); the identity: x = (6, 2).
    assert_eq!(read_f32s(ctx, rhs, 4), [2.0, 2.0, 6.0, 2.0]);
    staged(&log, "cublasStrsmBatched", a_array);

    // gemvBatched (pointer arrays) and gemvStridedBatched: y = A x + y.
    let x = ctx.malloc(16).unwrap();
    put(ctx, x, &f32s(&[1.0, 1.0, 1.0, -1.0]));
    let y = ctx.malloc(16).unwrap();
    put(ctx, y, &f32s(&[1.0, 1.0, 1.0, 1.0]));
    let (x_array, y_array) = (ctx.malloc(16).unwrap(), ctx.malloc(16).unwrap());
    put(ctx, x_array, &ptrs(&[x, x + 8]));
    put(ctx, y_array, &ptrs(&[y, y + 8]));
    let gemv = |a: Operand, x: Operand, y: Operand, arrays: bool| wire::Call::GemvBatched {
        handle: h,
        types: [dtype::R32F; 3],
        trans: 0,
        m: 2,
        n: 2,
        alpha: host(1.0),
        a,
        x,
        beta: host(1.0),
        y,
        batch: 2,
        pointer_arrays: arrays,
    };
    let call = gemv(
        operand(a_array, 2, 0),
        operand(x_array, 1, 0),
        operand(y_array, 1, 0),
        true,
    );
    assert_eq!(blas(ctx, call).unwrap().status, 0);
    // [[2, 0], [1, 4]] (1, 1) + 1 = (3, 6); I (1, -1) + 1 = (2, 0).
    assert_eq!(read_f32s(ctx, y, 4), [3.0, 6.0, 2.0, 0.0]);
    staged(&log, "cublasSgemvBatched", a_array);
    let call = gemv(
        operand(mats, 2, 4),
        operand(x, 1, 2),
        operand(y, 1, 2),
        false,
    );
    assert_eq!(blas(ctx, call).unwrap().status, 0);
    assert_eq!(read_f32s(ctx, y, 4), [5.0, 11.0, 3.0, -1.0]);
    assert_eq!(count(&log, "cublasSgemvStridedBatched"), 1);
    // A strided batch reaching past its allocation is refused.
    let call = gemv(
        operand(mats, 2, 5),
        operand(x, 1, 2),
        operand(y, 1, 2),
        false,
    );
    let f = blas(ctx, call).unwrap_err();
    assert_eq!(f.code, CudaError::ILLEGAL_ADDRESS, "{f}");
    assert_eq!(count(&log, "cublasSgemvStridedBatched"), 1);

    // geqrfBatched and gelsBatched reach cuBLAS with the server's arrays
    // (the stand-in answers NOT_SUPPORTED for them).
    let tau = ctx.malloc(16).unwrap();
    let tau_array = ctx.malloc(16).unwrap();
    put(ctx, tau_array, &ptrs(&[tau, tau + 8]));
    let geqrf = wire::Call::GeqrfBatched {
        handle: h,
        dtype: dtype::R32F,
        m: 2,
        n: 2,
        a: operand(a_array, 2, 0),
        tau: tau_array,
        batch: 2,
    };
    assert_eq!(blas(ctx, geqrf).unwrap().status, 15);
    staged(&log, "cublasSgeqrfBatched", a_array);
    let info = ctx.malloc(8).unwrap();
    let gels = |m: i64, dev_info: u64| wire::Call::GelsBatched {
        handle: h,
        dtype: dtype::R32F,
        trans: 0,
        m,
        n: 2,
        nrhs: 1,
        a: operand(a_array, 2, 0),
        c: operand(b_array, 2, 0),
        dev_info,
        batch: 2,
    };
    assert_eq!(blas(ctx, gels(2, info)).unwrap().status, 15);
    staged(&log, "cublasSgelsBatched", a_array);
    assert_eq!(read_ints(ctx, info, 2), [0, 0]);

    // Refused before cuBLAS: m < n (NOT_SUPPORTED, as cuBLAS), a
    // devInfoArray past its allocation, a matrix pointer outside the
    // client's memory, a short leading dimension.
    let before = (
        count(&log, "cublasSgelsBatched"),
        count(&log, "cublasStrsmBatched"),
    );
    assert_eq!(blas(ctx, gels(1, info)).unwrap().status, 15);
    let f = blas(ctx, gels(2, info + 4)).unwrap_err();
    assert_eq!(f.code, CudaError::ILLEGAL_ADDRESS, "{f}");
    let wild = ctx.malloc(16).unwrap();
    put(ctx, wild, &ptrs(&[mats, 0xdead_0000]));
    let f = blas(ctx, trsm(operand(wild, 2, 0), 0)).unwrap_err();
    assert_eq!(f.code, CudaError::ILLEGAL_ADDRESS, "{f}");
    assert!(f.message.contains("A[1]"), "{f}");
    assert_eq!(
        blas(ctx, trsm(operand(a_array, 1, 0), 0)).unwrap().status,
        7
    );
    assert_eq!(
        blas(ctx, trsm(operand(a_array, 2, 0), 2)).unwrap().status,
        7
    );
    assert_eq!(
        (
            count(&log, "cublasSgelsBatched"),
            count(&log, "cublasStrsmBatched")
        ),
        before
    );
}
