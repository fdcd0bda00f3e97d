//! The interpreter's register IR: one `Inst` per PTX instruction (a few PTX
//! instructions expand to two), labels resolved to instruction indices,
//! registers to dense slots, types and modifiers to enums, immediates and
//! symbol addresses to constant slots filled when a frame is created.
//!
//! Every value slot holds 64 bits per lane. An instruction of a narrower type
//! reads the low bits of its sources and may leave anything in the high bits
//! of its destination; readers never rely on them. Predicates live in a
//! separate file, one 32-bit lane mask per predicate register.

use super::types::{Space, Ty};

/// A value slot.
pub(crate) type R = u32;
/// A predicate slot.
pub(crate) type P = u32;
/// "No register": sinks, absent operands, absent guards.
pub(crate) const NONE: u32 = u32::MAX;
/// Guard bit: the guard predicate is negated (`@!%p`).
pub(crate) const GUARD_NEG: u32 = 1 << 31;

/// Integer type of an operation: width and signedness.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Iw {
    U8,
    U16,
    U32,
    U64,
    S8,
    S16,
    S32,
    S64,
}

impl Iw {
    pub(crate) fn from_ty(t: Ty) -> Option<Iw> {
        Some(match t {
            Ty::U8 | Ty::B8 => Iw::U8,
            Ty::U16 | Ty::B16 => Iw::U16,
            Ty::U32 | Ty::B32 => Iw::U32,
            Ty::U64 | Ty::B64 => Iw::U64,
            Ty::S8 => Iw::S8,
            Ty::S16 => Iw::S16,
            Ty::S32 => Iw::S32,
            Ty::S64 => Iw::S64,
            _ => return None,
        })
    }

    pub(crate) fn bits(self) -> u32 {
        match self {
            Iw::U8 | Iw::S8 => 8,
            Iw::U16 | Iw::S16 => 16,
            Iw::U32 | Iw::S32 => 32,
            Iw::U64 | Iw::S64 => 64,
        }
    }

    pub(crate) fn signed(self) -> bool {
        matches!(self, Iw::S8 | Iw::S16 | Iw::S32 | Iw::S64)
    }
}

/// Float type of an operation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Ft {
    F16,
    BF16,
    F16x2,
    BF16x2,
    F32,
    F64,
}

impl Ft {
    pub(crate) fn from_ty(t: Ty) -> Option<Ft> {
        Some(match t {
            Ty::F16 => Ft::F16,
            Ty::BF16 => Ft::BF16,
            Ty::F16x2 => Ft::F16x2,
            Ty::BF16x2 => Ft::BF16x2,
            Ty::F32 => Ft::F32,
            Ty::F64 => Ft::F64,
            _ => return None,
        })
    }
}

/// Rounding modifier.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Rnd {
    /// None given: the instruction's default.
    Default,
    Rn,
    Rz,
    Rm,
    Rp,
    /// Round to an integral value: nearest even, zero, down, up.
    Rni,
    Rzi,
    Rmi,
    Rpi,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Int2 {
    Add,
    Sub,
    AddSat,
    SubSat,
    MulLo,
    MulHi,
    /// Destination twice as wide as the sources.
    MulWide,
    Mul24Lo,
    Mul24Hi,
    Div,
    Rem,
    Min,
    Max,
    And,
    Or,
    Xor,
    Shl,
    Shr,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Int1 {
    Not,
    Neg,
    Abs,
    Popc,
    Clz,
    Brev,
    Cnot,
    Bfind,
    BfindShift,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Mad {
    Lo,
    Hi,
    Wide,
    Lo24,
    /// `sad`: |a - b| + c.
    Sad,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum F2 {
    Add,
    Sub,
    Mul,
    Div,
    /// Approximate division (`div.approx`, `div.full`).
    DivApprox,
    Min,
    Max,
    MinNaN,
    MaxNaN,
    /// `copysign d, a, b`: magnitude of b, sign of a.
    Copysign,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum F1 {
    Neg,
    Abs,
    Sqrt,
    SqrtApprox,
    Rsqrt,
    Rcp,
    RcpApprox,
    Ex2,
    Lg2,
    Sin,
    Cos,
    Tanh,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Testp {
    Finite,
    Infinite,
    Number,
    NotANumber,
    Normal,
    Subnormal,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Cmp {
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
    Lo,
    Ls,
    Hi,
    Hs,
    Equ,
    Neu,
    Ltu,
    Leu,
    Gtu,
    Geu,
    Num,
    Nan,
}

impl Cmp {
    pub(crate) fn from_name(s: &str) -> Option<Cmp> {
        Some(match s {
            "eq" => Cmp::Eq,
            "ne" => Cmp::Ne,
            "lt" => Cmp::Lt,
            "le" => Cmp::Le,
            "gt" => Cmp::Gt,
            "ge" => Cmp::Ge,
            "lo" => Cmp::Lo,
            "ls" => Cmp::Ls,
            "hi" => Cmp::Hi,
            "hs" => Cmp::Hs,
            "equ" => Cmp::Equ,
            "neu" => Cmp::Neu,
            "ltu" => Cmp::Ltu,
            "leu" => Cmp::Leu,
            "gtu" => Cmp::Gtu,
            "geu" => Cmp::Geu,
            "num" => Cmp::Num,
            "nan" => Cmp::Nan,
            _ => return None,
        })
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum BoolOp {
    None,
    And,
    Or,
    Xor,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum PredOp {
    And,
    Or,
    Xor,
    Not,
    Mov,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum AtomOp {
    Add,
    Min,
    Max,
    And,
    Or,
    Xor,
    Exch,
    Cas,
    Inc,
    Dec,
}

/// Operand type of an atomic.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum AtomTy {
    U32,
    S32,
    U64,
    S64,
    F32,
    F64,
    /// Packed halves (`atom.add.noftz.f16` and friends): addition only.
    F16,
    BF16,
    F16x2,
    BF16x2,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Shfl {
    Up,
    Down,
    Bfly,
    Idx,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Vote {
    All,
    Any,
    Uni,
    Ballot,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Redux {
    Add,
    Min,
    Max,
    And,
    Or,
    Xor,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Bar {
    Sync,
    Arrive,
    Popc,
    And,
    Or,
}

/// An `mbarrier` operation (executed in `kernel/mbarrier.rs`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum MbarOp {
    Init,
    Inval,
    /// arrive / arrive_drop (`drop`), with `b` the count, or with
    /// `expect_tx` the transaction bytes (count 1).
    Arrive {
        drop: bool,
        expect_tx: bool,
    },
    ExpectTx,
    CompleteTx,
    /// test_wait / try_wait on a state token, or on a phase parity.
    Wait {
        parity: bool,
    },
    PendingCount,
    /// cp.async.mbarrier.arrive (`.noinc`: counts as one of the expected arrivals).
    CpAsyncArrive {
        noinc: bool,
    },
    /// cp.async.bulk: `b` bytes from address `base + off` (space `src`) to
    /// the address in `d` (space `sp`), copied when issued.
    BulkCopy {
        src: Msp,
    },
}

/// Special registers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Sreg {
    Tid(u8),
    Ntid(u8),
    Ctaid(u8),
    Nctaid(u8),
    Laneid,
    Warpid,
    Nwarpid,
    Smid,
    Nsmid,
    Gridid,
    Clock,
    Clock64,
    Globaltimer,
    GlobaltimerLo,
    GlobaltimerHi,
    LanemaskEq,
    LanemaskLe,
    LanemaskLt,
    LanemaskGe,
    LanemaskGt,
    DynamicSmem,
    TotalSmem,
    /// `%envreg0`..`%envreg31`: values the driver passes to every kernel;
    /// cooperative groups find the grid workspace in 1 (high) and 2 (low).
    Envreg(u8),
}

impl Sreg {
    pub(crate) fn from_name(s: &str) -> Option<Sreg> {
        let dim = |c: &str| match c {
            "x" => Some(0u8),
            "y" => Some(1),
            "z" => Some(2),
            _ => None,
        };
        if let Some((base, c)) = s.split_once('.') {
            let d = dim(c)?;
            return Some(match base {
                "%tid" => Sreg::Tid(d),
                "%ntid" => Sreg::Ntid(d),
                "%ctaid" => Sreg::Ctaid(d),
                "%nctaid" => Sreg::Nctaid(d),
                _ => return None,
            });
        }
        Some(match s {
            "%laneid" => Sreg::Laneid,
            "%warpid" => Sreg::Warpid,
            "%nwarpid" => Sreg::Nwarpid,
            "%smid" => Sreg::Smid,
            "%nsmid" => Sreg::Nsmid,
            "%gridid" => Sreg::Gridid,
            "%clock" => Sreg::Clock,
            "%clock64" => Sreg::Clock64,
            "%globaltimer" => Sreg::Globaltimer,
            "%globaltimer_lo" => Sreg::GlobaltimerLo,
            "%globaltimer_hi" => Sreg::GlobaltimerHi,
            "%lanemask_eq" => Sreg::LanemaskEq,
            "%lanemask_le" => Sreg::LanemaskLe,
            "%lanemask_lt" => Sreg::LanemaskLt,
            "%lanemask_ge" => Sreg::LanemaskGe,
            "%lanemask_gt" => Sreg::LanemaskGt,
            "%dynamic_smem_size" => Sreg::DynamicSmem,
            "%total_smem_size" => Sreg::TotalSmem,
            _ => {
                let n: u8 = s.strip_prefix("%envreg")?.parse().ok()?;
                return (n < 32).then_some(Sreg::Envreg(n));
            }
        })
    }
}

/// Address space of a memory instruction, as executed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Msp {
    Generic,
    Global,
    Const,
    Shared,
    Local,
    /// Kernel parameter space (the launch's parameter buffer).
    Param,
    /// A variable of the current frame (function parameters, call
    /// arguments, the local depot): address = frame base + offset.
    Frame,
}

impl Msp {
    pub(crate) fn from_space(s: Space) -> Msp {
        match s {
            Space::Generic | Space::Reg => Msp::Generic,
            Space::Global => Msp::Global,
            Space::Const => Msp::Const,
            Space::Shared => Msp::Shared,
            Space::Local => Msp::Local,
            Space::Param => Msp::Param,
        }
    }
}

/// One IR operation. Register fields are slots of the current frame.
#[derive(Debug, Clone)]
pub(crate) enum Op {
    Nop,
    Mov {
        d: R,
        a: R,
    },
    Special {
        d: R,
        sr: Sreg,
    },
    /// d = local-space address of the current frame + off.
    FrameAddr {
        d: R,
        off: u32,
    },
    /// d = {src[0], src[1], ...}, element `bits` wide, first element lowest.
    Pack {
        d: R,
        src: [R; 4],
        n: u8,
        bits: u8,
    },
    Unpack {
        d: [R; 4],
        n: u8,
        bits: u8,
        a: R,
    },
    Int2 {
        op: Int2,
        w: Iw,
        d: R,
        a: R,
        b: R,
    },
    Int1 {
        op: Int1,
        w: Iw,
        d: R,
        a: R,
    },
    Mad {
        op: Mad,
        w: Iw,
        d: R,
        a: R,
        b: R,
        c: R,
    },
    /// add/sub/mad with carry: `cc` is the frame's carry slot.
    Carry {
        kind: CarryKind,
        cin: bool,
        cout: bool,
        wide: bool,
        d: R,
        a: R,
        b: R,
        c: R,
        cc: R,
    },
    Bfe {
        wide: bool,
        signed: bool,
        d: R,
        a: R,
        b: R,
        c: R,
    },
    Bfi {
        wide: bool,
        d: R,
        a: R,
        b: R,
        c: R,
        e: R,
    },
    Prmt {
        mode: u8,
        d: R,
        a: R,
        b: R,
        c: R,
    },
    Shf {
        left: bool,
        clamp: bool,
        d: R,
        a: R,
        b: R,
        c: R,
    },
    /// bmsk: `b` one bits starting at bit `a`.
    Bmsk {
        clamp: bool,
        d: R,
        a: R,
        b: R,
    },
    Lop3 {
        lut: u8,
        d: R,
        a: R,
        b: R,
        c: R,
    },
    Dp4a {
        us: bool,
        ut: bool,
        d: R,
        a: R,
        b: R,
        c: R,
    },
    Setp {
        cmp: Cmp,
        ty: Ty,
        bop: BoolOp,
        d: P,
        dn: P,
        a: R,
        b: R,
        /// Combining predicate, with `GUARD_NEG` when negated.
        c: P,
    },
    /// `set`: d = cmp ? all ones (or 1.0f) : 0.
    Set {
        cmp: Cmp,
        ty: Ty,
        float_dst: bool,
        d: R,
        a: R,
        b: R,
    },
    Selp {
        d: R,
        a: R,
        b: R,
        p: P,
    },
    Slct {
        fsel: bool,
        d: R,
        a: R,
        b: R,
        c: R,
    },
    /// Predicate logic; `a`/`b` carry `GUARD_NEG` when negated.
    Pred {
        op: PredOp,
        d: P,
        a: P,
        b: P,
    },
    PredConst {
        d: P,
        v: bool,
    },
    /// d = p ? 1 : 0 (cvt/selp of a predicate).
    FromPred {
        d: R,
        p: P,
    },
    /// p = a & 1 (a register moved into a predicate).
    ToPred {
        d: P,
        a: R,
    },
    F2 {
        op: F2,
        t: Ft,
        rnd: Rnd,
        ftz: bool,
        sat: bool,
        d: R,
        a: R,
        b: R,
    },
    F1 {
        op: F1,
        t: Ft,
        rnd: Rnd,
        ftz: bool,
        sat: bool,
        d: R,
        a: R,
    },
    Fma {
        t: Ft,
        rnd: Rnd,
        ftz: bool,
        sat: bool,
        d: R,
        a: R,
        b: R,
        c: R,
    },
    Testp {
        op: Testp,
        t: Ft,
        d: P,
        a: R,
    },
    Cvt {
        dt: Ty,
        st: Ty,
        rnd: Rnd,
        sat: bool,
        ftz: bool,
        d: R,
        a: R,
    },
    /// cvt.rn.f16x2.f32 d, a, b: d = {b (low), a (high)}.
    CvtPack {
        dt: Ty,
        rnd: Rnd,
        relu: bool,
        d: R,
        a: R,
        b: R,
    },
    Ld {
        sp: Msp,
        size: u8,
        signed: bool,
        n: u8,
        d: [R; 4],
        base: R,
        off: i64,
    },
    St {
        sp: Msp,
        size: u8,
        n: u8,
        s: [R; 4],
        base: R,
        off: i64,
    },
    Atom {
        sp: Msp,
        op: AtomOp,
        ty: AtomTy,
        d: R,
        base: R,
        off: i64,
        b: R,
        c: R,
    },
    /// cp.async: copy `size` bytes from global to shared now (bytes past
    /// `src_size` are zero); commit/wait are no-ops.
    CpAsync {
        dbase: R,
        doff: i64,
        sbase: R,
        soff: i64,
        size: u8,
        src_size: R,
    },
    /// `mbarrier.*` on the object at `base + off` (shared or generic):
    /// `d` is the state/count register or the wait predicate, `b` the
    /// count, state, parity or tx operand ([`NONE`] when absent).
    Mbar {
        op: MbarOp,
        sp: Msp,
        d: u32,
        base: R,
        off: i64,
        b: R,
    },
    Cvta {
        to: bool,
        sp: Msp,
        d: R,
        a: R,
    },
    Isspacep {
        sp: Msp,
        d: P,
        a: R,
    },
    Bra {
        target: u32,
    },
    /// Index into the function's call-site table.
    Call {
        site: u32,
    },
    Ret,
    Exit,
    Trap,
    /// membar/fence: a sequentially consistent fence on the host.
    Fence,
    /// `id`/`n`: barrier number and thread count of `bar.sync a, b` and
    /// `bar.arrive a, b` ([`NONE`]: no count, the whole block).
    Bar {
        kind: Bar,
        d: R,
        p: P,
        id: R,
        n: R,
    },
    Shfl {
        mode: Shfl,
        d: R,
        dp: P,
        a: R,
        b: R,
        c: R,
    },
    /// `mask`: the `.sync` member mask register ([`NONE`]: the lanes that
    /// run it together), likewise for `Match` and `Redux`.
    Vote {
        mode: Vote,
        d: u32,
        a: P,
        mask: R,
    },
    Match {
        all: bool,
        wide: bool,
        d: R,
        dp: P,
        a: R,
        mask: R,
    },
    Activemask {
        d: R,
    },
    Redux {
        op: Redux,
        signed: bool,
        d: R,
        a: R,
        mask: R,
    },
    /// `mma.sync` / `wmma.mma`: the whole warp's fragments at once (boxed:
    /// up to 32 registers).
    Mma(Box<MmaOp>),
    /// `wmma.load` / `wmma.store`.
    WmmaMem(Box<WmmaMem>),
    /// `ldmatrix` (or `stmatrix` when `store`): `n` 8x8 matrices of b16,
    /// row addresses from lanes 0..8n.
    Ldmatrix {
        store: bool,
        trans: bool,
        n: u8,
        sp: Msp,
        r: [R; 4],
        base: R,
        off: i64,
    },
    /// `movmatrix.sync.aligned.m8n8.trans.b16`.
    Movmatrix {
        d: R,
        a: R,
    },
    /// `cvt.{rna,rn,rz}{.satfinite}.tf32.f32`: an f32 rounded to tf32's
    /// 10-bit mantissa (low 13 bits zero).
    CvtTf32 {
        rnd: Rnd,
        sat: bool,
        d: R,
        a: R,
    },
    /// `tex`, `tld4`, `txq`, `suld`, `sust`, `suq` (boxed: many registers).
    Image(Box<ImageOp>),
}

/// Geometry of a texture or surface instruction (`.1d`, `.a2d`, ...).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Geom {
    D1,
    D2,
    D3,
    A1d,
    A2d,
    Cube,
    ACube,
}

impl Geom {
    pub(crate) fn from_mods(mods: &[&str]) -> Option<Geom> {
        mods.iter().find_map(|m| {
            Some(match *m {
                "1d" => Geom::D1,
                "2d" => Geom::D2,
                "3d" => Geom::D3,
                "a1d" => Geom::A1d,
                "a2d" => Geom::A2d,
                "cube" => Geom::Cube,
                "acube" => Geom::ACube,
                _ => return None,
            })
        })
    }

    /// Registers of the coordinate vector: the layer first in arrays,
    /// 3-D and 2-D arrays padded to four.
    pub(crate) fn coord_regs(self) -> usize {
        match self {
            Geom::D1 => 1,
            Geom::D2 | Geom::A1d => 2,
            Geom::D3 | Geom::A2d | Geom::Cube | Geom::ACube => 4,
        }
    }

    pub(crate) fn layered(self) -> bool {
        matches!(self, Geom::A1d | Geom::A2d | Geom::ACube)
    }
}

/// What a texture fetch returns in each destination register.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum TexOut {
    F32,
    S32,
    U32,
    /// Two f16 channels per register.
    F16x2,
}

/// Out-of-range surface accesses: `.trap`, `.clamp`, `.zero`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Oob {
    Trap,
    Clamp,
    Zero,
}

/// Attribute read by `txq` / `suq`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Query {
    Width,
    Height,
    Depth,
    ChannelDataType,
    ChannelOrder,
    NormalizedCoords,
    ForceUnnormalizedCoords,
    FilterMode,
    AddrMode(u8),
    ArraySize,
    NumMipmapLevels,
    NumSamples,
    MemoryLayout,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ImageKind {
    /// `tex`: `int_coords` for `.s32` coordinates.
    Tex { out: TexOut, int_coords: bool },
    /// `tld4.{r,g,b,a}`: channel `comp` of the four footprint texels.
    Tld4 { out: TexOut, comp: u8 },
    /// `txq` (`surface` false) or `suq`.
    Query { q: Query, surface: bool },
    /// `suld.b`: `n` elements of `bits` each.
    Suld { bits: u8, n: u8, oob: Oob },
    /// `sust.b`.
    Sust { bits: u8, n: u8, oob: Oob },
}

/// A texture or surface instruction. `coords` are x, y, z in that order
/// (NONE where the geometry has fewer), `layer` the array index.
#[derive(Debug, Clone)]
pub(crate) struct ImageOp {
    pub(crate) kind: ImageKind,
    pub(crate) geom: Geom,
    /// The 64-bit handle: the descriptor's device address.
    pub(crate) handle: R,
    pub(crate) coords: [R; 3],
    pub(crate) layer: R,
    /// Destinations (`tex`, `tld4`, `suld`, query) or sources (`sust`).
    pub(crate) regs: [R; 4],
    /// The optional predicate destination of `tex`/`tld4`.
    pub(crate) p: P,
    /// Which mipmap level a `tex` reads, or a `txq` asks about.
    pub(crate) lod: Lod,
}

/// The level of detail of a texture instruction.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Lod {
    /// Level 0 (plain `tex`, `txq`).
    Base,
    /// `.level`: an explicit level of detail (f32; `txq`: an integer level).
    Level(R),
    /// `.grad`: the derivatives of the coordinates along x and y, whose
    /// length gives the level of detail.
    Grad { dx: [R; 3], dy: [R; 3] },
}

/// Element type of a tensor-core fragment.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum El {
    F16,
    BF16,
    Tf32,
    F32,
    F64,
    S8,
    U8,
    S4,
    U4,
    B1,
    S32,
    E4m3,
    E5m2,
}

impl El {
    pub(crate) fn from_name(s: &str) -> Option<El> {
        Some(match s {
            "f16" => El::F16,
            "bf16" => El::BF16,
            "tf32" => El::Tf32,
            "f32" => El::F32,
            "f64" => El::F64,
            "s8" => El::S8,
            "u8" => El::U8,
            "s4" => El::S4,
            "u4" => El::U4,
            "b1" => El::B1,
            "s32" => El::S32,
            "e4m3" => El::E4m3,
            "e5m2" => El::E5m2,
            _ => return None,
        })
    }

    /// Bits of one element in memory and in a register.
    pub(crate) fn bits(self) -> u32 {
        match self {
            El::F16 | El::BF16 => 16,
            El::Tf32 | El::F32 | El::S32 => 32,
            El::F64 => 64,
            El::S8 | El::U8 | El::E4m3 | El::E5m2 => 8,
            El::S4 | El::U4 => 4,
            El::B1 => 1,
        }
    }

    /// Elements one fragment register holds (an f64 register holds one).
    pub(crate) fn per_reg(self) -> u32 {
        if self == El::F64 {
            1
        } else {
            32 / self.bits()
        }
    }

    pub(crate) fn is_int(self) -> bool {
        matches!(self, El::S8 | El::U8 | El::S4 | El::U4 | El::B1 | El::S32)
    }
}

/// Which matrix of an MMA a fragment holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Frag {
    A,
    B,
    /// The accumulator (C or D).
    C,
}

/// How fragments map to matrix elements: the PTX ISA's layouts for
/// `mma.sync`, rcud's own for `wmma` (which PTX leaves unspecified).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum FragLayout {
    Mma,
    /// `mma.sync.m8n8k4` with f16 inputs (sm_70's): four independent 8x8x4
    /// MMAs, one per quad-pair (lanes 4q..4q+3 and 16+4q..16+4q+3), with
    /// A column-major or B row-major when asked.
    QuadPair {
        a_col: bool,
        b_row: bool,
    },
    Wmma,
}

impl FragLayout {
    /// Independent MMAs one instruction computes.
    pub(crate) fn batches(self) -> u32 {
        match self {
            FragLayout::QuadPair { .. } => 4,
            _ => 1,
        }
    }
}

/// Single-bit MMA operation (`.xor.popc` / `.and.popc`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum BitOp {
    Xor,
    And,
}

/// A warp-wide matrix multiply-accumulate: D = A * B + C, A m x k, B k x n.
#[derive(Debug, Clone)]
pub(crate) struct MmaOp {
    pub(crate) shape: [u32; 3],
    pub(crate) layout: FragLayout,
    /// Element types of A, B, C, D.
    pub(crate) ty: [El; 4],
    pub(crate) sat: bool,
    pub(crate) bop: BitOp,
    pub(crate) a: Vec<R>,
    pub(crate) b: Vec<R>,
    pub(crate) c: Vec<R>,
    pub(crate) d: Vec<R>,
}

/// `wmma.load.{a,b,c}` / `wmma.store.d`: one fragment between registers
/// and a matrix in memory at `base + off`, `stride` elements between rows
/// (columns when `col`), [`NONE`] for the default.
#[derive(Debug, Clone)]
pub(crate) struct WmmaMem {
    pub(crate) store: bool,
    pub(crate) frag: Frag,
    pub(crate) shape: [u32; 3],
    pub(crate) el: El,
    pub(crate) col: bool,
    pub(crate) sp: Msp,
    pub(crate) base: R,
    pub(crate) off: i64,
    pub(crate) stride: R,
    pub(crate) regs: Vec<R>,
}

/// Rows and columns of fragment `f`'s matrix for an m x n x k MMA.
pub(crate) fn frag_dims(f: Frag, [m, n, k]: [u32; 3]) -> (u32, u32) {
    match f {
        Frag::A => (m, k),
        Frag::B => (k, n),
        Frag::C => (m, n),
    }
}

/// One operand's fragments: how `nregs` registers of `el` per lane hold
/// matrix `f` of an MMA of `shape`.
#[derive(Debug, Clone, Copy)]
pub(crate) struct FragSpec {
    pub(crate) layout: FragLayout,
    pub(crate) f: Frag,
    pub(crate) shape: [u32; 3],
    pub(crate) el: El,
    pub(crate) nregs: u32,
}

impl FragSpec {
    /// Row-major index in the matrix (in batch `q` of a quad-pair layout:
    /// plus q·rows·cols) of element `j` of register `reg` of `lane`.
    ///
    /// `Mma`: the PTX ISA's layouts. With groupID g = lane / 4 and
    /// t = lane % 4, p elements a register: A rows g (+8 for odd registers
    /// when m = 16), columns t*p + j in blocks of 4p; B columns g, rows
    /// t*p + j in blocks of 4p; accumulators rows g (+8 for elements 2, 3),
    /// columns 2t + (e & 1).
    /// `Wmma`: lane by lane, register by register, the elements of the
    /// matrix in row-major order, wrapping around when the fragments hold
    /// more than the matrix (f16 A and B fragments hold every element twice).
    /// `QuadPair`: with t = lane % 4, h = 4 for lanes 16..32, element
    /// i = reg·p + j: A (t + h, i) (column-major: (i + h, t)), B (i, t + h)
    /// (row-major: (t, i + h)), f16 accumulators (t + h, i), f32 ones
    /// ((lane & 1) + (i & 2) + h, (i & 4) + (lane & 2) + (i & 1)).
    pub(crate) fn index(&self, lane: u32, reg: u32, j: u32) -> usize {
        let (rows, cols) = frag_dims(self.f, self.shape);
        let p = self.el.per_reg();
        let (row, col) = match self.layout {
            FragLayout::QuadPair { a_col, b_row } => {
                let (q, t, h, i) = ((lane % 16) / 4, lane % 4, (lane / 16) * 4, reg * p + j);
                let (row, col) = match self.f {
                    Frag::A if a_col => (i + h, t),
                    Frag::A => (t + h, i),
                    Frag::B if b_row => (t, i + h),
                    Frag::B => (i, t + h),
                    Frag::C if p == 2 => (t + h, i),
                    Frag::C => ((lane & 1) + (i & 2) + h, (i & 4) + (lane & 2) + (i & 1)),
                };
                return (q * rows * cols + row * cols + col) as usize;
            }
            FragLayout::Wmma => {
                let e = lane * self.nregs * p + reg * p + j;
                let i = e % (rows * cols);
                (i / cols, i % cols)
            }
            FragLayout::Mma => {
                let (g, t) = (lane >> 2, lane & 3);
                match self.f {
                    Frag::A if rows == 16 => (g + 8 * (reg & 1), t * p + j + 4 * p * (reg >> 1)),
                    Frag::A => (g, t * p + j + 4 * p * reg),
                    Frag::B => (t * p + j + 4 * p * reg, g),
                    Frag::C => {
                        let e = reg * p + j;
                        (g + 8 * (e >> 1), 2 * t + (e & 1))
                    }
                }
            }
        };
        (row * cols + col) as usize
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum CarryKind {
    Add,
    Sub,
    MadLo,
    MadHi,
}

/// One instruction: an operation and its guard (`NONE`, or a predicate slot
/// with `GUARD_NEG` when negated).
#[derive(Debug, Clone)]
pub(crate) struct Inst {
    pub(crate) op: Op,
    pub(crate) guard: u32,
}

/// What a call site calls.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Callee {
    Func(u32),
    /// Through a function pointer in this register (`call %rd, (...),
    /// prototype;`): a function's address is `FUNC_ADDR_TAG | index << 4`.
    Indirect(R),
    Vprintf,
    AssertFail,
    Malloc,
    Free,
    /// A function of the device runtime that launches kernels from kernels
    /// (dynamic parallelism), run by the interpreter itself.
    DevRt(DevRt),
}

/// The device runtime's launch functions (`__cudaCDP2*` in CUDA 12 and
/// later, `cuda*` before).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum DevRt {
    /// `cudaGetParameterBufferV2(func, grid, block, shared)`.
    GetParameterBuffer,
    /// `cudaLaunchDeviceV2(buffer, stream)`.
    LaunchDevice,
    /// `cudaStreamCreateWithFlags(&stream, flags)`.
    StreamCreate,
    /// `cudaStreamDestroy(stream)`.
    StreamDestroy,
    /// `cudaGetLastError()`: the calling thread's last launch error, reset.
    GetLastError,
    /// `cudaPeekAtLastError()`: the same, kept.
    PeekAtLastError,
    /// `cudaMemcpyAsync(dst, src, count, kind, stream)`.
    MemcpyAsync,
    /// `cudaMemsetAsync(dst, value, count, stream)`.
    MemsetAsync,
    /// `cudaGetErrorString(error)`: the message, in the device heap.
    GetErrorString,
    /// `cudaGraphSetConditional(handle, value)`: rcud's conditional handle
    /// is the device address of the condition, a `u32` the server reads
    /// when the graph reaches the conditional node.
    GraphSetConditional,
}

impl DevRt {
    pub(crate) fn from_name(name: &str) -> Option<Self> {
        let name = name.strip_prefix("__cudaCDP2").map_or(name, |n| n);
        let name = name.strip_prefix("cuda").unwrap_or(name);
        Some(match name {
            "GetParameterBufferV2" => DevRt::GetParameterBuffer,
            "LaunchDeviceV2" => DevRt::LaunchDevice,
            "StreamCreateWithFlags" => DevRt::StreamCreate,
            "StreamDestroy" => DevRt::StreamDestroy,
            "GetLastError" => DevRt::GetLastError,
            "PeekAtLastError" => DevRt::PeekAtLastError,
            "MemcpyAsync" | "MemcpyAsync_ptsz" => DevRt::MemcpyAsync,
            "MemsetAsync" | "MemsetAsync_ptsz" => DevRt::MemsetAsync,
            "GetErrorString" => DevRt::GetErrorString,
            "GraphSetConditional" => DevRt::GraphSetConditional,
            _ => return None,
        })
    }
}

/// The high bits of a function's address: no memory access can use it.
pub(crate) const FUNC_ADDR_TAG: u64 = 0xF000_0000_0000_0000;

/// The function whose address is `addr`, if it is one.
pub(crate) fn func_of_addr(addr: u64) -> Option<u32> {
    if addr & FUNC_ADDR_TAG != FUNC_ADDR_TAG || addr & 0xF != 0 {
        return None;
    }
    u32::try_from((addr & !FUNC_ADDR_TAG) >> 4).ok()
}

/// A call site: frame offsets and sizes of its argument and return
/// variables in the caller's frame.
#[derive(Debug, Clone)]
pub(crate) struct CallSite {
    pub(crate) callee: Callee,
    pub(crate) args: Vec<(u32, u32)>,
    pub(crate) rets: Vec<(u32, u32)>,
}

/// A value a constant slot holds: an immediate, or a symbol's address
/// plus an addend, resolved at launch.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum ConstVal {
    Imm(u64),
    Sym(u32, i64),
}

/// Source position of an instruction, for error messages.
#[derive(Debug, Clone, Copy)]
pub(crate) struct SrcPos {
    pub(crate) line: u32,
    /// Index into the module's opcode strings.
    pub(crate) opcode: u32,
}

/// A translated function.
#[derive(Debug, Clone, Default)]
pub(crate) struct Function {
    pub(crate) name: String,
    pub(crate) is_entry: bool,
    pub(crate) code: Vec<Inst>,
    pub(crate) src: Vec<SrcPos>,
    pub(crate) nslots: u32,
    pub(crate) npreds: u32,
    pub(crate) consts: Vec<(R, ConstVal)>,
    /// Bytes of this function's frame in local memory.
    pub(crate) frame_size: u32,
    /// Frame offsets and sizes of the formal parameters (functions) or
    /// parameter-buffer offsets and sizes (kernels).
    pub(crate) params: Vec<(u32, u32)>,
    pub(crate) rets: Vec<(u32, u32)>,
    pub(crate) calls: Vec<CallSite>,
    /// Module symbols this function's code refers to.
    pub(crate) syms: Vec<u32>,
    pub(crate) maxntid: Option<[u32; 3]>,
    pub(crate) reqntid: Option<[u32; 3]>,
}

impl Function {
    /// Estimated heap bytes of the function's IR and tables.
    pub(crate) fn heap_bytes(&self) -> u64 {
        use super::limits::{str_bytes, vec_bytes};
        let sites: u64 = self
            .calls
            .iter()
            .map(|c| vec_bytes::<(u32, u32)>(c.args.capacity() + c.rets.capacity()))
            .sum();
        str_bytes(&self.name)
            + vec_bytes::<Inst>(self.code.capacity())
            + vec_bytes::<SrcPos>(self.src.capacity())
            + vec_bytes::<(R, ConstVal)>(self.consts.capacity())
            + vec_bytes::<(u32, u32)>(self.params.capacity() + self.rets.capacity())
            + vec_bytes::<CallSite>(self.calls.capacity())
            + sites
            + vec_bytes::<u32>(self.syms.capacity())
            + std::mem::size_of::<Function>() as u64
    }
}
