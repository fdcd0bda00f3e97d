//! PTX interpreter and compiling-engine throughput, run from this crate:
//! the same bench as `cargo bench -p rcud-emu --bench kernels`, whose file
//! is included here so that the two stay one.
//!
//!     cargo bench -p rcud-bench --bench interp

include!("../../emu/benches/kernels.rs");
