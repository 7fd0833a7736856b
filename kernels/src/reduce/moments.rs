//! The moments of the values inside a window, in one pass: how many lie inside, how many are
//! NaN, their mean, their M2 (sum of squared deviations from the mean, `n·σ²`), their minimum
//! and maximum. κσ clipping asks for these on each round's window (`interface::window`:
//! `low < v < high` in f64, NaN in none), and the values are read once, so the variance cannot
//! come from a second pass over them as the CPU's `np.std` does.
//!
//! **Why not Σv and Σv².** `M2 = Σv² − (Σv)²/n` subtracts two numbers of size `n·mean²` to get
//! one of size `n·σ²`: a radio image's pixels sit at a mean far from zero against their noise,
//! and on 2^30 values the subtraction keeps `16 − log10(mean²/σ²)` digits at best, after every
//! rounding of the two sums has been multiplied up by that same ratio.
//!
//! **What is done instead, and why it stays accurate.**
//! - Per thread, shifted sums in f64: the thread's first member `s` is its shift, and it adds
//!   `d = v − s` and `d²` (one `fma`). The shift is a value of the same data, so `d` is of the
//!   size of the spread, not of the mean, and `Σd² − (Σd)²/n` loses only
//!   `log10(1 + (mean − s)²/σ²)` digits: none to speak of, where Welford's update would spend
//!   an f64 division on every value. A thread's count, mean `s + Σd/n` and M2 then go on.
//! - Across threads, warps and blocks, Chan's merge of two (count, mean, M2) triples:
//!   `δ = mean_b − mean_a`, `mean = mean_a + δ·n_b/n`, `M2 = M2_a + M2_b + δ²·n_a·n_b/n`.
//!   Only deviations are added, never raw squares, so no stage cancels; and merging is a tree
//!   (shuffles, then blocks), so each rounding touches a value a logarithmic number of times.
//! - Everything in f64, partials included: each block writes its `MOMENTS_FIELDS` values to
//!   `partials`, the last block (the ticket of [`crate::last_block`]) merges them and writes the
//!   result. On 2^30 values the relative error of M2 stays near `1e-13`, far inside the `1e-6`
//!   asked of σ; an f32 accumulator would already lose that on 2^24 values.
//!
//! The loads are [`super::vec4`]'s: `MOMENTS_QUADS_PER_PASS` 16-byte loads in flight per thread,
//! grid-stride. Each value then takes a few f64 operations, still fewer than the memory allows.

use super::Shuffle;
use crate::last_block;
use crate::{global_index, grid_threads, load_quad, unroll, Quad};
use cuda_std::prelude::*;
use cuda_std::shared_array;
use cuda_std::GpuFloat;
use interface::reduce::{Moments, BLOCK, MOMENTS_FIELDS, MOMENTS_QUADS_PER_PASS, WARPS};
use interface::window::Window;

// The pass below unrolls over a literal list of this length, and the fields' stores and loads
// over one of `MOMENTS_FIELDS`.
const _: () = assert!(MOMENTS_QUADS_PER_PASS == 4 && MOMENTS_FIELDS == 6);

/// Chan's merge ([`Moments::merge`]) with the GPU's fused multiply-add.
#[inline(always)]
fn merge(a: Moments, b: Moments) -> Moments {
    a.merge(b, <f64 as GpuFloat>::mul_add)
}

impl Shuffle for Moments {
    #[inline(always)]
    unsafe fn shuffle_down(self, delta: u32) -> Moments {
        Moments {
            count: self.count.shuffle_down(delta),
            nan: self.nan.shuffle_down(delta),
            mean: self.mean.shuffle_down(delta),
            m2: self.m2.shuffle_down(delta),
            min: self.min.shuffle_down(delta),
            max: self.max.shuffle_down(delta),
        }
    }
}

/// `m` merged over the warp, in lane 0 (the shuffle tree of [`super::warp_sum`]).
#[inline(always)]
unsafe fn warp_merge(m: Moments) -> Moments {
    let mut m = m;
    unroll!([16, 8, 4, 2, 1], |delta| {
        m = merge(m, m.shuffle_down(delta as u32));
    });
    m
}

/// `m` merged over the block, in thread 0 (as [`super::block_sum`]).
#[inline(always)]
unsafe fn block_merge(m: Moments, totals: *mut Moments) -> Moments {
    let tid = thread::thread_idx_x() as usize;
    let (warp, lane) = (tid / 32, tid % 32);
    let m = warp_merge(m);
    if lane == 0 {
        *totals.add(warp) = m;
    }
    thread::sync_threads();
    let mut total = Moments::EMPTY;
    if warp == 0 {
        total = warp_merge(if lane < WARPS { *totals.add(lane) } else { Moments::EMPTY });
    }
    total
}

/// Writes the fields of `m` to `out[0..MOMENTS_FIELDS]` as f64.
#[inline(always)]
unsafe fn store(m: Moments, out: *mut f64) {
    let fields = m.fields();
    unroll!([0, 1, 2, 3, 4, 5], |i| {
        *out.add(i) = fields[i];
    });
}

/// Reads what [`store`] wrote in another block during this launch (volatile: not from a stale
/// cache line).
#[inline(always)]
unsafe fn load(from: *const f64) -> Moments {
    let mut fields = [0.0; MOMENTS_FIELDS];
    unroll!([0, 1, 2, 3, 4, 5], |i| {
        fields[i] = core::ptr::read_volatile(from.add(i));
    });
    Moments::from_fields(fields)
}

/// One thread's running sums: its members' count, `Σd` and `Σd²` with `d = v − shift`, the
/// shift being its first member.
struct Shifted {
    count: u64,
    nan: u64,
    shift: f64,
    sum: f64,
    squares: f64,
    min: f32,
    max: f32,
}

impl Shifted {
    #[inline(always)]
    fn add(&mut self, v: f32, window: Window) {
        if v.is_nan() {
            self.nan += 1;
        } else if window.contains(v) {
            let x = v as f64;
            if self.count == 0 {
                self.shift = x;
            }
            let d = x - self.shift;
            self.sum += d;
            self.squares = d.mul_add(d, self.squares);
            self.count += 1;
            self.min = self.min.min(v);
            self.max = self.max.max(v);
        }
    }

    #[inline(always)]
    fn add_quad(&mut self, q: Quad<f32>, window: Window) {
        unroll!([0, 1, 2, 3], |j| {
            self.add(q.0[j], window);
        });
    }

    /// The thread's moments: mean `shift + Σd/n`, M2 `Σd² − Σd·(Σd/n)`.
    #[inline(always)]
    fn moments(&self) -> Moments {
        let mean_d = if self.count == 0 { 0.0 } else { self.sum / self.count as f64 };
        let m2 = (-self.sum).mul_add(mean_d, self.squares);
        Moments {
            count: self.count,
            nan: self.nan,
            mean: self.shift + mean_d,
            // Σd² ≥ (Σd)²/n exactly; rounding may not go below 0.
            m2: if m2 < 0.0 { 0.0 } else { m2 },
            min: self.min,
            max: self.max,
        }
    }
}

/// # Safety
/// The launcher (`MomentsArgs` on the host) guarantees: `values` starts 16-byte aligned and
/// holds fewer than 2^53 values; `low` and `high` are not NaN; a one-dimensional grid of any
/// number of blocks of `BLOCK` threads (the loop is grid-stride); `partials` holds
/// `MOMENTS_FIELDS` f64 per block, `result` `MOMENTS_FIELDS`, `ticket` one `u32` at 0, and none
/// overlaps another or the values.
#[kernel]
pub unsafe fn reduce_moments(
    values: &[f32],
    low: f64,
    high: f64,
    partials: *mut f64,
    ticket: *mut u32,
    result: *mut f64,
) {
    let window = Window::new(low, high);
    let totals = shared_array![Moments; WARPS];
    let empty = Moments::EMPTY;
    let mut own =
        Shifted { count: 0, nan: 0, shift: 0.0, sum: 0.0, squares: 0.0, min: empty.min, max: empty.max };
    let quads = values.len() / 4;
    let stride = grid_threads();
    let mut q = global_index();
    while q + (MOMENTS_QUADS_PER_PASS - 1) * stride < quads {
        let mut pass = [Quad([0.0f32; 4]); MOMENTS_QUADS_PER_PASS];
        unroll!([0, 1, 2, 3], |j| {
            pass[j] = load_quad(values, q + j * stride);
        });
        unroll!([0, 1, 2, 3], |j| {
            own.add_quad(pass[j], window);
        });
        q += MOMENTS_QUADS_PER_PASS * stride;
    }
    while q < quads {
        own.add_quad(load_quad(values, q), window);
        q += stride;
    }
    let tail = 4 * quads + global_index();
    if tail < values.len() {
        own.add(*values.get_unchecked(tail), window);
    }

    let block = block_merge(own.moments(), totals);
    let tid = thread::thread_idx_x() as usize;
    if tid == 0 {
        store(block, partials.add(thread::block_idx_x() as usize * MOMENTS_FIELDS));
    }
    if !last_block(ticket) {
        return;
    }
    let merged = shared_array![Moments; WARPS];
    let blocks = thread::grid_dim_x() as usize;
    let mut acc = Moments::EMPTY;
    let mut b = tid;
    while b < blocks {
        acc = merge(acc, load(partials.add(b * MOMENTS_FIELDS)));
        b += BLOCK;
    }
    let total = block_merge(acc, merged);
    if tid == 0 {
        store(total, result);
    }
}
