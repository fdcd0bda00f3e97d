//! Translation of `mbarrier.*` and `cp.async.mbarrier.arrive` into
//! [`Op::Mbar`]; their semantics are in `kernel/mbarrier.rs`.

use super::{PInst, PtxError, Tr};
use crate::ptx::ir::*;
use crate::ptx::types::{Space, Ty};

/// The space of the barrier object: shared (a cluster is one block here,
/// so `shared::cluster` is the block's own shared memory) or generic.
fn mbar_space(mods: &[&str]) -> Space {
    if mods
        .iter()
        .any(|m| matches!(*m, "shared" | "shared::cta" | "shared::cluster"))
    {
        Space::Shared
    } else {
        Space::Generic
    }
}

impl Tr<'_, '_> {
    pub(super) fn mbarrier(&mut self, i: &PInst, mods: &[&str]) -> Result<(), PtxError> {
        let has = |m: &str| mods.contains(&m);
        if !has("b64") {
            return self.unsupported();
        }
        let space = mbar_space(mods);
        // (op, index of the address operand, destination kind).
        enum Dst {
            None,
            Reg,
            Pred,
        }
        let (op, at, dst) = match mods.first().copied() {
            Some("init") => (MbarOp::Init, 0, Dst::None),
            Some("inval") => (MbarOp::Inval, 0, Dst::None),
            Some(a @ ("arrive" | "arrive_drop")) => {
                let op = MbarOp::Arrive {
                    drop: a == "arrive_drop",
                    expect_tx: has("expect_tx"),
                };
                (op, 1, Dst::Reg)
            }
            Some("expect_tx") => (MbarOp::ExpectTx, 0, Dst::None),
            Some("complete_tx") => (MbarOp::CompleteTx, 0, Dst::None),
            Some("test_wait" | "try_wait") => {
                let op = MbarOp::Wait {
                    parity: has("parity"),
                };
                (op, 1, Dst::Pred)
            }
            Some("pending_count") => {
                let o = self.ops(i, 2)?;
                let d = self.dst(&o[0])?;
                let b = self.src(&o[1], Ty::B64)?;
                self.emit(Op::Mbar {
                    op: MbarOp::PendingCount,
                    sp: Msp::Generic,
                    d,
                    base: NONE,
                    off: 0,
                    b,
                });
                return Ok(());
            }
            _ => return self.unsupported(),
        };
        let o = self.ops(i, at + 1)?;
        let d = match dst {
            Dst::None => NONE,
            Dst::Reg => self.dst(&o[0])?,
            Dst::Pred => self.pred_dst(&o[0])?,
        };
        let (sp, base, off) = self.addr(&o[at], space)?;
        let b = match o.get(at + 1) {
            Some(x) => self.src(x, Ty::B64)?,
            None => NONE,
        };
        let needs_b = matches!(
            op,
            MbarOp::Init | MbarOp::ExpectTx | MbarOp::CompleteTx | MbarOp::Wait { .. }
        ) || matches!(
            op,
            MbarOp::Arrive {
                expect_tx: true,
                ..
            }
        );
        if needs_b && b == NONE {
            return self.err(format!("'{}' needs an operand after the address", i.opcode));
        }
        self.emit(Op::Mbar {
            op,
            sp,
            d,
            base,
            off,
            b,
        });
        Ok(())
    }

    /// `cp.async.mbarrier.arrive{.noinc}{.shared{::cta}}.b64 [addr]`.
    pub(super) fn cp_async_mbarrier(&mut self, i: &PInst, mods: &[&str]) -> Result<(), PtxError> {
        if !mods.contains(&"arrive") || !mods.contains(&"b64") {
            return self.unsupported();
        }
        let o = self.ops(i, 1)?;
        let (sp, base, off) = self.addr(&o[0], mbar_space(mods))?;
        self.emit(Op::Mbar {
            op: MbarOp::CpAsyncArrive {
                noinc: mods.contains(&"noinc"),
            },
            sp,
            d: NONE,
            base,
            off,
            b: NONE,
        });
        Ok(())
    }

    /// `cp.async.bulk.dst.src.completion [dst], [src], size{, [mbar]}`
    /// (global to shared with `mbarrier::complete_tx::bytes`, shared to
    /// shared, or shared to global with `bulk_group`): copied when issued,
    /// then the bytes are completed on the mbarrier at once.
    pub(super) fn cp_async_bulk(&mut self, i: &PInst, mods: &[&str]) -> Result<(), PtxError> {
        let has = |m: &str| mods.contains(&m);
        if has("multicast::cluster") || has("prefetch") {
            return self.unsupported();
        }
        let spaces: Vec<Space> = mods
            .iter()
            .filter_map(|m| match *m {
                "global" => Some(Space::Global),
                "shared" | "shared::cta" | "shared::cluster" => Some(Space::Shared),
                _ => None,
            })
            .collect();
        let &[dsp, ssp] = spaces.as_slice() else {
            return self.unsupported();
        };
        let mbar = has("mbarrier::complete_tx::bytes");
        if mbar == has("bulk_group") || (mbar && dsp != Space::Shared) {
            return self.unsupported();
        }
        let o = self.ops(i, if mbar { 4 } else { 3 })?;
        let (dmsp, dbase, doff) = self.addr(&o[0], dsp)?;
        let (smsp, sbase, soff) = self.addr(&o[1], ssp)?;
        let size = self.src(&o[2], Ty::U32)?;
        let dst = self.fold_addr(dbase, doff);
        self.emit(Op::Mbar {
            op: MbarOp::BulkCopy { src: smsp },
            sp: dmsp,
            d: dst,
            base: sbase,
            off: soff,
            b: size,
        });
        if mbar {
            let (sp, base, off) = self.addr(&o[3], Space::Shared)?;
            self.emit(Op::Mbar {
                op: MbarOp::CompleteTx,
                sp,
                d: NONE,
                base,
                off,
                b: size,
            });
        }
        Ok(())
    }

    /// `base + off` in one slot.
    fn fold_addr(&mut self, base: R, off: i64) -> R {
        let k = self.imm(off as u64);
        if base == NONE {
            return k;
        }
        let d = self.new_slot();
        self.emit(Op::Int2 {
            op: Int2::Add,
            w: Iw::U64,
            d,
            a: base,
            b: k,
        });
        d
    }
}
