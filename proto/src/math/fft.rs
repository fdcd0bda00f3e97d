//! cuFFT calls on the wire, and the geometry of a plan: which elements of
//! device memory a transform reads and writes. The client uses the geometry
//! to check the application's pointers before queueing an execution, the
//! server to gather and scatter the data; one definition keeps them agreed.

/// `cufftResult` values.
pub mod status {
    /// `CUFFT_SUCCESS`.
    pub const SUCCESS: i32 = 0;
    /// `CUFFT_INVALID_PLAN`: an unknown or destroyed plan, or one not made.
    pub const INVALID_PLAN: i32 = 1;
    /// `CUFFT_INVALID_TYPE`: an unknown `cufftType`, or an execution
    /// function of another type than the plan's.
    pub const INVALID_TYPE: i32 = 3;
    /// `CUFFT_INVALID_VALUE`: a bad pointer, direction, rank or layout
    /// argument.
    pub const INVALID_VALUE: i32 = 4;
    /// `CUFFT_INTERNAL_ERROR`.
    pub const INTERNAL_ERROR: i32 = 5;
    /// `CUFFT_EXEC_FAILED`.
    pub const EXEC_FAILED: i32 = 6;
    /// `CUFFT_INVALID_SIZE`: a bad transform size or batch count.
    pub const INVALID_SIZE: i32 = 8;
    /// `CUFFT_NOT_SUPPORTED`.
    pub const NOT_SUPPORTED: i32 = 16;
}

/// `CUFFT_FORWARD`: the exponent's sign of a forward transform.
pub const FORWARD: i32 = -1;
/// `CUFFT_INVERSE`.
pub const INVERSE: i32 = 1;

/// A transform type (`cufftType`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// `CUFFT_R2C`: real f32 to complex f32, forward.
    R2C,
    /// `CUFFT_C2R`: complex f32 to real f32, inverse.
    C2R,
    /// `CUFFT_C2C`: complex f32, either direction.
    C2C,
    /// `CUFFT_D2Z`: real f64 to complex f64, forward.
    D2Z,
    /// `CUFFT_Z2D`: complex f64 to real f64, inverse.
    Z2D,
    /// `CUFFT_Z2Z`: complex f64, either direction.
    Z2Z,
}

impl Kind {
    /// The type with `cufftType` value `raw`.
    pub fn from_raw(raw: i32) -> Option<Self> {
        Some(match raw {
            0x2a => Self::R2C,
            0x2c => Self::C2R,
            0x29 => Self::C2C,
            0x6a => Self::D2Z,
            0x6c => Self::Z2D,
            0x69 => Self::Z2Z,
            _ => return None,
        })
    }

    /// Its `cufftType` value.
    pub fn raw(self) -> i32 {
        match self {
            Self::R2C => 0x2a,
            Self::C2R => 0x2c,
            Self::C2C => 0x29,
            Self::D2Z => 0x6a,
            Self::Z2D => 0x6c,
            Self::Z2Z => 0x69,
        }
    }

    /// Whether it computes in f64.
    pub fn is_double(self) -> bool {
        matches!(self, Self::D2Z | Self::Z2D | Self::Z2Z)
    }

    /// Whether its input is real (R2C, D2Z).
    pub fn real_input(self) -> bool {
        matches!(self, Self::R2C | Self::D2Z)
    }

    /// Whether its output is real (C2R, Z2D).
    pub fn real_output(self) -> bool {
        matches!(self, Self::C2R | Self::Z2D)
    }

    fn real_bytes(self) -> u64 {
        if self.is_double() {
            8
        } else {
            4
        }
    }
}

crate::wire_struct! {
    /// The advanced data layout of `cufftPlanMany` (non-NULL `inembed` and
    /// `onembed`): element `x` of batch `b` is at
    /// `b * dist + stride * (x[rank-1] + embed[rank-1] * (x[rank-2] + ...))`;
    /// `embed[0]` only matters to the application.
    #[derive(Debug, Clone, PartialEq, Eq)]
    pub struct Advanced {
        /// The input array's dimensions (`embed` above).
        pub inembed: Vec<i64>,
        /// Elements between neighbours of the input's last dimension.
        pub istride: i64,
        /// Elements between the input's batches.
        pub idist: i64,
        /// The output array's dimensions.
        pub onembed: Vec<i64>,
        /// Elements between neighbours of the output's last dimension.
        pub ostride: i64,
        /// Elements between the output's batches.
        pub odist: i64,
    }
}

crate::wire_struct! {
    /// What a plan computes: `batch` transforms of type `kind` and sizes
    /// `n` (slowest dimension first), in the basic layout or an advanced one.
    #[derive(Debug, Clone, PartialEq, Eq)]
    pub struct Geometry {
        /// `cufftType`.
        pub kind: i32,
        /// Transform sizes, 1 to 3 of them.
        pub n: Vec<i64>,
        /// Number of transforms.
        pub batch: i64,
        /// `None`: the basic layout (contiguous, FFTW's padding for real
        /// data transformed in place).
        pub advanced: Option<Advanced>,
    }
}

/// Where one side (input or output) of a plan's transforms lies: element
/// `x` of batch `b` at `b * dist + sum(x[k] * strides[k])`, in elements of
/// `element_bytes`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Layout {
    /// Elements along each dimension (the last one halved plus one on the
    /// complex side of a real transform).
    pub counts: Vec<u64>,
    /// Elements between neighbours along each dimension.
    pub strides: Vec<u64>,
    /// Elements between the first elements of neighbouring batches.
    pub dist: u64,
    /// Number of transforms.
    pub batch: u64,
    /// Bytes of one element (a real or a complex number).
    pub element_bytes: u64,
}

impl Layout {
    /// Bytes from the first element to the end of the last, or `None` if
    /// that does not fit in 64 bits.
    pub fn extent_bytes(&self) -> Option<u64> {
        let mut last = (self.batch - 1).checked_mul(self.dist)?;
        for (&count, &stride) in self.counts.iter().zip(&self.strides) {
            last = last.checked_add((count - 1).checked_mul(stride)?)?;
        }
        last.checked_add(1)?.checked_mul(self.element_bytes)
    }

    /// Elements of one transform.
    pub fn elements(&self) -> u64 {
        self.counts.iter().product()
    }
}

/// Transform sizes, batch counts and layout values are capped so that every
/// offset computed from them fits in 64 bits with room to spare.
const MAX_VALUE: i64 = 1 << 40;

impl Geometry {
    /// The plan's type, if `kind` is a valid `cufftType`.
    pub fn kind(&self) -> Option<Kind> {
        Kind::from_raw(self.kind)
    }

    /// Checks the plan as `cufftMakePlan*` does, returning the
    /// `cufftResult` it fails with.
    pub fn check(&self) -> Result<Kind, i32> {
        let kind = self.kind().ok_or(status::INVALID_TYPE)?;
        if !(1..=3).contains(&self.n.len()) {
            return Err(status::INVALID_VALUE);
        }
        if self.n.iter().any(|&n| !(1..=MAX_VALUE).contains(&n))
            || !(1..=MAX_VALUE).contains(&self.batch)
        {
            return Err(status::INVALID_SIZE);
        }
        if let Some(a) = &self.advanced {
            let rank = self.n.len();
            // embed[0] bounds only the application's array; the rest give strides.
            let embed_ok = |embed: &[i64]| {
                embed.len() == rank && embed[1..].iter().all(|&e| (1..=MAX_VALUE).contains(&e))
            };
            if !embed_ok(&a.inembed)
                || !embed_ok(&a.onembed)
                || !(1..=MAX_VALUE).contains(&a.istride)
                || !(1..=MAX_VALUE).contains(&a.ostride)
                || !(0..=MAX_VALUE).contains(&a.idist)
                || !(0..=MAX_VALUE).contains(&a.odist)
            {
                return Err(status::INVALID_VALUE);
            }
        }
        // Both sides' extents must be computable.
        for in_place in [false, true] {
            let (input, output) = self.layouts_unchecked(kind, in_place);
            if input.extent_bytes().is_none() || output.extent_bytes().is_none() {
                return Err(status::INVALID_SIZE);
            }
        }
        Ok(kind)
    }

    /// The input and output layouts of an execution, in place (input and
    /// output pointers equal) or not; `None` if the geometry is invalid.
    pub fn layouts(&self, in_place: bool) -> Option<(Layout, Layout)> {
        let kind = self.check().ok()?;
        Some(self.layouts_unchecked(kind, in_place))
    }

    fn layouts_unchecked(&self, kind: Kind, in_place: bool) -> (Layout, Layout) {
        let n: Vec<u64> = self.n.iter().map(|&n| n as u64).collect();
        let rank = n.len();
        let last = n[rank - 1];
        let mut complex_counts = n.clone();
        if kind.real_input() || kind.real_output() {
            complex_counts[rank - 1] = last / 2 + 1;
        }
        let real = kind.real_bytes();
        let (in_counts, in_bytes, out_counts, out_bytes) = if kind.real_input() {
            (n.clone(), real, complex_counts.clone(), 2 * real)
        } else if kind.real_output() {
            (complex_counts.clone(), 2 * real, n.clone(), real)
        } else {
            (n.clone(), 2 * real, n.clone(), 2 * real)
        };
        let batch = self.batch as u64;
        let side = |counts: Vec<u64>, element_bytes: u64, embed: &[u64], stride: u64, dist| {
            let mut strides = vec![stride; rank];
            for k in (0..rank - 1).rev() {
                strides[k] = strides[k + 1].saturating_mul(embed[k + 1]);
            }
            Layout {
                counts,
                strides,
                dist,
                batch,
                element_bytes,
            }
        };
        match &self.advanced {
            Some(a) => {
                let embed = |e: &[i64]| e.iter().map(|&e| e.max(0) as u64).collect::<Vec<_>>();
                (
                    side(
                        in_counts,
                        in_bytes,
                        &embed(&a.inembed),
                        a.istride as u64,
                        a.idist as u64,
                    ),
                    side(
                        out_counts,
                        out_bytes,
                        &embed(&a.onembed),
                        a.ostride as u64,
                        a.odist as u64,
                    ),
                )
            }
            None => {
                // The basic layout: contiguous, except that real data
                // transformed in place is padded to a whole number of
                // complex elements along the last dimension (FFTW's layout).
                let mut in_embed = in_counts.clone();
                let mut out_embed = out_counts.clone();
                if in_place && kind.real_input() {
                    in_embed[rank - 1] = 2 * (last / 2 + 1);
                }
                if in_place && kind.real_output() {
                    out_embed[rank - 1] = 2 * (last / 2 + 1);
                }
                let in_dist = in_embed.iter().fold(1u64, |a, &e| a.saturating_mul(e));
                let out_dist = out_embed.iter().fold(1u64, |a, &e| a.saturating_mul(e));
                (
                    side(in_counts, in_bytes, &in_embed, 1, in_dist),
                    side(out_counts, out_bytes, &out_embed, 1, out_dist),
                )
            }
        }
    }
}

crate::wire_enum! {
    /// A cuFFT call.
    #[derive(Debug, Clone, PartialEq)]
    pub enum Call {
        /// `cufftCreate`; answers the new plan's id (u32).
        1 Create {},
        /// `cufftDestroy`.
        2 Destroy { plan: u32 },
        /// `cufftMakePlan*`: gives the plan its geometry.
        3 MakePlan { plan: u32, geometry: Geometry },
        /// `cufftExec*`, queued on the plan's stream: `kind` is the type
        /// the execution function is for, `direction` `FORWARD` or
        /// `INVERSE`.
        4 Exec { plan: u32, kind: i32, input: u64, output: u64, direction: i32 },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn geometry(kind: Kind, n: &[i64], batch: i64) -> Geometry {
        Geometry {
            kind: kind.raw(),
            n: n.to_vec(),
            batch,
            advanced: None,
        }
    }

    #[test]
    fn basic_real_layouts_pad_in_place() {
        let g = geometry(Kind::R2C, &[3, 8], 2);
        let (input, output) = g.layouts(false).expect("valid");
        assert_eq!(input.strides, vec![8, 1]);
        assert_eq!(input.dist, 24);
        assert_eq!(input.extent_bytes(), Some(48 * 4));
        assert_eq!(output.counts, vec![3, 5]);
        assert_eq!(output.dist, 15);
        assert_eq!(output.extent_bytes(), Some(30 * 8));
        let (input, output) = g.layouts(true).expect("valid");
        assert_eq!(input.strides, vec![10, 1]);
        assert_eq!(input.dist, 30);
        assert_eq!(input.extent_bytes(), Some((30 + 2 * 10 + 8) * 4));
        assert_eq!(output.dist, 15);
        let (input, output) = geometry(Kind::Z2D, &[7], 1).layouts(true).expect("valid");
        assert_eq!(input.counts, vec![4]);
        assert_eq!(output.counts, vec![7]);
        assert_eq!(output.dist, 8);
    }

    #[test]
    fn advanced_layout_strides() {
        let mut g = geometry(Kind::C2C, &[4, 5], 3);
        g.advanced = Some(Advanced {
            inembed: vec![0, 7],
            istride: 2,
            idist: -1,
            onembed: vec![4, 5],
            ostride: 1,
            odist: 20,
        });
        assert_eq!(g.check(), Err(status::INVALID_VALUE));
        g.advanced.as_mut().expect("set").idist = 100;
        let (input, output) = g.layouts(false).expect("valid");
        assert_eq!(input.strides, vec![14, 2]);
        assert_eq!(input.extent_bytes(), Some((200 + 3 * 14 + 4 * 2 + 1) * 8));
        assert_eq!(output.strides, vec![5, 1]);
    }

    #[test]
    fn bad_plans() {
        // A bad rank is an invalid value, as cuFFT 12 answers it.
        assert_eq!(
            geometry(Kind::C2C, &[], 1).check(),
            Err(status::INVALID_VALUE)
        );
        assert_eq!(
            geometry(Kind::C2C, &[1, 1, 1, 1], 1).check(),
            Err(status::INVALID_VALUE)
        );
        assert_eq!(
            geometry(Kind::C2C, &[0], 1).check(),
            Err(status::INVALID_SIZE)
        );
        assert_eq!(
            geometry(Kind::C2C, &[8], 0).check(),
            Err(status::INVALID_SIZE)
        );
        let mut g = geometry(Kind::C2C, &[8], 1);
        g.kind = 7;
        assert_eq!(g.check(), Err(status::INVALID_TYPE));
        assert_eq!(
            geometry(Kind::Z2Z, &[MAX_VALUE, MAX_VALUE], MAX_VALUE).check(),
            Err(status::INVALID_SIZE)
        );
    }
}
