// Twin of kernels/src/measure.rs: per label, f64 sums and u32 extremes, a run of equal labels
// along a row summed in registers and added once.
#include "twins.cuh"

struct MeasureRun {
    unsigned label, pixels;
    double flux, flux_x;
    float peak;
    unsigned first, last;
};

static __device__ __forceinline__ unsigned measure_peak_key(float value) {
    unsigned bits = __float_as_uint(value);
    return bits >> 31 == 1 ? ~bits : bits | 0x80000000u;
}

static __device__ __forceinline__ void measure_flush(double* records, const MeasureRun& run, unsigned row) {
    unsigned char* record = (unsigned char*)(records + (size_t)(run.label - 1) * MEASURE_RECORD_WORDS);
    atomicAdd((double*)record, run.flux);
    atomicAdd((double*)(record + 8), run.flux * (double)row);
    atomicAdd((double*)(record + 16), run.flux_x);
    atomicAdd((unsigned*)(record + MEASURE_PIXELS), run.pixels);
    atomicMax((unsigned*)(record + MEASURE_PEAK), measure_peak_key(run.peak));
    atomicMax((unsigned*)(record + MEASURE_Y_MIN), 0xFFFFFFFFu - row);
    atomicMax((unsigned*)(record + MEASURE_Y_MAX), row);
    atomicMax((unsigned*)(record + MEASURE_X_MIN), 0xFFFFFFFFu - run.first);
    atomicMax((unsigned*)(record + MEASURE_X_MAX), run.last);
}

extern "C" __global__ void measure_labels(const float* image, size_t image_len, const unsigned* labels,
                                          size_t labels_len, size_t width, size_t height, double* records,
                                          unsigned count) {
    size_t segments = (width + MEASURE_ITEMS - 1) / MEASURE_ITEMS;
    size_t t = global_index();
    if (t >= segments * height) return;
    size_t row = t / segments, start = t % segments * MEASURE_ITEMS;
    size_t end = start + MEASURE_ITEMS < width ? start + MEASURE_ITEMS : width;
    size_t base = row * width;
    MeasureRun run{0, 0, 0.0, 0.0, 0.0f, 0, 0};
    for (size_t col = start; col < end; ++col) {
        unsigned label = labels[base + col];
        if (label != run.label) {
            if (run.label != 0 && run.label <= count) measure_flush(records, run, (unsigned)row);
            run = MeasureRun{label, 0, 0.0, 0.0, -INFINITY, (unsigned)col, 0};
        }
        if (label != 0) {
            float value = image[base + col];
            double v = (double)value;
            run.pixels += 1;
            run.flux += v;
            run.flux_x += v * (double)col;
            run.peak = value > run.peak ? value : run.peak;
            run.last = (unsigned)col;
        }
    }
    if (run.label != 0 && run.label <= count) measure_flush(records, run, (unsigned)row);
}
