//! Host side of `kernels::select`: the exact k-th smallest f32 inside a window, and the median
//! as `np.median` defines it, by radix select ([`Selector`], which the source finder calls),
//! checked against the CPU: `select_nth_unstable_by(total_cmp)` for the k-th value and
//! `stats::median` for the median, over the values the window holds.

use crate::gpu::{
    refuse, require_aligned, require_disjoint, require_kernel, require_len, CudaContext, Gpu, GpuResult, KernelArgs,
    LaunchConfig, Params, Pending, Readback,
};
use crate::stats;
use cust::memory::{DeviceBuffer, DeviceSlice};
use interface::select::{
    blocks_for, value, COUNT_BLOCK, COUNT_BLOCKS_PER_SM, FIND_MEDIAN, FIND_MEDIAN_UNLESS_COUNT, FIND_RANK, GATHER_CAP,
    HISTOGRAM_LEN, PASSES, STATE_COUNT, STATE_EMPTY, STATE_PREFIX, STATE_WORDS,
};
use interface::window::Window;

pub const COUNT_KERNEL: &str = "select_count_vec4";

/// The radio noise of the source-finding lesson: σ in Jy/beam.
pub const NOISE_SIGMA: f32 = 0.0133;

/// How the random values are drawn.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Data {
    /// Uniform in [-1, 1).
    Uniform,
    /// Standard normal.
    Normal,
    /// Normal with σ = 0.0133, like a radio image's noise: a few top digits hold them all.
    Noise,
    /// Sixteen distinct values, each about n/16 times.
    Repeated,
}

crate::named!(Data { Uniform => "uniform", Normal => "normal", Noise => "noise", Repeated => "repeated" });

/// What a selection finds among the values inside its window.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Find {
    /// The value of this 0-based rank.
    Rank(u32),
    /// The median (`np.median`): the two middle ranks.
    Median,
    /// The median, unless the window holds exactly this many values: then only the count is
    /// wanted (a κσ round that clipped nothing), and the passes after the first stop early.
    MedianUnlessCount(u32),
}

impl Find {
    /// The kernel's `rank` and `find` arguments.
    fn words(self) -> (u32, u32) {
        match self {
            Find::Rank(rank) => (rank, FIND_RANK),
            Find::Median => (0, FIND_MEDIAN),
            Find::MedianUnlessCount(count) => (count, FIND_MEDIAN_UNLESS_COUNT),
        }
    }
}

/// The arguments of `select_count_vec4`: pass `pass` over `values` (those inside `window`),
/// the earlier passes' prefixes in `state`, counted into `histogram` by `grid` blocks, whose
/// last block then finds the bucket of what `find` asks and writes it to `state`; `gathered`
/// holds the second pass's gathering for the last.
pub struct SelectCountArgs<'a> {
    pub values: &'a DeviceSlice<f32>,
    pub window: Window,
    pub pass: u32,
    pub find: Find,
    pub state: &'a DeviceSlice<u32>,
    pub histogram: &'a DeviceSlice<u32>,
    pub gathered: &'a DeviceSlice<f32>,
    pub grid: u32,
}

// SAFETY: the kernel reads all of `values` (16-byte aligned, checked, for its quads), reads and
// writes the state's first STATE_WORDS words, adds to, reads and zeroes the histogram's first
// HISTOGRAM_LEN counters, and writes and reads at most GATHER_CAP values of `gathered` (16-byte
// aligned, checked): all checked to exist and to overlap nowhere. Its buckets stay below
// HISTOGRAM_LEN by construction (a slot's offset plus a masked digit), and its gathering stays
// below GATHER_CAP (each place is compared with it). Fewer than 2^32 values keep every count
// inside a u32. The block is COUNT_BLOCK threads (whole warps, which
// its loop needs; the find's scan takes that many) on any one-dimensional grid of at least
// one block. A stale ticket or histogram (not zero) gives a wrong answer, never an access out
// of bounds. Parameters: `values: &[f32], low: f64, high: f64, pass: u32, rank: u32,
// find_what: u32, state: *mut u32, histogram: *mut u32, gathered: *mut f32`.
unsafe impl KernelArgs for SelectCountArgs<'_> {
    fn checked_config(&self, kernel: &str) -> GpuResult<LaunchConfig> {
        require_kernel(kernel, &[COUNT_KERNEL], "select count")?;
        check_pass(kernel, self.pass)?;
        if u32::try_from(self.values.len()).is_err() {
            return Err(refuse(kernel, format!("{} values: the counts hold fewer than 2^32", self.values.len())));
        }
        require_aligned(kernel, "the values", self.values, 16)?;
        require_len(kernel, "the state", self.state, STATE_WORDS)?;
        require_len(kernel, "the histogram", self.histogram, HISTOGRAM_LEN)?;
        require_len(kernel, "the gathering", self.gathered, GATHER_CAP)?;
        require_aligned(kernel, "the gathering", self.gathered, 16)?;
        let values = ("the values", self.values, self.values.len());
        let histogram = ("the histogram", self.histogram, HISTOGRAM_LEN);
        let state = ("the state", self.state, STATE_WORDS);
        let gathered = ("the gathering", self.gathered, GATHER_CAP);
        require_disjoint(kernel, histogram, values)?;
        require_disjoint(kernel, histogram, state)?;
        require_disjoint(kernel, state, values)?;
        require_disjoint(kernel, gathered, values)?;
        require_disjoint(kernel, gathered, histogram)?;
        require_disjoint(kernel, gathered, state)?;
        if self.grid == 0 {
            return Err(refuse(kernel, "a grid needs at least one block"));
        }
        Ok(count_config(self.grid))
    }

    fn params(&self, _kernel: &str) -> Params {
        let (rank, find_what) = self.find.words();
        Params::new()
            .slice(self.values)
            .value(self.window.low)
            .value(self.window.high)
            .value(self.pass)
            .value(rank)
            .value(find_what)
            .pointer(self.state)
            .pointer(self.histogram)
            .pointer(self.gathered)
    }
}

fn check_pass(kernel: &str, pass: u32) -> GpuResult<()> {
    if (pass as usize) < PASSES {
        Ok(())
    } else {
        Err(refuse(kernel, format!("pass {pass} of {PASSES}")))
    }
}

pub fn count_config(grid: u32) -> LaunchConfig {
    LaunchConfig { grid: (grid, 1, 1), block: (COUNT_BLOCK as u32, 1, 1), shared_bytes: 0 }
}

/// `select_count_vec4`'s grid for `n` values on `sms` SMs: a batch of [`COUNT_QUADS`] quads
/// per thread up to [`COUNT_BLOCKS_PER_SM`] blocks per SM, whose threads then loop.
pub fn count_grid(n: usize, sms: u32) -> u32 {
    blocks_for(n).min(COUNT_BLOCKS_PER_SM * sms as usize) as u32
}

/// `np.median` of the values inside a window, and how many there were.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Median {
    /// The middle value, or for an even count the mean (in f64) of the two middle values.
    pub value: f64,
    pub count: u64,
}

/// Radix select on the GPU: its state, histogram and gathering, allocated once and reused by
/// every call.
/// A call launches the three passes (each ending with its find) on the GPU's stream, then
/// copies the few words of the state back.
pub struct Selector {
    pub state: DeviceBuffer<u32>,
    histogram: DeviceBuffer<u32>,
    gathered: DeviceBuffer<f32>,
    readback: Readback<u32>,
    sms: u32,
}

impl Selector {
    pub fn new(gpu: &Gpu) -> GpuResult<Self> {
        // Each find zeroes the bins it read, so they start and stay zero between calls.
        let histogram = DeviceBuffer::<u32>::zeroed(HISTOGRAM_LEN).during("allocating the select histogram")?;
        let state = DeviceBuffer::<u32>::zeroed(STATE_WORDS).during("allocating the select state")?;
        let gathered = DeviceBuffer::<f32>::zeroed(GATHER_CAP).during("allocating the select gathering")?;
        gpu.validate(COUNT_KERNEL, &count_config(1))?;
        let readback = Readback::new(STATE_WORDS)?;
        Ok(Self { state, histogram, gathered, readback, sms: gpu.info().multiprocessors as u32 })
    }

    /// Launches the whole selection of what `find` asks among `values` inside `window`; the
    /// result is in the state once the stream gets there.
    pub fn launch(&self, gpu: &Gpu, values: &DeviceSlice<f32>, window: Window, find: Find) -> GpuResult<()> {
        let grid = count_grid(values.len(), self.sms);
        for pass in 0..PASSES as u32 {
            let (state, histogram, gathered) = (&*self.state, &*self.histogram, &*self.gathered);
            let args = SelectCountArgs { values, window, pass, find, state, histogram, gathered, grid };
            gpu.launch(COUNT_KERNEL, &args)?;
        }
        Ok(())
    }

    /// The state after the launches before: the window's count, whether a rank was found, and
    /// the keys found.
    pub fn outcome(&self, gpu: &Gpu) -> GpuResult<Outcome> {
        Ok(Outcome::from_state(&self.start_read(gpu)?.wait()?))
    }

    fn start_read<'a>(&'a self, gpu: &'a Gpu) -> GpuResult<Pending<'a, u32, STATE_WORDS>> {
        self.readback.start("the select state", gpu.stream(), &self.state)
    }

    /// The `k`-th smallest (0-based) of the values inside `window`; `None` when `k` is not
    /// below their count.
    pub fn kth(&self, gpu: &Gpu, values: &DeviceSlice<f32>, window: Window, k: u64) -> GpuResult<Option<f32>> {
        let Ok(rank) = u32::try_from(k) else { return Ok(None) };
        if values.is_empty() {
            return Ok(None);
        }
        self.launch(gpu, values, window, Find::Rank(rank))?;
        Ok(self.outcome(gpu)?.kth())
    }

    /// `np.median` of the values inside `window`; `None` when it holds none.
    pub fn median(&self, gpu: &Gpu, values: &DeviceSlice<f32>, window: Window) -> GpuResult<Option<Median>> {
        if values.is_empty() {
            return Ok(None);
        }
        self.launch(gpu, values, window, Find::Median)?;
        self.read_median(gpu)
    }

    /// The median that the last `launch(.., Find::Median)` found, once the stream has run it
    /// (`None` also where `Find::MedianUnlessCount` met its count).
    pub fn read_median(&self, gpu: &Gpu) -> GpuResult<Option<Median>> {
        self.start_read_median(gpu)?.wait()
    }

    /// [`Selector::read_median`] in two steps: the copy back is queued now, behind the
    /// launches, and [`PendingMedian::wait`] waits for it, so that other waits can overlap it.
    pub fn start_read_median<'a>(&'a self, gpu: &'a Gpu) -> GpuResult<PendingMedian<'a>> {
        Ok(PendingMedian(self.start_read(gpu)?))
    }
}

/// The median on its way back ([`Selector::start_read_median`]).
pub struct PendingMedian<'a>(Pending<'a, u32, STATE_WORDS>);

impl PendingMedian<'_> {
    pub fn wait(self) -> GpuResult<Option<Median>> {
        Ok(Outcome::from_state(&self.0.wait()?).median())
    }
}

/// What the state says after a selection.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Outcome {
    pub count: u64,
    /// The values at the two slots' ranks, or `None` when there was no rank to find.
    pub found: Option<[f32; 2]>,
}

impl Outcome {
    fn from_state(words: &[u32; STATE_WORDS]) -> Self {
        let found = (words[STATE_EMPTY] == 0).then(|| [value(words[STATE_PREFIX]), value(words[STATE_PREFIX + 1])]);
        Self { count: words[STATE_COUNT] as u64, found }
    }

    pub fn kth(&self) -> Option<f32> {
        self.found.map(|[v, _]| v)
    }

    pub fn median(&self) -> Option<Median> {
        let [lower, upper] = self.found?;
        Some(Median { value: (f64::from(lower) + f64::from(upper)) / 2.0, count: self.count })
    }
}

/// The CPU reference: the values inside `window`, then the `k`-th of them (`select_nth`), or
/// their median (`np.median`'s definition, `sources::stats::median`). `(value, count)`.
pub fn cpu_reference(values: &[f32], window: Window, k: Option<u64>) -> Option<(f64, u64)> {
    let mut inside: Vec<f32> = values.iter().copied().filter(|&v| window.contains(v)).collect();
    let count = inside.len() as u64;
    match k {
        Some(k) if k < count => {
            let (_, kth, _) = inside.select_nth_unstable_by(k as usize, f32::total_cmp);
            Some((f64::from(*kth), count))
        }
        Some(_) => None,
        None => stats::median(&mut inside).map(|m| (m, count)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reference_takes_the_window_and_np_median() {
        let values = [5.0f32, f32::NAN, -1.0, 3.0, f32::INFINITY, 2.0, 8.0];
        // Inside (-inf, inf): 5 -1 3 2 8, sorted -1 2 3 5 8.
        assert_eq!(cpu_reference(&values, Window::FINITE, None), Some((3.0, 5)));
        assert_eq!(cpu_reference(&values, Window::FINITE, Some(0)), Some((-1.0, 5)));
        assert_eq!(cpu_reference(&values, Window::FINITE, Some(4)), Some((8.0, 5)));
        assert_eq!(cpu_reference(&values, Window::FINITE, Some(5)), None);
        // Inside (2, 8): 5 3, an even count: the mean of the two.
        assert_eq!(cpu_reference(&values, Window::new(2.0, 8.0), None), Some((4.0, 2)));
        assert_eq!(cpu_reference(&values, Window::new(8.0, 9.0), None), None);
    }

    #[test]
    fn outcome_reads_the_state() {
        let mut words = [0u32; STATE_WORDS];
        words[STATE_COUNT] = 4;
        words[STATE_PREFIX] = interface::select::key(1.0);
        words[STATE_PREFIX + 1] = interface::select::key(f32::from_bits(1.0f32.to_bits() + 1));
        let outcome = Outcome::from_state(&words);
        assert_eq!(outcome.kth(), Some(1.0));
        let upper = f64::from(f32::from_bits(1.0f32.to_bits() + 1));
        assert_eq!(outcome.median(), Some(Median { value: (1.0 + upper) / 2.0, count: 4 }));
        words[STATE_EMPTY] = 1;
        assert_eq!(Outcome::from_state(&words).median(), None);
    }

    #[test]
    fn the_count_grid_covers_small_inputs_and_caps_large_ones() {
        assert_eq!(count_grid(1, 132), 1);
        assert_eq!(count_grid(interface::select::VALUES_PER_BLOCK_TRIP * 3, 132), 3);
        assert_eq!(count_grid(interface::select::VALUES_PER_BLOCK_TRIP * 3 + 1, 132), 4);
        assert_eq!(count_grid(1 << 22, 132), 132 * COUNT_BLOCKS_PER_SM as u32);
    }
}
