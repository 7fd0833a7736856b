//! Exclusive prefix sum in one pass over the data: decoupled look-back.
//!
//! `out[i] = in[0] + … + in[i-1]`. A scan in three passes (sum each tile, scan the sums, add
//! them back) reads the input twice. Here every value is read once and written once: a block
//! takes one tile of [`TILE`] values, scans it in registers, learns the sum of all the tiles
//! before it from what they published, and writes its output.
//!
//! **Publishing.** Each tile owns one 64-bit word of scratch: its value's 32 bits in the high
//! half, a flag in the low half, stored as one access so that a reader sees the flag and its
//! value together (no fence between them is needed). As soon as a tile has its own sum, the
//! *aggregate*, it publishes it (flag A); once it knows the sum of everything before it, it
//! publishes its *inclusive prefix* (flag P). Tile 0 publishes P at once.
//!
//! **Looking back.** A tile then walks back over its predecessors' words, a warp reading 32 at a
//! time, lane `l` the word of tile `t - 1 - l`. It waits while any word in the window is still
//! empty, then sums the aggregates back to the nearest P and stops there; with no P in the
//! window it adds all 32 aggregates and moves the window back. A tile therefore waits only for
//! predecessors to *load* their tile, not for the whole chain before them to finish:
//!
//! ```text
//!   tile:     0       1       2       3       4       5  ← reading back from 5
//!   word:   [P 40]  [P 75]  [A 12]  [A 31]  [ - ]
//!                     ▲        │       │       └ empty: wait for tile 4's aggregate
//!                     │        └───────┴ aggregates: add them
//!                     └ nearest inclusive prefix: add it and stop
//!   tile 5's prefix = 75 + 12 + 31 + (tile 4's aggregate)
//! ```
//!
//! **Waiting before reading.** The tiles just before a tile started at about the same time, so
//! right after it publishes its aggregate their words are mostly still empty or aggregates. A
//! read at once would find no P: the warp would walk back window after window, or read the
//! same empty words again and again, each read a round trip to L2 for words that other tiles
//! are writing meanwhile, and all of it beside the traffic of the tiles themselves. So the
//! look-back first sleeps (`nanosleep`, [`LOOK_BACK_WAIT_NS`]), long enough that its first
//! read usually finds a P within the window and is its only one; a window that still holds an
//! empty word is read again after a shorter sleep ([`LOOK_BACK_RETRY_NS`]). While the warp
//! sleeps, the other blocks on the SM keep the memory busy. How long to sleep is measured, not
//! derived: the scan of a large input gets faster as the wait grows up to the chosen one.
//!
//! **No deadlock.** Tiles are numbered by an atomic counter in the order blocks start, not by
//! `blockIdx`: a block only ever waits for tiles with smaller numbers, whose blocks took their
//! number earlier and so are already running. (With `blockIdx`, block 9000 could be resident
//! and spinning while block 8999 waits for its SM to free up.)
//!
//! **Inside a tile.** Each thread loads [`QUADS_PER_THREAD`] groups of four with 16-byte loads,
//! warp-striped: the warp's `j`-th load covers 128 consecutive values, four per lane, so every
//! load is fully coalesced and no shared-memory transpose is needed. Each group's sum is scanned
//! across the warp with `shfl.sync.up` (the rows interleaved, so the shuffles of different rows
//! overlap), the warps' totals are scanned in shared memory, and the first warp does the
//! look-back for the block. The only barriers are the one that shares the tile number and the
//! two around the warps' totals.
//!
//! The kernels are generic over [`Sum`]: `u32` sums are exact (modulo 2^32, as wrapping adds),
//! `f32` sums are in f32 in an order that depends on how far each tile had to look back.
//! Compaction (`compact.rs`) scans its keep-flags with the same machinery.

use crate::{ballot, load_quad, store_quad, Quad};
use core::arch::asm;
use core::ptr::{read_volatile, write_volatile};
use core::sync::atomic::Ordering;
use cuda_std::atomic::mid::atomic_fetch_add_u32_device;
use cuda_std::prelude::*;
use cuda_std::shared_array;
use interface::scan::{
    tiles, FLAG_AGGREGATE, FLAG_NONE, FLAG_PREFIX, LOOK_BACK_RETRY_NS, LOOK_BACK_WAIT_NS, QUADS_PER_THREAD, TILE, WARPS,
};

const Q: usize = QUADS_PER_THREAD;
// The loops over a thread's quads are unrolled by hand (`unroll!` over 0..8), so that its
// arrays stay in registers.
const _: () = assert!(Q == 8);
/// Windows of 32 tiles the look-back reads per round trip (`unroll!` over them). One: the
/// words of a second window need registers that the launch bound (four blocks per SM, so 64
/// per thread) does not leave without spilling.
const WINDOWS: usize = 1;

/// A 32-bit value the scan adds: its zero, its addition, and its bits for the shuffles and the
/// published words.
pub trait Sum: Copy {
    const ZERO: Self;
    fn plus(self, other: Self) -> Self;
    fn bits(self) -> u32;
    fn from_bits(bits: u32) -> Self;
}

impl Sum for u32 {
    const ZERO: Self = 0;
    #[inline(always)]
    fn plus(self, other: Self) -> Self {
        self.wrapping_add(other)
    }
    #[inline(always)]
    fn bits(self) -> u32 {
        self
    }
    #[inline(always)]
    fn from_bits(bits: u32) -> Self {
        bits
    }
}

impl Sum for f32 {
    const ZERO: Self = 0.0;
    #[inline(always)]
    fn plus(self, other: Self) -> Self {
        self + other
    }
    #[inline(always)]
    fn bits(self) -> u32 {
        self.to_bits()
    }
    #[inline(always)]
    fn from_bits(bits: u32) -> Self {
        f32::from_bits(bits)
    }
}

/// `value` from the lane `delta` below (a lane below `delta` keeps its own).
#[inline(always)]
unsafe fn shuffle_up<T: Sum>(value: T, delta: u32) -> T {
    let out: u32;
    asm!("shfl.sync.up.b32 {o}, {v}, {d}, 0, 0xffffffff;", o = out(reg32) out, v = in(reg32) value.bits(), d = in(reg32) delta, options(nomem, nostack));
    T::from_bits(out)
}

/// `value` from lane `lane`.
#[inline(always)]
unsafe fn shuffle_from<T: Sum>(value: T, lane: u32) -> T {
    let out: u32;
    asm!("shfl.sync.idx.b32 {o}, {v}, {l}, 31, 0xffffffff;", o = out(reg32) out, v = in(reg32) value.bits(), l = in(reg32) lane, options(nomem, nostack));
    T::from_bits(out)
}

/// `value` from lane `lane ^ mask`.
#[inline(always)]
unsafe fn shuffle_xor<T: Sum>(value: T, mask: u32) -> T {
    let out: u32;
    asm!("shfl.sync.bfly.b32 {o}, {v}, {m}, 31, 0xffffffff;", o = out(reg32) out, v = in(reg32) value.bits(), m = in(reg32) mask, options(nomem, nostack));
    T::from_bits(out)
}

/// The sum of `value` over the warp, in every lane.
#[inline(always)]
unsafe fn warp_sum<T: Sum>(value: T) -> T {
    let mut sum = value;
    crate::unroll!([16, 8, 4, 2, 1], |mask| {
        sum = sum.plus(shuffle_xor(sum, mask as u32));
    });
    sum
}

/// Suspends this thread for about `ns` nanoseconds (`nanosleep`, sm_70 and later): its warp
/// issues nothing meanwhile, and the SM runs the other warps.
#[inline(always)]
unsafe fn sleep(ns: u32) {
    asm!("nanosleep.u32 {t};", t = in(reg32) ns, options(nomem, nostack));
}

/// A tile's published word: the value's bits high, the flag low.
#[inline(always)]
fn word<T: Sum>(flag: u32, value: T) -> u64 {
    ((value.bits() as u64) << 32) | flag as u64
}

/// This thread's lane and warp.
#[inline(always)]
pub(crate) fn lane_and_warp() -> (u32, usize) {
    let tid = thread::thread_idx_x();
    (tid % 32, (tid / 32) as usize)
}

/// Quad `j` of this thread in `tile`: the warp's `j`-th row of 32 quads, the lane's place in it.
#[inline(always)]
pub(crate) fn quad_index(tile: usize, j: usize) -> usize {
    let (lane, warp) = lane_and_warp();
    tile * (TILE / 4) + (warp * Q + j) * 32 + lane as usize
}

/// This block's tile: thread 0 takes the next number from the counter (`scratch`'s first
/// word), and the block reads it from shared memory. `None` past the last tile, which only a
/// counter not zeroed before the launch gives: the block then has nothing to do, and no access
/// depends on the scratch having been zeroed. (Progress does: the tiles below such a counter
/// are never taken, and the tiles after them wait for their words forever.)
///
/// # Safety
/// `scratch` is the launch's scratch; every thread of the block calls this once.
#[inline(always)]
unsafe fn next_tile(scratch: *mut u64, n: usize) -> Option<usize> {
    let slot = shared_array![u32; 1];
    if thread::thread_idx_x() == 0 {
        *slot = atomic_fetch_add_u32_device(scratch as *mut u32, Ordering::Relaxed, 1);
    }
    thread::sync_threads();
    let tile = *slot as usize;
    if tile < tiles(n) {
        Some(tile)
    } else {
        None
    }
}

/// The sum of every tile before `tile`, read back from the published words; publishes this
/// tile's aggregate first and its inclusive prefix after, and sleeps in between (see the
/// module doc). Run by one whole warp.
///
/// While the tiles before it are still in flight, the nearest inclusive prefix can lie some
/// hundred tiles back, so each round trip reads [`WINDOWS`] windows of 32 words at once (the
/// loads are independent, so they cost one round trip) and walks them nearest first.
#[inline(always)]
unsafe fn look_back<T: Sum>(states: *mut u64, tile: usize, aggregate: T, lane: u32) -> T {
    if tile == 0 {
        if lane == 0 {
            write_volatile(states, word(FLAG_PREFIX, aggregate));
        }
        return T::ZERO;
    }
    if lane == 0 {
        write_volatile(states.add(tile), word(FLAG_AGGREGATE, aggregate));
    }
    sleep(LOOK_BACK_WAIT_NS);
    let mut prefix = T::ZERO;
    // Window `m` holds tiles `end - 32·(m+1) .. end - 32·m`, lane `l` reading tile
    // `end - 1 - 32·m - l`. Before tile 0 there is nothing: read as a prefix of zero (tile 0's
    // own word, a prefix, is always reached first). In 32 bits, as the tile counter is, to
    // spare registers.
    let mut end = tile as u32;
    loop {
        let mut seen = [0u64; WINDOWS];
        crate::unroll!([0], |m| {
            let back = 32 * m as u32 + lane + 1;
            seen[m] = if end >= back { read_volatile(states.add((end - back) as usize)) } else { word(FLAG_PREFIX, T::ZERO) };
        });
        // Warp-uniform (from ballots): every lane takes the same branches below.
        let mut found = false;
        let mut stalled = false;
        crate::unroll!([0], |m| {
            if !found && !stalled {
                let state = seen[m];
                if ballot(state as u32 == FLAG_NONE) != 0 {
                    // A tile in this window has not published yet: read again from here.
                    stalled = true;
                    sleep(LOOK_BACK_RETRY_NS);
                } else {
                    let prefixes = ballot(state as u32 == FLAG_PREFIX);
                    // The nearest inclusive prefix and the aggregates after it; all 32 when
                    // none is a prefix.
                    let nearest = if prefixes != 0 { prefixes.trailing_zeros() } else { 31 };
                    let value = if lane <= nearest { T::from_bits((state >> 32) as u32) } else { T::ZERO };
                    prefix = prefix.plus(warp_sum(value));
                    found = prefixes != 0;
                    end -= 32;
                }
            }
        });
        if found {
            break;
        }
    }
    if lane == 0 {
        write_volatile(states.add(tile), word(FLAG_PREFIX, prefix.plus(aggregate)));
    }
    prefix
}

/// This thread's quads of `tile`, into `values` (whose elements past the end of a partial
/// tile keep what they held). One branch for the whole tile: a branch per quad costs
/// libNVVM's code a reconvergence point each (nvcc hoists it), and the eight loads no longer
/// issue back to back. (Filled in place: an array returned by value goes through local
/// memory.)
///
/// # Safety
/// `input` starts 16-byte aligned; `full` says whether the whole tile lies inside it.
#[inline(always)]
unsafe fn load_tile<T: Copy>(input: &[T], tile: usize, full: bool, values: &mut [Quad<T>; Q]) {
    if full {
        crate::unroll!([0, 1, 2, 3, 4, 5, 6, 7], |j| {
            values[j] = load_quad(input, quad_index(tile, j));
        });
    } else {
        crate::unroll!([0, 1, 2, 3, 4, 5, 6, 7], |j| {
            let quad = quad_index(tile, j);
            crate::unroll!([0, 1, 2, 3], |k| {
                if 4 * quad + k < input.len() {
                    values[j].0[k] = *input.get_unchecked(4 * quad + k);
                }
            });
        });
    }
}

/// The tile a block claimed with [`claim_tile`].
#[derive(Clone, Copy)]
pub(crate) struct Claimed {
    pub index: usize,
    /// Values of the input from the tile's start to its end.
    left: usize,
}

impl Claimed {
    /// Whether the whole tile lies inside the input.
    #[inline(always)]
    pub fn full(self) -> bool {
        self.left >= TILE
    }

    /// Whether it is the input's last tile (the one that writes the total).
    #[inline(always)]
    pub fn last(self) -> bool {
        self.left <= TILE
    }
}

/// The block's tile ([`next_tile`]), with this thread's quads of it loaded into `values`
/// ([`load_tile`]: what `values` held stands for the values past the end of a partial last
/// tile). `None` as for [`next_tile`].
///
/// # Safety
/// As for [`next_tile`] and [`load_tile`].
#[inline(always)]
pub(crate) unsafe fn claim_tile<T: Copy>(input: &[T], scratch: *mut u64, values: &mut [Quad<T>; Q]) -> Option<Claimed> {
    let n = input.len();
    let index = next_tile(scratch, n)?;
    let tile = Claimed { index, left: n - index * TILE };
    load_tile(input, index, tile.full(), values);
    Some(tile)
}

/// Where a thread's warp and tile stand in the scan, from [`scan_tile`].
#[derive(Clone, Copy)]
pub(crate) struct TileSums<T> {
    /// The sum of all the values before the warp.
    pub warp_before: T,
    /// The sum of all the values before the tile.
    pub tile_before: T,
    /// The sum of all the values up to the end of the tile.
    pub tile_through: T,
}

/// Scans a tile given each thread's quad sums: on return `sums[j]` holds the sum of the
/// warp's values before quad [`quad_index`]`(tile, j)`, and the result says where the warp and
/// the tile stand. The last tile also writes the sum of everything to `total`. (In place: an
/// array returned by value goes through local memory.)
///
/// # Safety
/// Every thread of the block calls this once with its own quads' sums; `scratch` is the
/// launch's scratch with a word for every tile; `total` is writable when `last`.
#[inline(always)]
pub(crate) unsafe fn scan_tile<T: Sum>(
    sums: &mut [T; Q],
    tile: usize,
    scratch: *mut u64,
    total: *mut T,
    last: bool,
) -> TileSums<T> {
    let warp_totals = shared_array![u32; WARPS];
    // The sums before each warp, then the sum through the end of the tile.
    let warp_prefixes = shared_array![u32; WARPS + 1];
    let (lane, warp) = lane_and_warp();

    // Row j of the warp: each lane's quad sum, scanned across the warp (rows interleaved).
    let mut inclusive = *sums;
    crate::unroll!([1, 2, 4, 8, 16], |delta| {
        crate::unroll!([0, 1, 2, 3, 4, 5, 6, 7], |j| {
            let below = shuffle_up(inclusive[j], delta as u32);
            if lane as usize >= delta {
                inclusive[j] = below.plus(inclusive[j]);
            }
        });
    });
    // What precedes each of this thread's quads inside the warp: earlier rows, earlier lanes.
    let mut rows = T::ZERO;
    crate::unroll!([0, 1, 2, 3, 4, 5, 6, 7], |j| {
        let lanes = shuffle_up(inclusive[j], 1);
        sums[j] = if lane == 0 { rows } else { rows.plus(lanes) };
        rows = rows.plus(shuffle_from(inclusive[j], 31));
    });
    if lane == 0 {
        *warp_totals.add(warp) = rows.bits();
    }
    thread::sync_threads();

    if warp == 0 {
        let own = if (lane as usize) < WARPS { T::from_bits(*warp_totals.add(lane as usize)) } else { T::ZERO };
        let mut warps = own;
        crate::unroll!([1, 2, 4, 8, 16], |delta| {
            if delta < WARPS {
                let below = shuffle_up(warps, delta as u32);
                if lane as usize >= delta {
                    warps = below.plus(warps);
                }
            }
        });
        let aggregate = shuffle_from(warps, WARPS as u32 - 1);
        let earlier = shuffle_up(warps, 1);
        let prefix = look_back(scratch.add(1), tile, aggregate, lane);
        if (lane as usize) < WARPS {
            let warp_prefix = if lane == 0 { prefix } else { prefix.plus(earlier) };
            *warp_prefixes.add(lane as usize) = warp_prefix.bits();
        }
        if lane == 0 {
            let through = prefix.plus(aggregate);
            *warp_prefixes.add(WARPS) = through.bits();
            if last {
                *total = through;
            }
        }
    }
    thread::sync_threads();
    TileSums {
        warp_before: T::from_bits(*warp_prefixes.add(warp)),
        tile_before: T::from_bits(*warp_prefixes),
        tile_through: T::from_bits(*warp_prefixes.add(WARPS)),
    }
}

#[inline(always)]
unsafe fn scan_exclusive<T: Sum>(input: &[T], output: *mut T, scratch: *mut u64, total: *mut T) {
    let n = input.len();
    // Only the last tile can be partial; its missing values scan as zeros and are not stored.
    let mut values = [Quad([T::ZERO; 4]); Q];
    let claimed = match claim_tile(input, scratch, &mut values) {
        Some(claimed) => claimed,
        None => return,
    };
    let (tile, full) = (claimed.index, claimed.full());
    let mut before = [T::ZERO; Q];
    crate::unroll!([0, 1, 2, 3, 4, 5, 6, 7], |j| {
        // The quad's own exclusive prefixes replace its values: three live registers, not four.
        let q = values[j].0;
        let (one, two) = (q[0], q[0].plus(q[1]));
        let three = two.plus(q[2]);
        values[j] = Quad([T::ZERO, one, two, three]);
        before[j] = three.plus(q[3]);
    });
    let offset = scan_tile(&mut before, tile, scratch, total, claimed.last()).warp_before;
    let prefixes = |j: usize| {
        let inside = values[j].0;
        let first = offset.plus(before[j]);
        Quad([first, first.plus(inside[1]), first.plus(inside[2]), first.plus(inside[3])])
    };
    if full {
        crate::unroll!([0, 1, 2, 3, 4, 5, 6, 7], |j| {
            store_quad(output, quad_index(tile, j), prefixes(j));
        });
    } else {
        crate::unroll!([0, 1, 2, 3, 4, 5, 6, 7], |j| {
            let quad = quad_index(tile, j);
            let quad_prefixes = prefixes(j);
            crate::unroll!([0, 1, 2, 3], |k| {
                if 4 * quad + k < n {
                    *output.add(4 * quad + k) = quad_prefixes.0[k];
                }
            });
        });
    }
}

/// `output[i] = input[0] + … + input[i-1]` (wrapping), and `*total` the sum of all.
///
/// # Safety
/// The launcher (`ScanArgs` on the host, which only `Scanner` builds) guarantees: `input` is
/// not empty and starts 16-byte aligned; `output` holds `input.len()` values, is 16-byte
/// aligned and overlaps neither `input` nor `scratch`; `scratch` holds
/// `interface::scan::scratch_words(input.len())` words, zeroed (no access depends on it, but a
/// non-zero counter leaves tiles untaken and the tiles after them waiting forever, and stale
/// states give wrong sums); `total` is one writable value apart from the others; the grid is
/// one block of `interface::scan::BLOCK` threads per tile, one-dimensional.
#[kernel]
pub unsafe fn scan_exclusive_u32(input: &[u32], output: *mut u32, scratch: *mut u64, total: *mut u32) {
    scan_exclusive(input, output, scratch, total);
}

/// `output[i] = input[0] + … + input[i-1]` in f32, and `*total` the sum of all.
///
/// # Safety
/// As for [`scan_exclusive_u32`].
#[kernel]
pub unsafe fn scan_exclusive_f32(input: &[f32], output: *mut f32, scratch: *mut u64, total: *mut f32) {
    scan_exclusive(input, output, scratch, total);
}
