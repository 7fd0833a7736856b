//! Shapes shared by the labeling kernels (`kernels/src/label.rs`) and their host.

/// Columns of a tile: one warp per tile row, so a row's detected pixels are one ballot.
pub const TILE_WIDTH: usize = 32;
/// Rows of a tile: a block of `TILE_WIDTH × TILE_HEIGHT` threads labels one tile.
pub const TILE_HEIGHT: usize = 16;
/// Threads of the cross-tile merge: one per pixel of a tile's top edge, and the first
/// `TILE_HEIGHT` of them one per pixel of its left edge too.
pub const MERGE_BLOCK: u32 = TILE_WIDTH as u32;
/// Threads per block of the one-thread-per-pixel kernels (flatten, renumber).
pub const BLOCK: u32 = 256;
/// The parent of a pixel that belongs to no source, until labels are renumbered (where it
/// becomes 0). Pixel indices stay below it, so an image has fewer than `u32::MAX` pixels.
pub const BACKGROUND: u32 = u32::MAX;
