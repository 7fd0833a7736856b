//! The command line of the `fit` family: its options and its registry entry.

pub use cuda_kernels::fit::*;

use crate::gpu::{require, Gpu, GpuResult, KernelArgs, LaunchConfig};
use crate::ops::label::{cpu_reference as label, detect, Connectivity, Detection, Input};
use crate::ops::measure::cpu_reference as measure;
use crate::registry::{Checked, Kernel, Purpose, Variant, Workload};
use crate::report::Work;
use cust::memory::DeviceBuffer;
use interface::fit::{BLOCK, ISLAND_WORDS, LISTED_ISLANDS, RECORD_WORDS, SHARED_BYTES, STATUS_WORDS};

#[derive(Debug, clap::Args)]
pub struct Options {
    #[command(flatten)]
    pub input: Input,
    /// How the islands are found (on the CPU): pixels touching at an edge (4) or also at a
    /// corner (8) are one island.
    #[arg(long, value_parser = crate::registry::named::<Connectivity>(), default_value_t = Connectivity::Four)]
    pub connectivity: Connectivity,
    /// A summit (a component's start) lies above this many times the noise's σ (Aegean's
    /// `--seedclip`).
    #[arg(long, default_value_t = 5.0)]
    pub seed_clip: f64,
    /// The beam's σ in pixels: each component starts with these axes (`host sky`'s point
    /// sources have σ 1 to 2.5).
    #[arg(long, default_value_t = 1.0)]
    pub beam_sigma: f64,
}

/// The fits of one image's islands on the GPU, checked against [`cpu_reference`].
pub struct Fit {
    detection: Detection,
    labels: Vec<u32>,
    islands: Vec<Island>,
    sigma: f64,
    settings: FitSettings,
    image: DeviceBuffer<f32>,
    device_labels: DeviceBuffer<u32>,
    /// The buffers of a launch, when there are islands to fit.
    device: Option<Buffers>,
    variants: Vec<Variant>,
    expected: Vec<IslandFit>,
}

/// The kernel's buffers besides the image and the labels.
struct Buffers {
    noise: DeviceBuffer<f32>,
    records: DeviceBuffer<u32>,
    fits: DeviceBuffer<f64>,
    status: DeviceBuffer<u32>,
}

/// The one variant.
fn levenberg_marquardt() -> Variant {
    Variant::new("levenberg-marquardt", "fit_islands")
}

/// This family's entry in [`super::FAMILIES`].
pub const ENTRY: crate::registry::Entry<Fit> = crate::registry::Entry::new();

impl Kernel for Fit {
    const NAME: &'static str = "fit";
    const ABOUT: &'static str =
        "Elliptical Gaussians fitted to each island, one per summit: Levenberg–Marquardt in f64, a block per island";
    type Options = Options;

    /// A block per island: listed for the twins' field of `LISTED_ISLANDS` sources.
    fn launches(_sms: u32) -> GpuResult<Vec<(&'static str, LaunchConfig)>> {
        let shared_bytes = SHARED_BYTES as u32;
        Ok(vec![("fit_islands", LaunchConfig { grid: (LISTED_ISLANDS, 1, 1), block: (BLOCK, 1, 1), shared_bytes })])
    }

    /// The check shapes: islands of one to a few pixels in noise (no summit, too few pixels, fits
    /// at the bounds), odd skies with and without blanking (the core and the shell, up to eight
    /// components), 8-connected islands, lower levels, and one island of noise above 0.05σ
    /// large enough to be fitted on a sampled grid. They stay small because racecheck runs them
    /// too, a thousand times slower; `radio`'s tests check the fits of whole skies.
    fn sizes(purpose: Purpose) -> Vec<String> {
        let sides: &[usize] = match purpose {
            Purpose::Default => return vec![String::new()],
            Purpose::Check => {
                return [
                    "--side 7 --threshold 1 --seed-clip 2",
                    "--side 37 --threshold 2",
                    "--side 127",
                    "--side 131 --blank --connectivity 8 --beam-sigma 1.5",
                    "--side 97 --blank --threshold 3 --seed-clip 4",
                    "--side 131 --threshold 0.05 --connectivity 8 --seed-clip 100",
                ]
                .iter()
                .map(|s| s.to_string())
                .collect()
            }
            Purpose::Quick => &[2048],
            Purpose::Full => &[512, 1024, 2048, 4096],
            Purpose::Criterion => &[1024],
        };
        sides.iter().map(|s| format!("--side {s}")).collect()
    }

    fn variants_for(_options: &Options) -> GpuResult<Vec<Variant>> {
        Ok(vec![levenberg_marquardt()])
    }

    fn prepare(gpu: &Gpu, options: &Options, seed: u64) -> GpuResult<Self> {
        let threshold = options.input.threshold;
        require(threshold > 0.0, || {
            format!("fit: --threshold must be above 0, the noise's σ is the level over it (got {threshold})")
        })?;
        let (seed_clip, beam_sigma) = (options.seed_clip, options.beam_sigma);
        require(seed_clip.is_finite() && seed_clip > 0.0, || {
            format!("--seed-clip must be finite and above 0 (got {seed_clip})")
        })?;
        require(beam_sigma.is_finite() && beam_sigma > 0.0, || {
            format!("--beam-sigma must be finite and above 0 (got {beam_sigma})")
        })?;
        let detection = options.input.read(seed)?;
        let (width, height) = (detection.width, detection.height);
        let sigma = detection.level / threshold;
        require((sigma as f32).is_finite() && sigma as f32 > 0.0, || {
            format!("fit: the image's noise σ is {sigma}; fitting needs one above 0")
        })?;
        let (labels, count) = label(&detect(&detection.pixels, detection.level), width, options.connectivity);
        let islands: Vec<Island> = measure(&detection.pixels, width, &labels, count).iter().map(Island::from).collect();
        let image = gpu.upload("the image", &detection.pixels)?;
        let device_labels = gpu.upload("the labels", &labels)?;
        let device = if islands.is_empty() {
            None
        } else {
            let (fits, status) = outputs(gpu, islands.len())?;
            Some(Buffers {
                noise: gpu.upload("the noise levels", &vec![sigma as f32; islands.len()])?,
                records: gpu.upload("the islands", &island_words(&islands))?,
                fits,
                status,
            })
        };
        if let Some(buffers) = &device {
            let args = args(&image, &device_labels, buffers, width, height, &settings(options));
            gpu.validate("fit_islands", &args.checked_config("fit_islands")?)?;
        }
        Ok(Self {
            detection,
            labels,
            islands,
            sigma,
            settings: settings(options),
            image,
            device_labels,
            device,
            variants: vec![levenberg_marquardt()],
            expected: vec![],
        })
    }

    fn launch_cases(_kernel: &str, memory: &mut crate::launch_cases::Memory) -> crate::launch_cases::LaunchCases {
        use crate::launch_cases::{changes, Args, Cases, LaunchCases};
        let mut refused: Vec<(String, Args)> = Vec::new();
        let (width, height, count) = (67, 45, 20);
        let n = width * height;
        let (image, labels, noise) = (memory.f32s(n), memory.u32s(n), memory.f32s(count));
        let (islands, fits, status) = (
            memory.u32s(count * ISLAND_WORDS),
            memory.slice::<f64>(count * RECORD_WORDS),
            memory.u32s(count * STATUS_WORDS),
        );
        let valid = FitArgs {
            image,
            labels,
            noise,
            noise_map: false,
            width,
            height,
            islands,
            seed: 5.0,
            beam_sigma: 1.0,
            fits,
            status,
        };
        let with = changes(move || FitArgs { ..valid });
        refused.push(("one row too many".into(), with(&|a| a.height += 1)));
        refused.push(("no pixels".into(), with(&|a| a.width = 0)));
        refused.push(("dimensions overflow".into(), with(&|a| a.width = usize::MAX)));
        let short_islands = memory.u32s(count * ISLAND_WORDS - 1);
        refused.push(("a partial island record".into(), with(&|a| a.islands = short_islands)));
        let no_islands = memory.u32s(0);
        refused.push(("no islands".into(), with(&|a| a.islands = no_islands)));
        refused.push(("a noise map short of the image".into(), with(&|a| a.noise_map = true)));
        let short_noise = memory.f32s(count - 1);
        refused.push(("a noise level short".into(), with(&|a| a.noise = short_noise)));
        let short_fits = memory.slice::<f64>(count * RECORD_WORDS - 1);
        refused.push(("fits short".into(), with(&|a| a.fits = short_fits)));
        let short_status = memory.u32s(count * STATUS_WORDS - 1);
        refused.push(("status short".into(), with(&|a| a.status = short_status)));
        let over_image = memory.same_memory(image);
        refused.push(("fits overlap the image".into(), with(&|a| a.fits = over_image)));
        let over_islands = memory.same_memory(islands);
        refused.push(("status overlaps the islands".into(), with(&|a| a.status = over_islands)));
        let over_status = memory.same_memory(status);
        refused.push(("fits overlap the status".into(), with(&|a| a.fits = over_status)));
        refused.push(("a seed of 0".into(), with(&|a| a.seed = 0.0)));
        refused.push(("a NaN beam".into(), with(&|a| a.beam_sigma = f64::NAN)));
        LaunchCases::Cases(Cases { valid: Box::new(valid), refused })
    }
}

/// The fit's settings from the options.
fn settings(options: &Options) -> FitSettings {
    FitSettings { seed: options.seed_clip, beam_sigma: options.beam_sigma }
}

/// The arguments of a launch on `buffers`.
fn args<'a>(
    image: &'a DeviceBuffer<f32>,
    labels: &'a DeviceBuffer<u32>,
    buffers: &'a Buffers,
    width: usize,
    height: usize,
    settings: &FitSettings,
) -> FitArgs<'a> {
    FitArgs {
        image,
        labels,
        noise: &buffers.noise,
        noise_map: false,
        width,
        height,
        islands: &buffers.records,
        seed: settings.seed,
        beam_sigma: settings.beam_sigma,
        fits: &buffers.fits,
        status: &buffers.status,
    }
}

impl Workload for Fit {
    fn shape(&self) -> String {
        let d = &self.detection;
        format!("{}x{} {} islands", d.width, d.height, self.islands.len())
    }

    fn size(&self) -> u64 {
        self.detection.width as u64
    }

    /// Time only: the work is each island's iterations, which the data decide.
    fn work(&self) -> Work {
        Work::Launches
    }

    fn variants(&self) -> &[Variant] {
        &self.variants
    }

    unsafe fn launch(&self, gpu: &Gpu, _variant: &Variant) -> GpuResult<()> {
        let Some(buffers) = &self.device else { return Ok(()) };
        let d = &self.detection;
        let args = args(&self.image, &self.device_labels, buffers, d.width, d.height, &self.settings);
        // SAFETY: the caller keeps the workload, and so its buffers, until the stream has run it.
        unsafe { gpu.launch("fit_islands", &args) }
    }

    fn before_check(&self, gpu: &Gpu) -> GpuResult<()> {
        if let Some(buffers) = &self.device {
            gpu.poison("the fits", &buffers.fits)?;
            gpu.poison("the fits' status", &buffers.status)?;
        }
        Ok(())
    }

    fn compute_reference(&mut self) {
        let d = &self.detection;
        // `prepare` checked what the reference checks; were it refused, no fit would match.
        self.expected =
            cpu_reference(&d.pixels, d.width, &self.labels, &self.islands, Noise::Level(self.sigma), &self.settings)
                .unwrap_or_default();
    }

    fn check(&self, gpu: &Gpu, _variant: &Variant) -> GpuResult<Checked> {
        let fits = match &self.device {
            Some(buffers) => {
                let count = self.islands.len();
                let words = gpu.download("the fits", &buffers.fits, count * RECORD_WORDS)?;
                let status = gpu.download("the fits' status", &buffers.status, count * STATUS_WORDS)?;
                decode(&self.islands, &words, &status)
            }
            None => vec![],
        };
        let components: usize = fits.iter().map(|f| f.components.len()).sum();
        let flagged = |flag: Flags| fits.iter().filter(|f| f.flags.contains(flag)).count();
        let note = format!(
            "{} islands, {} components; {} not converged, {} with too many summits",
            fits.len(),
            components,
            flagged(Flags::NOT_CONVERGED),
            flagged(Flags::TOO_MANY_SUMMITS)
        );
        let check = compare(&fits, &self.expected);
        // A mismatch names the first island that differs, as each side fitted it.
        let note = match check.first_mismatch.and_then(|i| Some((fits.get(i)?, self.expected.get(i)?))) {
            Some((g, c)) => format!("{note}; first mismatch: GPU {} / CPU {}", summary(g), summary(c)),
            None => note,
        };
        Ok(Checked { check, note: Some(note) })
    }
}

/// An island's fit in a line: what [`compare`] holds equal, and the first component.
fn summary(fit: &IslandFit) -> String {
    let first = fit.components.first().map_or(String::new(), |c| {
        let p = &c.params;
        format!(", first ({:.6e}, {:.6}, {:.6}, {:.6}, {:.6}, {:.6})", p.peak, p.x, p.y, p.major, p.minor, p.theta)
    });
    format!(
        "island {}: flags {:#x}, {} iterations, {} pixels, {} summits, {} components, χ² {:.9e}{first}",
        fit.label,
        fit.flags.0,
        fit.iterations,
        fit.pixels,
        fit.summits,
        fit.components.len(),
        fit.chi2
    )
}
