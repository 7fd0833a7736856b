// Twin of kernels/src/matmul/warp_tiles.rs: step 5b, three cp.async stages, warp tiles and an
// 8 x 16 sub-tile per thread on a 128 x 256 tile.
#include "common.cuh"
#include "../async_copy.cuh"
#include "async_tile.cuh"

template <bool CHECKED>
__device__ __forceinline__ void matmul_warps_body(const float* __restrict__ a, const float* __restrict__ b, float* c,
                                                  size_t m, size_t n, size_t k) {
    constexpr size_t A_COPIES = ASYNC_BM * ASYNC_BK / ASYNC_THREADS;
    constexpr size_t B_COPIES = ASYNC_BK * ASYNC_BN / 4 / ASYNC_THREADS;
    constexpr size_t WARP_ROWS = ASYNC_TM / 4 * 16, WARP_COLS = ASYNC_TN / 4 * 32;
    float* shared = reinterpret_cast<float*>(matmul_shared4);
    unsigned shared_base = shared_address(shared);
    size_t tid = threadIdx.x;
    size_t warp = tid / 32, lane_id = tid % 32;
    size_t row0 = (warp / (ASYNC_BN / WARP_COLS)) * WARP_ROWS + (lane_id / 8) * 4;
    size_t col0 = (warp % (ASYNC_BN / WARP_COLS)) * WARP_COLS + (lane_id % 8) * 4;
    size_t block_row = (size_t)blockIdx.y * ASYNC_BM, block_col = (size_t)blockIdx.x * ASYNC_BN;
    size_t slices = (k + ASYNC_BK - 1) / ASYNC_BK;

    constexpr size_t A_ROW_STEP = ASYNC_THREADS / ASYNC_BK, B_ROW_STEP = ASYNC_THREADS / (ASYNC_BN / 4);
    size_t a_kk = tid % ASYNC_BK, a_row = tid / ASYNC_BK;
    size_t b_row = tid / (ASYNC_BN / 4), b_col = tid % (ASYNC_BN / 4) * 4;
    unsigned a_to = shared_base + (unsigned)((a_kk * ASYNC_A_STRIDE + a_row) * 4);
    unsigned b_to = shared_base + (unsigned)((ASYNC_BK * ASYNC_A_STRIDE + b_row * ASYNC_BN + b_col) * 4);
    // Issue the copies of slice s (columns s * BK .. of A, rows of B) into stage s % STAGES.
    auto copy_slice = [&](size_t s) {
        size_t t = s * ASYNC_BK;
        unsigned stage_offset = (unsigned)((s % ASYNC_STAGES) * ASYNC_STAGE_FLOATS * 4);
#pragma unroll
        for (size_t l = 0; l < A_COPIES; ++l) {
            size_t row = block_row + a_row + l * A_ROW_STEP;
            bool inside = !CHECKED || (row < m && t + a_kk < k);
            copy_async_4(a_to + stage_offset + (unsigned)(l * A_ROW_STEP * 4), inside ? a + (row * k + t + a_kk) : a,
                         inside ? 4 : 0);
        }
#pragma unroll
        for (size_t l = 0; l < B_COPIES; ++l) {
            unsigned to = b_to + stage_offset + (unsigned)(l * B_ROW_STEP * ASYNC_BN * 4);
            const float* from = b + ((t + b_row + l * B_ROW_STEP) * n + block_col + b_col);
            if (!CHECKED) {
                copy_async_16(to, from);
            } else {
                for (size_t j = 0; j < 4; ++j) {
                    bool inside = t + b_row + l * B_ROW_STEP < k && block_col + b_col + j < n;
                    copy_async_4(to + 4 * (unsigned)j, inside ? from + j : b, inside ? 4 : 0);
                }
            }
        }
    };

    // Slices 0 .. STAGES-1 go in flight first, each its own group, committed even when empty.
#pragma unroll
    for (size_t s = 0; s < ASYNC_STAGES - 1; ++s) {
        if (s < slices) copy_slice(s);
        commit_copies();
    }

    float acc[ASYNC_TM][ASYNC_TN] = {};
    for (size_t t = 0; t < slices; ++t) {
        // Slice t has landed (only t + 1 may still be in flight) and, after the barrier, every
        // thread is done with slice t - 1, whose stage the copies of slice t + 2 now reuse.
        wait_copies_but_newest();
        __syncthreads();
        if (t + ASYNC_STAGES - 1 < slices) copy_slice(t + ASYNC_STAGES - 1);
        commit_copies();

        size_t stage = t % ASYNC_STAGES;
        const float* a_stage = shared + stage * ASYNC_STAGE_FLOATS + row0;
        const float* b_stage = shared + stage * ASYNC_STAGE_FLOATS + ASYNC_BK * ASYNC_A_STRIDE + col0;
#pragma unroll
        for (int kk = 0; kk < ASYNC_BK; ++kk) {
            float4 a_frag[ASYNC_TM / 4], b_frag[ASYNC_TN / 4];
            for (int g = 0; g < ASYNC_TM / 4; ++g)
                a_frag[g] = *reinterpret_cast<const float4*>(a_stage + kk * ASYNC_A_STRIDE + g * 16);
            for (int g = 0; g < ASYNC_TN / 4; ++g)
                b_frag[g] = *reinterpret_cast<const float4*>(b_stage + kk * ASYNC_BN + g * 32);
#pragma unroll
            for (int i = 0; i < ASYNC_TM; ++i)
#pragma unroll
                for (int j = 0; j < ASYNC_TN; ++j) acc[i][j] += lane(a_frag[i / 4], i % 4) * lane(b_frag[j / 4], j % 4);
        }
    }

#pragma unroll
    for (int i = 0; i < ASYNC_TM; ++i) {
        size_t row = block_row + row0 + (i / 4) * 16 + i % 4;
#pragma unroll
        for (int g = 0; g < ASYNC_TN / 4; ++g) {
            size_t col = block_col + col0 + g * 32;
            float4 v = make_float4(acc[i][g * 4], acc[i][g * 4 + 1], acc[i][g * 4 + 2], acc[i][g * 4 + 3]);
            store_c4<CHECKED>(c, row, col, m, n, v);
        }
    }
}

extern "C" __global__ void __launch_bounds__(ASYNC_THREADS, 1) matmul_warps_128x256(MATMUL_PARAMS) {
    bool interior = INTERIOR_BLOCK(ASYNC_BM, ASYNC_BN, ASYNC_BK);
    if (interior) {
        matmul_warps_body<false>(a, b, c, m, n, k);
    } else {
        matmul_warps_body<true>(a, b, c, m, n, k);
    }
}
