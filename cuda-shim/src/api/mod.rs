//! The hand-written C ABI. `build.rs` scans these files: a `pub extern "C" fn`
//! defined here is not generated as a stub.
// Exported C functions are `pub` by nature; their names follow CUDA's.
#![allow(non_snake_case, unreachable_pub)]

mod device;
mod error;
mod launch;
mod memory;
mod pitched;
mod registration;
mod stream;
mod symbols;
