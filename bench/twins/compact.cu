// Twin of kernels/src/compact.rs: the values inside a window (low < v < high in double, NaN in
// none), packed in order, with the scan's tile machinery (scan.cu) over the keep-flags; the block
// stages its tile's kept values in shared memory, then writes them out with consecutive threads.
#include "scan.cu"

extern "C" __global__ void __launch_bounds__(SCAN_BLOCK, SCAN_MIN_BLOCKS_PER_SM) compact_window_f32(const float* __restrict__ input, size_t n, double low, double high,
                                              float* output, unsigned long long* scratch, unsigned* count) {
    __shared__ float stage[SCAN_TILE];
    long long next = scan_next_tile(scratch, n);
    if (next < 0) return;
    size_t tile = (size_t)next, start = tile * SCAN_TILE;
    bool full = n - start >= SCAN_TILE;
    Quad<SumF32> values[SCAN_QUADS_PER_THREAD];
    unsigned keep = 0;  // bit 4j + k: value k of quad j is kept
    unsigned kept[SCAN_QUADS_PER_THREAD];
    // One branch for the whole tile, so that the loads issue back to back.
    if (full) {
        for (int j = 0; j < SCAN_QUADS_PER_THREAD; ++j) {
            float4 v = reinterpret_cast<const float4*>(input)[scan_quad_index(tile, j)];
            values[j].v[0] = v.x, values[j].v[1] = v.y, values[j].v[2] = v.z, values[j].v[3] = v.w;
        }
    } else {
        for (int j = 0; j < SCAN_QUADS_PER_THREAD; ++j) {
            size_t quad = scan_quad_index(tile, j);
            for (int k = 0; k < 4; ++k) values[j].v[k] = 4 * quad + k < n ? input[4 * quad + k] : NAN;
        }
    }
    for (int j = 0; j < SCAN_QUADS_PER_THREAD; ++j) {
        kept[j] = 0;
        for (int k = 0; k < 4; ++k) {
            double v = values[j].v[k];
            unsigned inside = low < v && v < high;
            keep |= inside << (4 * j + k);
            kept[j] += inside;
        }
    }
    TileSums<unsigned> sums = scan_tile<SumU32>(kept, tile, scratch, count, n - start <= SCAN_TILE);

    unsigned base = sums.tile_before;
    float* staged = stage + (sums.warp_before - base);
    for (int j = 0; j < SCAN_QUADS_PER_THREAD; ++j) {
        size_t place = kept[j];
        for (int k = 0; k < 4; ++k)
            if (keep & (1u << (4 * j + k))) staged[place++] = values[j].v[k];
    }
    __syncthreads();
    size_t run = sums.tile_through - base;
    for (size_t i = threadIdx.x; i < run && (size_t)base + i < n; i += SCAN_BLOCK) output[base + i] = stage[i];
}
