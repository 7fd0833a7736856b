// Twin of kernels/src/matmul/shared_layout.rs: step 4b, a thread's outputs as 4 x 4 groups half
// a tile apart, read from shared memory 16 bytes at a time.
#include "common.cuh"

template <int BM, int BN, int BK, int TM, int TN, bool CHECKED>
__device__ __forceinline__ void matmul_vshared_body(const float* __restrict__ a, const float* __restrict__ b, float* c,
                                                  size_t m, size_t n, size_t k) {
    const size_t threads = (BM / TM) * (BN / TN);
    // A slice transposed (BK rows of BM), then the B slice (BK rows of BN).
    float* a_tile = reinterpret_cast<float*>(matmul_shared4);
    float* b_tile = a_tile + BK * BM;
    size_t tid = threadIdx.x;
    size_t block_row = (size_t)blockIdx.y * BM;
    size_t block_col = (size_t)blockIdx.x * BN;
    // A thread's rows are TM/4 groups of 4, row_step apart, from row 4 * ty; its columns likewise.
    size_t tx = tid % (BN / TN), ty = tid / (BN / TN);
    constexpr size_t row_step = BM / (TM / 4), col_step = BN / (TN / 4);

    float acc[TM][TN] = {};
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
            float4 a_frag[2] = {}, b_frag[2] = {};
            for (int g = 0; g < TM / 4; ++g)
                a_frag[g] = *reinterpret_cast<const float4*>(a_tile + kk * BM + ty * 4 + g * row_step);
            for (int g = 0; g < TN / 4; ++g)
                b_frag[g] = *reinterpret_cast<const float4*>(b_tile + kk * BN + tx * 4 + g * col_step);
            for (int i = 0; i < TM; ++i)
                for (int j = 0; j < TN; ++j) acc[i][j] += lane(a_frag[i / 4], i % 4) * lane(b_frag[j / 4], j % 4);
        }
        __syncthreads();
    }
    for (int i = 0; i < TM; ++i) {
        size_t row = block_row + (i / 4) * row_step + ty * 4 + i % 4;
        for (int g = 0; g < TN / 4; ++g) {
            size_t col = block_col + g * col_step + tx * 4;
            float4 v = make_float4(acc[i][g * 4], acc[i][g * 4 + 1], acc[i][g * 4 + 2], acc[i][g * 4 + 3]);
            store_c4<CHECKED>(c, row, col, m, n, v);
        }
    }
}

extern "C" __global__ void matmul_vshared_128x128(MATMUL_PARAMS) {
    bool interior = INTERIOR_BLOCK(MATMUL_BM, MATMUL_BN, MATMUL_BK);
    if (interior) {
        matmul_vshared_body<MATMUL_BM, MATMUL_BN, MATMUL_BK, MATMUL_TM, MATMUL_TN, false>(a, b, c, m, n, k);
    } else {
        matmul_vshared_body<MATMUL_BM, MATMUL_BN, MATMUL_BK, MATMUL_TM, MATMUL_TN, true>(a, b, c, m, n, k);
    }
}
