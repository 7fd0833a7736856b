//! SGEMM, `C = A × B` for row-major f32 matrices (`A` is m×k, `B` is k×n), as a ladder: one
//! file per step, each adding one idea to the step before, so that a diff of two neighbouring
//! files shows that idea and nothing else. `host matmul` runs every step on the same inputs and
//! checks each against the CPU; `bench/twins/matmul/` has the same steps in CUDA C.
//!
//! <!-- ladder-table:start -->
//! | step | file | kernel | idea | TFLOP/s | × cuBLAS |
//! |---|---|---|---|---:|---:|
//! | 1 | `naive.rs` | `matmul_naive` | one thread per output | 5.0 | 0.10 |
//! | 2 | `tiled.rs` | `matmul_tiled_16` | shared-memory tiles, 16×16 | 8.1 | 0.16 |
//! | 2 | `tiled.rs` | `matmul_tiled_32` | shared-memory tiles, 32×32 | 8.2 | 0.16 |
//! | 3 | `blocked.rs` | `matmul_blocked_128x128` | 8×8 outputs per thread, in registers | 26.9 | 0.53 |
//! | 4a | `vector_loads.rs` | `matmul_vload_128x128` | 16-byte global loads and stores | 30.5 | 0.60 |
//! | 4b | `shared_layout.rs` | `matmul_vshared_128x128` | 4×4 groups spread over the tile: conflict-free 16-byte shared loads | 33.7 | 0.66 |
//! | 4c | `double_buffer.rs` | `matmul_vec4_128x128` | double buffering through registers | 44.4 | 0.87 |
//! | 5a | `cp_async.rs` | `matmul_cp_async_128x128` | `cp.async` copies, two stages | 35.4 | 0.69 |
//! | 5b | `warp_tiles.rs` | `matmul_warps_128x256` | three stages, warp tiles, 8×16 outputs per thread | 45.6 | 0.89 |
//! | 5c | `scheduled.rs` | `matmul_async_128x256` | scheduled for ptxas | 52.3 | 1.02 |
//! | 6a | `mma_tf32.rs` | `matmul_mma_tf32_128x256` | tensor cores: `mma.sync` in TF32, padded shared rows | 166.3 | 0.41 |
//! | 6b | `mma_ldmatrix.rs` | `matmul_mma_bf16_128x256` | BF16, `ldmatrix`, a swizzled shared layout | 392.5 | 0.52 |
//! | 6b | `mma_ldmatrix.rs` | `matmul_mma_f16_128x256` | the same kernel in FP16 | 392.0 | 0.53 |
//! <!-- ladder-table:end -->
//!
//! TFLOP/s at 4096³ from the twins run that `docs/performance.md` dates, and the fraction of
//! cuBLAS's FP32 SGEMM (TF32 off) from the library peers' run it dates, on the same GPU model
//! (the same session unless the two dates differ); for the tensor-core steps
//! (`host matmul --dtype tf32|bf16|f16`, inputs converted once by `convert.rs`), of cuBLAS's
//! `cublasGemmEx` in the same type, f32 accumulation and output.
//!
//! Step 4d, `split_k.rs` (`matmul_vec4_64x64_split`, with the reduction `matmul_split_reduce`),
//! is for long k on few tiles of C, and step 5d, `split_async.rs` (`matmul_async_128x256_split`,
//! the same reduction), for a mid-sized C with too few of step 5c's tiles to fill the SMs, so
//! neither has a row at 4096³; `docs/performance.md` times both beside their twins at the
//! shapes they are for.
//!
//! Every kernel has the same parameters, `(a, b, c, m, n, k)` (the tensor-core steps take `A`
//! and `B` in their own type, rows padded), so the host binds them once per input type,
//! and each states in its `# Safety` section what its launcher guarantees: the lengths of `a`
//! and `b`, that `c` holds `m·n` floats and aliases neither, and the launch shape the host
//! computes from `interface::matmul`. Every step is correct for any m, n, k ≥ 1.
//!
//! The helpers below serve the steps from 4a on: 16-byte accesses of global memory, and the
//! test that lets a block skip every bounds check (step 4a explains both).

pub mod blocked;
pub mod convert;
pub mod cp_async;
pub mod double_buffer;
pub mod mma_ldmatrix;
pub mod mma_tf32;
pub mod naive;
pub mod scheduled;
pub mod shared_layout;
pub mod split_async;
pub mod split_k;
pub mod tiled;
pub mod vector_loads;
pub mod warp_tiles;

use crate::Quad;
use cuda_std::thread;

/// Four floats moved as one 16-byte load or store (`ld.global.v4.f32`, `ld.shared.v4.f32`).
type Float4 = Quad<f32>;

/// Four consecutive elements from `p`, zero past the first `valid`: one 16-byte load when
/// all four exist and `aligned` (the row length is a multiple of 4, so `p` is 16-byte
/// aligned), else one element at a time.
#[inline(always)]
unsafe fn load4(p: *const f32, valid: usize, aligned: bool) -> Float4 {
    if valid >= 4 && aligned {
        *(p as *const Float4)
    } else {
        let mut v = [0.0f32; 4];
        for j in 0..4 {
            if j < valid {
                v[j] = *p.add(j);
            }
        }
        Quad(v)
    }
}

/// Whether this block's `bm × bn` tile of C lies inside C, on rows 16-byte aligned, with `k` a
/// whole number of `bk` slices: then it needs no bounds checks at all.
#[inline(always)]
fn interior_block(bm: usize, bn: usize, bk: usize, m: usize, n: usize, k: usize) -> bool {
    (thread::block_idx_y() as usize + 1) * bm <= m
        && (thread::block_idx_x() as usize + 1) * bn <= n
        && k % bk == 0
        && n % 4 == 0
}

/// Stores `v` at `C[row][col .. col + 4]`: one 16-byte store when unchecked or when all four
/// lie inside C on an aligned row, else the elements inside C one at a time.
#[inline(always)]
unsafe fn store_c4<const CHECKED: bool>(c: *mut f32, row: usize, col: usize, m: usize, n: usize, v: &Float4) {
    if !CHECKED || (row < m && col + 4 <= n && n % 4 == 0) {
        *(c.add(row * n + col) as *mut Float4) = *v;
    } else {
        for j in 0..4 {
            if row < m && col + j < n {
                *c.add(row * n + col + j) = v.0[j];
            }
        }
    }
}
