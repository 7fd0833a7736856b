// Twin of kernels/src/matmul/blocked.rs: step 3, an 8 x 8 sub-tile per thread in registers.
#include "common.cuh"

static __device__ __forceinline__ float load_or_zero(const float* __restrict__ matrix, size_t row, size_t col,
                                                     size_t rows, size_t cols) {
    return (row < rows && col < cols) ? matrix[row * cols + col] : 0.0f;
}

template <int BM, int BN, int BK, int TM, int TN>
__device__ __forceinline__ void matmul_blocked(const float* __restrict__ a, const float* __restrict__ b, float* c,
                                               size_t m, size_t n, size_t k) {
    const size_t threads = (BM / TM) * (BN / TN);
    // A slice transposed (BK rows of BM), then the B slice (BK rows of BN).
    float* a_tile = reinterpret_cast<float*>(matmul_shared4);
    float* b_tile = a_tile + BK * BM;
    size_t tid = threadIdx.x;
    size_t block_row = (size_t)blockIdx.y * BM;
    size_t block_col = (size_t)blockIdx.x * BN;
    size_t thread_row = (tid / (BN / TN)) * TM;
    size_t thread_col = (tid % (BN / TN)) * TN;

    float acc[TM][TN] = {};
    float a_reg[TM], b_reg[TN];
    for (size_t t = 0; t < k; t += BK) {
        for (size_t e = tid; e < BM * BK; e += threads) {
            size_t r = e / BK, kk = e % BK;
            a_tile[kk * BM + r] = load_or_zero(a, block_row + r, t + kk, m, k);
        }
        for (size_t e = tid; e < BK * BN; e += threads) {
            size_t kk = e / BN, col = e % BN;
            b_tile[kk * BN + col] = load_or_zero(b, t + kk, block_col + col, k, n);
        }
        __syncthreads();
        for (int kk = 0; kk < BK; ++kk) {
            for (int i = 0; i < TM; ++i) a_reg[i] = a_tile[kk * BM + thread_row + i];
            for (int j = 0; j < TN; ++j) b_reg[j] = b_tile[kk * BN + thread_col + j];
            for (int i = 0; i < TM; ++i)
                for (int j = 0; j < TN; ++j) acc[i][j] += a_reg[i] * b_reg[j];
        }
        __syncthreads();
    }
    for (int i = 0; i < TM; ++i) {
        size_t row = block_row + thread_row + i;
        for (int j = 0; j < TN; ++j) {
            size_t col = block_col + thread_col + j;
            if (row < m && col < n) c[row * n + col] = acc[i][j];
        }
    }
}

extern "C" __global__ void matmul_blocked_128x128(MATMUL_PARAMS) {
    matmul_blocked<MATMUL_BM, MATMUL_BN, MATMUL_BK, MATMUL_TM, MATMUL_TN>(a, b, c, m, n, k);
}
