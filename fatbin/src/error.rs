//! The one error type of this crate.

/// Everything that can go wrong while reading a fatbin, its wrapper, or a kernel's
/// parameter layout.
///
/// Offsets are byte offsets into the slice that was given to the failing function
/// (for [`crate::FatBinary::param_layout`]: of the fatbin entry the cubin or PTX
/// came from, plus an offset inside that payload where it helps).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum FatbinError {
    /// [`crate::containers_len`] was given a prefix too short to decide; call it
    /// again with at least this many bytes.
    #[error("need at least {0} bytes of the fatbin to tell its length")]
    NeedMore(usize),

    /// The input holds no container at all (empty, or only zero bytes).
    #[error("no fatbin container in {len} bytes of input")]
    Empty {
        /// Length of the input.
        len: usize,
    },

    /// A structure runs past the end of the input (or of its container).
    #[error(
        "truncated fatbin: {what} at offset {offset} needs {needed} bytes, only {available} there"
    )]
    Truncated {
        /// Which structure.
        what: &'static str,
        /// Where it starts.
        offset: usize,
        /// Bytes it needs from `offset`.
        needed: u64,
        /// Bytes that are there from `offset`.
        available: usize,
    },

    /// A fatbin container does not start with the magic number `0xBA55ED50`.
    #[error("bad fatbin container magic {found:#010x} at offset {offset} (expected 0xba55ed50)")]
    BadContainerMagic {
        /// Where the container was expected.
        offset: usize,
        /// The 32-bit little-endian value found there.
        found: u32,
    },

    /// `__fatBinC_Wrapper_t` does not start with the magic number `0x466243B1`.
    #[error("bad fatbin wrapper magic {found:#010x} (expected 0x466243b1)")]
    BadWrapperMagic {
        /// The value found.
        found: u32,
    },

    /// `__fatBinC_Wrapper_t` has a version other than 1 or 2.
    #[error("unsupported fatbin wrapper version {version} (expected 1 or 2)")]
    UnsupportedWrapperVersion {
        /// The value found.
        version: u32,
    },

    /// A header field holds a value this parser cannot accept.
    #[error("invalid {field} = {value:#x} in the {what} at offset {offset}: {reason}")]
    InvalidField {
        /// Which structure.
        what: &'static str,
        /// Which field of it.
        field: &'static str,
        /// Where the structure starts.
        offset: usize,
        /// The value found.
        value: u64,
        /// Why it is refused.
        reason: &'static str,
    },

    /// Bytes after the last container that are neither zero padding nor another
    /// container.
    #[error("unexpected bytes at offset {offset} after a fatbin container (neither a container magic nor zero padding)")]
    TrailingGarbage {
        /// Where they start.
        offset: usize,
    },

    /// A compressed payload could not be decompressed.
    #[error(
        "{algorithm} payload of the fatbin entry at offset {offset} does not decompress: {detail}"
    )]
    Decompress {
        /// `"LZ4"` or `"Zstandard"`.
        algorithm: &'static str,
        /// Offset of the entry header.
        offset: usize,
        /// The decompressor's message.
        detail: String,
    },

    /// A payload decompressed to a size other than the one in its entry header.
    #[error("{algorithm} payload of the fatbin entry at offset {offset} decompressed to {actual} bytes, its header says {expected}")]
    DecompressedSize {
        /// `"LZ4"` or `"Zstandard"`.
        algorithm: &'static str,
        /// Offset of the entry header.
        offset: usize,
        /// Decompressed size from the entry header.
        expected: u64,
        /// Bytes the payload decompressed to (or a lower bound when it kept going).
        actual: u64,
    },

    /// Decompressing the entries would produce more than the limit (see
    /// [`crate::FatBinary::parse_with_limit`] and [`crate::inflate_cap`]).
    #[error("fatbin entry at offset {offset} decompresses past the limit of {limit} bytes for one fatbin")]
    TooLarge {
        /// Offset of the entry header.
        offset: usize,
        /// The limit.
        limit: u64,
    },

    /// A concatenated entry (`--concat`) whose list of sub-entries is malformed.
    #[error("concatenated fatbin entry at offset {offset}: {detail}")]
    BadConcatenated {
        /// Offset of the entry header.
        offset: usize,
        /// What is wrong.
        detail: String,
    },

    /// A cubin (ELF) payload cannot be read as ELF.
    #[error("cubin of the fatbin entry at offset {offset} is not valid ELF: {detail}")]
    Elf {
        /// Offset of the entry header.
        offset: usize,
        /// The ELF reader's message.
        detail: String,
    },

    /// A `.nv.info.<kernel>` section of a cubin is malformed.
    #[error(
        "section .nv.info.{kernel} of the cubin in the fatbin entry at offset {offset}: {detail}"
    )]
    NvInfo {
        /// The kernel's mangled name.
        kernel: String,
        /// Offset of the entry header.
        offset: usize,
        /// What is wrong, with the offset inside the section.
        detail: String,
    },

    /// The PTX `.entry` signature of a kernel cannot be understood.
    #[error("PTX .entry {kernel} in the fatbin entry at offset {offset}: {detail}")]
    PtxSignature {
        /// The kernel's mangled name.
        kernel: String,
        /// Offset of the entry header.
        offset: usize,
        /// What is wrong.
        detail: String,
    },

    /// No cubin has a `.nv.info.<kernel>` section and no PTX has an `.entry` of
    /// that name.
    #[error("no parameter information for kernel {kernel}: no cubin has a .nv.info.{kernel} section and no PTX has an .entry {kernel}")]
    NoParamInfo {
        /// The kernel's mangled name.
        kernel: String,
    },
}
