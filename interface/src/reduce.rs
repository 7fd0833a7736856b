//! Launch shapes of the reduction kernels (`kernels/src/reduce/`), and the layout of the
//! moments they write.

/// Threads per block of every reduction kernel: the shared trees and the warp-sum stage are
/// sized for it (a power of two, a whole number of warps).
pub const BLOCK: usize = 256;
/// Warps per block: the partials the warp-shuffle stages leave in shared memory.
pub const WARPS: usize = BLOCK / 32;
/// Blocks per SM in the grid of `reduce_vec4`: eight times the 8 that fit at once (2048
/// threads). One wave of blocks, each walking its share to the end, finishes when the slowest
/// SM does, and SMs do not get equal shares of the memory's bandwidth; with eight waves of
/// shorter blocks, the SMs that finish a block early start the next, and the work balances.
/// (Measured on an H100 at 2^28 values: each doubling from one wave to eight was faster.)
pub const BLOCKS_PER_SM: usize = 64;
/// Blocks per SM of `reduce_moments`. Its per-thread state takes about 64 registers (the
/// CUDA C twin a few more), so only three or four blocks fit on an SM at once, and a
/// grid-stride grid must fit in one wave: a second wave would leave the SMs of the first idle
/// while it runs.
pub const MOMENTS_BLOCKS_PER_SM: usize = 3;
/// Quads (16-byte loads) each thread of `reduce_vec4` issues before it adds any of them. Eight
/// blocks of 256 threads on each SM keep 64 KiB in flight per SM this way, several times what
/// the memory's latency needs; a shorter pass leaves the grid's last threads less to finish.
pub const QUADS_PER_PASS: usize = 2;
/// The same for `reduce_moments`, whose one wave of three or four blocks per SM needs more
/// loads in flight per thread to keep as many bytes in flight.
pub const MOMENTS_QUADS_PER_PASS: usize = 4;
/// The sum kernels finish in two levels (`kernels/src/reduce/mod.rs`): the last block of each
/// group of `FINISH_GROUP` consecutive blocks adds the group's partials, and the last of those
/// adds the groups' totals. Each level is one load per thread (at most `BLOCK`) for a grid of
/// up to `FINISH_GROUP · BLOCK` blocks, where one level over thousands of partials took several
/// loads per thread in sequence.
pub const FINISH_GROUP: usize = 64;

/// Tickets the sum kernels need for a grid of `blocks` blocks: one per group, then one for the
/// groups' totals.
pub const fn finish_tickets(blocks: usize) -> usize {
    // div_ceil is newer than the nightly that builds the kernels.
    (blocks + FINISH_GROUP - 1) / FINISH_GROUP + 1
}

/// Values one block of a grid-stride kernel covers in one pass.
pub const VALUES_PER_PASS: usize = 4 * QUADS_PER_PASS * BLOCK;

/// `reduce_moments` writes each block's moments, and the result, as `MOMENTS_FIELDS` f64 in
/// this order. Every field is exact in f64: the counts stay below 2^53 (the host checks), and
/// min and max are f32 values.
pub const MOMENTS_FIELDS: usize = 6;
pub const MOMENTS_COUNT: usize = 0;
pub const MOMENTS_NAN: usize = 1;
pub const MOMENTS_MEAN: usize = 2;
pub const MOMENTS_M2: usize = 3;
pub const MOMENTS_MIN: usize = 4;
pub const MOMENTS_MAX: usize = 5;

/// Blocks of a grid-stride kernel over `n` values on `sms` SMs: `per_sm` per SM, or fewer when
/// `n` does not give every block a pass (a small image should not wake a thousand blocks to
/// add nothing).
pub const fn grid_stride_blocks(n: usize, sms: usize, per_sm: usize) -> usize {
    let full = per_sm * sms;
    // div_ceil is newer than the nightly that builds the kernels.
    let needed = n / VALUES_PER_PASS + (n % VALUES_PER_PASS != 0) as usize;
    let blocks = if needed < full { needed } else { full };
    if blocks == 0 {
        1
    } else {
        blocks
    }
}
