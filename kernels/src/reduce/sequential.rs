//! Step 2: sequential addressing. The same tree, folded in halves: at stride `BLOCK/2`,
//! `BLOCK/4`, …, thread `t < stride` adds element `t + stride` to element `t`.
//!
//! ```text
//!   stride 4:  [0]+[4]  [1]+[5]  [2]+[6]  [3]+[7]   threads 0..4
//!   stride 2:  [0]+[2]  [1]+[3]                     threads 0..2
//!   stride 1:  [0]+[1]                              thread 0
//! ```
//!
//! The working threads are always the first ones, so whole warps fall idle instead of every
//! warp running a few lanes, the test is a comparison instead of a division, and a warp's
//! lanes read consecutive words (no bank conflicts). Half the threads still do nothing
//! after loading their value: step 3 gives them work.

use super::finish;
use crate::global_index;
use cuda_std::prelude::*;
use cuda_std::shared_array;
use interface::reduce::BLOCK;

/// Folds `tree` (`BLOCK` values in shared memory, each thread's written) in halves until
/// element 0 holds their sum.
///
/// # Safety
/// Every thread of a block of `BLOCK` calls it together, after writing its element.
#[inline(always)]
pub unsafe fn fold_halves(tree: *mut f32, tid: u32) {
    thread::sync_threads();
    let mut stride = BLOCK as u32 / 2;
    while stride > 0 {
        if tid < stride {
            *tree.add(tid as usize) += *tree.add((tid + stride) as usize);
        }
        thread::sync_threads();
        stride /= 2;
    }
}

/// # Safety
/// As for [`super::interleaved::reduce_interleaved`]: blocks of `BLOCK` threads, one per
/// `BLOCK` values.
#[kernel]
pub unsafe fn reduce_sequential(values: &[f32], partials: *mut f64, tickets: *mut u32, sum: *mut f64) {
    let tree = shared_array![f32; BLOCK];
    let tid = thread::thread_idx_x();
    let i = global_index();
    *tree.add(tid as usize) = if i < values.len() { *values.get_unchecked(i) } else { 0.0 };
    fold_halves(tree, tid);
    finish(*tree as f64, partials, tickets, sum);
}
