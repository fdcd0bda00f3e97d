//! The InfiniBand arbitration table model (seeds 000, 002, 004); see ../shared/spec/qos.md.
#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod admission;
pub mod arbiter;
pub mod class;
pub mod manage;
pub mod plan;
pub mod service;
pub mod sets;
pub mod workload;

pub use manage::{Model, Placed};
pub use sets::{Handle, Insertion, Set, SetError, SetTable};
