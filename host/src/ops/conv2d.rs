//! The command line of the `conv2d` family: its options and its registry entry.

pub use cuda_kernels::conv2d::*;

use crate::check::{self, product_scale};
use crate::data::random_f32;
use crate::gpu::{require, Gpu, GpuResult, LaunchConfig};
use crate::io;
use crate::registry::{Checked, Kernel, Purpose, Variant, Workload};
use crate::report::{Report, Work};
use cust::memory::DeviceBuffer;
use interface::conv::MAX_RADIUS;
use ndarray::ArrayView2;
use std::path::{Path, PathBuf};

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
    pub fn side(&self) -> GpuResult<usize> {
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

/// The variants of [`Method::chosen`] for a filter of `radius`.
fn variants(chosen: &[Method], radius: usize) -> Vec<Variant> {
    let variant = |method: &Method| match method {
        Method::Naive => Variant::new("naive", "conv2d_naive"),
        Method::Tiled => Variant::new("tiled", tiled_kernel(radius)),
    };
    Method::chosen(chosen).iter().map(variant).collect()
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
    #[arg(long = "variant", value_parser = crate::registry::named::<Method>())]
    pub variants: Vec<Method>,
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

/// This family's entry in [`super::FAMILIES`].
pub const ENTRY: crate::registry::Entry<Conv2d> = crate::registry::Entry::new();

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
        Ok(variants(&options.variants, radius(options.filter.side()?)?))
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
        let variants = variants(methods, r);
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

    fn launch_cases(kernel: &str, memory: &mut crate::launch_cases::Memory) -> crate::launch_cases::LaunchCases {
        use crate::launch_cases::{Args, Cases, LaunchCases};
        let mut refused: Vec<(String, Args)> = Vec::new();
        let (width, height) = (67, 45);
        let radius = kernel.strip_prefix("conv2d_tiled_r").map_or(2, |r| r.parse().expect("a radius"));
        let (input, output) = (memory.f32s(width * height), memory.f32s(width * height));
        let with = |input, output, width, height, radius| -> Args {
            Box::new(Conv2dArgs { input, output, width, height, radius })
        };
        refused.push(("one row too many".into(), with(input, output, width, height + 1, radius)));
        refused.push(("output short".into(), with(input, memory.f32s(width * height - 1), width, height, radius)));
        refused.push(("output is input".into(), with(input, input, width, height, radius)));
        refused.push(("radius past the constant filter".into(), with(input, output, width, height, 4)));
        if kernel != "conv2d_naive" {
            let other = radius % 3 + 1;
            refused.push(("another kernel's radius".into(), with(input, output, width, height, other)));
        }
        LaunchCases::Cases(Cases { valid: with(input, output, width, height, radius), refused })
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

    unsafe fn launch(&self, gpu: &Gpu, variant: &Variant) -> GpuResult<()> {
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
    use ndarray::Array2;

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
