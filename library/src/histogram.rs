//! Host side of `kernels::histogram`: any number of bins over u32 values or over f32 values in
//! [min, max] (NumPy's bins exactly); global atomics vs shared-memory privatization, scalar and 16-byte loads. The CPU
//! reference bins with the kernels' own rule (`interface::histogram`), so every value lands in
//! the same bin. The values are random or read from a `.npy` file (`--input-file`); `--output`
//! writes the counts as `.npy`.

use crate::gpu::{
    blocks, refuse, require, require_aligned, require_disjoint, require_len, DeviceArray, DeviceVector, Gpu, GpuError,
    GpuResult, KernelArgs, LaunchConfig, Params,
};
use cust::memory::{DeviceCopy, DeviceSlice};
pub use interface::histogram::{BinRule, F32Bins, U32Bins};
use interface::DEFAULT_BLOCK;
use ndarray::{Array1, ArrayView1};

/// Blocks per SM when the grid is left to the host.
pub const BLOCKS_PER_SM: u32 = 8;

pub use crate::data::Input;

/// How the random f32 input is drawn.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Data {
    /// Uniform over the range widened by 1/16 on each side, so some values fall outside.
    Uniform,
    /// Standard normal samples.
    Normal,
}

/// The histogram kernel steps.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Method {
    /// One global atomic per value.
    Global,
    /// Per-block bins in shared memory, merged at the end.
    Shared,
    /// Shared-memory bins, four values per 16-byte load.
    SharedVec4,
}

impl Method {
    /// Every step, in ladder order.
    pub const ALL: [Method; 3] = [Method::Global, Method::Shared, Method::SharedVec4];

    fn uses_shared_bins(self) -> bool {
        self != Method::Global
    }

    /// The kernel of this step for `input` values: `histogram_{step}_{u32|f32}`.
    pub fn kernel(self, input: Input) -> String {
        format!("histogram_{}_{}", self.name(), input.name())
    }
}

crate::named!(Data { Uniform => "uniform", Normal => "normal" });
crate::named!(Method { Global => "global", Shared => "shared", SharedVec4 => "shared_vec4" });

/// Bins of `values` by `rule`: the CPU reference.
pub fn cpu_reference<R: BinRule>(values: impl IntoIterator<Item = R::Value>, rule: R) -> Vec<u32> {
    let mut bins = vec![0u32; rule.bins() as usize];
    for v in values {
        if let Some(b) = rule.bin(v) {
            bins[b as usize] += 1;
        }
    }
    bins
}

/// Bins at most: the f32 rule's estimate, up to `bins · (1 + 2^-22)`, must fit a u32.
pub const MAX_BINS: u32 = 1 << 31;

/// Whether `[min, max]` can hold `bins` f32 bins: finite, `min < max` still apart once rounded
/// to f32 (NumPy's outer edges), and a finite f32 bins-per-unit for the rule's estimate.
pub fn f32_range_holds(min: f64, max: f64, bins: u32) -> bool {
    min.is_finite()
        && max.is_finite()
        && (min as f32) < (max as f32)
        && ((bins as f64 / (max - min)) as f32).is_finite()
}

/// The binning of one histogram: input type, bin count, f32 range.
#[derive(Debug, Clone, Copy)]
pub struct Binning {
    /// The values' type.
    pub input: Input,
    /// How many bins.
    pub bins: u32,
    /// `(min, max)` of the f32 bins, both edges included (unused for u32 values, binned by
    /// value).
    pub range: (f64, f64),
}

impl Binning {
    /// An error unless there are 1 to [`MAX_BINS`] bins and, for f32 values, the range
    /// [`f32_range_holds`] them.
    pub fn validate(&self) -> GpuResult<()> {
        require(self.bins >= 1, || "a histogram needs at least 1 bin".into())?;
        require(self.bins <= MAX_BINS, || format!("at most {} bins (got {})", MAX_BINS, self.bins))?;
        let (min, max) = self.range;
        require(self.input == Input::U32 || f32_range_holds(min, max, self.bins), || {
            format!(
                "the f32 range [{}, {}] cannot hold {} bins: it needs finite min < max, apart as f32",
                min, max, self.bins
            )
        })
    }

    /// The rule that bins f32 values over `range` as `np.histogram` does.
    pub fn f32_rule(&self) -> F32Bins {
        F32Bins::new(self.range.0, self.range.1, self.bins)
    }
}

/// The values of a histogram as its kernels take them.
#[derive(Clone, Copy)]
pub enum Values<'a> {
    /// u32 values, value `v` counted in bin `v` (none at `bins` and above).
    U32(&'a DeviceSlice<u32>),
    /// f32 values, counted over `[min, max]` with NumPy's edges.
    F32 {
        /// The values.
        values: &'a DeviceSlice<f32>,
        /// The lower edge of the first bin.
        min: f64,
        /// The upper edge of the last bin, which holds it.
        max: f64,
    },
}

/// The arguments of the histogram kernels: `values` counted into `bins` bins of `counts` by a
/// one-dimensional grid of `grid` blocks of `block` threads (any sizes: the loops are
/// grid-stride; the shared-memory kernels get their bins' shared memory from
/// [`shaped_launch`]).
pub struct HistogramArgs<'a> {
    /// The values and how they are binned.
    pub values: Values<'a>,
    /// How many bins.
    pub bins: u32,
    /// The counts, at least `bins` long, added to (not zeroed by the kernels).
    pub counts: &'a DeviceSlice<u32>,
    /// Blocks in the grid.
    pub grid: u32,
    /// Threads per block.
    pub block: u32,
}

// SAFETY: the kernels read all of `values` and add to `counts[..bins]`, checked to exist and
// not to overlap the values. A value's bin is below `bins` by the binning rule: `bins >= 1` is
// checked (the rule clamps to `bins - 1`), and for f32 a range that [`f32_range_holds`], so
// the rule's float-to-int conversion always sees an estimate in `[0, bins · (1 + 2^-22)]`. The
// shared-memory kernels keep `bins` counters in the dynamic shared memory that `shaped` sizes,
// and the vec4 ones load quads of values, checked 16-byte aligned. A grid-stride loop is correct
// on any grid. The parameters are `values: &[u32], bins: u32, counts: *mut u32`, or
// `values: &[f32], lo: f64, hi: f64, bins: u32, counts: *mut u32`.
unsafe impl KernelArgs for HistogramArgs<'_> {
    fn checked_config(&self, kernel: &str) -> GpuResult<LaunchConfig> {
        let input = match self.values {
            Values::U32(_) => Input::U32,
            Values::F32 { .. } => Input::F32,
        };
        let method = Method::ALL
            .into_iter()
            .find(|m| m.kernel(input) == kernel)
            .ok_or_else(|| refuse(kernel, format!("it is not a histogram kernel of {} values", input.name())))?;
        if self.bins == 0 {
            return Err(refuse(kernel, "a histogram needs at least 1 bin"));
        }
        let bins = self.bins as usize;
        require_len(kernel, "the counts", self.counts, bins)?;
        match self.values {
            Values::U32(values) => self.check_values(kernel, method, values)?,
            Values::F32 { values, min, max } => {
                if !f32_range_holds(min, max, self.bins) || self.bins > MAX_BINS {
                    return Err(refuse(kernel, format!("[{min}, {max}] cannot hold {} bins", self.bins)));
                }
                self.check_values(kernel, method, values)?
            }
        }
        // One-dimensional: with a second dimension, threads sharing an index would zero and
        // merge a block's bins twice.
        Ok(shaped_launch(LaunchConfig::grid_stride(0, 0, self.block, self.grid)?, method, self.bins))
    }

    fn params(&self, _kernel: &str) -> Params {
        match self.values {
            Values::U32(values) => Params::new().slice(values).value(self.bins).pointer(self.counts),
            Values::F32 { values, min, max } => {
                Params::new().slice(values).value(min).value(max).value(self.bins).pointer(self.counts)
            }
        }
    }
}

impl HistogramArgs<'_> {
    /// The values must not overlap the counts, and the vec4 kernels load them as quads.
    fn check_values<T: DeviceCopy>(&self, kernel: &str, method: Method, values: &DeviceSlice<T>) -> GpuResult<()> {
        require_disjoint(
            kernel,
            ("the counts", self.counts, self.bins as usize),
            ("the values", values, values.len()),
        )?;
        if method == Method::SharedVec4 {
            require_aligned(kernel, "the values", values, 16)?;
        }
        Ok(())
    }
}

/// The launch of `method`: the shared-memory kernels get one counter per bin.
pub fn shaped_launch(config: LaunchConfig, method: Method, bins: u32) -> LaunchConfig {
    // Saturating: bins past 2^30 ask for more shared memory than any launch gets, an error.
    let shared_bytes = if method.uses_shared_bins() { bins.saturating_mul(4) } else { 0 };
    LaunchConfig { shared_bytes, ..config }
}

/// The checks the histogram functions make before anything runs: values to count, and a bin
/// count (`bins`, the length of the counts) that `range` can hold for `input` values. The bin
/// count as the kernels take it.
fn checked_bins(input: Input, values: usize, bins: usize, range: (f64, f64)) -> GpuResult<u32> {
    require(values > 0, || "histogram: the values are empty: there is nothing to count".into())?;
    require(bins > 0, || "histogram: the counts hold no bin; a histogram needs at least 1".into())?;
    let bins = u32::try_from(bins)
        .ok()
        .filter(|&b| b <= MAX_BINS)
        .ok_or_else(|| GpuError::InvalidInput(format!("histogram: {bins} bins; at most {MAX_BINS}")))?;
    Binning { input, bins, range }.validate().map_err(|err| match err {
        GpuError::InvalidInput(why) => GpuError::InvalidInput(format!("histogram: {why}")),
        err => err,
    })?;
    Ok(bins)
}

/// The launch of the histogram functions over `n` values: [`DEFAULT_BLOCK`] threads a block,
/// [`BLOCKS_PER_SM`] blocks per SM, fewer where the values do not fill them.
fn api_launch(gpu: &Gpu, n: usize) -> GpuResult<LaunchConfig> {
    let most = gpu.sms() * BLOCKS_PER_SM;
    LaunchConfig::grid_stride(0, 0, DEFAULT_BLOCK, blocks(n, DEFAULT_BLOCK as usize)?.min(most))
}

/// The step the plain histogram functions take: [`Method::SharedVec4`] (a block's bins in
/// shared memory, values read with 16-byte loads) when `bins` counters fit in a block's shared
/// memory on `gpu`, else [`Method::Global`].
fn default_method(gpu: &Gpu, input: Input, bins: u32) -> GpuResult<Method> {
    let config = shaped_launch(api_launch(gpu, 1)?, Method::SharedVec4, bins);
    match gpu.validate(&Method::SharedVec4.kernel(input), &config) {
        Ok(()) => Ok(Method::SharedVec4),
        Err(GpuError::InvalidLaunch { reason, .. }) if reason.contains("shared memory") => Ok(Method::Global),
        Err(err) => Err(err),
    }
}

/// Zeroes `counts` and queues the kernel of `method` counting `n` values into it.
fn count_into(
    gpu: &Gpu,
    values: Values<'_>,
    n: usize,
    counts: &DeviceVector<u32>,
    bins: u32,
    method: Method,
) -> GpuResult<()> {
    let input = match values {
        Values::U32(_) => Input::U32,
        Values::F32 { .. } => Input::F32,
    };
    let slice = counts.slice(gpu)?;
    // The kernels add to the counts.
    gpu.zero("the histogram's counts", slice)?;
    counts.record_use(gpu)?;
    let config = api_launch(gpu, n)?;
    let args = HistogramArgs { values, bins, counts: slice, grid: config.grid.0, block: config.block.0 };
    // SAFETY: the arrays record this launch right after it, so none is freed before it ran.
    unsafe { gpu.launch(&method.kernel(input), &args) }?;
    counts.record_use(gpu)
}

/// The histogram of u32 `values` on `gpu`, into `counts`: one bin per element of `counts`, value
/// `v` counted in bin `v`, values of `counts.len()` and above counted nowhere (as
/// `np.bincount(values, minlength=bins)[:bins]`). The counts are zeroed first, then counted.
/// The step is [`Method::SharedVec4`] where a block's bins fit in the device's shared memory
/// (4 bytes a bin: about 58 000 bins on an H100), else [`Method::Global`].
///
/// Checked before anything runs: the values are not empty, `counts` holds 1 to [`MAX_BINS`]
/// bins, and both arrays live on `gpu`.
///
/// Asynchronous: the zeroing and the kernel are queued on `gpu`'s stream and the function
/// returns without waiting. [`DeviceArray::to_array`] waits for them, and dropping an array
/// waits for the work that uses it.
///
/// ```
/// # fn main() -> cuda_kernels::GpuResult<()> {
/// use cuda_kernels::histogram::{cpu_reference, histogram_u32};
/// use cuda_kernels::DeviceArray;
/// use interface::histogram::U32Bins;
///
/// let Some(gpu) = cuda_kernels::gpu::doctest_gpu()? else { return Ok(()) };
/// let values: Vec<u32> = (0..10_007).map(|i| (i * 7919) % 300).collect();
/// let device_values = DeviceArray::from_slice(&gpu, &values)?;
/// let mut counts = DeviceArray::zeros(&gpu, 256)?;
/// histogram_u32(&gpu, &device_values, &mut counts)?;
/// assert_eq!(counts.to_array(&gpu)?.to_vec(), cpu_reference(values, U32Bins::new(256)));
/// # Ok(())
/// # }
/// ```
pub fn histogram_u32(gpu: &Gpu, values: &DeviceVector<u32>, counts: &mut DeviceVector<u32>) -> GpuResult<()> {
    let bins = checked_bins(Input::U32, values.len(), counts.len(), (0.0, 0.0))?;
    gpu.bind()?;
    let method = default_method(gpu, Input::U32, bins)?;
    histogram_u32_with(gpu, values, counts, method)
}

/// [`histogram_u32`] with the step `method`. The shared-memory steps need `4 · bins` bytes of a
/// block's shared memory: more is an error of the launch (after the counts were zeroed).
///
/// ```
/// # fn main() -> cuda_kernels::GpuResult<()> {
/// use cuda_kernels::histogram::{cpu_reference, histogram_u32_with, Method};
/// use cuda_kernels::DeviceArray;
/// use interface::histogram::U32Bins;
///
/// let Some(gpu) = cuda_kernels::gpu::doctest_gpu()? else { return Ok(()) };
/// let values: Vec<u32> = (0..1021).map(|i| (i * i) % 13).collect();
/// let device_values = DeviceArray::from_slice(&gpu, &values)?;
/// let mut counts = DeviceArray::zeros(&gpu, 11)?;
/// for method in Method::ALL {
///     histogram_u32_with(&gpu, &device_values, &mut counts, method)?;
///     assert_eq!(counts.to_array(&gpu)?.to_vec(), cpu_reference(values.iter().copied(), U32Bins::new(11)));
/// }
/// # Ok(())
/// # }
/// ```
pub fn histogram_u32_with(
    gpu: &Gpu,
    values: &DeviceVector<u32>,
    counts: &mut DeviceVector<u32>,
    method: Method,
) -> GpuResult<()> {
    let bins = checked_bins(Input::U32, values.len(), counts.len(), (0.0, 0.0))?;
    gpu.bind()?;
    count_into(gpu, Values::U32(values.slice(gpu)?), values.len(), counts, bins, method)?;
    values.record_use(gpu)
}

/// The histogram of f32 `values` on `gpu`, into `counts`: `counts.len()` equal bins over
/// `range = (min, max)`, each value in the bin `np.histogram(values, bins, range=(min, max))`
/// puts it in (against NumPy's edges rounded to f32, the last bin holding `max`); values
/// outside the range, infinities and NaN count nowhere. The counts are zeroed first, then
/// counted. The step is [`Method::SharedVec4`] where a block's bins fit in the device's shared
/// memory, else [`Method::Global`].
///
/// Checked before anything runs: the values are not empty, `counts` holds 1 to [`MAX_BINS`]
/// bins, the range is finite with `min < max` still apart as f32 ([`f32_range_holds`]), and both
/// arrays live on `gpu`.
///
/// Asynchronous: the zeroing and the kernel are queued on `gpu`'s stream and the function
/// returns without waiting. [`DeviceArray::to_array`] waits for them, and dropping an array
/// waits for the work that uses it.
///
/// ```
/// # fn main() -> cuda_kernels::GpuResult<()> {
/// use cuda_kernels::histogram::{cpu_reference, histogram_f32};
/// use cuda_kernels::DeviceArray;
/// use interface::histogram::F32Bins;
///
/// let Some(gpu) = cuda_kernels::gpu::doctest_gpu()? else { return Ok(()) };
/// let values = cuda_kernels::data::random_normal(100_003, 7);
/// let device_values = DeviceArray::from_slice(&gpu, &values)?;
/// let mut counts = DeviceArray::zeros(&gpu, 150)?;
/// histogram_f32(&gpu, &device_values, (-4.0, 4.0), &mut counts)?;
/// let expected = cpu_reference(values.iter().copied(), F32Bins::new(-4.0, 4.0, 150));
/// assert_eq!(counts.to_array(&gpu)?.to_vec(), expected);
/// # Ok(())
/// # }
/// ```
pub fn histogram_f32(
    gpu: &Gpu,
    values: &DeviceVector<f32>,
    range: (f64, f64),
    counts: &mut DeviceVector<u32>,
) -> GpuResult<()> {
    let bins = checked_bins(Input::F32, values.len(), counts.len(), range)?;
    gpu.bind()?;
    let method = default_method(gpu, Input::F32, bins)?;
    histogram_f32_with(gpu, values, range, counts, method)
}

/// [`histogram_f32`] with the step `method`. The shared-memory steps need `4 · bins` bytes of a
/// block's shared memory: more is an error of the launch (after the counts were zeroed).
///
/// ```
/// # fn main() -> cuda_kernels::GpuResult<()> {
/// use cuda_kernels::histogram::{cpu_reference, histogram_f32_with, Method};
/// use cuda_kernels::DeviceArray;
/// use interface::histogram::F32Bins;
///
/// let Some(gpu) = cuda_kernels::gpu::doctest_gpu()? else { return Ok(()) };
/// let values = [0.0f32, 0.1, 0.7, 0.7000001, 1.0, 1.5, -0.1, f32::NAN, f32::INFINITY];
/// let device_values = DeviceArray::from_slice(&gpu, &values)?;
/// let mut counts = DeviceArray::zeros(&gpu, 3)?;
/// for method in Method::ALL {
///     histogram_f32_with(&gpu, &device_values, (0.7, 1.0), &mut counts, method)?;
///     let expected = cpu_reference(values, F32Bins::new(0.7, 1.0, 3));
///     assert_eq!(counts.to_array(&gpu)?.to_vec(), expected);
/// }
/// # Ok(())
/// # }
/// ```
pub fn histogram_f32_with(
    gpu: &Gpu,
    values: &DeviceVector<f32>,
    range: (f64, f64),
    counts: &mut DeviceVector<u32>,
    method: Method,
) -> GpuResult<()> {
    let bins = checked_bins(Input::F32, values.len(), counts.len(), range)?;
    gpu.bind()?;
    let (min, max) = range;
    count_into(gpu, Values::F32 { values: values.slice(gpu)?, min, max }, values.len(), counts, bins, method)?;
    values.record_use(gpu)
}

/// `np.histogram(values, bins, range)`'s counts, computed on `gpu`: copies the values to the
/// GPU, runs [`histogram_f32`], and returns the `bins` counts once the GPU has finished. Empty
/// values, no bins or a range that cannot hold them are an error.
///
/// ```
/// # fn main() -> cuda_kernels::GpuResult<()> {
/// use cuda_kernels::histogram::{cpu_reference, histogram_array};
/// use interface::histogram::F32Bins;
/// use ndarray::array;
///
/// let Some(gpu) = cuda_kernels::gpu::doctest_gpu()? else { return Ok(()) };
/// let values = array![-4.0f32, -3.99, 0.0, 3.99, 4.0, 4.5, f32::NAN];
/// let counts = histogram_array(&gpu, values.view(), 4, (-4.0, 4.0))?;
/// assert_eq!(counts, array![2u32, 0, 1, 2]);
/// assert_eq!(counts.to_vec(), cpu_reference(values.iter().copied(), F32Bins::new(-4.0, 4.0, 4)));
/// # Ok(())
/// # }
/// ```
pub fn histogram_array(gpu: &Gpu, values: ArrayView1<f32>, bins: u32, range: (f64, f64)) -> GpuResult<Array1<u32>> {
    checked_bins(Input::F32, values.len(), bins as usize, range)?;
    let values = DeviceArray::from_array(gpu, values)?;
    let mut counts = DeviceArray::zeros(gpu, bins as usize)?;
    histogram_f32(gpu, &values, range, &mut counts)?;
    counts.to_array(gpu)
}

/// The `bins` counts of u32 `values` (value `v` in bin `v`, values of `bins` and above
/// nowhere), computed on `gpu`: copies the values to the GPU, runs [`histogram_u32`], and
/// returns the counts once the GPU has finished. Empty values or no bins are an error.
///
/// ```
/// # fn main() -> cuda_kernels::GpuResult<()> {
/// use cuda_kernels::histogram::{cpu_reference, histogram_u32_array};
/// use interface::histogram::U32Bins;
/// use ndarray::array;
///
/// let Some(gpu) = cuda_kernels::gpu::doctest_gpu()? else { return Ok(()) };
/// let values = array![0u32, 5, 5, 2, 9, 1000];
/// let counts = histogram_u32_array(&gpu, values.view(), 6)?;
/// assert_eq!(counts, array![1u32, 0, 1, 0, 0, 2]);
/// assert_eq!(counts.to_vec(), cpu_reference(values.iter().copied(), U32Bins::new(6)));
/// # Ok(())
/// # }
/// ```
pub fn histogram_u32_array(gpu: &Gpu, values: ArrayView1<u32>, bins: u32) -> GpuResult<Array1<u32>> {
    checked_bins(Input::U32, values.len(), bins as usize, (0.0, 0.0))?;
    let values = DeviceArray::from_array(gpu, values)?;
    let mut counts = DeviceArray::zeros(gpu, bins as usize)?;
    histogram_u32(gpu, &values, &mut counts)?;
    counts.to_array(gpu)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::data::random_normal;
    use interface::histogram::U32Bins;

    fn bin_f32(value: f32) -> Option<u32> {
        F32Bins::new(-4.0, 4.0, 256).bin(value)
    }

    #[test]
    fn f32_rule_handles_edges_nan_and_infinity() {
        assert_eq!(bin_f32(-4.0), Some(0));
        assert_eq!(bin_f32(0.0), Some(128));
        assert_eq!(bin_f32(-3.97), Some(0), "(−3.97+4)·32 = 0.96");
        assert_eq!(bin_f32(3.99), Some(255));
        assert_eq!(bin_f32(4.0), Some(255), "NumPy's last bin holds its upper edge");
        assert_eq!(bin_f32(f32::from_bits(4.0f32.to_bits() + 1)), None);
        assert_eq!(bin_f32(f32::from_bits((-4.0f32).to_bits() + 1)), None, "just below -4");
        assert_eq!(bin_f32(f32::NAN), None);
        assert_eq!(bin_f32(f32::NEG_INFINITY), None);
        assert_eq!(bin_f32(f32::INFINITY), None);
        assert_eq!(bin_f32(f32::from_bits(4.0f32.to_bits() - 1)), Some(255));
    }

    /// NumPy's bins, from its edges: `np.linspace(lo, hi, bins + 1)` in f64 (`b · step + lo`,
    /// the last edge `hi`) rounded to f32, each value in the last bin whose edge is at or
    /// below it, `hi` itself in the last bin.
    fn numpy_bins(values: &[f32], lo: f64, hi: f64, bins: u32) -> Vec<u32> {
        let step = (hi - lo) / bins as f64;
        let edges: Vec<f32> =
            (0..=bins).map(|b| if b == bins { hi as f32 } else { (b as f64 * step + lo) as f32 }).collect();
        let mut counts = vec![0u32; bins as usize];
        for &v in values {
            if v >= edges[0] && v <= edges[bins as usize] {
                let b = edges.partition_point(|&e| e <= v) - 1;
                counts[b.min(bins as usize - 1)] += 1;
            }
        }
        counts
    }

    #[test]
    fn f32_bins_equal_numpys_on_normal_values() {
        // The issue's case: 3,000,000 normal values over [-4, 4]; an f32 index alone put 2262 of
        // them one bin off NumPy's at 20000 bins and 22 at 150.
        let values = random_normal(3_000_000, 11);
        for bins in [150, 256, 20000] {
            let rule = F32Bins::new(-4.0, 4.0, bins);
            assert_eq!(
                cpu_reference(values.iter().copied(), rule),
                numpy_bins(&values, -4.0, 4.0, bins),
                "{bins} bins"
            );
        }
    }

    #[test]
    fn f32_bins_equal_numpys_at_every_edge() {
        // Each edge, its f32 neighbours, and the midpoints, for ranges whose bounds are not
        // f32 numbers (0.7 rounds down, 0.1 up), far from zero, and with bins narrower than
        // an ulp of their edges.
        for (lo, hi, bins) in [
            (-4.0, 4.0, 20000),
            (0.7, 1.0, 3),
            (-0.1, 0.1, 7),
            (1000.0, 1001.0, 12345),
            (1e-3, 2e-3, 999),
            (-3e4, 5e4, 65535),
        ] {
            let rule = F32Bins::new(lo, hi, bins);
            let mut values = Vec::new();
            for b in 0..=bins {
                let edge = rule.edge(b);
                values.extend([edge, edge.next_down(), edge.next_up()]);
                values.push((lo + (b as f64 + 0.5) * (hi - lo) / bins as f64) as f32);
            }
            let what = format!("[{lo}, {hi}] in {bins} bins");
            assert_eq!(cpu_reference(values.iter().copied(), rule), numpy_bins(&values, lo, hi, bins), "{what}");
        }
    }

    #[test]
    fn ranges_that_cannot_hold_the_bins_are_refused() {
        assert!(f32_range_holds(-4.0, 4.0, 256));
        assert!(!f32_range_holds(1.0, 1.0 + 1e-12, 4), "one f32 number");
        assert!(!f32_range_holds(4.0, -4.0, 4));
        assert!(!f32_range_holds(f64::NEG_INFINITY, 0.0, 4));
        let binning = Binning { input: Input::F32, bins: 4, range: (1.0, 1.0 + 1e-12) };
        let message = binning.validate().unwrap_err().to_string();
        assert!(message.contains("the f32 range [1, 1.000000000001] cannot hold 4 bins"), "{message}");
    }

    #[test]
    fn api_inputs_are_checked() {
        assert_eq!(checked_bins(Input::U32, 1, 1, (0.0, 0.0)).unwrap(), 1);
        assert_eq!(checked_bins(Input::F32, 5, 150, (-4.0, 4.0)).unwrap(), 150);
        let refused = |input, values, bins, range| checked_bins(input, values, bins, range).unwrap_err().to_string();
        let message = refused(Input::U32, 0, 4, (0.0, 0.0));
        assert!(message.contains("histogram: the values are empty"), "{message}");
        let message = refused(Input::F32, 3, 0, (0.0, 1.0));
        assert!(message.contains("histogram: the counts hold no bin"), "{message}");
        let message = refused(Input::U32, 3, MAX_BINS as usize + 1, (0.0, 0.0));
        assert!(message.contains(&format!("histogram: {} bins; at most {MAX_BINS}", MAX_BINS as usize + 1)));
        for range in [(1.0, 0.0), (1.0, 1.0 + 1e-12), (f64::NAN, 1.0), (0.0, f64::INFINITY)] {
            let message = refused(Input::F32, 3, 4, range);
            assert!(message.contains("histogram: the f32 range"), "{message}");
        }
    }

    #[test]
    fn reference_counts_a_hand_made_input() {
        let bins = cpu_reference([0u32, 5, 5, 255, 256, 1000], U32Bins::new(256));
        assert_eq!((bins[0], bins[5], bins[255]), (1, 2, 1));
        assert_eq!(bins.iter().sum::<u32>(), 4, "256 and 1000 are out of range");
        let bins = cpu_reference([-4.0f32, -3.99, 3.99, 4.0, f32::NAN], F32Bins::new(-4.0, 4.0, 256));
        assert_eq!((bins[0], bins[255], bins.iter().sum::<u32>()), (2, 2, 4));
        // The tutorial's 150 bins over [-4, 4]: 0 is in bin 75, -4 in bin 0, 3.99 in bin 149.
        let bins = cpu_reference([0.0f32, -4.0, 3.99], F32Bins::new(-4.0, 4.0, 150));
        assert_eq!((bins.len(), bins[75], bins[0], bins[149]), (150, 1, 1, 1));
    }
}
