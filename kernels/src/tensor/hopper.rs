//! Hopper's asynchronous matrix machinery (`sm_90a`), one instruction per function.
//!
//! **wgmma** (`wgmma.mma_async`): a *warpgroup*, four consecutive warps (128 threads, the
//! first warp's index a multiple of four), multiplies a 64×16 tile of A by a 16×N tile of B
//! and adds the 64×N product to accumulators that stay in its registers (N/2 floats per
//! thread). A and B are read straight from shared memory, described by 64-bit *matrix
//! descriptors* ([`matrix_descriptor`]), not loaded into registers first. The instruction
//! is asynchronous: it returns before the tensor cores finish, so the warpgroup brackets
//! its products with [`wgmma_fence`] (the accumulators are ready to be read by wgmma),
//! [`wgmma_commit`] (the products issued so far form a group) and [`wgmma_wait`] (at most
//! `N` groups still running). Until the wait, neither the accumulators nor the shared memory
//! the products read may be touched.
//!
//! **TMA** (`cp.async.bulk.tensor`): one thread asks the SM's tensor memory accelerator to
//! copy a whole *box* (here up to 64×128 elements) of a 2D array from global to shared
//! memory. The array's shape, strides, box size and shared-memory swizzle are in a 128-byte
//! *tensor map* ([`TensorMap`]) that the host encodes (`cuTensorMapEncodeTiled`). Elements
//! of the box outside the array arrive as zeros, so edge tiles need no bounds checks.
//!
//! **mbarrier**: a 64-bit object in shared memory that counts two things per *phase*:
//! arrivals (expected count set by [`mbarrier_init`]) and transaction bytes (announced by
//! [`mbarrier_arrive_expect_tx`], counted down by the TMA as its bytes land). When both
//! reach zero the phase completes and the next one begins. Waiters name the phase they wait
//! for by its parity ([`mbarrier_wait`]), so a ring of stages needs no reset:
//!
//! ```text
//!   producer (1 thread)                   consumers (2 warpgroups)
//!   wait empty[s] ──────────────┐         wait full[s] (phase parity p)
//!   expect_tx full[s], bytes    │         wgmma × 4 on stage s
//!   TMA A, B ─► stage s ─► full[s] ─────► commit, wait ≤ 1 group
//!                               └──────── arrive empty[s-1]  (stage s-1 free to refill)
//! ```
//!
//! The TMA writes through the *async proxy*, and wgmma reads through it: [`fence_proxy_async`]
//! orders ordinary shared-memory accesses before async ones. [`setmaxnreg`] moves registers
//! between warpgroups of one block: the producer needs few, the consumers' accumulators many.

use core::arch::asm;

/// A tensor map, as `cuTensorMapEncodeTiled` writes it: 128 opaque bytes, 64-byte aligned.
/// The kernels take its address in global memory.
#[repr(C, align(64))]
pub struct TensorMap {
    _opaque: [u64; 16],
}

/// How TMA lays a box row out in shared memory, and how wgmma expects to find it. With
/// `B128`, row `r` of 128 bytes has its 16-byte chunk `c` stored at chunk `c ^ (r % 8)`:
/// eight consecutive rows then spread a column of chunks over all 32 banks, so the tensor
/// cores read any 8×16-byte core matrix without bank conflicts. The pattern repeats every
/// 1024 bytes, so a tile must start on a 1024-byte boundary. The values are the descriptor's
/// encoding (bits 62–63).
#[derive(Clone, Copy)]
pub enum Swizzle {
    None = 0,
    B128 = 1,
    B64 = 2,
    B32 = 3,
}

/// The 64-bit shared-memory matrix descriptor of a wgmma operand:
/// - bits 0–13: the tile's shared address / 16;
/// - bits 16–29: the *leading byte offset* / 16: for an operand contiguous along M or N
///   (transposed), the distance between two blocks of 64 elements along M or N; unused for
///   a swizzled operand contiguous along k;
/// - bits 32–45: the *stride byte offset* / 16: the distance between two groups of 8 rows
///   (8 × 128 bytes = 1024 with the 128-byte swizzle);
/// - bits 62–63: the [`Swizzle`] mode.
///
/// The base-offset bits (49–51) stay 0: tiles start on a swizzle boundary. Advancing along k
/// inside a swizzled 128-byte row adds the byte offset to the address; the swizzle is applied
/// to the final address bits, as the TMA applied it.
#[inline(always)]
pub fn matrix_descriptor(address: u32, leading_bytes: u32, stride_bytes: u32, swizzle: Swizzle) -> u64 {
    let field = |bytes: u32| ((bytes >> 4) & 0x3fff) as u64;
    field(address) | (field(leading_bytes) << 16) | (field(stride_bytes) << 32) | ((swizzle as u64) << 62)
}

/// Sets up the mbarrier at shared address `bar` for `count` arrivals per phase, in phase 0
/// (`mbarrier.init.shared::cta.b64`).
///
/// # Safety
/// `bar` is an 8-byte aligned shared address that no thread uses as a barrier yet; one
/// thread initializes it, and [`fence_barrier_init`] and a block barrier follow before use.
#[inline(always)]
pub unsafe fn mbarrier_init(bar: u32, count: u32) {
    asm!("mbarrier.init.shared::cta.b64 [{b}], {c};", b = in(reg32) bar, c = in(reg32) count);
}

/// Makes the mbarrier initializations of this thread visible to the async proxy (the TMA
/// completes transactions on them) and to the other threads of the cluster
/// (`fence.mbarrier_init.release.cluster`).
#[inline(always)]
pub fn fence_barrier_init() {
    // SAFETY: a fence; it orders this thread's earlier writes and touches no memory itself.
    unsafe { asm!("fence.mbarrier_init.release.cluster;") };
}

/// Arrives once on the mbarrier at `bar` (`mbarrier.arrive.shared::cta.b64`).
///
/// # Safety
/// `bar` is an initialized mbarrier whose current phase still expects this arrival.
#[inline(always)]
pub unsafe fn mbarrier_arrive(bar: u32) {
    asm!("mbarrier.arrive.shared::cta.b64 _, [{b}];", b = in(reg32) bar);
}

/// Arrives once on `bar` and announces `bytes` more transaction bytes for its current phase
/// (`mbarrier.arrive.expect_tx`): the phase completes only once the TMA copies that name this
/// barrier have delivered that many bytes.
///
/// # Safety
/// As [`mbarrier_arrive`]; exactly `bytes` bytes of copies completing on `bar` follow in this
/// phase.
#[inline(always)]
pub unsafe fn mbarrier_arrive_expect_tx(bar: u32, bytes: u32) {
    asm!("mbarrier.arrive.expect_tx.shared::cta.b64 _, [{b}], {n};", b = in(reg32) bar, n = in(reg32) bytes);
}

/// Whether the phase of parity `parity` of the mbarrier at `bar` has completed
/// (`mbarrier.try_wait.parity`). The instruction may suspend the thread for a while before
/// answering no, so polling it does not spin at full rate. A barrier fresh from init is in
/// phase 0, and the phase before it (parity 1) counts as completed.
///
/// # Safety
/// `bar` is an initialized mbarrier.
#[inline(always)]
pub unsafe fn mbarrier_try_wait(bar: u32, parity: u32) -> bool {
    let done: u32;
    asm!(
        "{{ .reg .pred p; mbarrier.try_wait.parity.shared::cta.b64 p, [{b}], {q}; selp.u32 {d}, 1, 0, p; }}",
        d = out(reg32) done,
        b = in(reg32) bar,
        q = in(reg32) parity,
    );
    done != 0
}

/// Whether this thread is the lane its warp elects (`elect.sync`): exactly one lane of the
/// warp gets `true`. A warp that runs a loop together and issues its single-thread operations
/// (TMA copies, barrier arrivals) from the elected lane stays converged, which lets ptxas keep
/// the loop's values in uniform registers, where the same loop under `if lane == 0` runs on
/// per-thread ones.
///
/// # Safety
/// All 32 lanes of the warp execute it together.
#[inline(always)]
pub unsafe fn elect_one() -> bool {
    let elected: u32;
    asm!("{{ .reg .pred p; elect.sync _|p, 0xffffffff; selp.u32 {e}, 1, 0, p; }}", e = out(reg32) elected);
    elected != 0
}

/// Waits until the phase of parity `parity` of `bar` completes. Memory written before the
/// arrivals that completed it (the TMA's bytes included) is then visible to this thread.
///
/// # Safety
/// As [`mbarrier_try_wait`]; the phase does complete.
#[inline(always)]
pub unsafe fn mbarrier_wait(bar: u32, parity: u32) {
    while !mbarrier_try_wait(bar, parity) {}
}

/// Orders this thread's earlier shared-memory accesses through the generic proxy (ordinary
/// loads and stores) before later ones through the async proxy (TMA, wgmma)
/// (`fence.proxy.async.shared::cta`).
#[inline(always)]
pub fn fence_proxy_async() {
    // SAFETY: a fence; it touches no memory itself.
    unsafe { asm!("fence.proxy.async.shared::cta;") };
}

/// Copies the box at coordinates (`x`, `y`) (`x` along the contiguous dimension, in elements)
/// of the 2D array described by `map` into shared memory at `dst`, and counts its bytes
/// against the current phase of the mbarrier `bar`
/// (`cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes`). Box
/// elements outside the array are written as zeros and still counted.
///
/// # Safety
/// `map` is the generic address of a valid tensor map in global memory (64-byte aligned)
/// describing readable memory; `dst` is a shared address aligned as the map's swizzle needs,
/// with room for the box, that nothing reads until `bar`'s phase completes and nothing else
/// writes meanwhile; the phase expects these bytes ([`mbarrier_arrive_expect_tx`]).
#[inline(always)]
pub unsafe fn tma_load_2d(dst: u32, map: *const TensorMap, x: i32, y: i32, bar: u32) {
    asm!(
        "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [{d}], [{m}, {{{x}, {y}}}], [{b}];",
        d = in(reg32) dst,
        m = in(reg64) map,
        x = in(reg32) x,
        y = in(reg32) y,
        b = in(reg32) bar,
    );
}

/// Copies the box at shared address `src` to coordinates (`x`, `y`) (`x` along the contiguous
/// dimension, in elements) of the 2D array described by `map`, in this thread's current bulk
/// group (`cp.async.bulk.tensor.2d.global.shared::cta.bulk_group`). Box elements outside the
/// array are not written. The copy runs on while the thread goes on: [`bulk_commit`] closes
/// the group, [`bulk_wait_read`] waits until a group has read its boxes, [`bulk_wait`] until
/// it has written them.
///
/// # Safety
/// `map` is the generic address of a valid tensor map in global memory (64-byte aligned)
/// describing writable memory that nothing else accesses until the copy is done; `src` is a
/// shared address aligned as the map's swizzle needs, holding the box, written through the
/// generic proxy before a [`fence_proxy_async`], and not written again until the group has
/// read it.
#[inline(always)]
pub unsafe fn tma_store_2d(map: *const TensorMap, src: u32, x: i32, y: i32) {
    asm!(
        "cp.async.bulk.tensor.2d.global.shared::cta.bulk_group [{m}, {{{x}, {y}}}], [{s}];",
        m = in(reg64) map,
        s = in(reg32) src,
        x = in(reg32) x,
        y = in(reg32) y,
    );
}

/// Closes this thread's current bulk group: the copies issued since the last commit
/// (`cp.async.bulk.commit_group`).
#[inline(always)]
pub fn bulk_commit() {
    // SAFETY: it only marks a group of copies already issued; it touches no memory itself.
    unsafe { asm!("cp.async.bulk.commit_group;") };
}

/// Waits until at most `N` of this thread's committed bulk groups are still reading shared
/// memory (`cp.async.bulk.wait_group.read N`): the others' boxes may be written again. The
/// operand must be an immediate, so `N` is 0 or 1; a larger `N` waits as 1 does (stricter,
/// still correct).
#[inline(always)]
pub fn bulk_wait_read<const N: u32>() {
    // SAFETY: a wait; it touches no memory itself.
    unsafe {
        match N {
            0 => asm!("cp.async.bulk.wait_group.read 0;"),
            _ => asm!("cp.async.bulk.wait_group.read 1;"),
        }
    }
}

/// Waits until every committed bulk group of this thread has written its copies
/// (`cp.async.bulk.wait_group 0`).
#[inline(always)]
pub fn bulk_wait() {
    // SAFETY: a wait; it touches no memory itself.
    unsafe { asm!("cp.async.bulk.wait_group 0;") };
}

/// Fetches the tensor map at `map` into the TMA unit's cache ahead of the first copy
/// (`prefetch.tensormap`).
///
/// # Safety
/// `map` is the generic address of a tensor map in global memory.
#[inline(always)]
pub unsafe fn prefetch_tensor_map(map: *const TensorMap) {
    asm!("prefetch.tensormap [{m}];", m = in(reg64) map);
}

/// Marks the warpgroup's accumulator registers as ready for wgmma: required before the first
/// `wgmma.mma_async` that reads registers other instructions wrote (`wgmma.fence.sync.aligned`).
///
/// # Safety
/// All 128 threads of the warpgroup execute it together.
#[inline(always)]
pub unsafe fn wgmma_fence() {
    asm!("wgmma.fence.sync.aligned;");
}

/// Closes the wgmma products this warpgroup issued since the last commit into one group
/// (`wgmma.commit_group.sync.aligned`).
///
/// # Safety
/// All 128 threads of the warpgroup execute it together.
#[inline(always)]
pub unsafe fn wgmma_commit() {
    asm!("wgmma.commit_group.sync.aligned;");
}

/// Waits until at most `N` of this warpgroup's committed wgmma groups are still running
/// (`wgmma.wait_group.sync.aligned N`). The operand must be an immediate, so each `N` up to 3
/// has its own instruction; a larger `N` waits for all (stricter, still correct).
///
/// # Safety
/// All 128 threads of the warpgroup execute it together.
#[inline(always)]
pub unsafe fn wgmma_wait<const N: u32>() {
    match N {
        1 => asm!("wgmma.wait_group.sync.aligned 1;"),
        2 => asm!("wgmma.wait_group.sync.aligned 2;"),
        3 => asm!("wgmma.wait_group.sync.aligned 3;"),
        _ => asm!("wgmma.wait_group.sync.aligned 0;"),
    }
}

/// `$callback!($($args)* [e0, e1, …])`: the expressions `0, 1, …, L − 1`, where `L` is the
/// product of the factors in the first list. Each `x` doubles the list, appending the list plus
/// its length, and each `t` triples it, appending the list plus its length and plus twice
/// that, so long operand lists and unrolled loops come from a count, not from a hand-written
/// sequence of numbers.
#[macro_export]
macro_rules! count_up {
    ([] $len:expr, [$($i:expr),*], $callback:ident!($($args:tt)*)) => {
        $callback!($($args)* [$($i),*])
    };
    ([x $($more:tt)*] $len:expr, [$($i:expr),*], $callback:ident!($($args:tt)*)) => {
        $crate::count_up!([$($more)*] ($len * 2), [$($i,)* $($i + $len),*], $callback!($($args)*))
    };
    ([t $($more:tt)*] $len:expr, [$($i:expr),*], $callback:ident!($($args:tt)*)) => {
        $crate::count_up!(
            [$($more)*] ($len * 3),
            [$($i,)* $($i + $len,)* $($i + 2 * $len),*],
            $callback!($($args)*)
        )
    };
}

/// Runs `$body` once per index of a [`count_up!`] list, bound to `$i`: a loop unrolled in the
/// source, so that an array indexed by `$i` stays in registers.
#[macro_export]
macro_rules! unrolled {
    ($i:ident, $body:block [$($n:expr),*]) => {
        $( { let $i: usize = $n; $body } )*
    };
}

/// One `{}` placeholder per accumulator after the first.
macro_rules! accumulator_slot {
    ($i:expr) => {
        ", {}"
    };
}

/// `wgmma.mma_async` of shape `$shape` (the instruction's suffix) on the accumulators
/// `$d[e]` for each listed `e`, as one `asm!` with one in-out register per accumulator.
/// `$flags` are the immediates after the predicate: `imm-scale-a`, `imm-scale-b` 1 (no
/// negation) and, for 16-bit inputs, `imm-trans-a` 0 (A contiguous along k) and `imm-trans-b`
/// 1 (B contiguous along n); TF32 takes no transpose flags (both operands contiguous along k).
macro_rules! wgmma_asm {
    ($shape:literal, $flags:literal, $d:ident, $a:ident, $b:ident, $scale:ident, [$first:expr $(, $i:expr)*]) => {
        asm!(
            concat!(
                "{{ .reg .pred p; setp.ne.b32 p, {s}, 0; wgmma.mma_async.sync.aligned.",
                $shape,
                " {{{}",
                $(accumulator_slot!($i),)*
                "}}, {a}, {b}, p, ",
                $flags,
                "; }}"
            ),
            inout(reg32) $d[$first],
            $(inout(reg32) $d[$i],)*
            a = in(reg64) $a,
            b = in(reg64) $b,
            s = in(reg32) $scale,
        )
    };
}

/// Defines a wgmma function for one input type and width: `m64n256k16`, `m64n192k16`,
/// `m64n128k16` or `m64n64k16` (16-bit), `m64n256k8`, `m64n192k8`, `m64n128k8` or `m64n64k8`
/// (TF32); `$accumulators` is `N / 2` and `$factors` the [`count_up!`] factors of it.
macro_rules! wgmma_m64 {
    (
        $(#[$doc:meta])* $name:ident, $shape:literal, $flags:literal, $k:literal, $b_layout:literal,
        $width:literal, $accumulators:literal, [$($factors:tt)*]
    ) => {
        $(#[$doc])*
        ///
        /// # Safety
        /// All 128 threads of an aligned warpgroup call it together with the same descriptors,
        /// after [`wgmma_fence`]; `a` describes a 64×k tile of A contiguous along k and `b` a
        /// k×N tile of B
        #[doc = $b_layout]
        /// both with the 128-byte swizzle, in shared memory that holds them (TMA complete,
        /// mbarrier waited) and stays unchanged until a [`wgmma_wait`] covers this product; `d`
        /// is not touched by other instructions until then either. (k is
        #[doc = $k]
        /// and N
        #[doc = $width]
        /// here.)
        #[inline(always)]
        pub unsafe fn $name(d: &mut [u32; $accumulators], a: u64, b: u64, accumulate: bool) {
            let scale = accumulate as u32;
            $crate::count_up!([$($factors)*] 1, [0], wgmma_asm!($shape, $flags, d, a, b, scale,));
        }
    };
}

wgmma_m64!(
    /// `D (64×256, f32) = A (64×16, bf16) · B (16×256, bf16) + (accumulate ? D : 0)`.
    /// `d` holds the accumulators' bits (`f32::to_bits`): `asm!` has no float register class
    /// on nvptx, and an accumulator moved between `.f32` and `.b32` registers between two
    /// products would be a use of a register the tensor cores are still writing, which ptxas
    /// guards by waiting for every product in flight. Thread `t` of the warpgroup holds, for
    /// each group `j` of 8 columns, `d[4j..4j+2]` at row `16·(t/32) + (t%32)/4`, columns
    /// `8j + 2·(t%4)` and the next, and `d[4j+2..4j+4]` 8 rows below.
    wgmma_m64n256k16_bf16,
    "m64n256k16.f32.bf16.bf16",
    "1, 1, 0, 1",
    "16",
    "contiguous along n,",
    "256",
    128,
    [x x x x x x x]
);

wgmma_m64!(
    /// As [`wgmma_m64n256k16_bf16`] with f16 inputs.
    wgmma_m64n256k16_f16,
    "m64n256k16.f32.f16.f16",
    "1, 1, 0, 1",
    "16",
    "contiguous along n,",
    "256",
    128,
    [x x x x x x x]
);

wgmma_m64!(
    /// As [`wgmma_m64n256k16_bf16`] for TF32 inputs (f32 bits whose low 13 mantissa bits the
    /// tensor cores ignore) and k = 8: the same accumulator layout, at half the k per
    /// instruction. TF32's wgmma reads both operands contiguous along k only, so `b`
    /// describes Bᵀ: 256 rows of n, each 8 values of k.
    wgmma_m64n256k8_tf32,
    "m64n256k8.f32.tf32.tf32",
    "1, 1",
    "8",
    "contiguous along k (rows of Bᵀ),",
    "256",
    128,
    [x x x x x x x]
);

wgmma_m64!(
    /// As [`wgmma_m64n256k16_bf16`] on half the columns: `D (64×128, f32) = A (64×16) · B
    /// (16×128) + (accumulate ? D : 0)`, the accumulators laid out the same way over 16 groups
    /// of 8 columns, `d[4j..4j+4]` for group `j`.
    wgmma_m64n128k16_bf16,
    "m64n128k16.f32.bf16.bf16",
    "1, 1, 0, 1",
    "16",
    "contiguous along n,",
    "128",
    64,
    [x x x x x x]
);

wgmma_m64!(
    /// As [`wgmma_m64n128k16_bf16`] with f16 inputs.
    wgmma_m64n128k16_f16,
    "m64n128k16.f32.f16.f16",
    "1, 1, 0, 1",
    "16",
    "contiguous along n,",
    "128",
    64,
    [x x x x x x]
);

wgmma_m64!(
    /// As [`wgmma_m64n256k8_tf32`] on half the columns (`b` describes 128 rows of Bᵀ).
    wgmma_m64n128k8_tf32,
    "m64n128k8.f32.tf32.tf32",
    "1, 1",
    "8",
    "contiguous along k (rows of Bᵀ),",
    "128",
    64,
    [x x x x x x]
);

wgmma_m64!(
    /// As [`wgmma_m64n256k16_bf16`] on three quarters of the columns: `D (64×192, f32) = A
    /// (64×16) · B (16×192) + (accumulate ? D : 0)`, over 24 groups of 8 columns, `d[4j..4j+4]`
    /// for group `j`.
    wgmma_m64n192k16_bf16,
    "m64n192k16.f32.bf16.bf16",
    "1, 1, 0, 1",
    "16",
    "contiguous along n,",
    "192",
    96,
    [x x x x x t]
);

wgmma_m64!(
    /// As [`wgmma_m64n192k16_bf16`] with f16 inputs.
    wgmma_m64n192k16_f16,
    "m64n192k16.f32.f16.f16",
    "1, 1, 0, 1",
    "16",
    "contiguous along n,",
    "192",
    96,
    [x x x x x t]
);

wgmma_m64!(
    /// As [`wgmma_m64n256k8_tf32`] on three quarters of the columns (`b` describes 192 rows of
    /// Bᵀ).
    wgmma_m64n192k8_tf32,
    "m64n192k8.f32.tf32.tf32",
    "1, 1",
    "8",
    "contiguous along k (rows of Bᵀ),",
    "192",
    96,
    [x x x x x t]
);

wgmma_m64!(
    /// As [`wgmma_m64n256k16_bf16`] on a quarter of the columns: `D (64×64, f32) = A (64×16) ·
    /// B (16×64) + (accumulate ? D : 0)`, over 8 groups of 8 columns, `d[4j..4j+4]` for group
    /// `j`.
    wgmma_m64n64k16_bf16,
    "m64n64k16.f32.bf16.bf16",
    "1, 1, 0, 1",
    "16",
    "contiguous along n,",
    "64",
    32,
    [x x x x x]
);

wgmma_m64!(
    /// As [`wgmma_m64n64k16_bf16`] with f16 inputs.
    wgmma_m64n64k16_f16,
    "m64n64k16.f32.f16.f16",
    "1, 1, 0, 1",
    "16",
    "contiguous along n,",
    "64",
    32,
    [x x x x x]
);

wgmma_m64!(
    /// As [`wgmma_m64n256k8_tf32`] on a quarter of the columns (`b` describes 64 rows of Bᵀ).
    wgmma_m64n64k8_tf32,
    "m64n64k8.f32.tf32.tf32",
    "1, 1",
    "8",
    "contiguous along k (rows of Bᵀ),",
    "64",
    32,
    [x x x x x]
);

/// Defines a `setmaxnreg` function for one direction and register count.
macro_rules! setmaxnreg {
    ($(#[$doc:meta])* $name:ident, $direction:literal, $registers:expr) => {
        $(#[$doc])*
        ///
        /// # Safety
        /// All 128 threads of an aligned warpgroup execute it together, in a kernel whose
        /// launch bounds (`.maxntid`) fix its register count at launch; the counts of all
        /// warpgroups fit the SM's register file.
        #[inline(always)]
        pub unsafe fn $name() {
            asm!(concat!("setmaxnreg.", $direction, ".sync.aligned.u32 ", stringify!($registers), ";"));
        }
    };
}

setmaxnreg!(
    /// Gives registers back: the warpgroup keeps 40 per thread (`setmaxnreg.dec`), for the
    /// other warpgroups of the block to take. A producer that only issues copies needs few.
    release_registers_to_40,
    "dec",
    40
);

setmaxnreg!(
    /// Takes registers: the warpgroup gets 232 per thread (`setmaxnreg.inc`), waiting until
    /// others have released enough. Consumers holding 128 accumulators each need them.
    claim_registers_to_232,
    "inc",
    232
);
