//! Host side of `kernels::reduce`: the sum of f32 values as the classic reduction ladder, and
//! the moments (count, NaN count, mean, M2, min, max) of the values inside a window, each in
//! one launch. [`Reducer`] is what the source-finding pipeline calls; the registry family
//! `reduce` runs every step on the same values and checks each against the CPU reference
//! beside it.

use crate::gpu::{
    blocks, refuse, require, require_aligned, require_disjoint, require_len, CudaContext, Gpu, GpuResult, KernelArgs,
    LaunchConfig, Params, Readback,
};
use crate::stats;
use cust::memory::{DeviceBuffer, DeviceSlice};
use cust::stream::Stream;
use interface::reduce::{
    finish_tickets, grid_stride_blocks, BLOCK, BLOCKS_PER_SM, MOMENTS_BLOCKS_PER_SM, MOMENTS_FIELDS,
};
use interface::window::Window;
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
    pub partials: &'a DeviceSlice<f64>,
    /// `u32`s at 0 (the sum kernels take `finish_tickets(grid)` of them, the moments one): the
    /// kernels leave them at 0, and [`ScratchBuffers`] allocates them zeroed. Other values give
    /// a wrong result, never an access out of bounds.
    pub tickets: &'a DeviceSlice<u32>,
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
        let values = ("the values", values, n);
        let (partials, ticket, result) = (
            ("the partials", self.partials, partials),
            ("the tickets", self.tickets, tickets),
            ("the result", self.result, result),
        );
        require_disjoint(kernel, partials, values)?;
        require_disjoint(kernel, ticket, values)?;
        require_disjoint(kernel, result, values)?;
        require_disjoint(kernel, ticket, partials)?;
        require_disjoint(kernel, result, partials)?;
        require_disjoint(kernel, result, ticket)?;
        if matches!(step, Step::Vec4 | Step::Moments) {
            require_aligned(kernel, "the values", values.1, 16)?;
        }
        Ok(())
    }
}

/// The arguments of the sum kernels (every step but the moments): `values` summed into
/// `scratch.result[0]`. Steps 1 to 4 launch a block per `BLOCK` or `2·BLOCK` values; `grid` is
/// the block count of `reduce_vec4`, whose loop is grid-stride.
pub struct ReduceArgs<'a> {
    pub values: &'a DeviceSlice<f32>,
    pub scratch: Scratch<'a>,
    pub grid: u32,
}

// SAFETY: the kernels read `values`, write one f64 per block to `partials`, draw from the
// tickets and write the sum to `result[0]`: the checks above give the lengths (a partial per
// block of the launch returned here, `finish_tickets` of its grid), a 16-byte aligned start for `reduce_vec4`, and no two
// buffers overlapping. Blocks are one-dimensional of `BLOCK` threads, the size of the kernels'
// shared trees; steps 1 to 4 get one block per `BLOCK` (or `2·BLOCK`) values, as their index
// arithmetic assumes. The parameters are `values: &[f32], partials: *mut f64, tickets: *mut u32,
// sum: *mut f64`.
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
    pub values: &'a DeviceSlice<f32>,
    pub window: Window,
    pub scratch: Scratch<'a>,
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
        let sms = gpu.info().multiprocessors as usize;
        let grid = |per_sm| grid_stride_blocks(n, sms, per_sm) as u32;
        let (sum_grid, moments_grid) = (grid(BLOCKS_PER_SM), grid(MOMENTS_BLOCKS_PER_SM));
        let partials = (sum_grid as usize).max(moments_grid as usize * MOMENTS_FIELDS);
        Ok(Self { sum_grid, moments_grid, buffers: ScratchBuffers::new(gpu, partials)? })
    }

    /// Σ values (NaN if any is), accumulated as `reduce_vec4` documents.
    pub fn sum(&self, gpu: &Gpu, values: &DeviceSlice<f32>) -> GpuResult<f64> {
        let args = ReduceArgs { values, scratch: self.buffers.scratch(), grid: self.sum_grid };
        gpu.launch(Step::Vec4.kernel(), &args)?;
        Ok(self.buffers.read::<1>(gpu.stream())?[0])
    }

    /// The moments of the `values` inside `window`.
    pub fn moments(&self, gpu: &Gpu, values: &DeviceSlice<f32>, window: Window) -> GpuResult<Moments> {
        self.launch_moments(gpu, gpu.stream(), values, window)?;
        self.read_moments(gpu.stream())
    }

    /// Launches [`Reducer::moments`] on `stream` without waiting: other work can run beside it
    /// or queue behind it before [`Reducer::read_moments`] waits for it.
    pub fn launch_moments(
        &self,
        gpu: &Gpu,
        stream: &Stream,
        values: &DeviceSlice<f32>,
        window: Window,
    ) -> GpuResult<()> {
        let args = MomentsArgs { values, window, scratch: self.buffers.scratch(), grid: self.moments_grid };
        gpu.launch_on(stream, Step::Moments.kernel(), &args)
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
}
