// Twin of kernels/src/matmul/mma_tf32.rs: step 6a, mma.sync m16n8k8 in TF32 on a 128x256 block
// of 8 warps (64x64 each), three cp.async stages, rows of the staged slices padded so that the
// fragment loads are conflict-free. Copies, pipeline and store_tile serve step 6b too.
#include "common.cuh"
#include "../async_copy.cuh"
#include "../tensor_mma.cuh"

constexpr size_t MMA_BM = MATMUL_MMA_BM, MMA_BN = MATMUL_MMA_BN, MMA_THREADS = MATMUL_MMA_THREADS;
constexpr size_t MMA_WARPS_N = MATMUL_MMA_WARPS_N, MMA_WARP_M = MATMUL_MMA_WARP_M, MMA_WARP_N = MATMUL_MMA_WARP_N;
constexpr unsigned MMA_STAGES = MATMUL_MMA_STAGES;
constexpr size_t TF32_A_STRIDE = MATMUL_TF32_A_STRIDE, TF32_B_STRIDE = MATMUL_TF32_B_STRIDE;
constexpr size_t TF32_STAGE_FLOATS = MATMUL_TF32_STAGE_FLOATS;
static_assert(MMA_STAGES == 3, "the pipeline keeps two slices in flight");

static __device__ __forceinline__ size_t mma_row_padded(size_t cols) {
    return (cols + MATMUL_MMA_ROW_ALIGN - 1) / MATMUL_MMA_ROW_ALIGN * MATMUL_MMA_ROW_ALIGN;
}

typedef float Accumulators[4][8][4];

// One thread's share of the copies of every slice: four 16-byte pieces of A, A_ROWS rows
// apart, and eight of B, b_rows rows apart, all in one column of pieces.
constexpr size_t A_ROWS = MMA_THREADS / 8;
template <class T>
__host__ __device__ constexpr size_t b_rows() {
    return MMA_THREADS / (MMA_BN / (16 / sizeof(T)));
}

template <class T>
struct Copies {
    const T *a_from, *b_from;
    size_t a_step, b_step;
    unsigned a_to, b_to, a_to_step, b_to_step;
    size_t a_rows_left, a_k, b_k;
    bool b_inside;
    size_t bk, b_slice;
    const T *a, *b;
    size_t k;

    template <class ToA, class ToB>
    __device__ __forceinline__ Copies(const T* a_, const T* b_, size_t m, size_t n, size_t k_, ToA to_a, ToB to_b) {
        constexpr size_t per = 16 / sizeof(T);
        size_t lda = mma_row_padded(k_), ldb = mma_row_padded(n);
        bk = 8 * per, a = a_, b = b_, k = k_;
        size_t tid = threadIdx.x;
        size_t block_row = (size_t)blockIdx.y * MMA_BM, block_col = (size_t)blockIdx.x * MMA_BN;
        size_t a_row = tid / 8, a_piece = tid % 8;
        size_t b_row = tid / (MMA_BN / per), b_piece = tid % (MMA_BN / per);
        a_from = a + (block_row + a_row) * lda + a_piece * per;
        b_from = b + b_row * ldb + block_col + b_piece * per;
        a_step = A_ROWS * lda, b_step = b_rows<T>() * ldb;
        a_to = to_a(a_row, a_piece), b_to = to_b(b_row, b_piece);
        a_to_step = to_a(a_row + A_ROWS, a_piece) - to_a(a_row, a_piece);
        b_to_step = to_b(b_row + b_rows<T>(), b_piece) - to_b(b_row, b_piece);
        a_rows_left = m > block_row + a_row ? m - (block_row + a_row) : 0;
        a_k = a_piece * per, b_k = b_row;
        b_inside = block_col + b_piece * per < n;
        b_slice = bk * ldb;
    }

    __device__ __forceinline__ void issue(unsigned stage, size_t k0) {
        bool a_k_inside = k0 + a_k < k;
#pragma unroll
        for (int i = 0; i < 4; ++i) {
            bool inside = a_k_inside && i * A_ROWS < a_rows_left;
            copy_async_16_or_zero(stage + a_to + i * a_to_step, inside ? a_from + i * a_step : a, inside ? 16 : 0);
        }
#pragma unroll
        for (int i = 0; i < 8; ++i) {
            bool inside = b_inside && k0 + b_k + i * b_rows<T>() < k;
            copy_async_16_or_zero(stage + b_to + i * b_to_step, inside ? b_from + i * b_step : b, inside ? 16 : 0);
        }
        a_from += bk;
        b_from += b_slice;
    }
};

template <class T, class Compute>
static __device__ __forceinline__ void pipeline(Copies<T>& copies, unsigned shared, unsigned stage_bytes,
                                                Compute compute) {
    unsigned slices = (unsigned)((copies.k + copies.bk - 1) / copies.bk);
#pragma unroll
    for (unsigned s = 0; s < 2; ++s) {
        if (s < slices) copies.issue(shared + s * stage_bytes, s * copies.bk);
        commit_copies();
    }
    unsigned stage = 0, free_stage = MMA_STAGES - 1;
    for (unsigned t = 0; t < slices; ++t) {
        wait_copies_but_newest();
        __syncthreads();
        if (t + MMA_STAGES - 1 < slices) copies.issue(shared + free_stage * stage_bytes, (size_t)(t + MMA_STAGES - 1) * copies.bk);
        commit_copies();
        compute(stage);
        stage = stage + 1 == MMA_STAGES ? 0 : stage + 1;
        free_stage = free_stage + 1 == MMA_STAGES ? 0 : free_stage + 1;
    }
}

static __device__ __forceinline__ void store_pair(float* c, size_t row, size_t col, size_t m, size_t n, float x,
                                                  float y) {
    if (row < m && col + 1 < n && n % 2 == 0) {
        *reinterpret_cast<float2*>(c + row * n + col) = make_float2(x, y);
    } else if (row < m && col < n) {
        c[row * n + col] = x;
        if (col + 1 < n) c[row * n + col + 1] = y;
    }
}

static __device__ __forceinline__ void store_tile(float* c, const Accumulators& acc, size_t row0, size_t col0, size_t m,
                                                  size_t n) {
    size_t lane = threadIdx.x % 32;
    row0 += lane / 4, col0 += lane % 4 * 2;
#pragma unroll
    for (int i = 0; i < 4; ++i) {
#pragma unroll
        for (int j = 0; j < 8; ++j) {
            size_t row = row0 + i * 16, col = col0 + j * 8;
            store_pair(c, row, col, m, n, acc[i][j][0], acc[i][j][1]);
            store_pair(c, row + 8, col, m, n, acc[i][j][2], acc[i][j][3]);
        }
    }
}

static __device__ __forceinline__ void warp_corner(size_t& row, size_t& col) {
    size_t warp = threadIdx.x / 32;
    row = (warp / MMA_WARPS_N) * MMA_WARP_M, col = (warp % MMA_WARPS_N) * MMA_WARP_N;
}

extern "C" __global__ void __launch_bounds__(MMA_THREADS, 1)
    matmul_mma_tf32_128x256(MATMUL_PARAMS) {
    float* shared = reinterpret_cast<float*>(matmul_shared4);
    size_t lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;
    size_t warp_row, warp_col;
    warp_corner(warp_row, warp_col);
    auto to_a = [](size_t row, size_t piece) { return (unsigned)((row * TF32_A_STRIDE + piece * 4) * 4); };
    auto to_b = [](size_t row, size_t piece) {
        return (unsigned)((MMA_BM * TF32_A_STRIDE + row * TF32_B_STRIDE + piece * 4) * 4);
    };
    Copies<float> copies(a, b, m, n, k, to_a, to_b);

    Accumulators acc = {};
    pipeline(copies, shared_address(shared), (unsigned)(TF32_STAGE_FLOATS * 4), [&](unsigned s) {
        const float* stage = shared + s * TF32_STAGE_FLOATS;
        const float* a_stage = stage + (warp_row + g) * TF32_A_STRIDE + t;
        const float* b_stage = stage + MMA_BM * TF32_A_STRIDE + t * TF32_B_STRIDE + warp_col + g;
#pragma unroll
        for (int kk = 0; kk < 4; ++kk) {
            auto a_at = [&](size_t row, size_t col) { return __float_as_uint(a_stage[row * TF32_A_STRIDE + kk * 8 + col]); };
            auto b_at = [&](size_t row, size_t col) {
                return __float_as_uint(b_stage[(kk * 8 + row) * TF32_B_STRIDE + col]);
            };
            unsigned a_frag[4][4], b_frag[8][2];
#pragma unroll
            for (int i = 0; i < 4; ++i) {
                a_frag[i][0] = a_at(i * 16, 0), a_frag[i][1] = a_at(i * 16 + 8, 0);
                a_frag[i][2] = a_at(i * 16, 4), a_frag[i][3] = a_at(i * 16 + 8, 4);
            }
#pragma unroll
            for (int j = 0; j < 8; ++j) b_frag[j][0] = b_at(0, j * 8), b_frag[j][1] = b_at(4, j * 8);
#pragma unroll
            for (int i = 0; i < 4; ++i) {
#pragma unroll
                for (int j = 0; j < 8; ++j) mma_tf32_m16n8k8(acc[i][j], a_frag[i], b_frag[j]);
            }
        }
    });

    store_tile(c, acc, (size_t)blockIdx.y * MMA_BM + warp_row, (size_t)blockIdx.x * MMA_BN + warp_col, m, n);
}
