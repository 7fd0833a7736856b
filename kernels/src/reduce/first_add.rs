//! Step 3: the first add during the load. A block covers `2·BLOCK` values: each thread loads
//! two, `BLOCK` apart (both loads coalesced), and writes their sum to the tree, which then
//! folds as in step 2. Half the blocks, and no thread idle at the first level: the tree's
//! first round is done in registers, while the loads are in flight.
//!
//! ```text
//!   values:  [ block b: 0 .. BLOCK | BLOCK .. 2·BLOCK ]
//!   thread t:  v[t]        +         v[BLOCK + t]       -> tree[t]
//! ```

use super::finish;
use super::sequential::fold_halves;
use cuda_std::prelude::*;
use cuda_std::shared_array;
use interface::reduce::BLOCK;

/// This thread's two values of its block's `2·BLOCK`, added (0 for a value past the end).
///
/// # Safety
/// A block of `BLOCK` threads.
#[inline(always)]
pub unsafe fn load_pair(values: &[f32]) -> f32 {
    let i = thread::block_idx_x() as usize * 2 * BLOCK + thread::thread_idx_x() as usize;
    let n = values.len();
    let first = if i < n { *values.get_unchecked(i) } else { 0.0 };
    let second = if i + BLOCK < n { *values.get_unchecked(i + BLOCK) } else { 0.0 };
    first + second
}

/// # Safety
/// As for [`super::interleaved::reduce_interleaved`], but one block per `2·BLOCK` values.
#[kernel]
pub unsafe fn reduce_first_add(values: &[f32], partials: *mut f64, tickets: *mut u32, sum: *mut f64) {
    let tree = shared_array![f32; BLOCK];
    let tid = thread::thread_idx_x();
    *tree.add(tid as usize) = load_pair(values);
    fold_halves(tree, tid);
    finish(*tree as f64, partials, tickets, sum);
}
