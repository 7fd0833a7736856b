//! The command line of the `background` family: its options and its registry entry.

pub use cuda_kernels::background::*;

use crate::fits::{self, Header};
use crate::gpu::{CudaContext, Gpu, GpuResult, LaunchConfig};
use crate::io;
use crate::ops::label::Sky;
use crate::registry::{Checked, Kernel, Purpose, Variant, Workload};
use crate::report::{Report, Work};
use cust::memory::{AsyncCopyDestination, DeviceBuffer};
use interface::background::FIELDS;
use radio::sources::local::MASKED_AT_MOST;
use std::path::{Path, PathBuf};

#[derive(Debug, clap::Args)]
pub struct Options {
    #[command(flatten)]
    pub sky: Sky,
    /// Pixels between grid points (default: 4 beams from the header, else 16).
    #[arg(long)]
    pub step: Option<usize>,
    /// Pixels a side of each grid point's box (default: 6 steps).
    #[arg(long = "box")]
    pub box_size: Option<usize>,
    /// Values strictly inside median ± κσ stay in each clipping round.
    #[arg(long, default_value_t = DEFAULT_KAPPA)]
    pub kappa: f64,
    /// The most clipping rounds.
    #[arg(long, default_value_t = DEFAULT_ROUNDS)]
    pub rounds: u32,
    /// Writes the background map here (.fits, .npy, or a PNG clamped to [0, 1]).
    #[arg(long)]
    pub background_map: Option<PathBuf>,
    /// Writes the noise map here.
    #[arg(long)]
    pub noise_map: Option<PathBuf>,
    /// Writes the signal-to-noise image here.
    #[arg(long)]
    pub snr_map: Option<PathBuf>,
}

/// The beam and pixel size in the header of the FITS file at `path`, as BANE reads them
/// (`get_step_size`, `radio::sources::local::beam_of`): `None` without BMAJ and BMIN or without
/// a pixel size.
fn beam_of(path: &Path, header: &Header) -> GpuResult<Option<Beam>> {
    radio::sources::local::beam_of(header).map_err(|e| io::file_error(path, e))
}

impl Options {
    /// The image the options name: its width, height and pixels, and the beam of its header.
    fn read(&self, seed: u64) -> GpuResult<(usize, usize, Vec<f32>, Option<Beam>)> {
        match &self.sky.image {
            Some(path) if io::ImageKind::of(path) == io::ImageKind::Fits => {
                let (image, header) = fits::read_image_and_header(path, None)?;
                Ok((image.width, image.height, image.pixels, beam_of(path, &header)?))
            }
            Some(path) => {
                let image = io::read_image(path)?;
                Ok((image.width, image.height, image.pixels, None))
            }
            None => {
                let (width, height, pixels) = self.sky.synthetic(seed)?;
                Ok((width, height, pixels, None))
            }
        }
    }

    /// The parameters, and where the grid's step came from.
    fn params(&self, beam: Option<Beam>) -> GpuResult<(Params, String)> {
        let (step, from) = match (self.step, beam) {
            (Some(step), _) => (step, "given".to_string()),
            (None, Some(beam)) => {
                let step = Params::from_beam(&beam)?.step.0;
                (step, format!("4 beams of {:.2} pixels (BMAJ, BMIN)", beam.pixels()?))
            }
            (None, None) => (DEFAULT_STEP, "BANE's default without a beam".to_string()),
        };
        let box_size = self.box_size.unwrap_or(STEPS_PER_BOX * step);
        let params = Params { kappa: self.kappa, rounds: self.rounds, ..Params::new(step, box_size) };
        Ok((params, from))
    }
}

/// The maps of one image on the GPU, checked against [`cpu_reference`].
pub struct Background {
    width: usize,
    height: usize,
    pixels: Vec<f32>,
    params: Params,
    from: String,
    mapper: Mapper,
    image: DeviceBuffer<f32>,
    /// The grid the interpolation reads, made once by `background_grid` when prepared.
    made_grid: DeviceBuffer<f64>,
    /// The grid variant's output.
    grid: DeviceBuffer<f64>,
    /// The least-noise variant's output, from the made grid.
    sky: DeviceBuffer<f64>,
    /// The fill variant's grid (the made grid, copied in before each launch), its counts of
    /// each box's finite pixels before and after a mask ([`crowded_counts`], on the host too),
    /// and its lists and means.
    filled: DeviceBuffer<f64>,
    counts: (Vec<u32>, Vec<u32>),
    device_counts: (DeviceBuffer<u32>, DeviceBuffer<u32>),
    lists: DeviceBuffer<u32>,
    means: DeviceBuffer<f64>,
    background: DeviceBuffer<f32>,
    noise: DeviceBuffer<f32>,
    snr: DeviceBuffer<f32>,
    variants: Vec<Variant>,
    expected: Option<Maps>,
    outputs: [Option<PathBuf>; 3],
}

fn variants() -> Vec<Variant> {
    vec![
        Variant::new("grid", "background_grid"),
        Variant::new("interpolate", "background_interpolate"),
        Variant::new("least-noise", "background_least_noise"),
        Variant::new("fill", "background_fill"),
    ]
}

/// Counts of a mask's work for the fill variant, a box's finite pixels before and after it, per
/// grid point of `shape`: every box whole (`box_pixels` each), but a disc of a sixth of the
/// grid's size about its centre, whose boxes lost three quarters, and every seventh point of
/// the disc's middle row, which lost half (kept: not more than `MASKED_AT_MOST`).
fn crowded_counts((rows, columns): (usize, usize), box_pixels: u32) -> (Vec<u32>, Vec<u32>) {
    let before = vec![box_pixels; rows * columns];
    let radius = rows.min(columns) as f64 / 6.0;
    let after = (0..rows * columns)
        .map(|p| {
            let (dy, dx) = ((p / columns) as f64 - rows as f64 / 2.0, (p % columns) as f64 - columns as f64 / 2.0);
            match (dy * dy + dx * dx <= radius * radius, p / columns == rows / 2 && p % 7 == 0) {
                (_, true) => box_pixels - box_pixels / 2,
                (true, false) => box_pixels / 4,
                (false, false) => box_pixels,
            }
        })
        .collect();
    (before, after)
}

/// This family's entry in [`super::FAMILIES`].
pub const ENTRY: crate::registry::Entry<Background> = crate::registry::Entry::new();

impl Kernel for Background {
    const NAME: &'static str = "background";
    const ABOUT: &'static str =
        "Background and noise maps as BANE makes them: σ-clipped median and σ per grid point (a box in shared memory, its median found by histograms), bilinear to every pixel, and S/N; the least noise within a box of each point; a second pass's crowded points dropped and filled";
    type Options = Options;

    fn launches(_sms: u32) -> GpuResult<Vec<(&'static str, LaunchConfig)>> {
        Ok(Mapper::for_shape((2048, 2048), &Params::default())?.configs()?.to_vec())
    }

    fn sizes(purpose: Purpose) -> Vec<String> {
        let sides: &[usize] = match purpose {
            Purpose::Default => return vec![String::new()],
            Purpose::Check => {
                return [
                    "--side 1",
                    "--side 2 --step 1 --box 1",
                    "--side 37",
                    "--side 37 --step 5 --box 7 --kappa 2",
                    "--side 509 --blank",
                    "--side 509 --step 13 --box 41 --rounds 3",
                    "--side 1031 --blank --step 20",
                ]
                .iter()
                .map(|s| s.to_string())
                .collect()
            }
            Purpose::Quick => &[2048],
            Purpose::Full => &[512, 1024, 2048, 4096],
            Purpose::Criterion => &[512],
        };
        sides.iter().map(|s| format!("--side {s}")).collect()
    }

    fn variants_for(_options: &Options) -> GpuResult<Vec<Variant>> {
        Ok(variants())
    }

    fn prepare(gpu: &Gpu, options: &Options, seed: u64) -> GpuResult<Self> {
        let (width, height, pixels, beam) = options.read(seed)?;
        let (params, from) = options.params(beam)?;
        let mapper = Mapper::new(gpu, (height, width), &params)?;
        let n = pixels.len();
        let image = gpu.upload("the image", &pixels)?;
        let made_grid = gpu.poisoned("the grid", mapper.grid_len())?;
        // SAFETY: the synchronize below waits for the kernel before anything it uses can go.
        unsafe { gpu.launch("background_grid", &mapper.grid_args(&image, &made_grid)) }?;
        gpu.synchronize("making the grid")?;
        let (rows, columns) = mapper.grid_shape();
        let box_pixels = (params.box_size.0.min(height) * params.box_size.1.min(width)) as u32;
        let counts = crowded_counts((rows, columns), box_pixels);
        let device_counts = (gpu.upload("the counts before", &counts.0)?, gpu.upload("the counts after", &counts.1)?);
        Ok(Self {
            width,
            height,
            pixels,
            params,
            from,
            mapper,
            image,
            made_grid,
            grid: gpu.poisoned("the grid", mapper.grid_len())?,
            sky: gpu.poisoned("the least noise", mapper.grid_len())?,
            filled: gpu.poisoned("the filled grid", mapper.grid_len())?,
            counts,
            device_counts,
            lists: gpu.poisoned("the filling's lists", 2 * rows * columns)?,
            means: gpu.poisoned("the filling's means", rows * columns)?,
            background: gpu.poisoned("the background map", n)?,
            noise: gpu.poisoned("the noise map", n)?,
            snr: gpu.poisoned("the S/N image", n)?,
            variants: variants(),
            expected: None,
            outputs: [options.background_map.clone(), options.noise_map.clone(), options.snr_map.clone()],
        })
    }

    fn launch_cases(kernel: &str, memory: &mut crate::launch_cases::Memory) -> crate::launch_cases::LaunchCases {
        use crate::launch_cases::{changes, Args, Cases, LaunchCases};
        let mut refused: Vec<(String, Args)> = Vec::new();
        let (width, height) = (67usize, 45usize);
        let n = width * height;
        let mapper = Mapper::for_shape((height, width), &Params::new(8, 24)).expect("a valid layout");
        let image = memory.f32s(n);
        let grid = memory.slice::<f64>(mapper.grid_len());
        let valid: Args = match kernel {
            "background_grid" => {
                let good = mapper.grid_args(image, grid);
                let with = changes(move || mapper.grid_args(image, grid));
                refused.push(("one row too many".into(), with(&|a| a.height += 1)));
                refused.push(("no pixels".into(), with(&|a| a.width = 0)));
                refused.push(("dimensions overflow".into(), with(&|a| a.width = usize::MAX)));
                refused.push(("a step of 0".into(), with(&|a| a.step_y = 0)));
                refused.push(("a box of 0".into(), with(&|a| a.box_x = 0)));
                let wide = memory.f32s(300 * 300);
                let past_shared = |a: &mut GridArgs<'static>| {
                    (a.image, a.width, a.height, a.box_x, a.box_y) = (wide, 300, 300, 250, 250);
                };
                refused.push(("a box of more pixels than MAX_BOX".into(), with(&past_shared)));
                let short = memory.slice::<f64>(mapper.grid_len() - 1);
                refused.push(("grid short".into(), with(&|a| a.grid = short)));
                let overlapping = memory.same_memory(image);
                refused.push(("grid overlaps the image".into(), with(&|a| a.grid = overlapping)));
                Box::new(good)
            }
            "background_interpolate" => {
                let (background, noise, snr) = (memory.f32s(n), memory.f32s(n), memory.f32s(n));
                let args = move || mapper.interpolate_args(image, grid, background, noise, Some(snr));
                let with = changes(args);
                refused.push(("one row too many".into(), with(&|a| a.height += 1)));
                refused.push(("no pixels".into(), with(&|a| a.height = 0)));
                refused.push(("dimensions overflow".into(), with(&|a| a.height = usize::MAX)));
                refused.push(("a step of 0".into(), with(&|a| a.step_x = 0)));
                refused.push(("a finer grid than the grid holds".into(), with(&|a| a.step_x = 4)));
                let short = memory.f32s(n - 1);
                refused.push(("noise short".into(), with(&|a| a.noise = short)));
                refused.push(("S/N short".into(), with(&|a| a.snr = Some(short))));
                refused.push(("noise is the background".into(), with(&|a| a.noise = a.background)));
                refused.push(("S/N is the noise".into(), with(&|a| a.snr = Some(a.noise))));
                refused.push(("background is the image".into(), with(&|a| a.background = a.image)));
                let overlapping = memory.same_memory(grid);
                refused.push(("noise overlaps the grid".into(), with(&|a| a.noise = overlapping)));
                // Without the S/N map the others are checked all the same.
                refused.push(("no S/N, noise short".into(), with(&|a| (a.snr, a.noise) = (None, short))));
                Box::new(args())
            }
            "background_least_noise" => {
                let sky = memory.slice::<f64>(mapper.grid_len());
                let args = move || mapper.least_noise_args(grid, (2, 3), sky);
                let with = changes(args);
                refused.push(("no points".into(), with(&|a| a.shape.0 = 0)));
                refused.push(("points overflow".into(), with(&|a| a.shape = (usize::MAX, 2))));
                refused.push(("one row too many".into(), with(&|a| a.shape.0 += 1)));
                let short = memory.slice::<f64>(mapper.grid_len() - 1);
                refused.push(("sky short".into(), with(&|a| a.sky = short)));
                refused.push(("sky is the grid".into(), with(&|a| a.sky = a.grid)));
                Box::new(args())
            }
            "background_fill" => {
                let points = mapper.grid_len() / FIELDS;
                let (first, before, after) =
                    (memory.slice::<f64>(mapper.grid_len()), memory.slice::<u32>(points), memory.slice::<u32>(points));
                let (lists, means) = (memory.slice::<u32>(2 * points), memory.slice::<f64>(points));
                let args = move || mapper.fill_args(grid, first, (before, after), 0.5, lists, means);
                let with = changes(args);
                refused.push(("no points".into(), with(&|a| a.shape.1 = 0)));
                refused.push(("points overflow".into(), with(&|a| a.shape = (usize::MAX, 2))));
                refused.push(("one row too many".into(), with(&|a| a.shape.0 += 1)));
                refused.push(("a NaN share".into(), with(&|a| a.at_most = f64::NAN)));
                let short = memory.slice::<u32>(2 * points - 1);
                refused.push(("lists short".into(), with(&|a| a.lists = short)));
                refused.push(("first is the grid".into(), with(&|a| a.first = a.grid)));
                refused.push(("lists are the counts".into(), with(&|a| a.lists = a.before)));
                Box::new(args())
            }
            other => unreachable!("background has no kernel {other}"),
        };
        LaunchCases::Cases(Cases { valid, refused })
    }
}

impl Background {
    /// The least-noise variant's reach, in grid points: the source finder's second pass's.
    fn reach(&self) -> (usize, usize) {
        radio::sources::local::mask_reach(&self.params)
    }

    /// The maps the last launches wrote, with `grid`, from the GPU.
    fn maps(&self, gpu: &Gpu, grid: &DeviceBuffer<f64>) -> GpuResult<Maps> {
        let n = self.pixels.len();
        let map = |buffer: &DeviceBuffer<f32>, what: &str| -> GpuResult<ndarray::Array2<f32>> {
            let values = gpu.download(what, buffer, n)?;
            Ok(ndarray::Array2::from_shape_vec((self.height, self.width), values).expect("a value per pixel"))
        };
        Ok(Maps {
            grid_shape: self.mapper.grid_shape(),
            grid: gpu.download("the grid", grid, self.mapper.grid_len())?,
            background: map(&self.background, "the background map")?,
            noise: map(&self.noise, "the noise map")?,
            snr: map(&self.snr, "the S/N image")?,
        })
    }
}

impl Workload for Background {
    fn shape(&self) -> String {
        let (step, size) = (self.params.step, self.params.box_size);
        format!("{}x{} step {} box {}", self.width, self.height, step.0, size.0)
    }

    fn size(&self) -> u64 {
        self.width as u64
    }

    /// The grid: the image read at least once. The interpolation: the image read, three maps
    /// written, the grid read.
    fn work(&self) -> Work {
        let n = self.pixels.len() as u64;
        Work::Bytes(16 * n + 8 * self.mapper.grid_len() as u64)
    }

    /// The least noise: the grid read once and written once. The fill: the grid copied in, then
    /// read (with the first's) and its counts read.
    fn work_of(&self, variant: &Variant) -> Work {
        match variant.kernel.as_str() {
            "background_least_noise" => Work::Bytes(16 * self.mapper.grid_len() as u64),
            "background_fill" => Work::Bytes(32 * self.mapper.grid_len() as u64 + 8 * self.counts.0.len() as u64),
            _ => self.work(),
        }
    }

    fn variants(&self) -> &[Variant] {
        &self.variants
    }

    unsafe fn launch(&self, gpu: &Gpu, variant: &Variant) -> GpuResult<()> {
        match variant.kernel.as_str() {
            "background_grid" => gpu.launch("background_grid", &self.mapper.grid_args(&self.image, &self.grid)),
            "background_least_noise" => {
                let args = self.mapper.least_noise_args(&self.made_grid, self.reach(), &self.sky);
                gpu.launch("background_least_noise", &args)
            }
            "background_fill" => {
                // The kernel fills its grid in place: each launch starts from the made grid.
                let mut filled = self.filled.index(..);
                filled.async_copy_from(&self.made_grid, gpu.stream()).during("copying the grid to fill")?;
                let counts = (&*self.device_counts.0, &*self.device_counts.1);
                let args = self.mapper.fill_args(&self.filled, &self.made_grid, counts, MASKED_AT_MOST, &self.lists, &self.means);
                gpu.launch("background_fill", &args)
            }
            _ => {
                let args = self.mapper.interpolate_args(
                    &self.image,
                    &self.made_grid,
                    &self.background,
                    &self.noise,
                    Some(&self.snr),
                );
                gpu.launch("background_interpolate", &args)
            }
        }
    }

    fn before_check(&self, gpu: &Gpu) -> GpuResult<()> {
        gpu.poison("the grid", &self.grid)?;
        gpu.poison("the least noise", &self.sky)?;
        gpu.poison("the filled grid", &self.filled)?;
        for (what, map) in
            [("the background map", &self.background), ("the noise map", &self.noise), ("the S/N image", &self.snr)]
        {
            gpu.poison(what, map)?;
        }
        Ok(())
    }

    fn compute_reference(&mut self) {
        self.expected = cpu_reference(&self.pixels, self.width, &self.params).ok();
    }

    fn check(&self, gpu: &Gpu, variant: &Variant) -> GpuResult<Checked> {
        let expected = self.expected.as_ref().ok_or_else(|| {
            crate::gpu::GpuError::InvalidInput("background: the CPU reference refused the parameters".into())
        })?;
        let (rows, columns) = self.mapper.grid_shape();
        let note = format!("{}x{} grid ({}), box {}", columns, rows, self.from, self.params.box_size.0);
        let check = match variant.kernel.as_str() {
            "background_grid" => {
                compare_grid(&gpu.download("the grid", &self.grid, self.mapper.grid_len())?, &expected.grid)
            }
            "background_least_noise" => {
                let sky = gpu.download("the least noise", &self.sky, self.mapper.grid_len())?;
                compare_grid(&sky, &least_noise(&expected.grid, (rows, columns), self.reach()))
            }
            "background_fill" => {
                let filled = gpu.download("the filled grid", &self.filled, self.mapper.grid_len())?;
                let mut want = expected.grid.clone();
                drop_crowded(&mut want, &self.counts.0, &self.counts.1, MASKED_AT_MOST);
                fill(&mut want, &expected.grid, columns);
                compare_grid(&filled, &want)
            }
            _ => compare(&self.maps(gpu, &self.made_grid)?, expected),
        };
        Ok(Checked { check, note: Some(note) })
    }

    fn finish(&self, gpu: &Gpu, _reports: &mut [Report]) -> GpuResult<()> {
        let maps = [&self.background, &self.noise, &self.snr];
        for (path, map) in self.outputs.iter().zip(maps) {
            if let Some(path) = path {
                let pixels = gpu.download("a map", map, self.pixels.len())?;
                io::write_image(path, self.width, self.height, &pixels)?;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fits::parse_card;

    fn header(cards: &[&str]) -> Header {
        Header { cards: cards.iter().map(|c| parse_card(format!("{c:<80}").as_bytes())).collect() }
    }

    fn options(step: Option<usize>, box_size: Option<usize>) -> Options {
        Options {
            sky: Sky { side: 64, blank: false, image: None },
            step,
            box_size,
            kappa: DEFAULT_KAPPA,
            rounds: DEFAULT_ROUNDS,
            background_map: None,
            noise_map: None,
            snr_map: None,
        }
    }

    #[test]
    fn the_grid_comes_from_the_header_as_bane_takes_it() {
        let path = Path::new("sky.fits");
        // A beam of 5/64° on pixels of 1/64°: 5 pixels, a step of 4 beams, a box of 6 steps.
        let cards = ["BMAJ    = 0.078125", "BMIN    = 0.078125", "CDELT1  = -0.015625", "CDELT2  = 0.015625"];
        let beam = beam_of(path, &header(&cards)).unwrap();
        assert_eq!(options(None, None).params(beam).unwrap().0, Params::new(20, 120));
        // Given sizes win; a given step alone takes a box of 6 steps.
        assert_eq!(options(Some(8), None).params(beam).unwrap().0, Params::new(8, 48));
        assert_eq!(options(Some(8), Some(31)).params(beam).unwrap().0, Params::new(8, 31));
        // CD1_1 and CD2_2 stand in for CDELT1 and CDELT2.
        let cards = ["BMAJ    = 0.078125", "BMIN    = 0.078125", "CD1_1   = -0.015625", "CD2_2   = 0.015625"];
        assert_eq!(beam_of(path, &header(&cards)).unwrap(), beam);
        // Without a beam or a pixel size, BANE's default.
        assert_eq!(beam_of(path, &header(&["BMAJ    = 0.078125", "CDELT1  = 1.0"])).unwrap(), None);
        assert_eq!(beam_of(path, &header(&["BMAJ    = 0.078125", "BMIN    = 0.078125"])).unwrap(), None);
        assert_eq!(options(None, None).params(None).unwrap().0, Params::default());
        // A keyword that is not a number is an error naming the file.
        let message = beam_of(path, &header(&["BMAJ    = 'wide'", "BMIN    = 1.0"])).unwrap_err().to_string();
        assert!(message.contains("sky.fits") && message.contains("BMAJ"), "{message}");
    }
}
