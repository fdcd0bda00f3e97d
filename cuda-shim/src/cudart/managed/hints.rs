//! What programs tell CUDA about managed memory and may ask back:
//! `cudaMemAdvise`, `cudaMemPrefetchAsync` and `cudaMemRangeGetAttribute(s)`.

use std::ffi::c_void;

use rcud_proto::CudaError;

use super::{rt, table};

/// A place managed memory can be advised to or prefetched to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Location {
    Host,
    Device(usize),
}

/// Advice and prefetch history of a page, for `cudaMemRangeGetAttribute`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(super) struct Hints {
    read_mostly: bool,
    preferred: Option<Location>,
    last_prefetch: Option<Location>,
    /// Devices advised with `SetAccessedBy`, one bit each; bit 63 the host.
    accessed_by: u64,
}

const HOST_BIT: u64 = 1 << 63;

fn location_bit(location: Location) -> u64 {
    match location {
        Location::Host => HOST_BIT,
        Location::Device(d) => 1 << d.min(62),
    }
}

/// `cudaMemAdvise` advice values.
const ADVISE_SET_READ_MOSTLY: i32 = 1;
const ADVISE_UNSET_READ_MOSTLY: i32 = 2;
const ADVISE_SET_PREFERRED_LOCATION: i32 = 3;
const ADVISE_UNSET_PREFERRED_LOCATION: i32 = 4;
const ADVISE_SET_ACCESSED_BY: i32 = 5;
const ADVISE_UNSET_ACCESSED_BY: i32 = 6;

/// `cudaMemLocationType` values.
const LOCATION_TYPE_INVALID: i32 = 0;
const LOCATION_TYPE_DEVICE: i32 = 1;
const LOCATION_TYPE_HOST: i32 = 2;
const LOCATION_TYPE_HOST_NUMA: i32 = 3;
const LOCATION_TYPE_HOST_NUMA_CURRENT: i32 = 4;

/// A `cudaMemLocation`/`CUmemLocation`: `None` for the invalid (none)
/// type; a device that does not exist is `cudaErrorInvalidDevice`.
pub(crate) fn location(kind: i32, id: i32) -> Result<Option<Location>, CudaError> {
    match kind {
        LOCATION_TYPE_INVALID => Ok(None),
        LOCATION_TYPE_DEVICE => {
            let count = rt().device_count()?;
            match usize::try_from(id) {
                Ok(d) if d < count => Ok(Some(Location::Device(d))),
                _ => Err(CudaError::INVALID_DEVICE),
            }
        }
        LOCATION_TYPE_HOST | LOCATION_TYPE_HOST_NUMA | LOCATION_TYPE_HOST_NUMA_CURRENT => {
            Ok(Some(Location::Host))
        }
        _ => Err(CudaError::INVALID_VALUE),
    }
}

/// The location of the legacy device-ordinal forms (`cudaCpuDeviceId` is
/// the host), as a `(type, id)` pair.
pub(crate) fn legacy_location(device: i32) -> (i32, i32) {
    match device {
        CPU_DEVICE => (LOCATION_TYPE_HOST, 0),
        d => (LOCATION_TYPE_DEVICE, d),
    }
}

/// `cudaMemAdvise` on `[ptr, ptr + count)`, one managed allocation, with
/// the location `(kind, id)` where the advice takes one. The advice is
/// recorded (range queries report it); coherence does not depend on it,
/// as the mirrors move only what was touched anyway.
pub(crate) fn advise(
    ptr: u64,
    count: u64,
    advice: i32,
    kind: i32,
    id: i32,
) -> Result<(), CudaError> {
    if !(ADVISE_SET_READ_MOSTLY..=ADVISE_UNSET_ACCESSED_BY).contains(&advice) || count == 0 {
        return Err(CudaError::INVALID_VALUE);
    }
    let location = match advice {
        ADVISE_SET_PREFERRED_LOCATION | ADVISE_SET_ACCESSED_BY | ADVISE_UNSET_ACCESSED_BY => {
            Some(location(kind, id)?.ok_or(CudaError::INVALID_VALUE)?)
        }
        _ => None,
    };
    let mut t = table();
    let region = t.range(ptr, count).ok_or(CudaError::INVALID_VALUE)?;
    let pages = region.pages_of(ptr, count);
    for hints in &mut region.hints[pages] {
        match (advice, location) {
            (ADVISE_SET_READ_MOSTLY, _) => hints.read_mostly = true,
            (ADVISE_UNSET_READ_MOSTLY, _) => hints.read_mostly = false,
            (ADVISE_SET_PREFERRED_LOCATION, l) => hints.preferred = l,
            (ADVISE_UNSET_PREFERRED_LOCATION, _) => hints.preferred = None,
            (ADVISE_SET_ACCESSED_BY, Some(l)) => hints.accessed_by |= location_bit(l),
            (ADVISE_UNSET_ACCESSED_BY, Some(l)) => hints.accessed_by &= !location_bit(l),
            _ => {}
        }
    }
    Ok(())
}

/// `cudaMemPrefetchAsync` of `[ptr, ptr + count)`: to a device, the host's
/// writes are sent now; to the host, the device's pages are fetched now,
/// after all work issued to the device, which CUDA's stream order allows.
pub(crate) fn prefetch(ptr: u64, count: u64, to: Location) -> Result<(), CudaError> {
    if count == 0 {
        return Err(CudaError::INVALID_VALUE);
    }
    let mut t = table();
    let region = t.range(ptr, count).ok_or(CudaError::INVALID_VALUE)?;
    let pages = region.pages_of(ptr, count);
    match to {
        Location::Device(_) => region.send_dirty(pages.clone()),
        Location::Host => region.fetch(pages.clone())?,
    }
    for hints in &mut region.hints[pages] {
        hints.last_prefetch = Some(to);
    }
    Ok(())
}

/// A `cudaMemRangeAttribute` of one managed allocation's range.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum RangeAttribute {
    ReadMostly,
    PreferredLocation,
    AccessedBy,
    LastPrefetchLocation,
    PreferredLocationType,
    PreferredLocationId,
    LastPrefetchLocationType,
    LastPrefetchLocationId,
}

impl RangeAttribute {
    fn from_raw(raw: i32) -> Result<Self, CudaError> {
        Ok(match raw {
            1 => Self::ReadMostly,
            2 => Self::PreferredLocation,
            3 => Self::AccessedBy,
            4 => Self::LastPrefetchLocation,
            5 => Self::PreferredLocationType,
            6 => Self::PreferredLocationId,
            7 => Self::LastPrefetchLocationType,
            8 => Self::LastPrefetchLocationId,
            _ => return Err(CudaError::INVALID_VALUE),
        })
    }
}

/// `cudaInvalidDeviceId` and `cudaCpuDeviceId`.
const INVALID_DEVICE: i32 = -2;
const CPU_DEVICE: i32 = -1;

/// The value of `attribute` over `[ptr, ptr + count)`, as 32-bit words:
/// one, or for `AccessedBy` one per `words` (devices, then -2s).
fn range_attribute(
    attribute: RangeAttribute,
    ptr: u64,
    count: u64,
    words: usize,
) -> Result<Vec<i32>, CudaError> {
    if count == 0 || words == 0 || (attribute != RangeAttribute::AccessedBy && words != 1) {
        return Err(CudaError::INVALID_VALUE);
    }
    let mut t = table();
    let region = t.range(ptr, count).ok_or(CudaError::INVALID_VALUE)?;
    let hints = &region.hints[region.pages_of(ptr, count)];
    // A location all pages agree on.
    let common = |of: fn(&Hints) -> Option<Location>| {
        let first = hints.first().and_then(of);
        first.filter(|_| hints.iter().all(|h| of(h) == first))
    };
    let id = |l: Option<Location>| match l {
        Some(Location::Device(d)) => d as i32,
        Some(Location::Host) => CPU_DEVICE,
        None => INVALID_DEVICE,
    };
    let kind = |l: Option<Location>| match l {
        Some(Location::Device(_)) => LOCATION_TYPE_DEVICE,
        Some(Location::Host) => LOCATION_TYPE_HOST,
        None => LOCATION_TYPE_INVALID,
    };
    let id_only = |l: Option<Location>| match l {
        Some(Location::Device(d)) => d as i32,
        _ => INVALID_DEVICE,
    };
    Ok(match attribute {
        RangeAttribute::ReadMostly => vec![i32::from(hints.iter().all(|h| h.read_mostly))],
        RangeAttribute::PreferredLocation => vec![id(common(|h| h.preferred))],
        RangeAttribute::LastPrefetchLocation => vec![id(common(|h| h.last_prefetch))],
        RangeAttribute::PreferredLocationType => vec![kind(common(|h| h.preferred))],
        RangeAttribute::PreferredLocationId => vec![id_only(common(|h| h.preferred))],
        RangeAttribute::LastPrefetchLocationType => vec![kind(common(|h| h.last_prefetch))],
        RangeAttribute::LastPrefetchLocationId => vec![id_only(common(|h| h.last_prefetch))],
        RangeAttribute::AccessedBy => {
            let all = hints.iter().fold(u64::MAX, |acc, h| acc & h.accessed_by);
            let mut out: Vec<i32> = (0..63).filter(|bit| all & (1 << bit) != 0).collect();
            if all & HOST_BIT != 0 {
                out.push(CPU_DEVICE);
            }
            out.resize(words.max(out.len()), INVALID_DEVICE);
            out.truncate(words);
            out
        }
    })
}

/// `cudaMemRangeGetAttribute`: writes the value of `attribute` over
/// `[ptr, ptr + count)` into `size` bytes at `data` (4, or a multiple of 4
/// for `AccessedBy`).
pub(crate) fn write_range_attribute(
    data: *mut c_void,
    size: usize,
    attribute: i32,
    ptr: u64,
    count: u64,
) -> Result<(), CudaError> {
    let attribute = RangeAttribute::from_raw(attribute)?;
    if data.is_null() || size == 0 || !size.is_multiple_of(4) {
        return Err(CudaError::INVALID_VALUE);
    }
    let words = range_attribute(attribute, ptr, count, size / 4)?;
    // SAFETY: the caller provides `size` writable bytes at `data`, and
    // `words` holds exactly `size / 4` values.
    unsafe {
        std::ptr::copy_nonoverlapping(words.as_ptr() as *const u8, data as *mut u8, size);
    }
    Ok(())
}

/// `cudaMemRangeGetAttributes`: [`write_range_attribute`] for `n`
/// attributes, their buffers and sizes in arrays.
pub(crate) fn write_range_attributes(
    data: *mut *mut c_void,
    sizes: *const usize,
    attributes: *const i32,
    n: usize,
    ptr: u64,
    count: u64,
) -> Result<(), CudaError> {
    if n == 0 || data.is_null() || sizes.is_null() || attributes.is_null() {
        return Err(CudaError::INVALID_VALUE);
    }
    for i in 0..n {
        // SAFETY: the caller provides `n` entries in each array.
        let (buffer, size, attribute) =
            unsafe { (*data.add(i), *sizes.add(i), *attributes.add(i)) };
        write_range_attribute(buffer, size, attribute, ptr, count)?;
    }
    Ok(())
}
