//! `.nv.info` attributes of cubins, and kernel parameter layouts read from them.
//!
//! A cubin has a section `.nv.info.<mangled kernel name>` per kernel: a sequence
//! of attributes, each starting with a 4-byte head `{u8 format; u8 attribute;
//! u16 x}`. What `x` means depends on the format:
//!
//! | format | name | value |
//! |---|---|---|
//! | 0x01 | `EIFMT_NVAL` | none (`x` unused) |
//! | 0x02 | `EIFMT_BVAL` | a `u8`, the low byte of `x` |
//! | 0x03 | `EIFMT_HVAL` | a `u16`, `x` itself |
//! | 0x04 | `EIFMT_SVAL` | `x` bytes that follow the head |
//!
//! Parameters are described by one `EIATTR_KPARAM_INFO` (0x17) per parameter,
//! payload `{u32 index; u16 ordinal; u16 offset; u32 packed}` with the size in
//! bytes in `packed >> 18`, or, for kernels with large parameter lists, one
//! `EIATTR_KPARAM_INFO_V2` (0x45) per parameter, payload `{u32 index; u16 ordinal;
//! u16 offset; u16 size; u16 attributes}`. Entries may come in any order (nvcc
//! lists them last parameter first). `EIATTR_CBANK_PARAM_SIZE` (0x19, a `u16`)
//! gives the total.

use object::{Object, ObjectSection};

use crate::error::FatbinError;
use crate::le::{u16_at, u32_at};
use crate::{Param, ParamLayout};

/// Attribute format: no value.
pub const EIFMT_NVAL: u8 = 0x01;
/// Attribute format: a `u8` value.
pub const EIFMT_BVAL: u8 = 0x02;
/// Attribute format: a `u16` value.
pub const EIFMT_HVAL: u8 = 0x03;
/// Attribute format: a `u16` size and that many bytes.
pub const EIFMT_SVAL: u8 = 0x04;

/// `{u32 symbol index; u16 constant-bank offset; u16 size}` of the parameters.
pub const EIATTR_PARAM_CBANK: u8 = 0x0a;
/// One kernel parameter: `{u32 index; u16 ordinal; u16 offset; u32 packed}`,
/// size `packed >> 18`.
pub const EIATTR_KPARAM_INFO: u8 = 0x17;
/// Total bytes of the kernel's parameters (`u16`).
pub const EIATTR_CBANK_PARAM_SIZE: u8 = 0x19;
/// One kernel parameter, for large parameter lists: `{u32 index; u16 ordinal;
/// u16 offset; u16 size; u16 attributes}`.
pub const EIATTR_KPARAM_INFO_V2: u8 = 0x45;

/// The value of one attribute.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AttrValue<'a> {
    /// `EIFMT_NVAL`.
    None,
    /// `EIFMT_BVAL`.
    U8(u8),
    /// `EIFMT_HVAL`.
    U16(u16),
    /// `EIFMT_SVAL`.
    Bytes(&'a [u8]),
}

/// One attribute of a `.nv.info` section.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Attribute<'a> {
    /// Offset of its head in the section.
    pub offset: usize,
    /// `EIFMT_*`.
    pub format: u8,
    /// `EIATTR_*`.
    pub attribute: u8,
    /// Its value.
    pub value: AttrValue<'a>,
}

/// A malformed `.nv.info` section.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("at offset {offset}: {message}")]
pub struct NvInfoError {
    /// Offset in the section.
    pub offset: usize,
    /// What is wrong.
    pub message: String,
}

fn nv_err(offset: usize, message: impl Into<String>) -> NvInfoError {
    NvInfoError {
        offset,
        message: message.into(),
    }
}

/// Splits a `.nv.info` (or `.nv.info.<kernel>`) section into its attributes.
/// Zero bytes after the last attribute are allowed.
pub fn parse_attributes(section: &[u8]) -> Result<Vec<Attribute<'_>>, NvInfoError> {
    let mut out = Vec::new();
    let mut at = 0usize;
    while at < section.len() {
        let rest = &section[at..];
        if rest.len() < 4 {
            if rest.iter().all(|&b| b == 0) {
                break;
            }
            return Err(nv_err(
                at,
                format!("{} bytes left, too few for an attribute head", rest.len()),
            ));
        }
        let (format, attribute) = (rest[0], rest[1]);
        let x = u16_at(rest, 2).unwrap_or_default();
        let (value, len) = match format {
            EIFMT_NVAL => (AttrValue::None, 4),
            EIFMT_BVAL => (AttrValue::U8(x.to_le_bytes()[0]), 4),
            EIFMT_HVAL => (AttrValue::U16(x), 4),
            EIFMT_SVAL => {
                let size = usize::from(x);
                let Some(data) = rest.get(4..4 + size) else {
                    return Err(nv_err(
                        at,
                        format!(
                            "attribute {attribute:#04x} has {size} bytes of value, only {} left",
                            rest.len() - 4
                        ),
                    ));
                };
                (AttrValue::Bytes(data), 4 + size)
            }
            0 if rest.iter().all(|&b| b == 0) => break,
            other => {
                return Err(nv_err(
                    at,
                    format!("unknown attribute format {other:#04x} (attribute {attribute:#04x})"),
                ))
            }
        };
        out.push(Attribute {
            offset: at,
            format,
            attribute,
            value,
        });
        at += len;
    }
    Ok(out)
}

/// The parameter layout that the attributes of a `.nv.info.<kernel>` section
/// describe. A kernel without parameters has no `EIATTR_KPARAM_INFO` and gets an
/// empty layout.
pub fn layout_from_attributes(attrs: &[Attribute<'_>]) -> Result<ParamLayout, NvInfoError> {
    // (ordinal, offset, size, attribute offset)
    let mut found: Vec<(u16, usize, usize, usize)> = Vec::new();
    let mut cbank_param_size: Option<usize> = None;
    let mut param_cbank_size: Option<usize> = None;
    for a in attrs {
        match (a.attribute, a.value) {
            (EIATTR_KPARAM_INFO | EIATTR_KPARAM_INFO_V2, AttrValue::Bytes(data)) => {
                let (Some(ordinal), Some(offset), Some(last)) =
                    (u16_at(data, 4), u16_at(data, 6), u32_at(data, 8))
                else {
                    return Err(nv_err(
                        a.offset,
                        format!(
                            "EIATTR_KPARAM_INFO{} has {} bytes, needs 12",
                            if a.attribute == EIATTR_KPARAM_INFO_V2 {
                                "_V2"
                            } else {
                                ""
                            },
                            data.len()
                        ),
                    ));
                };
                let size = if a.attribute == EIATTR_KPARAM_INFO {
                    last >> 18
                } else {
                    last & 0xffff
                };
                found.push((ordinal, usize::from(offset), size as usize, a.offset));
            }
            (EIATTR_KPARAM_INFO | EIATTR_KPARAM_INFO_V2, _) => {
                return Err(nv_err(
                    a.offset,
                    format!(
                        "attribute {:#04x} (kernel parameter) has format {:#04x}, expected 0x04",
                        a.attribute, a.format
                    ),
                ))
            }
            (EIATTR_CBANK_PARAM_SIZE, AttrValue::U16(v)) => cbank_param_size = Some(v.into()),
            (EIATTR_PARAM_CBANK, AttrValue::Bytes(data)) => {
                param_cbank_size = u16_at(data, 6).map(usize::from);
            }
            _ => {}
        }
    }
    found.sort_by_key(|&(ordinal, ..)| ordinal);
    let mut params = Vec::with_capacity(found.len());
    for (i, &(ordinal, offset, size, attr_offset)) in found.iter().enumerate() {
        if usize::from(ordinal) != i {
            return Err(nv_err(
                attr_offset,
                format!(
                    "parameter ordinals are not 0..{}: ordinal {ordinal} {}",
                    found.len(),
                    if usize::from(ordinal) < i {
                        "appears twice"
                    } else {
                        "follows a gap"
                    }
                ),
            ));
        }
        params.push(Param { offset, size });
    }
    let end = params.iter().map(|p| p.offset + p.size).max().unwrap_or(0);
    let total_size = cbank_param_size.or(param_cbank_size).unwrap_or(end);
    if total_size < end {
        return Err(nv_err(
            0,
            format!("parameters end at byte {end}, past the total parameter size {total_size}"),
        ));
    }
    Ok(ParamLayout { params, total_size })
}

/// The parameter layout of kernel `kernel` (mangled name) from the
/// `.nv.info.<kernel>` section of `cubin`, or `None` when the cubin has no such
/// section.
pub fn cubin_param_layout(cubin: &[u8], kernel: &str) -> Result<Option<ParamLayout>, FatbinError> {
    cubin_param_layout_at(cubin, kernel, 0)
}

/// [`cubin_param_layout`], with `entry_offset` (of the fatbin entry) for errors.
pub(crate) fn cubin_param_layout_at(
    cubin: &[u8],
    kernel: &str,
    entry_offset: usize,
) -> Result<Option<ParamLayout>, FatbinError> {
    let elf_err = |e: object::Error| FatbinError::Elf {
        offset: entry_offset,
        detail: e.to_string(),
    };
    let file = object::File::parse(cubin).map_err(elf_err)?;
    let name = format!(".nv.info.{kernel}");
    let Some(section) = file
        .sections()
        .find(|s| s.name_bytes().is_ok_and(|n| n == name.as_bytes()))
    else {
        return Ok(None);
    };
    let data = section.data().map_err(elf_err)?;
    let nv_info = |e: NvInfoError| FatbinError::NvInfo {
        kernel: kernel.to_owned(),
        offset: entry_offset,
        detail: e.to_string(),
    };
    let attrs = parse_attributes(data).map_err(nv_info)?;
    layout_from_attributes(&attrs).map(Some).map_err(nv_info)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kparam(ordinal: u16, offset: u16, size: u32) -> Vec<u8> {
        let mut v = vec![EIFMT_SVAL, EIATTR_KPARAM_INFO, 12, 0, 0, 0, 0, 0];
        v.extend_from_slice(&ordinal.to_le_bytes());
        v.extend_from_slice(&offset.to_le_bytes());
        v.extend_from_slice(&((size << 18) | 0x1f000).to_le_bytes());
        v
    }

    #[test]
    fn walks_all_formats() {
        let mut s = vec![
            EIFMT_NVAL,
            0x35,
            0,
            0, // no value
            EIFMT_BVAL,
            0x4c,
            1,
            0, // u8
            EIFMT_HVAL,
            EIATTR_CBANK_PARAM_SIZE,
            12,
            0, // u16
        ];
        s.extend(kparam(1, 8, 4));
        s.extend(kparam(0, 0, 8));
        s.extend([EIFMT_SVAL, 0x1c, 2, 0, 0xaa, 0xbb]); // odd-sized value
        s.extend([EIFMT_HVAL, 0x5f, 0, 0]);
        let attrs = parse_attributes(&s).unwrap();
        assert_eq!(attrs.len(), 7);
        assert_eq!(attrs[0].value, AttrValue::None);
        assert_eq!(attrs[1].value, AttrValue::U8(1));
        assert_eq!(attrs[2].value, AttrValue::U16(12));
        assert_eq!(attrs[5].value, AttrValue::Bytes(&[0xaa, 0xbb]));
        assert_eq!(attrs[6].offset, s.len() - 4);
        let layout = layout_from_attributes(&attrs).unwrap();
        assert_eq!(
            layout.params,
            [Param { offset: 0, size: 8 }, Param { offset: 8, size: 4 }]
        );
        assert_eq!(layout.total_size, 12);
    }

    #[test]
    fn rejects_bad_sections() {
        assert!(parse_attributes(&[EIFMT_SVAL, 0x17, 12, 0, 1, 2]).is_err());
        assert!(parse_attributes(&[7, 0x17, 0, 0]).is_err());
        assert!(parse_attributes(&[1, 2]).is_err());
        assert_eq!(parse_attributes(&[0, 0, 0, 0, 0]).unwrap(), []);
        let mut dup = kparam(0, 0, 8);
        dup.extend(kparam(0, 8, 8));
        let err = layout_from_attributes(&parse_attributes(&dup).unwrap()).unwrap_err();
        assert!(err.message.contains("twice"), "{err}");
        let gap = kparam(1, 0, 8);
        let err = layout_from_attributes(&parse_attributes(&gap).unwrap()).unwrap_err();
        assert!(err.message.contains("gap"), "{err}");
        let mut small = kparam(0, 0, 8);
        small.extend([EIFMT_HVAL, EIATTR_CBANK_PARAM_SIZE, 4, 0]);
        let err = layout_from_attributes(&parse_attributes(&small).unwrap()).unwrap_err();
        assert!(err.message.contains("total"), "{err}");
    }
}
