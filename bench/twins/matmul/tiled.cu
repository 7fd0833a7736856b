// Twin of kernels/src/matmul/tiled.rs: step 2, shared-memory tiles of TILE x TILE.
#include "common.cuh"

template <int TILE>
__device__ __forceinline__ void matmul_tiled(const float* __restrict__ a, const float* __restrict__ b, float* c,
                                             size_t m, size_t n, size_t k) {
    // Two TILE x TILE tiles in dynamic shared memory, sized at launch.
    float* a_tile = reinterpret_cast<float*>(matmul_shared4);
    float* b_tile = a_tile + TILE * TILE;
    size_t tx = threadIdx.x, ty = threadIdx.y;
    size_t row = (size_t)blockIdx.y * TILE + ty;
    size_t col = (size_t)blockIdx.x * TILE + tx;
    float acc = 0.0f;
    for (size_t t = 0; t < k; t += TILE) {
        a_tile[ty * TILE + tx] = (row < m && t + tx < k) ? a[row * k + t + tx] : 0.0f;
        b_tile[ty * TILE + tx] = (t + ty < k && col < n) ? b[(t + ty) * n + col] : 0.0f;
        __syncthreads();
        for (int i = 0; i < TILE; ++i) acc += a_tile[ty * TILE + i] * b_tile[i * TILE + tx];
        __syncthreads();  // nobody overwrites the tiles while a slower thread still reads them
    }
    if (row < m && col < n) c[row * n + col] = acc;
}

extern "C" __global__ void matmul_tiled_16(MATMUL_PARAMS) { matmul_tiled<MATMUL_SMALL_TILE>(a, b, c, m, n, k); }
extern "C" __global__ void matmul_tiled_32(MATMUL_PARAMS) { matmul_tiled<MATMUL_LARGE_TILE>(a, b, c, m, n, k); }
