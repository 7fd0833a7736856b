//! Host side of `kernels::select`: the exact k-th smallest f32 inside a window, and the median
//! as `np.median` defines it, by radix select ([`Selector`], which the source finder calls),
//! checked against the CPU: `select_nth_unstable_by(total_cmp)` for the k-th value and
//! `stats::median` for the median, over the values the window holds.

use crate::gpu::{
    refuse, require, require_aligned, require_apart, require_kernel, require_len, CudaContext, DeviceArray, Gpu,
    GpuError, GpuResult, KernelArgs, LaunchConfig, Params, Pending, Readback, Span,
};
use crate::reduce::check_window;
use crate::stats;
use cust::memory::{DeviceBuffer, DeviceSlice};
use interface::select::{
    blocks_for, value, COUNT_BLOCK, COUNT_BLOCKS_PER_SM, FIND_MEDIAN, FIND_MEDIAN_UNLESS_COUNT, FIND_RANK, GATHER_CAP,
    HISTOGRAM_LEN, PASSES, STATE_COUNT, STATE_EMPTY, STATE_PREFIX, STATE_WORDS,
};
use interface::window::Window;
use ndarray::{ArrayView, Dimension};

/// The kernel of each pass: it counts one digit of the keys into the histogram, and its last
/// block finds the bucket of the rank(s) sought.
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
    /// The values selected from (16-byte aligned, fewer than 2^32).
    pub values: &'a DeviceSlice<f32>,
    /// Only the values inside count.
    pub window: Window,
    /// The pass, `0..PASSES`: which digit of the keys it counts.
    pub pass: u32,
    /// What the selection finds.
    pub find: Find,
    /// The selection's state between passes: `STATE_WORDS` words (`interface::select::STATE_*`).
    pub state: &'a DeviceSlice<u32>,
    /// `HISTOGRAM_LEN` counters, zero before each pass.
    pub histogram: &'a DeviceSlice<u32>,
    /// `GATHER_CAP` values: the second pass's gathering, which the last pass reads.
    pub gathered: &'a DeviceSlice<f32>,
    /// Blocks of `COUNT_BLOCK` threads, at least 1.
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
        let written = [
            Span::of("the histogram", self.histogram, HISTOGRAM_LEN),
            Span::of("the state", self.state, STATE_WORDS),
            Span::of("the gathering", self.gathered, GATHER_CAP),
        ];
        require_apart(kernel, &written, &[Span::of("the values", self.values, self.values.len())])?;
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

/// The launch of `select_count_vec4`: `grid` blocks of [`COUNT_BLOCK`] threads.
pub fn count_config(grid: u32) -> LaunchConfig {
    LaunchConfig { grid: (grid, 1, 1), block: (COUNT_BLOCK as u32, 1, 1), shared_bytes: 0 }
}

/// `select_count_vec4`'s grid for `n` values on `sms` SMs: a batch of
/// [`COUNT_QUADS`](interface::select::COUNT_QUADS) quads per thread up to
/// [`COUNT_BLOCKS_PER_SM`] blocks per SM, whose threads then loop.
pub fn count_grid(n: usize, sms: u32) -> u32 {
    blocks_for(n).min(COUNT_BLOCKS_PER_SM * sms as usize) as u32
}

/// `np.median` of the values inside a window, and how many there were.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Median {
    /// The middle value, or for an even count the mean (in f64) of the two middle values.
    pub value: f64,
    /// How many values the window held.
    pub count: u64,
}

/// Radix select on the GPU: its state, histogram and gathering, allocated once and reused by
/// every call.
/// A call launches the three passes (each ending with its find) on the GPU's stream, then
/// copies the few words of the state back.
pub struct Selector {
    /// The selection's state (`STATE_WORDS` words): the window's count, whether a rank was
    /// found, and the keys found, which [`Selector::outcome`] reads back.
    pub state: DeviceBuffer<u32>,
    histogram: DeviceBuffer<u32>,
    gathered: DeviceBuffer<f32>,
    readback: Readback<u32>,
    sms: u32,
}

impl Selector {
    /// A selector on `gpu`: its state, histogram and gathering allocated zeroed, and the count
    /// kernel's launch checked against the device.
    pub fn new(gpu: &Gpu) -> GpuResult<Self> {
        // Each find zeroes the bins it read, so they start and stay zero between calls.
        let histogram = DeviceBuffer::<u32>::zeroed(HISTOGRAM_LEN).during("allocating the select histogram")?;
        let state = DeviceBuffer::<u32>::zeroed(STATE_WORDS).during("allocating the select state")?;
        let gathered = DeviceBuffer::<f32>::zeroed(GATHER_CAP).during("allocating the select gathering")?;
        gpu.validate(COUNT_KERNEL, &count_config(1))?;
        let readback = Readback::new(STATE_WORDS)?;
        Ok(Self { state, histogram, gathered, readback, sms: gpu.sms() })
    }

    /// Launches the whole selection of what `find` asks among `values` inside `window`; the
    /// result is in the state once the stream gets there.
    ///
    /// # Safety
    /// Queued, not finished, on return: `values` and the selector must stay allocated until
    /// the stream has run it (see [`Gpu::launch`]).
    pub unsafe fn launch(&self, gpu: &Gpu, values: &DeviceSlice<f32>, window: Window, find: Find) -> GpuResult<()> {
        let grid = count_grid(values.len(), self.sms);
        for pass in 0..PASSES as u32 {
            let (state, histogram, gathered) = (&*self.state, &*self.histogram, &*self.gathered);
            let args = SelectCountArgs { values, window, pass, find, state, histogram, gathered, grid };
            // SAFETY: the caller keeps `values` and `self` alive until the stream has run it.
            unsafe { gpu.launch(COUNT_KERNEL, &args) }?;
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
        // SAFETY: `outcome` below waits for the kernels before `values` or `self` can go.
        unsafe { self.launch(gpu, values, window, Find::Rank(rank)) }?;
        Ok(self.outcome(gpu)?.kth())
    }

    /// `np.median` of the values inside `window`; `None` when it holds none.
    pub fn median(&self, gpu: &Gpu, values: &DeviceSlice<f32>, window: Window) -> GpuResult<Option<Median>> {
        if values.is_empty() {
            return Ok(None);
        }
        // SAFETY: `read_median` below waits for the kernels before `values` or `self` can go.
        unsafe { self.launch(gpu, values, window, Find::Median) }?;
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
    /// Waits for the copy back and returns the median: `None` where the window held no value,
    /// or where `Find::MedianUnlessCount` met its count.
    pub fn wait(self) -> GpuResult<Option<Median>> {
        Ok(Outcome::from_state(&self.0.wait()?).median())
    }
}

/// What the state says after a selection.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Outcome {
    /// How many values the window held.
    pub count: u64,
    /// The values at the two slots' ranks, or `None` when there was no rank to find.
    pub found: Option<[f32; 2]>,
}

impl Outcome {
    fn from_state(words: &[u32; STATE_WORDS]) -> Self {
        let found = (words[STATE_EMPTY] == 0).then(|| [value(words[STATE_PREFIX]), value(words[STATE_PREFIX + 1])]);
        Self { count: words[STATE_COUNT] as u64, found }
    }

    /// The value at the rank that `Find::Rank` asked for; `None` when the rank was not below the
    /// count.
    pub fn kth(&self) -> Option<f32> {
        self.found.map(|[v, _]| v)
    }

    /// The median: the mean in f64 of the values at the two middle ranks (the same rank for an
    /// odd count); `None` when the window held no value.
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

/// An error unless there are values to select from: at least one, and fewer than 2^32 (the
/// kernel counts in u32). `function` prefixes the message.
fn check_values(function: &str, n: usize) -> GpuResult<()> {
    require(n > 0, || format!("{function}: the values are empty"))?;
    require(u32::try_from(n).is_ok(), || format!("{function}: {n} values; the selection counts fewer than 2^32"))
}

/// `k` as the kernel's rank: an error unless it is below the number `n` of values (whether it
/// is also below the number inside the window, only the selection's count can tell).
fn check_rank(function: &str, k: u64, n: usize) -> GpuResult<u32> {
    require(k < n as u64, || format!("{function}: k = {k} is not below the number of values, {n} (k counts from 0)"))?;
    u32::try_from(k).map_err(|_| GpuError::InvalidInput(format!("{function}: k = {k} is 2^32 or more")))
}

/// Runs the selection of what `find` asks among the `values` inside `window` on a [`Selector`]
/// made for the call, and waits for its outcome.
fn select<D: Dimension>(gpu: &Gpu, values: &DeviceArray<f32, D>, window: Window, find: Find) -> GpuResult<Outcome> {
    gpu.bind()?;
    let slice = values.slice(gpu)?;
    let selector = Selector::new(gpu)?;
    // SAFETY: `values` records the kernels, and `outcome` below waits for them before the
    // selector goes.
    unsafe { selector.launch(gpu, slice, window, find) }?;
    values.record_use(gpu)?;
    selector.outcome(gpu)
}

/// [`median_in`], its messages prefixed with `function`.
fn median_of<D: Dimension>(function: &str, gpu: &Gpu, values: &DeviceArray<f32, D>, window: Window) -> GpuResult<f64> {
    check_values(function, values.len())?;
    check_window(function, window)?;
    let outcome = select(gpu, values, window, Find::Median)?;
    Ok(outcome.median().map_or(f64::NAN, |median| median.value))
}

/// [`kth_in`], its messages prefixed with `function`; `inside` says which values count.
fn kth_of<D: Dimension>(
    function: &str,
    gpu: &Gpu,
    values: &DeviceArray<f32, D>,
    window: Window,
    k: u64,
    inside: &str,
) -> GpuResult<f32> {
    let n = values.len();
    check_values(function, n)?;
    check_window(function, window)?;
    let rank = check_rank(function, k, n)?;
    let outcome = select(gpu, values, window, Find::Rank(rank))?;
    outcome.kth().ok_or_else(|| {
        GpuError::InvalidInput(format!(
            "{function}: k = {k} is not below the number of {inside}, {} of {n}",
            outcome.count
        ))
    })
}

/// `np.median` of the finite `values` on `gpu`, found exactly by radix select (three passes
/// over the values, no sort): the middle value in sorted order, or for an even count the mean
/// of the two middle ones, computed in f64 (NumPy rounds that mean to f32 for an f32 array).
/// NaN is skipped, as `np.nanmedian` skips it; so are +∞ and −∞, as the [`Selector`] and
/// [`cpu_reference`] skip them (no [`Window`] holds them: this is [`median_in`] over
/// [`Window::FINITE`]). So for values without infinities the result is
/// `np.nanmedian(values)`, `np.median` of the non-NaN values. Values with no finite one (all
/// NaN, say) give NaN, as `np.nanmedian` does.
///
/// Any shape: the elements are taken whatever their dimension. Checked before anything runs:
/// the values are not empty (an error, not NaN), fewer than 2^32, and live on `gpu`.
///
/// Synchronous: it waits for the selection and returns the median.
///
/// ```
/// # fn main() -> cuda_kernels::GpuResult<()> {
/// use cuda_kernels::select::{cpu_reference, median};
/// use cuda_kernels::{DeviceArray, Window};
///
/// let Some(gpu) = cuda_kernels::gpu::doctest_gpu()? else { return Ok(()) };
/// let mut values = cuda_kernels::data::random_normal(100_004, 4);
/// values[3] = f32::NAN;
/// values[9] = f32::INFINITY;
/// let (expected, count) = cpu_reference(&values, Window::FINITE, None).unwrap();
/// assert_eq!(count, 100_002, "NaN and ∞ skipped; an even count: the mean of the middle two");
/// assert_eq!(median(&gpu, &DeviceArray::from_slice(&gpu, &values)?)?, expected);
/// // np.nanmedian([3, nan, 1, 2, 10]) == 2.5
/// let small = DeviceArray::from_slice(&gpu, &[3.0f32, f32::NAN, 1.0, 2.0, 10.0])?;
/// assert_eq!(median(&gpu, &small)?, 2.5);
/// assert!(median(&gpu, &DeviceArray::from_slice(&gpu, &[f32::NAN; 3])?)?.is_nan());
/// # Ok(())
/// # }
/// ```
pub fn median<D: Dimension>(gpu: &Gpu, values: &DeviceArray<f32, D>) -> GpuResult<f64> {
    median_of("median", gpu, values, Window::FINITE)
}

/// The median, as [`median`] defines it, of the `values` inside `window` (`low < v < high`,
/// compared in f64; NaN and the infinities lie in no window): NaN where the window holds none.
/// [`cpu_reference`]`(values, window, None)` is the CPU's.
///
/// Checked before anything runs: the values are not empty, fewer than 2^32, and live on `gpu`,
/// and neither window bound is NaN. Synchronous, as [`median`].
///
/// ```
/// # fn main() -> cuda_kernels::GpuResult<()> {
/// use cuda_kernels::select::{cpu_reference, median_in};
/// use cuda_kernels::{DeviceArray, Window};
///
/// let Some(gpu) = cuda_kernels::gpu::doctest_gpu()? else { return Ok(()) };
/// let values = cuda_kernels::data::random_normal(65_537, 5);
/// let device_values = DeviceArray::from_slice(&gpu, &values)?;
/// let window = Window::new(0.0, 2.0);
/// let (expected, _) = cpu_reference(&values, window, None).unwrap();
/// assert_eq!(median_in(&gpu, &device_values, window)?, expected);
/// assert!(median_in(&gpu, &device_values, Window::new(9.0, 10.0))?.is_nan(), "an empty window");
/// # Ok(())
/// # }
/// ```
pub fn median_in<D: Dimension>(gpu: &Gpu, values: &DeviceArray<f32, D>, window: Window) -> GpuResult<f64> {
    median_of("median_in", gpu, values, window)
}

/// The `k`-th smallest (0-based: `k = 0` is the minimum) of the finite `values` on `gpu`,
/// exactly, by radix select: `np.sort(values[np.isfinite(values)])[k]`. NaN and the infinities
/// are skipped, as in [`median`] (this is [`kth_in`] over [`Window::FINITE`]); `-0.0` sorts
/// before `0.0`.
///
/// Checked before anything runs: the values are not empty, fewer than 2^32, and live on `gpu`,
/// and `k` is below their number. After the selection, a `k` not below the number of finite
/// values is an error that says how many there are.
///
/// Synchronous: it waits for the selection and returns the value.
///
/// ```
/// # fn main() -> cuda_kernels::GpuResult<()> {
/// use cuda_kernels::select::{cpu_reference, kth};
/// use cuda_kernels::{DeviceArray, Window};
///
/// let Some(gpu) = cuda_kernels::gpu::doctest_gpu()? else { return Ok(()) };
/// let mut values = cuda_kernels::data::random_f32(10_007, 6);
/// values[100] = f32::NAN;
/// let device_values = DeviceArray::from_slice(&gpu, &values)?;
/// for k in [0, 1, 5003, 10_005] {
///     let (expected, _) = cpu_reference(&values, Window::FINITE, Some(k)).unwrap();
///     assert_eq!(f64::from(kth(&gpu, &device_values, k)?), expected);
/// }
/// // 10 006 finite values: k = 10 006 is past them.
/// assert!(kth(&gpu, &device_values, 10_006).is_err());
/// # Ok(())
/// # }
/// ```
pub fn kth<D: Dimension>(gpu: &Gpu, values: &DeviceArray<f32, D>, k: u64) -> GpuResult<f32> {
    kth_of("kth", gpu, values, Window::FINITE, k, "finite values (NaN and ±∞ are skipped)")
}

/// The `k`-th smallest (0-based) of the `values` inside `window` (`low < v < high`, compared in
/// f64; NaN and the infinities lie in no window), as [`kth`] otherwise; a `k` not below the
/// number inside is an error. [`cpu_reference`]`(values, window, Some(k))` is the CPU's.
///
/// ```
/// # fn main() -> cuda_kernels::GpuResult<()> {
/// use cuda_kernels::select::{cpu_reference, kth_in};
/// use cuda_kernels::{DeviceArray, Window};
///
/// let Some(gpu) = cuda_kernels::gpu::doctest_gpu()? else { return Ok(()) };
/// let values = cuda_kernels::data::random_normal(4099, 7);
/// let device_values = DeviceArray::from_slice(&gpu, &values)?;
/// let window = Window::new(-1.0, 1.0);
/// let (expected, inside) = cpu_reference(&values, window, Some(0)).unwrap();
/// assert_eq!(f64::from(kth_in(&gpu, &device_values, window, 0)?), expected);
/// assert!(kth_in(&gpu, &device_values, window, inside).is_err());
/// # Ok(())
/// # }
/// ```
pub fn kth_in<D: Dimension>(gpu: &Gpu, values: &DeviceArray<f32, D>, window: Window, k: u64) -> GpuResult<f32> {
    let inside = format!("values inside the window ({}, {})", window.low, window.high);
    kth_of("kth_in", gpu, values, window, k, &inside)
}

/// [`median`] of the elements of `values` (any dimension, any memory layout: an image's
/// pixels), computed on `gpu`: copies them to the GPU and selects there. Empty values are an
/// error; values with no finite one give NaN.
///
/// ```
/// # fn main() -> cuda_kernels::GpuResult<()> {
/// use cuda_kernels::select::{cpu_reference, median_array};
/// use cuda_kernels::Window;
/// use ndarray::Array2;
///
/// let Some(gpu) = cuda_kernels::gpu::doctest_gpu()? else { return Ok(()) };
/// let mut image = Array2::from_shape_vec((127, 129), cuda_kernels::data::random_normal(127 * 129, 8)).unwrap();
/// image[[5, 7]] = f32::NAN;
/// let (expected, _) = cpu_reference(image.as_slice().unwrap(), Window::FINITE, None).unwrap();
/// assert_eq!(median_array(&gpu, image.view())?, expected);
/// assert_eq!(median_array(&gpu, image.t())?, expected, "the same pixels in another layout");
/// # Ok(())
/// # }
/// ```
pub fn median_array<D: Dimension>(gpu: &Gpu, values: ArrayView<f32, D>) -> GpuResult<f64> {
    check_values("median", values.len())?;
    median(gpu, &DeviceArray::from_array(gpu, values)?)
}

/// [`kth`] of the elements of `values` (any dimension, any memory layout), computed on `gpu`:
/// copies them to the GPU and selects there. Empty values, or a `k` not below the number of
/// finite values, are an error.
///
/// ```
/// # fn main() -> cuda_kernels::GpuResult<()> {
/// use cuda_kernels::select::kth_array;
/// use ndarray::array;
///
/// let Some(gpu) = cuda_kernels::gpu::doctest_gpu()? else { return Ok(()) };
/// let values = array![[4.0f32, f32::NAN, -1.0], [2.5, f32::NEG_INFINITY, 9.0]];
/// assert_eq!(kth_array(&gpu, values.view(), 0)?, -1.0);
/// assert_eq!(kth_array(&gpu, values.view(), 2)?, 4.0);
/// assert!(kth_array(&gpu, values.view(), 4).is_err(), "4 finite values");
/// # Ok(())
/// # }
/// ```
pub fn kth_array<D: Dimension>(gpu: &Gpu, values: ArrayView<f32, D>, k: u64) -> GpuResult<f32> {
    check_values("kth", values.len())?;
    check_rank("kth", k, values.len())?;
    kth(gpu, &DeviceArray::from_array(gpu, values)?, k)
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

    #[test]
    fn api_inputs_are_checked() {
        assert!(check_values("median", 1).is_ok());
        assert!(check_values("median", u32::MAX as usize).is_ok());
        let message = check_values("median", 0).unwrap_err().to_string();
        assert!(message.contains("median: the values are empty"), "{message}");
        let message = check_values("kth", 1 << 32).unwrap_err().to_string();
        assert!(message.contains("kth: 4294967296 values; the selection counts fewer than 2^32"), "{message}");
        assert_eq!(check_rank("kth", 0, 1).unwrap(), 0);
        assert_eq!(check_rank("kth", 4, 5).unwrap(), 4);
        let message = check_rank("kth", 5, 5).unwrap_err().to_string();
        assert!(message.contains("kth: k = 5 is not below the number of values, 5 (k counts from 0)"), "{message}");
        let message = check_rank("kth_in", u64::MAX, 3).unwrap_err().to_string();
        assert!(message.contains("kth_in: k = 18446744073709551615 is not below"), "{message}");
        // Only where the values' count was not checked first can k pass it and not fit a u32.
        let message = check_rank("kth", 1 << 32, 1 << 33).unwrap_err().to_string();
        assert!(message.contains("kth: k = 4294967296 is 2^32 or more"), "{message}");
    }
}
