//! cuRAND calls on the wire.
//!
//! Generators live on the server, named by the ids it hands out. A
//! generation call writes device memory (queued on the generator's stream)
//! or, for a host generator, answers the values in `out` (`ptr` 0).

crate::wire_enum! {
    /// A cuRAND call.
    #[derive(Debug, Clone, PartialEq)]
    pub enum Call {
        // Tag 0 was a placeholder, never sent.
        /// `curandCreateGenerator`: answers the new id (u64 LE).
        1 Create { rng_type: u32 },
        /// `curandDestroyGenerator`.
        2 Destroy { generator: u64 },
        /// `curandSetPseudoRandomGeneratorSeed`.
        3 SetSeed { generator: u64, seed: u64 },
        /// `curandSetGeneratorOffset`.
        4 SetOffset { generator: u64, offset: u64 },
        /// `curandSetGeneratorOrdering`.
        5 SetOrdering { generator: u64, ordering: u32 },
        /// `curandGenerate*`: `n` values of `distribution` (a [`Distribution`]
        /// as u32) at device address `ptr`, or answered in `out` when `ptr`
        /// is 0. `mean` and `stddev` are used by the normal distributions;
        /// `mean` is lambda for [`Distribution::Poisson`].
        6 Generate { generator: u64, distribution: u32, ptr: u64, n: u64, mean: f64, stddev: f64 },
        /// `curandSetQuasiRandomGeneratorDimensions`.
        7 SetDimensions { generator: u64, dimensions: u32 },
        /// `curandCreateGeneratorHost`: answers the new id (u64 LE). Its
        /// generations answer their values (`ptr` 0). A host generator is
        /// NVIDIA's CPU implementation, which differs from the device one
        /// in what it accepts (orderings) and in the last bits of normals.
        8 CreateHost { rng_type: u32 },
    }
}

/// What a [`Call::Generate`] produces.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u32)]
pub enum Distribution {
    /// `curandGenerate`: 32-bit words.
    Bits = 0,
    /// `curandGenerateUniform`.
    Uniform = 1,
    /// `curandGenerateUniformDouble`.
    UniformDouble = 2,
    /// `curandGenerateNormal`.
    Normal = 3,
    /// `curandGenerateNormalDouble`.
    NormalDouble = 4,
    /// `curandGenerateLogNormal`.
    LogNormal = 5,
    /// `curandGenerateLogNormalDouble`.
    LogNormalDouble = 6,
    /// `curandGenerateLongLong`: 64-bit words (Sobol64).
    LongLong = 7,
    /// `curandGeneratePoisson`: 32-bit counts, lambda in `mean`.
    Poisson = 8,
}

impl Distribution {
    /// The distribution with wire value `v`.
    pub fn from_wire(v: u32) -> Option<Self> {
        Some(match v {
            0 => Self::Bits,
            1 => Self::Uniform,
            2 => Self::UniformDouble,
            3 => Self::Normal,
            4 => Self::NormalDouble,
            5 => Self::LogNormal,
            6 => Self::LogNormalDouble,
            7 => Self::LongLong,
            8 => Self::Poisson,
            _ => return None,
        })
    }

    /// Bytes of one value.
    pub fn value_size(self) -> u64 {
        match self {
            Self::Bits | Self::Uniform | Self::Normal | Self::LogNormal | Self::Poisson => 4,
            Self::UniformDouble | Self::NormalDouble | Self::LogNormalDouble | Self::LongLong => 8,
        }
    }

    /// Whether values come in Box–Muller pairs (`n` must be even).
    pub fn is_pairwise(self) -> bool {
        matches!(
            self,
            Self::Normal | Self::NormalDouble | Self::LogNormal | Self::LogNormalDouble
        )
    }
}
