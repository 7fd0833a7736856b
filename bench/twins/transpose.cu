// Twin of kernels/src/transpose.rs: a 32x32 tile per block of 32x8 threads, each thread
// taking every 8th row of the tile; naive, through shared memory, with a padded tile, and
// padded on a 64x64 tile with 64x4 threads.
#include "twins.cuh"

#define TILE 32
#define BLOCK_ROWS 8

extern "C" __global__ void transpose_naive(const float* __restrict__ input, size_t len, float* output, size_t rows,
                                           size_t cols) {
    size_t row0 = (size_t)blockIdx.y * TILE, col = (size_t)blockIdx.x * TILE + threadIdx.x;
    for (size_t r = threadIdx.y; r < TILE; r += BLOCK_ROWS) {
        size_t row = row0 + r;
        if (row < rows && col < cols) output[col * rows + row] = input[row * cols + col];
    }
}

template <size_t SIDE, size_t STRIDE, size_t ROWS>
__device__ __forceinline__ void transpose_tiled(const float* __restrict__ input, float* output, size_t rows,
                                                size_t cols, float* tile) {
    size_t row0 = (size_t)blockIdx.y * SIDE, col0 = (size_t)blockIdx.x * SIDE;
    size_t tx = threadIdx.x;
    for (size_t r = threadIdx.y; r < SIDE; r += ROWS) {
        size_t row = row0 + r, col = col0 + tx;
        if (row < rows && col < cols) tile[r * STRIDE + tx] = input[row * cols + col];
    }
    __syncthreads();
    for (size_t r = threadIdx.y; r < SIDE; r += ROWS) {
        size_t out_row = col0 + r, out_col = row0 + tx;
        if (out_row < cols && out_col < rows) output[out_row * rows + out_col] = tile[tx * STRIDE + r];
    }
}

extern "C" __global__ void transpose_shared(const float* __restrict__ input, size_t len, float* output, size_t rows,
                                            size_t cols) {
    __shared__ float tile[TILE * TILE];
    transpose_tiled<TILE, TILE, BLOCK_ROWS>(input, output, rows, cols, tile);
}

extern "C" __global__ void transpose_padded(const float* __restrict__ input, size_t len, float* output, size_t rows,
                                            size_t cols) {
    __shared__ float tile[TILE * (TILE + 1)];
    transpose_tiled<TILE, TILE + 1, BLOCK_ROWS>(input, output, rows, cols, tile);
}

extern "C" __global__ void transpose_padded_64(const float* __restrict__ input, size_t len, float* output,
                                               size_t rows, size_t cols) {
    __shared__ float tile[64 * 65];
    transpose_tiled<64, 65, 4>(input, output, rows, cols, tile);
}

#undef TILE
#undef BLOCK_ROWS
