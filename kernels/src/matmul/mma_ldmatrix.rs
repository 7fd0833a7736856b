//! **Step 6b: BF16 and FP16, `ldmatrix` and a swizzled layout.** 16-bit inputs double the
//! tensor cores' rate and halve the bytes of every tile. `mma.sync.m16n8k16` multiplies a
//! 16×16 tile of `A` by a 16×8 tile of `B`, each register holding two elements; step 6a's
//! block, four-stage `cp.async` pipeline and store are kept, and two things change:
//!
//! - **`ldmatrix`.** One instruction loads a whole fragment: each lane names one 16-byte row of
//!   one of four 8×8 tiles, and every lane receives its elements of all four. `A`'s 16×16 tile
//!   is one `ldmatrix.x4`; for `B`, stored with `k` along the rows, `.trans` delivers the
//!   columns the instruction wants, two n8 tiles per `ldmatrix.x4.trans`. A warp's `k16` step
//!   is 8 of them for 32 `mma`s, where step 6a needed 32 loads for 32 `mma`s of half the work.
//! - **A swizzled layout instead of padding.** The 8 rows one `ldmatrix` phase reads are 128
//!   bytes apart in `A`'s slice and 512 in `B`'s: unpadded, they share banks. Instead of
//!   padding, each 16-byte piece is moved within its 128-byte line by an XOR with its row's
//!   index, so the 8 rows of any phase land on 8 different bank groups, the copies still
//!   write whole lines, and no byte is wasted:
//!
//! ```text
//!   B slice, 64 rows × 32 pieces of 16 bytes: piece p of row r is stored at p ^ (r % 8)
//!   row 0: 0 1 2 3 4 5 6 7 | 8 ...      an ldmatrix phase reads piece p of rows r..r+8:
//!   row 1: 1 0 3 2 5 4 7 6 | 9 ...      p ^ 0, p ^ 1, ..., p ^ 7, eight different places
//!   row 2: 2 3 0 1 6 7 4 5 | 10 ...
//! ```
//!
//! One kernel serves both types through [`Mma16`]: they differ only in the `mma` instruction
//! (and in the conversion that made the inputs, `convert.rs`).

use super::mma_tf32::{pipeline, store_tile, warp_corner, Accumulators, Copies};
use crate::shared_address;
use crate::tensor::mma::{ldmatrix_x4, ldmatrix_x4_trans, Bf16, Mma16, F16};
use cuda_std::prelude::*;
use cuda_std::shared::dynamic_shared_mem;
use interface::matmul::{HALF_BK, HALF_STAGE_ELEMENTS, MMA_BM, MMA_BN};

/// Byte offset in a stage of piece `piece` (of 8) of row `row` of `A`'s slice, one 128-byte
/// line: the piece's place in the line XOR the row's index.
#[inline(always)]
fn a_piece(row: usize, piece: usize) -> u32 {
    ((row * 8 + (piece ^ (row % 8))) * 16) as u32
}

/// Byte offset in a stage of piece `piece` (of 32) of row `row` of `B`'s slice, after `A`'s:
/// the piece's place in its 128-byte line XOR the row's index.
#[inline(always)]
fn b_piece(row: usize, piece: usize) -> u32 {
    ((MMA_BM * HALF_BK * 2) + (row * (MMA_BN / 8) + (piece ^ (row % 8))) * 16) as u32
}

#[inline(always)]
unsafe fn matmul_mma<T: Mma16>(a: &[u16], b: &[u16], c: *mut f32, m: usize, n: usize, k: usize) {
    let shared = shared_address(dynamic_shared_mem::<u16>());
    let lane = thread::thread_idx_x() as usize % 32;
    let (warp_row, warp_col) = warp_corner();
    let mut copies = Copies::new((a, b), (m, n, k), a_piece, b_piece);
    // The rows this lane names to ldmatrix, for each k16 quarter of the slice: for A, row
    // `lane % 16` of each m16 tile and piece `lane / 16` of the quarter; for B, row `lane % 16`
    // of the quarter and piece `lane / 16` of each pair of n8 tiles.
    let mut a_rows = [[0u32; 4]; 4];
    let mut b_rows = [[0u32; 4]; 4];
    crate::unroll!([0, 1, 2, 3], |kk| {
        crate::unroll!([0, 1, 2, 3], |i| {
            a_rows[kk][i] = a_piece(warp_row + i * 16 + lane % 16, kk * 2 + lane / 16);
            b_rows[kk][i] = b_piece(kk * 16 + lane % 16, warp_col / 8 + i * 2 + lane / 16);
        });
    });

    let mut acc: Accumulators = [[[0.0; 4]; 8]; 4];
    const STAGE_BYTES: u32 = (HALF_STAGE_ELEMENTS * 2) as u32;
    pipeline(&mut copies, shared, STAGE_BYTES, |stage| {
        let stage = shared + stage * STAGE_BYTES;
        crate::unroll!([0, 1, 2, 3], |kk| {
            let mut a_frag = [[0u32; 4]; 4];
            let mut b_frag = [[0u32; 2]; 8];
            crate::unroll!([0, 1, 2, 3], |i| {
                a_frag[i] = ldmatrix_x4(stage + a_rows[kk][i]);
                let [b0, b1, b2, b3] = ldmatrix_x4_trans(stage + b_rows[kk][i]);
                b_frag[2 * i] = [b0, b1];
                b_frag[2 * i + 1] = [b2, b3];
            });
            crate::unroll!([0, 1, 2, 3], |i| {
                crate::unroll!([0, 1, 2, 3, 4, 5, 6, 7], |j| {
                    T::mma(&mut acc[i][j], &a_frag[i], &b_frag[j]);
                });
            });
        });
    });

    let corner =
        (thread::block_idx_y() as usize * MMA_BM + warp_row, thread::block_idx_x() as usize * MMA_BN + warp_col);
    store_tile(c, &acc, corner, (m, n));
}

/// # Safety
/// `a` is `m × padded(k)` and `b` is `k × padded(n)` bf16 values, as `convert_bf16` writes
/// them (rows padded to 8 elements), both 16-byte aligned; `c` is valid for `m·n` writes,
/// 8-byte aligned, and aliases neither. Launch: blocks of `MMA_THREADS` threads, a grid of
/// `⌈n / MMA_BN⌉ × ⌈m / MMA_BM⌉`, `HALF_SHARED_BYTES` of dynamic shared memory.
#[kernel]
pub unsafe fn matmul_mma_bf16_128x256(a: &[u16], b: &[u16], c: *mut f32, m: usize, n: usize, k: usize) {
    matmul_mma::<Bf16>(a, b, c, m, n, k);
}

/// # Safety
/// As [`matmul_mma_bf16_128x256`], with f16 values as `convert_f16` writes them.
#[kernel]
pub unsafe fn matmul_mma_f16_128x256(a: &[u16], b: &[u16], c: *mut f32, m: usize, n: usize, k: usize) {
    matmul_mma::<F16>(a, b, c, m, n, k);
}
