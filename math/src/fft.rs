//! cuFFT on the CPU, with rustfft (complex transforms of any length) and
//! realfft (the real-to-complex and complex-to-real ones).
//!
//! A plan is its [`Geometry`]. An execution gathers the input from device
//! memory through the plan's input [`Layout`] into a contiguous buffer,
//! transforms it one dimension at a time, and scatters the result through
//! the output layout. Transforms are unnormalized, the forward one with the
//! exponent's sign -1, as cuFFT's.

use std::collections::HashMap;

use rcud_proto::math::fft::{status, Call, Geometry, Kind, Layout, FORWARD, INVERSE};
use realfft::RealFftPlanner;
use rustfft::num_complex::Complex;
use rustfft::{FftDirection, FftNum, FftPlanner};

use crate::{DeviceMemory, MathError, Reply};

/// Elements one execution may hold in its working buffer: beyond what the
/// emulated device's memory could hold, so only a degenerate layout (many
/// transforms overlapping in a small array) reaches it.
const MAX_WORK_ELEMENTS: u64 = 1 << 31;

/// The cuFFT plans of one client context.
pub struct State {
    /// Plans by id; `None` until `cufftMakePlan*` gave one its geometry.
    plans: HashMap<u32, Option<Geometry>>,
    next_id: u32,
    single: Planners<f32>,
    double: Planners<f64>,
}

impl Default for State {
    fn default() -> Self {
        Self {
            plans: HashMap::new(),
            next_id: 1,
            single: Planners::default(),
            double: Planners::default(),
        }
    }
}

/// rustfft's and realfft's planners, which keep the FFTs they planned.
struct Planners<T: FftNum> {
    complex: FftPlanner<T>,
    real: RealFftPlanner<T>,
}

impl<T: FftNum> Default for Planners<T> {
    fn default() -> Self {
        Self {
            complex: FftPlanner::new(),
            real: RealFftPlanner::new(),
        }
    }
}

impl State {
    /// Runs one cuFFT call.
    pub fn call(&mut self, memory: &mut dyn DeviceMemory, call: Call) -> Result<Reply, MathError> {
        match call {
            Call::Create {} => Ok(self.create()),
            Call::Destroy { plan } => Ok(Reply::status(match self.plans.remove(&plan) {
                Some(_) => status::SUCCESS,
                None => status::INVALID_PLAN,
            })),
            Call::MakePlan { plan, geometry } => {
                let Some(slot) = self.plans.get_mut(&plan) else {
                    return Ok(Reply::status(status::INVALID_PLAN));
                };
                Ok(Reply::status(match geometry.check() {
                    Ok(_) => {
                        *slot = Some(geometry);
                        status::SUCCESS
                    }
                    Err(status) => status,
                }))
            }
            Call::Exec {
                plan,
                kind,
                input,
                output,
                direction,
            } => self.exec(memory, plan, kind, input, output, direction),
        }
    }

    fn create(&mut self) -> Reply {
        // cufftHandle is a C int: ids stay positive ints, skipping live ones.
        for _ in 0..=self.plans.len() {
            let id = self.next_id;
            self.next_id = if id >= i32::MAX as u32 { 1 } else { id + 1 };
            if let std::collections::hash_map::Entry::Vacant(slot) = self.plans.entry(id) {
                slot.insert(None);
                return Reply::ok(id.to_le_bytes().to_vec());
            }
        }
        Reply::status(status::INTERNAL_ERROR)
    }

    fn exec(
        &mut self,
        memory: &mut dyn DeviceMemory,
        plan: u32,
        kind: i32,
        input: u64,
        output: u64,
        direction: i32,
    ) -> Result<Reply, MathError> {
        let Some(Some(geometry)) = self.plans.get(&plan) else {
            return Ok(Reply::status(status::INVALID_PLAN));
        };
        let Ok(plan_kind) = geometry.check() else {
            return Ok(Reply::status(status::INVALID_PLAN));
        };
        if Kind::from_raw(kind) != Some(plan_kind) {
            return Ok(Reply::status(status::INVALID_TYPE));
        }
        let direction = match (plan_kind, direction) {
            (Kind::R2C | Kind::D2Z, _) => FftDirection::Forward,
            (Kind::C2R | Kind::Z2D, _) => FftDirection::Inverse,
            (_, FORWARD) => FftDirection::Forward,
            (_, INVERSE) => FftDirection::Inverse,
            _ => return Ok(Reply::status(status::INVALID_VALUE)),
        };
        if input == 0 || output == 0 {
            return Ok(Reply::status(status::INVALID_VALUE));
        }
        let Some((in_layout, out_layout)) = geometry.layouts(input == output) else {
            return Ok(Reply::status(status::INVALID_PLAN));
        };
        let work = in_layout
            .batch
            .saturating_mul(in_layout.elements().max(out_layout.elements()));
        if work > MAX_WORK_ELEMENTS {
            tracing::warn!(
                work,
                "cuFFT execution needs more working memory than rcud allows"
            );
            return Ok(Reply::status(status::EXEC_FAILED));
        }
        let transform = Transform {
            kind: plan_kind,
            direction,
            input: &in_layout,
            output: &out_layout,
            input_ptr: input,
            output_ptr: output,
        };
        if plan_kind.is_double() {
            transform.run(memory, &mut self.double)?;
        } else {
            transform.run(memory, &mut self.single)?;
        }
        Ok(Reply::status(status::SUCCESS))
    }
}

/// A real type cuFFT computes in, as stored in device memory.
trait Real: FftNum {
    const BYTES: usize;
    fn load(bytes: &[u8]) -> Self;
    fn store(self, bytes: &mut [u8]);
}

impl Real for f32 {
    const BYTES: usize = 4;
    fn load(bytes: &[u8]) -> Self {
        let mut raw = [0; 4];
        raw.copy_from_slice(&bytes[..4]);
        f32::from_le_bytes(raw)
    }
    fn store(self, bytes: &mut [u8]) {
        bytes[..4].copy_from_slice(&self.to_le_bytes());
    }
}

impl Real for f64 {
    const BYTES: usize = 8;
    fn load(bytes: &[u8]) -> Self {
        let mut raw = [0; 8];
        raw.copy_from_slice(&bytes[..8]);
        f64::from_le_bytes(raw)
    }
    fn store(self, bytes: &mut [u8]) {
        bytes[..8].copy_from_slice(&self.to_le_bytes());
    }
}

/// Calls `f(i, offset)` for each element of `layout`, `i` counting them in
/// row-major order (batch outermost) and `offset` in bytes from the start.
fn for_each_offset(layout: &Layout, mut f: impl FnMut(usize, usize)) {
    let rank = layout.counts.len();
    let elements = layout.elements() as usize;
    let mut index = vec![0u64; rank];
    let mut i = 0;
    for b in 0..layout.batch {
        index.iter_mut().for_each(|x| *x = 0);
        for _ in 0..elements {
            let element = b * layout.dist
                + index
                    .iter()
                    .zip(&layout.strides)
                    .map(|(x, stride)| x * stride)
                    .sum::<u64>();
            f(i, (element * layout.element_bytes) as usize);
            i += 1;
            for k in (0..rank).rev() {
                index[k] += 1;
                if index[k] < layout.counts[k] {
                    break;
                }
                index[k] = 0;
            }
        }
    }
}

/// One execution of a checked plan.
struct Transform<'a> {
    kind: Kind,
    direction: FftDirection,
    input: &'a Layout,
    output: &'a Layout,
    input_ptr: u64,
    output_ptr: u64,
}

impl Transform<'_> {
    fn run<T: Real>(
        &self,
        memory: &mut dyn DeviceMemory,
        planners: &mut Planners<T>,
    ) -> Result<(), MathError> {
        let in_extent = self.input.extent_bytes().unwrap_or(u64::MAX);
        let out_extent = self.output.extent_bytes().unwrap_or(u64::MAX);
        // The whole input is read before anything is written: in-place
        // transforms need no care.
        let source = memory.read(self.input_ptr, in_extent)?;
        let dims = |layout: &Layout| {
            layout
                .counts
                .iter()
                .map(|&c| c as usize)
                .collect::<Vec<_>>()
        };
        let n = if self.kind.real_input() {
            dims(self.input)
        } else {
            dims(self.output)
        };
        let rank = n.len();
        let mut target = memory.read(self.output_ptr, out_extent)?.to_vec();
        if self.kind.real_input() {
            let mut real =
                vec![T::zero(); self.input.batch as usize * self.input.elements() as usize];
            for_each_offset(self.input, |i, at| real[i] = T::load(&source[at..]));
            let mut spectrum = r2c(planners, &real, n[rank - 1]);
            let half = dims(self.output);
            fft_axes(
                &mut planners.complex,
                &mut spectrum,
                &half,
                rank - 1,
                self.direction,
            );
            store_complex(self.output, &spectrum, &mut target);
        } else {
            let mut data = load_complex::<T>(self.input, source);
            let complex_dims = dims(self.input);
            if self.kind.real_output() {
                fft_axes(
                    &mut planners.complex,
                    &mut data,
                    &complex_dims,
                    rank - 1,
                    self.direction,
                );
                let real = c2r(planners, &mut data, n[rank - 1]);
                for_each_offset(self.output, |i, at| real[i].store(&mut target[at..]));
            } else {
                fft_axes(
                    &mut planners.complex,
                    &mut data,
                    &complex_dims,
                    rank,
                    self.direction,
                );
                store_complex(self.output, &data, &mut target);
            }
        }
        memory.write(self.output_ptr, &target)?;
        Ok(())
    }
}

fn load_complex<T: Real>(layout: &Layout, source: &[u8]) -> Vec<Complex<T>> {
    let mut data = vec![
        Complex::new(T::zero(), T::zero());
        layout.batch as usize * layout.elements() as usize
    ];
    for_each_offset(layout, |i, at| {
        data[i] = Complex::new(T::load(&source[at..]), T::load(&source[at + T::BYTES..]));
    });
    data
}

fn store_complex<T: Real>(layout: &Layout, data: &[Complex<T>], target: &mut [u8]) {
    for_each_offset(layout, |i, at| {
        data[i].re.store(&mut target[at..]);
        data[i].im.store(&mut target[at + T::BYTES..]);
    });
}

/// Transforms `data` (transforms of dimensions `dims`, one after another)
/// along its first `axes` dimensions.
fn fft_axes<T: FftNum>(
    planner: &mut FftPlanner<T>,
    data: &mut [Complex<T>],
    dims: &[usize],
    axes: usize,
    direction: FftDirection,
) {
    for axis in 0..axes {
        let len = dims[axis];
        if len <= 1 {
            continue;
        }
        let fft = planner.plan_fft(len, direction);
        let inner: usize = dims[axis + 1..].iter().product();
        if inner == 1 {
            fft.process(data);
            continue;
        }
        // Lines along `axis` are `inner` apart: gather each block's lines
        // into contiguous rows, transform them together, scatter back.
        let mut rows = vec![Complex::new(T::zero(), T::zero()); len * inner];
        for block in data.chunks_exact_mut(len * inner) {
            for j in 0..len {
                for i in 0..inner {
                    rows[i * len + j] = block[j * inner + i];
                }
            }
            fft.process(&mut rows);
            for j in 0..len {
                for i in 0..inner {
                    block[j * inner + i] = rows[i * len + j];
                }
            }
        }
    }
}

/// Forward real-to-complex transforms of each row of `last` reals.
fn r2c<T: Real>(planners: &mut Planners<T>, real: &[T], last: usize) -> Vec<Complex<T>> {
    let half = last / 2 + 1;
    let rows = real.len() / last;
    let mut spectrum = vec![Complex::new(T::zero(), T::zero()); rows * half];
    let fft = planners.real.plan_fft_forward(last);
    let mut row_in = fft.make_input_vec();
    let mut scratch = fft.make_scratch_vec();
    for (row, out) in real.chunks_exact(last).zip(spectrum.chunks_exact_mut(half)) {
        row_in.copy_from_slice(row);
        // Only fails on buffers of the wrong length, which these are not.
        if let Err(e) = fft.process_with_scratch(&mut row_in, out, &mut scratch) {
            tracing::error!("realfft refused a buffer: {e}");
        }
    }
    spectrum
}

/// Inverse complex-to-real transforms of each row of `last / 2 + 1`
/// complex numbers, to `last` reals. The imaginary parts of the zero (and
/// for even `last` the last) frequency are ignored, as cuFFT does.
fn c2r<T: Real>(planners: &mut Planners<T>, spectrum: &mut [Complex<T>], last: usize) -> Vec<T> {
    let half = last / 2 + 1;
    let rows = spectrum.len() / half;
    let mut real = vec![T::zero(); rows * last];
    let fft = planners.real.plan_fft_inverse(last);
    let mut scratch = fft.make_scratch_vec();
    for (row, out) in spectrum
        .chunks_exact_mut(half)
        .zip(real.chunks_exact_mut(last))
    {
        row[0].im = T::zero();
        if last & 1 == 0 {
            row[half - 1].im = T::zero();
        }
        if let Err(e) = fft.process_with_scratch(row, out, &mut scratch) {
            tracing::error!("realfft refused a buffer: {e}");
        }
    }
    real
}

#[cfg(test)]
mod tests;
