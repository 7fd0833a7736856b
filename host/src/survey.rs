//! `host survey`: the sources of many images in one call, as a survey has them (the local mode
//! with `host sources`' defaults), spread over GPUs. Each GPU gets a host thread with its own
//! context and its share of the CPU's threads; its reader takes the next image and reads it
//! while the GPU finds the sources of the one before and writes their catalog beside it
//! (`<stem>-sources.csv`), so the GPUs stay busy whatever each image costs. A
//! progress bar counts the images; the summary gives images per second, and `--merged` one
//! catalog of them all.

use crate::gpu::{require, Gpu, GpuError, GpuResult};
use crate::io::{file_error, write_text, ImageKind};
use crate::multi::require_gpus;
use crate::sources::{self, Cataloged};
use indicatif::{ProgressBar, ProgressStyle};
use serde::Serialize;
use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc;
use std::time::Instant;

#[derive(Debug, clap::Args)]
pub struct Options {
    /// Images (FITS, also gzipped or tile-compressed, or .npy), or directories of them.
    #[arg(required = true)]
    pub paths: Vec<PathBuf>,
    /// GPUs to spread the images over.
    #[arg(long, default_value_t = 1)]
    pub gpus: usize,
    /// Also one CSV of every image's sources, with the image's path first on each row (the
    /// images' catalogs must have the same columns: all with a celestial WCS, or none).
    #[arg(long)]
    pub merged: Option<PathBuf>,
}

/// What a survey did.
#[derive(Debug, Serialize)]
pub struct Summary {
    pub images: usize,
    pub gpus: usize,
    /// Images each GPU took, by ordinal.
    pub per_gpu: Vec<usize>,
    pub sources: usize,
    /// From the start, contexts included, to the last catalog written.
    pub seconds: f64,
    pub images_per_second: f64,
    pub catalogs: Vec<Cataloged>,
    /// Each image that failed, with why.
    pub failed: Vec<(PathBuf, String)>,
    pub merged: Option<PathBuf>,
}

impl Summary {
    pub fn print(&self) {
        for (image, why) in &self.failed {
            println!("FAILED {}: {}", image.display(), why);
        }
        println!(
            "{} images on {} GPU{} ({}): {} sources in {:.2} s, {:.2} images/s{}",
            self.images,
            self.gpus,
            if self.gpus == 1 { "" } else { "s" },
            self.per_gpu.iter().map(|n| n.to_string()).collect::<Vec<_>>().join(" + "),
            self.sources,
            self.seconds,
            self.images_per_second,
            self.merged.as_ref().map(|m| format!("; merged catalog {}", m.display())).unwrap_or_default(),
        );
    }
}

/// The image files `paths` name: files as given, each directory's images (by name) in order,
/// each file once however often it is named. Two images whose catalogs would be one file (`a.fits`
/// and `a.npy` side by side) are an error.
pub fn images(paths: &[PathBuf]) -> GpuResult<Vec<PathBuf>> {
    let mut images = Vec::new();
    for path in paths {
        if path.is_dir() {
            let entries = std::fs::read_dir(path).map_err(|e| file_error(path, format!("cannot list: {}", e)))?;
            let mut found: Vec<PathBuf> = entries
                .filter_map(|entry| entry.ok().map(|e| e.path()))
                .filter(|p| p.is_file() && matches!(ImageKind::of(p), ImageKind::Fits | ImageKind::Npy))
                .collect();
            require(!found.is_empty(), || format!("{}: holds no FITS or .npy image", path.display()))?;
            found.sort();
            images.extend(found);
        } else {
            require(path.is_file(), || format!("{}: no such image or directory", path.display()))?;
            images.push(path.clone());
        }
    }
    let mut seen = HashSet::new();
    images.retain(|image| seen.insert(std::fs::canonicalize(image).unwrap_or_else(|_| image.clone())));
    let mut catalogs: HashMap<PathBuf, &Path> = HashMap::new();
    for image in &images {
        let catalog = sources::catalog_path(image, None);
        if let Some(other) = catalogs.insert(catalog.clone(), image) {
            return Err(GpuError::InvalidInput(format!(
                "{} and {} would both write {}: survey them apart",
                other.display(),
                image.display(),
                catalog.display()
            )));
        }
    }
    Ok(images)
}

/// Finds the sources of every image of `options` on its GPUs, writing each catalog.
pub fn run(options: &Options) -> GpuResult<Summary> {
    let images = images(&options.paths)?;
    let gpus = require_gpus(options.gpus)?;
    let per_image: Vec<sources::Options> =
        images.iter().map(|image| sources::Options::defaults(image)).collect::<GpuResult<_>>()?;
    if let Some(merged) = &options.merged {
        require(!images.contains(merged), || "--merged must not overwrite an image".to_string())?;
    }
    let progress = ProgressBar::new(images.len() as u64).with_style(
        ProgressStyle::with_template("[{bar:30}] {pos}/{len} images, {per_sec} {msg}")
            .expect("a valid template")
            .progress_chars("#>."),
    );
    let start = Instant::now();
    let next = AtomicUsize::new(0);
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get()).div_ceil(gpus);
    let (sender, receiver) = mpsc::channel();
    let mut outcomes: Vec<Option<(usize, GpuResult<Cataloged>)>> = (0..images.len()).map(|_| None).collect();
    let opened: Vec<GpuResult<()>> = std::thread::scope(|scope| {
        let threads: Vec<_> = (0..gpus)
            .map(|ordinal| {
                let (sender, next, per_image) = (sender.clone(), &next, &per_image);
                scope.spawn(move || on_gpu(ordinal, threads, next, per_image, sender))
            })
            .collect();
        drop(sender);
        for (index, ordinal, outcome) in receiver {
            progress.inc(1);
            outcomes[index] = Some((ordinal, outcome));
        }
        threads
            .into_iter()
            .map(|t| t.join().unwrap_or_else(|_| Err(GpuError::InvalidInput("a GPU's thread panicked".into()))))
            .collect()
    });
    progress.finish_and_clear();
    opened.into_iter().collect::<GpuResult<()>>()?;
    let seconds = start.elapsed().as_secs_f64();

    let mut per_gpu = vec![0; gpus];
    let (mut catalogs, mut failed) = (Vec::new(), Vec::new());
    for (image, outcome) in images.iter().zip(outcomes) {
        let Some((ordinal, outcome)) = outcome else {
            failed.push((image.clone(), "not reached: its GPU's thread ended first".to_string()));
            continue;
        };
        per_gpu[ordinal] += 1;
        match outcome {
            Ok(cataloged) => catalogs.push(cataloged),
            Err(e) => failed.push((image.clone(), e.to_string())),
        }
    }
    if let Some(merged) = &options.merged {
        write_merged(merged, &catalogs)?;
    }
    Ok(Summary {
        images: images.len(),
        gpus,
        per_gpu,
        sources: catalogs.iter().map(|c| c.sources).sum(),
        seconds,
        images_per_second: images.len() as f64 / seconds,
        catalogs,
        failed,
        merged: options.merged.clone(),
    })
}

/// What one GPU's thread sends for each image it took: the image's index, the GPU's ordinal,
/// and the catalog or why there is none.
type Outcome = (usize, usize, GpuResult<Cataloged>);

/// GPU `ordinal`'s share of a survey: a reader takes the next image of `per_image` and reads
/// it while the GPU finds the sources of the one before, each outcome going to `sender`. Each
/// side has a pool of `threads` CPU threads of its own, so that one GPU's decoding, NaN counts,
/// masks and uploads never queue behind another's, nor the GPU's behind its own reader's.
/// Returns once the images run out, or with the error that opening the GPU gave.
fn on_gpu(
    ordinal: usize,
    threads: usize,
    next: &AtomicUsize,
    per_image: &[sources::Options],
    sender: mpsc::Sender<Outcome>,
) -> GpuResult<()> {
    let pool = |role: &'static str| {
        rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .thread_name(move |i| format!("gpu{ordinal}-{role}{i}"))
            .build()
            .map_err(|e| GpuError::InvalidInput(format!("starting GPU {ordinal}'s CPU threads: {e}")))
    };
    let (finder, reader) = (pool("find")?, pool("read")?);
    // The GPU is opened and used on one of its pool's threads, where its context is current.
    finder.install(|| {
        let gpu = Gpu::on(ordinal)?;
        // One image read ahead: the reader waits while the GPU's thread has one queued.
        let (read_sender, read) = mpsc::sync_channel(1);
        let reader = &reader;
        std::thread::scope(|scope| {
            // The reader owns the sender: its end ends the GPU's loop below.
            scope.spawn(move || loop {
                let index = next.fetch_add(1, Ordering::Relaxed);
                let Some(options) = per_image.get(index) else { return };
                let image = reader.install(|| sources::read_for_catalog(options));
                if read_sender.send((index, image)).is_err() {
                    return;
                }
            });
            for (index, image) in read {
                let outcome = image.and_then(|image| sources::catalog_of(&gpu, &per_image[index], image));
                // The receiver lives until every thread ends.
                let _ = sender.send((index, ordinal, outcome));
            }
        });
        Ok(())
    })
}

/// One CSV of `catalogs`' rows, each led by its image's path (quoted), under their common
/// header.
fn write_merged(path: &Path, catalogs: &[Cataloged]) -> GpuResult<()> {
    let mut text = String::new();
    let mut header: Option<&str> = None;
    for catalog in catalogs {
        let mut lines = catalog.csv.lines();
        let first = lines.next().unwrap_or_default();
        match header {
            None => {
                header = Some(first);
                text += &format!("image,{}\n", first);
            }
            Some(columns) => require(columns == first, || {
                format!(
                    "--merged: {} has other columns than {} (one has a celestial WCS, the other not): \
                     their catalogs are written apart",
                    catalog.image.display(),
                    catalogs[0].image.display()
                )
            })?,
        }
        let image = format!("\"{}\"", catalog.image.display().to_string().replace('"', "\"\""));
        for line in lines {
            text += &format!("{},{}\n", image, line);
        }
    }
    write_text(path, &text)
}
