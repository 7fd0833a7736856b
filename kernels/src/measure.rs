//! Per label, what `scipy.ndimage` measures of the image under it: the pixel count, the summed
//! flux (`sum_labels`), the flux-weighted row and column sums (`center_of_mass` is them divided
//! by the flux), the brightest pixel and the bounding box.
//!
//! Each label owns a record of six 8-byte words in global memory, zeroed before the launch
//! (`interface::measure`), and the sums are f64 atomics: f32 sums of a bright source's
//! thousands of pixels would lose the last digits SciPy keeps. A thread takes `ITEMS`
//! consecutive pixels of one row; a run of equal labels among them (a source crossing the
//! row) is summed in registers and reaches its record once, so a large source costs one
//! atomic per run rather than per pixel:
//!
//! ```text
//!   row:     0 0 3 3 3 3 3 0 | 0 4 4 0 0 0 0 0
//!   thread:  ------ t -------|------ t+1 ------
//!   atomics:     one set, 3  |    one set, 4
//! ```
//!
//! The minima of the box are kept as `u32::MAX - value`, so every field grows by `atomicAdd`
//! or `atomicMax` and the zeroed record is the right start for all of them.

use crate::global_index;
use core::arch::asm;
use cuda_std::prelude::*;
use interface::measure::{peak_key, ITEMS, PEAK, PIXELS, RECORD_WORDS, X_MAX, X_MIN, Y_MAX, Y_MIN};

/// One run of a label along a row, summed in registers.
struct Run {
    label: u32,
    pixels: u32,
    flux: f64,
    flux_x: f64,
    peak: f32,
    first: u32,
    last: u32,
}

#[inline(always)]
unsafe fn add_f64(address: *mut u8, value: f64) {
    asm!("red.global.add.f64 [{a}], {v};", a = in(reg64) address, v = in(reg64) value);
}

#[inline(always)]
unsafe fn add_u32(address: *mut u8, value: u32) {
    asm!("red.global.add.u32 [{a}], {v};", a = in(reg64) address, v = in(reg32) value);
}

#[inline(always)]
unsafe fn max_u32(address: *mut u8, value: u32) {
    asm!("red.global.max.u32 [{a}], {v};", a = in(reg64) address, v = in(reg32) value);
}

/// Adds `run`, on row `row`, to its label's record.
#[inline(always)]
unsafe fn flush(records: *mut f64, run: &Run, row: u32) {
    let record = records.add((run.label as usize - 1) * RECORD_WORDS) as *mut u8;
    add_f64(record, run.flux);
    add_f64(record.add(8), run.flux * row as f64);
    add_f64(record.add(16), run.flux_x);
    add_u32(record.add(PIXELS), run.pixels);
    max_u32(record.add(PEAK), peak_key(run.peak));
    max_u32(record.add(Y_MIN), u32::MAX - row);
    max_u32(record.add(Y_MAX), row);
    max_u32(record.add(X_MIN), u32::MAX - run.first);
    max_u32(record.add(X_MAX), run.last);
}

/// # Safety
/// The launcher (`MeasureArgs` on the host) guarantees: `image` and `labels` hold
/// `width · height` values, fewer than 2^32; `records` holds `count · RECORD_WORDS` values,
/// zeroed, and overlaps neither input; one-dimensional blocks give at least
/// `height · ceil(width / ITEMS)` threads in all. Labels above `count` are left out.
#[kernel]
pub unsafe fn measure_labels(image: &[f32], labels: &[u32], width: usize, height: usize, records: *mut f64, count: u32) {
    let segments = (width + ITEMS - 1) / ITEMS;
    let t = global_index();
    if t >= segments * height {
        return;
    }
    let (row, start) = (t / segments, t % segments * ITEMS);
    let end = if start + ITEMS < width { start + ITEMS } else { width };
    let base = row * width;
    let mut run = Run { label: 0, pixels: 0, flux: 0.0, flux_x: 0.0, peak: 0.0, first: 0, last: 0 };
    let mut col = start;
    while col < end {
        let label = *labels.get_unchecked(base + col);
        if label != run.label {
            if run.label != 0 && run.label <= count {
                flush(records, &run, row as u32);
            }
            run = Run { label, pixels: 0, flux: 0.0, flux_x: 0.0, peak: f32::NEG_INFINITY, first: col as u32, last: 0 };
        }
        if label != 0 {
            let value = *image.get_unchecked(base + col);
            let v = value as f64;
            run.pixels += 1;
            run.flux += v;
            run.flux_x += v * col as f64;
            run.peak = if value > run.peak { value } else { run.peak };
            run.last = col as u32;
        }
        col += 1;
    }
    if run.label != 0 && run.label <= count {
        flush(records, &run, row as u32);
    }
}
