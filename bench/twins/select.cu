// Twin of kernels/src/select.rs (key, digits and state layout: interface/src/select.rs and
// window.rs): radix select, three counting passes, each ending with its last block's find.
#include "twins.cuh"

namespace select_twin {

const unsigned kNone = 0xFFFFFFFFu;

__device__ __forceinline__ unsigned key(float v) {
    unsigned bits = __float_as_uint(v);
    return bits ^ ((unsigned)((int)bits >> 31) | 0x80000000u);
}

__device__ __forceinline__ float value(unsigned k) {
    return __uint_as_float(k & 0x80000000u ? k ^ 0x80000000u : ~k);
}

// The keys of the f32 values strictly inside (low, high), as Window::keys: each bound rounded to
// the nearest f32, then stepped inward until strictly inside; empty (first > last) for a NaN bound.
__device__ __forceinline__ void window_keys(double low, double high, unsigned* first, unsigned* last) {
    if (isnan(low) || isnan(high)) {
        *first = 1, *last = 0;
        return;
    }
    unsigned lowest = key(-INFINITY), highest = key(INFINITY);
    unsigned f = key((float)low);
    while (f < highest && (double)value(f) <= low) ++f;
    unsigned l = key((float)high);
    while (l > lowest && (double)value(l) >= high) --l;
    *first = f, *last = l;
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
    unsigned first, last;
    unsigned mask, prefix[SELECT_SLOTS];
    bool split;
    unsigned shift, digit;

    __device__ __forceinline__ Digits(double low, double high, size_t pass, const unsigned* state) {
        window_keys(low, high, &first, &last);
        mask = prefix_mask(pass);
        prefixes(pass, state, prefix);
        split = prefix[0] != prefix[1];
        shift = select_twin::shift(pass);
        digit = (1u << digit_bits(pass)) - 1;
    }
    __device__ __forceinline__ size_t slots() const { return split ? 2 : 1; }
    __device__ __forceinline__ size_t buckets() const { return (size_t)digit + 1; }
    __device__ __forceinline__ unsigned bucket(float value) const {
        unsigned k = key(value);
        if (!(first <= k && k <= last)) return kNone;  // NaN's keys lie past the finite ones'
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

// Appends the keepers' values to `gathered`: one atomic per warp, each keeper at its rank among
// them; places past SELECT_GATHER_CAP are not written.
__device__ __forceinline__ void gather(float* gathered, unsigned* gathered_count, float v, bool keep) {
    unsigned keepers = __ballot_sync(0xFFFFFFFFu, keep);
    if (keepers == 0) return;
    unsigned lane = threadIdx.x % 32, start = 0;
    if (lane == 0) start = atomicAdd(gathered_count, (unsigned)__popc(keepers));
    unsigned place = __shfl_sync(0xFFFFFFFFu, start, 0) + __popc(keepers & ((1u << lane) - 1));
    if (keep && place < SELECT_GATHER_CAP) gathered[place] = v;
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
__device__ __forceinline__ void find(unsigned* histogram, size_t pass, unsigned rank, unsigned find_what,
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
        if (find_what == SELECT_FIND_RANK) ranks[0] = ranks[1] = rank;
        else ranks[0] = (count - 1) / 2, ranks[1] = count / 2;
        bool known = find_what == SELECT_FIND_MEDIAN_UNLESS_COUNT && count == rank;
        bool stop = count == 0 || ranks[1] >= count || known;
        if (threadIdx.x == 0) {
            state[SELECT_STATE_COUNT] = count;
            state[SELECT_STATE_EMPTY] = stop;
        }
        if (stop) return;
    } else {
        ranks[0] = state[SELECT_STATE_RANK];
        ranks[1] = state[SELECT_STATE_RANK + 1];
    }
    // Every thread has read the state before any writes it.
    __syncthreads();

    // Each slot's bucket and its count, for the first pass's choice to gather.
    __shared__ unsigned found[2 * SELECT_SLOTS];
    for (int s = 0; s < SELECT_SLOTS; ++s) {
        unsigned below = inclusive[s] - mine[s];
        for (int j = 0; j < SELECT_FIND_BUCKETS; ++j) {
            unsigned c = counts[s][j];
            if (below <= ranks[s] && ranks[s] - below < c) {
                state[SELECT_STATE_PREFIX + s] = prefix[s] | ((unsigned)(first + j) << shift(pass));
                state[SELECT_STATE_RANK + s] = ranks[s] - below;
                found[2 * s] = (unsigned)(first + j);
                found[2 * s + 1] = c;
            }
            below += c;
        }
    }
    if (pass == 0) {
        __syncthreads();
        if (threadIdx.x == 0) {
            unsigned second = found[2] != found[0] ? found[3] : 0;  // two slots in one bucket gather it once
            bool fits = (unsigned long long)found[1] + second <= SELECT_GATHER_CAP;
            state[SELECT_STATE_GATHERED] = fits ? 0 : SELECT_NOT_GATHERED;
        }
    }
}

}  // namespace select_twin

namespace select_twin {

// This thread's share of the values, counted into the block's bins (and gathered with Gather).
template <bool Gather>
__device__ __forceinline__ void count_values(const float* values, size_t len, const Digits& digits, unsigned* bins,
                                             size_t index, size_t stride, float* gathered,
                                             unsigned* gathered_count) {
    size_t quads = len / 4, lane = threadIdx.x % 32;
    const float4* values4 = reinterpret_cast<const float4*>(values);
    // SELECT_COUNT_QUADS loads in flight before any is counted.
    for (size_t warp_quad = index - lane; warp_quad < quads; warp_quad += SELECT_COUNT_QUADS * stride) {
        float4 batch[SELECT_COUNT_QUADS];
#pragma unroll
        for (int u = 0; u < SELECT_COUNT_QUADS; ++u) {
            size_t q = warp_quad + u * stride + lane;
            batch[u] = q < quads ? values4[q] : make_float4(NAN, NAN, NAN, NAN);
        }
#pragma unroll
        for (int u = 0; u < SELECT_COUNT_QUADS; ++u) {
            float v[4] = {batch[u].x, batch[u].y, batch[u].z, batch[u].w};
            bool kept = false;
#pragma unroll
            for (int j = 0; j < 4; ++j) {
                unsigned bucket = digits.bucket(v[j]);
                count(bins, bucket);
                kept |= bucket != kNone;
            }
            // Few quads hold a value to gather: one vote per quad skips the rest.
            if (Gather && __ballot_sync(0xFFFFFFFFu, kept) != 0)
#pragma unroll
                for (int j = 0; j < 4; ++j) gather(gathered, gathered_count, v[j], digits.bucket(v[j]) != kNone);
        }
    }
    if (index - lane == 0) {
        size_t tail = 4 * quads + lane;
        float v = tail < len ? values[tail] : NAN;
        unsigned bucket = digits.bucket(v);
        count(bins, bucket);
        if (Gather) gather(gathered, gathered_count, v, bucket != kNone);
    }
}

}  // namespace select_twin

extern "C" __global__ void select_count_vec4(const float* __restrict__ values, size_t len, double low, double high,
                                             unsigned pass_, unsigned rank, unsigned find_what, unsigned* state,
                                             unsigned* histogram, float* gathered) {
    using namespace select_twin;
    size_t pass = pass_;
    if (pass > 0 && state[SELECT_STATE_EMPTY] != 0) return;
    unsigned* gathered_count = state + SELECT_STATE_GATHERED;
    bool gathering = pass == 1 && *gathered_count != SELECT_NOT_GATHERED;
    // The last pass reads what the second gathered, where it did, with the blocks it needs.
    size_t blocks = gridDim.x;
    if (pass == 2 && *gathered_count != SELECT_NOT_GATHERED) {
        values = gathered;
        len = min((size_t)*gathered_count, (size_t)SELECT_GATHER_CAP);
        size_t needed = (len + SELECT_VALUES_PER_BLOCK_TRIP - 1) / SELECT_VALUES_PER_BLOCK_TRIP;
        blocks = min(needed > 0 ? needed : (size_t)1, blocks);
    }
    size_t block = blockIdx.x;
    if (block >= blocks) return;
    Digits digits(low, high, pass, state);
    __shared__ unsigned bins[SELECT_HISTOGRAM_LEN];
    size_t tid = threadIdx.x, threads = blockDim.x;
    for (size_t s = 0; s < digits.slots(); ++s)
        for (size_t b = tid; b < digits.buckets(); b += threads) bins[s * SELECT_RADIX + b] = 0;
    __syncthreads();

    // The loop twice over, with and without the gathering: counting alone tests nothing more.
    size_t index = block * threads + tid;
    if (gathering) count_values<true>(values, len, digits, bins, index, blocks * threads, gathered, gathered_count);
    else count_values<false>(values, len, digits, bins, index, blocks * threads, gathered, gathered_count);
    __syncthreads();

    for (size_t s = 0; s < digits.slots(); ++s)
        for (size_t b = tid; b < digits.buckets(); b += threads) {
            unsigned c = bins[s * SELECT_RADIX + b];
            if (c != 0) atomicAdd(histogram + s * SELECT_RADIX + b, c);
        }
    __threadfence();  // every thread's adds before the block's ticket
    __syncthreads();
    if (last_of(state + SELECT_STATE_TICKET, (unsigned)blocks)) find(histogram, pass, rank, find_what, state);
}
