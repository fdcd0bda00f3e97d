//! cuSOLVER on the cuda backend, with the fake driver and
//! `fake_libcusolver.c`.

use super::*;

use rcud_proto::math::solver::Call;

/// `CUSOLVER_STATUS_NOT_INITIALIZED`.
const NOT_INITIALIZED: i32 = 1;
/// `CUSOLVER_STATUS_INVALID_VALUE`.
const INVALID_VALUE: i32 = 3;
/// `CUSOLVER_STATUS_NOT_SUPPORTED`.
const NOT_SUPPORTED: i32 = 9;
/// `dtype` on the wire.
const S: u8 = 0;
const D: u8 = 1;
const Z: u8 = 3;

/// The fake driver with the fake cuSOLVER: (backend, log).
fn fake_solver_backend(test: &str) -> Option<(CudaBackend, PathBuf)> {
    let backend = fake_backend(test)?;
    let (lib, log) = fake_math_library(test, "fake_libcusolver.c", "libcusolver.so.12")?;
    Some((backend.with_solver_libraries(vec![lib.into()]), log))
}

fn solver(ctx: &mut dyn DeviceContext, call: Call) -> Result<rcud_math::Reply, Failure> {
    ctx.math_call(6, &rcud_proto::codec::to_vec(&call))
}

fn status(ctx: &mut dyn DeviceContext, call: Call) -> i32 {
    solver(ctx, call).unwrap().status
}

fn create(ctx: &mut dyn DeviceContext) -> u64 {
    let reply = solver(ctx, Call::Create {}).unwrap();
    assert_eq!(reply.status, 0);
    u64::from_le_bytes(reply.out.try_into().unwrap())
}

fn f64s(values: &[f64]) -> Vec<u8> {
    values.iter().flat_map(|v| v.to_le_bytes()).collect()
}

fn read_f64s(ctx: &mut dyn DeviceContext, ptr: u64, n: usize) -> Vec<f64> {
    read_back(ctx, ptr, 8 * n as u64)
        .chunks_exact(8)
        .map(|c| f64::from_le_bytes(c.try_into().unwrap()))
        .collect()
}

fn read_i32s(ctx: &mut dyn DeviceContext, ptr: u64, n: usize) -> Vec<i32> {
    read_back(ctx, ptr, 4 * n as u64)
        .chunks_exact(4)
        .map(|c| i32::from_le_bytes(c.try_into().unwrap()))
        .collect()
}

fn close(got: &[f64], want: &[f64]) -> bool {
    got.len() == want.len() && got.iter().zip(want).all(|(g, w)| (g - w).abs() < 1e-5)
}

fn potrf(handle: u64, dtype: u8, n: i32, a: u64, lda: i32, info: u64) -> Call {
    Call::Potrf {
        handle,
        dtype,
        uplo: 0,
        n,
        a,
        lda,
        info,
    }
}

/// The lines of the log that start with `call `.
fn calls<'a>(lines: &'a [String], call: &str) -> Vec<&'a String> {
    let prefix = format!("{call} ");
    lines.iter().filter(|l| l.starts_with(&prefix)).collect()
}

#[test]
fn fake_cusolver_calls_run_on_the_contexts_stream() {
    let test = "fake_cusolver_calls_run_on_the_contexts_stream";
    let Some((b, log)) = fake_solver_backend(test) else {
        return;
    };
    let mut ctx = b.open(0, 0).unwrap();
    let ctx = ctx.as_mut();
    let handle = create(ctx);
    let (a, x, info) = (
        ctx.malloc(256).unwrap(),
        ctx.malloc(64).unwrap(),
        ctx.malloc(16).unwrap(),
    );
    put(ctx, info, &[0xff; 16]);
    // Cholesky of [[4, 2], [2, 3]]: L = [[2, 0], [1, √2]].
    put(ctx, a, &f64s(&[4.0, 2.0, 2.0, 3.0]));
    assert_eq!(status(ctx, potrf(handle, D, 2, a, 2, info)), 0);
    let l = read_f64s(ctx, a, 4);
    assert!(
        close(&[l[0], l[1], l[3]], &[2.0, 1.0, 2f64.sqrt()]),
        "{l:?}"
    );
    assert_eq!(read_i32s(ctx, info, 1), [0]);
    // A x = b for b = A (1, 1) = (6, 5).
    put(ctx, x, &f64s(&[6.0, 5.0]));
    let potrs = Call::Potrs {
        handle,
        dtype: D,
        uplo: 0,
        n: 2,
        nrhs: 1,
        a,
        lda: 2,
        b: x,
        ldb: 2,
        info,
    };
    assert_eq!(status(ctx, potrs), 0);
    assert!(close(&read_f64s(ctx, x, 2), &[1.0, 1.0]));
    // The upper triangle: U = Lᵀ, A(0, 1) = 1; the lower one is not read.
    put(ctx, a, &f64s(&[4.0, -7.0, 2.0, 3.0]));
    let upper = Call::Potrf {
        handle,
        dtype: D,
        uplo: 1,
        n: 2,
        a,
        lda: 2,
        info,
    };
    assert_eq!(status(ctx, upper), 0);
    let u = read_f64s(ctx, a, 4);
    assert!(close(&u, &[2.0, -7.0, 1.0, 2f64.sqrt()]), "{u:?}");

    let lines = log_lines(&log);
    let set = calls(&lines, "cusolverDnSetStream");
    let stream = set
        .first()
        .and_then(|l| l.split("stream=").nth(1))
        .and_then(|s| s.split(' ').next())
        .expect("cusolverDnSetStream reached the library")
        .to_string();
    assert_ne!(stream, "(nil)", "{lines:?}");
    for (call, count) in [("cusolverDnDpotrf", 2), ("cusolverDnDpotrs", 1)] {
        let line = calls(&lines, call);
        assert!(
            line.len() == count
                && line
                    .iter()
                    .all(|l| l.contains(&format!("stream={stream} "))),
            "{call}: {lines:?}"
        );
    }
    // The workspace is the bufferSize query's (64 + n² elements), the
    // server's own: not inside anything the client allocated.
    let line = calls(&lines, "cusolverDnDpotrf")[0];
    assert!(line.contains("lwork=68 "), "{line}");
    let work = line.split("work=").last().unwrap();
    let work = u64::from_str_radix(work.trim_start_matches("0x"), 16).unwrap();
    assert!(ctx.check(work, 68 * 8).is_err(), "{line}");

    // LU with pivoting (S): [[1, 2], [3, 4]] → P = swap, L = [[1, 0],
    // [1/3, 1]], U = [[3, 4], [0, 2/3]]; then A x = (5, 11) gives (1, 2).
    let (sa, ipiv, sb) = (
        ctx.malloc(16).unwrap(),
        ctx.malloc(8).unwrap(),
        ctx.malloc(8).unwrap(),
    );
    put(ctx, sa, &f32s(&[1.0, 3.0, 2.0, 4.0]));
    let getrf = Call::Getrf {
        handle,
        dtype: S,
        m: 2,
        n: 2,
        a: sa,
        lda: 2,
        ipiv,
        info,
    };
    assert_eq!(status(ctx, getrf), 0);
    assert_eq!(read_i32s(ctx, ipiv, 2), [2, 2]);
    let lu = read_f32s(ctx, sa, 4);
    assert!(
        (lu[0] - 3.0).abs() < 1e-6 && (lu[1] - 1.0 / 3.0).abs() < 1e-6,
        "{lu:?}"
    );
    put(ctx, sb, &f32s(&[5.0, 11.0]));
    let getrs = Call::Getrs {
        handle,
        dtype: S,
        trans: 0,
        n: 2,
        nrhs: 1,
        a: sa,
        lda: 2,
        ipiv,
        b: sb,
        ldb: 2,
        info,
    };
    assert_eq!(status(ctx, getrs), 0);
    let got = read_f32s(ctx, sb, 2);
    assert!(
        (got[0] - 1.0).abs() < 1e-5 && (got[1] - 2.0).abs() < 1e-5,
        "{got:?}"
    );

    // QR of an upper triangular A: tau = 0; Q (orgqr) = I; Q C = C.
    let (tau, c) = (ctx.malloc(16).unwrap(), ctx.malloc(32).unwrap());
    put(ctx, a, &f64s(&[2.0, 0.0, 1.0, 3.0]));
    put(ctx, tau, &f64s(&[9.0, 9.0]));
    let geqrf = Call::Geqrf {
        handle,
        dtype: D,
        m: 2,
        n: 2,
        a,
        lda: 2,
        tau,
        info,
    };
    assert_eq!(status(ctx, geqrf), 0);
    assert_eq!(read_f64s(ctx, tau, 2), [0.0, 0.0]);
    put(ctx, c, &f64s(&[1.0, 2.0, 3.0, 4.0]));
    let ormqr = Call::Ormqr {
        handle,
        dtype: D,
        side: 0,
        trans: 1,
        m: 2,
        n: 2,
        k: 2,
        a,
        lda: 2,
        tau,
        c,
        ldc: 2,
        info,
    };
    assert_eq!(status(ctx, ormqr), 0);
    assert_eq!(read_f64s(ctx, c, 4), [1.0, 2.0, 3.0, 4.0]);
    let orgqr = Call::Orgqr {
        handle,
        dtype: D,
        m: 2,
        n: 2,
        k: 2,
        a,
        lda: 2,
        tau,
        info,
    };
    assert_eq!(status(ctx, orgqr), 0);
    assert_eq!(read_f64s(ctx, a, 4), [1.0, 0.0, 0.0, 1.0]);

    // Eigenvalues and singular values of diagonal matrices.
    let w = ctx.malloc(24).unwrap();
    let mut diag = [0.0; 9];
    (diag[0], diag[4], diag[8]) = (1.0, 2.0, 3.0);
    put(ctx, a, &f64s(&diag));
    let syevd = Call::Syevd {
        handle,
        dtype: D,
        jobz: 1,
        uplo: 0,
        n: 3,
        a,
        lda: 3,
        w,
        info,
    };
    assert_eq!(status(ctx, syevd), 0);
    assert_eq!(read_f64s(ctx, w, 3), [1.0, 2.0, 3.0]);
    put(ctx, a, &f64s(&[5.0, 0.0, 0.0, 0.0, -3.0, 0.0]));
    let gesvd = Call::Gesvd {
        handle,
        dtype: D,
        jobu: b'N',
        jobvt: b'N',
        m: 3,
        n: 2,
        a,
        lda: 3,
        s: w,
        u: 0,
        ldu: 1,
        vt: 0,
        ldvt: 1,
        info,
    };
    assert_eq!(status(ctx, gesvd), 0);
    assert_eq!(read_f64s(ctx, w, 2), [5.0, 3.0]);
    let lines = log_lines(&log);
    let line = calls(&lines, "cusolverDnDgesvd")[0];
    assert!(
        line.contains("jobu=N jobvt=N m=3 n=2 lwork=70 ") && !line.ends_with("rwork=(nil)"),
        "{line}"
    );

    // cuSOLVER's own status comes back: the fake computes no complex form.
    let zpotrf = potrf(handle, Z, 2, a, 2, info);
    assert_eq!(status(ctx, zpotrf), NOT_SUPPORTED);

    assert_eq!(status(ctx, Call::Destroy { handle }), 0);
    assert_eq!(calls(&log_lines(&log), "cusolverDnDestroy").len(), 1);
    assert_eq!(
        status(ctx, potrf(handle, D, 2, a, 2, info)),
        NOT_INITIALIZED
    );
    assert_eq!(status(ctx, Call::Destroy { handle }), NOT_INITIALIZED);
}

#[test]
fn fake_cusolver_bad_calls_are_answered_before_the_library() {
    let test = "fake_cusolver_bad_calls_are_answered_before_the_library";
    let Some((b, log)) = fake_solver_backend(test) else {
        return;
    };
    let mut ctx = b.open(0, 0).unwrap();
    let ctx = ctx.as_mut();
    let handle = create(ctx);
    let (a, small, info) = (
        ctx.malloc(32).unwrap(),
        ctx.malloc(8).unwrap(),
        ctx.malloc(4).unwrap(),
    );
    let before = log_lines(&log).len();
    // An unknown handle; bad arguments, as cuSOLVER answers them.
    assert_eq!(
        status(ctx, potrf(handle + 1, D, 2, a, 2, info)),
        NOT_INITIALIZED
    );
    assert_eq!(status(ctx, potrf(handle, D, 2, a, 1, info)), INVALID_VALUE);
    assert_eq!(status(ctx, potrf(handle, D, -1, a, 1, info)), INVALID_VALUE);
    assert_eq!(status(ctx, potrf(handle, 7, 2, a, 2, info)), INVALID_VALUE);
    let gesvd = |m, n, jobu| Call::Gesvd {
        handle,
        dtype: S,
        jobu,
        jobvt: b'N',
        m,
        n,
        a,
        lda: 2,
        s: a,
        u: a,
        ldu: 2,
        vt: 0,
        ldvt: 1,
        info,
    };
    assert_eq!(status(ctx, gesvd(1, 2, b'N')), INVALID_VALUE, "m < n");
    assert_eq!(status(ctx, gesvd(2, 2, b'X')), INVALID_VALUE);
    let ormqr = Call::Ormqr {
        handle,
        dtype: Z,
        side: 0,
        trans: 1,
        m: 1,
        n: 1,
        k: 1,
        a,
        lda: 1,
        tau: a,
        c: a,
        ldc: 1,
        info,
    };
    assert_eq!(status(ctx, ormqr), INVALID_VALUE, "Qᵀ of a complex Q");
    // Ranges outside the client's memory: A, devInfo, pivots, W, U.
    let outside = |r: Result<rcud_math::Reply, Failure>| {
        let f = r.unwrap_err();
        assert_eq!(f.code, CudaError::ILLEGAL_ADDRESS, "{f}");
        assert!(
            f.message.contains("outside the client's device memory"),
            "{f}"
        );
    };
    outside(solver(ctx, potrf(handle, D, 2, small, 2, info)));
    outside(solver(ctx, potrf(handle, D, 2, a + 8, 2, info)));
    outside(solver(ctx, potrf(handle, D, 1, a, 1, 0)));
    outside(solver(ctx, potrf(handle, D, 1, a, 1, info + 2)));
    let getrf = |ipiv| Call::Getrf {
        handle,
        dtype: D,
        m: 2,
        n: 2,
        a,
        lda: 2,
        ipiv,
        info,
    };
    outside(solver(ctx, getrf(small + 4)));
    let syevd = Call::Syevd {
        handle,
        dtype: D,
        jobz: 0,
        uplo: 0,
        n: 2,
        a,
        lda: 2,
        w: small,
        info,
    };
    outside(solver(ctx, syevd));
    // U (2 x 2 floats with jobu 'A') where 8 bytes were allocated.
    let mut u_outside = gesvd(2, 2, b'A');
    if let Call::Gesvd { u, .. } = &mut u_outside {
        *u = small;
    }
    outside(solver(ctx, u_outside));
    assert_eq!(
        log_lines(&log).len(),
        before,
        "a bad call reached the library: {:?}",
        log_lines(&log)
    );
}

#[test]
fn fake_cusolver_workspaces_are_the_servers_and_grow() {
    let test = "fake_cusolver_workspaces_are_the_servers_and_grow";
    let Some((b, log)) = fake_solver_backend(test) else {
        return;
    };
    let mut ctx = b.open_cuda(0).unwrap();
    let handle = create(&mut ctx);
    let (a, info) = (ctx.malloc(8 * 64).unwrap(), ctx.malloc(4).unwrap());
    let mut identity = vec![0.0; 64];
    for i in 0..8 {
        identity[9 * i] = 1.0;
    }
    assert_eq!(ctx.solver.workspace_bytes(), 0, "nothing before a call");
    put(&mut ctx, a, &f64s(&identity[..4]));
    let small = potrf(handle, D, 1, a, 1, info);
    assert_eq!(status(&mut ctx, small.clone()), 0);
    let first = ctx.solver.workspace_bytes();
    assert!(first >= 65 * 8, "{first}");
    put(&mut ctx, a, &f64s(&identity));
    assert_eq!(status(&mut ctx, potrf(handle, D, 8, a, 8, info)), 0);
    let grown = ctx.solver.workspace_bytes();
    assert!(grown >= 128 * 8 && grown > first, "{grown}");
    assert_eq!(status(&mut ctx, small), 0);
    assert_eq!(ctx.solver.workspace_bytes(), grown, "kept, not shrunk");
    // A second handle has a workspace of its own.
    let other = create(&mut ctx);
    assert_eq!(status(&mut ctx, potrf(other, D, 1, a, 1, info)), 0);
    assert_eq!(ctx.solver.workspace_bytes(), grown + first);
    assert_eq!(status(&mut ctx, Call::Destroy { handle: other }), 0);
    assert_eq!(ctx.solver.workspace_bytes(), grown);
    let lines = log_lines(&log);
    assert_eq!(calls(&lines, "cusolverDnDpotrf").len(), 4, "{lines:?}");
}

#[test]
fn fake_cusolver_handles_are_destroyed_with_the_context() {
    let test = "fake_cusolver_handles_are_destroyed_with_the_context";
    let Some((b, log)) = fake_solver_backend(test) else {
        return;
    };
    let mut ctx = b.open(0, 0).unwrap();
    create(ctx.as_mut());
    create(ctx.as_mut());
    drop(ctx);
    let lines = log_lines(&log);
    assert_eq!(calls(&lines, "cusolverDnDestroy").len(), 2, "{lines:?}");
}

#[test]
fn fake_cusolver_handles_go_with_a_device_reset() {
    let test = "fake_cusolver_handles_go_with_a_device_reset";
    let Some((b, log)) = fake_solver_backend(test) else {
        return;
    };
    let mut ctx = b.open(0, 0).unwrap();
    let handle = create(ctx.as_mut());
    ctx.reset();
    assert_eq!(calls(&log_lines(&log), "cusolverDnDestroy").len(), 1);
    let (a, info) = (ctx.malloc(8).unwrap(), ctx.malloc(4).unwrap());
    assert_eq!(
        status(ctx.as_mut(), potrf(handle, D, 1, a, 1, info)),
        NOT_INITIALIZED
    );
}

#[test]
fn fake_driver_without_cusolver_says_so() {
    let Some(b) = fake_backend("fake_driver_without_cusolver_says_so") else {
        return;
    };
    let b = b.with_solver_libraries(vec!["/nonexistent/libcusolver.so.12".into()]);
    let mut ctx = b.open(0, 0).unwrap();
    let f = solver(ctx.as_mut(), Call::Create {}).unwrap_err();
    assert_eq!(f.code, CudaError::NOT_SUPPORTED);
    assert!(
        f.message
            .contains("NVIDIA's cuSOLVER (libcusolver.so.12) was not found on the server"),
        "{f}"
    );
}

#[allow(clippy::too_many_arguments)]
fn geev(handle: u64, dtype: u8, w_real: u8, jobvr: i32, n: i32, a: u64, w: u64, vr: u64) -> Call {
    Call::Geev {
        handle,
        dtype,
        w_real,
        jobvl: 0,
        jobvr,
        n,
        a,
        lda: n,
        w,
        vl: 0,
        ldvl: 1,
        vr,
        ldvr: n,
        info: vr + 8 * 9,
    }
}

#[test]
fn fake_cusolver_xgeev_reaches_the_library() {
    let test = "fake_cusolver_xgeev_reaches_the_library";
    let Some((b, log)) = fake_solver_backend(test) else {
        return;
    };
    let mut ctx = b.open(0, 0).unwrap();
    let ctx = ctx.as_mut();
    let handle = create(ctx);
    // VR (3 x 3 doubles) and devInfo after it.
    let (a, w, vr) = (
        ctx.malloc(72).unwrap(),
        ctx.malloc(96).unwrap(),
        ctx.malloc(72 + 4).unwrap(),
    );
    let info = vr + 72;
    put(ctx, info, &[0xff; 4]);
    put(
        ctx,
        a,
        &f64s(&[1.0, 0.0, 0.0, 0.0, 2.0, 0.0, 0.0, 0.0, 3.0]),
    );
    // D with a complex W (CUDA_C_64F) and right vectors.
    assert_eq!(status(ctx, geev(handle, D, 0, 1, 3, a, w, vr)), 0);
    assert_eq!(
        read_f64s(ctx, w, 6),
        [1.0, 0.0, 2.0, 0.0, 3.0, 0.0],
        "W, complex"
    );
    assert_eq!(
        read_f64s(ctx, vr, 9),
        [1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0]
    );
    assert_eq!(read_i32s(ctx, info, 1), [0]);
    // A real W (w_real 1): 2n reals of A's type, without vectors.
    put(ctx, w, &[0xff; 96]);
    assert_eq!(status(ctx, geev(handle, D, 1, 0, 3, a, w, vr)), 0);
    assert_eq!(read_f64s(ctx, w, 6), [1.0, 2.0, 3.0, 0.0, 0.0, 0.0]);
    // Z: every type CUDA_C_64F; the fake computes D only, and cuSOLVER's
    // status comes back.
    assert_eq!(
        status(ctx, geev(handle, Z, 0, 1, 2, a, w, vr)),
        NOT_SUPPORTED
    );
    assert_eq!(
        status(ctx, geev(handle, S, 0, 1, 2, a, w, vr)),
        NOT_SUPPORTED
    );

    let lines = log_lines(&log);
    let runs = calls(&lines, "cusolverDnXgeev");
    let sizes = calls(&lines, "cusolverDnXgeev_bufferSize");
    assert_eq!((runs.len(), sizes.len()), (4, 4), "{lines:?}");
    let stream = calls(&lines, "cusolverDnSetStream")[0]
        .split("stream=")
        .nth(1)
        .and_then(|s| s.split(' ').next())
        .unwrap()
        .to_string();
    assert!(runs
        .iter()
        .all(|l| l.contains(&format!("stream={stream} "))));
    // One params object, made once for the handle.
    let made = calls(&lines, "cusolverDnCreateParams");
    assert_eq!(made.len(), 1, "{lines:?}");
    let params = made[0].split("params=").nth(1).unwrap();
    assert!(runs
        .iter()
        .all(|l| l.contains(&format!("params={params} "))));
    for (line, args) in [
        (
            runs[0],
            "jobvl=0 jobvr=1 n=3 A=1 lda=3 W=5 VL=1 ldvl=1 VR=1 ldvr=3 compute=1 \
             device_bytes=328 host_bytes=35 ",
        ),
        (
            runs[1],
            "jobvl=0 jobvr=0 n=3 A=1 lda=3 W=1 VL=1 ldvl=1 VR=1 ldvr=3 compute=1 ",
        ),
        (
            runs[2],
            "n=2 A=5 lda=2 W=5 VL=5 ldvl=1 VR=5 ldvr=2 compute=5 ",
        ),
        (
            runs[3],
            "n=2 A=0 lda=2 W=4 VL=0 ldvl=1 VR=0 ldvr=2 compute=0 ",
        ),
    ] {
        assert!(line.contains(args), "{line}");
    }
    // The device workspace is the server's own, not the client's.
    let device = runs[0].split("device=").nth(1).unwrap();
    let device = device.split(' ').next().unwrap().trim_start_matches("0x");
    let device = u64::from_str_radix(device, 16).unwrap();
    assert!(ctx.check(device, 328).is_err(), "{}", runs[0]);

    // Bad calls are answered before the library: a real W of a complex A,
    // VR outside the client's memory.
    let before = log_lines(&log).len();
    assert_eq!(
        status(ctx, geev(handle, Z, 1, 0, 2, a, w, vr)),
        INVALID_VALUE
    );
    let f = solver(ctx, geev(handle, D, 0, 1, 3, a, w, vr + 8)).unwrap_err();
    assert_eq!(f.code, CudaError::ILLEGAL_ADDRESS, "{f}");
    assert_eq!(log_lines(&log).len(), before, "{:?}", log_lines(&log));

    // The params object goes with its handle.
    assert_eq!(status(ctx, Call::Destroy { handle }), 0);
    let lines = log_lines(&log);
    let gone = calls(&lines, "cusolverDnDestroyParams");
    assert!(
        gone.len() == 1 && gone[0].contains(&format!("params={params}")),
        "{lines:?}"
    );
}

#[allow(clippy::too_many_arguments)]
fn irs(
    handle: u64,
    lowest: i32,
    gels: u8,
    (m, n): (i32, i32),
    a: u64,
    ipiv: u64,
    b: u64,
    x: u64,
) -> Call {
    Call::Irs {
        handle,
        dtype: D,
        lowest,
        gels,
        m,
        n,
        nrhs: 1,
        a,
        lda: m,
        ipiv,
        b,
        ldb: m,
        x,
        ldx: n,
        info: x + 8 * n as u64,
        refine: 1104,
        max_iters: 7,
        tol: 1e-9,
        fallback: 0,
        history: 1,
    }
}

#[test]
fn fake_cusolver_iterative_refinement_reaches_the_library() {
    let test = "fake_cusolver_iterative_refinement_reaches_the_library";
    let Some((b, log)) = fake_solver_backend(test) else {
        return;
    };
    let mut ctx = b.open(0, 0).unwrap();
    let ctx = ctx.as_mut();
    let handle = create(ctx);
    // A (3×3 diagonal, or 4×3 with a zero last row), B, X with devInfo
    // after it, pivots.
    let (a, rhs, x, ipiv) = (
        ctx.malloc(96).unwrap(),
        ctx.malloc(32).unwrap(),
        ctx.malloc(24 + 4).unwrap(),
        ctx.malloc(12).unwrap(),
    );
    put(
        ctx,
        a,
        &f64s(&[2.0, 0.0, 0.0, 0.0, 4.0, 0.0, 0.0, 0.0, 8.0]),
    );
    put(ctx, rhs, &f64s(&[2.0, 2.0, 2.0, 0.0]));
    // A typed gesv (pivots asked for) runs as that routine: DHgesv.
    let reply = solver(ctx, irs(handle, 1205, 0, (3, 3), a, ipiv, rhs, x)).unwrap();
    assert_eq!(reply.status, 0);
    assert_eq!(reply.out, 2i32.to_le_bytes(), "niters of the typed routine");
    assert!(close(&read_f64s(ctx, x, 3), &[1.0, 0.5, 0.25]));
    assert_eq!(read_i32s(ctx, ipiv, 3), [1, 2, 3]);
    // Without pivots, the expert API with the call's settings.
    put(ctx, x, &[0; 24]);
    let reply = solver(ctx, irs(handle, 1204, 0, (3, 3), a, 0, rhs, x)).unwrap();
    assert_eq!(
        (reply.status, reply.out.clone()),
        (0, 6i32.to_le_bytes().to_vec())
    );
    assert!(close(&read_f64s(ctx, x, 3), &[1.0, 0.5, 0.25]));
    // Least squares of a 4×3 A through IRSXgels.
    put(
        ctx,
        a,
        &f64s(&[2.0, 0.0, 0.0, 0.0, 0.0, 4.0, 0.0, 0.0, 0.0, 0.0, 8.0, 0.0]),
    );
    put(ctx, x, &[0; 24]);
    let reply = solver(ctx, irs(handle, 1207, 1, (4, 3), a, 0, rhs, x)).unwrap();
    assert_eq!(reply.status, 0);
    assert!(close(&read_f64s(ctx, x, 3), &[1.0, 0.5, 0.25]));
    // A typed routine the library lacks (DXgesv) is NOT_SUPPORTED.
    put(
        ctx,
        a,
        &f64s(&[2.0, 0.0, 0.0, 0.0, 4.0, 0.0, 0.0, 0.0, 8.0]),
    );
    assert_eq!(
        status(ctx, irs(handle, 1207, 0, (3, 3), a, ipiv, rhs, x)),
        NOT_SUPPORTED
    );

    let lines = log_lines(&log);
    let typed = calls(&lines, "cusolverDnDHgesv");
    assert_eq!(typed.len(), 1, "{lines:?}");
    assert!(
        typed[0].contains("n=3 nrhs=1 lda=3 ldb=3 ldx=3 bytes=352 "),
        "{}",
        typed[0]
    );
    // The workspace is the server's own.
    let work = typed[0]
        .split("work=")
        .nth(1)
        .unwrap()
        .trim()
        .trim_start_matches("0x");
    assert!(ctx
        .check(u64::from_str_radix(work, 16).unwrap(), 352)
        .is_err());
    let gesv = calls(&lines, "cusolverDnIRSXgesv");
    let gels = calls(&lines, "cusolverDnIRSXgels");
    assert_eq!((gesv.len(), gels.len()), (1, 1), "{lines:?}");
    assert!(
        gesv[0].contains(
            "main=1203 lowest=1204 refine=1104 max_iters=7 tol=1e-09 fallback=0 m=3 n=3 nrhs=1"
        ),
        "{}",
        gesv[0]
    );
    assert!(
        gels[0].contains("lowest=1207 ") && gels[0].contains("m=4 n=3 "),
        "{}",
        gels[0]
    );
    // Each expert call's params and infos are made for it and destroyed.
    for what in ["IRSParams", "IRSInfos"] {
        let made = calls(&lines, &format!("cusolverDn{what}Create")).len();
        let gone = calls(&lines, &format!("cusolverDn{what}Destroy")).len();
        assert_eq!((made, gone), (2, 2), "{what}: {lines:?}");
    }
    // Out of the client's memory: refused before the library.
    let before = log_lines(&log).len();
    let f = solver(ctx, irs(handle, 1205, 0, (3, 3), a, ipiv, rhs, x + 8)).unwrap_err();
    assert_eq!(f.code, CudaError::ILLEGAL_ADDRESS, "{f}");
    assert_eq!(log_lines(&log).len(), before);
}

#[test]
fn fake_cusolver_jacobi_and_gesvda_reach_the_library() {
    let test = "fake_cusolver_jacobi_and_gesvda_reach_the_library";
    let Some((b, log)) = fake_solver_backend(test) else {
        return;
    };
    let mut ctx = b.open(0, 0).unwrap();
    let ctx = ctx.as_mut();
    let handle = create(ctx);
    // Two 3×3 diagonal matrices back to back, W/S (6 doubles), U and V
    // (two 3×3 each), infos.
    let (a, w, u, v, info) = (
        ctx.malloc(144).unwrap(),
        ctx.malloc(48).unwrap(),
        ctx.malloc(144).unwrap(),
        ctx.malloc(144).unwrap(),
        ctx.malloc(8).unwrap(),
    );
    let diagonal = |ctx: &mut dyn DeviceContext| {
        put(
            ctx,
            a,
            &f64s(&[
                3.0, 0.0, 0.0, 0.0, 2.0, 0.0, 0.0, 0.0, 1.0, //
                6.0, 0.0, 0.0, 0.0, 5.0, 0.0, 0.0, 0.0, 4.0,
            ]),
        )
    };
    let syevj = |dtype: u8, batched: u8, batch: i32| Call::Syevj {
        handle,
        dtype,
        jobz: 1,
        uplo: 0,
        n: 3,
        a,
        lda: 3,
        w,
        info,
        batch,
        batched,
        tol: 1e-9,
        max_sweeps: 7,
        sort: 0,
    };
    diagonal(ctx);
    assert_eq!(status(ctx, syevj(D, 0, 1)), 0);
    assert_eq!(read_f64s(ctx, w, 3), [3.0, 2.0, 1.0]);
    assert_eq!(
        read_f64s(ctx, a, 9),
        [1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0],
        "eigenvectors over A"
    );
    diagonal(ctx);
    put(ctx, info, &[0xff; 8]);
    assert_eq!(status(ctx, syevj(D, 1, 2)), 0);
    assert_eq!(read_f64s(ctx, w, 6), [3.0, 2.0, 1.0, 6.0, 5.0, 4.0]);
    assert_eq!(read_i32s(ctx, info, 2), [0, 0]);
    // The library's own status for a form it does not compute.
    assert_eq!(status(ctx, syevj(S, 0, 1)), NOT_SUPPORTED);

    let gesvdj = |batched: u8, batch: i32| Call::Gesvdj {
        handle,
        dtype: D,
        jobz: 1,
        econ: 0,
        m: 3,
        n: 3,
        a,
        lda: 3,
        s: w,
        u,
        ldu: 3,
        v,
        ldv: 3,
        info,
        batch,
        batched,
        tol: 0.0,
        max_sweeps: 0,
        sort: 1,
    };
    diagonal(ctx);
    assert_eq!(status(ctx, gesvdj(0, 1)), 0);
    assert_eq!(read_f64s(ctx, w, 3), [3.0, 2.0, 1.0]);
    assert_eq!(status(ctx, gesvdj(1, 2)), 0);
    assert_eq!(read_f64s(ctx, w, 6), [3.0, 2.0, 1.0, 6.0, 5.0, 4.0]);
    assert_eq!(
        read_f64s(ctx, v + 72, 9),
        [1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0]
    );

    // gesvda answers h_R_nrmF, one double per matrix.
    let reply = solver(
        ctx,
        Call::Gesvda {
            handle,
            dtype: D,
            jobz: 1,
            rank: 2,
            m: 3,
            n: 3,
            a,
            lda: 3,
            stride_a: 9,
            s: w,
            stride_s: 2,
            u,
            ldu: 3,
            stride_u: 9,
            v,
            ldv: 3,
            stride_v: 9,
            info,
            batch: 2,
        },
    )
    .unwrap();
    assert_eq!((reply.status, reply.out), (0, f64s(&[0.0, 0.0])));
    assert_eq!(read_f64s(ctx, w, 4), [3.0, 2.0, 6.0, 5.0]);

    let lines = log_lines(&log);
    let runs = calls(&lines, "cusolverDnDsyevj");
    assert_eq!(runs.len(), 1, "{lines:?}");
    assert!(
        runs[0].contains("jobz=1 uplo=0 n=3 lda=3 tol=1e-09 sweeps=7 sort=0"),
        "{}",
        runs[0]
    );
    let batched = calls(&lines, "cusolverDnDsyevjBatched");
    assert!(
        batched[0].contains("batch=2 tol=1e-09 sweeps=7 sort=0"),
        "{}",
        batched[0]
    );
    // cuSOLVER's defaults where the wire says 0.
    let g = calls(&lines, "cusolverDnDgesvdj");
    assert!(g[0].contains("tol=0 sweeps=100 sort=1"), "{}", g[0]);
    assert!(calls(&lines, "cusolverDnDgesvdjBatched")[0].contains("batch=2 sweeps=100"));
    assert_eq!(calls(&lines, "cusolverDnDgesvdaStridedBatched").len(), 1);
    // One info object per call, destroyed after it.
    for kind in ["Syevj", "Gesvdj"] {
        let made = calls(&lines, &format!("cusolverDnCreate{kind}Info")).len();
        let gone = calls(&lines, &format!("cusolverDnDestroy{kind}Info")).len();
        assert_eq!(made, gone, "{kind}: {lines:?}");
        assert!(made >= 2, "{kind}: {lines:?}");
    }
}

#[test]
fn fake_cusolver_batched_cholesky_gets_checked_copies_of_the_pointer_arrays() {
    let test = "fake_cusolver_batched_cholesky_gets_checked_copies_of_the_pointer_arrays";
    let Some((b, log)) = fake_solver_backend(test) else {
        return;
    };
    let mut ctx = b.open(0, 0).unwrap();
    let ctx = ctx.as_mut();
    let handle = create(ctx);
    // Two 2×2 diagonal matrices, two right-hand sides, the pointer arrays,
    // infos.
    let (m, rhs, arrays, info) = (
        ctx.malloc(64).unwrap(),
        ctx.malloc(32).unwrap(),
        ctx.malloc(32).unwrap(),
        ctx.malloc(8).unwrap(),
    );
    put(ctx, m, &f64s(&[4.0, 0.0, 0.0, 9.0, 16.0, 0.0, 0.0, 25.0]));
    put(ctx, rhs, &f64s(&[8.0, 18.0, 32.0, 50.0]));
    let pointers =
        |ptrs: &[u64]| -> Vec<u8> { ptrs.iter().flat_map(|p| p.to_le_bytes()).collect() };
    put(ctx, arrays, &pointers(&[m, m + 32, rhs, rhs + 16]));
    let potrf = Call::PotrfBatched {
        handle,
        dtype: D,
        uplo: 0,
        n: 2,
        a: arrays,
        lda: 2,
        info,
        batch: 2,
    };
    assert_eq!(status(ctx, potrf.clone()), 0);
    assert_eq!(
        read_f64s(ctx, m, 8),
        [2.0, 0.0, 0.0, 3.0, 4.0, 0.0, 0.0, 5.0]
    );
    assert_eq!(read_i32s(ctx, info, 2), [0, 0]);
    let potrs = Call::PotrsBatched {
        handle,
        dtype: D,
        uplo: 0,
        n: 2,
        nrhs: 1,
        a: arrays,
        lda: 2,
        b: arrays + 16,
        ldb: 2,
        info,
        batch: 2,
    };
    assert_eq!(status(ctx, potrs), 0);
    assert!(close(&read_f64s(ctx, rhs, 4), &[2.0, 2.0, 2.0, 2.0]));

    let lines = log_lines(&log);
    let runs = calls(&lines, "cusolverDnDpotrfBatched");
    assert_eq!(runs.len(), 1, "{lines:?}");
    // cuSOLVER read a copy of the array in the server's memory.
    let staged = runs[0]
        .split("Aarray=")
        .nth(1)
        .unwrap()
        .trim()
        .trim_start_matches("0x");
    let staged = u64::from_str_radix(staged, 16).unwrap();
    assert_ne!(staged, arrays);
    assert!(ctx.check(staged, 16).is_err(), "{}", runs[0]);
    assert!(calls(&lines, "cusolverDnDpotrsBatched")[0].contains("nrhs=1 lda=2 ldb=2 batch=2"));

    // A pointer in the array outside the client's memory faults before
    // the library sees the call.
    put(ctx, arrays, &pointers(&[m, m + 40]));
    let before = log_lines(&log).len();
    let f = solver(ctx, potrf).unwrap_err();
    assert_eq!(f.code, CudaError::ILLEGAL_ADDRESS, "{f}");
    assert!(f.message.contains("Aarray[1]"), "{f}");
    assert_eq!(log_lines(&log).len(), before);
}
