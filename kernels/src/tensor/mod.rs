//! The tensor cores, as small Rust functions around their PTX: the face of the matrix
//! instructions that the matrix-product steps (`matmul/mma_tf32.rs` and on) are written with.
//!
//! A tensor-core instruction is issued by a whole warp at once. It multiplies a small tile of
//! `A` by a small tile of `B` and adds the product to a tile of `C`, and no lane holds a whole
//! tile: each tile is spread over the 32 lanes as a *fragment*, a few registers per lane, in an
//! order the instruction fixes. For `mma.sync.m16n8k16` a lane's registers hold two elements
//! of a 16×16 slice of `A` per register, two of a 16×8 slice of `B`, and two of the 16×8 tile
//! of `C` per pair of registers (the lane's row is `lane / 4`, its columns `2·(lane % 4)`):
//!
//! ```text
//!   C fragment (m16 × n8, f32)      lane = 4·g + t        col 2t  2t+1
//!   rows 0..8:   c0 c1  of lane (g, t) at row g            c0    c1
//!   rows 8..16:  c2 c3  of lane (g, t) at row g + 8        c2    c3
//! ```
//!
//! `ldmatrix` loads fragments from shared memory: each lane names the address of one 16-byte
//! row of an 8×8 tile of 16-bit elements, and the instruction hands every lane the two elements
//! of each tile that the fragment layout puts there; `.trans` hands them out transposed, which
//! turns the rows of a row-major `B` into the columns the instruction wants. It moves 16-bit
//! elements only, so TF32 fragments are loaded from shared memory one register at a time.
//!
//! What each needs:
//! - `mma.sync` m16n8k8 (TF32) and m16n8k16 (BF16, FP16), `ldmatrix`, `cvt.rna.tf32.f32` and
//!   the packing conversions `cvt.rn.{bf16x2,f16x2}.f32`: sm_80 (Ampere) or later, so the
//!   project's `compute_80` module holds them ([`mma`]);
//! - `wgmma`, TMA, mbarrier transactions and `setmaxnreg`: sm_90a (Hopper) only, so they live
//!   in the Hopper module, the crate built with the `hopper` feature for compute_90
//!   (`ptx/build.rs`), and nowhere else ([`hopper`]).

#[cfg(feature = "hopper")]
pub mod hopper;
#[cfg(not(feature = "hopper"))]
pub mod mma;
