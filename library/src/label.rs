//! Connected components of the detection mask, as `scipy.ndimage.label` numbers them: the
//! typed API ([`label`] over device arrays, [`label_array`] over `ndarray` views), the
//! CPU reference ([`detect`], [`cpu_reference`]), the host side of `kernels::label` ([`Labeler`],
//! the bindings of its kernels), and the `label` family of the registry.
//!
//! The CPU reference: the image is cut into bands of rows, labelled in parallel, each with
//! union-find: a pixel takes the provisional label of its neighbours already visited (left and
//! above, and with 8 neighbours the two upper corners), joining their sets when they differ, or
//! a new one. The bands are then joined across their edges. Labels end as 1..n in raster order
//! of each component's first pixel, which is SciPy's numbering: that pixel has no visited
//! neighbour in its component, so it opens the component's smallest provisional label, and
//! every set keeps its smallest label as its root.
//!
//! The GPU's labels are checked to equal these exactly, on the synthetic sky of `host sky`
//! (`--side`, with or without `--blank`ing) or an image file, at a level of `--threshold`
//! times the noise.

use crate::gpu::{
    product, refuse, require, require_disjoint, require_kernel, require_len, CudaContext, DeviceArray, DeviceMatrix,
    Gpu, GpuError, GpuResult, KernelArgs, LaunchConfig, Params,
};
use crate::scan::Scanner;
use cust::memory::{DeviceBuffer, DeviceSlice};
use interface::label::{BACKGROUND, BLOCK, MERGE_BLOCK, TILE_HEIGHT, TILE_WIDTH};
use ndarray::{Array2, ArrayView2};
use rayon::prelude::*;

/// Rows per band: enough bands to keep every core busy at 2048², few enough that joining
/// them costs little. The labels do not depend on it.
const BAND_ROWS: usize = 64;

/// Which pixels touch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Connectivity {
    /// Sharing an edge: SciPy's default structure in 2-D (`generate_binary_structure(2, 1)`).
    Four,
    /// Sharing an edge or a corner (`structure=np.ones((3, 3))`).
    Eight,
}

impl Connectivity {
    /// The neighbours a pixel has: 4 or 8.
    pub fn neighbours(self) -> u32 {
        match self {
            Connectivity::Four => 4,
            Connectivity::Eight => 8,
        }
    }

    /// Column offsets, in the row above, of the neighbours there.
    fn above(self) -> &'static [isize] {
        match self {
            Connectivity::Four => &[0],
            Connectivity::Eight => &[-1, 0, 1],
        }
    }
}

/// The detection mask: pixels strictly above `level`, as the lesson's `data > threshold`
/// (relative to zero, not to the background's median). NaN is above nothing.
pub fn detect(pixels: &[f32], level: f64) -> Vec<bool> {
    pixels.par_iter().map(|&v| f64::from(v) > level).collect()
}

/// Disjoint sets of labels, each rooted at its smallest label.
struct Sets {
    parent: Vec<u32>,
}

impl Sets {
    /// Labels 0..len, each alone (0 stands for the background and is never joined).
    fn new(len: usize) -> Self {
        Self { parent: (0..len as u32).collect() }
    }

    /// A new label, alone.
    fn add(&mut self) -> u32 {
        let label = self.parent.len() as u32;
        self.parent.push(label);
        label
    }

    fn find(&mut self, mut label: u32) -> u32 {
        // Path halving: each visited label points to its grandparent.
        while self.parent[label as usize] != label {
            let grandparent = self.parent[self.parent[label as usize] as usize];
            self.parent[label as usize] = grandparent;
            label = grandparent;
        }
        label
    }

    /// Joins the sets of `a` and `b`; returns the root, the smaller of their roots.
    fn join(&mut self, a: u32, b: u32) -> u32 {
        let (a, b) = (self.find(a), self.find(b));
        let (root, child) = (a.min(b), a.max(b));
        self.parent[child as usize] = root;
        root
    }

    /// For each label, its set's number: roots numbered 1, 2, … in increasing order (0 stays 0).
    fn numbers(&mut self) -> Vec<u32> {
        let mut numbers = vec![0u32; self.parent.len()];
        let mut next = 0;
        for label in 1..self.parent.len() as u32 {
            let root = self.find(label);
            // A root is the smallest label of its set, so it was numbered before its members.
            if root == label {
                next += 1;
                numbers[label as usize] = next;
            } else {
                numbers[label as usize] = numbers[root as usize];
            }
        }
        numbers
    }
}

/// Column `col + dc`, if a row of `width` has it.
fn shifted(col: usize, dc: isize, width: usize) -> Option<usize> {
    col.checked_add_signed(dc).filter(|&c| c < width)
}

/// Labels the rows of `mask` (`width` a row) on their own, as [`cpu_reference`] numbers them, into
/// `labels`; returns how many components there are.
fn label_band(mask: &[bool], width: usize, connectivity: Connectivity, labels: &mut [u32]) -> u32 {
    let mut sets = Sets::new(1);
    for (i, &set) in mask.iter().enumerate() {
        if !set {
            labels[i] = 0;
            continue;
        }
        let (row, col) = (i / width, i % width);
        let left = (col > 0).then(|| i - 1);
        let above = connectivity
            .above()
            .iter()
            .filter(|_| row > 0)
            .filter_map(|&dc| shifted(col, dc, width))
            .map(|c| (row - 1) * width + c);
        let mut label = 0;
        for neighbour in left.into_iter().chain(above) {
            let other = labels[neighbour];
            if other != 0 {
                label = if label == 0 { sets.find(other) } else { sets.join(label, other) };
            }
        }
        labels[i] = if label == 0 { sets.add() } else { label };
    }
    let numbers = sets.numbers();
    labels.iter_mut().for_each(|l| *l = numbers[*l as usize]);
    numbers.iter().copied().max().unwrap_or(0)
}

/// `scipy.ndimage.label(mask)` of a row-major mask of `width` columns, on the CPU: each
/// pixel's label (1..n in raster order of each component's first pixel, 0 for the
/// background) and the number of labels n. [`Connectivity::Four`] is SciPy's default
/// structure, [`Connectivity::Eight`] `structure=np.ones((3, 3))`. `mask.len()` must be a
/// multiple of `width`, and below `u32::MAX`.
///
/// ```
/// use cuda_kernels::label::{detect, cpu_reference, Connectivity};
///
/// let pixels = [5.0, 0.0, 5.0, 0.0, 0.0, 5.0];
/// let (labels, n) = cpu_reference(&detect(&pixels, 1.0), 3, Connectivity::Four);
/// assert_eq!((labels, n), (vec![1, 0, 2, 0, 0, 2], 2));
/// ```
pub fn cpu_reference(mask: &[bool], width: usize, connectivity: Connectivity) -> (Vec<u32>, usize) {
    label_in_bands(mask, width, connectivity, BAND_ROWS)
}

/// [`cpu_reference`] with bands of `band_rows` rows (at least 1) labelled in parallel, then
/// joined: the labels are the same for every band height, which the tests check.
pub fn label_in_bands(mask: &[bool], width: usize, connectivity: Connectivity, band_rows: usize) -> (Vec<u32>, usize) {
    let mut labels = vec![0u32; mask.len()];
    if mask.is_empty() {
        return (labels, 0);
    }
    let band = band_rows * width;
    let counts: Vec<u32> = labels
        .par_chunks_mut(band)
        .zip(mask.par_chunks(band))
        .map(|(labels, mask)| label_band(mask, width, connectivity, labels))
        .collect();
    // Band b's labels become offsets[b] + 1 ..= offsets[b] + counts[b]: in raster order of
    // their first pixels across the whole image, as they were within each band.
    let offsets: Vec<u32> = counts
        .iter()
        .scan(0u32, |total, &count| {
            let offset = *total;
            *total += count;
            Some(offset)
        })
        .collect();
    let total: u32 = counts.iter().sum();
    let mut sets = Sets::new(total as usize + 1);
    for b in 1..counts.len() {
        let (top, bottom) = (b * band - width, b * band);
        for col in 0..width {
            let below = labels[bottom + col];
            if below == 0 {
                continue;
            }
            for &dc in connectivity.above() {
                let Some(c) = shifted(col, dc, width) else { continue };
                let above = labels[top + c];
                if above != 0 {
                    sets.join(offsets[b - 1] + above, offsets[b] + below);
                }
            }
        }
    }
    let numbers = sets.numbers();
    let count = numbers.iter().copied().max().unwrap_or(0) as usize;
    labels.par_chunks_mut(band).zip(&offsets).for_each(|(labels, &offset)| {
        labels.iter_mut().filter(|l| **l != 0).for_each(|l| *l = numbers[(offset + *l) as usize]);
    });
    (labels, count)
}

/// The arguments of `label_tiles`: the detection mask of `image` (`width × height`, pixels
/// above `level`) labelled tile by tile into `labels`, as parents.
pub struct TilesArgs<'a> {
    /// The image, `height × width`, row-major.
    pub image: &'a DeviceSlice<f32>,
    /// Pixels a row.
    pub width: usize,
    /// Rows.
    pub height: usize,
    /// Pixels strictly above it (compared in f64) are detected.
    pub level: f64,
    /// Which neighbours join.
    pub connectivity: Connectivity,
    /// Written: each pixel's root within its tile, as a raster index into the whole image
    /// (never above the pixel's own), `BACKGROUND` for the background.
    pub labels: &'a DeviceSlice<u32>,
}

/// `width · height`, checked: at least one pixel, and each pixel's index below BACKGROUND.
fn pixels(kernel: &str, width: usize, height: usize) -> GpuResult<usize> {
    let n = product(kernel, width, height)?;
    if n == 0 || n >= BACKGROUND as usize {
        return Err(refuse(kernel, format!("a {width}x{height} image: labels need 1 to {} pixels", BACKGROUND - 1)));
    }
    Ok(n)
}

/// One block per tile: `block` threads each.
pub fn tiles(width: usize, height: usize, block: (u32, u32)) -> GpuResult<LaunchConfig> {
    LaunchConfig::tiles_2d(width, height, (TILE_WIDTH, TILE_HEIGHT), block, 0)
}

// SAFETY: `label_tiles(image: &[f32], width: usize, height: usize, level: f64,
// connectivity: u32, labels: *mut u32)` reads `image[..n]` and writes `labels[..n]`,
// `n = width · height`: both are checked to hold `n`, `n` below BACKGROUND, and the labels not
// to overlap the image. The launch is one block of TILE_WIDTH × TILE_HEIGHT threads per tile,
// which the kernel's warps-as-rows and shared tile need; the connectivity is 4 or 8 by its type.
unsafe impl KernelArgs for TilesArgs<'_> {
    fn checked_config(&self, kernel: &str) -> GpuResult<LaunchConfig> {
        require_kernel(kernel, &["label_tiles"], "TilesArgs")?;
        let n = pixels(kernel, self.width, self.height)?;
        require_len(kernel, "the image", self.image, n)?;
        require_len(kernel, "the labels", self.labels, n)?;
        require_disjoint(kernel, ("the labels", self.labels, n), ("the image", self.image, n))?;
        tiles(self.width, self.height, (TILE_WIDTH as u32, TILE_HEIGHT as u32))
    }

    fn params(&self, _kernel: &str) -> Params {
        Params::new()
            .slice(self.image)
            .value(self.width)
            .value(self.height)
            .value(self.level)
            .value(self.connectivity.neighbours())
            .pointer(self.labels)
    }
}

/// The arguments of `label_merge`: the parents in `labels` (`width × height`) joined across
/// the tiles' edges.
pub struct MergeArgs<'a> {
    /// Pixels a row.
    pub width: usize,
    /// Rows.
    pub height: usize,
    /// Which neighbours join.
    pub connectivity: Connectivity,
    /// The parents `label_tiles` wrote, joined in place.
    pub labels: &'a DeviceSlice<u32>,
}

// SAFETY: `label_merge(width: usize, height: usize, connectivity: u32, labels: *mut u32)`
// reads and lowers `labels[..n]`, checked to hold `n = width · height` below BACKGROUND (the
// kernel follows a parent only to a smaller index, so any values stay inside). One block of
// MERGE_BLOCK threads per tile, as the kernel's edge loops assume.
unsafe impl KernelArgs for MergeArgs<'_> {
    fn checked_config(&self, kernel: &str) -> GpuResult<LaunchConfig> {
        require_kernel(kernel, &["label_merge"], "MergeArgs")?;
        let n = pixels(kernel, self.width, self.height)?;
        require_len(kernel, "the labels", self.labels, n)?;
        tiles(self.width, self.height, (MERGE_BLOCK, 1))
    }

    fn params(&self, _kernel: &str) -> Params {
        Params::new().value(self.width).value(self.height).value(self.connectivity.neighbours()).pointer(self.labels)
    }
}

/// The arguments of `label_flatten`: the first `n` parents of `labels` compressed to their
/// roots, and `roots[i] = 1` where pixel `i` is one.
pub struct FlattenArgs<'a> {
    /// The merged parents, each replaced by its root.
    pub labels: &'a DeviceSlice<u32>,
    /// Written: 1 where the pixel is a root, else 0.
    pub roots: &'a DeviceSlice<u32>,
    /// Pixels.
    pub n: usize,
}

// SAFETY: `label_flatten(labels: *mut u32, roots: *mut u32, n: usize)` reads and writes
// `labels[..n]` and writes `roots[..n]`: both checked to hold `n` (below BACKGROUND) and not to
// overlap. Paths only go to smaller indices, so they stay inside. One thread per pixel, in
// one-dimensional blocks.
unsafe impl KernelArgs for FlattenArgs<'_> {
    fn checked_config(&self, kernel: &str) -> GpuResult<LaunchConfig> {
        require_kernel(kernel, &["label_flatten"], "FlattenArgs")?;
        let n = pixels(kernel, self.n, 1)?;
        require_len(kernel, "the labels", self.labels, n)?;
        require_len(kernel, "the root marks", self.roots, n)?;
        require_disjoint(kernel, ("the root marks", self.roots, n), ("the labels", self.labels, n))?;
        LaunchConfig::linear(n, BLOCK)
    }

    fn params(&self, _kernel: &str) -> Params {
        Params::new().pointer(self.labels).pointer(self.roots).value(self.n)
    }
}

/// The arguments of `label_renumber`: each of the first `n` flattened parents of `labels`
/// becomes its root's rank (the first `n` of `ranks`) + 1, and `count` the number of roots.
pub struct RenumberArgs<'a> {
    /// The flattened parents, replaced by the labels (0 for the background).
    pub labels: &'a DeviceSlice<u32>,
    /// The exclusive sum of the root marks: each root's rank in raster order.
    pub ranks: &'a DeviceSlice<u32>,
    /// Written: the number of labels, in its first element.
    pub count: &'a DeviceSlice<u32>,
    /// Pixels.
    pub n: usize,
}

// SAFETY: `label_renumber(labels: *mut u32, ranks: &[u32], count: *mut u32)` writes
// `labels[..n]` and `count[0]` and reads `ranks[..n]` (passed as that slice), indexing it only
// below its length: all three checked to hold that much, `n` at least 1, and no two to
// overlap. One thread per pixel, in one-dimensional blocks.
unsafe impl KernelArgs for RenumberArgs<'_> {
    fn checked_config(&self, kernel: &str) -> GpuResult<LaunchConfig> {
        require_kernel(kernel, &["label_renumber"], "RenumberArgs")?;
        let n = pixels(kernel, self.n, 1)?;
        require_len(kernel, "the labels", self.labels, n)?;
        require_len(kernel, "the ranks", self.ranks, n)?;
        require_len(kernel, "the count", self.count, 1)?;
        require_disjoint(kernel, ("the labels", self.labels, n), ("the ranks", self.ranks, n))?;
        require_disjoint(kernel, ("the count", self.count, 1), ("the ranks", self.ranks, n))?;
        require_disjoint(kernel, ("the count", self.count, 1), ("the labels", self.labels, n))?;
        LaunchConfig::linear(n, BLOCK)
    }

    fn params(&self, _kernel: &str) -> Params {
        Params::new().pointer(self.labels).slice(&self.ranks.index(..self.n)).pointer(self.count)
    }
}

/// Labels images of one size on the GPU, with its buffers allocated once: the labels, the
/// root marks and their ranks, the count, and the scan's own.
pub struct Labeler {
    width: usize,
    height: usize,
    /// Each pixel's label after [`Labeler::label`], row-major, 0 for the background.
    pub labels: DeviceBuffer<u32>,
    roots: DeviceBuffer<u32>,
    ranks: DeviceBuffer<u32>,
    /// The number of labels after [`Labeler::label`], one value.
    pub count: DeviceBuffer<u32>,
    scanner: Scanner,
}

impl Labeler {
    /// Buffers for `width × height` images (1 to `u32::MAX - 1` pixels); checks the tile
    /// launches against the device.
    pub fn new(gpu: &Gpu, width: usize, height: usize) -> GpuResult<Self> {
        let n = pixels("label", width, height)?;
        gpu.validate("label_tiles", &tiles(width, height, (TILE_WIDTH as u32, TILE_HEIGHT as u32))?)?;
        gpu.validate("label_merge", &tiles(width, height, (MERGE_BLOCK, 1))?)?;
        gpu.ensure_fits("label buffers", 12 * n as u64)?;
        Ok(Self {
            width,
            height,
            labels: gpu.poisoned("labels", n)?,
            roots: gpu.poisoned("root marks", n)?,
            ranks: gpu.poisoned("ranks", n)?,
            count: DeviceBuffer::zeroed(1).during("allocating the label count")?,
            scanner: Scanner::new(gpu, n)?,
        })
    }

    /// Labels the pixels of `image` above `level` (compared in f64; NaN never is), 0 for the
    /// background, as `scipy.ndimage.label` does; returns how many labels there are. The labels
    /// stay on the GPU ([`Labeler::labels`]).
    pub fn label(&self, gpu: &Gpu, image: &DeviceSlice<f32>, level: f64, connectivity: Connectivity) -> GpuResult<u32> {
        // SAFETY: the download below waits for the kernels before `image` or `self` can go.
        unsafe { self.launch(gpu, image, level, connectivity) }?;
        Ok(gpu.download("the label count", &self.count, 1)?[0])
    }

    /// Each pixel's label, row by row, after [`Labeler::label`].
    pub fn labels(&self) -> &DeviceSlice<u32> {
        &self.labels
    }

    /// The kernels of [`Labeler::label`], queued on the stream.
    ///
    /// # Safety
    /// Queued, not finished, on return: `image` and the labeler must stay allocated until the
    /// stream has run them (see [`Gpu::launch`]).
    pub unsafe fn launch(
        &self,
        gpu: &Gpu,
        image: &DeviceSlice<f32>,
        level: f64,
        connectivity: Connectivity,
    ) -> GpuResult<()> {
        // SAFETY: the caller keeps `image` and `self` alive until the stream has run them.
        unsafe { self.launch_into(gpu, image, level, connectivity, &self.labels) }
    }

    /// [`Labeler::launch`], writing the labels into `labels` (as long as the image) instead of
    /// the labeler's own.
    ///
    /// # Safety
    /// As for [`Labeler::launch`], and `labels` too.
    unsafe fn launch_into(
        &self,
        gpu: &Gpu,
        image: &DeviceSlice<f32>,
        level: f64,
        connectivity: Connectivity,
        labels: &DeviceSlice<u32>,
    ) -> GpuResult<()> {
        require(!level.is_nan(), || "the detection level is NaN".into())?;
        let (width, height, n) = (self.width, self.height, self.labels.len());
        require(image.len() == n, || format!("{} pixels for a {}x{} labeler", image.len(), width, height))?;
        require(labels.len() == n, || format!("{} labels for a {}x{} labeler", labels.len(), width, height))?;
        // SAFETY: the caller keeps `image`, `labels` and the labeler's buffers alive until the
        // stream has run these kernels.
        unsafe {
            gpu.launch("label_tiles", &TilesArgs { image, width, height, level, connectivity, labels })?;
            gpu.launch("label_merge", &MergeArgs { width, height, connectivity, labels })?;
            gpu.launch("label_flatten", &FlattenArgs { labels, roots: &self.roots, n })?;
            self.scanner.exclusive_sum_u32(gpu, &self.roots, &self.ranks)?;
            gpu.launch("label_renumber", &RenumberArgs { labels, ranks: &self.ranks, count: &self.count, n })
        }
    }
}

// An image and its detection level: the synthetic sky of `host sky`, or a file. (A plain
// comment: a doc comment here would replace the help's about line of every family using it.)

crate::named!(Connectivity { Four => "4", Eight => "8" });

/// The most pixels an image to label may have: every pixel's index stays below
/// `interface::label::BACKGROUND` (`u32::MAX`), the parent the kernels give the background.
pub const MAX_PIXELS: usize = BACKGROUND as usize - 1;

/// The pixel count of a `image`-shaped image labelled into `labels`-shaped labels, or an error
/// unless the shapes are equal, the image has 1 to [`MAX_PIXELS`] pixels and `level` is a
/// number.
fn check_label(image: (usize, usize), labels: (usize, usize), level: f64) -> GpuResult<usize> {
    let ((rows, cols), (label_rows, label_cols)) = (image, labels);
    require(labels == image, || format!("label: the labels are {label_rows}×{label_cols}, the image {rows}×{cols}"))?;
    require(rows > 0 && cols > 0, || format!("label: the image is {rows}×{cols}, with no pixel"))?;
    let n = rows.checked_mul(cols).filter(|&n| n <= MAX_PIXELS).ok_or_else(|| {
        GpuError::InvalidInput(format!(
            "label: the image is {rows}×{cols}, {} pixels; u32 labels number at most {MAX_PIXELS}",
            rows as u128 * cols as u128
        ))
    })?;
    require(!level.is_nan(), || "label: the level is NaN, which no pixel is above".into())?;
    Ok(n)
}

/// Labels the connected components of the pixels of `image` strictly above `level` into
/// `labels`, on `gpu`, as `scipy.ndimage.label(image > level, structure)` numbers them: 1..n
/// in raster order of each component's first pixel, 0 for the background; returns n.
///
/// Pixels are compared with `level` in f64, so `level` need not be an f32 number; a NaN pixel
/// is never above it. [`Connectivity::Four`] joins pixels sharing an edge (SciPy's default
/// structure), [`Connectivity::Eight`] also those sharing a corner
/// (`structure=np.ones((3, 3))`). The labels equal [`cpu_reference`]'s (the CPU's) of [`detect`]'s mask
/// exactly.
///
/// Checked before anything runs: `labels` has the image's shape, the image has 1 to
/// [`MAX_PIXELS`] pixels, `level` is not NaN, and both arrays live on `gpu`; an error says
/// what is wrong, e.g. "label: the labels are 3×5, the image 4×3". An image taller than the
/// device's grid can tile (more than 65535 · 16 rows) is refused by the launch check.
///
/// It waits for the GPU, since it returns the count; the labels stay on the GPU. Each call
/// allocates a [`Labeler`]'s buffers (about 12 bytes a pixel); to label images of one size
/// again and again, keep a `Labeler`.
///
/// ```
/// # fn main() -> cuda_kernels::GpuResult<()> {
/// use cuda_kernels::label::{detect, cpu_reference, label, Connectivity};
/// use cuda_kernels::DeviceMatrix;
/// use ndarray::array;
///
/// let Some(gpu) = cuda_kernels::gpu::doctest_gpu()? else { return Ok(()) };
/// let host = array![[2.0f32, 0.0, 3.0, 3.0], [0.0, 2.0, 0.0, f32::NAN], [4.0, 0.0, 0.0, 5.0]];
/// let image = DeviceMatrix::from_array(&gpu, host.view())?;
/// let mut labels = DeviceMatrix::zeros(&gpu, (3, 4))?;
///
/// let n = label(&gpu, &image, 1.0, Connectivity::Four, &mut labels)?;
/// assert_eq!(n, 5);
/// assert_eq!(labels.to_array(&gpu)?, array![[1u32, 0, 2, 2], [0, 3, 0, 0], [4, 0, 0, 5]]);
///
/// // Through the corners, the diagonal joins the first four.
/// let n = label(&gpu, &image, 1.0, Connectivity::Eight, &mut labels)?;
/// let labels = labels.to_array(&gpu)?;
/// assert_eq!((&labels, n), (&array![[1u32, 0, 1, 1], [0, 1, 0, 0], [1, 0, 0, 2]], 2));
/// let mask = detect(host.as_slice().unwrap(), 1.0);
/// assert_eq!(cpu_reference(&mask, 4, Connectivity::Eight), (labels.into_raw_vec_and_offset().0, n));
/// # Ok(())
/// # }
/// ```
pub fn label(
    gpu: &Gpu,
    image: &DeviceMatrix<f32>,
    level: f64,
    connectivity: Connectivity,
    labels: &mut DeviceMatrix<u32>,
) -> GpuResult<usize> {
    check_label(image.dim(), labels.dim(), level)?;
    let (height, width) = image.dim();
    gpu.bind()?;
    let (pixels, output) = (image.slice(gpu)?, labels.slice(gpu)?);
    let labeler = Labeler::new(gpu, width, height)?;
    // SAFETY: the arrays record the kernels, and the download below waits for them before the
    // labeler goes.
    unsafe { labeler.launch_into(gpu, pixels, level, connectivity, output) }?;
    image.record_use(gpu)?;
    labels.record_use(gpu)?;
    // A copy on the legacy stream, which waits for this GPU's (blocking) stream.
    let count = gpu.download("the label count", &labeler.count, 1)?[0];
    Ok(count as usize)
}

/// `scipy.ndimage.label(image > level, structure)`, computed on `gpu`: copies `image` (any
/// memory layout) to the GPU, runs [`label`], and returns the labels (the image's shape)
/// and their number n once the GPU has finished. The same inputs as [`label`]'s are
/// errors: an empty image, more than [`MAX_PIXELS`] pixels, a NaN level.
///
/// ```
/// # fn main() -> cuda_kernels::GpuResult<()> {
/// use cuda_kernels::label::{detect, cpu_reference, label_array, Connectivity};
/// use ndarray::array;
///
/// let Some(gpu) = cuda_kernels::gpu::doctest_gpu()? else { return Ok(()) };
/// let image = array![[0.5f32, 2.0, 2.0], [f32::NAN, 0.0, 2.0], [7.0, 0.0, 0.0]];
/// let (labels, n) = label_array(&gpu, image.view(), 1.0, Connectivity::Four)?;
/// assert_eq!((&labels, n), (&array![[0u32, 1, 1], [0, 0, 1], [2, 0, 0]], 2));
/// let mask = detect(image.as_slice().unwrap(), 1.0);
/// assert_eq!(cpu_reference(&mask, 3, Connectivity::Four), (labels.into_raw_vec_and_offset().0, n));
/// // Above +∞ nothing is, so no label.
/// let (labels, n) = label_array(&gpu, image.view(), f64::INFINITY, Connectivity::Eight)?;
/// assert_eq!((labels, n), (ndarray::Array2::zeros((3, 3)), 0));
/// # Ok(())
/// # }
/// ```
pub fn label_array(
    gpu: &Gpu,
    image: ArrayView2<f32>,
    level: f64,
    connectivity: Connectivity,
) -> GpuResult<(Array2<u32>, usize)> {
    check_label(image.dim(), image.dim(), level)?;
    let device_image = DeviceArray::from_array(gpu, image)?;
    let mut labels = DeviceArray::zeros(gpu, image.dim())?;
    let count = label(gpu, &device_image, level, connectivity, &mut labels)?;
    Ok((labels.to_array(gpu)?, count))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn api_inputs_are_checked() {
        assert_eq!(check_label((1, 1), (1, 1), 0.0).unwrap(), 1);
        assert_eq!(check_label((3, 7), (3, 7), f64::NEG_INFINITY).unwrap(), 21);
        assert_eq!(check_label((1, MAX_PIXELS), (1, MAX_PIXELS), 0.0).unwrap(), MAX_PIXELS);
        let refused = |image, labels, level| check_label(image, labels, level).unwrap_err().to_string();
        let message = refused((4, 3), (3, 4), 0.0);
        assert!(message.contains("label: the labels are 3×4, the image 4×3"), "{message}");
        let message = refused((0, 3), (0, 3), 0.0);
        assert!(message.contains("label: the image is 0×3, with no pixel"), "{message}");
        let message = refused((65536, 65536), (65536, 65536), 0.0);
        let expected = "label: the image is 65536×65536, 4294967296 pixels; u32 labels number at most 4294967294";
        assert!(message.contains(expected), "{message}");
        let message = refused((1, MAX_PIXELS + 1), (1, MAX_PIXELS + 1), 0.0);
        assert!(message.contains("4294967295 pixels"), "{message}");
        let message = refused((usize::MAX, 2), (usize::MAX, 2), 0.0);
        assert!(message.contains(&format!("{} pixels", usize::MAX as u128 * 2)), "{message}");
        let message = refused((2, 2), (2, 2), f64::NAN);
        assert!(message.contains("label: the level is NaN"), "{message}");
    }
}
