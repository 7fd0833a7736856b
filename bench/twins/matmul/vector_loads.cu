// Twin of kernels/src/matmul/vector_loads.rs: step 4a, step 3 with 16-byte global loads and
// stores, and interior blocks without bounds checks. #pragma unroll where the Rust unrolls by
// hand (the loop over kk).
#include "common.cuh"

template <int BM, int BN, int BK, int TM, int TN, bool CHECKED>
__device__ __forceinline__ void matmul_vload_body(const float* __restrict__ a, const float* __restrict__ b, float* c,
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
        // Pieces of 4 consecutive elements of a row; elements past the edges read as zero.
        for (size_t e = tid; e < BM * BK / 4; e += threads) {
            size_t r = e / (BK / 4), kk = e % (BK / 4) * 4;
            size_t row = block_row + r;
            size_t valid = !CHECKED ? 4 : row < m ? (k > t + kk ? k - (t + kk) : 0) : 0;  // saturating_sub
            float4 v = load4(a + (row * k + t + kk), valid, !CHECKED || k % 4 == 0);
            for (int j = 0; j < 4; ++j) a_tile[(kk + j) * BM + r] = lane(v, j);
        }
        for (size_t e = tid; e < BK * BN / 4; e += threads) {
            size_t kk = e / (BN / 4), col = e % (BN / 4) * 4;
            size_t valid = !CHECKED ? 4 : t + kk < k ? (n > block_col + col ? n - (block_col + col) : 0) : 0;
            float4 v = load4(b + ((t + kk) * n + block_col + col), valid, !CHECKED || n % 4 == 0);
            *reinterpret_cast<float4*>(b_tile + kk * BN + col) = v;
        }
        __syncthreads();
#pragma unroll
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
        for (int g = 0; g < TN / 4; ++g) {
            size_t col = block_col + thread_col + g * 4;
            float4 v = make_float4(acc[i][g * 4], acc[i][g * 4 + 1], acc[i][g * 4 + 2], acc[i][g * 4 + 3]);
            store_c4<CHECKED>(c, row, col, m, n, v);
        }
    }
}

extern "C" __global__ void matmul_vload_128x128(MATMUL_PARAMS) {
    bool interior = INTERIOR_BLOCK(MATMUL_BM, MATMUL_BN, MATMUL_BK);
    if (interior) {
        matmul_vload_body<MATMUL_BM, MATMUL_BN, MATMUL_BK, MATMUL_TM, MATMUL_TN, false>(a, b, c, m, n, k);
    } else {
        matmul_vload_body<MATMUL_BM, MATMUL_BN, MATMUL_BK, MATMUL_TM, MATMUL_TN, true>(a, b, c, m, n, k);
    }
}
