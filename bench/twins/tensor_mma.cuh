// Twin of kernels/src/tensor/mma.rs: mma.sync, ldmatrix and the conversions into the tensor
// cores' input types, one function each, every value a 32-bit register as in the Rust.
#pragma once

static __device__ __forceinline__ void mma_tf32_m16n8k8(float (&acc)[4], const unsigned (&a)[4], const unsigned (&b)[2]) {
    asm volatile("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};"
        : "+f"(acc[0]), "+f"(acc[1]), "+f"(acc[2]), "+f"(acc[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}

// Mma16: the 16-bit types, their m16n8k16 product and their packing conversion (the Rust's
// mma16! macro): the same instructions, with the type's name in them.
#define MMA16_TYPE(Name, type)                                                                                  \
    struct Name {                                                                                               \
        static __device__ __forceinline__ void mma(float (&acc)[4], const unsigned (&a)[4], const unsigned (&b)[2]) { \
            asm volatile("mma.sync.aligned.m16n8k16.row.col.f32." type "." type ".f32 "                        \
                         "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};"                      \
                         : "+f"(acc[0]), "+f"(acc[1]), "+f"(acc[2]), "+f"(acc[3])                               \
                         : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));                    \
        }                                                                                                       \
        static __device__ __forceinline__ unsigned pack(float lo, float hi) {                                   \
            unsigned out;                                                                                       \
            asm("cvt.rn." type "x2.f32 %0, %1, %2;" : "=r"(out) : "f"(hi), "f"(lo));                             \
            return out;                                                                                         \
        }                                                                                                       \
    };
MMA16_TYPE(Bf16, "bf16")
MMA16_TYPE(F16, "f16")
#undef MMA16_TYPE

static __device__ __forceinline__ float to_tf32(float x) {
    unsigned out;
    asm("cvt.rna.tf32.f32 %0, %1;" : "=r"(out) : "f"(x));
    return __uint_as_float(out);
}

// "memory": the Rust's asm! without `nomem` (readonly) is likewise ordered with stores.
static __device__ __forceinline__ void ldmatrix_x4(unsigned (&r)[4], unsigned row) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(row)
                 : "memory");
}
static __device__ __forceinline__ void ldmatrix_x4_trans(unsigned (&r)[4], unsigned row) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(row)
                 : "memory");
}
