// Twin of kernels/src/matmul/wgmma_fp8.rs and convert_fp8.rs (step H4, FP8): e4m3 A (m x k) and
// B transposed (n x k), rows padded to 16 bytes, on wgmma.mma_async m64n256k32 through
// wgmma.cu's persistent grid; the epilogue multiplies by scale_a * scale_b. Then
// the conversions: the largest finite magnitude (NaN left out), and the rounding to e4m3
// (cvt.rn.satfinite.e4m3x2.f32) as the matrix lies or transposed through a padded 64 x 64 tile.
// Included by wgmma.cu, with which it is built for sm_90a.

// e4m3 on both sides: Bᵀ, contiguous along k like A; a k-step is 32 bytes (32 of k) along every row.
struct E4m3 {
    static constexpr unsigned kBk = WGMMA_BK_FP8;
    static constexpr bool kScaled = true;
    static __device__ __forceinline__ void b_box(size_t k0, size_t n, int& x, int& y) { x = (int)k0, y = (int)n; }
    static __device__ __forceinline__ uint64_t b_descriptor(unsigned b, unsigned kk) {
        return k_major_descriptor(b, kk);
    }
    static __device__ __forceinline__ void mma(uint32_t (&d)[128], uint64_t a, uint64_t b, bool accumulate) {
        unsigned scale = accumulate;
        WGMMA_M64N256("m64n256k32.f32.e4m3.e4m3", "1, 1");
    }
};

extern "C" __global__ void WGMMA_BOUNDS matmul_wgmma_e4m3(WGMMA_PARAMS, float scale_a, float scale_b) {
    matmul_wgmma_persistent<E4m3, Wide>(maps, c, m, n, k, scale_a * scale_b);
}

// Four values rounded to e4m3, byte i of the word holding x[i].
static __device__ __forceinline__ uint32_t pack_e4m3(float x0, float x1, float x2, float x3) {
    uint32_t out;
    asm("{ .reg .b16 lo, hi; cvt.rn.satfinite.e4m3x2.f32 lo, %2, %1; cvt.rn.satfinite.e4m3x2.f32 hi, %4, %3; "
        "mov.b32 %0, {lo, hi}; }"
        : "=r"(out)
        : "f"(x0), "f"(x1), "f"(x2), "f"(x3));
    return out;
}

static __device__ __forceinline__ size_t fp8_padded(size_t cols) {
    return (cols + WGMMA_FP8_ROW_ALIGN - 1) / WGMMA_FP8_ROW_ALIGN * WGMMA_FP8_ROW_ALIGN;
}

extern "C" __global__ void __launch_bounds__(WGMMA_FP8_CONVERT_THREADS, 1)
    convert_fp8_amax(const float* __restrict__ src, size_t src_len, unsigned* amax, size_t len) {
    unsigned best = 0;
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < len; i += (size_t)blockDim.x * gridDim.x) {
        unsigned bits = __float_as_uint(src[i]) & 0x7fffffffu;
        if (bits <= 0x7f800000u && bits > best) best = bits;  // above the infinity's bits: NaNs
    }
    best = __reduce_max_sync(0xffffffffu, best);
    if (threadIdx.x % 32 == 0) atomicMax(amax, best);
}

extern "C" __global__ void __launch_bounds__(WGMMA_FP8_CONVERT_THREADS, 1)
    convert_e4m3(const float* __restrict__ src, size_t src_len, uint32_t* dst, size_t rows, size_t cols, float inverse) {
    size_t words = fp8_padded(cols) / 4;
    auto at = [&](size_t row, size_t col) { return col < cols ? src[row * cols + col] * inverse : 0.0f; };
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < rows * words;
         i += (size_t)blockDim.x * gridDim.x) {
        size_t row = i / words, col = i % words * 4;
        dst[i] = pack_e4m3(at(row, col), at(row, col + 1), at(row, col + 2), at(row, col + 3));
    }
}

extern "C" __global__ void __launch_bounds__(WGMMA_FP8_CONVERT_THREADS, 1)
    convert_e4m3_transposed(const float* __restrict__ src, size_t src_len, uint32_t* dst, size_t rows, size_t cols,
                            float inverse) {
    constexpr size_t kTile = WGMMA_FP8_TILE, kStride = kTile + 1;
    __shared__ float tile[kTile * kStride];
    size_t col0 = (size_t)blockIdx.x * kTile, row0 = (size_t)blockIdx.y * kTile, tid = threadIdx.x;
    size_t c = tid % kTile;
    for (size_t r = tid / kTile; r < kTile; r += WGMMA_FP8_CONVERT_THREADS / kTile) {
        size_t row = row0 + r, col = col0 + c;
        tile[r * kStride + c] = row < rows && col < cols ? src[row * cols + col] * inverse : 0.0f;
    }
    __syncthreads();
    size_t words = fp8_padded(rows) / 4, w = tid % (kTile / 4), word = row0 / 4 + w;
    for (size_t n = tid / (kTile / 4); n < kTile; n += WGMMA_FP8_CONVERT_THREADS / (kTile / 4)) {
        if (col0 + n < cols && word < words) {
            const float* at = tile + 4 * w * kStride + n;
            dst[(col0 + n) * words + word] = pack_e4m3(at[0], at[kStride], at[2 * kStride], at[3 * kStride]);
        }
    }
}
