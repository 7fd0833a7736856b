//! `--tune` and `--all-configs`: every tile configuration as a variant, and the tuning cache
//! that keeps the fastest for a GPU and a class of shapes. For a tensor type (`--dtype`), the
//! configurations `--tune` compares are its steps: mma.sync and, on Hopper, the wgmma ones; the
//! class then names the type.

use super::launch::tile_of;
use super::{tile_label, tile_launch, Kernel, Matmul};
use crate::gpu::{Gpu, GpuError, GpuResult};
use crate::registry::Variant;
use crate::report::Report;
use crate::resources;
use crate::tuning::{Choice, TuningCache};
use interface::matmul::{TileConfig, TILE_CONFIGS};
use std::collections::HashMap;
use std::path::{Path, PathBuf};

/// Where `--tune` keeps its pick: the cache file, this GPU and the shape class.
pub(super) struct TuneTarget {
    pub(super) path: PathBuf,
    pub(super) device: String,
    pub(super) class: String,
}

/// A configuration as a variant, named by its label.
pub(super) fn tile_variant(tile: &TileConfig) -> Variant {
    Variant::new(tile_label(tile), tile.kernel)
}

/// Each tile configuration's registers, shared memory and occupancy, by variant name.
pub(super) fn tile_notes(gpu: &Gpu, (m, n): (usize, usize)) -> GpuResult<HashMap<String, String>> {
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

/// The kernel `--tune` kept for this GPU and shape class, with a note saying so. An f32 pick is
/// a tile configuration; a tensor type's is one of `variants`, the steps this run has.
pub(super) fn cached_kernel(
    path: &Path,
    device: &str,
    class: &str,
    variants: &[Variant],
) -> GpuResult<Option<(String, String)>> {
    let cache = TuningCache::load(path)?;
    let Some(choice) = cache.lookup(Matmul::NAME, device, class) else { return Ok(None) };
    let label = match tile_of(&choice.kernel) {
        Some(tile) => Some(tile_label(tile)),
        None => variants.iter().find(|v| v.kernel == choice.kernel).map(|v| v.name.clone()),
    };
    let label = label.ok_or_else(|| GpuError::File {
        path: path.display().to_string(),
        reason: format!(
            "the tuned kernel for {class} is `{}`, which this build or GPU does not run; run --tune again",
            choice.kernel
        ),
    })?;
    Ok(Some((choice.kernel.clone(), format!("{label} (--tune at {}: {:.4} ms)", choice.shape, choice.ms))))
}

/// `--tune`: the fastest configuration that passed goes into the cache, and its row says so.
pub(super) fn keep_fastest(
    target: &TuneTarget,
    variants: &[Variant],
    default: &str,
    shape: &str,
    reports: &mut [Report],
) -> GpuResult<()> {
    let median = |r: &Report| r.timing.median_ms;
    let default_ms = reports.iter().find(|r| r.variant == default).map(median);
    let fastest = reports.iter_mut().filter(|r| r.check.passed).min_by(|x, y| median(x).total_cmp(&median(y)));
    let (Some(fastest), Some(default_ms)) = (fastest, default_ms) else {
        return Err(GpuError::InvalidInput("no configuration passed its check: nothing to keep".into()));
    };
    let kernel = variants.iter().find(|v| v.name == fastest.variant).expect("a report of a variant").kernel.clone();
    let choice = Choice {
        family: Matmul::NAME.to_string(),
        device: target.device.clone(),
        class: target.class.clone(),
        kernel,
        shape: shape.to_string(),
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
