//! Host side of `kernels::matmul`: C = A × B, f32, row-major, any m, n, k. A and B are random
//! or read from `.npy` files (`--a`, `--b`); `--output` writes C as `.npy`.
//!
//! Tolerance: random inputs are uniform in [-1, 1), so a product term has magnitude at most 1
//! and a length-k dot product rounded in any order is typically within about k·ε/3 of the
//! exact value (ε = f32::EPSILON). GPU and CPU sum in different orders, so each element may
//! differ by up to `4·k·ε`, about 12 times the typical error. Inputs from files scale that by
//! `max(1, max|a|·max|b|)`, the bound of a product term.

use crate::check;
use crate::data::random_f32;
use crate::gpu::{arg, require, Gpu, GpuError, GpuResult, LaunchConfig};
use crate::io;
use crate::multi::{self, Done, Share, SplitReport};
use crate::ops::conv2d::product_scale;
use crate::registry::{Checked, Kernel, Purpose, Variant, Workload};
use crate::report::{Report, Work};
use crate::resources;
use crate::tuning::{self, Choice, TuningCache};
use cust::memory::DeviceBuffer;
use cust::stream::Stream;
use interface::matmul::{
    TileConfig, ASYNC_BM, ASYNC_BN, ASYNC_SHARED_BYTES, ASYNC_THREADS, BLOCKED_SHARED_BYTES, BLOCKED_THREADS, BM, BN,
    CP_ASYNC_BM, CP_ASYNC_BN, CP_ASYNC_SHARED_BYTES, CP_ASYNC_THREADS, DEFAULT_TILE, LARGE_TILE,
    LARGE_TILE_SHARED_BYTES, NAIVE_BLOCK, SMALL_TILE, SMALL_TILE_SHARED_BYTES, TILE_CONFIGS,
};
use ndarray::ArrayView2;
use std::collections::HashMap;
use std::ops::Range;
use std::path::{Path, PathBuf};

crate::variants! {
    /// The steps of the ladder (`kernels/src/matmul/`), each adding one idea to the one before.
    pub enum Step {
        Naive => ("naive", "matmul_naive"),
        Tiled16 => ("tiled16", "matmul_tiled_16"),
        Tiled32 => ("tiled32", "matmul_tiled_32"),
        Blocked => ("blocked", "matmul_blocked_128x128"),
        Vload => ("vload", "matmul_vload_128x128"),
        Vshared => ("vshared", "matmul_vshared_128x128"),
        Vec4 => ("vec4", "matmul_vec4_128x128"),
        CpAsync => ("cp-async", "matmul_cp_async_128x128"),
        Warps => ("warps", "matmul_warps_128x256"),
        Async => ("async", "matmul_async_128x256"),
    }
}

impl Step {
    pub fn launch_config(self, m: usize, n: usize) -> GpuResult<LaunchConfig> {
        let square =
            |tile: usize, shared: usize| LaunchConfig::tiles_2d(n, m, (tile, tile), (tile as u32, tile as u32), shared);
        let blocked = || LaunchConfig::tiles_2d(n, m, (BN, BM), (BLOCKED_THREADS as u32, 1), BLOCKED_SHARED_BYTES);
        let warp_tiled =
            || LaunchConfig::tiles_2d(n, m, (ASYNC_BN, ASYNC_BM), (ASYNC_THREADS as u32, 1), ASYNC_SHARED_BYTES);
        match self {
            Step::Naive => square(NAIVE_BLOCK, 0),
            Step::Tiled16 => square(SMALL_TILE, SMALL_TILE_SHARED_BYTES),
            Step::Tiled32 => square(LARGE_TILE, LARGE_TILE_SHARED_BYTES),
            // Steps 4a and 4b keep step 3's tile, threads and shared memory.
            Step::Blocked | Step::Vload | Step::Vshared => blocked(),
            Step::Vec4 => tile_launch(&DEFAULT_TILE, m, n),
            Step::CpAsync => LaunchConfig::tiles_2d(
                n,
                m,
                (CP_ASYNC_BN, CP_ASYNC_BM),
                (CP_ASYNC_THREADS as u32, 1),
                CP_ASYNC_SHARED_BYTES,
            ),
            // Step 5c is step 5b rescheduled: the same launch.
            Step::Warps | Step::Async => warp_tiled(),
        }
    }
}

/// The launch of an SGEMM configuration: one block of `tile.threads()` per tile of C.
pub fn tile_launch(tile: &TileConfig, m: usize, n: usize) -> GpuResult<LaunchConfig> {
    LaunchConfig::tiles_2d(n, m, (tile.bn, tile.bm), (tile.threads() as u32, 1), tile.shared_bytes())
}

/// `128x64x8/8x8`: the block tile BM×BN×BK, then the thread tile TM×TN.
pub fn tile_label(tile: &TileConfig) -> String {
    format!("{}x{}x{}/{}x{}", tile.bm, tile.bn, tile.bk, tile.tm, tile.tn)
}

/// A configuration as a variant, named by its label.
fn tile_variant(tile: &TileConfig) -> Variant {
    Variant::new(tile_label(tile), tile.kernel)
}

fn tile_of(kernel: &str) -> Option<&'static TileConfig> {
    TILE_CONFIGS.iter().find(|t| t.kernel == kernel)
}

/// The launch of any matmul kernel: a tutorial step's or a configuration's.
fn launch_config(kernel: &str, m: usize, n: usize) -> GpuResult<LaunchConfig> {
    match (Step::ALL.iter().find(|s| s.kernel() == kernel), tile_of(kernel)) {
        (Some(step), _) => step.launch_config(m, n),
        (None, Some(tile)) => tile_launch(tile, m, n),
        (None, None) => Err(GpuError::InvalidInput(format!("`{kernel}` is not a matmul kernel"))),
    }
}

#[derive(Debug, clap::Args)]
pub struct Options {
    #[arg(long, default_value_t = 4096)]
    pub m: usize,
    #[arg(long, default_value_t = 4096)]
    pub n: usize,
    #[arg(long, default_value_t = 4096)]
    pub k: usize,
    /// Variants to run (all when omitted).
    #[arg(long = "variant", value_enum)]
    pub variants: Vec<Step>,
    /// A 2-D f32 .npy file for A, m×k (with --b); replaces the random data, --m and --k.
    #[arg(long, requires = "b", conflicts_with_all = ["m", "k"])]
    pub a: Option<PathBuf>,
    /// A 2-D f32 .npy file for B, k×n; replaces --n.
    #[arg(long, requires = "a", conflicts_with = "n")]
    pub b: Option<PathBuf>,
    /// Writes C (the GPU's result, m×n) to this .npy file.
    #[arg(long)]
    pub output: Option<PathBuf>,
    /// Times every tile configuration at this shape, prints each one's registers, shared
    /// memory and occupancy, and keeps the fastest for this GPU and shape class in the tuning
    /// cache; later runs at shapes of that class add it as the `tuned` variant.
    #[arg(long, conflicts_with_all = ["variants", "all_configs"])]
    pub tune: bool,
    /// Runs every tile configuration as a variant without touching the tuning cache.
    #[arg(long, conflicts_with = "variants")]
    pub all_configs: bool,
    /// Divides C's rows among this many GPUs (one context and stream each, copies in
    /// parallel), checks the joined result and reports the speed-up over one GPU.
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..), conflicts_with_all = ["variants", "tune", "all_configs", "output"])]
    pub gpus: Option<u64>,
    /// The tuning cache [default: $XDG_CACHE_HOME/rust-cuda-kernels/tuning.json, or under
    /// $HOME/.cache].
    #[arg(long)]
    pub tuning_cache: Option<PathBuf>,
}

/// m, n, k.
type Dims = (usize, usize, usize);

/// A (m×k) and B (k×n), row-major.
type Inputs = (Vec<f32>, Vec<f32>);

/// m, n, k >= 1.
fn require_shape((m, n, k): Dims) -> GpuResult<()> {
    require(m >= 1 && n >= 1 && k >= 1, || format!("matmul needs m, n, k >= 1 (got {}x{}x{})", m, n, k))
}

/// The shape, and A and B when the options name files for them; random inputs are made by
/// [`random_inputs`] once the shape is known to fit.
fn shape_and_files(options: &Options) -> GpuResult<(Dims, Option<Inputs>)> {
    match (&options.a, &options.b) {
        (Some(a), Some(b)) => read_inputs(a, b).map(|(shape, a, b)| (shape, Some((a, b)))),
        _ => Ok(((options.m, options.n, options.k), None)),
    }
}

/// The tuning cache's class of a shape.
fn shape_class((m, n, k): Dims) -> String {
    tuning::shape_class(&[("m", m), ("n", n), ("k", k)])
}

fn random_inputs((m, n, k): Dims, seed: u64) -> Inputs {
    (random_f32(m * k, seed), random_f32(k * n, seed ^ 1))
}

/// A and B from their files: finite f32 matrices whose inner dimensions agree.
fn read_inputs(a: &Path, b: &Path) -> GpuResult<(Dims, Vec<f32>, Vec<f32>)> {
    let (((m, k), va), ((kb, n), vb)) = (io::read_matrix::<f32>(a)?, io::read_matrix::<f32>(b)?);
    io::require_finite(a, &va)?;
    io::require_finite(b, &vb)?;
    require(k == kb, || {
        let (a, b) = (a.display(), b.display());
        format!("A ({a}) is {m}x{k} and B ({b}) is {kb}x{n}: A's columns ({k}) must equal B's rows ({kb})")
    })?;
    Ok(((m, n, k), va, vb))
}

pub fn cpu_reference(a: &[f32], b: &[f32], m: usize, n: usize, k: usize) -> Vec<f32> {
    let a = ArrayView2::from_shape((m, k), a).expect("a is m×k");
    let b = ArrayView2::from_shape((k, n), b).expect("b is k×n");
    a.dot(&b).into_raw_vec_and_offset().0
}

pub fn tolerance(k: usize) -> f64 {
    4.0 * k as f64 * f32::EPSILON as f64
}

/// Where `--tune` keeps its pick: the cache file, this GPU and the shape class.
struct TuneTarget {
    path: PathBuf,
    device: String,
    class: String,
}

/// Launches `kernel` on `[A, B, C]` of shape m×n×k.
fn launch_sgemm(
    gpu: &Gpu,
    stream: &Stream,
    kernel: &str,
    [a, b, c]: [&DeviceBuffer<f32>; 3],
    (m, n, k): Dims,
) -> GpuResult<()> {
    let (pa, pb, pc, a_len, b_len) = (a.as_device_ptr(), b.as_device_ptr(), c.as_device_ptr(), a.len(), b.len());
    let args = [arg(&pa), arg(&a_len), arg(&pb), arg(&b_len), arg(&pc), arg(&m), arg(&n), arg(&k)];
    gpu.launch_on(stream, kernel, &launch_config(kernel, m, n)?, &args)
}

/// A and B on the GPU, C poisoned, ready to launch any variant.
pub struct Matmul {
    pub m: usize,
    pub n: usize,
    pub k: usize,
    pub a: Vec<f32>,
    pub b: Vec<f32>,
    variants: Vec<Variant>,
    /// What the report says beside a variant, by variant name.
    notes: HashMap<String, String>,
    /// Set by `--tune`: the fastest configuration goes there.
    tune: Option<TuneTarget>,
    /// The tolerance's `max(1, max|a|·max|b|)`.
    scale: f64,
    output: Option<PathBuf>,
    expected: Vec<f32>,
    da: DeviceBuffer<f32>,
    db: DeviceBuffer<f32>,
    dc: DeviceBuffer<f32>,
}

impl Matmul {
    /// Random A and B of shape `(m, n, k)`, to run the given steps (all when empty).
    pub fn new(gpu: &Gpu, shape: (usize, usize, usize), steps: &[Step], seed: u64) -> GpuResult<Self> {
        let variants = Step::variants(steps);
        Self::with_inputs(gpu, shape, variants, || random_inputs(shape, seed))
    }

    /// A and B from `inputs`, called once the shape is known to fit.
    fn with_inputs(
        gpu: &Gpu,
        (m, n, k): (usize, usize, usize),
        variants: Vec<Variant>,
        inputs: impl FnOnce() -> Inputs,
    ) -> GpuResult<Self> {
        require_shape((m, n, k))?;
        for variant in &variants {
            gpu.validate(&variant.kernel, &launch_config(&variant.kernel, m, n)?)?;
        }
        gpu.ensure_fits("matmul's A, B and C", 4 * (m * k + k * n + m * n) as u64)?;
        let (a, b) = inputs();
        let (da, db) = (gpu.upload("A", &a)?, gpu.upload("B", &b)?);
        let dc = gpu.poisoned::<f32>("C", m * n)?;
        let scale = product_scale(&a, &b);
        let notes = HashMap::new();
        Ok(Self { m, n, k, a, b, variants, notes, tune: None, scale, output: None, expected: vec![], da, db, dc })
    }

    pub fn launch_on(&self, gpu: &Gpu, stream: &Stream, kernel: &str) -> GpuResult<()> {
        launch_sgemm(gpu, stream, kernel, [&self.da, &self.db, &self.dc], (self.m, self.n, self.k))
    }

    /// C on the GPU, for kernels that consume it.
    pub fn c(&self) -> &DeviceBuffer<f32> {
        &self.dc
    }

    pub fn result(&self, gpu: &Gpu) -> GpuResult<Vec<f32>> {
        gpu.download("C", &self.dc, self.m * self.n)
    }

    pub fn cpu_reference(&self) -> Vec<f32> {
        cpu_reference(&self.a, &self.b, self.m, self.n, self.k)
    }
}

/// Each tile configuration's registers, shared memory and occupancy, by variant name.
fn tile_notes(gpu: &Gpu, (m, n): (usize, usize)) -> GpuResult<HashMap<String, String>> {
    let mut notes = HashMap::new();
    for tile in TILE_CONFIGS {
        let used = resources::of(gpu, Matmul::NAME, tile.kernel, &tile_launch(tile, m, n)?)?;
        let spills =
            if used.local_bytes > 0 { format!(", {} B local (spills)", used.local_bytes) } else { String::new() };
        let note = format!(
            "{} threads, {} regs, {} KiB shared, {} blocks/SM = {:.0}% occupancy{}",
            tile.threads(),
            used.registers,
            (used.static_shared_bytes as u32 + used.dynamic_shared_bytes) / 1024,
            used.blocks_per_sm,
            used.occupancy_percent,
            spills
        );
        notes.insert(tile_variant(tile).name, note);
    }
    Ok(notes)
}

/// The configuration `--tune` kept for this GPU and shape class, with a note saying so.
fn cached_tile(path: &Path, device: &str, class: &str) -> GpuResult<Option<(&'static TileConfig, String)>> {
    let cache = TuningCache::load(path)?;
    let Some(choice) = cache.lookup(Matmul::NAME, device, class) else { return Ok(None) };
    let tile = tile_of(&choice.kernel).ok_or_else(|| GpuError::File {
        path: path.display().to_string(),
        reason: format!(
            "the tuned kernel for {class} is `{}`, which this build does not have; run --tune again",
            choice.kernel
        ),
    })?;
    Ok(Some((tile, format!("{} (--tune at {}: {:.4} ms)", tile_label(tile), choice.shape, choice.ms))))
}

impl Kernel for Matmul {
    const NAME: &'static str = "matmul";
    const ABOUT: &'static str =
        "C = A × B, f32 row-major: a ladder from naive to cp.async with warp tiles; --tune picks vec4's tile sizes";
    type Options = Options;

    fn launches(_sms: u32) -> GpuResult<Vec<(&'static str, LaunchConfig)>> {
        let steps = Step::ALL.iter().map(|s| Ok((s.kernel(), s.launch_config(4096, 4096)?)));
        // The default configuration is the vec4 step; the others are listed once each.
        let tiles = TILE_CONFIGS.iter().skip(1).map(|t| Ok((t.kernel, tile_launch(t, 4096, 4096)?)));
        steps.chain(tiles).collect()
    }

    fn sizes(purpose: Purpose) -> Vec<String> {
        let cube = |side: usize| format!("--m {side} --n {side} --k {side}");
        // The simple kernels alone would take most of a sweep at 8192.
        let fast = |side: usize| format!("{} --variant blocked --variant vec4 --variant async", cube(side));
        match purpose {
            Purpose::Default => vec![String::new()],
            Purpose::Check => {
                // 300x264x48 mixes interior blocks (no checks) and edge blocks with n % 4 == 0 and
                // k % 16 == 0, for the 128x128 and 128x256 tiles alike; the others are odd.
                let shapes = [
                    (1, 1, 1),
                    (17, 31, 13),
                    (127, 129, 65),
                    (131, 257, 67),
                    (1, 300, 1),
                    (300, 1, 700),
                    (300, 264, 48),
                ];
                let steps =
                    shapes.iter().chain([(1024, 768, 512)].iter()).map(|(m, n, k)| format!("--m {m} --n {n} --k {k}"));
                // Every tile configuration on these shapes, edges in both dimensions.
                let tiles = shapes.iter().map(|(m, n, k)| format!("--m {m} --n {n} --k {k} --all-configs"));
                steps.chain(tiles).collect()
            }
            Purpose::Quick => vec![cube(1024), cube(2048), cube(4096)],
            Purpose::Full => vec![cube(512), cube(1024), cube(2048), cube(4096), fast(8192)],
            Purpose::Criterion => vec![cube(256), cube(512), cube(1024)],
        }
    }

    fn split(options: &Options, seed: u64, iters: usize) -> Option<GpuResult<SplitReport>> {
        options.gpus.map(|gpus| split(options, gpus as usize, seed, iters))
    }

    fn variants_for(options: &Options) -> GpuResult<Vec<Variant>> {
        Ok(if options.tune || options.all_configs {
            TILE_CONFIGS.iter().map(tile_variant).collect()
        } else {
            Step::variants(&options.variants)
        })
    }

    fn prepare(gpu: &Gpu, options: &Options, seed: u64) -> GpuResult<Self> {
        let (shape, inputs) = shape_and_files(options)?;
        let (m, n, _) = shape;
        let class = shape_class(shape);
        let device = tuning::device_key(&gpu.info);
        // Only --tune and an explicit --tuning-cache insist on a cache file being locatable.
        let cache_path = match (&options.tuning_cache, options.tune) {
            (Some(path), _) => Some(path.clone()),
            (None, true) => Some(tuning::default_path()?),
            (None, false) => tuning::default_path().ok(),
        };
        let mut variants = Self::variants_for(options)?;
        let (notes, tune) = if options.tune || options.all_configs {
            let notes = tile_notes(gpu, (m, n))?;
            let tune = match cache_path.filter(|_| options.tune) {
                Some(path) => {
                    TuningCache::load(&path)?; // a corrupt cache stops the run before the timing
                    Some(TuneTarget { path, device, class })
                }
                None => None,
            };
            (notes, tune)
        } else {
            let mut notes = HashMap::new();
            if let (true, Some(path)) = (options.variants.is_empty(), cache_path) {
                if let Some((tile, note)) = cached_tile(&path, &device, &class)? {
                    notes.insert("tuned".to_string(), note);
                    variants.push(Variant::new("tuned", tile.kernel));
                }
            }
            (notes, None)
        };
        let mut matmul =
            Self::with_inputs(gpu, shape, variants, || inputs.unwrap_or_else(|| random_inputs(shape, seed)))?;
        matmul.notes = notes;
        matmul.tune = tune;
        matmul.output = options.output.clone();
        Ok(matmul)
    }
}

impl Workload for Matmul {
    fn shape(&self) -> String {
        format!("{}x{}x{}", self.m, self.n, self.k)
    }

    fn size(&self) -> u64 {
        self.m as u64
    }

    fn peer(&self) -> Option<String> {
        let cube = self.m == self.n && self.n == self.k;
        Some(if cube { format!("sgemm_f32_{}", self.m) } else { format!("sgemm_f32_{}x{}x{}", self.m, self.n, self.k) })
    }

    fn work(&self) -> Work {
        Work::Flops(2 * (self.m * self.n * self.k) as u64)
    }

    fn variants(&self) -> &[Variant] {
        &self.variants
    }

    fn launch(&self, gpu: &Gpu, variant: &Variant) -> GpuResult<()> {
        self.launch_on(gpu, &gpu.stream, &variant.kernel)
    }

    fn before_check(&self, gpu: &Gpu) -> GpuResult<()> {
        gpu.poison("C", &self.dc)
    }

    fn compute_reference(&mut self) {
        self.expected = self.cpu_reference();
    }

    fn check(&self, gpu: &Gpu, variant: &Variant) -> GpuResult<Checked> {
        let check = check::close(&self.result(gpu)?, &self.expected, tolerance(self.k) * self.scale);
        Ok(Checked { check, note: self.notes.get(&variant.name).cloned() })
    }

    /// With `--tune`: the fastest configuration that passed goes into the cache, and its row
    /// says so.
    fn finish(&self, gpu: &Gpu, reports: &mut [Report]) -> GpuResult<()> {
        if let Some(path) = &self.output {
            io::write_matrix(path, (self.m, self.n), &self.result(gpu)?)?;
        }
        let Some(target) = &self.tune else { return Ok(()) };
        let median = |r: &Report| r.timing.median_ms;
        let default = tile_label(&DEFAULT_TILE);
        let default_ms = reports.iter().find(|r| r.variant == default).map(median);
        let fastest = reports.iter_mut().filter(|r| r.check.passed).min_by(|x, y| median(x).total_cmp(&median(y)));
        let (Some(fastest), Some(default_ms)) = (fastest, default_ms) else {
            return Err(GpuError::InvalidInput("no tile configuration passed its check: nothing to keep".into()));
        };
        let kernel =
            self.variants.iter().find(|v| v.name == fastest.variant).expect("a report of a variant").kernel.clone();
        let choice = Choice {
            family: Self::NAME.to_string(),
            device: target.device.clone(),
            class: target.class.clone(),
            kernel,
            shape: self.shape(),
            ms: median(fastest),
            default_ms,
        };
        let mut cache = TuningCache::load(&target.path)?;
        cache.record(choice)?;
        let kept = format!(
            "FASTEST, {:.2}x the default: kept for {} in {}",
            default_ms / median(fastest),
            target.class,
            target.path.display()
        );
        fastest.note = Some(match fastest.note.take() {
            Some(note) => format!("{note}; {kept}"),
            None => kept,
        });
        Ok(())
    }
}

/// GPU `i`'s share of a divided SGEMM: its rows of A and C, and all of B, run with the
/// configuration tuned for this GPU and the shape of the share, if there is one.
fn share(
    gpu: &Gpu,
    (a, b): (&[f32], &[f32]),
    rows: Range<usize>,
    (n, k): (usize, usize),
    cache: Option<&Path>,
) -> GpuResult<Share> {
    let m = rows.len();
    let class = shape_class((m, n, k));
    let tuned = match cache {
        Some(path) => cached_tile(path, &tuning::device_key(&gpu.info), &class)?,
        None => None,
    };
    let kernel = tuned.map_or(DEFAULT_TILE.kernel, |(tile, _)| tile.kernel);
    gpu.validate(kernel, &launch_config(kernel, m, n)?)?;
    let a_rows = &a[rows.start * k..rows.end * k];
    Share::new(gpu, rows, kernel, &[("A's rows", a_rows), ("B", b)], m * n)
}

/// Rows of C the divided run checks against the CPU: all when the CPU can compute all of C
/// quickly, else both ends of every GPU's share and rows spread between them.
fn rows_to_check((m, n, k): Dims, gpus: usize) -> Vec<usize> {
    if m * n * k <= 1 << 33 {
        return (0..m).collect();
    }
    let ends = (0..gpus).flat_map(|i| {
        let share = multi::part(m, gpus, i);
        [share.start, share.end - 1]
    });
    let mut rows: Vec<usize> = ends.chain((1..32).map(|i| i * m / 32)).collect();
    rows.sort_unstable();
    rows.dedup();
    rows
}

/// `matmul --gpus N`: C's rows divided among N GPUs, after the same job on one GPU.
pub fn split(options: &Options, gpus: usize, seed: u64, iters: usize) -> GpuResult<SplitReport> {
    let count = multi::require_gpus(gpus)?;
    let (shape, inputs) = shape_and_files(options)?;
    require_shape(shape)?;
    let (m, n, k) = shape;
    let (a, b) = inputs.unwrap_or_else(|| random_inputs(shape, seed));
    require(m >= count, || format!("{m} rows cannot be divided among {count} GPUs"))?;
    let cache = options.tuning_cache.clone().or_else(|| tuning::default_path().ok());
    let rows = rows_to_check((m, n, k), count);
    let expected = {
        let picked: Vec<f32> = rows.iter().flat_map(|&r| a[r * k..(r + 1) * k].iter().copied()).collect();
        cpu_reference(&picked, &b, rows.len(), n, k)
    };
    let which = if rows.len() == m {
        "all of C".to_string()
    } else {
        format!("{} of C's {m} rows (both ends of every GPU's share, and rows between)", rows.len())
    };
    let job = multi::Job {
        family: Matmul::NAME,
        shape: format!("{m}x{n}x{k}"),
        work: Work::Flops(2 * (m * n * k) as u64),
        checked: which,
    };
    let setup =
        |gpus: usize, i: usize, gpu: &Gpu| share(gpu, (&a, &b), multi::part(m, gpus, i), (n, k), cache.as_deref());
    let launch = |gpu: &Gpu, share: &Share| {
        let (inputs, c) = share.device();
        launch_sgemm(gpu, &gpu.stream, share.kernel, [inputs[0], inputs[1], c], (share.range.len(), n, k))
    };
    let tolerance = tolerance(k) * product_scale(&a, &b);
    let check = |done: &[Done]| {
        // The rows to check, from whichever GPU computed them.
        let got: Vec<f32> = rows
            .iter()
            .flat_map(|&r| {
                let share = done.iter().find(|d| d.range.contains(&r)).expect("the shares cover every row");
                let local = r - share.range.start;
                share.output[local * n..(local + 1) * n].iter().copied()
            })
            .collect();
        check::close(&got, &expected, tolerance)
    };
    multi::measure(job, count, iters, &setup, &launch, &check)
}

#[cfg(test)]
mod tests {
    use super::*;
    use interface::matmul::{ASYNC_BK, BK, CP_ASYNC_BK};

    /// Blocks of a `bm × bn × bk` tile at `(m, n, k)` that skip every bounds check, as the
    /// kernels' `interior_block` decides, and all blocks.
    fn interior_blocks((m, n, k): Dims, (bm, bn, bk): (usize, usize, usize)) -> (usize, usize) {
        let (rows, cols) = (m.div_ceil(bm), n.div_ceil(bn));
        let inside = (0..rows).flat_map(|y| (0..cols).map(move |x| (y, x)));
        let interior = inside.filter(|(y, x)| (y + 1) * bm <= m && (x + 1) * bn <= n && k % bk == 0 && n % 4 == 0);
        (interior.count(), rows * cols)
    }

    #[test]
    fn a_check_shape_mixes_interior_and_edge_blocks_for_every_tile() {
        let sizes = Matmul::sizes(Purpose::Check);
        let shape = (300, 264, 48);
        let wanted = format!("--m {} --n {} --k {} --all-configs", shape.0, shape.1, shape.2);
        assert!(sizes.contains(&wanted), "the check shapes lack `{wanted}`");
        let tiles = TILE_CONFIGS.iter().map(|t| (t.bm, t.bn, t.bk));
        let steps = [(BM, BN, BK), (CP_ASYNC_BM, CP_ASYNC_BN, CP_ASYNC_BK), (ASYNC_BM, ASYNC_BN, ASYNC_BK)];
        for tile in tiles.chain(steps) {
            let (interior, all) = interior_blocks(shape, tile);
            assert!(interior > 0 && interior < all, "{tile:?}: {interior} of {all} blocks interior");
        }
    }
}
