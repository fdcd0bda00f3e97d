//! Host buffers of both kinds, and the host's own memcpy as the reference
//! every table reports next to rcud.

use std::hint::black_box;
use std::ops::{Deref, DerefMut};
use std::time::{Duration, Instant};

use memmap2::MmapMut;
use rcud_client::Runtime;

/// Which host memory the copies use.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum MemoryArg {
    Pageable,
    Pinned,
    Both,
}

impl MemoryArg {
    pub(crate) fn kinds(self) -> &'static [Memory] {
        match self {
            MemoryArg::Pageable => &[Memory::Pageable],
            MemoryArg::Pinned => &[Memory::Pinned],
            MemoryArg::Both => &[Memory::Pageable, Memory::Pinned],
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Memory {
    Pageable,
    Pinned,
}

impl Memory {
    pub(crate) fn name(self) -> &'static str {
        match self {
            Memory::Pageable => "pageable",
            Memory::Pinned => "pinned",
        }
    }
}

/// A host buffer of `len` bytes of one kind.
pub(crate) enum HostBuffer {
    /// A plain vector.
    Pageable(Vec<u8>),
    /// Page-aligned, locked in memory and registered with the runtime, as
    /// `cudaHostRegister` would: rcud takes whatever pinned path it has.
    Pinned { map: MmapMut, rt: &'static Runtime },
}

impl HostBuffer {
    pub(crate) fn new(
        kind: Memory,
        len: usize,
        rt: &'static Runtime,
    ) -> Result<Self, Box<dyn std::error::Error>> {
        match kind {
            Memory::Pageable => Ok(HostBuffer::Pageable(vec![0x5A; len])),
            Memory::Pinned => {
                let mut map = MmapMut::map_anon(len)?;
                map.fill(0x5A);
                if let Err(e) = map.lock() {
                    // Still registered: the runtime's pinned path keys on that.
                    tracing::warn!(
                        "cannot lock {len} bytes of host memory ({e}); raise `ulimit -l`: \
                         the buffer is registered but may be paged"
                    );
                }
                rt.host_register(map.as_ptr() as u64, len as u64, 0)
                    .map_err(|e| format!("cudaHostRegister of {len} bytes: {e}"))?;
                Ok(HostBuffer::Pinned { map, rt })
            }
        }
    }
}

impl Deref for HostBuffer {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        match self {
            HostBuffer::Pageable(v) => v,
            HostBuffer::Pinned { map, .. } => map,
        }
    }
}

impl DerefMut for HostBuffer {
    fn deref_mut(&mut self) -> &mut [u8] {
        match self {
            HostBuffer::Pageable(v) => v,
            HostBuffer::Pinned { map, .. } => map,
        }
    }
}

impl Drop for HostBuffer {
    fn drop(&mut self) {
        if let HostBuffer::Pinned { map, rt } = self {
            let _ = rt.host_unregister(map.as_ptr() as u64);
        }
    }
}

/// Single-thread host memcpy of one size, between two buffers of its own.
pub(crate) struct MemcpyProbe {
    src: Vec<u8>,
    dst: Vec<u8>,
    /// Copies per step, so that a step of a small size is long enough to time.
    reps: u32,
    time: Duration,
    bytes: u64,
}

impl MemcpyProbe {
    pub(crate) fn new(len: usize) -> Self {
        let mut probe = Self {
            src: vec![0xA5; len],
            dst: vec![0; len],
            reps: ((1usize << 20) / len.max(1)).clamp(1, 4096) as u32,
            time: Duration::ZERO,
            bytes: 0,
        };
        probe.step();
        probe.reset();
        probe
    }

    /// Forgets the steps timed so far.
    pub(crate) fn reset(&mut self) {
        self.time = Duration::ZERO;
        self.bytes = 0;
    }

    /// Times one step of `reps` copies and adds it to the total.
    pub(crate) fn step(&mut self) {
        let start = Instant::now();
        for _ in 0..self.reps {
            black_box(&mut self.dst[..]).copy_from_slice(black_box(&self.src[..]));
        }
        self.time += start.elapsed();
        self.bytes += u64::from(self.reps) * self.src.len() as u64;
    }

    /// Bytes per second over every step so far.
    pub(crate) fn bytes_per_s(&self) -> f64 {
        self.bytes as f64 / self.time.as_secs_f64().max(1e-12)
    }

    /// Seconds per copy over every step so far.
    pub(crate) fn secs_per_copy(&self) -> f64 {
        self.time.as_secs_f64() / (self.bytes as f64 / self.src.len().max(1) as f64).max(1.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn memcpy_probe_counts_what_it_copied() {
        let mut p = MemcpyProbe::new(4096);
        assert_eq!(p.bytes, 0);
        p.step();
        assert_eq!(p.bytes, 256 * 4096);
        assert_eq!(p.dst, p.src);
        assert!(p.bytes_per_s() > 0.0);
        assert!(p.secs_per_copy() > 0.0);
    }
}
