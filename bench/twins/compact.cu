// Twin of kernels/src/compact.rs: the values inside a window (low < v < high in double, NaN in
// none), packed in order, with the scan's tile machinery (scan.cu) over the keep-flags.
#include "scan.cu"

extern "C" __global__ void compact_window_f32(const float* __restrict__ input, size_t n, double low, double high,
                                              float* output, unsigned long long* scratch, unsigned* count) {
    long long next = scan_next_tile(scratch, n);
    if (next < 0) return;
    size_t tile = (size_t)next, start = tile * SCAN_TILE;
    bool full = n - start >= SCAN_TILE;
    Quad<SumF32> values[SCAN_QUADS_PER_THREAD];
    Quad<SumU32> flags[SCAN_QUADS_PER_THREAD];
    for (int j = 0; j < SCAN_QUADS_PER_THREAD; ++j) {
        size_t quad = scan_quad_index(tile, j);
        if (full) {
            float4 v = reinterpret_cast<const float4*>(input)[quad];
            values[j].v[0] = v.x, values[j].v[1] = v.y, values[j].v[2] = v.z, values[j].v[3] = v.w;
        } else {
            for (int k = 0; k < 4; ++k) values[j].v[k] = 4 * quad + k < n ? input[4 * quad + k] : NAN;
        }
        for (int k = 0; k < 4; ++k) {
            double v = values[j].v[k];
            flags[j].v[k] = low < v && v < high;
        }
    }
    Quad<SumU32> places[SCAN_QUADS_PER_THREAD];
    exclusive_prefixes<SumU32>(flags, places, tile, scratch, count, n - start <= SCAN_TILE);
    for (int j = 0; j < SCAN_QUADS_PER_THREAD; ++j)
        for (int k = 0; k < 4; ++k) {
            size_t place = places[j].v[k];
            if (flags[j].v[k] != 0 && place < n) output[place] = values[j].v[k];
        }
}
