// Twin of kernels/src/matmul/scheduled.rs: step 5c, step 5b with the copies between the FMAs,
// the FMA order, acc + 0.0 stores and 32-bit slice counters of the Rust kernel.
#pragma once  // split_async.cu builds on it
#include "common.cuh"
#include "../async_copy.cuh"
#include "async_tile.cuh"

// The tile at block (blockIdx.y, blockIdx.x), summed over k from k_begin (a multiple of ASYNC_BK)
// to k_end: all of k for step 5c, one run of it for step 5d's splits (split_async.cu).
template <bool CHECKED>
__device__ __forceinline__ void matmul_async_body(const float* __restrict__ a, const float* __restrict__ b, float* c,
                                                  size_t m, size_t n, size_t k, size_t k_begin, size_t k_end) {
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
    unsigned slices = (unsigned)((k_end - k_begin + ASYNC_BK - 1) / ASYNC_BK);

    constexpr size_t A_ROW_STEP = ASYNC_THREADS / ASYNC_BK, B_ROW_STEP = ASYNC_THREADS / (ASYNC_BN / 4);
    size_t a_kk = tid % ASYNC_BK, a_row = tid / ASYNC_BK;
    size_t b_row = tid / (ASYNC_BN / 4), b_col = tid % (ASYNC_BN / 4) * 4;
    unsigned a_to = shared_base + (unsigned)((a_kk * ASYNC_A_STRIDE + a_row) * 4);
    unsigned b_to = shared_base + (unsigned)((ASYNC_BK * ASYNC_A_STRIDE + b_row * ASYNC_BN + b_col) * 4);
    const float* a_from = a + (block_row + a_row) * k + k_begin + a_kk;
    const float* b_from = b + (k_begin + b_row) * n + block_col + b_col;

    auto stage_a = [&](unsigned stage, size_t t, const float* a_from) {
        unsigned stage_offset = stage * (unsigned)(ASYNC_STAGE_FLOATS * 4);
#pragma unroll
        for (size_t l = 0; l < A_COPIES; ++l) {
            bool inside = !CHECKED || (block_row + a_row + l * A_ROW_STEP < m && t + a_kk < k_end);
            copy_async_4(a_to + stage_offset + (unsigned)(l * A_ROW_STEP * 4), inside ? a_from + l * A_ROW_STEP * k : a,
                         inside ? 4 : 0);
        }
    };
    auto stage_b = [&](unsigned stage, size_t t, const float* b_from) {
        unsigned stage_offset = stage * (unsigned)(ASYNC_STAGE_FLOATS * 4);
#pragma unroll
        for (size_t l = 0; l < B_COPIES; ++l) {
            unsigned to = b_to + stage_offset + (unsigned)(l * B_ROW_STEP * ASYNC_BN * 4);
            const float* from = b_from + l * B_ROW_STEP * n;
            if (!CHECKED) {
                copy_async_16(to, from);
            } else {
                for (size_t j = 0; j < 4; ++j) {
                    bool inside = t + b_row + l * B_ROW_STEP < k_end && block_col + b_col + j < n;
                    copy_async_4(to + 4 * (unsigned)j, inside ? from + j : b, inside ? 4 : 0);
                }
            }
        }
    };

#pragma unroll
    for (unsigned s = 0; s < ASYNC_STAGES - 1; ++s) {
        if (s < slices) {
            stage_a(s, k_begin + s * ASYNC_BK, a_from);
            stage_b(s, k_begin + s * ASYNC_BK, b_from);
            a_from += ASYNC_BK;
            b_from += ASYNC_BK * n;
        }
        commit_copies();
    }

    float acc[ASYNC_TM][ASYNC_TN] = {};
    unsigned stage = 0, free_stage = ASYNC_STAGES - 1;
    for (unsigned t = 0; t < slices; ++t) {
        wait_copies_but_newest();
        __syncthreads();
        bool copy_ahead = t + ASYNC_STAGES - 1 < slices;

        const float* a_stage = shared + stage * ASYNC_STAGE_FLOATS + row0;
        const float* b_stage = shared + stage * ASYNC_STAGE_FLOATS + ASYNC_BK * ASYNC_A_STRIDE + col0;
#pragma unroll
        for (int kk = 0; kk < ASYNC_BK; ++kk) {
            float4 a_frag[ASYNC_TM / 4], b_frag[ASYNC_TN / 4];
            for (int g = 0; g < ASYNC_TM / 4; ++g)
                a_frag[g] = *reinterpret_cast<const float4*>(a_stage + kk * ASYNC_A_STRIDE + g * 16);
            for (int g = 0; g < ASYNC_TN / 4; ++g)
                b_frag[g] = *reinterpret_cast<const float4*>(b_stage + kk * ASYNC_BN + g * 32);
            // Column by column, even columns first, two down and two up, as in the Rust kernel.
#pragma unroll
            for (int n_col = 0; n_col < ASYNC_TN; ++n_col)
#pragma unroll
                for (int step = 0; step < ASYNC_TM; ++step) {
                    int j = n_col < ASYNC_TN / 2 ? 2 * n_col : 2 * (n_col - ASYNC_TN / 2) + 1;
                    int i = j % 4 < 2 ? step : ASYNC_TM - 1 - step;
                    acc[i][j] += lane(a_frag[i / 4], i % 4) * lane(b_frag[j / 4], j % 4);
                }
            // Slice t + 2 goes in flight between the FMAs, as in the Rust kernel.
            if (kk == 0 && copy_ahead) stage_a(free_stage, k_begin + (size_t)(t + ASYNC_STAGES - 1) * ASYNC_BK, a_from);
            if (kk == ASYNC_BK / 2) {
                if (copy_ahead) stage_b(free_stage, k_begin + (size_t)(t + ASYNC_STAGES - 1) * ASYNC_BK, b_from);
                commit_copies();
            }
        }
        a_from += ASYNC_BK;
        b_from += ASYNC_BK * n;
        stage = stage + 1 == ASYNC_STAGES ? 0 : stage + 1;
        free_stage = free_stage + 1 == ASYNC_STAGES ? 0 : free_stage + 1;
    }

#pragma unroll
    for (int i = 0; i < ASYNC_TM; ++i) {
        size_t row = block_row + row0 + (i / 4) * 16 + i % 4;
#pragma unroll
        for (int g = 0; g < ASYNC_TN / 4; ++g) {
            size_t col = block_col + col0 + g * 32;
            // + 0.0f: fresh registers for the 16-byte store, as in the Rust kernel.
            float4 v = make_float4(acc[i][g * 4] + 0.0f, acc[i][g * 4 + 1] + 0.0f, acc[i][g * 4 + 2] + 0.0f,
                                   acc[i][g * 4 + 3] + 0.0f);
            store_c4<CHECKED>(c, row, col, m, n, v);
        }
    }
}

extern "C" __global__ void __launch_bounds__(ASYNC_THREADS, 1) matmul_async_128x256(MATMUL_PARAMS) {
    bool interior = INTERIOR_BLOCK(ASYNC_BM, ASYNC_BN, ASYNC_BK);
    if (interior) {
        matmul_async_body<false>(a, b, c, m, n, k, 0, k);
    } else {
        matmul_async_body<true>(a, b, c, m, n, k, 0, k);
    }
}
