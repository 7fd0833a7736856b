//! The local mode on the GPU: the image goes up once, and the maps, the S/N image, the labels
//! and the image less its background stay there; only the grid (a few f64 a point), the label
//! count, the islands' records and the fits come back, and the maps and labels when asked.
//!
//! ```text
//!   image ──► background_grid ──► background_interpolate ──► background, noise, S/N
//!     │                                                              │
//!     │      S/N ──► label(S/N > flood) ──► measure(S/N) ──► seeded islands (host)
//!     └──► image − background (saxpy, a = −1) ──► measure ──► fit(islands, noise map)
//! ```
//!
//! With two background passes (the default), the grid stays on the GPU between them: the mask's
//! grid is made from the first's (`background_least_noise`), its interpolation writes the
//! masked image into the buffer of the image less its background (free until then), whose grid
//! and counts are made over the first's, and `background_fill` leaves out the crowded points
//! and fills the grid from the first's before the second interpolation; only the second grid
//! comes back (for the catalog's noise). No image crosses the bus, and the mask's arithmetic is
//! the CPU's (the S/N rounded to f32, compared in f64), so both paths make the same maps.

use super::{mask_reach, nan_pixels, picked, seeded, Found, Passes, Settings, MASKED_AT_MOST, MASK_LEVEL};
use crate::io::Image;
use crate::sources::Stage;
use cuda_kernels::background::{Mapper, Maps, Mask, Params};
use cuda_kernels::data::timed;
use cuda_kernels::fit::{self, FitArgs};
use cuda_kernels::gpu::{blocks, require, CudaContext, Gpu, GpuResult};
use cuda_kernels::label::Labeler;
use cuda_kernels::measure::{Measurer, Source};
use cuda_kernels::saxpy::{Method, SaxpyArgs, BLOCKS_PER_SM};
use cust::event::{Event, EventFlags};
use cust::memory::{AsyncCopyDestination, DeviceBuffer};
use cust::stream::{Stream, StreamFlags, StreamWaitEventFlags};
use interface::background::FIELDS;
use interface::fit::{RECORD_WORDS, STATUS_WORDS};
use interface::DEFAULT_BLOCK;
use ndarray::Array2;

/// What to copy back besides the catalog: the maps (for `--check`, `--background-map` and
/// `--noise-map`) and the labels (for `--check` and `--labels`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CopyBack {
    pub maps: bool,
    pub labels: bool,
}

/// The image on the GPU, and the labeling's and measures' buffers, allocated once: the
/// pipeline can run again on the same image (`host sources --runs`).
pub struct Pipeline<'g> {
    gpu: &'g Gpu,
    width: usize,
    height: usize,
    image: DeviceBuffer<f32>,
    labeler: Labeler,
    measurer: Measurer,
    /// A stream of the pipeline's own, that does not wait for the `Gpu`'s: the islands'
    /// measures on the data run there beside the fits.
    side: Stream,
}

impl Drop for Pipeline<'_> {
    /// Waits for the work queued on the pipeline's buffers before they are freed; an error here
    /// is one a wait already returned.
    fn drop(&mut self) {
        let _ = self.gpu.synchronize("the local source finder");
    }
}

/// The buffers of one run, the image's size each (the grid's, its points').
struct Run {
    grid: DeviceBuffer<f64>,
    /// Each box's count of finite pixels, made for a second pass.
    finite: DeviceBuffer<u32>,
    background: DeviceBuffer<f32>,
    noise: DeviceBuffer<f32>,
    snr: DeviceBuffer<f32>,
    /// The image less its background: what the fit reads.
    data: DeviceBuffer<f32>,
}

impl<'g> Pipeline<'g> {
    /// Uploads `image` (through the `Gpu`'s page-locked chunks, `Gpu::upload_staged`) and
    /// allocates the labeling's and the measures' buffers.
    pub fn new(gpu: &'g Gpu, image: &Image) -> GpuResult<Self> {
        crate::sources::check_shape(image)?;
        let (width, height) = (image.width, image.height);
        Ok(Self {
            gpu,
            width,
            height,
            image: gpu.upload_staged("the image", &image.pixels)?,
            labeler: Labeler::new(gpu, width, height)?,
            measurer: Measurer::new(gpu, width, height)?,
            side: Stream::new(StreamFlags::NON_BLOCKING, None).during("creating a stream")?,
        })
    }

    /// Runs the three steps on the uploaded image (`image` is what was uploaded: its NaN pixels
    /// are counted, and an infinite one named, on the host), the background made as often as
    /// `settings.passes` says. The result equals [`super::find`]'s as [`super::compare`] holds
    /// it; `maps` and `labels` are there as `copy` asks.
    pub fn find(&self, image: &Image, settings: &Settings, copy: CopyBack) -> GpuResult<Found> {
        settings.check()?;
        let gpu = self.gpu;
        let n = self.width * self.height;
        let mut stages = Vec::new();
        let mapper = Mapper::new(gpu, (self.height, self.width), &settings.params)?;
        let two_passes = settings.passes == Passes::Two;
        let (rows, columns) = mapper.grid_shape();
        let mut counted = Ok(0);
        let (made, ms) = timed(|| -> GpuResult<Run> {
            let run = Run {
                grid: gpu.poisoned("the background grid", mapper.grid_len())?,
                finite: gpu.poisoned("the boxes' finite counts", rows * columns)?,
                background: gpu.poisoned("the background map", n)?,
                noise: gpu.poisoned("the noise map", n)?,
                snr: gpu.poisoned("the S/N image", n)?,
                data: gpu.poisoned("the image less its background", n)?,
            };
            // SAFETY: the pipeline owns the image and `run` its buffers, which outlive the
            // kernels: every later copy back waits for them, and `run` is dropped only after the
            // fit's downloads.
            unsafe {
                let grid_args = mapper.grid_args(&self.image, &run.grid);
                let grid_args = if two_passes { grid_args.counting(&run.finite) } else { grid_args };
                gpu.launch("background_grid", &grid_args)?;
                let maps = mapper.interpolate_args(&self.image, &run.grid, &run.background, &run.noise, Some(&run.snr));
                gpu.launch("background_interpolate", &maps)?;
            }
            // The NaN count runs on the CPU (which names an infinite pixel) while the GPU makes
            // the maps.
            counted = nan_pixels(image);
            Ok(run)
        });
        let mut run = made?;
        let nan_pixels = counted?;
        stages.push(Stage { name: "background and noise (κσ clipping), NaN count", ms });
        let mut masked_pixels = None;
        if two_passes {
            let (second, ms) = timed(|| self.second_pass(&mapper, &run, settings));
            masked_pixels = Some(second?);
            stages.push(Stage { name: "background pass 2 (sources masked)", ms });
        }

        let (count, ms) = timed(|| self.labeler.label(gpu, &run.snr, settings.flood, settings.connectivity));
        let count = count?;
        stages.push(Stage { name: "flood labeling", ms });

        let (measured, ms) = timed(|| -> GpuResult<(Vec<usize>, Vec<Source>, usize)> {
            let on_snr = self.measurer.measure(gpu, &run.snr, self.labeler.labels(), count)?;
            let keep = seeded(&on_snr, settings);
            // Every pixel above the flood is an island's, seeded or not.
            let flooded_pixels = on_snr.iter().map(|s| s.pixels).sum();
            // SAFETY: `run` and the pipeline outlive the copy and the kernel: the fit's
            // downloads wait for them.
            unsafe {
                run.data.async_copy_from(&self.image, gpu.stream()).during("copying the image on the GPU")?;
                let most = gpu.sms() * BLOCKS_PER_SM;
                let grid = blocks(n.div_ceil(4), DEFAULT_BLOCK as usize)?.min(most);
                let args = SaxpyArgs { a: -1.0, x: &run.background, y: &run.data, grid, block: DEFAULT_BLOCK };
                gpu.launch(Method::Vec4.kernel(), &args)?;
            }
            let islands = picked(&on_snr, &keep);
            Ok((keep, islands, flooded_pixels))
        });
        let (keep, islands, flooded_pixels) = measured?;
        stages.push(Stage { name: "island measures", ms });

        let (fitted, ms) = timed(|| self.fit(&run, (&islands, &keep), count, settings, mapper.grid_len()));
        let (fits, measures, grid) = fitted?;
        stages.push(Stage { name: "Gaussian fits", ms });

        let mut found = Found {
            nan_pixels,
            grid,
            masked_pixels,
            maps: None,
            flooded_pixels,
            flooded: count as usize,
            islands,
            measures,
            fits,
            labels: Vec::new(),
            stages,
        };
        if copy.maps {
            let (maps, ms) = timed(|| self.maps(&run, &settings.params, found.grid.clone()));
            found.maps = Some(maps?);
            found.stages.push(Stage { name: "maps copied back", ms });
        }
        if copy.labels {
            let (labels, ms) = timed(|| gpu.download("the labels", self.labeler.labels(), n));
            found.labels = labels?;
            found.stages.push(Stage { name: "labels copied back", ms });
        }
        Ok(found)
    }

    /// The second background pass over `run`, whose maps, grid and boxes' counts of finite
    /// pixels are the first's: the mask's grid (`background_least_noise` of the first's)
    /// interpolated over the image into `run.data`, masked, its grid and counts made (over the
    /// first's, where the mask left a box whole), the crowded points dropped and the grid filled
    /// from the first's (`background_fill`), and that grid interpolated over the image into
    /// `run`'s maps. Returns how many pixels were left out.
    fn second_pass(&self, mapper: &Mapper, run: &Run, settings: &Settings) -> GpuResult<usize> {
        let gpu = self.gpu;
        let points = mapper.grid_len() / FIELDS;
        // Made in the stream's order: the first pass is still running, and a synchronous memset
        // would wait for it before the second pass could be queued.
        let count = gpu.zeroed_in_order::<u32>("the masked pixels' count", 1)?;
        let touched = gpu.zeroed_in_order::<u32>("the mask's tiles", mapper.tiles())?;
        let sky = gpu.poisoned_in_order("the mask's grid", mapper.grid_len())?;
        let mut first = gpu.poisoned_in_order("the first pass's grid", mapper.grid_len())?;
        let mut before = gpu.poisoned_in_order::<u32>("the first pass's finite counts", points)?;
        let lists = gpu.poisoned_in_order::<u32>("the filling's lists", 2 * points)?;
        let means = gpu.poisoned_in_order::<f64>("the filling's means", points)?;
        // SAFETY: this call owns `first` and `before` and `run` the grid and counts, which
        // outlive the copies: the count's download below waits for everything queued. They are
        // ordered on the stream before the kernels below that write the grid and counts.
        unsafe {
            first.async_copy_from(&run.grid, gpu.stream()).during("keeping the first pass's grid")?;
            before.async_copy_from(&run.finite, gpu.stream()).during("keeping the first pass's counts")?;
        }
        let least_noise = mapper.least_noise_args(&run.grid, mask_reach(&settings.params), &sky);
        let maps = mapper.interpolate_args(&self.image, &sky, &run.background, &run.noise, None);
        let mask = Mask { level: MASK_LEVEL, masked: &run.data, count: &count, touched: &touched };
        // `run.grid` and `run.finite` still hold the first pass's values, which a box the mask
        // left whole keeps; `first` and `before` keep them for the filling.
        let grid_args = mapper.grid_args(&run.data, &run.grid).counting(&run.finite).keeping_untouched(&touched);
        let fill_args = mapper.fill_args(&run.grid, &first, (&before, &run.finite), MASKED_AT_MOST, &lists, &means);
        let second = mapper.interpolate_args(&self.image, &run.grid, &run.background, &run.noise, Some(&run.snr));
        // SAFETY: the pipeline owns the image, `run` its buffers and this call the others, which
        // outlive the kernels: the count's download below waits for everything queued.
        unsafe {
            gpu.launch("background_least_noise", &least_noise)?;
            gpu.launch("background_interpolate", &maps.masking(mask))?;
            gpu.launch("background_grid", &grid_args)?;
            gpu.launch("background_fill", &fill_args)?;
            gpu.launch("background_interpolate", &second)?;
        }
        Ok(gpu.download("the masked pixels' count", &count, 1)?[0] as usize)
    }

    /// The fits of `islands` in the image less its background (`run.data`), weighted by the
    /// noise map, and the measures of the islands in it: those of labels 1..=`count`, picked by
    /// `keep`; and the first `grid_len` values of the background grid the maps were made from
    /// (for the catalog's noise). The measures and the grid's copy back run on the side stream
    /// beside the fits, whose launch outlasts them (a survey image's largest islands keep a few
    /// blocks busy long after the rest are done), rather than on the way to the labels, where
    /// the grid's copy held up everything after it.
    fn fit(
        &self,
        run: &Run,
        (islands, keep): (&[Source], &[usize]),
        count: u32,
        settings: &Settings,
        grid_len: usize,
    ) -> GpuResult<(Vec<fit::IslandFit>, Vec<Source>, Vec<f64>)> {
        let gpu = self.gpu;
        if islands.is_empty() {
            return Ok((Vec::new(), Vec::new(), gpu.download("the background grid", &run.grid, grid_len)?));
        }
        // Everything queued so far (the labels, and the data's subtraction) before the side
        // stream's measures; nothing the fit does after it writes what they read.
        let written = Event::new(EventFlags::DISABLE_TIMING).during("creating an event")?;
        written.record(gpu.stream()).during("ordering the measures after the data")?;
        self.side.wait_event(written, StreamWaitEventFlags::DEFAULT).during("ordering the measures after the data")?;
        let boxes: Vec<fit::Island> = islands.iter().map(fit::Island::from).collect();
        let records = gpu.upload("the islands", &fit::island_words(&boxes))?;
        let (fits, status) = fit::outputs(gpu, boxes.len())?;
        let fit_settings = settings.fit();
        let args = FitArgs {
            image: &run.data,
            labels: self.labeler.labels(),
            noise: &run.noise,
            noise_map: true,
            width: self.width,
            height: self.height,
            islands: &records,
            seed: fit_settings.seed,
            beam_sigma: fit_settings.beam_sigma,
            fits: &fits,
            status: &status,
        };
        // SAFETY: the downloads below wait for the kernel before any buffer it reads or writes
        // can go.
        unsafe { gpu.launch("fit_islands", &args) }?;
        // SAFETY: the event above orders every write to the data and the labels before the side
        // stream's work, and the fit only reads them.
        let on_data = unsafe { self.measurer.measure_on(gpu, &self.side, &run.data, self.labeler.labels(), count) };
        let mut grid = vec![0.0; grid_len];
        let during = "copying the background grid back";
        let queued = (|| -> GpuResult<()> {
            require(grid_len <= run.grid.len(), || format!("{during}: {grid_len} values of {}", run.grid.len()))?;
            // SAFETY: the side stream waits for the event above, behind the last write to the
            // grid; `grid` holds as many values as the copy writes, and the wait below holds it
            // and the buffer until the copy is done.
            unsafe { run.grid.index(..grid_len).async_copy_to(&mut grid[..], &self.side) }.during(during)
        })();
        // After an error too: nothing queued may outlive `grid` (as `measure_on` waits).
        let grid_copied = queued.and(self.side.synchronize().during(during));
        // The fit's buffers are waited for before an error of the measures or the grid is
        // returned.
        let fit_words = gpu.download("the fits", &fits, boxes.len() * RECORD_WORDS)?;
        let status_words = gpu.download("the fits' status", &status, boxes.len() * STATUS_WORDS)?;
        grid_copied?;
        Ok((fit::decode(&boxes, &fit_words, &status_words), picked(&on_data?, keep), grid))
    }

    /// The maps of `run` (made with `params`), copied back, with `grid`.
    fn maps(&self, run: &Run, params: &Params, grid: Vec<f64>) -> GpuResult<Maps> {
        let shape = (self.height, self.width);
        let map = |what: &str, buffer: &DeviceBuffer<f32>| -> GpuResult<Array2<f32>> {
            let values = self.gpu.download(what, buffer, self.width * self.height)?;
            Ok(Array2::from_shape_vec(shape, values).expect("a value per pixel"))
        };
        Ok(Maps {
            grid_shape: Mapper::for_shape(shape, params)?.grid_shape(),
            grid,
            background: map("the background map", &run.background)?,
            noise: map("the noise map", &run.noise)?,
            snr: map("the S/N image", &run.snr)?,
        })
    }

    /// Each run's result in order, `runs` times (at least once) on the uploaded image: what
    /// `host sources --runs` times. Only the last copies back what `copy` asks.
    pub fn runs(&self, image: &Image, settings: &Settings, runs: usize, copy: CopyBack) -> GpuResult<Vec<Found>> {
        let runs = runs.max(1);
        (0..runs)
            .map(|run| self.find(image, settings, if run + 1 == runs { copy } else { CopyBack::default() }))
            .collect()
    }
}
