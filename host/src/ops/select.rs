//! The command line of the `select` family: its options and its registry entry.

pub use cuda_kernels::select::*;

use crate::check::Check;
use crate::data::{random_in, random_normal};
use crate::gpu::{require, Gpu, GpuResult, LaunchConfig};
use crate::registry::{one_per_element_sizes, Checked, Kernel, Purpose, Variant, Workload};
use crate::report::Work;
use cust::memory::DeviceBuffer;
use interface::select::STATE_TICKET;
use interface::window::Window;

#[derive(Debug, clap::Args)]
pub struct Options {
    /// Values.
    #[arg(long, default_value_t = 1 << 22)]
    pub n: usize,
    /// The 0-based rank of the value to find among those in the window; the median when omitted.
    #[arg(long)]
    pub k: Option<u64>,
    /// How the values are drawn.
    #[arg(long, value_parser = crate::registry::named::<Data>(), default_value_t = Data::Uniform)]
    pub data: Data,
    /// The fraction of the values made NaN (blanked pixels); two more become ±infinity.
    #[arg(long, default_value_t = 0.0)]
    pub nan: f64,
    /// The window's lower bound (exclusive); none when omitted.
    #[arg(long, allow_negative_numbers = true)]
    pub low: Option<f64>,
    /// The window's upper bound (exclusive); none when omitted.
    #[arg(long, allow_negative_numbers = true)]
    pub high: Option<f64>,
}

/// Values on the GPU and a selector, ready to launch.
pub struct Select {
    values: Vec<f32>,
    window: Window,
    k: Option<u64>,
    data: Data,
    device_values: DeviceBuffer<f32>,
    selector: Selector,
    variants: Vec<Variant>,
    expected: Option<(f64, u64)>,
}

impl Select {
    fn describe(result: Option<(f64, u64)>) -> String {
        match result {
            Some((value, count)) => format!("{value:e} of {count} values"),
            None => "none".into(),
        }
    }
}

/// This family's entry in [`super::FAMILIES`].
pub const ENTRY: crate::registry::Entry<Select> = crate::registry::Entry::new();

impl Kernel for Select {
    const NAME: &'static str = "select";
    const ABOUT: &'static str = "The exact k-th smallest f32 and the median, by radix select (no sort)";
    type Options = Options;

    fn launches(sms: u32) -> GpuResult<Vec<(&'static str, LaunchConfig)>> {
        let n = Options::DEFAULT_N;
        Ok(vec![(COUNT_KERNEL, count_config(count_grid(n, sms)))])
    }

    fn sizes(purpose: Purpose) -> Vec<String> {
        let sizes: &[&str] = match purpose {
            Purpose::Check => &[
                "--n 1",
                "--n 2",
                "--n 3 --k 2",
                "--n 1000003",
                "--n 1000004 --data noise",
                "--n 1000003 --data repeated",
                "--n 1000004 --data repeated --k 999",
                "--n 100003 --nan 0.1 --data normal",
                "--n 100004 --low -0.5 --high 0.25",
                "--n 100003 --nan 0.05 --low -0.01 --high 0.02 --data noise",
                "--n 999 --k 0",
                "--n 999 --k 998",
                "--n 1000 --k 1000",
                "--n 1000 --low 2 --high 3",
                "--n 4194304 --data noise",
            ],
            Purpose::Default => &[""],
            Purpose::Quick | Purpose::Full => &["--n 4194304 --data noise", "--n 4194304 --data repeated"],
            Purpose::Criterion => &[],
        };
        let mut sizes: Vec<String> = sizes.iter().map(|s| s.to_string()).collect();
        if !matches!(purpose, Purpose::Check | Purpose::Default) {
            sizes.splice(0..0, one_per_element_sizes(purpose));
        }
        sizes
    }

    /// `radix` on uniform values, and `radix-<data>` on the others: a sweep measures several
    /// kinds of data at one size, and each kind is a line of its own in the chart (one name
    /// for all would join them, the line going back from the largest size to an earlier one).
    fn variants_for(options: &Options) -> GpuResult<Vec<Variant>> {
        let name = match options.data {
            Data::Uniform => "radix".to_string(),
            data => format!("radix-{}", data.name()),
        };
        Ok(vec![Variant::new(name, COUNT_KERNEL)])
    }

    fn prepare(gpu: &Gpu, options: &Options, seed: u64) -> GpuResult<Self> {
        let n = options.n;
        require(n >= 1, || "select needs n >= 1".into())?;
        require(u32::try_from(n).is_ok(), || format!("select takes fewer than 2^32 values (got {n})"))?;
        require((0.0..=1.0).contains(&options.nan), || format!("--nan is a fraction in [0, 1] (got {})", options.nan))?;
        let window = Window::new(options.low.unwrap_or(f64::NEG_INFINITY), options.high.unwrap_or(f64::INFINITY));
        require(!window.low.is_nan() && !window.high.is_nan(), || "the window's bounds must be numbers".into())?;
        gpu.ensure_fits("select input", 4 * n as u64)?;
        let mut values = match options.data {
            Data::Uniform => random_in(n, seed, -1.0f32, 1.0),
            Data::Normal => random_normal(n, seed),
            Data::Noise => random_normal(n, seed).into_iter().map(|v| v * NOISE_SIGMA).collect(),
            Data::Repeated => random_in(n, seed, 0u32, 16).into_iter().map(|l| l as f32 * 0.25 - 2.0).collect(),
        };
        if options.nan > 0.0 {
            let draws = random_in(n, seed ^ 0x5E1E_C7ED, 0.0f64, 1.0);
            values.iter_mut().zip(draws).filter(|(_, d)| *d < options.nan).for_each(|(v, _)| *v = f32::NAN);
            values[0] = f32::INFINITY;
            values[n - 1] = f32::NEG_INFINITY;
        }
        let device_values = gpu.upload("select input", &values)?;
        let selector = Selector::new(gpu)?;
        let variants = Self::variants_for(options)?;
        Ok(Self { values, window, k: options.k, data: options.data, device_values, selector, variants, expected: None })
    }

    fn launch_cases(_kernel: &str, memory: &mut crate::launch_cases::Memory) -> crate::launch_cases::LaunchCases {
        use crate::launch_cases::{shifted, Args, Cases, LaunchCases};
        use cust::memory::{DevicePointer, DeviceSlice};
        use interface::select::{GATHER_CAP, HISTOGRAM_LEN, PASSES, STATE_WORDS};
        let mut refused: Vec<(String, Args)> = Vec::new();
        let n = 1001;
        let (values, histogram, state) = (memory.f32s(n), memory.u32s(HISTOGRAM_LEN), memory.u32s(STATE_WORDS));
        let gathered = memory.f32s(GATHER_CAP);
        let window = Window::FINITE;
        let with = |values, state, histogram, gathered, pass, grid| -> Args {
            Box::new(SelectCountArgs { values, window, pass, find: Find::Median, state, histogram, gathered, grid })
        };
        refused.push(("histogram short".into(), with(values, state, memory.u32s(HISTOGRAM_LEN - 1), gathered, 0, 4)));
        refused.push(("state short".into(), with(values, memory.u32s(STATE_WORDS - 1), histogram, gathered, 0, 4)));
        refused.push(("gathering short".into(), with(values, state, histogram, memory.f32s(GATHER_CAP - 1), 0, 4)));
        refused.push((
            "gathering misaligned".into(),
            with(values, state, histogram, shifted(memory.f32s(GATHER_CAP + 1)), 0, 4),
        ));
        refused.push(("histogram over the state".into(), with(values, histogram, histogram, gathered, 1, 4)));
        refused.push(("gathering is the values".into(), with(gathered, state, histogram, gathered, 1, 4)));
        let overlapping: &'static DeviceSlice<u32> = Box::leak(Box::new(
            // SAFETY: a view of the values' own addresses, only measured by the checks.
            unsafe {
                DeviceSlice::from_raw_parts(DevicePointer::from_raw(values.as_device_ptr().as_raw()), HISTOGRAM_LEN)
            },
        ));
        refused.push(("histogram over the values".into(), with(values, state, overlapping, gathered, 0, 4)));
        refused.push(("state over the values".into(), with(values, overlapping, histogram, gathered, 0, 4)));
        refused.push(("a pass past the last".into(), with(values, state, histogram, gathered, PASSES as u32, 4)));
        refused.push(("no blocks".into(), with(values, state, histogram, gathered, 0, 0)));
        refused.push(("values misaligned".into(), with(shifted(values), state, histogram, gathered, 0, 4)));
        LaunchCases::Cases(Cases { valid: with(values, state, histogram, gathered, 1, 4), refused })
    }
}

impl Options {
    const DEFAULT_N: usize = 1 << 22;
}

impl Workload for Select {
    fn shape(&self) -> String {
        let what = self.k.map_or("median".into(), |k| format!("k={k}"));
        let mut shape = format!("n={} {} {:?}", self.values.len(), what, self.data).to_lowercase();
        if self.window != Window::FINITE {
            shape += &format!(" ({}, {})", self.window.low, self.window.high);
        }
        shape
    }

    fn size(&self) -> u64 {
        self.values.len() as u64
    }

    fn peer(&self) -> Option<String> {
        let plain = self.k.is_none() && self.window == Window::FINITE && self.values.len() == Options::DEFAULT_N;
        plain.then(|| format!("median_f32_{}", self.values.len()))
    }

    /// The least any selection moves: every value read once.
    fn work(&self) -> Work {
        Work::Bytes(4 * self.values.len() as u64)
    }

    fn variants(&self) -> &[Variant] {
        &self.variants
    }

    /// The whole selection: three passes, each with its find. A `k` past `u32` asks for rank
    /// `u32::MAX`, past every count (fewer than 2^32 values), so nothing is found.
    unsafe fn launch(&self, gpu: &Gpu, _variant: &Variant) -> GpuResult<()> {
        let find = self.k.map_or(Find::Median, |k| Find::Rank(u32::try_from(k).unwrap_or(u32::MAX)));
        self.selector.launch(gpu, &self.device_values, self.window, find)
    }

    /// The state is rewritten by every selection: poisoned, a word the finds forget shows. All
    /// but the ticket, which must stay zero between launches.
    fn before_check(&self, gpu: &Gpu) -> GpuResult<()> {
        gpu.poison("the select state", &self.selector.state.index(..STATE_TICKET))
    }

    fn compute_reference(&mut self) {
        self.expected = cpu_reference(&self.values, self.window, self.k);
    }

    fn check(&self, gpu: &Gpu, _variant: &Variant) -> GpuResult<Checked> {
        let outcome = self.selector.outcome(gpu)?;
        let got = match self.k {
            Some(_) => outcome.kth().map(|v| (f64::from(v), outcome.count)),
            None => outcome.median().map(|m| (m.value, m.count)),
        };
        let error = match (got, self.expected) {
            (Some((g, gc)), Some((c, cc))) if gc == cc => (g - c).abs(),
            (None, None) => 0.0,
            _ => f64::INFINITY,
        };
        // `==` also for ±0, which the two may hold in either sign.
        let passed = error == 0.0;
        let check = Check {
            passed,
            worst_error: error,
            tolerance: 0.0,
            mismatches: usize::from(!passed),
            first_mismatch: (!passed).then_some(0),
            race: None,
        };
        let note = format!("GPU {}, CPU {}", Self::describe(got), Self::describe(self.expected));
        Ok(Checked { check, note: Some(note) })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::FromArgMatches;

    /// The chart's lines are keyed by variant name and plotted at n: in a sweep, no name comes
    /// back at an n it already has.
    #[test]
    fn each_kind_of_data_is_a_line_of_its_own() {
        let select = crate::ops::family("select").expect("the select family");
        for purpose in [Purpose::Quick, Purpose::Full] {
            let mut points: Vec<(String, usize)> = Vec::new();
            for size in Select::sizes(purpose) {
                let matches = select.parse(&size).expect("a sweep size parses");
                let n = Options::from_arg_matches(&matches).expect("select's options").n;
                for variant in select.variants(&matches).expect("its variants") {
                    let point = (variant.name, n);
                    assert!(!points.contains(&point), "{purpose:?}: {point:?} twice");
                    points.push(point);
                }
            }
            assert!(points.contains(&("radix-noise".into(), 1 << 22)), "{points:?}");
        }
    }
}
