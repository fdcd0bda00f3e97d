//! C ABI types of the CUDA runtime, laid out exactly as in CUDA 13's headers.
pub(crate) mod device_prop;
pub(crate) mod launch;
pub(crate) mod texture;
