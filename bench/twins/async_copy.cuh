// Twin of kernels/src/async_copy.rs (and of shared_address in kernels/src/lib.rs): cp.async
// copies from global to shared memory, and the group commit and waits. "memory" clobbers make
// each one a compiler barrier, as an asm! without `nomem` is in Rust.
#pragma once

static __device__ __forceinline__ unsigned shared_address(const void* p) {
    size_t address;
    asm("cvta.to.shared.u64 %0, %1;" : "=l"(address) : "l"(p));
    return (unsigned)address;
}
// The first `bytes` (4 or 0) of 4 bytes, the rest zero-filled.
static __device__ __forceinline__ void copy_async_4(unsigned shared, const float* global, unsigned bytes) {
    asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;" ::"r"(shared), "l"(global), "r"(bytes) : "memory");
}
static __device__ __forceinline__ void copy_async_16(unsigned shared, const float* global) {
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(shared), "l"(global) : "memory");
}
static __device__ __forceinline__ void commit_copies() { asm volatile("cp.async.commit_group;" ::: "memory"); }
static __device__ __forceinline__ void wait_all_copies() { asm volatile("cp.async.wait_group 0;" ::: "memory"); }
static __device__ __forceinline__ void wait_copies_but_newest() {
    asm volatile("cp.async.wait_group 1;" ::: "memory");
}
// The first `bytes` (16 or 0) of 16 bytes, the rest zero-filled.
static __device__ __forceinline__ void copy_async_16_or_zero(unsigned shared, const void* global, unsigned bytes) {
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" ::"r"(shared), "l"(global), "r"(bytes) : "memory");
}
