//! The layouts the `soft` provider shares between processes. Every field is an
//! atomic, so a peer writing concurrently (or writing garbage) can never make
//! a read undefined; values read from a peer are validated where used.

use std::sync::atomic::{AtomicU32, AtomicU64};

use super::shm::SharedLayout;

/// `"rcudQP01"`.
pub(crate) const QP_MAGIC: u64 = 0x7263_7564_5150_3031;
/// `"rcudPD01"`.
pub(crate) const PD_MAGIC: u64 = 0x7263_7564_5044_3031;
/// `"rcudCQ01"`.
pub(crate) const CQ_MAGIC: u64 = 0x7263_7564_4351_3031;

/// Bytes before the first receive slot of a queue-pair file.
pub(crate) const QP_HEADER_LEN: usize = 128;
/// Bytes per receive slot.
pub(crate) const SLOT_LEN: usize = 64;
/// Bytes before the first entry of a protection-domain file.
pub(crate) const PD_HEADER_LEN: usize = 64;
/// Bytes per memory-region entry.
pub(crate) const PD_ENTRY_LEN: usize = 32;
/// Entries per protection domain (entry 0 is never used, so keys are never 0).
pub(crate) const PD_ENTRIES: usize = 4096;
/// Bytes of a completion-queue file.
pub(crate) const CQ_LEN: usize = 64;

/// Queue-pair states as stored in [`QpHeader::state`].
pub(crate) const STATE_INIT: u32 = 1;
pub(crate) const STATE_RTS: u32 = 2;
pub(crate) const STATE_ERROR: u32 = 3;
pub(crate) const STATE_DESTROYED: u32 = 4;

/// Receive-slot status codes.
pub(crate) const ST_SUCCESS: u32 = 0;
pub(crate) const ST_LOC_LEN: u32 = 1;
pub(crate) const ST_LOC_PROT: u32 = 2;
pub(crate) const ST_FLUSH: u32 = 3;

/// Receive-slot opcodes.
pub(crate) const OP_RECV: u32 = 1;
pub(crate) const OP_RECV_RDMA_IMM: u32 = 2;

/// Head of a queue-pair file; the receive ring follows at
/// [`QP_HEADER_LEN`].
///
/// Receive slot `i` (ring position `i % cap`) moves through: posted by the
/// owner (`seq = 2i + 1`, then `post_idx = i + 1`), claimed by whoever advances
/// `fill_idx` from `i` by compare-and-swap (the peer delivering a message, or
/// the owner flushing), completed (`seq = 2i + 2`), harvested by the owner's
/// completion queue (`poll_idx = i + 1`, the slot is free again).
#[repr(C)]
pub(crate) struct QpHeader {
    pub(crate) magic: AtomicU64,
    pub(crate) nonce: AtomicU64,
    pub(crate) state: AtomicU32,
    pub(crate) cap: AtomicU32,
    pub(crate) qp_num: AtomicU32,
    pub(crate) _pad: AtomicU32,
    pub(crate) post_idx: AtomicU64,
    pub(crate) fill_idx: AtomicU64,
    pub(crate) poll_idx: AtomicU64,
}

/// One posted receive and, once completed, its completion.
#[repr(C)]
pub(crate) struct Slot {
    pub(crate) seq: AtomicU64,
    pub(crate) wr_id: AtomicU64,
    pub(crate) offset: AtomicU64,
    pub(crate) len: AtomicU64,
    pub(crate) lkey: AtomicU32,
    pub(crate) status: AtomicU32,
    pub(crate) opcode: AtomicU32,
    pub(crate) byte_len: AtomicU32,
    pub(crate) imm: AtomicU32,
    pub(crate) has_imm: AtomicU32,
    pub(crate) _pad: AtomicU64,
}

/// Head of a protection-domain file: the table of its memory regions follows
/// at [`PD_HEADER_LEN`].
#[repr(C)]
pub(crate) struct PdHeader {
    pub(crate) magic: AtomicU64,
    pub(crate) nonce: AtomicU64,
}

/// A memory region as peers resolve it: `key` is stored last on registration
/// (release) and cleared first on deregistration.
#[repr(C)]
pub(crate) struct PdEntry {
    pub(crate) key: AtomicU32,
    pub(crate) access: AtomicU32,
    pub(crate) len: AtomicU64,
    pub(crate) addr: AtomicU64,
    pub(crate) _pad: AtomicU64,
}

/// A completion queue's event word: bumped on every new completion, futex
/// waiters sleep on it.
#[repr(C)]
pub(crate) struct CqHeader {
    pub(crate) magic: AtomicU64,
    pub(crate) seq: AtomicU32,
    pub(crate) waiters: AtomicU32,
}

// SAFETY: `#[repr(C)]`, atomic integer fields only, no `Drop`.
unsafe impl SharedLayout for QpHeader {}
// SAFETY: as above.
unsafe impl SharedLayout for Slot {}
// SAFETY: as above.
unsafe impl SharedLayout for PdHeader {}
// SAFETY: as above.
unsafe impl SharedLayout for PdEntry {}
// SAFETY: as above.
unsafe impl SharedLayout for CqHeader {}

const _: () = {
    assert!(std::mem::size_of::<QpHeader>() <= QP_HEADER_LEN);
    assert!(std::mem::size_of::<Slot>() == SLOT_LEN);
    assert!(std::mem::size_of::<PdHeader>() <= PD_HEADER_LEN);
    assert!(std::mem::size_of::<PdEntry>() == PD_ENTRY_LEN);
    assert!(std::mem::size_of::<CqHeader>() <= CQ_LEN);
};
