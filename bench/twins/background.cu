// Twin of kernels/src/background.rs: per grid point, a block gathers its box's finite pixels
// into shared memory, sorts them (all-ascending bitonic, comparisons past the run skipped),
// and clips runs of them by binary search; then a thread per pixel interpolates. The
// arithmetic is interface/src/background.rs's, each operation rounded once (__dadd_rn and
// friends, never contracted), so both kernels write the same bits.
#include "twins.cuh"

static __device__ __forceinline__ unsigned bg_grid_points(unsigned extent, unsigned step) {
    return extent <= 1 ? 1 : (extent - 2) / step + 2;
}

static __device__ __forceinline__ unsigned bg_grid_coordinate(unsigned i, unsigned extent, unsigned step,
                                                              unsigned points) {
    return i + 1 >= points ? extent - 1 : i * step;
}

static __device__ __forceinline__ void bg_box_range(unsigned centre, unsigned extent, unsigned size, unsigned& start,
                                                    unsigned& end) {
    start = centre > size / 2 ? centre - size / 2 : 0;
    unsigned long long e = (unsigned long long)centre + (size - size / 2);
    end = e < extent ? (unsigned)e : extent;
}

static __device__ __forceinline__ unsigned bg_next(unsigned i, unsigned points) { return i + 1 < points ? i + 1 : i; }

static __device__ __forceinline__ unsigned bg_cell(unsigned p, unsigned extent, unsigned step, unsigned points,
                                                   double& fraction) {
    unsigned last_cell = points < 2 ? 0 : points - 2;
    unsigned lower = p / step < last_cell ? p / step : last_cell;
    unsigned first = lower * step;
    unsigned second = bg_grid_coordinate(bg_next(lower, points), extent, step, points);
    fraction = second > first ? __ddiv_rn((double)(p - first), (double)(second - first)) : 0.0;
    return lower;
}

static __device__ __forceinline__ void bg_accumulate(double& sum, double& total, double value, double weight) {
    if (weight > 0.0 && !isnan(value)) {
        sum = __dadd_rn(sum, __dmul_rn(weight, value));
        total = __dadd_rn(total, weight);
    }
}

static __device__ __forceinline__ double bg_interpolate(const double* v, const double* w) {
    double sum = 0.0, total = 0.0;
    bg_accumulate(sum, total, v[0], w[0]);
    bg_accumulate(sum, total, v[1], w[1]);
    bg_accumulate(sum, total, v[2], w[2]);
    bg_accumulate(sum, total, v[3], w[3]);
    if (total == 1.0) return sum;
    return total > 0.0 ? __ddiv_rn(sum, total) : (double)NAN;
}

// The sum over the warp in every lane: lanes 16 apart first, then 8, 4, 2, 1.
static __device__ __forceinline__ double bg_warp_total(double v) {
    v = v + __shfl_xor_sync(0xffffffffu, v, 16);
    v = v + __shfl_xor_sync(0xffffffffu, v, 8);
    v = v + __shfl_xor_sync(0xffffffffu, v, 4);
    v = v + __shfl_xor_sync(0xffffffffu, v, 2);
    return v + __shfl_xor_sync(0xffffffffu, v, 1);
}

static __device__ __forceinline__ double bg_block_total(double partial, double* totals) {
    unsigned lane = threadIdx.x % 32;
    double warp = bg_warp_total(partial);
    if (lane == 0) totals[threadIdx.x / 32] = warp;
    __syncthreads();
    return bg_warp_total(lane < BACKGROUND_WARPS ? totals[lane] : 0.0);
}

static __device__ __forceinline__ void bg_statistics(const float* values, unsigned a, unsigned b, double* sums,
                                                     double* squares, double& middle, double& sigma) {
    unsigned count = b - a;
    double partial = 0.0;
    for (unsigned i = a + threadIdx.x; i < b; i += BACKGROUND_THREADS) partial = __dadd_rn(partial, (double)values[i]);
    double mean = __ddiv_rn(bg_block_total(partial, sums), (double)count);
    partial = 0.0;
    for (unsigned i = a + threadIdx.x; i < b; i += BACKGROUND_THREADS) {
        double d = __dsub_rn((double)values[i], mean);
        partial = __dadd_rn(partial, __dmul_rn(d, d));
    }
    sigma = __dsqrt_rn(__ddiv_rn(bg_block_total(partial, squares), (double)count));
    double lower = values[a + (count - 1) / 2], upper = values[a + count / 2];
    middle = __dmul_rn(__dadd_rn(lower, upper), 0.5);
}

// The first index of the sorted run [lo, hi) past `limit`: above it (`above`), or at or
// above it.
static __device__ __forceinline__ unsigned bg_search(const float* values, unsigned lo, unsigned hi, double limit,
                                                     bool above) {
    while (lo < hi) {
        unsigned mid = lo + (hi - lo) / 2;
        double v = values[mid];
        if (above ? v > limit : v >= limit) hi = mid;
        else lo = mid + 1;
    }
    return lo;
}

static __device__ __forceinline__ void bg_order(float* values, unsigned i, unsigned l) {
    float x = values[i], y = values[l];
    if (x > y) values[i] = y, values[l] = x;
}

static __device__ __forceinline__ void bg_sort(float* values, unsigned n) {
    unsigned pairs = n <= 1 ? 0 : (1u << (32 - __clz(n - 1))) / 2;  // next power of two, halved
    for (unsigned size = 2; size <= 2 * pairs; size *= 2) {
        unsigned half = size / 2, shift = __ffs(half) - 1;
        for (unsigned p = threadIdx.x; p < pairs; p += BACKGROUND_THREADS) {
            unsigned start = (p >> shift) << (shift + 1), offset = p & (half - 1);
            unsigned partner = start + size - 1 - offset;
            if (partner < n) bg_order(values, start + offset, partner);
        }
        __syncthreads();
        for (unsigned j = half / 2; j > 0; j /= 2) {
            unsigned s = __ffs(j) - 1;
            for (unsigned p = threadIdx.x; p < pairs; p += BACKGROUND_THREADS) {
                unsigned i = ((p >> s) << (s + 1)) + (p & (j - 1));
                if (i + j < n) bg_order(values, i, i + j);
            }
            __syncthreads();
        }
    }
}

extern "C" __global__ void background_grid(const float* image, size_t image_len, size_t width, size_t height,
                                           unsigned step_x, unsigned step_y, unsigned box_x, unsigned box_y,
                                           double kappa, unsigned rounds, double* grid) {
    // All of it dynamic, laid out as the Rust kernel's (BACKGROUND_SHARED_*).
    extern __shared__ __align__(16) unsigned char shared[];
    unsigned& count = *(unsigned*)(shared + BACKGROUND_SHARED_COUNT);
    double* sums = (double*)(shared + BACKGROUND_SHARED_SUMS);
    double* squares = (double*)(shared + BACKGROUND_SHARED_SQUARES);
    float* values = (float*)(shared + BACKGROUND_SHARED_HEADER);
    unsigned w = (unsigned)width, h = (unsigned)height;
    unsigned point = blockIdx.x;
    unsigned columns = bg_grid_points(w, step_x), rows = bg_grid_points(h, step_y);
    unsigned cx = bg_grid_coordinate(point % columns, w, step_x, columns);
    unsigned cy = bg_grid_coordinate(point / columns, h, step_y, rows);
    unsigned x0, x1, y0, y1;
    bg_box_range(cx, w, box_x, x0, x1);
    bg_box_range(cy, h, box_y, y0, y1);
    if (threadIdx.x == 0) count = 0;
    __syncthreads();

    unsigned lane = threadIdx.x % 32, below = (1u << lane) - 1;
    unsigned span = x1 - x0, area = span * (y1 - y0);
    for (unsigned first = 0; first < area; first += BACKGROUND_THREADS) {
        unsigned q = first + threadIdx.x;
        float value = 0.0f;
        if (q < area) value = image[(size_t)(y0 + q / span) * width + (x0 + q % span)];
        bool keep = q < area && isfinite(value);
        unsigned kept = __ballot_sync(0xffffffffu, keep);
        if (kept != 0) {
            unsigned place = 0;
            if (lane == 0) place = atomicAdd(&count, __popc(kept));
            place = __shfl_sync(0xffffffffu, place, 0);
            if (keep) values[place + __popc(kept & below)] = value == 0.0f ? 0.0f : value;
        }
    }
    __syncthreads();
    unsigned n = count;
    double* out = grid + (size_t)point * BACKGROUND_FIELDS;
    if (n == 0) {
        if (threadIdx.x == 0) out[BACKGROUND_BACKGROUND] = NAN, out[BACKGROUND_NOISE] = NAN;
        return;
    }
    bg_sort(values, n);
    unsigned a = 0, b = n;
    double middle, sigma;
    bg_statistics(values, a, b, sums, squares, middle, sigma);
    for (unsigned round = 0; round < rounds; ++round) {
        double reach = __dmul_rn(kappa, sigma);
        double low = __dsub_rn(middle, reach), high = __dadd_rn(middle, reach);
        unsigned start = bg_search(values, a, b, low, true);
        unsigned end = bg_search(values, start, b, high, false);
        if (end == start || end - start == b - a) break;
        a = start, b = end;
        bg_statistics(values, a, b, sums, squares, middle, sigma);
    }
    if (threadIdx.x == 0) out[BACKGROUND_BACKGROUND] = middle, out[BACKGROUND_NOISE] = sigma;
}

extern "C" __global__ void background_interpolate(const float* image, size_t image_len, size_t width, size_t height,
                                                  unsigned step_x, unsigned step_y, const double* grid,
                                                  size_t grid_len, float* background, float* noise, float* snr) {
    size_t t = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= width * height) return;
    float pixel = image[t];
    if (!isfinite(pixel)) {
        background[t] = NAN, noise[t] = NAN;
        if (snr) snr[t] = NAN;
        return;
    }
    unsigned w = (unsigned)width, h = (unsigned)height;
    unsigned y = (unsigned)t / w, x = (unsigned)t % w;
    unsigned columns = bg_grid_points(w, step_x), rows = bg_grid_points(h, step_y);
    double fy, fx;
    unsigned r0 = bg_cell(y, h, step_y, rows, fy), c0 = bg_cell(x, w, step_x, columns, fx);
    unsigned r1 = bg_next(r0, rows), c1 = bg_next(c0, columns);
    double wy = __dsub_rn(1.0, fy), wx = __dsub_rn(1.0, fx);
    double weights[4] = {__dmul_rn(wy, wx), __dmul_rn(wy, fx), __dmul_rn(fy, wx), __dmul_rn(fy, fx)};
    size_t corner[4] = {(size_t)(r0 * columns + c0), (size_t)(r0 * columns + c1), (size_t)(r1 * columns + c0),
                        (size_t)(r1 * columns + c1)};
    double levels[4], sigmas[4];
    for (int k = 0; k < 4; ++k) {
        levels[k] = grid[corner[k] * BACKGROUND_FIELDS + BACKGROUND_BACKGROUND];
        sigmas[k] = grid[corner[k] * BACKGROUND_FIELDS + BACKGROUND_NOISE];
    }
    double level = bg_interpolate(levels, weights), sigma = bg_interpolate(sigmas, weights);
    background[t] = (float)level;
    noise[t] = (float)sigma;
    if (snr) snr[t] = (float)__ddiv_rn(__dsub_rn((double)pixel, level), sigma);
}
