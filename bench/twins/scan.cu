// Twin of kernels/src/scan.rs: single-pass exclusive scan with decoupled look-back. Tiles
// numbered by an atomic counter, one 64-bit word per tile (value high, flag low), warp-striped
// 16-byte loads, interleaved warp scans of the rows, the first warp looks back after a sleep.
#pragma once  // compact.cu builds on it
#include "twins.cuh"

struct SumU32 {
    typedef unsigned T;
    static __device__ __forceinline__ T zero() { return 0u; }
    static __device__ __forceinline__ T plus(T a, T b) { return a + b; }
    static __device__ __forceinline__ unsigned bits(T v) { return v; }
    static __device__ __forceinline__ T from_bits(unsigned b) { return b; }
};

struct SumF32 {
    typedef float T;
    static __device__ __forceinline__ T zero() { return 0.0f; }
    static __device__ __forceinline__ T plus(T a, T b) { return a + b; }
    static __device__ __forceinline__ unsigned bits(T v) { return __float_as_uint(v); }
    static __device__ __forceinline__ T from_bits(unsigned b) { return __uint_as_float(b); }
};

template <class S>
struct Quad {
    typename S::T v[4];
};

template <class S>
static __device__ __forceinline__ typename S::T shuffle_up(typename S::T v, unsigned delta) {
    return S::from_bits(__shfl_up_sync(0xffffffffu, S::bits(v), delta));
}

template <class S>
static __device__ __forceinline__ typename S::T shuffle_from(typename S::T v, unsigned lane) {
    return S::from_bits(__shfl_sync(0xffffffffu, S::bits(v), lane));
}

template <class S>
static __device__ __forceinline__ typename S::T warp_sum(typename S::T v) {
    for (unsigned mask = 16; mask >= 1; mask /= 2) v = S::plus(v, S::from_bits(__shfl_xor_sync(0xffffffffu, S::bits(v), mask)));
    return v;
}

template <class S>
static __device__ __forceinline__ unsigned long long scan_word(unsigned flag, typename S::T v) {
    return ((unsigned long long)S::bits(v) << 32) | flag;
}

static __device__ __forceinline__ size_t scan_tiles(size_t n) { return n / SCAN_TILE + (n % SCAN_TILE != 0); }

static __device__ __forceinline__ size_t scan_quad_index(size_t tile, int j) {
    unsigned lane = threadIdx.x % 32, warp = threadIdx.x / 32;
    return tile * (SCAN_TILE / 4) + ((size_t)warp * SCAN_QUADS_PER_THREAD + j) * 32 + lane;
}

// The block's tile number, or -1 past the last tile.
static __device__ __forceinline__ long long scan_next_tile(unsigned long long* scratch, size_t n) {
    __shared__ unsigned slot;
    if (threadIdx.x == 0) slot = atomicAdd(reinterpret_cast<unsigned*>(scratch), 1u);
    __syncthreads();
    size_t tile = slot;
    return tile < scan_tiles(n) ? (long long)tile : -1;
}

// Windows of 32 tiles the look-back reads per round trip (WINDOWS in the Rust).
#define SCAN_WINDOWS 1

template <class S>
static __device__ __forceinline__ typename S::T look_back(unsigned long long* states, size_t tile,
                                                          typename S::T aggregate, unsigned lane) {
    typedef typename S::T T;
    volatile unsigned long long* words = states;
    if (tile == 0) {
        if (lane == 0) words[0] = scan_word<S>(SCAN_FLAG_PREFIX, aggregate);
        return S::zero();
    }
    if (lane == 0) words[tile] = scan_word<S>(SCAN_FLAG_AGGREGATE, aggregate);
    __nanosleep(SCAN_LOOK_BACK_WAIT_NS);
    T prefix = S::zero();
    unsigned end = (unsigned)tile;  // 32 bits, as the tile counter is
    while (true) {
        unsigned long long seen[SCAN_WINDOWS];
#pragma unroll  // unroll! in the Rust
        for (int m = 0; m < SCAN_WINDOWS; ++m) {
            unsigned back = 32 * m + lane + 1;
            seen[m] = end >= back ? words[end - back] : scan_word<S>(SCAN_FLAG_PREFIX, S::zero());
        }
        bool found = false, stalled = false;
#pragma unroll
        for (int m = 0; m < SCAN_WINDOWS; ++m) {
            if (!found && !stalled) {
                unsigned long long state = seen[m];
                if (__ballot_sync(0xffffffffu, (unsigned)state == SCAN_FLAG_NONE) != 0) {
                    stalled = true;
                    __nanosleep(SCAN_LOOK_BACK_RETRY_NS);
                } else {
                    unsigned prefixes = __ballot_sync(0xffffffffu, (unsigned)state == SCAN_FLAG_PREFIX);
                    unsigned nearest = prefixes != 0 ? __ffs(prefixes) - 1 : 31;
                    T value = lane <= nearest ? S::from_bits((unsigned)(state >> 32)) : S::zero();
                    prefix = S::plus(prefix, warp_sum<S>(value));
                    found = prefixes != 0;
                    end -= 32;
                }
            }
        }
        if (found) break;
    }
    if (lane == 0) words[tile] = scan_word<S>(SCAN_FLAG_PREFIX, S::plus(prefix, aggregate));
    return prefix;
}

template <class T>
struct TileSums {
    T warp_before, tile_before, tile_through;
};

// Scans a tile from each thread's quad sums: sums[j] becomes the sum of the warp's values before
// quad j; returns the sums before the warp, before the tile and through its end.
template <class S>
static __device__ __forceinline__ TileSums<typename S::T> scan_tile(typename S::T (&sums)[SCAN_QUADS_PER_THREAD],
                                                                    size_t tile, unsigned long long* scratch,
                                                                    typename S::T* total, bool last) {
    typedef typename S::T T;
    __shared__ unsigned warp_totals[SCAN_WARPS];
    __shared__ unsigned warp_prefixes[SCAN_WARPS + 1];  // then the sum through the tile's end
    unsigned lane = threadIdx.x % 32, warp = threadIdx.x / 32;

    T inclusive[SCAN_QUADS_PER_THREAD];
    for (int j = 0; j < SCAN_QUADS_PER_THREAD; ++j) inclusive[j] = sums[j];
#pragma unroll  // the Rust unrolls these five steps by hand (unroll!)
    for (unsigned delta = 1; delta < 32; delta *= 2) {
        for (int j = 0; j < SCAN_QUADS_PER_THREAD; ++j) {
            T below = shuffle_up<S>(inclusive[j], delta);
            if (lane >= delta) inclusive[j] = S::plus(below, inclusive[j]);
        }
    }
    T rows = S::zero();
    for (int j = 0; j < SCAN_QUADS_PER_THREAD; ++j) {
        T lanes = shuffle_up<S>(inclusive[j], 1);
        sums[j] = lane == 0 ? rows : S::plus(rows, lanes);
        rows = S::plus(rows, shuffle_from<S>(inclusive[j], 31));
    }
    if (lane == 0) warp_totals[warp] = S::bits(rows);
    __syncthreads();

    if (warp == 0) {
        T warps = lane < SCAN_WARPS ? S::from_bits(warp_totals[lane]) : S::zero();
#pragma unroll  // unroll! in the Rust
        for (unsigned delta = 1; delta < 32; delta *= 2) {
            if (delta < SCAN_WARPS) {
                T below = shuffle_up<S>(warps, delta);
                if (lane >= delta) warps = S::plus(below, warps);
            }
        }
        T aggregate = shuffle_from<S>(warps, SCAN_WARPS - 1);
        T earlier = shuffle_up<S>(warps, 1);
        T prefix = look_back<S>(scratch + 1, tile, aggregate, lane);
        if (lane < SCAN_WARPS) warp_prefixes[lane] = S::bits(lane == 0 ? prefix : S::plus(prefix, earlier));
        if (lane == 0) {
            T through = S::plus(prefix, aggregate);
            warp_prefixes[SCAN_WARPS] = S::bits(through);
            if (last) *total = through;
        }
    }
    __syncthreads();
    return {S::from_bits(warp_prefixes[warp]), S::from_bits(warp_prefixes[0]), S::from_bits(warp_prefixes[SCAN_WARPS])};
}

template <class S, class V4>
static __device__ __forceinline__ void scan_exclusive(const typename S::T* __restrict__ input, size_t n,
                                                      typename S::T* output, unsigned long long* scratch,
                                                      typename S::T* total) {
    typedef typename S::T T;
    long long next = scan_next_tile(scratch, n);
    if (next < 0) return;
    size_t tile = (size_t)next, start = tile * SCAN_TILE;
    bool full = n - start >= SCAN_TILE;
    Quad<S> values[SCAN_QUADS_PER_THREAD];
    for (int j = 0; j < SCAN_QUADS_PER_THREAD; ++j) {
        size_t quad = scan_quad_index(tile, j);
        if (full) {
            V4 v = reinterpret_cast<const V4*>(input)[quad];
            values[j].v[0] = v.x, values[j].v[1] = v.y, values[j].v[2] = v.z, values[j].v[3] = v.w;
        } else {
            for (int k = 0; k < 4; ++k) values[j].v[k] = 4 * quad + k < n ? input[4 * quad + k] : S::zero();
        }
    }
    T before[SCAN_QUADS_PER_THREAD];
    for (int j = 0; j < SCAN_QUADS_PER_THREAD; ++j) {
        // The quad's own exclusive prefixes replace its values.
        T* q = values[j].v;
        T one = q[0], two = S::plus(q[0], q[1]);
        T three = S::plus(two, q[2]);
        before[j] = S::plus(three, q[3]);
        q[0] = S::zero(), q[1] = one, q[2] = two, q[3] = three;
    }
    T offset = scan_tile<S>(before, tile, scratch, total, n - start <= SCAN_TILE).warp_before;
    for (int j = 0; j < SCAN_QUADS_PER_THREAD; ++j) {
        size_t quad = scan_quad_index(tile, j);
        const T* inside = values[j].v;
        T first = S::plus(offset, before[j]);
        T p[4] = {first, S::plus(first, inside[1]), S::plus(first, inside[2]), S::plus(first, inside[3])};
        if (full) {
            V4 v;
            v.x = p[0], v.y = p[1], v.z = p[2], v.w = p[3];
            reinterpret_cast<V4*>(output)[quad] = v;
        } else {
            for (int k = 0; k < 4; ++k)
                if (4 * quad + k < n) output[4 * quad + k] = p[k];
        }
    }
}

extern "C" __global__ void __launch_bounds__(SCAN_BLOCK, SCAN_MIN_BLOCKS_PER_SM) scan_exclusive_u32(const unsigned* __restrict__ input, size_t n, unsigned* output,
                                              unsigned long long* scratch, unsigned* total) {
    scan_exclusive<SumU32, uint4>(input, n, output, scratch, total);
}

extern "C" __global__ void __launch_bounds__(SCAN_BLOCK, SCAN_MIN_BLOCKS_PER_SM) scan_exclusive_f32(const float* __restrict__ input, size_t n, float* output,
                                              unsigned long long* scratch, float* total) {
    scan_exclusive<SumF32, float4>(input, n, output, scratch, total);
}
