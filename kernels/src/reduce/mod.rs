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
//! written. A ticket counts modulo its number of blocks (`atom.inc` wraps to 0 at its limit),
//! so the last draw also leaves it at 0, ready for the next launch: no memset between
//! launches, no second kernel, one small copy back.
//!
//! The tickets come in two levels, so that no block adds more than one partial per thread:
//! one ticket per group of `FINISH_GROUP` consecutive blocks, whose last block adds the
//! group's partials, and one for the groups, whose last block adds the groups' totals. (With
//! thousands of blocks and one ticket, the last block's thousands of loads, a few per thread
//! one after another, were the kernel's tail.)
//!
//! ```text
//!   blocks:   B0 .. B63      B64 .. B127     ...        each writes partials[b], then its
//!   tickets:  group 0        group 1         ...        group's ticket
//!                 |              |
//!                 v              v
//!   the last of each group adds its 64 partials and takes the groups' ticket;
//!   the last of those adds the groups' totals in f64 and writes the sum
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
use interface::reduce::{BLOCK, FINISH_GROUP, WARPS};

// `finish` gives each thread of a group's last block one partial of the group.
const _: () = assert!(FINISH_GROUP <= BLOCK);

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

/// The end of every sum kernel, in two levels of [`crate::last_of`]: thread 0 writes the
/// block's `partial` to `partials[block]`; the last block of each group of `FINISH_GROUP`
/// consecutive blocks adds the group's partials, one per thread, and writes the total over the
/// group's first partial; the last of those adds the groups' totals and writes the sum to
/// `*sum`. Partials written by other blocks during the launch are read volatile: they must not
/// come from a stale cache line.
///
/// # Safety
/// Every thread of the block calls it together; `partials` holds a `f64` per block of the
/// grid and `sum` one, neither overlapping the values; `tickets` holds
/// `finish_tickets(gridDim.x)` `u32` at 0, as for [`crate::last_block`].
#[inline(always)]
pub unsafe fn finish(partial: f64, partials: *mut f64, tickets: *mut u32, sum: *mut f64) {
    let tid = thread::thread_idx_x() as usize;
    let (block, blocks) = (thread::block_idx_x() as usize, thread::grid_dim_x() as usize);
    if tid == 0 {
        *partials.add(block) = partial;
    }
    let group = block / FINISH_GROUP;
    let first = group * FINISH_GROUP;
    let members = (blocks - first).min(FINISH_GROUP);
    if !crate::last_of(tickets.add(group), members as u32) {
        return;
    }
    let totals = shared_array![f64; WARPS];
    let mine = if tid < members { core::ptr::read_volatile(partials.add(first + tid)) } else { 0.0 };
    let group_total = block_sum(mine, 0.0, totals);
    // Every thread has read its partial before `block_sum`'s barrier.
    if tid == 0 {
        *partials.add(first) = group_total;
    }
    let groups = (blocks + FINISH_GROUP - 1) / FINISH_GROUP;
    if !crate::last_of(tickets.add(groups), groups as u32) {
        return;
    }
    let mut acc = 0.0f64;
    let mut g = tid;
    while g < groups {
        acc += core::ptr::read_volatile(partials.add(g * FINISH_GROUP));
        g += BLOCK;
    }
    let total = block_sum(acc, 0.0, totals);
    if tid == 0 {
        *sum = total;
    }
}
