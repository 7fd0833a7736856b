// Twin of kernels/src/label.rs: connected components by union-find, per tile in shared
// memory, across tile edges in global memory, then flattened and renumbered by rank.
#include "twins.cuh"

static __device__ __forceinline__ bool label_detected(float value, double level) { return (double)value > level; }

// Column of the first pixel of the run of set bits of `row` that column `col` is in.
static __device__ __forceinline__ unsigned run_start(unsigned row, unsigned col) {
    unsigned gaps = ~row & ((1u << col) - 1);
    return gaps == 0 ? 0 : 32 - __clz(gaps);
}

// A tile's parents in shared memory; reads during the joins are atomic too.
struct SharedParents {
    unsigned* p;
    __device__ __forceinline__ unsigned parent(unsigned x) const { return atomicOr(p + x, 0u); }
    __device__ __forceinline__ unsigned lower(unsigned x, unsigned v) const { return atomicMin(p + x, v); }
};

// The image's parents in global memory; a parent above its pixel is taken as a root.
struct GlobalParents {
    unsigned* p;
    __device__ __forceinline__ unsigned parent(unsigned x) const {
        unsigned parent = *(volatile unsigned*)(p + x);
        return parent <= x ? parent : x;
    }
    __device__ __forceinline__ unsigned lower(unsigned x, unsigned v) const {
        unsigned old = atomicMin(p + x, v);
        return old <= x ? old : x;
    }
};

template <class P>
static __device__ __forceinline__ unsigned find(const P& parents, unsigned x) {
    for (;;) {
        unsigned parent = parents.parent(x);
        if (parent == x) return x;
        x = parent;
    }
}

template <class P>
static __device__ __forceinline__ void join(const P& parents, unsigned a, unsigned b) {
    for (;;) {
        a = find(parents, a);
        b = find(parents, b);
        if (a == b) return;
        unsigned high = a > b ? a : b, low = a > b ? b : a;
        unsigned old = parents.lower(high, low);
        if (old == high) return;
        a = old;
        b = low;
    }
}

extern "C" __global__ void label_tiles(const float* image, size_t image_len, size_t width, size_t height,
                                       double level, unsigned connectivity, unsigned* labels) {
    __shared__ unsigned parent[LABEL_TILE_WIDTH * LABEL_TILE_HEIGHT];
    __shared__ unsigned rows[LABEL_TILE_HEIGHT];
    unsigned tx = threadIdx.x, ty = threadIdx.y;
    size_t col = (size_t)blockIdx.x * LABEL_TILE_WIDTH + tx;
    size_t row = (size_t)blockIdx.y * LABEL_TILE_HEIGHT + ty;
    bool inside = row < height && col < width;
    size_t pixel = row * width + col;
    bool set = inside && label_detected(image[pixel], level);

    unsigned bits = __ballot_sync(0xffffffffu, set);
    if (tx == 0) rows[ty] = bits;
    unsigned local = ty * LABEL_TILE_WIDTH + tx;
    unsigned start = run_start(bits, tx);
    if (set) parent[local] = local - tx + start;
    __syncthreads();

    SharedParents parents{parent};
    if (set && ty > 0) {
        unsigned above = rows[ty - 1];
        unsigned up = local - LABEL_TILE_WIDTH;
        unsigned first = connectivity == 8 && tx > 0 ? tx - 1 : tx;
        unsigned last = connectivity == 8 && tx + 1 < LABEL_TILE_WIDTH ? tx + 1 : tx;
        for (unsigned c = first; c <= last; ++c)
            if ((above >> c & 1) == 1 && (start == tx || run_start(above, c) == c)) join(parents, local, up - tx + c);
    }
    __syncthreads();

    if (inside) {
        unsigned value = LABEL_BACKGROUND;
        if (set) {
            unsigned root = find(parents, local);
            size_t root_row = root / LABEL_TILE_WIDTH, root_col = root % LABEL_TILE_WIDTH;
            value = (unsigned)((row - ty + root_row) * width + col - tx + root_col);
        }
        labels[pixel] = value;
    }
}

extern "C" __global__ void label_merge(size_t width, size_t height, unsigned connectivity, unsigned* labels) {
    GlobalParents parents{labels};
    size_t t = threadIdx.x;
    size_t col0 = (size_t)blockIdx.x * LABEL_TILE_WIDTH, row0 = (size_t)blockIdx.y * LABEL_TILE_HEIGHT;
    size_t reach = connectivity == 8 ? 1 : 0;
    auto set = [&](size_t pixel) { return *(volatile unsigned*)(labels + pixel) != LABEL_BACKGROUND; };

    size_t col = col0 + t;
    if (row0 > 0 && col < width && set(row0 * width + col)) {
        size_t pixel = row0 * width + col;
        for (size_t c = col >= reach ? col - reach : 0; c <= col + reach && c < width; ++c) {
            size_t other = (row0 - 1) * width + c;
            if (set(other)) join(parents, (unsigned)pixel, (unsigned)other);
        }
    }
    size_t row = row0 + t;
    if (col0 > 0 && t < LABEL_TILE_HEIGHT && row < height && set(row * width + col0)) {
        size_t pixel = row * width + col0;
        for (size_t r = row >= reach ? row - reach : 0; r <= row + reach && r < height; ++r) {
            size_t other = r * width + col0 - 1;
            if (set(other)) join(parents, (unsigned)pixel, (unsigned)other);
        }
    }
}

extern "C" __global__ void label_flatten(unsigned* labels, unsigned* roots, size_t n) {
    size_t i = global_index();
    if (i >= n) return;
    unsigned parent = labels[i];
    if (parent < (unsigned)i) labels[i] = find(GlobalParents{labels}, parent);
    roots[i] = parent == (unsigned)i;
}

extern "C" __global__ void label_renumber(unsigned* labels, const unsigned* ranks, size_t n, unsigned* count) {
    size_t i = global_index();
    if (i >= n) return;
    unsigned root = labels[i];
    labels[i] = (size_t)root < n ? ranks[root] + 1 : 0;
    if (i == n - 1) *count = ranks[i] + (root == (unsigned)i);
}
