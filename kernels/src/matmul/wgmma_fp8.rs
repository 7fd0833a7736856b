//! Step H4, FP8: `wgmma_persistent.rs`'s grid on one-byte inputs. A (m×k) and Bᵀ (n×k) arrive
//! in e4m3 (`convert_fp8.rs`: scaled per tensor, rounded, rows padded to 16 bytes), the
//! products accumulate in f32, and the epilogue multiplies C by the two tensors' scales.
//!
//! **What FP8 changes.** An element is one byte, so the same 128-byte swizzled row of a stage
//! holds 128 of k (`BK_FP8`), twice BF16's: the same ring, roles, boxes (A 128×128 bytes, B
//! four of 64×128) and shared memory move twice the k per stage, and each `m64n256k32`
//! instruction takes 32 of k where BF16's took 16, at twice the tensor cores' rate. FP8's
//! wgmma reads both operands contiguous along k only (it has no transpose flags), so B comes
//! as Bᵀ and its boxes are laid out exactly as A's, as TF32's are: a k-step moves both
//! descriptors 32 bytes along every row.
//!
//! ```text
//!   stage s:  [ A 128 rows × 128 k (16 KiB) | Bᵀ 4 × (64 rows × 128 k) (32 KiB) ]
//!   k-step kk (0..4): A and Bᵀ descriptors + 32·kk bytes; one m64n256k32 each
//! ```
//!
//! **The scales.** The tensor cores multiply the rounded values `q_a = a / scale_a` and
//! `q_b = b / scale_b`; once a tile's accumulators are complete, each is multiplied by
//! `scale_a · scale_b` before the store (`Mma::finish`), so C is the product of the
//! dequantized inputs.
//!
//! **Edges** are `wgmma.rs`'s: the tensor maps carry the true m, n, k, TMA fills what lies
//! outside with zeros, and only the stores check bounds.

use super::wgmma::{k_major_descriptor, Input, Mma, Wide};
use super::wgmma_persistent::matmul_wgmma_persistent;
use crate::tensor::hopper::TensorMap;
use crate::unrolled;
use core::arch::asm;
use cuda_std::prelude::*;
use interface::wgmma::BK_FP8;

/// One placeholder per accumulator after the first.
macro_rules! accumulator_slot {
    ($i:expr) => {
        ", {}"
    };
}

/// `wgmma.mma_async.m64n256k32.f32.e4m3.e4m3` on the accumulators `$d[e]` for each listed `e`,
/// one in-out register each; `imm-scale-a` and `imm-scale-b` 1 (no negation), no transpose
/// flags (FP8 takes none).
macro_rules! wgmma_e4m3 {
    ($d:ident, $a:ident, $b:ident, $scale:ident, [$first:expr $(, $i:expr)*]) => {
        asm!(
            concat!(
                "{{ .reg .pred p; setp.ne.b32 p, {s}, 0; wgmma.mma_async.sync.aligned.m64n256k32.f32.e4m3.e4m3 {{{}",
                $(accumulator_slot!($i),)*
                "}}, {a}, {b}, p, 1, 1; }}"
            ),
            inout(reg32) $d[$first],
            $(inout(reg32) $d[$i],)*
            a = in(reg64) $a,
            b = in(reg64) $b,
            s = in(reg32) $scale,
        )
    };
}

/// `D (64×256, f32) = A (64×32, e4m3) · B (32×256, e4m3) + (accumulate ? D : 0)`, the
/// accumulators laid out as `tensor::hopper::wgmma_m64n256k16_bf16`'s (their bits in `d`).
///
/// # Safety
/// All 128 threads of an aligned warpgroup call it together with the same descriptors, after
/// `wgmma_fence`; `a` describes a 64×32 tile of A and `b` a 32×256 tile of B, both contiguous
/// along k (B as rows of Bᵀ) with the 128-byte swizzle, in shared memory that holds them and
/// stays unchanged until a `wgmma_wait` covers this product; `d` is not touched by other
/// instructions until then either.
#[inline(always)]
unsafe fn wgmma_m64n256k32_e4m3(d: &mut [u32; 128], a: u64, b: u64, accumulate: bool) {
    let scale = accumulate as u32;
    crate::count_up!([x x x x x x x] 1, [0], wgmma_e4m3!(d, a, b, scale,));
}

/// e4m3 on both sides: Bᵀ, contiguous along k like A; a k-step is 32 bytes along every row.
struct E4m3;

impl Input for E4m3 {
    const BK: usize = BK_FP8;
    #[inline(always)]
    fn b_box(k0: usize, n: usize) -> (i32, i32) {
        (k0 as i32, n as i32)
    }
    #[inline(always)]
    fn b_descriptor(b: u32, kk: u32) -> u64 {
        k_major_descriptor(b, kk)
    }
}

impl Mma<Wide> for E4m3 {
    #[inline(always)]
    unsafe fn mma(acc: &mut [u32; 128], a: u64, b: u64, accumulate: bool) {
        wgmma_m64n256k32_e4m3(acc, a, b, accumulate);
    }
    #[inline(always)]
    fn finish(acc: &mut [u32; 128], scale: f32) {
        crate::count_up!(
            [x x x x x x x] 1,
            [0],
            unrolled!(i, {
                acc[i] = (f32::from_bits(acc[i]) * scale).to_bits();
            })
        );
    }
}

/// # Safety
/// `maps` is the address, in global memory and 64-byte aligned, of two tensor maps with the
/// 128-byte swizzle over readable memory: A's (one-byte elements, dimensions {k, m}, rows
/// padded to a multiple of 16 bytes, box {BK_FP8, BM}) and Bᵀ's ({k, n}: B transposed, n rows
/// of k, box {BK_FP8, BOX_N}). Launch: on an sm_90a device, blocks of `THREADS` threads, any
/// number of them across (the host gives one per SM over all layers, at most one per tile of
/// `BM × BN`) and `splits` deep, leaving no split of the `⌈k / BK_FP8⌉` slices empty,
/// `SHARED_BYTES` of dynamic shared memory. `c` is valid for `splits·m·n` f32 writes, overlaps
/// neither map's memory, and starts 16-byte aligned when `n` is a multiple of 4 (the epilogue
/// then stores four floats at once).
#[kernel]
pub unsafe fn matmul_wgmma_e4m3(
    maps: *const TensorMap,
    c: *mut f32,
    m: usize,
    n: usize,
    k: usize,
    scale_a: f32,
    scale_b: f32,
) {
    matmul_wgmma_persistent::<E4m3, Wide>(maps, c, m, n, k, scale_a * scale_b);
}
