//! Radix select: the exact k-th smallest f32 of those inside a window, and the median, without
//! sorting.
//!
//! **The key.** Flipping the sign bit of a positive float and every bit of a negative one
//! ([`interface::select::key`]) gives a `u32` that orders as the values do. The k-th smallest
//! value is then the k-th smallest key, and a key is found a digit at a time from the top:
//! the bits 31..21, then 20..10, then 9..0.
//!
//! **A pass** (`select_count_vec4`) is a histogram, the histogram family's shared-memory
//! kernel: each block counts into its own bins in shared memory, then adds its non-zero bins
//! to the global ones. It counts only the values inside the window whose key starts with the
//! prefix found so far, each in the bucket of its next digit:
//!
//! ```text
//!   pass 1: the prefix is 0x1fc (the key's top 11 bits, key >> 21), the digit is bits 20..10
//!
//!   key        0x3f80_1234   0x3f81_0000   0xbf7f_ffff   0x3f80_0f00    (grid-stride quads)
//!   prefix?    yes           yes           no            yes
//!   digit      0x004         0x040         -             0x003
//!                │             │                         │
//!   shared     bins[0x004]+1 bins[0x040]+1               bins[0x003]+1   (the block's copy)
//!                └─────────────┴──── barrier, then one global atomic ────┘
//!                                    per non-zero bin and block
//!
//!   find:  bucket    0x000 0x001 0x002 0x003 0x004 ...
//!          count       0     0     0     5     9   ...   rank 7: 5 below bucket 0x004, 5 <= 7 < 14
//!          -> prefix 0x1fc << 11 | 0x004 (22 bits), rank 2 inside it, for pass 2
//! ```
//!
//! **Between passes** the bucket holding rank k is found: a prefix sum over the buckets finds
//! it and the rank left inside it (k minus the values in lower buckets), and the bucket's
//! digit extends the prefix. Both live in a few words of GPU memory (the layout is
//! `interface::select::STATE_*`), so the next pass reads them there: three launches go back to
//! back on the stream, with no copy to the host between them. The pass's own last block does
//! this find, as the reduction's last block adds the partials: each block draws a ticket once
//! its counts are in the global histogram, and the block that draws the last one knows that
//! every count is there. At an image's size a pass takes microseconds, and a separate
//! one-block launch for the find would add a launch's latency to each. The first find also counts
//! the window's values (its histogram's total), so a median needs no count in advance, and
//! where that count is all the caller wants (`FIND_MEDIAN_UNLESS_COUNT`: a κσ round that
//! clipped nothing) it stops the passes after it. Each find zeroes the bins it read, so they
//! are zero for the next pass and the next call.
//!
//! **The median** of an even count is the mean of two ranks, which share every bucket until
//! some pass parts them. Each pass therefore searches two slots, each with its own prefix and
//! rank; while the prefixes agree, one histogram serves both, and once they differ a value
//! counts in the slot whose prefix it has (at most one).
//!
//! **Concentrated data.** Radio noise piles into a few top-digit buckets, and equal values into
//! one: many lanes of a warp then add to the same shared counter, which the SM serializes.
//! When all 32 lanes hold the same bucket (a vote), one lane adds 32 instead. Every lane
//! therefore loops in step (the loop runs whole warps), and a lane without a value holds
//! no bucket.
//!
//! **Gathering for the last pass.** Every pass reads every value, but after the first only those
//! in the bucket it found still count, and near a median of noise that bucket is narrow: the
//! second pass then counts a thousand values of four million. When the first find sees its
//! bucket(s) hold at most `GATHER_CAP` values, the second pass also writes those values to a
//! small buffer (one atomic per warp that holds any), and the last pass reads the buffer in
//! place of the image, with only the blocks it keeps busy (the others leave at once):
//!
//! ```text
//!   pass 0   every value ──► histogram of bits 31..21 ──► find: bucket 0x1fc holds 950 values
//!   pass 1   every value ──► histogram of bits 20..10
//!                        └─► the 950 with prefix 0x1fc ──► gathered[0..950]
//!   pass 2   gathered[0..950] ──► histogram of bits 9..0   (one block, not the image again)
//! ```
//!
//! A bucket with more (data around a large background level, or many equal values) is not
//! gathered, and the last pass reads every value as the others do.
//!
//! **The window** is tested on the key too: the f32 values strictly inside `low < v < high` are
//! those whose keys lie in one range (`Window::keys`), one integer comparison per value.
//!
//! The loads are 16-byte quads, as in `histogram_shared_vec4_f32`, four per thread issued
//! before any is counted: at an image's size each thread loads only a few, and loaded one at a
//! time each would wait out the memory's latency. Passes after the first usually find the
//! values in L2.

use crate::{ballot, last_of, load_quad, shared_address, unroll};
use core::ptr::read_volatile;
use core::arch::asm;
use core::sync::atomic::Ordering;
use cuda_std::atomic::mid::atomic_fetch_add_u32_device;
use cuda_std::prelude::*;
use cuda_std::shared_array;
use interface::select::{
    blocks_for, digit_bits, key, prefix_mask, shift, COUNT_BLOCK, COUNT_QUADS, FIND_BUCKETS, FIND_MEDIAN_UNLESS_COUNT,
    FIND_RANK, GATHER_CAP, HISTOGRAM_LEN, NOT_GATHERED, RADIX, SLOTS, STATE_COUNT, STATE_EMPTY, STATE_GATHERED,
    STATE_PREFIX, STATE_RANK, STATE_TICKET,
};
use interface::window::{KeyRange, Window};

// The count loop's batch is unrolled by hand (`unroll!` over 0..4), and the find's block scan
// gives each warp's total a lane of one warp.
const _: () = assert!(COUNT_QUADS == 4 && COUNT_BLOCK / 32 <= 32);

/// The bucket of a value no slot counts.
const NONE: u32 = u32::MAX;

/// This thread's lane in its warp (the blocks are one-dimensional).
#[inline(always)]
fn lane() -> u32 {
    thread::thread_idx_x() % 32
}

/// Lane `0`'s `value`, for every lane of the (whole) warp.
#[inline(always)]
unsafe fn first_lane(value: u32) -> u32 {
    let out: u32;
    asm!("shfl.sync.idx.b32 {o}, {v}, 0, 31, -1;", o = out(reg32) out, v = in(reg32) value);
    out
}


/// `value` of the lane `delta` below, or this lane's own below lane `delta`.
#[inline(always)]
unsafe fn lane_below(value: u32, delta: u32) -> u32 {
    let out: u32;
    asm!("shfl.sync.up.b32 {o}, {v}, {d}, 0, -1;", o = out(reg32) out, v = in(reg32) value, d = in(reg32) delta);
    out
}

/// `local[bucket] += add` as a shared-memory reduction (`red.shared`, no value back).
#[inline(always)]
unsafe fn shared_add(local: u32, bucket: u32, add: u32) {
    asm!("red.shared.add.u32 [{a}], {n};", a = in(reg32) local + 4 * bucket, n = in(reg32) add);
}

/// The slots' prefixes before pass `pass`: none before the first, whose state is not read.
#[inline(always)]
unsafe fn prefixes(pass: usize, state: *const u32) -> [u32; SLOTS] {
    if pass == 0 {
        return [0; SLOTS];
    }
    let mask = prefix_mask(pass);
    [*state.add(STATE_PREFIX) & mask, *state.add(STATE_PREFIX + 1) & mask]
}

/// What one pass counts: the window's values whose key has a slot's prefix, by their digit.
#[derive(Clone, Copy)]
struct Digits {
    keys: KeyRange,
    mask: u32,
    prefix: [u32; SLOTS],
    /// The slots' prefixes differ: the second slot counts into its own histogram.
    split: bool,
    shift: u32,
    digit: u32,
}

impl Digits {
    /// Pass `pass` (below [`interface::select::PASSES`]) with the prefixes in `state`.
    #[inline(always)]
    unsafe fn new(window: Window, pass: usize, state: *const u32) -> Self {
        let mask = prefix_mask(pass);
        let prefix = prefixes(pass, state);
        let split = prefix[0] != prefix[1];
        let keys = window.keys();
        Self { keys, mask, prefix, split, shift: shift(pass), digit: (1 << digit_bits(pass)) - 1 }
    }

    /// Slots with a histogram of their own.
    #[inline(always)]
    fn slots(&self) -> usize {
        if self.split {
            2
        } else {
            1
        }
    }

    /// Buckets of this pass's digit.
    #[inline(always)]
    fn buckets(&self) -> usize {
        self.digit as usize + 1
    }

    /// `value`'s counter: its slot's histogram, its digit's bucket; [`NONE`] outside.
    #[inline(always)]
    fn bucket(&self, value: f32) -> u32 {
        let k = key(value);
        if !self.keys.contains(k) {
            return NONE;
        }
        let high = k & self.mask;
        let slot = if high == self.prefix[0] {
            0
        } else if self.split && high == self.prefix[1] {
            RADIX as u32
        } else {
            return NONE;
        };
        slot + ((k >> self.shift) & self.digit)
    }
}

/// Counts `bucket` (all 32 lanes call it together): one add of 32 when the whole warp holds
/// the same bucket, else one add per lane that holds one.
#[inline(always)]
unsafe fn count(local: u32, bucket: u32) {
    let first = first_lane(bucket);
    if ballot(bucket == first) == u32::MAX {
        if bucket != NONE && lane() == 0 {
            shared_add(local, bucket, 32);
        }
    } else if bucket != NONE {
        shared_add(local, bucket, 1);
    }
}

/// Appends the `value`s of the lanes where `keep` holds to `gathered` (all 32 lanes call it
/// together): one lane draws the warp's places from the count `gathered_count`, and each
/// keeper takes the place of its rank among them. Places past [`GATHER_CAP`] are not written.
#[inline(always)]
unsafe fn gather(gathered: *mut f32, gathered_count: *mut u32, value: f32, keep: bool) {
    let keepers = ballot(keep);
    if keepers == 0 {
        return;
    }
    let mut start = 0;
    if lane() == 0 {
        start = atomic_fetch_add_u32_device(gathered_count, Ordering::Relaxed, keepers.count_ones());
    }
    let place = first_lane(start) + (keepers & ((1 << lane()) - 1)).count_ones();
    if keep && (place as usize) < GATHER_CAP {
        *gathered.add(place as usize) = value;
    }
}

/// Counts this thread's share of `values` into the block's bins at `local`: quads `index`,
/// `index + stride`, … in whole warps, then the last `n % 4` values in the first warp. With
/// `GATHER`, also gathers each value it counts into `gathered`.
#[inline(always)]
unsafe fn count_values<const GATHER: bool>(
    values: &[f32],
    digits: &Digits,
    local: u32,
    index: usize,
    stride: usize,
    gathered: *mut f32,
    gathered_count: *mut u32,
) {
    let quads = values.len() / 4;
    let lane = lane() as usize;
    // The warp's first quad: the loop condition is the same for all its lanes. Each trip loads
    // COUNT_QUADS quads, a grid stride apart, before counting any: their loads are in flight
    // together, where one at a time would wait out the memory's latency once per quad.
    let mut warp_quad = index - lane;
    while warp_quad < quads {
        let mut batch = [[f32::NAN; 4]; COUNT_QUADS];
        unroll!([0, 1, 2, 3], |u| {
            let q = warp_quad + u * stride + lane;
            if q < quads {
                batch[u] = load_quad(values, q).0;
            }
        });
        unroll!([0, 1, 2, 3], |u| {
            let mut kept = false;
            for j in 0..4 {
                let bucket = digits.bucket(batch[u][j]);
                count(local, bucket);
                kept |= bucket != NONE;
            }
            // Few quads hold a value to gather: one vote per quad skips the rest.
            if GATHER && ballot(kept) != 0 {
                for j in 0..4 {
                    let v = batch[u][j];
                    gather(gathered, gathered_count, v, digits.bucket(v) != NONE);
                }
            }
        });
        warp_quad += COUNT_QUADS * stride;
    }
    // The last `n % 4` values, one each for the first lanes of the grid's first warp.
    if index - lane == 0 {
        let tail = 4 * quads + lane;
        let v = if tail < values.len() { *values.get_unchecked(tail) } else { f32::NAN };
        let bucket = digits.bucket(v);
        count(local, bucket);
        if GATHER {
            gather(gathered, gathered_count, v, bucket != NONE);
        }
    }
}

/// Pass `pass` of the selection of rank `rank` (or of the two middle ranks, as `find` says:
/// `interface::select::FIND_*`) among the `values` inside `low < v < high`: counts into `histogram`, then
/// the last block finds the bucket and writes it to `state`. The second pass gathers the first
/// bucket's values into `gathered` when the first find says so, and the last reads them there.
///
/// # Safety
/// The launcher (`SelectCountArgs` on the host) guarantees: `values` starts 16-byte aligned
/// and holds fewer than 2^32 values; `state` holds `interface::select::STATE_WORDS` words,
/// written by the passes before `pass` (any words for pass 0, which reads none of them, but
/// its ticket word zero: else the find is wrong, though every access stays in bounds);
/// `histogram` holds `HISTOGRAM_LEN` counters, zero; `gathered` holds `GATHER_CAP` f32, 16-byte
/// aligned; the four overlap nowhere; `pass` is below `PASSES`; blocks of `COUNT_BLOCK`
/// threads, any one-dimensional grid.
#[kernel]
pub unsafe fn select_count_vec4(
    values: &[f32],
    low: f64,
    high: f64,
    pass: u32,
    rank: u32,
    find_what: u32,
    state: *mut u32,
    histogram: *mut u32,
    gathered: *mut f32,
) {
    let pass = pass as usize;
    // Uniform over the grid: every thread leaves before the first barrier.
    if pass > 0 && *state.add(STATE_EMPTY) != 0 {
        return;
    }
    let gathered_count = state.add(STATE_GATHERED);
    let gathering = pass == 1 && *gathered_count != NOT_GATHERED;
    // The last pass reads what the second gathered, where it did, with the blocks it needs.
    let (values, blocks) = if pass == 2 && *gathered_count != NOT_GATHERED {
        let gathered = core::slice::from_raw_parts(gathered, (*gathered_count as usize).min(GATHER_CAP));
        (gathered, blocks_for(gathered.len()).min(thread::grid_dim_x() as usize))
    } else {
        (values, thread::grid_dim_x() as usize)
    };
    let block = thread::block_idx_x() as usize;
    if block >= blocks {
        return;
    }
    let digits = Digits::new(Window::new(low, high), pass, state);
    let bins = shared_array![u32; HISTOGRAM_LEN];
    let tid = thread::thread_idx_x() as usize;
    let threads = thread::block_dim_x() as usize;
    for s in 0..digits.slots() {
        let mut b = tid;
        while b < digits.buckets() {
            *bins.add(s * RADIX + b) = 0;
            b += threads;
        }
    }
    thread::sync_threads();

    let local = shared_address(bins);
    let index = block * threads + tid;
    // The loop twice over, with and without the gathering: counting alone tests nothing more.
    if gathering {
        count_values::<true>(values, &digits, local, index, blocks * threads, gathered, gathered_count);
    } else {
        count_values::<false>(values, &digits, local, index, blocks * threads, gathered, gathered_count);
    }
    thread::sync_threads();

    for s in 0..digits.slots() {
        let mut b = tid;
        while b < digits.buckets() {
            let c = *bins.add(s * RADIX + b);
            if c != 0 {
                atomic_fetch_add_u32_device(histogram.add(s * RADIX + b), Ordering::Relaxed, c);
            }
            b += threads;
        }
    }
    // Every thread's adds before the block's ticket.
    thread::device_fence();
    thread::sync_threads();
    if last_of(state.add(STATE_TICKET), blocks as u32) {
        find(histogram, pass, rank, find_what, state);
    }
}

/// Inclusive prefix sums of `value` over the block (of [`COUNT_BLOCK`] threads) for both slots,
/// and the block's totals; `sums` is shared scratch of `SLOTS` words per warp.
#[inline(always)]
unsafe fn block_scan(value: [u32; SLOTS], sums: *mut u32) -> ([u32; SLOTS], [u32; SLOTS]) {
    const WARPS: usize = COUNT_BLOCK / 32;
    let lane = lane();
    let warp = thread::thread_idx_x() as usize / 32;
    let mut inclusive = value;
    let mut delta = 1;
    while delta < 32 {
        for s in 0..SLOTS {
            let below = lane_below(inclusive[s], delta);
            if lane >= delta {
                inclusive[s] += below;
            }
        }
        delta *= 2;
    }
    if lane == 31 {
        for s in 0..SLOTS {
            *sums.add(s * WARPS + warp) = inclusive[s];
        }
    }
    thread::sync_threads();
    if warp == 0 {
        let mut warp_sums = [0; SLOTS];
        if (lane as usize) < WARPS {
            for s in 0..SLOTS {
                warp_sums[s] = *sums.add(s * WARPS + lane as usize);
            }
        }
        let mut delta = 1;
        while delta < 32 {
            for s in 0..SLOTS {
                let below = lane_below(warp_sums[s], delta);
                if lane >= delta {
                    warp_sums[s] += below;
                }
            }
            delta *= 2;
        }
        if (lane as usize) < WARPS {
            for s in 0..SLOTS {
                *sums.add(s * WARPS + lane as usize) = warp_sums[s];
            }
        }
    }
    thread::sync_threads();
    let mut totals = [0; SLOTS];
    for s in 0..SLOTS {
        if warp > 0 {
            inclusive[s] += *sums.add(s * WARPS + warp - 1);
        }
        totals[s] = *sums.add(s * WARPS + WARPS - 1);
    }
    (inclusive, totals)
}

/// The find after pass `pass`, by the one block that runs it: reads and zeroes the histogram
/// (volatile: other blocks added to it during this launch), and writes the bucket of each
/// slot's rank to `state`.
///
/// # Safety
/// As for [`select_count_vec4`], once every block's counts are in `histogram`; every thread of
/// the block calls it.
#[inline(always)]
unsafe fn find(histogram: *mut u32, pass: usize, rank: u32, find_what: u32, state: *mut u32) {
    let sums = shared_array![u32; SLOTS * COUNT_BLOCK / 32];
    let prefix = prefixes(pass, state);
    let split = prefix[0] != prefix[1];
    let buckets = 1usize << digit_bits(pass);
    let first = thread::thread_idx_x() as usize * FIND_BUCKETS;

    // This thread's buckets, read and zeroed for the next pass.
    let mut counts = [[0u32; FIND_BUCKETS]; SLOTS];
    for j in 0..FIND_BUCKETS {
        let b = first + j;
        if b < buckets {
            counts[0][j] = read_volatile(histogram.add(b));
            *histogram.add(b) = 0;
            counts[1][j] = if split {
                let c = read_volatile(histogram.add(RADIX + b));
                *histogram.add(RADIX + b) = 0;
                c
            } else {
                counts[0][j]
            };
        }
    }
    let mut mine = [0u32; SLOTS];
    for s in 0..SLOTS {
        for j in 0..FIND_BUCKETS {
            mine[s] += counts[s][j];
        }
    }
    let (inclusive, totals) = block_scan(mine, sums);

    let ranks = if pass == 0 {
        let count = totals[0];
        let ranks = if find_what == FIND_RANK { [rank, rank] } else { [count.wrapping_sub(1) / 2, count / 2] };
        let known = find_what == FIND_MEDIAN_UNLESS_COUNT && count == rank;
        let stop = count == 0 || ranks[1] >= count || known;
        if thread::thread_idx_x() == 0 {
            *state.add(STATE_COUNT) = count;
            *state.add(STATE_EMPTY) = stop as u32;
        }
        if stop {
            return;
        }
        ranks
    } else {
        [*state.add(STATE_RANK), *state.add(STATE_RANK + 1)]
    };
    // Every thread has read the state before any writes it.
    thread::sync_threads();

    // Each slot's bucket and its count, for the first pass's choice to gather.
    let found = shared_array![u32; 2 * SLOTS];
    for s in 0..SLOTS {
        let mut below = inclusive[s] - mine[s];
        for j in 0..FIND_BUCKETS {
            let c = counts[s][j];
            if below <= ranks[s] && ranks[s] - below < c {
                *state.add(STATE_PREFIX + s) = prefix[s] | (((first + j) as u32) << shift(pass));
                *state.add(STATE_RANK + s) = ranks[s] - below;
                *found.add(2 * s) = (first + j) as u32;
                *found.add(2 * s + 1) = c;
            }
            below += c;
        }
    }
    if pass == 0 {
        thread::sync_threads();
        if thread::thread_idx_x() == 0 {
            // Two slots in one bucket gather it once.
            let second = if *found.add(2) != *found { *found.add(3) } else { 0 };
            let fits = u64::from(*found.add(1)) + u64::from(second) <= GATHER_CAP as u64;
            *state.add(STATE_GATHERED) = if fits { 0 } else { NOT_GATHERED };
        }
    }
}
