//! Calls of NVIDIA's math libraries (cuBLAS, cuBLASLt, cuFFT, cuRAND,
//! cuSPARSE, cuSOLVER) on the wire.
//!
//! One library call is one [`req::MathCall`](crate::ops::req::MathCall):
//! the library's id ([`Library`]) and its call, encoded by that library's
//! `Call` enum below. Handles, plans, descriptors and generators live on the
//! server; the client names them by the ids the server gave. Scalars that
//! the application passed by host pointer travel by value; device pointers
//! travel as device addresses, which the server checks before use.
//!
//! The reply carries the library's own status (`cublasStatus_t`,
//! `cufftResult`, ...) and the call's output bytes, if any (a new handle's
//! id, a result the application asked for in host memory).

pub mod blas;
pub mod blaslt;
pub mod fft;
pub mod rand;
pub mod solver;
pub mod sparse;

/// Which library a [`req::MathCall`](crate::ops::req::MathCall) calls.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum Library {
    /// cuBLAS (`libcublas.so.13`).
    Blas = 1,
    /// cuBLASLt (`libcublasLt.so.13`).
    BlasLt = 2,
    /// cuFFT (`libcufft.so.12`).
    Fft = 3,
    /// cuRAND (`libcurand.so.10`).
    Rand = 4,
    /// cuSPARSE (`libcusparse.so.12`).
    Sparse = 5,
    /// cuSOLVER (`libcusolver.so.12`).
    Solver = 6,
}

impl Library {
    /// The library with wire id `id`.
    pub fn from_wire(id: u8) -> Option<Self> {
        Some(match id {
            1 => Self::Blas,
            2 => Self::BlasLt,
            3 => Self::Fft,
            4 => Self::Rand,
            5 => Self::Sparse,
            6 => Self::Solver,
            _ => return None,
        })
    }

    /// Its name, for logs and messages.
    pub fn name(self) -> &'static str {
        match self {
            Self::Blas => "cuBLAS",
            Self::BlasLt => "cuBLASLt",
            Self::Fft => "cuFFT",
            Self::Rand => "cuRAND",
            Self::Sparse => "cuSPARSE",
            Self::Solver => "cuSOLVER",
        }
    }
}
