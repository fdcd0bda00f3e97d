//! Fatbins: the device code that nvcc embeds in CUDA programs.
//!
//! At start-up a CUDA program calls `__cudaRegisterFatBinary(wrapper)` with a
//! `__fatBinC_Wrapper_t` ([`parse_wrapper`]) whose `data` points to one or more
//! fatbin containers. [`containers_len`] tells how many bytes those are from a
//! prefix; [`FatBinary::parse`] splits them into PTX and cubin [`Entry`]s
//! (decompressing LZ4 and Zstandard payloads); [`FatBinary::ptx_for`] and
//! [`FatBinary::cubin_for`] pick the code for a device; and
//! [`FatBinary::param_layout`] gives the offsets and sizes of a kernel's
//! parameters, which a launch needs to pack its arguments. [`content_hash`] names a
//! fatbin image for caches.
//!
//! Layouts are in `shared/spec/fatbin.md` and in the module docs of
//! [`container`], [`nvinfo`] and [`ptx`]. Nothing here trusts its input: every
//! read is bounds-checked, and a truncated or hostile fatbin gives a
//! [`FatbinError`], never a panic.
#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod container;
mod decompress;
mod error;
pub mod image;
mod le;
pub mod nvinfo;
pub mod ptx;
pub mod ptx_link;
mod wrapper;

pub use container::{ContainerHeader, CONTAINER_MAGIC};
pub use decompress::{
    inflate_cap, Compression, DecompressLimits, INFLATE_RATIO, MAX_DECOMPRESSED, MIN_INFLATE_CAP,
};
pub use error::FatbinError;
pub use wrapper::{parse_wrapper, Wrapper, WRAPPER_LEN, WRAPPER_MAGIC};

/// Bits of the `flags` field of an entry header.
pub mod flags {
    /// Code for a 64-bit host.
    pub const ADDRESS_64: u64 = 0x1;
    /// Compiled with debug information (`-G`).
    pub const DEBUG: u64 = 0x2;
    /// Code for a Linux host.
    pub const LINUX: u64 = 0x10;
    /// Payload is an LZ4 block.
    pub const LZ4: u64 = 0x2000;
    /// Payload is a Zstandard frame.
    pub const ZSTD: u64 = 0x8000;
    /// Architecture-specific code (`sm_90a`, `compute_100a`): runs only on that
    /// exact architecture.
    pub const ARCH_SPECIFIC: u64 = 0x10_0000;
    /// Family-specific code (`sm_100f`): runs on that architecture and later ones
    /// of the same major version.
    pub const FAMILY_SPECIFIC: u64 = 0x20_0000;
}

/// What an entry holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum EntryKind {
    /// PTX text (`compute_XY`).
    Ptx,
    /// A cubin: ELF with machine code (`sm_XY`).
    Cubin,
}

/// Whether code is for an architecture family, one architecture, or neither.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, PartialOrd, Ord)]
pub enum ArchVariant {
    /// `sm_XY` / `compute_XY`.
    #[default]
    Generic,
    /// `sm_XYf` / `compute_XYf` ([`flags::FAMILY_SPECIFIC`]).
    FamilySpecific,
    /// `sm_XYa` / `compute_XYa` ([`flags::ARCH_SPECIFIC`]).
    ArchSpecific,
}

/// One PTX or cubin entry of a fatbin.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    /// PTX or cubin.
    pub kind: EntryKind,
    /// Compute capability as a number: 80 for `sm_80` / `compute_80`.
    pub arch: u32,
    /// The payload, decompressed; for PTX without its trailing NULs.
    pub payload: Vec<u8>,
    /// Generic, family- or architecture-specific.
    pub variant: ArchVariant,
    /// `(major, minor)`: the PTX ISA version of PTX (9.5 with CUDA 13.5), the
    /// format version of a cubin.
    pub version: (u16, u16),
    /// The header's flags ([`flags`]).
    pub flags: u64,
    /// How the payload was stored.
    pub compression: Compression,
    /// Offset of the entry header in the bytes given to [`FatBinary::parse`]
    /// (for a sub-entry of a concatenated entry: that entry's).
    pub offset: usize,
    /// Whether it came out of a concatenated entry (`nvcc --concat`).
    pub concatenated: bool,
}

impl Entry {
    /// The PTX text, when this is a PTX entry and valid UTF-8.
    pub fn ptx(&self) -> Option<&str> {
        match self.kind {
            EntryKind::Ptx => std::str::from_utf8(&self.payload).ok(),
            EntryKind::Cubin => None,
        }
    }

    /// Whether the code can run on a device of compute capability `device_arch`
    /// (e.g. 86): PTX of the same or an older architecture; a cubin of the same
    /// major version and the same or an older minor one. Architecture-specific
    /// code only runs on its own architecture, family-specific code only within
    /// its major version.
    pub fn compatible_with(&self, device_arch: u32) -> bool {
        let same_major = self.arch / 10 == device_arch / 10;
        self.arch <= device_arch
            && match self.variant {
                ArchVariant::ArchSpecific => self.arch == device_arch,
                ArchVariant::FamilySpecific => same_major,
                ArchVariant::Generic => self.kind == EntryKind::Ptx || same_major,
            }
    }

    /// Whether it was compiled with debug information.
    pub fn is_debug(&self) -> bool {
        self.flags & flags::DEBUG != 0
    }
}

/// An entry of a kind this crate does not read (LTO-IR, kind 8, for example).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SkippedEntry {
    /// Offset of its header.
    pub offset: usize,
    /// Its kind field.
    pub kind: u16,
    /// Its arch field.
    pub arch: u32,
    /// Its flags.
    pub flags: u64,
}

/// Where one kernel parameter goes in the parameter buffer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Param {
    /// Offset in bytes from the start of the parameter buffer.
    pub offset: usize,
    /// Size in bytes.
    pub size: usize,
}

/// The parameters of a kernel, in declaration order.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
pub struct ParamLayout {
    /// One per parameter.
    pub params: Vec<Param>,
    /// Bytes of the whole parameter buffer.
    pub total_size: usize,
}

/// A parsed fatbin: the entries of one or more containers.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct FatBinary {
    /// PTX and cubin entries, in the order of the input.
    pub entries: Vec<Entry>,
    /// Entries of other kinds, left out of `entries`.
    pub skipped: Vec<SkippedEntry>,
}

/// Size in bytes of the containers that start at the beginning of `bytes` (one or
/// several back to back); lets a caller who only has a pointer to the first
/// container find out how many bytes to copy.
///
/// `bytes` may be a prefix: the result is `Err(FatbinError::NeedMore(n))` when at
/// least `n` bytes are needed to decide. Containers after the first are counted
/// only when `bytes` shows their magic (zero padding before them is skipped and
/// not counted at the end), so a caller that reads exactly what `NeedMore` asks
/// for, starting with 16 bytes, gets the length of the first container alone and
/// never reads past it.
pub fn containers_len(bytes: &[u8]) -> Result<usize, FatbinError> {
    container::containers_len(bytes)
}

/// Content hash of a fatbin image, to name it in caches: BLAKE3 of the bytes.
pub fn content_hash(bytes: &[u8]) -> [u8; 32] {
    *blake3::hash(bytes).as_bytes()
}

impl FatBinary {
    /// Parses one or more containers back to back: exactly `bytes`, with zero
    /// padding allowed between and after containers. Decompression may produce
    /// at most [`inflate_cap`]`(bytes.len())` bytes (at least 64 MiB), and at
    /// most [`MAX_DECOMPRESSED`].
    pub fn parse(bytes: &[u8]) -> Result<FatBinary, FatbinError> {
        container::parse_all(bytes, &DecompressLimits::default())
    }

    /// [`FatBinary::parse`], failing with [`FatbinError::TooLarge`] when the
    /// decompressed payloads would add up to more than `max_decompressed` bytes
    /// ([`FatBinary::parse`] allows [`MAX_DECOMPRESSED`]) or more than
    /// [`inflate_cap`]`(bytes.len())`. Compression ratios of thousands to one are
    /// legitimate (initialized device arrays), so the ratio is bounded only above
    /// [`MIN_INFLATE_CAP`] (64 MiB), where it stops compression bombs; a server
    /// parsing fatbins from untrusted clients bounds the total as well.
    pub fn parse_with_limit(bytes: &[u8], max_decompressed: u64) -> Result<FatBinary, FatbinError> {
        let limits = DecompressLimits {
            max_total: max_decompressed,
            ..DecompressLimits::default()
        };
        container::parse_all(bytes, &limits)
    }

    /// [`FatBinary::parse`] with explicit bounds on decompression: at most
    /// [`DecompressLimits::limit_for`]`(bytes.len())` bytes, else
    /// [`FatbinError::TooLarge`]. A declared decompressed size is never
    /// trusted beyond that limit, and decoding stops as soon as it is passed.
    pub fn parse_with_limits(
        bytes: &[u8],
        limits: &DecompressLimits,
    ) -> Result<FatBinary, FatbinError> {
        container::parse_all(bytes, limits)
    }

    /// The PTX to JIT or interpret for a device of compute capability `arch`
    /// (e.g. 80): that of the highest architecture not above `arch`, or `None`.
    /// Architecture-specific PTX (`compute_90a`) counts only for its own
    /// architecture, family-specific PTX only within its major version; PTX that
    /// is not valid UTF-8 is passed over.
    pub fn ptx_for(&self, arch: u32) -> Option<&str> {
        self.entries
            .iter()
            .filter(|e| e.kind == EntryKind::Ptx && e.compatible_with(arch))
            .filter_map(|e| e.ptx().map(|text| (e, text)))
            // `max_by_key` keeps the last of equals: reversed, the first.
            .rev()
            .max_by_key(|(e, _)| (e.arch, e.variant))
            .map(|(_, text)| text)
    }

    /// The cubin for exactly `arch` (`sm_XY`), if any.
    pub fn cubin_for(&self, arch: u32) -> Option<&[u8]> {
        self.entries
            .iter()
            .find(|e| e.kind == EntryKind::Cubin && e.arch == arch)
            .map(|e| e.payload.as_slice())
    }

    /// Names of the kernels of every PTX entry, each once, in order (a
    /// cubin-only image gives none: its kernels are found by name).
    pub fn kernel_names(&self) -> Vec<String> {
        let mut names: Vec<String> = Vec::new();
        for e in self.entries.iter().filter(|e| e.kind == EntryKind::Ptx) {
            for n in e.ptx().map(ptx::entry_names).unwrap_or_default() {
                if !names.contains(&n) {
                    names.push(n);
                }
            }
        }
        names
    }

    /// Parameter layout of kernel `mangled_name`: from `EIATTR_KPARAM_INFO` in the
    /// `.nv.info.<name>` section of the first cubin that has one, else from the
    /// `.entry` signature of the first PTX (highest architecture first) that has
    /// it, else [`FatbinError::NoParamInfo`]. A cubin or PTX that cannot be read
    /// is passed over for the next one; its error is returned when no other
    /// source has the kernel.
    pub fn param_layout(&self, mangled_name: &str) -> Result<ParamLayout, FatbinError> {
        let mut first_error = None;
        for e in self.entries.iter().filter(|e| e.kind == EntryKind::Cubin) {
            match nvinfo::cubin_param_layout_at(&e.payload, mangled_name, e.offset) {
                Ok(Some(layout)) => return Ok(layout),
                Ok(None) => {}
                Err(err) => {
                    first_error.get_or_insert(err);
                }
            }
        }
        let mut ptx: Vec<&Entry> = self
            .entries
            .iter()
            .filter(|e| e.kind == EntryKind::Ptx)
            .collect();
        ptx.sort_by_key(|e| std::cmp::Reverse(e.arch));
        for e in ptx {
            let Some(text) = e.ptx() else { continue };
            match ptx::entry_param_layout(text, mangled_name) {
                Ok(Some(layout)) => return Ok(layout),
                Ok(None) => {}
                Err(err) => {
                    first_error.get_or_insert(FatbinError::PtxSignature {
                        kernel: mangled_name.to_owned(),
                        offset: e.offset,
                        detail: err.0,
                    });
                }
            }
        }
        if let Some(err) = first_error {
            return Err(err);
        }
        Err(FatbinError::NoParamInfo {
            kernel: mangled_name.to_owned(),
        })
    }
}
