//! Calls of the math libraries (cuBLAS, cuBLASLt, cuFFT, cuRAND, cuSPARSE,
//! cuSOLVER) as a hostile client sends them: any library id and any call
//! body, run by an emulated device's context next to another client's.
//!
//! Input: up to [`MAX_CALLS`] records `[library: u8][len: u16 LE][call]`.
//! A fuzzer cannot guess device addresses, so an 8-byte little-endian word
//! of a call whose high half is a placeholder tag becomes an address: the
//! tag names one of the caller's two buffers, the end of one (just out of
//! bounds), or the other client's buffer, and the low half is added to it.
//! The seeds (`examples/make_seeds.rs`) are real calls made with rcud's
//! own encoders, their pointers written as placeholders.
//!
//! Properties: no panic; a reply's output stays within a frame's bulk
//! limit; the other client's memory is never touched; and the caller's
//! context still serves ordinary calls afterwards.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use rcud_proto::frame::MAX_BULK;
use rcud_server::backend::emu::EmuBackend;
use rcud_server::backend::{Backend, DeviceContext, EmuSettings};

/// Calls of one input beyond this many are ignored.
pub const MAX_CALLS: usize = 8;
/// Bytes of each buffer the caller owns.
pub const BUFFER: u64 = 64 << 10;
/// Placeholder tags (the high 32 bits of a word) and what they stand for.
pub const TAG_FIRST: u32 = 0x00A1_A1A1;
/// The caller's second buffer.
pub const TAG_SECOND: u32 = 0x00B2_B2B2;
/// One past the end of the caller's first buffer.
pub const TAG_FIRST_END: u32 = 0x00E1_E1E1;
/// The other client's buffer.
pub const TAG_VICTIM: u32 = 0x00C3_C3C3;
/// The other client's bytes.
const VICTIM_FILL: u8 = 0x5A;

static CALLS: AtomicU64 = AtomicU64::new(0);
static ANSWERED: AtomicU64 = AtomicU64::new(0);

/// How far the inputs run so far reached.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stats {
    /// Calls made.
    pub calls: u64,
    /// Calls the library answered with its success status.
    pub answered: u64,
}

/// Counts of the calls made so far in this process.
pub fn stats() -> Stats {
    Stats {
        calls: CALLS.load(Ordering::Relaxed),
        answered: ANSWERED.load(Ordering::Relaxed),
    }
}

/// One encoded record of an input, for seeds and tests.
pub fn record(library: u8, call: &[u8]) -> Vec<u8> {
    let len = u16::try_from(call.len()).expect("a call of at most 64 KiB");
    let mut out = vec![library];
    out.extend_from_slice(&len.to_le_bytes());
    out.extend_from_slice(call);
    out
}

/// The placeholder word for `offset` bytes into what `tag` names.
pub fn placeholder(tag: u32, offset: u32) -> u64 {
    u64::from(tag) << 32 | u64::from(offset)
}

/// Runs the calls of `data`; see the module's documentation.
pub fn math(data: &[u8]) {
    let backend = EmuBackend::new(&EmuSettings {
        gpus: 1,
        memory: 16 << 20,
        kernel_timeout: Duration::from_millis(100),
        ..EmuSettings::default()
    });
    let (Ok(mut victim), Ok(mut caller)) = (backend.open(0, 0), backend.open(0, 0)) else {
        panic!("an emulated GPU refused a context");
    };
    // Each context has an address space of its own: the other client's
    // buffer lies past a spacer, where the caller has nothing, so that a
    // call naming it must be refused rather than land in the caller's own
    // memory.
    let _spacer = victim
        .malloc(4 * BUFFER)
        .expect("a spacer on an empty device");
    let victim_buf = buffer(victim.as_mut(), VICTIM_FILL);
    let first = buffer(caller.as_mut(), 0x11);
    let second = buffer(caller.as_mut(), 0x22);
    let address = |tag: u32| match tag {
        TAG_FIRST => Some(first),
        TAG_SECOND => Some(second),
        TAG_FIRST_END => Some(first + BUFFER),
        TAG_VICTIM => Some(victim_buf),
        _ => None,
    };

    let mut rest = data;
    for _ in 0..MAX_CALLS {
        let [library, lo, hi, tail @ ..] = rest else {
            break;
        };
        let len = usize::from(u16::from_le_bytes([*lo, *hi])).min(tail.len());
        let (body, next) = tail.split_at(len);
        rest = next;
        let mut call = body.to_vec();
        patch_addresses(&mut call, address);
        CALLS.fetch_add(1, Ordering::Relaxed);
        if let Ok(reply) = caller.math_call(*library, &call) {
            assert!(
                reply.out.len() as u64 <= MAX_BULK,
                "a reply over the bulk limit"
            );
            if reply.status == 0 {
                ANSWERED.fetch_add(1, Ordering::Relaxed);
            }
        }
    }
    // Work queued by the calls finishes, with or without a fault.
    let _ = caller.synchronize();
    assert_untouched(victim.as_mut(), victim_buf);
    // The caller is still served.
    let ptr = caller
        .malloc(4096)
        .expect("the caller's context works after its calls");
    caller.free(ptr).expect("free");
}

/// A fresh allocation of [`BUFFER`] bytes of `fill`.
fn buffer(ctx: &mut dyn DeviceContext, fill: u8) -> u64 {
    let ptr = ctx.malloc(BUFFER).expect("a buffer on an empty device");
    ctx.memset(ptr, fill, BUFFER).expect("fill the buffer");
    ptr
}

/// Replaces each placeholder word (at any byte offset) by its address.
fn patch_addresses(call: &mut [u8], address: impl Fn(u32) -> Option<u64>) {
    let mut at = 0;
    while at + 8 <= call.len() {
        let mut word = [0u8; 8];
        word.copy_from_slice(&call[at..at + 8]);
        let value = u64::from_le_bytes(word);
        if let Some(base) = address((value >> 32) as u32) {
            let patched = base.wrapping_add(value & 0xFFFF_FFFF);
            call[at..at + 8].copy_from_slice(&patched.to_le_bytes());
            at += 8;
        } else {
            at += 1;
        }
    }
}

fn assert_untouched(victim: &mut dyn DeviceContext, ptr: u64) {
    let mut seen = Vec::with_capacity(BUFFER as usize);
    victim
        .copy_to_host(ptr, BUFFER, &mut |piece| {
            seen.extend_from_slice(piece);
            Ok(())
        })
        .expect("read the other client's buffer");
    assert!(
        seen.iter().all(|&b| b == VICTIM_FILL),
        "a math call wrote another client's memory"
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn placeholders_become_addresses_anywhere() {
        let mut call = vec![7u8];
        call.extend_from_slice(&placeholder(TAG_SECOND, 16).to_le_bytes());
        call.extend_from_slice(&placeholder(0x1234, 16).to_le_bytes());
        patch_addresses(&mut call, |t| (t == TAG_SECOND).then_some(0x1000));
        assert_eq!(call[1..9], 0x1010u64.to_le_bytes());
        assert_eq!(call[9..17], placeholder(0x1234, 16).to_le_bytes());
    }
}
