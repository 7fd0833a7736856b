//! The GPU side of the project: CUDA kernels in Rust, one family per module. `ptx/build.rs`
//! compiles this crate to PTX with rustc_codegen_nvvm; `host/` launches and checks them. The
//! sizes both sides must agree on come from the `interface` crate.
#![no_std]
#![cfg_attr(target_os = "cuda", feature(register_attr, asm, asm_experimental_arch), register_attr(nvvm_internal))]
#![allow(improper_ctypes_definitions)]

/// Runs `$body` once for each listed constant, bound to `$i`: a loop unrolled in the source.
/// libNVVM unrolls a loop on its own only while the unrolled body stays small; nvcc unrolls
/// the same loops in CUDA C, and a rolled loop pays a branch, a counter and a lost chance to
/// schedule loads early on every pass. A listed iteration the kernel does not need (an index
/// past a smaller filter, say) is removed when its guard is a constant.
#[macro_export]
macro_rules! unroll {
    ([$($n:literal),+], |$i:ident| $body:block) => {{
        $( { let $i: usize = $n; $body } )+
    }};
}

// Two PTX modules come from this crate (`ptx/build.rs`): without the `hopper` feature, every
// family for compute_80; with it, for compute_90 and `.target sm_90a`, only the kernels on
// Hopper's instructions, which the host loads on compute capability 9.0 alone.
macro_rules! not_hopper {
    ($($module:ident),+ $(,)?) => {
        $( #[cfg(not(feature = "hopper"))] pub mod $module; )+
    };
}

interface::for_each_family!(not_hopper);
// The `cp.async` helpers the matmul and convolution kernels share.
not_hopper!(async_copy);
pub mod tensor;
/// The Hopper module's matrix products: `matmul/wgmma*.rs` and the FP8 conversions, without
/// the SIMT ladder.
#[cfg(feature = "hopper")]
#[path = "matmul"]
pub mod matmul {
    pub mod convert_fp8;
    pub mod wgmma;
    pub mod wgmma_fp8;
    pub mod wgmma_medium;
    pub mod wgmma_narrow;
    pub mod wgmma_persistent;
    pub mod wgmma_small;
    pub mod wgmma_tma_store;
}

use core::arch::asm;
use cuda_std::shared_array;
use cuda_std::thread;

/// `*ticket += 1` modulo `limit + 1` (`atom.inc` wraps to 0 after `limit`), returning the
/// ticket drawn.
#[inline(always)]
unsafe fn draw_ticket(ticket: *mut u32, limit: u32) -> u32 {
    let old: u32;
    asm!("atom.global.inc.u32 {o}, [{p}], {l};", o = out(reg32) old, p = in(reg64) ticket, l = in(reg32) limit);
    old
}

/// Whether this block is the last of the grid to get here: how a kernel finishes in one launch
/// what needs every block's result (the reduction's partials, a selection pass's counts).
/// Thread 0 writes the block's result before the call, and its fence makes the result visible
/// to every block before the ticket counts it, so the last block sees them all. (Where other
/// threads write it, each fences and the block meets at a barrier before the call.) The ticket
/// returns to 0 with the last draw.
///
/// # Safety
/// Every thread of the block calls it together; `ticket` is valid, and at 0 when the launch
/// began (else the result is wrong, though every access stays in bounds).
#[inline(always)]
pub unsafe fn last_block(ticket: *mut u32) -> bool {
    last_of(ticket, thread::grid_dim_x())
}

/// [`last_block`] among `arrivals` blocks that share `ticket` (a group of the grid): whether
/// this block is the last of them to get here.
///
/// # Safety
/// As [`last_block`]; exactly `arrivals` (at least 1) blocks call it on `ticket` per launch.
#[inline(always)]
pub unsafe fn last_of(ticket: *mut u32, arrivals: u32) -> bool {
    let last = shared_array![u32; 1];
    if thread::thread_idx_x() == 0 {
        thread::device_fence();
        *last = (draw_ticket(ticket, arrivals - 1) == arrivals - 1) as u32;
    }
    thread::sync_threads();
    *last != 0
}

/// Bit `l` set where lane `l`'s `condition` holds; every lane of the warp takes part.
///
/// # Safety
/// All 32 lanes of the warp call it together.
#[inline(always)]
pub unsafe fn ballot(condition: bool) -> u32 {
    let out: u32;
    asm!(
        "{{ .reg .pred p; setp.ne.u32 p, {c}, 0; vote.sync.ballot.b32 {o}, p, 0xffffffff; }}",
        o = out(reg32) out,
        c = in(reg32) condition as u32,
        options(nomem, nostack),
    );
    out
}

/// The shared-memory address (`.shared` window, 32 bits) of a generic pointer into shared
/// memory: what `red.shared` and `cp.async` take.
///
/// # Safety
/// `ptr` points into this block's shared memory (a generic address outside it converts to a
/// meaningless shared one).
#[inline(always)]
pub unsafe fn shared_address<T>(ptr: *mut T) -> u32 {
    let address: u64;
    asm!("cvta.to.shared.u64 {a}, {p};", a = out(reg64) address, p = in(reg64) ptr);
    address as u32
}

/// The f64 at `address` in this block's shared memory (the `.shared` window's 32 bits,
/// [`shared_address`]): a loop over shared memory then steps by 32-bit offsets, as CUDA C's
/// does, where a generic pointer's offsets cost 64-bit adds and shifts at every load.
///
/// # Safety
/// `address` is 8-byte aligned and holds an f64 of this block's shared memory that no thread
/// writes until the block's next barrier.
#[inline(always)]
pub unsafe fn load_shared_f64(address: u32) -> f64 {
    let value: f64;
    asm!("ld.shared.f64 {v}, [{a}];", v = out(reg64) value, a = in(reg32) address, options(pure, readonly, nostack));
    value
}

/// [`load_shared_f64`] where `wanted`, else 0: one predicated load, where a load under an `if`
/// compiles to a branch around it.
///
/// # Safety
/// Where `wanted`, as [`load_shared_f64`].
#[inline(always)]
pub unsafe fn load_shared_f64_if(wanted: bool, address: u32) -> f64 {
    let value: f64;
    asm!(
        "{{ .reg .pred p; setp.ne.u32 p, {w}, 0; mov.b64 {v}, 0; @p ld.shared.f64 {v}, [{a}]; }}",
        v = out(reg64) value,
        w = in(reg32) wanted as u32,
        a = in(reg32) address,
        options(pure, readonly, nostack),
    );
    value
}

/// The f32 at `address` in this block's shared memory: [`load_shared_f64`]'s, for a 4-byte
/// value.
///
/// # Safety
/// `address` is 4-byte aligned and holds an f32 of this block's shared memory that no thread
/// writes until the block's next barrier.
#[inline(always)]
pub unsafe fn load_shared_f32(address: u32) -> f32 {
    let value: f32;
    asm!("ld.shared.f32 {v}, [{a}];", v = out(reg32) value, a = in(reg32) address, options(pure, readonly, nostack));
    value
}

/// This thread's index in a 1D grid, `blockIdx.x * blockDim.x + threadIdx.x`, computed in 64
/// bits: cuda_std's `index_1d` is a `u32`, which wraps once an array passes 2^32 elements.
#[inline(always)]
pub fn global_index() -> usize {
    thread::block_idx_x() as usize * thread::block_dim_x() as usize + thread::thread_idx_x() as usize
}

/// Threads in the 1D grid: the step of a grid-stride loop.
#[inline(always)]
pub fn grid_threads() -> usize {
    thread::block_dim_x() as usize * thread::grid_dim_x() as usize
}

/// Four values moved as one 16-byte load or store (`ld.global.v4`, `st.global.v4`): a quarter
/// of the instructions of scalar accesses for the same bytes, and more bytes in flight per
/// thread. The pointer must be 16-byte aligned: buffers from `cuMemAlloc` are (256 bytes), so
/// element `4·i` of one is.
#[derive(Clone, Copy)]
#[repr(C, align(16))]
pub struct Quad<T>(pub [T; 4]);

/// Quad `i` of `data`, that is elements `4·i .. 4·i + 4`, with one 16-byte load.
///
/// # Safety
/// `4·i + 4 <= data.len()`, and `data` starts 16-byte aligned.
#[inline(always)]
pub unsafe fn load_quad<T: Copy>(data: &[T], i: usize) -> Quad<T> {
    read_quad(data.as_ptr(), i)
}

/// [`load_quad`] through a raw pointer, for memory the kernel also writes.
///
/// # Safety
/// Elements `4·i .. 4·i + 4` lie inside the allocation behind `data`, which is 16-byte
/// aligned, and no other thread writes them meanwhile.
#[inline(always)]
pub unsafe fn read_quad<T: Copy>(data: *const T, i: usize) -> Quad<T> {
    *(data as *const Quad<T>).add(i)
}

/// Stores `value` as quad `i` of `data` (elements `4·i .. 4·i + 4`) with one 16-byte store.
///
/// # Safety
/// The four elements lie inside the allocation behind `data`, which is 16-byte aligned.
#[inline(always)]
pub unsafe fn store_quad<T: Copy>(data: *mut T, i: usize, value: Quad<T>) {
    *(data as *mut Quad<T>).add(i) = value;
}
