//! 2D convolution with a small filter in constant memory: naive, then tiled with a halo.
//!
//! As in deep-learning frameworks, "convolution" here is cross-correlation (the filter is not
//! flipped): `out[y][x] = Σ filter[fy][fx] · in[y + fy - r][x + fx - r]` for a
//! `(2r + 1)²` filter, r ≤ 3 (up to 7×7). Pixels outside the image read as zero, and the
//! output has the input's size.
//!
//! **Constant memory**: [`FILTER`] is a `__constant__` array written by the host before the
//! launch (`Module::get_global("FILTER")`). Every thread of a warp reads the same tap at the
//! same time, which is exactly what the constant cache serves best: one fetch, broadcast to
//! all 32 lanes, without spending shared memory or registers on the filter.
//!
//! **`conv2d_naive`**: one thread per output pixel, each reading its `(2r + 1)²` input pixels
//! straight from global memory. Neighbouring threads re-read mostly the same pixels; the
//! caches absorb part of it, but every tap is still a separate load instruction.
//!
//! **`conv2d_tiled_r1/r2/r3`** (`conv2d_tiled::<R>`): a 64×4 block computes a 64×64 output
//! tile. It first copies the input tile *with its halo*, the `r`-pixel border the filter
//! reaches beyond the tile, (64 + 2r)² pixels, into shared memory, all threads cooperating
//! with coalesced row-wise loads; after one barrier nothing more comes from global memory, so
//! each input pixel is read from DRAM about once. The halo is why the tile is 64 wide rather
//! than 32: at r = 2 a block reads 1.13 input pixels per output instead of 1.27
//! (docs/performance.md has the measured difference). Each thread then computes 16 consecutive rows of one column: per
//! filter column it loads the 16 + 2r pixels beneath into registers once and uses each for
//! up to 2r + 1 outputs, (16 + 2r)·(2r + 1)/16 shared loads per output instead of (2r + 1)²
//! (6.25 instead of 25 for 5×5). A warp reads 32 consecutive words of a row: no bank
//! conflicts. The radius is a const generic, so the tap loops unroll and the arrays stay in
//! registers; the shared tile is sized for the largest radius because a `static` cannot
//! depend on a const generic.

use cuda_std::prelude::*;
use cuda_std::{address_space, shared_array};
use interface::conv::{BLOCK_ROWS, MAX_RADIUS, MAX_TAPS, TILE};

/// The filter taps, row-major, `(2r + 1)²` of them for 2D and `2r + 1` for 1D (`conv1d`
/// reads the same array). The host finds it by name, [`interface::conv::FILTER_SYMBOL`].
#[address_space(constant)]
#[no_mangle]
pub static mut FILTER: [f32; MAX_TAPS] = [0.0; MAX_TAPS];

/// # Safety
/// The launcher (`Conv2dArgs` on the host) guarantees: `input` holds `width · height` pixels
/// and `output` is valid for as many writes and overlaps nothing the kernel reads; the filter
/// radius is at most `MAX_RADIUS`, so every tap is inside [`FILTER`]; and the block is the
/// one the kernel's indexing assumes (`NAIVE_BLOCK²` threads here, `TILE × BLOCK_ROWS` for
/// the tiled kernels), with a grid of one block per output tile.
#[kernel]
pub unsafe fn conv2d_naive(
    input: &[f32],
    output: *mut f32,
    width: usize,
    height: usize,
    radius: usize,
) {
    let x = (thread::block_idx_x() * thread::block_dim_x() + thread::thread_idx_x()) as usize;
    let y = (thread::block_idx_y() * thread::block_dim_y() + thread::thread_idx_y()) as usize;
    if x >= width || y >= height {
        return;
    }
    let taps = 2 * radius + 1;
    let mut acc = 0.0f32;
    // The row loop stays a loop; the tap loop along a row is unrolled to the largest filter,
    // each tap guarded by the run-time size, so a row's loads issue together.
    for fy in 0..taps {
        // Unsigned arithmetic: above the image `y + fy - radius` wraps to a huge value and
        // fails the bounds check like any other outside row.
        let iy = (y + fy).wrapping_sub(radius);
        if iy < height {
            crate::unroll!([0, 1, 2, 3, 4, 5, 6], |fx| {
                let ix = (x + fx).wrapping_sub(radius);
                if fx < taps && ix < width {
                    acc += *FILTER.get_unchecked(fy * taps + fx) * *input.get_unchecked(iy * width + ix);
                }
            });
        }
    }
    *output.add(y * width + x) = acc;
}

const ROWS_PER_THREAD: usize = TILE / BLOCK_ROWS;
const SHARED_WIDTH: usize = TILE + 2 * MAX_RADIUS;

#[inline(always)]
unsafe fn conv2d_tiled<const R: usize>(input: &[f32], output: *mut f32, width: usize, height: usize) {
    let tile = shared_array![f32; SHARED_WIDTH * SHARED_WIDTH];
    let span = TILE + 2 * R;
    let taps = 2 * R + 1;
    let tx = thread::thread_idx_x() as usize;
    let ty = thread::thread_idx_y() as usize;
    let x0 = thread::block_idx_x() as usize * TILE;
    let y0 = thread::block_idx_y() as usize * TILE;

    // Stage the (64 + 2R)² input window, zero outside the image.
    // Positions inside the window are below (64 + 2R)²: 32-bit arithmetic, whose division by
    // a constant is a multiply and a shift (nvcc narrows the same C to 32 bits by itself).
    let mut e = (ty * TILE + tx) as u32;
    while e < (span * span) as u32 {
        let (sy, sx) = ((e / span as u32) as usize, (e % span as u32) as usize);
        let gy = (y0 + sy).wrapping_sub(R);
        let gx = (x0 + sx).wrapping_sub(R);
        *tile.add(sy * SHARED_WIDTH + sx) =
            if gy < height && gx < width { *input.get_unchecked(gy * width + gx) } else { 0.0 };
        e += (TILE * BLOCK_ROWS) as u32;
    }
    thread::sync_threads();

    // This thread's outputs: rows first_row .. first_row + 16 of column tx. For each filter
    // column, the 16 + 2R input values under it are loaded from shared memory once and reused
    // by all 16 rows and all filter rows.
    let first_row = ty * ROWS_PER_THREAD;
    let mut acc = [0.0f32; ROWS_PER_THREAD];
    let mut column = [0.0f32; ROWS_PER_THREAD + 2 * MAX_RADIUS];
    // Every filter column, unrolled (`unroll!` lists 2·MAX_RADIUS + 1 of them; the ones past
    // this kernel's `taps` drop out, since both are constants).
    crate::unroll!([0, 1, 2, 3, 4, 5, 6], |fx| {
        if fx < taps {
            for i in 0..ROWS_PER_THREAD + 2 * R {
                column[i] = *tile.add((first_row + i) * SHARED_WIDTH + tx + fx);
            }
            for fy in 0..taps {
                let tap = *FILTER.get_unchecked(fy * taps + fx);
                for row in 0..ROWS_PER_THREAD {
                    acc[row] += tap * column[row + fy];
                }
            }
        }
    });
    let x = x0 + tx;
    for row in 0..ROWS_PER_THREAD {
        let y = y0 + first_row + row;
        if x < width && y < height {
            *output.add(y * width + x) = acc[row];
        }
    }
}

/// # Safety
/// As for [`conv2d_naive`], with radius 1: the shared tile holds this radius's halo.
#[kernel]
pub unsafe fn conv2d_tiled_r1(input: &[f32], output: *mut f32, width: usize, height: usize) {
    conv2d_tiled::<1>(input, output, width, height);
}

/// # Safety
/// As for [`conv2d_naive`], with radius 2: the shared tile holds this radius's halo.
#[kernel]
pub unsafe fn conv2d_tiled_r2(input: &[f32], output: *mut f32, width: usize, height: usize) {
    conv2d_tiled::<2>(input, output, width, height);
}

/// # Safety
/// As for [`conv2d_naive`], with radius 3: the shared tile holds this radius's halo.
#[kernel]
pub unsafe fn conv2d_tiled_r3(input: &[f32], output: *mut f32, width: usize, height: usize) {
    conv2d_tiled::<3>(input, output, width, height);
}
