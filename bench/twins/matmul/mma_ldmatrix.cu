// Twin of kernels/src/matmul/mma_ldmatrix.rs: step 6b, BF16 and FP16 m16n8k16 fed by ldmatrix
// from a swizzled (XOR) shared layout, on step 6a's block, pipeline and store.
#include "mma_tf32.cu"

constexpr size_t HALF_BK = MATMUL_HALF_BK, HALF_STAGE_ELEMENTS = MATMUL_HALF_STAGE_ELEMENTS;

static __device__ __forceinline__ unsigned a_piece(size_t row, size_t piece) {
    return (unsigned)((row * 8 + (piece ^ (row % 8))) * 16);
}

static __device__ __forceinline__ unsigned b_piece(size_t row, size_t piece) {
    return (unsigned)((MMA_BM * HALF_BK * 2) + (row * (MMA_BN / 8) + (piece ^ (row % 8))) * 16);
}

template <class T>
static __device__ __forceinline__ void matmul_mma(const unsigned short* a, const unsigned short* b, float* c, size_t m,
                                                  size_t n, size_t k) {
    unsigned shared = shared_address(matmul_shared4);
    size_t lane = threadIdx.x % 32;
    size_t warp_row, warp_col;
    warp_corner(warp_row, warp_col);
    Copies<unsigned short> copies(a, b, m, n, k, a_piece, b_piece);
    unsigned a_rows[4][4], b_rows[4][4];
#pragma unroll
    for (int kk = 0; kk < 4; ++kk) {
#pragma unroll
        for (int i = 0; i < 4; ++i) {
            a_rows[kk][i] = a_piece(warp_row + i * 16 + lane % 16, kk * 2 + lane / 16);
            b_rows[kk][i] = b_piece(kk * 16 + lane % 16, warp_col / 8 + i * 2 + lane / 16);
        }
    }

    Accumulators acc = {};
    constexpr unsigned STAGE_BYTES = (unsigned)(HALF_STAGE_ELEMENTS * 2);
    pipeline(copies, shared, STAGE_BYTES, [&](unsigned s) {
        unsigned stage = shared + s * STAGE_BYTES;
#pragma unroll
        for (int kk = 0; kk < 4; ++kk) {
            unsigned a_frag[4][4], b_frag[8][2];
#pragma unroll
            for (int i = 0; i < 4; ++i) {
                ldmatrix_x4(a_frag[i], stage + a_rows[kk][i]);
                unsigned r[4];
                ldmatrix_x4_trans(r, stage + b_rows[kk][i]);
                b_frag[2 * i][0] = r[0], b_frag[2 * i][1] = r[1];
                b_frag[2 * i + 1][0] = r[2], b_frag[2 * i + 1][1] = r[3];
            }
#pragma unroll
            for (int i = 0; i < 4; ++i) {
#pragma unroll
                for (int j = 0; j < 8; ++j) T::mma(acc[i][j], a_frag[i], b_frag[j]);
            }
        }
    });

    store_tile(c, acc, (size_t)blockIdx.y * MMA_BM + warp_row, (size_t)blockIdx.x * MMA_BN + warp_col, m, n);
}

#define MMA16_PARAMS                                                                                         \
    const unsigned short* __restrict__ a, size_t a_len, const unsigned short* __restrict__ b, size_t b_len, \
        float* c, size_t m, size_t n, size_t k

extern "C" __global__ void __launch_bounds__(MMA_THREADS, 1) matmul_mma_bf16_128x256(MMA16_PARAMS) {
    matmul_mma<Bf16>(a, b, c, m, n, k);
}

extern "C" __global__ void __launch_bounds__(MMA_THREADS, 1) matmul_mma_f16_128x256(MMA16_PARAMS) {
    matmul_mma<F16>(a, b, c, m, n, k);
}
