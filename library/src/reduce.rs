//! Host side of `kernels::reduce`: the sum of f32 values as the classic reduction ladder, and
//! the moments (count, NaN count, mean, M2, min, max) of the values inside a window, each in
//! one launch. [`Reducer`] is what the source-finding pipeline calls; the registry family
//! `reduce` runs every step on the same values and checks each against the CPU reference
//! beside it.

use crate::gpu::{
    blocks, refuse, require, require_aligned, require_apart, require_len, CudaContext, DeviceArray, Gpu, GpuResult,
    KernelArgs, LaunchConfig, Params, Readback, Span,
};
use crate::stats;
use cust::memory::{DeviceBuffer, DeviceSlice};
use cust::stream::Stream;
use interface::reduce::{
    finish_tickets, grid_stride_blocks, BLOCK, BLOCKS_PER_SM, MOMENTS_BLOCKS_PER_SM, MOMENTS_FIELDS,
};
use interface::window::Window;
use ndarray::{ArrayView, Dimension};
use rayon::prelude::*;

crate::variants! {
    /// The steps of the ladder, and the moments.
    pub enum Step {
        /// Shared-memory tree, neighbours first (divergent).
        Interleaved => ("interleaved", "reduce_interleaved"),
        /// Shared-memory tree folded in halves.
        Sequential => ("sequential", "reduce_sequential"),
        /// Two values per thread, added during the load.
        FirstAdd => ("first_add", "reduce_first_add"),
        /// Warp shuffles instead of the shared tree.
        Shuffle => ("shuffle", "reduce_shuffle"),
        /// 16-byte grid-stride loads, one partial per block.
        Vec4 => ("vec4", "reduce_vec4"),
        /// Count, NaN count, mean, M2, min and max of the values inside the window.
        Moments => ("moments", "reduce_moments"),
    }
}

impl Step {
    /// Blocks of this step's launch over `n` values; `grid` for the grid-stride kernels.
    pub fn blocks(self, kernel: &str, n: usize, grid: u32) -> GpuResult<u32> {
        match self {
            Step::Interleaved | Step::Sequential => blocks(n, BLOCK),
            Step::FirstAdd | Step::Shuffle => blocks(n, 2 * BLOCK),
            Step::Vec4 | Step::Moments if grid == 0 => Err(refuse(kernel, "the grid needs at least 1 block")),
            Step::Vec4 | Step::Moments => Ok(grid),
        }
    }

    /// f64 each block writes to the partials.
    pub fn partial_fields(self) -> usize {
        if self == Step::Moments {
            MOMENTS_FIELDS
        } else {
            1
        }
    }

    /// Whether this step computes the sum: every step but [`Step::Moments`].
    pub fn is_sum(self) -> bool {
        self != Step::Moments
    }
}

/// f64 per element of the result: the sum, or the moments' fields.
fn result_fields(step: Step) -> usize {
    if step.is_sum() {
        1
    } else {
        MOMENTS_FIELDS
    }
}

/// What every reduction kernel writes besides its result: a partial per block and the tickets
/// that find the last blocks (`kernels/src/reduce/mod.rs`).
#[derive(Clone, Copy)]
pub struct Scratch<'a> {
    /// One partial per block: an f64 for the sum kernels, `MOMENTS_FIELDS` for the moments.
    pub partials: &'a DeviceSlice<f64>,
    /// `u32`s at 0 (the sum kernels take `finish_tickets(grid)` of them, the moments one): the
    /// kernels leave them at 0, and [`ScratchBuffers`] allocates them zeroed. Other values give
    /// a wrong result, never an access out of bounds.
    pub tickets: &'a DeviceSlice<u32>,
    /// The result: the sum in `result[0]`, or the moments' `MOMENTS_FIELDS` fields.
    pub result: &'a DeviceSlice<f64>,
}

impl Scratch<'_> {
    /// `values` non-empty, the scratch long enough for `grid` blocks of `step`, and no two of
    /// the four buffers overlapping; 16-byte aligned values for the kernels that load quads.
    fn check(&self, kernel: &str, step: Step, values: &DeviceSlice<f32>, grid: u32) -> GpuResult<()> {
        let n = values.len();
        if n == 0 {
            return Err(refuse(kernel, "there are no values to reduce"));
        }
        // The moments' counts travel as f64, exact below 2^53.
        if n as u64 >= 1 << 53 {
            return Err(refuse(kernel, format!("{n} values are more than an f64 counts exactly")));
        }
        let partials = grid as usize * step.partial_fields();
        let tickets = if step.is_sum() { finish_tickets(grid as usize) } else { 1 };
        let result = result_fields(step);
        require_len(kernel, "the partials", self.partials, partials)?;
        require_len(kernel, "the tickets", self.tickets, tickets)?;
        require_len(kernel, "the result", self.result, result)?;
        let written = [
            Span::of("the partials", self.partials, partials),
            Span::of("the tickets", self.tickets, tickets),
            Span::of("the result", self.result, result),
        ];
        require_apart(kernel, &written, &[Span::of("the values", values, n)])?;
        if matches!(step, Step::Vec4 | Step::Moments) {
            require_aligned(kernel, "the values", values, 16)?;
        }
        Ok(())
    }
}

/// The arguments of the sum kernels (every step but the moments): `values` summed into
/// `scratch.result[0]`. Steps 1 to 4 launch a block per `BLOCK` or `2·BLOCK` values; `grid` is
/// the block count of `reduce_vec4`, whose loop is grid-stride.
pub struct ReduceArgs<'a> {
    /// The values summed.
    pub values: &'a DeviceSlice<f32>,
    /// The partials, tickets and result.
    pub scratch: Scratch<'a>,
    /// The blocks of `reduce_vec4`'s grid-stride launch; steps 1 to 4 take one block per
    /// `BLOCK` or `2·BLOCK` values instead.
    pub grid: u32,
}

// SAFETY: the kernels read `values`, write one f64 per block to `partials`, draw from the
// tickets and write the sum to `result[0]`: the checks above give the lengths (a partial per
// block of the launch returned here, `finish_tickets` of its grid), a 16-byte aligned start
// for `reduce_vec4`, and no two buffers overlapping. Blocks are one-dimensional of `BLOCK`
// threads, the size of the kernels' shared trees; steps 1 to 4 get one block per `BLOCK` (or
// `2·BLOCK`) values, as their index arithmetic assumes. The parameters are `values: &[f32],
// partials: *mut f64, tickets: *mut u32, sum: *mut f64`.
unsafe impl KernelArgs for ReduceArgs<'_> {
    fn checked_config(&self, kernel: &str) -> GpuResult<LaunchConfig> {
        let step = Step::named(kernel)?;
        if !step.is_sum() {
            return Err(refuse(kernel, "it takes a window: launch it with MomentsArgs"));
        }
        let grid = step.blocks(kernel, self.values.len(), self.grid)?;
        self.scratch.check(kernel, step, self.values, grid)?;
        Ok(LaunchConfig { grid: (grid, 1, 1), block: (BLOCK as u32, 1, 1), shared_bytes: 0 })
    }

    fn params(&self, _kernel: &str) -> Params {
        let Scratch { partials, tickets, result } = self.scratch;
        Params::new().slice(self.values).pointer(partials).pointer(tickets).pointer(result)
    }
}

/// The arguments of `reduce_moments`: the moments of the `values` inside `window`, written to
/// `scratch.result[..MOMENTS_FIELDS]` by `grid` blocks.
pub struct MomentsArgs<'a> {
    /// The values (16-byte aligned, fewer than 2^53).
    pub values: &'a DeviceSlice<f32>,
    /// The values that count: `low < v < high`; neither bound may be NaN.
    pub window: Window,
    /// The partials, ticket and result.
    pub scratch: Scratch<'a>,
    /// The blocks of the grid-stride launch, at least 1.
    pub grid: u32,
}

// SAFETY: as for `ReduceArgs`, with `MOMENTS_FIELDS` f64 per block in `partials` and in
// `result`, values 16-byte aligned and fewer than 2^53 (the counts travel as f64), and bounds
// that are not NaN. The loop is grid-stride, so any grid of at least one block of `BLOCK`
// threads is correct. The parameters are `values: &[f32], low: f64, high: f64, partials: *mut
// f64, ticket: *mut u32, result: *mut f64`.
unsafe impl KernelArgs for MomentsArgs<'_> {
    fn checked_config(&self, kernel: &str) -> GpuResult<LaunchConfig> {
        if Step::named(kernel)? != Step::Moments {
            return Err(refuse(kernel, "it takes no window: launch it with ReduceArgs"));
        }
        if self.window.low.is_nan() || self.window.high.is_nan() {
            return Err(refuse(kernel, "a window bound is NaN"));
        }
        let grid = Step::Moments.blocks(kernel, self.values.len(), self.grid)?;
        self.scratch.check(kernel, Step::Moments, self.values, grid)?;
        LaunchConfig::grid_stride(0, 0, BLOCK as u32, grid)
    }

    fn params(&self, _kernel: &str) -> Params {
        let Scratch { partials, tickets, result } = self.scratch;
        Params::new()
            .slice(self.values)
            .value(self.window.low)
            .value(self.window.high)
            .pointer(partials)
            .pointer(tickets)
            .pointer(result)
    }
}

/// The buffers behind a [`Scratch`], the tickets allocated at 0.
pub struct ScratchBuffers {
    partials: DeviceBuffer<f64>,
    tickets: DeviceBuffer<u32>,
    /// What the last kernel wrote (the sum, or the moments' fields), for work queued after it.
    pub result: DeviceBuffer<f64>,
    readback: Readback<f64>,
}

impl ScratchBuffers {
    /// Room for `partials` f64 partials and a result of `MOMENTS_FIELDS`.
    pub fn new(gpu: &Gpu, partials: usize) -> GpuResult<Self> {
        gpu.ensure_fits("reduction partials", 8 * partials as u64)?;
        let partials = DeviceBuffer::<f64>::zeroed(partials.max(1)).during("allocating reduction partials")?;
        // Enough for the sum kernels' grid of up to `partials` blocks, and for the moments' one.
        let tickets =
            DeviceBuffer::<u32>::zeroed(finish_tickets(partials.len())).during("allocating the reduction tickets")?;
        let result = DeviceBuffer::<f64>::zeroed(MOMENTS_FIELDS).during("allocating the reduction result")?;
        Ok(Self { partials, tickets, result, readback: Readback::new(MOMENTS_FIELDS)? })
    }

    /// The buffers as the kernels' arguments take them.
    pub fn scratch(&self) -> Scratch<'_> {
        Scratch { partials: &self.partials, tickets: &self.tickets, result: &self.result }
    }

    /// The first `N` f64 of the result, once `stream` (where the kernel ran) gets there.
    pub fn read<const N: usize>(&self, stream: &Stream) -> GpuResult<[f64; N]> {
        self.readback.read("the reduction", stream, &self.result)
    }
}

// The moments of the values inside a window: one definition, with their fields in the result
// and Chan's merge, for the kernel and the host.
pub use interface::reduce::Moments;

/// Sums and moments of f32 values on the GPU, one launch and one small copy back each; the
/// scratch is allocated once, for values of up to `n` elements.
pub struct Reducer {
    sum_grid: u32,
    moments_grid: u32,
    buffers: ScratchBuffers,
}

impl Reducer {
    /// A reducer for up to `n` values (its grids are sized for `n`; more are still reduced
    /// correctly, by fewer threads than they could use).
    pub fn new(gpu: &Gpu, n: usize) -> GpuResult<Self> {
        require(n >= 1, || "a reduction needs at least 1 value".into())?;
        let sms = gpu.sms() as usize;
        let grid = |per_sm| grid_stride_blocks(n, sms, per_sm) as u32;
        let (sum_grid, moments_grid) = (grid(BLOCKS_PER_SM), grid(MOMENTS_BLOCKS_PER_SM));
        let partials = (sum_grid as usize).max(moments_grid as usize * MOMENTS_FIELDS);
        Ok(Self { sum_grid, moments_grid, buffers: ScratchBuffers::new(gpu, partials)? })
    }

    /// Σ values (NaN if any is), accumulated as `reduce_vec4` documents.
    pub fn sum(&self, gpu: &Gpu, values: &DeviceSlice<f32>) -> GpuResult<f64> {
        let args = ReduceArgs { values, scratch: self.buffers.scratch(), grid: self.sum_grid };
        // SAFETY: the read below waits for the kernel before `values` or `self` can go.
        unsafe { gpu.launch(Step::Vec4.kernel(), &args) }?;
        Ok(self.buffers.read::<1>(gpu.stream())?[0])
    }

    /// The moments of the `values` inside `window`.
    pub fn moments(&self, gpu: &Gpu, values: &DeviceSlice<f32>, window: Window) -> GpuResult<Moments> {
        // SAFETY: the read below waits for the kernel before `values` or `self` can go.
        unsafe { self.launch_moments(gpu, gpu.stream(), values, window) }?;
        self.read_moments(gpu.stream())
    }

    /// Launches [`Reducer::moments`] on `stream` without waiting: other work can run beside it
    /// or queue behind it before [`Reducer::read_moments`] waits for it.
    ///
    /// # Safety
    /// Queued, not finished, on return: `values` and the reducer must stay allocated until
    /// `stream` has run it (see [`Gpu::launch`]).
    pub unsafe fn launch_moments(
        &self,
        gpu: &Gpu,
        stream: &Stream,
        values: &DeviceSlice<f32>,
        window: Window,
    ) -> GpuResult<()> {
        let args = MomentsArgs { values, window, scratch: self.buffers.scratch(), grid: self.moments_grid };
        // SAFETY: the caller keeps `values` and `self` alive until `stream` has run the kernel.
        unsafe { gpu.launch_on(stream, Step::Moments.kernel(), &args) }
    }

    /// The moments the last launch wrote, once `stream`, where it ran, gets there.
    pub fn read_moments(&self, stream: &Stream) -> GpuResult<Moments> {
        Ok(Moments::from_fields(self.buffers.read::<MOMENTS_FIELDS>(stream)?))
    }
}

/// Σ values in f64, chunk by chunk as the source-finding statistics sum: the CPU reference.
pub fn cpu_sum(values: &[f32]) -> f64 {
    stats::sum(values, f64::from)
}

/// The moments of the `values` inside `window`, with the CPU statistics' two-pass mean and M2.
pub fn cpu_moments(values: &[f32], window: Window) -> Moments {
    let members: Vec<f32> = values.par_iter().copied().filter(|&v| window.contains(v)).collect();
    let nan = values.par_iter().filter(|v| v.is_nan()).count() as u64;
    let (mean, m2) = stats::mean_and_m2(&members).unwrap_or((0.0, 0.0));
    let (min, max) = members
        .par_iter()
        .fold(|| (f32::INFINITY, f32::NEG_INFINITY), |(lo, hi), &v| (lo.min(v), hi.max(v)))
        .reduce(|| (f32::INFINITY, f32::NEG_INFINITY), |a, b| (a.0.min(b.0), a.1.max(b.1)));
    Moments { count: members.len() as u64, nan, mean, m2, min, max }
}

/// The GPU sum's tolerance over values whose absolute values add up to `magnitude`. Each value
/// passes through at most 9 f32 additions (steps 1 to 4: the first add and a tree of
/// `log2(BLOCK)` levels, or 5 + 3 shuffle levels; step 5: 2), each rounding by at most
/// `ε/2` of what it adds; everything after that is f64.
pub fn sum_tolerance(magnitude: f64) -> f64 {
    (9.0 * f32::EPSILON as f64 + 1e-12) * magnitude
}

/// The moments' tolerance, relative: both sides accumulate in f64 (the GPU merging shifted
/// sums, the CPU in two passes), so they agree to about 1e-13 on these sizes; an f32
/// accumulation anywhere would miss by 1e-4.
pub const MOMENTS_RELATIVE: f64 = 1e-9;

/// Each field's error in units of its tolerance: counts, min and max exact, the mean relative
/// to its size and the spread, M2 relative to itself.
pub fn moments_errors(gpu: &Moments, cpu: &Moments) -> [f64; 6] {
    let exact = |a: f64, b: f64| if a == b { 0.0 } else { f64::INFINITY };
    let spread = cpu.std().unwrap_or(0.0);
    let scale = |size: f64| MOMENTS_RELATIVE * size + f64::MIN_POSITIVE;
    [
        exact(gpu.count as f64, cpu.count as f64),
        exact(gpu.nan as f64, cpu.nan as f64),
        (gpu.mean - cpu.mean).abs() / scale(cpu.mean.abs() + spread),
        (gpu.m2 - cpu.m2).abs() / scale(cpu.m2),
        exact(gpu.min as f64, cpu.min as f64),
        exact(gpu.max as f64, cpu.max as f64),
    ]
}

/// An error unless there are values to reduce: at least one, and fewer than 2^53 (the moments'
/// counts travel as f64, exact below that). `function` prefixes the message.
fn check_values(function: &str, n: usize) -> GpuResult<()> {
    require(n > 0, || format!("{function}: the values are empty"))?;
    require((n as u64) < 1 << 53, || format!("{function}: {n} values; fewer than 2^53 are counted exactly"))
}

/// An error unless both bounds of `window` are numbers: a NaN bound keeps nothing (NaN compares
/// false), and comes from a mistake upstream, such as a κσ window around the median of no
/// values. `function` prefixes the message. The typed APIs of reduce, select and compact
/// check their windows with it.
pub(crate) fn check_window(function: &str, window: Window) -> GpuResult<()> {
    require(!window.low.is_nan() && !window.high.is_nan(), || {
        format!("{function}: the window ({}, {}) has a NaN bound", window.low, window.high)
    })
}

/// The sum of f32 `values` on `gpu`, in f64, by the ladder's last step ([`Step::Vec4`], what
/// [`Reducer::sum`] launches): each run of four values `a, b, c, d` is added as the f32 tree
/// `(a + b) + (c + d)`, and everything after that (the last `n mod 4` values, each thread's
/// running sum, the blocks' partials) in f64. So each value is rounded by at most two f32
/// additions: the result lies within about `ε·Σ|v|` (ε = `f32::EPSILON`) of the exact sum, and
/// always within [`sum_tolerance`]`(Σ|v|)` of it (that bound, `9ε·Σ|v|`, covers every step of
/// the ladder) and of [`cpu_sum`]. No atomics add values: on one GPU the same values give the
/// same sum. NaN if any value is NaN; an infinity as IEEE addition gives it (NaN for +∞ and −∞).
///
/// Any shape: the elements are summed whatever their dimension. Checked before anything runs:
/// the values are not empty (an error, not 0) and live on `gpu`.
///
/// Synchronous: it waits for the kernel and returns the sum.
///
/// ```
/// # fn main() -> cuda_kernels::GpuResult<()> {
/// use cuda_kernels::reduce::{cpu_sum, sum, sum_tolerance};
/// use cuda_kernels::DeviceArray;
///
/// let Some(gpu) = cuda_kernels::gpu::doctest_gpu()? else { return Ok(()) };
/// let values = cuda_kernels::data::random_f32(100_003, 1);
/// let total = sum(&gpu, &DeviceArray::from_slice(&gpu, &values)?)?;
/// let magnitude: f64 = values.iter().map(|v| f64::from(v.abs())).sum();
/// assert!((total - cpu_sum(&values)).abs() <= sum_tolerance(magnitude));
/// // Small integers add exactly.
/// let integers: Vec<f32> = (1..=1001).map(|i| i as f32).collect();
/// assert_eq!(sum(&gpu, &DeviceArray::from_slice(&gpu, &integers)?)?, 501_501.0);
/// # Ok(())
/// # }
/// ```
pub fn sum<D: Dimension>(gpu: &Gpu, values: &DeviceArray<f32, D>) -> GpuResult<f64> {
    check_values("sum", values.len())?;
    gpu.bind()?;
    let slice = values.slice(gpu)?;
    let reducer = Reducer::new(gpu, values.len())?;
    let sum = reducer.sum(gpu, slice)?;
    values.record_use(gpu)?;
    Ok(sum)
}

/// The moments of the f32 `values` inside `window` on `gpu`, in one pass ([`Step::Moments`],
/// what [`Reducer::moments`] launches): `count`, the values `v` with `low < v < high` (compared
/// in f64; NaN and the infinities lie in no window, [`Window::FINITE`] holds every finite
/// value); `nan`, the NaN values among all of them; and over the values inside, `mean`, `m2`
/// (`Σ(v − mean)²`, so `np.std` of them is `sqrt(m2 / count)`, [`Moments::std`]), `min` and
/// `max`. A window that holds none gives count 0, mean and M2 0, min +∞ and max −∞ (and the NaN
/// count). Every field is accumulated in f64 (shifted sums per thread, Chan's merge across
/// threads and blocks): counts, min and max are exact, mean and M2 agree with [`cpu_moments`]'s
/// two passes to [`MOMENTS_RELATIVE`] as [`moments_errors`] measures.
///
/// Any shape: the elements are reduced whatever their dimension. Checked before anything runs:
/// the values are not empty, neither window bound is NaN, and the values live on `gpu`.
///
/// Synchronous: it waits for the kernel and returns the moments.
///
/// ```
/// # fn main() -> cuda_kernels::GpuResult<()> {
/// use cuda_kernels::reduce::{cpu_moments, moments, moments_errors};
/// use cuda_kernels::{DeviceArray, Window};
///
/// let Some(gpu) = cuda_kernels::gpu::doctest_gpu()? else { return Ok(()) };
/// let mut values = cuda_kernels::data::random_normal(100_003, 2);
/// values[17] = f32::NAN;
/// let device_values = DeviceArray::from_slice(&gpu, &values)?;
/// let window = Window::new(-3.0, 3.0);
/// let found = moments(&gpu, &device_values, window)?;
/// let expected = cpu_moments(&values, window);
/// assert_eq!((found.count, found.nan), (expected.count, 1));
/// assert!(moments_errors(&found, &expected).iter().all(|&e| e <= 1.0), "{found:?} vs {expected:?}");
/// # Ok(())
/// # }
/// ```
pub fn moments<D: Dimension>(gpu: &Gpu, values: &DeviceArray<f32, D>, window: Window) -> GpuResult<Moments> {
    check_values("moments", values.len())?;
    check_window("moments", window)?;
    gpu.bind()?;
    let slice = values.slice(gpu)?;
    let reducer = Reducer::new(gpu, values.len())?;
    // SAFETY: `values` records the kernel, and the read below waits for it before the reducer
    // goes.
    unsafe { reducer.launch_moments(gpu, gpu.stream(), slice, window) }?;
    values.record_use(gpu)?;
    reducer.read_moments(gpu.stream())
}

/// The sum of the elements of `values` (any dimension, any memory layout), computed on `gpu`:
/// copies them to the GPU and runs [`sum`], with its accuracy ([`sum_tolerance`]). Empty values
/// are an error.
///
/// ```
/// # fn main() -> cuda_kernels::GpuResult<()> {
/// use cuda_kernels::reduce::{cpu_sum, sum_array, sum_tolerance};
/// use ndarray::Array2;
///
/// let Some(gpu) = cuda_kernels::gpu::doctest_gpu()? else { return Ok(()) };
/// let image = Array2::from_shape_fn((67, 131), |(r, c)| ((r * 31 + c * 17) % 101) as f32 / 100.0 - 0.5);
/// let total = sum_array(&gpu, image.view())?;
/// let values = image.as_slice().unwrap();
/// let magnitude: f64 = values.iter().map(|v| f64::from(v.abs())).sum();
/// assert!((total - cpu_sum(values)).abs() <= sum_tolerance(magnitude));
/// // A transposed view holds the same elements, so the same sum to the tolerance.
/// assert!((sum_array(&gpu, image.t())? - total).abs() <= 2.0 * sum_tolerance(magnitude));
/// # Ok(())
/// # }
/// ```
pub fn sum_array<D: Dimension>(gpu: &Gpu, values: ArrayView<f32, D>) -> GpuResult<f64> {
    check_values("sum", values.len())?;
    sum(gpu, &DeviceArray::from_array(gpu, values)?)
}

/// The moments of the elements of `values` (any dimension, any memory layout) inside `window`,
/// computed on `gpu`: copies them to the GPU and runs [`moments`]. Empty values or a NaN window
/// bound are an error.
///
/// ```
/// # fn main() -> cuda_kernels::GpuResult<()> {
/// use cuda_kernels::reduce::{cpu_moments, moments_array, moments_errors};
/// use cuda_kernels::Window;
/// use ndarray::Array2;
///
/// let Some(gpu) = cuda_kernels::gpu::doctest_gpu()? else { return Ok(()) };
/// let noise = cuda_kernels::data::random_normal(61 * 83, 3);
/// let image = Array2::from_shape_vec((61, 83), noise.clone()).unwrap();
/// let found = moments_array(&gpu, image.view(), Window::FINITE)?;
/// let expected = cpu_moments(&noise, Window::FINITE);
/// assert_eq!((found.count, found.nan, found.min, found.max), (5063, 0, expected.min, expected.max));
/// assert!(moments_errors(&found, &expected).iter().all(|&e| e <= 1.0));
/// # Ok(())
/// # }
/// ```
pub fn moments_array<D: Dimension>(gpu: &Gpu, values: ArrayView<f32, D>, window: Window) -> GpuResult<Moments> {
    check_values("moments", values.len())?;
    check_window("moments", window)?;
    moments(gpu, &DeviceArray::from_array(gpu, values)?, window)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_kernels_merge_of_two_parts_gives_the_moments_of_the_whole() {
        let values: Vec<f32> = (0..1000).map(|i| 1000.0 + ((i * 37) % 101) as f32 * 0.25).chain([f32::NAN]).collect();
        let window = Window::new(1001.0, 1020.0);
        let whole = cpu_moments(&values, window);
        for split in [1, 300, 999] {
            let (left, right) = values.split_at(split);
            let merged = cpu_moments(left, window).merge(cpu_moments(right, window), f64::mul_add);
            let errors = moments_errors(&merged, &whole);
            assert!(errors.iter().all(|&e| e <= 1.0), "split at {split}: {merged:?} vs {whole:?}: {errors:?}");
        }
        // An empty side changes nothing, exactly.
        assert_eq!(whole.merge(Moments::EMPTY, f64::mul_add), whole);
        assert_eq!(Moments::EMPTY.merge(whole, f64::mul_add), whole);
        assert_eq!(Moments::from_fields(whole.fields()), whole);
    }

    #[test]
    fn api_inputs_are_checked() {
        assert!(check_values("sum", 1).is_ok());
        assert!(check_values("sum", (1 << 53) - 1).is_ok());
        let message = check_values("sum", 0).unwrap_err().to_string();
        assert!(message.contains("sum: the values are empty"), "{message}");
        let message = check_values("moments", 1 << 53).unwrap_err().to_string();
        assert!(message.contains("moments: 9007199254740992 values; fewer than 2^53"), "{message}");
        for window in [Window::FINITE, Window::new(1.0, -1.0), Window::new(0.5, 0.5)] {
            assert!(check_window("moments", window).is_ok(), "{window:?}");
        }
        let message = check_window("moments", Window::new(f64::NAN, 1.0)).unwrap_err().to_string();
        assert!(message.contains("moments: the window (NaN, 1) has a NaN bound"), "{message}");
        let message = check_window("compact", Window::new(-0.5, f64::NAN)).unwrap_err().to_string();
        assert!(message.contains("compact: the window (-0.5, NaN) has a NaN bound"), "{message}");
    }
}
