//! The command line of the `measure` family: its options and its registry entry.

pub use cuda_kernels::measure::*;

use crate::gpu::{refuse, Gpu, GpuResult, LaunchConfig};
use crate::ops::label::{cpu_reference as label, detect, Connectivity, Detection, Input};
use crate::registry::{Checked, Kernel, Purpose, Variant, Workload};
use crate::report::Work;
use cust::memory::DeviceBuffer;
use interface::measure::{BLOCK, RECORD_WORDS};

#[derive(Debug, clap::Args)]
pub struct Options {
    #[command(flatten)]
    pub input: Input,
    /// How the labels are found (on the CPU): pixels touching at an edge (4) or also at a
    /// corner (8) are one source.
    #[arg(long, value_parser = crate::registry::named::<Connectivity>(), default_value_t = Connectivity::Four)]
    pub connectivity: Connectivity,
}

/// The measures of one labelled image on the GPU, checked against [`measure`].
pub struct Measure {
    detection: Detection,
    labels: Vec<u32>,
    count: u32,
    image: DeviceBuffer<f32>,
    device_labels: DeviceBuffer<u32>,
    measurer: Measurer,
    variants: Vec<Variant>,
    expected: Vec<Source>,
}

/// The one variant.
fn runs() -> Variant {
    Variant::new("runs", "measure_labels")
}

/// This family's entry in [`super::FAMILIES`].
pub const ENTRY: crate::registry::Entry<Measure> = crate::registry::Entry::new();

impl Kernel for Measure {
    const NAME: &'static str = "measure";
    const ABOUT: &'static str =
        "Per label: pixels, flux, flux-weighted centre, peak and box (sum_labels, center_of_mass), f64 atomics per run";
    type Options = Options;

    fn launches(_sms: u32) -> GpuResult<Vec<(&'static str, LaunchConfig)>> {
        let kernel = "measure_labels";
        Ok(vec![(kernel, LaunchConfig::linear(threads(kernel, 2048, 2048)?, BLOCK)?)])
    }

    fn sizes(purpose: Purpose) -> Vec<String> {
        let mut sizes = Input::sizes(purpose);
        if purpose == Purpose::Check {
            sizes.push("--side 509 --connectivity 8".into());
        }
        sizes
    }

    fn variants_for(_options: &Options) -> GpuResult<Vec<Variant>> {
        Ok(vec![runs()])
    }

    fn prepare(gpu: &Gpu, options: &Options, seed: u64) -> GpuResult<Self> {
        let detection = options.input.read(seed)?;
        let (width, height) = (detection.width, detection.height);
        let (labels, count) = label(&detect(&detection.pixels, detection.level), width, options.connectivity);
        let measurer = Measurer::new(gpu, width, height)?;
        let image = gpu.upload("the image", &detection.pixels)?;
        let device_labels = gpu.upload("the labels", &labels)?;
        let count = u32::try_from(count).map_err(|_| refuse("measure_labels", "more labels than u32 counts"))?;
        measurer.reserve(gpu, count)?;
        Ok(Self { detection, labels, count, image, device_labels, measurer, variants: vec![runs()], expected: vec![] })
    }

    fn launch_cases(_kernel: &str, memory: &mut crate::launch_cases::Memory) -> crate::launch_cases::LaunchCases {
        use crate::launch_cases::{Args, Cases, LaunchCases};
        let mut refused: Vec<(String, Args)> = Vec::new();
        let (width, height, count) = (67, 45, 20);
        let n = width * height;
        let (image, labels, records) = (memory.f32s(n), memory.u32s(n), memory.slice::<f64>(6 * count as usize));
        let with = |image, labels, records, width, height, count| -> Args {
            Box::new(MeasureArgs { image, labels, width, height, records, count })
        };
        refused.push(("one row too many".into(), with(image, labels, records, width, height + 1, count)));
        refused.push(("records short".into(), with(image, labels, records, width, height, count + 1)));
        let overlapping = memory.same_memory(image);
        refused.push(("records overlap the image".into(), with(image, labels, overlapping, width, height, 1)));
        refused.push(("no pixels".into(), with(image, labels, records, 0, height, count)));
        refused.push(("dimensions overflow".into(), with(image, labels, records, usize::MAX, 2, count)));
        LaunchCases::Cases(Cases { valid: with(image, labels, records, width, height, count), refused })
    }
}

impl Workload for Measure {
    fn shape(&self) -> String {
        let d = &self.detection;
        format!("{}x{} {} sources", d.width, d.height, self.count)
    }

    fn size(&self) -> u64 {
        self.detection.width as u64
    }

    fn peer(&self) -> Option<String> {
        Some(format!("measure{}", self.detection.width))
    }

    /// The image and the labels read once.
    fn work(&self) -> Work {
        Work::Bytes(8 * self.labels.len() as u64)
    }

    fn variants(&self) -> &[Variant] {
        &self.variants
    }

    unsafe fn launch(&self, gpu: &Gpu, _variant: &Variant) -> GpuResult<()> {
        self.measurer.launch(gpu, &self.image, &self.device_labels, self.count, false)
    }

    /// Each launch adds to the records.
    fn reset(&self, gpu: &Gpu) -> GpuResult<()> {
        let words = self.count as usize * RECORD_WORDS;
        if words == 0 {
            return Ok(());
        }
        gpu.zero("source records", &self.measurer.records.borrow().index(..words))
    }

    fn before_check(&self, _gpu: &Gpu) -> GpuResult<()> {
        Ok(())
    }

    fn compute_reference(&mut self) {
        let d = &self.detection;
        self.expected = cpu_reference(&d.pixels, d.width, &self.labels, self.count as usize);
    }

    fn check(&self, gpu: &Gpu, _variant: &Variant) -> GpuResult<Checked> {
        let words = self.count as usize * RECORD_WORDS;
        let records = gpu.download("source records", &self.measurer.records.borrow(), words)?;
        let sources: Vec<Source> =
            records.chunks(RECORD_WORDS).zip(1..).map(|(record, label)| source(label, record)).collect();
        let pixels: usize = self.expected.iter().map(|s| s.pixels).sum();
        let note = format!("{} sources, {} pixels", self.count, pixels);
        Ok(Checked { check: compare(&sources, &self.expected), note: Some(note) })
    }
}
