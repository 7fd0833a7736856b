//! The sum of f32 values as the classic reduction ladder, one file per step, each adding one
//! idea to the step before; then `moments.rs`, the count, mean, variance and range of the
//! values inside a window in the same single pass. `host reduce` runs every step on the same
//! values and checks each against the CPU; `bench/twins/reduce.cu` has the same steps in CUDA C.
//!
//! | step | file | kernel | idea |
//! |---|---|---|---|
//! | 1 | `interleaved.rs` | `reduce_interleaved` | a tree in shared memory, neighbours added first |
//! | 2 | `sequential.rs` | `reduce_sequential` | the tree's halves added: active threads stay contiguous |
//! | 3 | `first_add.rs` | `reduce_first_add` | two values per thread, added while loading |
//! | 4 | `shuffle.rs` | `reduce_shuffle` | warps add in registers (`shfl.sync`), not in shared memory |
//! | 5 | `vec4.rs` | `reduce_vec4` | 16-byte grid-stride loads, one partial per block |
//! | - | `moments.rs` | `reduce_moments` | count, NaN count, mean, M2, min, max, merged with Chan's formula |
//!
//! **One launch, the whole sum.** A block can only add what it holds, and blocks cannot wait
//! for each other. Every kernel here ends the same way ([`finish`]): each block writes its
//! partial to `partials[block]`, makes it visible to the device (`membar.gl`), and takes a
//! ticket (`atom.inc`); the block that draws the last ticket knows every other partial is
//! written, adds them all and writes the total. The ticket counts modulo the grid
//! (`atom.inc` wraps to 0 at its limit), so the last block also leaves it at 0, ready for the
//! next launch: no memset between launches, no second kernel, one small copy back.
//!
//! ```text
//!   blocks:    B0    B1    B2  ...  Bg-1        each writes partials[b], then a ticket
//!   tickets:    2     0     3  ...   g-1        (in whatever order the blocks finish)
//!                                     |
//!                                     v
//!              the block with ticket g-1 adds partials[0..g] in f64 and writes the sum
//! ```
//!
//! **How the sum is accumulated, and why.** Steps 1 to 4 add in f32 inside a block, as the
//! classic ladder does: each block's sum is a tree of at most `log2(2·BLOCK) + 1` levels, so
//! every value's relative rounding error is at most that many f32 roundings whatever `n` is.
//! Step 5 adds each quad as a two-level f32 tree and everything after that in f64 (a thread's
//! running sum over its hundreds of quads would otherwise lose digits as it grows). All
//! partials are added in f64: with a million blocks, an f32 sum of the partials would be
//! the least accurate stage. f64 costs nothing here: it is a handful of operations per 16
//! bytes loaded, and the kernel waits on memory, not arithmetic.
//!
//! Every kernel uses `BLOCK` threads (`interface::reduce`): the shared trees are that long.
//! Steps 1 to 4 take one block per `BLOCK` (or `2·BLOCK`) values; step 5 and the moments a
//! grid-stride grid. Each kernel's `# Safety` section says what its binding (`ReduceArgs` or
//! `MomentsArgs` in `host/src/ops/reduce.rs`) guarantees.

pub mod first_add;
pub mod interleaved;
pub mod moments;
pub mod sequential;
pub mod shuffle;
pub mod vec4;

use crate::unroll;
use core::arch::asm;
use core::ops::Add;
use cuda_std::shared_array;
use cuda_std::thread;
use interface::reduce::{BLOCK, WARPS};

/// A value the lanes of a warp can pass to each other with `shfl.sync.down`: 32 bits per
/// shuffle, so 64-bit values take two.
pub trait Shuffle: Copy {
    /// The value of lane `lane + delta` (this lane's own where that lane is past the warp).
    ///
    /// # Safety
    /// Every lane of the warp calls it together (full member mask).
    unsafe fn shuffle_down(self, delta: u32) -> Self;
}

impl Shuffle for u32 {
    #[inline(always)]
    unsafe fn shuffle_down(self, delta: u32) -> u32 {
        let out: u32;
        asm!("shfl.sync.down.b32 {o}, {v}, {d}, 31, 0xffffffff;", o = out(reg32) out, v = in(reg32) self, d = in(reg32) delta);
        out
    }
}

impl Shuffle for u64 {
    #[inline(always)]
    unsafe fn shuffle_down(self, delta: u32) -> u64 {
        let low = (self as u32).shuffle_down(delta);
        let high = ((self >> 32) as u32).shuffle_down(delta);
        (high as u64) << 32 | low as u64
    }
}

impl Shuffle for f32 {
    #[inline(always)]
    unsafe fn shuffle_down(self, delta: u32) -> f32 {
        f32::from_bits(self.to_bits().shuffle_down(delta))
    }
}

impl Shuffle for f64 {
    #[inline(always)]
    unsafe fn shuffle_down(self, delta: u32) -> f64 {
        f64::from_bits(self.to_bits().shuffle_down(delta))
    }
}

/// The sum of `value` over the warp, in lane 0: five shuffles, each halving the lanes that
/// still matter. No shared memory and no barrier: a warp's lanes run together.
///
/// ```text
///   lanes 0..32 --(+16)--> lanes 0..16 --(+8)--> 0..8 --(+4)--> 0..4 --(+2)--> 0..2 --(+1)--> 0
/// ```
///
/// # Safety
/// Every lane of the warp calls it together.
#[inline(always)]
pub unsafe fn warp_sum<T: Shuffle + Add<Output = T>>(value: T) -> T {
    let mut v = value;
    unroll!([16, 8, 4, 2, 1], |delta| {
        v = v + v.shuffle_down(delta as u32);
    });
    v
}

/// The sum of `value` over the block, in thread 0: each warp adds its lanes, lane 0 of each
/// puts the warp's sum in `totals` (`WARPS` elements of shared memory), and the first warp adds
/// those.
///
/// # Safety
/// Every thread of the block calls it together, and nothing else uses `totals` meanwhile.
#[inline(always)]
pub unsafe fn block_sum<T: Shuffle + Add<Output = T>>(value: T, zero: T, totals: *mut T) -> T {
    let tid = thread::thread_idx_x() as usize;
    let (warp, lane) = (tid / 32, tid % 32);
    let v = warp_sum(value);
    if lane == 0 {
        *totals.add(warp) = v;
    }
    thread::sync_threads();
    let mut total = zero;
    if warp == 0 {
        total = warp_sum(if lane < WARPS { *totals.add(lane) } else { zero });
    }
    total
}

/// The end of every sum kernel: thread 0 writes the block's `partial` to `partials[block]`;
/// the last block adds all of them in f64 (volatile loads: they were written by other SMs
/// during this launch, and must not come from a stale cache line) and writes the total to
/// `*sum`.
///
/// # Safety
/// Every thread of the block calls it together; `partials` holds a `f64` per block of the
/// grid and `sum` one, neither overlapping the values; `ticket` as for [`crate::last_block`].
#[inline(always)]
pub unsafe fn finish(partial: f64, partials: *mut f64, ticket: *mut u32, sum: *mut f64) {
    let tid = thread::thread_idx_x() as usize;
    if tid == 0 {
        *partials.add(thread::block_idx_x() as usize) = partial;
    }
    if !crate::last_block(ticket) {
        return;
    }
    let totals = shared_array![f64; WARPS];
    let blocks = thread::grid_dim_x() as usize;
    let mut acc = 0.0f64;
    let mut b = tid;
    while b < blocks {
        acc += core::ptr::read_volatile(partials.add(b));
        b += BLOCK;
    }
    let total = block_sum(acc, 0.0, totals);
    if tid == 0 {
        *sum = total;
    }
}
