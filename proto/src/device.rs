//! Device properties and attributes as they travel on the wire.

/// A `cudaDeviceAttr` value.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct DeviceAttr(pub i32);

crate::wire_struct! {
    /// PLACEHOLDER: every field of CUDA 13's `cudaDeviceProp` replaces this.
    #[derive(Debug, Clone, PartialEq, Eq, Default)]
    pub struct DeviceProps {
        /// Device name.
        pub name: String,
        /// Bytes of global memory.
        pub total_global_mem: u64,
        /// Compute capability major.
        pub major: i32,
        /// Compute capability minor.
        pub minor: i32,
    }
}
