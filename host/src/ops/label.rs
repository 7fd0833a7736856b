//! The command line of the `label` family: its options and its registry entry.

pub use cuda_kernels::label::*;

use crate::check;
use crate::gpu::{require, Gpu, GpuResult, LaunchConfig};
use crate::io;
use crate::registry::{Checked, Kernel, Purpose, Variant, Workload};
use crate::report::Work;
use crate::sky;
use crate::sources::clip;
use cuda_kernels::stats;
use cust::memory::DeviceBuffer;
use interface::label::{BLOCK, MERGE_BLOCK, TILE_HEIGHT, TILE_WIDTH};
use std::path::PathBuf;

// The image a family of the source finder runs on: `host sky`'s synthetic sky, or a file (a
// comment, not a doc: clap would take a doc for the about of every command that flattens it).
#[derive(Debug, clap::Args)]
pub struct Sky {
    /// Pixels a side of the synthetic sky (`host sky`: its noise, core, shell and point
    /// sources, as many per area as its 190 at 2048; below 16 pixels, noise alone).
    #[arg(long, default_value_t = 2048)]
    pub side: usize,
    /// The synthetic sky's pixels outside the primary beam are NaN.
    #[arg(long)]
    pub blank: bool,
    /// An image (FITS, .npy) instead of the synthetic sky.
    #[arg(long, conflicts_with_all = ["side", "blank"])]
    pub image: Option<PathBuf>,
}

impl Sky {
    /// The synthetic sky `--side` and `--blank` ask for, drawn with `seed`, as `(width, height,
    /// pixels)`.
    pub fn synthetic(&self, seed: u64) -> GpuResult<(usize, usize, Vec<f32>)> {
        Ok((self.side, self.side, synthetic_sky(self.side, self.blank, seed)?))
    }
}

#[derive(Debug, clap::Args)]
pub struct Input {
    #[command(flatten)]
    pub sky: Sky,
    /// Sources are the pixels strictly above threshold · the noise's σ (an image's σ is that
    /// of κσ clipping at κ = 3).
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

/// `host sky`'s image of `side` pixels a side, as `--side` and `--blank` ask for it: its noise,
/// core, shell and point sources, as many per area as its 190 at 2048 (noise alone below
/// `sky::MIN_SIDE`), drawn and seeded as `host sky` draws and seeds them.
fn synthetic_sky(side: usize, blank: bool, seed: u64) -> GpuResult<Vec<f32>> {
    require((1..=sky::MAX_SIDE).contains(&side), || format!("--side must be 1 to {} pixels (got {})", sky::MAX_SIDE, side))?;
    let components = if side >= sky::MIN_SIDE {
        sky::components(side, 190 * side * side / (2048 * 2048), blank, seed)?
    } else {
        vec![]
    };
    Ok(sky::render(side, &components, SKY_NOISE, blank, seed ^ 1).0)
}

impl Input {
    /// The image the options name, and its level.
    pub fn read(&self, seed: u64) -> GpuResult<Detection> {
        require(self.threshold.is_finite(), || format!("--threshold must be finite (got {})", self.threshold))?;
        let (width, height, pixels, sigma) = match &self.sky.image {
            Some(path) => {
                let image = io::read_image(path)?;
                let (values, _) = stats::without_nan(&image.pixels);
                require(!values.is_empty(), || format!("{}: every pixel is NaN", path.display()))?;
                let sigma = clip::kappa_sigma(&mut clip::Values(values), 3.0)?.sigma;
                (image.width, image.height, image.pixels, sigma)
            }
            None => {
                let (width, height, pixels) = self.sky.synthetic(seed)?;
                (width, height, pixels, SKY_NOISE)
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
    #[arg(long, value_parser = crate::registry::named::<Connectivity>(), default_value_t = Connectivity::Four)]
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

/// This family's entry in [`super::FAMILIES`].
pub const ENTRY: crate::registry::Entry<Label> = crate::registry::Entry::new();

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

    fn launch_cases(kernel: &str, memory: &mut crate::launch_cases::Memory) -> crate::launch_cases::LaunchCases {
        use crate::launch_cases::{Args, Cases, LaunchCases};
        let mut refused: Vec<(String, Args)> = Vec::new();
        let (width, height) = (67, 45);
        let n = width * height;
        let (image, labels) = (memory.f32s(n), memory.u32s(n));
        let four = Connectivity::Four;
        let valid: Args = match kernel {
            "label_tiles" => {
                let with = |image, labels, width, height| -> Args {
                    Box::new(TilesArgs { image, width, height, level: 0.5, connectivity: four, labels })
                };
                refused.push(("one row too many".into(), with(image, labels, width, height + 1)));
                refused.push(("labels short".into(), with(image, memory.u32s(n - 1), width, height)));
                refused.push(("labels are the image".into(), with(image, memory.same_memory(image), width, height)));
                refused.push(("no pixels".into(), with(image, labels, 0, height)));
                refused.push(("dimensions overflow".into(), with(image, labels, usize::MAX, 2)));
                with(image, labels, width, height)
            }
            "label_merge" => {
                let with = |labels, width, height| -> Args {
                    Box::new(MergeArgs { width, height, connectivity: four, labels })
                };
                refused.push(("labels short".into(), with(memory.u32s(n - 1), width, height)));
                refused.push(("no pixels".into(), with(labels, 0, 0)));
                refused.push(("as many pixels as BACKGROUND".into(), with(labels, 1 << 16, 1 << 16)));
                with(labels, width, height)
            }
            "label_flatten" => {
                let roots = memory.u32s(n);
                let with = |labels, roots, n| -> Args { Box::new(FlattenArgs { labels, roots, n }) };
                refused.push(("roots short".into(), with(labels, memory.u32s(n - 1), n)));
                refused.push(("roots are the labels".into(), with(labels, labels, n)));
                refused.push(("no pixels".into(), with(labels, roots, 0)));
                with(labels, roots, n)
            }
            _ => {
                let (ranks, count) = (memory.u32s(n), memory.u32s(1));
                let with = |labels, ranks, count, n| -> Args { Box::new(RenumberArgs { labels, ranks, count, n }) };
                refused.push(("ranks short".into(), with(labels, memory.u32s(n - 1), count, n)));
                refused.push(("no count".into(), with(labels, ranks, memory.u32s(0), n)));
                refused.push(("ranks are the labels".into(), with(labels, labels, count, n)));
                refused.push(("the count is a label".into(), with(labels, ranks, labels, n)));
                refused.push(("no pixels".into(), with(labels, ranks, count, 0)));
                with(labels, ranks, count, n)
            }
        };
        LaunchCases::Cases(Cases { valid, refused })
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

    unsafe fn launch(&self, gpu: &Gpu, _variant: &Variant) -> GpuResult<()> {
        self.labeler.launch(gpu, &self.image, self.detection.level, self.connectivity)
    }

    fn before_check(&self, gpu: &Gpu) -> GpuResult<()> {
        gpu.poison("labels", &self.labeler.labels)?;
        gpu.poison("the label count", &self.labeler.count)
    }

    fn compute_reference(&mut self) {
        let d = &self.detection;
        let (mut labels, count) = cpu_reference(&detect(&d.pixels, d.level), d.width, self.connectivity);
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
        let sky = |side, blank, threshold| Input { sky: Sky { side, blank, image: None }, threshold }.read(7);
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
        let (four, n4) = cpu_reference(&m, width, Connectivity::Four);
        assert_eq!((grid(&four, width), n4), (vec![vec![1, 0, 0], vec![0, 2, 0], vec![0, 0, 0]], 2));
        let (eight, n8) = cpu_reference(&m, width, Connectivity::Eight);
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
        let (four, n4) = cpu_reference(&m, width, Connectivity::Four);
        let want = vec![
            vec![1, 0, 1, 0, 2, 0, 3, 0, 3, 0],
            vec![1, 0, 1, 0, 0, 0, 3, 0, 3, 0],
            vec![1, 1, 1, 0, 0, 0, 3, 3, 3, 0],
            vec![0, 0, 0, 0, 0, 0, 0, 0, 0, 4],
        ];
        assert_eq!((grid(&four, width), n4), (want.clone(), 4));
        let (eight, n8) = cpu_reference(&m, width, Connectivity::Eight);
        let mut want = want;
        want[3][9] = 3;
        assert_eq!((grid(&eight, width), n8), (want, 3), "the corner joins the pixel to the second U");
        // The first pixel decides, not the first label opened: the left arm of this ⅃ opens
        // a label after the dot's, and joins its right arm, which came before the dot.
        let (m, width) = mask(&["..#.#", "#.#..", "###.."]);
        let (labels, n) = cpu_reference(&m, width, Connectivity::Four);
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
                assert_eq!(cpu_reference(&m, width, connectivity), want);
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
        assert_eq!(cpu_reference(&[], 4, Connectivity::Four), (vec![], 0));
    }
}
