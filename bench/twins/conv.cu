// Twin of kernels/src/conv2d.rs and kernels/src/conv1d.rs (sizes: interface/src/conv.rs).
// Cross-correlation, zero padding, taps in constant memory. The runner fills this module's
// own FILTER, as the host fills the Rust module's.
#include "twins.cuh"

// Derived as the Rust kernels derive them from interface::conv.
#define ROWS_PER_THREAD (CONV_TILE / CONV_BLOCK_ROWS)
#define SHARED_WIDTH (CONV_TILE + 2 * CONV_MAX_RADIUS)

__constant__ float FILTER[CONV_MAX_TAPS];  // named CONV_FILTER_SYMBOL

extern "C" __global__ void conv2d_naive(const float* __restrict__ input, size_t input_len, float* output,
                                        size_t width, size_t height, size_t radius) {
    size_t x = blockIdx.x * blockDim.x + threadIdx.x;
    size_t y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x >= width || y >= height) return;
    size_t taps = 2 * radius + 1;
    float acc = 0.0f;
    for (size_t fy = 0; fy < taps; ++fy) {
        size_t iy = y + fy - radius;  // wraps above the image and fails the bounds check
        if (iy >= height) continue;
        for (size_t fx = 0; fx < taps; ++fx) {
            size_t ix = x + fx - radius;
            if (ix < width) acc += FILTER[fy * taps + fx] * input[iy * width + ix];
        }
    }
    output[y * width + x] = acc;
}

template <int R>
__device__ __forceinline__ void conv2d_tiled(const float* __restrict__ input, float* output, size_t width,
                                             size_t height) {
    // Sized for the largest radius, like the Rust shared_array!.
    __shared__ float tile[SHARED_WIDTH * SHARED_WIDTH];
    const size_t span = CONV_TILE + 2 * R;
    const int taps = 2 * R + 1;
    size_t tx = threadIdx.x, ty = threadIdx.y;
    size_t x0 = (size_t)blockIdx.x * CONV_TILE;
    size_t y0 = (size_t)blockIdx.y * CONV_TILE;

    // Stage the (TILE + 2R)^2 input window, zero outside the image.
    for (size_t e = ty * CONV_TILE + tx; e < span * span; e += CONV_TILE * CONV_BLOCK_ROWS) {
        size_t sy = e / span, sx = e % span;
        size_t gy = y0 + sy - R, gx = x0 + sx - R;
        tile[sy * SHARED_WIDTH + sx] = (gy < height && gx < width) ? input[gy * width + gx] : 0.0f;
    }
    __syncthreads();

    // ROWS_PER_THREAD rows from first_row of column tx; each filter column's ROWS_PER_THREAD + 2R inputs are
    // loaded from shared memory once and reused by all rows and filter rows.
    size_t first_row = ty * ROWS_PER_THREAD;
    float acc[ROWS_PER_THREAD] = {};
    float column[ROWS_PER_THREAD + 2 * CONV_MAX_RADIUS];
    for (int fx = 0; fx < taps; ++fx) {
        for (int i = 0; i < ROWS_PER_THREAD + 2 * R; ++i) column[i] = tile[(first_row + i) * SHARED_WIDTH + tx + fx];
        for (int fy = 0; fy < taps; ++fy) {
            float tap = FILTER[fy * taps + fx];
            for (int row = 0; row < ROWS_PER_THREAD; ++row) acc[row] += tap * column[row + fy];
        }
    }
    size_t x = x0 + tx;
    for (int row = 0; row < ROWS_PER_THREAD; ++row) {
        size_t y = y0 + first_row + row;
        if (x < width && y < height) output[y * width + x] = acc[row];
    }
}

extern "C" __global__ void conv2d_tiled_r1(const float* __restrict__ input, size_t input_len, float* output,
                                           size_t width, size_t height) {
    conv2d_tiled<1>(input, output, width, height);
}

extern "C" __global__ void conv2d_tiled_r2(const float* __restrict__ input, size_t input_len, float* output,
                                           size_t width, size_t height) {
    conv2d_tiled<2>(input, output, width, height);
}

extern "C" __global__ void conv2d_tiled_r3(const float* __restrict__ input, size_t input_len, float* output,
                                           size_t width, size_t height) {
    conv2d_tiled<3>(input, output, width, height);
}

extern "C" __global__ void conv1d(const float* __restrict__ input, size_t input_len, float* output, size_t radius) {
    __shared__ float tile[CONV_CONV1D_BLOCK + 2 * CONV_MAX_RADIUS];
    size_t n = input_len;
    size_t tid = threadIdx.x;
    size_t start = (size_t)blockIdx.x * CONV_CONV1D_BLOCK;
    for (size_t e = tid; e < CONV_CONV1D_BLOCK + 2 * radius; e += CONV_CONV1D_BLOCK) {
        size_t g = start + e - radius;  // wraps left of the signal and fails the check
        tile[e] = g < n ? input[g] : 0.0f;
    }
    __syncthreads();
    size_t i = start + tid;
    if (i < n) {
        float acc = 0.0f;
        for (size_t f = 0; f < 2 * radius + 1; ++f) acc += FILTER[f] * tile[tid + f];
        output[i] = acc;
    }
}

// CONV_CONV1D_VEC4_SPAN outputs a block: each thread loads CONV_CONV1D_VEC4_QUADS quads with 16-byte
// loads (all in flight at once), stores them and the halo, then thread t computes outputs
// t, t + CONV_CONV1D_BLOCK, ...
extern "C" __global__ void conv1d_vec4(const float* __restrict__ input, size_t input_len, float* output,
                                       size_t radius) {
    __shared__ float tile[CONV_CONV1D_VEC4_SPAN + 2 * CONV_MAX_RADIUS];
    size_t n = input_len;
    size_t tid = threadIdx.x;
    size_t start = (size_t)blockIdx.x * CONV_CONV1D_VEC4_SPAN;

    // tile[radius + e] holds input[start + e].
    float quads[CONV_CONV1D_VEC4_QUADS][4] = {};
    for (int u = 0; u < CONV_CONV1D_VEC4_QUADS; ++u) {
        size_t g = start + 4 * (tid + u * CONV_CONV1D_BLOCK);
        if (g + 4 <= n) {
            float4 q = reinterpret_cast<const float4*>(input)[g / 4];
            quads[u][0] = q.x, quads[u][1] = q.y, quads[u][2] = q.z, quads[u][3] = q.w;
        } else {
            for (int j = 0; j < 4; ++j)
                if (g + j < n) quads[u][j] = input[g + j];
        }
    }
    for (int u = 0; u < CONV_CONV1D_VEC4_QUADS; ++u) {
        size_t e = 4 * (tid + u * CONV_CONV1D_BLOCK);
        for (int j = 0; j < 4; ++j) tile[radius + e + j] = quads[u][j];
    }
    if (tid < radius) {
        size_t left = start + tid - radius;
        tile[tid] = left < n ? input[left] : 0.0f;
        size_t right = start + CONV_CONV1D_VEC4_SPAN + tid;
        tile[radius + CONV_CONV1D_VEC4_SPAN + tid] = right < n ? input[right] : 0.0f;
    }
    __syncthreads();

    for (int u = 0; u < 4 * CONV_CONV1D_VEC4_QUADS; ++u) {
        size_t o = tid + u * CONV_CONV1D_BLOCK;
        size_t i = start + o;
        if (i < n) {
            float acc = 0.0f;
            for (size_t f = 0; f < 2 * radius + 1; ++f) acc += FILTER[f] * tile[o + f];
            output[i] = acc;
        }
    }
}
