//! Histograms of any number of bins: global atomics, then privatized in shared memory, then
//! the same with 16-byte loads.
//!
//! Two kinds of input share one code path through [`BinRule`] (in the `interface` crate, so
//! that the host's CPU reference bins with the very same code):
//! - `u32` values: value `v` goes to bin `v`; values of `bins` and above count nowhere.
//! - `f32` values over `[lo, hi]`, binned exactly as `np.histogram(x, bins, range=(lo, hi))`
//!   bins them: against NumPy's f32 edges, the last bin closed. An f32 estimate of the bin is
//!   checked against the exact edges only near a bin's border, so the exactness costs f64
//!   arithmetic on a few values. Values outside the range, infinities and NaN count nowhere
//!   (NaN fails every comparison).
//!
//! `histogram_global_*`: every thread walks the data with a grid-stride loop and does one
//! `atomicAdd` on the global bins per value. Correct for any number of bins, but with few bins
//! the atomics collide constantly and serialize in L2.
//!
//! `histogram_shared_*`: each block first counts into its own copy of the bins in shared
//! memory (`red.shared.add`, resolved inside the SM, far cheaper than an L2 round trip), then
//! adds its non-zero bins to the global result: one global atomic per bin and block instead of
//! one per value. The copy is dynamic shared memory, sized by the host at launch (`bins · 4`
//! bytes), so the bin count is a run-time choice up to what fits in a block's shared memory.
//! Barriers separate zeroing, counting and merging, because each phase reads what other
//! threads of the block wrote in the one before.
//!
//! `histogram_shared_vec4_*`: the shared-memory kernel reading four values per 16-byte load
//! ([`load_quad`]). Counting is cheap; what limits the scalar kernel is issuing one load per
//! 4 bytes. With a quarter of the loads, each thread has 16 bytes in flight per pass and the
//! kernel runs at the speed of a device copy.
//!
//! The f32 kernels carry launch bounds (`interface::histogram::F32_BOUNDS`): the exact edges
//! keep f64 state in registers, and the bounds hold a thread to 32 of them, so that all the
//! blocks the host launches fit on the SMs at once.

use crate::{global_index, grid_threads, load_quad};
use core::arch::asm;
use core::sync::atomic::Ordering;
use cuda_std::atomic::mid::atomic_fetch_add_u32_device;
use cuda_std::prelude::*;
use cuda_std::shared::dynamic_shared_mem;
use interface::histogram::{BinRule, F32Bins, U32Bins};

#[inline(always)]
unsafe fn histogram_global<R: BinRule>(values: &[R::Value], rule: R, counts: *mut u32) {
    let stride = grid_threads();
    let mut i = global_index();
    while i < values.len() {
        if let Some(bin) = rule.bin(*values.get_unchecked(i)) {
            atomic_fetch_add_u32_device(counts.add(bin as usize), Ordering::Relaxed, 1);
        }
        i += stride;
    }
}

/// `local[bin] += 1`, `local` a shared address, as a shared-memory reduction (`red.shared`):
/// no value comes back, so the SM does not wait for one.
#[inline(always)]
unsafe fn shared_increment(local: u32, bin: u32) {
    asm!("red.shared.add.u32 [{a}], 1;", a = in(reg32) local + 4 * bin);
}

#[inline(always)]
unsafe fn count<R: BinRule>(rule: R, local: u32, value: R::Value) {
    if let Some(bin) = rule.bin(value) {
        shared_increment(local, bin);
    }
}

/// Zeroes the block's bins, runs `count_values` (which counts into them), then merges them
/// into `counts`.
#[inline(always)]
unsafe fn privatized<R: BinRule>(rule: R, counts: *mut u32, count_values: impl FnOnce(u32)) {
    let local = dynamic_shared_mem::<u32>();
    let bins = rule.bins() as usize;
    let tid = thread::thread_idx_x() as usize;
    let threads = thread::block_dim_x() as usize;

    let mut b = tid;
    while b < bins {
        *local.add(b) = 0;
        b += threads;
    }
    thread::sync_threads();

    // Taken once per thread: converting at every increment costs the loop 8 more
    // instructions, which ptxas does not hoist.
    count_values(crate::shared_address(local));
    thread::sync_threads();

    let mut b = tid;
    while b < bins {
        let count = *local.add(b);
        if count != 0 {
            atomic_fetch_add_u32_device(counts.add(b), Ordering::Relaxed, count);
        }
        b += threads;
    }
}

#[inline(always)]
unsafe fn histogram_shared<R: BinRule>(values: &[R::Value], rule: R, counts: *mut u32) {
    privatized(rule, counts, |local| {
        let stride = grid_threads();
        let mut i = global_index();
        while i < values.len() {
            count(rule, local, *values.get_unchecked(i));
            i += stride;
        }
    });
}

#[inline(always)]
unsafe fn histogram_shared_vec4<R: BinRule>(values: &[R::Value], rule: R, counts: *mut u32) {
    privatized(rule, counts, |local| {
        let quads = values.len() / 4;
        let stride = grid_threads();
        let mut q = global_index();
        while q < quads {
            let quad = load_quad(values, q).0;
            for j in 0..4 {
                count(rule, local, quad[j]);
            }
            q += stride;
        }
        // The last `n % 4` values, one each for the first threads of the grid.
        let tail = 4 * quads + global_index();
        if tail < values.len() {
            count(rule, local, *values.get_unchecked(tail));
        }
    });
}

/// # Safety
/// The launcher (`HistogramArgs` on the host) guarantees: `counts` is valid for `bins`
/// atomic adds and overlaps `values` nowhere; `bins >= 1`; for f32 input, `lo < hi` are
/// finite and so are `bins / (hi - lo)` and `f32(lo) < f32(hi)`, so [`F32Bins`] only ever
/// converts an estimate in `[0, bins · (1 + 2^-22)]` to an integer. Any one-dimensional grid: the loops are grid-stride.
#[kernel]
pub unsafe fn histogram_global_u32(values: &[u32], bins: u32, counts: *mut u32) {
    histogram_global(values, U32Bins::new(bins), counts);
}

/// # Safety
/// As for [`histogram_global_u32`].
#[kernel]
pub unsafe fn histogram_global_f32(values: &[f32], lo: f64, hi: f64, bins: u32, counts: *mut u32) {
    histogram_global(values, F32Bins::new(lo, hi, bins), counts);
}

/// # Safety
/// As for [`histogram_global_u32`], and the launch gives the block `4 · bins` bytes of
/// dynamic shared memory for its copy of the bins.
#[kernel]
pub unsafe fn histogram_shared_u32(values: &[u32], bins: u32, counts: *mut u32) {
    histogram_shared(values, U32Bins::new(bins), counts);
}

/// # Safety
/// As for [`histogram_global_u32`], and the launch gives the block `4 · bins` bytes of
/// dynamic shared memory for its copy of the bins.
#[kernel]
pub unsafe fn histogram_shared_f32(values: &[f32], lo: f64, hi: f64, bins: u32, counts: *mut u32) {
    histogram_shared(values, F32Bins::new(lo, hi, bins), counts);
}

/// # Safety
/// As for [`histogram_shared_u32`], and `values` starts 16-byte aligned.
#[kernel]
pub unsafe fn histogram_shared_vec4_u32(values: &[u32], bins: u32, counts: *mut u32) {
    histogram_shared_vec4(values, U32Bins::new(bins), counts);
}

/// # Safety
/// As for [`histogram_shared_u32`], and `values` starts 16-byte aligned.
#[kernel]
pub unsafe fn histogram_shared_vec4_f32(values: &[f32], lo: f64, hi: f64, bins: u32, counts: *mut u32) {
    histogram_shared_vec4(values, F32Bins::new(lo, hi, bins), counts);
}
