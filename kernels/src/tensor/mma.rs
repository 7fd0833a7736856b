//! `mma.sync`, `ldmatrix` and the conversions into the tensor cores' input types: sm_80
//! instructions, wrapped one per function. The fragment layouts are those of the PTX ISA's
//! "Matrix fragments for mma.m16n8k8 / mma.m16n8k16"; below, `g = lane / 4` and `t = lane % 4`.
//!
//! Every value crosses the `asm!` boundary as a 32-bit register (`reg32`): the codegen maps
//! it to `.b32`, which PTX accepts wherever a 32-bit type (`.f32`, packed `.bf16x2`) is asked
//! for. Accumulators are `f32` outside and their bits inside, which costs no instruction.

use core::arch::asm;

/// `D = A·B + D` for one m16n8k8 tile in TF32, accumulated in f32
/// (`mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32`).
///
/// Registers, each an element (TF32 data in f32 bits, the low 13 mantissa bits ignored):
/// - `a`: `A[g][t]`, `A[g + 8][t]`, `A[g][t + 4]`, `A[g + 8][t + 4]` of the 16×8 `A` tile;
/// - `b`: `B[t][g]`, `B[t + 4][g]` of the 8×8 `B` tile (`.col`: a lane holds a column);
/// - `acc`: `C[g][2t]`, `C[g][2t + 1]`, `C[g + 8][2t]`, `C[g + 8][2t + 1]` of the 16×8 tile.
///
/// # Safety
/// All 32 lanes of the warp call it together, with no lane diverged (`.sync.aligned`).
#[inline(always)]
pub unsafe fn mma_tf32_m16n8k8(acc: &mut [f32; 4], a: &[u32; 4], b: &[u32; 2]) {
    let mut d = [acc[0].to_bits(), acc[1].to_bits(), acc[2].to_bits(), acc[3].to_bits()];
    asm!(
        "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {{{d0}, {d1}, {d2}, {d3}}}, {{{a0}, {a1}, {a2}, {a3}}}, {{{b0}, {b1}}}, {{{d0}, {d1}, {d2}, {d3}}};",
        d0 = inout(reg32) d[0], d1 = inout(reg32) d[1], d2 = inout(reg32) d[2], d3 = inout(reg32) d[3],
        a0 = in(reg32) a[0], a1 = in(reg32) a[1], a2 = in(reg32) a[2], a3 = in(reg32) a[3],
        b0 = in(reg32) b[0], b1 = in(reg32) b[1],
        options(nomem, nostack),
    );
    *acc = [f32::from_bits(d[0]), f32::from_bits(d[1]), f32::from_bits(d[2]), f32::from_bits(d[3])];
}

/// A 16-bit input type of the tensor cores, and its m16n8k16 product accumulated in f32.
///
/// Registers of [`Mma16::mma`], each two elements, the lower-indexed one in the low half:
/// - `a`: `A[g][2t..2t+2]`, `A[g + 8][2t..2t+2]`, `A[g][2t+8..2t+10]`, `A[g + 8][2t+8..2t+10]`
///   of the 16×16 `A` tile: the four 8×8 quarters in the order top-left, bottom-left,
///   top-right, bottom-right, which is the order `ldmatrix.x4` loads them in;
/// - `b`: `B[2t..2t+2][g]`, `B[2t+8..2t+10][g]` of the 16×8 `B` tile;
/// - `acc`: as [`mma_tf32_m16n8k8`]'s.
pub trait Mma16 {
    /// `D = A·B + D` (`mma.sync.aligned.m16n8k16.row.col.f32.{bf16,f16}.{bf16,f16}.f32`).
    ///
    /// # Safety
    /// All 32 lanes of the warp call it together, with no lane diverged.
    unsafe fn mma(acc: &mut [f32; 4], a: &[u32; 4], b: &[u32; 2]);

    /// Two f32 rounded to nearest (even) and packed, `lo` in the low half
    /// (`cvt.rn.bf16x2.f32` or `cvt.rn.f16x2.f32`; f16 overflows to infinity).
    fn pack(lo: f32, hi: f32) -> u32;
}

/// bfloat16: f32's 8-bit exponent, 8 significant bits.
pub struct Bf16;
/// IEEE half precision: a 5-bit exponent, 11 significant bits.
pub struct F16;

/// The two types' [`Mma16`]: the same instructions, with the type's name in them.
macro_rules! mma16 {
    ($type:ty, $name:literal) => {
        impl Mma16 for $type {
            #[inline(always)]
            unsafe fn mma(acc: &mut [f32; 4], a: &[u32; 4], b: &[u32; 2]) {
                let mut d = [acc[0].to_bits(), acc[1].to_bits(), acc[2].to_bits(), acc[3].to_bits()];
                asm!(
                    concat!(
                        "mma.sync.aligned.m16n8k16.row.col.f32.", $name, ".", $name, ".f32 ",
                        "{{{d0}, {d1}, {d2}, {d3}}}, {{{a0}, {a1}, {a2}, {a3}}}, {{{b0}, {b1}}}, {{{d0}, {d1}, {d2}, {d3}}};"
                    ),
                    d0 = inout(reg32) d[0], d1 = inout(reg32) d[1], d2 = inout(reg32) d[2], d3 = inout(reg32) d[3],
                    a0 = in(reg32) a[0], a1 = in(reg32) a[1], a2 = in(reg32) a[2], a3 = in(reg32) a[3],
                    b0 = in(reg32) b[0], b1 = in(reg32) b[1],
                    options(nomem, nostack),
                );
                *acc = [f32::from_bits(d[0]), f32::from_bits(d[1]), f32::from_bits(d[2]), f32::from_bits(d[3])];
            }

            #[inline(always)]
            fn pack(lo: f32, hi: f32) -> u32 {
                let out: u32;
                // SAFETY: a register-to-register conversion; `cvt` puts its first source in the
                // high half.
                unsafe {
                    asm!(
                        concat!("cvt.rn.", $name, "x2.f32 {o}, {h}, {l};"),
                        o = out(reg32) out, h = in(reg32) hi.to_bits(), l = in(reg32) lo.to_bits(),
                        options(pure, nomem, nostack),
                    )
                };
                out
            }
        }
    };
}

mma16!(Bf16, "bf16");
mma16!(F16, "f16");

/// `x` rounded to TF32 (10 explicit mantissa bits), to nearest with ties away from zero, the
/// low 13 bits zero (`cvt.rna.tf32.f32`): what the tensor cores then read exactly.
#[inline(always)]
pub fn to_tf32(x: f32) -> f32 {
    let out: u32;
    // SAFETY: a register-to-register conversion.
    unsafe {
        asm!("cvt.rna.tf32.f32 {o}, {i};", o = out(reg32) out, i = in(reg32) x.to_bits(), options(pure, nomem, nostack))
    };
    f32::from_bits(out)
}

/// Four 8×8 tiles of 16-bit elements from shared memory into fragments
/// (`ldmatrix.sync.aligned.m8n8.x4.shared.b16`). Lane `l` gives in `row` the shared address of
/// row `l % 8` of tile `l / 8` (16 contiguous bytes); register `i` of every lane receives
/// elements `2t, 2t + 1` of row `g` of tile `i`.
///
/// # Safety
/// All 32 lanes call it together; every `row` is a 16-byte aligned shared address of 16 bytes
/// that no thread writes until a barrier follows.
#[inline(always)]
pub unsafe fn ldmatrix_x4(row: u32) -> [u32; 4] {
    let (r0, r1, r2, r3): (u32, u32, u32, u32);
    asm!(
        "ldmatrix.sync.aligned.m8n8.x4.shared.b16 {{{r0}, {r1}, {r2}, {r3}}}, [{p}];",
        r0 = out(reg32) r0, r1 = out(reg32) r1, r2 = out(reg32) r2, r3 = out(reg32) r3,
        p = in(reg32) row,
        options(readonly, nostack),
    );
    [r0, r1, r2, r3]
}

/// [`ldmatrix_x4`] transposed (`.trans`): register `i` receives elements `(2t, g)` and
/// `(2t + 1, g)` of tile `i`, that is a column of the tile as the rows were given. From a
/// row-major `B` (rows along `k`), these are the `.col` fragments of [`Mma16::mma`].
///
/// # Safety
/// As [`ldmatrix_x4`].
#[inline(always)]
pub unsafe fn ldmatrix_x4_trans(row: u32) -> [u32; 4] {
    let (r0, r1, r2, r3): (u32, u32, u32, u32);
    asm!(
        "ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {{{r0}, {r1}, {r2}, {r3}}}, [{p}];",
        r0 = out(reg32) r0, r1 = out(reg32) r1, r2 = out(reg32) r2, r3 = out(reg32) r3,
        p = in(reg32) row,
        options(readonly, nostack),
    );
    [r0, r1, r2, r3]
}
