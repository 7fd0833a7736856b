//! The tiles of the single-pass scan and of stream compaction (`kernels/src/scan.rs`,
//! `kernels/src/compact.rs`): a block of `BLOCK` threads takes one tile of `TILE` values, each
//! thread `QUADS_PER_THREAD` groups of four, and publishes the tile's state in one 64-bit word.

/// Threads per block of the scan and compaction kernels.
pub const BLOCK: usize = 256;
/// 16-byte groups of four values each thread loads.
pub const QUADS_PER_THREAD: usize = 4;
/// Warps per block.
pub const WARPS: usize = BLOCK / 32;
/// Values per tile: one block's share.
pub const TILE: usize = BLOCK * 4 * QUADS_PER_THREAD;

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
