//! Host side of `kernels::conv2d`: same-size output, zero padding, odd filters 3×3 to 7×7,
//! the taps written into the kernels' constant memory. The image is random, a PNG (as
//! grey-scale in [0, 1]), or a 2-D f32 `.npy` or FITS image (its values as stored); the filter
//! random, named (box, gaussian, sharpen, sobel-x) or read from a text file; `--out` writes the
//! GPU's result as an 8-bit PNG, or as f32 `.npy` or FITS (by extension).
//!
//! Tolerance: each of the `taps` products has magnitude at most `s = max|x|·max|f|`, below 1
//! for the random image and filter (uniform in [-1, 1)), up to 5 for a PNG and `sharpen`, any
//! size for a float image. The GPU (with fused multiply-adds) and the CPU round differently,
//! each within about `taps·ε·s` of the exact sum. Elements may differ by `4·taps·ε·max(1, s)`.

use crate::check::{self, product_scale};
use crate::data::random_f32;
use crate::gpu::{
    product, refuse, require, require_disjoint, require_len, CudaContext, Gpu, GpuResult, KernelArgs, LaunchConfig,
    Params,
};
use crate::io;
use crate::registry::{Checked, Kernel, Purpose, Variant, Workload};
use crate::report::{Report, Work};
use cust::memory::{CopyDestination, DeviceBuffer, DeviceSlice};
use interface::conv::{BLOCK_ROWS, FILTER_SYMBOL, MAX_RADIUS, MAX_TAPS, NAIVE_BLOCK, TILE};
use ndarray::{s, Array2, ArrayView2, Zip};
use std::ffi::CString;
use std::path::{Path, PathBuf};

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Method {
    Naive,
    Tiled,
}

impl Method {
    pub const ALL: [Method; 2] = [Method::Naive, Method::Tiled];

    /// The methods chosen with `--variant`, or all of them when none was.
    fn chosen(chosen: &[Method]) -> &[Method] {
        if chosen.is_empty() {
            &Method::ALL
        } else {
            chosen
        }
    }

    /// The variants of [`Method::chosen`] for a filter of `radius`.
    fn variants(chosen: &[Method], radius: usize) -> Vec<Variant> {
        let variant = |method: &Method| match method {
            Method::Naive => Variant::new("naive", "conv2d_naive"),
            Method::Tiled => Variant::new("tiled", tiled_kernel(radius)),
        };
        Method::chosen(chosen).iter().map(variant).collect()
    }

    fn config(self, width: usize, height: usize) -> GpuResult<LaunchConfig> {
        match self {
            Method::Naive => naive_config(width, height),
            Method::Tiled => tiled_config(width, height),
        }
    }
}

/// The filters `--filter` knows by name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Named {
    /// 3×3 mean.
    Box,
    /// 5×5 binomial blur.
    Gaussian,
    /// 3×3: the centre minus the discrete Laplacian.
    Sharpen,
    /// 3×3 horizontal gradient.
    SobelX,
}

impl Named {
    pub const ALL: [Named; 4] = [Named::Box, Named::Gaussian, Named::Sharpen, Named::SobelX];

    pub fn name(self) -> &'static str {
        match self {
            Named::Box => "box",
            Named::Gaussian => "gaussian",
            Named::Sharpen => "sharpen",
            Named::SobelX => "sobel-x",
        }
    }

    /// The side and the taps, row by row.
    pub fn taps(self) -> (usize, Vec<f32>) {
        match self {
            Named::Box => (3, vec![1.0 / 9.0; 9]),
            Named::Gaussian => {
                // The outer product of the binomial row 1 4 6 4 1 with itself, over 256.
                let row = [1.0f32, 4.0, 6.0, 4.0, 1.0];
                (5, row.iter().flat_map(|a| row.iter().map(move |b| a * b / 256.0)).collect())
            }
            Named::Sharpen => (3, vec![0.0, -1.0, 0.0, -1.0, 5.0, -1.0, 0.0, -1.0, 0.0]),
            Named::SobelX => (3, vec![-1.0, 0.0, 1.0, -2.0, 0.0, 2.0, -1.0, 0.0, 1.0]),
        }
    }
}

/// What `--filter` names.
#[derive(Debug, Clone, PartialEq)]
pub enum Filter {
    /// Random taps in [-1, 1), this many a side.
    Random(usize),
    Named(Named),
    /// A text file of a square filter, one row per line (see [`io::parse_filter`]).
    File(PathBuf),
}

impl Filter {
    /// Parses `--filter`: a number, else a name, else an existing file (`./box` for a file
    /// named like a filter).
    pub fn parse(text: &str) -> Result<Filter, String> {
        if let Ok(side) = text.parse() {
            return Ok(Filter::Random(side));
        }
        if let Some(named) = Named::ALL.into_iter().find(|n| n.name() == text) {
            return Ok(Filter::Named(named));
        }
        if Path::new(text).is_file() {
            return Ok(Filter::File(text.into()));
        }
        let names: Vec<&str> = Named::ALL.iter().map(|n| n.name()).collect();
        Err(format!("not 3, 5 or 7 (random taps), {}, nor an existing filter file", names.join(", ")))
    }

    /// The side, without making the taps.
    fn side(&self) -> GpuResult<usize> {
        match self {
            Filter::Random(side) => Ok(*side),
            Filter::Named(named) => Ok(named.taps().0),
            Filter::File(path) => Ok(io::read_filter(path)?.0),
        }
    }

    /// The side, the taps row by row, and how the report names the filter.
    fn taps(&self, seed: u64) -> GpuResult<(usize, Vec<f32>, String)> {
        let (side, taps, name) = match self {
            Filter::Random(side) => {
                radius(*side)?;
                (*side, random_f32(side * side, seed), None)
            }
            Filter::Named(named) => {
                let (side, taps) = named.taps();
                (side, taps, Some(named.name().to_string()))
            }
            Filter::File(path) => {
                let (side, taps) = io::read_filter(path)?;
                (side, taps, Some(io::file_name(path)))
            }
        };
        let label = match name {
            None => format!("{0}x{0}", side),
            Some(name) => format!("{0}x{0} {1}", side, name),
        };
        Ok((side, taps, label))
    }
}

#[derive(Debug, clap::Args)]
pub struct Options {
    #[arg(long, default_value_t = 8192)]
    pub width: usize,
    #[arg(long, default_value_t = 8192)]
    pub height: usize,
    /// 3, 5 or 7 (random taps of that side); box, gaussian, sharpen or sobel-x; or a text file
    /// of a square 3×3, 5×5 or 7×7 filter, one row per line.
    #[arg(long, default_value = "5", value_parser = Filter::parse)]
    pub filter: Filter,
    /// An image to filter: a PNG (grey-scale in [0, 1]), or a 2-D f32 .npy or a FITS image
    /// (BITPIX 16, 32, -32, -64), by extension; its size replaces --width and --height.
    #[arg(long, conflicts_with_all = ["width", "height"])]
    pub image: Option<PathBuf>,
    /// Writes the GPU's result: as f32 to a .npy or .fits file; else as an 8-bit grey PNG,
    /// clamped to [0, 1] (for sobel-x |v|, so edges of either direction are bright).
    #[arg(long, visible_alias = "output")]
    pub out: Option<PathBuf>,
    /// Variants to run (all when omitted).
    #[arg(long = "variant", value_enum)]
    pub variants: Vec<Method>,
}

/// The radius of an odd filter of at most `2·MAX_RADIUS + 1` taps a side.
pub fn radius(filter: usize) -> GpuResult<usize> {
    require(io::filter_side_ok(filter), || format!("the filter must be 3, 5 or 7 wide (got {})", filter))?;
    Ok(filter / 2)
}

/// Writes `taps` into the module's constant `FILTER`, which both convolution families read:
/// the most recently prepared convolution owns it.
pub fn set_filter(gpu: &Gpu, taps: &[f32]) -> GpuResult<()> {
    let mut padded = [0.0f32; MAX_TAPS];
    padded[..taps.len()].copy_from_slice(taps);
    let name = CString::new(FILTER_SYMBOL).expect("a symbol name without NUL");
    let mut symbol = gpu.module.get_global::<[f32; MAX_TAPS]>(&name).during("finding FILTER in the module")?;
    symbol.copy_from(&padded).during("writing the filter to constant memory")
}

/// Cross-correlation with zero padding, the definition the kernels implement.
pub fn cpu_reference(image: ArrayView2<f32>, filter: ArrayView2<f32>) -> Array2<f32> {
    let r = filter.nrows() / 2;
    let (h, w) = image.dim();
    let mut padded = Array2::<f32>::zeros((h + 2 * r, w + 2 * r));
    padded.slice_mut(s![r..r + h, r..r + w]).assign(&image);
    let mut out = Array2::<f32>::zeros((h, w));
    Zip::from(&mut out).and(padded.windows(filter.dim())).par_for_each(|o, window| {
        *o = window.iter().zip(filter.iter()).map(|(x, f)| x * f).sum();
    });
    out
}

fn naive_config(width: usize, height: usize) -> GpuResult<LaunchConfig> {
    let side = NAIVE_BLOCK as usize;
    LaunchConfig::tiles_2d(width, height, (side, side), (NAIVE_BLOCK, NAIVE_BLOCK), 0)
}

fn tiled_config(width: usize, height: usize) -> GpuResult<LaunchConfig> {
    LaunchConfig::tiles_2d(width, height, (TILE, TILE), (TILE as u32, BLOCK_ROWS as u32), 0)
}

/// The tiled kernel of a radius: the radius is a const generic, one entry point each.
fn tiled_kernel(radius: usize) -> &'static str {
    ["conv2d_tiled_r1", "conv2d_tiled_r2", "conv2d_tiled_r3"][radius - 1]
}

/// The arguments of the 2D convolutions: `input` and `output` are `height × width`, row-major,
/// and the filter in constant memory is `2·radius + 1` wide. `conv2d_naive` takes the radius
/// as a parameter; each `conv2d_tiled_r*` has its own.
pub struct Conv2dArgs<'a> {
    pub input: &'a DeviceSlice<f32>,
    pub output: &'a DeviceSlice<f32>,
    pub width: usize,
    pub height: usize,
    pub radius: usize,
}

// SAFETY: the kernels read `input[..width·height]` and write `output[..width·height]`, both
// checked to exist and not to overlap; they read `(2·radius + 1)²` taps of the constant
// `FILTER`, which holds `MAX_TAPS`, and `radius <= MAX_RADIUS` is checked (a tiled kernel's
// shared tile is sized by its own radius, which must be the one asked for). The shape is the
// block and tile each kernel's indexing assumes. The parameters are
// `input: &[f32], output: *mut f32, width: usize, height: usize`, then `radius: usize` for
// `conv2d_naive`.
unsafe impl KernelArgs for Conv2dArgs<'_> {
    fn checked_config(&self, kernel: &str) -> GpuResult<LaunchConfig> {
        let pixels = product(kernel, self.width, self.height)?;
        require_len(kernel, "the input", self.input, pixels)?;
        require_len(kernel, "the output", self.output, pixels)?;
        require_disjoint(kernel, ("the output", self.output, pixels), ("the input", self.input, pixels))?;
        if !(1..=MAX_RADIUS).contains(&self.radius) {
            return Err(refuse(kernel, format!("radius {} is not 1 to {MAX_RADIUS}", self.radius)));
        }
        if kernel == "conv2d_naive" {
            naive_config(self.width, self.height)
        } else if kernel == tiled_kernel(self.radius) {
            tiled_config(self.width, self.height)
        } else {
            Err(refuse(kernel, format!("it is not a conv2d kernel of radius {}", self.radius)))
        }
    }

    fn params(&self, kernel: &str) -> Params {
        let params = Params::new().slice(self.input).pointer(self.output).value(self.width).value(self.height);
        if kernel == "conv2d_naive" {
            params.value(self.radius)
        } else {
            params
        }
    }
}

/// Image on the GPU, filter in constant memory, output poisoned.
pub struct Conv2d {
    pub width: usize,
    pub height: usize,
    pub filter: usize,
    pub image: Vec<f32>,
    pub taps: Vec<f32>,
    /// The filter as reports name it: `5x5`, `5x5 gaussian`.
    label: String,
    /// The tolerance's `max(1, max|x|·max|f|)`.
    scale: f64,
    /// Where `--out` writes, and whether it writes magnitudes (sobel-x into a PNG).
    out: Option<(PathBuf, bool)>,
    variants: Vec<Variant>,
    expected: Vec<f32>,
    input: DeviceBuffer<f32>,
    output: DeviceBuffer<f32>,
}

impl Conv2d {
    fn args(&self) -> Conv2dArgs<'_> {
        let (width, height, radius) = (self.width, self.height, self.filter / 2);
        Conv2dArgs { input: &self.input, output: &self.output, width, height, radius }
    }
}

impl Kernel for Conv2d {
    const NAME: &'static str = "conv2d";
    const ABOUT: &'static str = "2D convolution (cross-correlation), zero padding, filter in constant memory";
    type Options = Options;

    fn launches(_sms: u32) -> GpuResult<Vec<(&'static str, LaunchConfig)>> {
        let mut list = vec![("conv2d_naive", naive_config(8192, 8192)?)];
        for r in 1..=MAX_RADIUS {
            list.push((tiled_kernel(r), tiled_config(8192, 8192)?));
        }
        Ok(list)
    }

    fn sizes(purpose: Purpose) -> Vec<String> {
        let image = |w: usize, h: usize, f: usize| format!("--width {w} --height {h} --filter {f}");
        match purpose {
            Purpose::Default => vec![String::new()],
            Purpose::Check => {
                [(1, 1, 3), (37, 29, 5), (100, 1, 7), (1031, 517, 3), (1031, 517, 5), (1031, 517, 7), (67, 45, 5)]
                    .iter()
                    .map(|&(w, h, f)| image(w, h, f))
                    .collect()
            }
            Purpose::Quick => [1024, 4096, 8192].iter().map(|&s| image(s, s, 5)).collect(),
            Purpose::Full => [512, 1024, 2048, 4096, 8192].iter().map(|&s| image(s, s, 5)).collect(),
            Purpose::Criterion => [512, 1024, 2048].iter().map(|&s| image(s, s, 5)).collect(),
        }
    }

    fn variants_for(options: &Options) -> GpuResult<Vec<Variant>> {
        Ok(Method::variants(&options.variants, radius(options.filter.side()?)?))
    }

    fn prepare(gpu: &Gpu, options: &Options, seed: u64) -> GpuResult<Self> {
        let (filter, taps, label) = options.filter.taps(seed ^ 1)?;
        let r = radius(filter)?;
        let photo = options.image.as_deref().map(io::read_image).transpose()?;
        if let (Some(path), Some(photo)) = (&options.image, &photo) {
            // A blanked (NaN) pixel would spread NaN over its neighbours, on the CPU and the
            // GPU alike, and NaN never passes the check.
            io::require_finite(path, &photo.pixels)?;
        }
        let (width, height) = photo.as_ref().map_or((options.width, options.height), |p| (p.width, p.height));
        require(width >= 1 && height >= 1, || format!("conv2d needs a non-empty image (got {}x{})", width, height))?;
        let methods = Method::chosen(&options.variants);
        let variants = Method::variants(methods, r);
        for (method, variant) in methods.iter().zip(&variants) {
            gpu.validate(&variant.kernel, &method.config(width, height)?)?;
        }
        gpu.ensure_fits("conv2d's input and output", 2 * 4 * (width * height) as u64)?;
        let image = photo.map_or_else(|| random_f32(width * height, seed), |p| p.pixels);
        set_filter(gpu, &taps)?;
        let input = gpu.upload("the image", &image)?;
        let output = gpu.poisoned::<f32>("the output", width * height)?;
        let scale = product_scale(&image, &taps);
        let sobel = options.filter == Filter::Named(Named::SobelX);
        let out = options.out.clone().map(|path| {
            let magnitude = sobel && io::ImageKind::of(&path) == io::ImageKind::Png;
            (path, magnitude)
        });
        let expected = vec![];
        Ok(Self { width, height, filter, image, taps, label, scale, out, variants, expected, input, output })
    }
}

impl Workload for Conv2d {
    fn shape(&self) -> String {
        format!("{}x{} filter {}", self.width, self.height, self.label)
    }

    fn size(&self) -> u64 {
        self.width as u64
    }

    fn peer(&self) -> Option<String> {
        let square = self.width == self.height;
        square.then(|| format!("conv2d_{0}x{0}_f32", self.filter))
    }

    /// The least any implementation moves: read the image once, write it once.
    fn work(&self) -> Work {
        Work::Bytes(2 * 4 * self.image.len() as u64)
    }

    fn variants(&self) -> &[Variant] {
        &self.variants
    }

    fn launch(&self, gpu: &Gpu, variant: &Variant) -> GpuResult<()> {
        gpu.launch(&variant.kernel, &self.args())
    }

    fn before_check(&self, gpu: &Gpu) -> GpuResult<()> {
        gpu.poison("the output", &self.output)
    }

    fn compute_reference(&mut self) {
        let image = ArrayView2::from_shape((self.height, self.width), &self.image).expect("height×width");
        let taps = ArrayView2::from_shape((self.filter, self.filter), &self.taps).expect("filter×filter");
        self.expected = cpu_reference(image, taps).into_raw_vec_and_offset().0;
    }

    fn check(&self, gpu: &Gpu, _variant: &Variant) -> GpuResult<Checked> {
        let tolerance = 4.0 * (self.filter * self.filter) as f64 * f32::EPSILON as f64 * self.scale;
        Ok(check::close(&gpu.download("the output", &self.output, self.image.len())?, &self.expected, tolerance).into())
    }

    fn finish(&self, gpu: &Gpu, _reports: &mut [Report]) -> GpuResult<()> {
        let Some((path, magnitude)) = &self.out else { return Ok(()) };
        let mut pixels = gpu.download("the output", &self.output, self.image.len())?;
        if *magnitude {
            pixels.iter_mut().for_each(|v| *v = v.abs());
        }
        io::write_image(path, self.width, self.height, &pixels)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ndarray::array;

    #[test]
    fn reference_matches_hand_computed_values() {
        let image = array![[1.0f32, 2.0, 3.0], [4.0, 5.0, 6.0], [7.0, 8.0, 9.0]];
        let filter = array![[0.0f32, 1.0, 0.0], [1.0, 1.0, 1.0], [0.0, 1.0, 0.0]];
        let out = cpu_reference(image.view(), filter.view());
        // Centre: 5 + its four neighbours. Corner (0,0): 1 + 2 + 4, the rest is padding.
        assert_eq!(out[[1, 1]], 25.0);
        assert_eq!(out[[0, 0]], 7.0);
        assert_eq!(out[[2, 2]], 9.0 + 8.0 + 6.0);
        // Cross-correlation, not convolution: an off-centre tap is not mirrored.
        let shift = array![[0.0f32, 0.0, 0.0], [0.0, 0.0, 1.0], [0.0, 0.0, 0.0]];
        assert_eq!(cpu_reference(image.view(), shift.view())[[1, 1]], 6.0);
    }

    #[test]
    fn named_filters_have_their_taps() {
        let (side, gaussian) = Named::Gaussian.taps();
        assert_eq!((side, gaussian[0], gaussian[12]), (5, 1.0 / 256.0, 36.0 / 256.0));
        assert_eq!(gaussian.iter().sum::<f32>(), 1.0);
        assert_eq!(Named::Box.taps().1.iter().sum::<f32>(), 1.0);
        assert_eq!(Named::Sharpen.taps().1.iter().sum::<f32>(), 1.0, "sharpening keeps flat areas");
        assert_eq!(Named::SobelX.taps().1.iter().sum::<f32>(), 0.0);
        // Flat image: sobel-x sees no edge inside; the zero padding makes edges at the borders.
        let flat = Array2::<f32>::ones((4, 4));
        let taps = Named::SobelX.taps().1;
        let out = cpu_reference(flat.view(), ArrayView2::from_shape((3, 3), &taps).unwrap());
        assert_eq!((out[[1, 1]], out[[1, 0]], out[[1, 3]]), (0.0, 4.0, -4.0));
    }

    #[test]
    fn filter_option_parses_sizes_names_and_files() {
        assert_eq!(Filter::parse("5"), Ok(Filter::Random(5)));
        assert_eq!(Filter::parse("4"), Ok(Filter::Random(4)), "the side is checked when preparing");
        assert_eq!(Filter::parse("sobel-x"), Ok(Filter::Named(Named::SobelX)));
        let manifest = env!("CARGO_MANIFEST_DIR").to_string() + "/Cargo.toml";
        assert_eq!(Filter::parse(&manifest), Ok(Filter::File(manifest.into())));
        let unknown = Filter::parse("gausian").unwrap_err();
        assert!(unknown.contains("box, gaussian, sharpen, sobel-x, nor an existing filter file"), "{}", unknown);
        assert!(Filter::Random(9).taps(1).is_err());
        assert_eq!(Filter::Named(Named::Sharpen).taps(1).unwrap().2, "3x3 sharpen");
        assert_eq!(Filter::Random(3).taps(1).unwrap().2, "3x3");
    }

    #[test]
    fn an_image_replaces_width_and_height_but_not_both() {
        let command = <Options as clap::Args>::augment_args(clap::Command::new("conv2d"));
        let parse = |args: &[&str]| command.clone().try_get_matches_from([&["conv2d"], args].concat());
        assert!(parse(&["--image", "in.png", "--filter", "box", "--out", "out.png"]).is_ok());
        assert!(parse(&["--image", "in.png", "--output", "out.png"]).is_ok());
        let both = parse(&["--image", "in.png", "--width", "64"]).unwrap_err().to_string();
        assert!(both.contains("cannot be used with"), "{}", both);
    }

    #[test]
    fn filter_sizes_are_validated() {
        assert_eq!(radius(5).unwrap(), 2);
        assert!(radius(4).is_err());
        assert!(radius(9).is_err());
        assert!(radius(1).is_err());
    }
}
