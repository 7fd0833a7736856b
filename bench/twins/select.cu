// Twin of kernels/src/select.rs (key, digits and state layout: interface/src/select.rs and
// window.rs): radix select, three counting passes, each ending with its last block's find.
#include "twins.cuh"

namespace select_twin {

const unsigned kNone = 0xFFFFFFFFu;

__device__ __forceinline__ unsigned key(float v) {
    unsigned bits = __float_as_uint(v);
    return bits ^ ((unsigned)((int)bits >> 31) | 0x80000000u);
}

__device__ __forceinline__ unsigned digit_bits(size_t pass) {
    return pass == 0 ? SELECT_HIGH_BITS : pass == 1 ? SELECT_MIDDLE_BITS : SELECT_LOW_BITS;
}

__device__ __forceinline__ unsigned shift(size_t pass) {
    return pass == 0 ? 32 - SELECT_HIGH_BITS : pass == 1 ? 32 - SELECT_HIGH_BITS - SELECT_MIDDLE_BITS : 0;
}

__device__ __forceinline__ unsigned prefix_mask(size_t pass) {
    return pass == 0 ? 0u : ~((1u << (shift(pass) + digit_bits(pass))) - 1);
}

__device__ __forceinline__ void prefixes(size_t pass, const unsigned* state, unsigned prefix[SELECT_SLOTS]) {
    if (pass == 0) {
        prefix[0] = prefix[1] = 0;
        return;
    }
    unsigned mask = prefix_mask(pass);
    prefix[0] = state[SELECT_STATE_PREFIX] & mask;
    prefix[1] = state[SELECT_STATE_PREFIX + 1] & mask;
}

struct Digits {
    double low, high;
    unsigned mask, prefix[SELECT_SLOTS];
    bool split;
    unsigned shift, digit;

    __device__ __forceinline__ Digits(double lo, double hi, size_t pass, const unsigned* state) : low(lo), high(hi) {
        mask = prefix_mask(pass);
        prefixes(pass, state, prefix);
        split = prefix[0] != prefix[1];
        shift = select_twin::shift(pass);
        digit = (1u << digit_bits(pass)) - 1;
    }
    __device__ __forceinline__ size_t slots() const { return split ? 2 : 1; }
    __device__ __forceinline__ size_t buckets() const { return (size_t)digit + 1; }
    __device__ __forceinline__ unsigned bucket(float value) const {
        double v = (double)value;
        if (!(low < v && v < high)) return kNone;  // NaN lies in no window
        unsigned k = key(value);
        unsigned top = k & mask;
        unsigned slot;
        if (top == prefix[0]) slot = 0;
        else if (split && top == prefix[1]) slot = SELECT_RADIX;
        else return kNone;
        return slot + ((k >> shift) & digit);
    }
};

// All 32 lanes call it: one add of 32 when the warp holds one bucket, else one per lane.
__device__ __forceinline__ void count(unsigned* bins, unsigned bucket) {
    unsigned first = __shfl_sync(0xFFFFFFFFu, bucket, 0);
    if (__all_sync(0xFFFFFFFFu, bucket == first)) {
        if (bucket != kNone && threadIdx.x % 32 == 0) atomicAdd(bins + bucket, 32u);
    } else if (bucket != kNone) {
        atomicAdd(bins + bucket, 1u);
    }
}

}  // namespace select_twin

namespace select_twin {

// Inclusive prefix sums over the block (SELECT_COUNT_BLOCK threads) for both slots, and totals.
__device__ __forceinline__ void block_scan(unsigned inclusive[SELECT_SLOTS], unsigned totals[SELECT_SLOTS],
                                           unsigned* sums) {
    const unsigned warps = SELECT_COUNT_BLOCK / 32;
    unsigned lane = threadIdx.x % 32;
    size_t warp = threadIdx.x / 32;
    for (unsigned delta = 1; delta < 32; delta *= 2)
        for (int s = 0; s < SELECT_SLOTS; ++s) {
            unsigned below = __shfl_up_sync(0xFFFFFFFFu, inclusive[s], delta);
            if (lane >= delta) inclusive[s] += below;
        }
    if (lane == 31)
        for (int s = 0; s < SELECT_SLOTS; ++s) sums[s * warps + warp] = inclusive[s];
    __syncthreads();
    if (warp == 0) {
        unsigned warp_sums[SELECT_SLOTS] = {};
        if (lane < warps)
            for (int s = 0; s < SELECT_SLOTS; ++s) warp_sums[s] = sums[s * warps + lane];
        for (unsigned delta = 1; delta < 32; delta *= 2)
            for (int s = 0; s < SELECT_SLOTS; ++s) {
                unsigned below = __shfl_up_sync(0xFFFFFFFFu, warp_sums[s], delta);
                if (lane >= delta) warp_sums[s] += below;
            }
        if (lane < warps)
            for (int s = 0; s < SELECT_SLOTS; ++s) sums[s * warps + lane] = warp_sums[s];
    }
    __syncthreads();
    for (int s = 0; s < SELECT_SLOTS; ++s) {
        if (warp > 0) inclusive[s] += sums[s * warps + warp - 1];
        totals[s] = sums[s * warps + warps - 1];
    }
}

}  // namespace select_twin

namespace select_twin {

// The find after pass `pass`, by the last block of the pass (volatile reads: other blocks added
// to the histogram during this launch).
__device__ __forceinline__ void find(unsigned* histogram, size_t pass, unsigned rank, unsigned median,
                                     unsigned* state) {
    __shared__ unsigned sums[SELECT_SLOTS * SELECT_COUNT_BLOCK / 32];
    unsigned prefix[SELECT_SLOTS];
    prefixes(pass, state, prefix);
    bool split = prefix[0] != prefix[1];
    size_t buckets = (size_t)1 << digit_bits(pass);
    size_t first = threadIdx.x * (size_t)SELECT_FIND_BUCKETS;

    unsigned counts[SELECT_SLOTS][SELECT_FIND_BUCKETS] = {};
    for (int j = 0; j < SELECT_FIND_BUCKETS; ++j) {
        size_t b = first + j;
        if (b < buckets) {
            counts[0][j] = ((volatile unsigned*)histogram)[b];
            histogram[b] = 0;
            if (split) {
                counts[1][j] = ((volatile unsigned*)histogram)[SELECT_RADIX + b];
                histogram[SELECT_RADIX + b] = 0;
            } else {
                counts[1][j] = counts[0][j];
            }
        }
    }
    unsigned mine[SELECT_SLOTS] = {}, inclusive[SELECT_SLOTS], totals[SELECT_SLOTS];
    for (int s = 0; s < SELECT_SLOTS; ++s) {
        for (int j = 0; j < SELECT_FIND_BUCKETS; ++j) mine[s] += counts[s][j];
        inclusive[s] = mine[s];
    }
    block_scan(inclusive, totals, sums);

    unsigned ranks[SELECT_SLOTS];
    if (pass == 0) {
        unsigned count = totals[0];
        if (median == SELECT_FIND_MEDIAN) ranks[0] = (count - 1) / 2, ranks[1] = count / 2;
        else ranks[0] = ranks[1] = rank;
        bool empty = count == 0 || ranks[1] >= count;
        if (threadIdx.x == 0) {
            state[SELECT_STATE_COUNT] = count;
            state[SELECT_STATE_EMPTY] = empty;
        }
        if (empty) return;
    } else {
        ranks[0] = state[SELECT_STATE_RANK];
        ranks[1] = state[SELECT_STATE_RANK + 1];
    }
    // Every thread has read the state before any writes it.
    __syncthreads();

    for (int s = 0; s < SELECT_SLOTS; ++s) {
        unsigned below = inclusive[s] - mine[s];
        for (int j = 0; j < SELECT_FIND_BUCKETS; ++j) {
            unsigned c = counts[s][j];
            if (below <= ranks[s] && ranks[s] - below < c) {
                state[SELECT_STATE_PREFIX + s] = prefix[s] | ((unsigned)(first + j) << shift(pass));
                state[SELECT_STATE_RANK + s] = ranks[s] - below;
            }
            below += c;
        }
    }
}

}  // namespace select_twin

extern "C" __global__ void select_count_vec4(const float* __restrict__ values, size_t len, double low, double high,
                                             unsigned pass_, unsigned rank, unsigned median, unsigned* state,
                                             unsigned* histogram) {
    using namespace select_twin;
    size_t pass = pass_;
    if (pass > 0 && state[SELECT_STATE_EMPTY] != 0) return;
    Digits digits(low, high, pass, state);
    __shared__ unsigned bins[SELECT_HISTOGRAM_LEN];
    size_t tid = threadIdx.x, threads = blockDim.x;
    for (size_t s = 0; s < digits.slots(); ++s)
        for (size_t b = tid; b < digits.buckets(); b += threads) bins[s * SELECT_RADIX + b] = 0;
    __syncthreads();

    size_t quads = len / 4, stride = grid_threads(), lane = threadIdx.x % 32;
    const float4* values4 = reinterpret_cast<const float4*>(values);
    // SELECT_COUNT_QUADS loads in flight before any is counted.
    for (size_t warp_quad = global_index() - lane; warp_quad < quads; warp_quad += SELECT_COUNT_QUADS * stride) {
        float4 batch[SELECT_COUNT_QUADS];
#pragma unroll
        for (int u = 0; u < SELECT_COUNT_QUADS; ++u) {
            size_t q = warp_quad + u * stride + lane;
            batch[u] = q < quads ? values4[q] : make_float4(NAN, NAN, NAN, NAN);
        }
#pragma unroll
        for (int u = 0; u < SELECT_COUNT_QUADS; ++u) {
            count(bins, digits.bucket(batch[u].x));
            count(bins, digits.bucket(batch[u].y));
            count(bins, digits.bucket(batch[u].z));
            count(bins, digits.bucket(batch[u].w));
        }
    }
    if (global_index() - lane == 0) {
        size_t tail = 4 * quads + lane;
        count(bins, digits.bucket(tail < len ? values[tail] : NAN));
    }
    __syncthreads();

    for (size_t s = 0; s < digits.slots(); ++s)
        for (size_t b = tid; b < digits.buckets(); b += threads) {
            unsigned c = bins[s * SELECT_RADIX + b];
            if (c != 0) atomicAdd(histogram + s * SELECT_RADIX + b, c);
        }
    __threadfence();  // every thread's adds before the block's ticket
    __syncthreads();
    if (last_block(state + SELECT_STATE_TICKET)) find(histogram, pass, rank, median, state);
}
