//! The command line of the `reduce` family: its options and its registry entry.

pub use cuda_kernels::reduce::*;

use crate::check::Check;
use crate::data::random_in;
use crate::gpu::{require, Gpu, GpuError, GpuResult, LaunchConfig};
use crate::registry::{one_per_element_sizes, Checked, Kernel, Purpose, StepVariant, Variant, Workload};
use crate::report::Work;
use cuda_kernels::stats;
use cust::memory::DeviceBuffer;
use interface::reduce::{grid_stride_blocks, BLOCK, BLOCKS_PER_SM, MOMENTS_BLOCKS_PER_SM, MOMENTS_FIELDS};
use interface::window::Window;
use rayon::prelude::*;

#[derive(Debug, clap::Args)]
pub struct Options {
    /// Values.
    #[arg(long, default_value_t = 1 << 28)]
    pub n: usize,
    /// Variants to run (all when omitted; only `moments` with --blank).
    #[arg(long = "variant", value_parser = crate::registry::named::<Step>())]
    pub variants: Vec<Step>,
    /// Blocks of the grid-stride kernels (0: as many as the values fill, up to 64 per SM for the
    /// sum and 3 for the moments).
    #[arg(long, default_value_t = 0)]
    pub grid: u32,
    /// Added to every value (uniform in [-1, 1)): a mean far from zero against the spread.
    #[arg(long, default_value_t = 0.0, allow_negative_numbers = true)]
    pub offset: f32,
    /// Fraction of the values set to NaN, as blanked pixels are (the sum is then NaN, so only
    /// the moments run).
    #[arg(long, default_value_t = 0.0)]
    pub blank: f64,
    /// The moments' window: values v with low < v < high.
    #[arg(long, default_value_t = f64::NEG_INFINITY, allow_negative_numbers = true)]
    pub low: f64,
    #[arg(long, default_value_t = f64::INFINITY, allow_negative_numbers = true)]
    pub high: f64,
}

impl Options {
    fn steps(&self) -> GpuResult<Vec<Step>> {
        match (self.variants.is_empty(), self.blank > 0.0) {
            (true, true) => Ok(vec![Step::Moments]),
            (true, false) => Ok(Step::ALL.to_vec()),
            (false, blanked) => {
                if blanked && self.variants.iter().any(|s| s.is_sum()) {
                    return Err(GpuError::InvalidInput(
                        "the sum of values with NaN (--blank) is NaN: only the moments variant takes them".into(),
                    ));
                }
                Ok(self.variants.clone())
            }
        }
    }
}

/// Values on the GPU and the scratch of every selected step.
pub struct Reduce {
    values: Vec<f32>,
    window: Window,
    steps: Vec<Step>,
    variants: Vec<Variant>,
    /// Blocks of `reduce_vec4` and of `reduce_moments`.
    grids: (u32, u32),
    device_values: DeviceBuffer<f32>,
    buffers: ScratchBuffers,
    expected: Option<(f64, f64, Moments)>,
}

impl Reduce {
    fn grid(&self, step: Step) -> u32 {
        if step == Step::Moments {
            self.grids.1
        } else {
            self.grids.0
        }
    }
}

/// Blocks of the grid-stride kernels: `--grid`, or as many as the values fill.
fn grids(n: usize, sms: u32, grid: u32) -> (u32, u32) {
    let fill = |per_sm| grid_stride_blocks(n, sms as usize, per_sm) as u32;
    if grid == 0 {
        (fill(BLOCKS_PER_SM), fill(MOMENTS_BLOCKS_PER_SM))
    } else {
        (grid, grid)
    }
}

/// This family's entry in [`super::FAMILIES`].
pub const ENTRY: crate::registry::Entry<Reduce> = crate::registry::Entry::new();

impl Kernel for Reduce {
    const NAME: &'static str = "reduce";
    const ABOUT: &'static str =
        "Sum of f32 as the reduction ladder (interleaved, sequential, first add, shuffles, vec4), and moments in a window";
    type Options = Options;

    fn launches(sms: u32) -> GpuResult<Vec<(&'static str, LaunchConfig)>> {
        let n = 1 << 28;
        let (vec4, moments) = grids(n, sms, 0);
        Step::ALL
            .iter()
            .map(|&step| {
                let grid = step.blocks(step.kernel(), n, if step == Step::Moments { moments } else { vec4 })?;
                Ok((step.kernel(), LaunchConfig { grid: (grid, 1, 1), block: (BLOCK as u32, 1, 1), shared_bytes: 0 }))
            })
            .collect()
    }

    fn sizes(purpose: Purpose) -> Vec<String> {
        match purpose {
            Purpose::Check => vec![
                "--n 1".into(),
                "--n 1000003".into(),
                "--n 1021 --grid 3".into(),
                "--n 4194311 --offset 1000".into(),
                "--n 1000003 --offset 10000 --blank 0.3 --low 9999.5 --high 10000.75".into(),
                "--n 100003 --blank 1".into(),
                "--n 1000 --variant moments --low 5 --high 6".into(),
            ],
            _ => one_per_element_sizes(purpose),
        }
    }

    fn variants_for(options: &Options) -> GpuResult<Vec<Variant>> {
        Ok(options.steps()?.iter().map(|s| s.variant()).collect())
    }

    fn prepare(gpu: &Gpu, options: &Options, seed: u64) -> GpuResult<Self> {
        let n = options.n;
        require(n >= 1, || "reduce needs n >= 1".into())?;
        require((0.0..=1.0).contains(&options.blank), || format!("--blank {} is not a fraction", options.blank))?;
        require(!options.low.is_nan() && !options.high.is_nan(), || "the window's bounds must not be NaN".into())?;
        let steps = options.steps()?;
        let grids = grids(n, gpu.sms(), options.grid);
        gpu.ensure_fits("reduce input", 4 * n as u64)?;
        let mut values = random_in(n, seed, -1.0f32, 1.0);
        if options.offset != 0.0 {
            values.par_iter_mut().for_each(|v| *v += options.offset);
        }
        if options.blank > 0.0 {
            let draws = random_in(n, seed ^ 0xB1A2_C3D4, 0.0f64, 1.0);
            values.par_iter_mut().zip(draws).for_each(|(v, d)| {
                if d < options.blank {
                    *v = f32::NAN;
                }
            });
        }
        let mut partials = 1;
        for &step in &steps {
            let grid = if step == Step::Moments { grids.1 } else { grids.0 };
            partials = partials.max(step.blocks(step.kernel(), n, grid)? as usize * step.partial_fields());
        }
        let window = Window::new(options.low, options.high);
        let reduce = Self {
            device_values: gpu.upload("reduce input", &values)?,
            buffers: ScratchBuffers::new(gpu, partials)?,
            variants: steps.iter().map(|s| s.variant()).collect(),
            values,
            window,
            steps,
            grids,
            expected: None,
        };
        for (&step, variant) in reduce.steps.iter().zip(&reduce.variants) {
            let grid = step.blocks(&variant.kernel, n, reduce.grid(step))?;
            gpu.validate(
                &variant.kernel,
                &LaunchConfig { grid: (grid, 1, 1), block: (BLOCK as u32, 1, 1), shared_bytes: 0 },
            )?;
        }
        Ok(reduce)
    }

    fn launch_cases(kernel: &str, memory: &mut crate::launch_cases::Memory) -> crate::launch_cases::LaunchCases {
        use crate::launch_cases::{shifted, Args, Cases, LaunchCases};
        use cust::memory::DeviceSlice;
        let mut refused: Vec<(String, Args)> = Vec::new();
        let (n, grid) = (1003, 5);
        let values = memory.f32s(n);
        let scratch = Scratch {
            partials: memory.slice(MOMENTS_FIELDS * n),
            // A sum's grid of at most 64 blocks takes two tickets; the moments take one.
            tickets: memory.u32s(2),
            result: memory.slice(MOMENTS_FIELDS),
        };
        let moments = kernel == "reduce_moments";
        let with = |values: &'static DeviceSlice<f32>, scratch: Scratch<'static>, grid: u32| -> Args {
            if moments {
                Box::new(MomentsArgs { values, window: Window::new(-0.5, 0.5), scratch, grid })
            } else {
                Box::new(ReduceArgs { values, scratch, grid })
            }
        };
        refused.push(("no values".into(), with(memory.f32s(0), scratch, grid)));
        let tickets = memory.u32s(if moments { 0 } else { 1 });
        refused.push(("tickets short".into(), with(values, Scratch { tickets, ..scratch }, grid)));
        let fields = if moments { MOMENTS_FIELDS } else { 1 };
        let result = memory.slice(fields - 1);
        refused.push(("result short".into(), with(values, Scratch { result, ..scratch }, grid)));
        // A partial per block: steps 1 and 2 launch 4 blocks for 1003 values, steps 3 and 4
        // two, the grid-stride kernels `grid` (the moments' partials have MOMENTS_FIELDS each).
        let needed = match kernel {
            "reduce_interleaved" | "reduce_sequential" => 4,
            "reduce_first_add" | "reduce_shuffle" => 2,
            "reduce_vec4" => grid as usize,
            _ => MOMENTS_FIELDS * grid as usize,
        };
        let partials = memory.slice(needed - 1);
        refused.push(("partials short".into(), with(values, Scratch { partials, ..scratch }, grid)));
        let aliased = Scratch { result: scratch.partials, ..scratch };
        refused.push(("result is the partials".into(), with(values, aliased, grid)));
        if moments || kernel == "reduce_vec4" {
            refused.push(("no blocks".into(), with(values, scratch, 0)));
            refused.push(("values misaligned".into(), with(shifted(memory.f32s(n + 1)), scratch, grid)));
        }
        if moments {
            let nan = Window::new(f64::NAN, 1.0);
            refused.push(("a NaN bound".into(), Box::new(MomentsArgs { values, window: nan, scratch, grid })));
            refused.push(("the sum's arguments".into(), Box::new(ReduceArgs { values, scratch, grid })));
        } else {
            let window = Window::FINITE;
            refused.push(("the moments' arguments".into(), Box::new(MomentsArgs { values, window, scratch, grid })));
        }
        LaunchCases::Cases(Cases { valid: with(values, scratch, grid), refused })
    }
}

impl Workload for Reduce {
    fn shape(&self) -> String {
        let window = if self.window == Window::FINITE {
            String::new()
        } else {
            format!(" window ({}, {})", self.window.low, self.window.high)
        };
        format!("n={} grid={}/{}{}", self.values.len(), self.grids.0, self.grids.1, window)
    }

    fn size(&self) -> u64 {
        self.values.len() as u64
    }

    fn peer(&self) -> Option<String> {
        Some("reduce_sum_f32".into())
    }

    fn work(&self) -> Work {
        Work::Bytes(4 * self.values.len() as u64)
    }

    fn variants(&self) -> &[Variant] {
        &self.variants
    }

    unsafe fn launch(&self, gpu: &Gpu, variant: &Variant) -> GpuResult<()> {
        let step = Step::named(&variant.kernel)?;
        let (values, scratch, grid) = (&*self.device_values, self.buffers.scratch(), self.grid(step));
        if step.is_sum() {
            gpu.launch(&variant.kernel, &ReduceArgs { values, scratch, grid })
        } else {
            gpu.launch(&variant.kernel, &MomentsArgs { values, window: self.window, scratch, grid })
        }
    }

    /// The result is NaN until a kernel writes it.
    fn before_check(&self, gpu: &Gpu) -> GpuResult<()> {
        gpu.poison("reduction result", &self.buffers.result)
    }

    fn compute_reference(&mut self) {
        let magnitude = stats::sum(&self.values, |v| f64::from(v.abs()));
        self.expected = Some((cpu_sum(&self.values), magnitude, cpu_moments(&self.values, self.window)));
    }

    fn check(&self, gpu: &Gpu, variant: &Variant) -> GpuResult<Checked> {
        let (sum, magnitude, moments) =
            self.expected.ok_or_else(|| GpuError::InvalidInput("reduce: no CPU reference computed".into()))?;
        if Step::named(&variant.kernel)?.is_sum() {
            let got = self.buffers.read::<1>(gpu.stream())?[0];
            let tolerance = sum_tolerance(magnitude);
            let error = (got - sum).abs();
            let passed = error <= tolerance;
            let check = Check {
                passed,
                worst_error: if error.is_nan() { f64::INFINITY } else { error },
                tolerance,
                mismatches: usize::from(!passed),
                first_mismatch: (!passed).then_some(0),
                race: None,
            };
            return Ok(Checked { check, note: Some(format!("sum {got:.10e}, CPU {sum:.10e}")) });
        }
        let got = Moments::from_fields(self.buffers.read::<MOMENTS_FIELDS>(gpu.stream())?);
        let errors = moments_errors(&got, &moments);
        // NaN is a mismatch.
        let bad = |e: &&f64| e.is_nan() || **e > 1.0;
        let first = errors.iter().position(|e| bad(&e));
        let check = Check {
            passed: first.is_none(),
            worst_error: errors.iter().fold(0.0, |w: f64, &e| w.max(if e.is_nan() { f64::INFINITY } else { e })),
            tolerance: 1.0,
            mismatches: errors.iter().filter(bad).count(),
            first_mismatch: first,
            race: None,
        };
        let sd = got.std().map_or("-".into(), |s| format!("{s:.9e}"));
        let note = format!(
            "{} inside, {} NaN, mean {:.9e}, std {}; errors in units of each field's tolerance",
            got.count, got.nan, got.mean, sd
        );
        Ok(Checked { check, note: Some(note) })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use interface::reduce::{MOMENTS_COUNT, MOMENTS_M2, MOMENTS_MAX, MOMENTS_MEAN, MOMENTS_MIN, MOMENTS_NAN};

    #[test]
    fn cpu_moments_keep_the_window_and_count_nan() {
        let values = [1.0f32, f32::NAN, 3.0, 4.0, 10.0, f32::NAN, -2.0];
        let m = cpu_moments(&values, Window::new(0.0, 5.0));
        // Members 1 3 4: mean 8/3, squared deviations (25 + 1 + 16)/9 = 42/9.
        assert_eq!((m.count, m.nan, m.min, m.max), (3, 2, 1.0, 4.0));
        assert!((m.mean - 8.0 / 3.0).abs() < 1e-15 && (m.m2 - 42.0 / 9.0).abs() < 1e-14, "{m:?}");
        assert!((m.std().unwrap() - (42.0f64 / 27.0).sqrt()).abs() < 1e-15);
        // Bounds are excluded; an empty window has no std.
        let empty = cpu_moments(&values, Window::new(4.0, 10.0));
        assert_eq!((empty.count, empty.nan, empty.std()), (0, 2, None));
        assert_eq!((empty.min, empty.max), (f32::INFINITY, f32::NEG_INFINITY));
    }

    #[test]
    fn the_moments_std_matches_the_source_statistics() {
        let values: Vec<f32> = (0..10_001).map(|k| 10_000.0 + 0.5 * (k % 4) as f32).collect();
        let m = cpu_moments(&values, Window::FINITE);
        assert_eq!(m.std(), stats::std(&values));
        assert_eq!(cpu_sum(&[1.5, -0.25, 1e8, -1e8]), 1.25);
    }

    #[test]
    fn fields_round_trip_and_errors_flag_each_field() {
        let m = Moments { count: 7, nan: 2, mean: 1.25, m2: 3.5, min: -1.0, max: 2.5 };
        let mut fields = [0.0; MOMENTS_FIELDS];
        fields[MOMENTS_COUNT] = 7.0;
        fields[MOMENTS_NAN] = 2.0;
        fields[MOMENTS_MEAN] = 1.25;
        fields[MOMENTS_M2] = 3.5;
        fields[MOMENTS_MIN] = -1.0;
        fields[MOMENTS_MAX] = 2.5;
        assert_eq!(Moments::from_fields(fields), m);
        assert!(moments_errors(&m, &m).iter().all(|&e| e == 0.0));
        let off = Moments { m2: 3.5 * (1.0 + 1e-6), count: 8, ..m };
        let errors = moments_errors(&off, &m);
        assert!(errors[MOMENTS_COUNT].is_infinite() && errors[MOMENTS_M2] > 1.0 && errors[MOMENTS_MEAN] == 0.0);
    }

    #[test]
    fn blank_values_select_the_moments_only() {
        let mut options = Options {
            n: 10,
            variants: vec![],
            grid: 0,
            offset: 0.0,
            blank: 0.5,
            low: f64::NEG_INFINITY,
            high: f64::INFINITY,
        };
        assert_eq!(options.steps().unwrap(), vec![Step::Moments]);
        options.variants = vec![Step::Vec4];
        assert!(options.steps().is_err());
        options.blank = 0.0;
        assert_eq!(options.steps().unwrap(), vec![Step::Vec4]);
    }
}
