//! **Step 6a: the tensor cores, in TF32.** Until here every multiply-add was one FMA of one
//! thread. `mma.sync.m16n8k8` has a whole warp multiply a 16×8 tile of `A` by an 8×8 tile of
//! `B` into a 16×8 tile of f32 accumulators in one instruction, on the tensor cores, which do
//! many times the FMA lanes' work per cycle. TF32 is f32 with a 10-bit mantissa: the inputs
//! are rounded once by `convert_tf32` (`convert.rs`), the products are exact and the sums f32.
//!
//! - **Fragments.** No lane holds a tile: lane `4g + t` holds `A[g][t]`, `A[g+8][t]`,
//!   `A[g][t+4]`, `A[g+8][t+4]`, `B[t][g]`, `B[t+4][g]` and four accumulators
//!   (`tensor::mma::mma_tf32_m16n8k8`). A warp computes a 64×64 tile of `C` as 4 × 8 such
//!   tiles: 128 accumulators a lane, and per `k8` four `A` fragments and eight `B` fragments
//!   loaded from shared memory, one 4-byte load per register, feeding 32 `mma`s.
//! - **Conflict-free loads by padding.** A warp's 32 loads of `A[g][t]` would hit 8 rows of
//!   a 32-float slice row, all in the same 4 banks; padding the rows to 36 floats moves row `g`
//!   by 4·g banks, and the 32 addresses fall in 32 banks. `B`'s rows (`t`) are padded to
//!   `BN + 8` floats for the same reason:
//!
//! ```text
//!   A stage: 128 rows × (32 + 4) floats    B stage: 32 rows × (256 + 8) floats
//!   lane (g, t) reads bank (4g + t) % 32   lane (g, t) reads bank (8t + g) % 32
//! ```
//! - **A three-stage `cp.async` pipeline.** 16-byte copies, with zeros copied in (no read) past
//!   the matrices' edges, keep two slices in flight while the block computes on a third; the
//!   wait (`cp.async.wait_group 1`) and one barrier per slice order them. The converted rows
//!   are padded to 8 elements, so a 16-byte piece is wholly inside a row or wholly past it,
//!   for any `m`, `n` and `k`. A slice is 128 bytes of `k`, so that a barrier is paid for
//!   every 128 `mma`s of a warp.
//!
//! The block: 8 warps, 2 down × 4 across, compute a 128×256 tile of `C`. Step 6b keeps the
//! block, the pipeline ([`Copies`], [`pipeline`]) and the store ([`store_tile`]).

use crate::async_copy::{commit_copies, copy_async_16_or_zero, wait_copies_but_newest};
use crate::shared_address;
use crate::tensor::mma::mma_tf32_m16n8k8;
use cuda_std::prelude::*;
use cuda_std::shared::dynamic_shared_mem;
use interface::matmul::{
    padded, HALF_BK, MMA_BM, MMA_BN, MMA_STAGES, MMA_THREADS, MMA_WARPS_N, MMA_WARP_M, MMA_WARP_N, TF32_A_STRIDE,
    TF32_BK, TF32_B_STRIDE, TF32_STAGE_FLOATS,
};

/// A lane's accumulators: 4 × 8 tiles of 16×8, four each.
pub(super) type Accumulators = [[[f32; 4]; 8]; 4];

// The pipeline below is written for three stages (two slices in flight, `wait_group 1`), and
// a slice's row of `A` is eight 16-byte pieces.
const _: () = assert!(MMA_STAGES == 3 && TF32_BK * 4 == 8 * 16 && HALF_BK * 2 == 8 * 16);

/// One thread's share of the copies of every slice: four 16-byte pieces of `A`'s slice (rows of
/// eight pieces), `A_ROWS` rows apart, and eight of `B`'s (rows of `MMA_BN` elements),
/// [`b_rows`] rows apart. All of a thread's pieces sit in the same column of pieces, so one source
/// pointer, one stage offset and a step each describe them.
pub(super) struct Copies<T> {
    a_from: *const T,
    b_from: *const T,
    /// Elements between two of a thread's pieces in `A` and in `B`.
    a_step: usize,
    b_step: usize,
    /// Byte offsets of its first pieces in a stage, and between two of its pieces.
    a_to: u32,
    b_to: u32,
    a_to_step: u32,
    b_to_step: u32,
    /// Rows of `A` from its first piece's to the matrix's end (0 past it).
    a_rows_left: usize,
    /// Where in a slice's `k` its pieces of `A` start, and the row of its first piece of `B`.
    a_k: usize,
    b_k: usize,
    /// Whether its pieces' columns of `B` lie inside the matrix.
    b_inside: bool,
    /// `k` of one slice, and the elements a `B` source moves on per slice.
    bk: usize,
    b_slice: usize,
    /// Where copies that read nothing point.
    a: *const T,
    b: *const T,
    k: usize,
}

/// Rows between two of a thread's pieces of `A`, and of `B` (whose rows hold `MMA_BN / per`
/// pieces of `per` elements: 64 pieces of f32, 32 of 16-bit types).
const A_ROWS: usize = MMA_THREADS / 8;
#[inline(always)]
fn b_rows<T>() -> usize {
    MMA_THREADS / (MMA_BN / (16 / core::mem::size_of::<T>()))
}

impl<T> Copies<T> {
    /// This thread's copies for the block's tile; `to_a(row, piece)` and `to_b(row, piece)`
    /// place a piece in a stage, and must move by the same amount for every `A_ROWS`
    /// (`b_rows`) rows.
    #[inline(always)]
    pub(super) fn new(
        (a, b): (&[T], &[T]),
        (m, n, k): (usize, usize, usize),
        to_a: impl Fn(usize, usize) -> u32,
        to_b: impl Fn(usize, usize) -> u32,
    ) -> Self {
        let per = 16 / core::mem::size_of::<T>();
        let (lda, ldb, bk) = (padded(k), padded(n), 8 * per);
        let tid = thread::thread_idx_x() as usize;
        let block_row = thread::block_idx_y() as usize * MMA_BM;
        let block_col = thread::block_idx_x() as usize * MMA_BN;
        let (a_row, a_piece) = (tid / 8, tid % 8);
        let (b_row, b_piece) = (tid / (MMA_BN / per), tid % (MMA_BN / per));
        Copies {
            a_from: a.as_ptr().wrapping_add((block_row + a_row) * lda + a_piece * per),
            b_from: b.as_ptr().wrapping_add(b_row * ldb + block_col + b_piece * per),
            a_step: A_ROWS * lda,
            b_step: b_rows::<T>() * ldb,
            a_to: to_a(a_row, a_piece),
            b_to: to_b(b_row, b_piece),
            a_to_step: to_a(a_row + A_ROWS, a_piece) - to_a(a_row, a_piece),
            b_to_step: to_b(b_row + b_rows::<T>(), b_piece) - to_b(b_row, b_piece),
            a_rows_left: m.saturating_sub(block_row + a_row),
            a_k: a_piece * per,
            b_k: b_row,
            b_inside: block_col + b_piece * per < n,
            bk,
            b_slice: bk * ldb,
            a: a.as_ptr(),
            b: b.as_ptr(),
            k,
        }
    }

    /// Issues the copies of the slice starting at `k0` into the stage at shared address
    /// `stage`, then moves the sources on to the next slice.
    #[inline(always)]
    unsafe fn issue(&mut self, stage: u32, k0: usize) {
        let a_k_inside = k0 + self.a_k < self.k;
        crate::unroll!([0, 1, 2, 3], |i| {
            let inside = a_k_inside && i * A_ROWS < self.a_rows_left;
            let from = if inside { self.a_from.wrapping_add(i * self.a_step) } else { self.a };
            copy_async_16_or_zero(stage + self.a_to + i as u32 * self.a_to_step, from, if inside { 16 } else { 0 });
        });
        crate::unroll!([0, 1, 2, 3, 4, 5, 6, 7], |i| {
            let inside = self.b_inside && k0 + self.b_k + i * b_rows::<T>() < self.k;
            let from = if inside { self.b_from.wrapping_add(i * self.b_step) } else { self.b };
            copy_async_16_or_zero(stage + self.b_to + i as u32 * self.b_to_step, from, if inside { 16 } else { 0 });
        });
        self.a_from = self.a_from.wrapping_add(self.bk);
        self.b_from = self.b_from.wrapping_add(self.b_slice);
    }
}

/// Runs `compute(stage)` on every slice of `k` in turn, stage by stage of `stage_bytes` from
/// the shared address `shared`, while the next two slices are copied in.
///
/// # Safety
/// Every thread of the block calls it; the copies' sources are as [`Copies::new`] was given.
#[inline(always)]
pub(super) unsafe fn pipeline<T>(copies: &mut Copies<T>, shared: u32, stage_bytes: u32, mut compute: impl FnMut(u32)) {
    const STAGES: u32 = MMA_STAGES as u32;
    let slices = ((copies.k + copies.bk - 1) / copies.bk) as u32;
    // Slices 0 and 1 go in flight first; a group is committed even when empty, so that "all
    // but the newest group" always means "all but the newest slice".
    crate::unroll!([0, 1], |s| {
        if (s as u32) < slices {
            copies.issue(shared + s as u32 * stage_bytes, s * copies.bk);
        }
        commit_copies();
    });
    let (mut stage, mut free_stage) = (0, STAGES - 1);
    for t in 0..slices {
        // Slice t has landed and, after the barrier, every warp is done with slice t - 1,
        // whose stage the copies of slice t + 2 now reuse.
        wait_copies_but_newest();
        thread::sync_threads();
        if t + STAGES - 1 < slices {
            copies.issue(shared + free_stage * stage_bytes, (t + STAGES - 1) as usize * copies.bk);
        }
        commit_copies();
        compute(stage);
        stage = if stage + 1 == STAGES { 0 } else { stage + 1 };
        free_stage = if free_stage + 1 == STAGES { 0 } else { free_stage + 1 };
    }
}

/// Two consecutive floats of `C`, stored as one 8-byte store.
#[derive(Clone, Copy)]
#[repr(C, align(8))]
struct Pair([f32; 2]);

/// Stores `C[row][col]` and `C[row][col + 1]`, those inside `C`: one 8-byte store when both
/// are and the row length is even (8-byte aligned).
#[inline(always)]
unsafe fn store_pair(c: *mut f32, (row, col): (usize, usize), (m, n): (usize, usize), x: f32, y: f32) {
    if row < m && col + 1 < n && n % 2 == 0 {
        *(c.add(row * n + col) as *mut Pair) = Pair([x, y]);
    } else if row < m && col < n {
        *c.add(row * n + col) = x;
        if col + 1 < n {
            *c.add(row * n + col + 1) = y;
        }
    }
}

/// Stores a warp's 64×64 tile of `C`, whose top-left corner is `(row0, col0)`, from each lane's
/// accumulators: tile `(i, j)` holds rows `row0 + 16i + g` and `+ 8`, columns `col0 + 8j + 2t`
/// and `+ 1`.
///
/// # Safety
/// `c` is valid for `m·n` writes.
#[inline(always)]
pub(super) unsafe fn store_tile(c: *mut f32, acc: &Accumulators, (row0, col0): (usize, usize), (m, n): (usize, usize)) {
    let lane = thread::thread_idx_x() as usize % 32;
    let (row0, col0) = (row0 + lane / 4, col0 + lane % 4 * 2);
    crate::unroll!([0, 1, 2, 3], |i| {
        crate::unroll!([0, 1, 2, 3, 4, 5, 6, 7], |j| {
            let (row, col) = (row0 + i * 16, col0 + j * 8);
            store_pair(c, (row, col), (m, n), acc[i][j][0], acc[i][j][1]);
            store_pair(c, (row + 8, col), (m, n), acc[i][j][2], acc[i][j][3]);
        });
    });
}

/// The corner of this thread's warp tile in the block tile.
#[inline(always)]
pub(super) fn warp_corner() -> (usize, usize) {
    let warp = thread::thread_idx_x() as usize / 32;
    ((warp / MMA_WARPS_N) * MMA_WARP_M, (warp % MMA_WARPS_N) * MMA_WARP_N)
}

/// # Safety
/// `a` is `m × padded(k)` and `b` is `k × padded(n)` TF32 values in f32 bits, as
/// `convert_tf32` writes them (rows padded to 8 elements), both 16-byte aligned; `c` is valid
/// for `m·n` writes, 8-byte aligned, and aliases neither. Launch: blocks of `MMA_THREADS`
/// threads, a grid of `⌈n / MMA_BN⌉ × ⌈m / MMA_BM⌉`, `TF32_SHARED_BYTES` of dynamic shared
/// memory.
#[kernel]
pub unsafe fn matmul_mma_tf32_128x256(a: &[f32], b: &[f32], c: *mut f32, m: usize, n: usize, k: usize) {
    let shared = dynamic_shared_mem::<f32>();
    let lane = thread::thread_idx_x() as usize % 32;
    let (g, t) = (lane / 4, lane % 4);
    let (warp_row, warp_col) = warp_corner();
    let to_a = |row: usize, piece: usize| ((row * TF32_A_STRIDE + piece * 4) * 4) as u32;
    let to_b = |row: usize, piece: usize| ((MMA_BM * TF32_A_STRIDE + row * TF32_B_STRIDE + piece * 4) * 4) as u32;
    let mut copies = Copies::new((a, b), (m, n, k), to_a, to_b);

    let mut acc: Accumulators = [[[0.0; 4]; 8]; 4];
    pipeline(&mut copies, shared_address(shared), (TF32_STAGE_FLOATS * 4) as u32, |stage| {
        let stage = shared.add(stage as usize * TF32_STAGE_FLOATS);
        // This lane's first elements: A[warp_row + g][t] and B[t][warp_col + g].
        let a_stage = stage.add((warp_row + g) * TF32_A_STRIDE + t);
        let b_stage = stage.add(MMA_BM * TF32_A_STRIDE + t * TF32_B_STRIDE + warp_col + g);
        crate::unroll!([0, 1, 2, 3], |kk| {
            let a_at = |row: usize, col: usize| (*a_stage.add(row * TF32_A_STRIDE + kk * 8 + col)).to_bits();
            let b_at = |row: usize, col: usize| (*b_stage.add((kk * 8 + row) * TF32_B_STRIDE + col)).to_bits();
            let mut a_frag = [[0u32; 4]; 4];
            let mut b_frag = [[0u32; 2]; 8];
            crate::unroll!([0, 1, 2, 3], |i| {
                a_frag[i] = [a_at(i * 16, 0), a_at(i * 16 + 8, 0), a_at(i * 16, 4), a_at(i * 16 + 8, 4)];
            });
            crate::unroll!([0, 1, 2, 3, 4, 5, 6, 7], |j| {
                b_frag[j] = [b_at(0, j * 8), b_at(4, j * 8)];
            });
            crate::unroll!([0, 1, 2, 3], |i| {
                crate::unroll!([0, 1, 2, 3, 4, 5, 6, 7], |j| {
                    mma_tf32_m16n8k8(&mut acc[i][j], &a_frag[i], &b_frag[j]);
                });
            });
        });
    });

    let corner =
        (thread::block_idx_y() as usize * MMA_BM + warp_row, thread::block_idx_x() as usize * MMA_BN + warp_col);
    store_tile(c, &acc, corner, (m, n));
}
