//! Hopper's tensor cores: `C = A × B` with A (m×k) and B (k×n) row-major in BF16 or FP16 (for
//! TF32, B arrives as Bᵀ, n×k), the products accumulated and written in f32, on `wgmma.mma_async` fed by TMA copies through a
//! ring of mbarrier-guarded shared-memory stages. The instructions are wrapped, with what each
//! requires, in `tensor::hopper`.
//!
//! **Roles.** A block of three warpgroups computes a `BM × BN` (128×256) tile of C. Warpgroup
//! 0 is the *producer*: its first warp waits for a free stage for each `BK` (64) slice of k,
//! and one lane it elects (`elect.sync`) issues one TMA copy of A's 128×64 box and four of B's
//! 64×64 boxes into it; the rest of the warpgroup has nothing to do, so it gives its registers
//! away (`setmaxnreg.dec`). A whole warp rather than one thread runs the loop so that ptxas
//! sees it converged and keeps its counters in uniform registers: with one thread under `if`,
//! the loop's arithmetic and its move to the TMA's operands made the producer slow enough to
//! hold back tiles whose slices the consumers finish quickly. Warpgroups
//! 1 and 2 are the *consumers*: each owns 64 rows of the tile, holds its 64×256 accumulators
//! in registers (128 floats per thread, hence `setmaxnreg.inc`), and for each slice issues
//! four `m64n256k16` products, one per 16 of k.
//!
//! **The ring.** `STAGES` stages, each with two mbarriers: `full[s]` completes when the
//! producer has arrived and all of the stage's bytes have landed (the producer announces them
//! with `arrive.expect_tx`, the TMA counts them down), `empty[s]` when every consumer warp
//! has finished reading the stage. Slice `t` goes to stage `t % STAGES`; its phase is
//! `t / STAGES`, and waiters name it by parity, so the ring turns with no reset. Both sides
//! walk the ring with a [`Slot`], a stage and a parity that one step advances, rather than
//! dividing the slice's number at each step. A consumer
//! keeps one group of products running while it waits for the next slice: it commits slice
//! `t`, waits until at most that group is still running, and only then frees slice `t − 1`.
//!
//! ```text
//!   stage s:  [ A 128×64 (16 KiB) | B 64×64 | 64×64 | 64×64 | 64×64 (32 KiB) ]
//!               rows 0-63: consumer 1, rows 64-127: consumer 2; B read by both
//!   producer ──TMA──► stage s ──full[s]──► consumers ──wgmma──► registers
//!           ◄─────────────── empty[s] ◄──── (after wgmma.wait_group)
//! ```
//!
//! **Layouts.** A is contiguous along k: a 128-byte row of the box is 64 k-values of one row of
//! A, swizzled in 8-row, 1024-byte blocks; a k-step of 16 moves the descriptor 32 bytes along
//! the row. B is contiguous along n, so wgmma reads it transposed (`imm-trans-b`): each 64×64
//! box is 64 k-rows of 64 n-values, the four boxes 8 KiB apart (the descriptor's leading
//! offset) and 8 k-rows 1024 bytes apart (its stride offset); a k-step moves 16 rows, 2 KiB.
//!
//! **TF32.** The same ring and roles with 4-byte elements: a stage is 32 of k (still one
//! 128-byte row), an instruction `m64n256k8`. TF32's wgmma has no transpose: it reads B only
//! contiguous along k, so the host hands it Bᵀ (its conversion transposes), and B's boxes are
//! 64 rows of Bᵀ laid out exactly like A's: a k-step of 8 moves both descriptors 32 bytes.
//!
//! ```text
//!   16-bit B box (64 k × 64 n)          TF32 Bᵀ box (64 n × 32 k)
//!   row = one k, 64 n-values            row = one n, 32 k-values
//!   k-step: next 16 rows (2 KiB)        k-step: next 32 bytes of every row
//! ```
//!
//! **The epilogue.** A thread's accumulators hold pairs of neighbouring columns, so storing them
//! as they lie writes 8 bytes per thread and 32 per quad and row. The four threads of a quad
//! first trade pairs (`shfl.sync`): of each 16 columns, thread `t` gathers columns `4t..4t+4`,
//! two pairs from two neighbours, and stores them at once. A warp's store then moves 64
//! contiguous bytes per row, half as many requests for the same bytes of C, which is what the
//! product waits on when k is short.
//!
//! When `n` is not a multiple of 4, C's rows are not 16-byte aligned, and each 16-column step
//! would be four 4-byte stores, each touching 8 rows: the stores then cost more than the
//! product. Instead each consumer warp writes its 16 rows' 16 columns into its own shared
//! staging as the accumulators hold them, then stores them two rows per instruction, 64
//! contiguous bytes of each (`interface::wgmma::EPILOGUE_STRIDE`).
//!
//! ```text
//!   columns 0-15 of a row:  t0 t0 t1 t1 t2 t2 t3 t3 | t0 t0 t1 t1 t2 t2 t3 t3   (as accumulated)
//!   stored by               t0 t0 t0 t0 t1 t1 t1 t1 | t2 t2 t2 t2 t3 t3 t3 t3   (st.global.v4)
//! ```
//!
//! **Edges.** Parts of a box outside A or B arrive as zeros, which add nothing, so only the
//! final stores check bounds. Any m, n, k ≥ 1 works. The host pads rows with zeros to a whole
//! number of 128-byte box rows (TMA requires strides of 16 bytes, and copies a box that lies
//! partly past a row slowly), and the maps reach to the padded ends of the rows.
//!
//! **Splits of k.** A grid with a third dimension divides k's slices among its layers: layer z
//! takes one run of them (`interface::matmul::split_slices`) and writes its partial product to
//! layer z of its output. One layer is the whole product into C; several are step H3, split k,
//! whose partials step 4d's reduction sums (`split_k.rs`, in the main module).

use crate::tensor::hopper::{
    claim_registers_to_232, elect_one, fence_barrier_init, matrix_descriptor, mbarrier_arrive,
    mbarrier_arrive_expect_tx, mbarrier_init, mbarrier_wait, prefetch_tensor_map, release_registers_to_40, tma_load_2d,
    wgmma_commit, wgmma_fence, wgmma_m64n256k16_bf16, wgmma_m64n256k16_f16, wgmma_m64n256k8_tf32, wgmma_wait, Swizzle,
    TensorMap,
};
use crate::{shared_address, unrolled};
use core::arch::asm;
use core::marker::PhantomData;
use cuda_std::prelude::*;
use cuda_std::shared::dynamic_shared_mem;
use cuda_std::warp;
use interface::matmul::split_slices;
use interface::wgmma::{
    A_STAGE_BYTES, BK, BK_TF32, BM, BN, BOX_N, CONSUMERS, CONSUMER_REGISTERS, EPILOGUE_COLS, EPILOGUE_STRIDE,
    EPILOGUE_WARP_BYTES, PRODUCER_REGISTERS, STAGES, STAGE_BYTES, SWIZZLE_ALIGN, WARPGROUP,
};

// The register counts are immediates in `tensor::hopper`'s setmaxnreg functions.
const _: () = assert!(PRODUCER_REGISTERS == 40 && CONSUMER_REGISTERS == 232);

/// Bytes of one 128-byte-swizzled row of a box, and of one 8-row swizzle block.
const ROW_BYTES: u32 = 128;
const SWIZZLE_BLOCK: u32 = 8 * ROW_BYTES;
/// Bytes of one TMA box of B: 64 rows of 128 bytes for every type.
const B_BOX_BYTES: u32 = BOX_N as u32 * ROW_BYTES;
/// Bytes of k one instruction takes from a row contiguous along k: 16 16-bit or 8 TF32 values.
const K_STEP_BYTES: u32 = 32;
/// Instructions per stage: the stage's 128 bytes of k, 32 bytes each.
const MMAS_PER_STAGE: u32 = ROW_BYTES / K_STEP_BYTES;

/// The descriptor of instruction `kk`'s slice of an operand contiguous along k at shared address
/// `base` (A, and TF32's and FP8's Bᵀ): 32 bytes further along every 128-byte row per
/// instruction.
#[inline(always)]
pub(super) fn k_major_descriptor(base: u32, kk: u32) -> u64 {
    matrix_descriptor(base + kk * K_STEP_BYTES, 16, SWIZZLE_BLOCK, Swizzle::B128)
}

/// An input type of the Hopper steps: how deep a stage goes in k, where B's boxes come from and
/// how the tensor cores find them, and the instruction itself.
pub(super) trait Input {
    /// k per stage: one 128-byte row of the swizzle.
    const BK: usize;
    /// TMA coordinates (contiguous dimension first) of the box of B at `k0` whose first column
    /// of C is `n`.
    fn b_box(k0: usize, n: usize) -> (i32, i32);
    /// The descriptor of instruction `kk`'s slice of a stage's B at shared address `b`.
    fn b_descriptor(b: u32, kk: u32) -> u64;
}

/// A tile's width: its columns of C, the ring that feeds it, and the accumulators a consumer
/// thread holds for its 64 rows (`BN / 2`).
pub(super) trait Width {
    const BN: usize;
    const STAGES: usize;
    /// Bytes of one stage: A's `BM × BK` and B's `BK × BN`, 128 bytes of k per row.
    const STAGE_BYTES: usize;
    type Accumulators;
    const ZEROS: Self::Accumulators;
    /// [`store_tile`] for this width.
    ///
    /// # Safety
    /// As [`store_tile`].
    unsafe fn store(
        c: *mut f32,
        acc: &Self::Accumulators,
        tile: (usize, usize),
        consumer: usize,
        dims: (usize, usize),
        staging: u32,
    );
}

/// The tiles of steps H1 to H4: `BM × BN` (128×256), one `m64n256` instruction per k-step.
pub(super) struct Wide;

impl Width for Wide {
    const BN: usize = BN;
    const STAGES: usize = STAGES;
    const STAGE_BYTES: usize = STAGE_BYTES;
    type Accumulators = [u32; 128];
    const ZEROS: [u32; 128] = [0; 128];
    #[inline(always)]
    unsafe fn store(
        c: *mut f32,
        acc: &[u32; 128],
        tile: (usize, usize),
        consumer: usize,
        dims: (usize, usize),
        staging: u32,
    ) {
        store_tile(c, acc, tile, consumer, dims, staging);
    }
}

/// The warpgroup's product of input type `Self` at width `W` (see `tensor::hopper`).
pub(super) trait Mma<W: Width>: Input {
    /// # Safety
    /// As the `wgmma_m64n*` functions.
    unsafe fn mma(acc: &mut W::Accumulators, a: u64, b: u64, accumulate: bool);

    /// What the epilogue does to the complete accumulators before it stores them: nothing,
    /// but FP8 multiplies them by `scale`, the product of its two tensors' scales.
    #[inline(always)]
    fn finish(_acc: &mut W::Accumulators, _scale: f32) {}
}

/// BF16 or FP16 (`F16`): B contiguous along n, read transposed; a k-step is 16 rows of it.
pub(super) struct Half<const F16: bool>;

impl<const F16: bool> Input for Half<F16> {
    const BK: usize = BK;
    #[inline(always)]
    fn b_box(k0: usize, n: usize) -> (i32, i32) {
        (n as i32, k0 as i32)
    }
    #[inline(always)]
    fn b_descriptor(b: u32, kk: u32) -> u64 {
        matrix_descriptor(b + kk * 16 * ROW_BYTES, B_BOX_BYTES, SWIZZLE_BLOCK, Swizzle::B128)
    }
}

impl<const F16: bool> Mma<Wide> for Half<F16> {
    #[inline(always)]
    unsafe fn mma(acc: &mut [u32; 128], a: u64, b: u64, accumulate: bool) {
        if F16 {
            wgmma_m64n256k16_f16(acc, a, b, accumulate);
        } else {
            wgmma_m64n256k16_bf16(acc, a, b, accumulate);
        }
    }
}

/// TF32: Bᵀ, contiguous along k like A; a k-step is 32 bytes along every row.
pub(super) struct Tf32;

impl Input for Tf32 {
    const BK: usize = BK_TF32;
    #[inline(always)]
    fn b_box(k0: usize, n: usize) -> (i32, i32) {
        (k0 as i32, n as i32)
    }
    #[inline(always)]
    fn b_descriptor(b: u32, kk: u32) -> u64 {
        k_major_descriptor(b, kk)
    }
}

impl Mma<Wide> for Tf32 {
    #[inline(always)]
    unsafe fn mma(acc: &mut [u32; 128], a: u64, b: u64, accumulate: bool) {
        wgmma_m64n256k8_tf32(acc, a, b, accumulate);
    }
}

/// Four floats stored together (`st.global.v4.f32`).
#[derive(Clone, Copy)]
#[repr(C, align(16))]
struct Quad([f32; 4]);

/// Stores `v` at `C[row][col..col + 4]`, the elements inside C: one 16-byte store when all four
/// are and the row keeps them 16-byte aligned (`n` a multiple of 4; `col` always is).
///
/// # Safety
/// `c` is valid for `m·n` writes and, when `n` is a multiple of 4, 16-byte aligned.
#[inline(always)]
unsafe fn store_quad(c: *mut f32, row: usize, col: usize, m: usize, n: usize, v: [u32; 4]) {
    if row >= m {
        return;
    }
    let at = c.add(row * n + col);
    let [x, y, z, w] = [f32::from_bits(v[0]), f32::from_bits(v[1]), f32::from_bits(v[2]), f32::from_bits(v[3])];
    if col + 3 < n && n % 4 == 0 {
        *(at as *mut Quad) = Quad([x, y, z, w]);
    } else {
        if col < n {
            *at = x;
        }
        if col + 1 < n {
            *at.add(1) = y;
        }
        if col + 2 < n {
            *at.add(2) = z;
        }
        if col + 3 < n {
            *at.add(3) = w;
        }
    }
}

/// Lane `lane`'s `value` (`shfl.sync.idx` over the whole warp).
#[inline(always)]
fn shuffle(value: u32, lane: u32) -> u32 {
    let out: u32;
    // SAFETY: a register exchange among the warp's lanes, all of which execute it.
    unsafe {
        asm!("shfl.sync.idx.b32 {o}, {v}, {l}, 31, -1;", o = out(reg32) out, v = in(reg32) value, l = in(reg32) lane)
    };
    out
}

/// One row's 16 columns of accumulator groups `j` and `j + 1` (`offset` 0: the thread's row;
/// 2: 8 rows below), traded within the quad so that this thread stores 4 of them: the pairs of
/// quad lanes `from` of group `j`, or of group `j + 1` when `second`.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
unsafe fn trade_and_store<const N: usize>(
    c: *mut f32,
    acc: &[u32; N],
    (j, offset): (usize, usize),
    (row, col): (usize, usize),
    (from, second): ((u32, u32), bool),
    m: usize,
    n: usize,
) {
    let (this, next) = (4 * j + offset, 4 * (j + 1) + offset);
    let pair = |lane: u32| {
        let this = (shuffle(acc[this], lane), shuffle(acc[this + 1], lane));
        let next = (shuffle(acc[next], lane), shuffle(acc[next + 1], lane));
        if second {
            next
        } else {
            this
        }
    };
    let ((a0, a1), (b0, b1)) = (pair(from.0), pair(from.1));
    store_quad(c, row, col, m, n, [a0, a1, b0, b1]);
}

/// A place in the ring: a stage and the parity of the lap the ring is on. Producer and
/// consumers each walk the ring with one, from [`Slot::FIRST`], one [`Ring::next`] per slice.
#[derive(Clone, Copy)]
pub(super) struct Slot {
    stage: u32,
    lap: u32,
}

impl Slot {
    /// The block's first slice: stage 0, lap 0.
    pub(super) const FIRST: Slot = Slot { stage: 0, lap: 0 };
}

/// The shared-memory ring: `STAGES` stages from `tiles` (1024-byte aligned), then the
/// `full` and `empty` mbarriers, 8 bytes each, then the consumer warps' epilogue staging. One
/// thread initializes the barriers; the block waits for it.
pub(super) struct Ring<W> {
    tiles: u32,
    full: u32,
    empty: u32,
    staging: u32,
    width: PhantomData<W>,
}

impl<W: Width> Ring<W> {
    /// Lays the ring out in this block's dynamic shared memory and initializes its barriers.
    ///
    /// # Safety
    /// Every thread of the block calls it once, first, with `SWIZZLE_ALIGN` bytes of dynamic
    /// shared memory, `W::STAGES` stages of `W::STAGE_BYTES`, their 16 bytes of barriers and
    /// `EPILOGUE_BYTES` of staging.
    #[inline(always)]
    pub(super) unsafe fn new() -> Ring<W> {
        let raw = shared_address(dynamic_shared_mem::<u8>());
        let align = SWIZZLE_ALIGN as u32;
        let tiles = (raw + align - 1) & !(align - 1);
        let full = tiles + (W::STAGES * W::STAGE_BYTES) as u32;
        let empty = full + 8 * W::STAGES as u32;
        let ring = Ring { tiles, full, empty, staging: empty + 8 * W::STAGES as u32, width: PhantomData };
        if thread::thread_idx_x() == 0 {
            for s in 0..W::STAGES as u32 {
                mbarrier_init(ring.full + 8 * s, 1);
                // One arrival per consumer warp.
                mbarrier_init(ring.empty + 8 * s, (CONSUMERS * WARPGROUP / 32) as u32);
            }
            fence_barrier_init();
        }
        thread::sync_threads();
        ring
    }

    /// Stage, `full` and `empty` barrier of `slot`.
    #[inline(always)]
    fn at(&self, slot: Slot) -> (u32, u32, u32) {
        let s = slot.stage;
        (self.tiles + s * W::STAGE_BYTES as u32, self.full + 8 * s, self.empty + 8 * s)
    }

    /// The slot after `slot`: the next stage, or stage 0 of the next lap.
    #[inline(always)]
    fn next(slot: Slot) -> Slot {
        if slot.stage + 1 == W::STAGES as u32 {
            Slot { stage: 0, lap: slot.lap ^ 1 }
        } else {
            Slot { stage: slot.stage + 1, lap: slot.lap }
        }
    }

    /// Where the staging starts, rounded up to `SWIZZLE_ALIGN`: the first of the TMA-store
    /// step's boxes (`wgmma_tma_store.rs`), which its swizzle needs on that boundary.
    #[inline(always)]
    pub(super) fn aligned_staging(&self) -> u32 {
        let align = SWIZZLE_ALIGN as u32;
        (self.staging + align - 1) & !(align - 1)
    }

    /// The epilogue staging of the calling consumer warp (its warp of the block, less the
    /// producer's four).
    #[inline(always)]
    pub(super) fn staging(&self) -> u32 {
        let warp = thread::thread_idx_x() as usize / 32 - WARPGROUP / 32;
        self.staging + (warp * EPILOGUE_WARP_BYTES) as u32
    }
}

/// The producer's warp: fills the ring with the `k_tiles` slices of A and B of the tile at
/// (`m0`, `n0`) from slice `k_first` of k on, into the slots from `slot`, each into its stage
/// once the consumers freed it; the slot after the last.
///
/// # Safety
/// The 32 threads of one warp of the block, together; the consumers take the same slices from
/// the same slot.
#[inline(always)]
pub(super) unsafe fn produce<T: Input, W: Width>(
    ring: &Ring<W>,
    maps: *const TensorMap,
    (m0, n0): (usize, usize),
    (k_first, k_tiles): (usize, usize),
    mut slot: Slot,
) -> Slot {
    let (map_a, map_b) = (maps, maps.add(1));
    for t in 0..k_tiles {
        let (stage, full, empty) = ring.at(slot);
        // The consumers' release of the slice this stage held a lap ago. For the first lap
        // that is the phase before init (parity 1), already complete.
        mbarrier_wait(empty, slot.lap ^ 1);
        if elect_one() {
            mbarrier_arrive_expect_tx(full, W::STAGE_BYTES as u32);
            let k0 = (k_first + t) * T::BK;
            tma_load_2d(stage, map_a, k0 as i32, m0 as i32, full);
            for j in 0..W::BN / BOX_N {
                let (x, y) = T::b_box(k0, n0 + j * BOX_N);
                tma_load_2d(stage + A_STAGE_BYTES as u32 + j as u32 * B_BOX_BYTES, map_b, x, y, full);
            }
        }
        slot = Ring::<W>::next(slot);
    }
    slot
}

/// A consumer warpgroup's products for one tile: rows `64·consumer ..` of it, all `BN`
/// columns, over `k_tiles` slices from `slot`, into `acc` (overwritten: the first product does
/// not accumulate); the slot after the last. Every slice's stage is freed on return. A consumer
/// whose rows all lie past C (`active` false: an edge tile of 64 rows or fewer) multiplies
/// nothing, its accumulators zeros nobody stores, but still waits for each slice and frees it,
/// keeping the ring's phases.
///
/// # Safety
/// Every thread of consumer warpgroup `consumer`; the producer fills the same slices.
#[inline(always)]
pub(super) unsafe fn consume<T: Mma<W>, W: Width>(
    ring: &Ring<W>,
    k_tiles: usize,
    mut slot: Slot,
    consumer: usize,
    active: bool,
    acc: &mut W::Accumulators,
) -> Slot {
    let lane = thread::thread_idx_x() as usize % 32;
    let mut previous_empty = 0;
    for t in 0..k_tiles {
        let (stage, full, empty) = ring.at(slot);
        mbarrier_wait(full, slot.lap);
        if active {
            let a = stage + (consumer * 64) as u32 * ROW_BYTES;
            let b = stage + A_STAGE_BYTES as u32;
            wgmma_fence();
            for kk in 0..MMAS_PER_STAGE {
                T::mma(acc, k_major_descriptor(a, kk), T::b_descriptor(b, kk), t > 0 || kk > 0);
            }
            wgmma_commit();
            // Slice t's products may keep running; slice t - 1's are done, so its stage is free.
            wgmma_wait::<1>();
        }
        if t > 0 && lane == 0 {
            mbarrier_arrive(previous_empty);
        }
        previous_empty = empty;
        slot = Ring::<W>::next(slot);
    }
    wgmma_wait::<0>();
    if lane == 0 {
        mbarrier_arrive(previous_empty);
    }
    slot
}

/// Writes a consumer's 64×`2N` accumulators (`N` a thread, `N` at most 128) at rows `m0 +
/// 64·consumer ..`, columns `n0 ..` of C, the elements inside C only: four columns per store
/// when C's rows are 16-byte aligned, else through the warp's staging at `staging` (see the
/// module's epilogue).
///
/// # Safety
/// `c` is valid for `m·n` writes and 16-byte aligned when `n` is a multiple of 4; the
/// accumulators are complete (`wgmma_wait`); every thread of the warp calls it (the quads trade
/// values); `staging` is this warp's own `EPILOGUE_WARP_BYTES` of shared memory, 8-byte aligned.
#[inline(always)]
pub(super) unsafe fn store_tile<const N: usize>(
    c: *mut f32,
    acc: &[u32; N],
    (m0, n0): (usize, usize),
    consumer: usize,
    (m, n): (usize, usize),
    staging: u32,
) {
    let tid = thread::thread_idx_x() as usize;
    let lane = tid as u32 % 32;
    let t = lane % 4;
    let warp_row = m0 + consumer * 64 + (tid / 32 % 4) * 16;
    if n % 4 != 0 {
        store_tile_staged(c, acc, (warp_row, n0), (m, n), staging);
        return;
    }
    let row = warp_row + lane as usize / 4;
    // Columns 4t..4t+4 of each 16 are the pairs of quad lanes 2t and 2t + 1, modulo 4: of the
    // first group for t < 2, of the second for t ≥ 2.
    let first = (lane & !3) + (2 * t) % 4;
    let from = ((first, first + 1), t >= 2);
    crate::count_up!(
        [x x x x] 1,
        [0],
        unrolled!(p, {
            // 16 columns, 8 accumulators, each step: all 16 steps at N = 128.
            if p < N / 8 {
                let col = n0 + 16 * p + 4 * t as usize;
                trade_and_store(c, acc, (2 * p, 0), (row, col), from, m, n);
                trade_and_store(c, acc, (2 * p, 2), (row + 8, col), from, m, n);
            }
        })
    );
}

/// Stores the 32-bit pair `(x, y)` at `address` of shared memory (`st.shared.v2.b32`).
///
/// # Safety
/// `address` is 8-byte aligned, in this warp's staging.
#[inline(always)]
pub(super) unsafe fn stage_pair(address: u32, x: u32, y: u32) {
    asm!("st.shared.v2.b32 [{a}], {{{x}, {y}}};", a = in(reg32) address, x = in(reg32) x, y = in(reg32) y, options(nostack));
}

/// The 32 bits at `address` of shared memory (`ld.shared.b32`).
///
/// # Safety
/// `address` is 4-byte aligned, in this warp's staging, written before the warp's last
/// `bar.warp.sync`.
#[inline(always)]
unsafe fn staged(address: u32) -> u32 {
    let value: u32;
    asm!("ld.shared.b32 {v}, [{a}];", v = out(reg32) value, a = in(reg32) address, options(nostack, readonly));
    value
}

/// [`store_tile`] for rows that are not 16-byte aligned, through the warp's staging: for each
/// 16 columns, the warp's 16 rows (from `row0`) go to shared memory as the accumulators hold
/// them (row `r` of the warp at `EPILOGUE_STRIDE · r` floats), then to C two rows a store
/// instruction, lanes 0-15 one row's 16 columns and lanes 16-31 the row two below: rows `r`
/// and `r + 2` lie 16 banks apart, so neither side of the staging has a bank conflict.
///
/// # Safety
/// As [`store_tile`], for the warp whose first row of C is `row0`.
#[inline(always)]
unsafe fn store_tile_staged<const N: usize>(
    c: *mut f32,
    acc: &[u32; N],
    (row0, n0): (usize, usize),
    (m, n): (usize, usize),
    staging: u32,
) {
    const FLOAT: u32 = 4;
    const STRIDE: u32 = EPILOGUE_STRIDE as u32 * FLOAT;
    const _: () = assert!(EPILOGUE_WARP_BYTES == 16 * EPILOGUE_STRIDE * 4 && EPILOGUE_COLS == 16);
    let lane = thread::thread_idx_x() % 32;
    // The warp's corner of C, and how many of its 16 rows and 2N columns lie inside C: fewer
    // live registers than the row and column of each store (FP8's consumers, which scale
    // their accumulators first, otherwise spill).
    let corner = c.wrapping_add(row0 * n + n0);
    let (rows, cols) = (m.saturating_sub(row0).min(16) as u32, n.saturating_sub(n0).min(2 * N) as u32);
    // This thread's pairs: rows lane/4 and lane/4 + 8, columns 2t and 2t + 1 of each 8.
    let put = staging + (lane / 4) * STRIDE + (lane % 4) * 2 * FLOAT;
    // Its loads: column lane % 16 of row 2·(lane / 16) + the store's first row.
    let (col, below) = (lane % 16, 2 * (lane / 16));
    crate::count_up!(
        [x x x x] 1,
        [0],
        unrolled!(p, {
            if p < N / 8 {
                // Groups 2p and 2p + 1: their pairs of this row, then of the row 8 below.
                let at = 8 * p;
                stage_pair(put, acc[at], acc[at + 1]);
                stage_pair(put + 8 * STRIDE, acc[at + 2], acc[at + 3]);
                stage_pair(put + 8 * FLOAT, acc[at + 4], acc[at + 5]);
                stage_pair(put + 8 * STRIDE + 8 * FLOAT, acc[at + 6], acc[at + 7]);
                warp::sync_warp(u32::MAX);
                // Rows 0, 1, 4, 5, 8, 9, 12, 13 and the ones 2 below them.
                for i in 0..8u32 {
                    let r = i / 2 * 4 + i % 2 + below;
                    let j = (EPILOGUE_COLS * p) as u32 + col;
                    let value = staged(staging + r * STRIDE + col * FLOAT);
                    if r < rows && j < cols {
                        *corner.wrapping_add(r as usize * n + j as usize) = f32::from_bits(value);
                    }
                }
                // The next 16 columns overwrite the staging.
                warp::sync_warp(u32::MAX);
            }
        })
    );
}

/// Prefetches both tensor maps, from one elected lane of the producer's warp.
///
/// # Safety
/// The 32 threads of the producer's warp, together; `maps` as the kernels' `# Safety` says.
#[inline(always)]
pub(super) unsafe fn prefetch_maps(maps: *const TensorMap) {
    if elect_one() {
        prefetch_tensor_map(maps);
        prefetch_tensor_map(maps.add(1));
    }
}

/// The tile at block (`blockIdx.y`, `blockIdx.x`), in the input type `T`, over split
/// `blockIdx.z` of k (`split_slices`; all of k in a grid of one split), into layer `blockIdx.z`
/// of `c` (split k: partial products that `split_k.rs`'s reduction sums).
#[inline(always)]
unsafe fn matmul_wgmma<T: Mma<Wide>>(maps: *const TensorMap, c: *mut f32, m: usize, n: usize, k: usize) {
    let ring = Ring::<Wide>::new();
    let warpgroup = thread::thread_idx_x() as usize / WARPGROUP;
    let split = thread::block_idx_z() as usize;
    let (k_first, k_tiles) = split_slices((k + T::BK - 1) / T::BK, split, thread::grid_dim_z() as usize);
    let m0 = thread::block_idx_y() as usize * BM;
    let n0 = thread::block_idx_x() as usize * BN;
    if warpgroup == 0 {
        release_registers_to_40();
        if thread::thread_idx_x() < 32 {
            prefetch_maps(maps);
            produce::<T, Wide>(&ring, maps, (m0, n0), (k_first, k_tiles), Slot::FIRST);
        }
    } else {
        claim_registers_to_232();
        let consumer = warpgroup - 1;
        let mut acc = [0u32; 128];
        consume::<T, Wide>(&ring, k_tiles, Slot::FIRST, consumer, m0 + 64 * consumer < m, &mut acc);
        store_tile(c.add(split * m * n), &acc, (m0, n0), consumer, (m, n), ring.staging());
    }
}

/// # Safety
/// `maps` is the address, in global memory and 64-byte aligned, of two tensor maps: A's (bf16,
/// dimensions {k, m}, rows padded to a multiple of 16 bytes, box {BK, BM}) and B's (bf16,
/// {n, k}, box {BOX_N, BK}), both with the 128-byte swizzle, over readable memory. Launch: on
/// an sm_90a device, blocks of `THREADS` threads, a grid of `⌈n / BN⌉ × ⌈m / BM⌉ × splits`,
/// `SHARED_BYTES` of dynamic shared memory, where `splits` leaves no split of the `⌈k / BK⌉`
/// slices empty (`split_count` made it). `c` is valid for `splits·m·n` f32 writes (one
/// partial product of `m·n` per split; with one split, C itself), overlaps neither map's
/// memory, and starts 16-byte aligned when `n` is a multiple of 4 (the epilogue then stores
/// four floats at once).
#[kernel]
pub unsafe fn matmul_wgmma_bf16(maps: *const TensorMap, c: *mut f32, m: usize, n: usize, k: usize) {
    matmul_wgmma::<Half<false>>(maps, c, m, n, k);
}

/// # Safety
/// As [`matmul_wgmma_bf16`], with both tensor maps f16.
#[kernel]
pub unsafe fn matmul_wgmma_f16(maps: *const TensorMap, c: *mut f32, m: usize, n: usize, k: usize) {
    matmul_wgmma::<Half<true>>(maps, c, m, n, k);
}

/// # Safety
/// As [`matmul_wgmma_bf16`], with f32 tensor maps of values rounded to TF32: A's (dimensions
/// {k, m}, box {BK_TF32, BM}) and Bᵀ's ({k, n}: B transposed, n rows of k, box {BK_TF32, BOX_N}),
/// rows padded to a multiple of 16 bytes; k's slices are `⌈k / BK_TF32⌉`.
#[kernel]
pub unsafe fn matmul_wgmma_tf32(maps: *const TensorMap, c: *mut f32, m: usize, n: usize, k: usize) {
    matmul_wgmma::<Tf32>(maps, c, m, n, k);
}
