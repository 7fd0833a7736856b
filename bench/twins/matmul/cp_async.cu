// Twin of kernels/src/matmul/cp_async.rs: step 5a, step 4c's tile with its two stages filled by
// cp.async copies instead of loads and stores through registers.
#include "common.cuh"
#include "../async_copy.cuh"

// #pragma unroll exactly where the Rust unrolls by hand (unroll!): the piece loop and kk.
template <int BM, int BN, int BK, int TM, int TN, bool CHECKED>
__device__ __forceinline__ void matmul_cp_async_body(const float* __restrict__ a, const float* __restrict__ b, float* c,
                                                 size_t m, size_t n, size_t k) {
    constexpr size_t threads = (BM / TM) * (BN / TN);
    // 16-byte pieces of each slice a thread stages per step.
    constexpr size_t a_loads = BM * BK / 4 / threads, b_loads = BK * BN / 4 / threads;
    // TileConfig::is_valid.
    static_assert((TM == 4 || TM == 8) && (TN == 4 || TN == 8) && BM % TM == 0 && BN % TN == 0, "sub-tile");
    static_assert(BK == 8 || BK == 16, "BK");
    static_assert(BM * BK / 4 % threads == 0 && BK * BN / 4 % threads == 0, "whole pieces per thread");
    static_assert(a_loads >= 1 && a_loads <= MATMUL_MAX_LOADS && b_loads >= 1 && b_loads <= MATMUL_MAX_LOADS, "pieces");
    constexpr size_t stage_size = BK * (BM + BN);
    float* shared = reinterpret_cast<float*>(matmul_shared4);
    auto a_tile = [&](size_t stage) { return shared + stage * stage_size; };
    auto b_tile = [&](size_t stage) { return shared + stage * stage_size + BK * BM; };
    // The same tiles as shared addresses, which the copies take.
    unsigned shared_base = shared_address(shared);
    auto a_to = [&](size_t stage) { return shared_base + (unsigned)(stage * stage_size * 4); };
    auto b_to = [&](size_t stage) { return shared_base + (unsigned)((stage * stage_size + BK * BM) * 4); };

    size_t tid = threadIdx.x;
    size_t tx = tid % (BN / TN), ty = tid / (BN / TN);
    size_t block_row = (size_t)blockIdx.y * BM;
    size_t block_col = (size_t)blockIdx.x * BN;
    // A thread's rows are TM/4 groups of 4, `row_step` apart; its columns likewise.
    constexpr size_t row_step = BM / (TM / 4), col_step = BN / (TN / 4);
    // Piece `l` of each slice this thread fetches: row and column inside the slice.
    struct Piece {
        size_t r, col;
    };
    auto a_piece = [&](size_t l) { return Piece{(tid + l * threads) / (BK / 4), (tid + l * threads) % (BK / 4) * 4}; };
    auto b_piece = [&](size_t l) { return Piece{(tid + l * threads) / (BN / 4), (tid + l * threads) % (BN / 4) * 4}; };

    // Issue the copies of the slice starting at t into `stage`, and commit them as a group.
    auto copy = [&](size_t stage, size_t t) {
#pragma unroll
        for (size_t l = 0; l < MATMUL_MAX_LOADS; ++l) {
            // Elements past the matrix's last row or column are zero-filled.
            if (l < a_loads) {
                // A goes in transposed, a float at a time, so that a thread's rows are contiguous.
                Piece p = a_piece(l);
                size_t row = block_row + p.r;
                for (size_t j = 0; j < 4; ++j) {
                    bool inside = !CHECKED || (row < m && t + p.col + j < k);
                    copy_async_4(a_to(stage) + (unsigned)(((p.col + j) * BM + p.r) * 4),
                                 inside ? a + (row * k + t + p.col + j) : a, inside ? 4 : 0);
                }
            }
            if (l < b_loads) {
                Piece p = b_piece(l);
                unsigned to = b_to(stage) + (unsigned)((p.r * BN + p.col) * 4);
                const float* from = b + ((t + p.r) * n + block_col + p.col);
                if (!CHECKED) {
                    copy_async_16(to, from);
                } else {
                    for (size_t j = 0; j < 4; ++j) {
                        bool inside = t + p.r < k && block_col + p.col + j < n;
                        copy_async_4(to + 4 * (unsigned)j, inside ? from + j : b, inside ? 4 : 0);
                    }
                }
            }
        }
        commit_copies();
    };

    float acc[TM][TN] = {};
    copy(0, 0);

    size_t stage = 0;
    for (size_t t = 0; t < k;) {
        // Slice t has landed and, after the barrier, every thread is done with the other stage
        // (slice t - 1), which the copies of slice t + 1 now overwrite.
        wait_all_copies();
        __syncthreads();
        size_t next = t + BK;
        if (next < k) copy(stage ^ 1, next);
        const float* a_stage = a_tile(stage) + ty * 4;
        const float* b_stage = b_tile(stage) + tx * 4;
#pragma unroll
        for (int kk = 0; kk < BK; ++kk) {
            float4 a_frag[2] = {}, b_frag[2] = {};
            for (int g = 0; g < TM / 4; ++g)
                a_frag[g] = *reinterpret_cast<const float4*>(a_stage + kk * BM + g * row_step);
            for (int g = 0; g < TN / 4; ++g)
                b_frag[g] = *reinterpret_cast<const float4*>(b_stage + kk * BN + g * col_step);
            for (int i = 0; i < TM; ++i)
                for (int j = 0; j < TN; ++j) acc[i][j] += lane(a_frag[i / 4], i % 4) * lane(b_frag[j / 4], j % 4);
        }
        stage ^= 1;
        t = next;
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

template <int BM, int BN, int BK, int TM, int TN>
__device__ __forceinline__ void matmul_cp_async(const float* __restrict__ a, const float* __restrict__ b, float* c,
                                            size_t m, size_t n, size_t k) {
    bool interior = INTERIOR_BLOCK(BM, BN, BK);
    if (interior) {
        matmul_cp_async_body<BM, BN, BK, TM, TN, false>(a, b, c, m, n, k);
    } else {
        matmul_cp_async_body<BM, BN, BK, TM, TN, true>(a, b, c, m, n, k);
    }
}

extern "C" __global__ void __launch_bounds__(MATMUL_CP_ASYNC_THREADS, 1) matmul_cp_async_128x128(MATMUL_PARAMS) {
    matmul_cp_async<MATMUL_CP_ASYNC_BM, MATMUL_CP_ASYNC_BN, MATMUL_CP_ASYNC_BK, MATMUL_CP_ASYNC_TM, MATMUL_CP_ASYNC_TN>(
        a, b, c, m, n, k);
}
