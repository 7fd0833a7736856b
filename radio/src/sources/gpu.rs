//! The pipeline on the GPU: the image goes up once, and every step runs on it there with the
//! kernel families' host APIs. Only small answers come back between steps (a count and σ, a
//! median, the number of labels) and the catalog at the end.
//!
//! ```text
//!   image ──► moments(window) ──► median(window) ──► narrower window ──► … (κσ clipping)
//!     │             reduce             select          (host: two f64)
//!     └──► label(image > level) ──► measure(image, labels) ──► catalog
//!                 label                    measure
//! ```
//!
//! Clipping never copies or compacts the image: a round's pixels are those inside its window
//! (the intersection of every round's median ± κσ), and the reduction and the selection read
//! the whole image and test each pixel against it. The threshold is tested inside the labeling
//! kernels, so no mask is stored either.
//!
//! A round's moments and median do not depend on each other, and at this size each kernel is
//! short enough that launch and tail dominate it: the moments run on a second stream, beside
//! the selection's chain of passes instead of before it. The first round's median is launched
//! before the NaN count too (the moments of every finite pixel), and is read only once the count
//! has shown that there is no infinity and some pixel is left.

use super::clip::{self, Background, Pixels, Round};
use super::{Found, Settings, Stage};
use crate::io::Image;
use cuda_kernels::data::timed;
use cuda_kernels::gpu::{CudaContext, Gpu, GpuError, GpuResult};
use cuda_kernels::label::Labeler;
use cuda_kernels::measure::Measurer;
use cuda_kernels::reduce::{Moments, Reducer};
use cuda_kernels::select::{Find, Selector};
use cust::memory::DeviceBuffer;
use cust::stream::{Stream, StreamFlags};
use interface::window::Window;

/// The image on the GPU with everything the steps need, allocated once: the pipeline can run
/// again on the same image (`host sources --runs`) without allocating.
pub struct Pipeline<'g> {
    gpu: &'g Gpu,
    width: usize,
    height: usize,
    image: DeviceBuffer<f32>,
    /// Where each round's moments run, beside the selection on the main stream.
    side: Stream,
    reducer: Reducer,
    selector: Selector,
    labeler: Labeler,
    measurer: Measurer,
}

/// The image's pixels on the GPU, as κσ clipping asks for them: the moments and the median of
/// a window launched together on two streams, then a wait for each. `launched`: a window whose
/// moments are known and whose median is already on its way (the NaN count's).
struct OnGpu<'p, 'g> {
    pipeline: &'p Pipeline<'g>,
    launched: Option<(Window, Moments)>,
}

impl Pixels for OnGpu<'_, '_> {
    fn measure(&mut self, window: Window, count_before: Option<usize>) -> GpuResult<Round> {
        let pipeline = self.pipeline;
        let find = match count_before.map(u32::try_from) {
            Some(Ok(count)) => Find::MedianUnlessCount(count),
            _ => Find::Median,
        };
        let known = self.launched.take().filter(|(w, _)| *w == window).map(|(_, moments)| moments);
        if known.is_none() {
            pipeline.launch_round(window, find)?;
        }
        // The median's copy queues behind the passes before the wait for the moments, so that
        // the two waits overlap.
        let median = pipeline.selector.start_read_median(pipeline.gpu)?;
        let moments = match known {
            Some(moments) => moments,
            None => pipeline.reducer.read_moments(&pipeline.side)?,
        };
        let median = median.wait()?.map(|m| m.value);
        Ok(Round { count: moments.count as usize, sigma: moments.std(), median })
    }
}

impl Drop for Pipeline<'_> {
    /// Waits for the work queued on the pipeline's buffers, on both streams, before they are
    /// freed; an error here is one a wait already returned.
    fn drop(&mut self) {
        let _ = self.gpu.synchronize("the source finder");
        let _ = self.side.synchronize();
    }
}

impl<'g> Pipeline<'g> {
    /// Uploads `image` (through the `Gpu`'s page-locked chunks, `Gpu::upload_staged`) and
    /// allocates every step's buffers.
    pub fn new(gpu: &'g Gpu, image: &Image) -> GpuResult<Self> {
        super::check_shape(image)?;
        let (width, height) = (image.width, image.height);
        Ok(Self {
            gpu,
            width,
            height,
            image: gpu.upload_staged("the image", &image.pixels)?,
            // Blocking, as the main stream: the copies back wait for both.
            side: Stream::new(StreamFlags::DEFAULT, None).during("creating the pipeline's second stream")?,
            reducer: Reducer::new(gpu, image.pixels.len())?,
            selector: Selector::new(gpu)?,
            labeler: Labeler::new(gpu, width, height)?,
            measurer: Measurer::new(gpu, width, height)?,
        })
    }

    /// Launches the median of the pixels inside `window` (as `find` asks) on the main stream,
    /// and their moments beside it on the second: the reducer and the selector read them back.
    fn launch_round(&self, window: Window, find: Find) -> GpuResult<()> {
        // The selection's chain of passes is the longer: it goes first.
        // SAFETY: the pipeline owns the image, the selector and the reducer, and its drop
        // waits for both streams before they go.
        unsafe {
            self.selector.launch(self.gpu, &self.image, window, find)?;
            self.reducer.launch_moments(self.gpu, &self.side, &self.image, window)
        }
    }

    /// Runs the four steps on the image (`image` is what was uploaded, for naming an infinite
    /// pixel). The labels stay on the GPU: [`Pipeline::labels`] copies them back.
    pub fn find(&self, image: &Image, settings: &Settings) -> GpuResult<Found> {
        settings.check()?;
        let mut stages = Vec::new();
        let gpu = self.gpu;

        // NaN pixels are blanked; an infinity is an error, found on the CPU to name it. The first
        // round's median runs meanwhile.
        let (all, ms) = timed(|| {
            self.launch_round(Window::FINITE, Find::Median)?;
            self.reducer.read_moments(&self.side)
        });
        let all = all?;
        stages.push(Stage { name: "NaN count", ms });
        let pixels = image.pixels.len() as u64;
        if all.count + all.nan < pixels {
            return Err(super::infinite_pixel(image).unwrap_or_else(|| {
                GpuError::InvalidInput("the GPU counted infinite pixels that the CPU does not see".into())
            }));
        }
        if all.count == 0 {
            return Err(super::all_blanked(pixels as usize));
        }

        let mut pixels = OnGpu { pipeline: self, launched: Some((Window::FINITE, all)) };
        let (background, ms) = timed(|| clip::kappa_sigma(&mut pixels, settings.kappa));
        let background: Background = background?;
        stages.push(Stage { name: "κσ clipping", ms });

        let level = settings.threshold * background.sigma;
        let (count, ms) = timed(|| self.labeler.label(gpu, &self.image, level, settings.connectivity));
        let count = count?;
        stages.push(Stage { name: "threshold + labeling", ms });

        let (sources, ms) = timed(|| self.measurer.measure(gpu, &self.image, self.labeler.labels(), count));
        let sources = sources?;
        stages.push(Stage { name: "measures", ms });

        Ok(Found {
            nan_pixels: all.nan as usize,
            background,
            level,
            detected_pixels: sources.iter().map(|s| s.pixels).sum(),
            labels: Vec::new(),
            sources,
            stages,
        })
    }

    /// [`Pipeline::find`] `runs` times (at least once) on the uploaded image, each run's result
    /// and stage times in order: what `host sources --runs` and `host bench` time.
    pub fn runs(&self, image: &Image, settings: &Settings, runs: usize) -> GpuResult<Vec<Found>> {
        if runs == 0 {
            return Err(GpuError::InvalidInput("the pipeline needs at least 1 run".into()));
        }
        (0..runs).map(|_| self.find(image, settings)).collect()
    }

    /// The label image of the last [`Pipeline::find`], row by row.
    pub fn labels(&self) -> GpuResult<Vec<u32>> {
        self.gpu.download("the labels", self.labeler.labels(), self.width * self.height)
    }
}
