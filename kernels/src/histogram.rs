//! 256-bin histograms, first with global atomics, then privatized in shared memory.
//!
//! Two kinds of input share one code path through [`BinRule`] (in the `interface` crate, so
//! that the host's CPU reference bins with the very same code):
//! - `u32` values: value `v` goes to bin `v`; values of 256 and above are counted nowhere.
//! - `f32` values over `[min, max)`: bin `floor((v - min) * 256 / (max - min))`, clamped to
//!   255 against rounding at the top edge. Values outside the range, infinities outside it
//!   and NaN are counted nowhere (NaN fails every comparison), like `torch.histc`'s
//!   out-of-range values.
//!
//! `histogram_global_*`: every thread walks the data with a grid-stride loop and does one
//! `atomicAdd` on the global bins per value. Correct, but with only 256 addresses the atomics
//! collide constantly and serialize in L2.
//!
//! `histogram_shared_*`: each block first counts into its own 256 bins in shared memory
//! (`red.shared.add`, resolved inside the SM, far cheaper than an L2 round trip), then adds
//! its non-zero bins to the global result: 256 global atomics per block instead of one per
//! value. Barriers separate zeroing, counting and merging, because each phase reads what
//! other threads of the block wrote in the one before.

use crate::{global_index, grid_threads};
use core::arch::asm;
use core::sync::atomic::Ordering;
use cuda_std::atomic::mid::atomic_fetch_add_u32_device;
use cuda_std::prelude::*;
use cuda_std::shared_array;
use interface::histogram::{BinRule, F32Bins, U32Bins, NUM_BINS};

#[inline(always)]
unsafe fn histogram_global<R: BinRule>(values: &[R::Value], rule: R, bins: *mut u32) {
    let stride = grid_threads();
    let mut i = global_index();
    while i < values.len() {
        if let Some(bin) = rule.bin(*values.get_unchecked(i)) {
            atomic_fetch_add_u32_device(bins.add(bin as usize), Ordering::Relaxed, 1);
        }
        i += stride;
    }
}

/// `*counter += 1` as a shared-memory reduction (`red.shared`): no value comes back, so the
/// SM does not wait for one.
#[inline(always)]
unsafe fn shared_increment(counter: *mut u32) {
    asm!(
        "{{ .reg .u64 s; cvta.to.shared.u64 s, {ptr}; red.shared.add.u32 [s], 1; }}",
        ptr = in(reg64) counter,
    );
}

#[inline(always)]
unsafe fn histogram_shared<R: BinRule>(values: &[R::Value], rule: R, bins: *mut u32) {
    let local = shared_array![u32; NUM_BINS];
    let tid = thread::thread_idx_x() as usize;
    let threads = thread::block_dim_x() as usize;

    let mut b = tid;
    while b < NUM_BINS {
        *local.add(b) = 0;
        b += threads;
    }
    thread::sync_threads();

    let stride = grid_threads();
    let mut i = global_index();
    while i < values.len() {
        if let Some(bin) = rule.bin(*values.get_unchecked(i)) {
            shared_increment(local.add(bin as usize));
        }
        i += stride;
    }
    thread::sync_threads();

    let mut b = tid;
    while b < NUM_BINS {
        let count = *local.add(b);
        if count != 0 {
            atomic_fetch_add_u32_device(bins.add(b), Ordering::Relaxed, count);
        }
        b += threads;
    }
}

#[kernel]
pub unsafe fn histogram_global_u32(values: &[u32], bins: *mut u32) {
    histogram_global(values, U32Bins, bins);
}

#[kernel]
pub unsafe fn histogram_global_f32(values: &[f32], min: f32, max: f32, bins: *mut u32) {
    histogram_global(values, F32Bins::new(min, max), bins);
}

#[kernel]
pub unsafe fn histogram_shared_u32(values: &[u32], bins: *mut u32) {
    histogram_shared(values, U32Bins, bins);
}

#[kernel]
pub unsafe fn histogram_shared_f32(values: &[f32], min: f32, max: f32, bins: *mut u32) {
    histogram_shared(values, F32Bins::new(min, max), bins);
}
