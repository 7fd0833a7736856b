//! The median and a histogram of an image's pixels on the GPU, checked against the CPU.
//!
//! ```sh
//! cargo run --release -p radio --example image_stats -- sky.fits   # FITS, .npy or PNG
//! cargo run --release -p radio --example image_stats               # a synthetic 2048² sky
//! ```
//!
//! The median is `np.median` of the pixels that are not NaN (blanked); the histogram has 64 bins
//! over median ± 8·MAD·1.4826 (about ±8σ for Gaussian noise), binned as `np.histogram` bins.

use cuda_kernels::histogram::{cpu_reference, histogram_array};
use cuda_kernels::select::median_array;
use cuda_kernels::stats;
use interface::histogram::F32Bins;
use ndarray::ArrayView1;
use std::error::Error;
use std::path::Path;

const BINS: u32 = 64;

fn main() -> Result<(), Box<dyn Error>> {
    let Some(gpu) = cuda_kernels::gpu::doctest_gpu()? else { return Ok(()) };
    let image = match std::env::args_os().nth(1) {
        Some(path) => radio::io::read_image(Path::new(&path))?,
        None => radio::sky::default_sky(2048, true, 7)?,
    };
    let pixels = ArrayView1::from(&image.pixels);

    let median = median_array(&gpu, pixels)?;
    let (finite, _) = stats::without_nan(&image.pixels);
    let cpu_median = stats::median(&mut finite.clone()).ok_or("every pixel is NaN")?;

    let spread = 1.4826
        * stats::median(&mut finite.iter().map(|v| (f64::from(*v) - cpu_median).abs() as f32).collect::<Vec<_>>())
            .unwrap_or(1.0);
    let range = (cpu_median - 8.0 * spread, cpu_median + 8.0 * spread);
    let counts = histogram_array(&gpu, pixels, BINS, range)?;
    let expected = cpu_reference(image.pixels.iter().copied(), F32Bins::new(range.0, range.1, BINS));

    println!("{}×{} pixels on {}", image.width, image.height, gpu.info().name);
    println!("median {median} (CPU {cpu_median}): {}", if median == cpu_median { "OK" } else { "WRONG" });
    let peak = counts.iter().copied().max().unwrap_or(0).max(1);
    for (i, count) in counts.iter().enumerate().filter(|(i, _)| i % 4 == 0) {
        let low = range.0 + (range.1 - range.0) * i as f64 / f64::from(BINS);
        println!("{low:>12.5} {count:>9} {}", "#".repeat((60 * count / peak) as usize));
    }
    let same = counts.as_slice() == Some(expected.as_slice());
    println!("histogram of {BINS} bins over [{:.5}, {:.5}]: {}", range.0, range.1, if same { "OK" } else { "WRONG" });
    if median != cpu_median || !same {
        return Err("the GPU's statistics differ from the CPU's".into());
    }
    Ok(())
}
