// Twin of kernels/src/matmul.rs (shapes: interface/src/matmul.rs): C = A x B, row-major f32,
// A m x k, B k x n. Same tiles, same thread-to-element mapping, same loads, same launch.
#include "twins.cuh"

extern "C" __global__ void matmul_naive(const float* __restrict__ a, size_t a_len, const float* __restrict__ b,
                                        size_t b_len, float* c, size_t m, size_t n, size_t k) {
    // 32-bit products widened afterwards, as in the Rust kernel.
    size_t row = blockIdx.y * blockDim.y + threadIdx.y;
    size_t col = blockIdx.x * blockDim.x + threadIdx.x;
    if (row < m && col < n) {
        float acc = 0.0f;
        for (size_t i = 0; i < k; ++i) acc += a[row * k + i] * b[i * n + col];
        c[row * n + col] = acc;
    }
}

// Tiles in dynamic shared memory: 2 * TILE * TILE floats, sized at launch.
extern __shared__ float4 matmul_shared4[];  // float4 for 16-byte alignment of the vec4 tiles

template <int TILE>
__device__ __forceinline__ void matmul_tiled(const float* __restrict__ a, const float* __restrict__ b, float* c,
                                             size_t m, size_t n, size_t k) {
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

extern "C" __global__ void matmul_tiled_16(const float* __restrict__ a, size_t a_len, const float* __restrict__ b,
                                           size_t b_len, float* c, size_t m, size_t n, size_t k) {
    matmul_tiled<16>(a, b, c, m, n, k);
}

extern "C" __global__ void matmul_tiled_32(const float* __restrict__ a, size_t a_len, const float* __restrict__ b,
                                           size_t b_len, float* c, size_t m, size_t n, size_t k) {
    matmul_tiled<32>(a, b, c, m, n, k);
}

static __device__ __forceinline__ float load_or_zero(const float* __restrict__ matrix, size_t row, size_t col,
                                                     size_t rows, size_t cols) {
    return (row < rows && col < cols) ? matrix[row * cols + col] : 0.0f;
}

extern "C" __global__ void matmul_blocked_128x128(const float* __restrict__ a, size_t a_len,
                                                  const float* __restrict__ b, size_t b_len, float* c, size_t m,
                                                  size_t n, size_t k) {
    // interface::matmul::{BM, BN, BK, TM, TN}; local, as matmul_vec4 takes these names as parameters.
    constexpr int BM = 128, BN = 128, BK = 8, TM = 8, TN = 8;
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

static __device__ __forceinline__ float lane(float4 v, int j) {
    return j == 0 ? v.x : j == 1 ? v.y : j == 2 ? v.z : v.w;
}

// v at C[row][col .. col + 4]: one 16-byte store when unchecked or all four are inside C on an
// aligned row, else the elements inside C one at a time.
template <bool CHECKED>
static __device__ __forceinline__ void store_c4(float* c, size_t row, size_t col, size_t m, size_t n, float4 v) {
    if (!CHECKED || (row < m && col + 4 <= n && n % 4 == 0)) {
        *reinterpret_cast<float4*>(c + row * n + col) = v;
    } else {
        for (int j = 0; j < 4; ++j) {
            if (row < m && col + j < n) c[row * n + col + j] = lane(v, j);
        }
    }
}

// Four consecutive elements from `p`, zero past the first `valid`: one 16-byte load when all
// four exist and `aligned` (the row length is a multiple of 4), else one element at a time.
static __device__ __forceinline__ float4 load4(const float* __restrict__ p, size_t valid, bool aligned) {
    if (valid >= 4 && aligned) return *reinterpret_cast<const float4*>(p);
    float v[4] = {};
    for (size_t j = 0; j < 4; ++j) {
        if (j < valid) v[j] = p[j];
    }
    return make_float4(v[0], v[1], v[2], v[3]);
}

// interface::matmul::MAX_LOADS: most 16-byte pieces of one slice a thread stages per step.
constexpr int MAX_LOADS = 4;

// Register blocking plus 16-byte loads, conflict-free shared reads and double buffering;
// #pragma unroll exactly where the Rust unrolls by hand (unroll!): the piece loops and kk.
template <int BM, int BN, int BK, int TM, int TN, bool CHECKED>
__device__ __forceinline__ void matmul_vec4_body(const float* __restrict__ a, const float* __restrict__ b, float* c,
                                                 size_t m, size_t n, size_t k) {
    constexpr size_t threads = (BM / TM) * (BN / TN);
    // 16-byte pieces of each slice a thread stages per step.
    constexpr size_t a_loads = BM * BK / 4 / threads, b_loads = BK * BN / 4 / threads;
    // TileConfig::is_valid.
    static_assert((TM == 4 || TM == 8) && (TN == 4 || TN == 8) && BM % TM == 0 && BN % TN == 0, "sub-tile");
    static_assert(BK == 8 || BK == 16, "BK");
    static_assert(BM * BK / 4 % threads == 0 && BK * BN / 4 % threads == 0, "whole pieces per thread");
    static_assert(a_loads >= 1 && a_loads <= MAX_LOADS && b_loads >= 1 && b_loads <= MAX_LOADS, "pieces");
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
    float4 a4[MAX_LOADS] = {}, b4[MAX_LOADS] = {};
    auto fetch = [&](size_t t) {
#pragma unroll
        for (size_t l = 0; l < MAX_LOADS; ++l) {
            // Elements past the matrix's last row or column read as zero.
            if (l < a_loads) {
                Piece p = a_piece(l);
                size_t row = block_row + p.r;
                size_t valid = !CHECKED ? 4 : row < m ? (k > t + p.col ? k - (t + p.col) : 0) : 0;  // saturating_sub
                a4[l] = load4(a + (row * k + t + p.col), valid, !CHECKED || k % 4 == 0);
            }
            if (l < b_loads) {
                Piece p = b_piece(l);
                size_t valid = !CHECKED ? 4 : t + p.r < k ? (n > block_col + p.col ? n - (block_col + p.col) : 0) : 0;
                b4[l] = load4(b + ((t + p.r) * n + block_col + p.col), valid, !CHECKED || n % 4 == 0);
            }
        }
    };
    auto store = [&](size_t stage) {
#pragma unroll
        for (size_t l = 0; l < MAX_LOADS; ++l) {
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
    fetch(0);
    store(0);
    __syncthreads();

    size_t stage = 0;
    for (size_t t = 0; t < k;) {
        size_t next = t + BK;
        fetch(next < k ? next : t);  // the last step re-fetches its own slice: no branch, as in the Rust
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

// Interior blocks (tile inside C, k whole slices, rows 16-byte aligned) skip every check.
template <int BM, int BN, int BK, int TM, int TN>
__device__ __forceinline__ void matmul_vec4(const float* __restrict__ a, const float* __restrict__ b, float* c,
                                            size_t m, size_t n, size_t k) {
    bool interior = ((size_t)blockIdx.y + 1) * BM <= m && ((size_t)blockIdx.x + 1) * BN <= n && k % BK == 0 &&
                    n % 4 == 0;
    if (interior) {
        matmul_vec4_body<BM, BN, BK, TM, TN, false>(a, b, c, m, n, k);
    } else {
        matmul_vec4_body<BM, BN, BK, TM, TN, true>(a, b, c, m, n, k);
    }
}

// One kernel per tuple of interface::sgemm_configs!, with the launch bounds its PTX carries
// (.maxntid = threads, .minnctapersm = blocks per SM).
#define MATMUL_VEC4(name, bm, bn, bk, tm, tn, blocks)                                                        \
    extern "C" __global__ void __launch_bounds__((bm / tm) * (bn / tn), blocks)                              \
        name(const float* __restrict__ a, size_t a_len, const float* __restrict__ b, size_t b_len, float* c, \
             size_t m, size_t n, size_t k) {                                                                 \
        matmul_vec4<bm, bn, bk, tm, tn>(a, b, c, m, n, k);                                                   \
    }
MATMUL_VEC4(matmul_vec4_128x128, 128, 128, 16, 8, 8, 1)
MATMUL_VEC4(matmul_vec4_128x128_k8, 128, 128, 8, 8, 8, 1)
MATMUL_VEC4(matmul_vec4_128x64, 128, 64, 8, 8, 8, 3)
MATMUL_VEC4(matmul_vec4_64x128, 64, 128, 8, 8, 8, 3)
MATMUL_VEC4(matmul_vec4_64x64, 64, 64, 8, 8, 8, 6)
MATMUL_VEC4(matmul_vec4_64x64_t4, 64, 64, 16, 4, 4, 3)
MATMUL_VEC4(matmul_vec4_128x64_k16, 128, 64, 16, 8, 8, 2)
#undef MATMUL_VEC4

// Step 5: cp.async staging, three stages, an 8x16 sub-tile per thread (interface::matmul::ASYNC_*).
constexpr int ASYNC_BM = 128, ASYNC_BN = 256, ASYNC_BK = 8, ASYNC_TM = 8, ASYNC_TN = 16, ASYNC_STAGES = 3;
constexpr int ASYNC_THREADS = (ASYNC_BM / ASYNC_TM) * (ASYNC_BN / ASYNC_TN);
constexpr int ASYNC_A_STRIDE = ASYNC_BM + 4;
constexpr int ASYNC_STAGE_FLOATS = ASYNC_BK * (ASYNC_A_STRIDE + ASYNC_BN);

static __device__ __forceinline__ unsigned shared_address(const void* p) {
    size_t address;
    asm("cvta.to.shared.u64 %0, %1;" : "=l"(address) : "l"(p));
    return (unsigned)address;
}
static __device__ __forceinline__ void copy_async_4(unsigned shared, const float* global, unsigned bytes) {
    asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;" ::"r"(shared), "l"(global), "r"(bytes) : "memory");
}
static __device__ __forceinline__ void copy_async_16(unsigned shared, const float* global) {
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(shared), "l"(global) : "memory");
}
static __device__ __forceinline__ void commit_copies() { asm volatile("cp.async.commit_group;" ::: "memory"); }
static __device__ __forceinline__ void wait_copies_but_newest() {
    static_assert(ASYNC_STAGES - 2 == 1, "wait_group below");
    asm volatile("cp.async.wait_group 1;" ::: "memory");
}

template <bool CHECKED>
__device__ __forceinline__ void matmul_async_body(const float* __restrict__ a, const float* __restrict__ b, float* c,
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
    unsigned slices = (unsigned)((k + ASYNC_BK - 1) / ASYNC_BK);

    constexpr size_t A_ROW_STEP = ASYNC_THREADS / ASYNC_BK, B_ROW_STEP = ASYNC_THREADS / (ASYNC_BN / 4);
    size_t a_kk = tid % ASYNC_BK, a_row = tid / ASYNC_BK;
    size_t b_row = tid / (ASYNC_BN / 4), b_col = tid % (ASYNC_BN / 4) * 4;
    unsigned a_to = shared_base + (unsigned)((a_kk * ASYNC_A_STRIDE + a_row) * 4);
    unsigned b_to = shared_base + (unsigned)((ASYNC_BK * ASYNC_A_STRIDE + b_row * ASYNC_BN + b_col) * 4);
    const float* a_from = a + (block_row + a_row) * k + a_kk;
    const float* b_from = b + b_row * n + block_col + b_col;

    auto stage_a = [&](unsigned stage, size_t t, const float* a_from) {
        unsigned stage_offset = stage * (unsigned)(ASYNC_STAGE_FLOATS * 4);
#pragma unroll
        for (size_t l = 0; l < A_COPIES; ++l) {
            bool inside = !CHECKED || (block_row + a_row + l * A_ROW_STEP < m && t + a_kk < k);
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
                    bool inside = t + b_row + l * B_ROW_STEP < k && block_col + b_col + j < n;
                    copy_async_4(to + 4 * (unsigned)j, inside ? from + j : b, inside ? 4 : 0);
                }
            }
        }
    };

#pragma unroll
    for (unsigned s = 0; s < ASYNC_STAGES - 1; ++s) {
        if (s < slices) {
            stage_a(s, s * ASYNC_BK, a_from);
            stage_b(s, s * ASYNC_BK, b_from);
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
            if (kk == 0 && copy_ahead) stage_a(free_stage, (size_t)(t + ASYNC_STAGES - 1) * ASYNC_BK, a_from);
            if (kk == ASYNC_BK / 2) {
                if (copy_ahead) stage_b(free_stage, (size_t)(t + ASYNC_STAGES - 1) * ASYNC_BK, b_from);
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

extern "C" __global__ void __launch_bounds__(ASYNC_THREADS, 1)
    matmul_async_128x256(const float* __restrict__ a, size_t a_len, const float* __restrict__ b, size_t b_len,
                         float* c, size_t m, size_t n, size_t k) {
    bool interior = ((size_t)blockIdx.y + 1) * ASYNC_BM <= m && ((size_t)blockIdx.x + 1) * ASYNC_BN <= n &&
                    k % ASYNC_BK == 0 && n % 4 == 0;
    if (interior) {
        matmul_async_body<false>(a, b, c, m, n, k);
    } else {
        matmul_async_body<true>(a, b, c, m, n, k);
    }
}
