//! Sizes of the convolution kernels (`kernels/src/conv2d.rs`, `kernels/src/conv1d.rs`) and
//! the constant-memory filter they share.

/// Largest filter radius: filters up to 7×7 (2D) or 7 taps (1D).
pub const MAX_RADIUS: usize = 3;
/// Length of the `__constant__` filter array: a (2·MAX_RADIUS + 1)² filter.
pub const MAX_TAPS: usize = (2 * MAX_RADIUS + 1) * (2 * MAX_RADIUS + 1);
/// The symbol the host fills with the taps.
pub const FILTER_SYMBOL: &str = "FILTER";

/// `conv2d_naive`: a NAIVE_BLOCK × NAIVE_BLOCK block, one output pixel per thread.
pub const NAIVE_BLOCK: u32 = 16;
/// `conv2d_tiled_r*`: a TILE×TILE output tile per block of TILE × BLOCK_ROWS threads, each
/// thread computing TILE / BLOCK_ROWS rows of one column.
pub const TILE: usize = 64;
pub const BLOCK_ROWS: usize = 4;
/// `conv1d`: threads (and outputs) per block.
pub const CONV1D_BLOCK: usize = 256;
/// `conv1d_vec4`: groups of four inputs each thread stages, and the outputs a block covers.
pub const CONV1D_VEC4_QUADS: usize = 4;
pub const CONV1D_VEC4_SPAN: usize = 4 * CONV1D_VEC4_QUADS * CONV1D_BLOCK;
