// Twin of kernels/src/matmul/naive.rs: step 1, one thread per output.
#include "common.cuh"

extern "C" __global__ void matmul_naive(MATMUL_PARAMS) {
    // 32-bit products widened afterwards, as in the Rust kernel.
    size_t row = blockIdx.y * blockDim.y + threadIdx.y;
    size_t col = blockIdx.x * blockDim.x + threadIdx.x;
    if (row < m && col < n) {
        float acc = 0.0f;
        for (size_t i = 0; i < k; ++i) acc += a[row * k + i] * b[i * n + col];
        c[row * n + col] = acc;
    }
}
