// Twin of kernels/src/matmul.rs (shapes: interface/src/matmul.rs): C = A x B, row-major f32,
// A m x k, B k x n. Same tiles, same thread-to-element mapping, same loads, same launch.
#include "twins.cuh"

#define BM 128
#define BN 128
#define BK 8
#define TM 8
#define TN 8

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

// Four consecutive elements of `row` from `col`, zero outside: one 16-byte load when all four
// are inside and aligned (cols a multiple of 4), else element by element.
static __device__ __forceinline__ float4 load4(const float* __restrict__ matrix, size_t row, size_t col, size_t rows,
                                               size_t cols) {
    if (row < rows && col + 4 <= cols && cols % 4 == 0) {
        return *reinterpret_cast<const float4*>(matrix + row * cols + col);
    }
    return make_float4(load_or_zero(matrix, row, col, rows, cols), load_or_zero(matrix, row, col + 1, rows, cols),
                       load_or_zero(matrix, row, col + 2, rows, cols), load_or_zero(matrix, row, col + 3, rows, cols));
}

static __device__ __forceinline__ float lane(float4 v, int j) {
    return j == 0 ? v.x : j == 1 ? v.y : j == 2 ? v.z : v.w;
}

// Register blocking plus 16-byte loads, conflict-free shared reads and double buffering.
// __launch_bounds__(256, 2) matches the .maxntid/.minnctapersm the project's PTX carries.
extern "C" __global__ void __launch_bounds__(256, 2)
    matmul_vec4_128x128(const float* __restrict__ a, size_t a_len, const float* __restrict__ b, size_t b_len,
                        float* c, size_t m, size_t n, size_t k) {
    const size_t stage_size = BK * (BM + BN);
    float* shared = reinterpret_cast<float*>(matmul_shared4);
    size_t tid = threadIdx.x;
    size_t tx = tid % (BN / 8), ty = tid / (BN / 8);
    size_t block_row = (size_t)blockIdx.y * BM;
    size_t block_col = (size_t)blockIdx.x * BN;
    // Which float4 of each slice this thread fetches.
    size_t a_row = tid / (BK / 4), a_col = (tid % (BK / 4)) * 4;
    size_t b_row = tid / (BN / 4), b_col = (tid % (BN / 4)) * 4;

    // A goes in transposed so that a thread's rows are contiguous along BM.
    auto store_slices = [&](size_t stage, float4 a4, float4 b4) {
        float* a_tile = shared + stage * stage_size;
        float* b_tile = a_tile + BK * BM;
        a_tile[(a_col + 0) * BM + a_row] = a4.x;
        a_tile[(a_col + 1) * BM + a_row] = a4.y;
        a_tile[(a_col + 2) * BM + a_row] = a4.z;
        a_tile[(a_col + 3) * BM + a_row] = a4.w;
        *reinterpret_cast<float4*>(b_tile + b_row * BN + b_col) = b4;
    };

    float acc[8][8] = {};
    store_slices(0, load4(a, block_row + a_row, a_col, m, k),
                 load4(b, b_row, block_col + b_col, k, n));
    __syncthreads();

    size_t stage = 0;
    for (size_t t = 0; t < k;) {
        size_t next = t + BK;
        bool prefetch = next < k;
        float4 a4 = make_float4(0.f, 0.f, 0.f, 0.f), b4 = a4;
        if (prefetch) {
            a4 = load4(a, block_row + a_row, next + a_col, m, k);
            b4 = load4(b, next + b_row, block_col + b_col, k, n);
        }
        const float* a_stage = shared + stage * stage_size + ty * 4;
        const float* b_stage = shared + stage * stage_size + BK * BM + tx * 4;
        // unroll_8! in the Rust: the next step's shared loads issue under this step's FMAs.
#pragma unroll
        for (int kk = 0; kk < BK; ++kk) {
            float4 a_lo = *reinterpret_cast<const float4*>(a_stage + kk * BM);
            float4 a_hi = *reinterpret_cast<const float4*>(a_stage + kk * BM + BM / 2);
            float4 b_lo = *reinterpret_cast<const float4*>(b_stage + kk * BN);
            float4 b_hi = *reinterpret_cast<const float4*>(b_stage + kk * BN + BN / 2);
            for (int i = 0; i < 8; ++i) {
                float a_i = i < 4 ? lane(a_lo, i) : lane(a_hi, i - 4);
                for (int j = 0; j < 8; ++j) {
                    float b_j = j < 4 ? lane(b_lo, j) : lane(b_hi, j - 4);
                    acc[i][j] += a_i * b_j;
                }
            }
        }
        if (prefetch) store_slices(stage ^ 1, a4, b4);
        __syncthreads();
        stage ^= 1;
        t = next;
    }

    for (int i = 0; i < 8; ++i) {
        size_t row = block_row + (i < 4 ? ty * 4 + i : BM / 2 + ty * 4 + i - 4);
        for (int half = 0; half < 2; ++half) {
            size_t col = block_col + half * (BN / 2) + tx * 4;
            float4 v = make_float4(acc[i][half * 4], acc[i][half * 4 + 1], acc[i][half * 4 + 2], acc[i][half * 4 + 3]);
            if (row < m && col + 4 <= n && n % 4 == 0) {
                *reinterpret_cast<float4*>(c + row * n + col) = v;
            } else {
                for (int j = 0; j < 4; ++j) {
                    if (row < m && col + j < n) c[row * n + col + j] = lane(v, j);
                }
            }
        }
    }
}
