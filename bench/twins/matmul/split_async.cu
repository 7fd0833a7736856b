// Twin of kernels/src/matmul/split_async.rs: step 5d, split k on step 5c's 128x256 tiles. Step
// 5c's body (scheduled.cu) on a grid whose layer z takes one run of k's slices (split_slices) and
// writes its partial product to layer z of a workspace of splits x m x n floats, which
// matmul_split_reduce (split_k.cu) sums into C.
#include "scheduled.cu"

extern "C" __global__ void __launch_bounds__(ASYNC_THREADS, 1) matmul_async_128x256_split(MATMUL_PARAMS) {
    size_t split = blockIdx.z, first, count;
    split_slices((k + ASYNC_BK - 1) / ASYNC_BK, split, gridDim.z, first, count);
    size_t k_begin = first * ASYNC_BK, k_end = (first + count) * ASYNC_BK;
    if (k_end > k) k_end = k;
    // A layer is 16-byte aligned where C's rows are (INTERIOR_BLOCK asks n % 4 == 0).
    float* layer = c + split * m * n;
    bool interior = INTERIOR_BLOCK(ASYNC_BM, ASYNC_BN, ASYNC_BK);
    if (interior) {
        matmul_async_body<false>(a, b, layer, m, n, k, k_begin, k_end);
    } else {
        matmul_async_body<true>(a, b, layer, m, n, k, k_begin, k_end);
    }
}
