//! Step 4: warp shuffles. Steps 1 to 3 pass every partial sum through shared memory, with a
//! barrier per level of the tree. Within a warp the lanes can hand registers to each other
//! directly (`shfl.sync.down`, [`super::warp_sum`]): each warp adds its 32 values in five
//! shuffles, lane 0 of each puts the warp's sum in shared memory, and one barrier later the
//! first warp adds those `WARPS` sums the same way. Two levels of barrier-free adds replace
//! `log2(BLOCK)` rounds of shared-memory traffic.
//!
//! ```text
//!   warp 0: 32 lanes -shfl-> lane 0 --\
//!   warp 1: 32 lanes -shfl-> lane 0 ---+--> totals[0..WARPS] -shfl (warp 0)-> block sum
//!   ...                                /
//! ```

use super::first_add::load_pair;
use super::{block_sum, finish};
use cuda_std::prelude::*;
use cuda_std::shared_array;
use interface::reduce::WARPS;

/// # Safety
/// As for [`super::first_add::reduce_first_add`]: blocks of `BLOCK` threads, one per
/// `2·BLOCK` values.
#[kernel]
pub unsafe fn reduce_shuffle(values: &[f32], partials: *mut f64, tickets: *mut u32, sum: *mut f64) {
    let totals = shared_array![f32; WARPS];
    let total = block_sum(load_pair(values), 0.0f32, totals);
    finish(total as f64, partials, tickets, sum);
}
