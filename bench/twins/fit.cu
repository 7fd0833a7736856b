// Twin of kernels/src/fit.rs: elliptical Gaussians fitted to each island by Levenberg–Marquardt
// in f64, one block per island, the whole fit in shared memory; the arithmetic of
// interface/src/fit.rs (starts, bounds, model, summing order, settling) written in C.
#include "twins.cuh"

#define FIT_THREADS ((size_t)FIT_BLOCK)
// Slots of the shared counters after the warps' window counts.
#define FIT_COUNT_PIXELS FIT_WARPS
#define FIT_COUNT_SUMMITS (FIT_WARPS + 1)
#define FIT_COUNT_NAN (FIT_WARPS + 2)
#define FIT_COUNT_SMALL (FIT_WARPS + 3)
// How many pixels the list holds once it holds the whole sample; FIT_UNLISTED until then.
#define FIT_COUNT_LISTED (FIT_WARPS + 4)
#define FIT_UNLISTED 0xFFFFFFFFu
// The slot of the summit keys that holds the brightest pixel above the seed level; once the
// summits are chosen, the component a residual summit splits, plus one (0: none).
#define FIT_FALLBACK (FIT_MAX_COMPONENTS + 1)
#define FIT_SPLIT FIT_FALLBACK
// What a Levenberg-Marquardt run tries beyond the fit kept (the kernel's Trying).
#define FIT_TRYING_NOTHING 0
#define FIT_TRYING_ADDED 1
#define FIT_TRYING_SPLIT 2
// Pixels of a summit patch each thread loads at once, and of a summit tile each tests.
#define FIT_PATCH_LOADS 4
#define FIT_TESTED (FIT_SUMMIT_TILE * FIT_SUMMIT_TILE / FIT_THREADS)

struct FitShape {
    double cos, sin, a, b, major_inverse, minor_inverse;
};

// interface::fit::Shape::new.
static __device__ __forceinline__ FitShape fit_shape(double major, double minor, double cos, double sin) {
    return FitShape{cos, sin, 1.0 / (major * major), 1.0 / (minor * minor), 1.0 / major, 1.0 / minor};
}

static __device__ __forceinline__ size_t fit_tri(size_t row, size_t column) { return row * (row + 1) / 2 + column; }

static __device__ __forceinline__ size_t fit_gram_len(size_t parameters) {
    return (parameters + 1) * (parameters + 2) / 2;
}

// interface::fit::pair_after: the entry `by` after (row, column), in place.
static __device__ __forceinline__ void fit_pair_after(size_t& row, size_t& column, size_t by) {
    column += by;
    while (column > row) {
        row += 1;
        column -= row;
    }
}

static __device__ __forceinline__ void fit_pair(size_t e, size_t& row, size_t& column) {
    row = 0, column = 0;
    fit_pair_after(row, column, e);
}

static __device__ __forceinline__ size_t fit_rows(size_t parameters) { return FIT_TILE_WORDS / (parameters + 1); }

static __device__ __forceinline__ size_t fit_segments(size_t entries) {
    return entries <= FIT_THREADS ? FIT_THREADS / entries : 1;
}

static __device__ __forceinline__ bool fit_usable(float value, float noise) {
    return isfinite(value) && isfinite(noise) && noise > 0.0f;
}

static __device__ __forceinline__ bool fit_beats(double value, double neighbour, bool neighbour_first) {
    return value > neighbour || (value == neighbour && !neighbour_first);
}

// interface::fit::smoothing_radius: round(σ²), 1 to 8.
static __device__ __forceinline__ size_t fit_smoothing_radius(double beam) {
    double radius = beam * beam + 0.5;
    return radius < 2.0 ? 1 : radius >= 9.0 ? 8 : (size_t)radius;
}

// C(n, k + 1) from C(n, k), exact.
static __device__ __forceinline__ double fit_next_binomial(double weight, size_t n, size_t k) {
    return weight * (double)(n - k) / (double)(k + 1);
}

// interface::fit::binomial_sum: tap(a, b) is the value at offset (a − radius, b − radius), rows
// then columns; a value that is not finite counts 0.
template <class Tap>
static __device__ __forceinline__ double fit_binomial_sum(size_t radius, const Tap& tap) {
    size_t n = 2 * radius;
    double sum = 0.0, row_weight = 1.0;
    for (size_t a = 0; a <= n; ++a) {
        double col_weight = 1.0;
        for (size_t b = 0; b <= n; ++b) {
            float value = tap(a, b);
            if (isfinite(value)) sum += row_weight * col_weight * (double)value;
            col_weight = fit_next_binomial(col_weight, n, b);
        }
        row_weight = fit_next_binomial(row_weight, n, a);
    }
    return sum;
}

// interface::fit::smoothed: the pixels of an image (height × width) around (row, col), binomial
// weights, where in_island(j, value) says pixel j belongs (and gives its value).
template <class InIsland>
static __device__ __forceinline__ double fit_smoothed(size_t row, size_t col, size_t height, size_t width,
                                                      size_t radius, const InIsland& in_island) {
    return fit_binomial_sum(radius, [&](size_t a, size_t b) {
        float value = NAN;
        bool inside = row + a >= radius && row + a < height + radius && col + b >= radius && col + b < width + radius;
        if (inside && !in_island((row + a - radius) * width + col + b - radius, value)) value = NAN;
        return value;
    });
}

// interface::fit::unbeaten: no neighbour(dr, dc, value) that is there beats `own`.
template <class Neighbour>
static __device__ __forceinline__ bool fit_unbeaten(double own, const Neighbour& neighbour) {
    bool summit = true;
    for (size_t dr = 0; dr < 3; ++dr)
        for (size_t dc = 0; dc < 3; ++dc) {
            double value;
            if (summit && (dr != 1 || dc != 1) && neighbour(dr, dc, value))
                summit = fit_beats(own, value, dr == 0 || (dr == 1 && dc == 0));
        }
    return summit;
}

// interface::fit::is_summit: no finite neighbour of the island beats it smoothed.
template <class InIsland>
static __device__ __forceinline__ bool fit_is_summit(size_t row, size_t col, size_t height, size_t width,
                                                     size_t radius, const InIsland& in_island) {
    double own = fit_smoothed(row, col, height, width, radius, in_island);
    return fit_unbeaten(own, [&](size_t dr, size_t dc, double& value) {
        if (row + dr < 1 || row + dr > height || col + dc < 1 || col + dc > width) return false;
        size_t r = row + dr - 1, c = col + dc - 1;
        float pixel;
        if (!in_island(r * width + c, pixel) || !isfinite(pixel)) return false;
        value = fit_smoothed(r, c, height, width, radius, in_island);
        return true;
    });
}

// interface::fit::sample_step: every how many rows and columns a fit of `parameters` samples
// (interface::fit::fit_pixels says how many pixels a pass of them may take).
static __device__ __forceinline__ size_t fit_sample_step(unsigned pixels, size_t parameters) {
    unsigned long long most =
        (unsigned long long)FIT_MAX_FIT_PIXELS * fit_gram_len(FIT_PARAMETERS) / fit_gram_len(parameters);
    unsigned long long least = (unsigned long long)FIT_MIN_SAMPLE_PER_PARAMETER * parameters;
    if (most < least) most = least;
    size_t step = 1;
    while ((unsigned long long)pixels > (unsigned long long)(step * step) * most) ++step;
    return step;
}

// interface::fit::residual_room: one more component, fitted at every pixel with and without it,
// in a box whose residual the tile holds.
static __device__ __forceinline__ bool fit_residual_room(size_t fitted, unsigned pixels, size_t box_pixels) {
    size_t most = pixels > 0 ? (pixels - 1) / FIT_PARAMETERS : 0;
    return fitted < FIT_MAX_COMPONENTS && fitted + 1 <= most && fit_sample_step(pixels, fitted * FIT_PARAMETERS) == 1 &&
           fit_sample_step(pixels, (fitted + 1) * FIT_PARAMETERS) == 1 && box_pixels <= FIT_RESIDUAL_BOX_PIXELS;
}

// interface::fit::keeps_added.
static __device__ __forceinline__ bool fit_keeps_added(double before, double after, double peak, double floor_) {
    return after < before - FIT_RESIDUAL_GAIN && peak > floor_ * (1.0 + FIT_FLOOR_MARGIN);
}

static __device__ __forceinline__ unsigned fit_peak_key(float value) {
    unsigned bits = __float_as_uint(value);
    return bits >> 31 == 1 ? ~bits : bits | 0x80000000u;
}

static __device__ __forceinline__ unsigned long long fit_summit_key(float value, unsigned index) {
    return ((unsigned long long)fit_peak_key(value) << 32) | (unsigned long long)(0xFFFFFFFFu - index);
}

static __device__ __forceinline__ void fit_summit_of(unsigned long long key, float& value, unsigned& index) {
    unsigned k = (unsigned)(key >> 32);
    value = __uint_as_float(k >> 31 == 1 ? k & 0x7FFFFFFFu : ~k);
    index = 0xFFFFFFFFu - (unsigned)key;
}

static __device__ __forceinline__ double fit_clamp(double value, double low, double high) {
    return value < low ? low : value > high ? high : value;
}

static __device__ __forceinline__ double fit_magnitude(double x) { return x < 0.0 ? -x : x; }

static __device__ __forceinline__ bool fit_small_step(double old_value, double new_value) {
    double scale = fit_magnitude(old_value);
    return fit_magnitude(new_value - old_value) <= FIT_STEP_TOLERANCE * (scale > 1.0 ? scale : 1.0);
}

// interface::fit::start: the component of a summit, its bounds.
static __device__ __forceinline__ void fit_start(double value, double x, double y, double noise, double seed,
                                                 double beam, size_t width, size_t height, double* params,
                                                 double* low, double* high) {
    double level = seed * noise;
    double reach = FIT_FWHM * beam / 1.4142135623730951;
    double major = FIT_SIGMA_START * beam;
    size_t side = width > height ? width : height;
    double widest = ((double)side + 1.0) * 1.4142135623730951 / FIT_FWHM;
    double longest = widest > FIT_SIGMA_HIGH * major ? widest : FIT_SIGMA_HIGH * major;
    double shortest = FIT_SIGMA_LOW * beam;
    double loss = exp(0.25 / (shortest * shortest));
    double rise = loss > FIT_PEAK_HIGH ? loss : FIT_PEAK_HIGH;
    params[FIT_PEAK] = value, params[FIT_X] = x, params[FIT_Y] = y;
    params[FIT_MAJOR] = major, params[FIT_MINOR] = beam, params[FIT_THETA] = 0.0;
    low[FIT_PEAK] = FIT_PEAK_LOW * (level < value ? level : value), low[FIT_X] = x - reach, low[FIT_Y] = y - reach;
    low[FIT_MAJOR] = shortest, low[FIT_MINOR] = shortest, low[FIT_THETA] = -INFINITY;
    high[FIT_PEAK] = rise * value + level, high[FIT_X] = x + reach, high[FIT_Y] = y + reach;
    high[FIT_MAJOR] = longest, high[FIT_MINOR] = longest, high[FIT_THETA] = INFINITY;
}

// interface::fit::split_at: the box pixel (row, col) nearest the residual's summit mirrored
// through the centre of a component (x, y, shape) that reaches the summit; false where none.
static __device__ __forceinline__ bool fit_split_at(double x, double y, const FitShape& s, size_t row, size_t col,
                                                    size_t height, size_t width, size_t& mirror_row,
                                                    size_t& mirror_col) {
    double dx = (double)col - x, dy = (double)row - y;
    double along = dx * s.cos + dy * s.sin;
    double across = dy * s.cos - dx * s.sin;
    if (!(along * along * s.a + across * across * s.b < FIT_SPLIT_REACH * FIT_SPLIT_REACH)) return false;
    double mx = x - dx + 0.5, my = y - dy + 0.5;
    if (!(mx >= 0.0 && my >= 0.0 && mx < (double)width && my < (double)height)) return false;
    mirror_row = (size_t)my, mirror_col = (size_t)mx;
    return !(mirror_row == row && mirror_col == col);
}

// interface::fit::gaussian: the value and the six derivatives at (dx, dy) from the centre.
static __device__ __forceinline__ double fit_gaussian(double peak, const FitShape& s, double dx, double dy,
                                                      double* d) {
    double along = dx * s.cos + dy * s.sin;
    double across = dy * s.cos - dx * s.sin;
    double e = exp(-0.5 * (along * along * s.a + across * across * s.b));
    double m = peak * e;
    double ua = along * s.a, vb = across * s.b;
    d[0] = e;
    d[1] = m * (ua * s.cos - vb * s.sin);
    d[2] = m * (ua * s.sin + vb * s.cos);
    d[3] = m * along * ua * s.major_inverse;
    d[4] = m * across * vb * s.minor_inverse;
    d[5] = m * along * across * (s.b - s.a);
    return m;
}

// interface::fit::settle.
static __device__ __forceinline__ void fit_settle(double* params, double* errors, double x0, double y0) {
    params[FIT_X] += x0;
    params[FIT_Y] += y0;
    if (params[FIT_MAJOR] < params[FIT_MINOR]) {
        double p = params[FIT_MAJOR], e = errors[FIT_MAJOR];
        params[FIT_MAJOR] = params[FIT_MINOR], errors[FIT_MAJOR] = errors[FIT_MINOR];
        params[FIT_MINOR] = p, errors[FIT_MINOR] = e;
        params[FIT_THETA] += 1.5707963267948966;
    }
    if (fit_magnitude(params[FIT_THETA]) < FIT_LOST_ANGLE) {
        double turns = params[FIT_THETA] * 0.3183098861837907 + 0.5;
        double whole = (double)(long long)turns;
        double floor_ = whole > turns ? whole - 1.0 : whole;
        params[FIT_THETA] -= floor_ * 3.141592653589793;
    } else {
        params[FIT_THETA] = errors[FIT_THETA] = NAN;
    }
}

struct FitShared {
    double* tile;
    double* grams;
    double *current, *trial, *low, *high, *scale, *errors, *saved;
    // The bounds of a component a split starts again (low, then high).
    double* held;
    FitShape* shapes;
    double* partials;
    // A round of rows' model values, component by component (FIT_MODEL_WORDS).
    double* models;
    // The island's pixels of the sample (dynamic shared memory): sample index, value, noise.
    unsigned* listed;
    float *listed_values, *listed_noise;
    // Before the list: a summit tile's patch and smoothed values.
    float* patch;
    double* smoothed;
    unsigned long long* keys;
    unsigned* counts;
};

struct FitIsland {
    const float* image;
    const unsigned* labels;
    const float* noise;
    bool noise_map;
    size_t width, height, index;
    unsigned label;
    size_t x0, y0, box_width, box_pixels, radius;
    // The rows and columns the fit evaluates: every `step`-th (interface::fit::sample_step) of
    // the box grown by FIT_FIT_MARGIN (interface::fit::fit_span), from (sample_y0, sample_x0).
    size_t step, sample_y0, sample_x0, sample_width, sample_pixels;

    __device__ __forceinline__ FitIsland sampled(size_t s) const {
        FitIsland o = *this;
        size_t y1 = y0 + box_pixels / box_width - 1, x1 = x0 + box_width - 1;
        o.sample_y0 = y0 > FIT_FIT_MARGIN ? y0 - FIT_FIT_MARGIN : 0;
        o.sample_x0 = x0 > FIT_FIT_MARGIN ? x0 - FIT_FIT_MARGIN : 0;
        size_t last_row = y1 + FIT_FIT_MARGIN < height ? y1 + FIT_FIT_MARGIN : height - 1;
        size_t last_col = x1 + FIT_FIT_MARGIN < width ? x1 + FIT_FIT_MARGIN : width - 1;
        o.step = s, o.sample_width = (last_col - o.sample_x0 + s) / s;
        o.sample_pixels = o.sample_width * ((last_row - o.sample_y0 + s) / s);
        return o;
    }

    // Whether pixel (row, col) is in the fit: the island's, or of no island within FIT_FIT_MARGIN
    // 4-connected steps of one (interface::fit::in_fit).
    __device__ __forceinline__ bool in_fit(size_t row, size_t col) const {
        unsigned own = labels[row * width + col];
        if (own != 0) return own == label;
        const long margin = FIT_FIT_MARGIN;
        for (long dy = -margin; dy <= margin; ++dy) {
            long r = (long)row + dy, reach = margin - (dy < 0 ? -dy : dy);
            for (long dx = -reach; r >= 0 && r < (long)height && dx <= reach; ++dx) {
                long c = (long)col + dx;
                if (c >= 0 && c < (long)width && labels[(size_t)r * width + (size_t)c] == label) return true;
            }
        }
        return false;
    }

    __device__ __forceinline__ float noise_at(size_t i) const { return noise[noise_map ? i : index]; }
};

// One pass over the box by tiles of FIT_SUMMIT_TILE square (patch, smoothed values, then each
// pixel a thread's): each thread keeps its brightest FIT_MAX_COMPONENTS summit keys, in order,
// in its slots of the tile, and returns how many it holds.
static __device__ __forceinline__ size_t fit_summit_pass(const FitIsland& island, const FitShared& shared,
                                                         double seed) {
    size_t t = threadIdx.x;
    unsigned long long* list = reinterpret_cast<unsigned long long*>(shared.tile) + t * FIT_MAX_COMPONENTS;
    float* patch = shared.patch;
    double* sums = shared.smoothed;
    unsigned pixels = 0, summits = 0, nan = 0;
    unsigned long long brightest = 0;
    size_t held = 0;
    size_t radius = island.radius, box_width = island.box_width, box_height = island.box_pixels / box_width;
    size_t halo = radius + 1, inner = FIT_SUMMIT_SMOOTHED_SIDE, side = FIT_SUMMIT_TILE + 2 * halo;
    for (size_t ty = 0; ty < box_height; ty += FIT_SUMMIT_TILE)
        for (size_t tx = 0; tx < box_width; tx += FIT_SUMMIT_TILE) {
            // The patch in rounds of FIT_PATCH_LOADS pixels a thread, every load of a round in flight.
            int on_island = 0;
            for (size_t first = t; first < side * side; first += FIT_PATCH_LOADS * FIT_THREADS) {
                unsigned labels[FIT_PATCH_LOADS];
                float values[FIT_PATCH_LOADS];
#pragma unroll
                for (int r = 0; r < FIT_PATCH_LOADS; ++r) {
                    size_t p = first + r * FIT_THREADS, by = ty + p / side - halo, bx = tx + p % side - halo;
                    labels[r] = 0, values[r] = 0.0f;
                    if (p < side * side && by < box_height && bx < box_width) {
                        size_t i = (island.y0 + by) * island.width + island.x0 + bx;
                        labels[r] = island.labels[i], values[r] = island.image[i];
                    }
                }
#pragma unroll
                for (int r = 0; r < FIT_PATCH_LOADS; ++r) {
                    size_t p = first + r * FIT_THREADS;
                    if (p >= side * side) continue;
                    float value = NAN;
                    if (labels[r] == island.label) {
                        value = isfinite(values[r]) ? values[r] : INFINITY;
                        on_island = 1;
                    }
                    patch[p] = value;
                }
            }
            // A tile whose patch holds none of the island has no pixel and no summit of it.
            if (!__syncthreads_or(on_island)) continue;
            for (size_t q = t; q < inner * inner; q += FIT_THREADS) {
                const float* corner = patch + q / inner * side + q % inner;
                sums[q] = isfinite(corner[radius * side + radius])
                              ? fit_binomial_sum(radius, [&](size_t a, size_t b) { return corner[a * side + b]; })
                              : NAN;
            }
            __syncthreads();
            // Each thread's pixels of the tile, their noise loaded at once before any is tested.
            float noises[FIT_TESTED];
#pragma unroll
            for (int r = 0; r < FIT_TESTED; ++r) {
                size_t o = t + r * FIT_THREADS, oy = o / FIT_SUMMIT_TILE, ox = o % FIT_SUMMIT_TILE;
                size_t by = ty + oy, bx = tx + ox;
                noises[r] = by < box_height && bx < box_width && !isnan(patch[(oy + halo) * side + ox + halo])
                                ? island.noise_at((island.y0 + by) * island.width + island.x0 + bx)
                                : 0.0f;
            }
#pragma unroll
            for (int r = 0; r < FIT_TESTED; ++r) {
                size_t o = t + r * FIT_THREADS;
                size_t oy = o / FIT_SUMMIT_TILE, ox = o % FIT_SUMMIT_TILE, by = ty + oy, bx = tx + ox;
                float value = by < box_height && bx < box_width ? patch[(oy + halo) * side + ox + halo] : NAN;
                if (isnan(value)) continue;
                float noise = noises[r];
                if (!fit_usable(value, noise)) {
                    nan = 1;
                    continue;
                }
                pixels += 1;
                if ((double)value <= seed * (double)noise) continue;
                unsigned long long key = fit_summit_key(value, (unsigned)(by * box_width + bx));
                if (key > brightest) brightest = key;
                const double* around = sums + oy * inner + ox;
                bool summit = fit_unbeaten(around[inner + 1], [&](size_t dr, size_t dc, double& neighbour) {
                    neighbour = around[dr * inner + dc];
                    return !isnan(neighbour);
                });
                if (summit) {
                    summits += 1;
                    if (held < FIT_MAX_COMPONENTS || key > list[held - 1]) {
                        size_t at = held < FIT_MAX_COMPONENTS ? held : held - 1;
                        while (at > 0 && list[at - 1] < key) {
                            list[at] = list[at - 1];
                            at -= 1;
                        }
                        list[at] = key;
                        held += held < FIT_MAX_COMPONENTS ? 1 : 0;
                    }
                }
            }
            __syncthreads();
        }
    atomicAdd(&shared.counts[FIT_COUNT_PIXELS], pixels);
    atomicAdd(&shared.counts[FIT_COUNT_SUMMITS], summits);
    atomicAdd(&shared.counts[FIT_COUNT_NAN], nan);
    if (brightest > 0) atomicMax(&shared.keys[FIT_FALLBACK], brightest);
    return held;
}

// The `given` brightest of the threads' lists into keys[0..given]: each round every thread
// offers its head to a shared max, and the winner moves past it.
static __device__ __forceinline__ void fit_brightest_summits(const FitShared& shared, size_t held, size_t given) {
    size_t t = threadIdx.x, next = 0;
    const unsigned long long* list = reinterpret_cast<const unsigned long long*>(shared.tile) + t * FIT_MAX_COMPONENTS;
    for (size_t j = 0; j < given; ++j) {
        unsigned long long head = next < held ? list[next] : 0;
        if (head > 0) atomicMax(&shared.keys[FIT_MAX_COMPONENTS], head);
        __syncthreads();
        unsigned long long best = shared.keys[FIT_MAX_COMPONENTS];
        next += head == best && head > 0 ? 1 : 0;
        __syncthreads();
        if (t == 0) {
            shared.keys[j] = best;
            shared.keys[FIT_MAX_COMPONENTS] = 0;
        }
        __syncthreads();
    }
}

// A large matrix: a FIT_GRAM_BLOCK × FIT_GRAM_BLOCK block of entries a thread, each entry adding the
// rows in order; the columns past the last are read as the last and not written.
static __device__ __forceinline__ void fit_accumulate_blocks(const FitShared& shared, double* gram, size_t filled,
                                                             size_t columns) {
    size_t edge = (columns + FIT_GRAM_BLOCK - 1) / FIT_GRAM_BLOCK, blocks = edge * (edge + 1) / 2;
    unsigned last = (unsigned)columns - 1, rows = (unsigned)filled, stride = (unsigned)columns;
    size_t ba, bb;
    fit_pair(threadIdx.x, ba, bb);
    for (size_t q = threadIdx.x; q < blocks; q += FIT_THREADS) {
        unsigned a0 = (unsigned)(ba * FIT_GRAM_BLOCK), b0 = (unsigned)(bb * FIT_GRAM_BLOCK);
        unsigned at_a[FIT_GRAM_BLOCK], at_b[FIT_GRAM_BLOCK];
#pragma unroll
        for (unsigned i = 0; i < FIT_GRAM_BLOCK; ++i) {
            at_a[i] = a0 + i < last ? a0 + i : last;
            at_b[i] = b0 + i < last ? b0 + i : last;
        }
        double sums[FIT_GRAM_BLOCK * FIT_GRAM_BLOCK] = {};
        for (unsigned r = 0; r < rows; ++r) {
            const double* words = shared.tile + r * stride;
            double x[FIT_GRAM_BLOCK], y[FIT_GRAM_BLOCK];
#pragma unroll
            for (unsigned i = 0; i < FIT_GRAM_BLOCK; ++i) x[i] = words[at_a[i]], y[i] = words[at_b[i]];
#pragma unroll
            for (unsigned i = 0; i < FIT_GRAM_BLOCK; ++i)
#pragma unroll
                for (unsigned j = 0; j < FIT_GRAM_BLOCK; ++j)
                    sums[i * FIT_GRAM_BLOCK + j] = fma(x[i], y[j], sums[i * FIT_GRAM_BLOCK + j]);
        }
#pragma unroll
        for (unsigned i = 0; i < FIT_GRAM_BLOCK; ++i)
#pragma unroll
            for (unsigned j = 0; j < FIT_GRAM_BLOCK; ++j) {
                size_t a = a0 + i, b = b0 + j;
                if (a < columns && b <= a) gram[fit_tri(a, b)] += sums[i * FIT_GRAM_BLOCK + j];
            }
        fit_pair_after(ba, bb, FIT_THREADS);
    }
}

static __device__ __forceinline__ void fit_accumulate(const FitShared& shared, double* gram, size_t filled,
                                                      size_t parameters) {
    if (filled == 0) return;
    size_t t = threadIdx.x;
    size_t stride = parameters + 1, entries = fit_gram_len(parameters);
    if (stride >= FIT_BLOCKED_COLUMNS) {
        fit_accumulate_blocks(shared, gram, filled, stride);
        return;
    }
    size_t parts = fit_segments(entries);
    if (parts == 1) {
        // Two entries THREADS apart at once, each adding its rows in order.
        size_t a, b;
        fit_pair(t, a, b);
        unsigned rows = (unsigned)filled, words = (unsigned)stride;
        for (size_t e = t; e < entries; e += 2 * FIT_THREADS) {
            size_t c = a, d = b;
            fit_pair_after(c, d, FIT_THREADS);
            double sum = 0.0, next = 0.0;
            if (e + FIT_THREADS < entries) {
                for (unsigned r = 0; r < rows; ++r) {
                    const double* row = shared.tile + r * words;
                    sum = fma(row[(unsigned)a], row[(unsigned)b], sum);
                    next = fma(row[(unsigned)c], row[(unsigned)d], next);
                }
                gram[e + FIT_THREADS] += next;
            } else {
                for (unsigned r = 0; r < rows; ++r) {
                    const double* row = shared.tile + r * words;
                    sum = fma(row[(unsigned)a], row[(unsigned)b], sum);
                }
            }
            gram[e] += sum;
            a = c, b = d;
            fit_pair_after(a, b, FIT_THREADS);
        }
    } else {
        size_t length = (filled + parts - 1) / parts;
        if (t < entries * parts) {
            size_t e = t / parts, part = t % parts, a, b;
            fit_pair(e, a, b);
            size_t end = (part + 1) * length < filled ? (part + 1) * length : filled;
            double sum = 0.0;
            for (size_t r = part * length; r < end; ++r) {
                const double* row = shared.tile + r * stride;
                sum = fma(row[a], row[b], sum);
            }
            shared.partials[t] = sum;
        }
        __syncthreads();
        if (t < entries) {
            double total = gram[t];
            for (size_t part = 0; part < parts; ++part) total += shared.partials[t * parts + part];
            gram[t] = total;
        }
    }
}

// The Jacobian rows of the first `listed` pixels of the list, a thread each, into the tile after
// its `filled` rows; a full tile is summed into `gram` before the next row.
static __device__ __forceinline__ void fit_rows_of_listed(const FitIsland& island, const FitShared& shared,
                                                          const double* params, double* gram, size_t parameters,
                                                          size_t listed, size_t& filled) {
    size_t t = threadIdx.x;
    size_t components = parameters / FIT_PARAMETERS, stride = parameters + 1, capacity = fit_rows(parameters);
    for (size_t done = 0; done < listed;) {
        if (filled == capacity) {
            fit_accumulate(shared, gram, filled, parameters);
            filled = 0;
            __syncthreads();
        }
        size_t room = capacity - filled < FIT_THREADS ? capacity - filled : FIT_THREADS;
        size_t take = room < listed - done ? room : listed - done;
        // A thread per pixel and component.
        for (size_t w = t; w < take * components; w += FIT_THREADS) {
            size_t k = w % take, c = w / take, at = done + k, s = shared.listed[at];
            size_t row = island.sample_y0 + s / island.sample_width * island.step;
            size_t col = island.sample_x0 + s % island.sample_width * island.step;
            double weight = 1.0 / (double)shared.listed_noise[at];
            // A pixel of the margin may lie left of or above the box.
            double dx = (double)col - (double)island.x0, dy = (double)row - (double)island.y0;
            const double* p = params + c * FIT_PARAMETERS;
            double d[FIT_PARAMETERS];
            shared.models[w] = fit_gaussian(p[FIT_PEAK], shared.shapes[c], dx - p[FIT_X], dy - p[FIT_Y], d);
            double* o = shared.tile + (filled + k) * stride + c * FIT_PARAMETERS;
#pragma unroll
            for (int q = 0; q < FIT_PARAMETERS; ++q) o[q] = d[q] * weight;
        }
        __syncthreads();
        if (t < take) {
            size_t at = done + t;
            double model = 0.0;
            for (size_t c = 0; c < components; ++c) model += shared.models[c * take + t];
            double weight = 1.0 / (double)shared.listed_noise[at];
            shared.tile[(filled + t) * stride + parameters] = ((double)shared.listed_values[at] - model) * weight;
        }
        filled += take;
        done += take;
        __syncthreads();
    }
}

// The first pass: the island's pixels of the sample, found in windows of a thread each, ranked by
// one ballot per warp, listed and made rows of; a sample too large for the list is searched again.
static __device__ __forceinline__ void fit_list_sample(const FitIsland& island, const FitShared& shared,
                                                       const double* params, double* gram, size_t parameters,
                                                       size_t& filled) {
    size_t t = threadIdx.x, warp = t / 32, lane = t % 32;
    size_t listed = 0;
    bool whole = true;
    for (size_t first = 0; first < island.sample_pixels; first += FIT_THREADS) {
        size_t k = first + t;
        float value = 0.0f, noise = 0.0f;
        bool valid = k < island.sample_pixels;
        if (valid) {
            size_t row = island.sample_y0 + k / island.sample_width * island.step;
            size_t col = island.sample_x0 + k % island.sample_width * island.step;
            size_t i = row * island.width + col;
            value = island.image[i];
            noise = island.noise_at(i);
            valid = island.in_fit(row, col) && fit_usable(value, noise);
        }
        unsigned bits = __ballot_sync(0xFFFFFFFFu, valid);
        if (lane == 0) shared.counts[warp] = __popc(bits);
        __syncthreads();
        size_t before = 0, total = 0;
        for (size_t w = 0; w < FIT_WARPS; ++w) {
            size_t count = shared.counts[w];
            before += w < warp ? count : 0;
            total += count;
        }
        if (listed + total > FIT_LISTED_PIXELS) {
            fit_rows_of_listed(island, shared, params, gram, parameters, listed, filled);
            listed = 0, whole = false;
        }
        if (valid) {
            size_t at = listed + before + __popc(bits & ((1u << lane) - 1));
            shared.listed[at] = (unsigned)k;
            shared.listed_values[at] = value;
            shared.listed_noise[at] = noise;
        }
        listed += total;
        __syncthreads();
    }
    fit_rows_of_listed(island, shared, params, gram, parameters, listed, filled);
    if (whole && t == 0) shared.counts[FIT_COUNT_LISTED] = (unsigned)listed;
}

static __device__ void fit_evaluate(const FitIsland& island, const FitShared& shared, const double* params,
                                    double* gram, size_t parameters) {
    size_t t = threadIdx.x;
    size_t components = parameters / FIT_PARAMETERS;
    if (t < components) {
        const double* p = params + t * FIT_PARAMETERS;
        double s, c;
        sincospi(p[FIT_THETA] * 0.3183098861837907, &s, &c);
        shared.shapes[t] = fit_shape(p[FIT_MAJOR], p[FIT_MINOR], c, s);
    }
    size_t entries = fit_gram_len(parameters);
    for (size_t e = t; e < entries; e += FIT_THREADS) gram[e] = 0.0;
    __syncthreads();
    size_t filled = 0;
    unsigned listed = shared.counts[FIT_COUNT_LISTED];
    if (listed != FIT_UNLISTED)
        fit_rows_of_listed(island, shared, params, gram, parameters, listed, filled);
    else
        fit_list_sample(island, shared, params, gram, parameters, filled);
    fit_accumulate(shared, gram, filled, parameters);
    __syncthreads();
}

// interface::fit::RANK_TOLERANCE: a pivot must exceed `least` times the diagonal entry.
// L·D·L^T, right-looking, one barrier a column: every entry right of column j takes
// a[i][c] - a[i][j] * (a[c][j] * (1 / D[j])); a thread owns the entries t, t + FIT_THREADS, …
static __device__ bool fit_cholesky(double* tile, size_t n, const double* diagonal, double least) {
    size_t t = threadIdx.x, a, b;
    fit_pair(t, a, b);
    // Row << 16 | column of each entry t, t + FIT_THREADS, … of the triangle; 0 past it.
    unsigned owned[FIT_CHOLESKY_OWNED];
#pragma unroll
    for (int s = 0; s < FIT_CHOLESKY_OWNED; ++s) {
        owned[s] = t + s * FIT_THREADS < n * (n + 1) / 2 ? (unsigned)(a << 16 | b) : 0u;
        fit_pair_after(a, b, FIT_THREADS);
    }
    for (size_t j = 0; j < n; ++j) {
        // Every value an update reads is loaded before any is written.
        unsigned column = (unsigned)j;
        double entries[FIT_CHOLESKY_OWNED], left[FIT_CHOLESKY_OWNED], right[FIT_CHOLESKY_OWNED];
#pragma unroll
        for (int s = 0; s < FIT_CHOLESKY_OWNED; ++s) {
            unsigned i = owned[s] >> 16, c = owned[s] & 0xFFFFu;
            if (c > column) {
                unsigned row_i = i * (i + 1) / 2, row_c = c * (c + 1) / 2;
                entries[s] = tile[row_i + c];
                left[s] = tile[row_i + column];
                right[s] = tile[row_c + column];
            }
        }
        double pivot = tile[fit_tri(j, j)];
        double floor = least > 0.0 ? least * diagonal[fit_tri(j, j)] : 0.0;
        double inverse = 1.0 / pivot;
#pragma unroll
        for (int s = 0; s < FIT_CHOLESKY_OWNED; ++s) {
            unsigned i = owned[s] >> 16, c = owned[s] & 0xFFFFu;
            if (c > column) tile[i * (i + 1) / 2 + c] = fma(-left[s], right[s] * inverse, entries[s]);
        }
        __syncthreads();
        // Tested after the column's update (which then goes unused), as the Rust kernel does.
        if (!(pivot > floor && pivot < INFINITY)) return false;
    }
    return true;
}

// Lane `lane`'s value in every lane.
static __device__ __forceinline__ double fit_broadcast(double value, unsigned lane) {
    return __shfl_sync(0xFFFFFFFFu, value, lane);
}

// The first warp, lane l holding rows l and l + 32: forward L·D·w = J^T r, then back
// L^T·x = w; as each unknown is found its lane hands it over, and every row still open takes
// its term.
static __device__ void fit_solve(const FitShared& shared, const double* gram, size_t parameters) {
    double* tile = shared.tile;
    const double* gradient = gram + parameters * (parameters + 1) / 2;
    size_t lane = threadIdx.x;
    size_t rows[2] = {lane, lane + 32};
    double sums[2] = {0.0, 0.0}, inverses[2] = {0.0, 0.0}, found[2] = {0.0, 0.0}, rests[2] = {0.0, 0.0};
#pragma unroll
    for (int h = 0; h < 2; ++h)
        if (rows[h] < parameters) sums[h] = gradient[rows[h]], inverses[h] = 1.0 / tile[fit_tri(rows[h], rows[h])];
    for (size_t k = 0; k < parameters; ++k) {
        double w = fit_broadcast(k < 32 ? sums[0] * inverses[0] : sums[1] * inverses[1], (unsigned)(k % 32));
        if (lane == k % 32) {
            if (k < 32) found[0] = w;
            else found[1] = w;
        }
#pragma unroll
        for (int h = 0; h < 2; ++h)
            if (rows[h] > k && rows[h] < parameters) sums[h] = fma(-tile[fit_tri(rows[h], k)], w, sums[h]);
    }
    bool small = true;
    for (size_t k = parameters; k-- > 0;) {
        double x = fit_broadcast(k < 32 ? fma(inverses[0], rests[0], found[0]) : fma(inverses[1], rests[1], found[1]),
                                 (unsigned)(k % 32));
        if (lane == k % 32) {
            double old_value = shared.current[k];
            double new_value = fit_clamp(old_value + x, shared.low[k], shared.high[k]);
            shared.trial[k] = new_value;
            small = small && fit_small_step(old_value, new_value);
        }
#pragma unroll
        for (int h = 0; h < 2; ++h)
            if (rows[h] < k) rests[h] = fma(-tile[fit_tri(k, rows[h])], x, rests[h]);
    }
    bool all_small = __ballot_sync(0xFFFFFFFFu, !small) == 0;
    if (lane == 0) shared.counts[FIT_COUNT_SMALL] = all_small;
}

// Where a Levenberg-Marquardt run ended; `gram` holds the matrix of its point (in `current`).
struct FitRun {
    double chi2;
    unsigned iterations;
    bool converged;
    double* gram;
};

static __device__ __forceinline__ FitRun fit_levenberg(const FitIsland& island, const FitShared& shared,
                                                       size_t parameters) {
    size_t t = threadIdx.x;
    size_t entries = fit_gram_len(parameters);
    size_t normal = parameters * (parameters + 1) / 2;
    double* gram = shared.grams;
    double* other = shared.grams + FIT_GRAM_WORDS;
    fit_evaluate(island, shared, shared.current, gram, parameters);
    if (t < parameters) shared.scale[t] = gram[fit_tri(t, t)];
    double chi2 = gram[entries - 1];
    double lambda = FIT_LAMBDA_START;
    unsigned iterations = 0;
    bool converged = false;
    while (iterations < FIT_MAX_ITERATIONS && !converged) {
        iterations += 1;
        __syncthreads();
        size_t a, b;
        fit_pair(t, a, b);
        for (size_t e = t; e < normal; e += FIT_THREADS) {
            shared.tile[e] = gram[e] + (a == b ? lambda * shared.scale[a] : 0.0);
            fit_pair_after(a, b, FIT_THREADS);
        }
        __syncthreads();
        if (!fit_cholesky(shared.tile, parameters, gram, 0.0)) {
            lambda *= FIT_LAMBDA_FACTOR;
            continue;
        }
        if (t < 32) fit_solve(shared, gram, parameters);
        __syncthreads();
        fit_evaluate(island, shared, shared.trial, other, parameters);
        double next = other[entries - 1];
        bool small = shared.counts[FIT_COUNT_SMALL] != 0;
        if (next < chi2) {
            converged = small || chi2 - next <= FIT_CHI2_TOLERANCE * chi2;
            chi2 = next;
            double* swap = gram;
            gram = other;
            other = swap;
            lambda /= FIT_LAMBDA_FACTOR;
            if (t < parameters) {
                shared.current[t] = shared.trial[t];
                double diagonal = gram[fit_tri(t, t)];
                if (diagonal > shared.scale[t]) shared.scale[t] = diagonal;
            }
        } else {
            converged = small;
            lambda *= FIT_LAMBDA_FACTOR;
        }
    }
    __syncthreads();
    return FitRun{chi2, iterations, converged, gram};
}

// sqrt(diag((J^T J)^-1)) from the inverse of its L·D·L^T factor into `errors`; NaN, and false,
// where J^T J is not positive definite, or nearly not (FIT_RANK_TOLERANCE).
static __device__ __forceinline__ bool fit_errors(const FitShared& shared, const double* gram, size_t parameters) {
    size_t t = threadIdx.x;
    size_t normal = parameters * (parameters + 1) / 2;
    double* tile = shared.tile;
    for (size_t e = t; e < normal; e += FIT_THREADS) tile[e] = gram[e];
    __syncthreads();
    bool factored = fit_cholesky(tile, parameters, gram, FIT_RANK_TOLERANCE);
    if (t < parameters) {
        double error = NAN;
        if (factored) {
            // Column t of W = D^-1·L^-1 (kernels/src/fit.rs, errors).
            double* inverse = tile + normal;
            double own = 1.0 / tile[fit_tri(t, t)];
            inverse[fit_tri(t, t)] = own;
            double variance = own;
            for (size_t i = t + 1; i < parameters; ++i) {
                double s = 0.0;
                for (size_t k = t; k < i; ++k) s = fma(tile[fit_tri(i, k)], inverse[fit_tri(k, t)], s);
                double value = -s, weighted = value / tile[fit_tri(i, i)];
                inverse[fit_tri(i, t)] = weighted;
                variance = fma(value, weighted, variance);
            }
            error = sqrt(variance);
        }
        shared.errors[t] = error;
    }
    __syncthreads();
    return factored;
}

// Starts component `c` at image pixel (row, col) of the island's box, of value `value`
// (interface::fit::start). One thread.
static __device__ __forceinline__ void fit_start_component(const FitIsland& island, const FitShared& shared,
                                                           double seed, double beam, size_t c, size_t row,
                                                           size_t col, double value) {
    size_t width = island.box_width, height = island.box_pixels / island.box_width, base = c * FIT_PARAMETERS;
    double sigma = (double)island.noise_at(row * island.width + col);
    fit_start(value, (double)(col - island.x0), (double)(row - island.y0), sigma, seed, beam, width, height,
              shared.current + base, shared.low + base, shared.high + base);
}

// Starts a component after the first `parameters` at the residual's summit (its key in the
// search's slot), within the bounds of the data's value there, and at that value for a split,
// else at the residual's. One thread.
static __device__ __forceinline__ void fit_start_added(const FitIsland& island, const FitShared& shared,
                                                       double seed, double beam, size_t parameters, bool split) {
    float value;
    unsigned k;
    fit_summit_of(shared.keys[FIT_MAX_COMPONENTS], value, k);
    size_t row = island.y0 + k / island.box_width, col = island.x0 + k % island.box_width;
    size_t c = parameters / FIT_PARAMETERS;
    fit_start_component(island, shared, seed, beam, c, row, col, (double)island.image[row * island.width + col]);
    if (!split) shared.current[c * FIT_PARAMETERS + FIT_PEAK] = (double)value;
}

// A split of component `c` given up: its bounds back from `held`, and one more component started
// at the residual's summit instead. One thread.
static __device__ __forceinline__ void fit_unsplit(const FitIsland& island, const FitShared& shared, double seed,
                                                   double beam, size_t parameters, size_t c) {
#pragma unroll
    for (int q = 0; q < FIT_PARAMETERS; ++q) {
        shared.low[c * FIT_PARAMETERS + q] = shared.held[q];
        shared.high[c * FIT_PARAMETERS + q] = shared.held[FIT_PARAMETERS + q];
    }
    fit_start_added(island, shared, seed, beam, parameters, false);
}

// The split of the first component (its shape in `shapes`) that reaches the residual's summit
// (fit_split_at): its bounds held, it starts again at the summit's mirror through its centre and
// one more at the summit, each from the data's value there. Its index plus one; 0, and nothing
// started, where none reaches the summit or the mirror or the summit is no usable pixel of the
// island above the seed level. One thread.
static __device__ __forceinline__ size_t fit_split(const FitIsland& island, const FitShared& shared, double seed,
                                                   double beam, size_t parameters) {
    float summit_value;
    unsigned k;
    fit_summit_of(shared.keys[FIT_MAX_COMPONENTS], summit_value, k);
    size_t width = island.box_width, height = island.box_pixels / island.box_width;
    size_t row = k / width, col = k % width;
    auto above = [&](size_t r, size_t c) {
        size_t i = (island.y0 + r) * island.width + island.x0 + c;
        float value = island.image[i], noise = island.noise_at(i);
        return island.labels[i] == island.label && fit_usable(value, noise) && (double)value > seed * (double)noise;
    };
    for (size_t c = 0; c < parameters / FIT_PARAMETERS; ++c) {
        const double* p = shared.current + c * FIT_PARAMETERS;
        size_t mirror_row, mirror_col;
        if (fit_split_at(p[FIT_X], p[FIT_Y], shared.shapes[c], row, col, height, width, mirror_row, mirror_col)) {
            if (!(above(mirror_row, mirror_col) && above(row, col))) return 0;
            size_t base = c * FIT_PARAMETERS;
#pragma unroll
            for (int q = 0; q < FIT_PARAMETERS; ++q) {
                shared.held[q] = shared.low[base + q];
                shared.held[FIT_PARAMETERS + q] = shared.high[base + q];
            }
            size_t image_row = island.y0 + mirror_row, image_col = island.x0 + mirror_col;
            double value = (double)island.image[image_row * island.width + image_col];
            fit_start_component(island, shared, seed, beam, c, image_row, image_col, value);
            fit_start_added(island, shared, seed, beam, parameters, true);
            return c + 1;
        }
    }
    return 0;
}

// The brightest summit of the residual (data less the model of the first `parameters` in
// `current`) above the seed level, on the island's whole box, the residual in the tile as float
// (NaN off the island, which the summit rule passes over as it does a pixel not in it); where
// there is one, `current` is saved and the step started there: the split of a component that
// reaches the summit (fit_split), else one more component after the others (fit_start_added).
// What it starts; FIT_TRYING_NOTHING where there is no summit.
static __device__ __forceinline__ int fit_residual_summit(const FitIsland& island, const FitShared& shared,
                                                          double seed, double beam, size_t parameters) {
    size_t t = threadIdx.x;
    size_t components = parameters / FIT_PARAMETERS;
    if (t < components) {
        const double* p = shared.current + t * FIT_PARAMETERS;
        double s, c;
        sincospi(p[FIT_THETA] * 0.3183098861837907, &s, &c);
        shared.shapes[t] = fit_shape(p[FIT_MAJOR], p[FIT_MINOR], c, s);
    }
    if (t == 0) shared.keys[FIT_MAX_COMPONENTS] = 0;
    __syncthreads();
    float* residuals = reinterpret_cast<float*>(shared.tile);
    size_t width = island.box_width, height = island.box_pixels / island.box_width;
    for (size_t k = t; k < island.box_pixels; k += FIT_THREADS) {
        size_t row = island.y0 + k / width, col = island.x0 + k % width, i = row * island.width + col;
        float value = island.image[i], noise = island.noise_at(i), r = NAN;
        if (island.labels[i] == island.label && fit_usable(value, noise)) {
            double dx = (double)(col - island.x0), dy = (double)(row - island.y0), model = 0.0, d[FIT_PARAMETERS];
            for (size_t c = 0; c < components; ++c) {
                const double* p = shared.current + c * FIT_PARAMETERS;
                model += fit_gaussian(p[FIT_PEAK], shared.shapes[c], dx - p[FIT_X], dy - p[FIT_Y], d);
            }
            r = (float)((double)value - model);
        }
        residuals[k] = r;
    }
    __syncthreads();
    auto in_residual = [&](size_t j, float& value) {
        value = residuals[j];
        return true;
    };
    unsigned long long best = 0;
    for (size_t k = t; k < island.box_pixels; k += FIT_THREADS) {
        float value = residuals[k];
        size_t i = (island.y0 + k / width) * island.width + island.x0 + k % width;
        if ((double)value > seed * (double)island.noise_at(i) &&
            fit_is_summit(k / width, k % width, height, width, island.radius, in_residual)) {
            unsigned long long key = fit_summit_key(value, (unsigned)k);
            if (key > best) best = key;
        }
    }
    if (best > 0) atomicMax(&shared.keys[FIT_MAX_COMPONENTS], best);
    __syncthreads();
    unsigned long long key = shared.keys[FIT_MAX_COMPONENTS];
    if (key == 0) return FIT_TRYING_NOTHING;
    if (t < parameters) shared.saved[t] = shared.current[t];
    __syncthreads();
    if (t == 0) {
        size_t split = fit_split(island, shared, seed, beam, parameters);
        shared.keys[FIT_SPLIT] = split;
        if (split == 0) fit_start_added(island, shared, seed, beam, parameters, false);
    }
    __syncthreads();
    return shared.keys[FIT_SPLIT] == 0 ? FIT_TRYING_ADDED : FIT_TRYING_SPLIT;
}

static __device__ void fit_settle_all(const FitShared& shared, size_t components, size_t x0, size_t y0) {
    size_t t = threadIdx.x;
    if (t < components) {
        double params[FIT_PARAMETERS], errors[FIT_PARAMETERS];
        double *p = shared.current + t * FIT_PARAMETERS, *e = shared.errors + t * FIT_PARAMETERS;
#pragma unroll
        for (int q = 0; q < FIT_PARAMETERS; ++q) params[q] = p[q], errors[q] = e[q];
        fit_settle(params, errors, (double)x0, (double)y0);
#pragma unroll
        for (int q = 0; q < FIT_PARAMETERS; ++q) p[q] = params[q], e[q] = errors[q];
    }
    __syncthreads();
}

static __device__ void fit_write(const FitShared& shared, double* fits, unsigned* status, size_t components,
                                 double chi2, unsigned flags, unsigned iterations, unsigned pixels,
                                 unsigned summits, unsigned added) {
    size_t t = threadIdx.x;
    for (size_t w = t; w < FIT_RECORD_WORDS; w += FIT_THREADS) {
        double value;
        if (w == FIT_CHI2) {
            value = chi2;
        } else {
            size_t c = (w - FIT_COMPONENTS) / FIT_COMPONENT_WORDS, q = (w - FIT_COMPONENTS) % FIT_COMPONENT_WORDS;
            value = c >= components        ? NAN
                    : q < FIT_PARAMETERS ? shared.current[c * FIT_PARAMETERS + q]
                                         : shared.errors[c * FIT_PARAMETERS + q - FIT_PARAMETERS];
        }
        fits[w] = value;
    }
    if (t == 0) {
        status[FIT_STATUS_COMPONENTS] = (unsigned)components;
        status[FIT_STATUS_FLAGS] = flags;
        status[FIT_STATUS_ITERATIONS] = iterations;
        status[FIT_STATUS_PIXELS] = pixels;
        status[FIT_STATUS_SUMMITS] = summits;
        status[FIT_STATUS_ADDED] = added;
    }
}

// The launch bounds of the Rust kernel (interface::fit::BOUNDS).
extern "C" __global__ void __launch_bounds__(FIT_BLOCK, FIT_MIN_BLOCKS_PER_SM) fit_islands(const float* image, const unsigned* labels, const float* noise,
                                       unsigned noise_map, size_t width, size_t height, const unsigned* islands,
                                       size_t islands_len, double seed, double beam, double* fits,
                                       unsigned* status) {
    // All of it dynamic, laid out as the Rust kernel's (FIT_SHARED_*).
    extern __shared__ __align__(16) unsigned char memory[];
    unsigned* counts = (unsigned*)(memory + FIT_SHARED_COUNTS);
    unsigned long long* keys = (unsigned long long*)(memory + FIT_SHARED_KEYS);
    double* current = (double*)(memory + FIT_SHARED_CURRENT);
    double* low = (double*)(memory + FIT_SHARED_LOW);
    double* high = (double*)(memory + FIT_SHARED_HIGH);
    double* errors = (double*)(memory + FIT_SHARED_ERRORS);
    double* saved = (double*)(memory + FIT_SHARED_SAVED);
    FitShared shared{(double*)(memory + FIT_SHARED_TILE),
                     (double*)(memory + FIT_SHARED_GRAMS),
                     current,
                     (double*)(memory + FIT_SHARED_TRIAL),
                     low,
                     high,
                     (double*)(memory + FIT_SHARED_SCALE),
                     errors,
                     saved,
                     (double*)(memory + FIT_SHARED_HELD),
                     (FitShape*)(memory + FIT_SHARED_SHAPES),
                     (double*)(memory + FIT_SHARED_PARTIALS),
                     (double*)(memory + FIT_SHARED_MODELS),
                     (unsigned*)(memory + FIT_SHARED_LIST + FIT_LIST_INDICES),
                     (float*)(memory + FIT_SHARED_LIST + FIT_LIST_VALUES),
                     (float*)(memory + FIT_SHARED_LIST + FIT_LIST_NOISE),
                     (float*)(memory + FIT_SHARED_LIST + FIT_SUMMIT_PATCH),
                     (double*)(memory + FIT_SHARED_LIST + FIT_SUMMIT_SMOOTHED),
                     keys,
                     counts};
    size_t t = threadIdx.x, index = blockIdx.x;
    const unsigned* record = islands + index * FIT_ISLAND_WORDS;
    unsigned label = record[FIT_ISLAND_LABEL];
    size_t y0 = record[FIT_ISLAND_Y_MIN], y1 = record[FIT_ISLAND_Y_MAX];
    size_t x0 = record[FIT_ISLAND_X_MIN], x1 = record[FIT_ISLAND_X_MAX];
    double* out_fits = fits + index * FIT_RECORD_WORDS;
    unsigned* out_status = status + index * FIT_STATUS_WORDS;
    if (label == 0 || y0 > y1 || x0 > x1 || y1 >= height || x1 >= width) {
        fit_write(shared, out_fits, out_status, 0, NAN, FIT_BAD_ISLAND, 0, 0, 0, 0);
        return;
    }
    size_t box_width = x1 - x0 + 1;
    FitIsland island = FitIsland{image, labels, noise, noise_map != 0, width, height, index, label,
                                 x0, y0, box_width, box_width * (y1 - y0 + 1), fit_smoothing_radius(beam),
                                 1, y0, x0, 0, 0}
                           .sampled(1);

    // 1. The summits, brightest first.
    if (t == 0) {
        for (int slot = 0; slot < 4; ++slot) counts[FIT_COUNT_PIXELS + slot] = 0;
        counts[FIT_COUNT_LISTED] = FIT_UNLISTED;
        keys[FIT_MAX_COMPONENTS] = 0;
        keys[FIT_FALLBACK] = 0;
    }
    __syncthreads();
    size_t kept = fit_summit_pass(island, shared, seed);
    __syncthreads();
    unsigned pixels = counts[FIT_COUNT_PIXELS];
    size_t summits = counts[FIT_COUNT_SUMMITS];
    if (summits == 0 && keys[FIT_FALLBACK] > 0) {
        // No smoothed maximum above the seed level: the brightest pixel above it is the summit.
        summits = 1;
        __syncthreads();
        if (t == 0) keys[FIT_MAX_COMPONENTS] = keys[FIT_FALLBACK];
        __syncthreads();
    }
    size_t chosen = summits < FIT_MAX_COMPONENTS ? summits : FIT_MAX_COMPONENTS;
    // Each component needs more pixels than its parameters (interface::fit::fitted_components).
    size_t most = pixels > 0 ? (pixels - 1) / FIT_PARAMETERS : 0;
    size_t fitted = chosen < most ? chosen : most;
    size_t given = fitted == 0 && chosen > 0 ? 1 : fitted;
    unsigned flags = 0;
    flags |= y0 == 0 || x0 == 0 || y1 == height - 1 || x1 == width - 1 ? FIT_AT_EDGE : 0;
    flags |= counts[FIT_COUNT_NAN] != 0 ? FIT_NAN : 0;
    flags |= summits > FIT_MAX_COMPONENTS ? FIT_TOO_MANY_SUMMITS : 0;
    flags |= fitted < chosen ? FIT_FEW_PIXELS : 0;
    flags |= summits == 0 ? FIT_NO_SUMMIT : 0;
    fit_brightest_summits(shared, kept, given);
    if (t < given) {
        float value;
        unsigned k;
        fit_summit_of(keys[t], value, k);
        size_t row = y0 + k / box_width, col = x0 + k % box_width;
        double sigma = (double)island.noise_at(row * width + col);
        size_t base = t * FIT_PARAMETERS;
        fit_start((double)value, (double)(col - x0), (double)(row - y0), sigma, seed, beam, box_width, y1 - y0 + 1,
                  current + base, low + base, high + base);
#pragma unroll
        for (int q = 0; q < FIT_PARAMETERS; ++q) errors[base + q] = NAN;
    }
    __syncthreads();
    if (fitted == 0) {
        fit_settle_all(shared, given, x0, y0);
        fit_write(shared, out_fits, out_status, given, NAN, flags, 0, pixels, (unsigned)summits, 0);
        return;
    }

    // 2. Levenberg–Marquardt, on a sample of the box where the island is large, and the errors
    // at its solution; 3. components from the residual, each fitted with the others and kept
    // (with the errors of the new solution) or given up (back to the point saved).
    size_t parameters = fitted * FIT_PARAMETERS;
    island = island.sampled(fit_sample_step(pixels, parameters));
    unsigned added = 0, iterations = 0;
    int trying = FIT_TRYING_NOTHING;
    bool converged = false, singular = false;
    double chi2 = NAN;
    for (;;) {
        FitRun run =
            fit_levenberg(island, shared, trying == FIT_TRYING_NOTHING ? parameters : parameters + FIT_PARAMETERS);
        iterations += run.iterations;
        if (trying != FIT_TRYING_NOTHING) {
            size_t split = (size_t)keys[FIT_SPLIT], peak = parameters + FIT_PEAK;
            bool keep = fit_keeps_added(chi2, run.chi2, current[peak], low[peak]);
            if (trying == FIT_TRYING_SPLIT) {
                size_t moved = (split - 1) * FIT_PARAMETERS + FIT_PEAK;
                keep = run.converged && keep && fit_keeps_added(chi2, run.chi2, current[moved], low[moved]);
            }
            if (!keep) {
                // Every thread has read the peaks that the point saved is about to replace.
                __syncthreads();
                if (t < parameters) current[t] = saved[t];
                if (trying == FIT_TRYING_ADDED) break;
                if (t == 0) fit_unsplit(island, shared, seed, beam, parameters, split - 1);
                __syncthreads();
                trying = FIT_TRYING_ADDED;
                continue;
            }
            parameters += FIT_PARAMETERS;
            added += 1;
        }
        chi2 = run.chi2;
        converged = run.converged;
        singular = !fit_errors(shared, run.gram, parameters);
        if (added == FIT_RESIDUAL_STEPS || !fit_residual_room(parameters / FIT_PARAMETERS, pixels, island.box_pixels))
            break;
        trying = fit_residual_summit(island, shared, seed, beam, parameters);
        if (trying == FIT_TRYING_NOTHING) break;
    }
    fitted = parameters / FIT_PARAMETERS;
    flags |= converged ? 0 : FIT_NOT_CONVERGED;
    flags |= singular ? FIT_SINGULAR : 0;
    __syncthreads();
    fit_settle_all(shared, fitted, x0, y0);
    fit_write(shared, out_fits, out_status, fitted, chi2, flags, iterations, pixels, (unsigned)summits, added);
}
