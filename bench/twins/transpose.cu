// Twin of kernels/src/transpose.rs (sizes: interface::transpose): a TILE x TILE tile per block
// of TILE x BLOCK_ROWS threads, each thread taking every BLOCK_ROWS-th row of the tile; naive,
// through shared memory, with a padded tile, and padded on a WIDE_TILE tile with
// WIDE_TILE x WIDE_BLOCK_ROWS threads.
#pragma once  // matmul/convert.cu builds on it
#include "twins.cuh"

extern "C" __global__ void transpose_naive(const float* __restrict__ input, size_t len, float* output, size_t rows,
                                           size_t cols) {
    size_t row0 = (size_t)blockIdx.y * TRANSPOSE_TILE, col = (size_t)blockIdx.x * TRANSPOSE_TILE + threadIdx.x;
    for (size_t r = threadIdx.y; r < TRANSPOSE_TILE; r += TRANSPOSE_BLOCK_ROWS) {
        size_t row = row0 + r;
        if (row < rows && col < cols) output[col * rows + row] = input[row * cols + col];
    }
}

// Output rows out_stride apart; each element passes through convert (convert.cu's transposing
// TF32 conversion shares this loop, as in the Rust).
template <size_t SIDE, size_t STRIDE, size_t ROWS, class Convert>
__device__ __forceinline__ void transpose_tiled(const float* __restrict__ input, float* output, size_t out_stride,
                                                size_t rows, size_t cols, float* tile, Convert convert) {
    size_t row0 = (size_t)blockIdx.y * SIDE, col0 = (size_t)blockIdx.x * SIDE;
    size_t tx = threadIdx.x;
    for (size_t r = threadIdx.y; r < SIDE; r += ROWS) {
        size_t row = row0 + r, col = col0 + tx;
        if (row < rows && col < cols) tile[r * STRIDE + tx] = input[row * cols + col];
    }
    __syncthreads();
    for (size_t r = threadIdx.y; r < SIDE; r += ROWS) {
        size_t out_row = col0 + r, out_col = row0 + tx;
        if (out_row < cols && out_col < rows) output[out_row * out_stride + out_col] = convert(tile[tx * STRIDE + r]);
    }
}

static __device__ __forceinline__ float identity(float x) { return x; }

extern "C" __global__ void transpose_shared(const float* __restrict__ input, size_t len, float* output, size_t rows,
                                            size_t cols) {
    __shared__ float tile[TRANSPOSE_TILE * TRANSPOSE_TILE];
    transpose_tiled<TRANSPOSE_TILE, TRANSPOSE_TILE, TRANSPOSE_BLOCK_ROWS>(input, output, rows, rows, cols, tile, identity);
}

extern "C" __global__ void transpose_padded(const float* __restrict__ input, size_t len, float* output, size_t rows,
                                            size_t cols) {
    __shared__ float tile[TRANSPOSE_TILE * (TRANSPOSE_TILE + 1)];
    transpose_tiled<TRANSPOSE_TILE, TRANSPOSE_TILE + 1, TRANSPOSE_BLOCK_ROWS>(input, output, rows, rows, cols, tile,
                                                                             identity);
}

extern "C" __global__ void transpose_padded_64(const float* __restrict__ input, size_t len, float* output,
                                               size_t rows, size_t cols) {
    __shared__ float tile[TRANSPOSE_WIDE_TILE * (TRANSPOSE_WIDE_TILE + 1)];
    transpose_tiled<TRANSPOSE_WIDE_TILE, TRANSPOSE_WIDE_TILE + 1, TRANSPOSE_WIDE_BLOCK_ROWS>(input, output, rows, rows,
                                                                                            cols, tile, identity);
}
