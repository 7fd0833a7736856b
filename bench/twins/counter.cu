// Twin of kernels/src/counter.rs: a racy and an atomic shared counter.
#include "twins.cuh"

extern "C" __global__ void counter_racy(unsigned* counter, unsigned threads) {
    if (global_index() < (size_t)threads) {
        // volatile, like read_volatile/write_volatile: the compiler must not merge them.
        unsigned seen = *(volatile unsigned*)counter;
        *(volatile unsigned*)counter = seen + 1;
    }
}

extern "C" __global__ void counter_atomic(unsigned* counter, unsigned threads) {
    if (global_index() < (size_t)threads) {
        atomicAdd(counter, 1u);
    }
}
