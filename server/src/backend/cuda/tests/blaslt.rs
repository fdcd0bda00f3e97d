//! cuBLASLt on the cuda backend, with the fake driver and
//! `fake_libcublasLt.c`.

use super::*;

use rcud_proto::math::blas::{dtype, Operand, Scalar};
use rcud_proto::math::blaslt::{epilogue, Call};

/// The fake driver with the fake cuBLASLt: (backend, log).
fn fake_lt_backend(test: &str) -> Option<(CudaBackend, PathBuf)> {
    let backend = fake_backend(test)?;
    let (lib, log) = fake_math_library(test, "fake_libcublasLt.c", "libcublasLt.so.13")?;
    Some((backend.with_blaslt_libraries(vec![lib.into()]), log))
}

fn lt(ctx: &mut dyn DeviceContext, call: Call) -> Result<rcud_math::Reply, Failure> {
    ctx.math_call(2, &rcud_proto::codec::to_vec(&call))
}

fn lt_handle(ctx: &mut dyn DeviceContext) -> u64 {
    let reply = lt(ctx, Call::Create {}).unwrap();
    assert_eq!(reply.status, 0);
    u64::from_le_bytes(reply.out.try_into().unwrap())
}

fn host(v: f64) -> Scalar {
    Scalar::Host { re: v, im: 0.0 }
}

/// Where the operands of a 2x2 = (2x3)(3x2) FP32 product live: `batch`
/// products, each operand's matrices `stride` elements apart.
struct Operands {
    a: Operand,
    b: Operand,
    c: Operand,
    d: Operand,
    bias: u64,
}

impl Operands {
    /// Allocates and fills A (1..6 by columns), B (all 1 but the second
    /// batch's 2), C (10s), D (zeros) and a bias of (-100, 0) per batch.
    fn new(ctx: &mut dyn DeviceContext, batch: usize) -> Self {
        let mut alloc = |values: Vec<f32>| {
            let ptr = ctx.malloc(4 * values.len() as u64).unwrap();
            put(ctx, ptr, &f32s(&values));
            ptr
        };
        let a: Vec<f32> = (0..batch).flat_map(|_| (1..=6).map(|v| v as f32)).collect();
        let b: Vec<f32> = (0..batch).flat_map(|i| [1.0 + i as f32; 6]).collect();
        let a = alloc(a);
        let b = alloc(b);
        let c = alloc(vec![10.0; 4 * batch]);
        let d = alloc(vec![0.0; 4 * batch]);
        let bias = alloc((0..batch).flat_map(|_| [-100.0, 0.0]).collect());
        Self {
            a: Operand {
                ptr: a,
                ld: 2,
                stride: 6,
            },
            b: Operand {
                ptr: b,
                ld: 3,
                stride: 6,
            },
            c: Operand {
                ptr: c,
                ld: 2,
                stride: 4,
            },
            d: Operand {
                ptr: d,
                ld: 2,
                stride: 4,
            },
            bias,
        }
    }

    fn matmul(&self, handle: u64, batch: i64, epilogue: i32) -> Call {
        Call::Matmul {
            handle,
            types: [dtype::R32F; 4],
            transa: 0,
            transb: 0,
            m: 2,
            n: 2,
            k: 3,
            alpha: host(1.0),
            a: self.a,
            b: self.b,
            beta: host(0.5),
            c: self.c,
            d: self.d,
            batch,
            epilogue,
            bias: self.bias,
            bias_stride: 2,
        }
    }
}

fn with<F: FnOnce(&mut Call)>(mut call: Call, change: F) -> Call {
    change(&mut call);
    call
}

fn matmul_lines(log: &PathBuf) -> Vec<String> {
    log_lines(log)
        .into_iter()
        .filter(|l| l.starts_with("cublasLtMatmul "))
        .collect()
}

#[test]
fn fake_cublaslt_products_run_on_the_contexts_stream_with_a_server_workspace() {
    let test = "fake_cublaslt_products_run_on_the_contexts_stream_with_a_server_workspace";
    let Some((b, log)) = fake_lt_backend(test) else {
        return;
    };
    let mut ctx = b.open(0, 0).unwrap();
    let ctx = ctx.as_mut();
    let handle = lt_handle(ctx);
    let ops = Operands::new(ctx, 2);
    let reply = lt(ctx, ops.matmul(handle, 2, epilogue::RELU_BIAS)).unwrap();
    assert_eq!(reply.status, 0);
    // A = [1 3 5; 2 4 6]: row sums 9 and 12, times B's 1 (batch 0) or 2
    // (batch 1), plus 0.5 * 10, plus the bias (-100 on row 0), ReLU.
    assert_eq!(
        read_f32s(ctx, ops.d.ptr, 8),
        [0.0, 17.0, 0.0, 17.0, 0.0, 29.0, 0.0, 29.0]
    );
    // Device scalars: alpha 2 and beta 0 from the client's memory.
    let scalars = ctx.malloc(8).unwrap();
    put(ctx, scalars, &f32s(&[2.0, 0.0]));
    let call = with(ops.matmul(handle, 1, epilogue::DEFAULT), |c| {
        if let Call::Matmul { alpha, beta, .. } = c {
            *alpha = Scalar::Device { ptr: scalars };
            *beta = Scalar::Device { ptr: scalars + 4 };
        }
    });
    assert_eq!(lt(ctx, call).unwrap().status, 0);
    assert_eq!(read_f32s(ctx, ops.d.ptr, 4), [18.0, 24.0, 18.0, 24.0]);
    let lines = matmul_lines(&log);
    assert_eq!(lines.len(), 2, "{:?}", log_lines(&log));
    let stream = lines[0]
        .split("stream=")
        .nth(1)
        .and_then(|s| s.split(' ').next())
        .unwrap();
    assert_ne!(stream, "(nil)", "{lines:?}");
    assert!(
        lines[0]
            .contains("batch=2 epilogue=6 pointer_mode=0 algo=0xa160 workspace=33554432 bias=1"),
        "{lines:?}"
    );
    assert!(
        lines[1].contains(&format!("stream={stream} ")) && lines[1].contains("pointer_mode=1"),
        "{lines:?}"
    );
    assert!(
        log_lines(&log)
            .iter()
            .any(|l| l == "cublasLtMatmulAlgoGetHeuristic max_workspace=33554432"),
        "{:?}",
        log_lines(&log)
    );
}

#[test]
fn fake_cublaslt_bad_products_are_refused_before_the_library() {
    let test = "fake_cublaslt_bad_products_are_refused_before_the_library";
    let Some((b, log)) = fake_lt_backend(test) else {
        return;
    };
    let mut ctx = b.open(0, 0).unwrap();
    let ctx = ctx.as_mut();
    let handle = lt_handle(ctx);
    let ops = Operands::new(ctx, 1);
    let good = ops.matmul(handle, 1, epilogue::BIAS);
    let status = |ctx: &mut dyn DeviceContext, call: Call| lt(ctx, call).unwrap().status;
    // cuBLAS statuses: an unknown handle, a short leading dimension, an
    // unknown operation, an epilogue rcud does not compute, mixed scalars.
    let unknown = with(good.clone(), |c| {
        if let Call::Matmul { handle, .. } = c {
            *handle += 7;
        }
    });
    assert_eq!(status(ctx, unknown), 1);
    let short_ld = with(good.clone(), |c| {
        if let Call::Matmul { d, .. } = c {
            d.ld = 1;
        }
    });
    assert_eq!(status(ctx, short_ld), 7);
    let bad_op = with(good.clone(), |c| {
        if let Call::Matmul { transa, .. } = c {
            *transa = 9;
        }
    });
    assert_eq!(status(ctx, bad_op), 7);
    let bad_epilogue = with(good.clone(), |c| {
        if let Call::Matmul { epilogue, .. } = c {
            *epilogue = 128;
        }
    });
    assert_eq!(status(ctx, bad_epilogue), 15);
    let scalars = ctx.malloc(4).unwrap();
    let mixed = with(good.clone(), |c| {
        if let Call::Matmul { beta, .. } = c {
            *beta = Scalar::Device { ptr: scalars };
        }
    });
    assert_eq!(status(ctx, mixed), 7);
    // Ranges outside the client's memory: D's second batch, a missing
    // bias, a device scalar past the allocation.
    let faults = [
        with(good.clone(), |c| {
            if let Call::Matmul { batch, .. } = c {
                *batch = 2;
            }
        }),
        with(good.clone(), |c| {
            if let Call::Matmul { bias, .. } = c {
                *bias = 0;
            }
        }),
        with(good.clone(), |c| {
            if let Call::Matmul { alpha, beta, .. } = c {
                *alpha = Scalar::Device { ptr: scalars + 4 };
                *beta = Scalar::Device { ptr: scalars };
            }
        }),
    ];
    for call in faults {
        let f = lt(ctx, call).unwrap_err();
        assert_eq!(f.code, CudaError::ILLEGAL_ADDRESS, "{f}");
    }
    assert!(matmul_lines(&log).is_empty(), "{:?}", log_lines(&log));
    // The good product still runs.
    assert_eq!(status(ctx, good), 0);
    assert_eq!(matmul_lines(&log).len(), 1);
}

#[test]
fn fake_cublaslt_handles_are_destroyed_with_the_context() {
    let test = "fake_cublaslt_handles_are_destroyed_with_the_context";
    let Some((b, log)) = fake_lt_backend(test) else {
        return;
    };
    let mut ctx = b.open(0, 0).unwrap();
    let first = lt_handle(ctx.as_mut());
    lt_handle(ctx.as_mut());
    let reply = lt(ctx.as_mut(), Call::Destroy { handle: first }).unwrap();
    assert_eq!(reply.status, 0);
    let reply = lt(ctx.as_mut(), Call::Destroy { handle: first }).unwrap();
    assert_eq!(reply.status, 1, "a destroyed handle is unknown");
    drop(ctx);
    let destroyed = log_lines(&log)
        .iter()
        .filter(|l| l.as_str() == "cublasLtDestroy")
        .count();
    assert_eq!(destroyed, 2, "{:?}", log_lines(&log));
}

#[test]
fn fake_driver_without_cublaslt_says_so() {
    let Some(b) = fake_backend("fake_driver_without_cublaslt_says_so") else {
        return;
    };
    let b = b.with_blaslt_libraries(vec!["/nonexistent/libcublasLt.so.13".into()]);
    let mut ctx = b.open(0, 0).unwrap();
    let f = lt(ctx.as_mut(), Call::Create {}).unwrap_err();
    assert_eq!(f.code, CudaError::NOT_SUPPORTED);
    assert!(
        f.message
            .contains("NVIDIA's cuBLASLt (libcublasLt.so.13) was not found on the server"),
        "{f}"
    );
}
