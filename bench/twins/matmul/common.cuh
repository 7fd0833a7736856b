// Twin of kernels/src/matmul/mod.rs: what the SGEMM steps share. C = A x B, row-major f32, A m x k,
// B k x n; every step has the Rust kernel's parameters (a slice is a pointer and a length).
#pragma once
#include "../twins.cuh"
#include "../interface.h"

#define MATMUL_PARAMS                                                                                       \
    const float* __restrict__ a, size_t a_len, const float* __restrict__ b, size_t b_len, float* c, size_t m, \
        size_t n, size_t k

// Dynamic shared memory, sized at launch; float4 for the 16-byte alignment of vector accesses.
extern __shared__ float4 matmul_shared4[];

static __device__ __forceinline__ float lane(float4 v, int j) {
    return j == 0 ? v.x : j == 1 ? v.y : j == 2 ? v.z : v.w;
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

// Whether this block's BM x BN tile lies inside C, on 16-byte aligned rows, with k a whole
// number of BK slices: then it needs no bounds checks. A macro, assigned to a bool before the
// branch on it: nvcc compiles other forms (a function, the test inside the `if`) to different,
// branch-free code.
#define INTERIOR_BLOCK(BM, BN, BK) \
    (((size_t)blockIdx.y + 1) * (BM) <= m && ((size_t)blockIdx.x + 1) * (BN) <= n && k % (BK) == 0 && n % 4 == 0)

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

// The first slice and the slices that split `split` of `splits` takes of `slices`: runs of
// ceil(slices / splits), the last shorter (interface::matmul::split_slices). Split k's layers
// take their runs of k with it: step 4d's (split_k.cu) and the wgmma steps' (wgmma.cu).
static __device__ __forceinline__ void split_slices(size_t slices, size_t split, size_t splits, size_t& first,
                                                    size_t& count) {
    size_t per = (slices + splits - 1) / splits;
    first = split * per;
    size_t rest = slices > first ? slices - first : 0;
    count = rest < per ? rest : per;
}
