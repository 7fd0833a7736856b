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

use crate::gpu::{
    product, refuse, require, require_disjoint, require_kernel, require_len, CudaContext, Gpu, GpuResult, KernelArgs,
    LaunchConfig, Params,
};
use crate::scan::Scanner;
use cust::memory::{DeviceBuffer, DeviceSlice};
use interface::label::{BACKGROUND, BLOCK, MERGE_BLOCK, TILE_HEIGHT, TILE_WIDTH};
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
    pub labels: DeviceBuffer<u32>,
    roots: DeviceBuffer<u32>,
    ranks: DeviceBuffer<u32>,
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
        self.launch(gpu, image, level, connectivity)?;
        Ok(gpu.download("the label count", &self.count, 1)?[0])
    }

    /// Each pixel's label, row by row, after [`Labeler::label`].
    pub fn labels(&self) -> &DeviceSlice<u32> {
        &self.labels
    }

    /// The kernels of [`Labeler::label`], queued on the stream.
    pub fn launch(&self, gpu: &Gpu, image: &DeviceSlice<f32>, level: f64, connectivity: Connectivity) -> GpuResult<()> {
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

crate::named!(Connectivity { Four => "4", Eight => "8" });
