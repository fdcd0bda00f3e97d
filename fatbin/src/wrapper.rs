//! `__fatBinC_Wrapper_t`: what `__cudaRegisterFatBinary` receives.

use crate::error::FatbinError;

/// Magic number of `__fatBinC_Wrapper_t`.
pub const WRAPPER_MAGIC: u32 = 0x4662_43B1;
/// Bytes of `__fatBinC_Wrapper_t` on 64-bit hosts.
pub const WRAPPER_LEN: usize = 24;

/// `__fatBinC_Wrapper_t { int magic; int version; const unsigned long long* data;
/// void* filename_or_fatbins; }`, as read from the application's memory (in section
/// `.nvFatBinSegment`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Wrapper {
    /// [`WRAPPER_MAGIC`].
    pub magic: u32,
    /// 1, or 2 for binaries whose device code went through the device linker.
    pub version: u32,
    /// Address of the first fatbin container (in `.nv_fatbin`); pass the bytes
    /// there to [`crate::containers_len`] to learn how many to copy.
    pub data: u64,
    /// Version 1: a file name, usually null. Version 2: address of the list of
    /// prelinked fatbins (relocatable device code).
    pub filename_or_fatbins: u64,
}

/// Reads a `__fatBinC_Wrapper_t` from its 24 bytes (little-endian, 64-bit
/// pointers). The caller reads the application's memory; this only checks and
/// splits the fields.
pub fn parse_wrapper(bytes: &[u8; WRAPPER_LEN]) -> Result<Wrapper, FatbinError> {
    let word =
        |at: usize| u32::from_le_bytes([bytes[at], bytes[at + 1], bytes[at + 2], bytes[at + 3]]);
    let quad = |at: usize| u64::from(word(at)) | (u64::from(word(at + 4)) << 32);
    let magic = word(0);
    if magic != WRAPPER_MAGIC {
        return Err(FatbinError::BadWrapperMagic { found: magic });
    }
    let version = word(4);
    if version != 1 && version != 2 {
        return Err(FatbinError::UnsupportedWrapperVersion { version });
    }
    Ok(Wrapper {
        magic,
        version,
        data: quad(8),
        filename_or_fatbins: quad(16),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_and_errors() {
        let mut b = [0u8; WRAPPER_LEN];
        b[..4].copy_from_slice(&WRAPPER_MAGIC.to_le_bytes());
        b[4] = 1;
        b[8..16].copy_from_slice(&0x1122_3344_5566_7788u64.to_le_bytes());
        b[16..].copy_from_slice(&0xdead_beefu64.to_le_bytes());
        let w = parse_wrapper(&b).unwrap();
        assert_eq!(
            w,
            Wrapper {
                magic: WRAPPER_MAGIC,
                version: 1,
                data: 0x1122_3344_5566_7788,
                filename_or_fatbins: 0xdead_beef
            }
        );
        b[4] = 3;
        let err = parse_wrapper(&b).unwrap_err();
        assert_eq!(err, FatbinError::UnsupportedWrapperVersion { version: 3 });
        assert!(err.to_string().contains("version 3"));
        b[0] = 0;
        let err = parse_wrapper(&b).unwrap_err();
        assert!(matches!(
            err,
            FatbinError::BadWrapperMagic { found: 0x4662_4300 }
        ));
        assert!(err.to_string().contains("0x46624300"), "{err}");
    }
}
