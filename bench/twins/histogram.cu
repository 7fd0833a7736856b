// Twin of kernels/src/histogram.rs (binning rule: interface/src/histogram.rs). The same
// operations in the same order, so every value lands in the same bin as in the Rust kernel.
#include "twins.cuh"

struct U32Bins {
    unsigned bins;
    __device__ __forceinline__ bool bin(unsigned v, unsigned& b) const {
        b = v;
        return v < bins;
    }
};

// NumPy's bins over [lo, hi]: an f32 estimate, checked against the exact edges near a border.
struct F32Bins {
    double lo, step;
    float first, last;
    unsigned bins;
    float bins_per_unit, near;
    __device__ __forceinline__ F32Bins(double l, double h, unsigned n)
        : lo(l), step((h - l) / n), first((float)l), last((float)h), bins(n) {
        double per_unit = n / (h - l);
        bins_per_unit = (float)per_unit;
        double magnitude = fmax(fabs(l), fabs(h));
        near = (float)(4.0 * ((2.0 * magnitude * per_unit + 3.0 * n) * (1.0 / 16777216.0)));
    }
    // Multiply, then add, each rounded: never contracted into an fma.
    __device__ __forceinline__ float edge(unsigned b) const {
        return b == bins ? last : (float)__dadd_rn(__dmul_rn((double)b, step), lo);
    }
    __device__ __forceinline__ bool bin(float v, unsigned& b) const {
        if (!(v >= first && v <= last)) return false;  // NaN fails too
        float estimate = (v - first) * bins_per_unit;
        unsigned whole = (unsigned)estimate;
        float fraction = estimate - (float)whole;
        b = whole >= bins ? bins - 1 : whole;
        if (whole >= bins || fraction < near || fraction > 1.0f - near) {
            while (b > 0 && v < edge(b)) --b;
            while (b + 1 < bins && v >= edge(b + 1)) ++b;
        }
        return true;
    }
};

template <class Rule, class T>
__device__ __forceinline__ void histogram_global(const T* __restrict__ values, size_t len, Rule rule,
                                                 unsigned* counts) {
    size_t stride = grid_threads();
    for (size_t i = global_index(); i < len; i += stride) {
        unsigned b;
        if (rule.bin(values[i], b)) atomicAdd(counts + b, 1u);
    }
}

// Block-private bins in dynamic shared memory (bins * 4 bytes, set at launch).
extern __shared__ unsigned histogram_local[];

template <class Rule, class T>
__device__ __forceinline__ void count(Rule rule, T value) {
    unsigned b;
    if (rule.bin(value, b)) atomicAdd(histogram_local + b, 1u);  // unused result: red.shared
}

template <class Rule>
__device__ __forceinline__ void zero_local(Rule rule) {
    for (size_t b = threadIdx.x; b < rule.bins; b += blockDim.x) histogram_local[b] = 0;
    __syncthreads();
}

template <class Rule>
__device__ __forceinline__ void merge_local(Rule rule, unsigned* counts) {
    __syncthreads();
    for (size_t b = threadIdx.x; b < rule.bins; b += blockDim.x) {
        unsigned c = histogram_local[b];
        if (c != 0) atomicAdd(counts + b, c);
    }
}

template <class Rule, class T>
__device__ __forceinline__ void histogram_shared(const T* __restrict__ values, size_t len, Rule rule,
                                                 unsigned* counts) {
    zero_local(rule);
    size_t stride = grid_threads();
    for (size_t i = global_index(); i < len; i += stride) count(rule, values[i]);
    merge_local(rule, counts);
}

template <class Rule, class T, class T4>
__device__ __forceinline__ void histogram_shared_vec4(const T* __restrict__ values, size_t len, Rule rule,
                                                      unsigned* counts) {
    zero_local(rule);
    size_t quads = len / 4;
    size_t stride = grid_threads();
    const T4* values4 = reinterpret_cast<const T4*>(values);
    for (size_t q = global_index(); q < quads; q += stride) {
        T4 quad = values4[q];
        count(rule, quad.x);
        count(rule, quad.y);
        count(rule, quad.z);
        count(rule, quad.w);
    }
    // The last len % 4 values, one each for the first threads of the grid.
    size_t tail = 4 * quads + global_index();
    if (tail < len) count(rule, values[tail]);
    merge_local(rule, counts);
}

extern "C" __global__ void histogram_global_u32(const unsigned* __restrict__ values, size_t len, unsigned bins,
                                                unsigned* counts) {
    histogram_global(values, len, U32Bins{bins}, counts);
}

extern "C" __global__ void histogram_global_f32(const float* __restrict__ values, size_t len, double lo, double hi,
                                                unsigned bins, unsigned* counts) {
    histogram_global(values, len, F32Bins(lo, hi, bins), counts);
}

extern "C" __global__ void histogram_shared_u32(const unsigned* __restrict__ values, size_t len, unsigned bins,
                                                unsigned* counts) {
    histogram_shared(values, len, U32Bins{bins}, counts);
}

extern "C" __global__ void __launch_bounds__(HISTOGRAM_F32_BOUNDS_THREADS, HISTOGRAM_F32_BOUNDS_BLOCKS) histogram_shared_f32(const float* __restrict__ values, size_t len, double lo, double hi,
                                                unsigned bins, unsigned* counts) {
    histogram_shared(values, len, F32Bins(lo, hi, bins), counts);
}

extern "C" __global__ void histogram_shared_vec4_u32(const unsigned* __restrict__ values, size_t len,
                                                     unsigned bins, unsigned* counts) {
    histogram_shared_vec4<U32Bins, unsigned, uint4>(values, len, U32Bins{bins}, counts);
}

extern "C" __global__ void __launch_bounds__(HISTOGRAM_F32_BOUNDS_THREADS, HISTOGRAM_F32_BOUNDS_BLOCKS) histogram_shared_vec4_f32(const float* __restrict__ values, size_t len, double lo,
                                                     double hi, unsigned bins, unsigned* counts) {
    histogram_shared_vec4<F32Bins, float, float4>(values, len, F32Bins(lo, hi, bins), counts);
}
