// The library peers of the project's kernels, timed like the project times its own: CUDA
// events around each launch, warm-up first, median and min of 30, L2 flushed before every
// launch (outside the events). Each result is spot-checked against the CPU before it counts.
// Prints one JSON object, {"device": ..., "peers": {...}}, on stdout; exit 2 without a GPU.
// With --tf32, only the TF32 products: NVIDIA_TF32_OVERRIDE=0, which keeps every other run's
// SGEMM in FP32, also turns CUBLAS_COMPUTE_32F_FAST_TF32 back into FP32 for the whole process,
// so TF32 is measured in a process of its own.
//
//   nvcc -O3 -std=c++17 -arch=sm_90 -o libraries libraries.cu -lcublas
//   libraries [--tf32]

#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cub/device/device_histogram.cuh>
#include <cub/device/device_radix_sort.cuh>
#include <cub/device/device_reduce.cuh>
#include <cub/device/device_scan.cuh>
#include <cub/device/device_select.cuh>

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <stdexcept>
#include <string>
#include <tuple>
#include <type_traits>
#include <vector>

namespace {

const int kRuns = 30, kWarmup = 3;

struct Failure : std::runtime_error {
    using std::runtime_error::runtime_error;
};

void check_cuda(cudaError_t e, const char* what) {
    if (e != cudaSuccess) throw Failure(std::string(what) + ": " + cudaGetErrorName(e) + " (" + cudaGetErrorString(e) + ")");
}
void cublas(cublasStatus_t s, const char* what) {
    if (s != CUBLAS_STATUS_SUCCESS) throw Failure(std::string(what) + ": cuBLAS status " + std::to_string((int)s));
}
#define CUDA(call) check_cuda((call), #call)
#define CUBLAS(call) cublas((call), #call)

template <class T>
struct Device {
    T* ptr = nullptr;
    size_t n = 0;
    explicit Device(size_t count) : n(count) { CUDA(cudaMalloc(&ptr, count * sizeof(T))); }
    ~Device() { cudaFree(ptr); }
    Device(const Device&) = delete;
    Device& operator=(const Device&) = delete;
    std::vector<T> download() const {
        std::vector<T> h(n);
        CUDA(cudaMemcpy(h.data(), ptr, n * sizeof(T), cudaMemcpyDeviceToHost));
        return h;
    }
};

// Seeded uniform data made on the GPU: 2^28 values from the CPU would dominate the run time.
__device__ uint64_t mix(uint64_t z) {
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

__global__ void fill_f32(float* out, size_t n, uint64_t seed, float lo, float hi) {
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)blockDim.x * gridDim.x) {
        float u = (float)(mix(seed + i * 0x9E3779B97F4A7C15ull) >> 40) * 0x1p-24f;
        float v = lo + (hi - lo) * u;
        out[i] = v < hi ? v : nextafterf(hi, lo);  // [lo, hi) even after rounding
    }
}

__global__ void fill_i32(int* out, size_t n, uint64_t seed, int lo, int hi) {
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)blockDim.x * gridDim.x)
        out[i] = lo + (int)((mix(seed + i * 0x9E3779B97F4A7C15ull) >> 32) % (uint64_t)(hi - lo));
}

struct Stats {
    double median, min;
};

struct Timer {
    cudaStream_t stream;
    cudaEvent_t start, stop;
    Device<unsigned char> scratch{256u << 20};  // written before every launch to flush L2

    Timer() {
        CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
        CUDA(cudaEventCreate(&start));
        CUDA(cudaEventCreate(&stop));
    }

    template <class Launch>
    Stats time(Launch launch) {
        for (int i = 0; i < kWarmup; ++i) launch();
        CUDA(cudaStreamSynchronize(stream));
        std::vector<double> ms;
        for (int i = 0; i < kRuns; ++i) {
            CUDA(cudaMemsetAsync(scratch.ptr, 0, scratch.n, stream));
            CUDA(cudaEventRecord(start, stream));
            launch();
            CUDA(cudaEventRecord(stop, stream));
            CUDA(cudaEventSynchronize(stop));
            float t = 0;
            CUDA(cudaEventElapsedTime(&t, start, stop));
            ms.push_back(t);
        }
        CUDA(cudaGetLastError());
        std::sort(ms.begin(), ms.end());
        return {0.5 * (ms[(kRuns - 1) / 2] + ms[kRuns / 2]), ms.front()};
    }
};

std::string num(double v) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.6g", v);
    return buf;
}

std::string entry(const std::string& library, const std::string& sizes, Stats s, const char* rate_key, double work) {
    return "{\"library\": \"" + library + "\", " + sizes + ", \"ms\": " + num(s.median) + ", \"min_ms\": " +
           num(s.min) + ", \"" + rate_key + "\": " + num(work / (s.median * 1e-3) / 1e9) + "}";
}

void fill(Timer& t, float* p, size_t n, uint64_t seed, float lo, float hi) {
    fill_f32<<<1024, 256, 0, t.stream>>>(p, n, seed, lo, hi);
    CUDA(cudaGetLastError());
}

std::string copy_peer(Timer& t) {
    size_t n = 1u << 28;
    Device<float> src(n), dst(n);
    fill(t, src.ptr, n, 1, -1.0f, 1.0f);
    Stats s = t.time([&] { CUDA(cudaMemcpyAsync(dst.ptr, src.ptr, n * sizeof(float), cudaMemcpyDeviceToDevice, t.stream)); });
    CUDA(cudaStreamSynchronize(t.stream));
    if (src.download() != dst.download()) throw Failure("cudaMemcpy D2D: the copy differs from its source");
    return entry("cudaMemcpy D2D", "\"n\": " + std::to_string(n), s, "GBps", 2.0 * 4 * n);
}

// Row-major C (m x n) = A (m x k) B (k x n). cuBLAS is column-major, where these buffers are
// the transposes, so it computes C^T = B^T A^T: operands swapped, n and m swapped.
std::string sgemm_peer(Timer& t, cublasHandle_t h, size_t m, size_t n, size_t k) {
    Device<float> a(m * k), b(k * n), c(m * n);
    fill(t, a.ptr, a.n, 2, -1.0f, 1.0f);
    fill(t, b.ptr, b.n, 3, -1.0f, 1.0f);
    const float alpha = 1.0f, beta = 0.0f;
    auto launch = [&] {
        CUBLAS(cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, (int)n, (int)m, (int)k, &alpha, b.ptr, (int)n, a.ptr, (int)k,
                           &beta, c.ptr, (int)n));
    };
    Stats s = t.time(launch);
    CUDA(cudaStreamSynchronize(t.stream));
    // A TF32 product would miss this tolerance by an order of magnitude.
    auto ah = a.download(), bh = b.download(), ch = c.download();
    double tolerance = 4.0 * k * FLT_EPSILON;
    for (size_t e = 0; e < 64; ++e) {
        size_t row = (e * 7919) % m, col = (e * 104729) % n;
        double want = 0;
        for (size_t i = 0; i < k; ++i) want += (double)ah[row * k + i] * bh[i * n + col];
        if (!(std::fabs(ch[row * n + col] - want) <= tolerance))
            throw Failure("cuBLAS SGEMM " + std::to_string(m) + "x" + std::to_string(n) + "x" + std::to_string(k) +
                          ": C[" + std::to_string(row) + "][" + std::to_string(col) + "] = " +
                          num(ch[row * n + col]) + ", want " + num(want));
    }
    std::string sizes = "\"m\": " + std::to_string(m) + ", \"n\": " + std::to_string(n) + ", \"k\": " + std::to_string(k);
    return entry("cuBLAS SGEMM (TF32 off)", sizes, s, "GFLOPs", 2.0 * m * n * k);
}

// The tensor-core peers of `host matmul --dtype tf32|bf16|f16`: cublasGemmEx with f32
// accumulation and f32 output, as the project's kernels. TF32 reads the f32 inputs and rounds
// them itself (CUBLAS_COMPUTE_32F_FAST_TF32); BF16 and FP16 read inputs converted once,
// outside the timing, round to nearest even as the project's conversions do.
enum class Gemm { Tf32, Bf16, F16 };

template <class T>
__global__ void convert_to(const float* in, T* out, size_t n) {
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)blockDim.x * gridDim.x) {
        if constexpr (std::is_same<T, __nv_bfloat16>::value) out[i] = __float2bfloat16_rn(in[i]);
        else out[i] = __float2half_rn(in[i]);
    }
}

// The values the product reads: the f32 inputs (TF32, rounded inside cuBLAS), or the 16-bit ones.
template <class T>
std::vector<float> values_of(const Device<T>& d) {
    std::vector<float> out;
    for (T v : d.download()) {
        if constexpr (std::is_same<T, __nv_bfloat16>::value) out.push_back(__bfloat162float(v));
        else out.push_back(__half2float(v));
    }
    return out;
}

std::string gemm_peer(Timer& t, cublasHandle_t h, Gemm type, size_t m, size_t n, size_t k) {
    Device<float> a(m * k), b(k * n), c(m * n);
    fill(t, a.ptr, a.n, 2, -1.0f, 1.0f);
    fill(t, b.ptr, b.n, 3, -1.0f, 1.0f);
    bool tf32 = type == Gemm::Tf32, bf16 = type == Gemm::Bf16;
    // Both 16-bit buffers exist for every type (one element when unused), so one code path serves all.
    Device<__nv_bfloat16> a_bf(bf16 ? m * k : 1), b_bf(bf16 ? k * n : 1);
    Device<__half> a_h(type == Gemm::F16 ? m * k : 1), b_h(type == Gemm::F16 ? k * n : 1);
    if (bf16) {
        convert_to<<<1024, 256, 0, t.stream>>>(a.ptr, a_bf.ptr, a.n);
        convert_to<<<1024, 256, 0, t.stream>>>(b.ptr, b_bf.ptr, b.n);
    } else if (!tf32) {
        convert_to<<<1024, 256, 0, t.stream>>>(a.ptr, a_h.ptr, a.n);
        convert_to<<<1024, 256, 0, t.stream>>>(b.ptr, b_h.ptr, b.n);
    }
    CUDA(cudaGetLastError());
    const void* ap = tf32 ? (const void*)a.ptr : bf16 ? (const void*)a_bf.ptr : (const void*)a_h.ptr;
    const void* bp = tf32 ? (const void*)b.ptr : bf16 ? (const void*)b_bf.ptr : (const void*)b_h.ptr;
    cudaDataType input = tf32 ? CUDA_R_32F : bf16 ? CUDA_R_16BF : CUDA_R_16F;
    cublasComputeType_t compute = tf32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
    const float alpha = 1.0f, beta = 0.0f;
    // Row-major as in sgemm_peer: C^T = B^T A^T, operands and m, n swapped.
    auto launch = [&] {
        CUBLAS(cublasGemmEx(h, CUBLAS_OP_N, CUBLAS_OP_N, (int)n, (int)m, (int)k, &alpha, bp, input, (int)n, ap, input,
                            (int)k, &beta, c.ptr, CUDA_R_32F, (int)n, compute, CUBLAS_GEMM_DEFAULT));
    };
    Stats s = t.time(launch);
    CUDA(cudaStreamSynchronize(t.stream));
    auto ah = tf32 ? a.download() : bf16 ? values_of(a_bf) : values_of(a_h);
    auto bh = tf32 ? b.download() : bf16 ? values_of(b_bf) : values_of(b_h);
    auto ch = c.download();
    // 16-bit: the inputs as read, so only the f32 accumulation differs (4k eps, doubled for the
    // tensor cores' truncating adds). TF32: rounded inside cuBLAS, each product within 2^-10 of
    // the f32 one, and about a quarter in magnitude on average: k 2^-12 more.
    const char* name = tf32 ? "TF32" : bf16 ? "BF16" : "FP16";
    double tolerance = 8.0 * k * FLT_EPSILON + (tf32 ? k * 0x1p-12 : 0.0);
    for (size_t e = 0; e < 64; ++e) {
        size_t row = (e * 7919) % m, col = (e * 104729) % n;
        double want = 0;
        for (size_t i = 0; i < k; ++i) want += (double)ah[row * k + i] * bh[i * n + col];
        if (!(std::fabs(ch[row * n + col] - want) <= tolerance))
            throw Failure(std::string("cuBLAS GemmEx ") + name + " " + std::to_string(m) + "x" + std::to_string(n) +
                          "x" + std::to_string(k) + ": C[" + std::to_string(row) + "][" + std::to_string(col) +
                          "] = " + num(ch[row * n + col]) + ", want " + num(want));
    }
    std::string sizes = "\"m\": " + std::to_string(m) + ", \"n\": " + std::to_string(n) + ", \"k\": " + std::to_string(k);
    return entry(std::string("cuBLAS GemmEx ") + name + " (f32 accumulate, f32 out)", sizes, s, "GFLOPs",
                 2.0 * m * n * k);
}

// 256 bins, like the project's histograms: int32 in [0, 300) over levels 0..256 (values of 256
// and above count nowhere), and f32 in [-4.5, 4.5) over [-4, 4).
template <class Sample, class Level>
std::string histogram_peer(Timer& t, Level lower, Level upper, Sample* samples, size_t n) {
    const int bins = 256;
    Device<int> hist(bins);
    size_t temp_bytes = 0;
    CUDA(cub::DeviceHistogram::HistogramEven(nullptr, temp_bytes, samples, hist.ptr, bins + 1, lower, upper, (int)n,
                                             t.stream));
    Device<unsigned char> temp(std::max<size_t>(temp_bytes, 1));  // allocated once, outside timing
    Stats s = t.time([&] {
        CUDA(cub::DeviceHistogram::HistogramEven(temp.ptr, temp_bytes, samples, hist.ptr, bins + 1, lower, upper,
                                                 (int)n, t.stream));
    });
    CUDA(cudaStreamSynchronize(t.stream));
    std::vector<Sample> values(n);
    CUDA(cudaMemcpy(values.data(), samples, n * sizeof(Sample), cudaMemcpyDeviceToHost));
    std::vector<long long> want(bins, 0);
    for (Sample v : values) {
        if (!(v >= (Sample)lower && v < (Sample)upper)) continue;
        int b = (int)((double)(v - (Sample)lower) * bins / (double)(upper - lower));
        ++want[std::min(b, bins - 1)];
    }
    auto got = hist.download();
    long long total_got = 0, total_want = 0, worst = 0;
    for (int b = 0; b < bins; ++b) {
        total_got += got[b], total_want += want[b];
        worst = std::max(worst, std::llabs(got[b] - want[b]));
    }
    // Integer bins must match. CUB computes float bins with its own rounding, so a few values
    // at bin edges (and at the top edge, which it may leave out) land elsewhere: tolerated up
    // to one in a million, which still catches a wrong call.
    bool exact = std::is_integral<Sample>::value;
    long long allowed = exact ? 0 : std::max<long long>(16, total_want / 1000000);
    if (std::llabs(total_got - total_want) > allowed || worst > allowed)
        throw Failure("CUB HistogramEven: counted " + std::to_string(total_got) + " values (want " +
                      std::to_string(total_want) + "), a bin off by " + std::to_string(worst));
    return entry("CUB DeviceHistogram::HistogramEven", "\"n\": " + std::to_string(n), s, "GBps", 4.0 * n);
}

// The two middle keys of the sorted values, averaged in f64: np.median's pick after the sort.
__global__ void middle(const float* sorted, size_t n, double* median) {
    *median = n % 2 ? (double)sorted[n / 2] : 0.5 * ((double)sorted[n / 2 - 1] + (double)sorted[n / 2]);
}

// A median by sorting, as a user without a selection kernel gets one: CUB's radix sort of the
// 2^22 f32 keys (host/src/ops/select.rs's default size; uniform in [-1, 1)), then the middle.
std::string median_peer(Timer& t) {
    size_t n = 1u << 22;
    Device<float> keys(n), sorted(n);
    Device<double> median(1);
    fill(t, keys.ptr, n, 6, -1.0f, 1.0f);
    size_t temp_bytes = 0;
    CUDA(cub::DeviceRadixSort::SortKeys(nullptr, temp_bytes, keys.ptr, sorted.ptr, (int)n, 0, 32, t.stream));
    Device<unsigned char> temp(std::max<size_t>(temp_bytes, 1));  // allocated once, outside timing
    Stats s = t.time([&] {
        CUDA(cub::DeviceRadixSort::SortKeys(temp.ptr, temp_bytes, keys.ptr, sorted.ptr, (int)n, 0, 32, t.stream));
        middle<<<1, 1, 0, t.stream>>>(sorted.ptr, n, median.ptr);
    });
    CUDA(cudaStreamSynchronize(t.stream));
    std::vector<float> values = keys.download();
    std::nth_element(values.begin(), values.begin() + n / 2, values.end());
    float upper = values[n / 2];
    float lower = *std::max_element(values.begin(), values.begin() + n / 2);
    double want = 0.5 * ((double)lower + (double)upper), got = median.download()[0];
    if (got != want) throw Failure("CUB radix sort median: " + num(got) + ", want " + num(want));
    return entry("CUB DeviceRadixSort::SortKeys + middle", "\"n\": " + std::to_string(n), s, "GBps", 4.0 * n);
}

// The sum of 2^28 f32 in [-1, 1), against which the reduce ladder's last step runs. CUB adds
// in f32; the check allows a relative error of 1e-5 of the sum of magnitudes, far beyond its
// rounding and far below a wrong call.
std::string reduce_peer(Timer& t) {
    size_t n = 1u << 28;
    Device<float> values(n), sum(1);
    fill(t, values.ptr, n, 6, -1.0f, 1.0f);
    size_t temp_bytes = 0;
    CUDA(cub::DeviceReduce::Sum(nullptr, temp_bytes, values.ptr, sum.ptr, (int)n, t.stream));
    Device<unsigned char> temp(std::max<size_t>(temp_bytes, 1));  // allocated once, outside timing
    Stats s = t.time([&] { CUDA(cub::DeviceReduce::Sum(temp.ptr, temp_bytes, values.ptr, sum.ptr, (int)n, t.stream)); });
    CUDA(cudaStreamSynchronize(t.stream));
    double want = 0, magnitude = 0;
    for (float v : values.download()) want += v, magnitude += std::fabs(v);
    float got = sum.download()[0];
    if (!(std::fabs(got - want) <= 1e-5 * magnitude))
        throw Failure("CUB DeviceReduce::Sum: " + num(got) + ", want " + num(want));
    return entry("CUB DeviceReduce::Sum", "\"n\": " + std::to_string(n), s, "GBps", 4.0 * n);
}

// CUB's exclusive sum of 2^28 values: u32 in [0, 16) (exact, as the project's u32 scan) and
// f32 in [-1, 1). The f32 check allows 1e-4 of the prefix sums' range: a wrong call is far off.
template <class T>
std::string scan_peer(Timer& t, T* values, size_t n) {
    Device<T> out(n);
    size_t temp_bytes = 0;
    CUDA(cub::DeviceScan::ExclusiveSum(nullptr, temp_bytes, values, out.ptr, (int)n, t.stream));
    Device<unsigned char> temp(std::max<size_t>(temp_bytes, 1));  // allocated once, outside timing
    Stats s = t.time([&] { CUDA(cub::DeviceScan::ExclusiveSum(temp.ptr, temp_bytes, values, out.ptr, (int)n, t.stream)); });
    CUDA(cudaStreamSynchronize(t.stream));
    std::vector<T> in(n);
    CUDA(cudaMemcpy(in.data(), values, n * sizeof(T), cudaMemcpyDeviceToHost));
    auto got = out.download();
    double sum = 0, low = 0, high = 0, worst = 0;
    T exact = 0;
    for (size_t i = 0; i < n; ++i) {
        worst = std::max(worst, std::is_integral<T>::value ? (double)(got[i] != exact) : std::fabs(got[i] - sum));
        sum += in[i], exact += in[i];
        low = std::min(low, sum), high = std::max(high, sum);
    }
    double allowed = std::is_integral<T>::value ? 0.0 : 1e-4 * (high - low);
    if (!(worst <= allowed))
        throw Failure("CUB DeviceScan::ExclusiveSum: an element off by " + num(worst) + " (allowed " + num(allowed) + ")");
    return entry("CUB DeviceScan::ExclusiveSum", "\"n\": " + std::to_string(n), s, "GBps", 8.0 * n);
}

// The project's compaction predicate (interface/src/window.rs): low < v < high in double.
struct InWindow {
    double low, high;
    __host__ __device__ bool operator()(const float& v) const {
        double d = v;
        return low < d && d < high;
    }
};

// CUB's DeviceSelect::If keeping the f32 values of [-1, 1) inside (-0.25, 0.25): about 25%.
std::string select_peer(Timer& t, float* values, size_t n) {
    Device<float> out(n);
    Device<int> count(1);
    InWindow window{-0.25, 0.25};
    size_t temp_bytes = 0;
    CUDA(cub::DeviceSelect::If(nullptr, temp_bytes, values, out.ptr, count.ptr, (int)n, window, t.stream));
    Device<unsigned char> temp(std::max<size_t>(temp_bytes, 1));
    Stats s = t.time([&] {
        CUDA(cub::DeviceSelect::If(temp.ptr, temp_bytes, values, out.ptr, count.ptr, (int)n, window, t.stream));
    });
    CUDA(cudaStreamSynchronize(t.stream));
    std::vector<float> in(n);
    CUDA(cudaMemcpy(in.data(), values, n * sizeof(float), cudaMemcpyDeviceToHost));
    auto got = out.download();
    size_t kept = 0;
    for (float v : in)
        if (window(v)) {
            if (got[kept] != v) throw Failure("CUB DeviceSelect::If: kept value " + std::to_string(kept) + " differs");
            ++kept;
        }
    if ((size_t)count.download()[0] != kept)
        throw Failure("CUB DeviceSelect::If: kept " + std::to_string(count.download()[0]) + ", want " + std::to_string(kept));
    return entry("CUB DeviceSelect::If", "\"n\": " + std::to_string(n) + ", \"kept\": " + std::to_string(kept), s,
                 "GBps", 4.0 * (n + kept));
}

}  // namespace

int main(int argc, char** argv) {
    bool tf32 = argc > 1 && std::string(argv[1]) == "--tf32";
    int count = 0;
    cudaError_t e = cudaGetDeviceCount(&count);
    if (e != cudaSuccess || count == 0) {
        std::fprintf(stderr, "libraries: no usable GPU (%s); nothing measured\n",
                     e != cudaSuccess ? cudaGetErrorString(e) : "no CUDA device");
        return 2;
    }
    // TF32 stays off: CUBLAS_DEFAULT_MATH (below) keeps cublasSgemm in FP32 on the CUDA cores,
    // and NVIDIA_TF32_OVERRIDE=0, set before cuBLAS starts, rules out a global override.
    if (!tf32) setenv("NVIDIA_TF32_OVERRIDE", "0", 1);
    std::string step = "setup";
    try {
        cudaDeviceProp prop;
        CUDA(cudaGetDeviceProperties(&prop, 0));
        Timer t;
        cublasHandle_t h;
        CUBLAS(cublasCreate(&h));
        CUBLAS(cublasSetStream(h, t.stream));
        CUBLAS(cublasSetMathMode(h, CUBLAS_DEFAULT_MATH));

        std::vector<std::pair<std::string, std::string>> peers;
        // The tensor-core products: cubes, the flat 8192x8192x256 and an odd shape.
        auto gemm_peers = [&](Gemm type, const char* name) {
            for (size_t side : {1024, 2048, 4096, 8192}) {
                step = std::string("gemm_") + name + "_" + std::to_string(side);
                peers.emplace_back(step, gemm_peer(t, h, type, side, side, side));
            }
            using Dims = std::tuple<size_t, size_t, size_t>;
            for (auto [m, n, k] : std::initializer_list<Dims>{{8192, 8192, 256}, {4095, 4097, 4099}}) {
                step = std::string("gemm_") + name + "_" + std::to_string(m) + "x" + std::to_string(n) + "x" +
                       std::to_string(k);
                peers.emplace_back(step, gemm_peer(t, h, type, m, n, k));
            }
        };
        if (tf32) {
            gemm_peers(Gemm::Tf32, "tf32");
        } else {
            step = "copy_f32";
            peers.emplace_back(step, copy_peer(t));
            for (size_t side : {1024, 4096, 8192}) {
                step = "sgemm_f32_" + std::to_string(side);
                peers.emplace_back(step, sgemm_peer(t, h, side, side, side));
            }
            step = "sgemm_f32_8192x8192x256";
            peers.emplace_back(step, sgemm_peer(t, h, 8192, 8192, 256));
            gemm_peers(Gemm::Bf16, "bf16");
            gemm_peers(Gemm::F16, "f16");

            size_t n = 1u << 28;
            {
                step = "histogram256_u32";
                Device<int> values(n);
                fill_i32<<<1024, 256, 0, t.stream>>>(values.ptr, n, 4, 0, 300);
                CUDA(cudaGetLastError());
                peers.emplace_back(step, histogram_peer<int, int>(t, 0, 256, values.ptr, n));
            }
            {
                step = "histogram256_f32";
                Device<float> values(n);
                fill(t, values.ptr, n, 5, -4.5f, 4.5f);
                peers.emplace_back(step, histogram_peer<float, float>(t, -4.0f, 4.0f, values.ptr, n));
            }
            step = "median_f32_4194304";
            peers.emplace_back(step, median_peer(t));
            step = "reduce_sum_f32";
            peers.emplace_back(step, reduce_peer(t));
            {
                step = "scan_u32";
                Device<int> values(n);
                fill_i32<<<1024, 256, 0, t.stream>>>(values.ptr, n, 6, 0, 16);
                CUDA(cudaGetLastError());
                peers.emplace_back(step, scan_peer<unsigned>(t, reinterpret_cast<unsigned*>(values.ptr), n));
            }
            {
                Device<float> values(n);
                fill(t, values.ptr, n, 7, -1.0f, 1.0f);
                step = "scan_f32";
                peers.emplace_back(step, scan_peer<float>(t, values.ptr, n));
                step = "select_if_f32";
                peers.emplace_back(step, select_peer(t, values.ptr, n));
            }
        }
        cublasDestroy(h);

        std::ostringstream out;
        out << "{\"device\": \"" << prop.name << "\", \"peers\": {";
        for (size_t i = 0; i < peers.size(); ++i)
            out << (i ? ",\n  " : "\n  ") << "\"" << peers[i].first << "\": " << peers[i].second;
        out << "\n}}\n";
        std::fputs(out.str().c_str(), stdout);
    } catch (const std::exception& ex) {
        std::fprintf(stderr, "libraries: %s: %s\n", step.c_str(), ex.what());
        return 1;
    }
    return 0;
}
