// Twin of kernels/src/saxpy.rs: y = a*x + y in place, grid-stride, scalar and 16-byte.
#include "twins.cuh"

extern "C" __global__ void saxpy(float a, const float* __restrict__ x, size_t x_len, float* y) {
    size_t stride = grid_threads();
    for (size_t i = global_index(); i < x_len; i += stride) {
        y[i] = a * x[i] + y[i];
    }
}

extern "C" __global__ void saxpy_vec4(float a, const float* __restrict__ x, size_t x_len, float* y) {
    size_t n = x_len;
    size_t quads = n / 4;
    size_t stride = grid_threads();
    const float4* x4 = reinterpret_cast<const float4*>(x);
    float4* y4 = reinterpret_cast<float4*>(y);
    for (size_t q = global_index(); q < quads; q += stride) {
        float4 xs = x4[q], ys = y4[q];
        y4[q] = make_float4(a * xs.x + ys.x, a * xs.y + ys.y, a * xs.z + ys.z, a * xs.w + ys.w);
    }
    size_t tail = 4 * quads + global_index();
    if (tail < n) {
        y[tail] = a * x[tail] + y[tail];
    }
}
