// Twin of kernels/src/matmul/double_buffer.rs: step 4c, two shared-memory stages, the next
// slice's global loads held in registers through the FMAs; one kernel per tuner configuration.
#pragma once  // split_k.cu builds on it
#include "common.cuh"

// The BM x BN tile of C at block (blockIdx.y, blockIdx.x), summed over k's columns of A (rows of
// B) from k_begin to k_end, where k is A's row length: all of k for the kernels below, one run of
// it for step 4d's splits (split_k.cu). k_begin is a multiple of BK.
// #pragma unroll exactly where the Rust unrolls by hand (unroll!): the piece loops and kk.
template <int BM, int BN, int BK, int TM, int TN, bool CHECKED>
__device__ __forceinline__ void matmul_vec4_body(const float* __restrict__ a, const float* __restrict__ b, float* c,
                                                 size_t m, size_t n, size_t k, size_t k_begin, size_t k_end) {
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

    // The pieces in flight between their global load and their shared store.
    float4 a4[MATMUL_MAX_LOADS] = {}, b4[MATMUL_MAX_LOADS] = {};
    auto fetch = [&](size_t t) {
#pragma unroll
        for (size_t l = 0; l < MATMUL_MAX_LOADS; ++l) {
            // Elements past the matrix's last row or column read as zero.
            if (l < a_loads) {
                Piece p = a_piece(l);
                size_t row = block_row + p.r;
                // k_end.saturating_sub(t + col), as in the Rust.
                size_t valid = !CHECKED ? 4 : row < m ? (k_end > t + p.col ? k_end - (t + p.col) : 0) : 0;
                a4[l] = load4(a + (row * k + t + p.col), valid, !CHECKED || k % 4 == 0);
            }
            if (l < b_loads) {
                Piece p = b_piece(l);
                size_t valid =
                    !CHECKED ? 4 : t + p.r < k_end ? (n > block_col + p.col ? n - (block_col + p.col) : 0) : 0;
                b4[l] = load4(b + ((t + p.r) * n + block_col + p.col), valid, !CHECKED || n % 4 == 0);
            }
        }
    };
    auto store = [&](size_t stage) {
#pragma unroll
        for (size_t l = 0; l < MATMUL_MAX_LOADS; ++l) {
            if (l < a_loads) {
                // A goes in transposed so that a thread's rows are contiguous along BM.
                Piece p = a_piece(l);
                for (int j = 0; j < 4; ++j) a_tile(stage)[(p.col + j) * BM + p.r] = lane(a4[l], j);
            }
            if (l < b_loads) {
                Piece p = b_piece(l);
                *reinterpret_cast<float4*>(b_tile(stage) + p.r * BN + p.col) = b4[l];
            }
        }
    };

    float acc[TM][TN] = {};
    fetch(k_begin);
    store(0);
    __syncthreads();

    size_t stage = 0;
    for (size_t t = k_begin; t < k_end;) {
        size_t next = t + BK;
        fetch(next < k_end ? next : t);  // the last step re-fetches its own slice: no branch, as in the Rust
        const float* a_stage = a_tile(stage) + ty * 4;
        const float* b_stage = b_tile(stage) + tx * 4;
        // The next step's shared loads issue under this step's FMAs (few warps to hide them).
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
        store(stage ^ 1);
        __syncthreads();
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
__device__ __forceinline__ void matmul_vec4(const float* __restrict__ a, const float* __restrict__ b, float* c,
                                            size_t m, size_t n, size_t k) {
    bool interior = INTERIOR_BLOCK(BM, BN, BK);
    if (interior) {
        matmul_vec4_body<BM, BN, BK, TM, TN, false>(a, b, c, m, n, k, 0, k);
    } else {
        matmul_vec4_body<BM, BN, BK, TM, TN, true>(a, b, c, m, n, k, 0, k);
    }
}

// One kernel per configuration of interface.h's SGEMM_CONFIGS, with the launch bounds its PTX
// carries (.maxntid = threads, .minnctapersm = blocks per SM).
#define MATMUL_VEC4(name, bm, bn, bk, tm, tn, blocks, threads, shared_bytes) \
    extern "C" __global__ void __launch_bounds__(threads, blocks) name(MATMUL_PARAMS) {  \
        matmul_vec4<bm, bn, bk, tm, tn>(a, b, c, m, n, k);                              \
    }
SGEMM_CONFIGS(MATMUL_VEC4)
#undef MATMUL_VEC4

