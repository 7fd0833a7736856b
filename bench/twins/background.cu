// Twin of kernels/src/background.rs: per grid point, a block keeps its box's pixels in shared
// memory and clips them by rounds, each round's median found by narrowing histograms and then
// ranking the few values left; then a thread per pixel interpolates. The
// arithmetic is interface/src/background.rs's, each operation rounded once (__dadd_rn and
// friends, never contracted), so both kernels write the same bits.
#include "twins.cuh"

static __device__ __forceinline__ unsigned bg_grid_points(unsigned extent, unsigned step) {
    return extent <= 1 ? 1 : (extent - 2) / step + 2;
}

// Tiles of a grid step along an axis, the last cut short (interface::background::tiles).
static __device__ __forceinline__ unsigned bg_tiles(unsigned extent, unsigned step) { return (extent - 1) / step + 1; }

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

struct BgTally {
    unsigned count;
    float least, most;
};

static __device__ __forceinline__ BgTally bg_empty() { return BgTally{0, INFINITY, -INFINITY}; }

static __device__ __forceinline__ BgTally bg_with(BgTally t, float v) {
    return BgTally{t.count + 1, fminf(t.least, v), fmaxf(t.most, v)};
}

static __device__ __forceinline__ BgTally bg_merge(BgTally a, BgTally b) {
    return BgTally{a.count + b.count, fminf(a.least, b.least), fmaxf(a.most, b.most)};
}

static __device__ __forceinline__ BgTally bg_warp_tally(BgTally t) {
    for (unsigned mask = 16; mask > 0; mask /= 2) {
        BgTally other{__shfl_xor_sync(0xffffffffu, t.count, mask), __shfl_xor_sync(0xffffffffu, t.least, mask),
                      __shfl_xor_sync(0xffffffffu, t.most, mask)};
        t = bg_merge(t, other);
    }
    return t;
}

// The shared memory, laid out as the Rust kernel's (BACKGROUND_SHARED_*).
struct BgScratch {
    double* sums;
    double* squares;
    unsigned* counts;
    float* least;
    float* most;
    unsigned* pick;
    unsigned* bins;
    float* candidates;
    float* values;
};

static __device__ __forceinline__ BgTally bg_read_tally(const BgScratch& s) {
    BgTally all = bg_empty();
    for (unsigned w = 0; w < BACKGROUND_WARPS; ++w) all = bg_merge(all, BgTally{s.counts[w], s.least[w], s.most[w]});
    return all;
}

static __device__ __forceinline__ BgTally bg_block_tally(const BgScratch& s, BgTally mine) {
    BgTally warp = bg_warp_tally(mine);
    if (threadIdx.x % 32 == 0) {
        unsigned w = threadIdx.x / 32;
        s.counts[w] = warp.count, s.least[w] = warp.least, s.most[w] = warp.most;
    }
    __syncthreads();
    return bg_read_tally(s);
}

// The window (lo, hi) in f64 as the f32 bounds that keep the same values
// (interface::background::kept_bounds): the least f32 above lo, the greatest below hi.
static __device__ __forceinline__ float bg_least_above(double x) {
    float nearest = (float)x;
    if ((double)nearest > x) return nearest;
    unsigned bits = __float_as_uint(nearest);
    if (isnan(nearest) || nearest == INFINITY) return nearest;
    if (nearest == 0.0f) return __uint_as_float(1u);
    return __uint_as_float(nearest > 0.0f ? bits + 1 : bits - 1);
}

static __device__ __forceinline__ bool bg_kept(float v, float least, float most) { return v >= least && v <= most; }

// interface::background::BinScale: a narrow range's distances scaled by a power of two first.
struct BgScale {
    float pre, scale;
};

static __device__ __forceinline__ BgScale bg_bin_scale(float least, float most) {
    double range = (double)most - (double)least;
    float pre = range < BACKGROUND_NARROW_RANGE ? BACKGROUND_NARROW_PRE : 1.0f;
    return BgScale{pre, (float)((double)BACKGROUND_BINS / (range * (double)pre))};
}

// The whole part by 2^23 added rounding towards zero (interface::background::bin).
static __device__ __forceinline__ unsigned bg_bin(float v, float least, BgScale s) {
    float x = fminf(fmaxf((v - least) * s.pre * s.scale, 0.0f), (float)(BACKGROUND_BINS - 1));
    return __float_as_uint(__fadd_rz(x, 8388608.0f)) - 0x4B000000u;
}

static __device__ __forceinline__ BgTally bg_first_moments(const BgScratch& s, unsigned area, float lo, float hi,
                                                           double& sum) {
    BgTally mine = bg_empty();
    double partial = 0.0;
    for (unsigned q = threadIdx.x; q < area; q += BACKGROUND_THREADS) {
        float v = s.values[q];
        if (bg_kept(v, lo, hi)) mine = bg_with(mine, v), partial = __dadd_rn(partial, (double)v);
    }
    unsigned lane = threadIdx.x % 32;
    double warp_sum = bg_warp_total(partial);
    BgTally warp = bg_warp_tally(mine);
    if (lane == 0) {
        unsigned w = threadIdx.x / 32;
        s.sums[w] = warp_sum, s.counts[w] = warp.count, s.least[w] = warp.least, s.most[w] = warp.most;
    }
    __syncthreads();
    sum = bg_warp_total(lane < BACKGROUND_WARPS ? s.sums[lane] : 0.0);
    return bg_read_tally(s);
}

// The squared deviations, and where `histogram` the range's histogram in the same pass.
static __device__ __forceinline__ double bg_squared_deviations(const BgScratch& s, unsigned area, float lo,
                                                               float hi, double mean, bool histogram,
                                                               float least, BgScale scale) {
    double partial = 0.0;
    if (histogram) {
        for (unsigned q = threadIdx.x; q < area; q += BACKGROUND_THREADS) {
            float v = s.values[q];
            if (bg_kept(v, lo, hi)) {
                double d = __dsub_rn((double)v, mean);
                partial = __dadd_rn(partial, __dmul_rn(d, d));
                atomicAdd(&s.bins[bg_bin(v, least, scale)], 1u);
            }
        }
    } else {
        for (unsigned q = threadIdx.x; q < area; q += BACKGROUND_THREADS) {
            float v = s.values[q];
            if (bg_kept(v, lo, hi)) {
                double d = __dsub_rn((double)v, mean);
                partial = __dadd_rn(partial, __dmul_rn(d, d));
            }
        }
    }
    return bg_block_total(partial, s.squares);
}

static __device__ __forceinline__ unsigned bg_exclusive_scan(unsigned value, unsigned* totals) {
    unsigned lane = threadIdx.x % 32, inclusive = value;
    for (unsigned delta = 1; delta < 32; delta *= 2) {
        unsigned from = __shfl_up_sync(0xffffffffu, inclusive, delta);
        if (lane >= delta) inclusive += from;
    }
    if (lane == 31) totals[threadIdx.x / 32] = inclusive;
    __syncthreads();
    unsigned before = 0;
    for (unsigned w = 0; w < threadIdx.x / 32; ++w) before += totals[w];
    return before + inclusive - value;
}

// The range's least and greatest were kept by the window, so it holds the range.
static __device__ __forceinline__ bool bg_inside(float v, const BgTally& r) { return v >= r.least && v <= r.most; }

// The values of rank `rank` and `rank + 1` among the `count` values that `wanted` keeps;
// `has_next` false where rank + 1 is not below `count`.
template <typename Wanted>
static __device__ __forceinline__ float bg_rank_candidates(const BgScratch& s, unsigned area, unsigned rank,
                                                           unsigned count, Wanted wanted, float& next,
                                                           bool& has_next) {
    unsigned tid = threadIdx.x;
    for (unsigned q = tid; q < area; q += BACKGROUND_THREADS) {
        float v = s.values[q];
        if (wanted(v)) s.candidates[atomicAdd(&s.pick[BACKGROUND_PICK_PLACED], 1u)] = v;
    }
    __syncthreads();
    if (tid == 0) s.pick[BACKGROUND_PICK_PLACED] = 0;
    if (tid < count) {
        float v = s.candidates[tid];
        unsigned less = 0, equal = 0, equal_before = 0;
        for (unsigned j = 0; j < count; ++j) {
            float other = s.candidates[j];
            less += other < v;
            equal += other == v;
            equal_before += other == v && j < tid;
        }
        if (equal_before == 0) {
            if (less <= rank && rank < less + equal) s.pick[BACKGROUND_PICK_VALUE] = __float_as_uint(v);
            if (less <= rank + 1 && rank + 1 < less + equal) s.pick[BACKGROUND_PICK_NEXT] = __float_as_uint(v);
        }
    }
    __syncthreads();
    has_next = rank + 1 < count;
    next = __uint_as_float(s.pick[BACKGROUND_PICK_NEXT]);
    return __uint_as_float(s.pick[BACKGROUND_PICK_VALUE]);
}

static __device__ __forceinline__ float bg_select(const BgScratch& s, unsigned area, unsigned rank, BgTally range,
                                                  bool counted, float& next, bool& has_next) {
    unsigned tid = threadIdx.x;
    for (;;) {
        if (range.least == range.most) {
            __syncthreads();  // the tally slots were read since the last barrier
            next = range.least, has_next = rank + 1 < range.count;
            return range.least;
        }
        if (range.count <= BACKGROUND_CANDIDATES)
            return bg_rank_candidates(s, area, rank, range.count, [&](float v) { return bg_inside(v, range); }, next,
                                      has_next);
        BgScale scale = bg_bin_scale(range.least, range.most);
        if (!counted) {
            for (unsigned q = tid; q < area; q += BACKGROUND_THREADS) {
                float v = s.values[q];
                if (bg_inside(v, range)) atomicAdd(&s.bins[bg_bin(v, range.least, scale)], 1u);
            }
            __syncthreads();
        }
        counted = false;
        unsigned first = tid * BACKGROUND_BINS_PER_THREAD, own = 0;
        for (unsigned i = 0; i < BACKGROUND_BINS_PER_THREAD; ++i) own += s.bins[first + i];
        unsigned below = bg_exclusive_scan(own, s.counts);
        for (unsigned i = 0; i < BACKGROUND_BINS_PER_THREAD; ++i) {
            unsigned count = s.bins[first + i];
            s.bins[first + i] = 0;
            if (below <= rank && rank < below + count) {
                s.pick[BACKGROUND_PICK_BIN] = first + i;
                s.pick[BACKGROUND_PICK_BELOW] = below;
                s.pick[BACKGROUND_PICK_COUNT] = count;
            }
            below += count;
        }
        __syncthreads();
        unsigned chosen = s.pick[BACKGROUND_PICK_BIN], skipped = s.pick[BACKGROUND_PICK_BELOW];
        unsigned count = s.pick[BACKGROUND_PICK_COUNT];
        rank -= skipped;
        auto in_chosen = [&](float v) { return bg_inside(v, range) && bg_bin(v, range.least, scale) == chosen; };
        if (count <= BACKGROUND_CANDIDATES) return bg_rank_candidates(s, area, rank, count, in_chosen, next, has_next);
        BgTally in_bin = bg_empty();
        for (unsigned q = tid; q < area; q += BACKGROUND_THREADS) {
            float v = s.values[q];
            if (in_chosen(v)) in_bin = bg_with(in_bin, v);
        }
        BgTally narrowed = bg_block_tally(s, in_bin);
        range = BgTally{count, narrowed.least, narrowed.most};
    }
}

static __device__ __forceinline__ float bg_successor(const BgScratch& s, unsigned area, float lo, float hi,
                                                     unsigned rank, float lower) {
    unsigned at_most = 0;
    BgTally above = bg_empty();
    for (unsigned q = threadIdx.x; q < area; q += BACKGROUND_THREADS) {
        float v = s.values[q];
        if (bg_kept(v, lo, hi)) {
            if (v <= lower) ++at_most;
            else above = bg_with(above, v);
        }
    }
    above.count = at_most;
    BgTally tally = bg_block_tally(s, above);
    __syncthreads();
    return tally.count > rank + 1 ? lower : tally.least;
}

// The launch bounds of the Rust kernel (interface::background::BOUNDS).
extern "C" __global__ void __launch_bounds__(BACKGROUND_THREADS, BACKGROUND_GRID_BLOCKS_PER_SM) background_grid(const float* image, size_t image_len, size_t width, size_t height,
                                           unsigned step_x, unsigned step_y, unsigned box_x, unsigned box_y,
                                           double kappa, unsigned rounds, double* grid, unsigned* finite,
                                           const unsigned* touched) {
    extern __shared__ __align__(16) unsigned char shared[];
    BgScratch s{(double*)(shared + BACKGROUND_SHARED_SUMS),     (double*)(shared + BACKGROUND_SHARED_SQUARES),
                (unsigned*)(shared + BACKGROUND_SHARED_COUNTS), (float*)(shared + BACKGROUND_SHARED_LEAST),
                (float*)(shared + BACKGROUND_SHARED_MOST),      (unsigned*)(shared + BACKGROUND_SHARED_PICK),
                (unsigned*)(shared + BACKGROUND_SHARED_BINS),   (float*)(shared + BACKGROUND_SHARED_CANDIDATES),
                (float*)(shared + BACKGROUND_SHARED_HEADER)};
    unsigned tid = threadIdx.x;
    unsigned w = (unsigned)width, h = (unsigned)height;
    unsigned point = blockIdx.x;
    unsigned columns = bg_grid_points(w, step_x), rows = bg_grid_points(h, step_y);
    unsigned cx = bg_grid_coordinate(point % columns, w, step_x, columns);
    unsigned cy = bg_grid_coordinate(point / columns, h, step_y, rows);
    unsigned x0, x1, y0, y1;
    bg_box_range(cx, w, box_x, x0, x1);
    bg_box_range(cy, h, box_y, y0, y1);
    // A second pass keeps the first's values for a box that its mask left whole.
    if (touched) {
        unsigned row = bg_tiles(w, step_x), tx0 = x0 / step_x, ty0 = y0 / step_y;
        unsigned tiles_x = (x1 - 1) / step_x + 1 - tx0, tiles = tiles_x * ((y1 - 1) / step_y + 1 - ty0);
        unsigned marked = 0;
        for (unsigned k = tid; k < tiles; k += BACKGROUND_THREADS) marked |= touched[(ty0 + k / tiles_x) * row + tx0 + k % tiles_x];
        if (!__syncthreads_or(marked)) return;
    }
    unsigned span = x1 - x0, area = span * (y1 - y0);
    for (unsigned q = tid; q < area; q += BACKGROUND_THREADS) {
        float v = image[(size_t)(y0 + q / span) * width + (x0 + q % span)];
        s.values[q] = v == 0.0f ? 0.0f : v;
    }
    for (unsigned i = 0; i < BACKGROUND_BINS_PER_THREAD; ++i) s.bins[tid * BACKGROUND_BINS_PER_THREAD + i] = 0;
    if (tid == 0) s.pick[BACKGROUND_PICK_PLACED] = 0;
    __syncthreads();

    double lo = -INFINITY, hi = INFINITY, middle = NAN, sigma = NAN;
    unsigned last_count = 0;
    for (unsigned round = 0;; ++round) {
        double sum;
        float least = bg_least_above(lo), most = -bg_least_above(-hi);
        BgTally range = bg_first_moments(s, area, least, most, sum);
        if (round == 0 && tid == 0 && finite) finite[point] = range.count;
        if (range.count == 0 || range.count == last_count) break;
        double mean = __ddiv_rn(sum, (double)range.count);
        bool narrowing = range.least != range.most && range.count > BACKGROUND_CANDIDATES;
        BgScale scale = narrowing ? bg_bin_scale(range.least, range.most) : BgScale{1.0f, 0.0f};
        double squares = bg_squared_deviations(s, area, least, most, mean, narrowing, range.least, scale);
        sigma = __dsqrt_rn(__ddiv_rn(squares, (double)range.count));
        unsigned rank = (range.count - 1) / 2;
        float next;
        bool has_next;
        float lower = bg_select(s, area, rank, range, narrowing, next, has_next);
        float upper = range.count % 2 == 1 ? lower : has_next ? next : bg_successor(s, area, least, most, rank, lower);
        middle = __dmul_rn(__dadd_rn((double)lower, (double)upper), 0.5);
        if (round == rounds) break;
        double reach = __dmul_rn(kappa, sigma);
        double low = __dsub_rn(middle, reach), high = __dadd_rn(middle, reach);
        lo = fmax(lo, low), hi = fmin(hi, high);
        last_count = range.count;
    }
    if (tid == 0) {
        double* out = grid + (size_t)point * BACKGROUND_FIELDS;
        out[BACKGROUND_BACKGROUND] = middle, out[BACKGROUND_NOISE] = sigma;
    }
}

extern "C" __global__ void background_interpolate(const float* image, size_t image_len, size_t width, size_t height,
                                                  unsigned step_x, unsigned step_y, const double* grid,
                                                  size_t grid_len, float* background, float* noise, float* snr,
                                                  double mask_level, float* masked, unsigned* masked_count,
                                                  unsigned* touched) {
    size_t t = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= width * height) return;
    float pixel = image[t];
    if (!isfinite(pixel)) {
        background[t] = NAN, noise[t] = NAN;
        if (snr) snr[t] = NAN;
        if (masked) masked[t] = pixel;
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
    float ratio = (float)__ddiv_rn(__dsub_rn((double)pixel, level), sigma);
    if (snr) snr[t] = ratio;
    if (masked) {
        bool above = (double)ratio > mask_level;
        masked[t] = above ? NAN : pixel;
        if (above) {
            atomicAdd(masked_count, 1u);
            atomicOr(touched + (y / step_y) * bg_tiles(w, step_x) + x / step_x, 1u);
        }
    }
}

extern "C" __global__ void background_least_noise(const double* grid, size_t grid_len, unsigned rows, unsigned columns,
                                                  unsigned reach_y, unsigned reach_x, double* sky) {
    unsigned point = blockIdx.x * blockDim.x + threadIdx.x;
    if (point >= rows * columns) return;
    unsigned row = point / columns, column = point % columns;
    unsigned top = row - min(row, reach_y), bottom = row + min(rows - 1 - row, reach_y) + 1;
    unsigned left = column - min(column, reach_x), right = column + min(columns - 1 - column, reach_x) + 1;
    double least = NAN;
    for (unsigned r = top; r < bottom; ++r)
        for (unsigned c = left; c < right; ++c)
            least = fmin(least, grid[(size_t)(r * columns + c) * BACKGROUND_FIELDS + BACKGROUND_NOISE]);
    double* out = sky + (size_t)point * BACKGROUND_FIELDS;
    out[BACKGROUND_BACKGROUND] = grid[(size_t)point * BACKGROUND_FIELDS + BACKGROUND_BACKGROUND];
    out[BACKGROUND_NOISE] = least;
}

// background_fill: one block; the crowded points made NaN, then each field's empty points (NaN
// where the first pass's grid is not) filled in rounds from their neighbours' means at the
// round's start, over a list made with a shared counter; those no value reaches keep the first's.
extern "C" __global__ void background_fill(double* grid, const double* first, size_t first_len,
                                           const unsigned* before, size_t before_len, const unsigned* after,
                                           size_t after_len, unsigned points, unsigned columns, double at_most,
                                           unsigned* lists, double* means) {
    __shared__ unsigned counts[2];
    unsigned t = threadIdx.x, threads = blockDim.x, rows = points / columns;
    for (unsigned p = t; p < points; p += threads)
        if ((double)(before[p] - after[p]) > at_most * (double)before[p])
            grid[(size_t)p * BACKGROUND_FIELDS + BACKGROUND_BACKGROUND] =
                grid[(size_t)p * BACKGROUND_FIELDS + BACKGROUND_NOISE] = NAN;
    for (int field = 0; field < 2; ++field) {
        if (t == 0) counts[0] = 0;
        __syncthreads();
        for (unsigned p = t; p < points; p += threads)
            if (isnan(grid[(size_t)p * BACKGROUND_FIELDS + field]) && !isnan(first[(size_t)p * BACKGROUND_FIELDS + field]))
                lists[atomicAdd(&counts[0], 1u)] = p;
        __syncthreads();
        unsigned *list = lists, *next = lists + points, empty = counts[0];
        while (empty > 0) {
            __syncthreads();
            if (t == 0) counts[1] = 0;
            __syncthreads();
            int found = 0;
            for (unsigned i = t; i < empty; i += threads) {
                unsigned p = list[i], r = p / columns, c = p % columns;
                unsigned top = r > 0 ? r - 1 : 0, left = c > 0 ? c - 1 : 0;
                unsigned bottom = min(r + 2, rows), right = min(c + 2, columns);
                // The window's nine loads in flight at once (NaN off the grid), then added in order.
                double around[9];
#pragma unroll
                for (unsigned k = 0; k < 9; ++k) {
                    unsigned nr = top + k / 3, nc = left + k % 3;
                    around[k] = nr < bottom && nc < right ? grid[(size_t)(nr * columns + nc) * BACKGROUND_FIELDS + field] : NAN;
                }
                double sum = 0.0;
                unsigned count = 0;
#pragma unroll
                for (unsigned k = 0; k < 9; ++k)
                    if (!isnan(around[k])) sum += around[k], count += 1;
                if (count > 0) {
                    means[i] = sum / (double)count;
                    found = 1;
                } else {
                    next[atomicAdd(&counts[1], 1u)] = p;
                    list[i] = p | BACKGROUND_FILL_NONE;
                }
            }
            if (!__syncthreads_or(found)) {
                for (unsigned i = t; i < empty; i += threads) {
                    unsigned p = list[i] & ~BACKGROUND_FILL_NONE;
                    grid[(size_t)p * BACKGROUND_FIELDS + field] = first[(size_t)p * BACKGROUND_FIELDS + field];
                }
                break;
            }
            for (unsigned i = t; i < empty; i += threads)
                if (!(list[i] & BACKGROUND_FILL_NONE)) grid[(size_t)list[i] * BACKGROUND_FIELDS + field] = means[i];
            __syncthreads();
            empty = counts[1];
            unsigned* swap = list;
            list = next, next = swap;
        }
        __syncthreads();
    }
}
