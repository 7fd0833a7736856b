// Twin of kernels/src/matmul/convert.rs: A and B converted once from f32 to the tensor cores'
// input types, rows padded with zeros to MATMUL_MMA_ROW_ALIGN elements; and B transposed for
// Hopper's TF32 wgmma through transpose.cu's tile loop.
#include "common.cuh"
#include "../transpose.cu"
#include "../tensor_mma.cuh"

static __device__ __forceinline__ size_t mma_padded(size_t cols) {
    return (cols + MATMUL_MMA_ROW_ALIGN - 1) / MATMUL_MMA_ROW_ALIGN * MATMUL_MMA_ROW_ALIGN;
}

static __device__ __forceinline__ float element(const float* src, size_t cols, size_t row, size_t col) {
    return col < cols ? src[row * cols + col] : 0.0f;
}

extern "C" __global__ void convert_tf32(const float* __restrict__ src, size_t src_len, float* dst, size_t rows,
                                        size_t cols) {
    size_t width = mma_padded(cols);
    for (size_t i = global_index(); i < rows * width; i += grid_threads())
        dst[i] = to_tf32(element(src, cols, i / width, i % width));
}

template <class T>
static __device__ __forceinline__ void convert_pairs(const float* __restrict__ src, unsigned* dst, size_t rows,
                                                     size_t cols) {
    size_t pairs = mma_padded(cols) / 2;
    for (size_t i = global_index(); i < rows * pairs; i += grid_threads()) {
        size_t row = i / pairs, col = i % pairs * 2;
        dst[i] = T::pack(element(src, cols, row, col), element(src, cols, row, col + 1));
    }
}

extern "C" __global__ void convert_bf16(const float* __restrict__ src, size_t src_len, unsigned* dst, size_t rows,
                                        size_t cols) {
    convert_pairs<Bf16>(src, dst, rows, cols);
}

extern "C" __global__ void convert_f16(const float* __restrict__ src, size_t src_len, unsigned* dst, size_t rows,
                                       size_t cols) {
    convert_pairs<F16>(src, dst, rows, cols);
}

extern "C" __global__ void convert_tf32_transposed(const float* __restrict__ src, size_t src_len, float* dst,
                                                  size_t rows, size_t cols) {
    __shared__ float tile[TRANSPOSE_WIDE_TILE * (TRANSPOSE_WIDE_TILE + 1)];
    transpose_tiled<TRANSPOSE_WIDE_TILE, TRANSPOSE_WIDE_TILE + 1, TRANSPOSE_WIDE_BLOCK_ROWS>(
        src, dst, mma_padded(rows), rows, cols, tile, [](float x) { return to_tf32(x); });
}
