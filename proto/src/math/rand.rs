//! cuRAND calls on the wire.

crate::wire_enum! {
    /// A cuRAND call.
    #[derive(Debug, Clone, PartialEq)]
    pub enum Call {
        /// Placeholder until the library's calls are declared; never sent.
        0 Unused {},
    }
}
