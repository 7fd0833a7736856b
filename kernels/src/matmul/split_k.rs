//! **Step 4d: split k.** A block of step 4c walks the whole of k for its tile. When C has few
//! tiles (64×64, 128×128, 16×4096), most SMs sit idle while a few walk a long k: 64×64×65536 is
//! one block streaming 32 MB through one SM. One long f32 sum per element is also the least
//! accurate order: its rounding error grows with the k it covers.
//!
//! **How.** Step 4c's kernel, on 64×64 tiles of 4×4 thread tiles (`interface::matmul::SPLIT_*`),
//! runs on a grid with a third dimension: layer z takes one run of k's slices
//! (`interface::matmul::split_slices`: runs of whole slices, none empty) and writes its partial
//! product, every element of its tile inside C, to layer z of a workspace of `splits × m × n`
//! floats that the host owns. The host picks `splits` so that tiles × splits fill the SMs about
//! once, each split at least `SPLIT_MIN_SLICES` slices long. Then [`matmul_split_reduce`] sums
//! the layers into C in a fixed order: no atomics, so the result is the same on every run. The
//! wgmma steps split k the same way (step H3, `wgmma.rs`), with the same reduction.
//!
//! ```text
//!   grid z = 0: A[:, k0..k1] × B[k0..k1, :] ──► partials[0]  ┐
//!   grid z = 1: A[:, k1..k2] × B[k1..k2, :] ──► partials[1]  ├─ reduce ──► C
//!   …                                                         │
//!   grid z = S−1                             ──► partials[S−1]┘
//! ```
//!
//! **The reduction.** C is small here, so its quads alone would give few threads, each with a
//! long chain of dependent loads and adds. Instead `groups` threads share a quad (a power of two
//! near `splits / 4`, `interface::matmul::reduce_groups`): thread `g` of a quad sums partials
//! `g, g + groups, …`, four loads in flight at a time, in that order; the group's sums meet in
//! shared memory, and the quad's first thread adds them in order of `g` and stores the quad.
//! A block is `REDUCE_THREADS` threads: `REDUCE_THREADS / groups` quads, each warp's loads
//! contiguous. With 128 splits of a 64×64 C (2 MB of partials) that is 128 blocks of four loads
//! a thread, where one thread per quad would be 4 blocks of 128 loads each.

use super::double_buffer::matmul_vec4;
use super::interior_block;
use crate::{read_quad, store_quad, Quad};
use cuda_std::prelude::*;
use cuda_std::shared_array;
use interface::matmul::{
    reduce_groups, split_slices, REDUCE_THREADS, SPLIT_BK, SPLIT_BM, SPLIT_BN, SPLIT_TM, SPLIT_TN,
};

/// Layer `blockIdx.z` of the product over split `blockIdx.z` of `gridDim.z` splits of k's
/// slices: the tile at block (`blockIdx.y`, `blockIdx.x`) of `A[:, k0..k1] × B[k0..k1, :]` into
/// `c[z·m·n ..]`. A grid of one layer is the whole product into C.
///
/// # Safety
/// `a.len() >= m·k`, `b.len() >= k·n`; `c` valid for `gridDim.z·m·n` writes and aliasing
/// neither; `a`, `b`, `c` 16-byte aligned. `gridDim.z` leaves no split empty
/// (`split_count(⌈k / SPLIT_BK⌉, gridDim.z) == gridDim.z`). Launch (`SPLIT_TILE`): blocks of
/// `SPLIT_THREADS`, a grid of `⌈n / SPLIT_BN⌉ × ⌈m / SPLIT_BM⌉ × splits`, `SPLIT_SHARED_BYTES`
/// of dynamic shared memory.
#[kernel]
pub unsafe fn matmul_vec4_64x64_split(a: &[f32], b: &[f32], c: *mut f32, m: usize, n: usize, k: usize) {
    let split = thread::block_idx_z() as usize;
    let (first, count) = split_slices((k + SPLIT_BK - 1) / SPLIT_BK, split, thread::grid_dim_z() as usize);
    let run = (first * SPLIT_BK, ((first + count) * SPLIT_BK).min(k));
    // A layer is 16-byte aligned where C's rows are (`interior_block` asks n % 4 == 0).
    let layer = c.add(split * m * n);
    // k a whole number of slices makes every run one too.
    if interior_block(SPLIT_BM, SPLIT_BN, SPLIT_BK, m, n, k) {
        matmul_vec4::<SPLIT_BM, SPLIT_BN, SPLIT_BK, SPLIT_TM, SPLIT_TN, false>(a, b, layer, m, n, k, run);
    } else {
        matmul_vec4::<SPLIT_BM, SPLIT_BN, SPLIT_BK, SPLIT_TM, SPLIT_TN, true>(a, b, layer, m, n, k, run);
    }
}

/// The quad of floats at `p`: one 16-byte load when `vector` (the row of quads is aligned and
/// whole), else the `valid` floats there one at a time, zeros past them.
///
/// # Safety
/// `p` is 16-byte aligned when `vector`; the first `min(valid, 4)` floats there (all four when
/// `vector`) are readable.
#[inline(always)]
unsafe fn load(p: *const f32, valid: usize, vector: bool) -> [f32; 4] {
    if vector {
        return read_quad(p, 0).0;
    }
    // Each element chosen in a register: an array filled element by element would live in
    // local memory.
    let at = |j: usize| if j < valid { *p.add(j) } else { 0.0 };
    [at(0), at(1), at(2), at(3)]
}

/// `sum + v`, element by element.
#[inline(always)]
fn add(sum: &mut [f32; 4], v: [f32; 4]) {
    crate::unroll!([0, 1, 2, 3], |j| {
        sum[j] += v[j];
    });
}

/// `C[e] = Σ_s partials[s·len + e]` for every `e < len`, the splits summed as the module says.
///
/// # Safety
/// `partials` holds at least `splits·len` floats and `c` is valid for `len` writes and overlaps
/// none of them; both start 16-byte aligned when `len` is a multiple of 4. `splits` and `len` are
/// at least 1. Launch: 1D blocks of `REDUCE_THREADS` threads, a 1D grid of at least
/// `⌈len / (4 · REDUCE_THREADS / reduce_groups(splits))⌉` blocks, no dynamic shared memory.
#[kernel]
pub unsafe fn matmul_split_reduce(partials: &[f32], c: *mut f32, len: usize, splits: usize) {
    let groups = reduce_groups(splits);
    let quads = REDUCE_THREADS / groups;
    let tid = thread::thread_idx_x() as usize;
    let (group, lane) = (tid / quads, tid % quads);
    let first = 4 * (thread::block_idx_x() as usize * quads + lane);
    let (vector, valid) = (len % 4 == 0, len.saturating_sub(first));
    let p = partials.as_ptr().add(first);
    let mut sum = [0.0f32; 4];
    if valid > 0 {
        // Four partials in flight, then added in order; the rest one at a time.
        let mut s = group;
        while s + 3 * groups < splits {
            let v0 = load(p.add(s * len), valid, vector);
            let v1 = load(p.add((s + groups) * len), valid, vector);
            let v2 = load(p.add((s + 2 * groups) * len), valid, vector);
            let v3 = load(p.add((s + 3 * groups) * len), valid, vector);
            add(&mut sum, v0);
            add(&mut sum, v1);
            add(&mut sum, v2);
            add(&mut sum, v3);
            s += 4 * groups;
        }
        while s < splits {
            add(&mut sum, load(p.add(s * len), valid, vector));
            s += groups;
        }
    }
    if groups > 1 {
        let shared = shared_array![Quad<f32>; REDUCE_THREADS];
        *shared.add(tid) = Quad(sum);
        thread::sync_threads();
        if group == 0 {
            for g in 1..groups {
                add(&mut sum, (*shared.add(g * quads + lane)).0);
            }
        }
    }
    if group != 0 || valid == 0 {
        return;
    }
    if vector {
        store_quad(c, first / 4, Quad(sum));
    } else {
        crate::unroll!([0, 1, 2, 3], |j| {
            if j < valid {
                *c.add(first + j) = sum[j];
            }
        });
    }
}
