//! Connected components of the detection mask, as `scipy.ndimage.label` numbers them: the CPU
//! reference ([`detect`], [`label`]), the host side of `kernels::label` ([`Labeler`], the
//! bindings of its kernels), and the `label` family of the registry.
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

use crate::check;
use crate::gpu::{
    product, refuse, require, require_disjoint, require_kernel, require_len, CudaContext, Gpu, GpuResult, KernelArgs,
    LaunchConfig, Params,
};
use crate::io;
use crate::ops::scan::Scanner;
use crate::registry::{Checked, Kernel, Purpose, Variant, Workload};
use crate::report::Work;
use crate::sky;
use crate::sources::{clip, stats};
use cust::memory::{DeviceBuffer, DeviceSlice};
use interface::label::{BACKGROUND, BLOCK, MERGE_BLOCK, TILE_HEIGHT, TILE_WIDTH};
use rayon::prelude::*;
use std::path::PathBuf;

/// Rows per band: enough bands to keep every core busy at 2048², few enough that joining
/// them costs little. The labels do not depend on it.
const BAND_ROWS: usize = 64;

/// Which pixels touch.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Connectivity {
    /// Sharing an edge: SciPy's default structure in 2-D (`generate_binary_structure(2, 1)`).
    #[value(name = "4")]
    Four,
    /// Sharing an edge or a corner (`structure=np.ones((3, 3))`).
    #[value(name = "8")]
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

/// Labels the rows of `mask` (`width` a row) on their own, as [`label`] numbers them, into
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

/// `scipy.ndimage.label(mask)` (with 8 neighbours, `structure=np.ones((3, 3))`) of a mask of
/// `width` columns: each pixel's label, 0 for the background, and the number of labels.
/// `mask.len()` must fit in u32 (SciPy's labels are int32).
pub fn label(mask: &[bool], width: usize, connectivity: Connectivity) -> (Vec<u32>, usize) {
    label_in_bands(mask, width, connectivity, BAND_ROWS)
}

fn label_in_bands(mask: &[bool], width: usize, connectivity: Connectivity, band_rows: usize) -> (Vec<u32>, usize) {
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
    pub image: &'a DeviceSlice<f32>,
    pub width: usize,
    pub height: usize,
    pub level: f64,
    pub connectivity: Connectivity,
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
fn tiles(width: usize, height: usize, block: (u32, u32)) -> GpuResult<LaunchConfig> {
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
    pub width: usize,
    pub height: usize,
    pub connectivity: Connectivity,
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
    pub labels: &'a DeviceSlice<u32>,
    pub roots: &'a DeviceSlice<u32>,
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
    pub labels: &'a DeviceSlice<u32>,
    pub ranks: &'a DeviceSlice<u32>,
    pub count: &'a DeviceSlice<u32>,
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
    labels: DeviceBuffer<u32>,
    roots: DeviceBuffer<u32>,
    ranks: DeviceBuffer<u32>,
    count: DeviceBuffer<u32>,
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
        self.launch(gpu, image, level, connectivity)?;
        Ok(gpu.download("the label count", &self.count, 1)?[0])
    }

    /// Each pixel's label, row by row, after [`Labeler::label`].
    pub fn labels(&self) -> &DeviceSlice<u32> {
        &self.labels
    }

    /// The kernels of [`Labeler::label`], queued on the stream.
    fn launch(&self, gpu: &Gpu, image: &DeviceSlice<f32>, level: f64, connectivity: Connectivity) -> GpuResult<()> {
        require(!level.is_nan(), || "the detection level is NaN".into())?;
        let (width, height, labels, n) = (self.width, self.height, &*self.labels, self.labels.len());
        require(image.len() == n, || format!("{} pixels for a {}x{} labeler", image.len(), width, height))?;
        gpu.launch("label_tiles", &TilesArgs { image, width, height, level, connectivity, labels })?;
        gpu.launch("label_merge", &MergeArgs { width, height, connectivity, labels })?;
        gpu.launch("label_flatten", &FlattenArgs { labels, roots: &self.roots, n })?;
        self.scanner.exclusive_sum_u32(gpu, &self.roots, &self.ranks)?;
        gpu.launch("label_renumber", &RenumberArgs { labels, ranks: &self.ranks, count: &self.count, n })
    }
}

// An image and its detection level: the synthetic sky of `host sky`, or a file. (A plain
// comment: a doc comment here would replace the help's about line of every family using it.)
#[derive(Debug, clap::Args)]
pub struct Input {
    /// Pixels a side of the synthetic sky (`host sky`: its noise, core, shell and point
    /// sources, as many per area as its 190 at 2048; below 16 pixels, noise alone).
    #[arg(long, default_value_t = 2048)]
    pub side: usize,
    /// The synthetic sky's pixels outside the primary beam are NaN.
    #[arg(long)]
    pub blank: bool,
    /// An image (FITS, .npy) instead of the synthetic sky; its noise is the σ of κσ clipping
    /// at κ = 3.
    #[arg(long, conflicts_with_all = ["side", "blank"])]
    pub image: Option<PathBuf>,
    /// Sources are the pixels strictly above threshold · the noise's σ.
    #[arg(long, default_value_t = 5.0, allow_negative_numbers = true)]
    pub threshold: f64,
}

/// The noise of the synthetic sky, Jy/beam: `host sky`'s default.
const SKY_NOISE: f64 = 0.0133;

/// An image on the host, and the level its sources lie above.
pub struct Detection {
    pub width: usize,
    pub height: usize,
    pub pixels: Vec<f32>,
    pub level: f64,
}

impl Input {
    /// The image the options name, and its level.
    pub fn read(&self, seed: u64) -> GpuResult<Detection> {
        require(self.threshold.is_finite(), || format!("--threshold must be finite (got {})", self.threshold))?;
        let (width, height, pixels, sigma) = match &self.image {
            Some(path) => {
                let image = io::read_image(path)?;
                let (values, _) = stats::without_nan(&image.pixels);
                require(!values.is_empty(), || format!("{}: every pixel is NaN", path.display()))?;
                let sigma = clip::kappa_sigma(&mut clip::Values(values), 3.0)?.sigma;
                (image.width, image.height, image.pixels, sigma)
            }
            None => {
                let side = self.side;
                require((1..=sky::MAX_SIDE).contains(&side), || {
                    format!("--side must be 1 to {} pixels (got {})", sky::MAX_SIDE, side)
                })?;
                let components = if side >= sky::MIN_SIDE {
                    sky::components(side, 190 * side * side / (2048 * 2048), self.blank, seed)?
                } else {
                    vec![]
                };
                // The noise seeded as `host sky` seeds it: the same image as `host sky --side`.
                let (pixels, _) = sky::render(side, &components, SKY_NOISE, self.blank, seed ^ 1);
                (side, side, pixels, SKY_NOISE)
            }
        };
        Ok(Detection { width, height, pixels, level: self.threshold * sigma })
    }

    /// The sizes of the `label` and `measure` families for `purpose`.
    pub fn sizes(purpose: Purpose) -> Vec<String> {
        let sides: &[usize] = match purpose {
            Purpose::Default => return vec![String::new()],
            Purpose::Check => {
                return [
                    "--side 1 --threshold -1",
                    "--side 2 --threshold 0",
                    "--side 37",
                    "--side 37 --threshold 0",
                    "--side 509",
                    "--side 509 --blank",
                    "--side 509 --threshold 0",
                    "--side 509 --threshold 0.5",
                    "--side 1031 --blank --threshold 3",
                ]
                .iter()
                .map(|s| s.to_string())
                .collect()
            }
            Purpose::Quick => &[2048],
            Purpose::Full => &[512, 1024, 2048, 4096],
            Purpose::Criterion => &[512, 1024],
        };
        sides.iter().map(|s| format!("--side {s}")).collect()
    }
}

#[derive(Debug, clap::Args)]
pub struct Options {
    #[command(flatten)]
    pub input: Input,
    /// Pixels touching at an edge (4, SciPy's default) or also at a corner (8) are one source.
    #[arg(long, value_enum, default_value_t = Connectivity::Four)]
    pub connectivity: Connectivity,
}

/// The labeling of one image on the GPU, checked against [`label`].
pub struct Label {
    detection: Detection,
    connectivity: Connectivity,
    image: DeviceBuffer<f32>,
    labeler: Labeler,
    variants: Vec<Variant>,
    expected: Vec<u32>,
}

impl Kernel for Label {
    const NAME: &'static str = "label";
    const ABOUT: &'static str =
        "Connected components of the pixels above a level, numbered as scipy.ndimage.label: union-find per tile, across tiles, then ranks";
    type Options = Options;

    fn launches(_sms: u32) -> GpuResult<Vec<(&'static str, LaunchConfig)>> {
        let side = 2048;
        let n = side * side;
        Ok(vec![
            ("label_tiles", tiles(side, side, (TILE_WIDTH as u32, TILE_HEIGHT as u32))?),
            ("label_merge", tiles(side, side, (MERGE_BLOCK, 1))?),
            ("label_flatten", LaunchConfig::linear(n, BLOCK)?),
            ("label_renumber", LaunchConfig::linear(n, BLOCK)?),
        ])
    }

    fn sizes(purpose: Purpose) -> Vec<String> {
        if purpose == Purpose::Default {
            return Input::sizes(purpose);
        }
        Input::sizes(purpose)
            .into_iter()
            .flat_map(|s| [format!("{s} --connectivity 4"), format!("{s} --connectivity 8")])
            .collect()
    }

    fn variants_for(_options: &Options) -> GpuResult<Vec<Variant>> {
        Ok(vec![union_find()])
    }

    fn prepare(gpu: &Gpu, options: &Options, seed: u64) -> GpuResult<Self> {
        let detection = options.input.read(seed)?;
        let labeler = Labeler::new(gpu, detection.width, detection.height)?;
        let image = gpu.upload("the image", &detection.pixels)?;
        Ok(Self {
            detection,
            connectivity: options.connectivity,
            image,
            labeler,
            variants: vec![union_find()],
            expected: vec![],
        })
    }
}

/// The one variant: every kernel of the family and the scan, in order.
fn union_find() -> Variant {
    Variant::new("union-find", "label_tiles")
}

impl Workload for Label {
    fn shape(&self) -> String {
        let d = &self.detection;
        format!("{}x{} level={:.4} {}-connected", d.width, d.height, d.level, self.connectivity.neighbours())
    }

    fn size(&self) -> u64 {
        self.detection.width as u64
    }

    fn peer(&self) -> Option<String> {
        Some(format!("label{}_{}", self.detection.width, self.connectivity.neighbours()))
    }

    /// The image read once and the labels written once: the least any labeling moves.
    fn work(&self) -> Work {
        Work::Bytes(8 * self.detection.pixels.len() as u64)
    }

    fn variants(&self) -> &[Variant] {
        &self.variants
    }

    fn launch(&self, gpu: &Gpu, _variant: &Variant) -> GpuResult<()> {
        self.labeler.launch(gpu, &self.image, self.detection.level, self.connectivity)
    }

    fn before_check(&self, gpu: &Gpu) -> GpuResult<()> {
        gpu.poison("labels", &self.labeler.labels)?;
        gpu.poison("the label count", &self.labeler.count)
    }

    fn compute_reference(&mut self) {
        let d = &self.detection;
        let (mut labels, count) = label(&detect(&d.pixels, d.level), d.width, self.connectivity);
        labels.push(count as u32);
        self.expected = labels;
    }

    /// The labels and, last, their count: all exact.
    fn check(&self, gpu: &Gpu, _variant: &Variant) -> GpuResult<Checked> {
        let n = self.detection.pixels.len();
        let mut labels = gpu.download("labels", &self.labeler.labels, n)?;
        labels.extend(gpu.download("the label count", &self.labeler.count, 1)?);
        let detected = self.expected[..n].iter().filter(|&&l| l != 0).count();
        let note = format!("{} sources, {} pixels detected", self.expected[n], detected);
        Ok(Checked { check: check::exact(&labels, &self.expected), note: Some(note) })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::rngs::SmallRng;
    use rand::{Rng, SeedableRng};

    /// A mask from rows of `#` (set) and `.`.
    fn mask(rows: &[&str]) -> (Vec<bool>, usize) {
        (rows.concat().bytes().map(|b| b == b'#').collect(), rows[0].len())
    }

    /// Labels in the same layout, for readable failures.
    fn grid(labels: &[u32], width: usize) -> Vec<Vec<u32>> {
        labels.chunks(width).map(<[u32]>::to_vec).collect()
    }

    /// Labelling by flood fill, the definition written plainly: scan in raster order, and at
    /// each set pixel not yet labelled, give its whole component the next label.
    fn flood_fill(mask: &[bool], width: usize, connectivity: Connectivity) -> (Vec<u32>, usize) {
        let height = mask.len() / width;
        let mut labels = vec![0u32; mask.len()];
        let mut next = 0;
        for start in 0..mask.len() {
            if !mask[start] || labels[start] != 0 {
                continue;
            }
            next += 1;
            labels[start] = next;
            let mut stack = vec![start];
            while let Some(i) = stack.pop() {
                let (row, col) = ((i / width) as isize, (i % width) as isize);
                for (dr, dc) in [(-1, -1), (-1, 0), (-1, 1), (0, -1), (0, 1), (1, -1), (1, 0), (1, 1)] {
                    let diagonal = dr != 0 && dc != 0;
                    let (r, c) = (row + dr, col + dc);
                    if (diagonal && connectivity == Connectivity::Four)
                        || !(0..height as isize).contains(&r)
                        || !(0..width as isize).contains(&c)
                    {
                        continue;
                    }
                    let j = r as usize * width + c as usize;
                    if mask[j] && labels[j] == 0 {
                        labels[j] = next;
                        stack.push(j);
                    }
                }
            }
        }
        (labels, next as usize)
    }

    #[test]
    fn the_input_is_host_skys_image_at_the_level_asked() {
        let sky = |side, blank, threshold| Input { side, blank, image: None, threshold }.read(7);
        let d = sky(37, true, 5.0).unwrap();
        let components = sky::components(37, 0, true, 7).unwrap();
        let (pixels, blanked) = sky::render(37, &components, SKY_NOISE, true, 7 ^ 1);
        assert!(blanked > 0);
        assert_eq!((d.width, d.height, d.level), (37, 37, 5.0 * SKY_NOISE));
        assert!(d.pixels.iter().zip(&pixels).all(|(a, b)| a.to_bits() == b.to_bits()));
        // Below the sky's smallest side: noise alone.
        let tiny = sky(1, false, -1.0).unwrap();
        assert_eq!((tiny.pixels.len(), tiny.level), (1, -SKY_NOISE));
        for (result, needle) in
            [(sky(0, false, 5.0), "--side must be 1 to"), (sky(37, false, f64::NAN), "--threshold must be finite")]
        {
            let message = result.err().map(|e| e.to_string()).unwrap_or_default();
            assert!(message.contains(needle), "{:?} not in {:?}", needle, message);
        }
    }

    #[test]
    fn the_threshold_is_strict_and_nan_is_never_detected() {
        let pixels = [0.5, 0.49, 0.51, f32::NAN, f32::INFINITY, -1.0];
        assert_eq!(detect(&pixels, 0.5), [false, false, true, false, true, false]);
    }

    #[test]
    fn a_diagonal_pair_is_one_source_with_8_neighbours_and_two_with_4() {
        let (m, width) = mask(&["#..", ".#.", "..."]);
        let (four, n4) = label(&m, width, Connectivity::Four);
        assert_eq!((grid(&four, width), n4), (vec![vec![1, 0, 0], vec![0, 2, 0], vec![0, 0, 0]], 2));
        let (eight, n8) = label(&m, width, Connectivity::Eight);
        assert_eq!((grid(&eight, width), n8), (vec![vec![1, 0, 0], vec![0, 1, 0], vec![0, 0, 0]], 1));
    }

    #[test]
    fn labels_follow_the_first_pixel_of_each_component_in_raster_order() {
        // Two Us whose arms start on row 0 and meet on row 2, a dot between them, and a pixel
        // that touches the second U only at a corner. Each U's right arm opens a provisional
        // label of its own and joins the left arm's on row 2.
        let (m, width) = mask(&[
            "#.#.#.#.#.", //
            "#.#...#.#.", //
            "###...###.", //
            ".........#",
        ]);
        let (four, n4) = label(&m, width, Connectivity::Four);
        let want = vec![
            vec![1, 0, 1, 0, 2, 0, 3, 0, 3, 0],
            vec![1, 0, 1, 0, 0, 0, 3, 0, 3, 0],
            vec![1, 1, 1, 0, 0, 0, 3, 3, 3, 0],
            vec![0, 0, 0, 0, 0, 0, 0, 0, 0, 4],
        ];
        assert_eq!((grid(&four, width), n4), (want.clone(), 4));
        let (eight, n8) = label(&m, width, Connectivity::Eight);
        let mut want = want;
        want[3][9] = 3;
        assert_eq!((grid(&eight, width), n8), (want, 3), "the corner joins the pixel to the second U");
        // The first pixel decides, not the first label opened: the left arm of this ⅃ opens
        // a label after the dot's, and joins its right arm, which came before the dot.
        let (m, width) = mask(&["..#.#", "#.#..", "###.."]);
        let (labels, n) = label(&m, width, Connectivity::Four);
        assert_eq!((grid(&labels, width), n), (vec![vec![0, 0, 1, 0, 2], vec![1, 0, 1, 0, 0], vec![1, 1, 1, 0, 0]], 2));
    }

    #[test]
    fn bands_joined_at_their_edges_label_as_the_whole_image_does() {
        // Random masks of several densities, cut into bands of 1 to 5 rows and whole: each
        // gives the flood fill's labels.
        let mut rng = SmallRng::seed_from_u64(22);
        for (height, width, density) in [(1, 1, 1.0), (1, 17, 0.5), (23, 1, 0.5), (31, 29, 0.3), (40, 37, 0.55)] {
            let m: Vec<bool> = (0..height * width).map(|_| rng.random_bool(density)).collect();
            for connectivity in [Connectivity::Four, Connectivity::Eight] {
                let want = flood_fill(&m, width, connectivity);
                for band_rows in [1, 2, 3, 5, height] {
                    let got = label_in_bands(&m, width, connectivity, band_rows);
                    assert_eq!(got, want, "{}x{} {:?}, bands of {} rows", height, width, connectivity, band_rows);
                }
                assert_eq!(label(&m, width, connectivity), want);
            }
        }
        // A snake that crosses every band edge several times is one component.
        let rows: Vec<String> = (0..12)
            .map(|r| {
                if r % 2 == 0 {
                    "#####".into()
                } else if r % 4 == 1 {
                    "....#".into()
                } else {
                    "#....".into()
                }
            })
            .collect();
        let (m, width) = mask(&rows.iter().map(String::as_str).collect::<Vec<_>>());
        assert_eq!(label_in_bands(&m, width, Connectivity::Four, 1).1, 1);
        assert_eq!(label(&[], 4, Connectivity::Four), (vec![], 0));
    }
}
