//! Atomics: why `counter += 1` breaks when many threads do it at once.
//!
//! Each of `threads` threads adds 1 to a single counter in global memory (the grid is rounded
//! up to whole blocks, so threads past `threads` do nothing). `counter_racy` does it the
//! obvious way: load, add, store. Thousands of threads load the same old value before any of
//! them stores, so most increments overwrite each other and the final count comes out far
//! below the number of threads (volatile accesses keep the compiler from merging them; the
//! race is in the hardware, not the compiler).
//!
//! `counter_atomic` uses `atom.add`, a read-modify-write that the memory system performs as
//! one indivisible step, so no increment is lost and the count is exact. Atomics on one
//! address serialize in L2, which is why real code (see `histogram`) spreads them over many
//! addresses and merges per-block partial results.

use crate::global_index;
use core::sync::atomic::Ordering;
use cuda_std::atomic::mid::atomic_fetch_add_u32_device;
use cuda_std::prelude::*;

/// # Safety
/// `counter` points to one `u32` in device memory, which the launcher (`CounterArgs` on the
/// host) checks exists. Any one-dimensional grid: threads at `threads` and past do nothing.
#[kernel]
pub unsafe fn counter_racy(counter: *mut u32, threads: u32) {
    if global_index() < threads as usize {
        let seen = core::ptr::read_volatile(counter);
        core::ptr::write_volatile(counter, seen + 1);
    }
}

/// # Safety
/// As for [`counter_racy`].
#[kernel]
pub unsafe fn counter_atomic(counter: *mut u32, threads: u32) {
    if global_index() < threads as usize {
        atomic_fetch_add_u32_device(counter, Ordering::Relaxed, 1);
    }
}
