// Twin of kernels/src/reduce/ (sizes: interface/src/reduce.rs). Same trees, same order of
// additions, explicit fma where the Rust calls mul_add, so both give the same bits.
#include "twins.cuh"

// 64-bit values cross a warp as two 32-bit shuffles, low half first, as the Rust does.
static __device__ __forceinline__ unsigned shuffle_down(unsigned v, unsigned delta) {
    return __shfl_down_sync(0xffffffffu, v, delta);
}
static __device__ __forceinline__ unsigned long long shuffle_down(unsigned long long v, unsigned delta) {
    unsigned low = shuffle_down((unsigned)v, delta), high = shuffle_down((unsigned)(v >> 32), delta);
    return (unsigned long long)high << 32 | low;
}
static __device__ __forceinline__ float shuffle_down(float v, unsigned delta) {
    return __uint_as_float(shuffle_down(__float_as_uint(v), delta));
}
static __device__ __forceinline__ double shuffle_down(double v, unsigned delta) {
    return __longlong_as_double((long long)shuffle_down((unsigned long long)__double_as_longlong(v), delta));
}

template <class T>
static __device__ __forceinline__ T warp_sum(T v) {
#pragma unroll
    for (unsigned delta = 16; delta > 0; delta /= 2) v = v + shuffle_down(v, delta);
    return v;
}

template <class T>
static __device__ __forceinline__ T block_sum(T value, T zero, T* totals) {
    unsigned tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
    T v = warp_sum(value);
    if (lane == 0) totals[warp] = v;
    __syncthreads();
    T total = zero;
    if (warp == 0) total = warp_sum(lane < REDUCE_WARPS ? totals[lane] : zero);
    return total;
}

// Two levels of tickets (the Rust `finish`): the last block of each group of FINISH_GROUP adds
// the group's partials over its first; the last of those adds the groups' totals.
static __device__ __forceinline__ void finish(double partial, double* partials, unsigned* tickets, double* sum) {
    unsigned tid = threadIdx.x;
    size_t block = blockIdx.x, blocks = gridDim.x;
    if (tid == 0) partials[block] = partial;
    size_t group = block / REDUCE_FINISH_GROUP, first = group * REDUCE_FINISH_GROUP;
    size_t members = blocks - first < REDUCE_FINISH_GROUP ? blocks - first : REDUCE_FINISH_GROUP;
    if (!last_of(tickets + group, (unsigned)members)) return;
    __shared__ double totals[REDUCE_WARPS];
    const volatile double* written = partials;
    double group_total = block_sum(tid < members ? written[first + tid] : 0.0, 0.0, totals);
    if (tid == 0) partials[first] = group_total;
    size_t groups = (blocks + REDUCE_FINISH_GROUP - 1) / REDUCE_FINISH_GROUP;
    if (!last_of(tickets + groups, (unsigned)groups)) return;
    double acc = 0.0;
    for (size_t g = tid; g < groups; g += REDUCE_BLOCK) acc += written[g * REDUCE_FINISH_GROUP];
    double total = block_sum(acc, 0.0, totals);
    if (tid == 0) *sum = total;
}

extern "C" __global__ void reduce_interleaved(const float* __restrict__ values, size_t n, double* partials,
                                              unsigned* tickets, double* sum) {
    __shared__ float tree[REDUCE_BLOCK];
    unsigned tid = threadIdx.x;
    size_t i = global_index();
    tree[tid] = i < n ? values[i] : 0.0f;
    __syncthreads();
    for (unsigned stride = 1; stride < REDUCE_BLOCK; stride *= 2) {
        if (tid % (2 * stride) == 0) tree[tid] += tree[tid + stride];
        __syncthreads();
    }
    finish(tree[0], partials, tickets, sum);
}

static __device__ __forceinline__ void fold_halves(float* tree, unsigned tid) {
    __syncthreads();
    for (unsigned stride = REDUCE_BLOCK / 2; stride > 0; stride /= 2) {
        if (tid < stride) tree[tid] += tree[tid + stride];
        __syncthreads();
    }
}

extern "C" __global__ void reduce_sequential(const float* __restrict__ values, size_t n, double* partials,
                                             unsigned* tickets, double* sum) {
    __shared__ float tree[REDUCE_BLOCK];
    unsigned tid = threadIdx.x;
    size_t i = global_index();
    tree[tid] = i < n ? values[i] : 0.0f;
    fold_halves(tree, tid);
    finish(tree[0], partials, tickets, sum);
}

static __device__ __forceinline__ float load_pair(const float* __restrict__ values, size_t n) {
    size_t i = (size_t)blockIdx.x * 2 * REDUCE_BLOCK + threadIdx.x;
    float first = i < n ? values[i] : 0.0f;
    float second = i + REDUCE_BLOCK < n ? values[i + REDUCE_BLOCK] : 0.0f;
    return first + second;
}

extern "C" __global__ void reduce_first_add(const float* __restrict__ values, size_t n, double* partials,
                                            unsigned* tickets, double* sum) {
    __shared__ float tree[REDUCE_BLOCK];
    unsigned tid = threadIdx.x;
    tree[tid] = load_pair(values, n);
    fold_halves(tree, tid);
    finish(tree[0], partials, tickets, sum);
}

extern "C" __global__ void reduce_shuffle(const float* __restrict__ values, size_t n, double* partials,
                                          unsigned* tickets, double* sum) {
    __shared__ float totals[REDUCE_WARPS];
    float total = block_sum(load_pair(values, n), 0.0f, totals);
    finish(total, partials, tickets, sum);
}

static __device__ __forceinline__ float quad_sum(float4 q) { return (q.x + q.y) + (q.z + q.w); }

extern "C" __global__ void reduce_vec4(const float* __restrict__ values, size_t n, double* partials,
                                       unsigned* tickets, double* sum) {
    __shared__ double totals[REDUCE_WARPS];
    size_t quads = n / 4, stride = grid_threads(), q = global_index();
    const float4* values4 = reinterpret_cast<const float4*>(values);
    double acc = 0.0;
    while (q + (REDUCE_QUADS_PER_PASS - 1) * stride < quads) {
        float4 pass[REDUCE_QUADS_PER_PASS];
#pragma unroll
        for (int j = 0; j < REDUCE_QUADS_PER_PASS; ++j) pass[j] = values4[q + j * stride];
#pragma unroll
        for (int j = 0; j < REDUCE_QUADS_PER_PASS; ++j) acc += (double)quad_sum(pass[j]);
        q += REDUCE_QUADS_PER_PASS * stride;
    }
    for (; q < quads; q += stride) acc += (double)quad_sum(values4[q]);
    size_t tail = 4 * quads + global_index();
    if (tail < n) acc += (double)values[tail];
    finish(block_sum(acc, 0.0, totals), partials, tickets, sum);
}

// ---- moments: shifted sums per thread, Chan's merge across threads, warps and blocks

struct Moments {
    unsigned long long count, nan;
    double mean, m2;
    float min, max;
};

static __device__ __forceinline__ Moments empty_moments() { return {0, 0, 0.0, 0.0, INFINITY, -INFINITY}; }

static __device__ __forceinline__ Moments merge(Moments a, Moments b) {
    unsigned long long count = a.count + b.count;
    double share = count == 0 ? 0.0 : (double)b.count / (double)count;
    double delta = b.mean - a.mean;
    return {count,
            a.nan + b.nan,
            fma(delta, share, a.mean),
            fma(delta * delta, (double)a.count * share, a.m2 + b.m2),
            fminf(a.min, b.min),
            fmaxf(a.max, b.max)};
}

static __device__ __forceinline__ Moments shuffle_down(Moments m, unsigned delta) {
    return {shuffle_down(m.count, delta), shuffle_down(m.nan, delta), shuffle_down(m.mean, delta),
            shuffle_down(m.m2, delta),    shuffle_down(m.min, delta), shuffle_down(m.max, delta)};
}

static __device__ __forceinline__ Moments warp_merge(Moments m) {
#pragma unroll
    for (unsigned delta = 16; delta > 0; delta /= 2) m = merge(m, shuffle_down(m, delta));
    return m;
}

static __device__ __forceinline__ Moments block_merge(Moments value, Moments* totals) {
    unsigned tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
    Moments m = warp_merge(value);
    if (lane == 0) totals[warp] = m;
    __syncthreads();
    Moments total = empty_moments();
    if (warp == 0) total = warp_merge(lane < REDUCE_WARPS ? totals[lane] : empty_moments());
    return total;
}

static __device__ __forceinline__ void store(Moments m, double* out) {
    out[REDUCE_MOMENTS_COUNT] = (double)m.count;
    out[REDUCE_MOMENTS_NAN] = (double)m.nan;
    out[REDUCE_MOMENTS_MEAN] = m.mean;
    out[REDUCE_MOMENTS_M2] = m.m2;
    out[REDUCE_MOMENTS_MIN] = (double)m.min;
    out[REDUCE_MOMENTS_MAX] = (double)m.max;
}

static __device__ __forceinline__ Moments load(const double* from) {
    const volatile double* f = from;
    return {(unsigned long long)f[REDUCE_MOMENTS_COUNT],
            (unsigned long long)f[REDUCE_MOMENTS_NAN],
            f[REDUCE_MOMENTS_MEAN],
            f[REDUCE_MOMENTS_M2],
            (float)f[REDUCE_MOMENTS_MIN],
            (float)f[REDUCE_MOMENTS_MAX]};
}

struct Shifted {
    unsigned long long count = 0, nan = 0;
    double shift = 0.0, sum = 0.0, squares = 0.0;
    float min = INFINITY, max = -INFINITY;

    __device__ __forceinline__ void add(float v, double low, double high) {
        if (isnan(v)) {
            ++nan;
        } else {
            double x = (double)v;
            if (low < x && x < high) {  // interface::window::Window::contains
                if (count == 0) shift = x;
                double d = x - shift;
                sum += d;
                squares = fma(d, d, squares);
                ++count;
                min = fminf(min, v);
                max = fmaxf(max, v);
            }
        }
    }

    __device__ __forceinline__ void add_quad(float4 q, double low, double high) {
        add(q.x, low, high), add(q.y, low, high), add(q.z, low, high), add(q.w, low, high);
    }

    __device__ __forceinline__ Moments moments() const {
        double mean_d = count == 0 ? 0.0 : sum / (double)count;
        double m2 = fma(-sum, mean_d, squares);
        return {count, nan, shift + mean_d, m2 < 0.0 ? 0.0 : m2, min, max};
    }
};

extern "C" __global__ void reduce_moments(const float* __restrict__ values, size_t n, double low, double high,
                                          double* partials, unsigned* ticket, double* result) {
    __shared__ Moments totals[REDUCE_WARPS];
    Shifted own;
    size_t quads = n / 4, stride = grid_threads(), q = global_index();
    const float4* values4 = reinterpret_cast<const float4*>(values);
    while (q + (REDUCE_MOMENTS_QUADS_PER_PASS - 1) * stride < quads) {
        float4 pass[REDUCE_MOMENTS_QUADS_PER_PASS];
#pragma unroll
        for (int j = 0; j < REDUCE_MOMENTS_QUADS_PER_PASS; ++j) pass[j] = values4[q + j * stride];
#pragma unroll
        for (int j = 0; j < REDUCE_MOMENTS_QUADS_PER_PASS; ++j) own.add_quad(pass[j], low, high);
        q += REDUCE_MOMENTS_QUADS_PER_PASS * stride;
    }
    for (; q < quads; q += stride) own.add_quad(values4[q], low, high);
    size_t tail = 4 * quads + global_index();
    if (tail < n) own.add(values[tail], low, high);

    Moments block = block_merge(own.moments(), totals);
    unsigned tid = threadIdx.x;
    if (tid == 0) store(block, partials + (size_t)blockIdx.x * REDUCE_MOMENTS_FIELDS);
    if (!last_block(ticket)) return;
    __shared__ Moments merged[REDUCE_WARPS];
    size_t blocks = gridDim.x;
    Moments acc = empty_moments();
    for (size_t b = tid; b < blocks; b += REDUCE_BLOCK) acc = merge(acc, load(partials + b * REDUCE_MOMENTS_FIELDS));
    Moments total = block_merge(acc, merged);
    if (tid == 0) store(total, result);
}
