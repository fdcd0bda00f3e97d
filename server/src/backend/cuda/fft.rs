//! cuFFT calls on a real GPU, through NVIDIA's library opened on the first
//! plan ([`FftLibrary`]).
//!
//! The wire's plans are ids the server hands out (`cufftCreate`); the real
//! plan is made when the client gives one its geometry (`cufftMakePlan*`),
//! with the same checks as the emulated device (`Geometry::check`). Before
//! an execution the input and output extents of every transform, computed
//! from that geometry as the client and the emulated device compute them
//! (`Geometry::layouts`), are checked against the client's own
//! allocations; a range outside them is `cudaErrorIllegalAddress`, as on
//! the emulated device, and never reaches cuFFT.

use std::collections::BTreeMap;

use rcud_cuda_driver::cufft::{self as nv, AdvancedLayout, ExecKind, FftError, PlanShape};
use rcud_math::Reply;
use rcud_proto::math::fft::{status, Call, Geometry, Kind, Layout, FORWARD, INVERSE};
use rcud_proto::ops::Failure;
use rcud_proto::CudaError;

use super::library::LazyLibrary;
use super::CudaDeviceContext;

/// NVIDIA's cuFFT, opened on first use and shared by every client.
pub(super) type FftLibrary = LazyLibrary<nv::Fft>;

/// One wire plan: made (`Some`) once it has a geometry.
#[derive(Debug)]
struct Plan {
    made: Option<(Geometry, Kind, nv::FftPlan)>,
}

/// The cuFFT plans of one client context, by wire id.
#[derive(Debug, Default)]
pub(super) struct FftPlans {
    plans: BTreeMap<u32, Plan>,
    next: u32,
}

impl FftPlans {
    /// Destroys every plan (before the context goes).
    pub(super) fn clear(&mut self) {
        self.plans.clear();
    }

    /// A new id: a positive C `int`, as `cufftHandle` is, skipping live ones.
    fn fresh_id(&mut self) -> Option<u32> {
        for _ in 0..=self.plans.len() {
            let id = if self.next == 0 || self.next >= i32::MAX as u32 {
                1
            } else {
                self.next
            };
            self.next = id + 1;
            if !self.plans.contains_key(&id) {
                return Some(id);
            }
        }
        None
    }
}

/// The arguments of `cufftMakePlanMany64` for a checked geometry.
fn shape(geometry: &Geometry) -> PlanShape {
    PlanShape {
        kind: geometry.kind,
        n: geometry.n.clone(),
        batch: geometry.batch,
        advanced: geometry.advanced.as_ref().map(|a| AdvancedLayout {
            inembed: a.inembed.clone(),
            istride: a.istride,
            idist: a.idist,
            onembed: a.onembed.clone(),
            ostride: a.ostride,
            odist: a.odist,
        }),
    }
}

/// The entry point for an execution of a plan of type `kind`, or the
/// `cufftResult` the emulated device answers for a bad direction.
fn exec_kind(kind: Kind, direction: i32) -> Result<ExecKind, i32> {
    let double = kind.is_double();
    Ok(match kind {
        Kind::R2C | Kind::D2Z => ExecKind::RealToComplex { double },
        Kind::C2R | Kind::Z2D => ExecKind::ComplexToReal { double },
        Kind::C2C | Kind::Z2Z if direction == FORWARD || direction == INVERSE => {
            ExecKind::Complex { double, direction }
        }
        Kind::C2C | Kind::Z2Z => return Err(status::INVALID_VALUE),
    })
}

/// The bytes one side of an execution touches from `ptr`.
fn extent(layout: &Layout) -> u64 {
    // `Geometry::check` made sure every extent fits in 64 bits.
    layout.extent_bytes().unwrap_or(u64::MAX)
}

impl CudaDeviceContext {
    /// Runs one cuFFT call (the library's calls on the `cuda` backend).
    pub(super) fn fft_call(&mut self, call: Call) -> Result<Reply, Failure> {
        match call {
            Call::Create {} => {
                // Opened here, so that a server without cuFFT says so at
                // the application's first cuFFT call.
                self.fft_library.get()?;
                Ok(match self.fft.fresh_id() {
                    Some(id) => {
                        self.fft.plans.insert(id, Plan { made: None });
                        Reply::ok(id.to_le_bytes().to_vec())
                    }
                    None => Reply::status(status::INTERNAL_ERROR),
                })
            }
            Call::Destroy { plan } => Ok(Reply::status(match self.fft.plans.remove(&plan) {
                Some(_) => status::SUCCESS,
                None => status::INVALID_PLAN,
            })),
            Call::MakePlan { plan, geometry } => self.fft_make_plan(plan, geometry),
            Call::Exec {
                plan,
                kind,
                input,
                output,
                direction,
            } => self.fft_exec(plan, kind, [input, output], direction),
        }
    }

    fn fft_make_plan(&mut self, plan: u32, geometry: Geometry) -> Result<Reply, Failure> {
        if !self.fft.plans.contains_key(&plan) {
            return Ok(Reply::status(status::INVALID_PLAN));
        }
        let kind = match geometry.check() {
            Ok(kind) => kind,
            Err(result) => return Ok(Reply::status(result)),
        };
        let library = self.fft_library.clone();
        let fft = library.get()?;
        let ctx = self.live()?.clone();
        // A plan given a new geometry is made again (the old one goes first).
        if let Some(p) = self.fft.plans.get_mut(&plan) {
            p.made = None;
        }
        match ctx.fft_plan(fft, &shape(&geometry)) {
            Ok(made) => {
                if let Some(p) = self.fft.plans.get_mut(&plan) {
                    p.made = Some((geometry, kind, made));
                }
                Ok(Reply::status(status::SUCCESS))
            }
            Err(e) => self.fft_failed(e),
        }
    }

    fn fft_exec(
        &mut self,
        plan: u32,
        kind: i32,
        [input, output]: [u64; 2],
        direction: i32,
    ) -> Result<Reply, Failure> {
        let Some(Plan {
            made: Some((geometry, plan_kind, _)),
        }) = self.fft.plans.get(&plan)
        else {
            return Ok(Reply::status(status::INVALID_PLAN));
        };
        let plan_kind = *plan_kind;
        if Kind::from_raw(kind) != Some(plan_kind) {
            return Ok(Reply::status(status::INVALID_TYPE));
        }
        let exec = match exec_kind(plan_kind, direction) {
            Ok(exec) => exec,
            Err(result) => return Ok(Reply::status(result)),
        };
        if input == 0 || output == 0 {
            return Ok(Reply::status(status::INVALID_VALUE));
        }
        let Some((in_layout, out_layout)) = geometry.layouts(input == output) else {
            return Ok(Reply::status(status::INVALID_PLAN));
        };
        for (what, ptr, layout) in [
            ("input", input, &in_layout),
            ("output", output, &out_layout),
        ] {
            let len = extent(layout);
            if self.memory.check(ptr, len).is_err() {
                return Err(Failure::new(
                    CudaError::ILLEGAL_ADDRESS,
                    format!(
                        "cuFFT {what}: {len} bytes at {ptr:#x} are outside the client's device memory"
                    ),
                ));
            }
        }
        self.live()?;
        let Some(Plan {
            made: Some((_, _, made)),
        }) = self.fft.plans.get_mut(&plan)
        else {
            return Ok(Reply::status(status::INVALID_PLAN));
        };
        match made.exec(exec, input, output) {
            Ok(()) => Ok(Reply::status(status::SUCCESS)),
            Err(e) => self.fft_failed(e),
        }
    }

    /// cuFFT's own result goes back to the application; a driver failure
    /// (the context broken) is the runtime's error.
    fn fft_failed(&mut self, e: FftError) -> Result<Reply, Failure> {
        match e {
            FftError::Status { call, status } => {
                tracing::debug!("{call}: cufftResult {status}");
                Ok(Reply::status(status))
            }
            FftError::Driver(e) => Err(self.note(&e)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn executions_pick_the_entry_point_of_the_plans_type() {
        assert_eq!(
            exec_kind(Kind::Z2Z, INVERSE),
            Ok(ExecKind::Complex {
                double: true,
                direction: INVERSE
            })
        );
        assert_eq!(
            exec_kind(Kind::R2C, 0),
            Ok(ExecKind::RealToComplex { double: false })
        );
        assert_eq!(
            exec_kind(Kind::Z2D, FORWARD),
            Ok(ExecKind::ComplexToReal { double: true })
        );
        assert_eq!(exec_kind(Kind::C2C, 7), Err(status::INVALID_VALUE));
    }

    #[test]
    fn plan_ids_are_positive_ints_and_skip_live_ones() {
        let mut plans = FftPlans::default();
        let first = plans.fresh_id().unwrap();
        assert_eq!(first, 1);
        plans.plans.insert(first, Plan { made: None });
        plans.next = 1;
        assert_eq!(plans.fresh_id(), Some(2));
        plans.next = i32::MAX as u32;
        assert_eq!(plans.fresh_id(), Some(2), "wraps to 1, which is live");
    }
}
