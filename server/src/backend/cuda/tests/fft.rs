//! cuFFT on the cuda backend, with the fake driver and `fake_libcufft.c`.

use super::*;

use rcud_proto::math::fft::{self as fft_wire, Geometry};

/// The fake driver with the fake cuFFT: (backend, log).
fn fake_fft_backend(test: &str) -> Option<(CudaBackend, PathBuf)> {
    let backend = fake_backend(test)?;
    let (lib, log) = fake_math_library(test, "fake_libcufft.c", "libcufft.so.12")?;
    Some((backend.with_fft_libraries(vec![lib.into()]), log))
}

fn fft(ctx: &mut dyn DeviceContext, call: fft_wire::Call) -> Result<rcud_math::Reply, Failure> {
    ctx.math_call(3, &rcud_proto::codec::to_vec(&call))
}

fn fft_plan(ctx: &mut dyn DeviceContext) -> u32 {
    let reply = fft(ctx, fft_wire::Call::Create {}).unwrap();
    assert_eq!(reply.status, 0);
    u32::from_le_bytes(reply.out.try_into().unwrap())
}

/// A C2C plan of `batch` transforms of `n` points, basic layout.
fn c2c(n: i64, batch: i64) -> Geometry {
    Geometry {
        kind: 0x29,
        n: vec![n],
        batch,
        advanced: None,
    }
}

fn exec_c2c(plan: u32, input: u64, output: u64, direction: i32) -> fft_wire::Call {
    fft_wire::Call::Exec {
        plan,
        kind: 0x29,
        input,
        output,
        direction,
    }
}

#[test]
fn fake_cufft_plans_run_on_the_contexts_stream() {
    let test = "fake_cufft_plans_run_on_the_contexts_stream";
    let Some((b, log)) = fake_fft_backend(test) else {
        return;
    };
    let mut ctx = b.open(0, 0).unwrap();
    let ctx = ctx.as_mut();
    let plan = fft_plan(ctx);
    let reply = fft(
        ctx,
        fft_wire::Call::MakePlan {
            plan,
            geometry: c2c(8, 2),
        },
    )
    .unwrap();
    assert_eq!(reply.status, 0);
    // Batch 0 a unit impulse (spectrum all ones), batch 1 all ones
    // (spectrum 8 at frequency 0).
    let (input, output) = (ctx.malloc(128).unwrap(), ctx.malloc(128).unwrap());
    let mut values = vec![0f32; 32];
    values[0] = 1.0;
    for k in 0..8 {
        values[16 + 2 * k] = 1.0;
    }
    put(ctx, input, &f32s(&values));
    let reply = fft(ctx, exec_c2c(plan, input, output, fft_wire::FORWARD)).unwrap();
    assert_eq!(reply.status, 0);
    let got = read_f32s(ctx, output, 32);
    for k in 0..8 {
        assert!(
            (got[2 * k] - 1.0).abs() < 1e-5 && got[2 * k + 1].abs() < 1e-5,
            "{got:?}"
        );
        let want = if k == 0 { 8.0 } else { 0.0 };
        assert!((got[16 + 2 * k] - want).abs() < 1e-4, "{got:?}");
    }
    let lines = log_lines(&log);
    let stream = lines
        .iter()
        .find(|l| l.starts_with("cufftSetStream"))
        .and_then(|l| l.split("stream=").nth(1))
        .expect("cufftSetStream reached the library")
        .to_string();
    assert_ne!(stream, "(nil)", "{lines:?}");
    assert!(
        lines
            .iter()
            .any(|l| l.starts_with("cufftMakePlanMany64") && l.contains("n0=8 batch=2")),
        "{lines:?}"
    );
    assert!(
        lines.iter().any(
            |l| l.starts_with("cufftExecC2C") && l.contains(&format!("stream={stream} dir=-1"))
        ),
        "{lines:?}"
    );
    // cuFFT's own result comes back: the fake computes no in-place transform.
    let reply = fft(ctx, exec_c2c(plan, input, input, fft_wire::INVERSE)).unwrap();
    assert_eq!(reply.status, fft_wire::status::NOT_SUPPORTED);
    assert_eq!(
        fft(ctx, fft_wire::Call::Destroy { plan }).unwrap().status,
        0
    );
    assert!(log_lines(&log)
        .iter()
        .any(|l| l == &format!("cufftDestroy plan={plan}")));
}

#[test]
fn fake_cufft_bad_calls_are_answered_before_the_library() {
    let test = "fake_cufft_bad_calls_are_answered_before_the_library";
    let Some((b, log)) = fake_fft_backend(test) else {
        return;
    };
    let mut ctx = b.open(0, 0).unwrap();
    let ctx = ctx.as_mut();
    let plan = fft_plan(ctx);
    let (input, small) = (ctx.malloc(128).unwrap(), ctx.malloc(64).unwrap());
    // Before a geometry, and an unknown plan.
    let status = |r: Result<rcud_math::Reply, Failure>| r.unwrap().status;
    assert_eq!(
        status(fft(ctx, exec_c2c(plan, input, input, -1))),
        fft_wire::status::INVALID_PLAN
    );
    assert_eq!(
        status(fft(ctx, exec_c2c(plan + 7, input, input, -1))),
        fft_wire::status::INVALID_PLAN
    );
    // Bad geometries, as cufftMakePlan* answers them.
    let make = |geometry| fft_wire::Call::MakePlan { plan, geometry };
    assert_eq!(
        status(fft(ctx, make(c2c(0, 1)))),
        fft_wire::status::INVALID_SIZE
    );
    let mut rank4 = c2c(8, 1);
    rank4.n = vec![2, 2, 2, 2];
    assert_eq!(
        status(fft(ctx, make(rank4))),
        fft_wire::status::INVALID_VALUE
    );
    let mut bad_type = c2c(8, 1);
    bad_type.kind = 0x77;
    assert_eq!(
        status(fft(ctx, make(bad_type))),
        fft_wire::status::INVALID_TYPE
    );
    assert!(
        !log_lines(&log)
            .iter()
            .any(|l| l.starts_with("cufftMakePlanMany64")),
        "a bad geometry reached the library"
    );
    assert_eq!(status(fft(ctx, make(c2c(8, 2)))), 0);
    let before = log_lines(&log).len();
    // The wrong execution type, a bad direction, a NULL pointer.
    let mut z2z = exec_c2c(plan, input, input, -1);
    if let fft_wire::Call::Exec { kind, .. } = &mut z2z {
        *kind = 0x69;
    }
    assert_eq!(status(fft(ctx, z2z)), fft_wire::status::INVALID_TYPE);
    assert_eq!(
        status(fft(ctx, exec_c2c(plan, input, input, 3))),
        fft_wire::status::INVALID_VALUE
    );
    assert_eq!(
        status(fft(ctx, exec_c2c(plan, 0, input, -1))),
        fft_wire::status::INVALID_VALUE
    );
    // Two transforms of 8 complex f32 need 128 bytes on each side.
    for (i, o) in [(input, small), (small, input), (input + 8, input + 8)] {
        let f = fft(ctx, exec_c2c(plan, i, o, -1)).unwrap_err();
        assert_eq!(f.code, CudaError::ILLEGAL_ADDRESS, "{f}");
        assert!(
            f.message.contains("outside the client's device memory"),
            "{f}"
        );
    }
    assert_eq!(
        log_lines(&log).len(),
        before,
        "a bad execution reached the library"
    );
}

#[test]
fn fake_cufft_plans_are_destroyed_with_the_context() {
    let test = "fake_cufft_plans_are_destroyed_with_the_context";
    let Some((b, log)) = fake_fft_backend(test) else {
        return;
    };
    let mut ctx = b.open(0, 0).unwrap();
    let plan = fft_plan(ctx.as_mut());
    let reply = fft(
        ctx.as_mut(),
        fft_wire::Call::MakePlan {
            plan,
            geometry: c2c(4, 1),
        },
    )
    .unwrap();
    assert_eq!(reply.status, 0);
    drop(ctx);
    assert!(
        log_lines(&log)
            .iter()
            .any(|l| l.starts_with("cufftDestroy")),
        "{:?}",
        log_lines(&log)
    );
}

#[test]
fn fake_driver_without_cufft_says_so() {
    let Some(b) = fake_backend("fake_driver_without_cufft_says_so") else {
        return;
    };
    let b = b.with_fft_libraries(vec!["/nonexistent/libcufft.so.12".into()]);
    let mut ctx = b.open(0, 0).unwrap();
    let f = fft(ctx.as_mut(), fft_wire::Call::Create {}).unwrap_err();
    assert_eq!(f.code, CudaError::NOT_SUPPORTED);
    assert!(
        f.message
            .contains("NVIDIA's cuFFT (libcufft.so.12) was not found on the server"),
        "{f}"
    );
}
