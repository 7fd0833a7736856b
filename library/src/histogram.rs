//! Host side of `kernels::histogram`: any number of bins over u32 values or over f32 values in
//! [min, max] (NumPy's bins exactly); global atomics vs shared-memory privatization, scalar and 16-byte loads. The CPU
//! reference bins with the kernels' own rule (`interface::histogram`), so every value lands in
//! the same bin. The values are random or read from a `.npy` file (`--input-file`); `--output`
//! writes the counts as `.npy`.

use crate::gpu::{
    refuse, require, require_aligned, require_disjoint, require_len, GpuResult, KernelArgs, LaunchConfig, Params,
};
use cust::memory::{DeviceCopy, DeviceSlice};
use interface::histogram::{BinRule, F32Bins};

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
    pub const ALL: [Method; 3] = [Method::Global, Method::Shared, Method::SharedVec4];

    fn uses_shared_bins(self) -> bool {
        self != Method::Global
    }

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
    pub input: Input,
    pub bins: u32,
    pub range: (f64, f64),
}

impl Binning {
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

    pub fn f32_rule(&self) -> F32Bins {
        F32Bins::new(self.range.0, self.range.1, self.bins)
    }
}

/// The values of a histogram as its kernels take them.
#[derive(Clone, Copy)]
pub enum Values<'a> {
    U32(&'a DeviceSlice<u32>),
    /// f32 values, counted over `[min, max]` with NumPy's edges.
    F32 {
        values: &'a DeviceSlice<f32>,
        min: f64,
        max: f64,
    },
}

/// The arguments of the histogram kernels: `values` counted into `bins` bins of `counts` by a
/// one-dimensional grid of `grid` blocks of `block` threads (any sizes: the loops are
/// grid-stride; the shared-memory kernels get their bins' shared memory from
/// [`Histogram::shaped`]).
pub struct HistogramArgs<'a> {
    pub values: Values<'a>,
    pub bins: u32,
    pub counts: &'a DeviceSlice<u32>,
    pub grid: u32,
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
        // The case: 3,000,000 normal values over [-4, 4]; an f32 index alone put 2262 of
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
                values.extend([edge, f32::from_bits(edge.to_bits() - 1), f32::from_bits(edge.to_bits() + 1)]);
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
