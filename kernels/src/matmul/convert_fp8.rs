//! The inputs of the FP8 product (`wgmma_fp8.rs`): f32 matrices scaled per tensor and rounded
//! to e4m3 on the GPU, one byte per element, rows padded with zeros to `FP8_ROW_ALIGN` (16)
//! bytes, the stride TMA requires.
//!
//! **The scale.** e4m3 spans ±448 with 4 significant bits, so a tensor is first divided by
//! `scale = amax / 448`, its largest finite magnitude mapped to the largest e4m3 value; the
//! product multiplies the scales back in its epilogue. [`convert_fp8_amax`] finds `amax` (NaN
//! left out, an infinity kept, for the host to refuse), the host reads it and passes
//! `1 / scale` to the rounding.
//!
//! **The rounding** is the hardware's (`cvt.rn.satfinite.e4m3x2.f32`, sm_89 and later, so it
//! lives in the Hopper module): to nearest, ties to even, past ±448 saturated to ±448, NaN
//! kept NaN. Four elements become one 32-bit store.
//!
//! **Bᵀ.** FP8 wgmma reads both operands contiguous along k, so B (k×n) is written transposed,
//! n rows of k ([`convert_e4m3_transposed`]): a block stages a 64×64 square of B in shared
//! memory (a column of padding keeps the reads of a column off one bank) and writes each of its
//! 64 columns as 16 words along k.
//!
//! ```text
//!   B (k × n, f32)              Bᵀ (n × padded k, e4m3)
//!   row k0: b00 b01 …  ──►      row n0: q(b00) q(b10) q(b20) q(b30) | …  (one u32 per 4 of k)
//! ```

use crate::{global_index, grid_threads};
use core::arch::asm;
use cuda_std::prelude::*;
use cuda_std::shared_array;
use interface::wgmma::{fp8_padded, FP8_CONVERT_THREADS, FP8_TILE};

/// Four values rounded to e4m3 (`cvt.rn.satfinite.e4m3x2.f32`), byte `i` of the word holding
/// `x[i]`: little-endian, so the word stores them in order.
#[inline(always)]
fn pack_e4m3(x: [f32; 4]) -> u32 {
    let out: u32;
    // SAFETY: register-to-register conversions; `cvt` puts its first source in the high byte of
    // each pair, and `mov` the first pair in the low half.
    unsafe {
        asm!(
            "{{ .reg .b16 lo, hi; cvt.rn.satfinite.e4m3x2.f32 lo, {b}, {a}; cvt.rn.satfinite.e4m3x2.f32 hi, {d}, {c}; mov.b32 {o}, {{lo, hi}}; }}",
            o = out(reg32) out,
            a = in(reg32) x[0].to_bits(),
            b = in(reg32) x[1].to_bits(),
            c = in(reg32) x[2].to_bits(),
            d = in(reg32) x[3].to_bits(),
            options(pure, nomem, nostack),
        )
    };
    out
}

/// The largest of `value` over the warp (`redux.sync.max.u32`).
#[inline(always)]
fn warp_max(value: u32) -> u32 {
    let out: u32;
    // SAFETY: a register reduction among the warp's lanes, all of which execute it.
    unsafe { asm!("redux.sync.max.u32 {o}, {v}, -1;", o = out(reg32) out, v = in(reg32) value) };
    out
}

/// `*amax = max(*amax, |src[i]|)` over `i < len`, as f32 bits (a magnitude's bits order as its
/// value), NaN left out: each warp's largest joins `amax` by one atomic.
///
/// # Safety
/// `src.len() >= len`; `amax` is a valid, 4-byte aligned u32 that holds 0 (or a magnitude's
/// bits to start from). Blocks of `FP8_CONVERT_THREADS` threads (whole warps), any 1D grid.
#[kernel]
pub unsafe fn convert_fp8_amax(src: &[f32], amax: *mut u32, len: usize) {
    let mut best = 0u32;
    let mut i = global_index();
    while i < len {
        let bits = (*src.as_ptr().add(i)).to_bits() & 0x7fff_ffff;
        // Above the infinity's bits lie only NaNs.
        if bits <= 0x7f80_0000 && bits > best {
            best = bits;
        }
        i += grid_threads();
    }
    let best = warp_max(best);
    if thread::thread_idx_x() % 32 == 0 {
        asm!("red.global.max.u32 [{p}], {v};", p = in(reg64) amax, v = in(reg32) best);
    }
}

/// Element `(row, col)` of the `rows × cols` matrix `src` times `inverse`, or 0 past its
/// columns.
#[inline(always)]
unsafe fn scaled(src: &[f32], cols: usize, (row, col): (usize, usize), inverse: f32) -> f32 {
    if col < cols {
        *src.as_ptr().add(row * cols + col) * inverse
    } else {
        0.0
    }
}

/// `dst[r][c] = e4m3(src[r][c] · inverse)`, the rows of `dst` `fp8_padded(cols)` bytes apart,
/// zeros past `cols`; word `i` of `dst` holds padded elements `4i .. 4i + 4` (a padded row is a
/// whole number of words).
///
/// # Safety
/// `src.len() >= rows·cols`; `dst` is 4-byte aligned, valid for `rows · fp8_padded(cols)` bytes
/// of writes, and does not overlap `src`. Blocks of at most `FP8_CONVERT_THREADS` threads, any
/// 1D grid (a grid-stride loop covers every word).
#[kernel]
pub unsafe fn convert_e4m3(src: &[f32], dst: *mut u32, rows: usize, cols: usize, inverse: f32) {
    let words = fp8_padded(cols) / 4;
    let mut i = global_index();
    while i < rows * words {
        let (row, col) = (i / words, i % words * 4);
        let at = |j: usize| scaled(src, cols, (row, col + j), inverse);
        *dst.add(i) = pack_e4m3([at(0), at(1), at(2), at(3)]);
        i += grid_threads();
    }
}

/// Padded length of a row of the staged square: 65 floats, so that a column's elements fall in
/// different banks.
const STRIDE: usize = FP8_TILE + 1;

/// `dst[c][r] = e4m3(src[r][c] · inverse)`: the `rows × cols` matrix `src` transposed and
/// rounded, the rows of `dst` `fp8_padded(rows)` bytes apart, zeros past `rows`.
///
/// # Safety
/// `src.len() >= rows·cols`; `dst` is 4-byte aligned, valid for `cols · fp8_padded(rows)` bytes
/// of writes, and does not overlap `src`. Blocks of `FP8_CONVERT_THREADS` threads (1D), a grid
/// of `⌈cols / FP8_TILE⌉ × ⌈rows / FP8_TILE⌉` (x along `src`'s columns).
#[kernel]
pub unsafe fn convert_e4m3_transposed(src: &[f32], dst: *mut u32, rows: usize, cols: usize, inverse: f32) {
    let tile = shared_array![f32; FP8_TILE * STRIDE];
    let (col0, row0) = (thread::block_idx_x() as usize * FP8_TILE, thread::block_idx_y() as usize * FP8_TILE);
    let tid = thread::thread_idx_x() as usize;
    // Read: thread t takes column t % 64 of every fourth row from t / 64; a warp reads 32
    // consecutive floats of a row. Past the matrix, zeros: the padding of k.
    let (c, first) = (tid % FP8_TILE, tid / FP8_TILE);
    let mut r = first;
    while r < FP8_TILE {
        let (row, col) = (row0 + r, col0 + c);
        *tile.add(r * STRIDE + c) =
            if row < rows && col < cols { *src.as_ptr().add(row * cols + col) * inverse } else { 0.0 };
        r += FP8_CONVERT_THREADS / FP8_TILE;
    }
    thread::sync_threads();
    // Write: thread t takes word t % 16 (k from row0 + 4·(t % 16)) of every 16th column from
    // t / 16; 16 consecutive threads write one column's 64 bytes of k.
    let words = fp8_padded(rows) / 4;
    let (w, first) = (tid % (FP8_TILE / 4), tid / (FP8_TILE / 4));
    let word = row0 / 4 + w;
    let mut n = first;
    while n < FP8_TILE {
        if col0 + n < cols && word < words {
            let at = |i: usize| *tile.add((4 * w + i) * STRIDE + n);
            *dst.add((col0 + n) * words + word) = pack_e4m3([at(0), at(1), at(2), at(3)]);
        }
        n += FP8_CONVERT_THREADS / (FP8_TILE / 4);
    }
}
