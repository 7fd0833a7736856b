// Twin of kernels/src/matmul/wgmma.rs, wgmma_persistent.rs, wgmma_narrow.rs, wgmma_small.rs,
// wgmma_medium.rs and wgmma_tma_store.rs, with the wrappers of kernels/src/tensor/hopper.rs: TF32/BF16/FP16 C = A x B (f32 accumulate and
// output; TF32 reads B transposed) on
// wgmma.mma_async fed by TMA through a ring of mbarrier-guarded stages, producer and consumer
// warpgroups with setmaxnreg; then the persistent grid in grouped tile order, on wide (128x256),
// narrow (128x128), small (128x64) or medium (128x192) tiles, and on wide tiles with a TMA-store
// epilogue; then the FP8 step
// with its conversions (wgmma_fp8.cu, included at the end). Split k's layers (step H3) are summed
// by step 4d's reduction, matmul_split_reduce in split_k.cu, in the main module. The same PTX
// instructions, tiles, stages and order as the Rust. A translation unit of its own, built for
// sm_90a (bench/twins/build, with a CUDA 12 or newer nvcc).
#include <stddef.h>
#include <stdint.h>

#include "../interface.h"
#include "common.cuh"  // split_slices, shared with step 4d

// A tensor map, as the driver encodes it (the host passes its global address).
struct alignas(64) TensorMap {
    unsigned long long opaque[16];
};

static __device__ __forceinline__ unsigned shared_address(const void* p) {
    return (unsigned)__cvta_generic_to_shared(p);
}

// 128-byte swizzle (1 in bits 62-63); leading and stride byte offsets / 16.
static __device__ __forceinline__ uint64_t matrix_descriptor(unsigned address, unsigned leading, unsigned stride) {
    auto field = [](unsigned bytes) { return (uint64_t)((bytes >> 4) & 0x3fff); };
    return field(address) | (field(leading) << 16) | (field(stride) << 32) | (1ull << 62);
}

static __device__ __forceinline__ void mbarrier_init(unsigned bar, unsigned count) {
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(bar), "r"(count));
}
static __device__ __forceinline__ void fence_barrier_init() {
    asm volatile("fence.mbarrier_init.release.cluster;");
}
static __device__ __forceinline__ void mbarrier_arrive(unsigned bar) {
    asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" ::"r"(bar));
}
static __device__ __forceinline__ void mbarrier_arrive_expect_tx(unsigned bar, unsigned bytes) {
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(bar), "r"(bytes));
}
static __device__ __forceinline__ bool mbarrier_try_wait(unsigned bar, unsigned parity) {
    unsigned done;
    asm volatile(
        "{ .reg .pred p; mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2; selp.u32 %0, 1, 0, p; }"
        : "=r"(done)
        : "r"(bar), "r"(parity));
    return done != 0;
}
// Whether this lane is the one its warp elects (all 32 lanes call it together).
static __device__ __forceinline__ bool elect_one() {
    unsigned elected;
    asm volatile("{ .reg .pred p; elect.sync _|p, 0xffffffff; selp.u32 %0, 1, 0, p; }" : "=r"(elected));
    return elected != 0;
}
static __device__ __forceinline__ void mbarrier_wait(unsigned bar, unsigned parity) {
    while (!mbarrier_try_wait(bar, parity)) {
    }
}
static __device__ __forceinline__ void tma_load_2d(unsigned dst, const TensorMap* map, int x, int y, unsigned bar) {
    asm volatile(
        "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3}], [%4];" ::"r"(
            dst),
        "l"(map), "r"(x), "r"(y), "r"(bar));
}
static __device__ __forceinline__ void tma_store_2d(const TensorMap* map, unsigned src, int x, int y) {
    asm volatile("cp.async.bulk.tensor.2d.global.shared::cta.bulk_group [%0, {%2, %3}], [%1];" ::"l"(map), "r"(src),
                 "r"(x), "r"(y)
                 : "memory");
}
static __device__ __forceinline__ void bulk_commit() { asm volatile("cp.async.bulk.commit_group;" ::: "memory"); }
template <int N>
static __device__ __forceinline__ void bulk_wait_read() {
    asm volatile("cp.async.bulk.wait_group.read %0;" ::"n"(N) : "memory");
}
static __device__ __forceinline__ void bulk_wait() { asm volatile("cp.async.bulk.wait_group 0;" ::: "memory"); }
static __device__ __forceinline__ void fence_proxy_async() { asm volatile("fence.proxy.async.shared::cta;" ::: "memory"); }
static __device__ __forceinline__ void prefetch_tensor_map(const TensorMap* map) {
    asm volatile("prefetch.tensormap [%0];" ::"l"(map));
}
static __device__ __forceinline__ void wgmma_fence() { asm volatile("wgmma.fence.sync.aligned;"); }
static __device__ __forceinline__ void wgmma_commit() { asm volatile("wgmma.commit_group.sync.aligned;"); }
template <int N>
static __device__ __forceinline__ void wgmma_wait() {
    asm volatile("wgmma.wait_group.sync.aligned %0;" ::"n"(N));
}

// The operand list of one m64n256k16: 128 accumulators (their f32 bits, as in the Rust), then
// the two descriptors and the scale-d flag.
#define WGMMA_R10(t) "%" #t "0, %" #t "1, %" #t "2, %" #t "3, %" #t "4, %" #t "5, %" #t "6, %" #t "7, %" #t "8, %" #t "9, "
#define WGMMA_D(i) "+r"(d[i])
#define WGMMA_D8(i) \
    WGMMA_D(i), WGMMA_D(i + 1), WGMMA_D(i + 2), WGMMA_D(i + 3), WGMMA_D(i + 4), WGMMA_D(i + 5), WGMMA_D(i + 6), WGMMA_D(i + 7)
#define WGMMA_D32(i) WGMMA_D8(i), WGMMA_D8(i + 8), WGMMA_D8(i + 16), WGMMA_D8(i + 24)
// shape_types: "m64n256k16.f32.bf16.bf16" and the like; flags: the immediates after the
// predicate (16-bit types: scale-a, scale-b, trans-a 0, trans-b 1; TF32: no transpose flags).
#define WGMMA_M64N256(shape_types, flags)                                                                          \
    asm volatile("{ .reg .pred p; setp.ne.b32 p, %130, 0; wgmma.mma_async.sync.aligned." shape_types                \
                 " {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, " WGMMA_R10(1) WGMMA_R10(2) WGMMA_R10(3) WGMMA_R10(4)    \
                     WGMMA_R10(5) WGMMA_R10(6) WGMMA_R10(7) WGMMA_R10(8) WGMMA_R10(9) WGMMA_R10(10) WGMMA_R10(11)  \
                 "%120, %121, %122, %123, %124, %125, %126, %127}, %128, %129, p, " flags "; }"                     \
                 : WGMMA_D32(0), WGMMA_D32(32), WGMMA_D32(64), WGMMA_D32(96)                                       \
                 : "l"(a), "l"(b), "r"(scale))
// The same at n192: 96 accumulators.
#define WGMMA_M64N192(shape_types, flags)                                                                          \
    asm volatile("{ .reg .pred p; setp.ne.b32 p, %98, 0; wgmma.mma_async.sync.aligned." shape_types                 \
                 " {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, " WGMMA_R10(1) WGMMA_R10(2) WGMMA_R10(3) WGMMA_R10(4)    \
                     WGMMA_R10(5) WGMMA_R10(6) WGMMA_R10(7) WGMMA_R10(8)                                           \
                 "%90, %91, %92, %93, %94, %95}, %96, %97, p, " flags "; }"                                         \
                 : WGMMA_D32(0), WGMMA_D32(32), WGMMA_D32(64)                                                      \
                 : "l"(a), "l"(b), "r"(scale))
// The same at n128: 64 accumulators.
#define WGMMA_M64N128(shape_types, flags)                                                                          \
    asm volatile("{ .reg .pred p; setp.ne.b32 p, %66, 0; wgmma.mma_async.sync.aligned." shape_types                 \
                 " {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, " WGMMA_R10(1) WGMMA_R10(2) WGMMA_R10(3) WGMMA_R10(4)    \
                     WGMMA_R10(5) "%60, %61, %62, %63}, %64, %65, p, " flags "; }"                                  \
                 : WGMMA_D32(0), WGMMA_D32(32)                                                                     \
                 : "l"(a), "l"(b), "r"(scale))
// The same at n64: 32 accumulators.
#define WGMMA_M64N64(shape_types, flags)                                                                           \
    asm volatile("{ .reg .pred p; setp.ne.b32 p, %34, 0; wgmma.mma_async.sync.aligned." shape_types                 \
                 " {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, " WGMMA_R10(1) WGMMA_R10(2)                            \
                 "%30, %31}, %32, %33, p, " flags "; }"                                                            \
                 : WGMMA_D32(0)                                                                                    \
                 : "l"(a), "l"(b), "r"(scale))

static __device__ __forceinline__ void release_registers_to_40() {
    asm volatile("setmaxnreg.dec.sync.aligned.u32 40;");
}
static __device__ __forceinline__ void claim_registers_to_232() {
    asm volatile("setmaxnreg.inc.sync.aligned.u32 232;");
}

static constexpr unsigned kRowBytes = 128, kSwizzleBlock = 8 * kRowBytes;
// Bytes of one TMA box of B (64 rows of 128 bytes, every type) and of the k one instruction
// takes from a row contiguous along k (16 16-bit or 8 TF32 values).
static constexpr unsigned kBoxBytes = WGMMA_BOX_N * kRowBytes, kKStepBytes = 32;

// An operand contiguous along k (A, and TF32's B transposed): 32 bytes further per instruction.
static __device__ __forceinline__ uint64_t k_major_descriptor(unsigned base, unsigned kk) {
    return matrix_descriptor(base + kk * kKStepBytes, 16, kSwizzleBlock);
}

// BF16 or FP16: B contiguous along n, read transposed; a k-step is 16 rows of it.
template <bool F16>
struct Half {
    static constexpr unsigned kBk = WGMMA_BK;
    static constexpr bool kScaled = false;
    static __device__ __forceinline__ void b_box(size_t k0, size_t n, int& x, int& y) { x = (int)n, y = (int)k0; }
    static __device__ __forceinline__ uint64_t b_descriptor(unsigned b, unsigned kk) {
        return matrix_descriptor(b + kk * 16 * kRowBytes, kBoxBytes, kSwizzleBlock);
    }
    static __device__ __forceinline__ void mma(uint32_t (&d)[128], uint64_t a, uint64_t b, bool accumulate) {
        unsigned scale = accumulate;
        if (F16) {
            WGMMA_M64N256("m64n256k16.f32.f16.f16", "1, 1, 0, 1");
        } else {
            WGMMA_M64N256("m64n256k16.f32.bf16.bf16", "1, 1, 0, 1");
        }
    }
    static __device__ __forceinline__ void mma(uint32_t (&d)[96], uint64_t a, uint64_t b, bool accumulate) {
        unsigned scale = accumulate;
        if (F16) {
            WGMMA_M64N192("m64n192k16.f32.f16.f16", "1, 1, 0, 1");
        } else {
            WGMMA_M64N192("m64n192k16.f32.bf16.bf16", "1, 1, 0, 1");
        }
    }
    static __device__ __forceinline__ void mma(uint32_t (&d)[64], uint64_t a, uint64_t b, bool accumulate) {
        unsigned scale = accumulate;
        if (F16) {
            WGMMA_M64N128("m64n128k16.f32.f16.f16", "1, 1, 0, 1");
        } else {
            WGMMA_M64N128("m64n128k16.f32.bf16.bf16", "1, 1, 0, 1");
        }
    }
    static __device__ __forceinline__ void mma(uint32_t (&d)[32], uint64_t a, uint64_t b, bool accumulate) {
        unsigned scale = accumulate;
        if (F16) {
            WGMMA_M64N64("m64n64k16.f32.f16.f16", "1, 1, 0, 1");
        } else {
            WGMMA_M64N64("m64n64k16.f32.bf16.bf16", "1, 1, 0, 1");
        }
    }
};

// TF32: B transposed, contiguous along k like A; a k-step is 32 bytes along every row.
struct Tf32 {
    static constexpr unsigned kBk = WGMMA_BK_TF32;
    static constexpr bool kScaled = false;
    static __device__ __forceinline__ void b_box(size_t k0, size_t n, int& x, int& y) { x = (int)k0, y = (int)n; }
    static __device__ __forceinline__ uint64_t b_descriptor(unsigned b, unsigned kk) {
        return k_major_descriptor(b, kk);
    }
    static __device__ __forceinline__ void mma(uint32_t (&d)[128], uint64_t a, uint64_t b, bool accumulate) {
        unsigned scale = accumulate;
        WGMMA_M64N256("m64n256k8.f32.tf32.tf32", "1, 1");
    }
    static __device__ __forceinline__ void mma(uint32_t (&d)[96], uint64_t a, uint64_t b, bool accumulate) {
        unsigned scale = accumulate;
        WGMMA_M64N192("m64n192k8.f32.tf32.tf32", "1, 1");
    }
    static __device__ __forceinline__ void mma(uint32_t (&d)[64], uint64_t a, uint64_t b, bool accumulate) {
        unsigned scale = accumulate;
        WGMMA_M64N128("m64n128k8.f32.tf32.tf32", "1, 1");
    }
    static __device__ __forceinline__ void mma(uint32_t (&d)[32], uint64_t a, uint64_t b, bool accumulate) {
        unsigned scale = accumulate;
        WGMMA_M64N64("m64n64k8.f32.tf32.tf32", "1, 1");
    }
};

// A tile's width: its columns, the ring that feeds it, a consumer thread's accumulators.
struct Wide {
    static constexpr unsigned kBn = WGMMA_BN, kStages = WGMMA_STAGES, kStageBytes = WGMMA_STAGE_BYTES, kAcc = 128;
};
struct Narrow {
    static constexpr unsigned kBn = WGMMA_NARROW_BN, kStages = WGMMA_NARROW_STAGES,
                              kStageBytes = WGMMA_NARROW_STAGE_BYTES, kAcc = 64;
};
struct Medium {
    static constexpr unsigned kBn = WGMMA_MEDIUM_BN, kStages = WGMMA_MEDIUM_STAGES,
                              kStageBytes = WGMMA_MEDIUM_STAGE_BYTES, kAcc = 96;
};
struct Small {
    static constexpr unsigned kBn = WGMMA_SMALL_BN, kStages = WGMMA_SMALL_STAGES, kStageBytes = WGMMA_SMALL_STAGE_BYTES,
                              kAcc = 32;
};

extern __shared__ __align__(16) unsigned char wgmma_shared[];

// A place in the ring: a stage and the parity of its lap; one next() per slice.
struct Slot {
    unsigned stage, lap;
};
static constexpr Slot kFirstSlot{0, 0};

template <class W>
struct Ring {
    unsigned tiles, full, empty, staging_base;

    __device__ __forceinline__ static Ring make() {
        unsigned raw = shared_address(wgmma_shared);
        unsigned align = WGMMA_SWIZZLE_ALIGN;
        unsigned tiles = (raw + align - 1) & ~(align - 1);
        unsigned full = tiles + W::kStages * W::kStageBytes;
        unsigned empty = full + 8 * W::kStages;
        Ring ring{tiles, full, empty, empty + 8 * W::kStages};
        if (threadIdx.x == 0) {
            for (unsigned s = 0; s < W::kStages; ++s) {
                mbarrier_init(ring.full + 8 * s, 1);
                mbarrier_init(ring.empty + 8 * s, WGMMA_CONSUMERS * WGMMA_WARPGROUP / 32);
            }
            fence_barrier_init();
        }
        __syncthreads();
        return ring;
    }

    __device__ __forceinline__ void at(Slot slot, unsigned& stage, unsigned& full_bar, unsigned& empty_bar) const {
        unsigned s = slot.stage;
        stage = tiles + s * W::kStageBytes, full_bar = full + 8 * s, empty_bar = empty + 8 * s;
    }
    __device__ __forceinline__ static Slot next(Slot slot) {
        return slot.stage + 1 == W::kStages ? Slot{0, slot.lap ^ 1} : Slot{slot.stage + 1, slot.lap};
    }
    // The staging rounded up to the swizzle's alignment: the TMA-store step's boxes.
    __device__ __forceinline__ unsigned aligned_staging() const {
        return (staging_base + WGMMA_SWIZZLE_ALIGN - 1) & ~(unsigned)(WGMMA_SWIZZLE_ALIGN - 1);
    }
    // The epilogue staging of the calling consumer warp (its warp of the block, less the producer's four).
    __device__ __forceinline__ unsigned staging() const {
        size_t warp = threadIdx.x / 32 - WGMMA_WARPGROUP / 32;
        return staging_base + (unsigned)(warp * WGMMA_EPILOGUE_WARP_BYTES);
    }
};

// The producer's warp, all 32 lanes: waits for each free stage; one elected lane issues.
template <class T, class W>
static __device__ __forceinline__ Slot produce(const Ring<W>& ring, const TensorMap* maps, size_t m0, size_t n0,
                                               size_t k_first, size_t k_tiles, Slot slot) {
    const TensorMap *map_a = maps, *map_b = maps + 1;
    for (size_t t = 0; t < k_tiles; ++t) {
        unsigned stage, full, empty;
        ring.at(slot, stage, full, empty);
        mbarrier_wait(empty, slot.lap ^ 1);
        if (elect_one()) {
            mbarrier_arrive_expect_tx(full, W::kStageBytes);
            size_t k0 = (k_first + t) * T::kBk;
            tma_load_2d(stage, map_a, (int)k0, (int)m0, full);
            for (size_t j = 0; j < W::kBn / WGMMA_BOX_N; ++j) {
                int x, y;
                T::b_box(k0, n0 + j * WGMMA_BOX_N, x, y);
                tma_load_2d(stage + WGMMA_A_STAGE_BYTES + (unsigned)j * kBoxBytes, map_b, x, y, full);
            }
        }
        slot = Ring<W>::next(slot);
    }
    return slot;
}

// Both tensor maps, prefetched by one elected lane of the producer's warp.
static __device__ __forceinline__ void prefetch_maps(const TensorMap* maps) {
    if (elect_one()) {
        prefetch_tensor_map(maps);
        prefetch_tensor_map(maps + 1);
    }
}

// A consumer whose rows all lie past C (`active` false) multiplies nothing but still waits for
// and frees every slice, keeping the ring's phases.
template <class T, class W>
static __device__ __forceinline__ Slot consume(const Ring<W>& ring, size_t k_tiles, Slot slot, size_t consumer,
                                               bool active, uint32_t (&acc)[W::kAcc]) {
    size_t lane = threadIdx.x % 32;
    unsigned previous_empty = 0;
    for (size_t t = 0; t < k_tiles; ++t) {
        unsigned stage, full, empty;
        ring.at(slot, stage, full, empty);
        mbarrier_wait(full, slot.lap);
        if (active) {
            unsigned a = stage + (unsigned)(consumer * 64) * kRowBytes;
            unsigned b = stage + WGMMA_A_STAGE_BYTES;
            wgmma_fence();
            for (unsigned kk = 0; kk < kRowBytes / kKStepBytes; ++kk) {
                T::mma(acc, k_major_descriptor(a, kk), T::b_descriptor(b, kk), t > 0 || kk > 0);
            }
            wgmma_commit();
            wgmma_wait<1>();
        }
        if (t > 0 && lane == 0) mbarrier_arrive(previous_empty);
        previous_empty = empty;
        slot = Ring<W>::next(slot);
    }
    wgmma_wait<0>();
    if (lane == 0) mbarrier_arrive(previous_empty);
    return slot;
}

// x, y, z, w (their bits) at C[row][col..col + 4], those inside C: one 16-byte store when all
// four are and n keeps them aligned.
static __device__ __forceinline__ void store_quad(float* c, size_t row, size_t col, size_t m, size_t n, uint32_t x,
                                                  uint32_t y, uint32_t z, uint32_t w) {
    if (row >= m) return;
    float* at = c + row * n + col;
    float4 v = make_float4(__uint_as_float(x), __uint_as_float(y), __uint_as_float(z), __uint_as_float(w));
    if (col + 3 < n && n % 4 == 0) {
        *reinterpret_cast<float4*>(at) = v;
    } else {
        if (col < n) at[0] = v.x;
        if (col + 1 < n) at[1] = v.y;
        if (col + 2 < n) at[2] = v.z;
        if (col + 3 < n) at[3] = v.w;
    }
}

// One row's 16 columns of groups j and j + 1 (offset 0: the thread's row, 2: 8 rows below),
// traded within the quad: this thread stores the pairs of quad lanes from0, from1 of group j,
// or of group j + 1 when second.
template <unsigned N>
static __device__ __forceinline__ void trade_and_store(float* c, const uint32_t (&acc)[N], size_t j, size_t offset,
                                                       size_t row, size_t col, unsigned from0, unsigned from1,
                                                       bool second, size_t m, size_t n) {
    size_t self = 4 * j + offset, next = 4 * (j + 1) + offset;
    auto pair = [&](unsigned lane, uint32_t& v0, uint32_t& v1) {
        uint32_t s0 = __shfl_sync(0xffffffff, acc[self], lane), s1 = __shfl_sync(0xffffffff, acc[self + 1], lane);
        uint32_t n0 = __shfl_sync(0xffffffff, acc[next], lane), n1 = __shfl_sync(0xffffffff, acc[next + 1], lane);
        v0 = second ? n0 : s0, v1 = second ? n1 : s1;
    };
    uint32_t a0, a1, b0, b1;
    pair(from0, a0, a1);
    pair(from1, b0, b1);
    store_quad(c, row, col, m, n, a0, a1, b0, b1);
}

static __device__ __forceinline__ void stage_pair(unsigned address, uint32_t x, uint32_t y) {
    asm volatile("st.shared.v2.b32 [%0], {%1, %2};" ::"r"(address), "r"(x), "r"(y));
}
static __device__ __forceinline__ uint32_t staged(unsigned address) {
    uint32_t value;
    asm volatile("ld.shared.b32 %0, [%1];" : "=r"(value) : "r"(address));
    return value;
}

// Rows not 16-byte aligned: each 16 columns of the warp's 16 rows (from row0) through its
// staging, then stored two rows an instruction (wgmma.rs's store_tile_staged).
template <unsigned N>
static __device__ __forceinline__ void store_tile_staged(float* c, const uint32_t (&acc)[N], size_t row0, size_t n0,
                                                         size_t m, size_t n, unsigned staging) {
    constexpr unsigned kFloat = 4, kStride = WGMMA_EPILOGUE_STRIDE * kFloat;
    unsigned lane = threadIdx.x % 32;
    float* corner = c + row0 * n + n0;
    unsigned rows = (unsigned)(m > row0 ? (m - row0 < 16 ? m - row0 : 16) : 0);
    unsigned cols = (unsigned)(n > n0 ? (n - n0 < 2 * N ? n - n0 : 2 * N) : 0);
    unsigned put = staging + (lane / 4) * kStride + (lane % 4) * 2 * kFloat;
    unsigned col = lane % 16, below = 2 * (lane / 16);
#pragma unroll
    for (unsigned p = 0; p < N / 8; ++p) {
        unsigned at = 8 * p;
        stage_pair(put, acc[at], acc[at + 1]);
        stage_pair(put + 8 * kStride, acc[at + 2], acc[at + 3]);
        stage_pair(put + 8 * kFloat, acc[at + 4], acc[at + 5]);
        stage_pair(put + 8 * kStride + 8 * kFloat, acc[at + 6], acc[at + 7]);
        __syncwarp();
        for (unsigned i = 0; i < 8; ++i) {
            unsigned r = i / 2 * 4 + i % 2 + below, j = WGMMA_EPILOGUE_COLS * p + col;
            uint32_t value = staged(staging + r * kStride + col * kFloat);
            if (r < rows && j < cols) corner[(size_t)r * n + j] = __uint_as_float(value);
        }
        __syncwarp();
    }
}

// Columns 4t..4t+4 of each 16 are the pairs of quad lanes 2t and 2t + 1 (mod 4), of the first
// group for t < 2, of the second for t >= 2 (wgmma.rs's epilogue); rows not 16-byte aligned go
// through the warp's staging.
template <unsigned N>
static __device__ __forceinline__ void store_tile(float* c, const uint32_t (&acc)[N], size_t m0, size_t n0,
                                                  size_t consumer, size_t m, size_t n, unsigned staging) {
    size_t tid = threadIdx.x;
    unsigned lane = tid % 32, t = lane % 4;
    size_t warp_row = m0 + consumer * 64 + (tid / 32 % 4) * 16;
    if (n % 4 != 0) {
        store_tile_staged(c, acc, warp_row, n0, m, n, staging);
        return;
    }
    size_t row = warp_row + lane / 4;
    unsigned first = (lane & ~3u) + (2 * t) % 4;
#pragma unroll  // the Rust unrolls this loop by hand (count_up!)
    for (size_t p = 0; p < N / 8; ++p) {
        size_t col = n0 + 16 * p + 4 * t;
        trade_and_store(c, acc, 2 * p, 0, row, col, first, first + 1, t >= 2, m, n);
        trade_and_store(c, acc, 2 * p, 2, row + 8, col, first, first + 1, t >= 2, m, n);
    }
}

// The tile at (blockIdx.y, blockIdx.x) over split blockIdx.z of k (split_slices, common.cuh),
// into layer blockIdx.z of c (one layer: C itself; several: the partial products that
// split_k.cu's matmul_split_reduce sums).
template <class T>
static __device__ __forceinline__ void matmul_wgmma(const TensorMap* maps, float* c, size_t m, size_t n, size_t k) {
    Ring<Wide> ring = Ring<Wide>::make();
    size_t warpgroup = threadIdx.x / WGMMA_WARPGROUP;
    size_t split = blockIdx.z, k_first, k_tiles;
    split_slices((k + T::kBk - 1) / T::kBk, split, gridDim.z, k_first, k_tiles);
    size_t m0 = (size_t)blockIdx.y * WGMMA_BM, n0 = (size_t)blockIdx.x * WGMMA_BN;
    if (warpgroup == 0) {
        release_registers_to_40();
        if (threadIdx.x < 32) {
            prefetch_maps(maps);
            produce<T, Wide>(ring, maps, m0, n0, k_first, k_tiles, kFirstSlot);
        }
    } else {
        claim_registers_to_232();
        size_t consumer = warpgroup - 1;
        uint32_t acc[128];
        consume<T, Wide>(ring, k_tiles, kFirstSlot, consumer, m0 + 64 * consumer < m, acc);
        store_tile(c + split * m * n, acc, m0, n0, consumer, m, n, ring.staging());
    }
}

// Row and column (in tiles) of tile number `tile` in the grouped order.
static __device__ __forceinline__ void tile_position(size_t tile, size_t tiles_m, size_t tiles_n, size_t& row,
                                                     size_t& col) {
    // The Rust's divisors, 1 in place of 0 (which drops its division-by-zero panics).
    size_t per_group = WGMMA_GROUP_M * tiles_n > 1 ? WGMMA_GROUP_M * tiles_n : 1;
    size_t first_row = tile / per_group * WGMMA_GROUP_M;
    size_t left = tiles_m - first_row < WGMMA_GROUP_M ? tiles_m - first_row : WGMMA_GROUP_M;
    size_t rows = left > 1 ? left : 1;
    size_t within = tile % per_group;
    row = first_row + within % rows, col = within / rows;
}

// The producer's warp over this block's tiles, from blockIdx.x every gridDim.x-th in the grouped
// order: each tile's run of k_tiles slices from k_first on (wgmma_persistent.rs's produce_tiles).
template <class T, class W>
static __device__ __forceinline__ void produce_tiles(const Ring<W>& ring, const TensorMap* maps, size_t tiles_m,
                                                     size_t tiles_n, size_t k_first, size_t k_tiles) {
    Slot slot = kFirstSlot;
    for (size_t tile = blockIdx.x; tile < tiles_m * tiles_n; tile += gridDim.x) {
        size_t row, col;
        tile_position(tile, tiles_m, tiles_n, row, col);
        slot = produce<T, W>(ring, maps, row * WGMMA_BM, col * W::kBn, k_first, k_tiles, slot);
    }
}

// FP8 (wgmma_fp8.cu) multiplies the complete accumulators by `scale` before the store (the Rust's
// Mma::finish); the other types (kScaled false) ignore it.
template <class T, class W>
static __device__ __forceinline__ void matmul_wgmma_persistent(const TensorMap* maps, float* c, size_t m, size_t n,
                                                               size_t k, float scale = 1.0f) {
    Ring<W> ring = Ring<W>::make();
    size_t warpgroup = threadIdx.x / WGMMA_WARPGROUP;
    // Layer z of a grid `splits` deep: one run of k's slices into layer z of c (split k).
    size_t split = blockIdx.z, k_first, k_tiles;
    split_slices((k + T::kBk - 1) / T::kBk, split, gridDim.z, k_first, k_tiles);
    c += split * m * n;
    size_t tiles_m = (m + WGMMA_BM - 1) / WGMMA_BM, tiles_n = (n + W::kBn - 1) / W::kBn;
    size_t tiles = tiles_m * tiles_n;
    if (warpgroup == 0) {
        release_registers_to_40();
        if (threadIdx.x < 32) {
            prefetch_maps(maps);
            produce_tiles<T, W>(ring, maps, tiles_m, tiles_n, k_first, k_tiles);
        }
    } else {
        claim_registers_to_232();
        size_t consumer = warpgroup - 1;
        unsigned staging = ring.staging();
        uint32_t acc[W::kAcc];
        Slot slot = kFirstSlot;
        for (size_t tile = blockIdx.x; tile < tiles; tile += gridDim.x) {
            size_t row, col;
            tile_position(tile, tiles_m, tiles_n, row, col);
            slot = consume<T, W>(ring, k_tiles, slot, consumer, row * WGMMA_BM + 64 * consumer < m, acc);
            if (T::kScaled) {
#pragma unroll
                for (unsigned i = 0; i < W::kAcc; ++i) acc[i] = __float_as_uint(__uint_as_float(acc[i]) * scale);
            }
            store_tile(c, acc, row * WGMMA_BM, col * W::kBn, consumer, m, n, staging);
        }
    }
}

// Step H8: a consumer warp's 16 rows of 2N columns to C through its WGMMA_STORE_BOXES swizzled
// boxes, one TMA store each 32 columns (wgmma_tma_store.rs's store_tile_async).
template <unsigned N>
static __device__ __forceinline__ void store_tile_async(const TensorMap* out, const uint32_t (&acc)[N], size_t row0,
                                                        size_t n0, unsigned boxes, unsigned& count) {
    unsigned lane = threadIdx.x % 32, r = lane / 4, t = lane % 4;
#pragma unroll
    for (unsigned q = 0; q < N / 16; ++q) {
        unsigned at = boxes + (count % WGMMA_STORE_BOXES) * WGMMA_STORE_BOX_BYTES;
        if (lane == 0) bulk_wait_read<WGMMA_STORE_BOXES - 1>();
        __syncwarp();
#pragma unroll
        for (unsigned g = 0; g < 4; ++g) {
            unsigned chunk = ((2 * g + t / 2) ^ r) * 16 + (t % 2) * 8, j = 4 * (4 * q + g);
            stage_pair(at + r * kRowBytes + chunk, acc[j], acc[j + 1]);
            stage_pair(at + (r + 8) * kRowBytes + chunk, acc[j + 2], acc[j + 3]);
        }
        fence_proxy_async();
        __syncwarp();
        if (lane == 0) {
            tma_store_2d(out, at, (int)(n0 + WGMMA_STORE_BOX_COLS * q), (int)row0);
            bulk_commit();
        }
        ++count;
    }
}

template <class T>
static __device__ __forceinline__ void matmul_wgmma_tma_store(const TensorMap* maps, const TensorMap* out, size_t m,
                                                              size_t n, size_t k) {
    Ring<Wide> ring = Ring<Wide>::make();
    size_t warpgroup = threadIdx.x / WGMMA_WARPGROUP;
    size_t k_tiles = (k + T::kBk - 1) / T::kBk;
    size_t tiles_m = (m + WGMMA_BM - 1) / WGMMA_BM, tiles_n = (n + WGMMA_BN - 1) / WGMMA_BN;
    size_t tiles = tiles_m * tiles_n;
    if (warpgroup == 0) {
        release_registers_to_40();
        if (threadIdx.x < 32) {
            prefetch_maps(maps);
            if (elect_one()) prefetch_tensor_map(out);
            produce_tiles<T, Wide>(ring, maps, tiles_m, tiles_n, 0, k_tiles);
        }
    } else {
        claim_registers_to_232();
        size_t consumer = warpgroup - 1, warp = threadIdx.x / 32 - WGMMA_WARPGROUP / 32;
        unsigned boxes = ring.aligned_staging() + (unsigned)(warp * WGMMA_STORE_WARP_BYTES), count = 0;
        size_t warp_row = 64 * consumer + warp % 4 * 16;
        uint32_t acc[Wide::kAcc];
        Slot slot = kFirstSlot;
        for (size_t tile = blockIdx.x; tile < tiles; tile += gridDim.x) {
            size_t row, col;
            tile_position(tile, tiles_m, tiles_n, row, col);
            slot = consume<T, Wide>(ring, k_tiles, slot, consumer, row * WGMMA_BM + 64 * consumer < m, acc);
            store_tile_async(out, acc, row * WGMMA_BM + warp_row, col * WGMMA_BN, boxes, count);
        }
        if (threadIdx.x % 32 == 0) bulk_wait();
    }
}

#define WGMMA_PARAMS const TensorMap* maps, float* c, size_t m, size_t n, size_t k
#define WGMMA_BOUNDS __launch_bounds__(WGMMA_THREADS, 1)

extern "C" __global__ void WGMMA_BOUNDS matmul_wgmma_tf32(WGMMA_PARAMS) { matmul_wgmma<Tf32>(maps, c, m, n, k); }
extern "C" __global__ void WGMMA_BOUNDS matmul_wgmma_bf16(WGMMA_PARAMS) { matmul_wgmma<Half<false>>(maps, c, m, n, k); }
extern "C" __global__ void WGMMA_BOUNDS matmul_wgmma_f16(WGMMA_PARAMS) { matmul_wgmma<Half<true>>(maps, c, m, n, k); }
extern "C" __global__ void WGMMA_BOUNDS matmul_wgmma_persistent_tf32(WGMMA_PARAMS) {
    matmul_wgmma_persistent<Tf32, Wide>(maps, c, m, n, k);
}
extern "C" __global__ void WGMMA_BOUNDS matmul_wgmma_persistent_bf16(WGMMA_PARAMS) {
    matmul_wgmma_persistent<Half<false>, Wide>(maps, c, m, n, k);
}
extern "C" __global__ void WGMMA_BOUNDS matmul_wgmma_persistent_f16(WGMMA_PARAMS) {
    matmul_wgmma_persistent<Half<true>, Wide>(maps, c, m, n, k);
}

// Step H5: the persistent grid on narrow tiles (128x128).
extern "C" __global__ void WGMMA_BOUNDS matmul_wgmma_narrow_tf32(WGMMA_PARAMS) {
    matmul_wgmma_persistent<Tf32, Narrow>(maps, c, m, n, k);
}
extern "C" __global__ void WGMMA_BOUNDS matmul_wgmma_narrow_bf16(WGMMA_PARAMS) {
    matmul_wgmma_persistent<Half<false>, Narrow>(maps, c, m, n, k);
}
extern "C" __global__ void WGMMA_BOUNDS matmul_wgmma_narrow_f16(WGMMA_PARAMS) {
    matmul_wgmma_persistent<Half<true>, Narrow>(maps, c, m, n, k);
}

// Step H6: the persistent grid on small (128x64) tiles.
extern "C" __global__ void WGMMA_BOUNDS matmul_wgmma_small_tf32(WGMMA_PARAMS) {
    matmul_wgmma_persistent<Tf32, Small>(maps, c, m, n, k);
}
extern "C" __global__ void WGMMA_BOUNDS matmul_wgmma_small_bf16(WGMMA_PARAMS) {
    matmul_wgmma_persistent<Half<false>, Small>(maps, c, m, n, k);
}
extern "C" __global__ void WGMMA_BOUNDS matmul_wgmma_small_f16(WGMMA_PARAMS) {
    matmul_wgmma_persistent<Half<true>, Small>(maps, c, m, n, k);
}

// Step H7: the persistent grid on medium (128x192) tiles.
extern "C" __global__ void WGMMA_BOUNDS matmul_wgmma_medium_tf32(WGMMA_PARAMS) {
    matmul_wgmma_persistent<Tf32, Medium>(maps, c, m, n, k);
}
extern "C" __global__ void WGMMA_BOUNDS matmul_wgmma_medium_bf16(WGMMA_PARAMS) {
    matmul_wgmma_persistent<Half<false>, Medium>(maps, c, m, n, k);
}
extern "C" __global__ void WGMMA_BOUNDS matmul_wgmma_medium_f16(WGMMA_PARAMS) {
    matmul_wgmma_persistent<Half<true>, Medium>(maps, c, m, n, k);
}

// Step H8: the wide persistent grid with the TMA-store epilogue; C through its tensor map `out`.
#define TMA_STORE_PARAMS const TensorMap *maps, const TensorMap *out, size_t m, size_t n, size_t k
extern "C" __global__ void WGMMA_BOUNDS matmul_wgmma_tma_store_tf32(TMA_STORE_PARAMS) {
    matmul_wgmma_tma_store<Tf32>(maps, out, m, n, k);
}
extern "C" __global__ void WGMMA_BOUNDS matmul_wgmma_tma_store_bf16(TMA_STORE_PARAMS) {
    matmul_wgmma_tma_store<Half<false>>(maps, out, m, n, k);
}
extern "C" __global__ void WGMMA_BOUNDS matmul_wgmma_tma_store_f16(TMA_STORE_PARAMS) {
    matmul_wgmma_tma_store<Half<true>>(maps, out, m, n, k);
}

// Step H4: FP8 (e4m3) inputs, and their conversions.
#include "wgmma_fp8.cu"
