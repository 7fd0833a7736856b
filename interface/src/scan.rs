//! The tiles of the single-pass scan and of stream compaction (`kernels/src/scan.rs`,
//! `kernels/src/compact.rs`): a block of `BLOCK` threads takes one tile of `TILE` values, each
//! thread `QUADS_PER_THREAD` groups of four, and publishes the tile's state in one 64-bit word.

use crate::LaunchBounds;

/// Threads per block of the scan and compaction kernels.
pub const BLOCK: usize = 256;
/// 16-byte groups of four values each thread loads.
pub const QUADS_PER_THREAD: usize = 8;
/// Blocks per SM the kernels are compiled for (`.minnctapersm`): registers capped so that this
/// many tiles are in flight on each SM.
pub const MIN_BLOCKS_PER_SM: usize = 4;
/// Warps per block.
pub const WARPS: usize = BLOCK / 32;
/// Values per tile: one block's share.
pub const TILE: usize = BLOCK * 4 * QUADS_PER_THREAD;

/// The scan and compaction kernels' launch bounds.
pub const BOUNDS: [LaunchBounds; 3] = [
    LaunchBounds {
        kernel: "scan_exclusive_u32",
        max_threads: BLOCK as u32,
        min_blocks_per_sm: MIN_BLOCKS_PER_SM as u32,
    },
    LaunchBounds {
        kernel: "scan_exclusive_f32",
        max_threads: BLOCK as u32,
        min_blocks_per_sm: MIN_BLOCKS_PER_SM as u32,
    },
    LaunchBounds {
        kernel: "compact_window_f32",
        max_threads: BLOCK as u32,
        min_blocks_per_sm: MIN_BLOCKS_PER_SM as u32,
    },
];

/// Nanoseconds a tile's look-back sleeps between publishing its aggregate and its first read of
/// the predecessors' words (`nanosleep`): about as long as the tiles just before it, which
/// started at about the same time, take to publish their inclusive prefixes, so that one read
/// usually finds one nearby. Chosen by measurement on large inputs: shorter waits are slower,
/// longer ones gain nothing more. An input of few tiles pays it as latency, once per tile.
pub const LOOK_BACK_WAIT_NS: u32 = 3400;
/// Nanoseconds the look-back sleeps before reading a window again that held an empty word.
pub const LOOK_BACK_RETRY_NS: u32 = 300;

/// A tile's published state, the low bits of its 64-bit word (the value's 32 bits are the high
/// half): nothing yet, the tile's own aggregate, or its inclusive prefix.
pub const FLAG_NONE: u32 = 0;
pub const FLAG_AGGREGATE: u32 = 1;
pub const FLAG_PREFIX: u32 = 2;

/// Tiles of a scan over `n` values.
pub const fn tiles(n: usize) -> usize {
    // Not `div_ceil`: the pinned nightly that builds the kernels lacks it.
    n / TILE + (n % TILE != 0) as usize
}

/// 64-bit words of scratch a scan over `n` values needs: the tile counter, then one state per
/// tile. All must be zero before each launch.
pub const fn scratch_words(n: usize) -> usize {
    1 + tiles(n)
}
