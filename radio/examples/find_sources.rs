//! The sources of a FITS image, found on the GPU from a program's own `main`, checked against
//! the CPU's definitions, and written as a CSV catalog.
//!
//! ```sh
//! cargo run --release -p radio --example find_sources -- sky.fits sources.csv
//! cargo run --release -p radio --example find_sources   # a synthetic 2048² sky
//! ```

use radio::sources::{catalog, compare, find, find_on_gpu, Settings};
use std::error::Error;
use std::path::{Path, PathBuf};

fn main() -> Result<(), Box<dyn Error>> {
    let Some(gpu) = cuda_kernels::gpu::doctest_gpu()? else { return Ok(()) };
    let mut args = std::env::args_os().skip(1).map(PathBuf::from);
    let image = match args.next() {
        Some(path) => radio::fits::read_image(&path)?,
        None => radio::sky::default_sky(2048, true, 7)?,
    };
    let out = args.next().unwrap_or_else(|| std::env::temp_dir().join("find-sources.csv"));

    let settings = Settings::LESSON;
    let found = find_on_gpu(&gpu, &image, &settings)?;
    let reference = find(&image, &settings)?;
    let disagreements: Vec<_> = compare(&found, &reference).into_iter().filter(|a| !a.passed).collect();

    catalog::write_csv(Path::new(&out), &found.sources)?;
    println!(
        "{}×{} image on {}: noise σ {:.5} after {} clipping rounds, {} sources above {:.5} in {:.2} ms -> {}",
        image.width,
        image.height,
        gpu.info().name,
        found.background.sigma,
        found.background.rounds,
        found.sources.len(),
        found.level,
        found.total_ms(),
        out.display()
    );
    for source in found.sources.iter().take(5) {
        println!(
            "  #{:<4} x {:>9.3} y {:>9.3} flux {:>10.4} peak {:>8.4} ({} px)",
            source.label, source.x, source.y, source.flux, source.peak, source.pixels
        );
    }
    if disagreements.is_empty() {
        println!("GPU and CPU agree on every step: OK");
        Ok(())
    } else {
        for a in &disagreements {
            eprintln!("{}: {} (bar {})", a.what, a.found, a.bar);
        }
        Err("the GPU's catalog differs from the CPU's".into())
    }
}
