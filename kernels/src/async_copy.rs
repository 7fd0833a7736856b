//! Asynchronous copies from global to shared memory (`cp.async`, sm_80 and later): the SM's
//! copy engine writes the data into shared memory when it arrives, without the value passing
//! through a register, while the thread goes on computing.
//!
//! A thread issues copies, closes them into a *group* ([`commit_copies`]), and later waits
//! until few enough of its groups are still in flight ([`wait_all_copies`],
//! [`wait_copies_but_newest`]). The wait covers only this thread's own copies: a barrier
//! (`sync_threads`) after it makes every thread's copies visible to the whole block.
//!
//! Shared addresses are 32-bit offsets in the `.shared` window ([`crate::shared_address`]).
//! The PTX instructions read their address registers only when the memory pipe takes them, so
//! an instruction that overwrites one of those registers waits until then.

use core::arch::asm;

/// Copies the first `bytes` (4 or 0) of the 4 bytes at `global` to the shared address `shared`
/// and zero-fills the rest (`cp.async.ca.shared.global [s], [g], 4, bytes`; `.ca` caches in L1).
/// With `bytes == 0` nothing is read, so `global` may be any valid address: that is how edge
/// blocks write zeros past the end of a matrix.
///
/// # Safety
/// `global` is 4-byte aligned and, when `bytes == 4`, readable; `shared` is a 4-byte aligned
/// shared address that no thread reads or writes until a wait and a barrier follow.
#[inline(always)]
pub unsafe fn copy_async_4(shared: u32, global: *const f32, bytes: u32) {
    asm!("cp.async.ca.shared.global [{s}], [{g}], 4, {n};", s = in(reg32) shared, g = in(reg64) global, n = in(reg32) bytes);
}

/// Copies the 16 bytes at `global` to the shared address `shared`
/// (`cp.async.cg.shared.global [s], [g], 16`). `.cg` caches in L2 only, bypassing L1: the data
/// is read once per block, so L1 would only be polluted by it.
///
/// # Safety
/// `global` is readable for 16 bytes and 16-byte aligned; `shared` is 16-byte aligned and, like
/// [`copy_async_4`]'s, untouched by any thread until a wait and a barrier follow.
#[inline(always)]
pub unsafe fn copy_async_16(shared: u32, global: *const f32) {
    asm!("cp.async.cg.shared.global [{s}], [{g}], 16;", s = in(reg32) shared, g = in(reg64) global);
}

/// Copies the first `bytes` (16 or 0) of the 16 bytes at `global` to the shared address
/// `shared` and zero-fills the rest (`cp.async.cg.shared.global [s], [g], 16, bytes`): a
/// 16-byte piece of a tile, or zeros where the piece lies past the matrix. As with
/// [`copy_async_4`], nothing is read when `bytes == 0`.
///
/// # Safety
/// `global` is 16-byte aligned and, when `bytes == 16`, readable for 16 bytes; `shared` is as
/// [`copy_async_16`]'s.
#[inline(always)]
pub unsafe fn copy_async_16_or_zero<T>(shared: u32, global: *const T, bytes: u32) {
    asm!("cp.async.cg.shared.global [{s}], [{g}], 16, {n};", s = in(reg32) shared, g = in(reg64) global, n = in(reg32) bytes);
}

/// Closes the copies this thread issued since the last commit into one group
/// (`cp.async.commit_group`). A group may be empty; the waits count groups, not copies.
#[inline(always)]
pub fn commit_copies() {
    // SAFETY: it only marks a point in this thread's stream of copies; it touches no memory.
    unsafe { asm!("cp.async.commit_group;") };
}

/// Waits until every group of copies this thread committed has landed
/// (`cp.async.wait_group 0`).
#[inline(always)]
pub fn wait_all_copies() {
    // SAFETY: it only waits for this thread's own copies and touches no memory itself. As an
    // `asm!` without `nomem` it is also a compiler barrier: no shared load moves above it.
    unsafe { asm!("cp.async.wait_group 0;") };
}

/// Waits until at most one group of this thread's copies, the newest, is still in flight
/// (`cp.async.wait_group 1`): with three stages, the slice after next may keep arriving while
/// the block computes on the next one.
#[inline(always)]
pub fn wait_copies_but_newest() {
    // SAFETY: it only waits for this thread's own copies and touches no memory itself. As an
    // `asm!` without `nomem` it is also a compiler barrier: no shared load moves above it.
    unsafe { asm!("cp.async.wait_group 1;") };
}
