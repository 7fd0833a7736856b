// Twin of kernels/src/matmul/split_k.rs: step 4d, split k. Step 4c's body (double_buffer.cu) on
// 64x64 tiles of 4x4 thread tiles, on a grid whose layer z takes one run of k's slices
// (split_slices) and writes its partial product to layer z of a workspace of splits x m x n
// floats. Then the reduction that sums the layers into C, C[e] = the sum over s of
// partials[s * len + e]: each quad of C gets `groups` threads (a power of two near splits / 4);
// thread g sums partials g, g + groups, ... four loads at a time, in that order; the group's sums
// meet in shared memory and the quad's first thread adds them in order of g. The reduction also
// sums the wgmma steps' splits (step H3, wgmma.cu): it is in the main module, not the Hopper one.
#include "double_buffer.cu"

// Layer blockIdx.z of the product over split blockIdx.z of gridDim.z splits of k's slices: the
// tile at block (blockIdx.y, blockIdx.x) of A[:, k0..k1] x B[k0..k1, :] into c + z * m * n.
// Unchecked when the block is interior over the whole of k (then every run is whole slices).
extern "C" __global__ void __launch_bounds__(MATMUL_SPLIT_THREADS, MATMUL_SPLIT_BLOCKS_PER_SM)
    matmul_vec4_64x64_split(MATMUL_PARAMS) {
    size_t split = blockIdx.z, first, count;
    split_slices((k + MATMUL_SPLIT_BK - 1) / MATMUL_SPLIT_BK, split, gridDim.z, first, count);
    size_t k_begin = first * MATMUL_SPLIT_BK, k_end = (first + count) * MATMUL_SPLIT_BK;
    if (k_end > k) k_end = k;
    // A layer is 16-byte aligned where C's rows are (INTERIOR_BLOCK asks n % 4 == 0).
    float* layer = c + split * m * n;
    bool interior = INTERIOR_BLOCK(MATMUL_SPLIT_BM, MATMUL_SPLIT_BN, MATMUL_SPLIT_BK);
    if (interior) {
        matmul_vec4_body<MATMUL_SPLIT_BM, MATMUL_SPLIT_BN, MATMUL_SPLIT_BK, MATMUL_SPLIT_TM, MATMUL_SPLIT_TN, false>(
            a, b, layer, m, n, k, k_begin, k_end);
    } else {
        matmul_vec4_body<MATMUL_SPLIT_BM, MATMUL_SPLIT_BN, MATMUL_SPLIT_BK, MATMUL_SPLIT_TM, MATMUL_SPLIT_TN, true>(
            a, b, layer, m, n, k, k_begin, k_end);
    }
}

// Threads the reduction gives each quad of C for `splits` partials (interface::matmul::reduce_groups).
static __device__ __forceinline__ size_t reduce_groups(size_t splits) {
    size_t wanted = (splits + MATMUL_REDUCE_SPLITS_PER_THREAD - 1) / MATMUL_REDUCE_SPLITS_PER_THREAD, groups = 1;
    while (groups < wanted && groups < MATMUL_REDUCE_MAX_GROUPS) groups *= 2;
    return groups;
}

// The quad at p: one 16-byte load when `vector`, else its `valid` floats, zeros past them.
static __device__ __forceinline__ float4 reduce_load(const float* p, size_t valid, bool vector) {
    if (vector) return *reinterpret_cast<const float4*>(p);
    auto at = [&](size_t j) { return j < valid ? p[j] : 0.0f; };
    return make_float4(at(0), at(1), at(2), at(3));
}

static __device__ __forceinline__ void reduce_add(float4& sum, float4 v) {
    sum.x += v.x, sum.y += v.y, sum.z += v.z, sum.w += v.w;
}

extern "C" __global__ void __launch_bounds__(MATMUL_REDUCE_THREADS, 1)
    matmul_split_reduce(const float* __restrict__ partials, size_t partials_len, float* c, size_t len, size_t splits) {
    __shared__ float4 shared[MATMUL_REDUCE_THREADS];
    size_t groups = reduce_groups(splits), quads = MATMUL_REDUCE_THREADS / groups;
    size_t tid = threadIdx.x, group = tid / quads, lane = tid % quads;
    size_t first = 4 * ((size_t)blockIdx.x * quads + lane);
    bool vector = len % 4 == 0;
    size_t valid = len > first ? len - first : 0;
    const float* p = partials + first;
    float4 sum = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    if (valid > 0) {
        size_t s = group;
        for (; s + 3 * groups < splits; s += 4 * groups) {
            float4 v0 = reduce_load(p + s * len, valid, vector);
            float4 v1 = reduce_load(p + (s + groups) * len, valid, vector);
            float4 v2 = reduce_load(p + (s + 2 * groups) * len, valid, vector);
            float4 v3 = reduce_load(p + (s + 3 * groups) * len, valid, vector);
            reduce_add(sum, v0), reduce_add(sum, v1), reduce_add(sum, v2), reduce_add(sum, v3);
        }
        for (; s < splits; s += groups) reduce_add(sum, reduce_load(p + s * len, valid, vector));
    }
    if (groups > 1) {
        shared[tid] = sum;
        __syncthreads();
        if (group == 0)
            for (size_t g = 1; g < groups; ++g) reduce_add(sum, shared[g * quads + lane]);
    }
    if (group != 0 || valid == 0) return;
    if (vector) {
        *reinterpret_cast<float4*>(c + first) = sum;
    } else {
        float v[4] = {sum.x, sum.y, sum.z, sum.w};
        for (size_t j = 0; j < 4 && j < valid; ++j) c[first + j] = v[j];
    }
}
