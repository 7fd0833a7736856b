//! Per label, what `scipy.ndimage` measures of the image under it: the pixel count, the summed
//! flux (`sum_labels`), the flux-weighted centre (`center_of_mass`), the brightest pixel
//! (`maximum`) and the bounding box (`find_objects`). [`measure`] (device arrays) and
//! [`measure_array`] (`ndarray` views) measure on the GPU, [`cpu_reference`] on the CPU;
//! [`measure`] gives the definitions.
//!
//! SciPy adds each label's values with `np.bincount(labels, weights)`, one pixel after another
//! in raster order, in f64, and weighs the centre by `data * row` and `data * column` in f64
//! (exact: an f32 times an integer below 2^24). One sequential pass here adds in that same
//! order, so the sums are NumPy's to the last bit; it reads the image once, a few
//! milliseconds at 2048².
//!
//! Beside it, the host side of `kernels::measure` ([`Measurer`], the binding [`MeasureArgs`])
//! and the `measure` family of the registry, whose sources are checked against these: the
//! same pixels and boxes and peaks, fluxes within 1e-5 relative and centres within 1e-4 pixel
//! (the GPU adds in another order).

use crate::check::Check;
use crate::gpu::{
    product, refuse, require, require_disjoint, require_kernel, require_len, CudaContext, DeviceArray, DeviceMatrix, Gpu,
    GpuError, GpuResult, KernelArgs, LaunchConfig, Params,
};
use cust::memory::{AsyncCopyDestination, DeviceBuffer, DeviceSlice};
use cust::stream::Stream;
use interface::measure::{peak_of, BLOCK, ITEMS, PEAK, PIXELS, RECORD_WORDS, X_MAX, X_MIN, Y_MAX, Y_MIN};
use ndarray::ArrayView2;
use serde::Serialize;
use std::cell::RefCell;

/// One source: a connected component of the detection mask.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Source {
    /// Its label, 1..n in raster order of its first pixel, as `scipy.ndimage.label` numbers it.
    pub label: u32,
    /// `center_of_mass(data, labels, label)`, which SciPy returns as (row, column): the
    /// flux-weighted mean row…
    pub y: f64,
    /// …and column, 0-based, a pixel's centre at whole numbers.
    pub x: f64,
    /// `sum_labels(data, labels, label)`: the sum of its pixels.
    pub flux: f64,
    /// `maximum(data, labels, label)`: its brightest pixel.
    pub peak: f64,
    /// How many pixels it has (`np.bincount(labels)[label]`).
    pub pixels: usize,
    /// Its bounding box, inclusive: `find_objects(labels)[label - 1]` is
    /// `(slice(y_min, y_max + 1), slice(x_min, x_max + 1))`. Its first row…
    pub y_min: usize,
    /// …its last row…
    pub y_max: usize,
    /// …its first column…
    pub x_min: usize,
    /// …and its last column.
    pub x_max: usize,
}

/// The sums of one label so far.
#[derive(Clone)]
struct Sums {
    pixels: usize,
    flux: f64,
    flux_y: f64,
    flux_x: f64,
    peak: f32,
    rows: (usize, usize),
    cols: (usize, usize),
}

/// The sources of labels 1..=`count` of `labels` over `pixels` (both row-major, `width` a
/// row), measured on the CPU in SciPy's order: one [`Source`] per label, in label order. 0 is
/// the background, and labels above `count` are left out. A label no pixel carries gets the
/// empty sums: 0 pixels and flux, a NaN centre, a peak of −∞ and a box of `usize::MAX` minima
/// and 0 maxima.
///
/// ```
/// use cuda_kernels::measure::cpu_reference;
///
/// let pixels = [1.0, 3.0, 9.0, 0.0, 4.0, 9.0];
/// let labels = [1, 1, 0, 0, 1, 0];
/// let source = &cpu_reference(&pixels, 3, &labels, 1)[0];
/// assert_eq!((source.pixels, source.flux, source.peak), (3, 8.0, 4.0));
/// // Weighted by flux: rows (0·1 + 0·3 + 1·4) / 8, columns (0·1 + 1·3 + 1·4) / 8.
/// assert_eq!((source.y, source.x), (0.5, 0.875));
/// assert_eq!((source.y_min, source.y_max, source.x_min, source.x_max), (0, 1, 0, 1));
/// ```
pub fn cpu_reference(pixels: &[f32], width: usize, labels: &[u32], count: usize) -> Vec<Source> {
    let empty = Sums {
        pixels: 0,
        flux: 0.0,
        flux_y: 0.0,
        flux_x: 0.0,
        peak: f32::NEG_INFINITY,
        rows: (usize::MAX, 0),
        cols: (usize::MAX, 0),
    };
    let mut sums = vec![empty; count + 1];
    for (row, (labels, values)) in labels.chunks(width).zip(pixels.chunks(width)).enumerate() {
        for (col, (&label, &value)) in labels.iter().zip(values).enumerate() {
            if label == 0 || label as usize > count {
                continue;
            }
            let s = &mut sums[label as usize];
            let v = f64::from(value);
            s.pixels += 1;
            s.flux += v;
            s.flux_y += v * row as f64;
            s.flux_x += v * col as f64;
            s.peak = s.peak.max(value);
            s.rows = (s.rows.0.min(row), s.rows.1.max(row));
            s.cols = (s.cols.0.min(col), s.cols.1.max(col));
        }
    }
    sums.iter()
        .enumerate()
        .skip(1)
        .map(|(label, s)| Source {
            label: label as u32,
            y: s.flux_y / s.flux,
            x: s.flux_x / s.flux,
            flux: s.flux,
            peak: f64::from(s.peak),
            pixels: s.pixels,
            y_min: s.rows.0,
            y_max: s.rows.1,
            x_min: s.cols.0,
            x_max: s.cols.1,
        })
        .collect()
}

/// Relative tolerance of a source's flux against the CPU's…
pub const FLUX_TOLERANCE: f64 = 1e-5;
/// …and absolute one of its centre, in pixels.
pub const CENTRE_TOLERANCE: f64 = 1e-4;

/// The arguments of `measure_labels`: the pixels of `image` under each label 1..=`count` of
/// `labels` (`width × height`), added into the zeroed `records`.
pub struct MeasureArgs<'a> {
    /// The image, `height × width`, row-major.
    pub image: &'a DeviceSlice<f32>,
    /// Each pixel's label, the same shape; 0 is the background.
    pub labels: &'a DeviceSlice<u32>,
    /// Pixels a row.
    pub width: usize,
    /// Rows.
    pub height: usize,
    /// `count` records of `RECORD_WORDS` words (`interface::measure` lays them out), zeroed
    /// before the launch and added into.
    pub records: &'a DeviceSlice<f64>,
    /// Labels 1..=`count` are measured; pixels of larger labels are left out.
    pub count: u32,
}

/// Threads of `measure_labels` for a `width × height` image: one per `ITEMS` pixels of a row.
pub fn threads(kernel: &str, width: usize, height: usize) -> GpuResult<usize> {
    product(kernel, width.div_ceil(ITEMS), height)
}

// SAFETY: `measure_labels(image: &[f32], labels: &[u32], width: usize, height: usize,
// records: *mut f64, count: u32)` reads `image[..n]` and `labels[..n]`, `n = width · height`,
// checked to hold that much (below 2^32, so rows and columns fit the record's u32 fields),
// and adds into the records of labels 1..=count only: `records` is checked to hold
// `count · RECORD_WORDS` values and to overlap neither input. One thread per ITEMS pixels of a
// row, in one-dimensional blocks.
unsafe impl KernelArgs for MeasureArgs<'_> {
    fn checked_config(&self, kernel: &str) -> GpuResult<LaunchConfig> {
        require_kernel(kernel, &["measure_labels"], "MeasureArgs")?;
        let n = product(kernel, self.width, self.height)?;
        if n == 0 || n > u32::MAX as usize {
            return Err(refuse(kernel, format!("a {}x{} image: 1 to 2^32 - 1 pixels", self.width, self.height)));
        }
        require_len(kernel, "the image", self.image, n)?;
        require_len(kernel, "the labels", self.labels, n)?;
        let words = product(kernel, self.count as usize, RECORD_WORDS)?;
        require_len(kernel, "the records", self.records, words)?;
        require_disjoint(kernel, ("the records", self.records, words), ("the image", self.image, n))?;
        require_disjoint(kernel, ("the records", self.records, words), ("the labels", self.labels, n))?;
        LaunchConfig::linear(threads(kernel, self.width, self.height)?, BLOCK)
    }

    fn params(&self, _kernel: &str) -> Params {
        Params::new()
            .slice(self.image)
            .slice(self.labels)
            .value(self.width)
            .value(self.height)
            .pointer(self.records)
            .value(self.count)
    }
}

/// The u32 field at byte `offset` of a record.
fn field(record: &[f64], offset: usize) -> u32 {
    let word = record[offset / 8].to_bits();
    if offset.is_multiple_of(8) {
        word as u32
    } else {
        (word >> 32) as u32
    }
}

/// The source of label `label` from its record.
pub fn source(label: u32, record: &[f64]) -> Source {
    let (flux, flux_y, flux_x) = (record[0], record[1], record[2]);
    Source {
        label,
        y: flux_y / flux,
        x: flux_x / flux,
        flux,
        peak: f64::from(peak_of(field(record, PEAK))),
        pixels: field(record, PIXELS) as usize,
        y_min: (u32::MAX - field(record, Y_MIN)) as usize,
        y_max: field(record, Y_MAX) as usize,
        x_min: (u32::MAX - field(record, X_MIN)) as usize,
        x_max: field(record, X_MAX) as usize,
    }
}

/// The sources of labels 1, 2, … from their `records`, one after another.
fn sources_of(records: &[f64]) -> Vec<Source> {
    records.chunks(RECORD_WORDS).zip(1..).map(|(record, label)| source(label, record)).collect()
}

/// Measures the sources of images of one size on the GPU. Its records grow to the most labels
/// seen, and are reused from call to call.
pub struct Measurer {
    width: usize,
    height: usize,
    /// One record of `RECORD_WORDS` words per label, grown by [`Measurer::reserve`].
    pub records: RefCell<DeviceBuffer<f64>>,
}

/// Labels the records hold at first.
const FIRST_CAPACITY: usize = 4096;

impl Measurer {
    /// Records for `width × height` images (1 to 2^32 - 1 pixels), room for 4096 labels at
    /// first; checks the launch against the device.
    pub fn new(gpu: &Gpu, width: usize, height: usize) -> GpuResult<Self> {
        let threads = threads("measure_labels", width, height)?;
        require(width.checked_mul(height).is_some_and(|n| n >= 1 && n <= u32::MAX as usize), || {
            format!("a {width}x{height} image: 1 to 2^32 - 1 pixels")
        })?;
        gpu.validate("measure_labels", &LaunchConfig::linear(threads, BLOCK)?)?;
        let records = RefCell::new(gpu.poisoned("source records", FIRST_CAPACITY * RECORD_WORDS)?);
        Ok(Self { width, height, records })
    }

    /// The sources of labels 1..=`count` of `labels` (as [`cpu_reference`] measures them on the CPU).
    pub fn measure(
        &self,
        gpu: &Gpu,
        image: &DeviceSlice<f32>,
        labels: &DeviceSlice<u32>,
        count: u32,
    ) -> GpuResult<Vec<Source>> {
        if count == 0 {
            return Ok(vec![]);
        }
        // SAFETY: the download below waits for the kernel before `image`, `labels` or `self` go.
        unsafe { self.launch(gpu, image, labels, count, true) }?;
        let words = count as usize * RECORD_WORDS;
        Ok(sources_of(&gpu.download("source records", &self.records.borrow(), words)?))
    }

    /// [`Measurer::measure`] on `stream`, so that it runs beside the work queued on the
    /// `Gpu`'s own stream: its zeroing, its kernel and its copy back are queued on `stream`, and
    /// the wait is for `stream` alone (where the records must grow, for every stream). The copy
    /// back goes into pageable memory, which the driver stages.
    ///
    /// # Safety
    /// Every write to `image` and `labels` queued on another stream is ordered before this
    /// call's work on `stream` (an event recorded behind it that `stream` waits for), and none
    /// is queued while it runs. So is any [`Measurer::launch`] of this measurer still queued on
    /// another stream: both write its records.
    ///
    /// ```
    /// # fn main() -> cuda_kernels::GpuResult<()> {
    /// use cuda_kernels::measure::{cpu_reference, Measurer};
    /// use cust::stream::{Stream, StreamFlags};
    ///
    /// let Some(gpu) = cuda_kernels::gpu::doctest_gpu()? else { return Ok(()) };
    /// let pixels = [1.0f32, 3.0, 9.0, 0.0, 4.0, 9.0];
    /// let labels = [1u32, 1, 0, 0, 1, 2];
    /// let (image, on_gpu) = (gpu.upload("the pixels", &pixels)?, gpu.upload("the labels", &labels)?);
    /// let measurer = Measurer::new(&gpu, 3, 2)?;
    /// let stream = Stream::new(StreamFlags::NON_BLOCKING, None).expect("a stream");
    /// // SAFETY: both uploads have finished, and nothing writes the inputs meanwhile.
    /// let sources = unsafe { measurer.measure_on(&gpu, &stream, &image, &on_gpu, 2) }?;
    /// // Whole-number pixels: every sum is exact in any order, so the GPU's equal the CPU's.
    /// assert_eq!(sources, cpu_reference(&pixels, 3, &labels, 2));
    /// # Ok(())
    /// # }
    /// ```
    pub unsafe fn measure_on(
        &self,
        gpu: &Gpu,
        stream: &Stream,
        image: &DeviceSlice<f32>,
        labels: &DeviceSlice<u32>,
        count: u32,
    ) -> GpuResult<Vec<Source>> {
        if count == 0 {
            return Ok(vec![]);
        }
        let words = count as usize * RECORD_WORDS;
        let mut host = vec![0.0f64; words];
        let queued = (|| -> GpuResult<()> {
            // SAFETY: the caller orders the inputs' writers before this stream's work, and the
            // wait below holds every buffer until the kernel has run.
            unsafe { self.launch_on(gpu, stream, image, labels, count, true) }?;
            let records = self.records.borrow();
            // SAFETY: `host` holds `words` values and outlives the copy: the wait below.
            unsafe { records.index(..words).async_copy_to(&mut host[..], stream) }.during("copying source records back")
        })();
        // After an error too: nothing queued may outlive the buffers it uses.
        let waited = stream.synchronize().during("measuring sources");
        queued.and(waited)?;
        Ok(sources_of(&host))
    }

    /// Records for `count` labels, grown (not shrunk) when there are fewer.
    pub fn reserve(&self, gpu: &Gpu, count: u32) -> GpuResult<()> {
        let words = count as usize * RECORD_WORDS;
        let held = self.records.borrow().len();
        if held < words {
            // The old records may still be written by a queued kernel: wait before freeing them.
            gpu.synchronize("measuring sources")?;
            *self.records.borrow_mut() = gpu.poisoned("source records", words.max(2 * held))?;
        }
        Ok(())
    }

    /// Zeroes the records of `count` labels (when `zero`) and queues the kernel.
    ///
    /// # Safety
    /// Queued, not finished, on return: `image`, `labels` and the measurer must stay allocated
    /// until the stream has run it (see [`Gpu::launch`]).
    pub unsafe fn launch(
        &self,
        gpu: &Gpu,
        image: &DeviceSlice<f32>,
        labels: &DeviceSlice<u32>,
        count: u32,
        zero: bool,
    ) -> GpuResult<()> {
        // SAFETY: the caller keeps the buffers alive until the `Gpu`'s stream has run the kernel.
        unsafe { self.launch_on(gpu, gpu.stream(), image, labels, count, zero) }
    }

    /// [`Measurer::launch`] on `stream`.
    ///
    /// # Safety
    /// As for [`Measurer::launch`], with `stream` for the `Gpu`'s.
    unsafe fn launch_on(
        &self,
        gpu: &Gpu,
        stream: &Stream,
        image: &DeviceSlice<f32>,
        labels: &DeviceSlice<u32>,
        count: u32,
        zero: bool,
    ) -> GpuResult<()> {
        let (width, height) = (self.width, self.height);
        let n = width * height;
        require(image.len() == n && labels.len() == n, || {
            format!("{} pixels and {} labels for a {}x{} measurer", image.len(), labels.len(), width, height)
        })?;
        require(count as usize <= n, || format!("{count} labels on {n} pixels"))?;
        self.reserve(gpu, count)?;
        let records = self.records.borrow();
        let words = count as usize * RECORD_WORDS;
        if zero && words > 0 {
            let mut zeroed = records.index(..words);
            // SAFETY: the memset stays inside the records, which outlive the stream's work (the
            // caller's promise), and zero bytes are valid f64.
            unsafe { zeroed.set_8_async(0, stream) }.during("zeroing source records")?;
        }
        // SAFETY: the caller keeps the buffers alive until `stream` has run the kernel.
        unsafe { gpu.launch_on(stream, "measure_labels", &MeasureArgs { image, labels, width, height, records: &records, count }) }
    }
}

/// `gpu` against `cpu`, source by source: pixels, boxes and peaks exact, fluxes and centres
/// within the tolerances (a label on no pixel has no flux or centre to compare; a NaN flux or
/// centre fails). Each source's error is in units of its tolerance (1 passes).
pub fn compare(gpu: &[Source], cpu: &[Source]) -> Check {
    let errors: Vec<f64> = gpu
        .iter()
        .zip(cpu)
        .map(|(g, c)| {
            let exact = (g.label, g.pixels, g.y_min, g.y_max, g.x_min, g.x_max, g.peak)
                == (c.label, c.pixels, c.y_min, c.y_max, c.x_min, c.x_max, c.peak);
            if !exact {
                return f64::INFINITY;
            }
            // A label no pixel carries: no flux, no centre, nothing more to compare.
            if c.pixels == 0 {
                return 0.0;
            }
            let flux = (g.flux - c.flux).abs() / (c.flux.abs() * FLUX_TOLERANCE);
            let centre = (g.x - c.x).abs().max((g.y - c.y).abs()) / CENTRE_TOLERANCE;
            // NaN (a record never written) fails.
            if flux.is_nan() || centre.is_nan() {
                f64::INFINITY
            } else {
                flux.max(centre)
            }
        })
        .collect();
    Check::from_errors(errors.into_iter(), 1.0, gpu.len() == cpu.len())
}

/// The most pixels an image to measure may have: a record keeps rows, columns and pixel
/// counts as u32.
pub const MAX_PIXELS: usize = u32::MAX as usize;

/// `count` as the kernel takes it, or an error unless the labels have the image's shape, the
/// image has 1 to [`MAX_PIXELS`] pixels, and there are no more labels than pixels.
fn check_measure(image: (usize, usize), labels: (usize, usize), count: usize) -> GpuResult<u32> {
    let ((rows, cols), (label_rows, label_cols)) = (image, labels);
    require(labels == image, || format!("measure: the labels are {label_rows}×{label_cols}, the image {rows}×{cols}"))?;
    require(rows > 0 && cols > 0, || format!("measure: the image is {rows}×{cols}, with no pixel"))?;
    let n = rows.checked_mul(cols).filter(|&n| n <= MAX_PIXELS).ok_or_else(|| {
        GpuError::InvalidInput(format!(
            "measure: the image is {rows}×{cols}, {} pixels; at most {MAX_PIXELS}",
            rows as u128 * cols as u128
        ))
    })?;
    require(count <= n, || format!("measure: {count} labels on {n} pixels; at most one label a pixel"))?;
    Ok(count as u32)
}

/// A source as [`cpu_reference`] gives it: a label no pixel carries has the empty sums (a
/// peak of −∞ and a box of `usize::MAX` minima and 0 maxima), where its zeroed record reads
/// as NaN and `u32::MAX`.
fn settled(source: Source) -> Source {
    if source.pixels > 0 {
        return source;
    }
    Source { peak: f64::NEG_INFINITY, y_min: usize::MAX, y_max: 0, x_min: usize::MAX, x_max: 0, ..source }
}

/// What `scipy.ndimage` measures of `image` under each label 1..=`count` of `labels`, on
/// `gpu`: one [`Source`] per label, in label order. `labels` is typically
/// [`label`](crate::label::label)'s output, and `count` the number it returned.
///
/// For label ℓ, over the pixels (row r, column c, value v) whose label is ℓ:
/// - `pixels`: how many there are (`np.bincount(labels)[ℓ]`);
/// - `flux`: Σ v, in f64 (`sum_labels(image, labels, ℓ)`);
/// - `(y, x)`: (Σ v·r / Σ v, Σ v·c / Σ v), 0-based with a pixel's centre at whole numbers
///   (`center_of_mass(image, labels, ℓ)`, which returns (row, column));
/// - `peak`: the largest v (`maximum(image, labels, ℓ)`), NaN pixels left out;
/// - `y_min..=y_max`, `x_min..=x_max`: the bounding box (`find_objects(labels)[ℓ - 1]`).
///
/// Pixels labelled 0 are the background and pixels labelled above `count` are left out. A
/// label no pixel carries gets the empty sums, as [`cpu_reference`] gives them. The GPU adds
/// with f64 atomics in no fixed order: pixels, peaks and boxes equal [`cpu_reference`]'s
/// exactly, fluxes within [`FLUX_TOLERANCE`] relative and centres within
/// [`CENTRE_TOLERANCE`] pixel ([`compare`] checks both); on whole-number pixels every sum is
/// exact, so all of it is equal.
///
/// Checked before anything runs: `labels` has the image's shape, the image has 1 to
/// [`MAX_PIXELS`] pixels, `count` is at most the number of pixels, and both arrays live on
/// `gpu`; an error says what is wrong, e.g. "measure: the labels are 3×5, the image 4×3".
/// It waits for the GPU, since it returns the sources.
///
/// ```
/// # fn main() -> cuda_kernels::GpuResult<()> {
/// use cuda_kernels::label::{label, Connectivity};
/// use cuda_kernels::measure::{cpu_reference, measure};
/// use cuda_kernels::DeviceMatrix;
/// use ndarray::array;
///
/// let Some(gpu) = cuda_kernels::gpu::doctest_gpu()? else { return Ok(()) };
/// let host = array![[1.0f32, 3.0, 0.0, 0.0], [0.0, 4.0, 0.0, 0.0], [0.0, 0.0, 2.0, 6.0]];
/// let image = DeviceMatrix::from_array(&gpu, host.view())?;
/// let mut labels = DeviceMatrix::zeros(&gpu, (3, 4))?;
/// let count = label(&gpu, &image, 0.5, Connectivity::Four, &mut labels)?;
/// let sources = measure(&gpu, &image, &labels, count)?;
/// // Label 2: 2 at column 2 and 6 at column 3 of row 2.
/// assert_eq!((sources[1].flux, sources[1].y, sources[1].x), (8.0, 2.0, 2.75));
/// // Whole-number pixels: every sum is exact in any order, so the GPU's equal the CPU's.
/// let labels = labels.to_array(&gpu)?;
/// assert_eq!(sources, cpu_reference(host.as_slice().unwrap(), 4, labels.as_slice().unwrap(), count));
/// # Ok(())
/// # }
/// ```
pub fn measure(
    gpu: &Gpu,
    image: &DeviceMatrix<f32>,
    labels: &DeviceMatrix<u32>,
    count: usize,
) -> GpuResult<Vec<Source>> {
    let count = check_measure(image.dim(), labels.dim(), count)?;
    let (height, width) = image.dim();
    gpu.bind()?;
    let (pixels, label_slice) = (image.slice(gpu)?, labels.slice(gpu)?);
    let measurer = Measurer::new(gpu, width, height)?;
    let sources = measurer.measure(gpu, pixels, label_slice, count)?;
    image.record_use(gpu)?;
    labels.record_use(gpu)?;
    Ok(sources.into_iter().map(settled).collect())
}

/// [`measure`] of `ndarray` arrays: copies `image` and `labels` (any memory layout) to
/// `gpu`, measures labels 1..=`count`, and returns their sources. The same inputs as
/// [`measure`]'s are errors.
///
/// ```
/// # fn main() -> cuda_kernels::GpuResult<()> {
/// use cuda_kernels::label::{self, detect, Connectivity};
/// use cuda_kernels::measure::{compare, cpu_reference, measure_array};
/// use ndarray::{Array2, ArrayView2};
///
/// let Some(gpu) = cuda_kernels::gpu::doctest_gpu()? else { return Ok(()) };
/// let image = Array2::from_shape_fn((9, 13), |(r, c)| ((r * 13 + c) % 7) as f32 * 0.3 - 0.4);
/// let pixels = image.as_slice().unwrap();
/// let (labels, count) = label::cpu_reference(&detect(pixels, 0.5), 13, Connectivity::Eight);
/// let label_view = ArrayView2::from_shape((9, 13), &labels).unwrap();
/// let sources = measure_array(&gpu, image.view(), label_view, count)?;
/// let expected = cpu_reference(pixels, 13, &labels, count);
/// assert_eq!(sources.len(), count);
/// // The same pixels, peaks and boxes; fluxes and centres within the tolerances.
/// assert!(compare(&sources, &expected).passed);
/// # Ok(())
/// # }
/// ```
pub fn measure_array(
    gpu: &Gpu,
    image: ArrayView2<f32>,
    labels: ArrayView2<u32>,
    count: usize,
) -> GpuResult<Vec<Source>> {
    check_measure(image.dim(), labels.dim(), count)?;
    let device_image = DeviceArray::from_array(gpu, image)?;
    let device_labels = DeviceArray::from_array(gpu, labels)?;
    measure(gpu, &device_image, &device_labels, count)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sums_centres_and_boxes_are_weighted_by_flux() {
        // Label 1: 1 at (0, 0), 3 at (0, 1) and 4 at (1, 1). Label 2: 2 and 6 on row 2,
        // columns 2 and 3. The background's 9s are not counted.
        #[rustfmt::skip]
        let pixels = [
            1.0, 3.0, 9.0, 9.0,
            9.0, 4.0, 9.0, 9.0,
            9.0, 9.0, 2.0, 6.0,
        ];
        #[rustfmt::skip]
        let labels = [
            1, 1, 0, 0,
            0, 1, 0, 0,
            0, 0, 2, 2,
        ];
        let sources = cpu_reference(&pixels, 4, &labels, 2);
        // Label 1: flux 8; rows weighted (0·1 + 0·3 + 1·4)/8 = 0.5; columns (0·1 + 1·3 + 1·4)/8.
        // Not the mean of the pixels' positions (1/3, 2/3): that would be unweighted.
        let one = Source {
            label: 1,
            y: 0.5,
            x: 7.0 / 8.0,
            flux: 8.0,
            peak: 4.0,
            pixels: 3,
            y_min: 0,
            y_max: 1,
            x_min: 0,
            x_max: 1,
        };
        // Label 2: flux 8; row 2; columns (2·2 + 3·6)/8 = 2.75.
        let two = Source {
            label: 2,
            y: 2.0,
            x: 2.75,
            flux: 8.0,
            peak: 6.0,
            pixels: 2,
            y_min: 2,
            y_max: 2,
            x_min: 2,
            x_max: 3,
        };
        assert_eq!(sources, vec![one, two]);
        assert_eq!(cpu_reference(&pixels, 4, &[0; 12], 0), vec![]);
    }

    #[test]
    fn peak_keys_order_as_the_floats_and_decode_back() {
        use interface::measure::peak_key;
        let values = [f32::NEG_INFINITY, -3.5, -f32::MIN_POSITIVE, -0.0, 0.0, 1e-30, 2.0, f32::MAX, f32::INFINITY];
        for pair in values.windows(2) {
            assert!(peak_key(pair[0]) <= peak_key(pair[1]), "{:?}", pair);
        }
        for v in values {
            assert_eq!(peak_of(peak_key(v)).to_bits(), v.to_bits());
            assert!(peak_key(v) > 0, "a zeroed record's peak is below every value");
        }
    }

    /// A record as `measure_labels` leaves it, from its fields' layout in `interface::measure`.
    fn record(sums: [f64; 3], fields: [(usize, u32); 6]) -> Vec<f64> {
        let mut words = sums.iter().map(|s| s.to_bits()).chain([0u64; 3]).collect::<Vec<u64>>();
        for (offset, value) in fields {
            words[offset / 8] |= (value as u64) << (32 * (offset % 8 / 4));
        }
        words.into_iter().map(f64::from_bits).collect()
    }

    #[test]
    fn records_decode_into_the_cpus_sources() {
        // Label 1 of the hand-made image above: 1 at (0, 0), 3 at (0, 1), 4 at (1, 1).
        let fields = [
            (PIXELS, 3),
            (PEAK, interface::measure::peak_key(4.0)),
            (Y_MIN, u32::MAX),
            (Y_MAX, 1),
            (X_MIN, u32::MAX),
            (X_MAX, 1),
        ];
        let decoded = source(1, &record([8.0, 4.0, 7.0], fields));
        let pixels = [1.0, 3.0, 9.0, 4.0];
        assert_eq!(decoded, cpu_reference(&pixels, 2, &[1, 1, 0, 1], 1)[0]);
        let one = std::slice::from_ref(&decoded);
        assert!(compare(one, one).passed);
        let moved = Source { x: decoded.x + 2e-4, ..decoded.clone() };
        assert!(!compare(&[moved], one).passed, "a centre 2e-4 pixel off fails");
        let brighter = Source { flux: decoded.flux * (1.0 + 2e-5), ..decoded.clone() };
        assert!(!compare(&[brighter], &[decoded]).passed, "a flux 2e-5 off fails");
    }

    #[test]
    fn api_inputs_are_checked() {
        assert_eq!(check_measure((1, 1), (1, 1), 0).unwrap(), 0);
        assert_eq!(check_measure((3, 7), (3, 7), 21).unwrap(), 21);
        assert_eq!(check_measure((1, MAX_PIXELS), (1, MAX_PIXELS), MAX_PIXELS).unwrap(), u32::MAX);
        let refused = |image, labels, count| check_measure(image, labels, count).unwrap_err().to_string();
        let message = refused((4, 3), (3, 4), 1);
        assert!(message.contains("measure: the labels are 3×4, the image 4×3"), "{message}");
        let message = refused((3, 0), (3, 0), 0);
        assert!(message.contains("measure: the image is 3×0, with no pixel"), "{message}");
        let message = refused((65536, 65536), (65536, 65536), 1);
        assert!(message.contains("measure: the image is 65536×65536, 4294967296 pixels; at most 4294967295"));
        let message = refused((3, 4), (3, 4), 13);
        assert!(message.contains("measure: 13 labels on 12 pixels"), "{message}");
    }

    #[test]
    fn empty_labels_and_labels_above_the_count() {
        // Label 2 is on no pixel; label 3 is above the count.
        let sources = cpu_reference(&[1.0, 2.0, 5.0], 3, &[1, 0, 3], 2);
        let empty = Source {
            label: 2,
            y: f64::NAN,
            x: f64::NAN,
            flux: 0.0,
            peak: f64::NEG_INFINITY,
            pixels: 0,
            y_min: usize::MAX,
            y_max: 0,
            x_min: usize::MAX,
            x_max: 0,
        };
        assert_eq!((sources.len(), sources[0].flux, sources[0].pixels), (2, 1.0, 1));
        assert!(sources[1].y.is_nan() && sources[1].x.is_nan());
        assert_eq!(Source { y: 0.0, x: 0.0, ..sources[1].clone() }, Source { y: 0.0, x: 0.0, ..empty });
        // The GPU's zeroed record of label 2 reads back as the same empty source.
        let zeroed = settled(source(2, &[0.0; RECORD_WORDS]));
        assert_eq!(Source { y: 0.0, x: 0.0, ..zeroed }, Source { y: 0.0, x: 0.0, ..sources[1].clone() });
        assert!(compare(&sources[1..], &sources[1..]).passed, "empty labels compare equal");
    }

    #[test]
    fn sums_are_in_f64() {
        // 2^24 + 1 is not an f32, but 2^24 and 1 are: summed in f32 the 1 would be lost.
        let pixels = [16_777_216.0f32, 1.0];
        let source = &cpu_reference(&pixels, 2, &[1, 1], 1)[0];
        assert_eq!(source.flux, 16_777_217.0);
        assert_eq!(source.x, 1.0 / 16_777_217.0);
    }
}
