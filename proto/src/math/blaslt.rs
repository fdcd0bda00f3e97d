//! cuBLASLt calls on the wire.
//!
//! The handle lives on the server; matmul descriptors, matrix layouts and
//! preferences stay with the client, which resolves them into one
//! [`Call::Matmul`] per `cublasLtMatmul`, queued on the call's stream.

use super::blas::{Operand, Scalar};

/// `cublasLtEpilogue_t` values rcud computes.
pub mod epilogue {
    /// No epilogue.
    pub const DEFAULT: i32 = 1;
    /// `max(x, 0)`.
    pub const RELU: i32 = 2;
    /// `x + bias` (the bias vector has one element per row of D).
    pub const BIAS: i32 = 4;
    /// `max(x + bias, 0)`.
    pub const RELU_BIAS: i32 = 6;
    /// GELU (tanh approximation).
    pub const GELU: i32 = 32;
    /// GELU of `x + bias`.
    pub const GELU_BIAS: i32 = 36;
}

crate::wire_enum! {
    /// A cuBLASLt call.
    // Decoded once and consumed at once; the size of the GEMM variants
    // costs nothing there.
    #[allow(clippy::large_enum_variant)]
    #[derive(Debug, Clone, PartialEq)]
    pub enum Call {
        /// `cublasLtCreate`: answers the handle's id (`u64`).
        1 Create {},
        /// `cublasLtDestroy`.
        2 Destroy { handle: u64 },
        /// `D = epilogue(alpha op(A) op(B) + beta C)` for `batch` strided
        /// products. `types` are the `cudaDataType`s of A, B, C (= D) and of
        /// the scale type (alpha, beta, the computation). `bias` is the
        /// device address of the bias vector (of D's type), 0 without one;
        /// `bias_stride` its element distance between batches.
        3 Matmul {
            handle: u64,
            types: [u8; 4],
            transa: i32,
            transb: i32,
            m: i64,
            n: i64,
            k: i64,
            alpha: Scalar,
            a: Operand,
            b: Operand,
            beta: Scalar,
            c: Operand,
            d: Operand,
            batch: i64,
            epilogue: i32,
            bias: u64,
            bias_stride: i64,
        },
    }
}
