// Twin of kernels/src/vector_add.rs. Rust slices (&[f32]) are read-only and alias nothing,
// which is what `const T* __restrict__` promises nvcc; the length follows each pointer.
#include "twins.cuh"

extern "C" __global__ void vector_add(const float* __restrict__ a, size_t a_len,
                                      const float* __restrict__ b, size_t b_len, float* c) {
    size_t i = global_index();
    if (i < a_len && i < b_len) {
        c[i] = a[i] + b[i];
    }
}

extern "C" __global__ void vector_add_vec4(const float* __restrict__ a, size_t a_len,
                                           const float* __restrict__ b, size_t b_len, float* c) {
    size_t n = a_len < b_len ? a_len : b_len;
    size_t quads = n / 4;
    size_t block = blockDim.x;
    size_t first = (size_t)blockIdx.x * block * VECTOR_QUADS_PER_THREAD + threadIdx.x;
    const float4* a4 = reinterpret_cast<const float4*>(a);
    const float4* b4 = reinterpret_cast<const float4*>(b);
    float4 x[VECTOR_QUADS_PER_THREAD], y[VECTOR_QUADS_PER_THREAD];
    // All loads before the first add, as in the Rust kernel: 64 bytes in flight per thread.
    for (int u = 0; u < VECTOR_QUADS_PER_THREAD; ++u) {
        x[u] = make_float4(0.f, 0.f, 0.f, 0.f);
        y[u] = make_float4(0.f, 0.f, 0.f, 0.f);
        size_t q = first + u * block;
        if (q < quads) {
            x[u] = a4[q];
            y[u] = b4[q];
        }
    }
    for (int u = 0; u < VECTOR_QUADS_PER_THREAD; ++u) {
        size_t q = first + u * block;
        if (q < quads) {
            reinterpret_cast<float4*>(c)[q] =
                make_float4(x[u].x + y[u].x, x[u].y + y[u].y, x[u].z + y[u].z, x[u].w + y[u].w);
        } else if (q == quads) {
            for (size_t i = 4 * quads; i < n; ++i) {
                c[i] = a[i] + b[i];
            }
        }
    }
}
